"""The static protocol check on table-driven kernels (a grouped GEMM's tile table): decided where every role
branches alike on the table's entries, refused where one role skips a tile another runs, undecided where the
roles' conditions could disagree."""

import warnings

import numpy as np
import pytest

import nvdsl
import nvdsl.tasks as nt
from nvdsl.interpreter.protocol import check_protocol
from nvdsl.kernels.gemm import MAPPING, grouped_matmul, row_tile_table

f16 = np.float16


def test_the_grouped_gemm_is_decided_whatever_its_table_holds():
    """Empty tiles (a group of 0 rows, the table's padding) are skipped by every role; the check runs the
    skeleton with the first n entries' branches taken, for every n, instead of giving up."""
    sizes = [100, 0, 300, 112]
    kernel = nt.build(grouped_matmul, MAPPING.replace(sm_count=4))
    trace = kernel.trace(np.zeros((512, 512), f16), np.zeros((512, 256), f16), np.zeros((4, 256, 512), f16),
                         row_tile_table(sizes, 128))
    assert check_protocol(trace.module, trace.specs) is None
    # and its first call no longer warns that the check could not decide
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((256, 64)).astype(f16), rng.standard_normal((3, 64, 256)).astype(f16)
    c = np.zeros((256, 256), f16)
    with warnings.catch_warnings():
        warnings.simplefilter("error", nvdsl.ProtocolCheckWarning)
        nt.build(grouped_matmul, MAPPING.replace(sm_count=2)).with_options(backend="interpret")(
            c, a, b, row_tile_table([100, 0, 156], 128))
    reference = np.concatenate([a[:100].astype(np.float32) @ b[0].astype(np.float32),
                                a[100:].astype(np.float32) @ b[2].astype(np.float32)])
    np.testing.assert_allclose(c.astype(np.float32), reference, atol=0.05, rtol=0.01)


def test_a_block_is_not_run_again_for_as_many_taken_entries_as_it_meets(monkeypatch):
    """The skeleton runs once per number n of taken table entries; a block that meets no more than n entries takes
    all of them, the run where every entry is taken over again, so it is not run for that n (the grouped GEMM's last
    block, with fewer tiles than the first: 536 ms of CPU for 8 groups of 256 rows on an H100 host)."""
    from nvdsl.interpreter import machine
    runs = []
    run = machine.Block.run

    def recording(block):
        run(block)
        runs.append((block.block_id, block.launch.host.table_taken, len(block.decisions)))
    monkeypatch.setattr(machine.Block, "run", recording)
    kernel = nt.build(grouped_matmul, MAPPING.replace(sm_count=4))     # 3 x 2 tiles: block 0 has 2, block 3 one
    trace = kernel.trace(np.zeros((384, 256), f16), np.zeros((384, 128), f16), np.zeros((3, 128, 256), f16),
                         row_tile_table([128, 128, 128], 128))
    assert check_protocol(trace.module, trace.specs) is None
    assert [(block, taken) for block, taken, _ in runs] == [
        ((0, 0, 0), None), ((3, 0, 0), None), ((0, 0, 0), 0), ((3, 0, 0), 0), ((0, 0, 0), 1)], runs
    assert [met for _, _, met in runs[:2]] == [2, 1]


def _two_roles(tiles: int, producer, consumer):
    """A kernel over a table whose producer warpgroup runs ``producer(table, t, put)`` and whose consumer warpgroup
    runs ``consumer(table, t, get)`` for each of ``tiles`` rows (``put()`` fills a slot of an aref of 64 x 64 tiles,
    ``get()`` takes one and releases it); every thread writes 1 to ``out`` at the end."""
    @nvdsl.mlir_func
    def table_driven(a, table, out):
        a_tma = nvdsl.TMA(a, box=(64, 64), swizzle=128)

        @nvdsl.gpu_launch(grid=1, block=256)
        def kernel(ctx):
            ring = nvdsl.Aref(ctx, [((64, 64), nvdsl.float16)], depth=2, name="tiles")

            def get():
                with ring.get() as (tile,):
                    pass
            with nvdsl.Warpgroup(ctx, 0):
                for t in nvdsl.for_range(tiles):
                    producer(table, t, lambda: ring.put((a_tma, (0, 0))))
            with nvdsl.Warpgroup(ctx, 128):
                for t in nvdsl.for_range(tiles):
                    consumer(table, t, get)
            out[ctx.thread_id.x] = 1
        kernel()
    return table_driven


def _table_driven(consumer: str = "same", tiles: int = 4, trips: int = 3):
    """A producer warpgroup putting ``trips`` tiles into an aref for each non-empty row of ``table`` (first < end),
    a consumer warpgroup taking them. ``consumer``: "same" branches as the producer does, "ignores" takes tiles
    for every row (a role that does not skip empty tiles), "other" branches on an equivalent but different
    condition (end > first), "also-unguarded" takes one more tile per row outside the branch."""
    def produce(table, t, put):
        with nvdsl.when(table[t, 0] < table[t, 1]):
            for _ in nvdsl.for_range(trips):
                put()

    def consume(table, t, get):
        if consumer == "ignores":
            busy = nvdsl.constant(1, nvdsl.int32) > nvdsl.constant(0, nvdsl.int32)
        elif consumer == "other":
            busy = table[t, 1] > table[t, 0]
        else:
            busy = table[t, 0] < table[t, 1]
        with nvdsl.when(busy):
            for _ in nvdsl.for_range(trips):
                get()
        if consumer == "also-unguarded":        # one more tile per row, empty or not
            get()
    table = np.array([[0, 5], [5, 5], [5, 9], [9, 9]][:tiles], np.int32)
    return _two_roles(tiles, produce, consume), (np.zeros((64, 64), f16), table, np.zeros(256, np.int32))


def test_a_table_driven_kernel_whose_roles_skip_alike_is_decided_and_runs():
    kernel, inputs = _table_driven("same")
    trace = kernel.trace(*inputs)
    assert check_protocol(trace.module, trace.specs) is None
    kernel.with_options(backend="interpret")(*inputs)
    assert (inputs[2] == 1).all()


def test_a_role_that_runs_the_tiles_another_skips_is_refused():
    """The producer skips empty rows, the consumer takes tiles for every row: with an empty row the consumer waits
    for a tile nobody puts."""
    kernel, inputs = _table_driven("ignores")
    trace = kernel.trace(*inputs)
    with pytest.raises(nvdsl.ProtocolError) as info:
        check_protocol(trace.module, trace.specs)
    assert info.value.code == "deadlock", str(info.value)
    assert "table entries it branches on" in str(info.value)


def test_roles_branching_on_different_conditions_of_the_table_are_undecided():
    kernel, inputs = _table_driven("other")
    trace = kernel.trace(*inputs)
    reason = check_protocol(trace.module, trace.specs)
    assert reason is not None and "different conditions of a table's entries" in reason, reason


def test_a_loop_that_does_more_than_branch_on_the_table_is_undecided():
    """Synchronisation beside the branches runs for empty rows too, so which rows are empty (not only how many)
    could matter: the check does not claim to know."""
    kernel, inputs = _table_driven("also-unguarded")
    trace = kernel.trace(*inputs)
    reason = check_protocol(trace.module, trace.specs)
    assert reason is not None and "does more than branch on them" in reason, reason


# --- trip counts read from a table (nt.load_index's ranges) ---------------------------------------------------

def _table_trips(consumer: str = "same", tiles: int = 1, most: int = 3):
    """A producer warpgroup putting ``clamp(end - first, 0, most)`` tiles into an aref for each of ``tiles`` rows of
    ``table`` (first, end), a consumer warpgroup taking as many. ``consumer``: "same" computes the count as the
    producer does; "first-unguarded" takes one tile before its loop whatever the count (a two-phase loop's first
    step without the guard a tile without steps needs), then the rest; "branches" also puts and takes one more tile
    where the row is not empty (a branch on the entries)."""
    def trips(table, t):
        return nvdsl.maximum(nvdsl.minimum((table[t, 1] - table[t, 0]).to(nvdsl.index), most), 0)

    def produce(table, t, put):
        for _ in nvdsl.for_range(trips(table, t)):
            put()
        if consumer == "branches":
            with nvdsl.when(table[t, 0] < table[t, 1]):
                put()

    def consume(table, t, get):
        n = trips(table, t)
        if consumer == "first-unguarded":
            get()
            n = n - 1
        for _ in nvdsl.for_range(n):
            get()
        if consumer == "branches":
            with nvdsl.when(table[t, 0] < table[t, 1]):
                get()
    table = np.array([[2, 5], [4, 4], [0, 9]][:tiles], np.int32)
    return _two_roles(tiles, produce, consume), (np.zeros((64, 64), f16), table, np.zeros(256, np.int32))


def test_trip_counts_read_from_a_table_are_decided_for_every_value(monkeypatch):
    """Each block runs once per combination of the values its clamped trip counts can take (0..3 for one tile, 16
    for two), both roles taking the same value for the same count."""
    from nvdsl.interpreter import machine
    met = []
    run = machine.Block.run

    def recording(block):
        run(block)
        met.append(tuple(value for _, _, value in block.trip_met))
    monkeypatch.setattr(machine.Block, "run", recording)
    for tiles, combinations in ((1, [(n,) for n in range(4)]), (2, [(n, m) for n in range(4) for m in range(4)])):
        met.clear()
        kernel, inputs = _table_trips("same", tiles)
        trace = kernel.trace(*inputs)
        assert check_protocol(trace.module, trace.specs) is None
        assert met == combinations
    kernel.with_options(backend="interpret")(*inputs)
    assert (inputs[2] == 1).all()


def test_a_step_taken_before_the_loop_without_a_guard_is_refused_at_zero_trips():
    kernel, inputs = _table_trips("first-unguarded", tiles=2)
    trace = kernel.trace(*inputs)
    with pytest.raises(nvdsl.ProtocolError) as info:
        check_protocol(trace.module, trace.specs)
    assert info.value.code == "deadlock", str(info.value)
    assert "when the trip counts read from a table that block (0, 0, 0) meets are 0, 0, in order" in str(info.value)


def test_trip_counts_beside_branches_on_the_same_table_or_too_many_combinations_are_undecided(monkeypatch):
    kernel, inputs = _table_trips("branches")
    trace = kernel.trace(*inputs)
    reason = check_protocol(trace.module, trace.specs)
    assert reason is not None and "both through branches and through trip counts" in reason, reason
    import nvdsl.interpreter.protocol as protocol
    monkeypatch.setattr(protocol, "MAX_TRIP_RUNS", 10)          # 16 combinations of two tiles' counts
    kernel, inputs = _table_trips("same", tiles=2)
    trace = kernel.trace(*inputs)
    reason = check_protocol(trace.module, trace.specs)
    assert reason is not None and "in more combinations per block than the check runs (10)" in reason, reason

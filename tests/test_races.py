"""Races beyond those between the warps of a block: between the blocks of a launch on global memory, and
between the lanes of one warp on shared memory. The interpreter reports both in its fixed schedule, and a
fuzzed schedule interleaves the warps of several blocks."""

import numpy as np
import pytest
from mlir import ir
from mlir.dialects import arith, gpu

import nvdsl
from nvdsl.interpreter.program import INTERLEAVED_BLOCKS

BLOCKS = 8


def line(marker: str) -> int:
    """The line of this file marked ``# AT:<marker>``."""
    with open(__file__) as source:
        return next(i for i, text in enumerate(source, 1) if text.rstrip().endswith(f"# AT:{marker}"))


def block_sum(how: str):
    """Each block adds its number + 1 to ``out[0]``: with a plain load and store, atomically, or (``mixed``)
    atomically except block 0, which stores plainly."""
    @nvdsl.mlir_func
    def block_sum(out):
        @nvdsl.gpu_launch(grid=BLOCKS, block=32)
        def kernel(ctx):
            s = (ctx.block_id.x + 1).to(nvdsl.int32)
            with nvdsl.when(ctx.thread_id.x.eq(0)):
                if how == "plain":
                    out[0] = out[0] + s                             # AT:plain-update
                elif how == "atomic":
                    out.atomic_add(0, s)
                else:
                    with nvdsl.when(ctx.block_id.x.eq(0)):
                        out[0] = s                                  # AT:mixed-store
                    with nvdsl.when(ctx.block_id.x > 0):
                        out.atomic_add(0, s)                        # AT:mixed-atomic
        kernel()
    return block_sum.with_options(backend="interpret")


def test_a_plain_update_of_one_element_by_several_blocks_is_a_global_race():
    with pytest.raises(nvdsl.KernelFault) as info:
        block_sum("plain")(np.zeros(1, np.int32))
    error = info.value
    text = str(error)
    assert error.code == "global-race", text
    assert error.loc.line == line("plain-update") and f":{line('plain-update')}" in error.details["other_line"]
    assert "out[0]" in text and "block (0, 0, 0)" in text and "block (1, 0, 0)" in text, text
    assert error.details["blocks"] == ((1, 0, 0), (0, 0, 0)) and error.details["index"] == (0,)
    assert "out.atomic_add(0, value)" in error.hint


def test_fuzz_reports_the_global_race_in_every_schedule():
    """Happens-before between blocks needs no unlucky schedule: the fixed one and every seeded one report."""
    with pytest.raises(nvdsl.KernelFault) as info:
        nvdsl.fuzz(block_sum("plain"), np.zeros(1, np.int32), seeds=20)
    assert info.value.code == "global-race"
    for seed in range(3):
        with pytest.raises(nvdsl.KernelFault) as info:
            block_sum("plain").with_options(seed=seed)(np.zeros(1, np.int32))
        assert info.value.code == "global-race"


def test_the_atomic_update_is_not_a_race_under_any_schedule():
    report = nvdsl.fuzz(block_sum("atomic"), np.zeros(1, np.int32), seeds=20)
    assert report.ok, str(report)
    out = np.zeros(1, np.int32)
    block_sum("atomic")(out)
    assert out[0] == BLOCKS * (BLOCKS + 1) // 2


def test_an_atomic_racing_with_another_blocks_plain_store_is_reported_naming_both_lines():
    with pytest.raises(nvdsl.KernelFault) as info:
        block_sum("mixed")(np.zeros(1, np.int32))
    error = info.value
    assert error.code == "global-race"
    assert error.loc.line == line("mixed-atomic") and f":{line('mixed-store')}" in error.details["other_line"]
    assert "updates atomically out[0], which block (0, 0, 0) wrote" in str(error), str(error)


def neighbours(second_launch: bool):
    """Each block writes its own element of ``x``, then reads its neighbour's: in the same launch, or in a
    second launch (ordered after the first)."""
    @nvdsl.mlir_func
    def neighbours(x, y):
        @nvdsl.gpu_launch(grid=BLOCKS, block=32)
        def write(ctx):
            with nvdsl.when(ctx.thread_id.x.eq(0)):
                x[ctx.block_id.x] = ctx.block_id.x.to(nvdsl.int32)  # AT:own-element
                if not second_launch:
                    y[ctx.block_id.x] = x[(ctx.block_id.x + 1) % BLOCKS]     # AT:same-launch-read

        @nvdsl.gpu_launch(grid=BLOCKS, block=32)
        def read(ctx):
            with nvdsl.when(ctx.thread_id.x.eq(0)):
                y[ctx.block_id.x] = x[(ctx.block_id.x + 1) % BLOCKS]
        write()
        if second_launch:
            read()
    return neighbours.with_options(backend="interpret")


def test_reading_an_element_another_block_writes_in_the_same_launch_is_a_race():
    with pytest.raises(nvdsl.KernelFault) as info:
        neighbours(second_launch=False)(np.zeros(BLOCKS, np.int32), np.zeros(BLOCKS, np.int32))
    error = info.value
    assert error.code == "global-race"
    # block 0 read x[1] first; block 1's write of it is the second access
    assert error.loc.line == line("own-element") and f":{line('same-launch-read')}" in error.details["other_line"]
    assert "writes x[1], which block (0, 0, 0) read" in str(error), str(error)


def test_a_later_launch_is_ordered_after_the_earlier_one():
    x, y = np.zeros(BLOCKS, np.int32), np.zeros(BLOCKS, np.int32)
    assert nvdsl.fuzz(neighbours(second_launch=True), x, y, seeds=5).ok
    neighbours(second_launch=True)(x, y)
    np.testing.assert_array_equal(y, (np.arange(BLOCKS) + 1) % BLOCKS)     # int32 copies: exact


def tma_copy(source: str, rows: str):
    """Each of two blocks copies a 64 x 64 tile with TMA, from ``a``'s own tile or from ``c``'s other tile,
    and stores it with TMA to its own tile of ``c`` or to the first one."""
    @nvdsl.mlir_func
    def tma_copy(a, c):
        a_tma, c_tma = nvdsl.TMA(a, box=(64, 64)), nvdsl.TMA(c, box=(64, 64))

        @nvdsl.gpu_launch(grid=2, block=128, smem=64 * 64 * 2)
        def kernel(ctx):
            tile = ctx.dynamic_shared((64, 64), nvdsl.float16, align=128)
            bar = nvdsl.Mbarriers(1)[0]
            leader = ctx.thread_id.x.eq(0)
            bar.init(1, predicate=leader)
            ctx.sync_threads()
            b = ctx.block_id.x
            bar.arrive(64 * 64 * 2, predicate=leader)
            if source == "a":
                a_tma.load(tile, bar, (b * 64, 0), predicate=leader)
            else:
                c_tma.load(tile, bar, ((1 - b) * 64, 0), predicate=leader)     # AT:tma-load
            bar.try_wait(0)
            c_tma.store(tile, (b * 64 if rows == "own" else 0, 0), predicate=leader)   # AT:tma-store
        kernel()
    return tma_copy.with_options(backend="interpret")


@pytest.mark.parametrize("source, rows, at, verb", [
    ("a", "first", "tma-store", "writes c[0, 0], which block (0, 0, 0) wrote"),
    ("c", "own", "tma-load", "reads c[0, 0], which block (0, 0, 0) wrote")])
def test_tma_copies_of_two_blocks_to_one_tile_race(source, rows, at, verb):
    a = np.arange(128 * 64, dtype=np.float16).reshape(128, 64)
    with pytest.raises(nvdsl.KernelFault) as info:
        tma_copy(source, rows)(a, np.zeros_like(a))
    assert info.value.code == "global-race" and info.value.loc.line == line(at), str(info.value)
    assert verb in str(info.value), str(info.value)


def test_tma_copies_of_blocks_to_their_own_tiles_do_not_race():
    a = np.arange(128 * 64, dtype=np.float16).reshape(128, 64)
    c = np.zeros_like(a)
    tma_copy("a", "own")(a, c)
    np.testing.assert_array_equal(c, a)                # TMA copies move bits: exact


def test_a_fuzzed_schedule_interleaves_the_blocks():
    """Tickets drawn atomically come out in block order when blocks run one after the other; interleaved, in
    another order (no race: a different, equally valid result)."""
    @nvdsl.mlir_func
    def tickets(counter, order):
        @nvdsl.gpu_launch(grid=BLOCKS, block=32)
        def kernel(ctx):
            with nvdsl.when(ctx.thread_id.x.eq(0)):
                order[ctx.block_id.x] = counter.atomic_add(0, 1)
        kernel()
    counter, order = np.zeros(1, np.int32), np.zeros(BLOCKS, np.int32)
    tickets.with_options(backend="interpret")(counter, order)
    np.testing.assert_array_equal(order, np.arange(BLOCKS))
    report = nvdsl.fuzz(tickets, np.zeros(1, np.int32), np.zeros(BLOCKS, np.int32), seeds=20)
    assert report.kind == "diverged" and "argument 1 differs" in report.difference, str(report)
    # a bounded number run at a time: block b starts once b - INTERLEAVED_BLOCKS + 1 earlier ones have ended
    for seed in range(5):
        order = np.zeros(BLOCKS, np.int32)
        tickets.with_options(backend="interpret", seed=seed)(np.zeros(1, np.int32), order)
        assert sorted(order) == list(range(BLOCKS)), order
        assert (order >= np.arange(BLOCKS) - INTERLEAVED_BLOCKS + 1).all(), order


def warp_sum(synced: bool, shared_first: bool = False):
    """The 32 lanes of a warp sum their values through shared memory, halving the lanes at each step: with
    ``ctx.sync_warp()`` before each step, or (a data race since Volta) without."""
    @nvdsl.mlir_func
    def warp_sum(x, out):
        @nvdsl.gpu_launch(grid=1, block=32, smem=32 * 4)
        def kernel(ctx):
            s = ctx.dynamic_shared((32,), nvdsl.float32)
            lane = ctx.thread_id.x
            s[lane] = x[lane]                                       # AT:lane-store
            for offset in (16, 8, 4, 2, 1):
                if synced:
                    ctx.sync_warp()
                with nvdsl.when(lane < offset):
                    s[lane] = s[lane] + s[lane + offset]            # AT:reduce-step
            if synced:
                ctx.sync_warp()
            with nvdsl.when(lane.eq(0)):
                out[0] = s[0]
        kernel()
    return warp_sum.with_options(backend="interpret")


def test_a_warp_synchronous_reduction_without_sync_warp_is_a_race_between_lanes():
    with pytest.raises(nvdsl.KernelFault) as info:
        warp_sum(synced=False)(np.arange(32, dtype=np.float32), np.zeros(1, np.float32))
    error = info.value
    text = str(error)
    assert error.code == "warp-race", text
    assert error.loc.line == line("reduce-step") and f":{line('lane-store')}" in error.details["other_line"]
    assert "which thread 16 of the same warp wrote" in text and "thread 0" in text, text
    assert "ctx.sync_warp()" in error.hint


def test_the_reduction_with_sync_warp_is_clean_under_every_schedule():
    x = np.arange(32, dtype=np.float32)
    assert nvdsl.fuzz(warp_sum(synced=True), x, np.zeros(1, np.float32), seeds=10).ok
    out = np.zeros(1, np.float32)
    warp_sum(synced=True)(x, out)
    assert out[0] == x.sum()


def lane_exchange(how: str):
    """Lanes read shared memory, then write what other lanes read, with nothing (or ``sync_warp``) between."""
    @nvdsl.mlir_func
    def lane_exchange(out):
        @nvdsl.gpu_launch(grid=1, block=32, smem=33 * 4)
        def kernel(ctx):
            s = ctx.dynamic_shared((33,), nvdsl.int32)
            lane = ctx.thread_id.x
            s[lane + 1] = 0                                         # (shared memory starts undefined)
            with nvdsl.when(lane.eq(0)):
                s[0] = 0
            ctx.sync_threads()
            if how == "broadcast":
                v = s[0]                                            # AT:broadcast-read
            else:
                v = s[lane + 1]                                     # AT:neighbour-read
            if how == "synced":
                ctx.sync_warp()
            if how == "broadcast":
                with nvdsl.when(lane.eq(0)):
                    s[0] = v + 1                                    # AT:broadcast-write
            else:
                s[lane] = v + 1                                     # AT:shift-write
            out[lane] = v
        kernel()
    return lane_exchange.with_options(backend="interpret")


@pytest.mark.parametrize("how, read, write, who", [
    ("broadcast", "broadcast-read", "broadcast-write", "other threads"),
    ("shift", "neighbour-read", "shift-write", "thread 0")])
def test_writing_what_other_lanes_read_without_sync_warp_is_a_race(how, read, write, who):
    with pytest.raises(nvdsl.KernelFault) as info:
        lane_exchange(how)(np.zeros(32, np.int32))
    error = info.value
    assert error.code == "warp-race" and error.loc.line == line(write), str(error)
    assert f":{line(read)}" in error.details["other_line"]
    assert f"which {who} of the same warp read" in str(error), str(error)


def test_sync_warp_orders_the_lanes_accesses():
    out = np.zeros(32, np.int32)
    lane_exchange("synced")(out)
    np.testing.assert_array_equal(out, 0)


def test_sync_warp_emits_bar_warp_sync_with_the_full_mask_and_needs_every_lane():
    ir = warp_sum(synced=True).trace(np.zeros(32, np.float32), np.zeros(1, np.float32)).mlir
    assert "nvvm.bar.warp.sync" in ir and "arith.constant -1 : i32" in ir

    @nvdsl.mlir_func
    def divergent(out):
        @nvdsl.gpu_launch(grid=1, block=32)
        def kernel(ctx):
            with nvdsl.when(ctx.thread_id.x < 16):
                ctx.sync_warp()
                out[ctx.thread_id.x] = 1
        kernel()
    with pytest.raises(nvdsl.KernelFault) as info:
        divergent.with_options(backend="interpret")(np.zeros(32, np.int32))
    assert info.value.code == "divergent-collective"
    assert "reached by only 16 of the warp's 32 threads" in str(info.value)


@pytest.mark.parametrize("shuffle", [False, True])
def test_a_shuffle_synchronises_the_lanes_of_a_warp(shuffle):
    """``shfl.sync`` makes every lane of the warp meet (nvdsl's row reductions use it): like ``sync_warp``, it
    orders the lanes' accesses before it before those after it."""
    @nvdsl.mlir_func
    def exchange(out):
        @nvdsl.gpu_launch(grid=1, block=32, smem=32 * 4)
        def kernel(ctx):
            s = ctx.dynamic_shared((32,), nvdsl.int32)
            lane = ctx.thread_id.x
            s[lane] = lane.to(nvdsl.int32)
            if shuffle:
                i32 = ir.IntegerType.get_signless(32)
                gpu.shuffle(arith.constant(i32, 0), arith.constant(i32, 1), arith.constant(i32, 32),
                            gpu.ShuffleMode.XOR)
            out[lane] = s[lane ^ 1]
        kernel()
    out = np.zeros(32, np.int32)
    if shuffle:
        exchange.with_options(backend="interpret")(out)
        np.testing.assert_array_equal(out, np.arange(32) ^ 1)
    else:
        with pytest.raises(nvdsl.KernelFault) as info:
            exchange.with_options(backend="interpret")(out)
        assert info.value.code == "warp-race"

"""Loop summaries of the protocol check (nvdsl/interpreter/period.py): the state they compare must be all the
state a skeleton block's future depends on."""

import numpy as np
import pytest

import nvdsl
import broken_kernels as bk
import nvdsl.interpreter.period as period
from nvdsl.interpreter.protocol import check_protocol
from helpers import record_skips
from test_protocol import _handover, f16


def _interpreter_object(value) -> bool:
    return type(value).__module__.startswith("nvdsl.interpreter")


def _attributes(obj) -> list[str]:
    if hasattr(obj, "__dict__"):
        return list(vars(obj))
    return [name for cls in type(obj).__mro__ for name in getattr(cls, "__slots__", ())]


def _walk(value, where: str, seen: dict, problems: list, visited: set) -> None:
    """Every interpreter object reachable from ``value`` through attributes period.STATE_FIELDS puts in the
    state: its class and attribute names (in ``seen``), and what STATE_FIELDS does not account for."""
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _walk(item, f"{where}[{i}]", seen, problems, visited)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            _walk(key, f"{where} key", seen, problems, visited)
            _walk(item, f"{where}[{key!r}]", seen, problems, visited)
        return
    if not _interpreter_object(value):
        return
    name = type(value).__name__
    fields = period.STATE_FIELDS.get(name)
    if fields is None:
        problems.append(f"{where} is a {name}, a class period.STATE_FIELDS has no entry for")
        return
    if id(value) in visited:
        return
    visited.add(id(value))
    for attribute in _attributes(value):
        if not hasattr(value, attribute):
            continue
        seen.setdefault(name, set()).add(attribute)
        if attribute not in fields:
            problems.append(f"{name}.{attribute} (at {where}.{attribute})")
        elif fields[attribute] == period.IN_STATE:
            _walk(getattr(value, attribute), f"{where}.{attribute}", seen, problems, visited)


def _skeleton_state_of(traces, monkeypatch) -> tuple[dict, list]:
    seen, problems = {}, []
    original = period.Summary.observe

    def observe(self, current):
        _walk(self.block, "block", seen, problems, set())
        return original(self, current)
    monkeypatch.setattr(period.Summary, "observe", observe)
    for trace in traces:
        check_protocol(trace.module, trace.specs)
    return seen, problems


def test_the_summarised_state_accounts_for_every_field_of_the_interpreter(monkeypatch):
    """Skeletons of kernels that use every kind of synchronisation (an aref ring, a persistent warp-specialized
    GEMM with wgmma, named barriers and TMA stores) are walked at each scheduling point: every attribute of
    every interpreter object the block holds must be listed in period.STATE_FIELDS. A field added to the
    interpreter and forgotten in the summary's state would let loop summaries skip past what it changes."""
    from nvdsl.kernels.gemm import MAPPING, matmul
    gemm, inputs = bk.pipeline()
    traces = [_handover(7, 7), gemm.trace(*inputs()),
              nvdsl.tasks.build(matmul, MAPPING.replace(pipeline=3, sm_count=5)).trace(
                  np.zeros((512, 1024), np.float32), f16(512, 256), f16(256, 1024))]
    seen, problems = _skeleton_state_of(traces, monkeypatch)
    assert not problems, (
        "the interpreter holds state that nvdsl/interpreter/period.py does not account for:\n  "
        + "\n  ".join(sorted(set(problems))) + "\nIf a block's future can depend on it, add it to the canonical "
        "state (Summary._key); then list it in period.STATE_FIELDS (IN_STATE, or why it is left out).")
    stale = [f"{name}.{attribute}" for name, fields in period.STATE_FIELDS.items() if name in seen
             for attribute in fields if attribute not in seen[name]]
    assert not stale, f"period.STATE_FIELDS lists attributes the interpreter no longer has: {stale}"
    assert {"Block", "Warp", "Mbarrier", "BarSync", "Shadow", "Waiter", "LoopFrame"} <= set(seen), set(seen)


def _late_ring(steps: int, late_wrap: int | None = None, cap: int = 0, late_trip: int | None = None):
    """broken_kernels.ring through 2 slots, whose consumer counts the ring's wraps (saturating at ``cap``) and
    forgets its phase flip at wrap ``late_wrap`` or at trip ``late_trip`` (an odd one: the trips where the ring
    wraps). Until the counter saturates no state repeats; after it, the state repeats every two wraps."""
    def skip_flip(k, wraps):
        late = nvdsl.constant(0, nvdsl.int32) > nvdsl.constant(0, nvdsl.int32)
        if late_wrap is not None:
            late = late | wraps.eq(late_wrap)
        if late_trip is not None:
            late = late | k.eq(late_trip)
        return late
    kernel, inputs = bk.ring(skip_flip=skip_flip, cap=cap)
    return kernel.trace(*inputs(steps))


def test_a_bug_that_shows_only_after_the_state_first_repeats_in_part_is_caught(monkeypatch):
    """The ring's barriers and warps come back to the same state every two wraps from the start; only the
    consumer's wrap counter tells wrap 2 from wrap 12. The check still finds the missing phase flip at wrap 12
    of 2000, and summarises the correct kernel once the counter saturates (the time budget is lifted: a busy
    machine must not turn this into "could not decide")."""
    import nvdsl.interpreter.protocol as protocol
    monkeypatch.setattr(protocol, "TIME_BUDGET_S", 60.0)
    correct = _late_ring(4000, None, cap=13)
    skipped = record_skips(monkeypatch)
    assert check_protocol(correct.module, correct.specs) is None
    assert skipped and skipped[-1] > 3000, skipped
    broken = _late_ring(4000, 12, cap=13)
    with pytest.raises(nvdsl.ProtocolError) as info:
        check_protocol(broken.module, broken.specs)
    assert info.value.code == "stale-phase-wait" and "AT:ring-wait" in info.value.loc.text, str(info.value)
    # Without the loop-carried registers in the state, the summary skips from wrap 2 to the last wraps, past the
    # bug: what this test guards against.
    monkeypatch.setattr(period.Summary, "_registers", lambda self, w, env: ())
    assert check_protocol(broken.module, broken.specs) is None


def test_a_loop_index_compared_with_constants_is_summarised_up_to_where_the_comparison_changes(monkeypatch):
    """A loop index read only by comparisons with constants (a prefetch's guard ``k + c < n``) leaves the state
    periodic: the summary skips periods, but never across the trip where a comparison changes. Here the consumer
    forgets its phase flip at trip 1501 of 4000 (``k == 1501``): found, and missed if skips could cross it."""
    broken = _late_ring(4000, late_trip=1501)
    skipped = record_skips(monkeypatch)
    with pytest.raises(nvdsl.ProtocolError) as info:
        check_protocol(broken.module, broken.specs)
    assert info.value.code == "stale-phase-wait" and "AT:ring-wait" in info.value.loc.text, str(info.value)
    assert skipped and skipped[-1] > 1000, skipped          # skipped up to trip 1501, not simulated there
    original = period.LoopFrame.__init__
    monkeypatch.setattr(period.LoopFrame, "__init__",
                        lambda self, op, i, step, hi, iv, boundaries=(): original(self, op, i, step, hi, iv, ()))
    assert check_protocol(broken.module, broken.specs) is None


def test_the_multistage_mapping_at_production_size_is_summarised(monkeypatch):
    """Chapter 6's multistage mapping guards its prefetch with ``k + stages - 1 < trips``: its K loop is
    summarised (it used to run all 64 trips)."""
    import importlib
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tutorials"))
    ch6 = importlib.import_module("ch6_tasks_and_mappings")
    trace = nvdsl.tasks.build(ch6.gemm, ch6.MAPPINGS["multistage"]).trace(f16(8192, 8192), f16(8192, 4096),
                                                                          f16(4096, 8192))
    skipped = record_skips(monkeypatch)
    assert check_protocol(trace.module, trace.specs) is None
    assert skipped and skipped[-1] > 0, skipped


def test_a_persistent_kernels_tile_period_is_found_at_its_second_tile(monkeypatch):
    """The library GEMM at 8192^2 x 4096 on 132 SMs runs 16 tiles of 64 K trips in a block. The state at a trip
    of the second tile is the state at the same trip of the first (what the first tile's epilogue leaves behind,
    its registers, named barriers and older phases, is read no more), so after the second tile's first period
    the summary skips to the last tile: each warp starts its K loop twice (the second tile's run goes on as the
    last's), not 3 times as when it had to see a third tile first."""
    from nvdsl.kernels.gemm import MAPPING, matmul
    import nvdsl.interpreter.program as program
    trace = nvdsl.tasks.build(matmul, MAPPING.replace(sm_count=132)).trace(
        np.zeros((8192, 8192), np.float16), f16(8192, 4096), f16(4096, 8192))
    starts = []
    original, original_run = period.LoopFrame.__init__, program.Program.run_skeleton

    def counting(self, op, i, step, hi, iv, boundaries=()):
        starts.append((op, hi))
        original(self, op, i, step, hi, iv, boundaries)

    def run_skeleton(self, *args, **kwargs):
        starts.clear()      # only the run that decides (one that stops where a unit's warps part is run again)
        return original_run(self, *args, **kwargs)
    monkeypatch.setattr(period.LoopFrame, "__init__", counting)
    monkeypatch.setattr(program.Program, "run_skeleton", run_skeleton)
    assert check_protocol(trace.module, trace.specs) is None
    k_loops = [op for op, hi in starts if hi == 4096 // 64]
    # 3 run the K loop (the producer's warp, and each consumer warpgroup as one unit: tests/test_protocol_units.py),
    # in 2 blocks (the first and the last)
    assert len(k_loops) == 3 * 2 * 2, len(k_loops)


def test_after_a_tile_skip_the_k_loop_repeats_the_period_it_went_through_before(monkeypatch):
    """The library GEMM at 8192^2 x 4096 on 132 SMs (16 tiles of 64 K steps in a block): the first tile finds the K
    loop's period (8 steps, from its state at step 6); at step 6 of the second tile the state is the first tile's
    again, so the tile loop skips to the last tile, and the K loop, now in the last tile, skips that period at once
    from the same state rather than finding it anew. The producer's warp issues 6 TMA boxes per K step; per block
    it runs 16 steps in the first tile (6 + 8, and 2 left after the skip), 6 in the second and 2 in the last: 24,
    where finding the period again in the last tile took 32."""
    from nvdsl.kernels.gemm import MAPPING, matmul
    import nvdsl.interpreter.machine as machine
    import nvdsl.interpreter.ops_tma as ops_tma
    import nvdsl.interpreter.program as program
    trace = nvdsl.tasks.build(matmul, MAPPING.replace(sm_count=132)).trace(
        np.zeros((8192, 8192), np.float16), f16(8192, 4096), f16(4096, 8192))
    landed = []
    original_block, original_land, original_run = machine.Block.__init__, ops_tma.Copy.land, \
        program.Program.run_skeleton

    def block(self, *args, **kwargs):
        original_block(self, *args, **kwargs)
        landed.append(0)

    def land(self, block):
        landed[-1] += 1
        original_land(self, block)

    def run_skeleton(self, *args, **kwargs):
        landed.clear()      # only the run that decides
        return original_run(self, *args, **kwargs)
    monkeypatch.setattr(machine.Block, "__init__", block)
    monkeypatch.setattr(ops_tma.Copy, "land", land)
    monkeypatch.setattr(program.Program, "run_skeleton", run_skeleton)
    assert check_protocol(trace.module, trace.specs) is None
    assert landed == [24 * 6] * 2, landed       # the first and the last block


def test_a_unit_run_summarises_a_loop_while_another_warp_waits_its_turn(monkeypatch):
    """Chapter 6's ping-pong at 8192^2 x 4096 (persistent, 132 SMs): the consumer warpgroups take 128 x 128 tiles in
    turn, one waiting at a named barrier while the other runs its 64 K steps. A waiting warp's last mbarrier wait
    is only for the texts of reports, and a unit run's reports are never shown (they are found again warp by warp),
    so unit runs leave it out of the state: it grew older by a phase with each pass over the ring, and only the
    first K loop came back to a state it was in (99 iterations skipped per block). Now the K loops of the tiles
    that follow are summarised too."""
    import importlib
    import os
    import sys
    import nvdsl.interpreter.machine as machine
    import nvdsl.interpreter.program as program
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tutorials"))
    ch6 = importlib.import_module("ch6_tasks_and_mappings")
    trace = nvdsl.tasks.build(ch6.gemm, ch6.MAPPINGS["ping-pong"]).with_options(protocol_check=False).trace(
        f16(8192, 8192), f16(8192, 4096), f16(4096, 8192))
    skipped = []
    original_run, original_skeleton = machine.Block.run, program.Program.run_skeleton

    def run(self):
        original_run(self)
        skipped.append(self.summary.skipped)

    def run_skeleton(self, *args, **kwargs):
        skipped.clear()     # only the run that decides
        return original_skeleton(self, *args, **kwargs)
    monkeypatch.setattr(machine.Block, "run", run)
    monkeypatch.setattr(program.Program, "run_skeleton", run_skeleton)
    assert check_protocol(trace.module, trace.specs) is None
    assert len(skipped) == 2 and all(count > 500 for count in skipped), skipped


def _tile_index_unread(monkeypatch):
    """Make the summaries leave a tile loop's index out of the state even where it computes an inner loop's trip
    count (as if only the inner loop's bound, which is the same for the first tiles, were needed): a wrong skip."""
    import nvdsl.interpreter.ops_control as ops_control
    original = ops_control.index_comparisons

    def unread(index, keep):
        found = original(index, keep)
        sums = [reader.result for reader, _ in ops_control._readers(index, keep) if reader.name == "arith.addi"]
        return ((), sums) if found is None and sums else found
    monkeypatch.setattr(ops_control, "index_comparisons", unread)


def test_an_inner_trip_count_computed_from_the_tile_index_keeps_the_tile_loop_from_a_wrong_skip(monkeypatch):
    """A persistent loop whose inner loop runs ``(tile + 20) // 5`` trips (causal-style; the count is read by nothing
    but the bound). The first five tiles leave the ring in the same state, so a tile loop summary that left the tile
    index out of the state would take one tile for its period and skip to the last tile, past the seventh, where a
    consumer that restarts its ring at every tile goes wrong. The tile index is in the state (a loop index read
    otherwise than by comparisons with constants): the correct kernel is decided, the broken one refused at the
    refill its reset lets through, and the wrong skip would miss it (what this test guards against)."""
    correct = bk.causal_tiles()
    a, out = correct[1]()
    trace = correct[0].trace(a, out)
    assert check_protocol(trace.module, trace.specs) is None
    correct[0].with_options(backend="interpret")(a, out)
    rows = [tile * 6 + k for tile in range(12) for k in range(bk.causal_trips(tile))]
    np.testing.assert_allclose(out, a[rows].reshape(len(rows), 32, 2).sum(axis=(0, 2)), rtol=1e-4)
    broken = bk.causal_tiles("phase-reset")[0].trace(a, out)
    with pytest.raises(nvdsl.ProtocolError) as info:
        check_protocol(broken.module, broken.specs)
    assert info.value.code == "stale-phase-wait", str(info.value)
    assert "AT:causal-consumer-wait" in info.value.loc.text, str(info.value)
    _tile_index_unread(monkeypatch)
    assert check_protocol(broken.module, broken.specs) is None


def test_an_inner_trip_count_stepped_by_a_comparison_of_the_tile_index_skips_tiles_up_to_the_step(monkeypatch):
    """The inner loop runs 4 trips for the first 25 tiles of 40, then 5: the tile index is read only by that
    comparison, so it is left out of the state and the summary skips tiles, but not across tile 25. A consumer that
    restarts its ring at every tile goes wrong at tile 26: found; with skips allowed across the step, missed."""
    trips = lambda tile: nvdsl.select(tile < 25, nvdsl.constant(4, nvdsl.int32), nvdsl.constant(5, nvdsl.int32))
    correct, inputs = bk.causal_tiles(tiles=40, trips=trips)
    a, out = inputs()
    skipped = record_skips(monkeypatch)
    trace = correct.trace(a, out)
    assert check_protocol(trace.module, trace.specs) is None
    assert skipped and skipped[-1] >= 20, skipped
    broken = bk.causal_tiles("phase-reset", tiles=40, trips=trips)[0].trace(a, out)
    with pytest.raises(nvdsl.ProtocolError) as info:
        check_protocol(broken.module, broken.specs)
    assert info.value.code == "stale-phase-wait" and "AT:causal-consumer-wait" in info.value.loc.text, \
        str(info.value)
    original = period.LoopFrame.__init__
    monkeypatch.setattr(period.LoopFrame, "__init__",
                        lambda self, op, i, step, hi, iv, boundaries=(): original(self, op, i, step, hi, iv, ()))
    assert check_protocol(broken.module, broken.specs) is None

"""The static check of the barrier protocol: what it refuses, what it passes, where it says it cannot decide."""

import importlib
import os
import sys
import warnings

import numpy as np
import pytest

import nvdsl
import broken_kernels as bk
from nvdsl.interpreter.protocol import check_protocol, protocol_skeleton

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tutorials"))


def f16(*shape):
    return np.zeros(shape, np.float16)


def tutorial_traces():
    chapter = importlib.import_module
    from nvdsl.kernels.gemm import MAPPING, matmul
    return {
        "ch2": chapter("ch2_tma").double_by_tiles.trace(f16(256, 192), f16(256, 192)),
        "ch3": chapter("ch3_gemm_single_tile").gemm_tile.trace(f16(128, 64), f16(64, 128),
                                                              np.zeros((128, 128), np.float32)),
        "ch4": chapter("ch4_gemm_multistage").make_gemm(4).trace(f16(512, 1024), f16(1024, 384),
                                                                np.zeros((512, 384), np.float32)),
        "ch5": chapter("ch5_gemm_warp_specialized").make_gemm(4).trace(f16(512, 1024), f16(1024, 512), f16(512, 512)),
        "persistent": nvdsl.tasks.build(matmul, MAPPING.replace(pipeline=3, sm_count=5)).trace(
            np.zeros((1024, 1024), np.float32), f16(1024, 768), f16(768, 1024)),
    }


@pytest.mark.parametrize("name", ["ch2", "ch3", "ch4", "ch5", "persistent"])
def test_the_tutorial_and_library_kernels_pass(name):
    trace = tutorial_traces()[name]
    assert check_protocol(trace.module, trace.specs) is None


def test_the_skeleton_keeps_synchronisation_and_leaves_out_data():
    trace = tutorial_traces()["ch5"]
    (launch, piece), = protocol_skeleton(trace.module)
    names = {op.name for op in piece.keep}
    assert {"nvvm.mbarrier.try_wait", "nvgpu.tma.async.load", "nvgpu.warpgroup.mma", "scf.for"} <= names
    assert not names & {"vector.store", "nvgpu.tma.async.store", "llvm.extractvalue", "arith.truncf"}
    # the only stores kept are to the threads' local variables (the aref's slot and phase)
    stores = [op for op in piece.keep if op.name == "memref.store"]
    assert stores and all(op.operands[1].owner.name == "memref.alloca" for op in stores)


@pytest.mark.parametrize("steps", [1, 5, 6])
def test_a_ring_with_a_traced_stage_and_a_carried_phase_passes_and_computes(steps):
    a = np.random.default_rng(0).standard_normal((steps, 64)).astype(np.float32)
    out = np.zeros(32, np.float32)
    trace = bk.ring()[0].trace(a, out)
    assert check_protocol(trace.module, trace.specs) is None
    bk.ring()[0].with_options(backend="interpret")(a, out)
    np.testing.assert_allclose(out, a.reshape(steps, 32, 2).sum(axis=(0, 2)), rtol=1e-5)


def test_a_ring_whose_phase_never_flips_is_refused_at_the_wait():
    a, out = np.zeros((5, 64), np.float32), np.zeros(32, np.float32)   # 5 trips through 2 stages
    with pytest.raises(nvdsl.ProtocolError) as info:
        bk.ring("no-flip")[0].compile(a, out)
    assert info.value.code == "stale-phase-wait", str(info.value)
    assert "AT:ring-producer-wait" in str(info.value) and "waits on parity 1" in str(info.value), str(info.value)
    assert "pending phase 0 has parity 0 (expected)" in str(info.value), str(info.value)
    assert "flip the parity each time the ring wraps" in info.value.hint


def data_driven_kernel():
    """A kernel whose arrivals depend on memory contents (the check cannot decide it)."""
    @nvdsl.mlir_func
    def data_driven(flags, out):
        @nvdsl.gpu_launch(grid=1, block=32)
        def kernel(ctx):
            bar = nvdsl.Mbarriers(1)[0]
            bar.init(1, predicate=ctx.thread_id.x.eq(0))
            ctx.sync_threads()
            with nvdsl.when(flags[0] > 0):        # whether anyone arrives depends on memory
                bar.arrive()
            bar.try_wait(0)
            out[ctx.thread_id.x] = 1
        kernel()
    return data_driven


def test_synchronisation_that_depends_on_memory_contents_is_undecided():
    data_driven = data_driven_kernel()
    trace = data_driven.trace(np.ones(1, np.int32), np.zeros(32, np.int32))
    reason = check_protocol(trace.module, trace.specs)
    assert reason is not None and "memory contents" in reason and "flags[0] > 0" in reason
    with pytest.warns(nvdsl.ProtocolCheckWarning, match="could not check the barrier protocol of 'data_driven'"):
        data_driven.compile(np.ones(1, np.int32), np.zeros(32, np.int32))


def test_synchronisation_that_depends_on_a_runtime_scalar_is_undecided_naming_it():
    @nvdsl.mlir_func
    def scalar_driven(out, rounds):
        @nvdsl.gpu_launch(grid=1, block=32)
        def kernel(ctx):
            bar = nvdsl.Mbarriers(1)[0]
            bar.init(32, predicate=ctx.thread_id.x.eq(0))
            ctx.sync_threads()
            for r in nvdsl.for_range(rounds):
                bar.arrive()
                bar.try_wait(r)
            out[ctx.thread_id.x] = 1
        kernel()
    trace = scalar_driven.trace(np.zeros(32, np.int32), 3)
    assert "runtime scalar argument 'rounds'" in check_protocol(trace.module, trace.specs)


def test_a_ring_whose_trip_count_is_a_runtime_scalar_is_decided_for_every_trip_count():
    """The trip count n is a runtime scalar: the check covers every n by the ring's period (n below the first
    repeated state plus one period), so the correct ring is decided, without a warning, and computes."""
    fn, inputs = bk.ring(runtime_trips=True)
    trace = fn.trace(*inputs(5))
    assert check_protocol(trace.module, trace.specs) is None
    a, out, n = inputs(7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fn.with_options(backend="interpret")(a, out, n)
    np.testing.assert_allclose(out, a.reshape(7, 32, 2).sum(axis=(0, 2)), rtol=1e-5)


def test_a_ring_whose_phase_never_flips_is_refused_whatever_its_runtime_trip_count():
    """The same ring without the phase flip is broken from n = 3 on (the third trip reuses slot 0): refused at the
    wait, for the least n, before the kernel runs on any n."""
    fn, inputs = bk.ring("no-flip", runtime_trips=True)
    for steps in (1, 2, 100):
        with pytest.raises(nvdsl.ProtocolError) as info:
            fn.with_options(backend="interpret")(*inputs(steps))
        assert info.value.code == "stale-phase-wait", str(info.value)
        assert "(when n = 3)" in str(info.value) and "AT:ring-producer-wait" in info.value.loc.text, str(info.value)


def test_a_bug_at_a_later_runtime_trip_count_is_found_at_the_least_one():
    """The consumer forgets its phase flip at the ring's second wrap only: n = 5 is the least trip count where a
    wait passes on a phase it already saw (n = 4 ends before)."""
    late = lambda k, wraps: wraps.eq(1)
    fn, inputs = bk.ring(skip_flip=late, cap=3, runtime_trips=True)
    trace = fn.trace(*inputs(2))
    with pytest.raises(nvdsl.ProtocolError) as info:
        check_protocol(trace.module, trace.specs)
    assert info.value.code == "stale-phase-wait" and "(when n = 5)" in str(info.value), str(info.value)
    assert "AT:ring-wait" in info.value.loc.text, str(info.value)


def test_an_aref_handover_over_a_runtime_trip_count_is_decided_and_an_extra_put_refused_at_n_0():
    trace = _handover("n", "n")
    assert check_protocol(trace.module, trace.specs) is None
    trace = _handover("n", "n", extra_puts=1)
    with pytest.raises(nvdsl.ProtocolError) as info:
        check_protocol(trace.module, trace.specs)
    assert info.value.code == "unwaited-copy" and "(when n = 0)" in str(info.value), str(info.value)


def test_a_runtime_trip_count_of_a_loop_inside_a_loop_is_undecided():
    """Each round enters the counted loops anew with n trips: the period argument does not cover that."""
    trace = _handover("n", "n", rounds=2)
    reason = check_protocol(trace.module, trace.specs)
    assert reason is not None and "runtime scalar argument 'n' (through scf.for" in reason, reason


def test_a_runtime_trip_count_whose_states_repeat_too_late_is_undecided():
    """A wrap counter saturating at 40 keeps the ring's states apart for 80 trips: more than the check runs in full
    per trip count (MAX_TRIP_SWEEP), so it says it could not decide instead of guessing."""
    fn, inputs = bk.ring(skip_flip=lambda k, wraps: wraps > 1000, cap=40, runtime_trips=True)
    trace = fn.trace(*inputs(2))
    reason = check_protocol(trace.module, trace.specs)
    assert reason is not None and "runtime scalar argument 'n'" in reason and "do not repeat" in reason, reason


def test_a_runtime_scalar_that_feeds_a_branch_is_undecided():
    """A scalar that decides who arrives (not a trip count) stays undecided, naming it and its use."""
    @nvdsl.mlir_func
    def scalar_branch(out, n):
        @nvdsl.gpu_launch(grid=1, block=32)
        def kernel(ctx):
            bar = nvdsl.Mbarriers(1)[0]
            bar.init(32, predicate=ctx.thread_id.x.eq(0))
            ctx.sync_threads()
            with nvdsl.when(n > 0):
                bar.arrive()
            bar.try_wait(0)
            out[ctx.thread_id.x] = 1
        kernel()
    trace = scalar_branch.trace(np.zeros(32, np.int32), 3)
    reason = check_protocol(trace.module, trace.specs)
    assert reason is not None and "runtime scalar argument 'n'" in reason and "arith.cmpi" in reason, reason


def test_kernels_without_mbarriers_are_not_checked_and_cost_nothing():
    trace = importlib.import_module("ch1_saxpy").saxpy.trace(np.zeros((64, 64), np.float32),
                                                            np.zeros((64, 64), np.float32), 1.0)
    assert protocol_skeleton(trace.module) == []


def test_the_check_can_be_turned_off(monkeypatch):
    fn, inputs = bk.make("arrival-count")
    fn.with_options(protocol_check=False).trace(*inputs())       # no check at all when tracing
    from nvdsl.options import from_env
    assert from_env({"NVDSL_PROTOCOL_CHECK": "0"}).protocol_check is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if nvdsl.device_count() == 0:       # without the check, the interpreter is what reports it
            with pytest.raises(nvdsl.KernelFault):
                fn.with_options(protocol_check=False)(*inputs())


# Stages picked by a traced index, as arefs will emit them: the mbarrier is Mbarriers(2)[slot] and the
# tile a memref.view at byte slot * 256. Thread 0 loads row k of `a` into stage k % 2 (two rows, so no
# stage is refilled); warp 1 waits on that stage and copies the row to `out`. WAIT_PARITY is the
# parity the consumer waits with: 0 is right, 1 passes on a fresh barrier before the copy lands.
_TRACED_STAGES = """
module attributes {gpu.container_module} {
  func.func @stages(%a: memref<2x64xf32>, %out: memref<2x64xf32>) {
    %map = builtin.unrealized_conversion_cast %a : memref<2x64xf32> to !llvm.ptr {nvdsl.tensormap = {box = array<i64: 1, 64>, interleave = 0 : i64, l2_promotion = 0 : i64, oob_nan = false, swizzle = 0 : i64}}
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %smem = arith.constant 512 : i32
    gpu.launch blocks(%b0, %b1, %b2) in (%g0 = %c1, %g1 = %c1, %g2 = %c1) threads(%t, %t1, %t2) in (%s0 = %c64, %s1 = %c1, %s2 = %c1) dynamic_shared_memory_size %smem {
      %desc = builtin.unrealized_conversion_cast %map : !llvm.ptr to !nvgpu.tensormap.descriptor<tensor = memref<1x64xf32, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>
      %bars = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
      %base = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
      %c0 = arith.constant 0 : index
      %c2 = arith.constant 2 : index
      %c32 = arith.constant 32 : index
      %c256 = arith.constant 256 : index
      %lead = arith.cmpi eq, %t, %c0 : index
      nvgpu.mbarrier.init %bars[%c0], %c1, predicate = %lead : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
      nvgpu.mbarrier.init %bars[%c1], %c1, predicate = %lead : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
      gpu.barrier
      %warp = arith.divui %t, %c32 : index
      %lane = arith.remui %t, %c32 : index
      %producer = arith.cmpi eq, %warp, %c0 : index
      scf.if %producer {
        scf.for %k = %c0 to %c2 step %c1 {
          %slot = arith.remui %k, %c2 : index
          %offset = arith.muli %slot, %c256 : index
          %tile = memref.view %base[%offset][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<1x64xf32, #gpu.address_space<workgroup>>
          nvgpu.mbarrier.arrive.expect_tx %bars[%slot], %c256, predicate = %lead : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
          nvgpu.tma.async.load %desc[%c0, %k], %bars[%slot] to %tile, predicate = %lead : <tensor = memref<1x64xf32, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2> -> memref<1x64xf32, #gpu.address_space<workgroup>>
        }
      } else {
        scf.for %k = %c0 to %c2 step %c1 {
          %slot = arith.remui %k, %c2 : index
          %offset = arith.muli %slot, %c256 : index
          %tile = memref.view %base[%offset][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<1x64xf32, #gpu.address_space<workgroup>>
          %parity = arith.constant WAIT_PARITY
          %ticks = arith.constant 1000 : index
          nvgpu.mbarrier.try_wait.parity %bars[%slot], %parity, %ticks : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
          %x = memref.load %tile[%c0, %lane] : memref<1x64xf32, #gpu.address_space<workgroup>>
          memref.store %x, %out[%k, %lane] : memref<2x64xf32>
        }
      }
      gpu.terminator
    }
    return
  }
}
"""


@pytest.mark.parametrize("parity, error", [("false", None), ("true", "tma-read-before-complete")])
def test_stages_at_traced_byte_offsets_with_a_traced_mbarrier_index(parity, error):
    from mlir import ir

    from nvdsl.interpreter import Program
    from nvdsl.signature import ARRAY, ArgSpec
    specs = (ArgSpec("a", ARRAY, nvdsl.float32, (2, 64)), ArgSpec("out", ARRAY, nvdsl.float32, (2, 64)))
    a, out = np.random.default_rng(0).standard_normal((2, 64)).astype(np.float32), np.zeros((2, 64), np.float32)
    with ir.Context():
        module = ir.Module.parse(_TRACED_STAGES.replace("WAIT_PARITY", parity))
        if error is None:
            assert check_protocol(module, specs) is None
            Program(module).run(specs, (a, out), frozenset({1}))
            np.testing.assert_array_equal(out[:, :32], a[:, :32])
        else:
            # statically: the wait passes on the fresh barrier, so no thread waits for the copy's phase
            with pytest.raises(nvdsl.ProtocolError) as info:
                check_protocol(module, specs)
            assert info.value.code == "unwaited-copy"
            with pytest.raises(nvdsl.KernelFault) as info:       # running: the read comes first
                Program(module).run(specs, (a, out), frozenset({1}))
            assert info.value.code == error


def test_the_check_gives_up_at_its_time_budget_and_says_so(monkeypatch):
    """The check's cost grows with the trip counts (a persistent 8192^2 GEMM took 7 s in full); it stops at its
    time budget and reports that it could not decide, instead of slowing every first call. The clock is the
    test's: every read after the first is past the budget, whatever the machine's speed or load."""
    import itertools

    import nvdsl.interpreter.protocol as protocol
    import nvdsl.tasks as nt
    from nvdsl.kernels.gemm import MAPPING, matmul
    f16 = np.float16
    trace = nt.build(matmul, MAPPING.replace(sm_count=132)).trace(
        np.zeros((8192, 8192), f16), np.zeros((8192, 4096), f16), np.zeros((4096, 8192), f16))
    monkeypatch.setattr(protocol, "TIME_BUDGET_S", 3.0)     # the library's (tests run without one: conftest.py)
    reads = itertools.count(step=4.0)
    undecided = protocol.check_protocol(trace.module, trace.specs, clock=lambda: next(reads))
    assert undecided is not None and "time budget" in undecided
    # the same kernel on a clock that never advances is decided: the budget, not the kernel, stopped the check
    assert protocol.check_protocol(trace.module, trace.specs, clock=lambda: 0.0) is None


def _handover(puts, gets, depth: int = 3, *, rounds: int = 1, extra_puts: int = 0):
    """A producer warpgroup putting ``puts`` tiles (then ``extra_puts`` more) into an aref of ``depth`` slots, a
    consumer taking ``gets``, ``rounds`` times over (a loop when more than once). A count of ``"n"`` is the
    runtime scalar argument ``n`` (traced with n = 5)."""
    @nvdsl.mlir_func
    def handover(a, out, n):
        a_tma = nvdsl.TMA(a, box=(64, 64), swizzle=128)
        count = {"n": n}

        @nvdsl.gpu_launch(grid=1, block=256)
        def kernel(ctx):
            ring = nvdsl.Aref(ctx, [((64, 64), nvdsl.float16)], depth=depth, name="handover")
            with nvdsl.Warpgroup(ctx, 0):
                for _ in nvdsl.for_range(rounds) if rounds > 1 else range(1):
                    for _ in nvdsl.for_range(count.get(puts, puts)):
                        ring.put((a_tma, (0, 0)))
                for _ in range(extra_puts):
                    ring.put((a_tma, (0, 0)))
            with nvdsl.Warpgroup(ctx, 128):
                for _ in nvdsl.for_range(rounds) if rounds > 1 else range(1):
                    for _ in nvdsl.for_range(count.get(gets, gets)):
                        with ring.get() as (tile,):
                            pass
            out[ctx.thread_id.x] = 1
        kernel()
    return handover.trace(f16(64, 64), np.zeros(256, np.int32), 5)


@pytest.mark.parametrize("trips", [1, 5, 6, 1001, 10 ** 6])
def test_the_check_summarises_loops_whatever_their_trip_counts(trips, monkeypatch):
    """Simulating a million trips in full would take minutes (the check would give up at its time budget);
    a summary skips the periods of the ring (2 * depth trips) and runs the remainder."""
    from helpers import record_skips
    trace = _handover(trips, trips)
    skipped = record_skips(monkeypatch)
    assert check_protocol(trace.module, trace.specs) is None
    if trips > 1000:
        assert skipped and skipped[-1] > trips // 2, skipped


@pytest.mark.parametrize("puts, gets, code", [(10 ** 6 + 1, 10 ** 6, "unwaited-copy"), (1001, 1002, "deadlock")])
def test_a_mismatch_that_shows_after_the_last_of_many_trips_is_found(puts, gets, code):
    """Trip counts that are not a multiple of the ring's period: the skipped periods end where the remainder
    runs in full, so a producer that puts one tile more than its consumer takes (an unwaited copy), or a
    consumer that waits for one more, is still found."""
    trace = _handover(puts, gets)
    with pytest.raises(nvdsl.ProtocolError) as info:
        check_protocol(trace.module, trace.specs)
    assert info.value.code == code, str(info.value)


def _scheduling_steps(monkeypatch) -> list:
    """Make the check count the scheduling steps of its skeleton runs (in the returned list's one entry)."""
    import nvdsl.interpreter.period as period
    steps = [0]
    observe = period.Summary.observe

    def counting(self, current):
        steps[0] += 1
        return observe(self, current)
    monkeypatch.setattr(period.Summary, "observe", counting)
    return steps


def test_a_phase_reset_across_many_persistent_tiles_is_refused(monkeypatch):
    """The consumer's waits pass on phases completed a tile before, so it can run ahead of the producer. A paced unit
    run (warpgroups as units) used to hand the turn at a back-edge to the warp at the position of the *index* after
    the one that ran (after the consumer's unit, warp 4, position 5 % 2: the consumer again): the consumer ran all
    4096 tiles alone, with no state for a summary to compare (1.5-2.3 s of the 3 s budget, undecided under load).
    Handing it to the next warp object in order, the check decides in as many steps at 4096 tiles as at 8, under
    the normal budget."""
    steps = _scheduling_steps(monkeypatch)
    counts = {}
    for tiles in (8, 4096):
        gemm, make_inputs = bk.pipeline("phase-reset", tiles=tiles)
        trace = gemm.trace(*make_inputs())
        steps[0] = 0
        with pytest.raises(nvdsl.ProtocolError) as info:
            check_protocol(trace.module, trace.specs)
        assert info.value.code == "stale-phase-wait" and "AT:producer-wait" in str(info.value), str(info.value)
        counts[tiles] = steps[0]
    assert counts[4096] == counts[8] < 100, counts


def test_the_library_gemm_at_production_size_skips_whole_tiles(monkeypatch):
    """nvdsl.kernels.gemm's persistent mapping at 8192^2 x 4096 on 132 SMs: 64 trips of the K loop in each of 16
    tiles per block. The summaries skip periods of the K loop and then whole tiles (on a clock that never
    advances, so that no time budget applies: how fast it is, is measured in benchmarks/suites/trust.py)."""
    import nvdsl.interpreter.period as period
    import nvdsl.tasks as nt
    from nvdsl.kernels.gemm import MAPPING, matmul
    advanced = []
    original = period.Summary._skip

    def recording(self, earlier, now):
        done = original(self, earlier, now)
        if done:
            advanced.append({frame.op for frames in now for frame, i in frames if getattr(frame, "i", None) != i})
        return done
    monkeypatch.setattr(period.Summary, "_skip", recording)
    trace = nt.build(matmul, MAPPING.replace(sm_count=132)).trace(f16(8192, 8192), f16(8192, 4096), f16(4096, 8192))
    assert check_protocol(trace.module, trace.specs, clock=lambda: 0.0) is None
    assert any(len(ops) >= 2 for ops in advanced), advanced     # a tile loop and a K loop moved ahead together

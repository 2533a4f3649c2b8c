"""Broken kernels are caught with a report naming the right line; correct kernels stay quiet under many schedules.

Each kernel of tests/broken_kernels.py carries one classic pipeline bug. The static protocol check
(before anything runs) or the interpreter (first in its fixed schedule, then under up to 20 fuzzed
schedules) must report it with one of the expected codes, and the report must name one of the
marked lines. None may hang: deadlocks are reports too.
"""

import os
import sys

import numpy as np
import pytest

import nvdsl
import broken_kernels as bk

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tutorials"))

# bug -> (codes a report may have, markers of which the report must name at least one line)
EXPECTED = {
    "wrong-parity": ({"deadlock", "tma-read-before-complete"}, ["AT:consumer-wait"]),
    "expect-tx-short": ({"expect-tx-mismatch"}, ["BUG:expect-tx"]),
    "expect-tx-long": ({"deadlock"}, ["BUG:expect-tx"]),
    "early-release": ({"wgmma-operand-overwritten"}, ["BUG:early-release"]),
    "missing-fence": ({"missing-proxy-fence"}, ["AT:epilogue"]),
    "phase-reset": ({"stale-phase-wait"}, ["AT:producer-wait", "AT:consumer-wait"]),
    "arrival-count": ({"deadlock"}, ["BUG:arrival-count"]),
    "read-before-wait": ({"tma-read-before-complete"}, ["AT:wgmma-early"]),
    "one-trip": ({"tma-out-of-bounds"}, ["AT:one-trip"]),
    "wait-in-branch": ({"tma-read-before-complete"}, ["BUG:wait-in-branch", "AT:wgmma"]),
    "ring-overrun": ({"out-of-bounds"}, ["AT:ring-producer-wait", "AT:ring-wait"]),
    "init-race": ({"mbarrier-init-race", "mbarrier-uninitialized"}, ["AT:init"]),
    "missing-store-wait": ({"tma-store-source-overwritten"}, ["AT:epilogue"]),
    "divergent-barrier": ({"divergent-barrier"}, ["BUG:divergent"]),
}


TRACED = set(bk.TRACED)
# the bugs whose evidence lies in the synchronisation skeleton; the other two involve ordinary stores
STATIC = set(bk.BUGS) - {"missing-fence", "missing-store-wait"} - TRACED


def interpreter_report(bug, seeds=20):
    """The interpreter's report in the fixed schedule, or in the first of ``seeds`` fuzzed ones that has one."""
    fn, inputs = bk.make(bug)
    fn = fn.with_options(backend="interpret", protocol_check=False)
    try:
        fn(*inputs())
    except nvdsl.KernelFault as error:
        return error
    return nvdsl.fuzz(fn, *inputs(), seeds=seeds).error


def first_report(bug):
    """What a user meets first: a trace error, the static check when compiling or calling, else the
    interpreter's report."""
    fn, inputs = bk.make(bug)
    try:
        fn.with_options(backend="interpret")(*inputs())
    except (nvdsl.TraceError, nvdsl.ProtocolError, nvdsl.KernelFault) as error:
        return error
    return interpreter_report(bug)


def test_at_least_twelve_broken_kernels_are_covered():
    assert len(bk.BUGS) >= 12 and set(EXPECTED) == set(bk.BUGS)


def assert_names_the_bug(bug, error):
    assert error is not None, f"{bug}: no report"
    codes, markers = EXPECTED[bug]
    text = str(error)
    assert error.code in codes, f"{bug}: {text}"
    assert any(marker in text for marker in markers), f"{bug}: the report names none of {markers}:\n{text}"
    assert error.loc is not None and error.loc.filename.endswith("broken_kernels.py"), text


@pytest.mark.parametrize("bug", bk.BUGS)
def test_broken_kernel_is_reported_naming_its_line(bug):
    error = first_report(bug)
    expected = nvdsl.TraceError if bug in TRACED else nvdsl.ProtocolError if bug in STATIC else nvdsl.KernelFault
    assert type(error) is expected, str(error)
    assert_names_the_bug(bug, error)


@pytest.mark.parametrize("bug", sorted(set(bk.BUGS) - TRACED))
def test_the_interpreter_alone_reports_every_broken_kernel(bug):
    assert_names_the_bug(bug, interpreter_report(bug))


@pytest.mark.parametrize("bug", sorted(STATIC))
def test_the_static_check_refuses_the_kernel_before_compiling_it(bug):
    fn, inputs = bk.make(bug)
    with pytest.raises(nvdsl.ProtocolError) as info:
        fn.compile(*inputs())
    assert "before running the kernel" in str(info.value)
    assert_names_the_bug(bug, info.value)


def test_a_phase_reset_whose_refill_meets_a_running_wgmma_is_reported_at_the_wait():
    """Three groups of two stages per tile: the producer's parity restarts at each tile while its barriers' phases
    go on, so its wait on the second tile passes on a phase it already waited for, and the refill it lets through
    overwrites a stage a wgmma may still read. That was reported as wgmma-operand-overwritten at the load, with a
    hint about retiring wgmmas; the cause is the wait's parity."""
    fn, inputs = bk.pipeline("phase-reset", stages=2, groups=3, tiles=2)
    with pytest.raises(nvdsl.ProtocolError) as info:
        fn.compile(*inputs())
    text = str(info.value)
    assert info.value.code == "stale-phase-wait" and "AT:producer-wait" in info.value.loc.text, text
    assert "waits on parity 1" in text and "has parity 0 (expected)" in text, text
    assert "phase ^= 1 when the slot index returns to 0" in info.value.hint


@pytest.mark.parametrize("bug", ["early-release", "read-before-wait", "missing-fence", "expect-tx-short"])
def test_races_are_found_whatever_the_schedule(bug):
    """Happens-before detection does not need an unlucky interleaving: every seed reports."""
    fn, inputs = bk.make(bug)
    for seed in range(3):
        with pytest.raises(nvdsl.KernelFault) as info:
            fn.with_options(backend="interpret", seed=seed, protocol_check=False)(*inputs())
        assert info.value.code in EXPECTED[bug][0], str(info.value)


def test_the_deadlock_report_names_barrier_phase_arrivals_and_outstanding_bytes():
    error = interpreter_report("expect-tx-long")
    text = str(error)
    assert "barrier 0 of Mbarriers(2) is in phase 0 (parity 0): 1 of 1 arrivals, 8192 transaction bytes outstanding" \
        in text, text
    assert "armed 24576 bytes and the copies issued since deliver 16384" in text, text


@pytest.mark.parametrize("stages, groups, tiles", [(2, 2, 2), (3, 1, 2), (3, 2, 1), (4, 1, 3)])
def test_the_correct_pipeline_gives_no_report_under_50_schedules(stages, groups, tiles):
    fn, inputs = bk.pipeline(stages=stages, groups=groups, tiles=tiles)
    a, b, c = inputs()
    report = nvdsl.fuzz(fn, a, b, c, seeds=50)
    assert report.ok, str(report)
    fn.with_options(backend="interpret")(a, b, c)
    reference = a.astype(np.float32) @ b.astype(np.float32)
    assert np.linalg.norm(c - reference) / np.linalg.norm(reference) < 1e-6


def test_the_one_trip_pipeline_is_correct_with_enough_trips():
    fn, inputs = bk.one_trip(bug=False)
    assert nvdsl.fuzz(fn, *inputs(), seeds=10).ok


def gemm_case(name):
    rng = np.random.default_rng(0)
    f16 = lambda *shape: rng.standard_normal(shape).astype(np.float16)
    if name == "ch2":
        import ch2_tma
        a = f16(128, 128)
        return ch2_tma.double_by_tiles, (a, np.zeros_like(a))
    if name == "ch4":
        import ch4_gemm_multistage
        return ch4_gemm_multistage.make_gemm(2), (f16(128, 256), f16(256, 128), np.zeros((128, 128), np.float32))
    if name == "ch5":
        import ch5_gemm_warp_specialized
        return (ch5_gemm_warp_specialized.make_gemm(num_stages=2),
                (f16(128, 256), f16(256, 256), np.zeros((128, 256), np.float16)))
    from nvdsl.kernels.gemm import MAPPING, matmul
    return (nvdsl.tasks.build(matmul, MAPPING.replace(pipeline=2, sm_count=1)),
            (np.zeros((256, 256), np.float32), f16(256, 128), f16(128, 256)))


@pytest.mark.parametrize("name", ["ch2", "ch4", "ch5", "persistent"])
def test_tutorial_and_library_kernels_give_no_report_under_50_schedules(name):
    fn, args = gemm_case(name)
    report = nvdsl.fuzz(fn, *args, seeds=50)
    assert report.ok, str(report)


def test_fuzz_reports_a_divergence_between_schedules():
    """A kernel whose result depends on the order warps run in (a race on global memory, which the
    shared-memory race detector does not watch) diverges under some seed."""
    @nvdsl.mlir_func
    def last_writer_wins(out):
        @nvdsl.gpu_launch(grid=1, block=128, smem=128 * 4)
        def kernel(ctx):
            flags = ctx.dynamic_shared((128,), nvdsl.int32)
            flags[ctx.thread_id.x] = ctx.thread_id.x.to(nvdsl.int32)    # a shared store: a scheduling point
            out[0] = ctx.thread_id.x.to(nvdsl.int32)
        kernel()
    report = nvdsl.fuzz(last_writer_wins, np.zeros(1, np.int32), seeds=20)
    assert not report.ok and report.kind == "diverged" and "argument 0 differs" in report.difference
    with pytest.raises(AssertionError):
        report.raise_if_failed()

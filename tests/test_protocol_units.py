"""The protocol check runs a warpgroup's 4 warps as one unit of 128 lanes while they run alike
(nvdsl/interpreter/machine.py Block, protocol.UNIT_OPS): what it decides and reports must be what running every
warp on its own decides and reports."""

import numpy as np
import pytest

import nvdsl
import broken_kernels as bk
import nvdsl.interpreter.machine as machine
import nvdsl.interpreter.program as program
import nvdsl.interpreter.protocol as protocol
from nvdsl.interpreter.protocol import check_protocol


def _record_runs(monkeypatch) -> list:
    """The ``units`` of every skeleton run, and the widths of the warp objects of every skeleton block."""
    runs = []
    original_run, original_block = program.Program.run_skeleton, machine.Block.__init__

    def run_skeleton(self, *args, **kwargs):
        runs.append([kwargs.get("units")])
        return original_run(self, *args, **kwargs)

    def block(self, *args, **kwargs):
        original_block(self, *args, **kwargs)
        runs[-1].append([w.width for w in self.warps])
    monkeypatch.setattr(program.Program, "run_skeleton", run_skeleton)
    monkeypatch.setattr(machine.Block, "__init__", block)
    return runs


def _per_warp(monkeypatch) -> None:
    monkeypatch.setattr(protocol, "UNIT_OPS", frozenset())
    monkeypatch.setattr(protocol, "UNIT_DIALECTS", ("no dialect.",))


def test_the_warpgroups_of_a_warp_specialized_pipeline_run_as_units(monkeypatch):
    """broken_kernels.pipeline: warpgroup 0 produces (every thread waits, one issues the loads), warpgroup 1
    consumes; each runs as one unit of 128 lanes in the one run the check makes."""
    gemm, inputs = bk.pipeline()
    trace = gemm.trace(*inputs())
    runs = _record_runs(monkeypatch)
    assert check_protocol(trace.module, trace.specs) is None
    assert runs == [[frozenset(range(protocol.MAX_WARPGROUPS)), [4, 4]]], runs


def test_warp_by_warp_where_an_operation_does_not_know_units(monkeypatch):
    """A skeleton holding an operation outside protocol.UNIT_OPS runs every warp on its own."""
    gemm, inputs = bk.pipeline()
    trace = gemm.trace(*inputs())
    monkeypatch.setattr(protocol, "UNIT_OPS", protocol.UNIT_OPS - {"nvgpu.mbarrier.init"})
    runs = _record_runs(monkeypatch)
    assert check_protocol(trace.module, trace.specs) is None
    assert [units for units, *_ in runs] == [None], runs
    assert all(width == 1 for _, *blocks in runs for widths in blocks for width in widths)


def _outcome(trace):
    try:
        return "decided", check_protocol(trace.module, trace.specs)
    except nvdsl.ProtocolError as error:
        return error.code, str(error)


@pytest.mark.parametrize("bug", [b for b in bk.BUGS if b not in bk.TRACED])
def test_what_the_check_says_of_a_broken_kernel_is_what_it_says_warp_by_warp(bug, monkeypatch):
    """Each deliberately broken kernel: the same verdict, and the same report word for word, as running every
    warp on its own (a violation a unit run finds is reported from a run warp by warp)."""
    kernel, inputs = bk.make(bug)
    trace = kernel.trace(*inputs())
    with_units = _outcome(trace)
    with monkeypatch.context() as patch:
        _per_warp(patch)
        alone = _outcome(trace)
    assert with_units == alone


def test_the_library_gemm_is_decided_with_its_consumers_as_units(monkeypatch):
    """The persistent GEMM (a producer warpgroup, 2 consumer warpgroups) at 8192^2 x 4096 on 132 SMs: its producer
    waits from one warp, so the first run, with every warpgroup a unit, stops where the producer's warps part; the
    run that decides has the producer's 4 warps on their own and each consumer warpgroup as one unit, in both
    skeleton blocks (the first and the last)."""
    from nvdsl.kernels.gemm import MAPPING, matmul
    trace = nvdsl.tasks.build(matmul, MAPPING.replace(sm_count=132)).trace(
        np.zeros((8192, 8192), np.float16), np.zeros((8192, 4096), np.float16), np.zeros((4096, 8192), np.float16))
    runs = _record_runs(monkeypatch)
    assert check_protocol(trace.module, trace.specs) is None
    assert [units for units, *_ in runs] == [frozenset(range(protocol.MAX_WARPGROUPS)),
                                            frozenset(range(1, protocol.MAX_WARPGROUPS))], runs
    assert runs[-1][1:] == [[1, 1, 1, 1, 4, 4]] * 2, runs


def _record_periods(monkeypatch) -> list:
    """The iterations each loop advanced by in one period, for every period the loop summaries skip."""
    import nvdsl.interpreter.period as period
    periods = []
    original = period.Summary._skip

    def recording(self, earlier, now):
        before = [dict((id(frame), i) for frame, i in warp) for warp in earlier]
        done = original(self, earlier, now)
        if done:
            periods.append(sorted({(frame.op, (i - known[id(frame)]) // frame.step)
                                   for warp, known in zip(now, before) for frame, i in warp
                                   if id(frame) in known and i != known[id(frame)]}))
        return done
    monkeypatch.setattr(period.Summary, "_skip", recording)
    return periods


def test_a_unit_run_finds_a_rings_period_at_its_true_length(monkeypatch):
    """Chapter 5's GEMM at 8192^2 x 4096: a ring of 4 slots over 64 K steps, its 2 consumer warpgroups run as units.
    A unit run gives every warp object a scheduling point at each back-edge, and the next one in order runs after
    it, so the producer and each consumer advance about one K step per round: the loop summaries find the ring's
    period of 8 K steps (2 passes over 4 slots). Left to run until it blocks, a consumer unit frees 3 slots per
    round, and the period found was lcm(3, 8) = 24."""
    import importlib
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tutorials"))
    ch5 = importlib.import_module("ch5_gemm_warp_specialized")
    trace = ch5.make_gemm(4).trace(np.zeros((8192, 4096), np.float16), np.zeros((4096, 8192), np.float16),
                                   np.zeros((8192, 8192), np.float16))
    runs = _record_runs(monkeypatch)
    periods = _record_periods(monkeypatch)
    assert check_protocol(trace.module, trace.specs) is None
    assert runs == [[frozenset(range(protocol.MAX_WARPGROUPS)), [4, 4, 4]]], runs
    assert periods and all(advance == 8 for skip in periods for _, advance in skip), periods
    assert len(periods[0]) == 3, periods       # the producer's K loop and each consumer unit's

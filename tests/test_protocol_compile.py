"""The protocol check on the compile path: it runs while ptxas assembles (in its own process), and a violation
stops everything before anything is cached or launched, ahead of any compile error."""

import os
import warnings

import numpy as np
import pytest
from mlir import ir

import nvdsl
import broken_kernels as bk
import nvdsl.compiler.driver as driver
from nvdsl.compiler.toolchain import find_tool
from nvdsl.jit import TracedFunction
from nvdsl.interpreter.protocol import check_protocol
from test_protocol import data_driven_kernel

needs_ptxas = pytest.mark.skipif(find_tool("ptxas") is None, reason="ptxas not installed")


class Events(list):
    """What happened, in order; ``assemblies``: the ptxas runs started."""

    def __init__(self):
        super().__init__()
        self.assemblies = []


@pytest.fixture
def events(monkeypatch):
    """What happened, in order: ptxas started, waited for or cancelled, and the check's start and end."""
    happened = Events()

    class RecordedAssembly(driver.Assembly):
        def __init__(self, *args):
            super().__init__(*args)
            happened.append("ptxas started")
            happened.assemblies.append(self)

        def result(self):
            happened.append("waited for ptxas")
            return super().result()

        def cancel(self):
            happened.append("ptxas cancelled")
            super().cancel()

    check = TracedFunction._check_protocol

    def recorded_check(self, trace):
        happened.append("check started")
        undecided = check(self, trace)
        happened.append("check ended")
        return undecided
    monkeypatch.setattr(driver, "Assembly", RecordedAssembly)
    monkeypatch.setattr(TracedFunction, "_check_protocol", recorded_check)
    return happened


def _files(directory) -> list[str]:
    return [os.path.join(root, name) for root, _, names in os.walk(directory) for name in names]


@needs_ptxas
def test_the_check_runs_while_ptxas_assembles(events, tmp_path):
    gemm, inputs = bk.make(None)
    compiled = gemm.with_options(cache_dir=str(tmp_path)).compile(*inputs())
    assert events == ["ptxas started", "check started", "check ended", "waited for ptxas"]
    timings = compiled.module.timings
    assert 0 <= timings["check_overlap_s"] <= timings["check_s"] and timings["check_cpu_s"] > 0
    assert timings["ptxas_s"] > 0 and compiled.cubin
    assert _files(tmp_path)                       # a module that passes is cached


@needs_ptxas
@pytest.mark.parametrize("backend", [None, "gpu"])
def test_a_violation_found_while_ptxas_assembles_stops_it_and_caches_nothing(events, tmp_path, backend):
    """Compiling (``compile()``) or calling on the GPU backend (which compiles before it looks for a GPU): the
    ProtocolError is the one the check raises on the trace, ptxas is stopped and waited for, nothing is cached."""
    gemm, inputs = bk.make("arrival-count")
    trace = gemm.trace(*inputs())
    with pytest.raises(nvdsl.ProtocolError) as expected:
        check_protocol(trace.module, trace.specs)
    events.clear()
    gemm = gemm.with_options(cache_dir=str(tmp_path), backend=backend)
    with pytest.raises(nvdsl.ProtocolError) as info:
        if backend is None:
            gemm.compile(*inputs())
        else:
            gemm(*inputs())
    assert str(info.value) == str(expected.value) and info.value.code == "deadlock"
    assert events == ["ptxas started", "check started", "ptxas cancelled"]
    assert all(assembly.finished is not None for assembly in events.assemblies)     # ptxas exited
    assert _files(tmp_path) == []
    with pytest.raises(nvdsl.ProtocolError):      # nor in memory
        gemm.compile(*inputs())


def test_without_ptxas_the_check_runs_before_the_compile(events, tmp_path):
    gemm, inputs = bk.make("arrival-count")
    with pytest.raises(nvdsl.ProtocolError) as info:
        gemm.with_options(cache_dir=str(tmp_path), assemble_cubin=False).compile(*inputs())
    assert info.value.code == "deadlock"
    assert events == ["check started"] and _files(tmp_path) == []
    compiled = bk.make(None)[0].with_options(cache_dir=str(tmp_path), assemble_cubin=False).compile(*inputs())
    assert compiled.cubin is None and compiled.module.timings["check_overlap_s"] == 0


def _short_count():
    """One warp arriving on a barrier initialised for 33 arrivals: the wait never passes (a deadlock)."""
    @nvdsl.mlir_func
    def short_count(out):
        @nvdsl.gpu_launch(grid=1, block=32)
        def kernel(ctx):
            bar = nvdsl.Mbarriers(1)[0]
            bar.init(33, predicate=ctx.thread_id.x.eq(0))
            ctx.sync_threads()
            bar.arrive()
            bar.try_wait(0)
            out[ctx.thread_id.x] = 1
        kernel()
    return short_count.trace(np.zeros(32, np.int32))


def _broken_copy(module: ir.Module, stage: str):
    """A copy of a traced module whose kernel also holds what fails at ``stage``: an instruction ptxas does not
    know ("ptxas"), or a cast no lowering resolves ("translating to PTX")."""
    from mlir.dialects import arith, llvm
    with module.context, ir.Location.unknown():
        copy = module.operation.clone()
        launch = next(op for op in copy.body.operations[0].regions[0].blocks[0].operations
                      if op.operation.name == "gpu.launch")
        with ir.InsertionPoint.at_block_terminator(launch.regions[0].blocks[0]):
            if stage == "ptxas":
                llvm.inline_asm(None, [], "bogus.instruction;", "", has_side_effects=True, asm_dialect=0)
            else:
                i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
                cast = ir.Operation.create("builtin.unrealized_conversion_cast", results=[i64],
                                           operands=[arith.constant(i32, 3)])
                llvm.inline_asm(None, [cast.result], "// $0", "l", has_side_effects=True, asm_dialect=0)
    return copy


@needs_ptxas
@pytest.mark.parametrize("stage", ["ptxas", "translating to PTX"])
def test_a_compile_error_and_a_violation_together_report_the_violation(stage):
    trace = _short_count()
    with pytest.raises(nvdsl.CompileError) as failure:
        driver.compile_module(_broken_copy(trace.module, stage), "k", "key", nvdsl.Options())
    assert failure.value.stage == stage, str(failure.value)
    with pytest.raises(nvdsl.ProtocolError) as info:
        driver.compile_module(_broken_copy(trace.module, stage), "k", "key", nvdsl.Options(),
                              check=lambda: check_protocol(trace.module, trace.specs))
    assert info.value.code == "deadlock" and "bar.try_wait(0)" in str(info.value)


def test_the_compile_leaves_the_traced_module_as_traced(tmp_path):
    """The compile outlines a copy: the module the check reads is the one traced, before and after."""
    gemm, inputs = bk.make(None)
    compiled = gemm.with_options(cache_dir=str(tmp_path)).compile(*inputs())
    assert str(compiled.trace.module) == str(gemm.trace(*inputs()).module)
    assert check_protocol(compiled.trace.module, compiled.trace.specs) is None


def test_an_undecided_check_warns_at_the_callers_line_whether_or_not_ptxas_runs(tmp_path):
    data_driven = data_driven_kernel()
    args = np.ones(1, np.int32), np.zeros(32, np.int32)
    for assemble in (True, False):
        for attempt in ("compiled", "from the cache"):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                data_driven.with_options(cache_dir=str(tmp_path), assemble_cubin=assemble).compile(*args)
            unchecked = [w for w in caught if issubclass(w.category, nvdsl.ProtocolCheckWarning)]
            assert len(unchecked) == 1, (assemble, attempt, caught)
            assert "memory contents" in str(unchecked[0].message) and unchecked[0].filename == __file__

"""From a traced MLIR module to PTX and a cubin.

Stages: outline the ``gpu.launch`` bodies into a ``gpu.module`` (MLIR's
``gpu-kernel-outlining``), read the launch plan off the host function, lower
the kernels alone with ``gpu-lower-to-nvvm-pipeline`` to PTX, and assemble the
PTX with ptxas. The host function is never lowered: the runtime executes the
plan through the CUDA driver.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager

from mlir import ir, passmanager
from mlir.dialects.gpu import ObjectAttr

from ..errors import CompileError, InternalError, LaunchConfigError, SourceLocation, UserError
from ..options import Options
from ..signature import LaunchSpec, ProgramPlan, ScratchSpec, TensorMapSpec
from ..target import (DYNAMIC_SHARED_ALIGNMENT, MAXNREG_ATTR, OVERLAP_PREVIOUS_ATTR, SCRATCH_ATTR, TENSORMAP_ATTR,
                      max_shared_memory, static_shared_memory)
from .compiled import CompiledModule, parse_ptxas_log
from .toolchain import find_tool


_LOC = re.compile(r'loc\("(?P<file>[^"]+)":(?P<line>\d+):\d+')


def _source_locations(text: str) -> tuple[SourceLocation, ...]:
    seen = []
    for m in _LOC.finditer(text):
        loc = SourceLocation(m.group("file"), int(m.group("line")))
        if loc not in seen:
            seen.append(loc)
    return tuple(seen)


@contextmanager
def collect_diagnostics(context: ir.Context):
    """Collect MLIR's diagnostics instead of letting them abort the bindings."""
    found: list[str] = []

    def handler(diagnostic) -> bool:
        lines = [f"{diagnostic.severity.name.lower()}: {diagnostic.message} [{diagnostic.location}]"]
        # Notes often print a whole operation; its first line says which one.
        lines += [f"  note: {note.message.strip().splitlines()[0] if note.message.strip() else ''}"
                  for note in diagnostic.notes]
        found.append("\n".join(lines))
        return True

    previous = context.emit_error_diagnostics
    context.emit_error_diagnostics = True
    handle = context.attach_diagnostic_handler(handler)
    try:
        yield found
    finally:
        handle.detach()
        context.emit_error_diagnostics = previous


def run_passes(module: ir.Module, pipeline: str, stage: str) -> None:
    """Run a pass pipeline; failure becomes a CompileError quoting MLIR and the user's lines."""
    with collect_diagnostics(module.context) as diagnostics:
        try:
            passmanager.PassManager.parse(pipeline, module.context).run(module.operation)
            failed = any(d.startswith("error") for d in diagnostics)
        except ir.MLIRError as e:
            diagnostics.extend(f"error: {d.message} [{d.location}]" for d in e.error_diagnostics)
            failed = True
    if failed:
        text = "\n".join(diagnostics) or "(MLIR gave no message)"
        raise CompileError(stage, text, _source_locations(text))


def verify(module: ir.Module, stage: str) -> None:
    with collect_diagnostics(module.context) as diagnostics:
        try:
            ok = module.operation.verify()
        except ir.MLIRError as e:
            diagnostics.extend(f"error: {d.message} [{d.location}]" for d in e.error_diagnostics)
            ok = False
    if not ok or any(d.startswith("error") for d in diagnostics):
        text = "\n".join(diagnostics)
        raise CompileError(stage, text, _source_locations(text))


def _constant_int(value: ir.Value, what: str) -> int:
    owner = value.owner
    if getattr(owner, "name", None) != "arith.constant":
        raise InternalError(f"the {what} of a launch is not a constant")
    return ir.IntegerAttr(owner.attributes["value"]).value


def outline(module: ir.Module) -> tuple[ir.Module, ProgramPlan]:
    """Outline the kernels; return a module of only the gpu.modules, and the launch plan."""
    register_caps = _register_caps(module)
    overlapping = _overlapping_launches(module)
    run_passes(module, "builtin.module(gpu-kernel-outlining)", "kernel outlining")
    kernels = ir.Module.create()
    kernels.operation.attributes["gpu.container_module"] = ir.UnitAttr.get()
    launches, scratch = [], ()
    for op in module.body.operations:
        name = op.operation.name
        if name == "gpu.module":
            kernels.body.append(op.operation.clone())
        elif name == "func.func":
            if SCRATCH_ATTR in op.attributes:
                scratch = tuple(ScratchSpec.from_json(d)
                                for d in json.loads(ir.StringAttr(op.attributes[SCRATCH_ATTR]).value))
            for inner in op.regions[0].blocks[0].operations:
                if inner.operation.name != "gpu.launch_func":
                    continue
                launches.append(_launch_spec(inner, overlapping))
    _set_register_caps(kernels, register_caps)
    return kernels, ProgramPlan(tuple(launches), scratch)




def _register_caps(module: ir.Module) -> dict[str, ir.Attribute]:
    """Kernel name -> register cap, from the host function's launches."""
    return {ir.FlatSymbolRefAttr(op.attributes["function"]).value: op.attributes[MAXNREG_ATTR]
            for op in _host_launches(module) if MAXNREG_ATTR in op.attributes}


def _overlapping_launches(module: ir.Module) -> frozenset[str]:
    """The kernels launched with ``overlap_previous`` (``gpu_launch``), by name."""
    return frozenset(ir.FlatSymbolRefAttr(op.attributes["function"]).value
                     for op in _host_launches(module) if OVERLAP_PREVIOUS_ATTR in op.attributes)


def _host_launches(module: ir.Module):
    """The gpu.launch ops of the host functions, before outlining (always at a function's top level)."""
    return (op for function in module.body.operations if function.operation.name == "func.func"
            for op in function.regions[0].blocks[0].operations if op.operation.name == "gpu.launch")


def _set_register_caps(kernels: ir.Module, caps: dict[str, ir.Attribute]) -> None:
    if not caps:
        return
    for module in kernels.body.operations:
        for op in module.regions[0].blocks[0].operations:
            if op.operation.name == "gpu.func" and ir.StringAttr(op.attributes["sym_name"]).value in caps:
                op.attributes["nvvm.maxnreg"] = caps[ir.StringAttr(op.attributes["sym_name"]).value]


def _launch_locations(module: ir.Module) -> dict[str, SourceLocation]:
    """The user's line of each kernel launch, by kernel name (after outlining)."""
    found = {}
    for function in module.body.operations:
        if function.operation.name == "func.func":
            for op in function.regions[0].blocks[0].operations:
                if op.operation.name == "gpu.launch_func":
                    lines = _source_locations(str(op.location))
                    if lines:
                        found[str(op.attributes["kernel"]).rsplit("::@", 1)[-1]] = lines[0]
    return found


def _launch_spec(op, overlapping: frozenset[str] = frozenset()) -> LaunchSpec:
    kernel = str(op.attributes["kernel"])  # @module::@function
    function = kernel.rsplit("::@", 1)[-1]
    grid = tuple(_constant_int(v, "grid size") for v in (op.gridSizeX, op.gridSizeY, op.gridSizeZ))
    block = tuple(_constant_int(v, "block size") for v in (op.blockSizeX, op.blockSizeY, op.blockSizeZ))
    smem = 0 if op.dynamicSharedMemorySize is None else _constant_int(op.dynamicSharedMemorySize,
                                                                       "shared memory size")
    params = []
    for operand in op.kernelOperands:
        if isinstance(operand, ir.BlockArgument):
            params.append(operand.arg_number)
        elif TENSORMAP_ATTR in getattr(operand.owner, "attributes", {}):
            params.append(_tensormap_spec(operand.owner))
        else:
            raise UserError("a kernel uses a value computed in host code", code="host-compute",
                            hint="compute on traced values inside the kernel body, or on Python ints "
                                 "while tracing")
    return LaunchSpec(function, grid, block, smem, tuple(params), overlaps_previous=function in overlapping)




def _tensormap_spec(cast) -> TensorMapSpec:
    source = cast.operands[0]
    if not isinstance(source, ir.BlockArgument):
        raise InternalError("a TMA descriptor is not made from an argument of the host function")
    settings = ir.DictAttr(cast.attributes[TENSORMAP_ATTR])
    integer = lambda name: ir.IntegerAttr(settings[name]).value
    return TensorMapSpec(arg=source.arg_number,
                         box=tuple(ir.DenseI64ArrayAttr(settings["box"])),
                         swizzle=integer("swizzle"), l2_promotion=integer("l2_promotion"),
                         oob_nan=ir.BoolAttr(settings["oob_nan"]).value, interleave=integer("interleave"),
                         ragged="ragged" in settings and ir.BoolAttr(settings["ragged"]).value)


def lowering_pipeline(options: Options) -> str:
    """The kernel module to the LLVM/NVVM dialects: upstream ``gpu-lower-to-nvvm-pipeline`` less its
    host and serialisation steps (the host side is never lowered here), with bare-pointer memrefs."""
    return ("builtin.module(convert-nvgpu-to-nvvm,convert-vector-to-scf,convert-scf-to-cf,"
            "convert-nvvm-to-llvm,expand-strided-metadata,"
            f"nvvm-attach-target{{chip={options.chip} features={options.features} O={options.opt_level}}},"
            "lower-affine,convert-arith-to-llvm,convert-index-to-llvm,canonicalize,cse,"
            "gpu.module(convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1},convert-math-to-llvm,canonicalize,cse,"
            "reconcile-unrealized-casts))")


SERIALIZE_TO_PTX = "builtin.module(gpu-module-to-binary{format=isa})"


def externalize_dynamic_shared_memory(kernels: ir.Module) -> None:
    """Give the dynamic shared memory global external linkage, as CUDA's ``extern __shared__``.

    MLIR lowers ``gpu.dynamic_shared_memory`` to an *internal* zero-sized global; the NVPTX back
    end then emits it as an ordinary ``.shared`` variable, and static shared arrays (such as
    ``nvgpu.mbarrier.create``'s) are laid out on top of the dynamic buffer. As ``.extern .shared``
    the dynamic buffer starts after all static shared memory, as the hardware intends.
    """
    external = ir.Attribute.parse("#llvm.linkage<external>")
    # Static shared memory (mbarriers) now precedes the buffer: align its start for TMA's
    # 128-byte-swizzled tiles, which need 1024 bytes, so offsets in the buffer are absolute.
    alignment = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), DYNAMIC_SHARED_ALIGNMENT)
    for module in kernels.body.operations:
        if module.operation.name != "gpu.module":
            continue
        for op in module.regions[0].blocks[0].operations:
            if op.operation.name == "llvm.mlir.global" and \
                    ir.StringAttr(op.attributes["sym_name"]).value.startswith("__dynamic_shmem__"):
                op.attributes["linkage"] = external
                op.attributes["alignment"] = alignment


def lower_to_ptx(kernels: ir.Module, options: Options) -> str:
    """Lower the kernel module in place; return its PTX."""
    run_passes(kernels, lowering_pipeline(options), "lowering to NVVM")
    externalize_dynamic_shared_memory(kernels)
    run_passes(kernels, SERIALIZE_TO_PTX, "translating to PTX")
    ptx = []
    for op in kernels.body.operations:
        if op.operation.name != "gpu.binary":
            continue
        for obj in op.attributes["objects"]:
            data = ObjectAttr(obj).object
            ptx.append(data.decode() if isinstance(data, bytes) else data)
    if len(ptx) != 1:
        raise InternalError(f"expected one PTX module, the lowering gave {len(ptx)}")
    return ptx[0]


class Assembly:
    """ptxas assembling PTX in another process, started at once, while this thread does other work (the
    barrier-protocol check: see :func:`compile_module`); :meth:`result` waits for it, :meth:`cancel` stops it."""

    def __init__(self, ptx: str, options: Options, ptxas: str):
        self._ptx = ptx
        self._tmp = tempfile.TemporaryDirectory(prefix="nvdsl-")
        src, self._cubin = os.path.join(self._tmp.name, "kernel.ptx"), os.path.join(self._tmp.name, "kernel.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        cmd = [ptxas, f"-arch={options.chip}", f"-O{options.opt_level}", "-v", src, "-o", self._cubin]
        self.started = time.perf_counter()
        try:
            self._process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        except BaseException:
            self._tmp.cleanup()
            raise
        self.finished: float | None = None      # when ptxas exited (perf_counter)
        self._output = ("", "")
        # Reads ptxas' pipes as it writes (a full pipe would stall it) and notes when it exits; touches no MLIR.
        self._waiter = threading.Thread(target=self._wait, name="nvdsl-ptxas", daemon=True)
        self._waiter.start()

    def _wait(self) -> None:
        self._output = self._process.communicate()
        self.finished = time.perf_counter()

    def result(self) -> tuple[bytes, str]:
        """Wait for ptxas; return the cubin and its verbose log (a failure is a CompileError quoting the PTX)."""
        try:
            self._waiter.join()
            stdout, stderr = self._output
            if self._process.returncode != 0:
                raise CompileError("ptxas", _explain_ptxas(stderr or stdout, self._ptx))
            with open(self._cubin, "rb") as f:
                return f.read(), stderr + stdout
        finally:
            self._tmp.cleanup()

    def cancel(self) -> None:
        """Stop ptxas and wait for it to exit: nothing of it is left behind."""
        self._process.kill()
        self._waiter.join()
        self._tmp.cleanup()


def assemble(ptx: str, options: Options, ptxas: str) -> tuple[bytes, str]:
    """Assemble PTX with ptxas; return the cubin and ptxas' verbose log."""
    return Assembly(ptx, options, ptxas).result()


def _explain_ptxas(message: str, ptx: str) -> str:
    """Quote ptxas' message with the PTX lines it points at."""
    lines = ptx.splitlines()
    quoted = [message.strip()]
    for m in re.finditer(r"line (\d+)", message):
        n = int(m.group(1))
        if 0 < n <= len(lines):
            quoted.append(f"  PTX line {n}: {lines[n - 1].strip()}")
    return "\n".join(quoted)


def compile_module(module: ir.Module, name: str, key: str, options: Options,
                   check: Callable[[], None] | None = None) -> tuple[CompiledModule, str]:
    """Outline, lower and assemble a traced module (or a copy of its operation), consumed in place.

    ``check`` (the frontend's barrier-protocol check, which reads a module nothing here touches) runs in this
    thread while ptxas assembles the PTX in its own process, so that it costs a cold compile nothing while it
    is shorter than ptxas. Whatever it raises stops ptxas and propagates, ahead of any compile error (its
    report names the user's lines). Without ptxas it runs first, as a step of its own. Its wall and CPU time go
    into the timings (``check_s``, ``check_cpu_s``), and ``check_overlap_s`` says how much of it ptxas was
    running.

    Returns the compiled module and the lowered MLIR text (for dumps).
    """
    timings = {}
    ptxas = find_tool("ptxas", options.ptxas) if options.assemble_cubin else None
    if check is not None and ptxas is None:
        timings.update(_timed_check(check, None))
        check = None
    t0 = time.perf_counter()
    try:
        with module.context, ir.Location.unknown():
            kernels, plan = outline(module)
            locations = _launch_locations(module)
            t1 = time.perf_counter()
            # A host function that launched nothing (a task whose outputs are empty) has no PTX to make.
            ptx = lower_to_ptx(kernels, options) if plan.launches else ""
            lowered = str(kernels)
    except CompileError as error:
        failed = error
    else:
        failed = None
    if failed is not None:
        if check is not None:
            check()
        raise failed
    t2 = time.perf_counter()
    timings["outline_s"], timings["lower_s"] = t1 - t0, t2 - t1
    cubin, log = None, ""
    if ptxas is not None and not ptx:
        if check is not None:
            timings.update(_timed_check(check, None))
    elif ptxas is not None:
        assembly = Assembly(ptx, options, ptxas)
        if check is not None:
            try:
                timings.update(_timed_check(check, assembly))
            except BaseException:
                assembly.cancel()
                raise
        cubin, log = assembly.result()
        timings["ptxas_s"] = assembly.finished - assembly.started
    compiled = CompiledModule(key=key, name=name, plan=plan, ptx=ptx, cubin=cubin,
                              resources=parse_ptxas_log(log), ptxas_log=log, timings=timings)
    check_shared_memory(compiled, options, locations)
    return compiled, lowered


def _timed_check(check: Callable[[], None], assembly: Assembly | None) -> dict[str, float]:
    start, start_cpu = time.perf_counter(), time.process_time()
    check()
    end = time.perf_counter()
    ptxas_end = end if assembly is None or assembly.finished is None else assembly.finished
    return {"check_s": end - start, "check_cpu_s": time.process_time() - start_cpu,
            "check_overlap_s": 0.0 if assembly is None else max(0.0, min(end, ptxas_end) - start)}


def check_shared_memory(compiled: CompiledModule, options: Options, locations: dict) -> None:
    """Refuse a kernel whose shared memory (static, then the dynamic buffer at its 1024-byte alignment)
    exceeds what the target chip gives a block: a GPU would refuse it only when loading it."""
    limit = max_shared_memory(options.chip)
    if limit is None:
        return
    module_static = static_shared_memory(compiled.ptx)
    for launch in compiled.plan.launches:
        resources = compiled.resources.get(launch.kernel)
        static = resources.static_smem if resources is not None else module_static
        total = (-(-static // DYNAMIC_SHARED_ALIGNMENT) * DYNAMIC_SHARED_ALIGNMENT if static and launch.smem
                 else static) + launch.smem
        if total > limit:
            raise LaunchConfigError(
                f"kernel '{launch.kernel}' needs {total} bytes of shared memory per block ({static} static, "
                f"{launch.smem} dynamic), but {options.chip} allows at most {limit}", code="smem-too-large",
                hint="use smaller tiles or fewer pipeline stages", loc=locations.get(launch.kernel))

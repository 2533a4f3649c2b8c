"""The JIT hub: ``@mlir_func`` traces a host function once per call signature, keys and caches it, compiles it
(or hands it to the interpreter) and launches it. It is the one place that drives the layers below it
(``frontend`` traces, ``compiler`` lowers and caches, ``runtime`` loads and launches, ``interpreter`` runs
without a GPU); none of them imports it.

A call's signature is each positional argument's kind, dtype and shape, plus
the keyword arguments, which are compile-time constants (passed to the traced
function as plain Python values). A new signature traces again (or, in a new
process, finds its kernels on disk by the call's key); a known one goes
straight to the loaded kernels. This module does not import MLIR: tracing
(:mod:`nvdsl.frontend.tracer`) and compiling load it when they first run. Nor does
it import the disk cache, the call key or the CUDA driver (``cuda.bindings``, about
a third of ``import nvdsl``): the first call of a new signature loads them, where it needs them.

Callers that build the traced function themselves (the task layer) pass what the hub would otherwise read
off it: ``definition`` (the source line errors and the module point at) and ``keyed_by`` (an object whose
``__nvdsl_key__`` content keys the disk cache in place of the function's code).
"""

from __future__ import annotations

import functools
import inspect
import io
import os
import re
import sys
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .arguments import (HOST, DisjointOutputs, OnHostViews, arrays_device, check_writable, describe,
                        device_array_info, host_views, is_cpu_tensor, is_cuda_tensor, signature_key)
from .errors import (ArgumentError, InternalError, NoDeviceError, ProtocolCheckWarning, PtxasWarning, SourceLocation,
                     TraceError, UserError, user_location)
from .frontend.trace import Trace
from .options import GPU, INTERPRET, Options, resolve
from .signature import ArgSpec
from .target import DEFAULT_SM_COUNT

if TYPE_CHECKING:
    from .compiler.compiled import CompiledModule

@dataclass
class Compiled:
    """A compiled signature: the trace, the compiled module, and where its dumps went (if anywhere)."""

    trace: Trace
    module: CompiledModule
    dump_paths: dict[str, str]

    @property
    def ptx(self) -> str:
        return self.module.ptx

    @property
    def cubin(self) -> bytes | None:
        return self.module.cubin

    @property
    def resources(self):
        return self.module.resources

    def sass(self) -> str | None:
        """The SASS from nvdisasm, or None without a cubin or without nvdisasm."""
        from .compiler.toolchain import disassemble
        return disassemble(self.module.cubin) if self.module.cubin is not None else None


def _symbol(name: str) -> str:
    return re.sub(r"\W", "_", name) or "kernel"


class TracedFunction:
    """A host function traced into MLIR per call signature; call it like the Python function.

    ``f(*arrays_and_scalars, stream=None, **constants)`` runs the kernels, in the order the function
    launches them, on one stream. NumPy arrays are copied in and (when written) back out, and the
    call returns once the GPU is done; device arrays are used in place and the call returns once
    the work is queued on ``stream`` (the default stream when None).

    A signature is traced once per process. Its compiled kernels are also kept on disk, keyed by
    the function's code, the closure values and globals it reads (or ``keyed_by``'s content), the signature
    and constants, so a new process runs them without tracing (see :mod:`nvdsl.frontend.keying`).

    Without a GPU (or with ``Options(backend="interpret")``) the call runs in the CPU interpreter,
    on NumPy arrays only.
    """

    def __init__(self, fn, options: Options | None, *, definition: SourceLocation | None = None, keyed_by=None,
                 disjoint_outputs: bool = False):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.name = _symbol(fn.__name__)
        self._options_given = options
        self._options: Options | None = None
        self._signature = inspect.signature(fn)
        self._programs: dict = {}
        self._run_last = _no_program   # the run of the latest call's program, tried first
        self._traced: list[tuple[ArgSpec, ...]] = []   # signatures traced so far, to explain dtype changes
        self._definition = definition or SourceLocation(fn.__code__.co_filename, fn.__code__.co_firstlineno)
        self._keyed_by = keyed_by
        self._disjoint_outputs = disjoint_outputs    # refuse a call whose written arrays share memory with others

    @property
    def options(self) -> Options:
        """The options in force: the environment's, overridden by those given to the decorator."""
        if self._options is None:
            self._options = resolve(self._options_given)
        return self._options

    @property
    def backend(self) -> str:
        """Where calls run: ``"gpu"`` or ``"interpret"`` (``Options.backend``; by default the GPU when
        one is present, else the CPU interpreter)."""
        return choose_backend(self.options)

    def with_options(self, **changes) -> "TracedFunction":
        """The same function under options with ``changes`` applied (e.g. ``dump_dir=...``)."""
        return TracedFunction(self.fn, self.options.replace(**changes), definition=self._definition,
                              keyed_by=self._keyed_by, disjoint_outputs=self._disjoint_outputs)

    def __call__(self, *args, stream=None, **constants):
        try:
            handle = 0 if stream is None else _stream_handle(stream)
            if not self._run_last(args, _constants_key(constants) if constants else (), handle):
                self._run_new_signature(args, constants, handle)
        except UserError as e:
            if e.loc is None:
                raise e.with_location(user_location()) from None
            raise

    def _run_new_signature(self, args, constants, stream: int) -> None:
        _refuse_inside_a_trace(self.fn.__name__)
        constants_key = _constants_key(constants)
        try:
            key = (tuple(map(signature_key, args)), constants_key)
            program = self._programs.get(key)
        except TypeError:  # an unhashable constant: _describe explains
            key, program = None, None
        if program is None:
            if stream or any(map(is_cuda_tensor, args)):      # a call that a CUDA graph may be capturing
                from .runtime.launch import refuse_while_capturing
                refuse_while_capturing(args, stream, self.fn.__name__)
            program = self._load(args, constants, key, constants_key)
        if not program.run(args, constants_key, stream):
            raise InternalError(f"the program loaded for a call of '{self.name}' refused its arguments")
        self._run_last = program.run

    def trace(self, *args, **constants) -> Trace:
        """Trace for the signature of these arguments (no GPU needed)."""
        _refuse_inside_a_trace(self.fn.__name__)
        specs, _ = self._describe(args, constants)
        return self._trace(specs, constants)

    def compile(self, *args, **constants) -> Compiled:
        """Trace and compile for these arguments' signature (no GPU needed); returns PTX, cubin, resources."""
        _refuse_inside_a_trace(self.fn.__name__)
        specs, _ = self._describe(args, constants)
        return self._compile(specs, constants)

    def _describe(self, args, constants):
        try:
            self._signature.bind(*args, **constants)
        except TypeError as e:
            raise ArgumentError(f"{self.fn.__name__}{self._signature}: {e}", code="bad-call",
                                hint="pass the arrays by position and compile-time constants by name",
                                loc=user_location()) from None
        for name, value in constants.items():
            if _is_traced(value) or hasattr(value, "__array__") or device_array_info(value) is not None:
                raise ArgumentError(f"keyword argument '{name}' is an array, but keyword arguments are "
                                    "compile-time constants", code="bad-call",
                                    hint="pass arrays and runtime scalars positionally", loc=user_location())
            try:
                hash(value)
            except TypeError:
                raise ArgumentError(f"keyword argument '{name}'={value!r} is not hashable; compile-time "
                                    "constants key the compile cache", code="bad-constant",
                                    hint="use an int, float, str, bool, dtype or a tuple of them",
                                    loc=user_location()) from None
        loc = user_location()
        names = self._positional_names(len(args))
        described = [describe(a, names[i], loc) for i, a in enumerate(args)]
        return tuple(s for s, _ in described), tuple(where for _, where in described)

    def _positional_names(self, count: int) -> list[str]:
        names = []
        for p in self._signature.parameters.values():
            if p.kind == p.VAR_POSITIONAL:
                names += [f"{p.name}[{i}]" for i in range(count - len(names))]
            elif p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                names.append(p.name)
        return (names + [f"arg{i}" for i in range(len(names), count)])[:count]

    def _trace(self, specs: tuple[ArgSpec, ...], constants: dict) -> Trace:
        from .compiler.driver import verify  # imports MLIR
        from .frontend.tracer import trace_function  # imports MLIR: only when something is traced
        try:
            trace = trace_function(self.fn, self.name, self._definition, specs, constants, self.options, verify)
        except TraceError as e:
            raise self._explain_dtype_change(specs, e) from None
        self._traced.append(specs)
        return trace

    def _explain_dtype_change(self, specs, error: TraceError) -> UserError:
        """A dtype clash in a new signature whose arguments changed dtype since an earlier trace: name them."""
        if error.code != "type-mismatch":
            return error
        for earlier in self._traced:
            changed = [(new, old) for new, old in zip(specs, earlier)
                       if new.kind == old.kind and new.dtype != old.dtype and new.shape == old.shape]
            if changed and len(earlier) == len(specs):
                described = "; ".join(
                    f"'{new.name}' is {_given(new)} here but was {old.dtype.name} when '{self.fn.__name__}' was "
                    f"traced before" for new, old in changed)
                return ArgumentError(f"{described}, and the function does not trace with the new dtype: "
                                     f"{error.message}", code="dtype-mismatch",
                                     hint=f"pass {_as_given(changed[0][1])} as before, or convert inside the "
                                          f"kernel with .to(...)", loc=error.loc)
        return error

    def _interpreted_trace(self, specs, constants) -> Trace:
        """The trace the interpreter runs: parsed from the disk cache, where an earlier process traced the same
        call (its protocol check's verdict kept with it), else traced, checked and kept there."""
        from .compiler.cache import cache_for, call_toolchain
        from .frontend.keying import call_key
        options = self.options
        cache = cache_for(options)
        call = call_key(self.fn, specs, constants, options, call_toolchain(options) + ";interpreted",
                        keyed_by=self._keyed_by)
        hit = cache.get_trace(call) if call is not None else None
        if hit is not None:
            from mlir import ir  # the interpreter imports it anyway
            context = ir.Context()
            module = ir.Module.parse(hit["module"], context)
            trace = Trace(module, module.operation.get_asm(), module.operation.get_asm(enable_debug_info=True), specs,
                          hit["written"])
            if options.protocol_check:
                self._warn_unchecked(hit["undecided"] if hit["checked"] else self._check_protocol(trace),
                                     stacklevel=4)
            return trace
        trace = self._trace(specs, constants)
        undecided = self._check_protocol(trace) if options.protocol_check else None
        self._warn_unchecked(undecided, stacklevel=4)
        if call is not None:
            bytecode = io.BytesIO()
            trace.module.operation.write_bytecode(bytecode)     # the text of a module with locations does not parse
            cache.put_trace(call, bytecode.getvalue(), trace.written, options.protocol_check, undecided)
        return trace

    def _check_protocol(self, trace: Trace) -> str | None:
        """Check the barrier protocol of a trace's kernels: a violation raises ProtocolError; returns the reason
        the check could not decide, if it could not."""
        from .interpreter.protocol import check_protocol  # imports MLIR, as tracing did
        return check_protocol(trace.module, trace.specs)

    def _warn_unchecked(self, undecided: str | None, stacklevel: int) -> None:
        if undecided is not None:
            warnings.warn(f"nvdsl could not check the barrier protocol of '{self.fn.__name__}': {undecided}; "
                          "run it in the interpreter (nvdsl.fuzz) to check it", ProtocolCheckWarning,
                          stacklevel=stacklevel + 1)

    def _compile(self, specs, constants) -> Compiled:
        from .compiler.cache import cache_for, cache_key
        from .compiler.driver import compile_module  # imports MLIR
        options = self.options
        trace = self._trace(specs, constants)
        undecided = []
        check = (lambda: undecided.append(self._check_protocol(trace))) if options.protocol_check else None
        key = cache_key(trace.mlir, options)
        cache = cache_for(options)
        if options.dump_dir is None:
            hit = cache.get(key, trace.mlir)
            if hit is not None:
                if check is not None:
                    check()
                    self._warn_unchecked(undecided[0], stacklevel=3)
                _warn_ptxas(hit, self.name)
                return Compiled(trace, hit, {})
        # The check reads trace.module while ptxas assembles (compile_module runs it then): the compile outlines
        # a copy, so that the module the check reads is the traced one, whatever the compile has done to its own.
        with trace.module.context:
            copy = trace.module.operation.clone()
        try:
            compiled, lowered = compile_module(copy, self.name, key, options, check)
        finally:
            if undecided:
                self._warn_unchecked(undecided[0], stacklevel=3)
        cache.put(compiled, trace.mlir)
        _warn_ptxas(compiled, self.name)
        paths = _dump(options.dump_dir, trace, compiled, lowered) if options.dump_dir else {}
        return Compiled(trace, compiled, paths)

    def _compiled_for_call(self, specs, constants) -> tuple[CompiledModule, frozenset[int]]:
        """The compiled module of a call, and the arguments its kernels write: from the disk cache by the
        call's key when it has one (no tracing, no MLIR), else traced and compiled."""
        from .compiler.cache import cache_for, call_toolchain
        from .frontend.keying import call_key
        options = self.options
        cache = cache_for(options)
        call = None
        if options.dump_dir is None:  # a dump needs the trace
            call = call_key(self.fn, specs, constants, options, call_toolchain(options), keyed_by=self._keyed_by)
            hit = cache.get_call(call) if call is not None else None
            if hit is not None:
                _warn_ptxas(hit[0], self.name)
                return hit
        compiled = self._compile(specs, constants)
        if call is not None:
            cache.put_call(call, compiled.module, compiled.trace.written, options)
        return compiled.module, compiled.trace.written

    def _load(self, args, constants, key, constants_key):
        specs, locations = self._describe(args, constants)
        options = self.options
        backend = choose_backend(options, args)
        if backend == INTERPRET:
            from .interpreter.call import InterpretedProgram  # imports MLIR
            # A dump asks for the PTX and SASS too: compile (no GPU needed) and interpret the same trace.
            trace = self._compile(specs, constants).trace if options.dump_dir else self._interpreted_trace(specs,
                                                                                                     constants)
            written = trace.written
        else:
            module, written = self._compiled_for_call(specs, constants)
        for i in sorted(written):  # before looking for a GPU: a read-only output is wrong on any machine
            if locations[i] is not None:
                check_writable(args[i] if locations[i] == HOST else device_array_info(args[i]), specs[i].name,
                               user_location())
        disjoint = DisjointOutputs(specs, locations, written) if self._disjoint_outputs else None
        if backend == INTERPRET:
            views = host_views(args)        # CPU torch tensors: the NumPy arrays sharing their memory
            program = InterpretedProgram(trace.module, specs, locations, written, options.seed, views, constants_key,
                                         disjoint)
            if any(map(is_cpu_tensor, args)):
                program = OnHostViews(program, args)
        else:
            from .runtime.device import get_device
            from .runtime.launch import LoadedProgram, load_module
            device = get_device(arrays_device(args, options.device))
            loaded = load_module(device, module.cubin, module.ptx, options.chip) if module.plan.launches else None
            program = LoadedProgram(device, module.plan, loaded, specs, locations, written, self.name, args,
                                    constants_key, disjoint)
        if key is not None:
            self._programs[key] = program
        return program


def _no_program(args, constants_key, stream) -> bool:
    """The run of no program: every call's signature is new."""
    return False


def _constants_key(constants: dict) -> tuple:
    """Compile-time constants as a key that tells 1, 1.0 and True apart (computed on every call that passes them:
    a loop rather than a sort of generated pairs, 0.7 -> 0.3 us for one constant)."""
    key = []
    for name in sorted(constants) if len(constants) > 1 else constants:
        key.append((name, _typed(constants[name])))
    return tuple(key)


def _typed(value):
    if type(value) in (tuple, list):
        return type(value), tuple(_typed(v) for v in value)
    return type(value), value


def _is_traced(value) -> bool:
    values = sys.modules.get("nvdsl.frontend.values")  # not loaded: nothing was ever traced
    return values is not None and isinstance(value, values.Value)


def _refuse_inside_a_trace(name: str) -> None:
    context = sys.modules.get("nvdsl.frontend.context")
    trace = context._CURRENT.get() if context is not None else None
    if trace is not None:
        raise TraceError(f"@mlir_func '{name}' is called while '{trace.name}' is being traced; an @mlir_func "
                         "is called from Python, not from another one", code="nested-mlir-func",
                         hint=f"to trace its kernels into '{trace.name}', call the plain function it wraps: "
                              f"{name}.fn(...), with the same arrays", loc=user_location())


_NOTICE = ("nvdsl: no GPU found, so calls run in the CPU interpreter (slow; it reports races, deadlocks and "
           "barrier-protocol errors). Choose with nvdsl.Options(backend='gpu'|'interpret') or "
           "NVDSL_BACKEND=gpu|interpret.")
_noticed = False


def choose_backend(options: Options, args=()) -> str:
    """``options.backend``, or where the call's arguments live: the interpreter for CPU torch tensors, else the GPU
    when the driver sees one and else the interpreter, saying so once."""
    global _noticed
    if options.backend is not None:
        return options.backend
    on_cpu = [i for i, a in enumerate(args) if is_cpu_tensor(a)]
    if on_cpu:
        on_gpu = [i for i, a in enumerate(args) if is_cuda_tensor(a)]
        if on_gpu:
            raise ArgumentError(f"argument {on_cpu[0]} is a PyTorch tensor on the CPU and argument {on_gpu[0]} one on "
                                "the GPU: a call's arrays live on one device", code="bad-device",
                                hint="move them to one device (t.cuda() or t.cpu())")
        return INTERPRET
    from .runtime.device import device_count
    if device_count() > 0:
        return GPU
    if not _noticed:
        _noticed = True
        print(_NOTICE, file=sys.stderr)
    return INTERPRET


def sm_count(options: Options | None = None) -> int:
    """The number of SMs of the device calls run on (``options.device``), or :data:`~nvdsl.target.DEFAULT_SM_COUNT`
    without a GPU. Known once per options and ``NVDSL_DEVICE`` (resolving the options reads the whole environment:
    36 us a call on an H200 machine, where a library call asks per call)."""
    key = (options, os.environ.get("NVDSL_DEVICE"))
    found = _SM_COUNTS.get(key)
    if found is None:
        from .runtime.device import get_device
        try:
            found = get_device(resolve(options).device).info.multiprocessors
        except NoDeviceError:
            found = DEFAULT_SM_COUNT
        _SM_COUNTS[key] = found
    return found


_SM_COUNTS: dict = {}


def device_name(options: Options | None = None) -> str | None:
    """The name of the GPU calls run on (``options.device``), or None where they run in the interpreter. Known once
    per options, ``NVDSL_DEVICE`` and ``NVDSL_BACKEND`` (as :func:`sm_count`)."""
    key = (options, os.environ.get("NVDSL_DEVICE"), os.environ.get("NVDSL_BACKEND"))
    if key not in _DEVICE_NAMES:
        resolved = resolve(options)
        name = None
        if choose_backend(resolved) == GPU:
            from .runtime.device import get_device
            name = get_device(resolved.device).info.name
        _DEVICE_NAMES[key] = name
    return _DEVICE_NAMES[key]


_DEVICE_NAMES: dict = {}


def device_time_ms(call, args=(), *, reps: int = 20, warmup: int = 3, options: Options | None = None) -> float:
    """Milliseconds per ``call()`` on the GPU: ``warmup`` calls, then ``reps`` back to back between two CUDA events
    on the stream a call on ``args`` launches on (torch's current stream for its tensors)."""
    from .runtime.timing import elapsed_ms
    for _ in range(warmup):
        call()
    return elapsed_ms(call, args, reps, resolve(options).device)


def _given(spec: ArgSpec) -> str:
    python = {"int32": "int32 (a Python int)", "float32": "float32 (a Python float)", "bool": "bool (a Python bool)"}
    return python.get(spec.dtype.name, spec.dtype.name) if spec.kind != "array" else f"a {spec.dtype.name} array"


def _as_given(spec: ArgSpec) -> str:
    if spec.kind == "array":
        return f"a {spec.dtype.name} array"
    return {"float32": "a Python float (e.g. 2.0)", "int32": "a Python int"}.get(
        spec.dtype.name, f"np.{spec.dtype.name}(...)")


def _stream_handle(stream) -> int:
    """The raw CUstream handle of a call's ``stream=`` (see ``runtime.launch.stream_handle``)."""
    if type(stream) is int:
        return stream
    from .runtime.launch import stream_handle
    return stream_handle(stream)


def _warn_ptxas(compiled: CompiledModule, function: str) -> None:
    from .compiler.compiled import ptxas_warnings
    for kernel, message in ptxas_warnings(compiled.ptxas_log, list(compiled.resources)):
        warnings.warn(PtxasWarning(f"ptxas on kernel '{kernel}' of '{function}': {message}"), stacklevel=4)


def _dump(directory: str, trace: Trace, compiled: CompiledModule, lowered: str) -> dict[str, str]:
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise UserError(f"dump_dir={directory!r} cannot be created: {e.strerror}", code="bad-option",
                        hint="point NVDSL_DUMP_DIR (or Options(dump_dir=...)) at a writable directory") from None
    stem = os.path.join(directory, f"{compiled.name}.{compiled.key[:12]}")
    files = {"traced": (".traced.mlir", trace.mlir_with_locations), "lowered": (".lowered.mlir", lowered),
             "ptx": (".ptx", compiled.ptx)}
    if compiled.cubin is not None:
        files["cubin"] = (".cubin", compiled.cubin)
        files["ptxas"] = (".ptxas.txt", compiled.ptxas_log)
        from .compiler.toolchain import disassemble
        sass = disassemble(compiled.cubin)
        if sass is not None:
            files["sass"] = (".sass", sass)
    paths = {}
    for kind, (suffix, content) in files.items():
        path = stem + suffix
        with open(path, "wb" if isinstance(content, bytes) else "w") as f:
            f.write(content)
        paths[kind] = path
    return paths


def mlir_func(fn=None, *, options: Options | None = None):
    """Decorate a host function whose body launches ``@gpu_launch`` kernels.

    Positional arguments are arrays (NumPy or device arrays) and scalars;
    keyword arguments are compile-time constants. The function is traced
    once per signature and compiled through MLIR to PTX and a cubin for the
    options' chip (``sm_90a`` by default), with a compile cache in memory and
    on disk.

    Usage: ``@nvdsl.mlir_func`` or ``@nvdsl.mlir_func(options=nvdsl.Options(opt_level=2))``.
    """
    if fn is None:
        return lambda f: TracedFunction(f, options)
    return TracedFunction(fn, options)

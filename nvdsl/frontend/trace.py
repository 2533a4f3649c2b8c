"""``@mlir_func``: trace a host function once per call signature, compile it, run it.

A call's signature is each positional argument's kind, dtype and shape, plus
the keyword arguments, which are compile-time constants (passed to the traced
function as plain Python values). A new signature traces again; a known one
goes straight to the loaded kernels.
"""

from __future__ import annotations

import functools
import inspect
import os
import re
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func

from ..compiler.cache import cache_for, cache_key
from ..compiler.driver import CompiledModule, compile_module, disassemble, verify
from ..errors import ArgumentError, SourceLocation, TraceError, UserError, user_location
from ..options import Options, resolve
from ..runtime.arrays import describe, device_array_info, signature_key
from ..runtime.device import get_device
from ..runtime.launch import LoadedProgram, load_module, stream_handle
from ..signature import ARRAY, ArgSpec
from .context import TraceContext, activate, mlir_location
from .memory import GLOBAL, Array, memref_type
from .values import Value


@dataclass(frozen=True)
class Trace:
    """The MLIR of one traced signature.

    Attributes:
        mlir: the module's text without source locations (what the cache key hashes).
        mlir_with_locations: the same with every op's Python source location.
        specs: the positional arguments as traced.
        written: indices of the arguments some kernel writes.
    """

    module: ir.Module
    mlir: str
    mlir_with_locations: str
    specs: tuple[ArgSpec, ...]
    written: frozenset[int]

    def __str__(self) -> str:
        return self.mlir


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
        return disassemble(self.module.cubin) if self.module.cubin is not None else None


def _symbol(name: str) -> str:
    return re.sub(r"\W", "_", name) or "kernel"


class TracedFunction:
    """A host function traced into MLIR per call signature; call it like the Python function.

    ``f(*arrays_and_scalars, stream=None, **constants)`` runs the kernels. NumPy
    arrays are copied in and (when written) back out, and the call returns once
    the GPU is done; device arrays are used in place and the call returns once
    the work is queued on ``stream`` (the default stream when None).
    """

    def __init__(self, fn, options: Options | None):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.name = _symbol(fn.__name__)
        self._options_given = options
        self._options: Options | None = None
        self._signature = inspect.signature(fn)
        self._programs: dict = {}
        self._definition = SourceLocation(fn.__code__.co_filename, fn.__code__.co_firstlineno)

    @property
    def options(self) -> Options:
        """The options in force: the environment's, overridden by those given to the decorator."""
        if self._options is None:
            self._options = resolve(self._options_given)
        return self._options

    def with_options(self, **changes) -> "TracedFunction":
        """The same function under options with ``changes`` applied (e.g. ``dump_dir=...``)."""
        return TracedFunction(self.fn, self.options.replace(**changes))

    def __call__(self, *args, stream=None, **constants):
        try:
            key = (tuple(map(signature_key, args)), tuple(sorted(constants.items())) if constants else ())
            program = self._programs.get(key)
        except TypeError:  # an unhashable constant
            key, program = None, None
        try:
            if program is None:
                program = self._load(args, constants, key)
            program(args, stream_handle(stream) if stream is not None else 0)
        except UserError as e:
            if e.loc is None:
                raise e.with_location(user_location()) from None
            raise

    def trace(self, *args, **constants) -> Trace:
        """Trace for the signature of these arguments (no GPU needed)."""
        specs, _ = self._describe(args, constants)
        return self._trace(specs, constants)

    def compile(self, *args, **constants) -> Compiled:
        """Trace and compile for these arguments' signature (no GPU needed); returns PTX, cubin, resources."""
        specs, _ = self._describe(args, constants)
        return self._compile(specs, constants)

    def _describe(self, args, constants):
        try:
            self._signature.bind(*args, **constants)
        except TypeError as e:
            raise ArgumentError(f"{self.fn.__name__}{self._signature}: {e}", code="bad-call",
                                loc=user_location()) from None
        for name, value in constants.items():
            if isinstance(value, Value) or hasattr(value, "__array__") or device_array_info(value) is not None:
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
        context = ir.Context()
        with context, mlir_location(self._definition):
            module = ir.Module.create()
            module.operation.attributes["gpu.container_module"] = ir.UnitAttr.get()
            types = [memref_type(s.dtype, s.shape, GLOBAL) if s.kind == ARRAY else s.dtype.mlir_type()
                     for s in specs]
            with ir.InsertionPoint(module.body):
                function = func.FuncOp(self.name, ir.FunctionType.get(types, []))
            entry = function.add_entry_block()
            trace = TraceContext(self.name, context, module, self.options)
            wrapped = []
            for i, (spec, arg) in enumerate(zip(specs, entry.arguments)):
                if spec.kind == ARRAY:
                    wrapped.append(Array(arg, spec.dtype, spec.shape, name=spec.name, space=GLOBAL,
                                         on_write=functools.partial(trace.written_args.add, i)))
                else:
                    wrapped.append(Value(arg, spec.dtype))
            with activate(trace), ir.InsertionPoint(entry):
                try:
                    result = self.fn(*wrapped, **constants)
                except BaseException:
                    trace.close_open_loops()
                    raise
                if trace.deferred_errors:
                    raise trace.deferred_errors[0]
                if result is not None:
                    raise TraceError(f"@mlir_func '{self.fn.__name__}' returned a value", code="host-returns",
                                     hint="kernels write their results into array arguments",
                                     loc=self._definition)
                func.ReturnOp([])
            verify(module, "verifying the traced MLIR")
            return Trace(module, module.operation.get_asm(), module.operation.get_asm(enable_debug_info=True),
                         specs, frozenset(trace.written_args))

    def _compile(self, specs, constants) -> Compiled:
        options = self.options
        trace = self._trace(specs, constants)
        key = cache_key(trace.mlir, options)
        cache = cache_for(options)
        if options.dump_dir is None:
            hit = cache.get(key, trace.mlir)
            if hit is not None:
                return Compiled(trace, hit, {})
        compiled, lowered = compile_module(trace.module, self.name, key, options)
        cache.put(compiled, trace.mlir)
        paths = _dump(options.dump_dir, trace, compiled, lowered) if options.dump_dir else {}
        return Compiled(trace, compiled, paths)

    def _load(self, args, constants, key) -> LoadedProgram:
        specs, locations = self._describe(args, constants)
        compiled = self._compile(specs, constants)
        options = self.options
        device = get_device(options.device)
        module = load_module(device, compiled.cubin, compiled.ptx, options.chip)
        program = LoadedProgram(device, compiled.module.plan, module, specs, locations,
                                compiled.trace.written, self.name, args)
        if key is not None:
            self._programs[key] = program
        return program


def _dump(directory: str, trace: Trace, compiled: CompiledModule, lowered: str) -> dict[str, str]:
    os.makedirs(directory, exist_ok=True)
    stem = os.path.join(directory, f"{compiled.name}.{compiled.key[:12]}")
    files = {"traced": (".traced.mlir", trace.mlir_with_locations), "lowered": (".lowered.mlir", lowered),
             "ptx": (".ptx", compiled.ptx)}
    if compiled.cubin is not None:
        files["cubin"] = (".cubin", compiled.cubin)
        files["ptxas"] = (".ptxas.txt", compiled.ptxas_log)
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

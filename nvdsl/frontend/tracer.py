"""Running a host function to build its MLIR module; the JIT hub (:mod:`nvdsl.jit`) loads this (and MLIR)
only when something is traced.

After the function ran, the module is scanned for the arguments its kernels
write, whatever wrote them (array stores, atomics, raw ``mlir.dialects`` ops):
those are the NumPy arguments copied back after a call.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from mlir import ir
from mlir.dialects import func

from ..errors import TraceError
from ..signature import ARRAY, ArgSpec
from ..target import SCRATCH_ATTR, TENSORMAP_ATTR
from .context import TraceContext, activate, mlir_location
from .memory import GLOBAL, Array, memref_type
from .trace import Trace
from .values import Value


def trace_function(fn, name: str, definition, specs: tuple[ArgSpec, ...], constants: dict, options,
                   verify: Callable[[ir.Module, str], None]) -> Trace:
    """Call ``fn`` on traced arguments of these specs and return the module it built, checked by ``verify``
    (the compiler's verifier, given by the hub: the frontend does not import the compiler)."""
    context = ir.Context()
    trace = None
    try:
        with context, mlir_location(definition):
            module = ir.Module.create()
            module.operation.attributes["gpu.container_module"] = ir.UnitAttr.get()
            types = [memref_type(s.dtype, s.shape, GLOBAL, s.strides) if s.kind == ARRAY else s.dtype.mlir_type()
                     for s in specs]
            with ir.InsertionPoint(module.body):
                function = func.FuncOp(name, ir.FunctionType.get(types, []))
            entry = function.add_entry_block()
            trace = TraceContext(name, context, module, options, function=function, entry=entry)
            wrapped = []
            for spec, arg in zip(specs, entry.arguments):
                if spec.kind == ARRAY:
                    wrapped.append(Array(arg, spec.dtype, spec.shape, name=spec.name, space=GLOBAL, scope=trace,
                                         unaligned=spec.unaligned))
                else:
                    wrapped.append(Value(arg, spec.dtype, scope=trace, origin=f"the scalar argument '{spec.name}'"))
            with activate(trace), ir.InsertionPoint(entry):
                try:
                    result = fn(*wrapped, **constants)
                except BaseException:
                    trace.close_open_loops()
                    raise
                if trace.deferred_errors:
                    raise trace.deferred_errors[0]
                if result is not None:
                    raise TraceError(f"@mlir_func '{fn.__name__}' returned a value", code="host-returns",
                                     hint="kernels write their results into array arguments", loc=definition)
                func.ReturnOp([])
            if trace.scratch:
                function.operation.attributes[SCRATCH_ATTR] = ir.StringAttr.get(
                    json.dumps([s.to_json() for s in trace.scratch]))
            verify(module, "verifying the traced MLIR")
            written = {i for i in written_arguments(entry) | trace.written_args if i < len(specs)}  # not scratch
            return Trace(module, module.operation.get_asm(), module.operation.get_asm(enable_debug_info=True),
                         specs, frozenset(written))
    finally:
        if trace is not None:
            trace.finished = True


# Operations that only read the memory of a memref operand, and view-like ones whose result is the
# same memory (followed). Any other use of an argument's memory counts as a write: a store, an atomic,
# a raw op of the user's, or its address taken.
_READS = frozenset({"memref.load", "vector.load", "vector.transfer_read", "vector.maskedload", "vector.gather",
                    "memref.dim", "memref.rank"})
_VIEWS = frozenset({"memref.subview", "memref.cast", "memref.reinterpret_cast", "memref.collapse_shape",
                    "memref.expand_shape", "memref.view", "memref.memory_space_cast", "memref.transpose"})


def written_arguments(entry: ir.Block) -> set[int]:
    """Indices of the function's memref arguments that some operation may write."""
    return {argument.arg_number for argument in entry.arguments
            if isinstance(argument.type, ir.MemRefType) and _may_write(argument)}


def _may_write(value: ir.Value) -> bool:
    pending = [value]
    while pending:
        for use in pending.pop().uses:
            op = use.owner
            name = op.name
            if name in _READS:
                continue
            if name in _VIEWS and use.operand_number == 0:
                pending.extend(op.results)
                continue
            if name == "builtin.unrealized_conversion_cast" and TENSORMAP_ATTR in op.attributes:
                continue  # a TMA descriptor in host code: TMA.store records its writes itself
            return True
    return False

"""The state of one trace: which MLIR module is being built and where.

A :class:`TraceContext` exists while ``@mlir_func`` traces its function; the
kernel body, values and control-flow helpers find it through :func:`current`
(a ``contextvars.ContextVar``, so nested or concurrent traces never share it).
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager

from mlir import ir

from ..errors import SourceLocation, TraceError, UserError, user_location

_CURRENT: contextvars.ContextVar["TraceContext | None"] = contextvars.ContextVar(
    "nvdsl_trace", default=None)
# The line of a program nvdsl traces on the user's behalf (a task's body) that what is traced now is for.
_PROGRAM_LINE: contextvars.ContextVar[SourceLocation | None] = contextvars.ContextVar(
    "nvdsl_program_line", default=None)


class TraceContext:
    """One function being traced into one MLIR module."""

    def __init__(self, name: str, mlir_context: ir.Context, module: ir.Module, options=None, *,
                 function=None, entry: ir.Block | None = None):
        self.name = name
        self.options = options      # the Options the function is compiled under (debug checks read it)
        self.mlir_context = mlir_context
        self.module = module
        self.function = function    # the host function's func.func, and its entry block
        self.entry = entry
        self.kernel = None          # the LaunchContext of the kernel body being traced
        self.finished = False       # set when tracing ends: what it made can no longer be used
        self._names: set[str] = set()
        self.deferred_errors: list[TraceError] = []
        self.written_args: set[int] = set()   # written in ways the module does not show (TMA stores)
        self.scratch: list = []               # ScratchSpecs of nvdsl.empty / nvdsl.zeros, in order
        self.open_loops: list = []  # weak references to the for_range loops being traced, innermost last

    def close_open_loops(self, depth: int = 0) -> None:
        """Close the ``for_range`` loops opened beyond the first ``depth``, innermost first (when user code
        raised inside them), so that each leaves its MLIR insertion point in order."""
        while len(self.open_loops) > depth:
            loop = self.open_loops[-1]()
            if loop is None:
                self.open_loops.pop()
            else:
                loop.close()

    def unique_name(self, stem: str) -> str:
        name, n = stem, 1
        while name in self._names:
            n += 1
            name = f"{stem}_{n}"
        self._names.add(name)
        return name

    def defer(self, error: TraceError) -> None:
        """Keep an error raised where Python would swallow it (a generator's close)."""
        self.deferred_errors.append(error)


def current(what: str) -> TraceContext:
    """The active trace, or a clear error naming ``what`` needed one."""
    trace = _CURRENT.get()
    if trace is None:
        raise TraceError(f"{what} can only be used while an @nvdsl.mlir_func is being traced",
                         code="outside-trace",
                         hint="call it from inside a function decorated with @nvdsl.mlir_func",
                         loc=user_location())
    return trace


def current_kernel(what: str):
    """The kernel body being traced, or a clear error naming ``what`` needed one."""
    trace = current(what)
    if trace.kernel is None:
        raise TraceError(f"{what} can only be used inside a @nvdsl.gpu_launch kernel body",
                         code="outside-kernel",
                         hint="host code only launches kernels; do the work inside the kernel body",
                         loc=user_location())
    return trace.kernel


def current_scope():
    """Where a value made now belongs: the kernel body being traced, else the host function's trace
    (None outside any trace)."""
    trace = _CURRENT.get()
    if trace is None:
        return None
    return trace.kernel if trace.kernel is not None else trace


def check_scope(scope, thing) -> None:
    """Refuse to use ``thing`` (a traced value, array or barrier made in ``scope``) where it does not
    exist: in another trace (its MLIR is gone), another kernel, or host code after its kernel."""
    trace = _CURRENT.get()
    if trace is not None and (scope is trace or scope is trace.kernel):
        return
    raise scope_error(scope, trace, thing)


def scope_error(scope, trace, thing) -> TraceError:
    made_trace = getattr(scope, "trace", scope)
    kernel = getattr(scope, "name", None) if made_trace is not scope else None
    made = f"in kernel '{kernel}' of '{made_trace.name}'" if kernel else \
        f"while tracing '{made_trace.name}'" if made_trace is not None else "outside any trace"
    if trace is None or made_trace is not trace:
        where = "outside any trace" if trace is None else f"while tracing '{trace.name}'"
        if trace is not None and trace.name == getattr(made_trace, "name", None):
            where += " again (another signature or call)"
        return TraceError(f"{thing!r} was made {made} and is used {where}; a traced value lives only in "
                          "the trace that made it", code="stale-value",
                          hint="recompute it in this trace; keep Python numbers, not traced values, across "
                               "traces", loc=user_location())
    here = f"in kernel '{trace.kernel.name}'" if trace.kernel is not None else "in host code"
    return TraceError(f"{thing!r} was made {made} and is used {here}; each kernel has values of its own",
                      code="cross-kernel-value",
                      hint="kernels share only the host function's arrays and scalars: pass data between "
                           "kernels through an array, or recompute the value in this kernel", loc=user_location())


@contextmanager
def activate(trace: TraceContext):
    token = _CURRENT.set(trace)
    try:
        yield trace
    finally:
        _CURRENT.reset(token)


def mlir_location(loc: SourceLocation | None) -> ir.Location:
    if loc is None:
        return ir.Location.unknown()
    return ir.Location.file(loc.filename, loc.line, 0)


@contextmanager
def at_user_line():
    """Emit the ops created in this block with the user's current Python line (or the line of the program
    they are generated for, inside :func:`program_line`)."""
    with mlir_location(_PROGRAM_LINE.get() or user_location()):
        yield


@contextmanager
def program_line(loc: SourceLocation | None):
    """Trace what runs inside for line ``loc`` of a program nvdsl generates code from (a task's body): the ops
    made get it as their location, and a user error raised inside names it beside the user's call."""
    if loc is None:
        yield
        return
    token = _PROGRAM_LINE.set(loc)
    try:
        yield
    except UserError as error:
        raise error.from_program_line(loc) from None
    finally:
        _PROGRAM_LINE.reset(token)

"""Any nvdsl kernel as a ``torch.library.custom_op``: :func:`custom_op`.

A kernel writes its outputs in place, so its op returns nothing and mutates them: ``mutates_args`` names those
arguments. A task kernel (``nt.build(...)``) declares what it writes (its task's ``writes=``/``reduces=``), so its
op mutates exactly those. An ``@mlir_func`` is traced per signature, so what it writes is known only once arguments
are given: say it with ``mutates_args=``; the op checks it at each new signature (from the trace, once per
signature and process) and refuses a kernel that writes an argument not named, which would make torch.compile
reorder or drop that write. The fake implementation does nothing: a mutating op without outputs has no shapes to
give.
"""

from __future__ import annotations

import contextlib
import inspect
import os

import torch

from ..arguments import signature_key
from ..errors import ArgumentError, UserError, user_location
from ..jit import TracedFunction
from ..tasks import TaskKernel

_SCALAR_TYPES = (float, int, bool)
_TORCH_DIR = os.path.dirname(torch.__file__)


def user_line():
    """The line of the user's op call: the innermost frame that is neither nvdsl's nor torch's dispatch."""
    return user_location((_TORCH_DIR,))


@contextlib.contextmanager
def at_user_line():
    """Errors raised inside an op point at the user's call, not at torch's dispatch frames that called nvdsl."""
    try:
        yield
    except UserError as e:
        if e.loc is None or e.loc.filename.startswith(_TORCH_DIR):
            raise e.with_location(user_line()) from None
        raise


def _parameters(kernel) -> tuple[str, ...]:
    if isinstance(kernel, TaskKernel):
        return kernel.entry.parameters
    return tuple(p.name for p in inspect.signature(kernel.fn).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _written_by_task(kernel: TaskKernel) -> tuple[str, ...]:
    return tuple(name for name, level in kernel.entry.privileges.items() if level in ("write", "reduce"))


def _annotation(kernel, name: str, types: dict):
    """A parameter's type in the op's schema: ``types``' entry, else the kernel function's own annotation when it is
    a Python scalar type, else a tensor."""
    if name in types:
        return types[name]
    fn = kernel.entry.fn if isinstance(kernel, TaskKernel) else kernel.fn
    given = inspect.signature(fn).parameters[name].annotation
    return given if given in _SCALAR_TYPES else torch.Tensor


def custom_op(kernel=None, *, name: str, mutates_args=None, types: dict | None = None,
              constants: dict | None = None):
    """Register an ``@nvdsl.mlir_func`` or a task kernel (``nt.build(...)``) as the torch op ``name``
    (``"namespace::op"``) and return it (``torch.library.CustomOpDef``: call it, or ``torch.ops.namespace.op``).

    Positional parameters are tensors unless ``types`` (``{"alpha": float}``) or the kernel's annotations say
    ``float``, ``int`` or ``bool``; ``constants`` are the compile-time keyword arguments every call passes.
    ``mutates_args``: the parameters the kernel writes; a task kernel's default is what its task writes, an
    ``@mlir_func`` must say (checked against its trace). Usable as a decorator:
    ``@nvdsl.torch.custom_op(name="mylib::axpy", mutates_args=("y",))`` above ``@nvdsl.mlir_func``.
    The op runs on CUDA tensors (the GPU back end) and on CPU tensors (the interpreter).
    """
    if kernel is None:
        return lambda k: custom_op(k, name=name, mutates_args=mutates_args, types=types, constants=constants)
    loc = user_location()
    if not isinstance(kernel, (TracedFunction, TaskKernel)):
        raise ArgumentError(f"nvdsl.torch.custom_op takes an @nvdsl.mlir_func or a task kernel (nt.build(...)), "
                            f"not {kernel!r}", code="bad-argument", hint="decorate the host function with "
                            "@nvdsl.mlir_func first (it goes below @nvdsl.torch.custom_op)", loc=loc)
    parameters = _parameters(kernel)
    types, constants = dict(types or {}), dict(constants or {})
    unknown = sorted((set(types) | set(mutates_args or ())) - set(parameters))
    if unknown:
        raise ArgumentError(f"{unknown} are not parameters of the kernel ({', '.join(parameters)})",
                            code="bad-argument",
                            hint="name the kernel's positional parameters in mutates_args and types", loc=loc)
    if mutates_args is None:
        if not isinstance(kernel, TaskKernel):
            raise ArgumentError(f"custom op '{name}': say which arguments the @mlir_func writes", code="mutates-args",
                                hint="pass mutates_args=(...) with the names of the arrays its kernels store to "
                                     "(() for none)", loc=loc)
        mutates_args = _written_by_task(kernel)
    mutates_args = tuple(mutates_args)
    checked: set = set()

    def run(*args):
        with at_user_line():
            if isinstance(kernel, TracedFunction):
                key = tuple(map(signature_key, args))
                if key not in checked:
                    _check_writes(kernel, name, parameters, mutates_args, args, constants)
                    checked.add(key)
            kernel(*args, **constants)

    annotations = {p: _annotation(kernel, p, types) for p in parameters}
    run.__signature__ = inspect.Signature(
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotations[p]) for p in parameters],
        return_annotation=None)
    run.__name__ = name.split("::")[-1]
    op = torch.library.custom_op(name, mutates_args=mutates_args)(run)
    op.register_fake(_nothing)
    return op


def _nothing(*args):
    """The fake implementation of an op that only mutates its arguments: no outputs, nothing to compute."""
    return None


def _check_writes(kernel: TracedFunction, name: str, parameters, mutates_args, args, constants) -> None:
    written = kernel.trace(*args, **constants).written
    undeclared = [parameters[i] for i in sorted(written) if parameters[i] not in mutates_args]
    if undeclared:
        raise ArgumentError(f"custom op '{name}': the kernel writes {undeclared}, not in mutates_args "
                            f"{list(mutates_args)}", code="mutates-args",
                            hint=f"add {undeclared} to mutates_args: torch.compile reorders and drops writes it "
                                 "is not told of", loc=user_line())

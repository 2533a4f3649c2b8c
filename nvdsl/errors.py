"""The errors nvdsl raises.

Two families, kept apart on purpose:

* :class:`UserError` and its subclasses: the program or its inputs are wrong.
  Each carries a stable ``code``, a ``hint`` saying what to do, and, where one
  is known, the user's Python source line.
* :class:`InternalError`: nvdsl itself is wrong; the message asks for a report.

:class:`CompileError` (a pass or ptxas failed) and :class:`CudaError` (the
driver refused a call) quote the tool's own message.
"""

from __future__ import annotations

import linecache
import os
import sys
from dataclasses import dataclass

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


@dataclass(frozen=True)
class SourceLocation:
    """A line of the user's Python program."""

    filename: str
    line: int

    @property
    def text(self) -> str:
        return linecache.getline(self.filename, self.line).strip()

    def __str__(self) -> str:
        text = self.text
        return f"{self.filename}:{self.line}" + (f": {text}" if text else "")


def user_location(skip_prefixes: tuple[str, ...] = ()) -> SourceLocation | None:
    """The innermost stack frame that belongs to the user, not to nvdsl."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (
            filename.startswith(_PACKAGE_DIR)
            or filename.endswith("contextlib.py")
            or filename.startswith(skip_prefixes)
            or _generated_for_nvdsl(frame)
        ):
            return SourceLocation(filename, frame.f_lineno)
        frame = frame.f_back
    return None


def _generated_for_nvdsl(frame) -> bool:
    """A method that dataclasses generated for one of nvdsl's classes (its code's file is "<string>"), such as
    ``nt.Mapping.__init__``, whose checks run in ``__post_init__``."""
    if frame.f_code.co_filename != "<string>":
        return False
    owner = frame.f_locals.get("self")
    return owner is not None and type(owner).__module__.startswith("nvdsl.")


class NvdslError(Exception):
    """Base class of every error nvdsl raises."""


class UserError(NvdslError):
    """The program or its inputs break a rule; ``code`` names the rule."""

    def __init__(self, message: str, *, code: str, hint: str | None = None,
                 loc: SourceLocation | None = None):
        self.message = message
        self.code = code
        self.hint = hint
        self.loc = loc
        #: For code nvdsl generates from a program of the user's (a task kernel), the program's line that the
        #: failing part was generated for; ``loc`` is then the user's call.
        self.origin: SourceLocation | None = None
        super().__init__(self._render())

    def with_location(self, loc: SourceLocation | None) -> "UserError":
        """The same error, pointing at ``loc``."""
        return self._replaced(loc=loc)

    def with_origin(self, origin: SourceLocation) -> "UserError":
        """The same error, also naming the line of the user's program it was generated for."""
        return self._replaced(origin=origin)

    def from_program_line(self, line: SourceLocation | None) -> "UserError":
        """This error, raised while nvdsl generated code for ``line`` of a program (a task's body), as the user
        sees it: raised at that line, it points at the user's call instead; and it names ``line`` as its origin,
        unless that is the call itself (a program of nvdsl's own, whose lines are the user's call)."""
        if self.origin is not None or line is None:
            return self
        error = self
        if self.loc == line:
            call = user_location()
            if call is None:
                return self
            error = self.with_location(call)
        return error if error.loc == line else error.with_origin(line)

    def _replaced(self, **fields) -> "UserError":
        error = type(self).__new__(type(self))
        error.__dict__.update(self.__dict__, **fields)
        error.args = (error._render(),)
        return error

    def _render(self) -> str:
        text = f"[{self.code}] {self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        if self.loc is not None:
            text += f"\n  at {self.loc}"
        if self.origin is not None:
            text += f"\n  from the task line {self.origin}"
        return text


class TraceError(UserError, TypeError):
    """A mistake in a traced function or kernel body (types, control flow)."""


class ArgumentError(UserError, ValueError):
    """An argument of a call does not fit the kernel (dtype, shape, layout)."""


class LaunchConfigError(UserError, ValueError):
    """A grid, block or shared-memory size the hardware cannot launch."""


class CaptureError(UserError, RuntimeError):
    """A call that cannot be captured into a CUDA graph: it would compile, load, or copy host arrays."""


class TaskError(UserError, TypeError):
    """A mistake in a tile program of the task layer (privileges, shapes, loops)."""


class MappingError(UserError, ValueError):
    """A mapping the task layer cannot honour (memory, registers, depths, tile shapes); it names both
    numbers and is raised before anything is traced."""


class KernelFault(UserError):
    """The interpreter stopped a kernel that broke a rule while running: a deadlock, a race on shared
    memory, an out-of-bounds access, an ``expect_tx`` that differs from the bytes the copies deliver.

    ``code`` names the rule, ``loc`` is the Python line of the operation that broke it, and
    ``details`` holds what the report names (block, warp, lanes, barrier, phase, arrivals,
    outstanding transaction bytes, the other lines involved).
    """

    def __init__(self, message: str, *, code: str, hint: str | None = None,
                 loc: SourceLocation | None = None, details: dict | None = None):
        self.details = dict(details or {})
        super().__init__(message, code=code, hint=hint, loc=loc)


class ProtocolError(UserError):
    """The static check of a kernel's barrier protocol found a violation before anything ran."""


class ProtocolCheckWarning(UserWarning):
    """The static check of a kernel's barrier protocol could not decide (the message says why)."""


class CompileError(NvdslError):
    """A compiler stage (an MLIR pass, ptxas) failed; quotes the tool's message."""

    def __init__(self, stage: str, tool_message: str,
                 locations: tuple[SourceLocation, ...] = ()):
        self.stage = stage
        self.tool_message = tool_message.strip()
        self.locations = locations
        text = f"{stage} failed:\n{self.tool_message}"
        for loc in locations:
            text += f"\n  at {loc}"
        super().__init__(text)


class CudaError(NvdslError):
    """A CUDA driver call failed; ``result`` is the CUresult name."""

    def __init__(self, call: str, result: str, description: str = "",
                 hint: str | None = None):
        self.call = call
        self.result = result
        text = f"{call} failed with {result}"
        if description:
            text += f": {description}"
        if hint:
            text += f"\n  hint: {hint}"
        super().__init__(text)


class NoDeviceError(CudaError):
    """No CUDA driver or no GPU: compiling still works, running does not."""


class PtxasWarning(UserWarning):
    """ptxas changed how a kernel runs (it ignored a ``setmaxnreg``, serialized wgmma, ...): the message
    names the kernel and quotes ptxas."""


class InternalError(NvdslError):
    """A bug in nvdsl, not in the user's program."""

    def __init__(self, message: str):
        super().__init__(f"internal error in nvdsl: {message}\n"
                         "  this is a bug in nvdsl: please report it with the code that triggered it")

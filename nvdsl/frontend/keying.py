"""A disk-cache key for a call, made before tracing: the Python that tracing would run, and its inputs.

A traced function's kernels are decided by its code, the closure values and
globals it reads (and, recursively, those of the functions it calls), its
defaults, the call's signature and constants, nvdsl's own source, the Python
and toolchain builds, and the code-generation options. :func:`call_key` hashes
all of these, so a new process can find its compiled kernels without tracing
(and without importing MLIR). Where any part cannot be keyed safely (an
object of a user class, a module of the user's own, an unhashable default),
it returns None and the call traces as usual: a stale kernel is never served.

An object whose class defines ``__nvdsl_key__(self)`` is keyed by what that
returns: its content, in values that can be keyed (a task layer ``Task`` gives
its function and privileges, a ``Mapping`` its fields).

No MLIR here.
"""

from __future__ import annotations

import builtins
import dis
import enum
import functools
import hashlib
import marshal
import os
import sys
import sysconfig
import types

from .. import dtypes as dt

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_INSTALLED_PREFIXES = tuple({os.path.realpath(sysconfig.get_paths()[k]) + os.sep
                             for k in ("stdlib", "platstdlib", "purelib", "platlib")})
_SCALARS = (type(None), bool, int, float, complex, str, bytes)
_MAX_DEPTH = 12


class _Unkeyable(Exception):
    """Something a traced function reads whose value cannot be put in a key."""


def call_key(fn, specs, constants: dict, options, toolchain: str, *, keyed_by=None) -> str | None:
    """The hex digest keying this call's compiled kernels, or None when it cannot be keyed safely. ``keyed_by``
    (an object with ``__nvdsl_key__``) stands for ``fn``: what it returns decides what ``fn`` traces."""
    try:
        function = _Keyer().value(keyed_by, 0) if keyed_by is not None else _Keyer().function(fn, 0)
        parts = [f"python={sys.version}", f"nvdsl={nvdsl_source_hash()}", f"toolchain={toolchain}",
                 f"options={options.compile_key()}", "function=" + function,
                 "specs=" + repr([(s.name, s.kind, s.dtype.name, s.shape, s.strides, s.unaligned) for s in specs]),
                 "constants=" + _Keyer().value(dict(constants), 0)]
    except (_Unkeyable, RecursionError):
        return None
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def nvdsl_source_hash() -> str:
    """A hash of every Python file of the nvdsl package: a changed nvdsl must not reuse old kernels."""
    h = hashlib.sha256()
    for root, dirs, files in os.walk(_PACKAGE_DIR):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                with open(path, "rb") as f:
                    h.update(os.path.relpath(path, _PACKAGE_DIR).encode() + b"\0" + f.read())
    return h.hexdigest()[:24]


class _Keyer:
    """Turns the values a function reads into text; raises _Unkeyable where that is not safe."""

    def __init__(self):
        self._seen: set[int] = set()

    def value(self, v, depth: int) -> str:
        if depth > _MAX_DEPTH:
            raise _Unkeyable("nested too deeply")
        kind = type(v)
        if kind in _SCALARS:
            return f"{kind.__name__}:{v!r}"
        if kind in (tuple, list):
            return f"{kind.__name__}(" + ",".join(self.value(x, depth + 1) for x in v) + ")"
        if kind is dict:
            items = sorted((self.value(k, depth + 1), self.value(x, depth + 1)) for k, x in v.items())
            return "dict(" + ",".join(f"{k}={x}" for k, x in items) + ")"
        if kind in (set, frozenset):
            return f"{kind.__name__}(" + ",".join(sorted(self.value(x, depth + 1) for x in v)) + ")"
        if kind is dt.DType:
            return f"dtype:{v.name}"
        content = getattr(kind, "__nvdsl_key__", None)
        if content is not None:
            return f"keyed:{kind.__module__}.{kind.__qualname__}(" + self.value(content(v), depth + 1) + ")"
        if isinstance(v, enum.Enum):
            return f"enum:{self.value(kind, depth + 1)}.{v.name}={self.value(v.value, depth + 1)}"
        if kind is types.FunctionType:
            return self.function(v, depth + 1)
        if kind is functools.partial:
            return (f"partial({self.value(v.func, depth + 1)},{self.value(v.args, depth + 1)},"
                    f"{self.value(v.keywords, depth + 1)})")
        if kind is types.ModuleType:
            return self.module(v)
        if kind is types.BuiltinFunctionType or isinstance(v, type):
            module = sys.modules.get(getattr(v, "__module__", None) or "builtins")
            if module is None:
                raise _Unkeyable(f"{v!r} comes from no loaded module")
            return f"{kind.__name__}:{self.module(module)}.{v.__qualname__}"
        numpy = sys.modules.get("numpy")
        if numpy is not None and isinstance(v, (numpy.generic, numpy.dtype)):
            return f"numpy:{type(v).__name__}:{v!r}"
        raise _Unkeyable(f"a {kind.__name__} cannot be keyed")

    def module(self, module: types.ModuleType) -> str:
        """nvdsl's own modules (their source is hashed), installed or built-in modules by name and
        version; the user's own modules are not keyable (their attributes can change)."""
        name = module.__name__
        if name == "nvdsl" or name.startswith("nvdsl."):
            return f"module:{name}"
        path = getattr(module, "__file__", None)
        if path is None or os.path.realpath(path).startswith(_INSTALLED_PREFIXES):
            root = sys.modules.get(name.partition(".")[0], module)
            return f"module:{name}@{getattr(root, '__version__', '')}"
        raise _Unkeyable(f"module {name} is the program's own")

    def function(self, fn: types.FunctionType, depth: int) -> str:
        if id(fn) in self._seen:  # recursion: the first visit keys it
            return f"function-again:{fn.__qualname__}"
        if _nvdsl_module_level(fn):  # its code and the module constants it reads are nvdsl's hashed source
            return f"function:{fn.__module__}.{fn.__qualname__}"
        self._seen.add(id(fn))
        code = fn.__code__
        parts = [f"code:{hashlib.sha256(marshal.dumps(code)).hexdigest()}",
                 "defaults:" + self.value(fn.__defaults__, depth + 1),
                 "kwdefaults:" + self.value(fn.__kwdefaults__, depth + 1)]
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                contents = cell.cell_contents
            except ValueError:
                raise _Unkeyable(f"closure variable {name} is not bound yet") from None
            parts.append(f"closure:{name}=" + self.value(contents, depth + 1))
        namespace = fn.__globals__
        for name in sorted(_global_names(code)):
            if name in namespace:
                parts.append(f"global:{name}=" + self.value(namespace[name], depth + 1))
            elif not hasattr(builtins, name):
                parts.append(f"unbound:{name}")  # an attribute name, or a global defined later
        return "function(" + ";".join(parts) + ")"


def _nvdsl_module_level(fn: types.FunctionType) -> bool:
    """A function defined at the top level of an nvdsl module (not a closure made at run time)."""
    module = fn.__module__ or ""
    return ((module == "nvdsl" or module.startswith("nvdsl.")) and fn.__closure__ is None
            and "<locals>" not in fn.__qualname__ and sys.modules.get(module) is not None
            and getattr(sys.modules[module], fn.__name__, None) is fn)


_GLOBAL_ACCESS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL"})


def _global_names(code: types.CodeType) -> set[str]:
    """Names a code object and the functions defined in it look up as globals (not attribute names:
    ``ctx.block_id.x`` reads no global ``x``)."""
    names = {ins.argval for ins in dis.get_instructions(code) if ins.opname in _GLOBAL_ACCESS}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names

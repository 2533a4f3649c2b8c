"""The compile cache: content hash of the traced module -> compiled module, in memory and on disk.

A second index maps a *call* (its function's code, closures, globals and the
call's signature: :mod:`nvdsl.frontend.keying`) to the module it compiled to,
so that a new process finds its kernels without tracing.

The key hashes the traced MLIR (without source locations), the options that
change code generation, and the builds of nvdsl's compiler, the MLIR bindings
and ptxas. Each disk entry keeps the module text it was made from, so a hash
collision is detected and recompiled rather than trusted.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import os
import tempfile

from ..options import Options
from ..signature import ProgramPlan
from ..version import __version__
from .compiled import CompiledModule, KernelResources
from .toolchain import file_identity, find_tool, mlir_build

_FORMAT = 3  # 2: plans carry scratch arrays; call entries; 3: launches say whether they overlap the previous


@functools.lru_cache(maxsize=None)
def _compiler_source_hash() -> str:
    """A hash of the compiler's own code and the target facts it reads: a changed pass pipeline must not hit
    old entries."""
    h = hashlib.sha256()
    directory = os.path.dirname(os.path.abspath(__file__))
    paths = [os.path.join(directory, name) for name in sorted(os.listdir(directory)) if name.endswith(".py")]
    for path in paths + [os.path.join(os.path.dirname(directory), "target.py")]:
        with open(path, "rb") as f:
            h.update(os.path.basename(path).encode() + b"\0" + f.read())
    return h.hexdigest()[:16]


def toolchain_fingerprint(options: Options) -> str:
    ptxas = find_tool("ptxas", options.ptxas) if options.assemble_cubin else None
    return ";".join([f"nvdsl={__version__}", f"compiler={_compiler_source_hash()}", f"format={_FORMAT}",
                     f"mlir={mlir_build()}", f"ptxas={file_identity(ptxas)}"])


def call_toolchain(options: Options) -> str:
    """The toolchain part of a call's key, found without searching for ptxas (importing the search
    costs tens of milliseconds): the ptxas a call entry was assembled with is checked when it is read."""
    explicit = file_identity(options.ptxas) if options.ptxas else "search"
    return ";".join([f"nvdsl={__version__}", f"format={_FORMAT}", f"mlir={mlir_build()}", f"ptxas={explicit}"])


def cache_key(module_text: str, options: Options) -> str:
    h = hashlib.sha256()
    for part in (module_text, options.compile_key(), toolchain_fingerprint(options)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


class CompileCache:
    """Compiled modules by key: a dict in front of a directory of entries."""

    def __init__(self, directory: str | None):
        self.directory = directory
        self._memory: dict[str, tuple[CompiledModule, str]] = {}     # module key -> (module, its text)
        self._calls: dict[str, tuple[CompiledModule, frozenset[int]]] = {}

    def _paths(self, key: str) -> tuple[str, str]:
        base = os.path.join(self.directory, key[:2], key)
        return base + ".json", base + ".cubin"

    def get(self, key: str, module_text: str) -> CompiledModule | None:
        """The module compiled from ``module_text`` under ``key`` (a colliding entry is not trusted)."""
        hit = self._memory.get(key)
        if hit is None:
            hit = self._read(key)
        return hit[0] if hit is not None and hit[1] == module_text else None

    def _read(self, key: str) -> tuple[CompiledModule, str] | None:
        if self.directory is None:
            return None
        meta_path, cubin_path = self._paths(key)
        try:
            with open(meta_path) as f:
                meta = json.load(f)
            if meta.get("format") != _FORMAT:
                return None
            cubin = None
            if meta["has_cubin"]:
                with open(cubin_path, "rb") as f:
                    cubin = f.read()
            compiled = CompiledModule(
                key=key, name=meta["name"], plan=ProgramPlan.from_json(meta["plan"]), ptx=meta["ptx"],
                cubin=cubin, resources={k: KernelResources(**v) for k, v in meta["resources"].items()},
                ptxas_log=meta["ptxas_log"], timings={})
        except (OSError, ValueError, KeyError, TypeError):
            return None
        self._memory[key] = (compiled, meta["module"])
        return self._memory[key]

    def get_call(self, call_key: str) -> tuple[CompiledModule, frozenset[int]] | None:
        """What a call keyed by :func:`nvdsl.frontend.keying.call_key` compiled to, and the arguments
        its kernels write; found without tracing."""
        hit = self._calls.get(call_key)
        if hit is not None or self.directory is None:
            return hit
        try:
            with open(self._call_path(call_key)) as f:
                entry = json.load(f)
            if entry.get("format") != _FORMAT or entry.get("call") != call_key:
                return None
            ptxas = entry["ptxas"]
            if ptxas is not None and (not os.path.exists(ptxas["path"]) or
                                      file_identity(ptxas["path"]) != ptxas["identity"]):
                return None  # the ptxas that assembled it changed or went away
            module = self._memory.get(entry["module"]) or self._read(entry["module"])
            written = frozenset(entry["written"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if module is None:
            return None
        self._calls[call_key] = (module[0], written)
        return self._calls[call_key]

    def put_call(self, call_key: str, compiled: CompiledModule, written: frozenset[int],
                 options: Options) -> None:
        """Remember that the call ``call_key`` compiles to ``compiled`` (which :meth:`put` stored)."""
        self._calls[call_key] = (compiled, written)
        if self.directory is None:
            return
        ptxas = find_tool("ptxas", options.ptxas) if compiled.cubin is not None else None
        entry = {"format": _FORMAT, "call": call_key, "module": compiled.key, "written": sorted(written),
                 "ptxas": {"path": ptxas, "identity": file_identity(ptxas)} if ptxas else None}
        path = self._call_path(call_key)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            _atomic_write(path, json.dumps(entry).encode())
        except OSError:
            pass

    def _call_path(self, call_key: str, kind: str = "calls") -> str:
        return os.path.join(self.directory, kind, call_key[:2], call_key + ".json")

    def get_trace(self, call_key: str) -> dict | None:
        """What the interpreter ran for a call keyed by :func:`nvdsl.frontend.keying.call_key` in an earlier
        process: ``module`` (the traced module as MLIR bytecode, locations included), ``written`` and
        ``checked``/``undecided`` (the protocol check's verdict); None when this disk cache has none."""
        if self.directory is None:
            return None
        try:
            with open(self._call_path(call_key, "traces")) as f:
                entry = json.load(f)
            if entry.get("format") != _FORMAT or entry.get("call") != call_key:
                return None
            return {"module": base64.b64decode(entry["module"]), "written": frozenset(entry["written"]),
                    "checked": bool(entry["checked"]), "undecided": entry["undecided"]}
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put_trace(self, call_key: str, module_bytecode: bytes, written: frozenset[int], checked: bool,
                  undecided: str | None) -> None:
        """Keep the traced module the interpreter runs for ``call_key``, and the protocol check's verdict
        (``checked``: it ran; ``undecided``: why it could not decide), for the next process."""
        if self.directory is None:
            return
        entry = {"format": _FORMAT, "call": call_key, "module": base64.b64encode(module_bytecode).decode(),
                 "written": sorted(written),
                 "checked": checked, "undecided": undecided}
        path = self._call_path(call_key, "traces")
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            _atomic_write(path, json.dumps(entry).encode())
        except OSError:
            pass

    def put(self, compiled: CompiledModule, module_text: str) -> None:
        self._memory[compiled.key] = (compiled, module_text)
        if self.directory is None:
            return
        meta_path, cubin_path = self._paths(compiled.key)
        meta = {"format": _FORMAT, "name": compiled.name, "module": module_text,
                "plan": compiled.plan.to_json(), "ptx": compiled.ptx,
                "has_cubin": compiled.cubin is not None, "ptxas_log": compiled.ptxas_log,
                "resources": {k: vars(v) for k, v in compiled.resources.items()}}
        try:
            os.makedirs(os.path.dirname(meta_path), exist_ok=True)
            if compiled.cubin is not None:
                _atomic_write(cubin_path, compiled.cubin)
            _atomic_write(meta_path, json.dumps(meta).encode())  # written last: it marks the entry whole
        except OSError:
            pass  # a read-only or full disk only costs a recompile next time


def _atomic_write(path: str, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


_CACHES: dict[str | None, CompileCache] = {}


def cache_for(options: Options) -> CompileCache:
    """The process's cache for these options' directory (memory only when the disk cache is off)."""
    directory = options.resolved_cache_dir if options.disk_cache else None
    cache = _CACHES.get(directory)
    if cache is None:
        cache = _CACHES[directory] = CompileCache(directory)
    return cache

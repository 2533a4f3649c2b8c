"""The compile cache: content hash of the traced module -> compiled module, in memory and on disk.

The key hashes the traced MLIR (without source locations), the options that
change code generation, and the versions of nvdsl, the MLIR bindings and
ptxas. Each disk entry keeps the module text it was made from, so a hash
collision is detected and recompiled rather than trusted.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from importlib import metadata

from ..options import Options
from ..signature import ProgramPlan
from .driver import CompiledModule, KernelResources
from .toolchain import find_tool, tool_version

_FORMAT = 1


def _package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "unknown"


@functools.lru_cache(maxsize=None)
def _compiler_source_hash() -> str:
    """A hash of the compiler's own code: a changed pass pipeline must not hit old entries."""
    h = hashlib.sha256()
    directory = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(os.listdir(directory)):
        if name.endswith(".py"):
            with open(os.path.join(directory, name), "rb") as f:
                h.update(name.encode() + b"\0" + f.read())
    return h.hexdigest()[:16]


def toolchain_fingerprint(options: Options) -> str:
    from .. import __version__
    ptxas = find_tool("ptxas", options.ptxas) if options.assemble_cubin else None
    return ";".join([f"nvdsl={__version__}", f"compiler={_compiler_source_hash()}", f"format={_FORMAT}",
                     f"mlir={_package_version('xtc-mlir-python-bindings')}",
                     f"ptxas={tool_version(ptxas)}"])


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
        self._memory: dict[str, tuple[CompiledModule, str]] = {}

    def _paths(self, key: str) -> tuple[str, str]:
        base = os.path.join(self.directory, key[:2], key)
        return base + ".json", base + ".cubin"

    def get(self, key: str, module_text: str) -> CompiledModule | None:
        hit = self._memory.get(key)
        if hit is not None:
            return hit[0] if hit[1] == module_text else None
        if self.directory is None:
            return None
        meta_path, cubin_path = self._paths(key)
        try:
            with open(meta_path) as f:
                meta = json.load(f)
            if meta.get("format") != _FORMAT or meta.get("module") != module_text:
                return None  # another format, or a hash collision: recompile
            cubin = None
            if meta["has_cubin"]:
                with open(cubin_path, "rb") as f:
                    cubin = f.read()
        except (OSError, ValueError, KeyError):
            return None
        compiled = CompiledModule(
            key=key, name=meta["name"], plan=ProgramPlan.from_json(meta["plan"]), ptx=meta["ptx"],
            cubin=cubin, resources={k: KernelResources(**v) for k, v in meta["resources"].items()},
            ptxas_log=meta["ptxas_log"], timings={})
        self._memory[key] = (compiled, module_text)
        return compiled

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

"""Finding the CUDA command-line tools (ptxas, nvdisasm), running nvdisasm, and identifying builds.

Search order: an explicit path, then the CUDA install and NVIDIA's wheels as
``cuda.pathfinder`` knows them, then ``PATH``, then ``/usr/local/cuda/bin``.
"""

from __future__ import annotations

import functools
import glob
import importlib.util
import os
import shutil

from ..errors import CompileError


@functools.lru_cache(maxsize=None)
def _search(name: str) -> str | None:
    try:
        from cuda.pathfinder import find_nvidia_binary_utility
        found = find_nvidia_binary_utility(name)
        if found:
            return found
    except Exception:  # pathfinder missing or unable to look: fall back to PATH
        pass
    found = shutil.which(name)
    if found:
        return found
    fallback = os.path.join("/usr/local/cuda/bin", name)
    return fallback if os.access(fallback, os.X_OK) else None


def find_tool(name: str, explicit: str | None = None) -> str | None:
    """The path of ``name`` (``ptxas``, ``nvdisasm``), or None when none is installed; ``explicit`` (a
    path Options checked) wins."""
    return explicit or _search(name)


@functools.lru_cache(maxsize=None)
def mlir_build() -> str:
    """The MLIR bindings' build, by their native libraries' paths, sizes and times (MLIR is not imported)."""
    spec = importlib.util.find_spec("mlir")
    if spec is None or not spec.submodule_search_locations:
        return "none"
    return ";".join(file_identity(path) for location in spec.submodule_search_locations
                    for path in sorted(glob.glob(os.path.join(location, "_mlir_libs", "_mlir*")))) or "unknown"


def file_identity(path: str | None) -> str:
    """A file (a tool's binary) by path, size and modification time; ``none`` when absent. Cheaper than
    running ``--version``, and it changes whenever the file is reinstalled."""
    if path is None:
        return "none"
    st = os.stat(path)
    return f"{path}:{st.st_size}:{st.st_mtime_ns}"


def disassemble(cubin: bytes) -> str | None:
    """The SASS of a cubin from nvdisasm, or None where nvdisasm is not installed."""
    import subprocess  # imported here: `import nvdsl` stays light
    import tempfile
    nvdisasm = find_tool("nvdisasm")
    if nvdisasm is None:
        return None
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        proc = subprocess.run([nvdisasm, "-c", f.name], capture_output=True, text=True)
    if proc.returncode != 0:
        raise CompileError("nvdisasm", proc.stderr)
    return proc.stdout

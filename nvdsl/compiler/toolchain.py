"""Finding the CUDA command-line tools (ptxas, nvdisasm) and their versions.

Search order: an explicit path, then the CUDA install and NVIDIA's wheels as
``cuda.pathfinder`` knows them, then ``PATH``, then ``/usr/local/cuda/bin``.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

from ..errors import UserError


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
    """The path of ``name`` (``ptxas``, ``nvdisasm``), or None when none is installed."""
    if explicit:
        if not (os.path.isfile(explicit) and os.access(explicit, os.X_OK)):
            raise UserError(f"{name} path {explicit!r} is not an executable file",
                            code="bad-option", hint=f"point the option at a {name} binary or leave it unset")
        return explicit
    return _search(name)


@functools.lru_cache(maxsize=None)
def _version(path: str, mtime: float) -> str:
    out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "unknown"


def tool_version(path: str | None) -> str:
    """A line identifying the tool's build, for cache keys; 'none' when absent."""
    if path is None:
        return "none"
    return _version(path, os.path.getmtime(path))

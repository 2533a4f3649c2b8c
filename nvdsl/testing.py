"""Helpers for nvdsl's tests and for users testing their kernels: the GPU marker and SASS checks."""

from __future__ import annotations

import functools

import pytest

from .runtime.device import device_count


@functools.lru_cache(maxsize=None)
def has_gpu() -> bool:
    """True when the CUDA driver sees at least one GPU."""
    return device_count() > 0


GPU_MARKS = [pytest.mark.gpu, pytest.mark.skipif(not has_gpu(), reason="needs an NVIDIA GPU (none found)")]


def requires_gpu(test):
    """Mark a test as needing a GPU: ``pytest -m gpu`` selects it; without a GPU it is skipped with the reason.

    For a whole module: ``pytestmark = nvdsl.testing.GPU_MARKS``.
    """
    for mark in reversed(GPU_MARKS):
        test = mark(test)
    return test


def sass_opcodes(sass: str) -> set[str]:
    """The opcodes that occur in nvdisasm output (``HGMMA``, ``UTMALDG``, ``LDG`` ...), without modifiers."""
    opcodes = set()
    for line in sass.splitlines():
        line = line.strip()
        if not line.startswith("/*") or "*/" not in line:
            continue
        code = line.split("*/", 1)[1].strip().lstrip("{").strip()
        if code.startswith("@"):
            code = code.split(None, 1)[1] if " " in code else ""
        if code and code[0].isupper():
            opcodes.add(code.split()[0].split(".")[0].rstrip(";"))
    return opcodes

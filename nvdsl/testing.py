"""Helpers for nvdsl's tests and for users testing their kernels: the GPU marker, golden files and SASS checks."""

from __future__ import annotations

import difflib
import functools
import itertools
import os
import re

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


def assert_matches_golden(text: str, path: str | os.PathLike, *, update: bool = False) -> None:
    """Fail unless ``text`` equals the golden file at ``path``, showing the start of a unified diff.

    With ``update``, or when the file does not exist yet, ``text`` is written there first (nvdsl's own tests
    pass ``update=True`` under ``pytest --update-golden``).
    """
    if update or not os.path.exists(path):
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    with open(path, encoding="utf-8") as f:
        expected = f.read()
    if text != expected:
        diff = difflib.unified_diff(expected.splitlines(keepends=True), text.splitlines(keepends=True),
                                    fromfile=os.fspath(path), tofile="now")
        shown = "\n".join(line.rstrip("\n") for line in itertools.islice(diff, 40))
        raise AssertionError(f"{os.fspath(path)} changed; if that is intended, rewrite it with update=True "
                             f"(nvdsl's tests: pytest --update-golden)\n{shown}")


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


def tensor_core_loops(sass: str) -> list[str]:
    """The bodies of the loops in nvdisasm output that issue wgmma (``HGMMA``): from a label to the branch back
    to it. Branches back from after the kernel's last ``EXIT`` (the retry paths of mbarrier waits, placed at
    the end) do not count as loops."""
    lines = sass.splitlines()
    labels = {}
    for number, line in enumerate(lines):
        label = re.match(r"\s*(\.L_x_\d+):", line)
        if label:
            labels[label.group(1)] = number
    last_exit = max((n for n, line in enumerate(lines) if re.search(r"\bEXIT\b", line)), default=len(lines))
    loops = []
    for number, line in enumerate(lines[:last_exit]):
        branch = re.search(r"\bBRA\b.*?(\.L_x_\d+)", line)
        start = labels.get(branch.group(1), number) if branch else number
        if start < number:
            body = "\n".join(lines[start:number + 1])
            if "HGMMA" in body:
                loops.append(body)
    return loops

"""What a target chip allows, known without a GPU: the compiler checks kernels against it."""

from __future__ import annotations

import re

# Shared memory one block may use (static + dynamic, with the opt-in), bytes, by compute capability
# (CUDA C Programming Guide, "Technical Specifications per Compute Capability").
_SHARED_MEMORY_PER_BLOCK = {70: 98304, 72: 49152, 75: 65536, 80: 166912, 86: 101376, 87: 166912, 89: 101376,
                            90: 232448, 100: 232448, 101: 232448, 103: 232448, 120: 101376, 121: 101376}


# The PTX ISA version (x10) each architecture first appears in (PTX ISA, "Release notes"): LLVM's NVPTX back end
# aborts the process on a target older than its chip, so nvdsl refuses that pair first.
MIN_PTX_VERSION = {
    "sm_50": 40, "sm_52": 41, "sm_53": 42, "sm_60": 50, "sm_61": 50, "sm_62": 50, "sm_70": 60, "sm_72": 61,
    "sm_75": 63, "sm_80": 70, "sm_86": 71, "sm_87": 74, "sm_89": 78, "sm_90": 78, "sm_90a": 80,
    "sm_100": 86, "sm_100a": 86, "sm_101": 86, "sm_101a": 86, "sm_103": 88, "sm_103a": 88,
    "sm_120": 87, "sm_120a": 87, "sm_121": 88, "sm_121a": 88,
}


def ptx_version(features: str) -> int | None:
    """The PTX ISA version (x10) a feature string such as ``"+ptx80"`` asks for; None if it names none."""
    versions = re.findall(r"\+ptx(\d+)", features)
    return int(versions[-1]) if versions else None


def max_shared_memory(chip: str) -> int | None:
    """Bytes of shared memory a block may use on ``chip`` (``sm_90a`` -> 232448), None when unknown."""
    match = re.fullmatch(r"sm_(\d+)[a-z]?", chip)
    return _SHARED_MEMORY_PER_BLOCK.get(int(match.group(1))) if match else None


_SHARED_DECLARATION = re.compile(r"^\s*\.shared\s+(?:\.align\s+\d+\s+)?\.\w+\s+\w+\[(\d+)\]", re.M)


def static_shared_memory(ptx: str) -> int:
    """Bytes of static shared memory the PTX module declares (the dynamic buffer is ``.extern``)."""
    return sum(int(size) for size in _SHARED_DECLARATION.findall(ptx))

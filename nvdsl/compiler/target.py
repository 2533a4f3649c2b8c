"""What a target chip allows, known without a GPU: the compiler checks kernels against it."""

from __future__ import annotations

import re

# Shared memory one block may use (static + dynamic, with the opt-in), bytes, by compute capability
# (CUDA C Programming Guide, "Technical Specifications per Compute Capability").
_SHARED_MEMORY_PER_BLOCK = {70: 98304, 72: 49152, 75: 65536, 80: 166912, 86: 101376, 87: 166912, 89: 101376,
                            90: 232448, 100: 232448, 101: 232448, 103: 232448, 120: 101376, 121: 101376}


def max_shared_memory(chip: str) -> int | None:
    """Bytes of shared memory a block may use on ``chip`` (``sm_90a`` -> 232448), None when unknown."""
    match = re.fullmatch(r"sm_(\d+)[a-z]?", chip)
    return _SHARED_MEMORY_PER_BLOCK.get(int(match.group(1))) if match else None


_SHARED_DECLARATION = re.compile(r"^\s*\.shared\s+(?:\.align\s+\d+\s+)?\.\w+\s+\w+\[(\d+)\]", re.M)


def static_shared_memory(ptx: str) -> int:
    """Bytes of static shared memory the PTX module declares (the dynamic buffer is ``.extern``)."""
    return sum(int(size) for size in _SHARED_DECLARATION.findall(ptx))

"""What the machine knows of protocol skeletons, which :mod:`.protocol` cuts out of a kernel and runs.

A skeleton moves no data: it runs on arrays without contents, leaves out the operands only data needs, and
its race detector watches shared memory in 128-byte granules. Its run ends with :class:`Undecided` where the
check cannot decide, and with :class:`Diverged` where a warpgroup run as one unit must run warp by warp.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from ..signature import ArgSpec
from .memory import GLOBAL, Buffer, MemRef, row_major_strides

GRANULE_BITS = 7
MEMORY_READS = frozenset({"memref.load", "vector.load"})


def _coordinate_operands(op) -> set[int]:
    """The positions of a TMA load's coordinates among its operands (its fourth operand segment)."""
    sizes = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    first = sum(sizes[:3])
    return set(range(first, first + sizes[3]))


# Operands of roots that the skeleton does not need: accumulator registers (wgmma math is left out) and the
# global coordinates of TMA loads (a skeleton moves no data; nvdsl checks constant boxes against the shape
# while tracing, and the TMA zero-fills past the edge). Leaving the coordinates out leaves most loop
# indices unread, so loop summaries (.period) can skip iterations.
SKELETON_OMITS = {"nvgpu.warpgroup.mma": lambda op: {2}, "nvvm.wgmma.mma_async": lambda op: {0},
                  "nvgpu.tma.async.load": _coordinate_operands}


class Undecided(Exception):
    """The skeleton depends on something the check cannot know before running."""


class OverBudget(Undecided):
    """The skeleton takes longer to run than the check may spend."""


class Diverged(Exception):
    """A warpgroup run as one unit reached a wait with some of its warps not taking part (see
    :class:`~.machine.Block`): its warps no longer run alike, so the check runs them warp by warp."""

    def __init__(self, warpgroup: int):
        super().__init__(f"the warps of warpgroup {warpgroup} parted")
        self.warpgroup = warpgroup


def placeholder_array(spec: ArgSpec) -> MemRef:
    """An argument array without contents: the skeleton moves no data, it only needs shapes."""
    buffer = Buffer(np.zeros(0, np.uint8), spec.name, GLOBAL)
    return MemRef(buffer, 0, spec.shape, spec.element_strides, spec.dtype.mlir_type(), name=spec.name)


def granules(start: int, nbytes: int) -> np.ndarray:
    """The 128-byte granules of shared memory a range of bytes touches (the skeleton's race detector unit)."""
    return np.arange(start >> GRANULE_BITS, ((start + nbytes - 1) >> GRANULE_BITS) + 1, dtype=np.int64)

"""The interpreter: runs a traced module on the CPU over NumPy memory, with race and deadlock reports.

It executes the same MLIR module the GPU gets (the host function and each ``gpu.launch``), warp by
warp with the lanes of a warp vectorised in NumPy, and reports protocol bugs (deadlocks, reads of
TMA destinations before their phase, overwritten wgmma operands, missing proxy fences,
out-of-bounds accesses, ``expect_tx`` mismatches) with the Python lines involved.
"""

from .program import Program

__all__ = ["Program"]

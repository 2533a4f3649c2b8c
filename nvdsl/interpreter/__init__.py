"""The interpreter: runs a traced module on the CPU over NumPy memory, with race and deadlock reports.

It executes the same MLIR module the GPU gets (the host function and each ``gpu.launch``, before
outlining), block by block, warp by warp with the 32 lanes of a warp vectorised in NumPy
(:mod:`.program`, :mod:`.machine`). Operation semantics live in ``ops_*``, one module per primitive
(:mod:`.ops_mbarrier`, :mod:`.ops_tma`, :mod:`.ops_wgmma`, ...): they follow the hardware where nvdsl
depends on it (mbarrier phases and transaction bytes, TMA boxes and swizzle, wgmma descriptors and
the accumulator fragments of :func:`nvdsl.layouts.wgmma_accumulator`) and MLIR's NVGPU lowering
where nvdsl emits nvgpu ops.

Reports (:class:`~nvdsl.KernelFault`) name the Python lines involved: deadlocks, races on shared
memory found by happens-before (:mod:`.shadow`), out-of-bounds accesses, ``expect_tx`` mismatches.
:mod:`.protocol`, on top of the machine, runs a kernel's synchronisation skeleton as the static check
of its barrier protocol (what the machine itself knows of skeletons is in :mod:`.skeleton` and
:mod:`.period`, below it); :mod:`.fuzz` runs a kernel under many schedules.

Not modelled: races on global memory (blocks run one after the other), races between lanes of one
warp (they run in lockstep), the timing of the accumulator registers of a running wgmma (reading
them before ``wgmma.wait_group`` is not reported), the hardware's order among lanes hitting one
address with atomics (here lane order), TMA multicast and clusters.
"""

from .program import Program

__all__ = ["Program"]

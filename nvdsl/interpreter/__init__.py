"""The interpreter: runs a traced module on the CPU over NumPy memory, with race and deadlock reports.

It executes the same MLIR module the GPU gets (the host function and each ``gpu.launch``, before
outlining), block by block (with a fuzzing seed, up to four blocks interleaved), warp by warp with the 32
lanes of a warp vectorised in NumPy (:mod:`.program`, :mod:`.machine`). Operation semantics live in ``ops_*``, one module per primitive
(:mod:`.ops_mbarrier`, :mod:`.ops_tma`, :mod:`.ops_wgmma`, ...): they follow the hardware where nvdsl
depends on it (mbarrier phases and transaction bytes, TMA boxes and swizzle, wgmma descriptors and
the accumulator fragments of :func:`nvdsl.layouts.wgmma_accumulator`) and MLIR's NVGPU lowering
where nvdsl emits nvgpu ops.

Reports (:class:`~nvdsl.KernelFault`) name the Python lines involved: deadlocks; races on shared
memory found by happens-before (:mod:`.shadow`), between warps and between the lanes of one warp (which
only a synchronisation of the warp orders: ``bar.warp.sync``, another warp-wide ``.sync`` instruction, a
barrier or an mbarrier arrival); races on global memory between the blocks of one launch (a plain write
against any access of the same element by another block, :mod:`.global_races`); out-of-bounds accesses;
``expect_tx`` mismatches. :mod:`.protocol`, on top of the machine, runs a kernel's synchronisation skeleton
as the static check of its barrier protocol (what the machine itself knows of skeletons is in
:mod:`.skeleton` and :mod:`.period`, below it); :mod:`.fuzz` runs a kernel under many schedules.

Not modelled: races on global memory between the warps or lanes of one block (a fuzzed schedule shows
them only as a different result); atomics used as flags between blocks (no order between blocks is
modelled, so a hand-made inter-block handshake is reported as a race); races between lanes through
asynchronous copies (TMA, wgmma; checked per warp); the timing of the accumulator registers of a running
wgmma (reading them before ``wgmma.wait_group`` is not reported), the hardware's order among lanes
hitting one address with atomics (here lane order), TMA multicast and clusters.
"""

from .program import Program

__all__ = ["Program"]

"""Chapter 2: the Tensor Memory Accelerator and mbarriers.

On Hopper a single thread can ask the TMA unit to copy a whole tile
between global and shared memory. The copy runs asynchronously. Its end is
signalled on an *mbarrier*, a 64-bit barrier in shared memory that also
counts bytes.

1. ``nvdsl.TMA(array, box=..., swizzle=...)`` in the host function declares
   a descriptor over an array argument. The box is the tile shape (at most
   256 per dimension). The runtime encodes the descriptor for the actual
   buffer at call time with ``cuTensorMapEncodeTiled``, after checking TMA's
   rules (16-byte strides, box limits, swizzle span).
2. ``nvdsl.Mbarriers(1)`` in the kernel allocates a barrier.
   ``bar.init(1)`` expects one arrival per phase.
3. One thread calls ``bar.arrive(tx_bytes)``, which arrives and says how
   many bytes to expect, and ``tma.load(tile, bar, coords)``, which starts
   the copy.
4. Every thread calls ``bar.try_wait(phase)``. Phase 0 completes once the
   arrival and all the bytes are in. Then the tile can be read.

The kernel below copies row tiles of ``a`` into shared memory with the
TMA, and each thread writes its row of the tile, times two, to ``out``.
The PTX shows ``cp.async.bulk.tensor`` and ``mbarrier.try_wait.parity``;
the SASS shows ``UTMALDG`` and ``SYNCS``.

Run it: ``python3 tutorials/ch2_tma.py``.
"""

import numpy as np

import nvdsl
from _chapter import run_and_verify

TILE = (64, 64)


@nvdsl.mlir_func
def double_by_tiles(a, out):
    rows, cols = a.shape
    tma = nvdsl.TMA(a, box=TILE)
    tile_bytes = TILE[0] * TILE[1] * 2

    @nvdsl.gpu_launch(grid=(cols // TILE[1], rows // TILE[0]), block=TILE[0], smem=tile_bytes)
    def kernel(ctx):
        tile = ctx.dynamic_shared(TILE, nvdsl.float16, align=128)
        bar = nvdsl.Mbarriers(1)[0]
        leader = ctx.thread_id.x.eq(0)
        bar.init(1, predicate=leader)
        tma.prefetch(predicate=leader)
        ctx.sync_threads()                      # the barrier is initialised before anyone waits on it
        row0, col0 = ctx.block_id.y * TILE[0], ctx.block_id.x * TILE[1]
        bar.arrive(tile_bytes, predicate=leader)
        tma.load(tile, bar, (row0, col0), predicate=leader)
        bar.try_wait(0)
        r = ctx.thread_id.x
        for c in nvdsl.for_range(TILE[1]):
            out[row0 + r, col0 + c] = tile[r, c] * 2.0

    kernel()


def main(rows=256, cols=192):
    a = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float16)
    out = np.zeros_like(a)

    def verify():
        np.testing.assert_array_equal(out, a * np.float16(2))

    run_and_verify(double_by_tiles, (a, out), verify)


if __name__ == "__main__":
    main()

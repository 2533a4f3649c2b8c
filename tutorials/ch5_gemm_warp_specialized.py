"""Chapter 5: a warp-specialized GEMM, where one warpgroup loads and two multiply, handing tiles over an aref.

In chapter 4 the same threads issued the TMA loads and the wgmma
instructions, so every step paid for both. Here the block has three
warpgroups (384 threads), each with one job:

* The **producer** (warpgroup 0) only issues TMA loads. It needs few
  registers, so it gives most of them back: ``register_size=40``
  (``setmaxnreg.dec``).
* Two **consumers** (warpgroups 1 and 2) only run wgmma. Each owns 64 rows of
  the block's 128 x 256 tile of C, a 64 x 256 float32 accumulator: 128
  registers per thread. They take the registers the producer freed:
  ``register_size=232`` (``setmaxnreg.inc``).

They hand tiles to each other through an **asynchronous reference**
(``nvdsl.Aref``): a ring of ``num_stages`` shared-memory slots, each holding
one A tile and one B tile. The producer calls ``ring.put(...)`` with the two
TMA copies that fill a slot; a consumer reads one with ``with ring.get() as
(a, b):``. Chapter 4 did this by hand with two mbarriers per stage, a wait
parity flipped on every pass, an expected byte count and a shared-memory
offset per stage. The ring keeps all of that: it places the slots, counts the
bytes its copies deliver, counts the consumer warpgroups that read it, and
keeps each role's position (slot and phase) in registers, so the loop is a
plain loop over K and K need not be a multiple of the number of stages.

A consumer issues each product with ``acc.accumulate(a @ b, in_flight=1)``:
that call returns while the product still runs, so the tensor cores always
have the next product queued. The ring sees that one product is still in
flight when the ``with`` block ends, so it gives back the *previous* slot,
whose product has finished, and keeps this one until the next product (or
the epilogue's wait) retires it. A slot is never released while a wgmma may
still read it, and a ring too shallow for the products in flight is refused
while tracing.

The epilogue converts the accumulator to C's type, 64 columns at a time, into
a small staging tile laid out as C's TMA boxes, and stores each slice with
TMA while the next is converted. Blocks walk the tiles of C in groups of
``group_m`` tile rows, so that blocks running together share their A and B
tiles in L2. TMA reads past the edges of A and B as zeros and clips the
stores of C, so M, N and K need not be multiples of the tile.

Run it: ``python3 tutorials/ch5_gemm_warp_specialized.py``.
"""

import numpy as np

import nvdsl
from _chapter import run_gemm

BM, BN, BK = 128, 256, 64
BOX = 64                        # TMA boxes are 64 x 64 f16: one 128-byte swizzle row wide
CONSUMERS = 2                   # consumer warpgroups, BM // CONSUMERS rows each
ROWS = BM // CONSUMERS
STAGING_BYTES = 8 * 1024        # per consumer: one 64 x 64 box of C at a time


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def make_gemm(num_stages: int = 4, dtype=nvdsl.float16, group_m: int = 8):
    """C = A @ B (C float16, bfloat16 or float32; accumulated in float32) with ``num_stages`` ring slots."""

    @nvdsl.mlir_func
    def gemm(a, b, c):
        m, k_total = a.shape
        n = b.shape[1]
        a_tma = nvdsl.TMA(a, box=(ROWS, BK), swizzle=128)
        b_tma = nvdsl.TMA(b, box=(BK, BOX), swizzle=128)
        c_box = (ROWS, 128 // c.dtype.itemsize)            # one 128-byte swizzle row of C per box row
        c_tma = nvdsl.TMA(c, box=c_box, swizzle=128)
        steps, m_tiles, n_tiles = cdiv(k_total, BK), cdiv(m, BM), cdiv(n, BN)
        slice_cols = STAGING_BYTES // (ROWS * c.dtype.itemsize)

        @nvdsl.gpu_launch(grid=m_tiles * n_tiles, block=(1 + CONSUMERS) * 128)
        def kernel(ctx):
            ring = nvdsl.Aref(ctx, [((BM, BK), dtype), ((BK, BN), dtype)], depth=num_stages, name="ab")
            staging = [ctx.shared_array((ROWS, slice_cols), c.dtype, align=1024) for _ in range(CONSUMERS)]
            with nvdsl.when(ctx.thread_id.x.eq(0)):
                for tma in (a_tma, b_tma, c_tma):
                    tma.prefetch()

            # The block's tile of C, in L2-friendly order: blocks go down group_m tile rows, then right.
            tile, tiles_in_group = ctx.block_id.x, group_m * n_tiles
            first_m = tile // tiles_in_group * group_m
            rows_in_group = nvdsl.minimum(m_tiles - first_m, group_m)
            row0 = (first_m + tile % tiles_in_group % rows_in_group) * BM
            col0 = tile % tiles_in_group // rows_in_group * BN

            with nvdsl.Warpgroup(ctx, 0, register_size=40):
                for k in nvdsl.for_range(steps):
                    ring.put((a_tma, (row0, k * BK)), (b_tma, (k * BK, col0)))

            for i in range(CONSUMERS):
                with nvdsl.Warpgroup(ctx, 128 * (1 + i), register_size=232) as consumer:
                    @nvdsl.fori(0, steps, carry=nvdsl.WGMMAAccumulator(ROWS, BN))
                    def acc(k, acc):
                        with ring.get() as (a_tile, b_tile):
                            my_rows = a_tile.view((ROWS, BK), offset=i * ROWS * BK * dtype.itemsize)
                            acc.accumulate(nvdsl.WGMMAMatrix(my_rows, a_tma) @ nvdsl.WGMMAMatrix(b_tile, b_tma),
                                           in_flight=1)
                        return acc

                    leader = consumer.thread_index.eq(0)
                    for first in range(0, BN, slice_cols):
                        nvdsl.tma_store_wait(0)                  # the last slice's copy has read the staging tile
                        consumer.sync()
                        acc[:, first:first + slice_cols].store(staging[i], tma=c_tma)
                        nvdsl.fence_shared_to_async()
                        consumer.sync()
                        c_tma.store(staging[i], (row0 + i * ROWS, col0 + first), predicate=leader, wait=False)
                    nvdsl.tma_store_wait(0)

        kernel()

    return gemm


def main(m=512, n=512, k=1024, num_stages=4):
    run_gemm(make_gemm(num_stages), m, n, k, np.float16, max_relative_error=2e-3)   # C rounded to float16


if __name__ == "__main__":
    main()

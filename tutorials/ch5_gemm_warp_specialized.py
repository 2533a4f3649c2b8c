"""Chapter 5: a warp-specialized GEMM, where one warpgroup loads and two multiply.

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

They hand shared-memory stages to each other through two mbarriers per stage.
``full[s]`` completes when the stage's TMA bytes have landed; ``empty[s]``
completes when both consumers have finished reading it. The producer waits
on ``empty`` before refilling a stage, and a consumer waits on ``full``
before multiplying. Each use of a stage flips its barriers' phase, so the
wait parity is the use count modulo 2. On its first pass the producer waits
on parity 1, which a fresh barrier counts as already complete.

A consumer issues each product with ``acc.accumulate(a @ b, in_flight=1)``.
That call returns while the product still runs, and only after the previous
one has finished, which is the moment that previous stage can be released.
So the tensor cores always have the next product queued.

The epilogue converts the accumulator to C's type and writes it into shared
memory in the layout of C's TMA boxes. It reuses the stages, once both
consumers are done with them. One TMA store per box then writes C. Blocks
walk the tiles of C in groups of ``group_m`` tile rows, so that blocks
running together share their A and B tiles in L2.

Run it: ``python3 tutorials/ch5_gemm_warp_specialized.py``.
M must be a multiple of 128, N of 256, and K of ``64 * num_stages``.
"""

import numpy as np

import nvdsl
from _chapter import run_gemm

BM, BN, BK = 128, 256, 64
BOX = 64                        # TMA boxes are 64 x 64 f16: one 128-byte swizzle row wide
CONSUMERS = 2                   # consumer warpgroups, BM // CONSUMERS rows each
ROWS = BM // CONSUMERS


def make_gemm(num_stages: int = 4, dtype=nvdsl.float16, group_m: int = 8):
    """C = A @ B (C float16, bfloat16 or float32; accumulated in float32) with ``num_stages`` stages."""
    box_bytes = BOX * BK * 2
    a_bytes, b_bytes = BM * BK * 2, BK * BN * 2
    stage_bytes = a_bytes + b_bytes

    @nvdsl.mlir_func
    def gemm(a, b, c):
        m, k_total = a.shape
        n = b.shape[1]
        if m % BM or n % BN or k_total % (BK * num_stages):
            raise ValueError(f"M={m} must be a multiple of {BM}, N={n} of {BN}, K={k_total} of {BK * num_stages}")
        a_tma = nvdsl.TMA(a, box=(ROWS, BK), swizzle=128)
        b_tma = nvdsl.TMA(b, box=(BK, BOX), swizzle=128)
        c_box = (ROWS, 128 // c.dtype.itemsize)           # one 128-byte swizzle row of C per box row
        c_tma = nvdsl.TMA(c, box=c_box, swizzle=128)
        steps, m_tiles, n_tiles = k_total // BK, m // BM, n // BN
        epilogue_bytes = CONSUMERS * ROWS * BN * c.dtype.itemsize
        if epilogue_bytes > num_stages * stage_bytes:
            raise ValueError(f"the epilogue needs {epilogue_bytes} bytes; use more stages")

        @nvdsl.gpu_launch(grid=m_tiles * n_tiles, block=(1 + CONSUMERS) * 128, smem=num_stages * stage_bytes)
        def kernel(ctx):
            # Stage s: the A tile (the rows of consumer 0, then of consumer 1), then the B tile, BOX-wide boxes.
            stages = [ctx.dynamic_shared(stage_bytes, nvdsl.uint8, offset=s * stage_bytes, align=1024)
                      for s in range(num_stages)]
            a_tiles = [[st.view((ROWS, BK), dtype, offset=i * box_bytes) for i in range(CONSUMERS)]
                       for st in stages]
            b_tiles = [st.view((BK, BN), dtype, offset=a_bytes) for st in stages]
            b_boxes = [[st.view((BK, BOX), dtype, offset=a_bytes + j * box_bytes) for j in range(BN // BOX)]
                       for st in stages]
            full, empty = nvdsl.Mbarriers(num_stages), nvdsl.Mbarriers(num_stages)
            with nvdsl.when(ctx.thread_id.x.eq(0)):
                for s in range(num_stages):
                    full[s].init(1)
                    empty[s].init(CONSUMERS)
                for tma in (a_tma, b_tma, c_tma):
                    tma.prefetch()
            ctx.sync_threads()

            # The block's tile of C, in L2-friendly order: blocks go down group_m tile rows, then right.
            tile, tiles_in_group = ctx.block_id.x, group_m * n_tiles
            first_m = tile // tiles_in_group * group_m
            rows_in_group = nvdsl.minimum(m_tiles - first_m, group_m)
            row0 = (first_m + tile % tiles_in_group % rows_in_group) * BM
            col0 = tile % tiles_in_group // rows_in_group * BN

            with nvdsl.Warpgroup(ctx, 0, register_size=40) as producer:
                loader = producer.thread_index.eq(0)
                for group in nvdsl.for_range(steps // num_stages):
                    for s in range(num_stages):
                        k0 = (group * num_stages + s) * BK
                        empty[s].try_wait(group + 1)             # the consumers freed this stage
                        full[s].arrive(stage_bytes, predicate=loader)
                        for i in range(CONSUMERS):
                            a_tma.load(a_tiles[s][i], full[s], (row0 + i * ROWS, k0), predicate=loader)
                        for j in range(BN // BOX):
                            b_tma.load(b_boxes[s][j], full[s], (k0, col0 + j * BOX), predicate=loader)

            for i in range(CONSUMERS):
                with nvdsl.Warpgroup(ctx, 128 * (1 + i), register_size=232) as consumer:
                    releaser = consumer.thread_index.eq(0)

                    @nvdsl.fori(0, steps // num_stages, carry=nvdsl.WGMMAAccumulator(ROWS, BN))
                    def acc(group, acc):
                        for s in range(num_stages):
                            full[s].try_wait(group)
                            a_op = nvdsl.WGMMAMatrix(a_tiles[s][i], a_tma)
                            acc.accumulate(a_op @ nvdsl.WGMMAMatrix(b_tiles[s], b_tma), in_flight=1)
                            # The previous step's product is complete: give its stage back.
                            with nvdsl.when(releaser if s else releaser & (group > 0)):
                                empty[(s - 1) % num_stages].arrive()
                        return acc

                    nvdsl.wgmma_wait(0)
                    ctx.sync_threads(CONSUMERS * 128)            # both consumers are done with every stage
                    staging = ctx.dynamic_shared((ROWS, BN), c.dtype, offset=i * (epilogue_bytes // CONSUMERS),
                                                 align=1024)
                    acc.store(staging, tma=c_tma)
                    nvdsl.fence_shared_to_async()
                    consumer.sync()
                    box_bytes_c = ROWS * c_box[1] * c.dtype.itemsize
                    for j in range(BN // c_box[1]):
                        c_tma.store(staging.view(c_box, offset=j * box_bytes_c),
                                    (row0 + i * ROWS, col0 + j * c_box[1]), predicate=releaser)

        kernel()

    return gemm


def main(m=512, n=512, k=1024, num_stages=4):
    run_gemm(make_gemm(num_stages), m, n, k, np.float16, max_relative_error=2e-3)   # C rounded to float16


if __name__ == "__main__":
    main()

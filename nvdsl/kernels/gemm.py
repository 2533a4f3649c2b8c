"""A persistent, warp-specialized GEMM for Hopper: ``C = A @ B``.

This is tutorial chapter 5's kernel made persistent. The grid has one block
per SM, and each block walks its share of C's 128 x 256 tiles. The producer
warpgroup keeps loading the next tile's stages while the two consumer
warpgroups write the last tile out. The epilogue goes through a small
staging tile per consumer, in slices of columns, and its TMA stores overlap
the next tile's products. A block waits for its stores only before it
reuses the staging tile, and once at the end. Tiles are visited in groups of
``group_m`` tile rows, so that the blocks running at one time share their A
and B tiles in L2.

    from nvdsl.kernels.gemm import gemm
    gemm(a, b, c)      # a (M, K), b (K, N) float16/bfloat16; c (M, N) float16/bfloat16/float32

M must be a multiple of 128, N of 256 and K of ``64 * num_stages``.
"""

from __future__ import annotations

import functools

import nvdsl

BM, BN, BK = 128, 256, 64
CONSUMERS = 2                      # consumer warpgroups, ROWS rows of the tile each
ROWS = BM // CONSUMERS
BOX = 64                           # A and B boxes are 64 x 64: one 128-byte swizzle row of 16-bit values
STAGING_BYTES = 16 * 1024          # per consumer, for the epilogue
DEFAULT_SMS = 132                  # H100 SXM / H200 SXM, when no GPU is present to ask


def _sm_count() -> int:
    try:
        from ..runtime.device import get_device
        return get_device().info.multiprocessors
    except nvdsl.NoDeviceError:
        return DEFAULT_SMS


def make_gemm(*, num_stages: int = 4, dtype=nvdsl.float16, group_m: int = 8, sm_count: int | None = None):
    """A traced ``gemm(a, b, c)`` with ``num_stages`` shared-memory stages and at most ``sm_count`` blocks
    (default: the GPU's SM count)."""
    if num_stages < 2:
        raise ValueError(f"num_stages={num_stages} must be at least 2")
    sm_count = sm_count or _sm_count()
    box_bytes = BOX * BK * 2
    a_bytes, b_bytes = BM * BK * 2, BK * BN * 2
    stage_bytes = a_bytes + b_bytes
    stages_bytes = num_stages * stage_bytes

    @nvdsl.mlir_func
    def gemm(a, b, c):
        m, k_total = a.shape
        n = b.shape[1]
        if m % BM or n % BN or k_total % (BK * num_stages):
            raise ValueError(f"M={m} must be a multiple of {BM}, N={n} of {BN}, K={k_total} of {BK * num_stages}")
        item = c.dtype.itemsize
        c_box = (ROWS, 128 // item)                     # one 128-byte swizzle row of C per box row
        slice_cols = STAGING_BYTES // (ROWS * item)     # the accumulator columns one staging tile holds
        a_tma = nvdsl.TMA(a, box=(ROWS, BK), swizzle=128)
        b_tma = nvdsl.TMA(b, box=(BK, BOX), swizzle=128)
        c_tma = nvdsl.TMA(c, box=c_box, swizzle=128)
        m_tiles, n_tiles = m // BM, n // BN
        tiles, groups = m_tiles * n_tiles, k_total // (BK * num_stages)
        grid = min(tiles, sm_count)

        @nvdsl.gpu_launch(grid=grid, block=(1 + CONSUMERS) * 128, smem=stages_bytes + CONSUMERS * STAGING_BYTES)
        def kernel(ctx):
            stages = [ctx.dynamic_shared(stage_bytes, nvdsl.uint8, offset=s * stage_bytes, align=1024)
                      for s in range(num_stages)]
            a_tiles = [[st.view((ROWS, BK), dtype, offset=i * box_bytes) for i in range(CONSUMERS)]
                       for st in stages]
            b_tiles = [st.view((BK, BN), dtype, offset=a_bytes) for st in stages]
            b_boxes = [[st.view((BK, BOX), dtype, offset=a_bytes + j * box_bytes) for j in range(BN // BOX)]
                       for st in stages]
            staging = [ctx.dynamic_shared((ROWS, slice_cols), c.dtype, offset=stages_bytes + i * STAGING_BYTES,
                                          align=1024) for i in range(CONSUMERS)]
            full, empty = nvdsl.Mbarriers(num_stages), nvdsl.Mbarriers(num_stages)
            with nvdsl.when(ctx.thread_id.x.eq(0)):
                for s in range(num_stages):
                    full[s].init(1)
                    empty[s].init(CONSUMERS)
                for tma in (a_tma, b_tma, c_tma):
                    tma.prefetch()
            ctx.sync_threads()
            my_tiles = (tiles - 1 - ctx.block_id.x) // grid + 1

            def tile_origin(it):
                """The (row, col) of C where this block's tile number ``it`` starts (grouped order)."""
                tile, tiles_in_group = ctx.block_id.x + it * grid, group_m * n_tiles
                first_m = tile // tiles_in_group * group_m
                rows_in_group = nvdsl.minimum(m_tiles - first_m, group_m)
                in_group = tile % tiles_in_group
                return (first_m + in_group % rows_in_group) * BM, in_group // rows_in_group * BN

            with nvdsl.Warpgroup(ctx, 0, register_size=40) as producer:
                loader = producer.thread_index.eq(0)
                for it in nvdsl.for_range(my_tiles):
                    row0, col0 = tile_origin(it)
                    for group in nvdsl.for_range(groups):
                        uses = it * groups + group              # how often each stage was filled before
                        for s in range(num_stages):
                            k0 = (group * num_stages + s) * BK
                            empty[s].try_wait(uses + 1)
                            full[s].arrive(stage_bytes, predicate=loader)
                            for i in range(CONSUMERS):
                                a_tma.load(a_tiles[s][i], full[s], (row0 + i * ROWS, k0), predicate=loader)
                            for j in range(BN // BOX):
                                b_tma.load(b_boxes[s][j], full[s], (k0, col0 + j * BOX), predicate=loader)

            for i in range(CONSUMERS):
                with nvdsl.Warpgroup(ctx, 128 * (1 + i), register_size=232) as consumer:
                    leader = consumer.thread_index.eq(0)
                    for it in nvdsl.for_range(my_tiles):
                        row0, col0 = tile_origin(it)

                        @nvdsl.fori(0, groups, carry=nvdsl.WGMMAAccumulator(ROWS, BN))
                        def acc(group, acc):
                            for s in range(num_stages):
                                full[s].try_wait(it * groups + group)
                                a_op = nvdsl.WGMMAMatrix(a_tiles[s][i], a_tma)
                                acc.accumulate(a_op @ nvdsl.WGMMAMatrix(b_tiles[s], b_tma), in_flight=1)
                                with nvdsl.when(leader if s else leader & (group > 0)):
                                    empty[(s - 1) % num_stages].arrive()
                            return acc

                        nvdsl.wgmma_wait(0)
                        with nvdsl.when(leader):
                            empty[num_stages - 1].arrive()
                        for first in range(0, BN, slice_cols):
                            nvdsl.tma_store_wait(0)             # the staging tile's last copy has read it
                            consumer.sync()
                            acc[:, first:first + slice_cols].store(staging[i], tma=c_tma)
                            nvdsl.fence_shared_to_async()
                            consumer.sync()
                            for j in range(slice_cols // c_box[1]):
                                box = staging[i].view(c_box, offset=j * ROWS * c_box[1] * item)
                                c_tma.store(box, (row0 + i * ROWS, col0 + first + j * c_box[1]),
                                            predicate=leader, wait=False)
                    nvdsl.tma_store_wait(0)

        kernel()

    return gemm


@functools.lru_cache(maxsize=None)
def _cached(num_stages: int, dtype_name: str):
    return make_gemm(num_stages=num_stages, dtype=getattr(nvdsl, dtype_name))


def gemm(a, b, c, *, num_stages: int = 4) -> None:
    """``c[:] = a @ b`` with the persistent warp-specialized kernel (one compiled kernel per dtype and shape)."""
    dtype = getattr(a, "dtype", None)
    name = str(dtype).removeprefix("torch.")
    if name not in ("float16", "bfloat16"):
        raise nvdsl.ArgumentError(f"gemm needs float16 or bfloat16 A and B, got {dtype}", code="bad-dtype")
    _cached(num_stages, name)(a, b, c)

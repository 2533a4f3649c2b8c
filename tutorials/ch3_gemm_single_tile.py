"""Chapter 3: one tile of a GEMM on the tensor cores, C = A @ B, 128 x 128 x 64.

Hopper's warpgroup MMA (``wgmma``) multiplies matrices that sit in shared
memory and accumulates into registers spread over a *warpgroup*, the 128
threads of four consecutive warps. nvdsl exposes it in three steps:

1. ``nvdsl.WGMMAMatrix(tile, tma)`` describes an operand tile in shared
   memory. The layout comes from the TMA descriptor that loaded the tile:
   with ``swizzle=128`` the TMA lays rows out in the 128-byte swizzled
   pattern that wgmma reads without bank conflicts. A is an (M, K) tile with
   K contiguous. B is a (K, N) tile with N contiguous, or an (N, K) tile
   passed with ``transposed=True``.
2. ``acc = nvdsl.WGMMAAccumulator(128, 128)`` makes an f32 accumulator in
   registers (zeroed).
3. ``acc += A @ B`` issues the ``wgmma.mma_async`` instructions (M = 128 is
   two m64 rows of instructions, K = 64 is four k16 steps), fences them and
   waits for them. ``acc.store(c)`` writes the result.

A 128-byte swizzle holds rows of at most 64 f16 values. So the 64 x 128 B
tile is loaded as two 64 x 64 boxes, placed one after the other in shared
memory: exactly the layout wgmma expects for an N-major operand. Tiles that
use the 128-byte swizzle must start on 1024-byte boundaries (``align=1024``).

Run it: ``python3 tutorials/ch3_gemm_single_tile.py``. The PTX holds
``wgmma.mma_async``, and the SASS holds ``HGMMA`` and ``UTMALDG``.
"""

import numpy as np

import nvdsl
from _chapter import run_and_verify

M, N, K = 128, 128, 64
HALF = 64                           # a 128-byte swizzle row holds 64 f16 values


@nvdsl.mlir_func
def gemm_tile(a, b, c):
    a_tma = nvdsl.TMA(a, box=(M, K), swizzle=128)
    b_tma = nvdsl.TMA(b, box=(K, HALF), swizzle=128)
    a_bytes, b_bytes = M * K * 2, K * N * 2

    @nvdsl.gpu_launch(grid=1, block=128, smem=a_bytes + b_bytes)
    def kernel(ctx):
        a_tile = ctx.dynamic_shared((M, K), nvdsl.float16, align=1024)
        b_tile = ctx.dynamic_shared((K, N), nvdsl.float16, align=1024)
        # The two TMA boxes of B, as views over the halves of b_tile.
        b_left = ctx.dynamic_shared((K, HALF), nvdsl.float16, offset=a_bytes)
        b_right = ctx.dynamic_shared((K, HALF), nvdsl.float16, offset=a_bytes + K * HALF * 2)

        loaded = nvdsl.Mbarriers(1)[0]
        leader = ctx.thread_id.x.eq(0)
        loaded.init(1, predicate=leader)
        ctx.sync_threads()
        loaded.arrive(a_bytes + b_bytes, predicate=leader)
        a_tma.load(a_tile, loaded, (0, 0), predicate=leader)
        b_tma.load(b_left, loaded, (0, 0), predicate=leader)
        b_tma.load(b_right, loaded, (0, HALF), predicate=leader)
        loaded.try_wait(0)

        acc = nvdsl.WGMMAAccumulator(M, N)
        acc += nvdsl.WGMMAMatrix(a_tile, a_tma) @ nvdsl.WGMMAMatrix(b_tile, b_tma)
        acc.store(c)

    kernel()


def main():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)

    def verify():
        np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)

    run_and_verify(gemm_tile, (a, b, c), verify)


if __name__ == "__main__":
    main()

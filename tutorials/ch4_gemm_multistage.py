"""Chapter 4: a multistage GEMM, where TMA loads run ahead of the tensor cores.

Chapter 3 loaded once and multiplied once. A full GEMM walks K in 64-wide
steps. If every step waited for its own load, the tensor cores would sit idle
during each copy. A *software pipeline* keeps ``num_stages`` tiles of A and B
in shared memory, each with its own mbarrier. While the warpgroup multiplies
stage ``s``, the TMA is already filling the stages that come next.

* Prologue: start the loads of the first ``num_stages - 1`` K-steps.
* Step ``k``: wait for stage ``k % num_stages``. Its mbarrier phase flips
  each time the stage is reused, so wait on the parity
  ``(k // num_stages) % 2``. Then multiply, and, once every thread is done
  with the stage freed last step, start the load of step
  ``k + num_stages - 1`` into it.

The Python loop over stages is unrolled while tracing, so every stage keeps
static shared-memory views. The traced ``nvdsl.fori`` walks groups of
``num_stages`` steps and carries the accumulator. Each CTA computes one
128 x 128 tile of C with one warpgroup. M and N must be multiples of 128, and
K a multiple of ``64 * num_stages``.

Run it: ``python3 tutorials/ch4_gemm_multistage.py``.
"""

import numpy as np

import nvdsl
from _chapter import run_gemm

BM, BN, BK = 128, 128, 64
HALF = 64                                   # a 128-byte swizzle row holds 64 f16 values


def make_gemm(num_stages: int = 4, dtype=nvdsl.float16):
    """C (f32) = A @ B with ``num_stages`` shared-memory stages."""

    @nvdsl.mlir_func
    def gemm(a, b, c):
        m, k_total = a.shape
        n = b.shape[1]
        if m % BM or n % BN or k_total % (BK * num_stages):
            raise ValueError(f"M={m} and N={n} must be multiples of {BM}, K={k_total} a multiple of "
                             f"{BK * num_stages}")
        a_tma = nvdsl.TMA(a, box=(BM, BK), swizzle=128)
        b_tma = nvdsl.TMA(b, box=(BK, HALF), swizzle=128)
        a_bytes, b_bytes = BM * BK * 2, BK * BN * 2
        stage_bytes = a_bytes + b_bytes
        steps = k_total // BK

        @nvdsl.gpu_launch(grid=(n // BN, m // BM), block=128, smem=num_stages * stage_bytes)
        def kernel(ctx):
            a_tiles, b_tiles, b_halves = [], [], []
            for s in range(num_stages):
                base = s * stage_bytes
                a_tiles.append(ctx.dynamic_shared((BM, BK), dtype, offset=base, align=1024))
                b_tiles.append(ctx.dynamic_shared((BK, BN), dtype, offset=base + a_bytes, align=1024))
                b_halves.append([ctx.dynamic_shared((BK, HALF), dtype, offset=base + a_bytes + h * BK * HALF * 2)
                                 for h in (0, 1)])
            full = nvdsl.Mbarriers(num_stages)
            leader = ctx.thread_id.x.eq(0)
            row0, col0 = ctx.block_id.y * BM, ctx.block_id.x * BN

            def load(step, s):
                """Start the TMA loads of K-step ``step`` into stage ``s`` (the leader thread only)."""
                full[s].arrive(stage_bytes, predicate=leader)
                a_tma.load(a_tiles[s], full[s], (row0, step * BK), predicate=leader)
                for h in (0, 1):
                    b_tma.load(b_halves[s][h], full[s], (step * BK, col0 + h * HALF), predicate=leader)

            for s in range(num_stages):
                full[s].init(1, predicate=leader)
            a_tma.prefetch(predicate=leader)
            b_tma.prefetch(predicate=leader)
            ctx.sync_threads()
            for s in range(num_stages - 1):
                load(s, s)

            @nvdsl.fori(0, steps // num_stages, carry=nvdsl.WGMMAAccumulator(BM, BN))
            def acc(group, acc):
                for s in range(num_stages):
                    step = group * num_stages + s
                    full[s].try_wait(group)             # the parity of this stage's use count
                    acc += nvdsl.WGMMAMatrix(a_tiles[s], a_tma) @ nvdsl.WGMMAMatrix(b_tiles[s], b_tma)
                    ctx.sync_threads()                  # every thread is past the stage freed last step
                    ahead = step + num_stages - 1
                    with nvdsl.when(ahead < steps):
                        load(ahead, (s + num_stages - 1) % num_stages)
                return acc
            acc.store(c, at=(row0, col0))

        kernel()

    return gemm


def main(m=512, n=384, k=1024, num_stages=4):
    run_gemm(make_gemm(num_stages), m, n, k, np.float32, max_relative_error=1e-3)


if __name__ == "__main__":
    main()

"""Argument tiles in a task's tile math: a residual added to a product in the epilogue (``C = A @ B + R``, as
a transformer block's output projection adds its input), under the library's mappings, on ragged shapes, in the
interpreter and on the GPU."""

import numpy as np
import pytest

import nvdsl.tasks as nt
from nvdsl.kernels.gemm import MAPPING, PINGPONG_MAPPING, TILE_64x128_MAPPING

f16 = np.float16


@nt.task(reads=("A", "B", "R"), writes=("C",))
def matmul_residual(C, A, B, R):
    BM, BN, BK = nt.tunable("BM", 128), nt.tunable("BN", 256), nt.tunable("BK", 64)
    Ct, At, Bt, Rt = nt.blocks(C, (BM, BN)), nt.blocks(A, (BM, BK)), nt.blocks(B, (BK, BN)), nt.blocks(R, (BM, BN))
    for i, j in nt.prange(*Ct.grid):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in nt.srange(At.grid[1]):
            acc += At[i, k] @ Bt[k, j]
        Ct[i, j] = (acc + Rt[i, j]).astype(C.dtype)


MAPPINGS = {"cooperative 128x256": MAPPING, "one consumer 64x128": TILE_64x128_MAPPING,
            "ping-pong 128x128": PINGPONG_MAPPING}


@pytest.mark.parametrize("mapping", sorted(MAPPINGS))
def test_a_residual_added_in_the_epilogue(mapping, backend):
    """Rows and columns past the ends (200 x 296 against 128 x 256 tiles) read as 0 and are never stored. The
    tolerance is the arithmetic's: float16 output (half an ulp, 2^-11 relative) after float32 sums
    (gamma_K <= 2^-11 for K <= 4096), both relative to |A| @ |B| + |R|."""
    rng = np.random.default_rng(3)
    m, n, k = 200, 296, 192
    a, b = rng.standard_normal((m, k)).astype(f16), rng.standard_normal((k, n)).astype(f16)
    r = rng.standard_normal((m, n)).astype(f16)
    c = np.full((m, n), np.nan, f16)
    nt.build(matmul_residual, MAPPINGS[mapping].replace(sm_count=3))(c, a, b, r)
    a64, b64, r64 = a.astype(np.float64), b.astype(np.float64), r.astype(np.float64)
    scale = np.abs(a64) @ np.abs(b64) + np.abs(r64)
    excess = np.abs(c.astype(np.float64) - (a64 @ b64 + r64)) - 2.0 ** -10 * scale
    assert np.isfinite(c).all() and (excess <= 0).all(), np.unravel_index(np.argmax(excess), excess.shape)

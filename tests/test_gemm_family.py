"""The GEMM family's fused programs on the CPU: row sums through the tensor cores (a product with a tile of
ones in the A tile's wgmma group) in the interpreter against a float32 reference, the CUDA-core path kept for
sums that do not qualify, and the PTX/SASS of the row sums and the dual GEMM (HGMMA per K step, no spills)."""

import re
from collections import Counter

import numpy as np
import pytest

import nvdsl.tasks as nt
from nvdsl.compiler.toolchain import find_tool
from nvdsl.kernels.gemm import MAPPING, gated_mlp, gated_mlp_nk, matmul_rowsum
from test_tasks import golden

f16, f32 = np.float16, np.float32


def rowsum_args(m, n, k, bn=256, rng=None):
    rng = rng or np.random.default_rng(0)
    a, b = rng.standard_normal((m, k)).astype(f16), rng.standard_normal((k, n)).astype(f16)
    return np.full((m, n), np.nan, f16), np.full((-(-n // bn), m), np.nan, f32), a, b


@nt.task(reads=("A", "B", "X"), writes=("C", "Y"))
def matmul_and_other_rowsum(C, Y, A, B, X):
    """Row sums of X, which no product reads: they stay on the CUDA cores."""
    BM, BN, BK = nt.tunable("BM", 128), nt.tunable("BN", 256), nt.tunable("BK", 64)
    Ct, Yt, At, Bt, Xt = (nt.blocks(C, (BM, BN)), nt.blocks(Y, (1, BM)), nt.blocks(A, (BM, BK)),
                          nt.blocks(B, (BK, BN)), nt.blocks(X, (BM, BK)))
    for i, j in nt.prange(*Ct.grid):
        acc, rows = nt.zeros((BM, BN), nt.float32), nt.zeros((BM,), nt.float32, name="rows")
        for k in nt.srange(At.grid[1]):
            acc += At[i, k] @ Bt[k, j]
            rows += Xt[i, k].sum(axis=1)
        Ct[i, j] = acc.astype(C.dtype)
        Yt[j, i] = rows


def test_row_sums_of_a_product_s_a_tile_go_through_the_tensor_cores(request):
    kernel = nt.build(matmul_rowsum, MAPPING.replace(sm_count=132))
    args = rowsum_args(1000, 2040, 520)
    text = kernel.explain(*args)
    golden("tasks_rowsum.schedule.txt", text, request)
    schedule = kernel.plan(*args)
    ones, = schedule.ones
    assert ones.shape == (8, 64) and ones.sums == ("rows += sum(A_s0, axis=1)",)
    assert "mma rows_sums += A_s0 @ ones.T" in text and "rows += rows_sums[:, 0]" in text
    assert "ones (whole kernel)" in text and "sum(A_s0" not in text.split("row sums on the tensor cores")[0]


def test_row_sums_that_do_not_qualify_stay_on_the_cuda_cores():
    c, y, a, b = rowsum_args(256, 256, 128)
    x = np.random.default_rng(1).standard_normal(a.shape).astype(f16)
    kernel = nt.build(matmul_and_other_rowsum, MAPPING.replace(sm_count=2, pipeline=3))
    schedule = kernel.plan(c, y, a, b, x)
    assert schedule.ones == () and "sum(X_s0, axis=1)" in nt.schedule.explain(schedule)
    kernel.with_options(backend="interpret")(c, y, a, b, x)
    np.testing.assert_allclose(y, np.broadcast_to(x.astype(np.float64).sum(axis=1), y.shape), rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("mapping", [
    MAPPING.replace(sm_count=2),
    nt.Mapping(warp_specialize=False, persistent=False, pipeline=2, tiles={"BN": 128}),
    nt.Mapping(schedule="pingpong", tiles={"BN": 128}, sm_count=2),
], ids=["ws-cooperative", "multistage", "pingpong"])
def test_row_sums_on_the_tensor_cores_match_a_float32_reference_in_the_interpreter(mapping):
    bn = mapping.tile_values().get("BN", 256)
    c, y, a, b = rowsum_args(200, 304, 200, bn)        # ragged M, N and K: TMA reads zeros past the edges
    kernel = nt.build(matmul_rowsum, mapping)
    assert kernel.plan(c, y, a, b).ones
    kernel.with_options(backend="interpret")(c, y, a, b)
    np.testing.assert_allclose(c.astype(f32), a.astype(f32) @ b.astype(f32), rtol=2e-3, atol=2e-2)
    np.testing.assert_allclose(y, np.broadcast_to(a.astype(np.float64).sum(axis=1), y.shape), rtol=1e-5, atol=1e-3)


def hgmma_shapes(sass: str) -> Counter:
    return Counter(re.findall(r"HGMMA\.(\d+x\d+x\d+)\.F32", sass))


def k_loop(sass: str) -> str:
    """The SASS of the first consumer's K loop: from its first HGMMA back to the loop's WARPGROUP.ARRIVE,
    on to the wait that closes its wgmma group."""
    start = sass.rfind("WARPGROUP.ARRIVE", 0, sass.find("HGMMA"))
    return sass[start:sass.find("WARPGROUP.DEPBAR", start)]


@pytest.mark.skipif(not find_tool("nvdisasm"), reason="needs nvdisasm")
def test_row_sums_add_one_narrow_product_per_k16_step_and_no_spills():
    m = 8192
    args = (np.zeros((m, m), f16), np.zeros((32, m), f32), np.zeros((m, 4096), f16), np.zeros((4096, m), f16))
    compiled = nt.build(matmul_rowsum, MAPPING.replace(sm_count=132)).compile(*args)
    resources, = compiled.resources.values()
    assert resources.spill_stores == 0 and resources.stack_frame == 0
    loop = k_loop(compiled.sass())
    # per 64-wide K step and consumer: 4 x m64n256k16 of the product and 4 x m64n8k16 of the sums, one group
    assert hgmma_shapes(loop) == {"64x256x16": 4, "64x8x16": 4}, loop
    assert loop.count("WARPGROUP.ARRIVE") == 1 and "LDS" not in loop


# --- the dual GEMM: two products sharing A issue as one --------------------------------------------------

def gated_args(m, n, k, k_major=False, rng=None):
    rng = rng or np.random.default_rng(2)
    a = (rng.standard_normal((m, k)) / 8).astype(f16)
    w1, w2 = (rng.standard_normal((n, k) if k_major else (k, n)).astype(f16) for _ in range(2))
    return np.full((m, n), np.nan, f16), a, w1, w2


def test_the_dual_gemm_s_products_issue_as_one(request):
    kernel = nt.build(gated_mlp, MAPPING.replace(tiles={"BN": 128}, sm_count=132))
    args = gated_args(1000, 1000, 520)
    golden("tasks_gated_mlp.schedule.txt", kernel.explain(*args), request)
    joined, = kernel.plan(*args).joined
    assert joined.accumulators == ("gate", "up") and joined.columns == (128, 128) and joined.axis == 1
    # a product that reads another A tile, or an accumulator the loop reads, keeps its own wgmma
    assert nt.build(matmul_rowsum, MAPPING).plan(*rowsum_args(256, 256, 128)).joined == ()


@pytest.mark.parametrize("program, mapping", [
    (gated_mlp, MAPPING.replace(tiles={"BN": 128}, sm_count=2)),
    (gated_mlp, nt.Mapping(warp_specialize=False, persistent=False, pipeline=2, tiles={"BN": 64})),
    (gated_mlp_nk, MAPPING.replace(tiles={"BN": 128}, sm_count=2)),
], ids=["ws-cooperative", "multistage-64", "k-major"])
def test_the_joined_dual_gemm_matches_a_float32_reference_in_the_interpreter(program, mapping):
    c, a, w1, w2 = gated_args(200, 264, 200, k_major=program is gated_mlp_nk)
    kernel = nt.build(program, mapping)
    assert kernel.plan(c, a, w1, w2).joined
    kernel.with_options(backend="interpret")(c, a, w1, w2)
    t = (lambda w: w.T) if program is gated_mlp_nk else (lambda w: w)
    gate, up = (a.astype(f32) @ t(w).astype(f32) for w in (w1, w2))
    reference = gate / (1 + np.exp(-gate)) * up
    assert np.linalg.norm(c.astype(f32) - reference) / np.linalg.norm(reference) < 2e-3


@pytest.mark.skipif(not find_tool("nvdisasm"), reason="needs nvdisasm")
def test_the_dual_gemm_issues_the_plain_gemm_s_wgmma_per_k_step_without_spills():
    m, k = 8192, 4096
    args = (np.zeros((m, m), f16), np.zeros((m, k), f16), np.zeros((k, m), f16), np.zeros((k, m), f16))
    compiled = nt.build(gated_mlp, MAPPING.replace(tiles={"BN": 128}, sm_count=132)).compile(*args)
    resources, = compiled.resources.values()
    assert resources.spill_stores == 0 and resources.stack_frame == 0
    assert "C7514" not in compiled.module.ptxas_log          # no serialized products
    loop = k_loop(compiled.sass())
    # per 64-wide K step and consumer: gate and up as 4 x m64n256k16 (not 8 x m64n128k16), one group
    assert hgmma_shapes(loop) == {"64x256x16": 4}, loop
    assert loop.count("WARPGROUP.ARRIVE") == 1

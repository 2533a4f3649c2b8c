"""Any M, N and K: an argument whose rows TMA cannot address (a row stride that is not a multiple of 16 bytes)
goes through a staging copy whose rows are padded (nvdsl.tasks.staging); results are those of the product."""

import os

import numpy as np
import pytest

import nvdsl
import nvdsl.kernels.gemm as library
import nvdsl.tasks as nt
from nvdsl.tasks import staging
from nvdsl.tasks.ir import Affine, Loop, Region
from nvdsl.testing import assert_matches_golden, requires_gpu
from helpers import assert_product_close, product_error_bound

SENTINEL = 7.0
GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")


def operands(rng, lead, m, n, k, out=np.float16):
    a = rng.standard_normal(lead + (m, k)).astype(np.float16)
    b = rng.standard_normal(lead + (k, n)).astype(np.float16)
    return a, b, np.zeros(lead + (m, n), out)


@pytest.mark.parametrize("m, n, k", [(100, 130, 999), (64, 65, 70), (1, 129, 9), (16, 40, 1100)])
def test_gemm_takes_any_m_n_and_k(backend, m, n, k):
    a, b, c = operands(np.random.default_rng(m + n + k), (), m, n, k)
    library.gemm(a, b, c)
    assert_product_close(c, a, b)


def test_gemm_with_b_stored_n_by_k_and_an_odd_k(backend):
    rng = np.random.default_rng(1)
    a, b, c = operands(rng, (), 70, 96, 93, np.float32)
    library.gemm(a, np.ascontiguousarray(b.T), c, b_layout="NK")
    assert_product_close(c, a, b)


def test_batched_gemm_with_odd_extents(backend):
    a, b, c = operands(np.random.default_rng(2), (2,), 65, 33, 77)
    library.gemm(a, b, c)
    for i in range(2):
        assert_product_close(c[i], a[i], b[i])


def test_linear_with_an_odd_output_width(backend):
    rng = np.random.default_rng(3)
    m, n, k = 64, 130, 72
    a = rng.standard_normal((m, k)).astype(np.float16)
    w = rng.standard_normal((n, k)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    library.linear(a, w, np.zeros(n, np.float16), c, activation="relu")
    exact = np.maximum(a.astype(np.float64) @ w.T.astype(np.float64), 0)
    assert (np.abs(c - exact) <= product_error_bound(a, w.T, np.float32)).all()


def test_grouped_gemm_with_an_odd_k_and_n(backend):
    rng = np.random.default_rng(4)
    sizes, k, n = [30, 70], 45, 67
    a = rng.standard_normal((sum(sizes), k)).astype(np.float16)
    b = rng.standard_normal((2, k, n)).astype(np.float16)
    c = np.full((sum(sizes), n), SENTINEL, np.float16)
    library.grouped_gemm(a, b, c, sizes)
    assert_product_close(c[:30], a[:30], b[0])
    assert_product_close(c[30:], a[30:], b[1])


def test_an_output_view_with_odd_row_strides_keeps_what_lies_between_its_rows(backend):
    """c is a column slice of a wider buffer, its rows 2 * 131 bytes apart: staged, and only its own elements
    copied back."""
    rng = np.random.default_rng(5)
    a, b, _ = operands(rng, (), 64, 96, 64)
    out = np.full((64, 131), SENTINEL, np.float16)
    c = out[:, 20:116]
    library.gemm(a, b, c)
    assert_product_close(c, a, b)
    assert (out[:, :20] == SENTINEL).all() and (out[:, 116:] == SENTINEL).all()


def test_only_arguments_tma_cannot_address_are_staged_and_whole_outputs_are_not_copied_in():
    rng = np.random.default_rng(6)
    kernel = library._kernel(library.matmul, library.default_mapping(64, 65))
    a, b, c = operands(rng, (), 64, 64, 64)
    assert sorted(kernel.compile(c, a, b).resources) == ["matmul_kernel"]
    # A (K = 70), B and C (N = 65) are staged: A and B copied in, C (its tiles cover it) only copied out
    a, b, c = operands(rng, (), 64, 65, 70)
    assert sorted(kernel.compile(c, a, b).resources) == ["matmul_copy_kernel", "matmul_copy_kernel_2",
                                                         "matmul_copy_kernel_3", "matmul_kernel"]
    batched = library._kernel(library.batched_matmul, library.default_mapping(64, 65, 2))
    a, b, c = operands(rng, (2,), 64, 65, 64)
    assert sorted(batched.compile(c, a, b).resources) == ["batched_matmul_copy_kernel",
                                                          "batched_matmul_copy_kernel_2", "batched_matmul_kernel"]


def test_the_explanation_names_the_staged_arguments_and_why(request):
    """kernel.explain() ends with the arguments that go through staging copies, why and which ways (golden)."""
    kernel = library._kernel(library.matmul, library.default_mapping(64, 65).replace(sm_count=132))
    a, b, c = operands(np.random.default_rng(9), (), 64, 65, 70)
    text = kernel.explain(c, a, b)
    assert_matches_golden(text, os.path.join(GOLDEN, "tasks_matmul_staged.schedule.txt"),
                          update=request.config.getoption("--update-golden"))
    a, b, c = operands(np.random.default_rng(9), (), 64, 64, 64)
    assert "staging copies" not in kernel.explain(c, a, b)


def test_a_device_array_starting_off_a_16_byte_boundary_is_staged():
    """TMA needs a 16-byte aligned start: a view two bytes in (x[:, 1:] of a float16 x) is its own signature,
    traced with a staging copy; the aligned array keeps the kernel without one."""
    from helpers import FakeDLPackDeviceArray
    from nvdsl.arguments import signature_key
    f16, f32 = (2, 16), (2, 32)                                  # DLPack (code, bits)
    kernel = library._kernel(library.matmul, library.default_mapping(64, 64))
    aligned, off = FakeDLPackDeviceArray((64, 64), *f16), FakeDLPackDeviceArray((64, 64), *f16, pointer=0x7F0000000002)
    b, c = FakeDLPackDeviceArray((64, 64), *f16), FakeDLPackDeviceArray((64, 64), *f32)
    assert signature_key(aligned) != signature_key(off)
    assert sorted(kernel.compile(c, aligned, b).resources) == ["matmul_kernel"]
    assert sorted(kernel.compile(c, off, b).resources) == ["matmul_copy_kernel", "matmul_kernel"]


def test_coverage_needs_one_box_per_parallel_index_reaching_the_end():
    p = Loop("prange", ("p0", "p1"), (2, 3), ())
    s = Loop("srange", ("k0",), (4,), ())
    tile = lambda r, c: Region("C", (Affine.var("p0") * r, Affine.var("p1") * c), (r, c))
    assert staging.covers(tile(64, 128), (p,), (128, 300))
    assert not staging.covers(tile(64, 128), (p,), (129, 300))           # two row tiles of 64 stop at 128
    assert not staging.covers(tile(64, 128), (p, s), (128, 300))         # written in a sequential loop
    assert staging.covers(Region("C", (Affine.of(0), Affine.var("p1") * 128), (256, 128)), (p,), (200, 300))
    assert not staging.covers(Region("C", (Affine.of(1), Affine.var("p1") * 128), (256, 128)), (p,), (200, 300))


def test_a_task_program_stages_any_argument_it_moves_by_tma(backend):
    """A task of the user's, not the library's: odd shapes go through the same staging."""
    @nt.task(reads=("A", "B"), writes=("C",))
    def double_product(C, A, B):
        BM, BN, BK = nt.tunable("BM", 64), nt.tunable("BN", 64), nt.tunable("BK", 64)
        Ct, At, Bt = nt.blocks(C, (BM, BN)), nt.blocks(A, (BM, BK)), nt.blocks(B, (BK, BN))
        for i, j in nt.prange(*Ct.grid):
            acc = nt.zeros((BM, BN), nt.float32)
            for k in nt.srange(At.grid[1]):
                acc += At[i, k] @ Bt[k, j]
            Ct[i, j] = (acc * 2.0).astype(C.dtype)

    kernel = nt.build(double_product, nt.Mapping(tiles={"BM": 64, "BN": 64, "BK": 64}, consumers=1))
    a, b, c = operands(np.random.default_rng(7), (), 70, 33, 101, np.float32)
    kernel(c, a, b)
    assert_product_close(c / 2, a, b)


def test_float8_operands_with_rows_tma_cannot_address_are_staged():
    """A scaled (float8) GEMM with K = 200: rows of 200 bytes; both operands go through staging copies of
    one-byte elements (compiled here; run on the GPU in test_tasks' float8 cases)."""
    from helpers import FakeDLPackDeviceArray
    e4m3, f32 = (10, 8), (2, 32)                                # DLPack (code, bits)
    a, b = FakeDLPackDeviceArray((128, 200), *e4m3), FakeDLPackDeviceArray((256, 200), *e4m3)
    c, scale = FakeDLPackDeviceArray((128, 256), *f32), FakeDLPackDeviceArray((1,), *f32)
    compiled = library._kernel(library.scaled_matmul, library.FP8_MAPPING).compile(c, a, b, scale, scale)
    assert sorted(compiled.resources) == ["scaled_matmul_copy_kernel", "scaled_matmul_copy_kernel_2",
                                          "scaled_matmul_kernel"] and compiled.cubin is not None


@requires_gpu
def test_float8_gemm_of_a_column_slice_on_the_gpu():
    torch = pytest.importorskip("torch")
    gen = torch.Generator(device="cuda").manual_seed(3)
    m, n, k = 200, 256, 256
    wide = (torch.randn(m, k + 48, device="cuda", generator=gen) * 2).to(torch.float8_e4m3fn)
    a = wide[:, 16:16 + k]                                       # rows 304 bytes apart, 16 bytes in
    b = (torch.randn(n, k, device="cuda", generator=gen) * 2).to(torch.float8_e4m3fn)
    one = torch.ones(1, device="cuda")
    c = torch.full((m, n), float("nan"), device="cuda")
    library.scaled_gemm(a, b, c, one, one)
    reference = a.float() @ b.float().T
    assert float((c - reference).norm() / reference.norm()) < 1e-3      # float8 products' ~14-bit accumulation


@requires_gpu
def test_lm_head_and_odd_shapes_on_the_gpu():
    torch = pytest.importorskip("torch")
    gen = torch.Generator(device="cuda").manual_seed(0)
    for m, n, k in [(256, 50257, 768), (4095, 4095, 4095), (16, 8192, 999)]:
        a = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
        w = torch.randn(n, k, device="cuda", generator=gen).to(torch.bfloat16)
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        library.gemm(a, w.T, c)
        exact = a.double() @ w.double().T
        # product_error_bound's terms, on the GPU: float32 sums of K products, then bfloat16's rounding
        u32, u16 = 2.0 ** -24, 2.0 ** -8
        accumulated = k * u32 / (1 - k * u32) * (a.double().abs() @ w.double().abs().T)
        bound = accumulated + u16 * (exact.abs() + accumulated) + 2.0 ** -133
        assert float(((c.double() - exact).abs() - bound).max()) <= 0, (m, n, k)

"""Strided arrays: views (sliced, transposed, permuted, packed) are taken as they are, through their strides,
in plain kernels, TMA descriptors and the library (GEMM family, attention); views kernels cannot take are
refused with the way out."""

import numpy as np
import pytest

import nvdsl
import nvdsl.kernels.gemm as library
from nvdsl.arguments import describe, signature_key, view_strides
from nvdsl.kernels.attention import attention
from nvdsl.signature import TensorMapSpec, span_elements
from nvdsl.target import rule_violations, vector_problem
from nvdsl.testing import requires_gpu
from helpers import assert_product_close, product_error_bound, roundoff
from test_attention import check as check_attention

SENTINEL = 7.0


@nvdsl.mlir_func
def axpy2d(x, y, alpha):
    rows, cols = x.shape

    @nvdsl.gpu_launch(grid=(rows, 1, 1), block=(32, 1, 1))
    def kernel(ctx):
        i = ctx.block_id.x
        for j in nvdsl.for_range(ctx.thread_id.x, cols, 32):
            y[i, j] = alpha * x[i, j] + y[i, j]
    kernel()


def inside(base, view):
    """A mask of ``base``'s elements that ``view`` (a view of it) covers."""
    mask = np.zeros(base.shape, bool)
    flat = np.arange(base.size).reshape(base.shape)
    covered = np.lib.stride_tricks.as_strided(flat.ravel()[_first(base, view):], view.shape,
                                              [s // view.itemsize * flat.itemsize for s in view.strides])
    mask.ravel()[covered.ravel()] = True
    return mask


def _first(base, view) -> int:
    return (view.ctypes.data - base.ctypes.data) // base.itemsize


# --- describing views --------------------------------------------------------------------------------------

def test_views_key_by_their_strides_and_row_major_ones_as_before():
    a = np.zeros((4, 6), np.float32)
    assert view_strides((4, 6), (6, 1)) is None
    assert view_strides((4, 1, 6), (6, 99, 1)) is None              # an axis of extent 1 is never stepped
    assert view_strides((4, 3), (6, 1)) == (6, 1)
    assert view_strides((1, 3), (99, 2)) == (3, 2)
    spec, _ = describe(a[:, :3], "a", None)
    assert spec.strides == (6, 1) and spec.element_strides == (6, 1)
    assert describe(a, "a", None)[0].strides is None
    assert describe(a.T, "a", None)[0].strides == (1, 6)
    assert signature_key(a[:, :3]) != signature_key(np.zeros((4, 3), np.float32))
    assert span_elements((4, 3), (6, 1)) == 21 and span_elements((0, 3), (6, 1)) == 0


@pytest.mark.parametrize("make, words", [
    (lambda: np.ones((4, 32), np.float32)[:, ::-1], ["'x'", "negative stride", "ascontiguousarray"]),
    (lambda: np.broadcast_to(np.ones((1, 8), np.float32), (4, 8)), ["'x'", "overlap", "ascontiguousarray"]),
    (lambda: np.lib.stride_tricks.as_strided(np.ones(64, np.float32), (4, 8), (16, 4)), ["'x'", "overlap"]),
])
def test_views_kernels_cannot_take_are_refused_with_the_way_out(make, words):
    x = make()
    with pytest.raises(nvdsl.ArgumentError) as info:
        axpy2d(x, np.zeros(x.shape, np.float32), 1.0)
    assert info.value.code == "bad-strides"
    for word in words:
        assert word in str(info.value)
    assert info.value.loc is not None and info.value.loc.filename == __file__


def test_odd_byte_strides_are_refused():
    record = np.zeros(8, dtype=[("a", np.float32), ("b", np.uint8)])
    with pytest.raises(nvdsl.ArgumentError) as info:
        describe(record["a"], "x", None)
    assert info.value.code == "bad-strides" and "whole 4-byte elements" in str(info.value)


# --- plain kernels ----------------------------------------------------------------------------------------

def test_a_kernel_reads_a_slice_and_writes_a_transposed_view_in_place(backend):
    """x is a slice of a wider array, y the transposed view of another: the kernel indexes them as the
    views they are; y's base array outside the view keeps its values."""
    rng = np.random.default_rng(0)
    wide = rng.standard_normal((40, 70)).astype(np.float32)
    x = wide[3:33, 5:55]
    base = np.full((60, 30), SENTINEL, np.float32)
    y = base.T[:, 5:55]                                          # (30, 50), unit stride along its first axis
    y[...] = rng.standard_normal(y.shape)
    before, outside = y.copy(), ~inside(base, y)
    axpy2d(x, y, 2.0)
    np.testing.assert_array_equal(y, np.float32(2.0) * x + before)
    assert (base[outside] == SENTINEL).all()
    contiguous = np.ascontiguousarray(before)                    # the same shape, row-major: its own signature
    axpy2d(np.ascontiguousarray(x), contiguous, 2.0)
    np.testing.assert_array_equal(contiguous, y)


def test_a_strided_view_cannot_be_flattened():
    @nvdsl.mlir_func
    def flat(x):
        @nvdsl.gpu_launch(grid=1, block=1)
        def kernel(ctx):
            x.flatten()
        kernel()
    with pytest.raises(nvdsl.TraceError) as info:
        flat.trace(np.zeros((8, 8), np.float32)[:, :4])
    assert info.value.code == "bad-view" and "strided view" in str(info.value)


# --- TMA's rules over views --------------------------------------------------------------------------------

def test_tma_takes_16_byte_row_strides_and_refuses_the_rest():
    spec = TensorMapSpec(arg=0, box=(64, 64), swizzle=128)
    f16 = nvdsl.float16
    assert rule_violations(spec, f16, (100, 200), (264, 1)) == []                 # a column slice
    assert "stride of axis 0 is 404 bytes" in rule_violations(spec, f16, (100, 200), (202, 1))[0]
    assert "unit stride on the last axis" in rule_violations(spec, f16, (100, 200), (1, 100))[0]
    box4 = TensorMapSpec(arg=0, box=(1, 1, 64, 64), swizzle=128)
    assert rule_violations(box4, f16, (2, 4, 100, 64), (100 * 4 * 64, 64, 4 * 64, 1)) == []  # (B, H, L, D) of (B, L, H, D)
    # an axis of extent 1 is never stepped: its stride need not be a multiple of 16 bytes
    assert rule_violations(TensorMapSpec(arg=0, box=(1, 64)), f16, (1, 999)) == []
    assert rule_violations(TensorMapSpec(arg=0, box=(2, 64)), f16, (2, 999)) != []


def test_a_tma_over_a_view_without_unit_stride_names_the_copy():
    @nvdsl.mlir_func
    def descriptor(x):
        nvdsl.TMA(x, box=(64, 64))
    with pytest.raises(nvdsl.TraceError) as info:
        descriptor.trace(np.zeros((64, 128), np.float16).T)
    assert info.value.code == "bad-tma" and "unit stride on the last axis" in str(info.value)
    assert "contiguous copy of 'x'" in info.value.hint


def test_gemm_stages_an_a_given_transposed():
    """A = X.T has no unit-stride last axis, so no TMA descriptor: the task layer goes through a staging copy."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((64, 128)).astype(np.float16)
    b = rng.standard_normal((64, 64)).astype(np.float16)
    c = np.zeros((128, 64), np.float32)
    library.gemm(x.T, b, c)
    assert_product_close(c, x.T, b)


# --- the GEMM family over views ----------------------------------------------------------------------------

def test_gemm_reads_a_column_slice_and_writes_into_a_slice_of_a_larger_output(backend):
    rng = np.random.default_rng(1)
    m, n, k = 100, 136, 200
    a = rng.standard_normal((m, k + 24)).astype(np.float16)[:, 8:8 + k]          # rows 448 bytes apart
    b = rng.standard_normal((k, n)).astype(np.float16)
    out = np.full((m + 4, n + 40), SENTINEL, np.float32)
    c = out[2:2 + m, 16:16 + n]
    library.gemm(a, b, c)
    assert_product_close(c, a, b)
    assert (out[~inside(out, c)] == SENTINEL).all()


@pytest.mark.parametrize("given", ["KN", "NK"])
def test_gemm_reads_a_transposed_view_of_b_as_the_other_layout(backend, given, monkeypatch):
    """b = w.T of a row-major w is w in the other operand layout: no copy, and the kernel of that layout."""
    rng = np.random.default_rng(2)
    m, n, k = 64, 128, 192
    a = rng.standard_normal((m, k)).astype(np.float16)
    stored = rng.standard_normal((n, k) if given == "KN" else (k, n)).astype(np.float16)
    b = stored.T                                  # the (K, N) operand (given KN) or the (N, K) one (given NK)
    programs = []
    monkeypatch.setattr(library, "_kernel", _recording(library._kernel, programs))
    c = np.zeros((m, n), np.float32)
    library.gemm(a, b, c, b_layout=given)
    assert programs == [library.matmul_nk if given == "KN" else library.matmul]
    assert_product_close(c, a, b if given == "KN" else b.T)


def _recording(kernel, programs):
    def recorded(program, mapping):
        programs.append(program)
        return kernel(program, mapping)
    return recorded


def test_linear_takes_a_weight_given_as_the_transposed_view_of_a_k_by_n_array(backend):
    rng = np.random.default_rng(3)
    m, n, k = 64, 128, 128
    a = rng.standard_normal((m, k)).astype(np.float16)
    w_kn = rng.standard_normal((k, n)).astype(np.float16)
    bias = np.zeros(n, np.float16)
    c = np.zeros((m, n), np.float32)
    library.linear(a, w_kn.T, bias, c, activation="relu")
    exact = np.maximum(a.astype(np.float64) @ w_kn.astype(np.float64), 0)
    assert (np.abs(c - exact) <= product_error_bound(a, w_kn, np.float32)).all()    # relu adds no error


def test_batched_gemm_over_every_other_matrix_of_a_stack(backend):
    rng = np.random.default_rng(4)
    m, n, k = 72, 64, 96
    a = rng.standard_normal((6, m, k)).astype(np.float16)[::2]
    b = rng.standard_normal((3, k, n + 8)).astype(np.float16)[:, :, :n]
    c = np.zeros((3, m, n), np.float32)
    library.gemm(a, b, c)
    for i in range(3):
        assert_product_close(c[i], a[i], b[i])


def test_grouped_gemm_reads_its_rows_from_a_column_slice(backend):
    rng = np.random.default_rng(5)
    sizes, k, n = [50, 0, 90], 64, 128
    a = rng.standard_normal((sum(sizes), k + 8)).astype(np.float16)[:, :k]
    b = rng.standard_normal((3, k, n)).astype(np.float16)
    out = np.full((sum(sizes), n + 64), SENTINEL, np.float32)
    c = out[:, 32:32 + n]
    library.grouped_gemm(a, b, c, sizes)
    start = 0
    for g, rows in enumerate(sizes):
        if rows:
            assert_product_close(c[start:start + rows], a[start:start + rows], b[g])
        start += rows
    assert (out[:, :32] == SENTINEL).all() and (out[:, 32 + n:] == SENTINEL).all()


# --- attention over (B, L, H, D) projections ----------------------------------------------------------------

@pytest.mark.parametrize("heads, kv_heads", [(2, 2), (4, 1)])
def test_attention_reads_a_packed_qkv_projection_and_writes_o_in_b_l_h_d(backend, heads, kv_heads):
    """q, k, v are (B, H, L, D) views of one (B, L, H + 2 Hkv, D) projection; o is the (B, H, L, D) view of a
    (B, L, H, D) buffer, which then holds the heads side by side per token, as the next linear layer reads it."""
    rng = np.random.default_rng(6)
    batch, seq, d = 2, 130, 64
    qkv = rng.standard_normal((batch, seq, heads + 2 * kv_heads, d)).astype(np.float16)
    q = qkv[:, :, :heads].transpose(0, 2, 1, 3)
    k = qkv[:, :, heads:heads + kv_heads].transpose(0, 2, 1, 3)
    v = qkv[:, :, heads + kv_heads:].transpose(0, 2, 1, 3)
    out = np.zeros((batch, seq, heads, d), np.float16)
    o = out.transpose(0, 2, 1, 3)
    lse = np.zeros((batch, heads, seq), np.float32)
    attention(q, k, v, o, lse, causal=True)
    check_attention(o, lse, q, k, v, True, "float16")


def test_attention_writes_lse_into_a_slice(backend):
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((1, 2, 64, 64)).astype(np.float16) for _ in range(3))
    o = np.zeros_like(q)
    lse_buffer = np.full((1, 2, 96), SENTINEL, np.float32)
    lse = lse_buffer[:, :, 16:80]                                  # rows 384 bytes apart, 64 bytes in
    attention(q, k, v, o, lse)
    check_attention(o, lse, q, k, v, False, "float16")
    assert (lse_buffer[:, :, :16] == SENTINEL).all() and (lse_buffer[:, :, 80:] == SENTINEL).all()


# --- device arrays in place ----------------------------------------------------------------------------------

def test_a_task_reads_a_vector_along_a_strided_last_axis(backend):
    """A scale per row of A and block of K, given M-major (its transpose read as (blocks, M)): the vector's
    elements are ``blocks`` apart; they were read as consecutive ones, a wrong product with no error."""
    import nvdsl.tasks as nt

    @nt.task(reads=("A", "B", "S"), writes=("C",))
    def row_scaled_blocks(C, A, B, S):
        Ct, At, Bt = nt.blocks(C, (128, 128)), nt.blocks(A, (128, 64)), nt.blocks(B, (128, 64))
        St = nt.blocks(S, (1, 128))
        for i, j in nt.prange(*Ct.grid):
            acc = nt.zeros((128, 128), nt.float32)
            for k in nt.srange(At.grid[1]):
                part = nt.zeros((128, 128), nt.float32, name="part")
                part += At[i, k] @ Bt[j, k].T
                acc[...] = acc + part * St[k, i][:, None]
            Ct[i, j] = acc.astype(C.dtype)

    rng = np.random.default_rng(5)
    m, n, k = 200, 130, 192
    a, b = (rng.standard_normal(shape).astype(np.float16) for shape in ((m, k), (n, k)))
    scales = 2.0 ** rng.integers(-2, 3, (m, k // 64))            # powers of two: a's rows scaled exactly
    kernel = nt.build(row_scaled_blocks, library.MAPPING.replace(tiles={}, sm_count=2))
    for given in (np.ascontiguousarray(scales.T, np.float32), scales.astype(np.float32).T):
        c = np.full((m, n), np.nan, np.float32)
        kernel(c, a, b, given)
        assert_product_close(c, a.astype(np.float64) * np.repeat(scales, 64, axis=1), b.T)


def test_a_vector_past_its_rows_end_reads_the_fill_not_the_next_row(backend):
    """A weight per column read from row 0 of a (2, N) array, N not a multiple of the tile: the tile's columns past
    N read the next row's elements (here inf), and 0 * inf made every row's sum NaN."""
    import nvdsl.tasks as nt

    @nt.task(reads=("X", "W"), writes=("Y",))
    def weighted_rows(Y, X, W):
        Xt, Wt, Yt = nt.blocks(X, (64, 64)), nt.blocks(W, (1, 64)), nt.blocks(Y, (64,))
        for i in nt.prange(Xt.grid[0]):
            acc = nt.zeros((64,), name="acc")
            for j in nt.srange(Xt.grid[1]):
                x = nt.zeros((64, 64), name="x")
                x += Xt[i, j]
                acc[...] = acc + (x * Wt[0, j][None, :]).sum(axis=1)
            Yt[i] = acc

    rng = np.random.default_rng(6)
    x = rng.standard_normal((64, 100)).astype(np.float32)
    w = np.stack([rng.standard_normal(100), np.full(100, np.inf)]).astype(np.float32)
    y = np.full(64, np.nan, np.float32)
    nt.build(weighted_rows)(y, x, w)
    products = x.astype(np.float64) * w[0]
    bound = 100 * roundoff(np.float32)[0] * np.abs(products).sum(axis=1) * 1.01     # gamma_100 of the float32 sums
    assert np.isfinite(y).all() and (np.abs(y - products.sum(axis=1)) <= bound).all()


@requires_gpu
def test_torch_views_run_in_place_on_the_gpu():
    torch = pytest.importorskip("torch")
    gen = torch.Generator(device="cuda").manual_seed(0)
    m, n, k = 200, 256, 320
    x = torch.randn(m, k + 64, device="cuda", generator=gen).to(torch.bfloat16)[:, 32:32 + k]
    weight = torch.randn(n, k, device="cuda", generator=gen).to(torch.bfloat16)
    out = torch.full((m, 2 * n), SENTINEL, device="cuda")
    c = out[:, n:]
    library.gemm(x, weight.T, c)                          # a transposed weight, a column slice, an output slice
    a64, b64 = x.double().cpu().numpy(), weight.T.double().cpu().numpy()
    np.testing.assert_allclose(c.cpu().numpy(), a64 @ b64, atol=1e-2 * np.abs(a64 @ b64).max(), rtol=0)
    assert bool((out[:, :n] == SENTINEL).all())

    batch, seq, heads, d = 2, 300, 4, 128
    qkv = torch.randn(batch, seq, 3, heads, d, device="cuda", generator=gen).to(torch.float16)
    q, k_, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
    o_bl = torch.empty(batch, seq, heads, d, device="cuda", dtype=torch.float16)
    attention(q, k_, v, o_bl.transpose(1, 2), causal=True)
    expected = torch.nn.functional.scaled_dot_product_attention(q, k_, v, is_causal=True)
    torch.testing.assert_close(o_bl.transpose(1, 2), expected, atol=4e-3, rtol=4e-3)

    # rows 16-byte aligned, the start 2 bytes past a boundary: TMA cannot address it, a staging copy can
    a_off, w_kn = x[:, 1:257], torch.randn(256, n, device="cuda", generator=gen).to(torch.bfloat16)
    assert a_off.data_ptr() % 16
    c_off = torch.zeros(m, n, device="cuda")
    library.gemm(a_off, w_kn, c_off)
    expected = a_off.double() @ w_kn.double()
    torch.testing.assert_close(c_off.double(), expected, atol=1e-2 * float(expected.abs().max()), rtol=0)


@pytest.mark.parametrize("shape, itemsize, strides, unaligned, why", [
    ((4, 1000), 2, None, False, None),                          # 2000-byte rows: 16-byte vectors of 8
    ((4, 1000), 4, (1016, 1), False, None),                     # a column slice whose rows are 4064 bytes apart
    ((2, 3, 64), 2, (4096, 1024, 1), False, None),              # a (B, H, D) view, every axis a 16-byte multiple
    ((4, 1001), 2, None, False, "its rows hold 1001 elements, not a multiple of 8"),
    ((4, 1000), 2, (1004, 1), False, "its rows are 2008 bytes apart, not a multiple of 16"),
    ((1000, 8), 2, (1, 1000), False, "its last axis has a stride of 1000 elements"),
    ((4, 1000), 2, None, True, "it starts off a 16-byte boundary"),
    ((4, 1000), 16, None, False, "16-byte elements do not make 16-byte vectors of several"),
])
def test_which_arrays_move_their_rows_in_16_byte_vectors(shape, itemsize, strides, unaligned, why):
    """An array's rows move in aligned 16-byte vectors (row-wise programs' loads and stores) only where each run of
    16 bytes from a multiple of its count is aligned and lies wholly in a row; else the reason, for explain()."""
    assert vector_problem(shape, itemsize, strides, unaligned) == why

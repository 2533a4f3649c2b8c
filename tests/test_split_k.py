"""Split-K for outputs with few tiles (a decode step): partial products over shares of K, then added in split
order by a second kernel; chosen by the library when the output leaves most SMs idle."""

import numpy as np
import pytest

import nvdsl
import nvdsl.kernels.gemm as library
import nvdsl.tasks as nt
from nvdsl.testing import requires_gpu
from helpers import assert_product_close

SM = 132


@pytest.mark.parametrize("m, n, k, expected", [
    (16, 8192, 8192, 1), (64, 16384, 16384, 1), (16, 1024, 8192, 16),
    # one row of 64 x 64 tiles, two splits (64 x 128 tiles would take four); not where K has too few blocks
    (1, 4096, 4096, 2), (64, 4096, 4096, 2), (16, 4096, 14336, 2), (64, 4096, 960, 1),
    (64, 8192, 8192, 1), (8192, 8192, 4096, 1), (16, 8192, 256, 1), (256, 512, 8192, 8),
    # long K over a tile or two: every SM a split (no cap at 16)
    (128, 128, 65536, 66), (128, 256, 32768, 33), (64, 64, 131072, 132), (128, 128, 4096, 8),
])
def test_the_library_splits_k_where_the_output_leaves_sms_idle(m, n, k, expected):
    mapping = library.default_mapping(m, n, sm_count=SM)
    assert library.split_k(m, n, k, mapping, sm_count=SM) == expected


@pytest.mark.parametrize("layout", ["KN", "NK"])
@pytest.mark.parametrize("splits", [2, 3])
def test_split_k_computes_the_product(backend, layout, splits):
    """Three splits of 16 K blocks take 6, 6 and 4 (the last reads past K as zeros: 1000 is not 1024)."""
    rng = np.random.default_rng(splits)
    m, n, k = 16, 200, 1000
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float16)
    library.gemm(a, np.ascontiguousarray(b.T) if layout == "NK" else b, c, b_layout=layout, splits=splits)
    assert_product_close(c, a, b)


def test_split_k_on_64x64_tiles_computes_the_product(backend):
    """The default for one row of 64 x 64 tiles (a decode step against a 4096-wide weight): two splits."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((16, 1000)).astype(np.float16)
    b = rng.standard_normal((1000, 200)).astype(np.float16)
    c = np.zeros((16, 200), np.float16)
    library.gemm(a, b, c, mapping=library.TILE_64x64_MAPPING, splits=2)
    assert_product_close(c, a, b)


def test_the_sum_of_the_partials_overlaps_their_kernel():
    """Split-K's second kernel is launched as a programmatic dependent of the products' kernel, and waits for it
    before reading a partial product."""
    c, p = np.zeros((16, 200), np.float16), np.zeros((2, 16, 200), np.float32)
    compiled = library._sum_partials.compile(c, p)
    launch, = compiled.module.plan.launches
    assert launch.overlaps_previous
    assert compiled.ptx.index("griddepcontrol.wait;") < compiled.ptx.index("ld.global")
    plain, = library.partials_sum(overlap_previous=False).compile(c, p).module.plan.launches
    assert not plain.overlaps_previous


def test_split_k_writes_into_an_output_view(backend):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((8, 512)).astype(np.float16)
    b = rng.standard_normal((512, 128)).astype(np.float16)
    out = np.full((8, 256), 7.0, np.float32)
    library.gemm(a, b, out[:, 64:192], splits=2)
    assert_product_close(out[:, 64:192], a, b)
    assert (out[:, :64] == 7.0).all() and (out[:, 192:] == 7.0).all()


def test_the_default_runs_split_k_for_a_decode_step(monkeypatch):
    calls = []
    real = library._kernel
    monkeypatch.setattr(library, "_kernel", lambda program, mapping: calls.append(program) or real(program, mapping))
    monkeypatch.setattr(library.jit, "sm_count", lambda *args: SM)
    for cached in (library.split_k, library.default_mapping):       # answers cached for another SM count
        cached.cache_clear()
    library._PLANNED.clear()                                        # and plans made under it
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((4, 2048)).astype(np.float16), rng.standard_normal((2048, 256)).astype(np.float16)
    c = np.zeros((4, 256), np.float32)
    library.gemm(a, b, c)
    assert calls == [library.matmul_partials]
    assert_product_close(c, a, b)


def test_splits_must_be_a_positive_int():
    with pytest.raises(nvdsl.ArgumentError) as info:
        library.gemm(np.zeros((16, 64), np.float16), np.zeros((64, 64), np.float16), np.zeros((16, 64), np.float32),
                     splits=0)
    assert info.value.code == "bad-argument" and "splits=0" in str(info.value)


@requires_gpu
def test_decode_steps_split_k_on_the_gpu_same_bits_every_run():
    torch = pytest.importorskip("torch")
    gen = torch.Generator(device="cuda").manual_seed(0)
    k = 8192
    for m, n in ((1, 4096), (16, 4096), (16, 1024)):
        assert library.split_k(m, n, k, library.default_mapping(m, n)) > 1
        a = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
        w = torch.randn(n, k, device="cuda", generator=gen).to(torch.bfloat16)
        first, again = (torch.empty(m, n, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        library.gemm(a, w.T, first)
        library.gemm(a, w.T, again)
        assert torch.equal(first, again)
        exact = a.double() @ w.double().T
        accumulated = k * 2.0 ** -24 / (1 - k * 2.0 ** -24) * (a.double().abs() @ w.double().abs().T)
        bound = accumulated + 2.0 ** -8 * (exact.abs() + accumulated) + 2.0 ** -133
        assert float(((first.double() - exact).abs() - bound).max()) <= 0, m


@pytest.mark.parametrize("splits", [1, 2])
@pytest.mark.parametrize("b_transposed", [False, True])
def test_a_transposed_a_is_read_m_major_without_a_copy(monkeypatch, splits, b_transposed):
    """``gemm(x.T, dy, dw)``, a weight gradient: x.T is read as the M-major operand it is (the kernel takes x,
    no staging copy: before, TMA read A's rows, so x.T went through one), with B either way, split or not.
    Small integers: every sum is exact in float32 in any order."""
    calls = []
    real = library._kernel
    monkeypatch.setattr(library, "_kernel", lambda program, mapping: calls.append(program) or real(program, mapping))
    library._PLANNED.clear()
    rng = np.random.default_rng(6)
    x = rng.integers(-2, 3, (320, 200)).astype(np.float16)         # (K, M): tokens x features
    dy = rng.integers(-2, 3, (320, 136)).astype(np.float16)        # (K, N)
    b = np.ascontiguousarray(dy.T).T if b_transposed else dy
    dw = np.zeros((200, 136), np.float32)
    library.gemm(x.T, b, dw, splits=splits)
    np.testing.assert_array_equal(dw, x.astype(np.float64).T @ dy.astype(np.float64))   # exact: small integers
    program = library.partials_program if splits > 1 else library.matmul_program
    assert calls == [program("NK" if b_transposed else "KN", "KM")]
    out = np.zeros((splits, 200, 136), np.float32) if splits > 1 else dw
    assert "staging copies" not in nt.build(calls[0], library.MAPPING).explain(out, x, b.T if b_transposed else b)


@requires_gpu
@pytest.mark.parametrize("m, n, k", [(1000, 1536, 4096), (4096, 4096, 2048)])
def test_a_weight_gradient_on_the_gpu_reads_x_t_in_place(m, n, k):
    """dW = x.T @ dy with torch tensors: x (tokens, features) read M-major through its transposed view."""
    torch = pytest.importorskip("torch")
    gen = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn((k, m), generator=gen, device="cuda").half()
    dy = torch.randn((k, n), generator=gen, device="cuda").half()
    dw = torch.empty((m, n), device="cuda", dtype=torch.float32)
    library.gemm(x.T, dy, dw)
    torch.cuda.synchronize()
    assert_product_close(dw.cpu().numpy(), x.T.cpu().numpy(), dy.cpu().numpy())

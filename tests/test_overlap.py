"""A task kernel's blocks run in no set order, so an output sharing memory with another of the call's arrays would
make its result depend on that order: such a call is refused, naming both arrays, at the caller's line. Views of
one buffer that interleave without a common element (a packed projection's q and o) are used as they are, and
an ``@mlir_func`` (whose author orders its reads and writes) may still write in place."""

import numpy as np
import pytest

import nvdsl
from nvdsl.arguments import DEVICE, DisjointOutputs, describe
from nvdsl.errors import ArgumentError
from nvdsl.kernels import attention, gemm, rowwise
from nvdsl.testing import requires_gpu

HALF = np.float16


def assert_refused(call, written: str, other: str) -> None:
    with pytest.raises(ArgumentError) as refused:
        call()
    error = refused.value
    assert error.code == "overlapping-arrays", error
    assert f"argument '{written}' shares memory with argument '{other}'" in str(error), error
    assert error.hint and "test_overlap.py" in str(error)       # the caller's line


def softmax64(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_an_output_over_an_input_is_refused(backend):
    """A library function's refusal names its own parameters (``c``, ``a``), not its program's (``C``, ``A``)."""
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((64, 64)).astype(HALF) for _ in range(2))
    assert_refused(lambda: gemm.gemm(a, b, a), "c", "a")
    assert_refused(lambda: gemm.linear(a, b, np.zeros(64, HALF), b), "c", "w")
    x = rng.standard_normal((8, 100)).astype(np.float32)
    assert_refused(lambda: rowwise.softmax(x, x), "y", "x")
    buffer = rng.standard_normal((8, 160)).astype(np.float32)
    assert_refused(lambda: rowwise.softmax(buffer[:, :100], buffer[:, 60:]), "y", "x")     # 40 columns in common
    q = rng.standard_normal((1, 2, 64, 64)).astype(HALF)
    assert_refused(lambda: attention.attention(q, q.copy(), q.copy(), q), "o", "q")
    k, v, o, lse = q.copy(), q.copy(), np.zeros_like(q), np.zeros((1, 2, 64), np.float32)
    attention.attention(q, k, v, o, lse)
    assert_refused(lambda: attention.attention_backward(q, k, v, o, lse, o, q, np.zeros_like(k), np.zeros_like(v)),
                   "dq", "q")


def test_views_of_one_buffer_without_a_common_element_are_used_as_they_are(backend):
    """The two halves of each row of one buffer: their spans of memory meet (each row of ``y`` lies between two
    rows of ``x``), so the exact test decides, and lets the call run."""
    buffer = np.random.default_rng(1).standard_normal((8, 200)).astype(np.float32)
    x, y = buffer[:, :100], buffer[:, 100:]
    expected = softmax64(x)
    rowwise.softmax(x, y)
    # float32 exp and sums of 100 terms: a few ulps of float32 per element
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(softmax64(buffer[:, :100]), expected, rtol=0, atol=0)      # x untouched


def test_an_mlir_func_may_still_write_in_place(backend):
    @nvdsl.mlir_func
    def doubled(x, y):
        @nvdsl.gpu_launch(grid=1, block=32)
        def kernel(ctx):
            y[ctx.thread_id.x] = x[ctx.thread_id.x] * 2.0
        kernel()
    x = np.arange(32, dtype=np.float32)
    doubled(x, x)
    assert (x == 2 * np.arange(32)).all()


def packed_specs(second: int):
    """Specs of q = buf[:, :, 0] and o = buf[:, :, ``second``] as (B, H, L, D) views of a (B, L, 4, H, D) buffer."""
    buffer = np.zeros((2, 64, 4, 3, 16), HALF)
    q, o = (buffer[:, :, j].transpose(0, 2, 1, 3) for j in (0, second))
    return describe(q, "Q", None)[0], describe(o, "O", None)[0]


@pytest.mark.parametrize("second, shared", [(3, False), (0, True)])
def test_device_addresses_are_tested_exactly_where_spans_meet(second, shared):
    """The GPU's test of device arrays, on addresses alone (no memory is read, so no GPU is needed): a packed
    buffer's q and o slices interleave (their spans meet), and share no element unless they are the same slice."""
    q, o = packed_specs(second)
    disjoint = DisjointOutputs((o, q), (DEVICE, DEVICE), frozenset({0}))
    base = 1 << 32
    offset = second * 3 * 16 * 2                   # bytes from q's first element to o's
    assert disjoint.pairs == ((0, 1),) and disjoint.spans[0] == disjoint.spans[1] > offset
    for _ in range(2):                              # the second time, from the decisions kept
        if shared:
            with pytest.raises(ArgumentError, match="'O' shares memory with argument 'Q'"):
                disjoint.check_device((base + offset, base))
        else:
            disjoint.check_device((base + offset, base))
    disjoint.check_device((base + disjoint.spans[1], base))     # o right after q's span: apart by the bounds


@requires_gpu
def test_overlapping_torch_tensors_are_refused_on_the_gpu():
    torch = pytest.importorskip("torch")
    a, b = (torch.randn(256, 256, dtype=torch.float16, device="cuda") for _ in range(2))
    c = torch.empty_like(a)
    gemm.gemm(a, b, c)                                          # the generated run, with its checks inlined
    assert_refused(lambda: gemm.gemm(a, b, a), "c", "a")
    assert_refused(lambda: gemm.gemm(a, b, b), "c", "b")
    buffer = torch.randn(2, 128, 4, 4, 64, dtype=torch.float16, device="cuda")
    q, k, v, o = (buffer[:, :, j].transpose(1, 2) for j in range(4))
    attention.attention(q, k, v, o)                             # one packed buffer: no element in common
    expected = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float())
    # fp16 inputs, float32 accumulation, fp16 output: within a few fp16 ulps of the float32 reference
    torch.testing.assert_close(o.float(), expected, rtol=2e-3, atol=2e-3)
    assert_refused(lambda: attention.attention(q, k, v, buffer[:, :, 1].transpose(1, 2)), "o", "k")
    torch.cuda.synchronize()

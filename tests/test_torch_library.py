"""nvdsl.torch.gemm and nvdsl.torch.linear: forward and gradients against float64 references, within bounds derived
from the arithmetic (float32 sums of exact products, one rounding to the output type, the activation's slope);
opcheck; errors. On CPU tensors (the interpreter) and CUDA tensors (the GPU)."""

import numpy as np
import pytest

import nvdsl
from helpers import product_error_bound, roundoff
from nvdsl.kernels.linear_grad import linear_grad
from nvdsl.testing import GPU_MARKS

torch = pytest.importorskip("torch")
nvtorch = pytest.importorskip("nvdsl.torch")
F = torch.nn.functional

# Ragged shapes: several tiles of the narrowest mapping in M and N, K not a multiple of the 64-wide K block.
M, K, N = 80, 96, 136
DTYPES = [torch.float16, torch.bfloat16]
REFERENCE = {None: lambda z: z, "relu": torch.relu, "gelu": F.gelu, "silu": F.silu,
             "gelu_tanh": lambda z: F.gelu(z, approximate="tanh")}
# Bounds of |act'| (the slope: how far an error in z moves act(z)) and of |act''| (how far it moves act'(z)): GELU's
# slope peaks at 1.129, its curvature at 2 phi(0) = 0.798; SiLU's at 1.100 and 0.5; ReLU's curvature is a step at 0,
# where the test allows either side.
SLOPE = {None: 1.0, "relu": 1.0, "gelu": 1.13, "gelu_tanh": 1.13, "silu": 1.1}
CURVATURE = {None: 0.0, "relu": 0.0, "gelu": 0.8, "gelu_tanh": 0.8, "silu": 0.5}
# Evaluating an activation or its derivative in float32 (erf, tanh, exp: a few ulps each, a handful of operations).
EVALUATION = 64 * 2.0 ** -24


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=GPU_MARKS)])
def device(request):
    return request.param


def f64(t) -> np.ndarray:
    return t.detach().double().cpu().numpy()


def operands(device, dtype, *shapes, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g).to(dtype).to(device).requires_grad_() for s in shapes]


def assert_within(got, exact, bound, what):
    excess = np.abs(f64(got) - exact) - bound
    worst = np.unravel_index(np.argmax(excess), excess.shape)
    assert excess[worst] <= 0, (f"{what}: {np.count_nonzero(excess > 0)} elements past the bound; at {worst}: "
                                f"{f64(got)[worst]} against {exact[worst]} (bound {bound[worst]})")


@pytest.mark.parametrize("dtype", DTYPES)
def test_gemm_and_its_gradients_match_float64(device, dtype):
    a, b = operands(device, dtype, (M, K), (K, N))
    c = nvtorch.gemm(a, b)
    assert c.dtype == dtype and c.shape == (M, N) and c.device.type == device
    A, B = f64(a), f64(b)
    assert_within(c, A @ B, product_error_bound(A, B, dtype), "c")
    dc = torch.randn(M, N, generator=torch.Generator().manual_seed(1)).to(dtype).to(device)
    da, db = torch.autograd.grad(c, (a, b), dc)
    DC = f64(dc)
    assert_within(da, DC @ B.T, product_error_bound(DC, B.T, dtype), "da")      # dc @ b.T
    assert_within(db, A.T @ DC, product_error_bound(A.T, DC, dtype), "db")      # a.T @ dc


def test_a_transposed_weight_view_is_taken_as_it_is(device):
    a, w = operands(device, torch.float16, (M, K), (N, K))
    c = nvtorch.gemm(a, w.T)
    A, W = f64(a), f64(w)
    assert_within(c, A @ W.T, product_error_bound(A, W.T, torch.float16), "c")


def linear_reference(x, w, bias, activation, dy):
    """z, y and the gradients in float64, and the bound on z's error as nvdsl computes it (float32 sums, the bias
    added in float32)."""
    X, W, D = f64(x).reshape(-1, K), f64(w), f64(dy).reshape(-1, N)
    Bv = f64(bias) if bias is not None else np.zeros(N)
    z = X @ W.T + Bv
    u32 = roundoff(np.float32)[0]
    z_error = product_error_bound(X, W.T, np.float32) + u32 * (np.abs(z) + np.abs(Bv))
    zt = torch.from_numpy(z)
    y = REFERENCE[activation](zt).numpy()
    slope = (torch.autograd.functional.jacobian(lambda t: REFERENCE[activation](t).sum(), zt)).numpy() \
        if activation else np.ones_like(z)
    return X, W, D, z, z_error, y, slope


@pytest.mark.parametrize("activation", [None, "relu", "gelu", "gelu_tanh", "silu"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_linear_and_its_gradients_match_float64(device, dtype, activation):
    x, w, bias = operands(device, dtype, (2, M // 2, K), (N, K), (N,))
    y = nvtorch.linear(x, w, bias, activation)
    assert y.shape == (2, M // 2, N) and y.dtype == dtype
    dy = torch.randn(y.shape, generator=torch.Generator().manual_seed(1)).to(dtype).to(device)
    dx, dw, dbias = torch.autograd.grad(y, (x, w, bias), dy)
    X, W, D, z, z_error, y_exact, slope = linear_reference(x, w, bias, activation, dy)
    u = roundoff(dtype)[0]
    tiny = roundoff(dtype)[1]
    y_bound = SLOPE[activation] * z_error + EVALUATION * (np.abs(z) + 1) + u * np.abs(y_exact) + tiny
    assert_within(y.reshape(-1, N), y_exact, y_bound, "y")

    # dz = dy * act'(z_hat), z_hat recomputed in float32 in the backward kernel's accumulator, the product rounded
    z_hat_error = z_error
    dz = D * slope
    dz_error = np.abs(D) * (CURVATURE[activation] * z_hat_error + EVALUATION) + u * np.abs(dz) + tiny \
        if activation else np.zeros_like(dz)
    if activation == "relu":        # within z's error of 0, either side of the step
        dz_error = np.where(np.abs(z) <= z_hat_error, np.abs(D), dz_error)
    dz_abs = np.abs(dz) + dz_error
    dx_bound = dz_error @ np.abs(W) + product_error_bound(dz_abs, np.abs(W), dtype)
    dw_bound = dz_error.T @ np.abs(X) + product_error_bound(dz_abs.T, np.abs(X), dtype)
    rows = dz.shape[0]
    db_bound = dz_error.sum(0) + rows * roundoff(np.float32)[0] * dz_abs.sum(0) + u * np.abs(dz.sum(0)) + tiny
    assert_within(dx.reshape(-1, K), dz @ W, dx_bound, "dx")
    assert_within(dw, dz.T @ X, dw_bound, "dw")
    assert_within(dbias, dz.sum(0), db_bound, "dbias")


@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_tanh", "silu"])
def test_the_activation_gradient_at_zero_is_the_slope_there(device, activation):
    """z = 0 exactly (zero inputs and bias): GELU's Phi(z) = gelu(z) / z is 0 / 0 there, and the kernel takes 1/2;
    each slope at 0 is exact in float16 (ReLU's is 0: its derivative is taken as [z > 0])."""
    x, w, bias = (torch.zeros(s, dtype=torch.float16, device=device) for s in ((M, K), (N, K), (N,)))
    dy = torch.full((M, N), 3.0, dtype=torch.float16, device=device)
    dz = nvtorch.activation_grad(x, w, bias, dy, activation)
    slope = {"relu": 0.0, "gelu": 0.5, "gelu_tanh": 0.5, "silu": 0.5}[activation]
    assert torch.equal(dz.cpu(), torch.full((M, N), 3.0 * slope, dtype=torch.float16))


def test_linear_without_bias_is_x_times_w_transposed(device):
    x, w = operands(device, torch.bfloat16, (M, K), (N, K))
    y = nvtorch.linear(x, w)
    X, W = f64(x), f64(w)
    assert_within(y, X @ W.T, product_error_bound(X, W.T, torch.bfloat16), "y")
    dx, dw = torch.autograd.grad(y.float().sum(), (x, w))
    ones = np.ones((M, N))
    assert_within(dx, ones @ W, product_error_bound(ones, W, torch.bfloat16), "dx")
    assert_within(dw, ones.T @ X, product_error_bound(ones.T, X, torch.bfloat16), "dw")


@pytest.mark.parametrize("args", [
    lambda d: (nvtorch.gemm, *operands(d, torch.float16, (M, K), (K, N))),
    lambda d: (nvtorch.linear, *operands(d, torch.bfloat16, (M, K), (N, K), (N,)), "gelu"),
    lambda d: (nvtorch.linear, *operands(d, torch.float16, (M, K), (N, K)), None, "silu"),
    # a backward's op, itself without a backward: its operands need no gradient
    lambda d: (nvtorch.activation_grad, *(t.detach() for t in operands(d, torch.float16, (M, K), (N, K), (N,),
                                                                          (M, N))), "gelu_tanh"),
])
def test_the_library_ops_pass_opcheck(device, args):
    op, *inputs = args(device)
    torch.library.opcheck(op, tuple(inputs))


@pytest.mark.parametrize("call, code, words", [
    (lambda: nvtorch.gemm(torch.zeros(4, 8), torch.zeros(8, 4)), "bad-dtype", ["float16", "torch.float32"]),
    (lambda: nvtorch.gemm(torch.zeros(4, 8, dtype=torch.half), torch.zeros(7, 4, dtype=torch.half)), "bad-shape",
     ["[4, 8]", "[7, 4]"]),
    (lambda: nvtorch.linear(torch.zeros(4, 8, dtype=torch.half), torch.zeros(4, 8, dtype=torch.half),
                            activation="tanh"), "bad-argument", ["'tanh'", "gelu"]),
    (lambda: nvtorch.linear(torch.zeros(4, 8, dtype=torch.half), torch.zeros(4, 8, dtype=torch.half),
                            torch.zeros(5, dtype=torch.half)), "bad-shape", ["[5]", "(4,)"]),
    (lambda: linear_grad(*(np.zeros(s, np.float16) for s in ((4, 8), (4, 8), (4,), (4, 4), (4, 4))),
                         activation="none"), "bad-argument", ["'none'", "gelu"]),
    (lambda: nvtorch.linear(torch.zeros(4, 0, dtype=torch.half), torch.zeros(4, 0, dtype=torch.half)), "empty",
     ["[4, 0]", "K = 0"]),
])
def test_bad_operands_say_what_is_wrong(call, code, words):
    with pytest.raises(nvdsl.ArgumentError) as info:
        call()
    assert info.value.code == code and all(w in str(info.value) for w in words), str(info.value)
    assert info.value.loc is not None and info.value.loc.filename == __file__     # the call, not torch's dispatch


@pytest.mark.parametrize("activation", [None, "gelu"])
def test_a_batch_of_no_rows_trains(device, activation):
    """An expert given no tokens: its linear layer's output has no rows, and its weight's and bias's gradients are
    sums over no rows, zero (before, the backward's dW = dZ.T @ X, a product over K = 0, was refused)."""
    x, w, bias = operands(device, torch.float16, (0, K), (N, K), (N,))
    y = nvtorch.linear(x, w, bias, activation)
    assert y.shape == (0, N)
    (y.float() * 3).sum().backward()
    assert x.grad.shape == (0, K)
    assert torch.count_nonzero(w.grad) == 0 and torch.count_nonzero(bias.grad) == 0     # sums of nothing: exactly 0
    c = nvtorch.gemm(torch.ones(5, 0, dtype=torch.half, device=device), torch.ones(0, 7, dtype=torch.half,
                                                                                 device=device))
    assert c.shape == (5, 7) and torch.count_nonzero(c) == 0


def test_a_training_step_compiles_in_one_graph_with_the_eager_gradients():
    """torch.compile(fullgraph=True) with AOTAutograd (the aot_eager backend: no C++ compiler on the CPU path) traces
    the ops' forward and backward; the step's loss and gradients are the eager ones, bit for bit (the same kernels
    on the same inputs)."""
    def step(x, w1, b1, w2):
        h = nvtorch.linear(x, w1, b1, "gelu")
        return nvtorch.gemm(h, w2).float().square().mean()

    def run(fn):
        x, w1, b1, w2 = operands("cpu", torch.bfloat16, (M, K), (N, K), (N,), (N, 64))
        loss = fn(x, w1, b1, w2)
        return (loss, *torch.autograd.grad(loss, (x, w1, b1, w2)))

    eager = run(step)
    compiled = run(torch.compile(step, fullgraph=True, backend="aot_eager"))
    for e, c in zip(eager, compiled):
        assert torch.equal(e, c)

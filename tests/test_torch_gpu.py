"""nvdsl inside a PyTorch program on the GPU: launches on torch's current stream, CUDA graph capture and replay, a
cache miss during capture refused, torch.compile with inductor, tensors on a second GPU."""

import numpy as np
import pytest

import nvdsl
from nvdsl.errors import CaptureError
from nvdsl.testing import GPU_MARKS
from helpers import axpy as axpy_kernel, product_error_bound

torch = pytest.importorskip("torch")
nvtorch = pytest.importorskip("nvdsl.torch")
pytestmark = GPU_MARKS
two_gpus = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 GPUs")

M, K, N = 256, 192, 384




axpy = nvtorch.custom_op(axpy_kernel, name="nvdsl_gpu_test::axpy", mutates_args=("y",), types={"alpha": float})


def f64(t):
    return t.detach().double().cpu().numpy()


def assert_product(c, a, b):
    A, B = f64(a), f64(b)
    excess = np.abs(f64(c) - A @ B) - product_error_bound(A, B, c.dtype)
    assert excess.max() <= 0, f"{np.count_nonzero(excess > 0)} elements past the bound"


def randn(*shape, seed, dtype=torch.float16, device="cuda"):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(dtype).to(device)


def warm_up(fn):
    """Run ``fn`` once on a side stream, as torch's graph documentation asks before capture."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        out = fn()
    torch.cuda.current_stream().wait_stream(side)
    return out


def test_a_gemm_is_captured_and_replayed_on_new_data_in_the_same_buffers():
    """The capture runs in torch's default global mode, where a host synchronisation, an allocation outside torch's
    graph pool, a copy from the host or a launch on another stream (the legacy default stream) would fail it: nvdsl's
    launch goes to the capturing stream, torch's current one, and the output (allocated by the graph) gets its TMA
    descriptor by memset nodes."""
    a, b = randn(M, K, seed=0), randn(K, N, seed=1)
    warm_up(lambda: nvtorch.gemm(a, b))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        c = nvtorch.gemm(a, b)
    for seed in (2, 4):
        a.copy_(randn(M, K, seed=seed))
        b.copy_(randn(K, N, seed=seed + 1))
        graph.replay()
        torch.cuda.synchronize()
        assert_product(c, a, b)


def test_a_training_step_is_captured_with_the_eager_gradients():
    x = randn(M, K, seed=0, dtype=torch.bfloat16)
    w1 = randn(N, K, seed=1, dtype=torch.bfloat16).requires_grad_()
    b1 = randn(N, seed=2, dtype=torch.bfloat16).requires_grad_()
    w2 = randn(N, 128, seed=3, dtype=torch.bfloat16).requires_grad_()

    def step():
        h = nvtorch.linear(x, w1, b1, "gelu")
        loss = nvtorch.gemm(h, w2).float().square().mean()
        return (loss, *torch.autograd.grad(loss, (w1, b1, w2)))

    warm_up(step)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = step()
    x.copy_(randn(M, K, seed=7, dtype=torch.bfloat16))
    graph.replay()
    eager = step()
    for c, e in zip(captured, eager):           # the same kernels on the same data: the same bits
        assert torch.equal(c, e)


def test_an_in_place_op_replays_on_its_buffers():
    x, y = torch.ones(1024, device="cuda"), torch.zeros(1024, device="cuda")
    warm_up(lambda: axpy(x, y, 2.0))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        axpy(x, y, 1.0)
    y.zero_()
    x.fill_(3.0)
    graph.replay()
    graph.replay()
    assert torch.equal(y.cpu(), torch.full((1024,), 6.0))                 # exact: small integers


def test_a_cache_miss_during_capture_is_refused_with_the_way_out():
    a, b = randn(M, 64, seed=0), randn(64, 64, seed=1)      # a shape no call had
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(CaptureError) as info:
        with torch.cuda.graph(graph):
            nvtorch.gemm(a, b)
    assert info.value.code == "capture-miss" and "before capture" in info.value.hint
    c = nvtorch.gemm(a, b)                                  # outside capture it compiles and runs
    torch.cuda.synchronize()
    assert_product(c, a, b)


def test_launches_follow_torch_s_current_stream():
    """A kernel queued on a side stream after a torch fill on it sees the fill (stream order), and the caller's
    stream waits for it through an event: no device-wide synchronisation."""
    side = torch.cuda.Stream()
    x, y = torch.empty(1 << 20, device="cuda"), torch.zeros(1 << 20, device="cuda")
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for value in range(1, 4):
            x.fill_(float(value))
            axpy_kernel(x, y, 1.0)
    torch.cuda.current_stream().wait_stream(side)
    assert torch.equal(y.cpu(), torch.full((1 << 20,), 6.0))


def test_inductor_compiles_the_ops_in_one_graph_with_the_eager_results():
    x = randn(M, K, seed=0, dtype=torch.bfloat16)
    params = [randn(N, K, seed=1, dtype=torch.bfloat16), randn(N, seed=2, dtype=torch.bfloat16),
              randn(N, 128, seed=3, dtype=torch.bfloat16)]
    for p in params:
        p.requires_grad_()

    def step(x, w1, b1, w2):
        h = nvtorch.linear(x, w1, b1, "gelu")
        return nvtorch.gemm(h, w2).float().square().mean()

    compiled = torch.compile(step, fullgraph=True)
    results = []
    for fn in (step, compiled):
        loss = fn(x, *params)
        results.append((loss, *torch.autograd.grad(loss, params)))
    # The nvdsl ops are the same kernels; inductor fuses torch's float32 elementwise ops (act', the loss) into its own
    # kernels, whose erf/exp may differ from eager's in the last float32 bit: at most one bfloat16 rounding of dz
    # apart, so each gradient within a bfloat16 ulp of its largest element.
    for e, c in zip(*results):
        torch.testing.assert_close(c, e, rtol=2.0 ** -7, atol=2.0 ** -7 * e.abs().max().item())


@two_gpus
def test_tensors_on_the_second_gpu_run_there():
    for device in ("cuda:1", "cuda:0", "cuda:1"):              # a program per device, each loaded on its own
        a, b = randn(M, K, seed=0, device=device), randn(K, N, seed=1, device=device)
        c = nvtorch.gemm(a, b)
        assert c.device == torch.device(device)
        torch.cuda.synchronize(device)
        assert_product(c, a, b)
        x, y = torch.ones(1024, device=device), torch.zeros(1024, device=device)
        axpy_kernel(x, y, 2.0)
        assert torch.equal(y.cpu(), torch.full((1024,), 2.0))


@two_gpus
def test_arrays_on_two_gpus_are_refused():
    with pytest.raises(nvdsl.ArgumentError) as info:
        axpy_kernel(torch.ones(1024, device="cuda:0"), torch.zeros(1024, device="cuda:1"), 1.0)
    assert info.value.code == "bad-device" and "GPU 0" in str(info.value) and "GPU 1" in str(info.value)

"""A tensor-parallel transformer MLP (nvdsl.torch.parallel) on 2 ranks matches the same MLP on one device, forward
and backward: on the CPU with gloo (the interpreter) and on 2 GPUs with NCCL."""

import os
import socket

import numpy as np
import pytest

from helpers import roundoff
from nvdsl.testing import GPU_MARKS

torch = pytest.importorskip("torch")
nvtorch = pytest.importorskip("nvdsl.torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available():
    pytest.skip("torch.distributed is not available", allow_module_level=True)

T, D, F = 64, 64, 256          # tokens, model width, hidden width (split over the ranks)
RANKS = 2
DTYPE = torch.bfloat16


def parameters(device):
    """Positive values: no sum cancels, so that a share missing from a sum (an all-reduce left out) is as large as
    the sum, far past the test's bounds, which scale with the sums of magnitudes."""
    g = torch.Generator().manual_seed(0)
    make = lambda *shape, scale=1.0: (torch.randn(shape, generator=g).abs() * scale).to(DTYPE).to(device)
    return make(T, D), make(F, D, scale=D ** -0.5), make(F), make(F, D, scale=F ** -0.5), make(T, D)


def mlp_step(x, w1, b1, w2, dy, parallel=None):
    """The MLP's output and its gradients (x, w1, b1, w2) for the output gradient dy."""
    leaves = [t.clone().requires_grad_() for t in (x, w1, b1, w2)]
    x, w1, b1, w2 = leaves
    if parallel is None:
        y = nvtorch.gemm(nvtorch.linear(x, w1, b1, "gelu"), w2)
    else:
        y = parallel.row_parallel_gemm(parallel.column_parallel_linear(x, w1, b1, "gelu"), w2)
    return (y.detach(), *torch.autograd.grad(y, leaves, dy))


def worker(rank, backend, port, out_dir):
    import nvdsl.torch.parallel as parallel
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=RANKS)
    try:
        device = f"cuda:{rank}" if backend == "nccl" else "cpu"
        if backend == "nccl":
            torch.cuda.set_device(rank)
        x, w1, b1, w2, dy = parameters(device)
        rows = slice(rank * F // RANKS, (rank + 1) * F // RANKS)      # this rank's share of the hidden layer
        results = mlp_step(x, w1[rows], b1[rows], w2[rows], dy, parallel)
        torch.save([t.cpu() for t in results], os.path.join(out_dir, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("backend", ["gloo", pytest.param("nccl", marks=[
    *GPU_MARKS, pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < RANKS,
                                   reason=f"needs {RANKS} GPUs")])])
def test_the_tensor_parallel_mlp_matches_one_device(backend, tmp_path):
    """Both sides compute each hidden element the same way up to its rounding to bfloat16 (u = 2^-8 of it) and each
    output element from the same products, summed in another order and rounded once more per rank (the partial
    products) and at the all-reduce: every difference is within a few roundings of the magnitudes summed, 8u times
    |a| @ |b| of the product that makes it (float32's sums, K * 2^-24, are below u for these widths)."""
    torch.multiprocessing.spawn(worker, args=(backend, free_port(), str(tmp_path)), nprocs=RANKS)
    device = "cuda:0" if backend == "nccl" else "cpu"
    x, w1, b1, w2, dy = parameters(device)
    y, dx, dw1, db1, dw2 = (t.cpu() for t in mlp_step(x, w1, b1, w2, dy))
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(RANKS)]
    X, W1, W2, DY = (np.abs(t.double().cpu().numpy()) for t in (x, w1, w2, dy))
    hidden = torch.nn.functional.gelu(torch.nn.functional.linear(x.double(), w1.double(), b1.double()))
    H = np.abs(hidden.cpu().numpy())
    DH = DY @ W2.T
    scales = {"y": H @ W2, "dx": (DH * 1.13) @ W1, "dw1": (DH * 1.13).T @ X, "db1": (DH * 1.13).sum(0),
              "dw2": H.T @ DY}
    u = roundoff(DTYPE)[0]
    rows = [slice(r * F // RANKS, (r + 1) * F // RANKS) for r in range(RANKS)]
    for r, (ty, tdx, tdw1, tdb1, tdw2) in enumerate(ranks):
        for name, got, want, scale in [("y", ty, y, scales["y"]), ("dx", tdx, dx, scales["dx"]),
                                       ("dw1", tdw1, dw1[rows[r]], scales["dw1"][rows[r]]),
                                       ("db1", tdb1, db1[rows[r]], scales["db1"][rows[r]]),
                                       ("dw2", tdw2, dw2[rows[r]], scales["dw2"][rows[r]])]:
            excess = np.abs(got.double().cpu().numpy() - want.double().cpu().numpy()) - 8 * u * scale
            assert excess.max() <= 0, f"rank {r}, {name}: {np.count_nonzero(excess > 0)} elements past the bound"

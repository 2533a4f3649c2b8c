"""PyTorch CPU tensors as host arrays: the interpreter runs on the NumPy arrays that share their memory, so written
results land in the tensors; the GPU back end refuses them."""

import numpy as np
import pytest

import nvdsl
from nvdsl.testing import requires_gpu
from helpers import axpy

torch = pytest.importorskip("torch")




@pytest.fixture
def interpret(monkeypatch):
    monkeypatch.setenv("NVDSL_BACKEND", "interpret")


def fresh(fn):
    """The same kernel with its options read again (the backend comes from the environment at the first call)."""
    return nvdsl.mlir_func(fn.fn)


def test_a_cpu_tensor_is_written_in_place(interpret):
    kernel = fresh(axpy)
    x = torch.arange(32, dtype=torch.float32)
    y = torch.ones(32, dtype=torch.float32)
    pointer = y.data_ptr()
    kernel(x, y, 2.0)
    assert y.data_ptr() == pointer
    assert torch.equal(y, 1 + 2 * torch.arange(32, dtype=torch.float32))      # exact: small integers
    kernel(x, y, 1.0)                                                         # the cached program, same tensors
    assert torch.equal(y, 1 + 3 * torch.arange(32, dtype=torch.float32))


def test_a_strided_cpu_view_gets_only_its_own_elements(interpret):
    kernel = fresh(axpy)
    base = torch.zeros(32, 2, dtype=torch.float32)
    x = torch.ones(32, dtype=torch.float32)
    kernel(x, base[:, 1], 5.0)                   # a column: stride 2
    assert torch.equal(base[:, 1], torch.full((32,), 5.0)) and torch.equal(base[:, 0], torch.zeros(32))


def test_bfloat16_and_requires_grad_cpu_tensors_run_in_the_interpreter(interpret):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    kernel = fresh(axpy)
    x = torch.arange(32, dtype=torch.bfloat16).requires_grad_()
    y = torch.zeros(32, dtype=torch.bfloat16)
    kernel(x, y, ml_dtypes.bfloat16(0.5))
    assert torch.equal(y, torch.arange(32, dtype=torch.bfloat16) * 0.5)      # exact: halves of small integers


def test_numpy_and_tensor_calls_share_a_kernel_but_not_a_program(interpret):
    kernel = fresh(axpy)
    y_np, y_t = np.zeros(32, np.float32), torch.zeros(32)
    kernel(np.ones(32, np.float32), y_np, 3.0)
    kernel(torch.ones(32), y_t, 3.0)
    kernel(np.ones(32, np.float32), y_np, 3.0)
    # exact: 3 * 1 + 0, then 3 * 1 + 3, small integers no float32 operation rounds
    assert np.array_equal(y_np, np.full(32, 6.0, np.float32)) and torch.equal(y_t, torch.full((32,), 3.0))


def test_a_float8_cpu_tensor_is_refused_with_the_way_out(interpret):
    kernel = fresh(axpy)
    with pytest.raises(nvdsl.ArgumentError) as info:
        kernel(torch.zeros(32, dtype=torch.float8_e4m3fn), torch.zeros(32), 1.0)
    assert info.value.code == "bad-dtype" and "'x'" in str(info.value) and "torch.uint8" in info.value.hint
    assert info.value.loc is not None and info.value.loc.filename == __file__


@requires_gpu
def test_the_gpu_back_end_refuses_a_cpu_tensor(monkeypatch):
    monkeypatch.setenv("NVDSL_BACKEND", "gpu")
    kernel = fresh(axpy)
    with pytest.raises(nvdsl.ArgumentError) as info:
        kernel(torch.ones(32), torch.zeros(32), 1.0)
    assert info.value.code == "bad-device" and "CPU" in str(info.value) and "t.cuda()" in info.value.hint
    x, y = torch.ones(32, device="cuda"), torch.zeros(32, device="cuda")
    kernel(x, y, 1.0)
    with pytest.raises(nvdsl.ArgumentError) as info:                          # the cached program, then a CPU one
        kernel(x, torch.zeros(32), 1.0)
    assert info.value.code == "bad-device"


def test_importing_nvdsl_imports_no_torch():
    import subprocess
    import sys
    code = "import sys, nvdsl, nvdsl.kernels.gemm; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)

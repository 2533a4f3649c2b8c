"""A cached call's fast path takes only arrays laid out as those its program was made for: another shape, dtype,
strides, alignment, device or kind of array finds (or makes) the program of its own signature, never the last
one's; the same layout in another flavour (``requires_grad``, inference mode) runs the same program."""

import numpy as np
import pytest

import nvdsl
from nvdsl.arguments import _described, describe, host_view, tensor_guard
from nvdsl.testing import requires_gpu

torch = pytest.importorskip("torch")


@pytest.fixture
def interpret(monkeypatch):
    monkeypatch.setenv("NVDSL_BACKEND", "interpret")


def scale_rows():
    """``y[i, j] = x[i, j] * (i + 1)``: a row read as a column (a transposed view taken as row-major) gives other
    values, as does a float16 program reading bfloat16 bits."""
    @nvdsl.mlir_func
    def scaled(x, y):
        rows, cols = x.shape

        @nvdsl.gpu_launch(grid=(rows, 1, 1), block=(32, 1, 1))
        def kernel(ctx):
            i = ctx.block_id.x
            for j in nvdsl.for_range(ctx.thread_id.x, cols, 32):
                y[i, j] = x[i, j] * (i + 1).to(x.dtype)
        kernel()
    return scaled


def expected(x):
    """What ``scale_rows`` writes, in float64 (exact for the small integers the tests use)."""
    x = x.detach().cpu().double() if isinstance(x, torch.Tensor) else torch.from_numpy(np.asarray(x, np.float64))
    return x * torch.arange(1, x.shape[0] + 1, dtype=torch.float64)[:, None]


def as_f64(y):
    return y.detach().cpu().double() if isinstance(y, torch.Tensor) else torch.from_numpy(y.astype(np.float64))


# --- the guard a generated run checks its tensors with ------------------------------------------------------

def guard_or_skip(tensors):
    check = tensor_guard(tensors)
    if check is None:
        pytest.skip("this torch has no tensor guards: the generated run checks each tensor in Python")
    return check


def test_the_tensor_guard_refuses_every_difference_a_kernel_depends_on():
    sample = torch.zeros(6, 6)
    check = guard_or_skip([sample])
    assert check(torch.ones(6, 6)) and check(torch.zeros(7, 6)[1:])    # the address is the caller's to check
    refused = {"shape": torch.zeros(6, 7), "rank": torch.zeros(36), "dtype": torch.zeros(6, 6, dtype=torch.float64),
               "dtype of one size": torch.zeros(6, 6, dtype=torch.int32),
               "strides": torch.zeros(6, 6).t(), "a sliced view": torch.zeros(6, 12)[:, :6],
               "requires_grad": torch.zeros(6, 6, requires_grad=True),
               "a subclass": torch.nn.Parameter(torch.zeros(6, 6)), "another device": torch.zeros(6, 6, device="meta"),
               "not a tensor": np.zeros((6, 6), np.float32)}
    assert [name for name, x in refused.items() if check(x)] == []
    half = guard_or_skip([torch.zeros(4, dtype=torch.float16)])
    assert not half(torch.zeros(4, dtype=torch.bfloat16))
    with torch.inference_mode():
        assert not check(torch.ones(6, 6))      # another mode: the sample's flavour only
    pair = guard_or_skip([sample, torch.zeros(3)])
    assert pair(torch.ones(6, 6), torch.ones(3)) and not pair(torch.ones(6, 6), torch.ones(4))


def test_a_cpu_tensors_host_view_shares_its_memory_in_any_flavour():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3).requires_grad_()
    view = host_view(x)
    assert view.strides == (12, 4) and np.array_equal(view, np.arange(6).reshape(2, 3))    # exact: small integers
    b = torch.arange(4, dtype=torch.bfloat16)
    assert host_view(b).dtype == ml_dtypes.bfloat16 and host_view(b).ctypes.data == b.data_ptr()
    with pytest.raises(nvdsl.ArgumentError) as refused:
        host_view(torch.zeros(3, dtype=torch.float8_e5m2), "z")
    assert refused.value.code == "bad-dtype" and "'z'" in str(refused.value)


def varied_tensors(device):
    base = torch.arange(8 * 9, dtype=torch.float32, device=device)
    square = base[:64].view(8, 8)
    return [square, square.clone(), square.t(), square[:, :4], base[1:65].view(8, 8), base[4:68].view(8, 8),
            square.half(), square.clone().requires_grad_(), base[:64].view(4, 16), square[None]]


def check_descriptions(device, distinct):
    """Each tensor's description, asked twice under two names, is what describing it afresh gives: the tensors
    laid out alike (at another address, in another flavour) share one, the others have their own (``distinct``
    in all: a host array's start is not part of its description, a device array's alignment to 16 bytes is)."""
    for name in ("x", "y"):
        for _ in range(2):
            for x in varied_tensors(device):
                assert describe(x, name, None) == _described(x, name, None), (name, x.shape, x.stride())
    assert len({describe(x, "x", None)[0] for x in varied_tensors(device)}) == distinct


def test_a_cpu_tensors_description_is_found_again_by_its_key():
    check_descriptions("cpu", 6)          # the clone, the one that requires grad and both offsets: the first's


@requires_gpu
def test_a_cuda_tensors_description_is_found_again_by_its_key():
    check_descriptions("cuda", 7)         # the clone, the one that requires grad, 16 bytes in: the first's
    unaligned = torch.zeros(65, device="cuda")[1:]
    assert describe(unaligned, "x", None)[0].unaligned and not describe(unaligned.clone(), "x", None)[0].unaligned


# --- the interpreter's cached calls ---------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_an_interpreted_call_with_another_layout_or_dtype_misses_the_cached_program(interpret, kind):
    scaled = scale_rows()
    array = (lambda a: a) if kind == "numpy" else torch.from_numpy
    x = array(np.arange(64, dtype=np.float32).reshape(8, 8))
    calls = [(x, 1), (x.T if kind == "numpy" else x.t(), 2),              # same shape, other strides
             (array(np.arange(64, dtype=np.float16).reshape(8, 8)), 3),    # same shape and strides, another dtype
             (x[:, :4], 4), (x, 4)]                                         # a sliced view, then the first again
    for value, programs in calls:
        y = array(np.zeros(value.shape, np.float32 if value.dtype in (np.float32, torch.float32) else np.float16))
        scaled(value, y)
        assert torch.equal(as_f64(y), expected(value)) and len(scaled._programs) == programs


def test_an_interpreted_cpu_tensor_call_runs_its_program_whatever_the_flavour(interpret):
    scaled = scale_rows()
    x, y = torch.ones(4, 32), torch.zeros(4, 32)
    scaled(x, y)
    scaled(x.clone().requires_grad_(), y)
    with torch.inference_mode():
        scaled(torch.full((4, 32), 2.0), y)
    assert torch.equal(y.double(), expected(torch.full((4, 32), 2.0))) and len(scaled._programs) == 1


# --- the GPU's generated runs ----------------------------------------------------------------------------------

@requires_gpu
def test_a_cached_gpu_call_takes_only_tensors_laid_out_as_its_own():
    """The generated run of ``scaled``: a view of the same shape with other strides, another dtype of the same size,
    a start off 16 bytes, a tensor on the CPU each miss it; the first layout in another flavour (requires_grad,
    inference mode) runs the same program, checked one by one and then by the guard that learnt it."""
    scaled = scale_rows()
    base = torch.arange(64 * 65, dtype=torch.float16, device="cuda") % 64
    x = base[:64 * 64].view(64, 64)

    def run(value, programs):
        y = torch.zeros(value.shape, dtype=value.dtype, device="cuda")
        scaled(value, y)
        torch.cuda.synchronize()
        # exact: one rounding of an exact product to the tensor's dtype (bfloat16 holds few of them exactly)
        assert torch.equal(as_f64(y), expected(value).to(value.dtype).double()) and len(scaled._programs) == programs

    run(x, 1)
    run(x, 1)
    run(x.t(), 2)
    run(x.view(torch.bfloat16).clone().copy_(x), 3)                # same shape and strides, another dtype
    run(base[1:64 * 64 + 1].view(64, 64), 4)                       # 2 bytes past a 16-byte boundary
    run(x.clone(), 4)
    for _ in range(2):                                             # learnt: then the guard takes it
        run(x.clone().requires_grad_(), 4)
        with torch.inference_mode():
            run(x.clone(), 4)
    with pytest.raises(nvdsl.ArgumentError) as refused:
        scaled(x.cpu(), torch.zeros(64, 64, dtype=torch.float16, device="cuda"))
    assert refused.value.code == "bad-device"


@requires_gpu
@pytest.mark.parametrize("kept", [None, 2])
def test_a_cached_task_kernel_call_finds_each_buffers_descriptors(monkeypatch, kept):
    """A TMA kernel's cached calls on buffers that alternate: each call's descriptors are its own buffers', from the
    program's sets of them by address; with room for ``kept`` descriptors per argument, each argument's are freed
    and made again every few calls, and the sets that held them are dropped."""
    import nvdsl.runtime.tensormap as tensormap
    from nvdsl.kernels.gemm import gemm
    if kept is not None:
        monkeypatch.setattr(tensormap, "_CACHE_LIMIT", kept)
    g = torch.Generator().manual_seed(0)
    operands = [(torch.randint(-2, 3, (128, 64), generator=g).half().cuda(),
                 torch.randint(-2, 3, (64, 128), generator=g).half().cuda()) for _ in range(3)]
    outputs = [torch.zeros(128, 128, device="cuda") for _ in operands]
    for _ in range(2):
        for (a, b), c in zip(operands, outputs):
            c.zero_()
            gemm(a, b, c)
    torch.cuda.synchronize()
    for (a, b), c in zip(operands, outputs):           # exact: sums of 64 products of integers in [-2, 2]
        assert torch.equal(c.double(), a.double() @ b.double())


def test_a_cached_call_with_constants_of_another_type_or_value_misses_the_cached_program(interpret):
    """Compile-time constants key the program by type and value: 2, 2.0 and True (equal in Python) are three."""
    @nvdsl.mlir_func
    def fill(y, *, value):
        @nvdsl.gpu_launch(grid=1, block=32)
        def kernel(ctx):
            y[ctx.thread_id.x] = nvdsl.constant(float(value), y.dtype)
        kernel()
    y = np.zeros(32, np.float32)
    for value, programs, written in ((2, 1, 2.0), (2.0, 2, 2.0), (True, 3, 1.0), ((1, 2)[1], 3, 2.0), (3, 4, 3.0)):
        fill(y, value=value)
        assert len(fill._programs) == programs and set(y.tolist()) == {written}

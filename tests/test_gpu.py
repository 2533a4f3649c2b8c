"""On the GPU: results against NumPy for each dtype and argument kind, semantics, memory, cache, errors."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import nvdsl
from helpers import DLPackOnly, two_step_host
from nvdsl.testing import GPU_MARKS

pytestmark = GPU_MARKS


def make_axpy():
    traces = []

    @nvdsl.mlir_func
    def axpy(x, y, alpha):
        traces.append(x.shape)
        rows, cols = x.shape

        @nvdsl.gpu_launch(grid=((cols + 31) // 32, rows), block=32)
        def kernel(ctx):
            i, j = ctx.block_id.y, ctx.block_id.x * 32 + ctx.thread_id.x
            with nvdsl.when(j < cols):
                y[i, j] = alpha * x[i, j] + y[i, j]
        kernel()
    return axpy, traces


@pytest.mark.parametrize("dtype, alpha, tolerance", [
    (np.float32, 2.5, 1e-6), (np.float16, np.float16(1.5), 1e-3), (np.int32, 3, 0)])
def test_numpy_arrays_are_copied_in_and_written_ones_back(dtype, alpha, tolerance):
    axpy, traces = make_axpy()
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((100, 300)) * 8).astype(dtype)
    y = (rng.standard_normal((100, 300)) * 8).astype(dtype)
    x_before, expected = x.copy(), (alpha * x.astype(np.float64) + y).astype(dtype)
    axpy(x, y, alpha)
    np.testing.assert_allclose(y.astype(np.float64), expected.astype(np.float64), rtol=tolerance, atol=tolerance)
    assert np.array_equal(x, x_before)
    axpy(x, y, alpha)  # same signature: no new trace
    assert traces == [(100, 300)]


@pytest.mark.parametrize("dtype, alpha", [("float32", 2.0), ("float16", np.float16(2.0)), ("int32", 3)])
def test_torch_tensors_are_used_in_place(dtype, alpha):
    torch = pytest.importorskip("torch")
    axpy, _ = make_axpy()
    t = getattr(torch, dtype)
    x = (torch.randn(64, 256, device="cuda") * 8).to(t)
    y = (torch.randn(64, 256, device="cuda") * 8).to(t)
    expected = alpha * x.double() + y.double()
    pointer = y.data_ptr()
    axpy(x, y, alpha)
    torch.cuda.synchronize()
    assert y.data_ptr() == pointer
    tolerance = {"float32": 1e-5, "float16": 2e-2, "int32": 0}[dtype]
    torch.testing.assert_close(y.double(), expected, rtol=tolerance, atol=tolerance)


def test_keyword_constants_in_any_order_hit_the_loaded_kernel():
    traces = []

    @nvdsl.mlir_func
    def fill(x, *, value, offset):
        traces.append((value, offset))

        @nvdsl.gpu_launch(grid=1, block=x.shape[0])
        def kernel(ctx):
            x[ctx.thread_id.x] = value + offset
        kernel()
    x = np.zeros(32, np.int32)
    fill(x, value=3, offset=4)
    fill(x, offset=4, value=3)
    assert traces == [(3, 4)] and (x == 7).all()


def test_bfloat16_tensors_with_a_constant_factor():  # a bf16 scalar argument has no NumPy type
    torch = pytest.importorskip("torch")

    @nvdsl.mlir_func
    def scale(x, *, factor):
        @nvdsl.gpu_launch(grid=x.shape[0] // 128, block=128)
        def kernel(ctx):
            i = ctx.block_id.x * 128 + ctx.thread_id.x
            x[i] = x[i] * factor
        kernel()
    x = torch.randn(4096, device="cuda").to(torch.bfloat16)
    expected = x.double() * 0.5
    scale(x, factor=0.5)
    torch.cuda.synchronize()
    torch.testing.assert_close(x.double(), expected)


def test_cupy_arrays_via_the_cuda_array_interface():
    cupy = pytest.importorskip("cupy")
    axpy, _ = make_axpy()
    x = cupy.random.standard_normal((32, 64), dtype=cupy.float32)
    y = cupy.random.standard_normal((32, 64), dtype=cupy.float32)
    expected = 2.0 * x + y
    axpy(x, y, 2.0)
    cupy.cuda.runtime.deviceSynchronize()
    assert float(cupy.abs(y - expected).max()) < 1e-5


def test_dlpack_only_device_arrays():
    torch = pytest.importorskip("torch")
    axpy, _ = make_axpy()
    x, y = torch.randn(16, 64, device="cuda"), torch.randn(16, 64, device="cuda")
    expected = 2.0 * x + y
    axpy(DLPackOnly(x), DLPackOnly(y), 2.0)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, expected)


def test_on_a_torch_stream():
    torch = pytest.importorskip("torch")
    axpy, _ = make_axpy()
    stream = torch.cuda.Stream()
    x, y = torch.randn(16, 64, device="cuda"), torch.randn(16, 64, device="cuda")
    expected = 2.0 * x + y
    torch.cuda.synchronize()
    axpy(x, y, 2.0, stream=stream)
    stream.synchronize()
    torch.testing.assert_close(y, expected)


def test_a_kernel_overlapping_the_previous_reads_everything_it_wrote():
    """``overlap_previous``: the second kernel's blocks start while the first's last wave runs (it lets them go at
    its start), and still read every element it wrote: 2**22 of them, in a CUDA graph too."""
    torch = pytest.importorskip("torch")
    two_steps = two_step_host()
    n = 1 << 22
    x = torch.arange(n, device="cuda", dtype=torch.float32) % 1000        # small integers: the sums are exact
    y, z = torch.zeros_like(x), torch.zeros_like(x)
    two_steps(x, y, z)
    torch.testing.assert_close(z, 2 * x + 1, rtol=0, atol=0)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        two_steps(x, y, z)
    x.add_(1)
    graph.replay()
    torch.testing.assert_close(z, 2 * x + 1, rtol=0, atol=0)


@nvdsl.mlir_func
def python_operators(a, b, out):
    @nvdsl.gpu_launch(grid=1, block=a.shape[0])
    def kernel(ctx):
        i = ctx.thread_id.x
        out[0, i] = a[i] // b[i]
        out[1, i] = a[i] % b[i]
        out[2, i] = (a[i] < b[i]).to(out.dtype)
        out[3, i] = a[i] ** 2
    kernel()


OPERATOR_CASES = [
    (np.array([-7, 7, -7, 7, -1, 0, 9, -9], np.int32), np.array([2, 2, -2, -2, 3, 5, -4, 4], np.int32)),
    (np.array([4000000000, 7, 3, 1 << 31], np.uint32), np.array([3, 2, 5, 3], np.uint32)),
    (np.array([-7.5, 7.5, -7.5, 7.5], np.float32), np.array([2.0, 2.0, -2.0, -2.0], np.float32)),
]


def check_python_operators(call, a, b) -> None:
    out = np.zeros((4, a.size), a.dtype)
    call(a, b, out)
    with np.errstate(over="ignore"):  # uint32 a**2 wraps, on the GPU as in NumPy
        expected = np.stack([a // b, a % b, (a < b).astype(a.dtype), a ** 2])
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("a, b", OPERATOR_CASES)
def test_operators_follow_python_semantics(a, b):
    check_python_operators(python_operators, a, b)


def test_shifts_follow_signedness():
    @nvdsl.mlir_func
    def shift(a, out):
        @nvdsl.gpu_launch(grid=1, block=a.shape[0])
        def kernel(ctx):
            out[ctx.thread_id.x] = a[ctx.thread_id.x] >> 1
        kernel()
    for a in (np.array([-8, -1, 7, 1 << 30], np.int32), np.array([1 << 31, 7, 3, 0xFFFFFFFF], np.uint32)):
        out = np.zeros_like(a)
        shift(a, out)
        np.testing.assert_array_equal(out, a >> 1)


def row_stats():
    """Per row (one thread each): a loop carrying a sum and a count, a branch with results, a when/otherwise,
    and a loop whose trip count differs between the threads of a warp."""
    @nvdsl.mlir_func
    def row_stats(x, out):
        rows, cols = x.shape

        @nvdsl.gpu_launch(grid=1, block=rows)
        def kernel(ctx):
            r = ctx.thread_id.x

            @nvdsl.fori(0, cols, carry=(nvdsl.constant(0.0, nvdsl.float32), nvdsl.constant(0, nvdsl.int32)))
            def stats(j, carry):
                total, positives = carry
                return total + x[r, j], positives + (x[r, j] > 0.0).to(nvdsl.int32)
            total, positives = stats
            out[r, 0] = total
            out[r, 1] = positives.to(nvdsl.float32)
            out[r, 2] = nvdsl.cond(total > 0.0, lambda: total, lambda: -total)
            with nvdsl.when(positives > cols // 2) as branch:
                out[r, 3] = 1.0
            with branch.otherwise():
                out[r, 3] = -1.0

            @nvdsl.fori(0, r % 5, carry=nvdsl.constant(0, nvdsl.int32))
            def count(j, n):
                return n + 1
            out[r, 4] = count.to(nvdsl.float32)
        kernel()
    return row_stats


def check_row_stats(call) -> None:
    x = np.random.default_rng(2).standard_normal((64, 100)).astype(np.float32)
    out = np.zeros((64, 5), np.float32)
    call(x, out)
    total, positives = x.sum(1), (x > 0).sum(1)
    np.testing.assert_allclose(out[:, 0], total, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(out[:, 1], positives)
    np.testing.assert_allclose(out[:, 2], np.abs(total), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(out[:, 3], np.where(positives > 50, 1.0, -1.0))
    np.testing.assert_array_equal(out[:, 4], np.arange(64) % 5)


def test_loops_with_carries_and_branches():
    check_row_stats(row_stats())


def reverse(block: int):
    """x reversed through dynamic shared memory, plus a static shared array of thread ids read backwards."""
    @nvdsl.mlir_func
    def reverse(x):
        n = x.shape[0]

        @nvdsl.gpu_launch(grid=1, block=block, smem=n * 4)
        def kernel(ctx):
            t = ctx.thread_id.x
            staged = ctx.dynamic_shared((n,), nvdsl.float32)
            flags = ctx.shared_array((block,), nvdsl.int32)
            for k in nvdsl.for_range(0, n, block):
                staged[k + t] = x[k + t]
            flags[t] = t.to(nvdsl.int32)
            ctx.sync_threads()
            for k in nvdsl.for_range(0, n, block):
                x[k + t] = staged[n - 1 - (k + t)] + flags[block - 1 - t].to(nvdsl.float32)
        kernel()
    return reverse


def check_reverse(call, n: int, block: int) -> None:
    x = np.arange(n, dtype=np.float32)
    expected = x[::-1] + (block - 1 - np.arange(n) % block)
    call(x)
    np.testing.assert_array_equal(x, expected)


def test_shared_memory_static_and_dynamic_beyond_48_kib():
    check_reverse(reverse(1024), 48 * 1024, 1024)   # 192 KiB of dynamic shared memory: needs the opt-in


def check_too_much_shared_memory_is_refused(backend_options: dict) -> None:
    """240 KiB of dynamic shared memory, past the device's limit: refused naming both numbers."""
    @nvdsl.mlir_func
    def big(x):
        @nvdsl.gpu_launch(grid=1, block=32, smem=240 * 1024)
        def kernel(ctx):
            x[ctx.thread_id.x] = 1.0
        kernel()
    with pytest.raises(nvdsl.LaunchConfigError) as info:
        big.with_options(**backend_options)(np.zeros(32, np.float32))
    assert info.value.code == "smem-too-large"
    assert "245760" in str(info.value) and "allows at most" in str(info.value)


def test_shared_memory_above_the_device_limit_names_both_numbers():
    check_too_much_shared_memory_is_refused({})


def test_read_only_numpy_output_is_refused():
    axpy, _ = make_axpy()
    y = np.zeros((2, 32), np.float32)
    y.flags.writeable = False
    with pytest.raises(nvdsl.ArgumentError) as info:
        axpy(np.ones((2, 32), np.float32), y, 1.0)
    assert info.value.code == "read-only" and "'y'" in str(info.value)


def test_driver_failures_carry_the_cuda_error_name():
    from nvdsl.runtime.device import check, driver, get_device
    from nvdsl.runtime.launch import load_module
    compiled = make_axpy()[0].compile(np.ones((2, 32), np.float32), np.ones((2, 32), np.float32), 1.0)
    module = load_module(get_device(0), compiled.cubin, compiled.ptx, "sm_90a")
    with pytest.raises(nvdsl.CudaError) as info:
        check(driver().cuModuleGetFunction(module, b"no_such_kernel"), "cuModuleGetFunction")
    assert info.value.result == "CUDA_ERROR_NOT_FOUND"


def test_disk_cache_serves_a_second_process(tmp_path):
    script = textwrap.dedent('''
        import json, sys, time, numpy as np
        sys.path.insert(0, sys.argv[1])
        from test_gpu import make_axpy
        axpy, _ = make_axpy()
        x, y = np.ones((8, 64), np.float32), np.ones((8, 64), np.float32)
        start = time.perf_counter()
        axpy(x, y, 2.0)
        first_call = time.perf_counter() - start
        print(json.dumps({"timings": axpy.compile(x, y, 2.0).module.timings, "ok": bool((y == 3).all()),
                          "first_call_s": first_call}))
    ''')
    here = os.path.dirname(__file__)
    env = dict(os.environ, NVDSL_CACHE_DIR=str(tmp_path))
    runs = [json.loads(subprocess.run([sys.executable, "-c", script, here], env=env, cwd=here, check=True,
                                      capture_output=True, text=True).stdout) for _ in range(2)]
    assert runs[0]["ok"] and runs[1]["ok"]
    assert runs[0]["timings"] != {} and runs[1]["timings"] == {}

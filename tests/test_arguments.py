"""Bad call arguments give a clear ArgumentError naming the argument and what was expected."""

import numpy as np
import pytest

import nvdsl
from helpers import DLPackOnly, FakeDLPackDeviceArray
from nvdsl.testing import has_gpu


@nvdsl.mlir_func
def scale(x, y, factor):
    @nvdsl.gpu_launch(grid=1, block=x.shape[0])
    def kernel(ctx):
        i = ctx.thread_id.x
        y[i] = x[i] * factor
    kernel()


def vectors(dtype=np.float32, n=32):
    return np.ones(n, dtype), np.zeros(n, dtype)


class ForeignDeviceArray:
    """A third-party device array, seen only through the CUDA array interface protocol."""

    def __init__(self, pointer, shape, typestr="<f4", strides=None):
        self.__cuda_array_interface__ = {"data": (pointer, False), "shape": shape, "typestr": typestr,
                                         "strides": strides, "version": 3}


@pytest.mark.parametrize("x, code, words", [
    (np.ones(32, np.complex64), "bad-dtype", ["'x'", "complex64", "float32"]),
    (np.ones(32, np.bool_), "bad-dtype", ["'x'", "bool", "uint8"]),
    (np.ones((2, 32), np.float32)[0, ::-1], "bad-strides", ["'x'", "negative stride", "ascontiguousarray"]),
    (np.array(1.0, np.float32), "bad-rank", ["'x'", "0-d"]),
    ("hello", "bad-argument", ["'x'", "str"]),
    (ForeignDeviceArray(0x1000, (32,), strides=(6,)), "bad-strides", ["'x'", "whole 4-byte elements"]),
    (ForeignDeviceArray(0x1000, (32,), strides=(0,)), "bad-strides", ["'x'", "overlap"]),
    (ForeignDeviceArray(0x1002, (32,)), "misaligned", ["'x'", "0x1002"]),
    (ForeignDeviceArray(0x1000, (32,), typestr="<c8"), "bad-dtype", ["'x'", "<c8"]),
    (DLPackOnly(np.ones(32, np.float32)), "bad-device", ["'x'", "DLPack"]),
])
def test_bad_array_arguments(x, code, words):
    with pytest.raises(nvdsl.ArgumentError) as info:
        scale(x, np.zeros(32, np.float32), 2.0)
    assert info.value.code == code
    for word in words:
        assert word in str(info.value)
    assert info.value.loc is not None and info.value.loc.filename == __file__


def test_scalar_out_of_range_names_the_argument_and_the_fix():
    with pytest.raises(nvdsl.ArgumentError) as info:
        scale(*vectors(np.int64), 2**40)
    assert info.value.code == "out-of-range" and "'factor'" in str(info.value)
    assert "np.int64" in str(info.value)


def test_wrong_argument_count_is_reported_with_the_signature():
    with pytest.raises(nvdsl.ArgumentError) as info:
        scale(*vectors())
    assert info.value.code == "bad-call" and "factor" in str(info.value)


def test_arrays_may_not_be_compile_time_constants():
    @nvdsl.mlir_func
    def host(x, *, table):
        pass
    with pytest.raises(nvdsl.ArgumentError) as info:
        host.trace(np.ones(4, np.float32), table=np.ones(4))
    assert info.value.code == "bad-call"


def test_unhashable_constants_are_reported():
    @nvdsl.mlir_func
    def host(x, *, sizes):
        pass
    with pytest.raises(nvdsl.ArgumentError) as info:
        host.trace(np.ones(4, np.float32), sizes=[1, 2])
    assert info.value.code == "bad-constant"


def test_a_shape_that_contradicts_the_kernel_is_a_trace_error_and_a_legal_one_retraces():
    @nvdsl.mlir_func
    def transpose(a, b):
        @nvdsl.gpu_launch(grid=1, block=(a.shape[0], b.shape[0]))
        def kernel(ctx):
            b[ctx.thread_id.y, ctx.thread_id.x] = a[ctx.thread_id.x, ctx.thread_id.y]
        kernel()
    with pytest.raises(nvdsl.TraceError) as info:
        transpose.trace(np.ones(8, np.float32), np.ones(8, np.float32))
    assert info.value.code == "bad-index" and "rank 1" in str(info.value)
    assert "memref<4x8xf32>" in transpose.trace(np.ones((8, 4), np.float32), np.ones((4, 8), np.float32)).mlir


@pytest.mark.skipif(has_gpu(), reason="checks the no-GPU behaviour")
def test_calling_without_a_gpu_runs_in_the_interpreter_and_asking_for_the_gpu_says_compiling_still_works():
    x, y = vectors()
    scale(x, y, 2.0)
    assert scale.backend == "interpret" and (y == 2.0).all()
    on_gpu = scale.with_options(backend="gpu")
    with pytest.raises(nvdsl.NoDeviceError) as info:
        on_gpu(*vectors(), 2.0)
    assert "compiling still works" in str(info.value)
    assert on_gpu.compile(*vectors(), 2.0).ptx  # and it does


def test_driver_errors_are_decoded_to_their_names():
    from cuda.bindings import driver as cu

    from nvdsl.runtime.device import check
    with pytest.raises(nvdsl.CudaError) as info:
        check((cu.CUresult.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,), "cuLaunchKernel(k)")
    assert info.value.result == "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"
    assert "cuLaunchKernel(k) failed with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES" in str(info.value)


def test_float8_arrays_come_from_torch_or_dlpack_never_from_numpy():
    from mlir import ir

    from helpers import FakeDLPackDeviceArray
    from nvdsl import dtypes as dt
    from nvdsl.arguments import _TORCH_DTYPES, DEVICE, describe
    with ir.Context():
        assert [str(d.mlir_type()) for d in (dt.float8_e4m3fn, dt.float8_e5m2)] == ["f8E4M3FN", "f8E5M2"]
    assert dt.float8_e4m3fn.itemsize == dt.float8_e5m2.itemsize == 1
    assert _TORCH_DTYPES["torch.float8_e4m3fn"] is dt.float8_e4m3fn
    assert _TORCH_DTYPES["torch.float8_e5m2"] is dt.float8_e5m2
    for code, dtype in ((10, dt.float8_e4m3fn), (12, dt.float8_e5m2)):   # DLPack's kDLFloat8_* codes
        spec, where = describe(FakeDLPackDeviceArray((4, 16), code, 8), "x", None)
        assert (spec.dtype, spec.shape, where) == (dtype, (4, 16), DEVICE)
    # NumPy has no float8: its bytes stay uint8, and nothing NumPy-typed maps to a float8 dtype.
    assert describe(np.zeros(16, np.uint8), "x", None)[0].dtype is dt.uint8
    assert all(dt.numpy_dtype(d) is None for d in (dt.float8_e4m3fn, dt.float8_e5m2))
    assert dt.from_typestr("|u1") is dt.uint8 and dt.from_typestr("|V1") is None


@pytest.mark.parametrize("x, words", [
    (FakeDLPackDeviceArray((4, 16), 10, 16), ["'x'", "DLPack type code 10 of 16 bits"]),
    (FakeDLPackDeviceArray((4, 16), 11, 8), ["'x'", "DLPack type code 11 of 8 bits"]),  # float8_e4m3fnuz
    (ForeignDeviceArray(0x1000, (32,), typestr="|V1"), ["'x'", "|V1"]),         # an opaque byte is not fp8
])
def test_unknown_float8_flavours_are_refused(x, words):
    with pytest.raises(nvdsl.ArgumentError) as info:
        scale(x, np.zeros(32, np.float32), 2.0)
    assert info.value.code == "bad-dtype"
    for word in words:
        assert word in str(info.value)


def test_ml_dtypes_float8_numpy_arrays_are_refused_with_the_way_out():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    with pytest.raises(nvdsl.ArgumentError) as info:
        scale(np.zeros(32, ml_dtypes.float8_e4m3fn), np.zeros(32, np.float32), 2.0)
    assert info.value.code == "bad-dtype"
    for word in ("'x'", "NumPy array of float8_e4m3fn", "torch.float8_e4m3fn", "x.view(np.uint8)"):
        assert word in str(info.value)

"""Shared helpers for the tests: trace a one-thread kernel body; load one TMA box; a DLPack-only array; record
the protocol check's loop summaries; compare a product with the error its arithmetic allows."""

import numpy as np

import nvdsl

# Unit roundoff (half an ulp at 1) and half the smallest subnormal of the types a product is stored in.
_UNIT_ROUNDOFF = {"float32": (2.0 ** -24, 2.0 ** -150), "float16": (2.0 ** -11, 2.0 ** -25),
                  "bfloat16": (2.0 ** -8, 2.0 ** -134)}


def roundoff(dtype) -> tuple[float, float]:
    """Half an ulp at 1 of a float type, and half its smallest subnormal (a NumPy dtype, ml_dtypes' bfloat16, or a
    torch dtype)."""
    name = str(dtype).removeprefix("torch.") if type(dtype).__module__ == "torch" else np.dtype(dtype).name
    return _UNIT_ROUNDOFF[name]


def product_error_bound(a, b, out_dtype) -> np.ndarray:
    """The largest ``|c - a @ b|`` (elementwise) that ``c``, ``a @ b`` accumulated in float32 in any order and
    rounded to ``out_dtype``, may show: ``gamma_K |a| @ |b|`` for the float32 sums (Higham, Accuracy and
    Stability, Lemma 3.1; the float16 or bfloat16 inputs' products are exact in float32) plus the final
    rounding. Nothing in it depends on how a BLAS library blocks its sums, which differ from machine to machine."""
    k = a.shape[-1]
    u32 = roundoff(np.float32)[0]
    gamma = k * u32 / (1 - k * u32)
    accumulated = gamma * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)))
    exact = a.astype(np.float64) @ b.astype(np.float64)
    u_out, tiny = roundoff(out_dtype)
    return accumulated + u_out * (np.abs(exact) + accumulated) + tiny


def assert_product_close(c, a, b):
    """``c`` holds ``a @ b`` (float16 or bfloat16 operands) to within :func:`product_error_bound`."""
    exact = a.astype(np.float64) @ b.astype(np.float64)
    excess = np.abs(c.astype(np.float64) - exact) - product_error_bound(a, b, c.dtype)
    worst = tuple(int(i) for i in np.unravel_index(np.argmax(excess), excess.shape))
    assert excess[worst] <= 0, (f"{np.count_nonzero(excess > 0)} elements past the error bound; at {worst}: "
                                f"{c[worst]} against {exact[worst]}")


def load_box(ctx, tma, at, shape=(64, 64), dtype=nvdsl.float16):
    """In a kernel: TMA-load the ``shape`` tile (default a 64 x 64 float16 box) of ``tma`` at ``at`` into a new
    shared tile, wait for it, and return the tile."""
    tile = ctx.dynamic_shared(shape, dtype, align=1024)
    bar = nvdsl.Mbarriers(1)[0]
    leader = ctx.thread_id.x.eq(0)
    bar.init(1, predicate=leader)
    ctx.sync_threads()
    bar.arrive(shape[0] * shape[1] * dtype.itemsize, predicate=leader)
    tma.load(tile, bar, at, predicate=leader)
    bar.try_wait(0)
    return tile


def trace_body(body, *args, **constants) -> str:
    """The traced MLIR of a kernel whose body is ``body(ctx, *args)``; ``args`` fix the scalar dtypes."""

    @nvdsl.mlir_func
    def host(*values):
        @nvdsl.gpu_launch(grid=1, block=1)
        def kernel(ctx):
            return body(ctx, *values)
        kernel()

    return host.trace(*args, **constants).mlir


class DLPackOnly:
    """A third-party array that exports only DLPack (wrapping any array that has ``__dlpack__``)."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


class FakeDLPackDeviceArray:
    """A DLPack export claiming a GPU array at a made-up address: enough to trace and compile, never to launch.

    ``code`` and ``bits`` are the DLPack dtype (e.g. 10 and 8 for ``kDLFloat8_e4m3fn``), so dtypes that
    NumPy lacks can be described without a framework that has them.
    """

    _NAME = b"dltensor"

    def __init__(self, shape, code: int, bits: int, pointer: int = 0x7F0000000000):
        import ctypes
        from nvdsl import arguments as arrays
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        managed = self._managed = (ctypes.c_byte * (ctypes.sizeof(arrays._DLTensor) + 16))()
        tensor = arrays._DLTensor.from_buffer(managed)   # DLManagedTensor starts with its DLTensor
        tensor.data, tensor.ndim, tensor.shape, tensor.strides = pointer, len(shape), self._shape, None
        tensor.device.device_type, tensor.device.device_id = 2, 0         # kDLCUDA, GPU 0
        tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes = code, bits, 1
        new_capsule = ctypes.pythonapi.PyCapsule_New
        new_capsule.restype, new_capsule.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p,
                                                                       ctypes.c_void_p]
        self._new_capsule = lambda: new_capsule(ctypes.addressof(managed), self._NAME, None)

    def __dlpack__(self, stream=None):
        return self._new_capsule()

    def __dlpack_device__(self):
        return (2, 0)


def record_skips(monkeypatch) -> list:
    """Make the protocol check's loop summaries record, after each attempt to skip periods, how many iterations
    they have skipped so far (the returned list grows as the check runs)."""
    import nvdsl.interpreter.period as period
    skipped = []
    original = period.Summary._skip

    def recording(self, earlier, now):
        done = original(self, earlier, now)
        skipped.append(self.skipped)
        return done
    monkeypatch.setattr(period.Summary, "_skip", recording)
    return skipped


@nvdsl.mlir_func
def axpy(x, y, alpha):
    """``y += alpha * x`` on vectors of a multiple of 32 elements, one thread each (for the torch tests)."""
    @nvdsl.gpu_launch(grid=x.shape[0] // 32, block=32)
    def kernel(ctx):
        i = ctx.block_id.x * 32 + ctx.thread_id.x
        y[i] = y[i] + x[i] * alpha
    kernel()


def two_step_host():
    """``y = 2 x`` then ``z = y + 1``, the second kernel overlapping the first (programmatic dependent launch)."""
    @nvdsl.mlir_func
    def two_steps(x, y, z):
        n, = x.shape

        @nvdsl.gpu_launch(grid=n // 128, block=128)
        def double(ctx):
            ctx.launch_dependents()
            i = ctx.block_id.x * 128 + ctx.thread_id.x
            y[i] = x[i] * 2.0
        double()

        @nvdsl.gpu_launch(grid=n // 128, block=128, overlap_previous=True)
        def increment(ctx):
            i = ctx.block_id.x * 128 + ctx.thread_id.x
            z[i] = y[i] + 1.0
        increment()
    return two_steps

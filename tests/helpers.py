"""Shared helpers for the tests: trace a one-thread kernel body; load one TMA box; a DLPack-only array; record
the protocol check's loop summaries."""

import nvdsl


def load_box(ctx, tma, at):
    """In a kernel: TMA-load the 64 x 64 float16 box of ``tma`` at ``at`` into a new shared tile, wait for
    it, and return the tile."""
    tile = ctx.dynamic_shared((64, 64), nvdsl.float16, align=1024)
    bar = nvdsl.Mbarriers(1)[0]
    leader = ctx.thread_id.x.eq(0)
    bar.init(1, predicate=leader)
    ctx.sync_threads()
    bar.arrive(64 * 64 * 2, predicate=leader)
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
        from nvdsl.runtime import arrays
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

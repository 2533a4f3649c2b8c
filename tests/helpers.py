"""Shared helpers for the tests: trace a one-thread kernel body; a DLPack-only array."""

import nvdsl


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

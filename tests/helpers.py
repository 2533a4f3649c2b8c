"""Shared helpers for the CPU tests: trace a one-thread kernel body over given scalars."""

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

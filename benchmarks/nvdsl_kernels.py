"""The nvdsl kernels of the launch, saxpy and compile suites (importing this module imports nvdsl).

Both compute ``y = alpha * x + y`` in place on 1-D float32 arrays; ``n`` must be
a multiple of the elements one block handles.
"""

import nvdsl

BLOCK = 256       # threads per block
PER_THREAD = 4    # elements per thread in axpy_multi


@nvdsl.mlir_func
def axpy(x, y, alpha):
    """One element per thread."""
    n = x.shape[0]

    @nvdsl.gpu_launch(grid=n // BLOCK, block=BLOCK)
    def kernel(ctx):
        i = ctx.block_id.x * BLOCK + ctx.thread_id.x
        y[i] = alpha * x[i] + y[i]

    kernel()


@nvdsl.mlir_func
def axpy_multi(x, y, alpha):
    """PER_THREAD elements per thread, a block's accesses coalesced at each step of a traced loop."""
    n = x.shape[0]
    tile = BLOCK * PER_THREAD

    @nvdsl.gpu_launch(grid=n // tile, block=BLOCK)
    def kernel(ctx):
        base = ctx.block_id.x * tile + ctx.thread_id.x
        for k in nvdsl.for_range(0, PER_THREAD):
            i = base + k * BLOCK
            y[i] = alpha * x[i] + y[i]

    kernel()

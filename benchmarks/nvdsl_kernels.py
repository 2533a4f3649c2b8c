"""The nvdsl kernels the suites measure (importing this module imports nvdsl).

``axpy`` and ``axpy_multi`` compute ``y = alpha * x + y`` in place on 1-D float32
arrays (launch, saxpy and compile suites); ``n`` must be a multiple of the
elements one block handles. :func:`register_gemms` adds the tutorial GEMMs to
the gemm suite.
"""

import os
import sys

import nvdsl

_TUTORIALS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tutorials")

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


def register_gemms(registry: dict) -> None:
    """Add nvdsl's GEMM kernels to the gemm suite's registry (name -> fn(a, b, c))."""
    if _TUTORIALS not in sys.path:
        sys.path.insert(0, _TUTORIALS)
    import ch4_gemm_multistage

    kernels = {}
    for dtype_name in ("float16", "bfloat16"):
        kernels[dtype_name] = ch4_gemm_multistage.make_gemm(num_stages=4, dtype=getattr(nvdsl, dtype_name))

    def ch4(a, b, c):
        kernels[str(a.dtype).removeprefix("torch.")](a, b, c)
    ch4.c_dtype = "fp32"
    registry.setdefault("nvdsl-ch4", ch4)

    import ch5_gemm_warp_specialized
    ch5_kernels = {name: ch5_gemm_warp_specialized.make_gemm(num_stages=4, dtype=getattr(nvdsl, name))
                   for name in ("float16", "bfloat16")}

    def ch5(a, b, c):
        ch5_kernels[str(a.dtype).removeprefix("torch.")](a, b, c)
    registry.setdefault("nvdsl-ch5", ch5)

    import nvdsl.tasks as nt
    from nvdsl.kernels.gemm import MAPPING, PINGPONG_MAPPING, gemm, matmul
    registry.setdefault("nvdsl-gemm", gemm)

    # The same program under the ping-pong mapping (consumers taking turns at the K loop, 128 x 128 tiles),
    # beside the default cooperative one: whether ping-pong pays, per K.
    def gemm_pingpong(a, b, c):
        gemm(a, b, c, mapping=PINGPONG_MAPPING)
    registry.setdefault("nvdsl-gemm-pingpong", gemm_pingpong)

    # The same kernel under Options(debug=True): every mbarrier wait bounded (a hang becomes a report)
    # and traced-index array accesses bounds-checked. Its ratio to nvdsl-gemm bounds what making the
    # waits bounded by default would cost.
    debug = nt.build(matmul, MAPPING).with_options(debug=True)

    def gemm_debug(a, b, c):
        debug(c, a, b)
    registry.setdefault("nvdsl-gemm-debug", gemm_debug)

"""Chapter 1: saxpy over a 2-D grid, checked against NumPy.

``y = alpha * x + y`` on two M x N float32 matrices. Arguments:

* Arrays are passed positionally. Inside the host function they are
  ``nvdsl.Array`` handles with a static ``shape`` (Python ints) and a
  ``dtype``; inside a kernel ``x[i, j]`` loads and ``y[i, j] = v`` stores.
  NumPy arrays are copied to the GPU for the call, and the arrays a kernel
  writes (here ``y``) are copied back; device arrays (PyTorch, CuPy, ...)
  are used in place.
* ``alpha`` is a Python float: a ``float32`` scalar passed to the kernel at
  run time, so calling with another alpha reuses the compiled kernel.

The grid covers the matrix with 32 x 8 thread blocks; each thread handles
``rows_per_thread`` rows of its tile with a traced loop,
``nvdsl.for_range``, which becomes one ``scf.for`` on the GPU (the Python
loop body runs once, while tracing). M and N need not be multiples of the
tile: ``with nvdsl.when(cond):`` guards the edges (an ``scf.if``). Indices
are ``index`` values; Python ints mixed in take their type.

Run it: ``python3 tutorials/ch1_saxpy.py``.
"""

import numpy as np

import nvdsl
from _chapter import run_and_verify

TILE_N, TILE_M = 32, 32     # each block covers a 32 x 32 tile
THREADS = (32, 8)           # 32 threads along a row, 8 rows of threads


@nvdsl.mlir_func
def saxpy(x, y, alpha):
    rows, cols = x.shape
    rows_per_thread = TILE_M // THREADS[1]
    grid = ((cols + TILE_N - 1) // TILE_N, (rows + TILE_M - 1) // TILE_M)

    @nvdsl.gpu_launch(grid=grid, block=THREADS)
    def kernel(ctx):
        j = ctx.block_id.x * TILE_N + ctx.thread_id.x
        for r in nvdsl.for_range(rows_per_thread):
            i = ctx.block_id.y * TILE_M + r * THREADS[1] + ctx.thread_id.y
            with nvdsl.when((i < rows) & (j < cols)):
                y[i, j] = alpha * x[i, j] + y[i, j]

    kernel()


def main(rows=1000, cols=1500, alpha=2.5):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    y = rng.standard_normal((rows, cols), dtype=np.float32)
    expected = alpha * x + y

    def verify():
        np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)

    run_and_verify(saxpy, (x, y, alpha), verify)


if __name__ == "__main__":
    main()

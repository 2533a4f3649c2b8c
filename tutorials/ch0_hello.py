"""Chapter 0: hello from the GPU.

An nvdsl program has two levels, each a decorated Python function:

* ``@nvdsl.mlir_func`` marks the *host* function. Calling it traces its body
  once (per argument signature) into an MLIR module, compiles that module to
  PTX and a cubin for Hopper (sm_90a), and runs it through the CUDA driver.
* ``@nvdsl.gpu_launch(grid=..., block=...)`` marks a *kernel body* inside it.
  Calling the decorated body emits a ``gpu.launch``: ``grid`` blocks of
  ``block`` threads each run the body.

The body receives ``ctx``, its launch context: ``ctx.block_id`` and
``ctx.thread_id`` are the coordinates of the running thread (``x``, ``y``,
``z``), ``ctx.block_dim`` and ``ctx.grid_dim`` the launch's extents. They are
*traced values*: Python sees placeholders while tracing, the GPU sees numbers.

``nvdsl.print`` is printf on the device (``gpu.printf``, PTX ``vprintf``):
each ``{}`` takes the next value and prints it by its type. Output appears
when the host waits for the GPU (``nvdsl.synchronize()`` in ``_chapter.py``).

Run it: ``python3 tutorials/ch0_hello.py``. Without a GPU it runs in nvdsl's
CPU interpreter, which executes the same traced MLIR (and prints the same
lines); ``NVDSL_DUMP_DIR=...`` with ``hello.compile()`` still writes the PTX
and cubin.
"""

import nvdsl
from _chapter import run_and_verify


@nvdsl.mlir_func
def hello(*, blocks=2, threads=4):
    # Keyword arguments are compile-time constants: plain Python ints here.
    @nvdsl.gpu_launch(grid=blocks, block=threads)
    def kernel(ctx):
        nvdsl.print("hello from thread {} of block {} ({} threads per block)",
                    ctx.thread_id.x, ctx.block_id.x, ctx.block_dim.x)

    kernel()


if __name__ == "__main__":
    run_and_verify(hello, (), verify=lambda: None)

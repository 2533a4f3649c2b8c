"""The task layer: write a tile program once, map it separately, get the pipeline generated.

A tile program is a task (``@nt.task(reads=..., writes=...)``) over tensors: partitions (``nt.blocks``),
a parallel loop over output tiles (``nt.prange``), sequential loops (``nt.srange``) and tile math
(``acc += a @ b``, elementwise functions, reductions, ``astype``). It holds no barrier, phase, offset,
thread index or role. A :class:`Mapping` says how it runs; ``nt.build(program, mapping)`` derives the
kernel (see ``build.py`` for the passes) and ``kernel.explain(*arrays)`` shows what it derived.
``nvdsl/kernels/gemm.py`` holds the GEMM family written this way, ``nvdsl/kernels/rowwise.py`` row-wise
programs without products (softmax, norms, cross-entropy), and ``tutorials/ch6_tasks_and_mappings.py``
teaches it.
"""


from ..dtypes import bfloat16, float8_e4m3fn, float8_e5m2, float16, float32
from .autotune import Autotuned, autotune
from .build import TaskKernel, build
from .ir import GLOBAL, NONE, REGISTER, SHARED
from .mapping import BLOCK, COOPERATIVE, HOST, PINGPONG, WARPGROUP, Mapping
from .program import (RowTiles, Task, arange, blocks, cdiv, exp, exp2, full, gelu, gelu_tanh, launch, load_index,
                      log, log2, maximum, minimum, tanh, value_and_derivative, within,
                      prange, relu, row_tiles, rsqrt, scalar, silu, sqrt, srange, task, tunable, where, zeros)

__all__ = ["task", "launch", "tunable", "blocks", "row_tiles", "RowTiles", "prange", "srange", "zeros", "full", "arange", "where", "scalar", "cdiv", "relu", "gelu", "gelu_tanh", "silu",
           "exp2", "log2", "exp", "log", "sqrt", "rsqrt", "tanh", "maximum", "minimum",
           "value_and_derivative", "within", "load_index", "build", "Mapping", "TaskKernel", "Task",
           "autotune", "Autotuned",
           "HOST", "BLOCK", "WARPGROUP", "GLOBAL", "SHARED", "REGISTER", "NONE", "COOPERATIVE", "PINGPONG",
           "float16", "bfloat16", "float32", "float8_e4m3fn", "float8_e5m2"]

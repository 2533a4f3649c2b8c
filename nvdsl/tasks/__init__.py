"""The task layer: write a tile program once, map it separately, get the pipeline generated.

    import nvdsl.tasks as nt

    @nt.task(reads=("A", "B"), writes=("C",))
    def gemm(C, A, B):
        BM, BN, BK = nt.tunable("BM"), nt.tunable("BN"), nt.tunable("BK")
        Ct, At, Bt = nt.blocks(C, (BM, BN)), nt.blocks(A, (BM, BK)), nt.blocks(B, (BK, BN))
        for i, j in nt.prange(*Ct.grid):
            acc = nt.zeros((BM, BN), nt.float32)
            for k in nt.srange(At.grid[1]):
                acc += At[i, k] @ Bt[k, j]
            Ct[i, j] = acc.astype(C.dtype)

    kernel = nt.build(gemm, nt.Mapping(tiles={"BM": 128, "BN": 256, "BK": 64}))
    kernel(c, a, b)
    print(kernel.explain(c, a, b))

The program holds no barrier, phase, offset, thread index or role: the mapping (:class:`Mapping`) says
how it runs, and the passes derive the rest (see ``build.py``).
"""

from ..dtypes import bfloat16, float16, float32
from .build import TaskKernel, build
from .ir import GLOBAL, NONE, REGISTER, SHARED
from .mapping import BLOCK, COOPERATIVE, HOST, PINGPONG, WARPGROUP, Mapping
from .program import (Task, blocks, cdiv, exp2, gelu, launch, maximum, prange, relu, silu, srange, task, tunable,
                      zeros)

__all__ = ["task", "launch", "tunable", "blocks", "prange", "srange", "zeros", "cdiv", "relu", "gelu", "silu",
           "exp2", "maximum", "build", "Mapping", "TaskKernel", "Task",
           "HOST", "BLOCK", "WARPGROUP", "GLOBAL", "SHARED", "REGISTER", "NONE", "COOPERATIVE", "PINGPONG",
           "float16", "bfloat16", "float32"]

"""GEMM written in the task layer: ``C = A @ B``, and batched ``C[b] = A[b] @ B[b]``.

The programs below say what is computed, tile by tile; :data:`MAPPING` says how it runs (a persistent,
warp-specialized pipeline: a producer warpgroup filling a 4-slot ring by TMA, two consumer warpgroups
sharing each 128 x 256 tile's rows, one wgmma product in flight, a TMA-store epilogue, tiles in groups of
8 tile rows for L2). Pass another ``mapping=`` to run the same program differently; results do not change.

    from nvdsl.kernels.gemm import gemm
    gemm(a, b, c)                    # a (M, K), b (K, N) float16/bfloat16; c (M, N) float16/bfloat16/float32
    gemm(a, bt, c, b_layout="NK")    # bt (N, K): B stored K-major, as a linear layer's weight
    gemm(a, b, c)                    # 3-D a (batch, M, K), b (batch, K, N), c (batch, M, N): batched

M, N and K need not be multiples of the tile: TMA reads past the edges as zeros and clips the stores.
Row strides must be multiples of 16 bytes (TMA's rule).
"""

from __future__ import annotations

import functools

from .. import tasks as nt
from ..errors import ArgumentError, user_location


def matmul_program(b_layout: str = "KN") -> nt.Task:
    """C (M, N) = A (M, K) @ B, with B stored (K, N) ("KN") or as its transpose (N, K) ("NK", K-major)."""
    k_major = b_layout == "NK"

    def matmul(C, A, B):
        BM, BN, BK = nt.tunable("BM", 128), nt.tunable("BN", 256), nt.tunable("BK", 64)
        Ct, At = nt.blocks(C, (BM, BN)), nt.blocks(A, (BM, BK))
        Bt = nt.blocks(B, (BN, BK) if k_major else (BK, BN))
        for i, j in nt.prange(*Ct.grid):
            acc = nt.zeros((BM, BN), nt.float32)
            for k in nt.srange(At.grid[1]):
                acc += At[i, k] @ (Bt[j, k].T if k_major else Bt[k, j])
            Ct[i, j] = acc.astype(C.dtype)
    matmul.__name__ = "matmul_nk" if k_major else "matmul"     # the task's name, in explanations and kernels
    return nt.task(reads=("A", "B"), writes=("C",))(matmul)


matmul, matmul_nk = matmul_program("KN"), matmul_program("NK")


@nt.task(reads=("A", "B"), writes=("C",))
def batched_matmul(C, A, B):
    """C (batch, M, N) = A (batch, M, K) @ B (batch, K, N), each batch its own product."""
    BM, BN, BK = nt.tunable("BM", 128), nt.tunable("BN", 256), nt.tunable("BK", 64)
    Ct, At, Bt = nt.blocks(C, (1, BM, BN)), nt.blocks(A, (1, BM, BK)), nt.blocks(B, (1, BK, BN))
    for b, i, j in nt.prange(*Ct.grid):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in nt.srange(At.grid[2]):
            acc += At[b, i, k] @ Bt[b, k, j]
        Ct[b, i, j] = acc.astype(C.dtype)


ACTIVATIONS = {"none": lambda x: x, "relu": nt.relu, "gelu": nt.gelu, "silu": nt.silu}


@functools.lru_cache(maxsize=None)
def linear_program(activation: str = "none") -> nt.Task:
    """``C = act(A @ W.T + bias)``: a linear layer with W (N, K) as stored by frameworks, bias (N,)."""
    act = ACTIVATIONS[activation]

    @nt.task(reads=("A", "W", "bias"), writes=("C",))
    def linear(C, A, W, bias):
        BM, BN, BK = nt.tunable("BM", 128), nt.tunable("BN", 256), nt.tunable("BK", 64)
        Ct, At, Wt, bt = nt.blocks(C, (BM, BN)), nt.blocks(A, (BM, BK)), nt.blocks(W, (BN, BK)), nt.blocks(bias, (BN,))
        for i, j in nt.prange(*Ct.grid):
            acc = nt.zeros((BM, BN), nt.float32)
            for k in nt.srange(At.grid[1]):
                acc += At[i, k] @ Wt[j, k].T
            Ct[i, j] = act(acc + bt[j][None, :]).astype(C.dtype)
    return linear


@nt.task(reads=("A", "W1", "W2"), writes=("C",))
def gated_mlp(C, A, W1, W2):
    """The dual GEMM of a gated MLP: ``C = silu(A @ W1) * (A @ W2)``, A's tiles loaded once for both."""
    BM, BN, BK = nt.tunable("BM", 128), nt.tunable("BN", 128), nt.tunable("BK", 64)
    Ct, At, W1t, W2t = nt.blocks(C, (BM, BN)), nt.blocks(A, (BM, BK)), nt.blocks(W1, (BK, BN)), nt.blocks(W2, (BK, BN))
    for i, j in nt.prange(*Ct.grid):
        gate, up = nt.zeros((BM, BN), nt.float32, name="gate"), nt.zeros((BM, BN), nt.float32, name="up")
        for k in nt.srange(At.grid[1]):
            gate += At[i, k] @ W1t[k, j]
            up += At[i, k] @ W2t[k, j]
        Ct[i, j] = (nt.silu(gate) * up).astype(C.dtype)


@nt.task(reads=("A", "B"), writes=("C", "Y"))
def matmul_rowsum(C, Y, A, B):
    """``C = A @ B`` and the row sums of A alongside, ``Y[j, i] = sum_k A[i, k]``: one copy of them per column
    of tiles (Y is (N tiles, M); every row of Y holds the same sums), so no two tiles write the same data."""
    BM, BN, BK = nt.tunable("BM", 128), nt.tunable("BN", 256), nt.tunable("BK", 64)
    Ct, Yt, At, Bt = nt.blocks(C, (BM, BN)), nt.blocks(Y, (1, BM)), nt.blocks(A, (BM, BK)), nt.blocks(B, (BK, BN))
    for i, j in nt.prange(*Ct.grid):
        acc, rows = nt.zeros((BM, BN), nt.float32), nt.zeros((BM,), nt.float32, name="rows")
        for k in nt.srange(At.grid[1]):
            acc += At[i, k] @ Bt[k, j]
            rows += At[i, k].sum(axis=1)
        Ct[i, j] = acc.astype(C.dtype)
        Yt[j, i] = rows


@nt.task(reads=("A", "B", "scale_a", "scale_b"), writes=("C",))
def scaled_matmul(C, A, B, scale_a, scale_b):
    """``C = (A @ B.T) * scale_a * scale_b`` with A (M, K) and B (N, K) in float8 (e4m3 or e5m2, K-major as
    wgmma reads 8-bit operands), float32 per-tensor scales of shape (1,), C float16, bfloat16 or float32."""
    BM, BN, BK = nt.tunable("BM", 128), nt.tunable("BN", 256), nt.tunable("BK", 128)
    Ct, At, Bt = nt.blocks(C, (BM, BN)), nt.blocks(A, (BM, BK)), nt.blocks(B, (BN, BK))
    for i, j in nt.prange(*Ct.grid):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in nt.srange(At.grid[1]):
            acc += At[i, k] @ Bt[j, k].T
        Ct[i, j] = (acc * nt.scalar(scale_a) * nt.scalar(scale_b)).astype(C.dtype)


#: The mapping the library's GEMM runs under by default.
MAPPING = nt.Mapping(tiles={"BM": 128, "BN": 256, "BK": 64}, pipeline=4, mma_in_flight=1, consumers=2,
                     persistent=True, raster="grouped", group=8)


#: The mapping of ``scaled_matmul``: K tiles of 128 float8 values, one 128-byte swizzled row.
FP8_MAPPING = MAPPING.replace(tiles={"BM": 128, "BN": 256, "BK": 128})


@functools.lru_cache(maxsize=None)
def _kernel(program: nt.Task, mapping: nt.Mapping) -> nt.TaskKernel:
    return nt.build(program, mapping)


def gemm(a, b, c, *, b_layout: str = "KN", mapping: nt.Mapping | None = None) -> None:
    """``c[:] = a @ b`` (or batched over a leading axis), accumulated in float32 and converted to ``c``'s type.

    ``b_layout`` is ``"KN"`` for B stored (K, N) or ``"NK"`` for B stored (N, K). Compiled once per dtype,
    shape and mapping.
    """
    ndim = len(getattr(a, "shape", ()))
    if b_layout not in ("KN", "NK"):
        raise ArgumentError(f"b_layout={b_layout!r} must be 'KN' or 'NK'", code="bad-layout", loc=user_location())
    if ndim == 3 and b_layout == "NK":
        raise ArgumentError("batched GEMM takes B as (batch, K, N)", code="bad-layout", loc=user_location())
    program = batched_matmul if ndim == 3 else matmul_nk if b_layout == "NK" else matmul
    _kernel(program, mapping or MAPPING)(c, a, b)


def scaled_gemm(a, b, c, scale_a, scale_b, *, mapping: nt.Mapping | None = None) -> None:
    """``c[:] = (a @ b.T) * scale_a * scale_b``: ``a`` (M, K) and ``b`` (N, K) float8 (e4m3 or e5m2),
    ``scale_a`` and ``scale_b`` float32 arrays of shape (1,), ``c`` float16, bfloat16 or float32.

    The tensor cores accumulate float8 products with about 14 bits of mantissa (as cuBLAS's fast float8
    accumulation), so the relative error grows with K: about 1e-4 at K = 256, 1e-3 at K = 4096.
    """
    _kernel(scaled_matmul, mapping or FP8_MAPPING)(c, a, b, scale_a, scale_b)

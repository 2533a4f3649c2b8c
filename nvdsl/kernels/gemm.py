"""GEMM written in the task layer: ``C = A @ B``, and batched ``C[b] = A[b] @ B[b]``.

The programs below say what is computed, tile by tile; :data:`MAPPING` says how it runs (a persistent,
warp-specialized pipeline: a producer warpgroup filling a 4-slot ring by TMA, two consumer warpgroups
sharing each 128 x 256 tile's rows, one wgmma product in flight, a TMA-store epilogue, tiles in groups of
8 tile rows for L2). Outputs too small to give every SM such tiles run on narrower ones
(:func:`default_mapping`). Pass another ``mapping=`` to run the same program differently; results do not change.

    from nvdsl.kernels.gemm import gemm
    gemm(a, b, c)                    # a (M, K), b (K, N) float16/bfloat16; c (M, N) float16/bfloat16/float32
    gemm(a, bt, c, b_layout="NK")    # bt (N, K): B stored K-major, as a linear layer's weight
    gemm(a, b, c)                    # 3-D a (batch, M, K), b (batch, K, N), c (batch, M, N): batched
    grouped_gemm(a, b, c, sizes)     # a (M, K), b (groups, K, N), c (M, N): rows of group g times b[g]
    linear(a, w, bias, c, activation="gelu")   # act(a @ w.T + bias), w (N, K), bias (N,)
    block_scaled_gemm(a, b, c, scale_a, scale_b)   # float8 with a scale per row and 128 of K, per 128 x 128 of b

M, N and K need not be multiples of the tile: TMA reads past the edges as zeros and clips the stores.
Arrays may be strided views: a column slice of a wider activation, an output slice of a larger buffer, a batch
of every other matrix. Those TMA can address (a unit-stride last axis, other strides multiples of 16 bytes, a
16-byte aligned start; a NumPy view is copied to the GPU as the span it covers) are used in place with no copy;
the others, and any K or N whose rows are not 16 bytes apart (K = 999 in bfloat16), go through staging copies
with padded rows (``nvdsl.tasks.staging``: slower, same results). A B given as the transposed view of an (N, K)
array (``w.T``: unit stride on its first axis) is read as the K-major operand it is (``b_layout="NK"`` on ``w``),
and so is a ``linear`` weight given as the transposed view of a (K, N) array. A 16-bit A given as the transposed
view of a (K, M) array (``x.T`` in a weight gradient ``x.T @ dy``) is read M-major, with no copy.
"""

from __future__ import annotations

import functools
import operator

from .. import dtypes as dt
from .. import jit
from .. import tasks as nt
from ..arguments import array_strides, is_read_only, signature_key
from ..errors import ArgumentError, user_location
from ..scratch import SCRATCH_BESIDE, float32_like
from . import checks


def _a_tiles(A, BM: int, BK: int, m_major: bool):
    """A's tiles, and A's tile (i, k) as the (BM, BK) operand: A stored (M, K), or as its transpose (K, M)."""
    if m_major:
        At = nt.blocks(A, (BK, BM))
        return At, At.grid[0], lambda i, k: At[k, i].T
    At = nt.blocks(A, (BM, BK))
    return At, At.grid[1], lambda i, k: At[i, k]


def _name(base: str, b_layout: str, a_layout: str) -> str:
    return base + ("_km" if a_layout == "KM" else "") + ("_nk" if b_layout == "NK" else "")


def matmul_program(b_layout: str = "KN", a_layout: str = "MK") -> nt.Task:
    """C (M, N) = A @ B, with A stored (M, K) ("MK") or as its transpose (K, M) ("KM", M-major: the ``x.T`` of
    a weight gradient ``x.T @ dy``), and B stored (K, N) ("KN") or as its transpose (N, K) ("NK", K-major).
    One task per pair of layouts."""
    return _matmul_program(b_layout, a_layout)


@functools.lru_cache(maxsize=None)
def _matmul_program(b_layout: str, a_layout: str) -> nt.Task:
    k_major = b_layout == "NK"

    def matmul(C, A, B):
        BM, BN, BK = nt.tunable("BM", 128), nt.tunable("BN", 256), nt.tunable("BK", 64)
        Ct = nt.blocks(C, (BM, BN))
        At, steps, a_tile = _a_tiles(A, BM, BK, a_layout == "KM")
        Bt = nt.blocks(B, (BN, BK) if k_major else (BK, BN))
        for i, j in nt.prange(*Ct.grid):
            acc = nt.zeros((BM, BN), nt.float32)
            for k in nt.srange(steps):
                acc += a_tile(i, k) @ (Bt[j, k].T if k_major else Bt[k, j])
            Ct[i, j] = acc.astype(C.dtype)
    matmul.__name__ = _name("matmul", b_layout, a_layout)     # the task's name, in explanations and kernels
    return nt.task(reads=("A", "B"), writes=("C",))(matmul)


matmul, matmul_nk = matmul_program("KN"), matmul_program("NK")


def partials_program(b_layout: str = "KN", a_layout: str = "MK") -> nt.Task:
    """Split-K's products: ``P[s] = A[:, K_s] @ B[K_s, :]`` in float32, where split ``s`` of ``P.shape[0]`` takes
    an equal share of the K blocks (the last may run past K: TMA reads zeros there); :func:`_sum_partials` adds
    them up in split order. A and B stored as :func:`matmul_program` says."""
    return _partials_program(b_layout, a_layout)


@functools.lru_cache(maxsize=None)
def _partials_program(b_layout: str, a_layout: str) -> nt.Task:
    k_major = b_layout == "NK"

    def matmul_partials(P, A, B):
        BM, BN, BK = nt.tunable("BM", 128), nt.tunable("BN", 256), nt.tunable("BK", 64)
        Pt = nt.blocks(P, (1, BM, BN))
        At, blocks, a_tile = _a_tiles(A, BM, BK, a_layout == "KM")
        Bt = nt.blocks(B, (BN, BK) if k_major else (BK, BN))
        steps = nt.cdiv(blocks, P.shape[0])
        for s, i, j in nt.prange(*Pt.grid):
            acc = nt.zeros((BM, BN), nt.float32)
            for k in nt.srange(steps):
                acc += a_tile(i, s * steps + k) @ (Bt[j, s * steps + k].T if k_major else Bt[s * steps + k, j])
            Pt[s, i, j] = acc
    matmul_partials.__name__ = _name("matmul_partials", b_layout, a_layout)
    return nt.task(reads=("A", "B"), writes=("P",))(matmul_partials)


matmul_partials, matmul_partials_nk = partials_program("KN"), partials_program("NK")


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


ACTIVATIONS = {"none": lambda x: x, "relu": nt.relu, "gelu": nt.gelu, "gelu_tanh": nt.gelu_tanh, "silu": nt.silu}


@functools.lru_cache(maxsize=None)
def linear_program(activation: str = "none", w_layout: str = "NK") -> nt.Task:
    """``C = act(A @ W.T + bias)``: a linear layer with W (N, K) as stored by frameworks ("NK"), bias (N,);
    with ``w_layout="KN"`` the task takes ``W.T``, the weight stored (K, N)."""
    act = ACTIVATIONS[activation]
    k_major = w_layout == "NK"

    def linear(C, A, W, bias):
        BM, BN, BK = nt.tunable("BM", 128), nt.tunable("BN", 256), nt.tunable("BK", 64)
        Ct, At, bt = nt.blocks(C, (BM, BN)), nt.blocks(A, (BM, BK)), nt.blocks(bias, (BN,))
        Wt = nt.blocks(W, (BN, BK) if k_major else (BK, BN))
        for i, j in nt.prange(*Ct.grid):
            acc = nt.zeros((BM, BN), nt.float32)
            for k in nt.srange(At.grid[1]):
                acc += At[i, k] @ (Wt[j, k].T if k_major else Wt[k, j])
            Ct[i, j] = act(acc + bt[j][None, :]).astype(C.dtype)
    linear.__name__ = "linear" if k_major else "linear_kn"
    return nt.task(reads=("A", "W", "bias"), writes=("C",))(linear)


def gated_mlp_program(w_layout: str = "KN") -> nt.Task:
    """The dual GEMM of a gated MLP: ``C = silu(A @ W1) * (A @ W2)``, A's tiles loaded once for both; W1 and
    W2 stored (K, N) ("KN") or K-major as (N, K) ("NK", a framework's linear weights)."""
    k_major = w_layout == "NK"

    def gated_mlp(C, A, W1, W2):
        BM, BN, BK = nt.tunable("BM", 128), nt.tunable("BN", 128), nt.tunable("BK", 64)
        Ct, At = nt.blocks(C, (BM, BN)), nt.blocks(A, (BM, BK))
        W1t, W2t = (nt.blocks(W, (BN, BK) if k_major else (BK, BN)) for W in (W1, W2))
        for i, j in nt.prange(*Ct.grid):
            gate, up = nt.zeros((BM, BN), nt.float32, name="gate"), nt.zeros((BM, BN), nt.float32, name="up")
            for k in nt.srange(At.grid[1]):
                gate += At[i, k] @ (W1t[j, k].T if k_major else W1t[k, j])
                up += At[i, k] @ (W2t[j, k].T if k_major else W2t[k, j])
            Ct[i, j] = (nt.silu(gate) * up).astype(C.dtype)
    gated_mlp.__name__ = "gated_mlp_nk" if k_major else "gated_mlp"
    return nt.task(reads=("A", "W1", "W2"), writes=("C",))(gated_mlp)


gated_mlp, gated_mlp_nk = gated_mlp_program("KN"), gated_mlp_program("NK")


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


#: Values of K (and, for B, of N) sharing one scale in :func:`block_scaled_matmul` (DeepSeek-V3's blocks).
SCALE_BLOCK = 128


@nt.task(reads=("A", "B", "scale_a", "scale_b"), writes=("C",))
def block_scaled_matmul(C, A, B, scale_a, scale_b):
    """``C = sum over blocks k of (A[:, k] @ B[:, k].T) * scale_a[k][:, None] * scale_b[:, k]``: A (M, K) and B
    (N, K) float8 in blocks of 128 values of K; ``scale_a`` (K/128, M) float32, a scale per block and row of A;
    ``scale_b`` (N/128, K/128) float32, a scale per 128 x 128 block of B. Each block's product is accumulated on
    its own, scaled and added into a float32 sum (the tensor cores' float8 sums stay within one block)."""
    BM, BN, BK = nt.tunable("BM", 128), SCALE_BLOCK, SCALE_BLOCK
    Ct, At, Bt = nt.blocks(C, (BM, BN)), nt.blocks(A, (BM, BK)), nt.blocks(B, (BN, BK))
    SAt = nt.blocks(scale_a, (1, BM))
    for i, j in nt.prange(*Ct.grid):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in nt.srange(At.grid[1]):
            part = nt.zeros((BM, BN), nt.float32, name="part")
            part += At[i, k] @ Bt[j, k].T
            acc[...] = acc + part * SAt[k, i][:, None] * scale_b[j, k]
        Ct[i, j] = acc.astype(C.dtype)


@nt.task(reads=("A", "B", "tiles"), writes=("C",))
def grouped_matmul(C, A, B, tiles):
    """A grouped GEMM (a mixture of experts' layer): the rows of A (M, K) and C (M, N) are groups one after
    another, and group g's rows of C are its rows of A times B[g] (B: (groups, K, N)). ``tiles`` lists the
    row tiles of the groups (:func:`row_tile_table`); a tile's rows stop at its group's end."""
    BM, BN, BK = nt.tunable("BM", 128), nt.tunable("BN", 256), nt.tunable("BK", 64)
    rows = nt.row_tiles(tiles)
    Ct, At = nt.blocks(C, (BM, BN), rows=rows), nt.blocks(A, (BM, BK), rows=rows)
    Bt = nt.blocks(B, (1, BK, BN))
    for t, j in nt.prange(*Ct.grid):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in nt.srange(At.grid[1]):
            acc += At[t, k] @ Bt[rows.group(t), k, j]
        Ct[t, j] = acc.astype(C.dtype)


#: The mapping the library's GEMM runs under on outputs large enough to give every SM its 128 x 256 tiles.
MAPPING = nt.Mapping(tiles={"BM": 128, "BN": 256, "BK": 64}, pipeline=4, mma_in_flight=1, consumers=2,
                     persistent=True, raster="grouped", group=8)


#: A ping-pong mapping of the same programs: two consumer warpgroups, each holding a whole 128 x 128 tile's
#: accumulator, take the block's tiles alternately and turns at the K loop, so that one's epilogue runs while
#: the other's products do; one ring of as many 32 KiB slots as shared memory holds (6), filled in the order of
#: the turns. The default of :func:`linear` with an activation (whose epilogue it hides: GELU's erf 1.48x,
#: SiLU 1.16x, ReLU 1.03x the cooperative mapping on an H100 at 8192 x 8192 x 4096); for a plain GEMM it won
#: only at K = 1024 (2-3%) and lost 2-6% elsewhere, so :data:`MAPPING` stays the GEMM's default.
PINGPONG_MAPPING = nt.Mapping(tiles={"BM": 128, "BN": 128, "BK": 64}, mma_in_flight=1, consumers=2,
                              schedule="pingpong", persistent=True, raster="grouped", group=8)


#: Narrower tiles for outputs too small to give every SM a 128 x 256 tile (a 128 x 128 tile, its rows
#: shared by two consumers; a 64 x 128 tile for one consumer): more tiles, each slower per FLOP (the tensor
#: cores reread B for fewer rows), so they pay only where the 128 x 256 tiles would leave SMs idle.
TILE_128x128_MAPPING = MAPPING.replace(tiles={"BM": 128, "BN": 128, "BK": 64}, pipeline=6)
TILE_64x128_MAPPING = MAPPING.replace(tiles={"BM": 64, "BN": 128, "BK": 64}, consumers=1, pipeline=8)
#: A 64 x 64 tile for one consumer, for outputs of one or two tile rows (a decode step, a small batch) whose 64 x
#: 128 tiles fill at most half the SMs and whose 64 x 64 tiles fill more than half in one wave: filling them beats
#: the wider tile's reuse of A there. Measured side by side (bf16, queued launches, us; cuBLAS in brackets):
#: 128 x 4096 x 4096 ran 11.3 on 64 x 64 tiles against 13.4 on 64 x 128 (14.0) on an H200, 11.6 against 13.4
#: (14.9) on an H100; 64 x 8192 x 8192 34.7 against 35.0 (35.2) and 47.5 against 48.1 (48.2). With three or more
#: tile rows, or where 64 x 64 tiles still leave half the SMs idle, split-K over 64 x 128 tiles was faster
#: (128 x 2048 x 8192: 12.3 in four splits against 14.1 in two on 64 x 64 tiles, H200).
TILE_64x64_MAPPING = TILE_64x128_MAPPING.replace(tiles={"BM": 64, "BN": 64, "BK": 64})

# The tilings default_mapping chooses from, each with its throughput relative to the first's on a problem of
# many waves (an H100, fp16, 4096 x 14336 x 4096 and 4096 x 4096 x 14336: 128 x 128 0.86-0.93x, 64 x 128
# 0.58-0.59x). With an activation the ping-pong takes the 128 x 256 tile's place: it hides the epilogue.
_TILINGS = ((MAPPING, 1.0), (TILE_128x128_MAPPING, 0.9), (TILE_64x128_MAPPING, 0.6))
_TILINGS_WITH_ACTIVATION = ((PINGPONG_MAPPING, 1.0),) + _TILINGS[1:]
#: The tilings ``gemm(..., autotune=True)`` times: those above and the 64 x 64 tile.
AUTOTUNED_TILINGS = tuple(mapping for mapping, _ in _TILINGS) + (TILE_64x64_MAPPING,)


@functools.lru_cache(maxsize=1024)          # called per gemm()/linear() call: a cached answer costs ~0.2 us
def default_mapping(m: int, n: int, batch: int = 1, *, activation: str = "none",
                    sm_count: int | None = None) -> nt.Mapping:
    """The mapping the library runs an (m, n) output under (``batch`` of them): of its tilings, the one whose
    busiest SM finishes first. A persistent block takes ``ceil(tiles / SMs)`` tiles (a ping-pong's two
    consumers take them in pairs), each costing its area over the tiling's throughput; large outputs keep
    :data:`MAPPING` (or :data:`PINGPONG_MAPPING` with an activation), small ones get narrower tiles, so that
    a 1024 x 1024 output does not run on 32 of 132 SMs; one or two rows of tiles may get
    :data:`TILE_64x64_MAPPING` (see there and :func:`_narrow_tiles_in_two_splits`)."""
    if sm_count is None:
        sm_count = jit.sm_count()
    best, best_cost = None, None
    for mapping, throughput in (_TILINGS if activation == "none" else _TILINGS_WITH_ACTIVATION):
        tile = mapping.tile_values()
        per_block = 2 if mapping.schedule == "pingpong" else 1
        tiles = batch * -(-m // tile["BM"]) * -(-n // tile["BN"])
        cost = -(-tiles // (sm_count * per_block)) * per_block * tile["BM"] * tile["BN"] / throughput
        if best_cost is None or cost < best_cost:
            best, best_cost = mapping, cost
    if best is TILE_64x128_MAPPING and _narrow_tiles_in_two_splits(m, n, batch, sm_count):
        return TILE_64x64_MAPPING
    tile_rows = batch * -(-m // TILE_64x64_MAPPING.tile_values()["BM"])
    if best is TILE_64x128_MAPPING and tile_rows <= 2:
        wide, narrow = (tile_rows * -(-n // mapping.tile_values()["BN"])
                        for mapping in (TILE_64x128_MAPPING, TILE_64x64_MAPPING))
        if 2 * wide <= sm_count < 2 * narrow <= 2 * sm_count:
            return TILE_64x64_MAPPING
    return best


def _narrow_tiles_in_two_splits(m: int, n: int, batch: int, sm_count: int) -> bool:
    """Whether an (m, n) output (``batch`` of them) is one row of 64 x 64 tiles that two splits of K spread over the
    SMs in one wave as widely as 64 x 128 tiles in their :func:`split_k` splits: there the library runs
    :data:`TILE_64x64_MAPPING` in two splits (as many blocks, half the partial products to write and add).
    Measured (bf16, queued launches, us, cuBLAS in brackets), 64 x 64 in two splits against 64 x 128 in four: 64 x
    4096 x 4096 10.4 against 11.0 on an H200 (9.1), 12.2 against 13.3 on an H100 (9.7); 16 rows 9.1 against 9.7
    (9.9) and 10.0 against 10.7 (9.9); 64 x 4096 x 14336 (B (N, K)) 35.5 against 36.9 (36.5) and 48.7 against 50.6
    (47.7). Where two splits make fewer blocks (1 x 3072 x 4096: 96 against 120) they lost (H200: 7.8 against
    7.4)."""
    narrow = -(-n // TILE_64x64_MAPPING.tile_values()["BN"])
    wide = -(-n // TILE_64x128_MAPPING.tile_values()["BN"])
    return batch * -(-m // TILE_64x64_MAPPING.tile_values()["BM"]) == 1 and \
        wide * (sm_count // wide) <= 2 * narrow <= sm_count


#: The mapping of ``scaled_matmul``: K tiles of 128 float8 values, one 128-byte swizzled row.
FP8_MAPPING = MAPPING.replace(tiles={"BM": 128, "BN": 256, "BK": 128})


#: The mapping of ``block_scaled_matmul``: tiles of 128 x 128 (one scale of B per tile and K step), K tiles of 128,
#: A's scales of a K step brought by TMA into the step's ring slot (an H200, bf16 8192 x 8192 x 4096: 1012 TFLOP/s,
#: 947 with them loaded by each consumer thread instead).
BLOCK_SCALED_MAPPING = MAPPING.replace(tiles={"BM": 128}, memory={"scale_a": "shared"})
#: Its ping-pong: each consumer a whole 64 x 128 tile, taking turns, so that one scales and adds its block's
#: product while the other's runs (the benchmark's ``nvdsl-pingpong``: 676 TFLOP/s on that H200 and shape).
BLOCK_SCALED_PINGPONG_MAPPING = BLOCK_SCALED_MAPPING.replace(tiles={"BM": 64}, schedule="pingpong")
#: The mappings ``block_scaled_gemm(..., autotune=True)`` times: both above, each also with A's scales loaded by
#: each consumer thread (``memory={}``).
AUTOTUNED_BLOCK_SCALED = tuple(m for base in (BLOCK_SCALED_MAPPING, BLOCK_SCALED_PINGPONG_MAPPING)
                               for m in (base, base.replace(memory={})))


@functools.lru_cache(maxsize=None)
def _kernel(program: nt.Task, mapping: nt.Mapping) -> nt.TaskKernel:
    return nt.build(program, mapping)


@functools.lru_cache(maxsize=None)
def _autotuned(program: nt.Task, candidates: tuple = AUTOTUNED_TILINGS) -> nt.Autotuned:
    """``program`` under the fastest of ``candidates`` (by default the tilings :func:`default_mapping` chooses
    from), per device and shape class (``nt.autotune``)."""
    return nt.autotune(program, list(candidates))


def linear_mapping(activation: str = "none", m: int | None = None, n: int | None = None) -> nt.Mapping:
    """The mapping :func:`linear` runs ``linear_program(activation)`` under: for an (m, n) output,
    :func:`default_mapping`'s; without a shape, the one for large outputs: :data:`PINGPONG_MAPPING` where an
    activation makes the epilogue worth hiding, else :data:`MAPPING`."""
    if m is not None and n is not None:
        return default_mapping(m, n, activation=activation)
    return MAPPING if activation == "none" else PINGPONG_MAPPING


def linear(a, w, bias, c, *, activation: str = "none", mapping: nt.Mapping | None = None) -> None:
    """``c[:] = act(a @ w.T + bias)``: a linear layer, ``a`` (M, K), ``w`` (N, K) as frameworks store it,
    ``bias`` (N,), ``c`` (M, N); ``activation`` is one of "none", "relu", "gelu" (exact, erf), "gelu_tanh"
    (torch's ``gelu(approximate="tanh")``) or "silu".
    Compiled once per dtype, shape, activation and mapping (default :func:`linear_mapping` for c's shape)."""
    signature = _signature(("linear", activation, mapping), w, a, bias, written=c)
    steps = _PLANNED.get(signature) if signature is not None else None
    if steps is None:
        steps = _linear_steps(a, w, bias, c, activation, mapping)
        _PLANNED.remember(signature, steps)
    kernel, transposed, _ = steps
    try:
        kernel(c, a, w.T if transposed else w, bias)
    except ArgumentError as error:
        raise checks.by_callers_names(error, ("a", "w", "bias", "c")) from None


def _linear_steps(a, w, bias, c, activation: str, mapping: nt.Mapping | None) -> tuple:
    """What :func:`linear` runs for these arguments, after checking them (see :func:`_gemm_steps`)."""
    loc = user_location()
    checks.check_mapping("linear", mapping, loc)
    if activation not in ACTIVATIONS:
        raise ArgumentError(f"activation={activation!r} must be one of {sorted(ACTIVATIONS)}", code="bad-argument",
                            hint="pass activation='none' for none", loc=loc)
    checks.checked("linear", {"a": a, "w": w, "bias": bias, "c": c}, {"a": "MK", "w": "NK", "bias": "N", "c": "MN"},
                   {"a": checks.HALVES, "w": checks.HALVES, "bias": checks.OUTPUTS, "c": checks.OUTPUTS}, loc,
                   written="c", alike=("a", "w"))
    if mapping is None:
        mapping = linear_mapping(activation, *_output_shape(c, 2)[-2:])
    transposed = _transposed_view(w)         # w is W.T of a (K, N) weight: its (K, N) array is the operand
    return _kernel(linear_program(activation, "KN" if transposed else "NK"), mapping), transposed, None


# A call's signature (the options, the weight's layout, the kinds and shapes of the others: what the planning
# reads) -> what gemm/linear run for it: a call like an earlier one skips the checks and the planning (the
# mapping, split-K, the operand layout) and goes straight to the kernels, whose own calls still check each
# array's dtype, layout, alignment and device (the JIT's signature). The SM count the planning reads is the
# process's.
_PLANNED = checks.CallPlans()
_STRIDES: dict = {}         # array type -> how to read its strides (torch: x.stride(); NumPy, CuPy: x.strides)


def _signature(options: tuple, strided, *shaped, written) -> tuple | None:
    """The key of a call in :data:`_PLANNED`: ``options``, the kind, dtype, shape and strides of ``strided`` (the
    operand read as its transpose where it is a transposed view), the kinds, dtypes and shapes of ``shaped`` and of
    ``written`` (the output) and whether it is read-only: all the planning checks, by the caller's names; None
    where an argument cannot be keyed (the call then checks it)."""
    kind = type(strided)
    strides = _STRIDES.get(kind)
    if strides is None:
        strides = _STRIDES[kind] = _strides_reader(kind)
    output = _OUTPUTS.get(type(written))
    if output is None:
        output = _OUTPUTS[type(written)] = _output_reader(type(written))
    try:
        key = (options, kind, strides(strided), *[(type(x), x.dtype, x.shape) for x in shaped], type(written),
               output(written))
        hash(key)
    except (TypeError, AttributeError):
        return None
    return key


def _strides_reader(kind: type):
    if kind.__module__.startswith("torch"):
        return lambda x: (x.dtype, x.shape, x.stride())
    return lambda x: (x.dtype, x.shape, x.strides)        # in bytes: keyed with the dtype (its element size)


_OUTPUTS: dict = {}         # array type -> how to key an output of it (dtype, shape, and whether it is read-only)


def _output_reader(kind: type):
    if kind.__module__.startswith("torch"):     # torch has no read-only tensors
        return lambda x: (x.dtype, x.shape)
    return lambda x: (x.dtype, x.shape, is_read_only(x))


def _checked_once(options: tuple, arrays: dict, axes: dict, allowed: dict, *, written: str = "c",
                  alike: tuple = (), extents_check=None) -> None:
    """:func:`checks.checked` for a call unlike any checked before (kinds, dtypes, shapes, strides and
    writeability of its arrays: ``signature_key``), and the output ``written`` writeable, by the caller's names;
    then ``extents_check(extents, loc)`` (the problem's extents by letter) where given."""
    key = (options, tuple(map(signature_key, arrays.values())))
    if _CHECKED_CALLS.find(key):
        return
    extents, _ = checks.checked(options[0], arrays, axes, allowed, user_location(), written=written, alike=alike)
    if extents_check is not None:
        extents_check(extents, user_location())
    _CHECKED_CALLS.remember(key, True)


_CHECKED_CALLS = checks.CallPlans()


def _transposed_view(x) -> bool:
    """Whether a 2-D ``x`` is the transposed view of a row-major array: unit stride on its first axis, not its
    last. Such an operand is read as its transpose in the other operand layout, with no copy."""
    strides = array_strides(x)
    return strides is not None and len(strides) == 2 and strides[0] == 1 and strides[1] != 1


def _output_shape(c, ndim: int) -> tuple:
    """``c``'s shape where it is an array of ``ndim`` dimensions, else ``(None,) * ndim`` (the kernel's own
    checks then name what is wrong with it)."""
    shape = getattr(c, "shape", None)
    if isinstance(shape, tuple) and len(shape) == ndim and all(isinstance(d, int) and d > 0 for d in shape):
        return shape
    return (None,) * ndim


#: Split-K: each split takes at least this many blocks of K.
MIN_SPLIT_K_BLOCKS = 8


@functools.lru_cache(maxsize=1024)          # called per gemm() call, as default_mapping
def split_k(m: int, n: int, k: int, mapping: nt.Mapping, *, sm_count: int | None = None) -> int:
    """How many splits of K the library runs an (m, n, k) product in under ``mapping``: where the output has tiles
    for fewer than a quarter of the SMs, as many as give every SM a tile (each split of at least
    :data:`MIN_SPLIT_K_BLOCKS` K blocks); two for the one row of 64 x 64 tiles :func:`default_mapping` chooses
    for that (:func:`_narrow_tiles_in_two_splits`); else 1. Measured (bf16, GPU time, the sum included): 16 x
    4096 x 4096 (32 tiles) ran 15.9 us unsplit and 11.5 in four splits on an H200 (cuBLAS 9.5), 13.7 and 12.6
    on an H100 (cuBLAS 9.5); 16 x 8192 x 8192 (64 tiles) gained on the H200 (45.0 -> 39.2 us, cuBLAS 34.2) but
    lost on the H100 (48.3 -> 52.8, cuBLAS 47.9), and 64 or 128 rows of it lost on both: half-filled outputs
    stay unsplit.
    Long K over a tile or two wants every SM: on an H200 (queued launches, cuBLAS in brackets) 128 x 128 x 65536
    ran 16.1 us in 16 splits, 10.3 in 64 and 13.1 in 96 (11.5); 128 x 256 x 32768 10.8 in 16, 9.1 in 32 (10.0);
    64 x 64 x 131072 25.7 in 16, 13.4 in 128 (12.2)."""
    if sm_count is None:
        sm_count = jit.sm_count()
    tile = mapping.tile_values()
    tiles = -(-m // tile["BM"]) * -(-n // tile["BN"])
    blocks = -(-k // tile["BK"])
    if mapping is TILE_64x64_MAPPING and _narrow_tiles_in_two_splits(m, n, 1, sm_count):
        return max(1, min(2, blocks // MIN_SPLIT_K_BLOCKS))
    if 4 * tiles >= sm_count:
        return 1
    return max(1, min(sm_count // tiles, blocks // MIN_SPLIT_K_BLOCKS))


SUM_THREADS = 256


def partials_sum(overlap_previous: bool = True):
    """Split-K's second kernel: ``c[i, j] = p[0, i, j] + p[1, i, j] + ...``, added in split order (the same bits
    on every run), converted to c's type. The library's is launched while the products' kernel runs
    (``overlap_previous``), so that it starts as soon as they are written: that took 0.1-1.0 us off the split
    products on an H200 and an H100 (``tools/split_k_overlap_probe.py``)."""
    @jit.mlir_func
    def sum_partials(c, p):
        from ..frontend.control import when          # MLIR: imported when traced, not with the library
        from ..frontend.launch import gpu_launch
        splits, m, n = p.shape

        @gpu_launch(grid=(-(-(m * n) // SUM_THREADS), 1, 1), block=(SUM_THREADS, 1, 1),
                    overlap_previous=overlap_previous)
        def sum_kernel(ctx):
            e = ctx.block_id.x * SUM_THREADS + ctx.thread_id.x
            with when(e < m * n):
                i, j = e // n, e % n
                total = p[0, i, j]
                for s in range(1, splits):
                    total = total + p[s, i, j]
                c[i, j] = total.to(c.dtype)
        sum_kernel()
    return sum_partials


_sum_partials = partials_sum()


def _partials_like(c, shape: tuple[int, ...]):
    """A float32 array of ``shape`` beside ``c`` for split-K's partial products (:func:`scratch.float32_like`),
    None for arrays of kinds it cannot allocate beside (the product then runs without splits)."""
    return float32_like(c, shape, "gemm.partials")


def gemm(a, b, c, *, b_layout: str = "KN", mapping: nt.Mapping | None = None, splits: int | None = None,
         autotune: bool = False) -> None:
    """``c[:] = a @ b`` (or batched over a leading axis), accumulated in float32 and converted to ``c``'s type.

    ``b_layout`` is ``"KN"`` for B stored (K, N) or ``"NK"`` for B stored (N, K); a ``b`` that is the transposed
    view of a row-major array (``w.T``) is read as that array in the other layout, with no copy. Compiled
    once per dtype, shape, strides and mapping (default :func:`default_mapping` for c's shape).

    An output with tiles for few of the SMs (a decode step's few rows, a long-K small output) runs split-K under
    the default mapping: :func:`split_k` shares of the K blocks computed side by side into float32 partial
    products (``splits * M * N`` floats beside ``c``), then added in split order into ``c`` (deterministic: the
    same bits on every run). ``splits`` sets their number (1: never split).

    ``autotune=True`` (without ``mapping``): where the product runs unsplit, the fastest of
    :data:`AUTOTUNED_TILINGS`, timed on the device at the first call of each shape class and kept on
    disk (``nt.autotune``); the results are those of any mapping.
    """
    signature = _signature(("gemm", b_layout, mapping, type(splits), splits, autotune), b, a,   # True is not 1
                           written=c)
    steps = _PLANNED.get(signature) if signature is not None else None
    if steps is None:
        steps = _gemm_steps(a, b, c, b_layout, mapping, splits, autotune)
        _PLANNED.remember(signature, steps)
    kernel, transposed, partials_shape, a_transposed = steps
    if transposed:
        b = b.T
    if a_transposed:
        a = a.T
    partials = _partials_like(c, partials_shape) if partials_shape is not None else None
    try:
        if partials is not None:
            kernel(partials, a, b)
            _sum_partials(c, partials)
        else:
            kernel(c, a, b)
    except ArgumentError as error:
        raise checks.by_callers_names(error, ("a", "b", "c")) from None


def _gemm_steps(a, b, c, b_layout: str, mapping: nt.Mapping | None, splits: int | None,
                autotune: bool = False) -> tuple:
    """What :func:`gemm` runs for these arguments, after checking them: ``(kernel, transposed, partials_shape,
    a_transposed)``, where ``transposed`` says the kernel takes ``b.T``, ``partials_shape`` (None: no split) the
    shape of split-K's partial products, which ``kernel`` computes and ``_sum_partials`` adds into ``c``, and
    ``a_transposed`` that the kernel takes ``a.T`` (a 16-bit ``a`` given as ``x.T``: read M-major)."""
    loc = user_location()
    checks.check_mapping("gemm", mapping, loc)
    ndim = len(getattr(a, "shape", ()))
    if b_layout not in ("KN", "NK"):
        raise ArgumentError(f"b_layout={b_layout!r} must be 'KN' or 'NK'", code="bad-layout",
                            hint="'KN' for b of shape (K, N), 'NK' for a weight stored (N, K)", loc=loc)
    if ndim == 3 and b_layout == "NK":
        raise ArgumentError("batched GEMM takes B as (batch, K, N)", code="bad-layout",
                            hint="leave b_layout out; pass a (batch, N, K) b as b.transpose(1, 2) copied", loc=loc)
    axes = {"a": "BMK", "b": "BKN", "c": "BMN"} if ndim == 3 else {"a": "MK", "b": b_layout, "c": "MN"}
    checks.checked("gemm", {"a": a, "b": b, "c": c}, axes,
                   {"a": checks.HALVES, "b": checks.HALVES, "c": checks.OUTPUTS}, loc, written="c", alike=("a", "b"))
    transposed = ndim == 2 and _transposed_view(b)
    if transposed:      # b is w.T of a row-major w: w is the operand in the other layout
        b_layout = "NK" if b_layout == "KN" else "KN"
    # a is x.T of a row-major 16-bit x: x is A stored M-major (wgmma transposes only 16-bit operands)
    a_transposed = ndim == 2 and _transposed_view(a) and getattr(getattr(a, "dtype", None), "itemsize", 0) == 2
    a_layout = "KM" if a_transposed else "MK"
    program = batched_matmul if ndim == 3 else matmul_program(b_layout, a_layout)
    splits, = checks.python_scalars(splits)
    if splits is not None and not (isinstance(splits, int) and not isinstance(splits, bool) and splits >= 1):
        raise ArgumentError(f"splits={splits!r} must be an int >= 1 (or None: chosen)", code="bad-argument",
                            hint="leave splits out to let the mapping choose, or pass 1 for no split",
                            loc=user_location())
    shape = _output_shape(c, 3 if ndim == 3 else 2)
    chosen = mapping is None
    if mapping is None:
        mapping = MAPPING if shape[0] is None else default_mapping(*shape[-2:], shape[0] if ndim == 3 else 1)
    k = _output_shape(a, 2)[-1]
    count = 1
    if ndim == 2 and shape[0] is not None and k is not None:
        count = splits if splits is not None else split_k(*shape, k, mapping) if chosen else 1
    if count > 1 and type(c).__module__.startswith(SCRATCH_BESIDE):
        return _kernel(partials_program(b_layout, a_layout), mapping), transposed, (count,) + tuple(shape), \
            a_transposed
    if autotune and chosen:
        return _autotuned(program), transposed, None, a_transposed
    return _kernel(program, mapping), transposed, None, a_transposed


def _row_counts(group_sizes) -> list[int]:
    """``group_sizes`` as ints (Python's, NumPy's, a torch tensor's elements; never 32.5 rows), none negative."""
    try:
        sizes = [operator.index(m) for m in group_sizes]
    except TypeError:
        sizes = None
    if sizes is None or any(m < 0 for m in sizes):
        raise ArgumentError(f"grouped_gemm: group_sizes {list(group_sizes)} must be whole numbers of rows, none "
                            "negative", code="bad-groups", hint="give each group's row count as an int (0 for an "
                            "expert given no tokens)", loc=user_location())
    return sizes


def row_tile_table(group_sizes, block_rows: int, capacity: int | None = None):
    """The row tiles of groups of ``group_sizes`` rows laid one after another, ``block_rows`` rows a tile,
    as an int32 NumPy array (capacity, 3) of (group, first row, end row), where a tile's end row is its
    group's end (the tile's rows stop there, not ``block_rows`` later). Rows past the listed tiles are
    (0, 0, 0), empty: ``capacity`` (default cdiv(sum, block_rows) + groups, enough for any sizes with that
    sum) keeps the table's shape, and so the compiled kernel, the same whatever the sizes."""
    import numpy as np

    sizes = _row_counts(group_sizes)
    if block_rows <= 0:
        raise ArgumentError(f"row_tile_table: block_rows {block_rows} must be > 0", code="bad-groups",
                            hint="pass the mapping's BM (128 by default)", loc=user_location())
    total = sum(sizes)
    capacity = -(-total // block_rows) + len(sizes) if capacity is None else capacity
    table = np.zeros((capacity, 3), dtype=np.int32)
    row = t = 0
    for g, m in enumerate(sizes):
        for first in range(row, row + m, block_rows):
            if t == capacity:
                raise ArgumentError(f"groups of {sizes} rows make more than {capacity} tiles of {block_rows} rows",
                                    code="bad-groups", hint="leave capacity out (it then fits any sizes of "
                                    "that sum)", loc=user_location())
            table[t] = (g, first, row + m)
            t += 1
        row += m
    return table


def grouped_gemm(a, b, c, group_sizes, *, mapping: nt.Mapping | None = None) -> None:
    """The grouped GEMM of a mixture of experts: ``a`` (M, K) and ``c`` (M, N) hold groups of rows one after
    another, ``group_sizes[g]`` rows for group g (they sum to M; any may be 0 or ragged), and
    ``c[rows of g] = a[rows of g] @ b[g]`` with ``b`` (groups, K, N); one launch for all groups.

    The tile table is made on the host (:func:`row_tile_table`); its shape depends only on M and the number
    of groups, so new sizes with the same sum reuse the compiled kernel.
    """
    checks.check_mapping("grouped_gemm", mapping, user_location())
    mapping = mapping or MAPPING
    sizes = _row_counts(group_sizes)
    _checked_once(("grouped_gemm",), {"a": a, "b": b, "c": c}, {"a": "MK", "b": "GKN", "c": "MN"},
                  {"a": checks.HALVES, "b": checks.HALVES, "c": checks.OUTPUTS}, alike=("a", "b"))
    shape_a, shape_b = tuple(a.shape), tuple(b.shape)
    if len(sizes) != shape_b[0] or sum(sizes) != shape_a[0]:
        raise ArgumentError(f"grouped_gemm needs one size per group of b summing to a's M; got a {list(shape_a)}, "
                            f"b {list(shape_b)}, {len(sizes)} sizes summing to {sum(sizes)}",
                            code="bad-groups", hint="one row count per expert of b, their sum a's rows",
                            loc=user_location())
    table = row_tile_table(sizes, mapping.tile_values().get("BM", 128))
    if type(a).__module__.startswith("torch"):       # a device array beside a's, not a copy per call
        import torch
        table = torch.from_numpy(table).to(a.device)
    try:
        _kernel(grouped_matmul, mapping)(c, a, b, table)
    except ArgumentError as error:
        raise checks.by_callers_names(error, ("a", "b", "c")) from None


def _check_scale_blocks(extents: dict, loc) -> None:
    """``block_scaled_gemm``'s scales (extents ``a``: scale_a's blocks of K; ``b``, ``k``: scale_b's blocks of N
    and of K): a scale per row of a and block of K, and per block of b's rows and of K."""
    m, n, k = extents["M"], extents["N"], extents["K"]
    blocks = -(-k // SCALE_BLOCK)
    for name, given, needed, per in (("scale_a", (m, extents["a"]), (m, blocks), "row of a"),
                                     ("scale_b", (extents["b"], extents["k"]), (-(-n // SCALE_BLOCK), blocks),
                                      f"{SCALE_BLOCK} rows of b")):
        if given != needed:
            raise ArgumentError(f"block_scaled_gemm: '{name}' has shape {given}; with a ({m}, {k}) and b ({n}, {k}) "
                                f"it must be {needed}, a scale per {per} and {SCALE_BLOCK} values of K (the last "
                                "block may be partial)", code="bad-shape", hint=f"pass '{name}' of shape {needed}",
                                loc=loc)


def block_scaled_gemm(a, b, c, scale_a, scale_b, *, mapping: nt.Mapping | None = None,
                      autotune: bool = False) -> None:
    """``c[:] = sum over blocks k of (a[:, k] @ b[:, k].T) * scale_a[:, k, None] * scale_b[n // 128, k]``, the
    blocks being 128 values of K: float8 with DeepSeek-V3's block scales (``torch._scaled_mm``'s blockwise
    scaling).

    ``a`` (M, K) and ``b`` (N, K) float8 (e4m3 or e5m2); ``scale_a`` (M, ceil(K / 128)) float32, a scale per row of
    ``a`` and block of K (any strides: torch's M-major layout, ``s.T.contiguous().T``, is read in place);
    ``scale_b`` (ceil(N / 128), ceil(K / 128)) float32, a scale per 128 x 128 block of ``b``; ``c`` float16,
    bfloat16 or float32. Each block's product is summed by the tensor cores (about 14 bits of mantissa over its 128
    products) and added into a float32 sum after its scaling: their coarser roundings add up over 128 products, not
    over all of K as in :func:`scaled_gemm`.

    ``mapping``: how the program runs (default :data:`BLOCK_SCALED_MAPPING`); or ``autotune=True``: the fastest of
    :data:`AUTOTUNED_BLOCK_SCALED`, timed on the device at the first call of each shape class and kept on disk
    (``nt.autotune``). Results are those of any mapping.
    """
    checks.check_mapping("block_scaled_gemm", mapping, user_location())
    if autotune is not False and (autotune is not True or mapping is not None):
        raise ArgumentError(f"block_scaled_gemm: autotune={autotune!r}" + (" with a mapping" if autotune is True
                                                                           else "") + "; it times the library's "
                            "mappings, and takes True or False", code="bad-argument",
                            hint="pass mapping=... to run one mapping, or autotune=True without one",
                            loc=user_location())
    _checked_once(("block_scaled_gemm",), {"a": a, "b": b, "c": c, "scale_a": scale_a, "scale_b": scale_b},
                  {"a": "MK", "b": "NK", "c": "MN", "scale_a": "Ma", "scale_b": "bk"},
                  {"a": checks.FLOAT8, "b": checks.FLOAT8, "c": checks.OUTPUTS, "scale_a": (dt.float32,),
                   "scale_b": (dt.float32,)}, extents_check=_check_scale_blocks)
    rows_of_blocks = getattr(scale_a, "T", None)        # (K/128, M): the program reads a block's scales as a row
    if rows_of_blocks is None:
        raise ArgumentError(f"block_scaled_gemm: 'scale_a' ({type(scale_a).__name__}) has no transposed view '.T', "
                            "which the kernel reads", code="bad-argument",
                            hint="pass scale_a as a NumPy array or a torch, CuPy or JAX array", loc=user_location())
    kernel = _autotuned(block_scaled_matmul, AUTOTUNED_BLOCK_SCALED) if autotune else \
        _kernel(block_scaled_matmul, mapping or BLOCK_SCALED_MAPPING)
    try:
        kernel(c, a, b, rows_of_blocks, scale_b)
    except ArgumentError as error:
        raise checks.by_callers_names(error, ("a", "b", "c", "scale_a", "scale_b")) from None


def scaled_gemm(a, b, c, scale_a, scale_b, *, mapping: nt.Mapping | None = None) -> None:
    """``c[:] = (a @ b.T) * scale_a * scale_b``: ``a`` (M, K) and ``b`` (N, K) float8 (e4m3 or e5m2),
    ``scale_a`` and ``scale_b`` float32 arrays of shape (1,), ``c`` float16, bfloat16 or float32.

    The tensor cores accumulate float8 products with about 14 bits of mantissa (as cuBLAS's fast float8
    accumulation), so the relative error grows with K: about 1e-4 at K = 256, 1e-3 at K = 4096.
    """
    checks.check_mapping("scaled_gemm", mapping, user_location())
    _checked_once(("scaled_gemm",), {"a": a, "b": b, "c": c, "scale_a": scale_a, "scale_b": scale_b},
                  {"a": "MK", "b": "NK", "c": "MN", "scale_a": "1", "scale_b": "1"},
                  {"a": checks.FLOAT8, "b": checks.FLOAT8, "c": checks.OUTPUTS, "scale_a": (dt.float32,),
                   "scale_b": (dt.float32,)})
    try:
        _kernel(scaled_matmul, mapping or FP8_MAPPING)(c, a, b, scale_a, scale_b)
    except ArgumentError as error:
        raise checks.by_callers_names(error, ("a", "b", "c", "scale_a", "scale_b")) from None

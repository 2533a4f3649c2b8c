"""Row-wise kernels: softmax, RMSNorm, LayerNorm and cross-entropy over the rows of a 2-D array.

    from nvdsl.kernels import rowwise
    rowwise.softmax(x, y)                          # y[r] = softmax(x[r])
    rowwise.rms_norm(x, w, y, eps=1e-6)            # y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w
    rowwise.layer_norm(x, w, b, y, eps=1e-5)       # y[r] = (x[r] - mean) / sqrt(var + eps) * w + b
    rowwise.cross_entropy(logits, targets, loss)   # loss[r] = logsumexp(logits[r]) - logits[r, targets[r]]

``x``, ``y`` and ``logits`` are (M, N) float32, float16 or bfloat16; ``w`` and ``b`` are (N,) of any of those;
``targets`` (M,) int32 (or int64, as torch's: converted first) and ``loss`` (M,) float32. Neither M nor N need be a
multiple of anything (a vocabulary of 50257 works).

Each is a short tile program (``nvdsl.tasks``) plus a mapping (:func:`default_mapping`). A block of one consumer
warpgroup takes ``BM`` = 16 rows of at most 256 columns (four a warp) in one tile of 128 or 256 columns, ``BM`` = 4
rows of at most 2048 columns (a row per warp) and walks their columns in blocks of ``BN`` =
2048 (``nt.srange(Xt.grid[1])``), or one wider row (over the four warps, whose sums meet in shared memory) in blocks
of 8192 (4096 for cross-entropy, 2048 for rows that move an element a lane),
masking columns past N with ``nt.arange`` positions:

* softmax: pass 1 keeps a running max and a rescaled sum of ``exp`` (an online softmax, as attention's),
  pass 2 re-reads each block and writes ``exp(x - max) / sum``;
* RMSNorm: pass 1 sums squares, pass 2 writes; LayerNorm: pass 1 keeps a running mean and sum of squared
  deviations from it (each block's combined by Chan's update: not ``E[x^2] - mean^2``, which cancels), pass 2
  writes;
* cross-entropy: one pass with the online max and sum, then the target's logit read alone
  (``logits[rows, targets]``, one element a row); ``loss = max + ln(sum) - logit[target]``. Targets outside
  ``[0, N)`` (an ignore index) give the row's log-sum-exp.

The task layer lays such programs' tiles out with each row along the 32 lanes of a warp (or of several), 8
consecutive columns a lane
(``rows_across_lanes``: nothing is multiplied, so no wgmma layout is needed), reads them by ordinary loads (not
TMA: so rows of any length work, and no ring or producer warpgroup is needed), 16 bytes a lane where the rows'
bytes and start are multiples of 16 (one element at a time otherwise), and stores each thread's own elements
likewise, clipped at the array's end; later passes re-read the rows (from L2 when they fit there). Rows of 16 to
64 KiB that move in vectors instead stay in shared memory for the tile (``memory={"X": "shared"}``, the task layer's
resident row blocks): TMA copies each row in once, a column block per mbarrier, and both passes read it there, so
the rows cross HBM twice (read, write) instead of three times.
"""

from __future__ import annotations

import functools
import math

from .. import dtypes as dt
from .. import tasks as nt
from ..errors import ArgumentError, user_location
from ..target import DEFAULT_SM_COUNT
from ..tasks import staging
from . import checks

# Narrow rows (at most COLUMNS): a block of ROWS rows, a row per warp, COLUMNS columns a step. BM = 4 was the fastest
# softmax of BM in (4, 8, 16, 32, 64) x BN in (128, 256, 512) on an H200 (one element a lane); with 16-byte vectors,
# of 4 x 512, 4 x 1024, 8 x 1024 and 4 x 2048 (`python3 -m benchmarks rowwise --tiles`, H200, 2026-11-27) BN = 2048
# was the fastest for softmax and RMSNorm or within 2% of it at every shape, for LayerNorm (three passes then) within
# 9% (8 x 1024 at (4096, 1000)); for cross-entropy (`tools/cross_entropy_pick_probe.py`) within 1% of 4 x 1024.
ROWS = 4
COLUMNS = 2048
# Narrow rows (at most NARROW_COLUMNS: a head's QK-norm over 128 features, a few hundred classes): NARROW_ROWS to a
# block, in tiles NARROW_TILE_COLUMNS[0] wide (rows of at most that many columns) or [1]. Against 4 x 2048 (H200,
# bf16, 2026-12-02, `--shapes 131072x128,65536x256 --tiles 4x256,16x256,32x256,16x128,64x128`), of the device
# copy's bandwidth: (131072, 128) 16 x 128 softmax 45 -> 74%, RMSNorm 46 -> 86, LayerNorm 46 -> 83, cross-entropy
# 24 -> 48; (65536, 256) 16 x 256 83 -> 87, 84 -> 98, 82 -> 96, 43 -> 63: the fastest of those tiles for every
# program at both shapes, or within 1.2% (RMSNorm: 16 x 256 at 128 columns, 32 x 256 at 256). 4 x 256 ran as
# 4 x 2048; 16 x 256 at 128 columns lost to 16 x 128 elsewhere (half its lanes idle), and 64 x 128 did. Those 16 x 128
# tiles moved an element a lane; in 8-byte vectors since (runs of 4 columns a lane, `tile_run`), the same day and
# card: softmax 85%, RMSNorm 99.5%, LayerNorm 96%, cross-entropy 49% at (131072, 128).
NARROW_COLUMNS = 256
NARROW_ROWS = 16
NARROW_TILE_COLUMNS = (128, 256)
# Wider rows: a block of one row, spread over the warpgroup's four warps (their sums meet in shared memory),
# WIDE_COLUMNS a step where the rows move in 16-byte vectors, SCALAR_WIDE_COLUMNS where they move an element a lane,
# CROSS_ENTROPY_WIDE_COLUMNS for cross-entropy. Against 4 x 2048, `--tiles 1x2048,1x4096,1x8192,2x4096` on an H200 and
# the defaults side by side on an H100 (2026-11-27): at (4096, 4096) softmax, RMSNorm and LayerNorm went from 80-87%
# of the device copy's bandwidth to 90-98%, at (8192, 50304) by -1 to +6%, 64 rows of 50304 or 128256 columns 2.5-4x
# faster (16 blocks of four rows left most SMs idle); at (8192, 50257), where rows move an element a lane, softmax and
# RMSNorm lose up to 5% and 9% (the wider rows' other shapes gain more). Cross-entropy (one pass, the probe above):
# 1 x 4096 the fastest or within 0.2% at (4096, 4096), (8192, 50257) and (8192, 50304) of 1 x 2048, 1 x 8192,
# 4 x 1024 and 4 x 2048.
WIDE_COLUMNS = 8192
SCALAR_WIDE_COLUMNS = 2048
CROSS_ENTROPY_WIDE_COLUMNS = 4096
# Rows of RESIDENT_BYTES that move in 16-byte vectors, in the programs of two passes: the block's row stays in shared
# memory for the tile (``memory={"X": "shared"}``: loaded once by TMA, both passes reading it there), RESIDENT_COLUMNS
# a step (4096 for rows of at most RESIDENT_NARROW columns). On an H200, bf16 (2026-11-27, `--tiles ...:shared`),
# against the rows read into registers in each pass (1 x 8192, the second pass from L2 where it still holds them):
# (16384, 8192) softmax 86 -> 95% of the device copy's bandwidth, RMSNorm 92 -> 97, LayerNorm 90 -> 94; (8192, 16384)
# 84 -> 92, 77 -> 95, 86 -> 84 (the one loss); (4096, 32768) 67 -> 90, 67 -> 89, 68 -> 79. Narrower rows (4096 x 4096:
# 92 -> 83% softmax) lose to L2, which keeps their arrays whole; wider ones (8192 x 50304, 100 KB a row: two blocks an
# SM) gain nothing (66 -> 64%).
RESIDENT_BYTES = (16 * 1024, 64 * 1024)
RESIDENT_COLUMNS, RESIDENT_NARROW_COLUMNS = 8192, 4096
RESIDENT_NARROW = 8192
# Rows past RESIDENT_BYTES up to VOCABULARY_BYTES (a vocabulary of 50304 bf16: 100 KB a row), for the programs of
# VOCABULARY_PROGRAMS, stay in shared memory too, RESIDENT_NARROW_COLUMNS a step, each held by VOCABULARY_CONSUMERS
# consumer warpgroups together (two blocks an SM of 16 warps: one warpgroup's math and barriers fell behind the
# copies). bf16 (8192, 50304), 2026-11-27, of the device copy's bandwidth, against the row read into registers in each
# pass: RMSNorm 65 -> 91% on an H100, 66 -> 75% on an H200; softmax and LayerNorm (two and three reductions a step)
# gain on the H100 (65 -> 82%, 65 -> 70%) but lose on the H200 (65 -> 60%, 61 -> 54%), so they keep their registers.
VOCABULARY_BYTES = 112 * 1024
VOCABULARY_CONSUMERS = 4
VOCABULARY_PROGRAMS = ("rms_norm",)
# Fewer rows than SMs (FEW_ROWS): a lone block an SM. Rows past RESIDENT_BYTES are held by FEW_ROWS_CONSUMERS
# warpgroups together, or, up to VOCABULARY_BYTES, kept in shared memory RESIDENT_COLUMNS a step by
# FEW_ROWS_RESIDENT_CONSUMERS; narrower ones are read into registers by one warpgroup (kept in shared memory, 64 rows
# of 16384 bf16 lost 6-12% on an H200); cross-entropy's rows, by one warpgroup, CROSS_ENTROPY_FEW_ROWS_COLUMNS a step.
# 64 rows of 50304 / 128256 bf16 against one warpgroup reading 8192 columns a step (4096 for cross-entropy) on an
# H200: softmax 760 -> 925 / 950 -> 1073 GB/s, RMSNorm 1098 -> 1233 / 1333 -> 1490, LayerNorm 811 -> 875 / 1083 ->
# 1170, cross-entropy 519 -> 643 / 637 -> 847 (on an H100 alike).
FEW_ROWS = DEFAULT_SM_COUNT
FEW_ROWS_CONSUMERS, FEW_ROWS_RESIDENT_CONSUMERS = 4, 2
CROSS_ENTROPY_FEW_ROWS_COLUMNS = 8192
LOG2_E = 1 / math.log(2)
LN_2 = math.log(2)
_FLOATS = (dt.float32, dt.float16, dt.bfloat16)


def default_mapping(name: str = "softmax", n: int | None = None, vectors: bool = True, itemsize: int = 2,
                    m: int | None = None) -> nt.Mapping:
    """How row-wise program ``name`` runs over ``m`` rows (None: many) of ``n`` columns (None: narrow rows) of
    ``itemsize``-byte elements that move in 16-byte vectors or not: no producer, one block per row tile; the
    narrowest rows (at most :data:`NARROW_COLUMNS`) ``NARROW_ROWS`` to a block, in tiles of
    :data:`NARROW_TILE_COLUMNS`; rows of at most :data:`COLUMNS` ``ROWS`` to a block, a row per warp of one consumer
    warpgroup; wider ones one to a
    block, each pass reading it into registers, or, for the programs of two passes over rows in vectors of
    :data:`RESIDENT_BYTES` (and RMSNorm's up to :data:`VOCABULARY_BYTES`), kept in shared memory for the tile unless
    there are fewer than :data:`FEW_ROWS`; few rows past :data:`RESIDENT_BYTES`, and RMSNorm's kept rows past it, held
    by several consumer warpgroups together."""
    memory, consumers = {}, 1
    if n is not None and n <= NARROW_COLUMNS:
        rows, columns = NARROW_ROWS, next(c for c in NARROW_TILE_COLUMNS if n <= c)
    elif n is None or n <= COLUMNS:
        rows, columns = ROWS, COLUMNS
    else:
        rows = 1
        columns = CROSS_ENTROPY_WIDE_COLUMNS if name == "cross_entropy" else WIDE_COLUMNS if vectors else \
            SCALAR_WIDE_COLUMNS
        few = m is not None and m < FEW_ROWS
        wider = n * itemsize > RESIDENT_BYTES[1]
        held = name != "cross_entropy" and vectors and n * itemsize >= RESIDENT_BYTES[0]
        if few and name == "cross_entropy":
            columns = CROSS_ENTROPY_FEW_ROWS_COLUMNS
        elif few and wider and held and _held_bytes(n, itemsize, RESIDENT_COLUMNS) <= VOCABULARY_BYTES:
            columns, memory, consumers = RESIDENT_COLUMNS, {"X": "shared"}, FEW_ROWS_RESIDENT_CONSUMERS
        elif few and wider:
            consumers = FEW_ROWS_CONSUMERS
        elif few:
            pass                        # one warpgroup reading the rows into registers
        elif held and resident_columns(n, itemsize):
            columns, memory = resident_columns(n, itemsize), {"X": "shared"}
        elif held and name in VOCABULARY_PROGRAMS and \
                _held_bytes(n, itemsize, RESIDENT_NARROW_COLUMNS) <= VOCABULARY_BYTES:
            columns, memory, consumers = RESIDENT_NARROW_COLUMNS, {"X": "shared"}, VOCABULARY_CONSUMERS
    return nt.Mapping(tiles={"BM": rows, "BN": columns}, memory=memory, consumers=consumers, warp_specialize=False,
                      persistent=False)


def _held_bytes(n: int, itemsize: int, columns: int) -> int:
    """The shared memory a row of ``n`` elements kept there takes in blocks of ``columns``."""
    return -(-n // columns) * columns * itemsize


def resident_columns(n: int, itemsize: int) -> int | None:
    """The columns a step of a row of ``n`` elements of ``itemsize`` bytes kept in shared memory by one warpgroup, or
    None where the row (its column blocks) is outside :data:`RESIDENT_BYTES`."""
    columns = RESIDENT_NARROW_COLUMNS if n <= RESIDENT_NARROW else RESIDENT_COLUMNS
    low, high = RESIDENT_BYTES
    return columns if low <= n * itemsize and _held_bytes(n, itemsize, columns) <= high else None


def _tile(X):
    BM, BN = nt.tunable("BM", ROWS), nt.tunable("BN", COLUMNS)
    return BM, BN, nt.blocks(X, (BM, BN))


def _read(Xt, i, j, BM, BN):
    """Tile (i, j) of X as float32 (zeros past X's ends)."""
    x = nt.zeros((BM, BN), name="x")
    x += Xt[i, j]
    return x


def online_max_and_sum(Xt, i, j, BM, BN, n, m, s):
    """One step of an online softmax over tile (i, j) of X (columns past ``n`` masked): the rows' running max ``m``
    and sum ``s`` of ``exp(x - m)``, the sum rescaled to the new max; returns the tile as read (float32,
    ``-inf`` past ``n``)."""
    cols = nt.arange(BN, start=j * BN, name="cols")
    x = nt.where((cols < n)[None, :], _read(Xt, i, j, BM, BN), -math.inf)
    m_new = nt.maximum(m, x.max(axis=1))
    s[...] = s * nt.exp2((m - m_new) * LOG2_E) + nt.exp2((x - m_new[:, None]) * LOG2_E).sum(axis=1)
    m[...] = m_new
    return x, cols


@functools.lru_cache(maxsize=None)
def softmax_program() -> nt.Task:
    """``Y[r] = exp(X[r] - max) / sum(exp(X[r] - max))`` in two passes over the column blocks."""

    @nt.task(reads=("X",), writes=("Y",))
    def softmax(Y, X):
        BM, BN, Xt = _tile(X)
        Yt = nt.blocks(Y, (BM, BN))
        n = X.shape[1]
        for i in nt.prange(Xt.grid[0]):
            m, s = nt.full((BM,), -math.inf, name="m"), nt.zeros((BM,), name="s")
            for j in nt.srange(Xt.grid[1]):
                online_max_and_sum(Xt, i, j, BM, BN, n, m, s)
            r = 1.0 / s
            for j in nt.srange(Xt.grid[1]):
                x = _read(Xt, i, j, BM, BN)
                Yt[i, j] = (nt.exp2((x - m[:, None]) * LOG2_E) * r[:, None]).astype(Y.dtype)
    return softmax


@functools.lru_cache(maxsize=None)
def rms_norm_program(eps: float) -> nt.Task:
    """``Y[r] = X[r] * rsqrt(mean(X[r]^2) + eps) * W`` in two passes over the column blocks."""

    @nt.task(reads=("X", "W"), writes=("Y",))
    def rms_norm(Y, X, W):
        BM, BN, Xt = _tile(X)
        Yt, Wt = nt.blocks(Y, (BM, BN)), nt.blocks(W, (BN,))
        n = X.shape[1]
        for i in nt.prange(Xt.grid[0]):
            squares = nt.zeros((BM,), name="squares")
            for j in nt.srange(Xt.grid[1]):
                x = _read(Xt, i, j, BM, BN)
                squares[...] = squares + (x * x).sum(axis=1)
            r = nt.rsqrt(squares * (1.0 / n) + eps)
            for j in nt.srange(Xt.grid[1]):
                x = _read(Xt, i, j, BM, BN)
                Yt[i, j] = (x * r[:, None] * Wt[j][None, :]).astype(Y.dtype)
    return rms_norm


@functools.lru_cache(maxsize=None)
def layer_norm_program(eps: float) -> nt.Task:
    """``Y[r] = (X[r] - mean) * rsqrt(var + eps) * W + B`` in two passes over the column blocks: the first keeps each
    row's running count, mean and sum of squared deviations from it, combining each block's own (its mean, and its
    squared deviations from that mean, masked past N) by Chan's update, so no ``E[x^2] - mean^2`` cancels; the
    second writes the output."""

    @nt.task(reads=("X", "W", "B"), writes=("Y",))
    def layer_norm(Y, X, W, B):
        BM, BN, Xt = _tile(X)
        Yt, Wt, Bt = nt.blocks(Y, (BM, BN)), nt.blocks(W, (BN,)), nt.blocks(B, (BN,))
        n = X.shape[1]
        for i in nt.prange(Xt.grid[0]):
            count, mean, squares = nt.zeros((BM,), name="count"), nt.zeros((BM,), name="mean"), \
                nt.zeros((BM,), name="squares")
            block = nt.full((BM,), float(BN), name="block")
            for j in nt.srange(Xt.grid[1]):
                cols = nt.arange(BN, start=j * BN, name="cols")
                inside = (cols < n)[None, :]
                x = _read(Xt, i, j, BM, BN)
                here = nt.minimum(block, n - j * BN)        # the block's columns inside the row
                block_mean = x.sum(axis=1) / here
                d = nt.where(inside, x - block_mean[:, None], 0.0)
                total = count + here
                delta = block_mean - mean
                mean[...] = mean + delta * (here / total)
                squares[...] = squares + (d * d).sum(axis=1) + delta * delta * (count * here / total)
                count[...] = total
            r = nt.rsqrt(squares * (1.0 / n) + eps)
            for j in nt.srange(Xt.grid[1]):
                x = _read(Xt, i, j, BM, BN)
                Yt[i, j] = ((x - mean[:, None]) * r[:, None] * Wt[j][None, :] + Bt[j][None, :]).astype(Y.dtype)
    return layer_norm


@functools.lru_cache(maxsize=None)
def cross_entropy_program() -> nt.Task:
    """``loss[r] = logsumexp(logits[r]) - logits[r, targets[r]]`` in one pass over the column blocks."""

    @nt.task(reads=("logits", "targets"), writes=("loss",))
    def cross_entropy(loss, logits, targets):
        BM, BN, Lt = _tile(logits)
        Tt, Ot = nt.blocks(targets, (BM,)), nt.blocks(loss, (BM,))
        n = logits.shape[1]
        for i in nt.prange(Lt.grid[0]):
            m, s = nt.full((BM,), -math.inf, name="m"), nt.zeros((BM,), name="s")
            for j in nt.srange(Lt.grid[1]):
                online_max_and_sum(Lt, i, j, BM, BN, n, m, s)
            picked = logits[nt.arange(BM, start=i * BM, name="rows"), Tt[i]]      # 0 for a target outside [0, N)
            Ot[i] = m + nt.log(s) - picked
    return cross_entropy


# -- the library calls --------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _kernel(program: nt.Task, the_mapping: nt.Mapping) -> nt.TaskKernel:
    return nt.build(program, the_mapping)


PROGRAMS = {"softmax": softmax_program, "rms_norm": rms_norm_program, "layer_norm": layer_norm_program,
            "cross_entropy": cross_entropy_program}
#: Each program's arguments, in the order its kernel takes them.
PARAMETERS = {"softmax": ("y", "x"), "rms_norm": ("y", "x", "w"), "layer_norm": ("y", "x", "w", "b"),
              "cross_entropy": ("loss", "logits", "targets")}


def _program(name: str, eps: float | None) -> nt.Task:
    if name not in PROGRAMS:
        raise ArgumentError(f"no row-wise program {name!r}", code="bad-call",
                            hint=f"the programs are {', '.join(PROGRAMS)}", loc=user_location())
    return PROGRAMS[name](float(eps if eps is not None else {"rms_norm": 1e-6}.get(name, 1e-5))) \
        if name in ("rms_norm", "layer_norm") else PROGRAMS[name]()


def kernel(name: str, *, eps: float | None = None, mapping: nt.Mapping | None = None, n: int | None = None,
           vectors: bool = True, itemsize: int = 2, m: int | None = None) -> nt.TaskKernel:
    """The built kernel of program ``name`` ("softmax", "rms_norm", "layer_norm", "cross_entropy"; ``eps``
    for the norms), called with its arguments in :data:`PARAMETERS`' order and no checks beyond the task
    layer's: for callers that time it. Without ``mapping``, :func:`default_mapping` for ``m`` rows of ``n`` columns of
    ``itemsize`` bytes that move in 16-byte vectors or not."""
    return _kernel(_program(name, eps), mapping or default_mapping(name, n, vectors, itemsize, m))


#: The mappings ``autotune=True`` times, as (BM, BN, consumer warpgroups): those :func:`default_mapping` chooses from
#: with each pass reading the rows into registers; for the programs of two passes also :data:`AUTOTUNED_RESIDENT`
#: with the rows kept in shared memory (where they fit).
AUTOTUNED = ((ROWS, COLUMNS, 1), *((NARROW_ROWS, c, 1) for c in NARROW_TILE_COLUMNS), (1, SCALAR_WIDE_COLUMNS, 1),
             (1, CROSS_ENTROPY_WIDE_COLUMNS, 1), (1, WIDE_COLUMNS, 1), (1, WIDE_COLUMNS, FEW_ROWS_CONSUMERS))
AUTOTUNED_RESIDENT = ((1, RESIDENT_NARROW_COLUMNS, 1), (1, RESIDENT_COLUMNS, 1),
                      (1, RESIDENT_NARROW_COLUMNS, VOCABULARY_CONSUMERS),
                      (1, RESIDENT_COLUMNS, FEW_ROWS_RESIDENT_CONSUMERS))


@functools.lru_cache(maxsize=None)
def _autotuned(program: nt.Task) -> nt.Autotuned:
    """``program`` under the fastest of :data:`AUTOTUNED` (and :data:`AUTOTUNED_RESIDENT`) per device and shape
    class (``nt.autotune``)."""
    def mapping(rows, columns, consumers, memory=None):
        return default_mapping().replace(tiles={"BM": rows, "BN": columns}, consumers=consumers,
                                         memory={"X": memory} if memory else {})
    candidates = [mapping(*choice) for choice in AUTOTUNED]
    if program.name != "cross_entropy":
        candidates += [mapping(*choice, "shared") for choice in AUTOTUNED_RESIDENT]
    return nt.autotune(program, candidates)


def _call(name: str, arrays: dict, axes: dict, allowed: dict, written: str, *, eps=None, mapping=None,
          autotune=False) -> None:
    """Check the library call's ``arrays`` (by the caller's names) and run program ``name`` on them, under
    ``mapping``, the fastest tiles on this device (``autotune``) or the default mapping for their rows."""
    loc = user_location()
    checks.check_mapping(name, mapping, loc)
    extents, specs = checks.checked(name, arrays, axes, allowed, loc, written=written)
    ordered = [arrays[key] for key in PARAMETERS[name]]
    try:
        if autotune and mapping is None:
            _autotuned(_program(name, eps))(*ordered)
            return
        vectors = staging.row_run(staging.spec_layouts(specs)) > 1
        rows = specs[PARAMETERS[name][1]]                  # x, or the logits
        kernel(name, eps=eps, mapping=mapping, n=extents["N"], vectors=vectors, itemsize=rows.dtype.itemsize,
               m=extents["M"])(*ordered)
    except ArgumentError as error:
        raise checks.by_callers_names(error, arrays) from None


def softmax(x, y, *, mapping: nt.Mapping | None = None, autotune: bool = False) -> None:
    """``y[r] = softmax(x[r])`` for every row ``r`` of the (M, N) array ``x`` (float32, float16 or bfloat16),
    computed in float32; ``y`` has x's shape, any of those dtypes. ``autotune=True`` (without ``mapping``): the
    fastest of :data:`AUTOTUNED` mappings on this device, timed once per shape class and kept on disk
    (``nt.autotune``; without a GPU, the first), as for the other row-wise calls."""
    _call("softmax", {"x": x, "y": y}, {"x": "MN", "y": "MN"}, {"x": _FLOATS, "y": _FLOATS}, "y", mapping=mapping,
          autotune=autotune)


def rms_norm(x, w, y, *, eps: float = 1e-6, mapping: nt.Mapping | None = None, autotune: bool = False) -> None:
    """``y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w`` for every row of the (M, N) array ``x``; ``w`` (N,);
    float32, float16 or bfloat16, computed in float32 (as ``torch.nn.functional.rms_norm``)."""
    _call("rms_norm", {"x": x, "w": w, "y": y}, {"x": "MN", "w": "N", "y": "MN"},
          {"x": _FLOATS, "w": _FLOATS, "y": _FLOATS}, "y", eps=eps, mapping=mapping, autotune=autotune)


def layer_norm(x, w, b, y, *, eps: float = 1e-5, mapping: nt.Mapping | None = None,
               autotune: bool = False) -> None:
    """``y[r] = (x[r] - mean) / sqrt(var + eps) * w + b`` for every row of the (M, N) array ``x`` (the biased
    variance, as ``torch.nn.functional.layer_norm``); ``w``, ``b`` (N,); float32, float16 or bfloat16,
    computed in float32."""
    _call("layer_norm", {"x": x, "w": w, "b": b, "y": y}, {"x": "MN", "w": "N", "b": "N", "y": "MN"},
          {"x": _FLOATS, "w": _FLOATS, "b": _FLOATS, "y": _FLOATS}, "y", eps=eps, mapping=mapping,
          autotune=autotune)


def cross_entropy(logits, targets, loss, *, mapping: nt.Mapping | None = None, autotune: bool = False) -> None:
    """``loss[r] = logsumexp(logits[r]) - logits[r, targets[r]]`` (natural log) for every row of the (M, N)
    ``logits`` (float32, float16 or bfloat16); ``targets`` (M,) int32 or int64, ``loss`` (M,) float32: torch's
    ``cross_entropy(logits, targets, reduction='none')``. A target outside ``[0, N)`` picks no logit (the row's
    loss is its log-sum-exp). int64 targets (torch's) are converted to an int32 copy first (M values, clamped to
    int32's range so that one outside ``[0, N)`` stays outside), by their own library on their device."""
    if str(getattr(targets, "dtype", "")) in ("int64", "torch.int64"):
        targets = _int32_copy(targets)
    _call("cross_entropy", {"logits": logits, "targets": targets, "loss": loss},
          {"logits": "MN", "targets": "M", "loss": "M"},
          {"logits": _FLOATS, "targets": (dt.int32, dt.int64), "loss": (dt.float32,)}, "loss", mapping=mapping,
          autotune=autotune)


def _int32_copy(targets):
    """An int32 copy of int64 ``targets`` (torch's, NumPy's or CuPy's), clamped to int32's range first."""
    low, high = -2 ** 31, 2 ** 31 - 1
    if hasattr(targets, "clamp"):           # torch: on the tensor's device and torch's current stream
        return targets.clamp(low, high).int()
    return targets.clip(low, high).astype("int32")

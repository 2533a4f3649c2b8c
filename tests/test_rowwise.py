"""Row-wise task programs (no matrix product): a softmax, RMSNorm and LayerNorm whose rows fit one tile, written
in the test; the library's (``nvdsl.kernels.rowwise``) over rows of several column blocks, cross-entropy over a
vocabulary row; odd row counts and odd row lengths; the refusals. Results are checked against float64 NumPy
within bounds derived from the arithmetic (see the ``*_bound`` helpers)."""

import math
import os

import ml_dtypes
import numpy as np
import pytest

import nvdsl
import nvdsl.tasks as nt
from nvdsl.errors import MappingError, TaskError
from nvdsl.kernels import attention, rowwise
from nvdsl.testing import assert_matches_golden, requires_gpu

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
BF16 = ml_dtypes.bfloat16
U = 2.0 ** -24                                   # float32's unit roundoff
# the output's unit roundoff, and half its smallest subnormal (the absolute error of a subnormal result)
OUT_U = {np.float32: (U, 2.0 ** -150), np.float16: (2.0 ** -11, 2.0 ** -25), BF16: (2.0 ** -8, 2.0 ** -134)}
TRANSCENDENTAL = 8 * U                           # exp2, log2, rsqrt: a few ulps each (PTX's are within 2)


def _out_u(dtype) -> float:
    return OUT_U[np.dtype(dtype).type][0]


def _tiny(dtype) -> float:
    return OUT_U[np.dtype(dtype).type][1]


# -- bounds --------------------------------------------------------------------------------------------------------

def softmax_bound(x64, y_dtype, n_blocks: int) -> np.ndarray:
    """The largest ``|y - softmax(x)|`` elementwise for ``exp2((x - m) * log2 e) / s`` in float32: the exponent
    ``t`` is rounded twice (a relative error of |t| 2u, which exp2 turns into |t| ln2 2u of the result), exp2
    itself, the sum's float32 accumulation of N positive terms (gamma_N), each block's rescaling of the running
    sum by an exp2 (3u a block), the reciprocal and the product (2u), and the output's rounding."""
    n = x64.shape[1]
    t = (x64 - x64.max(axis=1, keepdims=True)) / math.log(2)
    y = np.exp(x64 - x64.max(axis=1, keepdims=True))
    y /= y.sum(axis=1, keepdims=True)
    relative = (2 * np.abs(t) * math.log(2) + 2) * U + TRANSCENDENTAL + (n + 1) * U + n_blocks * (3 * U + TRANSCENDENTAL)
    return y * (relative + _out_u(y_dtype)) + _tiny(y_dtype) + 2.0 ** -126


def rms_norm_reference(x64, w64, eps):
    return x64 / np.sqrt((x64 * x64).mean(axis=1, keepdims=True) + eps) * w64


def rms_norm_bound(x64, w64, eps, y_dtype) -> np.ndarray:
    """``x * rsqrt(sum(x^2) / N + eps) * w``: the sum of N positive squares (each rounded: gamma_{N+1}), the
    scaling and eps (2u), rsqrt (half the argument's relative error, and its own), two products (2u), the
    output's rounding."""
    n = x64.shape[1]
    argument = ((n + 1) * U + 2 * U)
    relative = argument / 2 + TRANSCENDENTAL + 2 * U
    return np.abs(rms_norm_reference(x64, w64, eps)) * (relative + _out_u(y_dtype)) + _tiny(y_dtype) + 2.0 ** -126


def layer_norm_reference(x64, w64, b64, eps):
    mean = x64.mean(axis=1, keepdims=True)
    return (x64 - mean) / np.sqrt(((x64 - mean) ** 2).mean(axis=1, keepdims=True) + eps) * w64 + b64


def layer_norm_bound(x64, w64, b64, eps, y_dtype, columns: int = rowwise.COLUMNS) -> np.ndarray:
    """``(x - mean) * r * w + b``, the statistics kept over column blocks of at most ``rowwise.COLUMNS`` (Chan's
    update; one block covers the test programs' single pass). Each block's mean is off by at most
    (block + 1) u max|x| (gamma of its sum, the division); the running mean is a weighted average of them, each
    of the G updates adding about 4 roundings of at most 3 max|x|: ``E = (block + 1 + 12 G) u max|x|`` bounds it.
    The squared deviations: a block mean off by e adds ``block e^2`` to its block's (the cross term cancels),
    the G cross terms ``delta^2 count here / total`` are off by ``2 |delta| 2E`` each, at most ``4 E n sigma``
    together (Cauchy-Schwarz over sum(count here / total delta^2) <= n var), and the sums round within
    gamma_{N + 3G + 2}. Then rsqrt's (half the variance's relative error, and its own), each deviation's
    (``E`` + u |d|), three roundings of the output's terms and the output's own rounding. ``columns``: the
    program's column block."""
    n = x64.shape[1]
    block = min(n, columns)
    blocks = -(-n // columns)
    mean = x64.mean(axis=1, keepdims=True)
    d = x64 - mean
    var = (d * d).mean(axis=1, keepdims=True)
    e_mean = (block + 1 + 12 * blocks) * U * np.abs(x64).max(axis=1, keepdims=True)
    e_var = (n + 3 * blocks + 2) * U * var + 4 * e_mean * np.sqrt(var) + 5 * e_mean ** 2
    r = 1 / np.sqrt(var + eps)
    e_r = r * (e_var / (var + eps) / 2 + TRANSCENDENTAL + U)
    e_normed = (e_mean + U * np.abs(d)) * r + np.abs(d) * e_r + np.abs(d) * r * U
    y = d * r * w64 + b64
    return e_normed * np.abs(w64) + 3 * U * (np.abs(d * r * w64) + np.abs(b64)) + _out_u(y_dtype) * np.abs(y) + \
        _tiny(y_dtype) + 2.0 ** -126


def _picked(x64, targets):
    """Each row's logit at its target, 0 for a target outside the row (an ignore index)."""
    inside = (targets >= 0) & (targets < x64.shape[1])
    return np.where(inside, x64[np.arange(len(x64)), np.clip(targets, 0, x64.shape[1] - 1)], 0.0)


def cross_entropy_reference(x64, targets):
    m = x64.max(axis=1)
    return m + np.log(np.exp(x64 - m[:, None]).sum(axis=1)) - _picked(x64, targets)


def cross_entropy_bound(x64, targets, n_blocks: int) -> np.ndarray:
    """``m + log2(s) ln2 - x[target]``: the sum ``s`` as softmax's (relative error ``e``, which log2 turns into
    an absolute ``e / ln2`` and the multiply by ln2 back into ``e``), log2 and the multiply (a few ulps of
    |ln s|), and the two additions (u of each partial result)."""
    n = x64.shape[1]
    m = x64.max(axis=1)
    t = (x64 - m[:, None]) / math.log(2)
    ln_s = np.log(np.exp(x64 - m[:, None]).sum(axis=1))
    e = (2 * np.abs(t).max(axis=1) * math.log(2) + 2) * U + TRANSCENDENTAL + (n + 1) * U + n_blocks * (3 * U + TRANSCENDENTAL)
    picked = np.abs(_picked(x64, targets))
    return e + (TRANSCENDENTAL + 2 * U) * ln_s + 2 * U * (np.abs(m) + ln_s + picked) + 2.0 ** -126


def assert_within(y, reference, bound):
    excess = np.abs(y.astype(np.float64) - reference) - bound
    worst = np.unravel_index(np.argmax(excess), excess.shape)
    assert np.isfinite(y).all(), f"{np.count_nonzero(~np.isfinite(y))} elements not finite"
    assert excess[worst] <= 0, (f"{np.count_nonzero(excess > 0)} elements past the bound; at {worst}: {y[worst]} "
                                f"against {reference[worst]} (bound {bound[worst]})")


def _inputs(rng, shape, dtype, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


# -- programs of one tile per row (the issue's) ------------------------------------------------------------------

@nt.task(reads=("X",), writes=("Y",))
def softmax_tile(Y, X):
    BM, BN = nt.tunable("BM", 64), nt.tunable("BN", 128)
    Xt, Yt = nt.blocks(X, (BM, BN)), nt.blocks(Y, (BM, BN))
    for i, j0 in nt.prange(Xt.grid[0], 1):
        x = nt.zeros((BM, BN))
        x += Xt[i, 0]
        m = x.max(axis=1)
        p = nt.exp2(x - m[:, None])
        Yt[i, 0] = (p / p.sum(axis=1)[:, None]).astype(Y.dtype)


@nt.task(reads=("X", "W"), writes=("Y",))
def rms_norm_tile(Y, X, W):
    BM, BN = nt.tunable("BM", 64), nt.tunable("BN", 128)
    Xt, Yt = nt.blocks(X, (BM, BN)), nt.blocks(Y, (BM, BN))
    for i in nt.prange(Xt.grid[0]):
        x = nt.zeros((BM, BN))
        x += Xt[i, 0]
        r = nt.rsqrt((x * x).sum(axis=1) * (1.0 / X.shape[1]) + 1e-6)
        Yt[i, 0] = (x * r[:, None] * nt.blocks(W, (BN,))[0][None, :]).astype(Y.dtype)


@nt.task(reads=("X", "W", "B"), writes=("Y",))
def layer_norm_tile(Y, X, W, B):
    BM, BN = nt.tunable("BM", 64), nt.tunable("BN", 128)
    n = X.shape[1]
    Xt, Yt, Wt, Bt = nt.blocks(X, (BM, BN)), nt.blocks(Y, (BM, BN)), nt.blocks(W, (BN,)), nt.blocks(B, (BN,))
    for i in nt.prange(Xt.grid[0]):
        x = nt.zeros((BM, BN))
        x += Xt[i, 0]
        mean = x.sum(axis=1) * (1.0 / n)
        cols = nt.arange(BN)
        d = nt.where((cols < n)[None, :], x - mean[:, None], 0.0)
        r = nt.rsqrt((d * d).sum(axis=1) * (1.0 / n) + 1e-5)
        Yt[i, 0] = (d * r[:, None] * Wt[0][None, :] + Bt[0][None, :]).astype(Y.dtype)


ONE_CONSUMER = nt.Mapping(tiles={"BM": 64, "BN": 128}, consumers=1)


@pytest.mark.parametrize("dtype", [np.float32, BF16])
def test_the_issues_softmax_runs(dtype):
    """The softmax of issue 19 (exp2, one tile a row), 100 rows (not a multiple of 64) of 128; base-2 softmax."""
    rng = np.random.default_rng(1)
    x = _inputs(rng, (100, 128), dtype, 3.0)
    y = np.full_like(x, np.nan)
    nt.build(softmax_tile, ONE_CONSUMER)(y, x)
    x64 = x.astype(np.float64) * math.log(2)              # exp2(x) = exp(x ln 2)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    assert_within(y, e / e.sum(axis=1, keepdims=True), softmax_bound(x64, dtype, 1))


def test_the_issues_softmax_under_two_consumers_shares_its_rows():
    """The issue's softmax under the default two consumers (refused once: 64 rows cannot be shared in wgmma's
    64-row blocks): a row-wise program's tiles lie a row per warp, so each consumer takes 32 of the 64 rows.
    Two consumers that cannot share 5 rows are refused with a change that plans."""
    rng = np.random.default_rng(12)
    x = _inputs(rng, (100, 128), np.float32, 3.0)
    y = np.full_like(x, np.nan)
    kernel = nt.build(softmax_tile, nt.Mapping(tiles={"BM": 64, "BN": 128}))
    kernel(y, x)
    x64 = x.astype(np.float64) * math.log(2)              # exp2(x) = exp(x ln 2)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    assert_within(y, e / e.sum(axis=1, keepdims=True), softmax_bound(x64, np.float32, 1))
    with pytest.raises(MappingError) as refused:
        kernel.with_mapping(kernel.mapping.replace(tiles={"BM": 5, "BN": 128})).plan(x, x)
    assert "consumers=1" in refused.value.hint or "tiles['BM']=6" in refused.value.hint, refused.value.hint
    kernel.with_mapping(kernel.mapping.replace(tiles={"BM": 6, "BN": 128})).plan(x, x)    # 3 rows each, over 4 warps


def test_two_consumers_share_a_tiles_rows():
    """128 rows a tile, 64 a consumer (cooperative, with a producer warpgroup that has nothing to load)."""
    rng = np.random.default_rng(2)
    x = _inputs(rng, (200, 128), np.float32, 3.0)
    y = np.full_like(x, np.nan)
    kernel = nt.build(softmax_tile, nt.Mapping(tiles={"BM": 128, "BN": 128}))
    assert "rows 64*c .. +64 of each tile" in kernel.explain(y, x)
    kernel(y, x)
    x64 = x.astype(np.float64) * math.log(2)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    assert_within(y, e / e.sum(axis=1, keepdims=True), softmax_bound(x64, np.float32, 1))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_rms_norm_of_one_tile(dtype):
    rng = np.random.default_rng(3)
    x, w = _inputs(rng, (130, 128), dtype), _inputs(rng, (128,), dtype)
    y = np.full_like(x, np.nan)
    nt.build(rms_norm_tile, ONE_CONSUMER)(y, x, w)
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    assert_within(y, rms_norm_reference(x64, w64, 1e-6), rms_norm_bound(x64, w64, 1e-6, dtype))


def test_layer_norm_of_one_tile_with_columns_past_the_end():
    """Rows of 100 in tiles of 128: the columns past the end read as 0 and are masked out of the variance."""
    rng = np.random.default_rng(4)
    x = _inputs(rng, (77, 100), np.float32) + 3.0
    w, b = _inputs(rng, (100,), np.float32), _inputs(rng, (100,), np.float32)
    y = np.full_like(x, np.nan)
    nt.build(layer_norm_tile, ONE_CONSUMER)(y, x, w, b)
    x64, w64, b64 = (a.astype(np.float64) for a in (x, w, b))
    assert_within(y, layer_norm_reference(x64, w64, b64, 1e-5), layer_norm_bound(x64, w64, b64, 1e-5, np.float32))


# -- the library: rows over several column blocks ---------------------------------------------------------------

SHAPES = [(70, 300), (64, 257), (130, 128)]      # 300: TMA stores; 257 float32 rows: 1028 bytes, clipped stores


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_library_softmax(shape):
    rng = np.random.default_rng(5)
    x = _inputs(rng, shape, np.float32, 4.0)
    y = np.full_like(x, np.nan)
    rowwise.softmax(x, y)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    assert_within(y, e / e.sum(axis=1, keepdims=True), softmax_bound(x64, np.float32, -(-shape[1] // 128)))


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_library_rms_norm(shape):
    rng = np.random.default_rng(6)
    x, w = _inputs(rng, shape, np.float32), _inputs(rng, shape[1:], np.float32)
    y = np.full_like(x, np.nan)
    rowwise.rms_norm(x, w, y, eps=1e-6)
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    assert_within(y, rms_norm_reference(x64, w64, 1e-6), rms_norm_bound(x64, w64, 1e-6, np.float32))


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_library_layer_norm(shape):
    rng = np.random.default_rng(7)
    x = _inputs(rng, shape, np.float32) * 2.0 + 5.0
    w, b = _inputs(rng, shape[1:], np.float32), _inputs(rng, shape[1:], np.float32)
    y = np.full_like(x, np.nan)
    rowwise.layer_norm(x, w, b, y, eps=1e-5)
    x64, w64, b64 = (a.astype(np.float64) for a in (x, w, b))
    assert_within(y, layer_norm_reference(x64, w64, b64, 1e-5), layer_norm_bound(x64, w64, b64, 1e-5, np.float32))


def test_library_layer_norm_reads_each_row_twice():
    """The statistics in one pass (Chan's update per column block), the output in the second: two loops over the
    column blocks (three before, reading each row three times). The first pass reduces two sums a block (its mean,
    its squared deviations); the block's count of columns inside the row is ``min(BN, N - k * BN)``, an index, not a
    third sum (of a mask of ones)."""
    x, w = np.zeros((64, 5000), BF16), np.zeros(5000, BF16)
    schedule = rowwise.kernel("layer_norm", mapping=rowwise.default_mapping()).explain(x, x, w, w)
    assert schedule.count("srange k0 < 3") == 2, schedule
    first_pass = schedule.split("srange k0 < 3")[1]
    assert first_pass.count("= sum(") == 2 and "minimum(block, k0*-2048+5000)" in first_pass, first_pass


def _all_three(x, w, b, mapping, columns):
    """The softmax, RMSNorm and LayerNorm of ``x`` under ``mapping``, each against float64 within its bound."""
    x64, w64, b64 = (a.astype(np.float64) for a in (x, w, b))
    blocks = -(-x.shape[1] // 128)
    s = np.full(x.shape, np.nan, np.float32)
    rowwise.softmax(x, s, mapping=mapping)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    assert_within(s, e / e.sum(axis=1, keepdims=True), softmax_bound(x64, np.float32, blocks))
    y = np.full_like(x, np.nan)
    rowwise.rms_norm(x, w, y, mapping=mapping)
    assert_within(y, rms_norm_reference(x64, w64, 1e-6), rms_norm_bound(x64, w64, 1e-6, x.dtype))
    y = np.full(x.shape, np.nan, np.float32)
    rowwise.layer_norm(x, w, b, y, mapping=mapping)
    assert_within(y, layer_norm_reference(x64, w64, b64, 1e-5),
                  layer_norm_bound(x64, w64, b64, 1e-5, np.float32, columns))


@pytest.mark.parametrize("rows", [4, 1], ids=["a-row-a-warp", "a-row-over-four-warps"])
@pytest.mark.parametrize("n", [4504, 4501])
def test_library_rows_of_several_column_blocks(n, rows):
    """Rows of three column blocks, the last ragged (408 or 405 of 2048 columns), in 16-byte vectors (4504 bf16) or
    one element at a time (4501), four rows to a block (a row per warp) or one (over the four warps, their partial
    sums meeting in shared memory): each pass walks the blocks, and columns past the end are masked."""
    rng = np.random.default_rng(13)
    x, w, b = _inputs(rng, (6, n), BF16, 3.0), _inputs(rng, (n,), BF16), _inputs(rng, (n,), BF16)
    w64, b64 = (a.astype(np.float64) for a in (w, b))
    mapping = rowwise.default_mapping().replace(tiles={"BM": rows, "BN": 2048})
    _all_three(x, w, b, mapping, 2048)
    y = np.full(x.shape, np.nan, np.float32)
    # blocks of different means: most of the variance is between blocks (Chan's cross terms)
    shifted = (x.astype(np.float32) + np.repeat([0.0, 50.0, -30.0], 2048)[:n]).astype(BF16)
    s64 = shifted.astype(np.float64)
    rowwise.layer_norm(shifted, w, b, y, mapping=mapping)
    assert_within(y, layer_norm_reference(s64, w64, b64, 1e-5), layer_norm_bound(s64, w64, b64, 1e-5, np.float32))


@pytest.mark.parametrize("n, dtype, columns, shared", [(4100, np.float32, 8192, False), (2051, BF16, 2048, False),
                                                       (4104, BF16, 8192, False)])
def test_library_wide_rows_take_a_block_each(n, dtype, columns, shared):
    """Rows wider than 2048 columns run one to a block, over the four warps (``default_mapping``): 8192 columns a
    step where they move in 16-byte vectors (4104 bf16; 4100 float32, 16400-byte rows, which many rows would keep
    in shared memory but five read into registers), 2048 where they move an element a lane (2051 bf16: 4102-byte
    rows); every program against float64, a last ragged block among them."""
    explained = _every_program_against_float64(np.random.default_rng(21), 5, n, dtype, columns)
    assert f"BM: 1, BN: {columns}" in explained and "each row along the lanes of 4 warps" in explained, explained
    assert ("keep X[p0:+1, 0:+8192] in shared memory" in explained) == shared, explained


def _every_program_against_float64(rng, rows: int, n: int, dtype, columns: int) -> str:
    """Softmax, RMSNorm, LayerNorm (``columns`` a step) and cross-entropy over ``rows`` random rows of ``n`` columns
    by the library's default mapping, each against float64 (targets -100 and n among them: ignored, the row's lse);
    softmax's ``explain()`` for those rows."""
    x, w, b = _inputs(rng, (rows, n), dtype, 3.0), _inputs(rng, (n,), dtype), _inputs(rng, (n,), dtype)
    x64, w64, b64 = (a.astype(np.float64) for a in (x, w, b))
    itemsize = np.dtype(dtype).itemsize
    explained = rowwise.kernel("softmax", n=n, vectors=n * itemsize % 16 == 0, itemsize=itemsize, m=rows
                               ).explain(x, x)
    blocks = -(-n // 128)
    s = np.full(x.shape, np.nan, np.float32)
    rowwise.softmax(x, s)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    assert_within(s, e / e.sum(axis=1, keepdims=True), softmax_bound(x64, np.float32, blocks))
    y = np.full_like(x, np.nan)
    rowwise.rms_norm(x, w, y)
    assert_within(y, rms_norm_reference(x64, w64, 1e-6), rms_norm_bound(x64, w64, 1e-6, dtype))
    y = np.full(x.shape, np.nan, np.float32)
    rowwise.layer_norm(x, w, b, y)
    assert_within(y, layer_norm_reference(x64, w64, b64, 1e-5),
                  layer_norm_bound(x64, w64, b64, 1e-5, np.float32, columns))
    targets = rng.integers(0, n, rows).astype(np.int32)
    targets[:2] = (-100, n)
    loss = np.full(rows, np.nan, np.float32)
    rowwise.cross_entropy(x, targets, loss)
    assert_within(loss, cross_entropy_reference(x64, targets), cross_entropy_bound(x64, targets, blocks))
    return explained


@pytest.mark.parametrize("n, dtype, columns", [(128, BF16, 128), (100, BF16, 128), (256, np.float32, 256),
                                               (200, BF16, 256), (257, BF16, 2048)])
def test_library_narrow_rows_take_sixteen_to_a_block(n, dtype, columns):
    """Rows of at most 256 columns (a head's QK-norm of 128) run 16 to a block, in one tile of 128 or 256 columns
    (``default_mapping``; 4 x 2048 before, which read them at under half the bandwidth); 257 columns, 4 to a block as
    before. 37 rows: the last block ragged. Every program against float64."""
    explained = _every_program_against_float64(np.random.default_rng(23), 37, n, dtype, columns)
    assert f"BM: {16 if n <= 256 else 4}, BN: {columns}" in explained, explained


@pytest.mark.parametrize("rows", [2, 3])
def test_row_tiles_of_two_and_three_rows(rows):
    """A block of two rows (each over two warps) or three (each over all four, three values a thread), seven rows in
    all: the last block ragged."""
    rng = np.random.default_rng(22)
    x = _inputs(rng, (7, 1000), np.float32, 4.0)
    s = np.full_like(x, np.nan)
    rowwise.softmax(x, s, mapping=rowwise.default_mapping().replace(tiles={"BM": rows, "BN": 256}))
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    assert_within(s, e / e.sum(axis=1, keepdims=True), softmax_bound(x64, np.float32, 8))


def test_library_16_bit_rows_of_odd_length():
    """bfloat16 in and out, rows of 1001 (2002 bytes: clipped stores), 3 rows (one tile, mostly empty)."""
    rng = np.random.default_rng(8)
    x, w = _inputs(rng, (3, 1001), BF16), _inputs(rng, (1001,), BF16)
    y = np.full_like(x, np.nan)
    rowwise.rms_norm(x, w, y)
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    assert_within(y, rms_norm_reference(x64, w64, 1e-6), rms_norm_bound(x64, w64, 1e-6, BF16))
    s = np.full_like(x, np.nan)
    rowwise.softmax(x, s)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    assert_within(s, e / e.sum(axis=1, keepdims=True), softmax_bound(x64, BF16, 8))


def test_library_rows_of_16_byte_multiples_move_in_vector_accesses():
    """Rows whose bytes are a multiple of 16 (bfloat16 rows of 1000: the last column block half past the end) are
    read and written 16 bytes a lane (``ld.global.v4``/``st.global.v4``; the interpreter checks each vector's
    alignment), into a row-aligned slice of a wider buffer (its other columns untouched) and into float32. Where
    rows of 1001, or a slice whose rows are 2008 bytes apart, take part, every tile moves in single elements."""
    rng = np.random.default_rng(10)
    x, w = _inputs(rng, (5, 1000), BF16, 3.0), _inputs(rng, (1000,), BF16)
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    wide = np.full((5, 1016), np.nan, BF16)
    y = wide[:, :1000]                                   # rows 2032 bytes apart
    rowwise.rms_norm(x, w, y)
    assert_within(y, rms_norm_reference(x64, w64, 1e-6), rms_norm_bound(x64, w64, 1e-6, BF16))
    assert np.isnan(wide[:, 1000:].astype(np.float32)).all()
    s = np.full(x.shape, np.nan, np.float32)
    rowwise.softmax(x, s)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    assert_within(s, e / e.sum(axis=1, keepdims=True), softmax_bound(x64, np.float32, 8))

    def ptx(*args):
        return rowwise.kernel("softmax").compile(*args).ptx
    vectors = ptx(y, x)
    assert "ld.global.v4" in vectors and "st.global.v4" in vectors
    assert "st.global.v4" in ptx(s, x)                   # float32: two vectors of 4 a run of 8
    unaligned = np.zeros((5, 1004), BF16)[:, :1000]
    assert "v4" not in ptx(unaligned, x)                  # one such argument: lanes side by side, no vectors
    odd = np.zeros((3, 1001), BF16)
    assert "v4" not in ptx(odd, odd)
    explain = rowwise.kernel("softmax").explain            # says which, and why
    assert "runs of 8 columns a lane, loaded and stored in 16-byte vectors" in explain(y, x)
    assert "one element a lane, since 'Y': its rows are 2008 bytes apart, not a multiple of 16" in \
        explain(unaligned, x)
    assert "'X': its rows hold 1001 elements, not a multiple of 8" in explain(odd, odd)


@pytest.mark.parametrize("columns, run, loads", [(128, 4, ("ld.global.v4.b16", "ld.global.v2.b32")),
                                                 (64, 2, ("ld.global.v2.b16", "ld.global.b32"))])
def test_tiles_narrower_than_a_warps_16_byte_runs_move_in_shorter_vectors(columns, run, loads):
    """A row-wise tile of 128 columns over one warp's lanes holds runs of 4 columns a lane (8 bytes of bfloat16), of
    64 runs of 2: read and written as vectors of that many elements (before, one element at a time: 16-byte runs
    need 256 columns a warp). The interpreter checks each vector access's alignment; the backward's row dot products
    (rows of D = 64 or 128 columns) read so too."""
    rng = np.random.default_rng(24)
    x = _inputs(rng, (37, columns), BF16, 3.0)
    mapping = rowwise.default_mapping().replace(tiles={"BM": 16, "BN": columns})
    s = np.full(x.shape, np.nan, np.float32)
    rowwise.softmax(x, s, mapping=mapping)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    assert_within(s, e / e.sum(axis=1, keepdims=True), softmax_bound(x64, np.float32, 1))
    kernel = rowwise.kernel("softmax", mapping=mapping)
    y = np.zeros_like(x)
    ptx = kernel.compile(y, x).ptx
    assert any(load in ptx for load in loads) and "ld.global.b16" not in ptx, ptx
    assert f"runs of {run} columns a lane (the tiles' rows are {columns} columns)" in kernel.explain(y, x)
    delta = nt.build(attention.delta_program(), attention.backward_mappings(columns)[0])
    o = np.zeros((1, 2, 64, columns), BF16)
    assert "ld.global.b16" not in delta.compile(np.zeros((1, 2, 64), np.float32), o, o).ptx


@requires_gpu
def test_torch_row_views_in_vectors_or_elements_on_the_gpu():
    """Device views used in place: a row-aligned column slice (16-byte vector accesses) and views starting 2 bytes
    in (single elements: a vector access there would fault), against float64; the slices' neighbours untouched."""
    torch = pytest.importorskip("torch")
    gen = torch.Generator(device="cuda").manual_seed(11)
    base = (torch.randn(37, 1040, device="cuda", generator=gen) * 3.0).to(torch.bfloat16)
    w = torch.randn(1000, device="cuda", generator=gen).to(torch.bfloat16)
    for start in (16, 1):                                  # 32 bytes in: aligned rows; 2 bytes in: not
        x = base[:, start:start + 1000]
        out = torch.full((37, 1040), 7.0, device="cuda", dtype=torch.bfloat16)
        y = out[:, start:start + 1000]
        rowwise.rms_norm(x, w, y)
        x64, w64 = x.double().cpu().numpy(), w.double().cpu().numpy()
        assert_within(y.float().cpu().numpy(), rms_norm_reference(x64, w64, 1e-6),
                      rms_norm_bound(x64, w64, 1e-6, BF16))
        assert bool((out[:, :start] == 7.0).all()) and bool((out[:, start + 1000:] == 7.0).all())
        s = torch.empty(37, 1000, device="cuda")
        rowwise.softmax(x, s)
        e = np.exp(x64 - x64.max(axis=1, keepdims=True))
        assert_within(s.cpu().numpy(), e / e.sum(axis=1, keepdims=True), softmax_bound(x64, np.float32, 8))


@pytest.mark.parametrize("n, dtype", [(50257, BF16), (1000, np.float32)])
def test_library_cross_entropy_over_a_vocabulary(n, dtype):
    """Per-row loss over a GPT-2 vocabulary (50257 bf16 logits, 393 column blocks, the last with 81 columns);
    targets anywhere, the last column among them, and two outside the row; 66 rows, the last tile ragged."""
    rng = np.random.default_rng(9)
    rows = 66
    logits = _inputs(rng, (rows, n), dtype, 3.0)
    targets = rng.integers(0, n, rows).astype(np.int32)
    targets[:5] = (0, n - 1, 127, -100, n)                  # -100 and n: ignored (the row's log-sum-exp)
    loss = np.full(rows, np.nan, np.float32)
    rowwise.cross_entropy(logits, targets, loss)
    x64 = logits.astype(np.float64)
    assert_within(loss, cross_entropy_reference(x64, targets), cross_entropy_bound(x64, targets, -(-n // 128)))


@nt.task(reads=("X", "T"), writes=("O",))
def pick_tile(O, X, T):
    BM = nt.tunable("BM", 4)
    Xt, Tt, Ot = nt.blocks(X, (BM, 128)), nt.blocks(T, (BM,)), nt.blocks(O, (BM,))
    for i in nt.prange(Xt.grid[0]):
        Ot[i] = X[nt.arange(BM, start=i * BM), Tt[i]] * 2.0


@nt.task(reads=("X", "T"), writes=("O",))
def pick_next_tile(O, X, T):
    BM = nt.tunable("BM", 4)
    Xt, Tt, Ot = nt.blocks(X, (BM, 128)), nt.blocks(T, (BM,)), nt.blocks(O, (BM,))
    for i in nt.prange(Xt.grid[0]):
        columns = nt.zeros((BM,), nvdsl.int32) + Tt[i]
        Ot[i] = X[nt.arange(BM, start=i * BM), columns + 1]


def test_a_program_picks_at_computed_columns():
    """The columns a computed int vector (each row's target plus one): 301 and 0 fall outside or in again."""
    x = np.arange(7 * 300, dtype=np.float32).reshape(7, 300)
    t = np.array([0, 299, 300, -1, 5, -100, 150], np.int32)
    o = np.full(7, np.nan, np.float32)
    nt.build(pick_next_tile, rowwise.default_mapping().replace(tiles={"BM": 4}))(o, x, t)
    inside = (t + 1 >= 0) & (t + 1 < 300)
    # a picked element is copied, not computed: exact
    np.testing.assert_array_equal(o, np.where(inside, x[np.arange(7), np.clip(t + 1, 0, 299)], 0.0))


@pytest.mark.parametrize("rows", [4, 2, 1])
def test_a_program_picks_one_element_a_row(rows):
    """``X[rows, cols]`` with the columns read on the GPU (NumPy's pairing of two index vectors): one element of each
    row, 0 where the column is outside the row (-1, -100, N) or the row past the array's end (7 rows in blocks of
    4 or 2); exact."""
    x = np.arange(7 * 300, dtype=np.float32).reshape(7, 300)
    t = np.array([0, 299, 300, -1, 5, -100, 150], np.int32)
    o = np.full(7, np.nan, np.float32)
    kernel = nt.build(pick_tile, rowwise.default_mapping().replace(tiles={"BM": rows}))
    assert "X_picked = X[p0" in kernel.explain(o, x, t)
    kernel(o, x, t)
    inside = (t >= 0) & (t < 300)
    # a copied element times 2 (integers below 2^24): exact in float32
    np.testing.assert_array_equal(o, np.where(inside, x[np.arange(7), np.clip(t, 0, 299)], 0.0) * 2.0)


def test_picking_is_refused_where_it_cannot_be_ordered_or_shaped():
    @nt.task(reads=("T",), writes=("X",))
    def written(X, T):
        Xt, Tt = nt.blocks(X, (4, 128)), nt.blocks(T, (4,))
        for i in nt.prange(Xt.grid[0]):
            Xt[i, 0] = nt.zeros((4, 128)) + X[nt.arange(4, start=i * 4), Tt[i]][:, None]

    @nt.task(reads=("X", "T"), writes=("O",))
    def float_columns(O, X, T):
        Xt, Ot = nt.blocks(X, (4, 128)), nt.blocks(O, (4,))
        for i in nt.prange(Xt.grid[0]):
            Ot[i] = X[nt.arange(4, start=i * 4), nt.zeros((4,))]

    x, t, o = np.zeros((8, 128), np.float32), np.zeros(8, np.int32), np.zeros(8, np.float32)
    with pytest.raises(TaskError) as refused:
        nt.build(written, rowwise.default_mapping().replace(tiles={})).plan(x, t)
    assert refused.value.code == "bad-privilege" and "reads=('X',)" in refused.value.hint
    with pytest.raises(TaskError) as refused:
        nt.build(float_columns, rowwise.default_mapping().replace(tiles={})).plan(o, x, t)
    assert refused.value.code == "bad-tile" and "nt.arange(BM, start=i * BM), cols" in refused.value.hint


def test_library_calls_tune_their_tiles_on_request(tmp_path, monkeypatch):
    """``autotune=True`` runs each program under the fastest of the tiles the default mapping chooses from (without
    a GPU the first, nothing timed): the results are those of the default mapping."""
    monkeypatch.setenv("NVDSL_CACHE_DIR", str(tmp_path))
    rowwise._autotuned.cache_clear()
    rng = np.random.default_rng(23)
    x, w, b = _inputs(rng, (5, 3000), np.float32, 3.0), _inputs(rng, (3000,), np.float32), \
        _inputs(rng, (3000,), np.float32)
    x64, w64, b64 = (a.astype(np.float64) for a in (x, w, b))
    blocks = -(-3000 // 128)
    y = np.full_like(x, np.nan)
    rowwise.softmax(x, y, autotune=True)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    assert_within(y, e / e.sum(axis=1, keepdims=True), softmax_bound(x64, np.float32, blocks))
    rowwise.rms_norm(x, w, y, autotune=True)
    assert_within(y, rms_norm_reference(x64, w64, 1e-6), rms_norm_bound(x64, w64, 1e-6, np.float32))
    rowwise.layer_norm(x, w, b, y, autotune=True)
    assert_within(y, layer_norm_reference(x64, w64, b64, 1e-5), layer_norm_bound(x64, w64, b64, 1e-5, np.float32))
    targets, loss = np.array([0, 2999, -100, 7, 1500], np.int32), np.full(5, np.nan, np.float32)
    rowwise.cross_entropy(x, targets, loss, autotune=True)
    assert_within(loss, cross_entropy_reference(x64, targets), cross_entropy_bound(x64, targets, blocks))
    tuned = rowwise._autotuned(rowwise.softmax_program())
    assert [(*m.tile_values().values(), m.consumers, dict(m.memory).get("X")) for m in tuned.mappings] == \
        [(*t, None) for t in rowwise.AUTOTUNED] + [(*t, "shared") for t in rowwise.AUTOTUNED_RESIDENT]
    assert len(rowwise._autotuned(rowwise.cross_entropy_program()).mappings) == len(rowwise.AUTOTUNED)
    assert len(tuned.timings) == 1                      # the call chose through it


def test_library_arguments_are_checked():
    x = np.zeros((4, 8), np.float32)
    with pytest.raises(nvdsl.errors.ArgumentError) as bad:
        rowwise.rms_norm(x, np.zeros(7, np.float32), x.copy())
    assert bad.value.code == "bad-shape" and "test_rowwise.py" in str(bad.value) and "(8,)" in bad.value.hint
    with pytest.raises(nvdsl.errors.ArgumentError) as bad:
        rowwise.cross_entropy(x, np.zeros(4, np.float32), np.zeros(4, np.float32))
    assert bad.value.code == "bad-dtype" and bad.value.hint == "convert it to int32"


def test_int64_targets_give_the_int32_targets_loss(backend):
    """torch's targets are int64 (F.cross_entropy needs them so): they go through an int32 copy, clamped so that a
    target outside [0, N), however far (an ignore index of -100, 2**40), still picks no logit."""
    rng = np.random.default_rng(0)
    logits = (rng.standard_normal((6, 300)) * 3).astype(np.float32)
    wide = np.array([0, 299, -100, 300, 2 ** 40, -(2 ** 40)], np.int64)
    narrow = np.array([0, 299, -100, 300, 2 ** 31 - 1, -(2 ** 31)], np.int32)
    by_int64, by_int32 = np.zeros(6, np.float32), np.zeros(6, np.float32)
    rowwise.cross_entropy(logits, wide, by_int64)
    rowwise.cross_entropy(logits, narrow, by_int32)
    assert np.array_equal(by_int64, by_int32)        # the same kernel on the same int32 targets
    torch = pytest.importorskip("torch")
    device = "cuda" if backend == "gpu" else "cpu"
    loss = torch.zeros(6, device=device)
    rowwise.cross_entropy(torch.from_numpy(logits).to(device), torch.from_numpy(wide).to(device), loss)
    assert np.array_equal(loss.cpu().numpy(), by_int32)


def test_library_softmax_schedule(request):
    """The plan of a two-pass program: no ring, no producer, passes in registers, stores through staging."""
    x = np.zeros((4096, 1000), np.float32)
    text = rowwise.kernel("softmax").explain(x, x)
    assert_matches_golden(text, os.path.join(GOLDEN, "tasks_rowwise_softmax.schedule.txt"),
                          update=request.config.getoption("--update-golden"))


def test_library_cross_entropy_schedule(request):
    """One pass over the column blocks of rows wider than 2048 (one to a block), then each row's target logit read
    alone (``logits[rows, targets]``), not compared against every column in every step."""
    logits, targets, loss = np.zeros((64, 50257), BF16), np.zeros(64, np.int32), np.zeros(64, np.float32)
    text = rowwise.kernel("cross_entropy", n=50257, vectors=False).explain(loss, logits, targets)
    assert "logits_picked = logits[p0 + r" in text and "for k0 < 13:" in text, text
    assert_matches_golden(text, os.path.join(GOLDEN, "tasks_rowwise_cross_entropy.schedule.txt"),
                          update=request.config.getoption("--update-golden"))


# -- refusals ------------------------------------------------------------------------------------------------------

def test_two_loops_with_a_product_are_refused():
    @nt.task(reads=("A", "B"), writes=("C",))
    def two_loops(C, A, B):
        Ct, At, Bt = nt.blocks(C, (128, 128)), nt.blocks(A, (128, 64)), nt.blocks(B, (64, 128))
        for i, j in nt.prange(*Ct.grid):
            acc = nt.zeros((128, 128))
            for k in nt.srange(At.grid[1]):
                acc += At[i, k] @ Bt[k, j]
            for k in nt.srange(At.grid[1]):
                acc += At[i, k] @ Bt[k, j]
            Ct[i, j] = acc.astype(C.dtype)
    a, c = np.zeros((128, 128), np.float16), np.zeros((128, 128), np.float16)
    with pytest.raises(TaskError) as refused:
        nt.build(two_loops).plan(c, a, a)
    assert refused.value.code == "unsupported-program" and "registers alone" in str(refused.value)


# -- argument tiles and vectors added into computed ones (issue 19's emission crashes) ----------------------------

@nt.task(reads=("X", "W"), writes=("Y",))
def vector_plus_argument(Y, X, W):
    Xt, Yt, Wt = nt.blocks(X, (64, 128)), nt.blocks(Y, (64,)), nt.blocks(W, (64,))
    for i in nt.prange(Xt.grid[0]):
        s = nt.zeros((64,))
        s += Wt[i]
        Yt[i] = s + Xt[i, 0].sum(axis=1)


def test_an_argument_vector_added_into_a_computed_vector():
    """``s += Wt[i]`` with ``s`` a vector over the rows: the argument's vector is read in the rows' layout (it
    crashed in emission: '_Pending' object has no attribute 'dtype'). Small integers: every sum is exact."""
    rng = np.random.default_rng(10)
    x = rng.integers(-4, 5, (100, 128)).astype(np.float32)
    w = rng.integers(-4, 5, 100).astype(np.float32)
    y = np.full(100, np.nan, np.float32)
    nt.build(vector_plus_argument, nt.Mapping(consumers=1))(y, x, w)
    np.testing.assert_array_equal(y, w + x.sum(axis=1))


@nt.task(reads=("A", "B", "R"), writes=("C",))
def residual_in_place(C, A, B, R):
    Ct, At, Bt, Rt = nt.blocks(C, (128, 128)), nt.blocks(A, (128, 64)), nt.blocks(B, (64, 128)), nt.blocks(R, (128, 128))
    for i, j in nt.prange(*Ct.grid):
        acc = nt.zeros((128, 128))
        for k in nt.srange(At.grid[1]):
            acc += At[i, k] @ Bt[k, j]
        acc += Rt[i, j]
        Ct[i, j] = acc.astype(C.dtype)


@nt.task(reads=("X", "R"), writes=("Y",))
def tile_plus_argument_after_the_loop(Y, X, R):
    Xt, Yt, Rt = nt.blocks(X, (64, 128)), nt.blocks(Y, (64, 128)), nt.blocks(R, (64, 128))
    for i in nt.prange(Xt.grid[0]):
        x = nt.zeros((64, 128))
        total = nt.zeros((64,))
        for j in nt.srange(1):
            total[...] = total + Xt[i, j].max(axis=1)
        x += Rt[i, 0]
        Yt[i, 0] = (x * total[:, None]).astype(Y.dtype)


def test_an_argument_tile_added_in_place_after_the_main_loop():
    """``acc += Rt[i, j]`` after the K loop (the epilogue) updates acc in place (it recursed without end: the
    deferred sum read itself). Small integers: exact."""
    rng = np.random.default_rng(11)
    a, b = (rng.integers(-2, 3, s).astype(np.float16) for s in ((200, 128), (128, 136)))
    r = rng.integers(-8, 9, (200, 136)).astype(np.float16)
    c = np.full((200, 136), np.nan, np.float16)
    nt.build(residual_in_place, nt.Mapping(sm_count=2))(c, a, b, r)
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32) + r)
    x, y = rng.integers(-4, 5, (70, 128)).astype(np.float32), np.full((70, 128), np.nan, np.float32)
    nt.build(tile_plus_argument_after_the_loop, nt.Mapping(consumers=1))(y, x, r[:70, :128].astype(np.float32))
    np.testing.assert_array_equal(y, r[:70, :128].astype(np.float32) * x.max(axis=1)[:, None])


@nt.task(reads=("X",), writes=("Y", "L", "S"))
def natural_softmax(Y, L, S, X):
    Xt, Yt = nt.blocks(X, (64, 128)), nt.blocks(Y, (64, 128))
    Lt, St = nt.blocks(L, (64,)), nt.blocks(S, (64,))
    for i in nt.prange(Xt.grid[0]):
        x = nt.zeros((64, 128))
        x += Xt[i, 0]
        m = x.max(axis=1)
        s = nt.exp(x - m[:, None]).sum(axis=1)
        Yt[i, 0] = nt.exp(x - m[:, None]) * nt.rsqrt(s * s)[:, None]
        Lt[i] = nt.log(s) + m
        St[i] = nt.sqrt(s)


def test_natural_exp_log_sqrt_and_rsqrt():
    """nt.exp (as exp2 of x log2 e), nt.log (log2 times ln 2), nt.sqrt and nt.rsqrt: a softmax in base e, its
    log-sum-exp and the square root of its sum; the pass that decides the loops prints them."""
    rng = np.random.default_rng(12)
    x = _inputs(rng, (90, 128), np.float32, 3.0)
    y, lse, root = np.full_like(x, np.nan), np.full(90, np.nan, np.float32), np.full(90, np.nan, np.float32)
    kernel = nt.build(natural_softmax, nt.Mapping(consumers=1))
    kernel(y, lse, root, x)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    assert_within(y, e / e.sum(axis=1, keepdims=True), softmax_bound(x64, np.float32, 1))
    s = e.sum(axis=1)
    # s's relative error (N + 2 |t| + a few ulps of u, under 2^-18 for these x) is ln s's absolute error; the
    # additions add u of |lse| <= max |x| + ln N
    assert np.abs(lse - (np.log(s) + x64.max(axis=1))).max() <= 2 ** -18 * (np.abs(x64).max() + np.log(128))
    np.testing.assert_allclose(root, np.sqrt(s), rtol=(128 + 16) * U)
    assert "passes over column blocks" not in kernel.explain(y, lse, root, x, stage="row_sums")
    two_pass = rowwise.kernel("softmax").explain(x, x, stage="row_sums")
    assert two_pass.startswith("passes over column blocks in the consumers' registers (no ring): 2 srange loops")


@nt.task(reads=("A", "B", "R"), writes=("C",))
def product_plus_half_residual(C, A, B, R):
    Ct, At, Bt, Rt = nt.blocks(C, (64, 128)), nt.blocks(A, (64, 64)), nt.blocks(B, (64, 128)), nt.blocks(R, (64, 128))
    for i, j in nt.prange(*Ct.grid):
        acc = nt.zeros((64, 128))
        for k in nt.srange(At.grid[1]):
            acc += At[i, k] @ Bt[k, j]
        x = acc.astype(nt.float16)
        x += Rt[i, j]
        Ct[i, j] = (x * 2.0).astype(C.dtype)


def test_a_float16_tile_is_stored_a_slice_of_columns_at_a_time():
    """A float16 tile computed in registers (a product's accumulator converted, a residual added: no longer an
    accumulator) stored as float32 through TMA in two slices of 64 columns (it failed: 'RegisterTile' object has
    no attribute 'columns'). Small integers: every sum exact."""
    rng = np.random.default_rng(13)
    a = rng.integers(-3, 4, (100, 64)).astype(np.float16)
    b = rng.integers(-3, 4, (64, 128)).astype(np.float16)
    r = rng.integers(-50, 50, (100, 128)).astype(np.float16)
    c = np.full((100, 128), np.nan, np.float32)
    kernel = nt.build(product_plus_half_residual, nt.Mapping(tiles={}, consumers=1))
    assert "64 columns at a time" in kernel.explain(c, a, b, r)
    kernel(c, a, b, r)
    np.testing.assert_array_equal(c, 2 * (a.astype(np.float32) @ b.astype(np.float32) + r.astype(np.float32)))


@nt.task(reads=("X",), writes=("Y",))
def columns_left(Y, X):
    Xt, Yt = nt.blocks(X, (1, 256)), nt.blocks(Y, (1, 256))
    n = X.shape[1]
    for i in nt.prange(Xt.grid[0]):
        block = nt.full((1,), 256.0)
        for j in nt.srange(Xt.grid[1]):
            x = nt.zeros((1, 256))
            x += Xt[i, j]
            Yt[i, j] = x * 0.0 + nt.minimum(block, n - j * 256)[:, None] + (j * 1000 + i)


def test_tile_math_takes_indices_of_loop_variables():
    """An index of the loops' variables (``n - j * BN``, ``j * 1000 + i``) is a number of the tile's dtype in tile
    math: each column block's count of columns inside the row, plus a tag of the step and row (exact in float32)."""
    x = np.zeros((3, 600), np.float32)
    y = np.full_like(x, np.nan)
    nt.build(columns_left, nt.Mapping(consumers=1, warp_specialize=False))(y, x)
    blocks = np.repeat(np.arange(3), 256)[:600]
    # exact: x is 0, and every value is an integer below 2^24 (so float32 holds it and its sums exactly)
    np.testing.assert_array_equal(y, np.minimum(256, 600 - 256 * blocks)[None, :] + 1000 * blocks[None, :] +
                                  np.arange(3)[:, None])

    @nt.task(reads=("X",), writes=("Y",))
    def plus_text(Y, X):
        Xt, Yt = nt.blocks(X, (1, 256)), nt.blocks(Y, (1, 256))
        for i in nt.prange(Xt.grid[0]):
            x = nt.zeros((1, 256))
            x += Xt[i, 0]
            Yt[i, 0] = x + "1"
    with pytest.raises(TaskError, match="tile math combines tiles, broadcast vectors, indices and Python numbers"):
        nt.build(plus_text, nt.Mapping(consumers=1, warp_specialize=False)).plan(y, x)


@nt.task(reads=("X",), writes=("Y",))
def two_pass_reductions(Y, X):
    Xt, Yt = nt.blocks(X, (64, 128)), nt.blocks(Y, (64, 128))
    for i in nt.prange(Xt.grid[0]):
        m = nt.full((64,), -math.inf)
        for j in nt.srange(Xt.grid[1]):
            m[...] = nt.maximum(m, Xt[i, j].max(axis=1))
        for j in nt.srange(Xt.grid[1]):
            x = nt.zeros((64, 128))
            x += Xt[i, j]
            Yt[i, j] = x - m[:, None]


@pytest.mark.parametrize("memory", ["shared", "register"])
def test_reductions_of_argument_tiles_in_passes(memory):
    """Row maxima of argument tiles, ``Xt[i, j].max(axis=1)``, in one of several passes: their tiles go through
    shared memory by default, where the row block stays for the tile (loaded once by TMA, 64 rows of two column
    blocks); mapped to registers, ordinary loads read them in each pass. Either way the result is NumPy's float32
    subtraction (a maximum and one subtraction, both exact as rounded)."""
    x = np.random.default_rng(14).standard_normal((70, 256)).astype(np.float32)
    y = np.full_like(x, np.nan)
    kernel = nt.build(two_pass_reductions, nt.Mapping(consumers=1, memory={} if memory == "shared" else
                                                      {"X": memory}))
    assert ("keep X[p0*64:+64, 0:+256] in shared memory" in kernel.explain(y, x)) == (memory == "shared")
    kernel(y, x)
    np.testing.assert_array_equal(y, x - x.max(axis=1, keepdims=True))


# -- row blocks kept in shared memory for the tile ---------------------------------------------------------------

@pytest.mark.parametrize("rows, columns", [(1, 256), (2, 512), (4, 256)])
def test_row_blocks_kept_in_shared_memory(rows, columns):
    """``memory={"X": "shared"}``: each tile's row block is loaded once, by TMA, a column block per mbarrier (4 of
    them for rows of 1000 in blocks of 256; 2 of 512), and both passes read it there. Seven rows, so that the last
    row block overhangs M (TMA fills it with zeros) as the last column block overhangs N."""
    rng = np.random.default_rng(31)
    x, w, b = _inputs(rng, (7, 1000), BF16, 3.0), _inputs(rng, (1000,), BF16), _inputs(rng, (1000,), BF16)
    mapping = rowwise.default_mapping().replace(tiles={"BM": rows, "BN": columns}, memory={"X": "shared"})
    text = rowwise.kernel("softmax", mapping=mapping).explain(x, x)
    chunks = -(-1000 // columns)
    origin = "p0" if rows == 1 else f"p0*{rows}"
    assert f"keep X[{origin}:+{rows}, 0:+{chunks * columns}] in shared memory for the tile ({chunks} column " \
           f"blocks of {rows} x {columns}" in text and f"box [{rows}, 256]" in text, text
    _all_three(x, w, b, mapping, columns)


def test_row_blocks_kept_in_shared_memory_by_persistent_blocks():
    """Blocks that walk several tiles (persistent, two blocks for 7 rows): each tile's copies wait on the next phase
    of the same barriers, and a tile's loads start only once every read of the last tile's row block is done."""
    rng = np.random.default_rng(32)
    x, w, b = _inputs(rng, (7, 600), np.float32, 3.0), _inputs(rng, (600,), np.float32), \
        _inputs(rng, (600,), np.float32)
    mapping = rowwise.default_mapping().replace(tiles={"BM": 1, "BN": 256}, memory={"X": "shared"},
                                                persistent=True, sm_count=2)
    assert "grid: 2 block(s)" in rowwise.kernel("softmax", mapping=mapping).explain(x, x)
    _all_three(x, w, b, mapping, 256)


def test_library_keeps_rows_of_16_to_64_kib_in_shared_memory():
    """The default mapping keeps a row in shared memory where it moves in 16-byte vectors and its column blocks hold
    16 to 64 KiB (``rowwise.RESIDENT_BYTES``), for the programs of two passes, by one consumer warpgroup: 4096
    columns a step up to 8192 columns, 8192 beyond; not for cross-entropy (one pass), rows of single elements, or
    rows past 64 KiB (those up to 112 KiB: by several warpgroups, below)."""
    def resident(name, n, vectors=True, itemsize=2):
        mapping = rowwise.default_mapping(name, n, vectors, itemsize)
        return dict(mapping.memory).get("X") == "shared" and mapping.consumers == 1 and dict(mapping.tiles)["BN"]
    assert resident("softmax", 8192) == 4096 and resident("rms_norm", 8200) == 8192
    assert resident("layer_norm", 32768) == 8192 and resident("softmax", 4096, itemsize=4) == 4096
    assert not resident("softmax", 8184) and not resident("softmax", 32776) and not resident("softmax", 50304)
    assert not resident("cross_entropy", 16384) and not resident("softmax", 16384, vectors=False)
    assert not resident("softmax", 32768, itemsize=4)


def test_library_holds_vocabulary_rows_and_few_rows_with_several_warpgroups():
    """RMSNorm's rows past 64 KiB up to 112 KiB (a vocabulary of 50304 bf16) are kept in shared memory 4096 columns
    a step by four consumer warpgroups that hold each row together (softmax's and LayerNorm's are read into
    registers in each pass); fewer rows than SMs past 64 KiB are held by several warpgroups (two with the row in
    shared memory, 8192 columns a step, four reading it into registers), cross-entropy's by one, 8192 columns a
    step. Many rows past 112 KiB keep one warpgroup, and so do few rows of 16-64 KiB (read into registers)."""
    def plan(name, n, m=None, itemsize=2):
        mapping = rowwise.default_mapping(name, n, n * itemsize % 16 == 0, itemsize, m)
        return dict(mapping.tiles)["BN"], dict(mapping.memory).get("X"), mapping.consumers
    assert plan("rms_norm", 50304) == (4096, "shared", 4) and plan("rms_norm", 57344) == (4096, "shared", 4)
    assert plan("softmax", 50304) == (8192, None, 1) and plan("layer_norm", 50304) == (8192, None, 1)
    assert plan("rms_norm", 50304, m=64) == (8192, "shared", 2) and plan("softmax", 50304, m=131) == \
        (8192, "shared", 2)
    assert plan("softmax", 128256, m=64) == (8192, None, 4) and plan("cross_entropy", 50304, m=64) == (8192, None, 1)
    assert plan("softmax", 50257, m=64) == (2048, None, 4)          # single elements a lane
    assert plan("softmax", 16384, m=64) == (8192, None, 1)           # 32 KiB rows: one warpgroup, registers
    assert plan("cross_entropy", 16384, m=64) == (8192, None, 1)
    assert plan("softmax", 128256) == (8192, None, 1) and plan("cross_entropy", 50304) == (4096, None, 1)
    assert plan("rms_norm", 57352) == (8192, None, 1)                # 15 blocks of 4096: past 112 KiB
    assert plan("softmax", 1000, m=8) == (2048, None, 1)             # narrow rows: four a block, a warp each


def test_library_rows_kept_in_shared_memory():
    """Rows of 8200 bfloat16 (16400 bytes: kept in shared memory by the default mapping of as many rows as SMs or
    more, two column blocks of 8192, the second almost all past the end): the library calls under it (on three rows,
    which the default itself reads into registers) against float64."""
    rng = np.random.default_rng(33)
    x, w, b = _inputs(rng, (3, 8200), BF16, 3.0), _inputs(rng, (8200,), BF16), _inputs(rng, (8200,), BF16)
    many = rowwise.default_mapping("softmax", 8200, True, 2, rowwise.FEW_ROWS)
    assert "keep X[p0:+1, 0:+16384] in shared memory" in rowwise.kernel("softmax", mapping=many).explain(x, x)
    assert not dict(rowwise.default_mapping("softmax", 8200, True, 2, 3).memory)
    _all_three(x, w, b, many, 8192)


def test_row_blocks_tma_cannot_address_go_through_a_staging_copy():
    """Rows of 1001 bfloat16 (2002 bytes apart) have no TMA descriptor: kept in shared memory, the row blocks are
    loaded from a staging copy of X with 16-byte rows (explain says so), the results unchanged."""
    rng = np.random.default_rng(34)
    x, w, b = _inputs(rng, (5, 1001), BF16, 3.0), _inputs(rng, (1001,), BF16), _inputs(rng, (1001,), BF16)
    mapping = rowwise.default_mapping().replace(tiles={"BM": 1, "BN": 512}, memory={"X": "shared"})
    assert "X: the stride of axis 0 is 2002 bytes" in rowwise.kernel("softmax", mapping=mapping).explain(x, x)
    _all_three(x, w, b, mapping, 512)


def test_row_blocks_in_shared_memory_compile_to_tma_and_vector_reads():
    """The kernel of a row kept in shared memory (bf16, 16384 columns) loads it by TMA and reads it 16 bytes a lane
    (``ld.shared.v4``), no ordinary load of X left; the sm_90a assembly (where ptxas is found) spills nothing."""
    x = np.zeros((64, 16384), BF16)
    compiled = rowwise.kernel("softmax", n=16384).compile(x, x)
    ptx = compiled.ptx
    assert "cp.async.bulk.tensor.2d" in ptx and "ld.shared.v4" in ptx and "ld.global" not in ptx, ptx[-2000:]
    for resources in (compiled.resources or {}).values():
        assert resources.spill_stores == 0 and resources.spill_loads == 0, resources


@pytest.mark.parametrize("rows, consumers, columns, memory", [(1, 2, 2048, ""), (1, 4, 4096, "shared"),
                                                              (2, 4, 2048, ""), (3, 2, 2048, "shared")])
def test_consumers_hold_a_row_tile_together(rows, consumers, columns, memory):
    """Consumer warpgroups that cannot split a tile's rows hold them together: each row along the lanes of warps of
    all of them (one body over the block's 128 x consumers threads, outside any Warpgroup, the rows' sums meeting at
    the block's barrier); a row block kept in shared memory has its copies spread over all their warps. Seven rows
    of 3000 bf16 (the last row and column blocks ragged), every program against float64."""
    rng = np.random.default_rng(36)
    x, w, b = _inputs(rng, (7, 3000), BF16, 3.0), _inputs(rng, (3000,), BF16), _inputs(rng, (3000,), BF16)
    mapping = rowwise.default_mapping().replace(tiles={"BM": rows, "BN": columns}, consumers=consumers,
                                                memory={"X": memory} if memory else {})
    text = rowwise.kernel("softmax", mapping=mapping).explain(x, x)
    warps = 4 * consumers // math.gcd(rows, 4 * consumers)
    assert f"whole tiles together, each row along the lanes of warps of all {consumers}" in text and \
        f"each row along the lanes of {warps} warps" in text and f"of {128 * consumers} threads" in text, text
    _all_three(x, w, b, mapping, columns)
    x64 = x.astype(np.float64)
    targets = np.array([0, 2999, -100, 5, 1500, 3000, 7], np.int32)
    loss = np.full(7, np.nan, np.float32)
    rowwise.cross_entropy(x, targets, loss, mapping=mapping.replace(memory={}))
    assert_within(loss, cross_entropy_reference(x64, targets), cross_entropy_bound(x64, targets, -(-3000 // 128)))


def _library_calls_on_the_gpu(shape, dtype: str, seed: int) -> None:
    """Every row-wise library call on torch tensors of ``shape`` (x, and w, b of its rows) under its default mapping,
    against float64."""
    torch = pytest.importorskip("torch")
    gen = torch.Generator(device="cuda").manual_seed(seed)
    torch_dtype = getattr(torch, dtype)
    x = (torch.randn(*shape, device="cuda", generator=gen) * 3.0).to(torch_dtype)
    w, b = (torch.randn(shape[1], device="cuda", generator=gen).to(torch_dtype) for _ in range(2))
    x64, w64, b64 = (a.double().cpu().numpy() for a in (x, w, b))
    blocks = -(-shape[1] // 128)
    s = torch.empty(shape, device="cuda")
    rowwise.softmax(x, s)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    assert_within(s.cpu().numpy(), e / e.sum(axis=1, keepdims=True), softmax_bound(x64, np.float32, blocks))
    y = torch.empty_like(x)
    rowwise.rms_norm(x, w, y)
    assert_within(y.float().cpu().numpy(), rms_norm_reference(x64, w64, 1e-6),
                  rms_norm_bound(x64, w64, 1e-6, np.float32 if dtype == "float32" else BF16))
    y = torch.empty(shape, device="cuda")
    rowwise.layer_norm(x, w, b, y)
    vectors = shape[1] * x.element_size() % 16 == 0
    columns = dict(rowwise.default_mapping("layer_norm", shape[1], vectors, x.element_size(), shape[0]).tiles)["BN"]
    assert_within(y.cpu().numpy(), layer_norm_reference(x64, w64, b64, 1e-5),
                  layer_norm_bound(x64, w64, b64, 1e-5, np.float32, columns))
    targets = torch.randint(0, shape[1], (shape[0],), device="cuda", generator=gen).to(torch.int32)
    targets[:2] = torch.tensor([-100, shape[1]], dtype=torch.int32)
    loss = torch.empty(shape[0], device="cuda")
    rowwise.cross_entropy(x, targets, loss)
    t = targets.cpu().numpy()
    assert_within(loss.cpu().numpy(), cross_entropy_reference(x64, t), cross_entropy_bound(x64, t, blocks))


@requires_gpu
@pytest.mark.parametrize("shape, dtype", [((300, 16384), "bfloat16"), ((133, 8200), "bfloat16"),
                                          ((140, 4100), "float32"), ((150, 32768), "bfloat16")])
def test_library_rows_kept_in_shared_memory_on_the_gpu(shape, dtype):
    """The default mapping's rows kept in shared memory (16 to 64 KiB a row) on torch tensors, every program against
    float64."""
    itemsize = 4 if dtype == "float32" else 2
    x = np.zeros(shape, np.float32 if dtype == "float32" else BF16)
    assert "in shared memory for the tile" in rowwise.kernel("softmax", n=shape[1], itemsize=itemsize,
                                                             m=shape[0]).explain(x, x)
    _library_calls_on_the_gpu(shape, dtype, 35)


@requires_gpu
@pytest.mark.parametrize("shape", [(300, 50304), (64, 50304), (64, 128256), (37, 50257)])
def test_library_rows_held_by_several_warpgroups_on_the_gpu(shape):
    """Vocabulary rows (RMSNorm's) and few rows, held by several consumer warpgroups together by default (kept in
    shared memory where they fit), on bf16 torch tensors: every program against float64."""
    mapping = rowwise.default_mapping("rms_norm", shape[1], shape[1] % 8 == 0, 2, shape[0])
    assert mapping.consumers > 1, mapping
    _library_calls_on_the_gpu(shape, "bfloat16", 37)


def test_library_softmax_resident_schedule(request):
    """The plan of a two-pass program whose row stays in shared memory (golden)."""
    x = np.zeros((64, 16384), BF16)
    text = rowwise.kernel("softmax", n=16384).explain(x, x)
    assert_matches_golden(text, os.path.join(GOLDEN, "tasks_rowwise_softmax_resident.schedule.txt"),
                          update=request.config.getoption("--update-golden"))


def _row_tile(Xt, i, j):
    """Tile (i, j) of a (1, 256) blocking, read into registers."""
    x = nt.zeros((1, 256))
    x += Xt[i, j]
    return x


def _row_max(Xt, i, blocks):
    """The maximum of row block ``i`` over its first ``blocks`` column blocks (a pass)."""
    m = nt.full((1,), -math.inf)
    for j in nt.srange(blocks):
        m[...] = nt.maximum(m, _row_tile(Xt, i, j).max(axis=1))
    return m


@nt.task(reads=("X",), writes=("X",))
def in_place_softmax(X):
    Xt = nt.blocks(X, (1, 256))
    for i in nt.prange(Xt.grid[0]):
        m = _row_max(Xt, i, Xt.grid[1])
        for j in nt.srange(Xt.grid[1]):
            Xt[i, j] = _row_tile(Xt, i, j) - m[:, None]


@nt.task(reads=("X",), writes=("Y",))
def passes_of_two_lengths(Y, X):
    Xt, Yt = nt.blocks(X, (1, 256)), nt.blocks(Y, (1, 256))
    for i in nt.prange(Xt.grid[0]):
        m = _row_max(Xt, i, Xt.grid[1] - 1)
        for j in nt.srange(Xt.grid[1]):
            Yt[i, j] = _row_tile(Xt, i, j) - m[:, None]


def test_row_blocks_in_shared_memory_refusals():
    """What a row block kept in shared memory cannot be, each refused with a change that plans: an array the program
    writes, two consumer warpgroups that split the rows, passes over different counts of column blocks, more bytes
    than shared memory holds."""
    x, y = np.zeros((8, 1024), np.float32), np.zeros((8, 1024), np.float32)
    shared = nt.Mapping(consumers=1, memory={"X": "shared"})
    with pytest.raises(TaskError, match="'X' is written by the program") as refused:
        nt.build(in_place_softmax, shared).plan(x)
    assert "'register'" in refused.value.hint
    nt.build(in_place_softmax, nt.Mapping(consumers=1)).plan(x)
    with pytest.raises(TaskError, match=r"the same count \(\[3, 4\]") as refused:
        nt.build(passes_of_two_lengths, shared).plan(y, x)
    nt.build(passes_of_two_lengths, nt.Mapping(consumers=1)).plan(y, x)
    two = rowwise.default_mapping().replace(tiles={"BM": 8, "BN": 256}, memory={"X": "shared"}, consumers=2)
    with pytest.raises(MappingError, match="hold the tile together, not for 2 that split its rows") as refused:
        rowwise.kernel("softmax", mapping=two).plan(y, x)
    assert "consumers=1" in refused.value.hint, refused.value.hint
    wide = np.zeros((8, 65536), np.float32)             # 256 KiB a row
    whole = rowwise.default_mapping().replace(tiles={"BM": 1, "BN": 8192}, memory={"X": "shared"})
    with pytest.raises(MappingError, match="resident_X 262144 B") as refused:
        rowwise.kernel("softmax", mapping=whole).plan(wide, wide)
    assert "memory['X']='register'" in refused.value.hint, refused.value.hint


def test_the_explanation_names_the_slots_where_a_rows_warps_meet():
    """A row over several warps sums its parts in shared memory that emission places: explain() said "shared
    memory: 0 of ..." for it. Rows of one warp (BM = 4 at N = 1000) need none, and the line is not there."""
    wide, narrow = np.zeros((64, 4096), np.float16), np.zeros((64, 1000), np.float16)
    text = rowwise.kernel("softmax", n=4096, m=64).explain(wide, wide)
    assert "and the slots where each row's 4 warps meet for its reductions" in text
    assert "warps meet" not in rowwise.kernel("softmax", n=1000, m=64).explain(narrow, narrow)

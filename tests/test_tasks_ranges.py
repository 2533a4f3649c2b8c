"""Data-dependent loop ranges in the task layer: indices read from an int32 table on the GPU
(``nt.load_index``) in tile indices, positions and ``nt.srange(below=...)``, so that each tile visits its own
range [lo, hi) of blocks (attention under a sliding-window or document mask skips the key blocks its mask
hides wholly). Tiles whose range is empty run no step, the full range every step. CPU: the numbers in the
interpreter, a golden schedule, refusals; the GPU runs the same cases."""

import math

import numpy as np
import pytest

import nvdsl
from nvdsl import tasks as nt
from nvdsl.interpreter.protocol import check_protocol
from nvdsl.kernels.attention import LN_2, LOG2_E, online_softmax_step, task_mapping
from helpers import product_error_bound
from test_attention import problem
from test_tasks import golden

f16 = np.float16


# --- a one-phase loop: a GEMM over each row tile's own range of K blocks ---------------------------------------

def ranged_gemm_program(halved_steps: bool = False) -> nt.Task:
    """``C[i] = A[i, lo:hi] @ B[lo:hi]`` over the K blocks [lo, hi) = R[i] of row tile i; with ``halved_steps``,
    each step's product is read in its step, halved and added (exactly: ``C`` is half the product), so that
    cooperative consumers may take turns at it."""

    @nt.task(reads=("A", "B", "R"), writes=("C",))
    def ranged_gemm(C, A, B, R):
        BM, BN, BK = nt.tunable("BM", 128), nt.tunable("BN", 128), nt.tunable("BK", 64)
        Ct, At, Bt = nt.blocks(C, (BM, BN)), nt.blocks(A, (BM, BK)), nt.blocks(B, (BK, BN))
        for i, j in nt.prange(*Ct.grid):
            lo, hi = nt.load_index(R, i, 0), nt.load_index(R, i, 1)
            acc = nt.zeros((BM, BN))
            for t in nt.srange(At.grid[1], below=hi - lo):
                if halved_steps:
                    part = nt.zeros((BM, BN), name="part")
                    part += At[i, lo + t] @ Bt[lo + t, j]
                    acc[...] = acc + part * 0.5
                else:
                    acc += At[i, lo + t] @ Bt[lo + t, j]
            Ct[i, j] = acc.astype(C.dtype)
    return ranged_gemm


ranged_gemm = ranged_gemm_program()


def gemm_problem(ranges, n=256, k_blocks=8, seed=0):
    rng = np.random.default_rng(seed)
    m, k = 128 * len(ranges), 64 * k_blocks
    a, b = rng.standard_normal((m, k)).astype(f16), rng.standard_normal((k, n)).astype(f16)
    return np.full((m, n), np.nan, f16), a, b, np.array(ranges, np.int32)


def check_gemm(c, a, b, r):
    """Each row tile holds its range's product, to within the bound its float32 sums and rounding allow; an
    empty range gives zeros (the accumulator as filled)."""
    for i, (lo, hi) in enumerate(r):
        rows, keys = slice(128 * i, 128 * (i + 1)), slice(64 * lo, 64 * max(lo, hi))
        exact = a[rows, keys].astype(np.float64) @ b[keys].astype(np.float64)
        error = np.abs(c[rows].astype(np.float64) - exact)
        assert (error <= product_error_bound(a[rows, keys], b[keys], c.dtype)).all(), (i, lo, hi, error.max())


# empty (3, 3), reversed (5, 2): none; the full range (0, 8); one block; a range ending at the last block
RANGES = [(2, 5), (3, 3), (0, 8), (5, 2), (7, 8), (1, 4)]

GEMM_MAPPINGS = {
    "pipeline2": nt.Mapping(pipeline=2, consumers=1, persistent=False),
    "pipeline3-consumers2": nt.Mapping(pipeline=3, consumers=2, persistent=False),
    "pipeline2-consumers2-persistent": nt.Mapping(pipeline=2, consumers=2, persistent=True, sm_count=2,
                                                  raster="row"),
    "pipeline3-persistent": nt.Mapping(pipeline=3, consumers=1, persistent=True, sm_count=4, raster="grouped",
                                       group=2),
    "consumers-issue": nt.Mapping(pipeline=3, consumers=2, warp_specialize=False, persistent=False),
    "pingpong": nt.Mapping(schedule="pingpong", consumers=2, persistent=True, sm_count=2),
}


@pytest.mark.parametrize("mapping", GEMM_MAPPINGS)
def test_a_one_phase_loop_sums_each_tile_s_own_range(mapping, backend):
    c, a, b, r = gemm_problem(RANGES)
    nt.build(ranged_gemm, GEMM_MAPPINGS[mapping])(c, a, b, r)
    check_gemm(c, a, b, r)


def test_the_same_kernel_follows_the_table_it_is_given(backend):
    """The ranges are data: one kernel (one signature) runs other tables, all empty or all full."""
    kernel = nt.build(ranged_gemm, GEMM_MAPPINGS["pipeline2-consumers2-persistent"])
    for ranges in ([(0, 0)] * 3, [(0, 8)] * 3, [(8, 8), (0, 1), (6, 8)]):
        c, a, b, r = gemm_problem(ranges, n=128)
        kernel(c, a, b, r)
        check_gemm(c, a, b, r)


@pytest.mark.parametrize("persistent", [False, True])
def test_consumers_take_turns_at_the_steps_of_each_tile_s_own_range(persistent, backend):
    """Turns over ranges read on the GPU: a tile with no step skips its turns (no opening hand-over), the last
    consumer skips its hand-over after the tile's last step, and a persistent block's tiles each start afresh."""
    c, a, b, r = gemm_problem(RANGES)
    mapping = nt.Mapping(pipeline=3, consumers=2, turns=True, persistent=persistent, sm_count=6, raster="row")
    nt.build(ranged_gemm_program(halved_steps=True), mapping)(c, a, b, r)
    check_gemm(c * 2, a, b, r)


# --- a two-phase loop: attention over each query block's range of key blocks ---------------------------------

def ranged_attention_program():
    """The online softmax of ``nvdsl.kernels.attention.attention_program`` (its step, shared), over the key blocks
    [lo, hi) that ``R[b, h, i]`` gives query block i of head h (keys past the end masked, as there)."""

    @nt.task(reads=("Q", "K", "V", "R"), writes=("O", "LSE"))
    def ranged_attention(O, LSE, Q, K, V, R):
        BM, BN = nt.tunable("BM", 128), nt.tunable("BN", 128)
        batch, heads, seq_q, d = Q.shape
        kv_heads, seq_k = K.shape[1], K.shape[2]
        group = heads // kv_heads
        c = d ** -0.5 * LOG2_E
        Qt, Ot, Lt = nt.blocks(Q, (1, 1, BM, d)), nt.blocks(O, (1, 1, BM, d)), nt.blocks(LSE, (1, 1, BM))
        Kt, Vt = nt.blocks(K, (1, 1, BN, d)), nt.blocks(V, (1, 1, BN, d))
        for b, hk, g, i in nt.prange(batch, kv_heads, group, Qt.grid[2]):
            h = hk * group + g
            lo, hi = nt.load_index(R, b, h, i, 0), nt.load_index(R, b, h, i, 1)
            m, l = nt.full((BM,), -math.inf, name="m"), nt.zeros((BM,), name="l")
            o = nt.zeros((BM, d), name="o")
            for t in nt.srange(Kt.grid[2], below=(hi - lo) * BN, step=BN):
                j = lo + t
                keys = nt.arange(BN, start=j * BN, name="keys")
                s = nt.zeros((BM, BN), name="s")
                s += Qt[b, h, i, 0] @ Kt[b, hk, j, 0].T
                s = nt.where((keys < seq_k)[None, :], s, -math.inf)
                online_softmax_step(s, m, l, o, Vt[b, hk, j, 0], c, Q.dtype)
            inverse = nt.where(l > 0.0, 1.0 / l, 0.0)     # a block with no key: O = 0 (and LSE = -inf)
            Ot[b, h, i, 0] = (o * inverse[:, None]).astype(O.dtype)
            Lt[b, h, i] = (m * c + nt.log2(l, approx=True)) * LN_2

    return ranged_attention


def ranged_reference(q, k, v, r):
    """float64 (O, lse) attending, for query block i of head h, to the keys [lo * 128, hi * 128) of R[0, h, i]
    (those that exist); a block with no key gets O = 0 and lse = -inf, as ``attention`` gives a row whose keys
    are all masked."""
    group = q.shape[1] // k.shape[1]
    o, lse = np.zeros(q.shape), np.full(q.shape[:3], -np.inf)
    for b, h, i in np.ndindex(r.shape[:3]):
        lo, hi = r[b, h, i]
        rows, keys = slice(128 * i, 128 * (i + 1)), slice(128 * lo, min(128 * max(lo, hi), k.shape[2]))
        if keys.start >= keys.stop:
            continue
        s = q[b, h, rows].astype(np.float64) @ k[b, h // group, keys].astype(np.float64).T * q.shape[-1] ** -0.5
        mx = s.max(axis=-1, keepdims=True)
        e = np.exp(s - mx)
        total = e.sum(axis=-1, keepdims=True)
        o[b, h, rows] = e / total @ v[b, h // group, keys].astype(np.float64)
        lse[b, h, rows] = (mx + np.log(total))[:, 0]
    return o, lse


# R[0, h, i] for 4 heads x 3 query blocks over 5 key blocks (the last ragged): the full range, empty ones,
# one block, the ragged last block alone, a range in the middle
ATTENTION_RANGES = [[(0, 5), (2, 2), (1, 3)],
                    [(4, 5), (0, 1), (3, 1)],
                    [(2, 4), (0, 5), (0, 0)],
                    [(1, 5), (3, 4), (2, 5)]]


def attention_problem(ranges=ATTENTION_RANGES):
    q, k, v, o, lse = problem(1, 4, 2, 300, 520, 64)
    return o, lse, q, k, v, np.array([ranges], np.int32)


def check_attention(o, lse, q, k, v, r):
    """The query blocks with keys as the reference, to the tolerances of ``test_attention.check`` (P is rounded
    to 16 bits for P @ V and O to float16); those without (o and l as filled: 0) exactly 0 and -inf."""
    o_ref, lse_ref = ranged_reference(q, k, v, r)
    np.testing.assert_allclose(o.astype(np.float32), o_ref, atol=4e-3, rtol=4e-3)
    np.testing.assert_allclose(lse, lse_ref, atol=2e-4, rtol=1e-5)
    empty = np.isneginf(lse_ref)
    assert empty.any() and (o[empty] == 0).all() and np.isneginf(lse[empty]).all()


@pytest.mark.parametrize("persistent", [False, True])
def test_a_two_phase_loop_attends_to_each_query_block_s_own_key_blocks(persistent, backend):
    o, lse, q, k, v, r = attention_problem()
    mapping = task_mapping(64, False, 300, masked=True)
    if persistent:                                    # tiles without steps between others, on a block's rings
        mapping = mapping.replace(persistent=True, sm_count=5, raster="row")
    nt.build(ranged_attention_program(), mapping)(o, lse, q, k, v, r)
    check_attention(o, lse, q, k, v, r)


def test_the_ranged_schedules_are_explained(request):
    o, lse, q, k, v, r = attention_problem()
    mapping = task_mapping(64, False, 300, masked=True)     # trips read from a table: attention's mapping for masks
    text = nt.build(ranged_attention_program(), mapping).explain(o, lse, q, k, v, r)
    golden("tasks_ranged_attention.schedule.txt", text, request)
    assert "indices read on the GPU once per tile by each role (nt.load_index): R[p0,p1*2+p2,p3,0]" in text
    assert "skips the loop and its first step in every role" in text
    assert "descending" not in text                   # no tile is known to be longer: none goes first
    # the mask on ragged keys is measured from the block the table gives: it stays in every step
    assert "e9 = t1 = where(t[None, :], s, -inf)" in text and "left out while" not in text
    c, a, b, r = gemm_problem(RANGES)
    text = nt.build(ranged_gemm, GEMM_MAPPINGS["pipeline2"]).explain(c, a, b, r)
    golden("tasks_ranged_gemm.schedule.txt", text, request)
    assert "A[p0*128:+128, R[p0,0]*64+k0*64:+64]" in text


# --- the barrier-protocol check ----------------------------------------------------------------------------------

@pytest.mark.parametrize("mapping", GEMM_MAPPINGS)
def test_the_protocol_check_tries_every_trip_count_a_block_can_read(mapping):
    """A block of one tile runs once per trip count, 0 to the loop's extent (zero trips included); a block of
    several tiles has too many combinations, and the check says it cannot decide (its first call warns)."""
    c, a, b, r = gemm_problem(RANGES)
    trace = nt.build(ranged_gemm, GEMM_MAPPINGS[mapping]).trace(c, a, b, r)
    reason = check_protocol(trace.module, trace.specs)
    if GEMM_MAPPINGS[mapping].persistent:
        assert "trip counts read from a table, in more combinations per block than the check runs" in reason
    else:
        assert reason is None


def test_the_protocol_check_decides_the_two_phase_loop_with_zero_trips():
    o, lse, q, k, v, r = attention_problem()
    trace = nt.build(ranged_attention_program(), task_mapping(64, False, 300, masked=True)).trace(o, lse, q, k, v, r)
    assert check_protocol(trace.module, trace.specs) is None


# --- mistakes ------------------------------------------------------------------------------------------------

def refused_index(table, indices):
    """The error planning ``ranged_gemm`` with ``nt.load_index(R, *indices(i, t))`` gives, for table ``table``."""
    c, a, b, _ = gemm_problem(RANGES)

    @nt.task(reads=("A", "B", "R"), writes=("C",))
    def wrong(C, A, B, R):
        Ct, At, Bt = nt.blocks(C, (128, 128)), nt.blocks(A, (128, 64)), nt.blocks(B, (64, 128))
        for i, j in nt.prange(*Ct.grid):
            acc = nt.zeros((128, 128))
            for t in nt.srange(At.grid[1]):
                lo = nt.load_index(R, *indices(i, t))
                acc += At[i, lo + t] @ Bt[lo + t, j]
            Ct[i, j] = acc.astype(C.dtype)
    with pytest.raises(nvdsl.TaskError) as info:
        nt.build(wrong, GEMM_MAPPINGS["pipeline2"]).plan(c, a, b, table)
    assert info.value.code == "bad-index", str(info.value)
    assert info.value.loc is not None and info.value.loc.filename == __file__
    return info.value


def test_mistakes_in_reading_an_index_are_named():
    table = np.zeros((6, 2), np.int32)
    error = refused_index(table.astype(np.float32), lambda i, t: (i, 0))
    assert "nt.load_index reads a task's int32 tensor argument" in str(error) and "int32" in error.hint
    error = refused_index(table, lambda i, t: (i,))
    assert "needs 2 indices (one per axis of [6, 2]), got 1" in str(error)
    error = refused_index(table, lambda i, t: (i, t))
    assert "not affine in the prange variables (it depends on ['k0'])" in str(error) and "srange" in error.hint
    error = refused_index(table, lambda i, t: (i, 0.5))
    assert "index 0.5 along axis 1 is not affine" in str(error)
    error = refused_index(table, lambda i, t: (i + 1, 0))
    assert "takes values 1..6, outside 0..5" in str(error)


def test_a_loaded_index_alone_bounds_the_loop(backend):
    """``below`` of a loaded index alone (no lo): the first ``R[i, 1]`` blocks."""
    @nt.task(reads=("A", "B", "R"), writes=("C",))
    def prefix(C, A, B, R):
        Ct, At, Bt = nt.blocks(C, (128, 128)), nt.blocks(A, (128, 64)), nt.blocks(B, (64, 128))
        for i, j in nt.prange(*Ct.grid):
            acc = nt.zeros((128, 128))
            for t in nt.srange(At.grid[1], below=nt.load_index(R, i, 1)):
                acc += At[i, t] @ Bt[t, j]
            Ct[i, j] = acc.astype(C.dtype)
    c, a, b, r = gemm_problem([(0, 3), (0, 0), (0, 9), (0, -4)], n=128)
    kernel = nt.build(prefix, GEMM_MAPPINGS["pipeline2"])
    assert "the main loop's trips, min(8, ceil((R[p0,1]) / 1)), are read on the GPU" in kernel.explain(c, a, b, r)
    kernel(c, a, b, r)
    check_gemm(c, a, b, np.clip(r, 0, 8))          # past the extent: all 8 blocks; negative: none

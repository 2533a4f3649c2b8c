"""Adding a tile into an argument (``Ct[i, j] += v``): TMA's atomic reduction, so that parallel iterations may add
into one tile (split-K without a second pass, attention's dQ summed over key blocks)."""

import numpy as np
import pytest

import nvdsl
from nvdsl import tasks as nt
from nvdsl.compiler.toolchain import find_tool
from nvdsl.testing import requires_gpu, sass_opcodes
from helpers import load_box

SPLITS = 3


@nt.task(reads=("A", "B"), reduces=("C",))
def added_splits(C, A, B):
    BM, BN, BK = nt.tunable("BM", 128), nt.tunable("BN", 128), nt.tunable("BK", 64)
    Ct, At, Bt = nt.blocks(C, (BM, BN)), nt.blocks(A, (BM, BK)), nt.blocks(B, (BK, BN))
    steps = nt.cdiv(At.grid[1], SPLITS)
    for s, i, j in nt.prange(SPLITS, *Ct.grid):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in nt.srange(steps):
            acc += At[i, s * steps + k] @ Bt[s * steps + k, j]
        Ct[i, j] += acc


@nt.task(reads=("Q", "K"), reduces=("DQ",))
def summed_over_key_blocks(DQ, Q, K):
    """Attention's dQ pattern: per block of keys j (the parallel loop) and block of queries i, St = K Q^T (keys
    x queries, the consumers sharing its rows), then St.T @ K (the product's K is the keys, so each consumer sums
    its own keys: staged in shared memory and read M-major), added into DQ's tile i."""
    BM, BN = nt.tunable("BM", 64), nt.tunable("BN", 128)
    d = Q.shape[1]
    Qt, Kt, DQt = nt.blocks(Q, (BM, d)), nt.blocks(K, (BN, d)), nt.blocks(DQ, (BM, d))
    for j in nt.prange(Kt.grid[0]):
        for i in nt.srange(Qt.grid[0]):
            st = nt.zeros((BN, BM), name="st")
            st += Kt[j, 0] @ Qt[i, 0].T
            dq = nt.zeros((BM, d), name="dq")
            dq += st.astype(Q.dtype).T @ Kt[j, 0]
            DQt[i, 0] += dq


SUMMED_MAPPING = nt.Mapping(tiles={"BM": 64, "BN": 128}, pipeline=2, persistent=False)


def one_query_block():
    """DQ, Q (one 64-row block) and K (two 128-row blocks) for programs that are refused before they run."""
    return np.zeros((64, 64), np.float32), np.zeros((64, 64), np.float16), np.zeros((256, 64), np.float16)


def small_integers(shape, dtype, seed):
    return np.random.default_rng(seed).integers(-2, 3, shape).astype(dtype)


@pytest.mark.parametrize("m, n, k", [(200, 130, 320), (128, 256, 448)])
def test_splits_add_into_the_output_it_already_holds(m, n, k):
    """Three splits of K, each adding its product into C, which starts non-zero (the additions land on it). Small
    integers: every partial sum is an integer below 2^24, exact in float32 in any order of addition, so the result
    is exact whatever order the blocks' additions land in. (200 x 130: C's rows are 520 bytes, so it goes through
    a staging copy, which must be copied in.)"""
    a, b = small_integers((m, k), np.float16, 1), small_integers((k, n), np.float16, 2)
    c = small_integers((m, n), np.float32, 3)
    want = c + a.astype(np.float64) @ b.astype(np.float64)
    nt.build(added_splits, nt.Mapping())(c, a, b)
    np.testing.assert_array_equal(c, want)        # exact: small integers, sums below 2^24


@pytest.mark.parametrize("l, lk, d", [(128, 256, 64), (200, 300, 128)])
def test_a_transposed_computed_tile_is_summed_over_the_consumers_rows(l, lk, d):
    """St's rows (keys) are shared by the two consumers; St.T @ K sums over them. At d = 64 each consumer sums
    its own rows and the parts are added into DQ; at d = 128 the consumers stage their rows side by side and each
    computes 64 of the columns over all of them (FlashAttention-3's dQ). Small integers: St is exact in float16
    (|St| <= d) and every sum in float32, so the result is exact in any order."""
    q = small_integers((l, d), np.float16, 1) % 2
    k = small_integers((lk, d), np.float16, 2) % 2
    dq = np.zeros((l, d), np.float32)
    kernel = nt.build(summed_over_key_blocks, SUMMED_MAPPING)
    kernel(dq, q, k)
    st = k.astype(np.float64) @ q.astype(np.float64).T
    np.testing.assert_array_equal(dq, st.T @ k.astype(np.float64))     # exact: small integers
    text, split = kernel.explain(dq, q, k), str(kernel.passes(dq, q, k)["split"])
    assert "mma dq += t.T @ K_s0" in text
    if d == 64:
        assert "operand_t_0 (whole kernel)" in text and "each holds all of dq, its part of the sum" in split
    else:
        assert "operand_t (whole kernel)" in text and "each holds an equal share of the columns of dq" in split


def test_a_consumers_part_of_a_sum_is_only_added_into_an_argument():
    @nt.task(reads=("Q", "K"), reduces=("DQ",))
    def scaled_part(DQ, Q, K):
        Qt, Kt, DQt = nt.blocks(Q, (64, 64)), nt.blocks(K, (128, 64)), nt.blocks(DQ, (64, 64))
        for j in nt.prange(Kt.grid[0]):
            st = nt.zeros((128, 64), name="st")
            st += Kt[j, 0] @ Qt[0, 0].T
            dq = nt.zeros((64, 64), name="dq")
            dq += st.astype(Q.dtype).T @ Kt[j, 0]
            DQt[0, 0] += dq * 2.0
    args = one_query_block()
    error = _refused(scaled_part, args, "unsupported-program", nt.Mapping(pipeline=2, persistent=False))
    assert "its own part of the sum in 'dq'" in str(error) and "+= dq" in error.hint
    pingpong = nt.Mapping(tiles={"BM": 64, "BN": 128}, schedule="pingpong", consumers=2)
    error = _refused(summed_over_key_blocks, args, "bad-mapping", pingpong)
    assert "a ping-pong's consumers hold whole tiles" in str(error)


def test_the_schedule_says_the_tile_is_added_and_iterations_may_share_it():
    args = (np.zeros((256, 256), np.float32), np.zeros((256, 512), np.float16), np.zeros((512, 256), np.float16))
    text = nt.build(added_splits, nt.Mapping()).explain(*args)
    assert "add acc -> C[p1*128:+128, p2*128:+128]" in text and "(an atomic reduction)" in text


@pytest.mark.skipif(find_tool("ptxas") is None, reason="ptxas not installed")
def test_the_addition_is_a_tma_reduction():
    args = (np.zeros((256, 256), np.float32), np.zeros((256, 512), np.float16), np.zeros((512, 256), np.float16))
    compiled = nt.build(added_splits, nt.Mapping()).compile(*args)
    assert "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group" in compiled.ptx
    resources = compiled.resources["added_splits_kernel"]
    assert resources.spill_stores == 0 and resources.spill_loads == 0
    if find_tool("nvdisasm"):
        assert {"HGMMA", "UTMALDG", "UTMAREDG", "SYNCS"} <= sass_opcodes(compiled.sass())


def _refused(program, args, code, mapping=nt.Mapping()):
    with pytest.raises(nvdsl.UserError) as info:
        nt.build(program, mapping).explain(*args)
    assert info.value.code == code
    return info.value


def test_adding_into_a_half_precision_tensor_is_refused_naming_it():
    @nt.task(reads=("A", "B"), reduces=("C",))
    def halves(C, A, B):
        Ct, At, Bt = nt.blocks(C, (128, 128)), nt.blocks(A, (128, 64)), nt.blocks(B, (64, 128))
        for i, j in nt.prange(*Ct.grid):
            acc = nt.zeros((128, 128), nt.float32)
            acc += At[i, 0] @ Bt[0, j]
            Ct[i, j] += acc.astype(C.dtype)
    error = _refused(halves, (np.zeros((128, 128), np.float16),) * 3, "bad-dtype")
    assert "'C' is float16" in str(error) and "float32" in error.hint


def test_adding_into_a_tensor_only_read_is_refused():
    @nt.task(reads=("A", "B", "C"))
    def read_only(C, A, B):
        Ct, At, Bt = nt.blocks(C, (128, 128)), nt.blocks(A, (128, 64)), nt.blocks(B, (64, 128))
        for i, j in nt.prange(*Ct.grid):
            acc = nt.zeros((128, 128), nt.float32)
            acc += At[i, 0] @ Bt[0, j]
            Ct[i, j] += acc
    args = (np.zeros((128, 128), np.float32), np.zeros((128, 64), np.float16), np.zeros((64, 128), np.float16))
    error = _refused(read_only, args, "privilege")
    assert "'C'" in str(error) and "reduces" in error.hint


def test_a_program_without_products_cannot_add_and_is_told_what_to_do():
    @nt.task(reads=("X",), reduces=("Y",))
    def rows_added(Y, X):
        Xt, Yt = nt.blocks(X, (4, 128)), nt.blocks(Y, (4, 128))
        for i, j in nt.prange(*Xt.grid):
            x = nt.zeros((4, 128), name="x")
            x += Xt[i, j]
            Yt[i, 0] += x
    row_wise = nt.Mapping(consumers=1, warp_specialize=False, persistent=False)
    error = _refused(rows_added, (np.zeros((8, 128), np.float32), np.zeros((8, 512), np.float32)),
                     "unsupported-program", row_wise)
    assert "scratch tensor" in error.hint


def test_a_hand_written_kernel_adds_boxes_from_several_blocks_into_one():
    """``TMA.store(add=True)``: four blocks each add their 64 rows of x into out's one box."""
    @nvdsl.mlir_func
    def add_tiles(x, out):
        x_tma, o_tma = nvdsl.TMA(x, box=(64, 32), swizzle=128), nvdsl.TMA(out, box=(64, 32), swizzle=128)

        @nvdsl.gpu_launch(grid=4, block=128, smem=64 * 32 * 4)
        def kernel(ctx):
            tile = load_box(ctx, x_tma, (ctx.block_id.x * 64, 0), (64, 32), nvdsl.float32)
            o_tma.store(tile, (0, 0), predicate=ctx.thread_id.x.eq(0), add=True)
        kernel()

    x, out = small_integers((256, 32), np.float32, 4), small_integers((64, 32), np.float32, 5)
    want = out + x.reshape(4, 64, 32).astype(np.float64).sum(0)
    add_tiles(x, out)
    np.testing.assert_array_equal(out, want)      # exact: small integers, in any order


def test_a_hand_written_addition_into_half_precision_is_refused():
    @nvdsl.mlir_func
    def add_halves(out):
        o_tma = nvdsl.TMA(out, box=(64, 64), swizzle=128)

        @nvdsl.gpu_launch(grid=1, block=128, smem=64 * 64 * 2)
        def kernel(ctx):
            tile = ctx.dynamic_shared((64, 64), nvdsl.float16, align=1024)
            o_tma.store(tile, (0, 0), predicate=ctx.thread_id.x.eq(0), add=True)
        kernel()
    with pytest.raises(nvdsl.TraceError) as info:
        add_halves.trace(np.zeros((64, 64), np.float16))
    assert info.value.code == "bad-tma" and "float32" in info.value.hint


@requires_gpu
def test_a_transposed_computed_tile_is_summed_on_the_gpu():
    for shape in [(128, 256, 64), (200, 300, 128)]:
        test_a_transposed_computed_tile_is_summed_over_the_consumers_rows(*shape)


@requires_gpu
@pytest.mark.parametrize("m, n, k", [(1000, 2040, 3000), (64, 4096, 8192)])
def test_splits_add_on_the_gpu(m, n, k):
    """Random floats: C plus the k products summed in float32 in some order (each split's own, then the three
    splits' additions as they land): within gamma_(k+1) (|C| + |A| @ |B|) of the exact sum (Higham, Lemma 3.1;
    the float16 products are exact in float32)."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = rng.standard_normal((m, n)).astype(np.float32)
    exact = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    terms = np.abs(c).astype(np.float64) + np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    nt.build(added_splits, nt.Mapping())(c, a, b)
    u = 2.0 ** -24
    assert np.all(np.abs(c - exact) <= (k + 1) * u / (1 - (k + 1) * u) * terms)


def test_a_sum_over_the_consumers_rows_is_stored_in_the_step_that_computes_it():
    """The staged tile is overwritten by the next step's: a dQ carried across steps is refused."""
    @nt.task(reads=("Q", "K"), reduces=("DQ",))
    def carried(DQ, Q, K):
        Qt, Kt, DQt = nt.blocks(Q, (64, 64)), nt.blocks(K, (128, 64)), nt.blocks(DQ, (64, 64))
        for i in nt.prange(Qt.grid[0]):
            dq = nt.zeros((64, 64), name="dq")
            for j in nt.srange(Kt.grid[0]):
                st = nt.zeros((128, 64), name="st")
                st += Kt[j, 0] @ Qt[i, 0].T
                dq += st.astype(Q.dtype).T @ Kt[j, 0]
            DQt[i, 0] += dq
    args = one_query_block()
    error = _refused(carried, args, "unsupported-program", nt.Mapping(pipeline=2, persistent=False))
    assert "zeroed and stored in the same step" in str(error) and "inside the loop" in error.hint

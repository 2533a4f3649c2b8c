"""Register tiles: elementwise math, broadcasting, row reductions, where-masking, casts and wgmma with A in
registers. CPU: the IR, PTX and SASS (SHFL.BFLY, MUFU.EX2, HGMMA with a register A, no spills) and the
layout errors; on the GPU and in the interpreter: every operation against NumPy, and one block of attention
end to end."""

import math
import re

import numpy as np
import pytest

import nvdsl
from nvdsl.compiler.toolchain import find_tool
from nvdsl.layouts import rows_across_lanes, wgmma_accumulator
from nvdsl.testing import sass_opcodes

LOG2_E = 1 / math.log(2)


def in_kernel(body, *arrays, block=128):
    """A traced function running ``body(ctx, *arrays)`` in one block of ``block`` threads."""
    @nvdsl.mlir_func
    def host(*args):
        @nvdsl.gpu_launch(grid=1, block=block)
        def kernel(ctx):
            body(ctx, *args)
        kernel()
    return host


def trace_error(body, *arrays):
    with pytest.raises(nvdsl.TraceError) as info:
        in_kernel(body).trace(*arrays)
    assert info.value.loc is not None and info.value.loc.filename == __file__, info.value
    return info.value


# --- elementwise, broadcasting, reductions (one tile loaded from memory) -----------------------------

def softmax_rows(ctx, s_in, p_out, m_out, l_out, bias):
    """Rows of ``s_in`` masked to ``col <= row + 8``, plus a bias per column, then exp2-normalized."""
    s = nvdsl.WGMMAAccumulator.load(s_in)
    rows, cols = s.indices()
    s = nvdsl.where(cols <= rows + 8, s + nvdsl.ColumnVector.load(s, bias), -math.inf)
    m = s.max(axis=1)
    p = nvdsl.exp2((s - m[:, None]) * LOG2_E, approx=True)
    l = p.sum(axis=1)
    (p / l).store(p_out)
    m.store(m_out)
    l.store(l_out)


def softmax_arrays(m=64, n=128):
    return (np.zeros((m, n), np.float32), np.zeros((m, n), np.float32), np.zeros(m, np.float32),
            np.zeros(m, np.float32), np.zeros(n, np.float32))


def test_elementwise_ops_keep_the_accumulator_and_make_one_constant_per_scalar():
    seen = {}

    def body(ctx, s_in):
        s = nvdsl.WGMMAAccumulator.load(s_in)
        scaled = s * 1.25 - 3.0
        half = scaled.to(nvdsl.float16)
        seen.update(scaled=scaled, half=half, back=half.to(nvdsl.float32), mask=s > 0)
    mlir = in_kernel(body).trace(np.zeros((64, 64), np.float32)).mlir
    assert isinstance(seen["scaled"], nvdsl.WGMMAAccumulator)      # still accumulates
    assert type(seen["half"]) is nvdsl.RegisterTile and seen["half"].dtype == nvdsl.float16
    assert type(seen["back"]) is nvdsl.RegisterTile and seen["mask"].dtype == nvdsl.bool_
    assert seen["half"].layout == wgmma_accumulator(64, 64) and seen["half"].shape == (64, 64)
    assert len(re.findall(r"arith.constant 1.250000e\+00 : f32", mlir)) == 1
    assert mlir.count("arith.mulf") == 32 and mlir.count("arith.truncf") == 32


def test_a_row_softmax_shuffles_within_quads_and_uses_mufu_ex2():
    compiled = in_kernel(softmax_rows).compile(*softmax_arrays())
    ptx = compiled.ptx
    masks = re.findall(r"shfl.sync.bfly.b32\s+%r\d+(?:\|%p\d+)?, %r\d+, (\d+), 31, -1;", ptx)
    # max and sum of two rows per thread, each over lanes 1 and 2 apart
    assert sorted(masks) == sorted(["1", "2"] * 4), masks
    # one ex2 per element the mask can keep (LLVM folds exp2(-inf) where the thread ranges rule a column out)
    assert 32 <= ptx.count("ex2.approx.ftz.f32") <= 64 and "max.NaN.f32" in ptx
    if compiled.cubin is not None:
        assert compiled.resources["host_kernel"].spill_stores == 0
        if find_tool("nvdisasm"):
            sass = compiled.sass()
            assert {"SHFL", "MUFU"} <= sass_opcodes(sass)
            assert "SHFL.BFLY" in sass and "MUFU.EX2" in sass


def test_vectors_store_each_row_once():
    ptx = in_kernel(softmax_rows).compile(*softmax_arrays()).ptx
    # a RowVector's copies live in the 4 lanes of a quad: one of them writes (the rest skip the branch)
    assert re.search(r"and.b\d+\s+%r\w+, %r\w+, 3;", ptx)


def test_layouts_are_checked():
    def mix_shapes(ctx, a, b):
        nvdsl.WGMMAAccumulator.load(a) + nvdsl.WGMMAAccumulator.load(b)
    error = trace_error(mix_shapes, np.zeros((64, 128), np.float32), np.zeros((128, 64), np.float32))
    assert error.code == "layout-mismatch" and "different layouts" in str(error)

    def foreign_rows(ctx, a, b):
        nvdsl.WGMMAAccumulator.load(a) * nvdsl.WGMMAAccumulator.load(b).max(axis=1)
    error = trace_error(foreign_rows, np.zeros((64, 64), np.float32), np.zeros((128, 64), np.float32))
    assert error.code == "layout-mismatch" and "RowVector" in str(error)

    def rows_and_columns(ctx, a):
        s = nvdsl.WGMMAAccumulator.load(a)
        nvdsl.RowVector.full(s, 1.0) + nvdsl.ColumnVector.full(s, 1.0)
    assert trace_error(rows_and_columns, np.zeros((64, 64), np.float32)).code == "layout-mismatch"

    def wrong_broadcast(ctx, a):
        nvdsl.WGMMAAccumulator.load(a).max(axis=1)[None, :]
    assert trace_error(wrong_broadcast, np.zeros((64, 64), np.float32)).code == "bad-index"


@pytest.mark.parametrize("body, code", [
    (lambda ctx, a: nvdsl.WGMMAAccumulator.load(a).sum(axis=0), "bad-axis"),
    (lambda ctx, a: nvdsl.WGMMAAccumulator.load(a).max(axis=2), "bad-axis"),
    (lambda ctx, a: nvdsl.WGMMAAccumulator.load(a).to(nvdsl.float16).max(axis=1), "type-mismatch"),
    (lambda ctx, a: nvdsl.where(nvdsl.WGMMAAccumulator.load(a) > 0, 1.0, 0.0), "type-mismatch"),
    (lambda ctx, a: bool(nvdsl.WGMMAAccumulator.load(a) > 0), "traced-bool"),
    (lambda ctx, a: nvdsl.RegisterTile.load(a, wgmma_accumulator(64, 128)), "bad-tile"),
    (lambda ctx, a: nvdsl.WGMMAAccumulator.load(a).to(nvdsl.int32) + 0.5, "type-mismatch"),
    (lambda ctx, a: nvdsl.RegisterTile.load(a, wgmma_accumulator(64, 32), at=(0, 48)), "out-of-bounds"),
    (lambda ctx, a: nvdsl.WGMMAAccumulator.load(a).max(axis=1)[:, ctx.thread_id.x], "bad-index"),
])
def test_tile_misuse_is_reported(body, code):
    assert trace_error(body, np.zeros((64, 64), np.float32)).code == code


def test_tiles_and_vectors_are_carried_through_fori():
    def online_softmax(ctx, s_in, o, lse):
        layout = wgmma_accumulator(64, 64)
        zero = nvdsl.WGMMAAccumulator(64, 64)
        carry = (zero, nvdsl.RowVector.full(zero, -math.inf), nvdsl.RowVector.full(zero, 0.0))

        @nvdsl.fori(0, s_in.shape[1] // 64, carry=carry)
        def state(j, carry):
            acc, m, l = carry
            s = nvdsl.WGMMAAccumulator.load(s_in, layout, at=(0, j * 64))
            m_new = nvdsl.maximum(m, s.max(axis=1))
            p = nvdsl.exp(s - m_new)
            alpha = nvdsl.exp(m - m_new)
            return acc * alpha + p, m_new, l * alpha + p.sum(axis=1)
        acc, m, l = state
        (acc / l).store(o)
        (m + nvdsl.log(l)).store(lse)
    compiled = in_kernel(online_softmax).compile(np.zeros((64, 256), np.float32), np.zeros((64, 64), np.float32),
                                                 np.zeros(64, np.float32))
    assert "scf.for" in compiled.trace.mlir and "!llvm.struct<(f32, f32)>" in compiled.trace.mlir
    if compiled.cubin is not None:
        assert compiled.resources["host_kernel"].spill_stores == 0

    def changes_layout(ctx, a):
        start = nvdsl.WGMMAAccumulator.load(a).to(nvdsl.float16)

        @nvdsl.fori(0, 2, carry=start)
        def tile(i, t):
            return nvdsl.RegisterTile.load(a, nvdsl.layouts.FragmentLayout(
                (64, 64), (t.layout.coords[1], t.layout.coords[0]))).to(nvdsl.float16)
    assert trace_error(changes_layout, np.zeros((64, 64), np.float32)).code == "bad-carry"


def test_cond_returns_tiles_and_vectors():
    def masked_on_the_diagonal(ctx, s_in, out, diagonal):
        s = nvdsl.WGMMAAccumulator.load(s_in)
        rows, cols = s.indices()
        s, m = nvdsl.cond(diagonal.eq(1), lambda: (nvdsl.where(cols <= rows, s, -math.inf), s.max(axis=1)),
                          lambda: (s, s.max(axis=1)))
        (s - m).store(out)
    mlir = in_kernel(masked_on_the_diagonal).trace(np.zeros((64, 64), np.float32), np.zeros((64, 64), np.float32),
                                                   np.int32(1)).mlir
    assert "-> (!nvgpu.warpgroup.accumulator<fragmented = vector<64x64xf32>>, !llvm.struct<(f32, f32)>)" in mlir

    def mismatched(ctx, s_in, out, flag):
        s = nvdsl.WGMMAAccumulator.load(s_in)
        nvdsl.cond(flag.eq(1), lambda: s, lambda: s.to(nvdsl.float16))
    assert trace_error(mismatched, np.zeros((64, 64), np.float32), np.zeros((64, 64), np.float32),
                       np.int32(1)).code == "branch-mismatch"


# --- wgmma with A from registers ---------------------------------------------------------------------

def attention_block(d: int, bn: int = 128, dtype=nvdsl.float16, causal: bool = False, m_rows: int = 64):
    """One block of attention for one warpgroup: S = Q K^T (Q: m_rows x d, K: bn x d), a softmax over
    each row (optionally causal), O = P V with P (float16/bfloat16) from registers; O and the natural
    log-sum-exp of each row are stored."""
    scale = 1 / math.sqrt(d)
    box = 64                        # values per 128-byte swizzled row
    q_bytes, kv_bytes = m_rows * d * 2, bn * d * 2

    @nvdsl.mlir_func
    def attention(q, k, v, o, lse):
        q_tma = nvdsl.TMA(q, box=(m_rows, box), swizzle=128)
        k_tma = nvdsl.TMA(k, box=(bn, box), swizzle=128)
        v_tma = nvdsl.TMA(v, box=(bn, box), swizzle=128)

        @nvdsl.gpu_launch(grid=1, block=128, smem=q_bytes + 2 * kv_bytes)
        def kernel(ctx):
            q_tile = ctx.dynamic_shared((m_rows, d), dtype, align=1024)
            k_tile = ctx.dynamic_shared((bn, d), dtype, align=1024)
            v_tile = ctx.dynamic_shared((bn, d), dtype, align=1024)
            loaded = nvdsl.Mbarriers(1)[0]
            leader = ctx.thread_id.x.eq(0)
            loaded.init(1, predicate=leader)
            ctx.sync_threads()
            loaded.arrive(q_bytes + 2 * kv_bytes, predicate=leader)
            for j in range(d // box):          # boxes side by side, one after the other in shared memory
                q_tma.load(q_tile.view((m_rows, box), offset=j * m_rows * box * 2), loaded, (0, j * box),
                           predicate=leader)
                k_tma.load(k_tile.view((bn, box), offset=j * bn * box * 2), loaded, (0, j * box), predicate=leader)
                v_tma.load(v_tile.view((bn, box), offset=j * bn * box * 2), loaded, (0, j * box), predicate=leader)
            loaded.try_wait(0)

            s = nvdsl.WGMMAAccumulator(m_rows, bn)
            s += nvdsl.WGMMAMatrix(q_tile, q_tma) @ nvdsl.WGMMAMatrix(k_tile, k_tma, transposed=True)
            if causal:
                rows, cols = s.indices()
                s = nvdsl.where(cols <= rows, s, -math.inf)
            m = s.max(axis=1)
            p = nvdsl.exp2(s * (scale * LOG2_E) - m * (scale * LOG2_E), approx=True)
            l = p.sum(axis=1)
            out = nvdsl.WGMMAAccumulator(m_rows, d)
            out.accumulate(p.to(dtype) @ nvdsl.WGMMAMatrix(v_tile, v_tma))
            (out * (1.0 / l)).store(o)
            (m * scale + nvdsl.log(l)).store(lse)
        kernel()
    return attention


def attention_arrays(d, bn=128, m_rows=64):
    return (np.zeros((m_rows, d), np.float16), np.zeros((bn, d), np.float16), np.zeros((bn, d), np.float16),
            np.zeros((m_rows, d), np.float32), np.zeros(m_rows, np.float32))


@pytest.mark.parametrize("d", [64, 128])
def test_p_v_reads_a_from_registers_without_spills(d):
    """head_dim 128: S and O are 64x128 f32 tiles (64 registers each) beside P in f16: no spills."""
    compiled = attention_block(d).compile(*attention_arrays(d))
    ptx = compiled.ptx
    register_a = re.findall(rf"wgmma.mma_async.sync.aligned.m64n{d}k16.f32.f16.f16 \{{[^}}]*\}}, "
                            r"\{%r\d+, %r\d+, %r\d+, %r\d+\}, %rd\d+, p, 1, 1, 1;", ptx)
    assert len(register_a) == 128 // 16      # K = 128: eight k16 steps, B N-major (transposed flag)
    assert ptx.count("wgmma.mma_async") == len(register_a) + d // 16
    if compiled.cubin is None:
        return
    resources = compiled.resources["attention_kernel"]
    assert resources.spill_stores == 0 and resources.spill_loads == 0
    assert "serialized" not in compiled.module.ptxas_log      # ptxas keeps the wgmma pipeline
    if find_tool("nvdisasm"):
        sass = compiled.sass()
        assert {"HGMMA", "SHFL", "MUFU"} <= sass_opcodes(sass)
        hgmma = [line for line in sass.splitlines() if "HGMMA" in line]
        assert len([h for h in hgmma if re.search(r"HGMMA\.64x\d+x16\.F32 R\d+, R\d+, gdesc", h)]) == 8
        assert "SHFL.BFLY" in sass and "MUFU.EX2" in sass


def test_k_deeper_than_one_swizzle_span_steps_each_box():
    """Q (64 x 128) is two 64-wide boxes: K step 4 starts in the second box (8 KiB on), not 128 bytes on;
    an N-major V of 128 rows steps 16 rows (2 KiB) per K step, not 32 rows."""
    trace = attention_block(128).trace(*attention_arrays(128)).mlir
    a_steps = [int(x) for x in re.findall(r"%c(\d+)_i64 = arith.constant \d+ : i64", trace)]
    assert {2, 4, 6, 512, 514, 516, 518} <= set(a_steps)           # A: 32-byte steps, then the next box
    assert {128, 256, 384, 896} <= set(a_steps)                      # V: 2 KiB steps


def deep_k_product(k: int, dtype=nvdsl.float16):
    """C (64 x 128) = A (64 x k) @ B (k x 128), both tiles made of 64-wide boxes: A side by side in K,
    B (N-major) side by side in N, each box all k rows deep."""
    @nvdsl.mlir_func
    def product(a, b, c):
        a_tma = nvdsl.TMA(a, box=(64, 64), swizzle=128)
        b_tma = nvdsl.TMA(b, box=(k, 64), swizzle=128)

        @nvdsl.gpu_launch(grid=1, block=128, smem=(64 * k + k * 128) * 2)
        def kernel(ctx):
            a_tile = ctx.dynamic_shared((64, k), dtype, align=1024)
            b_tile = ctx.dynamic_shared((k, 128), dtype, align=1024)
            loaded = nvdsl.Mbarriers(1)[0]
            leader = ctx.thread_id.x.eq(0)
            loaded.init(1, predicate=leader)
            ctx.sync_threads()
            loaded.arrive((64 * k + k * 128) * 2, predicate=leader)
            for j in range(k // 64):
                a_tma.load(a_tile.view((64, 64), offset=j * 64 * 64 * 2), loaded, (0, j * 64), predicate=leader)
            for j in range(2):
                b_tma.load(b_tile.view((k, 64), offset=j * k * 64 * 2), loaded, (0, j * 64), predicate=leader)
            loaded.try_wait(0)
            acc = nvdsl.WGMMAAccumulator(64, 128)
            acc += nvdsl.WGMMAMatrix(a_tile, a_tma) @ nvdsl.WGMMAMatrix(b_tile, b_tma)
            acc.store(c)
        kernel()
    return product


def test_products_deeper_than_one_box_step_through_the_boxes():
    arrays = lambda k: (np.zeros((64, k), np.float16), np.zeros((k, 128), np.float16), np.zeros((64, 128), np.float32))
    assert "nvgpu.warpgroup.mma " in deep_k_product(64).trace(*arrays(64)).mlir     # one box: nvgpu steps right
    mlir = deep_k_product(128).trace(*arrays(128)).mlir
    assert "nvgpu.warpgroup.mma " not in mlir and mlir.count("nvvm.wgmma.mma_async") == 8
    ptx = deep_k_product(128).compile(*arrays(128)).ptx
    assert len(re.findall(r"wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 \{[^}]*\}, %rd\d+, %rd\d+, "
                          r"p, 1,\s+1, 0,\s+1;", ptx)) == 8                              # B N-major: transposed


def in_flight_kernel(wait_before_reading: bool):
    """S and then O accumulated with in_flight=1: S is complete once O is issued, O is not until a wait."""
    @nvdsl.mlir_func
    def host(a, b, out):
        a_tma, b_tma = nvdsl.TMA(a, box=(64, 64), swizzle=128), nvdsl.TMA(b, box=(64, 64), swizzle=128)

        @nvdsl.gpu_launch(grid=1, block=128, smem=2 * 64 * 64 * 2)
        def kernel(ctx):
            a_tile = ctx.dynamic_shared((64, 64), nvdsl.float16, align=1024)
            b_tile = ctx.dynamic_shared((64, 64), nvdsl.float16, align=1024)
            product = nvdsl.WGMMAMatrix(a_tile, a_tma) @ nvdsl.WGMMAMatrix(b_tile, b_tma)
            s, o = nvdsl.WGMMAAccumulator(64, 64), nvdsl.WGMMAAccumulator(64, 64)
            s.accumulate(product, in_flight=1)
            o.accumulate(product, in_flight=1)
            nvdsl.exp2(s).sum(axis=1).store(out)     # S is complete: reading it needs no wait
            if wait_before_reading:
                nvdsl.wgmma_wait(0)
            (o * 2.0).max(axis=1).store(out)
        kernel()
    return host


def test_an_accumulator_in_flight_cannot_be_read():
    arrays = (np.zeros((64, 64), np.float16), np.zeros((64, 64), np.float16), np.zeros(64, np.float32))
    in_flight_kernel(True).trace(*arrays)
    with pytest.raises(nvdsl.TraceError) as info:
        in_flight_kernel(False).trace(*arrays)
    assert info.value.code == "wgmma-in-flight" and info.value.loc.filename == __file__


def test_register_a_misuse_is_reported():
    def product(make_a):
        @nvdsl.mlir_func
        def host(a, v):
            v_tma = nvdsl.TMA(v, box=(64, 64), swizzle=128)

            @nvdsl.gpu_launch(grid=1, block=128, smem=64 * 64 * 2)
            def kernel(ctx):
                v_tile = ctx.dynamic_shared((64, 64), nvdsl.float16, align=1024)
                make_a(a) @ nvdsl.WGMMAMatrix(v_tile, v_tma)
            kernel()
        with pytest.raises(nvdsl.TraceError) as info:
            host.trace(np.zeros((64, 64), np.float32), np.zeros((64, 64), np.float16))
        return info.value
    error = product(lambda a: nvdsl.WGMMAAccumulator.load(a))
    assert error.code == "bad-wgmma" and "to(nvdsl.float16)" in str(error)
    transposed = nvdsl.layouts.FragmentLayout((64, 64), tuple(reversed(wgmma_accumulator(64, 64).coords)))
    error = product(lambda a: nvdsl.RegisterTile.load(a, transposed).to(nvdsl.float16))
    assert error.code == "layout-mismatch"


def test_b_boxes_must_hold_the_rows_wgmma_reads_together():
    @nvdsl.mlir_func
    def host(a, b):
        a_tma = nvdsl.TMA(a, box=(64, 64), swizzle=128)
        b_tma = nvdsl.TMA(b, box=(64, 64), swizzle=128)

        @nvdsl.gpu_launch(grid=1, block=128, smem=(64 * 64 + 128 * 128) * 2)
        def kernel(ctx):
            a_tile = ctx.dynamic_shared((64, 64), nvdsl.float16, align=1024)
            b_tile = ctx.dynamic_shared((128, 128), nvdsl.float16, align=1024)   # 2 x 2 boxes of 64 rows
            acc = nvdsl.WGMMAAccumulator(64, 128)
            acc += nvdsl.WGMMAMatrix(a_tile, a_tma) @ nvdsl.WGMMAMatrix(b_tile, b_tma)
        kernel()
    with pytest.raises(nvdsl.TraceError) as info:
        host.trace(np.zeros((64, 64), np.float16), np.zeros((128, 128), np.float16))
    assert info.value.code == "bad-wgmma-shape" and "all 128 K rows" in str(info.value)


# --- on the GPU and in the interpreter ----------------------------------------------------------------------------------------

def test_softmax_rows_match_numpy(backend):
    rng = np.random.default_rng(1)
    s, p, m, l, bias = softmax_arrays()
    s[:] = rng.standard_normal(s.shape) * 4
    bias[:] = rng.standard_normal(bias.shape)
    in_kernel(softmax_rows)(s, p, m, l, bias)
    rows, cols = np.indices(s.shape)
    masked = np.where(cols <= rows + 8, s + bias, -np.inf).astype(np.float64)
    m_ref = masked.max(axis=1)
    e = np.exp(masked - m_ref[:, None])
    np.testing.assert_array_equal(m, m_ref.astype(np.float32))
    np.testing.assert_allclose(l, e.sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(p, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_indices_loads_and_stores_follow_the_layout(backend):
    """The layout against two independent writers: nvgpu's own accumulator store (float32) and the
    pair writer of WGMMAAccumulator.store (_fragments, float16)."""
    def body(ctx, a, half, rows_out, cols_out, row_sums, by_nvgpu, by_pairs):
        tile = nvdsl.RegisterTile.load(a, wgmma_accumulator(128, 64))
        (tile * 2).to(nvdsl.float16).store(half)
        rows, cols = tile.indices()
        rows.store(rows_out)
        cols.store(cols_out)
        acc = nvdsl.WGMMAAccumulator.load(a)
        acc.sum(axis=1).store(row_sums)
        acc.store(by_nvgpu)
        acc.store(by_pairs)
    a = np.random.default_rng(2).standard_normal((128, 64)).astype(np.float32)
    half, rows, cols, sums = (np.zeros((128, 64), np.float16), np.zeros((128, 64), np.int32),
                              np.zeros((128, 64), np.int32), np.zeros(128, np.float32))
    by_nvgpu, by_pairs = np.zeros((128, 64), np.float32), np.zeros((128, 64), np.float16)
    in_kernel(body)(a, half, rows, cols, sums, by_nvgpu, by_pairs)
    np.testing.assert_array_equal(half, (a * 2).astype(np.float16))
    np.testing.assert_array_equal(np.stack([rows, cols]), np.indices((128, 64)))
    np.testing.assert_allclose(sums, a.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(by_nvgpu, a)
    np.testing.assert_array_equal(by_pairs, a.astype(np.float16))



def test_rows_across_warps_reduce_through_shared_memory(backend):
    """Tiles of one and of two rows lie across four and two warps (``rows_across_lanes``): a row's max and sum
    combine its lanes by shuffles, then its warps through shared memory, and every thread holds the result (the
    vector is stored once). Small integers: the sums are exact in float32, in any order."""
    def body(ctx, a1, a2, max1, sum1, max2, sum2):
        one = nvdsl.RegisterTile.load(a1, rows_across_lanes(1, 512))
        one.max(axis=1).store(max1)
        one.sum(axis=1).store(sum1)
        two = nvdsl.RegisterTile.load(a2, rows_across_lanes(2, 256, 2))
        two.max(axis=1).store(max2)
        (two * 2.0).sum(axis=1).store(sum2)
    rng = np.random.default_rng(4)
    a1, a2 = (rng.integers(-50, 50, shape).astype(np.float32) for shape in ((1, 512), (2, 256)))
    max1, sum1, max2, sum2 = (np.full(n, np.nan, np.float32) for n in (1, 1, 2, 2))
    in_kernel(body)(a1, a2, max1, sum1, max2, sum2)
    # integers below 50 * 512 < 2^24: every max and partial sum is exact in float32, whatever the order
    np.testing.assert_array_equal(np.concatenate([max1, max2]), np.concatenate([a1.max(axis=1), a2.max(axis=1)]))
    np.testing.assert_array_equal(np.concatenate([sum1, sum2]), np.concatenate([a1.sum(axis=1), 2 * a2.sum(axis=1)]))


def test_rows_across_the_warps_of_four_warpgroups_reduce_through_shared_memory(backend):
    """A tile of one row over the 16 warps of a 512-thread block (and of two rows over 8 warps each): the warps'
    partial results meet in shared memory, lane 0 of each warp writing them, at one barrier of the block; the same
    reduction twice in a loop takes its two sets of slots in turn. Small integers: every sum is exact."""
    def body(ctx, a1, a2, max1, sum1, sums2):
        one = nvdsl.RegisterTile.load(a1, rows_across_lanes(1, 2048, 1, 16))
        one.max(axis=1).store(max1)
        one.sum(axis=1).store(sum1)
        two = nvdsl.RegisterTile.load(a2, rows_across_lanes(2, 1024, 4, 16))
        total = nvdsl.fori(0, 3, carry={"s": two.sum(axis=1) * 0.0})(
            lambda k, values: {"s": values["s"] + (two * (k + 1).to(nvdsl.float32)).sum(axis=1)})["s"]
        total.store(sums2)
    rng = np.random.default_rng(6)
    a1, a2 = (rng.integers(-50, 50, shape).astype(np.float32) for shape in ((1, 2048), (2, 1024)))
    max1, sum1, sums2 = (np.full(n, np.nan, np.float32) for n in (1, 1, 2))
    in_kernel(body, block=512)(a1, a2, max1, sum1, sums2)
    # integers: a maximum is one of them, and |sums| below 6 * 50 * 2048 < 2^24 are exact in float32 in any order
    np.testing.assert_array_equal(max1, a1.max(axis=1))
    np.testing.assert_array_equal(sum1, a1.sum(axis=1))
    np.testing.assert_array_equal(sums2, 6 * a2.sum(axis=1))


def test_a_reduction_across_warps_meets_at_one_barrier():
    """Lane 0 of each warp writes its warp's partial sum into one of two sets of slots taken in turn, so one reduction
    across the 16 warps of a row is one barrier (the slots' next writes go to the other set)."""
    def body(ctx, a, out):
        nvdsl.RegisterTile.load(a, rows_across_lanes(1, 2048, 1, 16)).sum(axis=1).store(out)
    ptx = in_kernel(body, block=512).compile(np.zeros((1, 2048), np.float32), np.zeros(1, np.float32)).ptx
    assert ptx.count("bar.sync") == 1, ptx.count("bar.sync")


def test_a_tile_of_several_warpgroups_is_not_reduced_inside_one():
    """A Warpgroup body's barrier holds its 128 threads: a reduction of a 256-thread tile there is refused."""
    def body(ctx, a):
        with nvdsl.Warpgroup(ctx, 0):
            nvdsl.RegisterTile.load(a, rows_across_lanes(1, 256, 1, 8)).sum(axis=1)
    with pytest.raises(nvdsl.TraceError) as info:
        in_kernel(body, block=256).trace(np.zeros((1, 256), np.float32))
    assert info.value.code == "bad-axis" and "256-thread tile inside a Warpgroup body" in str(info.value)


def test_a_reduction_across_warps_needs_their_barrier():
    """Outside a Warpgroup body, the warps that share a row meet at the block's barrier: a block of more threads
    than the tile's is refused where the reduction is written."""
    def body(ctx, a):
        nvdsl.RegisterTile.load(a, rows_across_lanes(1, 128)).sum(axis=1)
    with pytest.raises(nvdsl.TraceError) as info:
        in_kernel(body, block=256).trace(np.zeros((1, 128), np.float32))
    assert info.value.code == "bad-axis" and info.value.loc.filename == __file__ and "Warpgroup" in info.value.hint


def test_any_of_thread_lets_a_thread_skip_a_rescale(backend):
    """Each thread rescales its own rows of the tile only where one of its factors differs from 1: which
    threads do is what any_of_thread says, and the result is the same as rescaling every row."""
    def body(ctx, a, factors, out, rescaled):
        acc = nvdsl.WGMMAAccumulator.load(a)
        alpha = nvdsl.RowVector.load(acc, factors)
        needed = (alpha != 1.0).any_of_thread()
        nvdsl.cond(needed, lambda: acc * alpha, lambda: acc).store(out)
        flags = nvdsl.RegisterTile.load(a, acc.layout) * 0 + nvdsl.cond(needed, lambda: nvdsl.constant(1.0, nvdsl.float32),
                                                                    lambda: nvdsl.constant(0.0, nvdsl.float32))
        flags.store(rescaled)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((64, 32)).astype(np.float32)
    factors = np.ones(64, np.float32)
    factors[[3, 40]] = [0.5, 2.0]
    out, rescaled = np.zeros_like(a), np.zeros_like(a)
    in_kernel(body)(a, factors, out, rescaled)
    np.testing.assert_array_equal(out, a * factors[:, None])
    # a thread holds rows r and r + 8 of its warp's 16: rows 3, 11 (warp 0) and 32, 40 (warp 2) moved
    np.testing.assert_array_equal(np.flatnonzero(rescaled.any(axis=1)), [3, 11, 32, 40])


def test_any_of_thread_needs_a_bool_fragment():
    def body(ctx, a):
        nvdsl.WGMMAAccumulator.load(a).any_of_thread()
    assert trace_error(body, np.zeros((64, 32), np.float32)).code == "bad-dtype"

def test_online_softmax_through_fori_matches_numpy(backend):
    def online(ctx, s_in, o, lse):
        layout = wgmma_accumulator(64, 64)
        zero = nvdsl.WGMMAAccumulator(64, 64)

        @nvdsl.fori(0, s_in.shape[1] // 64, carry=(zero, nvdsl.RowVector.full(zero, -math.inf),
                                                   nvdsl.RowVector.full(zero, 0.0)))
        def state(j, carry):
            acc, m, l = carry
            s = nvdsl.WGMMAAccumulator.load(s_in, layout, at=(0, j * 64))
            m_new = nvdsl.maximum(m, s.max(axis=1))
            p, alpha = nvdsl.exp(s - m_new), nvdsl.exp(m - m_new)
            return acc * alpha + p, m_new, l * alpha + p.sum(axis=1)
        acc, m, l = state
        (acc / l).store(o)
        (m + nvdsl.log(l)).store(lse)
    s = (np.random.default_rng(3).standard_normal((64, 256)) * 3).astype(np.float32)
    o, lse = np.zeros((64, 64), np.float32), np.zeros(64, np.float32)
    in_kernel(online)(s, o, lse)
    blocks = s.astype(np.float64).reshape(64, 4, 64)
    m = blocks.max(axis=(1, 2))
    e = np.exp(blocks - m[:, None, None])
    np.testing.assert_allclose(o, e.sum(axis=1) / e.sum(axis=(1, 2))[:, None], rtol=1e-5)
    np.testing.assert_allclose(lse, m + np.log(e.sum(axis=(1, 2))), rtol=1e-6)


def attention_reference(q, k, v, causal):
    s = q.astype(np.float64) @ k.astype(np.float64).T / math.sqrt(q.shape[1])
    if causal:
        rows, cols = np.indices(s.shape)
        s = np.where(cols <= rows, s, -np.inf)
    m = s.max(axis=1, keepdims=True)
    e = np.exp(s - m)
    return (e / e.sum(axis=1, keepdims=True)) @ v.astype(np.float64), (m[:, 0] + np.log(e.sum(axis=1)))


def random_arrays(seed, dtype, *shapes):
    """Standard normal NumPy arrays of a 16-bit float type (bfloat16 through ml_dtypes)."""
    np_dtype = nvdsl.dtypes.numpy_dtype(getattr(nvdsl, dtype))
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32).astype(np_dtype) for shape in shapes]


@pytest.mark.parametrize("d, causal, dtype", [(64, False, "float16"), (128, False, "float16"),
                                              (128, True, "float16"), (64, True, "bfloat16")])
def test_one_block_of_attention_matches_numpy(d, causal, dtype, backend):
    q, k, v = random_arrays(d, dtype, (64, d), (128, d), (128, d))
    o, lse = np.zeros((64, d), np.float32), np.zeros(64, np.float32)
    attention_block(d, dtype=getattr(nvdsl, dtype), causal=causal)(q, k, v, o, lse)
    o_ref, lse_ref = attention_reference(*(x.astype(np.float32) for x in (q, k, v)), causal)
    tolerance = 2e-3 if dtype == "float16" else 1.6e-2          # P is rounded to 16 bits for P @ V
    np.testing.assert_allclose(o, o_ref, atol=tolerance, rtol=tolerance)
    np.testing.assert_allclose(lse, lse_ref, atol=1e-4, rtol=1e-5)


@pytest.mark.parametrize("m_rows", [64, 128])
def test_register_a_product_matches_numpy(m_rows, backend):
    """P @ V with P in registers: two 64-row chunks of wgmma for m_rows=128."""
    q, k, v = random_arrays(m_rows, "float16", (m_rows, 64), (128, 64), (128, 64))
    o, lse = np.zeros((m_rows, 64), np.float32), np.zeros(m_rows, np.float32)
    attention_block(64, m_rows=m_rows)(q, k, v, o, lse)
    o_ref, lse_ref = attention_reference(*(x.astype(np.float32) for x in (q, k, v)), False)
    np.testing.assert_allclose(o, o_ref, atol=2e-3, rtol=2e-3)
    np.testing.assert_allclose(lse, lse_ref, atol=1e-4, rtol=1e-5)


@pytest.mark.parametrize("k, dtype", [(128, "float16"), (256, "bfloat16")])
def test_products_deeper_than_one_box_match_numpy(k, dtype, backend):
    a, b = random_arrays(k, dtype, (64, k), (k, 128))
    c = np.full((64, 128), np.nan, np.float32)
    deep_k_product(k, getattr(nvdsl, dtype))(a, b, c)
    reference = a.astype(np.float64) @ b.astype(np.float64)
    assert np.linalg.norm(c - reference) / np.linalg.norm(reference) < 1e-3


def test_a_column_slice_of_an_accumulator_is_the_narrower_accumulators_layout():
    """acc.columns(a, b) picks, per thread, the registers of columns a..b: by the layouts, value j of the
    (m, b - a) accumulator sits at the same row and at column - a of the value it was picked from."""
    from nvdsl.layouts import rows_across_lanes, wgmma_accumulator
    m, n, a, b = 128, 256, 64, 192
    full, part = wgmma_accumulator(m, n), wgmma_accumulator(m, b - a)
    half = n // 2
    picked = [chunk * half + 4 * q + r for chunk in range(m // 64) for q in range(a // 8, b // 8) for r in range(4)]
    assert len(picked) == part.values
    for j, v in enumerate(picked):
        assert full.value_part(0, v) == part.value_part(0, j)
        assert full.value_part(1, v) - a == part.value_part(1, j)

    def body(ctx, out):
        acc = nvdsl.WGMMAAccumulator(64, 256)
        acc.columns(64, 192).store(out)
    traced = in_kernel(body).trace(np.zeros((64, 128), np.float32)).mlir
    assert "vector.store" in traced
    with pytest.raises(nvdsl.TraceError, match="multiples of 8"):
        in_kernel(lambda ctx, out: nvdsl.WGMMAAccumulator(64, 256).columns(4, 12)).trace(np.zeros((64, 128), np.float32))


def test_a_block_overhanging_the_arrays_end_loads_with_a_fill():
    """``RegisterTile.load(a, layout, at, fill=0)`` of a 64 x 128 block at (30, 40) of a 70 x 100 array: the rows
    and columns past the ends read as the fill, and nothing outside the array is read (the interpreter would
    report it)."""
    a = np.arange(70 * 100, dtype=np.float32).reshape(70, 100)
    out = np.full((64, 128), np.nan, np.float32)

    def body(ctx, a, out):
        nvdsl.RegisterTile.load(a, wgmma_accumulator(64, 128), (30, 40), fill=-1.0).store(out)
    in_kernel(body).with_options(backend="interpret")(a, out)
    expected = np.full((64, 128), -1.0, np.float32)
    expected[:40, :60] = a[30:, 40:]
    np.testing.assert_array_equal(out, expected)

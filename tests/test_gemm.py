"""Warp-specialized GEMMs (tutorial chapter 5, nvdsl.kernels.gemm) and the primitives they added:
asynchronous wgmma, converting accumulator stores, shared views, named barriers, TMA stores left running."""

import os
import re
import sys

import numpy as np
import pytest

import nvdsl
from nvdsl.compiler.toolchain import find_tool
import nvdsl.kernels.gemm as library
from nvdsl.testing import requires_gpu, sass_opcodes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tutorials"))
import ch5_gemm_warp_specialized as ch5  # noqa: E402

STAGE_BYTES = (128 * 64 + 64 * 256) * 2


def zeros(m, n, k, c_dtype=np.float16):
    return np.zeros((m, k), np.float16), np.zeros((k, n), np.float16), np.zeros((m, n), c_dtype)


def assert_fast_kernel_shape(compiled, kernel="gemm_kernel"):
    """What a warp-specialized Hopper GEMM needs in its PTX and SASS."""
    ptx = compiled.ptx
    assert re.search(r"setmaxnreg.dec.sync.aligned.u32\s+40;", ptx)
    assert re.search(r"setmaxnreg.inc.sync.aligned.u32\s+232;", ptx)
    assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16" in ptx
    assert re.search(r"wgmma.wait_group.sync.aligned\s+1;", ptx)           # one product stays in flight
    assert re.search(r"bar.sync\s+[23], 128;", ptx)                    # a consumer warpgroup's own barrier
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in ptx          # the TMA-store epilogue
    if compiled.cubin is not None:
        resources = compiled.resources[kernel]
        assert resources.spill_stores == 0 and resources.spill_loads == 0
        assert resources.registers <= 168                              # 384 threads fit the register file
        if find_tool("nvdisasm"):
            assert {"HGMMA", "UTMALDG", "UTMASTG", "SYNCS", "USETMAXREG"} <= sass_opcodes(compiled.sass())


def test_ch5_specializes_warpgroups_without_spills():
    compiled = ch5.make_gemm(num_stages=4).compile(*zeros(256, 512, 1024))
    assert_fast_kernel_shape(compiled)
    launch, = compiled.module.plan.launches
    # the ring's 4 slots, then two 8 KiB staging tiles for the epilogue
    assert launch.grid == (2 * 2, 1, 1) and launch.block == (384, 1, 1) and launch.smem == 4 * STAGE_BYTES + 2 * 8192
    assert compiled.ptx.count("mbarrier.init.shared.b64") == 8
    assert compiled.resources["gemm_kernel"].stack_frame == 0          # the ring positions live in registers


def test_ch5_tiles_ragged_shapes_and_any_k():
    """TMA zero-fills loads past the edges and clips stores; the ring needs no K multiple of its depth."""
    launch, = ch5.make_gemm(num_stages=4).compile(*zeros(200, 312, 320)).module.plan.launches
    assert launch.grid == (2 * 2, 1, 1)
    with pytest.raises(nvdsl.TraceError, match="needs multiples of 16"):  # TMA's own rule: 16-byte row strides
        ch5.make_gemm(num_stages=4).trace(*zeros(200, 300, 320))


def test_library_gemm_is_generated_persistent_and_stages_its_epilogue():
    a, b, c = zeros(8192, 8192, 1024)
    kernel = library._kernel(library.matmul, library.MAPPING.replace(sm_count=132))
    compiled = kernel.compile(c, a, b)
    assert_fast_kernel_shape(compiled, "matmul_kernel")
    launch, = compiled.module.plan.launches
    assert launch.grid == (132, 1, 1) and launch.smem == 4 * STAGE_BYTES + 2 * 16 * 1024
    # stores run on while the next tile is computed; each block waits for them before reusing staging
    assert re.search(r"cp.async.bulk.wait_group.read\s+0;", compiled.ptx)
    a, b, c = zeros(256, 512, 256)
    few_tiles, = kernel.compile(c, a, b).module.plan.launches
    assert few_tiles.grid == (4, 1, 1)


def test_the_library_maps_small_outputs_onto_narrower_tiles(monkeypatch):
    """gemm() and linear() choose the tiling whose busiest SM finishes first: 128 x 256 tiles (the ping-pong with
    an activation) where there are enough of them, narrower ones where 128 x 256 would leave SMs idle."""
    pick = library.default_mapping
    assert pick(8192, 8192, sm_count=132) is library.MAPPING
    assert pick(4096, 14336, sm_count=132) is library.MAPPING
    assert pick(1024, 1024, batch=8, sm_count=132) is library.MAPPING      # 256 tiles of 128 x 256
    assert pick(1024, 1024, sm_count=132) is library.TILE_64x128_MAPPING  # 32 tiles of 128 x 256 on 132 SMs
    assert pick(256, 8192, sm_count=132) is library.TILE_128x128_MAPPING
    assert pick(8192, 8192, activation="gelu", sm_count=132) is library.PINGPONG_MAPPING
    assert pick(256, 8192, activation="gelu", sm_count=132) is library.TILE_128x128_MAPPING
    assert pick(1024, 1024, sm_count=8) is library.MAPPING                  # 4 rounds of 128 x 256 on 8 SMs
    # one or two rows of tiles: 64 x 64 where 64 x 128 fills at most half the SMs and 64 x 64 more than half
    assert pick(128, 4096, sm_count=132) is library.TILE_64x64_MAPPING     # 128 tiles, not 64
    assert pick(1, 8192, sm_count=132) is library.TILE_64x64_MAPPING
    # one row of 64 x 64 tiles that two splits of K spread as widely as 64 x 128 tiles in their splits
    assert pick(64, 4096, sm_count=132) is library.TILE_64x64_MAPPING      # 64 tiles, each in two splits
    assert pick(1, 3072, sm_count=132) is library.TILE_64x128_MAPPING      # 96 blocks against 24 x 5 = 120
    assert pick(16, 4096, sm_count=128) is library.TILE_64x64_MAPPING      # 128 blocks on 128 SMs
    # with 120 SMs two splits would make two waves: 64 x 64 tiles unsplit (more than half the SMs)
    assert pick(64, 4096, sm_count=120) is library.TILE_64x64_MAPPING
    assert library.split_k(64, 4096, 4096, library.TILE_64x64_MAPPING, sm_count=120) == 1
    assert pick(128, 2048, sm_count=132) is library.TILE_64x128_MAPPING
    assert pick(256, 4096, sm_count=132) is library.TILE_64x128_MAPPING    # four rows of tiles
    assert pick(64, 4096, batch=2, sm_count=132) is library.TILE_64x64_MAPPING
    assert pick(64, 16384, sm_count=132) is library.TILE_64x128_MAPPING    # 128 tiles of 64 x 128

    chosen = []
    monkeypatch.setattr(library, "_kernel", lambda program, mapping: lambda *arrays: chosen.append(mapping))
    library.gemm(*zeros(256, 8192, 64))
    library.gemm(*zeros(256, 8192, 64), mapping=library.MAPPING)
    library.gemm(np.zeros((8, 1024, 64), np.float16), np.zeros((8, 64, 1024), np.float16),
                 np.zeros((8, 1024, 1024), np.float16))
    library.linear(np.zeros((256, 64), np.float16), np.zeros((8192, 64), np.float16), np.zeros(8192, np.float16),
                   np.zeros((256, 8192), np.float16), activation="gelu")
    assert chosen == [library.default_mapping(256, 8192), library.MAPPING, library.default_mapping(1024, 1024, 8),
                      library.default_mapping(256, 8192, activation="gelu")]


@pytest.mark.parametrize("layout", ["KN", "NK"])
def test_the_64x64_tiling_computes_the_library_gemm(backend, layout):
    """TILE_64x64_MAPPING (one consumer, 64 x 64 tiles), ragged on every axis, B stored either way."""
    rng = np.random.default_rng(4)
    m, n, k = 100, 150, 200
    a = rng.integers(-3, 4, (m, k)).astype(np.float16)
    b = rng.integers(-3, 4, (k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    library.gemm(a, np.ascontiguousarray(b.T) if layout == "NK" else b, c, b_layout=layout,
                 mapping=library.TILE_64x64_MAPPING)
    # exact: small integers, and float32 sums of at most 200 products of magnitude <= 9 are exact
    np.testing.assert_array_equal(c, a.astype(np.float64) @ b.astype(np.float64))


@pytest.mark.parametrize("layout", ["KN", "NK", "batched"])
def test_the_narrow_tilings_compute_the_library_gemm(backend, layout):
    """Small outputs run on TILE_64x128_MAPPING (one consumer): B stored either way, and batched."""
    rng = np.random.default_rng(3)
    m, n, k, batch = 100, 136, 200, 2
    lead = (batch,) if layout == "batched" else ()
    a = rng.standard_normal(lead + (m, k)).astype(np.float16)
    b = rng.standard_normal(lead + (k, n)).astype(np.float16)
    c = np.zeros(lead + (m, n), np.float32)
    assert library.default_mapping(m, n, batch if lead else 1) is library.TILE_64x128_MAPPING
    library.gemm(a, np.ascontiguousarray(b.T) if layout == "NK" else b, c, b_layout="NK" if layout == "NK" else "KN")
    expected = a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(c - expected).max() < 1e-3 * np.abs(expected).max()


def test_library_gemm_names_what_it_needs():
    with pytest.raises(nvdsl.ArgumentError, match="'a' is float32; it must be float16 or bfloat16") as info:
        library.gemm(np.zeros((128, 64), np.float32), np.zeros((64, 256), np.float32),
                     np.zeros((128, 256), np.float32))
    assert info.value.code == "bad-dtype" and info.value.loc.filename == __file__
    with pytest.raises(nvdsl.ArgumentError, match="b_layout"):
        library.gemm(*zeros(128, 256, 64), b_layout="MN")


def single_tile(store, c_shape=(128, 128), c_dtype=nvdsl.float16):
    """C = A (128x64) @ B (64x128) in one CTA; ``store(ctx, acc, c, c_tma)`` writes C."""
    m, n, k, half = 128, 128, 64, 64

    @nvdsl.mlir_func
    def gemm(a, b, c):
        a_tma = nvdsl.TMA(a, box=(m, k), swizzle=128)
        b_tma = nvdsl.TMA(b, box=(k, half), swizzle=128)
        c_tma = nvdsl.TMA(c, box=(64, 128 // c.dtype.itemsize), swizzle=128)
        a_bytes, b_bytes = m * k * 2, k * n * 2

        @nvdsl.gpu_launch(grid=1, block=128, smem=a_bytes + b_bytes + m * n * 4)
        def kernel(ctx):
            a_tile = ctx.dynamic_shared((m, k), nvdsl.float16, align=1024)
            b_tile = ctx.dynamic_shared((k, n), nvdsl.float16, align=1024)
            loaded = nvdsl.Mbarriers(1)[0]
            leader = ctx.thread_id.x.eq(0)
            loaded.init(1, predicate=leader)
            ctx.sync_threads()
            loaded.arrive(a_bytes + b_bytes, predicate=leader)
            a_tma.load(a_tile, loaded, (0, 0), predicate=leader)
            for h in (0, 1):
                b_tma.load(b_tile.view((k, half), offset=h * k * half * 2), loaded, (0, h * half), predicate=leader)
            loaded.try_wait(0)
            acc = nvdsl.WGMMAAccumulator(m, n)
            acc.accumulate(nvdsl.WGMMAMatrix(a_tile, a_tma) @ nvdsl.WGMMAMatrix(b_tile, b_tma), in_flight=1)
            store(ctx, acc, c, c_tma)
        kernel()
    return gemm


def store_row_major(ctx, acc, c, c_tma):
    acc.store(c, at=(0, 64))


def store_column_slices(ctx, acc, c, c_tma):
    for first in (0, 64):
        acc[:, first:first + 64].store(c, at=(0, 64 + first))


def store_through_tma_boxes(ctx, acc, c, c_tma):
    cols = 128 // c.dtype.itemsize
    staging = ctx.dynamic_shared((128, 128), c.dtype, offset=(128 * 64 + 64 * 128) * 2, align=1024)
    acc.store(staging, tma=c_tma)
    nvdsl.fence_shared_to_async()
    ctx.sync_threads()
    for half in (0, 1):                        # the two 64-row halves of the staging tile, box by box
        for j in range(128 // cols):
            box = staging.view((64, cols), offset=half * 64 * 128 * c.dtype.itemsize + j * 64 * cols * c.dtype.itemsize)
            c_tma.store(box, (half * 64, j * cols), predicate=ctx.thread_id.x.eq(0), wait=False)
    nvdsl.tma_store_wait(0)


def test_accumulator_stores_convert_and_lay_out_tma_boxes():
    a, b = np.zeros((128, 64), np.float16), np.zeros((64, 128), np.float16)
    ptx = single_tile(store_row_major).compile(a, b, np.zeros((128, 256), np.float16)).ptx
    assert "cvt.rn.f16x2.f32" in ptx and "st.global.b32" in ptx
    # the wait before reading the accumulator
    assert re.search(r"wgmma.wait_group.sync.aligned\s+1;.*wgmma.wait_group.sync.aligned\s+0;", ptx, re.S)
    ptx = single_tile(store_column_slices).compile(a, b, np.zeros((128, 256), np.float32)).ptx
    assert "st.global.v2.b32" in ptx                   # a pair of float32 columns, one 8-byte store
    ptx = single_tile(store_through_tma_boxes).compile(a, b, np.zeros((128, 128), np.float16)).ptx
    assert "st.shared.b32" in ptx and "cp.async.bulk.tensor.2d.global.shared::cta" in ptx


def test_accumulator_and_view_misuse_is_reported():
    a, b, c = np.zeros((128, 64), np.float16), np.zeros((64, 128), np.float16), np.zeros((128, 128), np.float16)

    def fails(store, code, words, c=c):
        with pytest.raises(nvdsl.TraceError) as info:
            single_tile(store).trace(a, b, c)
        assert info.value.code == code and words in str(info.value), str(info.value)

    fails(lambda ctx, acc, c, t: acc.accumulate(acc, in_flight=1), "bad-wgmma", "A @ B products")
    fails(lambda ctx, acc, c, t: acc[0:64, :], "bad-wgmma", "acc[:, start:stop]")
    fails(lambda ctx, acc, c, t: acc[:, 4:12], "bad-wgmma", "multiples of 8")
    fails(lambda ctx, acc, c, t: acc[:, 0:64].store(c), "bad-wgmma", "block is [128, 64]")
    fails(lambda ctx, acc, c, t: acc.store(ctx.dynamic_shared((128, 128), nvdsl.int32)), "bad-wgmma",
          "float32, float16")
    fails(lambda ctx, acc, c, t: acc.store(ctx.dynamic_shared((128, 128), nvdsl.float16, offset=32768 + 256), tma=t),
          "misaligned", "multiple of 1024")
    fails(lambda ctx, acc, c, t: acc.store(c, tma=t), "bad-wgmma", "shared")
    fails(lambda ctx, acc, c, t: c.view((4, 4)), "bad-view", "only shared arrays")
    fails(lambda ctx, acc, c, t: ctx.dynamic_shared((8, 8), nvdsl.float16).view((16, 8)), "bad-view", "does not fit")
    fails(lambda ctx, acc, c, t: ctx.dynamic_shared((8, 8), nvdsl.float16).view((2,), nvdsl.float32, offset=2),
          "misaligned", "multiple of float32")
    fails(lambda ctx, acc, c, t: ctx.sync_threads(100), "bad-barrier", "multiple of 32")
    fails(lambda ctx, acc, c, t: ctx.sync_threads(64, barrier=0), "bad-barrier", "1..15")
    fails(lambda ctx, acc, c, t: nvdsl.tma_store_wait(9), "bad-tma", "0..7")
    fails(lambda ctx, acc, c, t: nvdsl.Warpgroup(ctx, 0).sync(), "bad-warpgroup", "inside")

    fails(lambda ctx, acc, c, t: acc.accumulate(None, in_flight=8), "bad-wgmma", "in_flight=8")
    fails(lambda ctx, acc, c, t: nvdsl.wgmma_wait(-1), "bad-wgmma", "in_flight=-1")


# --- on the GPU ----------------------------------------------------------------------------------

def check_gemm(gemm, m, n, k, in_dtype, out_dtype):
    """Run ``gemm`` on random inputs (C filled with NaN first) against a float32 product of the same inputs."""
    torch = pytest.importorskip("torch")
    a = torch.randn(m, k, device="cuda").to(getattr(torch, in_dtype))
    b = torch.randn(k, n, device="cuda").to(getattr(torch, in_dtype))
    c = torch.full((m, n), float("nan"), device="cuda", dtype=getattr(torch, out_dtype))
    gemm(a, b, c)
    torch.cuda.synchronize()
    reference = a.float() @ b.float()
    assert not torch.isnan(c).any(), "some outputs were never written"
    error = (torch.linalg.norm(c.float() - reference) / torch.linalg.norm(reference)).item()
    # rounding C to its type dominates: 2^-11 relative for float16, 2^-8 for bfloat16
    assert error < {"float32": 1e-4, "float16": 1e-3, "bfloat16": 4e-3}[out_dtype], error


@requires_gpu
@pytest.mark.parametrize("store, c_shape, c_dtype", [
    (store_row_major, (128, 256), "float16"), (store_row_major, (128, 256), "bfloat16"),
    (store_column_slices, (128, 256), "float32"), (store_through_tma_boxes, (128, 128), "float16"),
    (store_through_tma_boxes, (128, 128), "float32")])
def test_accumulator_stores_write_the_product(store, c_shape, c_dtype):
    torch = pytest.importorskip("torch")
    a = torch.randn(128, 64, device="cuda").half()
    b = torch.randn(64, 128, device="cuda").half()
    c = torch.full(c_shape, float("nan"), device="cuda", dtype=getattr(torch, c_dtype))
    single_tile(store)(a, b, c)
    torch.cuda.synchronize()
    expected = (a.float() @ b.float()).to(c.dtype).float()
    block = c[:, 64:192] if c_shape[1] > 128 else c                     # the block at=(0, 64)
    assert torch.allclose(block.float(), expected, rtol=1e-2, atol=1e-2)
    if c_shape[1] > 128:
        assert torch.isnan(c[:, :64].float()).all() and torch.isnan(c[:, 192:].float()).all(), \
            "columns outside the block were written"


@requires_gpu
@pytest.mark.parametrize("m, n, k, stages, in_dtype, out_dtype", [
    (128, 256, 256, 4, "float16", "float32"), (384, 768, 512, 4, "bfloat16", "bfloat16"),
    (1024, 2048, 768, 3, "float16", "float16"), (256, 512, 128, 2, "float16", "float16"),
    (640, 256, 8192, 4, "bfloat16", "float32"), (8192, 8192, 1024, 4, "float16", "float16"),
    (200, 312, 320, 4, "float16", "float32"),          # ragged M and N; 5 K steps through 4 slots
    (130, 520, 1000, 3, "bfloat16", "bfloat16")])      # 16 K steps, the last one ragged, through 3 slots
def test_ch5_matches_a_float32_reference(m, n, k, stages, in_dtype, out_dtype):
    check_gemm(ch5.make_gemm(num_stages=stages, dtype=getattr(nvdsl, in_dtype)), m, n, k, in_dtype, out_dtype)


@requires_gpu
@pytest.mark.parametrize("m, n, k, sm_count, in_dtype, out_dtype", [
    (128, 256, 256, None, "float16", "float32"),        # one tile
    (4096, 4096, 256, None, "float16", "float16"),      # more tiles than SMs
    (1024, 1024, 768, 3, "bfloat16", "bfloat16"),       # many tiles per block: ring positions run across tiles
    (2048, 512, 4096, 5, "float16", "float32"),
    (1000, 1000, 1000, 7, "float16", "float16"),        # ragged M, N and K
    (8192, 8192, 1024, None, "float16", "float16")])
def test_library_gemm_matches_a_float32_reference(m, n, k, sm_count, in_dtype, out_dtype):
    mapping = library.MAPPING.replace(sm_count=sm_count)
    check_gemm(lambda a, b, c: library.gemm(a, b, c, mapping=mapping), m, n, k, in_dtype, out_dtype)


def loop_then(after, group=False, step=None):
    """A 128-thread kernel accumulating two products per step in a fori loop (or ``step(product, first,
    second)`` issuing them), then ``after(ctx, acc, c)``."""
    @nvdsl.mlir_func
    def kernel_fn(a, b, c):
        a_tma = nvdsl.TMA(a, box=(64, 64), swizzle=128)
        b_tma = nvdsl.TMA(b, box=(64, 64), swizzle=128)

        @nvdsl.gpu_launch(grid=1, block=128)
        def kernel(ctx):
            a_tile = ctx.shared_array((64, 64), nvdsl.float16, align=1024)
            b_tile = ctx.shared_array((64, 64), nvdsl.float16, align=1024)

            @nvdsl.fori(0, 4, carry=(nvdsl.WGMMAAccumulator(64, 64), nvdsl.WGMMAAccumulator(64, 64)))
            def accs(k, accs):
                first, second = accs
                product = nvdsl.WGMMAMatrix(a_tile, a_tma) @ nvdsl.WGMMAMatrix(b_tile, b_tma)
                if step is not None:
                    step(product, first, second)
                elif group:
                    with nvdsl.wgmma_group(in_flight=1):
                        first += product
                        second += product
                else:
                    first.accumulate(product, in_flight=1)
                    second.accumulate(product, in_flight=1)
                return first, second
            after(ctx, accs, c)
        kernel()
    return kernel_fn


def test_a_loops_accumulator_result_knows_its_product_may_still_run():
    args = (np.zeros((64, 64), np.float16), np.zeros((64, 64), np.float16), np.zeros((64, 64), np.float32))
    with pytest.raises(nvdsl.TraceError) as info:
        loop_then(lambda ctx, accs, c: (accs[1] + 1.0).store(c)).trace(*args)
    assert info.value.code == "wgmma-in-flight"
    loop_then(lambda ctx, accs, c: (nvdsl.wgmma_wait(0), (accs[1] + 1.0).store(c))).trace(*args)


def test_a_wgmma_group_commits_its_products_once():
    args = (np.zeros((64, 64), np.float16), np.zeros((64, 64), np.float16), np.zeros((64, 64), np.float32))
    store = lambda ctx, accs, c: accs[0].store(c)
    separate = loop_then(store).compile(*args).ptx
    grouped = loop_then(store, group=True).compile(*args).ptx
    commits = grouped.count("wgmma.commit_group.sync.aligned")       # one per step (LLVM may unroll the loop)
    assert commits and separate.count("wgmma.commit_group.sync.aligned") == 2 * commits
    assert grouped.count("wgmma.fence.sync.aligned") == commits
    with pytest.raises(nvdsl.TraceError, match="the group decides"):
        def inside(ctx, accs, c):
            with nvdsl.wgmma_group(in_flight=0):
                accs[0].accumulate(None, in_flight=1)
        loop_then(inside).trace(*args)


def test_float32_accumulators_are_stored_by_their_layout_not_nvgpus_store():
    """MLIR 22's nvgpu.warpgroup.mma.store takes rows from the block's thread index and steps 64-row chunks by
    N/2 rows: wrong for every warpgroup but the first and for N != 128. nvdsl writes pairs by the layout."""
    a, b = np.zeros((128, 64), np.float16), np.zeros((64, 128), np.float16)
    traced = single_tile(lambda ctx, acc, c, t: acc.store(c)).trace(a, b, np.zeros((128, 128), np.float32)).mlir
    assert "nvgpu.warpgroup.mma.store" not in traced and "vector.store" in traced


def test_float8_operands_use_the_k32_instruction_and_must_be_k_major():
    from helpers import FakeDLPackDeviceArray
    f8 = lambda *shape: FakeDLPackDeviceArray(shape, 10, 8)

    def kernel_for(b_k_major):
        @nvdsl.mlir_func
        def f(a, b, c):
            at = nvdsl.TMA(a, box=(64, 128), swizzle=128)
            bt = nvdsl.TMA(b, box=(128, 128), swizzle=128)

            @nvdsl.gpu_launch(grid=1, block=128)
            def k(ctx):
                a_tile = ctx.shared_array((64, 128), nvdsl.float8_e4m3fn, align=1024)
                b_tile = ctx.shared_array((128, 128), nvdsl.float8_e4m3fn, align=1024)
                acc = nvdsl.WGMMAAccumulator(64, 128)
                acc += nvdsl.WGMMAMatrix(a_tile, at) @ nvdsl.WGMMAMatrix(b_tile, bt, transposed=b_k_major)
                acc.store(c)
            k()
        return f
    ptx = kernel_for(True).compile(f8(64, 128), f8(128, 128), np.zeros((64, 128), np.float32)).ptx
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3") == 4       # K = 128 in k32 steps
    with pytest.raises(nvdsl.TraceError, match="float8 B must be K-major"):
        kernel_for(False).trace(f8(64, 128), f8(128, 128), np.zeros((64, 128), np.float32))


def products_per_step(second_in_flight: int, first: bool = True):
    """loop_then whose step issues two products (or only the second) and then waits for all (or not)."""
    def step(product, one, two):
        if first:
            one.accumulate(product, in_flight=1)
        two.accumulate(product, in_flight=second_in_flight)
        if first:
            nvdsl.wgmma_wait(0)
    return loop_then(lambda ctx, accs, c: (nvdsl.wgmma_wait(0), accs[1].store(c)), step=step)


def test_a_commit_waits_only_where_more_groups_could_run():
    """ptxas serializes every wgmma of a kernel around a `wgmma.wait_group 2` right after a second commit
    (C7513), though it cannot wait for anything: such a wait is left out, where the bound comes from a wait
    earlier in the same straight-line code, never from before a loop (its later iterations may have more)."""
    args = (np.zeros((64, 64), np.float16), np.zeros((64, 64), np.float16), np.zeros((64, 64), np.float32))
    elided = products_per_step(2).compile(*args)
    assert re.search(r"wgmma.wait_group.sync.aligned\s+1;", elided.ptx)
    assert not re.search(r"wgmma.wait_group.sync.aligned\s+2;", elided.ptx)
    if elided.cubin is not None:
        assert "C7513" not in elided.module.ptxas_log
    # the body's first commit: before the loop nothing ran, but in the loop's later iterations more may
    needed = products_per_step(2, first=False).compile(*args).ptx
    assert re.search(r"wgmma.wait_group.sync.aligned\s+2;", needed)


def two_products_then_stores(second_under_a_branch: bool = False):
    """C = D = A @ B (64 x 64) as two products in flight at once in straight-line code, then C's store and D's; or
    the second product and D's store under a branch (every thread takes it), then C's store."""
    @nvdsl.mlir_func
    def two(a, b, c, d):
        a_tma = nvdsl.TMA(a, box=(64, 64), swizzle=128)
        b_tma = nvdsl.TMA(b, box=(64, 64), swizzle=128)
        tile_bytes = 64 * 64 * 2

        @nvdsl.gpu_launch(grid=1, block=128, smem=2 * tile_bytes)
        def kernel(ctx):
            a_tile = ctx.dynamic_shared((64, 64), nvdsl.float16, align=1024)
            b_tile = ctx.dynamic_shared((64, 64), nvdsl.float16, offset=tile_bytes, align=1024)
            loaded = nvdsl.Mbarriers(1)[0]
            leader = ctx.thread_id.x.eq(0)
            loaded.init(1, predicate=leader)
            ctx.sync_threads()
            loaded.arrive(2 * tile_bytes, predicate=leader)
            a_tma.load(a_tile, loaded, (0, 0), predicate=leader)
            b_tma.load(b_tile, loaded, (0, 0), predicate=leader)
            loaded.try_wait(0)
            product = nvdsl.WGMMAMatrix(a_tile, a_tma) @ nvdsl.WGMMAMatrix(b_tile, b_tma)
            first, second = nvdsl.WGMMAAccumulator(64, 64), nvdsl.WGMMAAccumulator(64, 64)
            first.accumulate(product, in_flight=1)
            if second_under_a_branch:
                with nvdsl.when(ctx.thread_id.x < 128):
                    second.accumulate(product, in_flight=2)
                    second.store(d)
                first.store(c)
                return
            with nvdsl.wgmma_group(in_flight=2):
                second += product
            first.store(c)
            second.store(d)
        kernel()
    return two


def test_a_store_waits_for_its_own_product_only(backend):
    """An accumulator's store waits until its last product has retired, and no longer: where it and the later
    groups were committed in the straight-line code being traced, ``wgmma.wait_group`` leaves those running
    (a backward's dQ part is stored while dK's product runs); a group whose bound is already met commits
    without a wait."""
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal((64, 64)).astype(np.float16) for _ in range(2))
    c, d = np.zeros((64, 64), np.float32), np.zeros((64, 64), np.float32)
    kernel = two_products_then_stores()
    ptx = kernel.compile(a, b, c, d).ptx
    second_commit = [m.end() for m in re.finditer(r"wgmma.commit_group.sync.aligned;", ptx)][1]
    waits = re.findall(r"wgmma.wait_group.sync.aligned\s+(\d);", ptx[second_commit:])
    assert waits == ["1", "0"]          # C's store leaves D's product running; D's waits for it
    kernel(a, b, c, d)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    bound = 64 * np.finfo(np.float32).eps * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
    assert np.all(np.abs(c - expected) <= bound) and np.all(np.abs(d - expected) <= bound)


def test_a_store_after_a_product_under_a_branch_waits_for_every_group():
    """A group committed under a branch may not have run, so it does not count among the groups a store may leave
    running: the store of the product before it (after the branch) waits for all (``wait_group 0``), not for all
    but one, which would leave that product running where the branch was not taken."""
    rng = np.random.default_rng(6)
    a, b = (rng.standard_normal((64, 64)).astype(np.float16) for _ in range(2))
    c, d = np.zeros((64, 64), np.float32), np.zeros((64, 64), np.float32)
    kernel = two_products_then_stores(second_under_a_branch=True)
    ptx = kernel.compile(a, b, c, d).ptx
    second_commit = [m.end() for m in re.finditer(r"wgmma.commit_group.sync.aligned;", ptx)][1]
    waits = re.findall(r"wgmma.wait_group.sync.aligned\s+(\d);", ptx[second_commit:])
    assert waits[-2:] == ["0", "0"]         # D's store, then C's (a wait of 1 there would leave C's product running)
    kernel(a, b, c, d)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    bound = 64 * np.finfo(np.float32).eps * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
    assert np.all(np.abs(c - expected) <= bound) and np.all(np.abs(d - expected) <= bound)


def test_warpgroups_take_turns_with_arrive_and_sync(backend):
    """Named barrier 10 + i is warpgroup i's turn: it waits there (sync) and the other opens it (arrive)."""
    @nvdsl.mlir_func
    def turns(order):
        counter = nvdsl.zeros((1,), nvdsl.int32)

        @nvdsl.gpu_launch(grid=1, block=256)
        def kernel(ctx):
            for i in (0, 1):
                with nvdsl.Warpgroup(ctx, 128 * i) as wg:
                    if i == 1:
                        ctx.arrive_threads(256, barrier=10)
                    for step in range(3):
                        ctx.sync_threads(256, barrier=10 + i)
                        with nvdsl.when(wg.thread_index.eq(0)):
                            order[2 * step + i] = counter.atomic_add(0, 1)
                        if not (i == 1 and step == 2):      # the last turn opens nothing
                            ctx.arrive_threads(256, barrier=11 - i)
        kernel()

    order = np.full(6, -1, np.int32)
    turns(order)
    assert order.tolist() == [0, 1, 2, 3, 4, 5]
    with pytest.raises(nvdsl.TraceError, match="arrive_threads"):
        @nvdsl.mlir_func
        def bad(order):
            @nvdsl.gpu_launch(grid=1, block=128)
            def kernel(ctx):
                ctx.arrive_threads(100, barrier=10)
            kernel()
        bad.trace(order)

"""Hopper primitives: Mbarriers and TMA. IR/PTX/SASS checks and misuse errors on CPU; round trips on the GPU."""

import os
import re
import sys

import numpy as np
import pytest

import nvdsl
from nvdsl.compiler.toolchain import find_tool
from nvdsl.signature import TensorMapSpec
from nvdsl.testing import requires_gpu, sass_opcodes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tutorials"))
import ch2_tma  # noqa: E402


def assert_gemm_matches(run, a, b, c):
    """Run ``run(a, b, c)`` on NaN-filled ``c`` and compare with a float64 product (relative error < 1e-3)."""
    import torch
    c.fill_(float("nan"))
    run(a, b, c)
    torch.cuda.synchronize()
    reference = a.double() @ b.double()
    assert not torch.isnan(c).any(), "some outputs were never written"
    assert (torch.linalg.norm(c.double() - reference) / torch.linalg.norm(reference)).item() < 1e-3


def round_trip(box, swizzle):
    """A kernel that TMA-loads box tiles of ``a`` into shared memory and TMA-stores them into ``out``."""
    tile_bytes = box[0] * box[1] * 2

    @nvdsl.mlir_func
    def copy(a, out):
        load = nvdsl.TMA(a, box=box, swizzle=swizzle)
        store = nvdsl.TMA(out, box=box, swizzle=swizzle)

        @nvdsl.gpu_launch(grid=(a.shape[1] // box[1], a.shape[0] // box[0]), block=128, smem=tile_bytes)
        def kernel(ctx):
            tile = ctx.dynamic_shared(box, nvdsl.float16, align=1024)
            bar = nvdsl.Mbarriers(1)[0]
            leader = ctx.thread_id.x.eq(0)
            bar.init(1, predicate=leader)
            ctx.sync_threads()
            coords = (ctx.block_id.y * box[0], ctx.block_id.x * box[1])
            bar.arrive(tile_bytes, predicate=leader)
            load.load(tile, bar, coords, predicate=leader)
            bar.try_wait(0)
            store.store(tile, coords, predicate=leader)
        kernel()
    return copy


def test_ch2_lowers_to_tma_and_mbarrier_instructions():
    a = np.zeros((256, 192), np.float16)
    compiled = ch2_tma.double_by_tiles.compile(a, a.copy())
    for instruction in ("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
                        "mbarrier.try_wait.parity.shared.b64", "mbarrier.init.shared.b64",
                        "mbarrier.arrive.expect_tx.shared.b64", "prefetch.tensormap"):
        assert instruction in compiled.ptx
    assert ".extern .shared .align 1024 .b8 __dynamic_shmem__0[];" in compiled.ptx
    launch, = compiled.module.plan.launches
    assert launch.params[0] == TensorMapSpec(arg=0, box=(64, 64))
    if compiled.cubin is not None and find_tool("nvdisasm"):
        assert {"UTMALDG", "SYNCS"} <= sass_opcodes(compiled.sass())
        assert compiled.resources["double_by_tiles_kernel"].spill_stores == 0


def test_tma_store_commits_and_waits_and_marks_the_array_written():
    a = np.zeros((128, 128), np.float16)
    copy = round_trip((64, 64), 128)
    compiled = copy.compile(a, a.copy())
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in compiled.ptx
    assert "cp.async.bulk.commit_group" in compiled.ptx
    assert re.search(r"cp.async.bulk.wait_group.read\s+0;", compiled.ptx)
    assert compiled.trace.written == frozenset({1})
    assert "swizzle = swizzle_128b" in compiled.trace.mlir


@pytest.mark.parametrize("shape, box, swizzle, words", [
    ((512, 512), (300, 64), 0, "outside 1..256"),
    ((128, 128), (64, 64), 64, "wider than the 64-byte swizzle span"),
    ((128, 128), (64, 4), 0, "multiple of 16 bytes"),
    ((128, 12), (64, 8), 0, "TMA needs multiples of 16"),
    ((128, 128), (64,), 0, "has 1 dimensions but the array has 2"),
    ((128, 128), (64, 64), 48, "swizzle=48"),
])
def test_tma_rules_are_checked_while_tracing(shape, box, swizzle, words):
    @nvdsl.mlir_func
    def host(a):
        nvdsl.TMA(a, box=box, swizzle=swizzle)
    with pytest.raises(nvdsl.TraceError) as info:
        host.trace(np.zeros(shape, np.float16))
    assert info.value.code == "bad-tma" and words in str(info.value)
    assert info.value.loc.filename == __file__


def test_tma_misuse_is_reported():
    @nvdsl.mlir_func
    def in_kernel(a):
        @nvdsl.gpu_launch(grid=1, block=32)
        def kernel(ctx):
            nvdsl.TMA(a, box=(64, 64))
        kernel()
    with pytest.raises(nvdsl.TraceError, match="host function"):
        in_kernel.trace(np.zeros((64, 64), np.float16))

    @nvdsl.mlir_func
    def wrong_tile(a):
        tma = nvdsl.TMA(a, box=(64, 64))

        @nvdsl.gpu_launch(grid=1, block=32, smem=64 * 32 * 2)
        def kernel(ctx):
            bar = nvdsl.Mbarriers(1)[0]
            tma.load(ctx.dynamic_shared((64, 32), nvdsl.float16), bar, (0, 0))
        kernel()
    with pytest.raises(nvdsl.TraceError, match=r"float16\[64, 32\] but the descriptor's box is float16\[64, 64\]"):
        wrong_tile.trace(np.zeros((64, 64), np.float16))


def test_mbarrier_misuse_is_reported():
    def trace(body):
        @nvdsl.mlir_func
        def host(a):
            @nvdsl.gpu_launch(grid=1, block=32)
            def kernel(ctx):
                body(ctx)
            kernel()
        host.trace(np.zeros(4, np.float32))
    with pytest.raises(nvdsl.TraceError, match="positive Python int"):
        trace(lambda ctx: nvdsl.Mbarriers(0))
    with pytest.raises(nvdsl.TraceError, match="outside 0..1"):
        trace(lambda ctx: nvdsl.Mbarriers(2)[2])
    with pytest.raises(nvdsl.TraceError, match="predicate"):
        trace(lambda ctx: nvdsl.Mbarriers(1)[0].init(1, predicate=True))


@requires_gpu
@pytest.mark.parametrize("box, swizzle", [((64, 64), 0), ((32, 16), 32), ((64, 32), 64), ((64, 64), 128)])
def test_tma_load_then_store_is_the_identity_for_every_swizzle(box, swizzle):
    a = np.random.default_rng(3).standard_normal((256, 128)).astype(np.float16)
    out = np.zeros_like(a)
    round_trip(box, swizzle)(a, out)
    np.testing.assert_array_equal(out, a)


@requires_gpu
def test_tma_on_device_arrays_and_a_misaligned_one():
    torch = pytest.importorskip("torch")
    copy = round_trip((64, 64), 128)
    a = torch.randn(128, 128, device="cuda").half()
    out = torch.zeros_like(a)
    copy(a, out)
    torch.cuda.synchronize()
    assert torch.equal(out, a)
    storage = torch.zeros(128 * 128 + 8, device="cuda").half()
    shifted = storage[8:].view(128, 128)        # 16 bytes in: still aligned
    copy(a, shifted)
    torch.cuda.synchronize()
    assert torch.equal(shifted, a)
    misaligned = storage[1:1 + 128 * 128].view(128, 128)
    with pytest.raises(nvdsl.ArgumentError) as info:
        copy(a, misaligned)
    assert info.value.code == "misaligned" and "TMA" in str(info.value)


import ch3_gemm_single_tile  # noqa: E402


def k_loop_gemm(k_total, dtype=nvdsl.float16, b_k_major=False):
    """One CTA, C (128x128) = A (128xK) @ B, K in 64-wide steps: load, wait, multiply (no pipelining).

    B is (K, 128) N-major, or with ``b_k_major`` stored transposed as (128, K).
    """
    m, n, kt = 128, 128, 64

    @nvdsl.mlir_func
    def gemm(a, b, c):
        a_tma = nvdsl.TMA(a, box=(m, kt), swizzle=128)
        b_tma = nvdsl.TMA(b, box=(n, kt) if b_k_major else (kt, 64), swizzle=128)
        a_bytes, b_bytes = m * kt * 2, kt * n * 2

        @nvdsl.gpu_launch(grid=1, block=128, smem=a_bytes + b_bytes)
        def kernel(ctx):
            a_tile = ctx.dynamic_shared((m, kt), dtype, align=1024)
            b_tile = ctx.dynamic_shared((n, kt) if b_k_major else (kt, n), dtype, align=1024)
            halves = [ctx.dynamic_shared((kt, 64), dtype, offset=a_bytes + h * kt * 64 * 2) for h in (0, 1)]
            bar = nvdsl.Mbarriers(1)[0]
            leader = ctx.thread_id.x.eq(0)
            bar.init(1, predicate=leader)
            ctx.sync_threads()

            @nvdsl.fori(0, k_total // kt, carry=nvdsl.WGMMAAccumulator(m, n))
            def acc(step, acc):
                k0 = step * kt
                bar.arrive(a_bytes + b_bytes, predicate=leader)
                a_tma.load(a_tile, bar, (0, k0), predicate=leader)
                if b_k_major:
                    b_tma.load(b_tile, bar, (0, k0), predicate=leader)
                else:
                    for h in (0, 1):
                        b_tma.load(halves[h], bar, (k0, h * 64), predicate=leader)
                bar.try_wait(step)                    # the phase flips every step
                acc += nvdsl.WGMMAMatrix(a_tile, a_tma) @ nvdsl.WGMMAMatrix(b_tile, b_tma, transposed=b_k_major)
                ctx.sync_threads()                    # everyone is done with the tiles before the next load
                return acc
            acc.store(c)
        kernel()
    return gemm


def test_ch3_lowers_to_wgmma_and_hgmma_without_spills():
    a, b = np.zeros((128, 64), np.float16), np.zeros((64, 128), np.float16)
    compiled = ch3_gemm_single_tile.gemm_tile.compile(a, b, np.zeros((128, 128), np.float32))
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16" in compiled.ptx
    assert "wgmma.fence.sync.aligned" in compiled.ptx and "wgmma.wait_group.sync.aligned" in compiled.ptx
    if compiled.cubin is not None:
        assert compiled.resources["gemm_tile_kernel"].spill_stores == 0
        if find_tool("nvdisasm"):
            assert {"HGMMA", "UTMALDG", "SYNCS"} <= sass_opcodes(compiled.sass())


def test_k_major_b_is_refused_for_now():
    with pytest.raises(nvdsl.TraceError, match="K-major B"):
        k_loop_gemm(128, b_k_major=True).trace(np.zeros((128, 128), np.float16), np.zeros((128, 128), np.float16),
                                               np.zeros((128, 128), np.float32))


def test_accumulator_carried_through_a_k_loop_compiles():
    ptx = k_loop_gemm(256).compile(np.zeros((128, 256), np.float16), np.zeros((256, 128), np.float16),
                                   np.zeros((128, 128), np.float32)).ptx
    # one 64-wide K step is 2 (M) x 4 (K) instructions; LLVM may unroll the 4-step loop
    assert ptx.count("wgmma.mma_async") % 8 == 0 and ptx.count("wgmma.mma_async") > 0


@pytest.mark.parametrize("m, n, words", [(96, 128, "multiple of 64"), (128, 264, "between 8 and 256"),
                                         (128, 12, "multiple of 8")])
def test_wgmma_shapes_are_checked(m, n, words):
    @nvdsl.mlir_func
    def host(a):
        @nvdsl.gpu_launch(grid=1, block=128)
        def kernel(ctx):
            nvdsl.WGMMAAccumulator(m, n)
        kernel()
    with pytest.raises(nvdsl.TraceError) as info:
        host.trace(np.zeros(4, np.float32))
    assert info.value.code == "bad-wgmma-shape" and words in str(info.value)


def test_warpgroup_checks_and_register_reallocation():
    @nvdsl.mlir_func
    def host(a):
        @nvdsl.gpu_launch(grid=1, block=384)
        def kernel(ctx):
            with nvdsl.Warpgroup(ctx, 0, register_size=40):
                a[0] = 1.0
            with nvdsl.Warpgroup(ctx, 128, register_size=232):
                a[1] = 2.0
        kernel()
    ptx = host.compile(np.zeros(4, np.float32)).ptx
    assert re.search(r"setmaxnreg.dec.sync.aligned.u32\s+40;", ptx)
    assert re.search(r"setmaxnreg.inc.sync.aligned.u32\s+232;", ptx)

    for block, primary, words in [(96, 0, "multiple of 128"), (256, 64, "primary_thread=64"),
                                  (256, 256, "primary_thread=256")]:
        @nvdsl.mlir_func
        def bad(a):
            @nvdsl.gpu_launch(grid=1, block=block)
            def kernel(ctx):
                with nvdsl.Warpgroup(ctx, primary):
                    pass
            kernel()
        with pytest.raises(nvdsl.TraceError, match=words):
            bad.trace(np.zeros(4, np.float32))


def test_exceptions_inside_a_warpgroup_propagate():
    @nvdsl.mlir_func
    def host(a):
        @nvdsl.gpu_launch(grid=1, block=128)
        def kernel(ctx):
            with nvdsl.Warpgroup(ctx, 0):
                raise KeyError("from the body")
        kernel()
    with pytest.raises(KeyError, match="from the body"):
        host.trace(np.zeros(4, np.float32))


@requires_gpu
@pytest.mark.parametrize("k_total, dtype", [(64, "float16"), (512, "float16"), (512, "bfloat16"), (4096, "float16")])
def test_k_loop_gemm_matches_a_float32_reference(k_total, dtype):
    torch = pytest.importorskip("torch")
    t = getattr(torch, dtype)
    a = torch.randn(128, k_total, device="cuda").to(t)
    b = torch.randn(k_total, 128, device="cuda").to(t)
    assert_gemm_matches(k_loop_gemm(k_total, getattr(nvdsl, dtype)), a, b, torch.empty(128, 128, device="cuda"))


import ch4_gemm_multistage  # noqa: E402


def test_ch4_pipelines_loads_ahead_of_the_tensor_cores_without_spills():
    gemm = ch4_gemm_multistage.make_gemm(num_stages=4)
    compiled = gemm.compile(np.zeros((256, 1024), np.float16), np.zeros((1024, 256), np.float16),
                            np.zeros((256, 256), np.float32))
    launch, = compiled.module.plan.launches
    assert launch.grid == (2, 2, 1) and launch.smem == 4 * (128 * 64 + 64 * 128) * 2
    assert compiled.ptx.count("mbarrier.init.shared.b64") == 4
    if compiled.cubin is not None:
        assert compiled.resources["gemm_kernel"].spill_stores == 0
        if find_tool("nvdisasm"):
            assert {"HGMMA", "UTMALDG", "SYNCS"} <= sass_opcodes(compiled.sass())


def test_ch4_refuses_shapes_it_cannot_tile():
    with pytest.raises(ValueError, match="multiple of 256"):
        ch4_gemm_multistage.make_gemm(num_stages=4).trace(np.zeros((128, 320), np.float16),
                                                         np.zeros((320, 128), np.float16),
                                                         np.zeros((128, 128), np.float32))


@requires_gpu
@pytest.mark.parametrize("m, n, k, stages, dtype", [(256, 512, 512, 2, "float16"), (1024, 256, 2048, 4, "bfloat16"),
                                                    (2048, 2048, 4096, 4, "float16")])
def test_ch4_matches_a_float32_reference(m, n, k, stages, dtype):
    torch = pytest.importorskip("torch")
    t = getattr(torch, dtype)
    a, b = torch.randn(m, k, device="cuda").to(t), torch.randn(k, n, device="cuda").to(t)
    assert_gemm_matches(ch4_gemm_multistage.make_gemm(stages, getattr(nvdsl, dtype)), a, b,
                        torch.empty(m, n, device="cuda"))


def test_tma_plan_entries_survive_the_disk_cache(tmp_path):
    """A second process reads the plan from disk: its TMA descriptors must come back intact."""
    from nvdsl.compiler.cache import CompileCache
    options = nvdsl.Options(cache_dir=str(tmp_path))
    a = np.zeros((256, 192), np.float16)
    compiled = ch2_tma.double_by_tiles.with_options(**vars(options)).compile(a, a.copy())
    from_disk = CompileCache(str(tmp_path)).get(compiled.module.key, compiled.trace.mlir)
    assert from_disk is not None and from_disk.plan == compiled.module.plan
    assert isinstance(from_disk.plan.launches[0].params[0], TensorMapSpec)

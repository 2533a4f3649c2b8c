"""Hopper misuse that used to pass silently and fail (or misbehave) on the GPU: checked while tracing."""

import re
import warnings

import numpy as np
import pytest

import nvdsl
from nvdsl.compiler.toolchain import find_tool

needs_ptxas = pytest.mark.skipif(find_tool("ptxas") is None, reason="ptxas not installed")
F16 = np.zeros((256, 256), np.float16)


def tma_kernel(offset=0, coords=(0, 0), swizzle=128, box=(64, 64)):
    tile_bytes = box[0] * box[1] * 2

    @nvdsl.mlir_func
    def host(a):
        tma = nvdsl.TMA(a, box=box, swizzle=swizzle)

        @nvdsl.gpu_launch(grid=1, block=128, smem=offset + tile_bytes)
        def kernel(ctx):
            tile = ctx.dynamic_shared(box, nvdsl.float16, offset=offset)
            bar = nvdsl.Mbarriers(1)[0]
            leader = ctx.thread_id.x.eq(0)      # one thread initialises, arms and loads (the protocol check)
            bar.init(1, predicate=leader)
            ctx.sync_threads()
            bar.arrive(tile_bytes, predicate=leader)
            tma.load(tile, bar, coords, predicate=leader)
            bar.try_wait(0)
        kernel()
    return host


@pytest.mark.parametrize("swizzle, offset, alignment", [(128, 512, 1024), (64, 256, 512), (0, 16, 128)])
def test_a_tma_tile_at_a_misaligned_shared_offset_is_refused(swizzle, offset, alignment):
    box = (64, swizzle // 2 or 64)
    with pytest.raises(nvdsl.TraceError) as info:
        tma_kernel(offset=offset, swizzle=swizzle, box=box).trace(F16)
    assert info.value.code == "misaligned"
    assert f"aligned to {offset} bytes" in str(info.value) and f"multiple of {alignment}" in str(info.value)
    assert "cp.async.bulk.tensor" in tma_kernel(offset=alignment, swizzle=swizzle, box=box).compile(F16).ptx


@pytest.mark.parametrize("coords", [(256, 0), (0, 256), (-64, 0), (0, 300)])
def test_constant_tma_coordinates_entirely_outside_the_array_are_refused(coords):
    with pytest.raises(nvdsl.TraceError) as info:
        tma_kernel(coords=coords).trace(F16)
    assert info.value.code == "tma-out-of-bounds" and "entirely outside 'a'" in str(info.value)


def test_tma_boxes_that_overhang_the_array_are_legal():
    for coords in ((224, 0), (-32, 200)):
        tma_kernel(coords=coords).trace(F16)


@pytest.mark.parametrize("body, words", [
    (lambda bar: bar.init(0), "the arrival count is 0, outside 1..1048575"),
    (lambda bar: bar.init(1 << 20), "the arrival count is 1048576"),
    (lambda bar: bar.arrive(1 << 20), "tx_bytes is 1048576, outside 0..1048575"),
    (lambda bar: bar.arrive(-8), "tx_bytes is -8"),
])
def test_mbarrier_counts_outside_ptx_limits_are_refused(body, words):
    @nvdsl.mlir_func
    def host(x):
        @nvdsl.gpu_launch(grid=1, block=32)
        def kernel(ctx):
            body(nvdsl.Mbarriers(1)[0])
        kernel()
    with pytest.raises(nvdsl.TraceError) as info:
        host.trace(np.zeros(4, np.float32))
    assert info.value.code == "bad-mbarrier" and words in str(info.value)


def test_mbarrier_counts_at_the_limits_pass():
    @nvdsl.mlir_func
    def host(x):
        @nvdsl.gpu_launch(grid=1, block=32)
        def kernel(ctx):
            bar = nvdsl.Mbarriers(1)[0]
            bar.init((1 << 20) - 1)
            bar.arrive((1 << 20) - 1)
            bar.arrive(0)
        kernel()
    assert "mbarrier.arrive.expect_tx" in host.compile(np.zeros(4, np.float32)).ptx


def wgmma_tile(block=128, options=None):
    @nvdsl.mlir_func(options=options)
    def gemm(a, b, c):
        a_tma, b_tma = nvdsl.TMA(a, box=(64, 64), swizzle=128), nvdsl.TMA(b, box=(64, 64), swizzle=128)

        @nvdsl.gpu_launch(grid=1, block=block, smem=2 * 64 * 64 * 2)
        def kernel(ctx):
            a_tile = ctx.dynamic_shared((64, 64), nvdsl.float16, align=1024)
            b_tile = ctx.dynamic_shared((64, 64), nvdsl.float16, align=1024)
            acc = nvdsl.WGMMAAccumulator(64, 64)
            acc += nvdsl.WGMMAMatrix(a_tile, a_tma) @ nvdsl.WGMMAMatrix(b_tile, b_tma)
            acc.store(c)
        kernel()
    return gemm


def test_wgmma_from_a_block_smaller_than_a_warpgroup_is_refused():
    args = (np.zeros((64, 64), np.float16), np.zeros((64, 64), np.float16), np.zeros((64, 64), np.float32))
    for block in (64, 96, 192):
        with pytest.raises(nvdsl.TraceError) as info:
            wgmma_tile(block).trace(*args)
        assert info.value.code == "bad-wgmma" and f"the block has {block}" in str(info.value)
    assert "wgmma.mma_async" in wgmma_tile(256).compile(*args).ptx


def test_wgmma_and_setmaxnreg_name_sm90a_when_the_chip_lacks_it():
    args = (np.zeros((64, 64), np.float16), np.zeros((64, 64), np.float16), np.zeros((64, 64), np.float32))
    with pytest.raises(nvdsl.TraceError) as info:
        wgmma_tile(128, nvdsl.Options(chip="sm_90")).trace(*args)
    assert info.value.code == "needs-sm90a" and "sm_90a" in info.value.hint
    with pytest.raises(nvdsl.TraceError) as info:
        warpgroups(256, (40, 232), options=nvdsl.Options(chip="sm_90")).trace(np.zeros(4, np.float32))
    assert info.value.code == "needs-sm90a"


def warpgroups(block, budgets, increases=None, options=None):
    increases = increases or [None] * len(budgets)

    @nvdsl.mlir_func(options=options)
    def host(a):
        @nvdsl.gpu_launch(grid=1, block=block)
        def kernel(ctx):
            for w, (size, increase) in enumerate(zip(budgets, increases)):
                with nvdsl.Warpgroup(ctx, 128 * w, register_size=size, increase=increase):
                    a[w] = 1.0
        kernel()
    return host


def setmaxnreg(ptx):
    return re.findall(r"\.maxnreg (\d+)", ptx), re.findall(r"setmaxnreg\.(\w+)\.sync\.aligned\.u32\s+(\d+);", ptx)


@needs_ptxas
def test_the_entry_register_count_is_set_and_directions_follow_from_it():
    """A 256-thread producer/consumer kernel: the even share (256) used to make 232 a decrease, and with no
    register count at entry ptxas ignored every setmaxnreg (C7508)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", nvdsl.PtxasWarning)
        compiled = warpgroups(256, (40, 232)).compile(np.zeros(4, np.float32))
    caps, actions = setmaxnreg(compiled.ptx)
    assert caps == ["136"] and sorted(actions) == [("dec", "40"), ("inc", "232")]
    assert compiled.resources["host_kernel"].registers == 136
    # chapter 5's shape: 384 threads at 40, 232, 232 give CUTLASS's 168 at entry
    caps, actions = setmaxnreg(warpgroups(384, (40, 232, 232)).compile(np.zeros(4, np.float32)).ptx)
    assert caps == ["168"] and sorted(actions) == [("dec", "40"), ("inc", "232"), ("inc", "232")]


def test_register_budgets_beyond_the_register_file_are_refused():
    with pytest.raises(nvdsl.TraceError) as info:
        warpgroups(384, (None, 232, 232)).trace(np.zeros(4, np.float32))
    assert info.value.code == "register-budget"
    assert "at least 232" in str(info.value) and "at most 168" in str(info.value)


def test_a_stated_direction_is_kept_or_the_kernel_refused():
    ptx = warpgroups(256, (40, 200)).compile(np.zeros(4, np.float32)).ptx
    assert setmaxnreg(ptx) == (["120"], [("dec", "40"), ("inc", "200")])
    # "200 is a decrease" needs at least 200 at entry; 200 is then already there, so only 40 moves
    ptx = warpgroups(256, (40, 200), increases=(None, False)).compile(np.zeros(4, np.float32)).ptx
    assert setmaxnreg(ptx) == (["200"], [("dec", "40")])
    ptx = warpgroups(256, (112, 64), increases=(True, None)).compile(np.zeros(4, np.float32)).ptx
    assert setmaxnreg(ptx) == (["88"], [("inc", "112"), ("dec", "64")])
    with pytest.raises(nvdsl.TraceError) as info:
        warpgroups(256, (40, 232), increases=(True, None)).trace(np.zeros(4, np.float32))
    assert info.value.code == "register-budget" and "warpgroup 0: 40 (increase)" in str(info.value)
    with pytest.raises(nvdsl.TraceError) as info:
        warpgroups(256, (40, 232), increases=(1, None)).trace(np.zeros(4, np.float32))
    assert info.value.code == "bad-warpgroup"


@needs_ptxas
def test_ptxas_notes_that_change_a_kernel_reach_the_user_as_warnings():
    """A raw setmaxnreg (the escape hatch) without nvdsl's register plan: ptxas ignores it (C7508)."""
    from mlir.dialects import nvvm

    @nvdsl.mlir_func
    def raw(x):
        @nvdsl.gpu_launch(grid=1, block=128)
        def kernel(ctx):
            nvvm.setmaxregister(64, nvvm.SetMaxRegisterAction.decrease)
            x[ctx.thread_id.x] = 1.0
        kernel()
    with pytest.warns(nvdsl.PtxasWarning, match=r"kernel 'raw_kernel' of 'raw': \(C7508\).*'setmaxnreg' ignored"):
        raw.compile(np.zeros(128, np.float32))


def test_a_tile_indexed_plainly_before_a_swizzled_tma_load_lays_it_out_is_refused():
    """Indexing a tile as a row-major array and then filling it with a swizzled TMA load: the earlier indices do
    not reach the elements they name. Refused, naming both lines (after the load, tile[r, c] is element (r, c))."""
    @nvdsl.mlir_func
    def host(a, out):
        tma = nvdsl.TMA(a, box=(64, 64), swizzle=128)

        @nvdsl.gpu_launch(grid=1, block=128, smem=64 * 64 * 2)
        def kernel(ctx):
            tile = ctx.dynamic_shared((64, 64), nvdsl.float16, align=1024)
            out[0] = tile[0, 1]                                             # the plain read
            bar = nvdsl.Mbarriers(1)[0]
            leader = ctx.thread_id.x.eq(0)
            bar.init(1, predicate=leader)
            ctx.sync_threads()
            bar.arrive(64 * 64 * 2, predicate=leader)
            tma.load(tile, bar, (0, 0), predicate=leader)                   # the load that lays the tile out
            bar.try_wait(0)
        kernel()
    with pytest.raises(nvdsl.TraceError) as info:
        host.trace(F16, np.zeros(1, np.float16))
    message = str(info.value)
    assert info.value.code == "tile-layout" and "128-byte swizzled 64 x 64 boxes" in message, message
    assert "# the plain read" in message and "# the load that lays the tile out" in info.value.loc.text, message


def test_a_ring_slot_read_plainly_before_its_producer_is_traced_is_refused():
    """A consumer warpgroup traced before the producer reads its ring slot as a row-major tile; the producer's
    swizzled copies then lay the slot out otherwise: refused at the put, naming the consumer's read."""
    @nvdsl.mlir_func
    def host(a, out):
        tma = nvdsl.TMA(a, box=(64, 64), swizzle=128)

        @nvdsl.gpu_launch(grid=1, block=256)
        def kernel(ctx):
            ring = nvdsl.Aref(ctx, [((64, 64), nvdsl.float16)], depth=2, name="tiles")
            with nvdsl.Warpgroup(ctx, 128):
                with ring.get() as (tile,):
                    out[ctx.thread_id.x] = tile[0, 1]
            with nvdsl.Warpgroup(ctx, 0):
                ring.put((tma, (0, 0)))
        kernel()
    with pytest.raises(nvdsl.TraceError) as info:
        host.trace(F16, np.zeros(256, np.float16))
    assert info.value.code == "tile-layout" and "ring 'tiles''s copies" in str(info.value), str(info.value)


def one_consumer_wide_product():
    """A producer and one consumer whose product is 64 x 256 (the D 256 backward's shape, written by hand)."""
    @nvdsl.mlir_func
    def gemm(a, b, c):
        a_tma, b_tma = nvdsl.TMA(a, box=(64, 64), swizzle=128), nvdsl.TMA(b, box=(256, 64), swizzle=128)

        @nvdsl.gpu_launch(grid=1, block=256, smem=64 * 64 * 2 + 256 * 64 * 2)
        def kernel(ctx):
            a_tile = ctx.dynamic_shared((64, 64), nvdsl.float16, align=1024)
            b_tile = ctx.dynamic_shared((256, 64), nvdsl.float16, offset=64 * 64 * 2, align=1024)
            with nvdsl.Warpgroup(ctx, 0, register_size=40):
                c[0, 0] = 0.0
            with nvdsl.Warpgroup(ctx, 128, register_size=232):
                acc = nvdsl.WGMMAAccumulator(64, 256)
                acc += nvdsl.WGMMAMatrix(a_tile, a_tma) @ nvdsl.WGMMAMatrix(b_tile, b_tma, transposed=True)
                acc.store(c)
        kernel()
    return gemm


WIDE_ARGS = (np.zeros((64, 64), np.float16), np.zeros((256, 64), np.float16), np.zeros((64, 256), np.float32))


@needs_ptxas
def test_the_entry_count_holds_the_widest_product_whatever_the_budgets_average():
    """40 and 232 average 136 at entry; ptxas assembles each wgmma against the entry count, and one of 64 x 256
    (128 accumulator registers a thread) failed with C7602 ("Insufficient registers (152)") until the entry count
    took the product's 160."""
    compiled = one_consumer_wide_product().compile(*WIDE_ARGS)
    caps, actions = setmaxnreg(compiled.ptx)
    assert caps == ["160"] and sorted(actions) == [("dec", "40"), ("inc", "232")]
    assert compiled.resources["gemm_kernel"].registers == 160


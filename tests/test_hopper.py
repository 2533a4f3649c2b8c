"""Hopper primitives: Mbarriers and TMA. IR/PTX/SASS checks and misuse errors on CPU; round trips on the GPU."""

import os
import re
import subprocess
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
def test_ch2_passes():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    result = subprocess.run([sys.executable, os.path.join(ROOT, "tutorials", "ch2_tma.py")], env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("PASS")


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

"""Hopper primitives: Mbarriers and TMA. IR/PTX/SASS checks and misuse errors on CPU; round trips on the GPU."""

import json
import os
import re
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import nvdsl
from helpers import FakeDLPackDeviceArray, load_box
from nvdsl.compiler.toolchain import find_tool
from nvdsl.dtypes import float8_e4m3fn, float8_e5m2
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


def round_trip(box, swizzle, dtype=nvdsl.float16, timeout_ns=None):
    """A kernel that TMA-loads box tiles of ``a`` into shared memory and TMA-stores them into ``out``.

    One block per box of the innermost 3 dimensions (the innermost on grid x); for ranks 4 and 5 the outer
    coordinates stay 0. The arrays' extents are multiples of the box.
    """
    tile_bytes = int(np.prod(box)) * dtype.itemsize

    @nvdsl.mlir_func
    def copy(a, out):
        load = nvdsl.TMA(a, box=box, swizzle=swizzle)
        store = nvdsl.TMA(out, box=box, swizzle=swizzle)

        tiled = range(max(0, len(box) - 3), len(box))

        @nvdsl.gpu_launch(grid=tuple(a.shape[d] // box[d] for d in reversed(tiled)), block=128, smem=tile_bytes)
        def kernel(ctx):
            tile = ctx.dynamic_shared(box, dtype, align=1024)
            bar = nvdsl.Mbarriers(1)[0]
            leader = ctx.thread_id.x.eq(0)
            bar.init(1, predicate=leader)
            ctx.sync_threads()
            blocks = [0] * (len(box) - len(tiled)) + list(ctx.block_id)[:len(tiled)][::-1]  # outermost first
            coords = tuple(b * extent for b, extent in zip(blocks, box))
            bar.arrive(tile_bytes, predicate=leader)
            load.load(tile, bar, coords, predicate=leader)
            bar.try_wait(0, timeout_ns=timeout_ns)
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
    with pytest.raises(nvdsl.TraceError, match=r"shape \[64, 32\] is not made of whole TMA boxes \[64, 64\]"):
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
    misaligned = storage[1:1 + 128 * 128].view(128, 128)     # its own signature, refused when traced
    with pytest.raises(nvdsl.TraceError) as info:
        copy(a, misaligned)
    assert info.value.code == "bad-tma" and "not a multiple of 16 bytes" in str(info.value), str(info.value)


# --- bounded mbarrier waits -------------------------------------------------------------------------

def stuck_wait(timeout_ns, phase=0):
    """Two blocks of 32 threads waiting for ``phase`` of barrier 1, on which nobody arrives (deliberately:
    the static protocol check, which would refuse it before it runs, is off)."""
    @nvdsl.mlir_func(options=nvdsl.Options(protocol_check=False))
    def stuck(out):
        @nvdsl.gpu_launch(grid=2, block=32)
        def kernel(ctx):
            bar = nvdsl.Mbarriers(2)[1]
            bar.init(1, predicate=ctx.thread_id.x.eq(0))
            ctx.sync_threads()
            bar.try_wait(phase, timeout_ns=timeout_ns)
            out[ctx.block_id.x * 32 + ctx.thread_id.x] = 1
        kernel()
    return stuck


def test_a_bounded_wait_polls_try_wait_and_traps_with_a_report():
    compiled = stuck_wait(2_000_000).compile(np.zeros(64, np.int32))
    ptx = compiled.ptx
    assert "mbarrier.try_wait.parity.shared.b64" in ptx and "%globaltimer" in ptx
    assert "trap;" in ptx and "vprintf" in ptx
    assert "LAB_WAIT" not in ptx                     # not the unbounded loop of nvgpu's lowering
    report = re.search(r'gpu.printf "([^"]*)"', compiled.trace.mlir).group(1)
    assert report.startswith("nvdsl: mbarrier wait timed out after 2000000 ns at " + __file__)
    assert "bar.try_wait(phase, timeout_ns=timeout_ns)" in report    # the Python line, with its text
    assert "barrier %lld of Mbarriers(2) never completed phase parity %d" in report
    if find_tool("ptxas"):
        assert compiled.cubin is not None and compiled.resources["stuck_kernel"].spill_stores == 0
        if find_tool("nvdisasm"):
            assert {"SYNCS", "BPT"} <= sass_opcodes(compiled.sass())   # BPT.TRAP


def test_an_unbounded_wait_is_a_try_wait_loop_without_a_suspend_hint():
    arrays = [np.zeros((128, 128), np.float16)] * 2
    compiled = round_trip((64, 64), 128).compile(*arrays)
    ptx = compiled.ptx
    assert re.search(r"mbarrier.try_wait.parity.shared.b64\s+%p\d+, \[[^\]]+\], %r\d+;", ptx)  # no hint operand
    assert "LAB_WAIT" not in ptx and "%globaltimer" not in ptx and "trap;" not in ptx
    if compiled.cubin is not None and find_tool("nvdisasm"):
        # threads can leave a NANOSLEEP one by one, in a loop whose branch nvgpu declares uniform
        assert "NANOSLEEP" not in sass_opcodes(compiled.sass())


def test_a_suspend_hint_uses_nvgpus_wait():
    @nvdsl.mlir_func
    def hinted(out):
        @nvdsl.gpu_launch(grid=1, block=32)
        def kernel(ctx):
            bar = nvdsl.Mbarriers(1)[0]
            bar.init(1, predicate=ctx.thread_id.x.eq(0))
            ctx.sync_threads()
            bar.arrive(0, predicate=ctx.thread_id.x.eq(0))
            bar.try_wait(0, ticks=10_000_000)
            out[ctx.thread_id.x] = 1
        kernel()
    assert "LAB_WAIT" in hinted.compile(np.zeros(32, np.int32)).ptx


def test_a_traced_phase_and_ticks_work_with_a_timeout():
    @nvdsl.mlir_func
    def host(out, phase):
        @nvdsl.gpu_launch(grid=1, block=32)
        def kernel(ctx):
            bar = nvdsl.Mbarriers(1)[0]
            bar.try_wait(phase, ticks=ctx.thread_id.x * 1000, timeout_ns=10**9)
            out[ctx.thread_id.x] = 1
        kernel()
    with pytest.warns(nvdsl.ProtocolCheckWarning, match="runtime scalar argument 'phase'"):
        ptx = host.compile(np.zeros(32, np.int32), np.int64(3)).ptx
    assert "mbarrier.try_wait.parity.shared.b64" in ptx and "trap;" in ptx


@pytest.mark.parametrize("timeout_ns", [0, -5, 1.5, True, "1s", 1 << 63])
def test_bad_timeouts_are_reported(timeout_ns):
    with pytest.raises(nvdsl.TraceError) as info:
        stuck_wait(timeout_ns).trace(np.zeros(64, np.int32))
    assert info.value.code == "bad-timeout" and "timeout_ns" in str(info.value)
    assert info.value.loc.filename == __file__


def test_a_dead_kernel_error_says_the_context_is_lost():
    from cuda.bindings import driver as cu

    from nvdsl.runtime.device import check
    with pytest.raises(nvdsl.CudaError) as info:
        check((cu.CUresult.CUDA_ERROR_LAUNCH_FAILED,), "cuStreamSynchronize")
    assert "timeout_ns" in str(info.value) and "restart the process" in str(info.value)


_STUCK_SCRIPT = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    sys.path[:0] = [sys.argv[1], os.path.dirname(sys.argv[1])]
    from test_hopper import stuck_wait
    import nvdsl
    out = np.zeros(64, np.int32)
    try:
        stuck_wait(int(sys.argv[2]))(out)
        outcome = {"error": None}
    except nvdsl.CudaError as e:
        outcome = {"error": type(e).__name__, "result": e.result, "message": str(e)}
    print("OUTCOME " + json.dumps(outcome), flush=True)
""")


@requires_gpu
def test_a_wait_that_never_completes_fails_with_a_cuda_error_instead_of_hanging():
    # A trap leaves the CUDA context unusable, so the kernel runs in a process of its own.
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        run = subprocess.run([sys.executable, "-c", _STUCK_SCRIPT, here, str(5_000_000)], cwd=here,
                             capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the bounded wait hung; output so far:\n{e.stdout}\n{e.stderr}")
    lines = [line for line in run.stdout.splitlines() if line.startswith("OUTCOME ")]
    assert lines, f"the child died without an outcome (rc {run.returncode}):\n{run.stdout}\n{run.stderr}"
    outcome = json.loads(lines[-1][len("OUTCOME "):])
    assert outcome["error"] is not None, "the kernel finished although nobody arrived on the barrier"
    from nvdsl.runtime.device import _KERNEL_DIED
    assert outcome["result"] in _KERNEL_DIED, outcome     # a trap: LAUNCH_FAILED or ILLEGAL_INSTRUCTION
    assert "restart the process" in outcome["message"]
    reports = [line for line in run.stdout.splitlines() if "mbarrier wait timed out" in line]
    if reports:
        assert "barrier 1 of Mbarriers(2) never completed phase parity 0" in reports[0], reports[0]
    else:  # the driver may drop a trapped kernel's printf buffer; the error above is what is promised
        warnings.warn("the trapped kernel's report did not reach stdout")


@requires_gpu
def test_a_bounded_wait_that_completes_changes_nothing():
    a = np.random.default_rng(4).standard_normal((256, 128)).astype(np.float16)
    out = np.zeros_like(a)
    round_trip((64, 64), 128, timeout_ns=10**9)(a, out)
    np.testing.assert_array_equal(out, a)
    out = np.zeros(64, np.int32)
    stuck_wait(10**9, phase=1)(out)       # a fresh barrier's "preceding phase" (parity 1) counts as complete
    assert (out == 1).all()


# --- TMA of every rank, batched 3-D boxes ------------------------------------------------------------

@pytest.mark.parametrize("shape, box, swizzle", [
    ((512,), (64,), 0), ((256, 128), (64, 64), 128), ((3, 128, 64), (1, 64, 64), 128),
    ((2, 3, 64, 64), (1, 1, 64, 32), 64), ((2, 2, 2, 32, 64), (1, 1, 2, 16, 64), 128)])
def test_tma_of_every_rank_lowers_to_bulk_tensor_copies_of_that_rank(shape, box, swizzle):
    a = np.zeros(shape, np.float16)
    compiled = round_trip(box, swizzle).compile(a, a.copy())
    rank = len(shape)
    assert f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes" in compiled.ptx
    assert f"cp.async.bulk.tensor.{rank}d.global.shared::cta" in compiled.ptx
    launch, = compiled.module.plan.launches
    assert launch.params[0] == TensorMapSpec(arg=1, box=box, swizzle=swizzle)
    if find_tool("ptxas"):
        assert compiled.cubin is not None


def test_tma_3d_coordinates_reach_nvgpu_innermost_first():
    @nvdsl.mlir_func
    def host(a):
        tma = nvdsl.TMA(a, box=(1, 64, 64), swizzle=128)

        @nvdsl.gpu_launch(grid=1, block=128, smem=64 * 64 * 2)
        def kernel(ctx):
            tile = ctx.dynamic_shared((1, 64, 64), nvdsl.float16, align=1024)
            bar = nvdsl.Mbarriers(1)[0]
            tma.load(tile, bar, (2, 64, 0))           # batch 2, row 64, column 0
        kernel()
    mlir = host.trace(np.zeros((3, 128, 64), np.float16)).mlir
    constants = dict(re.findall(r"(%c\w*) = arith.constant (\d+) : index", mlir))
    coords = re.search(r"nvgpu.tma.async.load %\w+\[([^\]]*)\]", mlir).group(1).split(", ")
    assert [int(constants[c]) for c in coords] == [0, 64, 2]


@requires_gpu
@pytest.mark.parametrize("box, swizzle", [((1, 64, 64), 128), ((3, 16, 32), 64), ((3, 32, 64), 0)])
def test_tma_3d_boxes_load_then_store_is_the_identity(box, swizzle):
    a = np.random.default_rng(6).standard_normal((3, 128, 64)).astype(np.float16)
    out = np.zeros_like(a)
    round_trip(box, swizzle)(a, out)
    np.testing.assert_array_equal(out, a)


# --- float8 through TMA ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype, dl_code, mlir_name", [(float8_e4m3fn, 10, "f8E4M3FN"), (float8_e5m2, 12, "f8E5M2")])
def test_float8_arrays_trace_and_move_by_tma(dtype, dl_code, mlir_name):
    a = FakeDLPackDeviceArray((128, 256), dl_code, 8)
    out = FakeDLPackDeviceArray((128, 256), dl_code, 8, pointer=0x7F0000100000)
    compiled = round_trip((64, 128), 128, dtype).compile(a, out)
    assert [s.dtype for s in compiled.trace.specs] == [dtype, dtype]
    assert f"memref<64x128x{mlir_name}, #gpu.address_space<workgroup>>" in compiled.trace.mlir
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes" in compiled.ptx
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in compiled.ptx
    assert "mbarrier.arrive.expect_tx.shared.b64" in compiled.ptx
    if find_tool("ptxas"):
        assert compiled.cubin is not None


def test_float8_tma_rules_count_one_byte_elements_and_refuse_nan_fill():
    from nvdsl.target import TMA_DATA_TYPES, rule_violations
    assert TMA_DATA_TYPES[float8_e4m3fn] == TMA_DATA_TYPES[float8_e5m2] == "UINT8"
    assert rule_violations(TensorMapSpec(arg=0, box=(64, 128), swizzle=128), float8_e4m3fn, (128, 256)) == []
    assert "wider than the 64-byte swizzle span" in " ".join(
        rule_violations(TensorMapSpec(arg=0, box=(64, 128), swizzle=64), float8_e4m3fn, (128, 256)))

    @nvdsl.mlir_func
    def host(a):
        nvdsl.TMA(a, box=(64, 128), oob="nan")
    with pytest.raises(nvdsl.TraceError) as info:
        host.trace(FakeDLPackDeviceArray((128, 256), 10, 8))
    assert info.value.code == "bad-tma" and "oob='nan'" in str(info.value)


@requires_gpu
@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2"])
def test_float8_tensors_round_trip_through_tma_bit_for_bit(name):
    torch = pytest.importorskip("torch")
    if not hasattr(torch, name):
        pytest.skip(f"this torch has no {name}")
    bits = torch.randint(0, 256, (128, 256), dtype=torch.uint8, device="cuda")
    a = bits.view(getattr(torch, name))       # every byte pattern, NaNs included
    out = torch.zeros_like(bits).view(a.dtype)
    round_trip((64, 128), 128, getattr(nvdsl.dtypes, name))(a, out)
    torch.cuda.synchronize()
    assert torch.equal(out.view(torch.uint8), bits)


@requires_gpu
def test_float8_dlpack_arrays_round_trip_through_tma():
    torch = pytest.importorskip("torch")
    from helpers import DLPackOnly
    if not hasattr(torch, "float8_e4m3fn"):
        pytest.skip("this torch has no float8_e4m3fn")
    bits = torch.randint(0, 256, (128, 256), dtype=torch.uint8, device="cuda")
    a, out = bits.view(torch.float8_e4m3fn), torch.zeros_like(bits).view(torch.float8_e4m3fn)
    try:
        a.__dlpack__()
    except Exception as e:  # older torch exports no float8 through DLPack
        pytest.skip(f"torch cannot export float8 through DLPack: {e}")
    round_trip((64, 128), 128, float8_e4m3fn)(DLPackOnly(a), DLPackOnly(out))
    torch.cuda.synchronize()
    assert torch.equal(out.view(torch.uint8), bits)


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


def test_k_major_b_is_issued_without_the_transpose_flag():
    ptx = k_loop_gemm(128, b_k_major=True).compile(np.zeros((128, 128), np.float16), np.zeros((128, 128), np.float16),
                                                   np.zeros((128, 128), np.float32)).ptx
    # operands: ..., scale-d, imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b
    flags = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n128k16\.f32\.f16\.f16 \{[^}]*\}, %rd\d+, %rd\d+, "
                       r"p, 1,\s+1, (\d),\s+(\d);", ptx)
    assert flags and set(flags) == {("0", "0")}
    n_major = k_loop_gemm(128).compile(np.zeros((128, 128), np.float16), np.zeros((128, 128), np.float16),
                                       np.zeros((128, 128), np.float32)).ptx
    assert re.search(r"p, 1,\s+1, 0,\s+1;", n_major)


def test_operand_tiles_that_wgmma_cannot_address_are_refused():
    def product(b_shape, box, swizzle):
        @nvdsl.mlir_func
        def host(a, b):
            a_tma = nvdsl.TMA(a, box=(64, 64), swizzle=128)
            b_tma = nvdsl.TMA(b, box=box, swizzle=swizzle)

            @nvdsl.gpu_launch(grid=1, block=128, smem=(64 * 64 + b_shape[0] * b_shape[1]) * 2)
            def kernel(ctx):
                a_tile = ctx.dynamic_shared((64, 64), nvdsl.float16, align=1024)
                b_tile = ctx.dynamic_shared(b_shape, nvdsl.float16, align=1024)
                acc = nvdsl.WGMMAAccumulator(64, b_shape[0])
                acc += nvdsl.WGMMAMatrix(a_tile, a_tma) @ nvdsl.WGMMAMatrix(b_tile, b_tma, transposed=True)
            kernel()
        with pytest.raises(nvdsl.TraceError) as info:
            host.trace(np.zeros((64, 64), np.float16), np.zeros(b_shape, np.float16))
        return info.value
    # rows of 16 values in a 64-byte swizzle: the boxes are narrower than the rows wgmma reads
    error = product((64, 64), (64, 16), 64)
    assert error.code == "bad-wgmma-shape" and "64-byte swizzled rows" in str(error)
    # K-major B of 2 x 2 boxes: a k16 step's 128 rows of N are not one after the other
    error = product((128, 64), (64, 32), 64)
    assert error.code == "bad-wgmma-shape" and "all 128 N rows" in str(error)


def ones_row_sums(dtype, fence=True):
    """Y (128 x 8) = A (128 x 64) @ ones: a tile of ones the threads write (no TMA loads it), read by wgmma as
    a K-major B through ``swizzle=``; every column of Y holds A's row sums."""
    m, kt = 128, 64

    @nvdsl.mlir_func
    def row_sums(a, y):
        a_tma = nvdsl.TMA(a, box=(m, kt), swizzle=128)

        @nvdsl.gpu_launch(grid=1, block=128, smem=m * kt * 2 + 8 * kt * 2)
        def kernel(ctx):
            a_tile = ctx.dynamic_shared((m, kt), dtype, align=1024)
            ones = ctx.dynamic_shared((8, kt), dtype, align=1024)
            for i in range(0, 8 * kt, 128):
                ones.flatten()[ctx.thread_id.x + i] = nvdsl.constant(1.0, dtype)
            if fence:
                nvdsl.fence_shared_to_async()
            bar = nvdsl.Mbarriers(1)[0]
            leader = ctx.thread_id.x.eq(0)
            bar.init(1, predicate=leader)
            ctx.sync_threads()
            bar.arrive(m * kt * 2, predicate=leader)
            a_tma.load(a_tile, bar, (0, 0), predicate=leader)
            bar.try_wait(0)
            acc = nvdsl.WGMMAAccumulator(m, 8)
            acc += nvdsl.WGMMAMatrix(a_tile, a_tma) @ nvdsl.WGMMAMatrix(ones, swizzle=128, transposed=True)
            acc.store(y)
        kernel()
    return row_sums


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_tile_written_by_threads_is_a_wgmma_operand_through_its_swizzle(dtype):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    numpy_type = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}[dtype]
    a = np.random.default_rng(1).standard_normal((128, 64)).astype(numpy_type)
    y = np.full((128, 8), np.nan, np.float32)
    fn = ones_row_sums(getattr(nvdsl, dtype))
    short = {"float16": "f16", "bfloat16": "bf16"}[dtype]
    assert f"wgmma.mma_async.sync.aligned.m64n8k16.f32.{short}.{short}" in fn.compile(a, y).ptx
    fn.with_options(backend="interpret")(a, y)
    np.testing.assert_allclose(y, np.repeat(a.astype(np.float64).sum(axis=1)[:, None], 8, axis=1), rtol=1e-5,
                               atol=1e-4)
    with pytest.raises(nvdsl.KernelFault, match="missing-proxy-fence"):     # the threads' stores need the fence
        ones_row_sums(getattr(nvdsl, dtype), fence=False).with_options(backend="interpret", protocol_check=False)(a, y)


def test_a_wgmma_operand_takes_a_descriptor_or_a_swizzle():
    @nvdsl.mlir_func
    def host(a):
        a_tma = nvdsl.TMA(a, box=(64, 64), swizzle=128)

        @nvdsl.gpu_launch(grid=1, block=128, smem=64 * 64 * 2)
        def kernel(ctx):
            tile = ctx.dynamic_shared((64, 64), nvdsl.float16, align=1024)
            nvdsl.WGMMAMatrix(tile, a_tma, swizzle=128)
        kernel()
    with pytest.raises(nvdsl.TraceError, match="either the TMA descriptor") as info:
        host.trace(np.zeros((64, 64), np.float16))
    assert info.value.code == "bad-wgmma"


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


@requires_gpu
@pytest.mark.parametrize("k_total, dtype", [(64, "float16"), (512, "float16"), (1024, "bfloat16")])
def test_k_major_b_gemm_matches_a_float32_reference(k_total, dtype):
    """B stored (N, K), as a linear layer's weight: C = A @ B.T."""
    torch = pytest.importorskip("torch")
    t = getattr(torch, dtype)
    a = torch.randn(128, k_total, device="cuda").to(t)
    b_nk = torch.randn(128, k_total, device="cuda").to(t)
    c = torch.empty(128, 128, device="cuda")
    gemm = k_loop_gemm(k_total, getattr(nvdsl, dtype), b_k_major=True)
    assert_gemm_matches(lambda a, b, c: gemm(a, b_nk, c), a, b_nk.t(), c)


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


def test_named_barriers_across_roles_are_the_non_aligned_form():
    """Threads of several Warpgroup bodies meeting at one named barrier execute different instructions:
    PTX's bar.sync (barrier.sync.aligned) forbids that (synccheck: "divergent thread(s) in block"), so
    sync_threads(threads, ...) emits barrier.sync; a warpgroup's own barrier stays bar.sync."""
    @nvdsl.mlir_func
    def host(x):
        @nvdsl.gpu_launch(grid=1, block=256)
        def kernel(ctx):
            for i in range(2):
                with nvdsl.Warpgroup(ctx, 128 * i) as wg:
                    wg.sync()
                    ctx.sync_threads(256, barrier=9)
            x[ctx.thread_id.x] = 1.0
        kernel()
    ptx = host.compile(np.zeros(256, np.float32)).ptx
    assert ptx.count("barrier.sync ") == 2 and "bar.sync \t1, 128;" in ptx and "bar.sync \t2, 128;" in ptx


def m_major_a_product(k, m, n):
    """One wgmma product of A given M-major: the (K, M) tile x read as x.T."""
    @nvdsl.mlir_func
    def gemm_tn(a, b, c):
        a_tma, b_tma = nvdsl.TMA(a, box=(k, 64), swizzle=128), nvdsl.TMA(b, box=(k, 64), swizzle=128)

        @nvdsl.gpu_launch(grid=1, block=128, smem=k * (m + n) * 2)
        def kernel(ctx):
            a_tile = load_box(ctx, a_tma, (0, 0), (k, m))
            b_tile = load_box(ctx, b_tma, (0, 0), (k, n))
            acc = nvdsl.WGMMAAccumulator(m, n)
            acc += nvdsl.WGMMAMatrix(a_tile, a_tma, transposed=True) @ nvdsl.WGMMAMatrix(b_tile, b_tma)
            acc.store(c)
        kernel()
    return gemm_tn


@pytest.mark.parametrize("k, m, n", [(64, 64, 64), (32, 128, 128), (16, 192, 64)])
def test_a_is_read_m_major_from_its_transposed_tile(k, m, n):
    """``WGMMAMatrix(x_tile, transposed=True)`` as A: the (K, M) tile's transpose, each 64 rows of M one box of
    all K rows (the wgmma's A descriptor M-major, tnspA set). Small integers: exact in float32 in any order."""
    rng = np.random.default_rng(k + m)
    a, b = (rng.integers(-3, 4, shape).astype(np.float16) for shape in ((k, m), (k, n)))
    c = np.zeros((m, n), np.float32)
    gemm = m_major_a_product(k, m, n)
    gemm(a, b, c)
    np.testing.assert_array_equal(c, a.astype(np.float64).T @ b.astype(np.float64))   # exact: small integers
    if find_tool("ptxas"):
        ptx = gemm.compile(a, b, c).ptx
        assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16\.f32\.f16\.f16 .*p, 1, +1, 1, +1;", ptx)


@requires_gpu
def test_a_is_read_m_major_on_the_gpu():
    """The same products on the device (the interpreter decodes the descriptors as nvdsl writes them; the tensor
    cores are the judge)."""
    for k, m, n in [(64, 64, 64), (32, 128, 128), (16, 192, 64)]:
        test_a_is_read_m_major_from_its_transposed_tile(k, m, n)


@pytest.mark.parametrize("m", [64, 128])
def test_a_product_staged_in_shared_memory_is_read_transposed_by_the_next(m):
    """FlashAttention's dS staging: S = A @ B (m x 64) stored as float16 into shared memory in the layout a
    thread-written wgmma operand has (``store(..., swizzle=128)``), then read M-major as A of S.T @ C (64 x 64).
    Small integers: S and the result are exact in float16 and float32."""
    @nvdsl.mlir_func
    def two_products(a, b, c, out):
        tmas = [nvdsl.TMA(x, box=(x.shape[0], 64), swizzle=128) for x in (a, b, c)]

        @nvdsl.gpu_launch(grid=1, block=128, smem=(m * 64 * 2) * 3 + 64 * 64 * 2)
        def kernel(ctx):
            a_tile, b_tile, c_tile = (load_box(ctx, t, (0, 0), shape) for t, shape in
                                      zip(tmas, ((m, 64), (64, 64), (m, 64))))
            s_tile = ctx.dynamic_shared((m, 64), nvdsl.float16, align=1024)
            s = nvdsl.WGMMAAccumulator(m, 64)
            s += nvdsl.WGMMAMatrix(a_tile, tmas[0]) @ nvdsl.WGMMAMatrix(b_tile, tmas[1])
            s.store(s_tile, swizzle=128)
            nvdsl.fence_shared_to_async()
            ctx.sync_threads()
            acc = nvdsl.WGMMAAccumulator(64, 64)
            acc += nvdsl.WGMMAMatrix(s_tile, swizzle=128, transposed=True) @ nvdsl.WGMMAMatrix(c_tile, tmas[2])
            acc.store(out)
        kernel()

    rng = np.random.default_rng(m)
    a, b, c = (rng.integers(-1, 2, shape).astype(np.float16) for shape in ((m, 64), (64, 64), (m, 64)))
    out = np.zeros((64, 64), np.float32)
    two_products(a, b, c, out)
    s = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_array_equal(out, s.T @ c.astype(np.float64))     # exact: small integers


@requires_gpu
def test_a_product_staged_in_shared_memory_is_read_transposed_on_the_gpu():
    for m in (64, 128):
        test_a_product_staged_in_shared_memory_is_read_transposed_by_the_next(m)


def test_a_column_block_of_an_n_major_b_is_a_product_operand():
    """``WGMMAMatrix(b_tile, b_tma).columns(64, 128)``: the second 64-column box of a (128, 128) tile loaded as
    boxes of 64 rows, read over all 128 K rows (a warpgroup's share of a product's N). Small integers: exact."""
    @nvdsl.mlir_func
    def half_product(a, b, c):
        a_tma, b_tma = nvdsl.TMA(a, box=(64, 64), swizzle=128), nvdsl.TMA(b, box=(64, 64), swizzle=128)

        @nvdsl.gpu_launch(grid=1, block=128, smem=64 * 128 * 2 + 128 * 128 * 2)
        def kernel(ctx):
            a_tile = load_box(ctx, a_tma, (0, 0), (64, 128))
            b_tile = load_box(ctx, b_tma, (0, 0), (128, 128))
            acc = nvdsl.WGMMAAccumulator(64, 64)
            acc += nvdsl.WGMMAMatrix(a_tile, a_tma) @ nvdsl.WGMMAMatrix(b_tile, b_tma).columns(64, 128)
            acc.store(c)
        kernel()

    rng = np.random.default_rng(3)
    a, b = rng.integers(-2, 3, (64, 128)).astype(np.float16), rng.integers(-2, 3, (128, 128)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    half_product(a, b, c)
    np.testing.assert_array_equal(c, a.astype(np.float64) @ b[:, 64:].astype(np.float64))   # exact: small integers
    with pytest.raises(nvdsl.TraceError) as info:
        @nvdsl.mlir_func
        def unaligned(b):
            b_tma = nvdsl.TMA(b, box=(64, 64), swizzle=128)

            @nvdsl.gpu_launch(grid=1, block=128, smem=128 * 128 * 2)
            def kernel(ctx):
                nvdsl.WGMMAMatrix(load_box(ctx, b_tma, (0, 0), (128, 128)), b_tma).columns(32, 96)
            kernel()
        unaligned.trace(b)
    assert info.value.code == "bad-wgmma-shape"


@requires_gpu
def test_a_column_block_of_an_n_major_b_on_the_gpu():
    test_a_column_block_of_an_n_major_b_is_a_product_operand()

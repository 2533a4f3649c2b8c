"""The CPU interpreter: the semantics of what nvdsl emits, checked against NumPy on any machine.

Every test forces ``backend="interpret"``, so it runs (in the interpreter) on GPU machines too.
"""

import os
import sys

import numpy as np
import pytest
from mlir import ir

import nvdsl
from helpers import FakeDLPackDeviceArray, assert_product_close, load_box, product_error_bound
from nvdsl.interpreter import Program
from test_gemm import single_tile, store_column_slices, store_row_major, store_through_tma_boxes
from test_gpu import (OPERATOR_CASES, check_python_operators, check_reverse, check_row_stats,
                      check_too_much_shared_memory_is_refused, make_axpy, python_operators, reverse, row_stats)
from test_hopper import k_loop_gemm, round_trip, stuck_wait

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tutorials"))
import ch4_gemm_multistage  # noqa: E402
import ch5_gemm_warp_specialized  # noqa: E402


def interpreted(fn, **options):
    return fn.with_options(backend="interpret", **options)


def gemm_inputs(m, n, k, c_dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    return a, b, np.full((m, n), np.nan, c_dtype)


# --- scalar semantics --------------------------------------------------------------------------------

@pytest.mark.parametrize("a, b", OPERATOR_CASES)
def test_operators_follow_python_semantics(a, b):
    check_python_operators(interpreted(python_operators), a, b)


def test_shifts_conversions_and_select_by_dtype():
    @nvdsl.mlir_func
    def kernel_ops(a, u, out, fout):
        @nvdsl.gpu_launch(grid=1, block=a.shape[0])
        def kernel(ctx):
            i = ctx.thread_id.x
            out[0, i] = a[i] >> 1
            out[1, i] = (u[i] >> 1).to(nvdsl.int32)
            out[2, i] = nvdsl.select(a[i] > 0, a[i], -a[i])
            out[3, i] = nvdsl.maximum(a[i], 3) + nvdsl.minimum(a[i], -3)
            out[4, i] = a[i].to(nvdsl.float32).to(nvdsl.int32) * 2
            fout[0, i] = a[i].to(nvdsl.float16).to(nvdsl.float32) / 4.0
            fout[1, i] = (a[i].to(nvdsl.float32) * 1.5).to(nvdsl.int32).to(nvdsl.float32)
        kernel()

    a = np.array([-8, -1, 7, 1 << 30, 5, -100, 3, 0], np.int32)
    u = np.array([1 << 31, 7, 3, 0xFFFFFFFF, 4, 5, 6, 8], np.uint32)
    out, fout = np.zeros((5, 8), np.int32), np.zeros((2, 8), np.float32)
    interpreted(kernel_ops)(a, u, out, fout)
    np.testing.assert_array_equal(out[0], a >> 1)
    np.testing.assert_array_equal(out[1], (u >> 1).astype(np.int32))
    np.testing.assert_array_equal(out[2], np.abs(a))
    np.testing.assert_array_equal(out[3], np.maximum(a, 3) + np.minimum(a, -3))
    np.testing.assert_array_equal(out[4], a * 2)
    with np.errstate(over="ignore"):      # 2**30 is past float16's range: inf, as on the GPU
        np.testing.assert_array_equal(fout[0], a.astype(np.float16).astype(np.float32) / 4)
    np.testing.assert_array_equal(fout[1], np.trunc(a.astype(np.float32) * np.float32(1.5)).astype(np.float32))


def test_divergent_loops_carries_and_branches():
    check_row_stats(interpreted(row_stats()))


def test_shared_memory_and_block_barriers():
    check_reverse(interpreted(reverse(256)), 1024, 256)


def test_shared_memory_starts_as_all_ones_bytes():
    """A GPU leaves shared memory undefined at launch; the interpreter fills it with all-ones bytes (NaN as a
    float, -1 as an int), so that a kernel reading it before writing shows it instead of reading zeros."""
    @nvdsl.mlir_func
    def read_unwritten(ints, floats):
        @nvdsl.gpu_launch(grid=1, block=1, smem=32)
        def kernel(ctx):
            ints[0] = ctx.dynamic_shared((1,), nvdsl.int32)[0]
            floats[0] = ctx.dynamic_shared((1,), nvdsl.float32, offset=16)[0]
        kernel()
    ints, floats = np.zeros(1, np.int32), np.zeros(1, np.float32)
    interpreted(read_unwritten)(ints, floats)
    assert ints[0] == -1 and np.isnan(floats[0])      # exact: the bytes' value


def test_device_print_goes_to_stdout(capsys):
    @nvdsl.mlir_func
    def hello(x):
        @nvdsl.gpu_launch(grid=2, block=3)
        def kernel(ctx):
            nvdsl.print("block {} thread {} says {} and {}", ctx.block_id.x, ctx.thread_id.x, x[ctx.thread_id.x],
                        100.5)
        kernel()
    interpreted(hello)(np.array([7, -8, 9], np.int32))
    lines = capsys.readouterr().out.splitlines()
    assert sorted(lines) == sorted(f"block {b} thread {t} says {v} and 100.5" for b in range(2)
                                   for t, v in enumerate([7, -8, 9]))


# --- TMA -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("box, swizzle", [((64, 64), 0), ((32, 16), 32), ((64, 32), 64), ((64, 64), 128)])
def test_tma_load_then_store_is_the_identity_for_every_swizzle(box, swizzle):
    a = np.random.default_rng(3).standard_normal((256, 128)).astype(np.float16)
    out = np.zeros_like(a)
    interpreted(round_trip(box, swizzle))(a, out)
    np.testing.assert_array_equal(out, a)


@pytest.mark.parametrize("box, swizzle", [((1, 64, 64), 128), ((3, 16, 32), 64), ((3, 32, 64), 0)])
def test_tma_3d_boxes_load_then_store_is_the_identity(box, swizzle):
    a = np.random.default_rng(6).standard_normal((3, 128, 64)).astype(np.float16)
    out = np.zeros_like(a)
    interpreted(round_trip(box, swizzle))(a, out)
    np.testing.assert_array_equal(out, a)


def tile_as_loaded(swizzle, oob="zero", at=(0, 0), shape=(64, 64), raw=True):
    """A kernel that TMA-loads the 64 x 64 f16 box at ``at`` and copies the shared tile to ``out``: as it lies in
    memory (``raw``: through a view, which sees the swizzled bytes), or element by element (plain indexing of
    a TMA tile goes through its layout)."""
    @nvdsl.mlir_func
    def copy_tile(a, out):
        tma = nvdsl.TMA(a, box=(64, 64), swizzle=swizzle, oob=oob)

        @nvdsl.gpu_launch(grid=1, block=64, smem=64 * 64 * 2)
        def kernel(ctx):
            tile = load_box(ctx, tma, at)
            source = tile.view(tile.shape) if raw else tile
            r = ctx.thread_id.x
            for c in nvdsl.for_range(64):
                out[r, c] = source[r, c]
        kernel()
    return copy_tile


@pytest.mark.parametrize("swizzle", [0, 128])
def test_a_swizzled_tma_tile_indexed_plainly_reads_its_elements(swizzle):
    """``tile[r, c]`` of a tile a swizzled TMA load filled is element (r, c) of the box, not the r-th row of the
    swizzled bytes (which once read the wrong elements silently)."""
    a = np.arange(64 * 64, dtype=np.float16).reshape(64, 64)
    out = np.zeros_like(a)
    interpreted(tile_as_loaded(swizzle, raw=False))(a, out)
    np.testing.assert_array_equal(out, a)              # a copy, no arithmetic: exact is the tolerance


@pytest.mark.parametrize("swizzle", [0, 128])
def test_tma_swizzles_16_byte_chunks_by_the_row_in_8(swizzle):
    a = np.arange(64 * 64, dtype=np.float16).reshape(64, 64)
    out = np.zeros_like(a)
    interpreted(tile_as_loaded(swizzle))(a, out)
    rows, cols = np.meshgrid(np.arange(64), np.arange(64), indexing="ij")
    chunks = cols // 8 ^ (rows % 8 if swizzle == 128 else 0)
    np.testing.assert_array_equal(out, a[rows, chunks * 8 + cols % 8])


@pytest.mark.parametrize("oob, fill", [("zero", 0.0), ("nan", np.nan)])
def test_tma_fills_what_lies_past_the_edge(oob, fill):
    a = np.random.default_rng(1).standard_normal((100, 40)).astype(np.float16)
    out = np.zeros((64, 64), np.float16)
    interpreted(tile_as_loaded(0, oob=oob, at=(64, 0)))(a, out)
    np.testing.assert_array_equal(out[:36, :40], a[64:])
    np.testing.assert_array_equal(out[36:], np.full((28, 64), fill, np.float16))
    np.testing.assert_array_equal(out[:, 40:], np.full((64, 24), fill, np.float16))


# --- wgmma and the GEMMs -------------------------------------------------------------------------------

def ptx_accumulator_element(thread: int, i: int) -> tuple[int, int]:
    """Where register d_i of warpgroup thread ``thread`` lies in D of a ``wgmma.mma_async.m64nNk16`` (32-bit D), read
    off the PTX ISA's figure ("WGMMA .m64nNk16 register fragment layout for accumulator matrix D"): warp w of the
    warpgroup holds rows 16w to 16w + 15, and each 8-column block of them as mma.m16n8 holds its accumulator, the
    lane with groupID = laneid >> 2 and threadID_in_group = laneid % 4 at row groupID (d0, d1 of the block) or
    groupID + 8 (d2, d3), columns 2 threadID_in_group and the next."""
    warp, lane = divmod(thread, 32)
    group_id, thread_id_in_group = lane >> 2, lane % 4
    block, within = divmod(i, 4)
    return 16 * warp + group_id + 8 * (within >= 2), 8 * block + 2 * thread_id_in_group + (within & 1)


@pytest.mark.parametrize("n", [8, 16, 24, 64, 128, 256])
def test_the_interpreters_accumulator_fragment_is_the_ptx_isas(n):
    """The interpreter places wgmma results through index arrays derived from nvdsl.layouts.wgmma_accumulator, the
    layout kernels are traced with: both are checked here against the PTX ISA's figure, so that they cannot drift
    apart. A 128-row accumulator is two such chunks, 64 rows apart, its values numbered on after the first's."""
    from nvdsl.interpreter.ops_wgmma import accumulator_coordinates, warp_fragment
    from nvdsl.layouts import wgmma_accumulator
    expected = np.array([[ptx_accumulator_element(t, i) for i in range(n // 2)] for t in range(128)])
    layout = wgmma_accumulator(64, n)
    np.testing.assert_array_equal([[layout(t, i) for i in range(n // 2)] for t in range(128)], expected)
    rows, cols = accumulator_coordinates(64, n)
    np.testing.assert_array_equal(np.stack([rows, cols], axis=-1), expected)
    for quarter in range(4):
        band, warp_rows, warp_cols = warp_fragment(quarter, n)
        mine = expected[32 * quarter:32 * quarter + 32]
        np.testing.assert_array_equal(np.stack([band.start + warp_rows, warp_cols], axis=-1), mine)
        assert band == slice(16 * quarter, 16 * quarter + 16)
    rows, cols = accumulator_coordinates(128, n)
    np.testing.assert_array_equal(np.stack([rows, cols], axis=-1),
                                  np.concatenate([expected, expected + [64, 0]], axis=1))


@pytest.mark.parametrize("out_dtype", [np.float16, np.float32])
def test_the_product_bound_holds_for_every_summation_order_and_catches_a_wrong_element(out_dtype):
    """The GEMM tests compare with an error bound, not with NumPy's own product, whose float32 rounding depends
    on how the machine's BLAS blocks its sums (16-row slices differed from the whole product in 3389 elements
    on one machine). Sums in several orders all pass; one element off by twice the bound does not."""
    a, b, _ = gemm_inputs(128, 128, 256, out_dtype)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    products = a32[:, :, None] * b32[None, :, :]              # exact in float32
    orders = {"whole": a32 @ b32, "16-row slices": np.concatenate([a32[r:r + 16] @ b32 for r in range(0, 128, 16)]),
              "k ascending": np.add.accumulate(products, axis=1, dtype=np.float32)[:, -1],
              "k descending": np.add.accumulate(products[:, ::-1], axis=1, dtype=np.float32)[:, -1],
              "float64": a.astype(np.float64) @ b.astype(np.float64)}
    for order, c in orders.items():
        assert_product_close(c.astype(out_dtype), a, b)
    wrong = (a.astype(np.float64) @ b.astype(np.float64))
    wrong[5, 7] += 2 * product_error_bound(a, b, out_dtype)[5, 7]
    with pytest.raises(AssertionError, match="1 elements past the error bound; at \\(5, 7\\)"):
        assert_product_close(wrong.astype(out_dtype), a, b)


@pytest.mark.parametrize("k_total, k_major", [(64, False), (256, False), (64, True), (256, True)])
def test_k_loop_gemm_with_n_major_and_k_major_b(k_total, k_major):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((128, k_total)).astype(np.float16)
    b = rng.standard_normal((128, k_total) if k_major else (k_total, 128)).astype(np.float16)
    c = np.full((128, 128), np.nan, np.float32)
    interpreted(k_loop_gemm(k_total, b_k_major=k_major))(a, b, c)
    assert_product_close(c, a, b.T if k_major else b)


@pytest.mark.parametrize("store, c_shape, c_dtype", [
    (store_row_major, (128, 256), np.float16), (store_column_slices, (128, 256), np.float32),
    (store_through_tma_boxes, (128, 128), np.float16), (store_through_tma_boxes, (128, 128), np.float32)])
def test_accumulator_stores_write_the_product(store, c_shape, c_dtype):
    a, b, c = gemm_inputs(128, 128, 64, c_dtype)
    c = np.full(c_shape, np.nan, c_dtype)
    interpreted(single_tile(store))(a, b, c)
    block = c[:, 64:192] if c_shape[1] > 128 else c
    assert_product_close(block, a, b)
    if c_shape[1] > 128:
        assert np.isnan(c[:, :64]).all() and np.isnan(c[:, 192:]).all(), "columns outside the block were written"


@pytest.mark.parametrize("m, n, k, stages", [(256, 256, 256, 2), (128, 384, 512, 4)])
def test_ch4_multistage_gemm(m, n, k, stages):
    a, b, c = gemm_inputs(m, n, k, np.float32)
    interpreted(ch4_gemm_multistage.make_gemm(stages))(a, b, c)
    assert_product_close(c, a, b)


@pytest.mark.parametrize("m, n, k, stages, c_dtype", [(128, 256, 256, 4, np.float32), (256, 512, 128, 2, np.float16)])
def test_ch5_warp_specialized_gemm(m, n, k, stages, c_dtype):
    a, b, c = gemm_inputs(m, n, k, c_dtype)
    interpreted(ch5_gemm_warp_specialized.make_gemm(num_stages=stages))(a, b, c)
    assert_product_close(c, a, b)


@pytest.mark.parametrize("m, n, k, stages, sm_count", [(256, 512, 256, 4, 3), (384, 256, 384, 3, 2)])
def test_persistent_gemm_phases_run_across_tiles(m, n, k, stages, sm_count):
    from nvdsl.kernels.gemm import MAPPING, matmul
    a, b, c = gemm_inputs(m, n, k, np.float32)
    interpreted(nvdsl.tasks.build(matmul, MAPPING.replace(pipeline=stages, sm_count=sm_count)))(c, a, b)
    assert_product_close(c, a, b)


def test_every_schedule_computes_the_same_product():
    a, b, c = gemm_inputs(128, 256, 256, np.float16)
    gemm = ch5_gemm_warp_specialized.make_gemm(num_stages=2)
    interpreted(gemm)(a, b, c)
    for seed in range(3):
        again = np.zeros_like(c)
        interpreted(gemm, seed=seed)(a, b, again)
        np.testing.assert_array_equal(again, c)


# --- reports ---------------------------------------------------------------------------------------------

def test_a_wait_nobody_completes_is_a_deadlock_report_naming_the_barrier_and_line():
    with pytest.raises(nvdsl.KernelFault) as info:
        interpreted(stuck_wait(None))(np.zeros(64, np.int32))
    error = info.value
    assert error.code == "deadlock"
    assert "barrier 1 of Mbarriers(2)" in str(error) and "0 of 1 arrivals" in str(error)
    assert "parity 0" in str(error) and error.loc.filename.endswith("test_hopper.py")
    assert "bar.try_wait(phase, timeout_ns=timeout_ns)" in str(error)


def test_a_bounded_wait_prints_its_report_and_traps(capsys):
    with pytest.raises(nvdsl.KernelFault) as info:
        interpreted(stuck_wait(1_000_000))(np.zeros(64, np.int32))
    assert info.value.code == "trap"
    printed = capsys.readouterr().out
    assert "nvdsl: mbarrier wait timed out after 1000000 ns" in printed
    assert "barrier 1 of Mbarriers(2) never completed phase parity 0" in printed


def test_out_of_bounds_accesses_are_reported_with_the_line():
    @nvdsl.mlir_func
    def shifted(x, y, shift):
        @nvdsl.gpu_launch(grid=1, block=32)
        def kernel(ctx):
            with nvdsl.when(ctx.thread_id.x < 31):
                y[ctx.thread_id.x] = x[ctx.thread_id.x + 1]     # guarded: in bounds
            y[ctx.thread_id.x] = x[ctx.thread_id.x + shift]     # shift = 2 (only known when run): x[32], x[33]
        kernel()
    with pytest.raises(nvdsl.KernelFault) as info:
        interpreted(shifted)(np.zeros(32, np.float32), np.zeros(32, np.float32), 2)
    assert info.value.code == "out-of-bounds" and "'x'" in str(info.value) and "[32]" in str(info.value)
    assert "x[ctx.thread_id.x + shift]" in str(info.value.loc)


def test_a_vector_access_off_its_promised_alignment_is_reported():
    """A GPU faults on a vector load or store whose address is not a multiple of the alignment the op promises; the
    interpreter reports it (float32 pairs of 8 bytes: one from element 0 passes, one from 1 does not)."""
    from mlir.dialects import vector

    @nvdsl.mlir_func
    def pairs(x, y, start):
        @nvdsl.gpu_launch(grid=1, block=1)
        def kernel(ctx):
            pair = ir.VectorType.get([2], ir.F32Type.get())
            at = start.to(nvdsl.index)
            loaded = vector.load(pair, x.ir, [at.ir], alignment=8)
            vector.store(loaded, y.ir, [at.ir], alignment=8)
        kernel()
    x, y = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    interpreted(pairs)(x, y, 0)
    assert y.tolist() == [0, 1, 0, 0]
    with pytest.raises(nvdsl.KernelFault) as info:
        interpreted(pairs)(x, y, 1)
    assert info.value.code == "misaligned" and "'x' at byte 4" in str(info.value) and "8 bytes" in str(info.value)
    assert "test_interpreter.py" in str(info.value.loc)      # (raw ops carry the function's line)


def test_device_arrays_need_a_gpu():
    x = FakeDLPackDeviceArray((32,), 2, 32)
    with pytest.raises(nvdsl.ArgumentError) as info:
        interpreted(make_copy())(x, np.zeros(32, np.float32))
    assert info.value.code == "device-array-needs-gpu" and "'x'" in str(info.value)


def make_copy():
    @nvdsl.mlir_func
    def copy(x, y):
        @nvdsl.gpu_launch(grid=1, block=32)
        def kernel(ctx):
            y[ctx.thread_id.x] = x[ctx.thread_id.x]
        kernel()
    return copy


def one_warp_module(body: str) -> str:
    """MLIR text: a host function f(%out: memref<32xi32>) launching one warp that runs ``body``
    (thread index %t0)."""
    return f"""
module attributes {{gpu.container_module}} {{
  func.func @f(%out: memref<32xi32>) {{
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    gpu.launch blocks(%b0, %b1, %b2) in (%g0 = %c1, %g1 = %c1, %g2 = %c1)
               threads(%t0, %t1, %t2) in (%s0 = %c32, %s1 = %c1, %s2 = %c1) {{
{body}
      gpu.terminator
    }}
    return
  }}
}}
"""


_UNKNOWN = one_warp_module("""
      %v = arith.constant 3 : i32
      %lo, %hi = arith.mulsi_extended %v, %v : i32 loc("kernel.py":7:0)""")


def test_an_operation_without_semantics_is_refused_naming_it_and_its_line():
    with ir.Context():
        module = ir.Module.parse(_UNKNOWN)
        with pytest.raises(nvdsl.TraceError) as info:
            Program(module)
    assert info.value.code == "interpreter-unknown-op" and "arith.mulsi_extended" in str(info.value)
    assert info.value.loc.filename == "kernel.py" and info.value.loc.line == 7


def test_backend_and_seed_options_are_checked():
    from nvdsl.options import from_env
    assert from_env({"NVDSL_BACKEND": "interpret", "NVDSL_SEED": "7"}).backend == "interpret"
    assert from_env({"NVDSL_SEED": "7"}).seed == 7
    for bad in ({"NVDSL_BACKEND": "cpu"}, {"NVDSL_SEED": "x"}):
        with pytest.raises(nvdsl.UserError):
            from_env(bad)
    for bad in ({"backend": "cpu"}, {"seed": -1}, {"seed": 1.5}):
        with pytest.raises(nvdsl.UserError):
            nvdsl.Options(**bad)


def test_the_interpreter_layer_does_not_import_the_frontend():
    import ast
    folder = os.path.join(ROOT, "nvdsl", "interpreter")
    for name in os.listdir(folder):
        if name.endswith(".py"):
            tree = ast.parse(open(os.path.join(folder, name)).read())
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom):
                    assert not (node.module or "").startswith(("frontend", "hopper")), (name, node.module)


_INDEX_OPS = one_warp_module("""
      %c7 = index.constant 7
      %c3 = index.constant 3
      %sum = index.add %t0, %c7
      %q = index.floordivs %sum, %c3
      %small = index.cmp slt(%t0, %c7)
      %picked = arith.select %small, %q, %c3 : index
      %v = index.casts %picked : index to i32
      memref.store %v, %out[%t0] : memref<32xi32>""")


def test_a_multiply_feeding_an_add_is_one_fused_rounding_as_on_the_gpu():
    """nvdsl's float ops allow contraction and NVPTX fuses them: y = alpha * x + y is one fma, rounded once
    (in float16 two roundings differ in about 3% of these elements)."""
    axpy, _ = make_axpy()
    rng = np.random.default_rng(1)
    x, y = ((rng.standard_normal((100, 300)) * 8).astype(np.float16) for _ in range(2))
    alpha = np.float16(1.5)
    once = (np.float64(alpha) * x.astype(np.float64) + y).astype(np.float16)
    interpreted(axpy)(x, y, alpha)
    np.testing.assert_array_equal(y, once)


def test_float8_codes_decode_as_ml_dtypes_does():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    from nvdsl.interpreter.values import float8_values
    codes = np.arange(256, dtype=np.uint8)
    for name, dtype in (("e4m3", ml_dtypes.float8_e4m3fn), ("e5m2", ml_dtypes.float8_e5m2)):
        np.testing.assert_array_equal(float8_values(codes, name), codes.view(dtype).astype(np.float32))


@pytest.mark.parametrize("b_code", [10, 12])       # B in e4m3 or e5m2 (DLPack codes); A in e4m3
def test_float8_scaled_matmul_runs_on_its_bytes(b_code):
    """nvdsl takes float8 arrays from torch only, so the module is traced on device-array descriptors and
    the interpreter is given the arrays' bytes: wgmma k32 on e4m3 x e4m3/e5m2, scales, float16 C."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    from nvdsl.kernels.gemm import FP8_MAPPING, scaled_matmul
    m, n, k = 128, 256, 256
    b_type = ml_dtypes.float8_e4m3fn if b_code == 10 else ml_dtypes.float8_e5m2
    rng = np.random.default_rng(b_code)
    a = rng.standard_normal((m, k)).astype(ml_dtypes.float8_e4m3fn)
    b = rng.standard_normal((n, k)).astype(b_type)
    scale_a, scale_b = np.array([0.5], np.float32), np.array([1.5], np.float32)
    c = np.zeros((m, n), np.float16)
    trace = nvdsl.tasks.build(scaled_matmul, FP8_MAPPING.replace(sm_count=2)).trace(
        c, FakeDLPackDeviceArray((m, k), 10, 8), FakeDLPackDeviceArray((n, k), b_code, 8), scale_a, scale_b)
    Program(trace.module).run(trace.specs, (c, a.view(np.uint8), b.view(np.uint8), scale_a, scale_b),
                              trace.written)
    expected = (a.astype(np.float64) @ b.astype(np.float64).T) * 0.75
    np.testing.assert_allclose(c.astype(np.float64), expected, rtol=2e-3, atol=2e-2)


def test_index_dialect_operations():
    from nvdsl.signature import ARRAY, ArgSpec
    with ir.Context():
        module = ir.Module.parse(_INDEX_OPS)
        out = np.zeros(32, np.int32)
        Program(module).run((ArgSpec("out", ARRAY, nvdsl.int32, (32,)),), (out,), frozenset({0}))
    t = np.arange(32)
    np.testing.assert_array_equal(out, np.where(t < 7, (t + 7) // 3, 3))


def test_what_the_gpu_runtime_refuses_the_interpreter_refuses_too():
    check_too_much_shared_memory_is_refused({"backend": "interpret"})

    y = np.zeros(32, np.float32)
    y.flags.writeable = False
    with pytest.raises(nvdsl.ArgumentError) as info:
        interpreted(make_copy())(np.ones(32, np.float32), y)
    assert info.value.code == "read-only" and "'y'" in str(info.value)


def test_keyword_constants_and_arrays_untouched_when_not_written():
    @nvdsl.mlir_func
    def fill(x, y, *, value, offset):
        @nvdsl.gpu_launch(grid=1, block=x.shape[0])
        def kernel(ctx):
            x[ctx.thread_id.x] = value + offset + y[ctx.thread_id.x]
        kernel()
    x, y = np.zeros(32, np.int32), np.arange(32, dtype=np.int32)
    before = y.copy()
    interpreted(fill)(x, y, value=3, offset=4)
    np.testing.assert_array_equal(x, 7 + before)
    np.testing.assert_array_equal(y, before)

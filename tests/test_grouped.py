"""Grouped GEMM (a mixture of experts' layer) in the task layer, and what it rests on: ragged TMA
descriptors (a box clipped where its row segment ends), row tile tables read on the GPU
(``nt.row_tiles``), and tiles the table leaves empty. CPU tests run in the interpreter; GPU tests compare
with a float32 reference."""

import numpy as np
import pytest

import nvdsl
import nvdsl.tasks as nt
from nvdsl.kernels.gemm import MAPPING, grouped_gemm, grouped_matmul, row_tile_table
from nvdsl.signature import TensorMapSpec
from helpers import load_box
from nvdsl.testing import requires_gpu
from test_tasks import golden

f16 = np.float16


# --- ragged TMA ---------------------------------------------------------------------------------------

def ragged_store(row, end):
    """A kernel that TMA-loads the 64 x 64 ``src`` and stores it to ``out`` at (row, 0) through a ragged
    descriptor, the segment ending at row ``end``."""
    @nvdsl.mlir_func
    def store(src, out):
        load = nvdsl.TMA(src, box=(64, 64), swizzle=128)
        clipped = nvdsl.TMA(out, box=(64, 64), swizzle=128, ragged=True)

        @nvdsl.gpu_launch(grid=1, block=128, smem=64 * 64 * 2)
        def kernel(ctx):
            tile = load_box(ctx, load, (0, 0))
            clipped.store(tile, (row, 0), end=end, predicate=ctx.thread_id.x.eq(0))
        kernel()
    return store


@pytest.mark.parametrize("row, end", [(10, 30), (0, 64), (100, 101), (136, 200), (150, 140), (0, 0)])
def test_a_ragged_store_writes_only_the_rows_before_the_segment_end(row, end):
    src = np.random.default_rng(0).standard_normal((64, 64)).astype(f16)
    out = np.full((200, 64), np.nan, f16)
    ragged_store(row, end).with_options(backend="interpret")(src, out)
    stop = max(row, min(end, row + 64))
    np.testing.assert_array_equal(out[row:stop], src[:stop - row])
    assert np.isnan(out[:row]).all() and np.isnan(out[stop:]).all()


def test_a_ragged_descriptor_views_the_array_so_that_boxes_end_at_a_row():
    spec = TensorMapSpec(arg=0, box=(1, 64, 64), ragged=True)
    # V[e, j, n] = A[e - 64 + j, n]: e and j both step a row (256 bytes of float16), from 64 rows before A
    assert spec.view((1000, 128), 2) == ((1001, 64, 128), (256, 256, 2), -64 * 256)
    assert TensorMapSpec(arg=0, box=(64, 64)).view((1000, 128), 2) == ((1000, 128), (256, 2), 0)
    assert TensorMapSpec.from_json(spec.to_json()) == spec


def test_ragged_descriptors_are_refused_where_they_do_not_apply():
    @nvdsl.mlir_func
    def three_d(a):
        nvdsl.TMA(a, box=(1, 64, 64), ragged=True)
    with pytest.raises(nvdsl.TraceError, match="ragged TMA descriptor spans a 2-D array") as e:
        three_d.trace(np.zeros((2, 128, 64), f16))
    assert e.value.code == "bad-tma"

    @nvdsl.mlir_func
    def plain_with_end(a):
        tma = nvdsl.TMA(a, box=(64, 64))

        @nvdsl.gpu_launch(grid=1, block=128, smem=64 * 64 * 2)
        def kernel(ctx):
            tile = ctx.dynamic_shared((64, 64), nvdsl.float16, align=1024)
            tma.store(tile, (0, 0), end=10)
        kernel()
    with pytest.raises(nvdsl.TraceError, match="end= is for ragged TMA descriptors"):
        plain_with_end.trace(np.zeros((128, 64), f16))


# --- row tile tables ----------------------------------------------------------------------------------

def test_the_row_tile_table_lists_each_group_s_tiles_ending_at_the_group_s_end():
    table = row_tile_table([100, 0, 130, 64, 7], 128)
    assert table.dtype == np.int32 and table.shape == (3 + 5, 3)     # cdiv(301, 128) + 5 groups
    assert table.tolist() == [[0, 0, 100], [2, 100, 230], [2, 228, 230], [3, 230, 294], [4, 294, 301],
                              [0, 0, 0], [0, 0, 0], [0, 0, 0]]
    # any sizes with the same sum and count fit the same table shape (one compiled kernel)
    assert row_tile_table([1, 1, 1, 1, 297], 128).shape == table.shape
    with pytest.raises(nvdsl.ArgumentError, match="more than 2 tiles"):
        row_tile_table([200, 200], 128, capacity=2)
    with pytest.raises(nvdsl.ArgumentError, match="none negative"):
        row_tile_table([5, -1], 128)


def grouped_args(sizes, k=128, n=256, seed=0):
    rng = np.random.default_rng(seed)
    m = sum(sizes)
    a = rng.standard_normal((m, k)).astype(f16)
    b = rng.standard_normal((len(sizes), k, n)).astype(f16)
    return np.full((m, n), np.nan, f16), a, b


def grouped_reference(a, b, sizes):
    out, row = np.zeros((a.shape[0], b.shape[2]), np.float32), 0
    for g, m in enumerate(sizes):
        out[row:row + m] = a[row:row + m].astype(np.float32) @ b[g].astype(np.float32)
        row += m
    return out


GROUPED_TABLE = (grouped_matmul, MAPPING.replace(sm_count=132))


def test_grouped_gemm_passes_and_schedule_are_golden(request):
    program, mapping = GROUPED_TABLE
    c, a, b = grouped_args([100, 0, 130, 64, 7])
    args = (c, a, b, row_tile_table([100, 0, 130, 64, 7], 128))
    kernel = nt.build(program, mapping)
    passes = kernel.passes(*args)
    golden("tasks_grouped.eliminated.txt", passes["eliminated"], request)
    golden("tasks_grouped.schedule.txt", kernel.explain(*args), request)
    assert "index tiles[p0,0] = tiles[p0, 0] (group of row tile p0)" in passes["traced"]
    assert "copy t -> C[tiles[p0,1]:+128, p1*256:+256 rows < tiles[p0,2]]" in passes["eliminated"]


@pytest.mark.parametrize("sizes, mapping", [
    ([100, 0, 130, 64, 7], MAPPING.replace(sm_count=2)),
    ([0, 256, 1, 0], MAPPING.replace(sm_count=3, consumers=1, tiles={"BM": 64, "BN": 128, "BK": 64})),
    ([70, 190], nt.Mapping(warp_specialize=False, persistent=False, pipeline=2, tiles={"BN": 128})),
])
def test_grouped_gemm_in_the_interpreter_matches_each_group_s_product(sizes, mapping):
    c, a, b = grouped_args(sizes)
    block_rows = mapping.tile_values().get("BM", 128)
    kernel = nt.build(grouped_matmul, mapping).with_options(backend="interpret")
    kernel(c, a, b, row_tile_table(sizes, block_rows))
    assert not np.isnan(c).any()          # every row written (each group's last tile too), none twice wrong
    np.testing.assert_allclose(c.astype(np.float32), grouped_reference(a, b, sizes), rtol=2e-3, atol=2e-2)


def test_row_tiles_are_refused_where_they_do_not_apply():
    @nt.task(reads=("A", "tiles"), writes=("C",))
    def float_table(C, A, tiles):
        nt.row_tiles(tiles)
    with pytest.raises(nvdsl.TaskError, match="int32 tensor argument of shape") as e:
        nt.build(float_table).plan(np.zeros((64, 64), f16), np.zeros((64, 64), f16), np.zeros((4, 3), np.float32))
    assert e.value.code == "bad-tile"

    @nt.task(reads=("A", "tiles"), writes=("C",))
    def three_d(C, A, tiles):
        nt.blocks(C, (1, 64, 64), rows=nt.row_tiles(tiles))
    with pytest.raises(nvdsl.TaskError, match="rows= cuts a task's 2-D tensor"):
        nt.build(three_d).plan(np.zeros((2, 64, 64), f16), np.zeros((64, 64), f16), np.zeros((4, 3), np.int32))

    @nt.task(reads=("A", "tiles"), writes=("C",))
    def by_a_number(C, A, tiles):
        nt.row_tiles(tiles).group(2)
    with pytest.raises(nvdsl.TaskError, match="indexed by a prange variable"):
        nt.build(by_a_number).plan(np.zeros((64, 64), f16), np.zeros((64, 64), f16), np.zeros((4, 3), np.int32))


def test_grouped_gemm_checks_its_groups():
    c, a, b = grouped_args([10, 20])
    with pytest.raises(nvdsl.ArgumentError, match="summing to 31") as e:
        grouped_gemm(a, b, c, [10, 21])
    assert e.value.code == "bad-groups"
    with pytest.raises(nvdsl.ArgumentError, match="one size per group"):
        grouped_gemm(a, b, c, [30])


# --- on the GPU ---------------------------------------------------------------------------------------

@requires_gpu
@pytest.mark.parametrize("sizes, k, n, dtype", [
    ([1000, 0, 517, 128, 1, 2400], 1024, 768, "float16"),
    ([0, 0, 4096], 512, 256, "bfloat16"),
    ([131] * 7, 2048, 1024, "float16"),
])
def test_grouped_gemm_matches_a_float32_reference(sizes, k, n, dtype):
    torch = pytest.importorskip("torch")
    generator = torch.Generator(device="cuda").manual_seed(5)
    m = sum(sizes)
    a = (torch.randn((m, k), generator=generator, device="cuda") * k ** -0.5).to(getattr(torch, dtype))
    b = torch.randn((len(sizes), k, n), generator=generator, device="cuda").to(getattr(torch, dtype))
    c = torch.full((m, n), float("nan"), device="cuda", dtype=getattr(torch, dtype))
    grouped_gemm(a, b, c, sizes)
    torch.cuda.synchronize()
    reference = torch.cat([a_g.float() @ b[g].float() for g, a_g in enumerate(torch.split(a, sizes))])
    error = ((c.float() - reference).norm() / reference.norm()).item()
    assert not torch.isnan(c).any() and error < 1e-2, error
    # new sizes with the same sum and count run on the compiled kernel, and are right too
    shuffled = sizes[::-1]
    grouped_gemm(a, b, c, shuffled)
    torch.cuda.synchronize()
    reference = torch.cat([a_g.float() @ b[g].float() for g, a_g in enumerate(torch.split(a, shuffled))])
    assert ((c.float() - reference).norm() / reference.norm()).item() < 1e-2


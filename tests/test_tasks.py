"""The task layer: tile programs traced into events, each pass's output (golden text), mappings refused with
named errors before tracing, generated kernels that compile like hand-written ones, and (on the GPU) one
program giving the same numbers under many mappings."""

import dataclasses
import math
import os
import re

import numpy as np
import pytest

import nvdsl
import nvdsl.tasks as nt
from nvdsl.kernels.gemm import (MAPPING, TILE_64x64_MAPPING, TILE_64x128_MAPPING, batched_matmul, gated_mlp, linear,
                                linear_mapping, linear_program, matmul, matmul_nk, matmul_rowsum)
from nvdsl.tasks import ir
from nvdsl.tasks.stages import Schedule
from nvdsl.testing import assert_matches_golden, requires_gpu, sass_opcodes
from nvdsl.compiler.toolchain import find_tool

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
f16 = np.float16


def gemm_args(m, n, k, c_dtype=f16, b_layout="KN"):
    b = np.zeros((k, n) if b_layout == "KN" else (n, k), f16)
    return np.zeros((m, n), c_dtype), np.zeros((m, k), f16), b


def golden(name: str, text: str, request) -> None:
    assert_matches_golden(text, os.path.join(GOLDEN, name), update=request.config.getoption("--update-golden"))


SCHEDULES = {
    "tasks_gemm": (matmul, MAPPING.replace(sm_count=132), gemm_args(1000, 2040, 520)),
    "tasks_gemm_multistage": (matmul, nt.Mapping(warp_specialize=False, persistent=False, pipeline=3),
                              gemm_args(512, 512, 1024)),
    "tasks_gemm_pingpong": (matmul_nk, nt.Mapping(tiles={"BN": 128}, schedule="pingpong", sm_count=132),
                            gemm_args(4096, 4096, 4096, b_layout="NK")),
    "tasks_batched": (batched_matmul, MAPPING.replace(sm_count=132),
                      (np.zeros((3, 512, 768), f16), np.zeros((3, 512, 256), f16), np.zeros((3, 256, 768), f16))),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedules_are_explained(name, request):
    program, mapping, args = SCHEDULES[name]
    golden(f"{name}.schedule.txt", nt.build(program, mapping).explain(*args), request)


PLANNING = ["levels", "row_sums", "split", "main_loop", "transfers", "products", "pipeline", "registers",
            "allocation", "persistence"]


def planning_text(passes: dict) -> str:
    """What each planning pass decided, in order, under a header per pass."""
    return "".join(f"== {stage}\n{passes[stage]}" for stage in PLANNING)


def test_each_pass_of_the_gemm_prints_its_events(request):
    passes = nt.build(matmul, MAPPING.replace(sm_count=132)).passes(*gemm_args(1000, 2040, 520))
    assert list(passes) == ["traced", "copies", "eliminated", *PLANNING, "schedule"]
    for stage in ("traced", "copies"):
        golden(f"tasks_gemm.{stage}.txt", passes[stage], request)
    # copies carry the loop-carried WAR edge the ring's `empty` barrier will implement
    assert "e1 = copy A[p0*128:+128, k0*64:+64] -> A_s0 {e3}" in passes["copies"]


ROW_SUMS = (matmul_rowsum, MAPPING.replace(sm_count=132),
            (np.zeros((1000, 2040), f16), np.zeros((8, 1000), np.float32)) + gemm_args(1000, 2040, 520)[1:])
GATED_MLP = (gated_mlp, nt.Mapping(), (np.zeros((512, 512), f16), np.zeros((512, 256), f16),
                                      np.zeros((256, 512), f16), np.zeros((256, 512), f16)))


@pytest.mark.parametrize("name", sorted(SCHEDULES) + ["tasks_rowsum", "tasks_gated_mlp"])
def test_each_planning_pass_prints_its_decisions(name, request):
    program, mapping, args = {"tasks_rowsum": ROW_SUMS, "tasks_gated_mlp": GATED_MLP}.get(name) or SCHEDULES[name]
    kernel = nt.build(program, mapping)
    passes = kernel.passes(*args)
    golden(f"{name}.stages.txt", planning_text(passes), request)
    assert passes["schedule"] == kernel.explain(*args)
    assert kernel.explain(*args, stage="allocation") == passes["allocation"]


def test_each_planning_pass_returns_a_frozen_record_and_changes_none():
    kernel = nt.build(matmul_rowsum, ROW_SUMS[1])
    specs = kernel._specs(ROW_SUMS[2])
    stages, again = kernel._stages(specs), kernel._stages(specs)
    for name, record in stages.items():
        assert dataclasses.is_dataclass(record) and record.__dataclass_params__.frozen, name
        assert record == again[name], name
    assert stages["row_sums"].program != stages["eliminated"]    # the row sums rewrote a new program...
    assert "rows_sums" not in ir.format_program(stages["eliminated"])       # ...leaving the old one as it was
    assert all(f.kw_only for f in dataclasses.fields(Schedule))


def test_explain_refuses_a_stage_that_does_not_exist():
    with pytest.raises(nvdsl.TaskError, match="no stage 'rings': the stages are traced, copies, eliminated, levels"):
        nt.build(matmul).explain(*gemm_args(256, 256, 128), stage="rings")


def test_sibling_copies_of_one_tile_are_merged(request):
    args = (np.zeros((512, 512), f16), np.zeros((512, 256), f16), np.zeros((256, 512), f16),
            np.zeros((256, 512), f16))
    passes = nt.build(gated_mlp).passes(*args)
    assert passes["copies"].count("copy A[") == 2 and passes["eliminated"].count("copy A[") == 1
    golden("tasks_gated_mlp.eliminated.txt", passes["eliminated"], request)
    assert "A_s0 float16[128, 64]" in passes["schedule"] and "A_s1" not in passes["schedule"]


def test_default_mapping_derives_the_pipeline_from_shared_memory():
    schedule = nt.build(matmul).plan(*gemm_args(4096, 4096, 4096))
    ring, = schedule.rings
    assert ring.depth == 4 and schedule.smem_bytes <= 227 * 1024       # 4 x 48 KiB + 2 x 16 KiB staging
    assert dict(schedule.registers) == {"producer": 40, "consumer": 232}
    wide = nt.build(matmul, nt.Mapping(tiles={"BN": 128}, persistent=False)).plan(*gemm_args(4096, 4096, 4096))
    assert wide.rings[0].depth == 7                                    # 32 KiB slots; staging reuses the ring


# --- refusals: named errors with both numbers, before anything is traced --------------------------------

def refused(program, mapping, args, code, *words):
    kernel = nt.build(program, mapping)
    with pytest.raises((nvdsl.MappingError, nvdsl.TaskError)) as info:
        kernel.plan(*args)
    error = info.value
    assert error.code == code, str(error)
    for word in words:
        assert word in str(error), str(error)
    return error


def test_infeasible_mappings_are_refused_with_both_numbers():
    args = gemm_args(1024, 1024, 1024)
    error = refused(matmul, nt.Mapping(pipeline=6), args, "mapping-smem", "needs 327680 bytes", "bound of 232448")
    assert error.loc is not None and error.loc.filename == __file__
    refused(matmul, nt.Mapping(smem_limit=150 * 1024, pipeline=3), args, "mapping-smem", "153600")
    refused(matmul, nt.Mapping(schedule="pingpong"), args, "mapping-registers", "about 296 registers",
            "budget is 232")
    refused(matmul, nt.Mapping(registers={"consumer": 256}), args, "mapping-registers", "70656", "65536")
    refused(matmul, nt.Mapping(tiles={"BM": 96}), args, "mapping-tile", "96 rows", "2 consumer")
    refused(matmul, nt.Mapping(tiles={"BN": 384}), args, "mapping-tile", "N must be a multiple of 8 up to 256")
    refused(matmul, nt.Mapping(memory={"A": "register"}), args, "mapping-memory", "shared memory")
    refused(matmul, nt.Mapping(memory={"acc": "shared"}), args, "mapping-memory", "'acc'")
    refused(matmul, nt.Mapping(tiles={"BX": 1}), args, "bad-mapping", "['BX']")
    refused(matmul, nt.Mapping(schedule="pingpong", consumers=3, tiles={"BN": 128}), args, "bad-mapping", "not 3")


@nt.task(reads=("A", "B"), writes=("C",))
def matmul_over_a_and_b(C, A, B):
    """A GEMM whose loops run over A's and B's grids, not C's: arrays of mismatched shapes reach past an end."""
    BM, BN, BK = nt.tunable("BM", 64), nt.tunable("BN", 64), nt.tunable("BK", 64)
    Ct, At, Bt = nt.blocks(C, (BM, BN)), nt.blocks(A, (BM, BK)), nt.blocks(B, (BK, BN))
    for i, j in nt.prange(At.grid[0], Bt.grid[1]):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in nt.srange(At.grid[1]):
            acc += At[i, k] @ Bt[k, j]
        Ct[i, j] = acc.astype(C.dtype)


@pytest.mark.parametrize("shapes, code, words", [
    # B with fewer rows than A has columns: its tiles past the end would read zeros, dropping A's last columns
    (((64, 64), (64, 128), (64, 64)), "bad-shape", ["A @ B sums over A[64, 128]'s axis 1 (128) and B[64, 64]'s "
                                                     "axis 0 (64)"]),
    # C with fewer rows than A: the loop over A's tiles would write C's tiles past its end, which TMA drops
    (((64, 64), (128, 64), (64, 64)), "tile-out-of-range", ["a tile written into C[64, 64]", "0..64 over p0 < 2",
                                                             "outside 0..63"]),
])
def test_a_task_program_refuses_arrays_that_would_be_read_or_written_past_an_end(shapes, code, words):
    """Before these checks both ran (the interpreter gave C = 64 for the first: half of A's columns lost)."""
    c, a, b = (np.zeros(shape, np.float16) for shape in shapes)
    refused(matmul_over_a_and_b, nt.Mapping(tiles={"BM": 64, "BN": 64, "BK": 64}, consumers=1), (c, a, b), code,
            *words)


@nt.task(reads=("A", "B", "W"), writes=("C",))
def scaled_sum(C, A, B, W):
    """C = (A + B) * w: tiles of A and B at C's positions, w's tile at C's columns."""
    Ct, At, Bt, Wt = nt.blocks(C, (64, 64)), nt.blocks(A, (64, 64)), nt.blocks(B, (64, 64)), nt.blocks(W, (64,))
    for i, j in nt.prange(*Ct.grid):
        x = nt.zeros((64, 64), nt.float32)
        x += At[i, j]
        Ct[i, j] = ((x + Bt[i, j]) * Wt[j][None, :]).astype(C.dtype)


@pytest.mark.parametrize("shapes, words", [
    # B with fewer rows than C: C's rows 64..127 would be A + 0
    (((128, 64), (128, 64), (64, 64), (64,)), ["C[128, 64] is written at elements 64..127 along axis 0 from tiles "
                                               "of B[64, 64]", "pass arrays whose extents agree"]),
    # a w shorter than C's rows: C's columns 64..127 would be scaled by 0
    (((64, 128), (64, 128), (64, 128), (64,)), ["elements 64..127 along axis 1 from tiles of W[64]", "W's axis 0"]),
])
def test_a_task_program_refuses_a_tile_stored_from_an_argument_shorter_than_it(shapes, words):
    """Each stored tile is traced back to the argument tiles it is computed from; one at the same positions of a
    shorter argument would read zeros into elements that are stored (before, a wrong answer). A longer argument is
    read in part (a slice), and a product's summed axis is the contraction check's."""
    c, a, b, w = (np.zeros(shape, np.float32) for shape in shapes)
    error = refused(scaled_sum, nt.Mapping(consumers=1, warp_specialize=False), (c, a, b, w), "bad-shape", *words)
    assert error.loc is not None and "Ct[i, j] = ((x + Bt[i, j])" in str(error)
    longer = np.zeros((128, 64), np.float32), np.zeros((256, 64), np.float32)
    nt.build(scaled_sum, nt.Mapping(consumers=1, warp_specialize=False)).plan(longer[0], longer[0], longer[1],
                                                                             np.zeros(64, np.float32))
    c, a, b = np.zeros((128, 128), np.float16), np.zeros((64, 64), np.float16), np.zeros((64, 128), np.float16)
    refused(matmul, TILE_64x64_MAPPING, (c, a, b), "bad-shape", "C[128, 128] is written at elements 64..127 along "
            "axis 0 from tiles of A[64, 64]")


@pytest.mark.parametrize("fields, code, words", [
    (dict(pipeline=2, mma_in_flight=2), "mapping-depth", "pipeline must be >= 3"),
    (dict(pipeline=1), "bad-mapping", "at least 2 slots"),
    (dict(schedule="fast"), "bad-mapping", "'cooperative' or 'pingpong'"),
    (dict(registers={"consumer": 300}), "mapping-registers", "24..256"),
    (dict(memory={"A": "texture"}), "bad-mapping", "one of"),
    (dict(smem_limit=300_000), "mapping-smem", "232448"),
    (dict(consumer=1), "bad-mapping", "no field 'consumer'"),        # a misspelt field: a mapping error, not TypeError
])
def test_mapping_fields_are_checked_when_made(fields, code, words):
    with pytest.raises(nvdsl.MappingError) as info:
        nt.Mapping(**fields)
    assert info.value.code == code and words in str(info.value), str(info.value)
    assert info.value.hint and "test_tasks.py" in str(info.value)           # the caller's line


def test_a_misspelt_mapping_field_is_refused_with_the_nearest_one():
    with pytest.raises(nvdsl.MappingError, match="did you mean consumers=") as info:
        nt.Mapping(consumer=1)
    assert info.value.loc is not None and "test_tasks.py" in info.value.loc.filename
    with pytest.raises(nvdsl.MappingError, match="by name"):
        nt.Mapping({"BM": 64})
    with pytest.raises(nvdsl.MappingError, match="did you mean tiles="):
        nt.Mapping().replace(tile={"BM": 64})


def test_program_mistakes_are_named():
    @nt.task(reads=("A", "B", "C"))
    def writes_a_read_tensor(C, A, B):
        Ct = nt.blocks(C, (128, 256))
        for i, j in nt.prange(*Ct.grid):
            acc = nt.zeros((128, 256), nt.float32)
            Ct[i, j] = acc.astype(C.dtype)
    refused(writes_a_read_tensor, None, gemm_args(256, 256, 64), "privilege", "may only read 'C'")

    @nt.task(reads=("A", "B"), writes=("C",))
    def aliasing(C, A, B):
        Ct = nt.blocks(C, (128, 256))
        for i, j in nt.prange(*Ct.grid):
            acc = nt.zeros((128, 256), nt.float32)
            Ct[i, 0] = acc.astype(C.dtype)
    refused(aliasing, None, gemm_args(256, 512, 64), "aliasing-write", "over p1 (< 2)")

    @nt.task(reads=("A", "B"), writes=("C",))
    def mismatched(C, A, B):
        Ct, At, Bt = nt.blocks(C, (128, 256)), nt.blocks(A, (128, 64)), nt.blocks(B, (32, 256))
        for i, j in nt.prange(*Ct.grid):
            acc = nt.zeros((128, 256), nt.float32)
            acc += At[i, 0] @ Bt[0, j]
    refused(mismatched, None, gemm_args(256, 256, 64), "bad-shape", "do not make a product")

    @nt.task(reads=("A", "B"), writes=("C",))
    def no_tunable(C, A, B):
        nt.tunable("BM")
    refused(no_tunable, None, gemm_args(256, 256, 64), "missing-tunable", "'BM'")

    @nt.task(reads=("A",), writes=("C",))
    def undeclared(C, A, B):
        pass
    refused(undeclared, None, gemm_args(256, 256, 64), "privilege", "'B'")

    @nt.task(reads=("X",), reduces=("acc",))
    def child(acc, X):
        acc += X @ X

    @nt.task(reads=("A", "B"), writes=("C",))
    def launches_beyond_its_privilege(C, A, B):
        nt.launch(child, A.region(), A.region())
    refused(launches_beyond_its_privilege, None, gemm_args(128, 128, 128), "privilege", "may only read")


def test_launched_tasks_become_part_of_the_program(request):
    @nt.task(reads=("A", "B"), reduces=("acc",))
    def mma(acc, A, B):
        acc += A @ B

    @nt.task(reads=("A", "B"), writes=("C",))
    def gemm(C, A, B):
        Ct, At, Bt = nt.blocks(C, (128, 256)), nt.blocks(A, (128, 64)), nt.blocks(B, (64, 256))
        for i, j in nt.prange(*Ct.grid):
            acc = nt.zeros((128, 256), nt.float32)
            for k in nt.srange(At.grid[1]):
                nt.launch(mma, acc, At[i, k], Bt[k, j])
            Ct[i, j] = acc.astype(C.dtype)

    args = gemm_args(1000, 2040, 520)
    mine = nt.build(gemm, nt.Mapping(sm_count=132)).passes(*args)["copies"]
    library = nt.build(matmul, nt.Mapping(sm_count=132)).passes(*args)["copies"]
    assert mine.replace("program gemm", "program matmul") == library


# --- generated kernels compile like hand-written ones ------------------------------------------------------

MAPPINGS = {
    "ws-4": MAPPING,
    "ws-2-stages": MAPPING.replace(pipeline=2),
    "ws-3-stages": MAPPING.replace(pipeline=3),
    "multistage": nt.Mapping(warp_specialize=False, pipeline=4),
    "multistage-5": nt.Mapping(warp_specialize=False, pipeline=5, tiles={"BN": 128}),
    "one-consumer": nt.Mapping(consumers=1, tiles={"BN": 128}),
    "pingpong": nt.Mapping(schedule="pingpong", tiles={"BN": 128}),
    "pingpong-64x256": nt.Mapping(schedule="pingpong", tiles={"BM": 64, "BN": 256}),
    "pingpong-not-persistent": nt.Mapping(schedule="pingpong", tiles={"BN": 128}, persistent=False, pipeline=3),
    "pingpong-two-in-flight": nt.Mapping(schedule="pingpong", tiles={"BN": 128}, mma_in_flight=2, pipeline=4,
                                         raster="snake"),
    "not-persistent": MAPPING.replace(persistent=False),
    "not-persistent-2": nt.Mapping(persistent=False, pipeline=2, consumers=1, tiles={"BN": 128}),
    "tile-256x128": nt.Mapping(tiles={"BM": 256, "BN": 128}),
    "tile-128x128": nt.Mapping(tiles={"BN": 128}, pipeline=5),
    "snake": MAPPING.replace(raster="snake"),
    "row-order": MAPPING.replace(raster="row", group=1),
    "two-in-flight": MAPPING.replace(mma_in_flight=2, pipeline=4),
    # one consumer of 64 x 256 products: ptxas needs 158 registers at entry for them (the producer gives up fewer)
    "one-consumer-64x256": nt.Mapping(tiles={"BM": 64, "BN": 256}, consumers=1),
    "library-64x64": TILE_64x64_MAPPING,
}


@pytest.mark.parametrize("name", sorted(MAPPINGS))
def test_every_mapping_compiles_without_spills(name):
    compiled = nt.build(matmul, MAPPINGS[name]).compile(*gemm_args(1000, 2040, 520))
    resources = compiled.resources["matmul_kernel"]
    assert resources.spill_stores == 0 and resources.spill_loads == 0 and resources.stack_frame == 0
    if find_tool("nvdisasm"):
        assert {"HGMMA", "UTMALDG", "UTMASTG", "SYNCS"} <= sass_opcodes(compiled.sass())


# --- on the GPU: mapping changes speed, never results -----------------------------------------------------

def _random(torch, shape, dtype, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(*shape, device="cuda", generator=g).to(dtype)


@nt.task(reads=("A", "B"), writes=("C",))
def product_read_in_its_step(C, A, B):
    """C = 3 A B: a step's product that the step reads (s) issued ahead of one carried across steps (acc)."""
    BM, BN, BK = nt.tunable("BM", 128), nt.tunable("BN", 64), nt.tunable("BK", 64)
    Ct, At, Bt = nt.blocks(C, (BM, BN)), nt.blocks(A, (BM, BK)), nt.blocks(B, (BK, BN))
    for i, j in nt.prange(*Ct.grid):
        acc = nt.zeros((BM, BN), nt.float32)
        twice = nt.zeros((BM, BN), nt.float32)
        for k in nt.srange(At.grid[1]):
            s = nt.zeros((BM, BN), name="s")
            s += At[i, k] @ Bt[k, j]
            acc += At[i, k] @ Bt[k, j]
            twice += s * 2.0
        Ct[i, j] = (acc + twice).astype(C.dtype)


@nt.task(reads=("A", "B", "U", "R"), writes=("C",))
def products_less_vectors(C, A, B, U, R):
    """C = sum over k of (A_k B_k - u_k[None, :] + r_k[:, None]): vectors per step read along a tile's columns
    (as the attention backward's log-sum-exp of its step's queries) and along its rows."""
    BM, BN, BK = nt.tunable("BM", 128), nt.tunable("BN", 64), nt.tunable("BK", 64)
    Ct, At, Bt = nt.blocks(C, (BM, BN)), nt.blocks(A, (BM, BK)), nt.blocks(B, (BK, BN))
    Ut, Rt = nt.blocks(U, (BN,)), nt.blocks(R, (BM,))
    for i, j in nt.prange(*Ct.grid):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in nt.srange(At.grid[1]):
            s = nt.zeros((BM, BN), name="s")
            s += At[i, k] @ Bt[k, j]
            acc += s - Ut[k * Ct.grid[1] + j][None, :] + Rt[k * Ct.grid[0] + i][:, None]
        Ct[i, j] = acc.astype(C.dtype)


VECTORS_IN_RING = {"U": "shared", "R": "shared"}


@pytest.mark.parametrize("memory, schedule", [
    ({}, {}), (VECTORS_IN_RING, {}),
    (VECTORS_IN_RING, {"schedule": "pingpong", "tiles": {"BM": 64}, "persistent": True}),
    (VECTORS_IN_RING, {"warp_specialize": False, "consumers": 1, "tiles": {"BM": 64}}),
    (VECTORS_IN_RING, {"persistent": True}),
])
def test_vectors_in_shared_memory_come_through_the_ring_unswizzled(memory, schedule):
    """``memory={"U": "shared"}`` puts an argument's vectors in the ring beside the product's tiles, loaded by TMA
    in one unswizzled box and read by each consumer at the tile's columns or its own rows; by default its threads
    load them from global memory. Both give the same numbers (the interpreter checks every access), under two
    cooperative consumers, a ping-pong, one consumer issuing its own loads, and persistent blocks."""
    rng = np.random.default_rng(5)
    m, n, k = 256, 128, 192
    steps = k // 64
    a, b = rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)
    u = rng.standard_normal(steps * n).astype(np.float32)
    r = rng.standard_normal(steps * m).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    fields = {"pipeline": 2, "consumers": 2, "persistent": False, "memory": memory, **schedule}
    kernel = nt.build(products_less_vectors, nt.Mapping(**fields))
    text = kernel.explain(c, a, b, u, r)
    if not schedule:
        assert ("U_s0 float32[64] from U[k0*128+p1*64:+64] (box [64], swizzle 0)" in text) == bool(memory), text
        assert ("R_s0 float32[128] from R[k0*256+p0*128:+128] (box [128], swizzle 0)" in text) == bool(memory), text
    else:
        assert "U_s0 float32[64] from U[" in text and "R_s0 float32[" in text and "swizzle 0" in text, text
    kernel(c, a, b, u, r)
    us, rs = u.reshape(steps, n).astype(np.float64), r.reshape(steps, m).astype(np.float64)
    expected = a.astype(np.float64) @ b.astype(np.float64) - us.sum(axis=0)[None, :] + rs.sum(axis=0)[:, None]
    # float32 sums of exact float16 products and of the vectors' elements: a few float32 eps of the magnitudes
    bound = 8 * k * np.finfo(np.float32).eps * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64) +
                                                np.abs(us).sum(axis=0)[None, :] + np.abs(rs).sum(axis=0)[:, None])
    assert np.all(np.abs(c - expected) <= bound)


@nt.task(reads=("A", "B", "V"), writes=("C",))
def product_plus_row_vector(C, A, B, V):
    """C = A B + v[:, None], the vector added after the loop."""
    Ct, At, Bt, Vt = nt.blocks(C, (128, 64)), nt.blocks(A, (128, 64)), nt.blocks(B, (64, 64)), nt.blocks(V, (128,))
    for i, j in nt.prange(*Ct.grid):
        acc = nt.zeros((128, 64), nt.float32)
        for k in nt.srange(At.grid[1]):
            acc += At[i, k] @ Bt[k, j]
        Ct[i, j] = (acc + Vt[i][:, None]).astype(C.dtype)


def test_a_vector_mapped_to_shared_memory_after_the_loop_is_refused_with_a_change_that_plans():
    """Vectors the epilogue reads come from global memory: asking for them in shared memory is refused, the hint
    naming the change under which the program plans."""
    args = (np.zeros((128, 64), np.float32), np.zeros((128, 64), f16), np.zeros((64, 64), f16),
            np.zeros(128, np.float32))
    refused(product_plus_row_vector, nt.Mapping(memory={"V": "shared"}), args, "mapping-memory", "'V'",
            "map with memory['V']='register'")
    nt.build(product_plus_row_vector, nt.Mapping(memory={"V": "register"})).explain(*args)


@pytest.mark.parametrize("extent, dtype, words", [(8, nvdsl.float8_e4m3fn, "(8 bytes)"),
                                                   (512, nvdsl.float32, "up to 256 elements")])
def test_a_vector_tma_cannot_move_is_refused_with_registers_as_the_way(extent, dtype, words):
    from nvdsl.errors import MappingError
    from nvdsl.tasks.passes import _vector_box
    load = ir.Copy(0, source=ir.Region("U", (ir.Affine(),), (extent,)), target="U_s0")
    with pytest.raises(MappingError) as refused:
        _vector_box(load, dtype)
    assert refused.value.code == "mapping-memory" and words in str(refused.value)
    assert list(refused.value.changes) == [{"memory": {"U": "register"}}]


@pytest.mark.parametrize("in_flight", [1, 2])
def test_a_product_issued_ahead_retires_before_the_math_that_reads_it(in_flight):
    """A product the step reads, followed by one that stays in flight, goes out first as a group of its own;
    the product after it waits until only itself runs, so the math reading the first finds it retired even
    where the mapping leaves two products in flight (which would leave the first running)."""
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((128, 192)).astype(np.float16), rng.standard_normal((192, 128)).astype(np.float16)
    c = np.zeros((128, 128), np.float32)
    kernel = nt.build(product_read_in_its_step, nt.Mapping(pipeline=3, mma_in_flight=in_flight, persistent=False))
    text = kernel.explain(c, a, b)
    assert "mma s += A_s0 @ B_s0 {e2, e3, e4}  [waited for: the step reads it, once e6 issued]" in text
    assert "mma acc += A_s0 @ B_s0 {e0, e3, e4, e6}  [1 product(s) left in flight]" in text
    kernel(c, a, b)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    # float32 sums of exact float16 products: three sums of 192 terms, each term within 192 eps of the magnitudes
    bound = 3 * 192 * np.finfo(np.float32).eps * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
    assert np.all(np.abs(c - 3 * exact) <= bound)


@requires_gpu
@pytest.mark.parametrize("m, n, k", [(1000, 1000, 1000), (2048, 1536, 4160)])
def test_one_program_gives_the_same_numbers_under_every_mapping(m, n, k):
    torch = pytest.importorskip("torch")
    a, b = _random(torch, (m, k), torch.float16, 1), _random(torch, (k, n), torch.float16, 2)
    reference = a.float() @ b.float()
    results = {}
    for name, mapping in MAPPINGS.items():
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float32)
        nt.build(matmul, mapping)(c, a, b)
        torch.cuda.synchronize()
        assert not torch.isnan(c).any(), f"{name}: some outputs were never written"
        error = ((c - reference).norm() / reference.norm()).item()
        assert error < 1e-5, f"{name}: relative error {error}"
        results[name] = c
    first = results["ws-4"]
    for name, c in results.items():
        assert torch.equal(c, first), f"{name} differs from ws-4 by {(c - first).abs().max().item()}"


@requires_gpu
@pytest.mark.parametrize("program, batch, m, n, k, dtype, c_dtype", [
    (matmul_nk, None, 1000, 1000, 1000, "float16", "float16"),
    (matmul_nk, None, 512, 768, 64, "bfloat16", "float32"),
    (batched_matmul, 3, 500, 760, 1000, "float16", "float16"),
    (batched_matmul, 8, 256, 512, 256, "bfloat16", "bfloat16")])
def test_k_major_and_batched_products_match_a_float32_reference(program, batch, m, n, k, dtype, c_dtype):
    torch = pytest.importorskip("torch")
    lead = (batch,) if batch else ()
    a = _random(torch, lead + (m, k), getattr(torch, dtype), 3)
    b = _random(torch, (n, k) if program is matmul_nk else lead + (k, n), getattr(torch, dtype), 4)
    c = torch.full(lead + (m, n), float("nan"), device="cuda", dtype=getattr(torch, c_dtype))
    nt.build(program, MAPPING)(c, a, b)
    torch.cuda.synchronize()
    reference = a.float() @ (b.float().T if program is matmul_nk else b.float())
    assert not torch.isnan(c).any()
    error = ((c.float() - reference).norm() / reference.norm()).item()
    assert error < {"float32": 1e-5, "float16": 1e-3, "bfloat16": 4e-3}[c_dtype], error


def test_batched_operands_get_the_wgmma_descriptors_of_their_matrices():
    """MLIR derives wgmma's leading-dimension offset from the TMA box's first extent: a batched box (1, 64, 64)
    must describe its operand as the (64, 64) matrix it is, not as a single row."""
    import re

    def descriptor_constants(program, *args):
        ptx = nt.build(program, MAPPING).compile(*args).ptx
        return sorted(set(re.findall(r"\b(46116\d{14})\b", ptx)))     # 64-bit words with the 128B-swizzle bits
    flat = descriptor_constants(matmul, *gemm_args(512, 768, 256))
    batched = descriptor_constants(batched_matmul, np.zeros((3, 512, 768), f16), np.zeros((3, 512, 256), f16),
                                   np.zeros((3, 256, 768), f16))
    assert flat and batched == flat


def test_fused_epilogues_compile_without_spills_or_serialized_products():
    """The epilogue reads the accumulators only after every product retired (else ptxas serializes them all,
    C7514), and its math, a column slice at a time, fits the registers beside the accumulators even where a
    block walks many tiles (8192 x 8192 on 132 SMs: a bias vector of the whole tile spilled there)."""
    f32, m = np.float32, 8192
    mapping = MAPPING.replace(sm_count=132)
    linear_args = (np.zeros((m, m), f16), np.zeros((m, 512), f16), np.zeros((m, 512), f16), np.zeros(m, f16))
    cases = [(linear_program(act), mapping, linear_args) for act in ("none", "relu", "gelu", "silu")] + [
        (linear_program(act), linear_mapping(act).replace(sm_count=132), linear_args) for act in ("relu", "gelu", "silu")] + [
        (gated_mlp, mapping.replace(tiles={"BN": 128}), (np.zeros((m, m), f16), np.zeros((m, 512), f16),
                                                          np.zeros((512, m), f16), np.zeros((512, m), f16))),
        (matmul_rowsum, mapping, (np.zeros((m, m), f16), np.zeros((32, m), f32), np.zeros((m, 512), f16),
                                  np.zeros((512, m), f16)))]
    for program, mapping, args in cases:
        compiled = nt.build(program, mapping).compile(*args)
        resources, = compiled.resources.values()
        assert resources.spill_stores == 0 and resources.stack_frame == 0, (program.name, resources)
        assert "C7514" not in compiled.module.ptxas_log and "C7519" not in compiled.module.ptxas_log


@requires_gpu
@pytest.mark.parametrize("activation", ["none", "relu", "gelu", "gelu_tanh", "silu"])
@pytest.mark.parametrize("m, n, k", [(1000, 1000, 520), (256, 512, 1024)])
def test_linear_layers_match_torch(activation, m, n, k):
    torch = pytest.importorskip("torch")
    a, w = _random(torch, (m, k), torch.float16, 5), _random(torch, (n, k), torch.float16, 6)
    bias = _random(torch, (n,), torch.float16, 7)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    linear(a, w, bias, c, activation=activation)       # ping-pong with an activation (linear_mapping)
    torch.cuda.synchronize()
    fn = {"none": lambda x: x, "relu": torch.relu, "gelu": torch.nn.functional.gelu,
          "gelu_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
          "silu": torch.nn.functional.silu}[activation]
    reference = fn(a.float() @ w.float().T + bias.float())
    error = ((c.float() - reference).norm() / reference.norm()).item()
    assert not torch.isnan(c).any() and error < 2e-3, error


def test_linear_hides_an_activations_epilogue_under_the_other_consumers_products(backend):
    """linear() maps a large layer with an activation as a ping-pong (the epilogue of one consumer's tile runs
    during the other's K loop) and a plain one cooperatively; both compute act(a @ w.T + bias)."""
    assert linear_mapping("gelu").schedule == "pingpong" and linear_mapping("none") == MAPPING
    assert linear_mapping("gelu", 8192, 8192) == linear_mapping("gelu")
    assert linear_mapping("none", 8192, 8192) == MAPPING
    rng = np.random.default_rng(9)
    m, n, k = 300, 264, 136
    a, w = rng.standard_normal((m, k)).astype(f16), rng.standard_normal((n, k)).astype(f16)
    bias = rng.standard_normal(n).astype(f16)
    for activation, fn in (("gelu", lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))),
                           ("none", lambda x: x)):
        c = np.zeros((m, n), f16)
        linear(a, w, bias, c, activation=activation, mapping=linear_mapping(activation))
        expected = fn(a.astype(np.float64) @ w.astype(np.float64).T + bias)
        assert np.linalg.norm(c - expected) / np.linalg.norm(expected) < 2e-3, activation
    with pytest.raises(nvdsl.ArgumentError, match="'tanh' must be one of") as info:
        linear(a, w, bias, np.zeros((m, n), f16), activation="tanh")
    assert info.value.code == "bad-argument" and info.value.loc.filename == __file__


def test_linear_gelu_tanh_is_torchs_tanh_formula(backend):
    """activation="gelu_tanh" computes torch's gelu(approximate="tanh"), not the erf GELU: with float32 out the
    two differ by up to about 5e-4 (near x = +-2), well above the kernel's own error."""
    rng = np.random.default_rng(11)
    m, n, k = 136, 72, 64
    a, w = (rng.standard_normal((m, k)) * 0.5).astype(f16), (rng.standard_normal((n, k)) * 0.5).astype(f16)
    bias = rng.standard_normal(n).astype(f16)
    c = np.zeros((m, n), np.float32)
    linear(a, w, bias, c, activation="gelu_tanh")
    x = a.astype(np.float64) @ w.astype(np.float64).T + bias
    tanh_formula = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    erf_formula = 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    assert np.abs(tanh_formula - erf_formula).max() > 2e-4      # the inputs tell the two apart
    assert np.abs(c - tanh_formula).max() < 2e-5

@requires_gpu
@pytest.mark.parametrize("m, n, k", [(1000, 1000, 520), (2048, 1024, 4096)])
def test_gated_mlp_and_row_sums_match_torch(m, n, k):
    torch = pytest.importorskip("torch")
    a = _random(torch, (m, k), torch.float16, 8)
    w1, w2 = _random(torch, (k, n), torch.float16, 9), _random(torch, (k, n), torch.float16, 10)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    nt.build(gated_mlp, MAPPING.replace(tiles={"BN": 128}))(c, a, w1, w2)
    torch.cuda.synchronize()
    reference = torch.nn.functional.silu(a.float() @ w1.float()) * (a.float() @ w2.float())
    error = ((c.float() - reference).norm() / reference.norm()).item()
    assert not torch.isnan(c).any() and error < 2e-3, error

    n_tiles = -(-n // 256)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    y = torch.full((n_tiles, m), float("nan"), device="cuda", dtype=torch.float32)
    nt.build(matmul_rowsum, MAPPING)(c, y, a, w1)
    torch.cuda.synchronize()
    reference = a.float() @ w1.float()
    assert ((c.float() - reference).norm() / reference.norm()).item() < 1e-3
    sums = a.float().sum(dim=1)
    for j in range(n_tiles):
        assert torch.allclose(y[j], sums, rtol=1e-4, atol=1e-2), (j, (y[j] - sums).abs().max().item())


def float8(*shape, code=10):
    """A float8 device array descriptor (DLPack code 10: e4m3fn, 12: e5m2) to trace and compile with."""
    from helpers import FakeDLPackDeviceArray
    return FakeDLPackDeviceArray(shape, code, 8)


def test_float8_products_need_k_major_operands_and_128_byte_rows():
    from nvdsl.kernels.gemm import FP8_MAPPING, scaled_matmul
    scales = (np.ones(1, np.float32), np.ones(1, np.float32))
    args = (np.zeros((1000, 1000), f16), float8(1000, 1024), float8(1000, 1024, code=12)) + scales
    compiled = nt.build(scaled_matmul, FP8_MAPPING).compile(*args)
    resources, = compiled.resources.values()
    assert resources.spill_stores == 0 and "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e5m2" in compiled.ptx
    if find_tool("nvdisasm"):
        assert "QGMMA" in sass_opcodes(compiled.sass())
    refused(scaled_matmul, MAPPING, args, "mapping-tile", "64 bytes", "128-byte swizzled rows")

    @nt.task(reads=("A", "B"), writes=("C",))
    def n_major(C, A, B):
        Ct, At, Bt = nt.blocks(C, (128, 256)), nt.blocks(A, (128, 128)), nt.blocks(B, (128, 256))
        for i, j in nt.prange(*Ct.grid):
            acc = nt.zeros((128, 256), nt.float32)
            for k in nt.srange(At.grid[1]):
                acc += At[i, k] @ Bt[k, j]
            Ct[i, j] = acc.astype(C.dtype)
    refused(n_major, None, (np.zeros((256, 256), f16), float8(256, 256), float8(256, 256)), "bad-layout", "K-major")


@requires_gpu
@pytest.mark.parametrize("a_type, b_type, c_dtype, m, n, k", [
    ("float8_e4m3fn", "float8_e4m3fn", "bfloat16", 1000, 1000, 1024),
    ("float8_e4m3fn", "float8_e5m2", "float16", 512, 768, 4096),
    ("float8_e5m2", "float8_e5m2", "float32", 256, 512, 272),
    ("float8_e4m3fn", "float8_e4m3fn", "bfloat16", 130, 257, 200)])     # rows of 200 and 514 bytes: staged
def test_float8_gemm_with_scales_matches_torch(a_type, b_type, c_dtype, m, n, k):
    torch = pytest.importorskip("torch")
    from nvdsl.kernels.gemm import scaled_gemm
    a = (_random(torch, (m, k), torch.float32, 11) * 2).to(getattr(torch, a_type))
    b = (_random(torch, (n, k), torch.float32, 12) * 2).to(getattr(torch, b_type))
    scale_a, scale_b = torch.tensor([0.5], device="cuda"), torch.tensor([0.25], device="cuda")
    c = torch.full((m, n), float("nan"), device="cuda", dtype=getattr(torch, c_dtype))
    scaled_gemm(a, b, c, scale_a, scale_b)
    torch.cuda.synchronize()
    reference = (a.float() @ b.float().T) * 0.125
    error = ((c.float() - reference).norm() / reference.norm()).item()
    # wgmma accumulates float8 products with about 14 bits of mantissa (not float32's 24), as cuBLAS's fast
    # float8 accumulation does: the error grows with K, past float16's rounding of C.
    assert not torch.isnan(c).any() and error < {"float32": 1e-3, "float16": 3e-3, "bfloat16": 6e-3}[c_dtype], error


#: The tensor cores add float8 products with about 14 bits of mantissa: a bound on each addition's relative error.
FLOAT8_SUM_ROUNDOFF = 2.0 ** -12


def block_scaled_reference(a, b, scale_a, scale_b, c_dtype):
    """``sum_k (a_k @ b_k.T) * scale_a[:, k] * scale_b[n // 128, k]`` in float64 over blocks of 128 values of K,
    and a bound on ``|c - it|`` for any order of the sums: each block's 128 products (exact) summed by the tensor
    cores (``FLOAT8_SUM_ROUNDOFF``), its two scalings and the float32 sum over blocks (Higham's gamma_n), and c's
    rounding."""
    from helpers import roundoff
    u32 = roundoff(np.float32)[0]
    gamma = lambda n, u: n * u / (1 - n * u)
    blocks = scale_a.shape[1]
    exact, magnitude = 0.0, 0.0
    for kb in range(blocks):
        part = slice(kb * 128, (kb + 1) * 128)
        scale = scale_a[:, kb, None] * np.repeat(scale_b[:, kb], 128)[None, :b.shape[0]]
        exact = exact + (a[:, part] @ b[:, part].T) * scale
        magnitude = magnitude + (np.abs(a[:, part]) @ np.abs(b[:, part]).T) * np.abs(scale)
    per_block = gamma(128, FLOAT8_SUM_ROUNDOFF) * (1 + gamma(2, u32)) + gamma(2, u32)
    bound = magnitude * (per_block + gamma(blocks, u32) * (1 + per_block))
    u_out, tiny = roundoff(c_dtype)
    return exact, bound + u_out * (np.abs(exact) + bound) + tiny


@pytest.mark.parametrize("m_major, schedule, memory", [
    (True, "cooperative", {}), (False, "cooperative", {}), (True, "pingpong", {}),
    (True, "cooperative", {"scale_a": "shared"}), (False, "pingpong", {"scale_a": "shared"}),
    (True, "turns", {"scale_a": "shared"})])
def test_block_scaled_float8_matmul_runs_on_its_bytes(m_major, schedule, memory):
    """DeepSeek-V3's block scales in the interpreter, on float8 bytes: ragged M, N and K (a partial last block of K
    and of B's rows), scale_a read as the transpose of an (M, K/128) array given M-major (torch's) or row-major;
    under the default mapping and the ones the benchmark times beside it (64-row tiles taken in turns; A's scales
    through the ring, by TMA, a row-major scale_a's transpose through a staging copy; the consumers taking turns
    at each step's product)."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    from nvdsl.interpreter.program import Program
    from nvdsl.kernels.gemm import BLOCK_SCALED_MAPPING, BLOCK_SCALED_PINGPONG_MAPPING, block_scaled_matmul
    m, n, k = 200, 300, 336
    rng = np.random.default_rng(m_major)
    a = rng.standard_normal((m, k)).astype(ml_dtypes.float8_e4m3fn)
    b = rng.standard_normal((n, k)).astype(ml_dtypes.float8_e5m2)
    scale_a = rng.uniform(0.25, 4, (m, 3)).astype(np.float32)
    scale_b = rng.uniform(0.25, 4, (3, 3)).astype(np.float32)
    given = np.ascontiguousarray(scale_a.T) if m_major else scale_a.T
    c = np.full((m, n), np.nan, np.float32)
    mapping = {"cooperative": BLOCK_SCALED_MAPPING, "pingpong": BLOCK_SCALED_PINGPONG_MAPPING,
               "turns": BLOCK_SCALED_MAPPING.replace(turns=True)}[schedule]
    trace = nt.build(block_scaled_matmul, mapping.replace(sm_count=2, memory=memory)).trace(
        c, float8(m, k), float8(n, k, code=12), given, scale_b)
    Program(trace.module).run(trace.specs, (c, a.view(np.uint8), b.view(np.uint8), given, scale_b), trace.written)
    exact, bound = block_scaled_reference(a.astype(np.float64), b.astype(np.float64), scale_a, scale_b, np.float32)
    assert (np.abs(c - exact) <= bound).all(), np.abs(c - exact).max()


@pytest.mark.parametrize("turns", [False, True])
def test_block_scaled_float8_products_compile_without_spills(turns):
    """Each block's product in a sum of its own (a second 64 x 128 accumulator per consumer) fits the registers;
    with turns, each consumer waits for its turn before its step's product and hands the turn on (named barriers)
    before waiting for it, as ``explain`` says."""
    from nvdsl.kernels.gemm import BLOCK_SCALED_MAPPING, block_scaled_matmul
    m, n, k = 1024, 1024, 1024
    args = (np.zeros((m, n), np.float32), float8(m, k), float8(n, k), np.ones((k // 128, m), np.float32),
            np.ones((n // 128, k // 128), np.float32))
    built = nt.build(block_scaled_matmul, BLOCK_SCALED_MAPPING.replace(turns=turns))
    compiled = built.compile(*args)
    resources, = compiled.resources.values()
    assert resources.spill_stores == 0 and "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3" in compiled.ptx
    turn_barriers = re.findall(r"barrier\.(sync|arrive) %r\d+, %r\d+;", compiled.ptx)
    assert sorted(set(turn_barriers)) == (["arrive", "sync"] if turns else [])
    assert ("at this consumer's turn at the tensor cores" in built.explain(*args)) == turns
    if find_tool("nvdisasm"):
        assert "QGMMA" in sass_opcodes(compiled.sass())


def test_block_scaled_gemm_autotunes_over_mappings_that_all_plan():
    """``autotune=True`` times :data:`AUTOTUNED_BLOCK_SCALED`: each plans for a large and a ragged problem (a
    candidate the task layer refused would only be left out, with why); with a mapping it is refused."""
    from helpers import FakeDLPackDeviceArray
    from nvdsl.kernels.gemm import AUTOTUNED_BLOCK_SCALED, block_scaled_gemm, block_scaled_matmul
    f32 = lambda *shape: FakeDLPackDeviceArray(shape, 2, 32)
    assert len(set(AUTOTUNED_BLOCK_SCALED)) == 4
    for m, n, k in ((8192, 8192, 4096), (200, 300, 336)):
        blocks = -(-k // 128)
        for mapping in AUTOTUNED_BLOCK_SCALED:
            nt.build(block_scaled_matmul, mapping).plan(f32(m, n), float8(m, k), float8(n, k), f32(blocks, m),
                                                        f32(-(-n // 128), blocks))
    for autotune, mapping in ((True, AUTOTUNED_BLOCK_SCALED[0]), ("yes", None)):
        with pytest.raises(nvdsl.ArgumentError) as info:
            block_scaled_gemm(float8(256, 256), float8(256, 256), f32(256, 256), f32(256, 2), f32(2, 2),
                              mapping=mapping, autotune=autotune)
        assert info.value.code == "bad-argument" and "autotune" in str(info.value)
        assert info.value.loc.filename == __file__


def test_block_scaled_gemm_names_the_scales_shape_it_needs():
    from helpers import FakeDLPackDeviceArray
    from nvdsl.kernels.gemm import block_scaled_gemm
    f32 = lambda *shape: FakeDLPackDeviceArray(shape, 2, 32)
    a, b, c = float8(256, 300), float8(200, 300), f32(256, 200)
    with pytest.raises(nvdsl.ArgumentError) as info:
        block_scaled_gemm(a, b, c, f32(256, 3), f32(1, 3))
    assert info.value.code == "bad-shape" and "'scale_b' has shape (1, 3)" in str(info.value)
    assert "(2, 3)" in info.value.hint and info.value.loc.filename == __file__
    with pytest.raises(nvdsl.ArgumentError) as info:
        block_scaled_gemm(a, b, c, f32(256, 2), f32(2, 3))
    assert info.value.code == "bad-shape" and "'scale_a'" in str(info.value) and "(256, 3)" in info.value.hint
    with pytest.raises(nvdsl.ArgumentError) as info:             # a bare DLPack export: no view to read it through
        block_scaled_gemm(a, b, c, f32(256, 3), f32(2, 3))
    assert info.value.code == "bad-argument" and "'.T'" in str(info.value) and info.value.loc.filename == __file__


@requires_gpu
@pytest.mark.parametrize("m, n, k, c_dtype, m_major", [
    (1000, 1000, 1024, "bfloat16", True),
    (512, 768, 4096, "float32", False),
    (130, 257, 200, "float16", True)])         # rows of 200 bytes: staged; partial blocks of K and of B's rows
def test_block_scaled_float8_gemm_matches_float64(m, n, k, c_dtype, m_major, tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("NVDSL_CACHE_DIR", str(tmp_path))        # autotune=True keeps its winner there
    from nvdsl.kernels.gemm import block_scaled_gemm
    a = (_random(torch, (m, k), torch.float32, 21) * 2).to(torch.float8_e4m3fn)
    b = (_random(torch, (n, k), torch.float32, 22) * 2).to(torch.float8_e4m3fn)
    blocks = -(-k // 128)
    scale_a = torch.rand(blocks, m, device="cuda") + 0.5
    scale_a = scale_a.T if m_major else scale_a.T.contiguous()          # (m, blocks), M-major or row-major
    scale_b = torch.rand(-(-n // 128), blocks, device="cuda") + 0.5
    exact, bound = block_scaled_reference(a.double().cpu().numpy(), b.double().cpu().numpy(),
                                          scale_a.double().cpu().numpy(), scale_b.double().cpu().numpy(),
                                          getattr(torch, c_dtype))
    from nvdsl.kernels.gemm import BLOCK_SCALED_MAPPING
    for options in ({}, {"autotune": True}, {"mapping": BLOCK_SCALED_MAPPING.replace(turns=True)}):
        c = torch.full((m, n), float("nan"), device="cuda", dtype=getattr(torch, c_dtype))
        block_scaled_gemm(a, b, c, scale_a, scale_b, **options)
        torch.cuda.synchronize()
        assert (np.abs(c.double().cpu().numpy() - exact) <= bound).all(), options


@pytest.mark.parametrize("mapping, change", [
    (MAPPING.replace(consumers=1), {"consumers": 2}),
    (MAPPING.replace(tiles={"BM": 128, "BN": 256, "BK": 64}, schedule="pingpong"), {"schedule": "cooperative"})])
def test_a_register_refusal_names_a_change_that_is_accepted(mapping, change):
    """Accumulators too large for a consumer's registers: the hint names a mapping change computed with the
    planner's own arithmetic, and that change plans."""
    args = gemm_args(512, 512, 256)
    with pytest.raises(nvdsl.MappingError) as info:
        nt.build(matmul, mapping.replace(sm_count=2)).plan(*args)
    first = info.value.hint.removeprefix("map with ").split(", or ")[0]
    named = ", ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in change.items())
    assert info.value.code == "mapping-registers" and first.startswith(named), info.value.hint
    nt.build(matmul, mapping.replace(sm_count=2, **change)).plan(*args)


def test_tile_indices_subtract():
    """``blocks - 1 - t`` (a loop walked from its last block, as the backward's causal dK/dV loop) is an affine index."""
    from nvdsl.tasks.ir import Affine
    t, j = Affine.var("t"), Affine.var("j")
    walked = 8 - 1 - t
    assert (walked.const, walked.coefficient("t")) == (7, -1)
    bound = 8 * 64 - j * 128
    assert (bound.const, bound.coefficient("j"), str(bound)) == (512, -128, "j*-128+512")
    assert (t - j - 2).terms == (("j", -1), ("t", 1)) and (-t).coefficient("t") == -1


@nt.task(reads=("A", "B"), writes=("S",))
def _column_sums_of_a_product(S, A, B):
    """``S[j] = sum_i (A @ B)[i, j]``: every row of the product reaches every sum."""
    BM, BN, BK = nt.tunable("BM", 64), nt.tunable("BN", 128), nt.tunable("BK", 64)
    At, Bt, St = nt.blocks(A, (BM, BK)), nt.blocks(B, (BK, BN)), nt.blocks(S, (BN,))
    for j in nt.prange(Bt.grid[1]):
        acc = nt.zeros((BM, BN), name="acc")
        for k in nt.srange(At.grid[1]):
            acc += At[0, k] @ Bt[k, j]
        St[j] = acc.sum(axis=0)


def test_a_decode_steps_few_rows_are_loaded_and_not_zero_filled(backend):
    """An A with fewer rows than the tile (a decode step's) is loaded in a box of its rows rounded up to 8, 16 or 32
    (TMA's zero-filling past its end cost as much as loading, measured on an H200); the rest of the slot keeps
    what it held, which only rows past the output's end depend on. Not where rows mix (a sum down the columns),
    nor for B, whose rows are K. In the interpreter shared memory starts as all-ones bytes (NaN), so a row read
    before written would show."""
    kernel = nt.build(matmul, TILE_64x128_MAPPING)
    for m, rows in ((1, 8), (5, 8), (16, 16), (20, 32)):
        text = kernel.explain(*gemm_args(m, 300, 200))
        assert f"(box [{rows}, 64], swizzle 128; rows from {rows} not loaded)" in text, text
        assert f"full: 1 arrival + {(rows + 128) * 64 * 2} B" in text
    for m in (33, 64, 100):
        assert "not loaded" not in kernel.explain(*gemm_args(m, 300, 200))
    assert "not loaded" not in kernel.explain(*gemm_args(64, 300, 40))    # K = 40: B's rows, not loaded whole
    two_boxes_wide = TILE_64x128_MAPPING.replace(tiles={"BM": 64, "BN": 128, "BK": 128}, pipeline=4)
    assert "not loaded" not in kernel.with_mapping(two_boxes_wide).explain(*gemm_args(5, 300, 200))
    a, b = np.zeros((5, 200), f16), np.zeros((200, 300), f16)
    sums = nt.build(_column_sums_of_a_product, nt.Mapping(consumers=1, persistent=False))
    with pytest.raises(nvdsl.TaskError, match="sum down the columns") as refused:     # its hint's change plans
        sums.plan(np.zeros((300,), np.float32), a, b)
    assert refused.value.hint.startswith("map with schedule='pingpong'")
    sums = sums.with_mapping(nt.Mapping(schedule="pingpong", persistent=False))
    assert "not loaded" not in sums.explain(np.zeros((300,), np.float32), a, b)
    rng = np.random.default_rng(5)
    for m in (1, 13):
        a, b = (rng.standard_normal(s).astype(f16) for s in ((m, 200), (200, 300)))
        c = np.full((m, 300), 7, f16)
        kernel(c, a, b)
        expected = a.astype(np.float64) @ b.astype(np.float64)
        bound = 200 * 2.0 ** -24 * (np.abs(a).astype(np.float64) @ np.abs(b)) + 2.0 ** -11 * np.abs(expected)
        assert np.all(np.abs(c - expected) <= bound + 2.0 ** -24)


def test_a_task_kernel_takes_its_arrays_by_name(backend):
    """kernel(C=c, A=a, B=b), or mixed with positions, binds by the program's parameter names; an unknown name or
    one given twice is a bad-call naming it (before: Python's TypeError from TaskKernel.__call__)."""
    kernel = nt.build(matmul, nt.Mapping(tiles={"BM": 64, "BN": 64}, consumers=1, persistent=False))
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 64)).astype(f16), rng.standard_normal((64, 64)).astype(f16)
    by_position, by_name, mixed = (np.zeros((64, 64), np.float32) for _ in range(3))
    kernel(by_position, a, b)
    kernel(C=by_name, A=a, B=b)
    kernel(mixed, B=b, A=a)
    assert np.array_equal(by_position, by_name) and np.array_equal(by_position, mixed)    # one kernel, one input
    for call, words in ((lambda: kernel(mixed, a, X=b), "no parameter is named 'X'"),
                        (lambda: kernel(mixed, a, b, A=a), "multiple values for argument 'A'")):
        with pytest.raises(nvdsl.ArgumentError) as refused:
            call()
        assert refused.value.code == "bad-call" and words in str(refused.value)
        assert "test_tasks.py" in str(refused.value)


def test_a_tensor_of_another_rank_than_its_tiles_is_named_with_its_shape():
    with pytest.raises(nvdsl.TaskError) as refused:
        nt.build(matmul).plan(np.zeros((64, 64), f16), np.zeros(64, f16), np.zeros((64, 64), f16))
    assert refused.value.code == "bad-tile" and "'A' is 1-D (shape [64])" in str(refused.value)


def test_a_product_stored_into_a_float64_tensor_is_refused_by_its_name():
    """The tile goes out through a staging tile of float32, float16 or bfloat16: a float64 C used to stop inside
    emission with 'WGMMAAccumulator.store needs a 2-D float32, float16 or bfloat16 array'."""
    kernel = nt.build(matmul, nt.Mapping(tiles={"BM": 64, "BN": 64}, consumers=1, persistent=False))
    with pytest.raises(nvdsl.TaskError) as refused:
        kernel.plan(np.zeros((64, 64)), np.zeros((64, 64), f16), np.zeros((64, 64), f16))
    assert refused.value.code == "bad-dtype" and "'C' is float64" in str(refused.value)

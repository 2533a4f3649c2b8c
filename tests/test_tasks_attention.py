"""The task layer's two-phase loops, written for attention (``nvdsl.kernels.attention.attention_program``):
loads once per tile, products with a register A operand, tiles updated in place, positions and masks,
triangular loops, masks left out where they cannot change a value, longest tiles first. CPU: golden
schedules, refusals, and the numbers in the interpreter; the GPU runs the same cases."""

import re

import numpy as np
import pytest

from nvdsl import tasks as nt
from nvdsl.kernels.attention import attention_program, task_mapping
from nvdsl.kernels.gemm import matmul, matmul_nk
from nvdsl.testing import requires_gpu
from test_attention import check, problem
from test_tasks import gemm_args, golden, planning_text, refused


def explained(causal, b, h, hkv, l, lk, d, mapping=None):
    q, k, v, o, lse = problem(b, h, hkv, l, lk, d)
    return nt.build(attention_program(causal), mapping or task_mapping(d, causal, l)).explain(o, lse, q, k, v)


@pytest.mark.parametrize("name, causal, shape", [
    ("tasks_attention", False, (2, 4, 2, 1000, 1000, 128)),
    ("tasks_attention_causal", True, (1, 2, 1, 512, 512, 64)),
])
def test_attention_schedules_are_explained(name, causal, shape, request):
    text = explained(causal, *shape)
    golden(f"{name}.schedule.txt", text, request)
    assert "phase A of step k0 around phase B of step k0-1" in text
    assert "get ring_tile: Q_s0 (held for the tile)" in text           # Q is loaded once per tile
    assert "ring_step_a" in text and "ring_step_b" in text             # K and V have a ring each


def test_each_planning_pass_of_attention_prints_its_decisions(request):
    q, k, v, o, lse = problem(1, 2, 1, 512, 512, 64)
    passes = nt.build(attention_program(True), task_mapping(64, True, 512)).passes(o, lse, q, k, v)
    golden("tasks_attention_causal.stages.txt", planning_text(passes), request)
    assert "main loop: two phases per step" in passes["main_loop"]


def test_the_passes_hoist_the_query_tile_and_keep_p_in_registers(request):
    q, k, v, o, lse = problem(1, 2, 1, 512, 512, 64)
    passes = nt.build(attention_program(True), task_mapping(64, True, 512)).passes(o, lse, q, k, v)
    golden("tasks_attention.eliminated.txt", passes["eliminated"], request)
    copies, eliminated = passes["copies"], passes["eliminated"]
    # the copy of Q's tile sits in the key loop after copy insertion, before it after elimination
    loop = eliminated.index("srange")
    assert copies.index("copy Q[") > copies.index("srange") and eliminated.index("copy Q[") < loop
    # P V reads P from registers: the product's A operand is the cast tile, never copied to shared memory
    product = re.search(r"mma o \+= (t\d+) @ V_s0", eliminated)
    assert product and f"{product.group(1)}: float16[128, 128] register" in eliminated


def test_masks_are_left_out_where_they_cannot_change_a_score():
    causal = explained(True, 1, 2, 1, 512, 512, 64)
    assert "left out while k0 < min(p3*128-127 // 128 + 1, 384 // 128 + 1)" in causal
    assert "p3 descending (tiles with more steps first)" in causal
    aligned = explained(False, 1, 2, 1, 512, 512, 64)
    assert "left out while k0 < min(384 // 128 + 1)" in aligned


@pytest.mark.parametrize("b, h, hkv, l, lk, d, causal, persistent, mapped_as", [
    (1, 4, 2, 200, 333, 64, True, False, None),      # GQA, ragged, causal: the masked and unmasked loops
    (1, 2, 1, 300, 260, 64, False, True, None),      # persistent: rings, turns and the Q slot across tiles
    (1, 2, 1, 300, 260, 64, True, True, None),
    (1, 2, 2, 400, 400, 64, False, False, 4096),     # three consumers (192 query rows per block)
    (1, 2, 2, 400, 400, 64, True, False, 8192),      # three consumers under a causal mask
])
def test_the_attention_program_matches_numpy(b, h, hkv, l, lk, d, causal, persistent, mapped_as, backend):
    q, k, v, o, lse = problem(b, h, hkv, l, lk, d)
    mapping = task_mapping(d, causal, mapped_as or l)
    if persistent:
        mapping = mapping.replace(persistent=True, sm_count=3, raster="row")
    nt.build(attention_program(causal), mapping)(o, lse, q, k, v)
    check(o, lse, q, k, v, causal, "float16")


def test_a_tile_ring_gets_one_slot_where_two_do_not_fit(backend):
    """176-key blocks at D = 128: two K and two V slots leave room for one Q slot, which still works."""
    mapping = task_mapping(128, False, 4096).replace(tiles={"BM": 128, "BN": 176})
    assert "ring ring_tile: 1 slots" in explained(False, 1, 1, 1, 128, 200, 128, mapping)
    q, k, v, o, lse = problem(1, 1, 1, 128, 200, 128)
    nt.build(attention_program(False), mapping)(o, lse, q, k, v)
    check(o, lse, q, k, v, False, "float16")


def test_k_major_operands_wider_than_one_swizzle_span(backend):
    """A K-major B tile of 128 values along K is two 64-value TMA boxes; wgmma steps through both."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 256)).astype(np.float16)
    b = rng.standard_normal((256, 256)).astype(np.float16)
    c = np.zeros((128, 256), np.float32)
    nt.build(matmul_nk, nt.Mapping(tiles={"BN": 256, "BK": 128}, pipeline=2, persistent=False))(c, a, b)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32).T, rtol=1e-3, atol=1e-2)


def test_two_phase_mistakes_are_named():
    q, k, v, o, lse = problem(1, 2, 1, 256, 256, 64)
    args = (o, lse, q, k, v)
    refused(attention_program(False), task_mapping(64, False, 256).replace(warp_specialize=False), args,
            "bad-mapping", "warp specialization")
    refused(matmul, nt.Mapping(turns=True), gemm_args(256, 256, 64), "bad-mapping", "turns=True")

    @nt.task(reads=("A", "B"), writes=("C",))
    def bad_where(C, A, B):
        Ct = nt.blocks(C, (128, 256))
        for i, j in nt.prange(*Ct.grid):
            acc = nt.zeros((128, 256), nt.float32)
            Ct[i, j] = nt.where(acc, acc, 0.0).astype(C.dtype)
    refused(bad_where, None, gemm_args(256, 256, 64), "bad-dtype", "must be a mask")

    @nt.task(reads=("A", "B"), writes=("C",))
    def bad_assign(C, A, B):
        Ct = nt.blocks(C, (128, 256))
        for i, j in nt.prange(*Ct.grid):
            acc = nt.zeros((128, 256), nt.float32)
            acc[...] = nt.zeros((128,), nt.float32)
    refused(bad_assign, None, gemm_args(256, 256, 64), "bad-shape", "acc[...] =")

    @nt.task(reads=("A", "B"), writes=("C",))
    def bad_below(C, A, B):
        Ct = nt.blocks(C, (128, 256))
        for i, j in nt.prange(*Ct.grid):
            for k in nt.srange(4, below=1.5, step=64):
                pass
    refused(bad_below, None, gemm_args(256, 256, 64), "bad-loop", "below=")

    @nt.task(reads=("A", "B"), writes=("C",))
    def empty_first_tile(C, A, B):        # below=i * 128 runs no step for i = 0
        Ct, At, Bt = nt.blocks(C, (128, 256)), nt.blocks(A, (128, 64)), nt.blocks(B, (64, 256))
        for i, j in nt.prange(*Ct.grid):
            acc = nt.zeros((128, 256), nt.float32)
            for k in nt.srange(At.grid[1], below=i * 128, step=64):
                acc += At[i, k] @ Bt[k, j]
            Ct[i, j] = acc.astype(C.dtype)
    error = refused(empty_first_tile, None, gemm_args(256, 256, 256), "bad-loop", "below = 0 there")
    assert error.origin is not None and error.origin.filename == __file__          # the task's line, beside the call

    @nt.task(reads=("A", "B"), writes=("C",))
    def colliding(C, A, B):               # 2 * p0 + p1 over p1 < 4 writes row tile 2 twice
        Ct = nt.blocks(C, (128, 256))
        for i, j, g in nt.prange(1, 2, 4):
            acc = nt.zeros((128, 256), nt.float32)
            Ct[j * 2 + g, 0] = acc.astype(C.dtype)
    refused(colliding, None, gemm_args(128 * 8, 256, 64), "aliasing-write", "p1")


ATTENTION_MAPPINGS = {
    "default": task_mapping(64, True, 1000),
    "no-turns": task_mapping(64, True, 1000).replace(turns=False),
    "persistent": task_mapping(64, True, 1000).replace(persistent=True, raster="row"),
    "persistent-few-blocks": task_mapping(64, True, 1000).replace(persistent=True, raster="row", sm_count=7),
    "three-consumers": task_mapping(64, True, 8192),
    "three-slots": task_mapping(64, True, 1000).replace(pipeline=3),
    "grouped-order": task_mapping(64, True, 1000).replace(persistent=True, raster="grouped", group=3),
    "64-key-blocks": task_mapping(64, True, 1000).replace(tiles={"BM": 128, "BN": 64}),
}


@requires_gpu
def test_one_attention_program_gives_the_same_numbers_under_every_mapping():
    """Mappings with the same key blocks compute every row in the same order: equal bits; other key blocks
    sum in another order: equal within rounding."""
    torch = pytest.importorskip("torch")
    q, k, v, o, lse = (torch.from_numpy(x).cuda() for x in problem(2, 4, 2, 1000, 1000, 64))
    results = {}
    for name, mapping in ATTENTION_MAPPINGS.items():
        o.fill_(float("nan"))
        lse.fill_(float("nan"))
        nt.build(attention_program(True), mapping)(o, lse, q, k, v)
        torch.cuda.synchronize()
        assert not (o.isnan().any() or lse.isnan().any()), f"{name}: some outputs were never written"
        results[name] = (o.clone(), lse.clone())
    check(*(x.cpu().numpy() for x in results["default"]), *(x.cpu().numpy() for x in (q, k, v)), True, "float16")
    for name, (o_, lse_) in results.items():
        if name == "64-key-blocks":
            torch.testing.assert_close(o_, results["default"][0], atol=2e-3, rtol=2e-3)
            torch.testing.assert_close(lse_, results["default"][1], atol=1e-5, rtol=1e-5)
        else:
            assert torch.equal(o_, results["default"][0]) and torch.equal(lse_, results["default"][1]), name


@nt.task(reads=("A", "B", "bias"), writes=("C",))
def resident_a_with_bias(C, A, B, bias):
    """C = bias + A[:, :64] @ (sum of B's K tiles): A's tile is loaded once per tile (a tile ring), the bias
    vector before the loop (registers)."""
    Ct, At, Bt, bt = nt.blocks(C, (128, 128)), nt.blocks(A, (128, 64)), nt.blocks(B, (64, 128)), nt.blocks(bias, (128,))
    for i, j in nt.prange(*Ct.grid):
        acc = nt.zeros((128, 128), nt.float32)
        acc += bt[j][None, :]
        for k in nt.srange(Bt.grid[0]):
            acc += At[i, 0] @ Bt[k, j]
        Ct[i, j] = acc.astype(C.dtype)


def test_a_tile_ring_beside_other_loads_before_the_loop(backend):
    """The tile ring's loads are taken from its slot; the prologue's other loads (a bias vector) still run."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((256, 64)).astype(np.float16)
    b = rng.standard_normal((192, 256)).astype(np.float16)
    bias = rng.standard_normal(256).astype(np.float32)
    c = np.zeros((256, 256), np.float32)
    kernel = nt.build(resident_a_with_bias, nt.Mapping(pipeline=2, persistent=False, mma_in_flight=0))
    assert "get ring_tile: A_s" in kernel.explain(c, a, b, bias)
    kernel(c, a, b, bias)
    b_sum = b.astype(np.float32).reshape(3, 64, 256).sum(axis=0)
    np.testing.assert_allclose(c, bias + a.astype(np.float32) @ b_sum, rtol=2e-3, atol=2e-2)

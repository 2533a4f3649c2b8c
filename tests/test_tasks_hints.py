"""Every refusal of a mapping by the task layer's planner names, in its hint, changes of the mapping that the
planner accepts: for each, the refused mapping with the hint's first change applied plans. (The kernel plans
every change a refusal proposes and names only those that plan: ``TaskKernel._stages``.)"""

import numpy as np
import pytest

import nvdsl
import nvdsl.tasks as nt
from nvdsl.kernels.attention import attention_program, task_mapping
from nvdsl.kernels.gemm import MAPPING, matmul, matmul_nk
from nvdsl.kernels.rowwise import default_mapping as rowwise_mapping
from nvdsl.kernels.rowwise import softmax_program
from nvdsl.tasks.mapping import apply_change, change_text
from test_rowwise import softmax_tile
from test_tasks import gemm_args
from test_tasks_levels import gemm as launched_gemm

f16, f32 = np.float16, np.float32


def _attention_args():
    q = np.zeros((1, 1, 256, 64), f16)
    return np.zeros_like(q), np.zeros((1, 1, 256), f32), q, q.copy(), q.copy()


def _attention_args_d128():
    q = np.zeros((1, 1, 64, 128), f16)
    return np.zeros_like(q), np.zeros((1, 1, 64), f32), q, q.copy(), q.copy()


_GEMM = gemm_args(256, 512, 256)
_ROWS = (np.zeros((128, 1000), f32), np.zeros((128, 1000), f32))
_ONE_CONSUMER = nt.Mapping(tiles={"BM": 64, "BN": 128}, consumers=1)

# (what is refused, program, refused mapping, arguments, the change the hint names first, the error's code)
CASES = [
    ("an mma operand out of shared memory", matmul, MAPPING.replace(memory={"A": "register"}), _GEMM,
     {"memory": {"A": "shared"}}, "mapping-memory"),
    ("an argument's tiles in global memory", softmax_tile, _ONE_CONSUMER.replace(memory={"X": "global"}), _ROWS,
     {"memory": {"X": "register"}}, "mapping-memory"),
    ("a computed tile in shared memory", softmax_tile, _ONE_CONSUMER.replace(memory={"acc": "shared"}), _ROWS,
     {"memory": {"acc": "register"}}, "mapping-memory"),
    ("a tunable the program never asks for", softmax_tile, _ONE_CONSUMER.replace(tiles={"BM": 64, "BQ": 3}), _ROWS,
     {"tiles": {"BQ": None}}, "bad-mapping"),
    ("a level for no task", launched_gemm, MAPPING.replace(levels={"nothing": "block"}), _GEMM,
     {"levels": {"nothing": None}}, "mapping-level"),
    ("a level for part of a tile's work", launched_gemm, MAPPING.replace(levels={"store": "block"}), _GEMM,
     {"levels": {"store": None}}, "mapping-level"),
    ("the host's task on a block", launched_gemm, MAPPING.replace(levels={"gemm": "block"}), _GEMM,
     {"levels": {"gemm": "host"}}, "mapping-level"),
    ("a tile's task on the host", launched_gemm, MAPPING.replace(levels={"tile": "host"}), _GEMM,
     {"levels": {"tile": "block"}}, "mapping-level"),
    ("the products on a block", launched_gemm, MAPPING.replace(levels={"mma": "block"}), _GEMM,
     {"levels": {"mma": "warpgroup"}}, "mapping-level"),
    ("a schedule against the levels", launched_gemm,
     MAPPING.replace(tiles={"BM": 128, "BN": 128, "BK": 64}, levels={"tile": "warpgroup"}, schedule="cooperative"),
     _GEMM, {"schedule": "pingpong"}, "mapping-level"),
    ("a ping-pong of 3 consumers", matmul, MAPPING.replace(tiles={"BM": 128, "BN": 128, "BK": 64},
                                                           schedule="pingpong", consumers=3), _GEMM,
     {"consumers": 2}, "bad-mapping"),
    ("a row tile held together beside a producer", softmax_tile, nt.Mapping(tiles={"BM": 3, "BN": 256}), _ROWS,
     {"warp_specialize": False}, "bad-mapping"),
    ("a row tile held together too narrow for its warps", softmax_tile,
     nt.Mapping(tiles={"BM": 1, "BN": 256}, consumers=4, warp_specialize=False), _ROWS, {"tiles": {"BN": 512}},
     "mapping-tile"),
    ("a product's row tile the consumers cannot share", matmul, MAPPING.replace(tiles={"BM": 64, "BN": 256, "BK": 64}),
     _GEMM, {"consumers": 1}, "mapping-tile"),
    ("operand rows narrower than 128 bytes", matmul, MAPPING.replace(tiles={"BM": 128, "BN": 256, "BK": 32}), _GEMM,
     {"tiles": {"BK": 64}}, "mapping-tile"),
    ("a product wider than wgmma's N", matmul, MAPPING.replace(tiles={"BM": 128, "BN": 264, "BK": 64},
                                                               consumers=2), gemm_args(256, 528, 256),
     {"tiles": {"BN": 256}}, "mapping-tile"),
    ("a ping-pong of a two-phase loop", attention_program(), task_mapping(64, False, 256).replace(schedule="pingpong"),
     _attention_args(), {"schedule": "cooperative", "turns": True}, "bad-mapping"),
    ("a two-phase loop without a producer", attention_program(),
     task_mapping(64, False, 256).replace(warp_specialize=False), _attention_args(), {"warp_specialize": True},
     "bad-mapping"),
    ("turns where no step reads its products", matmul, MAPPING.replace(turns=True), _GEMM, {"turns": False}, "bad-mapping"),
    ("a ping-pong without a producer", matmul, MAPPING.replace(tiles={"BM": 128, "BN": 128, "BK": 64},
                                                               schedule="pingpong", warp_specialize=False), _GEMM,
     {"warp_specialize": True}, "bad-mapping"),
    # (a program without products stores each thread's own elements, with no staging tile: a product's output)
    ("a staging tile of 80-byte rows", matmul_nk, MAPPING.replace(tiles={"BM": 128, "BN": 40, "BK": 64},
                                                                 persistent=False),
     gemm_args(256, 80, 64, b_layout="NK"), {"tiles": {"BN": 64}}, "mapping-tile"),
    ("accumulators past a consumer's registers", softmax_program(),
     rowwise_mapping().replace(tiles={"BM": 64, "BN": 512}), _ROWS,
     {"tiles": {"BM": 32}}, "mapping-registers"),
    ("roles past the register file", matmul, MAPPING.replace(registers={"consumer": 240}), _GEMM,
     {"registers": {"consumer": 232}}, "mapping-registers"),
    ("consumers' registers below a thread's at launch", attention_program(),
     task_mapping(128, False, 64).replace(registers={"producer": 24, "consumer": 240}), _attention_args_d128(),
     {"registers": {"producer": 24, "consumer": 256}}, "mapping-registers"),
    ("rings past shared memory", matmul, MAPPING.replace(pipeline=4, smem_limit=150000), _GEMM,
     {"pipeline": 2}, "mapping-smem"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_refusals_hint_names_a_change_that_plans(case):
    _, program, mapping, args, change, code = case
    kernel = nt.build(program, mapping.replace(sm_count=4))
    with pytest.raises(nvdsl.MappingError) as refused:
        kernel.plan(*args)
    hint = refused.value.hint or ""
    assert refused.value.code == code, refused.value
    assert hint.startswith("map with " + change_text(change)), hint
    kernel.with_mapping(apply_change(kernel.mapping, change)).plan(*args)


def test_a_refusal_with_no_tunable_to_change_proposes_none():
    """A product whose N no tunable of the mapping gives (the program's own default, 264 columns of a
    (256, 264) C under the tile's full width): the hint proposes nothing that does not plan."""
    @nt.task(reads=("A", "B"), writes=("C",))
    def wide(C, A, B):
        Ct, At, Bt = nt.blocks(C, (128, 264)), nt.blocks(A, (128, 64)), nt.blocks(B, (64, 264))
        for i, j in nt.prange(*Ct.grid):
            acc = nt.zeros((128, 264))
            for k in nt.srange(At.grid[1]):
                acc += At[i, k] @ Bt[k, j]
            Ct[i, j] = acc.astype(C.dtype)
    with pytest.raises(nvdsl.MappingError) as refused:
        nt.build(wide, nt.Mapping(sm_count=4)).plan(*gemm_args(256, 264, 128))
    assert refused.value.hint is None or "map with" not in refused.value.hint, refused.value.hint

"""The task layer's ping-pong: two consumer warpgroups, each holding a whole tile's accumulators, take the block's
tiles alternately and turns at the main loop (named barriers 10 and 11, CUTLASS's ordered math warpgroups), fed
in the order of their turns through one ring whose slots they take in turn. CPU: golden schedules, refusals,
the static protocol check, PTX/SASS, and the numbers in the interpreter (the GPU runs the same cases)."""

import re
import warnings

import numpy as np
import pytest

import nvdsl
import nvdsl.tasks as nt
from nvdsl.compiler.toolchain import find_tool
from nvdsl.interpreter.protocol import check_protocol
from nvdsl.kernels.gemm import PINGPONG_MAPPING, grouped_matmul, matmul, matmul_nk, row_tile_table
from nvdsl.testing import sass_opcodes
from test_grouped import grouped_args, grouped_reference
from test_tasks import gemm_args, golden, refused

f16, f32 = np.float16, np.float32
PINGPONG = nt.Mapping(schedule="pingpong", tiles={"BN": 128})


def test_the_pingpong_schedule_is_explained(request):
    args = gemm_args(1000, 2040, 520)
    text = nt.build(matmul, nt.Mapping(schedule="pingpong", tiles={"BM": 64, "BN": 256}, sm_count=132)).explain(*args)
    golden("tasks_gemm_pingpong_64x256.schedule.txt", text, request)
    # one ring, its slots taken in turn (one arrival releases a slot), as deep as shared memory allows
    assert "ring ring_step: 4 slots x 40960 B" in text and "empty: 1 arrival(s); producer -> consumer0, consumer1 " \
        "in turn" in text
    # a 64 x 256 float32 accumulator is 128 registers of each consumer thread
    assert "each holding its tile's 64-row accumulators (128 of its registers)" in text
    loop = text[text.index("wait for this consumer's turn"):text.index("hand the turn")]
    assert "mma acc += A_s0 @ B_s0" in loop and "store" not in loop and "cast" not in loop


def test_pingpong_implies_turns_and_refuses_what_it_cannot_honour():
    assert nt.Mapping(schedule="pingpong").turns and nt.Mapping(schedule="pingpong") == \
        nt.Mapping(schedule="pingpong", turns=True)
    # turns follow a replaced schedule unless given; a ping-pong without turns cannot be honoured
    assert nt.Mapping().replace(schedule="pingpong").turns and not PINGPONG.replace(schedule="cooperative").turns
    with pytest.raises(nvdsl.MappingError, match="turns=False") as info:
        nt.Mapping(schedule="pingpong", turns=False)
    assert info.value.code == "bad-mapping" and info.value.loc.filename == __file__
    args = gemm_args(1024, 1024, 1024)
    # a 128 x 256 accumulator per consumer thread is 256 registers, beyond the 232 a consumer gets beside the producer
    refused(matmul, nt.Mapping(schedule="pingpong"), args, "mapping-registers", "about 296 registers", "budget is 232")
    refused(matmul, PINGPONG.replace(warp_specialize=False), args, "bad-mapping", "warp_specialize=True")
    refused(matmul, PINGPONG.replace(consumers=3), args, "bad-mapping", "not 3")
    from nvdsl.kernels.attention import attention_program, task_mapping
    from test_attention import problem
    q, k, v, o, lse = problem(1, 2, 1, 256, 256, 64)
    refused(attention_program(False), task_mapping(64, False, 256).replace(schedule="pingpong", consumers=2),
            (o, lse, q, k, v), "bad-mapping", "two-phase loop")


@pytest.mark.parametrize("program, m, n, k, mapping", [
    # 12 tiles, 6 pairs over 2 blocks; 4 K steps through 6 slots
    (matmul, 300, 504, 200, PINGPONG.replace(sm_count=2)),
    # 9 tiles: the last pair has no second tile; 9 ragged K steps through 4 slots
    (matmul, 300, 376, 520, PINGPONG.replace(sm_count=2, pipeline=4)),
    # not persistent: a block per pair, the last block with one tile; the fewest slots
    (matmul, 300, 376, 200, PINGPONG.replace(persistent=False, pipeline=2)),
    # 2 products in flight: each consumer holds two slots until its loop's products retire
    (matmul_nk, 330, 264, 520, PINGPONG.replace(sm_count=3, pipeline=3, mma_in_flight=2, raster="snake")),
    # 64-row tiles, 64 x 256 accumulators: 15 tiles over 3 blocks
    (matmul, 300, 600, 136, nt.Mapping(schedule="pingpong", tiles={"BM": 64, "BN": 256}, sm_count=3)),
])
def test_pingpong_matches_numpy(program, m, n, k, mapping, backend):
    rng = np.random.default_rng(m + n + k)
    a = rng.standard_normal((m, k)).astype(f16)
    b = rng.standard_normal((n, k) if program is matmul_nk else (k, n)).astype(f16)
    c = np.full((m, n), np.nan, f32)
    nt.build(program, mapping)(c, a, b)
    reference = a.astype(f32) @ (b.astype(f32).T if program is matmul_nk else b.astype(f32))
    assert not np.isnan(c).any()
    np.testing.assert_allclose(c, reference, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("sizes, sm_count", [([100, 0, 130, 64, 7], 2), ([0, 256, 1, 0, 0, 3], 3)])
def test_pingpong_grouped_gemm_passes_turns_over_empty_tiles(sizes, sm_count, backend):
    """Row tiles without rows (the table's padding) have no K loop; their consumer still takes its turn."""
    c, a, b = grouped_args(sizes)
    with warnings.catch_warnings():          # the check cannot decide this kernel (see the test below)
        warnings.simplefilter("ignore", nvdsl.ProtocolCheckWarning)
        nt.build(grouped_matmul, PINGPONG.replace(sm_count=sm_count))(c, a, b, row_tile_table(sizes, 128))
    assert not np.isnan(c).any()
    np.testing.assert_allclose(c.astype(f32), grouped_reference(a, b, sizes), rtol=2e-3, atol=2e-2)


@pytest.mark.parametrize("program, args, mapping", [
    (matmul, gemm_args(1000, 2040, 520), PINGPONG.replace(sm_count=5)),
    (matmul, gemm_args(1000, 1000, 1000), PINGPONG.replace(sm_count=4, mma_in_flight=2, pipeline=4)),
    (matmul, gemm_args(8192, 8192, 1024), PINGPONG_MAPPING.replace(sm_count=132)),     # summarised: 16 pairs a block
])
def test_the_protocol_check_decides_pingpong_kernels(program, args, mapping):
    trace = nt.build(program, mapping).with_options(protocol_check=False).trace(*args)
    assert check_protocol(trace.module, trace.specs) is None


def test_the_protocol_check_says_it_cannot_decide_a_pingpong_grouped_gemm():
    """A tile without rows still takes its turn (it waits and hands over): the table's contents then reach the
    synchronisation through more than branches that skip a tile in every role alike, which the check cannot
    follow. It says so; the interpreter runs the kernel (above)."""
    sizes = [100, 0, 130, 64, 7]
    trace = nt.build(grouped_matmul, PINGPONG.replace(sm_count=2)).with_options(protocol_check=False).trace(
        *grouped_args(sizes), row_tile_table(sizes, 128))
    assert "depends on memory contents" in check_protocol(trace.module, trace.specs)


def test_pingpong_compiles_to_named_barrier_turns_without_spills():
    """Consumer 0 waits at named barrier 10 (its turn), issues its K loop, hands the turn over at barrier 11
    before its last products retired and before its epilogue's stores; consumer 1 the other way round."""
    compiled = nt.build(matmul, PINGPONG.replace(sm_count=8)).compile(*gemm_args(2048, 2048, 1024))
    resources, = compiled.resources.values()
    assert resources.spill_stores == 0 and resources.spill_loads == 0 and resources.stack_frame == 0
    assert resources.registers <= 232
    ptx = compiled.ptx
    assert len(re.findall(r"barrier\.sync %r\d+, %r\d+;", ptx)) >= 2 and "barrier.arrive" in ptx
    if not find_tool("nvdisasm"):
        return
    sass = compiled.sass()
    assert {"HGMMA", "UTMALDG", "UTMASTG", "SYNCS", "BAR"} <= sass_opcodes(sass)
    for mine, theirs in ((0xa, 0xb), (0xb, 0xa)):
        turn = re.search(rf"BAR\.SYNC\.DEFER_BLOCKING {mine:#x}, 0x100 ;(.*?)BAR\.ARV {theirs:#x}, 0x100 ;(.*?)"
                         r"UTMASTG", sass, re.S)
        assert turn, f"no turn at named barrier {mine}"
        loop, after = turn.groups()
        assert "HGMMA.64x128x16.F32" in loop and "UTMASTG" not in loop
        assert "HGMMA" not in after and "WARPGROUP.DEPBAR.LE gsb0, 0x0" in after

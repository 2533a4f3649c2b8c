"""nvdsl.profile: generated pipelines record their roles' spans from the device's clocks; the host decodes them
into a timeline per SM and role, a summary by kind, and a PNG beside the planned schedule."""

import numpy as np
import pytest

import nvdsl
import nvdsl.kernels.attention as attention_library
import nvdsl.kernels.gemm as gemm_library
from nvdsl import tasks as nt
from nvdsl.tasks.profile import SPAN_KINDS, decode, roles, zoom_window
from nvdsl.testing import requires_gpu


def _gemm_kernel(mapping=None):
    return nt.build(gemm_library.matmul, mapping or gemm_library.MAPPING.replace(
        tiles={"BM": 64, "BN": 128, "BK": 64}, consumers=1))


def _operands(m, n, k, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    return a, b


def _words(events) -> np.ndarray:
    """Event words from (tag, clock) pairs, as the recording writes them."""
    pairs = np.asarray(events, np.int64)
    return (pairs[..., 0] << 56) | pairs[..., 1]


def _count(profile, role: str, kind: str) -> int:
    return int(np.sum((profile.role == profile.roles.index(role)) & (profile.kind == SPAN_KINDS.index(kind))))


def test_a_profiled_gemm_records_each_roles_spans_and_computes_the_same_bits(backend):
    """Per block and tile: the producer's loads (a span per K step), the consumer's waits for data and steps (one
    each per K step), a wait for the last products and an epilogue; every span inside its role's time and its
    tile. The recording variant computes what the plain kernel computes, bit for bit (the same code around
    the same products: exact comparison)."""
    m, n, k = 128, 256, 320                     # 2 x 2 tiles of 64 x 128, 5 K steps of 64
    a, b = _operands(m, n, k)
    kernel = _gemm_kernel()
    plain, recorded = np.zeros((m, n), np.float16), np.zeros((m, n), np.float16)
    kernel(plain, a, b)
    profile = nvdsl.profile(kernel, recorded, a, b)
    assert np.array_equal(plain, recorded)
    assert len(profile) == 1
    p = profile[0]
    tiles, steps = 4, 5
    assert p.roles == ("producer", "consumer 0") and p.dropped == 0
    assert len(np.unique(p.block)) == 4 and len(np.unique(p.sm)) == 4        # the interpreter: an SM per block
    assert _count(p, "producer", "load") == tiles * steps
    assert _count(p, "producer", "tile") == tiles
    for kind, count in (("data wait", steps), ("step", steps), ("product wait", 1), ("epilogue", 1), ("tile", 1)):
        assert _count(p, "consumer 0", kind) == tiles * count, kind
    assert (p.end_ns >= p.start_ns).all() and p.start_ns.min() >= 0 and p.end_ns.max() <= p.duration_ns
    for block in np.unique(p.block):
        for r in range(len(p.roles)):
            mine = (p.block == block) & (p.role == r)
            tile = mine & (p.kind == SPAN_KINDS.index("tile"))
            inside = mine & ~tile
            lo, hi = p.start_ns[tile].min(), p.end_ns[tile].max()
            assert (p.start_ns[inside] >= lo).all() and (p.end_ns[inside] <= hi).all()
            for kind in range(len(SPAN_KINDS)):          # spans of one kind follow one another
                one = mine & (p.kind == kind)
                order = np.argsort(p.start_ns[one])
                assert (p.start_ns[one][order][1:] >= p.end_ns[one][order][:-1]).all()
    text = profile.summary()
    assert "matmul" in text and "producer" in text and "data wait" in text and "epilogue" in text


def test_profiled_attention_records_its_softmax_between_products():
    """The two-phase loop records phase A's math (the softmax) once per key block of each tile: causal rows
    0-127 visit one block and rows 128-255 two, per consumer; consumers take turns at the tensor cores."""
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((1, 1, 256, 64)).astype(np.float16) for _ in range(3))
    plain, recorded = np.zeros_like(q), np.zeros_like(q)
    attention_library.attention(q, k, v, plain, None, causal=True)
    profile = nvdsl.profile(attention_library.attention, q, k, v, recorded, None, causal=True)
    assert np.array_equal(plain, recorded)          # the same code around the same products: exact
    p = profile[0]
    assert p.roles == ("producer", "consumer 0", "consumer 1")
    for c in ("consumer 0", "consumer 1"):
        assert _count(p, c, "math") == 1 + 2
        assert _count(p, c, "turn wait") > 0 and _count(p, c, "epilogue") == 2


def test_ping_pong_and_row_wise_pipelines_record_their_spans_too():
    """A ping-pong linear layer: each consumer waits for its turn at the tensor cores; a row-wise softmax (no
    producer): its passes over column blocks are steps. Both compute the plain kernels' bits (exact: same code)."""
    rng = np.random.default_rng(3)
    a, w = rng.standard_normal((256, 128)).astype(np.float16), rng.standard_normal((512, 128)).astype(np.float16)
    bias = rng.standard_normal(512).astype(np.float16)
    kernel = nt.build(gemm_library.linear_program("gelu"), gemm_library.PINGPONG_MAPPING)
    plain, recorded = np.zeros((256, 512), np.float16), np.zeros((256, 512), np.float16)
    kernel(plain, a, w, bias)
    p = nvdsl.profile(kernel, recorded, a, w, bias)[0]
    assert np.array_equal(plain, recorded)
    tiles = len(p.block_sm) * 2                        # a block's pair of tiles, one for each consumer
    assert tiles == 256 // 128 * 512 // 128
    assert all(_count(p, c, "turn wait") > 0 and _count(p, c, "epilogue") == tiles // 2
               for c in ("consumer 0", "consumer 1"))
    from nvdsl.kernels.rowwise import softmax
    x = rng.standard_normal((64, 1000)).astype(np.float16)
    plain, recorded = np.zeros_like(x), np.zeros_like(x)
    softmax(x, plain)
    p = nvdsl.profile(softmax, x, recorded)[0]
    assert np.array_equal(plain, recorded) and p.roles == ("consumer 0",)
    assert _count(p, "consumer 0", "step") > _count(p, "consumer 0", "tile") > 0


def test_events_past_the_capacity_are_counted_as_dropped():
    m, n, k = 64, 128, 640                       # one tile, 10 K steps
    a, b = _operands(m, n, k, seed=2)
    kernel = _gemm_kernel()
    c = np.zeros((m, n), np.float16)
    p = nvdsl.profile(kernel, c, a, b, capacity=6)[0]
    # the producer records 2 events per tile and per step (22), the consumer 2 per tile, 4 per step, 4 more
    assert p.dropped == (22 - 6) + (2 + 4 * 10 + 4 - 6)
    assert _count(p, "producer", "load") == 2      # tile begins, then load 0 and load 1 whole, load 2 begun
    assert "dropped" in nvdsl.Profile([p]).summary()


def test_decode_turns_each_roles_cycles_into_nanoseconds_of_the_common_timer():
    """A role that ran 1000 ns over 2000 cycles: a cycle is half a nanosecond; times count from the first start
    of any role (integer arithmetic in halves: exact). The clock's low 56 bits are recorded: a start cycle past
    2**56 still gives the cycles since it."""
    header = np.array([[[3, 5000, 100, 6000, 2100, 4], [3, 5200, 0, 5600, 400, 3]]], np.int64)
    events = np.zeros((1, 2, 4, 2), np.int64)
    events[0, 0, :4] = [[2 * 1, 300], [2 * 1 + 1, 700], [2 * 7, 900], [2 * 7 + 1, 2100]]  # load, epilogue
    events[0, 1, :3] = [[2 * 2, 0], [2 * 2 + 1, 200], [2 * 3, 300]]        # a data wait, a step never ended
    p = decode("k", ("producer", "consumer 0"), "", header, _words(events))
    assert p.duration_ns == 1000.0 and p.dropped == 0
    assert p.role_time_ns.tolist() == [1000.0, 400.0]
    spans = {(p.roles[r], SPAN_KINDS[kd]): (s, e) for r, kd, s, e in zip(p.role, p.kind, p.start_ns, p.end_ns)}
    assert spans == {("producer", "load"): (100.0, 300.0), ("producer", "epilogue"): (400.0, 1000.0),
                     ("consumer 0", "data wait"): (200.0, 400.0)}
    assert set(p.sm.tolist()) == {3}
    late = header.copy()
    late[0, :, 2] += 5 << 56                                   # the same low bits, a later clock
    late[0, :, 4] += 5 << 56
    again = decode("k", ("producer", "consumer 0"), "", late, _words(events))
    assert again.start_ns.tolist() == p.start_ns.tolist() and again.end_ns.tolist() == p.end_ns.tolist()


def test_the_summary_names_when_each_sm_finishes_and_how_long_it_idled_between_its_blocks():
    """SM 0 ran blocks over 0-100 and 150-300 ns (idle 50 of its 300), SM 1 one block over 20-200 (idle 20)."""
    header = np.array([[[0, 1000, 0, 1100, 100, 0]], [[0, 1150, 0, 1300, 150, 0]], [[1, 1020, 0, 1200, 180, 0]]],
                      np.int64)
    p = decode("k", ("consumer 0",), "", header, np.zeros((3, 1, 1), np.int64))
    assert p.sm_finish_ns().tolist() == [300.0, 200.0]
    assert p.sm_idle_ns().tolist() == [50.0, 20.0]
    assert "2 SMs finish between 0.2 and 0.3 us" in p.summary() and "idle 14.0%" in p.summary()


def test_the_drawing_enlarges_one_and_a_half_tiles_from_the_second():
    """Consumer 0 of SM 5 ran tiles of 100 and 300 ns (median 200): the window starts at the second tile and
    lasts 300 ns; a role clock of one cycle a nanosecond."""
    header = np.array([[[5, 0, 0, 1000, 1000, 4]]], np.int64)
    events = np.array([[[[0, 100], [1, 200], [0, 400], [1, 700]]]], np.int64)
    p = decode("k", ("consumer 0",), "", header, _words(events))
    assert zoom_window(p, 5) == (400.0, 700.0)


def test_profile_draws_the_timeline_beside_the_schedule(tmp_path):
    pytest.importorskip("matplotlib")
    a, b = _operands(128, 128, 128, seed=3)
    kernel = _gemm_kernel()
    profile = nvdsl.profile(kernel, np.zeros((128, 128), np.float16), a, b)
    assert "ring" in profile[0].schedule              # the planned schedule travels with the spans
    path = tmp_path / "timeline.png"
    profile.save_png(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_profile_arguments_are_named():
    with pytest.raises(nvdsl.ArgumentError) as error:
        nvdsl.profile(lambda: None, capacity=0)
    assert error.value.code == "bad-argument" and "capacity" in str(error.value)
    with pytest.raises(nvdsl.ArgumentError) as error:
        nvdsl.profile(lambda: None).save_png("unused.png")
    assert error.value.code == "bad-argument" and "no task kernel" in str(error.value)
    with pytest.raises(nvdsl.ArgumentError) as error:        # the arrays first, the function forgotten
        nvdsl.profile(np.zeros(4), np.zeros(4))
    assert error.value.code == "bad-argument" and "fn=array" in str(error.value) and error.value.hint


def test_the_recording_variant_keeps_a_fast_kernels_instructions():
    """The profiled library GEMM still assembles to HGMMA, UTMALDG and mbarrier (SYNCS) instructions without
    spills: the recording adds a few registers' worth of work on one thread per role."""
    from nvdsl.testing import sass_opcodes
    size = 1024
    a, b = _operands(size, size, size, seed=4)
    c = np.zeros((size, size), np.float16)
    kernel = gemm_library._kernel(gemm_library.matmul, gemm_library.default_mapping(size, size))
    schedule = kernel.plan(c, a, b)
    blocks, count = schedule.grid, len(roles(schedule))
    compiled = kernel._recording.compile(c, a, b, np.zeros((blocks, count, 6), np.int64),
                                         np.zeros((blocks, count, 64), np.int64))
    resources = next(iter(compiled.resources.values()))
    assert resources.spill_stores == 0 and resources.spill_loads == 0
    assert {"HGMMA", "UTMALDG", "SYNCS"} <= {op.split(".")[0] for op in sass_opcodes(compiled.sass())}


@requires_gpu
def test_profile_of_the_library_gemm_and_attention_on_the_gpu(tmp_path):
    """On the GPU: the spans of a many-tile GEMM and of attention lie within their kernel, consumers spend time in
    their steps, and the PNG is drawn; the outputs match the unprofiled calls bit for bit."""
    torch = pytest.importorskip("torch")
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(2048, 2048, device="cuda", generator=gen).half()
    b = torch.randn(2048, 2048, device="cuda", generator=gen).half()
    plain, recorded = torch.empty_like(a), torch.empty_like(a)
    gemm_library.gemm(a, b, plain)
    p = nvdsl.profile(gemm_library.gemm, a, b, recorded)[0]
    assert torch.equal(plain, recorded)
    assert p.dropped == 0 and (p.end_ns >= p.start_ns).all() and p.end_ns.max() <= p.duration_ns
    assert _count(p, "consumer 0", "step") == _count(p, "producer", "load")      # a load per step
    steps = p.spans("step")
    assert float(np.sum(steps[:, 1] - steps[:, 0])) > 0
    q, k, v = (torch.randn(1, 4, 1024, 128, device="cuda", generator=gen).half() for _ in range(3))
    o_plain, o_recorded = torch.empty_like(q), torch.empty_like(q)
    attention_library.attention(q, k, v, o_plain, None)
    profile = nvdsl.profile(attention_library.attention, q, k, v, o_recorded, None)
    assert torch.equal(o_plain, o_recorded)
    p = profile[0]
    tiles = _count(p, "consumer 0", "tile")
    assert tiles == 4 * 1024 // 128                           # 128 query rows a tile, the consumers' halves
    assert _count(p, "consumer 0", "math") == tiles * 1024 // 128    # a softmax per key block
    assert _count(p, "consumer 0", "data wait") == tiles + 2 * _count(p, "consumer 0", "math")  # Q; K and V
    pytest.importorskip("matplotlib")
    profile.save_png(tmp_path / "attention.png")
    assert (tmp_path / "attention.png").read_bytes()[:4] == b"\x89PNG"

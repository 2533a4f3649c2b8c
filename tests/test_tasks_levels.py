"""Processor levels per task: launched tasks keep their names through inlining, and the mapping places them:
the task holding the prange on the host, the task of a tile on the block (cooperative) or on warpgroups
(ping-pong), the task issuing the products on warpgroups. The schedule follows the levels; a level a task
cannot run at, or a schedule that contradicts the levels, is refused."""

import re

import numpy as np
import pytest

import nvdsl
import nvdsl.tasks as nt
from nvdsl.kernels.gemm import MAPPING, PINGPONG_MAPPING, matmul
from nvdsl.kernels.attention import task_mapping
from test_tasks import gemm_args, golden

f16, f32 = np.float16, np.float32


@nt.task(reads=("A", "B"), reduces=("acc",))
def mma(acc, A, B):
    acc += A @ B


@nt.task(reads=("acc",), writes=("C",))
def store(C, acc):
    C[...] = acc.astype(C.dtype)


@nt.task(reads=("A", "B"), writes=("C",))
def tile(C, A, B):
    """One output tile C from A's row panel and B's column panel; its epilogue a helper task."""
    BK = nt.tunable("BK", 64)
    Ak, Bk = nt.blocks(A, (None, BK)), nt.blocks(B, (BK, None))
    acc = nt.zeros(C.shape, nt.float32)
    for k in nt.srange(Ak.grid[1]):
        nt.launch(mma, acc, Ak[0, k], Bk[k, 0])
    nt.launch(store, C, acc)


@nt.task(reads=("A", "B"), writes=("C",))
def gemm(C, A, B):
    BM, BN = nt.tunable("BM", 128), nt.tunable("BN", 256)
    Ct, Ap, Bp = nt.blocks(C, (BM, BN)), nt.blocks(A, (BM, None)), nt.blocks(B, (None, BN))
    for i, j in nt.prange(*Ct.grid):
        nt.launch(tile, Ct[i, j], Ap[i, 0], Bp[0, j])


@nt.task(reads=("A", "B"), writes=("C",))
def products_only(C, A, B):
    """The tile's work written in the prange's task; only the products are a task of their own."""
    BM, BN, BK = nt.tunable("BM", 128), nt.tunable("BN", 256), nt.tunable("BK", 64)
    Ct, At, Bt = nt.blocks(C, (BM, BN)), nt.blocks(A, (BM, BK)), nt.blocks(B, (BK, BN))
    for i, j in nt.prange(*Ct.grid):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in nt.srange(At.grid[1]):
            nt.launch(mma, acc, At[i, k], Bt[k, j])
        Ct[i, j] = acc.astype(C.dtype)


@nt.task(reads=("A", "B"), writes=("C",))
def outer(C, A, B):
    """An entry task that launches the task holding the prange."""
    nt.launch(gemm, C, A, B)


PINGPONG_LEVELS = nt.Mapping(levels={"tile": "warpgroup"}, tiles={"BN": 128})


def _renamed(text: str, name: str) -> str:
    """``text`` with the program's name ``name`` read as ``matmul``, and the mapping's header line left out."""
    lines = text.replace(f"program {name}", "program matmul").splitlines(keepends=True)
    return "".join(line for line in lines if not line.startswith("task program"))


def _levels_line(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("levels: "))


def test_a_tile_task_at_warpgroup_level_is_the_pingpong(request):
    """levels={"tile": "warpgroup"} on a program of launched tasks builds what schedule="pingpong" builds on the
    single-task matmul: the same events, the same schedule, the same PTX."""
    args = gemm_args(1000, 2040, 520)
    mine = nt.build(gemm, PINGPONG_LEVELS.replace(sm_count=132))
    library = nt.build(matmul, PINGPONG_MAPPING.replace(tiles={"BN": 128}, sm_count=132))
    ours, theirs = mine.passes(*args), library.passes(*args)
    for stage in ("traced", "copies", "eliminated"):
        assert _renamed(ours[stage], "gemm") == theirs[stage], stage
    schedule = ours["schedule"]
    assert "schedule=pingpong, turns=True" in schedule.splitlines()[0]
    assert _levels_line(schedule) == "levels: gemm -> host, tile -> warpgroup, mma -> warpgroup"
    assert _renamed(schedule, "gemm").replace(_levels_line(schedule), "") == \
        _renamed(theirs["schedule"], "matmul").replace(_levels_line(theirs["schedule"]), "")
    ptx = mine.compile(*args).ptx
    assert re.sub(r"\bgemm", "matmul", ptx) == library.compile(*args).ptx


@pytest.mark.parametrize("levels", [{"tile": "warpgroup"}, {"tile": "block"}, {}])
def test_launched_tasks_match_numpy_at_a_ragged_shape(levels, backend):
    m, n, k = 300, 376, 200
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((m, k)).astype(f16), rng.standard_normal((k, n)).astype(f16)
    c = np.full((m, n), np.nan, f32)
    mapping = nt.Mapping(levels=levels, tiles={"BN": 128}, sm_count=2)
    nt.build(gemm, mapping)(c, a, b)
    assert not np.isnan(c).any()
    np.testing.assert_allclose(c, a.astype(f32) @ b.astype(f32), rtol=1e-4, atol=1e-3)


LEVEL_CASES = {
    "launched tile and mma, default": (gemm, nt.Mapping(tiles={"BN": 128})),
    "launched tile and mma, tile at warpgroup": (gemm, PINGPONG_LEVELS),
    "launched tile and mma, schedule='pingpong'": (gemm, nt.Mapping(schedule="pingpong", tiles={"BN": 128})),
    "launched mma only": (products_only, nt.Mapping(tiles={"BN": 128})),
    "prange in a launched task": (outer, PINGPONG_LEVELS),
    "single task, default": (matmul, MAPPING),
    "single task, tile body at warpgroup": (matmul, nt.Mapping(levels={"tile body": "warpgroup"}, tiles={"BN": 128})),
}


def test_explain_names_the_tasks_and_their_levels(request):
    args = gemm_args(1000, 2040, 520)
    text = "".join(f"{name}: {_levels_line(nt.build(program, mapping).explain(*args))}\n"
                   for name, (program, mapping) in LEVEL_CASES.items())
    golden("tasks_levels.txt", text, request)


@pytest.mark.parametrize("name", sorted(LEVEL_CASES))
def test_the_levels_explain_prints_are_accepted_and_mean_the_same(name):
    """Every name explain prints is one levels accepts: mapping each to the level printed, with the schedule
    left to follow them or given as well, changes nothing."""
    program, mapping = LEVEL_CASES[name]
    args = gemm_args(1000, 2040, 520)
    text = nt.build(program, mapping).explain(*args)
    printed = dict(part.split(" -> ") for part in _levels_line(text)[len("levels: "):].split(", "))
    for again in (mapping.replace(levels=printed, schedule=None), mapping.replace(levels=printed)):
        assert _renamed(nt.build(program, again).explain(*args), "") == _renamed(text, ""), again


def refused_levels(program, mapping, code, *words):
    with pytest.raises(nvdsl.MappingError) as info:
        nt.build(program, mapping).plan(*gemm_args(1000, 2040, 520))
    error = info.value
    assert error.code == code, str(error)
    for word in words:
        assert word in str(error), str(error)
    assert error.loc is not None and error.loc.filename == __file__, error.loc


def test_levels_a_task_cannot_run_at_are_refused():
    refused_levels(gemm, nt.Mapping(levels={"tyle": "block"}), "mapping-level", "no task 'tyle'",
                   "'gemm', 'tile', 'mma'")
    refused_levels(matmul, nt.Mapping(levels={"tile": "block"}), "mapping-level", "no task 'tile'",
                   "'matmul', 'tile body', 'mma'")
    refused_levels(gemm, nt.Mapping(levels={"mma": "block"}), "mapping-level", "levels['mma']='block'",
                   "warpgroup instruction")
    refused_levels(gemm, nt.Mapping(levels={"mma": "host"}), "mapping-level", "levels['mma']='host'",
                   "'warpgroup' only")
    refused_levels(gemm, nt.Mapping(levels={"tile": "host"}), "mapping-level", "levels['tile']='host'",
                   "runs one output tile")
    refused_levels(gemm, nt.Mapping(levels={"gemm": "block"}), "mapping-level", "levels['gemm']='block'",
                   "holds the prange", "only the host")
    refused_levels(outer, nt.Mapping(levels={"outer": "warpgroup"}), "mapping-level",
                   "levels['outer']='warpgroup'", "launches the task holding the prange")
    refused_levels(matmul, nt.Mapping(levels={"tile body": "host"}), "mapping-level", "levels['tile body']='host'")
    refused_levels(gemm, nt.Mapping(levels={"store": "block"}), "mapping-level",
                   "task 'store' is part of the work of a tile", "level of 'tile'")


def test_a_schedule_that_contradicts_the_levels_is_refused():
    refused_levels(gemm, nt.Mapping(schedule="cooperative", levels={"tile": "warpgroup"}, tiles={"BN": 128}),
                   "mapping-level", "schedule='cooperative'", "levels['tile']='warpgroup'", "'pingpong'")
    # a 'block' level can only be a tile's task, so a ping-pong beside one is refused when the mapping is made
    with pytest.raises(nvdsl.MappingError) as info:
        nt.Mapping(schedule="pingpong", levels={"tile": "block"})
    assert info.value.code == "mapping-level" and "levels['tile']='block'" in str(info.value)
    assert "schedule='pingpong'" in str(info.value) and info.value.loc.filename == __file__


def test_warpgroup_tiles_share_the_pingpongs_refusals():
    """Tiles at warpgroup level are a ping-pong: its refusals apply, saying which level asked for it."""
    refused_levels(gemm, PINGPONG_LEVELS.replace(consumers=3), "bad-mapping", "levels['tile']='warpgroup'", "not 3")
    refused_levels(gemm, PINGPONG_LEVELS.replace(warp_specialize=False), "bad-mapping", "levels['tile']='warpgroup'",
                   "warp_specialize=True")
    refused_levels(gemm, nt.Mapping(levels={"tile": "warpgroup"}), "mapping-registers", "about 296 registers")
    refused_levels(gemm, PINGPONG_LEVELS.replace(turns=False), "bad-mapping", "turns=False")


def test_the_schedule_is_derived_from_the_levels():
    assert nt.Mapping().schedule == "cooperative" and nt.Mapping().turns is False
    assert nt.Mapping() == nt.Mapping(schedule="cooperative")
    # a 'block' level is a tile's task: cooperative; a 'warpgroup' one may be the tile's or the products' task,
    # which the program tells, so the schedule is derived when the kernel is planned
    assert nt.Mapping(levels={"tile": "block", "mma": "warpgroup"}).schedule == "cooperative"
    pending = nt.Mapping(levels={"tile": "warpgroup"})
    assert pending.schedule is None and pending.turns is None and "schedule=None, turns=None" in str(pending)
    args = gemm_args(1000, 2040, 520)
    assert nt.build(gemm, PINGPONG_LEVELS).plan(*args).mapping.schedule == "pingpong"
    products = nt.build(gemm, nt.Mapping(levels={"mma": "warpgroup"})).plan(*args).mapping
    assert (products.schedule, products.turns) == ("cooperative", False)
    # what existing mappings say is unchanged
    for mapping in (MAPPING, PINGPONG_MAPPING, task_mapping(128, False, 1024)):
        assert nt.Mapping(**{k: v for k, v in vars(mapping).items() if not k.startswith("_")}) == mapping
    assert "schedule=cooperative, turns=False" in str(MAPPING)
    assert "schedule=pingpong, turns=True" in str(PINGPONG_MAPPING)


def test_replace_derives_schedule_and_turns_from_the_new_levels():
    cooperative = nt.Mapping(levels={"tile": "block"})
    assert cooperative.replace(levels={"tile": "warpgroup"}).schedule is None          # derived afresh
    assert (cooperative.replace(levels={"tile": "warpgroup"}).replace(levels={"tile": "block"}).schedule,
            cooperative.replace(levels={"tile": "warpgroup"}).replace(levels={"tile": "block"}).turns) == \
        ("cooperative", False)
    # a given schedule stays; given turns stay, unless a new schedule comes without them
    assert PINGPONG_MAPPING.replace(levels={"matmul": "host"}).schedule == "pingpong"
    attention = task_mapping(128, False, 1024)
    assert attention.replace(levels={"attention": "host"}).turns is True
    assert nt.Mapping(schedule="pingpong", turns=True).replace(schedule="cooperative").turns is False
    with pytest.raises(nvdsl.MappingError) as info:
        cooperative.replace(schedule="pingpong")
    assert info.value.code == "mapping-level"
    built = nt.build(gemm, cooperative.replace(levels={"tile": "warpgroup"}, tiles={"BN": 128}))
    assert built.plan(*gemm_args(1000, 2040, 520)).pingpong

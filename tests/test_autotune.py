"""nt.autotune: the fastest of several mappings per device and shape class, measured once and kept on disk."""

import json

import numpy as np
import pytest

import nvdsl
import nvdsl.kernels.gemm as library
from nvdsl import tasks as nt
from nvdsl.tasks.autotune import TABLE, shape_class
from nvdsl.testing import requires_gpu
from helpers import assert_product_close

WIDE = library.MAPPING.replace(tiles={"BM": 64, "BN": 128, "BK": 64}, consumers=1)
NARROW = library.MAPPING.replace(tiles={"BM": 64, "BN": 64, "BK": 64}, consumers=1)
TOO_BIG = library.MAPPING.replace(pipeline=40)       # 40 stages of 48 KB: more shared memory than an SM has


def _operands(m, n, k, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)


def _timer(times: dict, log: list):
    """A measure that reads each candidate's time from ``times`` by the mapping its call runs under."""
    def measure(call):
        kernel = call.__defaults__[0]
        log.append(kernel.mapping)
        call()
        return times[kernel.mapping]
    return measure


def test_the_fastest_candidate_that_plans_runs_and_is_kept_on_disk(tmp_path, monkeypatch):
    """Of three candidates, one is refused at planning (left out, with why), the faster of the other two runs; a
    new autotuned kernel (as in a new process) finds it on disk without timing anything."""
    monkeypatch.setenv("NVDSL_CACHE_DIR", str(tmp_path))
    a, b = _operands(96, 200, 128)
    c = np.zeros((96, 200), np.float16)
    log = []
    tuned = nt.autotune(library.matmul, [WIDE, TOO_BIG, NARROW], measure=_timer({WIDE: 2.0, NARROW: 1.0}, log))
    tuned(c, a, b)
    assert_product_close(c, a, b)
    assert tuned.kernel(c, a, b).mapping == NARROW and log == [WIDE, NARROW]
    timings, = tuned.timings.values()
    assert timings[0] == 2.0 and timings[2] == 1.0 and timings[1].startswith("refused") and "shared" in timings[1]
    table = json.loads((tmp_path / TABLE).read_text())
    assert list(table.values()) == [2]

    def never(call):
        raise AssertionError("timed again")
    again = nt.autotune(library.matmul, [WIDE, TOO_BIG, NARROW], measure=never)
    c2 = np.zeros_like(c)
    again(c2, a, b)
    assert np.array_equal(c, c2) and again.kernel(c, a, b).mapping == NARROW   # one mapping, the same bits


def test_a_new_shape_class_is_tuned_again_and_a_shape_of_the_same_class_is_not(tmp_path, monkeypatch):
    monkeypatch.setenv("NVDSL_CACHE_DIR", str(tmp_path))
    log = []
    tuned = nt.autotune(library.matmul, [WIDE, NARROW], measure=_timer({WIDE: 1.0, NARROW: 2.0}, log))
    for m, n in ((96, 200), (100, 248), (300, 200)):        # (128, 256) twice, then (512, 256)
        a, b = _operands(m, n, 64)
        c = np.zeros((m, n), np.float16)
        tuned(c, a, b)
        assert_product_close(c, a, b)
    assert log == [WIDE, NARROW, WIDE, NARROW]
    assert shape_class((96, 200)) == shape_class((100, 250)) == (128, 256) and shape_class((1,)) == (1,)


def test_rows_that_move_in_vectors_and_rows_that_do_not_are_tuned_apart(tmp_path, monkeypatch):
    """Rows of 1000 and of 1001 float32 share a shape class (1024) but not their loads (16-byte vectors or one
    element a lane): each is timed for itself; a second array of 1000 is not."""
    from nvdsl.kernels import rowwise
    monkeypatch.setenv("NVDSL_CACHE_DIR", str(tmp_path))
    four, one = (rowwise.default_mapping().replace(tiles={"BM": rows, "BN": 512}) for rows in (4, 1))
    log = []
    tuned = nt.autotune(rowwise.softmax_program(), [four, one], measure=_timer({four: 2.0, one: 1.0}, log))
    for n in (1000, 1001, 1000):
        x = np.random.default_rng(n).standard_normal((6, n)).astype(np.float32)
        y = np.full_like(x, np.nan)
        tuned(y, x)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    assert log == [four, one, four, one] and len(tuned.timings) == 2


def test_without_a_gpu_or_a_measure_the_first_candidate_that_plans_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("NVDSL_CACHE_DIR", str(tmp_path))
    a, b = _operands(64, 128, 64)
    c = np.zeros((64, 128), np.float16)
    tuned = nt.autotune(library.matmul, [TOO_BIG, NARROW, WIDE])
    tuned(c, a, b)
    assert_product_close(c, a, b)
    if nvdsl.jit.device_name() is None:
        assert tuned.kernel(c, a, b).mapping == NARROW and not (tmp_path / TABLE).exists()


def test_the_library_gemm_tunes_its_tilings_on_request(tmp_path, monkeypatch):
    """``gemm(..., autotune=True)`` runs the fastest of the tilings its default mapping chooses from (without a GPU:
    the first, nothing timed); the product is the same."""
    monkeypatch.setenv("NVDSL_CACHE_DIR", str(tmp_path))
    library._autotuned.cache_clear()
    a, b = _operands(130, 300, 96, seed=5)
    c = np.zeros((130, 300), np.float16)
    library.gemm(a, b, c, autotune=True)
    assert_product_close(c, a, b)
    tuned = library._autotuned(library.matmul)
    assert len(tuned.timings) == 1                      # the call chose through it (a class tuned once)
    assert tuned.mappings == tuple(m for m, _ in library._TILINGS) + (library.TILE_64x64_MAPPING,)
    if nvdsl.jit.device_name() is None:
        assert tuned.kernel(c, a, b).mapping == library.MAPPING


def test_a_candidate_that_fails_after_planning_is_left_out(tmp_path, monkeypatch):
    """A candidate whose compile is refused (here the injected timer raises ptxas's error for it) is left out
    with why; the others are still timed."""
    monkeypatch.setenv("NVDSL_CACHE_DIR", str(tmp_path))
    a, b = _operands(64, 128, 64)

    def measure(call):
        if call.__defaults__[0].mapping == WIDE:
            raise nvdsl.CompileError("ptxas", "Insufficient registers")
        call()
        return 1.0
    tuned = nt.autotune(library.matmul, [WIDE, NARROW], measure=measure)
    c = np.zeros((64, 128), np.float16)
    tuned(c, a, b)
    assert_product_close(c, a, b)
    timings, = tuned.timings.values()
    assert timings[0].startswith("refused") and "Insufficient registers" in timings[0] and timings[1] == 1.0


def test_bad_candidates_are_refused_with_what_to_pass():
    with pytest.raises(nvdsl.MappingError) as error:
        nt.autotune(library.matmul, [])
    assert error.value.code == "bad-mapping" and "nt.Mapping" in error.value.hint
    a, b = _operands(64, 64, 64)
    with pytest.raises(nvdsl.MappingError) as error:
        nt.autotune(library.matmul, [TOO_BIG], measure=lambda call: 1.0)(np.zeros((64, 64), np.float16), a, b)
    assert "no candidate mapping plans" in str(error.value) and "candidate 0: refused" in str(error.value)


@requires_gpu
def test_autotune_times_the_candidates_on_the_gpu(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("NVDSL_CACHE_DIR", str(tmp_path))
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(4096, 4096, device="cuda", generator=gen).half()
    b = torch.randn(4096, 4096, device="cuda", generator=gen).half()
    c = torch.empty_like(a)
    tuned = nt.autotune(library.matmul, [library.MAPPING, library.TILE_128x128_MAPPING, library.TILE_64x128_MAPPING])
    tuned(c, a, b)
    timings, = tuned.timings.values()
    assert all(isinstance(t, float) and t > 0 for t in timings.values()), timings
    assert tuned.kernel(c, a, b).mapping == tuned.mappings[min(timings, key=timings.get)]
    assert (tmp_path / TABLE).exists()
    exact = a.double() @ b.double()            # fp16 output rounding and float32 sums of 4096 products
    accumulated = 4096 * 2.0 ** -24 / (1 - 4096 * 2.0 ** -24) * (a.double().abs() @ b.double().abs())
    assert float(((c.double() - exact).abs() - (accumulated + 2.0 ** -11 * (exact.abs() + accumulated))).max()) <= 0
    library.gemm(a, b, c, autotune=True)      # the library's tilings, tuned the same way
    assert library._autotuned(library.matmul).kernel(c, a, b).mapping in library._autotuned(library.matmul).mappings

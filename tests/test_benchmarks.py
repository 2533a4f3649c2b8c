"""The benchmark suite's CPU side: its CLI loads without GPU libraries, its table ranks systems right, the
gemm_family suite measures the shapes and counts the FLOPs it claims, and (where Triton is installed) its
Triton peers compile for sm_90a."""

import os
import subprocess
import datetime
import sys
import tempfile
from types import SimpleNamespace

import pytest

from benchmarks import report
from benchmarks.harness import REFERENCE, Measurement
from benchmarks.suites import gemm, gemm_family

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))  # keep the caller's


def test_cli_help_needs_no_gpu_libraries():
    result = subprocess.run([sys.executable, "-m", "benchmarks", "--help"], cwd=ROOT, capture_output=True,
                            text=True, env=ENV)
    assert result.returncode == 0, result.stderr
    for suite in ("gemm", "gemm_family", "attention", "attention_backward", "attention_variants", "attention_decode",
                  "launch", "saxpy", "compile", "trust"):
        assert suite in result.stdout


@pytest.mark.parametrize("variant", ["softcap", "sliding_window", "document", "causal_mask_mod", "varlen"])
def test_attention_variants_count_the_pairs_their_masks_keep(variant):
    """The variants suite's FLOPs count the (query, key) pairs its masks keep: against a brute-force count."""
    import numpy as np
    from benchmarks.suites import attention_variants as suite

    L = 3000
    q, kv = np.arange(L)[:, None], np.arange(L)[None, :]
    ids = suite.document_ids(L)
    keep = {"softcap": np.ones((L, L), bool), "causal_mask_mod": q >= kv,
            "sliding_window": (q >= kv) & (q - kv < suite.WINDOW),
            "document": (q >= kv) & (ids[q] == ids[kv]), "varlen": (q >= kv) & (ids[q] == ids[kv])}[variant]
    p = {"L": L, "variant": variant, "direction": "backward", "B": 2, "H": 3, "D": 64}
    assert suite.kept_pairs(p) == np.count_nonzero(keep)
    assert suite.flops(p) == 10 * 2 * 3 * 64 * np.count_nonzero(keep)


def test_attention_variants_suite_packs_the_documents_of_each_batch():
    """The varlen variant's offsets: the documents of each of the B sequences, one after another."""
    import numpy as np
    from benchmarks.suites import attention_variants as suite

    cu = suite.packed_offsets(3, 3000)
    ids = suite.document_ids(3000)
    packed_ids = np.concatenate([ids + b * (ids[-1] + 1) for b in range(3)])
    np.testing.assert_array_equal(np.diff(cu), np.bincount(packed_ids))     # exact: token counts
    assert cu[0] == 0 and cu.dtype == np.int32


def test_attention_variants_suite_runs_the_variants_asked_for():
    from benchmarks.suites import attention_variants as suite

    chosen = suite.shapes(_args(quick=True, variants="varlen,document"))
    assert sorted({p["variant"] for p in chosen}) == ["document", "varlen"] and len(chosen) == 4
    assert len(suite.shapes(_args(quick=True))) == 2 * len(suite.VARIANTS)
    with pytest.raises(SystemExit, match="unknown --variants \\['window'\\]"):
        suite.shapes(_args(variants="window"))


def test_attention_variants_suite_mods_run_in_the_interpreter():
    """The suite's nvdsl document mask (ids a 1-D argument) computes masked attention (on NumPy arrays: in the
    interpreter without a GPU)."""
    import numpy as np
    from benchmarks.suites import attention_variants as suite
    from nvdsl.kernels.attention import attention

    L, d = 600, 64
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, 1, L, d)).astype(np.float16) for _ in range(3))
    ids = suite.document_ids(L)
    o = np.zeros_like(q)
    attention(q, k, v, o, **suite._nvdsl_mods("document", ids))
    s = q[0, 0].astype(np.float64) @ k[0, 0].astype(np.float64).T * d ** -0.5
    rows, cols = np.indices(s.shape)
    s = np.where((rows >= cols) & (ids[rows] == ids[cols]), s, -np.inf)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    expected = (p / p.sum(axis=1, keepdims=True)) @ v[0, 0].astype(np.float64)
    np.testing.assert_allclose(o[0, 0].astype(np.float64), expected, atol=4e-3, rtol=4e-3)



def test_rounds_time_the_systems_of_a_shape_in_turn(monkeypatch):
    """--rounds 3 with --reps 7: each system is timed 3 times, in turn (shares 3, 2, 2), and recorded once with
    its 7 times; a system that fails to prepare is recorded as failed and never timed."""
    from benchmarks import harness
    calls = []

    def fake_time_cuda(fn, *, warmup, reps, flush_l2, queue_ahead):
        assert queue_ahead                   # the default: device time, not the host's
        calls.append((fn(), reps))
        return [1.0] * reps
    monkeypatch.setattr(harness, "time_cuda", fake_time_cuda)
    monkeypatch.setattr(harness, "_CLOCK_SAMPLER", [None])        # no nvidia-smi read, even on a GPU machine
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(cuda=SimpleNamespace(empty_cache=lambda: None)))

    def broken(ops, args):
        raise RuntimeError("no such peer")
    systems = {"nvdsl": lambda ops, args: harness.Prepared(lambda: "nvdsl"),
               "peer": lambda ops, args: harness.Prepared(lambda: "peer"), "broken": broken}
    args = SimpleNamespace(rounds=3, reps=7, warmup=1, flush_l2=False, systems="")
    measured = harness.run_shapes("gemm", [{"K": 1}], lambda p: None, systems, lambda p: 2e9, args)
    assert calls == [("nvdsl", 3), ("peer", 3), ("nvdsl", 2), ("peer", 2), ("nvdsl", 2), ("peer", 2)]
    assert [(m.system, m.reps, m.extra.get("rounds")) for m in measured[:2]] == [("nvdsl", 7, 3), ("peer", 7, 3)]
    assert measured[2].system == "broken" and "no such peer" in measured[2].error

def _smi_line(when: float, mhz) -> str:
    """A line of ``nvidia-smi --query-gpu=timestamp,clocks.sm --format=csv,noheader,nounits`` at host time ``when``."""
    return datetime.datetime.fromtimestamp(when).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3] + f", {mhz}\n"


def test_host_timings_take_the_systems_in_turn_and_pair_their_repeats():
    """The launch suite's systems are timed in turn within each repeat, starting one further along each time, and
    its added overhead is the median of nvdsl's time minus the bare launch's repeat by repeat: a host that slows
    down between repeats (here twice as slow from the third on) moves both alike."""
    from benchmarks import harness
    from benchmarks.suites import launch
    now, order = [0.0], []

    def system(name, cost_us):
        def call():
            order.append(name)
            now[0] += cost_us * 1e-6 * (2 if len(order) > 12 else 1)
        return call
    timings = harness.time_host_in_turn({"nvdsl": system("nvdsl", 5.0), launch.BARE: system(launch.BARE, 3.0)},
                                        calls=3, repeats=4, warmup=0, clock=lambda: now[0], sync=lambda: None)
    assert order == ["nvdsl"] * 3 + [launch.BARE] * 6 + ["nvdsl"] * 6 + [launch.BARE] * 3 + \
        [launch.BARE] * 3 + ["nvdsl"] * 3
    assert timings["nvdsl"].host_us == pytest.approx([5, 5, 10, 10]) and \
        timings[launch.BARE].host_us == pytest.approx([3, 3, 6, 6])
    assert harness.paired_differences(timings["nvdsl"].host_us, timings[launch.BARE].host_us) == \
        pytest.approx((4, 2, 4))
    row = [Measurement.from_times("launch", "nvdsl", {}, [t * 1e-3 for t in timings["nvdsl"].host_us],
                                  extra={"over_bare_us": 2.0, "over_bare_p10_p90_us": [1.5, 2.5]}),
           Measurement.from_times("launch", launch.BARE, {}, [t * 1e-3 for t in timings[launch.BARE].host_us])]
    assert launch.derived_columns(row) == {"added overhead (µs)": "2.00 (1.50 to 2.50)"}


def test_the_clock_sampler_summarises_the_readings_inside_each_systems_timed_calls():
    from benchmarks import harness
    sampler = harness.ClockSampler()
    base = 1_790_000_000.0
    for i, mhz in enumerate([1980, 1500, 1520, 1490, "[N/A]", 1600, 1610]):
        sampler.feed(_smi_line(base + 0.1 * i, mhz))
    sampler.feed("not a reading\n")
    windows = [[(base + 0.05, base + 0.35)], [(base + 0.45, base + 0.65), (base - 1, base - 0.5)], [(base + 5, base + 6)]]
    assert sampler.clocks(windows) == [(1500, 3, 1490, 1520), (1610, 2, 1600, 1610), None]
    # calls timed between two readings (shorter than a period): the readings a period either side, as 0 readings
    period = harness.CLOCK_PERIOD_MS * 1e-3
    assert sampler.clocks([[(base + 0.1 + period * 0.25, base + 0.1 + period * 0.5)]]) == [(1500, 0, 1500, 1500)]


def test_each_system_records_the_sm_clock_it_was_timed_at(monkeypatch):
    """The readings taken while a system's calls were timed, over all its rounds, and no other system's."""
    from benchmarks import harness
    sampler = harness.ClockSampler()
    now = [1_790_000_000.0]

    def tick():
        now[0] += 0.01
        return now[0]

    def fake_time_cuda(fn, *, warmup, reps, flush_l2, queue_ahead):
        sampler.feed(_smi_line(tick(), fn()))          # a reading while this system's calls run
        return [1.0] * reps
    monkeypatch.setattr(harness, "time_cuda", fake_time_cuda)
    monkeypatch.setattr(harness, "time", SimpleNamespace(time=tick, sleep=lambda s: None))
    monkeypatch.setattr(harness, "_CLOCK_SAMPLER", [sampler])
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(cuda=SimpleNamespace(empty_cache=lambda: None)))
    systems = {"nvdsl": lambda ops, args: harness.Prepared(lambda: 1500),
               "cublas": lambda ops, args: harness.Prepared(lambda: 1600)}
    args = SimpleNamespace(rounds=2, reps=4, warmup=1, flush_l2=False, systems="")
    measured = harness.run_shapes("gemm", [{"K": 1}], lambda p: None, systems, lambda p: 2e9, args)
    assert [(m.system, m.extra["sm_clock_mhz"], m.extra["sm_clock_samples"]) for m in measured] == \
        [("nvdsl", 1500, "2 from 1500 to 1500 MHz"), ("cublas", 1600, "2 from 1600 to 1600 MHz")]


def test_the_table_gives_the_clocks_and_the_ratio_per_sm_cycle():
    """nvdsl and cuBLAS tie in time, but nvdsl ran at 1500 MHz and cuBLAS at 1600: per SM cycle nvdsl does 1.07x the
    work (a GEMM bound by its tensor pipes would lead by that at one clock)."""
    shape = {"dtype": "bf16", "M": 8192, "N": 8192, "K": 4096, "sweep": "M=N=8192"}
    rows = [Measurement.from_times("gemm", "cublas", shape, [1.0], flops=1e12, correct=True,
                                   extra={"sm_clock_mhz": 1600}),
            Measurement.from_times("gemm", "nvdsl", shape, [1.0], flops=1e12, correct=True,
                                   extra={"sm_clock_mhz": 1500})]
    lines = report.table(gemm, rows).splitlines()
    assert "| SM MHz while timed (nvdsl / peer) | nvdsl / best peer per SM cycle |" in lines[2]
    assert lines[4].endswith("| 1.00× | 1500 / 1600 | 1.07× |"), lines[4]
    assert "SM MHz" not in report.table(gemm, [Measurement.from_times("gemm", "nvdsl", shape, [1.0], flops=1e12)])


def _recording_torch(log: list):
    """A stand-in for ``torch.cuda`` that records the order of what is issued on the stream."""
    class Event:
        def __init__(self, enable_timing):
            self.at = None

        def record(self):
            log.append("event")
            self.at = len(log)

        def elapsed_time(self, end):
            return float(end.at - self.at)
    cuda = SimpleNamespace(Event=Event, synchronize=lambda: log.append("sync"),
                           _sleep=lambda cycles: log.append(("hold", cycles)))
    return SimpleNamespace(cuda=cuda)


@pytest.mark.parametrize("queue_ahead", [True, False])
def test_event_timing_queues_the_calls_behind_a_hold(monkeypatch, queue_ahead):
    """The timed calls are issued behind one spin kernel (so a call short on the device reads its device time,
    not the host's), long enough for every queued call; none with ``queue_ahead=False`` (``--host-bound``)."""
    from benchmarks import harness
    log = []
    monkeypatch.setitem(sys.modules, "torch", _recording_torch(log))
    times = harness.time_cuda(lambda: log.append("call"), warmup=2, reps=3, queue_ahead=queue_ahead)
    issued = log[log.index("sync") + 1:]
    if queue_ahead:
        assert issued[0][0] == "hold" and issued[0][1] > 0
        issued = issued[1:]
    assert "hold" not in str(issued)
    assert issued == ["event", "call", "event"] * 3 + ["sync"]
    assert times == [2.0] * 3                      # each pair brackets its own call only
    if queue_ahead:       # at least 10 us of host time per queued call (its events), twice over, at 2 GHz
        assert log[log.index("sync") + 1][1] >= 3 * 10 * 2 * 2000


def test_table_ratio_is_against_the_best_correct_peer_and_failures_stay_visible():
    shape = {"dtype": "fp16", "M": 8192, "N": 8192, "K": 4096, "sweep": "M=N=8192"}
    flops = 2 * 8192 * 8192 * 4096
    rows = [Measurement.from_times("gemm", "cublas", shape, [1.0, 1.0, 1.2], flops=flops, correct=True),
            Measurement.from_times("gemm", "triton", shape, [2.0, 2.0], flops=flops, correct=True),
            Measurement.failure("gemm", "pallas", shape, RuntimeError("Mosaic GPU crashed")),
            Measurement.from_times("gemm", "nvdsl-ws", shape, [1.25, 1.25], flops=flops, correct=True)]
    text = report.table(gemm, rows)
    line = next(line for line in text.splitlines() if line.startswith("| fp16"))
    assert "failed: RuntimeError: Mosaic GPU crashed" in line
    assert "| cublas 549.8" in line        # 2*8192^2*4096 FLOP in 1 ms
    assert line.rstrip(" |").endswith("0.80×")  # nvdsl at 1.25 ms against cuBLAS at 1.0 ms


def test_gemm_suite_times_the_pingpong_mapping_beside_the_default_one():
    """``--systems cublas,nvdsl-gemm,nvdsl-gemm-pingpong`` times the library GEMM under both mappings; the
    ping-pong system computes the same product (on NumPy arrays: in the interpreter without a GPU)."""
    import numpy as np
    from nvdsl.kernels.gemm import PINGPONG_MAPPING

    systems = gemm.systems()
    assert {"cublas", "nvdsl-gemm", "nvdsl-gemm-pingpong"} <= set(systems)
    fn = gemm.NVDSL_GEMMS["nvdsl-gemm-pingpong"]
    assert PINGPONG_MAPPING.schedule == "pingpong" and PINGPONG_MAPPING.turns
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((200, 136)).astype(np.float16), rng.standard_normal((136, 264)).astype(np.float16)
    c = np.full((200, 264), np.nan, np.float32)
    fn(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-4, atol=1e-3)


# --------------------------------------------------------------------------- gemm_family

def _args(**changes):
    return SimpleNamespace(**{"quick": False, "k": "", "dtypes": "", "systems": "", **changes})


def test_gemm_family_loads_without_gpu_libraries():
    code = ("import sys, types; import benchmarks.suites.gemm_family as s; "
            "s.shapes(types.SimpleNamespace(quick=True, k='', dtypes='')); "
            "print(sorted(m for m in ('torch', 'triton', 'nvdsl', 'jax') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=ENV)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_gemm_takes_extra_shapes():
    extra = gemm.shapes(_args(dtypes="fp16", k="4096", square=False, shapes="1024x1024x8192, 256X8192x8192"))
    assert [(p["M"], p["N"], p["K"], p["sweep"]) for p in extra] == [
        (8192, 8192, 4096, "M=N=8192"), (1024, 1024, 8192, "shapes"), (256, 8192, 8192, "shapes")]
    with pytest.raises(SystemExit, match="'1024x1024' is not MxNxK"):
        gemm.shapes(_args(square=False, shapes="1024x1024"))


def test_gemm_takes_a_as_the_transposed_view_of_a_weight_gradient():
    shapes = gemm.shapes(_args(dtypes="bf16", k="", square=False, shapes="4096x4096x8192", a_layout="KM"))
    assert shapes and all(p["A"] == "KM" for p in shapes)
    assert gemm.row_label(shapes[-1]) == "bf16 4096×4096×8192 A=x.T"
    assert "A" not in gemm.shapes(_args(dtypes="bf16", k="4096", square=False, shapes=""))[0]


def test_gemm_takes_b_as_the_transposed_view_of_a_linear_layers_weight():
    shapes = gemm.shapes(_args(dtypes="bf16", k="", square=False, shapes="16x50257x4096", b_layout="NK"))
    assert shapes and all(p["B"] == "NK" for p in shapes)
    assert gemm.row_label(shapes[-1]) == "bf16 16×50257×4096 B=w.T"
    assert "B" not in gemm.shapes(_args(dtypes="bf16", k="4096", square=False, shapes=""))[0]


def test_gemm_family_shapes_are_the_issues():
    shapes = gemm_family.shapes(_args())
    assert [p["op"] for p in shapes] == (["dual"] * 2 + ["rowsum"] * 2 + ["batched"] * 2 + ["grouped"] * 2 +
                                         ["linear"] * 6 + ["fp8"] * 2 + ["fp8-block"] * 2)
    for p in shapes:
        assert p["K"] == 4096 and p["dtype"] in ("fp16", "bf16")
        assert (p["M"], p["N"]) == {"batched": (4096, 4096), "grouped": (32768, 4096)}.get(p["op"], (8192, 8192))
    assert {p["batch"] for p in shapes if p["op"] == "batched"} == {8}
    assert [(p["activation"], p["dtype"]) for p in shapes if p["op"] == "linear"] == [
        (act, dtype) for dtype in ("fp16", "bf16") for act in ("relu", "gelu", "silu")]

    for op in ("fp8", "fp8-block"):
        assert [(p["inputs"], p["dtype"]) for p in shapes if p["op"] == op] == [("e4m3", "fp16"), ("e4m3", "bf16")]
    assert gemm_family.row_label(shapes[-1]) == "fp8-block e4m3→bf16 8192×8192×4096"
    assert list(gemm_family.systems("fp8-block")) == ["nvdsl", "nvdsl-pingpong", "nvdsl-scales-by-threads",
                                                      "nvdsl-pingpong-scales-by-threads", "nvdsl-turns", "torch"]

    quick = gemm_family.shapes(_args(quick=True))
    assert {(p["dtype"], p["K"]) for p in quick} == {("fp16", 4096)} and len(quick) == 9
    swept = gemm_family.shapes(_args(k="1024,16384", dtypes="bf16"))
    assert sorted({p["K"] for p in swept}) == [1024, 16384] and {p["dtype"] for p in swept} == {"bf16"}
    chosen = gemm_family.shapes(_args(ops="fp8-block,dual", dtypes="bf16"))
    assert [p["op"] for p in chosen] == ["dual", "fp8-block"]
    with pytest.raises(SystemExit, match="unknown --ops \\['fp4'\\]"):
        gemm_family.shapes(_args(ops="fp4"))
    with pytest.raises(SystemExit):
        gemm_family.shapes(_args(dtypes="fp8"))


def test_gemm_family_counts_both_products_of_the_dual_gemm_and_every_batch():
    mnk = 8192 * 8192 * 4096
    by_op = {(p["op"], p.get("activation")): p for p in gemm_family.shapes(_args(quick=True))}
    assert gemm_family.flops(by_op["dual", None]) == 4 * mnk
    assert gemm_family.flops(by_op["rowsum", None]) == 2 * mnk
    assert gemm_family.flops(by_op["linear", "gelu"]) == 2 * mnk
    assert gemm_family.flops(by_op["batched", None]) == 2 * 8 * 4096 ** 3
    for op in ("dual", "rowsum"):  # the plain GEMMs beside them: one product, never a peer
        plain = {name: s for name, s in gemm_family.systems(op).items() if name.startswith("gemm-")}
        assert sorted(plain) == ["gemm-cublas", "gemm-nvdsl"]
        assert all(s.role == REFERENCE and s.flops(by_op[op, None]) == 2 * mnk for s in plain.values())
    assert set(gemm_family.systems("batched")) == set(gemm_family.systems("linear", "silu")) == {
        "nvdsl", "triton", "torch"}


def test_gemm_family_measures_fp8_against_both_accumulations_of_torch_scaled_mm():
    fp8 = next(p for p in gemm_family.shapes(_args(quick=True)) if p["op"] == "fp8")
    assert gemm_family.row_label(fp8) == "fp8 e4m3→fp16 8192×8192×4096"
    assert gemm_family.flops(fp8) == 2 * 8192 * 8192 * 4096
    assert list(gemm_family.systems("fp8")) == ["nvdsl", "torch-fast-accum", "torch"]
    # The tolerance is the fp8 accumulation's error (about 1.1e-3 at K = 4096) and C's rounding, not RTOL.
    assert 1.1e-3 < gemm_family.FP8_RTOL["fp16"] < gemm_family.FP8_RTOL["bf16"] < gemm_family.RTOL


def test_gemm_family_measures_a_ragged_grouped_gemm_against_torch_and_triton():
    grouped = next(p for p in gemm_family.shapes(_args(quick=True)) if p["op"] == "grouped")
    assert gemm_family.row_label(grouped) == "grouped fp16 8 groups 32768×4096×4096"
    assert gemm_family.flops(grouped) == 2 * 32768 * 4096 * 4096
    assert sum(gemm_family.GROUP_SIZES) == grouped["M"] and len(gemm_family.GROUP_SIZES) == grouped["groups"]
    assert all(m % 128 for m in gemm_family.GROUP_SIZES)          # every group ends inside a tile
    assert list(gemm_family.systems("grouped")) == ["nvdsl", "triton", "torch", "torch-loop"]


def _family_row(shape, times_ms: dict, correct=None, failed=()):
    rows = []
    for system, ms in times_ms.items():
        flops = gemm_family.plain_gemm_flops(shape) if system.startswith("gemm-") else gemm_family.flops(shape)
        role = REFERENCE if system.startswith("gemm-") else None
        rows.append(Measurement.from_times("gemm_family", system, shape, [ms], flops=flops, role=role,
                                           correct=(correct or {}).get(system, True)))
    rows += [Measurement.failure("gemm_family", system, shape, RuntimeError("no variant ran")) for system in failed]
    return rows


def test_gemm_family_table_compares_the_dual_gemm_with_peers_and_with_plain_gemms():
    dual = {"op": "dual", "dtype": "fp16", "M": 8192, "N": 8192, "K": 4096}
    linear = {"op": "linear", "activation": "gelu", "dtype": "fp16", "M": 8192, "N": 8192, "K": 4096}
    # The dual GEMM does twice a plain GEMM's work: 2.0 ms for it is the plain GEMM's rate at 1.0 ms.
    rows = _family_row(dual, {"nvdsl": 2.0, "triton": 3.0, "torch": 2.5, "gemm-nvdsl": 1.0, "gemm-cublas": 0.8})
    rows += _family_row(linear, {"nvdsl": 1.0, "torch": 1.1}, failed=["triton"])
    text = report.table(gemm_family, rows)
    lines = text.splitlines()
    headings = [line for line in lines if line.startswith("### ")]
    assert [h.split(":")[0] for h in headings] == ["### Dual GEMM (gated MLP)", "### Linear with bias and activation"]
    header = next(line for line in lines if line.startswith("| shape") and "plain" in line)
    dual_line = next(line for line in lines if line.startswith("| dual fp16 8192×8192×4096"))
    cells = dict(zip([c.strip() for c in header.strip("|").split("|")],
                     [c.strip() for c in dual_line.strip("|").split("|")]))
    assert cells["best peer"] == "torch 439.8"          # the faster plain cuBLAS GEMM is no peer of the dual GEMM
    assert cells["nvdsl / best peer"] == "1.25×"
    assert cells["nvdsl / plain nvdsl GEMM"] == "1.00×"
    assert cells["nvdsl / plain cuBLAS GEMM"] == "0.80×"

    linear_section = text[text.index("### Linear"):]
    assert "plain" not in linear_section and "gemm-cublas" not in linear_section
    linear_line = next(line for line in lines if line.startswith("| linear+gelu fp16"))
    assert "failed: RuntimeError: no variant ran" in linear_line and linear_line.rstrip(" |").endswith("1.10×")


def test_gemm_family_plain_gemm_ratios_need_correct_results():
    rowsum = {"op": "rowsum", "dtype": "bf16", "M": 8192, "N": 8192, "K": 4096}
    wrong = _family_row(rowsum, {"nvdsl": 1.0, "gemm-nvdsl": 1.0, "gemm-cublas": 1.0}, correct={"gemm-nvdsl": False})
    assert gemm_family.derived_columns(wrong) == {"nvdsl / plain nvdsl GEMM": "—",
                                                  "nvdsl / plain cuBLAS GEMM": "1.00×"}
    failed = _family_row(rowsum, {"gemm-nvdsl": 1.0}, failed=["nvdsl"])
    assert set(gemm_family.derived_columns(failed).values()) == {"—"}
    batched = {"op": "batched", "dtype": "fp16", "batch": 8, "M": 4096, "N": 4096, "K": 4096}
    assert gemm_family.derived_columns(_family_row(batched, {"nvdsl": 1.0, "torch": 1.0})) == {}


def test_gemm_family_plot_draws_a_group_of_bars_per_row(tmp_path):
    pytest.importorskip("matplotlib")
    dual = {"op": "dual", "dtype": "fp16", "M": 8192, "N": 8192, "K": 4096}
    batched = {"op": "batched", "dtype": "fp16", "batch": 8, "M": 4096, "N": 4096, "K": 4096}
    rows = _family_row(dual, {"nvdsl": 2.0, "torch": 2.5, "gemm-cublas": 0.8}, correct={"torch": False})
    rows += _family_row(batched, {"nvdsl": 1.0, "torch": 1.1}, failed=["triton"])
    path = report.plot("gemm_family", gemm_family, rows, {"device": {"name": "NVIDIA H100 80GB HBM3"}},
                       str(tmp_path / "family.png"))
    assert path and os.path.getsize(path) > 10_000


def test_gemm_plot_leaves_the_extra_shapes_to_the_table():
    """--shapes vary M and N too: a line over K would join unlike shapes."""
    rows = [Measurement.from_times("gemm", "cublas", p, [1.0], flops=2 * p["M"] * p["N"] * p["K"])
            for p in gemm.shapes(_args(dtypes="fp16", k="1024,4096", square=False, shapes="256x8192x8192"))]
    assert sorted(m.params["K"] for m in report.plotted(gemm.PLOT, rows, gemm.TABLE_METRIC)) == [1024, 4096]
    assert "256×8192×8192" in report.table(gemm, rows)


def _compile_for_hopper(kernel, pointers: dict, ints: set, constants: dict, num_warps: int, num_stages: int,
                        scalars: dict | None = None):
    """PTX of a Triton kernel for sm_90a, compiled without a GPU, and its ptxas resources (``scalars``: other
    arguments' Triton types, e.g. ``{"eps": "fp32"}``)."""
    scalars = scalars or {}
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from nvdsl.compiler.compiled import parse_ptxas_log
    from nvdsl.compiler.toolchain import find_tool

    signature = {name: (f"*{pointers[name]}" if name in pointers else scalars[name] if name in scalars else
                        "i32" if name in ints else "constexpr")
                 for name in kernel.arg_names}
    source = ASTSource(fn=kernel, signature=signature,
                       constexprs={(kernel.arg_names.index(k),): v for k, v in constants.items()})
    compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32),
                              options={"num_warps": num_warps, "num_stages": num_stages})
    ptxas = find_tool("ptxas")
    if ptxas is None:
        pytest.skip("no ptxas")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.ptx")
        with open(path, "w") as f:
            f.write(compiled.asm["ptx"])
        proc = subprocess.run([ptxas, "-arch=sm_90a", "-v", path, "-o", os.path.join(tmp, "kernel.cubin")],
                              capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    resources, = parse_ptxas_log(proc.stdout + proc.stderr).values()
    return compiled, resources


@pytest.mark.parametrize("kind", ["gated", "rowsum", "linear-silu", "batched", "gemm", "grouped"])
def test_triton_peers_compile_for_hopper_without_spills(kind):
    """Every autotuning config of the suites' Triton kernel compiles for sm_90a (no GPU needed), within the
    shared memory of a block, without spilling, and warp-specialized where the config asks."""
    pytest.importorskip("triton")
    from benchmarks.peers import triton_common, triton_gemm_family as family, triton_matmul

    table = {"gated": family.GATED_CONFIGS, "rowsum": family.FUSED_CONFIGS, "linear-silu": family.FUSED_CONFIGS,
             "batched": family.FUSED_CONFIGS, "gemm": triton_matmul.CONFIGS, "grouped": family.GROUPED_CONFIGS}[kind]
    operation = {"gated": {"GATED": True, "ACTIVATION": "silu"}, "rowsum": {"ROW_SUMS": True},
                 "linear-silu": {"HAS_BIAS": True, "ACTIVATION": "silu"}}.get(kind, {})
    pointers = {"a_ptr": "fp16", "b_ptr": "fp16", "c_ptr": "fp16", "bias_ptr": "fp16",
                "rows_ptr": "fp32"}
    ints = {"M", "N", "K"} | ({"BATCH"} if kind == "batched" else set())
    kernel = family.fused_matmul_kernel
    if kind == "grouped":
        kernel, pointers, ints = family.grouped_matmul_kernel, {**pointers, "tiles_ptr": "i32"}, ints | {"GROUPS", "TILES"}
    for config in triton_common.configs(table, True):
        constants = {"NUM_SMS": 132, "BATCH": 1, **config.kwargs, **operation}
        if kind in ("batched", "grouped"):
            del constants["BATCH"]
        compiled, resources = _compile_for_hopper(kernel, pointers, ints, constants,
                                                  config.num_warps, config.num_stages)
        where = f"{kind} {config}"
        assert resources.spill_stores == 0 and resources.stack_frame == 0, (where, resources)
        assert compiled.metadata.shared <= 232448, (where, compiled.metadata.shared)
        ptx = compiled.asm["ptx"]
        assert "wgmma.mma_async" in ptx and "cp.async.bulk.tensor" in ptx, where
        assert ("setmaxnreg" in ptx) == config.kwargs["WARP_SPECIALIZE"], where


# --------------------------------------------------------------------------- rowwise

def test_rowwise_loads_without_gpu_libraries_and_measures_the_issues_shapes():
    code = ("import sys, types; import benchmarks.suites.rowwise as s; "
            "print(len(s.shapes(types.SimpleNamespace(quick=False))), "
            "sorted(m for m in ('torch', 'triton', 'nvdsl', 'jax') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-m", "benchmarks", "--help"], cwd=ROOT, capture_output=True,
                            text=True, env=ENV)
    assert result.returncode == 0 and "rowwise" in result.stdout, result.stderr
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=ENV)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "16 []"
    from benchmarks.suites import rowwise
    full = rowwise.shapes(_args())
    assert {(p["M"], p["N"]) for p in full} == {(4096, 1000), (4096, 4096), (8192, 50257), (8192, 50304)}
    assert [p["op"] for p in full[::4]] == ["softmax", "rms_norm", "layer_norm", "cross_entropy"]
    assert {(p["M"], p["N"]) for p in rowwise.shapes(_args(quick=True))} == {(4096, 4096), (8192, 50257)}
    assert {(p["M"], p["N"]) for p in rowwise.shapes(_args(shapes="8192x50304"))} == {(8192, 50304)}
    with pytest.raises(SystemExit, match="--tiles: '8x' is not BMxBN"):
        rowwise.systems("softmax", _args(tiles="8x"))
    assert set(rowwise.systems("softmax")) == {"nvdsl", "torch", "triton", rowwise.COPY}
    assert set(rowwise.systems("cross_entropy")) == {"nvdsl", "torch", rowwise.COPY}
    assert set(rowwise.systems("cross_entropy", _args(tiles="8x1024, 4x2048"))) == \
        {"nvdsl", "nvdsl 8x1024", "nvdsl 4x2048", "torch", rowwise.COPY}
    # a row block kept in shared memory: for the programs of several passes, not cross-entropy's one
    assert set(rowwise.systems("softmax", _args(tiles="1x4096:shared,4x2048"))) == \
        {"nvdsl", "nvdsl 1x4096 shared", "nvdsl 4x2048", "torch", "triton", rowwise.COPY}
    assert set(rowwise.systems("cross_entropy", _args(tiles="1x4096:shared"))) == {"nvdsl", "torch", rowwise.COPY}
    with pytest.raises(SystemExit, match="after ':' comes 'shared' or 'register'"):
        rowwise.systems("softmax", _args(tiles="1x4096:global"))
    # consumer warpgroups that hold a row tile together
    assert {"nvdsl 1x8192 shared 4wg", "nvdsl 1x8192 2wg"} <= set(rowwise.systems(
        "softmax", _args(tiles="1x8192:shared:4,1x8192::2")))
    assert "nvdsl 1x4096 2wg" in rowwise.systems("cross_entropy", _args(tiles="1x4096::2"))
    with pytest.raises(SystemExit, match="a count of consumer warpgroups"):
        rowwise.systems("softmax", _args(tiles="1x4096:shared:x"))
    p = {"op": "cross_entropy", "dtype": "bf16", "M": 8192, "N": 50257}
    assert rowwise.nbytes(p) == 2 * 8192 * 50257 + 8 * 8192 and rowwise.copy_bytes(p) == 4 * 8192 * 50257


def test_the_ratio_to_the_best_peer_is_the_default_mappings_where_variants_ran_beside_it():
    """A variant under other tiles (``--tiles``) that beats the library call does not stand in for it in the ratio."""
    from benchmarks.suites import rowwise
    shape = {"op": "softmax", "dtype": "bf16", "M": 8192, "N": 50304}
    row = [Measurement.from_times("rowwise", system, shape, [ms], nbytes=4 * 8192 * 50304)
           for system, ms in (("nvdsl", 2.0), ("nvdsl 1x4096 shared 4wg", 1.0), ("torch", 1.6))]
    lines = report.table(rowwise, row).splitlines()
    header = next(line for line in lines if line.startswith("| shape"))
    line = next(line for line in lines if line.startswith("| softmax"))
    cells = dict(zip([c.strip() for c in header.strip("|").split("|")],
                     [c.strip() for c in line.strip("|").split("|")]))
    assert cells["nvdsl / best peer"] == "0.80×", cells


def test_rowwise_table_shows_gbps_beside_the_copy_bandwidth():
    from benchmarks.suites import rowwise
    p = {"op": "softmax", "dtype": "bf16", "M": 4096, "N": 4096}
    moved = rowwise.nbytes(p)
    rows = [Measurement.from_times("rowwise", "nvdsl", p, [0.1], nbytes=moved, correct=True),
            Measurement.from_times("rowwise", "torch", p, [0.08], nbytes=moved, correct=True),
            Measurement.from_times("rowwise", rowwise.COPY, p, [0.05], nbytes=rowwise.copy_bytes(p), correct=True,
                                   role=REFERENCE)]
    assert rowwise.derived_columns(rows) == {"nvdsl % of copy": "50.0%", "torch % of copy": "62.5%"}
    text = report.table(rowwise, rows)
    assert "softmax (bf16)" in text and "50.0%" in text and "671.1" in text       # 2^26 bytes in 0.1 ms


def test_rowwise_nvdsl_systems_compute_their_operation(monkeypatch):
    """Each nvdsl system's call (its kernel and argument order) computes its operation, on NumPy arrays in the
    interpreter: the harness's check is replaced by one against NumPy."""
    import numpy as np
    from benchmarks import harness
    from benchmarks.suites import rowwise

    checked = {}

    def check(fn, out, ref, rtol):
        fn()
        checked["error"] = float(np.linalg.norm(out.astype(np.float64) - ref) / np.linalg.norm(ref))
    monkeypatch.setattr(harness, "checked_call", check)
    rng = np.random.default_rng(0)
    m, n = 64, 300
    x = rng.standard_normal((m, n)).astype(np.float32)
    w, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    targets = rng.integers(0, n, m).astype(np.int32)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    mean = x.mean(axis=1, keepdims=True)
    refs = {"softmax": e / e.sum(axis=1, keepdims=True),
            "rms_norm": x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6) * w,
            "layer_norm": (x - mean) / np.sqrt(((x - mean) ** 2).mean(axis=1, keepdims=True) + 1e-5) * w + b,
            "cross_entropy": np.log(e.sum(axis=1)) + x.max(axis=1) - x[np.arange(m), targets]}
    for op, ref in refs.items():
        ops = SimpleNamespace(x=x, y=np.full_like(x, np.nan), w=w, b=b, targets=targets,
                              loss=np.full(m, np.nan, np.float32), ref=ref)
        rowwise._nvdsl(op)(ops, _args())
        assert checked.pop("error") < 1e-5, op


def test_rowwise_triton_peers_compile_for_hopper_without_spills():
    pytest.importorskip("triton")
    from benchmarks.peers import triton_rowwise as peer
    for kernel, pointers in ((peer.softmax_kernel, {"y_ptr": "bf16", "x_ptr": "bf16"}),
                             (peer.rms_norm_kernel, {"y_ptr": "bf16", "x_ptr": "bf16", "w_ptr": "bf16"})):
        scalars = {"eps": "fp32"} if kernel is peer.rms_norm_kernel else {}
        compiled, resources = _compile_for_hopper(kernel, pointers, {"N"}, {"BLOCK": peer.BLOCK}, peer.NUM_WARPS, 1,
                                                  scalars=scalars)
        assert resources.spill_stores == 0 and resources.stack_frame == 0, (kernel.__name__, resources)


def test_the_compile_suites_breakdown_adds_up_to_the_compile_it_splits(tmp_path, monkeypatch):
    """The compile suite splits a GEMM's compile() into lowering, ptxas, the protocol check's time past ptxas and
    the rest: each part is time the compile spent once (the check, run while ptxas assembles, is not counted
    again), so none is negative and they add up to the wall time. The stages are a real compile's; the wall time
    is given (the stages' spans plus 0.25 s of the rest), so nothing depends on this machine's clock or load."""
    import numpy as np

    import nvdsl.tasks as nt
    from benchmarks.suites.compile import PHASES, compile_breakdown
    from nvdsl.kernels.gemm import MAPPING, matmul

    monkeypatch.setenv("NVDSL_CACHE_DIR", str(tmp_path))       # a cold compile, whatever ran before
    kernel = nt.build(matmul, MAPPING.replace(sm_count=132, pipeline=3))
    arrays = (np.zeros((256, 512), np.float16), np.zeros((256, 192), np.float16), np.zeros((192, 512), np.float16))
    timings = kernel.compile(*arrays).module.timings
    assert {"outline_s", "lower_s", "check_s", "check_cpu_s", "check_overlap_s"} <= set(timings)
    spans = timings["outline_s"] + timings["lower_s"] + timings.get("ptxas_s", 0.0) + timings["check_s"]
    wall = spans - timings["check_overlap_s"] + 0.25
    parts = compile_breakdown(wall, timings)
    assert set(parts) <= {key for key, _ in PHASES}
    assert min(parts.values()) >= 0, (parts, timings)
    assert abs(sum(parts.values()) - wall) < 1e-9 and abs(parts["gemm_trace"] - 0.25) < 1e-9
    # A check wholly inside ptxas adds nothing; its CPU time is a view of the same time, never added.
    given = {"outline_s": 0.1, "lower_s": 0.2, "ptxas_s": 0.3, "check_s": 0.25, "check_cpu_s": 0.5,
             "check_overlap_s": 0.25}
    assert compile_breakdown(1.0, given) == pytest.approx(
        {"gemm_lower": 0.3, "gemm_ptxas": 0.3, "gemm_check": 0.0, "gemm_trace": 0.4})
    # A cache hit records no stages: the check, run alone, is its own row and not part of the rest.
    assert compile_breakdown(1.0, {}, check_s=0.3) == pytest.approx(
        {"gemm_lower": 0.0, "gemm_ptxas": 0.0, "gemm_check": 0.3, "gemm_trace": 0.7})


def test_the_compile_suites_import_rows_leave_nothing_for_a_warm_compile_to_import(tmp_path):
    """A warm process of the compile suite finds its first calls' kernels on disk, so what a compile imports beyond
    tracing is first imported by the compile rows unless a row of its own imports it first (it read as compile
    time: axpy.compile() 124 ms warm against 37 cold on an H200). After the suite's import rows (MLIR's tracer and
    compiler, :data:`COMPILE_IMPORTS`) and a trace, a compile() from the disk cache, of axpy and of a task-layer
    GEMM, imports no module of nvdsl or MLIR."""
    import json
    import subprocess
    import sys
    import textwrap

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = textwrap.dedent("""
        import importlib, json, sys
        import numpy as np
        import nvdsl, nvdsl.tasks as nt
        from benchmarks import nvdsl_kernels
        from benchmarks.suites.compile import COMPILE_IMPORTS
        from nvdsl.kernels.gemm import MAPPING, matmul
        x, y = np.zeros(1 << 12, np.float32), np.zeros(1 << 12, np.float32)
        gemm = nt.build(matmul, MAPPING.replace(sm_count=132, pipeline=3))
        arrays = (np.zeros((256, 512), np.float16), np.zeros((256, 192), np.float16), np.zeros((192, 512), np.float16))
        if sys.argv[1] == "warm":
            import nvdsl.compiler.cache                     # the suite's first calls found their kernels with it
            import nvdsl.frontend.tracer, nvdsl.compiler.driver
            for name in COMPILE_IMPORTS:
                importlib.import_module(name)
            nvdsl_kernels.axpy.trace(np.zeros(1 << 10, np.float32), np.zeros(1 << 10, np.float32), 2.0)
        before = set(sys.modules)
        compiled = nvdsl_kernels.axpy.compile(x, y, 2.0), gemm.compile(*arrays)
        new = sorted(m for m in set(sys.modules) - before if m.split(".")[0] in ("nvdsl", "mlir"))
        print(json.dumps({"new": new, "hit": [not c.module.timings for c in compiled]}))
    """)
    env = dict(os.environ, NVDSL_CACHE_DIR=str(tmp_path), NVDSL_DISK_CACHE="1",
               PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    env.pop("NVDSL_DUMP_DIR", None)
    found = {}
    for mode in ("cold", "warm"):
        run = subprocess.run([sys.executable, "-c", script, mode], cwd=root, env=env, capture_output=True, text=True,
                             timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
        found[mode] = json.loads(run.stdout.strip().splitlines()[-1])
    assert found["cold"]["hit"] == [False, False] and found["cold"]["new"]     # a cold compile imports them
    assert found["warm"]["hit"] == [True, True] and found["warm"]["new"] == []


def test_attention_decode_suite_counts_the_cache_its_sequences_hold():
    from benchmarks.suites import attention_decode as suite

    shapes = suite.shapes(_args())
    assert len(shapes) == len(suite.BATCHES) * len(suite.SLOTS)
    p = shapes[1]
    n = suite.held(p)
    assert len(n) == p["B"] and (n >= p["slots"] // 2).all() and (n <= p["slots"]).all()
    assert suite.nbytes(p) == 2 * p["Hkv"] * n.sum() * p["D"] * 2


def test_attention_suites_take_the_head_dims_asked_for():
    from benchmarks.suites import attention, attention_backward

    def dims(suite, head_dims=""):
        args = SimpleNamespace(quick=False, dtypes="", head_dims=head_dims)
        return sorted({p["D"] for p in suite.shapes(args)})
    assert dims(attention) == dims(attention_backward) == [64, 128]
    assert dims(attention, head_dims="256") == [256] and dims(attention_backward, head_dims="128,256") == [128, 256]

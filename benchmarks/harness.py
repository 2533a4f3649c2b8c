"""Shared machinery of the suites: timing, measurements, correctness checks, inputs, environment.

Nothing GPU-related is imported at module level: torch, cuda-python and the
peers' libraries are imported inside the functions that need them, so the CLI
(``python3 -m benchmarks --help``) works on a machine without them.

Timing methods (each measurement records which one it used in ``extra["timing"]``):

* ``cuda-events`` (:func:`time_cuda`): a pair of ``torch.cuda.Event`` around
  each call on the current stream, after warm-up, the calls queued behind a spin
  kernel so that the host's time per call does not show; the device time of one call.
* ``wallclock`` (:func:`time_wallclock`): host ``perf_counter`` around a batch
  of back-to-back calls ended by a blocking sync, divided by the batch size;
  for systems that run on a stream torch cannot see (JAX).
* ``host`` (:func:`time_host`): host time per call of a tight loop of calls,
  with and without the final synchronisation (launch overhead).

Beside the device-timed systems, :class:`ClockSampler` reads the SM clock from ``nvidia-smi`` every
:data:`CLOCK_PERIOD_MS` while they run and records the median of the samples taken during each one's timed calls
(``extra["sm_clock_mhz"]``; for calls timed in less than a period, of the readings a period either side of them):
under a load that keeps the tensor cores busy the card sets its clock by its power limit,
so two systems timed side by side may run at different clocks, and a table's ratio per SM cycle says how much of a
ratio is the clock's.
"""

from __future__ import annotations

from functools import partial

import contextlib
import dataclasses
import datetime
import math
import os
import platform
import shutil
import socket
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Callable

NVDSL, PEER, REFERENCE = "nvdsl", "peer", "reference"


# --------------------------------------------------------------------------- measurements

def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) of values, linearly interpolated (like numpy's default)."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    pos = (len(ordered) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


@dataclass
class Measurement:
    """One system on one shape: the timing summary, derived throughput, and correctness.

    ``role`` is ``"nvdsl"`` (one of ours), ``"peer"`` (a system we compare against)
    or ``"reference"`` (a yardstick such as a device copy, never a "best peer").
    A system that failed keeps its row with ``error`` set and no timings.
    """

    suite: str
    system: str
    params: dict[str, Any]
    role: str = PEER
    median_ms: float | None = None
    p10_ms: float | None = None
    p90_ms: float | None = None
    min_ms: float | None = None
    reps: int = 0
    tflops: float | None = None
    gbps: float | None = None
    correct: bool | None = None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_times(cls, suite: str, system: str, params: dict, times_ms: list[float], *,
                   role: str | None = None, flops: float | None = None, nbytes: float | None = None,
                   correct: bool | None = None, extra: dict | None = None) -> "Measurement":
        """Summarise per-call times (ms); TFLOP/s and GB/s come from the median."""
        median = percentile(times_ms, 50)
        seconds = median * 1e-3
        return cls(suite, system, dict(params), role or default_role(system), median_ms=median,
                   p10_ms=percentile(times_ms, 10), p90_ms=percentile(times_ms, 90), min_ms=min(times_ms),
                   reps=len(times_ms),
                   tflops=flops / seconds / 1e12 if flops and seconds > 0 else None,
                   gbps=nbytes / seconds / 1e9 if nbytes and seconds > 0 else None,
                   correct=correct, extra=dict(extra or {}))

    @classmethod
    def failure(cls, suite: str, system: str, params: dict, error: BaseException | str, *,
                role: str | None = None, extra: dict | None = None) -> "Measurement":
        """A system that could not be run or timed, with the reason."""
        if isinstance(error, BaseException):
            extra = dict(extra or {})
            extra["traceback"] = "".join(traceback.format_exception(type(error), error, error.__traceback__))[-4000:]
            error = f"{type(error).__name__}: {error}"
        return cls(suite, system, dict(params), role or default_role(system), correct=False, error=str(error),
                   extra=dict(extra or {}))

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def default_role(system: str) -> str:
    return NVDSL if system.startswith("nvdsl") else PEER


# --------------------------------------------------------------------------- correctness

@dataclass(frozen=True)
class Check:
    """Result of :func:`check_close`."""

    ok: bool
    rel_err: float
    nonfinite: int
    tolerance: float

    def describe(self) -> str:
        text = f"rel. Frobenius error {self.rel_err:.2e} (tolerance {self.tolerance:.0e})"
        if self.nonfinite:
            text += f"; {self.nonfinite} non-finite elements (output not fully written, or overflow)"
        return text

    def to_json(self) -> dict:
        return {"ok": self.ok, "rel_err": self.rel_err, "nonfinite": self.nonfinite, "tolerance": self.tolerance}


def check_close(out, ref, rtol_rel: float, *, chunk: int = 1 << 24) -> Check:
    """Compare ``out`` to ``ref`` by relative Frobenius error ‖out−ref‖/‖ref‖ computed in float64.

    Also counts non-finite elements of ``out``: outputs are poisoned with NaN
    before the checked run (:func:`poison`), so any NaN left means an element
    the system never wrote. Works in chunks to bound the float64 temporaries.
    """
    import torch

    if tuple(out.shape) != tuple(ref.shape):
        raise ValueError(f"output shape {tuple(out.shape)} != reference shape {tuple(ref.shape)}")
    o, r = out.reshape(-1), ref.reshape(-1)
    err2 = ref2 = 0.0
    nonfinite = 0
    for start in range(0, o.numel(), chunk):
        oc = o[start:start + chunk].to(torch.float64)
        rc = r[start:start + chunk].to(torch.float64)
        bad = ~torch.isfinite(oc)
        nonfinite += int(bad.sum().item())
        diff = torch.where(bad, torch.zeros_like(oc), oc - rc)
        err2 += float(diff.square().sum().item())
        ref2 += float(rc.square().sum().item())
    rel = math.sqrt(err2 / ref2) if ref2 > 0 else math.sqrt(err2)  # over the finite elements
    return Check(ok=nonfinite == 0 and rel < rtol_rel, rel_err=rel, nonfinite=nonfinite, tolerance=rtol_rel)


def poison(out) -> None:
    """Fill an output buffer with NaN so that unwritten elements show up in the check."""
    out.fill_(float("nan"))


def checked_call(fn: Callable[[], Any], out, ref, rtol_rel: float, *, also=()) -> Check:
    """Poison ``out``, run ``fn`` once, wait for it, and compare ``out`` to ``ref``.

    ``also``: more ``(out, ref)`` pairs that ``fn`` writes, poisoned and compared alike; the result is
    the worst of them (largest error, every non-finite element counted, ok only if all are).
    """
    import torch

    pairs = [(out, ref), *also]
    for written, _ in pairs:
        poison(written)
    torch.cuda.synchronize()
    fn()
    torch.cuda.synchronize()
    checks = [check_close(written, expected, rtol_rel) for written, expected in pairs]
    return Check(ok=all(c.ok for c in checks), rel_err=max(c.rel_err for c in checks),
                 nonfinite=sum(c.nonfinite for c in checks), tolerance=rtol_rel)


@contextlib.contextmanager
def exact_fp32():
    """Reference math in true float32: TF32 off for matmuls and convolutions, restored after."""
    import torch

    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


# --------------------------------------------------------------------------- inputs

def randn(shape, dtype, *, scale: float = 1.0, seed: int = 0):
    """Seeded ``torch.randn(shape) * scale`` on the GPU, drawn in float32 then cast to ``dtype``.

    Every system of a suite gets inputs from this one distribution (never zeros):
    the same seed gives the same values whatever the dtype.
    """
    import torch

    generator = torch.Generator(device="cuda").manual_seed(seed)
    values = torch.randn(shape, generator=generator, device="cuda", dtype=torch.float32)
    if scale != 1.0:
        values.mul_(scale)
    return values if dtype == torch.float32 else values.to(dtype)


def require_default_stream() -> None:
    """nvdsl calls without ``stream=`` run on the legacy default stream: make sure torch's is that one."""
    import torch

    handle = torch.cuda.current_stream().cuda_stream
    if handle != 0:
        raise RuntimeError(f"torch's current stream is {handle:#x}, not the default stream; nvdsl kernels "
                           "(launched on stream 0) would not be ordered with torch's events")


# --------------------------------------------------------------------------- timing

def _l2_flush_buffer():
    import torch

    l2 = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
    return torch.empty(2 * max(l2, 1 << 20), dtype=torch.uint8, device="cuda")


#: The host clock's lead over the device when the timed calls are queued ahead: the stream is held by a spin
#: kernel of this many device cycles per queued call's host time in microseconds (2 GHz, above either card's clock).
_HOLD_CYCLES_PER_US, _HOLD_MARGIN, _MAX_HOLD_CYCLES = 2000, 2.0, 2_000_000_000


def time_cuda(fn: Callable[[], Any], *, warmup: int = 10, reps: int = 50, flush_l2: bool = False,
              queue_ahead: bool = True) -> list[float]:
    """Per-call device time in milliseconds, from a ``torch.cuda.Event`` pair around each call.

    ``warmup`` calls run first. With ``flush_l2``, a buffer of twice the L2 size
    is written before each timed call, outside the timed region (its events),
    so every call starts with a cold L2.

    With ``queue_ahead`` (the default) a spin kernel holds the stream while the host
    queues every timed call, so that an event pair measures the device's time and not
    the host's: a call of a few microseconds on the device would otherwise read its
    host time wherever issuing it takes longer (both the start event and the kernels
    wait for the host). The hold lasts twice the warm-up's host time per call.
    """
    import torch

    t0 = time.perf_counter()
    for _ in range(warmup):
        fn()
    host_us = (time.perf_counter() - t0) * 1e6 / max(warmup, 1)
    flush = _l2_flush_buffer() if flush_l2 else None
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    torch.cuda.synchronize()
    if queue_ahead:
        per_call_us = host_us + (20.0 if flush is not None else 0.0) + 10.0     # the events and the flush
        torch.cuda._sleep(int(min(_MAX_HOLD_CYCLES, _HOLD_MARGIN * reps * per_call_us * _HOLD_CYCLES_PER_US)))
    for start, end in zip(starts, ends):
        if flush is not None:
            flush.zero_()
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return [start.elapsed_time(end) for start, end in zip(starts, ends)]


def time_wallclock(fn: Callable[[], Any], sync: Callable[[Any], Any], *, warmup: int = 10, reps: int = 50,
                   target_ms: float = 5.0, max_inner: int = 100) -> tuple[list[float], int]:
    """Per-call time in milliseconds from the host clock, for systems on a stream torch cannot see.

    Each sample runs ``inner`` back-to-back calls, then ``sync(last_result)``
    (e.g. ``block_until_ready``), and divides the elapsed time by ``inner``;
    ``inner`` is chosen from the warm-up so a sample lasts about ``target_ms``,
    which amortises the final sync. Includes host dispatch wherever the GPU
    would wait for it. Returns (samples, inner).
    """
    result = None
    t0 = time.perf_counter()
    for _ in range(max(warmup, 1)):
        result = fn()
        sync(result)
    per_call_ms = (time.perf_counter() - t0) * 1e3 / max(warmup, 1)
    inner = max(1, min(max_inner, math.ceil(target_ms / max(per_call_ms, 1e-6))))
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            result = fn()
        sync(result)
        samples.append((time.perf_counter() - t0) * 1e3 / inner)
    return samples, inner


@dataclass
class HostTiming:
    """:func:`time_host` results, one entry per repeat, in microseconds per call."""

    host_us: list[float]
    wall_us: list[float]
    calls: int


def time_host(fn: Callable[[], Any], *, calls: int = 500, repeats: int = 40, warmup: int = 500) -> HostTiming:
    """Host time per call of ``calls`` back-to-back calls, ``repeats`` times.

    The device is synchronised before each repeat; ``host_us`` stops the clock
    right after the last call returns (the cost of issuing a call), ``wall_us``
    after the final ``torch.cuda.synchronize()`` (includes draining the queue).
    When the two agree, the GPU was not the bottleneck.
    """
    return time_host_in_turn({"fn": fn}, calls=calls, repeats=repeats, warmup=warmup)["fn"]


def time_host_in_turn(fns: dict[str, Callable[[], Any]], *, calls: int = 500, repeats: int = 40, warmup: int = 500,
                      clock: Callable[[], float] = time.perf_counter, sync: Callable[[], Any] | None = None
                      ) -> dict[str, HostTiming]:
    """:func:`time_host` of several calls, timed in turn: each repeat times every one of them (``calls`` back to
    back each), starting one further along the list each time, so that a drift of the host's speed (a VM's
    neighbours, the clock) reaches them alike and the repeats pair up (see :func:`paired_differences`).
    ``clock`` and ``sync`` (default ``torch.cuda.synchronize``) are injectable."""
    if sync is None:
        import torch
        sync = torch.cuda.synchronize
    names = list(fns)
    for name in names:
        for _ in range(warmup):
            fns[name]()
    timings = {name: HostTiming([], [], calls) for name in names}
    for r in range(repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            fn, timing = fns[name], timings[name]
            sync()
            t0 = clock()
            for _ in range(calls):
                fn()
            t1 = clock()
            sync()
            t2 = clock()
            timing.host_us.append((t1 - t0) / calls * 1e6)
            timing.wall_us.append((t2 - t0) / calls * 1e6)
    return timings


def paired_differences(a: list[float], b: list[float]) -> tuple[float, float, float]:
    """(median, 10th, 90th percentile) of ``a[r] - b[r]`` over the repeats ``r`` of two calls timed in turn."""
    differences = sorted(x - y for x, y in zip(a, b))
    n = len(differences)
    return differences[n // 2], differences[n // 10], differences[min(n - 1, n * 9 // 10)]


# --------------------------------------------------------------------------- running one system

@dataclass
class Prepared:
    """A system ready to time: the call, its correctness check, and what to record about it.

    ``timing`` is ``"cuda-events"`` (:func:`time_cuda`) or ``"wallclock"``
    (:func:`time_wallclock`, which then needs ``sync``).
    """

    fn: Callable[[], Any]
    check: Check | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    timing: str = "cuda-events"
    sync: Callable[[Any], Any] | None = None


@dataclass(frozen=True)
class System:
    """A system of a suite whose role or FLOP count differs from the suite's: ``prepare(ops, args) ->
    Prepared``; ``role`` (None: from the name) and ``flops(params)`` (None: the suite's count)."""

    prepare: Callable
    role: str | None = None
    flops: Callable[[dict], float] | None = None
    nbytes: Callable[[dict], float] | None = None


def run_shapes(suite: str, shapes: list[dict], make_operands: Callable[[dict], Any],
               systems: dict[str, Callable | System], flops: Callable[[dict], float], args, *,
               nbytes: Callable[[dict], float] | None = None) -> list[Measurement]:
    """Every selected system on every shape; one set of inputs per shape, shared by all systems.

    A system is its ``prepare(ops, args)`` function, or a :class:`System` with its own role, FLOP count or
    bytes moved (``nbytes``: for GB/s, the suite's by default).
    With ``args.rounds`` > 1 the systems of a shape are timed in turn, round after round (each round a
    warm-up and its share of the repetitions), so that clock and temperature drift during a run falls on
    every system alike instead of on whichever ran last.
    """
    import torch

    results = []
    for p in shapes:
        ops = make_operands(p)
        ready = []
        for name, system in systems.items():
            if not selected(args, name):
                continue
            if not isinstance(system, System):
                system = System(system)
            moved = system.nbytes or nbytes
            ready.append(_prepared_system(suite, name, p, partial(system.prepare, ops, args),
                                          flops=(system.flops or flops)(p), nbytes=moved(p) if moved else None,
                                          role=system.role))
        results += _timed_in_rounds(ready, args)
        del ops
        torch.cuda.empty_cache()
    return results


def run_system(suite: str, system: str, params: dict, prepare: Callable[[], Prepared], args, *,
               flops: float | None = None, nbytes: float | None = None, role: str | None = None) -> Measurement:
    """Prepare (build, run once, check), then time one system; any failure becomes a failed Measurement.

    A system whose output is wrong is still timed, and recorded with ``correct=False``.
    """
    measurement, = _timed_in_rounds([_prepared_system(suite, system, params, prepare, flops=flops, nbytes=nbytes,
                                                      role=role)], args)
    return measurement


@dataclass
class _Ready:
    """A system prepared for timing (or the failure that stopped it), with what its Measurement records."""

    suite: str
    system: str
    params: dict
    prepared: Prepared | None
    failure: Measurement | None
    flops: float | None
    nbytes: float | None
    role: str | None
    times: list[float] = field(default_factory=list)
    inner: int | None = None
    windows: list[tuple[float, float]] = field(default_factory=list)     # host times of its timed calls


def _prepared_system(suite, system, params, prepare, *, flops=None, nbytes=None, role=None) -> _Ready:
    try:
        prepared, failure = prepare(), None
    except Exception as e:  # a peer that fails is recorded, never dropped
        prepared, failure = None, Measurement.failure(suite, system, params, e, role=role)
    return _Ready(suite, system, params, prepared, failure, flops, nbytes, role)


def _timed_in_rounds(ready: list[_Ready], args) -> list[Measurement]:
    """Time each prepared system ``args.rounds`` times in turn, ``args.reps`` repetitions in all, and summarise."""
    rounds = max(1, getattr(args, "rounds", 1))
    shares = [args.reps // rounds + (r < args.reps % rounds) for r in range(rounds)]
    sampler = clock_sampler()
    for reps in (share for share in shares if share):
        for r in ready:
            if r.failure is not None:
                continue
            started = time.time()
            try:
                if r.prepared.timing == "wallclock":
                    times, r.inner = time_wallclock(r.prepared.fn, r.prepared.sync, warmup=args.warmup, reps=reps)
                else:
                    times = time_cuda(r.prepared.fn, warmup=args.warmup, reps=reps, flush_l2=args.flush_l2,
                                      queue_ahead=not getattr(args, "host_bound", False))
                r.times += times
                r.windows.append((started, time.time()))
            except Exception as e:
                r.failure = Measurement.failure(r.suite, r.system, r.params, e, role=r.role)
    clocks = sampler.clocks([r.windows for r in ready]) if sampler is not None else [None] * len(ready)
    measurements = []
    for r, clock in zip(ready, clocks):
        if r.failure is None:
            extra = dict(r.prepared.extra)
            if clock is not None:
                extra.update(sm_clock_mhz=clock[0], sm_clock_samples=f"{clock[1]} from {clock[2]} to {clock[3]} MHz"
                             if clock[1] else f"none while timed (shorter than a reading's {CLOCK_PERIOD_MS} ms); "
                             f"the readings a period either side: {clock[2]} to {clock[3]} MHz")
            if r.prepared.check is not None:
                extra["check"] = r.prepared.check.to_json()
            if r.prepared.timing == "wallclock":
                extra.update(timing="wallclock", calls_per_sample=r.inner, l2_flush=False)
            else:
                extra.update(timing="cuda-events", l2_flush=bool(args.flush_l2),
                             queued_ahead=not getattr(args, "host_bound", False))
            if rounds > 1:
                extra["rounds"] = rounds
            correct = None if r.prepared.check is None else r.prepared.check.ok
            m = Measurement.from_times(r.suite, r.system, r.params, r.times, role=r.role, flops=r.flops,
                                       nbytes=r.nbytes, correct=correct, extra=extra)
        else:
            m = r.failure
        log(m)
        measurements.append(m)
    return measurements


def log(m: Measurement) -> None:
    """One progress line on stderr."""
    shape = " ".join(f"{k}={v}" for k, v in m.params.items())
    if m.error:
        status = f"FAILED: {m.error.splitlines()[0][:160]}"
    else:
        metric = (f"{m.tflops:8.1f} TFLOP/s" if m.tflops is not None else
                  f"{m.gbps:8.1f} GB/s" if m.gbps is not None else f"{m.median_ms * 1e3:10.2f} us")
        status = f"{m.median_ms:9.4f} ms  {metric}" + ("" if m.correct in (True, None) else "  WRONG")
    print(f"[{m.suite}] {m.system:<24} {shape:<40} {status}", file=sys.stderr, flush=True)


def sweep(args, k_values: tuple[int, ...], quick_k: tuple[int, ...],
          dtypes: tuple[str, ...] = ("fp16", "bf16")) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The dtypes and K values a run sweeps: ``dtypes`` and ``k_values`` by default, fp16 and ``quick_k``
    with ``--quick``, and ``--dtypes`` / ``--k`` where given (a dtype outside ``dtypes`` is refused)."""
    chosen = dtypes[:1] if args.quick else dtypes
    if getattr(args, "dtypes", ""):
        chosen = tuple(d for d in args.dtypes.split(",") if d)
        unknown = set(chosen) - set(dtypes)
        if unknown:
            raise SystemExit(f"--dtypes: unknown {sorted(unknown)}; choose from {dtypes}")
    ks = quick_k if args.quick else k_values
    if getattr(args, "k", ""):
        ks = tuple(int(k) for k in args.k.split(",") if k)
    return chosen, ks


def parse_shapes(text: str, option: str, form: str, example: str) -> list[tuple[int, ...]]:
    """Comma-separated shapes of positive integers joined by ``x`` (``"1024x1024x8192,256x8192x8192"``), each of
    as many extents as ``form`` (``"MxNxK"``) names; anything else stops the run naming ``option``."""
    rank, shapes = len(form.split("x")), []
    for item in filter(None, (part.strip() for part in text.split(","))):
        dims = item.lower().split("x")
        if len(dims) != rank or not all(d.isdigit() and int(d) > 0 for d in dims):
            raise SystemExit(f"{option}: {item!r} is not {form} (positive integers), e.g. {example}")
        shapes.append(tuple(int(d) for d in dims))
    return shapes


def selected(args, system: str) -> bool:
    """Whether ``--systems`` (a comma-separated list; empty means all) asks for this system."""
    wanted = getattr(args, "systems", None)
    return not wanted or system in {s.strip() for s in wanted.split(",")}


# --------------------------------------------------------------------------- the SM clock while timed

#: Milliseconds between two readings of the SM clock (:class:`ClockSampler`).
CLOCK_PERIOD_MS = 20
#: Seconds the sampler waits, after a system's last timed call, for nvidia-smi's readings of it to come in.
CLOCK_SETTLE_S = 0.2


class ClockSampler:
    """The SM clock as ``nvidia-smi --query-gpu=timestamp,clocks.sm -lms CLOCK_PERIOD_MS`` prints it, one reading a
    line, read by a thread (:meth:`start`) or fed line by line (:meth:`feed`); :meth:`clocks` summarises the readings
    taken inside stretches of host time (each system's timed calls)."""

    def __init__(self):
        self.readings: list[tuple[float, int]] = []      # (host time in seconds, MHz)
        self.process = None

    @classmethod
    def start(cls) -> "ClockSampler | None":
        """A sampler reading from an ``nvidia-smi`` started now, or None without one."""
        import threading

        exe = shutil.which("nvidia-smi")
        if exe is None:
            return None
        index = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip() or "0"
        sampler = cls()
        try:
            sampler.process = subprocess.Popen(
                [exe, "--query-gpu=timestamp,clocks.sm", "--format=csv,noheader,nounits", f"-lms={CLOCK_PERIOD_MS}",
                 "-i", index], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        except OSError:
            return None
        threading.Thread(target=lambda: [sampler.feed(line) for line in sampler.process.stdout], daemon=True).start()
        return sampler

    def feed(self, line: str) -> None:
        """Take one line of nvidia-smi's output (``2026/12/02 02:43:14.123, 1980``); others are skipped."""
        try:
            stamp, mhz = (part.strip() for part in line.split(","))
            when = datetime.datetime.strptime(stamp, "%Y/%m/%d %H:%M:%S.%f").timestamp()
            self.readings.append((when, int(float(mhz))))
        except ValueError:
            pass

    def clocks(self, windows: list[list[tuple[float, float]]], settle_s: float = CLOCK_SETTLE_S
               ) -> list[tuple[int, int, int, int] | None]:
        """Per system, (median, readings, lowest, highest) of the MHz read inside its ``windows`` of host time; for
        a system timed in less than a reading's period, of the readings within a period of its windows, with 0
        readings; None where there is none; waits ``settle_s`` for the last readings when they are still to come."""
        ends = [end for w in windows for _, end in w]
        if self.process is not None and ends and settle_s and (not self.readings or self.readings[-1][0] < max(ends)):
            time.sleep(settle_s)
        found = []
        readings = list(self.readings)
        for spans in windows:
            mhz = sorted(m for when, m in readings if any(a <= when <= b for a, b in spans))
            inside = len(mhz)
            if not mhz and spans:       # calls timed in less than a period: the readings a period either side
                near = CLOCK_PERIOD_MS * 1e-3
                mhz = sorted(m for when, m in readings if any(a - near <= when <= b + near for a, b in spans))
            found.append((mhz[len(mhz) // 2], inside, mhz[0], mhz[-1]) if mhz else None)
        return found

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()


_CLOCK_SAMPLER: list = []         # [the run's sampler, or None], started at the first timing


def clock_sampler() -> ClockSampler | None:
    """The run's :class:`ClockSampler` (started at the first call, stopped at exit), or None without nvidia-smi."""
    if not _CLOCK_SAMPLER:
        import atexit

        sampler = ClockSampler.start()
        if sampler is not None:
            atexit.register(sampler.stop)
        _CLOCK_SAMPLER.append(sampler)
    return _CLOCK_SAMPLER[0]


# --------------------------------------------------------------------------- environment

_SMI_FIELDS = ("name", "driver_version", "pstate", "clocks.sm", "clocks.mem", "clocks.max.sm", "clocks.max.mem",
               "power.draw", "power.limit", "temperature.gpu")


def nvidia_smi() -> dict[str, str] | None:
    """Current clocks, power and temperature of the GPU from ``nvidia-smi``, or None without it."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    index = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip() or "0"

    def query(fields):
        proc = subprocess.run([exe, f"--query-gpu={','.join(fields)}", "--format=csv,noheader", "-i", index],
                              capture_output=True, text=True, timeout=30)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr or proc.stdout)
        return [v.strip() for v in proc.stdout.strip().splitlines()[0].split(",")]

    try:
        return dict(zip(_SMI_FIELDS, query(_SMI_FIELDS)))
    except Exception:  # an unknown field fails the whole query: ask one at a time
        result = {}
        for name in _SMI_FIELDS:
            try:
                result[name] = query([name])[0]
            except Exception as e:
                result[name] = f"unavailable ({str(e).strip()[:80]})"
        return result


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for dist in ("torch", "triton", "jax", "jaxlib", "jax-cuda13-plugin", "jax-cuda13-pjrt", "numpy",
                 "matplotlib", "cuda-bindings", "cuda-python", "xtc-mlir-python-bindings"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    try:
        import nvdsl

        versions["nvdsl"] = nvdsl.__version__
    except Exception as e:
        versions["nvdsl"] = f"import failed: {type(e).__name__}: {e}"
    return versions


def _device() -> dict[str, Any]:
    import torch

    if not torch.cuda.is_available():
        return {"error": "torch.cuda.is_available() is False"}
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    device = {"name": props.name, "compute_capability": f"{props.major}.{props.minor}",
              "sm_count": props.multi_processor_count, "l2_bytes": getattr(props, "L2_cache_size", None),
              "memory_bytes": props.total_memory, "cuda_runtime": torch.version.cuda}
    try:
        from cuda.bindings import driver as cu

        cu.cuInit(0)
        err, version = cu.cuDriverGetVersion()
        if int(err) == 0:
            device["driver_cuda_version"] = f"{version // 1000}.{version % 1000 // 10}"
    except Exception as e:
        device["driver_cuda_version"] = f"unavailable ({e})"
    return device


def _git() -> dict[str, Any]:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    info = {}
    for key, cmd in (("commit", ["git", "rev-parse", "HEAD"]), ("status", ["git", "status", "--porcelain"])):
        try:
            proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=10)
            info[key] = proc.stdout.strip() if proc.returncode == 0 else None
        except Exception:
            info[key] = None
    status = info.pop("status")
    info["dirty"] = None if status is None else bool(status)
    return info


def environment() -> dict[str, Any]:
    """Where and with what a run happened: device, driver, clocks and power, library versions, date."""
    env = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
           "host": socket.gethostname(), "platform": platform.platform(), "argv": sys.argv,
           "versions": _versions(), "git": _git()}
    try:
        env["device"] = _device()
    except Exception as e:
        env["device"] = {"error": f"{type(e).__name__}: {e}"}
    env["nvidia_smi_start"] = nvidia_smi()
    return env

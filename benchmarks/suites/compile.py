"""Compile time of the saxpy kernel, cold and from the disk cache, each in a fresh process.

Each repeat makes a fresh ``NVDSL_CACHE_DIR`` and runs ``IMPORT_ONLY`` and ``WORKER`` twice, each in a new
``sys.executable -c`` process: the first process finds the cache empty
("cold"), the second finds what the first wrote ("warm disk cache"). Inside,
after torch has set up CUDA, the worker times (``perf_counter``):

* ``import nvdsl``: importing nvdsl and the kernel module (neither MLIR nor the CUDA driver's bindings are
  imported);
* ``first call → sync``: the first ``axpy(x, y, 2.0)``, up to
  ``torch.cuda.synchronize()``: importing the CUDA driver's bindings, then trace, compile, module load, launch
  and run when cold; when warm, the kernels are found on disk by the call's key, without
  tracing or importing MLIR (the JSON's ``mlir_after_first_call`` says whether
  MLIR was imported);
* ``import MLIR (tracer, compiler)``: importing what tracing and compiling use, before ``axpy.compile()``:
  nothing left to import when cold (the first call traced), all of MLIR when warm (nothing traced yet). It
  used to fall inside ``axpy.compile()``, which then read ~0.5 s warm against ~30 ms cold;
* ``import the protocol check and task-layer emission``: importing :data:`COMPILE_IMPORTS` (the barrier-protocol
  check, the interpreter it runs on, the task layer's emission and the Hopper primitives it traces), before
  ``axpy.compile()``: nothing left when cold (the first calls compiled), all of it when warm (their kernels came
  from disk). It used to fall inside ``axpy.compile()`` and the GEMM's compile, which then read 124 against 37 ms
  and 238 against 117 ms ("passes + tracing + cache") warm against cold on an H200;
* ``first trace in the process``: ``axpy.trace(x, y, 2.0)`` for a third shape: a trace alone when cold (the first
  call traced), the process's first one when warm, with what a process sets up once to trace (an MLIR context,
  its dialects, the bindings' first uses). It too fell inside ``axpy.compile()`` (305 ms warm against 32 ms cold
  on an H200);
* ``axpy.compile()``: ``axpy.compile(x, y, 2.0)`` for *another* shape, in a process that has traced: trace →
  MLIR → PTX → cubin when cold; trace and a disk-cache hit when warm;
* ``second call → sync``: the first call again (in-memory cached), for scale;
* ``GEMM: first call → sync``: the first ``gemm(a, b, c)`` of ``nvdsl.kernels.gemm`` (4096^3 fp16, the
  library's mapping), up to ``torch.cuda.synchronize()``: when cold, the task-layer passes, the trace, the
  compile and the run; when warm, the kernels are found on disk by the program's and the mapping's key,
  without the passes, tracing or MLIR (the JSON's ``mlir_after_gemm_call`` says whether MLIR was imported);
* ``GEMM ... compile()``: the same program (8192 x 8192 x 4096 fp16, another trace and cache entry)
  compiled on NumPy arrays: cold, all of it; warm, the passes and the trace (``compile()`` always traces),
  the barrier-protocol check and a disk-cache hit. Its rows split it into the task-layer passes alone, MLIR
  outlining and lowering, ptxas, the protocol check (cold: its part that outlasted ptxas, since it runs while
  ptxas assembles; warm: all of it, alone, timed by running it again on the same trace, since a cache hit
  records no timings), and the rest: passes, tracing and cache lookups. The rest used to subtract every timing
  the compile reports, the check's wall and CPU time and their overlap with ptxas included, which counted the
  overlapped time twice or three times and read negative on an H100; warm, it held the whole check (309 ms
  against 197 cold on an H200).

``import nvdsl (bare process)`` is ``import nvdsl`` alone in a fresh interpreter (no torch; nor NumPy, which nvdsl
leaves to the first call), as ``python -X importtime -c "import nvdsl"`` sees it. In the worker, ``import nvdsl``
follows torch, which has imported NumPy.

Rows show the median over ``REPEATS`` (``QUICK_REPEATS`` with ``--quick``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

from .. import harness

REPEATS = 3
QUICK_REPEATS = 1
N_COMPILE = 1 << 20      # the shape axpy.compile() traces
N_CALL = 1 << 22         # the shape the first call runs (a different trace and cache entry)
N_TRACE = 1 << 18        # the shape of the first trace in the process (a third one)

TABLE_METRIC = "ms"
PHASES = (("bare_import", "import nvdsl (bare process)"), ("import", "import nvdsl"),
          ("first_call", "first call → sync"), ("import_mlir", "import MLIR (tracer, compiler)"),
          ("import_compile", "import the protocol check and task-layer emission"),
          ("first_trace", "first trace in the process (warm: with its setup)"),
          ("compile", "axpy.compile() (after a trace)"), ("second_call", "second call → sync"),
          ("gemm_first_call", "GEMM (task layer): first call → sync"),
          ("gemm_compile", "GEMM (task layer, WS persistent): compile()"),
          ("gemm_passes", "GEMM: task-layer passes"), ("gemm_trace", "GEMM: passes + tracing + cache"),
          ("gemm_lower", "GEMM: MLIR lowering"), ("gemm_ptxas", "GEMM: ptxas"),
          ("gemm_check", "GEMM: protocol check (cold: past ptxas)"))
SYSTEMS = ("nvdsl cold", "nvdsl warm (disk cache)")
#: What a compile() imports beyond tracing (timed as a row of its own, see the module's docstring).
COMPILE_IMPORTS = ("nvdsl.interpreter.protocol", "nvdsl.tasks.emit")

IMPORT_ONLY = r"""
import json, sys, time
t0 = time.perf_counter()
import nvdsl
print(json.dumps({"bare_import": time.perf_counter() - t0, "mlir": "mlir" in sys.modules}))
"""

WORKER = r"""
import json, sys, time
import torch
torch.zeros(1, device="cuda"); torch.cuda.synchronize()   # CUDA context and torch set up, untimed
t0 = time.perf_counter()
import nvdsl
from benchmarks import nvdsl_kernels, harness
times = {"import": time.perf_counter() - t0}
n_compile, n_call, n_trace = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
xc, yc = (harness.randn((n_compile,), torch.float32, seed=s) for s in (1, 2))
x, y = (harness.randn((n_call,), torch.float32, seed=s) for s in (1, 2))
torch.cuda.synchronize()
t0 = time.perf_counter()
nvdsl_kernels.axpy(x, y, 2.0)
torch.cuda.synchronize()
times["first_call"] = time.perf_counter() - t0
mlir_after_first_call = "mlir" in sys.modules
a, b, c = (harness.randn((4096, 4096), torch.float16, seed=s) for s in (3, 4, 5))
torch.cuda.synchronize()
from nvdsl.kernels.gemm import gemm as library_gemm
t0 = time.perf_counter()
library_gemm(a, b, c)
torch.cuda.synchronize()
times["gemm_first_call"] = time.perf_counter() - t0
mlir_after_gemm_call = "mlir" in sys.modules
t0 = time.perf_counter()
import nvdsl.frontend.tracer, nvdsl.compiler.driver                 # MLIR, unless the calls above traced
times["import_mlir"] = time.perf_counter() - t0
import importlib
from benchmarks.suites.compile import COMPILE_IMPORTS
t0 = time.perf_counter()
for name in COMPILE_IMPORTS:                                        # unless the calls above compiled
    importlib.import_module(name)
times["import_compile"] = time.perf_counter() - t0
xt, yt = (harness.randn((n_trace,), torch.float32, seed=s) for s in (1, 2))
t0 = time.perf_counter()
nvdsl_kernels.axpy.trace(xt, yt, 2.0)
times["first_trace"] = time.perf_counter() - t0
t0 = time.perf_counter()
compiled = nvdsl_kernels.axpy.compile(xc, yc, 2.0)
times["compile"] = time.perf_counter() - t0
t0 = time.perf_counter()
nvdsl_kernels.axpy(x, y, 2.0)
torch.cuda.synchronize()
times["second_call"] = time.perf_counter() - t0
import numpy as np
import nvdsl.tasks as nt
from nvdsl.kernels.gemm import MAPPING, matmul
gemm = nt.build(matmul, MAPPING.replace(sm_count=132))
args = (np.zeros((8192, 8192), np.float16), np.zeros((8192, 4096), np.float16), np.zeros((4096, 8192), np.float16))
t0 = time.perf_counter()
gemm.plan(*args)
times["gemm_passes"] = time.perf_counter() - t0
t0 = time.perf_counter()
gemm_compiled = gemm.compile(*args)
times["gemm_compile"] = time.perf_counter() - t0
stages = gemm_compiled.module.timings     # empty on a cache hit
check_s = None
if not stages:          # a hit: the check ran alone, untimed; its time is that of running it again
    from nvdsl.interpreter.protocol import check_protocol
    t0 = time.perf_counter()
    check_protocol(gemm_compiled.trace.module, gemm_compiled.trace.specs)
    check_s = time.perf_counter() - t0
from benchmarks.suites.compile import compile_breakdown
times.update(compile_breakdown(times["gemm_compile"], stages, check_s))
print(json.dumps({"times_s": times, "compile_stages_s": compiled.module.timings,
                  "cubin_bytes": len(compiled.cubin or b""), "mlir_after_first_call": mlir_after_first_call,
                  "mlir_after_gemm_call": mlir_after_gemm_call,
                  "gemm_stages_s": stages}))
"""


def compile_breakdown(wall_s: float, stages: dict, check_s: float | None = None) -> dict[str, float]:
    """A ``compile()``'s wall time ``wall_s`` in parts that add up to it, from its module's ``timings``: MLIR
    outlining and lowering, ptxas, the protocol check's time after ptxas finished (it runs while ptxas
    assembles; its ``check_cpu_s`` and ``check_overlap_s`` are views of the same time, not more of it), and the
    rest (passes, tracing, cache lookups). ``check_s``: the check's time where it ran alone (a cache hit, whose
    ``stages`` are empty)."""
    check = stages.get("check_s", 0.0) - stages.get("check_overlap_s", 0.0) if check_s is None else check_s
    parts = {"gemm_lower": stages.get("outline_s", 0.0) + stages.get("lower_s", 0.0),
             "gemm_ptxas": stages.get("ptxas_s", 0.0), "gemm_check": check}
    return {**parts, "gemm_trace": wall_s - sum(parts.values())}


def row_label(p: dict) -> str:
    return p["phase"]


def _project_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_worker(cache_dir: str) -> dict:
    """Two fresh processes with ``NVDSL_CACHE_DIR=cache_dir``: ``import nvdsl`` alone, then the calls;
    returns what they printed, merged."""
    env = dict(os.environ, NVDSL_CACHE_DIR=cache_dir, NVDSL_DISK_CACHE="1")
    env.pop("NVDSL_DUMP_DIR", None)  # a dump directory bypasses the cache lookup
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_project_root(), env.get("PYTHONPATH")) if p)
    found = {}
    for script, mode in ((IMPORT_ONLY, "import-only"), (WORKER, "calls")):
        proc = subprocess.run([sys.executable, "-c", script, str(N_COMPILE), str(N_CALL), str(N_TRACE)], env=env,
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise RuntimeError(f"worker exited with {proc.returncode}: {(proc.stderr or proc.stdout)[-2000:]}")
        found[mode] = json.loads(proc.stdout.strip().splitlines()[-1])
    result = found["calls"]
    result["times_s"]["bare_import"] = found["import-only"]["bare_import"]
    result["mlir_after_import"] = found["import-only"]["mlir"]
    return result


def run(args) -> list[harness.Measurement]:
    repeats = QUICK_REPEATS if args.quick else REPEATS
    runs: dict[str, list[dict]] = {s: [] for s in SYSTEMS}
    errors: dict[str, str] = {}
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="nvdsl-bench-cache-") as cache_dir:
            for system in SYSTEMS:  # cold first: it fills the cache the warm process reads
                try:
                    runs[system].append(run_worker(cache_dir))
                except Exception as e:
                    errors[system] = f"{type(e).__name__}: {e}"
                    break  # a warm run after a failed cold one would not be warm
    results = []
    for system in SYSTEMS:
        if not harness.selected(args, system):
            continue
        for key, phase in PHASES:
            params = {"phase": phase}
            if not runs[system]:
                results.append(harness.Measurement.failure("compile", system, params, errors.get(system, "no run")))
            else:
                times_ms = [r["times_s"][key] * 1e3 for r in runs[system]]
                results.append(harness.Measurement.from_times(
                    "compile", system, params, times_ms, extra={
                        "timing": "perf_counter in a fresh process",
                        "compile_stages_s": [r["compile_stages_s"] for r in runs[system]],
                        "mlir_after_import": [r["mlir_after_import"] for r in runs[system]],
                        "mlir_after_first_call": [r["mlir_after_first_call"] for r in runs[system]],
                        "mlir_after_gemm_call": [r["mlir_after_gemm_call"] for r in runs[system]],
                        "error_in_some_repeat": errors.get(system)}))
            harness.log(results[-1])
    return results

"""The cost of trust (CPU only): the static barrier-protocol check and the interpreter, in ms.

* ``nvdsl-protocol-check``: ``check_protocol`` on the traced module (what compiling and interpreting
  add before anything runs) for tutorial chapter 5 at its default problem and at 8192^2 x 4096, the
  persistent ``nvdsl.kernels.gemm`` at 8192^2 x 4096 on 132 SMs, the table-driven grouped GEMM (8 groups
  of 256 rows, K = N = 4096), and each mapping of tutorial chapter 6 at 8192^2 x 4096 (loop summaries make
  the cost independent of trip counts), and ``nvdsl.kernels.attention`` at (4, 16, 4096, D) for D = 64, 128
  and 256, causal and not (a case the check could not decide is reported as a failure). Each
  measurement also records ``cpu_ms``, the process's CPU time: what the check's time budget counts, and what
  other processes on a busy machine do not inflate;
* ``nvdsl-cold-compile``: ``compile()`` with an empty cache (trace, MLIR lowering, ptxas) of chapter 5 at its
  default problem, the library GEMM at 8192^2 x 4096 and attention at (4, 16, 4096, 128). The protocol check runs
  while ptxas assembles: ``check_ms`` (``check_cpu_ms``) is the check, ``check_overlap_ms`` how much of it ptxas
  was running, ``check_exposed_ms`` what it added to the compile (medians; ``stages_ms``: each repeat's
  ``CompiledModule.timings``);
* ``nvdsl-interpreter``: a call in the CPU interpreter (fixed schedule, including the check) of the
  tutorials' ``main()`` problems: chapter 4 (512 x 384 x 1024) and chapter 5 (512 x 512 x 1024;
  the bar is under 60 s), and the persistent GEMM at 512 x 512 x 512.

Needs no GPU: ``python3 -m benchmarks trust``.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

import numpy as np

from .. import harness

REPEATS = 3
QUICK_REPEATS = 1
TABLE_METRIC = "ms"


def _tutorials():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.path.join(root, "tutorials")
    if path not in sys.path:
        sys.path.insert(0, path)
    import ch4_gemm_multistage
    import ch5_gemm_warp_specialized
    import ch6_tasks_and_mappings
    return ch4_gemm_multistage, ch5_gemm_warp_specialized, ch6_tasks_and_mappings


def _inputs(m, n, k, c_dtype, c_first=False):
    """(a, b, c), or (c, a, b) for the task layer's GEMM."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), c_dtype)
    return (c, a, b) if c_first else (a, b, c)


def cases():
    """(system, label, setup) where ``setup()`` returns the function to time."""
    from nvdsl.interpreter.protocol import check_protocol
    import nvdsl.tasks as nt
    from nvdsl.kernels.gemm import MAPPING, grouped_matmul, matmul, row_tile_table
    ch4, ch5, ch6 = _tutorials()
    library = lambda sm_count: nt.build(matmul, MAPPING.replace(sm_count=sm_count))

    def checker(trace):
        def check():
            undecided = check_protocol(trace.module, trace.specs)
            if undecided is not None:
                raise RuntimeError(f"undecided: {undecided}")
        return check

    def checking(gemm, m, n, k, c_dtype):
        return lambda: checker(gemm.trace(*_inputs(m, n, k, c_dtype, c_first=isinstance(gemm, nt.TaskKernel))))

    def checking_grouped(sizes, k, n):
        """The table-driven grouped GEMM: the check runs its skeleton once per number of non-empty row tiles."""
        def setup():
            m = sum(sizes)
            kernel = nt.build(grouped_matmul, MAPPING.replace(sm_count=132))
            return checker(kernel.trace(np.zeros((m, n), np.float16), np.zeros((m, k), np.float16),
                                        np.zeros((len(sizes), k, n), np.float16), row_tile_table(sizes, 128)))
        return setup

    def checking_attention(d, causal):
        """The generated attention kernel at (4, 16, 4096, d), as ``attention()`` maps it."""
        def setup():
            import nvdsl.kernels.attention as attention
            o = np.zeros((4, 16, 4096, d), np.float16)
            lse = np.zeros((4, 16, 4096), np.float32)
            kernel = attention._kernel(causal, d ** -0.5, True, attention.task_mapping(d, causal, 4096))
            return checker(kernel.trace(o, lse, o, o, o))
        return setup

    def cold_compiling(make):
        """``compile()`` into a fresh cache directory, of the ``(function, arguments)`` that ``make()`` returns: its
        timings (the check's, ptxas')."""
        def setup():
            fn, args = make()

            def compile_cold():
                with tempfile.TemporaryDirectory(prefix="nvdsl-bench-cache-") as cache_dir:
                    return fn.with_options(cache_dir=cache_dir).compile(*args).module.timings
            return compile_cold
        return setup

    def attention_128():
        import nvdsl.kernels.attention as attention
        o = np.zeros((4, 16, 4096, 128), np.float16)
        kernel = attention._kernel(False, 128 ** -0.5, True, attention.task_mapping(128, False, 4096))
        return kernel, (o, np.zeros((4, 16, 4096), np.float32), o, o, o)

    f16 = lambda *shape: np.zeros(shape, np.float16)

    def interpreting(gemm, m, n, k, c_dtype):
        def setup():
            args = _inputs(m, n, k, c_dtype, c_first=isinstance(gemm, nt.TaskKernel))
            run = gemm.with_options(backend="interpret")
            return lambda: run(*args)
        return setup

    return [
        ("nvdsl-protocol-check", "ch5 512x512x1024", checking(ch5.make_gemm(4), 512, 512, 1024, np.float16)),
        ("nvdsl-protocol-check", "ch5 8192x8192x4096", checking(ch5.make_gemm(4), 8192, 8192, 4096, np.float16)),
        ("nvdsl-protocol-check", "gemm 8192x8192x4096 (132 SMs)",
         checking(library(132), 8192, 8192, 4096, np.float16)),
        ("nvdsl-protocol-check", "grouped gemm 8x256x4096x4096 (132 SMs)", checking_grouped([256] * 8, 4096, 4096)),
    ] + [
        ("nvdsl-protocol-check", f"ch6 {name} 8192x8192x4096",
         checking(nt.build(ch6.gemm, mapping), 8192, 8192, 4096, np.float16))
        for name, mapping in ch6.MAPPINGS.items()
    ] + [
        ("nvdsl-protocol-check", f"attention 4x16x4096x{d}{' causal' if causal else ''}",
         checking_attention(d, causal))
        for d in (64, 128, 256) for causal in (False, True)
    ] + [
        ("nvdsl-cold-compile", "ch5 512x512x1024",
         cold_compiling(lambda: (ch5.make_gemm(4), (f16(512, 1024), f16(1024, 512), f16(512, 512))))),
        ("nvdsl-cold-compile", "gemm 8192x8192x4096 (132 SMs)",
         cold_compiling(lambda: (library(132), (f16(8192, 8192), f16(8192, 4096), f16(4096, 8192))))),
        ("nvdsl-cold-compile", "attention 4x16x4096x128", cold_compiling(attention_128)),
    ] + [
        ("nvdsl-interpreter", "ch4 512x384x1024", interpreting(ch4.make_gemm(4), 512, 384, 1024, np.float32)),
        ("nvdsl-interpreter", "ch5 512x512x1024", interpreting(ch5.make_gemm(4), 512, 512, 1024, np.float16)),
        ("nvdsl-interpreter", "gemm 512x512x512 (4 SMs)",
         interpreting(library(4), 512, 512, 512, np.float32)),
    ]


def row_label(p: dict) -> str:
    return p["case"]


def run(args) -> list[harness.Measurement]:
    repeats = QUICK_REPEATS if args.quick else REPEATS
    results = []
    for system, label, setup in cases():
        if not harness.selected(args, system):
            continue
        params = {"case": label}
        try:
            fn = setup()
            times_ms, cpu_ms, stages = [], [], []
            for _ in range(repeats):
                start, start_cpu = time.perf_counter(), time.process_time()
                outcome = fn()
                times_ms.append((time.perf_counter() - start) * 1e3)
                cpu_ms.append((time.process_time() - start_cpu) * 1e3)
                if isinstance(outcome, dict):
                    stages.append(outcome)
            # the CPU time is what the check's time budget counts, and what other processes on a busy machine
            # do not inflate
            extra = {"timing": "perf_counter, CPU", "cpu_ms": round(min(cpu_ms), 1)}
            if stages:
                extra.update(_check_overlap(stages))
            results.append(harness.Measurement.from_times("trust", system, params, times_ms, extra=extra))
        except Exception as e:
            results.append(harness.Measurement.failure("trust", system, params, e))
        harness.log(results[-1])
        if "check_exposed_ms" in results[-1].extra:
            print("        " + ", ".join(f"{name} {results[-1].extra[name]}" for name in
                                        ("check_ms", "check_overlap_ms", "check_exposed_ms", "ptxas_ms")),
                  file=sys.stderr, flush=True)
    return results


def _check_overlap(stages: list[dict]) -> dict:
    """Medians, in ms, of the check's time in cold compiles and of how much of it ptxas hid."""
    median = lambda f: round(statistics.median(f(s) for s in stages) * 1e3, 1)
    return {"check_ms": median(lambda s: s["check_s"]), "check_cpu_ms": median(lambda s: s["check_cpu_s"]),
            "check_overlap_ms": median(lambda s: s["check_overlap_s"]),
            "check_exposed_ms": median(lambda s: s["check_s"] - s["check_overlap_s"]),
            "ptxas_ms": median(lambda s: s.get("ptxas_s", 0.0)),
            "stages_ms": [{k: round(v * 1e3, 1) for k, v in s.items()} for s in stages]}

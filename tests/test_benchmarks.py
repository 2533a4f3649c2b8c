"""The benchmark suite's CPU side: its CLI loads without GPU libraries, and its table ranks systems right."""

import os
import subprocess
import sys

from benchmarks import report
from benchmarks.harness import Measurement
from benchmarks.suites import gemm

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_cli_help_needs_no_gpu_libraries():
    result = subprocess.run([sys.executable, "-m", "benchmarks", "--help"], cwd=ROOT, capture_output=True,
                            text=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])))
    assert result.returncode == 0, result.stderr
    for suite in ("gemm", "attention", "launch", "saxpy", "compile"):
        assert suite in result.stdout


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

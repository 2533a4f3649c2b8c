"""Under Options.debug (NVDSL_DEBUG=1) every mbarrier wait is bounded and reports instead of hanging.

On the CPU: the bounded waits are compiled (globaltimer, trap) and the interpreter runs them to their
report. On a GPU: each broken kernel of tests/broken_kernels.py, in a process of its own (a trap
leaves the CUDA context unusable), ends within a time limit, and the ones that deadlock on an
mbarrier print the report.
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import nvdsl
import broken_kernels as bk
from nvdsl.testing import requires_gpu
from test_hopper import round_trip

HERE = os.path.dirname(os.path.abspath(__file__))


def test_debug_bounds_every_wait_and_the_report_names_block_warpgroup_and_thread():
    a = np.zeros((128, 128), np.float16)
    plain = round_trip((64, 64), 128).compile(a, a.copy())
    assert "%globaltimer" not in plain.ptx and "trap;" not in plain.ptx
    debug = round_trip((64, 64), 128).with_options(debug=True).compile(a, a.copy())
    assert "%globaltimer" in debug.ptx and "trap;" in debug.ptx
    assert "block (%lld, %lld, %lld), warpgroup %lld, thread (%lld, %lld, %lld)" in debug.trace.mlir
    assert "timed out after 2000000000 ns" in debug.trace.mlir


def test_a_debug_kernel_that_works_is_unchanged():
    a = np.random.default_rng(4).standard_normal((128, 128)).astype(np.float16)
    out = np.zeros_like(a)
    round_trip((64, 64), 128).with_options(debug=True, backend="interpret")(a, out)
    np.testing.assert_array_equal(out, a)


def test_in_the_interpreter_a_stuck_debug_kernel_prints_its_report_and_traps(capsys):
    fn, inputs = bk.make("expect-tx-long")
    with pytest.raises(nvdsl.KernelFault) as info:
        fn.with_options(debug=True, backend="interpret", protocol_check=False)(*inputs())
    assert info.value.code == "trap"
    printed = capsys.readouterr().out
    assert "mbarrier wait timed out after 2000000000 ns" in printed and "AT:consumer-wait" in printed
    assert "warpgroup 1" in printed


# The outcome goes to a file of its own: the kernel's reports reach stdout through the C library's buffer,
# which once split a report line around the outcome line (the runtime now flushes it when a kernel dies).
_CHILD = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import nvdsl, broken_kernels
    fn, inputs = broken_kernels.make(sys.argv[2])
    try:
        fn.with_options(debug=True, backend="gpu", protocol_check=False)(*inputs())
        nvdsl.synchronize()
        outcome = {"error": None}
    except nvdsl.CudaError as e:
        outcome = {"error": type(e).__name__, "result": e.result}
    with open(sys.argv[3], "w") as f:
        json.dump(outcome, f)
    print("OUTCOME " + json.dumps(outcome), flush=True)
""")

# the broken kernels that deadlock on an mbarrier on the GPU, so that their bounded waits must report
DEADLOCKING = {"expect-tx-long", "arrival-count"}


@requires_gpu
@pytest.mark.parametrize("bug", [b for b in bk.BUGS if b != "divergent-barrier" and b not in bk.TRACED])
def test_on_the_gpu_each_broken_kernel_ends_instead_of_hanging(bug, tmp_path):
    result = tmp_path / "outcome.json"
    try:
        run = subprocess.run([sys.executable, "-c", _CHILD, HERE, bug, str(result)], cwd=HERE, capture_output=True,
                             text=True, timeout=240, env=dict(os.environ, NVDSL_DEBUG="1"))
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{bug} hung under NVDSL_DEBUG=1; output so far:\n{e.stdout}\n{e.stderr}")
    assert result.exists(), f"{bug}: the child died without an outcome (rc {run.returncode}):\n{run.stdout}\n{run.stderr}"
    outcome = json.loads(result.read_text())
    # each report comes out whole, on a line of its own
    for line in run.stdout.splitlines():
        if "timed out" in line or "OUTCOME" in line:
            assert line.startswith("OUTCOME {") or (line.startswith("nvdsl: mbarrier wait timed out")
                                                     and line.endswith("))")), line
    if bug in DEADLOCKING:
        assert outcome["error"] is not None, f"{bug} finished although it cannot complete its barrier phases"
        reports = [line for line in run.stdout.splitlines() if "mbarrier wait timed out" in line]
        assert not reports or "warpgroup" in reports[0], reports[0]


_FLUSH_CHILD = textwrap.dedent("""
    import ctypes, os
    from cuda.bindings import driver
    from nvdsl.runtime.device import check
    import nvdsl
    ctypes.CDLL(None).printf(b"nvdsl: a report a kernel printed before it trapped\\n")   # buffered by the C library
    try:
        check((driver.CUresult.CUDA_ERROR_LAUNCH_FAILED,), "cuStreamSynchronize")
    except nvdsl.CudaError:
        os.write(1, b"OUTCOME after the error\\n")
""")


def test_a_dead_kernel_s_printed_report_comes_out_before_what_the_host_prints_next():
    """Device printf output sits in the C library's stdout buffer (stdout is a pipe here): the runtime flushes it
    when a call reports that a kernel died, so the report is not split by, or printed after, the host's lines."""
    pytest.importorskip("cuda.bindings.driver")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}     # which would unbuffer C's stdout
    run = subprocess.run([sys.executable, "-c", _FLUSH_CHILD], cwd=os.path.dirname(HERE), capture_output=True,
                         text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["nvdsl: a report a kernel printed before it trapped", "OUTCOME after the error"]

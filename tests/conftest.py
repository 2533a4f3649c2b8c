import os
import tempfile

import pytest

# Each test session gets its own disk cache, so tests never see another run's entries.
os.environ.setdefault("NVDSL_CACHE_DIR", tempfile.mkdtemp(prefix="nvdsl-test-cache-"))
for variable in ("NVDSL_DUMP_DIR", "NVDSL_CHIP", "NVDSL_OPT_LEVEL", "NVDSL_PTX_FEATURES", "NVDSL_DEVICE", "NVDSL_DEBUG",
                 "NVDSL_SEED", "NVDSL_PROTOCOL_CHECK"):
    os.environ.pop(variable, None)

from nvdsl.testing import GPU_MARKS  # noqa: E402 - after the environment is set


def pytest_sessionfinish(session, exitstatus):
    # "No tests ran" (exit 5) happens when a marker selects nothing, e.g. `-m gpu` on a build
    # without GPU tests; that is not a failure of the project.
    if exitstatus == 5:
        session.exitstatus = 0


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden/ from the current IR")
    parser.addoption("--matrix-seed", type=int, default=None,
                     help="seed of tests/test_matrix.py's cases (default: a new one, printed in the header)")


def pytest_configure(config):
    if config.getoption("--matrix-seed") is None:
        config.option.matrix_seed = int.from_bytes(os.urandom(4), "little")


def pytest_report_header(config):
    return f"correctness matrix seed: --matrix-seed {config.getoption('--matrix-seed')}"



@pytest.fixture(params=[pytest.param("gpu", marks=GPU_MARKS), "interpret"])
def backend(request, monkeypatch):
    """A test taking ``backend`` runs twice: on the GPU (marked gpu, skipped without one) and in the CPU
    interpreter (so in CI too), with NVDSL_BACKEND set for the functions it makes (make them in the test:
    a function's options are read once)."""
    monkeypatch.setenv("NVDSL_BACKEND", request.param)
    return request.param


@pytest.fixture(autouse=True)
def protocol_check_without_time_budget(monkeypatch):
    """The protocol check gives up after TIME_BUDGET_S seconds of CPU time, which a slow or busy machine
    reaches sooner: in tests only its step budget (STEP_BUDGET scheduling steps per block) bounds it, so that
    what it decides does not depend on the machine. The time budget itself is tested on an injected clock."""
    import nvdsl.interpreter.protocol as protocol
    monkeypatch.setattr(protocol, "TIME_BUDGET_S", float("inf"))

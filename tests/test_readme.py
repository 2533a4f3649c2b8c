"""The README's examples run as written: traced without a GPU, checked on one."""

import os
import re

import numpy as np
import pytest

import nvdsl
from nvdsl.testing import requires_gpu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def examples() -> list[str]:
    with open(os.path.join(ROOT, "README.md")) as f:
        return re.findall(r"```python\n(.*?)```", f.read(), re.S)


def definitions(source: str) -> dict:
    """Run an example up to its first call of the function (the part that needs no GPU)."""
    lines = source.splitlines()
    kept = [line for line in lines if not re.match(r"^(saxpy|add)\(", line)]
    namespace = {}
    exec(compile("\n".join(kept), "README.md", "exec"), namespace)
    return namespace


def test_the_saxpy_example_handles_a_length_that_is_not_a_multiple_of_the_block():
    saxpy = definitions(examples()[0])["saxpy"]
    trace = saxpy.trace(np.ones(1_000_000, np.float32), np.ones(1_000_000, np.float32), 2.0)
    assert "scf.if" in trace.mlir and "arith.constant 3907 : index" in trace.mlir  # ceil(1e6 / 256) blocks


def test_the_saxpy_example_with_a_short_y_is_refused_while_tracing_as_the_readme_says():
    example = examples()[0]
    saxpy = definitions(example)["saxpy"]
    with pytest.raises(nvdsl.TraceError) as info:
        saxpy.trace(np.ones(1024, np.float32), np.ones(1000, np.float32), 2.0)
    assert info.value.code == "out-of-bounds" and "'y'" in info.value.message
    assert example.splitlines()[info.value.loc.line - 1].strip() == "y[i] = alpha * x[i] + y[i]"


def test_the_escape_hatch_example_traces_and_its_raw_store_is_a_write():
    add = definitions(examples()[1])["add"]
    x = np.ones(32, np.float32)
    assert add.trace(x, x, x).written == frozenset({2})


@requires_gpu
def test_the_readme_examples_run():
    namespace = {}
    exec(compile(examples()[0], "README.md", "exec"), namespace)
    assert (namespace["y"] == 3.0).all()
    add = definitions(examples()[1])["add"]
    x, out = np.arange(32, dtype=np.float32), np.zeros(32, np.float32)
    add(x, x, out)
    np.testing.assert_array_equal(out, 4 * x)

"""The JIT hub (nvdsl.jit): callers that build the traced function themselves, as the task layer does, give it
the source line and the cache key explicitly."""

import inspect
import os
import re
import sys

import numpy as np
import pytest

import nvdsl
import nvdsl.tasks as nt
from nvdsl.frontend.keying import call_key
from nvdsl.kernels.gemm import MAPPING, matmul
from nvdsl.signature import ArgSpec

f16 = np.float16
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tutorials"))
# A task written in a file of the user's (the library's live in nvdsl's own files, whose lines errors skip).
from ch6_tasks_and_mappings import gemm as users_gemm  # noqa: E402


@pytest.mark.parametrize("call", ["trace", "call"])
def test_a_task_kernels_argument_error_points_at_the_users_call(call):
    """A GEMM of float64 operands, which wgmma does not take: the error names the line that called the
    kernel, not a line of the task's body (the hub once keyed task kernels by a host closure whose code was
    rewritten to the task's file, so errors pointed at the task's line plus the closure's offset)."""
    kernel = nt.build(users_gemm, nt.Mapping(tiles={"BN": 128}, sm_count=2, persistent=False))
    run = kernel.trace if call == "trace" else kernel
    c, a, b = np.zeros((256, 256), f16), np.zeros((256, 64), np.float64), np.zeros((64, 256), np.float64)
    line = inspect.currentframe().f_lineno + 2
    with pytest.raises(nvdsl.UserError) as info:
        run(c, a, b)
    assert info.value.loc.filename == __file__ and info.value.loc.line == line, str(info.value)
    assert info.value.origin.filename.endswith("ch6_tasks_and_mappings.py"), str(info.value)   # and the task line


def test_a_task_kernel_is_keyed_by_its_program_mapping_and_sm_count():
    """The disk cache's call key of a task kernel comes from the kernel's content (``keyed_by``), so two builds
    of one program and mapping share kernels and another mapping or SM count does not."""
    specs = tuple(ArgSpec(name, "array", nvdsl.float16, (256, 256)) for name in ("C", "A", "B"))

    def key(kernel):
        return call_key(kernel._function.fn, specs, {}, nvdsl.Options(), "toolchain", keyed_by=kernel)
    base = key(nt.build(matmul, MAPPING.replace(sm_count=2)))
    assert base is not None and base == key(nt.build(matmul, MAPPING.replace(sm_count=2)))
    assert key(nt.build(matmul, MAPPING.replace(sm_count=3))) != base
    assert key(nt.build(matmul, MAPPING.replace(sm_count=2, pipeline=3))) != base


def test_a_traced_task_module_starts_at_the_tasks_definition():
    """The host function of a task kernel is located at the task's ``def`` line."""
    trace = nt.build(matmul, MAPPING.replace(sm_count=2)).trace(np.zeros((128, 256), f16), np.zeros((128, 64), f16),
                                                                np.zeros((64, 256), f16))
    code = matmul.fn.__code__
    assert f'loc("{code.co_filename}":{code.co_firstlineno}:0)' in trace.mlir_with_locations


@nt.task(reads=("A",), writes=("Y",))
def row_maxima(Y, A):
    """Stores each row tile's maxima into a row of Y; given a transposed view of Y, whose rows are not runs of
    consecutive elements, emission refuses the store."""
    BM, BN = nt.tunable("BM", 64), nt.tunable("BN", 64)
    At, Yt = nt.blocks(A, (BM, BN)), nt.blocks(Y, (1, BM))
    for i, j in nt.prange(*At.grid):
        Yt[j, i] = At[i, j].max(axis=1)                             # the refused store


def test_an_error_raised_while_emitting_a_task_names_the_call_and_the_task_line():
    kernel = nt.build(row_maxima, nt.Mapping(tiles={"BM": 64, "BN": 64}, consumers=1, sm_count=2, persistent=False))
    y = np.zeros((128, 2), np.float32).T
    line = inspect.currentframe().f_lineno + 2
    with pytest.raises(nvdsl.UserError) as info:
        kernel.trace(y, np.zeros((128, 128), np.float32))
    assert info.value.code == "bad-strides", str(info.value)
    assert (info.value.loc.filename, info.value.loc.line) == (__file__, line), str(info.value)
    assert "# the refused store" in info.value.origin.text and "from the task line" in str(info.value)


def test_a_task_kernels_operations_are_located_at_the_task_lines_they_come_from():
    """The generated kernel's products carry the line of ``acc += A @ B`` in the task (an interpreter report or a
    dump then points there), not the user's call."""
    trace = nt.build(users_gemm, nt.Mapping(tiles={"BN": 128}, sm_count=2, persistent=False)).trace(
        np.zeros((128, 128), f16), np.zeros((128, 64), f16), np.zeros((64, 128), f16))
    lines, first = inspect.getsourcelines(users_gemm.fn)
    product = first + next(i for i, text in enumerate(lines) if "acc +=" in text)
    where = users_gemm.fn.__code__.co_filename
    text = trace.mlir_with_locations
    aliases = dict(re.findall(r'^(#loc\d*) = loc\("([^"]*":\d+):\d+\)', text, re.M))
    located = [aliases.get(alias) for alias in re.findall(r"nvgpu\.warpgroup\.mma .* loc\((#loc\d*)\)", text)]
    assert located and set(located) == {f'{where}":{product}'}, located

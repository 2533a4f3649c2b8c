"""The JIT hub (nvdsl.jit): callers that build the traced function themselves, as the task layer does, give it
the source line and the cache key explicitly."""

import inspect

import numpy as np
import pytest

import nvdsl
import nvdsl.tasks as nt
from nvdsl.frontend.keying import call_key
from nvdsl.kernels.gemm import MAPPING, matmul
from nvdsl.signature import ArgSpec

f16 = np.float16


@nt.task(reads=("A", "B"), writes=("C",))
def users_gemm(C, A, B):
    """A task written in the user's own file (the library's live in nvdsl's, whose lines errors skip)."""
    BM, BN, BK = nt.tunable("BM", 128), nt.tunable("BN", 128), nt.tunable("BK", 64)
    Ct, At, Bt = nt.blocks(C, (BM, BN)), nt.blocks(A, (BM, BK)), nt.blocks(B, (BK, BN))
    for i, j in nt.prange(*Ct.grid):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in nt.srange(At.grid[1]):
            acc += At[i, k] @ Bt[k, j]
        Ct[i, j] = acc.astype(C.dtype)


@pytest.mark.parametrize("call", ["trace", "call"])
def test_a_task_kernels_argument_error_points_at_the_users_call(call):
    """A GEMM whose K (999) gives A a row stride TMA cannot take: the error names the line that called the
    kernel, not a line of the task's body (the hub once keyed task kernels by a host closure whose code was
    rewritten to the task's file, so errors pointed at the task's line plus the closure's offset)."""
    kernel = nt.build(users_gemm, nt.Mapping(sm_count=2, persistent=False))
    run = kernel.trace if call == "trace" else kernel
    c, a, b = np.zeros((256, 256), f16), np.zeros((256, 999), f16), np.zeros((999, 256), f16)
    line = inspect.currentframe().f_lineno + 2
    with pytest.raises(nvdsl.UserError) as info:
        run(c, a, b)
    assert info.value.loc.filename == __file__ and info.value.loc.line == line, str(info.value)


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

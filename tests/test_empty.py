"""Arrays with a zero extent (a batch of no rows, an expert given no tokens, a sequence of no queries): a call whose
outputs have no element launches nothing and returns; one whose outputs have elements but that reads an empty axis
(a product over K = 0, attention over no keys) is refused by the argument's name, at the caller's line."""

import numpy as np
import pytest

import nvdsl
import nvdsl.tasks as nt
from nvdsl.errors import ArgumentError
from nvdsl.kernels import attention, gemm, rowwise
from nvdsl.testing import requires_gpu

HALF = np.float16


def empty_calls(xp):
    """(name, call) of library calls whose outputs have no element, on arrays made by ``xp(shape, dtype)``."""
    f32 = np.float32
    q, lse = xp((0, 2, 64, 64), HALF), xp((0, 2, 64), f32)
    queries, no_lse = xp((1, 2, 0, 64), HALF), xp((1, 2, 0), f32)
    return [
        ("gemm M=0", lambda: gemm.gemm(xp((0, 64), HALF), xp((64, 32), HALF), xp((0, 32), f32))),
        ("gemm N=0", lambda: gemm.gemm(xp((16, 64), HALF), xp((64, 0), HALF), xp((16, 0), f32))),
        ("linear M=0", lambda: gemm.linear(xp((0, 64), HALF), xp((32, 64), HALF), xp((32,), HALF), xp((0, 32), HALF))),
        ("grouped_gemm of no rows", lambda: gemm.grouped_gemm(xp((0, 64), HALF), xp((2, 64, 32), HALF),
                                                              xp((0, 32), HALF), [0, 0])),
        ("softmax M=0", lambda: rowwise.softmax(xp((0, 100), f32), xp((0, 100), f32))),
        ("rms_norm N=0", lambda: rowwise.rms_norm(xp((4, 0), f32), xp((0,), f32), xp((4, 0), f32))),
        ("attention B=0", lambda: attention.attention(q, q, q, xp(q.shape, HALF), lse)),
        ("attention L=0", lambda: attention.attention(queries, queries, queries, xp(queries.shape, HALF), no_lse)),
        ("attention_backward B=0", lambda: attention.attention_backward(
            q, q, q, q, lse, q, xp(q.shape, HALF), xp(q.shape, HALF), xp(q.shape, HALF))),
    ]


def numpy_zeros(shape, dtype):
    return np.zeros(shape, dtype)


@pytest.mark.parametrize("name", [name for name, _ in empty_calls(numpy_zeros)])
def test_a_call_whose_outputs_are_empty_launches_nothing(name, backend):
    call = dict(empty_calls(numpy_zeros))[name]
    call()
    call()          # the same signature again: the program kept for it (it launches nothing either)


def test_a_task_whose_outputs_are_empty_compiles_to_no_kernel():
    """The traced host function launches nothing, so the compiled module holds no PTX and no cubin (before, the
    compiler stopped at 'expected one PTX module, the lowering gave 0')."""
    kernel = nt.build(gemm.matmul, gemm.MAPPING)
    compiled = kernel.compile(np.zeros((0, 32), np.float32), np.zeros((0, 64), HALF), np.zeros((64, 32), HALF))
    assert compiled.ptx == "" and compiled.cubin is None and compiled.module.plan.launches == ()


def test_a_function_that_launches_nothing_compiles_and_runs(backend):
    @nvdsl.mlir_func
    def nothing(x):
        if x.shape[0]:
            @nvdsl.gpu_launch(grid=1, block=32)
            def kernel(ctx):
                x[ctx.thread_id.x] = 1.0
            kernel()
    empty = np.zeros(0, np.float32)
    assert nothing.compile(empty).ptx == ""
    nothing(empty)
    x = np.zeros(32, np.float32)
    nothing(x)
    assert (x == 1.0).all()


@pytest.mark.parametrize("name, call, argument", [
    ("gemm K=0", lambda: gemm.gemm(np.zeros((16, 0), HALF), np.zeros((0, 32), HALF), np.zeros((16, 32), np.float32)),
     "K = 0 ('a' has shape (16, 0))"),
    ("linear K=0", lambda: gemm.linear(np.zeros((4, 0), HALF), np.zeros((32, 0), HALF), np.zeros(32, HALF),
                                       np.zeros((4, 32), HALF)), "K = 0 ('a' has shape (4, 0))"),
    ("cross_entropy N=0", lambda: rowwise.cross_entropy(np.zeros((4, 0), np.float32), np.zeros(4, np.int32),
                                                        np.zeros(4, np.float32)), "N = 0 ('logits' has shape (4, 0))"),
    ("attention Lk=0", lambda: attention.attention(np.zeros((1, 2, 8, 64), HALF), np.zeros((1, 2, 0, 64), HALF),
                                                   np.zeros((1, 2, 0, 64), HALF), np.zeros((1, 2, 8, 64), HALF),
                                                   np.zeros((1, 2, 8), np.float32)), "k and v hold no keys"),
    ("attention_backward L=0", lambda: attention.attention_backward(
        *[np.zeros((1, 2, 0, 64), HALF)] + [np.zeros((1, 2, 8, 64), HALF)] * 2 + [np.zeros((1, 2, 0, 64), HALF),
                                                                                   np.zeros((1, 2, 0), np.float32),
                                                                                   np.zeros((1, 2, 0, 64), HALF),
                                                                                   np.zeros((1, 2, 0, 64), HALF)] +
        [np.zeros((1, 2, 8, 64), HALF)] * 2), "q holds no queries"),
])
def test_an_output_computed_over_an_empty_axis_is_refused_by_name(name, call, argument, backend):
    with pytest.raises(ArgumentError) as refused:
        call()
    assert refused.value.code == "empty" and argument in str(refused.value), refused.value
    assert refused.value.hint and "test_empty.py" in str(refused.value)        # the caller's line


def test_a_task_reading_an_empty_argument_into_a_full_output_is_refused_by_its_name(backend):
    @nt.task(reads=("X",), writes=("Y",))
    def row_sums(Y, X):
        Xt, Yt = nt.blocks(X, (4, 64)), nt.blocks(Y, (4,))
        for i in nt.prange(Yt.grid[0]):
            x = nt.zeros((4, 64), name="x")
            x += Xt[i, 0]
            Yt[i] = x.sum(axis=1)
    kernel = nt.build(row_sums, nt.Mapping(consumers=1, warp_specialize=False))
    kernel(np.zeros(0, np.float32), np.zeros((0, 64), np.float32))       # no rows: nothing to write
    with pytest.raises(ArgumentError) as refused:
        kernel(np.zeros(4, np.float32), np.zeros((4, 0), np.float32))
    assert refused.value.code == "empty" and "'X'" in str(refused.value) and "'Y' [4]" in str(refused.value)


@requires_gpu
def test_empty_torch_tensors_on_the_gpu():
    torch = pytest.importorskip("torch")

    def cuda_zeros(shape, dtype):
        return torch.zeros(shape, dtype={np.float16: torch.float16, np.float32: torch.float32}[dtype], device="cuda")
    for name, call in empty_calls(cuda_zeros):
        call()
        call()
    torch.cuda.synchronize()

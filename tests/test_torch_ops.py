"""nvdsl.torch.custom_op: an @mlir_func or a task kernel as a torch.library custom op, checked by torch's opcheck on
CPU tensors (the interpreter) and on CUDA tensors (the GPU)."""

import pytest

import nvdsl
from nvdsl import tasks as nt
from nvdsl.testing import GPU_MARKS
from helpers import axpy as axpy_kernel

torch = pytest.importorskip("torch")
nvtorch = pytest.importorskip("nvdsl.torch")


axpy = nvtorch.custom_op(axpy_kernel, name="nvdsl_test::axpy", mutates_args=("y",), types={"alpha": float})


@nt.task(reads=("A", "B"), writes=("C",))
def add(C, A, B):
    Ct, At, Bt = nt.blocks(C, (64, 64)), nt.blocks(A, (64, 64)), nt.blocks(B, (64, 64))
    for i, j in nt.prange(*Ct.grid):
        total = nt.zeros((64, 64), name="total")
        total += At[i, j]
        total += Bt[i, j]
        Ct[i, j] = total.astype(C.dtype)


add_op = nvtorch.custom_op(nt.build(add), name="nvdsl_test::add")


@nvdsl.mlir_func
def writes_both(x, y):
    @nvdsl.gpu_launch(grid=1, block=x.shape[0])
    def kernel(ctx):
        i = ctx.thread_id.x
        x[i] = x[i] + 1.0
        y[i] = x[i]
    kernel()


sneaky = nvtorch.custom_op(writes_both, name="nvdsl_test::writes_both", mutates_args=("y",))


@nvdsl.mlir_func
def shift(x, *, by):
    @nvdsl.gpu_launch(grid=1, block=x.shape[0])
    def kernel(ctx):
        x[ctx.thread_id.x] = x[ctx.thread_id.x] + by
    kernel()


shift_op = nvtorch.custom_op(shift, name="nvdsl_test::shift", mutates_args=("x",), constants={"by": 2.0})


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=GPU_MARKS)])
def device(request):
    return request.param


def test_an_mlir_func_op_passes_opcheck_and_writes_in_place(device):
    x = torch.arange(32, dtype=torch.float32, device=device)
    y = torch.ones(32, dtype=torch.float32, device=device)
    axpy(x, y, 2.0)
    assert torch.equal(y.cpu(), 1 + 2 * torch.arange(32, dtype=torch.float32))      # exact: small integers
    torch.ops.nvdsl_test.axpy(x, y, 1.0)
    assert torch.equal(y.cpu(), 1 + 3 * torch.arange(32, dtype=torch.float32))
    torch.library.opcheck(axpy, (x, y, 0.5))


def test_a_task_kernel_op_mutates_what_its_task_writes(device):
    schema = str(torch.ops.nvdsl_test.add.default._schema)
    assert "Tensor(a0!) C" in schema and "Tensor A" in schema and "Tensor B" in schema
    a = torch.randn(128, 64, dtype=torch.float16, device=device)
    c = torch.zeros(128, 64, dtype=torch.float16, device=device)
    add_op(c, a, a)
    assert torch.equal(c, a * 2)                                        # exact: doubling
    torch.library.opcheck(add_op, (c, a, a))


def test_a_write_the_op_was_not_told_of_is_refused(device):
    with pytest.raises(nvdsl.ArgumentError) as info:
        sneaky(torch.zeros(32, device=device), torch.zeros(32, device=device))
    assert info.value.code == "mutates-args" and "['x']" in str(info.value) and "mutates_args" in info.value.hint
    assert info.value.loc.filename == __file__


def test_an_mlir_func_must_say_what_it_writes():
    with pytest.raises(nvdsl.ArgumentError) as info:
        nvtorch.custom_op(writes_both, name="nvdsl_test::unsaid")
    assert info.value.code == "mutates-args" and info.value.loc.filename == __file__


@pytest.mark.parametrize("call, words", [
    (lambda: nvtorch.custom_op(writes_both, name="nvdsl_test::typo", mutates_args=("z",)), ["['z']", "x, y"]),
    (lambda: nvtorch.custom_op(lambda x: None, name="nvdsl_test::plain", mutates_args=()), ["@nvdsl.mlir_func"]),
])
def test_bad_registrations_say_what_is_wrong(call, words):
    with pytest.raises(nvdsl.ArgumentError) as info:
        call()
    assert info.value.code == "bad-argument" and all(w in str(info.value) for w in words)
    assert info.value.loc.filename == __file__


def test_ops_compile_in_one_graph():
    def step(x, y, a, c):
        axpy(x, y, 3.0)
        add_op(c, a, a)
        return y * 2, c + 1

    def run(fn):
        x = torch.arange(32, dtype=torch.float32)
        y, a = torch.ones(32), torch.arange(64 * 64, dtype=torch.float16).reshape(64, 64) / 64
        c = torch.zeros(64, 64, dtype=torch.float16)
        return fn(x, y, a, c) + (y, c)

    eager = run(step)
    compiled = run(torch.compile(step, fullgraph=True, backend="aot_eager"))
    for e, c in zip(eager, compiled):
        assert torch.equal(e, c)


def test_compile_time_constants_are_bound_at_registration(device):
    x = torch.zeros(32, device=device)
    shift_op(x)
    assert "float by" not in str(torch.ops.nvdsl_test.shift.default._schema)
    assert torch.equal(x.cpu(), torch.full((32,), 2.0))

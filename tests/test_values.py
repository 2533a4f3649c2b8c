"""Operators on traced values: each becomes the MLIR op its dtype's signedness calls for."""

import numpy as np
import pytest

import nvdsl
from helpers import trace_body

i32, u32, f32, f16 = np.int32(1), np.uint32(1), np.float32(1), np.float16(1)


def ir_of(expression, *scalars, out=None):
    """IR of a kernel storing ``expression(*scalars)`` into an array (of the first scalar's dtype by default)."""
    def body(ctx, result, *values):
        result[0] = expression(*values)
    out_dtype = out or np.asarray(scalars[0]).dtype
    return trace_body(body, np.zeros(4, out_dtype), *scalars)


@pytest.mark.parametrize("expression, scalars, expected, absent", [
    (lambda a, b: a // b, (i32, i32), "arith.floordivsi", "arith.divui"),
    (lambda a, b: a // b, (u32, u32), "arith.divui", "arith.floordivsi"),
    (lambda a, b: a % b, (i32, i32), "arith.remsi", "arith.remui"),
    (lambda a, b: a % b, (u32, u32), "arith.remui", "arith.remsi"),
    (lambda a, b: a >> b, (i32, i32), "arith.shrsi", "arith.shrui"),
    (lambda a, b: a >> b, (u32, u32), "arith.shrui", "arith.shrsi"),
    (lambda a, b: a / b, (f32, f32), "arith.divf", None),
    (lambda a, b: a // b, (f32, f32), "math.floor", None),
    (lambda a, b: a << b, (i32, i32), "arith.shli", None),
    (lambda a, b: a ^ b, (u32, u32), "arith.xori", None),
    (lambda a: -a, (f32,), "arith.negf", None),
    (lambda a: -a, (i32,), "arith.subi", None),
    (lambda a: ~a, (i32,), "arith.xori", None),
    (lambda a: a ** 3, (i32,), "arith.muli", None),
    (lambda a, b: a ** b, (f32, f32), "math.powf", None),
    (lambda a: abs(a), (f32,), "math.absf", None),
])
def test_operator_lowers_to_signedness_specific_op(expression, scalars, expected, absent):
    ir = ir_of(expression, *scalars)
    assert expected in ir
    if absent:
        assert absent not in ir


@pytest.mark.parametrize("expression, scalars, predicate", [
    (lambda a, b: a < b, (i32, i32), "arith.cmpi slt"),
    (lambda a, b: a < b, (u32, u32), "arith.cmpi ult"),
    (lambda a, b: a >= b, (u32, u32), "arith.cmpi uge"),
    (lambda a, b: a == b, (i32, i32), "arith.cmpi eq"),
    (lambda a, b: a < b, (f32, f32), "arith.cmpf olt"),
    (lambda a, b: a != b, (f32, f32), "arith.cmpf une"),
])
def test_comparisons_pick_predicate_by_dtype(expression, scalars, predicate):
    ir = ir_of(lambda *v: nvdsl.select(expression(*v), nvdsl.constant(1, nvdsl.int32), 0), *scalars,
               out=np.int32)
    assert predicate in ir


def test_python_numbers_take_the_value_dtype():
    ir = ir_of(lambda a: a * 3 + 1, np.int64(2))
    assert "arith.constant 3 : i64" in ir and "arith.constant 1 : i64" in ir
    ir = ir_of(lambda a: a * 2 + 0.5, f16)
    assert "arith.constant 2.000000e+00 : f16" in ir


def test_narrow_and_wide_ints_of_one_signedness_widen():
    ir = ir_of(lambda a, b: a + b, np.int8(1), i32, out=np.int32)
    assert "arith.extsi" in ir
    ir = ir_of(lambda a, b: a + b, np.uint8(1), u32, out=np.uint32)
    assert "arith.extui" in ir


def test_thread_ids_combine_with_int32_scalars_as_index():
    ir = trace_body(lambda ctx, out, n: out.__setitem__(0, (ctx.thread_id.x + n).to(nvdsl.int32)),
                    np.zeros(1, np.int32), i32)
    assert "arith.index_cast" in ir


@pytest.mark.parametrize("expression, scalars, words", [
    (lambda a, b: a + b, (i32, u32), ["int32", "uint32"]),
    (lambda a, b: a + b, (f16, f32), ["float16", "float32"]),
    (lambda a, b: a + b, (i32, f32), ["int32", "float32"]),
    (lambda a: a + 1.5, (i32,), ["int32", "1.5"]),
    (lambda a, b: a / b, (i32, i32), ["'/'", "//"]),
    (lambda a: -a, (u32,), ["uint32"]),
    (lambda a: a + 2**40, (i32,), ["does not fit int32"]),
    (lambda a: a >> 1.0, (f32,), ["'>>' needs integers"]),
])
def test_incompatible_operands_are_clear_errors(expression, scalars, words):
    with pytest.raises(nvdsl.TraceError) as info:
        ir_of(expression, *scalars)
    for word in words:
        assert word in str(info.value)
    assert info.value.loc is not None and info.value.loc.filename == __file__


def test_traced_value_has_no_python_truth_value():
    def body(ctx, out):
        if ctx.thread_id.x < 4:
            out[0] = 1
    with pytest.raises(nvdsl.TraceError) as info:
        trace_body(body, np.zeros(1, np.int32))
    assert info.value.code == "traced-bool"
    assert "nvdsl.when" in str(info.value)


def test_traced_value_is_not_a_python_int():
    with pytest.raises(nvdsl.TraceError) as info:
        trace_body(lambda ctx, out: [None for _ in range(ctx.thread_id.x)], np.zeros(1, np.int32))
    assert info.value.code == "traced-int"


@pytest.mark.parametrize("source, target, op", [
    (i32, nvdsl.float32, "arith.sitofp"),
    (u32, nvdsl.float32, "arith.uitofp"),
    (f32, nvdsl.int32, "arith.fptosi"),
    (f32, nvdsl.float16, "arith.truncf"),
    (f16, nvdsl.float32, "arith.extf"),
    (i32, nvdsl.int64, "arith.extsi"),
    (u32, nvdsl.uint64, "arith.extui"),
    (np.int64(1), nvdsl.int32, "arith.trunci"),
    (i32, nvdsl.index, "arith.index_cast"),
    (u32, nvdsl.index, "arith.index_castui"),
])
def test_explicit_conversions(source, target, op):
    if target is nvdsl.index:  # index has no array dtype: store it as int64
        ir = ir_of(lambda a: a.to(target).to(nvdsl.int64), source, out=np.int64)
    else:
        ir = ir_of(lambda a: a.to(target), source, out=nvdsl.dtypes.numpy_dtype(target))
    assert op in ir


def test_arithmetic_outside_a_kernel_is_an_error():
    @nvdsl.mlir_func
    def host(x, alpha):
        alpha * 2  # host code may not compute on traced values

    with pytest.raises(nvdsl.TraceError) as info:
        host.trace(np.zeros(4, np.float32), 1.0)
    # alpha is a positional (runtime) scalar: the error says how to make it a compile-time constant
    assert info.value.code == "runtime-scalar"
    assert "'alpha'" in str(info.value) and "pass it by keyword (alpha=...)" in str(info.value)


@pytest.mark.parametrize("scalar", [i32, u32, f32, f16, np.int64(1)])
def test_every_operator_lowers_to_ptx(scalar):
    """Tracing is not enough: each op must also survive the NVVM lowering (arith.remf did not)."""
    is_float = np.asarray(scalar).dtype.kind == "f"

    @nvdsl.mlir_func(options=nvdsl.Options(assemble_cubin=False))
    def all_ops(a, b, out):
        @nvdsl.gpu_launch(grid=1, block=1)
        def kernel(ctx):
            x, y = a[0], b[0]
            results = [x + y, x - y, x * y, x // y, x % y, x ** 3, abs(x),
                       nvdsl.minimum(x, y), nvdsl.maximum(x, y), nvdsl.select(x < y, x, y)]
            if is_float:
                results += [x / y, -x, x ** y]
            else:
                results += [x & y, x | y, x ^ y, ~x, x << 1, x >> 1]
            for k, r in enumerate(results):
                out[k] = r
        kernel()

    dtype = np.asarray(scalar).dtype
    assert ".entry all_ops_kernel" in all_ops.compile(np.ones(1, dtype), np.ones(1, dtype),
                                                      np.zeros(32, dtype)).ptx

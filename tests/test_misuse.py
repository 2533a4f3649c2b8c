"""Misuse a new user reaches for: each is a clear, coded error at the user's line, never a crash."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import nvdsl
from helpers import trace_body

X = np.zeros(32, np.float32)


def test_a_value_kept_from_an_earlier_trace_is_refused_not_a_crash():
    """Used to crash the interpreter (SIGSEGV): the earlier trace's MLIR is gone."""
    script = textwrap.dedent('''
        import gc, numpy as np, nvdsl
        kept = []

        @nvdsl.mlir_func
        def f(x, a):
            @nvdsl.gpu_launch(grid=1, block=32)
            def k(ctx):
                v = x[ctx.thread_id.x] * a
                if not kept:
                    kept.append(v)
                x[ctx.thread_id.x] = kept[0] + 1.0
            k()

        f.compile(np.zeros(32, np.float32), 1.0)
        gc.collect()
        try:
            f.compile(np.zeros(64, np.float32), 1.0)
        except nvdsl.TraceError as e:
            print("CODE", e.code, e.loc.line)
    ''')
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "CODE stale-value 12" in result.stdout


def test_values_and_arrays_of_a_finished_trace_are_refused():
    kept = {}

    @nvdsl.mlir_func
    def f(x):
        kept["x"] = x

        @nvdsl.gpu_launch(grid=1, block=32)
        def k(ctx):
            kept["tid"] = ctx.thread_id.x
            x[ctx.thread_id.x] = 1.0
        k()

    f.trace(X)
    for thing in (kept["x"], kept["tid"]):
        with pytest.raises(nvdsl.TraceError) as info:
            thing.ir
        assert info.value.code == "stale-value" and "outside any trace" in str(info.value)

    @nvdsl.mlir_func
    def g(x):
        @nvdsl.gpu_launch(grid=1, block=32)
        def k(ctx):
            kept["x"][ctx.thread_id.x] = 2.0
        k()
    with pytest.raises(nvdsl.TraceError) as info:
        g.trace(X)
    assert info.value.code == "stale-value" and "while tracing 'f'" in str(info.value)
    assert info.value.loc.filename == __file__


def test_a_value_of_one_kernel_used_in_another_names_both():
    @nvdsl.mlir_func
    def f(x):
        shared = {}

        @nvdsl.gpu_launch(grid=1, block=32)
        def first(ctx):
            shared["v"] = x[ctx.thread_id.x] * 2.0
        first()

        @nvdsl.gpu_launch(grid=1, block=32)
        def second(ctx):
            x[ctx.thread_id.x] = shared["v"]
        second()
    with pytest.raises(nvdsl.TraceError) as info:
        f.trace(X)
    assert info.value.code == "cross-kernel-value"
    assert "kernel 'f_first'" in str(info.value) and "kernel 'f_second'" in str(info.value)


def test_a_kernel_value_used_in_host_code_is_refused():
    @nvdsl.mlir_func
    def f(x):
        inside = []

        @nvdsl.gpu_launch(grid=1, block=32)
        def k(ctx):
            inside.append(ctx.thread_id.x)
        k()
        inside[0].ir   # e.g. handed to an mlir.dialects op of host code
    with pytest.raises(nvdsl.TraceError) as info:
        f.trace(X)
    assert info.value.code == "cross-kernel-value" and "used in host code" in str(info.value)


def test_an_mlir_func_called_inside_another_says_how_to_compose_them():
    @nvdsl.mlir_func
    def inner(x):
        @nvdsl.gpu_launch(grid=1, block=32)
        def k(ctx):
            x[ctx.thread_id.x] = 1.0
        k()

    @nvdsl.mlir_func
    def outer(x):
        inner(x)
    with pytest.raises(nvdsl.TraceError) as info:
        outer.trace(X)
    assert info.value.code == "nested-mlir-func" and "inner.fn(...)" in str(info.value)

    @nvdsl.mlir_func
    def composed(x):
        inner.fn(x)     # the hint's way: inner's kernels are traced into composed
    assert "function(@composed_k)" in composed.trace(X).mlir


@pytest.mark.parametrize("body, word", [
    (lambda ctx, x: nvdsl.when((ctx.thread_id.x < 3) and (ctx.thread_id.x > 1)), "'and'"),
    (lambda ctx, x: nvdsl.when((ctx.thread_id.x < 3) or (ctx.thread_id.x > 1)), "'or'"),
    (lambda ctx, x: nvdsl.when(not (ctx.thread_id.x < 3)), "'not'"),
])
def test_and_or_not_on_traced_values_say_to_use_bitwise_operators(body, word):
    with pytest.raises(nvdsl.TraceError) as info:
        trace_body(body, X)
    assert info.value.code == "traced-and-or" and word in str(info.value)
    assert "'&'" in info.value.hint and "'|'" in info.value.hint


def test_an_if_on_a_traced_value_points_at_when():
    def body(ctx, x):
        if ctx.thread_id.x < 3:
            x[0] = 1.0
    with pytest.raises(nvdsl.TraceError) as info:
        trace_body(body, X)
    assert info.value.code == "traced-bool" and "nvdsl.when" in info.value.hint



def test_a_select_between_two_python_numbers_says_their_dtype_is_unknown():
    def body(ctx, x):
        x[0] = nvdsl.select(ctx.thread_id.x < 3, 1, 0)
    with pytest.raises(nvdsl.TraceError) as info:
        trace_body(body, X)
    assert info.value.code == "type-mismatch" and "dtype is unknown" in str(info.value)
    assert "nvdsl.constant" in info.value.hint and info.value.loc.filename == __file__

@pytest.mark.parametrize("body, code, words", [
    (lambda ctx, x, s: s.shape, "not-an-array", ["the scalar argument 'values[1]'", "has no '.shape'"]),
    (lambda ctx, x, s: s[0], "not-an-array", ["cannot be indexed", "float32 scalar"]),
    (lambda ctx, x, s: s.__setitem__(0, 1.0), "scalar-write", ["passed to kernels by value"]),
    (lambda ctx, x, s: len(s), "not-an-array", ["has no len()"]),
])
def test_a_scalar_where_an_array_is_expected(body, code, words):
    with pytest.raises(nvdsl.TraceError) as info:
        trace_body(body, X, 2.0)
    assert info.value.code == code
    for word in words:
        assert word in str(info.value)


def test_a_kernel_body_without_ctx_is_refused_where_it_is_defined():
    with pytest.raises(nvdsl.TraceError) as info:
        @nvdsl.gpu_launch(grid=1, block=32)
        def kernel():
            pass
    assert info.value.code == "bad-kernel-signature" and "def kernel(ctx)" in info.value.hint
    assert info.value.loc.filename == __file__


@pytest.mark.parametrize("body", [
    lambda ctx, x: ctx.dynamic_shared((8,), nvdsl.float32, offset=ctx.thread_id.x * 0),
    lambda ctx, x: ctx.shared_array((64,), nvdsl.float32).view((8,), offset=ctx.thread_id.x),
])
def test_a_traced_shared_memory_offset_is_refused_as_such(body):
    @nvdsl.mlir_func
    def host(x):
        @nvdsl.gpu_launch(grid=1, block=32, smem=256)
        def kernel(ctx):
            body(ctx, x)
        kernel()
    with pytest.raises(nvdsl.TraceError) as info:
        host.trace(X)
    assert info.value.code == "bad-offset" and "must be a Python int" in str(info.value)


def test_a_positional_scalar_used_while_tracing_says_pass_it_by_keyword():
    @nvdsl.mlir_func
    def host(x, tile):
        @nvdsl.gpu_launch(grid=x.shape[0] // tile, block=tile)
        def kernel(ctx):
            x[ctx.thread_id.x] = 1.0
        kernel()
    with pytest.raises(nvdsl.TraceError) as info:
        host.trace(X, 8.0)
    assert info.value.code == "runtime-scalar" and "tile=..." in info.value.hint


def test_print_with_c_format_specifiers_is_refused():
    with pytest.raises(nvdsl.TraceError) as info:
        trace_body(lambda ctx, x: nvdsl.print("x=%d", ctx.thread_id.x), X)
    assert info.value.code == "bad-print" and "'%d'" in str(info.value) and "{}" in info.value.hint
    assert 'gpu.printf "100%% done' in trace_body(lambda ctx, x: nvdsl.print("100% done"), X)


def test_a_dtype_clash_names_the_argument_and_how_it_was_passed():
    @nvdsl.mlir_func
    def saxpy(x, y, alpha):
        @nvdsl.gpu_launch(grid=1, block=32)
        def kernel(ctx):
            i = ctx.thread_id.x
            y[i] = alpha * x[i] + y[i]
        kernel()
    with pytest.raises(nvdsl.TraceError) as info:   # first trace: a Python int where a float is needed
        saxpy.trace(X, X, 2)
    assert "the scalar argument 'alpha' is int32" in str(info.value) and "Python int" in info.value.hint

    saxpy.trace(X, X, 2.0)
    with pytest.raises(nvdsl.ArgumentError) as info:  # a later call: the dtype it was traced with, and now
        saxpy.compile(X, X, 2)
    assert info.value.code == "dtype-mismatch"
    assert "'alpha' is int32 (a Python int) here but was float32" in str(info.value)
    assert "a Python float" in info.value.hint


def _read_only(x):
    x.setflags(write=False)
    return x


def _library_calls():
    """Each library function with a read-only output, and the name the caller gave that output."""
    from nvdsl.kernels import attention, attention_varlen, gemm, linear_grad, rowwise
    h = np.float16
    a, w, bias = np.ones((64, 64), h), np.ones((64, 64), h), np.zeros(64, h)
    rows, vec = np.ones((4, 64), np.float32), np.ones(64, np.float32)
    q = np.ones((1, 1, 64, 64), h)
    return {
        "gemm": (lambda: gemm.gemm(a, w, _read_only(np.zeros((64, 64), np.float32))), "c"),
        "linear": (lambda: gemm.linear(a, w, bias, _read_only(np.zeros((64, 64), h))), "c"),
        "grouped_gemm": (lambda: gemm.grouped_gemm(a, np.ones((2, 64, 64), h), _read_only(np.zeros((64, 64), h)),
                                                   [30, 34]), "c"),
        "linear_grad": (lambda: linear_grad.linear_grad(a, w, bias, a, _read_only(np.zeros((64, 64), h)),
                                                        activation="relu"), "dz"),
        "softmax": (lambda: rowwise.softmax(rows, _read_only(np.zeros_like(rows))), "y"),
        "rms_norm": (lambda: rowwise.rms_norm(rows, vec, _read_only(np.zeros_like(rows))), "y"),
        "layer_norm": (lambda: rowwise.layer_norm(rows, vec, vec, _read_only(np.zeros_like(rows))), "y"),
        "cross_entropy": (lambda: rowwise.cross_entropy(rows, np.zeros(4, np.int32),
                                                        _read_only(np.zeros(4, np.float32))), "loss"),
        "attention o": (lambda: attention.attention(q, q, q, _read_only(np.zeros_like(q))), "o"),
        "attention lse": (lambda: attention.attention(q, q, q, np.zeros_like(q),
                                                      _read_only(np.zeros((1, 1, 64), np.float32))), "lse"),
        "attention_decode": (lambda: attention_varlen.attention_decode(
            q[:, :, :1], q, q, _read_only(np.zeros_like(q[:, :, :1])), np.array([64], np.int32)), "o"),
    }


@pytest.mark.parametrize("function", sorted(_library_calls()))
def test_a_library_function_refuses_a_read_only_output_by_the_callers_name(function):
    """Not by the name its kernel gives the array ('C', 'Y', 'O'), and before anything runs."""
    call, name = _library_calls()[function]
    with pytest.raises(nvdsl.ArgumentError) as info:
        call()
    assert info.value.code == "read-only" and f"argument '{name}' is read-only" in str(info.value), info.value
    assert info.value.loc.filename == __file__


def test_a_gemm_planned_for_a_writeable_output_still_names_a_read_only_one(backend):
    """A call like an earlier one skips gemm's planning; a read-only output is a signature of its own."""
    from nvdsl.kernels.gemm import gemm
    a, b = np.ones((64, 64), np.float16), np.ones((64, 64), np.float16)
    c = np.zeros((64, 64), np.float32)
    gemm(a, b, c)
    np.testing.assert_array_equal(c, 64.0)      # sums of 64 ones: exact in float32
    with pytest.raises(nvdsl.ArgumentError) as info:
        gemm(a, b, _read_only(np.zeros((64, 64), np.float32)))
    assert "argument 'c' is read-only" in str(info.value)


def _gemm_family_misuse():
    """Calls of the GEMM family with mismatched shapes or unsupported dtypes: before these were checked, a B with
    fewer rows than A has columns, a C with fewer rows or a short bias ran and gave a wrong answer (the kernels
    read past an operand's end as zeros), and a float32 A failed deep in the task layer."""
    from nvdsl.kernels import gemm, linear_grad
    h = np.float16
    a, w, bias, c = np.ones((64, 64), h), np.ones((64, 64), h), np.zeros(64, h), np.zeros((64, 64), np.float32)
    one = np.ones(1, np.float32)
    return {
        "c with fewer rows": (lambda: gemm.gemm(a, w, np.zeros((32, 64), np.float32)), "bad-shape",
                              "'c' has shape (32, 64), M = 32 on axis 0, but 'a' has M = 64", "(64, 64)"),
        "b with fewer rows than a has columns": (lambda: gemm.gemm(a, np.ones((32, 64), h), c), "bad-shape",
                                                 "'b' has shape (32, 64), K = 32 on axis 0, but 'a' has K = 64",
                                                 "(64, 64)"),
        "b (N, K) with another K": (lambda: gemm.gemm(a, np.ones((64, 32), h), c, b_layout="NK"), "bad-shape",
                                    "K = 32 on axis 1, but 'a' has K = 64", "(64, 64)"),
        "batched b of two dims": (lambda: gemm.gemm(np.ones((2, 64, 64), h), w, np.zeros((2, 64, 64), h)),
                                  "bad-shape", "'b' must be 3-D (B, K, N)", "(2, 64, 64)"),
        "float32 a": (lambda: gemm.gemm(a.astype(np.float32), w, c), "bad-dtype",
                      "'a' is float32; it must be float16 or bfloat16", "float16"),
        "int32 c": (lambda: gemm.gemm(a, w, c.astype(np.int32)), "bad-dtype", "'c' is int32", "float16"),
        "a and b of two dtypes": (lambda: gemm.gemm(a, w.astype(ml_bfloat16()), c), "bad-dtype",
                                  "'a' float16, 'b' bfloat16: they must be of one dtype", "float16"),
        "a short bias": (lambda: gemm.linear(a, w, np.zeros(32, h), c), "bad-shape",
                         "'bias' has shape (32,), N = 32 on axis 0, but 'w' has N = 64", "(64,)"),
        "linear's a of another K": (lambda: gemm.linear(np.ones((64, 32), h), w, bias, c), "bad-shape",
                                    "'w' has shape (64, 64), K = 64 on axis 1, but 'a' has K = 32", "(64, 32)"),
        "grouped b of another K": (lambda: gemm.grouped_gemm(a, np.ones((2, 32, 64), h), c, [30, 34]), "bad-shape",
                                   "'b' has shape (2, 32, 64), K = 32 on axis 1", "(2, 64, 64)"),
        "scaled_gemm's int8 a": (lambda: gemm.scaled_gemm(a.view(np.uint8)[:, :64], a.view(np.uint8)[:, :64], c,
                                                          one, one), "bad-dtype",
                                 "'a' is uint8; it must be float8_e4m3fn or float8_e5m2", "float8_e4m3fn"),
        "linear_grad's short dy": (lambda: linear_grad.linear_grad(a, w, bias, np.zeros((32, 64), h),
                                                                   np.zeros((64, 64), h), activation="relu"),
                                   "bad-shape", "'dy' has shape (32, 64), M = 32 on axis 0, but 'dz' has M = 64",
                                   "(64, 64)"),
    }


def ml_bfloat16():
    return pytest.importorskip("ml_dtypes").bfloat16


@pytest.mark.parametrize("case", sorted(_gemm_family_misuse()))
def test_the_gemm_family_refuses_mismatched_shapes_and_dtypes_by_the_callers_names(case):
    call, code, message, hint = _gemm_family_misuse()[case]
    with pytest.raises(nvdsl.ArgumentError) as info:
        call()
    assert info.value.code == code and message in str(info.value), info.value
    assert hint in info.value.hint and info.value.loc.filename == __file__


def test_scaled_gemm_scales_are_one_element():
    from nvdsl.kernels.gemm import scaled_gemm
    with pytest.raises(nvdsl.ArgumentError) as info:
        scaled_gemm(np.zeros((64, 64), np.uint8), np.zeros((64, 64), np.uint8), np.zeros((64, 64), np.float32),
                    np.ones(2, np.float32), np.ones(1, np.float32))
    assert info.value.code == "bad-shape" and "'scale_a' has shape (2,); axis 0 must be 1" in str(info.value)
    assert "(1,)" in info.value.hint


@pytest.mark.parametrize("name", ["gemm", "linear", "grouped_gemm", "scaled_gemm", "block_scaled_gemm", "softmax",
                                  "cross_entropy", "attention"])
def test_a_library_mapping_that_is_not_a_mapping_is_named(name):
    """A dict where an nt.Mapping belongs (the tiles written out by hand) was a TypeError or an AttributeError from
    deep inside the library (an unhashable dict, no tile_values) in all but attention."""
    from nvdsl.kernels import attention, gemm, rowwise
    half, f32 = np.ones((64, 64), np.float16), np.ones((64, 64), np.float32)
    one = np.ones(1, np.float32)
    calls = {"gemm": lambda m: gemm.gemm(half, half, f32.copy(), mapping=m),
             "linear": lambda m: gemm.linear(half, half, half[0].copy(), half.copy(), mapping=m),
             "grouped_gemm": lambda m: gemm.grouped_gemm(half, half[None], half.copy(), [64], mapping=m),
             "scaled_gemm": lambda m: gemm.scaled_gemm(half, half, half.copy(), one, one, mapping=m),
             "block_scaled_gemm": lambda m: gemm.block_scaled_gemm(half, half, half.copy(), f32[:, :1], one[None],
                                                                   mapping=m),
             "softmax": lambda m: rowwise.softmax(f32, f32.copy(), mapping=m),
             "cross_entropy": lambda m: rowwise.cross_entropy(f32, np.zeros(64, np.int32), f32[0].copy(), mapping=m),
             "attention": lambda m: attention.attention(*[half[None, None]] * 3, half[None, None].copy(), mapping=m)}
    with pytest.raises(nvdsl.ArgumentError) as refused:
        calls[name]({"BM": 64})
    assert refused.value.code == "bad-argument" and "mapping={'BM': 64}" in str(refused.value) and \
        "nvdsl.tasks.Mapping" in str(refused.value) and "test_misuse.py" in str(refused.value)


def test_options_given_as_numpy_scalars_mean_what_pythons_do():
    """scale=np.float32(0.125) and causal=np.True_ (options read from a NumPy config) were refused as not "a positive
    finite number" and not "True or False"; splits=np.int64(2) as not an int. They now run as the Python values."""
    from nvdsl.kernels import attention, gemm
    rng = np.random.default_rng(0)
    q = rng.standard_normal((1, 1, 64, 64)).astype(np.float16)
    python, numpy_ = np.zeros_like(q), np.zeros_like(q)
    attention.attention(q, q, q, python, scale=0.125, causal=True)
    kernels = attention._kernel.cache_info().currsize
    attention.attention(q, q, q, numpy_, scale=np.float32(0.125), causal=np.True_)
    assert attention._kernel.cache_info().currsize == kernels          # no second kernel: the same one ran
    # Exact: one kernel on the same inputs (the forward has no atomics) gives the same bits on any machine.
    assert np.array_equal(python, numpy_)
    a = rng.standard_normal((64, 128)).astype(np.float16)
    c, c_numpy = np.zeros((64, 64), np.float32), np.zeros((64, 64), np.float32)
    gemm._PLANNED.clear()
    gemm.gemm(a, a.T.copy(), c, splits=2)
    gemm.gemm(a, a.T.copy(), c_numpy, splits=np.int64(2))
    assert len(gemm._PLANNED) == 2 and len({id(steps[0]) for steps in gemm._PLANNED.values()}) == 1  # one kernel
    # Exact: both calls run the same split-K kernels, whose partial sums are added in a fixed order (deterministic
    # by default), on the same inputs: the same bits on any machine.
    assert np.array_equal(c, c_numpy)


@pytest.mark.parametrize("sizes", [[32.5, 31.5], [80, -16], np.array([32.0, 32.0])])
def test_group_sizes_that_are_not_whole_row_counts_are_refused(sizes):
    """32.5 rows used to be truncated to 32 (then refused as a sum that does not match, or run on the wrong rows)."""
    from nvdsl.kernels import gemm
    half = np.ones((64, 64), np.float16)
    with pytest.raises(nvdsl.ArgumentError) as refused:
        gemm.grouped_gemm(half, np.ones((2, 64, 64), np.float16), half.copy(), sizes)
    assert refused.value.code == "bad-groups" and "whole numbers of rows" in str(refused.value)

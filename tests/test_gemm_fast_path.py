"""The library GEMM's per-call fast path: a gemm/linear call like an earlier one (the same kinds, shapes and
strides, the same options) goes straight to the kernels its first call planned, split-K's included; another
layout plans again, and what the first call refused is refused again."""

import numpy as np
import pytest

import nvdsl
import nvdsl.kernels.gemm as library
from helpers import assert_product_close


def operands(seed, m=16, n=128, k=512):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)


def test_a_gemm_like_an_earlier_one_runs_the_plan_it_made(backend):
    library._PLANNED.clear()
    a, b = operands(1)
    c = np.zeros((16, 128), np.float32)
    library.gemm(a, b, c, splits=2)
    assert_product_close(c, a, b)
    (signature, steps), = library._PLANNED.items()
    assert steps[2] == (2, 16, 128)                       # split-K's partial products, made beside c per call
    a2, b2 = operands(2)
    c2 = np.zeros((16, 128), np.float32)
    library.gemm(a2, b2, c2, splits=2)                    # new values, the same signature: the same plan
    assert list(library._PLANNED.items()) == [(signature, steps)]
    assert_product_close(c2, a2, b2)
    bt = np.ascontiguousarray(b2.T).T                     # a transposed view: read as the (N, K) operand
    library.gemm(a2, bt, c, splits=2)
    assert [steps[1] for steps in library._PLANNED.values()] == [False, True]     # the second takes b.T
    assert_product_close(c, a2, b2)


def test_a_call_the_planning_refused_is_refused_again():
    library._PLANNED.clear()
    a, b = operands(3)
    c = np.zeros((16, 128), np.float32)
    for _ in range(2):
        with pytest.raises(nvdsl.ArgumentError) as refused:
            library.gemm(a, b, c, splits=True)            # equal to 1, but not an int
        assert refused.value.code == "bad-argument"
        with pytest.raises(nvdsl.ArgumentError) as refused:
            library.gemm(a, b, c, b_layout="MN")
        assert refused.value.code == "bad-layout"
    assert library._PLANNED == {}


def test_a_linear_like_an_earlier_one_runs_the_plan_it_made(backend):
    library._PLANNED.clear()
    rng = np.random.default_rng(4)
    a, w = rng.standard_normal((16, 256)).astype(np.float16), rng.standard_normal((128, 256)).astype(np.float16)
    bias = rng.standard_normal(128).astype(np.float16)
    for weight in (w, np.ascontiguousarray(w.T).T, w):    # a weight's transposed view plans once more
        c = np.zeros((16, 128), np.float32)
        library.linear(a, weight, bias, c)
        assert_product_close(c - bias.astype(np.float32), a, w.T)
    assert [steps[1] for steps in library._PLANNED.values()] == [False, True]

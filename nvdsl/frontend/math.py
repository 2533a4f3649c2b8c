"""Math functions on traced floats, and element by element on register tiles and vectors.

Each function takes a traced float (or a register tile or vector of floats) and returns the same
kind of value. The default is the accurate function of CUDA's math library (libdevice, which the
MLIR NVVM target links into every kernel that calls it); ``approx=True`` picks the PTX
special-function instruction instead, where PTX has one. Errors are the largest over all finite
inputs, from NVIDIA's documentation (CUDA math API for the accurate functions, the PTX ISA for
the instructions), in ulp of the result's type unless stated otherwise:

=========  ====================  ======================  ==================================================
function   float32, accurate     float64, accurate       float32, ``approx=True``
=========  ====================  ======================  ==================================================
``exp``    2 ulp (``expf``)      1 ulp                   ``ex2.approx.ftz(x * log2 e)``: 2 + floor(|1.173 x|)
``exp2``   2 ulp (``exp2f``)     1 ulp                   ``ex2.approx.ftz``: 2 ulp
``log``    1 ulp (``logf``)      1 ulp                   ``lg2.approx.ftz(x) * ln 2``: 2^-21.41 absolute on
                                                         [0.5, 2], else 3 ulp
``log2``   1 ulp (``log2f``)     1 ulp                   ``lg2.approx.ftz``: 2^-22 absolute on (0.5, 2),
                                                         else 2^-22 relative
``sqrt``   0 (``sqrt.rn``)       0 (``sqrt.rn``)         ``sqrt.approx.ftz``: 2^-23 relative
``rsqrt``  2 ulp (``rsqrtf``)    1 ulp                   ``rsqrt.approx.ftz``: 2^-22.9 relative
``tanh``   2 ulp (``tanhf``)     1 ulp                   ``tanh.approx``: 2^-11 relative
``erf``    2 ulp (``erff``)      2 ulp                   none (``approx=True`` is an error)
``abs``    exact                 exact                   (no variant)
=========  ====================  ======================  ==================================================

The ``approx`` instructions flush subnormal inputs and results to zero (``.ftz``), except
``tanh.approx``. float16 and bfloat16 values are computed in float32 and rounded once to their
type. ``maximum`` and ``minimum`` (exact, NaN-propagating) live beside the operators in
:mod:`nvdsl.frontend.values`.

In IR: the accurate functions are ``math`` dialect operations, except ``sqrt``, a call of the
``llvm.sqrt`` intrinsic (libdevice's ``sqrtf`` is the approximate instruction unless a reflect flag
asks otherwise, and the MLIR pipeline sets none); the approximate ones are ``llvm.call_intrinsic``
of the NVVM intrinsics (``llvm.nvvm.ex2.approx.ftz.f32`` ...) and of ``llvm.tanh`` with ``afn``.
"""

from __future__ import annotations

import math as pymath

from mlir import ir
from mlir.dialects import arith, llvm
from mlir.dialects import math as mlir_math

from .. import dtypes as dt
from ..errors import TraceError, user_location
from .context import at_user_line, current_kernel
from .values import Value, _constant, convert, elementwise, on_task_tiles, python_number, select

_ACCURATE = {"exp": mlir_math.exp, "exp2": mlir_math.exp2, "log": mlir_math.log, "log2": mlir_math.log2,
             "rsqrt": mlir_math.rsqrt, "tanh": mlir_math.tanh, "erf": mlir_math.erf}
# float32 only: the NVVM intrinsic of the PTX instruction, and a factor applied before or after it.
_APPROX = {"exp2": ("llvm.nvvm.ex2.approx.ftz.f32", None, None),
           "exp": ("llvm.nvvm.ex2.approx.ftz.f32", 1 / pymath.log(2), None),
           "log2": ("llvm.nvvm.lg2.approx.ftz.f", None, None),
           "log": ("llvm.nvvm.lg2.approx.ftz.f", None, pymath.log(2)),
           "sqrt": ("llvm.nvvm.sqrt.approx.ftz.f", None, None),
           "rsqrt": ("llvm.nvvm.rsqrt.approx.ftz.f", None, None),
           "tanh": ("llvm.tanh.f32", None, None)}


def exp(x, *, approx: bool = False):
    """e to the power ``x``. Accurate: ``expf`` (2 ulp); ``approx=True``: ``ex2.approx.ftz`` of
    ``x * log2(e)``, 2 + floor(|1.173 x|) ulp."""
    return _unary("exp", x, approx)


def exp2(x, *, approx: bool = False):
    """2 to the power ``x``. Accurate: ``exp2f`` (2 ulp, subnormal results kept); ``approx=True``:
    one ``ex2.approx.ftz.f32`` (2 ulp, subnormals flushed to zero), what softmax kernels use."""
    return _unary("exp2", x, approx)


def log(x, *, approx: bool = False):
    """The natural logarithm. Accurate: ``logf`` (1 ulp); ``approx=True``: ``lg2.approx.ftz`` times
    ln 2 (2^-21.41 absolute error on [0.5, 2], else 3 ulp)."""
    return _unary("log", x, approx)


def log2(x, *, approx: bool = False):
    """The base-2 logarithm. Accurate: ``log2f`` (1 ulp); ``approx=True``: ``lg2.approx.ftz``
    (2^-22 absolute error on (0.5, 2), else 2^-22 relative)."""
    return _unary("log2", x, approx)


def sqrt(x, *, approx: bool = False):
    """The square root. Accurate: correctly rounded (``sqrt.rn``); ``approx=True``:
    ``sqrt.approx.ftz`` (2^-23 relative error)."""
    return _unary("sqrt", x, approx)


def rsqrt(x, *, approx: bool = False):
    """1 / sqrt(x). Accurate: ``rsqrtf`` (2 ulp); ``approx=True``: ``rsqrt.approx.ftz`` (2^-22.9
    relative error, subnormals flushed)."""
    return _unary("rsqrt", x, approx)


def tanh(x, *, approx: bool = False):
    """The hyperbolic tangent. Accurate: ``tanhf`` (2 ulp); ``approx=True``: ``tanh.approx.f32``
    (2^-11 relative error)."""
    return _unary("tanh", x, approx)


def erf(x, *, approx: bool = False):
    """The error function: ``erff`` (2 ulp). PTX has no instruction for it: ``approx=True`` is an error."""
    return _unary("erf", x, approx)


def abs(x):  # noqa: A001 - nvdsl.abs, like numpy.abs
    """The absolute value (exact); the same as Python's ``abs(x)`` on traced values, and elementwise
    on register tiles and vectors."""
    tiles = on_task_tiles("abs", (x,), {})
    if tiles is not None:
        return tiles
    current_kernel("nvdsl.abs")
    return elementwise(_abs, (x,), "nvdsl.abs")


def _abs(x):
    if not isinstance(x, Value):
        raise TraceError(f"nvdsl.abs needs a traced value, got {type(x).__name__} {x!r}", code="type-mismatch",
                         hint="use Python's abs() on Python numbers", loc=user_location())
    return x.__abs__()


def where(condition, if_true, if_false):
    """``if_true`` where ``condition`` holds, else ``if_false``: on register tiles element by element
    (masking, e.g. ``where(cols <= rows, s, -inf)`` with ``rows, cols = s.indices()``), broadcasting
    scalars and vectors; on scalars the same as :func:`nvdsl.select`; on a task program's tiles, ``nt.where``."""
    tiles = on_task_tiles("where", (condition, if_true, if_false), {})
    return select(condition, if_true, if_false) if tiles is None else tiles


def _unary(name: str, x, approx):
    tiles = on_task_tiles(name, (x,), {"approx": approx} if approx else {})
    if tiles is not None:
        return tiles
    current_kernel(f"nvdsl.{name}")
    if not isinstance(approx, bool):
        raise TraceError(f"nvdsl.{name}(approx={approx!r}) takes True or False", code="bad-argument",
                         hint="pass approx=True for the fast approximation, or approx=False", loc=user_location())
    return elementwise(lambda v: _scalar(name, v, approx), (x,), f"nvdsl.{name}")


def _scalar(name: str, x, approx: bool) -> Value:
    x = python_number(x)
    if not isinstance(x, Value):
        raise TraceError(f"nvdsl.{name} needs a traced float, got {type(x).__name__} {x!r}", code="type-mismatch",
                         hint=f"use Python's math.{name} on Python numbers, or make a traced value with "
                              "nvdsl.constant(value, nvdsl.float32)", loc=user_location())
    d = x.dtype
    if not d.is_float or d.bits == 8:
        raise TraceError(f"nvdsl.{name} needs a float16, bfloat16, float32 or float64 value, got {d.name}",
                         code="type-mismatch", hint="convert first, e.g. x.to(nvdsl.float32)", loc=user_location())
    if approx and d == dt.float64:
        raise TraceError(f"nvdsl.{name}(approx=True) has no float64 instruction", code="no-approx",
                         hint="use the accurate function on float64, or convert to float32", loc=user_location())
    if approx and name not in _APPROX:
        raise TraceError(f"PTX has no fast instruction for {name}", code="no-approx",
                         hint=f"call nvdsl.{name}(x) without approx", loc=user_location())
    with at_user_line():
        wide = convert(x, dt.float32) if d.bits == 16 else x
        if approx:
            result = _approximate(name, wide.ir)
        elif name == "sqrt":  # the LLVM intrinsic, which the NVPTX back end lowers to sqrt.rn
            result = llvm.call_intrinsic(wide.ir.type, f"llvm.sqrt.{wide.dtype.mlir_type()}", [wide.ir], [], [])
        else:
            result = _ACCURATE[name](wide.ir)
        return convert(Value(result, wide.dtype), d)


def _approximate(name: str, x: ir.Value) -> ir.Value:
    f32 = ir.F32Type.get()
    intrinsic, before, after = _APPROX[name]
    if before is not None:
        x = arith.mulf(x, _constant(before, dt.float32).ir)
    # tanh: the NVPTX back end selects tanh.approx.f32 for llvm.tanh with the afn flag.
    flags = ir.Attribute.parse("#llvm.fastmath<afn>") if name == "tanh" else None
    y = llvm.call_intrinsic(f32, intrinsic, [x], [], [], fastmath_flags=flags)
    if after is not None:
        y = arith.mulf(y, _constant(after, dt.float32).ir)
    return y

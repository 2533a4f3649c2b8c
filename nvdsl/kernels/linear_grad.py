"""The activation's backward of a linear layer, fused into a GEMM: ``dZ = dY * act'(A @ W.T + bias)``.

A layer ``Y = act(A @ W.T + bias)`` (:func:`nvdsl.kernels.gemm.linear`) keeps no pre-activation ``Z``; its backward
recomputes it tile by tile in this kernel's accumulator and multiplies the derivative of the activation into the
incoming gradient in the epilogue, in float32, so ``Z`` is never stored (one GEMM and no elementwise pass, where
unfused it takes a GEMM writing ``Z``, a read of ``Z`` and ``dY`` and a write of ``dZ``).

    from nvdsl.kernels.linear_grad import linear_grad
    linear_grad(a, w, bias, dy, dz, activation="gelu")     # a (M, K), w (N, K), bias (N,), dy and dz (M, N)

The derivatives, from the task layer's elementwise operations (exp, the activations themselves):
``relu' = [z > 0]``; ``gelu' = Phi(z) + z phi(z)`` with ``Phi(z) = gelu(z) / z`` (1/2 at 0);
``gelu_tanh' = (1 + t) / 2 + z (1 - t^2) u' / 2`` with ``t = tanh(u) = 2 sigmoid(2u) - 1``;
``silu' = s (1 + z (1 - s))`` with ``s = sigmoid(z) = 1 / (1 + exp(-z))``.
"""

from __future__ import annotations

import functools
import math

from .. import tasks as nt
from ..errors import ArgumentError, user_location
from . import checks
from .gemm import _checked_once, _kernel, _output_shape, linear_mapping

_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_GELU_TANH_CUBIC = 0.044715


def _sigmoid(x):
    return 1.0 / (nt.exp(x * -1.0) + 1.0)


def _relu_grad(z):
    return nt.where(z > 0.0, z * 0.0 + 1.0, 0.0)


def _gelu_grad(z):
    ratio = nt.gelu(z) / z                    # Phi(z), but 0 / 0 at 0: the nested where's 1/2 there
    return nt.where(z > 0.0, ratio, nt.where(z < 0.0, ratio, 0.5)) + z * nt.exp(z * z * -0.5) * _INV_SQRT_2PI


def _gelu_tanh_grad(z):
    u = (z * z * _GELU_TANH_CUBIC + 1.0) * z * _SQRT_2_OVER_PI
    t = _sigmoid(u * 2.0) * 2.0 - 1.0
    slope = (z * z * (3 * _GELU_TANH_CUBIC * _SQRT_2_OVER_PI) + _SQRT_2_OVER_PI) * 0.5
    return (t + 1.0) * 0.5 + z * (t * t * -1.0 + 1.0) * slope


def _silu_grad(z):
    s = _sigmoid(z)
    return s * (z * (s * -1.0 + 1.0) + 1.0)


#: The derivatives of :data:`nvdsl.kernels.gemm.ACTIVATIONS` but "none" (whose backward needs no kernel).
GRADIENTS = {"relu": _relu_grad, "gelu": _gelu_grad, "gelu_tanh": _gelu_tanh_grad, "silu": _silu_grad}


@functools.lru_cache(maxsize=None)
def linear_grad_program(activation: str) -> nt.Task:
    """``dZ = dY * act'(A @ W.T + bias)``, W (N, K) as frameworks store it, bias (N,), dY and dZ (M, N)."""
    grad = GRADIENTS[activation]

    def linear_grad(dZ, A, W, bias, dY):
        BM, BN, BK = nt.tunable("BM", 128), nt.tunable("BN", 256), nt.tunable("BK", 64)
        Zt, At, Wt = nt.blocks(dZ, (BM, BN)), nt.blocks(A, (BM, BK)), nt.blocks(W, (BN, BK))
        bt, Dt = nt.blocks(bias, (BN,)), nt.blocks(dY, (BM, BN))
        for i, j in nt.prange(*Zt.grid):
            acc = nt.zeros((BM, BN), nt.float32)
            for k in nt.srange(At.grid[1]):
                acc += At[i, k] @ Wt[j, k].T
            Zt[i, j] = (grad(acc + bt[j][None, :]) * Dt[i, j]).astype(dZ.dtype)
    linear_grad.__name__ = f"linear_grad_{activation}"
    return nt.task(reads=("A", "W", "bias", "dY"), writes=("dZ",))(linear_grad)


def linear_grad(a, w, bias, dy, dz, *, activation: str, mapping: nt.Mapping | None = None) -> None:
    """``dz[:] = dy * act'(a @ w.T + bias)``: the gradient at the pre-activation of ``linear(a, w, bias, y,
    activation=activation)`` from the gradient ``dy`` at its output; ``activation`` one of "relu", "gelu",
    "gelu_tanh", "silu". Compiled once per dtype, shape, activation and mapping (default: ``linear``'s for dz's
    shape)."""
    if activation not in GRADIENTS:
        raise ArgumentError(f"activation={activation!r} must be one of {sorted(GRADIENTS)}", code="bad-argument",
                            hint="an activation of 'none' needs no kernel: dz is dy", loc=user_location())
    _checked_once(("linear_grad",), {"dz": dz, "a": a, "w": w, "bias": bias, "dy": dy},
                  {"dz": "MN", "a": "MK", "w": "NK", "bias": "N", "dy": "MN"},
                  {"dz": checks.OUTPUTS, "a": checks.HALVES, "w": checks.HALVES, "bias": checks.OUTPUTS,
                   "dy": checks.OUTPUTS}, written="dz", alike=("a", "w"))
    if mapping is None:
        mapping = linear_mapping(activation, *_output_shape(dz, 2))
    try:
        _kernel(linear_grad_program(activation), mapping)(dz, a, w, bias, dy)
    except ArgumentError as error:
        raise checks.by_callers_names(error, ("a", "w", "bias", "dy", "dz")) from None

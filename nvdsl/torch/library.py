"""nvdsl's library as functional torch ops with autograd: ``torch.ops.nvdsl.gemm``, ``torch.ops.nvdsl.linear`` and
``torch.ops.nvdsl.attention`` (with its backward, ``torch.ops.nvdsl.attention_backward``), its packed-sequence form
``torch.ops.nvdsl.attention_varlen`` (and ``attention_varlen_backward``) and ``torch.ops.nvdsl.attention_decode``.

Each op is a ``torch.library.custom_op`` returning a new tensor, with a fake implementation (shapes and dtypes
only) and a backward made of the same ops, so ``torch.compile(fullgraph=True)`` traces through forward and
backward without a graph break. An op's forward and backward run on CUDA tensors (the GPU) and on CPU tensors
(the interpreter).

Backward of ``c = a @ b``: ``da = dc @ b.T`` (``b.T`` is read as the K-major operand it is, no copy) and
``db = a.T @ dc`` (``a.T`` is read as the M-major A operand it is, no copy).
Backward of ``y = act(x @ w.T + bias)``: ``dz = dy * act'(z)`` by one nvdsl kernel
(``nvdsl.kernels.linear_grad``: z recomputed in a GEMM's accumulator, never stored, the derivative applied in its
epilogue), then ``dx = dz @ w`` and ``dw = dz.T @ x`` by nvdsl GEMMs, and ``dbias`` by a torch sum in float32.
Backward of attention: ``nvdsl.kernels.attention.attention_backward`` from the saved q, k, v, o and the forward's
log-sum-exp.

To add an op: a ``custom_op`` whose forward allocates its outputs and calls the ``nvdsl.kernels`` function, its
``register_fake`` giving the same shapes, and ``register_autograd`` with a backward in terms of ops.
"""

from __future__ import annotations

import inspect

import torch

from ..errors import ArgumentError
from ..kernels import attention as kernels_attention
from ..kernels import attention_varlen as kernels_varlen
from ..kernels import gemm as kernels
from ..kernels import linear_grad as kernels_grad
from .ops import at_user_line, user_line

#: The activations of :func:`linear`: those of ``nvdsl.kernels.gemm.linear``.
ACTIVATIONS = tuple(kernels.ACTIVATIONS)
_DTYPES = (torch.float16, torch.bfloat16)


def _check_operands(op: str, a, b, *, a_ndim=2, contracted=(1, 0)) -> None:
    if a.dtype not in _DTYPES or b.dtype != a.dtype:
        raise ArgumentError(f"nvdsl.torch.{op} takes float16 or bfloat16 operands of one dtype; got {a.dtype} and "
                            f"{b.dtype}", code="bad-dtype", hint="convert both with .half() or .bfloat16()",
                            loc=user_line())
    if a.dim() < a_ndim or b.dim() != 2 or a.shape[-1] != b.shape[contracted[1]]:
        raise ArgumentError(f"nvdsl.torch.{op}: shapes {list(a.shape)} and {list(b.shape)} do not multiply",
                            code="bad-shape", hint="a (..., K) with b (K, N) for gemm, w (N, K) for linear",
                            loc=user_line())
    if op == "linear" and a.shape[-1] == 0:
        raise ArgumentError(f"nvdsl.torch.linear: x {list(a.shape)} has no features (K = 0)", code="empty",
                            hint="give the layer at least one input feature", loc=user_line())
    if a.device != b.device:
        raise ArgumentError(f"nvdsl.torch.{op}: operands on {a.device} and {b.device}", code="bad-device",
                            hint="move them to one device", loc=user_line())


@torch.library.custom_op("nvdsl::gemm", mutates_args=())
def gemm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` for 2-D float16 or bfloat16 ``a`` (M, K) and ``b`` (K, N): a new (M, N) tensor of their dtype,
    accumulated in float32 (``nvdsl.kernels.gemm.gemm``). Strided views are taken as they are (``w.T`` with no
    copy); differentiable in both operands."""
    _check_operands("gemm", a, b)
    if a.shape[1] == 0:         # a sum of no products: linear's dW over a batch of no rows (an expert given none)
        return a.new_zeros((a.shape[0], b.shape[1]))
    c = a.new_empty((a.shape[0], b.shape[1]))
    with at_user_line():
        kernels.gemm(a, b, c)
    return c


@gemm.register_fake
def _(a, b):
    _check_operands("gemm", a, b)
    return a.new_empty((a.shape[0], b.shape[1]))


def _gemm_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _gemm_backward(ctx, dc):
    a, b = ctx.saved_tensors
    dc = _dense(dc)
    da = gemm(dc, b.T) if ctx.needs_input_grad[0] else None
    db = gemm(a.T, dc) if ctx.needs_input_grad[1] else None
    return da, db


gemm.register_autograd(_gemm_backward, setup_context=_gemm_setup)


def _dense(t):
    """A gradient as the GEMMs take it: torch hands broadcast ones (stride 0, e.g. of a ``sum()``), which no kernel
    may write or read as an array; a copy for those, the tensor itself otherwise."""
    return t if all(s != 0 or n == 1 for s, n in zip(t.stride(), t.shape)) else t.contiguous()


def _check_linear(x, w, bias, activation) -> None:
    _check_operands("linear", x, w, a_ndim=1, contracted=(1, 1))
    if activation is not None and activation not in ACTIVATIONS:
        raise ArgumentError(f"activation={activation!r} must be None or one of {sorted(ACTIVATIONS)}",
                            code="bad-argument", hint="leave activation out for none", loc=user_line())
    if bias is not None and (bias.shape != (w.shape[0],) or bias.dtype != x.dtype):
        raise ArgumentError(f"bias of shape {list(bias.shape)} and {bias.dtype} for a weight of {w.shape[0]} "
                            f"outputs in {x.dtype}", code="bad-shape",
                            hint=f"pass a ({w.shape[0]},) bias of the inputs' dtype", loc=user_line())


@torch.library.custom_op("nvdsl::linear", mutates_args=())
def linear(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None = None,
           activation: str | None = None) -> torch.Tensor:
    """``act(x @ w.T + bias)``, a linear layer as ``torch.nn.functional.linear`` with the activation fused into the
    GEMM's epilogue: ``x`` (..., K), ``w`` (N, K), ``bias`` (N,) or None, float16 or bfloat16; ``activation`` one of
    None, "relu", "gelu" (exact, erf), "gelu_tanh", "silu". Differentiable in x, w and bias."""
    _check_linear(x, w, bias, activation)
    x2 = x.reshape(-1, x.shape[-1])
    y = x.new_empty((x2.shape[0], w.shape[0]))
    with at_user_line():
        if bias is None and activation in (None, "none"):
            kernels.gemm(x2, w.T, y)                     # w.T: the K-major operand, no copy
        else:
            kernels.linear(x2, w, bias if bias is not None else x.new_zeros(w.shape[0]), y,
                           activation=activation or "none")
    return y.reshape(*x.shape[:-1], w.shape[0])


@linear.register_fake
def _(x, w, bias=None, activation=None):
    _check_linear(x, w, bias, activation)
    return x.new_empty((*x.shape[:-1], w.shape[0]))


def _linear_setup(ctx, inputs, output):
    x, w, bias, activation = inputs
    ctx.activation = activation
    ctx.has_bias = bias is not None
    ctx.save_for_backward(x, w, bias)


@torch.library.custom_op("nvdsl::linear_activation_grad", mutates_args=())
def activation_grad(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor, dy: torch.Tensor,
                    activation: str) -> torch.Tensor:
    """``dy * act'(x @ w.T + bias)`` for 2-D ``x`` (M, K), ``w`` (N, K), ``bias`` (N,) and ``dy`` (M, N): the
    gradient at the pre-activation of :func:`linear`, by one nvdsl kernel (``nvdsl.kernels.linear_grad``)."""
    dz = dy.new_empty(dy.shape)
    with at_user_line():
        kernels_grad.linear_grad(x, w, bias, dy, dz, activation=activation)
    return dz


@activation_grad.register_fake
def _(x, w, bias, dy, activation):
    return dy.new_empty(dy.shape)


def _linear_backward(ctx, dy):
    x, w, bias = ctx.saved_tensors
    k, n = x.shape[-1], w.shape[0]
    x2, dz = x.reshape(-1, k), _dense(dy).reshape(-1, n)
    if ctx.activation not in (None, "none"):       # dz = dy * act'(z), z recomputed in the same kernel
        dz = activation_grad(x2, w, bias if bias is not None else x.new_zeros(n), dz, ctx.activation)
    dx = gemm(dz, w).reshape(x.shape) if ctx.needs_input_grad[0] else None
    dw = gemm(dz.T, x2) if ctx.needs_input_grad[1] else None
    dbias = dz.sum(0, dtype=torch.float32).to(bias.dtype) if ctx.has_bias and ctx.needs_input_grad[2] else None
    return dx, dw, dbias, None


linear.register_autograd(_linear_backward, setup_context=_linear_setup)


# -- attention ----------------------------------------------------------------------------------------------------

@torch.library.custom_op("nvdsl::attention", mutates_args=())
def attention_with_lse(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                       scale: float | None = None, deterministic: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """``(o, lse)`` of ``nvdsl.kernels.attention.attention``: ``o`` (B, H, L, D) in q's dtype and the float32
    log-sum-exp (B, H, L) the backward reads. ``q`` (B, H, L, D), ``k`` and ``v`` (B, Hkv, Lk, D), float16 or
    bfloat16, views included (``x.transpose(1, 2)`` of a (B, L, H, D) projection). ``deterministic`` is the
    backward's (``nvdsl.kernels.attention.attention_backward``'s option)."""
    o = q.new_empty(q.shape)
    lse = q.new_empty(q.shape[:3], dtype=torch.float32)
    with at_user_line():
        kernels_attention.attention(q, k, v, o, lse, causal=causal, scale=scale)
    return o, lse


@attention_with_lse.register_fake
def _(q, k, v, causal=False, scale=None, deterministic=True):
    return q.new_empty(q.shape), q.new_empty(q.shape[:3], dtype=torch.float32)


@torch.library.custom_op("nvdsl::attention_backward", mutates_args=())
def attention_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor, lse: torch.Tensor,
                       do: torch.Tensor, causal: bool = False, scale: float | None = None,
                       deterministic: bool = True) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(dq, dk, dv)`` of :func:`attention_with_lse` given the gradient ``do`` of its ``o``
    (``nvdsl.kernels.attention.attention_backward``)."""
    dq, dk, dv = q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)
    with at_user_line():
        kernels_attention.attention_backward(q, k, v, o, lse, _dense(do), dq, dk, dv, causal=causal, scale=scale,
                                             deterministic=deterministic)
    return dq, dk, dv


@attention_backward.register_fake
def _(q, k, v, o, lse, do, causal=False, scale=None, deterministic=True):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _attention_setup(ctx, inputs, output):
    q, k, v, causal, scale, deterministic = inputs
    o, lse = output
    ctx.causal, ctx.scale, ctx.deterministic = causal, scale, deterministic
    ctx.mark_non_differentiable(lse)
    ctx.save_for_backward(q, k, v, o, lse)


def _attention_backward(ctx, do, dlse):
    q, k, v, o, lse = ctx.saved_tensors
    dq, dk, dv = attention_backward(q, k, v, o, lse, do, ctx.causal, ctx.scale, ctx.deterministic)
    return dq, dk, dv, None, None, None


attention_with_lse.register_autograd(_attention_backward, setup_context=_attention_setup)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
              scale: float | None = None, *, score_mod=None, mask_mod=None, mod_args=(),
              deterministic: bool = True) -> torch.Tensor:
    """``softmax(q kᵀ · scale [+ causal mask]) v``, as ``torch.nn.functional.scaled_dot_product_attention(q, k, v,
    is_causal=causal, scale=scale)`` with grouped-query heads (``k``, ``v`` may have fewer heads than ``q``):
    differentiable in q, k and v (head_dim 64, 128 or 256), and traced whole by
    ``torch.compile(fullgraph=True)``. ``score_mod``, ``mask_mod`` and ``mod_args`` (tensors) as
    ``nvdsl.kernels.attention.attention`` takes them (FlexAttention's meaning): each pair of mods is an op of its
    own (``torch.ops.nvdsl.attention_mods_<n>``, made at its first call: make that call before ``torch.compile``
    traces one, as before capturing a CUDA graph). ``deterministic`` as ``attention_backward`` takes it: False
    (D 64 or 128) adds dQ's parts into a float32 sum in any order (its last bits may differ between runs)."""
    if score_mod is None and mask_mod is None:
        if mod_args:
            raise ArgumentError("nvdsl.torch.attention: mod_args given without a score_mod or mask_mod to read them",
                                code="bad-argument", hint="pass score_mod= or mask_mod=, or leave mod_args out",
                                loc=user_line())
        return attention_with_lse(q, k, v, causal, scale, deterministic)[0]
    mod_args = tuple(mod_args)
    return _attention_with_mods(score_mod, mask_mod, len(mod_args))(q, k, v, *mod_args, causal, scale,
                                                                     deterministic)[0]


_MOD_OPS: dict = {}         # (score_mod, mask_mod, arrays) -> the forward op that runs them
_DEFAULTS = {"causal": False, "scale": None, "deterministic": True}     # the mods ops' flags, after the arrays
_FLAGS = tuple(_DEFAULTS)


def _with_signature(fn, parameters: list[str], annotations: dict, returns):
    """``fn(*values)`` as a function of the parameters ``parameters`` (``torch.library.custom_op`` reads its
    schema from the signature), called with every value in order, defaults applied."""
    P = inspect.Parameter
    signature = inspect.Signature(
        [P(name, P.POSITIONAL_OR_KEYWORD, annotation=annotations.get(name, torch.Tensor),
           **({"default": _DEFAULTS[name]} if name in _DEFAULTS else {}))
         for name in parameters], return_annotation=returns)

    def call(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return fn(*bound.arguments.values())
    call.__signature__ = signature
    call.__name__ = fn.__name__
    return call


def _attention_with_mods(score_mod, mask_mod, arrays: int):
    """The torch op (with its backward op and autograd) running attention with these mods and ``arrays`` tensors
    for them to read (``mod0``, ``mod1``, ...), made once per such triple."""
    found = _MOD_OPS.get((score_mod, mask_mod, arrays))
    if found is not None:
        return found
    name = f"nvdsl::attention_mods_{len(_MOD_OPS)}"
    mods = {"score_mod": score_mod, "mask_mod": mask_mod}
    names = [f"mod{n}" for n in range(arrays)]
    flags = {"causal": bool, "scale": float | None, "deterministic": bool}
    Tensor = torch.Tensor

    def forward_impl(q, k, v, *rest):
        *mod_args, causal, scale, _ = rest
        o = q.new_empty(q.shape)
        lse = q.new_empty(q.shape[:3], dtype=torch.float32)
        with at_user_line():
            kernels_attention.attention(q, k, v, o, lse, causal=causal, scale=scale, mod_args=tuple(mod_args), **mods)
        return o, lse
    forward = torch.library.custom_op(name, mutates_args=())(_with_signature(
        forward_impl, ["q", "k", "v", *names, *_FLAGS], flags, tuple[Tensor, Tensor]))
    forward.register_fake(lambda q, *rest, **kw: (q.new_empty(q.shape), q.new_empty(q.shape[:3], dtype=torch.float32)))

    def backward_impl(q, k, v, o, lse, do, *rest):
        *mod_args, causal, scale, deterministic = rest
        dq, dk, dv = q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)
        with at_user_line():
            kernels_attention.attention_backward(q, k, v, o, lse, _dense(do), dq, dk, dv, causal=causal, scale=scale,
                                                 mod_args=tuple(mod_args), deterministic=deterministic, **mods)
        return dq, dk, dv
    backward = torch.library.custom_op(name + "_backward", mutates_args=())(_with_signature(
        backward_impl, ["q", "k", "v", "o", "lse", "do", *names, *_FLAGS], flags,
        tuple[Tensor, Tensor, Tensor]))
    backward.register_fake(lambda q, k, v, *rest, **kw: (q.new_empty(q.shape), k.new_empty(k.shape),
                                                         v.new_empty(v.shape)))

    def setup(ctx, inputs, output):
        q, k, v, *mod_args, causal, scale, deterministic = inputs
        ctx.causal, ctx.scale, ctx.deterministic = causal, scale, deterministic
        ctx.mark_non_differentiable(output[1])
        ctx.save_for_backward(q, k, v, *output, *mod_args)

    def gradients(ctx, do, dlse):
        q, k, v, o, lse, *mod_args = ctx.saved_tensors
        dq, dk, dv = backward(q, k, v, o, lse, do, *mod_args, ctx.causal, ctx.scale, ctx.deterministic)
        return (dq, dk, dv) + (None,) * (arrays + len(_FLAGS))

    forward.register_autograd(gradients, setup_context=setup)
    _MOD_OPS[(score_mod, mask_mod, arrays)] = forward
    return forward


# -- packed sequences and decode ----------------------------------------------------------------------------------

@torch.library.custom_op("nvdsl::attention_varlen", mutates_args=())
def attention_varlen_with_lse(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens_q: torch.Tensor,
                              cu_seqlens_k: torch.Tensor, causal: bool = False,
                              scale: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(o, lse)`` of ``nvdsl.kernels.attention_varlen.attention_varlen``: ``q`` (Tq, H, D), ``k`` and ``v``
    (Tk, Hkv, D) packed sequences, ``cu_seqlens_q``/``_k`` (S + 1,) int32 on their device; ``o`` (Tq, H, D) and
    the float32 log-sum-exp (H, Tq)."""
    o = q.new_empty(q.shape)
    lse = q.new_empty((q.shape[1], q.shape[0]), dtype=torch.float32)
    with at_user_line():
        kernels_varlen.attention_varlen(q, k, v, o, cu_seqlens_q, cu_seqlens_k, lse, causal=causal, scale=scale)
    return o, lse


@attention_varlen_with_lse.register_fake
def _(q, k, v, cu_seqlens_q, cu_seqlens_k, causal=False, scale=None):
    return q.new_empty(q.shape), q.new_empty((q.shape[1], q.shape[0]), dtype=torch.float32)


@torch.library.custom_op("nvdsl::attention_varlen_backward", mutates_args=())
def attention_varlen_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
                              lse: torch.Tensor, do: torch.Tensor, cu_seqlens_q: torch.Tensor,
                              cu_seqlens_k: torch.Tensor, causal: bool = False,
                              scale: float | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(dq, dk, dv)`` of :func:`attention_varlen_with_lse` given the gradient ``do`` of its ``o``."""
    dq, dk, dv = q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)
    with at_user_line():
        kernels_varlen.attention_varlen_backward(q, k, v, o, lse, _dense(do), dq, dk, dv, cu_seqlens_q, cu_seqlens_k,
                                                 causal=causal, scale=scale)
    return dq, dk, dv


@attention_varlen_backward.register_fake
def _(q, k, v, o, lse, do, cu_seqlens_q, cu_seqlens_k, causal=False, scale=None):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _varlen_setup(ctx, inputs, output):
    q, k, v, cu_seqlens_q, cu_seqlens_k, causal, scale = inputs
    o, lse = output
    ctx.causal, ctx.scale = causal, scale
    ctx.mark_non_differentiable(lse)
    ctx.save_for_backward(q, k, v, o, lse, cu_seqlens_q, cu_seqlens_k)


def _varlen_backward(ctx, do, dlse):
    q, k, v, o, lse, cu_seqlens_q, cu_seqlens_k = ctx.saved_tensors
    dq, dk, dv = attention_varlen_backward(q, k, v, o, lse, do, cu_seqlens_q, cu_seqlens_k, ctx.causal, ctx.scale)
    return dq, dk, dv, None, None, None, None


attention_varlen_with_lse.register_autograd(_varlen_backward, setup_context=_varlen_setup)


def attention_varlen(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens_q: torch.Tensor,
                     cu_seqlens_k: torch.Tensor, causal: bool = False, scale: float | None = None) -> torch.Tensor:
    """Attention within each of the packed sequences (FlashAttention's ``flash_attn_varlen_func`` convention,
    bottom-right causal): ``q`` (Tq, H, D), ``k``, ``v`` (Tk, Hkv, D), ``cu_seqlens_q``/``_k`` (S + 1,) int32;
    returns ``o`` (Tq, H, D), differentiable in q, k and v (head_dim 64, 128 or 256)."""
    return attention_varlen_with_lse(q, k, v, cu_seqlens_q, cu_seqlens_k, causal, scale)[0]


@torch.library.custom_op("nvdsl::attention_decode", mutates_args=())
def attention_decode(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, cache_seqlens: torch.Tensor,
                     causal: bool = True, scale: float | None = None) -> torch.Tensor:
    """``nvdsl.kernels.attention_varlen.attention_decode``: the newest tokens ``q`` (B, H, Lq, D) of each sequence
    against its cache ``k_cache``, ``v_cache`` (B, Hkv, Lmax, D) holding ``cache_seqlens[b]`` tokens; returns
    ``o`` (B, H, Lq, D). Inference only (no gradient)."""
    o = q.new_empty(q.shape)
    with at_user_line():
        kernels_varlen.attention_decode(q, k_cache, v_cache, o, cache_seqlens, causal=causal, scale=scale)
    return o


@attention_decode.register_fake
def _(q, k_cache, v_cache, cache_seqlens, causal=True, scale=None):
    return q.new_empty(q.shape)

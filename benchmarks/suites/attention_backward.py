"""Attention backward: dQ, dK, dV of ``O = softmax(Q Kᵀ [+ causal mask]) V`` given dO, fp16 or bf16;
10·B·H·L²·D FLOPs (2.5x the forward's, the five products of FlashAttention's count; half under a causal mask).
nvdsl's default (deterministic) backward recomputes the scores in its dQ pass, so it executes 14·B·H·L²·D: the
table counts the same 10 for all.

Inputs are drawn once per shape as contiguous (B, H, L, D) tensors, Q and K scaled by ``D^-1/4`` (unit-variance
logits, ``scale=1.0`` everywhere). Timed: the backward alone.

* ``sdpa-cudnn``, ``sdpa-flash``: ``torch.autograd.grad`` of ``scaled_dot_product_attention`` (one backend, via
  ``sdpa_kernel``) through a forward run once outside the timing (``retain_graph=True``);
* ``nvdsl-attention-backward``: ``nvdsl.kernels.attention.attention_backward`` given the output and log-sum-exp
  of ``nvdsl.kernels.attention.attention`` (computed once, outside the timing): dQ by its own pass;
* ``nvdsl-attention-backward-summed-dq``: the same with ``deterministic=False``: at D 64 and 128, dQ summed in
  float32 by the dK/dV kernel (its additions in any order).

Gradients are checked against the flash backend's (relative Frobenius error of dQ, dK and dV).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Callable

from .. import harness
# the forward's shapes, table and plot
from .attention import BATCH, HEAD_DIMS, HEADS, PLOT, QUICK_SEQ, SEQ, TABLE_METRIC, head_dims, row_label  # noqa: F401

RTOL = 2e-2
_DTYPES = {"fp16": "float16", "bf16": "bfloat16"}


def shapes(args) -> list[dict]:
    dtypes = [d for d in (args.dtypes.split(",") if getattr(args, "dtypes", "") else ["fp16"]) if d]
    return [{"dtype": dtype, "B": BATCH, "H": HEADS, "L": L, "D": D, "causal": causal}
            for dtype in dtypes for D in head_dims(args) for causal in (False, True)
            for L in (QUICK_SEQ if args.quick else SEQ)]


def flops(p: dict) -> float:
    return 10 * p["B"] * p["H"] * p["L"] ** 2 * p["D"] / (2 if p["causal"] else 1)


def draw_inputs(p: dict):
    """q, k, v and dO of a shape: contiguous (B, H, L, D) of its dtype, Q and K scaled by ``D^-1/4``."""
    import torch

    dtype = getattr(torch, _DTYPES[p["dtype"]])
    shape, scale = (p["B"], p["H"], p["L"], p["D"]), p["D"] ** -0.25
    return (harness.randn(shape, dtype, scale=scale, seed=1), harness.randn(shape, dtype, scale=scale, seed=2),
            harness.randn(shape, dtype, seed=3), harness.randn(shape, dtype, seed=4))


def _operands(p: dict):
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q, k, v, do = draw_inputs(p)
    leaves = [x.detach().clone().requires_grad_() for x in (q, k, v)]
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        out = torch.nn.functional.scaled_dot_product_attention(*leaves, scale=1.0, is_causal=p["causal"])
    ref = torch.autograd.grad(out, leaves, do)
    return SimpleNamespace(q=q, k=k, v=v, do=do, causal=p["causal"], ref=ref)


def _sdpa(backend_name: str) -> Callable:
    def prepare(ops, args) -> harness.Prepared:
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel

        backend = getattr(SDPBackend, backend_name)
        leaves = [x.detach().clone().requires_grad_() for x in (ops.q, ops.k, ops.v)]
        with sdpa_kernel([backend]):
            out = torch.nn.functional.scaled_dot_product_attention(*leaves, scale=1.0, is_causal=ops.causal)
        call = lambda: torch.autograd.grad(out, leaves, ops.do, retain_graph=True)   # noqa: E731
        grads = call()
        torch.cuda.synchronize()
        checks = [harness.check_close(g, r, RTOL) for g, r in zip(grads, ops.ref)]
        check = harness.Check(ok=all(c.ok for c in checks), rel_err=max(c.rel_err for c in checks),
                              nonfinite=sum(c.nonfinite for c in checks), tolerance=RTOL)
        return harness.Prepared(call, check, {"backend": backend_name})
    return prepare


def _nvdsl(deterministic: bool) -> Callable:
    def prepare(ops, args) -> harness.Prepared:
        import torch
        from nvdsl.kernels.attention import FUSED_DQ_HEAD_DIMS, attention, attention_backward

        o = torch.empty_like(ops.q)
        lse = torch.empty(ops.q.shape[:3], dtype=torch.float32, device=ops.q.device)
        attention(ops.q, ops.k, ops.v, o, lse, causal=ops.causal, scale=1.0)
        dq, dk, dv = (torch.empty_like(x) for x in (ops.q, ops.k, ops.v))
        call = lambda: attention_backward(ops.q, ops.k, ops.v, o, lse, ops.do, dq, dk, dv,   # noqa: E731
                                          causal=ops.causal, scale=1.0, deterministic=deterministic)
        check = harness.checked_call(call, dq, ops.ref[0], RTOL, also=((dk, ops.ref[1]), (dv, ops.ref[2])))
        fused = not deterministic and ops.q.shape[-1] in FUSED_DQ_HEAD_DIMS
        return harness.Prepared(call, check, {"passes": "D, dK+dV+dQ (summed), dQ cast" if fused else
                                              "D, dQ, dK+dV"})
    return prepare


def systems() -> dict[str, Callable]:
    return {"sdpa-cudnn": _sdpa("CUDNN_ATTENTION"), "sdpa-flash": _sdpa("FLASH_ATTENTION"),
            "nvdsl-attention-backward": _nvdsl(True), "nvdsl-attention-backward-summed-dq": _nvdsl(False)}


def run(args) -> list[harness.Measurement]:
    return harness.run_shapes("attention_backward", shapes(args), _operands, systems(), flops, args)

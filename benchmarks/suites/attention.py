"""Attention forward: ``O = softmax(Q Kᵀ [+ causal mask]) V``, fp16; 4·B·H·L²·D FLOPs (half under a causal mask).

Inputs are drawn once per shape in the (batch, seq, heads, head_dim) "BSHD"
layout, with ``Q`` and ``K`` scaled by ``D^-1/4`` so the logits have unit
variance; every system then computes the softmax with no further scaling (the
Pallas kernel has no scale parameter; torch SDPA and nvdsl get ``scale=1.0``),
so all solve exactly the same problem on the same values. Layout by system:

* ``sdpa-cudnn``, ``sdpa-flash`` (FlashAttention-2): ``torch.nn.functional.scaled_dot_product_attention``
  restricted to one backend with ``torch.nn.attention.sdpa_kernel``; given
  contiguous (B, H, L, D) copies (made once, outside the timing).
* ``pallas``: JAX Pallas ``attention_mgpu.attention`` on the BSHD tensors (non-causal only, unless this
  JAX's ``TuningConfig`` has a ``causal`` field).
* ``nvdsl-attention`` (``nvdsl.kernels.attention``): the (B, H, L, D) copies.
* ``*-bshd`` systems take what a model has, the BSHD projections, as (B, H, L, D) views
  (``x.transpose(1, 2)``, no copy) and write O into a BSHD buffer the same way: ``sdpa-cudnn-bshd`` and
  ``nvdsl-attention-bshd``; ``nvdsl-attention-bshd-copies`` makes the ``.contiguous()`` copies a kernel that
  refuses views needs (q, k, v in, O back), inside the timing, to show what they cost.

Outputs are checked against a float32 torch reference computed in chunks.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Callable

from .. import harness

BATCH, HEADS = 4, 16
HEAD_DIMS = (128, 64)
SEQ = (1024, 4096, 16384)
QUICK_SEQ = (4096,)
RTOL = 1e-2

TABLE_METRIC = "tflops"
PLOT = {"x": "L", "xlabel": f"sequence length L (B = {BATCH}, H = {HEADS})", "group": ("dtype", "D", "causal"),
        "peak": True}

# nvdsl's attention kernels: name -> fn(q, k, v, o, causal) -> None on torch CUDA fp16 tensors of shape
# (B, H, L, D), writing o = softmax(q kᵀ) v (no scaling) on the current stream.
NVDSL_ATTENTION: dict[str, Callable] = {}


def head_dims(args) -> tuple[int, ...]:
    """The head dims a run measures: ``--head-dims``, else 128 (``--quick``) or :data:`HEAD_DIMS`."""
    given = getattr(args, "head_dims", "")
    if given:
        return tuple(int(d) for d in given.split(",") if d)
    return (128,) if args.quick else HEAD_DIMS


def shapes(args) -> list[dict]:
    return [{"dtype": "fp16", "B": BATCH, "H": HEADS, "L": L, "D": D, "causal": causal}
            for D in head_dims(args) for causal in (False, True)
            for L in (QUICK_SEQ if args.quick else SEQ)]


def row_label(p: dict) -> str:
    return f"{p['dtype']} B={p['B']} H={p['H']} L={p['L']} D={p['D']}{' causal' if p['causal'] else ''}"


def flops(p: dict) -> float:
    return 4 * p["B"] * p["H"] * p["L"] ** 2 * p["D"] / (2 if p["causal"] else 1)


def reference(q, k, v, causal: bool = False, *, budget_bytes: int = 1 << 30):
    """float32 softmax(q kᵀ [+ causal mask]) v for BSHD tensors, a block of queries at a time (bounded memory)."""
    import torch

    B, L, H, D = q.shape
    out = torch.empty((B, L, H, D), dtype=torch.float32, device=q.device)
    rows = max(1, budget_bytes // (H * k.shape[1] * 4))
    with harness.exact_fp32():
        for b in range(B):
            kb = k[b].float().transpose(0, 1)          # (H, Lk, D)
            vb = v[b].float().transpose(0, 1)
            for s in range(0, L, rows):
                qb = q[b, s:s + rows].float().transpose(0, 1)   # (H, rows, D)
                scores = qb @ kb.transpose(1, 2)
                if causal:
                    query = torch.arange(s, s + qb.shape[1], device=q.device)[:, None]
                    key = torch.arange(k.shape[1], device=q.device)[None, :]
                    scores = scores.masked_fill(key > query, float("-inf"))
                p = torch.softmax(scores, dim=-1)
                out[b, s:s + rows] = (p @ vb).transpose(0, 1)
    return out


def _operands(p: dict):
    import torch

    shape, scale = (p["B"], p["L"], p["H"], p["D"]), p["D"] ** -0.25
    q = harness.randn(shape, torch.float16, scale=scale, seed=1)
    k = harness.randn(shape, torch.float16, scale=scale, seed=2)
    v = harness.randn(shape, torch.float16, seed=3)
    bhld = lambda t: t.transpose(1, 2).contiguous()
    return SimpleNamespace(q=q, k=k, v=v, q_t=bhld(q), k_t=bhld(k), v_t=bhld(v), causal=p["causal"],
                           ref=reference(q, k, v, p["causal"]))


def _sdpa(backend_name: str) -> Callable:
    def prepare(ops, args) -> harness.Prepared:
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel

        backend = getattr(SDPBackend, backend_name)

        def call():
            with sdpa_kernel([backend]):
                return torch.nn.functional.scaled_dot_product_attention(ops.q_t, ops.k_t, ops.v_t, scale=1.0,
                                                                        is_causal=ops.causal)

        out = call()
        torch.cuda.synchronize()
        check = harness.check_close(out.transpose(1, 2), ops.ref, RTOL)  # a fresh output: nothing to poison
        return harness.Prepared(call, check, {"backend": backend_name, "layout": "BHLD contiguous"})
    return prepare


def _pallas(ops, args) -> harness.Prepared:
    from ..peers import pallas

    call, info = pallas.prepare_attention(ops.q, ops.k, ops.v, causal=ops.causal)
    return pallas.prepared(call, info, ops.ref, RTOL)


def _nvdsl(fn: Callable) -> Callable:
    def prepare(ops, args) -> harness.Prepared:
        import torch

        o = torch.empty_like(ops.q_t)
        call = lambda: fn(ops.q_t, ops.k_t, ops.v_t, o, ops.causal)
        check = harness.checked_call(call, o.transpose(1, 2), ops.ref, RTOL)
        return harness.Prepared(call, check, {"layout": "BHLD contiguous"})
    return prepare


def _sdpa_bshd(ops, args) -> harness.Prepared:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q, k, v = (x.transpose(1, 2) for x in (ops.q, ops.k, ops.v))

    def call():
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=1.0, is_causal=ops.causal)

    out = call()
    torch.cuda.synchronize()
    check = harness.check_close(out.transpose(1, 2), ops.ref, RTOL)
    return harness.Prepared(call, check, {"backend": "CUDNN_ATTENTION", "layout": "BSHD views"})


def _nvdsl_bshd(copies: bool) -> Callable:
    def prepare(ops, args) -> harness.Prepared:
        import torch
        from nvdsl.kernels.attention import attention

        out = torch.empty_like(ops.q)                                   # (B, L, H, D)
        views = [x.transpose(1, 2) for x in (ops.q, ops.k, ops.v)]

        if copies:
            o_t = torch.empty_like(ops.q_t)

            def call():
                attention(*(x.contiguous() for x in views), o_t, causal=ops.causal, scale=1.0)
                out.copy_(o_t.transpose(1, 2))
        else:
            call = lambda: attention(*views, out.transpose(1, 2), causal=ops.causal, scale=1.0)
        check = harness.checked_call(call, out, ops.ref, RTOL)
        return harness.Prepared(call, check, {"layout": "BSHD, copied to BHLD and back" if copies else "BSHD views"})
    return prepare


def _register_nvdsl() -> None:
    from nvdsl.kernels.attention import attention, task_mapping

    NVDSL_ATTENTION.setdefault("nvdsl-attention", lambda q, k, v, o, causal: attention(q, k, v, o, causal=causal,
                                                                                        scale=1.0))

    def scheduled(persistent: bool):     # the default mapping, a block per SM looping over tiles or one per tile
        def run(q, k, v, o, causal):
            mapping = task_mapping(q.shape[-1], causal, q.shape[-2]).replace(persistent=persistent)
            attention(q, k, v, o, causal=causal, scale=1.0, mapping=mapping)
        return run
    NVDSL_ATTENTION.setdefault("nvdsl-attention-persistent", scheduled(True))
    NVDSL_ATTENTION.setdefault("nvdsl-attention-per-tile", scheduled(False))


def systems() -> dict[str, Callable]:
    _register_nvdsl()
    found = {"sdpa-cudnn": _sdpa("CUDNN_ATTENTION"), "sdpa-flash": _sdpa("FLASH_ATTENTION"), "pallas": _pallas,
             "sdpa-cudnn-bshd": _sdpa_bshd, "nvdsl-attention-bshd": _nvdsl_bshd(False),
             "nvdsl-attention-bshd-copies": _nvdsl_bshd(True)}
    for name, fn in NVDSL_ATTENTION.items():
        found[name if name.startswith("nvdsl") else f"nvdsl-{name}"] = _nvdsl(fn)
    return found


def run(args) -> list[harness.Measurement]:
    return harness.run_shapes("attention", shapes(args), _operands, systems(), flops, args)

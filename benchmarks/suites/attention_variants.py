"""Attention variants, forward and backward: a soft cap on the scores, a sliding window, a document mask and
causal written as a ``mask_mod``, fp16 or bf16, B4 H16 D128, L 1024, 4096 and 16384 (``--quick``: 4096).

FLOPs count the work the variant leaves: 4·B·H·D per kept (query, key) pair forward, 10·B·H·D backward, so a
variant's TFLOP/s next to plain attention's says how close it comes to plain attention's time for the same
unmasked work. Variants (``W`` = 1024):

* ``softcap``: ``20 * tanh(s / 20)`` (Gemma 2), every key (nvdsl's mod with ``nt.tanh(..., approx=True)``, PTX's
  ``tanh.approx``, 2^-11 relative, as FlashAttention-3's soft cap; FlexAttention's ``torch.tanh``);
* ``sliding_window``: causal, and ``q - kv < W``;
* ``document``: causal within documents of 256 to 2048 tokens, packed (seeded), the document ids an argument;
* ``causal_mask_mod``: ``q >= kv`` as a ``mask_mod``;
* ``varlen``: the documents of ``document`` as packed sequences, the B batches' one after another along one axis
  (FlashAttention's varlen convention: ``nvdsl.kernels.attention_varlen``, causal, offsets on the device); the
  other systems run it as ``document`` (FlexAttention's way to pack sequences).

Systems (inputs contiguous (B, H, L, D), Q and K scaled by ``D^-1/4``, ``scale=1.0``):

* ``nvdsl-variant``: ``nvdsl.kernels.attention.attention`` / ``attention_backward`` with the variant's mods;
* ``nvdsl-plain``: plain nvdsl attention on the same inputs (``causal=True`` beside ``causal_mask_mod``, no mask
  beside the others), counted with its own FLOPs: the speed a variant is measured against;
* ``flex-attention``: ``torch.compile(flex_attention)`` with the same ``score_mod`` / a ``BlockMask`` from
  ``create_block_mask`` (made once, outside the timing), the reference the others are checked against.

Backward: gradients of a forward run once outside the timing (``torch.autograd.grad`` with ``retain_graph``);
nvdsl's backward is given the output and log-sum-exp of its own forward.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Callable

from .. import harness
from .attention_backward import draw_inputs

BATCH, HEADS = 4, 16
SEQ, QUICK_SEQ = (1024, 4096, 16384), (4096,)
HEAD_DIMS = (128,)          # D = 64 left out to keep a run within a device call (add it here to measure it)
VARIANTS = ("softcap", "sliding_window", "document", "causal_mask_mod", "varlen")
CAP, WINDOW = 20.0, 1024
RTOL = 2e-2

TABLE_METRIC = "tflops"
PLOT = {"x": "L", "xlabel": f"sequence length L (B = {BATCH}, H = {HEADS})",
        "group": ("dtype", "D", "variant", "direction"), "peak": False}


def shapes(args) -> list[dict]:
    dtypes = [d for d in (args.dtypes.split(",") if getattr(args, "dtypes", "") else ["fp16"]) if d]
    variants = [v for v in getattr(args, "variants", "").split(",") if v] or list(VARIANTS)
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        raise SystemExit(f"attention_variants: unknown --variants {unknown}; choose from {', '.join(VARIANTS)}")
    return [{"dtype": dtype, "B": BATCH, "H": HEADS, "L": L, "D": D, "variant": variant, "direction": direction}
            for dtype in dtypes for D in HEAD_DIMS for direction in ("forward", "backward")
            for variant in variants for L in (QUICK_SEQ if args.quick else SEQ)]


def row_label(p: dict) -> str:
    return f"{p['dtype']} B={p['B']} H={p['H']} L={p['L']} D={p['D']} {p['variant']} {p['direction']}"


def document_ids(length: int, seed: int = 0):
    """Packed documents of 256 to 2048 tokens: the document id of each position (a NumPy int32 vector)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    ids, start, doc = np.empty(length, np.int32), 0, 0
    while start < length:
        size = int(rng.integers(256, 2049))
        ids[start:start + size] = doc
        start, doc = start + size, doc + 1
    return ids


def kept_pairs(p: dict) -> int:
    """The (query, key) pairs the variant attends to, per (batch, head)."""
    import numpy as np

    L = p["L"]
    if p["variant"] == "softcap":
        return L * L
    if p["variant"] == "causal_mask_mod":
        return L * (L + 1) // 2
    if p["variant"] == "sliding_window":
        return int(np.minimum(np.arange(1, L + 1), WINDOW).sum())
    sizes = np.bincount(document_ids(L))
    return int((sizes * (sizes + 1) // 2).sum())


def _per_pair(p: dict) -> int:
    return 4 if p["direction"] == "forward" else 10


def flops(p: dict) -> float:
    return _per_pair(p) * p["B"] * p["H"] * p["D"] * kept_pairs(p)


def _plain_flops(p: dict) -> float:
    pairs = p["L"] * (p["L"] + 1) // 2 if p["variant"] == "causal_mask_mod" else p["L"] ** 2
    return _per_pair(p) * p["B"] * p["H"] * p["D"] * pairs


# -- the variants, in nvdsl's tile math and in torch --------------------------------------------------------------

def _nvdsl_mods(variant: str, doc):
    from nvdsl import tasks as nt

    def softcap(score, b, h, q_idx, kv_idx):
        return CAP * nt.tanh(score / CAP, approx=True)

    def sliding_window(b, h, q_idx, kv_idx):
        return (q_idx >= kv_idx) & (q_idx - kv_idx < WINDOW)

    def document(b, h, q_idx, kv_idx, ids):
        return (q_idx >= kv_idx) & (ids[q_idx] == ids[kv_idx])

    def causal(b, h, q_idx, kv_idx):
        return q_idx >= kv_idx

    return {"softcap": {"score_mod": softcap}, "sliding_window": {"mask_mod": sliding_window},
            "document": {"mask_mod": document, "mod_args": (doc,)}, "causal_mask_mod": {"mask_mod": causal},
            "varlen": {"mask_mod": document, "mod_args": (doc,)}}[variant]


def _flex_mods(variant: str, doc, L: int):
    import torch
    from torch.nn.attention.flex_attention import create_block_mask

    if variant == "softcap":
        return {"score_mod": lambda score, b, h, q_idx, kv_idx: CAP * torch.tanh(score / CAP)}
    masks = {"sliding_window": lambda b, h, q_idx, kv_idx: (q_idx >= kv_idx) & (q_idx - kv_idx < WINDOW),
             "document": lambda b, h, q_idx, kv_idx: (q_idx >= kv_idx) & (doc[q_idx] == doc[kv_idx]),
             "varlen": lambda b, h, q_idx, kv_idx: (q_idx >= kv_idx) & (doc[q_idx] == doc[kv_idx]),
             "causal_mask_mod": lambda b, h, q_idx, kv_idx: q_idx >= kv_idx}
    return {"block_mask": create_block_mask(masks[variant], None, None, L, L, device="cuda")}


def _operands(p: dict):
    import torch
    from torch.nn.attention.flex_attention import flex_attention

    q, k, v, do = draw_inputs(p)
    doc = torch.from_numpy(document_ids(p["L"])).cuda()
    # the backward is timed by calling it again on one graph (retain_graph), which donated buffers forbid
    import torch._dynamo.config as dynamo_config
    import torch._functorch.config as functorch_config
    functorch_config.donated_buffer = False
    # one compile per shape and variant: past dynamo's default of 8 recompiles flex_attention would run eagerly
    # (materializing the L x L scores: 64 GiB at L = 16384)
    dynamo_config.cache_size_limit = dynamo_config.accumulated_cache_size_limit = 1024
    flex = torch.compile(flex_attention, dynamic=False)
    mods = _flex_mods(p["variant"], doc, p["L"])
    leaves = [x.detach().clone().requires_grad_() for x in (q, k, v)]
    out = flex(*leaves, scale=1.0, **mods)
    ref_grads = torch.autograd.grad(out, leaves, do) if p["direction"] == "backward" else None
    return SimpleNamespace(q=q, k=k, v=v, do=do, doc=doc, p=p, flex=flex, flex_mods=mods, ref_out=out.detach(),
                           ref_grads=ref_grads)


def _checked(call, outputs, refs) -> harness.Check:
    return harness.checked_call(call, outputs[0], refs[0], RTOL, also=tuple(zip(outputs[1:], refs[1:])))


def _flex(ops, args) -> harness.Prepared:
    import torch

    if ops.p["direction"] == "forward":
        call = lambda: ops.flex(ops.q, ops.k, ops.v, scale=1.0, **ops.flex_mods)    # noqa: E731
        return harness.Prepared(call, None, {"compiled": "torch.compile(flex_attention)"})
    leaves = [x.detach().clone().requires_grad_() for x in (ops.q, ops.k, ops.v)]
    out = ops.flex(*leaves, scale=1.0, **ops.flex_mods)
    call = lambda: torch.autograd.grad(out, leaves, ops.do, retain_graph=True)       # noqa: E731
    return harness.Prepared(call, None, {"compiled": "torch.compile(flex_attention)"})


def packed_offsets(batch: int, length: int):
    """The ``cu_seqlens`` (int32) of the documents of :func:`document_ids` in ``batch`` sequences of ``length``
    tokens, packed one after another."""
    import numpy as np

    sizes = np.bincount(document_ids(length))
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return np.append((starts[None] + length * np.arange(batch)[:, None]).ravel(), batch * length).astype(np.int32)


def _packed(x):
    """(B, H, L, D) as packed (B * L, H, D) sequences (a copy, made outside the timing)."""
    return x.transpose(1, 2).reshape(-1, x.shape[1], x.shape[3]).contiguous()


def _nvdsl_varlen(ops) -> harness.Prepared:
    import torch
    from nvdsl.kernels.attention_varlen import attention_varlen, attention_varlen_backward

    cu = torch.from_numpy(packed_offsets(ops.p["B"], ops.p["L"])).cuda()
    q, k, v, do = map(_packed, (ops.q, ops.k, ops.v, ops.do))
    o = torch.empty_like(q)
    lse = torch.empty(q.shape[1], q.shape[0], dtype=torch.float32, device=q.device)
    forward = lambda: attention_varlen(q, k, v, o, cu, cu, lse, causal=True, scale=1.0)     # noqa: E731
    facts = {"mods": "cu_seqlens", "sequences": str(len(cu) - 1)}
    if ops.p["direction"] == "forward":
        return harness.Prepared(forward, _checked(forward, [o], [_packed(ops.ref_out)]), facts)
    forward()
    grads = [torch.empty_like(x) for x in (q, k, v)]
    call = lambda: attention_varlen_backward(q, k, v, o, lse, do, *grads, cu, cu, causal=True,  # noqa: E731
                                             scale=1.0)
    return harness.Prepared(call, _checked(call, grads, [_packed(g) for g in ops.ref_grads]), facts)


def _nvdsl(plain: bool) -> Callable:
    def prepare(ops, args) -> harness.Prepared:
        import torch
        from nvdsl.kernels.attention import attention, attention_backward

        variant = ops.p["variant"]
        if variant == "varlen" and not plain:
            return _nvdsl_varlen(ops)
        mods = {"causal": True} if plain and variant == "causal_mask_mod" else {} if plain else \
            _nvdsl_mods(variant, ops.doc)
        o = torch.empty_like(ops.q)
        lse = torch.empty(ops.q.shape[:3], dtype=torch.float32, device=ops.q.device)
        forward = lambda: attention(ops.q, ops.k, ops.v, o, lse, scale=1.0, **mods)    # noqa: E731
        if ops.p["direction"] == "forward":
            check = None if plain else _checked(forward, [o], [ops.ref_out])
            return harness.Prepared(forward, check, {"mods": ", ".join(sorted(mods)) or "none"})
        forward()
        grads = [torch.empty_like(x) for x in (ops.q, ops.k, ops.v)]
        call = lambda: attention_backward(ops.q, ops.k, ops.v, o, lse, ops.do, *grads, scale=1.0,   # noqa: E731
                                          **mods)
        check = None if plain else _checked(call, grads, list(ops.ref_grads))
        return harness.Prepared(call, check, {"mods": ", ".join(sorted(mods)) or "none"})
    return prepare


def systems() -> dict[str, Callable | harness.System]:
    return {"flex-attention": _flex, "nvdsl-variant": _nvdsl(False),
            "nvdsl-plain": harness.System(_nvdsl(True), role=harness.REFERENCE, flops=_plain_flops)}


def run(args) -> list[harness.Measurement]:
    return harness.run_shapes("attention_variants", shapes(args), _operands, systems(), flops, args)

"""Attention decode: one new token per sequence against a KV cache, bf16, H 32 query / 8 key-value heads, D 128,
caches of 4096 and 16384 slots holding 1/2 to all of them (per-sequence lengths, seeded), batch 1, 8 and 32.
Memory-bound: the table's GB/s counts the cached keys and values the sequences hold (2·B·Hkv·n·D·2 bytes, n the
tokens held), what any decode kernel must read.

* ``nvdsl-decode``: ``nvdsl.kernels.attention_varlen.attention_decode`` (lengths on the device);
* ``sdpa-masked``: ``scaled_dot_product_attention`` over the whole cache with a boolean mask of the held tokens
  (made outside the timing, grouped heads expanded by sdpa's ``enable_gqa``): what a model with a static cache runs;
* ``flex-attention``: ``torch.compile(flex_attention)`` with a ``BlockMask`` of the lengths (made once, outside
  the timing), the output reference.
"""

from __future__ import annotations

from types import SimpleNamespace

from .. import harness

HEADS, KV_HEADS, HEAD_DIM = 32, 8, 128
BATCHES, SLOTS, QUICK_SLOTS = (1, 8, 32), (4096, 16384), (16384,)
RTOL = 2e-2

TABLE_METRIC = "gbps"
PLOT = {"x": "B", "xlabel": "sequences B (one new token each)", "group": ("slots",), "peak": False}


def shapes(args) -> list[dict]:
    return [{"dtype": "bf16", "B": b, "H": HEADS, "Hkv": KV_HEADS, "D": HEAD_DIM, "slots": slots}
            for slots in (QUICK_SLOTS if args.quick else SLOTS) for b in BATCHES]


def row_label(p: dict) -> str:
    return f"bf16 B={p['B']} H={p['H']} Hkv={p['Hkv']} D={p['D']} cache={p['slots']}"


def held(p: dict):
    """The tokens each sequence's cache holds (int32, seeded): between half the slots and all of them."""
    import numpy as np

    rng = np.random.default_rng(p["B"])
    return rng.integers(p["slots"] // 2, p["slots"] + 1, size=p["B"]).astype(np.int32)


def nbytes(p: dict) -> float:
    return 2 * p["Hkv"] * int(held(p).sum()) * p["D"] * 2


def flops(p: dict) -> float:
    return 4 * p["H"] * int(held(p).sum()) * p["D"]


def _operands(p: dict):
    import torch
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    B, H, Hkv, D, slots = p["B"], p["H"], p["Hkv"], p["D"], p["slots"]
    q = harness.randn((B, H, 1, D), torch.bfloat16, scale=D ** -0.25, seed=1)
    k = harness.randn((B, Hkv, slots, D), torch.bfloat16, scale=D ** -0.25, seed=2)
    v = harness.randn((B, Hkv, slots, D), torch.bfloat16, seed=3)
    lengths = torch.from_numpy(held(p)).cuda()
    mask = create_block_mask(lambda b, h, q_idx, kv_idx: kv_idx < lengths[b], B, None, 1, slots, device="cuda")
    import torch._dynamo.config as dynamo_config
    dynamo_config.cache_size_limit = dynamo_config.accumulated_cache_size_limit = 1024
    flex = torch.compile(flex_attention, dynamic=False)
    ref = flex(q, k, v, block_mask=mask, scale=1.0, enable_gqa=True)
    return SimpleNamespace(q=q, k=k, v=v, lengths=lengths, flex=flex, block_mask=mask, ref=ref)


def _flex(ops, args) -> harness.Prepared:
    call = lambda: ops.flex(ops.q, ops.k, ops.v, block_mask=ops.block_mask, scale=1.0, enable_gqa=True)  # noqa: E731
    return harness.Prepared(call, None, {"compiled": "torch.compile(flex_attention)"})


def _sdpa(ops, args) -> harness.Prepared:
    import torch

    keep = (torch.arange(ops.k.shape[2], device="cuda")[None] < ops.lengths[:, None])[:, None, None]
    out = torch.empty_like(ops.q)

    def call():
        out.copy_(torch.nn.functional.scaled_dot_product_attention(ops.q, ops.k, ops.v, attn_mask=keep, scale=1.0,
                                                                   enable_gqa=True))
    return harness.Prepared(call, harness.checked_call(call, out, ops.ref, RTOL), {"mask": "bool (B, 1, 1, slots)"})


def _nvdsl(ops, args) -> harness.Prepared:
    import torch
    from nvdsl.kernels.attention_varlen import attention_decode

    o = torch.empty_like(ops.q)
    call = lambda: attention_decode(ops.q, ops.k, ops.v, o, ops.lengths, scale=1.0)     # noqa: E731
    return harness.Prepared(call, harness.checked_call(call, o, ops.ref, RTOL), {"lengths": "device int32"})


def systems() -> dict:
    return {"nvdsl-decode": _nvdsl, "sdpa-masked": _sdpa, "flex-attention": _flex}


def run(args) -> list[harness.Measurement]:
    return harness.run_shapes("attention_decode", shapes(args), _operands, systems(), flops, args, nbytes=nbytes)

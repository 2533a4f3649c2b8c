"""Flash Attention forward: ``O = softmax(Q Kᵀ · scale [+ causal mask]) V``, with the log-sum-exp of each row.

    from nvdsl.kernels.attention import attention
    attention(q, k, v, o)                         # q, o (B, H, L, D); k, v (B, Hkv, Lk, D); float16 or bfloat16
    attention(q, k, v, o, lse, causal=True)       # lse (B, H, L) float32: the natural log of each row's sum

Any of them may be a view, used in place: ``q = x.transpose(1, 2)`` of a (B, L, H, D) projection, the three
slices of a packed (B, L, 3, H, D) qkv one, ``o`` the (B, H, L, D) view of the (B, L, H, D) buffer the next
layer reads, ``lse`` a slice of a wider array.
``H`` must be a multiple of ``Hkv`` (grouped-query attention: query head ``h`` reads key/value head
``h // (H // Hkv)``); ``D`` is 64, 128 or 256; ``L`` and ``Lk`` need not be multiples of the tile.
``causal=True`` masks key ``j`` for query ``i`` where ``j > i`` (top-left aligned, as
``torch.nn.functional.scaled_dot_product_attention(is_causal=True)``). ``scale`` defaults to ``D ** -0.5``.

The kernel is a tile program, :func:`attention_program` (about 30 lines of ``nvdsl.tasks``: per block of
query rows, an online softmax over the key blocks, with no roles, rings or barriers), run under a mapping,
:func:`task_mapping`. The task layer derives FlashAttention-3's pipeline from it:

* a **producer** warpgroup (24 registers per thread) loads the block's Q once (a ring filled once per tile)
  and streams K and V through a ring each, so K of block j loads while V of block j - 1 is read;
* two **consumers** (three at D = 64 from 2048 queries, 4097 under a causal mask; 240 registers, or 160)
  own 64 query rows each. The loop has two phases (``S = Q Kᵀ`` and its softmax; ``O *= alpha; O += P V``): step j issues
  ``S_j``, then ``O += P_{j-1} V_{j-1}`` with P straight from registers, and computes block j's softmax
  while that product runs. The consumers take turns at issuing their products (named barriers, the
  mapping's ``turns=True``), so one's softmax also overlaps another's products;
* the masks (causal, ragged keys) are left out of the steps where they cannot change a score (a loop
  without them, then one with them), and under a causal mask the longest blocks launch first;
* a row's running max moves only when its scores grow by more than 2^8 (lazy rescaling), so in most steps a
  thread's factors ``alpha`` are all 1 and it skips its ``O *= alpha``;
* O leaves through each consumer's rows of Q's tile and TMA (clipped at ``L``).

Key blocks are 128 keys (64 at D = 256), chosen by measurement on an H100.
Pass ``mapping=`` to run the same program otherwise (persistent, other tiles): results do not change.
"""

from __future__ import annotations

import functools
import math

from .. import dtypes as dt
from .. import tasks as nt
from ..errors import ArgumentError, user_location
from ..arguments import describe, signature_key
from ..signature import ARRAY
from ..target import REGISTER_FILE

ROWS = 64                   # query rows per consumer warpgroup (one wgmma M)
PRODUCER_REGISTERS = 24
LOG2_E = 1 / math.log(2)
# A row's running max m moves only when the block's max exceeds it by more than 2^8 (FlashAttention-4's lazy
# rescaling): the scores' exponentials then stay at most 256 (fp16/bf16 P and the fp32 sums hold that with the
# same relative precision), and in most steps no row moves, alpha is 1 and o's rescaling is skipped. The result
# is the same softmax: o and l are both measured from the same m.
RESCALE_ABOVE = 8.0
LN_2 = math.log(2)
HEAD_DIMS = (64, 128, 256)


def _tiles(d: int, causal: bool, seq_q: int) -> tuple[int, int]:
    """(keys per block, consumer warpgroups), as measured fastest on an H100: 128 keys per block, 64 at
    D = 256 (two K and two V slots of 128 would not fit); at D = 64 three consumers (192 query rows per
    block, 160 registers each) without a mask from 2048 queries, and with a causal mask above 4096 (1.06x
    cuDNN at L = 16384 against 0.97x with two; 0.85x against 0.87x at 4096). (176 keys, the hand-written
    kernel's best at D = 128 without a mask, ran 3-8% slower than 128 in the generated kernel at L = 4096
    and 16384.)"""
    if d == 64 and (seq_q > 4096 if causal else seq_q >= 2048):
        return 128, 3
    return (128 if d <= 128 else 64), 2


@functools.lru_cache(maxsize=None)
def attention_program(causal: bool = False, scale: float | None = None, with_lse: bool = True) -> nt.Task:
    """Attention as a tile program (``nvdsl.tasks``): what is computed per block of query rows, with no
    roles, rings or barriers; :func:`task_mapping` says how it runs. ``O`` (B, H, L, D) and ``LSE`` (B, H, L)
    are written (``with_lse=False``: the task takes no LSE); ``K`` and ``V`` may have fewer heads than ``Q``
    (grouped-query attention)."""

    def attention(O, LSE, Q, K, V):
        BM, BN = nt.tunable("BM", 128), nt.tunable("BN", 128)
        batch, heads, seq_q, d = Q.shape
        kv_heads, seq_k = K.shape[1], K.shape[2]
        group = heads // kv_heads
        c = (d ** -0.5 if scale is None else scale) * LOG2_E      # softmax in base 2, the scale folded in
        Qt, Ot = nt.blocks(Q, (1, 1, BM, d)), nt.blocks(O, (1, 1, BM, d))
        Lt = nt.blocks(LSE, (1, 1, BM)) if with_lse else None
        Kt, Vt = nt.blocks(K, (1, 1, BN, d)), nt.blocks(V, (1, 1, BN, d))
        for b, hk, g, i in nt.prange(batch, kv_heads, group, Qt.grid[2]):
            h = hk * group + g
            rows = nt.arange(BM, start=i * BM, name="rows")
            m, l = nt.full((BM,), -math.inf, name="m"), nt.zeros((BM,), name="l")
            o = nt.zeros((BM, d), name="o")
            for j in nt.srange(Kt.grid[2], below=(i + 1) * BM if causal else None, step=BN):
                keys = nt.arange(BN, start=j * BN, name="keys")
                s = nt.zeros((BM, BN), name="s")
                s += Qt[b, h, i, 0] @ Kt[b, hk, j, 0].T
                keep = (keys < seq_k)[None, :]                      # keys past the end (a ragged last block)
                if causal:
                    keep = (keys[None, :] <= rows[:, None]) & keep     # and keys after the query
                s = nt.where(keep, s, -math.inf)
                m_new = nt.maximum(m, s.max(axis=1))
                m_new = nt.where((m_new - m) * c > RESCALE_ABOVE, m_new, m)   # lazy rescaling (RESCALE_ABOVE)
                p = nt.exp2(s * c - (m_new * c)[:, None], approx=True)
                alpha = nt.exp2((m - m_new) * c, approx=True)
                l[...] = l * alpha + p.sum(axis=1)
                o *= alpha[:, None]
                o += p.astype(Q.dtype) @ Vt[b, hk, j, 0]
                m[...] = m_new
            Ot[b, h, i, 0] = (o * (1.0 / l)[:, None]).astype(O.dtype)
            if with_lse:
                Lt[b, h, i] = (m * c + nt.log2(l, approx=True)) * LN_2

    if with_lse:
        return nt.task(reads=("Q", "K", "V"), writes=("O", "LSE"))(attention)

    def attention_o(O, Q, K, V):
        attention(O, None, Q, K, V)
    attention_o.__name__ = "attention"
    return nt.task(reads=("Q", "K", "V"), writes=("O",))(attention_o)


def task_mapping(d: int, causal: bool, seq_q: int) -> nt.Mapping:
    """How :func:`attention_program` runs: FlashAttention-3's pipeline (a producer warpgroup, consumers taking
    turns at the tensor cores, each 64 query rows), with :func:`_tiles`' sizes."""
    key_block, consumers = _tiles(d, causal, seq_q)
    return nt.Mapping(tiles={"BM": consumers * ROWS, "BN": key_block}, pipeline=2, consumers=consumers, turns=True,
                      persistent=False, registers={"producer": PRODUCER_REGISTERS,
                                                   "consumer": (REGISTER_FILE // 128 - PRODUCER_REGISTERS) // consumers // 8 * 8})


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def attention(q, k, v, o, lse=None, *, causal: bool = False, scale: float | None = None,
              mapping: nt.Mapping | None = None) -> None:
    """``o[:] = softmax(q kᵀ · scale) v`` per (batch, head), and ``lse[:]`` the natural log of each row's sum
    of ``exp(q kᵀ · scale)`` (scores measured from 0), if given.

    Args:
        q: (B, H, L, D) float16 or bfloat16 (NumPy, or a CUDA array: torch, CuPy).
        k, v: (B, Hkv, Lk, D), q's dtype; H a multiple of Hkv.
        o: (B, H, L, D), q's dtype: the output.
        lse: (B, H, L) float32, or None.
        causal: mask key j for query i where j > i.
        scale: the factor on q kᵀ, default D ** -0.5.
        mapping: how :func:`attention_program` runs (default :func:`task_mapping`'s); results do not change.

    Compiled once per shape, dtype, ``causal``, ``scale`` and mapping.
    """
    arrays = (q, k, v, o) if lse is None else (q, k, v, o, lse)
    plan = None
    if isinstance(causal, bool) and (scale is None or type(scale) in (int, float)) and \
            (mapping is None or isinstance(mapping, nt.Mapping)):
        # The checks below are per signature (kinds, dtypes, shapes); a call like an earlier one skips them:
        # the kernel's own call still checks each array's layout and device.
        plan = (tuple(map(signature_key, arrays)), causal, scale, mapping)
        kernel = _CHECKED.get(plan)
        if kernel is not None:
            kernel(o, *arrays[:3]) if lse is None else kernel(o, lse, *arrays[:3])
            return
    loc = user_location()
    specs = {name: describe(x, name, loc)[0] for name, x in (("q", q), ("k", k), ("v", v), ("o", o), ("lse", lse))
             if x is not None}
    scalars = [name for name, spec in specs.items() if spec.kind != ARRAY]
    if scalars:
        raise ArgumentError(f"attention: {', '.join(scalars)} must be arrays", code="bad-argument", loc=loc)
    shapes = {name: specs[name].shape for name in ("q", "k", "v", "o")}
    if any(len(s) != 4 for s in shapes.values()):
        raise ArgumentError(f"attention takes 4-D (batch, heads, seq, head_dim) arrays, got shapes {shapes}",
                            code="bad-shape", loc=loc)
    (batch, heads, seq_q, d), (kb, kv_heads, _, kd) = shapes["q"], shapes["k"]
    if shapes["v"] != shapes["k"] or (kb, kd) != (batch, d) or shapes["o"] != shapes["q"]:
        raise ArgumentError(f"attention needs k and v of one shape (B, Hkv, Lk, D) and o of q's shape, with q's B "
                            f"and D; got {shapes}", code="bad-shape", loc=loc)
    if d not in HEAD_DIMS:
        raise ArgumentError(f"attention: head_dim {d} is not supported", code="bad-shape",
                            hint=f"head_dim must be one of {HEAD_DIMS}", loc=loc)
    if kv_heads == 0 or heads % kv_heads:
        raise ArgumentError(f"attention: q has {heads} heads, not a multiple of k's {kv_heads}", code="bad-shape",
                            hint="grouped-query attention shares each K/V head among H // Hkv query heads", loc=loc)
    dtypes = {name: specs[name].dtype for name in ("q", "k", "v", "o")}
    if len(set(dtypes.values())) != 1 or dtypes["q"] not in (dt.float16, dt.bfloat16):
        raise ArgumentError(f"attention needs q, k, v and o all float16 or all bfloat16, got "
                            f"{ {name: dtype.name for name, dtype in dtypes.items()} }", code="bad-dtype", loc=loc)
    if lse is not None and (specs["lse"].shape != (batch, heads, seq_q) or specs["lse"].dtype != dt.float32):
        raise ArgumentError(f"attention: lse must be float32 of shape {(batch, heads, seq_q)}, got "
                            f"{specs['lse'].dtype.name}{list(specs['lse'].shape)}", code="bad-shape", loc=loc)
    if not isinstance(causal, bool):
        raise ArgumentError(f"attention: causal={causal!r} must be True or False", code="bad-argument",
                            loc=loc)
    scale = d ** -0.5 if scale is None else scale
    if not (isinstance(scale, (int, float)) and not isinstance(scale, bool) and math.isfinite(scale) and scale > 0):
        raise ArgumentError(f"attention: scale={scale!r} must be a positive finite number", code="bad-argument",
                            loc=loc)
    if mapping is not None and not isinstance(mapping, nt.Mapping):
        raise ArgumentError(f"attention: mapping={mapping!r} must be an nvdsl.tasks.Mapping", code="bad-argument",
                            loc=loc)
    kernel = _kernel(causal, float(scale), lse is not None, mapping or task_mapping(d, causal, seq_q))
    if plan is not None:
        _CHECKED[plan] = kernel
    if lse is None:
        kernel(o, q, k, v)
    else:
        kernel(o, lse, q, k, v)


_CHECKED: dict = {}        # call signature -> the kernel its checks chose


@functools.lru_cache(maxsize=None)
def _kernel(causal: bool, scale: float, with_lse: bool, mapping: nt.Mapping) -> nt.TaskKernel:
    return nt.build(attention_program(causal, scale, with_lse), mapping)

"""Flash Attention forward: ``O = softmax(Q Kᵀ · scale [+ causal mask]) V``, with the log-sum-exp of each row.

    from nvdsl.kernels.attention import attention
    attention(q, k, v, o)                         # q, o (B, H, L, D); k, v (B, Hkv, Lk, D); float16 or bfloat16
    attention(q, k, v, o, lse, causal=True)       # lse (B, H, L) float32: the natural log of each row's sum

``H`` must be a multiple of ``Hkv`` (grouped-query attention: query head ``h`` reads key/value head
``h // (H // Hkv)``); ``D`` is 64, 128 or 256; ``L`` and ``Lk`` need not be multiples of the tile.
``causal=True`` masks key ``j`` for query ``i`` where ``j > i`` (top-left aligned, as
``torch.nn.functional.scaled_dot_product_attention(is_causal=True)``). ``scale`` defaults to ``D ** -0.5``.

How it runs (the FlashAttention-3 algorithm). One block per 128 query rows of one (batch, head) (192 at
D = 64 without a mask, from 2048 queries), three warpgroups (four):

* the **producer** (warpgroup 0, 24 registers per thread) loads the block's Q once and streams the K and
  V tiles of the key blocks through two :class:`nvdsl.Aref` rings, K a block ahead of V;
* two **consumers** (three; 240 registers, or 160) own 64 query rows each. Per key block ``j`` a
  consumer issues ``S_j = Q K_jᵀ``, rescales O, issues ``O += P_{j-1} V_{j-1}`` with ``P`` straight from
  registers, and waits only for ``S_j``: the softmax of block ``j`` (row max, ``exp2`` with the scale folded
  in, row sum, the rescale factor) runs on the CUDA cores while the tensor cores compute
  ``P_{j-1} V_{j-1}``. The consumers take turns at issuing their products (named barriers, "ping-pong"),
  so one's softmax also overlaps another's products.

Key blocks are 128 keys (176 at D = 128 without a mask, 64 at D = 256), chosen by measurement on an H100.
Only the key blocks on the causal diagonal or past the end of the keys are masked (a second loop over
them); blocks are launched longest first under a causal mask. ``O`` leaves through shared memory and
TMA (clipped at ``L``); ``lse`` rows past ``L`` are not written.
"""

from __future__ import annotations

import functools
import math

import nvdsl

from ..errors import ArgumentError, user_location
from ..runtime.arrays import describe
from ..signature import ARRAY

ROWS = 64                   # query rows per consumer warpgroup (one wgmma M)
REGISTERS = 65536           # per SM (and per block: one block of 384 or 512 threads fills it)
PRODUCER_REGISTERS = 24
BOX = 64                    # TMA boxes are one 128-byte swizzle row of 16-bit values wide
LOG2_E = 1 / math.log(2)
LN_2 = math.log(2)
TURN = 10                   # named barriers 10, 11 (, 12): the consumers' turns at the tensor cores
HEAD_DIMS = (64, 128, 256)


def _tiles(d: int, causal: bool, seq_q: int) -> tuple[int, int]:
    """(keys per block, consumer warpgroups), as measured fastest on an H100: at D = 128 without a mask, 176
    keys per block (fewer steps for the same work); at D = 64 without a mask and from 2048 queries, three
    consumers (192 query rows per block, 160 registers each); at D = 256, 64 keys (two K and two V slots of
    128 would not fit)."""
    if d == 64 and not causal and seq_q >= 2048:
        return 128, 3
    return (176 if d == 128 and not causal else 128 if d <= 128 else 64), 2


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@functools.lru_cache(maxsize=None)
def _attention(causal: bool, scale: float, key_block: int | None = None, consumers: int | None = None):
    """The traced function for one masking mode and scale (shapes and dtypes specialise at call time);
    ``key_block`` (a multiple of 16 up to 256) and ``consumers`` (2 or 3, each owning 64 query rows) override
    the tile choice."""
    scale_log2 = scale * LOG2_E          # softmax in base 2: exp(x * scale) = exp2(x * scale * log2(e))

    @nvdsl.mlir_func
    def attention(q, k, v, o, lse):
        batch, heads, seq_q, d = q.shape
        kv_heads, seq_k = k.shape[1], k.shape[2]
        default_bn, default_consumers = _tiles(d, causal, seq_q)
        bn, n_consumers = key_block or default_bn, consumers or default_consumers
        bm, group, dtype = n_consumers * ROWS, heads // kv_heads, q.dtype
        consumer_registers = (REGISTERS - PRODUCER_REGISTERS * 128) // (n_consumers * 128) // 8 * 8
        q_tma = nvdsl.TMA(q, box=(1, 1, ROWS, BOX), swizzle=128)
        k_tma = nvdsl.TMA(k, box=(1, 1, bn, BOX), swizzle=128)
        v_tma = nvdsl.TMA(v, box=(1, 1, bn, BOX), swizzle=128)
        o_tma = nvdsl.TMA(o, box=(1, 1, ROWS, BOX), swizzle=128)
        m_tiles, k_blocks, whole_k_blocks = _cdiv(seq_q, bm), _cdiv(seq_k, bn), seq_k // bn

        @nvdsl.gpu_launch(grid=m_tiles * heads * batch, block=(1 + n_consumers) * 128)
        def kernel(ctx):
            q_tiles = [ctx.shared_array((ROWS, d), dtype, align=1024) for _ in range(n_consumers)]
            q_full = nvdsl.Mbarriers(1)[0]
            with nvdsl.when(ctx.linear_thread_id.eq(0)):
                q_full.init(1)
            k_ring = nvdsl.Aref(ctx, [((bn, d), dtype)], depth=2, name="k")    # initialises and syncs the block
            v_ring = nvdsl.Aref(ctx, [((bn, d), dtype)], depth=2, name="v")

            # Blocks of one (batch, head) are neighbours, so they share K and V in L2; under a causal mask
            # the longest rows of query blocks go first.
            tile = ctx.block_id.x
            m_tile = tile % m_tiles
            if causal:
                m_tile = (m_tiles - 1) - m_tile
            bh = tile // m_tiles
            b, h = bh // heads, bh % heads
            row0 = m_tile * bm
            if causal:      # key blocks up to the tile's last row; those left of its first row are unmasked
                blocks = nvdsl.minimum((row0 + (bm + bn - 1)) // bn, k_blocks)
                unmasked = nvdsl.minimum(row0 // bn, whole_k_blocks)
            else:
                blocks, unmasked = k_blocks, whole_k_blocks

            with nvdsl.Warpgroup(ctx, 0, register_size=PRODUCER_REGISTERS) as producer:
                leader = producer.thread_index.eq(0)
                q_full.arrive(n_consumers * ROWS * d * dtype.itemsize, predicate=leader)
                for i, q_tile in enumerate(q_tiles):
                    q_tma.load(q_tile, q_full, (b, h, row0 + i * ROWS, 0), predicate=leader)
                for j in nvdsl.for_range(blocks):
                    k_ring.put((k_tma, (b, h // group, j * bn, 0)))
                    v_ring.put((v_tma, (b, h // group, j * bn, 0)))

            for i in range(n_consumers):
                with nvdsl.Warpgroup(ctx, 128 * (1 + i), register_size=consumer_registers) as consumer:
                    first_row = row0 + i * ROWS
                    q_full.try_wait(0)
                    q_matrix = nvdsl.WGMMAMatrix(q_tiles[i], q_tma)

                    # Ping-pong: the consumers take turns at issuing their products (named barrier
                    # TURN + i is consumer i's turn, opened by consumer i - 1), so that one's softmax runs
                    # while another's products hold the tensor cores. The last consumer opens the first
                    # turn of consumer 0 and not after its own last turn: every arrival meets a wait.
                    def my_turn():
                        ctx.sync_threads(2 * 128, barrier=TURN + i)

                    def their_turn(last: bool = False):
                        if not (last and i == n_consumers - 1):
                            ctx.arrive_threads(2 * 128, barrier=TURN + (i + 1) % n_consumers)

                    if i == n_consumers - 1:
                        their_turn()

                    def scores():
                        """Issue S = Q K_jᵀ for the next key block; it runs on after the call."""
                        with k_ring.get() as (k_tile,):
                            s = nvdsl.WGMMAAccumulator(ROWS, bn)
                            s.accumulate(q_matrix @ nvdsl.WGMMAMatrix(k_tile, k_tma, transposed=True), in_flight=1)
                        return s


                    def masked(s, j):
                        """S with -inf where key j * bn + column is past the keys or (causal) after the row."""
                        rows, cols = s.indices()
                        key = cols if isinstance(j, int) else cols + (j * bn).to(nvdsl.int32)
                        keep = key < seq_k
                        if causal:
                            keep = keep & (key <= rows + first_row.to(nvdsl.int32))
                        return nvdsl.where(keep, s, -math.inf)

                    def exp2_scaled(s, m):
                        return nvdsl.exp2(s * scale_log2 - m * scale_log2, approx=True)

                    # Key block 0: its softmax starts the running max m and sum l.
                    my_turn()
                    s = scores()
                    their_turn()
                    nvdsl.wgmma_wait(0)
                    if isinstance(unmasked, int):
                        s = s if unmasked > 0 else masked(s, 0)
                    else:
                        s = nvdsl.cond(unmasked > 0, lambda: s, lambda: masked(s, 0))
                    m = s.max(axis=1)
                    p = exp2_scaled(s, m)
                    l = p.sum(axis=1)

                    def step(masking: bool):
                        def body(j, carry):
                            o, m, l, p, alpha = carry
                            my_turn()
                            with v_ring.get() as (v_tile,):         # the previous block's V
                                s = scores()
                                o = o * alpha                       # the last rescale, while S_j runs
                                o.accumulate(p @ nvdsl.WGMMAMatrix(v_tile, v_tma), in_flight=2)  # P_{j-1} V_{j-1}
                            their_turn()
                            nvdsl.wgmma_wait(1)             # S_j is done; P_{j-1} V_{j-1} runs on
                            if masking:
                                s = masked(s, j)
                            m_new = nvdsl.maximum(m, s.max(axis=1))
                            p_new = exp2_scaled(s, m_new)
                            alpha = nvdsl.exp2((m - m_new) * scale_log2, approx=True)
                            l = l * alpha + p_new.sum(axis=1)
                            nvdsl.wgmma_wait(0)
                            return o, m_new, l, p_new.to(dtype), alpha
                        return body

                    carry = (nvdsl.WGMMAAccumulator(ROWS, d), m, l, p.to(dtype), nvdsl.RowVector.full(s, 1.0))
                    split = max(unmasked, 1) if isinstance(unmasked, int) else nvdsl.maximum(unmasked, 1)
                    carry = nvdsl.fori(1, split, carry=carry)(step(False))
                    carry = nvdsl.fori(split, blocks, carry=carry)(step(True))
                    o_acc, m, l, p, alpha = carry
                    my_turn()
                    with v_ring.get() as (v_tile,):
                        o_acc = o_acc * alpha
                        o_acc.accumulate(p @ nvdsl.WGMMAMatrix(v_tile, v_tma), in_flight=1)
                    their_turn(last=True)
                    nvdsl.wgmma_wait(0)

                    # Epilogue: O / l through this consumer's Q tile and TMA, which clips rows past L (the
                    # warpgroup first agrees that every read of Q has retired); the log-sum-exp of each row.
                    consumer.sync()
                    (o_acc * (1.0 / l)).store(q_tiles[i], tma=o_tma)
                    nvdsl.fence_shared_to_async()
                    consumer.sync()
                    o_tma.store(q_tiles[i], (b, h, first_row, 0), predicate=consumer.thread_index.eq(0))
                    row_lse = (m * scale_log2 + nvdsl.log2(l, approx=True)) * LN_2
                    start = bh * seq_q
                    row_lse.store(lse.flatten(), start + first_row, stop=start + seq_q)

        kernel()

    return attention


def attention(q, k, v, o, lse=None, *, causal: bool = False, scale: float | None = None) -> None:
    """``o[:] = softmax(q kᵀ · scale) v`` per (batch, head), and ``lse[:]`` the natural log of each row's sum
    of ``exp(q kᵀ · scale)`` (scores measured from 0), if given.

    Args:
        q: (B, H, L, D) float16 or bfloat16 (NumPy, or a CUDA array: torch, CuPy).
        k, v: (B, Hkv, Lk, D), q's dtype; H a multiple of Hkv.
        o: (B, H, L, D), q's dtype: the output.
        lse: (B, H, L) float32, or None.
        causal: mask key j for query i where j > i.
        scale: the factor on q kᵀ, default D ** -0.5.

    Compiled once per shape, dtype, ``causal`` and ``scale``.
    """
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
    (batch, heads, seq_q, d), (kb, kv_heads, seq_k, kd) = shapes["q"], shapes["k"]
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
    if len(set(dtypes.values())) != 1 or dtypes["q"] not in (nvdsl.float16, nvdsl.bfloat16):
        raise ArgumentError(f"attention needs q, k, v and o all float16 or all bfloat16, got "
                            f"{ {name: dtype.name for name, dtype in dtypes.items()} }", code="bad-dtype", loc=loc)
    if lse is not None and (specs["lse"].shape != (batch, heads, seq_q) or specs["lse"].dtype != nvdsl.float32):
        raise ArgumentError(f"attention: lse must be float32 of shape {(batch, heads, seq_q)}, got "
                            f"{specs['lse'].dtype.name}{list(specs['lse'].shape)}", code="bad-shape", loc=loc)
    if not isinstance(causal, bool):
        raise ArgumentError(f"attention: causal={causal!r} must be True or False", code="bad-argument",
                            loc=loc)
    scale = d ** -0.5 if scale is None else scale
    if not (isinstance(scale, (int, float)) and not isinstance(scale, bool) and math.isfinite(scale) and scale > 0):
        raise ArgumentError(f"attention: scale={scale!r} must be a positive finite number", code="bad-argument",
                            loc=loc)
    if lse is None:
        _attention_without_lse(causal, float(scale))(q, k, v, o)
    else:
        _attention(causal, float(scale))(q, k, v, o, lse)


@functools.lru_cache(maxsize=None)
def _attention_without_lse(causal: bool, scale: float):
    traced = _attention(causal, scale).fn

    @nvdsl.mlir_func
    def attention_o(q, k, v, o):
        traced(q, k, v, o, nvdsl.empty((q.shape[0], q.shape[1], q.shape[2]), nvdsl.float32, name="lse"))

    return attention_o

"""Attention over packed sequences (FlashAttention's varlen convention) and a decode step against a KV cache.

    from nvdsl.kernels.attention_varlen import attention_varlen, attention_varlen_backward, attention_decode
    # q, o (Tq, H, D); k, v (Tk, Hkv, D): the tokens of S sequences one after another; cu_seqlens_q, cu_seqlens_k
    # (S + 1,) int32: sequence s is rows cu_seqlens_q[s]:cu_seqlens_q[s + 1] of q and cu_seqlens_k[s]:...[s + 1]
    # of k and v; lse (H, Tq) float32
    attention_varlen(q, k, v, o, cu_seqlens_q, cu_seqlens_k, lse, causal=True)
    # q, o (B, H, Lq, D): the newest Lq tokens of each sequence; k_cache, v_cache (B, Hkv, Lmax, D);
    # cache_seqlens (B,) int32: sequence b's cache holds cache_seqlens[b] tokens, its new ones included
    attention_decode(q, k_cache, v_cache, o, cache_seqlens)

Both run :func:`nvdsl.kernels.attention.attention`'s kernels (and its backward's) with a mask that keeps, per query
row, one interval of keys ``[first, end)`` given as two int32 arrays (:func:`key_interval`): the intervals are
computed on the device from the sequence lengths by a small kernel, and the blocks of 64 x 64 (query, key) pairs
the intervals leave out entirely are skipped, found from the intervals per row (a thread per block, looping over
its rows). The work done is therefore the blocks of each sequence's own square (or triangle), plus the blocks a
query block of the kernel shares with its neighbour sequence at each boundary, which are masked. No copy of k or v
is made (a decode step copies its few queries into blocks, see :func:`attention_decode`), and the sequence lengths
never travel to the host: a new batch of lengths runs through the same compiled kernels. ``attention_varlen``
takes ``score_mod``/``mask_mod`` as attention does, on positions in the packed arrays.

``causal=True`` aligns the mask to the bottom right corner of each sequence's (Lq, Lk) square, as FlashAttention's
varlen and KV-cache kernels do: query ``i`` of a sequence with ``Lq`` queries and ``Lk`` keys sees keys
``j <= i + Lk - Lq`` (the usual triangle when ``Lq == Lk``; for decode, every cached token up to its own).
A row that sees no key (a sequence with no keys, a token past the last sequence) gets ``o = 0`` and ``lse = -inf``.
Sequence lengths that are not monotone (``cu_seqlens`` decreasing) are refused for NumPy arrays; on the device
they are not checked (that would read them back to the host): intervals are clipped to the keys that exist, so
nothing is read out of bounds, and a row that belongs to no sequence sees no key.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .. import dtypes as dt
from .. import jit
from ..arguments import HOST, check_outputs_writable, describe, signature_key
from ..errors import ArgumentError, user_location
from ..signature import ARRAY
from .attention import (MASK_BLOCK, Variant, _cdiv, _checked_problem, _element, _elementwise_grid, _kernel,
                        _variant, attention, attention_backward, kept_blocks, task_mapping)
from ..scratch import scratch_like
from . import checks

def key_interval(b, h, q_idx, kv_idx, first, end):
    """The mask keeping keys ``first[b, q_idx] <= kv_idx < end[b, q_idx]`` (``first``, ``end``: (B, L) int32)."""
    return (kv_idx >= first[b, q_idx]) & (kv_idx < end[b, q_idx])


@jit.mlir_func
def _interval_blocks(kept, missing, first, end, *, seq_k: int, causal: bool):
    """``kept[b, 0, i, j] = 1`` where a row of query block ``i`` keeps a key of key block ``j`` (blocks of
    :data:`MASK_BLOCK`), ``missing[...] = 1`` where one leaves a key of it out (or the block runs past an end); 0
    elsewhere. A thread per block, looping over its rows; ``causal`` also keeps ``kv_idx <= q_idx`` only."""
    from ..frontend.control import fori, when    # MLIR: imported when traced, not with the library
    from ..frontend.launch import gpu_launch
    from ..frontend.values import constant, maximum, minimum, select
    rows = first.shape[1]

    @gpu_launch(**_elementwise_grid(kept.shape))
    def mark(ctx):
        inside_table, (b, _, i, j) = _element(ctx, kept.shape)
        with when(inside_table):
            start = (j * MASK_BLOCK).to(dt.int32)
            stop = minimum(start + MASK_BLOCK, constant(seq_k, dt.int32))

            @fori(0, MASK_BLOCK, carry=(constant(False, dt.bool_), start + MASK_BLOCK > seq_k))
            def scanned(a, carried):
                any_kept, any_left = carried
                row = i * MASK_BLOCK + a
                inside = row < rows
                at = (b, minimum(row, rows - 1))
                lo, hi = first[at], end[at]
                if causal:
                    hi = minimum(hi, row.to(dt.int32) + 1)
                keeps = inside & (maximum(lo, start) < minimum(hi, stop))
                leaves = ~inside | (lo > start) | (hi < start + MASK_BLOCK)
                return any_kept | keeps, any_left | leaves
            any_kept, any_left = scanned
            one, zero = constant(1, dt.int32), constant(0, dt.int32)
            kept[b, 0, i, j] = select(any_kept, one, zero)
            missing[b, 0, i, j] = select(any_left, one, zero)
    mark()


def _interval_tables(q, causal: bool, seq_k: int, mod_args):
    """:func:`nvdsl.kernels.attention.kept_blocks`' tables for :func:`key_interval`, from the intervals directly:
    one batch per batch of the intervals, one head for all."""
    first, end = mod_args
    shape = (first.shape[0], 1, _cdiv(q.shape[2], MASK_BLOCK), _cdiv(seq_k, MASK_BLOCK))
    kept = scratch_like(q, shape, "attention_varlen.kept_blocks", "int32")
    missing = scratch_like(q, shape, "attention_varlen.missing_blocks", "int32")
    _interval_blocks(kept, missing, first, end, seq_k=seq_k, causal=causal)
    return kept, missing


key_interval.block_tables = _interval_tables


# -- a user's mods over packed sequences ------------------------------------------------------------------------
#
# The mods see positions in the packed arrays (b = 0): where the queries and keys of each sequence start at the same
# offsets (cu_seqlens_q == cu_seqlens_k, self-attention), q_idx - kv_idx is the distance within the sequence, so a
# sliding window or ALiBi written for one sequence holds for each. A mask_mod is ANDed with the intervals; its block
# tables with theirs (kept where both keep some pair: blocks visited where neither leaves all out; full where both
# are full).

@functools.lru_cache(maxsize=None)
def _after_intervals(score_mod):
    """``score_mod`` called without the intervals that come first among the mods' arrays."""
    def score(s, b, h, q_idx, kv_idx, first, end, *mods):
        return score_mod(s, b, h, q_idx, kv_idx, *mods)
    score.__name__ = getattr(score_mod, "__name__", "score_mod")
    return score


@functools.lru_cache(maxsize=None)
def _within_sequences(mask_mod, arrays: int):
    """:func:`key_interval` and ``mask_mod`` (None: none), given the intervals and then ``arrays`` arrays of the
    user's; :func:`key_interval` itself where there are neither."""
    if mask_mod is None and arrays == 0:
        return key_interval

    def mask(b, h, q_idx, kv_idx, first, end, *mods):
        keep = key_interval(b, h, q_idx, kv_idx, first, end)
        return keep if mask_mod is None else keep & mask_mod(b, h, q_idx, kv_idx, *mods)
    mask.__name__ = f"within_sequences_{getattr(mask_mod, '__name__', 'only')}"
    mask.block_tables = functools.partial(_tables_of_both, mask_mod)
    return mask


def _tables_of_both(mask_mod, q, causal: bool, seq_k: int, mod_args):
    first, end, *mods = mod_args
    intervals = _interval_tables(q, causal, seq_k, (first, end))
    if mask_mod is None:
        return intervals
    users = kept_blocks(q, mask_mod, causal, seq_k, tuple(mods))
    shape = tuple(max(a, b) for a, b in zip(intervals[0].shape, users[0].shape))
    kept = scratch_like(q, shape, "attention_varlen.both_kept", "int32")
    missing = scratch_like(q, shape, "attention_varlen.both_missing", "int32")
    _both_blocks(kept, missing, *intervals, *users)
    return kept, missing


@jit.mlir_func
def _both_blocks(kept, missing, kept_a, missing_a, kept_b, missing_b):
    """``kept = kept_a & kept_b`` and ``missing = missing_a | missing_b`` (as 0 and 1), the inputs broadcast along
    their batch and head axes of one."""
    from ..frontend.control import when
    from ..frontend.launch import gpu_launch
    from ..frontend.values import constant, select

    @gpu_launch(**_elementwise_grid(kept.shape))
    def both(ctx):
        inside, (b, h, i, j) = _element(ctx, kept.shape)

        def at(table):
            return (b if table.shape[0] > 1 else 0, h if table.shape[1] > 1 else 0, i, j)
        with when(inside):
            one, zero = constant(1, dt.int32), constant(0, dt.int32)
            kept[b, h, i, j] = select((kept_a[at(kept_a)] != 0) & (kept_b[at(kept_b)] != 0), one, zero)
            missing[b, h, i, j] = select((missing_a[at(missing_a)] != 0) | (missing_b[at(missing_b)] != 0), one, zero)
    both()


@jit.mlir_func
def _packed_intervals(first, end, cu_seqlens_q, cu_seqlens_k, *, seq_k: int, causal: bool):
    """``first[0, t]``, ``end[0, t]``: the keys query token ``t`` of the packed sequences sees (see the module)."""
    from ..frontend.control import fori, when
    from ..frontend.launch import gpu_launch
    from ..frontend.values import constant, maximum, minimum, select
    rows, sequences = first.shape[1], cu_seqlens_q.shape[0] - 1

    @gpu_launch(**_elementwise_grid((1, 1, 1, rows)))
    def intervals(ctx):
        inside, (_, _, _, t) = _element(ctx, (1, 1, 1, rows))
        with when(inside):
            row = t.to(dt.int32)
            none = constant(0, dt.int32)

            @fori(0, sequences, carry=(none, none))
            def found(s, carried):
                lo, hi = carried
                stop = cu_seqlens_q[s + 1]
                inside = (cu_seqlens_q[s] <= row) & (row < stop)
                key_lo, key_hi = cu_seqlens_k[s], cu_seqlens_k[s + 1]
                if causal:                           # bottom right: the last query sees every key
                    key_hi = minimum(key_hi, key_hi - stop + row + 1)
                return select(inside, key_lo, lo), select(inside, key_hi, hi)
            lo, hi = found
            keys = constant(seq_k, dt.int32)
            lo = minimum(maximum(lo, none), keys)
            first[0, t] = lo
            end[0, t] = maximum(minimum(hi, keys), lo)
    intervals()


def _cached_end(cache_seqlens, b, position, *, seq_k: int, causal: bool, new_tokens: int):
    """The end of the keys new query ``position`` (of ``new_tokens``) of sequence ``b`` sees in its cache (traced in
    a kernel)."""
    from ..frontend.values import constant, maximum, minimum
    zero = constant(0, dt.int32)
    held = minimum(maximum(cache_seqlens[b], zero), constant(seq_k, dt.int32))
    if not causal:
        return held
    return maximum(minimum(held, held - new_tokens + position.to(dt.int32) + 1), zero)   # token held - new + i


@jit.mlir_func
def _cache_intervals(first, end, cache_seqlens, *, seq_k: int, causal: bool, new_tokens: int):
    """``first[b, r] = 0`` and ``end[b, r]``: the cached keys row ``r`` of sequence ``b`` sees (see the module),
    the rows being the ``new_tokens`` queries of each head of a group, one head after another."""
    from ..frontend.control import when
    from ..frontend.launch import gpu_launch
    from ..frontend.values import constant
    batch, rows = first.shape

    @gpu_launch(**_elementwise_grid((batch, 1, 1, rows)))
    def intervals(ctx):
        inside, (b, _, _, r) = _element(ctx, (batch, 1, 1, rows))
        with when(inside):
            first[b, r] = constant(0, dt.int32)
            end[b, r] = _cached_end(cache_seqlens, b, r % new_tokens, seq_k=seq_k, causal=causal,
                                    new_tokens=new_tokens)
    intervals()


# -- a decode step split along the cache ------------------------------------------------------------------------
#
# The G * Lq query rows of the heads sharing a key/value head are copied into a block of 64 rows (the rest see
# nothing) per chunk of the cache; with fewer (sequence, key/value head) blocks than SMs, the cache is cut into
# several chunks. Each block attends to its chunk's keys (its rows' intervals and its range of key blocks written
# by the copy), writing float32 outputs and log-sum-exps that a second kernel combines (FlashDecoding): three
# launches a step.

SPLIT_ROWS = 64                 # a block of query rows: one consumer (attention.task_mapping's for <= 64 queries)
SPLIT_MIN_KEYS = 512            # the fewest keys a chunk walks


def in_chunks(rows: int, d: int) -> bool:
    """Whether a decode step of ``rows`` query rows per key/value head (G * Lq) runs in chunks of the cache, each a
    block of :data:`SPLIT_ROWS` rows: where the rows fit one block, at head_dim 64 or 128 (one consumer)."""
    return rows <= SPLIT_ROWS and d <= 128


def decode_splits(batch: int, kv_heads: int, rows: int, seq_k: int, sm_count: int) -> tuple[int, int]:
    """(chunks, keys per chunk) a decode step's cache is cut into: enough blocks for every SM, no chunk shorter
    than :data:`SPLIT_MIN_KEYS` keys, chunks a whole number of 128-key blocks; (1, seq_k) where no split helps
    (blocks enough already, or more than :data:`SPLIT_ROWS` rows of queries per group)."""
    wanted = min(-(-sm_count // (batch * kv_heads)), -(-seq_k // SPLIT_MIN_KEYS))
    if rows > SPLIT_ROWS or wanted < 2:
        return 1, seq_k
    chunk = -(-seq_k // wanted // KEY_BLOCK) * KEY_BLOCK
    return -(-seq_k // chunk), chunk


KEY_BLOCK = 128                 # keys per step of attention.task_mapping's at head_dim <= 128


@jit.mlir_func
def _split_queries(q_split, first, end, ranges, q, cache_seqlens, *, seq_k: int, causal: bool, chunk: int):
    """``q_split[b, hk, s * 64 + r] = q[b, hk * G + r // Lq, r % Lq]`` for the group's ``G * Lq`` rows ``r`` (0 past
    them); the rows' intervals: the keys of chunk ``s`` each sees (none past the group's rows); and the key blocks
    each block of rows visits (``ranges[b, hk, s]``, as :func:`nvdsl.kernels.attention.block_ranges` gives them:
    from the chunk's first to the block holding the last key a row sees; no block is full, the rows past the
    group's seeing nothing)."""
    from ..frontend.control import fori, when
    from ..frontend.launch import gpu_launch
    from ..frontend.values import constant, maximum, minimum, select
    kv_heads = q_split.shape[1]
    heads, new_tokens = q.shape[1], q.shape[2]
    group_rows = heads // kv_heads * new_tokens

    def chunk_end(b, s, r):
        """The end of the keys of chunk ``s`` row ``r`` sees (at least the chunk's first: none)."""
        lo = (s * chunk).to(dt.int32)
        hi = minimum(_cached_end(cache_seqlens, b, r % new_tokens, seq_k=seq_k, causal=causal, new_tokens=new_tokens),
                     lo + chunk)
        return lo, maximum(hi, lo)

    @gpu_launch(**_elementwise_grid(q_split.shape))
    def copy(ctx):
        element, (b, hk, row, c) = _element(ctx, q_split.shape)
        s, r = row // SPLIT_ROWS, row % SPLIT_ROWS
        inside = r < group_rows
        at = minimum(r, group_rows - 1)
        with when(element):
            value = q[b, hk * (heads // kv_heads) + at // new_tokens, at % new_tokens, c]
            q_split[b, hk, row, c] = select(inside, value, constant(0.0, q_split.dtype))
            zero = constant(0, dt.int32)
            with when((hk == 0) & (c == 0)):
                lo, hi = chunk_end(b, s, at)
                first[b, row] = select(inside, lo, zero)
                end[b, row] = select(inside, hi, zero)
            with when((r == 0) & (c == 0)):
                lo = (s * chunk).to(dt.int32)

                @fori(0, group_rows, carry=lo)
                def last(a, carried):
                    return maximum(carried, chunk_end(b, s, a)[1])
                seen = last > lo
                ranges[b, hk, s, 0] = select(seen, lo // KEY_BLOCK, zero)
                ranges[b, hk, s, 1] = select(seen, (last + KEY_BLOCK - 1) // KEY_BLOCK, zero)
                ranges[b, hk, s, 2] = zero
                ranges[b, hk, s, 3] = zero
    copy()


@jit.mlir_func
def _combine_splits(o, lse, o_split, lse_split, *, splits: int):
    """``o[b, h, i] = sum_s exp(lse_s - lse) o_s`` over the chunks' rows of query ``i`` of head ``h``, and ``lse =
    log(sum_s exp(lse_s))``: a row that saw no key gets 0 and -inf."""
    from ..frontend.control import when
    from ..frontend.launch import gpu_launch
    from ..frontend.math import exp, log
    from ..frontend.values import constant, maximum, select
    heads, new_tokens = o.shape[1], o.shape[2]
    group = heads // o_split.shape[1]

    @gpu_launch(**_elementwise_grid(o.shape))
    def combine(ctx):
        element, (b, h, i, c) = _element(ctx, o.shape)
        hk, r = h // group, (h % group) * new_tokens + i
        with when(element):
            parts = [lse_split[b, hk, s * SPLIT_ROWS + r] for s in range(splits)]
            top = parts[0]
            for part in parts[1:]:
                top = maximum(top, part)
            seen = top > constant(-math.inf, dt.float32)
            base = select(seen, top, constant(0.0, dt.float32))
            weights = [exp(part - base) for part in parts]
            total = weights[0]
            acc = weights[0] * o_split[b, hk, r, c]
            for s in range(1, splits):
                total = total + weights[s]
                acc = acc + weights[s] * o_split[b, hk, s * SPLIT_ROWS + r, c]
            o[b, h, i, c] = select(seen, acc / select(seen, total, constant(1.0, dt.float32)),
                                   constant(0.0, dt.float32)).to(o.dtype)
            with when(c == 0):
                lse[b, h, i] = select(seen, base + log(total), constant(-math.inf, dt.float32))
    combine()


def _split_decode(q, k_cache, v_cache, o, lse, cache_seqlens, *, causal: bool, scale: float, splits: int,
                  chunk: int) -> None:
    """A decode step split along the cache into ``splits`` chunks of ``chunk`` keys (see above)."""
    batch, heads, new_tokens, d = q.shape
    kv_heads, seq_k = k_cache.shape[1], k_cache.shape[2]
    rows = splits * SPLIT_ROWS
    dtype = str(q.dtype).split(".")[-1]               # "float16", "bfloat16" (torch's "torch.bfloat16")
    q_split = scratch_like(q, (batch, kv_heads, rows, d), f"attention_decode.q_{dtype}", dtype)
    first = scratch_like(q, (batch, rows), "attention_decode.first", "int32")
    end = scratch_like(q, (batch, rows), "attention_decode.end", "int32")
    ranges = scratch_like(q, (batch, kv_heads, splits, 4), "attention_decode.ranges", "int32")
    o_split = scratch_like(q, (batch, kv_heads, rows, d), "attention_decode.o", "float32")
    lse_split = scratch_like(q, (batch, kv_heads, rows), "attention_decode.lse", "float32")
    _split_queries(q_split, first, end, ranges, q, cache_seqlens, seq_k=seq_k, causal=causal, chunk=chunk)
    _chunk_kernel(d, scale)(o_split, lse_split, q_split, k_cache, v_cache, ranges, first, end)
    if lse is None:
        lse = scratch_like(q, (batch, heads, new_tokens), "attention_decode.combined_lse", "float32")
    _combine_splits(o, lse, o_split, lse_split, splits=splits)


@functools.lru_cache(maxsize=None)
def _chunk_kernel(d: int, scale: float):
    """The attention kernel of a decode step's blocks of :data:`SPLIT_ROWS` rows (a call hashes neither its mapping
    nor its variant again to find it)."""
    mapping = task_mapping(d, False, SPLIT_ROWS)
    assert mapping.tile_values() == {"BM": SPLIT_ROWS, "BN": KEY_BLOCK}, mapping     # what the ranges count in
    return _kernel(False, scale, True, mapping, Variant(None, key_interval, 2))


def _rows_of_groups(x, kv_heads: int):
    """(B, H, L[, D]) as the view (B, Hkv, G * L[, D]) whose rows are the L rows of each of the G query heads that
    share a key/value head, one head after another; None where no view can be (the heads' rows not evenly
    spaced)."""
    batch, heads, rows = x.shape[:3]
    split = x.reshape(batch, kv_heads, heads // kv_heads, *x.shape[2:])     # splitting an axis: always a view
    if rows == 1:
        return split[:, :, :, 0]
    if heads == kv_heads:
        return split[:, :, 0]
    merged = (batch, kv_heads, heads // kv_heads * rows, *x.shape[3:])
    try:
        if type(x).__module__.startswith("torch"):
            return split.view(merged)
        return split.reshape(merged, copy=False)        # NumPy >= 2.1, CuPy: refused where it would copy
    except (RuntimeError, ValueError, TypeError, AttributeError):
        return None


def _heads_first(x):
    """(T, H, D) as the (1, H, T, D) view attention takes; (H, T) as (1, H, T)."""
    return (x.swapaxes(0, 1) if x.ndim == 3 else x)[None]


def _array(x, name: str, loc, what: str):
    spec, where = describe(x, name, loc)
    if spec.kind != ARRAY:
        raise ArgumentError(f"{what}: {name} must be an array, got {type(x).__name__}", code="bad-argument",
                            hint="pass a NumPy array or a CUDA tensor", loc=loc)
    return spec, where


def _checked_lengths(x, name: str, length: int | None, loc, what: str):
    """A 1-D int32 array of lengths or offsets (of ``length`` elements if given), checked."""
    spec, where = _array(x, name, loc, what)
    if spec.dtype != dt.int32 or len(spec.shape) != 1 or (length is not None and spec.shape[0] != length) or \
            spec.shape[0] < 1:
        expected = f"({length},)" if length is not None else "(S + 1,)"
        raise ArgumentError(f"{what}: {name} must be a 1-D int32 array of shape {expected}, got "
                            f"{spec.dtype.name}{list(spec.shape)}", code="bad-shape",
                            hint=f"pass e.g. torch.tensor(..., dtype=torch.int32) or np.int32 {expected}", loc=loc)
    return where


def _checked_offsets(cu, name: str, tokens: int, length: int | None, loc, what: str) -> int:
    """The number of sequences of ``cu`` (cumulative lengths, S + 1 of them), checked; values too, on the host."""
    where = _checked_lengths(cu, name, length, loc, what)
    if len(cu) < 2:
        raise ArgumentError(f"{what}: {name} has {len(cu)} element; it needs S + 1 >= 2 for S sequences",
                            code="bad-shape", hint="cu_seqlens = [0, len0, len0 + len1, ...]", loc=loc)
    if where == HOST:
        _check_offset_values(np.asarray(cu), name, tokens, loc, what)
    return len(cu) - 1


def _check_offset_values(values: np.ndarray, name: str, tokens: int, loc, what: str) -> None:
    if values[0] != 0 or (values[1:] < values[:-1]).any() or values[-1] > tokens:
        raise ArgumentError(f"{what}: {name} = {values.tolist()[:8]}{'...' if len(values) > 8 else ''} must "
                            f"start at 0, never decrease and end at most at the {tokens} packed tokens",
                            code="bad-argument", hint="cu_seqlens[s] is the first token of sequence s: "
                            "np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)",
                            loc=loc if loc is not None else user_location())


def _checked_packed(arrays: dict, loc, what: str):
    """(Tq, Tk) of packed (T, H, D) arrays (q-like, k-like), and ``lse`` (H, Tq) if given, checked for their
    rank: the rest is checked by :func:`attention` on their (1, H, T, D) views."""
    shapes = {name: _array(x, name, loc, what)[0].shape for name, x in arrays.items() if name != "lse"}
    bad = {name: list(shape) for name, shape in shapes.items() if len(shape) != 3}
    if bad:
        raise ArgumentError(f"{what} takes packed (tokens, heads, head_dim) arrays; got shapes {bad}",
                            code="bad-shape", hint="pack the sequences along the first axis (FlashAttention's "
                            "varlen layout): x.reshape(-1, heads, head_dim) of a (tokens, heads * head_dim) array",
                            loc=loc)
    tokens_q, heads = shapes["q"][:2]
    if arrays.get("lse") is not None:
        lse = _array(arrays["lse"], "lse", loc, what)[0]
        if lse.shape != (heads, tokens_q) or lse.dtype != dt.float32:
            raise ArgumentError(f"{what}: lse must be float32 of shape {(heads, tokens_q)} (heads, tokens), got "
                                f"{lse.dtype.name}{list(lse.shape)}", code="bad-shape",
                                hint=f"pass lse as a float32 array of shape {(heads, tokens_q)}, or None", loc=loc)
    return tokens_q, shapes["k"][0]


def _packed_key_intervals(q, cu_seqlens_q, cu_seqlens_k, tokens_k: int, causal: bool):
    tokens_q = q.shape[0]
    first = scratch_like(q, (1, tokens_q), "attention_varlen.first", "int32")
    end = scratch_like(q, (1, tokens_q), "attention_varlen.end", "int32")
    _packed_intervals(first, end, cu_seqlens_q, cu_seqlens_k, seq_k=tokens_k, causal=causal)
    return first, end


def _checked_varlen(arrays: dict, cu_seqlens_q, cu_seqlens_k, causal, loc, what: str):
    tokens_q, tokens_k = _checked_packed(arrays, loc, what)
    sequences = _checked_offsets(cu_seqlens_q, "cu_seqlens_q", tokens_q, None, loc, what)
    _checked_offsets(cu_seqlens_k, "cu_seqlens_k", tokens_k, sequences + 1, loc, what)
    if not isinstance(causal, bool):
        raise ArgumentError(f"{what}: causal={causal!r} must be True or False", code="bad-argument",
                            hint="pass causal=True or causal=False", loc=loc)
    if scratch_like(arrays["q"], (1,), "attention_varlen.probe", "int32") is None:
        raise ArgumentError(f"{what}: cannot allocate scratch beside q of type {type(arrays['q']).__name__}",
                            code="bad-argument", hint="pass NumPy arrays, torch tensors or CuPy arrays", loc=loc)
    return tokens_k


def attention_varlen(q, k, v, o, cu_seqlens_q, cu_seqlens_k, lse=None, *, causal: bool = False,
                     scale: float | None = None, score_mod=None, mask_mod=None, mod_args=()) -> None:
    """Attention within each of S packed sequences: ``o[a:b] = softmax(q[a:b] k[c:d]ᵀ · scale) v[c:d]`` per head
    for sequence ``s`` (``a, b = cu_seqlens_q[s], cu_seqlens_q[s + 1]``, ``c, d`` likewise of ``cu_seqlens_k``).

    Args:
        q, o: (Tq, H, D) float16 or bfloat16, views included (a slice of a packed qkv projection).
        k, v: (Tk, Hkv, D), q's dtype; H a multiple of Hkv (grouped-query attention).
        cu_seqlens_q, cu_seqlens_k: (S + 1,) int32 on q's device: 0, then each sequence's end.
        lse: (H, Tq) float32 (the natural log of each row's sum), or None.
        causal: bottom-right aligned per sequence (see the module); ``scale`` defaults to ``D ** -0.5``.
        score_mod, mask_mod, mod_args: as :func:`nvdsl.kernels.attention.attention` takes them, given ``b = 0``
            and the positions in the packed arrays (within a sequence, ``q_idx - kv_idx`` is its distance where
            ``cu_seqlens_q == cu_seqlens_k``): a soft cap, ALiBi, a sliding window per sequence.

    Compiled once per shape (of the packed arrays, not of the sequences), dtype, ``causal``, ``scale`` and mods.
    """
    if type(causal) is not bool or type(scale) not in checks.PLAIN_SCALES:     # NumPy scalars: as Python's
        causal, scale = checks.python_scalars(causal, scale)
    arrays = {"q": q, "k": k, "v": v, "o": o, "lse": lse}
    tokens_k, mods, mod_args = _planned(arrays, cu_seqlens_q, cu_seqlens_k, causal, scale, score_mod, mask_mod,
                                        mod_args, "attention_varlen")
    intervals = _packed_key_intervals(q, cu_seqlens_q, cu_seqlens_k, tokens_k, causal)
    attention(_heads_first(q), _heads_first(k), _heads_first(v), _heads_first(o),
              None if lse is None else _heads_first(lse), scale=scale, mod_args=intervals + mod_args, **mods)


def _planned(arrays: dict, cu_seqlens_q, cu_seqlens_k, causal, scale, score_mod, mask_mod, mod_args, what: str):
    """``(tokens_k, mods, mod_args)`` of a packed call, its arguments checked: a call like an earlier one (the
    same kinds, dtypes, shapes and strides, options and mods) skips the checks but for the values of offsets on
    the host (the kernels' own calls still check each array's layout and device); ``mods`` as attention runs
    the user's after the intervals."""
    mod_args = tuple(mod_args) if isinstance(mod_args, (tuple, list)) else mod_args
    plan = None
    if isinstance(causal, bool) and (scale is None or type(scale) in (int, float)) and isinstance(mod_args, tuple):
        plan = (what, tuple(None if x is None else signature_key(x) for x in arrays.values()),
                signature_key(cu_seqlens_q), signature_key(cu_seqlens_k), causal, scale, score_mod, mask_mod,
                tuple(map(signature_key, mod_args)))
        found = _VARLEN_PLANS.find(plan)
        if found is not None:
            tokens_k = found[0]
            for cu, name, tokens in ((cu_seqlens_q, "cu_seqlens_q", arrays["q"].shape[0]),
                                     (cu_seqlens_k, "cu_seqlens_k", tokens_k)):
                if type(cu) is np.ndarray:
                    _check_offset_values(cu, name, tokens, None, what)
            return tokens_k, dict(found[1]), mod_args
    loc = user_location()
    tokens_k = _checked_varlen(arrays, cu_seqlens_q, cu_seqlens_k, causal, loc, what)
    _variant(score_mod, mask_mod, mod_args, loc, what)
    mods = {"score_mod": _after_intervals(score_mod) if score_mod is not None else None,
            "mask_mod": _within_sequences(mask_mod, len(mod_args))}
    _VARLEN_PLANS.remember(plan, (tokens_k, tuple(mods.items())))
    return tokens_k, mods, mod_args


_VARLEN_PLANS = checks.CallPlans()        # call signature -> (keys, the mods as attention runs them)


def attention_varlen_backward(q, k, v, o, lse, do, dq, dk, dv, cu_seqlens_q, cu_seqlens_k, *, causal: bool = False,
                              scale: float | None = None, score_mod=None, mask_mod=None, mod_args=()) -> None:
    """The gradients of :func:`attention_varlen`: given its inputs, its output ``o`` and ``lse``, and the gradient
    ``do`` of a loss with respect to ``o`` (Tq, H, D), write ``dq`` (Tq, H, D), ``dk`` and ``dv`` (Tk, Hkv, D)
    (:func:`nvdsl.kernels.attention.attention_backward`: D = 64, 128 or 256, the same bits on every run). Keys no query
    sees get zero gradients. ``score_mod``, ``mask_mod`` and ``mod_args`` as given to the forward."""
    if type(causal) is not bool or type(scale) not in checks.PLAIN_SCALES:     # NumPy scalars: as Python's
        causal, scale = checks.python_scalars(causal, scale)
    arrays = {"q": q, "k": k, "v": v, "o": o, "lse": lse, "do": do, "dq": dq, "dk": dk, "dv": dv}
    tokens_k, mods, mod_args = _planned(arrays, cu_seqlens_q, cu_seqlens_k, causal, scale, score_mod, mask_mod,
                                        mod_args, "attention_varlen_backward")
    intervals = _packed_key_intervals(q, cu_seqlens_q, cu_seqlens_k, tokens_k, causal)
    attention_backward(*(_heads_first(x) for x in (q, k, v, o, lse, do, dq, dk, dv)), scale=scale,
                       mod_args=intervals + mod_args, **mods)


def attention_decode(q, k_cache, v_cache, o, cache_seqlens, lse=None, *, causal: bool = True,
                     scale: float | None = None) -> None:
    """Attention of each sequence's newest ``Lq`` tokens against its KV cache, of which sequence ``b`` holds
    ``cache_seqlens[b]`` tokens (the new ones included, written there before the call).

    Args:
        q, o: (B, H, Lq, D) float16 or bfloat16, views included (``x.transpose(1, 2)`` of (B, Lq, H, D)).
        k_cache, v_cache: (B, Hkv, Lmax, D), q's dtype, views included; H a multiple of Hkv.
        cache_seqlens: (B,) int32 on q's device; entries past ``Lmax`` are taken as ``Lmax``.
        lse: (B, H, Lq) float32, or None.
        causal: query ``i`` is token ``cache_seqlens[b] - Lq + i`` and sees the keys up to it (default); with
            ``causal=False``, every cached key of its sequence. ``scale`` defaults to ``D ** -0.5``.

    The G query heads of a key/value head run as one block of G * Lq rows against its cache, so that each cache
    is read once per group. Where those rows fit one block of 64 (and D <= 128), they are copied into it, once per
    chunk of the cache: where B * Hkv blocks would leave SMs idle, the cache is cut into chunks of at least 512
    keys, a block each, combined by a second kernel (:func:`decode_splits`; float32 scratch beside ``q``). More
    rows run as attention over the whole cache (the group's rows a view where they are evenly spaced, as in any
    contiguous layout; else a block per query head). Compiled once per shape, dtype, ``causal`` and ``scale``: new
    lengths need no new compile.
    """
    if type(causal) is not bool or type(scale) not in checks.PLAIN_SCALES:     # NumPy scalars: as Python's
        causal, scale = checks.python_scalars(causal, scale)
    plan = None
    if isinstance(causal, bool) and (scale is None or type(scale) in (int, float)):
        # The checks below are per signature; a call like an earlier one skips them (the kernels' own calls still
        # check each array's layout and device), all but the NumPy lengths' values.
        plan = (tuple(signature_key(x) for x in (q, k_cache, v_cache, o, lse, cache_seqlens)), causal, scale)
        launch = _DECODE_PLANS.get(plan)
        if launch is not None and not (isinstance(cache_seqlens, np.ndarray) and (cache_seqlens < 0).any()):
            launch(q, k_cache, v_cache, o, lse, cache_seqlens)
            return
    loc = user_location()
    arrays = {"q": q, "k": k_cache, "v": v_cache, "o": o, "lse": lse}
    specs = {name: _array(x, name, loc, "attention_decode")[0] for name, x in arrays.items() if x is not None}
    (batch, heads, new_tokens, d), kv_heads, seq_k, scale = _checked_problem(specs, False, scale, loc,
                                                                             "attention_decode (k, v: the caches)")
    where = _checked_lengths(cache_seqlens, "cache_seqlens", batch, loc, "attention_decode")
    if where == HOST and np.any(np.asarray(cache_seqlens) < 0):
        raise ArgumentError(f"attention_decode: cache_seqlens has negative entries: {np.asarray(cache_seqlens)}",
                            code="bad-argument", hint="each entry is how many tokens that sequence's cache holds",
                            loc=loc)
    if not isinstance(causal, bool):
        raise ArgumentError(f"attention_decode: causal={causal!r} must be True or False", code="bad-argument",
                            hint="pass causal=True or causal=False", loc=loc)
    check_outputs_writable({"o": o, "lse": lse}, loc)
    if scratch_like(q, (1,), "attention_decode.probe", "int32") is None:
        raise ArgumentError(f"attention_decode: cannot allocate scratch beside q of type {type(q).__name__}",
                            code="bad-argument", hint="pass NumPy arrays, torch tensors or CuPy arrays", loc=loc)
    rows = heads // kv_heads * new_tokens
    splits, chunk = decode_splits(batch, kv_heads, rows, seq_k, jit.sm_count())
    launch = functools.partial(_split_decode if in_chunks(rows, d) else _decode, causal=causal, scale=scale,
                               splits=splits, chunk=chunk)
    if plan is not None:
        _DECODE_PLANS[plan] = launch
    launch(q, k_cache, v_cache, o, lse, cache_seqlens)


_DECODE_PLANS: dict = {}        # call signature -> the launch its checks chose


def _decode(q, k_cache, v_cache, o, lse, cache_seqlens, *, causal: bool, scale: float, splits: int,
            chunk: int) -> None:
    """A decode step whose rows do not fit one block (:func:`in_chunks`): attention over the whole cache."""
    batch, heads, new_tokens = q.shape[:3]
    kv_heads, seq_k = k_cache.shape[1], k_cache.shape[2]
    # The query heads sharing a key/value head are one block of rows against it: its keys and values are read
    # once for the group, and the group's rows fill a tile that one head's few new tokens would leave empty.
    # (A block per query head instead, for more blocks where B * Hkv is below the SM count, measured no better
    # on an H200: 0.7-1.4x of grouped from B = 1 to 8.)
    if heads != kv_heads:
        grouped = [None if x is None else _rows_of_groups(x, kv_heads) for x in (q, o, lse)]
        if all(g is not None or x is None for g, x in zip(grouped, (q, o, lse))):
            q, o, lse = grouped
    rows = q.shape[2]
    first = scratch_like(q, (batch, rows), "attention_decode.first", "int32")
    end = scratch_like(q, (batch, rows), "attention_decode.end", "int32")
    _cache_intervals(first, end, cache_seqlens, seq_k=seq_k, causal=causal, new_tokens=new_tokens)
    attention(q, k_cache, v_cache, o, lse, scale=scale, mask_mod=key_interval, mod_args=(first, end))

"""Packed sequences (FlashAttention's varlen convention) and a decode step against a KV cache
(nvdsl.kernels.attention_varlen): forward and backward against float64 NumPy, per sequence, in the interpreter (CI)
and on the GPU, where they are also checked against torch autograd through scaled_dot_product_attention."""

import numpy as np
import pytest

import nvdsl.kernels.attention as library
import nvdsl.kernels.attention_varlen as varlen
from nvdsl.errors import ArgumentError
from nvdsl.testing import requires_gpu
from test_attention import random_arrays
from test_attention_backward import assert_within, reference as backward_reference
from test_attention_variants import check_forward


@pytest.fixture(autouse=True)
def fresh_kernels():
    library._kernel.cache_clear()
    library._CHECKED.clear()
    library._built.cache_clear()
    varlen._DECODE_PLANS.clear()
    varlen._VARLEN_PLANS.clear()
    varlen._chunk_kernel.cache_clear()


def offsets(lengths):
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)


def packed_keep(cu_q, cu_k, tokens_q, tokens_k, causal):
    """(Tq, Tk): which keys each packed query sees, sequence by sequence (bottom-right causal)."""
    keep = np.zeros((tokens_q, tokens_k), bool)
    for s in range(len(cu_q) - 1):
        (a, b), (c, d) = cu_q[s:s + 2], cu_k[s:s + 2]
        i, j = np.indices((b - a, d - c))
        keep[a:b, c:d] = (j <= i + (d - c) - (b - a)) if causal else True
    return keep


def heads_first(x):
    return x.swapaxes(0, 1)[None]


def packed_problem(tokens_q, tokens_k, h, hkv, d, dtype, seed=0):
    q, = random_arrays(seed, dtype, (tokens_q, h, d))
    k, v = random_arrays(seed + 1, dtype, (tokens_k, hkv, d), (tokens_k, hkv, d))
    return q, k, v


# sequences of ragged lengths, one without queries, one with one key, queries and keys of different lengths, and
# tokens past the last sequence (padding in the packed arrays): those see no key
LENGTHS_Q, LENGTHS_K, PADDING = [70, 0, 130, 33, 64], [90, 20, 130, 1, 64], 5


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("h, hkv, d, dtype", [(2, 1, 64, "float16"), (1, 1, 128, "bfloat16"), (2, 1, 256, "float16")])
def test_varlen_forward_and_backward_match_numpy(causal, h, hkv, d, dtype, backend):
    cu_q, cu_k = offsets(LENGTHS_Q), offsets(LENGTHS_K)
    tokens_q, tokens_k = int(cu_q[-1]) + PADDING, int(cu_k[-1]) + PADDING
    q, k, v = packed_problem(tokens_q, tokens_k, h, hkv, d, dtype)
    o, lse = np.full_like(q, 7), np.zeros((h, tokens_q), np.float32)
    varlen.attention_varlen(q, k, v, o, cu_q, cu_k, lse, causal=causal)
    keep = packed_keep(cu_q, cu_k, tokens_q, tokens_k, causal)
    q4, k4, v4, o4 = map(heads_first, (q, k, v, o))
    check_forward(o4, lse[None], q4, k4, v4, None, keep, dtype)
    assert np.all(o[cu_q[-1]:] == 0) and np.all(lse[:, cu_q[-1]:] == -np.inf)     # exact: rows with no key

    do, = random_arrays(7, dtype, q.shape)
    dq, dk, dv = np.zeros_like(q), np.full_like(k, 3), np.full_like(v, 3)
    varlen.attention_varlen_backward(q, k, v, o, lse, do, dq, dk, dv, cu_q, cu_k, causal=causal)
    expected = backward_reference(q4, k4, v4, o4, heads_first(do), False, d ** -0.5, keep=keep)
    for name, computed, (value, bound) in zip(("dq", "dk", "dv"), (dq, dk, dv), expected):
        assert_within(heads_first(computed), value, bound, name)


def window(b, h, q_idx, kv_idx):
    return q_idx - kv_idx < WINDOW


WINDOW = 40


@pytest.mark.parametrize("causal, name", [(False, "softcap_window"), (True, "softcap_window"), (True, "alibi")])
def test_varlen_with_mods_matches_numpy(causal, name, backend):
    """The mods see positions in the packed arrays: with the same offsets for queries and keys, a window of 40
    keys back from each query and ALiBi's distances hold within each sequence; the soft cap's derivative is derived
    as for attention; ALiBi reads its slopes from mod_args with no mask_mod of its own."""
    from test_attention_variants import CAP, alibi, softcap
    cu = offsets([70, 0, 130, 33, 64])
    tokens = int(cu[-1]) + PADDING
    q, k, v = packed_problem(tokens, tokens, 2, 1, 64, "float16")
    o, lse = np.zeros_like(q), np.zeros((2, tokens), np.float32)
    i, j = np.indices((tokens, tokens))
    keep = packed_keep(cu, cu, tokens, tokens, causal)
    if name == "alibi":
        slopes = np.array([0.5, 0.125], np.float32)
        mods = {"score_mod": alibi, "mod_args": (slopes,)}
        capped = lambda s: (s + slopes[:, None, None] * (j - i), 1.0)        # noqa: E731
    else:
        mods = {"score_mod": softcap, "mask_mod": window}
        keep = keep & (i - j < WINDOW)
        capped = lambda s: (CAP * np.tanh(s / CAP), 1 - np.tanh(s / CAP) ** 2)     # noqa: E731
    varlen.attention_varlen(q, k, v, o, cu, cu, lse, causal=causal, **mods)
    q4, k4, v4, o4 = map(heads_first, (q, k, v, o))
    check_forward(o4, lse[None], q4, k4, v4, capped, keep, "float16")
    do, = random_arrays(7, "float16", q.shape)
    dq, dk, dv = np.zeros_like(q), np.full_like(k, 3), np.full_like(v, 3)
    varlen.attention_varlen_backward(q, k, v, o, lse, do, dq, dk, dv, cu, cu, causal=causal, **mods)
    expected = backward_reference(q4, k4, v4, o4, heads_first(do), False, 64 ** -0.5, score_mod=capped, keep=keep)
    for name, computed, (value, bound) in zip(("dq", "dk", "dv"), (dq, dk, dv), expected):
        assert_within(heads_first(computed), value, bound, name)


def wide_window(b, h, q_idx, kv_idx):
    return q_idx - kv_idx < 200


def pair_by_pair_refused(*masks):
    """library._kept_blocks, refusing the masks ``masks``: their tables must come from their block_tables."""
    general = library._kept_blocks

    def kernel(mask_mod, *args):
        assert mask_mod not in masks, f"{mask_mod} evaluated pair by pair"
        return general(mask_mod, *args)
    return kernel


def test_a_mask_with_the_intervals_has_both_tables(backend, monkeypatch):
    """The blocks a packed mask_mod leaves: missing where either leaves a pair out (exactly those of the mask and
    intervals evaluated pair by pair), kept where both keep some pair (at least the exact ones); the user's mask
    alone is evaluated pair by pair, the mask with the intervals never."""
    cu = offsets([70, 0, 300, 33])
    tokens = int(cu[-1]) + 40
    q = np.zeros((1, 2, tokens, 64), np.float16)
    first, end = (np.zeros((1, tokens), np.int32) for _ in range(2))
    varlen._packed_intervals(first, end, cu, cu, seq_k=tokens, causal=True)
    both = varlen._within_sequences(wide_window, 0)
    exact = [np.zeros((1, 1, -(-tokens // 64), -(-tokens // 64)), np.int32) for _ in range(2)]
    library._kept_blocks(both, False, tokens, tokens, 0, 0)(*exact, first, end)
    monkeypatch.setattr(library, "_kept_blocks", pair_by_pair_refused(both, varlen.key_interval))
    kept, missing = library.kept_blocks(q, both, False, tokens, (first, end))
    np.testing.assert_array_equal(missing, exact[1])        # exact: tables of 0 and 1
    assert np.all(kept >= exact[0]) and exact[0].any() and not missing.all()


def test_packed_qkv_slices_and_new_lengths_reuse_the_kernels(backend):
    """q, k, v as the three slices of one packed (T, 3, H, D) projection, o a (T, H, D) view of a (T, H * D)
    buffer; a second batch of lengths runs through the kernels the first compiled."""
    tokens, h, d = 300, 2, 64
    qkv, = random_arrays(3, "float16", (tokens, 3, h, d))
    q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]
    buffer = np.zeros((tokens, h * d), np.float16)
    o = buffer.reshape(tokens, h, d)
    for lengths in ([100, 200], [37, 1, 262]):
        cu = offsets(lengths)
        varlen.attention_varlen(q, k, v, o, cu, cu, causal=True)
        keep = packed_keep(cu, cu, tokens, tokens, True)
        expected, _ = library_reference(q, k, v, keep)
        np.testing.assert_allclose(buffer.reshape(tokens, h, d).astype(np.float32), expected, atol=4e-3, rtol=4e-3)
    assert library._kernel.cache_info().currsize == 1


def library_reference(q, k, v, keep):
    from test_attention_variants import forward_reference
    o, lse = forward_reference(*map(heads_first, (q, k, v)), None, keep)
    return o[0].swapaxes(0, 1), lse


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("sms, d", [(1, 128), (100, 128), (100, 256)])
def test_decode_against_a_cache_matches_numpy(causal, sms, d, backend, monkeypatch):
    """Three new tokens per sequence against caches holding 0 (none seen), 2 (fewer than the new tokens), 770, 1100
    (all of Lmax) and 5000 (more than Lmax: taken as Lmax) tokens; grouped heads (a block of rows per group). With
    one SM, the cache is one chunk; with 100, three, combined after (split along the cache); at D = 256, attention
    over the whole cache with the group's rows as a view."""
    monkeypatch.setattr(varlen.jit, "sm_count", lambda: sms)
    b, h, hkv, rows, capacity = 5, 4, 2, 3, 1100
    assert varlen.decode_splits(b, hkv, h // hkv * rows, capacity, sms) == ((1, 1100) if sms == 1 else (3, 384))
    assert varlen.in_chunks(h // hkv * rows, d) == (d == 128)
    q, = random_arrays(0, "float16", (b, h, rows, d))
    k, v = random_arrays(1, "float16", (b, hkv, capacity, d), (b, hkv, capacity, d))
    held = np.array([0, 2, 770, 1100, 5000], np.int32)
    o, lse = np.zeros_like(q), np.zeros((b, h, rows), np.float32)
    varlen.attention_decode(q, k, v, o, held, lse, causal=causal)
    n = np.minimum(held, capacity)[:, None, None, None]
    i, j = np.arange(rows)[:, None], np.arange(capacity)[None]
    keep = (j < n) & ((j <= n - rows + i) if causal else True)
    check_forward(o, lse, q, k, v, None, keep, "float16")


def test_decode_runs_a_group_of_query_heads_as_one_block_of_rows():
    """Under grouped-query attention the heads sharing a cache are one block of rows (a view), where their rows are
    evenly spaced; a layout where they are not (the (B, Lq, H, D) projection's transposed view) runs per head."""
    q = np.zeros((2, 8, 3, 64), np.float16)
    grouped = varlen._rows_of_groups(q, 2)
    assert grouped.shape == (2, 2, 12, 64) and np.shares_memory(grouped, q)
    grouped[1, 1, 5] = 1                                    # head 1 * 4 + 5 // 3, query 5 % 3
    assert q[1, 5, 2].all() and np.count_nonzero(q) == 64
    assert varlen._rows_of_groups(np.zeros((2, 3, 8, 64), np.float16).transpose(0, 2, 1, 3), 2) is None
    one = np.zeros((2, 1, 8, 64), np.float16).transpose(0, 2, 1, 3)     # one new token: any layout
    assert np.shares_memory(varlen._rows_of_groups(one, 2), one)


def test_a_decode_call_like_an_earlier_one_skips_its_checks(monkeypatch):
    """Per token of a generation the same shapes come again: the second call's launch is the first's plan, except
    that NumPy lengths are still checked for negative entries."""
    q, = random_arrays(0, "float16", (1, 2, 1, 64))
    k, v = random_arrays(1, "float16", (1, 1, 128, 64), (1, 1, 128, 64))
    o = np.zeros_like(q)
    checked = []
    original = varlen._checked_problem
    monkeypatch.setattr(varlen, "_checked_problem", lambda *a: checked.append(1) or original(*a))
    for held in (100, 90):
        varlen.attention_decode(q, k, v, o, np.array([held], np.int32))
    assert len(checked) == 1 and len(varlen._DECODE_PLANS) == 1
    with pytest.raises(ArgumentError, match="negative"):
        varlen.attention_decode(q, k, v, o, np.array([-3], np.int32))


def test_a_packed_call_like_an_earlier_one_skips_its_checks(monkeypatch):
    """A training loop's next batch has new lengths in arrays of the same shapes: forward and backward skip their
    argument checks (not the values of offsets on the host); a new shape is checked again."""
    tokens, h, d = 160, 2, 64
    q, k, v = packed_problem(tokens, tokens, h, 1, d, "float16")
    o, lse = np.zeros_like(q), np.zeros((h, tokens), np.float32)
    do, = random_arrays(5, "float16", q.shape)
    dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
    checked = []
    original = varlen._checked_varlen
    monkeypatch.setattr(varlen, "_checked_varlen", lambda *a: checked.append(a[-1]) or original(*a))
    for lengths in ([100, 60], [30, 130]):
        cu = offsets(lengths)
        varlen.attention_varlen(q, k, v, o, cu, cu, lse, causal=True)
        varlen.attention_varlen_backward(q, k, v, o, lse, do, dq, dk, dv, cu, cu, causal=True)
        keep = packed_keep(cu, cu, tokens, tokens, True)
        check_forward(*map(heads_first, (o,)), lse[None], *map(heads_first, (q, k, v)), None, keep, "float16")
        expected = backward_reference(*map(heads_first, (q, k, v, o, do)), False, d ** -0.5, keep=keep)
        for name, computed, (value, bound) in zip(("dq", "dk", "dv"), (dq, dk, dv), expected):
            assert_within(heads_first(computed), value, bound, name)
    assert checked == ["attention_varlen", "attention_varlen_backward"]
    with pytest.raises(ArgumentError, match="never decrease") as error:          # values on the host: checked
        varlen.attention_varlen(q, k, v, o, offsets([100, 60])[::-1].copy(), offsets([100, 60]), lse, causal=True)
    assert error.value.code == "bad-argument"
    varlen.attention_varlen(q[:150], k[:150], v[:150], o[:150], offsets([100, 50]), offsets([100, 50]))
    assert checked[-1] == "attention_varlen"            # another shape: checked again
    assert len(checked) == 3


def test_decode_with_heads_that_cannot_be_grouped_matches_numpy(backend):
    """40 new tokens of 2 heads a group: more rows than a block; in a layout whose rows of a group are not evenly
    spaced, a block per query head."""
    b, h, hkv, rows, capacity, d = 2, 4, 2, 40, 100, 64
    assert not varlen.in_chunks(h // hkv * rows, d)
    x, = random_arrays(0, "float16", (b, rows, h, d))
    q = x.transpose(0, 2, 1, 3)
    k, v = random_arrays(1, "float16", (b, hkv, capacity, d), (b, hkv, capacity, d))
    held = np.array([60, 100], np.int32)
    o, lse = np.zeros_like(q), np.zeros((b, h, rows), np.float32)
    varlen.attention_decode(q, k, v, o, held, lse)
    assert library._kernel.cache_info().currsize == 1
    i, j = np.arange(rows)[:, None], np.arange(capacity)[None]
    n = held[:, None, None, None]
    check_forward(o, lse, q, k, v, None, (j < n) & (j <= n - rows + i), "float16")


@pytest.mark.parametrize("causal", [False, True])
def test_interval_tables_match_the_mask_evaluated_pair_by_pair(causal, backend, monkeypatch):
    """The block tables found from the intervals per row (kept_blocks takes them from the mask's block_tables,
    never evaluating it pair by pair) are those of evaluating the mask on every pair (kept_blocks' general
    kernel), including blocks past the ends."""
    cu_q, cu_k = offsets([70, 0, 300, 33]), offsets([90, 20, 300, 1])
    q = np.zeros((1, 2, cu_q[-1] + 40, 64), np.float16)
    tokens_k = int(cu_k[-1]) + 7
    first = np.zeros((1, q.shape[2]), np.int32)
    end = np.zeros_like(first)
    varlen._packed_intervals(first, end, cu_q, cu_k, seq_k=tokens_k, causal=True)
    blocks = (1, 1, -(-q.shape[2] // 64), -(-tokens_k // 64))
    general = [np.zeros(blocks, np.int32) for _ in range(2)]
    library._kept_blocks(varlen.key_interval, causal, q.shape[2], tokens_k, 0, 0)(*general, first, end)
    monkeypatch.setattr(library, "_kept_blocks", pair_by_pair_refused(varlen.key_interval))
    tables = library.kept_blocks(q, varlen.key_interval, causal, tokens_k, (first, end))
    for name, found, expected in zip(("kept", "missing"), tables, general):
        np.testing.assert_array_equal(found, expected, err_msg=name)     # exact: tables of 0 and 1
    assert general[0].any() and not general[0].all() and general[1].any() and not general[1].all()


def test_bad_lengths_are_named_with_codes_at_the_callers_line():
    q, k, v = packed_problem(64, 64, 1, 1, 64, "float16")
    o = np.zeros_like(q)
    line = test_bad_lengths_are_named_with_codes_at_the_callers_line.__code__.co_firstlineno
    cases = [
        (np.array([0, 64], np.int64), np.array([0, 64], np.int32), "bad-shape", "cu_seqlens_q must be a 1-D int32"),
        (np.array([0, 40, 30], np.int32), np.array([0, 30, 64], np.int32), "bad-argument", "never decrease"),
        (np.array([0, 64], np.int32), np.array([0, 30, 64], np.int32), "bad-shape", "cu_seqlens_k must be"),
        (np.array([0, 65], np.int32), np.array([0, 64], np.int32), "bad-argument", "64 packed tokens"),
    ]
    for cu_q, cu_k, code, words in cases:
        with pytest.raises(ArgumentError, match=words) as raised:
            varlen.attention_varlen(q, k, v, o, cu_q, cu_k)
        assert raised.value.code == code and raised.value.hint
        assert raised.value.loc.filename == __file__ and raised.value.loc.line > line
    with pytest.raises(ArgumentError, match="packed \\(tokens, heads, head_dim\\)") as raised:
        varlen.attention_varlen(q[None], k, v, o, np.array([0, 64], np.int32), np.array([0, 64], np.int32))
    assert raised.value.code == "bad-shape"
    with pytest.raises(ArgumentError, match="lse must be float32 of shape \\(1, 64\\)"):
        varlen.attention_varlen(q, k, v, o, np.array([0, 64], np.int32), np.array([0, 64], np.int32),
                                np.zeros((64, 1), np.float32))
    with pytest.raises(ArgumentError, match="cache_seqlens must be a 1-D int32 array of shape \\(1,\\)"):
        varlen.attention_decode(q[None], k[None], v[None], o[None], np.array([3, 4], np.int32))
    with pytest.raises(ArgumentError, match="negative"):
        varlen.attention_decode(q[None], k[None], v[None], o[None], np.array([-1], np.int32))


# --- on the GPU, against torch ---------------------------------------------------------------------------------

@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
def test_varlen_gradients_match_torch_autograd_per_sequence(causal):
    """torch tensors on the GPU, with the lengths on the device, against torch autograd through
    scaled_dot_product_attention in float64, sequence by sequence (bottom-right causal where Lq != Lk)."""
    torch = pytest.importorskip("torch")
    cu_q, cu_k = offsets([1000, 37, 2048, 511]), offsets([1000, 300, 2048, 600])
    tokens_q, tokens_k, h, hkv, d = int(cu_q[-1]), int(cu_k[-1]), 4, 2, 128
    gen = torch.Generator(device="cuda").manual_seed(0)
    make = lambda tokens, heads: torch.randn(tokens, heads, d, device="cuda", generator=gen).bfloat16()  # noqa
    q, k, v, do = make(tokens_q, h), make(tokens_k, hkv), make(tokens_k, hkv), make(tokens_q, h)
    o, lse = torch.empty_like(q), torch.empty(h, tokens_q, device="cuda")
    lengths = [torch.from_numpy(cu).cuda() for cu in (cu_q, cu_k)]
    varlen.attention_varlen(q, k, v, o, *lengths, lse, causal=causal)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    varlen.attention_varlen_backward(q, k, v, o, lse, do, dq, dk, dv, *lengths, causal=causal)
    leaves = [x.double().requires_grad_() for x in (q, k, v)]
    for s in range(len(cu_q) - 1):
        (a, b), (c, e) = cu_q[s:s + 2], cu_k[s:s + 2]
        sq, sk, sv = (x[lo:hi].transpose(0, 1)[None] for x, (lo, hi) in zip(leaves, ((a, b), (c, e), (c, e))))
        sk, sv = (x.repeat_interleave(h // hkv, dim=1) for x in (sk, sv))
        keep = torch.from_numpy(packed_keep(cu_q[s:s + 2] - a, cu_k[s:s + 2] - c, b - a, e - c, causal)).cuda()
        out = torch.nn.functional.scaled_dot_product_attention(sq, sk, sv, attn_mask=keep)
        out.backward(do[a:b].double().transpose(0, 1)[None])
    numpy = lambda x: x.float().cpu().numpy()    # noqa: E731
    keep = packed_keep(cu_q, cu_k, tokens_q, tokens_k, causal)
    bounds = backward_reference(*(heads_first(numpy(x)) for x in (q, k, v, o, do)), False, d ** -0.5, "bfloat16",
                                exact_o=True, keep=keep)
    for name, computed, leaf, (_, bound) in zip(("dq", "dk", "dv"), (dq, dk, dv), leaves, bounds):
        assert_within(heads_first(computed.double().cpu().numpy()), heads_first(leaf.grad.cpu().numpy()), bound,
                      name)

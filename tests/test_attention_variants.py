"""Attention variants written in Python (``score_mod``, ``mask_mod``, FlexAttention's meaning) in
nvdsl.kernels.attention: the forward and the backward (the score_mod's derivative derived by nvdsl) against
float64 NumPy, with arrays the mods read passed as kernel arguments. In the interpreter (CI) and on the GPU, where
they are also checked against torch autograd."""

import dataclasses

import numpy as np
import pytest

import nvdsl
import nvdsl.kernels.attention as library
from nvdsl import tasks as nt
from nvdsl.errors import ArgumentError
from nvdsl.testing import requires_gpu
from test_attention import problem
from test_attention_backward import assert_within, reference as backward_reference

CAP, WINDOW = 20.0, 48


def softcap(score, b, h, q_idx, kv_idx):
    return CAP * nt.tanh(score / CAP)


def alibi(score, b, h, q_idx, kv_idx, slopes):
    return score + slopes[h] * (kv_idx - q_idx)


def sliding_window(b, h, q_idx, kv_idx):
    return (q_idx >= kv_idx) & (q_idx - kv_idx < WINDOW)


def document(b, h, q_idx, kv_idx, doc):
    return doc[b, q_idx] == doc[b, kv_idx]


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def wide_window(b, h, q_idx, kv_idx):
    return (q_idx >= kv_idx) & (q_idx - kv_idx < WIDE)


WIDE = 300          # a window that keeps whole blocks: their steps skip the mask


def documents(b, length, seed=0):
    """A document id per token: documents of random lengths, packed."""
    rng = np.random.default_rng(seed)
    return np.cumsum(rng.random((b, length)) < 0.02, axis=1).astype(np.int32)


def variant(name, b, h, l, lk):
    """(kwargs for the kernels, the float64 score mod of the reference (scores -> (modded, derivative)), the
    reference's mask (B, H, L, Lk)) of variant ``name``."""
    bb, hh, qi, ki = np.meshgrid(np.arange(b), np.arange(h), np.arange(l), np.arange(lk), indexing="ij")
    if name == "softcap":
        return {"score_mod": softcap}, lambda s: (CAP * np.tanh(s / CAP), 1 - np.tanh(s / CAP) ** 2), None
    if name == "alibi":
        slopes = (2.0 ** -np.arange(1, h + 1)).astype(np.float32)
        return {"score_mod": alibi, "mod_args": (slopes,)}, lambda s: (s + slopes[hh] * (ki - qi), 1.0), None
    if name == "sliding_window":
        return {"mask_mod": sliding_window}, None, (qi >= ki) & (qi - ki < WINDOW)
    if name == "document":
        doc = documents(b, max(l, lk))
        return {"mask_mod": document, "mod_args": (doc,)}, None, doc[bb, qi] == doc[bb, ki]
    if name == "causal_mask_mod":
        return {"mask_mod": causal}, None, qi >= ki
    if name == "wide_window_softcap":
        return {"score_mod": softcap, "mask_mod": wide_window}, \
            lambda s: (CAP * np.tanh(s / CAP), 1 - np.tanh(s / CAP) ** 2), (qi >= ki) & (qi - ki < WIDE)
    if name == "long_documents":
        doc = np.repeat((np.arange(max(l, lk)) // 256)[None].astype(np.int32), b, axis=0)   # whole blocks in them
        return {"mask_mod": document, "mod_args": (doc,)}, None, doc[bb, qi] == doc[bb, ki]
    if name == "softcap_and_window":
        return {"score_mod": softcap, "mask_mod": sliding_window}, \
            lambda s: (CAP * np.tanh(s / CAP), 1 - np.tanh(s / CAP) ** 2), (qi >= ki) & (qi - ki < WINDOW)
    raise ValueError(name)


def forward_reference(q, k, v, score_mod, keep):
    """float64 (O, lse) of a variant; a row with no key left gets O = 0, lse = -inf."""
    scale = q.shape[-1] ** -0.5
    group = q.shape[1] // k.shape[1]
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = q @ k.transpose(0, 1, 3, 2) * scale
    if score_mod is not None:
        s = score_mod(s)[0]
    if keep is not None:
        s = np.where(keep, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m)
    total = e.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        return e / np.where(total > 0, total, 1.0) @ v, (m + np.log(total))[..., 0]


def check_forward(o, lse, q, k, v, score_mod, keep, dtype):
    o_ref, lse_ref = forward_reference(q, k, v, score_mod, keep)
    tolerance = 4e-3 if dtype == "float16" else 3e-2          # P rounded to 16 bits for P V, O to the output type
    np.testing.assert_allclose(o.astype(np.float32), o_ref, atol=tolerance, rtol=tolerance)
    np.testing.assert_allclose(lse, lse_ref, atol=2e-4, rtol=1e-5)


def run(name, b, h, hkv, l, lk, d, dtype):
    kwargs, score_mod, keep = variant(name, b, h, l, lk)
    q, k, v, o, lse = problem(b, h, hkv, l, lk, d, dtype)
    library.attention(q, k, v, o, lse, **kwargs)
    check_forward(o, lse, q, k, v, score_mod, keep, dtype)
    do, = problem(b, h, hkv, l, lk, d, dtype, 7)[:1]
    dq, dk, dv = np.zeros_like(q), np.full_like(k, 3), np.full_like(v, 3)
    library.attention_backward(q, k, v, o, lse, do, dq, dk, dv, **kwargs)
    expected = backward_reference(q, k, v, o, do, False, d ** -0.5, score_mod=score_mod, keep=keep)
    for grad_name, computed, (value, bound) in zip(("dq", "dk", "dv"), (dq, dk, dv), expected):
        assert_within(computed, value, bound, f"{name} {grad_name}")
    return (q, k, v, o, lse, do), (dq, dk, dv)


@pytest.fixture(autouse=True)
def fresh_kernels():
    library._kernel.cache_clear()
    library._CHECKED.clear()
    library._built.cache_clear()


VARIANTS = ["softcap", "alibi", "sliding_window", "document", "causal_mask_mod", "softcap_and_window"]


@pytest.mark.parametrize("name", VARIANTS)
def test_variant_forward_and_backward_match_numpy(name, backend):
    """Ragged L (a masked last key block, rows past L), grouped heads."""
    run(name, 1, 2, 1, 200, 200, 64, "float16")


@pytest.mark.parametrize("name", ["wide_window_softcap", "long_documents"])
def test_blocks_a_mask_keeps_whole_skip_it(name, backend):
    """Masks that keep whole blocks (a window of 300 keys, documents of 256 tokens): the forward's steps on those
    blocks run without the mask (the ranges' full runs), the others with it; the backward masks every step."""
    run(name, 1, 2, 1, 700, 700, 64, "float16")
    kwargs, _, keep = variant(name, 1, 2, 700, 700)
    q = np.zeros((1, 2, 700, 64), np.float16)
    ranges = library.block_ranges(q, library.kept_blocks(q, kwargs["mask_mod"], False, 700, kwargs.get("mod_args", ())),
                                  128, 128)
    assert (ranges[..., 3] > ranges[..., 2]).any(), "no block is kept whole: the test would not see the skip"
    for x in range(ranges.shape[2]):                 # every block of a full run keeps every pair
        for j in range(ranges[0, 0, x, 2], ranges[0, 0, x, 3]):
            assert keep[0, 0, x * 128:(x + 1) * 128, j * 128:(j + 1) * 128].all()


def test_variants_with_bfloat16_and_head_dim_128(backend):
    run("softcap_and_window", 1, 2, 2, 130, 257, 128, "bfloat16")


def test_a_row_with_no_key_left_gets_zero(backend):
    """A document mask over keys that share no document with some queries: their rows are O = 0, lse = -inf, and
    the gradients stay finite (as FlexAttention's)."""
    b, h, l, d = 1, 2, 64, 64
    q, k, v, o, lse = problem(b, h, h, l, l, d, "float16")
    doc = np.zeros((b, l), np.int32)
    doc[:, 32:] = 1
    doc_k = doc.copy()
    doc_k[:, :32] = 2                   # queries 0..31 (document 0) find no key of their document

    def across(b, h, q_idx, kv_idx, dq_, dk_):
        return dq_[b, q_idx] == dk_[b, kv_idx]
    library.attention(q, k, v, o, lse, mask_mod=across, mod_args=(doc, doc_k))
    assert np.all(o[:, :, :32] == 0) and np.all(lse[:, :, :32] == -np.inf)
    keep = (doc[:, None, :, None] == doc_k[:, None, None, :])
    check_forward(o, lse, q, k, v, None, keep, "float16")
    do, = problem(b, h, h, l, l, d, "float16", 7)[:1]
    dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
    library.attention_backward(q, k, v, o, lse, do, dq, dk, dv, mask_mod=across, mod_args=(doc, doc_k))
    assert all(np.isfinite(g.astype(np.float32)).all() for g in (dq, dk, dv))
    assert np.all(dq[:, :, :32] == 0)


def test_the_mod_arrays_are_arguments_not_constants(backend):
    """New ALiBi slopes run through the same compiled kernel and change the result."""
    b, h, l, d = 1, 2, 96, 64
    q, k, v, o, lse = problem(b, h, h, l, l, d, "float16")
    first = np.array([0.5, 0.25], np.float32)
    library.attention(q, k, v, o, lse, score_mod=alibi, mod_args=(first,))
    compiled = library._kernel.cache_info().currsize
    second = np.array([0.125, 1.0], np.float32)
    library.attention(q, k, v, o, lse, score_mod=alibi, mod_args=(second,))
    assert library._kernel.cache_info().currsize == compiled
    _, hh, qi, ki = np.meshgrid(np.arange(b), np.arange(h), np.arange(l), np.arange(l), indexing="ij")
    check_forward(o, lse, q, k, v, lambda s: (s + second[hh] * (ki - qi), 1.0), None, "float16")


@pytest.mark.parametrize("kwargs, code, words", [
    ({"score_mod": 3}, "bad-argument", "score_mod=3 must be a function"),
    ({"mod_args": (np.zeros(2, np.float32),)}, "bad-argument", "without a score_mod or mask_mod"),
    ({"mask_mod": lambda b, h, q_idx, kv_idx: q_idx - kv_idx}, "bad-argument", "must return a mask"),
    ({"score_mod": lambda s, b, h, q_idx, kv_idx: q_idx - kv_idx}, "bad-argument", "must return a float tile"),
    ({"score_mod": lambda s, b, h, q_idx, kv_idx, t: s + t[q_idx, 0]}, "bad-tile", "positions"),
    ({"score_mod": softcap, "mask_mod": document, "mod_args": (np.zeros((1, 64), np.int32),)}, "bad-argument",
     "cannot be called as score_mod(score, b, h, q_idx, kv_idx, mod0)"),
    ({"score_mod": lambda s, b, h, q_idx, kv_idx: nvdsl.erf(s)}, "bad-tile", "nvdsl.erf has no tile form"),
    ({"score_mod": "unhashable"}, "bad-argument", "cannot be hashed"),
])
def test_bad_mods_are_named(kwargs, code, words, backend):
    if kwargs.get("score_mod") == "unhashable":     # (defined below)
        kwargs = dict(kwargs, score_mod=MutableSoftCap(20.0))
    b, h, l, d = 1, 1, 64, 64
    q, k, v, o, lse = problem(b, h, h, l, l, d, "float16")
    if "mod_args" not in kwargs and getattr(getattr(kwargs.get("score_mod"), "__code__", None), "co_argcount", 0) == 6:
        kwargs = dict(kwargs, mod_args=(np.zeros((l, 2), np.float32),))
    with pytest.raises(Exception) as raised:
        library.attention(q, k, v, o, lse, **kwargs)
    assert getattr(raised.value, "code", None) == code, raised.value
    assert words in str(raised.value)
    assert "test_attention_variants.py" in str(raised.value)      # the user's line


def nt_clipped_softcap(score, b, h, q_idx, kv_idx):
    return nt.where(score > 0.0, CAP * nt.tanh(score / CAP), nt.maximum(CAP * nt.tanh(score / CAP), -CAP))


def nvdsl_clipped_softcap(score, b, h, q_idx, kv_idx):
    return nvdsl.where(score > 0.0, CAP * nvdsl.tanh(score / CAP), nvdsl.maximum(CAP * nvdsl.tanh(score / CAP), -CAP))


def test_mods_are_written_with_nvdsls_math(backend):
    """nvdsl.tanh, nvdsl.where and nvdsl.maximum on a mod's tiles are the task layer's tile math: a mod written with
    them traces the same events as the one written with nt's, so the same kernel runs (forward and backward, the
    derivative derived through them) and gives the same bits."""
    q, k, v, o, lse = problem(1, 1, 1, 64, 64, 64, "float16")
    do, = problem(1, 1, 1, 64, 64, 64, "float16", 7)[:1]
    mapping = library.task_mapping(64, False, 64, False)
    traced = [nt.build(library.attention_program(False, 0.125, True, library.Variant(mod, None, 0)), mapping)
              .passes(o, lse, q, k, v)["traced"] for mod in (nt_clipped_softcap, nvdsl_clipped_softcap)]
    assert traced[0] == traced[1]
    results = []
    for mod in (nt_clipped_softcap, nvdsl_clipped_softcap):
        o[...], lse[...] = 0, 0
        library.attention(q, k, v, o, lse, score_mod=mod)
        grads = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
        library.attention_backward(q, k, v, o, lse, do, *grads, score_mod=mod)
        results.append([o.copy(), lse.copy(), *grads])
    # Exact: the events above are equal, so each call runs the same kernel on the same inputs, whose arithmetic
    # (no atomics in the default backward) gives the same bits on any machine.
    for first, second in zip(*results):
        assert np.array_equal(first, second)


@dataclasses.dataclass(frozen=True)
class SoftCap:
    cap: float

    def __call__(self, score, b, h, q_idx, kv_idx):
        return self.cap * nvdsl.tanh(score / self.cap)


@dataclasses.dataclass
class MutableSoftCap:       # compared by its fields but not frozen: unhashable
    cap: float

    def __call__(self, score, b, h, q_idx, kv_idx):
        return self.cap * nvdsl.tanh(score / self.cap)


def test_a_mods_fields_key_its_kernel(backend):
    """A mod of a frozen dataclass is keyed by its fields: another cap is another kernel (never the first's result);
    an unhashable mod is refused by its name, forward and backward."""
    q, k, v, o, lse = problem(1, 1, 1, 64, 64, 64, "float16")
    for cap in (20.0, 2.0, 20.0):
        library.attention(q, k, v, o, lse, score_mod=SoftCap(cap))
        check_forward(o, lse, q, k, v, lambda s: (cap * np.tanh(s / cap), None), None, "float16")
    assert library._kernel.cache_info().currsize == 2
    unhashable = MutableSoftCap(2.0)
    for call in (lambda: library.attention(q, k, v, o, lse, score_mod=unhashable),
                 lambda: library.attention_backward(q, k, v, o, lse, o, o.copy(), o.copy(), o.copy(),
                                                    score_mod=unhashable)):
        with pytest.raises(ArgumentError) as refused:
            call()
        assert refused.value.code == "bad-argument" and "score_mod" in str(refused.value) and \
            "cannot be hashed" in str(refused.value)


def test_value_and_derivative_differentiates_traced_tile_math(backend):
    """The derivative nvdsl derives for a score_mod, on its own: a task program writes f(x) and f'(x)."""

    def f(x):
        return nt.where(x > 0.0, nt.tanh(x * 0.5) * 3.0, nt.exp(x) - 1.0) / (nt.maximum(x, 0.5) + 1.0)

    @nt.task(reads=("X",), writes=("Y", "DY"))
    def program(Y, DY, X):
        Xt, Yt, DYt = nt.blocks(X, (64, 64)), nt.blocks(Y, (64, 64)), nt.blocks(DY, (64, 64))
        for i, j in nt.prange(*Xt.grid):
            x = nt.zeros((64, 64), name="x")
            x += Xt[i, j]
            y, dy = nt.value_and_derivative(f, x)
            Yt[i, j] = y
            DYt[i, j] = dy

    x = np.linspace(-4, 4, 64 * 128, dtype=np.float32).reshape(64, 128)
    y, dy = np.zeros_like(x), np.zeros_like(x)
    nt.build(program, nt.Mapping(consumers=1, warp_specialize=False, persistent=False))(y, dy, x)
    xd = x.astype(np.float64)
    g = np.where(xd > 0, np.tanh(xd / 2) * 3, np.exp(xd) - 1)
    dg = np.where(xd > 0, 1.5 * (1 - np.tanh(xd / 2) ** 2), np.exp(xd))
    h = np.maximum(xd, 0.5) + 1
    dh = np.where(xd >= 0.5, 1.0, 0.0)
    np.testing.assert_allclose(y, g / h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dy, (dg * h - g * dh) / h ** 2, rtol=1e-5, atol=1e-6)


# --- on the GPU: against torch autograd --------------------------------------------------------------------

@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_variants_on_the_gpu(name, dtype):
    run(name, 2, 4, 2, 1000, 1000, 128, dtype)


TORCH_MODS = {
    "softcap": (lambda s, qi, ki: CAP * torch_tanh(s / CAP), None),
    "sliding_window": (None, lambda qi, ki: (qi >= ki) & (qi - ki < WINDOW)),
    "causal_mask_mod": (None, lambda qi, ki: qi >= ki),
}


def torch_tanh(x):
    import torch
    return torch.tanh(x)


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(TORCH_MODS))
def test_variants_match_torch_autograd(name):
    """The forward and the gradients against torch autograd through the same variant written in torch (float32
    math on the GPU), within the 16-bit roundings' tolerance."""
    torch = pytest.importorskip("torch")
    b, h, l, d = 2, 4, 1000, 128
    kwargs, _, _ = variant(name, b, h, l, l)
    score_mod, mask_mod = TORCH_MODS[name]
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v, do = (torch.randn(b, h, l, d, device="cuda", dtype=torch.float16, generator=g) for _ in range(4))
    o = torch.empty_like(q)
    lse = torch.empty(b, h, l, device="cuda", dtype=torch.float32)
    library.attention(q, k, v, o, lse, **kwargs)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    library.attention_backward(q, k, v, o, lse, do, dq, dk, dv, **kwargs)
    torch.cuda.synchronize()

    qf, kf, vf = (x.float().requires_grad_() for x in (q, k, v))
    s = qf @ kf.transpose(-1, -2) * d ** -0.5
    qi = torch.arange(l, device="cuda")[:, None]
    ki = torch.arange(l, device="cuda")[None, :]
    if score_mod is not None:
        s = score_mod(s, qi, ki)
    if mask_mod is not None:
        s = s.masked_fill(~mask_mod(qi, ki), float("-inf"))
    expected = torch.softmax(s, dim=-1) @ vf
    expected.backward(do.float())
    torch.testing.assert_close(o.float(), expected, atol=4e-3, rtol=4e-3)
    torch.testing.assert_close(lse, torch.logsumexp(s, dim=-1), atol=2e-4, rtol=1e-5)
    for computed, reference_grad in ((dq, qf.grad), (dk, kf.grad), (dv, vf.grad)):
        scale = reference_grad.abs().max().item()
        torch.testing.assert_close(computed.float(), reference_grad, atol=1e-2 * scale, rtol=1e-2)


def test_causal_written_as_a_mask_mod_runs_the_causal_kernel(backend):
    """``q_idx >= kv_idx`` (or ``kv_idx <= q_idx``) as a mask_mod runs causal=True's kernel (no second kernel is
    built: its block skipping and unmasked steps), with the causal result; a sliding window is a mask of its own,
    and so is a mask reading an array."""
    b, h, l, d = 1, 2, 200, 64
    q, k, v, o, lse = problem(b, h, h, l, l, d, "float16")
    library.attention(q, k, v, o, lse, causal=True)
    qi, ki = np.indices((l, l))
    for mask in (causal, lambda b, h, q_idx, kv_idx: kv_idx <= q_idx):
        o2, lse2 = np.zeros_like(o), np.zeros_like(lse)
        library.attention(q, k, v, o2, lse2, mask_mod=mask)
        assert library._kernel.cache_info().currsize == 1
        check_forward(o2, lse2, q, k, v, None, qi >= ki, "float16")
    assert library._recognized(False, library.Variant(None, sliding_window))[0] is False
    assert library._recognized(False, library.Variant(None, document, 1))[0] is False


@pytest.mark.parametrize("block_rows, block_range, along_keys", [(128, 128, True), (192, 128, True), (64, 128, False)])
def test_visited_blocks_are_the_first_to_last_kept(block_rows, block_range, along_keys, backend):
    """The block ranges a mask_mod leaves (per query block over key blocks, or per key block over query blocks),
    against NumPy: from the first block with a kept pair to the last, (0, 0) where none; rows and keys past the
    ends never kept."""
    b, h, l, lk = 2, 2, 700, 650
    q = np.zeros((b, h, l, 64), np.float16)
    doc = documents(b, max(l, lk))
    doc[1, 300:] = 99                          # queries of batch 1 past 300 share no document with any key
    doc_k = doc.copy()
    doc_k[1, 300:] = 98

    def across(b, h, q_idx, kv_idx, dq_, dk_):
        return (dq_[b, q_idx] == dk_[b, kv_idx]) & (q_idx - kv_idx < 100)
    ranges = library.visited_blocks(q, across, False, lk, (doc, doc_k), block_rows, block_range, along_keys)
    qi, ki = np.meshgrid(np.arange(l), np.arange(lk), indexing="ij")
    for batch in range(b):
        keep = (doc[batch, qi] == doc_k[batch, ki]) & (qi - ki < 100)
        keep = keep if along_keys else keep.T
        for x in range(ranges.shape[2]):
            kept = np.nonzero(keep[x * block_rows:(x + 1) * block_rows].any(axis=0))[0] // block_range
            expected = (kept.min(), kept.max() + 1) if len(kept) else (0, 0)
            assert tuple(ranges[batch, 0, x, :2]) == expected, (batch, x)
            # the full run: the first block keeping all its pairs (none past an end) and those right after it
            whole = [(x + 1) * block_rows <= keep.shape[0] and (t + 1) * block_range <= keep.shape[1] and
                     keep[x * block_rows:(x + 1) * block_rows, t * block_range:(t + 1) * block_range].all()
                     for t in range(-(-keep.shape[1] // block_range))]
            start = whole.index(True) if True in whole else None
            end = start
            while start is not None and end < len(whole) and whole[end]:
                end += 1
            assert tuple(ranges[batch, 0, x, 2:]) == ((start, end) if start is not None else (0, 0)), (batch, x)


def test_a_masked_forward_schedule_visits_its_ranges(request):
    """The forward under a sliding-window mask_mod: each query block's loop runs over its row of RANGES (an index
    read on the GPU), the first step's block offset by the range's start, the masks in every step; the window
    and the scores' math computed in the step."""
    from test_tasks import golden
    b, h, l, d = 1, 2, 512, 64
    q, k, v, o, lse = problem(b, h, h, l, l, d, "float16")
    mapping = library.task_mapping(d, False, l, masked=True)         # what attention() runs a mask_mod under
    ranges = np.zeros((b, h, -(-l // mapping.tile_values()["BM"]), 4), np.int32)
    program = library.attention_program(False, None, True, library.Variant(None, sliding_window))
    text = nt.build(program, mapping).explain(o, lse, q, k, v, ranges)
    golden("tasks_attention_sliding_window.schedule.txt", text, request)
    assert "RANGES[" in text


def test_a_mask_is_evaluated_once_for_what_it_does_not_read(backend):
    """A sliding window reads neither the batch nor the head: its blocks are found once for all; a document mask
    reads the batch (once per batch); a mask reading the head, once per head; a mask of nt calls, never (every
    block visited)."""
    q = np.zeros((2, 3, 200, 64), np.float16)
    doc, windows = documents(2, 200), np.array([10, 50, 100], np.int32)

    def per_head(b, h, q_idx, kv_idx, w):
        return (q_idx >= kv_idx) & (q_idx - kv_idx < w[h])
    cases = [(sliding_window, (), (1, 1)), (document, (doc,), (2, 1)), (per_head, (windows,), (1, 3))]
    for mask, args, extents in cases:
        kept, missing = library.kept_blocks(q, mask, False, 200, args)
        assert kept.shape[:2] == missing.shape[:2] == extents, mask.__name__
    kept, missing = library.kept_blocks(q, lambda b, h, q_idx, kv_idx: nt.where(q_idx >= kv_idx, True, False), False,
                                        200, ())
    assert kept.min() == missing.min() == 1        # every block visited, and masked

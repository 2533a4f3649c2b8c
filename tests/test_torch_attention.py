"""nvdsl.torch.attention: the library's attention as a torch op with autograd. Its output and gradients against a
float64 reference within the bounds of tests/test_attention_backward.py, opcheck, torch.compile(fullgraph=True)
equal to eager; on CPU tensors (the interpreter) and CUDA tensors (the GPU, also against torch's own
scaled_dot_product_attention and with inductor)."""

import numpy as np
import pytest

import nvdsl
from nvdsl.testing import GPU_MARKS, requires_gpu
from test_attention import reference as forward_reference
from test_attention_backward import assert_within, reference

torch = pytest.importorskip("torch")
nvtorch = pytest.importorskip("nvdsl.torch")


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=GPU_MARKS)])
def device(request):
    return request.param


def qkv(device, dtype, b, h, hkv, l, d, seed=0):
    g = torch.Generator().manual_seed(seed)
    make = lambda heads: torch.randn(b, heads, l, d, generator=g).to(dtype).to(device).requires_grad_()  # noqa: E731
    return make(h), make(hkv), make(hkv)


def numpy(t) -> np.ndarray:
    t = t.detach().cpu()
    return t.numpy() if t.dtype != torch.bfloat16 else t.float().numpy()


@pytest.mark.parametrize("dtype, b, h, hkv, l, d, causal, deterministic", [
    (torch.float16, 1, 2, 1, 100, 64, True, True),          # grouped heads, a ragged causal block
    (torch.bfloat16, 1, 2, 2, 130, 128, False, True),
    (torch.float16, 1, 2, 1, 100, 64, True, False),         # dQ summed by the dK/dV kernel
])
def test_output_and_gradients_match_float64(device, dtype, b, h, hkv, l, d, causal, deterministic):
    q, k, v = qkv(device, dtype, b, h, hkv, l, d)
    o = nvtorch.attention(q, k, v, causal=causal, deterministic=deterministic)
    assert o.shape == q.shape and o.dtype == dtype and o.device.type == device
    do = torch.randn(o.shape, generator=torch.Generator().manual_seed(9)).to(dtype).to(device)
    grads = torch.autograd.grad(o, (q, k, v), do)
    o_ref, _ = forward_reference(numpy(q), numpy(k), numpy(v), causal)
    tolerance = 4e-3 if dtype == torch.float16 else 3e-2      # as tests/test_attention.py's check
    np.testing.assert_allclose(numpy(o), o_ref, atol=tolerance, rtol=tolerance)
    name = "float16" if dtype == torch.float16 else "bfloat16"
    bounds = reference(*(numpy(x) for x in (q, k, v, o, do)), causal, d ** -0.5, name)
    for what, got, (expected, bound) in zip(("dq", "dk", "dv"), grads, bounds):
        assert_within(numpy(got), expected, bound, what)


def test_the_attention_ops_pass_opcheck(device):
    q, k, v = qkv(device, torch.float16, 1, 2, 1, 64, 64)
    torch.library.opcheck(torch.ops.nvdsl.attention.default, (q, k, v, True, None))
    o, lse = nvtorch.attention_with_lse(q, k, v, True)
    do = torch.randn_like(o)
    torch.library.opcheck(torch.ops.nvdsl.attention_backward.default,
                          tuple(t.detach() for t in (q, k, v, o, lse, do)) + (True, None))
    torch.library.opcheck(torch.ops.nvdsl.attention_backward.default,
                          tuple(t.detach() for t in (q, k, v, o, lse, do)) + (True, None, False))


def step(q, k, v):
    return nvtorch.attention(q, k, v, causal=True).float().square().mean()


def eager_and_compiled(device, dtype, b, h, hkv, l, d, seed, **compile_options):
    """The loss of :func:`step` and its gradients, eager and under ``torch.compile(fullgraph=True)``."""
    def run(fn):
        q, k, v = qkv(device, dtype, b, h, hkv, l, d, seed=seed)
        loss = fn(q, k, v)
        return (loss, *torch.autograd.grad(loss, (q, k, v)))
    return run(step), run(torch.compile(step, fullgraph=True, **compile_options))


def test_a_training_step_through_attention_compiles_in_one_graph():
    """torch.compile(fullgraph=True) with AOTAutograd traces attention's forward and backward ops; loss and
    gradients are the eager ones bit for bit (the same kernels on the same inputs)."""
    eager, compiled = eager_and_compiled("cpu", torch.bfloat16, 1, 2, 1, 64, 64, 3, backend="aot_eager")
    assert all(torch.equal(e, c) for e, c in zip(eager, compiled))


def test_bad_arguments_point_at_the_call():
    q = torch.zeros(1, 2, 64, 64, dtype=torch.float16)
    with pytest.raises(nvdsl.ArgumentError) as info:
        nvtorch.attention(q, q[:, :1, :, :32], q[:, :1, :, :32])
    assert info.value.code == "bad-shape" and info.value.loc.filename == __file__


# --- on the GPU ----------------------------------------------------------------------------------------------

@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
def test_gradients_are_sdpas_within_the_bounds(causal):
    """Against torch's own scaled_dot_product_attention in float64, on the GPU."""
    q, k, v = qkv("cuda", torch.bfloat16, 2, 4, 4, 300, 128, seed=5)
    o = nvtorch.attention(q, k, v, causal=causal)
    do = torch.randn_like(o)
    grads = torch.autograd.grad(o, (q, k, v), do)
    leaves = [x.detach().double().requires_grad_() for x in (q, k, v)]
    exact = torch.autograd.grad(torch.nn.functional.scaled_dot_product_attention(*leaves, is_causal=causal),
                                leaves, do.double())
    bounds = reference(*(numpy(x) for x in (q, k, v, o, do)), causal, 128 ** -0.5, "bfloat16", exact_o=True)
    for what, got, want, (_, bound) in zip(("dq", "dk", "dv"), grads, exact, bounds):
        assert_within(numpy(got), want.cpu().numpy(), bound, what)


@requires_gpu
@pytest.mark.gpu
def test_inductor_compiles_a_training_step_through_attention():
    """Inductor compiles the step in one graph; it may fuse the loss's own arithmetic differently from eager, so
    the loss and the gradient reaching attention (dO = 2 o / n) may differ by a rounding or two (float16's unit
    roundoff 2^-11), which the backward carries linearly: gradients within 8 of those units of the largest."""
    eager, compiled = eager_and_compiled("cuda", torch.float16, 2, 4, 2, 256, 64, 7)
    assert torch.allclose(eager[0], compiled[0], rtol=2 ** -20)           # a float32 mean of float32 squares
    for e, c in zip(eager[1:], compiled[1:]):
        assert (e.float() - c.float()).abs().max() <= 8 * 2 ** -11 * e.float().abs().max()


def test_a_transformer_block_compiles_in_one_graph_for_inference_and_training():
    """Chapter 8's model (pre-norm blocks: qkv, attention on (B, H, L, D) views of the projection, output
    projection, a GELU MLP) under torch.compile(fullgraph=True) with AOTAutograd: the inference loss and a
    training step's loss and gradients equal eager's bit for bit."""
    ch8 = __import__("test_tutorials").chapter("ch8_training")
    config = ch8.CPU
    w = ch8.init_weights(config["vocab"], config["width"], config["layers"], "cpu")
    tokens, targets = next(ch8.synthetic_batches(config["vocab"], config["seq"], config["batch"], "cpu"))
    loss = lambda tokens, targets: ch8.loss_fn("nvdsl", w, tokens, targets, config["heads"], config["layers"])  # noqa
    compiled = torch.compile(loss, fullgraph=True, backend="aot_eager")
    with torch.no_grad():
        assert torch.equal(loss(tokens, targets), compiled(tokens, targets))
    runs = []
    for fn in (loss, compiled):
        value = fn(tokens, targets)
        runs.append((value, *torch.autograd.grad(value, list(w.values()))))
    assert all(torch.equal(e, c) for e, c in zip(*runs))


# --- packed sequences and decode ---------------------------------------------------------------------------------

def test_varlen_output_and_gradients_match_float64(device):
    """nvdsl.torch.attention_varlen on packed sequences of ragged lengths (bottom-right causal where Lq != Lk),
    grouped heads: output and gradients within the bounds of the float64 reference, sequence by sequence; opcheck."""
    from test_attention_varlen import heads_first, offsets, packed_keep
    from test_attention_variants import check_forward
    cu_q, cu_k = offsets([70, 33, 100]), offsets([90, 20, 100])
    g = torch.Generator().manual_seed(0)
    make = lambda tokens, heads: torch.randn(tokens, heads, 64, generator=g).half().to(device)  # noqa: E731
    q, k, v = make(int(cu_q[-1]), 2).requires_grad_(), make(int(cu_k[-1]), 1).requires_grad_(), \
        make(int(cu_k[-1]), 1).requires_grad_()
    lengths = [torch.from_numpy(cu).to(device) for cu in (cu_q, cu_k)]
    o, lse = nvtorch.attention_varlen_with_lse(q, k, v, *lengths, True)
    assert o.shape == q.shape and lse.shape == (2, q.shape[0])
    do = make(q.shape[0], 2)
    grads = torch.autograd.grad(o, (q, k, v), do)
    keep = packed_keep(cu_q, cu_k, q.shape[0], k.shape[0], True)
    as4 = lambda t: heads_first(numpy(t))       # noqa: E731
    check_forward(as4(o), numpy(lse)[None], as4(q), as4(k), as4(v), None, keep, "float16")
    bounds = reference(*(as4(x) for x in (q, k, v, o, do)), False, 64 ** -0.5, "float16", keep=keep)
    for what, got, (expected, bound) in zip(("dq", "dk", "dv"), grads, bounds):
        assert_within(as4(got), expected, bound, what)
    torch.library.opcheck(torch.ops.nvdsl.attention_varlen.default, (q, k, v, *lengths, True, None))


def test_decode_against_a_cache_matches_float64(device):
    """nvdsl.torch.attention_decode: one new token per sequence against caches holding 150 and 7 tokens."""
    from test_attention_variants import forward_reference
    g = torch.Generator().manual_seed(1)
    q = torch.randn(2, 4, 1, 128, generator=g).half().to(device)
    cache = [torch.randn(2, 1, 200, 128, generator=g).half().to(device) for _ in range(2)]
    held = torch.tensor([150, 7], dtype=torch.int32, device=device)
    o = nvtorch.attention_decode(q, *cache, held)
    keep = np.arange(200)[None, None, None] < numpy(held)[:, None, None, None]
    expected, _ = forward_reference(numpy(q), *(numpy(c) for c in cache), None, keep)
    np.testing.assert_allclose(numpy(o), expected, atol=4e-3, rtol=4e-3)     # as test_attention.py's check
    torch.library.opcheck(torch.ops.nvdsl.attention_decode.default, (q, *cache, held, True, None))


def test_attention_with_mods_is_differentiable_and_compiles(device):
    """nvdsl.torch.attention with a soft cap and a document mask reading a tensor: output and gradients within the
    float64 reference's bounds (the soft cap's derivative derived by nvdsl); the pair of mods is one op, reused by a
    second call and traced whole by torch.compile(fullgraph=True)."""
    from test_attention_variants import CAP, document, softcap as capped_scores

    def softcap(score, b, h, q_idx, kv_idx, doc):
        return capped_scores(score, b, h, q_idx, kv_idx)
    q, k, v = qkv(device, torch.float16, 1, 2, 1, 130, 64)
    doc = torch.from_numpy(np.repeat(np.arange(130) // 50, 1)[None].astype(np.int32)).to(device)
    mods = {"score_mod": softcap, "mask_mod": document, "mod_args": (doc,)}
    o = nvtorch.attention(q, k, v, True, **mods)
    do = torch.randn(o.shape, generator=torch.Generator().manual_seed(9)).half().to(device)
    grads = torch.autograd.grad(o, (q, k, v), do)
    ids = numpy(doc)[0]
    rows, cols = np.indices((130, 130))
    keep = (ids[rows] == ids[cols]) & (cols <= rows)
    capped = lambda s: (CAP * np.tanh(s / CAP), 1 - np.tanh(s / CAP) ** 2)      # noqa: E731
    from test_attention_variants import forward_reference
    o_ref, lse_ref = forward_reference(numpy(q), numpy(k), numpy(v), capped, keep)
    np.testing.assert_allclose(numpy(o), o_ref, atol=4e-3, rtol=4e-3)
    bounds = reference(*(numpy(x) for x in (q, k, v, o, do)), False, 64 ** -0.5, "float16", score_mod=capped,
                       keep=keep)
    for what, got, (expected, bound) in zip(("dq", "dk", "dv"), grads, bounds):
        assert_within(numpy(got), expected, bound, what)
    step = lambda q, k, v: nvtorch.attention(q, k, v, True, **mods).float().square().mean()    # noqa: E731
    eager = step(q, k, v)
    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")(q, k, v)
    assert torch.equal(eager, compiled) and len(nvtorch.library._MOD_OPS) >= 1     # the same kernels, same inputs
    op = nvtorch.library._attention_with_mods(softcap, document, 1)
    assert op is nvtorch.library._MOD_OPS[(softcap, document, 1)]
    torch.library.opcheck(op._opoverload, (q, k, v, doc, True, None))

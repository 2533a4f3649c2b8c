"""nvdsl.kernels.attention.attention_backward: dQ, dK and dV against a float64 NumPy backward, with an error bound
derived from the arithmetic (the 16-bit roundings of P, dS, O and the outputs; float32 sums). In the interpreter
(CI) and on the GPU: ragged lengths, causal and not, grouped-query and multi-query heads, head dims 64, 128 and
256, float16 and bfloat16, strided (B, L, H, D) views; on the GPU also against torch autograd through
``scaled_dot_product_attention`` and bitwise repeatability. Each run also draws a few problems at random
(:func:`random_problems`, ``--matrix-seed``)."""

import random
import re

import numpy as np
import pytest

import nvdsl
import nvdsl.kernels.attention as library
from nvdsl import tasks as nt
from nvdsl.compiler.toolchain import find_tool
from nvdsl.testing import requires_gpu, sass_opcodes
from test_attention import problem
from test_tasks import golden

UNIT_ROUNDOFF = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}
SUBNORMAL_HALF_SPACING = {"float16": 2.0 ** -25, "bfloat16": 2.0 ** -134}   # absolute rounding error below normal
U32 = 2.0 ** -24
# The exponential's ex2.approx.ftz and float32 products may flush a result below float32's smallest normal to zero.
FLUSHED = float(np.finfo(np.float32).tiny)


#: Backward problems drawn per run from :func:`random_problems`' space (the run's ``--matrix-seed``).
RANDOM_PROBLEMS = 4


def random_problems(seed: int, count: int = RANDOM_PROBLEMS) -> list[tuple]:
    """``count`` backward problems (heads, key heads, L, Lk, head_dim, causal, dtype, deterministic) drawn with
    ``seed``: every head_dim, grouped and multi-query heads or one key head per query head, ragged and unequal
    lengths, both dQ modes. The space holds configurations no fixed case covers (the fused dQ at D 128 with a key
    head per query head raced before its tile stopped being reused for dK's stores); a failure names its seed."""
    rng = random.Random(seed)
    heads = ((2, 2), (2, 1), (4, 2))
    lengths = ((64, 64), (150, 150), (130, 200), (200, 130))
    return [(*rng.choice(heads), *rng.choice(lengths), rng.choice((64, 128, 256)), rng.random() < 0.5,
             rng.choice(("float16", "bfloat16")), rng.random() < 0.5) for _ in range(count)]


def pytest_generate_tests(metafunc):
    if "random_problem" in metafunc.fixturenames:
        seed = metafunc.config.getoption("--matrix-seed")
        problems = random_problems(seed)
        metafunc.parametrize("random_problem", problems, ids=[
            f"seed{seed}-h{h}-hkv{hkv}-L{l}x{lk}-d{d}-{'causal' if causal else 'full'}-{dtype}-"
            f"{'deterministic' if deterministic else 'summed'}"
            for h, hkv, l, lk, d, causal, dtype, deterministic in problems])


def test_random_problems_match_float64(random_problem):
    """A few problems drawn from the space above per run (``--matrix-seed N`` draws a run's again), each against the
    float64 backward's error bounds."""
    h, hkv, l, lk, d, causal, dtype, deterministic = random_problem
    q, k, v, o, lse = problem(1, h, hkv, l, lk, d, dtype, 5)
    library.attention(q, k, v, o, lse, causal=causal)
    do, = problem(1, h, hkv, l, lk, d, dtype, 12)[:1]
    grads = np.zeros_like(q), np.full_like(k, 3), np.full_like(v, 3)
    library.attention_backward(q, k, v, o, lse, do, *grads, causal=causal, deterministic=deterministic)
    check((q, k, v, o, do), grads, causal)


@pytest.fixture(autouse=True)
def fresh_kernels():
    """Each test builds its kernels anew, so that the ``backend`` fixture's setting applies."""
    library._kernel.cache_clear()
    library._CHECKED.clear()
    library._BACKWARD_PLANS.clear()
    library._built.cache_clear()


def reference(q, k, v, o, do, causal, scale, dtype=None, exact_o=False, score_mod=None, keep=None):
    """float64 gradients and the elementwise error bounds of dQ, dK and dV (grouped heads summed), from the
    stored 16-bit q, k, v, o and do (the backward's D = rowsum(dO * O) reads the stored O, as any does). With
    ``exact_o``, the bounds also hold against gradients computed from the exact O (torch autograd's): D then
    differs by O's rounding to 16 bits. A variant: ``score_mod(s)`` gives the modified scores and their
    derivative (float64, of the scores' shape (B, H, L, Lk)); ``keep`` (broadcast to that shape) masks keys."""
    dtype = dtype or ("float16" if q.dtype == np.float16 else "bfloat16")
    u, tiny = UNIT_ROUNDOFF[dtype], SUBNORMAL_HALF_SPACING[dtype]
    b, h, seq_q, d = q.shape
    hkv, seq_k = k.shape[1], k.shape[2]
    group = h // hkv
    q, k, v, o, do = (x.astype(np.float64) for x in (q, k, v, o, do))
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = q @ k.transpose(0, 1, 3, 2) * scale
    slope, mod_error, slope_error = 1.0, 0.0, 0.0
    if score_mod is not None:
        raw = s
        s, slope = score_mod(s)
        mod_error = 8 * U32 * (np.abs(s) + np.abs(raw))     # the mod's float32 arithmetic on float32 scores
        slope_error = 8 * U32                                # and on its derivative
    keep = np.ones(s.shape, bool) if keep is None else np.broadcast_to(keep, s.shape)
    if causal:
        rows, cols = np.indices(s.shape[-2:])
        keep = keep & (cols <= rows)
    s = np.where(keep, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    total = p.sum(axis=-1, keepdims=True)
    p = p / np.where(total > 0, total, 1.0)             # a row with no key left: P = 0
    dp = do @ v.transpose(0, 1, 3, 2)
    delta = (do * o).sum(axis=-1, keepdims=True)
    ds = p * (dp - delta) * slope
    t = lambda x: x.transpose(0, 1, 3, 2)        # noqa: E731
    dq, dk, dv = ds @ k * scale, t(ds) @ q * scale, t(p) @ do
    # What the kernels' arithmetic may add: P to within 2u (rounded to 16 bits for its products; its exponent
    # from float32 scores and the forward's float32 log-sum-exp), dS to within that and the float32 errors of
    # dP and D (gamma_d of their magnitudes), dS rounded to 16 bits, float32 sums over the keys or queries
    # (gamma_L of the magnitudes), and the outputs rounded; each 16-bit rounding also within ``tiny`` absolute
    # (float16's subnormals), and P and dS within ``FLUSHED`` (float32 results below normal flushed to zero).
    mag = lambda x, y: np.abs(x) @ np.abs(y)    # noqa: E731
    gamma = lambda n: n * U32 / (1 - n * U32)    # noqa: E731
    dp_error = gamma(d) * mag(do, t(v)) + gamma(d) * np.abs(do * o).sum(axis=-1, keepdims=True)
    if exact_o:     # the forward's O: P rounded to 16 bits for P V (2u, as here), then O rounded (u)
        o_error = u * np.abs(o) + 2 * u * mag(p, v) + tiny
        dp_error = dp_error + (np.abs(do) * o_error).sum(axis=-1, keepdims=True)
    p_error = (2 * u + mod_error) * np.abs(p) + tiny + FLUSHED
    ds_error = (p_error * np.abs(dp - delta) + np.abs(p) * dp_error) * np.abs(slope) + \
        (u + slope_error) * np.abs(ds) + tiny + FLUSHED
    dq_bound = (mag(ds_error, k) + gamma(seq_k) * mag(ds, k)) * scale
    dk_bound = (mag(t(ds_error), q) + gamma(seq_q) * mag(t(ds), q)) * scale
    dv_bound = mag(t(p_error), do) + gamma(seq_q) * mag(t(p), do)
    fold = lambda x: x.reshape(b, hkv, group, seq_k, d).sum(axis=2)   # noqa: E731
    dk, dv, dk_bound, dv_bound = fold(dk), fold(dv), fold(dk_bound), fold(dv_bound)
    out = [(dq, dq_bound), (dk, dk_bound), (dv, dv_bound)]
    return [(g, bound + u * np.abs(g) + tiny) for g, bound in out]


def dkdv_under_turns(d: int, causal: bool, turns: bool):
    """The dK/dV program's kernel under its mapping with ``turns``, its arguments (dK and dV zeroed) for a ragged
    problem (L 200: a partial last step of queries), O and LSE from the forward, and the float64 reference with
    its bounds (:func:`reference`)."""
    q, k, v, o, lse = problem(1, 2, 2, 200, 200, d, "float16", seed=3)
    library.attention(q, k, v, o, lse, causal=causal)
    do, = problem(1, 2, 2, 200, 200, d, "float16", seed=4)[:1]
    delta = (do.astype(np.float32) * o.astype(np.float32)).sum(-1)
    _, _, mapping = library.backward_mappings(d)
    kernel = nt.build(library.dkdv_program(causal, d ** -0.5), mapping.replace(turns=turns))
    args = (np.zeros_like(k), np.zeros_like(v), q, k, v, do, lse, delta)
    return kernel, args, reference(q, k, v, o, do, causal, d ** -0.5)[1:]


@pytest.mark.parametrize("d, causal", [(64, True), (128, False)])
def test_dkdv_consumers_taking_turns_compute_dk_and_dv(d, causal, backend):
    """``turns=True`` on the dK/dV program: each consumer issues its step's S and dP products at its turn at the
    tensor cores (named barriers the kernel as built has fewer of) and hands the turn on; dK and dV stay within
    the backward's error bounds."""
    kernel, args, expected = dkdv_under_turns(d, causal, turns=True)
    kernel(*args)
    for name, computed, (value, bound) in zip(("dk", "dv"), args[:2], expected):
        assert_within(computed, value, bound, name)
    as_built, built_args, _ = dkdv_under_turns(d, causal, turns=False)
    arrivals = [len(re.findall(r"barrier\.arrive %r\d+, %r\d+;", kern.compile(*a).ptx))
                for kern, a in ((as_built, built_args), (kernel, args))]
    assert arrivals[1] > arrivals[0], arrivals


def test_dkdv_turns_hold_under_any_warp_order():
    """The turns' named barriers hold whichever order the interpreter runs the warps and lands the copies in
    (``nvdsl.fuzz``: no deadlock, race or other result under 4 seeded schedules)."""
    kernel, args, _ = dkdv_under_turns(64, True, turns=True)
    report = nvdsl.fuzz(kernel, *args, seeds=4)
    assert report.ok, report


def run_backward(b, h, hkv, l, lk, d, causal, dtype, seed=0):
    q, k, v, o, lse = problem(b, h, hkv, l, lk, d, dtype, seed)
    library.attention(q, k, v, o, lse, causal=causal)
    do, = problem(b, h, hkv, l, lk, d, dtype, seed + 7)[:1]
    dq, dk, dv = np.zeros_like(q), np.full_like(k, 3), np.full_like(v, 3)
    library.attention_backward(q, k, v, o, lse, do, dq, dk, dv, causal=causal)
    return (q, k, v, o, do), (dq, dk, dv)


def assert_within(computed, expected, bound, name):
    excess = np.abs(computed.astype(np.float64) - expected) - bound
    worst = tuple(int(i) for i in np.unravel_index(np.argmax(excess), excess.shape))
    assert excess[worst] <= 0, (f"{name}: {np.count_nonzero(excess > 0)} elements past the error bound; at {worst}: "
                                f"{computed[worst]} against {expected[worst]} (bound {bound[worst]:.3g})")


def check(inputs, grads, causal):
    q, k, v, o, do = inputs
    scale = q.shape[-1] ** -0.5
    for name, computed, (expected, bound) in zip(("dq", "dk", "dv"), grads, reference(q, k, v, o, do, causal, scale)):
        assert_within(computed, expected, bound, name)


@pytest.mark.parametrize("b, h, hkv, l, lk, d, causal, dtype", [
    (1, 2, 2, 200, 200, 64, False, "float16"),       # ragged: a masked last key block, rows past L
    (1, 2, 2, 200, 200, 64, True, "bfloat16"),       # causal: the dK/dV loop walks the query blocks from the last
    (1, 4, 2, 130, 300, 64, True, "float16"),        # grouped heads; causal keys past the last query: zero gradient
    (1, 2, 1, 300, 130, 128, False, "bfloat16"),     # multi-query: one key/value head
    (1, 2, 1, 150, 190, 256, True, "float16"),       # head_dim 256: dK and dV by separate programs
    (1, 2, 2, 100, 70, 256, False, "bfloat16"),
])
def test_gradients_match_numpy(b, h, hkv, l, lk, d, causal, dtype, backend):
    inputs, grads = run_backward(b, h, hkv, l, lk, d, causal, dtype)
    check(inputs, grads, causal)


def test_the_error_bound_catches_a_wrong_gradient(backend):
    """The bound is tight enough to see a gradient whose softmax ignored the causal mask."""
    inputs, grads = run_backward(1, 1, 1, 128, 128, 64, True, "float16")
    q, k, v, o, do = inputs
    (_, _), (dk, bound), _ = reference(q, k, v, o, do, False, 64 ** -0.5)
    assert np.any(np.abs(grads[1].astype(np.float64) - dk) > bound)


def test_strided_views_of_a_bshd_layout(backend):
    """q, k, v, do and the gradients as (B, H, L, D) views of (B, L, H, D) arrays, used in place."""
    rng = np.random.default_rng(3)
    b, h, l, d = 1, 2, 150, 64
    q, k, v, do = (rng.standard_normal((b, l, h, d)).astype(np.float16).transpose(0, 2, 1, 3) for _ in range(4))
    o, lse = np.zeros((b, l, h, d), np.float16).transpose(0, 2, 1, 3), np.zeros((b, h, l), np.float32)
    library.attention(q, k, v, o, lse, causal=True)
    grads = [np.zeros((b, l, h, d), np.float16).transpose(0, 2, 1, 3) for _ in range(3)]
    library.attention_backward(q, k, v, o, lse, do, *grads, causal=True)
    check((q, k, v, o, do), grads, True)


def test_the_backward_schedules_are_explained(request):
    """The dK/dV program under a causal mask: its scores and dP products are waited for in their step (the step's
    softmax reads them), the others stay in flight; its query blocks are walked from the last, the causal mask
    left out of the steps before the diagonal; LSE and D are read as vectors along the columns."""
    q, k, v, o, lse = problem(1, 2, 1, 512, 512, 64)
    delta_mapping, dq_mapping, dkdv_mapping = library.backward_mappings(64)
    parts = np.zeros((1, 2, 512, 64), np.float32)
    text = nt.build(library.dkdv_program(True, 0.125), dkdv_mapping).explain(parts, parts, q, k, v, q, lse, lse)
    golden("tasks_attention_dkdv_causal.schedule.txt", text, request)
    assert "[waited for: the step reads it]" in text and "[1 product(s) left in flight]" in text
    assert "a loop without them, then one with them" in text
    text = nt.build(library.dq_program(True, 0.125), dq_mapping).explain(q, q, k, v, q, lse, lse)
    golden("tasks_attention_dq_causal.schedule.txt", text, request)
    # dQ's parts summed by the dK/dV program: dS staged for its transposed read, each step's part added by TMA
    text = nt.build(library.dkdv_program(True, 0.125, parts="dkdvdq"), dkdv_mapping).explain(
        parts, parts, parts, q, k, v, q, lse, lse)
    golden("tasks_attention_dkdvdq_causal.schedule.txt", text, request)
    assert "operand_t9_0 (whole kernel)" in text and "mma dq += t9.T @ K_s0" in text
    assert "add dq -> DQ[" in text and "(an atomic reduction)" in text


def test_p_is_computed_with_ex2_approx_but_in_the_fused_kernel_past_d64():
    """The backward's P = exp2(...) takes ex2.approx where it measured faster (dK/dV and dQ at D 64 and 128, the
    fused dK/dV/dQ at D 64), and the accurate exp2 in the fused kernel at D 128, which ran slower with it."""
    def explained(d, parts=None):
        q, lse = np.zeros((1, 2, 512, d), np.float16), np.zeros((1, 2, 512), np.float32)
        sums = np.zeros((1, 2, 512, d), np.float32)
        _, dq_mapping, dkdv_mapping = library.backward_mappings(d)
        if parts is None:
            return nt.build(library.dq_program(True, d ** -0.5), dq_mapping).explain(q, q, q, q, q, lse, lse)
        arrays = (sums, sums) + ((sums,) if parts == "dkdvdq" else ()) + (q, q, q, q, lse, lse)
        return nt.build(library.dkdv_program(True, d ** -0.5, parts=parts), dkdv_mapping).explain(*arrays)

    for d in (64, 128):
        assert "exp2_approx(" in explained(d) and "exp2_approx(" in explained(d, "dkdv"), d
    assert "exp2_approx(" in explained(64, "dkdvdq")
    fused = explained(128, "dkdvdq")
    assert "exp2_approx(" not in fused and "exp2(" in fused


def test_the_summed_dq_part_is_stored_while_dks_product_runs():
    """deterministic=False at D 64: a step's part of dQ goes out as a wgmma group of its own ahead of dK's
    product, and is staged and added into the float32 sum once dK's is issued (``wait_group 1``), not after both
    retired (H100, B4 H16 L4096: the dK/dV/dQ kernel 2049 -> 1976 us, causal 1159 -> 1126)."""
    q = np.zeros((1, 2, 512, 64), np.float16)
    lse, parts = np.zeros((1, 2, 512), np.float32), np.zeros((1, 2, 512, 64), np.float32)
    _, _, dkdv_mapping = library.backward_mappings(64)
    ptx = nt.build(library.dkdv_program(False, 0.125, parts="dkdvdq"), dkdv_mapping).compile(
        parts, parts, parts, q, q, q, q, lse, lse).ptx
    no_wait = r"(?:(?!wgmma.wait_group).)*?"
    assert re.search(r"wgmma.commit_group.sync.aligned;" + no_wait + r"wgmma.commit_group.sync.aligned;\s*"
                     r"wgmma.wait_group.sync.aligned\s+1;" + no_wait + r"cp.reduce.async.bulk", ptx, re.S)


@pytest.mark.parametrize("d", [64, 128, 256])
def test_the_dk_dv_steps_read_their_vectors_from_the_ring(d):
    """Each dK/dV step's log-sum-exp and D (one value per query of the step) come by TMA with the step's Q and dO
    and are read from shared memory: loaded by each thread from global memory where they are used, they arrived
    after the step's first products and the consumers waited on them (ncu, H200, the fused kernel at D 128: 17%
    of its stall samples). No global load is left in the kernels' SASS."""
    q = np.zeros((1, 2, 512, d), np.float16)
    lse, parts = np.zeros((1, 2, 512), np.float32), np.zeros((1, 2, 512, d), np.float32)
    mapping = library.backward_mappings(d)[2]
    programs = {"dk": (q, q, q, q, q, lse, lse), "dv": (q, q, q, q, lse)} if d > 128 else \
        {"dkdv": (q, q, q, q, q, q, lse, lse), "dkdvdq": (parts, parts, parts, q, q, q, q, lse, lse)}
    for parts_name, args in programs.items():
        kernel = nt.build(library.dkdv_program(True, d ** -0.5, parts=parts_name), mapping)
        text = kernel.explain(*args)
        assert "LSE_s0 float32[1, 1, 64] from LSE[" in text and "(box [1, 1, 64], swizzle 0)" in text, parts_name
        assert ("DELTA_s0 float32[1, 1, 64]" in text) == (parts_name != "dv"), parts_name
        compiled = kernel.compile(*args)
        if compiled.cubin is not None and find_tool("nvdisasm"):
            assert "LDG" not in sass_opcodes(compiled.sass()), parts_name


@pytest.mark.parametrize("causal", [False, True])
def test_head_dim_256_runs_dq_dk_and_dv_each_on_one_consumer(causal):
    """At D = 256 a 64 x 256 float32 accumulator takes half a consumer's registers: dQ, dK and dV are each a
    program of one consumer warpgroup (dK and dV apart), whose m64n256 products assemble (the block's entry count
    raised for them) and stream their tiles by TMA. Without a mask no spills; under the causal mask dQ's and dK's
    loops spill a few registers (two copies of the loop, masked and not, share the registers)."""
    q = np.zeros((2, 4, 1024, 256), np.float16)
    lse = np.zeros((2, 4, 1024), np.float32)
    _, dq_mapping, dkdv_mapping = library.backward_mappings(256)
    assert library._dkdv_parts(256) == ("dk", "dv") and library._dkdv_parts(128) == ("dkdv",)
    kernels = {"dq": (library.dq_program(causal, 0.0625), dq_mapping, (q, q, q, q, q, lse, lse)),
               "dk": (library.dkdv_program(causal, 0.0625, parts="dk"), dkdv_mapping, (q, q, q, q, q, lse, lse)),
               "dv": (library.dkdv_program(causal, 0.0625, parts="dv"), dkdv_mapping, (q, q, q, q, lse))}
    for name, (program, mapping, args) in kernels.items():
        assert mapping.consumers == 1
        compiled = nt.build(program, mapping).compile(*args)
        assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16" in compiled.ptx
        if compiled.cubin is None:
            continue
        resources, = compiled.resources.values()
        if not causal or name == "dv":
            assert resources.spill_stores == 0 and resources.stack_frame == 0, (name, resources)
        if find_tool("nvdisasm"):
            assert {"HGMMA", "UTMALDG", "UTMASTG", "SYNCS"} <= sass_opcodes(compiled.sass())


@pytest.mark.parametrize("deterministic, programs", [
    (False, ["attention_delta", "attention_dkdvdq"]), (True, ["attention_delta", "attention_dq", "attention_dkdv"])])
def test_dq_summed_in_the_dk_dv_program_or_by_its_own_pass(monkeypatch, deterministic, programs):
    """deterministic=False (D 64 and 128): the dK/dV program adds each step's dQ part into a float32 sum
    (FlashAttention-3's five products a step); deterministic=True runs dQ's own pass. Both within the float64
    reference's bounds, GQA and ragged, causal; a read-only dq is refused by its name either way."""
    built = []
    real = library._built
    monkeypatch.setattr(library, "_built", lambda program, mapping: built.append(program.name) or
                        real(program, mapping))
    q, k, v, o, lse = problem(1, 2, 1, 150, 170, 64, "float16", 3)
    library.attention(q, k, v, o, lse, causal=True)
    do, = problem(1, 2, 1, 150, 170, 64, "float16", 10)[:1]
    grads = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
    library.attention_backward(q, k, v, o, lse, do, *grads, causal=True, deterministic=deterministic)
    assert built == programs
    check((q, k, v, o, do), grads, True)
    grads[0].setflags(write=False)
    with pytest.raises(nvdsl.ArgumentError) as refused:
        library.attention_backward(q, k, v, o, lse, do, *grads, causal=True, deterministic=deterministic)
    assert refused.value.code == "read-only" and "'dq'" in str(refused.value)
    grads[0].setflags(write=True)
    grads[1].setflags(write=False)      # grouped heads: dk is written by the kernel summing the heads' parts
    with pytest.raises(nvdsl.ArgumentError) as refused:
        library.attention_backward(q, k, v, o, lse, do, *grads, causal=True, deterministic=deterministic)
    assert refused.value.code == "read-only" and "'dk'" in str(refused.value)


@pytest.mark.parametrize("causal", [False, True])
def test_dq_summed_at_d128_leaves_each_consumers_key_rows_until_every_product_read_them(causal):
    """deterministic=False at D 128, one key head per query head: each consumer's part of dQ (its columns) reads
    every consumer's rows of the block's K tile, so dK no longer goes out through a consumer's rows of that tile
    (before, the interpreter caught a consumer writing its dK rows there while the other's last dQ product could
    still read them: ``wgmma-operand-overwritten``). Against float64."""
    q, k, v, o, lse = problem(1, 2, 2, 150, 150, 128, "bfloat16", 4)
    library.attention(q, k, v, o, lse, causal=causal)
    do, = problem(1, 2, 2, 150, 150, 128, "bfloat16", 11)[:1]
    grads = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
    library.attention_backward(q, k, v, o, lse, do, *grads, causal=causal, deterministic=False)
    check((q, k, v, o, do), grads, causal)


def test_a_repeated_call_plans_once_and_still_checks_each_arrays_layout(backend):
    """A training loop's next step (the same signature) skips the argument checks and the planning; the kernels'
    own calls still check each array (a read-only gradient is refused), and another signature plans anew."""
    inputs, grads = run_backward(1, 2, 1, 100, 120, 64, True, "float16")
    assert len(library._BACKWARD_PLANS) == 1
    q, k, v, o, do = inputs
    lse = np.zeros((1, 2, 100), np.float32)
    library.attention(q, k, v, o, lse, causal=True)
    again = [np.zeros_like(g) for g in grads]
    library.attention_backward(q, k, v, o, lse, do, *again, causal=True)
    assert len(library._BACKWARD_PLANS) == 1
    for first, second in zip(grads, again):
        assert np.array_equal(first, second)          # exact: the same kernels on the same inputs
    again[0].setflags(write=False)
    with pytest.raises(nvdsl.ArgumentError) as refused:
        library.attention_backward(q, k, v, o, lse, do, *again, causal=True)
    assert refused.value.code == "read-only" and "'dq'" in str(refused.value)     # by the caller's name
    library.attention_backward(q, k, v, o, lse, do, *(np.zeros_like(g) for g in grads), causal=False)
    assert len(library._BACKWARD_PLANS) == 2


@pytest.mark.parametrize("change, code, words", [
    ({"dq": np.zeros((1, 2, 64, 64), np.float16)}, "bad-shape", "of one shape"),
    ({"dk": np.zeros((1, 1, 64, 64), np.float32)}, "bad-dtype", "all float16 or all bfloat16"),
    ({"lse": np.zeros((1, 1, 64), np.float16)}, "bad-shape", "lse must be float32"),
    ({"causal": 1}, "bad-argument", "causal=1"),
    ({"scale": -1.0}, "bad-argument", "scale=-1.0"),
    ({"d": 32}, "bad-shape", "head_dim 32 is not supported"),
    ({"do": 3.0}, "bad-argument", "must be arrays"),
])
def test_bad_arguments_are_named(change, code, words):
    q, k, v, o, lse = problem(1, 1, 1, 64, 64, change.pop("d", 64))
    arrays = {"q": q, "k": k, "v": v, "o": o, "lse": lse, "do": np.zeros_like(q), "dq": np.zeros_like(q),
              "dk": np.zeros_like(k), "dv": np.zeros_like(v), "causal": False, "scale": None}
    arrays.update(change)
    keywords = {name: arrays.pop(name) for name in ("causal", "scale")}
    with pytest.raises(nvdsl.ArgumentError) as error:
        library.attention_backward(*arrays.values(), **keywords)
    assert error.value.code == code and words in str(error.value)
    assert error.value.loc is not None and error.value.loc.filename == __file__


# --- on the GPU ----------------------------------------------------------------------------------------------

@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("h, hkv, l, d, causal, dtype, deterministic", [
    (4, 4, 1000, 128, True, "bfloat16", True),
    (8, 2, 777, 64, False, "float16", True),
    (2, 1, 513, 64, True, "bfloat16", True),
    (4, 2, 700, 256, True, "float16", True),
    (2, 2, 1030, 256, False, "bfloat16", True),
    (4, 2, 1000, 128, True, "bfloat16", False),
    (8, 8, 777, 64, False, "float16", False),
])
def test_gradients_match_torch_autograd(h, hkv, l, d, causal, dtype, deterministic):
    """torch tensors on the GPU, against torch autograd through scaled_dot_product_attention in float64 (with
    deterministic=False, dQ's float32 sum in any order: within the same bound, which holds for any order)."""
    torch = pytest.importorskip("torch")
    half = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(0)
    make = lambda heads: torch.randn(2, heads, l, d, device="cuda", generator=gen).to(half)   # noqa: E731
    q, k, v, do = make(h), make(hkv), make(hkv), make(h)
    o, lse = torch.empty_like(q), torch.empty(2, h, l, device="cuda")
    library.attention(q, k, v, o, lse, causal=causal)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    library.attention_backward(q, k, v, o, lse, do, dq, dk, dv, causal=causal, deterministic=deterministic)
    leaves = [x.double().requires_grad_() for x in (q, k, v)]
    expanded = [x.repeat_interleave(h // hkv, dim=1) for x in leaves[1:]]
    out = torch.nn.functional.scaled_dot_product_attention(leaves[0], *expanded, is_causal=causal)
    out.backward(do.double())
    numpy = lambda x: x.float().cpu().numpy()    # noqa: E731
    bounds = reference(*(numpy(x) for x in (q, k, v, o, do)), causal, d ** -0.5, dtype, exact_o=True)
    for name, computed, leaf, (_, bound) in zip(("dq", "dk", "dv"), (dq, dk, dv), leaves, bounds):
        assert_within(computed.double().cpu().numpy(), leaf.grad.cpu().numpy(), bound, name)


@requires_gpu
@pytest.mark.gpu
def test_gradients_are_the_same_bits_on_every_run():
    """By default (deterministic=True) every gradient is the same bits on every run; with deterministic=False dK
    and dV are (dQ's float32 sum takes the key blocks' parts in the order they land)."""
    torch = pytest.importorskip("torch")
    gen = torch.Generator(device="cuda").manual_seed(1)
    q, k, v, do = (torch.randn(2, 8, 2048, 128, device="cuda", generator=gen).half() for _ in range(4))
    o, lse = torch.empty_like(q), torch.empty(2, 8, 2048, device="cuda")
    library.attention(q, k, v, o, lse, causal=True)
    for deterministic in (True, False):
        runs = []
        for _ in range(3):
            grads = [torch.empty_like(x) for x in (q, k, v)]
            library.attention_backward(q, k, v, o, lse, do, *grads, causal=True, deterministic=deterministic)
            runs.append(grads)
        torch.cuda.synchronize()
        exact = slice(0, 3) if deterministic else slice(1, 3)
        assert all(torch.equal(a, b) for run in runs[1:] for a, b in zip(runs[0][exact], run[exact]))


def test_the_staged_ds_is_written_through_one_address_per_column_block():
    """At D 128 the consumers stage dS (64 rows x 64 columns each) between two named barriers: under the 128-byte
    swizzle each 8-column block needs its own address (the XOR pattern), the rows an immediate offset. Before, 15
    distinct addresses were held across the main loop and ptxas spilled 220 registers a consumer thread."""
    q = np.zeros((1, 2, 512, 128), np.float16)
    lse, parts = np.zeros((1, 2, 512), np.float32), np.zeros((1, 2, 512, 128), np.float32)
    mapping = library.backward_mappings(128)[2]
    ptx = nt.build(library.dkdv_program(False, 0.125, parts="dkdvdq"), mapping).compile(
        parts, parts, parts, q, q, q, q, lse, lse).ptx
    staging = ptx.split("barrier.sync")[1]            # the first named barrier to the second: dS's stores
    addresses = re.findall(r"st\.shared\.b32\s+\[(%rd\d+)\+\d+\]", staging)
    assert len(addresses) == 16 and len(set(addresses)) == 8

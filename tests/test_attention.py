"""nvdsl.kernels.attention: Flash Attention forward. CPU: argument errors, the PTX/SASS a fast kernel needs
(register-A HGMMA, MUFU.EX2, SHFL.BFLY, TMA both ways, setmaxnreg, no spills), and small cases in the
interpreter; GPU: ragged and aligned lengths, causal and not, grouped-query heads, head dims 64/128/256,
float16 and bfloat16, batch x heads from 1 to 64, against a float32 reference and torch SDPA."""

import math
import re

import numpy as np
import pytest

import nvdsl
import nvdsl.kernels.attention as library
from nvdsl import jit
from nvdsl.compiler.toolchain import find_tool
from nvdsl.testing import requires_gpu, sass_opcodes, tensor_core_loops
from test_tiles import random_arrays


@pytest.fixture(autouse=True)
def fresh_kernels():
    """Each test builds its traced functions anew, so that the ``backend`` fixture's setting applies."""
    library._kernel.cache_clear()
    library._CHECKED.clear()


def reference(q, k, v, causal, scale=None):
    """float64 (O, lse) for (B, H, L, D) q and (B, Hkv, Lk, D) k, v; top-left causal mask."""
    d = q.shape[-1]
    scale = d ** -0.5 if scale is None else scale
    group = q.shape[1] // k.shape[1]
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = q @ k.transpose(0, 1, 3, 2) * scale
    if causal:
        rows, cols = np.indices(s.shape[-2:])
        s = np.where(cols <= rows, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - m)
    total = e.sum(axis=-1, keepdims=True)
    return e / total @ v, (m + np.log(total))[..., 0]


def problem(b, h, hkv, l, lk, d, dtype="float16", seed=0):
    q, = random_arrays(seed, dtype, (b, h, l, d))
    k, v = random_arrays(seed + 1, dtype, (b, hkv, lk, d), (b, hkv, lk, d))
    return q, k, v, np.zeros_like(q), np.zeros((b, h, l), np.float32)


def check(o, lse, q, k, v, causal, dtype, scale=None):
    o_ref, lse_ref = reference(q, k, v, causal, scale)
    # P is rounded to 16 bits for P @ V and O to the output type
    tolerance = 4e-3 if dtype == "float16" else 3e-2
    np.testing.assert_allclose(o.astype(np.float32), o_ref, atol=tolerance, rtol=tolerance)
    np.testing.assert_allclose(lse, lse_ref, atol=2e-4, rtol=1e-5)


# --- in the interpreter (CI) and on the GPU --------------------------------------------------------------

@pytest.mark.parametrize("b, h, hkv, l, lk, d, causal, dtype", [
    (1, 2, 1, 200, 200, 64, False, "float16"),       # ragged, one masked key block at the end, GQA
    (1, 2, 2, 130, 257, 128, True, "bfloat16"),      # causal: unmasked blocks below the diagonal, ragged L
    (2, 2, 1, 256, 256, 128, True, "float16"),       # aligned causal: the diagonal blocks only are masked
    (1, 1, 1, 100, 70, 256, True, "float16"),        # head_dim 256: 64-key blocks
])
def test_attention_matches_numpy(b, h, hkv, l, lk, d, causal, dtype, backend):
    q, k, v, o, lse = problem(b, h, hkv, l, lk, d, dtype)
    library.attention(q, k, v, o, lse, causal=causal)
    check(o, lse, q, k, v, causal, dtype)



def test_attention_when_row_maxima_jump_late(backend):
    """The running max moves only when a row's scores grow by more than 2^8 (library.RESCALE_ABOVE): in head
    0 the last key block's scores jump far above the first blocks' (the max moves, o is rescaled), in head 1
    by less (the max stays, exponentials above 1 reach P); both match NumPy."""
    q, k, v, o, lse = problem(1, 2, 2, 192, 384, 64)
    k[0, 0, 256:] *= 8
    k[0, 1, 256:] *= 2
    c = 64 ** -0.5 * library.LOG2_E
    scores = np.einsum("hqd,hkd->hqk", q[0].astype(np.float32), k[0].astype(np.float32)) * c
    jump = scores[:, :, 256:].max(axis=2) - scores[:, :, :256].max(axis=2)
    assert (jump[0] > library.RESCALE_ABOVE).mean() > 0.9 and (jump[1] < library.RESCALE_ABOVE).all()
    assert (jump[1] > 1).mean() > 0.5
    library.attention(q, k, v, o, lse)
    check(o, lse, q, k, v, False, "float16")

def test_attention_without_lse_and_with_a_scale(backend):
    q, k, v, o, _ = problem(1, 1, 1, 192, 320, 64)
    library.attention(q, k, v, o, scale=0.3)
    o_ref, _ = reference(q, k, v, False, 0.3)
    np.testing.assert_allclose(o.astype(np.float32), o_ref, atol=4e-3, rtol=4e-3)


# --- what the compiled kernel is made of -----------------------------------------------------------------

@pytest.mark.parametrize("d, causal", [(128, False), (128, True), (64, False), (64, True), (256, True)])
def test_attention_kernel_is_warp_specialized_without_spills(d, causal):
    q = np.zeros((4, 16, 4096, d), np.float16)
    kernel = library._kernel(causal, d ** -0.5, True, library.task_mapping(d, causal, 4096))
    compiled = kernel.compile(q, np.zeros((4, 16, 4096), np.float32), q, q, q)
    ptx = compiled.ptx
    bn, consumers = library._tiles(d, causal, 4096)
    registers = {2: 240, 3: 160}[consumers]       # what the producer's 24 leave of the register file
    assert re.search(r"setmaxnreg.dec.sync.aligned.u32\s+24;", ptx)
    assert re.search(rf"setmaxnreg.inc.sync.aligned.u32\s+{registers};", ptx)
    assert f"wgmma.mma_async.sync.aligned.m64n{bn}k16.f32.f16.f16" in ptx                 # S = Q K^T
    assert re.search(rf"wgmma.mma_async.sync.aligned.m64n{d}k16.f32.f16.f16 \{{[^}}]*\}}, \{{%r", ptx)  # P V, P in regs
    assert re.search(r"wgmma.wait_group.sync.aligned\s+1;", ptx)     # softmax of S_j overlaps P_{j-1} V_{j-1}
    # each block's S starts from nothing: the first k-step ignores D (scale-d 0) instead of zeroed registers
    assert re.search(rf"setp.ne.b32 p, 0, 0;\s*wgmma.mma_async.sync.aligned.m64n{bn}k16", ptx)
    assert re.search(r"barrier.sync %r\d+, %r\d+;", ptx) and re.search(r"barrier.arrive %r\d+, %r\d+;", ptx)  # turns
    assert "cp.async.bulk.tensor.4d.global.shared::cta" in ptx         # O leaves by TMA, clipped at L
    launch, = compiled.module.plan.launches
    assert launch.block == (128 * (1 + consumers), 1, 1)
    tiles = -(-4096 // (64 * consumers)) * 4 * 16
    assert launch.grid == ((tiles if causal else min(tiles, jit.sm_count())), 1, 1)   # unmasked: a block per SM
    if compiled.cubin is None:
        return
    resources = compiled.resources["attention_kernel"]
    if d <= 128:    # at D = 256: see test_attention_at_head_dim_256_spills_only_outside_its_k_loops
        assert resources.spill_stores == 0 and resources.spill_loads == 0 and resources.stack_frame == 0
    assert "serialized" not in compiled.module.ptxas_log
    if find_tool("nvdisasm"):
        sass = compiled.sass()
        assert {"HGMMA", "UTMALDG", "UTMASTG", "SYNCS", "USETMAXREG", "SHFL", "MUFU"} <= sass_opcodes(sass)
        assert "SHFL.BFLY" in sass and "MUFU.EX2" in sass
        assert re.search(r"HGMMA\.64x\d+x16\.F32 R\d+, R\d+, gdesc", sass)   # A from registers
        # o *= alpha: a thread whose rows' maxima stayed branches over its d / 2 multiplies
        skipped = rf"@!?P\d BRA[^\n]*\n(\s*/\*[0-9a-f]+\*/\s+FMUL [^\n]*\n){{{d // 2}}}"
        assert all(re.search(skipped, loop) for loop in tensor_core_loops(sass))



@pytest.mark.parametrize("d", [64, 128, 256])
def test_attention_of_few_queries_runs_one_consumer_without_spills(d):
    """64 queries or fewer (a decode step, a group of heads' new tokens): one consumer warpgroup of 64 rows."""
    mapping = library.task_mapping(d, True, 64)
    assert mapping.consumers == 1 and mapping.tile_values()["BM"] == 64
    assert library.task_mapping(d, True, 65).consumers == 2
    q = np.zeros((4, 8, 64, d), np.float16)
    kernel = library._kernel(True, d ** -0.5, True, mapping)
    compiled = kernel.compile(q, np.zeros((4, 8, 64), np.float32), q, q, q)
    assert f"wgmma.mma_async.sync.aligned.m64n{d}k16.f32.f16.f16" in compiled.ptx
    launch, = compiled.module.plan.launches
    assert launch.block == (256, 1, 1) and launch.grid == (4 * 8, 1, 1)
    if compiled.cubin is None:
        return
    resources = compiled.resources["attention_kernel"]
    assert resources.spill_stores == 0 and resources.spill_loads == 0 and resources.stack_frame == 0
    if find_tool("nvdisasm"):
        assert {"HGMMA", "UTMALDG", "UTMASTG", "SYNCS"} <= sass_opcodes(compiled.sass())


@pytest.mark.skipif(not find_tool("nvdisasm"), reason="needs nvdisasm")
@pytest.mark.parametrize("causal, seq", [(True, 4096), (False, 4000)])
def test_attention_at_head_dim_256_spills_only_outside_its_k_loops(causal, seq):
    """At D = 256 the o accumulator alone takes 128 of a consumer's 240 registers, and ptxas spills a few
    values that live across the K loops (stored before them, loaded after): no local-memory access may sit in
    a loop that issues wgmma."""
    q = np.zeros((1, 2, seq, 256), np.float16)
    kernel = library._kernel(causal, 256 ** -0.5, True, library.task_mapping(256, causal, seq))
    compiled = kernel.compile(q, np.zeros((1, 2, seq), np.float32), q, q, q)
    loops = tensor_core_loops(compiled.sass())
    assert len(loops) >= 2                       # each consumer's loop (and the masked loop, where there is one)
    for loop in loops:
        assert not re.search(r"\b(STL|LDL)\b", loop), loop

# --- errors ----------------------------------------------------------------------------------------------

def test_attention_refuses_bad_arguments():
    q, k, v, o, lse = problem(1, 4, 2, 64, 64, 64)

    def refused(code, match, *args, **kwargs):
        with pytest.raises(nvdsl.ArgumentError, match=match) as info:
            library.attention(*args, **kwargs)
        assert info.value.code == code and info.value.loc.filename == __file__

    refused("bad-shape", "4-D", q[0], k, v, o)
    refused("bad-shape", "k and v of one shape", q, k, np.ascontiguousarray(v[:, :, :32]), o)
    refused("bad-shape", "head_dim 32", *problem(1, 1, 1, 64, 64, 32)[:4])
    refused("bad-shape", "not a multiple", *problem(1, 3, 2, 64, 64, 64)[:4])
    refused("bad-dtype", "float16 or all bfloat16", q, k, v, o.astype(np.float32))
    refused("bad-dtype", "float16 or all bfloat16", *(x.astype(np.float32) for x in (q, k, v, o)))
    refused("bad-shape", "lse must be float32", q, k, v, o, np.ascontiguousarray(lse[:, :, :10]))
    refused("bad-argument", "scale", q, k, v, o, scale=-1.0)
    refused("bad-argument", "causal", q, k, v, o, causal="yes")
    refused("bad-argument", "cannot pass to a kernel", q, [1, 2], v, o)
    refused("bad-argument", "k must be arrays", q, 1.0, v, o)


def test_a_repeated_call_skips_the_checks_but_not_the_calls_own(backend):
    """The second call with one signature skips attention's checks; the kernel call still checks layouts."""
    q, k, v, o, lse = problem(1, 1, 1, 64, 64, 64)
    library.attention(q, k, v, o, lse)
    assert len(library._CHECKED) == 1
    o.setflags(write=False)
    with pytest.raises(nvdsl.ArgumentError) as info:
        library.attention(q, k, v, o, lse)                      # same signature, but o cannot be written
    assert info.value.code == "read-only" and "argument 'o'" in str(info.value), info.value


# --- the GPU matrix --------------------------------------------------------------------------------------

@requires_gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("d", [64, 128, 256])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("b, h, hkv, l", [(1, 1, 1, 1000), (2, 8, 2, 4095), (8, 8, 1, 128)])
def test_attention_on_the_gpu(dtype, d, causal, b, h, hkv, l):
    torch = pytest.importorskip("torch")
    q, k, v, o, lse = problem(b, h, hkv, l, l, d, dtype, seed=l + d)
    half = torch.float16 if dtype == "float16" else torch.bfloat16
    to_device = lambda x: torch.from_numpy(x).cuda() if x.dtype == np.float32 else \
        torch.from_numpy(x.view(np.uint16)).cuda().view(half)        # bfloat16 NumPy arrays are ml_dtypes'
    tq, tk, tv, to, tlse = (to_device(x) for x in (q, k, v, o, lse))
    library.attention(tq, tk, tv, to, tlse, causal=causal)
    torch.cuda.synchronize()
    # float32 reference on the GPU (the float64 NumPy one is slow at these sizes)
    group = h // hkv
    f = lambda x: x.float()
    kk, vv = f(tk).repeat_interleave(group, dim=1), f(tv).repeat_interleave(group, dim=1)
    s = f(tq) @ kk.transpose(-1, -2) * d ** -0.5
    if causal:
        s = s.masked_fill(torch.ones(l, l, dtype=torch.bool, device="cuda").triu(1), float("-inf"))
    lse_ref = torch.logsumexp(s, dim=-1)
    o_ref = torch.softmax(s, dim=-1) @ vv
    tolerance = 4e-3 if dtype == "float16" else 3e-2
    torch.testing.assert_close(to.float(), o_ref, atol=tolerance, rtol=tolerance)
    torch.testing.assert_close(tlse, lse_ref, atol=2e-4, rtol=1e-5)
    # and against torch's own kernels on the same inputs
    sdpa = torch.nn.functional.scaled_dot_product_attention(tq, kk.to(tq.dtype), vv.to(tq.dtype), is_causal=causal)
    torch.testing.assert_close(to, sdpa, atol=2 * tolerance, rtol=2 * tolerance)

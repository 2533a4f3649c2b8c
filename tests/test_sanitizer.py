"""compute-sanitizer (memcheck, racecheck, synccheck) over every tutorial and nvdsl.kernels at small sizes.

Each program runs on the GPU in a process of its own under one tool; a clean run exits 0 and reports
"ERROR SUMMARY: 0 errors". Marked ``sanitizer`` (and ``gpu``): slow, so run them alone with
``python3 -m pytest -m sanitizer``; ``-m "gpu and not sanitizer"`` runs the other GPU tests.
"""

import os
import subprocess
import sys

import pytest

from nvdsl.compiler.toolchain import find_tool
from nvdsl.testing import requires_gpu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLS = ("memcheck", "racecheck", "synccheck")

def _backward_program(d: int, deterministic: bool = True) -> str:
    """A sanitized program: attention's backward at head_dim ``d`` against NumPy."""
    return (
        "import numpy as np; from nvdsl.kernels.attention import attention, attention_backward; "
        "rng = np.random.default_rng(0); f = lambda *s: rng.standard_normal(s).astype(np.float16); "
        "q, do, k, v = f(1, 2, 130, {d}), f(1, 2, 130, {d}), f(1, 1, 200, {d}), f(1, 1, 200, {d}); "
        "o, lse = np.zeros_like(q), np.zeros((1, 2, 130), np.float32); attention(q, k, v, o, lse, causal=True); "
        "dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v); "
        "attention_backward(q, k, v, o, lse, do, dq, dk, dv, causal=True, deterministic={deterministic}); "
        "Q, O, dO = (x.astype(np.float64)[0] for x in (q, o, do)); "
        "K, V = (x.astype(np.float64)[0, 0] for x in (k, v)); "
        "s = np.where(np.tri(130, 200, dtype=bool), Q @ K.T * {scale}, -np.inf); "
        "p = np.exp(s - s.max(-1, keepdims=True)); p /= p.sum(-1, keepdims=True); "
        "ds = p * (dO @ V.T - (dO * O).sum(-1, keepdims=True)); "
        "refs = (ds @ K * {scale}, (ds.transpose(0, 2, 1) @ Q * {scale}).sum(0), "
        "(p.transpose(0, 2, 1) @ dO).sum(0)); "
        "errs = [np.abs(g.astype(np.float64).squeeze() - r).max() for g, r in zip((dq, dk, dv), refs)]; "
        "assert max(errs) < 2e-2, errs; print('PASS')").format(d=d, scale=d ** -0.5, deterministic=deterministic)


PROGRAMS = {
    "ch0_hello": "import ch0_hello; ch0_hello.run_and_verify(ch0_hello.hello, (), verify=lambda: None)",
    "ch1_saxpy": "import ch1_saxpy; ch1_saxpy.main(rows=100, cols=150)",
    "ch2_tma": "import ch2_tma; ch2_tma.main(rows=128, cols=128)",
    "ch3_gemm_single_tile": "import ch3_gemm_single_tile; ch3_gemm_single_tile.main()",
    "ch4_gemm_multistage": "import ch4_gemm_multistage; ch4_gemm_multistage.main(m=256, n=256, k=512)",
    "ch5_gemm_warp_specialized": "import ch5_gemm_warp_specialized; ch5_gemm_warp_specialized.main(m=256, n=512, k=512)",
    # each mapping checked, without main()'s timing on 8192^2 problems
    "ch6_tasks_and_mappings": ("import ch6_tasks_and_mappings as ch6, nvdsl.tasks as nt; "
                               "[ch6.check(nt.build(ch6.gemm, mapping), 256, 512, 320) "
                               "for mapping in ch6.MAPPINGS.values()]"),
    "kernels.gemm": ("import numpy as np; from nvdsl.kernels.gemm import MAPPING, gemm; "
                     "rng = np.random.default_rng(0); "
                     "a = rng.standard_normal((512, 256)).astype(np.float16); "
                     "b = rng.standard_normal((256, 512)).astype(np.float16); c = np.zeros((512, 512), np.float32); "
                     "gemm(a, b, c, mapping=MAPPING.replace(sm_count=3)); "
                     "e = np.linalg.norm(c - a.astype(np.float32) @ b.astype(np.float32)); "
                     "assert e / np.linalg.norm(c) < 1e-3, e; print('PASS')"),
    "ch7_attention": "import ch7_attention; ch7_attention.main()",
    # a ragged causal GQA problem: both loops (unmasked, masked), the ping-pong turns and a clipped O store
    "kernels.attention": ("import numpy as np; from nvdsl.kernels.attention import attention; "
                          "rng = np.random.default_rng(0); "
                          "q = rng.standard_normal((1, 2, 300, 64)).astype(np.float16); "
                          "k, v = (rng.standard_normal((1, 1, 300, 64)).astype(np.float16) for _ in range(2)); "
                          "o = np.zeros_like(q); attention(q, k, v, o, causal=True); "
                          "kk, vv = (np.repeat(x.astype(np.float64), 2, axis=1) for x in (k, v)); "
                          "s = q.astype(np.float64) @ kk.transpose(0, 1, 3, 2) / 8; "
                          "s = np.where(np.tri(300, dtype=bool), s, -np.inf); "
                          "p = np.exp(s - s.max(-1, keepdims=True)); ref = p / p.sum(-1, keepdims=True) @ vv; "
                          "assert np.abs(o - ref).max() < 4e-3; print('PASS')"),
    # odd K and N: A, B and the 3-D partials through staging copies, split-K's two kernels
    "kernels.gemm-odd": ("import numpy as np; from nvdsl.kernels.gemm import gemm; "
                         "rng = np.random.default_rng(0); "
                         "a = rng.standard_normal((16, 999)).astype(np.float16); "
                         "b = rng.standard_normal((999, 130)).astype(np.float16); c = np.zeros((16, 130), np.float16); "
                         "gemm(a, b, c, splits=2); "
                         "e = np.abs(c - a.astype(np.float64) @ b.astype(np.float64)).max(); "
                         "assert e < 0.05, e; print('PASS')"),
    # a decode step's split: 64 x 64 tiles in two splits of K, the sum launched to overlap its products' kernel
    "kernels.gemm-decode": ("import numpy as np; from nvdsl.kernels.gemm import TILE_64x64_MAPPING, gemm; "
                            "rng = np.random.default_rng(0); "
                            "a = rng.standard_normal((16, 1000)).astype(np.float16); "
                            "b = rng.standard_normal((1000, 200)).astype(np.float16); "
                            "c = np.zeros((16, 200), np.float16); "
                            "gemm(a, b, c, mapping=TILE_64x64_MAPPING, splits=2); "
                            "e = np.abs(c - a.astype(np.float64) @ b.astype(np.float64)).max(); "
                            "assert e < 0.05, e; print('PASS')"),
    # rows past the last column block's middle, loads past N masked and the output stored by each thread's clipped
    # stores: rows of 300 float32 (1200 bytes) in 16-byte vectors, rows of 1001 one element at a time; wide rows one
    # to a block over the four warps (their sums meeting in shared memory), 4100 in vectors (16400-byte rows: kept in
    # shared memory for the tile, loaded by TMA onto an mbarrier per column block), 2051 an element a lane, 128 and 200
    # sixteen rows to a block (tiles of 128 and 256 columns: runs of 4 and 8 columns a lane); few rows of
    # 20000 and 33000 (80 and 132 KB) held by two warpgroups together (in shared memory) and by four (in registers)
    # (cross-entropy's target logits read one a row, targets outside the row among them: nothing read outside it)
    "kernels.rowwise": ("import numpy as np; from nvdsl.kernels.rowwise import softmax, cross_entropy; "
                        "rng = np.random.default_rng(0)\n"
                        "for shape in ((100, 300), (40, 128), (33, 200), (37, 1001), (5, 4100), (3, 2051), (3, 20000),"
                        " (2, 33000)):\n"
                        "    x = rng.standard_normal(shape).astype(np.float32); "
                        "y = np.zeros_like(x); softmax(x, y); e = np.exp(x - x.max(1, keepdims=True)); "
                        "assert np.abs(y - e / e.sum(1, keepdims=True)).max() < 1e-5\n"
                        "    t = rng.integers(0, shape[1], shape[0]).astype(np.int32); t[:2] = (-100, shape[1]); "
                        "loss = np.zeros(shape[0], np.float32); cross_entropy(x, t, loss); "
                        "lse = np.log(np.exp(x.astype(np.float64)).sum(1)); r = np.arange(shape[0]); "
                        "want = lse - np.where((t >= 0) & (t < shape[1]), x[r, np.clip(t, 0, shape[1] - 1)], 0); "
                        "assert np.abs(loss - want).max() < 1e-4\n"
                        "print('PASS')"),
    # a ragged causal GQA backward: D, dQ, dK/dV per query head, keys past the last query zeroed, heads summed (at
    # head_dim 256 dK and dV by separate kernels)
    **{name: _backward_program(d) for name, d in (("kernels.attention-backward", 64),
                                                  ("kernels.attention-backward-d256", 256))},
    # dQ's parts added by the dK/dV kernel: dS staged in shared memory for its transposed read, TMA reductions
    "kernels.attention-backward-summed-dq": _backward_program(64, deterministic=False),
    # at D 128 the consumers stage dS side by side and each computes half of dQ's columns (named barriers)
    "kernels.attention-backward-summed-dq-d128": _backward_program(128, deterministic=False),
    # tiles added into one output by TMA reductions from several blocks (three splits of K), C through a staging copy
    "tasks.added": ("import sys; sys.path.insert(0, 'tests'); import numpy as np, nvdsl.tasks as nt; "
                    "from test_tasks_added import added_splits, small_integers; "
                    "a, b = small_integers((200, 320), np.float16, 1), small_integers((320, 130), np.float16, 2); "
                    "c = small_integers((200, 130), np.float32, 3); "
                    "want = c + a.astype(np.float64) @ b.astype(np.float64); "
                    "nt.build(added_splits, nt.Mapping(sm_count=4))(c, a, b); "
                    "assert np.array_equal(c, want); print('PASS')"),    # exact: small integers
    # a variant: a soft cap and a causal document mask reading an argument, forward and backward on ragged L, the
    # mask's kept blocks found per batch and the kernels visiting their ranges (chapter 9's check against NumPy)
    "kernels.attention-variants": (
        "from ch9_attention_variants import check; check(batch=2, heads=2, length=300, d=64); print('PASS')"),
    # packed sequences: the key intervals and block tables from the offsets, ragged lengths, an empty sequence,
    # tokens past the last one, grouped heads; forward and backward (dK, dV of the last sequence's keys checked)
    "kernels.attention-varlen": (
        "import numpy as np; from nvdsl.kernels.attention_varlen import attention_varlen, "
        "attention_varlen_backward as backward; rng = np.random.default_rng(0); "
        "f = lambda *s: rng.standard_normal(s).astype(np.float16); cu = np.array([0, 70, 70, 250], np.int32); "
        "q, do, k, v = f(260, 2, 64), f(260, 2, 64), f(260, 1, 64), f(260, 1, 64); o = np.zeros_like(q); "
        "lse = np.zeros((2, 260), np.float32); attention_varlen(q, k, v, o, cu, cu, lse, causal=True); "
        "dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v); "
        "backward(q, k, v, o, lse, do, dq, dk, dv, cu, cu, causal=True); "
        "Q, O, dO = (x.astype(np.float64)[70:250].transpose(1, 0, 2) for x in (q, o, do)); "
        "K, V = (x.astype(np.float64)[70:250, 0] for x in (k, v)); "
        "s = np.where(np.tri(180, dtype=bool), Q @ K.T / 8, -np.inf); "
        "p = np.exp(s - s.max(-1, keepdims=True)); p /= p.sum(-1, keepdims=True); "
        "ds = p * (dO @ V.T - (dO * O).sum(-1, keepdims=True)); "
        "refs = (p @ V, (ds.transpose(0, 2, 1) @ Q / 8).sum(0), (p.transpose(0, 2, 1) @ dO).sum(0)); "
        "got = (O, dk[70:250, 0], dv[70:250, 0]); "
        "errs = [np.abs(g.astype(np.float64) - r).max() for g, r in zip(got, refs)]; "
        "assert max(errs) < 2e-2 and not o[250:].any() and not dk[250:].any(), errs; print('PASS')"),
    # a decode step split along the cache (four chunks of 512 keys on 132 SMs), its chunks combined; grouped heads
    "kernels.attention-decode": (
        "import numpy as np; from nvdsl.kernels.attention_varlen import attention_decode; "
        "rng = np.random.default_rng(0); f = lambda *s: rng.standard_normal(s).astype(np.float16); "
        "q, k, v = f(1, 4, 1, 64), f(1, 1, 2048, 64), f(1, 1, 2048, 64); o = np.zeros_like(q); "
        "attention_decode(q, k, v, o, np.array([1500], np.int32)); "
        "s = q[0, :, 0].astype(np.float64) @ k[0, 0, :1500].astype(np.float64).T / 8; "
        "p = np.exp(s - s.max(-1, keepdims=True)); ref = p / p.sum(-1, keepdims=True) @ v[0, 0, :1500]; "
        "e = np.abs(o[0, :, 0] - ref).max(); assert e < 4e-3, e; print('PASS')"),
    # attention without a mask runs persistent: two blocks loop over three tiles each (ragged rows, grouped heads)
    "kernels.attention-persistent": (
        "import numpy as np; from nvdsl.kernels.attention import attention, task_mapping; "
        "rng = np.random.default_rng(0); q = rng.standard_normal((1, 2, 300, 64)).astype(np.float16); "
        "k, v = (rng.standard_normal((1, 1, 300, 64)).astype(np.float16) for _ in range(2)); "
        "o = np.zeros_like(q); mapping = task_mapping(64, False, 300).replace(sm_count=2); "
        "assert mapping.persistent; attention(q, k, v, o, mapping=mapping); "
        "kk, vv = (np.repeat(x.astype(np.float64), 2, axis=1) for x in (k, v)); "
        "s = q.astype(np.float64) @ kk.transpose(0, 1, 3, 2) / 8; "
        "p = np.exp(s - s.max(-1, keepdims=True)); ref = p / p.sum(-1, keepdims=True) @ vv; "
        "e = np.abs(o - ref).max(); assert e < 4e-3, e; print('PASS')"),
    # float8 with DeepSeek-V3's block scales (torch's arrays: NumPy has no float8): ragged M, N and a partial last
    # block of K; scale_a M-major, then row-major (its transpose staged); 128-row tiles, 64-row tiles in turns, A's
    # scales through the ring and by the threads, the consumers taking turns at each step's product (the bound: 128
    # products summed at 2^-12 by the tensor cores, gamma_128 < 2^-4).
    # nvdsl's driver first: cuda-python looks up every driver entry point it knows when first used, and after
    # torch's cuInit memcheck reports each one this driver lacks (34 on an H200's) as a failed API call of the host.
    "kernels.block-scaled-gemm": (
        "import nvdsl; nvdsl.device_count(); import torch; from nvdsl.kernels.gemm import BLOCK_SCALED_MAPPING as cooperative, "
        "BLOCK_SCALED_PINGPONG_MAPPING as pingpong, block_scaled_gemm; torch.manual_seed(0); m, n, k = 200, 300, 336; "
        "a, b = (torch.randn(s, device='cuda').to(torch.float8_e4m3fn) for s in ((m, k), (n, k))); "
        "sa, sb = torch.rand(3, m, device='cuda').T + 0.5, torch.rand(3, 3, device='cuda') + 0.5; "
        "blocks = [slice(j * 128, (j + 1) * 128) for j in range(3)]; rows = torch.arange(n, device='cuda') // 128; "
        "parts = [a[:, s].double() @ b[:, s].double().T for s in blocks]; "
        "sizes = [a[:, s].double().abs() @ b[:, s].double().abs().T for s in blocks]; "
        "ref = sum(p * sa[:, j, None] * sb[rows, j] for j, p in enumerate(parts)); "
        "bound = sum(p * sa[:, j, None] * sb[rows, j] for j, p in enumerate(sizes)) * 2.0 ** -4 + 1e-6\n"
        "for mapping, scales in ((cooperative, sa), (pingpong, sa.contiguous()), "
        "(cooperative.replace(memory={}), sa), (cooperative.replace(turns=True), sa)):\n"
        "    c = torch.full((m, n), float('nan'), device='cuda'); "
        "block_scaled_gemm(a, b, c, scales, sb, mapping=mapping); "
        "assert ((c.double() - ref).abs() <= bound).all(), (c.double() - ref).abs().max()\n"
        "print('PASS')"),
    # a profiled GEMM (nvdsl.profile): each role's records written beside the arrays, a ragged edge, 2 tiles a block
    "tasks.profile": (
        "import numpy as np, nvdsl; from nvdsl.kernels.gemm import gemm; "
        "rng = np.random.default_rng(0); a = rng.standard_normal((300, 200)).astype(np.float16); "
        "b = rng.standard_normal((200, 520)).astype(np.float16); c = np.zeros((300, 520), np.float16); "
        "p = nvdsl.profile(gemm, a, b, c, capacity=64)[0]; "
        "ref = a.astype(np.float64) @ b.astype(np.float64); e = np.abs(c - ref).max(); "   # fp16 rounding + fp32 sums
        "bound = 2.0 ** -11 * np.abs(ref).max() + 200 * 2.0 ** -24 * (np.abs(a) @ np.abs(b)).max(); "
        "assert e <= bound and len(p.start_ns) and (p.end_ns >= p.start_ns).all(), e; print('PASS')"),
}


def environment(tmp_path, backend):
    return dict(os.environ, NVDSL_BACKEND=backend, NVDSL_CACHE_DIR=str(tmp_path),
                PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "tutorials"), os.environ.get("PYTHONPATH", "")]))


@pytest.mark.parametrize("program", ["ch0_hello", "ch3_gemm_single_tile", "ch6_tasks_and_mappings", "kernels.gemm",
                                     "kernels.attention", "kernels.gemm-odd", "kernels.gemm-decode", "kernels.rowwise",
                                     "kernels.attention-backward", "kernels.attention-backward-d256",
                                     "kernels.attention-backward-summed-dq",
                                     "kernels.attention-backward-summed-dq-d128",
                                     "kernels.attention-variants",
                                     "kernels.attention-varlen", "kernels.attention-decode", "tasks.profile",
                                     "tasks.added",
                                     "kernels.attention-persistent"])
def test_the_sanitized_programs_run_and_pass(program, tmp_path):
    """The programs the sanitizer runs (here in the interpreter, so this runs anywhere)."""
    run = subprocess.run([sys.executable, "-c", PROGRAMS[program]], cwd=ROOT, env=environment(tmp_path, "interpret"),
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and "PASS" in run.stdout, run.stderr[-3000:]


@pytest.mark.sanitizer
@requires_gpu
@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_compute_sanitizer_is_clean(program, tool, tmp_path):
    sanitizer = find_tool("compute-sanitizer")
    if sanitizer is None:
        pytest.skip("compute-sanitizer is not installed")
    env = environment(tmp_path, "gpu")
    command = [sanitizer, "--tool", tool, "--error-exitcode", "99", "--print-limit", "20",
               sys.executable, "-c", PROGRAMS[program]]
    if tool == "racecheck":
        command[1:1] = ["--racecheck-report", "all"]
    run = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    output = run.stdout + run.stderr
    clean = "RACECHECK SUMMARY: 0 hazards displayed (0 errors" if tool == "racecheck" else "ERROR SUMMARY: 0 errors"
    assert run.returncode == 0 and clean in output, f"{tool} on {program} (exit {run.returncode}):\n{output[-6000:]}"
    assert "PASS" in run.stdout, output[-3000:]


@pytest.mark.sanitizer
@requires_gpu
@pytest.mark.parametrize("variant", ["nohint"])
def test_synccheck_is_clean_on_the_minimal_cuda_wait(variant, tmp_path):
    """tests/cuda/wait_divergence.cu: chapter 5's wait and named barrier in CUDA C++ (see the file).
    Its ``hint`` variant is the wait nvdsl emitted before; run it by hand to compare."""
    sanitizer, nvcc = find_tool("compute-sanitizer"), find_tool("nvcc")
    if sanitizer is None or nvcc is None:
        pytest.skip("needs compute-sanitizer and nvcc")
    binary = str(tmp_path / "wait_divergence")
    build = subprocess.run([nvcc, "-arch=sm_90a", "-o", binary, os.path.join(ROOT, "tests", "cuda", "wait_divergence.cu")],
                           capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([sanitizer, "--tool", "synccheck", "--error-exitcode", "99", binary, variant],
                         capture_output=True, text=True, timeout=600)
    output = run.stdout + run.stderr
    assert run.returncode == 0 and "ERROR SUMMARY: 0 errors" in output, output[-4000:]

"""Tutorial chapters: golden MLIR on every machine; each chapter runs and checks itself, on a GPU or in the
CPU interpreter."""

import importlib
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import nvdsl
import nvdsl.tasks as nt
from nvdsl.compiler.toolchain import find_tool
from nvdsl.testing import assert_matches_golden, has_gpu, requires_gpu, sass_opcodes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TUTORIALS = os.path.join(ROOT, "tutorials")
GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
# golden IR and the compile-only path; all chapters run on a GPU below. Chapters 5 and 7 trace to 260-400 KB
# of IR and have no golden file: their PTX and SASS are checked instead (tests/test_gemm.py, and below).
CHAPTERS = ["ch0_hello", "ch1_saxpy", "ch2_tma", "ch3_gemm_single_tile", "ch4_gemm_multistage"]


def chapter(name):
    if TUTORIALS not in sys.path:
        sys.path.insert(0, TUTORIALS)
    return importlib.import_module(name)


def chapter_traces():
    x = np.zeros((1000, 1500), np.float32)
    f16 = lambda *shape: np.zeros(shape, np.float16)
    return {"ch0_hello": chapter("ch0_hello").hello.trace(),
            "ch1_saxpy": chapter("ch1_saxpy").saxpy.trace(x, x.copy(), 2.5),
            "ch2_tma": chapter("ch2_tma").double_by_tiles.trace(f16(256, 192), f16(256, 192)),
            "ch3_gemm_single_tile": chapter("ch3_gemm_single_tile").gemm_tile.trace(
                f16(128, 64), f16(64, 128), np.zeros((128, 128), np.float32)),
            "ch4_gemm_multistage": chapter("ch4_gemm_multistage").make_gemm(4).trace(
                f16(256, 512), f16(512, 256), np.zeros((256, 256), np.float32))}


@pytest.mark.parametrize("name", CHAPTERS)
def test_chapter_ir_matches_golden(name, request):
    assert_matches_golden(chapter_traces()[name].mlir, os.path.join(GOLDEN, f"{name}.mlir"),
                          update=request.config.getoption("--update-golden"))


def run_chapter(name, tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               NVDSL_DUMP_DIR=str(tmp_path))
    return subprocess.run([sys.executable, os.path.join(TUTORIALS, f"{name}.py")], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)       # what a chapter writes stays there


INTERPRETER_NOTICE = "nvdsl: no GPU found, so calls run in the CPU interpreter"


@pytest.mark.skipif(has_gpu(), reason="checks the interpreter, the default without a GPU")
@pytest.mark.parametrize("name", CHAPTERS + ["ch5_gemm_warp_specialized", "ch6_tasks_and_mappings", "ch7_attention"])
def test_chapter_without_gpu_runs_in_the_interpreter_and_passes(name, tmp_path):
    result = run_chapter(name, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("PASS")
    assert result.stderr.count(INTERPRETER_NOTICE) == 1     # said once, on the first call
    if name == "ch6_tasks_and_mappings":                    # where the persistent mapping's time goes
        assert "gemm: " in result.stdout and "  producer: " in result.stdout and "data wait" in result.stdout


def test_ch0_prints_every_thread_id(tmp_path):
    result = run_chapter("ch0_hello", tmp_path)
    assert result.returncode == 0, result.stderr
    lines = {line for line in result.stdout.splitlines() if line.startswith("hello")}
    assert lines == {f"hello from thread {t} of block {b} (4 threads per block)" for t in range(4) for b in range(2)}


@requires_gpu
@pytest.mark.parametrize("name", ["ch1_saxpy", "ch2_tma", "ch3_gemm_single_tile", "ch4_gemm_multistage",
                                  "ch5_gemm_warp_specialized", "ch7_attention"])
def test_chapter_checks_itself_and_passes(name, tmp_path):
    result = run_chapter(name, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("PASS")


def test_ch6_explains_each_mapping_it_derives_from_one_program(tmp_path):
    ch6 = chapter("ch6_tasks_and_mappings")
    args = (np.zeros((512, 768), np.float16), np.zeros((512, 1000), np.float16), np.zeros((1000, 768), np.float16))
    texts = {name: nt.build(ch6.gemm, mapping).explain(*args) for name, mapping in ch6.MAPPINGS.items()}
    assert "they also issue the loads" in texts["multistage"] and "producer = warpgroup 0" not in texts["multistage"]
    assert "producer = warpgroup 0" in texts["warp-specialized"] and "one block per tile" in texts["warp-specialized"]
    assert "grouped order" in texts["persistent"] and "(whole kernel)" in texts["persistent"]
    assert "they take turns at the main loop" in texts["ping-pong"] and "in turn" in texts["ping-pong"]


@requires_gpu
def test_ch6_checks_every_mapping_and_times_them(tmp_path):
    result = run_chapter("ch6_tasks_and_mappings", tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines.count("PASS") == len(chapter("ch6_tasks_and_mappings").MAPPINGS) == 4
    assert sum("TFLOP/s" in line for line in lines) == 4 or "PyTorch" in result.stdout
    assert "nt.autotune chose: " in result.stdout or "PyTorch" in result.stdout


def test_ch7_explains_which_thread_holds_each_score(capsys):
    """The owners chapter 7 prints are those of its docstring's formula: thread t = t0 + 4 t1 + 32 t2 holds
    rows 16 t2 + t1 (+ 8) and columns 2 t0, 2 t0 + 1 of each 8-column block."""
    chapter("ch7_attention").explain_accumulator_layout(128)
    text = capsys.readouterr().out
    owner = np.full((64, 128), -1)
    for t in range(128):
        t0, t1, t2 = t % 4, t // 4 % 8, t // 32
        for h, q, j in np.ndindex(2, 16, 2):
            owner[16 * t2 + t1 + 8 * h, 8 * q + 2 * t0 + j] = t
    table = [[int(cell[1:]) for cell in line.split()] for line in text.splitlines() if line.startswith("T")]
    assert table == owner[:len(table), :len(table[0])].tolist() and len(table) >= 9      # row 8 is thread 0's again
    assert "((4,8,4),(2,2,16)):((128,1,16),(64,8,512))" in text and "lanes 1 and 2 apart" in text


@pytest.mark.skipif(find_tool("ptxas") is None, reason="ptxas not installed")
@pytest.mark.parametrize("causal", [False, True])
def test_ch7_online_softmax_is_shuffles_ex2_and_register_a_wgmma_without_spills(causal):
    """Step 2 at head_dim 128: S and O are 64 x 128 float32 tiles (64 registers each) beside P in float16.
    Row reductions are quad shuffles, each score one MUFU.EX2, P V reads A from registers."""
    ch7 = chapter("ch7_attention")
    q = np.zeros((1000, 128), np.float16)
    compiled = ch7.make_flash_attention(128, causal, bn=128).compile(q, q, q, q.copy(), np.zeros(1000, np.float32))
    ptx = compiled.ptx
    register_a = re.findall(r"wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 \{[^}]*\}, "
                            r"\{%r\d+, %r\d+, %r\d+, %r\d+\}, %rd\d+", ptx)
    assert len(register_a) == 128 // 16 and ptx.count("wgmma.mma_async") == 2 * 128 // 16
    resources = compiled.resources["attention_kernel"]
    assert resources.spill_stores == 0 and resources.spill_loads == 0 and resources.stack_frame == 0
    assert "serialized" not in compiled.module.ptxas_log          # ptxas keeps the wgmma pipeline
    if find_tool("nvdisasm"):
        sass = compiled.sass()
        assert {"HGMMA", "SHFL", "MUFU", "UTMALDG", "UTMASTG"} <= sass_opcodes(sass)
        assert len(re.findall(r"HGMMA\.64x128x16\.F32 R\d+, R\d+, gdesc", sass)) == 128 // 16
        assert sass.count("SHFL.BFLY") == 2 * 2 * 2                   # (max, sum) x 2 rows x lanes 1, 2 apart
        assert sass.count("MUFU.EX2") >= 64 * 128 // 128             # at least one per score a thread holds


@pytest.mark.parametrize("d, n, dtype", [(128, 256, "bfloat16")])
def test_ch7_step1_at_full_width_matches_numpy(d, n, dtype, backend):
    chapter("ch7_attention").check_attention_block(d, n, getattr(nvdsl, dtype))


@pytest.mark.parametrize("seq_len, d, causal, bn, dtype", [(300, 128, True, 128, "bfloat16")])
def test_ch7_step2_at_full_size_blocks_matches_numpy(seq_len, d, causal, bn, dtype, backend):
    chapter("ch7_attention").check_flash_attention(seq_len, d, causal, bn, getattr(nvdsl, dtype))


@requires_gpu
@pytest.mark.parametrize("d, n, dtype", [(64, 64, "float16"), (128, 256, "float16"), (128, 128, "bfloat16"),
                                         (64, 256, "bfloat16")])
def test_ch7_step1_matches_numpy_on_the_gpu(d, n, dtype):
    chapter("ch7_attention").check_attention_block(d, n, getattr(nvdsl, dtype))


@requires_gpu
@pytest.mark.parametrize("seq_len, d, causal, bn, dtype", [
    (64, 64, False, 64, "float16"), (1000, 64, False, 64, "float16"), (1000, 128, False, 128, "float16"),
    (1000, 128, True, 128, "float16"), (4095, 64, True, 128, "bfloat16"), (4096, 128, False, 128, "bfloat16"),
    (4095, 128, True, 64, "float16")])
def test_ch7_step2_matches_numpy_on_the_gpu(seq_len, d, causal, bn, dtype):
    chapter("ch7_attention").check_flash_attention(seq_len, d, causal, bn, getattr(nvdsl, dtype))


def test_the_readme_example_runs_and_computes(tmp_path):
    """The README's first code block, as a user would paste it, then its promise checked."""
    text = open(os.path.join(ROOT, "README.md")).read()
    example = text.split("```python\n", 1)[1].split("```", 1)[0]
    script = example + "\nassert (y == 3.0).all(), y[:8]\nprint('README OK')\n"
    result = subprocess.run([sys.executable, "-c", script], cwd=str(tmp_path), capture_output=True, text=True,
                            timeout=300, env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                                [ROOT] + os.environ.get("PYTHONPATH", "").split(os.pathsep))))
    assert result.returncode == 0 and "README OK" in result.stdout, result.stderr


@pytest.mark.skipif(has_gpu(), reason="the GPU configuration runs below")
def test_ch8_trains_with_nvdsl_ops_as_with_torch_ops_in_the_interpreter(tmp_path):
    """A tiny configuration, three steps on CPU tensors: nvdsl's ops (the interpreter) and torch's give one loss
    curve (the chapter checks it)."""
    pytest.importorskip("torch")
    run = run_chapter("ch8_training", tmp_path)
    assert run.returncode == 0 and "PASS" in run.stdout, run.stderr[-3000:]


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("name, timed", [("ch8_training", "tokens/s"), ("ch9_attention_variants", "variant  backward")])
def test_torch_chapters_run_and_time_on_the_gpu(name, timed, tmp_path):
    """Chapter 8 trains with nvdsl's ops as with torch's; chapter 9 times its variant beside plain attention."""
    pytest.importorskip("torch")
    run = run_chapter(name, tmp_path)
    assert run.returncode == 0 and "PASS" in run.stdout and timed in run.stdout, run.stderr[-3000:]


def test_ch9_checks_an_attention_variant_in_the_interpreter(tmp_path):
    """A soft cap and a document mask written in tile math: forward and backward against NumPy (the chapter checks
    them and prints PASS)."""
    run = run_chapter("ch9_attention_variants", tmp_path)
    assert run.returncode == 0 and "PASS" in run.stdout, run.stderr[-3000:]
    assert "dK: relative error" in run.stdout and "packed O (" in run.stdout


"""Tutorial chapters: golden MLIR on every machine; each chapter runs and checks itself, on a GPU or in the
CPU interpreter."""

import importlib
import os
import subprocess
import sys

import numpy as np
import pytest

import nvdsl.tasks as nt
from nvdsl.testing import has_gpu, requires_gpu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TUTORIALS = os.path.join(ROOT, "tutorials")
GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
# golden IR and the compile-only path; all chapters run on a GPU below. Chapter 5's traced IR (~380 KB)
# has no golden file: tests/test_gemm.py checks its PTX and SASS instead.
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
    ir = chapter_traces()[name].mlir
    path = os.path.join(GOLDEN, f"{name}.mlir")
    if request.config.getoption("--update-golden"):
        with open(path, "w") as f:
            f.write(ir)
    with open(path) as f:
        assert ir == f.read(), f"traced IR of {name} changed; rerun with --update-golden if intended"


def run_chapter(name, tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               NVDSL_DUMP_DIR=str(tmp_path))
    return subprocess.run([sys.executable, os.path.join(TUTORIALS, f"{name}.py")], env=env,
                          capture_output=True, text=True, timeout=300)


INTERPRETER_NOTICE = "nvdsl: no GPU found, so calls run in the CPU interpreter"


@pytest.mark.skipif(has_gpu(), reason="checks the interpreter, the default without a GPU")
@pytest.mark.parametrize("name", CHAPTERS + ["ch5_gemm_warp_specialized", "ch6_tasks_and_mappings"])
def test_chapter_without_gpu_runs_in_the_interpreter_and_passes(name, tmp_path):
    result = run_chapter(name, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("PASS")
    assert result.stderr.count(INTERPRETER_NOTICE) == 1     # said once, on the first call


def test_ch0_prints_every_thread_id(tmp_path):
    result = run_chapter("ch0_hello", tmp_path)
    assert result.returncode == 0, result.stderr
    lines = {line for line in result.stdout.splitlines() if line.startswith("hello")}
    assert lines == {f"hello from thread {t} of block {b} (4 threads per block)" for t in range(4) for b in range(2)}


@requires_gpu
@pytest.mark.parametrize("name", ["ch1_saxpy", "ch2_tma", "ch3_gemm_single_tile", "ch4_gemm_multistage",
                                  "ch5_gemm_warp_specialized"])
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


@requires_gpu
def test_ch6_checks_every_mapping_and_times_them(tmp_path):
    result = run_chapter("ch6_tasks_and_mappings", tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines.count("PASS") == 3
    assert sum("TFLOP/s" in line for line in lines) == 3 or "PyTorch" in result.stdout


def test_the_readme_example_runs_and_computes(tmp_path):
    """The README's first code block, as a user would paste it, then its promise checked."""
    text = open(os.path.join(ROOT, "README.md")).read()
    example = text.split("```python\n", 1)[1].split("```", 1)[0]
    script = example + "\nassert (y == 3.0).all(), y[:8]\nprint('README OK')\n"
    result = subprocess.run([sys.executable, "-c", script], cwd=str(tmp_path), capture_output=True, text=True,
                            timeout=300, env=dict(os.environ, PYTHONPATH=ROOT))
    assert result.returncode == 0 and "README OK" in result.stdout, result.stderr

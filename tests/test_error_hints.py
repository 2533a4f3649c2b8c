"""Every refusal a library call, the torch ops, the task layer's entry, the JIT's call or the options make carries a
hint (the ground rule: a message naming the argument, a stable code and a hint that works). Read from the source:
each error these modules construct passes ``hint=``."""

import ast
import pathlib

import pytest

import nvdsl

PACKAGE = pathlib.Path(nvdsl.__file__).parent
MODULES = ["kernels/attention.py", "kernels/attention_varlen.py", "kernels/gemm.py", "kernels/checks.py",
           "kernels/rowwise.py", "torch/library.py", "options.py", "tasks/build.py", "jit.py",
           "frontend/memory.py", "frontend/control.py", "frontend/launch.py", "frontend/math.py",
           "frontend/values.py", "frontend/context.py", "frontend/tracer.py", "frontend/ranges.py",
           "frontend/trace.py", "frontend/keying.py",
           "hopper/tma.py", "hopper/aref.py", "hopper/warpgroup.py", "hopper/wgmma.py", "hopper/mbarrier.py",
           "hopper/timeline.py", "hopper/tile.py",
           "tasks/program.py", "tasks/emit.py", "tasks/mapping.py", "tasks/passes.py", "tasks/schedule.py",
           "tasks/autotune.py", "compiler/driver.py", "compiler/toolchain.py"]
ERRORS = {"ArgumentError", "UserError", "TaskError", "TraceError", "MappingError", "LaunchConfigError",
          "CaptureError"}


@pytest.mark.parametrize("module", MODULES)
def test_every_refusal_carries_a_hint(module):
    source = (PACKAGE / module).read_text()
    missing = [node.lineno for node in ast.walk(ast.parse(source))
               if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ERRORS
               and not any(k.arg in ("hint", None) for k in node.keywords)]
    assert not missing, f"{module}: errors without hint= at lines {missing}"

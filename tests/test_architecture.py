"""The layer rules are checked by a tool, not by memory: import-linter's contracts in pyproject.toml pass on the
package, and an import that breaks them fails (shown on a copy of the package with an upward import added)."""

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytest.importorskip("importlinter", reason="import-linter is in the test extra")


def lint_imports(tree: str) -> subprocess.CompletedProcess:
    """import-linter's contracts (``pyproject.toml`` in ``tree``) checked on the ``nvdsl`` package in ``tree`` (first on
    the path; the rest of the path, where MLIR or import-linter may come from, is kept)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([tree] + os.environ.get("PYTHONPATH", "").split(os.pathsep)))
    return subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                           "sys.exit(lint_imports_command())", "--no-cache"],
                          cwd=tree, env=env, capture_output=True, text=True, timeout=300)


def test_the_package_keeps_its_layer_contracts():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("module, added, broken", [
    ("target.py", "def _upward():\n    from .jit import TracedFunction\n", "nvdsl.target is not allowed to import nvdsl.jit"),
    ("frontend/memory.py", "from ..runtime import device\n", "nvdsl.frontend is not allowed to import nvdsl.runtime"),
    ("compiler/cache.py", "from .. import __version__ as _v\n", "Nothing inside nvdsl imports the package root"),
    ("interpreter/values.py", "from . import machine\n", "No cycles are allowed in nvdsl.interpreter"),
])
def test_an_import_against_the_layers_fails_the_check(tmp_path, module, added, broken):
    shutil.copytree(os.path.join(ROOT, "nvdsl"), tmp_path / "nvdsl", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(os.path.join(ROOT, "pyproject.toml"), tmp_path / "pyproject.toml")
    with open(tmp_path / "nvdsl" / module, "a") as f:
        f.write("\n" + added)
    result = lint_imports(str(tmp_path))
    assert result.returncode != 0 and broken in result.stdout, result.stdout + result.stderr

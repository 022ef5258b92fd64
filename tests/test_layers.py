"""The stages import one way: the import-linter contract in pyproject.toml holds for the
package, and breaks, naming the import, when a lower stage imports a higher one."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter is not installed (extra 'dev')")


def lint_imports(project: Path) -> subprocess.CompletedProcess:
    """`lint-imports` run in `project`, which it reads the package and the contract from."""
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=project, capture_output=True, text=True,
                          timeout=300)


def copy_of_package(target: Path) -> Path:
    """The package's Python files and pyproject.toml, in `target` (the checkout is left alone)."""
    shutil.copytree(PROJECT_ROOT / "evaluators", target / "evaluators",
                    ignore=shutil.ignore_patterns("__pycache__", "*.npz", "*.json", "*.yaml"))
    shutil.copy(PROJECT_ROOT / "pyproject.toml", target / "pyproject.toml")
    return target


def test_the_package_keeps_its_layers():
    result = lint_imports(PROJECT_ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 kept, 0 broken" in result.stdout


@pytest.mark.parametrize(("module", "backward"), [
    # The rubric's loader reaching up into the command line, at the top of a module...
    ("rubric/backward_probe.py", "from evaluators.cli.common import fail\n"),
    # ...and the store reaching up into the release rules inside a function, as lazy imports do.
    ("store/backward_probe.py", "def late():\n    from evaluators.release.rules import release_report\n"),
])
def test_a_backward_import_breaks_the_contract(tmp_path, module, backward):
    project = copy_of_package(tmp_path)
    clean = lint_imports(project)
    assert clean.returncode == 0, clean.stdout + clean.stderr  # the copy alone keeps the contract
    (project / "evaluators" / module).write_text(backward)
    broken = lint_imports(project)
    assert broken.returncode != 0
    assert "1 broken" in broken.stdout
    probe = "evaluators." + module.removesuffix(".py").replace("/", ".")
    assert probe in broken.stdout  # the report names the importing module

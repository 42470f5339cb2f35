"""The rooms of docs/architecture.md hold: the import-linter contracts pass, and they catch a forbidden import."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("reviewapp", "screening", "literature")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(tree: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=tree, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.fixture
def tree_copy(tmp_path):
    """The three packages and the contracts, copied, so a test can add an import the rooms forbid."""
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    return tmp_path


def add_import(tree: Path, module: str, statement: str) -> None:
    path = tree / (module.replace(".", "/") + ".py")
    path.write_text(path.read_text() + f"\n{statement}  # noqa\n")


def test_the_rooms_hold():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "statement", "contract"),
    [
        ("reviewapp.core.errors", "from screening.models import Run", "The shared core imports no room"),
        ("screening.services.progress", "from reviewapp.benchmarks import models", "Rooms depend one way"),
        ("screening.llm.providers.transport", "from screening.models import Run", "Rooms depend one way"),
        ("reviewapp.models", "from reviewapp.services import jobs", "Review room"),
    ],
)
def test_a_forbidden_import_breaks_a_contract(tree_copy, module, statement, contract):
    add_import(tree_copy, module, statement)
    result = lint_imports(tree_copy)
    assert result.returncode == 1
    broken_section = result.stdout.split("Broken contracts", 1)[1]
    assert contract in broken_section, result.stdout

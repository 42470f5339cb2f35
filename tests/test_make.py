"""The two commands of the README and their neighbours do what it says (checked with `make -n`, which runs nothing)."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def planned(*arguments: str) -> str:
    """What `make` would run, without running it."""
    return subprocess.run(
        ["make", "-n", *arguments], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    ).stdout


def test_make_bench_runs_every_benchmark_with_the_development_requirements():
    scripts = [path for path in (ROOT / "benchmarks").glob("*.py") if 'if __name__ == "__main__"' in path.read_text()]
    assert {path.name for path in scripts} >= {"load_test.py", "panel_speed.py", "review_speed.py"}
    plan = planned("-W", "requirements-dev.txt", "bench")
    assert "-r requirements-dev.txt" in plan  # the load test needs locust
    assert [path.name for path in scripts if f"benchmarks/{path.name}" not in plan] == []

"""The two commands of the README and their neighbours do what it says (checked with `make -n`, which runs nothing)."""

import os
import shutil
import signal
import subprocess
import time
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


def test_make_dev_serves_with_the_development_server_that_reloads():
    assert "./bin/run-local --dev" in planned("dev")
    script = (ROOT / "bin" / "run-local").read_text()
    runserver = [line for line in script.splitlines() if "manage.py runserver" in line]
    assert runserver and all("--noreload" not in line for line in runserver)


def test_make_logs_follows_every_server_log_of_make_run(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    for server in ("web", "worker", "beat", "simulator"):
        (logs / f"{server}.log").write_text(f"a line of the {server}\n")
    environment = {**os.environ, "OH_VAR_DIR": str(tmp_path), "OH_ENV_FILE": str(tmp_path / "no.env")}
    # -o: the installed packages count as up to date (the test installs nothing).
    follower = subprocess.Popen(
        ["make", "-s", "-o", ".venv/.installed", "logs"],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        seen = ""
        deadline = time.monotonic() + 120
        while not all(f"the {server}" in seen for server in ("web", "worker", "beat", "simulator")):
            assert follower.poll() is None and time.monotonic() < deadline, seen
            seen += follower.stdout.readline()
        with open(logs / "web.log", "a") as web:
            web.write("written while it follows\n")
        while "written while it follows" not in seen:
            assert follower.poll() is None and time.monotonic() < deadline, seen
            seen += follower.stdout.readline()
    finally:
        os.killpg(follower.pid, signal.SIGKILL)
        follower.wait(timeout=60)


def test_make_logs_says_where_logs_will_be_before_the_first_run(tmp_path):
    environment = {**os.environ, "OH_VAR_DIR": str(tmp_path), "OH_ENV_FILE": str(tmp_path / "no.env")}
    result = subprocess.run(
        ["make", "-s", "-o", ".venv/.installed", "logs"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert f"No logs in {tmp_path}/logs yet" in result.stdout + result.stderr

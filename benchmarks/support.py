"""What the speed benchmarks share: the project on the import path, scratch PostgreSQL databases, child processes,
floors measured in the same run and the table of results.

The scripts run as `.venv/bin/python benchmarks/<name>.py`: Python puts this folder first on the import path, so
`import support` finds this module, which puts the project folder there too (for `reviewapp`, `screening`, …).

Every figure is reported beside its floor where it has one: the least the same work can cost on this machine,
measured in the same run (a COPY of the same rows, a bare parse of the same file, a trivial view through the same
stack). The ratio is what the goals bound, so a busy neighbour slows figure and floor alike and leaves the ratio.
With OH_BENCH_ROWS naming a file, each script also appends its rows there as JSON lines; `make bench` prints them
as one table at the end (`summary.py`).
"""

import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

EXAMPLE_SERVER = "postgres://postgres@127.0.0.1:5432/postgres"
# The virtual environment's programs (celery, gunicorn) beside the Python running the script.
BIN = Path(sys.executable).parent


# ------------------------------------------------------------------------------------------------- databases


def database_url(url: str, name: str) -> str:
    """The URL of database `name` on the server of `url`."""
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def maintenance(url: str, statement: str) -> None:
    """Run one statement (CREATE or DROP DATABASE) in the server's `postgres` database."""
    import psycopg

    with psycopg.connect(database_url(url, "postgres"), autocommit=True) as connection:
        connection.execute(statement)


def postgres_server() -> str | None:
    """DATABASE_URL when it names a PostgreSQL server; else None, after saying on stderr how to set it."""
    url = os.environ.get("DATABASE_URL", "")
    if urlsplit(url).scheme in ("postgres", "postgresql"):
        return url
    print(f"Set DATABASE_URL to a PostgreSQL server, e.g. {EXAMPLE_SERVER}", file=sys.stderr)
    return None


@contextmanager
def scratch_database(url: str, prefix: str, *, keep: bool = False) -> Iterator[str]:
    """A new, empty database on the server of `url`, named `prefix` with a random suffix so that two runs on one
    server never share one; its URL.

    At the end Django's connections (if Django was set up) are closed and, unless `keep`, that database is dropped. No
    other database is touched."""
    name = f"{prefix}_{secrets.token_hex(4)}"
    maintenance(url, f'CREATE DATABASE "{name}"')
    print(f"Scratch database {name}", flush=True)
    try:
        yield database_url(url, name)
    finally:
        if "django.db" in sys.modules:
            from django.db import connections

            connections.close_all()
        if keep:
            print(f"Kept the scratch database {name}", flush=True)
        else:
            maintenance(url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def scratch_arguments(description: str, scratch: str) -> tuple[str, bool] | None:
    """The command line of a benchmark with a scratch database: (the server's URL, whether to keep the database), or
    None (after saying why) when DATABASE_URL names no PostgreSQL server."""
    import argparse

    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", action="store_true", help=f"leave the scratch database ({scratch}_…) for inspection")
    keep = parser.parse_args().keep
    url = postgres_server()
    return None if url is None else (url, keep)


def setup_django(url: str | None = None, *, settings: str = "reviewapp.settings") -> None:
    """Set Django up in this process, on the database of `url` (default: the environment's DATABASE_URL), with the
    settings module `settings` (`floor_settings` adds the floors' views to the project's URLs)."""
    if url is not None:
        os.environ["DATABASE_URL"] = url
    os.environ["DJANGO_SETTINGS_MODULE"] = settings
    import django

    django.setup()


def floor_environment(env: dict) -> dict:
    """The environment of a child server (gunicorn) that also serves the floors: `floor_settings`, found on the
    import path beside these scripts."""
    path = os.pathsep.join(filter(None, [str(Path(__file__).parent), env.get("PYTHONPATH", "")]))
    return {**env, "DJANGO_SETTINGS_MODULE": "floor_settings", "PYTHONPATH": path}


# -------------------------------------------------------------------------------------------- child processes


def run_child(command: list[str], env: dict, *, timeout: float | None = None) -> str:
    """Run a child process in the project folder; its output. RuntimeError with the end of its stderr if it fails."""
    completed = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    if completed.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{completed.stderr[-3000:]}")
    return completed.stdout


def child_figures(command: list[str], env: dict, *, timeout: float | None = None) -> dict:
    """The figures a child process prints as JSON on the last line of its output."""
    return json.loads(run_child(command, env, timeout=timeout).strip().splitlines()[-1])


def run_measured(command: list[str], env: dict) -> tuple[float, float, str]:
    """Wall seconds, peak resident megabytes (the child's own rusage from wait4; Linux counts in kB) and stdout."""
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        if process.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{err.read()[-3000:]}")
        return seconds, usage.ru_maxrss / 1024, out.read()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port} after {timeout} s")


class Processes:
    """The processes a benchmark started (simulator, workers, gunicorn), stopped by their own pid at the end."""

    PROVIDER_KEYS = ("OPENAI_API_KEY", "XAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY")

    def __init__(self, env: dict):
        self.env = env
        self.running: dict[str, subprocess.Popen] = {}

    def start(self, name: str, command: list[str]) -> None:
        self.running[name] = subprocess.Popen(
            command, cwd=ROOT, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )

    def stop(self, name: str) -> None:
        process = self.running.pop(name)
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def stop_all(self) -> None:
        for name in list(self.running):
            self.stop(name)

    @classmethod
    def simulated(cls, scratch_url: str, simulator_port: int) -> "Processes":
        """Processes on the scratch database with every model simulated: no provider key, the simulated server's port,
        persistent database connections as production runs them, and the broker OH_BENCH_REDIS_URL. This process
        takes the same environment, so Django set up afterwards uses it too."""
        env = {key: value for key, value in os.environ.items() if key not in cls.PROVIDER_KEYS}
        env.update(
            DATABASE_URL=scratch_url,
            DATABASE_CONN_MAX_AGE="600",
            CELERY_BROKER_URL=os.environ.get("OH_BENCH_REDIS_URL", "redis://127.0.0.1:6379/13"),
            SIMULATOR_PORT=str(simulator_port),
            DJANGO_SETTINGS_MODULE="reviewapp.settings",
            LOG_LEVEL="WARNING",
            # Every request comes from this machine's one address: the per-address poll throttle would refuse most.
            OH_ANONYMOUS_POLLS_PER_MINUTE="100000000",
        )
        os.environ.clear()
        os.environ.update(env)
        return cls(env)

    def start_simulator(self, port: int, latency: float, **settings) -> None:
        """The simulated model server (`manage.py run_simulator`), every call taking `latency` seconds; `settings`
        are further SimulatorConfig fields."""
        config = json.dumps({"latency_seconds": latency, "seed": 1, **settings})
        self.start(
            "simulator", [str(BIN / "python"), "manage.py", "run_simulator", "--port", str(port), "--config", config]
        )
        wait_for_port(port)

    def start_gunicorn(self, port: int, workers: int, *options: str) -> None:
        """The project's WSGI application under gunicorn (sync workers) on 127.0.0.1:port, once it listens."""
        self.start(
            "gunicorn",
            [str(BIN / "gunicorn"), "reviewapp.wsgi:application", "--workers", str(workers),
             "--bind", f"127.0.0.1:{port}", "--log-level", "warning", *options],
        )  # fmt: skip
        wait_for_port(port)

    def start_worker(self, concurrency: int, name: str = "worker") -> None:
        """A Celery worker with a threads pool (model calls mostly wait on the network)."""
        command = [str(BIN / "celery"), "-A", "reviewapp", "worker", "--pool", "threads", "--concurrency"]
        self.start(
            name,
            [*command, str(concurrency), "--hostname", f"{name}@%h", "--loglevel", "WARNING", "--without-gossip",
             "--without-mingle"],
        )  # fmt: skip


def run_with_simulated_models(url: str, database: str, measure, *, keep: bool = False) -> "Results":
    """measure(processes, record, simulator_port) on a new scratch database with every model simulated
    (Processes.simulated); whatever it started is stopped and the database dropped (unless `keep`) at the end."""
    simulator_port = free_port()
    results = Results()
    with scratch_database(url, database, keep=keep) as scratch_url:
        processes = Processes.simulated(scratch_url, simulator_port)
        try:
            setup_django()
            measure(processes, results.record, simulator_port)
        finally:
            processes.stop_all()
    return results


def measure_page(client, url: str, requests: int) -> tuple[int, float]:
    """Queries of one request (after a warm-up) and the median time of `requests` requests, in ms."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    # Counted now: the next request clears the connection's query log.
    query_count = len(queries)
    timings = []
    for _ in range(requests):
        started = time.perf_counter()
        client.get(url)
        timings.append((time.perf_counter() - started) * 1000)
    return query_count, statistics.median(timings)


# ------------------------------------------------------------------------------------------------ floors


def median_and_spread(values: list[float]) -> tuple[float, float, float]:
    """The median, least and greatest of the values."""
    return statistics.median(values), min(values), max(values)


def load_average() -> str:
    """The machine's load averages over 1, 5 and 15 minutes, to print beside figures measured on a shared machine."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def serving_cpu_seconds() -> float:
    """A clock of the CPU time spent serving requests in this thread, which the other processes of a busy machine do
    not lengthen as they do wall time: this thread's own CPU (time.thread_time; with SQLite the database's work is in
    it) plus, when Django's connection is to a PostgreSQL server on this machine, the CPU of that connection's backend
    process (/proc/<pid>/schedstat, nanoseconds on the CPU). Differences of it are meaningful while the connection
    stays open, as it does across the requests of Django's test client."""
    from django.db import connection

    seconds = time.thread_time()
    if connection.vendor == "postgresql" and connection.connection is not None:
        if connection.settings_dict["HOST"] in ("127.0.0.1", "localhost", "::1", ""):
            pid = connection.connection.info.backend_pid
            seconds += int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9
    return seconds


def interleaved(figure, floor, repeats: int, clock=time.perf_counter) -> tuple[list[float], list[float]]:
    """Seconds of figure() and of floor() (each a callable), taken in turn `repeats` times, so that whatever else
    the machine does falls on both alike. `clock` is wall time by default; `serving_cpu_seconds` counts the CPU spent
    serving requests in this thread (Django's test client), robust on a busy machine."""
    figure_seconds, floor_seconds = [], []
    for _ in range(repeats):
        for call, seconds in ((floor, floor_seconds), (figure, figure_seconds)):
            started = clock()
            call()
            seconds.append(clock() - started)
    return figure_seconds, floor_seconds


# ------------------------------------------------------------------------------------------------- results


class Row(tuple):
    """One figure: (figure, measured, floor, ratio, goal, passed, note). floor and ratio are "–" without a floor;
    passed is None for a figure shown for reference, without a goal."""

    def __new__(cls, figure, measured, floor, ratio, goal, passed, note=""):
        return super().__new__(cls, (figure, measured, floor, ratio, goal, passed, note))


def _shown(value, unit: str) -> str:
    if isinstance(value, float):
        text = f"{value:.3f}" if abs(value) < 1 else f"{value:.2f}" if abs(value) < 100 else f"{value:,.0f}"
    else:
        text = f"{value}"
    return f"{text} {unit}".strip()


class Results(list):
    """The figures measured, as Rows."""

    def record(self, figure: str, value, unit: str, target: str, passed: bool, note: str = "") -> None:
        """A figure without a floor, against an absolute target."""
        self.append(Row(figure, _shown(value, unit), "–", "–", target, passed, note))
        print(f"  {figure}: {_shown(value, unit)} {note}", flush=True)

    def ratio(
        self,
        figure: str,
        values: list[float],
        floors: list[float],
        unit: str,
        goal: float | None,
        *,
        floor_name: str,
        note: str = "",
        scale: float = 1.0,
        at_least: bool = False,
    ) -> float:
        """A figure as the median of its ratios to the floor measured beside it (values[i] / floors[i]), against
        a goal on that ratio (at most `goal`, or with at_least at least `goal`: a rate against the best one; None: a
        figure for reference, which neither passes nor fails); the note gives the ratios' spread. scale converts the
        values to `unit`. Returns the median ratio."""
        ratios = [value / floor for value, floor in zip(values, floors, strict=True)]
        ratio, low, high = median_and_spread(ratios)
        spread = f"ratio {low:.2f}–{high:.2f} over {len(ratios)}" if len(ratios) > 1 else "one measurement"
        note = f"({spread}; floor: {floor_name}){' ' + note if note else ''}"
        measured = _shown(statistics.median(values) * scale, unit)
        floor = _shown(statistics.median(floors) * scale, unit)
        if goal is None:
            passed, goal_text = None, "–"
        else:
            passed = ratio >= goal if at_least else ratio <= goal
            goal_text = f"≥ {goal:g}×" if at_least else f"≤ {goal:g}×"
        self.append(Row(figure, measured, floor, f"{ratio:.2f}×", goal_text, passed, note))
        print(f"  {figure}: {measured}, floor {floor}, ratio {ratio:.2f}× {note}", flush=True)
        return ratio

    def report(self, script: str) -> int:
        """Print the table, append the rows to OH_BENCH_ROWS when set, and return the exit status (1 when a goal
        or target is missed)."""
        print_table(self)
        rows_file = os.environ.get("OH_BENCH_ROWS")
        if rows_file:
            Path(rows_file).parent.mkdir(parents=True, exist_ok=True)
            with open(rows_file, "a", encoding="utf-8") as out:
                for row in self:
                    out.write(json.dumps({"script": Path(script).name, "row": list(row)}, ensure_ascii=False) + "\n")
        return 0 if all_passed(self) else 1


COLUMNS = ("figure", "measured", "floor", "ratio", "goal", "result")


def table_lines(rows) -> list[str]:
    """The rows (Rows, or lists of their values) as lines of a table of COLUMNS."""
    cells = [COLUMNS] + [
        (figure, measured, floor, ratio, goal, "–" if passed is None else "PASS" if passed else "FAIL")
        for figure, measured, floor, ratio, goal, passed, *_ in rows
    ]
    widths = [max(len(row[column]) for row in cells) for column in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return lines


def print_table(results) -> None:
    print()
    print("\n".join(table_lines(results)))


def all_passed(results) -> bool:
    return all(row[5] is not False for row in results)

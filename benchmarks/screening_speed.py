"""Speed of Open Hypothesis runs: orchestration as a ratio to the run's own critical path, on PostgreSQL + Redis and on
the embedded default that `make run` uses (SQLite and the file-system broker), and GET of a run as a ratio to a
trivial DRF view.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/screening_speed.py
    .venv/bin/python benchmarks/screening_speed.py --modes embedded        # no server needed

PostgreSQL + Redis: a scratch database on the server named by DATABASE_URL, the broker OH_BENCH_REDIS_URL (default
redis://127.0.0.1:6379/13). Embedded: a SQLite file and a broker folder in a temporary folder, in a child process.
Each mode starts the simulated model server and a Celery worker (threads pool), each as its own process, loads the
demo corpus (so that the literature step finds references and asks its judge, and the run's critical path is
complete), and measures:

- a full run (4 generators × 10 hypotheses, stage 1, stage 2, the literature step) started through the API, from the
  POST to the run's completion, with the simulated models answering at once (goal on PostgreSQL ≤ 0.5 s);
- the same with every simulated call taking 2 s, as a ratio to the run's critical path computed from its own call
  records (goal ≤ 1.10): for each step, the slowest model's share of it (its calls for one work item, asked twice
  or retried, one after another; its calls for different items at most its concurrency limit at a time: 7 checks of
  2 s on 4 slots take 4 s), summed over the steps;
- PostgreSQL only: a benchmark set of the seed-001 design, 50 tasks × 4 generators × 5 hypotheses (the simulated
  generators answer with five), from `benchmark_run` to the end of its 50 runs: 1,000 hypotheses, 800 forecast
  requests of five (every forecaster on every hypothesis) and the literature step, at zero latency (target ≤ 60 s);
- PostgreSQL only: GET of a completed run through gunicorn, 20 clients requesting at once, as a ratio to a trivial
  DRF view served by the same gunicorn, the two measured in turn (goal ≤ 2).

Everything it started is stopped and the scratch database dropped at the end. Exit status 1 when a goal is missed.
"""

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict

from support import (
    Processes,
    Results,
    child_figures,
    floor_environment,
    free_port,
    postgres_server,
    scratch_database,
    setup_django,
)

SCRATCH_DATABASE = "oh_bench_screening"
SET_TASKS, SET_GENERATORS, SET_HYPOTHESES = 50, 4, 5
SET_TARGET_SECONDS = 60
RUNS_PER_FIGURE = 3
WORKER_CONCURRENCY = 8
GUNICORN_WORKERS = 4
CLIENTS = 20
REQUESTS_PER_CLIENT = 100
LOAD_ROUNDS = 3
LATENCY_SECONDS = 2.0
QUESTION = "How does remodelling of the bone-marrow niche affect the fitness of mutant clones in aged mice?"
ORCHESTRATION_GOAL = 1.10
ZERO_LATENCY_GOAL_SECONDS = 0.5
GET_GOAL = 2.0
# The step of each purpose of a run's model calls.
STEP_OF_PURPOSE = {"generate": "generate", "novelty": "novelty", "translate": "translate"}


def step_of(purpose: str) -> str:
    return STEP_OF_PURPOSE.get(purpose) or purpose.split("_")[0]  # stage1, stage1_detailed, stage2_single, …


def critical_path(run) -> tuple[float, dict[str, float]]:
    """Seconds of the run's critical path from its recorded calls, and each step's share (see the module's docs)."""
    from screening.llm.models import ModelCall

    calls = ModelCall.objects.filter(run=run).select_related("endpoint")
    chains: dict[tuple, float] = defaultdict(float)  # (step, endpoint, request) → seconds one after another
    limits = {}
    for call in calls:
        seconds = (call.latency_ms or 0) / 1000
        chains[(step_of(call.purpose), call.endpoint_id, call.request_sha256)] += seconds
        limits[call.endpoint_id] = call.endpoint.concurrency_limit
    by_model: dict[tuple, list[float]] = defaultdict(list)
    for (step, endpoint, _), seconds in chains.items():
        by_model[(step, endpoint)].append(seconds)
    steps: dict[str, float] = defaultdict(float)
    for (step, endpoint), seconds in by_model.items():
        # Whichever way the chains share the model's slots: no less than the longest chain, than the whole work
        # spread over every slot, and (more chains than slots) than the two shortest of the longest limit + 1
        # chains, two of which must share a slot.
        limit, longest = limits[endpoint], sorted(seconds, reverse=True)
        share = max(longest[0], sum(seconds) / limit)
        if len(longest) > limit:
            share = max(share, longest[limit - 1] + longest[limit])
        steps[step] = max(steps[step], share)
    return sum(steps.values()), dict(steps)


def run_once(address: str) -> tuple[float, object]:
    """Seconds from the API's POST to the run's completion, and the run."""
    from django.test import Client

    from screening.models import Run

    started = time.perf_counter()
    response = Client().post(
        "/api/v1/open-hypothesis/runs", {"question": QUESTION}, content_type="application/json", REMOTE_ADDR=address
    )
    assert response.status_code == 202, response.content
    public_id = response.json()["id"]
    deadline = started + 300
    while time.perf_counter() < deadline:
        status = Run.objects.filter(public_id=public_id).values_list("status", flat=True).first()
        if status not in Run.ACTIVE_STATUSES:
            seconds = time.perf_counter() - started
            run = Run.objects.get(public_id=public_id)
            assert run.status == Run.Status.COMPLETED, (run.status, run.error)
            assert run.hypotheses.count() == 40, run.hypotheses.count()
            return seconds, run
        time.sleep(0.005)
    raise RuntimeError(f"run {public_id} did not finish within 300 s")


def prepare() -> None:
    from django.core.management import call_command

    from literature.demo import demo_references_load
    from screening.management.commands.setup_roster import roster_setup_default

    print("Migrating the database, the default roster and the demo corpus…", flush=True)
    call_command("migrate", verbosity=0)
    roster_setup_default()
    demo_references_load()


def measure_runs(processes: Processes, simulator_port: int, runs: int) -> dict:
    """The runs of one mode: zero-latency seconds, and 2-s runs with their critical paths."""
    from screening.llm.models import ModelCall

    figures: dict = {"zero": [], "runs": [], "critical": [], "steps": [], "novelty_calls": []}
    address = iter(range(1, 250))
    for latency in (0.0, LATENCY_SECONDS):
        processes.start_simulator(simulator_port, latency)
        print(f"Runs with every simulated call taking {latency:g} s…", flush=True)
        run_once(f"192.0.2.{next(address)}")  # warms the worker up; not counted
        for _ in range(runs):
            seconds, run = run_once(f"192.0.2.{next(address)}")
            if latency == 0:
                figures["zero"].append(seconds)
                continue
            path, steps = critical_path(run)
            novelty = ModelCall.objects.filter(run=run, purpose="novelty").count()
            assert novelty > 0, "the literature step asked no model: the corpus gave no candidate"
            figures["runs"].append(seconds)
            figures["critical"].append(path)
            figures["steps"].append(steps)
            figures["novelty_calls"].append(novelty)
            print(f"  {seconds:.2f} s; critical path {path:.2f} s {steps}", flush=True)
        processes.stop("simulator")
    return figures


def seed_001_set_once() -> tuple[float, str]:
    """Seconds from benchmark_run to the end of every run of a seed-001 set of SET_TASKS tasks, and a check of what it
    stored."""
    from reviewapp.benchmarks.services.imports import benchmark_import_file
    from reviewapp.benchmarks.services.sets import benchmark_create, benchmark_run
    from screening.llm.models import ModelCall
    from screening.models import Forecast, Hypothesis, Run

    benchmark = benchmark_create(name=f"Speed set {time.time_ns()}", design="seed-001", seed=20261026)
    tasks = [
        {"key": f"S{n}", "question": f"Does factor S{n} change lifespan in aged mice?", "reference_statement": "x"}
        for n in range(SET_TASKS)
    ]
    benchmark_import_file(
        benchmark=benchmark, filename="tasks.json", content=json.dumps({"tasks": tasks}).encode(), user=None
    )
    started = time.perf_counter()
    runs = benchmark_run(benchmark=benchmark)
    ids = [run.pk for run in runs]
    deadline = started + 20 * SET_TARGET_SECONDS
    while Run.objects.filter(pk__in=ids, status__in=Run.ACTIVE_STATUSES).exists():
        if time.perf_counter() > deadline:
            raise RuntimeError(f"the set's runs did not finish within {20 * SET_TARGET_SECONDS} s")
        time.sleep(0.05)
    seconds = time.perf_counter() - started
    failed = list(Run.objects.filter(pk__in=ids).exclude(status=Run.Status.COMPLETED).values_list("status", "error"))
    assert not failed, failed
    hypotheses = Hypothesis.objects.filter(run__in=ids).count()
    expected = SET_TASKS * SET_GENERATORS * SET_HYPOTHESES
    assert hypotheses == expected, hypotheses
    forecasts = Forecast.objects.filter(hypothesis__run__in=ids, round=1).count()
    assert forecasts == expected * 4, forecasts  # every forecaster on every hypothesis
    requests = ModelCall.objects.filter(run__in=ids, purpose__in=["stage1", "stage2"], protocol_attempt=1).count()
    return seconds, f"{hypotheses} hypotheses, {forecasts} forecasts from {requests} requests"


async def _client(port: int, path: str, timings: list[float]) -> None:
    """One client asking again as soon as it has its answer. Plain HTTP/1.1 on asyncio streams: a heavier client
    library would spend more of the machine's two cores than the server does. A new connection, when the server
    closed the last one, is part of the request's time."""
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
    reader = writer = None
    for _ in range(REQUESTS_PER_CLIENT):
        started = time.perf_counter()
        if writer is None:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request)
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower()
        headers = dict(line.split(": ", 1) for line in head.split("\r\n")[1:] if ": " in line)
        await reader.readexactly(int(headers["content-length"]))
        timings.append((time.perf_counter() - started) * 1000)
        assert head.startswith("http/1.1 200"), head
        if headers.get("connection") == "close":
            writer.close()
            reader = writer = None
    if writer is not None:
        writer.close()


async def _load(port: int, path: str) -> list[float]:
    timings: list[float] = []
    await asyncio.gather(*(_client(port, path, timings) for _ in range(CLIENTS)))
    return timings


def measure_seed_001_set(processes: Processes, results: Results, simulator_port: int) -> None:
    processes.start_simulator(simulator_port, 0.0, hypotheses_per_reply=SET_HYPOTHESES)
    print(f"A seed-001 set of {SET_TASKS} tasks with the simulated calls answering at once…", flush=True)
    seconds, stored = seed_001_set_once()
    processes.stop("simulator")
    results.record(
        f"seed-001 set, {SET_TASKS} tasks × {SET_GENERATORS} generators × {SET_HYPOTHESES} hypotheses",
        seconds,
        "s",
        f"≤ {SET_TARGET_SECONDS} s",
        seconds <= SET_TARGET_SECONDS,
        f"({stored}; worker {WORKER_CONCURRENCY} threads)",
    )


def measure_get(processes: Processes, results: Results) -> None:
    from screening.models import Run

    port = free_port()
    processes.env = floor_environment(processes.env)
    processes.start_gunicorn(port, GUNICORN_WORKERS)
    run = Run.objects.filter(status=Run.Status.COMPLETED).order_by("-finished_at").first()
    path, floor_path = f"/api/v1/open-hypothesis/runs/{run.public_id}", "/floor/api/"
    asyncio.run(_load(port, path))  # warm-up: every gunicorn worker imports and connects
    asyncio.run(_load(port, floor_path))
    medians, floors, p95s = [], [], []
    for _ in range(LOAD_ROUNDS):
        floors.append(statistics.median(asyncio.run(_load(port, floor_path))))
        timings = asyncio.run(_load(port, path))
        medians.append(statistics.median(timings))
        p95s.append(statistics.quantiles(timings, n=20)[-1])
    processes.stop("gunicorn")
    results.ratio(
        f"GET of a completed run, {CLIENTS} clients at once, median",
        medians,
        floors,
        "ms",
        GET_GOAL,
        floor_name="a trivial DRF view, same gunicorn",
        note=f"(p95 {statistics.median(p95s):.1f} ms; gunicorn {GUNICORN_WORKERS} workers; {LOAD_ROUNDS} rounds of "
        f"{CLIENTS * REQUESTS_PER_CLIENT} requests each)",
    )


def record_runs(results: Results, mode: str, figures: dict) -> None:
    zero = statistics.median(figures["zero"])
    if mode == "PostgreSQL + Redis":
        results.record(
            f"{mode}: full run, simulated calls answering at once",
            zero,
            "s",
            f"≤ {ZERO_LATENCY_GOAL_SECONDS:g} s",
            zero <= ZERO_LATENCY_GOAL_SECONDS,
            f"(median of {len(figures['zero'])}; all: {', '.join(f'{s:.2f}' for s in figures['zero'])})",
        )
    else:
        results.record(
            f"{mode}: full run, simulated calls answering at once",
            zero,
            "s",
            "(information)",
            True,
            f"(median of {len(figures['zero'])}; all: {', '.join(f'{s:.2f}' for s in figures['zero'])})",
        )
    steps = figures["steps"][0]
    results.ratio(
        f"{mode}: full run, simulated calls of {LATENCY_SECONDS:g} s",
        figures["runs"],
        figures["critical"],
        "s",
        ORCHESTRATION_GOAL,
        floor_name="the run's critical path from its call records",
        note="(steps of the first: " + ", ".join(f"{step} {seconds:.1f} s" for step, seconds in steps.items()) + "; "
        f"literature calls {figures['novelty_calls']})",
    )


def embedded_child(runs: int) -> None:
    """Run in a child process on a SQLite file and the file-system broker of its temporary folder."""
    simulator_port = int(os.environ["SIMULATOR_PORT"])
    processes = Processes(dict(os.environ))
    try:
        setup_django()
        prepare()
        processes.start_worker(WORKER_CONCURRENCY)
        figures = measure_runs(processes, simulator_port, runs)
    finally:
        processes.stop_all()
    print(json.dumps(figures))


def embedded(results: Results, runs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="oh-bench-embedded-") as folder:
        env = {key: value for key, value in os.environ.items() if key not in Processes.PROVIDER_KEYS}
        env.update(
            DATABASE_URL=f"sqlite:///{folder}/openhypothesis.sqlite3",
            CELERY_BROKER_URL="filesystem://",
            OH_VAR_DIR=folder,
            SIMULATOR_PORT=str(free_port()),
            DJANGO_SETTINGS_MODULE="reviewapp.settings",
            LOG_LEVEL="WARNING",
            OH_ANONYMOUS_POLLS_PER_MINUTE="100000000",  # every request comes from this machine's one address
        )
        print("Embedded default (SQLite and the file-system broker)…", flush=True)
        figures = child_figures([sys.executable, __file__, "--embedded-child", "--runs", str(runs)], env, timeout=3600)
    record_runs(results, "embedded default", figures)


def postgres(results: Results, url: str, runs: int, keep: bool) -> None:
    simulator_port = free_port()
    with scratch_database(url, SCRATCH_DATABASE, keep=keep) as scratch_url:
        processes = Processes.simulated(scratch_url, simulator_port)
        try:
            setup_django()
            prepare()
            processes.start_worker(WORKER_CONCURRENCY)
            record_runs(results, "PostgreSQL + Redis", measure_runs(processes, simulator_port, runs))
            measure_seed_001_set(processes, results, simulator_port)
            processes.stop("worker")
            measure_get(processes, results)
        finally:
            processes.stop_all()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modes", default="postgres,embedded", help="postgres (needs DATABASE_URL), embedded")
    parser.add_argument("--runs", type=int, default=RUNS_PER_FIGURE, help="runs per figure")
    parser.add_argument("--keep", action="store_true", help="leave the scratch database for inspection")
    parser.add_argument("--embedded-child", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.embedded_child:
        embedded_child(arguments.runs)
        return 0
    modes = arguments.modes.split(",")
    results = Results()
    if "postgres" in modes:
        url = postgres_server()
        if url is None:
            return 2
        postgres(results, url, arguments.runs, arguments.keep)
    if "embedded" in modes:
        embedded(results, arguments.runs)
    return results.report(__file__)


if __name__ == "__main__":
    sys.exit(main())

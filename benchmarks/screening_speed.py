"""Speed of Open Hypothesis runs, against the targets the product promises.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/screening_speed.py

Needs PostgreSQL and Redis. On the server named by DATABASE_URL it creates a scratch database
(oh_bench_screening_…); the broker is OH_BENCH_REDIS_URL (default redis://127.0.0.1:6379/13). It starts the simulated
model server, a Celery worker (threads pool) and, for the last figure, gunicorn, each as its own process, and
measures:

- a full run (4 generators × 10 hypotheses, stage 1, stage 2, literature step) started through the API, from the
  POST to the run's completion, with the simulated models answering at once (target ≤ 3 s) and with every simulated
  call taking 2 s (target ≤ 10 s: generate → stage 1 → stage 2 is the critical path);
- a benchmark set of the seed-001 design, 50 tasks × 4 generators × 5 hypotheses (the simulated generators answer
  with five), from `benchmark_run` to the end of its 50 runs: 1,000 hypotheses, 800 forecast requests of five (every
  forecaster on every hypothesis) and the literature step, at zero latency (target ≤ 60 s);
- GET of a completed run through gunicorn, median latency with 20 clients requesting at once (target ≤ 20 ms).

Everything it started is stopped and the scratch database dropped at the end. Exit status 1 when a target is missed.
"""

import asyncio
import statistics
import sys
import time

from support import (
    BIN,
    Processes,
    all_passed,
    free_port,
    print_table,
    run_with_simulated_models,
    scratch_arguments,
    wait_for_port,
)

SCRATCH_DATABASE = "oh_bench_screening"
SET_TASKS, SET_GENERATORS, SET_HYPOTHESES = 50, 4, 5
SET_TARGET_SECONDS = 60
RUNS_PER_FIGURE = 3
WORKER_CONCURRENCY = 8
GUNICORN_WORKERS = 4
CLIENTS = 20
REQUESTS_PER_CLIENT = 100
QUESTION = "How does remodelling of the bone-marrow niche affect the fitness of mutant clones?"


def run_once(address: str) -> float:
    """Seconds from the API's POST to the run's completion."""
    from django.test import Client

    from screening.models import Run

    started = time.perf_counter()
    response = Client().post(
        "/api/v1/open-hypothesis/runs", {"question": QUESTION}, content_type="application/json", REMOTE_ADDR=address
    )
    assert response.status_code == 202, response.content
    public_id = response.json()["id"]
    deadline = started + 120
    while time.perf_counter() < deadline:
        status = Run.objects.filter(public_id=public_id).values_list("status", flat=True).first()
        if status not in Run.ACTIVE_STATUSES:
            seconds = time.perf_counter() - started
            run = Run.objects.get(public_id=public_id)
            assert run.status == Run.Status.COMPLETED, (run.status, run.error)
            assert run.hypotheses.count() == 40, run.hypotheses.count()
            return seconds
        time.sleep(0.01)
    raise RuntimeError(f"run {public_id} did not finish within 120 s")


def seed_001_set_once() -> tuple[float, str]:
    """Seconds from benchmark_run to the end of every run of a seed-001 set of SET_TASKS tasks, and a check of what it
    stored."""
    import json

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


def measure(processes: Processes, record, simulator_port: int) -> None:
    from django.core.management import call_command

    from screening.management.commands.setup_roster import roster_setup_default
    from screening.models import Run

    print("Migrating the scratch database…", flush=True)
    call_command("migrate", verbosity=0)
    roster_setup_default()
    processes.start_worker(WORKER_CONCURRENCY)
    address = iter(range(1, 250))
    for latency, target in ((0.0, 3.0), (2.0, 10.0)):
        processes.start_simulator(simulator_port, latency)
        print(f"Runs with every simulated call taking {latency:g} s…", flush=True)
        run_once(f"192.0.2.{next(address)}")  # warms the worker up; not counted
        seconds = [run_once(f"192.0.2.{next(address)}") for _ in range(RUNS_PER_FIGURE)]
        processes.stop("simulator")
        record(
            f"full run, simulated calls of {latency:g} s",
            statistics.median(seconds),
            "s",
            f"≤ {target:g} s",
            max(seconds) <= target,
            f"(median of {RUNS_PER_FIGURE}; all: {', '.join(f'{s:.2f}' for s in seconds)})",
        )

    processes.start_simulator(simulator_port, 0.0, hypotheses_per_reply=SET_HYPOTHESES)
    print(f"A seed-001 set of {SET_TASKS} tasks with the simulated calls answering at once…", flush=True)
    seconds, stored = seed_001_set_once()
    processes.stop("simulator")
    record(
        f"seed-001 set, {SET_TASKS} tasks × {SET_GENERATORS} generators × {SET_HYPOTHESES} hypotheses",
        seconds,
        "s",
        f"≤ {SET_TARGET_SECONDS} s",
        seconds <= SET_TARGET_SECONDS,
        f"({stored}; worker {WORKER_CONCURRENCY} threads)",
    )
    processes.stop("worker")

    port = free_port()
    processes.start(
        "gunicorn",
        [str(BIN / "gunicorn"), "reviewapp.wsgi:application", "--workers", str(GUNICORN_WORKERS),
         "--bind", f"127.0.0.1:{port}", "--log-level", "warning"],
    )  # fmt: skip
    wait_for_port(port)
    run = Run.objects.filter(status=Run.Status.COMPLETED).order_by("-finished_at").first()
    path = f"/api/v1/open-hypothesis/runs/{run.public_id}"
    asyncio.run(_load(port, path))  # warm-up: every gunicorn worker imports, connects and caches
    timings = asyncio.run(_load(port, path))
    processes.stop("gunicorn")
    record(
        f"GET of a completed run, {CLIENTS} clients at once",
        statistics.median(timings),
        "ms",
        "≤ 20 ms",
        statistics.median(timings) <= 20,
        f"(median of {len(timings)}; p95 {statistics.quantiles(timings, n=20)[-1]:.1f} ms; "
        f"gunicorn {GUNICORN_WORKERS} workers)",
    )


def main() -> int:
    command_line = scratch_arguments(__doc__, SCRATCH_DATABASE)
    if command_line is None:
        return 2
    url, keep = command_line

    results = run_with_simulated_models(url, SCRATCH_DATABASE, measure, keep=keep)
    print_table(results)
    return 0 if all_passed(results) else 1


if __name__ == "__main__":
    sys.exit(main())

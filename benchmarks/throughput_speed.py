"""Throughput of Open Hypothesis runs: 50 public runs posted at once, every simulated model call taking 2 s, with one
and with two worker processes on PostgreSQL + Redis, as a share of the rate the endpoints' concurrency limits allow.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/throughput_speed.py \
        [--runs 50] [--latency 2] [--threads 24] [--workers 1,2] [--keep]

Needs PostgreSQL and Redis (OH_BENCH_REDIS_URL, default redis://127.0.0.1:6379/13). On a scratch database it sets up
the default roster on the simulated model server (every call taking --latency seconds), loads the demo corpus (so
that each run's literature step asks its judge once per selected hypothesis), and starts gunicorn and, for each
configuration, that many Celery workers (threads pool, --threads each). The public limits are raised for the
benchmark (one client posts every run). --runs runs are posted through HTTP at once, from as many threads, and the
benchmark waits until all have finished.

The bound: every endpoint can serve at most its concurrency limit of calls at a time, so the runs take at least
max over endpoints of (the seconds of all its calls, from the runs' own call records) / (its limit), and no less than
the longest run's own critical path; the best rate is the runs over that time. The measured rate is the runs over
the time from the first POST to the last run's end. Goal: ≥ 0.8 of the bound with one and with two workers.
"""

import argparse
import http.client
import json
import statistics
import sys
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

from screening_speed import QUESTION, critical_path, prepare
from support import Processes, Results, free_port, postgres_server, scratch_database, setup_django

SCRATCH_DATABASE = "oh_bench_throughput"
GOAL = 0.8
GUNICORN_WORKERS = 2
# The public limits, raised so that one client may post every run at once.
RAISED_LIMITS = {
    "OPEN_HYPOTHESIS_CLIENT_LIMIT": "100000",
    "OPEN_HYPOTHESIS_DAILY_CAP": "100000",
    "OPEN_HYPOTHESIS_QUEUE_LIMIT": "100000",
}


def post_runs(port: int, count: int) -> list[str]:
    """Post `count` runs at once, each from its own thread and connection; their public ids."""

    def post(number: int) -> str:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        body = json.dumps({"question": f"{QUESTION} (run {number})"})
        connection.request("POST", "/api/v1/open-hypothesis/runs", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        answer = response.read()
        connection.close()
        assert response.status == 202, (response.status, answer[:300])
        return json.loads(answer)["id"]

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(post, range(count)))


def wait_for_runs(public_ids: list[str], timeout: float) -> list:
    from screening.models import Run

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        active = Run.objects.filter(public_id__in=public_ids, status__in=Run.ACTIVE_STATUSES).count()
        if active == 0:
            runs = list(Run.objects.filter(public_id__in=public_ids))
            failed = [(run.public_id, run.status, run.error) for run in runs if run.status != Run.Status.COMPLETED]
            assert not failed, failed[:3]
            return runs
        time.sleep(0.2)
    raise RuntimeError(f"the runs did not finish within {timeout:.0f} s")


def bound(runs) -> tuple[float, list[str]]:
    """The least time these runs can take under the endpoints' limits (see the module's docs), and how each endpoint
    bounds it."""
    from screening.llm.models import ModelCall

    seconds: dict[int, float] = defaultdict(float)
    calls: dict[int, int] = defaultdict(int)
    endpoints = {}
    for call in ModelCall.objects.filter(run__in=runs).select_related("endpoint"):
        seconds[call.endpoint_id] += (call.latency_ms or 0) / 1000
        calls[call.endpoint_id] += 1
        endpoints[call.endpoint_id] = call.endpoint
    lines, busiest = [], 0.0
    for pk, endpoint in sorted(endpoints.items(), key=lambda item: -seconds[item[0]] / item[1].concurrency_limit):
        busy = seconds[pk] / endpoint.concurrency_limit
        busiest = max(busiest, busy)
        lines.append(
            f"{endpoint.display_name}: {calls[pk] / len(runs):.1f} calls per run, {seconds[pk]:.0f} s of calls, "
            f"limit {endpoint.concurrency_limit} → at least {busy:.0f} s, at most "
            f"{len(runs) / busy * 60:.1f} runs per minute"
        )
    longest_run = max(critical_path(run)[0] for run in runs)
    return max(busiest, longest_run), lines


def measure(processes: Processes, results: Results, workers: int, threads: int, runs: int, port: int) -> None:
    for number in range(workers):
        processes.start_worker(threads, name=f"worker{number + 1}")
    # A warm-up run: every worker connects and imports; not counted.
    wait_for_runs(post_runs(port, 1), timeout=300)
    print(f"{runs} runs at once, {workers} worker process(es) of {threads} threads…", flush=True)
    posted = time.time()
    public_ids = post_runs(port, runs)
    finished = wait_for_runs(public_ids, timeout=3600)
    # From the first POST to the last run's end, on the clock the runs' records use.
    seconds = max(run.finished_at.timestamp() for run in finished) - posted
    least, lines = bound(finished)
    for line in lines:
        print(f"  {line}", flush=True)
    durations = [(run.finished_at - run.created_at).total_seconds() for run in finished]
    results.ratio(
        f"{runs} runs at once, {workers} worker process(es): runs per minute",
        [runs / seconds * 60],
        [runs / least * 60],
        "runs/min",
        GOAL,
        floor_name="the rate the endpoints' concurrency limits allow",
        at_least=True,
        note=f"(all done in {seconds:.0f} s, at best {least:.0f} s; a run took {statistics.median(durations):.0f} s "
        f"in the median, {max(durations):.0f} s at most; {threads} threads per worker)",
    )
    for number in range(workers):
        processes.stop(f"worker{number + 1}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--latency", type=float, default=2.0, help="seconds of every simulated model call")
    parser.add_argument("--threads", type=int, default=24, help="threads of each worker process")
    parser.add_argument("--workers", default="1,2", help="the worker processes of each configuration")
    parser.add_argument("--keep", action="store_true", help="leave the scratch database for inspection")
    arguments = parser.parse_args()
    url = postgres_server()
    if url is None:
        return 2

    results = Results()
    simulator_port, port = free_port(), free_port()
    with scratch_database(url, SCRATCH_DATABASE, keep=arguments.keep) as scratch_url:
        processes = Processes.simulated(scratch_url, simulator_port)
        processes.env.update(RAISED_LIMITS)
        try:
            setup_django()
            prepare()
            processes.start_simulator(simulator_port, arguments.latency)
            processes.start_gunicorn(port, GUNICORN_WORKERS)
            for workers in (int(number) for number in arguments.workers.split(",")):
                measure(processes, results, workers, arguments.threads, arguments.runs, port)
        finally:
            processes.stop_all()
    return results.report(__file__)


if __name__ == "__main__":
    sys.exit(main())

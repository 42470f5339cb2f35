"""Speed of the AI review panel and the pairwise-critique ratings, against the targets the product promises.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/panel_speed.py

Needs PostgreSQL and Redis. On the server named by DATABASE_URL it creates a scratch database (oh_bench_panel, or
--database, and a random suffix); the broker is OH_BENCH_REDIS_URL (default redis://127.0.0.1:6379/13). It starts the
simulated model server (answering at once) and a Celery worker (threads pool), each as its own process, builds a
1,000-proposal cohort over 50 research tasks (a fifth of them revisions) and measures:

- the panel over the 1,000 proposals (3,000 role reviews and the revision judgments), from the start through the
  service to the job's end (target ≤ 60 s);
- recomputing the ratings from 50,000 stored comparisons, stored as the critique model's with the order it was
  shown each pair (target ≤ 5 s);
- the cohort's panel table and its ratings page for the 1,000 proposals: median server time of 20 requests through
  the whole Django stack (target ≤ 300 ms) and the same number of queries as for a 100-proposal cohort.

Everything it started is stopped and the scratch database dropped at the end. Exit status 1 when a target is missed.
"""

import argparse
import json
import random
import sys
import time

from support import (
    Processes,
    measure_page,
    postgres_server,
    run_with_simulated_models,
)

SCRATCH_DATABASE = "oh_bench_panel"
PROPOSALS, SMALL_PROPOSALS = 1000, 100
TASKS = 50
COMPARISONS = 50_000
PAGE_REQUESTS = 20
WORKER_CONCURRENCY = 2


def build_cohort(name: str, proposals: int, tasks: int):
    """A cohort imported as coordinators import one: every fifth proposal after the first round revises the one
    `tasks` places earlier (the same research task)."""
    from reviewapp.services.cohorts import cohort_create
    from reviewapp.services.imports import cohort_import_file

    task_rows = [
        {"key": f"{name}-T{n}", "question": f"Does pathway {n} change healthy lifespan?", "background": "Ageing. " * 40}
        for n in range(tasks)
    ]
    proposal_rows = []
    for n in range(proposals):
        revises = n >= tasks and n % 5 == 0
        proposal_rows.append(
            {
                "id": f"{name}-P{n:05d}",
                "task": f"{name}-T{n % tasks}",
                "statement": f"Raising factor {n} in muscle delays frailty in ageing mice.",
                "mechanism": "Improved mitochondrial turnover through PGC-1α signalling. " * 3,
                "prediction": "Grip strength declines more slowly from 18 months on.",
                "investigation_plan": "Compare treated and control cohorts from 12 to 30 months. " * 4,
                "data_requirements": "Longitudinal grip strength and frailty index." if n % 3 else "",
                "alternative_explanations": "Reduced food intake could explain the effect." if n % 4 else "",
                "author": f"model-{n % 7}",
                "parents": [f"{name}-P{n - tasks:05d}"] if revises else [],
            }
        )
    cohort = cohort_create(name=name, user=None)
    content = json.dumps({"tasks": task_rows, "proposals": proposal_rows}).encode()
    cohort_import_file(cohort=cohort, filename=f"{name}.json", content=content, user=None)
    return cohort


def run_panel(cohort, timeout: float = 600) -> tuple[float, object]:
    """Seconds from starting the panel (as the API does) to its job's end, and the finished job."""
    from reviewapp.models import BackgroundJob
    from reviewapp.panel.services.panel import panel_start_for_cohort

    started = time.perf_counter()
    job = panel_start_for_cohort(cohort=cohort, user=None)
    deadline = started + timeout
    while time.perf_counter() < deadline:
        state = BackgroundJob.objects.filter(pk=job.pk).values_list("state", flat=True).get()
        if state in (BackgroundJob.State.SUCCEEDED, BackgroundJob.State.FAILED):
            seconds = time.perf_counter() - started
            job.refresh_from_db()
            assert job.state == BackgroundJob.State.SUCCEEDED, job.error
            return seconds, job
        time.sleep(0.05)
    raise RuntimeError(f"the panel job did not finish within {timeout} s")


def store_comparisons(cohort, count: int) -> None:
    """`count` comparisons within the cohort's research tasks, bulk-loaded into its log in order, as the critique
    model's (with the order it was shown each pair), so the ratings page counts their position bias too."""
    from reviewapp.panel.models import Comparison, RatingLog

    rng = random.Random(3)
    by_task: dict[int, list[int]] = {}
    for pk, task in cohort.proposals.values_list("pk", "task_id"):
        by_task.setdefault(task, []).append(pk)
    strata = list(by_task.values())
    outcomes = ["a"] * 45 + ["b"] * 45 + ["tie"] * 6 + ["insufficient"] * 4
    rows = []
    for seq in range(1, count + 1):
        a, b = rng.sample(rng.choice(strata), 2)
        rows.append(
            Comparison(
                cohort=cohort,
                seq=seq,
                a_id=a,
                b_id=b,
                outcome=rng.choice(outcomes),
                source=Comparison.Source.MODEL,
                shown_first_id=rng.choice((a, b)),
                order_seed=seq,
                model_name="bench critic",
                simulated=True,
            )
        )
    Comparison.objects.bulk_create(rows, batch_size=5000)
    RatingLog.objects.update_or_create(cohort=cohort, defaults={"last_seq": count})


def analyze() -> None:
    """Fresh planner statistics, as autovacuum gives soon after a bulk load in production."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def measure(processes: Processes, record, simulator_port: int) -> None:
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.test import Client
    from django.urls import reverse

    from reviewapp.panel.models import PanelReview, ReferenceReview
    from reviewapp.panel.services.critique import ratings_recompute
    from screening.management.commands.setup_roster import roster_setup_default

    print("Migrating the scratch database…", flush=True)
    call_command("migrate", verbosity=0)
    roster_setup_default()
    processes.start_simulator(simulator_port, latency=0)
    processes.start_worker(WORKER_CONCURRENCY)

    print(f"Building cohorts of {PROPOSALS} and {SMALL_PROPOSALS} proposals…", flush=True)
    large = build_cohort("bench-panel-large", PROPOSALS, TASKS)
    small = build_cohort("bench-panel-small", SMALL_PROPOSALS, TASKS // 5)
    analyze()
    run_panel(small)  # warms the worker up; it also gives the small cohort its panel for the query counts
    print(f"The panel over {PROPOSALS} proposals…", flush=True)
    seconds, job = run_panel(large)
    reviews = PanelReview.objects.filter(subject__proposal__cohorts=large)
    failed = reviews.filter(state="failed").count()
    references = ReferenceReview.objects.filter(subject__proposal__cohorts=large).count()
    record(
        f"panel over {PROPOSALS} proposals",
        seconds,
        "s",
        "≤ 60 s",
        seconds <= 60,
        f"({job.total} requests: {reviews.count()} role reviews, {failed} failed after asking twice, "
        f"{references} fresh-context reference reviews and the revision judgments; simulated models answering at "
        "once)",
    )
    processes.stop("worker")

    print(f"Loading {COMPARISONS} comparisons…", flush=True)
    store_comparisons(large, COMPARISONS)
    store_comparisons(small, 2000)
    ratings_recompute(cohort=small)
    analyze()
    started = time.perf_counter()
    replayed = ratings_recompute(cohort=large)
    seconds = time.perf_counter() - started
    assert replayed == COMPARISONS
    record(f"recompute ratings from {COMPARISONS} comparisons", seconds, "s", "≤ 5 s", seconds <= 5)
    analyze()

    analyst = User.objects.create_user(username="bench-analyst")
    analyst.groups.add(Group.objects.get(name="analyst"))
    client = Client()
    client.force_login(analyst)
    for name, page in (("cohort panel table", "panel-cohort"), ("ratings page", "panel-ratings")):
        small_queries, _ = measure_page(client, reverse(page, args=[small.pk]), 3)
        queries, median_ms = measure_page(client, reverse(page, args=[large.pk]), PAGE_REQUESTS)
        record(
            f"{name}, {PROPOSALS} proposals",
            median_ms,
            "ms",
            "≤ 300 ms",
            median_ms <= 300,
            f"(median of {PAGE_REQUESTS})",
        )
        record(
            f"{name}: queries",
            queries,
            "",
            f"the same as for {SMALL_PROPOSALS} proposals",
            queries == small_queries,
            f"({SMALL_PROPOSALS} proposals: {small_queries})",
        )
    started = time.perf_counter()
    assert client.get(reverse("panel-cohort-figure", args=[large.pk, "ratings", "png"])).status_code == 200
    print(f"  (the ratings plot of {PROPOSALS} proposals, a separate request: {time.perf_counter() - started:.2f} s)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database", default=SCRATCH_DATABASE, help="prefix of the scratch database's name")
    parser.add_argument("--keep", action="store_true", help="leave the scratch database for inspection")
    arguments = parser.parse_args()
    url = postgres_server()
    if url is None:
        return 2
    results = run_with_simulated_models(url, arguments.database, measure, keep=arguments.keep)
    return results.report(__file__)


if __name__ == "__main__":
    sys.exit(main())

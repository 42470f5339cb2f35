"""Speed of blinded review at full scale, each figure beside its floor measured in the same run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/review_speed.py

On the PostgreSQL server named by DATABASE_URL it creates a scratch database (named from oh_bench_review), builds a
10,000-proposal cohort with 300 reviewers, and measures: assigning 3 reviewers per proposal; the queue page and the
review page (not started, and a draft that shows the whole form) for a reviewer with 100 assignments (queries, the
same as for 5 assignments; the median CPU time spent serving it, in this process and its PostgreSQL backend, against a
login-required page with a tiny template, ≤ 2.5×, and against the same page as an ordinary Django developer would
write it, `select_related` and a template looping over the rows and the protocol's questions shown, ≤ 0.6×:
benchmarks/floor_urls.py; for information each page's time above the floor against the plain view's, and the wall
times);
the CSV export of 30,000 submitted reviews against COPY of the export's own SELECT (≤ 2×); the XLSX export in a child
process against the same export without lxml (≤ 0.85×) and against openpyxl writing the rows from a list, and its peak
memory (≤ 300 MB) after a warm-up export. The scratch database is dropped at the end; no other database is touched. Exit
status 1 when a goal is missed."""

import argparse
import hashlib
import json
import os
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from support import (
    Results,
    child_figures,
    interleaved,
    load_average,
    measure_page,
    postgres_server,
    scratch_database,
    serving_cpu_seconds,
    setup_django,
)

SCRATCH_DATABASE = "oh_bench_review"
PROPOSALS = 10_000
REVIEWERS = 300
PER_PROPOSAL = 3
REVIEWER_LOAD = PROPOSALS * PER_PROPOSAL // REVIEWERS
TASKS = 200
PAGE_BLOCKS = 5
PAGE_REQUESTS = 10
SMALL_PROPOSALS = 5
CSV_REPEATS = 3
# Goals, as ratios to the floor measured beside each figure.
PAGE_GOAL = 2.5
PLAIN_PAGE_GOAL = 0.6
CSV_GOAL = 2.0
XLSX_GOAL = 0.85
XLSX_LIST_GOAL = 1.5


# ---------------------------------------------------------------------------------------------- building data


def build_cohort(*, name: str, proposals: int, tasks: int):
    from reviewapp.models import Cohort, Proposal, ResearchTask

    task_rows = ResearchTask.objects.bulk_create(
        ResearchTask(
            key=f"{name}-T{number}",
            question=f"Does pathway {number} change healthy lifespan?",
            content_sha256=hashlib.sha256(f"{name}-T{number}".encode()).hexdigest(),
        )
        for number in range(tasks)
    )
    proposal_rows = Proposal.objects.bulk_create(
        (
            Proposal(
                external_id=f"{name}-H{number:05d}",
                task=task_rows[number % tasks],
                statement=f"Raising factor {number} in muscle delays frailty in ageing mice.",
                mechanism="Improved mitochondrial turnover through PGC-1α signalling. " * 4,
                prediction="Grip strength declines more slowly from 18 months on.",
                investigation_plan="Compare treated and control cohorts from 12 to 30 months. " * 6,
                author=f"model-{number % 7}",
                author_company=f"company-{number % 3}",
                method="evolutionary",
                source_run=f"run-{number % 11}",
                content_sha256=hashlib.sha256(f"{name}-H{number}".encode()).hexdigest(),
            )
            for number in range(proposals)
        ),
        batch_size=2000,
    )
    cohort = Cohort.objects.create(name=name, seed=20250101)
    Cohort.proposals.through.objects.bulk_create(
        (Cohort.proposals.through(cohort_id=cohort.pk, proposal_id=proposal.pk) for proposal in proposal_rows),
        batch_size=5000,
    )
    return cohort


def make_users(prefix: str, count: int, role: str) -> list:
    from django.contrib.auth.hashers import make_password
    from django.contrib.auth.models import Group, User

    # Logins go through force_login, so no password is hashed (hashing 300 of them would dominate setup).
    users = User.objects.bulk_create(
        User(username=f"{prefix}{number:03d}", password=make_password(None)) for number in range(count)
    )
    group = Group.objects.get(name=role)
    User.groups.through.objects.bulk_create(User.groups.through(user_id=user.pk, group_id=group.pk) for user in users)
    return users


def submit_all_reviews(cohort) -> int:
    from django.utils import timezone

    from reviewapp.models import Assignment, Review
    from reviewapp.protocol import CANT_JUDGE, CRITERION_FIELDS, FLAW_CHECKLIST_KEYS

    rng = random.Random(7)
    now = timezone.now()
    Review.objects.filter(assignment__cohort=cohort).delete()
    assignment_ids = Assignment.objects.filter(cohort=cohort).values_list("pk", flat=True).iterator(chunk_size=5000)

    def review(assignment_id):
        return Review(
            assignment_id=assignment_id,
            status=Review.Status.SUBMITTED,
            overall=rng.randint(1, 5),
            recommendation=rng.choice(["prioritize", "revise", "defer", "reject"]),
            **{field: rng.choice(["1", "2", "3", "4", "4", "3", CANT_JUDGE]) for field in CRITERION_FIELDS},
            flaw_verdict=rng.choice(["absent", "fixable", "fatal", CANT_JUDGE]),
            flaw_checklist=rng.sample(FLAW_CHECKLIST_KEYS, 2),
            main_flaw="The cohort is too small to detect a modest effect on frailty.",
            comments="Plausible mechanism; the plan needs a sex-stratified analysis and a power estimate. " * 2,
            submitted_at=now,
            seconds_spent=rng.randint(120, 1800),
        )

    created = 0
    batch = []
    for assignment_id in assignment_ids:
        batch.append(review(assignment_id))
        if len(batch) == 2000:
            created += len(Review.objects.bulk_create(batch))
            batch = []
    created += len(Review.objects.bulk_create(batch))
    return created


def analyze() -> None:
    """Refresh the planner's statistics, as autovacuum does within a minute of a bulk load in production.

    Without it the planner believes the freshly loaded tables are nearly empty and picks nested loops.
    """
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


# ------------------------------------------------------------------------------------------------ measuring


def reviewer_client(reviewer):
    from django.test import Client

    client = Client()
    client.force_login(reviewer)
    return client


def first_assignment_id(reviewer) -> int:
    from reviewapp.models import Assignment

    return Assignment.objects.filter(reviewer=reviewer).order_by("position").values_list("pk", flat=True)[0]


def draft_assignment_id(reviewer) -> int:
    """The reviewer's second assignment, with a draft saved that shows the whole form: the overall value and the
    recommendation answered (the six criteria appear), one criterion, and a verdict that asks for the flaw checklist."""
    from reviewapp.models import Assignment
    from reviewapp.services.reviews import review_save

    assignment = Assignment.objects.filter(reviewer=reviewer).order_by("position")[1]
    if not hasattr(assignment, "review"):
        answers = {"overall": 4, "recommendation": "revise", "importance": "3", "flaw_verdict": "fixable"}
        review_save(assignment=assignment, reviewer=reviewer, answers=answers, version=0)
    return assignment.pk


def peak_memory_mb() -> float:
    """This process's peak resident memory. VmHWM, because ru_maxrss also counts the parent's memory at fork."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kilobytes = next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(kilobytes) / 1024


def xlsx_child(cohort_id: int, warm_up_cohort_id: int, username: str) -> None:
    """Run in a child process: export the cohort's XLSX as `username` and report time and peak memory, then the
    floor: openpyxl's write-only mode writing the same rows from a list already in memory.

    A request for the small cohort's XLSX comes first, so that the URL configuration (which imports matplotlib and
    scipy for other pages), the export's code and the database connection are there before the baseline is read,
    as in a server that has been up a while."""
    from django.contrib.auth.models import User
    from django.test import Client
    from django.urls import reverse

    from reviewapp.models import Cohort
    from reviewapp.selectors.exports import review_export_rows, write_xlsx

    client = Client()
    client.force_login(User.objects.get(username=username))
    warm_up = client.get(reverse("api-cohort-reviews-xlsx", args=[warm_up_cohort_id]))
    assert warm_up.status_code == 200
    b"".join(warm_up.streaming_content)
    baseline_mb = peak_memory_mb()
    started = time.perf_counter()
    response = client.get(reverse("api-cohort-reviews-xlsx", args=[cohort_id]))
    size = sum(len(chunk) for chunk in response.streaming_content)
    seconds = time.perf_counter() - started
    response.close()
    peak_mb = peak_memory_mb()

    rows = list(review_export_rows(cohort=Cohort.objects.get(pk=cohort_id), unblinded=True))
    with tempfile.TemporaryFile() as target:
        started = time.perf_counter()
        write_xlsx(rows, target, title="reviews")
        floor_seconds = time.perf_counter() - started
    from openpyxl.xml import LXML

    print(
        json.dumps(
            {
                "status": response.status_code,
                "seconds": seconds,
                "floor_seconds": floor_seconds,
                "bytes": size,
                "baseline_mb": baseline_mb,
                "peak_mb": peak_mb,
                "lxml": LXML,
            }
        )
    )


def copy_seconds(cohort) -> float:
    """The floor of the CSV export: PostgreSQL's COPY of the rows the export reads (the ORM's query of
    `review_export_rows`, unformatted), every byte read."""
    from django.db import connection

    from reviewapp.models import Review
    from reviewapp.selectors import exports

    fields = (*exports._FIELDS, *exports._UNBLINDING_FIELDS)
    query = (
        Review.objects.filter(assignment__cohort=cohort)
        .order_by("assignment__proposal__external_id", "assignment__reviewer__username")
        .values_list(*fields)
        .query
    )
    sql, params = query.sql_with_params()
    started = time.perf_counter()
    with connection.cursor() as cursor:
        statement = f"COPY ({connection.ops.compose_sql(sql, params)}) TO STDOUT (FORMAT csv)"
        with cursor.cursor.copy(statement) as copy:
            size = sum(len(data) for data in copy)
    assert size > 0
    return time.perf_counter() - started


def measure_pages(client, urls: list[str], clock=time.perf_counter) -> list[list[float]]:
    """For each page of `urls`, its median seconds block by block: PAGE_BLOCKS blocks of PAGE_REQUESTS requests of
    each page, taken in turn; by `clock` (wall time, or support.serving_cpu_seconds)."""
    medians: list[list[float]] = [[] for _ in urls]
    for _ in range(PAGE_BLOCKS):
        times: list[list[float]] = [[] for _ in urls]
        for _ in range(PAGE_REQUESTS):
            for address, taken in zip(urls, times, strict=True):
                started = clock()
                response = client.get(address)
                taken.append(clock() - started)
                assert response.status_code == 200, (address, response.status_code)
        for median, taken in zip(medians, times, strict=True):
            median.append(statistics.median(taken))
    return medians


def run(scratch_url: str, xlsx_repeats: int, *, pages_only: bool = False) -> Results:
    from django.core.management import call_command
    from django.test import Client
    from django.urls import reverse

    from reviewapp.services.cohorts import cohort_assign

    results = Results()
    record = results.record
    print("Migrating the scratch database…", flush=True)
    call_command("migrate", verbosity=0)
    (coordinator,) = make_users("bench-coord", 1, "coordinator")
    reviewers = make_users("bench-rev", REVIEWERS, "reviewer")
    (small_reviewer,) = make_users("bench-small", 1, "reviewer")

    print(f"Building a {PROPOSALS}-proposal cohort…", flush=True)
    cohort = build_cohort(name="bench-large", proposals=PROPOSALS, tasks=TASKS)
    small = build_cohort(name="bench-small", proposals=SMALL_PROPOSALS, tasks=1)
    cohort_assign(cohort=small, reviewers=[small_reviewer], per_proposal=1, seed=1, user=coordinator)

    started = time.perf_counter()
    result = cohort_assign(cohort=cohort, reviewers=reviewers, per_proposal=PER_PROPOSAL, seed=42, user=coordinator)
    seconds = time.perf_counter() - started
    loads = set(result.loads.values())
    record(
        f"assign {PROPOSALS} proposals × {PER_PROPOSAL}",
        seconds,
        "s",
        "≤ 5 s",
        seconds <= 5,
        f"({result.created} assignments, loads {min(loads)}–{max(loads)})",
    )

    analyze()
    big_reviewer = reviewers[0]
    floor_url = reverse("floor-page")
    pages = [
        ("queue page", lambda reviewer: reverse("review-queue"), lambda reviewer: reverse("plain-queue")),
        (
            "review page",
            lambda reviewer: reverse("review-page", args=[first_assignment_id(reviewer)]),
            lambda reviewer: reverse("plain-review", args=[first_assignment_id(reviewer)]),
        ),
        (
            "review page, a draft",
            lambda reviewer: reverse("review-page", args=[draft_assignment_id(reviewer)]),
            lambda reviewer: reverse("plain-review", args=[draft_assignment_id(reviewer)]),
        ),
    ]
    for name, url_for, plain_url_for in pages:
        small_queries, _ = measure_page(reviewer_client(small_reviewer), url_for(small_reviewer), 3)
        client = reviewer_client(big_reviewer)
        queries, _ = measure_page(client, url_for(big_reviewer), 3)
        record(
            f"{name}: queries",
            queries,
            "",
            "≤ 10, same as a 5-assignment queue",
            queries <= 10 and queries == small_queries,
            f"(5 assignments: {small_queries})",
        )
        plain_queries, _ = measure_page(client, plain_url_for(big_reviewer), 3)
        # The goals bound the CPU spent serving the pages (support.serving_cpu_seconds), which the other processes of
        # a busy machine do not lengthen; the wall times follow for information.
        for clock, kind, goals in ((serving_cpu_seconds, "CPU", True), (time.perf_counter, "wall", False)):
            page_seconds, floor_seconds, plain_seconds = measure_pages(
                client, [url_for(big_reviewer), floor_url, plain_url_for(big_reviewer)], clock
            )
            blocks = f"{PAGE_BLOCKS} blocks of {PAGE_REQUESTS} requests of each of the three, in turn"
            results.ratio(
                f"{name}, {REVIEWER_LOAD} assignments: {kind} time",
                page_seconds,
                floor_seconds,
                "ms",
                PAGE_GOAL if goals else None,
                floor_name="a login-required page with a tiny template",
                scale=1e3,
                note=f"({blocks}; load average {load_average()})",
            )
            results.ratio(
                f"{name}, {REVIEWER_LOAD} assignments: {kind} time to the plain view",
                page_seconds,
                plain_seconds,
                "ms",
                PLAIN_PAGE_GOAL if goals else None,
                floor_name="the plain select_related + template view",
                scale=1e3,
                note=f"({blocks}; the plain view takes {plain_queries} queries; load average {load_average()})",
            )
            # What each view adds to the floor every signed-in page pays, block by block: the page's own work
            # against the plain view's.
            results.ratio(
                f"{name}, {REVIEWER_LOAD} assignments: {kind} time above the floor, to the plain view's",
                [page - floor for page, floor in zip(page_seconds, floor_seconds, strict=True)],
                [plain - floor for plain, floor in zip(plain_seconds, floor_seconds, strict=True)],
                "ms",
                None,
                floor_name="the plain view's time above the floor",
                scale=1e3,
                note=f"({blocks})",
            )

    if pages_only:
        return results
    print("Submitting every review…", flush=True)
    reviews = submit_all_reviews(cohort)
    analyze()

    coordinator_client = Client()
    coordinator_client.force_login(coordinator)
    csv_url = reverse("api-cohort-reviews-csv", args=[cohort.pk])

    def export_csv() -> None:
        response = coordinator_client.get(csv_url)
        lines = sum(chunk.count(b"\n") for chunk in response.streaming_content)
        assert response.status_code == 200 and lines == reviews + 1, (response.status_code, lines, reviews)

    export_csv()  # warm-up, not counted
    export_seconds, floor_seconds = interleaved(export_csv, lambda: copy_seconds(cohort), CSV_REPEATS)
    results.ratio(
        f"CSV export of {reviews} reviews",
        export_seconds,
        floor_seconds,
        "s",
        CSV_GOAL,
        floor_name="COPY (the export's SELECT) TO STDOUT",
    )
    median = statistics.median(export_seconds)
    record(f"CSV export of {reviews} reviews", median, "s", "≤ 10 s", median <= 10)

    command = [sys.executable, __file__, "--xlsx-child", str(cohort.pk), str(small.pk), coordinator.username]
    env = {**os.environ, "DATABASE_URL": scratch_url}
    with_lxml, without_lxml = [], []
    for _ in range(xlsx_repeats):
        # openpyxl uses lxml when it is installed unless OPENPYXL_LXML says otherwise: the export as it was before.
        without_lxml.append(child_figures(command, {**env, "OPENPYXL_LXML": "False"}, timeout=900))
        with_lxml.append(child_figures(command, env, timeout=900))
    for figures in with_lxml + without_lxml:
        assert figures["status"] == 200, figures
    assert all(figures["lxml"] for figures in with_lxml), "lxml is not installed: pip install -r requirements.txt"
    results.ratio(
        f"XLSX export of {reviews} reviews",
        [figures["seconds"] for figures in with_lxml],
        [figures["seconds"] for figures in without_lxml],
        "s",
        XLSX_GOAL,
        floor_name="the same export without lxml",
    )
    results.ratio(
        f"XLSX export of {reviews} reviews, to writing a list",
        [figures["seconds"] for figures in with_lxml],
        [figures["floor_seconds"] for figures in with_lxml],
        "s",
        XLSX_LIST_GOAL,
        floor_name="openpyxl write-only mode from a list in memory",
        note=f"({with_lxml[0]['bytes'] / 1e6:.1f} MB file)",
    )
    peak = max(figures["peak_mb"] for figures in with_lxml)
    baseline = max(figures["baseline_mb"] for figures in with_lxml)
    record(
        "XLSX export: peak memory",
        peak,
        "MB",
        "≤ 300 MB",
        peak <= 300,
        f"(whole process; {baseline:.0f} MB before the export, after a warm-up export)",
    )
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", action="store_true", help="leave the scratch database for inspection")
    parser.add_argument(
        "--pages-only", action="store_true", help="assignment and the reviewer's pages only, without the exports"
    )
    parser.add_argument("--xlsx-repeats", type=int, default=2, help="XLSX exports with and without lxml, in turn")
    parser.add_argument(
        "--xlsx-child", nargs=3, metavar=("COHORT_ID", "WARM_UP_ID", "USERNAME"), help=argparse.SUPPRESS
    )
    arguments = parser.parse_args()

    url = postgres_server()
    if url is None:
        return 2
    if arguments.xlsx_child:
        setup_django(url)
        cohort_id, warm_up_id, username = arguments.xlsx_child
        xlsx_child(int(cohort_id), int(warm_up_id), username)
        return 0

    with scratch_database(url, SCRATCH_DATABASE, keep=arguments.keep) as scratch_url:
        setup_django(scratch_url, settings="floor_settings")
        results = run(scratch_url, arguments.xlsx_repeats, pages_only=arguments.pages_only)
    return results.report(__file__)


if __name__ == "__main__":
    sys.exit(main())

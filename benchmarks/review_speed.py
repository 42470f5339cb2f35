"""Speed of blinded review at full scale, against the targets the product promises.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/review_speed.py

On the PostgreSQL server named by DATABASE_URL it creates a scratch database (oh_bench_review_…), builds a
10,000-proposal cohort with 300 reviewers, and measures: assigning 3 reviewers per proposal; the queue page
and the review page (queries and median server time) for a reviewer with 100 assignments; the CSV and XLSX
exports of 30,000 submitted reviews, the XLSX one in a child process whose peak memory is read back. The
scratch database is dropped at the end; no other database is touched. Exit status 1 when a target is missed.
"""

import argparse
import hashlib
import json
import os
import random
import resource
import sys
import time
from pathlib import Path

from support import (
    Results,
    all_passed,
    child_figures,
    measure_page,
    postgres_server,
    print_table,
    scratch_database,
    setup_django,
)

SCRATCH_DATABASE = "oh_bench_review"
PROPOSALS = 10_000
REVIEWERS = 300
PER_PROPOSAL = 3
TASKS = 200
PAGE_REQUESTS = 50
SMALL_PROPOSALS = 5


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


def peak_memory_mb() -> float:
    """This process's peak resident memory. VmHWM, because ru_maxrss also counts the parent's memory at fork."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kilobytes = next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(kilobytes) / 1024


def xlsx_child(cohort_id: int, username: str) -> None:
    """Run in a child process: export the cohort's XLSX as `username` and report time and peak memory."""
    from django.contrib.auth.models import User
    from django.test import Client
    from django.urls import reverse

    client = Client()
    client.force_login(User.objects.get(username=username))
    baseline_mb = peak_memory_mb()
    started = time.perf_counter()
    response = client.get(reverse("api-cohort-reviews-xlsx", args=[cohort_id]))
    size = sum(len(chunk) for chunk in response.streaming_content)
    seconds = time.perf_counter() - started
    response.close()
    peak_mb = peak_memory_mb()
    print(
        json.dumps(
            {
                "status": response.status_code,
                "seconds": seconds,
                "bytes": size,
                "baseline_mb": baseline_mb,
                "peak_mb": peak_mb,
            }
        )
    )


def run(scratch_url: str) -> list[tuple[str, float, str, bool, str]]:
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
    pages = [
        ("queue page", lambda reviewer: reverse("review-queue")),
        ("review page", lambda reviewer: reverse("review-page", args=[first_assignment_id(reviewer)])),
    ]
    for name, url_for in pages:
        small_queries, _ = measure_page(reviewer_client(small_reviewer), url_for(small_reviewer), 3)
        queries, median_ms = measure_page(reviewer_client(big_reviewer), url_for(big_reviewer), PAGE_REQUESTS)
        record(
            f"{name}: queries",
            queries,
            "",
            "≤ 10, same as a 5-assignment queue",
            queries <= 10 and queries == small_queries,
            f"(5 assignments: {small_queries})",
        )
        record(
            f"{name}: median server time", median_ms, "ms", "≤ 50 ms", median_ms <= 50, f"(median of {PAGE_REQUESTS})"
        )

    print("Submitting every review…", flush=True)
    reviews = submit_all_reviews(cohort)
    analyze()

    coordinator_client = Client()
    coordinator_client.force_login(coordinator)
    started = time.perf_counter()
    response = coordinator_client.get(reverse("api-cohort-reviews-csv", args=[cohort.pk]))
    lines = sum(chunk.count(b"\n") for chunk in response.streaming_content)
    seconds = time.perf_counter() - started
    assert response.status_code == 200 and lines == reviews + 1, (response.status_code, lines, reviews)
    record(f"CSV export of {reviews} reviews", seconds, "s", "≤ 10 s", seconds <= 10)

    figures = child_figures(
        [sys.executable, __file__, "--xlsx-child", str(cohort.pk), coordinator.username],
        {**os.environ, "DATABASE_URL": scratch_url},
        timeout=600,
    )
    assert figures["status"] == 200, figures
    record(
        f"XLSX export of {reviews} reviews",
        figures["seconds"],
        "s",
        "≤ 30 s",
        figures["seconds"] <= 30,
        f"({figures['bytes'] / 1e6:.1f} MB file)",
    )
    record(
        "XLSX export: peak memory",
        figures["peak_mb"],
        "MB",
        "≤ 300 MB",
        figures["peak_mb"] <= 300,
        f"(whole process; {figures['baseline_mb']:.0f} MB before the export)",
    )
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", action="store_true", help="leave the scratch database for inspection")
    parser.add_argument("--xlsx-child", nargs=2, metavar=("COHORT_ID", "USERNAME"), help=argparse.SUPPRESS)
    arguments = parser.parse_args()

    url = postgres_server()
    if url is None:
        return 2
    if arguments.xlsx_child:
        setup_django(url)
        xlsx_child(int(arguments.xlsx_child[0]), arguments.xlsx_child[1])
        return 0

    with scratch_database(url, SCRATCH_DATABASE, keep=arguments.keep) as scratch_url:
        setup_django(scratch_url)
        results = run(scratch_url)
    print_table(results)
    return 0 if all_passed(results) else 1


if __name__ == "__main__":
    sys.exit(main())

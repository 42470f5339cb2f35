"""Speed of the inspiration audit (docs/protocol.md#inspiration-audit): 3,000 hypothesis versions over 100,000
references with a zero-latency simulated judge on PostgreSQL (target ≤ 120 s), and the audit's page (≤ 500 ms).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/inspiration_speed.py
    … --scratch oh_bench_inspiration --versions 3000 --references 100000 [--keep]

It creates the scratch database (--scratch) on the server named by DATABASE_URL and drops it at the end unless
--keep; no other database is touched. In a child process it migrates, loads synthetic references (the retrieval
benchmark's Zipf-distributed vocabulary; publication dates from 2024 to 2027 at day, month and year precision; one
abstract in three with a sentence naming a measurement or a comparator, so that the simulated judge answers both
ways), indexes them and runs ANALYZE, as autovacuum does after a bulk load. The cohort: 3,000 proposals from four
generators with day and month cutoffs and four domains, half of them written from a reference's words (so that
retrieval finds something), one in twenty a verbatim copy of another (a shared judgement). The judge is the default
roster's, on the project's simulated model server (`manage.py run_simulator`, a process of its own as in `make run`)
at zero latency.

The audit is done as one worker does it (`celery -A reviewapp worker --pool threads`): its batches are claimed and
done by --threads threads (default 4, the judge endpoint's concurrency limit), each with its own database
connection, calling the same services as the Celery tasks; --threads 1 does them one after another. It prints the
time of each phase, the counts, and the median of 20 requests of the audit's page (an analyst, through the whole
Django stack, 100 versions to a page); exit status 1 when a target is missed.
"""

import argparse
import json
import os
import random
import statistics
import sys
import time

from literature_retrieval_speed import FILLER, hypothesis_from, synthetic_corpus
from support import (
    EXAMPLE_SERVER,
    Processes,
    Results,
    child_figures,
    free_port,
    scratch_database,
    setup_django,
)

AUDIT_TARGET_S = 120.0
PAGE_TARGET_MS = 500.0
GROUPS = {"GPT-6 Astra": "2025-03-14", "Grok 4.5": "2025-06", "Claude Opus 5.5": "2025-09", "Gemini 4 Argon": "2026-01"}
DOMAINS = ("senescence", "metabolism", "inflammation", "stem cells")
CONNECTIONS = ("Grip strength was measured in every cohort.", "Treated mice were compared with littermate controls.")


def load_references(count: int, seed: int) -> None:
    from datetime import date, timedelta

    from django.db import connection

    from literature import retrieval
    from literature.models import Reference

    titles, abstracts = synthetic_corpus(count, seed=seed)
    rng = random.Random(seed)
    start = date(2024, 1, 1)
    batch = []
    for n in range(count):
        day = start + timedelta(days=rng.randrange(4 * 365))
        precision = rng.choices(["day", "month", "year"], weights=[80, 15, 5])[0]
        published = {"day": day, "month": day.replace(day=1), "year": date(day.year, 1, 1)}[precision]
        abstract = abstracts[n] + (f" {rng.choice(CONNECTIONS)}" if n % 3 == 0 else "")
        batch.append(
            Reference(
                source=Reference.Source.CSV,
                source_id=f"bench-{n}",
                title=titles[n],
                abstract=abstract,
                published=published,
                published_precision=precision,
                content_sha256=f"{n:064d}",
            )
        )
        if len(batch) == 5000:
            Reference.objects.bulk_create(batch)
            batch = []
    Reference.objects.bulk_create(batch)
    retrieval.index_references()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE literature_reference")
    titles.clear()


def build_cohort(versions: int, references: int, seed: int):
    from literature.models import Reference
    from reviewapp.inspiration.services import cutoff_set
    from reviewapp.models import Cohort, Proposal, ResearchTask

    rng = random.Random(seed)
    task = ResearchTask.objects.create(
        key="bench-task", question="Which interventions slow ageing?", content_sha256="0"
    )
    sources = Reference.objects.filter(source_id__in=[f"bench-{rng.randrange(references)}" for _ in range(versions)])
    texts = [hypothesis_from(ref.title, ref.abstract, rng) for ref in sources.only("title", "abstract")]
    words = [word for text in texts[:200] for word in text.split() if word not in FILLER]
    proposals = []
    for n in range(versions):
        if n % 20 == 19:
            statement = proposals[n - 1].statement  # a verbatim copy: one shared judgement
        elif n % 2 == 0 and texts:
            statement = texts[n % len(texts)]
        else:
            statement = " ".join(rng.sample(words, 30)) + "."
        proposals.append(
            Proposal(
                external_id=f"bench-{n}",
                task=task,
                statement=statement,
                author=list(GROUPS)[n % len(GROUPS)],
                domain_category=DOMAINS[(n // 7) % len(DOMAINS)],
                content_sha256=f"{n:064d}",
            )
        )
    Proposal.objects.bulk_create(proposals, batch_size=1000)
    cohort = Cohort.objects.create(name="Inspiration benchmark")
    cohort.proposals.add(*Proposal.objects.all())
    for group, cutoff in GROUPS.items():
        cutoff_set(group=group, cutoff=cutoff)
    return cohort


def audit_by_threads(audit_id: int, threads: int):
    """The audit's batches done by `threads` threads, as a threads-pool worker does them."""
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connection

    from reviewapp.inspiration.models import InspirationAudit, InspirationBatch
    from reviewapp.inspiration.services import audit_advance, batch_perform

    def perform(batch_id: int) -> None:
        try:
            batch_perform(batch_id=batch_id, enqueue=False)
        finally:
            connection.close()  # each thread has its own connection

    audit_advance(audit_id=audit_id, enqueue=False)
    with ThreadPoolExecutor(threads) as pool:
        while pending := list(
            InspirationBatch.objects.filter(audit_id=audit_id, state="pending")
            .order_by("pk")
            .values_list("pk", flat=True)
        ):
            list(pool.map(perform, pending))
    audit_advance(audit_id=audit_id, enqueue=False)
    return InspirationAudit.objects.get(pk=audit_id)


def child(versions: int, references: int, threads: int) -> dict:
    """Runs with DATABASE_URL set to the scratch database: build, audit, time. Returns the figures."""
    setup_django()
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.test import Client

    from reviewapp.inspiration.models import InspirationAudit
    from reviewapp.inspiration.services import audit_create
    from screening.management.commands.setup_roster import roster_setup_default

    call_command("migrate", verbosity=0)
    roster_setup_default()
    started = time.monotonic()
    load_references(references, seed=20261201)
    loaded = time.monotonic() - started
    cohort = build_cohort(versions, references, seed=7)

    started = time.monotonic()
    audit = audit_create(cohort=cohort, enqueue=False)
    created = time.monotonic() - started
    audit = audit_by_threads(audit.pk, threads)
    audit_seconds = time.monotonic() - started
    retrieval_end = (
        audit.batches.filter(kind="retrieval").order_by("-finished_at").values_list("finished_at", flat=True)
    )
    retrieval_seconds = (retrieval_end.first() - audit.started_at).total_seconds()
    judging_seconds = (audit.finished_at - retrieval_end.first()).total_seconds()

    analyst = User.objects.create_user("bench-analyst")
    analyst.groups.add(Group.objects.get(name="analyst"))
    client = Client()
    client.force_login(analyst)
    url = f"/inspiration/audits/{audit.pk}/"
    assert client.get(url).status_code == 200  # warm-up, not counted
    timings = []
    for _ in range(20):
        begun = time.perf_counter()
        response = client.get(url)
        timings.append((time.perf_counter() - begun) * 1000)
        assert response.status_code == 200
    totals = InspirationAudit.objects.get(pk=audit.pk).summary["totals"]
    return {
        "references": references,
        "versions": totals["versions"],
        "threads": threads,
        "load_s": round(loaded, 1),
        "create_s": round(created, 2),
        "retrieval_s": round(retrieval_seconds, 1),
        "judging_s": round(judging_seconds, 1),
        "audit_s": round(audit_seconds, 1),
        "state": audit.state,
        "totals": totals,
        "page_median_ms": round(statistics.median(timings), 1),
        "page_max_ms": round(max(timings), 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--versions", type=int, default=3000)
    parser.add_argument("--references", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=4, help="the worker's threads that do the batches")
    parser.add_argument("--scratch", default="oh_bench_inspiration", help="prefix of the scratch database's name")
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.versions, args.references, args.threads)))
        return 0

    server = os.environ.get("DATABASE_URL", EXAMPLE_SERVER)
    if not server.startswith("postgres"):
        print(f"Set DATABASE_URL to a PostgreSQL server, e.g. {EXAMPLE_SERVER}", file=sys.stderr)
        return 2
    with scratch_database(server, args.scratch, keep=args.keep) as scratch_url:
        # No provider key: every endpoint of the default roster points at the simulated server.
        env = {name: value for name, value in os.environ.items() if name not in Processes.PROVIDER_KEYS}
        env.update(DATABASE_URL=scratch_url, LOG_LEVEL="WARNING", SIMULATOR_PORT=str(free_port()))
        processes = Processes(env)
        try:
            processes.start_simulator(int(env["SIMULATOR_PORT"]), latency=0)
            command = [sys.executable, __file__, "--child", "--versions", str(args.versions)]
            command += ["--threads", str(args.threads), "--references", str(args.references)]
            figures = child_figures(command, env)
        finally:
            processes.stop_all()

    totals = figures["totals"]
    print(
        f"{figures['versions']:,} versions over {figures['references']:,} references (loaded in {figures['load_s']} s);"
        f" audit {figures['state']} by one worker of {figures['threads']} threads:"
        f" retrieval {figures['retrieval_s']} s, judging {figures['judging_s']} s;"
        f" retrieved {totals['retrieved']}, judgements {totals['judgments']}, positive {totals['positive']},"
        f" negative {totals['negative']}, failed {totals['failed']}, date too coarse {totals['date_too_coarse']}"
    )
    results = Results()
    audit_ok = figures["state"] == "done" and figures["audit_s"] <= AUDIT_TARGET_S
    results.record(
        "audit (create, retrieve, judge, count)", figures["audit_s"], "s", f"≤ {AUDIT_TARGET_S:g} s", audit_ok
    )
    page_ok = figures["page_median_ms"] <= PAGE_TARGET_MS
    note = f"(max {figures['page_max_ms']} ms)"
    results.record(
        "audit page, median of 20", figures["page_median_ms"], "ms", f"≤ {PAGE_TARGET_MS:g} ms", page_ok, note
    )
    return results.report(__file__)


if __name__ == "__main__":
    sys.exit(main())

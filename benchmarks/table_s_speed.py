"""Speed of Table S and of the analysts' statistics page for a 3,000-hypothesis benchmark set, against the targets.

    .venv/bin/python benchmarks/table_s_speed.py                      # a temporary SQLite database
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/table_s_speed.py

With DATABASE_URL pointing at PostgreSQL it creates a scratch database (--scratch, default oh_bench_table_s, and a
random suffix) on that server and drops it at the end; without it, a temporary SQLite file. No other database is
touched.

The set: 50 tasks × 60 hypotheses from four generators of four companies, four forecasting models, four judges (one
per company, so each hypothesis has three deciding judges) scoring every hypothesis, a random control per task.
Every hypothesis is selected, so Table S has all 3,000 rows (the worst case). Measured through the whole Django
stack as an analyst: `GET /api/v1/benchmarks/<id>/table-s.xlsx` (target ≤ 5 s; it includes the published files'
checksums, hence the statistics with 10,000 resamples) and `GET /benchmarks/<id>/statistics/` (target ≤ 2 s), each
with an empty statistics cache (the first visit after the data changed) and again with the cache filled. Exit status
1 when a target is missed.
"""

import argparse
import hashlib
import os
import random
import statistics
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

from support import Results, scratch_database, setup_django

TASKS = 50
PER_TASK = 60
GENERATORS = (
    ("GPT-6 Astra", "OpenAI"),
    ("Grok 4.5", "xAI"),
    ("Claude Opus 5.5", "Anthropic"),
    ("Gemini 4 Argon", "Google"),
)
MODELS = ("gpt-6-astra", "claude-sonnet-5-5", "gemini-4-argon", "grok-4.5")
TABLE_S_TARGET = 5.0
PAGE_TARGET = 2.0
RUNS = 3


def analyst_and_tasks(count: int, **task_fields):
    """An analyst, an empty set and its `count` research tasks (each BenchmarkTask given `task_fields`)."""
    from django.contrib.auth.models import Group, User

    from reviewapp.benchmarks.models import BenchmarkSet, BenchmarkTask
    from reviewapp.models import ResearchTask

    analyst = User.objects.create_user("bench-analyst")
    analyst.groups.add(Group.objects.get(name="analyst"))
    benchmark = BenchmarkSet.objects.create(name="Speed benchmark", seed=20261026)
    tasks = ResearchTask.objects.bulk_create(
        ResearchTask(
            key=f"bench-T{number:02d}",
            question=f"Does pathway {number} shape clonal fitness of haematopoietic stem cells in aged mice? " * 2,
            reference_statement=f"Inhibiting pathway {number} in the aged niche restores balanced output. " * 3,
            content_sha256=hashlib.sha256(f"bench-T{number}".encode()).hexdigest(),
        )
        for number in range(count)
    )
    set_tasks = BenchmarkTask.objects.bulk_create(
        BenchmarkTask(benchmark=benchmark, task=task, position=number, **task_fields)
        for number, task in enumerate(tasks, start=1)
    )
    return benchmark, analyst, set_tasks


def build_set():
    from django.utils import timezone

    from reviewapp.benchmarks.models import BenchmarkHypothesis, Judge, JudgeScore, RandomControlDraw

    rng = random.Random(20261026)
    benchmark, analyst, set_tasks = analyst_and_tasks(TASKS)
    hypotheses = BenchmarkHypothesis.objects.bulk_create(
        (
            BenchmarkHypothesis(
                benchmark=benchmark,
                benchmark_task=set_task,
                key=f"H{index}",
                position=index,
                generator=GENERATORS[index % 4][0],
                generator_company=GENERATORS[index % 4][1],
                statement=f"In aged mice, factor {index} of task {set_task.position} in the marrow niche slows clone "
                "expansion. " * 3,
                mechanism="It relieves an inflammatory defect that accumulates with age in stromal cells. " * 2,
                prediction="Treated mice keep a lower myeloid-to-lymphoid ratio than vehicle controls. " * 2,
                forecasts={model: rng.random() < 0.4 for model in MODELS},
                first_stage=True,
                selected=True,
            )
            for set_task in set_tasks
            for index in range(1, PER_TASK + 1)
        ),
        batch_size=1000,
    )
    judges = [
        Judge.objects.create(benchmark=benchmark, name=f"Judge {company}", company=company, position=number)
        for number, (_, company) in enumerate(GENERATORS, start=1)
    ]
    scores = []
    for hypothesis in hypotheses:
        truth = rng.choice((0, 0, 0, 1, 1, 2, 3, 4, 5))
        for judge in judges:
            scores.append(
                JudgeScore(judge=judge, hypothesis=hypothesis, score=min(5, max(0, truth + rng.choice((-1, 0, 0, 1)))))
            )
    JudgeScore.objects.bulk_create(scores, batch_size=2000)
    RandomControlDraw.objects.bulk_create(
        RandomControlDraw(
            benchmark_task=set_task,
            drawn_at=timezone.now(),
            hypotheses_sha256="0" * 64,
            hypothesis_count=PER_TASK,
            answers={f"H{index}": rng.random() < 0.5 for index in range(1, PER_TASK + 1)},
            generator="python secrets.randbelow(2)",
        )
        for set_task in set_tasks
    )
    return benchmark, analyst, len(hypotheses), len(scores)


def table_s_rows(workbook: bytes) -> int:
    """Hypothesis rows over the generator sheets (every sheet but Counts and Sources, less its header)."""
    import io

    from openpyxl import load_workbook

    book = load_workbook(io.BytesIO(workbook), read_only=True)
    sheets = [name for name in book.sheetnames if name not in ("Counts", "Sources")]
    return sum(1 for name in sheets for _ in book[name].iter_rows(min_row=2))


def timed_get(client, url: str) -> tuple[float, bytes]:
    started = time.perf_counter()
    response = client.get(url)
    body = b"".join(response.streaming_content) if response.streaming else response.content
    seconds = time.perf_counter() - started
    assert response.status_code == 200, (url, response.status_code, body[:300])
    return seconds, body


def measure(client, url: str, cold: bool) -> tuple[float, bytes]:
    from django.core.cache import cache

    timings, body = [], b""
    for _ in range(RUNS):
        if cold:
            cache.clear()
        seconds, body = timed_get(client, url)
        timings.append(seconds)
    return statistics.median(timings), body


def run() -> int:
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import setup_test_environment
    from django.urls import reverse

    setup_test_environment()  # the test client's host and template signals, nothing else
    print(f"Migrating the scratch database ({connection.vendor})…", flush=True)
    call_command("migrate", verbosity=0)
    print(f"Building a set of {TASKS} tasks × {PER_TASK} hypotheses…", flush=True)
    benchmark, analyst, hypotheses, scores = build_set()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    client = Client()
    client.force_login(analyst)
    table_s_url = reverse("api-benchmark-table-s", args=[benchmark.pk])
    page_url = reverse("benchmark-statistics", args=[benchmark.pk])
    figure_url = reverse("benchmark-figure", args=[benchmark.pk, "agreement", "png"])
    timed_get(client, page_url)  # warm imports (matplotlib, templates) once, as a running server has them

    measured = []
    table_cold, workbook = measure(client, table_s_url, cold=True)
    table_warm, _ = measure(client, table_s_url, cold=False)
    measured.append(("Table S, statistics not cached", table_cold, TABLE_S_TARGET))
    measured.append(("Table S, statistics cached", table_warm, TABLE_S_TARGET))
    page_cold, _ = measure(client, page_url, cold=True)
    page_warm, _ = measure(client, page_url, cold=False)
    measured.append(("statistics page, first visit after a change", page_cold, PAGE_TARGET))
    measured.append(("statistics page, cached", page_warm, PAGE_TARGET))
    figure_warm, _ = measure(client, figure_url, cold=False)
    measured.append(("agreement plot PNG, cached", figure_warm, None))

    print(f"\n{hypotheses} hypotheses (all selected), {scores} judge scores, {RUNS} runs each (median)")
    rows = table_s_rows(workbook)
    assert rows == hypotheses, f"Table S has {rows} hypothesis rows, not {hypotheses}"
    print(f"Table S workbook: {len(workbook) / 1e6:.1f} MB, {rows} hypothesis rows")
    results = Results()
    for name, seconds, target in measured:
        shown = "(information)" if target is None else f"≤ {target:g} s"
        results.record(name, seconds, "s", shown, target is None or seconds <= target, f"(median of {RUNS})")
    return results.report(__file__)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scratch", default="oh_bench_table_s", help="scratch PostgreSQL database name")
    args = parser.parse_args()
    url = os.environ.get("DATABASE_URL", "")
    with tempfile.TemporaryDirectory() as folder:
        sqlite_url = f"sqlite:///{Path(folder) / 'table_s_speed.sqlite3'}"
        database = scratch_database(url, args.scratch) if url.startswith("postgres") else nullcontext(sqlite_url)
        with database as database_url:
            os.environ.setdefault("OH_VAR_DIR", folder)
            setup_django(database_url)
            return run()


if __name__ == "__main__":
    sys.exit(main())

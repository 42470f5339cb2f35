"""Speed of the analysts' statistics at benchmark scale, against the targets the product promises.

    .venv/bin/python benchmarks/analysis_speed.py                      # a temporary SQLite database
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/analysis_speed.py

Part one needs no database: on a synthetic set of 50 tasks × 60 hypotheses (3,000) with four judges it times
``selection_summary`` with 10,000 task resamples (target ≤ 1 s) beside its floor, a plain numpy bootstrap of the same
four ratios over the same resamples (goal ≤ 1.5× it; the two timed in turn, the median ratio reported), and, for
information, the judge agreement matrix,
an exact permutation test over 20 differing tasks (2^20 swaps), the hint-degree test with 99,999 whole-task
permutations and the originality sign-flip test (19,999 permutations).

Part two measures the full statistics page of a 3,000-hypothesis set through the whole Django stack as an analyst,
on its first load after the data changed (the statistics cache empty; target ≤ 3 s) and cached: 50 tasks × 60
hypotheses from four generators, the full matrix of four forecasting models with their companies and probabilities,
a re-run of the forecasts, four judges scoring every hypothesis, originality scores of every hypothesis, hint scores
and key elements of every task and a task-selection log of 284 records. With DATABASE_URL pointing at PostgreSQL it
creates a scratch database (--scratch, default oh_bench_analysis) and drops it at the end; without it, a temporary
SQLite file. Each figure is the median of several runs; the cached page is the floor of reading and rendering, and
the cold page's ratio to it is printed, since timings on a shared machine vary. Then the page as a browser loads it,
its HTML and every figure it shows, against the benchmark list page: the cached HTML within 3× the list page, the
page with its figures (each drawn once per computation of the statistics) within 6×, both in the CPU time spent
serving the requests (this thread's, and a local PostgreSQL backend's; the wall times follow for information), and
for information the first visit after a change. Exit status 1 when a target is missed.
"""

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
from support import Results, interleaved, load_average, scratch_database, serving_cpu_seconds, setup_django
from table_s_speed import analyst_and_tasks

TASKS = 50
PER_TASK = 60
RESAMPLES = 10_000
RUNS = 5
PAGE_RUNS = 3
SELECTION_TARGET_SECONDS = 1.0
PAGE_TARGET_SECONDS = 3.0
SELECTION_GOAL_RATIO = 1.5
# The statistics page against the benchmark list page: its HTML, and the page with every figure it shows (cached).
PAGE_HTML_GOAL_RATIO = 3.0
PAGE_FIGURES_GOAL_RATIO = 6.0
JUDGES = ("astra-judge", "grok-judge", "gemini-judge", "opus-judge")
GENERATORS = (
    ("GPT-6 Astra", "OpenAI"),
    ("Grok 4.5", "xAI"),
    ("Claude Opus 5.5", "Anthropic"),
    ("Gemini 4 Argon", "Google"),
)
FORECASTERS = {"gpt-6-astra": "OpenAI", "claude-sonnet-5-5": "Anthropic", "gemini-4-argon": "Google", "grok-4.5": "xAI"}
ELEMENTS = ("pathway inhibition in the aged niche", "balanced output of stem cells", "longer median lifespan")


def median_seconds(function, runs: int = RUNS) -> float:
    timings = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        timings.append(time.perf_counter() - start)
    return statistics.median(timings)


def plain_bootstrap(rows, resamples: int) -> np.ndarray:
    """The floor: the four ratios of sums (precision, base rate, enrichment, sensitivity) over task resamples and
    their central 95% intervals, in plain numpy with nothing else."""
    tasks = {task: index for index, task in enumerate(dict.fromkeys(task for task, _, _ in rows))}
    sums = np.zeros((len(tasks), 4))
    for task, selected, match in rows:
        sums[tasks[task]] += (1, match, selected, selected and match)
    picks = np.random.default_rng(1).integers(0, len(tasks), size=(resamples, len(tasks)))
    totals = sums[picks].sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = totals[:, 3] / totals[:, 2]
        base_rate = totals[:, 1] / totals[:, 0]
        ratios = np.stack([precision, base_rate, precision / base_rate, totals[:, 3] / totals[:, 1]], axis=1)
    return np.nanpercentile(ratios, [2.5, 97.5], axis=0)


def pure_figures(results: Results) -> None:
    from reviewapp import analysis

    rng = np.random.default_rng(20261026)
    selection_rows = [
        (task, bool(rng.random() < 0.007), bool(rng.random() < 0.15)) for task in range(TASKS) for _ in range(PER_TASK)
    ]
    judge_rows = []
    for task in range(TASKS):
        for _ in range(PER_TASK):
            truth = int(rng.integers(0, 6))
            judge_rows.append(
                {"task": task, "scores": {j: int(np.clip(truth + rng.integers(-1, 2), 0, 5)) for j in JUDGES}}
            )
    rows_a = [(task, selected, match) for task, selected, match in selection_rows[: 20 * PER_TASK]]
    rows_b = [
        (task, not selected if index % PER_TASK == 0 else selected, match)
        for index, (task, selected, match) in enumerate(rows_a)
    ]
    hints = [(task, float(rng.integers(0, 4)), float(rng.random())) for task in range(TASKS)]
    pairs = [
        (
            task,
            {d: float(rng.integers(1, 11)) for d in analysis.DIMENSIONS},
            {d: float(rng.integers(1, 11)) for d in analysis.DIMENSIONS},
        )
        for task in range(TASKS)
        for _ in range(2)
    ]
    summary_seconds, floor_seconds = interleaved(
        lambda: analysis.selection_summary(selection_rows, resamples=RESAMPLES),
        lambda: plain_bootstrap(selection_rows, RESAMPLES),
        RUNS,
    )
    name = f"selection_summary: {TASKS} tasks, {len(selection_rows):,} hypotheses, {RESAMPLES:,} resamples"
    results.ratio(
        name, summary_seconds, floor_seconds, "ms", SELECTION_GOAL_RATIO, floor_name="plain numpy bootstrap", scale=1e3
    )
    median = statistics.median(summary_seconds)
    results.record(name, median, "s", f"≤ {SELECTION_TARGET_SECONDS:g} s", median <= SELECTION_TARGET_SECONDS)
    for figure, function in (
        (
            f"judge_agreement: {len(JUDGES)} judges, {len(judge_rows):,} hypotheses, {RESAMPLES:,} resamples",
            lambda: analysis.judge_agreement(judge_rows, resamples=RESAMPLES),
        ),
        (
            "permutation_test_within_tasks: exact, 20 differing tasks (1,048,576 swaps)",
            lambda: analysis.permutation_test_within_tasks(rows_a, rows_b),
        ),
        (
            f"hint_correlation: {TASKS} tasks, 99,999 permutations, {RESAMPLES:,} resamples re-ranked",
            lambda: analysis.hint_correlation(hints),
        ),
        (
            f"originality_comparison: {len(pairs)} pairs, 19,999 sign flips, {RESAMPLES:,} resamples",
            lambda: analysis.originality_comparison(pairs),
        ),
    ):
        results.record(figure, median_seconds(function, runs=3), "s", "(information)", True)


def build_set():
    """A 3,000-hypothesis set with every input of the appendices' analyses, written with bulk inserts."""
    from reviewapp.analysis import candidate_order
    from reviewapp.benchmarks.models import (
        BenchmarkHypothesis,
        BenchmarkTask,
        Forecaster,
        Judge,
        JudgeScore,
        QualityScore,
        TaskSelectionLog,
        TaskSelectionRecord,
    )

    rng = random.Random(20261026)
    benchmark, analyst, set_tasks = analyst_and_tasks(TASKS, key_elements=list(ELEMENTS))
    for set_task in set_tasks:
        set_task.hint_score = rng.choice((0, 1, 1, 2, 3))
    BenchmarkTask.objects.bulk_update(set_tasks, ["hint_score"])
    records = []
    for set_task in set_tasks:
        for index in range(1, PER_TASK + 1):
            forecasts = {model: rng.random() < 0.45 for model in FORECASTERS}
            records.append(
                BenchmarkHypothesis(
                    benchmark=benchmark,
                    benchmark_task=set_task,
                    key=f"H{index}",
                    position=index,
                    generator=GENERATORS[index % 4][0],
                    generator_company=GENERATORS[index % 4][1],
                    statement=f"In aged mice, {rng.choice(ELEMENTS)} follows factor {index} of {set_task.position}.",
                    mechanism="It relieves an inflammatory defect that accumulates with age in stromal cells.",
                    prediction="Treated mice keep a lower myeloid-to-lymphoid ratio than vehicle controls.",
                    forecasts=forecasts,
                    first_stage=forecasts["gpt-6-astra"],
                    selected=all(forecasts.values()),
                    probabilities={model: round(rng.random(), 2) for model in FORECASTERS},
                    repeat_forecasts={m: v if rng.random() < 0.85 else not v for m, v in forecasts.items()},
                )
            )
    hypotheses = BenchmarkHypothesis.objects.bulk_create(records, batch_size=1000)
    Forecaster.objects.bulk_create(Forecaster(benchmark=benchmark, name=m, company=c) for m, c in FORECASTERS.items())
    judges = [
        Judge.objects.create(benchmark=benchmark, name=f"Judge {company}", company=company, position=number)
        for number, (_, company) in enumerate(GENERATORS, start=1)
    ]
    scores, quality = [], []
    for hypothesis in hypotheses:
        truth = rng.choice((0, 0, 0, 1, 1, 2, 3, 4, 5))
        for judge in judges:
            scores.append(
                JudgeScore(judge=judge, hypothesis=hypothesis, score=min(5, max(0, truth + rng.choice((-1, 0, 0, 1)))))
            )
            quality.append(
                QualityScore(
                    judge=judge,
                    hypothesis=hypothesis,
                    originality=rng.randint(1, 10),
                    feasibility=rng.randint(1, 10),
                    clarity=rng.randint(1, 10),
                )
            )
    JudgeScore.objects.bulk_create(scores, batch_size=2000)
    QualityScore.objects.bulk_create(quality, batch_size=2000)
    salt = "omega-creativity-2026-10-11"
    candidates = candidate_order(salt, [str(41000000 + i) for i in range(212)])
    log = TaskSelectionLog.objects.create(benchmark=benchmark, query="aging[MeSH Terms]", salt=salt, found=284)
    TaskSelectionRecord.objects.bulk_create(
        [
            TaskSelectionRecord(log=log, pmid=pmid, status="candidate", position=i, final=i <= TASKS)
            for i, pmid in enumerate(candidates, start=1)
        ]
        + [
            TaskSelectionRecord(
                log=log, pmid=str(42000000 + i), status="excluded", reason=rng.choice(("review", "no finding"))
            )
            for i in range(72)
        ]
    )
    return benchmark, analyst, len(hypotheses)


def timed_get(client, url: str, cpu: list | None = None) -> float:
    """Wall seconds of one request; its CPU seconds in this process are appended to `cpu`."""
    started, started_cpu = time.perf_counter(), time.process_time()
    response = client.get(url)
    body = b"".join(response.streaming_content) if response.streaming else response.content
    seconds = time.perf_counter() - started
    if cpu is not None:
        cpu.append(time.process_time() - started_cpu)
    assert response.status_code == 200, (url, response.status_code, body[:300])
    return seconds


def page_figures(results: Results) -> None:
    from django.core.cache import cache
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import setup_test_environment
    from django.urls import reverse

    setup_test_environment()
    print(f"Migrating the scratch database ({connection.vendor})…", flush=True)
    call_command("migrate", verbosity=0)
    print(f"Building a set of {TASKS} tasks × {PER_TASK} hypotheses with every analysis's inputs…", flush=True)
    benchmark, analyst, hypotheses = build_set()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    client = Client()
    client.force_login(analyst)
    page = reverse("benchmark-statistics", args=[benchmark.pk])
    api = reverse("api-benchmark-statistics", args=[benchmark.pk])
    timed_get(client, page)  # warm imports (templates, scipy's distributions) once, as a running server has them

    cpu: list[float] = []

    def cold(url):
        cache.clear()
        return timed_get(client, url, cpu)

    page_cold = statistics.median(cold(page) for _ in range(PAGE_RUNS))
    page_cpu = statistics.median(cpu)
    page_warm = statistics.median(timed_get(client, page) for _ in range(PAGE_RUNS))
    api_cold = statistics.median(cold(api) for _ in range(PAGE_RUNS))
    print(f"cold page / cached page (the floor of reading and rendering): {page_cold / page_warm:.1f}")
    # On a shared machine the wall time grows with the others' load; the CPU time this process spent does not
    # (the database server's own time is not in it).
    print(f"cold page: {page_cold:.2f} s wall, {page_cpu:.2f} s CPU in this process; load average {load_average()}")
    target = f"≤ {PAGE_TARGET_SECONDS:g} s"
    results.record(
        f"statistics page, {hypotheses:,} hypotheses, first load after a change",
        page_cold,
        "s",
        target,
        page_cold <= PAGE_TARGET_SECONDS,
        f"({page_cpu:.2f} s CPU in this process; load average {load_average()})",
    )
    results.record(f"statistics page, {hypotheses:,} hypotheses, cached", page_warm, "s", "(information)", True)
    results.record(
        f"statistics API, {hypotheses:,} hypotheses, first load after a change",
        api_cold,
        "s",
        target,
        api_cold <= PAGE_TARGET_SECONDS,
    )
    page_with_figures(results, client, page, hypotheses)


def page_with_figures(results: Results, client, page: str, hypotheses: int) -> None:
    """The statistics page as a browser loads it, its HTML and then every figure it shows, against the benchmark
    list page, the floor of an analyst's page on the same stack: the HTML and the page with its figures cached
    (each figure drawn once per computation of the statistics), and for information the first visit after a
    change, when everything is computed and drawn."""
    import re

    from django.core.cache import cache
    from django.urls import reverse

    html = client.get(page).content.decode()
    figures = sorted(set(re.findall(r'<img src="([^"]+\.png[^"]*)"', html)))
    listing = reverse("benchmark-list")

    def page_and_figures():
        timed_get(client, page)
        for figure in figures:
            timed_get(client, figure)

    page_and_figures()  # every figure drawn once, as the first visitor does
    # Measured in the CPU time spent serving them (support.serving_cpu_seconds), which the other processes of a busy
    # machine do not lengthen; the wall times follow for information.
    for clock, kind, goals in ((serving_cpu_seconds, "CPU", True), (time.perf_counter, "wall", False)):
        html_seconds, list_seconds = interleaved(
            lambda: timed_get(client, page), lambda: timed_get(client, listing), 7, clock
        )
        results.ratio(
            f"statistics page HTML, {hypotheses:,} hypotheses, cached ({kind})",
            html_seconds,
            list_seconds,
            "ms",
            PAGE_HTML_GOAL_RATIO if goals else None,
            floor_name="the benchmark list page",
            note=f"load average {load_average()}",
            scale=1e3,
        )
        both_seconds, list_seconds = interleaved(page_and_figures, lambda: timed_get(client, listing), 7, clock)
        results.ratio(
            f"statistics page plus its {len(figures)} figures, cached ({kind})",
            both_seconds,
            list_seconds,
            "ms",
            PAGE_FIGURES_GOAL_RATIO if goals else None,
            floor_name="the benchmark list page",
            note=f"load average {load_average()}",
            scale=1e3,
        )
    first = []
    for _ in range(PAGE_RUNS):
        cache.clear()
        started = time.perf_counter()
        page_and_figures()
        first.append(time.perf_counter() - started)
    results.record(
        f"statistics page plus its {len(figures)} figures, first visit after a change",
        statistics.median(first),
        "s",
        "(information)",
        True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scratch", default="oh_bench_analysis", help="scratch PostgreSQL database name")
    args = parser.parse_args()
    results = Results()
    pure_figures(results)
    url = os.environ.get("DATABASE_URL", "")
    with tempfile.TemporaryDirectory() as folder:
        sqlite_url = f"sqlite:///{Path(folder) / 'analysis_speed.sqlite3'}"
        database = scratch_database(url, args.scratch) if url.startswith("postgres") else nullcontext(sqlite_url)
        with database as database_url:
            os.environ.setdefault("OH_VAR_DIR", folder)
            setup_django(database_url)
            page_figures(results)
    return results.report(__file__)


if __name__ == "__main__":
    sys.exit(main())

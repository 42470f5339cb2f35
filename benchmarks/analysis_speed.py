"""Speed of the analysts' statistics at benchmark scale, against the target the product promises.

    .venv/bin/python benchmarks/analysis_speed.py

Builds a synthetic benchmark set of 50 tasks × 60 hypotheses (3,000) with four judges and measures
``selection_summary`` with 10,000 task resamples (target ≤ 1 s) beside its floor, a plain numpy bootstrap of the
same four ratios over the same resamples (goal ≤ 1.5× it; the two are timed in turn, several times, and the median
ratio is reported). For information it also times the judge agreement matrix (four judges, 10,000 resamples) and an
exact permutation test over 20 differing tasks (2^20 swaps), which have no target of their own. No database is
needed. Exit status 1 when a target is missed.
"""

import statistics
import sys
import time

import numpy as np
from support import Results, interleaved

from reviewapp import analysis

TASKS = 50
PER_TASK = 60
RESAMPLES = 10_000
RUNS = 5
SELECTION_TARGET_SECONDS = 1.0
SELECTION_GOAL_RATIO = 1.5
JUDGES = ("astra-judge", "grok-judge", "gemini-judge", "opus-judge")


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


def main() -> int:
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

    results = Results()
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
    agreement = median_seconds(lambda: analysis.judge_agreement(judge_rows, resamples=RESAMPLES), runs=3)
    results.record(
        f"judge_agreement: {len(JUDGES)} judges, {len(judge_rows):,} hypotheses, {RESAMPLES:,} resamples",
        agreement,
        "s",
        "(information)",
        True,
    )
    permutation = median_seconds(lambda: analysis.permutation_test_within_tasks(rows_a, rows_b), runs=3)
    results.record(
        "permutation_test_within_tasks: exact, 20 differing tasks (1,048,576 swaps)",
        permutation,
        "s",
        "(information)",
        True,
    )
    return results.report(__file__)


if __name__ == "__main__":
    sys.exit(main())

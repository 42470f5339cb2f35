"""Speed of the analysts' statistics at benchmark scale, against the target the product promises.

    .venv/bin/python benchmarks/analysis_speed.py

Builds a synthetic benchmark set of 50 tasks × 60 hypotheses (3,000) with four judges and measures
``selection_summary`` with 10,000 task resamples (target ≤ 1 s). For information it also times the judge
agreement matrix (four judges, 10,000 resamples) and an exact permutation test over 20 differing tasks (2^20
swaps), which have no target of their own. Each figure is the median of several runs. No database is needed.
Exit status 1 when the target is missed.
"""

import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reviewapp import analysis  # noqa: E402

TASKS = 50
PER_TASK = 60
RESAMPLES = 10_000
RUNS = 5
SELECTION_TARGET_SECONDS = 1.0
JUDGES = ("astra-judge", "grok-judge", "gemini-judge", "opus-judge")


def median_seconds(function, runs: int = RUNS) -> float:
    timings = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        timings.append(time.perf_counter() - start)
    return statistics.median(timings)


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

    figures = [
        (
            f"selection_summary: {TASKS} tasks, {len(selection_rows):,} hypotheses, {RESAMPLES:,} resamples",
            median_seconds(lambda: analysis.selection_summary(selection_rows, resamples=RESAMPLES)),
            SELECTION_TARGET_SECONDS,
        ),
        (
            f"judge_agreement: {len(JUDGES)} judges, {len(judge_rows):,} hypotheses, {RESAMPLES:,} resamples",
            median_seconds(lambda: analysis.judge_agreement(judge_rows, resamples=RESAMPLES), runs=3),
            None,
        ),
        (
            "permutation_test_within_tasks: exact, 20 differing tasks (1,048,576 swaps)",
            median_seconds(lambda: analysis.permutation_test_within_tasks(rows_a, rows_b), runs=3),
            None,
        ),
    ]
    failed = False
    print(f"{'figure':<90} {'median':>9} {'target':>8}  result")
    for name, seconds, target in figures:
        verdict = "—" if target is None else ("PASS" if seconds <= target else "FAIL")
        failed |= verdict == "FAIL"
        target_text = "—" if target is None else f"≤ {target:.1f} s"
        print(f"{name:<90} {seconds:>7.3f} s {target_text:>8}  {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

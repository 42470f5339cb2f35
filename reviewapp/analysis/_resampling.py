"""Resampling whole research tasks: the unit of every interval (docs/protocol.md#task-bootstrap).

The resample index matrix is part of the published contract so an analyst can reproduce any interval outside the
product: tasks are numbered in order of first appearance in the rows, and resample r draws the tasks
``numpy.random.default_rng(seed).integers(0, n_tasks, size=(resamples, n_tasks))[r]`` with replacement.
"""

import functools
from collections.abc import Hashable, Iterable
from dataclasses import dataclass

import numpy as np

# The benchmark's seed of each family of analyses as published (docs/analysis.md#seeds): generation match rates, the
# two-stage selection and its random controls, the sensitivity analyses and the task-hint analysis, AUC intervals,
# and the further calculations of selection and forecasts (one appendix, its own seed).
SEEDS = {"generation": 20261025, "selection": 20261026, "sensitivity": 20261027, "auc": 20261030, "further": 20261030}
DEFAULT_SEED = SEEDS["selection"]
DEFAULT_RESAMPLES = 10_000
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Estimate:
    """A point value with its central 95% percentile interval over task resamples.

    ``undefined_resamples`` counts resamples in which the statistic had a zero denominator (for example no
    selected hypothesis); they are left out of the interval and reported here rather than hidden. ``value`` is
    None when the statistic is undefined on the data themselves; ``low``/``high`` are None when no resample was
    drawn or none was defined.
    """

    value: float | None
    low: float | None
    high: float | None
    undefined_resamples: int


def task_codes(tasks: Iterable[Hashable]) -> tuple[np.ndarray, list]:
    """Number tasks in order of first appearance; returns the code of each row and the task order."""
    order: dict = {}
    codes = [order.setdefault(task, len(order)) for task in tasks]
    return np.asarray(codes, dtype=np.intp), list(order)


def resample_indices(n_tasks: int, resamples: int, seed: int) -> np.ndarray:
    """The documented index matrix: the tasks drawn in each resample, shape (resamples, n_tasks)."""
    return np.random.default_rng(seed).integers(0, n_tasks, size=(resamples, n_tasks))


@functools.lru_cache(maxsize=8)
def resample_counts(n_tasks: int, resamples: int, seed: int) -> np.ndarray:
    """How many times each task is drawn in each resample, shape (resamples, n_tasks).

    Floats, so that ``counts @ per_task_sums`` is one BLAS product giving every resample's totals. The matrix depends
    only on its three arguments, and a page computes dozens of statistics over the same tasks and seed, so the last
    few are kept (read-only).
    """
    indices = resample_indices(n_tasks, resamples, seed)
    flat = indices + n_tasks * np.arange(resamples)[:, None]
    counts = np.bincount(flat.ravel(), minlength=resamples * n_tasks).reshape(resamples, n_tasks)
    counts = counts.astype(np.float64)
    counts.flags.writeable = False
    return counts


def per_task_sums(codes: np.ndarray, n_tasks: int, columns: np.ndarray) -> np.ndarray:
    """Sum row-level columns (shape (rows, k)) per task, shape (n_tasks, k)."""
    sums = np.zeros((n_tasks, columns.shape[1]), dtype=np.float64)
    np.add.at(sums, codes, columns)
    return sums


def task_sums(tasks: Iterable[Hashable], columns) -> tuple[list, np.ndarray]:
    """The task order (first appearance) and row-level columns (shape (rows, k)) summed per task, (n_tasks, k)."""
    codes, order = task_codes(tasks)
    return order, per_task_sums(codes, len(order), np.asarray(columns, dtype=np.float64))


def resampled_totals(sums: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """Every resample's column totals from per-task sums, shape (resamples, k)."""
    return resample_counts(len(sums), resamples, seed) @ sums


def ratio(numerator, denominator):
    """numerator / denominator, NaN where the denominator is zero (works on scalars and arrays)."""
    numerator = np.asarray(numerator, dtype=np.float64)
    denominator = np.asarray(denominator, dtype=np.float64)
    out = np.full(np.broadcast(numerator, denominator).shape, np.nan)
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out


def as_float(value) -> float | None:
    """A plain float for JSON, or None for an undefined (NaN) value."""
    value = float(value)
    return None if np.isnan(value) else value


def estimate(point, resampled: np.ndarray | None, confidence: float = CONFIDENCE) -> Estimate:
    """Point value plus the percentile interval of the defined resampled values (linear interpolation)."""
    if resampled is None or resampled.size == 0:
        return Estimate(as_float(point), None, None, 0)
    defined = resampled[np.isfinite(resampled)]
    undefined = int(resampled.size - defined.size)
    if defined.size == 0:
        return Estimate(as_float(point), None, None, undefined)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(defined, [tail, 100 - tail])
    return Estimate(as_float(point), float(low), float(high), undefined)

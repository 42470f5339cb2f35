"""How strongly a task's question hints at its answer, against how often its hypotheses matched
(docs/analysis.md#hint-degree): Spearman's ρ over tasks, a whole-task permutation test and a task-resampled
interval with the ranks recomputed in every resample."""

from collections.abc import Hashable, Iterable
from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata, spearmanr

from reviewapp.analysis._resampling import DEFAULT_RESAMPLES, DEFAULT_SEED, Estimate, estimate, resample_indices
from reviewapp.analysis.inference import TOLERANCE

HINT_PERMUTATIONS = 99_999
# Permutations and resamples are ranked this many at a time, so the (rows × tasks) tables stay small.
_BLOCK = 10_000


@dataclass(frozen=True)
class HintCorrelation:
    tasks: int
    rho: Estimate  # Spearman's ρ with its task-resampled interval (undefined resamples counted)
    p_value: float | None  # two-sided, by |ρ| over whole-task permutations of the hint scores, +1
    permutations: int
    resamples: int
    seed: int


def _row_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson's r of each row of x with the same row of y; NaN where a row is constant."""
    x = x - x.mean(axis=1, keepdims=True)
    y = y - y.mean(axis=1, keepdims=True)
    denominator = np.sqrt((x * x).sum(axis=1) * (y * y).sum(axis=1))
    out = np.full(len(x), np.nan)
    np.divide((x * y).sum(axis=1), denominator, out=out, where=denominator > 0)
    return out


def hint_correlation(
    tasks: Iterable[tuple[Hashable, float, float]],
    *,
    permutations: int = HINT_PERMUTATIONS,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> HintCorrelation:
    """Rows are ``(task, hint score, match rate)``, one per task (the unit of analysis).

    ρ is scipy's ``spearmanr`` (ties get mean ranks). p: the hint scores are permuted across whole tasks
    ``permutations`` times (99,999) with the seed; p = (permutations with |ρ| ≥ |observed| + 1) / (permutations + 1).
    Since ranks move with their values, permuting the ranks of the hint scores gives the permuted ρ as Pearson's r
    of ranks. Interval: tasks resampled with the documented index matrix, both variables re-ranked within each
    resample (mean ranks for the ties repeats create), central 95% percentile; a resample in which either variable
    is constant is undefined and counted.
    """
    rows = list(tasks)
    hints = np.asarray([hint for _, hint, _ in rows], dtype=np.float64)
    rates = np.asarray([rate for _, _, rate in rows], dtype=np.float64)
    n = len(rows)
    if n < 3 or np.ptp(hints) == 0 or np.ptp(rates) == 0:
        return HintCorrelation(n, estimate(np.nan, None), None, permutations, resamples, seed)
    observed = float(spearmanr(hints, rates).statistic)
    rng = np.random.default_rng(seed)
    hint_ranks, rate_ranks = rankdata(hints), rankdata(rates)
    extreme, drawn = 0, 0
    while drawn < permutations:
        block = min(_BLOCK, permutations - drawn)
        shuffled = rng.permuted(np.tile(hint_ranks, (block, 1)), axis=1)
        permuted = _row_pearson(shuffled, np.tile(rate_ranks, (block, 1)))
        extreme += int((np.abs(permuted) >= abs(observed) - TOLERANCE).sum())
        drawn += block
    resampled = []
    if resamples:
        indices = resample_indices(n, resamples, seed)
        for block in np.array_split(indices, max(1, resamples // _BLOCK)):
            resampled.append(_row_pearson(rankdata(hints[block], axis=1), rankdata(rates[block], axis=1)))
    return HintCorrelation(
        tasks=n,
        rho=estimate(observed, np.concatenate(resampled) if resampled else None),
        p_value=(extreme + 1) / (permutations + 1),
        permutations=permutations,
        resamples=resamples,
        seed=seed,
    )

"""Originality, feasibility and clarity of selected hypotheses against excluded ones of the same task
(docs/analysis.md#originality-of-selected-and-excluded).

Each selected hypothesis is matched with one excluded hypothesis of the same generator and task, chosen by hash;
judges of other companies than the generator's score both 1–10 on each dimension; the differences (selected minus
excluded) get a task-resampled interval and a within-task sign-flip permutation test, Holm-corrected over the
dimensions.
"""

import hashlib
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from reviewapp.analysis._resampling import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Estimate,
    as_float,
    estimate,
    ratio,
    resampled_totals,
    task_sums,
)
from reviewapp.analysis.inference import PERMUTATIONS, TOLERANCE, holm

DIMENSIONS = ("originality", "feasibility", "clarity")
QUALITY_SCALE = range(1, 11)
# Sign flips are drawn this many permutations at a time, so the (permutations × pairs) table stays small.
_FLIP_BLOCK = 5000


def pair_hash(task: str, selected: str, candidate: str) -> str:
    """sha256 of "<task>:<selected id>:<candidate id>" (hex): the order in which candidates are offered."""
    return hashlib.sha256(f"{task}:{selected}:{candidate}".encode()).hexdigest()


@dataclass(frozen=True)
class MatchedPair:
    generator: str
    task: str
    selected: str
    excluded: str | None  # None when the group had no excluded hypothesis left for it


def matched_pairs(groups: Mapping[tuple[str, str], tuple[Sequence[str], Sequence[str]]]) -> list[MatchedPair]:
    """Pair every selected hypothesis with one excluded hypothesis of the same generator and task.

    ``groups`` maps (generator, task) to (selected ids in pool order, excluded ids). Taking the selected ones in
    order, each gets the excluded hypothesis not yet taken with the smallest ``pair_hash(task, selected,
    candidate)``; a selected hypothesis for which none is left stays unpaired (``excluded`` None).
    """
    pairs = []
    for (generator, task), (selected, excluded) in sorted(groups.items()):
        left = list(excluded)
        for chosen in selected:
            partner = min(left, key=lambda candidate: pair_hash(task, chosen, candidate)) if left else None
            if partner is not None:
                left.remove(partner)
            pairs.append(MatchedPair(generator, task, chosen, partner))
    return pairs


@dataclass(frozen=True)
class DimensionDifference:
    dimension: str
    pairs: int
    mean_selected: float | None
    mean_excluded: float | None
    difference: Estimate  # mean of (selected − excluded) over pairs, task-resampled interval
    p_value: float | None  # two-sided sign-flip permutation test within tasks
    holm_p_value: float | None


@dataclass(frozen=True)
class OriginalityComparison:
    pairs: int  # complete pairs: both hypotheses scored on every dimension
    incomplete_pairs: int  # pairs left out for a missing score (or a selected hypothesis without a partner)
    dimensions: tuple[DimensionDifference, ...]
    permutations: int
    resamples: int
    seed: int


def sign_flip_p(differences: np.ndarray, permutations: int, seed: int) -> float:
    """Two-sided p of a mean difference under random swaps within each pair: (count of |mean| ≥ |observed| + 1) /
    (permutations + 1), each pair's sign flipped with probability one half."""
    observed = abs(differences.mean())
    rng = np.random.default_rng(seed)
    extreme, drawn = 0, 0
    while drawn < permutations:
        block = min(_FLIP_BLOCK, permutations - drawn)
        signs = rng.integers(0, 2, size=(block, differences.size)) * 2 - 1
        extreme += int((np.abs(signs @ differences) / differences.size >= observed - TOLERANCE).sum())
        drawn += block
    return (extreme + 1) / (permutations + 1)


def originality_comparison(
    pairs: Iterable[tuple[Hashable, Mapping[str, float] | None, Mapping[str, float] | None]],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    permutations: int = PERMUTATIONS,
    seed: int = DEFAULT_SEED,
) -> OriginalityComparison:
    """Differences selected minus excluded, one per pair, on each dimension.

    Each pair is ``(task, selected's scores, excluded's scores)``, scores being {dimension: the mean of its judges'
    1–10 scores} (None: not scored). A pair missing a score on any dimension is left out of all three and counted.
    Interval: the mean difference as a ratio of sums over task resamples (the documented index matrix). p: a
    two-sided permutation test that swaps the two hypotheses of each pair (a sign flip within its task)
    ``permutations`` times with the seed, p = (count + 1) / (permutations + 1); Holm over the three dimensions.
    """
    tasks, rows, incomplete = [], [], 0
    for task, selected, excluded in pairs:
        if not selected or not excluded or any(selected.get(d) is None or excluded.get(d) is None for d in DIMENSIONS):
            incomplete += 1
            continue
        tasks.append(task)
        rows.append([float(selected[d]) for d in DIMENSIONS] + [float(excluded[d]) for d in DIMENSIONS])
    table = np.asarray(rows, dtype=np.float64).reshape(len(rows), 2 * len(DIMENSIONS))
    chosen, others = table[:, : len(DIMENSIONS)], table[:, len(DIMENSIONS) :]
    differences = chosen - others
    resampled = None
    if resamples and tasks:
        _, sums = task_sums(tasks, np.column_stack([differences, np.ones(len(tasks))]))
        totals = resampled_totals(sums, resamples, seed)
        resampled = ratio(totals[:, : len(DIMENSIONS)], totals[:, [-1]])
    p_values = [sign_flip_p(differences[:, i], permutations, seed) if tasks else None for i in range(len(DIMENSIONS))]
    adjusted = holm(p_values) if tasks else [None] * len(DIMENSIONS)
    dimensions = tuple(
        DimensionDifference(
            dimension=dimension,
            pairs=len(tasks),
            mean_selected=as_float(chosen[:, i].mean()) if tasks else None,
            mean_excluded=as_float(others[:, i].mean()) if tasks else None,
            difference=estimate(
                differences[:, i].mean() if tasks else np.nan, None if resampled is None else resampled[:, i]
            ),
            p_value=p_values[i],
            holm_p_value=adjusted[i],
        )
        for i, dimension in enumerate(DIMENSIONS)
    )
    return OriginalityComparison(
        pairs=len(tasks),
        incomplete_pairs=incomplete,
        dimensions=dimensions,
        permutations=permutations,
        resamples=resamples,
        seed=seed,
    )

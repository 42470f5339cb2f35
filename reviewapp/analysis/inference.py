"""Holm correction, within-task permutation test and task-clustered logistic regression
(docs/protocol.md#statistics)."""

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf

from reviewapp.analysis._resampling import DEFAULT_SEED, ratio, task_codes

EXACT_MAX_TASKS = 20
PERMUTATIONS = 19_999
# Statistics equal to the observed one up to rounding count as extreme.
TOLERANCE = 1e-12


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the given order: the values of statsmodels ``multipletests(p, method="holm")``.

    The smallest of m p-values is multiplied by m, the next by m − 1, and so on, keeping the adjusted values
    non-decreasing and at most 1. In the benchmark p = 0.0625 as the smallest of three comparisons became 0.188
    (docs/protocol.md#holm-correction). Computed here rather than by calling statsmodels, whose Holm runs a full
    garbage collection on every call (a third of a second on a statistics page holding thousands of objects);
    the tests compare the two.
    """
    values = np.asarray(list(pvalues), dtype=np.float64)
    if values.size == 0:
        return []
    order = np.argsort(values, kind="stable")
    adjusted = np.minimum(np.maximum.accumulate(values[order] * np.arange(values.size, 0, -1)), 1.0)
    result = np.empty_like(adjusted)
    result[order] = adjusted
    return [float(p) for p in result]


@dataclass(frozen=True)
class PermutationTest:
    """Two-sided within-task permutation test of the difference in precision between two selection rules."""

    difference: float  # precision of rule A minus precision of rule B
    p_value: float
    method: str  # "exact" or "sampled"
    tasks: int
    differing_tasks: int  # tasks where the two rules' results differ: only these are swapped
    permutations: int  # 2^D for the exact test, else the number of random swaps
    extreme: int  # permutations with |difference| at least the observed one (the identity included if exact)
    undefined: int  # permutations in which a rule selected nothing, never counted as extreme
    smallest_p: float | None  # exact test only: the smallest p-value this set of tasks can give
    seed: int | None  # sampled test only


def _rule_totals(rows: Iterable[tuple[Hashable, bool, bool | None]]) -> dict[Hashable, tuple[float, float]]:
    totals: dict[Hashable, tuple[float, float]] = {}
    for task, selected, match in rows:
        selected_judged = bool(selected) and match is not None
        count, matches = totals.get(task, (0, 0))
        totals[task] = (count + selected_judged, matches + (selected_judged and bool(match)))
    return totals


def permutation_test_within_tasks(
    rows_a: Iterable[tuple[Hashable, bool, bool | None]],
    rows_b: Iterable[tuple[Hashable, bool, bool | None]],
    *,
    exact_max_tasks: int = EXACT_MAX_TASKS,
    permutations: int = PERMUTATIONS,
    seed: int = DEFAULT_SEED,
) -> PermutationTest:
    """Do two selection rules differ in precision? Two-sided permutation test that swaps the rules within tasks.

    See docs/protocol.md#permutation-test-within-tasks. Rows are ``(task, selected, match)`` as for
    ``selection_summary`` (not-judged hypotheses, match None, are left out); for comparing two generations pass
    every hypothesis with selected True, making precision the match rate. The statistic is precision of A minus
    precision of B, each a ratio of sums over tasks. Under the null the two rules are exchangeable within a task, so
    each task's pair of results (selected, matches) may be swapped. Only the D tasks where the results differ
    change anything. When D ≤ ``exact_max_tasks`` all 2^D swaps are enumerated and p = (swaps with |difference| ≥
    |observed|) / 2^D, the identity included; otherwise ``permutations`` (19,999) random swaps are drawn with the
    seed and p = (count + 1) / (permutations + 1). A swap that leaves a rule with nothing selected has no
    difference: it is counted in ``undefined`` and never as extreme. For the exact test ``smallest_p`` is the
    p-value of the most extreme swap, the floor this set of tasks allows (0.0234 for the benchmark's eight
    differing tasks).
    """
    return permutation_test_of_totals(
        _rule_totals(rows_a),
        _rule_totals(rows_b),
        exact_max_tasks=exact_max_tasks,
        permutations=permutations,
        seed=seed,
    )


def permutation_test_of_totals(
    totals_a: Mapping[Hashable, tuple[float, float]],
    totals_b: Mapping[Hashable, tuple[float, float]],
    *,
    exact_max_tasks: int = EXACT_MAX_TASKS,
    permutations: int = PERMUTATIONS,
    seed: int = DEFAULT_SEED,
) -> PermutationTest:
    """``permutation_test_within_tasks`` from each rule's per-task (selected, matches) totals.

    The totals may be fractional: a ranking's top k with ties at the cut selects each tied hypothesis with weight
    places / tied (docs/analysis.md#ranking-against-the-rule). A task missing from one rule counts (0, 0) there.
    """
    _, tasks = task_codes([*totals_a, *totals_b])
    a = np.asarray([totals_a.get(task, (0, 0)) for task in tasks], dtype=np.float64).reshape(-1, 2)
    b = np.asarray([totals_b.get(task, (0, 0)) for task in tasks], dtype=np.float64).reshape(-1, 2)
    sums_a, sums_b = a.sum(axis=0), b.sum(axis=0)
    observed = float(ratio(sums_a[1], sums_a[0]) - ratio(sums_b[1], sums_b[0]))
    if np.isnan(observed):
        raise ValueError("a rule selected no judged hypothesis: its precision, and the difference, are undefined")
    differing = np.flatnonzero((a != b).any(axis=1))
    shift = (b - a)[differing]  # what rule A gains when a task is swapped; rule B loses the same
    exact = differing.size <= exact_max_tasks
    if exact:
        # Row i swaps the tasks whose bits are set in i: each task doubles the table, unswapped then swapped.
        moved = np.zeros((1, 2))
        for task_shift in shift:
            moved = np.concatenate([moved, moved + task_shift])
    else:
        moved = np.random.default_rng(seed).integers(0, 2, size=(permutations, differing.size)) @ shift
    permuted_a, permuted_b = sums_a + moved, sums_b - moved
    differences = ratio(permuted_a[:, 1], permuted_a[:, 0]) - ratio(permuted_b[:, 1], permuted_b[:, 0])
    defined = np.abs(differences[np.isfinite(differences)])
    extreme = int((defined >= abs(observed) - TOLERANCE).sum())
    if exact:
        p_value = extreme / moved.shape[0]
        smallest_p = float((defined >= defined.max() - TOLERANCE).sum() / moved.shape[0])
    else:
        p_value = (extreme + 1) / (permutations + 1)
        smallest_p = None
    return PermutationTest(
        difference=observed,
        p_value=float(p_value),
        method="exact" if exact else "sampled",
        tasks=len(tasks),
        differing_tasks=int(differing.size),
        permutations=int(moved.shape[0]),
        extreme=extreme,
        undefined=int(differences.size - defined.size),
        smallest_p=smallest_p,
        seed=None if exact else seed,
    )


@dataclass(frozen=True)
class Coefficient:
    """One term of a logistic regression, with task-clustered Wald interval and p-value."""

    estimate: float
    std_error: float
    z: float
    p_value: float
    low: float
    high: float
    odds_ratio: float
    odds_ratio_low: float
    odds_ratio_high: float


@dataclass(frozen=True)
class LogisticFit:
    """A logistic regression with standard errors clustered by task."""

    formula: str
    observations: int
    dropped: int  # rows left out for a missing value
    clusters: int
    coefficients: dict[str, Coefficient]
    converged: bool


def logistic_clustered(rows: Iterable[Mapping], formula: str, cluster: str) -> LogisticFit:
    """Logistic regression with standard errors clustered by task, in statsmodels
    (docs/protocol.md#clustered-logistic-regression).

    ``rows`` are dicts, one per hypothesis; ``formula`` is a patsy formula such as
    ``"match ~ selected + clarity"`` (columns holding only True/False/None become 1/0/missing); ``cluster`` names the
    column of the cluster (the task, or generator × task). Rows with a missing value in any variable of
    the formula or in the cluster are dropped and counted. The fit is
    ``smf.logit(formula, data).fit(cov_type="cluster", cov_kwds={"groups": cluster})``: sandwich covariance summed
    over clusters with statsmodels' small-sample correction G/(G − 1) · (N − 1)/(N − K). Intervals are Wald 95%;
    odds ratios are their exponentials.
    """
    frame = pd.DataFrame(list(rows))
    if cluster not in frame:
        raise ValueError(f"no column {cluster!r} to cluster on")
    for column in frame.columns:
        present = frame[column].dropna()
        if len(present) and present.map(lambda value: isinstance(value, bool | np.bool_)).all():
            frame[column] = frame[column].map({True: 1.0, False: 0.0})
    total = len(frame)
    frame = frame[frame[cluster].notna()]
    model = smf.logit(formula, data=frame, missing="drop")
    groups = pd.factorize(frame.loc[model.data.row_labels, cluster])[0]
    fit = model.fit(disp=0, cov_type="cluster", cov_kwds={"groups": groups})
    interval = fit.conf_int()
    coefficients = {
        name: Coefficient(
            estimate=float(fit.params[name]),
            std_error=float(fit.bse[name]),
            z=float(fit.tvalues[name]),
            p_value=float(fit.pvalues[name]),
            low=float(interval.loc[name, 0]),
            high=float(interval.loc[name, 1]),
            odds_ratio=float(np.exp(fit.params[name])),
            odds_ratio_low=float(np.exp(interval.loc[name, 0])),
            odds_ratio_high=float(np.exp(interval.loc[name, 1])),
        )
        for name in fit.params.index
    }
    return LogisticFit(
        formula=formula,
        observations=int(fit.nobs),
        dropped=total - int(fit.nobs),
        clusters=int(groups.max() + 1) if len(groups) else 0,
        coefficients=coefficients,
        converged=bool(fit.mle_retvals.get("converged", True)),
    )

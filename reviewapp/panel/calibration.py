"""Calibration of the AI review panel against blinded human reviews (docs/protocol.md#calibration), and its
development diagnostics against a fresh-context AI reference (docs/protocol.md#fresh-context-references): pure
functions of per-proposal values, no database.

Every figure has a 95% percentile interval from resampling whole research tasks (the index matrix of
reviewapp.analysis's task bootstrap, so the same resample draws the same tasks for every figure). Human "can't judge"
and AI unknown scores are left out of a pair, never scored.
"""

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import spearmanr

from reviewapp.analysis._resampling import DEFAULT_SEED, estimate, resample_counts, task_codes
from reviewapp.panel.profile import DIMENSION_KEYS, ROLES, WEIGHTS, is_known

RESAMPLES = 2000
# The human criterion closest to each AI dimension; feasibility and actionability have none.
CLOSEST_CRITERION = {
    "importance": "importance",
    "novelty": "advance_over_known_work",
    "grounding": "plausible_evidence_bounded",
    "data_resolvability": "data_fit",
    "alternatives": "alternative_explanations",
    "falsifiability": "informative_results",
}
REJECT = "reject"
# A within-task correlation needs this many proposals of the task with both values.
MIN_TASK_PAIRS = 3


@dataclass(frozen=True)
class Unit:
    """One proposal: its task, the panel's values and its submitted human reviews."""

    task: Hashable
    q: float | None
    conservative: float | None  # s, None when the proposal was never compared
    medians: Mapping[str, float | None]
    overall: Sequence[int]
    recommendations: Sequence[str]
    criteria: Mapping[str, Sequence[int]]  # "can't judge" already left out


@dataclass(frozen=True)
class Figure:
    estimate: float | None
    low: float | None
    high: float | None
    n: int  # proposals in the computation
    undefined_resamples: int = 0
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "n": self.n,
            "undefined_resamples": self.undefined_resamples,
            **self.extra,
        }


@dataclass(frozen=True)
class Calibration:
    proposals: int  # with a panel and at least one submitted human review
    tasks: int
    resamples: int
    seed: int
    q_vs_overall: Figure
    dimensions: dict[str, Figure]  # AI dimension → its median against the closest human criterion's mean
    s_vs_overall_within_tasks: Figure
    reject_top_quarter: Figure
    reject_bottom_quarter: Figure


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's ρ (scipy's spearmanr: ties get average ranks); NaN when undefined."""
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(spearmanr(x, y).statistic)


# Resamples at a time when computing resampled coefficients (bounds the memory of the weight matrices).
_CHUNK = 250


def _weighted_ranks(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Average ranks each unit would get in every resample, where unit i appears weights[r, i] times: the units
    below it plus (its tie group's size + 1) / 2. Shape (resamples, units)."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    new_group = np.r_[True, ordered[1:] != ordered[:-1]]
    group_of = np.cumsum(new_group) - 1
    group_weights = np.add.reduceat(weights[:, order], np.flatnonzero(new_group), axis=1)
    group_ranks = np.cumsum(group_weights, axis=1) - group_weights + (group_weights + 1) / 2
    ranks = np.empty(weights.shape)
    ranks[:, order] = group_ranks[:, group_of]
    return ranks


def resampled_spearman(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Spearman's ρ of every resample given as unit weights (resamples × units), as if each unit were repeated its
    weight times; NaN where undefined."""
    result = np.empty(len(weights))
    for start in range(0, len(weights), _CHUNK):
        w = weights[start : start + _CHUNK].astype(float)
        rx, ry = _weighted_ranks(x, w), _weighted_ranks(y, w)
        total = w.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            dx = rx - (w * rx).sum(axis=1, keepdims=True) / total
            dy = ry - (w * ry).sum(axis=1, keepdims=True) / total
            covariance = (w * dx * dy).sum(axis=1)
            spread = np.sqrt((w * dx * dx).sum(axis=1) * (w * dy * dy).sum(axis=1))
            rho = covariance / spread
        rho[(spread <= 1e-12) | (total[:, 0] < 2)] = np.nan
        result[start : start + _CHUNK] = np.clip(rho, -1, 1)
    return result


def _mean(values: Sequence[int]) -> float | None:
    return float(np.mean(values)) if len(values) else None


class _Resampler:
    """Whole-task resamples of the units: each resample weights every unit by the count of its task."""

    def __init__(self, units: Sequence["Unit | ReferenceUnit"], resamples: int, seed: int):
        codes, order = task_codes(unit.task for unit in units)
        self.codes, self.tasks = codes, len(order)
        self.counts = resample_counts(len(order), resamples, seed).astype(np.intp) if resamples and order else None

    def spearman_figure(self, indices: list[int], x: list[float], y: list[float]) -> Figure:
        x_array, y_array = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        resampled = None
        if self.counts is not None and indices:
            resampled = resampled_spearman(x_array, y_array, self.counts[:, self.codes[indices]])
        result = estimate(spearman(x_array, y_array), resampled)
        return Figure(result.value, result.low, result.high, len(indices), result.undefined_resamples)


def _spearman_figure(resampler: _Resampler, units: Sequence["Unit | ReferenceUnit"], x_of, y_of) -> Figure:
    indices, x, y = [], [], []
    for index, unit in enumerate(units):
        a, b = x_of(unit), y_of(unit)
        if a is not None and b is not None:
            indices.append(index)
            x.append(a)
            y.append(b)
    return resampler.spearman_figure(indices, x, y)


def _within_tasks(resampler: _Resampler, units: Sequence[Unit]) -> Figure:
    """The mean of per-task Spearman coefficients of s with the mean human overall score, weighting each task by its
    proposals with both values; tasks with fewer than three such proposals or a constant side are left out."""
    by_task: dict[int, tuple[list[float], list[float]]] = {}
    for unit, code in zip(units, resampler.codes, strict=True):
        mean = _mean(unit.overall)
        if unit.conservative is not None and mean is not None:
            xs, ys = by_task.setdefault(int(code), ([], []))
            xs.append(unit.conservative)
            ys.append(mean)
    size, weighted = np.zeros(resampler.tasks), np.zeros(resampler.tasks)
    for code, (xs, ys) in by_task.items():
        rho = spearman(np.asarray(xs), np.asarray(ys)) if len(xs) >= MIN_TASK_PAIRS else float("nan")
        if not np.isnan(rho):
            size[code], weighted[code] = len(xs), len(xs) * rho
    total = size.sum()
    point = weighted.sum() / total if total else float("nan")
    resampled = None
    if resampler.counts is not None:
        sizes, sums = resampler.counts @ size, resampler.counts @ weighted
        resampled = np.divide(sums, sizes, out=np.full(len(sizes), np.nan), where=sizes > 0)
    result = estimate(point, resampled)
    tasks_used = int((size > 0).sum())
    return Figure(result.value, result.low, result.high, int(total), result.undefined_resamples, {"tasks": tasks_used})


def _reject_share(q: np.ndarray, rejects: np.ndarray, recommendations: np.ndarray, top: bool) -> float:
    """The share of human `reject` among the reviews of proposals in the top (or bottom) quarter of Q."""
    if len(q) == 0:
        return float("nan")
    cut = np.quantile(q, 0.75 if top else 0.25)
    inside = q >= cut if top else q <= cut
    reviews = recommendations[inside].sum()
    return float(rejects[inside].sum() / reviews) if reviews else float("nan")


def _quarter(resampler: _Resampler, units: Sequence[Unit], top: bool) -> Figure:
    indices = [i for i, unit in enumerate(units) if unit.q is not None and len(unit.recommendations)]
    q = np.asarray([units[i].q for i in indices], dtype=float)
    rejects = np.asarray([sum(r == REJECT for r in units[i].recommendations) for i in indices], dtype=float)
    reviews = np.asarray([len(units[i].recommendations) for i in indices], dtype=float)
    point = _reject_share(q, rejects, reviews, top)
    resampled = None
    if resampler.counts is not None and indices:
        weights = resampler.counts[:, resampler.codes[indices]]
        resampled = np.array(
            [_reject_share(np.repeat(q, row), np.repeat(rejects, row), np.repeat(reviews, row), top) for row in weights]
        )
    result = estimate(point, resampled)
    extra: dict[str, float | None]
    if len(q):
        cut = np.quantile(q, 0.75 if top else 0.25)
        inside = q >= cut if top else q <= cut
        extra = {"reviews": int(reviews[inside].sum()), "rejects": int(rejects[inside].sum()), "cut": float(cut)}
    else:
        inside, extra = np.zeros(0, dtype=bool), {"reviews": 0, "rejects": 0, "cut": None}
    return Figure(result.value, result.low, result.high, int(inside.sum()), result.undefined_resamples, extra)


def calibration(units: Sequence[Unit], *, resamples: int = RESAMPLES, seed: int = DEFAULT_SEED) -> Calibration:
    """Agreement of the panel with the human reviews of the same proposals (those with a panel review and at least
    one submitted human review)."""
    units = [unit for unit in units if len(unit.overall)]
    resampler = _Resampler(units, resamples, seed)
    dimensions = {
        dimension: _spearman_figure(
            resampler,
            units,
            lambda unit, d=dimension: unit.medians.get(d),
            lambda unit, c=criterion: _mean(unit.criteria[c]),
        )
        for dimension, criterion in CLOSEST_CRITERION.items()
    }
    return Calibration(
        proposals=len(units),
        tasks=len({unit.task for unit in units}),
        resamples=resamples,
        seed=seed,
        q_vs_overall=_spearman_figure(resampler, units, lambda unit: unit.q, lambda unit: _mean(unit.overall)),
        dimensions=dimensions,
        s_vs_overall_within_tasks=_within_tasks(resampler, units),
        reject_top_quarter=_quarter(resampler, units, top=True),
        reject_bottom_quarter=_quarter(resampler, units, top=False),
    )


# Development diagnostics: each role against the fresh-context reference ------------------------------------------


@dataclass(frozen=True)
class ReferenceUnit:
    """One proposal with a valid reference review: the reference's scores and each role's valid review's scores."""

    task: Hashable
    reference: Mapping[str, int | str]
    roles: Mapping[str, Mapping[str, int | str]]  # role → its scores; a failed or missing role is absent


@dataclass(frozen=True)
class RoleAgreement:
    role: str
    reviews: int  # proposals with both this role's and the reference's valid review
    weighted: Figure  # Spearman's ρ of the role's weighted score with the reference's
    dimensions: dict[str, Figure]  # per dimension: Spearman's ρ of the role's score with the reference's
    absolute_difference: Figure  # mean |role − reference| over the dimensions both scored with a number


@dataclass(frozen=True)
class ReferenceCalibration:
    proposals: int  # with a valid reference review
    tasks: int
    resamples: int
    seed: int
    roles: dict[str, RoleAgreement]


def weighted_score(scores: Mapping[str, int | str]) -> float | None:
    """One review's weighted mean on the 1–10 scale (the weights of Q), only when all eight scores are numbers."""
    if not all(is_known(scores.get(key)) for key in DIMENSION_KEYS):
        return None
    return sum(WEIGHTS[key] * int(scores[key]) for key in DIMENSION_KEYS) / 100


def _known(score) -> float | None:
    return float(score) if is_known(score) else None


def _absolute_difference(resampler: _Resampler, units: Sequence[ReferenceUnit], role: str) -> Figure:
    """The mean absolute difference over every (proposal, dimension) both scored with a number; a resample weights
    each proposal's differences by the count of its task."""
    indices, sums, counts = [], [], []
    for index, unit in enumerate(units):
        scores = unit.roles.get(role)
        if scores is None:
            continue
        differences = [
            abs(int(scores[key]) - int(unit.reference[key]))
            for key in DIMENSION_KEYS
            if is_known(scores.get(key)) and is_known(unit.reference.get(key))
        ]
        if differences:
            indices.append(index)
            sums.append(float(sum(differences)))
            counts.append(len(differences))
    total = sum(counts)
    point = sum(sums) / total if total else float("nan")
    resampled = None
    if resampler.counts is not None and indices:
        weights = resampler.counts[:, resampler.codes[indices]]
        pairs = weights @ np.asarray(counts, dtype=float)
        resampled = np.divide(weights @ np.asarray(sums), pairs, out=np.full(len(weights), np.nan), where=pairs > 0)
    result = estimate(point, resampled)
    return Figure(result.value, result.low, result.high, len(indices), result.undefined_resamples, {"pairs": total})


def reference_calibration(
    units: Sequence[ReferenceUnit], *, resamples: int = RESAMPLES, seed: int = DEFAULT_SEED
) -> ReferenceCalibration:
    """Each role's agreement with the fresh-context reference on the same packets (development diagnostics, apart
    from the human calibration): weighted scores and each dimension by Spearman's ρ, and the mean absolute
    difference of the scores, with whole-task intervals. Unknown and inapplicable are left out of a pair."""
    resampler = _Resampler(units, resamples, seed)
    roles = {}
    for role in ROLES:
        roles[role] = RoleAgreement(
            role=role,
            reviews=sum(role in unit.roles for unit in units),
            weighted=_spearman_figure(
                resampler,
                units,
                lambda unit, role=role: weighted_score(unit.roles[role]) if role in unit.roles else None,
                lambda unit: weighted_score(unit.reference),
            ),
            dimensions={
                key: _spearman_figure(
                    resampler,
                    units,
                    lambda unit, role=role, key=key: _known(unit.roles.get(role, {}).get(key)),
                    lambda unit, key=key: _known(unit.reference.get(key)),
                )
                for key in DIMENSION_KEYS
            },
            absolute_difference=_absolute_difference(resampler, units, role),
        )
    return ReferenceCalibration(
        proposals=len(units),
        tasks=len({unit.task for unit in units}),
        resamples=resamples,
        seed=seed,
        roles=roles,
    )

"""Forecasts as rankings and as yes/no answers: AUC, precision of the top k, balanced accuracy
(docs/protocol.md#forecast-accuracy)."""

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.metrics import accuracy_score, balanced_accuracy_score, roc_auc_score

from reviewapp.analysis._resampling import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Estimate,
    estimate,
    ratio,
    resample_counts,
    resampled_totals,
    task_codes,
    task_sums,
)


def _scored(scores: Sequence[float], labels: Sequence[bool]) -> tuple[np.ndarray, np.ndarray]:
    if len(scores) != len(labels):
        raise ValueError("scores and labels differ in length")
    if any(score is None for score in scores) or any(label is None for label in labels):
        raise ValueError("leave out hypotheses without a numerical score or without a judged outcome")
    return np.asarray(scores, dtype=np.float64), np.asarray([bool(label) for label in labels])


def auc(scores: Sequence[float], labels: Sequence[bool]) -> float | None:
    """Area under the ROC curve of a numerical score against the match outcome (sklearn ``roc_auc_score``).

    The probability that a matching hypothesis gets a higher score than a non-matching one, tied
    scores counting 0.5. Hypotheses without a score are not ranked: leave them out (None raises ValueError).
    None when only one outcome occurs.
    """
    scores, labels = _scored(scores, labels)
    if labels.all() or not labels.any():
        return None
    return float(roc_auc_score(labels, scores))


@dataclass(frozen=True)
class AucEstimate:
    """AUC with its task-resampled interval (docs/analysis.md#auc-over-task-resamples)."""

    hypotheses: int
    matches: int
    auc: Estimate
    resamples: int
    seed: int


def _resampled_auc(counts: np.ndarray, positives: np.ndarray, negatives: np.ndarray) -> np.ndarray:
    """The AUC of every resample, from per-task histograms over the distinct scores in ascending order.

    A resample weighting task t by c_t has positives p = cᵀP and negatives n = cᵀN per score; its AUC is
    Σ_v p[v] · (n below v + n[v] / 2) / (Σp · Σn). The numerator is bilinear in c: cᵀ W c with the task × task
    matrix W = P (cumsum(N) − N / 2)ᵀ, so no (resamples × scores) table is ever formed. NaN where one outcome has
    no weight.
    """
    below_or_tied = np.cumsum(negatives, axis=1) - 0.5 * negatives
    wins = ((counts @ (positives @ below_or_tied.T)) * counts).sum(axis=1)
    return ratio(wins, (counts @ positives.sum(axis=1)) * (counts @ negatives.sum(axis=1)))


def auc_estimate(
    tasks: Sequence[Hashable],
    scores: Sequence[float],
    labels: Sequence[bool],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> AucEstimate:
    """AUC of a numerical score against the match, with a percentile interval over resamples of whole tasks.

    The point value is ``auc(scores, labels)`` (sklearn). A resample repeats each task's hypotheses as often as the
    task is drawn (the documented index matrix of ``reviewapp.analysis._resampling``), which gives each hypothesis a
    weight; the AUC of the weighted hypotheses (ties one half) is computed from per-task histograms of the scores,
    so no resample is materialised. A resample with only one outcome is undefined and counted.
    """
    values, labels_array = _scored(scores, labels)
    point = auc(values, labels_array)
    resampled = None
    if resamples and len(values):
        codes, order = task_codes(tasks)
        if len(codes) != len(values):
            raise ValueError("give one task per hypothesis")
        distinct, value_codes = np.unique(values, return_inverse=True)
        per_task = np.zeros((2, len(order), distinct.size))
        np.add.at(per_task, (labels_array.astype(np.intp), codes, value_codes), 1)
        resampled = _resampled_auc(resample_counts(len(order), resamples, seed), per_task[1], per_task[0])
    return AucEstimate(
        hypotheses=int(values.size),
        matches=int(labels_array.sum()),
        auc=estimate(np.nan if point is None else point, resampled),
        resamples=resamples,
        seed=seed,
    )


@dataclass(frozen=True)
class PrecisionAtK:
    """Expected matches among the k highest-scored hypotheses, ties at the cut taken in expectation."""

    k: int
    expected_matches: float
    precision: float  # expected_matches / k
    above_cut: int  # hypotheses scored strictly above the score at rank k, all in the list
    tied_at_cut: int  # hypotheses sharing the score at rank k, of which k − above_cut enter the list
    tied_matches: int


def expected_precision_at_k(scores: Sequence[float], labels: Sequence[bool], k: int) -> PrecisionAtK:
    """Precision of the k highest-scored hypotheses, with ties at the cut handled in expectation.

    All hypotheses scored above the score at rank k enter the list; the remaining places go to hypotheses tied at
    that score, chosen at random, so they contribute (places × matches in the tied group / size of the tied
    group). precision = expected matches / k.
    """
    scores, labels = _scored(scores, labels)
    if not 0 < k <= scores.size:
        raise ValueError(f"k must be between 1 and the number of ranked hypotheses ({scores.size})")
    cut = np.sort(scores)[::-1][k - 1]
    above, tied = scores > cut, scores == cut
    places = k - int(above.sum())
    expected = labels[above].sum() + places * labels[tied].sum() / tied.sum()
    return PrecisionAtK(
        k=k,
        expected_matches=float(expected),
        precision=float(expected / k),
        above_cut=int(above.sum()),
        tied_at_cut=int(tied.sum()),
        tied_matches=int(labels[tied].sum()),
    )


def top_k_weights(scores: Sequence[float], k: int) -> np.ndarray:
    """Each hypothesis's chance of entering the top k, in the order given: 1 above the score at rank k, places /
    tied for those tied at it, 0 below (the list ``expected_precision_at_k`` takes in expectation)."""
    values = np.asarray(scores, dtype=np.float64)
    if not 0 < k <= values.size:
        raise ValueError(f"k must be between 1 and the number of ranked hypotheses ({values.size})")
    cut = np.sort(values)[::-1][k - 1]
    above, tied = values > cut, values == cut
    return np.where(above, 1.0, np.where(tied, (k - above.sum()) / tied.sum(), 0.0))


@dataclass(frozen=True)
class BalancedAccuracy:
    """Yes/no forecasts against confirmed/refuted statements (docs/protocol.md#forecast-accuracy)."""

    statements: int
    confirmed: int
    refuted: int
    balanced_set: bool  # as many confirmed as refuted: balanced accuracy equals accuracy
    balanced_accuracy: Estimate
    accuracy: Estimate
    sensitivity: Estimate
    specificity: Estimate
    resamples: int
    seed: int | None


def balanced_accuracy(
    truth: Sequence[bool],
    predicted: Sequence[bool],
    groups: Sequence[Hashable] | None = None,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> BalancedAccuracy:
    """Balanced accuracy of yes/no forecasts (sklearn ``balanced_accuracy_score``).

    Balanced accuracy is half the sum of sensitivity (confirmed statements answered yes) and specificity (refuted
    statements answered no); on a 50/50 set it equals the share of all correct answers. With ``groups`` (the
    article each statement comes from, each article giving a confirmed and a reversed statement) the intervals
    come from ``resamples`` resamples of whole articles, percentile method; without groups only point values.
    """
    if len(truth) != len(predicted) or (groups is not None and len(groups) != len(truth)):
        raise ValueError("truth, predicted and groups must have one entry per statement")
    truth_array = np.asarray([bool(v) for v in truth])
    predicted_array = np.asarray([bool(v) for v in predicted])
    point = {
        "balanced_accuracy": balanced_accuracy_score(truth_array, predicted_array),
        "accuracy": accuracy_score(truth_array, predicted_array),
        "sensitivity": ratio((truth_array & predicted_array).sum(), truth_array.sum()),
        "specificity": ratio((~truth_array & ~predicted_array).sum(), (~truth_array).sum()),
    }
    resampled = {}
    if groups is not None and resamples:
        columns = np.column_stack(
            [truth_array & predicted_array, truth_array, ~truth_array & ~predicted_array, ~truth_array]
        )
        _, sums = task_sums(groups, columns)
        totals = resampled_totals(sums, resamples, seed)
        sensitivity, specificity = ratio(totals[:, 0], totals[:, 1]), ratio(totals[:, 2], totals[:, 3])
        resampled = {
            "balanced_accuracy": (sensitivity + specificity) / 2,
            "accuracy": (totals[:, 0] + totals[:, 2]) / (totals[:, 1] + totals[:, 3]),
            "sensitivity": sensitivity,
            "specificity": specificity,
        }
    confirmed = int(truth_array.sum())
    return BalancedAccuracy(
        statements=int(truth_array.size),
        confirmed=confirmed,
        refuted=int(truth_array.size - confirmed),
        balanced_set=2 * confirmed == truth_array.size,
        **{name: estimate(value, resampled.get(name)) for name, value in point.items()},
        resamples=resamples if resampled else 0,
        seed=seed if resampled else None,
    )


@dataclass(frozen=True)
class ForecastMeasures:
    """Yes/no forecasts of hypotheses against their match with the paper, a non-match being the negative outcome
    (docs/analysis.md#instruction-comparison)."""

    hypotheses: int
    matches: int
    positives: int  # yes answers
    true_positives: int
    true_negatives: int
    sensitivity: Estimate  # matches answered yes / matches
    specificity: Estimate  # non-matches answered no / non-matches
    precision: Estimate  # matches among the yes answers (positive predictive value)
    negative_predictive_value: Estimate  # non-matches among the no answers
    resamples: int
    seed: int | None


def forecast_measures(
    tasks: Sequence[Hashable],
    answers: Sequence[bool],
    matches: Sequence[bool],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> ForecastMeasures:
    """Sensitivity, specificity, precision and negative predictive value of yes/no forecasts, each a ratio of sums
    with the percentile interval of ``resamples`` resamples of whole tasks (docs/protocol.md#task-bootstrap)."""
    if not len(tasks) == len(answers) == len(matches):
        raise ValueError("tasks, answers and matches must have one entry per hypothesis")
    if any(value is None for value in (*answers, *matches)):
        raise ValueError("leave out hypotheses without an answer or without a judged outcome")
    answer = np.asarray([bool(value) for value in answers])
    match = np.asarray([bool(value) for value in matches])
    # true positives, matches, true negatives, non-matches, yes answers, no answers
    columns = np.column_stack([answer & match, match, ~answer & ~match, ~match, answer, ~answer]).astype(np.float64)
    totals = columns.sum(axis=0)
    resampled = None
    if resamples and len(tasks):
        _, sums = task_sums(tasks, columns)
        resampled = resampled_totals(sums, resamples, seed)
    pairs = {"sensitivity": (0, 1), "specificity": (2, 3), "precision": (0, 4), "negative_predictive_value": (2, 5)}
    return ForecastMeasures(
        hypotheses=int(answer.size),
        matches=int(totals[1]),
        positives=int(totals[4]),
        true_positives=int(totals[0]),
        true_negatives=int(totals[2]),
        **{
            name: estimate(
                ratio(totals[top], totals[bottom]),
                None if resampled is None else ratio(resampled[:, top], resampled[:, bottom]),
            )
            for name, (top, bottom) in pairs.items()
        },
        resamples=resamples if resampled is not None else 0,
        seed=seed if resampled is not None else None,
    )

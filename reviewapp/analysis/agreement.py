"""Agreement between raters: judges, human reviewers and repeated forecast runs (docs/protocol.md#agreement)."""

import itertools
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import krippendorff
import numpy as np
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats import inter_rater

from reviewapp import protocol
from reviewapp.analysis._resampling import as_float

JUDGE_LABELS = list(range(6))


def _paired(a: Sequence, b: Sequence) -> tuple[list, list]:
    a, b = list(a), list(b)
    if len(a) != len(b):
        raise ValueError(f"the two raters have {len(a)} and {len(b)} values; pair them item by item")
    if any(value is None for value in a + b):
        raise ValueError("missing values: keep only the items both raters scored")
    return a, b


def _judge_scale(values: Sequence) -> list[int]:
    if any(isinstance(v, bool) or v not in JUDGE_LABELS for v in values):
        raise ValueError("judge scores are integers from 0 to 5")
    return [int(v) for v in values]


def _kappa(a, b, **options) -> float | None:
    with np.errstate(divide="ignore", invalid="ignore"):
        return as_float(cohen_kappa_score(a, b, **options))


def cohen_kappa(a: Sequence, b: Sequence, threshold: int | None = 3) -> float | None:
    """Cohen's kappa of two raters on the same items (sklearn ``cohen_kappa_score``).

    A judge's vote is positive when the score is ≥ ``threshold`` (3 for the primary outcome, 4 for the
    strict one); kappa is 1 when the votes agree completely and 0 at the agreement expected for independent votes
    with each judge's own share of positive votes. ``threshold=None`` compares the values as given (yes/no
    forecasts of two runs). Returns None when kappa is undefined: both raters gave one and the same vote throughout.
    """
    a, b = _paired(a, b)
    if threshold is not None:
        a, b = [v >= threshold for v in a], [v >= threshold for v in b]
    labels = sorted(set(a) | set(b))
    if len(labels) < 2:
        return None
    return _kappa(a, b, labels=labels)


def weighted_kappa(a: Sequence[int], b: Sequence[int]) -> float | None:
    """Quadratic-weighted kappa of two judges' 0–5 scores (docs/protocol.md#judge-agreement).

    sklearn ``cohen_kappa_score(a, b, weights="quadratic", labels=list(range(6)))``: disagreement weights are
    (i − j)² over the whole 0–5 scale. The six labels are always passed: without them an unused score in the middle
    of the scale would close the gap around it and shift every weight. None when undefined (a single score used
    by both judges).
    """
    a, b = _paired(a, b)
    a, b = _judge_scale(a), _judge_scale(b)
    if len(set(a) | set(b)) < 2:
        return None
    return _kappa(a, b, weights="quadratic", labels=JUDGE_LABELS)


def fleiss_kappa(table_rows: Iterable[Sequence[int]], threshold: int | None = None) -> float | None:
    """Fleiss' kappa of the same number of raters per item (statsmodels; docs/protocol.md#vote-distribution).

    Each row holds one item's scores from its raters (the three other-company judges of an outcome; the raters may
    differ from item to item). Scores 0–5 are counted per category with
    ``statsmodels.stats.inter_rater.aggregate_raters(rows, n_cat=6)`` and passed to ``fleiss_kappa``. With
    ``threshold`` the scores first become votes (score ≥ threshold) and the two votes are the categories, as in
    the vote distribution of the deciding judges. None when undefined (every rating in one category).
    """
    rows = [list(row) for row in table_rows]
    if not rows or len({len(row) for row in rows}) != 1 or len(rows[0]) < 2:
        raise ValueError("Fleiss' kappa needs items with the same number (at least two) of ratings each")
    rows = [_judge_scale(row) for row in rows]
    n_categories = len(JUDGE_LABELS)
    if threshold is not None:
        rows, n_categories = [[int(score >= threshold) for score in row] for row in rows], 2
    counts, _ = inter_rater.aggregate_raters(np.asarray(rows, dtype=int), n_cat=n_categories)
    with np.errstate(divide="ignore", invalid="ignore"):
        return as_float(inter_rater.fleiss_kappa(counts, method="fleiss"))


def spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman's rank correlation of two raters' scores (scipy ``spearmanr``, ties get mean ranks).

    None when undefined (one rater gave the same score throughout).
    """
    a, b = _paired(a, b)
    if len(set(a)) < 2 or len(set(b)) < 2:
        return None
    return as_float(spearmanr(a, b).statistic)


def krippendorff_alpha(
    units: Iterable[Sequence], level: str = "ordinal", value_domain: Sequence | None = None
) -> float | None:
    """Krippendorff's alpha for raters that differ from item to item (the ``krippendorff`` package).

    Each unit is the list of values its raters gave (any number, any raters; None is left out). Only units with
    two or more values are pairable. alpha = 1 − D_o / D_e, where D_o is the disagreement observed within units
    (coincidence matrix, each pair of values weighted 1 / (m_u − 1)) and D_e the disagreement expected from all
    pairable values pooled; the distance is (c − k)² for "interval", the squared count of values between c and k
    (halving the end points) for "ordinal", and 0/1 for "nominal" (Krippendorff, "Computing Krippendorff's
    alpha-reliability", 2011). ``value_domain`` lists the scale in order (default: the sorted values seen).
    None when fewer than two pairable values exist or every value is the same.
    """
    units = [[value for value in unit if value is not None] for unit in units]
    if value_domain is None:
        value_domain = sorted({value for unit in units for value in unit})
    index = {value: i for i, value in enumerate(value_domain)}
    counts = np.zeros((len(units), len(value_domain)))
    for row, unit in enumerate(units):
        for value in unit:
            if value not in index:
                raise ValueError(f"value {value!r} is outside the value domain {list(value_domain)}")
            counts[row, index[value]] += 1
    pairable = counts[counts.sum(axis=1) >= 2]
    if pairable.sum() < 2 or np.count_nonzero(pairable.sum(axis=0)) < 2:
        return None
    return as_float(
        krippendorff.alpha(value_counts=pairable, value_domain=list(value_domain), level_of_measurement=level)
    )


# What each review field holds: level of measurement and its scale in order (reviewapp/protocol.py).
REVIEW_SCALES = {
    **{field: ("ordinal", (1, 2, 3, 4)) for field in protocol.CRITERION_FIELDS},
    "overall": ("ordinal", tuple(value for value, *_ in protocol.OVERALL_SCALE)),
    "recommendation": ("nominal", tuple(key for key, *_ in protocol.RECOMMENDATIONS)),
    "flaw_verdict": ("ordinal", tuple(key for key, *_ in protocol.FLAW_VERDICTS if key != protocol.CANT_JUDGE)),
}


@dataclass(frozen=True)
class ReviewerAgreement:
    """Agreement of human reviewers on one criterion, reviewers differing from proposal to proposal."""

    criterion: str
    level: str
    value_domain: tuple
    ratings: int  # usable ratings
    cant_judge: int  # "can't judge" answers: excluded from agreement, counted here
    missing: int  # blank answers (drafts)
    proposals: int
    proposals_with_pairs: int  # proposals with two or more usable ratings
    reviewer_pairs: int
    exact_agreement: float | None  # share of within-proposal reviewer pairs giving the same value
    alpha: float | None  # Krippendorff's alpha at ``level``


def reviewer_agreement(reviews: Iterable[Mapping], criterion: str) -> ReviewerAgreement:
    """Agreement of human reviewers on one criterion of the review form (docs/protocol.md#reviewer-agreement).

    Each review is a dict with ``proposal`` and the criterion's field (as stored: "1"–"4" or "cant_judge" for the
    six criteria, 1–5 for ``overall``, the option keys for ``recommendation`` and ``flaw_verdict``). "Can't judge"
    is excluded from agreement and counted in ``cant_judge``; blank values are counted in ``missing``. Reports the
    share of reviewer pairs within a proposal that gave the same value and Krippendorff's alpha (ordinal for the
    ordered scales, nominal for the recommendation), which allows a different set of reviewers per proposal.
    """
    if criterion not in REVIEW_SCALES:
        raise ValueError(f"unknown criterion {criterion!r}; one of {sorted(REVIEW_SCALES)}")
    level, domain = REVIEW_SCALES[criterion]
    # Numeric scales are stored as text ("1"–"4"); compare them as text, keep them as numbers.
    on_scale = {str(option): option for option in domain}
    by_proposal: dict[Hashable, list] = defaultdict(list)
    cant_judge = missing = 0
    for review in reviews:
        value = review.get(criterion)
        values = by_proposal[review["proposal"]]  # a proposal with no usable rating still counts as a proposal
        if value == protocol.CANT_JUDGE:
            cant_judge += 1
        elif value in (None, ""):
            missing += 1
        else:
            if str(value) not in on_scale:
                raise ValueError(f"{criterion} value {value!r} is not on its scale {domain}")
            values.append(on_scale[str(value)])
    pairs = [pair for values in by_proposal.values() for pair in itertools.combinations(values, 2)]
    return ReviewerAgreement(
        criterion=criterion,
        level=level,
        value_domain=domain,
        ratings=sum(len(values) for values in by_proposal.values()),
        cant_judge=cant_judge,
        missing=missing,
        proposals=len(by_proposal),
        proposals_with_pairs=sum(len(values) >= 2 for values in by_proposal.values()),
        reviewer_pairs=len(pairs),
        exact_agreement=sum(x == y for x, y in pairs) / len(pairs) if pairs else None,
        alpha=krippendorff_alpha(by_proposal.values(), level=level, value_domain=domain),
    )


@dataclass(frozen=True)
class RerunAgreement:
    """Agreement of one model's yes/no decisions between two forecast runs of the same requests."""

    hypotheses: int  # forecast in both runs: the items compared
    only_first: int  # forecast in the first run only (or no decision in the second)
    only_second: int
    yes_first: int
    yes_second: int
    yes_both: int  # selected in both runs
    agreement: float | None
    kappa: float | None


def rerun_agreement(
    run_a_votes: Mapping[Hashable, bool | None], run_b_votes: Mapping[Hashable, bool | None]
) -> RerunAgreement:
    """Agreement between two forecast runs of the same requests, per hypothesis (docs/protocol.md#re-run-agreement).

    Each run maps a hypothesis to the model's decision (True = yes, False = no, None = no forecast). Only the
    hypotheses with a decision in both runs are compared; the others are counted. Reports the share of equal
    decisions and Cohen's kappa on yes/no (sklearn), None when undefined.
    """
    first = {h: bool(v) for h, v in run_a_votes.items() if v is not None}
    second = {h: bool(v) for h, v in run_b_votes.items() if v is not None}
    common = [h for h in first if h in second]
    a, b = [first[h] for h in common], [second[h] for h in common]
    return RerunAgreement(
        hypotheses=len(common),
        only_first=len(first) - len(common),
        only_second=len(second) - len(common),
        yes_first=sum(a),
        yes_second=sum(b),
        yes_both=sum(x and y for x, y in zip(a, b, strict=True)),
        agreement=sum(x == y for x, y in zip(a, b, strict=True)) / len(common) if common else None,
        kappa=cohen_kappa(a, b, threshold=None) if common else None,
    )

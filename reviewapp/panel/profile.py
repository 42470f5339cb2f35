"""The hypothesis profile of the AI review panel (docs/protocol.md#ai-review-panel): its roles, dimensions and
weights, and the rules that turn three reviews into per-dimension medians and the quality score Q.

Pure functions of plain values, no database. A score is an int 1–10, "unknown" or "inapplicable"; unknown never
becomes a number anywhere, and inapplicable is kept apart from it.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import cast

UNKNOWN = "unknown"
INAPPLICABLE = "inapplicable"
SCORE_WORDS = (UNKNOWN, INAPPLICABLE)
LOWEST, HIGHEST = 1, 10

RUBRIC_JUDGE, DOMAIN_SCIENTIST, METHODS_REVIEWER = "rubric_judge", "domain_scientist", "methods_reviewer"
ROLES = (RUBRIC_JUDGE, DOMAIN_SCIENTIST, METHODS_REVIEWER)
ROLE_LABELS = {RUBRIC_JUDGE: "Rubric judge", DOMAIN_SCIENTIST: "Domain scientist", METHODS_REVIEWER: "Methods reviewer"}

# Eligibility: a coherent, assessable research design under the rubric (not experimental confirmation).
ELIGIBLE_VALUES = ("true", "false", UNKNOWN)


@dataclass(frozen=True)
class Dimension:
    key: str
    weight: int
    label: str


# Fixed protocol conventions, not empirically optimal weights; they sum to 100.
DIMENSIONS = (
    Dimension("importance", 20, "Importance"),
    Dimension("novelty", 20, "Novelty"),
    Dimension("grounding", 15, "Grounding"),
    Dimension("falsifiability", 10, "Falsifiability"),
    Dimension("data_resolvability", 10, "Data resolvability"),
    Dimension("feasibility", 10, "Feasibility"),
    Dimension("alternatives", 10, "Alternatives"),
    Dimension("actionability", 5, "Actionability"),
)
DIMENSION_KEYS = tuple(dimension.key for dimension in DIMENSIONS)
WEIGHTS = {dimension.key: dimension.weight for dimension in DIMENSIONS}
assert sum(WEIGHTS.values()) == 100

# A median needs this many known scores; Q needs this many eligible votes of the three roles.
MIN_KNOWN_SCORES = 2
MIN_ELIGIBLE_VOTES = 2


def is_known(score) -> bool:
    """A number on the 1–10 scale (never a bool, never 0)."""
    return type(score) is int and LOWEST <= score <= HIGHEST


def valid_score(score) -> bool:
    return is_known(score) or score in SCORE_WORDS


@dataclass(frozen=True)
class RoleReview:
    """One role's review as the profile reads it: failed reviews have no eligibility and no scores."""

    role: str
    failed: bool
    eligible: str  # "true", "false", "unknown"; "" when failed
    scores: Mapping[str, int | str]


@dataclass(frozen=True)
class Coverage:
    roles: tuple[str, ...]  # roles whose review succeeded
    failed_roles: tuple[str, ...]
    eligible_votes: int
    medians_known: int
    inapplicable: tuple[str, ...]  # dimensions most reviewers called inapplicable (kept apart from unknown)

    @property
    def reviews(self) -> int:
        return len(self.roles)


@dataclass(frozen=True)
class Profile:
    medians: dict[str, float | None]
    q: float | None
    coverage: Coverage

    @property
    def panel_complete(self) -> bool:
        """All three roles reviewed (none failed): the panel has nothing left to ask."""
        return self.coverage.reviews == len(ROLES)


def dimension_median(scores: Iterable) -> float | None:
    """The median of the known scores when at least two reviewers gave one; otherwise None."""
    known = sorted(score for score in scores if is_known(score))
    if len(known) < MIN_KNOWN_SCORES:
        return None
    middle = len(known) // 2
    return float(known[middle]) if len(known) % 2 else (known[middle - 1] + known[middle]) / 2


def quality_score(medians: Mapping[str, float | None]) -> float | None:
    """Q = Σ weight × median / 100 on the 1–10 scale; None unless all eight medians exist."""
    if any(medians.get(key) is None for key in DIMENSION_KEYS):
        return None
    return sum(WEIGHTS[key] * cast(float, medians[key]) for key in DIMENSION_KEYS) / 100


def profile_of(reviews: Iterable[RoleReview]) -> Profile:
    """Medians, Q (or its absence) and coverage of one hypothesis from its role reviews.

    Q needs all three reviews, at least two eligible votes and all eight medians."""
    reviews = list(reviews)
    done = [review for review in reviews if not review.failed]
    failed = tuple(role for role in ROLES if any(review.role == role and review.failed for review in reviews))
    medians: dict[str, float | None] = {}
    inapplicable = []
    for key in DIMENSION_KEYS:
        scores = [review.scores.get(key) for review in done]
        medians[key] = dimension_median(scores)
        if medians[key] is None and scores.count(INAPPLICABLE) >= MIN_KNOWN_SCORES:
            inapplicable.append(key)
    eligible_votes = sum(review.eligible == "true" for review in done)
    roles = tuple(role for role in ROLES if any(review.role == role for review in done))
    coverage = Coverage(
        roles=roles,
        failed_roles=failed,
        eligible_votes=eligible_votes,
        medians_known=sum(value is not None for value in medians.values()),
        inapplicable=tuple(inapplicable),
    )
    complete = len(roles) == len(ROLES) and eligible_votes >= MIN_ELIGIBLE_VOTES
    return Profile(medians=medians, q=quality_score(medians) if complete else None, coverage=coverage)


# Revision judgments (docs/protocol.md#revision-judgments) ------------------------------------------------------

SUBSTANTIVE_PROGRESS = "substantive_progress"
NECESSARY_REPAIR = "necessary_repair"
MARGINAL_REPETITION = "marginal_repetition"
INSUFFICIENT_EVIDENCE = "insufficient_evidence"
REVISION_CATEGORIES = (SUBSTANTIVE_PROGRESS, NECESSARY_REPAIR, MARGINAL_REPETITION, INSUFFICIENT_EVIDENCE)
REVISION_LABELS = {
    SUBSTANTIVE_PROGRESS: "Substantive progress",
    NECESSARY_REPAIR: "Necessary repair",
    MARGINAL_REPETITION: "Marginal repetition",
    INSUFFICIENT_EVIDENCE: "Insufficient evidence",
}


def delta_q(child_q: float | None, parent_q: float | None) -> float | None:
    """ΔQ = Q(child) − Q(parent), only when both exist."""
    return None if child_q is None or parent_q is None else child_q - parent_q


@dataclass(frozen=True)
class RevisionSummary:
    judged: int
    counts: dict[str, int]
    substantive_progress_rate: float | None
    useful_step_rate: float | None  # substantive progress or necessary repair
    repetition_rate: float | None
    insufficient_evidence_rate: float | None
    delta_q_pairs: int
    mean_delta_q: float | None


def revision_summary(categories: Iterable[str], delta_qs: Iterable[float | None]) -> RevisionSummary:
    """The four categories' rates, reported separately, and the mean ΔQ over pairs where both Q exist."""
    categories = list(categories)
    counts = {category: categories.count(category) for category in REVISION_CATEGORIES}
    judged = len(categories)

    def rate(count: int) -> float | None:
        return count / judged if judged else None

    deltas = [value for value in delta_qs if value is not None]
    return RevisionSummary(
        judged=judged,
        counts=counts,
        substantive_progress_rate=rate(counts[SUBSTANTIVE_PROGRESS]),
        useful_step_rate=rate(counts[SUBSTANTIVE_PROGRESS] + counts[NECESSARY_REPAIR]),
        repetition_rate=rate(counts[MARGINAL_REPETITION]),
        insufficient_evidence_rate=rate(counts[INSUFFICIENT_EVIDENCE]),
        delta_q_pairs=len(deltas),
        mean_delta_q=sum(deltas) / len(deltas) if deltas else None,
    )

"""Reads of the AI review panel: the packets models read, a cohort's panel table, one hypothesis's profile, the
comparison log, the ratings with their ranks, and the inputs of the calibration (docs/protocol.md#ai-review-panel).

Every cohort-wide read is a fixed number of queries whatever the cohort's size.
"""

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field

from django.core.cache import cache
from django.db.models import Count, F, Q
from scipy.stats import binomtest

from reviewapp.benchmarks.models import BenchmarkHypothesis, BenchmarkSet
from reviewapp.core.errors import NotFound
from reviewapp.models import BackgroundJob, Cohort, Proposal, Review
from reviewapp.panel import calibration as calibration_rules
from reviewapp.panel import profile as rules
from reviewapp.panel import ratings as trueskill_rules
from reviewapp.panel.models import (
    REVIEWED_RECORDS,
    Assessment,
    Comparison,
    ContributionFamily,
    PanelPrompt,
    PanelReview,
    PanelSubject,
    Rating,
    ReferenceReview,
    RevisionJudgment,
)
from reviewapp.panel.prompts import REFERENCE_REVIEWER
from reviewapp.protocol import CANT_JUDGE, CRITERION_FIELDS
from reviewapp.selectors.packets import ProposalPacket, proposal_packets
from reviewapp.selectors.revisions import first_parents
from screening.llm import roster_endpoint
from screening.models import Hypothesis, Run

PANEL_JOB, CRITIQUE_JOB = "ai_panel", "ai_critique"

# Packets ------------------------------------------------------------------------------------------------------

# The whitelisted columns of hypotheses that are not proposals: what a screening model or a benchmark judge reads,
# never their authors, forecasts or scores.
_SCREENING_PACKET = {
    "question": "run__question",
    "background": "run__background",
    "statement": "statement",
    "mechanism": "mechanism",
    "prediction": "prediction",
    "domain_category": "domain_category",
}
_BENCHMARK_PACKET = {
    "question": "benchmark_task__task__question",
    "background": "benchmark_task__task__background",
    "statement": "statement",
    "mechanism": "mechanism",
    "prediction": "prediction",
}
# A benchmark hypothesis from a screening run keeps its text on the run's hypothesis.
_BENCHMARK_RUN_TEXT = {
    name: f"hypothesis__{column}" for name, column in _BENCHMARK_PACKET.items() if "__" not in column
}


def subject_packets(subject_ids) -> dict[int, ProposalPacket]:
    """subject pk → the blinded packet the panel's models read."""
    subjects = list(
        PanelSubject.objects.filter(pk__in=subject_ids).values_list(
            "pk", "proposal_id", "screening_hypothesis_id", "benchmark_hypothesis_id"
        )
    )
    by_proposal = {proposal: pk for pk, proposal, _, _ in subjects if proposal}
    packets = {by_proposal[pk]: packet for pk, packet in proposal_packets(proposal_ids=list(by_proposal)).items()}
    screening = [pk for pk, _, hypothesis, _ in subjects if hypothesis]
    rows = Hypothesis.objects.filter(panel_subject__in=screening).values("panel_subject", *_SCREENING_PACKET.values())
    for row in rows:
        values = {name: row[column] for name, column in _SCREENING_PACKET.items()}
        packets[row["panel_subject"]] = ProposalPacket(**values)
    benchmark = [pk for pk, _, _, hypothesis in subjects if hypothesis]
    columns = ("panel_subject", "hypothesis_id", *_BENCHMARK_PACKET.values(), *_BENCHMARK_RUN_TEXT.values())
    for row in BenchmarkHypothesis.objects.filter(panel_subject__in=benchmark).values(*columns):
        source = _BENCHMARK_RUN_TEXT if row["hypothesis_id"] else {}
        packets[row["panel_subject"]] = ProposalPacket(
            **{name: row[source.get(name, column)] or "" for name, column in _BENCHMARK_PACKET.items()}
        )
    return packets


# Reviews and profiles ---------------------------------------------------------------------------------------------


@dataclass(slots=True)  # not frozen: thousands are made per cohort page, and frozen ones are slower to make
class ReviewRow:
    role: str
    state: str
    eligible: str
    scores: dict
    rationale: str
    error: str
    model_name: str
    simulated: bool
    prompt_version: str
    prompt_id: int | None

    @property
    def failed(self) -> bool:
        return self.state == PanelReview.State.FAILED

    def as_rule_input(self) -> rules.RoleReview:
        return rules.RoleReview(role=self.role, failed=self.failed, eligible=self.eligible, scores=self.scores)


_REVIEW_COLUMNS = ("subject_id", "role", "state", "eligible", "scores", "error", "model_name", "simulated")


def _reviews_by_subject(reviews, *, with_rationale: bool) -> dict[int, list[ReviewRow]]:
    columns = (*_REVIEW_COLUMNS, "prompt__version", "prompt_id", "rationale" if with_rationale else "error")
    by_subject: dict[int, list[ReviewRow]] = defaultdict(list)
    rows = reviews.order_by("subject_id", "role").values_list(*columns)
    for subject, role, state, eligible, scores, error, model, simulated, version, prompt, rationale in rows:
        by_subject[subject].append(
            ReviewRow(
                role=role,
                state=state,
                eligible=eligible,
                scores=scores,
                rationale=rationale if with_rationale else "",
                error=error,
                model_name=model,
                simulated=simulated,
                prompt_version=version or "",
                prompt_id=prompt,
            )
        )
    for subject_rows in by_subject.values():
        subject_rows.sort(key=lambda review: rules.ROLES.index(review.role))
    return by_subject


def profile_from(reviews: list[ReviewRow]) -> rules.Profile:
    return rules.profile_of(review.as_rule_input() for review in reviews)


@dataclass(frozen=True)
class RatingRow:
    mu: float
    sigma: float
    conservative: float
    rank: float | None  # None when never compared: only rated proposals are ranked
    comparisons: int


@dataclass(frozen=True)
class RevisionRow:
    predecessor_pk: int
    predecessor_id: str
    state: str  # done, failed, or "" when not judged yet
    category: str
    rationale: str
    delta_q: float | None

    @property
    def label(self) -> str:
        return rules.REVISION_LABELS.get(self.category, "")


@dataclass
class PanelRow:
    proposal_pk: int
    proposal_id: str
    task_id: int
    task_key: str
    subject_id: int | None
    reviews: list[ReviewRow]
    profile: rules.Profile
    rating: RatingRow | None = None  # None until it was compared: the prior says nothing about it
    revision: RevisionRow | None = None

    @property
    def simulated(self) -> bool:
        return any(review.simulated for review in self.reviews)


@dataclass
class CohortPanel:
    cohort: Cohort
    rows: list[PanelRow]
    revisions: rules.RevisionSummary
    failed_reviews: int = 0
    simulated: bool = False
    counts: dict = field(default_factory=dict)


def _members(cohort: Cohort) -> list[dict]:
    rows = cohort.proposals.order_by("task__key", "external_id").values(
        "pk", "external_id", "task_id", "task__key", "panel_subject"
    )
    return [dict(row) for row in rows]


def cohort_panel(cohort: Cohort, *, with_rationale: bool = False) -> CohortPanel:
    """Every proposal of the cohort with its reviews, profile, rating and revision judgment, in a fixed number of
    queries whatever the cohort's size."""
    members = _members(cohort)
    subjects = {member["pk"]: member["panel_subject"] for member in members}
    reviews = _reviews_by_subject(
        PanelReview.objects.filter(subject__proposal__cohorts=cohort), with_rationale=with_rationale
    )
    ratings = cohort_ratings(cohort, members=members)
    predecessors = first_parents(child_ids=cohort.proposals.values("pk"))
    # The revision analysis reads each proposal's judgment against its first listed parent (the other edges are the
    # transitions level's).
    judgments = {
        (row["subject__proposal_id"], row["predecessor_id"]): row
        for row in RevisionJudgment.objects.filter(subject__proposal__cohorts=cohort).values(
            "subject__proposal_id", "predecessor_id", "predecessor__external_id", "state", "category", "rationale"
        )
    }
    # The predecessor's Q, wherever it was reviewed (it need not be in this cohort).
    outside = [parent for parent in predecessors.values() if parent not in subjects]
    outside_reviews = _reviews_by_subject(
        PanelReview.objects.filter(subject__proposal__in=outside), with_rationale=False
    )
    q_of = {}
    rows = []
    # One profile for all the proposals without a review (most of a cohort the panel has not seen); it is only read.
    unreviewed = profile_from([])
    for member in members:
        subject = subjects[member["pk"]]
        subject_reviews = reviews.get(subject, []) if subject else []
        rating = ratings.by_proposal.get(member["pk"])
        row = PanelRow(
            proposal_pk=member["pk"],
            proposal_id=member["external_id"],
            task_id=member["task_id"],
            task_key=member["task__key"],
            subject_id=subject,
            reviews=subject_reviews,
            profile=profile_from(subject_reviews) if subject_reviews else unreviewed,
            rating=rating if rating is not None and rating.comparisons > 0 else None,
        )
        q_of[member["pk"]] = row.profile.q
        rows.append(row)
    external_ids = {member["pk"]: member["external_id"] for member in members}
    for proposal, external_id, subject in Proposal.objects.filter(pk__in=outside).values_list(
        "pk", "external_id", "panel_subject"
    ):
        external_ids[proposal] = external_id
        q_of[proposal] = profile_from(outside_reviews.get(subject, [])).q if subject else None
    by_pk = {row.proposal_pk: row for row in rows}
    for child, parent in predecessors.items():
        judgment = judgments.get((child, parent))
        by_pk[child].revision = RevisionRow(
            predecessor_pk=parent,
            predecessor_id=judgment["predecessor__external_id"] if judgment else external_ids.get(parent, ""),
            state=judgment["state"] if judgment else "",
            category=judgment["category"] if judgment else "",
            rationale=judgment["rationale"] if judgment and with_rationale else "",
            delta_q=rules.delta_q(q_of.get(child), q_of.get(parent)),
        )
    judged = [row.revision for row in rows if row.revision and row.revision.state == RevisionJudgment.State.DONE]
    return CohortPanel(
        cohort=cohort,
        rows=rows,
        revisions=rules.revision_summary(
            [revision.category for revision in judged], [revision.delta_q for revision in judged]
        ),
        failed_reviews=sum(review.failed for row in rows for review in row.reviews),
        simulated=any(row.simulated for row in rows),
        counts={
            "proposals": len(rows),
            "reviewed": sum(bool(row.reviews) for row in rows),
            "complete_panels": sum(row.profile.panel_complete for row in rows),
            "with_q": sum(row.profile.q is not None for row in rows),
        },
    )


@dataclass(frozen=True)
class SubjectProfile:
    subject: PanelSubject
    title: str  # the proposal's id, or the hypothesis's label or key
    packet: ProposalPacket
    reviews: list[ReviewRow]
    profile: rules.Profile
    cohorts: list[Cohort]
    revision: RevisionRow | None
    reference: ReviewRow | None = None  # the fresh-context reference's review: a diagnostic, never part of Q


def _reference_review(subject_id: int) -> ReviewRow | None:
    row = (
        ReferenceReview.objects.filter(subject_id=subject_id)
        .values("state", "eligible", "scores", "rationale", "error", "model_name", "simulated", "prompt__version")
        .first()
    )
    if row is None:
        return None
    return ReviewRow(
        role=REFERENCE_REVIEWER,
        state=row["state"],
        eligible=row["eligible"],
        scores=row["scores"],
        rationale=row["rationale"],
        error=row["error"],
        model_name=row["model_name"],
        simulated=row["simulated"],
        prompt_version=row["prompt__version"] or "",
        prompt_id=None,
    )


def subject_profile(subject_id: int) -> SubjectProfile | None:
    """One reviewed hypothesis: its packet (as the models read it), every role's review with rationale, the profile,
    for a revised proposal its revision judgment, and the fresh-context reference's review when there is one."""
    subject = (
        PanelSubject.objects.select_related("proposal", "screening_hypothesis__run", "benchmark_hypothesis__benchmark")
        .filter(pk=subject_id)
        .first()
    )
    if subject is None:
        return None
    reviews = _reviews_by_subject(subject.reviews.all(), with_rationale=True).get(subject.pk, [])
    profile = profile_from(reviews)
    revision, cohorts = None, []
    if subject.proposal is not None:
        title = subject.proposal.external_id
        cohorts = list(subject.proposal.cohorts.order_by("name"))
        first_parent = first_parents(child_ids=[subject.proposal.pk]).get(subject.proposal.pk)
        judgment = (
            RevisionJudgment.objects.filter(subject=subject, predecessor=first_parent)
            .select_related("predecessor")
            .first()
        )
        if judgment is not None:
            parent_subject = PanelSubject.objects.filter(proposal=judgment.predecessor).first()
            parent_q = (
                profile_from(
                    _reviews_by_subject(parent_subject.reviews.all(), with_rationale=False).get(parent_subject.pk, [])
                ).q
                if parent_subject
                else None
            )
            revision = RevisionRow(
                predecessor_pk=judgment.predecessor_id,
                predecessor_id=judgment.predecessor.external_id,
                state=judgment.state,
                category=judgment.category,
                rationale=judgment.rationale,
                delta_q=rules.delta_q(profile.q, parent_q),
            )
    elif subject.screening_hypothesis is not None:
        hypothesis = subject.screening_hypothesis
        title = f"{hypothesis.label or f'hypothesis {hypothesis.pk}'} of run {hypothesis.run.public_id}"
    else:
        benchmark_hypothesis = subject.benchmark_hypothesis
        assert benchmark_hypothesis is not None  # a subject is exactly one thing (panel_subject_is_one_thing)
        title = f"{benchmark_hypothesis.key} of {benchmark_hypothesis.benchmark.name}"
    packet = subject_packets([subject.pk])[subject.pk]
    return SubjectProfile(
        subject=subject,
        title=title,
        packet=packet,
        reviews=reviews,
        profile=profile,
        cohorts=cohorts,
        revision=revision,
        reference=_reference_review(subject.pk),
    )


@dataclass(frozen=True)
class HypothesisRow:
    key: str  # the run's label or the set's hypothesis key
    pk: int
    statement: str
    selected: bool | None
    subject_id: int | None
    profile: rules.Profile


def run_hypotheses_with_profiles(run: Run) -> list[HypothesisRow]:
    """A screening run's numbered hypotheses in pool order, with their panel profiles (by label)."""
    hypotheses = Hypothesis.objects.filter(run=run).exclude(label="").order_by("position")
    return hypotheses_with_profiles(hypotheses, key="label")


def benchmark_hypotheses_with_profiles(benchmark: BenchmarkSet) -> list[HypothesisRow]:
    """A benchmark set's hypotheses by task and position, with their panel profiles (by key)."""
    hypotheses = BenchmarkHypothesis.objects.filter(benchmark=benchmark).order_by(
        "benchmark_task__position", "position", "pk"
    )
    return hypotheses_with_profiles(hypotheses, key="key")


def hypotheses_with_profiles(queryset, *, key: str) -> list[HypothesisRow]:
    """Screening or benchmark hypotheses (a queryset of either) with their panel profiles, in a fixed number of
    queries. key names the field shown as the hypothesis's id (label or key)."""
    rows = list(queryset.values("pk", key, "statement", "selected", "panel_subject"))
    reviews = _reviews_by_subject(
        PanelReview.objects.filter(subject__in=[row["panel_subject"] for row in rows if row["panel_subject"]]),
        with_rationale=False,
    )
    return [
        HypothesisRow(
            key=row[key],
            pk=row["pk"],
            statement=row["statement"],
            selected=row["selected"],
            subject_id=row["panel_subject"],
            profile=profile_from(reviews.get(row["panel_subject"], [])),
        )
        for row in rows
    ]


# Ratings and the comparison log ----------------------------------------------------------------------------------


@dataclass
class CohortRatings:
    by_proposal: dict[int, RatingRow]
    strata: dict[int, list[int]]  # task pk → proposal pks


def cohort_ratings(cohort: Cohort, *, members: list[dict] | None = None) -> CohortRatings:
    """Every proposal's rating (the prior when it was never compared) with its tie-aware rank among the rated
    proposals of its research task (the stratum); a proposal never compared has no rank."""
    members = _members(cohort) if members is None else members
    stored = {
        proposal: trueskill_rules.Rating(mu, sigma, comparisons)
        for proposal, mu, sigma, comparisons in Rating.objects.filter(cohort=cohort).values_list(
            "proposal_id", "mu", "sigma", "comparisons"
        )
    }
    strata: dict[int, list[int]] = defaultdict(list)
    for member in members:
        strata[member["task_id"]].append(member["pk"])
    by_proposal = {}
    for proposals in strata.values():
        ratings = {pk: stored.get(pk) or trueskill_rules.Rating() for pk in proposals}
        ranks = trueskill_rules.stratum_ranks(ratings)
        for pk, rating in ratings.items():
            by_proposal[pk] = RatingRow(
                mu=rating.mu,
                sigma=rating.sigma,
                conservative=rating.conservative,
                rank=ranks.get(pk),
                comparisons=rating.comparisons,
            )
    return CohortRatings(by_proposal=by_proposal, strata=dict(strata))


def comparison_log(cohort: Cohort):
    """The cohort's comparisons in update order, as rows with the proposals' ids."""
    return (
        Comparison.objects.filter(cohort=cohort)
        .order_by("seq")
        .values(
            "seq",
            "a_id",
            "b_id",
            "a__external_id",
            "b__external_id",
            "outcome",
            "source",
            "shown_first_id",
            "order_seed",
            "model_name",
            "simulated",
            "rationale",
            "created_at",
        )
    )


@dataclass(frozen=True)
class PositionBias:
    """Among decisive model comparisons: how often the proposal shown first won (0.5 means no bias)."""

    decisive: int
    first_won: int
    share: float | None
    low: float | None
    high: float | None


def comparisons_recent(cohort: Cohort, *, limit: int) -> list[dict]:
    """The cohort's last comparisons, newest first (rows of `comparison_log`)."""
    return list(comparison_log(cohort).order_by("-seq")[:limit])


def comparison_count(cohort: Cohort) -> int:
    return Comparison.objects.filter(cohort=cohort).count()


def cohort_proposal_keys(cohort: Cohort) -> dict[int, tuple[str, str]]:
    """Each proposal of the cohort: its id → (imported id, task key)."""
    rows = cohort.proposals.values_list("pk", "external_id", "task__key")
    return {pk: (external_id, task) for pk, external_id, task in rows}


def cohort_family(cohort: Cohort, family_id: int) -> ContributionFamily:
    """One contribution family of the cohort; NotFound when the cohort has none with this id."""
    family = ContributionFamily.objects.filter(pk=family_id, cohort=cohort).first()
    if family is None:
        raise NotFound(f"The cohort has no contribution family {family_id}.")
    return family


def cohort_assessment(cohort: Cohort, assessment_id: int) -> Assessment:
    """One path or run assessment of the cohort; NotFound when the cohort has none with this id."""
    assessment = Assessment.objects.filter(pk=assessment_id, cohort=cohort).first()
    if assessment is None:
        raise NotFound(f"The cohort has no assessment {assessment_id}.")
    return assessment


def reviewed_record(kind: str, record_id: int):
    """The model-answered record of this kind (a name of REVIEWED_RECORDS) and id; NotFound when there is none."""
    record = REVIEWED_RECORDS[kind]._default_manager.filter(pk=record_id).first()
    if record is None:
        raise NotFound(f"There is no {kind.replace('_', ' ')} {record_id}.")
    return record


def position_bias(cohort: Cohort) -> PositionBias:
    """Counted by the database in one query, however long the log."""
    shown_first_won = Q(outcome="a", shown_first=F("a")) | Q(outcome="b", shown_first=F("b"))
    counts = Comparison.objects.filter(
        cohort=cohort, source=Comparison.Source.MODEL, outcome__in=("a", "b"), shown_first__isnull=False
    ).aggregate(decisive=Count("pk"), first_won=Count("pk", filter=shown_first_won))
    decisive, first_won = counts["decisive"], counts["first_won"]
    if not decisive:
        return PositionBias(0, 0, None, None, None)
    interval = binomtest(first_won, decisive).proportion_ci()
    return PositionBias(decisive, first_won, first_won / decisive, interval.low, interval.high)


# Jobs and prompts ---------------------------------------------------------------------------------------------------


def latest_job(cohort: Cohort, kind: str) -> BackgroundJob | None:
    return BackgroundJob.objects.filter(kind=kind, params__cohort_id=cohort.pk).order_by("-created_at", "-pk").first()


def prompt_versions() -> list[PanelPrompt]:
    """Every prompt text ever sent, newest first per kind."""
    return list(PanelPrompt.objects.order_by("kind", "-created_at"))


# Calibration inputs -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HumanScores:
    overall: list[int]
    recommendations: list[str]
    criteria: dict[str, list[int]]  # "can't judge" left out


def human_scores(cohort: Cohort) -> dict[int, HumanScores]:
    """proposal pk → its submitted human reviews in the cohort."""
    reviews = Review.objects.filter(assignment__cohort=cohort, status=Review.Status.SUBMITTED).values_list(
        "assignment__proposal_id", "overall", "recommendation", *CRITERION_FIELDS
    )
    by_proposal: dict[int, HumanScores] = {}
    for proposal, overall, recommendation, *criteria in reviews:
        scores = by_proposal.setdefault(
            proposal, HumanScores([], [], {criterion: [] for criterion in CRITERION_FIELDS})
        )
        scores.overall.append(overall)
        scores.recommendations.append(recommendation)
        for criterion, value in zip(CRITERION_FIELDS, criteria, strict=True):
            if value and value != CANT_JUDGE:
                scores.criteria[criterion].append(int(value))
    return by_proposal


# Columns of the review room's exports (registered by reviewapp.panel.receivers) -----------------------------------

EXPORT_COLUMNS = [
    "ai_reviews",
    "ai_failed_roles",
    "ai_eligible_votes",
    *(f"ai_median_{key}" for key in rules.DIMENSION_KEYS),
    "ai_inapplicable",
    "ai_q",
    "ai_mu",
    "ai_sigma",
    "ai_conservative",
    "ai_rank",
    "ai_comparisons",
    "ai_revision",
    "ai_delta_q",
    "ai_simulated",
]


def _rounded(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def _has_panel_data(cohort: Cohort) -> bool:
    """Whether any proposal of the cohort has a role review, a revision judgment or a compared rating."""
    proposals = cohort.proposals.values("pk")
    return (
        PanelReview.objects.filter(subject__proposal__in=proposals).exists()
        or RevisionJudgment.objects.filter(subject__proposal__in=proposals).exists()
        or Rating.objects.filter(cohort=cohort, comparisons__gt=0).exists()
    )


def panel_export_columns(cohort: Cohort) -> tuple[list[str], dict[int, list]]:
    """Per proposal: the panel's coverage, medians and Q (empty where absent, never 0), the dimensions whose scores
    are inapplicable (kept apart from an unknown median, which is only empty), the rating and the revision judgment.
    A proposal the panel has not reviewed, never compared or not judged has empty cells there. Coordinators' and
    analysts' exports both carry them."""
    if not _has_panel_data(cohort):
        return EXPORT_COLUMNS, {}  # every cell empty: nothing to compute
    panel = cohort_panel(cohort)
    values = {}
    for row in panel.rows:
        coverage, rating, revision = row.profile.coverage, row.rating, row.revision
        reviewed = bool(row.reviews)
        ratings: list = [None] * 5
        if rating is not None:
            ratings = [*map(_rounded, (rating.mu, rating.sigma, rating.conservative, rating.rank)), rating.comparisons]
        category = revision.category if revision is not None and revision.state == RevisionJudgment.State.DONE else None
        values[row.proposal_pk] = [
            coverage.reviews if reviewed else None,
            ";".join(coverage.failed_roles),
            coverage.eligible_votes if reviewed else None,
            *(row.profile.medians[key] for key in rules.DIMENSION_KEYS),
            ";".join(coverage.inapplicable) if reviewed else None,
            _rounded(row.profile.q),
            *ratings,
            category,
            _rounded(revision.delta_q) if revision is not None else None,
            ("true" if row.simulated else "false") if reviewed else None,
        ]
    return EXPORT_COLUMNS, values


# Calibration against the human reviews (computed by reviewapp.panel.calibration, cached per data) -------------------

CALIBRATION_CACHE_SECONDS = 24 * 3600


def calibration_units(cohort: Cohort) -> list[calibration_rules.Unit]:
    """The proposals with at least one role's review and at least one submitted human review."""
    panel = cohort_panel(cohort)
    humans = human_scores(cohort)
    units = []
    for row in panel.rows:
        human = humans.get(row.proposal_pk)
        if human is None or not row.profile.coverage.reviews:
            continue
        units.append(
            calibration_rules.Unit(
                task=row.task_key,
                q=row.profile.q,
                conservative=row.rating.conservative if row.rating else None,
                medians=row.profile.medians,
                overall=human.overall,
                recommendations=human.recommendations,
                criteria=human.criteria,
            )
        )
    return units


def _cached(kind: str, cohort: Cohort, records: list, compute):
    """compute(), kept per cohort and per distinct data (a sha256 of every value it reads)."""
    digest = hashlib.sha256(json.dumps(records, default=str).encode()).hexdigest()
    key = f"{kind}:{cohort.pk}:{digest}:{calibration_rules.RESAMPLES}"
    cached = cache.get(key)
    if cached is None:
        cached = compute()
        cache.set(key, cached, CALIBRATION_CACHE_SECONDS)
    return cached


def cohort_calibration(cohort: Cohort) -> calibration_rules.Calibration:
    """The calibration figures, computed once per distinct data."""
    units = calibration_units(cohort)
    records = [
        [unit.task, unit.q, unit.conservative, unit.medians, unit.overall, unit.recommendations, unit.criteria]
        for unit in units
    ]
    return _cached("panel-calibration", cohort, records, lambda: calibration_rules.calibration(units))


# Development diagnostics against the fresh-context reference (docs/protocol.md#fresh-context-references) ----------


@dataclass(frozen=True)
class ReferenceDiagnostics:
    """The roles against the fresh-context reference on a cohort's packets, with what the figures rest on."""

    configured: bool  # the default roster names a reference reviewer
    models: list[str]  # the endpoints whose reference reviews are counted
    simulated: bool
    reviewed: int  # proposals with a valid reference review
    failed: int  # proposals whose reference review failed
    result: calibration_rules.ReferenceCalibration

    @property
    def roles(self) -> list[calibration_rules.RoleAgreement]:
        return list(self.result.roles.values())


def reference_units(cohort: Cohort) -> list[calibration_rules.ReferenceUnit]:
    """The cohort's proposals with a valid reference review, each with its roles' valid reviews."""
    references = ReferenceReview.objects.filter(
        subject__proposal__cohorts=cohort, state=ReferenceReview.State.DONE
    ).values_list("subject_id", "subject__proposal__task__key", "scores")
    roles: dict[int, dict] = defaultdict(dict)
    for subject, role, scores in PanelReview.objects.filter(
        subject__proposal__cohorts=cohort, state=PanelReview.State.DONE
    ).values_list("subject_id", "role", "scores"):
        roles[subject][role] = scores
    return [
        calibration_rules.ReferenceUnit(task=task, reference=scores, roles=roles.get(subject, {}))
        for subject, task, scores in references.order_by(
            "subject__proposal__task__key", "subject__proposal__external_id"
        )
    ]


def cohort_reference_diagnostics(cohort: Cohort) -> ReferenceDiagnostics:
    """Each role's agreement with the fresh-context reference, computed once per distinct data."""
    units = reference_units(cohort)
    records = [[unit.task, unit.reference, unit.roles] for unit in units]
    result = _cached(
        "panel-reference-calibration", cohort, records, lambda: calibration_rules.reference_calibration(units)
    )
    asked = ReferenceReview.objects.filter(subject__proposal__cohorts=cohort)
    counts = asked.aggregate(
        failed=Count("pk", filter=Q(state=ReferenceReview.State.FAILED)),
        simulated=Count("pk", filter=Q(simulated=True)),
    )
    return ReferenceDiagnostics(
        configured=roster_endpoint(REFERENCE_REVIEWER) is not None,
        models=sorted(set(asked.exclude(model_name="").values_list("model_name", flat=True))),
        simulated=counts["simulated"] > 0,
        reviewed=len(units),
        failed=counts["failed"],
        result=result,
    )

"""Reads about cohorts for coordinators and analysts: counts, progress per reviewer, assignments.

Everything is counted in the database with a fixed number of queries, whatever the cohort's size.
"""

import re
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Aggregate, Count, FloatField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from reviewapp.core import roles
from reviewapp.core.errors import Forbidden, NotFound, ServiceError
from reviewapp.models import Assignment, Cohort, Conflict, ImportBatch, Proposal, Review

ASSIGNMENT_STATES = {
    "not_started": Q(review__isnull=True),
    "in_progress": Q(review__status=Review.Status.DRAFT),
    "submitted": Q(review__status=Review.Status.SUBMITTED),
    "deferred": Q(deferred_at__isnull=False) & ~Q(review__status=Review.Status.SUBMITTED),
}


class _Median(Aggregate):
    """PostgreSQL's continuous median; other databases get theirs computed from one query (see below)."""

    function = "PERCENTILE_CONT"
    template = "%(function)s(0.5) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()


def _count_of(queryset: QuerySet, cohort_field: str) -> Coalesce:
    rows = queryset.filter(**{cohort_field: OuterRef("pk")}).order_by().values(cohort_field)
    return Coalesce(Subquery(rows.annotate(n=Count("*")).values("n")), 0)


def cohorts_with_counts() -> QuerySet[Cohort]:
    """Cohorts, newest first, with proposal_count, assignment_count and submitted_count."""
    return Cohort.objects.order_by("-created_at", "-pk").annotate(
        proposal_count=_count_of(Cohort.proposals.through.objects.all(), "cohort"),
        assignment_count=_count_of(Assignment.objects.all(), "cohort"),
        submitted_count=_count_of(Review.objects.filter(status=Review.Status.SUBMITTED), "assignment__cohort"),
    )


def cohorts_recent(*, limit: int = 50) -> QuerySet[Cohort]:
    """The cohorts made last, newest first."""
    return Cohort.objects.order_by("-created_at", "-pk")[:limit]


def cohort_for_user(*, user, cohort_id: int, coordinate: bool = False, counts: bool = False) -> Cohort:
    """The cohort for a user who may read every cohort (a coordinator or an analyst; a coordinator only, with
    `coordinate`), with its counts when asked (`cohorts_with_counts`). Anyone else is refused (Forbidden, 403) before
    the cohort is looked up, so they learn nothing about which cohorts exist; a cohort that does not exist is NotFound
    (404). Pages and the API both answer these (`reviewapp.core.errors`)."""
    if coordinate and not roles.can_coordinate(user):
        raise Forbidden("Only coordinators may do this.")
    if not roles.can_read_all(user):
        raise Forbidden("Only coordinators and analysts may see this.")
    cohort = (cohorts_with_counts() if counts else Cohort.objects).filter(pk=cohort_id).first()
    if cohort is None:
        raise NotFound(f"There is no cohort {cohort_id}.")
    return cohort


def assignment_get(*, assignment_id: int, cohort_id: int | None = None) -> Assignment:
    """One assignment (of the cohort, when one is named); NotFound when there is none."""
    assignments = Assignment.objects.filter(pk=assignment_id)
    if cohort_id is not None:
        assignments = assignments.filter(cohort_id=cohort_id)
    assignment = assignments.first()
    if assignment is None:
        raise NotFound(f"There is no assignment {assignment_id}.")
    return assignment


def cohort_proposal_count(cohort: Cohort) -> int:
    return cohort.proposals.count()


def cohort_import_batches(cohort: Cohort) -> QuerySet[ImportBatch]:
    """The cohort's imports, newest first, with who made them."""
    return cohort.imports.select_related("created_by").order_by("-created_at")


def conflicts_recent(*, limit: int = 50) -> QuerySet[Conflict]:
    """The conflicts of interest declared last, with their reviewers and proposals."""
    return Conflict.objects.select_related("reviewer", "proposal").order_by("-created_at")[:limit]


@dataclass(frozen=True)
class Progress:
    """How far a reviewer (or, with username "", the whole cohort) has got."""

    username: str
    assigned: int
    submitted: int
    in_progress: int
    deferred: int
    median_seconds: float | None

    @property
    def not_started(self) -> int:
        return self.assigned - self.submitted - self.in_progress

    @property
    def percent_submitted(self) -> int:
        return round(100 * self.submitted / self.assigned) if self.assigned else 0

    @property
    def median_display(self) -> str:
        if self.median_seconds is None:
            return "–"
        minutes, seconds = divmod(round(self.median_seconds), 60)
        return f"{minutes} min {seconds:02d} s" if minutes else f"{seconds} s"

    def as_dict(self) -> dict:
        return {
            "assigned": self.assigned,
            "submitted": self.submitted,
            "in_progress": self.in_progress,
            "not_started": self.not_started,
            "deferred": self.deferred,
            "median_seconds": self.median_seconds,
        }


@dataclass(frozen=True)
class CohortProgress:
    reviewers: list[Progress]
    totals: Progress


_SUBMITTED = Q(review__status=Review.Status.SUBMITTED)


def _python_medians(assignments: QuerySet) -> tuple[dict[int, float], float | None]:
    """Median seconds per submitted review, per reviewer and overall, from one query (SQLite has no median)."""
    seconds = defaultdict(list)
    for reviewer_id, spent in assignments.filter(_SUBMITTED).values_list("reviewer_id", "review__seconds_spent"):
        seconds[reviewer_id].append(spent)
    every = [spent for values in seconds.values() for spent in values]
    return {r: statistics.median(v) for r, v in seconds.items()}, (statistics.median(every) if every else None)


def cohort_progress(cohort: Cohort) -> CohortProgress:
    """Per reviewer: assigned, submitted, in progress (a draft exists), not started, deferred, median time.

    Two queries whatever the cohort's size.
    """
    assignments = Assignment.objects.filter(cohort=cohort).order_by()
    per_reviewer = (
        assignments.values("reviewer_id", "reviewer__username")
        .annotate(
            assigned=Count("pk"),
            submitted=Count("pk", filter=ASSIGNMENT_STATES["submitted"]),
            in_progress=Count("pk", filter=ASSIGNMENT_STATES["in_progress"]),
            deferred=Count("pk", filter=ASSIGNMENT_STATES["deferred"]),
        )
        .order_by("reviewer__username")
    )
    rows: Iterable[dict[str, Any]] = per_reviewer
    if connection.vendor == "postgresql":
        median = _Median("review__seconds_spent", filter=_SUBMITTED)
        rows = list(per_reviewer.annotate(median=median))
        medians = {row["reviewer_id"]: row["median"] for row in rows}
        total_median = assignments.aggregate(m=median)["m"]
    else:
        medians, total_median = _python_medians(assignments)
    reviewers = [
        Progress(
            username=row["reviewer__username"],
            assigned=row["assigned"],
            submitted=row["submitted"],
            in_progress=row["in_progress"],
            deferred=row["deferred"],
            median_seconds=medians.get(row["reviewer_id"]),
        )
        for row in rows
    ]
    totals = Progress(
        username="",
        assigned=sum(r.assigned for r in reviewers),
        submitted=sum(r.submitted for r in reviewers),
        in_progress=sum(r.in_progress for r in reviewers),
        deferred=sum(r.deferred for r in reviewers),
        median_seconds=total_median,
    )
    return CohortProgress(reviewers=reviewers, totals=totals)


def cohort_deferred(cohort: Cohort, *, limit: int = 100) -> QuerySet[Assignment]:
    """The most recent deferrals not yet resolved, with the reviewers' reasons."""
    return (
        Assignment.objects.filter(ASSIGNMENT_STATES["deferred"], cohort=cohort)
        .select_related("reviewer", "proposal")
        .order_by("-deferred_at")[:limit]
    )


def cohort_assignments(cohort: Cohort, *, reviewer: str = "", proposal: str = "", state: str = "") -> QuerySet:
    """A cohort's assignments by reviewer and queue position, optionally filtered; paginate it."""
    assignments = Assignment.objects.filter(cohort=cohort)
    if reviewer:
        assignments = assignments.filter(reviewer__username__iexact=reviewer)
    if proposal:
        assignments = assignments.filter(proposal__external_id__icontains=proposal)
    if state in ASSIGNMENT_STATES:
        assignments = assignments.filter(ASSIGNMENT_STATES[state])
    return assignments.select_related("reviewer", "proposal", "review").order_by("reviewer__username", "position")


def assignment_state(assignment: Assignment) -> str:
    """not_started, in_progress, submitted or deferred (load `review` with select_related)."""
    review = getattr(assignment, "review", None)
    if review is not None and review.status == Review.Status.SUBMITTED:
        return "submitted"
    if assignment.deferred_at:
        return "deferred"
    return "not_started" if review is None else "in_progress"


def proposal_with_id(external_id: str, *, cohort: Cohort | None = None) -> Proposal:
    """The proposal with this imported id (in the cohort, when one is named); ServiceError when there is none."""
    proposals = Proposal.objects.all() if cohort is None else Proposal.objects.filter(cohorts=cohort)
    proposal = proposals.filter(external_id=external_id).first()
    if proposal is None:
        where = "This cohort has" if cohort is not None else "There is"
        raise ServiceError(f"{where} no proposal “{external_id}”.", code="unknown_proposal")
    return proposal


TITLE_LENGTH = 160
# A sentence ends at . ! or ? followed by white space (or the end); "e.g. " inside a sentence ends it too early,
# which a title can live with.
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def proposal_title(statement: str) -> str:
    """A proposal's title: it has no title field, so the first sentence of its statement, at most TITLE_LENGTH
    characters (cut at a word, with an ellipsis)."""
    text = " ".join(statement.split())
    end = _SENTENCE_END.search(text)
    title = text[: end.end()] if end else text
    if len(title) <= TITLE_LENGTH:
        return title
    return title[: TITLE_LENGTH - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"


@dataclass(frozen=True)
class CohortProposal:
    external_id: str
    title: str
    task_key: str
    author: str
    assigned: int
    submitted: int


def cohort_proposal_rows(cohort: Cohort) -> QuerySet:
    """The cohort's proposals in import order with their review counts (values; paginate it, then read each row
    with `cohort_proposal`)."""
    in_cohort = Q(assignments__cohort=cohort)
    return (
        cohort.proposals.order_by("pk")
        .annotate(
            assigned=Count("assignments", filter=in_cohort),
            submitted=Count("assignments", filter=in_cohort & Q(assignments__review__status=Review.Status.SUBMITTED)),
        )
        .values("external_id", "statement", "task__key", "author", "assigned", "submitted")
    )


def cohort_proposal(row: dict) -> CohortProposal:
    return CohortProposal(
        external_id=row["external_id"],
        title=proposal_title(row["statement"]),
        task_key=row["task__key"],
        author=row["author"],
        assigned=row["assigned"],
        submitted=row["submitted"],
    )

"""Reads for the reviewer: the queue, the state of a review form, and where to go next.

Everything here returns plain frozen dataclasses built from `.values()`, never model instances, so reviewer
templates cannot reach hidden fields through relations.
"""

import json
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import groupby
from typing import cast

from django.db import connection
from django.db.models import CharField, Exists, OuterRef
from django.db.models.functions import Cast, Substr
from django.urls import reverse
from django.utils import timezone
from django.utils.text import Truncator

from reviewapp import protocol
from reviewapp.models import AuditEvent, Cohort, Review
from reviewapp.selectors.packets import Packet, packet_from_row, packet_values, reviewer_assignments

QUEUE_ORDER = ("cohort__created_at", "cohort_id", "position", "pk")
EXCERPT_LENGTH = 240

FORM_FIELDS = ("overall", "recommendation", *protocol.CRITERION_FIELDS, "flaw_verdict")


class ItemStatus:
    NOT_STARTED = "not_started"
    DRAFT = "draft"
    SUBMITTED = "submitted"
    DEFERRED = "deferred"
    CLOSED = "closed"  # unsubmitted in a closed cohort: can no longer be done

    LABELS = {
        NOT_STARTED: "Not started",
        DRAFT: "Draft",
        SUBMITTED: "Submitted",
        DEFERRED: "Deferred",
        CLOSED: "Closed",
    }


# How much of a statement the queue shows.
SHOWN_EXCERPT = 140


def shown_excerpt(text: str) -> str:
    """The statement as the queue shows it: Django's truncatechars:SHOWN_EXCERPT, without its per-character walk for
    plain ASCII text (the same result)."""
    if text.isascii():
        return text if len(text) <= SHOWN_EXCERPT else text[: SHOWN_EXCERPT - 1] + "…"
    return Truncator(text).chars(SHOWN_EXCERPT)


@dataclass(frozen=True)
class QueueItem:
    assignment_id: int
    number: int  # 1-based place in the reviewer's queue of its cohort
    cohort_total: int  # the reviewer's assignments in that cohort
    cohort_name: str
    editable: bool
    status: str
    excerpt: str
    last_saved_at: datetime | None
    url: str = ""  # the review page
    reopened: bool = False  # a draft again because a coordinator reopened the submitted review

    @property
    def status_label(self) -> str:
        return ItemStatus.LABELS[self.status]

    @property
    def shown_excerpt(self) -> str:
        return shown_excerpt(self.excerpt)


@dataclass(frozen=True)
class ReviewQueue:
    items: tuple[QueueItem, ...]
    submitted: int
    continue_item: QueueItem | None

    @property
    def total(self) -> int:
        return len(self.items)

    @property
    def deferred(self) -> int:
        return sum(item.status == ItemStatus.DEFERRED for item in self.items)

    @property
    def reopened(self) -> int:
        return sum(item.reopened for item in self.items)

    @property
    def cohorts(self) -> list[tuple[str, list[QueueItem]]]:
        """The items grouped by consecutive cohort name (the queue's order keeps a cohort's items together)."""
        return [(name, list(items)) for name, items in groupby(self.items, key=lambda item: item.cohort_name)]

    @property
    def percent(self) -> int:
        return round(100 * self.submitted / self.total) if self.items else 0


def _item_status(row) -> str:
    if row["review__status"] == Review.Status.SUBMITTED:
        return ItemStatus.SUBMITTED
    if row["cohort__status"] != Cohort.Status.OPEN:
        return ItemStatus.CLOSED
    if row["deferred_at"] is not None:
        return ItemStatus.DEFERRED
    if row["review__status"] == Review.Status.DRAFT:
        return ItemStatus.DRAFT
    return ItemStatus.NOT_STARTED


def _queue_rows(reviewer):
    # A draft whose review a coordinator reopened (reviewapp.services.reviews.review_reopen records it) is pointed out
    # to its reviewer: it was submitted once and needs their attention again.
    reopened = AuditEvent.objects.filter(
        action="review_reopened", target_type="review", target_id=Cast(OuterRef("review__pk"), CharField())
    )
    return (
        reviewer_assignments(reviewer=reviewer)
        .order_by(*QUEUE_ORDER)
        .annotate(excerpt=Substr("proposal__statement", 1, EXCERPT_LENGTH), reopened=Exists(reopened))
        .values(
            "pk",
            "cohort_id",
            "cohort__name",
            "cohort__status",
            "deferred_at",
            "review__status",
            "review__last_saved_at",
            "excerpt",
            "reopened",
        )
    )


def reviewer_queue(*, reviewer) -> ReviewQueue:
    """The reviewer's assignments in queue order, in one query whatever their number."""
    rows = list(_queue_rows(reviewer))
    # Each cohort is numbered on its own, "3 of 20" in this cohort (docs/protocol.md#blinded-review-form).
    totals = Counter(row["cohort_id"] for row in rows)
    numbers = dict.fromkeys(totals, 0)
    url_prefix, url_suffix = _review_page_url_parts()
    items = []
    for row in rows:
        cohort_id, assignment_id = row["cohort_id"], row["pk"]
        numbers[cohort_id] = number = numbers[cohort_id] + 1
        items.append(
            QueueItem(
                assignment_id=assignment_id,
                number=number,
                cohort_total=totals[cohort_id],
                cohort_name=row["cohort__name"],
                editable=row["cohort__status"] == Cohort.Status.OPEN,
                status=_item_status(row),
                excerpt=row["excerpt"],
                last_saved_at=row["review__last_saved_at"],
                url=f"{url_prefix}{assignment_id}{url_suffix}",
                reopened=row["reopened"] and row["review__status"] == Review.Status.DRAFT,
            )
        )
    drafts = [item for item in items if item.status == ItemStatus.DRAFT]
    continue_item: QueueItem | None
    if drafts:
        # A draft has a review, and a review always has a save time.
        continue_item = max(drafts, key=lambda item: cast(datetime, item.last_saved_at))
    else:
        continue_item = next((item for item in items if item.status == ItemStatus.NOT_STARTED), None)
    return ReviewQueue(
        items=tuple(items),
        submitted=sum(item.status == ItemStatus.SUBMITTED for item in items),
        continue_item=continue_item,
    )


def _review_page_url_parts() -> tuple[str, str]:
    """The review page's URL before and after the assignment's id: reversed once, then filled in (a reverse per item
    is most of a long queue's time)."""
    marker = 2_147_483_647
    prefix, suffix = reverse("review-page", args=[marker]).split(str(marker))
    return prefix, suffix


def next_assignment_id(*, reviewer, after_assignment_id: int | None = None) -> int | None:
    """The first assignment still to do (open cohort, unsubmitted, not deferred), in queue order."""
    to_do = (
        reviewer_assignments(reviewer=reviewer)
        .filter(cohort__status=Cohort.Status.OPEN, deferred_at__isnull=True)
        .exclude(review__status=Review.Status.SUBMITTED)
    )
    if after_assignment_id is not None:
        to_do = to_do.exclude(pk=after_assignment_id)
    return to_do.order_by(*QUEUE_ORDER).values_list("pk", flat=True).first()


@dataclass(frozen=True)
class ReviewState:
    """The answers recorded so far, as the form shows them (every value a string, "" when unanswered)."""

    exists: bool
    status: str
    version: int
    answers: dict
    flaw_checklist: tuple[str, ...]
    main_flaw: str
    comments: str
    last_saved_at: datetime | None
    submitted_at: datetime | None
    # When the answers stored were last edited in the browser that saved them (ms since the epoch, that browser's
    # clock; 0 when the save did not say, e.g. a form sent without the page's script).
    saved_edit_ms: int = 0

    @property
    def submitted(self) -> bool:
        return self.status == Review.Status.SUBMITTED

    @property
    def criteria_unlocked(self) -> bool:
        """The six criteria are shown only once the overall judgement and the recommendation are recorded."""
        return bool(self.answers["overall"] and self.answers["recommendation"])

    @property
    def checklist_shown(self) -> bool:
        return self.answers["flaw_verdict"] not in ("", "absent")


EMPTY_REVIEW_STATE = ReviewState(
    exists=False,
    status=Review.Status.DRAFT,
    version=0,
    answers=dict.fromkeys(FORM_FIELDS, ""),
    flaw_checklist=(),
    main_flaw="",
    comments="",
    last_saved_at=None,
    submitted_at=None,
)

_STATE_COLUMNS = (
    "status",
    "version",
    *FORM_FIELDS,
    "flaw_checklist",
    "main_flaw",
    "comments",
    "last_saved_at",
    "submitted_at",
    "saved_edit_ms",
)


def _state_from_row(row: dict) -> ReviewState:
    answers = {field: "" if row[field] is None else str(row[field]) for field in FORM_FIELDS}
    return ReviewState(
        exists=True,
        status=row["status"],
        version=row["version"],
        answers=answers,
        flaw_checklist=tuple(row["flaw_checklist"] or ()),
        main_flaw=row["main_flaw"],
        comments=row["comments"],
        last_saved_at=row["last_saved_at"],
        submitted_at=row["submitted_at"],
        saved_edit_ms=row["saved_edit_ms"] or 0,
    )


def review_state(*, assignment_id: int) -> ReviewState:
    row = Review.objects.filter(assignment_id=assignment_id).values(*_STATE_COLUMNS).first()
    return EMPTY_REVIEW_STATE if row is None else _state_from_row(row)


def review_state_from(review: Review) -> ReviewState:
    """The state of a review a service just wrote, without reading it again."""
    return _state_from_row({column: getattr(review, column) for column in _STATE_COLUMNS})


@dataclass(frozen=True)
class ReviewerAssignment:
    """What the review page shows of the reviewer's own assignment, beside its packet and review."""

    assignment_id: int
    cohort_open: bool
    deferred_reason: str
    deferred_at: datetime | None

    @classmethod
    def of(cls, assignment) -> "ReviewerAssignment":
        """From an assignment read with its cohort (the views' own, before a write)."""
        return cls(
            assignment_id=assignment.pk,
            cohort_open=assignment.cohort.status == Cohort.Status.OPEN,
            deferred_reason=assignment.deferred_reason,
            deferred_at=assignment.deferred_at,
        )


@dataclass(frozen=True)
class ReviewPage:
    assignment: ReviewerAssignment
    packet: Packet
    state: ReviewState


_PAGE_ASSIGNMENT_COLUMNS = ("pk", "cohort__status", "deferred_reason", "deferred_at")
_PAGE_STATE_COLUMNS = {column: f"review__{column}" for column in _STATE_COLUMNS}


# The review page's one query, written out with named parameters: the ORM took longer to build and compile it (two
# correlated counts) than the database takes to answer it. Its columns are the packet's whitelist and the reviewer's
# own: its ORM twin, `review_page_query`, is checked to give the same rows (tests/reviewapp/test_review_page_query.py).
REVIEW_PAGE_SQL = """
SELECT
    (SELECT COUNT(*) FROM reviewapp_assignment AS mine
        WHERE mine.cohort_id = a.cohort_id AND mine.reviewer_id = %(reviewer_id)s) AS queue_total,
    (SELECT COUNT(*) FROM reviewapp_assignment AS mine
        WHERE mine.cohort_id = a.cohort_id AND mine.reviewer_id = %(reviewer_id)s
        AND (mine.position < a.position OR (mine.position = a.position AND mine.id < a.id))) AS queue_earlier,
    c.name AS cohort__name,
    t.question AS proposal__task__question,
    t.background AS proposal__task__background,
    p.statement AS proposal__statement,
    p.mechanism AS proposal__mechanism,
    p.prediction AS proposal__prediction,
    p.domain_category AS proposal__domain_category,
    p.investigation_plan AS proposal__investigation_plan,
    p.data_requirements AS proposal__data_requirements,
    p.alternative_explanations AS proposal__alternative_explanations,
    p.citations AS proposal__citations,
    a.id AS pk,
    c.status AS cohort__status,
    a.deferred_reason AS deferred_reason,
    a.deferred_at AS deferred_at,
    r.status AS review__status,
    r.version AS review__version,
    r.overall AS review__overall,
    r.recommendation AS review__recommendation,
    r.importance AS review__importance,
    r.advance_over_known_work AS review__advance_over_known_work,
    r.plausible_evidence_bounded AS review__plausible_evidence_bounded,
    r.data_fit AS review__data_fit,
    r.alternative_explanations AS review__alternative_explanations,
    r.informative_results AS review__informative_results,
    r.flaw_verdict AS review__flaw_verdict,
    r.flaw_checklist AS review__flaw_checklist,
    r.main_flaw AS review__main_flaw,
    r.comments AS review__comments,
    r.last_saved_at AS review__last_saved_at,
    r.submitted_at AS review__submitted_at,
    r.saved_edit_ms AS review__saved_edit_ms
FROM reviewapp_assignment AS a
JOIN reviewapp_cohort AS c ON c.id = a.cohort_id
JOIN reviewapp_proposal AS p ON p.id = a.proposal_id
JOIN reviewapp_researchtask AS t ON t.id = p.task_id
LEFT JOIN reviewapp_review AS r ON r.assignment_id = a.id
WHERE a.id = %(assignment_id)s AND a.reviewer_id = %(reviewer_id)s AND c.status IN (%(open)s, %(closed)s)
"""
_PAGE_TIMES = ("deferred_at", "review__last_saved_at", "review__submitted_at")


def review_page_query(*, reviewer_id: int, assignment_id: int):
    """The ORM twin of REVIEW_PAGE_SQL: the same row as `.values()`."""
    return packet_values(
        reviewer=reviewer_id,
        assignment_id=assignment_id,
        own_columns=(*_PAGE_ASSIGNMENT_COLUMNS, *_PAGE_STATE_COLUMNS.values()),
    )


def review_page_row(*, reviewer_id: int, assignment_id: int) -> dict | None:
    """The row of REVIEW_PAGE_SQL as the ORM's `.values()` gives it (times aware, the checklist a list); None when the
    assignment is not the reviewer's to see."""
    parameters: dict[str, int | str] = {
        "reviewer_id": reviewer_id,
        "assignment_id": assignment_id,
        "open": Cohort.Status.OPEN,
        "closed": Cohort.Status.CLOSED,
    }
    with connection.cursor() as cursor:
        cursor.execute(REVIEW_PAGE_SQL, parameters)
        found = cursor.fetchone()
        if found is None:
            return None
        row = dict(zip((column[0] for column in cursor.description), found, strict=True))
    for column in _PAGE_TIMES:
        # SQLite gives the stored UTC time without its zone.
        if row[column] is not None and timezone.is_naive(row[column]):
            row[column] = row[column].replace(tzinfo=UTC)
    checklist = row["review__flaw_checklist"]
    if isinstance(checklist, str | bytes):  # the JSON's text, as the drivers give it to a plain query
        row["review__flaw_checklist"] = json.loads(checklist)
    return row


def review_page(*, reviewer, assignment_id: int) -> ReviewPage | None:
    """One of the reviewer's own assignments in a visible cohort with its packet and the answers recorded so far, in
    one query; None when it is not theirs to see."""
    row = review_page_row(reviewer_id=reviewer.pk, assignment_id=assignment_id)
    if row is None:
        return None
    # A review always has a status: none means the reviewer has not saved anything yet.
    has_review = row[_PAGE_STATE_COLUMNS["status"]] is not None
    return ReviewPage(
        assignment=ReviewerAssignment(
            assignment_id=row["pk"],
            cohort_open=row["cohort__status"] == Cohort.Status.OPEN,
            deferred_reason=row["deferred_reason"],
            deferred_at=row["deferred_at"],
        ),
        packet=packet_from_row(row),
        state=(
            _state_from_row({column: row[key] for column, key in _PAGE_STATE_COLUMNS.items()})
            if has_review
            else EMPTY_REVIEW_STATE
        ),
    )

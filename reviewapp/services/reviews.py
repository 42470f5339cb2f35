"""Writes of the review form: draft autosave with optimistic concurrency, submit and lock, reopen, defer."""

from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from reviewapp import protocol
from reviewapp.core import roles
from reviewapp.core.errors import Forbidden, Problem, ServiceError, problem
from reviewapp.models import Assignment, AuditEvent, Cohort, Review

# Time on task counts the gaps between saves, but at most this much per gap, so idle time is not counted.
MAX_COUNTED_GAP_SECONDS = 300
MAX_TEXT_LENGTH = 20_000


class ReviewError(ServiceError):
    """A review write that cannot be done; the message is written for the reviewer."""


class StaleReview(ReviewError):
    code = "stale_review"
    status = 409

    def __init__(self):
        super().__init__("This review was changed in another tab or window since this page loaded.")


class ReviewForbidden(ReviewError):
    """A review write by someone who may not write this review (403)."""

    code = Forbidden.code
    status = Forbidden.status


class ReviewLocked(ReviewError):
    code = "review_locked"
    status = 409


class ReviewNotSubmitted(ReviewError):
    code = "review_not_submitted"
    status = 409


class ReviewInvalid(ReviewError):
    """Values outside the protocol's scales; nothing was saved."""

    code = "invalid_review"
    status = 422

    def __init__(self, errors: dict[str, str]):
        self.errors = errors
        super().__init__(" ".join(errors.values()), problems=_problems(errors))


class ReviewIncomplete(ReviewError):
    """Submission refused because questions are unanswered; the answers given were saved as a draft."""

    code = "review_incomplete"
    status = 422

    def __init__(self, errors: dict[str, str], review: Review):
        self.errors = errors
        self.review = review
        super().__init__(" ".join(errors.values()), problems=_problems(errors))


def _problems(errors: dict[str, str]) -> list[Problem]:
    return [problem(message, field=name) for name, message in errors.items()]


def review_check_writable(*, assignment: Assignment, reviewer) -> None:
    """Refuse a write of this review by this reviewer when the state forbids it (someone else's review, a closed
    cohort): refused before any value of the write is looked at (reviewapp/api/reviews.py)."""
    if assignment.reviewer_id != reviewer.pk:
        raise ReviewForbidden("Only the assigned reviewer can write this review.")
    if assignment.cohort.status != Cohort.Status.OPEN:
        raise ReviewLocked("This cohort is closed; its reviews can no longer be changed.")


def missing_answers(answers: dict) -> dict[str, str]:
    """Questions a submitted review must answer ("Can't judge" is an answer), field → message."""
    errors = {}
    if answers["overall"] in (None, ""):
        errors["overall"] = "Choose the overall research value."
    if not answers["recommendation"]:
        errors["recommendation"] = "Choose a recommendation."
    for field in protocol.CRITERION_FIELDS:
        if not answers[field]:
            errors[field] = "Rate this criterion, or choose “Can't judge”."
    if not answers["flaw_verdict"]:
        errors["flaw_verdict"] = "Choose a design-flaw verdict."
    return errors


@dataclass(frozen=True)
class SaveSender:
    """Where a save comes from: the browser tab (an id it keeps for its lifetime, across reloads) and when its answers
    were last edited there (ms since the epoch, the browser's clock)."""

    tab: str = ""
    edited_ms: int = 0


NO_SENDER = SaveSender()


def _counted_seconds(since: datetime | None, now: datetime) -> int:
    if since is None:
        return 0
    return int(min(max((now - since).total_seconds(), 0), MAX_COUNTED_GAP_SECONDS))


def _write(*, assignment, reviewer, answers, version, opened_at, submit, sender) -> tuple[Review, dict[str, str]]:
    """Save the answers (and lock when submitting a complete review). Returns the review and what is missing."""
    review_check_writable(assignment=assignment, reviewer=reviewer)
    given = answers
    now = timezone.now()
    # Locked: two saves of one review are decided one after the other, each seeing what the other wrote.
    review = Review.objects.select_for_update().filter(assignment=assignment).first()
    if review is None:
        if version != 0:
            raise StaleReview()
        review = Review(assignment=assignment)
        gap = _counted_seconds(opened_at, now)
    else:
        if review.status == Review.Status.SUBMITTED:
            raise ReviewLocked("This review has been submitted and is locked; a coordinator can reopen it.")
        if review.version != version:
            # Saving exactly what is already stored overwrites nothing (e.g. the same answers sent when a tab
            # closed and again when it reopened): the reviewer gets the current version instead of an error.
            if not submit and all(getattr(review, field) == value for field, value in given.items()):
                return review, {}
            if not sender.tab or sender.tab != review.saved_by_tab:
                raise StaleReview()
            # The same tab's own saves crossed (one sent as its page reloaded arrived after the new page loaded):
            # the newer answers win, an older save changes nothing.
            if sender.edited_ms <= review.saved_edit_ms:
                return review, {}
            version = review.version
        gap = _counted_seconds(review.last_saved_at, now)
    answers = {field: getattr(review, field) for field in protocol.ANSWER_FIELDS} | given
    # The checklist describes a declared flaw; with no flaw declared it has nothing to describe.
    if answers["flaw_verdict"] in ("", "absent"):
        answers["flaw_checklist"] = []
    missing = missing_answers(answers) if submit else {}
    lock = submit and not missing
    changes = {
        **answers,
        "version": version + 1,
        "last_saved_at": now,
        "saved_by_tab": sender.tab,
        "saved_edit_ms": sender.edited_ms,
        "status": Review.Status.SUBMITTED if lock else Review.Status.DRAFT,
        "submitted_at": now if lock else None,
    }
    if review.pk is None:
        # A second tab racing on the first save hits the one-review-per-assignment constraint: see review_save.
        review = Review.objects.create(assignment=assignment, seconds_spent=gap, **changes)
        return review, missing
    updated = Review.objects.filter(pk=review.pk, version=version, status=Review.Status.DRAFT).update(
        seconds_spent=F("seconds_spent") + gap, **changes
    )
    if not updated:
        raise StaleReview()
    for field, value in changes.items():
        setattr(review, field, value)
    review.seconds_spent += gap
    return review, missing


def _write_atomically(
    *, assignment, reviewer, answers, version, opened_at, submit, sender
) -> tuple[Review, dict[str, str]]:
    try:
        with transaction.atomic():
            return _write(
                assignment=assignment,
                reviewer=reviewer,
                answers=answers,
                version=version,
                opened_at=opened_at,
                submit=submit,
                sender=sender,
            )
    except IntegrityError as error:
        if Review.objects.filter(assignment=assignment).exists():
            raise StaleReview() from error
        raise


def review_save(
    *,
    assignment,
    reviewer,
    answers: dict,
    version: int,
    opened_at: datetime | None = None,
    sender: SaveSender = NO_SENDER,
) -> Review:
    """Save a draft. `answers` holds the answers to change, validated (reviewapp/api/reviews.py: model field → typed
    value; absent keys are kept); `version` is the one the
    reviewer's page started from: if the review changed since, StaleReview is raised and nothing is written, unless
    the change was the same tab's own (`sender`, see SaveSender). `opened_at` (when the page was opened) lets the first
    save count the reading time."""
    review, _ = _write_atomically(
        assignment=assignment,
        reviewer=reviewer,
        answers=answers,
        version=version,
        opened_at=opened_at,
        submit=False,
        sender=sender,
    )
    return review


def review_submit(
    *,
    assignment,
    reviewer,
    answers: dict,
    version: int,
    opened_at: datetime | None = None,
    sender: SaveSender = NO_SENDER,
) -> Review:
    """Save, then lock the review if it is complete; otherwise raise ReviewIncomplete.

    An incomplete submission still keeps the answers given (the save commits before the error is raised).
    """
    review, missing = _write_atomically(
        assignment=assignment,
        reviewer=reviewer,
        answers=answers,
        version=version,
        opened_at=opened_at,
        submit=True,
        sender=sender,
    )
    if missing:
        raise ReviewIncomplete(missing, review=review)
    return review


@transaction.atomic
def review_reopen(*, review: Review, user) -> Review:
    """Return a submitted review to draft so its reviewer can change it (coordinators only, audit-logged)."""
    if not roles.can_coordinate(user):
        raise Forbidden("Only a coordinator can reopen a submitted review.")
    submitted_at = Review.objects.filter(pk=review.pk).values_list("submitted_at", flat=True).first()
    # Bumping the version makes any page still showing the submitted review stale.
    reopened = Review.objects.filter(pk=review.pk, status=Review.Status.SUBMITTED).update(
        status=Review.Status.DRAFT, submitted_at=None, version=F("version") + 1
    )
    if not reopened:
        raise ReviewNotSubmitted("This review is not submitted; there is nothing to reopen.")
    assert submitted_at is not None  # it was submitted, and a submitted review has its time (a DB constraint)
    AuditEvent.objects.create(
        actor=user,
        action="review_reopened",
        target_type="review",
        target_id=str(review.pk),
        data={"assignment": review.assignment_id, "submitted_at": submitted_at.isoformat()},
    )
    review.refresh_from_db()
    return review


@transaction.atomic
def assignment_defer(*, assignment: Assignment, reviewer, reason: str) -> Assignment:
    """Skip an assignment for now, with a reason the coordinator reads (validated: reviewapp/api/reviews.py). It stays
    in the queue."""
    review_check_writable(assignment=assignment, reviewer=reviewer)
    if Review.objects.filter(assignment=assignment, status=Review.Status.SUBMITTED).exists():
        raise ReviewLocked("This review has been submitted; there is nothing left to skip.")
    now = timezone.now()
    Assignment.objects.filter(pk=assignment.pk).update(deferred_reason=reason, deferred_at=now)
    assignment.deferred_reason, assignment.deferred_at = reason, now
    return assignment

"""Pages: the reviewer's queue and the review page (blinded packet + the protocol's form, autosaved with htmx).

Templates here receive only packets and review states (frozen dataclasses from the selectors), never model
instances: blinding is enforced by what reaches the template, not by what the template chooses to show.
"""

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import cache, wraps
from typing import NamedTuple

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core import signing
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import HttpResponseClientRedirect, reswap, retarget, trigger_client_event

from reviewapp import protocol
from reviewapp.api.reviews import validated_answers, validated_defer_reason
from reviewapp.core import roles
from reviewapp.models import Assignment
from reviewapp.selectors import packets, reviews
from reviewapp.services.reviews import (
    ReviewError,
    ReviewIncomplete,
    ReviewInvalid,
    ReviewLocked,
    SaveSender,
    StaleReview,
    assignment_defer,
    review_save,
    review_submit,
)

PAGE_TEMPLATE = "reviewapp/review_page.html"
OPENED_SALT = "review-page-opened"
SESSION_EXPIRED = "your session expired; log in again in another tab, your answers are kept in this browser"
STALE = "this review was changed in another tab or window. Reload the page to continue from the latest version."
# The fields of the form a reviewer answers in one value each (the checklist is a list).
ANSWER_FIELDS = (*reviews.FORM_FIELDS, "main_flaw", "comments")
# Keyboard digits of the design-flaw verdicts, in protocol order; 0 is always "Can't judge".
FLAW_VERDICT_KEYS = {"absent": "1", "fixable": "2", "fatal": "3", protocol.CANT_JUDGE: "0"}


def reviewer_page(view):
    """Reviewers only: anonymous users log in (a background save is told instead), other roles get 403."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not request.user.is_authenticated:
            if request.htmx:
                return render(request, f"{PAGE_TEMPLATE}#save_status", {"save_error": SESSION_EXPIRED}, status=401)
            return redirect_to_login(request.get_full_path())
        if not roles.can_review(request.user):
            raise PermissionDenied
        return view(request, *args, **kwargs)

    return wrapped


def _get_assignment_for_reviewer(request, assignment_id: int) -> Assignment:
    """The reviewer's own assignment in a visible cohort; anything else is 404, never revealing it exists."""
    return packets.reviewer_assignment(reviewer=request.user, assignment_id=assignment_id)


class Option(NamedTuple):
    """One point of a question's scale; a tuple, which the template unpacks in its loop over the options."""

    value: str
    key: str  # the digit that chooses it
    label: str
    anchor: str


@dataclass(frozen=True)
class FormQuestion:
    """One question of the protocol's form as every reviewer sees it, before any answer."""

    name: str
    label: str
    prompt: str
    options: tuple[Option, ...]


@dataclass(frozen=True)
class Question:
    """A question with this reviewer's answer and the error of a refused submission, rendered by
    templates/jinja2/reviewapp/_question.html (`{% jinja_fragment %}`)."""

    form: FormQuestion
    answer: str
    error: str

    @property
    def name(self) -> str:
        return self.form.name

    @property
    def label(self) -> str:
        return self.form.label

    @property
    def chosen(self) -> Option | None:
        """The recorded answer, for the read-only view of a review."""
        return next((option for option in self.form.options if option.value == self.answer), None)


def _form_question(name, label, prompt, options) -> FormQuestion:
    return FormQuestion(name=name, label=label, prompt=prompt, options=tuple(Option(*option) for option in options))


@dataclass(frozen=True)
class FormQuestions:
    head: tuple[FormQuestion, ...]  # overall research value, recommendation
    criteria: tuple[FormQuestion, ...]
    flaw_verdict: FormQuestion


@cache
def form_questions() -> FormQuestions:
    """The protocol's questions in the order they are asked (docs/protocol.md#blinded-review-form): built once per
    process from the protocol's constants, the same for every reviewer; each request renders them with its answers."""
    overall = _form_question(
        "overall",
        "Overall research value",
        "",
        [(str(value), str(value), label, anchor) for value, label, anchor in protocol.OVERALL_SCALE],
    )
    recommendation = _form_question(
        "recommendation",
        "Recommendation",
        "",
        [(key, str(n), label, anchor) for n, (key, label, anchor) in enumerate(protocol.RECOMMENDATIONS, start=1)],
    )
    criteria = tuple(
        _form_question(
            field,
            label,
            prompt,
            [(str(n), str(n), "", anchor) for n, anchor in enumerate(anchors, start=1)]
            + [(protocol.CANT_JUDGE, "0", protocol.CANT_JUDGE_LABEL, "")],
        )
        for field, label, prompt, anchors in protocol.CRITERIA
    )
    flaw_verdict = _form_question(
        "flaw_verdict",
        "Design-flaw verdict",
        "Does the investigation plan have a consequential design flaw?",
        [(key, FLAW_VERDICT_KEYS[key], label, anchor) for key, label, anchor in protocol.FLAW_VERDICTS],
    )
    return FormQuestions(head=(overall, recommendation), criteria=criteria, flaw_verdict=flaw_verdict)


def _form_context(state: reviews.ReviewState, errors: dict) -> dict:
    """The protocol's questions with the recorded answers, in the order they are asked."""
    questions = form_questions()

    def question(form: FormQuestion) -> Question:
        return Question(form=form, answer=state.answers[form.name], error=errors.get(form.name, ""))

    return {
        "state": state,
        # Every field's message, "" when it has none: the template reads them by name, and a name missing from a dict
        # costs Django's template language a chain of failed lookups.
        "errors": {**dict.fromkeys(ANSWER_FIELDS, ""), **errors},
        "head_questions": [question(form) for form in questions.head],
        "criteria": [question(form) for form in questions.criteria],
        "flaw_verdict": question(questions.flaw_verdict),
        "checklist": [(key, label, key in state.flaw_checklist) for key, label in protocol.FLAW_CHECKLIST],
    }


def _page_context(assignment: reviews.ReviewerAssignment, state: reviews.ReviewState, errors=None) -> dict:
    editable = assignment.cohort_open and not state.submitted
    return {
        **_form_context(state, errors or {}),
        "assignment_id": assignment.assignment_id,
        "page_url": reverse("review-page", args=[assignment.assignment_id]),
        "editable": editable,
        "deferred_reason": assignment.deferred_reason,
        "deferred_at": assignment.deferred_at,
        "opened": signing.dumps(int(timezone.now().timestamp()), salt=OPENED_SALT),
        "server_edited_ms": _server_edited_ms(state),
    }


def _server_edited_ms(state: reviews.ReviewState) -> int:
    """How recent the stored answers are, for the page's script to decide whether this browser's copy is newer: the
    time they were edited in the browser that saved them (the browser's clock, as its copy's), else when they were
    saved. Not the save's arrival: a save sent before the last keystrokes can arrive after them."""
    if state.saved_edit_ms:
        return state.saved_edit_ms
    return int(state.last_saved_at.timestamp() * 1000) if state.last_saved_at else 0


def _render_page(
    request,
    page: reviews.ReviewPage,
    state=None,
    errors=None,
    defer_error="",
    defer_draft="",
    save_error="",
    status=200,
):
    """The page, with the answers recorded (or `state`, the posted ones). save_error: why the answers shown were not
    saved (then they are the posted ones, kept in the form); defer_draft: the reason for skipping that was refused
    (kept in its box)."""
    context = {
        **_page_context(page.assignment, state or page.state, errors),
        "packet": page.packet,
        "defer_error": defer_error,
        "defer_draft": defer_draft,
        "save_error": save_error,
        "submit_failed": bool(errors) and not save_error,
    }
    return render(request, PAGE_TEMPLATE, context, status=status)


def _state_with_posted(state: reviews.ReviewState, data: dict) -> reviews.ReviewState:
    """The recorded state with the posted answers in their place: a refused save shows them again, losing none."""
    answers = {**state.answers, **{field: str(data[field]) for field in state.answers if field in data}}
    return replace(
        state,
        answers=answers,
        flaw_checklist=tuple(data.get("flaw_checklist", state.flaw_checklist)),
        main_flaw=str(data.get("main_flaw", state.main_flaw)),
        comments=str(data.get("comments", state.comments)),
    )


def _opened_at(signed: str) -> datetime | None:
    try:
        return datetime.fromtimestamp(signing.loads(signed, salt=OPENED_SALT), tz=UTC)
    except (signing.BadSignature, TypeError, ValueError, OverflowError):
        return None


def _posted_answers(post) -> dict:
    """The answers in the posted form. Unanswered radios are absent and so left unchanged; the checklist is
    read only when the page showed it (it can be emptied by unticking every box)."""
    data = {field: post[field] for field in ANSWER_FIELDS if field in post}
    if "checklist" in post.getlist("shown"):
        data["flaw_checklist"] = [item for item in post.getlist("flaw_checklist") if item]
    return data


def _save_status(request, message: str, status: int):
    """The indicator's "Not saved — …" answer, swapped into the indicator whatever element posted."""
    response = render(request, f"{PAGE_TEMPLATE}#save_status", {"save_error": message}, status=status)
    return reswap(retarget(response, "#save-status"), "innerHTML")


def _after_done(request, assignment):
    """Where a reviewer goes after submitting or skipping: the next assignment to do, else the queue."""
    next_id = reviews.next_assignment_id(reviewer=request.user, after_assignment_id=assignment.pk)
    url = reverse("review-page", args=[next_id]) if next_id else reverse("review-queue")
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


def _review_page_of(request, assignment_id: int) -> reviews.ReviewPage:
    """The page's reads of the reviewer's own assignment; anything else is 404, never revealing it exists."""
    page = reviews.review_page(reviewer=request.user, assignment_id=assignment_id)
    if page is None:
        raise Http404
    return page


def _defer(request, assignment):
    posted = {"deferred_reason": request.POST.get("deferred_reason", "")}
    reason = posted["deferred_reason"]
    try:
        valid_reason = validated_defer_reason(posted, assignment=assignment, reviewer=request.user)
        assignment_defer(assignment=assignment, reviewer=request.user, reason=valid_reason)
    except ReviewInvalid as error:
        page = _review_page_of(request, assignment.pk)
        return _render_page(request, page, defer_error=str(error), defer_draft=reason, status=422)
    except ReviewLocked as error:
        messages.error(request, str(error))
        return redirect("review-page", assignment.pk)
    messages.success(request, "Proposal skipped; the coordinator has your reason. It stays in your queue.")
    return _after_done(request, assignment)


def _sender(post) -> SaveSender:
    """The tab a save comes from, as the page's script reports it (absent or malformed: no tab)."""
    try:
        edited_ms = max(0, int(post.get("edited_at", "0")))
    except ValueError:
        edited_ms = 0
    return SaveSender(tab=post.get("client", "")[:64], edited_ms=edited_ms)


def _save_or_submit(request, assignment, action: str):
    try:
        version = int(request.POST.get("version", ""))
    except ValueError:
        return HttpResponseBadRequest("The form's version is missing.")
    write = review_submit if action == "submit" else review_save
    data = _posted_answers(request.POST)
    try:
        review = write(
            assignment=assignment,
            reviewer=request.user,
            answers=validated_answers(data, assignment=assignment, reviewer=request.user),
            version=version,
            opened_at=_opened_at(request.POST.get("opened", "")),
            sender=_sender(request.POST),
        )
    except ReviewIncomplete as error:
        state = reviews.review_state_from(error.review)
        if request.htmx:
            context = {
                **_page_context(reviews.ReviewerAssignment.of(assignment), state, error.errors),
                "submit_failed": True,
            }
            response = render(request, f"{PAGE_TEMPLATE}#review_form", context, status=error.status)
            return reswap(retarget(response, "#review-form"), "outerHTML")
        page = _review_page_of(request, assignment.pk)
        return _render_page(request, page, state, errors=error.errors, status=error.status)
    except ReviewError as error:
        # Stale, locked or refused (out of the scales, a control character): nothing was saved, and the indicator
        # says why. The answers stay in the form: in the browser (htmx), or in the page sent back.
        message = STALE if isinstance(error, StaleReview) else error.message
        if request.htmx:
            response = _save_status(request, message, error.status)
            if isinstance(error, ReviewInvalid):
                # The page's script marks each refused field beside it (review.js, oh:field-errors).
                trigger_client_event(response, "oh:field-errors", {"errors": error.errors})
            return response
        if isinstance(error, ReviewInvalid):
            page = _review_page_of(request, assignment.pk)
            state = _state_with_posted(page.state, data)
            return _render_page(request, page, state, errors=error.errors, save_error=message, status=error.status)
        messages.error(request, f"Not saved — {message}")
        return redirect("review-page", assignment.pk)

    if action == "submit":
        messages.success(request, "Review submitted.")
        return _after_done(request, assignment)
    if not request.htmx:
        messages.success(request, "Draft saved.")
        return redirect("review-page", assignment.pk)
    state = reviews.review_state_from(review)
    shown = request.POST.getlist("shown")
    context = {
        **_form_context(state, {}),
        "editable": True,
        # Sections whose visibility changed with this save are swapped in (or out) beside the indicator.
        "swap_criteria": state.criteria_unlocked != ("criteria" in shown),
        "swap_checklist": state.checklist_shown != ("checklist" in shown),
    }
    return render(request, f"{PAGE_TEMPLATE}#save_result", context)


@reviewer_page
@require_GET
def review_queue(request):
    queue = reviews.reviewer_queue(reviewer=request.user)
    return render(request, "reviewapp/review_queue.html", {"queue": queue})


@reviewer_page
@require_http_methods(["GET", "POST"])
def review_page(request, assignment_id: int):
    if request.method == "GET":
        return _render_page(request, _review_page_of(request, assignment_id))
    assignment = _get_assignment_for_reviewer(request, assignment_id)
    action = request.POST.get("action")
    if action == "defer":
        return _defer(request, assignment)
    if action in ("save", "submit"):
        return _save_or_submit(request, assignment, action)
    return HttpResponseBadRequest("Unknown action.")


urlpatterns = [
    path("review/", review_queue, name="review-queue"),
    path("review/<int:assignment_id>/", review_page, name="review-page"),
]

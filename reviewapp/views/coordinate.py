"""Pages for coordinators (act) and analysts (read): cohorts, their assignments and progress, and people."""

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.template.loader import render_to_string
from django.urls import path, reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST
from rest_framework import serializers

from reviewapp.api.cohorts import (
    AssignmentReassignApi,
    AssignmentRules,
    CohortCreateApi,
    CohortStatusApi,
    ConflictCreateApi,
)
from reviewapp.api.users import UserCreateApi
from reviewapp.core import roles
from reviewapp.core.errors import InputInvalid, ServiceError, page_errors, validated
from reviewapp.core.pages import int_or_none
from reviewapp.models import Assignment, Cohort, Conflict
from reviewapp.selectors import cohorts as cohort_selectors
from reviewapp.selectors.cohorts import cohort_for_user
from reviewapp.selectors.users import reviewer_choices, reviewer_named, reviewers_with_ids, user_list, user_roles
from reviewapp.services import cohorts as cohort_services
from reviewapp.services import reviews as review_services
from reviewapp.services.accounts import locked_addresses, locked_usernames
from reviewapp.services.users import user_create, users_bulk_create

ASSIGNMENTS_PER_PAGE = 50
USERS_PER_PAGE = 100
FILTER_KEYS = ("reviewer", "proposal", "state", "page")


def _get_assignment_for_coordinator(request, cohort_id: int, assignment_id: int) -> Assignment:
    roles.require_coordinator(request.user)
    return cohort_selectors.assignment_get(assignment_id=assignment_id, cohort_id=cohort_id)


class AssignPageInput(AssignmentRules):
    """The assign form names reviewers by their account ids."""

    reviewers = serializers.ListField(child=serializers.IntegerField(), allow_empty=False)


class AssignmentAddPageInput(serializers.Serializer):
    """One reviewer (by username) on one proposal of the cohort (by its imported id)."""

    reviewer = serializers.CharField(max_length=150)
    proposal_id = serializers.CharField(max_length=200)


def _field_errors(error: ServiceError) -> list[dict]:
    """A refusal as the {"row", "field", "message"} lines the people page lists."""
    if isinstance(error, InputInvalid):
        fields = error.fields.items()
        return [
            {"row": None, "field": name, "message": str(problem)} for name, problems in fields for problem in problems
        ]
    return getattr(error, "errors", None) or [{"row": None, "field": "", "message": error.message}]


# Cohort list


@login_required
def cohort_list(request):
    roles.require_read_all(request.user)
    form, errors, status = {"reviewers_per_proposal": 3, "seed": 0}, [], 200
    if request.method == "POST":
        roles.require_coordinator(request.user)
        form = request.POST
        with page_errors(into=errors):
            values = validated(CohortCreateApi.InputSerializer, request.POST)
            cohort = cohort_services.cohort_create(**values, user=request.user)
            messages.success(request, f"Cohort “{cohort.name}” created. Import its proposals next.")
            return redirect("cohort-detail", cohort_id=cohort.pk)
        status = 400
    context = {"cohorts": cohort_selectors.cohorts_with_counts(), "form": form, "errors": errors}
    return render(request, "reviewapp/cohort_list.html", context, status=status)


# Cohort page


def _filters(source, prefix: str = "") -> dict[str, str]:
    """The assignments table's filters and page: from the query string, or from an action form's hidden fields."""
    return {key: source.get(prefix + key, "").strip() for key in FILTER_KEYS}


def _assignments_context(cohort: Cohort, filters: dict[str, str]) -> dict:
    assignments = cohort_selectors.cohort_assignments(
        cohort, reviewer=filters["reviewer"], proposal=filters["proposal"], state=filters["state"]
    )
    page = Paginator(assignments, ASSIGNMENTS_PER_PAGE).get_page(filters["page"])
    for assignment in page:
        assignment.state = cohort_selectors.assignment_state(assignment)
        assignment.title = cohort_selectors.proposal_title(assignment.proposal.statement)
        assignment.unstarted = getattr(assignment, "review", None) is None
    query = urlencode({key: value for key, value in filters.items() if value and key != "page"})
    return {
        "cohort": cohort,
        "page": page,
        "filters": filters,
        "filter_query": f"{query}&" if query else "",
        "states": [(state, state.replace("_", " ")) for state in cohort_selectors.ASSIGNMENT_STATES],
    }


# The cohort's pages are tabs, each its own URL: a tab link keeps its href and, with htmx, swaps only the tab
# (the "cohort_view" partial) and pushes its URL.
COHORT_TABS = (
    ("overview", "Overview", "cohort-detail"),
    ("proposals", "Proposals", "cohort-proposals"),
    ("people", "Reviewers and assignments", "cohort-people"),
    ("exports", "Exports", "cohort-exports"),
)
PROPOSALS_PER_PAGE = 100
COHORT_TEMPLATE = "reviewapp/cohort_detail.html"


def _render_tab(request, cohort: Cohort, tab: str, context: dict, status: int = 200):
    context = {"cohort": cohort, "tab": tab, "tabs": COHORT_TABS, **context}
    partial = "#cohort_view" if request.htmx and request.htmx.target == "cohort-view" else ""
    return render(request, COHORT_TEMPLATE + partial, context, status=status)


def _people_tab_context(request, cohort: Cohort, **extra) -> dict:
    reviewers = list(reviewer_choices())
    progress = cohort_selectors.cohort_progress(cohort)
    # The assign form starts with the cohort's current reviewers ticked, so topping up is one click.
    current = {row.username for row in progress.reviewers}
    assign = {
        "reviewers": {r.pk for r in reviewers if r.username in current},
        "per_proposal": cohort.reviewers_per_proposal,
        "seed": cohort.seed,
    }
    return {
        "progress": progress,
        "deferred": cohort_selectors.cohort_deferred(cohort),
        "reviewers": reviewers,
        "assign": assign,
        **_assignments_context(cohort, _filters(request.GET)),
        **extra,
    }


@login_required
def cohort_detail(request, cohort_id: int):
    """The overview tab: what the cohort is, where it stands, what to do next."""
    cohort = cohort_for_user(user=request.user, cohort_id=cohort_id, counts=True)
    context = {
        "totals": cohort_selectors.cohort_progress(cohort).totals,
        "status_moves": sorted(cohort_services.STATUS_MOVES[cohort.status]),
    }
    return _render_tab(request, cohort, "overview", context)


@login_required
def cohort_proposals(request, cohort_id: int):
    cohort = cohort_for_user(user=request.user, cohort_id=cohort_id, counts=True)
    page = Paginator(cohort_selectors.cohort_proposal_rows(cohort), PROPOSALS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    rows = [cohort_selectors.cohort_proposal(row) for row in page]
    return _render_tab(request, cohort, "proposals", {"proposal_page": page, "proposal_rows": rows})


@login_required
def cohort_people(request, cohort_id: int):
    """Reviewers and assignments: assigning, progress per reviewer, deferrals and the assignments table."""
    cohort = cohort_for_user(user=request.user, cohort_id=cohort_id, counts=True)
    if request.htmx and request.htmx.target == "assignments":
        return render(request, f"{COHORT_TEMPLATE}#assignments", _assignments_context(cohort, _filters(request.GET)))
    if request.htmx and request.htmx.target == "progress":
        context = {"cohort": cohort, "progress": cohort_selectors.cohort_progress(cohort)}
        return render(request, f"{COHORT_TEMPLATE}#progress", context)
    return _render_tab(request, cohort, "people", _people_tab_context(request, cohort))


@login_required
def cohort_exports(request, cohort_id: int):
    cohort = cohort_for_user(user=request.user, cohort_id=cohort_id, counts=True)
    return _render_tab(request, cohort, "exports", {})


@login_required
@require_POST
def cohort_status(request, cohort_id: int):
    cohort = cohort_for_user(user=request.user, cohort_id=cohort_id, counts=True)
    roles.require_coordinator(request.user)
    with page_errors(request):
        values = validated(CohortStatusApi.InputSerializer, request.POST)
        cohort = cohort_services.cohort_set_status(cohort=cohort, status=values["status"], user=request.user)
        messages.success(request, f"The cohort is now {cohort.get_status_display().lower()}.")
    return redirect("cohort-detail", cohort_id=cohort.pk)


def _confirm_opening(request, cohort: Cohort, *, action: str, fields: list[tuple[str, str]], what: str):
    """Assigning in a draft cohort opens it and freezes its proposals: say so and ask before it happens. The page
    posts the same fields again with confirm=open."""
    context = {"cohort": cohort, "action": action, "fields": fields, "what": what}
    return render(request, "reviewapp/cohort_confirm_open.html", context)


def _needs_confirmation(request, cohort: Cohort) -> bool:
    return cohort.status == Cohort.Status.DRAFT and request.POST.get("confirm") != "open"


@login_required
@require_POST
def cohort_assign(request, cohort_id: int):
    cohort = cohort_for_user(user=request.user, cohort_id=cohort_id, counts=True)
    roles.require_coordinator(request.user)
    form = {
        "reviewers": {pk for pk in map(int_or_none, request.POST.getlist("reviewers")) if pk is not None},
        **{key: request.POST.get(key, "") for key in ("per_proposal", "seed", "max_load")},
    }
    errors = []
    with page_errors(into=errors):
        values = validated(AssignPageInput, request.POST)
        reviewers = reviewers_with_ids(values["reviewers"])
        if _needs_confirmation(request, cohort):
            fields = [("reviewers", str(r.pk)) for r in reviewers]
            fields += [(key, request.POST.get(key, "")) for key in ("per_proposal", "seed", "max_load")]
            what = (
                f"Assign {len(reviewers)} reviewer{pluralize(len(reviewers))}, {values['per_proposal']} per proposal, "
                f"to the {cohort.proposal_count} proposal{pluralize(cohort.proposal_count)} of “{cohort.name}”."
            )
            return _confirm_opening(
                request, cohort, action=reverse("cohort-assign", args=[cohort.pk]), fields=fields, what=what
            )
        result = cohort_services.cohort_assign(
            cohort=cohort,
            reviewers=reviewers,
            per_proposal=values["per_proposal"],
            seed=values.get("seed", cohort.seed),
            max_load=values.get("max_load"),
            user=request.user,
        )
        loads = sorted(result.loads.values())
        spread = f" Each reviewer now holds {loads[0]}–{loads[-1]} assignments." if loads else ""
        opened = " The cohort is open for review." if cohort.status == Cohort.Status.DRAFT else ""
        messages.success(request, f"{result.created} assignments created.{spread}{opened}")
        return redirect("cohort-people", cohort_id=cohort.pk)
    context = _people_tab_context(request, cohort, assign=form, assign_error=" ".join(errors))
    return _render_tab(request, cohort, "people", context, status=400)


def _after_assignment_change(request, cohort_id: int, outcome: page_errors, success: str = ""):
    """htmx: refresh the assignments table and progress in place; otherwise back to the cohort page."""
    ok, error = outcome.ok, outcome.error
    if error is None:
        message = success
    else:
        message = " ".join(error.sentences()) if isinstance(error, InputInvalid) else error.message
    filters = _filters(request.POST, prefix="filter_")
    if request.htmx:
        cohort = cohort_for_user(user=request.user, cohort_id=cohort_id, counts=True)
        context = {
            **_assignments_context(cohort, filters),
            "progress": cohort_selectors.cohort_progress(cohort),
            "notice": message,
            "notice_ok": ok,
            "oob": True,
        }
        html = render_to_string("reviewapp/cohort_detail.html#assignments", context, request=request)
        html += render_to_string("reviewapp/cohort_detail.html#progress", context, request=request)
        return HttpResponse(html)
    (messages.success if ok else messages.error)(request, message)
    query = urlencode({key: value for key, value in filters.items() if value})
    return redirect(reverse("cohort-people", args=[cohort_id]) + (f"?{query}" if query else "") + "#assignments")


@login_required
@require_POST
def assignment_add(request, cohort_id: int):
    cohort = cohort_for_user(user=request.user, cohort_id=cohort_id, counts=True)
    roles.require_coordinator(request.user)
    success = ""
    with page_errors() as outcome:
        values = validated(AssignmentAddPageInput, request.POST)
        username, external_id = values["reviewer"], values["proposal_id"]
        if _needs_confirmation(request, cohort):
            fields = [("reviewer", username), ("proposal_id", external_id)]
            fields += [(f"filter_{key}", value) for key, value in _filters(request.POST, prefix="filter_").items()]
            what = f"Assign {username} to proposal {external_id} of “{cohort.name}”."
            return _confirm_opening(
                request, cohort, action=reverse("assignment-add", args=[cohort.pk]), fields=fields, what=what
            )
        assignment = cohort_services.assignment_add(
            cohort=cohort,
            reviewer=reviewer_named(username),
            proposal=cohort_selectors.proposal_with_id(external_id, cohort=cohort),
            user=request.user,
        )
        success = f"{username} will review {external_id} (position {assignment.position} in their queue)."
    return _after_assignment_change(request, cohort.pk, outcome, success)


@login_required
@require_POST
def assignment_remove(request, cohort_id: int, assignment_id: int):
    assignment = _get_assignment_for_coordinator(request, cohort_id, assignment_id)
    label = f"{assignment.reviewer.username} on {assignment.proposal.external_id}"
    with page_errors() as outcome:
        cohort_services.assignment_remove(assignment=assignment, user=request.user)
    return _after_assignment_change(request, cohort_id, outcome, f"Removed {label}.")


@login_required
@require_POST
def assignment_reassign(request, cohort_id: int, assignment_id: int):
    assignment = _get_assignment_for_coordinator(request, cohort_id, assignment_id)
    previous, success = assignment.reviewer.username, ""
    with page_errors() as outcome:
        username = validated(AssignmentReassignApi.InputSerializer, request.POST)["reviewer"]
        assignment = cohort_services.assignment_reassign(
            assignment=assignment, reviewer=reviewer_named(username), user=request.user
        )
        success = f"{assignment.proposal.external_id} moved from {previous} to {username}."
    return _after_assignment_change(request, cohort_id, outcome, success)


@login_required
@require_POST
def review_reopen(request, cohort_id: int, assignment_id: int):
    """Send a submitted review back to its reviewer as a draft (the review service audit-logs it)."""
    assignment = _get_assignment_for_coordinator(request, cohort_id, assignment_id)
    with page_errors() as outcome:
        review = getattr(assignment, "review", None)
        if review is None:
            raise ServiceError("This assignment has no review to reopen.")
        review_services.review_reopen(review=review, user=request.user)
    success = f"The review of {assignment.proposal.external_id} by {assignment.reviewer.username} is open again."
    return _after_assignment_change(request, cohort_id, outcome, success)


# People


def _people_context(request, **extra) -> dict:
    page = Paginator(user_list(), USERS_PER_PAGE).get_page(request.GET.get("page"))
    for account in page:
        account.roles = user_roles(account)
    conflicts = cohort_selectors.conflicts_recent()
    return {
        "page": page,
        "roles": roles.ROLES,
        "reviewers": list(reviewer_choices()),
        "conflict_kinds": Conflict.Kind.choices,
        "conflicts": conflicts,
        "new_user": {"username": "", "email": "", "role": roles.REVIEWER},
        "conflict_form": {},
        "locked": locked_usernames(),
        "locked_addresses": locked_addresses(),
        **extra,
    }


@never_cache
@login_required
def user_list_page(request):
    roles.require_coordinator(request.user)
    return render(request, "reviewapp/user_list.html", _people_context(request))


@never_cache  # the answer carries one-time passwords
@login_required
@require_POST
def user_create_page(request):
    roles.require_coordinator(request.user)
    form = {key: request.POST.get(key, "").strip() for key in ("username", "email", "role")}  # shown again if refused
    with page_errors() as outcome:
        account, password = user_create(**validated(UserCreateApi.InputSerializer, request.POST), user=request.user)
        # Rendered, not redirected: the password must not pass through the session's message store.
        return render(request, "reviewapp/user_list.html", _people_context(request, created=[(account, password)]))
    context = _people_context(request, new_user=form, create_errors=_field_errors(outcome.error))
    return render(request, "reviewapp/user_list.html", context, status=400)


@never_cache  # the answer carries one-time passwords
@login_required
@require_POST
def users_bulk_create_page(request):
    roles.require_coordinator(request.user)
    upload = request.FILES.get("file")
    try:
        csv_text = upload.read().decode("utf-8-sig") if upload else request.POST.get("csv_text", "")
    except UnicodeDecodeError:
        errors = [{"row": None, "field": "file", "message": "The file is not UTF-8 text."}]
        return render(request, "reviewapp/user_list.html", _people_context(request, bulk_errors=errors), status=400)
    with page_errors() as outcome:
        created = users_bulk_create(csv_text=csv_text, user=request.user)
        return render(request, "reviewapp/user_list.html", _people_context(request, created=created))
    context = _people_context(request, bulk_errors=_field_errors(outcome.error), csv_text="" if upload else csv_text)
    return render(request, "reviewapp/user_list.html", context, status=400)


@login_required
@require_POST
def conflict_declare_page(request):
    roles.require_coordinator(request.user)
    form = {key: request.POST.get(key, "").strip() for key in ("reviewer", "kind", "proposal", "author", "note")}
    errors = []
    with page_errors(into=errors):
        values = validated(ConflictCreateApi.InputSerializer, request.POST)
        conflict = cohort_services.conflict_declare(
            reviewer=reviewer_named(values["reviewer"]),
            kind=values["kind"],
            proposal=cohort_selectors.proposal_with_id(values["proposal"]) if values["proposal"] else None,
            author=values["author"],
            note=values["note"],
            user=request.user,
        )
        messages.success(
            request, f"Conflict recorded for {conflict.reviewer.username}; automatic assignment excludes it."
        )
        return redirect(reverse("user-list") + "#conflicts")
    context = _people_context(request, conflict_form=form, conflict_error=" ".join(errors))
    return render(request, "reviewapp/user_list.html", context, status=400)


urlpatterns = [
    path("cohorts/", cohort_list, name="cohort-list"),
    path("cohorts/<int:cohort_id>/", cohort_detail, name="cohort-detail"),
    path("cohorts/<int:cohort_id>/proposals/", cohort_proposals, name="cohort-proposals"),
    path("cohorts/<int:cohort_id>/people/", cohort_people, name="cohort-people"),
    path("cohorts/<int:cohort_id>/exports/", cohort_exports, name="cohort-exports"),
    path("cohorts/<int:cohort_id>/status/", cohort_status, name="cohort-status"),
    path("cohorts/<int:cohort_id>/assign/", cohort_assign, name="cohort-assign"),
    path("cohorts/<int:cohort_id>/assignments/add/", assignment_add, name="assignment-add"),
    path(
        "cohorts/<int:cohort_id>/assignments/<int:assignment_id>/remove/", assignment_remove, name="assignment-remove"
    ),
    path(
        "cohorts/<int:cohort_id>/assignments/<int:assignment_id>/reassign/",
        assignment_reassign,
        name="assignment-reassign",
    ),
    path("cohorts/<int:cohort_id>/assignments/<int:assignment_id>/reopen/", review_reopen, name="review-reopen"),
    path("people/", user_list_page, name="user-list"),
    path("people/create/", user_create_page, name="user-create"),
    path("people/bulk/", users_bulk_create_page, name="users-bulk-create"),
    path("people/conflicts/", conflict_declare_page, name="conflict-declare"),
]

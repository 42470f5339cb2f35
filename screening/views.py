"""Pages of Open Hypothesis: the public form and run page, and the coordinators' list of runs.

The public pages need no account, like the API; the run page polls its live part with htmx until the run ends.
"""

import json
import math
from collections import Counter
from datetime import timedelta
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST
from rest_framework import serializers

from reviewapp.api.cohorts import CohortCreateApi
from reviewapp.core import roles
from reviewapp.core.errors import InputInvalid, page_errors, validated
from reviewapp.core.requests import client_address
from reviewapp.core.throttling import anonymous_polls_throttled
from reviewapp.selectors.cohorts import cohort_proposal_count
from screening import selectors
from screening.api.runs import BACKGROUND_MAX, QUESTION_MAX, QUESTION_MIN, RunCallsApi, RunCreateApi, run_representation
from screening.llm.providers import call_transcript
from screening.measured import MEASURED_SELECTION
from screening.models import Hypothesis, Run
from screening.services.cohorts import CHOICES, cohort_create_from_run
from screening.services.runs import run_create

# How often the run page asks for news while the run works (the API suggests 15 s to programs).
PAGE_POLL_SECONDS = 3
# The run page's filters (?show=…): which hypotheses are listed besides the delivered ones, which always come first.
RUN_FILTERS = {
    "all": lambda hypothesis: True,
    "selected": lambda hypothesis: hypothesis.selected,
    "delivered": lambda hypothesis: False,
}


@require_http_methods(["GET", "POST"])
def run_start(request):
    """/open-hypothesis/: a form to start a run, checked against the API's own declaration. A refusal at a limit says
    when to try again (the API's Retry-After, as a time)."""
    errors: list[str] = []
    forecasters = selectors.default_roster_forecasters()
    context: dict = {
        "form": request.POST,
        "errors": errors,
        "languages": Run.Language.choices,
        "limits": {"question_min": QUESTION_MIN, "question_max": QUESTION_MAX, "background_max": BACKGROUND_MAX},
        "measured": MEASURED_SELECTION,
        "forecasters": forecasters,
        "generators": selectors.default_roster_generator_count(),
        "roster_is_measured": MEASURED_SELECTION.holds_for(forecasters),
    }
    if request.method == "POST":
        with page_errors(into=errors) as outcome:
            values = validated(RunCreateApi.InputSerializer, request.POST)
            run = run_create(
                question=values["question"],
                background=values.get("background") or "",
                language=values.get("language") or Run.Language.EN,
                client_address=client_address(request.META),
            )
            return redirect("open-hypothesis-run", run_id=run.public_id)
        refusal = outcome.error  # the block returns unless the input or run_create was refused
        if refusal.retry_after is not None:
            context["retry_at"] = timezone.now() + timedelta(seconds=refusal.retry_after)
            context["retry_in"] = wait_in_words(refusal.retry_after)
        # A mistyped form is shown again as usual; a refusal of the service keeps its status (429 at a limit, 503).
        status = 200 if isinstance(refusal, InputInvalid) else refusal.status
        response = render(request, "screening/run_start.html", context, status=status)
        if refusal.retry_after is not None:
            response["Retry-After"] = str(refusal.retry_after)
        return response
    return render(request, "screening/run_start.html", context)


def wait_in_words(seconds: int) -> str:
    """A wait as people say it: "about 3 hours 20 minutes", "about 4 minutes", "less than a minute"."""
    minutes = math.ceil(seconds / 60)
    if seconds < 60:
        return "less than a minute"
    hours, minutes = divmod(minutes, 60)
    if not hours:
        return f"about {minutes} minute{'s' if minutes != 1 else ''}"
    rest = f" {minutes} minute{'s' if minutes != 1 else ''}" if minutes else ""
    return f"about {hours} hour{'s' if hours != 1 else ''}{rest}"


def _get_run(request, run_id) -> Run:
    """The run when the user may read it (a public run, or any run for coordinators and analysts); else 404."""
    run = selectors.run_get(run_id, request.user)
    if run is None:
        raise Http404("There is no run with this id.")
    return run


@anonymous_polls_throttled
def run_detail(request, run_id):
    """/open-hypothesis/<id>: live progress, then the delivered hypotheses first, then the rest."""
    run = _get_run(request, run_id)
    hypotheses = selectors.run_hypotheses(run)
    translation_state = selectors.run_translation_state(run, run.language) if run.language != "en" else None
    show_russian = request.GET.get("lang") == "ru" and translation_state == "ready"
    rendered = selectors.run_translation(run, "ru").hypotheses if show_russian else {}
    show = request.GET.get("show") if request.GET.get("show") in RUN_FILTERS else "all"
    delivered = [h for h in hypotheses if h.delivered]
    # Delivered hypotheses first; the rest as the filter asks (selected but not delivered, or every other one).
    others = [h for h in hypotheses if not h.delivered and RUN_FILTERS[show](h)]
    counts = selectors.run_counts(hypotheses)
    models = [member for role in ("stage1", "stage2") for member in run.roster.get("roles", {}).get(role, [])]
    stage2 = [member["model_id"] for member in run.roster.get("roles", {}).get("stage2", [])]
    context = {
        "run": run,
        "counts": counts,
        "show": show,
        "filters": [
            (key, label, counts[count], _run_url(run, show=key, russian=show_russian))
            for key, label, count in (
                ("all", "All", "generated"),
                ("selected", "Selected", "selected"),
                ("delivered", "Delivered", "delivered"),
            )
        ],
        "page_url": _run_url(run, show=show, russian=show_russian),
        "english_url": _run_url(run, show=show, russian=False),
        "russian_url": _run_url(run, show=show, russian=True),
        "steps": selectors.run_step_states(run),
        "current_step": selectors.run_current_step(run),
        "elapsed_text": _duration(selectors.run_elapsed_seconds(run)),
        "delivered": [_row(h, models, stage2, rendered) for h in delivered],
        "others": [_row(h, models, stage2, rendered) for h in others],
        "models": models,
        "translation_state": translation_state,
        "show_russian": show_russian,
        # Keep polling while the run works or its translation is being made.
        "polling": not run.is_finished or translation_state == "pending",
        "poll_seconds": PAGE_POLL_SECONDS,
    }
    template = "screening/run_detail.html#live" if request.htmx else "screening/run_detail.html"
    return render(request, template, context)


def _run_url(run: Run, *, show: str, russian: bool) -> str:
    """The run page with its filter and language, as links and polling ask for it."""
    query = {}
    if show != "all":
        query["show"] = show
    if russian:
        query["lang"] = "ru"
    url = reverse("open-hypothesis-run", args=[run.public_id])
    return f"{url}?{urlencode(query)}" if query else url


def _duration(seconds: int) -> str:
    minutes, seconds = divmod(seconds, 60)
    return f"{minutes} min {seconds:02d} s" if minutes else f"{seconds} s"


def _row(hypothesis: Hypothesis, models: list[dict], stage2: list[str], rendered: dict) -> dict:
    votes = selectors.hypothesis_forecasts(hypothesis)
    text = rendered.get(hypothesis.label) or {}
    return {
        "hypothesis": hypothesis,
        "statement": text.get("statement", hypothesis.statement),
        "mechanism": text.get("mechanism", hypothesis.mechanism),
        "prediction": text.get("prediction", hypothesis.prediction),
        "votes": [(member["display_name"], votes.get(member["model_id"], "unasked")) for member in models],
        # Stage 2 at a glance, for the collapsed line: how many of the models asked said yes.
        "stage2_votes": sum(key in votes for key in stage2),
        "yes_votes": sum(votes.get(key) is True for key in stage2),
    }


@anonymous_polls_throttled
def run_download(request, run_id):
    """/open-hypothesis/<id>/json: the API's view of the run as a file."""
    run = _get_run(request, run_id)
    language = request.GET.get("lang") if request.GET.get("lang") in Run.Language.values else None
    body = json.dumps(run_representation(run, language), ensure_ascii=False, indent=2)
    response = HttpResponse(body, content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="open-hypothesis-{run.public_id}.json"'
    return response


@login_required
def run_list(request):
    """/screening/runs/: every run with its status and counts (coordinators and analysts; analysts only read)."""
    if not roles.can_read_all(request.user):
        raise PermissionDenied("Only coordinators and analysts may see every run.")
    default_name = f"Cohort {timezone.localtime():%Y-%m-%d %H:%M}"
    return render(
        request,
        "screening/run_list.html",
        {"runs": selectors.run_list()[:500], "choices": CHOICES, "default_name": default_name},
    )


def _get_run_for_staff(request, run_id) -> Run:
    if not roles.can_read_all(request.user):
        raise PermissionDenied("Only coordinators and analysts may see a run's model calls.")
    return _get_run(request, run_id)


@login_required
def run_calls(request, run_id):
    """/screening/runs/<id>/calls/: every recorded model call of a run as people read it, in the order made: the
    prompt, the reply, the timings and each retry; the same as JSON to download."""
    run = _get_run_for_staff(request, run_id)
    calls = [(call, call_transcript(call)) for call in selectors.run_calls(run)]
    purposes = Counter(call.purpose for call, _ in calls)
    context = {
        "run": run,
        "calls": calls,
        "purposes": sorted(purposes.items()),
        "retries": sum(call.transport_attempt > 1 or call.protocol_attempt > 1 for call, _ in calls),
        "unusable": sum(not call.usable for call, _ in calls),
        "latency_ms": sum(call.latency_ms or 0 for call, _ in calls),
    }
    return render(request, "screening/run_calls.html", context)


@login_required
def run_calls_download(request, run_id):
    """/screening/runs/<id>/calls.json: every call of the run, each as the API's pages give it, in one file."""
    run = _get_run_for_staff(request, run_id)
    calls = RunCallsApi.OutputSerializer(selectors.run_calls(run), many=True).data
    body = json.dumps({"id": str(run.public_id), "calls": calls}, ensure_ascii=False, indent=2)
    response = HttpResponse(body, content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="open-hypothesis-{run.public_id}-calls.json"'
    return response


class RunCohortPageInput(CohortCreateApi.InputSerializer):
    """The cohort's name and numbers as the cohorts API accepts them, and which of the run's hypotheses it takes."""

    _CHOOSE = "Choose the selected or the delivered hypotheses."
    hypotheses = serializers.ChoiceField(
        choices=CHOICES, error_messages={"invalid_choice": _CHOOSE, "required": _CHOOSE}
    )


@login_required
@require_POST
def run_cohort_create(request, run_id):
    """Create a draft review cohort from a run's selected or delivered hypotheses."""
    roles.require_coordinator(request.user)
    run = _get_run(request, run_id)
    with page_errors(request):
        values = validated(RunCohortPageInput, request.POST)
        cohort = cohort_create_from_run(
            run=run,
            hypotheses=values["hypotheses"],
            name=values["name"],
            reviewers_per_proposal=values["reviewers_per_proposal"],
            seed=values["seed"],
            user=request.user,
        )
        count = cohort_proposal_count(cohort)
        messages.success(request, f"Cohort “{cohort.name}” created as a draft with {count} proposals.")
        return redirect("cohort-detail", cohort.pk)
    return redirect("screening-run-list")

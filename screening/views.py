"""Pages of Open Hypothesis: the public form and run page, and the coordinators' list of runs.

The public pages need no account, like the API; the run page polls its live part with htmx until the run ends.
"""

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from reviewapp.api.cohorts import CohortCreateApi
from reviewapp.core import roles
from reviewapp.core.errors import page_errors, validated
from reviewapp.core.requests import client_address
from screening import selectors
from screening.api.runs import BACKGROUND_MAX, QUESTION_MAX, QUESTION_MIN, RunCreateApi, run_representation
from screening.measured import MEASURED_SELECTION
from screening.models import Hypothesis, Run
from screening.services.cohorts import CHOICES, cohort_create_from_run
from screening.services.runs import run_create

# How often the run page asks for news while the run works (the API suggests 15 s to programs).
PAGE_POLL_SECONDS = 3


@require_http_methods(["GET", "POST"])
def run_start(request):
    """/open-hypothesis/: a form to start a run, checked against the API's own declaration."""
    form, errors = request.POST, []
    if request.method == "POST":
        with page_errors(into=errors):
            values = validated(RunCreateApi.InputSerializer, request.POST)
            run = run_create(
                question=values["question"],
                background=values.get("background") or "",
                language=values.get("language") or Run.Language.EN,
                client_address=client_address(request.META),
            )
            return redirect("open-hypothesis-run", run_id=run.public_id)
    forecasters = selectors.default_roster_forecasters()
    context = {
        "form": form,
        "errors": errors,
        "languages": Run.Language.choices,
        "limits": {"question_min": QUESTION_MIN, "question_max": QUESTION_MAX, "background_max": BACKGROUND_MAX},
        "measured": MEASURED_SELECTION,
        "forecasters": forecasters,
        "roster_is_measured": MEASURED_SELECTION.holds_for(forecasters),
    }
    return render(request, "screening/run_start.html", context)


def _get_run(run_id) -> Run:
    run = selectors.run_get(run_id)
    if run is None:
        raise Http404("There is no run with this id.")
    return run


def run_detail(request, run_id):
    """/open-hypothesis/<id>: live progress, then the delivered hypotheses first, then the rest."""
    run = _get_run(run_id)
    hypotheses = selectors.run_hypotheses(run)
    translation_state = selectors.run_translation_state(run, run.language) if run.language != "en" else None
    show_russian = request.GET.get("lang") == "ru" and translation_state == "ready"
    rendered = selectors.run_translation(run, "ru").hypotheses if show_russian else {}
    delivered = [h for h in hypotheses if h.delivered]
    others = [h for h in hypotheses if not h.delivered]
    models = [member for role in ("stage1", "stage2") for member in run.roster.get("roles", {}).get(role, [])]
    context = {
        "run": run,
        "counts": selectors.run_counts(hypotheses),
        "steps": selectors.run_step_states(run),
        "current_step": selectors.run_current_step(run),
        "elapsed_text": _duration(selectors.run_elapsed_seconds(run)),
        "delivered": [_row(h, models, rendered) for h in delivered],
        "others": [_row(h, models, rendered) for h in others],
        "models": models,
        "translation_state": translation_state,
        "show_russian": show_russian,
        # Keep polling while the run works or its translation is being made.
        "polling": not run.is_finished or translation_state == "pending",
        "poll_seconds": PAGE_POLL_SECONDS,
    }
    template = "screening/run_detail.html#live" if request.htmx else "screening/run_detail.html"
    return render(request, template, context)


def _duration(seconds: int) -> str:
    minutes, seconds = divmod(seconds, 60)
    return f"{minutes} min {seconds:02d} s" if minutes else f"{seconds} s"


def _row(hypothesis: Hypothesis, models: list[dict], rendered: dict) -> dict:
    votes = selectors.hypothesis_forecasts(hypothesis)
    text = rendered.get(hypothesis.label) or {}
    return {
        "hypothesis": hypothesis,
        "statement": text.get("statement", hypothesis.statement),
        "mechanism": text.get("mechanism", hypothesis.mechanism),
        "prediction": text.get("prediction", hypothesis.prediction),
        "votes": [(member["display_name"], votes.get(member["model_id"], "unasked")) for member in models],
    }


def run_download(request, run_id):
    """/open-hypothesis/<id>/json: the API's view of the run as a file."""
    run = _get_run(run_id)
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


@login_required
@require_POST
def run_cohort_create(request, run_id):
    """Create a draft review cohort from a run's selected or delivered hypotheses."""
    roles.require_coordinator(request.user)
    run = _get_run(run_id)
    with page_errors(request):
        # The cohort's name and numbers as the cohorts API accepts them (the form sends the name).
        values = validated(CohortCreateApi.InputSerializer, request.POST)
        cohort = cohort_create_from_run(
            run=run,
            hypotheses=request.POST.get("hypotheses", ""),
            name=values["name"],
            reviewers_per_proposal=values["reviewers_per_proposal"],
            seed=values["seed"],
            user=request.user,
        )
        count = cohort.proposals.count()
        messages.success(request, f"Cohort “{cohort.name}” created as a draft with {count} proposals.")
        return redirect("cohort-detail", cohort.pk)
    return redirect("screening-run-list")

"""Pages: the coordinators' literature page (corpus size, file import, recent imports), the corpus for coordinators
and analysts (search, filters, one reference and what used it), and citation waves."""

from datetime import timedelta

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods
from rest_framework import serializers

from literature import selectors
from literature.api import CitationWaveInput, import_request
from literature.hooks import task_group_kinds
from literature.importers.csv_table import FIELD_HELP
from literature.models import CitationWave, Reference
from literature.services import FORMATS, references_import
from literature.waves import citation_wave_begin
from reviewapp.core import roles
from reviewapp.core.errors import page_errors, validated
from reviewapp.core.requests import body_limit

# A page lists this many problems; the API returns them all.
PROBLEMS_SHOWN = 200
CORPUS_PAGE = 50


@body_limit("OH_MAX_REFERENCE_IMPORT_BYTES")
@login_required
@require_http_methods(["GET", "POST"])
def literature_home(request):
    roles.require_coordinator(request.user)
    context = {
        "result": None,
        "problems": None,
        "formats": FORMATS,
        "csv_fields": FIELD_HELP,
        "upload_limit": settings.OH_MAX_REFERENCE_IMPORT_BYTES,
    }
    chosen = request.POST.get("format", "")
    if request.method == "POST":
        with page_errors() as outcome:
            values = import_request({**request.POST.dict(), **request.FILES.dict()})
            context["result"] = references_import(**values, user=request.user, name=values["file"].name)
        if outcome.error is not None:
            context["problems"] = getattr(outcome.error, "records", [])
    if context["problems"]:
        context["problem_count"] = len(context["problems"])
        context["problems"] = context["problems"][:PROBLEMS_SHOWN]
    context["chosen_format"] = chosen
    context["corpus"] = selectors.corpus_size_by_source()
    context["corpus_total"] = sum(row["references"] for row in context["corpus"])
    context["imports"] = selectors.reference_imports_recent()
    template = "literature/home.html#outcome" if request.htmx else "literature/home.html"
    return render(request, template, context)


class CorpusQueryInput(serializers.Serializer):
    q = serializers.CharField(required=False, allow_blank=True, max_length=6000)
    source = serializers.ChoiceField(choices=[("", "any"), *Reference.Source.choices], required=False)
    published_from = serializers.DateField(required=False, allow_null=True)
    published_until = serializers.DateField(required=False, allow_null=True)
    page = serializers.IntegerField(required=False, min_value=1, max_value=selectors.SEARCH_DEPTH // CORPUS_PAGE)

    def to_internal_value(self, data):
        # The search form sends its empty fields: each is left out, not a value.
        return super().to_internal_value({name: value for name, value in data.items() if value != ""})


@login_required
def corpus_page(request):
    roles.require_read_all(request.user)
    errors: list[str] = []
    values: dict = {}
    with page_errors(into=errors):
        values = dict(validated(CorpusQueryInput, request.GET))
    page_number = values.get("page", 1)
    found = None
    if not errors:
        found = selectors.corpus_browse(
            query=values.get("q", ""),
            source=values.get("source") or None,
            published_from=values.get("published_from"),
            published_until=values.get("published_until"),
            offset=(page_number - 1) * CORPUS_PAGE,
            limit=CORPUS_PAGE,
        )
    shown_until = (page_number - 1) * CORPUS_PAGE + (len(found.rows) if found else 0)
    context = {
        "errors": errors,
        "found": found,
        "query": request.GET,
        "sources": Reference.Source.choices,
        "page_number": page_number,
        "first_shown": (page_number - 1) * CORPUS_PAGE + 1,
        "shown_until": shown_until,
        "previous_page": page_number - 1 if page_number > 1 else None,
        "next_page": page_number + 1 if found and shown_until < min(found.total, selectors.SEARCH_DEPTH) else None,
        "corpus": selectors.corpus_size_by_source(),
    }
    context["corpus_total"] = sum(row["references"] for row in context["corpus"])
    return render(request, "literature/corpus.html", context)


@login_required
def reference_page(request, reference_id: int):
    roles.require_read_all(request.user)
    reference = selectors.reference_get(reference_id=reference_id)
    context = {"reference": reference, "uses": selectors.reference_uses(reference)}
    return render(request, "literature/reference.html", context)


class CitationWavePageInput(CitationWaveInput):
    """The page's form of the API's declaration: the tasks' source chosen from a list ("cohort:3", "benchmark:5"), or
    anchors typed in one box, separated by spaces or commas."""

    def to_internal_value(self, data):
        kind, _, group_id = str(data.get("tasks", "")).partition(":")
        if kind:
            return super().to_internal_value({kind: group_id})
        return super().to_internal_value({"anchors": str(data.get("anchors", "")).replace(",", " ").split()})


@login_required
@require_http_methods(["GET", "POST"])
def citation_wave_list(request):
    roles.require_read_all(request.user)
    errors: list[str] = []
    if request.method == "POST":
        roles.require_coordinator(request.user)
        with page_errors(into=errors):
            values = validated(CitationWavePageInput, request.POST)
            wave = citation_wave_begin(**values, user=request.user)
            return redirect("literature-citation-wave", wave.pk)
    groups = [
        (f"{kind}:{group_id}", f"{group.label}: {name}")
        for kind, group in task_group_kinds().items()
        for group_id, name in group.choices()
    ]
    context = {
        "waves": selectors.citation_waves_recent(),
        "errors": errors,
        "anchors": request.POST.get("anchors", ""),
        "task_groups": groups,
    }
    return render(request, "literature/citation_waves.html", context)


@login_required
def citation_wave_page(request, wave_id: int):
    roles.require_read_all(request.user)
    wave = selectors.citation_wave_get(wave_id=wave_id)
    waited = timezone.now() - wave.created_at
    context = {
        "wave": wave,
        "in_progress": wave.state in (CitationWave.State.PENDING, CitationWave.State.RUNNING),
        "waits_for_worker": wave.state == CitationWave.State.PENDING
        and waited > timedelta(seconds=settings.JOB_UNCLAIMED_WARNING_SECONDS),
    }
    template = "literature/citation_wave.html#status" if request.htmx else "literature/citation_wave.html"
    return render(request, template, context)

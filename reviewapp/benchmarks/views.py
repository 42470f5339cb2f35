"""Pages of benchmark sets and the analysts' statistics: the sets, a set's progress, its import, the judge table and
the statistics with their plots and downloads.

Coordinators and analysts read; only coordinators change anything. Reviewers reach none of it: judge scores,
outcomes and reference statements are hidden from them.
"""

import re
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import path
from django.utils.functional import cached_property
from django.utils.text import slugify
from django.views.decorators.http import require_http_methods, require_POST
from rest_framework import serializers

from reviewapp.analysis import SEEDS
from reviewapp.api.imports import import_upload
from reviewapp.benchmarks import selectors
from reviewapp.benchmarks.api import SEED_PARAMETERS, BenchmarkCreateApi, JudgeAddApi, statistics_seeds
from reviewapp.benchmarks.figures import (
    BENCHMARK_FIGURES,
    benchmark_figure_file,
    cached_figure_file,
    figure_cache_key,
)
from reviewapp.benchmarks.models import BenchmarkSet
from reviewapp.benchmarks.services import sets as services
from reviewapp.benchmarks.services.imports import FIELDS, FORECAST_COLUMN_PREFIX, REQUIRED, benchmark_import_file
from reviewapp.benchmarks.services.judging import judging_jobs, judging_start
from reviewapp.benchmarks.statistics import statistics_key
from reviewapp.benchmarks.study_tables import SECTIONS
from reviewapp.core import roles
from reviewapp.core.errors import InputInvalid, page_errors, validated
from reviewapp.core.fields import IdField
from reviewapp.core.pages import figure_response, posted_import
from reviewapp.core.requests import body_limit
from reviewapp.figures import FORMATS
from reviewapp.selectors.cohorts import cohorts_recent
from screening.llm.selectors import endpoint_with_id, endpoints_enabled, roster_default, roster_list, roster_with_id
from screening.models import Run

JUDGE_TABLE_PAGE = 100
# The version of a set's data (reviewapp.benchmarks.selectors.benchmark_data_version), as a figure URL names it.
DATA_VERSION = re.compile(r"[0-9a-f]{32}(-[0-9]{20})?")
# The create form's choices, whose default stands when the form leaves them out.
CHOICES = ("design", "forecast_question")
OUTCOME_FILTERS = {
    "positive": lambda row: row.status == "positive",
    "negative": lambda row: row.status == "negative",
    "not_judged": lambda row: row.status == "not_judged",
    "borderline": lambda row: bool(row.borderline),
    "selected": lambda row: bool(row.selected),
}


# Sets ----------------------------------------------------------------------------------------------------------


class BenchmarkCreatePageInput(BenchmarkCreateApi.InputSerializer):
    """The create form names the roster by its id (a blank field: no roster)."""

    roster = IdField(required=False, allow_null=True, default=None)


class RosterPageInput(serializers.Serializer):
    roster = IdField(required=False, allow_null=True, default=None)


class TaskRerunPageInput(serializers.Serializer):
    task = serializers.CharField(max_length=200)


class JudgeAddPageInput(JudgeAddApi.InputSerializer):
    """The judge form names the endpoint by its id (a blank field: a person judges)."""

    endpoint = IdField(required=False, allow_null=True, default=None)


class JudgingPageInput(serializers.Serializer):
    """One judge by its id, or (blank) every judge."""

    judge = IdField(required=False, allow_null=True, default=None)


@login_required
@require_http_methods(["GET", "POST"])
def benchmark_list(request):
    roles.require_read_all(request.user)
    form = {"name": "", "description": "", "roster": "", "seed": "", "design": "pooled", "forecast_question": "short"}
    errors, status = [], 200
    if request.method == "POST":
        roles.require_coordinator(request.user)
        # Shown again as posted; a choice left out shows (and keeps, as in the API) its default.
        form = {
            key: request.POST.get(key, "").strip() or (default if key in CHOICES else "")
            for key, default in form.items()
        }
        with page_errors(into=errors):
            values = validated(BenchmarkCreatePageInput, request.POST)
            benchmark = services.benchmark_create(
                name=values["name"],
                description=values["description"],
                roster=roster_with_id(values["roster"]),
                seed=values["seed"],
                design=values["design"],
                forecast_question=values["forecast_question"],
                user=request.user,
            )
            messages.success(request, f"Set “{benchmark.name}” created. Import its tasks next.")
            return redirect("benchmark-detail", benchmark_id=benchmark.pk)
        status = 400
    context = {
        "benchmarks": selectors.benchmark_list(),
        "rosters": roster_list(),
        "default_roster": roster_default(),
        "designs": BenchmarkSet.Design.choices,
        "questions": Run.Question.choices,
        "form": form,
        "errors": errors,
    }
    return render(request, "benchmarks/benchmark_list.html", context, status=status)


def _detail_context(benchmark: BenchmarkSet) -> dict:
    progress = selectors.benchmark_progress(benchmark)
    return {
        "benchmark": benchmark,
        "progress": progress,
        "running": progress.finished_runs < progress.runs or progress.repeating,
    }


@login_required
def benchmark_detail(request, benchmark_id: int):
    benchmark = selectors.benchmark_for_user(user=request.user, benchmark_id=benchmark_id)
    context = _detail_context(benchmark)
    if request.htmx and request.htmx.target == "set-progress":
        return render(request, "benchmarks/benchmark_detail.html#progress", context)
    context |= {
        "judges": selectors.benchmark_judges(benchmark),
        "imports": selectors.benchmark_imports(benchmark),
        "jobs": judging_jobs(benchmark=benchmark)[:10],
        "rosters": roster_list(),
        "default_roster": roster_default(),
        "endpoints": endpoints_enabled(),
    }
    return render(request, "benchmarks/benchmark_detail.html", context)


@login_required
@require_POST
def benchmark_roster(request, benchmark_id: int):
    benchmark = selectors.benchmark_for_user(user=request.user, benchmark_id=benchmark_id, coordinate=True)
    with page_errors(request):
        roster = roster_with_id(validated(RosterPageInput, request.POST)["roster"])
        services.benchmark_roster_set(benchmark=benchmark, roster=roster)
        messages.success(request, f"The set's roster is now {roster.name}." if roster else "The set has no roster now.")
    return redirect("benchmark-detail", benchmark_id=benchmark.pk)


@login_required
@require_POST
def benchmark_run(request, benchmark_id: int):
    benchmark = selectors.benchmark_for_user(user=request.user, benchmark_id=benchmark_id, coordinate=True)
    with page_errors(request):
        runs = services.benchmark_run(benchmark=benchmark)
        messages.success(request, f"{len(runs)} run{'s' if len(runs) != 1 else ''} started, one per task.")
    return redirect("benchmark-detail", benchmark_id=benchmark.pk)


@login_required
@require_POST
def benchmark_forecasts_repeat(request, benchmark_id: int):
    benchmark = selectors.benchmark_for_user(user=request.user, benchmark_id=benchmark_id, coordinate=True)
    with page_errors(request):
        queued = services.benchmark_forecasts_repeat(benchmark=benchmark)
        requests = sum(count for _, count in queued)
        messages.success(
            request,
            f"{requests} forecast request{'s' if requests != 1 else ''} of {len(queued)} "
            f"task{'s' if len(queued) != 1 else ''} asked again, as they were.",
        )
    return redirect("benchmark-detail", benchmark_id=benchmark.pk)


@login_required
@require_POST
def benchmark_task_rerun(request, benchmark_id: int):
    benchmark = selectors.benchmark_for_user(user=request.user, benchmark_id=benchmark_id, coordinate=True)
    with page_errors(request):
        task_key = validated(TaskRerunPageInput, request.POST)["task"]
        services.benchmark_task_rerun(benchmark=benchmark, task_key=task_key)
        messages.success(request, f"Task {task_key} is running again.")
    return redirect("benchmark-detail", benchmark_id=benchmark.pk)


@login_required
@require_POST
def benchmark_judge_add(request, benchmark_id: int):
    benchmark = selectors.benchmark_for_user(user=request.user, benchmark_id=benchmark_id, coordinate=True)
    with page_errors(request):
        values = validated(JudgeAddPageInput, request.POST)
        judge = services.judge_add(
            benchmark=benchmark,
            name=values["name"],
            company=values["company"],
            endpoint=endpoint_with_id(values["endpoint"]),
        )
        messages.success(request, f"{judge.name} ({judge.company}) is judge number {judge.position}.")
    return redirect("benchmark-detail", benchmark_id=benchmark.pk)


@login_required
@require_POST
def benchmark_judging(request, benchmark_id: int):
    benchmark = selectors.benchmark_for_user(user=request.user, benchmark_id=benchmark_id, coordinate=True)
    with page_errors(request):
        judge_id = validated(JudgingPageInput, request.POST)["judge"]
        judges = selectors.benchmark_judges_with_id(benchmark, judge_id) if judge_id else None
        jobs = judging_start(benchmark=benchmark, user=request.user, judges=judges)
        if jobs:
            messages.success(
                request, f"Judging started: {len(jobs)} job{'s' if len(jobs) != 1 else ''}, one per judge."
            )
        else:
            messages.error(request, "Every model judge already has a judging job waiting or running.")
    return redirect("benchmark-detail", benchmark_id=benchmark.pk)


@body_limit("OH_MAX_IMPORT_BYTES")
@login_required
@require_http_methods(["GET", "POST"])
def benchmark_import(request, benchmark_id: int):
    benchmark = selectors.benchmark_for_user(user=request.user, benchmark_id=benchmark_id, coordinate=True)
    context = {
        "benchmark": benchmark,
        "result": None,
        "problems": None,
        "upload_limit": settings.OH_MAX_IMPORT_BYTES,
    }
    if request.method == "POST":
        context["result"], context["problems"], _ = posted_import(
            request, benchmark_import_file, read_upload=import_upload, benchmark=benchmark
        )
    context["imports"] = selectors.benchmark_imports(benchmark)
    context.update(_import_columns())
    template = "benchmarks/benchmark_import.html#outcome" if request.htmx else "benchmarks/benchmark_import.html"
    return render(request, template, context)


# The judge table ------------------------------------------------------------------------------------------------


@login_required
def benchmark_judge_table(request, benchmark_id: int):
    """Hypothesis × judge scores with each outcome; the generator company's own judge is shown but not counted."""
    benchmark = selectors.benchmark_for_user(user=request.user, benchmark_id=benchmark_id)
    judges = selectors.benchmark_judges(benchmark)
    rows = selectors.benchmark_rows(benchmark, judges)
    generators = selectors.generators_of(rows)
    filters = {key: request.GET.get(key, "").strip() for key in ("generator", "outcome", "task")}
    if filters["generator"]:
        rows = [row for row in rows if row.generator == filters["generator"]]
    if filters["outcome"] in OUTCOME_FILTERS:
        rows = [row for row in rows if OUTCOME_FILTERS[filters["outcome"]](row)]
    if filters["task"]:
        rows = [row for row in rows if row.task_key == filters["task"]]
    page = Paginator(rows, JUDGE_TABLE_PAGE).get_page(request.GET.get("page"))
    entries = [
        {
            "row": row,
            "cells": [
                {"score": row.scores.get(judge.name), "excluded": judge.name in row.excluded_judges} for judge in judges
            ],
        }
        for row in page
    ]
    query = urlencode({key: value for key, value in filters.items() if value})
    context = {
        "benchmark": benchmark,
        "judges": judges,
        "page": page,
        "entries": entries,
        "generators": generators,
        "filters": filters,
        "filter_query": f"{query}&" if query else "",
        "outcomes": list(OUTCOME_FILTERS),
    }
    return render(request, "benchmarks/benchmark_judges.html", context)


# Statistics ------------------------------------------------------------------------------------------------------


def _percent(estimate) -> str:
    """ "73.7% [50.0; 90.9]": a share with its 95% interval (docs/protocol.md#reporting)."""
    if estimate is None or estimate.value is None:
        return "–"
    # The interval's bounds are held together (a no-break space), so a narrow column breaks only before the bracket.
    interval = f" [{estimate.low * 100:.1f};\u00a0{estimate.high * 100:.1f}]" if estimate.low is not None else ""
    return f"{estimate.value * 100:.1f}%{interval}"


def _ratio(estimate) -> str:
    if estimate is None or estimate.value is None:
        return "–"
    interval = f" [{estimate.low:.2f};\u00a0{estimate.high:.2f}]" if estimate.low is not None else ""
    return f"{estimate.value:.2f}{interval}"


def _enrichment_rows(statistics) -> list[dict]:
    rows = []
    for g in statistics.generators:
        primary, strict, drawn, random_list = g.primary, g.strict, g.drawn_control, g.random_list
        rows.append(
            {
                "generator": g.generator,
                "company": g.company,
                "hypotheses": g.hypotheses,
                "no_selection": g.no_selection,
                "not_judged": primary.not_judged if primary else None,
                "base_rate": f"{_percent(primary.base_rate)} ({primary.matches}/{primary.hypotheses})"
                if primary
                else "–",
                "precision": f"{_percent(primary.precision)} ({primary.selected_matches}/{primary.selected})"
                if primary
                else "–",
                "enrichment": _ratio(primary.enrichment) if primary else "–",
                "sensitivity": _percent(primary.sensitivity) if primary else "–",
                "strict_precision": f"{_percent(strict.precision)} ({strict.selected_matches}/{strict.selected})"
                if strict
                else "–",
                "strict_enrichment": _ratio(strict.enrichment) if strict else "–",
                "random_list": f"{random_list.mean:.2f} ({random_list.low}–{random_list.high})" if random_list else "–",
                "drawn_control": f"{_percent(drawn.precision)} ({drawn.selected_matches}/{drawn.selected})"
                if drawn
                else "–",
                "undefined": max(
                    (e.undefined_resamples for e in (primary.precision, primary.enrichment) if e is not None),
                    default=0,
                )
                if primary
                else 0,
            }
        )
    return rows


def _changed_seeds(seeds: dict[str, int]) -> dict[str, int]:
    """The query parameters that ask for these seeds: only those that differ from the benchmark's own."""
    return {key: seeds[family] for key, family in SEED_PARAMETERS.items() if seeds[family] != SEEDS[family]}


def _seed_query(seeds: dict[str, int]) -> str:
    return urlencode(_changed_seeds(seeds))


def _other_seed_query(seeds: dict[str, int], family: str, seed: int) -> str:
    """The query that recomputes the page with another published seed for one family, the other seeds kept."""
    return "?" + urlencode({**_changed_seeds(seeds), f"seed_{family}": seed})


def _sections(statistics) -> list[dict]:
    sections = []
    for section in SECTIONS:
        tables = [{"spec": spec, "table": spec.build(statistics)} for spec in section.tables]
        for entry in tables:
            entry["has_plot"] = entry["spec"].plot is not None and bool(entry["table"].rows)
        sections.append(
            {
                "section": section,
                "seed": statistics.seeds.get(section.seed_family) if section.seed_family else None,
                "tables": tables,
                "filled": any(entry["table"].rows for entry in tables),
                # Tables of one section that lack the same data say so in the same words: once is enough.
                "notes": list(dict.fromkeys(note for entry in tables for note in entry["table"].notes)),
                # The seed another published passage names for this analysis, with the rest of the seeds kept.
                "other_seed_query": _other_seed_query(statistics.seeds, section.seed_family, section.other_seed)
                if section.seed_family and section.other_seed is not None
                else "",
            }
        )
    return sections


# The sections of the statistics page before the appendices' analyses: (slug, title, the benchmark supplement's
# appendices, what an empty one needs, the import tables that bring it).
SELECTION_SECTIONS = (
    ("enrichment", "Enrichment of the selection per generator", "Е, Н.5, Н.6", "judged hypotheses", ("scores",)),
    ("judge-votes", "Judge-vote distribution", "К, М.2", "judge scores", ("scores",)),
    ("agreement", "Agreement between judges", "К, М.2", "scores of at least two judges", ("scores",)),
)


def _selection_sections(statistics, votes: list, pairs: list) -> dict[str, dict]:
    filled = {"enrichment": statistics.judged > 0, "judge-votes": bool(votes), "agreement": bool(pairs)}
    # Keyed for the template, which cannot read a hyphenated key.
    return {
        slug.replace("-", "_"): {
            "slug": slug,
            "title": title,
            "appendix": appendix,
            "needs": needs,
            "imports": imports,
            "filled": filled[slug],
        }
        for slug, title, appendix, needs, imports in SELECTION_SECTIONS
    }


class StatisticsPage:
    """What the statistics page shows of a set's statistics at one data version and seeds. The template draws the
    parts made from the statistics in {% cache %} blocks keyed by `key`, so a page drawn before for this version and
    these seeds reads neither the statistics nor their tables: each part below is made only when a block is drawn."""

    def __init__(self, benchmark: BenchmarkSet, seeds: dict[str, int]):
        self.benchmark, self.seeds = benchmark, seeds
        self.data_version = selectors.benchmark_data_version(benchmark.pk)
        self.key = statistics_key(benchmark.pk, benchmark.design, self.data_version, selectors.PAGE_RESAMPLES, seeds)
        # Figures carry the version of the data they show: a cached one is served without reading the data again.
        self.figure_query = "?" + urlencode({**_changed_seeds(seeds), "v": self.data_version})

    @cached_property
    def statistics(self):
        return selectors.benchmark_statistics(self.benchmark, seeds=self.seeds, data_version=self.data_version)

    @cached_property
    def enrichment_rows(self) -> list[dict]:
        return _enrichment_rows(self.statistics)

    @cached_property
    def pairs(self) -> list[dict]:
        agreement = self.statistics.agreement
        return [
            {
                "pair": pair,
                "kappa": _ratio(pair.kappa),
                "strict_kappa": _ratio(pair.strict_kappa),
                "weighted_kappa": _ratio(pair.weighted_kappa),
            }
            for pair in (agreement.pairs if agreement else ())
        ]

    @cached_property
    def votes(self) -> list:
        statistics = self.statistics
        return [votes for votes in (statistics.votes_primary, statistics.votes_strict) if votes is not None]

    @cached_property
    def sections(self) -> list[dict]:
        return _sections(self.statistics)

    @cached_property
    def selection_sections(self) -> dict[str, dict]:
        return _selection_sections(self.statistics, self.votes, self.pairs)

    @cached_property
    def contents(self) -> list[dict]:
        """The sections drawn from the statistics in order, with whether their data are there (the contents bar,
        which ends with the human review)."""
        entries = [
            {"slug": i["slug"], "title": i["title"], "filled": i["filled"]} for i in self.selection_sections.values()
        ]
        return entries + [
            {"slug": i["section"].slug, "title": i["section"].title, "filled": i["filled"]} for i in self.sections
        ]


@login_required
def benchmark_statistics(request, benchmark_id: int):
    benchmark = selectors.benchmark_for_user(user=request.user, benchmark_id=benchmark_id, counts=False)
    errors: list[str] = []
    seeds = dict(SEEDS)
    with page_errors(into=errors):
        seeds = statistics_seeds(request.GET)
    seed_query = _seed_query(seeds)
    context = {
        "benchmark": benchmark,
        "page": StatisticsPage(benchmark, seeds),
        "cache_seconds": selectors.STATISTICS_CACHE_SECONDS,
        "cohorts": cohorts_recent(),
        "seed_fields": [(key, family, seeds[family], SEEDS[family]) for key, family in SEED_PARAMETERS.items()],
        "seed_query": f"?{seed_query}" if seed_query else "",
        # Appendix Л's seed for the strict enrichment, computed with the selection's (docs/analysis.md#seeds).
        "strict_seed_query": _other_seed_query(seeds, "selection", SEEDS["further"]),
        "seed_errors": errors,
    }
    return render(request, "benchmarks/benchmark_statistics.html", context, status=400 if errors else 200)


@login_required
def benchmark_import_format(request):
    """The tables a set's import file may hold: analysts read it from the statistics page's empty sections."""
    roles.require_read_all(request.user)
    return render(request, "benchmarks/benchmark_import_format.html", _import_columns())


def _import_columns() -> dict:
    return {
        "columns": [
            (table, [(name, name in REQUIRED[table]) for name in fields if name != "forecasts"])
            for table, fields in FIELDS.items()
        ],
        "forecast_prefix": FORECAST_COLUMN_PREFIX,
    }


@login_required
def benchmark_figure(request, benchmark_id: int, figure: str, file_format: str):
    """A figure's file. The page names the version of the data its figures were drawn from (``v``, the set's data
    version): a figure already drawn for that version and these seeds is served as it was, without reading the
    set's data again; any other request computes (or reads from the cache) the statistics of the data as they are."""
    benchmark = selectors.benchmark_for_user(user=request.user, benchmark_id=benchmark_id, counts=False)
    spec = BENCHMARK_FIGURES.get(figure)
    if spec is None or file_format not in FORMATS or (file_format != "csv" and spec.plot is None):
        raise Http404("This set has no such figure or file.")
    try:
        seeds = statistics_seeds(request.GET)
    except InputInvalid as error:
        return HttpResponseBadRequest(" ".join(error.sentences()), content_type="text/plain; charset=utf-8")
    filename = f"{slugify(benchmark.name) or 'set'}-{figure}.{file_format}"
    version = request.GET.get("v", "")
    if DATA_VERSION.fullmatch(version):
        key = figure_cache_key(
            benchmark.pk, benchmark.design, version, selectors.PAGE_RESAMPLES, seeds, f"{figure}.{file_format}"
        )
        content = cached_figure_file(key)
        if content is not None:
            return figure_response(content, file_format, filename)
    content = benchmark_figure_file(selectors.benchmark_statistics(benchmark, seeds=seeds), figure, file_format)
    return figure_response(content, file_format, filename)


urlpatterns = [
    path("benchmarks/", benchmark_list, name="benchmark-list"),
    path("benchmarks/import-format/", benchmark_import_format, name="benchmark-import-format"),
    path("benchmarks/<int:benchmark_id>/", benchmark_detail, name="benchmark-detail"),
    path("benchmarks/<int:benchmark_id>/roster/", benchmark_roster, name="benchmark-roster"),
    path("benchmarks/<int:benchmark_id>/run/", benchmark_run, name="benchmark-run"),
    path("benchmarks/<int:benchmark_id>/import/", benchmark_import, name="benchmark-import"),
    path("benchmarks/<int:benchmark_id>/rerun-task/", benchmark_task_rerun, name="benchmark-task-rerun"),
    path(
        "benchmarks/<int:benchmark_id>/forecasts/repeat/",
        benchmark_forecasts_repeat,
        name="benchmark-forecasts-repeat",
    ),
    path("benchmarks/<int:benchmark_id>/judges/add/", benchmark_judge_add, name="benchmark-judge-add"),
    path("benchmarks/<int:benchmark_id>/judging/", benchmark_judging, name="benchmark-judging"),
    path("benchmarks/<int:benchmark_id>/judges/", benchmark_judge_table, name="benchmark-judge-table"),
    path("benchmarks/<int:benchmark_id>/statistics/", benchmark_statistics, name="benchmark-statistics"),
    path(
        "benchmarks/<int:benchmark_id>/figures/<slug:figure>.<slug:file_format>",
        benchmark_figure,
        name="benchmark-figure",
    ),
]

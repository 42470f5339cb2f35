"""Pages of the AI review panel for coordinators and analysts: a cohort's panel table, one hypothesis's profile, the
ratings from pairwise critique, the calibration against the human reviews, the prompts, and the panel of hypotheses
selected from screening runs and benchmark sets.

Coordinators and analysts read; only coordinators start work or add comparisons. Reviewers reach none of it.
"""

import csv
import io

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils.html import escape
from django.utils.safestring import SafeString
from django.utils.text import slugify
from django.views.decorators.http import require_POST
from rest_framework import serializers

from reviewapp.benchmarks.selectors import benchmark_for_user
from reviewapp.core import roles
from reviewapp.core.errors import InputInvalid, Problem, page_errors, validated
from reviewapp.core.fields import RowsField
from reviewapp.core.pages import figure_response
from reviewapp.figures import FORMATS, FigureSpec, figure_file
from reviewapp.models import Cohort
from reviewapp.panel import figures, selectors
from reviewapp.panel import profile as rules
from reviewapp.panel.api import (
    MAX_IMPORTED_COMPARISONS,
    CohortPanelStartApi,
    ComparisonsImportApi,
    ComparisonsRunApi,
    HypothesesPanelStartApi,
    calibration_as_dict,
    ratings_as_dict,
)
from reviewapp.panel.calibration import CLOSEST_CRITERION
from reviewapp.panel.prompts import PROMPT_VERSION, PROMPTS
from reviewapp.panel.ratings import parameters
from reviewapp.panel.services import critique, panel
from reviewapp.protocol import CRITERIA
from reviewapp.selectors.cohorts import cohort_for_user
from screening.selectors import run_get

CRITERION_LABELS = {field: label for field, label, *_ in CRITERIA}
SORTS = {
    "id": lambda row: (row.task_key, row.proposal_id),
    "q": lambda row: row.profile.q,
    "s": lambda row: row.rating.conservative if row.rating else None,
    "rank": lambda row: row.rating.rank if row.rating else None,
    "comparisons": lambda row: row.rating.comparisons if row.rating else None,
}
# The comparisons shown on the ratings page; the whole log is a download.
RECENT_COMPARISONS = 25
# The problems of refused comparisons shown on the ratings page.
PROBLEMS_SHOWN = 20


def _sorted_rows(rows: list, sort: str) -> tuple[list, str]:
    """The rows by a column (a leading "-" for descending); rows without a value always last."""
    key = sort.lstrip("-")
    if key not in SORTS:
        return rows, "id"
    value_of = SORTS[key]
    present = [row for row in rows if value_of(row) is not None]
    absent = [row for row in rows if value_of(row) is None]
    present.sort(key=value_of, reverse=sort.startswith("-"))
    return present + absent, sort


# The table's headers for the eight dimensions: short enough for the table to fit a desktop's width, each spelt out in
# the legend beside the table (a header cut short, or a tooltip, says nothing on a touch screen).
DIMENSION_ABBREVIATIONS = {
    "importance": "Imp",
    "novelty": "Nov",
    "grounding": "Grd",
    "falsifiability": "Fals",
    "data_resolvability": "Data",
    "feasibility": "Feas",
    "alternatives": "Alt",
    "actionability": "Act",
}


def _number(value: float | None, digits: int = 2) -> str:
    return "" if value is None else f"{value:.{digits}f}"


NO_MEDIAN = '<td class="num"><span class="word" title="fewer than two known scores">–</span></td>'
INAPPLICABLE = '<td class="num"><span class="word" title="most reviewers: does not apply">inapplicable</span></td>'


def _table_rows(rows: list) -> SafeString:
    """The rows of the cohort's panel table as HTML. Built here, with every text escaped, rather than in the
    template: a thousand rows of a dozen formatted cells would take the template engine most of the page's time."""
    profile_url = reverse("panel-subject", args=[0]).removesuffix("0/")
    lines = []
    for row in rows:
        coverage, rating, revision = row.profile.coverage, row.rating, row.revision
        proposal = escape(row.proposal_id)
        if row.subject_id:
            proposal = f'<a href="{profile_url}{row.subject_id}/">{proposal}</a>'
        failed = ""
        if coverage.failed_roles:
            failed = (
                f' <span class="badge bad" title="failed: {escape(", ".join(coverage.failed_roles))}">failed</span>'
            )
        medians = "".join(
            f'<td class="num">{value:g}</td>'
            if value is not None
            else INAPPLICABLE
            if key in coverage.inapplicable
            else NO_MEDIAN
            for key, value in row.profile.medians.items()
        )
        q = ""
        if row.profile.q is not None:
            q = f"<strong>{row.profile.q:.2f}</strong>"
        elif row.reviews:
            q = f'<span class="word" title="{coverage.medians_known} of 8 medians known">incomplete</span>'
        s, rank, comparisons = (
            (_number(rating.conservative), _number(rating.rank), rating.comparisons) if rating else ("", "", "")
        )
        category = ""
        if revision is not None:
            category = escape(revision.label) or f'<span class="word">{escape(revision.state or "not judged")}</span>'
        # Q and its coverage next to the proposal (the columns cohort_panel.html heads), the medians after them.
        lines.append(
            f'<tr><th scope="row">{proposal}</th><td class="num">{q}</td>'
            f'<td class="num">{coverage.reviews}/3{failed}</td>'
            f'<td class="num">{coverage.eligible_votes if coverage.reviews else ""}</td>'
            f"<td>{escape(row.task_key)}</td>{medians}"
            f'<td class="num">{s}</td><td class="num">{rank}</td>'
            f'<td class="num">{comparisons}</td><td>{category}</td>'
            f'<td class="num">{_number(revision.delta_q) if revision else ""}</td></tr>'
        )
    return SafeString("\n".join(lines))


@login_required
def cohort_panel_page(request, cohort_id: int):
    cohort = cohort_for_user(user=request.user, cohort_id=cohort_id)
    result = selectors.cohort_panel(cohort)
    rows, sort = _sorted_rows(result.rows, request.GET.get("sort", "id"))
    context = {
        "cohort": cohort,
        "panel": result,
        "table_rows": _table_rows(rows),
        "sort": sort,
        "dimensions": [(dimension, DIMENSION_ABBREVIATIONS[dimension.key]) for dimension in rules.DIMENSIONS],
        "job": selectors.latest_job(cohort, selectors.PANEL_JOB),
        "revision_labels": rules.REVISION_LABELS,
        "prompt_version": PROMPT_VERSION,
    }
    return render(request, "panel/cohort_panel.html", context)


@login_required
@require_POST
def cohort_panel_start(request, cohort_id: int):
    cohort = cohort_for_user(user=request.user, cohort_id=cohort_id)
    roles.require_coordinator(request.user)
    with page_errors(request):
        values = validated(CohortPanelStartApi.InputSerializer, {"redo": request.POST.get("redo") == "true"})
        job = panel.panel_start_for_cohort(cohort=cohort, redo=values["redo"], user=request.user)
        messages.success(request, "The AI panel has started; this page shows its results as they arrive.")
        return redirect("job-detail", job.pk)
    return redirect("panel-cohort", cohort.pk)


@login_required
def subject_page(request, subject_id: int):
    roles.require_read_all(request.user)
    found = selectors.subject_profile(subject_id)
    if found is None:
        raise Http404("The panel has not reviewed this.")
    scores = {review.role: review.scores for review in found.reviews if not review.failed}
    table = [
        {
            "dimension": dimension,
            "scores": [scores.get(role, {}).get(dimension.key) for role in rules.ROLES],
            "median": found.profile.medians[dimension.key],
            "inapplicable": dimension.key in found.profile.coverage.inapplicable,
        }
        for dimension in rules.DIMENSIONS
    ]
    reference = found.reference
    context = {
        "found": found,
        "table": table,
        "reference_scores": [(dimension.label, reference.scores.get(dimension.key)) for dimension in rules.DIMENSIONS]
        if reference is not None and not reference.failed
        else [],
        "roles": [rules.ROLE_LABELS[role] for role in rules.ROLES],
        "role_labels": rules.ROLE_LABELS,
        "revision_labels": rules.REVISION_LABELS,
        "simulated": any(review.simulated for review in found.reviews),
    }
    return render(request, "panel/subject.html", context)


@login_required
def subject_figure(request, subject_id: int, subject_figure: str, file_format: str):
    roles.require_read_all(request.user)
    spec = figures.SUBJECT_FIGURES.get(subject_figure)
    found = selectors.subject_profile(subject_id) if spec is not None else None
    if found is None or file_format not in FORMATS:
        raise Http404("No such figure.")
    content = figure_file(spec, found, file_format)  # type: ignore[arg-type]
    return figure_response(content, file_format, f"{subject_figure}-{subject_id}.{file_format}")


RATINGS_HEAD = (
    '<thead><tr><th>Proposal</th><th class="num">μ</th><th class="num">σ</th><th class="num">s = μ − 2σ</th>'
    '<th class="num">Rank</th><th class="num">Comparisons</th></tr></thead>'
)


def ordinal(place: int) -> str:
    """1st, 2nd, 3rd, 4th, …, 11th, 12th, 13th, 21st."""
    suffix = "th" if 10 <= place % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(place % 10, "th")
    return f"{place}{suffix}"


def rank_in_words(rank: float | None, ranks: list[float]) -> str:
    """A rank among its task's ranked proposals as people read it: "0.60 (3rd of 6)"; tied proposals share the best
    place of their tie. Empty for a proposal without a rank (never compared)."""
    if rank is None:
        return ""
    place = 1 + sum(other > rank + 1e-9 for other in ranks)
    return f"{rank:.2f} ({ordinal(place)} of {len(ranks)})"


def _ratings_tables(by_task: dict[str, list]) -> SafeString:
    """One table per research task, best s first; built here for the same reason as the panel table's rows."""
    parts = []
    for task, items in by_task.items():
        ranks = [item["rank"] for item in items if item["rank"] is not None]
        rows = "".join(
            f'<tr><td>{escape(item["proposal"])}</td><td class="num">{item["mu"]:.3f}</td>'
            f'<td class="num">{item["sigma"]:.3f}</td><td class="num">{item["conservative"]:.3f}</td>'
            f'<td class="num">{rank_in_words(item["rank"], ranks)}</td><td class="num">{item["comparisons"]}</td></tr>'
            for item in sorted(items, key=lambda item: -item["conservative"])
        )
        parts.append(
            f'<h3>{escape(task)}</h3>\n<div class="table-scroll"><table class="compact">{RATINGS_HEAD}<tbody>{rows}'
            "</tbody></table></div>"
        )
    return SafeString("\n".join(parts))


@login_required
def ratings_page(request, cohort_id: int):
    cohort = cohort_for_user(user=request.user, cohort_id=cohort_id)
    ratings = ratings_as_dict(cohort)
    by_task: dict[str, list] = {}
    for item in ratings["ratings"]:
        by_task.setdefault(item["task"], []).append(item)
    context = {
        "cohort": cohort,
        "parameters": parameters(),
        "rating_tables": _ratings_tables(by_task),
        "count": selectors.comparison_count(cohort),
        "recent": selectors.comparisons_recent(cohort, limit=RECENT_COMPARISONS),
        "bias": selectors.position_bias(cohort),
        "job": selectors.latest_job(cohort, selectors.CRITIQUE_JOB),
        "form": {"per_proposal": 3, "seed": cohort.seed, "comparisons": ""},
    }
    return render(request, "panel/ratings.html", context)


@login_required
@require_POST
def comparisons_run_page(request, cohort_id: int):
    cohort = cohort_for_user(user=request.user, cohort_id=cohort_id)
    roles.require_coordinator(request.user)
    with page_errors(request):
        # The form as posted: DRF reads an unticked "repeat" box (absent from the form) as false.
        values = validated(ComparisonsRunApi.InputSerializer, request.POST)
        job = critique.critique_start(cohort=cohort, **values, user=request.user)
        return redirect("job-detail", job.pk)
    return redirect("panel-ratings", cohort.pk)


class ComparisonLinesField(RowsField):
    """The comparisons typed in one box as CSV lines "a,b,outcome" (a first line naming those columns is optional;
    blank lines are skipped): each line is a row of the API's declaration, numbered from the first comparison."""

    COLUMNS = ("a", "b", "outcome")

    def get_value(self, dictionary):
        return dictionary.get(self.field_name, serializers.empty)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            raise serializers.ValidationError("Type the comparisons as lines of text.")
        try:
            lines = [line for line in csv.reader(io.StringIO(data.strip())) if any(cell.strip() for cell in line)]
        except csv.Error as error:
            raise serializers.ValidationError(f"The lines are not CSV: {error}.") from error
        if lines and [cell.strip().lower() for cell in lines[0]] == list(self.COLUMNS):
            lines = lines[1:]
        if not lines and not self.allow_empty:
            self.fail("empty")
        rows, errors = [], {}
        for index, line in enumerate(lines):
            if len(line) != len(self.COLUMNS):
                errors[index] = [f"It has {len(line)} values; each line is a,b,outcome."]
                continue
            try:
                rows.append(
                    self.child.run_validation(dict(zip(self.COLUMNS, (cell.strip() for cell in line), strict=True)))
                )
            except serializers.ValidationError as error:
                errors[index] = error.detail
        if errors:
            raise serializers.ValidationError(errors)
        return rows


class ComparisonsImportPageInput(ComparisonsImportApi.InputSerializer):
    """The page's form of the API's declaration: the comparisons as CSV lines, each checked as the API checks a row."""

    comparisons = ComparisonLinesField(
        child=ComparisonsImportApi.InputSerializer.Row(),
        allow_empty=False,
        min_length=1,
        max_length=MAX_IMPORTED_COMPARISONS,
    )


def _line_sentence(found: Problem) -> str:
    """A problem of the comparisons as the page says it: "Line <n>, <field>: <message>"."""
    place = ", ".join(
        part for part in (f"Line {found['row']}" if "row" in found else "", found.get("field", "")) if part
    )
    return f"{place}: {found['message']}" if place else found["message"]


@login_required
@require_POST
def comparisons_import_page(request, cohort_id: int):
    cohort = cohort_for_user(user=request.user, cohort_id=cohort_id)
    roles.require_coordinator(request.user)
    with page_errors() as outcome:
        values = validated(ComparisonsImportPageInput, request.POST)
        stored = critique.comparisons_import(cohort=cohort, rows=values["comparisons"], user=request.user)
        messages.success(request, f"{len(stored)} comparisons added to the log (#{stored[0].seq}–#{stored[-1].seq}).")
    if outcome.error is not None:
        invalid = isinstance(outcome.error, InputInvalid)
        messages.error(request, "The comparisons were not added." if invalid else outcome.error.message)
        for found in outcome.error.problems[:PROBLEMS_SHOWN]:
            messages.error(request, _line_sentence(found))
    return redirect("panel-ratings", cohort.pk)


@login_required
@require_POST
def ratings_recompute_page(request, cohort_id: int):
    cohort = cohort_for_user(user=request.user, cohort_id=cohort_id)
    roles.require_coordinator(request.user)
    replayed = critique.ratings_recompute(cohort=cohort)
    messages.success(request, f"Ratings recomputed from the {replayed} comparisons of the log.")
    return redirect("panel-ratings", cohort.pk)


@login_required
def calibration_page(request, cohort_id: int):
    cohort = cohort_for_user(user=request.user, cohort_id=cohort_id)
    result = selectors.cohort_calibration(cohort)
    reference = selectors.cohort_reference_diagnostics(cohort)
    context = {
        "cohort": cohort,
        "result": result,
        "reference": reference,
        "reference_roles": [(rules.ROLE_LABELS[agreement.role], agreement) for agreement in reference.roles],
        "reference_dimension_rows": [
            (dimension.label, [agreement.dimensions[dimension.key] for agreement in reference.roles])
            for dimension in rules.DIMENSIONS
        ],
        "figures": calibration_as_dict(result),
        "dimension_rows": [
            (dimension, CRITERION_LABELS[criterion], result.dimensions[dimension])
            for dimension, criterion in CLOSEST_CRITERION.items()
        ],
    }
    return render(request, "panel/calibration.html", context)


def _cohort_figure_source(name: str, cohort: Cohort):
    if name == "ratings":
        return ratings_as_dict(cohort)
    if name == "comparisons":
        return selectors.comparison_log(cohort)
    if name == "calibration":
        return selectors.cohort_calibration(cohort)
    if name == "calibration-q":
        return selectors.calibration_units(cohort)
    if name == "calibration-reference":
        return selectors.cohort_reference_diagnostics(cohort)
    return cohort


COHORT_FIGURES = {
    "panel-table": FigureSpec("The cohort's panel table", figures.panel_table, None),
    "ratings": FigureSpec("Ratings by research task", figures.ratings_table, figures.ratings_plot),
    "comparisons": FigureSpec("The comparison log", figures.comparisons_table, None),
    "calibration": FigureSpec("Calibration against human reviews", figures.calibration_table, figures.calibration_plot),
    "calibration-q": FigureSpec(
        "Q against the human overall value", figures.calibration_scatter_table, figures.calibration_scatter
    ),
    "calibration-reference": FigureSpec(
        "Each role against the fresh-context reference", figures.reference_table, figures.reference_plot
    ),
}


@login_required
def cohort_figure(request, cohort_id: int, panel_figure: str, file_format: str):
    cohort = cohort_for_user(user=request.user, cohort_id=cohort_id)
    spec = COHORT_FIGURES.get(panel_figure)
    if spec is None or file_format not in FORMATS or (file_format != "csv" and spec.plot is None):
        raise Http404("This cohort has no such figure or file.")
    content = figure_file(spec, _cohort_figure_source(panel_figure, cohort), file_format)
    return figure_response(content, file_format, f"{slugify(cohort.name) or 'cohort'}-{panel_figure}.{file_format}")


@login_required
def prompts_page(request):
    roles.require_read_all(request.user)
    stored = selectors.prompt_versions()
    current = {text.sha256 for text in PROMPTS.values()}
    context = {
        "current": list(PROMPTS.values()),
        "stored": stored,
        "current_hashes": current,
        "version": PROMPT_VERSION,
    }
    return render(request, "panel/prompts.html", context)


# Hypotheses of screening runs and benchmark sets ----------------------------------------------------------------


def _hypotheses_page(request, *, title: str, back: tuple[str, object], rows: list, source: dict):
    context = {"title": title, "back": back, "rows": rows, "source": source}
    return render(request, "panel/hypotheses.html", context)


class HypothesesPanelStartPageInput(HypothesesPanelStartApi.InputSerializer):
    """The page's form of the API's declaration: the ticked hypotheses and the "review again" box; the page itself
    names the screening run or benchmark set."""

    run = None
    benchmark = None

    def to_internal_value(self, data):
        # A form with no box ticked sends no "hypotheses": an empty choice, refused as one, not a field left out.
        if "hypotheses" not in data:
            data = {**data.dict(), "hypotheses": []}
        return super().to_internal_value(data)

    def validate(self, attrs):
        return attrs


def _start_for_hypotheses(request, *, run=None, benchmark=None):
    roles.require_coordinator(request.user)
    with page_errors(request):
        values = validated(HypothesesPanelStartPageInput, request.POST)
        job = panel.panel_start_for_hypotheses(
            run=run, benchmark=benchmark, hypotheses=values["hypotheses"], redo=values["redo"], user=request.user
        )
        return redirect("job-detail", job.pk)
    return None


@login_required
def run_hypotheses_page(request, run_id):
    roles.require_read_all(request.user)
    run = run_get(run_id, request.user)
    if run is None:
        raise Http404("There is no screening run with this id.")
    if request.method == "POST":
        return _start_for_hypotheses(request, run=run) or redirect("panel-run", run.public_id)
    return _hypotheses_page(
        request,
        title=f"AI panel · screening run {run.public_id}",
        back=("open-hypothesis-run", str(run.public_id)),
        rows=selectors.run_hypotheses_with_profiles(run),
        source={"run": str(run.public_id)},
    )


@login_required
def benchmark_hypotheses_page(request, benchmark_id: int):
    benchmark = benchmark_for_user(user=request.user, benchmark_id=benchmark_id)
    if request.method == "POST":
        return _start_for_hypotheses(request, benchmark=benchmark) or redirect("panel-benchmark", benchmark.pk)
    return _hypotheses_page(
        request,
        title=f"AI panel · {benchmark.name}",
        back=("benchmark-detail", benchmark.pk),
        rows=selectors.benchmark_hypotheses_with_profiles(benchmark),
        source={"benchmark": benchmark.pk},
    )


urlpatterns = [
    path("cohorts/<int:cohort_id>/ai-panel/", cohort_panel_page, name="panel-cohort"),
    path("cohorts/<int:cohort_id>/ai-panel/start/", cohort_panel_start, name="panel-cohort-start"),
    path("cohorts/<int:cohort_id>/ai-ratings/", ratings_page, name="panel-ratings"),
    path("cohorts/<int:cohort_id>/ai-ratings/run/", comparisons_run_page, name="panel-comparisons-run"),
    path("cohorts/<int:cohort_id>/ai-ratings/import/", comparisons_import_page, name="panel-comparisons-import"),
    path("cohorts/<int:cohort_id>/ai-ratings/recompute/", ratings_recompute_page, name="panel-ratings-recompute"),
    path("cohorts/<int:cohort_id>/ai-calibration/", calibration_page, name="panel-calibration"),
    path(
        "cohorts/<int:cohort_id>/ai-figures/<slug:panel_figure>.<slug:file_format>",
        cohort_figure,
        name="panel-cohort-figure",
    ),
    path("ai-panel/subjects/<int:subject_id>/", subject_page, name="panel-subject"),
    path(
        "ai-panel/subjects/<int:subject_id>/figures/<slug:subject_figure>.<slug:file_format>",
        subject_figure,
        name="panel-subject-figure",
    ),
    path("ai-panel/prompts/", prompts_page, name="panel-prompts"),
    path("ai-panel/runs/<uuid:run_id>/", run_hypotheses_page, name="panel-run"),
    path("ai-panel/benchmarks/<int:benchmark_id>/", benchmark_hypotheses_page, name="panel-benchmark"),
]

"""Pages of the levels above a single hypothesis for coordinators and analysts (docs/protocol.md#research-runs): a
cohort's evaluation (the five levels side by side, per author model), a run's research tree, a path with its
assessment and the human criterion means along it, the contribution families (recorded by coordinators), and the
CSV files of paths, runs, families and delivery. Reviewers reach none of it."""

import csv
import io

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils.text import slugify
from django.views.decorators.http import require_POST

from reviewapp.core import roles
from reviewapp.core.errors import page_errors, validated
from reviewapp.models import DELIVERY_STAGES, Cohort
from reviewapp.panel import development as rules
from reviewapp.panel import research
from reviewapp.panel.api_levels import FamilyRecordApi, cohort_evaluation
from reviewapp.panel.models import FAMILY_MATURITIES, FAMILY_STATUSES, ReviewStatus
from reviewapp.panel.selectors import cohort_family, human_scores
from reviewapp.panel.services.families import families_group, family_record
from reviewapp.protocol import CRITERIA
from reviewapp.selectors.cohorts import cohort_for_user
from reviewapp.selectors.exports import spreadsheet_text

STAGE_LABELS = {stage: stage.replace("_", " ") for stage in DELIVERY_STAGES}


def _dimension_rows(assessment: research.AssessmentRow | None, rubric_version: str) -> list[dict]:
    rubric_ = rules.rubric(assessment.rubric if assessment else rubric_version)
    return [
        {
            "label": dimension.label,
            "weight": dimension.weight,
            "definition": dimension.definition,
            "score": assessment.scores.get(dimension.key, "") if assessment else "",
            "evidence": assessment.evidence.get(dimension.key, "") if assessment else "",
            "rationale": assessment.rationales.get(dimension.key, "") if assessment else "",
        }
        for dimension in rubric_.dimensions
    ]


@login_required
def evaluation_page(request, cohort_id: int):
    cohort = cohort_for_user(user=request.user, cohort_id=cohort_id)
    evaluation = cohort_evaluation(cohort)
    levels = research.cohort_levels(cohort)
    scopes = [{"author": "All authors", **evaluation}, *evaluation["by_author"]]
    for scope in scopes:  # shares as percentages for the page (the API gives rates)
        for share in ("substantive_progress", "useful_step", "repetition", "insufficient_evidence"):
            item = scope["transitions"][share]
            item["pct"] = None if item["rate"] is None else 100 * item["rate"]
    runs = [
        {"run": run, "assessment": levels.run_assessment(run.id)}
        for run in sorted(levels.tree.runs.values(), key=lambda item: item.id)
        if len(run.proposals) >= 2
    ]
    paths = [{"path": item, "assessment": levels.path_assessment(item.terminal)} for item in levels.tree.paths]
    context = {
        "cohort": cohort,
        "scopes": scopes,
        "runs": runs,
        "single_runs": sum(len(run.proposals) < 2 for run in levels.tree.runs.values()),
        "paths": paths,
        "stages": [(stage, STAGE_LABELS[stage], evaluation["delivery"][stage]) for stage in DELIVERY_STAGES],
        "rubrics": rules.rubrics(),
        "simulated": any(row.simulated for row in levels.assessments.values()),
    }
    return render(request, "panel/evaluation.html", context)


@login_required
def run_page(request, cohort_id: int, research_run: str):
    cohort = cohort_for_user(user=request.user, cohort_id=cohort_id)
    levels = research.cohort_levels(cohort)
    run_id = research_run
    run = levels.tree.runs.get(run_id)
    if run is None:
        raise Http404("No such research run in this cohort.")
    assessment = levels.run_assessment(run_id)
    context = {
        "cohort": cohort,
        "run": run,
        "graph": research.run_graph(levels, run_id),
        "assessment": assessment,
        "dimensions": _dimension_rows(assessment, rules.RUN_RUBRIC),
        "paths": [item for item in levels.tree.paths if item.run == run_id],
        "delivery": research.delivery_records(run, levels.tree),
        "stages": list(STAGE_LABELS.items()),
    }
    return render(request, "panel/evaluation_run.html", context)


@login_required
def path_page(request, cohort_id: int, terminal: str):
    cohort = cohort_for_user(user=request.user, cohort_id=cohort_id)
    levels = research.cohort_levels(cohort)
    selected = next((item for item in levels.tree.paths if item.terminal == terminal), None)
    if selected is None:
        raise Http404("No development path ends at this version.")
    assessment = levels.path_assessment(terminal)
    humans = human_scores(cohort)
    versions = []
    for version in selected.proposals:
        scores = humans.get(levels.tree.pks[version])
        means = {
            field: (sum(values) / len(values) if values else None)
            for field, values in (scores.criteria.items() if scores else [])
        }
        versions.append({"id": version, "reviews": len(scores.overall) if scores else 0, "means": means})
    criteria = [(field, label) for field, label, *_ in CRITERIA]
    for version in versions:
        version["values"] = [version["means"].get(field) for field, _ in criteria]
    context = {
        "cohort": cohort,
        "path": selected,
        "assessment": assessment,
        "dimensions": _dimension_rows(assessment, rules.PATH_RUBRIC),
        "criteria": criteria,
        "versions": versions,
        "plot": _criterion_plot(versions, criteria),
    }
    return render(request, "panel/evaluation_path.html", context)


PLOT_WIDTH, PLOT_HEIGHT, PLOT_MARGIN = 560, 220, 40


def _criterion_plot(versions: list[dict], criteria: list[tuple[str, str]]) -> dict | None:
    """The six human criterion means (1–4) along the path, as polyline points for the template (None without any
    reviewed version). A version without a mean on a criterion breaks that criterion's line, never drawn as 0."""
    if not any(version["means"] for version in versions):
        return None
    step = (PLOT_WIDTH - 2 * PLOT_MARGIN) / max(len(versions) - 1, 1)

    def y_of(value: float) -> float:
        return PLOT_HEIGHT - PLOT_MARGIN - (value - 1) / 3 * (PLOT_HEIGHT - 2 * PLOT_MARGIN)

    lines = []
    for index, (field, label) in enumerate(criteria):
        segments, current = [], []
        for n, version in enumerate(versions):
            value = version["means"].get(field)
            if value is None:
                if current:
                    segments.append(current)
                current = []
                continue
            current.append((round(PLOT_MARGIN + n * step, 1), round(y_of(value), 1)))
        if current:
            segments.append(current)
        lines.append(
            {
                "label": label,
                "series": index,
                "segments": [" ".join(f"{x},{y}" for x, y in segment) for segment in segments],
                "points": [point for segment in segments for point in segment],
            }
        )
    return {
        "width": PLOT_WIDTH,
        "height": PLOT_HEIGHT,
        "lines": lines,
        "ticks": [{"value": value, "y": round(y_of(value), 1)} for value in (1, 2, 3, 4)],
        "columns": [
            {"label": version["id"], "x": round(PLOT_MARGIN + n * step, 1)} for n, version in enumerate(versions)
        ],
        "left": PLOT_MARGIN,
        "right": PLOT_WIDTH - PLOT_MARGIN,
        "bottom": PLOT_HEIGHT - PLOT_MARGIN,
    }


@login_required
def families_page(request, cohort_id: int):
    cohort = cohort_for_user(user=request.user, cohort_id=cohort_id)
    families_group(cohort=cohort)
    context = {
        "cohort": cohort,
        "families": research.cohort_families(cohort),
        "statuses": FAMILY_STATUSES,
        "maturities": [(maturity, maturity.replace("_", " ")) for maturity in FAMILY_MATURITIES],
        "review_statuses": ReviewStatus.choices,
        "can_record": roles.can_coordinate(request.user),
    }
    return render(request, "panel/families.html", context)


class FamilyRecordPageInput(FamilyRecordApi.InputSerializer):
    """The page's form of the API's declaration: the members typed in one box, separated by spaces or commas (an
    empty box leaves them as they are); the other fields as the API names them."""

    def to_internal_value(self, data):
        values = {name: data[name] for name in self.fields if name != "members" and name in data}
        if members := str(data.get("members", "")).replace(",", " ").split():
            values["members"] = members
        return super().to_internal_value(values)


@login_required
@require_POST
def family_record_page(request, cohort_id: int, family_id: int):
    cohort = cohort_for_user(user=request.user, cohort_id=cohort_id, coordinate=True)
    family = cohort_family(cohort, family_id)
    with page_errors(request):
        values = validated(FamilyRecordPageInput, request.POST)
        family_record(cohort=cohort, family=family, values=values, user=request.user)
        messages.success(request, f"Family {family.pk} recorded.")
    return redirect(f"{reverse('panel-families', args=[cohort.pk])}#family-{family.pk}")


def _csv_response(cohort: Cohort, name: str, rows: list[list]) -> HttpResponse:
    buffer = io.StringIO()
    csv.writer(buffer).writerows(rows)
    response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{slugify(cohort.name) or "cohort"}-{name}.csv"'
    return response


@login_required
def evaluation_csv(request, cohort_id: int, table: str):
    cohort = cohort_for_user(user=request.user, cohort_id=cohort_id)
    families_group(cohort=cohort)
    tables = research.level_tables(cohort)
    if table not in tables:
        raise Http404("No such table.")
    return _csv_response(
        cohort,
        table,
        [[spreadsheet_text(cell) if isinstance(cell, str) else cell for cell in row] for row in tables[table]],
    )


urlpatterns = [
    path("cohorts/<int:cohort_id>/evaluation/", evaluation_page, name="panel-evaluation"),
    path("cohorts/<int:cohort_id>/evaluation/runs/<str:research_run>/", run_page, name="panel-evaluation-run"),
    path("cohorts/<int:cohort_id>/evaluation/paths/<str:terminal>/", path_page, name="panel-evaluation-path"),
    path("cohorts/<int:cohort_id>/evaluation/families/", families_page, name="panel-families"),
    path(
        "cohorts/<int:cohort_id>/evaluation/families/<int:family_id>/",
        family_record_page,
        name="panel-family-record",
    ),
    path("cohorts/<int:cohort_id>/evaluation/<str:table>.csv", evaluation_csv, name="panel-evaluation-csv"),
]

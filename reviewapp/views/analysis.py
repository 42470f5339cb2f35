"""Pages of a cohort's human review analysis: revision outcomes and reviewer agreement, with plots and downloads."""

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render
from django.urls import path
from django.utils.text import slugify

from reviewapp import protocol
from reviewapp.core.pages import figure_response
from reviewapp.figures import COHORT_FIGURES, FORMATS, figure_file
from reviewapp.selectors.analysis import cohort_review_analysis
from reviewapp.selectors.cohorts import cohort_for_user


@login_required
def cohort_statistics(request, cohort_id: int):
    cohort = cohort_for_user(user=request.user, cohort_id=cohort_id)
    review_analysis = cohort_review_analysis(cohort)
    context = {
        "cohort": cohort,
        "analysis": review_analysis,
        "profile_columns": [label for _, label in profile_labels()],
        "profile_rows": [
            {
                "profile": profile,
                "cells": [_profile_cell(profile.of(field)) for field, _ in profile_labels()],
            }
            for profile in review_analysis.profiles
        ],
        "revision_criteria": [
            (label, review_analysis.revisions_by_criterion[field]) for field, label, *_ in protocol.CRITERIA
        ],
        "figures": COHORT_FIGURES,
    }
    return render(request, "reviewapp/benchmark_cohort_statistics.html", context)


def profile_labels() -> list[tuple[str, str]]:
    """(field, label) of each score of a criterion profile, the overall value first."""
    return [("overall", "Overall research value (1–5)")] + [
        (field, f"{label} (1–4)") for field, label, *_ in protocol.CRITERIA
    ]


def _profile_cell(item) -> dict:
    mean = item.mean
    interval = f" [{mean.low:.2f}; {mean.high:.2f}]" if mean.low is not None else ""
    return {
        "mean": f"{mean.value:.2f}{interval}" if mean.value is not None else "–",
        "ratings": item.ratings,
        "cant_judge": item.cant_judge,
        "missing": item.missing,
    }


@login_required
def cohort_figure(request, cohort_id: int, cohort_figure: str, file_format: str):
    cohort = cohort_for_user(user=request.user, cohort_id=cohort_id)
    spec = COHORT_FIGURES.get(cohort_figure)
    if spec is None or file_format not in FORMATS:
        raise Http404("This cohort has no such figure or file.")
    content = figure_file(spec, cohort_review_analysis(cohort), file_format)
    name = f"{slugify(cohort.name) or 'cohort'}-{cohort_figure}.{file_format}"
    return figure_response(content, file_format, name)


urlpatterns = [
    path("cohorts/<int:cohort_id>/statistics/", cohort_statistics, name="cohort-statistics"),
    path(
        "cohorts/<int:cohort_id>/figures/<slug:cohort_figure>.<slug:file_format>",
        cohort_figure,
        name="cohort-figure",
    ),
]

"""The tables and plots of the analyst pages: each figure is a table (downloadable as CSV) and, for most, a plot
rendered on the server with matplotlib (Agg, no display) as PNG or SVG.

This module holds the machinery every figure uses and the figures of a cohort's human review; the benchmark figures
are in reviewapp.benchmarks.figures. A figure is built from the statistics the pages show, never recomputed here.
"""

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from reviewapp.core.pages import FIGURE_FORMATS
from reviewapp.selectors.analysis import CohortReviewAnalysis
from reviewapp.selectors.exports import spreadsheet_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FORMATS = FIGURE_FORMATS
COLOURS = ("#2b6cb0", "#c05621", "#2f855a", "#6b46c1", "#b7791f")


@dataclass(frozen=True)
class FigureSpec:
    title: str
    table: Callable[[object], list[list]]  # header, then rows
    plot: Callable[[object], "Figure"] | None


def rounded(value, digits: int = 4):
    return None if value is None else round(value, digits)


def new_figure(width: float, height: float) -> "Figure":
    # Imported when a plot is drawn: matplotlib is slow to import and most requests draw nothing.
    import matplotlib
    from matplotlib.figure import Figure

    # Labels are names people chose (a "$" in a model's name is no formula): text, never mathtext. Every text object
    # reads this when it is made, and this process draws nothing else.
    matplotlib.rcParams["text.parse_math"] = False

    return Figure(figsize=(width, height), layout="constrained")


def no_data(figure: "Figure", axes, message: str) -> "Figure":
    axes.axis("off")
    axes.set_xticks([])  # hidden ticks would still be laid out outside the image
    axes.set_yticks([])
    axes.text(0.5, 0.5, message, ha="center", va="center", fontsize=11, color="#555")
    return figure


# Human review of a cohort --------------------------------------------------------------------------------------


def _group_row(author: str, group) -> list:
    return [
        spreadsheet_text(author),
        group.pairs,
        group.improved,
        group.unchanged,
        group.worsened,
        rounded(group.improved_share),
        rounded(group.unchanged_share),
        rounded(group.worsened_share),
        rounded(group.mean_change),
    ]


def revisions_table(review_analysis: CohortReviewAnalysis) -> list[list]:
    rows = [
        [
            "author",
            "pairs",
            "improved",
            "unchanged",
            "worsened",
            "improved_share",
            "unchanged_share",
            "worsened_share",
            "mean_change",
        ]
    ]
    outcomes = review_analysis.revisions
    for author, group in sorted(outcomes.by_author.items()):
        rows.append(_group_row(author, group))
    rows.append(_group_row("All authors", outcomes.overall))
    return rows


def _outcome_bars(groups: list, empty: str) -> "Figure":
    """Stacked shares improved / unchanged / worsened, one bar per (name, RevisionGroup) with pairs."""
    groups = [(name, group) for name, group in groups if group.pairs]
    figure = new_figure(7.5, 1.4 + 0.5 * max(1, len(groups)))
    axes = figure.add_subplot()
    if not groups:
        return no_data(figure, axes, empty)
    left = [0.0] * len(groups)
    for name, colour in (("improved", COLOURS[2]), ("unchanged", "#a0aec0"), ("worsened", COLOURS[1])):
        shares = [getattr(group, f"{name}_share") for _, group in groups]
        axes.barh(range(len(groups)), shares, left=left, color=colour, label=name)
        left = [a + b for a, b in zip(left, shares, strict=True)]
    axes.set_yticks(range(len(groups)), [f"{label} (n={group.pairs})" for label, group in groups])
    axes.invert_yaxis()
    axes.set_xlim(0, 1)
    axes.legend(fontsize=8, ncols=3, loc="lower center", bbox_to_anchor=(0.5, 1.0))
    return figure


def revisions_plot(review_analysis: CohortReviewAnalysis) -> "Figure":
    """Shares of revisions that improved, kept or worsened the mean overall score, per author
    (docs/protocol.md#revision-analysis)."""
    outcomes = review_analysis.revisions
    figure = _outcome_bars(
        [*sorted(outcomes.by_author.items()), ("All authors", outcomes.overall)],
        "No revised proposal and its predecessor both have submitted reviews here.",
    )
    if figure.axes and figure.axes[0].axison:
        figure.axes[0].set_xlabel("Share of predecessor → child pairs (change in the mean overall score)")
    return figure


def revision_criteria_table(review_analysis: CohortReviewAnalysis) -> list[list]:
    rows = [["criterion", *revisions_table(review_analysis)[0][1:], "not_comparable"]]
    groups = [("overall", review_analysis.revisions), *review_analysis.revisions_by_criterion.items()]
    for criterion, outcomes in groups:
        rows.append([*_group_row(criterion, outcomes.overall), outcomes.not_comparable])
    return rows


def revision_criteria_plot(review_analysis: CohortReviewAnalysis) -> "Figure":
    """The same predecessor → child pairs on the overall score and on each criterion's mean ("can't judge" left
    out)."""
    groups = [("overall", review_analysis.revisions), *review_analysis.revisions_by_criterion.items()]
    figure = _outcome_bars(
        [(name.replace("_", " "), outcomes.overall) for name, outcomes in groups],
        "No revised proposal and its predecessor both have submitted reviews here.",
    )
    if figure.axes and figure.axes[0].axison:
        figure.axes[0].set_xlabel("Share of predecessor → child pairs (change in the mean score)")
    return figure


def reviewer_agreement_table(review_analysis: CohortReviewAnalysis) -> list[list]:
    rows = [
        [
            "criterion",
            "level",
            "ratings",
            "cant_judge",
            "missing",
            "proposals",
            "proposals_with_pairs",
            "reviewer_pairs",
            "exact_agreement",
            "krippendorff_alpha",
        ]
    ]
    for item in review_analysis.agreement:
        rows.append(
            [
                item.criterion,
                item.level,
                item.ratings,
                item.cant_judge,
                item.missing,
                item.proposals,
                item.proposals_with_pairs,
                item.reviewer_pairs,
                rounded(item.exact_agreement),
                rounded(item.alpha),
            ]
        )
    return rows


def reviewer_agreement_plot(review_analysis: CohortReviewAnalysis) -> "Figure":
    """Krippendorff's alpha and exact agreement per criterion ("can't judge" left out)."""
    items = list(review_analysis.agreement)
    figure = new_figure(7.5, 1.4 + 0.42 * len(items))
    axes = figure.add_subplot()
    if not any(item.reviewer_pairs for item in items):
        return no_data(figure, axes, "No proposal has two submitted reviews yet.")
    positions = range(len(items))
    axes.barh(
        [p - 0.2 for p in positions],
        [item.alpha or 0 for item in items],
        0.4,
        color=COLOURS[0],
        label="Krippendorff's α",
    )
    axes.barh(
        [p + 0.2 for p in positions],
        [item.exact_agreement or 0 for item in items],
        0.4,
        color=COLOURS[4],
        label="exact agreement (share of reviewer pairs)",
    )
    axes.set_yticks(list(positions), [item.criterion.replace("_", " ") for item in items])
    axes.invert_yaxis()
    axes.axvline(0, color="#555", linewidth=0.8)
    axes.set_xlim(min(-0.2, min((item.alpha or 0) for item in items) - 0.05), 1)
    axes.legend(fontsize=8, loc="lower center", ncols=2, bbox_to_anchor=(0.5, 1.0))
    return figure


def criterion_profiles_table(review_analysis: CohortReviewAnalysis) -> list[list]:
    rows = [["author", "criterion", "mean", "low", "high", "ratings", "cant_judge", "missing", "resamples", "seed"]]
    for profile in review_analysis.profiles:
        for item in profile.criteria:
            rows.append(
                [
                    spreadsheet_text(profile.author),
                    item.criterion,
                    rounded(item.mean.value),
                    rounded(item.mean.low),
                    rounded(item.mean.high),
                    item.ratings,
                    item.cant_judge,
                    item.missing,
                    review_analysis.profile_resamples,
                    review_analysis.profile_seed,
                ]
            )
    return rows


def criterion_profiles_plot(review_analysis: CohortReviewAnalysis) -> "Figure":
    """Each author's mean per criterion (the six 1–4 criteria) with its 95% task interval."""
    profiles = list(review_analysis.profiles)
    figure = new_figure(7.5, 4.2)
    axes = figure.add_subplot()
    if not profiles:
        return no_data(figure, axes, "No submitted reviews yet.")
    criteria = [item.criterion for item in profiles[0].criteria if item.criterion != "overall"]
    width = 0.8 / len(profiles)
    for index, profile in enumerate(profiles):
        offsets = [c - 0.4 + width * (index + 0.5) for c in range(len(criteria))]
        means = [profile.of(criterion).mean for criterion in criteria]
        shown = [(x, m) for x, m in zip(offsets, means, strict=True) if m.value is not None]
        axes.errorbar(
            [x for x, _ in shown],
            [m.value for _, m in shown],
            yerr=[
                [m.value - (m.low if m.low is not None else m.value) for _, m in shown],
                [(m.high if m.high is not None else m.value) - m.value for _, m in shown],
            ],
            fmt="o",
            capsize=3,
            color=COLOURS[index % len(COLOURS)],
            label=profile.author,
        )
    axes.set_xticks(range(len(criteria)), [criterion.replace("_", " ") for criterion in criteria], rotation=20)
    axes.set_ylim(1, 4)
    axes.set_ylabel("mean point (1–4), 95% task interval")
    axes.legend(fontsize=8, loc="lower center", ncols=min(3, len(profiles)), bbox_to_anchor=(0.5, 1.0))
    return figure


COHORT_FIGURES = {
    "revisions": FigureSpec("Revision outcomes", revisions_table, revisions_plot),
    "revision-criteria": FigureSpec("Revision outcomes per criterion", revision_criteria_table, revision_criteria_plot),
    "reviewer-agreement": FigureSpec(
        "Reviewer agreement per criterion", reviewer_agreement_table, reviewer_agreement_plot
    ),
    "criterion-profiles": FigureSpec(
        "Criterion profiles per author", criterion_profiles_table, criterion_profiles_plot
    ),
}


# Rendering -----------------------------------------------------------------------------------------------------


def table_csv(rows: list[list]) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer).writerows(rows)
    return buffer.getvalue().encode()


def render(figure: "Figure", file_format: str) -> bytes:
    """PNG or SVG bytes of a figure, drawn by the Agg backend (no display, no global pyplot state)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    # No creation date: the same figure gives the same file.
    metadata = {"Date": None} if file_format == "svg" else {}
    figure.savefig(buffer, format=file_format, dpi=110, metadata=metadata)
    return buffer.getvalue()


def figure_file(spec: FigureSpec, source, file_format: str) -> bytes:
    """The figure's table as CSV, or its plot as PNG or SVG. ValueError for a format the figure does not have."""
    if file_format == "csv":
        return table_csv(spec.table(source))
    if file_format in ("png", "svg") and spec.plot is not None:
        return render(spec.plot(source), file_format)
    raise ValueError(f"{spec.title} has no {file_format} file")

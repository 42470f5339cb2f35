"""The tables and plots of the analyst pages: each figure is a table (downloadable as CSV) and, for most, a plot
rendered on the server with matplotlib (Agg, no display) as PNG or SVG.

A figure is built from the statistics the pages show (reviewapp.selectors.benchmarks), never recomputed here.
"""

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from reviewapp.selectors.benchmarks import BenchmarkStatistics, CohortReviewAnalysis
from reviewapp.selectors.exports import spreadsheet_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FORMATS = {"csv": "text/csv; charset=utf-8", "png": "image/png", "svg": "image/svg+xml"}
_COLOURS = ("#2b6cb0", "#c05621", "#2f855a", "#6b46c1", "#b7791f")


@dataclass(frozen=True)
class FigureSpec:
    title: str
    table: Callable[[object], list[list]]  # header, then rows
    plot: Callable[[object], "Figure"] | None


def _round(value, digits: int = 4):
    return None if value is None else round(value, digits)


def _estimate(estimate) -> list:
    if estimate is None:
        return [None, None, None, None]
    return [_round(estimate.value), _round(estimate.low), _round(estimate.high), estimate.undefined_resamples]


def _estimate_header(name: str) -> list[str]:
    return [name, f"{name}_low", f"{name}_high", f"{name}_undefined_resamples"]


# Benchmark sets ------------------------------------------------------------------------------------------------


def enrichment_table(statistics: BenchmarkStatistics) -> list[list]:
    header = [
        "generator",
        "company",
        "hypotheses",
        "no_selection",
        "judged",
        "matches",
        *_estimate_header("base_rate"),
        "selected",
        "selected_matches",
        *_estimate_header("precision"),
        *_estimate_header("enrichment"),
        *_estimate_header("sensitivity"),
        "strict_matches",
        "strict_selected_matches",
        *_estimate_header("strict_precision"),
        *_estimate_header("strict_enrichment"),
        "random_list_mean",
        "random_list_low",
        "random_list_high",
        "drawn_control_selected",
        *_estimate_header("drawn_control_precision"),
        "resamples",
        "seed",
    ]
    rows = [header]
    for g in statistics.generators:
        primary, strict, drawn, random_list = g.primary, g.strict, g.drawn_control, g.random_list
        rows.append(
            [
                spreadsheet_text(g.generator),
                spreadsheet_text(g.company),
                g.hypotheses,
                g.no_selection,
                primary.hypotheses if primary else None,
                primary.matches if primary else None,
                *_estimate(primary.base_rate if primary else None),
                primary.selected if primary else None,
                primary.selected_matches if primary else None,
                *_estimate(primary.precision if primary else None),
                *_estimate(primary.enrichment if primary else None),
                *_estimate(primary.sensitivity if primary else None),
                strict.matches if strict else None,
                strict.selected_matches if strict else None,
                *_estimate(strict.precision if strict else None),
                *_estimate(strict.enrichment if strict else None),
                _round(random_list.mean) if random_list else None,
                random_list.low if random_list else None,
                random_list.high if random_list else None,
                drawn.selected if drawn else None,
                *_estimate(drawn.precision if drawn else None),
                statistics.resamples,
                statistics.seed,
            ]
        )
    return rows


def _new_figure(width: float, height: float) -> "Figure":
    # Imported when a plot is drawn: matplotlib is slow to import and most requests draw nothing.
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _no_data(figure: "Figure", axes, message: str) -> "Figure":
    axes.axis("off")
    axes.text(0.5, 0.5, message, ha="center", va="center", fontsize=11, color="#555")
    return figure


def enrichment_plot(statistics: BenchmarkStatistics) -> "Figure":
    """Enrichment ratio (precision among selected / base rate) per generator with 95% task-resampled intervals."""
    generators = [g for g in statistics.generators if g.primary and g.primary.enrichment.value is not None]
    figure = _new_figure(7.5, 1.2 + 0.55 * max(1, len(generators)))
    axes = figure.add_subplot()
    if not generators:
        return _no_data(figure, axes, "No enrichment yet: it needs judged hypotheses and a selection.")
    for offset, (label, colour) in enumerate((("primary", _COLOURS[0]), ("strict", _COLOURS[1]))):
        for index, g in enumerate(generators):
            estimate = getattr(g, label).enrichment
            if estimate.value is None:
                continue
            y = index + (offset - 0.5) * 0.3
            low = estimate.value - estimate.low if estimate.low is not None else 0
            high = estimate.high - estimate.value if estimate.high is not None else 0
            axes.errorbar(
                estimate.value,
                y,
                xerr=[[low], [high]],
                fmt="o",
                color=colour,
                capsize=3,
                label=f"{label} outcome" if index == 0 else None,
            )
    axes.axvline(1.0, color="#888", linestyle="--", linewidth=1, label="random list (ratio 1)")
    axes.set_yticks(range(len(generators)), [g.generator for g in generators])
    axes.invert_yaxis()
    axes.set_xlabel(
        f"Enrichment: precision among selected ÷ base rate (95% interval, {statistics.resamples:,} task resamples)"
    )
    axes.legend(loc="best", fontsize=8)
    axes.set_title("Enrichment of the selection per generator", fontsize=11)
    return figure


def judge_votes_table(statistics: BenchmarkStatistics) -> list[list]:
    rows = [["threshold", "judges_voting", "hypotheses", "judged", "not_judged", "fleiss_kappa"]]
    for votes in (statistics.votes_primary, statistics.votes_strict):
        if votes is None:
            continue
        for count, hypotheses in enumerate(votes.hypotheses_by_votes):
            rows.append(
                [votes.threshold, count, hypotheses, votes.judged, votes.not_judged, _round(votes.fleiss_kappa)]
            )
    return rows


def judge_votes_plot(statistics: BenchmarkStatistics) -> "Figure":
    """How many of the three deciding judges voted for each hypothesis, at ≥ 3 and at ≥ 4 (seed 001 М.2)."""
    figure = _new_figure(6.5, 3.6)
    axes = figure.add_subplot()
    available = [votes for votes in (statistics.votes_primary, statistics.votes_strict) if votes is not None]
    if not available or not any(votes.judged for votes in available):
        return _no_data(figure, axes, "No hypothesis has three usable judge scores yet.")
    width = 0.38
    for offset, (votes, colour) in enumerate(zip(available, _COLOURS, strict=False)):
        positions = [count + (offset - 0.5) * width for count in range(4)]
        kappa = f", Fleiss' κ {votes.fleiss_kappa:.2f}" if votes.fleiss_kappa is not None else ""
        bars = axes.bar(
            positions, votes.hypotheses_by_votes, width, color=colour, label=f"score ≥ {votes.threshold}{kappa}"
        )
        axes.bar_label(bars, fontsize=8)
    axes.set_xticks(range(4), ["none", "one", "two", "all three"])
    axes.set_xlabel("Deciding judges (other companies) voting for the hypothesis")
    axes.set_ylabel("Hypotheses")
    axes.legend(fontsize=8)
    axes.set_title("Judge-vote distribution", fontsize=11)
    return figure


def agreement_table(statistics: BenchmarkStatistics) -> list[list]:
    header = [
        "judge_a",
        "judge_b",
        "hypotheses",
        "agreement",
        *_estimate_header("kappa"),
        *_estimate_header("strict_kappa"),
        *_estimate_header("weighted_kappa"),
        "spearman",
        "resamples",
        "seed",
    ]
    rows = [header]
    agreement = statistics.agreement
    for pair in agreement.pairs if agreement else ():
        rows.append(
            [
                spreadsheet_text(pair.judge_a),
                spreadsheet_text(pair.judge_b),
                pair.hypotheses,
                _round(pair.agreement),
                *_estimate(pair.kappa),
                *_estimate(pair.strict_kappa),
                *_estimate(pair.weighted_kappa),
                _round(pair.spearman),
                agreement.resamples,
                agreement.seed,
            ]
        )
    return rows


def agreement_plot(statistics: BenchmarkStatistics) -> "Figure":
    """Judges × judges: Cohen's kappa on the ≥ 3 vote below the diagonal, quadratic-weighted kappa above it."""
    agreement = statistics.agreement
    judges = agreement.judges if agreement else ()
    size = max(4.0, 1.1 * len(judges) + 2)
    figure = _new_figure(size + 1, size)
    axes = figure.add_subplot()
    if len(judges) < 2:
        return _no_data(figure, axes, "Agreement needs at least two judges with scores.")
    n = len(judges)
    matrix = [[float("nan")] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            value = agreement.kappa_matrix[i][j] if i > j else agreement.weighted_kappa_matrix[i][j] if i < j else None
            if value is not None:
                matrix[i][j] = value
    image = axes.imshow(matrix, vmin=-1, vmax=1, cmap="RdBu")
    for i in range(n):
        for j in range(n):
            if i != j and matrix[i][j] == matrix[i][j]:
                axes.text(j, i, f"{matrix[i][j]:.2f}", ha="center", va="center", fontsize=9)
    axes.set_xticks(range(n), judges, rotation=30, ha="right")
    axes.set_yticks(range(n), judges)
    figure.colorbar(image, ax=axes, shrink=0.8, label="kappa")
    axes.set_title("Below the diagonal: Cohen's κ (score ≥ 3)\nAbove: quadratic-weighted κ (0–5)", fontsize=10)
    return figure


def single_model_lists_table(statistics: BenchmarkStatistics) -> list[list]:
    rows = [
        [
            "generator",
            "model",
            "model_yes",
            "model_yes_matching",
            "group_list_length",
            "group_matches",
            "random_cut_mean",
            "random_cut_low",
            "random_cut_high",
            "group_above_range",
        ]
    ]
    for g in statistics.generators:
        for item in g.single_model_lists:
            control = item.control
            rows.append(
                [
                    spreadsheet_text(g.generator),
                    spreadsheet_text(item.model),
                    item.positives,
                    item.positive_matches,
                    item.group_length,
                    item.group_matches,
                    _round(control.mean) if control else None,
                    control.low if control else None,
                    control.high if control else None,
                    (item.group_matches > control.high) if control else None,
                ]
            )
    return rows


BENCHMARK_FIGURES = {
    "enrichment": FigureSpec("Enrichment per generator", enrichment_table, enrichment_plot),
    "judge-votes": FigureSpec("Judge-vote distribution", judge_votes_table, judge_votes_plot),
    "agreement": FigureSpec("Agreement between judges", agreement_table, agreement_plot),
    "single-model-lists": FigureSpec("Single-model lists of the group's length", single_model_lists_table, None),
}


# Human review of a cohort --------------------------------------------------------------------------------------


def _group_row(author: str, group) -> list:
    return [
        spreadsheet_text(author),
        group.pairs,
        group.improved,
        group.unchanged,
        group.worsened,
        _round(group.improved_share),
        _round(group.unchanged_share),
        _round(group.worsened_share),
        _round(group.mean_change),
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


def revisions_plot(review_analysis: CohortReviewAnalysis) -> "Figure":
    """Shares of revisions that improved, kept or worsened the mean overall score, per author (seed 002)."""
    outcomes = review_analysis.revisions
    groups = [*sorted(outcomes.by_author.items()), ("All authors", outcomes.overall)]
    groups = [(author, group) for author, group in groups if group.pairs]
    figure = _new_figure(7.5, 1.4 + 0.5 * max(1, len(groups)))
    axes = figure.add_subplot()
    if not groups:
        return _no_data(figure, axes, "No revised proposal and its parent both have submitted reviews here.")
    left = [0.0] * len(groups)
    for name, colour in (("improved", _COLOURS[2]), ("unchanged", "#a0aec0"), ("worsened", _COLOURS[1])):
        shares = [getattr(group, f"{name}_share") for _, group in groups]
        axes.barh(range(len(groups)), shares, left=left, color=colour, label=name)
        left = [a + b for a, b in zip(left, shares, strict=True)]
    axes.set_yticks(range(len(groups)), [f"{author} (n={group.pairs})" for author, group in groups])
    axes.invert_yaxis()
    axes.set_xlim(0, 1)
    axes.set_xlabel("Share of parent → child pairs (change in the mean overall score)")
    axes.legend(fontsize=8, ncols=3, loc="lower center", bbox_to_anchor=(0.5, 1.0))
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
                _round(item.exact_agreement),
                _round(item.alpha),
            ]
        )
    return rows


def reviewer_agreement_plot(review_analysis: CohortReviewAnalysis) -> "Figure":
    """Krippendorff's alpha and exact agreement per criterion ("can't judge" left out)."""
    items = list(review_analysis.agreement)
    figure = _new_figure(7.5, 1.4 + 0.42 * len(items))
    axes = figure.add_subplot()
    if not any(item.reviewer_pairs for item in items):
        return _no_data(figure, axes, "No proposal has two submitted reviews yet.")
    positions = range(len(items))
    axes.barh(
        [p - 0.2 for p in positions],
        [item.alpha or 0 for item in items],
        0.4,
        color=_COLOURS[0],
        label="Krippendorff's α",
    )
    axes.barh(
        [p + 0.2 for p in positions],
        [item.exact_agreement or 0 for item in items],
        0.4,
        color=_COLOURS[4],
        label="exact agreement (share of reviewer pairs)",
    )
    axes.set_yticks(list(positions), [item.criterion.replace("_", " ") for item in items])
    axes.invert_yaxis()
    axes.axvline(0, color="#555", linewidth=0.8)
    axes.set_xlim(min(-0.2, min((item.alpha or 0) for item in items) - 0.05), 1)
    axes.legend(fontsize=8, loc="lower center", ncols=2, bbox_to_anchor=(0.5, 1.0))
    return figure


COHORT_FIGURES = {
    "revisions": FigureSpec("Revision outcomes", revisions_table, revisions_plot),
    "reviewer-agreement": FigureSpec(
        "Reviewer agreement per criterion", reviewer_agreement_table, reviewer_agreement_plot
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

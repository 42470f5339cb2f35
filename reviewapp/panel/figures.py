"""The tables and plots of the panel's pages: each figure is a table (downloadable as CSV) and, for most, a plot
(reviewapp.figures' machinery: matplotlib on the server, PNG or SVG). Unknown scores are never drawn as numbers:
a dimension without a median is labelled, not plotted at zero."""

from typing import TYPE_CHECKING

import numpy as np

from reviewapp.figures import COLOURS, FigureSpec, new_figure, no_data, rounded
from reviewapp.panel import profile as rules
from reviewapp.panel.calibration import CLOSEST_CRITERION
from reviewapp.panel.selectors import cohort_panel, panel_export_columns
from reviewapp.selectors.exports import spreadsheet_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

ROLE_MARKERS = {rules.RUBRIC_JUDGE: "o", rules.DOMAIN_SCIENTIST: "s", rules.METHODS_REVIEWER: "^"}


# One hypothesis's profile (source: selectors.SubjectProfile) ------------------------------------------------------


def profile_table(found) -> list[list]:
    rows = [["dimension", "weight", *rules.ROLES, "median"]]
    scores = {review.role: review.scores for review in found.reviews if not review.failed}
    for dimension in rules.DIMENSIONS:
        rows.append(
            [
                dimension.key,
                dimension.weight,
                *(scores.get(role, {}).get(dimension.key, "") for role in rules.ROLES),
                found.profile.medians[dimension.key],
            ]
        )
    rows.append(["q", 100, "", "", "", rounded(found.profile.q)])
    return rows


def profile_plot(found) -> "Figure":
    """The eight medians as bars (1–10) with each role's known score as a marker; a dimension without a median says
    why instead of drawing a bar."""
    figure = new_figure(7.5, 4.2)
    axes = figure.add_subplot()
    if not found.reviews:
        return no_data(figure, axes, "The panel has not reviewed this hypothesis yet.")
    positions = np.arange(len(rules.DIMENSIONS))
    medians = [found.profile.medians[dimension.key] for dimension in rules.DIMENSIONS]
    known = [(index, value) for index, value in enumerate(medians) if value is not None]
    axes.barh(
        [index for index, _ in known], [value for _, value in known], color=COLOURS[0], alpha=0.35, label="median"
    )
    for index, (dimension, value) in enumerate(zip(rules.DIMENSIONS, medians, strict=True)):
        if value is None:
            why = rules.INAPPLICABLE if dimension.key in found.profile.coverage.inapplicable else "no median (unknown)"
            axes.text(0.2, index, why, va="center", fontsize=8, color="#555")
    for review in found.reviews:
        if review.failed:
            continue
        known = [
            (i, review.scores[d.key])
            for i, d in enumerate(rules.DIMENSIONS)
            if rules.is_known(review.scores.get(d.key))
        ]
        if known:
            axes.scatter(
                [score for _, score in known],
                [i for i, _ in known],
                marker=ROLE_MARKERS[review.role],
                label=rules.ROLE_LABELS[review.role],
                zorder=3,
            )
    axes.set_yticks(positions, [f"{d.label} ({d.weight})" for d in rules.DIMENSIONS])
    axes.invert_yaxis()
    axes.set_xlim(0, 10.5)
    axes.set_xticks(range(1, 11))
    q = found.profile.q
    axes.set_xlabel(f"Score (1–10); Q = {q:.2f}" if q is not None else "Score (1–10); Q incomplete")
    axes.legend(fontsize=8, ncols=4, loc="lower center", bbox_to_anchor=(0.5, 1.0))
    return figure


SUBJECT_FIGURES = {"profile": FigureSpec("Hypothesis profile", profile_table, profile_plot)}


# A cohort (source: the cohort; each figure reads what it needs) ---------------------------------------------------


def panel_table(cohort) -> list[list]:
    columns, values = panel_export_columns(cohort)
    rows = [["proposal", "task", *columns]]
    for row in cohort_panel(cohort).rows:
        rows.append([spreadsheet_text(row.proposal_id), spreadsheet_text(row.task_key), *values[row.proposal_pk]])
    return rows


def ratings_table(source) -> list[list]:
    rows = [["task", "proposal", "mu", "sigma", "conservative", "rank", "comparisons"]]
    for item in source["ratings"]:
        rows.append(
            [
                spreadsheet_text(item["task"]),
                spreadsheet_text(item["proposal"]),
                rounded(item["mu"]),
                rounded(item["sigma"]),
                rounded(item["conservative"]),
                rounded(item["rank"]),
                item["comparisons"],
            ]
        )
    return rows


# The most points of the ratings plot that are each labelled with their proposal.
LABELLED_POINTS = 60


def ratings_plot(source) -> "Figure":
    """μ ± 2σ of every proposal, grouped by research task and ordered by s within it; the lower end is s."""
    ratings = source["ratings"]
    figure = new_figure(min(16, 6 + len(ratings) * 0.02), 4.5)
    axes = figure.add_subplot()
    if not ratings:
        return no_data(figure, axes, "The cohort has no proposals.")
    ordered = sorted(ratings, key=lambda item: (item["task"], item["conservative"]))
    x = np.arange(len(ordered))
    mu = np.array([item["mu"] for item in ordered])
    sigma = np.array([item["sigma"] for item in ordered])
    compared = np.array([item["comparisons"] > 0 for item in ordered])
    for mask, colour, label in ((compared, COLOURS[0], "compared"), (~compared, "#a0aec0", "never compared (prior)")):
        if mask.any():
            axes.errorbar(x[mask], mu[mask], yerr=2 * sigma[mask], fmt="o", ms=2.5, lw=0.8, color=colour, label=label)
    if len(ordered) <= LABELLED_POINTS:
        # Each point names its proposal above its bar; past LABELLED_POINTS the names would overlap (the page's
        # tables and the CSV name them).
        for position, item, top in zip(x, ordered, mu + 2 * sigma, strict=True):
            axes.annotate(
                item["proposal"],
                (position, top),
                xytext=(0, 3),
                textcoords="offset points",
                rotation=90,
                ha="center",
                va="bottom",
                fontsize=6,
            )
        axes.margins(y=0.25)
    tasks = [item["task"] for item in ordered]
    starts = [i for i in range(len(tasks)) if i == 0 or tasks[i] != tasks[i - 1]]
    for start in starts[1:]:
        axes.axvline(start - 0.5, color="#cbd5e0", lw=0.8)
    if len(starts) <= 40:
        ends = [*starts[1:], len(tasks)]
        centres = [(start + end - 1) / 2 for start, end in zip(starts, ends, strict=True)]
        axes.set_xticks(centres, [tasks[start] for start in starts], rotation=60, ha="right", fontsize=7)
    else:
        axes.set_xticks([])
        axes.set_xlabel(f"{len(starts)} research tasks")
    axes.set_ylabel("μ ± 2σ (the lower end is s = μ − 2σ)")
    axes.legend(fontsize=8, loc="upper right")
    return figure


def comparisons_table(log) -> list[list]:
    rows = [["seq", "a", "b", "outcome", "source", "shown_first", "order_seed", "model", "simulated", "rationale"]]
    for row in log.iterator(chunk_size=5000):
        first = row["shown_first_id"]
        rows.append(
            [
                row["seq"],
                spreadsheet_text(row["a__external_id"]),
                spreadsheet_text(row["b__external_id"]),
                row["outcome"],
                row["source"],
                "" if first is None else "a" if first == row["a_id"] else "b",
                row["order_seed"],
                spreadsheet_text(row["model_name"]),
                "true" if row["simulated"] else "false",
                spreadsheet_text(row["rationale"]),
            ]
        )
    return rows


def _figures_of(result) -> list[tuple[str, str, object]]:
    """(figure, compared with, Figure) of the calibration, in the page's order."""
    return [
        ("q_vs_overall", "Q vs mean overall value", result.q_vs_overall),
        *(
            (f"dimension_{dimension}", f"{dimension} vs {criterion}", result.dimensions[dimension])
            for dimension, criterion in CLOSEST_CRITERION.items()
        ),
        ("s_vs_overall_within_tasks", "s vs mean overall value, within tasks", result.s_vs_overall_within_tasks),
        ("reject_share_top_quarter", "share of reject, top quarter of Q", result.reject_top_quarter),
        ("reject_share_bottom_quarter", "share of reject, bottom quarter of Q", result.reject_bottom_quarter),
    ]


def calibration_table(result) -> list[list]:
    rows = [["figure", "compares", "estimate", "low", "high", "n", "undefined_resamples"]]
    for key, label, figure in _figures_of(result):
        estimate = [rounded(figure.estimate), rounded(figure.low), rounded(figure.high)]
        rows.append([key, label, *estimate, figure.n, figure.undefined_resamples])
    return rows


def calibration_plot(result) -> "Figure":
    """Each Spearman coefficient with its task-resampled 95% interval, and the shares of human reject at the two ends
    of Q."""
    items = _figures_of(result)
    correlations, shares = items[:-2], items[-2:]
    figure = new_figure(7.5, 1.8 + 0.42 * len(items))
    if not result.proposals:
        return no_data(
            figure, figure.add_subplot(), "No proposal has both a panel review and a submitted human review."
        )
    top, bottom = figure.subplots(2, 1, height_ratios=[len(correlations), len(shares) + 0.6])
    for axes, group, limits in ((top, correlations, (-1, 1)), (bottom, shares, (0, 1))):
        for position, (_key, _label, item) in enumerate(group):
            if item.estimate is None:
                axes.text(limits[0] + 0.02, position, "undefined", va="center", fontsize=8, color="#555")
                continue
            low = max(0.0, item.estimate - item.low) if item.low is not None else 0  # clipped as in reference_plot
            high = max(0.0, item.high - item.estimate) if item.high is not None else 0
            axes.errorbar([item.estimate], [position], xerr=[[low], [high]], fmt="o", color=COLOURS[0], capsize=3)
        axes.set_yticks(range(len(group)), [f"{label} (n={item.n})" for _key, label, item in group], fontsize=8)
        axes.invert_yaxis()
        axes.set_xlim(*limits)
    top.axvline(0, color="#555", lw=0.8)
    top.set_xlabel("Spearman's ρ, 95% interval from resampled research tasks")
    bottom.set_xlabel("Share of human reviews recommending reject")
    return figure


def calibration_scatter(units) -> "Figure":
    """Q against the mean human overall value of each proposal with both."""
    pairs = [(unit.q, float(np.mean(unit.overall))) for unit in units if unit.q is not None and len(unit.overall)]
    figure = new_figure(6, 4.5)
    axes = figure.add_subplot()
    if not pairs:
        return no_data(figure, axes, "No proposal has both a complete Q and a submitted human review.")
    q, human = zip(*pairs, strict=True)
    axes.scatter(q, human, s=14, alpha=0.7, color=COLOURS[0])
    axes.set_xlabel("Q (AI panel, 1–10)")
    axes.set_ylabel("Mean overall research value (human, 1–5)")
    return figure


def calibration_scatter_table(units) -> list[list]:
    rows = [["task", "q", "mean_overall", "human_reviews"]]
    for unit in units:
        if unit.q is not None and len(unit.overall):
            mean = rounded(float(np.mean(unit.overall)))
            rows.append([spreadsheet_text(str(unit.task)), rounded(unit.q), mean, len(unit.overall)])
    return rows


# Development diagnostics against the fresh-context reference (source: selectors.ReferenceDiagnostics) -------------


def _reference_figures(diagnostics) -> list[tuple[str, str, str, object]]:
    """(role, compared, unit, Figure) of every diagnostic, role by role: weighted score, each dimension, then the
    mean absolute difference."""
    items = []
    for agreement in diagnostics.roles:
        items.append((agreement.role, "weighted score", "spearman", agreement.weighted))
        items += [(agreement.role, key, "spearman", agreement.dimensions[key]) for key in rules.DIMENSION_KEYS]
        items.append((agreement.role, "all dimensions", "mean_absolute_difference", agreement.absolute_difference))
    return items


def reference_table(diagnostics) -> list[list]:
    rows = [["role", "compares", "statistic", "estimate", "low", "high", "n", "undefined_resamples"]]
    for role, compared, statistic, figure in _reference_figures(diagnostics):
        estimate = [rounded(figure.estimate), rounded(figure.low), rounded(figure.high)]
        rows.append([role, compared, statistic, *estimate, figure.n, figure.undefined_resamples])
    return rows


def reference_plot(diagnostics) -> "Figure":
    """Per role: Spearman's ρ of its weighted score and of each dimension with the reference's, with task-resampled
    95% intervals; a coefficient that is undefined is labelled, not drawn."""
    figure = new_figure(9, 4.8)
    if not diagnostics.reviewed:
        return no_data(figure, figure.add_subplot(), "No proposal of the cohort has a fresh-context reference review.")
    axes = figure.add_subplot()
    labels = ["weighted score", *(dimension.label for dimension in rules.DIMENSIONS)]
    offsets = np.linspace(-0.25, 0.25, len(diagnostics.roles))
    for offset, agreement in zip(offsets, diagnostics.roles, strict=True):
        items = [agreement.weighted, *(agreement.dimensions[key] for key in rules.DIMENSION_KEYS)]
        shown = [(position, item) for position, item in enumerate(items) if item.estimate is not None]
        if not shown:
            continue
        positions = [position + offset for position, _ in shown]
        estimates = [item.estimate for _, item in shown]
        # Clipped at 0: an estimate of ±1 may lie a rounding error outside its own interval.
        below = [max(0.0, item.estimate - item.low) if item.low is not None else 0 for _, item in shown]
        above = [max(0.0, item.high - item.estimate) if item.high is not None else 0 for _, item in shown]
        axes.errorbar(
            estimates,
            positions,
            xerr=[below, above],
            fmt=ROLE_MARKERS[agreement.role],
            capsize=2,
            label=rules.ROLE_LABELS[agreement.role],
        )
    axes.set_yticks(range(len(labels)), labels, fontsize=8)
    axes.invert_yaxis()
    axes.set_xlim(-1, 1)
    axes.axvline(0, color="#555", lw=0.8)
    axes.set_xlabel("Spearman's ρ with the fresh-context reference, 95% interval from resampled research tasks")
    axes.legend(fontsize=8, loc="lower left")
    return figure

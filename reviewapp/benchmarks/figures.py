"""The tables and plots of a benchmark set's statistics page (see reviewapp.figures for the machinery)."""

from collections.abc import Mapping
from typing import TYPE_CHECKING

from django.core.cache import cache

from reviewapp.benchmarks.statistics import BenchmarkStatistics, statistics_key
from reviewapp.benchmarks.study_tables import TABLES
from reviewapp.figures import COLOURS, FigureSpec, figure_file, new_figure, no_data, rounded
from reviewapp.selectors.exports import spreadsheet_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _estimate(estimate) -> list:
    if estimate is None:
        return [None, None, None, None]
    return [rounded(estimate.value), rounded(estimate.low), rounded(estimate.high), estimate.undefined_resamples]


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
                rounded(random_list.mean) if random_list else None,
                random_list.low if random_list else None,
                random_list.high if random_list else None,
                drawn.selected if drawn else None,
                *_estimate(drawn.precision if drawn else None),
                statistics.resamples,
                statistics.seed,
            ]
        )
    return rows


def enrichment_plot(statistics: BenchmarkStatistics) -> "Figure":
    """Enrichment ratio (precision among selected / base rate) per generator with 95% task-resampled intervals."""
    generators = [g for g in statistics.generators if g.primary and g.primary.enrichment.value is not None]
    figure = new_figure(7.5, 1.2 + 0.55 * max(1, len(generators)))
    axes = figure.add_subplot()
    if not generators:
        return no_data(figure, axes, "No enrichment yet: it needs judged hypotheses and a selection.")
    for offset, (label, colour) in enumerate((("primary", COLOURS[0]), ("strict", COLOURS[1]))):
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
                [votes.threshold, count, hypotheses, votes.judged, votes.not_judged, rounded(votes.fleiss_kappa)]
            )
    return rows


def judge_votes_plot(statistics: BenchmarkStatistics) -> "Figure":
    """How many of the three deciding judges voted for each hypothesis, at ≥ 3 and at ≥ 4
    (docs/protocol.md#vote-distribution)."""
    figure = new_figure(6.5, 3.6)
    axes = figure.add_subplot()
    available = [votes for votes in (statistics.votes_primary, statistics.votes_strict) if votes is not None]
    if not available or not any(votes.judged for votes in available):
        return no_data(figure, axes, "No hypothesis has three usable judge scores yet.")
    width = 0.38
    for offset, (votes, colour) in enumerate(zip(available, COLOURS, strict=False)):
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
                rounded(pair.agreement),
                *_estimate(pair.kappa),
                *_estimate(pair.strict_kappa),
                *_estimate(pair.weighted_kappa),
                rounded(pair.spearman),
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
    figure = new_figure(size + 1, size)
    axes = figure.add_subplot()
    if len(judges) < 2:
        return no_data(figure, axes, "Agreement needs at least two judges with scores.")
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


BENCHMARK_FIGURES = {
    "enrichment": FigureSpec("Enrichment per generator", enrichment_table, enrichment_plot),
    "judge-votes": FigureSpec("Judge-vote distribution", judge_votes_table, judge_votes_plot),
    "agreement": FigureSpec("Agreement between judges", agreement_table, agreement_plot),
}


def _study_figure(slug: str) -> FigureSpec:
    spec = TABLES[slug]

    def table(statistics: BenchmarkStatistics) -> list[list]:
        # Names of generators and models come from imports: no formula may start in a cell.
        rows = spec.build(statistics).csv_rows()
        return [[spreadsheet_text(value) if isinstance(value, str) else value for value in row] for row in rows]

    return FigureSpec(spec.title, table, spec.plot)


# The appendices' analyses (reviewapp.benchmarks.study_tables), each table a CSV and some a plot.
BENCHMARK_FIGURES |= {slug: _study_figure(slug) for slug in TABLES}


# As long as the statistics they are drawn from (reviewapp.benchmarks.selectors).
FIGURE_CACHE_SECONDS = 24 * 3600


def figure_cache_key(
    benchmark_id: int, design: str, data_version: str, resamples: int, seeds: Mapping[str, int], figure: str
) -> str:
    """A figure's file (``figure`` with its format, "enrichment.png") under the statistics' own key: the set, its
    data's version, resamples and seeds."""
    return f"benchmark-figure:{statistics_key(benchmark_id, design, data_version, resamples, seeds)}:{figure}"


def cached_figure_file(key: str) -> bytes | None:
    return cache.get(key)


def benchmark_figure_file(statistics: BenchmarkStatistics, figure: str, file_format: str) -> bytes:
    """A figure's CSV, PNG or SVG, drawn once per computation of the statistics and cached under its key, so a change
    of data or seed draws afresh and nothing else does."""
    key = figure_cache_key(
        statistics.benchmark_id,
        statistics.design,
        statistics.data_version,
        statistics.resamples,
        statistics.seeds,
        f"{figure}.{file_format}",
    )
    content = cache.get(key)
    if content is None:
        content = figure_file(BENCHMARK_FIGURES[figure], statistics, file_format)
        cache.set(key, content, FIGURE_CACHE_SECONDS)
    return content

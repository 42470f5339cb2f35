"""The tables of the appendices' analyses (reviewapp.benchmarks.study), each shown on the statistics page, offered as
CSV and written into the bundle's analysis.json: one table builder per analysis, one formatting of every kind of
value (docs/protocol.md#reporting).

A Table holds typed columns and rows of raw values; an interval is an Estimate, which a CSV spreads over four
columns (value, low, high, undefined resamples) and a page prints as "73.7% [50.0; 90.9]".
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from reviewapp.analysis import DIMENSIONS
from reviewapp.benchmarks.statistics import BenchmarkStatistics
from reviewapp.benchmarks.study import GeneratorStudy, MatrixStatus, StudyStatistics
from reviewapp.figures import COLOURS, new_figure, no_data

# Kinds of column: how a value prints and how many CSV columns it takes.
TEXT, INT, SHARE, RATIO, NUMBER, P, FLAG = "text", "int", "share", "ratio", "number", "p", "flag"
ESTIMATE_SHARE, ESTIMATE_RATIO, ESTIMATE_NUMBER = "estimate_share", "estimate_ratio", "estimate_number"
ESTIMATES = (ESTIMATE_SHARE, ESTIMATE_RATIO, ESTIMATE_NUMBER)
# A table with more rows than this is folded on the page (the CSV has them all).
FOLD_ROWS = 25


def _rounded(value, digits: int = 4):
    return None if value is None else round(float(value), digits)


def _shown(value, kind: str) -> str:
    if value is None:
        return "–"
    if kind in ESTIMATES:
        if value.value is None:
            return "–"
        scale, digits, unit = (100, 1, "%") if kind == ESTIMATE_SHARE else (1, 2, "")
        text = f"{value.value * scale:.{digits}f}{unit}"
        if value.low is not None:
            text += f" [{value.low * scale:.{digits}f}; {value.high * scale:.{digits}f}]"
        return text
    if kind == SHARE:
        return f"{value * 100:.1f}%"
    if kind in (RATIO, NUMBER):
        return f"{value:.2f}"
    if kind == P:
        return f"{value:.4f}" if value >= 0.0001 else f"{value:.1e}"
    if kind == FLAG:
        return "yes" if value else "no"
    return str(value)


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    kind: str = TEXT


@dataclass(frozen=True)
class Table:
    columns: tuple[Column, ...]
    rows: list[dict] = field(default_factory=list)
    notes: tuple[str, ...] = ()  # what the set lacks, said plainly instead of computing something else

    def header(self) -> list[str]:
        names = []
        for column in self.columns:
            names.append(column.key)
            if column.kind in ESTIMATES:
                names += [f"{column.key}_low", f"{column.key}_high", f"{column.key}_undefined_resamples"]
        return names

    def csv_rows(self) -> list[list]:
        """The header, then one list of raw values per row (intervals as four columns)."""
        out = [self.header()]
        for row in self.rows:
            values = []
            for column in self.columns:
                value = row.get(column.key)
                if column.kind in ESTIMATES:
                    if value is None:
                        values += [None, None, None, None]
                    else:
                        values += [_rounded(value.value), _rounded(value.low), _rounded(value.high)]
                        values.append(value.undefined_resamples)
                elif column.kind in (SHARE, RATIO, NUMBER, P):
                    values.append(_rounded(value, 6 if column.kind == P else 4))
                else:
                    values.append(value)
            out.append(values)
        return out

    def display_rows(self) -> list[list[str]]:
        return [[_shown(row.get(column.key), column.kind) for column in self.columns] for row in self.rows]

    @property
    def folded(self) -> bool:
        return len(self.rows) > FOLD_ROWS

    def as_json(self) -> dict:
        rows = self.csv_rows()
        return {"columns": rows[0], "rows": rows[1:], "notes": list(self.notes)}


def _study(statistics: BenchmarkStatistics) -> StudyStatistics | None:
    return statistics.study


def _seed(statistics: BenchmarkStatistics, family: str) -> int:
    return statistics.seeds.get(family, 0)


def _lacking(study: GeneratorStudy) -> str:
    matrix: MatrixStatus = study.matrix
    if not matrix.models:
        return f"{study.generator}: no forecasts."
    return (
        f"{study.generator}: the set lacks the full forecast matrix ({matrix.missing_answers} of "
        f"{matrix.hypotheses * len(matrix.models)} answers of {', '.join(matrix.models)} are missing; a set of pooled "
        "runs asks the second-stage models only about what the first stage kept)."
    )


def _p_columns(prefix: str = "") -> tuple[Column, ...]:
    return (
        Column(f"{prefix}p_value", "p", P),
        Column(f"{prefix}method", "method"),
        Column(f"{prefix}differing_tasks", "tasks differing", INT),
        Column(f"{prefix}holm_p_value", "p (Holm)", P),
    )


def _p_values(test, holm_p) -> dict:
    if test is None:
        return {}
    return {
        "p_value": test.p_value,
        "method": test.method,
        "differing_tasks": test.differing_tasks,
        "holm_p_value": holm_p,
        "difference": test.difference,
    }


SEED = Column("seed", "seed", INT)


# Е/М.6: generation ---------------------------------------------------------------------------------------------


def generation_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("generator", "Generator"),
        Column("tasks", "Tasks", INT),
        Column("judged", "Judged", INT),
        Column("matches", "Matches", INT),
        Column("match_rate", "Match rate", ESTIMATE_SHARE),
        Column("strict_matches", "Strict matches", INT),
        Column("strict_match_rate", "Strict match rate", ESTIMATE_SHARE),
        SEED,
    )
    study = _study(statistics)
    rows = [
        {
            "generator": rate.generator,
            "tasks": rate.tasks,
            "judged": rate.hypotheses,
            "matches": rate.primary_matches,
            "match_rate": rate.primary,
            "strict_matches": rate.strict_matches,
            "strict_match_rate": rate.strict,
            "seed": _seed(statistics, "generation"),
        }
        for rate in (study.generation if study else ())
    ]
    return Table(columns, rows, () if rows else ("No judged hypotheses yet.",))


def generator_comparisons_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("first", "First"),
        Column("second", "Second"),
        Column("tasks", "Common tasks", INT),
        Column("first_rate", "First's match rate", SHARE),
        Column("second_rate", "Second's match rate", SHARE),
        Column("difference", "Difference", ESTIMATE_SHARE),
        *_p_columns(),
        SEED,
    )
    study = _study(statistics)
    rows = []
    for item in study.generator_comparisons if study else ():
        rows.append(
            {
                "first": item.first,
                "second": item.second,
                "tasks": item.tasks,
                "first_rate": item.first_rate,
                "second_rate": item.second_rate,
                **_p_values(item.test, item.holm_p_value),
                "difference": item.difference,
                "seed": _seed(statistics, "generation"),
            }
        )
    return Table(columns, rows, () if rows else ("Comparisons need two generators with judged hypotheses.",))


# Н.1, Н.3: generation methods and re-generation ----------------------------------------------------------------

_NO_METHODS = (
    "No generator has hypotheses of two generation methods or two generation rounds (import hypotheses with method "
    "and generation_round)."
)


def _methods(statistics: BenchmarkStatistics):
    study = _study(statistics)
    return study.generation_methods if study else None


def generation_methods_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("generator", "Generator"),
        Column("generation_round", "Round", INT),
        Column("method", "Method"),
        Column("sets", "Sets"),
        Column("tasks", "Tasks", INT),
        Column("judged", "Judged", INT),
        Column("matches", "Matches", INT),
        Column("match_rate", "Match rate", ESTIMATE_SHARE),
        SEED,
    )
    methods = _methods(statistics)
    if methods is None:
        return Table(columns, [], (_NO_METHODS,))
    rows = [
        {
            "generator": rate.generator,
            "generation_round": rate.generation_round,
            "method": rate.method,
            "sets": rate.sets,
            "tasks": rate.tasks,
            "judged": rate.hypotheses,
            "matches": rate.matches,
            "match_rate": rate.rate,
            "seed": _seed(statistics, "generation"),
        }
        for rate in methods.rates
    ]
    return Table(columns, rows)


_COMPARED = (
    Column("tasks", "Common tasks", INT),
    Column("first_rate", "First's match rate", SHARE),
    Column("second_rate", "Second's match rate", SHARE),
    Column("first_better", "Tasks first higher", INT),
    Column("first_worse", "Tasks first lower", INT),
    Column("same", "Tasks the same", INT),
    Column("difference", "Difference", ESTIMATE_SHARE),
    Column("p_value", "p", P),
    Column("test", "test"),
    Column("differing_tasks", "tasks differing", INT),
    Column("smallest_p", "smallest attainable p", P),
    Column("holm_p_value", "p (Holm)", P),
    Column("holm_family", "Holm family", INT),
)


def _compared(item, statistics: BenchmarkStatistics) -> dict:
    return {
        "generator": item.generator,
        "sets": item.sets,
        "tasks": item.tasks,
        "first_rate": item.first_rate,
        "second_rate": item.second_rate,
        "first_better": item.first_better,
        "first_worse": item.first_worse,
        "same": item.same,
        "difference": item.difference,
        "p_value": item.test.p_value,
        "test": item.test.method,
        "differing_tasks": item.test.differing_tasks,
        "smallest_p": item.test.smallest_p,
        "holm_p_value": item.holm_p_value,
        "holm_family": item.holm_family,
        "seed": _seed(statistics, "generation"),
    }


def generation_method_comparisons_table(statistics: BenchmarkStatistics) -> Table:
    """Two methods of one generator and round; Holm within the generator and round, and over the round's
    generators."""
    columns = (
        Column("generator", "Generator"),
        Column("generation_round", "Round", INT),
        Column("sets", "Sets"),
        Column("first_method", "First"),
        Column("second_method", "Second"),
        *_COMPARED,
        Column("round_holm_p_value", "p (Holm, the round's generators)", P),
        Column("round_holm_family", "Its family", INT),
        SEED,
    )
    methods = _methods(statistics)
    if methods is None:
        return Table(columns, [], (_NO_METHODS,))
    rows = [
        {
            **_compared(item, statistics),
            "generation_round": item.first_round,
            "first_method": item.first_method,
            "second_method": item.second_method,
            "round_holm_p_value": item.round_holm_p_value,
            "round_holm_family": item.round_holm_family,
        }
        for item in methods.method_comparisons
    ]
    return Table(columns, rows, () if rows else ("No generator has two methods in one round.",))


def regeneration_table(statistics: BenchmarkStatistics) -> Table:
    """A method's later round (first) against its first round (second); Holm over the generator's comparisons."""
    columns = (
        Column("generator", "Generator"),
        Column("method", "Method"),
        Column("generation_round", "Re-generation round", INT),
        Column("against_round", "Against round", INT),
        Column("sets", "Sets"),
        *_COMPARED,
        SEED,
    )
    methods = _methods(statistics)
    if methods is None:
        return Table(columns, [], (_NO_METHODS,))
    rows = [
        {
            **_compared(item, statistics),
            "method": item.first_method,
            "generation_round": item.first_round,
            "against_round": item.second_round,
        }
        for item in methods.round_comparisons
    ]
    return Table(columns, rows, () if rows else ("No generator has a re-generation of a method.",))


def generation_task_shares_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("generator", "Generator"),
        Column("generation_round", "Round", INT),
        Column("method", "Method"),
        Column("task", "Task"),
        Column("judged", "Judged", INT),
        Column("matches", "Matches", INT),
        Column("match_share", "Match share", SHARE),
    )
    methods = _methods(statistics)
    if methods is None:
        return Table(columns, [], (_NO_METHODS,))
    rows = [
        {
            "generator": item.generator,
            "generation_round": item.generation_round,
            "method": item.method,
            "task": item.task,
            "judged": item.hypotheses,
            "matches": item.matches,
            "match_share": item.matches / item.hypotheses,
        }
        for item in methods.task_shares
    ]
    return Table(columns, rows)


def excluded_sets_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("task", "Task"),
        Column("generator", "Generator"),
        Column("method", "Method"),
        Column("generation_round", "Round", INT),
        Column("reason", "Reason"),
        Column("note", "Note"),
        Column("hypotheses", "Hypotheses held", INT),
    )
    methods = _methods(statistics)
    rows = [
        {
            "task": item.task,
            "generator": item.generator,
            "method": item.method,
            "generation_round": item.generation_round,
            "reason": EXCLUSION_REASONS.get(item.reason, item.reason),
            "note": item.note,
            "hypotheses": item.hypotheses,
        }
        for item in (methods.excluded if methods else ())
    ]
    return Table(columns, rows, () if rows else ("No generation set is left out (import the excluded_sets table).",))


EXCLUSION_REASONS = {"refusal": "refused in every attempt", "cut_reply": "refusal or cut reply in a stored step"}


def generation_methods_plot(statistics: BenchmarkStatistics):
    table = generation_methods_table(statistics)
    rows = [row for row in table.rows if row["match_rate"].value is not None]
    figure = new_figure(7.5, 1.4 + 0.36 * max(1, len(rows)))
    axes = figure.add_subplot()
    if not rows:
        return no_data(figure, axes, "No generator has two generation methods or rounds.")
    for index, row in enumerate(rows):
        value = row["match_rate"]
        low = value.value - value.low if value.low is not None else 0
        high = value.high - value.value if value.high is not None else 0
        colour = COLOURS[0] if row["sets"] == rows[0]["sets"] else COLOURS[1]
        axes.errorbar(value.value * 100, index, xerr=[[low * 100], [high * 100]], fmt="o", color=colour, capsize=3)
    labels = [
        f"{row['generator']} · round {row['generation_round']} · {row['method']}"
        + ("" if row["sets"] == rows[0]["sets"] else " (without left-out sets)")
        for row in rows
    ]
    axes.set_yticks(range(len(rows)), labels, fontsize=8)
    axes.invert_yaxis()
    axes.set_xlabel(f"Match rate, % (95% interval over task resamples, seed {_seed(statistics, 'generation')})")
    axes.set_title("Generation methods and rounds", fontsize=11)
    return figure


# Д: majority and unanimity -------------------------------------------------------------------------------------

_SELECTION_COLUMNS = (
    Column("judged", "Judged", INT),
    Column("selected", "Selected", INT),
    Column("selected_matches", "Selected matches", INT),
    Column("precision", "Precision", ESTIMATE_SHARE),
    Column("base_rate", "Base rate", ESTIMATE_SHARE),
    Column("enrichment", "Enrichment", ESTIMATE_RATIO),
    Column("sensitivity", "Sensitivity", ESTIMATE_SHARE),
)


def _selection_values(summary) -> dict:
    if summary is None:
        return {}
    return {
        "judged": summary.hypotheses,
        "selected": summary.selected,
        "selected_matches": summary.selected_matches,
        "precision": summary.precision,
        "base_rate": summary.base_rate,
        "enrichment": summary.enrichment,
        "sensitivity": summary.sensitivity,
    }


RULE_NAMES = {"own": "own forecast", "model": "outside forecaster", "majority": "majority", "unanimity": "unanimity"}


def forecast_rules_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("generator", "Generator"),
        Column("rule", "Rule"),
        Column("forecasters", "Forecasters counted"),
        *_SELECTION_COLUMNS,
        SEED,
    )
    study = _study(statistics)
    rows, notes = [], []
    for g in study.generators if study else ():
        if g.forecast_rules is None:
            notes.append(_lacking(g))
            continue
        if g.own_model is None:
            notes.append(f"{g.generator}: no forecaster of {g.company or 'its company'} is known, so no own forecast.")
        for rule in g.forecast_rules.rules:
            rows.append(
                {
                    "generator": g.generator,
                    "rule": RULE_NAMES[rule.rule],
                    "forecasters": ", ".join(rule.models),
                    **_selection_values(rule.summary),
                    "seed": _seed(statistics, "selection"),
                }
            )
    return Table(columns, rows, tuple(notes))


# Ж: single-model lists of the group's length -------------------------------------------------------------------

_POOLED_LISTS = (
    "This set uses the pooled design: stage-2 models are asked only about the hypotheses stage 1 kept, so where stage "
    "1 discarded any of a generator's hypotheses they have no “yes” list of their own (their “yes” answers lie inside "
    "the stage-1 model's list) and none is computed for them. A set of the seed-001 design, or an import with every "
    "model's forecast on every hypothesis, gives every model's list."
)
_PARTIAL_LISTS = (
    "A model's own list exists only where it was asked about every judged hypothesis of the generator; this set lacks "
    "some of those forecasts."
)


def trimmed_lists_table(statistics: BenchmarkStatistics) -> Table:
    """Per generator and for all generators: the group's length drawn from every judged hypothesis ("whole set"),
    then each model's own list cut to that length (reviewapp.benchmarks.statistics.SingleModelList)."""
    columns = (
        Column("generator", "Generator"),
        Column("model", "Model"),
        Column("yes", "Its yes", INT),
        Column("yes_matching", "Of which matching", INT),
        Column("group_list_length", "Group list", INT),
        Column("group_matches", "Group matches", INT),
        Column("mean", "Random cut: mean", NUMBER),
        Column("mean_share", "Mean share of the list", SHARE),
        Column("low", "Range low", INT),
        Column("high", "Range high", INT),
        Column("simulated_mean", "Simulated mean", NUMBER),
        Column("simulated_low", "Simulated low", INT),
        Column("simulated_high", "Simulated high", INT),
        Column("group_above_range", "Group above the range", FLAG),
        SEED,
    )
    rows, notes = [], []
    if any(g.models_without_full_list for g in statistics.generators):
        notes.append(_POOLED_LISTS if statistics.design == "pooled" else _PARTIAL_LISTS)
    for g in statistics.generators:
        if g.models_without_full_list:
            notes.append(
                f"{g.generator}: no own list for {', '.join(g.models_without_full_list)} (not asked about every "
                "judged hypothesis of this generator)."
            )
        whole, group = g.random_list, g.primary
        if whole is None or group is None or not whole.list_length:
            notes.append(f"{g.generator}: no judged selection yet.")
            continue
        group_matches = group.selected_matches
        rows.append(
            {
                "generator": g.generator,
                "model": "whole set",
                "yes": whole.population,
                "yes_matching": whole.matching,
                "group_list_length": whole.list_length,
                "group_matches": group_matches,
                "mean": whole.mean,
                "mean_share": whole.mean_share,
                "low": whole.low,
                "high": whole.high,
                "group_above_range": group_matches > whole.high,
            }
        )
        for item in g.single_model_lists:
            control = item.control
            rows.append(
                {
                    "generator": g.generator,
                    "model": item.model,
                    "yes": item.positives,
                    "yes_matching": item.positive_matches,
                    "group_list_length": item.group_length,
                    "group_matches": item.group_matches,
                    **(
                        {
                            "mean": control.mean,
                            "mean_share": control.mean_share,
                            "low": control.low,
                            "high": control.high,
                            "simulated_mean": item.simulated_mean,
                            "simulated_low": item.simulated_low,
                            "simulated_high": item.simulated_high,
                            "group_above_range": item.group_above_range,
                            "seed": item.seed,
                        }
                        if control
                        else {}
                    ),
                }
            )
            if control is None:
                notes.append(f"{g.generator}: {item.model} said yes less often than the group selected.")
    return Table(columns, rows, tuple(notes))


def trimmed_lists_plot(statistics: BenchmarkStatistics):
    table = trimmed_lists_table(statistics)
    rows = [row for row in table.rows if row.get("low") is not None]
    figure = new_figure(7.5, 1.4 + 0.38 * max(1, len(rows)))
    axes = figure.add_subplot()
    if not rows:
        return no_data(figure, axes, "Random cuts need a judged selection.")
    for index, row in enumerate(rows):
        axes.plot([row["low"], row["high"]], [index, index], color=COLOURS[0], linewidth=3)
        axes.plot(row["mean"], index, "o", color=COLOURS[0])
        axes.plot(row["group_matches"], index, "D", color=COLOURS[1])
    axes.set_yticks(range(len(rows)), [f"{row['generator']} · {row['model']}" for row in rows], fontsize=8)
    axes.invert_yaxis()
    # Two lines: on one the label is wider than the figure beside the long tick labels.
    axes.set_xlabel("Matches in a random list of the group's length:\nmean and central 95% range (◆ the group)")
    axes.set_title("Single-model lists cut to the group's length", fontsize=11)
    return figure


# З: balanced accuracy ------------------------------------------------------------------------------------------


def balanced_accuracy_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("rule", "Forecaster or rule"),
        Column("statements", "Statements", INT),
        Column("confirmed", "Confirmed", INT),
        Column("refuted", "Refuted", INT),
        Column("balanced_set", "50/50", FLAG),
        Column("balanced_accuracy", "Balanced accuracy", ESTIMATE_SHARE),
        Column("accuracy", "Accuracy", ESTIMATE_SHARE),
        Column("sensitivity", "Sensitivity", ESTIMATE_SHARE),
        Column("specificity", "Specificity", ESTIMATE_SHARE),
        SEED,
    )
    study = _study(statistics)
    rows = [
        {
            "rule": item.rule,
            "statements": item.result.statements,
            "confirmed": item.result.confirmed,
            "refuted": item.result.refuted,
            "balanced_set": item.result.balanced_set,
            "balanced_accuracy": item.result.balanced_accuracy,
            "accuracy": item.result.accuracy,
            "sensitivity": item.result.sensitivity,
            "specificity": item.result.specificity,
            "seed": item.result.seed,
        }
        for item in (study.balanced_accuracy if study else ())
    ]
    note = "The set has no statements with a known result (import hypotheses with “confirmed”)."
    return Table(columns, rows, () if rows else (note,))


# И/М.7: task selection -----------------------------------------------------------------------------------------

_NO_LOG = "The set has no task-selection log (import the selection_log and selection_records tables)."


def task_selection_table(statistics: BenchmarkStatistics) -> Table:
    columns = (Column("item", "Item"), Column("value", "Value"))
    study = _study(statistics)
    selection = study.task_selection if study else None
    if selection is None:
        return Table(columns, [], (_NO_LOG,))
    check = selection.check
    mismatch = check.first_mismatch
    items = [
        ("query", selection.query),
        ("searched on", selection.searched_on or "–"),
        ("salt", selection.salt),
        ("records found", check.found),
        ("excluded by the pre-filter", check.excluded),
        ("candidates", check.candidates),
        ("found = excluded + candidates", "yes" if check.counts_add_up else "no"),
        ("final tasks", check.final),
        ("final tasks in this set", selection.final_tasks_in_set),
        ("stored order reproduces", "yes" if check.order_reproduces else "no"),
        (
            "first difference",
            f"position {mismatch.position}: stored {mismatch.stored}, SHA-256 order {mismatch.expected}"
            if mismatch
            else "–",
        ),
        ("final records that are not candidates", ", ".join(check.final_not_candidates) or "–"),
    ]
    return Table(columns, [{"item": item, "value": value} for item, value in items])


def task_selection_exclusions_table(statistics: BenchmarkStatistics) -> Table:
    columns = (Column("reason", "Reason"), Column("records", "Records", INT))
    study = _study(statistics)
    selection = study.task_selection if study else None
    if selection is None:
        return Table(columns, [], (_NO_LOG,))
    return Table(columns, [{"reason": e.reason, "records": e.records} for e in selection.check.exclusion_reasons])


def task_selection_candidates_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("stored_position", "Stored position", INT),
        Column("pmid", "PubMed id"),
        Column("sha256", "SHA-256 of salt + id"),
        Column("reproduced_position", "SHA-256 position", INT),
        Column("final", "Final task", FLAG),
        Column("task", "Task"),
        Column("task_in_set", "Task in this set", FLAG),
    )
    study = _study(statistics)
    selection = study.task_selection if study else None
    if selection is None:
        return Table(columns, [], (_NO_LOG,))
    rows = [
        {
            "stored_position": c.stored_position,
            "pmid": c.pmid,
            "sha256": c.sha256,
            "reproduced_position": c.reproduced_position,
            "final": c.final,
            "task": c.task_key,
            "task_in_set": c.task_in_set,
        }
        for c in selection.candidates
    ]
    return Table(columns, rows)


# Л.1: ranking --------------------------------------------------------------------------------------------------


def ranking_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("generator", "Generator"),
        Column("model", "Model"),
        Column("ranked", "Ranked", INT),
        Column("decided", "Of the generator's judged", INT),
        Column("matches", "Matches", INT),
        Column("auc", "AUC", ESTIMATE_RATIO),
        Column("k", "k", INT),
        Column("expected_matches", "Expected matches in the top k", NUMBER),
        Column("precision_at_k", "Precision of the top k", SHARE),
        SEED,
    )
    study = _study(statistics)
    rows = []
    for g in study.generators if study else ():
        for ranking in g.ranking:
            base = {
                "generator": g.generator,
                "model": ranking.model,
                "ranked": ranking.ranked,
                "decided": ranking.decided,
                "matches": ranking.auc.matches,
                "auc": ranking.auc.auc,
                "seed": ranking.auc.seed,
            }
            for at_k in ranking.at_k or (None,):
                rows.append(
                    {
                        **base,
                        **(
                            {"k": at_k.k, "expected_matches": at_k.expected_matches, "precision_at_k": at_k.precision}
                            if at_k
                            else {}
                        ),
                    }
                )
    note = "No hypothesis has a numerical forecast (the detailed instruction's p_experimental_support)."
    return Table(columns, rows, () if rows else (note,))


def ranking_vs_rule_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("generator", "Generator"),
        Column("model", "Model"),
        Column("k", "k (the rule's list)", INT),
        Column("rule_precision", "Rule's precision", SHARE),
        Column("ranking_precision", "Top k's precision", SHARE),
        Column("difference", "Rule minus ranking", SHARE),
        *_p_columns(),
        SEED,
    )
    study = _study(statistics)
    rows = [
        {
            "generator": g.generator,
            "model": r.model,
            "k": r.rule_k,
            "rule_precision": r.rule_precision,
            "ranking_precision": r.ranking_precision,
            **_p_values(r.test, r.holm_p_value),
            "seed": _seed(statistics, "auc"),
        }
        for g in (study.generators if study else ())
        for r in g.ranking
        if r.test is not None
    ]
    return Table(columns, rows, () if rows else ("No ranked hypotheses with a decided selection.",))


def ranking_plot(statistics: BenchmarkStatistics):
    study = _study(statistics)
    items = [(g.generator, r) for g in (study.generators if study else ()) for r in g.ranking if r.auc.auc.value]
    figure = new_figure(7.0, 1.4 + 0.4 * max(1, len(items)))
    axes = figure.add_subplot()
    if not items:
        return no_data(figure, axes, "No numerical forecasts to rank by.")
    for index, (_, ranking) in enumerate(items):
        value = ranking.auc.auc
        low = value.value - value.low if value.low is not None else 0
        high = value.high - value.value if value.high is not None else 0
        axes.errorbar(value.value, index, xerr=[[low], [high]], fmt="o", color=COLOURS[0], capsize=3)
    axes.axvline(0.5, color="#888", linestyle="--", linewidth=1)
    axes.set_yticks(range(len(items)), [f"{name} · {r.model}" for name, r in items], fontsize=8)
    axes.invert_yaxis()
    axes.set_xlabel(f"AUC of the probability against the match (95% interval, seed {_seed(statistics, 'auc')})")
    axes.set_title("Ranking by numerical forecast", fontsize=11)
    return figure


# Л.2: best single model ----------------------------------------------------------------------------------------


def best_single_model_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("generator", "Generator"),
        Column("model", "Model"),
        Column("yes", "Its yes (judged)", INT),
        Column("yes_matching", "Of which matching", INT),
        Column("precision", "Precision", SHARE),
        Column("best", "Best", FLAG),
        Column("group_selected", "Group list", INT),
        Column("group_matches", "Group matches", INT),
        Column("group_precision", "Group precision", SHARE),
        Column("difference", "Group minus best", SHARE),
        *_p_columns(),
        SEED,
    )
    study = _study(statistics)
    rows, notes = [], []
    for g in study.generators if study else ():
        best = g.best_model
        if best is None:
            notes.append(_lacking(g) if not g.matrix.complete else f"{g.generator}: no selection yet.")
            continue
        for item in best.models:
            is_best = item.model == best.best
            rows.append(
                {
                    "generator": g.generator,
                    "model": item.model,
                    "yes": item.selected,
                    "yes_matching": item.selected_matches,
                    "precision": item.precision,
                    "best": is_best,
                    "group_selected": best.group_selected,
                    "group_matches": best.group_matches,
                    "group_precision": best.group_precision,
                    **(_p_values(best.test, g.best_model_holm_p_value) if is_best else {}),
                    "seed": _seed(statistics, "further"),
                }
            )
    return Table(columns, rows, tuple(notes))


# Л.3: without the generator company's forecaster ---------------------------------------------------------------


def without_company_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("generator", "Generator"),
        Column("left_out", "Forecaster left out"),
        Column("full_selected", "Full group: selected", INT),
        Column("full_precision", "Full group: precision", ESTIMATE_SHARE),
        Column("without_selected", "Without: selected", INT),
        Column("without_precision", "Without: precision", ESTIMATE_SHARE),
        Column("precision_change", "Change in precision", ESTIMATE_SHARE),
        Column("full_sensitivity", "Full group: sensitivity", ESTIMATE_SHARE),
        Column("without_sensitivity", "Without: sensitivity", ESTIMATE_SHARE),
        Column("sensitivity_change", "Change in sensitivity", ESTIMATE_SHARE),
        Column("added", "Selected only without", INT),
        Column("technical_gaps", "Technical gaps", INT),
        SEED,
    )
    study = _study(statistics)
    rows, notes = [], []
    for g in study.generators if study else ():
        result = g.without_company
        if result is None:
            notes.append(f"{g.generator}: {g.without_company_note}")
            continue
        rows.append(
            {
                "generator": g.generator,
                "left_out": ", ".join(result.excluded_predictors) or "none (no forecaster of its company)",
                "full_selected": result.full.selected,
                "full_precision": result.full.precision,
                "without_selected": result.without.selected,
                "without_precision": result.without.precision,
                "precision_change": result.precision_change,
                "full_sensitivity": result.full.sensitivity,
                "without_sensitivity": result.without.sensitivity,
                "sensitivity_change": result.sensitivity_change,
                "added": result.added,
                "technical_gaps": result.technical_gaps,
                "seed": result.full.seed,
            }
        )
    return Table(columns, rows, tuple(notes))


# Н.7: leave one judge out --------------------------------------------------------------------------------------


def judge_left_out_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("generator", "Generator"),
        Column("judge_left_out", "Judge left out"),
        Column("company", "Company"),
        *_SELECTION_COLUMNS,
        Column("changed_outcomes", "Outcomes changed", INT),
        Column("changed_selected", "Of them selected", INT),
        SEED,
    )
    study = _study(statistics)
    rows, notes = [], []
    for g in study.generators if study else ():
        result = g.judge_left_out
        if result is None:
            notes.append(f"{g.generator}: no judged selection yet.")
            continue
        rows.append(
            {
                "generator": g.generator,
                "judge_left_out": "none",
                **_selection_values(result.all_judges),
                "seed": result.all_judges.seed,
            }
        )
        for item in result.left_out:
            rows.append(
                {
                    "generator": g.generator,
                    "judge_left_out": item.judge,
                    "company": item.company,
                    **_selection_values(item.summary),
                    "changed_outcomes": item.changed_outcomes,
                    "changed_selected": item.changed_selected,
                    "seed": item.summary.seed,
                }
            )
    return Table(columns, rows, tuple(notes))


# Л.7: re-run agreement -----------------------------------------------------------------------------------------

_NO_RERUN = (
    "The set has one forecast round: the re-run agreement needs a second round of the same requests "
    "(import the repeat_forecasts table)."
)


def rerun_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("model", "Model"),
        Column("hypotheses", "Forecast in both rounds", INT),
        Column("only_first", "Only in the first", INT),
        Column("only_second", "Only in the second", INT),
        Column("yes_first", "Yes, first", INT),
        Column("yes_second", "Yes, second", INT),
        Column("yes_both", "Yes in both", INT),
        Column("agreement", "Equal decisions", SHARE),
        Column("kappa", "Cohen's κ", NUMBER),
    )
    study = _study(statistics)
    rows = [
        {"model": item.model, **{key: getattr(item.agreement, key) for key in [c.key for c in columns[1:]]}}
        for item in (study.rerun_models if study else ())
    ]
    return Table(columns, rows, () if rows else (_NO_RERUN,))


def rerun_selection_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("generator", "Generator"),
        Column("hypotheses", "Hypotheses in both rounds", INT),
        Column("selected_first", "Selected, first", INT),
        Column("selected_repeat", "Selected, repeat", INT),
        Column("selected_both", "Selected in both", INT),
        Column("precision_first", "Precision, first", ESTIMATE_SHARE),
        Column("precision_repeat", "Precision, repeat", ESTIMATE_SHARE),
        SEED,
    )
    study = _study(statistics)
    rows = [
        {
            "generator": g.generator,
            "hypotheses": g.rerun.hypotheses,
            "selected_first": g.rerun.selected_first,
            "selected_repeat": g.rerun.selected_repeat,
            "selected_both": g.rerun.selected_both,
            "precision_first": g.rerun.first.precision if g.rerun.first else None,
            "precision_repeat": g.rerun.repeat.precision if g.rerun.repeat else None,
            "seed": _seed(statistics, "further"),
        }
        for g in (study.generators if study else ())
        if g.rerun is not None
    ]
    return Table(columns, rows, () if rows else (_NO_RERUN,))


# Л.8: key elements ---------------------------------------------------------------------------------------------


def key_elements_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("hypotheses", "Hypotheses"),
        Column("judged", "Judged", INT),
        Column("matches", "Matching", INT),
        Column("mean_share_matching", "Elements named: matching", SHARE),
        Column("mean_share_other", "Elements named: others", SHARE),
        Column("at_least_one_matching", "≥ 1 named: matching", INT),
        Column("at_least_one_other", "≥ 1 named: others", INT),
        Column("at_least_two_matching", "≥ 2 named: matching", INT),
        Column("at_least_two_other", "≥ 2 named: others", INT),
        Column("auc", "AUC of the share named", ESTIMATE_RATIO),
        Column("odds_ratio", "Odds ratio, ≥ 1 named", ESTIMATE_RATIO),
        SEED,
    )
    study = _study(statistics)
    elements = study.key_elements if study else None
    if elements is None:
        return Table(columns, [], ("No task has key elements (import the key_elements table).",))
    rows = []
    for label, result in (("all", elements.all), ("selected", elements.selected)):
        rows.append(
            {
                "hypotheses": label,
                "judged": result.hypotheses,
                "matches": result.matches,
                "mean_share_matching": result.mean_share_matching,
                "mean_share_other": result.mean_share_other,
                "at_least_one_matching": result.at_least_one_matching,
                "at_least_one_other": result.at_least_one_other,
                "at_least_two_matching": result.at_least_two_matching,
                "at_least_two_other": result.at_least_two_other,
                "auc": result.auc.auc if result.auc else None,
                "odds_ratio": result.odds_ratio,
                "seed": result.seed,
            }
        )
    return Table(columns, rows)


# М.4: rule enumeration -----------------------------------------------------------------------------------------


def rule_enumeration_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("generator", "Generator"),
        Column("kind", "Kind"),
        Column("first_stage", "First stage"),
        Column("models", "Models (vote) or second-stage group"),
        Column("threshold", "Yes needed", INT),
        Column("list_length", "List length", INT),
        Column("matches", "Matches", INT),
        Column("precision", "Precision", SHARE),
        Column("enrichment", "Enrichment", RATIO),
        Column("repeats_model", "Repeats the list of"),
    )
    study = _study(statistics)
    rows, notes = [], []
    for g in study.generators if study else ():
        rules = g.rules
        if rules is None:
            notes.append(_lacking(g))
            continue
        notes.append(
            f"{g.generator}: {len(rules.voting_rules)} voting rules and {len(rules.two_stage_schemes)} two-stage "
            f"schemes over {len(rules.models)} models, {rules.repeating_schemes} of which repeat one model's list; "
            f"{rules.hypotheses} judged hypotheses, {rules.technical_gaps} left out as technical gaps."
        )
        for rule in (*rules.voting_rules, *rules.two_stage_schemes):
            rows.append(
                {
                    "generator": g.generator,
                    "kind": "vote" if rule.kind == "vote" else "two-stage",
                    "first_stage": rule.first_stage,
                    "models": " + ".join(rule.models),
                    "threshold": rule.threshold,
                    "list_length": rule.selected,
                    "matches": rule.selected_matches,
                    "precision": rule.precision,
                    "enrichment": rule.enrichment,
                    "repeats_model": rule.repeats_model,
                }
            )
    return Table(columns, rows, tuple(notes))


def rule_enumeration_plot(statistics: BenchmarkStatistics):
    study = _study(statistics)
    generators = [g for g in (study.generators if study else ()) if g.rules is not None]
    figure = new_figure(7.0, 4.2)
    axes = figure.add_subplot()
    if not generators:
        return no_data(figure, axes, "The rule enumeration needs the full forecast matrix.")
    for index, g in enumerate(generators):
        colour = COLOURS[index % len(COLOURS)]
        votes = [r for r in g.rules.voting_rules if r.precision is not None]
        schemes = [r for r in g.rules.two_stage_schemes if r.precision is not None and r.repeats_model is None]
        axes.scatter([r.selected for r in votes], [r.precision for r in votes], s=14, color=colour, label=g.generator)
        axes.scatter(
            [r.selected for r in schemes], [r.precision for r in schemes], s=22, marker="^", color=colour, alpha=0.6
        )
        if g.rules.base_rate is not None:
            axes.axhline(g.rules.base_rate, color=colour, linestyle=":", linewidth=1)
    axes.set_xlabel("List length (● voting rules, ▲ two-stage schemes that do not repeat one model)")
    axes.set_ylabel("Precision (dotted: base rate)")
    axes.legend(fontsize=8)
    axes.set_title("Every voting rule and two-stage scheme", fontsize=11)
    return figure


# М.6: originality ----------------------------------------------------------------------------------------------

_NO_QUALITY = "No originality, feasibility and clarity scores (import the quality_scores table)."
_TO_SCORE = (
    "No scores yet: these are the pairs to score (the deciding judges score both hypotheses of each pair 1–10, then "
    "import them as the quality_scores table)."
)


def originality_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("dimension", "Score"),
        Column("pairs", "Pairs", INT),
        Column("incomplete_pairs", "Pairs left out", INT),
        Column("mean_selected", "Selected: mean", NUMBER),
        Column("mean_excluded", "Excluded: mean", NUMBER),
        Column("difference", "Selected minus excluded", ESTIMATE_NUMBER),
        Column("p_value", "p (sign flips)", P),
        Column("holm_p_value", "p (Holm)", P),
        Column("permutations", "Permutations", INT),
        SEED,
    )
    study = _study(statistics)
    originality = study.originality if study else None
    if originality is None or originality.comparison is None:
        return Table(columns, [], (_NO_QUALITY,))
    comparison = originality.comparison
    rows = [
        {
            "dimension": d.dimension,
            "pairs": d.pairs,
            "incomplete_pairs": comparison.incomplete_pairs,
            "mean_selected": d.mean_selected,
            "mean_excluded": d.mean_excluded,
            "difference": d.difference,
            "p_value": d.p_value,
            "holm_p_value": d.holm_p_value,
            "permutations": comparison.permutations,
            "seed": comparison.seed,
        }
        for d in comparison.dimensions
    ]
    return Table(columns, rows)


def originality_pairs_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("generator", "Generator"),
        Column("task", "Task"),
        Column("selected", "Selected"),
        Column("excluded", "Excluded (by hash)"),
        *(Column(f"selected_{d}", f"Selected: {d}", NUMBER) for d in DIMENSIONS),
        *(Column(f"excluded_{d}", f"Excluded: {d}", NUMBER) for d in DIMENSIONS),
    )
    study = _study(statistics)
    originality = study.originality if study else None
    if originality is None:
        return Table(columns, [], ("No selection yet: pairs are made of selected and excluded hypotheses.",))
    notes = () if originality.comparison is not None else (_TO_SCORE,)
    rows = []
    for pair in originality.pairs:
        row = {"generator": pair.generator, "task": pair.task, "selected": pair.selected, "excluded": pair.excluded}
        for prefix, scores in (("selected", pair.selected_scores), ("excluded", pair.excluded_scores)):
            for d in DIMENSIONS:
                row[f"{prefix}_{d}"] = scores[d] if scores else None
        rows.append(row)
    return Table(columns, rows, notes)


def originality_logit_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("term", "Term"),
        Column("estimate", "Coefficient", NUMBER),
        Column("std_error", "Clustered SE", NUMBER),
        Column("odds_ratio", "Odds ratio", RATIO),
        Column("odds_ratio_low", "OR low", RATIO),
        Column("odds_ratio_high", "OR high", RATIO),
        Column("p_value", "p", P),
        Column("observations", "Hypotheses", INT),
        Column("clusters", "Generator × task clusters", INT),
    )
    study = _study(statistics)
    originality = study.originality if study else None
    if originality is None or originality.comparison is None:
        return Table(columns, [], (_NO_QUALITY,))
    fit = originality.logit
    if fit is None:
        return Table(columns, [], (originality.logit_note,))
    rows = [
        {
            "term": term,
            "estimate": c.estimate,
            "std_error": c.std_error,
            "odds_ratio": c.odds_ratio,
            "odds_ratio_low": c.odds_ratio_low,
            "odds_ratio_high": c.odds_ratio_high,
            "p_value": c.p_value,
            "observations": fit.observations,
            "clusters": fit.clusters,
        }
        for term, c in fit.coefficients.items()
    ]
    return Table(columns, rows)


def originality_plot(statistics: BenchmarkStatistics):
    table = originality_table(statistics)
    figure = new_figure(6.5, 2.8)
    axes = figure.add_subplot()
    rows = [row for row in table.rows if row["difference"].value is not None]
    if not rows:
        return no_data(figure, axes, "No complete pairs of selected and excluded hypotheses with scores.")
    for index, row in enumerate(rows):
        value = row["difference"]
        low = value.value - value.low if value.low is not None else 0
        high = value.high - value.value if value.high is not None else 0
        axes.errorbar(value.value, index, xerr=[[low], [high]], fmt="o", color=COLOURS[0], capsize=3)
    axes.axvline(0, color="#888", linestyle="--", linewidth=1)
    axes.set_yticks(range(len(rows)), [row["dimension"] for row in rows])
    axes.invert_yaxis()
    axes.set_xlabel("Selected minus excluded, mean of 1–10 scores (95% interval over task resamples)")
    axes.set_title("Originality, feasibility and clarity of the selection", fontsize=11)
    return figure


# М.6: hint degree ----------------------------------------------------------------------------------------------

_NO_HINTS = "No task has a hint score (import the hints table)."


def hint_degree_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("tasks", "Tasks", INT),
        Column("rho", "Spearman's ρ", ESTIMATE_NUMBER),
        Column("p_value", "p (whole-task permutations)", P),
        Column("permutations", "Permutations", INT),
        Column("resamples", "Resamples", INT),
        SEED,
    )
    study = _study(statistics)
    hints = study.hints if study else None
    if hints is None:
        return Table(columns, [], (_NO_HINTS,))
    c = hints.correlation
    row = {"tasks": c.tasks, "rho": c.rho, "p_value": c.p_value, "permutations": c.permutations}
    notes = () if c.p_value is not None else ("ρ needs three tasks whose hint scores and match rates both vary.",)
    return Table(columns, [{**row, "resamples": c.resamples, "seed": c.seed}], notes)


def hint_tasks_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("task", "Task"),
        Column("hint_score", "Hint score", NUMBER),
        Column("match_rate", "Match rate (mean over generators)", SHARE),
        Column("generators", "Generators", INT),
    )
    study = _study(statistics)
    hints = study.hints if study else None
    if hints is None:
        return Table(columns, [], (_NO_HINTS,))
    return Table(columns, [t.__dict__ for t in hints.tasks])


def hint_degree_plot(statistics: BenchmarkStatistics):
    study = _study(statistics)
    hints = study.hints if study else None
    figure = new_figure(6.0, 4.0)
    axes = figure.add_subplot()
    if hints is None or not hints.tasks:
        return no_data(figure, axes, "No task has both a hint score and judged hypotheses.")
    axes.scatter([t.hint_score for t in hints.tasks], [t.match_rate for t in hints.tasks], color=COLOURS[0], s=18)
    rho = hints.correlation.rho.value
    axes.set_xlabel("Hint score of the task")
    axes.set_ylabel("Match rate of its hypotheses")
    axes.set_title("Hint degree and match rate" + (f" (ρ = {rho:.2f})" if rho is not None else ""), fontsize=11)
    return figure


# Л.4: decisions within the pairs of a 50/50 set -----------------------------------------------------------------


_PAIR_DECISION_COLUMNS = (
    Column("rule", "Forecaster or rule"),
    Column("pairs", "Pairs", INT),
    Column("accepts_confirmed_only", "Accepts the confirmed, rejects the reversed", INT),
    Column("accepts_both", "Accepts both", INT),
    Column("rejects_both", "Rejects both", INT),
    Column("accepts_reversed_only", "Rejects the confirmed, accepts the reversed", INT),
    Column("without_answer", "No answer on both", INT),
)


def _pair_decision_rows(decisions) -> list[dict]:
    return [
        {
            "rule": item.rule,
            "pairs": item.pairs,
            "accepts_confirmed_only": item.accepts_confirmed_only,
            "accepts_both": item.accepts_both,
            "rejects_both": item.rejects_both,
            "accepts_reversed_only": item.accepts_reversed_only,
            "without_answer": item.without_answer,
        }
        for item in decisions
    ]


def pair_decisions_table(statistics: BenchmarkStatistics) -> Table:
    study = _study(statistics)
    return Table(_PAIR_DECISION_COLUMNS, _pair_decision_rows(study.pair_decisions if study else ()))


# Г: the forecast instructions compared -----------------------------------------------------------------------

_MEASURES = (
    Column("sensitivity", "Sensitivity", ESTIMATE_SHARE),
    Column("specificity", "Specificity", ESTIMATE_SHARE),
    Column("precision", "Precision (yes that match)", ESTIMATE_SHARE),
    Column("negative_predictive_value", "Negative predictive value", ESTIMATE_SHARE),
)
_NO_INSTRUCTIONS = (
    "The set's judged hypotheses have answers under fewer than two instructions (import the instruction_forecasts "
    "table, or run the set's forecasters under another instruction)."
)


def _measure_values(measures) -> dict:
    return {
        "hypotheses": measures.hypotheses,
        "matches": measures.matches,
        "positives": measures.positives,
        **{column.key: getattr(measures, column.key) for column in _MEASURES},
        "seed": measures.seed,
    }


_COUNTS = (
    Column("hypotheses", "Hypotheses", INT),
    Column("matches", "Matches", INT),
    Column("positives", "Yes answers", INT),
)


def instruction_pairs_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("pair", "Instructions compared"),
        Column("model", "Model"),
        Column("instruction", "Instruction"),
        *_COUNTS,
        *_MEASURES,
        SEED,
    )
    study = _study(statistics)
    comparison = study.instruction_comparison if study else None
    if comparison is None:
        return Table(columns, [], (_NO_INSTRUCTIONS,))
    rows = []
    for pair in comparison.pairs:
        for instruction, measures in ((pair.first, pair.first_measures), (pair.second, pair.second_measures)):
            rows.append(
                {
                    "pair": f"{pair.first} / {pair.second}",
                    "model": pair.model,
                    "instruction": instruction,
                    **_measure_values(measures),
                }
            )
    notes = () if rows else ("No model answered the same judged hypotheses under two instructions.",)
    return Table(columns, rows, notes)


def instruction_forecasters_table(statistics: BenchmarkStatistics) -> Table:
    columns = (Column("instruction", "Instruction"), Column("model", "Model"), *_COUNTS, *_MEASURES, SEED)
    study = _study(statistics)
    comparison = study.instruction_comparison if study else None
    if comparison is None:
        return Table(columns, [], (_NO_INSTRUCTIONS,))
    return Table(
        columns,
        [
            {"instruction": item.instruction, "model": item.model, **_measure_values(item.measures)}
            for item in comparison.forecasters
        ],
    )


def _interval_points(axes, rows, key: str, colour: str, shift: float = 0.0, label: str | None = None) -> None:
    """One point with its 95% interval per row, in percent, on the rows' positions (an undefined value is left
    out)."""
    for index, row in enumerate(rows):
        value = row[key]
        if value is None or value.value is None:
            continue
        low = value.value - value.low if value.low is not None else 0
        high = value.high - value.value if value.high is not None else 0
        axes.errorbar(
            value.value * 100,
            index + shift,
            xerr=[[low * 100], [high * 100]],
            fmt="o",
            color=colour,
            capsize=3,
            label=label,
        )
        label = None  # once in the legend


def instruction_plot(statistics: BenchmarkStatistics):
    table = instruction_forecasters_table(statistics)
    rows = table.rows
    figure = new_figure(7.5, max(2.8, 1.6 + 0.3 * len(rows)))
    if not rows:
        return no_data(figure, figure.add_subplot(), "No answers under two instructions.")
    axes_row = figure.subplots(1, len(_MEASURES), sharey=True)
    for axes, column, colour in zip(axes_row, _MEASURES, COLOURS, strict=False):
        _interval_points(axes, rows, column.key, colour)
        axes.set_xlim(-5, 105)
        axes.set_title(column.label.split(" (")[0], fontsize=9)
        axes.tick_params(labelsize=8)
    axes_row[0].set_yticks(range(len(rows)), [f"{row['instruction']} · {row['model']}" for row in rows], fontsize=8)
    axes_row[0].invert_yaxis()
    figure.supxlabel("Percent, 95% interval over task resamples (each forecaster, all its usable answers)", fontsize=9)
    return figure


# Л.4, Н.8: the favourable-direction rule on a 50/50 set ------------------------------------------------------

_NO_DIRECTIONS = (
    "No statement with a known result has a direction label (import the directions table for the statements of a "
    "50/50 set)."
)


def _direction(statistics: BenchmarkStatistics):
    study = _study(statistics)
    return study.direction_rule if study else None


def direction_labels_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("statements", "Statements"),
        Column("count", "Count", INT),
        Column("favourable", "Favourable", INT),
        Column("unfavourable", "Unfavourable", INT),
        Column("unlabelled", "Unlabelled", INT),
    )
    rule = _direction(statistics)
    if rule is None:
        return Table(columns, [], (_NO_DIRECTIONS,))
    labels = rule.labels
    rows = []
    for name, prefix in (("confirmed", "confirmed"), ("reversed", "reversed")):
        counts = {label: getattr(labels, f"{prefix}_{label}") for label in ("favourable", "unfavourable", "unlabelled")}
        rows.append({"statements": name, "count": sum(counts.values()), **counts})
    rows.append(
        {
            "statements": "all",
            "count": labels.statements,
            **{label: rows[0][label] + rows[1][label] for label in ("favourable", "unfavourable", "unlabelled")},
        }
    )
    return Table(columns, rows)


def direction_accuracy_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("rule", "Forecaster or rule"),
        Column("labelled", "Labelled statements answered", INT),
        Column("labelled_accuracy", "Right on labelled", ESTIMATE_SHARE),
        Column("agreement_with_rule", "Same answer as the rule", ESTIMATE_SHARE),
        Column("unlabelled", "Unlabelled statements answered", INT),
        Column("unlabelled_accuracy", "Right on unlabelled", ESTIMATE_SHARE),
        SEED,
    )
    rule = _direction(statistics)
    if rule is None:
        return Table(columns, [], (_NO_DIRECTIONS,))
    rows = []
    for item in rule.accuracy:
        seeds = [r.seed for r in (item.labelled, item.unlabelled) if r is not None]
        rows.append(
            {
                "rule": item.rule,
                "labelled": item.labelled.statements if item.labelled else 0,
                "labelled_accuracy": item.labelled.accuracy if item.labelled else None,
                "agreement_with_rule": item.agreement_with_rule.accuracy if item.agreement_with_rule else None,
                "unlabelled": item.unlabelled.statements if item.unlabelled else 0,
                "unlabelled_accuracy": item.unlabelled.accuracy if item.unlabelled else None,
                "seed": seeds[0] if seeds else None,
            }
        )
    return Table(columns, rows)


def direction_pair_decisions_table(statistics: BenchmarkStatistics) -> Table:
    rule = _direction(statistics)
    if rule is None:
        return Table(_PAIR_DECISION_COLUMNS, [], (_NO_DIRECTIONS,))
    notes = () if rule.labelled_pairs else ("The rule labelled both statements of no pair.",)
    return Table(_PAIR_DECISION_COLUMNS, _pair_decision_rows(rule.labelled_pair_decisions), notes)


def direction_pairs_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("task", "Article (task)"),
        Column("confirmed", "Confirmed statement"),
        Column("confirmed_direction", "Its label"),
        Column("reversed", "Reversed statement"),
        Column("reversed_direction", "Its label"),
    )
    rule = _direction(statistics)
    if rule is None:
        return Table(columns, [], (_NO_DIRECTIONS,))
    return Table(
        columns,
        [
            {
                "task": pair.task,
                "confirmed": pair.confirmed,
                "confirmed_direction": pair.confirmed_direction or "unlabelled",
                "reversed": pair.reversed,
                "reversed_direction": pair.reversed_direction or "unlabelled",
            }
            for pair in rule.pairs
        ],
    )


def direction_plot(statistics: BenchmarkStatistics):
    rows = direction_accuracy_table(statistics).rows
    figure = new_figure(6.5, max(2.8, 1.4 + 0.32 * len(rows)))
    axes = figure.add_subplot()
    if not rows:
        return no_data(figure, axes, "No statement with a direction label.")
    _interval_points(axes, rows, "labelled_accuracy", COLOURS[0], -0.15, "labelled statements")
    _interval_points(axes, rows, "unlabelled_accuracy", COLOURS[1], 0.15, "unlabelled statements")
    axes.axvline(50, color="#888", linestyle="--", linewidth=1)
    axes.set_xlim(-5, 105)
    axes.set_yticks(range(len(rows)), [row["rule"] for row in rows], fontsize=8)
    axes.invert_yaxis()
    figure.legend(fontsize=8, loc="outside lower center", ncols=2)  # below the axes, never over a point
    axes.set_xlabel("Right answers, percent (95% interval over article resamples)")
    axes.set_title("Accuracy on statements the rule labelled and did not label", fontsize=11)
    return figure


# Н.4: the estimated number of forecasts --------------------------------------------------------------------------


def forecast_counts_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("round", "Round"),
        Column("model", "Model"),
        Column("forecasts", "Forecasts", INT),
        Column("usable", "With a yes or no", INT),
    )
    study = _study(statistics)
    rows = [
        {"round": item.round, "model": item.model, "forecasts": item.forecasts, "usable": item.usable}
        for item in (study.forecast_counts if study else ())
    ]
    if rows:
        for name in dict.fromkeys(row["round"] for row in rows):
            of_round = [row for row in rows if row["round"] == name]
            rows.append(
                {
                    "round": name,
                    "model": "all models",
                    "forecasts": sum(row["forecasts"] for row in of_round),
                    "usable": sum(row["usable"] for row in of_round),
                }
            )
    return Table(columns, rows)


def design_forecasts_table(statistics: BenchmarkStatistics) -> Table:
    columns = (
        Column("design", "Design"),
        Column("stage", "Stage", INT),
        Column("models", "Models", INT),
        Column("hypotheses", "Hypotheses asked about", INT),
        Column("forecasts", "Forecasts", INT),
    )
    study = _study(statistics)
    rows = [
        {
            "design": item.design,
            "stage": item.stage,
            "models": item.models,
            "hypotheses": item.hypotheses,
            "forecasts": item.forecasts,
        }
        for item in (study.design_forecasts if study else ())
    ]
    return Table(columns, rows)


# The sections of the page --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TableSpec:
    slug: str
    title: str
    build: Callable[[BenchmarkStatistics], Table]
    plot: Callable | None = None


@dataclass(frozen=True)
class Section:
    slug: str
    title: str
    appendix: str  # the benchmark supplement's appendix letters, a reference (docs/analysis.md#the-appendices-analyses)
    description: str
    seed_family: str | None
    tables: tuple[TableSpec, ...]
    needs: str = ""  # what the set must hold for the section, said on the page while it is empty
    # Which published passage names the section's seed; where two passages disagree, which one is followed and the
    # other's seed, offered on the page (docs/analysis.md#seeds).
    seed_source: str = ""
    other_seed: int | None = None
    imports: tuple[str, ...] = ()  # the import tables that bring it (docs/analysis.md#importing-a-set-made-elsewhere)


SECTIONS = (
    Section(
        "generation",
        "Match rates of the generators",
        "Е, М.6, Н.1, Н.3",
        "The share of each generator's judged hypotheses that match the reference statement, and the generators "
        "compared on the tasks they share: the difference with joint task-resampled intervals and a within-task "
        "permutation test (exact when at most 20 tasks differ), Holm over the pairs.",
        "generation",
        (
            TableSpec("generation", "Match rates", generation_table),
            TableSpec("generator-comparisons", "Generators compared", generator_comparisons_table),
        ),
        needs="judge scores of the set's hypotheses",
        imports=("scores",),
        seed_source="Appendix М.6: generation intervals 20261025.",
    ),
    Section(
        "generation-methods",
        "Generation methods and re-generation",
        "Н.1, Н.3, М.6",
        "Where a generator's hypotheses come from several generation methods (one request, multi-step, Omega Point) "
        "or rounds (a re-generation of the same requests): each one's match rate with task-resampled intervals and "
        "its per-task match shares; two methods of a round, and a re-generation against the first round, compared "
        "on the tasks both have: tasks where the first did better, worse or the same, the difference with joint "
        "task resamples, the within-task permutation test (exact when at most 20 tasks differ, with the smallest p "
        "the tasks allow), Holm within the generator's comparisons and, for methods, over the round's generators. "
        "Sets left out for refusals or cut replies are listed with their reason, and every figure is given again "
        "without them.",
        "generation",
        (
            TableSpec("generation-methods", "Match rates", generation_methods_table, generation_methods_plot),
            TableSpec("generation-method-comparisons", "Methods compared", generation_method_comparisons_table),
            TableSpec("regeneration", "Re-generation against the first round", regeneration_table),
            TableSpec("excluded-sets", "Sets left out", excluded_sets_table),
            TableSpec("generation-task-shares", "Match shares per task", generation_task_shares_table),
        ),
        needs="hypotheses of several generation methods or rounds, with judge scores",
        imports=("hypotheses", "excluded_sets"),
        seed_source="Appendix М.6: generation intervals 20261025.",
    ),
    Section(
        "forecast-rules",
        "Own forecast, majority and unanimity",
        "Д",
        "For each generator: the answer of the forecaster of the generator's company, each outside forecaster, and "
        "the majority (more than half yes) and unanimity of the own forecast and every outside forecaster that "
        "answered. Needs the full forecast matrix.",
        "selection",
        (TableSpec("forecast-rules", "Rules", forecast_rules_table),),
        needs="the full forecast matrix (a set of the seed-001 design, or hypotheses imported with every forecasting "
        "model's answer) and the forecasters' companies",
        imports=("hypotheses", "forecasters"),
        seed_source="The supplement names no seed for appendix Д; the selection's, 20261026.",
    ),
    Section(
        "trimmed-lists",
        "Single-model lists of the group's length",
        "Ж, М.3, Н.6",
        "Each forecasting model's own yes list over all of a generator's judged hypotheses, cut at random to the "
        "length of the group's selection: exact hypergeometric mean and central 95% range against the group's "
        "matches, checked by 100,000 counts drawn from the same distribution; the whole-set row is the group's "
        "length drawn from every judged hypothesis. A model has its own list only where it was asked about every "
        "judged hypothesis of the generator.",
        "selection",
        (TableSpec("trimmed-lists", "Random cuts", trimmed_lists_table, trimmed_lists_plot),),
        needs="a selection and judge scores",
        imports=("hypotheses", "scores"),
        seed_source="Appendix М.6: the two-stage selection and the random control 20261026.",
    ),
    Section(
        "balanced-accuracy",
        "Balanced accuracy on a 50/50 set",
        "З",
        "Statements with a known result (half confirmed, half refuted or reversed): balanced accuracy, half the sum "
        "of sensitivity and specificity, equal to accuracy on a 50/50 set; intervals resample whole articles.",
        "selection",
        (TableSpec("balanced-accuracy", "Forecasters and rules", balanced_accuracy_table),),
        needs="statements with a known result: hypotheses imported with confirmed, and their forecasts",
        imports=("hypotheses",),
        seed_source="The supplement names no seed for appendix З; the selection's, 20261026.",
    ),
    Section(
        "pair-decisions",
        "Decisions within 50/50 pairs",
        "Л.4",
        "Each article of a 50/50 set gives one confirmed and one reversed statement, a pair. For each forecasting "
        "model, the majority and unanimity of the models that answered, and the random control: the four possible "
        "decisions on a pair (columns that sum to the number of pairs with the pairs lacking an answer).",
        None,
        (TableSpec("pair-decisions", "Decisions", pair_decisions_table),),
        needs="statements with a known result, one confirmed and one reversed per article, and their forecasts",
        imports=("hypotheses",),
    ),
    Section(
        "direction-rule",
        "Favourable-direction rule on a 50/50 set",
        "Л.4, Н.8",
        "A deterministic rule labels a statement favourable or unfavourable from the direction of change it states "
        "(the verb and the sign of the measure for the organism), or leaves it unlabelled when the measure has no "
        "agreed sign; it accepts a favourable statement and rejects an unfavourable one. The labels by result; each "
        "forecaster's, the majority's, the unanimity's and the random control's share of right answers on the "
        "labelled and on the unlabelled statements, and how often each gave the rule's answer, intervals resampling "
        "whole articles; the four decisions of the rule, each model and the random control on the pairs where the "
        "rule labelled both statements; each article's pair with its labels.",
        "further",
        (
            TableSpec("direction-labels", "Labels", direction_labels_table),
            TableSpec("direction-accuracy", "Accuracy by label", direction_accuracy_table, direction_plot),
            TableSpec("direction-pair-decisions", "Decisions on pairs labelled twice", direction_pair_decisions_table),
            TableSpec("direction-pairs", "Pairs", direction_pairs_table),
        ),
        needs="statements with a known result (hypotheses imported with confirmed), their forecasts and each "
        "statement's direction label",
        imports=("hypotheses", "directions"),
        seed_source="Appendix Л: 20261030 for all its calculations.",
    ),
    Section(
        "instruction-comparison",
        "Forecast instructions compared",
        "Г",
        "Yes/no answers of the forecasters under the detailed instruction (detailed), the five-hypothesis question "
        "(short) and the single-statement question (single), against the match with the paper, a non-match being "
        "the negative outcome: sensitivity, specificity, precision and negative predictive value with task-resampled "
        "95% intervals. For each pair of instructions, each model on the judged hypotheses it answered under both; "
        "then each forecaster over its full set of usable answers, so the denominators may differ from the pairs.",
        "selection",
        (
            TableSpec("instruction-pairs", "Pairs of instructions", instruction_pairs_table),
            TableSpec("instruction-forecasters", "Each forecaster", instruction_forecasters_table, instruction_plot),
        ),
        needs="judged hypotheses with yes/no answers under at least two instructions",
        imports=("instruction_forecasts", "scores"),
        seed_source="The supplement names no seed for appendix Г; the selection's, 20261026.",
    ),
    Section(
        "forecast-counts",
        "Estimated number of forecasts",
        "Н.4",
        "The unit is one model's forecast of one hypothesis; a forecast stored once and read again by a rule (the "
        "first-stage model's answer in the unanimity check) counts once. The forecasts the set holds per round and "
        "model, and those each design needs for its hypotheses per stage: the pooled design asks the second stage "
        "only about what the first kept, the seed-001 design every model about every hypothesis.",
        None,
        (
            TableSpec("forecast-counts", "Forecasts held", forecast_counts_table),
            TableSpec("design-forecasts", "Forecasts per design and stage", design_forecasts_table),
        ),
        needs="forecasts",
        imports=("hypotheses",),
    ),
    Section(
        "task-selection",
        "Task-selection log",
        "И, М.7",
        "The literature query, the records it found, the pre-filter's exclusions with their reasons, the candidates "
        "in their stored order and the final tasks; the stored order is checked against the order of SHA-256 of "
        "the salt immediately followed by each PubMed id.",
        None,
        (
            TableSpec("task-selection", "Summary and check", task_selection_table),
            TableSpec("task-selection-exclusions", "Exclusions by reason", task_selection_exclusions_table),
            TableSpec("task-selection-candidates", "Candidates", task_selection_candidates_table),
        ),
        needs="the task-selection log",
        imports=("selection_log", "selection_records"),
    ),
    Section(
        "ranking",
        "Ranking by numerical forecast",
        "Л.1, М.6",
        "AUC of each model's probability of support against the match (ties one half) and the expected precision "
        "of its top k with ties at the cut, for k equal to each two-stage list length; then the two-stage list "
        "against the top k of the same length on the same hypotheses, by within-task permutations with Holm over "
        "the models.",
        "auc",
        (
            TableSpec("ranking", "AUC and precision of the top k", ranking_table, ranking_plot),
            TableSpec("ranking-vs-rule", "The two-stage list against the ranking", ranking_vs_rule_table),
        ),
        needs="numerical forecasts: the detailed instruction's probabilities, or imported ones",
        imports=("probabilities",),
        seed_source="Appendix М.6: AUC intervals 20261030; appendix Л names the same for its calculations.",
    ),
    Section(
        "best-single-model",
        "The group against its best single model",
        "Л.2, М.6",
        "The best model is the one with the highest precision among its yes answers; trimming its list at random "
        "keeps that precision, so the group's precision is compared with it by within-task permutations, Holm over "
        "the generators. Needs the full forecast matrix.",
        "further",
        (TableSpec("best-single-model", "Models", best_single_model_table),),
        needs="the full forecast matrix: a set of the seed-001 design, or hypotheses imported with every "
        "forecasting model's answer",
        imports=("hypotheses",),
        seed_source="Appendix Л: 20261030 for all its calculations.",
    ),
    Section(
        "without-company",
        "Selection without the generator company's forecaster",
        "Л.3, Н.7",
        "The forecaster of the company that built the generator leaves the group; the first stage and the "
        "unanimity of the others are kept. Changes have joint intervals.",
        "further",
        (TableSpec("without-company", "Selections", without_company_table),),
        needs="the forecasters' companies and the first-stage answers",
        imports=("forecasters", "hypotheses"),
        seed_source="Followed: appendix Л, 20261030 for all its calculations. Appendix Н.7 reports this check among "
        "the robustness checks, whose seed in appendix М.6 (sensitivity analyses) is 20261027.",
        other_seed=20261027,
    ),
    Section(
        "judge-left-out",
        "Each judge left out",
        "Н.7, М.6",
        "The lists stay fixed; each judge is left out in turn, and a positive outcome then needs 3 or more from both "
        "remaining deciding judges.",
        "sensitivity",
        (TableSpec("judge-left-out", "Selections", judge_left_out_table),),
        needs="a selection and judge scores with the judges' companies",
        imports=("scores",),
        seed_source="Appendix М.6: sensitivity analyses 20261027.",
    ),
    Section(
        "rerun",
        "Re-run agreement",
        "Л.7",
        "The same requests forecast again: per model the share of equal decisions and Cohen's κ on the hypotheses "
        "forecast in both rounds, and per generator the selection (unanimity of every model) in each round.",
        "further",
        (
            TableSpec("rerun", "Models", rerun_table),
            TableSpec("rerun-selection", "Selections", rerun_selection_table),
        ),
        needs="a second round of forecasts: the set's forecasts asked again, or imported",
        imports=("repeat_forecasts",),
        seed_source="Followed: appendix Л, 20261030 for all its calculations. Appendix Н.7 reports the re-run's "
        "intervals among the robustness checks, whose seed in appendix М.6 (sensitivity analyses) is 20261027.",
        other_seed=20261027,
    ),
    Section(
        "key-elements",
        "Lexical check of key elements",
        "Л.8",
        "An element of the reference statement is named when at least two thirds of its content words occur in the "
        "hypothesis (same words, not a paraphrase). AUC of the share named against the match and the odds ratio of "
        "a match for naming at least one element, with task-resampled intervals; all hypotheses and the selected.",
        "auc",
        (TableSpec("key-elements", "Key elements", key_elements_table),),
        needs="the reference statements' key elements",
        imports=("key_elements",),
        seed_source="Appendices Л and М.6 (AUC intervals): 20261030.",
    ),
    Section(
        "rule-enumeration",
        "Every voting rule and two-stage scheme",
        "М.4",
        "Every combination of k models with every threshold of yes answers (n·2^(n−1) rules: 80 for five models), and "
        "every two-stage scheme (a first-stage model's yes, then at least one yes in a second-stage group), with "
        "list length, precision and enrichment; a scheme whose first-stage model is in its group merely repeats that "
        "model's list. Needs the full forecast matrix.",
        None,
        (TableSpec("rule-enumeration", "Rules", rule_enumeration_table, rule_enumeration_plot),),
        needs="the full forecast matrix: a set of the seed-001 design, or hypotheses imported with every "
        "forecasting model's answer",
        imports=("hypotheses",),
    ),
    Section(
        "originality",
        "Originality of selected and excluded hypotheses",
        "Л.6, М.6, Н.7",
        "Each selected hypothesis is matched by hash with an excluded one of the same generator and task; the "
        "deciding judges' 1–10 scores are averaged. Differences selected minus excluded with task-resampled "
        "intervals and a within-task sign-flip test (19,999 permutations, +1), Holm over the three scores; the "
        "logistic regression of a match on selection and centred clarity, errors clustered by generator × task.",
        "further",
        (
            TableSpec("originality", "Differences", originality_table, originality_plot),
            TableSpec("originality-logit", "Regression", originality_logit_table),
            TableSpec("originality-pairs", "Pairs", originality_pairs_table),
        ),
        needs="originality, feasibility and clarity scores of the selected and excluded hypotheses",
        imports=("quality_scores",),
        seed_source="Appendix Л: 20261030 for all its calculations.",
    ),
    Section(
        "hint-degree",
        "Hint degree of the tasks",
        "М.6, Н.2",
        "Spearman's ρ between each task's hint score and the mean of its generators' match rates; p from 99,999 "
        "permutations of the scores across whole tasks (+1), interval from task resamples with the ranks recomputed.",
        "sensitivity",
        (
            TableSpec("hint-degree", "Correlation", hint_degree_table, hint_degree_plot),
            TableSpec("hint-tasks", "Tasks", hint_tasks_table),
        ),
        needs="each task's hint score",
        imports=("hints",),
        seed_source="Appendix М.6: the hint analysis 20261027.",
    ),
)
TABLES = {spec.slug: spec for section in SECTIONS for spec in section.tables}


def study_json(statistics: BenchmarkStatistics) -> dict:
    """Every table of the appendices' analyses with its seed, for the bundle's analysis.json."""
    return {
        "seeds": dict(statistics.seeds),
        "resamples": statistics.resamples,
        "sections": {
            section.slug: {
                "title": section.title,
                "appendix": section.appendix,
                "seed_family": section.seed_family,
                "seed": statistics.seeds.get(section.seed_family) if section.seed_family else None,
                "tables": {spec.slug: spec.build(statistics).as_json() for spec in section.tables},
            }
            for section in SECTIONS
        },
    }

"""The analyses of the benchmark's appendices on a set (docs/analysis.md#the-appendices-analyses): pure functions of
the set's hypothesis rows (reviewapp.benchmarks.statistics.HypothesisRow) and of the inputs only the analyses read
(StudyInputs), no database reads. reviewapp.benchmarks.statistics calls compute_study; the selectors read the inputs.

Each analysis takes its seed from the family it belongs to (docs/analysis.md#seeds). Where an analysis needs the
full forecast matrix (every forecasting model's answer about every hypothesis of a generator) and the set lacks it,
as a set of pooled runs does, the analysis is not computed: its MatrixStatus says what is missing.
"""

import itertools
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from reviewapp import analysis
from reviewapp.analysis._resampling import Estimate, estimate, ratio, resample_counts, task_sums
from reviewapp.analysis.judges import company_key, other_company_scores


@dataclass(frozen=True)
class TaskInputs:
    key: str
    hint_score: float | None
    key_elements: tuple[str, ...]


@dataclass(frozen=True)
class SelectionRecordInput:
    pmid: str
    status: str  # "excluded" or "candidate"
    reason: str
    position: int | None
    final: bool
    task_key: str


@dataclass(frozen=True)
class SelectionLogInputs:
    query: str
    salt: str
    found: int
    searched_on: str | None
    records: tuple[SelectionRecordInput, ...]


@dataclass(frozen=True)
class ExcludedSetInput:
    """One generator's set of hypotheses for one task, method and round, left out with its reason
    (docs/analysis.md#generation-methods)."""

    task_key: str
    generator: str
    method: str
    generation_round: int
    reason: str  # "refusal" or "cut_reply"
    note: str = ""


@dataclass(frozen=True)
class StudyInputs:
    """What the analyses read besides the hypothesis rows.

    ``forecast_rounds`` is the interface of the re-run analysis: {round name: {(hypothesis pk, model): answer}},
    rounds in the order they were made; the first two are compared (docs/analysis.md#re-run-agreement).
    ``quality_scores``: {hypothesis pk: {judge: {dimension: 1–10}}}.
    """

    forecaster_companies: Mapping[str, str] = field(default_factory=dict)
    judge_companies: Mapping[str, str] = field(default_factory=dict)
    tasks: tuple[TaskInputs, ...] = ()
    selection_log: SelectionLogInputs | None = None
    quality_scores: Mapping[int, Mapping[str, Mapping[str, int]]] = field(default_factory=dict)
    forecast_rounds: Mapping[str, Mapping[tuple[int, str], bool | None]] = field(default_factory=dict)
    excluded_sets: tuple[ExcludedSetInput, ...] = ()


# Results ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MatrixStatus:
    """Whether a generator's hypotheses have every forecasting model's answer field (the full matrix)."""

    models: tuple[str, ...]
    hypotheses: int
    complete: bool
    missing_answers: int  # (hypothesis, model) answers the set does not have
    technical_gaps: int  # hypotheses with a null answer (no vote): left out of the matrix analyses


@dataclass(frozen=True)
class ModelRanking:
    """One model's numerical forecasts as a ranking of a generator's hypotheses (docs/analysis.md#ranking)."""

    model: str
    ranked: int  # judged hypotheses with a probability
    decided: int  # judged hypotheses of the generator whose selection was decided
    auc: analysis.AucEstimate
    at_k: tuple[analysis.PrecisionAtK, ...]
    rule_k: int | None  # the rule's list length on the ranked hypotheses
    rule_precision: float | None
    ranking_precision: float | None
    test: analysis.PermutationTest | None  # rule minus ranking's top k
    holm_p_value: float | None


@dataclass(frozen=True)
class RerunSelection:
    hypotheses: int  # with every model's decision in both rounds
    selected_first: int
    selected_repeat: int
    selected_both: int
    first: analysis.SelectionSummary | None
    repeat: analysis.SelectionSummary | None


@dataclass(frozen=True)
class GeneratorStudy:
    generator: str
    company: str
    matrix: MatrixStatus
    own_model: str | None
    forecast_rules: analysis.ForecastRules | None
    rules: analysis.RuleEnumeration | None
    best_model: analysis.BestSingleModel | None
    best_model_holm_p_value: float | None
    ranking: tuple[ModelRanking, ...]
    without_company: analysis.SelectionWithoutCompany | None
    without_company_note: str
    judge_left_out: analysis.LeaveOneJudgeOut | None
    rerun: RerunSelection | None


@dataclass(frozen=True)
class GenerationRate:
    generator: str
    tasks: int
    hypotheses: int  # judged
    primary: Estimate  # match rate
    primary_matches: int
    strict: Estimate
    strict_matches: int


@dataclass(frozen=True)
class GeneratorComparison:
    first: str
    second: str
    tasks: int  # tasks both generators have judged hypotheses for
    first_rate: float | None
    second_rate: float | None
    difference: Estimate  # first minus second, joint task resamples
    test: analysis.PermutationTest | None
    holm_p_value: float | None


@dataclass(frozen=True)
class BalancedRule:
    rule: str  # a model's name, "majority" or "unanimity"
    result: analysis.BalancedAccuracy


@dataclass(frozen=True)
class CandidateRow:
    stored_position: int
    pmid: str
    sha256: str
    reproduced_position: int
    final: bool
    task_key: str
    task_in_set: bool


@dataclass(frozen=True)
class TaskSelection:
    query: str
    salt: str
    searched_on: str | None
    check: analysis.TaskSelectionCheck
    candidates: tuple[CandidateRow, ...]
    final_tasks_in_set: int


@dataclass(frozen=True)
class RerunModel:
    model: str
    agreement: analysis.RerunAgreement


@dataclass(frozen=True)
class QualityPair:
    generator: str
    task: str
    selected: str
    excluded: str | None
    selected_scores: dict[str, float] | None  # {dimension: mean of the deciding judges} or None when incomplete
    excluded_scores: dict[str, float] | None


@dataclass(frozen=True)
class Originality:
    pairs: tuple[QualityPair, ...]  # also the list of hypotheses to score when the set has no scores yet
    comparison: analysis.OriginalityComparison | None  # None without any quality score
    logit: analysis.LogisticFit | None
    logit_note: str


@dataclass(frozen=True)
class HintTask:
    task: str
    hint_score: float
    match_rate: float
    generators: int


@dataclass(frozen=True)
class Hints:
    tasks: tuple[HintTask, ...]
    correlation: analysis.HintCorrelation


@dataclass(frozen=True)
class KeyElementsStudy:
    all: analysis.KeyElements
    selected: analysis.KeyElements


@dataclass(frozen=True)
class PairDecisions:
    """One decider's decisions on the pairs of a 50/50 set, each article's confirmed and reversed statement
    (docs/analysis.md#decisions-within-5050-pairs): the four possible decisions, and pairs without an answer on both."""

    rule: str  # a model's name, "majority", "unanimity" or "random control"
    pairs: int
    accepts_confirmed_only: int  # the right decision on both statements
    accepts_both: int
    rejects_both: int
    accepts_reversed_only: int  # the wrong decision on both
    without_answer: int


@dataclass(frozen=True)
class InstructionMeasures:
    """One model's yes/no answers under one instruction against the match (docs/analysis.md#instruction-comparison)."""

    instruction: str  # "detailed", "short" or "single"
    model: str
    measures: analysis.ForecastMeasures


@dataclass(frozen=True)
class InstructionPair:
    """One model under two instructions, on the judged hypotheses it answered under both."""

    first: str
    second: str
    model: str
    hypotheses: int
    first_measures: analysis.ForecastMeasures
    second_measures: analysis.ForecastMeasures


@dataclass(frozen=True)
class InstructionComparison:
    instructions: tuple[str, ...]  # those the set has answers under, in the order of INSTRUCTIONS
    pairs: tuple[InstructionPair, ...]
    forecasters: tuple[InstructionMeasures, ...]  # each over its full set of usable answers


@dataclass(frozen=True)
class DirectionLabels:
    """The favourable-direction rule's labels of the statements with a known result, by result."""

    statements: int
    labelled: int
    confirmed_favourable: int
    confirmed_unfavourable: int
    confirmed_unlabelled: int
    reversed_favourable: int
    reversed_unfavourable: int
    reversed_unlabelled: int


@dataclass(frozen=True)
class DirectionAccuracy:
    """A decider's share of right answers on the labelled and on the unlabelled statements, and how often it agreed
    with the rule on the labelled ones (None where it answered none of them)."""

    rule: str
    labelled: analysis.BalancedAccuracy | None
    agreement_with_rule: analysis.BalancedAccuracy | None  # its accuracy: the share of answers equal to the rule's
    unlabelled: analysis.BalancedAccuracy | None


@dataclass(frozen=True)
class DirectionPair:
    task: str
    confirmed: str  # the confirmed statement's id
    confirmed_direction: str  # "favourable", "unfavourable" or "" (unlabelled)
    reversed: str
    reversed_direction: str


@dataclass(frozen=True)
class DirectionRule:
    """The favourable-direction rule on a 50/50 set (docs/analysis.md#favourable-direction-rule)."""

    labels: DirectionLabels
    accuracy: tuple[DirectionAccuracy, ...]
    pairs: tuple[DirectionPair, ...]
    labelled_pairs: int  # pairs where the rule labelled both statements
    labelled_pair_decisions: tuple[PairDecisions, ...]  # the rule, each model and the random control on those pairs


@dataclass(frozen=True)
class ForecastCount:
    """Forecasts of one model in one round: one model's forecast of one hypothesis, stored once however often a rule
    reads it (docs/analysis.md#estimated-number-of-forecasts)."""

    round: str  # "first" or "repeat"
    model: str
    forecasts: int  # hypotheses the model was asked about
    usable: int  # of which a yes or no (the rest: no vote)


@dataclass(frozen=True)
class DesignForecasts:
    """The forecasts a design needs for the set's hypotheses, per stage."""

    design: str  # "pooled" or "seed-001"
    stage: int
    models: int
    hypotheses: int
    forecasts: int


ALL_SETS, WITHOUT_EXCLUDED = "all sets", "without left-out sets"
# The benchmark's generation methods in the order its tables give them; any other method follows, by name.
METHODS = ("one request", "multi-step", "Omega Point")


@dataclass(frozen=True)
class MethodRate:
    """The match rate of one generator's hypotheses of one method and generation round."""

    generator: str
    generation_round: int
    method: str
    sets: str  # ALL_SETS, or WITHOUT_EXCLUDED: the hypotheses of the left-out sets taken away
    tasks: int
    hypotheses: int  # judged
    matches: int
    rate: Estimate


@dataclass(frozen=True)
class TaskMethodShare:
    """The match share of one task's hypotheses of one generator, method and generation round."""

    generator: str
    generation_round: int
    method: str
    task: str
    hypotheses: int  # judged
    matches: int


@dataclass(frozen=True)
class GenerationComparison:
    """Two generations of one generator on the tasks both have judged hypotheses for: two methods of one round, or
    one method's later round against its first (a re-generation of the same requests)."""

    generator: str
    sets: str
    first_method: str
    first_round: int
    second_method: str
    second_round: int
    tasks: int
    first_rate: float
    second_rate: float
    # Tasks where the first generation's match share was higher, lower or the same as the second's.
    first_better: int
    first_worse: int
    same: int
    difference: Estimate  # first minus second, joint task resamples
    test: analysis.PermutationTest
    holm_p_value: float | None  # Holm over the family named by holm_family
    holm_family: int  # how many comparisons the family holds
    # Method comparisons only: Holm over every method comparison of the round's generators (None for rounds).
    round_holm_p_value: float | None = None
    round_holm_family: int = 0


@dataclass(frozen=True)
class ExcludedSet:
    task: str
    generator: str
    method: str
    generation_round: int
    reason: str
    note: str
    hypotheses: int  # of the set's hypotheses held by the set (judged or not)


@dataclass(frozen=True)
class GenerationMethods:
    """Generation methods and rounds compared (docs/analysis.md#generation-methods)."""

    rates: tuple[MethodRate, ...]
    task_shares: tuple[TaskMethodShare, ...]
    method_comparisons: tuple[GenerationComparison, ...]
    round_comparisons: tuple[GenerationComparison, ...]
    excluded: tuple[ExcludedSet, ...]


@dataclass(frozen=True)
class StudyStatistics:
    seeds: dict[str, int]
    resamples: int
    list_lengths: tuple[int, ...]  # the generators' two-stage list lengths: the k of precision@k
    generators: tuple[GeneratorStudy, ...]
    generation: tuple[GenerationRate, ...]
    generator_comparisons: tuple[GeneratorComparison, ...]
    balanced_accuracy: tuple[BalancedRule, ...]
    task_selection: TaskSelection | None
    rerun_rounds: tuple[str, ...]  # the two rounds compared, when the set has two
    rerun_models: tuple[RerunModel, ...]
    key_elements: KeyElementsStudy | None
    originality: Originality | None
    hints: Hints | None
    pair_decisions: tuple[PairDecisions, ...] = ()
    instruction_comparison: InstructionComparison | None = None
    direction_rule: DirectionRule | None = None
    forecast_counts: tuple[ForecastCount, ...] = ()
    design_forecasts: tuple[DesignForecasts, ...] = ()
    generation_methods: GenerationMethods | None = None


# Helpers ---------------------------------------------------------------------------------------------------------


def _matrix_status(rows) -> MatrixStatus:
    models = tuple(sorted({model for row in rows for model in row.forecasts}))
    missing = sum(model not in row.forecasts for row in rows for model in models)
    gaps = sum(any(row.forecasts.get(model) is None for model in models) for row in rows if models)
    return MatrixStatus(
        models=models,
        hypotheses=len(rows),
        complete=bool(models) and missing == 0,
        missing_answers=missing,
        technical_gaps=gaps,
    )


def _own_model(company: str, models: Sequence[str], forecaster_companies: Mapping[str, str]) -> str | None:
    own = [
        m for m in models if m in forecaster_companies and company_key(forecaster_companies[m]) == company_key(company)
    ]
    return own[0] if own else None


def _ranking(rows, list_lengths: Sequence[int], resamples: int, seed: int) -> tuple[ModelRanking, ...]:
    decided = [row for row in rows if row.primary is not None and row.selected is not None]
    models = sorted({model for row in rows for model, value in row.probabilities.items() if value is not None})
    rankings, tests = [], []
    for model in models:
        ranked = [row for row in rows if row.primary is not None and row.probabilities.get(model) is not None]
        scores = [float(row.probabilities[model]) for row in ranked]
        labels = [row.primary for row in ranked]
        at_k = tuple(analysis.expected_precision_at_k(scores, labels, k) for k in list_lengths if k <= len(ranked))
        on_rule = [row for row in ranked if row.selected is not None]
        rule_k = sum(bool(row.selected) for row in on_rule)
        test = rule_precision = ranking_precision = None
        if on_rule and 0 < rule_k <= len(on_rule):
            weights = analysis.top_k_weights([float(row.probabilities[model]) for row in on_rule], rule_k)
            rule_totals: defaultdict = defaultdict(lambda: [0.0, 0.0])
            ranking_totals: defaultdict = defaultdict(lambda: [0.0, 0.0])
            for row, weight in zip(on_rule, weights, strict=True):
                rule_totals[row.task_key][0] += bool(row.selected)
                rule_totals[row.task_key][1] += bool(row.selected) and row.primary
                ranking_totals[row.task_key][0] += weight
                ranking_totals[row.task_key][1] += weight * row.primary
            rule_precision = sum(t[1] for t in rule_totals.values()) / rule_k
            ranking_precision = sum(t[1] for t in ranking_totals.values()) / rule_k
            test = analysis.permutation_test_of_totals(
                {task: tuple(t) for task, t in rule_totals.items()},
                {task: tuple(t) for task, t in ranking_totals.items()},
                seed=seed,
            )
        tests.append(test)
        rankings.append(
            dict(
                model=model,
                ranked=len(ranked),
                decided=len(decided),
                auc=analysis.auc_estimate(
                    [row.task_key for row in ranked], scores, labels, resamples=resamples, seed=seed
                ),
                at_k=at_k,
                rule_k=rule_k if test else None,
                rule_precision=rule_precision,
                ranking_precision=ranking_precision,
                test=test,
            )
        )
    adjusted = _holm([test.p_value if test else None for test in tests])
    return tuple(ModelRanking(**values, holm_p_value=p) for values, p in zip(rankings, adjusted, strict=True))


def _holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm over the defined p-values, None kept in place."""
    defined = [p for p in p_values if p is not None]
    adjusted = iter(analysis.holm(defined) if defined else [])
    return [next(adjusted) if p is not None else None for p in p_values]


def _without_company(rows, models, forecaster_companies, resamples, seed):
    decided = [row for row in rows if row.selected is not None]
    unknown = [model for model in models if model not in forecaster_companies]
    if not decided:
        return None, "No selection has been made yet."
    if unknown:
        return None, f"The company of {', '.join(unknown)} is not known (import the forecasters' companies)."
    if any(row.first_stage is None for row in decided):
        return None, "The first-stage answers are not known for every hypothesis."
    result = analysis.selection_without_company(
        [
            {
                "task": row.task_key,
                "generator_company": row.generator_company,
                "first_stage": row.first_stage,
                "forecasts": row.forecasts,
                "match": row.primary,
            }
            for row in decided
        ],
        dict(forecaster_companies),
        resamples=resamples,
        seed=seed,
    )
    return result, ""


def _judge_left_out(rows, judge_companies, resamples, seed):
    applicable = [row for row in rows if row.selected is not None and row.outcome is not None]
    if not applicable or not judge_companies:
        return None
    return analysis.leave_one_judge_out(
        [
            {
                "task": row.task_key,
                "selected": row.selected,
                "generator_company": row.generator_company,
                "scores": row.scores,
            }
            for row in applicable
        ],
        dict(judge_companies),
        resamples=resamples,
        seed=seed,
    )


def _rounds(inputs: StudyInputs) -> tuple[tuple[str, ...], list[dict]]:
    names = tuple(inputs.forecast_rounds)[:2]
    return (names, [inputs.forecast_rounds[name] for name in names]) if len(names) == 2 else ((), [])


def _rerun_selection(rows, models, rounds, resamples, seed) -> RerunSelection | None:
    if not rounds or not models:
        return None
    compared, first_rows, repeat_rows = 0, [], []
    both = first_count = repeat_count = 0
    for row in rows:
        answers = [[answers.get((row.pk, m)) for m in models] for answers in rounds]
        if any(a is None for round_answers in answers for a in round_answers):
            continue
        compared += 1
        first, repeat = all(answers[0]), all(answers[1])
        first_count, repeat_count, both = first_count + first, repeat_count + repeat, both + (first and repeat)
        first_rows.append((row.task_key, first, row.primary))
        repeat_rows.append((row.task_key, repeat, row.primary))
    if not compared:
        return None
    return RerunSelection(
        hypotheses=compared,
        selected_first=first_count,
        selected_repeat=repeat_count,
        selected_both=both,
        first=analysis.selection_summary(first_rows, resamples, seed),
        repeat=analysis.selection_summary(repeat_rows, resamples, seed),
    )


def _generator_study(name, company, rows, inputs, list_lengths, rounds, resamples, seeds) -> GeneratorStudy:
    matrix = _matrix_status(rows)
    models = matrix.models
    own = _own_model(company, models, inputs.forecaster_companies)
    forecast_rules = rules = best = None
    if matrix.complete:
        matrix_rows = [(row.task_key, row.forecasts, row.primary) for row in rows]
        forecast_rules = analysis.forecast_rules(
            matrix_rows,
            own_model=own,
            outside_models=[m for m in models if m != own],
            resamples=resamples,
            seed=seeds["selection"],
        )
        rules = analysis.rule_enumeration(matrix_rows, models)
        decided = [row for row in rows if row.selected is not None]
        if decided:
            best = analysis.best_single_model(
                [(row.task_key, row.forecasts, bool(row.selected), row.primary) for row in decided],
                models,
                seed=seeds["further"],
            )
    without, without_note = _without_company(rows, models, inputs.forecaster_companies, resamples, seeds["further"])
    return GeneratorStudy(
        generator=name,
        company=company,
        matrix=matrix,
        own_model=own,
        forecast_rules=forecast_rules,
        rules=rules,
        best_model=best,
        best_model_holm_p_value=None,
        ranking=_ranking(rows, list_lengths, resamples, seeds["auc"]),
        without_company=without,
        without_company_note=without_note,
        judge_left_out=_judge_left_out(rows, inputs.judge_companies, resamples, seeds["sensitivity"]),
        rerun=_rerun_selection(rows, models, rounds, resamples, seeds["further"]),
    )


def _generation(by_generator, rows, resamples, seed) -> tuple[GenerationRate, ...]:
    groups = list(by_generator.items())
    if len(groups) > 1:
        groups.append((("All generators", ""), rows))
    rates = []
    for (name, _), members in groups:
        judged = [row for row in members if row.primary is not None]
        if not judged:
            continue
        primary = analysis.selection_summary([(r.task_key, True, r.primary) for r in judged], resamples, seed)
        strict = analysis.selection_summary([(r.task_key, True, r.strict) for r in judged], resamples, seed)
        rates.append(
            GenerationRate(
                generator=name,
                tasks=primary.tasks,
                hypotheses=primary.hypotheses,
                primary=primary.base_rate,
                primary_matches=primary.matches,
                strict=strict.base_rate,
                strict_matches=strict.matches,
            )
        )
    return tuple(rates)


def _rate_difference(first_rows, second_rows, resamples: int, seed: int) -> dict | None:
    """Two sets of judged hypotheses on the tasks both have: each one's match rate, the difference with joint task
    resamples, and the within-task permutation test; None without a common task."""
    common = {r.task_key for r in first_rows} & {r.task_key for r in second_rows}
    if not common:
        return None
    a = [(r.task_key, True, r.primary) for r in first_rows if r.task_key in common]
    b = [(r.task_key, True, r.primary) for r in second_rows if r.task_key in common]
    tasks = [task for task, _, _ in a] + [task for task, _, _ in b]
    columns = [(1, int(m), 0, 0) for _, _, m in a] + [(0, 0, 1, int(m)) for _, _, m in b]
    order, sums = task_sums(tasks, columns)
    totals = sums.sum(axis=0)
    resampled = None
    if resamples:
        drawn = resample_counts(len(sums), resamples, seed) @ sums
        resampled = ratio(drawn[:, 1], drawn[:, 0]) - ratio(drawn[:, 3], drawn[:, 2])
    first_rate, second_rate = totals[1] / totals[0], totals[3] / totals[2]
    first_shares, second_shares = sums[:, 1] / sums[:, 0], sums[:, 3] / sums[:, 2]
    return dict(
        tasks=len(common),
        first_rate=float(first_rate),
        second_rate=float(second_rate),
        first_better=int(np.sum(first_shares > second_shares)),
        first_worse=int(np.sum(first_shares < second_shares)),
        same=int(np.sum(first_shares == second_shares)),
        difference=estimate(first_rate - second_rate, resampled),
        test=analysis.permutation_test_within_tasks(a, b, seed=seed),
    )


def _comparisons(by_generator, resamples, seed) -> tuple[GeneratorComparison, ...]:
    judged = {name: [row for row in members if row.primary is not None] for (name, _), members in by_generator.items()}
    found = []
    for first, second in itertools.combinations(sorted(judged), 2):
        compared = _rate_difference(judged[first], judged[second], resamples, seed)
        if compared is None:
            continue
        found.append(
            dict(
                first=first,
                second=second,
                **{name: compared[name] for name in ("tasks", "first_rate", "second_rate", "difference", "test")},
            )
        )
    adjusted = _holm([item["test"].p_value for item in found])
    return tuple(GeneratorComparison(**item, holm_p_value=p) for item, p in zip(found, adjusted, strict=True))


def _method_rates(groups: Mapping, sets: str, resamples: int, seed: int) -> list[MethodRate]:
    rates = []
    for (generator, round_, method), members in groups.items():
        if members:
            summary = analysis.selection_summary([(r.task_key, True, r.primary) for r in members], resamples, seed)
            rates.append(
                MethodRate(
                    generator,
                    round_,
                    method,
                    sets,
                    summary.tasks,
                    summary.hypotheses,
                    summary.matches,
                    summary.base_rate,
                )
            )
    return rates


def _generation_comparisons(groups: Mapping, sets: str, resamples: int, seed: int):
    """Each generator's methods compared within each round (Holm within the generator and round, and over the
    round's generators), and each method's later rounds against its first (Holm over the generator's
    comparisons)."""
    methods_of: defaultdict = defaultdict(list)  # (generator, round) → methods
    rounds_of: defaultdict = defaultdict(list)  # (generator, method) → rounds
    for generator, round_, method in groups:
        methods_of[(generator, round_)].append(method)
        rounds_of[(generator, method)].append(round_)
    by_method = []
    for (generator, round_), methods in methods_of.items():
        for first, second in itertools.combinations(methods, 2):
            found = _rate_difference(
                groups[(generator, round_, first)], groups[(generator, round_, second)], resamples, seed
            )
            if found is not None:
                by_method.append(
                    dict(
                        generator=generator,
                        sets=sets,
                        first_method=first,
                        first_round=round_,
                        second_method=second,
                        second_round=round_,
                        **found,
                    )
                )
    by_round = []
    for (generator, method), rounds in rounds_of.items():
        for later in rounds[1:]:
            found = _rate_difference(
                groups[(generator, later, method)], groups[(generator, rounds[0], method)], resamples, seed
            )
            if found is not None:
                by_round.append(
                    dict(
                        generator=generator,
                        sets=sets,
                        first_method=method,
                        first_round=later,
                        second_method=method,
                        second_round=rounds[0],
                        **found,
                    )
                )
    return (
        _with_holm(by_method, lambda c: (c["generator"], c["first_round"]), lambda c: c["first_round"]),
        _with_holm(by_round, lambda c: c["generator"], None),
    )


def _with_holm(items: list[dict], family_of, wider_family_of) -> list[GenerationComparison]:
    """Holm over each family of comparisons, and over each wider family when one is named."""

    def adjusted(key_of) -> tuple[list, list]:
        families: defaultdict = defaultdict(list)
        for index, item in enumerate(items):
            families[key_of(item)].append(index)
        p_values: list[float | None] = [None] * len(items)
        sizes = [0] * len(items)
        for members in families.values():
            for index, p in zip(members, analysis.holm([items[i]["test"].p_value for i in members]), strict=True):
                p_values[index], sizes[index] = p, len(members)
        return p_values, sizes

    holm, sizes = adjusted(family_of)
    wider, wider_sizes = adjusted(wider_family_of) if wider_family_of else ([None] * len(items), [0] * len(items))
    return [
        GenerationComparison(**item, holm_p_value=p, holm_family=n, round_holm_p_value=q, round_holm_family=m)
        for item, p, n, q, m in zip(items, holm, sizes, wider, wider_sizes, strict=True)
    ]


def _method_order(method: str) -> tuple[int, str]:
    return (METHODS.index(method) if method in METHODS else len(METHODS), method)


def _generation_methods(rows, excluded: Sequence[ExcludedSetInput], resamples, seed) -> GenerationMethods | None:
    """Generation methods and rounds of each generator compared (docs/analysis.md#generation-methods); None unless
    some generator has hypotheses of two methods or two rounds."""
    judged = [row for row in rows if row.primary is not None]
    groups: defaultdict = defaultdict(list)  # (generator, round, method) → judged rows
    for row in judged:
        groups[(row.generator, row.generation_round, row.method)].append(row)
    generations: defaultdict = defaultdict(set)
    for generator, round_, method in groups:
        generations[generator].add((round_, method))
    if not any(len(found) > 1 for found in generations.values()):
        return None
    ordered = dict(sorted(groups.items(), key=lambda item: (item[0][0], item[0][1], _method_order(item[0][2]))))
    left_out = {(e.task_key, e.generator, e.method, e.generation_round) for e in excluded}
    kept = {
        key: [r for r in members if (r.task_key, r.generator, r.method, r.generation_round) not in left_out]
        for key, members in ordered.items()
    }
    variants = [(ALL_SETS, ordered)] + ([(WITHOUT_EXCLUDED, kept)] if left_out else [])
    rates, by_method, by_round = [], [], []
    for sets, chosen in variants:
        rates += _method_rates(chosen, sets, resamples, seed)
        methods, rounds = _generation_comparisons(chosen, sets, resamples, seed)
        by_method += methods
        by_round += rounds
    shares: defaultdict = defaultdict(lambda: [0, 0])
    for (generator, round_, method), members in ordered.items():
        for row in members:
            counts = shares[(generator, round_, method, row.task_key)]
            counts[0] += 1
            counts[1] += row.primary
    held: defaultdict[tuple, int] = defaultdict(int)
    for row in rows:
        held[(row.task_key, row.generator, row.method, row.generation_round)] += 1
    return GenerationMethods(
        rates=tuple(rates),
        task_shares=tuple(
            TaskMethodShare(generator, round_, method, task, n, m)
            for (generator, round_, method, task), (n, m) in shares.items()
        ),
        method_comparisons=tuple(by_method),
        round_comparisons=tuple(by_round),
        excluded=tuple(
            ExcludedSet(
                e.task_key,
                e.generator,
                e.method,
                e.generation_round,
                e.reason,
                e.note,
                held[(e.task_key, e.generator, e.method, e.generation_round)],
            )
            for e in excluded
        ),
    )


def _balanced_accuracy(rows, resamples, seed) -> tuple[BalancedRule, ...]:
    statements = [row for row in rows if row.confirmed is not None]
    models = sorted({model for row in statements for model in row.forecasts})
    results = []

    def add(name, decide):
        chosen = [(row, decide(row)) for row in statements]
        chosen = [(row, decision) for row, decision in chosen if decision is not None]
        if chosen:
            result = analysis.balanced_accuracy(
                [row.confirmed for row, _ in chosen],
                [decision for _, decision in chosen],
                [row.task_key for row, _ in chosen],
                resamples=resamples,
                seed=seed,
            )
            results.append(BalancedRule(name, result))

    def given(row):
        return [bool(row.forecasts[m]) for m in models if row.forecasts.get(m) is not None]

    for model in models:
        add(model, lambda row, model=model: None if row.forecasts.get(model) is None else bool(row.forecasts[model]))
    if len(models) > 1:
        add("majority", lambda row: (2 * sum(given(row)) > len(given(row))) if given(row) else None)
        add("unanimity", lambda row: all(given(row)) if given(row) else None)
    return tuple(results)


def _pairs(rows) -> list[tuple]:
    """Each article's confirmed and reversed statement, for the tasks that have exactly one of each."""
    by_task: defaultdict = defaultdict(list)
    for row in rows:
        if row.confirmed is not None:
            by_task[row.task_key].append(row)
    pairs = []
    for members in by_task.values():
        confirmed = [row for row in members if row.confirmed]
        reversed_ = [row for row in members if not row.confirmed]
        if len(confirmed) == 1 and len(reversed_) == 1:
            pairs.append((confirmed[0], reversed_[0]))
    return pairs


def _statement_deciders(statements) -> list[tuple[str, Callable]]:
    """Each forecasting model, the majority and unanimity of the models that answered a statement, and the random
    control: (name, statement row → True, False or None)."""
    models = sorted({model for row in statements for model in row.forecasts})

    def given(row):
        return [bool(row.forecasts[m]) for m in models if row.forecasts.get(m) is not None]

    deciders: list[tuple[str, Callable]] = [
        (model, lambda row, model=model: row.forecasts.get(model)) for model in models
    ]
    if len(models) > 1:
        deciders += [
            ("majority", lambda row: (2 * sum(given(row)) > len(given(row))) if given(row) else None),
            ("unanimity", lambda row: all(given(row)) if given(row) else None),
        ]
    deciders.append(("random control", lambda row: row.random_answer))
    return deciders


def _pair_decisions(rows) -> tuple[PairDecisions, ...]:
    pairs = _pairs(rows)
    if not pairs:
        return ()
    return _decisions_on(pairs, _statement_deciders([row for pair in pairs for row in pair]))


def _decisions_on(pairs, deciders) -> tuple[PairDecisions, ...]:
    results = []
    for name, decide in deciders:
        counts = {"right": 0, "both": 0, "neither": 0, "wrong": 0, "none": 0}
        for confirmed, reversed_ in pairs:
            first, second = decide(confirmed), decide(reversed_)
            if first is None or second is None:
                counts["none"] += 1
            else:
                outcome = {(True, False): "right", (True, True): "both", (False, False): "neither"}
                counts[outcome.get((bool(first), bool(second)), "wrong")] += 1
        if counts["none"] < len(pairs):
            results.append(
                PairDecisions(
                    name,
                    len(pairs),
                    counts["right"],
                    counts["both"],
                    counts["neither"],
                    counts["wrong"],
                    counts["none"],
                )
            )
    return tuple(results)


# The favourable-direction rule accepts a statement labelled favourable and rejects one labelled unfavourable.
DIRECTION_RULE = "favourable-direction rule"
_RULE_DECISION = {"favourable": True, "unfavourable": False}


def _direction_rule(rows, resamples: int, seed: int) -> DirectionRule | None:
    statements = [row for row in rows if row.confirmed is not None]
    if not any(row.direction for row in statements):
        return None
    counts = {
        (result, label): sum(bool(row.confirmed) == result and row.direction == label for row in statements)
        for result in (True, False)
        for label in ("favourable", "unfavourable", "")
    }
    labels = DirectionLabels(
        statements=len(statements),
        labelled=sum(bool(row.direction) for row in statements),
        confirmed_favourable=counts[(True, "favourable")],
        confirmed_unfavourable=counts[(True, "unfavourable")],
        confirmed_unlabelled=counts[(True, "")],
        reversed_favourable=counts[(False, "favourable")],
        reversed_unfavourable=counts[(False, "unfavourable")],
        reversed_unlabelled=counts[(False, "")],
    )

    def rule(row):
        return _RULE_DECISION.get(row.direction)

    def confirmed(row):
        return bool(row.confirmed)

    def accuracy(members, decide, truth):
        answered = [(row, decide(row)) for row in members]
        answered = [(row, bool(answer)) for row, answer in answered if answer is not None]
        if not answered:
            return None
        return analysis.balanced_accuracy(
            [truth(row) for row, _ in answered],
            [answer for _, answer in answered],
            [row.task_key for row, _ in answered],
            resamples=resamples,
            seed=seed,
        )

    labelled = [row for row in statements if row.direction]
    unlabelled = [row for row in statements if not row.direction]
    deciders = [(DIRECTION_RULE, rule), *_statement_deciders(statements)]
    results = []
    for name, decide in deciders:
        result = DirectionAccuracy(
            rule=name,
            labelled=accuracy(labelled, decide, confirmed),
            agreement_with_rule=None if name == DIRECTION_RULE else accuracy(labelled, decide, rule),
            unlabelled=accuracy(unlabelled, decide, confirmed),  # the rule answers none of them
        )
        if result.labelled or result.unlabelled:
            results.append(result)
    pairs = _pairs(rows)
    both = [(confirmed, reversed_) for confirmed, reversed_ in pairs if confirmed.direction and reversed_.direction]
    return DirectionRule(
        labels=labels,
        accuracy=tuple(results),
        pairs=tuple(DirectionPair(c.task_key, c.key, c.direction, r.key, r.direction) for c, r in pairs),
        labelled_pairs=len(both),
        labelled_pair_decisions=_decisions_on(both, deciders) if both else (),
    )


# The forecast instructions in the order the comparison lists them (docs/analysis.md#instruction-comparison): the
# detailed instruction, the short question (five hypotheses a request) and the single-hypothesis question.
INSTRUCTIONS = ("detailed", "short", "single")


def _instruction_comparison(rows, resamples: int, seed: int) -> InstructionComparison | None:
    judged = [row for row in rows if row.primary is not None]
    present = {name for row in judged for name, answers in row.instruction_forecasts.items() if answers}
    instructions = tuple(name for name in INSTRUCTIONS if name in present)
    if len(instructions) < 2:
        return None

    def answered(instruction, model):
        return {
            row.pk: (row, bool(answer))
            for row in judged
            if (answer := row.instruction_forecasts.get(instruction, {}).get(model)) is not None
        }

    def measures(members):
        return analysis.forecast_measures(
            [row.task_key for row, _ in members],
            [answer for _, answer in members],
            [bool(row.primary) for row, _ in members],
            resamples=resamples,
            seed=seed,
        )

    models = {
        name: sorted({model for row in judged for model in row.instruction_forecasts.get(name, {})})
        for name in instructions
    }
    forecasters = []
    for instruction in instructions:
        for model in models[instruction]:
            if members := list(answered(instruction, model).values()):
                forecasters.append(InstructionMeasures(instruction, model, measures(members)))
    pairs = []
    for first, second in itertools.combinations(instructions, 2):
        for model in sorted(set(models[first]) & set(models[second])):
            a, b = answered(first, model), answered(second, model)
            common = [pk for pk in a if pk in b]  # in row order, so both sides draw the same task resamples
            if common:
                pairs.append(
                    InstructionPair(
                        first,
                        second,
                        model,
                        len(common),
                        measures([a[pk] for pk in common]),
                        measures([b[pk] for pk in common]),
                    )
                )
    return InstructionComparison(instructions, tuple(pairs), tuple(forecasters))


def _forecast_counts(rows) -> tuple[tuple[ForecastCount, ...], tuple[DesignForecasts, ...]]:
    counts = []
    for name, answers_of in (("first", lambda row: row.forecasts), ("repeat", lambda row: row.repeat_forecasts)):
        models = sorted({model for row in rows for model in answers_of(row)})
        for model in models:
            asked = [answers_of(row)[model] for row in rows if model in answers_of(row)]
            counts.append(ForecastCount(name, model, len(asked), sum(answer is not None for answer in asked)))
    models = {model for row in rows for model in row.forecasts}
    if not rows or not models:
        return tuple(counts), ()
    hypotheses, kept = len(rows), sum(row.first_stage is True for row in rows)
    second = len(models) - 1
    designs = (
        DesignForecasts("pooled", 1, 1, hypotheses, hypotheses),
        DesignForecasts("pooled", 2, second, kept, kept * second),
        DesignForecasts("seed-001", 1, 1, hypotheses, hypotheses),
        DesignForecasts("seed-001", 2, second, hypotheses, hypotheses * second),
    )
    return tuple(counts), designs


def _task_selection(log: SelectionLogInputs | None, task_keys: set[str]) -> TaskSelection | None:
    if log is None:
        return None
    candidates = [r for r in log.records if r.status == "candidate"]
    check = analysis.task_selection_check(
        salt=log.salt,
        found=log.found,
        exclusions=[(r.pmid, r.reason) for r in log.records if r.status == "excluded"],
        candidates=[(r.position or 0, r.pmid) for r in candidates],
        final=[r.pmid for r in candidates if r.final],
    )
    order = {pmid: i for i, pmid in enumerate(analysis.candidate_order(log.salt, [r.pmid for r in candidates]), 1)}
    rows = tuple(
        CandidateRow(
            stored_position=r.position or 0,
            pmid=r.pmid,
            sha256=analysis.candidate_key(log.salt, r.pmid),
            reproduced_position=order[r.pmid],
            final=r.final,
            task_key=r.task_key,
            task_in_set=bool(r.task_key) and r.task_key in task_keys,
        )
        for r in sorted(candidates, key=lambda r: (r.position or 0, r.pmid))
    )
    return TaskSelection(
        query=log.query,
        salt=log.salt,
        searched_on=log.searched_on,
        check=check,
        candidates=rows,
        final_tasks_in_set=sum(row.final and row.task_in_set for row in rows),
    )


def _rerun_models(rounds) -> tuple[RerunModel, ...]:
    if not rounds:
        return ()
    models = sorted({model for answers in rounds for _, model in answers})
    return tuple(
        RerunModel(
            model,
            analysis.rerun_agreement(
                {pk: answer for (pk, m), answer in rounds[0].items() if m == model},
                {pk: answer for (pk, m), answer in rounds[1].items() if m == model},
            ),
        )
        for model in models
    )


def _key_elements(rows, tasks: Mapping[str, TaskInputs], resamples, seed) -> KeyElementsStudy | None:
    with_elements = [row for row in rows if tasks.get(row.task_key) and tasks[row.task_key].key_elements]
    if not with_elements:
        return None

    def of(members):
        return analysis.key_element_analysis(
            [(row.task_key, tasks[row.task_key].key_elements, row.text, row.primary) for row in members],
            resamples=resamples,
            seed=seed,
        )

    return KeyElementsStudy(all=of(with_elements), selected=of([row for row in with_elements if row.selected]))


def _deciding_judges(judge_companies: Mapping[str, str], generator_company: str) -> tuple[str, ...]:
    """The judges of other companies than the generator's: those whose scores decide (none when the rule does not
    apply)."""
    try:
        deciding, _ = other_company_scores(dict.fromkeys(judge_companies), judge_companies, generator_company)
    except ValueError:
        return ()
    return tuple(judge for judge, _ in deciding)


def _quality_means(row, quality, judges: tuple[str, ...]) -> dict | None:
    """The mean of the deciding judges' scores per dimension; None unless each of them scored."""
    given = quality.get(row.pk)
    if not given or not judges or any(judge not in given for judge in judges):
        return None
    return {d: float(np.mean([given[judge][d] for judge in judges])) for d in analysis.DIMENSIONS}


def _originality(rows, inputs: StudyInputs, resamples: int, seed: int) -> Originality | None:
    decided = [row for row in rows if row.selected is not None]
    if not any(row.selected for row in decided):
        return None
    groups: dict = defaultdict(lambda: ([], []))
    for row in decided:
        groups[(row.generator, row.task_key)][0 if row.selected else 1].append(row.key)
    by_key = {(row.generator, row.task_key, row.key): row for row in decided}
    deciding = {
        company: _deciding_judges(inputs.judge_companies, company) for company in {r.generator_company for r in decided}
    }
    pairs, logit_rows = [], []
    for pair in analysis.matched_pairs(dict(groups)):
        chosen = by_key[(pair.generator, pair.task, pair.selected)]
        other = by_key.get((pair.generator, pair.task, pair.excluded)) if pair.excluded else None
        judges = deciding[chosen.generator_company]
        chosen_scores = _quality_means(chosen, inputs.quality_scores, judges)
        other_scores = _quality_means(other, inputs.quality_scores, judges) if other else None
        pairs.append(QualityPair(pair.generator, pair.task, pair.selected, pair.excluded, chosen_scores, other_scores))
        for member, scores in ((chosen, chosen_scores), (other, other_scores)):
            if member is not None and scores is not None and member.primary is not None:
                cluster = f"{member.generator}\u241f{member.task_key}"
                logit_rows.append(
                    {
                        "match": member.primary,
                        "selected": bool(member.selected),
                        "clarity": scores["clarity"],
                        "cluster": cluster,
                    }
                )
    if not inputs.quality_scores:
        return Originality(tuple(pairs), None, None, "No originality, feasibility and clarity scores yet.")
    comparison = analysis.originality_comparison(
        [(p.task, p.selected_scores, p.excluded_scores) for p in pairs], resamples=resamples, seed=seed
    )
    logit, note = None, ""
    if len({row["match"] for row in logit_rows}) < 2 or len({row["selected"] for row in logit_rows}) < 2:
        note = "The regression needs matching and non-matching, selected and excluded hypotheses with scores."
    else:
        mean = float(np.mean([row["clarity"] for row in logit_rows]))
        for row in logit_rows:
            row["clarity"] -= mean
        try:
            logit = analysis.logistic_clustered(logit_rows, "match ~ selected + clarity", "cluster")
        except (ValueError, np.linalg.LinAlgError, ArithmeticError) as exc:
            note = f"The regression cannot be fitted on these data ({exc})."
    return Originality(tuple(pairs), comparison, logit, note)


def _hints(rows, tasks: Mapping[str, TaskInputs], resamples, seed) -> Hints | None:
    scored = {key: task.hint_score for key, task in tasks.items() if task.hint_score is not None}
    if not scored:
        return None
    rates: defaultdict = defaultdict(lambda: defaultdict(lambda: [0, 0]))  # task → generator → [judged, matches]
    for row in rows:
        if row.primary is not None and row.task_key in scored:
            counts = rates[row.task_key][row.generator]
            counts[0] += 1
            counts[1] += row.primary
    items = tuple(
        HintTask(
            task=key,
            hint_score=scored[key],
            match_rate=float(np.mean([m / n for n, m in rates[key].values()])),
            generators=len(rates[key]),
        )
        for key in scored
        if rates.get(key)
    )
    correlation = analysis.hint_correlation(
        [(item.task, item.hint_score, item.match_rate) for item in items], resamples=resamples, seed=seed
    )
    return Hints(items, correlation)


def compute_study(
    rows, inputs: StudyInputs, *, seeds: Mapping[str, int], resamples: int, generation_rows=None
) -> StudyStatistics:
    """The appendices' analyses of ``rows``, the set's main generation (docs/analysis.md#generation-methods);
    ``generation_rows``, every hypothesis of every method and round, feed the comparison of generation methods."""
    seeds = {**analysis.SEEDS, **seeds}
    by_generator: defaultdict = defaultdict(list)
    for row in rows:
        by_generator[(row.generator, row.generator_company)].append(row)
    list_lengths = tuple(
        sorted(
            {
                n
                for members in by_generator.values()
                if (n := sum(bool(r.selected) for r in members if r.primary is not None))
            }
        )
    )
    round_names, rounds = _rounds(inputs)
    studies = [
        _generator_study(name, company, members, inputs, list_lengths, rounds, resamples, seeds)
        for (name, company), members in sorted(by_generator.items())
    ]
    adjusted = _holm([s.best_model.test.p_value if s.best_model and s.best_model.test else None for s in studies])
    studies = [replace(s, best_model_holm_p_value=p) for s, p in zip(studies, adjusted, strict=True)]
    tasks = {task.key: task for task in inputs.tasks}
    forecast_counts, design_forecasts = _forecast_counts(rows)
    return StudyStatistics(
        seeds=seeds,
        resamples=resamples,
        list_lengths=list_lengths,
        generators=tuple(studies),
        generation=_generation(by_generator, rows, resamples, seeds["generation"]),
        generator_comparisons=_comparisons(by_generator, resamples, seeds["generation"]),
        balanced_accuracy=_balanced_accuracy(rows, resamples, seeds["selection"]),
        task_selection=_task_selection(inputs.selection_log, {row.task_key for row in rows} | set(tasks)),
        rerun_rounds=round_names,
        rerun_models=_rerun_models(rounds),
        key_elements=_key_elements(rows, tasks, resamples, seeds["auc"]),
        originality=_originality(rows, inputs, resamples, seeds["further"]),
        hints=_hints(rows, tasks, resamples, seeds["sensitivity"]),
        pair_decisions=_pair_decisions(rows),
        instruction_comparison=_instruction_comparison(rows, resamples, seeds["selection"]),
        direction_rule=_direction_rule(rows, resamples, seeds["further"]),
        forecast_counts=forecast_counts,
        design_forecasts=design_forecasts,
        generation_methods=_generation_methods(
            rows if generation_rows is None else generation_rows, inputs.excluded_sets, resamples, seeds["generation"]
        ),
    )

"""Selection rules over the full forecast matrix (every forecasting model's answer about every hypothesis):
majority and unanimity (docs/analysis.md#majority-and-unanimity), the enumeration of voting rules and two-stage
schemes (docs/analysis.md#rule-enumeration) and the group against its best single model
(docs/analysis.md#best-single-model).

A row is ``(task, {model: True/False/None}, match)``; ``match`` is None for a hypothesis that is not judged (left out
of every count, as in ``selection_summary``).
"""

import itertools
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from reviewapp.analysis._resampling import DEFAULT_RESAMPLES, DEFAULT_SEED, as_float, ratio
from reviewapp.analysis.inference import PermutationTest, permutation_test_within_tasks
from reviewapp.analysis.selection import SelectionSummary, selection_summary

Row = tuple[Hashable, Mapping[str, bool | None], bool | None]


def voting_rule_count(models: int) -> int:
    """Every combination of k of the models with every threshold 1…k of yes answers: Σ_k C(n, k)·k = n·2^(n−1)
    (80 for five models)."""
    return models * 2 ** (models - 1) if models else 0


def two_stage_scheme_count(models: int, first_stage_models: int, min_group_size: int = 1) -> int:
    """First-stage models × second-stage groups of at least ``min_group_size`` of the models:
    first_stage_models · Σ_{k ≥ min} C(n, k) (32 for two first-stage models and groups of three or more of five)."""
    return first_stage_models * sum(math.comb(models, k) for k in range(max(1, min_group_size), models + 1))


@dataclass(frozen=True)
class RuleResult:
    """One rule's list on the judged hypotheses of a complete matrix."""

    kind: str  # "vote": at least `threshold` yes among `models`; "two_stage": `first_stage` yes, then one yes in group
    models: tuple[str, ...]  # the voting combination, or the second-stage group
    threshold: int | None
    first_stage: str | None
    selected: int  # the list length
    selected_matches: int
    precision: float | None
    enrichment: float | None
    repeats_model: str | None  # a two-stage scheme whose first-stage model is in its group is that model's own list


@dataclass(frozen=True)
class RuleEnumeration:
    models: tuple[str, ...]
    hypotheses: int  # judged hypotheses with every model's answer
    matches: int
    base_rate: float | None
    technical_gaps: int  # hypotheses lacking a model's answer: left out, never negative
    not_judged: int
    voting_rules: tuple[RuleResult, ...]
    two_stage_schemes: tuple[RuleResult, ...]
    repeating_schemes: int  # two-stage schemes that repeat the first-stage model's own list
    first_stage_models: tuple[str, ...]
    min_group_size: int


def _matrix(rows: Iterable[Row], models: Sequence[str]):
    """(tasks, votes (rows × models), matches) of the judged rows with every answer, then gaps and not judged."""
    tasks, votes, matches, gaps, not_judged = [], [], [], 0, 0
    for task, forecasts, match in rows:
        answers = [forecasts.get(model) for model in models]
        if any(answer is None for answer in answers):
            gaps += 1
            continue
        if match is None:
            not_judged += 1
            continue
        tasks.append(task)
        votes.append([bool(answer) for answer in answers])
        matches.append(bool(match))
    return (
        tasks,
        np.asarray(votes, dtype=bool).reshape(len(votes), len(models)),
        np.asarray(matches, dtype=bool),
        gaps,
        not_judged,
    )


def _result(kind, models, threshold, first_stage, chosen, matches, base_rate, repeats=None) -> RuleResult:
    selected, hits = int(chosen.sum()), int((chosen & matches).sum())
    precision = ratio(hits, selected)
    return RuleResult(
        kind=kind,
        models=tuple(models),
        threshold=threshold,
        first_stage=first_stage,
        selected=selected,
        selected_matches=hits,
        precision=as_float(precision),
        enrichment=as_float(ratio(precision, base_rate)),
        repeats_model=repeats,
    )


def rule_enumeration(
    rows: Iterable[Row],
    models: Sequence[str],
    *,
    first_stage_models: Sequence[str] | None = None,
    min_group_size: int = 1,
) -> RuleEnumeration:
    """Every voting rule and every two-stage scheme over the models' answers (docs/analysis.md#rule-enumeration).

    Voting rules: for each combination of k models, each threshold t = 1…k selects the hypotheses with at least t
    yes answers among them (n·2^(n−1) rules; with five models 5 + 20 + 30 + 20 + 5 = 80, unanimity of all included).
    Two-stage schemes: for each first-stage model s (default: every model) and each second-stage group G of at
    least ``min_group_size`` models, a hypothesis passes when s says yes and at least one model of G says yes. When
    s is in G its own yes already passes the second stage, so the scheme repeats s's list: such schemes are flagged
    (``repeats_model``). Each rule reports its list length, matches, precision and enrichment (precision / base rate)
    on the judged hypotheses that have every model's answer.
    """
    models = tuple(models)
    first_stage = tuple(models if first_stage_models is None else first_stage_models)
    unknown = set(first_stage) - set(models)
    if unknown:
        raise ValueError(f"first-stage models {sorted(unknown)} are not among the models")
    _, votes, matches, gaps, not_judged = _matrix(rows, models)
    base_rate = ratio(matches.sum(), matches.size)
    voting = []
    for k in range(1, len(models) + 1):
        for combination in itertools.combinations(range(len(models)), k):
            yes = votes[:, combination].sum(axis=1)
            names = [models[i] for i in combination]
            voting.extend(_result("vote", names, t, None, yes >= t, matches, base_rate) for t in range(1, k + 1))
    schemes = []
    for stage_model in first_stage:
        first = votes[:, models.index(stage_model)]
        for k in range(max(1, min_group_size), len(models) + 1):
            for group in itertools.combinations(range(len(models)), k):
                names = [models[i] for i in group]
                chosen = first & votes[:, group].any(axis=1)
                repeats = stage_model if stage_model in names else None
                schemes.append(_result("two_stage", names, None, stage_model, chosen, matches, base_rate, repeats))
    return RuleEnumeration(
        models=models,
        hypotheses=int(matches.size),
        matches=int(matches.sum()),
        base_rate=as_float(base_rate),
        technical_gaps=gaps,
        not_judged=not_judged,
        voting_rules=tuple(voting),
        two_stage_schemes=tuple(schemes),
        repeating_schemes=sum(scheme.repeats_model is not None for scheme in schemes),
        first_stage_models=first_stage,
        min_group_size=min_group_size,
    )


@dataclass(frozen=True)
class ForecastRule:
    """One rule of the early forecast table (docs/analysis.md#majority-and-unanimity)."""

    rule: str  # "own", "model", "majority" or "unanimity"
    models: tuple[str, ...]  # the forecasters it counts
    summary: SelectionSummary | None  # None when no hypothesis has an answer for it


@dataclass(frozen=True)
class ForecastRules:
    own_model: str | None  # the forecaster of the generator's company, if the set has one
    outside_models: tuple[str, ...]
    rules: tuple[ForecastRule, ...]


def forecast_rules(
    rows: Iterable[Row],
    *,
    own_model: str | None,
    outside_models: Sequence[str],
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> ForecastRules:
    """The generator's own forecast, each outside forecaster, and the majority and unanimity of all of them.

    docs/analysis.md#majority-and-unanimity: the own forecast is the answer of the forecaster of the generator's
    company; majority and unanimity count the own forecast and every outside forecaster that answered about the
    hypothesis (a null answer is not counted). Majority selects a hypothesis when more than half of the counted
    answers are yes (a tie is not a majority); unanimity when every counted answer is yes. A hypothesis without any
    counted answer is left out of that rule. Each rule is a selection with precision, base rate, enrichment and
    sensitivity over the same task resamples.
    """
    rows = list(rows)
    counted = ([own_model] if own_model else []) + list(outside_models)

    def summary(select) -> SelectionSummary | None:
        chosen = []
        for task, forecasts, match in rows:
            decision = select(forecasts)
            if decision is not None:
                chosen.append((task, decision, match))
        return selection_summary(chosen, resamples, seed) if chosen else None

    def single(model):
        return lambda forecasts: None if forecasts.get(model) is None else bool(forecasts[model])

    def answers(forecasts):
        return [bool(forecasts[m]) for m in counted if forecasts.get(m) is not None]

    def majority(forecasts):
        given = answers(forecasts)
        return 2 * sum(given) > len(given) if given else None

    def unanimity(forecasts):
        given = answers(forecasts)
        return all(given) if given else None

    rules = []
    if own_model:
        rules.append(ForecastRule("own", (own_model,), summary(single(own_model))))
    rules.extend(ForecastRule("model", (model,), summary(single(model))) for model in outside_models)
    rules.append(ForecastRule("majority", tuple(counted), summary(majority)))
    rules.append(ForecastRule("unanimity", tuple(counted), summary(unanimity)))
    return ForecastRules(own_model=own_model, outside_models=tuple(outside_models), rules=tuple(rules))


@dataclass(frozen=True)
class ModelList:
    model: str
    selected: int
    selected_matches: int
    precision: float | None


@dataclass(frozen=True)
class BestSingleModel:
    """The group's list against the single model with the highest precision (docs/analysis.md#best-single-model)."""

    models: tuple[ModelList, ...]
    best: str | None
    group_selected: int
    group_matches: int
    group_precision: float | None
    test: PermutationTest | None  # group minus best, within-task permutations; None when undefined


def best_single_model(
    rows: Iterable[tuple[Hashable, Mapping[str, bool | None], bool, bool | None]],
    models: Sequence[str],
    *,
    seed: int = DEFAULT_SEED,
) -> BestSingleModel:
    """Is the group's list more precise than the best single model's "yes" list?

    Rows are ``(task, {model: answer}, selected by the group, match)``. The best model is the one with the highest
    precision among its yes answers (more matches, then its name, break ties). Trimming its list at random to the
    group's length keeps its expected precision, so the two precisions are compared directly, by the two-sided
    within-task permutation test (exact when at most 20 tasks differ, else 19,999 swaps with +1). The group's list
    lies inside its members' yes lists, so the two rules are dependent.
    """
    rows = list(rows)
    lists = []
    for model in models:
        chosen = [(task, forecasts.get(model) is True, match) for task, forecasts, _, match in rows]
        judged = [(selected, match) for _, selected, match in chosen if match is not None]
        selected = sum(s for s, _ in judged)
        hits = sum(s and m for s, m in judged)
        lists.append(ModelList(model, selected, hits, as_float(ratio(hits, selected))))
    group_rows = [(task, bool(selected), match) for task, _, selected, match in rows]
    group_judged = [(s, m) for _, s, m in group_rows if m is not None]
    group_selected = sum(s for s, _ in group_judged)
    group_hits = sum(s and m for s, m in group_judged)
    ranked = sorted(
        (item for item in lists if item.precision is not None),
        key=lambda item: (-item.precision, -item.selected_matches, item.model),
    )
    best = ranked[0].model if ranked else None
    test = None
    if best is not None and group_selected:
        best_rows = [(task, forecasts.get(best) is True, match) for task, forecasts, _, match in rows]
        test = permutation_test_within_tasks(group_rows, best_rows, seed=seed)
    return BestSingleModel(
        models=tuple(lists),
        best=best,
        group_selected=group_selected,
        group_matches=group_hits,
        group_precision=as_float(ratio(group_hits, group_selected)),
        test=test,
    )

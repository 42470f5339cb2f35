"""Selections of hypotheses: precision, enrichment, sensitivity and random controls (docs/protocol.md#statistics)."""

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import hypergeom

from reviewapp.analysis._resampling import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Estimate,
    estimate,
    ratio,
    resample_counts,
    resampled_totals,
    task_sums,
)
from reviewapp.analysis.judges import PRIMARY_THRESHOLD, company_key, judge_score, other_company_scores


@dataclass(frozen=True)
class RandomControl:
    """Matches in a uniformly random list of equal length: exact mean and central 95% range."""

    population: int
    matching: int
    list_length: int
    mean: float
    mean_share: float  # mean / list_length, "47.2 % of the list" in the benchmark
    low: int
    high: int
    coverage: float  # probability of a result inside [low, high]; above 0.95 because counts are discrete


def random_control(population: int, matching: int, list_length: int) -> RandomControl:
    """Number of matching hypotheses in a list of ``list_length`` drawn uniformly without replacement.

    docs/protocol.md#equal-length-random-list: the count follows the hypergeometric distribution
    ``scipy.stats.hypergeom(M=population, n=matching, N=list_length)`` (mind scipy's names: M is the population,
    n the matching count, N the draws). The mean is ``.mean()``; the central 95% range runs from ``.ppf(0.025)``
    to ``.ppf(0.975)``. In the benchmark, 19 drawn from 53 of which 25 match gives mean 8.96, range 6–12.
    """
    if not 0 <= matching <= population or not 0 <= list_length <= population:
        raise ValueError("need 0 ≤ matching ≤ population and 0 ≤ list_length ≤ population")
    # The distribution's methods called with its parameters: the same values as the frozen
    # hypergeom(M=…, n=…, N=…), without building a frozen distribution (and its docstring) on every call.
    parameters = (population, matching, list_length)
    low, high = int(hypergeom.ppf(0.025, *parameters)), int(hypergeom.ppf(0.975, *parameters))
    with np.errstate(divide="ignore", invalid="ignore"):  # scipy also computes moments that tiny sets lack
        mean = float(hypergeom.mean(*parameters))
    return RandomControl(
        population=population,
        matching=matching,
        list_length=list_length,
        mean=mean,
        mean_share=mean / list_length if list_length else 0.0,
        low=low,
        high=high,
        coverage=float(hypergeom.cdf(high, *parameters) - hypergeom.cdf(low - 1, *parameters)),
    )


@dataclass(frozen=True)
class TrimmedList:
    """One model's positive list cut at random to the group's length (docs/protocol.md#trimmed-positive-lists)."""

    exact: RandomControl
    simulated_mean: float
    simulated_low: int
    simulated_high: int
    repeats: int
    seed: int
    group_matches: int | None
    group_above_range: bool | None  # the group found more matches than the top of the exact range


def trim_to_group_length(
    positive_matches: Sequence[bool],
    group_length: int,
    *,
    group_matches: int | None = None,
    repeats: int = 100_000,
    seed: int = DEFAULT_SEED,
) -> TrimmedList:
    """Matches left when a single model's positive forecasts are cut at random to the group's list length.

    docs/protocol.md#trimmed-positive-lists: inside the model's "yes" group every hypothesis has the same chance, none
    is drawn twice. ``positive_matches`` holds, for each hypothesis the model said "yes" to, whether it matches the
    reference. The exact figures are ``random_control(len(positive_matches), sum(positive_matches), group_length)``. As
    a check of the exact figures ``repeats`` random counts are drawn from that distribution with the given seed
    (numpy's ``Generator.hypergeometric``), giving the simulated mean and the empirical 2.5%–97.5% quantiles
    (inverted CDF, comparable with the exact ``ppf`` range). In the benchmark, 19 drawn from Astra's 53 "yes"
    of which 25 match gives mean 8.96 (47.2% of the list), range 6–12, against the group's 14.
    """
    flags = np.asarray([bool(match) for match in positive_matches], dtype=np.int8)
    if not 0 < group_length <= flags.size:
        raise ValueError("group_length must be between 1 and the length of the model's positive list")
    exact = random_control(flags.size, int(flags.sum()), group_length)
    rng = np.random.default_rng(seed)
    cuts = rng.hypergeometric(exact.matching, flags.size - exact.matching, group_length, size=repeats)
    # Empirical quantiles by the inverted CDF: the smallest count whose cumulative share reaches 2.5% (97.5%).
    cumulative = np.cumsum(np.bincount(cuts))
    low, high = np.searchsorted(cumulative, [0.025 * repeats, 0.975 * repeats], side="left")
    return TrimmedList(
        exact=exact,
        simulated_mean=float(cuts.mean()),
        simulated_low=int(low),
        simulated_high=int(high),
        repeats=repeats,
        seed=seed,
        group_matches=group_matches,
        group_above_range=None if group_matches is None else group_matches > exact.high,
    )


@dataclass(frozen=True)
class SelectionSummary:
    """Precision, base rate, enrichment and sensitivity of one selection, with task-resampled intervals."""

    tasks: int
    hypotheses: int  # judged hypotheses: the denominator of the base rate
    matches: int
    selected: int  # judged selected hypotheses: the denominator of precision
    selected_matches: int
    not_judged: int  # left out of every ratio, never counted as negative
    selected_not_judged: int
    precision: Estimate
    base_rate: Estimate
    enrichment: Estimate
    sensitivity: Estimate
    resamples: int
    seed: int


# Columns of the per-task sums: judged, matches, selected (judged), selected matches.
_JUDGED, _MATCHES, _SELECTED, _SELECTED_MATCHES = range(4)


def _selection_ratios(totals: np.ndarray) -> dict[str, np.ndarray]:
    precision = ratio(totals[..., _SELECTED_MATCHES], totals[..., _SELECTED])
    base_rate = ratio(totals[..., _MATCHES], totals[..., _JUDGED])
    return {
        "precision": precision,
        "base_rate": base_rate,
        "enrichment": ratio(precision, base_rate),
        "sensitivity": ratio(totals[..., _SELECTED_MATCHES], totals[..., _MATCHES]),
    }


def _selection_columns(rows: Iterable[tuple[Hashable, bool, bool | None]]):
    tasks, columns, not_judged, selected_not_judged = [], [], 0, 0
    for task, selected, match in rows:
        if match not in (True, False, None) or selected not in (True, False):
            raise ValueError(f"selected must be a bool and match a bool or None, got {selected!r}, {match!r}")
        tasks.append(task)
        if match is None:
            not_judged += 1
            selected_not_judged += bool(selected)
            columns.append((0, 0, 0, 0))
        else:
            columns.append((1, int(match), int(selected), int(selected and match)))
    if not tasks:
        raise ValueError("no rows")
    order, sums = task_sums(tasks, columns)
    return order, sums, not_judged, selected_not_judged


def selection_summary(
    rows: Iterable[tuple[Hashable, bool, bool | None]],
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> SelectionSummary:
    """Summary of a selection, each row being ``(task, selected, match)`` for one hypothesis.

    Precision = selected matches / selected; base rate = matches / all hypotheses; enrichment = precision / base rate;
    sensitivity = selected matches / all matches (docs/protocol.md#precision-enrichment-and-sensitivity). ``match`` is
    None for a hypothesis that was not judged: it is left out of every numerator and denominator and counted in
    ``not_judged``. Intervals (docs/protocol.md#task-bootstrap): ``resamples`` resamples of whole tasks with replacement
    (index matrix documented in ``reviewapp.analysis._resampling``), each statistic recomputed as a ratio of sums,
    central 95% percentile interval. A resample in which a statistic has a zero denominator (no selected hypothesis, no
    match) is counted in that statistic's ``undefined_resamples`` and left out of its interval. If the whole set holds
    no match, precision's interval is the degenerate 0–0. ``resamples=0`` gives point values only.
    """
    order, sums, not_judged, selected_not_judged = _selection_columns(rows)
    totals = sums.sum(axis=0)
    resampled = _selection_ratios(resampled_totals(sums, resamples, seed)) if resamples else {}
    point = _selection_ratios(totals)
    return SelectionSummary(
        tasks=len(order),
        hypotheses=int(totals[_JUDGED]),
        matches=int(totals[_MATCHES]),
        selected=int(totals[_SELECTED]),
        selected_matches=int(totals[_SELECTED_MATCHES]),
        not_judged=not_judged,
        selected_not_judged=selected_not_judged,
        **{name: estimate(point[name], resampled.get(name)) for name in point},
        resamples=resamples,
        seed=seed,
    )


@dataclass(frozen=True)
class SelectionWithoutCompany:
    """The two-stage selection with the full group and without the generator company's predictor."""

    full: SelectionSummary
    without: SelectionSummary
    precision_change: Estimate  # without minus full, on the same task resamples
    sensitivity_change: Estimate
    excluded_predictors: tuple[str, ...]  # predictors dropped for at least one hypothesis
    added: int  # hypotheses selected only without the company's predictor
    technical_gaps: int  # hypotheses left out because a group member gave no forecast


def selection_without_company(
    rows: Iterable[Mapping],
    predictor_company: Mapping[str, str],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> SelectionWithoutCompany:
    """Re-run the two-stage unanimous selection without the predictor of the generator's company.

    docs/protocol.md#company-predictor-left-out: the forecasting model of the company that built
    the generator is removed from the group; the first stage and the unanimity of the remaining predictors are
    kept, and the result is compared with the full group's. Each row is a dict with ``task``,
    ``generator_company``, ``first_stage`` (bool: the first-stage model said yes), ``forecasts`` ({predictor:
    True/False/None}) and ``match`` (bool, or None when not judged); ``predictor_company`` maps every predictor to
    its company. A hypothesis whose group lacks a forecast is a technical gap (excluded, not negative) and is
    left out of both selections. Both summaries and the changes (without minus full) use the same task resamples,
    so the change intervals are joint.
    """
    full_rows, without_rows, excluded, added, gaps = [], [], set(), 0, 0
    for row in rows:
        forecasts = row["forecasts"]
        if any(vote is None for vote in forecasts.values()):
            gaps += 1
            continue
        unknown = set(forecasts) - set(predictor_company)
        if unknown:
            raise ValueError(f"no company given for predictors {sorted(unknown)}")
        generator = company_key(row["generator_company"])
        kept = {p: vote for p, vote in forecasts.items() if company_key(predictor_company[p]) != generator}
        excluded.update(set(forecasts) - set(kept))
        first_stage = bool(row["first_stage"])
        selected_full = first_stage and all(forecasts.values())
        selected_without = first_stage and all(kept.values())
        added += selected_without and not selected_full
        full_rows.append((row["task"], selected_full, row["match"]))
        without_rows.append((row["task"], selected_without, row["match"]))
    full = selection_summary(full_rows, resamples, seed)
    without = selection_summary(without_rows, resamples, seed)
    changes = {"precision": None, "sensitivity": None}
    if resamples:
        order, full_sums, _, _ = _selection_columns(full_rows)
        _, without_sums, _, _ = _selection_columns(without_rows)
        counts = resample_counts(len(order), resamples, seed)
        full_ratios, without_ratios = _selection_ratios(counts @ full_sums), _selection_ratios(counts @ without_sums)
        changes = {name: without_ratios[name] - full_ratios[name] for name in changes}

    def change(name: str) -> Estimate:
        before, after = getattr(full, name).value, getattr(without, name).value
        point = np.nan if before is None or after is None else after - before
        return estimate(point, changes[name])

    return SelectionWithoutCompany(
        full=full,
        without=without,
        precision_change=change("precision"),
        sensitivity_change=change("sensitivity"),
        excluded_predictors=tuple(sorted(excluded)),
        added=added,
        technical_gaps=gaps,
    )


@dataclass(frozen=True)
class JudgeLeftOut:
    judge: str
    company: str
    summary: SelectionSummary
    changed_outcomes: int  # hypotheses whose outcome differs from the outcome with all judges
    changed_selected: int  # of them, selected hypotheses


@dataclass(frozen=True)
class LeaveOneJudgeOut:
    """The selection's precision recomputed leaving each judge out in turn (docs/protocol.md#judge-left-out)."""

    threshold: int
    all_judges: SelectionSummary
    left_out: tuple[JudgeLeftOut, ...]


def _majority(scores: list[int | None], needed: int, threshold: int) -> bool | None:
    """All ``needed`` deciding judges present: positive when at least two of three (or both of two) vote."""
    if len(scores) != needed or any(score is None for score in scores):
        return None
    return sum(judge_score(score) >= threshold for score in scores) >= 2


def leave_one_judge_out(
    rows: Iterable[Mapping],
    judge_company: Mapping[str, str],
    *,
    threshold: int = PRIMARY_THRESHOLD,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> LeaveOneJudgeOut:
    """Precision, enrichment and sensitivity of a fixed selection when each judge in turn is left out.

    docs/protocol.md#judge-left-out: the selection lists do not change; the outcome is recomputed without one judge.
    Where the judge was one of the hypothesis's three other-company judges, a positive outcome then needs a score
    ≥ ``threshold`` from both remaining judges (a stricter rule, so part of any drop reflects the rule); where the judge
    was the generator company's own (already excluded) the outcome is unchanged. A missing score among the deciding
    judges gives "not judged". In the benchmark, leaving out the xAI judge took Opus's selection from 63.6% (14/22) to
    54.5% (12/22). Each row is a dict with ``task``, ``selected``, ``generator_company`` and ``scores`` ({judge: score
    or None}); every summary uses the same task resamples.
    """
    rows = list(rows)
    split = [other_company_scores(row["scores"], judge_company, row["generator_company"])[0] for row in rows]
    baseline = [_majority([s for _, s in others], 3, threshold) for others in split]
    all_judges = selection_summary(
        [(row["task"], bool(row["selected"]), match) for row, match in zip(rows, baseline, strict=True)],
        resamples,
        seed,
    )
    judges = list(dict.fromkeys(judge for row in rows for judge in row["scores"]))
    left_out = []
    for judge in judges:
        outcomes = [
            _majority([s for j, s in others if j != judge], 2, threshold) if judge in dict(others) else match
            for others, match in zip(split, baseline, strict=True)
        ]
        changed = [before != after for before, after in zip(baseline, outcomes, strict=True)]
        left_out.append(
            JudgeLeftOut(
                judge=judge,
                company=judge_company[judge],
                summary=selection_summary(
                    [(row["task"], bool(row["selected"]), match) for row, match in zip(rows, outcomes, strict=True)],
                    resamples,
                    seed,
                ),
                changed_outcomes=sum(changed),
                changed_selected=sum(c and bool(row["selected"]) for c, row in zip(changed, rows, strict=True)),
            )
        )
    return LeaveOneJudgeOut(threshold=threshold, all_judges=all_judges, left_out=tuple(left_out))

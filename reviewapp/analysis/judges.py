"""Judge scores 0–5: the outcome of one hypothesis and agreement between judges
(docs/protocol.md#judge-scores-and-outcomes)."""

import dataclasses
import itertools
import numbers
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from reviewapp.analysis._resampling import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Estimate,
    estimate,
    resample_counts,
    task_codes,
)
from reviewapp.analysis.agreement import cohen_kappa, fleiss_kappa, spearman, weighted_kappa

SCORES = range(6)
PRIMARY_THRESHOLD = 3
STRICT_THRESHOLD = 4
# Four judges, one from the generator's company, so three decide every outcome
# (docs/protocol.md#judge-scores-and-outcomes).
OUTCOME_JUDGES = 3


def company_key(company: str) -> str:
    """Companies compare case- and space-insensitively, so "Google " and "google" are one company."""
    return str(company).strip().casefold()


def judge_score(value) -> int:
    """A judge's score as an int 0–5 (integral floats from spreadsheets are accepted); anything else is an error."""
    integral = isinstance(value, numbers.Real) and not isinstance(value, bool) and value == int(value)
    if not integral or int(value) not in SCORES:
        raise ValueError(f"a judge score is an integer from 0 to 5, got {value!r}")
    return int(value)


@dataclasses.dataclass(frozen=True)
class JudgeOutcome:
    """Outcome of one hypothesis from its other-company judges' scores.

    ``status`` is "positive", "negative" or "not_judged"; a not-judged hypothesis has primary, strict and
    borderline None, so it can never be counted as negative.
    """

    status: str
    primary: bool | None
    strict: bool | None
    borderline: bool | None
    primary_votes: int | None  # judges giving ≥ 3
    strict_votes: int | None  # judges giving ≥ 4
    scores: tuple[int, ...]  # the usable scores the outcome rests on
    judges: tuple[str, ...] = ()  # their judges, in the listed order (judge_outcome_for only)
    excluded_judges: tuple[str, ...] = ()  # same-company judges left out (judge_outcome_for only)


def judge_outcome(scores: Sequence[int | None]) -> JudgeOutcome:
    """Outcome of one hypothesis from the scores of its three other-company judges (None for a missing score).

    docs/protocol.md#judge-scores-and-outcomes: primary positive when at least two of the three give ≥ 3; strict
    positive when at least two give 4 or 5; borderline when the primary decision was 2–1 (one or two judges
    gave ≥ 3), so that one judge changing their vote would flip it. With fewer than three usable scores the
    hypothesis is "not_judged", never negative. The rule is defined for three judges only: more than three
    scores raise ValueError (see ``judge_outcome_for``).
    """
    if len(scores) > OUTCOME_JUDGES:
        raise ValueError(f"the outcome rule is defined for three other-company judges, got {len(scores)} scores")
    usable = tuple(judge_score(score) for score in scores if score is not None)
    if len(usable) < OUTCOME_JUDGES:
        return JudgeOutcome("not_judged", None, None, None, None, None, usable)
    primary_votes = sum(score >= PRIMARY_THRESHOLD for score in usable)
    strict_votes = sum(score >= STRICT_THRESHOLD for score in usable)
    primary = primary_votes >= 2
    return JudgeOutcome(
        status="positive" if primary else "negative",
        primary=primary,
        strict=strict_votes >= 2,
        borderline=primary_votes in (1, 2),
        primary_votes=primary_votes,
        strict_votes=strict_votes,
        scores=usable,
    )


def other_company_scores(
    scores_by_judge: Mapping[str, int | None], judge_company: Mapping[str, str], generator_company: str
) -> tuple[list[tuple[str, int | None]], list[str]]:
    """Split a hypothesis's judges into (other-company (judge, score) pairs, same-company judges), in listed order."""
    unknown = [judge for judge in scores_by_judge if judge not in judge_company]
    if unknown:
        raise ValueError(f"no company given for judges {unknown}")
    generator = company_key(generator_company)
    others = [(j, s) for j, s in scores_by_judge.items() if company_key(judge_company[j]) != generator]
    same = [j for j in scores_by_judge if company_key(judge_company[j]) == generator]
    if len(others) > OUTCOME_JUDGES:
        raise ValueError(
            f"{len(others)} judges from companies other than the generator's ({generator_company}); the outcome rule "
            "is defined for four judges of whom one shares the generator's company, i.e. three deciding "
            "judges. Remove judges or pass exactly the three to use."
        )
    return others, same


def judge_outcome_for(
    scores_by_judge: Mapping[str, int | None], judge_company: Mapping[str, str], generator_company: str
) -> JudgeOutcome:
    """Outcome of one hypothesis from all its judges' scores, leaving out the judge of the generator's company.

    docs/protocol.md#judge-scores-and-outcomes: the judge from the company that built the generator model is excluded;
    the outcome is ``judge_outcome`` of the remaining other-company judges' scores (None = no usable score). Fewer than
    three usable other-company scores give "not_judged", never negative. The rule is written for four judges, one of
    them from the generator's company, and says nothing about more, so more than three other-company judges raise
    ValueError rather than invent a majority. A judge missing from ``judge_company`` is an error too.
    """
    others, same = other_company_scores(scores_by_judge, judge_company, generator_company)
    outcome = judge_outcome([score for _, score in others])
    used = tuple(judge for judge, score in others if score is not None)
    return dataclasses.replace(outcome, judges=used, excluded_judges=tuple(same))


@dataclasses.dataclass(frozen=True)
class OtherCompanyVotes:
    """How many of the three deciding judges voted for each hypothesis, and their agreement
    (docs/protocol.md#vote-distribution)."""

    threshold: int
    judged: int
    not_judged: int
    hypotheses_by_votes: tuple[int, int, int, int]  # index = number of judges giving ≥ threshold
    positive: int  # two or three votes
    borderline: int  # decided 2–1 either way
    fleiss_kappa: float | None


def other_company_votes(
    rows: Iterable[Mapping], judge_company: Mapping[str, str], threshold: int = PRIMARY_THRESHOLD
) -> OtherCompanyVotes:
    """Distribution of votes among the three other-company judges and their Fleiss' kappa on the binary vote.

    docs/protocol.md#vote-distribution: for each hypothesis only the three judges of other companies, whose votes
    decide its outcome, are counted; a vote is a score ≥ ``threshold`` (3 primary, 4 strict). In the benchmark, of 2,997
    hypotheses: all three 263, two 95, one 188, none 2,451, so 283 decisions were 2–1. Each row is a dict with
    ``generator_company`` and ``scores`` ({judge: score or None}); hypotheses without three usable scores are
    counted as not judged. Fleiss' kappa (statsmodels) treats the two votes as its categories.
    """
    by_votes, judged_scores, not_judged = [0, 0, 0, 0], [], 0
    for row in rows:
        others, _ = other_company_scores(row["scores"], judge_company, row["generator_company"])
        usable = [judge_score(score) for _, score in others if score is not None]
        if len(usable) < OUTCOME_JUDGES:
            not_judged += 1
            continue
        by_votes[sum(score >= threshold for score in usable)] += 1
        judged_scores.append(usable)
    return OtherCompanyVotes(
        threshold=threshold,
        judged=len(judged_scores),
        not_judged=not_judged,
        hypotheses_by_votes=tuple(by_votes),
        positive=by_votes[2] + by_votes[3],
        borderline=by_votes[1] + by_votes[2],
        fleiss_kappa=fleiss_kappa(judged_scores, threshold=threshold) if judged_scores else None,
    )


@dataclasses.dataclass(frozen=True)
class PairAgreement:
    """Agreement of two judges on the hypotheses both scored."""

    judge_a: str
    judge_b: str
    hypotheses: int
    agreement: float | None  # share of equal ≥ 3 votes
    kappa: Estimate  # Cohen's kappa on the ≥ 3 vote
    strict_kappa: Estimate  # Cohen's kappa on the ≥ 4 vote
    weighted_kappa: Estimate  # quadratic weights on 0–5
    spearman: float | None


@dataclasses.dataclass(frozen=True)
class JudgeAgreement:
    """Pairwise agreement of all judges, with matrices in the judges' order (diagonal None) for plotting."""

    judges: tuple[str, ...]
    pairs: tuple[PairAgreement, ...]
    kappa_matrix: tuple[tuple[float | None, ...], ...]
    weighted_kappa_matrix: tuple[tuple[float | None, ...], ...]
    spearman_matrix: tuple[tuple[float | None, ...], ...]
    resamples: int
    seed: int


def _kappa_from_tables(tables: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Cohen's kappa of many K×K confusion tables at once, the formula of sklearn's cohen_kappa_score.

    kappa = 1 − Σ w·O / Σ w·E with E = outer(row totals, column totals) / n; NaN where Σ w·E = 0.
    """
    n = tables.sum(axis=(1, 2))
    observed_disagreement = tables.reshape(len(tables), -1) @ weights.ravel()
    # Σ w·E = (row totals)ᵀ W (column totals) / n.
    expected_disagreement = np.einsum("ri,ij,rj->r", tables.sum(axis=2), weights, tables.sum(axis=1))
    kappa = np.full(n.shape, np.nan)
    np.divide(observed_disagreement * n, expected_disagreement, out=kappa, where=expected_disagreement > 0)
    return 1 - kappa


def _vote_tables(tables: np.ndarray, threshold: int) -> np.ndarray:
    """Collapse 6×6 score tables (shape (..., 6, 6)) to 2×2 tables of the ≥ threshold vote."""
    vote = (np.arange(6) >= threshold).astype(int)
    collapse = np.eye(2)[vote]  # (6, 2): score → vote indicator
    return np.einsum("...ij,ia,jb->...ab", tables, collapse, collapse)


def judge_agreement(
    table: Iterable[Mapping],
    judges: Sequence[str] | None = None,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> JudgeAgreement:
    """Pairwise agreement of judges over a hypothesis × judge score table (docs/protocol.md#judge-agreement).

    Each row of ``table`` is a dict ``{"task": ..., "scores": {judge: score 0–5 or None}}`` for one hypothesis.
    All judges are compared, the generator company's own included (the benchmark compared its four judges on all 2,997
    hypotheses). For each pair, on the hypotheses both scored: share of equal votes and Cohen's kappa on the ≥ 3 vote,
    Cohen's kappa on the ≥ 4 vote, quadratic-weighted kappa on 0–5 with all six labels, Spearman's rho. Kappa intervals
    (10,000 resamples of the tasks by default) resample whole tasks with the documented index matrix, the same resamples
    for every pair; a resample where a kappa is undefined (one vote only) is counted in ``undefined_resamples``. Pass
    ``resamples=0`` for point values only (then rows need no task). ``judges`` fixes the order; by default judges are
    listed in order of first appearance.
    """
    rows = list(table)
    if judges is None:
        judges = list(dict.fromkeys(judge for row in rows for judge in row["scores"]))
    judges = tuple(judges)
    counts, codes, n_tasks = None, None, 0
    if resamples:
        if any("task" not in row for row in rows):
            raise ValueError("rows need a 'task' to resample tasks; pass resamples=0 for point values only")
        codes, order = task_codes(row["task"] for row in rows)
        n_tasks = len(order)
        counts = resample_counts(n_tasks, resamples, seed)
    quadratic = np.subtract.outer(np.arange(6), np.arange(6)) ** 2 / 25.0
    unweighted = 1 - np.eye(2)
    # Hypothesis × judge scores, −1 where a judge gave none; each score is checked once.
    missing = -1
    scores = np.array(
        [[missing if row["scores"].get(j) is None else judge_score(row["scores"][j]) for j in judges] for row in rows],
        dtype=np.intp,
    ).reshape(len(rows), len(judges))
    pairs, matrices = [], {name: {} for name in ("kappa", "weighted", "spearman")}
    for (index_a, judge_a), (index_b, judge_b) in itertools.combinations(enumerate(judges), 2):
        both = (scores[:, index_a] != missing) & (scores[:, index_b] != missing)
        a, b = scores[both, index_a], scores[both, index_b]
        resampled = {"kappa": None, "strict": None, "weighted": None}
        if counts is not None:
            tables = np.zeros((n_tasks, 6, 6))
            np.add.at(tables, (codes[both], a, b), 1)
            # Collapse per task, then resample: the sums of tables are the tables of the resampled rows.
            per_task = {
                "kappa": (_vote_tables(tables, PRIMARY_THRESHOLD), unweighted),
                "strict": (_vote_tables(tables, STRICT_THRESHOLD), unweighted),
                "weighted": (tables, quadratic),
            }
            resampled = {
                name: _kappa_from_tables(
                    (counts @ task_tables.reshape(n_tasks, -1)).reshape(-1, *weights.shape), weights
                )
                for name, (task_tables, weights) in per_task.items()
            }

        pair = _pair_agreement(judge_a, judge_b, a.tolist(), b.tolist(), resampled)
        pairs.append(pair)
        for key in ((judge_a, judge_b), (judge_b, judge_a)):
            matrices["kappa"][key] = pair.kappa.value
            matrices["weighted"][key] = pair.weighted_kappa.value
            matrices["spearman"][key] = pair.spearman

    def matrix(name):
        return tuple(tuple(matrices[name].get((x, y)) for y in judges) for x in judges)

    return JudgeAgreement(
        judges=judges,
        pairs=tuple(pairs),
        kappa_matrix=matrix("kappa"),
        weighted_kappa_matrix=matrix("weighted"),
        spearman_matrix=matrix("spearman"),
        resamples=resamples,
        seed=seed,
    )


def _pair_agreement(judge_a: str, judge_b: str, a: list[int], b: list[int], resampled: dict) -> PairAgreement:
    if not a:
        empty = estimate(np.nan, None)
        return PairAgreement(judge_a, judge_b, 0, None, empty, empty, empty, None)

    def point(value: float | None) -> float:
        return np.nan if value is None else value

    votes_equal = sum((x >= PRIMARY_THRESHOLD) == (y >= PRIMARY_THRESHOLD) for x, y in zip(a, b, strict=True))
    return PairAgreement(
        judge_a=judge_a,
        judge_b=judge_b,
        hypotheses=len(a),
        agreement=votes_equal / len(a),
        kappa=estimate(point(cohen_kappa(a, b)), resampled["kappa"]),
        strict_kappa=estimate(point(cohen_kappa(a, b, STRICT_THRESHOLD)), resampled["strict"]),
        weighted_kappa=estimate(point(weighted_kappa(a, b)), resampled["weighted"]),
        spearman=spearman(a, b),
    )

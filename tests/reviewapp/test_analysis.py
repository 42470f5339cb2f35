"""The analysts' statistics (reviewapp.analysis) against independent computations and seed 001's published figures.

Each statistic is checked against arithmetic worked out here (shown in the comments), a computation that does not
go through the product's code (math.comb, a plain loop, another library), or a number printed in seed 001.
"""

import dataclasses
import itertools
import json
import math

import numpy as np
import pytest
from scipy import stats
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import cohen_kappa_score

from reviewapp import analysis
from reviewapp.analysis._resampling import DEFAULT_SEED


def tasks_of(counts):
    """Rows (task, selected, match) from per-task (selected matches, selected others, unselected matches, others)."""
    rows = []
    for task, (sel_match, sel_other, match, other) in enumerate(counts):
        rows += [(task, True, True)] * sel_match + [(task, True, False)] * sel_other
        rows += [(task, False, True)] * match + [(task, False, False)] * other
    return rows


def hypergeometric_pmf(population, matching, draws, k):
    return math.comb(matching, k) * math.comb(population - matching, draws - k) / math.comb(population, draws)


# --- random control (seed 001 М.3, Н.6, Ж; SPEC Appendix D) ---


@pytest.mark.parametrize(
    ("population", "matching", "draws", "low", "high"),
    [(53, 25, 19, 6, 12), (53, 18, 19, 3, 10), (49, 21, 22, 6, 13)],
)
def test_random_control_reproduces_the_published_ranges(population, matching, draws, low, high):
    control = analysis.random_control(population, matching, draws)
    assert (control.low, control.high) == (low, high)
    # The mean of a hypergeometric count is draws × matching / population.
    assert control.mean == pytest.approx(draws * matching / population)


def test_random_control_mean_is_8_96_and_47_2_percent_of_the_list():
    control = analysis.random_control(53, 25, 19)
    # 19 × 25 / 53 = 475 / 53 = 8.962…; 8.962 / 19 = 0.4717 (seed 001 Ж: "8,96 (47,2 % списка)").
    assert round(control.mean, 2) == 8.96
    assert round(100 * control.mean_share, 1) == 47.2


@pytest.mark.parametrize(("population", "matching", "draws"), [(53, 25, 19), (240, 40, 19), (250, 36, 22)])
def test_random_control_range_is_the_2_5_and_97_5_percent_quantiles_of_the_exact_distribution(
    population, matching, draws
):
    control = analysis.random_control(population, matching, draws)
    pmf = [hypergeometric_pmf(population, matching, draws, k) for k in range(draws + 1)]
    cdf = list(itertools.accumulate(pmf))
    # ppf(q) is the smallest count whose cumulative probability reaches q.
    assert control.low == next(k for k, c in enumerate(cdf) if c >= 0.025 - 1e-12)
    assert control.high == next(k for k, c in enumerate(cdf) if c >= 0.975 - 1e-12)
    assert control.coverage == pytest.approx(sum(pmf[control.low : control.high + 1]))
    assert control.coverage >= 0.95


def test_trimming_astra_s_list_to_the_group_s_length_reproduces_appendix_zh():
    # Seed 001 Ж: Astra said yes to 53 Grok hypotheses, 25 of them matching; cut at random to the group's 19.
    trimmed = analysis.trim_to_group_length([True] * 25 + [False] * 28, 19, group_matches=14, repeats=20_000)
    assert (round(trimmed.exact.mean, 2), trimmed.exact.low, trimmed.exact.high) == (8.96, 6, 12)
    # Simulated cuts agree with the exact distribution: the mean's standard error is about 1.6 / √20,000 = 0.011.
    assert trimmed.simulated_mean == pytest.approx(8.962, abs=0.06)
    assert (trimmed.simulated_low, trimmed.simulated_high) == (6, 12)
    assert trimmed.group_above_range is True  # the group's 14 lies above 12
    assert (trimmed.repeats, trimmed.seed) == (20_000, DEFAULT_SEED)


def test_trimming_reports_whether_the_group_beats_the_range_as_in_n6():
    # Н.6: Opus hypotheses, the group's 14 of 22 is one above the range 6–13 of Astra's 49 "yes" (21 matching).
    opus = analysis.trim_to_group_length([True] * 21 + [False] * 28, 22, group_matches=14, repeats=1000)
    assert (opus.exact.low, opus.exact.high, opus.group_above_range) == (6, 13, True)
    assert opus.group_matches - opus.exact.high == 1
    # Gemini hypotheses: the group's 9 of 19 lies inside 3–10 (Gemini's own 53 "yes", 18 matching).
    gemini = analysis.trim_to_group_length([True] * 18 + [False] * 35, 19, group_matches=9, repeats=1000)
    assert (gemini.exact.low, gemini.exact.high, gemini.group_above_range) == (3, 10, False)


# --- selection summary (seed 001 Н.5–Н.6, Л.1, Appendix В, Е) ---


def test_selection_summary_on_a_hand_checked_set():
    # Task 0: 2 selected (1 matching), 1 unselected match, 2 others; task 1: 1 selected matching, 4 others.
    rows = tasks_of([(1, 1, 1, 2), (1, 0, 0, 4)])
    summary = analysis.selection_summary(rows, resamples=0)
    # precision = 2 selected matches / 3 selected; base rate = 3 matches / 10 hypotheses;
    # enrichment = (2/3) / (3/10) = 20/9; sensitivity = 2 / 3.
    assert (summary.selected, summary.selected_matches, summary.matches, summary.hypotheses) == (3, 2, 3, 10)
    assert summary.precision.value == pytest.approx(2 / 3)
    assert summary.base_rate.value == pytest.approx(3 / 10)
    assert summary.enrichment.value == pytest.approx(20 / 9)
    assert summary.sensitivity.value == pytest.approx(2 / 3)
    assert summary.precision.low is None and summary.resamples == 0


def test_selection_summary_reproduces_the_published_two_stage_figures_of_l1():
    # Л.1: 245 hypotheses of 49 tasks, 36 matching; the rule selected 22, of which 11 match.
    # Spread over tasks: 11 tasks with a selected match, 11 with a selected non-match, 25 more matches elsewhere.
    per_task = [(1, 0, 0, 4)] * 11 + [(0, 1, 1, 3)] * 11 + [(0, 0, 1, 4)] * 14 + [(0, 0, 0, 5)] * 13
    summary = analysis.selection_summary(tasks_of(per_task), resamples=0)
    assert (summary.tasks, summary.hypotheses, summary.matches) == (49, 245, 36)
    # 11/22 = 50.0 %; 36/245 = 14.7 %; 0.5 / (36/245) = 245/72 = 3.40.
    assert round(100 * summary.precision.value, 1) == 50.0
    assert round(100 * summary.base_rate.value, 1) == 14.7
    assert round(summary.enrichment.value, 2) == 3.40


def test_selection_summary_reproduces_14_of_19_matching():
    # Н.3 / Н.6: the group selected 19 Grok hypotheses of which 14 match: 73.7 %.
    summary = analysis.selection_summary(tasks_of([(1, 0, 1, 3)] * 14 + [(0, 1, 0, 4)] * 5 + [(0, 0, 1, 4)] * 29))
    assert (summary.selected_matches, summary.selected) == (14, 19)
    assert round(100 * summary.precision.value, 1) == 73.7
    assert summary.precision.low < summary.precision.value < summary.precision.high


def random_rows(tasks=30, per_task=20, seed=3):
    rng = np.random.default_rng(seed)
    return [
        (f"task-{t}", bool(rng.random() < 0.25), bool(rng.random() < 0.3))
        for t in range(tasks)
        for _ in range(per_task)
    ]


def test_selection_intervals_equal_a_plain_loop_over_the_documented_task_resamples():
    rows, resamples, seed = random_rows(), 2000, 7
    summary = analysis.selection_summary(rows, resamples=resamples, seed=seed)
    tasks = list(dict.fromkeys(task for task, _, _ in rows))
    by_task = {task: [row for row in rows if row[0] == task] for task in tasks}
    draws = np.random.default_rng(seed).integers(0, len(tasks), size=(resamples, len(tasks)))
    precisions, enrichments = [], []
    for draw in draws:
        sample = [row for index in draw for row in by_task[tasks[index]]]
        selected = [match for _, chosen, match in sample if chosen]
        precision = sum(selected) / len(selected)
        precisions.append(precision)
        enrichments.append(precision / (sum(match for _, _, match in sample) / len(sample)))
    assert summary.precision.low == pytest.approx(np.percentile(precisions, 2.5))
    assert summary.precision.high == pytest.approx(np.percentile(precisions, 97.5))
    assert summary.enrichment.low == pytest.approx(np.percentile(enrichments, 2.5))
    assert summary.enrichment.high == pytest.approx(np.percentile(enrichments, 97.5))
    assert (summary.resamples, summary.seed) == (resamples, seed)


def test_selection_intervals_agree_with_scipy_percentile_bootstrap_over_tasks():
    rows = random_rows(tasks=50, per_task=60, seed=11)
    summary = analysis.selection_summary(rows)
    tasks = sorted({task for task, _, _ in rows})
    selected = np.array([sum(s for t, s, _ in rows if t == task) for task in tasks])
    selected_matches = np.array([sum(s and m for t, s, m in rows if t == task) for task in tasks])
    result = stats.bootstrap(
        (selected, selected_matches),
        lambda s, sm, axis: sm.sum(axis=axis) / s.sum(axis=axis),
        paired=True,
        vectorized=True,
        method="percentile",
        n_resamples=10_000,
        rng=np.random.default_rng(1),
    )
    # Different random draws: the two percentile intervals agree to Monte Carlo error (about 0.003 here).
    assert summary.precision.low == pytest.approx(result.confidence_interval.low, abs=0.015)
    assert summary.precision.high == pytest.approx(result.confidence_interval.high, abs=0.015)


def test_resamples_without_a_selected_hypothesis_are_counted_not_hidden():
    # Four tasks; only task 0 has a selected hypothesis. A resample misses it with probability (3/4)^4 = 0.316.
    rows = tasks_of([(1, 0, 1, 3), (0, 0, 1, 4), (0, 0, 1, 4), (0, 0, 1, 4)])
    summary = analysis.selection_summary(rows, resamples=10_000, seed=5)
    draws = np.random.default_rng(5).integers(0, 4, size=(10_000, 4))
    missing_task_0 = int((~(draws == 0).any(axis=1)).sum())
    assert summary.precision.undefined_resamples == missing_task_0
    assert summary.enrichment.undefined_resamples == missing_task_0
    assert missing_task_0 == pytest.approx(10_000 * 0.75**4, abs=200)
    assert summary.base_rate.undefined_resamples == 0
    # The interval comes from the defined resamples only: each of them has precision 1/1.
    assert (summary.precision.low, summary.precision.high) == (1.0, 1.0)


def test_a_set_without_matches_gives_the_degenerate_0_0_interval_of_appendix_v():
    rows = tasks_of([(0, 1, 0, 4)] * 5)
    summary = analysis.selection_summary(rows, resamples=1000)
    assert (summary.precision.value, summary.precision.low, summary.precision.high) == (0.0, 0.0, 0.0)
    # Sensitivity has no match to find: undefined in the data and in every resample.
    assert summary.sensitivity.value is None and summary.sensitivity.undefined_resamples == 1000
    assert summary.enrichment.value is None


def test_not_judged_hypotheses_are_left_out_and_counted_never_negative():
    judged = tasks_of([(1, 1, 1, 2), (1, 0, 0, 4)])
    with_gaps = judged + [(0, True, None), (1, False, None), (1, False, None)]
    before = analysis.selection_summary(judged, resamples=500)
    after = analysis.selection_summary(with_gaps, resamples=500)
    assert (after.not_judged, after.selected_not_judged) == (3, 1)
    assert after.precision == before.precision and after.base_rate == before.base_rate


def test_selection_summary_is_reproducible_for_a_seed_and_serialises_to_json():
    rows = random_rows()
    first = analysis.selection_summary(rows, resamples=500, seed=42)
    assert first == analysis.selection_summary(rows, resamples=500, seed=42)
    assert first != analysis.selection_summary(rows, resamples=500, seed=43)
    decoded = json.loads(json.dumps(dataclasses.asdict(first), allow_nan=False))
    assert decoded["seed"] == 42 and decoded["resamples"] == 500 and "undefined_resamples" in decoded["precision"]


# --- judge outcome (SPEC §6, seed 001 К, В, Таблица S) ---


@pytest.mark.parametrize(
    ("scores", "primary", "strict", "borderline"),
    [
        ((0, 1, 2), False, False, False),  # 0 of 3 give ≥ 3
        ((3, 0, 2), False, False, True),  # 1 of 3: negative, decided 2–1
        ((4, 2, 1), False, False, True),  # 1 of 3 (a strict vote too): still negative
        ((2, 2, 3), False, False, True),  # 3 is the lowest positive score
        ((3, 5, 0), True, False, True),  # 2 of 3 give ≥ 3 but only one gives ≥ 4
        ((4, 5, 2), True, True, True),  # 2 of 3 at both thresholds, decided 2–1
        ((3, 3, 3), True, False, False),  # unanimous at ≥ 3, no strict vote
        ((3, 4, 3), True, False, False),  # unanimous, one strict vote
        ((5, 4, 3), True, True, False),  # unanimous, two strict votes
        ((5, 5, 5), True, True, False),
    ],
)
def test_judge_outcome_at_every_vote_split(scores, primary, strict, borderline):
    outcome = analysis.judge_outcome(scores)
    assert (outcome.primary, outcome.strict, outcome.borderline) == (primary, strict, borderline)
    assert outcome.status == ("positive" if primary else "negative")
    assert outcome.primary_votes == sum(score >= 3 for score in scores)


@pytest.mark.parametrize("scores", [(3, 3, None), (5, None, None), (None, None, None), (4, 4), ()])
def test_a_hypothesis_without_three_usable_scores_is_not_judged_never_negative(scores):
    outcome = analysis.judge_outcome(scores)
    assert outcome.status == "not_judged"
    assert (outcome.primary, outcome.strict, outcome.borderline) == (None, None, None)


@pytest.mark.parametrize("bad", [6, -1, 2.5, True, "3"])
def test_judge_outcome_rejects_scores_off_the_0_to_5_scale(bad):
    with pytest.raises(ValueError, match="0 to 5"):
        analysis.judge_outcome([3, 3, bad])


def test_judge_outcome_refuses_more_than_three_scores():
    with pytest.raises(ValueError, match="three"):
        analysis.judge_outcome([3, 3, 1, 1])


JUDGE_COMPANY = {"astra-judge": "OpenAI", "grok-judge": "xAI", "gemini-judge": "Google", "opus-judge": "Anthropic"}


def test_the_judge_of_the_generator_s_company_is_excluded():
    scores = {"astra-judge": 2, "grok-judge": 5, "gemini-judge": 2, "opus-judge": 5}
    # Grok generated it: the xAI judge's 5 does not count; 2, 2, 5 is one vote of three, negative.
    grok = analysis.judge_outcome_for(scores, JUDGE_COMPANY, "xAI")
    assert (grok.status, grok.excluded_judges, grok.judges) == (
        "negative",
        ("grok-judge",),
        ("astra-judge", "gemini-judge", "opus-judge"),
    )
    # Gemini generated it: now the xAI judge decides with the others, 2, 5, 5 is positive.
    gemini = analysis.judge_outcome_for(scores, JUDGE_COMPANY, "google")
    assert (gemini.status, gemini.scores, gemini.excluded_judges) == ("positive", (2, 5, 5), ("gemini-judge",))


def test_a_missing_other_company_score_is_not_replaced_by_the_same_company_judge():
    scores = {"astra-judge": 4, "grok-judge": 5, "gemini-judge": None, "opus-judge": 4}
    assert analysis.judge_outcome_for(scores, JUDGE_COMPANY, "xAI").status == "not_judged"
    # A missing score from the excluded judge changes nothing.
    scores = {"astra-judge": 4, "grok-judge": None, "gemini-judge": 1, "opus-judge": 4}
    assert analysis.judge_outcome_for(scores, JUDGE_COMPANY, "xAI").status == "positive"


def test_judge_outcome_for_refuses_judge_rosters_outside_the_seed_s_rule():
    scores = {"astra-judge": 4, "grok-judge": 5, "gemini-judge": 1, "opus-judge": 4}
    with pytest.raises(ValueError, match="defined for four judges"):
        analysis.judge_outcome_for(scores, JUDGE_COMPANY, "Meta")  # four other-company judges
    with pytest.raises(ValueError, match="no company"):
        analysis.judge_outcome_for({**scores, "llama-judge": 3}, JUDGE_COMPANY, "xAI")


def test_vote_distribution_reproduces_the_published_2_1_count_of_m2():
    # М.2: all three judges ≥ 3 for 263 hypotheses, two for 95, one for 188, none for 2,451 (2,997 in all).
    pattern = {3: (4, 3, 5), 2: (3, 5, 1), 1: (0, 4, 2), 0: (2, 1, 0)}
    rows = [
        {"generator_company": "xAI", "scores": dict(zip(JUDGE_COMPANY, (a, 5, b, c), strict=True))}
        for votes, count in ((3, 263), (2, 95), (1, 188), (0, 2451))
        for a, b, c in [pattern[votes]] * count
    ]
    votes = analysis.other_company_votes(rows, JUDGE_COMPANY)
    assert votes.hypotheses_by_votes == (2451, 188, 95, 263)
    # 95 + 188 = 283 decisions would change with one vote; 263 + 95 = 358 positive.
    assert (votes.borderline, votes.positive, votes.judged) == (283, 358, 2997)
    # Fleiss' kappa on the votes: an item's agreement is 1 at 3–0 or 0–3 and (1 + 4 − 3)/6 = 1/3 at 2–1;
    # the yes share is (3·263 + 2·95 + 188) / (3·2997) and chance agreement p² + (1 − p)².
    observed = (263 + 2451 + (95 + 188) / 3) / 2997
    yes = (3 * 263 + 2 * 95 + 188) / (3 * 2997)
    chance = yes**2 + (1 - yes) ** 2
    assert votes.fleiss_kappa == pytest.approx((observed - chance) / (1 - chance))


# --- agreement (seed 001 К, М.2, Л.7) ---


def test_cohen_kappa_on_the_3_or_more_vote_by_hand():
    a, b = [0, 3, 4, 5, 1, 2], [1, 3, 2, 5, 4, 0]
    # Votes a = 0 1 1 1 0 0, b = 0 1 0 1 1 0: observed agreement 4/6; each judge votes yes half the time,
    # so chance agreement is 0.5·0.5 + 0.5·0.5 = 1/2 and kappa = (2/3 − 1/2) / (1 − 1/2) = 1/3.
    assert analysis.cohen_kappa(a, b) == pytest.approx(1 / 3)
    # At ≥ 4: a = 0 0 1 1 0 0, b = 0 0 0 1 1 0: agreement 4/6, shares 2/6 each,
    # chance (1/3)(1/3) + (2/3)(2/3) = 5/9, kappa = (6/9 − 5/9) / (4/9) = 1/4.
    assert analysis.cohen_kappa(a, b, threshold=4) == pytest.approx(1 / 4)


def test_identical_raters_have_kappa_one_and_constant_raters_have_none():
    scores = [0, 1, 2, 3, 4, 5, 3, 3]
    assert analysis.cohen_kappa(scores, scores) == 1.0
    assert analysis.weighted_kappa(scores, scores) == 1.0
    assert analysis.fleiss_kappa([[s, s, s] for s in scores]) == pytest.approx(1.0)
    assert analysis.cohen_kappa([4, 5, 3], [3, 3, 5]) is None  # every vote is yes: kappa is undefined


def test_weighted_kappa_uses_all_six_labels_when_a_score_is_unused():
    a, b = [0, 1, 3, 5], [1, 0, 3, 5]
    # Scores 2 and 4 are never used. Weights (i − j)² / 25 on the full 0–5 scale:
    #   observed disagreement = (1 + 1) / 25 over 4 items;
    #   expected: both marginals put 1/4 on each of 0, 1, 3, 5, so Σ_ij (i − j)² / 16 / 25 with
    #   Σ over ordered pairs of {0,1,3,5} of (i − j)² = 2 · (1 + 9 + 25 + 4 + 16 + 4) = 118.
    #   kappa = 1 − (2/25 / 4) / (118/16/25) = 1 − 8/118 = 110/118 = 0.932.
    # Without the labels sklearn would renumber 0, 1, 3, 5 as 0, 1, 2, 3 and give 1 − 8/40 = 0.8.
    assert analysis.weighted_kappa(a, b) == pytest.approx(110 / 118)
    assert cohen_kappa_score(a, b, weights="quadratic") == pytest.approx(0.8)


def test_weighted_kappa_rejects_scores_off_the_scale():
    with pytest.raises(ValueError):
        analysis.weighted_kappa([1, 6], [1, 2])


def test_fleiss_kappa_by_hand():
    rows = [[3, 3, 3], [0, 0, 0], [3, 3, 0], [0, 0, 3]]
    # Agreement per item (n = 3 raters): (Σ n_ij² − n) / (n(n − 1)) = 1, 1, (4 + 1 − 3)/6 = 1/3, 1/3 → mean 2/3.
    # Category shares: 6/12 at 3 and 6/12 at 0 → chance 1/4 + 1/4 = 1/2. kappa = (2/3 − 1/2) / (1/2) = 1/3.
    assert analysis.fleiss_kappa(rows) == pytest.approx(1 / 3)
    # As votes at ≥ 3 the same table has the same two categories, so the same kappa.
    assert analysis.fleiss_kappa([[4, 5, 3], [0, 1, 2], [3, 4, 1], [2, 0, 5]], threshold=3) == pytest.approx(1 / 3)


def test_fleiss_kappa_needs_the_same_number_of_ratings_per_item():
    with pytest.raises(ValueError):
        analysis.fleiss_kappa([[1, 2, 3], [1, 2]])


def test_spearman_by_hand():
    # Ranks differ by d = −1, 1, −1, 1, 0: rho = 1 − 6 Σd² / (n(n² − 1)) = 1 − 24/120 = 0.8.
    assert analysis.spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) == pytest.approx(0.8)
    assert analysis.spearman([1, 1, 1], [1, 2, 3]) is None


def test_krippendorff_alpha_reproduces_krippendorff_s_published_example():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", four observers, twelve units, gaps:
    # published alpha = 0.743 nominal, 0.815 ordinal, 0.849 interval.
    observers = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
        [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
    ]
    units = list(zip(*observers, strict=True))
    assert round(analysis.krippendorff_alpha(units, level="nominal"), 3) == 0.743
    assert round(analysis.krippendorff_alpha(units, level="ordinal"), 3) == 0.815
    assert round(analysis.krippendorff_alpha(units, level="interval"), 3) == 0.849


def test_reviewer_agreement_excludes_and_counts_cant_judge():
    reviews = [
        {"proposal": "p1", "reviewer": "r1", "importance": "3"},
        {"proposal": "p1", "reviewer": "r2", "importance": "3"},
        {"proposal": "p2", "reviewer": "r1", "importance": "2"},
        {"proposal": "p2", "reviewer": "r3", "importance": "cant_judge"},
        {"proposal": "p2", "reviewer": "r4", "importance": "4"},
        {"proposal": "p3", "reviewer": "r2", "importance": "1"},
        {"proposal": "p4", "reviewer": "r3", "importance": "4"},
        {"proposal": "p4", "reviewer": "r4", "importance": "cant_judge"},
        {"proposal": "p4", "reviewer": "r5", "importance": ""},
    ]
    result = analysis.reviewer_agreement(reviews, "importance")
    assert (result.cant_judge, result.missing, result.ratings, result.proposals) == (2, 1, 6, 4)
    # Pairable: p1 (3, 3) agree and p2 (2, 4) differ → exact agreement 1/2.
    assert (result.proposals_with_pairs, result.reviewer_pairs, result.exact_agreement) == (2, 2, 0.5)
    # Ordinal alpha by hand: pairable values n = 4 (n_2 = 1, n_3 = 2, n_4 = 1); coincidences o_33 = 2,
    # o_24 = o_42 = 1. Ordinal distances: δ²_23 = (1 + 2 − 3/2)² = 2.25, δ²_34 = 2.25, δ²_24 = (1 + 2 + 1 − 1)² = 9.
    # alpha = 1 − (n − 1) Σ o δ² / Σ n_c n_k δ² = 1 − 3 · 18 / (2 · (2 · 2.25 + 9 + 2 · 2.25)) = 1 − 54/36 = −0.5.
    assert result.alpha == pytest.approx(-0.5)
    assert result.level == "ordinal"


def test_reviewer_agreement_on_the_recommendation_is_nominal():
    reviews = [
        {"proposal": 1, "recommendation": "revise"},
        {"proposal": 1, "recommendation": "revise"},
        {"proposal": 2, "recommendation": "reject"},
        {"proposal": 2, "recommendation": "defer"},
        {"proposal": 3, "recommendation": "prioritize"},
        {"proposal": 3, "recommendation": "prioritize"},
    ]
    result = analysis.reviewer_agreement(reviews, "recommendation")
    # n = 6 values; disagreeing coincidences: reject–defer twice (both orders). Expected disagreement
    # Σ_{c≠k} n_c n_k = 6² − (2² + 2² + 1² + 1²) = 26. alpha = 1 − (n − 1) · 2 / 26 = 1 − 10/26 = 8/13.
    assert result.level == "nominal"
    assert result.alpha == pytest.approx(8 / 13)


def test_reviewer_agreement_rejects_values_off_the_criterion_scale():
    with pytest.raises(ValueError):
        analysis.reviewer_agreement([{"proposal": 1, "importance": "5"}], "importance")


def test_rerun_agreement_by_hand():
    first = {"h1": True, "h2": True, "h3": False, "h4": False, "h5": True}
    second = {"h1": True, "h2": False, "h3": False, "h4": False, "h6": True, "h5": None}
    result = analysis.rerun_agreement(first, second)
    # Compared: h1–h4. Votes 1 1 0 0 and 1 0 0 0: agreement 3/4; chance = (1/2)(1/4) + (1/2)(3/4) = 1/2;
    # kappa = (3/4 − 1/2) / (1/2) = 1/2.
    assert (result.hypotheses, result.only_first, result.only_second) == (4, 1, 1)
    assert (result.agreement, result.kappa, result.yes_both) == (0.75, pytest.approx(0.5), 1)


def judge_table(seed=2, tasks=12, per_task=8):
    rng = np.random.default_rng(seed)
    rows = []
    for task in range(tasks):
        for _ in range(per_task):
            truth = rng.integers(0, 6)
            scores = {j: int(np.clip(truth + rng.integers(-1, 2), 0, 5)) for j in ("a", "b", "c")}
            if rng.random() < 0.15:
                scores["c"] = None
            rows.append({"task": task, "scores": scores})
    return rows


def test_judge_agreement_point_values_equal_sklearn_and_scipy_on_the_scored_pairs():
    rows = judge_table()
    result = analysis.judge_agreement(rows, resamples=0)
    pair = next(p for p in result.pairs if (p.judge_a, p.judge_b) == ("a", "c"))
    both = [(r["scores"]["a"], r["scores"]["c"]) for r in rows if r["scores"]["c"] is not None]
    a, c = map(list, zip(*both, strict=True))
    assert pair.hypotheses == len(both) < len(rows)
    assert pair.kappa.value == pytest.approx(cohen_kappa_score([x >= 3 for x in a], [y >= 3 for y in c]))
    assert pair.weighted_kappa.value == pytest.approx(
        cohen_kappa_score(a, c, weights="quadratic", labels=list(range(6)))
    )
    assert pair.spearman == pytest.approx(stats.spearmanr(a, c).statistic)
    # The matrix is symmetric, in the judges' order, with an empty diagonal.
    assert result.judges == ("a", "b", "c")
    assert result.kappa_matrix[0][2] == result.kappa_matrix[2][0] == pair.kappa.value
    assert result.kappa_matrix[1][1] is None


def test_judge_agreement_intervals_equal_a_loop_of_sklearn_over_task_resamples():
    rows, resamples, seed = judge_table(), 300, 9
    pair = analysis.judge_agreement(rows, ["a", "b"], resamples=resamples, seed=seed).pairs[0]
    draws = np.random.default_rng(seed).integers(0, 12, size=(resamples, 12))
    kappas, weighted = [], []
    for draw in draws:
        sample = [row["scores"] for task in draw for row in rows if row["task"] == task]
        a, b = [s["a"] for s in sample], [s["b"] for s in sample]
        kappas.append(cohen_kappa_score([x >= 3 for x in a], [y >= 3 for y in b]))
        weighted.append(cohen_kappa_score(a, b, weights="quadratic", labels=list(range(6))))
    assert (pair.kappa.low, pair.kappa.high) == pytest.approx(tuple(np.percentile(kappas, [2.5, 97.5])))
    assert (pair.weighted_kappa.low, pair.weighted_kappa.high) == pytest.approx(
        tuple(np.percentile(weighted, [2.5, 97.5]))
    )


# --- ranking and yes/no forecasts (seed 001 Л.1, З) ---


def test_auc_counts_tied_scores_as_one_half():
    scores, labels = [0.9, 0.5, 0.5, 0.1], [True, True, False, False]
    # Pairs (match, non-match): 0.9>0.5 → 1, 0.9>0.1 → 1, 0.5=0.5 → 0.5, 0.5>0.1 → 1: 3.5 / 4 = 0.875.
    assert analysis.auc(scores, labels) == pytest.approx(0.875)


def test_auc_equals_the_share_of_correctly_ordered_pairs():
    rng = np.random.default_rng(4)
    scores = rng.integers(0, 5, size=60) / 4  # coarse probabilities: many ties
    labels = rng.random(60) < 0.3
    pairs = [(s, t) for s in scores[labels] for t in scores[~labels]]
    by_pairs = sum(1.0 if s > t else 0.5 if s == t else 0.0 for s, t in pairs) / len(pairs)
    assert analysis.auc(list(scores), list(labels)) == pytest.approx(by_pairs)


def test_auc_is_undefined_with_one_outcome_and_refuses_missing_scores():
    assert analysis.auc([0.1, 0.2], [True, True]) is None
    with pytest.raises(ValueError):
        analysis.auc([0.1, None], [True, False])


def test_expected_precision_at_k_takes_ties_at_the_cut_in_expectation():
    scores, labels = [0.9, 0.8, 0.8, 0.8, 0.1], [True, True, False, False, True]
    # k = 2: 0.9 (a match) is in; one place left for three hypotheses tied at 0.8, one of which matches:
    # expected matches = 1 + 1 · 1/3 = 4/3, precision = (4/3) / 2 = 2/3.
    result = analysis.expected_precision_at_k(scores, labels, 2)
    assert result.expected_matches == pytest.approx(4 / 3)
    assert result.precision == pytest.approx(2 / 3)
    assert (result.above_cut, result.tied_at_cut, result.tied_matches) == (1, 3, 1)
    # k = 4 takes the whole tied group: 2 matches of 4.
    assert analysis.expected_precision_at_k(scores, labels, 4).precision == pytest.approx(0.5)


def test_expected_precision_at_k_equals_the_mean_over_all_tie_breaks():
    scores = [0.7, 0.5, 0.5, 0.5, 0.5, 0.2]
    labels = [False, True, True, False, False, True]
    k = 3
    tied = [i for i, s in enumerate(scores) if s == 0.5]
    lists = [[0, *chosen] for chosen in itertools.combinations(tied, 2)]  # 0.7 always in, 2 of the 4 ties
    mean_precision = sum(sum(labels[i] for i in chosen) / k for chosen in lists) / len(lists)
    assert analysis.expected_precision_at_k(scores, labels, k).precision == pytest.approx(mean_precision)


def test_balanced_accuracy_equals_accuracy_on_a_50_50_set():
    truth = [True, False] * 10
    predicted = [True, False, True, True, False, False, True, False] + [True] * 12
    result = analysis.balanced_accuracy(truth, predicted, groups=[i // 2 for i in range(20)], resamples=2000)
    assert result.balanced_set is True
    assert result.balanced_accuracy.value == pytest.approx(result.accuracy.value)
    assert result.balanced_accuracy.low <= result.balanced_accuracy.value <= result.balanced_accuracy.high


def test_balanced_accuracy_by_hand_on_an_unbalanced_set():
    # Confirmed 1 1 1 answered 1 0 0: sensitivity 1/3; refuted 0 answered 0: specificity 1.
    # Balanced accuracy (1/3 + 1) / 2 = 2/3; plain accuracy 2/4.
    result = analysis.balanced_accuracy([True, True, True, False], [True, False, False, False])
    assert result.balanced_accuracy.value == pytest.approx(2 / 3)
    assert result.accuracy.value == 0.5
    assert (result.sensitivity.value, result.specificity.value) == (pytest.approx(1 / 3), 1.0)
    assert result.balanced_set is False and result.resamples == 0


# --- Holm, permutation test, clustered logistic regression (seed 001 М.6, Н.1, Л.6) ---


def test_holm_reproduces_n1_and_a_hand_case():
    # Н.1: p = 0.0625 for the smallest of three within-model comparisons becomes 3 · 0.0625 = 0.1875 ≈ 0.188.
    assert round(analysis.holm([0.0625, 0.30, 0.71])[0], 3) == 0.188
    # Sorted 0.01, 0.03, 0.04 → 3·0.01 = 0.03, 2·0.03 = 0.06, max(1·0.04, 0.06) = 0.06; returned in input order.
    assert analysis.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])


def test_exact_permutation_test_by_hand():
    # Rule A: task 1 (2 selected, 2 match), task 2 (1, 1), task 3 (1, 0) → 3/4.
    # Rule B: task 1 (2, 0), task 2 (1, 0), task 3 (1, 1) → 1/4. Observed difference 1/2.
    rows_a = [(1, True, True), (1, True, True), (2, True, True), (3, True, False)]
    rows_b = [(1, True, False), (1, True, False), (2, True, False), (3, True, True)]
    # Differences after swapping each subset of tasks: {} 1/2, {1} −1/2, {2} 0, {3} 1, {1,2} −1, {1,3} 0,
    # {2,3} 1/2, {1,2,3} −1/2. |difference| ≥ 1/2 in 6 of 8: p = 6/8. The most extreme, |1|, in 2 of 8.
    result = analysis.permutation_test_within_tasks(rows_a, rows_b)
    assert (result.difference, result.method, result.permutations, result.differing_tasks) == (0.5, "exact", 8, 3)
    assert (result.p_value, result.extreme, result.smallest_p) == (0.75, 6, 0.25)


def paired_rules(tasks, seed):
    rng = np.random.default_rng(seed)
    rows_a, rows_b = [], []
    for task in range(tasks):
        for _ in range(5):
            match = bool(rng.random() < 0.3)
            rows_a.append((task, bool(rng.random() < (0.7 if match else 0.2)), match))
            rows_b.append((task, bool(rng.random() < 0.3), match))
    return rows_a, rows_b


def test_sampled_permutations_agree_with_the_exact_test():
    rows_a, rows_b = paired_rules(14, seed=8)
    exact = analysis.permutation_test_within_tasks(rows_a, rows_b)
    sampled = analysis.permutation_test_within_tasks(rows_a, rows_b, exact_max_tasks=0, seed=3)
    assert exact.method == "exact" and exact.permutations == 2**exact.differing_tasks
    assert (sampled.method, sampled.permutations, sampled.seed) == ("sampled", 19_999, 3)
    # p = (count + 1) / (19,999 + 1), within Monte Carlo error (≤ 0.0036 standard error) of the exact p.
    assert sampled.p_value == (sampled.extreme + 1) / 20_000
    assert sampled.p_value == pytest.approx(exact.p_value, abs=0.015)
    assert sampled.smallest_p is None


def test_many_differing_tasks_switch_to_19_999_random_swaps():
    rows_a, rows_b = paired_rules(40, seed=1)
    result = analysis.permutation_test_within_tasks(rows_a, rows_b)
    assert result.differing_tasks > 20
    assert (result.method, result.permutations) == ("sampled", 19_999)


def test_permutation_test_of_identical_rules_gives_p_one():
    rows_a, _ = paired_rules(10, seed=2)
    result = analysis.permutation_test_within_tasks(rows_a, rows_a)
    assert (result.difference, result.p_value, result.differing_tasks, result.permutations) == (0.0, 1.0, 0, 1)


def test_swaps_that_leave_a_rule_without_selection_are_counted_as_undefined():
    # A selects only in task 1, B only in task 2; swapping exactly one of them empties one rule.
    rows_a = [(1, True, True), (2, False, False)]
    rows_b = [(1, False, True), (2, True, False)]
    result = analysis.permutation_test_within_tasks(rows_a, rows_b)
    # Swaps: {} 1 − 0 = 1, {1,2} 0 − 1 = −1, {1} and {2} undefined → p = 2/4.
    assert (result.undefined, result.extreme, result.p_value) == (2, 2, 0.5)


def test_logistic_regression_reproduces_the_odds_ratio_of_l6_counts():
    # Л.6: 37 of 60 selected and 15 of 59 excluded hypotheses matched. With selection the only predictor the
    # odds ratio is (37/23) / (15/44) = 1628/345 = 4.72 and the intercept the log odds 15/44 of the excluded.
    rows = [
        {"task": f"{kind}-{i % 29}", "selected": kind == "sel", "match": i < matches}
        for kind, total, matches in (("sel", 60, 37), ("exc", 59, 15))
        for i in range(total)
    ]
    fit = analysis.logistic_clustered(rows, "match ~ selected", "task")
    assert fit.coefficients["selected"].odds_ratio == pytest.approx(1628 / 345, rel=1e-6)
    assert fit.coefficients["Intercept"].estimate == pytest.approx(math.log(15 / 44), rel=1e-6)
    assert (fit.observations, fit.dropped, fit.clusters) == (119, 0, 58)


def test_logistic_regression_clustered_errors_equal_the_sandwich_formula_and_missing_rows_are_dropped():
    rng = np.random.default_rng(12)
    rows = []
    for task in range(25):
        task_effect = rng.normal(0, 1)
        for _ in range(8):
            clarity = rng.normal(0, 1)
            selected = bool(rng.random() < 0.4)
            p = 1 / (1 + math.exp(-(-1 + 1.2 * selected + 0.7 * clarity + task_effect)))
            rows.append({"task": task, "selected": selected, "clarity": clarity, "match": bool(rng.random() < p)})
    rows += [
        {"task": 3, "selected": True, "clarity": None, "match": True},
        {"task": None, "selected": False, "clarity": 0.1, "match": False},
    ]
    fit = analysis.logistic_clustered(rows, "match ~ selected + clarity", "task")
    assert (fit.observations, fit.dropped, fit.clusters) == (200, 2, 25)

    usable = rows[:200]
    x = np.array([[1.0, r["selected"], r["clarity"]] for r in usable])
    y = np.array([r["match"] for r in usable], dtype=float)
    groups = np.array([r["task"] for r in usable])
    # Coefficients from an independent optimiser (scikit-learn, no penalty).
    model = LogisticRegression(penalty=None, fit_intercept=False, tol=1e-10, max_iter=1000).fit(x, y)
    beta = model.coef_[0]
    names = ["Intercept", "selected", "clarity"]
    assert [fit.coefficients[name].estimate for name in names] == pytest.approx(list(beta), abs=1e-4)
    # Sandwich: bread = (X'WX)⁻¹, meat = Σ_g (X_g'(y_g − p_g))(…)', scaled by G/(G−1) · (N−1)/(N−K).
    p = 1 / (1 + np.exp(-x @ beta))
    bread = np.linalg.inv(x.T @ (x * (p * (1 - p))[:, None]))
    scores = np.array([x[groups == g].T @ (y - p)[groups == g] for g in np.unique(groups)])
    n, k, g = len(y), x.shape[1], len(scores)
    covariance = g / (g - 1) * (n - 1) / (n - k) * bread @ (scores.T @ scores) @ bread
    assert [fit.coefficients[name].std_error for name in names] == pytest.approx(
        list(np.sqrt(np.diag(covariance))), rel=1e-3
    )
    coefficient = fit.coefficients["clarity"]
    assert coefficient.low == pytest.approx(coefficient.estimate - 1.959964 * coefficient.std_error, rel=1e-5)
    assert coefficient.odds_ratio_high == pytest.approx(math.exp(coefficient.high))


# --- robustness of the selection (seed 001 Л.3, Н.7) ---

PREDICTOR_COMPANY = {"astra": "OpenAI", "grok": "xAI", "gemini": "Google", "opus": "Anthropic"}


def test_selection_without_the_generator_company_s_predictor():
    def row(task, grok_yes, match, first_stage=True, astra=True):
        forecasts = {"astra": astra, "grok": grok_yes, "gemini": True, "opus": True}
        return {
            "task": task,
            "generator_company": "xAI",
            "first_stage": first_stage,
            "forecasts": forecasts,
            "match": match,
        }

    rows = [
        row(1, True, True),  # selected by both
        row(1, False, True),  # Grok said no: selected only without Grok
        row(2, False, False),  # likewise, not matching
        row(2, True, True, first_stage=False),  # the first stage still applies
        row(3, True, False, astra=False),  # unanimity of the remaining three still applies
        {**row(3, True, True), "forecasts": {"astra": True, "grok": None, "gemini": True, "opus": True}},
    ]
    result = analysis.selection_without_company(rows, PREDICTOR_COMPANY, resamples=500)
    # Full group: 1 selected, 1 match → precision 1. Without Grok: 3 selected, 2 matches → 2/3.
    # Matches among the 5 judged rows: 3 → sensitivity 1/3 then 2/3.
    assert (result.full.selected, result.without.selected, result.added, result.technical_gaps) == (1, 3, 2, 1)
    assert result.precision_change.value == pytest.approx(2 / 3 - 1)
    assert result.sensitivity_change.value == pytest.approx(2 / 3 - 1 / 3)
    assert result.excluded_predictors == ("grok",)
    assert result.precision_change.low <= result.precision_change.value <= result.precision_change.high


def test_leaving_out_one_judge_reproduces_the_structure_of_n7():
    # Opus hypotheses (Anthropic generator): 22 selected, 14 matching with all judges (63.6 %), two of which
    # rest on the xAI judge (xAI and OpenAI ≥ 3, Google < 3). Leaving xAI out, both remaining judges must
    # give ≥ 3, so those two fail: 12/22 = 54.5 % (seed 001 Н.7).
    def scores(openai, xai, google):
        return {"astra-judge": openai, "grok-judge": xai, "gemini-judge": google, "opus-judge": 5}

    selected = [scores(4, 4, 4)] * 12 + [scores(3, 4, 1)] * 2 + [scores(1, 3, 0)] * 8
    unselected = [scores(3, 3, 3)] * 20 + [scores(0, 1, 2)] * 200
    rows = [
        {"task": i % 44, "selected": chosen, "generator_company": "Anthropic", "scores": s}
        for i, (chosen, s) in enumerate([(True, s) for s in selected] + [(False, s) for s in unselected])
    ]
    result = analysis.leave_one_judge_out(rows, JUDGE_COMPANY, resamples=200)
    assert round(100 * result.all_judges.precision.value, 1) == 63.6
    by_judge = {entry.judge: entry for entry in result.left_out}
    assert round(100 * by_judge["grok-judge"].summary.precision.value, 1) == 54.5
    assert by_judge["grok-judge"].summary.selected_matches == 12
    assert by_judge["grok-judge"].changed_selected == 2
    # The Anthropic judge never decided these outcomes: leaving it out changes nothing.
    assert by_judge["opus-judge"].changed_outcomes == 0
    assert by_judge["opus-judge"].summary == result.all_judges
    # Leaving Google out, the 3-4-1 hypotheses keep two positive judges: still 14.
    assert by_judge["gemini-judge"].summary.selected_matches == 14


# --- human review of revisions ---


def test_revision_outcomes_per_author_and_overall():
    pairs = [
        ("p1", "c1", "alice", [3, 4], [4, 4]),  # 3.5 → 4: +0.5 improved
        ("p2", "c2", "alice", [2], [2, 2]),  # 2 → 2: unchanged
        ("p3", "c3", "bob", [5, 3], [3]),  # 4 → 3: −1 worsened
        ("p4", "c4", "bob", [4], [5, 5, 5]),  # 4 → 5: +1 improved
        ("p5", "c5", "bob", [], [5]),  # the parent has no score: not comparable
    ]
    result = analysis.revision_outcomes(pairs)
    overall = result.overall
    assert (overall.pairs, overall.improved, overall.unchanged, overall.worsened) == (4, 2, 1, 1)
    assert overall.improved_share == 0.5
    assert overall.mean_change == pytest.approx((0.5 + 0 - 1 + 1) / 4)  # 0.125
    assert result.by_author["alice"].mean_change == pytest.approx(0.25)
    assert (result.by_author["bob"].improved, result.by_author["bob"].worsened) == (1, 1)
    assert result.not_comparable == 1


# --- every result is plain data ---


def test_every_result_serialises_to_json_without_nan():
    rows = random_rows(tasks=6, per_task=5)
    results = [
        analysis.random_control(53, 25, 19),
        analysis.trim_to_group_length([True, False, True], 2, repeats=100),
        analysis.selection_summary(tasks_of([(0, 1, 0, 4)] * 3), resamples=100),
        analysis.judge_outcome([3, None, 4]),
        analysis.judge_agreement(judge_table(tasks=3, per_task=3), resamples=50),
        analysis.other_company_votes(
            [{"generator_company": "xAI", "scores": dict.fromkeys(JUDGE_COMPANY, 3)}], JUDGE_COMPANY
        ),
        analysis.rerun_agreement({"h": True}, {"h": True}),
        analysis.reviewer_agreement([{"proposal": 1, "overall": 3}], "overall"),
        analysis.expected_precision_at_k([0.2, 0.1], [True, False], 1),
        analysis.balanced_accuracy([True, False], [True, True], groups=[1, 1], resamples=50),
        analysis.permutation_test_within_tasks(rows, rows),
        analysis.revision_outcomes([("p", "c", 7, [1], [2])]),
    ]
    for result in results:
        json.dumps(dataclasses.asdict(result), allow_nan=False)

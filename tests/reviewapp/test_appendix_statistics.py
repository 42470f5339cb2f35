"""The statistics of the benchmark's appendices (reviewapp.analysis) against independent computations: plain loops,
scipy, statsmodels, scikit-learn, hashlib, and the counts seed 001 publishes (80 voting rules; 32 two-stage schemes,
22 of which repeat one model)."""

import hashlib
import itertools
import math

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score
from statsmodels.stats.multitest import multipletests

from reviewapp import analysis
from reviewapp.analysis._resampling import resample_indices, task_codes

MODELS = ("astra", "sonnet", "gemini", "grok", "opus")


def random_matrix(seed=7, tasks=12, per_task=9, models=MODELS):
    rng = np.random.default_rng(seed)
    return [
        (task, {m: bool(rng.random() < 0.45) for m in models}, bool(rng.random() < 0.3))
        for task in range(tasks)
        for _ in range(per_task)
    ]


# --- М.4: the rule enumeration ---


def test_five_models_give_the_80_voting_rules_of_m4():
    enumeration = analysis.rule_enumeration(random_matrix(), MODELS)
    assert analysis.voting_rule_count(5) == len(enumeration.voting_rules) == 80
    by_size = [sum(len(rule.models) == k for rule in enumeration.voting_rules) for k in range(1, 6)]
    assert by_size == [5, 20, 30, 20, 5]  # М.4: singles, pairs, triples, fours, the full roster
    assert any(rule.models == MODELS and rule.threshold == 5 for rule in enumeration.voting_rules)  # unanimity


def test_the_benchmark_s_two_stage_enumeration_has_32_schemes_22_of_which_repeat_one_model():
    # Two first-stage models and second-stage groups of three or more of the five models.
    enumeration = analysis.rule_enumeration(
        random_matrix(), MODELS, first_stage_models=("astra", "sonnet"), min_group_size=3
    )
    assert analysis.two_stage_scheme_count(5, 2, 3) == len(enumeration.two_stage_schemes) == 32
    assert enumeration.repeating_schemes == 22
    assert len(enumeration.two_stage_schemes) - enumeration.repeating_schemes == 10


def test_a_scheme_whose_first_stage_model_is_in_its_group_repeats_that_model_s_list():
    rows = random_matrix()
    enumeration = analysis.rule_enumeration(rows, MODELS)
    single = {rule.models[0]: rule for rule in enumeration.voting_rules if len(rule.models) == 1}
    for scheme in enumeration.two_stage_schemes:
        if scheme.repeats_model:
            twin = single[scheme.repeats_model]
            assert (scheme.selected, scheme.selected_matches) == (twin.selected, twin.selected_matches)


def test_every_rule_s_precision_and_enrichment_equal_a_plain_loop():
    rows = random_matrix()
    enumeration = analysis.rule_enumeration(rows, MODELS)
    base = sum(match for _, _, match in rows) / len(rows)
    for rule in enumeration.voting_rules:
        chosen = [match for _, answers, match in rows if sum(answers[m] for m in rule.models) >= rule.threshold]
        assert rule.selected == len(chosen) and rule.selected_matches == sum(chosen)
        if chosen:
            assert rule.precision == pytest.approx(sum(chosen) / len(chosen))
            assert rule.enrichment == pytest.approx(sum(chosen) / len(chosen) / base)
    for scheme in enumeration.two_stage_schemes:
        chosen = [
            match
            for _, answers, match in rows
            if answers[scheme.first_stage] and any(answers[m] for m in scheme.models)
        ]
        assert scheme.selected == len(chosen) and scheme.selected_matches == sum(chosen)


def test_hypotheses_lacking_an_answer_are_technical_gaps_and_not_judged_ones_are_left_out():
    rows = [(1, {"a": True, "b": None}, True), (1, {"a": True, "b": True}, None), (1, {"a": True, "b": True}, True)]
    enumeration = analysis.rule_enumeration(rows, ("a", "b"))
    assert (enumeration.technical_gaps, enumeration.not_judged, enumeration.hypotheses) == (1, 1, 1)


# --- Д: own forecast, majority, unanimity ---


def test_majority_needs_more_than_half_and_unanimity_every_counted_answer():
    rows = [
        ("t1", {"own": True, "x": True, "y": False, "z": False}, True),  # 2 of 4: no majority
        ("t1", {"own": True, "x": True, "y": True, "z": False}, True),  # 3 of 4: majority
        ("t2", {"own": True, "x": True, "y": True, "z": True}, False),  # unanimous
        ("t2", {"own": True, "x": None, "y": True, "z": True}, True),  # three answers, all yes
    ]
    result = analysis.forecast_rules(rows, own_model="own", outside_models=["x", "y", "z"], resamples=0)
    rules = {rule.rule: rule for rule in result.rules if rule.rule != "model"}
    assert rules["own"].summary.selected == 4
    assert (rules["majority"].summary.selected, rules["majority"].summary.selected_matches) == (3, 2)
    assert (rules["unanimity"].summary.selected, rules["unanimity"].summary.selected_matches) == (2, 1)
    assert rules["majority"].models == ("own", "x", "y", "z")
    outside_x = next(rule for rule in result.rules if rule.models == ("x",))
    assert outside_x.summary.hypotheses == 3  # its null answer leaves that hypothesis out


# --- Л.2: best single model ---


def test_the_best_single_model_has_the_highest_precision_and_is_tested_within_tasks():
    rows = [(task, answers, all(answers.values()), match) for task, answers, match in random_matrix()]
    result = analysis.best_single_model(rows, MODELS, seed=5)
    precisions = {}
    for model in MODELS:
        chosen = [match for _, answers, _, match in rows if answers[model]]
        precisions[model] = sum(chosen) / len(chosen)
    assert result.best == max(precisions, key=precisions.get)
    assert {m.model: m.precision for m in result.models} == pytest.approx(precisions)
    expected = analysis.permutation_test_within_tasks(
        [(t, s, m) for t, _, s, m in rows], [(t, a[result.best], m) for t, a, _, m in rows], seed=5
    )
    assert result.test == expected


# --- Л.1: AUC with task intervals, the top k, fractional permutation totals ---


def test_auc_estimate_equals_sklearn_and_a_loop_over_the_documented_task_resamples():
    rng = np.random.default_rng(3)
    tasks = np.repeat(np.arange(15), 8)
    scores = np.round(rng.random(tasks.size), 1)  # many ties
    labels = rng.random(tasks.size) < 0.35
    result = analysis.auc_estimate(tasks, scores, labels, resamples=300, seed=11)
    assert result.auc.value == pytest.approx(roc_auc_score(labels, scores))
    codes, order = task_codes(tasks)
    looped = []
    for drawn in resample_indices(len(order), 300, 11):
        rows = np.concatenate([np.flatnonzero(codes == t) for t in drawn])
        looped.append(roc_auc_score(labels[rows], scores[rows]) if 0 < labels[rows].sum() < rows.size else np.nan)
    looped = np.asarray(looped)
    low, high = np.percentile(looped[np.isfinite(looped)], [2.5, 97.5])
    assert (result.auc.low, result.auc.high) == (pytest.approx(low), pytest.approx(high))
    assert result.auc.undefined_resamples == int(np.isnan(looped).sum())


def test_top_k_weights_give_the_expected_precision_with_ties_at_the_cut():
    scores = [0.9, 0.8, 0.8, 0.8, 0.1]
    labels = [True, True, False, False, True]
    weights = analysis.top_k_weights(scores, 2)
    assert list(weights) == pytest.approx([1, 1 / 3, 1 / 3, 1 / 3, 0])
    at_k = analysis.expected_precision_at_k(scores, labels, 2)
    assert at_k.expected_matches == pytest.approx(float(np.dot(weights, labels)))


def test_permutation_of_totals_equals_the_test_on_rows_for_whole_selections():
    rows_a = [(t, bool((t + i) % 3 == 0), bool(i % 2)) for t in range(8) for i in range(6)]
    rows_b = [(t, bool((t + i) % 2 == 0), bool(i % 2)) for t in range(8) for i in range(6)]

    def totals(rows):
        out = {}
        for task, selected, match in rows:
            count, hits = out.get(task, (0, 0))
            out[task] = (count + selected, hits + (selected and match))
        return out

    assert analysis.permutation_test_of_totals(totals(rows_a), totals(rows_b)) == (
        analysis.permutation_test_within_tasks(rows_a, rows_b)
    )


def test_holm_equals_statsmodels_multipletests():
    rng = np.random.default_rng(2)
    for size in (1, 3, 7, 20):
        p = rng.random(size) ** 2
        assert analysis.holm(p) == pytest.approx(list(multipletests(p, method="holm")[1]))
    assert analysis.holm([0.0625, 0.5, 0.9]) == pytest.approx([0.1875, 1.0, 1.0])  # Н.1: 0.0625 → 0.188


# --- Л.8: key elements ---


def test_an_element_is_named_when_two_thirds_of_its_content_words_occur():
    text = "Rapamycin extends the median lifespan of aged female mice."
    # "rapamycin lifespan extension": 2 of 3 content words occur ("extension" is not "extends").
    # "IL-6 signalling in the liver": none of il, 6, signalling, liver occurs. "the of": no content word at all.
    named, usable = analysis.named_elements(
        ["rapamycin lifespan extension", "IL-6 signalling in the liver", "the of"], text
    )
    assert (named, usable) == (1, 2)
    assert analysis.content_words("The mice AND the Mice") == frozenset({"mice"})


def test_key_element_auc_and_odds_ratio_equal_sklearn_and_scipy():
    rng = np.random.default_rng(4)
    words = ["sirtuin", "nad", "liver", "muscle", "fasting", "lifespan", "mtor", "autophagy"]
    elements = ["sirtuin nad", "liver fasting", "mtor autophagy muscle"]
    rows = []
    for task in range(12):
        for _ in range(10):
            text = " ".join(rng.choice(words, size=4))
            rows.append((task, elements, text, bool(rng.random() < 0.4)))
    result = analysis.key_element_analysis(rows, resamples=200, seed=9)
    shares = [analysis.named_elements(e, t)[0] / 3 for _, e, t, _ in rows]
    labels = [m for *_, m in rows]
    assert result.auc.auc.value == pytest.approx(roc_auc_score(labels, shares))
    some = [s > 0 for s in shares]
    table = [
        [
            sum(m and s for m, s in zip(labels, some, strict=True)),
            sum(m and not s for m, s in zip(labels, some, strict=True)),
        ],
        [
            sum(not m and s for m, s in zip(labels, some, strict=True)),
            sum(not m and not s for m, s in zip(labels, some, strict=True)),
        ],
    ]
    assert result.odds_ratio.value == pytest.approx(stats.contingency.odds_ratio(table, kind="sample").statistic)
    assert result.at_least_one_matching == table[0][0]
    assert result.odds_ratio.low <= result.odds_ratio.value <= result.odds_ratio.high


# --- М.6: originality pairs, sign flips, hint degree ---


def test_pairs_are_chosen_by_hash_without_replacement():
    pairs = analysis.matched_pairs({("Gen", "T1"): (["s1", "s2", "s3"], ["e1", "e2"])})
    first = min(["e1", "e2"], key=lambda c: hashlib.sha256(f"T1:s1:{c}".encode()).hexdigest())
    assert pairs[0].excluded == first
    assert pairs[1].excluded == ({"e1", "e2"} - {first}).pop()
    assert pairs[2].excluded is None  # nothing left for the third selected hypothesis


def test_sign_flip_p_agrees_with_the_exact_enumeration_and_holm_covers_three_scores():
    rng = np.random.default_rng(8)
    pairs = [
        (
            task,
            {d: float(rng.integers(3, 11)) for d in analysis.DIMENSIONS},
            {d: float(rng.integers(1, 9)) for d in analysis.DIMENSIONS},
        )
        for task in range(6)
        for _ in range(2)
    ]
    result = analysis.originality_comparison(pairs, resamples=500, seed=1)
    for index, dimension in enumerate(result.dimensions):
        name = analysis.DIMENSIONS[index]
        differences = np.asarray([s[name] - e[name] for _, s, e in pairs])
        flips = np.asarray(list(itertools.product((1, -1), repeat=differences.size)))
        exact = np.mean(np.abs(flips @ differences) / differences.size >= abs(differences.mean()) - 1e-12)
        assert dimension.p_value == pytest.approx(exact, abs=0.015)
        assert dimension.difference.value == pytest.approx(differences.mean())
    assert [d.holm_p_value for d in result.dimensions] == pytest.approx(
        list(multipletests([d.p_value for d in result.dimensions], method="holm")[1])
    )


def test_an_incomplete_pair_is_left_out_and_counted():
    full = dict.fromkeys(analysis.DIMENSIONS, 5.0)
    result = analysis.originality_comparison(
        [("t", full, full), ("t", full, None), ("t", {"clarity": 3.0}, full)], resamples=0
    )
    assert (result.pairs, result.incomplete_pairs) == (1, 2)


def test_hint_correlation_equals_scipy_spearman_and_its_permutation_test():
    rng = np.random.default_rng(6)
    hints = rng.integers(0, 4, size=30).astype(float)
    rates = np.clip(0.05 * hints + rng.normal(0.15, 0.1, size=30), 0, 1)
    tasks = [(t, h, r) for t, (h, r) in enumerate(zip(hints, rates, strict=True))]
    result = analysis.hint_correlation(tasks, resamples=400, seed=3)
    assert result.rho.value == pytest.approx(stats.spearmanr(hints, rates).statistic)
    reference = stats.permutation_test(
        (hints, rates),
        lambda x, y: stats.spearmanr(x, y).statistic,
        permutation_type="pairings",
        n_resamples=9_999,
        random_state=1,
    )
    assert result.p_value == pytest.approx(reference.pvalue, abs=0.01)
    looped = []
    for drawn in resample_indices(30, 400, 3):
        x, y = hints[drawn], rates[drawn]
        looped.append(stats.spearmanr(x, y).statistic if np.ptp(x) and np.ptp(y) else np.nan)
    looped = np.asarray(looped)
    low, high = np.percentile(looped[np.isfinite(looped)], [2.5, 97.5])
    assert (result.rho.low, result.rho.high) == (pytest.approx(low), pytest.approx(high))
    assert result.permutations == 99_999


# --- И/М.7: the task-selection order ---


def test_candidates_are_ordered_by_sha256_of_the_salt_followed_by_the_pubmed_id():
    salt = "omega-creativity-2026-10-11"
    pmids = [str(40000000 + 37 * i) for i in range(212)]
    order = analysis.candidate_order(salt, pmids)
    assert order == sorted(pmids, key=lambda p: hashlib.sha256((salt + p).encode("utf-8")).hexdigest())
    assert (
        analysis.candidate_key(salt, "41234567") == hashlib.sha256(b"omega-creativity-2026-10-1141234567").hexdigest()
    )
    exclusions = [(str(50000000 + i), "review" if i % 3 else "no finding") for i in range(72)]
    check = analysis.task_selection_check(
        salt=salt, found=284, exclusions=exclusions, candidates=list(enumerate(order, 1)), final=order[:50]
    )
    assert check.order_reproduces and check.counts_add_up  # И: 284 found = 72 excluded + 212 candidates
    assert (check.excluded, check.candidates, check.final) == (72, 212, 50)
    assert {e.reason: e.records for e in check.exclusion_reasons} == {"review": 48, "no finding": 24}


def test_a_stored_order_that_differs_is_reported_at_its_first_difference():
    salt = "salt"
    order = analysis.candidate_order(salt, ["11", "22", "33", "44"])
    swapped = [order[0], order[2], order[1], order[3]]
    check = analysis.task_selection_check(
        salt=salt, found=5, exclusions=[], candidates=list(enumerate(swapped, 1)), final=["99"]
    )
    assert not check.order_reproduces and not check.counts_add_up
    assert (check.first_mismatch.position, check.first_mismatch.stored) == (2, order[2])
    assert check.final_not_candidates == ("99",)


def test_the_trimmed_list_check_draws_from_the_exact_distribution():
    trimmed = analysis.trim_to_group_length([True] * 25 + [False] * 28, 19, group_matches=14)
    assert trimmed.repeats == 100_000
    assert trimmed.simulated_mean == pytest.approx(stats.hypergeom(53, 25, 19).mean(), abs=0.03)
    assert (trimmed.simulated_low, trimmed.simulated_high) == (6, 12)
    assert math.isclose(trimmed.exact.mean, 8.962264150943396)

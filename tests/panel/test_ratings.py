"""Ratings from pairwise critique: the two-player TrueSkill update checked against a hand computation (scipy's normal
distribution) and against the trueskill package's own rate_1vs1, abstentions, the conservative statistic, tie-aware
ranks within a stratum, and the choice of informative pairs."""

import math
import random

import pytest
import trueskill
from scipy.stats import norm, rankdata

from reviewapp.panel import ratings as R

MU, SIGMA, BETA, TAU = 25.0, 25 / 3, 25 / 6, 25 / 300
# trueskill computes the normal distribution with its own approximations (an erfc series and a rational ppf for the
# draw margin), which agree with scipy's to about 1e-6 relative; against the package itself the replay agrees to 1e-9.
# A wrong formula would be off by far more than 1e-3.
HAND = 1e-5


def hand_update(winner, loser, drawn=False):
    """Herbrich et al.'s two-player update, written out: the priors widened by τ, then the truncated-Gaussian
    moments of the performance difference (draw margin ε from the draw probability 0.10)."""
    (mu_w, sigma_w), (mu_l, sigma_l) = winner, loser
    var_w, var_l = sigma_w**2 + TAU**2, sigma_l**2 + TAU**2
    c = math.sqrt(2 * BETA**2 + var_w + var_l)
    epsilon = norm.ppf((0.10 + 1) / 2) * math.sqrt(2) * BETA
    t, e = (mu_w - mu_l) / c, epsilon / c
    if drawn:
        mass = norm.cdf(e - t) - norm.cdf(-e - t)
        v = (norm.pdf(-e - t) - norm.pdf(e - t)) / mass
        w = v**2 + ((e - t) * norm.pdf(e - t) + (e + t) * norm.pdf(-e - t)) / mass
    else:
        v = norm.pdf(t - e) / norm.cdf(t - e)
        w = v * (v + t - e)
    new_w = (mu_w + var_w / c * v, math.sqrt(var_w * (1 - var_w / c**2 * w)))
    new_l = (mu_l - var_l / c * v, math.sqrt(var_l * (1 - var_l / c**2 * w)))
    return new_w, new_l


def test_the_environment_is_trueskills_default():
    assert R.parameters() == {
        "mu": 25.0,
        "sigma": pytest.approx(25 / 3),
        "beta": pytest.approx(25 / 6),
        "tau": pytest.approx(25 / 300),
        "draw_probability": 0.10,
        "kappa": 2,
    }


@pytest.mark.parametrize(
    "a, b",
    [((MU, SIGMA), (MU, SIGMA)), ((30.0, 4.0), (22.0, 6.5)), ((18.0, 2.0), (31.0, 7.0)), ((25.0, 1.0), (25.5, 1.2))],
)
def test_a_win_matches_the_hand_computation(a, b):
    after_a, after_b = R.rate_pair(R.Rating(*a), R.Rating(*b), R.A)
    (mu_a, sigma_a), (mu_b, sigma_b) = hand_update(a, b)
    assert (after_a.mu, after_a.sigma, after_b.mu, after_b.sigma) == pytest.approx(
        (mu_a, sigma_a, mu_b, sigma_b), abs=HAND
    )
    # b winning is the mirror image.
    after_a, after_b = R.rate_pair(R.Rating(*a), R.Rating(*b), R.B)
    (mu_b, sigma_b), (mu_a, sigma_a) = hand_update(b, a)
    assert (after_a.mu, after_a.sigma, after_b.mu, after_b.sigma) == pytest.approx(
        (mu_a, sigma_a, mu_b, sigma_b), abs=HAND
    )


@pytest.mark.parametrize("a, b", [((MU, SIGMA), (MU, SIGMA)), ((30.0, 4.0), (22.0, 6.5)), ((18.0, 2.0), (31.0, 7.0))])
def test_a_tie_matches_the_hand_computation(a, b):
    after_a, after_b = R.rate_pair(R.Rating(*a), R.Rating(*b), R.TIE)
    (mu_a, sigma_a), (mu_b, sigma_b) = hand_update(a, b, drawn=True)
    assert (after_a.mu, after_a.sigma, after_b.mu, after_b.sigma) == pytest.approx(
        (mu_a, sigma_a, mu_b, sigma_b), abs=HAND
    )


def test_the_first_win_from_the_priors_has_the_known_values():
    winner, loser = R.rate_pair(R.Rating(), R.Rating(), R.A)
    # trueskill's documented example: 1 vs 1 from the default priors.
    assert (winner.mu, winner.sigma) == pytest.approx((29.396, 7.171), abs=1e-3)
    assert (loser.mu, loser.sigma) == pytest.approx((20.604, 7.171), abs=1e-3)
    assert winner.comparisons == loser.comparisons == 1


def test_a_long_replay_equals_the_trueskill_package_step_by_step():
    env = trueskill.TrueSkill()
    rng = random.Random(7)
    log = [(*rng.sample(range(12), 2), rng.choice(R.OUTCOMES)) for _ in range(600)]
    expected = {k: env.create_rating() for k in range(12)}
    for a, b, outcome in log:
        if outcome == R.A:
            expected[a], expected[b] = trueskill.rate_1vs1(expected[a], expected[b], env=env)
        elif outcome == R.B:
            expected[b], expected[a] = trueskill.rate_1vs1(expected[b], expected[a], env=env)
        elif outcome == R.TIE:
            expected[a], expected[b] = trueskill.rate_1vs1(expected[a], expected[b], drawn=True, env=env)
    replayed = R.replay(log)
    for key, rating in replayed.items():
        assert (rating.mu, rating.sigma) == pytest.approx((expected[key].mu, expected[key].sigma), abs=1e-9)


def test_insufficient_is_an_abstention_that_changes_nothing():
    log = [("p", "q", R.A), ("p", "r", R.INSUFFICIENT), ("q", "r", R.TIE), ("r", "p", R.INSUFFICIENT)]
    with_abstentions = R.replay(log)
    without = R.replay([entry for entry in log if entry[2] != R.INSUFFICIENT])
    assert with_abstentions == without
    assert with_abstentions["p"].comparisons == 1 and with_abstentions["r"].comparisons == 1
    only_abstentions = R.replay([("x", "y", R.INSUFFICIENT)])
    assert only_abstentions == {}
    assert R.rate_pair(R.Rating(), R.Rating(), R.INSUFFICIENT) == (R.Rating(), R.Rating())


def test_the_order_of_the_log_matters_and_is_kept():
    forward = R.replay([("a", "b", R.A), ("b", "c", R.A), ("c", "a", R.A)])
    backward = R.replay([("c", "a", R.A), ("b", "c", R.A), ("a", "b", R.A)])
    assert forward["a"].mu != pytest.approx(backward["a"].mu, abs=1e-6)


def test_conservative_statistic_is_mu_minus_two_sigma():
    rating = R.Rating(mu=30.0, sigma=2.5)
    assert rating.conservative == 25.0
    assert R.Rating().conservative == pytest.approx(25 - 50 / 3)


def test_ranks_are_tie_aware_and_in_zero_to_one():
    assert R.ranks({"a": 1.0, "b": 2.0, "c": 3.0}) == {"a": 0.0, "b": 0.5, "c": 1.0}
    # Two tied at the top: lower count 1, tied 2 → (1 + ½ × 1) / 2.
    assert R.ranks({"a": 1.0, "b": 3.0, "c": 3.0}) == {"a": 0.0, "b": 0.75, "c": 0.75}
    assert R.ranks({"a": 2.0, "b": 2.0, "c": 2.0, "d": 2.0}) == dict.fromkeys("abcd", 0.5)
    assert R.ranks({"only": 7.0}) == {"only": 0.5}
    # Float noise of equal histories counts as a tie.
    assert R.ranks({"a": 0.1 + 0.2, "b": 0.3}) == {"a": 0.5, "b": 0.5}


def test_only_rated_members_are_ranked_and_counted_in_n():
    """Checked against scipy's average ranks of the rated members alone: r = (average rank − 1) / (n − 1)."""
    rng = random.Random(24)
    stratum = {}
    for index in range(40):
        compared = rng.random() < 0.6
        # Coarse values make ties; the unrated hold the prior, whose s sits among the rated ones.
        stratum[index] = R.Rating(mu=rng.choice([20.0, 25.0, 30.0]), sigma=rng.choice([2.0, 4.0]), comparisons=3)
        if not compared:
            stratum[index] = R.Rating()
    rated = [key for key, rating in stratum.items() if rating.comparisons > 0]
    expected = (rankdata([stratum[key].conservative for key in rated], method="average") - 1) / (len(rated) - 1)
    found = R.stratum_ranks(stratum)
    assert set(found) == set(rated) and len(rated) < len(stratum)
    assert [found[key] for key in rated] == pytest.approx(list(expected))
    # One rated member among unrated ones is a stratum of one: ½. No rated member: no ranks at all.
    assert R.stratum_ranks({"x": R.Rating(30, 2, comparisons=1), "y": R.Rating(), "z": R.Rating()}) == {"x": 0.5}
    assert R.stratum_ranks({"y": R.Rating(), "z": R.Rating()}) == {}


def test_next_pairs_stay_within_a_stratum_are_disjoint_and_respect_budget_and_history():
    strata = {"t1": ["a", "b", "c", "d"], "t2": ["e"], "t3": ["f", "g"]}
    ratings = {"a": R.Rating(30, 1), "b": R.Rating(29.9, 1), "c": R.Rating(10, 8), "d": R.Rating(11, 8)}
    budget = dict.fromkeys("abcdefg", 1)
    pairs = R.next_pairs(strata, ratings, budget_left=budget, compared={frozenset("fg")})
    members = [member for pair in pairs for member in pair]
    assert len(members) == len(set(members))
    assert all({x, y} <= set(strata["t1"]) for x, y in pairs)  # the singleton e and the compared f–g get nothing
    # Uncertain, close proposals first: c and d (σ 8) before a and b (σ 1).
    assert set(pairs[0]) == {"c", "d"}
    assert R.next_pairs(
        strata, ratings, budget_left=dict.fromkeys("abcdefg", 0) | {"f": 1, "g": 1}, compared=set()
    ) == [("f", "g")]
    assert R.next_pairs({"t": ["f", "g"]}, {}, budget_left={"f": 1, "g": 1}, compared={frozenset("fg")}) == []
    assert R.next_pairs({"t": ["f", "g"]}, {}, budget_left={"f": 1, "g": 1}, compared={frozenset("fg")}, repeat=True)
    assert R.next_pairs({"t": ["f", "g"]}, {}, budget_left={"f": 0, "g": 1}, compared=set()) == []


def test_the_shown_order_is_a_fair_reproducible_coin():
    draws = [R.shown_first(99, a, a + 1) for a in range(2000)]
    assert draws == [R.shown_first(99, a, a + 1) for a in range(2000)]
    assert 0.45 < sum(draws) / len(draws) < 0.55
    assert draws != [R.shown_first(100, a, a + 1) for a in range(2000)]

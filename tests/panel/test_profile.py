"""The hypothesis profile's rules at every edge: medians need two known scores, Q needs three reviews, two eligible
votes and all eight medians, unknown is never a number and inapplicable is kept apart from it."""

import pytest

from reviewapp.panel import profile as rules
from reviewapp.panel.prompts import parse_review
from tests.panel.support import review_reply

ALL_FIVE = dict.fromkeys(rules.DIMENSION_KEYS, 5)


def review(role, scores=None, eligible="true", failed=False):
    if failed:
        return rules.RoleReview(role=role, failed=True, eligible="", scores={})
    return rules.RoleReview(role=role, failed=False, eligible=eligible, scores=ALL_FIVE | (scores or {}))


def three(*overrides):
    return [review(role, **override) for role, override in zip(rules.ROLES, overrides, strict=True)]


def test_weights_are_the_protocols_and_sum_to_100():
    assert rules.WEIGHTS == {
        "importance": 20,
        "novelty": 20,
        "grounding": 15,
        "falsifiability": 10,
        "data_resolvability": 10,
        "feasibility": 10,
        "alternatives": 10,
        "actionability": 5,
    }


@pytest.mark.parametrize(
    "scores, median",
    [
        ([7], None),  # one known score: no median
        ([7, "unknown", "unknown"], None),
        ([7, 4], 5.5),  # two known: their mean (the median of two)
        ([7, 4, "unknown"], 5.5),
        ([7, 4, "inapplicable"], 5.5),
        ([7, 4, 10], 7.0),
        ([1, 1, 10], 1.0),
        (["unknown", "inapplicable", 3], None),
        ([], None),
    ],
)
def test_a_median_needs_two_known_scores(scores, median):
    assert rules.dimension_median(scores) == median


def test_zero_or_a_bool_is_never_a_known_score():
    assert rules.dimension_median([0, 0, 6]) is None
    assert rules.dimension_median([True, True]) is None
    assert not rules.is_known(0) and not rules.is_known(11) and not rules.is_known(True) and rules.is_known(10)


def test_q_is_the_weighted_mean_of_the_medians():
    scores = {"importance": 8, "novelty": 6, "grounding": 7, "falsifiability": 4}
    profile = rules.profile_of(three({"scores": scores}, {"scores": scores}, {}))
    expected = (20 * 8 + 20 * 6 + 15 * 7 + 10 * 4 + 10 * 5 + 10 * 5 + 10 * 5 + 5 * 5) / 100
    assert profile.q == pytest.approx(expected)
    assert profile.medians["importance"] == 8 and profile.medians["feasibility"] == 5
    assert profile.panel_complete


def test_two_eligible_of_three_is_enough_one_is_not():
    assert rules.profile_of(three({}, {}, {"eligible": "false"})).q == 5.0
    assert rules.profile_of(three({}, {}, {"eligible": "unknown"})).q == 5.0
    one = rules.profile_of(three({}, {"eligible": "false"}, {"eligible": "unknown"}))
    assert one.q is None and one.coverage.eligible_votes == 1 and one.coverage.medians_known == 8


def test_a_failed_role_leaves_q_absent_even_with_all_medians_and_votes():
    profile = rules.profile_of(three({}, {}, {"failed": True}))
    assert all(value == 5.0 for value in profile.medians.values())
    assert profile.q is None
    assert profile.coverage.reviews == 2 and profile.coverage.failed_roles == ("methods_reviewer",)
    assert not profile.panel_complete


def test_two_reviews_only_give_no_q():
    profile = rules.profile_of([review("rubric_judge"), review("domain_scientist")])
    assert profile.q is None and profile.coverage.reviews == 2 and profile.coverage.medians_known == 8


def test_a_dimension_without_a_median_makes_q_absent_and_says_why():
    unknown = {"novelty": "unknown"}
    profile = rules.profile_of(three({"scores": unknown}, {"scores": unknown}, {}))
    assert profile.medians["novelty"] is None and profile.q is None
    assert profile.coverage.medians_known == 7 and profile.coverage.inapplicable == ()
    inapplicable = {"actionability": "inapplicable"}
    profile = rules.profile_of(three({"scores": inapplicable}, {"scores": inapplicable}, {}))
    assert profile.medians["actionability"] is None and profile.q is None
    assert profile.coverage.inapplicable == ("actionability",)


def test_unknown_and_inapplicable_never_lower_a_median():
    # Were "unknown" a 0, the median of (0, 0, 9) would be 0; it is left out and one known score gives none.
    profile = rules.profile_of(
        three(
            {"scores": {"grounding": "unknown"}},
            {"scores": {"grounding": "inapplicable"}},
            {"scores": {"grounding": 9}},
        )
    )
    assert profile.medians["grounding"] is None
    profile = rules.profile_of(
        three({"scores": {"grounding": "unknown"}}, {"scores": {"grounding": 9}}, {"scores": {"grounding": 7}})
    )
    assert profile.medians["grounding"] == 8.0


def test_q_is_never_computed_from_a_zero():
    """A reply scoring 0 is not a valid review (it is asked once more), so no 0 reaches a median or Q."""
    reading = parse_review(review_reply({"novelty": 0}))
    assert not reading.complete and not reading.parsed
    assert reading.problems == ['novelty: 0 is not a whole number 1–10, "unknown" or "inapplicable"']
    # And were a stored 0 ever to appear, it would count as no score, not as a low one.
    profile = rules.profile_of(three({"scores": {"novelty": 0}}, {"scores": {"novelty": 0}}, {}))
    assert profile.medians["novelty"] is None and profile.q is None


@pytest.mark.parametrize(
    "reply, problem",
    [
        ("I think it is good.", "not_json"),
        ('{"eligible": true, "scores": {}, "rationale": "x"}', "importance has no score"),
        (review_reply({"importance": 11}), "importance: 11 is not"),
        (review_reply({"importance": 7.5}), "importance: 7.5 is not"),
        (review_reply({"importance": "7"}), "importance: '7' is not"),
        (review_reply({"importance": None}), "importance: None is not"),
        (review_reply(eligible="maybe"), "eligible is 'maybe'"),
        (review_reply(rationale=""), "no rationale"),
    ],
)
def test_malformed_reviews_are_not_read(reply, problem):
    reading = parse_review(reply)
    assert not reading.complete
    assert any(problem in text for text in reading.problems), reading.problems


def test_a_valid_review_keeps_the_words_as_words():
    reading = parse_review(
        "Here is my review:\n```json\n"
        + review_reply({"novelty": "Unknown", "actionability": "inapplicable"}, eligible="unknown")
        + "\n```"
    )
    assert reading.complete
    assert reading.value["eligible"] == "unknown"
    assert (
        reading.value["scores"]["novelty"] == "unknown" and reading.value["scores"]["actionability"] == "inapplicable"
    )
    assert reading.value["scores"]["importance"] == 5


def test_revision_summary_reports_each_rate_and_delta_q_only_where_both_exist():
    summary = rules.revision_summary(
        [
            "substantive_progress",
            "necessary_repair",
            "marginal_repetition",
            "insufficient_evidence",
            "substantive_progress",
        ],
        [0.5, None, -0.25, None, 1.0],
    )
    assert summary.judged == 5
    assert summary.substantive_progress_rate == pytest.approx(0.4)
    assert summary.useful_step_rate == pytest.approx(0.6)
    assert summary.repetition_rate == pytest.approx(0.2)
    assert summary.insufficient_evidence_rate == pytest.approx(0.2)
    assert summary.delta_q_pairs == 3 and summary.mean_delta_q == pytest.approx(1.25 / 3)
    assert rules.delta_q(6.0, None) is None and rules.delta_q(6.5, 6.0) == 0.5
    assert rules.revision_summary([], []).substantive_progress_rate is None

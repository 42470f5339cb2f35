"""Calibration of the panel against human reviews: each figure equals a direct scipy computation on the pairs it
should use (human "can't judge" and AI unknown left out), intervals come from whole-task resamples, and the cohort's
calibration reads submitted reviews only."""

import numpy as np
import pytest
from django.utils import timezone
from scipy.stats import spearmanr

from reviewapp.models import Review
from reviewapp.panel.calibration import CLOSEST_CRITERION, Unit, calibration, resampled_spearman, spearman
from reviewapp.panel.selectors import calibration_units, cohort_calibration
from reviewapp.panel.services.critique import comparisons_import
from reviewapp.panel.services.panel import panel_start_for_cohort
from reviewapp.protocol import CRITERION_FIELDS
from reviewapp.services import jobs
from tests import factories
from tests.panel.support import make_cohort, panel_roster, proposal, review_reply


def unit(task, q, overall, *, s=None, medians=None, criteria=None, recommendations=None):
    return Unit(
        task=task,
        q=q,
        conservative=s,
        medians=medians or {},
        overall=overall,
        recommendations=recommendations or ["revise"] * len(overall),
        criteria={criterion: [] for criterion in CRITERION_FIELDS} | (criteria or {}),
    )


def test_q_against_the_human_overall_score_equals_scipy():
    rng = np.random.default_rng(5)
    units = [unit(f"t{i % 7}", float(rng.uniform(2, 9)), list(rng.integers(1, 6, size=2))) for i in range(60)]
    units.append(unit("t1", None, [5]))  # no Q: left out
    units.append(unit("t2", 6.0, []))  # no human review: left out
    result = calibration(units, resamples=300, seed=1)
    expected = spearmanr([u.q for u in units[:60]], [np.mean(u.overall) for u in units[:60]]).statistic
    assert result.q_vs_overall.estimate == pytest.approx(expected, abs=1e-12)
    assert result.q_vs_overall.n == 60 and result.proposals == 61 and result.tasks == 7
    assert result.q_vs_overall.low <= result.q_vs_overall.estimate <= result.q_vs_overall.high


def test_dimension_pairs_leave_out_unknown_and_cant_judge():
    units = [
        unit("t1", 5.0, [3], medians={"novelty": 4.0}, criteria={"advance_over_known_work": [2, 3]}),
        unit("t1", 5.0, [3], medians={"novelty": 6.0}, criteria={"advance_over_known_work": [4]}),
        unit("t2", 5.0, [3], medians={"novelty": 7.5}, criteria={"advance_over_known_work": [3, 3]}),
        unit("t2", 5.0, [3], medians={"novelty": None}, criteria={"advance_over_known_work": [1]}),  # AI unknown
        unit("t3", 5.0, [3], medians={"novelty": 2.0}, criteria={"advance_over_known_work": []}),  # all can't judge
        unit("t3", 5.0, [3], medians={"novelty": 3.0}, criteria={"advance_over_known_work": [1]}),
    ]
    result = calibration(units, resamples=200, seed=2)
    figure = result.dimensions["novelty"]
    assert figure.n == 4
    assert figure.estimate == pytest.approx(spearmanr([4.0, 6.0, 7.5, 3.0], [2.5, 4, 3, 1]).statistic)
    assert set(result.dimensions) == set(CLOSEST_CRITERION)
    assert CLOSEST_CRITERION["falsifiability"] == "informative_results"
    assert result.dimensions["importance"].estimate is None and result.dimensions["importance"].n == 0


def test_s_within_tasks_is_the_weighted_mean_of_per_task_spearman():
    units = []
    rng = np.random.default_rng(9)
    for task, size in (("t1", 5), ("t2", 4), ("t3", 2)):
        for _ in range(size):
            units.append(unit(task, None, list(rng.integers(1, 6, size=2)), s=float(rng.normal(10, 3))))
    units.append(unit("t1", None, [4], s=None))  # never compared: left out
    result = calibration(units, resamples=200, seed=3).s_vs_overall_within_tasks
    per_task = []
    for task, size in (("t1", 5), ("t2", 4)):
        members = [u for u in units if u.task == task and u.conservative is not None]
        rho = spearmanr([u.conservative for u in members], [np.mean(u.overall) for u in members]).statistic
        per_task.append((size, rho))
    expected = sum(size * rho for size, rho in per_task) / sum(size for size, _ in per_task)
    assert result.estimate == pytest.approx(expected)
    assert result.n == 9 and result.extra["tasks"] == 2  # t3 has only two proposals


def test_reject_shares_at_the_two_ends_of_q():
    recommendations = [
        ["reject", "reject"],
        ["reject", "revise"],
        ["revise", "revise"],
        ["defer", "revise"],
        ["revise", "revise"],
        ["prioritize", "revise"],
        ["prioritize", "reject"],
        ["prioritize", "prioritize"],
    ]
    units = [unit("t1", float(q), [3, 3], recommendations=recs) for q, recs in enumerate(recommendations, start=1)]
    result = calibration(units, resamples=100, seed=4)
    q = np.arange(1, 9)
    top, bottom = q >= np.quantile(q, 0.75), q <= np.quantile(q, 0.25)
    assert result.reject_top_quarter.n == top.sum() == 2 and result.reject_bottom_quarter.n == bottom.sum() == 2
    assert result.reject_top_quarter.estimate == pytest.approx(1 / 4)
    assert result.reject_bottom_quarter.estimate == pytest.approx(3 / 4)


def test_resampled_coefficients_equal_spearman_of_the_repeated_rows():
    rng = np.random.default_rng(11)
    x = rng.integers(1, 8, size=40).astype(float)
    y = x + rng.normal(size=40)
    weights = rng.integers(0, 3, size=(25, 40))
    fast = resampled_spearman(x, y, weights)
    slow = [spearman(np.repeat(x, row), np.repeat(y, row)) for row in weights]
    assert fast == pytest.approx(np.array(slow), abs=1e-12, nan_ok=True)


def test_undefined_figures_say_so():
    result = calibration([unit("t1", 5.0, [3]), unit("t1", 5.0, [4])], resamples=50, seed=1)
    assert result.q_vs_overall.estimate is None  # Q constant: Spearman undefined
    empty = calibration([], resamples=50, seed=1)
    assert empty.proposals == 0 and empty.q_vs_overall.estimate is None and empty.q_vs_overall.n == 0


def test_a_cohorts_calibration_reads_its_panel_ratings_and_submitted_reviews(
    db, server, script, fast_retries, coordinator
):
    panel_roster(server.base_url)
    cohort = make_cohort([proposal(f"p{n}", "T-A") for n in range(1, 7)], user=coordinator)
    for n in range(1, 7):
        for role in ("rubric_judge", "domain_scientist", "methods_reviewer"):
            script.reviews[(role, proposal(f"p{n}", "T-A")["statement"])] = [
                review_reply(dict.fromkeys(("importance", "novelty"), n + 2))
            ]
    jobs.job_run(job_id=panel_start_for_cohort(cohort=cohort, user=coordinator).pk)
    comparisons_import(
        cohort=cohort,
        rows=[
            {"a": "p6", "b": "p1", "outcome": "a"},
            {"a": "p5", "b": "p2", "outcome": "a"},
            {"a": "p4", "b": "p3", "outcome": "a"},
        ],
        user=coordinator,
    )
    reviewer = factories.make_user("reviewer")
    answers = {"recommendation": "revise", "flaw_verdict": "absent", **dict.fromkeys(CRITERION_FIELDS, "cant_judge")}
    for number, item in enumerate(cohort.proposals.order_by("external_id"), start=1):
        assignment = factories.make_assignment(cohort, reviewer, item)
        status = Review.Status.SUBMITTED if number != 6 else Review.Status.DRAFT
        Review.objects.create(
            assignment=assignment,
            status=status,
            overall=min(5, number),
            submitted_at=timezone.now(),
            **answers | {"importance": str(min(4, number))},
        )
    units = calibration_units(cohort)
    assert len(units) == 5  # p6's review is a draft
    result = cohort_calibration(cohort)
    assert result.q_vs_overall.estimate == pytest.approx(1.0) and result.q_vs_overall.n == 5
    assert result.dimensions["importance"].estimate == pytest.approx(
        spearmanr([3, 4, 5, 6, 7], [1, 2, 3, 4, 4]).statistic
    )
    assert result.dimensions["novelty"].n == 0  # every "advance over known work" was can't judge
    assert cohort_calibration(cohort) is not None  # cached per data

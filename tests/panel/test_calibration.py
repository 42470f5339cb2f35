"""Calibration of the panel against human reviews: each figure equals a direct scipy computation on the pairs it
should use (human "can't judge" and AI unknown left out), intervals come from whole-task resamples, and the cohort's
calibration reads submitted reviews only."""

import csv
import io

import numpy as np
import pytest
from django.urls import reverse
from django.utils import timezone
from scipy.stats import spearmanr

from reviewapp.analysis._resampling import resample_indices
from reviewapp.models import Review
from reviewapp.panel.calibration import (
    CLOSEST_CRITERION,
    ReferenceUnit,
    Unit,
    calibration,
    reference_calibration,
    resampled_spearman,
    spearman,
)
from reviewapp.panel.profile import DIMENSION_KEYS
from reviewapp.panel.selectors import calibration_units, cohort_calibration
from reviewapp.panel.services.critique import comparisons_import
from reviewapp.panel.services.panel import panel_start_for_cohort
from reviewapp.protocol import CRITERION_FIELDS
from reviewapp.services import jobs
from tests import factories
from tests.api_schema_support import api_schema, assert_conforms
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


# Development diagnostics against the fresh-context reference --------------------------------------------------------

WEIGHT_LIST = [20, 20, 15, 10, 10, 10, 10, 5]  # importance … actionability, as the seed gives them


def scores_of(values) -> dict:
    return dict(zip(DIMENSION_KEYS, values, strict=True))


def test_each_role_against_the_reference_equals_scipy_and_a_hand_computation():
    rng = np.random.default_rng(24)
    units = []
    for index in range(30):
        reference = [int(v) for v in rng.integers(1, 11, size=8)]
        roles = {
            role: [int(min(10, max(1, v + rng.integers(-2, 3)))) for v in reference]
            for role in ("rubric_judge", "domain_scientist", "methods_reviewer")
        }
        if index % 7 == 0:
            roles["methods_reviewer"][2] = "unknown"  # no weighted score; grounding left out of its pairs
        if index % 11 == 0:
            reference[7] = "inapplicable"  # the reference's weighted score is undefined
        if index % 5 == 0:
            del roles["domain_scientist"]  # that role failed
        units.append(
            ReferenceUnit(
                task=f"t{index % 6}",
                reference=scores_of(reference),
                roles={role: scores_of(values) for role, values in roles.items()},
            )
        )
    result = reference_calibration(units, resamples=400, seed=7)
    assert (
        result.proposals == 30
        and result.tasks == 6
        and set(result.roles)
        == {
            "rubric_judge",
            "domain_scientist",
            "methods_reviewer",
        }
    )

    def weighted(values):
        return None if any(isinstance(v, str) for v in values) else np.dot(WEIGHT_LIST, values) / 100

    for role, agreement in result.roles.items():
        with_role = [unit for unit in units if role in unit.roles]
        assert agreement.reviews == len(with_role)
        pairs = [
            (weighted(list(unit.roles[role].values())), weighted(list(unit.reference.values()))) for unit in with_role
        ]
        pairs = [(x, y) for x, y in pairs if x is not None and y is not None]
        assert agreement.weighted.n == len(pairs)
        assert agreement.weighted.estimate == pytest.approx(spearmanr(*zip(*pairs, strict=True)).statistic)
        for key in DIMENSION_KEYS:
            known = [
                (unit.roles[role][key], unit.reference[key])
                for unit in with_role
                if not isinstance(unit.roles[role][key], str) and not isinstance(unit.reference[key], str)
            ]
            figure = agreement.dimensions[key]
            assert figure.n == len(known)
            assert figure.estimate == pytest.approx(spearmanr(*zip(*known, strict=True)).statistic)
        differences = [
            abs(unit.roles[role][key] - unit.reference[key])
            for unit in with_role
            for key in DIMENSION_KEYS
            if not isinstance(unit.roles[role][key], str) and not isinstance(unit.reference[key], str)
        ]
        assert agreement.absolute_difference.estimate == pytest.approx(np.mean(differences))
        assert agreement.absolute_difference.extra["pairs"] == len(differences)
        assert agreement.weighted.low <= agreement.weighted.estimate <= agreement.weighted.high


def test_the_reference_intervals_resample_whole_tasks():
    """The interval of the mean absolute difference, recomputed by drawing the documented task indices and
    repeating each task's proposals."""
    units = [
        ReferenceUnit(
            task=f"t{i % 4}", reference=scores_of([5] * 8), roles={"rubric_judge": scores_of([5 + i % 3] * 8)}
        )
        for i in range(12)
    ]
    result = reference_calibration(units, resamples=200, seed=3).roles["rubric_judge"].absolute_difference
    tasks = [f"t{i}" for i in range(4)]
    per_task = {task: [i % 3 for i in range(12) if f"t{i % 4}" == task] for task in tasks}
    values = []
    for drawn in resample_indices(4, 200, 3):
        differences = [d for index in drawn for d in per_task[tasks[index]]]
        values.append(np.mean(differences))
    assert result.estimate == pytest.approx(1.0)
    assert (result.low, result.high) == pytest.approx(tuple(np.percentile(values, [2.5, 97.5])))


def test_without_reference_reviews_every_diagnostic_is_undefined():
    result = reference_calibration([], resamples=50, seed=1)
    assert result.proposals == 0
    for agreement in result.roles.values():
        assert agreement.weighted.estimate is None and agreement.absolute_difference.estimate is None
        assert agreement.reviews == 0


def test_a_cohorts_reference_diagnostics_in_the_api_and_on_the_page(
    db, server, script, fast_retries, coordinator, analyst, client
):
    panel_roster(server.base_url, roles=("rubric_judge", "domain_scientist", "methods_reviewer", "reference_reviewer"))
    cohort = make_cohort([proposal(f"p{n}", "T-A" if n <= 3 else "T-B") for n in range(1, 7)], user=coordinator)
    scores = {}
    for n in range(1, 7):
        claim = proposal(f"p{n}", "")["statement"]
        scores[n] = {
            "rubric_judge": dict.fromkeys(DIMENSION_KEYS, n + 2),
            "methods_reviewer": {**dict.fromkeys(DIMENSION_KEYS, 5), "importance": 8 - n},
            "reference_reviewer": {**dict.fromkeys(DIMENSION_KEYS, 5), "importance": n},
        }
        for role, values in scores[n].items():
            script.reviews[(role, claim)] = [review_reply(values)]
    script.reviews[("reference_reviewer", proposal("p6", "")["statement"])] = ["No JSON here."]
    jobs.job_run(job_id=panel_start_for_cohort(cohort=cohort, user=coordinator).pk)

    client.force_login(analyst)
    body = client.get(f"/api/v1/cohorts/{cohort.pk}/calibration").json()
    assert_conforms(api_schema(), "/api/v1/cohorts/{cohort_id}/calibration", body)
    reference = body["reference"]
    assert (reference["configured"], reference["reviewed"], reference["failed"]) == (True, 5, 1)
    assert reference["models"] == ["Panel model"] and reference["tasks"] == 2 and reference["seed"] == 20261026
    roles = {row["role"]: row for row in reference["roles"]}
    assert list(roles) == ["rubric_judge", "domain_scientist", "methods_reviewer"]
    # Rubric judge: weighted n + 2 against 0.2 n + 4 (importance n, the rest 5): ρ = 1, by hand and by scipy.
    assert roles["rubric_judge"]["weighted"]["estimate"] == pytest.approx(
        spearmanr([n + 2 for n in range(1, 6)], [0.2 * n + 4 for n in range(1, 6)]).statistic
    )
    assert roles["rubric_judge"]["weighted"]["n"] == 5
    differences = [
        abs(scores[n]["rubric_judge"][k] - scores[n]["reference_reviewer"][k])
        for n in range(1, 6)
        for k in DIMENSION_KEYS
    ]
    assert roles["rubric_judge"]["absolute_difference"]["estimate"] == pytest.approx(np.mean(differences))
    assert roles["rubric_judge"]["absolute_difference"]["pairs"] == 40
    # Methods reviewer: importance 8 − n against n.
    assert roles["methods_reviewer"]["dimensions"]["importance"]["estimate"] == pytest.approx(-1.0)
    assert roles["methods_reviewer"]["dimensions"]["novelty"]["estimate"] is None  # both constant: undefined
    # Domain scientist: every score 5 (the script's default), so its coefficients are undefined, never 0.
    assert roles["domain_scientist"]["weighted"]["estimate"] is None
    assert roles["domain_scientist"]["absolute_difference"]["estimate"] == pytest.approx(
        np.mean([abs(5 - n) for n in range(1, 6)] + [0] * 35)
    )
    # The human calibration is apart and has nothing yet (no human review).
    assert body["proposals"] == 0

    page = client.get(reverse("panel-calibration", args=[cohort.pk])).content.decode()
    section = page.split('id="reference"', 1)[1]
    assert (
        "Development diagnostics" in page
        and "Panel model" in section
        and "5 proposals with a reference review" in section
    )
    assert "1 failed" in section
    table = client.get(reverse("panel-cohort-figure", args=[cohort.pk, "calibration-reference", "csv"]))
    rows = list(csv.reader(io.StringIO(table.content.decode())))
    assert rows[0][:3] == ["role", "compares", "statistic"] and len(rows) == 1 + 3 * 10
    assert (
        client.get(reverse("panel-cohort-figure", args=[cohort.pk, "calibration-reference", "png"])).status_code == 200
    )

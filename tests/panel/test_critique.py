"""Pairwise critique: imported comparisons are validated as a whole (unknown ids, pairs across research tasks), the
log keeps the update order and the stored ratings are always its online replay; the critique job shows each pair in
a recorded random order, stores the outcome in terms of the proposals, keeps to the budget and never repeats a pair."""

import json

import pytest

from reviewapp.models import BackgroundJob
from reviewapp.panel import ratings as R
from reviewapp.panel.models import Comparison, Rating
from reviewapp.panel.selectors import cohort_ratings, position_bias
from reviewapp.panel.services.common import PanelError
from reviewapp.panel.services.critique import comparisons_import, critique_start, ratings_recompute
from reviewapp.services import jobs
from tests.panel.support import make_cohort, proposal


@pytest.fixture
def cohort(db, coordinator):
    return make_cohort(
        [proposal(f"a{n}", "T-A") for n in range(1, 6)]
        + [proposal(f"b{n}", "T-B") for n in range(1, 4)]
        + [proposal("c1", "T-C")],
        user=coordinator,
    )


def stored_ratings(cohort):
    return {
        rating.proposal.external_id: (rating.mu, rating.sigma, rating.comparisons)
        for rating in Rating.objects.filter(cohort=cohort).select_related("proposal")
    }


def test_imported_comparisons_are_applied_in_order_and_equal_a_replay(cohort, coordinator):
    rows = [
        {"a": "a1", "b": "a2", "outcome": "a"},
        {"a": "a2", "b": "a3", "outcome": "tie"},
        {"a": "a3", "b": "a1", "outcome": "b"},
        {"a": "b1", "b": "b2", "outcome": "insufficient"},
        {"a": "b2", "b": "b3", "outcome": "b"},
    ]
    stored = comparisons_import(cohort=cohort, rows=rows, user=coordinator)
    assert [comparison.seq for comparison in stored] == [1, 2, 3, 4, 5]
    assert all(comparison.source == "import" for comparison in stored)
    expected = R.replay([(row["a"], row["b"], row["outcome"]) for row in rows])
    ratings = stored_ratings(cohort)
    assert set(ratings) == {"a1", "a2", "a3", "b2", "b3"}  # b1 only abstained
    for key, rating in expected.items():
        assert ratings[key] == pytest.approx((rating.mu, rating.sigma, rating.comparisons))
    # More comparisons continue the same log.
    more = comparisons_import(cohort=cohort, rows=[{"a": "a1", "b": "a2", "outcome": "b"}], user=coordinator)
    assert more[0].seq == 6
    before = stored_ratings(cohort)
    assert ratings_recompute(cohort=cohort) == 6
    assert stored_ratings(cohort) == pytest.approx(before)


def test_a_bad_row_stores_nothing_and_is_named(cohort, coordinator):
    rows = [
        {"a": "a1", "b": "a2", "outcome": "a"},
        {"a": "a1", "b": "b1", "outcome": "a"},  # two research tasks
        {"a": "a1", "b": "zz", "outcome": "tie"},  # not in the cohort
        {"a": "a3", "b": "a3", "outcome": "b"},
    ]
    with pytest.raises(PanelError) as refused:
        comparisons_import(cohort=cohort, rows=rows, user=coordinator)
    assert refused.value.code == "invalid_comparisons" and refused.value.status == 400
    problems = refused.value.problems
    assert [(problem["row"], problem["field"]) for problem in problems] == [(2, "b"), (3, "b"), (4, "b")]
    assert "different research tasks" in problems[0]["message"] and "zz" in problems[1]["message"]
    assert not Comparison.objects.exists() and not Rating.objects.exists()


def test_ranks_are_within_each_research_task(cohort, coordinator):
    comparisons_import(
        cohort=cohort,
        rows=[{"a": "a1", "b": "a2", "outcome": "a"}, {"a": "b1", "b": "b2", "outcome": "b"}],
        user=coordinator,
    )
    ratings = cohort_ratings(cohort)
    by_id = {proposal.external_id: ratings.by_proposal[proposal.pk] for proposal in cohort.proposals.all()}
    # Never compared: the prior, no rank, and not counted in the task's n (a3–a5 would otherwise tie between a2
    # and a1 and push a1 to (4 + 0) / 4 and a2 to 0; here n = 2).
    assert by_id["c1"].rank is None and by_id["c1"].comparisons == 0
    assert by_id["a3"].rank is None and by_id["a4"].rank is None and by_id["b3"].rank is None
    assert by_id["a1"].rank == 1.0 and by_id["a2"].rank == 0.0
    assert by_id["b2"].rank == 1.0 and by_id["b1"].rank == 0.0
    # A tie between a3 and a4 ranks them among the rated of T-A: s(a1) > s(a3) = s(a4) > s(a2) by hand, so with
    # n = 4 a3 and a4 have (1 + ½ × 1) / 3 and a1 still 1.
    comparisons_import(cohort=cohort, rows=[{"a": "a3", "b": "a4", "outcome": "tie"}], user=coordinator)
    ratings = cohort_ratings(cohort)
    by_id = {proposal.external_id: ratings.by_proposal[proposal.pk] for proposal in cohort.proposals.all()}
    assert by_id["a1"].conservative > by_id["a3"].conservative == by_id["a4"].conservative > by_id["a2"].conservative
    assert by_id["a3"].rank == by_id["a4"].rank == pytest.approx(1.5 / 3)
    assert by_id["a1"].rank == 1.0 and by_id["a2"].rank == 0.0 and by_id["a5"].rank is None


def test_the_critique_job_records_the_shown_order_and_answers_in_terms_of_proposals(
    models, script, cohort, coordinator
):
    # The scripted model always prefers the proposal shown first (pure position bias).
    job = critique_start(cohort=cohort, per_proposal=2, seed=4242, user=coordinator)
    jobs.job_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.state == BackgroundJob.State.SUCCEEDED, job.error
    log = list(Comparison.objects.filter(cohort=cohort).select_related("a", "b", "shown_first").order_by("seq"))
    requests = script.requests_of_kind("critique")
    assert len(log) == len(requests) > 0
    statements = {proposal.statement: proposal for proposal in cohort.proposals.all()}
    for comparison in log:
        assert comparison.source == "model" and comparison.order_seed == 4242
        assert comparison.a.task_id == comparison.b.task_id
        assert comparison.shown_first_id in (comparison.a_id, comparison.b_id)
        # The coin comes from the recorded seed, and the model saw that order.
        a_first = R.shown_first(4242, comparison.a_id, comparison.b_id, 0)
        assert comparison.shown_first_id == (comparison.a_id if a_first else comparison.b_id)
        (first_claim, second_claim), _user = next(
            (key, user) for key, user in requests if set(key) == {comparison.a.statement, comparison.b.statement}
        )
        assert statements[first_claim].pk == comparison.shown_first_id
        # "A" (position) always won: the stored outcome names the proposal shown first.
        assert comparison.outcome == ("a" if comparison.shown_first_id == comparison.a_id else "b")
    # Both orders occur, so the outcome is not always "a".
    assert {comparison.outcome for comparison in log} == {"a", "b"}
    # Budget: no proposal in more than two comparisons; no pair twice.
    counts = {}
    for comparison in log:
        for pk in (comparison.a_id, comparison.b_id):
            counts[pk] = counts.get(pk, 0) + 1
    assert max(counts.values()) <= 2
    pairs = [frozenset((comparison.a_id, comparison.b_id)) for comparison in log]
    assert len(pairs) == len(set(pairs))
    # The singleton task c1 is never compared; the position bias is measurable (here total).
    assert cohort.proposals.get(external_id="c1").pk not in counts
    bias = position_bias(cohort)
    assert bias.decisive == len(log) and bias.share == 1.0 and bias.low < 1.0
    # The stored ratings are the replay of the log.
    before = stored_ratings(cohort)
    ratings_recompute(cohort=cohort)
    assert stored_ratings(cohort) == pytest.approx(before)


def test_a_second_run_never_repeats_a_pair_unless_asked(models, script, coordinator):
    cohort = make_cohort([proposal("x1", "T-X"), proposal("x2", "T-X")], user=coordinator)
    for _ in range(2):
        jobs.job_run(job_id=critique_start(cohort=cohort, per_proposal=3, seed=1, user=coordinator).pk)
    assert Comparison.objects.filter(cohort=cohort).count() == 1
    jobs.job_run(job_id=critique_start(cohort=cohort, per_proposal=3, seed=1, repeat=True, user=coordinator).pk)
    assert Comparison.objects.filter(cohort=cohort).count() == 4


def test_ties_abstentions_and_failed_replies(models, script, coordinator):
    cohort = make_cohort([proposal(f"y{n}", "T-Y") for n in range(1, 5)], user=coordinator)
    replies = iter(
        [
            "not json",
            "still not json",
            *[json.dumps({"preference": p, "rationale": "r"}) for p in ("tie", "insufficient")] * 5,
        ]
    )
    script.critique = lambda first, second: next(replies)
    job = critique_start(cohort=cohort, per_proposal=1, seed=3, user=coordinator)
    jobs.job_run(job_id=job.pk)
    outcomes = list(Comparison.objects.filter(cohort=cohort).values_list("outcome", flat=True))
    # Two disjoint pairs in one round: one failed twice (nothing logged), the other answered.
    assert len(outcomes) == 1 and outcomes[0] in ("tie", "insufficient")


def test_the_budget_must_be_sensible(models, cohort, coordinator):
    with pytest.raises(PanelError):
        critique_start(cohort=cohort, per_proposal=0, seed=1, user=coordinator)


def test_position_bias_counts_the_models_decisive_comparisons_in_one_query(cohort, django_assert_num_queries):
    a1, a2, a3 = (cohort.proposals.get(external_id=f"a{n}").pk for n in range(1, 4))
    log = [
        # (a, b, outcome, source, shown first): the proposal shown first won the first three
        (a1, a2, "a", "model", a1),
        (a2, a3, "b", "model", a3),
        (a1, a3, "b", "model", a3),
        (a2, a1, "a", "model", a1),  # the second shown won
        (a1, a2, "tie", "model", a1),  # not decisive
        (a1, a3, "insufficient", "model", a3),  # not decisive
        (a1, a2, "a", "import", a1),  # not the model's
        (a2, a3, "a", "model", None),  # no order recorded
    ]
    Comparison.objects.bulk_create(
        Comparison(cohort=cohort, seq=seq, a_id=a, b_id=b, outcome=outcome, source=source, shown_first_id=first)
        for seq, (a, b, outcome, source, first) in enumerate(log, start=1)
    )
    with django_assert_num_queries(1):
        bias = position_bias(cohort)
    assert (bias.decisive, bias.first_won, bias.share) == (4, 3, 0.75)
    assert bias.low < 0.75 < bias.high

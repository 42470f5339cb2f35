"""Queries compiled once and run again with other ids give what the ORM's own query gives, on either database."""

import pytest
from django.db import connection
from django.db.models.functions import Substr
from django.test.utils import CaptureQueriesContext

from reviewapp.core.compiled import CompiledValues
from reviewapp.models import Assignment, Review
from reviewapp.services.reviews import review_save
from tests import factories

pytestmark = pytest.mark.django_db


def reviews_of(reviewer_id, cohort_id):
    return (
        Review.objects.filter(assignment__reviewer_id=reviewer_id, assignment__cohort_id=cohort_id)
        .order_by("assignment__position", "pk")
        .annotate(opening=Substr("assignment__proposal__statement", 1, 12))
        .values("pk", "status", "overall", "flaw_checklist", "last_saved_at", "opening", "assignment__deferred_at")
    )


@pytest.fixture
def saved_reviews(reviewer, other_reviewer):
    cohorts = [factories.make_cohort(status="open") for _ in range(2)]
    for number, (cohort, user) in enumerate([(c, u) for c in cohorts for u in (reviewer, other_reviewer)]):
        for count in range(number + 1):
            proposal = factories.make_proposal(statement=f"Statement {number}-{count}: β-catenin in ageing mice.")
            cohort.proposals.add(proposal)
            assignment = factories.make_assignment(cohort, user, proposal)
            data = {"overall": str(1 + count % 5), "flaw_verdict": "fixable", "flaw_checklist": ["power"]}
            review_save(assignment=assignment, reviewer=user, data=data, version=0)
    return cohorts


def test_rows_are_those_of_the_orms_query_for_every_id(saved_reviews, reviewer, other_reviewer):
    compiled = CompiledValues(reviews_of)
    for user in (reviewer, other_reviewer):
        for cohort in saved_reviews:
            rows = compiled.rows(reviewer_id=user.pk, cohort_id=cohort.pk)
            assert rows == list(reviews_of(user.pk, cohort.pk))
            assert rows and all(row["last_saved_at"].tzinfo is not None for row in rows)
            assert all(row["flaw_checklist"] == ["power"] for row in rows)
    assert compiled.rows(reviewer_id=reviewer.pk, cohort_id=999_999) == []


def test_a_run_is_one_query_and_every_id_is_needed(saved_reviews, reviewer):
    compiled = CompiledValues(reviews_of)
    compiled.rows(reviewer_id=reviewer.pk, cohort_id=saved_reviews[0].pk)
    with CaptureQueriesContext(connection) as queries:
        compiled.rows(reviewer_id=reviewer.pk, cohort_id=saved_reviews[1].pk)
    assert len(queries) == 1
    with pytest.raises(TypeError):
        compiled.rows(reviewer_id=reviewer.pk)


def test_an_id_the_query_does_not_use_is_refused():
    unused = CompiledValues(
        lambda reviewer_id, cohort_id: Assignment.objects.filter(reviewer_id=reviewer_id).values("pk")
    )
    with pytest.raises(ValueError, match="cohort_id"):
        unused.rows(reviewer_id=1, cohort_id=2)


def test_only_a_values_query_is_compiled():
    with pytest.raises(ValueError, match="values"):
        CompiledValues(lambda reviewer_id: Assignment.objects.filter(reviewer_id=reviewer_id)).rows(reviewer_id=1)

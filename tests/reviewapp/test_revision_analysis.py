"""The human revision analysis: a proposal's predecessor is its first listed parent (a crossover's other parents are
context), and outcomes are reported on the overall score and on each criterion ("can't judge" left out)."""

import json

import pytest
from django.urls import reverse
from django.utils import timezone

from reviewapp.models import Review
from reviewapp.protocol import CANT_JUDGE, CRITERION_FIELDS
from reviewapp.selectors.analysis import cohort_review_analysis
from reviewapp.selectors.revisions import first_parents
from reviewapp.services.cohorts import cohort_create
from reviewapp.services.imports import cohort_import_file
from tests import factories


def _proposal(pid, parents=()):
    return {
        "id": pid,
        "task": "T1",
        "statement": f"Claim {pid}.",
        "author": f"Model of {pid}",
        "parents": list(parents),
    }


@pytest.fixture
def cohort(db, coordinator):
    outside = cohort_create(name="Earlier cohort", user=coordinator)
    content = {"tasks": [{"key": "T1", "question": "Does it work?"}], "proposals": [_proposal("p0")]}
    cohort_import_file(cohort=outside, filename="earlier.json", content=json.dumps(content).encode(), user=coordinator)
    cohort = cohort_create(name="Revisions", user=coordinator)
    proposals = [
        _proposal("p1"),
        _proposal("p2", ["p1"]),
        _proposal("p3", ["p2", "p1"]),  # crossover: p2 is the predecessor
        _proposal("p4", ["p0", "p1"]),  # its predecessor p0 is not in this cohort: no pair, p1 is not used
    ]
    content = {"tasks": [{"key": "T1", "question": "Does it work?"}], "proposals": proposals}
    cohort_import_file(cohort=cohort, filename="cohort.json", content=json.dumps(content).encode(), user=coordinator)
    reviewer = factories.make_user("reviewer")
    scores = {
        "p1": (2, {"importance": "2", "data_fit": "3"}),
        "p2": (3, {"importance": "3", "data_fit": CANT_JUDGE}),
        "p3": (3, {"importance": "1", "data_fit": "4"}),
        "p4": (5, {"importance": "4", "data_fit": "4"}),
    }
    for proposal in cohort.proposals.all():
        overall, criteria = scores[proposal.external_id]
        Review.objects.create(
            assignment=factories.make_assignment(cohort, reviewer, proposal),
            status=Review.Status.SUBMITTED,
            overall=overall,
            recommendation="revise",
            flaw_verdict="absent",
            submitted_at=timezone.now(),
            **dict.fromkeys(CRITERION_FIELDS, "3") | criteria,
        )
    return cohort


def test_the_first_listed_parent_is_the_predecessor(cohort):
    ids = dict(cohort.proposals.values_list("external_id", "pk"))
    predecessors = first_parents(child_ids=list(ids.values()))
    names = {pk: name for name, pk in ids.items()}
    assert {names[child]: parent for child, parent in predecessors.items()} == {
        "p2": ids["p1"],
        "p3": ids["p2"],
        "p4": predecessors[ids["p4"]],
    }
    assert predecessors[ids["p4"]] not in ids.values()  # p0, outside the cohort


def test_revision_outcomes_count_each_child_once_against_its_predecessor(cohort):
    result = cohort_review_analysis(cohort)
    assert result.revision_pairs == 2  # p1 → p2 and p2 → p3; not p1 → p3, not p1 → p4
    overall = result.revisions.overall
    assert (overall.pairs, overall.improved, overall.unchanged, overall.worsened) == (2, 1, 1, 0)
    assert overall.mean_change == pytest.approx(0.5)
    importance = result.revisions_by_criterion["importance"].overall
    assert (importance.improved, importance.worsened) == (1, 1) and importance.mean_change == pytest.approx(-0.5)
    data_fit = result.revisions_by_criterion["data_fit"]
    # p2's data fit is "can't judge": both its pairs are not comparable on that criterion, never scored.
    assert data_fit.overall.pairs == 0 and data_fit.not_comparable == 2
    assert set(result.revisions_by_criterion) == set(CRITERION_FIELDS)


def test_the_statistics_page_shows_outcomes_per_criterion(client, analyst, cohort):
    client.force_login(analyst)
    page = client.get(reverse("cohort-statistics", args=[cohort.pk])).content.decode()
    assert "Revision outcomes per criterion" in page and "Plausible and evidence-bounded claims" in page
    table = client.get(reverse("cohort-figure", args=[cohort.pk, "revision-criteria", "csv"])).content.decode()
    lines = table.strip().splitlines()
    assert lines[0].startswith("criterion,pairs,improved") and lines[1].startswith("overall,2,1,1,0")
    assert client.get(reverse("cohort-figure", args=[cohort.pk, "revision-criteria", "png"])).status_code == 200


def test_every_edge_is_counted_beside_the_first_parent_pairs(client, analyst, cohort):
    result = cohort_review_analysis(cohort)
    # p1 → p2, p2 → p3, p1 → p3 and p1 → p4 (p0 → p4 leaves the cohort): four edges, against two first-parent pairs.
    assert (result.edge_pairs, result.revision_pairs) == (4, 2)
    edges = result.edge_revisions.overall
    # Changes: p2 − p1 = 1, p3 − p2 = 0, p3 − p1 = 1, p4 − p1 = 3.
    assert (edges.pairs, edges.improved, edges.unchanged, edges.worsened) == (4, 3, 1, 0)
    assert edges.mean_change == pytest.approx(1.25)
    client.force_login(analyst)
    page = client.get(reverse("cohort-statistics", args=[cohort.pk])).content.decode()
    assert "4 edges,\n    4 comparable: 3 improved" in page

"""Automatic and manual assignment of reviewers to a cohort's proposals."""

import hashlib
from collections import Counter, defaultdict

import pytest
from django.contrib.auth.models import Group, User
from rest_framework.test import APIClient

from reviewapp.models import Assignment, AuditEvent, Cohort, Conflict, Proposal, Review
from reviewapp.services.cohorts import (
    AssignmentImpossible,
    AssignmentStarted,
    CohortError,
    assignment_add,
    assignment_reassign,
    assignment_remove,
    cohort_assign,
    cohort_set_status,
    conflict_declare,
)
from tests import factories


def make_reviewers(n: int, prefix: str = "rev") -> list[User]:
    return [factories.make_user("reviewer", username=f"{prefix}-{i:03d}") for i in range(n)]


def make_cohort(n_proposals: int, seed: int = 7, authors=("model-a", "model-b")) -> Cohort:
    task = factories.make_task()
    proposals = [factories.make_proposal(task=task, author=authors[i % len(authors)]) for i in range(n_proposals)]
    return factories.make_cohort(proposals, seed=seed)


def pairs(cohort: Cohort) -> set[tuple[int, int]]:
    return set(Assignment.objects.filter(cohort=cohort).values_list("proposal_id", "reviewer_id"))


def loads(cohort: Cohort) -> Counter:
    return Counter(Assignment.objects.filter(cohort=cohort).values_list("reviewer_id", flat=True))


def test_every_proposal_gets_k_distinct_reviewers_with_loads_differing_by_at_most_one(coordinator):
    cohort = make_cohort(20)
    reviewers = make_reviewers(7)
    result = cohort_assign(cohort=cohort, reviewers=reviewers, per_proposal=3, seed=1, user=coordinator)

    assert result.created == 60
    per_proposal = Counter(Assignment.objects.filter(cohort=cohort).values_list("proposal_id", flat=True))
    assert set(per_proposal.values()) == {3}
    assert len(pairs(cohort)) == 60  # no reviewer twice on a proposal
    counts = loads(cohort)
    assert max(counts.values()) - min(counts.values()) <= 1
    assert result.loads == {r.username: counts[r.pk] for r in reviewers}


def test_assigning_twice_with_the_same_k_creates_nothing_more(coordinator):
    cohort = make_cohort(12)
    reviewers = make_reviewers(5)
    cohort_assign(cohort=cohort, reviewers=reviewers, per_proposal=2, seed=3, user=coordinator)
    before = set(Assignment.objects.filter(cohort=cohort).values_list("proposal_id", "reviewer_id", "position"))

    again = cohort_assign(cohort=cohort, reviewers=reviewers, per_proposal=2, seed=99, user=coordinator)

    assert again.created == 0
    assert set(Assignment.objects.filter(cohort=cohort).values_list("proposal_id", "reviewer_id", "position")) == before


def test_raising_k_tops_up_and_keeps_existing_assignments(coordinator):
    cohort = make_cohort(10)
    reviewers = make_reviewers(6)
    cohort_assign(cohort=cohort, reviewers=reviewers, per_proposal=1, seed=3, user=coordinator)
    first = pairs(cohort)

    result = cohort_assign(cohort=cohort, reviewers=reviewers, per_proposal=3, seed=3, user=coordinator)

    assert result.created == 20
    assert first <= pairs(cohort)
    assert set(Counter(p for p, _ in pairs(cohort)).values()) == {3}
    counts = loads(cohort)
    assert max(counts.values()) - min(counts.values()) <= 1


def test_the_same_seed_gives_identical_assignments(coordinator):
    reviewers = make_reviewers(6)
    first = make_cohort(15, seed=5)
    second = factories.make_cohort(first.proposals.all(), seed=5)

    cohort_assign(cohort=first, reviewers=reviewers, per_proposal=2, seed=42, user=coordinator)
    cohort_assign(cohort=second, reviewers=list(reversed(reviewers)), per_proposal=2, seed=42, user=coordinator)

    def rows(cohort):
        return set(Assignment.objects.filter(cohort=cohort).values_list("proposal_id", "reviewer_id", "position"))

    assert rows(first) == rows(second)


def test_a_different_seed_gives_a_different_assignment(coordinator):
    reviewers = make_reviewers(6)
    first = make_cohort(15)
    second = factories.make_cohort(first.proposals.all())

    cohort_assign(cohort=first, reviewers=reviewers, per_proposal=2, seed=1, user=coordinator)
    cohort_assign(cohort=second, reviewers=reviewers, per_proposal=2, seed=2, user=coordinator)

    assert pairs(first) != pairs(second)


def test_a_conflict_with_a_proposal_keeps_that_reviewer_off_it(coordinator):
    cohort = make_cohort(6)
    reviewers = make_reviewers(4)
    target = cohort.proposals.order_by("pk").first()
    conflict_declare(reviewer=reviewers[0], kind="collaborator", proposal=target, user=coordinator)

    cohort_assign(cohort=cohort, reviewers=reviewers, per_proposal=3, seed=1, user=coordinator)

    assert set(Assignment.objects.filter(proposal=target).values_list("reviewer_id", flat=True)) == {
        r.pk for r in reviewers[1:]
    }


def test_a_conflict_with_an_author_keeps_the_reviewer_off_all_their_proposals(coordinator):
    cohort = make_cohort(8, authors=("model-a", "model-b"))
    reviewers = make_reviewers(4)
    conflict_declare(reviewer=reviewers[1], kind="institutional", author="model-b", user=coordinator)

    cohort_assign(cohort=cohort, reviewers=reviewers, per_proposal=2, seed=1, user=coordinator)

    on_model_b = Assignment.objects.filter(cohort=cohort, proposal__author="model-b")
    assert on_model_b.count() == 8
    assert not on_model_b.filter(reviewer=reviewers[1]).exists()
    assert Assignment.objects.filter(cohort=cohort, proposal__author="model-a", reviewer=reviewers[1]).exists()


def test_positions_run_from_one_to_n_per_reviewer_in_the_stable_seeded_order(coordinator):
    cohort = make_cohort(12, seed=11)
    reviewers = make_reviewers(4)
    cohort_assign(cohort=cohort, reviewers=reviewers, per_proposal=2, seed=1, user=coordinator)

    for reviewer in reviewers:
        rows = list(
            Assignment.objects.filter(cohort=cohort, reviewer=reviewer)
            .order_by("position")
            .values_list("position", "proposal_id")
        )
        assert [position for position, _ in rows] == list(range(1, len(rows) + 1))
        expected = sorted(
            (proposal_id for _, proposal_id in rows),
            key=lambda p: hashlib.sha256(f"11:{reviewer.pk}:{p}".encode()).hexdigest(),
        )
        assert [proposal_id for _, proposal_id in rows] == expected


def test_new_assignments_go_after_a_reviewers_existing_positions(coordinator):
    cohort = make_cohort(6)
    first, second = make_reviewers(2)
    cohort_assign(cohort=cohort, reviewers=[first], per_proposal=1, seed=1, user=coordinator)
    earlier = dict(Assignment.objects.filter(reviewer=first).values_list("proposal_id", "position"))

    cohort_assign(cohort=cohort, reviewers=[first, second], per_proposal=2, seed=1, user=coordinator)

    assert dict(Assignment.objects.filter(reviewer=first).values_list("proposal_id", "position")) == earlier
    assert sorted(Assignment.objects.filter(reviewer=second).values_list("position", flat=True)) == list(range(1, 7))


def test_more_reviewers_per_proposal_than_reviewers_is_impossible_and_creates_nothing(coordinator):
    cohort = make_cohort(3)
    reviewers = make_reviewers(2)

    with pytest.raises(AssignmentImpossible, match=r"Proposal P-\d+ needs 3 more reviewer\(s\) .* only 2"):
        cohort_assign(cohort=cohort, reviewers=reviewers, per_proposal=3, seed=1, user=coordinator)

    assert not Assignment.objects.exists()
    cohort.refresh_from_db()
    assert cohort.status == Cohort.Status.DRAFT


def test_conflicts_that_leave_too_few_reviewers_name_the_proposal(coordinator):
    cohort = make_cohort(3)
    reviewers = make_reviewers(3)
    target = cohort.proposals.order_by("pk").last()
    conflict_declare(reviewer=reviewers[2], kind="personal", proposal=target, user=coordinator)

    with pytest.raises(AssignmentImpossible, match=target.external_id):
        cohort_assign(cohort=cohort, reviewers=reviewers, per_proposal=3, seed=1, user=coordinator)
    assert not Assignment.objects.exists()


def test_a_maximum_load_is_respected_and_an_unreachable_one_is_refused(coordinator):
    cohort = make_cohort(6)
    reviewers = make_reviewers(4)
    with pytest.raises(AssignmentImpossible, match="maximum load"):
        cohort_assign(cohort=cohort, reviewers=reviewers, per_proposal=2, seed=1, max_load=2, user=coordinator)
    assert not Assignment.objects.exists()

    cohort_assign(cohort=cohort, reviewers=reviewers, per_proposal=2, seed=1, max_load=3, user=coordinator)
    assert max(loads(cohort).values()) == 3


def test_only_reviewers_can_be_assigned(coordinator, analyst):
    cohort = make_cohort(2)
    with pytest.raises(CohortError, match="analyst-dan"):
        cohort_assign(cohort=cohort, reviewers=[*make_reviewers(1), analyst], per_proposal=1, seed=1, user=coordinator)


def test_assigning_opens_a_draft_cohort_and_a_closed_cohort_refuses(coordinator):
    cohort = make_cohort(2)
    reviewers = make_reviewers(2)
    cohort_assign(cohort=cohort, reviewers=reviewers, per_proposal=1, seed=1, user=coordinator)
    cohort.refresh_from_db()
    assert cohort.status == Cohort.Status.OPEN
    assert AuditEvent.objects.filter(action="cohort_assign", target_id=str(cohort.pk)).exists()

    cohort_set_status(cohort=cohort, status="closed", user=coordinator)
    with pytest.raises(CohortError, match="closed"):
        cohort_assign(cohort=cohort, reviewers=reviewers, per_proposal=2, seed=1, user=coordinator)


def test_an_empty_cohort_cannot_be_assigned(coordinator):
    with pytest.raises(AssignmentImpossible, match="no proposals"):
        cohort_assign(
            cohort=factories.make_cohort(), reviewers=make_reviewers(1), per_proposal=1, seed=0, user=coordinator
        )


# Manual changes


def assigned_cohort(coordinator, n_proposals=4, n_reviewers=3, k=2):
    cohort = make_cohort(n_proposals)
    reviewers = make_reviewers(n_reviewers)
    cohort_assign(cohort=cohort, reviewers=reviewers, per_proposal=k, seed=1, user=coordinator)
    return cohort, reviewers


def positions(cohort, reviewer) -> list[int]:
    return sorted(Assignment.objects.filter(cohort=cohort, reviewer=reviewer).values_list("position", flat=True))


def test_removing_an_unstarted_assignment_closes_the_gap_in_the_queue(coordinator):
    cohort, reviewers = assigned_cohort(coordinator)
    assignment = Assignment.objects.filter(cohort=cohort, reviewer=reviewers[0], position=1).get()

    assignment_remove(assignment=assignment, user=coordinator)

    assert not Assignment.objects.filter(pk=assignment.pk).exists()
    assert positions(cohort, reviewers[0]) == list(
        range(1, Assignment.objects.filter(reviewer=reviewers[0]).count() + 1)
    )


def test_a_started_review_cannot_be_removed_or_reassigned(coordinator):
    cohort, reviewers = assigned_cohort(coordinator)
    assignment = Assignment.objects.filter(cohort=cohort, reviewer=reviewers[0]).first()
    Review.objects.create(assignment=assignment)
    spare = factories.make_user("reviewer", username="rev-spare")

    with pytest.raises(AssignmentStarted, match="already started"):
        assignment_remove(assignment=assignment, user=coordinator)
    with pytest.raises(AssignmentStarted):
        assignment_reassign(assignment=assignment, reviewer=spare, user=coordinator)
    assert Assignment.objects.get(pk=assignment.pk).reviewer == reviewers[0]


def test_reassigning_moves_an_unstarted_assignment_to_the_end_of_another_queue(coordinator):
    cohort, reviewers = assigned_cohort(coordinator)
    spare = factories.make_user("reviewer", username="rev-spare")
    assignment = Assignment.objects.filter(cohort=cohort, reviewer=reviewers[0], position=1).get()
    assignment.deferred_reason, assignment.deferred_at = "outside my field", cohort.created_at
    assignment.save()

    moved = assignment_reassign(assignment=assignment, reviewer=spare, user=coordinator)

    assert (moved.reviewer, moved.position, moved.deferred_reason) == (spare, 1, "")
    assert positions(cohort, reviewers[0]) == list(range(1, len(positions(cohort, reviewers[0])) + 1))
    event = AuditEvent.objects.get(action="assignment_reassign")
    assert event.data["previous"] == reviewers[0].username and event.data["deferred_reason"] == "outside my field"


def test_reassigning_to_someone_already_on_the_proposal_or_in_conflict_is_refused(coordinator):
    cohort, reviewers = assigned_cohort(coordinator, k=2)
    assignment = Assignment.objects.filter(cohort=cohort, reviewer=reviewers[0]).first()
    co_reviewer = Assignment.objects.exclude(pk=assignment.pk).get(proposal=assignment.proposal).reviewer
    with pytest.raises(CohortError, match="already assigned"):
        assignment_reassign(assignment=assignment, reviewer=co_reviewer, user=coordinator)

    conflicted = factories.make_user("reviewer", username="rev-conflicted")
    conflict_declare(reviewer=conflicted, kind="advisor", author=assignment.proposal.author, user=coordinator)
    with pytest.raises(CohortError, match="conflict"):
        assignment_reassign(assignment=assignment, reviewer=conflicted, user=coordinator)


def test_adding_an_assignment_by_hand_puts_it_last_and_refuses_duplicates(coordinator):
    cohort, reviewers = assigned_cohort(coordinator, n_proposals=4, n_reviewers=3, k=1)
    proposal = Proposal.objects.filter(cohorts=cohort).exclude(assignments__reviewer=reviewers[0]).first()

    added = assignment_add(cohort=cohort, reviewer=reviewers[0], proposal=proposal, user=coordinator)

    assert added.position == len(positions(cohort, reviewers[0]))
    with pytest.raises(CohortError, match="already assigned"):
        assignment_add(cohort=cohort, reviewer=reviewers[0], proposal=proposal, user=coordinator)
    outsider = factories.make_proposal()
    with pytest.raises(CohortError, match="not in cohort"):
        assignment_add(cohort=cohort, reviewer=reviewers[0], proposal=outsider, user=coordinator)


def test_declaring_a_conflict_needs_a_known_kind_and_a_proposal_or_author(reviewer, coordinator):
    with pytest.raises(CohortError, match="names a proposal or an author"):
        conflict_declare(reviewer=reviewer, kind="personal", user=coordinator)
    with pytest.raises(CohortError, match="not a kind"):
        conflict_declare(reviewer=reviewer, kind="grudge", author="model-a", user=coordinator)
    assert not Conflict.objects.exists()


# API


@pytest.fixture
def coordinator_api(coordinator):
    client = APIClient()
    client.force_authenticate(coordinator)
    return client


def test_api_assigns_and_reports_created_and_loads(coordinator_api):
    cohort = make_cohort(5)
    reviewers = make_reviewers(3)
    body = {"reviewers": [r.username for r in reviewers], "per_proposal": 2, "seed": 4}

    response = coordinator_api.post(f"/api/v1/cohorts/{cohort.pk}/assignments", body, format="json")

    assert response.status_code == 201, response.json()
    assert response.json()["created"] == 10
    assert sorted(response.json()["loads"].values()) == [3, 3, 4]
    assert set(response.json()["loads"]) == {r.username for r in reviewers}


def test_api_names_an_unknown_reviewer(coordinator_api):
    cohort = make_cohort(2)
    body = {"reviewers": ["rev-000", "nobody-here"], "per_proposal": 1}
    make_reviewers(1)

    response = coordinator_api.post(f"/api/v1/cohorts/{cohort.pk}/assignments", body, format="json")

    assert response.status_code == 400
    assert response.json()["error"] == "unknown_reviewer"
    assert "nobody-here" in response.json()["detail"]


def test_api_answers_assignment_impossible_when_k_exceeds_the_reviewers(coordinator_api):
    cohort = make_cohort(2)
    reviewers = make_reviewers(2)
    body = {"reviewers": [r.username for r in reviewers], "per_proposal": 3, "seed": 1}

    response = coordinator_api.post(f"/api/v1/cohorts/{cohort.pk}/assignments", body, format="json")

    assert response.status_code == 400
    assert response.json()["error"] == "assignment_impossible"
    assert "needs 3 more reviewer" in response.json()["detail"]
    assert not Assignment.objects.exists()


def test_api_lists_removes_and_reassigns_assignments(coordinator_api, coordinator):
    cohort, reviewers = assigned_cohort(coordinator, n_proposals=3, n_reviewers=3, k=1)
    spare = factories.make_user("reviewer", username="rev-spare")

    listing = coordinator_api.get(f"/api/v1/cohorts/{cohort.pk}/assignments", {"reviewer": reviewers[0].username})
    assert listing.status_code == 200
    assert listing.json()["count"] == 1
    first = listing.json()["results"][0]
    assert first["state"] == "not_started" and first["position"] == 1

    moved = coordinator_api.post(f"/api/v1/assignments/{first['id']}/reassign", {"reviewer": spare.username})
    assert moved.status_code == 200 and moved.json()["reviewer"] == spare.username

    assert coordinator_api.delete(f"/api/v1/assignments/{first['id']}").status_code == 204
    assert not Assignment.objects.filter(pk=first["id"]).exists()

    started = Assignment.objects.filter(cohort=cohort).first()
    Review.objects.create(assignment=started)
    refused = coordinator_api.delete(f"/api/v1/assignments/{started.pk}")
    assert refused.status_code == 409 and refused.json()["error"] == "assignment_started"


def test_api_declares_conflicts_by_proposal_id_or_author(coordinator_api, reviewer):
    proposal = factories.make_proposal()

    by_proposal = coordinator_api.post(
        "/api/v1/conflicts", {"reviewer": reviewer.username, "kind": "collaborator", "proposal": proposal.external_id}
    )
    by_author = coordinator_api.post(
        "/api/v1/conflicts", {"reviewer": reviewer.username, "kind": "other", "author": "model-x", "note": "consults"}
    )
    unknown = coordinator_api.post(
        "/api/v1/conflicts", {"reviewer": reviewer.username, "kind": "other", "proposal": "P-x"}
    )
    neither = coordinator_api.post("/api/v1/conflicts", {"reviewer": reviewer.username, "kind": "other"})
    both = coordinator_api.post(
        "/api/v1/conflicts",
        {"reviewer": reviewer.username, "kind": "other", "proposal": proposal.external_id, "author": "model-x"},
    )

    assert by_proposal.status_code == 201 and by_proposal.json()["proposal"] == proposal.external_id
    assert by_author.status_code == 201 and by_author.json()["author"] == "model-x"
    assert (unknown.status_code, unknown.json()["error"]) == (400, "unknown_proposal")
    assert neither.status_code == 400
    assert (both.status_code, both.json()["error"]) == (400, "invalid_body")
    assert Conflict.objects.count() == 2


# At full scale (its speed is measured by benchmarks/review_speed.py, not here)


def test_ten_thousand_proposals_times_three_over_three_hundred_reviewers_are_balanced(needs_postgres, coordinator):
    task = factories.make_task()
    proposals = Proposal.objects.bulk_create(
        Proposal(
            external_id=f"S-{i}",
            task=task,
            statement=f"Claim {i}",
            author=f"model-{i % 5}",
            content_sha256=f"{i:064d}",
        )
        for i in range(10_000)
    )
    cohort = factories.make_cohort(seed=3)
    Cohort.proposals.through.objects.bulk_create(
        Cohort.proposals.through(cohort_id=cohort.pk, proposal_id=p.pk) for p in proposals
    )
    reviewers = User.objects.bulk_create(User(username=f"speed-{i:03d}") for i in range(300))
    group = Group.objects.get(name="reviewer")
    User.groups.through.objects.bulk_create(User.groups.through(user_id=r.pk, group_id=group.pk) for r in reviewers)

    result = cohort_assign(cohort=cohort, reviewers=reviewers, per_proposal=3, seed=1, user=coordinator)

    assert result.created == 30_000
    assert max(result.loads.values()) - min(result.loads.values()) <= 1


def test_assignment_positions_form_a_permutation_even_after_manual_changes(coordinator):
    cohort, reviewers = assigned_cohort(coordinator, n_proposals=8, n_reviewers=3, k=2)
    spare = factories.make_user("reviewer", username="rev-spare")
    for assignment in list(Assignment.objects.filter(cohort=cohort, reviewer=reviewers[1]).order_by("position"))[::2]:
        assignment_reassign(assignment=assignment, reviewer=spare, user=coordinator)

    by_reviewer = defaultdict(list)
    for reviewer_id, position in Assignment.objects.filter(cohort=cohort).values_list("reviewer_id", "position"):
        by_reviewer[reviewer_id].append(position)
    for values in by_reviewer.values():
        assert sorted(values) == list(range(1, len(values) + 1))


def test_assignment_pages_carry_their_count_limit_and_offset(coordinator_api, coordinator):
    cohort, _ = assigned_cohort(coordinator, n_proposals=3, n_reviewers=3, k=2)

    second = coordinator_api.get(f"/api/v1/cohorts/{cohort.pk}/assignments", {"limit": 4, "offset": 4}).json()
    beyond = coordinator_api.get(f"/api/v1/cohorts/{cohort.pk}/assignments", {"offset": 6}).json()
    too_many = coordinator_api.get(f"/api/v1/cohorts/{cohort.pk}/assignments", {"limit": 1001})

    assert (second["count"], second["limit"], second["offset"], len(second["results"])) == (6, 4, 4, 2)
    assert beyond["count"] == 6 and beyond["results"] == []
    assert too_many.status_code == 400 and too_many.json()["error"] == "invalid_body"

"""Cohorts for coordinators and analysts: creating, opening and closing, counts, progress, pages and API access."""

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from reviewapp import protocol
from reviewapp.models import Assignment, AuditEvent, Cohort, Review
from reviewapp.selectors.cohorts import cohort_progress, cohorts_with_counts
from reviewapp.services.cohorts import CohortError, cohort_assign, cohort_create, cohort_set_status
from tests import factories


def submit(assignment: Assignment, seconds: int) -> Review:
    return Review.objects.create(
        assignment=assignment,
        status=Review.Status.SUBMITTED,
        overall=3,
        recommendation="revise",
        flaw_verdict="absent",
        submitted_at=timezone.now(),
        seconds_spent=seconds,
        **dict.fromkeys(protocol.CRITERION_FIELDS, "3"),
    )


@pytest.fixture
def running_cohort(coordinator, reviewer, other_reviewer):
    """Four proposals, two reviewers each: alice submits three (30, 60, 120 s) and drafts one; bob defers one."""
    task = factories.make_task()
    cohort = factories.make_cohort([factories.make_proposal(task=task) for _ in range(4)], name="Ageing pilot")
    cohort_assign(cohort=cohort, reviewers=[reviewer, other_reviewer], per_proposal=2, seed=1, user=coordinator)
    alice = list(Assignment.objects.filter(reviewer=reviewer).order_by("position"))
    for assignment, seconds in zip(alice[:3], (30, 60, 120), strict=True):
        submit(assignment, seconds)
    Review.objects.create(assignment=alice[3], overall=4)
    bob = list(Assignment.objects.filter(reviewer=other_reviewer).order_by("position"))
    submit(bob[0], 10)
    submit(bob[1], 20)
    Assignment.objects.filter(pk=bob[2].pk).update(deferred_reason="Outside my expertise", deferred_at=timezone.now())
    return cohort


# Services


def test_creating_a_cohort_records_who_and_refuses_a_duplicate_name(coordinator):
    cohort = cohort_create(name="MIMIC-IV", reviewers_per_proposal=2, seed=9, user=coordinator)

    assert (cohort.status, cohort.reviewers_per_proposal, cohort.seed, cohort.created_by) == (
        "draft",
        2,
        9,
        coordinator,
    )
    with pytest.raises(CohortError, match="already exists"):
        cohort_create(name="mimic-iv", user=coordinator)


@pytest.mark.parametrize(
    "path, allowed",
    [
        (["open"], True),
        (["open", "closed"], True),
        (["open", "closed", "open"], True),
        (["closed"], False),
        (["open", "draft"], False),
        (["open", "open"], False),
    ],
)
def test_a_cohort_moves_only_from_draft_to_open_to_closed_and_back_to_open(coordinator, path, allowed):
    cohort = factories.make_cohort()
    *before, last = path
    for status in before:
        cohort_set_status(cohort=cohort, status=status, user=coordinator)
    if allowed:
        assert cohort_set_status(cohort=cohort, status=last, user=coordinator).status == last
    else:
        with pytest.raises(CohortError, match="cannot become"):
            cohort_set_status(cohort=cohort, status=last, user=coordinator)
    assert AuditEvent.objects.filter(action="cohort_set_status").count() == len(path) - (0 if allowed else 1)


# Selectors


def test_cohort_list_counts_proposals_assignments_and_submitted_reviews(running_cohort, django_assert_num_queries):
    factories.make_cohort([factories.make_proposal()], name="Empty")
    with django_assert_num_queries(1):
        counts = {c.name: (c.proposal_count, c.assignment_count, c.submitted_count) for c in cohorts_with_counts()}
    assert counts == {"Ageing pilot": (4, 8, 5), "Empty": (1, 0, 0)}


def test_progress_counts_each_reviewers_work_and_median_time(running_cohort, django_assert_max_num_queries):
    with django_assert_max_num_queries(2):
        progress = cohort_progress(running_cohort)

    alice, bob = progress.reviewers
    assert alice.username == "rev-alice"
    assert alice.as_dict() == {
        "assigned": 4,
        "submitted": 3,
        "in_progress": 1,
        "not_started": 0,
        "deferred": 0,
        "median_seconds": 60,
    }
    assert bob.as_dict() == {
        "assigned": 4,
        "submitted": 2,
        "in_progress": 0,
        "not_started": 2,
        "deferred": 1,
        "median_seconds": 15,
    }
    assert progress.totals.as_dict() == {
        "assigned": 8,
        "submitted": 5,
        "in_progress": 1,
        "not_started": 2,
        "deferred": 1,
        "median_seconds": 30,
    }
    assert alice.median_display == "1 min 00 s"


def test_progress_needs_the_same_queries_for_a_larger_cohort(coordinator, django_assert_max_num_queries):
    reviewers = [factories.make_user("reviewer") for _ in range(6)]
    cohort = factories.make_cohort([factories.make_proposal() for _ in range(30)])
    cohort_assign(cohort=cohort, reviewers=reviewers, per_proposal=3, seed=1, user=coordinator)
    for assignment in Assignment.objects.filter(cohort=cohort)[:40]:
        submit(assignment, 45)
    with django_assert_max_num_queries(2):
        progress = cohort_progress(cohort)
    assert len(progress.reviewers) == 6 and progress.totals.submitted == 40


# API


def api(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def test_api_creates_lists_and_describes_cohorts(coordinator):
    created = api(coordinator).post("/api/v1/cohorts", {"name": "MIMIC-IV", "reviewers_per_proposal": 3, "seed": 5})
    assert created.status_code == 201, created.json()
    body = created.json()
    assert {k: body[k] for k in ("name", "status", "reviewers_per_proposal", "seed")} == {
        "name": "MIMIC-IV",
        "status": "draft",
        "reviewers_per_proposal": 3,
        "seed": 5,
    }

    listing = api(coordinator).get("/api/v1/cohorts")
    assert [c["name"] for c in listing.json()] == ["MIMIC-IV"]

    detail = api(coordinator).get(f"/api/v1/cohorts/{body['id']}").json()
    for key in ("id", "name", "status", "reviewers_per_proposal", "seed", "created_at"):
        assert key in detail
    assert (detail["proposal_count"], detail["assignment_count"], detail["submitted_count"]) == (0, 0, 0)

    duplicate = api(coordinator).post("/api/v1/cohorts", {"name": "MIMIC-IV"})
    assert duplicate.status_code == 400 and "already exists" in duplicate.json()["detail"]
    assert api(coordinator).get("/api/v1/cohorts/999999").status_code == 404


def test_api_changes_status_and_refuses_a_skipped_step(coordinator):
    cohort = factories.make_cohort()
    refused = api(coordinator).post(f"/api/v1/cohorts/{cohort.pk}/status", {"status": "closed"})
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_request"

    opened = api(coordinator).post(f"/api/v1/cohorts/{cohort.pk}/status", {"status": "open"})
    assert opened.status_code == 200 and opened.json()["status"] == "open"


def test_api_progress_reports_each_reviewer_and_totals(running_cohort, analyst):
    response = api(analyst).get(f"/api/v1/cohorts/{running_cohort.pk}/progress")

    assert response.status_code == 200
    body = response.json()
    assert body["cohort"]["name"] == "Ageing pilot"
    assert body["reviewers"][0] == {
        "username": "rev-alice",
        "assigned": 4,
        "submitted": 3,
        "in_progress": 1,
        "not_started": 0,
        "deferred": 0,
        "median_seconds": 60,
    }
    assert body["totals"]["submitted"] == 5 and body["totals"]["proposals"] == 4


# Pages


def test_cohort_list_page_shows_counts_demo_badge_and_creates_for_coordinators(client, coordinator, running_cohort):
    factories.make_cohort(name="Demo ageing", is_demo=True)
    client.force_login(coordinator)

    page = client.get("/cohorts/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Ageing pilot" in html and "5 (62%)" in html  # 5 of 8 submitted
    assert 'class="badge warn"' in html and "demo" in html
    assert 'action="/cohorts/"' in html

    created = client.post("/cohorts/", {"name": "Second round", "reviewers_per_proposal": "2", "seed": "4"})
    cohort = Cohort.objects.get(name="Second round")
    assert created.status_code == 302 and created.url == f"/cohorts/{cohort.pk}/"
    assert client.post("/cohorts/", {"name": "Second round", "reviewers_per_proposal": "2"}).status_code == 400


def test_analysts_read_the_cohort_pages_without_any_form_to_act(client, analyst, running_cohort):
    client.force_login(analyst)
    for url in ("/cohorts/", f"/cohorts/{running_cohort.pk}/"):
        response = client.get(url)
        assert response.status_code == 200
        main = response.content.decode().split("<main")[1].split("cohort-exports")[0]
        assert '<form method="post"' not in main
    assert client.post("/cohorts/", {"name": "Not allowed"}).status_code == 403


def test_cohort_page_shows_progress_deferrals_and_exports(client, coordinator, running_cohort):
    client.force_login(coordinator)
    html = client.get(f"/cohorts/{running_cohort.pk}/").content.decode()

    assert 'id="progress"' in html and 'aria-valuenow="3"' in html
    assert "1 min 00 s" in html
    assert "Outside my expertise" in html
    assert 'id="cohort-exports"' in html
    assert f'action="/cohorts/{running_cohort.pk}/assign/"' in html


def test_cohort_page_paginates_assignments_and_htmx_gets_only_the_table(client, coordinator):
    reviewers = [factories.make_user("reviewer") for _ in range(4)]
    cohort = factories.make_cohort([factories.make_proposal() for _ in range(40)])
    cohort_assign(cohort=cohort, reviewers=reviewers, per_proposal=2, seed=1, user=coordinator)
    client.force_login(coordinator)

    full = client.get(f"/cohorts/{cohort.pk}/").content.decode()
    assert full.count("Reassign</button>") == 50
    assert "page 1 of 2" in full

    partial = client.get(f"/cohorts/{cohort.pk}/?page=2", headers={"HX-Request": "true", "HX-Target": "assignments"})
    html = partial.content.decode()
    assert html.count("Reassign</button>") == 30
    assert "<html" not in html and 'id="progress"' not in html

    progress = client.get(f"/cohorts/{cohort.pk}/", headers={"HX-Request": "true", "HX-Target": "progress"})
    assert progress.content.decode().lstrip().startswith('<section class="card" id="progress"')


def test_assign_form_shows_why_an_assignment_is_impossible(client, coordinator, reviewer):
    cohort = factories.make_cohort([factories.make_proposal(external_id="P-lonely")])
    client.force_login(coordinator)

    response = client.post(f"/cohorts/{cohort.pk}/assign/", {"reviewers": [reviewer.pk], "per_proposal": "2"})

    assert response.status_code == 400
    assert "Proposal P-lonely needs 2 more reviewer(s)" in response.content.decode()
    assert not Assignment.objects.exists()

    done = client.post(f"/cohorts/{cohort.pk}/assign/", {"reviewers": [reviewer.pk], "per_proposal": "1", "seed": "3"})
    assert done.status_code == 302
    assert Assignment.objects.get().reviewer == reviewer


def test_coordinator_adds_reassigns_and_removes_from_the_cohort_page(client, coordinator, reviewer, other_reviewer):
    cohort = factories.make_cohort([factories.make_proposal(external_id="P-one")])
    client.force_login(coordinator)
    hx = {"HX-Request": "true", "HX-Target": "assignments"}

    added = client.post(
        f"/cohorts/{cohort.pk}/assignments/add/", {"reviewer": reviewer.username, "proposal_id": "P-one"}, headers=hx
    )
    assert added.status_code == 200 and "rev-alice will review P-one" in added.content.decode()
    assert 'hx-swap-oob="true"' in added.content.decode()  # progress refreshes too
    assignment = Assignment.objects.get()

    moved = client.post(
        f"/cohorts/{cohort.pk}/assignments/{assignment.pk}/reassign/", {"reviewer": other_reviewer.username}
    )
    assert moved.status_code == 302
    assert Assignment.objects.get().reviewer == other_reviewer

    Review.objects.create(assignment=assignment)
    refused = client.post(f"/cohorts/{cohort.pk}/assignments/{assignment.pk}/remove/", headers=hx)
    assert "already started" in refused.content.decode()
    assert Assignment.objects.exists()

    Review.objects.all().delete()
    client.post(f"/cohorts/{cohort.pk}/assignments/{assignment.pk}/remove/")
    assert not Assignment.objects.exists()


def test_coordinator_reopens_a_submitted_review_from_the_cohort_page(client, coordinator, reviewer):
    cohort = factories.make_cohort([factories.make_proposal()])
    cohort_assign(cohort=cohort, reviewers=[reviewer], per_proposal=1, seed=1, user=coordinator)
    review = submit(Assignment.objects.get(), 40)
    client.force_login(coordinator)

    page = client.get(f"/cohorts/{cohort.pk}/").content.decode()
    assert "Reopen</button>" in page

    response = client.post(f"/cohorts/{cohort.pk}/assignments/{review.assignment_id}/reopen/")

    assert response.status_code == 302
    review.refresh_from_db()
    assert review.status == Review.Status.DRAFT
    assert AuditEvent.objects.filter(target_type="review", target_id=str(review.pk)).exists()


def test_status_buttons_open_and_close_the_cohort(client, coordinator):
    cohort = factories.make_cohort()
    client.force_login(coordinator)
    client.post(f"/cohorts/{cohort.pk}/status/", {"status": "open"})
    client.post(f"/cohorts/{cohort.pk}/status/", {"status": "closed"})
    cohort.refresh_from_db()
    assert cohort.status == "closed"
    assert "Reopen the cohort" in client.get(f"/cohorts/{cohort.pk}/").content.decode()


# Access: every page and API route, for every role


READ_PAGES = ["/cohorts/", "/cohorts/{cohort}/"]
WRITE_PAGES = [
    ("/cohorts/", {"name": "x"}),
    ("/cohorts/{cohort}/status/", {"status": "open"}),
    ("/cohorts/{cohort}/assign/", {"per_proposal": "1"}),
    ("/cohorts/{cohort}/assignments/add/", {}),
    ("/cohorts/{cohort}/assignments/{assignment}/remove/", {}),
    ("/cohorts/{cohort}/assignments/{assignment}/reassign/", {}),
    ("/cohorts/{cohort}/assignments/{assignment}/reopen/", {}),
]
READ_APIS = [
    "/api/v1/cohorts",
    "/api/v1/cohorts/{cohort}",
    "/api/v1/cohorts/{cohort}/progress",
    "/api/v1/cohorts/{cohort}/assignments",
]
WRITE_APIS = [
    ("post", "/api/v1/cohorts", {"name": "x"}),
    ("post", "/api/v1/cohorts/{cohort}/status", {"status": "open"}),
    ("post", "/api/v1/cohorts/{cohort}/assignments", {"reviewers": ["rev-alice"], "per_proposal": 1}),
    ("delete", "/api/v1/assignments/{assignment}", None),
    ("post", "/api/v1/assignments/{assignment}/reassign", {"reviewer": "rev-alice"}),
    ("post", "/api/v1/conflicts", {"reviewer": "rev-alice", "kind": "other", "author": "m"}),
]


@pytest.fixture
def urls(coordinator, reviewer):
    cohort = factories.make_cohort([factories.make_proposal()])
    assignment = factories.make_assignment(cohort, reviewer, cohort.proposals.get())

    def fill(url: str) -> str:
        return url.format(cohort=cohort.pk, assignment=assignment.pk)

    return fill


@pytest.mark.parametrize("url", READ_PAGES)
def test_cohort_pages_are_for_coordinators_and_analysts(client, urls, url, coordinator, analyst, reviewer):
    assert client.get(urls(url)).status_code == 302  # anonymous: to the login page
    assert client.get(urls(url)).url.startswith("/accounts/login/")
    for user, status in ((coordinator, 200), (analyst, 200), (reviewer, 403)):
        client.force_login(user)
        assert client.get(urls(url)).status_code == status, user


@pytest.mark.parametrize("url, data", WRITE_PAGES)
def test_cohort_actions_are_for_coordinators_only(client, urls, url, data, analyst, reviewer):
    response = client.post(urls(url), data)
    assert response.status_code == 302 and response.url.startswith("/accounts/login/")
    for user in (analyst, reviewer):
        client.force_login(user)
        assert client.post(urls(url), data).status_code == 403, user


@pytest.mark.parametrize("url", READ_APIS)
def test_cohort_api_reads_are_for_coordinators_and_analysts(urls, url, coordinator, analyst, reviewer):
    assert api().get(urls(url)).status_code == 401
    for user, status in ((coordinator, 200), (analyst, 200), (reviewer, 403)):
        assert api(user).get(urls(url)).status_code == status, user


@pytest.mark.parametrize("method, url, data", WRITE_APIS)
def test_cohort_api_writes_are_for_coordinators_only(urls, method, url, data, analyst, reviewer):
    assert getattr(api(), method)(urls(url), data, format="json").status_code == 401
    for user in (analyst, reviewer):
        response = getattr(api(user), method)(urls(url), data, format="json")
        assert response.status_code == 403, user
        assert response.json()["error"] == "forbidden"


def test_a_missing_cohort_is_404_for_those_who_may_read_cohorts(client, analyst):
    client.force_login(analyst)
    assert client.get("/cohorts/987654/").status_code == 404
    assert api(analyst).get("/api/v1/cohorts/987654/progress").status_code == 404

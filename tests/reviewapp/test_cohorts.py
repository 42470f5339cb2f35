"""Cohorts for coordinators and analysts: creating, opening and closing, counts, progress, pages and API access."""

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from reviewapp import protocol
from reviewapp.models import Assignment, AuditEvent, Cohort, Review
from reviewapp.selectors.cohorts import cohort_progress, cohorts_with_counts, proposal_title
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
    assert [c["name"] for c in listing.json()["results"]] == ["MIMIC-IV"] and listing.json()["count"] == 1

    detail = api(coordinator).get(f"/api/v1/cohorts/{body['id']}").json()
    for key in ("id", "name", "status", "reviewers_per_proposal", "seed", "created_at"):
        assert key in detail
    assert (detail["proposal_count"], detail["assignment_count"], detail["submitted_count"]) == (0, 0, 0)

    duplicate = api(coordinator).post("/api/v1/cohorts", {"name": "MIMIC-IV"})
    assert duplicate.status_code == 409 and "already exists" in duplicate.json()["detail"]
    assert duplicate.json()["error"] == "cohort_name_taken"
    assert api(coordinator).get("/api/v1/cohorts/999999").status_code == 404


def test_api_changes_status_and_refuses_a_skipped_step(coordinator):
    cohort = factories.make_cohort()
    refused = api(coordinator).post(f"/api/v1/cohorts/{cohort.pk}/status", {"status": "closed"})
    assert refused.status_code == 409 and refused.json()["error"] == "cohort_status_refused"

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


COHORT_TABS = ("", "proposals/", "people/", "exports/")


def test_analysts_read_the_cohort_pages_without_any_form_to_act(client, analyst, running_cohort):
    client.force_login(analyst)
    for url in ("/cohorts/", *(f"/cohorts/{running_cohort.pk}/{tab}" for tab in COHORT_TABS)):
        response = client.get(url)
        assert response.status_code == 200
        main = response.content.decode().split("<main")[1].split("cohort-exports")[0]
        assert '<form method="post"' not in main, url
    assert client.post("/cohorts/", {"name": "Not allowed"}).status_code == 403


def test_the_cohort_page_is_tabs_each_with_its_own_url(client, coordinator, running_cohort):
    client.force_login(coordinator)
    base = f"/cohorts/{running_cohort.pk}/"
    for tab in COHORT_TABS:
        html = client.get(base + tab).content.decode()
        # Every tab link keeps its href, swaps the tab with htmx and pushes its URL; the page's own is current.
        for other in COHORT_TABS:
            assert f'href="{base}{other}" hx-get="{base}{other}" hx-target="#cohort-view"' in html
        assert html.count('aria-current="page"') == 1
        current = f'href="{base}{tab}" hx-get="{base}{tab}" hx-target="#cohort-view" hx-swap="outerHTML"'
        assert current + ' hx-push-url="true" aria-current="page"' in html
        assert 'class="cohort-bar" id="summary"' in html and "<strong>4</strong> proposals" in html

    swapped = client.get(base + "proposals/", headers={"HX-Request": "true", "HX-Target": "cohort-view"})
    html = swapped.content.decode()
    assert html.lstrip().startswith('<div id="cohort-view">') and "<html" not in html
    assert 'id="proposals"' in html


def test_the_overview_says_where_the_cohort_stands(client, coordinator, running_cohort):
    client.force_login(coordinator)
    html = client.get(f"/cohorts/{running_cohort.pk}/").content.decode()
    assert "5 of 8 reviews submitted (62%)" in html
    assert f'href="/cohorts/{running_cohort.pk}/statistics/"' in html
    assert 'id="progress"' not in html and 'id="cohort-exports"' not in html


def test_the_proposals_tab_lists_titles_and_review_counts(client, coordinator, analyst):
    task = factories.make_task(key="PMID-7")
    proposal = factories.make_proposal(
        task=task,
        external_id="P-rapa",
        statement="Rapamycin preserves follicles in aged mice. It does so by lowering mTORC1 activity.",
        author="gen-model-x",
    )
    cohort = factories.make_cohort([proposal])
    assignment = factories.make_assignment(cohort, factories.make_user("reviewer"), proposal)
    submit(assignment, 30)
    factories.make_assignment(cohort, factories.make_user("reviewer"), proposal)
    client.force_login(coordinator)
    html = client.get(f"/cohorts/{cohort.pk}/proposals/").content.decode()
    assert "<td>Rapamycin preserves follicles in aged mice.</td>" in html
    assert "lowering mTORC1" not in html
    assert "<code>P-rapa</code>" in html and "<code>PMID-7</code>" in html and "gen-model-x" in html
    assert '<td class="number">1 / 2</td>' in html
    client.force_login(analyst)
    assert "gen-model-x" not in client.get(f"/cohorts/{cohort.pk}/proposals/").content.decode()


@pytest.mark.parametrize(
    "statement, title",
    [
        ("One sentence only", "One sentence only"),
        ("First claim holds! Second one.", "First claim holds!"),
        ("Does it work? Maybe.", "Does it work?"),
        ("Version 2.5 of the drug works. More.", "Version 2.5 of the drug works."),
        ("  Spread\nover   lines. Next.", "Spread over lines."),
        ("word " * 60, ("word " * 31).strip() + "…"),
    ],
)
def test_a_proposals_title_is_the_first_sentence_of_its_statement(statement, title):
    assert proposal_title(statement) == title


def test_the_people_tab_shows_progress_deferrals_and_the_assign_form(client, coordinator, running_cohort):
    client.force_login(coordinator)
    html = client.get(f"/cohorts/{running_cohort.pk}/people/").content.decode()

    assert 'id="progress"' in html and 'aria-valuenow="3"' in html
    assert "1 min 00 s" in html
    assert "Outside my expertise" in html
    assert f'action="/cohorts/{running_cohort.pk}/assign/"' in html
    exports = client.get(f"/cohorts/{running_cohort.pk}/exports/").content.decode()
    assert 'id="cohort-exports"' in exports


def test_cohort_page_paginates_assignments_and_htmx_gets_only_the_table(client, coordinator):
    reviewers = [factories.make_user("reviewer") for _ in range(4)]
    cohort = factories.make_cohort([factories.make_proposal() for _ in range(40)])
    cohort_assign(cohort=cohort, reviewers=reviewers, per_proposal=2, seed=1, user=coordinator)
    client.force_login(coordinator)

    full = client.get(f"/cohorts/{cohort.pk}/people/").content.decode()
    assert full.count("Reassign</button>") == 50
    assert "page 1 of 2" in full

    partial = client.get(
        f"/cohorts/{cohort.pk}/people/?page=2", headers={"HX-Request": "true", "HX-Target": "assignments"}
    )
    html = partial.content.decode()
    assert html.count("Reassign</button>") == 30
    assert "<html" not in html and 'id="progress"' not in html

    progress = client.get(f"/cohorts/{cohort.pk}/people/", headers={"HX-Request": "true", "HX-Target": "progress"})
    assert progress.content.decode().lstrip().startswith('<section class="card" id="progress"')


def test_assign_form_shows_why_an_assignment_is_impossible(client, coordinator, reviewer):
    cohort = factories.make_cohort([factories.make_proposal(external_id="P-lonely")])
    client.force_login(coordinator)

    response = client.post(
        f"/cohorts/{cohort.pk}/assign/", {"reviewers": [reviewer.pk], "per_proposal": "2", "confirm": "open"}
    )

    assert response.status_code == 400
    assert "Proposal P-lonely needs 2 more reviewer(s)" in response.content.decode()
    assert not Assignment.objects.exists()

    done = client.post(
        f"/cohorts/{cohort.pk}/assign/",
        {"reviewers": [reviewer.pk], "per_proposal": "1", "seed": "3", "confirm": "open"},
    )
    assert done.status_code == 302 and done.url == f"/cohorts/{cohort.pk}/people/"
    assert Assignment.objects.get().reviewer == reviewer


def test_assigning_in_a_draft_cohort_says_it_opens_it_and_asks_first(client, coordinator, reviewer, other_reviewer):
    cohort = factories.make_cohort([factories.make_proposal(), factories.make_proposal()], name="Thymus")
    client.force_login(coordinator)
    people = client.get(f"/cohorts/{cohort.pk}/people/").content.decode()
    assert "Assigning opens the cohort." in people and "nothing more can be imported" in people
    assert "Adding an assignment opens the cohort" in people
    assert f'<form method="post" action="/cohorts/{cohort.pk}/assignments/add/">' in people  # no htmx: it asks
    assert "Before you assign:" in client.get(f"/cohorts/{cohort.pk}/").content.decode()

    asked = client.post(
        f"/cohorts/{cohort.pk}/assign/", {"reviewers": [reviewer.pk, other_reviewer.pk], "per_proposal": "1"}
    )
    html = asked.content.decode()
    assert asked.status_code == 200 and not Assignment.objects.exists()
    cohort.refresh_from_db()
    assert cohort.status == Cohort.Status.DRAFT
    assert "Assign 2 reviewers, 1 per proposal, to the 2 proposals of “Thymus”." in html
    assert "This opens the cohort." in html and "nothing more can be imported" in html
    for name, value in (("reviewers", reviewer.pk), ("reviewers", other_reviewer.pk), ("per_proposal", 1)):
        assert f'<input type="hidden" name="{name}" value="{value}">' in html
    assert '<input type="hidden" name="confirm" value="open">' in html

    added = client.post(f"/cohorts/{cohort.pk}/assignments/add/", {"reviewer": reviewer.username, "proposal_id": "x"})
    assert "This opens the cohort." in added.content.decode() and not Assignment.objects.exists()

    confirmed = client.post(
        f"/cohorts/{cohort.pk}/assign/",
        {"reviewers": [reviewer.pk, other_reviewer.pk], "per_proposal": "1", "confirm": "open"},
    )
    assert confirmed.status_code == 302
    cohort.refresh_from_db()
    assert cohort.status == Cohort.Status.OPEN and Assignment.objects.count() == 2

    # An open cohort is topped up without asking.
    again = client.post(
        f"/cohorts/{cohort.pk}/assign/", {"reviewers": [reviewer.pk, other_reviewer.pk], "per_proposal": "2"}
    )
    assert again.status_code == 302 and Assignment.objects.count() == 4


def test_coordinator_adds_reassigns_and_removes_from_the_cohort_page(client, coordinator, reviewer, other_reviewer):
    cohort = factories.make_cohort([factories.make_proposal(external_id="P-one")])
    client.force_login(coordinator)
    hx = {"HX-Request": "true", "HX-Target": "assignments"}

    added = client.post(
        f"/cohorts/{cohort.pk}/assignments/add/",
        {"reviewer": reviewer.username, "proposal_id": "P-one", "confirm": "open"},
        headers=hx,
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

    page = client.get(f"/cohorts/{cohort.pk}/people/").content.decode()
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


READ_PAGES = ["/cohorts/", *(f"/cohorts/{{cohort}}/{tab}" for tab in COHORT_TABS)]
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

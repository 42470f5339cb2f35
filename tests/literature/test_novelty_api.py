"""On-demand novelty checks of a proposal through the API, done by a worker (eager here)."""

import pytest

from literature.models import NoveltyCheck
from screening.llm.models import ModelEndpoint, Roster, RosterMember
from tests import factories
from tests.api_schema_support import api_schema, assert_conforms


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    with django_db_blocker.unblock():
        return api_schema()


@pytest.fixture
def novelty_judge(db):
    roster = Roster.objects.create(name="Default", is_default=True)
    endpoint = ModelEndpoint.objects.create(
        display_name="Judge", company="Example", protocol="openai", base_url="http://127.0.0.1:9", model_id="judge"
    )
    RosterMember.objects.create(roster=roster, endpoint=endpoint, role=RosterMember.Role.NOVELTY)
    return endpoint


def test_a_coordinator_checks_a_proposal_and_reads_the_verdict(
    client, coordinator, analyst, novelty_judge, settings, django_capture_on_commit_callbacks, schema
):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    proposal = factories.make_proposal(statement="Zeta quux frobnication prolongs murine lifespan.")
    client.force_login(coordinator)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/api/v1/literature/checks", {"proposal": proposal.external_id}, content_type="application/json"
        )
    assert response.status_code == 202
    assert response.json()["state"] == "pending" and response.json()["reference"] is None
    assert_conforms(schema, "/api/v1/literature/checks", response.json(), method="post", status=202)
    check_id = response.json()["id"]
    client.force_login(analyst)
    body = client.get(f"/api/v1/literature/checks/{check_id}").json()
    # The corpus is empty: nothing passes the gate, so the verdict is not_reported without a model call.
    assert (body["state"], body["verdict"], body["proposal"]) == ("done", "not_reported", proposal.external_id)
    assert "gate" in body["reason"]
    assert_conforms(schema, "/api/v1/literature/checks/{check_id}", body)


def test_checks_refuse_unknown_proposals_and_non_coordinators(client, coordinator, analyst, reviewer, novelty_judge):
    client.force_login(coordinator)
    response = client.post("/api/v1/literature/checks", {"proposal": "nope"}, content_type="application/json")
    assert (response.status_code, response.json()["error"]) == (400, "unknown_proposal")
    for user in (analyst, reviewer):
        client.force_login(user)
        response = client.post("/api/v1/literature/checks", {"proposal": "nope"}, content_type="application/json")
        assert response.status_code == 403
    assert not NoveltyCheck.objects.exists()


def test_without_a_literature_judge_the_check_is_refused_plainly(client, coordinator):
    proposal = factories.make_proposal()
    client.force_login(coordinator)
    response = client.post(
        "/api/v1/literature/checks", {"proposal": proposal.external_id}, content_type="application/json"
    )
    assert (response.status_code, response.json()["error"]) == (503, "not_configured")

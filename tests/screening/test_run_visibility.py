"""Who may read a run by its id: a run started on the public page or API is public; a benchmark set's run is for
coordinators and analysts only, and anyone else gets the same 404 as for an unknown id (API, page and download)."""

import uuid

import pytest
from django.test import Client
from rest_framework.test import APIClient

from reviewapp.services.accounts import token_create
from screening.models import Run
from screening.services.runs import run_start_for_set

QUESTION = "How does remodelling of the bone-marrow niche affect mutant clones?"


def api(run_id) -> str:
    return f"/api/v1/open-hypothesis/runs/{run_id}"


def addresses(run_id) -> list[str]:
    return [api(run_id), f"/open-hypothesis/{run_id}", f"/open-hypothesis/{run_id}/json"]


@pytest.fixture
def set_run(db) -> Run:
    return run_start_for_set(question=QUESTION, background="", shuffle_seed=7, roster={"name": "r", "roles": {}})


def browser(user=None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def test_a_benchmark_set_run_is_not_public(set_run):
    assert not set_run.public


def test_anonymous_callers_get_404_for_a_set_run_as_for_an_unknown_id(set_run):
    for address in addresses(set_run.public_id):
        response = browser().get(address)
        assert response.status_code == 404, address
        assert QUESTION not in response.content.decode()
    unknown = browser().get(api(uuid.uuid4())).json()
    assert browser().get(api(set_run.public_id)).json() == unknown


def test_a_reviewer_gets_404_for_a_set_run_by_session_and_by_token(set_run, reviewer):
    for address in addresses(set_run.public_id):
        assert browser(reviewer).get(address).status_code == 404, address
    _, key = token_create(user=reviewer)
    assert APIClient().get(api(set_run.public_id), HTTP_AUTHORIZATION=f"Token {key}").status_code == 404


@pytest.mark.parametrize("role", ["coordinator", "analyst"])
def test_coordinators_and_analysts_read_a_set_run(set_run, role, request):
    user = request.getfixturevalue(role)
    for address in addresses(set_run.public_id):
        assert browser(user).get(address).status_code == 200, address
    _, key = token_create(user=user)
    response = APIClient().get(api(set_run.public_id), HTTP_AUTHORIZATION=f"Token {key}")
    assert response.status_code == 200 and response.json()["question"] == QUESTION


def test_a_run_started_on_the_public_api_is_public(client, roster):
    started = client.post(
        "/api/v1/open-hypothesis/runs",
        {"question": QUESTION},
        content_type="application/json",
        REMOTE_ADDR="198.51.100.7",
    )
    assert started.status_code == 202
    run = Run.objects.get(public_id=started.json()["id"])
    assert run.public
    for address in addresses(run.public_id):
        assert browser().get(address).status_code == 200, address

"""Inputs the schema forbids are refused by the server, and inputs the server refuses are forbidden by the schema:
an empty query value or field, an empty list that would do nothing, a control character in a text field. Each
refusal is the standard error body with a problem naming the query parameter or field."""

import pytest
from rest_framework.test import APIClient

from tests import factories
from tests.api_schema_support import api_schema


@pytest.fixture
def coordinator_api(coordinator):
    client = APIClient()
    client.force_authenticate(coordinator)
    return client


def _refusal(response, field: str) -> list[str]:
    assert response.status_code == 400, (response.status_code, response.content)
    body = response.json()
    assert set(body) == {"error", "detail", "problems"}
    messages = [item["message"] for item in body["problems"] if item.get("field") == field]
    assert messages, body
    return messages


def test_an_empty_user_query_on_tokens_is_refused_naming_the_query(coordinator_api):
    response = coordinator_api.get("/api/v1/auth/tokens?user=")
    _refusal(response, "user")
    assert "query" in response.json()["detail"]


def test_an_empty_lang_query_on_a_run_is_refused_naming_the_query(coordinator_api, db):
    run = factories.make_run() if hasattr(factories, "make_run") else None
    run_id = run.public_id if run is not None else "00000000-0000-0000-0000-000000000000"
    response = coordinator_api.get(f"/api/v1/open-hypothesis/runs/{run_id}?lang=")
    _refusal(response, "lang")


def test_an_empty_address_to_unlock_is_refused_naming_the_field(coordinator_api):
    response = coordinator_api.post("/api/v1/users/unlock", {"address": ""}, format="json")
    _refusal(response, "address")


def test_an_empty_hypotheses_list_for_the_panel_is_refused_naming_the_field(coordinator_api):
    response = coordinator_api.post("/api/v1/ai-panel/hypotheses", {"benchmark": 1, "hypotheses": []}, format="json")
    _refusal(response, "hypotheses")


def test_an_empty_comparisons_list_is_refused_naming_the_field(coordinator_api):
    cohort = factories.make_cohort()
    response = coordinator_api.post(f"/api/v1/cohorts/{cohort.pk}/comparisons", {"comparisons": []}, format="json")
    _refusal(response, "comparisons")


def test_a_control_character_in_a_text_field_is_refused_as_such(coordinator_api):
    response = coordinator_api.post("/api/v1/cohorts", {"name": "Spring\x01 cohort"}, format="json")
    (message,) = _refusal(response, "name")
    assert "control character" in message
    assert "wrong type" not in message


def test_the_schema_forbids_what_the_server_refuses(db):
    schema = api_schema()
    paths = schema["paths"]

    def query(path, name):
        (parameter,) = [p for p in paths[path]["get"]["parameters"] if p["name"] == name and p["in"] == "query"]
        return parameter["schema"]

    assert query("/api/v1/auth/tokens", "user").get("minLength", 0) >= 1 or "pattern" in query(
        "/api/v1/auth/tokens", "user"
    )
    assert "enum" in query("/api/v1/open-hypothesis/runs/{run_id}", "lang") or "$ref" in query(
        "/api/v1/open-hypothesis/runs/{run_id}", "lang"
    )
    components = schema["components"]["schemas"]
    assert components["UserUnlockByAddressRequest"]["properties"]["address"]["minLength"] == 1
    panel = paths["/api/v1/ai-panel/hypotheses"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert components[panel["$ref"].rsplit("/", 1)[-1]]["properties"]["hypotheses"]["minItems"] == 1
    comparisons = paths["/api/v1/cohorts/{cohort_id}/comparisons"]["post"]["requestBody"]["content"]
    name = comparisons["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert components[name]["properties"]["comparisons"]["minItems"] == 1


def test_a_nul_in_a_query_or_a_page_form_is_refused_as_a_control_character(coordinator_api):
    response = coordinator_api.post("/api/v1/users", {"username": "ada\x00", "role": "reviewer"}, format="json")
    (message,) = _refusal(response, "username")
    assert message.startswith("Control characters are not allowed") and "U+0000" in message

"""Every answer of the API is typed in /api/v1/schema, and real answers match their types.

A generated client turns a typed answer into its own model objects; an answer declared as a bare object comes back
as a dict nobody can rely on. Real answers from rich data (the appendices' study set) and from empty, unstarted
states are checked against the schema with every object closed (tests.api_schema_support)."""

import pytest
from rest_framework.test import APIClient

from screening.models import Run
from tests import factories
from tests.api_schema_support import api_schema, assert_conforms
from tests.benchmark_support import make_set
from tests.benchmarks.test_appendix_analyses import study_data
from tests.screening_support import drive

# Answers still described in prose only; none may be added.
UNTYPED = {
    # A recorded call's request body is the provider's request exactly as it was sent: any JSON.
    ("get", "/api/v1/open-hypothesis/runs/{run_id}/calls"),
}


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    with django_db_blocker.unblock():
        return api_schema()


def _untyped(node, components, seen=frozenset()):
    """The paths inside a schema node to a value of any type or an object whose properties are unknown (a map of
    typed values is typed)."""
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        return [] if name in seen else _untyped(components[name], components, seen | {name})
    if not {"type", "allOf", "oneOf", "anyOf", "enum", "properties"} & set(node):
        return ["any"]  # a value of any type
    found = []
    for key in ("allOf", "oneOf", "anyOf"):
        for option in node.get(key, []):
            found += _untyped(option, components, seen)
    if node.get("type") == "object" or "properties" in node:
        values = node.get("additionalProperties")
        if "properties" not in node and not isinstance(values, dict) or values == {}:
            found.append("object")
        for name, value in node.get("properties", {}).items():
            found += [f"{name}.{inner}" for inner in _untyped(value, components, seen)]
        if isinstance(values, dict) and values:
            found += [f"*.{inner}" for inner in _untyped(values, components, seen)]
    if node.get("type") == "array":
        found += [f"[].{inner}" for inner in _untyped(node.get("items", {}), components, seen)]
    return found


def test_every_json_answer_is_typed(schema):
    components = schema["components"]["schemas"]
    untyped = {}
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                body = response.get("content", {}).get("application/json", {}).get("schema")
                if body is None or (method, path) in UNTYPED:
                    continue
                if found := _untyped(body, components):
                    untyped[f"{method.upper()} {path} {status}"] = found
    assert not untyped, untyped


def test_the_untyped_allowance_lists_only_operations_that_exist(schema):
    assert all(path in schema["paths"] and method in schema["paths"][path] for method, path in UNTYPED)


def _answer(user, url: str):
    client = APIClient()
    client.force_authenticate(user)
    response = client.get(url)
    assert response.status_code == 200, response.content[:500]
    return response.json()


STATISTICS = "/api/v1/benchmarks/{benchmark_id}/statistics"
QUESTION = "Which interventions extend healthy lifespan in mammals by raising NAD+ levels?"


def test_a_rich_sets_statistics_match_their_schema(schema, db):
    benchmark = make_set(study_data())
    body = _answer(factories.make_user("analyst"), f"/api/v1/benchmarks/{benchmark.pk}/statistics")
    assert body["study"]["originality"]["comparison"]["dimensions"], "the rich set reaches the deepest sections"
    assert_conforms(schema, STATISTICS, body)


def test_an_empty_sets_statistics_match_their_schema(schema, db):
    benchmark = make_set()
    body = _answer(factories.make_user("coordinator"), f"/api/v1/benchmarks/{benchmark.pk}/statistics")
    assert body["hypotheses"] == 0
    assert_conforms(schema, STATISTICS, body)


RUN = "/api/v1/open-hypothesis/runs/{run_id}"


def test_a_runs_answer_matches_its_schema_queued_and_completed(schema, roster, memory_broker):
    client = APIClient()
    started = client.post("/api/v1/open-hypothesis/runs", {"question": QUESTION}, format="json")
    assert started.status_code == 202, started.content[:300]
    url = f"/api/v1/open-hypothesis/runs/{started.json()['id']}"
    queued = client.get(url).json()
    assert queued["status"] == "queued" and queued["counts"]["generated"] == 0
    assert_conforms(schema, RUN, queued)

    drive(Run.objects.get(public_id=started.json()["id"]))
    completed = client.get(url).json()
    assert completed["status"] == "completed" and set(completed["steps"].values()) == {"completed"}
    assert any(h["literature"]["verdict"] for h in completed["hypotheses"])
    assert_conforms(schema, RUN, completed)

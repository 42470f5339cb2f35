"""The API answers as its schema says: bodies in the media type declared, integers within their bounds, the methods
of a path in its `Allow`."""

import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from tests import factories

BEYOND_64_BITS = 2**63


@pytest.fixture
def coordinator_client(client, coordinator):
    client.force_login(coordinator)
    return client


def _paths_split_across_views(patterns=None, prefix=""):
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            yield from _paths_split_across_views(entry.url_patterns, route)
        elif isinstance(entry, URLPattern) and getattr(entry.callback, "views_by_method", None):
            yield route, set(entry.callback.views_by_method)


def test_a_405_names_every_method_of_a_path_split_across_views(coordinator_client, db):
    cohort = factories.make_cohort()
    split = list(_paths_split_across_views())
    assert len(split) >= 8
    for route, methods in split:
        if set(re.findall(r"<int:(\w+)>", route)) - {"cohort_id", "benchmark_id"}:
            continue  # an id of a row inside a cohort: a 404 may come first
        url = "/" + route.replace("<int:cohort_id>", str(cohort.pk)).replace("<int:benchmark_id>", "1")
        other = next(method for method in ("PUT", "PATCH", "DELETE") if method not in methods)
        response = coordinator_client.generic(other, url, "{}", content_type="application/json")
        assert response.status_code == 405, (url, other, response.status_code)
        assert response.json()["error"] == "method_not_allowed"
        allowed = {method.strip() for method in response["Allow"].split(",")}
        assert methods | {"OPTIONS"} <= allowed, (url, allowed)
        assert other not in allowed


def test_a_json_endpoint_refuses_a_form_body_with_415(coordinator_client):
    response = coordinator_client.post("/api/v1/cohorts", {"name": "Form-encoded"})
    assert response.status_code == 415
    assert response.json()["error"] == "unsupported_media_type"


def test_an_upload_sent_as_json_is_refused_with_415(coordinator_client):
    cohort = factories.make_cohort()
    response = coordinator_client.post(
        f"/api/v1/cohorts/{cohort.pk}/import", {"file": "a,b"}, content_type="application/json"
    )
    assert response.status_code == 415


def test_integers_past_64_bits_are_refused_as_input_not_a_server_error(coordinator_client):
    cohort = factories.make_cohort()
    created = coordinator_client.post(
        "/api/v1/cohorts", {"name": "Big seed", "seed": BEYOND_64_BITS}, content_type="application/json"
    )
    assert created.status_code == 400 and created.json()["error"] == "invalid_body"
    paged = coordinator_client.get(f"/api/v1/cohorts/{cohort.pk}/assignments?offset={BEYOND_64_BITS}")
    assert paged.status_code == 400 and paged.json()["error"] == "invalid_body"
    missing = coordinator_client.get(f"/api/v1/cohorts/{BEYOND_64_BITS}")
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"
    tokens = coordinator_client.get(f"/api/v1/auth/tokens?user={BEYOND_64_BITS}")
    assert tokens.status_code == 400 and tokens.json()["error"] == "invalid_body"

"""The API's OpenAPI schema (/api/v1/schema) and its reference page (/api/v1/docs).

The schema is generated from the views: a view that does not say what it takes and answers makes drf-spectacular
warn, and a warning fails here, as does any URL under /api/v1/ missing from the schema or an operation without its
bodies and error codes.
"""

import io
import re

import pytest
import yaml
from django.conf import settings
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.urls import URLPattern, URLResolver, get_resolver

from reviewapp.core.schema import ErrorSerializer

DOCUMENTATION_URLS = {"api-schema", "api-docs"}
# Codes that never reach the API: the review, job and contribution-family pages' own refusals, and the simulated
# providers' error bodies.
NOT_API_CODES = {
    *("stale_review", "review_locked", "review_not_submitted", "invalid_review", "review_incomplete"),
    *("invalid_family", "unknown_proposals"),
    *("job_failed", "job_not_failed", "run_not_failed"),
    *("rate_limit_exceeded", "enforced_spend_limit_reached", "insufficient_quota"),
}
BODY_METHODS = {"post", "put", "patch"}
# A body-less POST: the action is the whole request.
WITHOUT_BODY = {
    ("/api/v1/benchmarks/{benchmark_id}/run", "post"),
    ("/api/v1/cohorts/{cohort_id}/ratings/recompute", "post"),
    ("/api/v1/benchmarks/{benchmark_id}/forecasts/repeat", "post"),
}


def _api_routes(patterns=None, prefix=""):
    """(OpenAPI path, methods) of every URL pattern under api/v1/."""
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            yield from _api_routes(entry.url_patterns, route)
        elif isinstance(entry, URLPattern) and route.startswith("api/v1/") and entry.name not in DOCUMENTATION_URLS:
            views = getattr(entry.callback, "views_by_method", None)
            if views:
                methods = {method.lower() for method in views}
            else:
                cls = entry.callback.cls
                methods = {m for m in ("get", "post", "put", "patch", "delete") if hasattr(cls, m)}
            yield "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route), methods


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    out = io.StringIO()
    with django_db_blocker.unblock():
        # --fail-on-warn: any warning or error of the generator (a view it cannot read) fails the command.
        call_command("spectacular", "--fail-on-warn", "--validate", stdout=out, stderr=io.StringIO())
    return yaml.safe_load(out.getvalue())


def test_the_schema_is_generated_without_a_warning_and_is_valid_openapi(schema):
    assert schema["openapi"].startswith("3.")
    assert schema["info"]["title"] == "Open Hypothesis API"


def test_the_schema_passes_openapi_spec_validator(schema):
    from openapi_spec_validator.validation.validators import OpenAPIV30SpecValidator

    problems = [
        f"{list(error.absolute_path)}: {error.message}" for error in OpenAPIV30SpecValidator(schema).iter_errors()
    ]
    assert not problems, problems


def test_bodies_are_json_only_and_uploads_multipart_only(schema):
    uploads = {
        "/api/v1/cohorts/{cohort_id}/import",
        "/api/v1/benchmarks/{benchmark_id}/import",
        "/api/v1/literature/import",
    }
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            media = list(operation.get("requestBody", {}).get("content", {}))
            if media:
                expected = ["multipart/form-data"] if path in uploads else ["application/json"]
                assert media == expected, (method, path, media)


def _integer_inputs_without_bounds(schema, node, where, seen=()):
    """Where an integer the client sends has no minimum or maximum (an enum is bounded)."""
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name not in seen:
            yield from _integer_inputs_without_bounds(
                schema, schema["components"]["schemas"][name], f"{where}>{name}", (*seen, name)
            )
        return
    for key in ("allOf", "oneOf", "anyOf"):
        for option in node.get(key, []):
            yield from _integer_inputs_without_bounds(schema, option, where, seen)
    if node.get("type") == "integer" and "enum" not in node and not {"minimum", "maximum"} <= set(node):
        yield where
    for name, value in node.get("properties", {}).items():
        yield from _integer_inputs_without_bounds(schema, value, f"{where}.{name}", seen)
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            yield from _integer_inputs_without_bounds(schema, node[key], f"{where}[]", seen)


def test_every_integer_a_client_sends_has_bounds(schema):
    unbounded = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                where = f"{method} {path} {parameter['in']} {parameter['name']}"
                unbounded += _integer_inputs_without_bounds(schema, parameter["schema"], where)
            for media, content in operation.get("requestBody", {}).get("content", {}).items():
                unbounded += _integer_inputs_without_bounds(schema, content["schema"], f"{method} {path} {media}")
    assert not unbounded, unbounded


def test_every_api_url_is_in_the_schema_with_each_method(schema):
    routes = dict(_api_routes())
    assert len(routes) > 40
    for path, methods in routes.items():
        assert path in schema["paths"], f"{path} is not in the API schema"
        assert methods <= set(schema["paths"][path]), (path, methods, set(schema["paths"][path]))


def test_every_operation_documents_its_bodies_and_error_codes(schema):
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            where = f"{method.upper()} {path}"
            responses = operation["responses"]
            successes = [status for status in responses if status.startswith("2")]
            assert successes, f"{where} documents no success"
            for status in successes:
                if status != "204":
                    assert responses[status].get("content"), f"{where} {status} has no body"
            if method in BODY_METHODS and (path, method) not in WITHOUT_BODY:
                assert operation.get("requestBody", {}).get("content"), f"{where} documents no request body"
            errors = [status for status in responses if status[0] in "45"]
            assert "500" in errors, where
            for status in errors:
                assert re.search(r"Error codes: `\w+`", responses[status]["description"]), (where, status)
                content = responses[status]["content"]["application/json"]["schema"]
                assert content == {"$ref": "#/components/schemas/Error"}, (where, status)


def test_the_error_body_is_documented_as_error_detail_and_problems(schema):
    components = schema["components"]["schemas"]
    error = components["Error"]
    assert set(error["properties"]) == set(ErrorSerializer().fields) == {"error", "detail", "problems"}
    assert error["properties"]["error"] == {"$ref": "#/components/schemas/ErrorCode"}
    problem = components[error["properties"]["problems"]["items"]["$ref"].rsplit("/", 1)[-1]]
    assert set(problem["properties"]) == {"table", "row", "field", "message"} and problem["required"] == ["message"]


def test_the_error_codes_are_an_enum_of_every_code_an_operation_lists(schema):
    enum = set(schema["components"]["schemas"]["ErrorCode"]["enum"])
    listed = set()
    for operations in schema["paths"].values():
        for operation in operations.values():
            for status, response in operation["responses"].items():
                if status[0] in "45":
                    codes = response["x-error-codes"]
                    assert response["description"] == "Error codes: " + ", ".join(f"`{c}`" for c in codes) + "."
                    listed |= set(codes)
    assert enum == listed
    assert {"cohort_frozen", "not_acceptable", "unsupported_media_type", "invalid_question"} <= enum


def test_every_error_code_the_code_base_raises_is_in_the_schema(schema):
    """A code raised but listed by no operation would reach a generated client as a value its enum cannot read."""
    enum = set(schema["components"]["schemas"]["ErrorCode"]["enum"])
    raised = set()
    for folder in ("reviewapp", "screening", "literature"):
        for source in (settings.BASE_DIR / folder).rglob("*.py"):
            text = source.read_text()
            raised |= set(re.findall(r'\bcode(?:=| = )"(\w+)"', text))
    # Codes of the simulated model providers' own protocols and of stored job states are not API errors.
    assert not raised - enum - NOT_API_CODES, sorted(raised - enum - NOT_API_CODES)


def test_conflicts_with_the_current_state_are_409_with_their_own_codes(schema):
    def codes(path, method, status):
        return schema["paths"][path][method]["responses"][status]["x-error-codes"]

    assert "cohort_name_taken" in codes("/api/v1/cohorts", "post", "409")
    assert "cohort_status_refused" in codes("/api/v1/cohorts/{cohort_id}/status", "post", "409")
    assert "cohort_closed" in codes("/api/v1/cohorts/{cohort_id}/assignments", "post", "409")
    assert "assignment_started" in codes("/api/v1/assignments/{assignment_id}", "delete", "409")
    assert "assignment_started" in codes("/api/v1/assignments/{assignment_id}/reassign", "post", "409")
    assert "cohort_frozen" in codes("/api/v1/cohorts/{cohort_id}/import", "post", "409")
    assert "password_change_required" in codes("/api/v1/auth/token", "post", "403")
    assert "unsupported_media_type" in codes("/api/v1/cohorts", "post", "415")
    assert "not_acceptable" in codes("/api/v1/cohorts", "get", "406")


def test_endpoint_specific_error_codes_are_listed(schema):
    run_create = schema["paths"]["/api/v1/open-hypothesis/runs"]["post"]["responses"]
    assert "`question_too_short`" in run_create["400"]["description"]
    assert "`client_limit`" in run_create["429"]["description"]
    assert "`queue_full`" in run_create["503"]["description"]
    assign = schema["paths"]["/api/v1/cohorts/{cohort_id}/assignments"]["post"]["responses"]
    assert "`assignment_impossible`" in assign["400"]["description"]
    token = schema["paths"]["/api/v1/auth/token"]["post"]["responses"]
    assert "`locked_out`" in token["429"]["description"] and "401" not in token
    signed_in = schema["paths"]["/api/v1/cohorts"]["get"]["responses"]
    assert "`password_change_required`" in signed_in["403"]["description"]


def test_request_and_answer_bodies_come_from_the_views_serializers(schema):
    components = schema["components"]["schemas"]
    create = schema["paths"]["/api/v1/cohorts"]["post"]
    body = create["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert set(components[body]["properties"]) == {"name", "description", "reviewers_per_proposal", "seed"}
    answer = create["responses"]["201"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert {"id", "status", "proposal_count", "is_demo"} <= set(components[answer]["properties"])
    listed = schema["paths"]["/api/v1/cohorts"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    page = components[listed["$ref"].rsplit("/", 1)[-1]]
    assert set(page["properties"]) == {"count", "limit", "offset", "results"}
    table_s = schema["paths"]["/api/v1/benchmarks/{benchmark_id}/table-s.xlsx"]["get"]["responses"]["200"]
    xlsx = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    assert list(table_s["content"]) == [xlsx, "application/octet-stream"]
    assert table_s["content"][xlsx]["schema"] == {"type": "string", "format": "binary"}
    csv = schema["paths"]["/api/v1/cohorts/{cohort_id}/reviews.csv"]["get"]["responses"]["200"]["content"]
    assert csv == {"text/csv": {"schema": {"type": "string"}}}


def test_the_schema_is_served_to_anyone(client):
    response = client.get("/api/v1/schema?format=json")
    assert response.status_code == 200
    assert "/api/v1/open-hypothesis/runs" in response.json()["paths"]


def test_the_reference_page_loads_only_this_sites_assets_and_no_inline_script(client):
    response = client.get("/api/v1/docs")
    assert response.status_code == 200
    html = response.content.decode()
    sources = re.findall(r'<(?:script|link)[^>]*(?:src|href)="([^"]+)"', html)
    assert any("swagger-ui-bundle.js" in source for source in sources)
    assert all(source.startswith("/") and not source.startswith("//") for source in sources), sources
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), "an inline script"
    assert "<style" not in html
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
    script = client.get(next(source for source in sources if "script" in source and "swagger" not in source))
    assert script.status_code == 200 and script["Content-Type"].startswith("application/javascript")
    assert "/api/v1/schema" in script.content.decode()
    for source in sources:
        if source.startswith(settings.STATIC_URL):
            assert finders.find(source.removeprefix(settings.STATIC_URL)), f"{source} is not among the static files"


@pytest.mark.browser
def test_the_reference_page_shows_every_operation_under_the_sites_policy(live_server, page):
    from playwright.sync_api import expect

    problems = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    outside = []
    page.on("request", lambda request: None if request.url.startswith(live_server.url) else outside.append(request.url))
    page.goto(f"{live_server.url}/api/v1/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Open Hypothesis API")
    expect(page.locator(".opblock-summary-path", has_text="/api/v1/open-hypothesis/runs").first).to_be_visible()
    assert page.locator(".opblock").count() >= 50
    assert not problems, problems  # a Content-Security-Policy refusal is a console error
    assert not [url for url in outside if not url.startswith("data:")], outside


def test_every_list_answer_is_a_page(schema):
    """A list comes back as the one envelope, `?limit=&offset=` in (reviewapp.core.paging)."""
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                body = response.get("content", {}).get("application/json", {}).get("schema", {})
                assert body.get("type") != "array", f"{method.upper()} {path} {status} answers a bare list"
                if body.get("$ref", "").endswith("Page"):
                    names = {parameter["name"] for parameter in operation["parameters"]}
                    assert {"limit", "offset"} <= names, (method, path)


def test_one_of_bodies_lists_and_the_cutoff_form_are_expressed_in_the_schema(schema):
    components = schema["components"]["schemas"]
    unlock = schema["paths"]["/api/v1/users/unlock"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    options = components[unlock["$ref"].rsplit("/", 1)[-1]]["oneOf"]
    assert [components[option["$ref"].rsplit("/", 1)[-1]]["required"] for option in options] == [
        ["username"],
        ["address"],
    ]
    audit = schema["paths"]["/api/v1/inspiration/audits"]["post"]["requestBody"]["content"]["application/json"]
    populations = components[audit["schema"]["$ref"].rsplit("/", 1)[-1]]["oneOf"]
    assert [components[option["$ref"].rsplit("/", 1)[-1]]["required"] for option in populations] == [
        ["cohort"],
        ["runs"],
        ["benchmark"],
    ]
    conflict = schema["paths"]["/api/v1/conflicts"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    named = components[conflict["$ref"].rsplit("/", 1)[-1]]["oneOf"]
    assert [set(components[option["$ref"].rsplit("/", 1)[-1]]["required"]) for option in named] == [
        {"reviewer", "kind", "proposal"},
        {"reviewer", "kind", "author"},
    ]
    assert components["CutoffInputRequest"]["properties"]["cutoff"]["pattern"] == "^[0-9]{4}-[0-9]{2}(-[0-9]{2})?$"
    assert components["ComparisonsImportInputRequest"]["properties"]["comparisons"]["minItems"] == 1
    assert components["CohortAssignInputRequest"]["properties"]["reviewers"]["minItems"] == 1

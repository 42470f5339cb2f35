"""The API's schema as a test reads it, and a check of a real answer against it.

The check is stricter than a generated client: an object of the schema takes no property it does not list, so an
answer with a field the schema forgot fails as surely as one missing a required field or holding a null the schema
does not allow."""

import copy
import io
import json

from django.core.management import call_command
from openapi_schema_validator import OAS30Validator


def api_schema() -> dict:
    out = io.StringIO()
    call_command("spectacular", "--format", "openapi-json", stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


def _closed(node):
    """The schema with every object that lists its properties closed to others, and ``nullable`` written as a choice
    of null (so that a nullable reference, ``allOf`` with ``nullable``, reads as clients read it)."""
    if isinstance(node, dict):
        node = {key: _closed(value) for key, value in node.items()}
        if "properties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        if node.pop("nullable", False):
            return {"anyOf": [node, {"enum": [None]}]}
        return node
    if isinstance(node, list):
        return [_closed(value) for value in node]
    return node


def answer_schema(schema: dict, path: str, method: str, status: int) -> dict:
    response = schema["paths"][path][method]["responses"][str(status)]
    return response["content"]["application/json"]["schema"]


def answer_problems(schema: dict, path: str, method: str, status: int, body) -> list[str]:
    """Where the answer `body` of `method path` with `status` departs from the schema ([] when it does not)."""
    document = {"components": _closed(copy.deepcopy(schema["components"]))}
    document.update(_closed(answer_schema(schema, path, method, status)))
    validator = OAS30Validator(document)
    return [_where(_deepest(error)) for error in validator.iter_errors(body)]


def _deepest(error):
    """Within a choice (a nullable object is one), the error of the option that got furthest."""
    while error.context:
        error = max(error.context, key=lambda option: len(option.absolute_path))
    return error


def _where(error) -> str:
    return f"{'/'.join(str(part) for part in error.absolute_path)}: {error.message[:300]}"


def assert_conforms(schema: dict, path: str, body, *, method: str = "get", status: int = 200) -> None:
    problems = answer_problems(schema, path, method, status, body)
    assert not problems, "\n".join(problems)

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


class NullsSeen:
    """Which nullable properties of the schema's answers real answers held null: a property the schema lets be null
    but no answer ever gives as null is either a state no test reads or a null the schema should not promise.

    Properties are named "<component>.<property>" (an inline object by the path to it from its component)."""

    def __init__(self, schema: dict):
        self.schema = schema
        self.null: set[str] = set()
        self.present: set[str] = set()

    def record(self, path: str, method: str, status: int, body) -> None:
        self._walk(answer_schema(self.schema, path, method, status), body, f"{method.upper()} {path}")

    def nullable(self, paths: list[str]) -> set[str]:
        """The nullable properties of the 200 JSON answers of GET `paths`."""
        found: set[str] = set()
        visited: set[str] = set()
        for path in paths:
            self._nullable(answer_schema(self.schema, path, "get", 200), f"GET {path}", found, visited)
        return found

    def never_null(self, paths: list[str]) -> list[str]:
        return sorted(self.nullable(paths) - self.null)

    def _resolve(self, node: dict, owner: str) -> tuple[dict, str]:
        while "$ref" in node:
            owner = node["$ref"].rsplit("/", 1)[-1]
            node = self.schema["components"]["schemas"][owner]
        return node, owner

    def _is_nullable(self, node: dict) -> bool:
        if node.get("nullable") or None in node.get("enum", []):
            return True
        options = node.get("oneOf", []) + node.get("anyOf", [])
        return any(self._is_nullable(self._resolve(option, "")[0]) for option in options)

    def _options(self, node: dict) -> list[dict]:
        return node.get("allOf", []) + node.get("oneOf", []) + node.get("anyOf", [])

    def _walk(self, node: dict, value, owner: str) -> None:
        node, owner = self._resolve(node, owner)
        for option in self._options(node):
            self._walk(option, value, owner)
        if isinstance(value, dict):
            for name, inner in node.get("properties", {}).items():
                if name not in value:
                    continue
                where = f"{owner}.{name}"
                self.present.add(where)
                if value[name] is None:
                    self.null.add(where)
                else:
                    self._walk(inner, value[name], where)
            if isinstance(node.get("additionalProperties"), dict):
                for inner_value in value.values():
                    if inner_value is not None:
                        self._walk(node["additionalProperties"], inner_value, f"{owner}.*")
        elif isinstance(value, list) and "items" in node:
            for item in value:
                if item is not None:
                    self._walk(node["items"], item, owner)

    def _nullable(self, node: dict, owner: str, found: set[str], visited: set[str]) -> None:
        if "$ref" in node:
            node, owner = self._resolve(node, owner)
            if owner in visited:
                return
            visited.add(owner)
        for option in self._options(node):
            self._nullable(option, owner, found, visited)
        for name, inner in node.get("properties", {}).items():
            where = f"{owner}.{name}"
            if self._is_nullable(inner):
                found.add(where)
            self._nullable(inner, where, found, visited)
        if isinstance(node.get("additionalProperties"), dict):
            self._nullable(node["additionalProperties"], f"{owner}.*", found, visited)
        if "items" in node:
            self._nullable(node["items"], owner, found, visited)

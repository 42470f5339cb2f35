"""The API's OpenAPI 3 schema, generated from the views by drf-spectacular (served at /api/v1/schema, read at
/api/v1/docs).

Our views follow one convention, so the schema reads it rather than repeating it in decorators: an APIView's nested
`InputSerializer` is its request body, `FilterSerializer` its query parameters and `OutputSerializer` its answer
(with the status in `success_status` when it is not 200, a list when `output_many`, a page of the list when `paged`:
`reviewapp.core.paging`), and `error_codes` maps an HTTP
status to the codes of its own refusals (per method, {"PUT": {...}}, when one view serves several). The errors every
endpoint shares (README, "API") are added from what the view is: signed-in or public, with a body or not, with an id
in its path or not. A view that answers otherwise says so with
`extend_schema`. Views served by `routing.by_method` are documented one method at a time.
"""

import re

from django.urls import URLPattern
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.generators import EndpointEnumerator as SpectacularEndpointEnumerator
from drf_spectacular.generators import SchemaGenerator as SpectacularSchemaGenerator
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers
from rest_framework.permissions import AllowAny

from reviewapp.core.fields import BIGINT_MAX
from reviewapp.core.paging import page_serializer


class ProblemSerializer(serializers.Serializer):
    """One part of a refusal (reviewapp.core.errors.Problem): where, as far as it is known, and what."""

    table = serializers.CharField(required=False, help_text="the table (sheet, file part) at fault")
    row = serializers.IntegerField(required=False, help_text="its row, counted as the file counts them")
    field = serializers.CharField(required=False, help_text="the field (column, body or query parameter) at fault")
    message = serializers.CharField()


class ErrorSerializer(serializers.Serializer):
    """Every API error: a documented code, a sentence for people, and the parts of the refusal where it has several
    (the rows of an import at fault, the fields of a body)."""

    error = serializers.CharField(help_text="the error's code, one of those listed for the status")
    detail = serializers.CharField(help_text="a sentence for the person who asked")
    problems = ProblemSerializer(many=True)


# The errors of every endpoint, by what the endpoint is (README, "API").
SERVER_ERRORS = {406: ("not_acceptable",), 500: ("server_error",)}
SIGNED_IN_ERRORS = {401: ("not_authenticated", "authentication_failed"), 403: ("forbidden", "password_change_required")}
BODY_ERRORS = {400: ("invalid_body",), 413: ("body_too_large",), 415: ("unsupported_media_type",)}
QUERY_ERRORS = {400: ("invalid_body",)}
# Where the codes of an error response are listed for machines; the schema's ErrorCode enum is every code listed.
CODES_EXTENSION = "x-error-codes"
PATH_ERRORS = {404: ("not_found",)}
QUEUE_ERRORS = {503: ("queue_unavailable",)}
BODY_METHODS = ("POST", "PUT", "PATCH")


def _merge(*tables: dict) -> dict[int, tuple[str, ...]]:
    merged: dict[int, list[str]] = {}
    for table in tables:
        for status, codes in table.items():
            merged.setdefault(status, [])
            merged[status] += [code for code in codes if code not in merged[status]]
    return {status: tuple(codes) for status, codes in sorted(merged.items())}


def _camel_to_snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _without_suffix(name: str, suffix: str) -> str:
    return name[: -len(suffix)] if name.endswith(suffix) and name != suffix else name


class AutoSchema(SpectacularAutoSchema):
    """Reads the nested serializers and error codes of our views (see the module's docstring)."""

    def get_operation_id(self):
        # One APIView per operation: its name is the operation's (CohortListApi → cohort_list), with the method when
        # one view serves several.
        name = _camel_to_snake(_without_suffix(self.view.__class__.__name__, "Api"))
        handlers = [method for method in ("get", "post", "put", "patch", "delete") if hasattr(self.view, method)]
        return f"{name}_{self.method.lower()}" if len(handlers) > 1 else name

    def get_serializer_name(self, serializer, direction):
        # Nested serializers share their names (every view has an InputSerializer): name them after their view,
        # CohortCreateApi.InputSerializer → CohortCreateInput.
        cls = serializer if isinstance(serializer, type) else serializer.__class__
        parts = [part for part in cls.__qualname__.split(".") if part != "<locals>"]
        return "".join(_without_suffix(_without_suffix(part, "Serializer"), "Api") for part in parts)

    def _nested(self, name: str):
        return getattr(self.view, name, None)

    def get_request_serializer(self):
        if self.method in BODY_METHODS and self._nested("InputSerializer") is not None:
            return self._nested("InputSerializer")
        return super().get_request_serializer()

    def get_response_serializers(self):
        output = self._nested("OutputSerializer")
        if output is not None:
            if getattr(self.view, "paged", False):
                name = _without_suffix(self.get_serializer_name(output, "response"), "Output")
                body = page_serializer(f"{name}Page", output)
            else:
                body = output(many=True) if getattr(self.view, "output_many", False) else output
            return {getattr(self.view, "success_status", 200): body}
        return super().get_response_serializers()

    def get_operation(self, *args, **kwargs):
        operation = super().get_operation(*args, **kwargs)
        # An id in a path is a 64-bit key (reviewapp.core.fields): say so, so that clients need not try larger ones.
        for parameter in (operation or {}).get("parameters", []):
            if parameter["in"] == "path" and parameter["schema"].get("type") == "integer":
                parameter["schema"].update(minimum=1, maximum=BIGINT_MAX)
        return operation

    def get_override_parameters(self):
        parameters = list(super().get_override_parameters())
        query = self._nested("FilterSerializer")
        if query is not None and self.method == "GET":
            parameters.append(query)
        return parameters

    def error_codes(self) -> dict[int, tuple[str, ...]]:
        public = any(permission is AllowAny for permission in self.view.permission_classes)
        own = getattr(self.view, "error_codes", {})
        own = own.get(self.method, {}) if self.method in own else own
        return _merge(
            BODY_ERRORS if self.method in BODY_METHODS else {},
            QUERY_ERRORS if self._nested("FilterSerializer") is not None and self.method == "GET" else {},
            {} if public else SIGNED_IN_ERRORS,
            PATH_ERRORS if "{" in self.path else {},
            own,
            SERVER_ERRORS,
        )

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        for status, codes in self.error_codes().items():
            if str(status) in responses:
                continue
            listed = ", ".join(f"`{code}`" for code in codes)
            response = OpenApiResponse(ErrorSerializer, description=f"Error codes: {listed}.")
            responses[str(status)] = self._get_response_for_code(response, str(status), direction=direction)
            responses[str(status)][CODES_EXTENSION] = list(codes)
        return responses


def file_response(media_type: str, description: str) -> dict:
    """The `responses` of an endpoint that answers a file: text (CSV) as a string; any other file as bytes, under its
    own media type and also as application/octet-stream, the name generic clients know bytes by (openapi-python-client
    reads no other binary type), so that a generated client hands over the bytes."""
    if media_type.startswith("text/"):
        return {(200, media_type): OpenApiResponse(OpenApiTypes.STR, description=description)}
    return {
        (200, media_type): OpenApiResponse(OpenApiTypes.BINARY, description=description),
        (200, "application/octet-stream"): OpenApiResponse(OpenApiTypes.BINARY, description=description),
    }


class EndpointEnumerator(SpectacularEndpointEnumerator):
    """Also lists the views of a URL served by routing.by_method, one endpoint per method."""

    def _get_api_endpoints(self, patterns, prefix):
        endpoints = []
        for pattern in (self.patterns if patterns is None else patterns) or ():
            views = getattr(getattr(pattern, "callback", None), "views_by_method", None)
            if isinstance(pattern, URLPattern) and views:
                path_regex = prefix + str(pattern.pattern)
                path = self.get_path_from_regex(path_regex)
                endpoints += [(path, path_regex, method, view.as_view()) for method, view in views.items()]
            else:
                endpoints += super()._get_api_endpoints([pattern], prefix)
        return endpoints


class SchemaGenerator(SpectacularSchemaGenerator):
    endpoint_inspector_cls = EndpointEnumerator

    def get_schema(self, request=None, public=False):
        schema = super().get_schema(request=request, public=public)
        # The error's code as an enum of every code an operation lists, so that clients can switch on it.
        codes = {
            code
            for operations in schema["paths"].values()
            for operation in operations.values()
            for response in operation["responses"].values()
            for code in response.get(CODES_EXTENSION, ())
        }
        components = schema["components"]["schemas"]
        components["ErrorCode"] = {"type": "string", "enum": sorted(codes), "description": "An error's code."}
        components["Error"]["properties"]["error"] = {"$ref": "#/components/schemas/ErrorCode"}
        return schema


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = "reviewapp.api.authentication.ApiTokenAuthentication"
    name = "token"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Token <key>`, the key from `POST /api/v1/auth/token`.",
        }

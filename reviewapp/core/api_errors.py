"""The API's answer to every error, ours or the framework's, in one shape (reviewapp.core.errors):
{"error": "<code>", "detail": "<sentence>", "problems": [{"table"?, "row"?, "field"?, "message"}]}.

DRF's EXCEPTION_HANDLER names this module; nothing imports it while the settings load (rest_framework.views reads the
API settings, whose authentication class needs the app registry), so it lives apart from `reviewapp.core.errors`.
"""

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from reviewapp.core.errors import InputInvalid, ServiceError

_CODES = {
    exceptions.NotAuthenticated: "not_authenticated",
    exceptions.AuthenticationFailed: "authentication_failed",
    exceptions.PermissionDenied: "forbidden",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.ParseError: "invalid_body",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.Throttled: "throttled",
}


def error_body(error: ServiceError) -> dict:
    """The API's body for a refusal."""
    return {"error": error.code, "detail": error.message, "problems": error.problems}


def _service_response(error: ServiceError, headers=None) -> Response:
    headers = dict(headers or {})
    if error.retry_after is not None:
        headers["Retry-After"] = str(error.retry_after)
    return Response(error_body(error), status=error.status, headers=headers)


def exception_handler(exc, context):
    """DRF's EXCEPTION_HANDLER: every error as the documented JSON body."""
    if isinstance(exc, ServiceError):
        return _service_response(exc)
    # DRF answers Django's own Http404/PermissionDenied too; give them the same body as its exceptions.
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        error: ServiceError = InputInvalid(exc.detail if isinstance(exc.detail, dict) else {"": exc.detail})
    else:
        code = next((c for cls, c in _CODES.items() if isinstance(exc, cls)), "invalid_request")
        detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        error = ServiceError(code, detail, status=response.status_code)
    return _service_response(error, headers={k: v for k, v in response.items()})

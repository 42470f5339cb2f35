"""Every API error answers {"error": "<code>", "detail": "<sentence>"} with the documented status."""

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


class ApiError(exceptions.APIException):
    """An error with a documented code; extra keys (e.g. row errors) are added to the body."""

    def __init__(self, code: str, detail: str, status_code: int = status.HTTP_400_BAD_REQUEST, **extra):
        super().__init__(detail=detail, code=code)
        self.status_code = status_code
        self.error_code = code
        self.extra = extra


_CODES = {
    exceptions.NotAuthenticated: "not_authenticated",
    exceptions.AuthenticationFailed: "authentication_failed",
    exceptions.PermissionDenied: "forbidden",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.ParseError: "invalid_body",
    exceptions.UnsupportedMediaType: "invalid_body",
    exceptions.ValidationError: "invalid_body",
    exceptions.Throttled: "throttled",
}


def exception_handler(exc, context):
    # DRF answers Django's own Http404/PermissionDenied too; give them the same body as its exceptions.
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, ApiError):
        body = {"error": exc.error_code, "detail": str(exc.detail), **exc.extra}
    elif isinstance(exc, exceptions.ValidationError):
        body = {"error": "invalid_body", "detail": "The request body is not valid.", "fields": exc.detail}
    else:
        code = next((c for cls, c in _CODES.items() if isinstance(exc, cls)), "error")
        detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        body = {"error": code, "detail": detail}
    return Response(body, status=response.status_code, headers={k: v for k, v in response.items()})

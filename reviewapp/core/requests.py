"""Limits on what a request may hold, checked before anything reads it, and the API's answer to every error.

- Body size: a body longer than the caller's limit is refused from its Content-Length with 413, before any byte of it
  is read (CSRF's check reads a form body; Django reads no more than Content-Length says, so a body without one is
  read as empty). Every view has the default limit (OH_MAX_BODY_BYTES); a view that takes files names a larger one by
  setting: `body_limit_setting = "OH_MAX_IMPORT_BYTES"` on an APIView, or `@body_limit("OH_MAX_IMPORT_BYTES")` on a
  page view. The larger limit is only for a caller who may import (a coordinator, by session or API token); anyone
  else, anonymous callers included, has the default limit everywhere.
- JSON depth: `json_loads_bounded` and `BoundedJSONParser` (the API's JSON parser) refuse JSON nested deeper than
  OH_MAX_JSON_DEPTH with a sentence, instead of letting Python's recursion limit turn it into a server error.
- API errors: every response under /api/ that is an error and not already JSON (Django's 404 of an unknown address,
  a CSRF refusal, a server error) becomes {"error": "<code>", "detail": "<sentence>", "problems": []}.
"""

import io
import ipaddress
import json
import logging
import re
from typing import cast

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from rest_framework.authentication import BaseAuthentication, SessionAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.parsers import JSONParser
from rest_framework.settings import api_settings

from reviewapp.core import roles
from reviewapp.core.errors import ServiceError

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"
_STATUS_CODES = {
    400: ("invalid_request", "The request is not valid."),
    401: ("not_authenticated", "Authentication credentials were not provided."),
    403: ("forbidden", "You do not have permission to do this."),
    404: ("not_found", "There is nothing at this address."),
    405: ("method_not_allowed", "This address does not accept this method."),
    406: ("not_acceptable", "This address answers only JSON or the file it serves."),
    413: ("body_too_large", "The request body is too large."),
    429: ("throttled", "Too many requests; wait before trying again."),
    500: ("server_error", "The server failed to answer; the error is logged. Try again later."),
}
# One token at a time, left to right: a whole string (its brackets are not structure), or a bracket. A string runs to
# its closing quote or, unterminated, to the end of the text: each match only moves forward, so the scan is linear
# whatever the text holds (json.loads then reports an unterminated string).
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)|[\[\]{}]', re.DOTALL)
_OPENING = frozenset("[{")


class JSONTooDeep(ServiceError):
    code = "invalid_body"


def json_depth_check(text: str) -> None:
    """Raise JSONTooDeep when arrays and objects in the text nest deeper than OH_MAX_JSON_DEPTH (one linear pass)."""
    limit = settings.OH_MAX_JSON_DEPTH
    depth = 0
    for token in _JSON_TOKEN.findall(text):
        if token in _OPENING:
            depth += 1
            if depth > limit:
                raise JSONTooDeep(f"The JSON is nested more than {limit} levels deep.")
        elif token[0] != '"':
            depth -= 1


def json_loads_bounded(text: str, **options):
    """json.loads after json_depth_check: deep nesting is a refusal, not a RecursionError."""
    json_depth_check(text)
    return json.loads(text, **options)


class BoundedJSONParser(JSONParser):
    """DRF's JSON parser with the depth limit; the body's size was checked by the middleware before."""

    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read() if stream is not None else b""
        try:
            json_depth_check(raw.decode((parser_context or {}).get("encoding") or settings.DEFAULT_CHARSET))
        except UnicodeDecodeError:
            pass  # DRF's parser reports the body as unreadable
        return super().parse(io.BytesIO(raw), media_type, parser_context)


def body_limit(setting_name: str):
    """Give a page view the body limit named by this setting (in bytes) instead of OH_MAX_BODY_BYTES."""

    def decorate(view):
        view.body_limit_setting = setting_name
        return view

    return decorate


def _limit_setting(view_func) -> str:
    for holder in (view_func, getattr(view_func, "cls", None), getattr(view_func, "view_class", None)):
        name = getattr(holder, "body_limit_setting", None)
        if name:
            return name
    return "OH_MAX_BODY_BYTES"


def api_error(status: int, detail: str | None = None, code: str | None = None) -> JsonResponse:
    default_code, default_detail = _STATUS_CODES.get(status, ("error", "The request failed."))
    body = {"error": code or default_code, "detail": detail or default_detail, "problems": []}
    return JsonResponse(body, status=status)


def _is_api(request) -> bool:
    return request.path.startswith(API_PREFIX)


class RequestLimitsMiddleware:
    """Refuse bodies over the view's limit before they are read; give every API error the JSON format.

    Listed before CsrfViewMiddleware, whose process_view reads a POST body."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if _is_api(request) and response.status_code >= 400 and not _is_json(response):
            return api_error(response.status_code)
        return response

    def process_view(self, request, view_func, view_args, view_kwargs):
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        setting = "OH_MAX_BODY_BYTES"
        limit = settings.OH_MAX_BODY_BYTES
        if length <= limit:
            return None
        # Only a body over the default limit asks who the caller is (a database read).
        if _limit_setting(view_func) != setting and roles.can_coordinate(_caller(request)):
            setting = _limit_setting(view_func)
            limit = getattr(settings, setting)
            if length <= limit:
                return None
        logger.warning("Refused a %s-byte body at %s (limit %s, %s)", length, request.path, limit, setting)
        detail = f"The request body has {length} bytes; this address accepts at most {limit}."
        if _is_api(request):
            return api_error(413, detail)
        return HttpResponse(detail, status=413, content_type="text/plain; charset=utf-8")


def _caller(request):
    """Who sends the request, known without reading its body: the session's user, else the user of a token the API's
    header authenticators accept (not DRF's session authenticator: its CSRF check reads the body); else anonymous."""
    if request.user.is_authenticated:
        return request.user
    # DRF's settings object has imported the classes its strings name.
    authenticator_classes = cast(list[type[BaseAuthentication]], api_settings.DEFAULT_AUTHENTICATION_CLASSES)
    for authenticator_class in authenticator_classes:
        if issubclass(authenticator_class, SessionAuthentication):
            continue
        try:
            found = authenticator_class().authenticate(request)
        except AuthenticationFailed:
            found = None
        if found is not None:
            return found[0]
    return request.user


def _is_json(response) -> bool:
    return response.get("Content-Type", "").startswith("application/json")


class PermissionsPolicyMiddleware:
    """The Permissions-Policy header (settings.PERMISSIONS_POLICY) on every response."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        response.headers.setdefault("Permissions-Policy", settings.PERMISSIONS_POLICY)
        return response


class RefusalsInOneLine(logging.Filter):
    """A logging filter: Django logs a refused request (403) with the PermissionDenied's traceback, which says
    nothing a line would not. Keep the line, drop the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) == 403:
            record.exc_info = None
            record.exc_text = None
        return True


# The client's address ---------------------------------------------------------------------------------------------


def client_address(meta) -> str:
    """The client's address: REMOTE_ADDR, or the configured trusted proxy header when the proxy set it.

    Only the last entry of the header counts: it is the one our proxy wrote; earlier entries come from the client."""
    header = settings.OPEN_HYPOTHESIS_TRUSTED_PROXY_HEADER
    if header:
        value = meta.get("HTTP_" + header.upper().replace("-", "_"), "")
        entries = [entry.strip() for entry in value.split(",") if entry.strip()]
        if entries:
            return entries[-1]
    return meta.get("REMOTE_ADDR", "")


def client_network(address: str) -> str:
    """What the per-client limit counts: an IPv4 address as it is, an IPv6 address by its network of
    OPEN_HYPOTHESIS_IPV6_PREFIX bits (a /64 by default: one host is given a whole /64 and can rotate through it)."""
    try:
        parsed = ipaddress.ip_address(address.strip().strip("[]"))
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        # The network's first address stands for it (an address, as django-axes stores).
        return str(
            ipaddress.ip_network(f"{parsed}/{settings.OPEN_HYPOTHESIS_IPV6_PREFIX}", strict=False).network_address
        )
    return str(parsed)


def client_network_of(request) -> str:
    """The client of a request as limits count it (django-axes' AXES_CLIENT_IP_CALLABLE): its network."""
    return client_network(client_address(request.META))

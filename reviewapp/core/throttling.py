"""The throttle of anonymous polls of Open Hypothesis runs: OH_ANONYMOUS_POLLS_PER_MINUTE per client (an address, an
IPv6 client by its network, as the public limits count it), for the API and the run page alike. Signed-in callers and
token holders are not throttled. Counts live in the "throttle" cache, which every web process shares (a folder under
OH_VAR_DIR, or OH_CACHE_URL's Redis), so the limit holds however many gunicorn workers serve."""

import math
from functools import wraps

from django.conf import settings
from django.core.cache import caches
from django.http import HttpResponse
from rest_framework.throttling import AnonRateThrottle

from reviewapp.core.requests import client_network_of


class AnonymousPollThrottle(AnonRateThrottle):
    scope = "anonymous_polls"

    def __init__(self):
        self.cache = caches["throttle"]
        super().__init__()

    def get_rate(self) -> str:
        return f"{settings.OH_ANONYMOUS_POLLS_PER_MINUTE}/min"

    def get_ident(self, request) -> str:
        return client_network_of(request)


def anonymous_polls_throttled(view):
    """Throttle a page view's anonymous requests as the API's (the same counts): 429 with Retry-After above the
    limit. The run page's own polling keeps what it shows when a poll is refused, and polls again."""

    @wraps(view)
    def throttled_view(request, *args, **kwargs):
        throttle = AnonymousPollThrottle()
        if throttle.allow_request(request, None):  # type: ignore[arg-type]  # an anonymous rate reads no view
            return view(request, *args, **kwargs)
        wait = math.ceil(throttle.wait() or 1)
        response = HttpResponse(
            f"Too many requests from your address: try again in {wait} s.",
            status=429,
            content_type="text/plain; charset=utf-8",
        )
        response["Retry-After"] = str(wait)
        return response

    return throttled_view

"""The project's URLs plus the floors of the page and API benchmarks: the least a request through the same
middleware, session and framework costs, served beside the real views by the same process.

- `/floor/page/`: a login-required page rendering a tiny template (the floor of the reviewer's pages);
- `/floor/api/`: a trivial DRF view answering a small JSON object, no authentication (the floor of the public API).

Used through `floor_settings` (this URL configuration and otherwise the project's settings).
"""

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.template import engines
from django.urls import include, path
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

TINY = engines["django"].from_string("<!doctype html><title>Floor</title><p>Signed in as {{ user.username }}.</p>")


@login_required
def tiny_page(request):
    return HttpResponse(TINY.render({}, request))


class TrivialApi(APIView):
    authentication_classes = []
    permission_classes = [AllowAny]

    def get(self, request):
        return Response({"ok": True})


urlpatterns = [
    path("floor/page/", tiny_page, name="floor-page"),
    path("floor/api/", TrivialApi.as_view(), name="floor-api"),
    path("", include("reviewapp.urls")),
]

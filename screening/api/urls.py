"""/api/v1/open-hypothesis/ (docs/protocol.md#public-api: the paths are fixed by the protocol)."""

from django.urls import path

from screening.api import runs

urlpatterns = [
    path("protocol", runs.ProtocolApi.as_view(), name="open-hypothesis-api-protocol"),
    path("runs", runs.RunCreateApi.as_view(), name="open-hypothesis-api-runs"),
    path("runs/<str:run_id>", runs.RunDetailApi.as_view(), name="open-hypothesis-api-run"),
    path("runs/<str:run_id>/calls", runs.RunCallsApi.as_view(), name="open-hypothesis-api-run-calls"),
    path("screenings", runs.ScreeningCreateApi.as_view(), name="open-hypothesis-api-screenings"),
]

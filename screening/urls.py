"""Open Hypothesis: the public pages and API, and the coordinators' runs page."""

from django.urls import include, path

from screening import views

urlpatterns = [
    path("api/v1/open-hypothesis/", include("screening.api.urls")),
    path("open-hypothesis/", views.run_start, name="open-hypothesis"),
    path("open-hypothesis/<uuid:run_id>", views.run_detail, name="open-hypothesis-run"),
    path("open-hypothesis/<uuid:run_id>/json", views.run_download, name="open-hypothesis-run-json"),
    path("screening/runs/", views.run_list, name="screening-run-list"),
    path("screening/runs/<uuid:run_id>/cohort", views.run_cohort_create, name="screening-run-cohort"),
    path("screening/runs/<uuid:run_id>/calls/", views.run_calls, name="screening-run-calls"),
    path("screening/runs/<uuid:run_id>/calls.json", views.run_calls_download, name="screening-run-calls-json"),
]

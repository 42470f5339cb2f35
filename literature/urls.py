"""The literature area: its pages and its API routes."""

from django.urls import path

from literature import api, views

urlpatterns = [
    path("api/v1/literature/import", api.ReferenceImportApi.as_view(), name="api-literature-import"),
    path("api/v1/literature/checks", api.NoveltyCheckCreateApi.as_view(), name="api-novelty-checks"),
    path("api/v1/literature/checks/<int:check_id>", api.NoveltyCheckDetailApi.as_view(), name="api-novelty-check"),
    path("literature/", views.literature_home, name="literature-home"),
]

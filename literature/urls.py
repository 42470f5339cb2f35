"""The literature area: its pages and its API routes."""

from django.urls import path

from literature import api, views

urlpatterns = [
    path("api/v1/literature/import", api.ReferenceImportApi.as_view(), name="api-literature-import"),
    path("literature/", views.literature_home, name="literature-home"),
]

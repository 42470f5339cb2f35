"""The literature area: its pages and its API routes."""

from django.urls import path

from literature import api, views
from reviewapp.core.routing import by_method

urlpatterns = [
    path("api/v1/literature/import", api.ReferenceImportApi.as_view(), name="api-literature-import"),
    path("api/v1/literature/checks", api.NoveltyCheckCreateApi.as_view(), name="api-novelty-checks"),
    path("api/v1/literature/checks/<int:check_id>", api.NoveltyCheckDetailApi.as_view(), name="api-novelty-check"),
    path(
        "api/v1/literature/citation-waves",
        by_method(get=api.CitationWaveListApi, post=api.CitationWaveCreateApi),
        name="api-citation-waves",
    ),
    path(
        "api/v1/literature/citation-waves/<int:wave_id>", api.CitationWaveDetailApi.as_view(), name="api-citation-wave"
    ),
    path(
        "api/v1/literature/citation-waves/<int:wave_id>/edges.csv",
        api.CitationWaveEdgesApi.as_view(),
        name="api-citation-wave-edges",
    ),
    path("literature/", views.literature_home, name="literature-home"),
    path("literature/corpus/", views.corpus_page, name="literature-corpus"),
    path("literature/references/<int:reference_id>/", views.reference_page, name="literature-reference"),
    path("literature/citation-waves/", views.citation_wave_list, name="literature-citation-waves"),
    path("literature/citation-waves/<int:wave_id>/", views.citation_wave_page, name="literature-citation-wave"),
]

"""Pages and API routes of this room (included by reviewapp.urls)."""

from reviewapp.panel import api, api_levels, views, views_levels

urlpatterns = [*api.urlpatterns, *api_levels.urlpatterns, *views.urlpatterns, *views_levels.urlpatterns]

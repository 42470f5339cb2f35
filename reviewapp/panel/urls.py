"""Pages and API routes of this room (included by reviewapp.urls)."""

from reviewapp.panel import api, views

urlpatterns = [*api.urlpatterns, *views.urlpatterns]

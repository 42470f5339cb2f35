"""Pages and API routes of this room (included by reviewapp.urls)."""

urlpatterns: list = []

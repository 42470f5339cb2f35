"""API: cohorts."""

urlpatterns = []

"""API: exports."""

urlpatterns = []

"""API: imports."""

urlpatterns = []

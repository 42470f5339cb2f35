"""API: users."""

urlpatterns = []

"""Pages: review."""

urlpatterns = []

"""Pages: exports."""

urlpatterns = []

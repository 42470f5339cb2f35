"""Pages: imports."""

urlpatterns = []

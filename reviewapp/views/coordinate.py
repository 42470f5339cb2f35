"""Pages: coordinate."""

urlpatterns = []

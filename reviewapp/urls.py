from django.contrib import admin
from django.urls import include, path

from reviewapp.views import coordinate, exports, home, imports, review

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/v1/", include("reviewapp.api.urls")),
    *home.urlpatterns,
    *review.urlpatterns,
    *coordinate.urlpatterns,
    *imports.urlpatterns,
    *exports.urlpatterns,
]

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from reviewapp.benchmarks import api as benchmark_api
from reviewapp.benchmarks import views as benchmark_views
from reviewapp.views import accounts, analysis, coordinate, exports, home, imports, review


class ApiDocsView(SpectacularSwaggerSplitView):
    """The API reference page: Swagger UI from our static files, its start script served by this view as a file of
    its own (`?script`), so the page needs no inline script or style under the site's Content-Security-Policy."""

    template_name = "api/docs.html"
    title = "Open Hypothesis API"


urlpatterns = [
    # Clients poll their runs through the public API (screening.urls): its paths are matched first, before the ~100
    # patterns of the pages; no other room's path starts as they do.
    path("", include("screening.urls")),
    path("admin/", admin.site.urls),
    # Accounts are made by coordinators; there is no self-service password reset by e-mail.
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password_change/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    *accounts.urlpatterns,
    # The API's OpenAPI 3 schema and its reference page, public like the API's own description of itself.
    path("api/v1/schema", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/v1/docs", ApiDocsView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/v1/", include("reviewapp.api.urls")),
    path("api/v1/", include(benchmark_api.urlpatterns)),
    *home.urlpatterns,
    *review.urlpatterns,
    *coordinate.urlpatterns,
    *imports.urlpatterns,
    *exports.urlpatterns,
    *analysis.urlpatterns,
    *benchmark_views.urlpatterns,
    path("", include("reviewapp.panel.urls")),
    path("", include("reviewapp.inspiration.urls")),
    path("", include("literature.urls")),
]

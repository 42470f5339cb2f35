from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from reviewapp.benchmarks import api as benchmark_api
from reviewapp.benchmarks import views as benchmark_views
from reviewapp.views import accounts, analysis, coordinate, exports, home, imports, review

urlpatterns = [
    path("admin/", admin.site.urls),
    # Accounts are made by coordinators; there is no self-service password reset by e-mail.
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password_change/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    *accounts.urlpatterns,
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
    path("", include("screening.urls")),
    path("", include("literature.urls")),
]

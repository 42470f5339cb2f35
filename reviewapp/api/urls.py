"""/api/v1/: each area's module owns its routes."""

from reviewapp.api import auth, benchmarks, cohorts, exports, imports, users

urlpatterns = [
    *auth.urlpatterns,
    *users.urlpatterns,
    *cohorts.urlpatterns,
    *imports.urlpatterns,
    *exports.urlpatterns,
    *benchmarks.urlpatterns,
]

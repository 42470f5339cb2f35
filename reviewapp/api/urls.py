"""/api/v1/ of the human review: each area's module owns its routes."""

from reviewapp.api import auth, cohorts, exports, imports, users

urlpatterns = [
    *auth.urlpatterns,
    *users.urlpatterns,
    *cohorts.urlpatterns,
    *imports.urlpatterns,
    *exports.urlpatterns,
]

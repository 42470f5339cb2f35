"""Pages and API routes of this room (included by reviewapp.urls)."""

from django.urls import path

from reviewapp.core.routing import by_method
from reviewapp.inspiration import api, views

urlpatterns = [
    path("api/v1/inspiration/cutoffs", api.CutoffListApi.as_view(), name="api-inspiration-cutoffs"),
    path("api/v1/inspiration/cutoffs/<path:group>", api.CutoffSetApi.as_view(), name="api-inspiration-cutoff"),
    path(
        "api/v1/inspiration/audits",
        by_method(get=api.AuditListApi, post=api.AuditCreateApi),
        name="api-inspiration-audits",
    ),
    path("api/v1/inspiration/audits/<int:audit_id>", api.AuditDetailApi.as_view(), name="api-inspiration-audit"),
    path(
        "api/v1/inspiration/audits/<int:audit_id>/items",
        api.AuditItemsApi.as_view(),
        name="api-inspiration-audit-items",
    ),
    path("inspiration/", views.inspiration_home, name="inspiration-home"),
    path("inspiration/cutoffs/", views.inspiration_cutoffs, name="inspiration-cutoffs"),
    path("inspiration/audits/<int:audit_id>/", views.inspiration_audit, name="inspiration-audit"),
]

"""Pages: import research tasks and proposals into a cohort."""

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, render
from django.urls import path
from django.views.decorators.http import require_http_methods

from reviewapp.api.imports import import_upload
from reviewapp.core import roles
from reviewapp.core.pages import posted_import
from reviewapp.core.requests import body_limit
from reviewapp.models import Cohort
from reviewapp.services.imports import FIELDS, REQUIRED, cohort_import_file


def _get_cohort_for_coordinator(request, pk: int) -> Cohort:
    # Refuse other roles before looking the cohort up, so they learn nothing about which cohorts exist.
    if not roles.can_coordinate(request.user):
        raise PermissionDenied
    return get_object_or_404(Cohort, pk=pk)


@body_limit("OH_MAX_IMPORT_BYTES")
@login_required
@require_http_methods(["GET", "POST"])
def cohort_import(request, cohort_id):
    cohort = _get_cohort_for_coordinator(request, cohort_id)
    context = {
        "cohort": cohort,
        "result": None,
        "problems": None,
        "refusal": None,
        "upload_limit": settings.OH_MAX_IMPORT_BYTES,
    }
    if request.method == "POST":
        context["result"], context["problems"], error = posted_import(
            request, cohort_import_file, read_upload=import_upload, cohort=cohort
        )
        if error is not None:
            context["refusal"] = "" if context["problems"] else error.message
    context["batches"] = cohort.imports.select_related("created_by").order_by("-created_at")
    # Tasks and proposals, then the optional tables of research runs.
    context["columns"] = [
        (table, [(name, name in REQUIRED[table]) for name in fields]) for table, fields in FIELDS.items()
    ]
    template = "reviewapp/cohort_import.html#outcome" if request.htmx else "reviewapp/cohort_import.html"
    return render(request, template, context)


urlpatterns = [path("cohorts/<int:cohort_id>/import/", cohort_import, name="cohort-import")]

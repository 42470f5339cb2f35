"""Pages: import research tasks and proposals into a cohort."""

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_http_methods

from reviewapp.api.imports import import_upload
from reviewapp.core.pages import posted_import
from reviewapp.core.requests import body_limit
from reviewapp.selectors.cohorts import cohort_for_user, cohort_import_batches
from reviewapp.services.imports import FIELDS, REQUIRED, cohort_import_file


@body_limit("OH_MAX_IMPORT_BYTES")
@login_required
@require_http_methods(["GET", "POST"])
def cohort_import(request, cohort_id):
    cohort = cohort_for_user(user=request.user, cohort_id=cohort_id, coordinate=True)
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
    context["batches"] = cohort_import_batches(cohort)
    # Tasks and proposals, then the optional tables of research runs.
    context["columns"] = [
        (table, [(name, name in REQUIRED[table]) for name in fields]) for table, fields in FIELDS.items()
    ]
    template = "reviewapp/cohort_import.html#outcome" if request.htmx else "reviewapp/cohort_import.html"
    return render(request, template, context)


urlpatterns = [path("cohorts/<int:cohort_id>/import/", cohort_import, name="cohort-import")]

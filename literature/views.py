"""Pages: the coordinators' literature page (corpus size, file import, recent imports)."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from literature import selectors
from literature.api import import_request
from literature.importers.csv_table import FIELD_HELP
from literature.services import FORMATS, references_import
from reviewapp.core import roles
from reviewapp.core.errors import page_errors
from reviewapp.core.requests import body_limit

# A page lists this many problems; the API returns them all.
PROBLEMS_SHOWN = 200


@body_limit("OH_MAX_REFERENCE_IMPORT_BYTES")
@login_required
@require_http_methods(["GET", "POST"])
def literature_home(request):
    roles.require_coordinator(request.user)
    context = {"result": None, "problems": None, "formats": FORMATS, "csv_fields": FIELD_HELP}
    chosen = request.POST.get("format", "pubmed_xml")
    if request.method == "POST":
        with page_errors() as outcome:
            values = import_request({**request.POST.dict(), **request.FILES.dict()})
            context["result"] = references_import(**values, user=request.user, name=values["file"].name)
        if outcome.error is not None:
            context["problems"] = outcome.error.details["records"]
    if context["problems"]:
        context["problem_count"] = len(context["problems"])
        context["problems"] = context["problems"][:PROBLEMS_SHOWN]
    context["chosen_format"] = chosen
    context["corpus"] = selectors.corpus_size_by_source()
    context["corpus_total"] = sum(row["references"] for row in context["corpus"])
    context["imports"] = selectors.reference_imports_recent()
    template = "literature/home.html#outcome" if request.htmx else "literature/home.html"
    return render(request, template, context)

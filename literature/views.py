"""Pages: the coordinators' literature page (corpus size, file import, recent imports)."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from literature import selectors
from literature.importers.csv_table import FIELD_HELP
from literature.services import FORMATS, ImportInvalid, references_import
from reviewapp.core import roles

# A page lists this many problems; the API returns them all.
PROBLEMS_SHOWN = 200


@login_required
@require_http_methods(["GET", "POST"])
def literature_home(request):
    roles.require_coordinator(request.user)
    context = {"result": None, "problems": None, "formats": FORMATS, "csv_fields": FIELD_HELP}
    chosen = request.POST.get("format", "pubmed_xml")
    if request.method == "POST":
        upload = request.FILES.get("file")
        if upload is None:
            context["problems"] = [{"record": None, "id": "", "field": "file", "message": "Choose a file to import."}]
        else:
            try:
                context["result"] = references_import(
                    file=upload,
                    format=chosen,
                    column_mapping=request.POST.get("mapping", "").strip() or None,
                    user=request.user,
                    name=upload.name,
                )
            except ImportInvalid as exc:
                context["problems"] = exc.problems
    if context["problems"]:
        context["problem_count"] = len(context["problems"])
        context["problems"] = context["problems"][:PROBLEMS_SHOWN]
    context["chosen_format"] = chosen
    context["corpus"] = selectors.corpus_size_by_source()
    context["corpus_total"] = sum(row["references"] for row in context["corpus"])
    context["imports"] = selectors.reference_imports_recent()
    template = "literature/home.html#outcome" if request.htmx else "literature/home.html"
    return render(request, template, context)

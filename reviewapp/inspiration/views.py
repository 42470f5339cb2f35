"""Pages of the inspiration audit, for coordinators and analysts (coordinators start audits and set cutoffs):
the audits, the cutoffs per group, and one audit with its counts and items."""

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods
from rest_framework import serializers

from reviewapp.core import roles
from reviewapp.core.errors import page_errors, validated
from reviewapp.inspiration import selectors, services
from reviewapp.inspiration.api import OUTCOMES, AuditInput, AuditItemsQuery, CutoffInput, item_data
from reviewapp.inspiration.models import InspirationAudit

ITEMS_PER_PAGE = 100


class AuditPageInput(AuditInput):
    """The audit form as the API's declaration reads it: the population chosen by its radio button (the other
    populations' fields ignored), run ids typed in one box separated by spaces, commas or lines, empty fields left out
    and the title-diagnostic box ticked or not."""

    def to_internal_value(self, data):
        population = data.get("population", "")
        values: dict = {"title_diagnostic": data.get("title_diagnostic") == "on"}
        if population in ("cohort", "benchmark") and data.get(population):
            values[population] = data[population]
        if population == "runs":
            values["runs"] = str(data.get("runs", "")).replace(",", " ").split()
        for name in ("window_start", "window_end", "replay"):
            if data.get(name):
                values[name] = data[name]
        return super().to_internal_value(values)


class CutoffGroupPageInput(serializers.Serializer):
    """The group a cutoff row names (the API names it in the URL)."""

    group = serializers.CharField(max_length=200)


class CutoffPageInput(CutoffInput, CutoffGroupPageInput):
    """A group's cutoff as the API accepts it."""


@login_required
@require_http_methods(["GET", "POST"])
def inspiration_home(request):
    roles.require_read_all(request.user)
    errors: list[str] = []
    cutoffs_missing = False
    if request.method == "POST":
        roles.require_coordinator(request.user)
        with page_errors(into=errors) as outcome:
            data = validated(AuditPageInput, request.POST)
            audit = services.audit_create(**selectors.audit_population(data), user=request.user)
            return redirect("inspiration-audit", audit.pk)
        # Refused for groups without a cutoff: the form says where to record them.
        cutoffs_missing = outcome.error is not None and outcome.error.code == "missing_cutoffs"
    audits = selectors.audits_recent()
    context = {
        "audits": [(audit, selectors.audit_population_label(audit)) for audit in audits],
        "finished": [audit for audit in audits if audit.state == InspirationAudit.State.DONE],
        **selectors.audit_population_choices(),
        "errors": errors,
        "cutoffs_missing": cutoffs_missing,
        "form": request.POST,
    }
    return render(request, "inspiration/home.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def inspiration_cutoffs(request):
    roles.require_read_all(request.user)
    errors: list[str] = []
    if request.method == "POST":
        roles.require_coordinator(request.user)
        with page_errors(into=errors):
            if request.POST.get("action") == "delete":
                services.cutoff_delete(group=validated(CutoffGroupPageInput, request.POST)["group"])
            else:
                data = validated(CutoffPageInput, request.POST)
                services.cutoff_set(
                    group=data["group"], cutoff=data["cutoff"], note=data.get("note", ""), user=request.user
                )
            return redirect("inspiration-cutoffs")
    cutoffs = selectors.cutoffs_by_group()
    groups = sorted(set(selectors.groups_known()) | set(cutoffs))
    context = {"rows": [(group, cutoffs.get(group)) for group in groups], "errors": errors}
    return render(request, "inspiration/cutoffs.html", context)


class AuditItemsPageQuery(AuditItemsQuery):
    """The items' filter form as the API's declaration reads it: a filter left empty is no filter (the page numbers
    its pages itself, with ?page=)."""

    def to_internal_value(self, data):
        return super().to_internal_value({name: data[name] for name in ("group", "judgment") if data.get(name)})


@login_required
def inspiration_audit(request, audit_id: int):
    roles.require_read_all(request.user)
    audit = selectors.audit_get(audit_id=audit_id)
    filters: list[str] = []
    query: dict = {}
    with page_errors(into=filters):
        query = dict(validated(AuditItemsPageQuery, request.GET))
    items = selectors.audit_items(audit, group=query.get("group", ""), outcome=query.get("judgment", ""))
    page = Paginator(items, ITEMS_PER_PAGE).get_page(request.GET.get("page"))
    report = selectors.audit_summary(audit)
    context = {
        "audit": audit,
        "population": selectors.audit_population_label(audit),
        "report": report,
        "in_progress": audit.state in (InspirationAudit.State.PENDING, InspirationAudit.State.RUNNING),
        "page": page,
        "items": [item_data(item) for item in page.object_list],
        "groups": [row["group"] for row in report["by_group"]],
        "outcomes": OUTCOMES,
        "query": query,
        "filter_errors": filters,
    }
    if request.htmx:
        response = render(request, "inspiration/audit.html#status", context)
        if not context["in_progress"]:
            response["HX-Refresh"] = "true"  # finished: the whole page, items included, once
        return response
    return render(request, "inspiration/audit.html", context)

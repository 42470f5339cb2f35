"""Reads of the reference corpus for the coordinators' literature page."""

from django.db.models import Count, Q

from literature.models import Reference, ReferenceImport


def corpus_size_by_source() -> list[dict]:
    """[{"source", "label", "references", "demo"}] for every source with references, largest first."""
    labels = dict(Reference.Source.choices)
    rows = (
        Reference.objects.values("source")
        .annotate(references=Count("id"), demo=Count("id", filter=Q(is_demo=True)))
        .order_by("-references", "source")
    )
    return [{**row, "label": labels.get(row["source"], row["source"])} for row in rows]


def reference_imports_recent(*, limit: int = 20) -> list[ReferenceImport]:
    return list(ReferenceImport.objects.select_related("created_by").order_by("-created_at", "-pk")[:limit])

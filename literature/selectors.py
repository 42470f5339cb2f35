"""Reads of the reference corpus: its size, recent imports, browsing and searching it, one reference and what used
it, citation waves."""

from dataclasses import dataclass
from datetime import date, timedelta

from django.db import connection
from django.db.models import Count, F, Q
from django.urls import reverse

from literature import retrieval
from literature.hooks import ReferenceUse, TaskGroup, registered_uses
from literature.models import CitationEdge, CitationWave, NoveltyCheck, Reference, ReferenceImport
from reviewapp.core.errors import NotFound, ServiceError
from reviewapp.models import Cohort, Proposal, ResearchTask

# Searching reads at most this many ranked references; browsing pages through them.
SEARCH_DEPTH = 500
# Without PostgreSQL's JSON containment, the candidates of this many most recent checks are scanned.
_SCANNED_CHECKS = 5000


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
    """The imports done, the most recent first (a staged import in progress is not yet one of them)."""
    imports = ReferenceImport.objects.filter(phase=ReferenceImport.Phase.DONE).select_related("created_by")
    return list(imports.order_by("-created_at", "-pk")[:limit])


@dataclass(frozen=True)
class CorpusRow:
    reference: Reference
    score: float | None  # the retrieval score when searching


@dataclass(frozen=True)
class CorpusPage:
    rows: list[CorpusRow]
    total: int  # references matching (when searching: among the best SEARCH_DEPTH)
    searched: bool


def corpus_browse(
    *,
    query: str = "",
    source: str | None = None,
    published_from: date | None = None,
    published_until: date | None = None,
    offset: int = 0,
    limit: int = 50,
) -> CorpusPage:
    """One page of the corpus: with a query, the project's retrieval (best first, the lexical terms of the query);
    without, the most recently published first. Dates bound the first day of each reference's publication period;
    undated references are left out when a date is given."""
    if query.strip():
        after = published_from - timedelta(days=1) if published_from else None
        candidates = retrieval.search(
            query,
            limit=min(offset + limit, SEARCH_DEPTH),
            published_after=after,
            published_until=published_until,
            source=source or None,
        )
        chosen = candidates[offset : offset + limit]
        by_id = Reference.objects.defer("raw").in_bulk([candidate.reference_id for candidate in chosen])
        rows = [CorpusRow(by_id[c.reference_id], c.score) for c in chosen if c.reference_id in by_id]
        return CorpusPage(rows, len(candidates), searched=True)
    references = Reference.objects.defer("raw")
    if source:
        references = references.filter(source=source)
    if published_from:
        references = references.filter(published__gte=published_from)
    if published_until:
        references = references.filter(published__lte=published_until)
    ordered = references.order_by(F("published").desc(nulls_last=True), "-pk")
    rows = [CorpusRow(reference, None) for reference in ordered[offset : offset + limit]]
    return CorpusPage(rows, references.count(), searched=False)


def reference_uses(reference: Reference) -> list[ReferenceUse]:
    """The novelty checks that read or cited the reference, then what the rooms above registered (audits)."""
    uses = [_check_use(check, reference) for check in _checks_using(reference)]
    return uses + registered_uses([reference.pk]).get(reference.pk, [])


def _checks_using(reference: Reference) -> list[NoveltyCheck]:
    checks = NoveltyCheck.objects.select_related("proposal", "run").order_by("-created_at", "-pk")
    if connection.vendor == "postgresql":
        return list(checks.filter(Q(reference=reference) | Q(candidates__contains=[{"reference_id": reference.pk}])))
    recent = checks[:_SCANNED_CHECKS]
    return [
        check
        for check in recent
        if check.reference_id == reference.pk
        or any(candidate.get("reference_id") == reference.pk for candidate in check.candidates or [])
    ]


def _check_use(check: NoveltyCheck, reference: Reference) -> ReferenceUse:
    if check.proposal is not None:
        label = f"Novelty check {check.pk} of proposal {check.proposal.external_id}"
        url = reverse("api-novelty-check", args=[check.pk])
    elif check.run is not None:
        label = f"Novelty check {check.pk} of run {check.run.public_id}"
        url = reverse("open-hypothesis-run", args=[check.run.public_id])
    else:
        label, url = f"Novelty check {check.pk}", ""
    how = "quoted as evidence" if check.reference_id == reference.pk else "read as a candidate"
    verdict = check.verdict or check.state
    return ReferenceUse(kind="Novelty check", label=label, url=url, detail=f"{how}; verdict {verdict}")


def citation_waves_recent(*, limit: int | None = 20) -> list[CitationWave]:
    return list(CitationWave.objects.select_related("created_by")[:limit])


def cohort_task_group(cohort_id: int) -> TaskGroup | None:
    """The research tasks of a cohort's proposals, with their sources (literature.hooks.TaskGroup)."""
    cohort = Cohort.objects.filter(pk=cohort_id).first()
    if cohort is None:
        return None
    tasks = ResearchTask.objects.filter(proposals__cohorts=cohort).distinct().order_by("key")
    return TaskGroup(cohort.name, [(key, sources) for key, sources in tasks.values_list("key", "sources")])


def cohort_choices() -> list[tuple[int, str]]:
    return list(Cohort.objects.order_by("name").values_list("pk", "name"))


def reference_get(*, reference_id: int) -> Reference:
    """One reference; NotFound when there is none."""
    reference = Reference.objects.filter(pk=reference_id).first()
    if reference is None:
        raise NotFound(f"There is no reference {reference_id}.")
    return reference


def citation_wave_get(*, wave_id: int) -> CitationWave:
    """One citation wave; NotFound when there is none."""
    wave = CitationWave.objects.filter(pk=wave_id).first()
    if wave is None:
        raise NotFound(f"There is no citation wave {wave_id}.")
    return wave


def citation_wave_edges(wave: CitationWave):
    """Every edge of the wave in the order found, as (citing, cited, direction) rows, read in chunks."""
    return CitationEdge.objects.filter(wave=wave).order_by("pk").values_list("citing", "cited", "direction").iterator()


def proposal_novelty_check_get(*, check_id: int) -> NoveltyCheck:
    """One novelty check of a proposal, with its proposal; NotFound when there is none (a run's checks included)."""
    check = NoveltyCheck.objects.select_related("proposal").filter(pk=check_id, proposal__isnull=False).first()
    if check is None:
        raise NotFound(f"There is no novelty check {check_id}.")
    return check


def proposal_for_check(external_id: str) -> Proposal:
    """The proposal with this imported id, with its task; a refusal (unknown_proposal) when there is none."""
    proposal = Proposal.objects.select_related("task").filter(external_id=external_id).first()
    if proposal is None:
        raise ServiceError(f"No proposal has the id “{external_id}”.", code="unknown_proposal")
    return proposal

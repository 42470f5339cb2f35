"""A reference corpus by citation wave (docs/protocol.md#a-corpus-by-citation-wave).

From anchor works ("MED:12345"), one wave reads each anchor's reference list (backward) and citation list (forward)
through Europe PMC, every page, and records each identified citing → cited pair as an edge; list entries Europe PMC
could not identify are counted as unmatched. Then every work at either end of an edge, anchors included, is fetched
by id and written into the corpus (the same upsert as any import): a work with a usable record is resolved, the
others unresolved. Requests go through the source client: the response cache, the shared rate limit, retries, and
replay-only mode (LITERATURE_REPLAY_ONLY), in which a wave runs from the cache alone.

A wave starts from anchors typed in, or from the source publications of a cohort's or benchmark set's research
tasks (their PMIDs and DOIs, imported with the tasks; never anything a model wrote): PMIDs are the anchors
"MED:<pmid>", and the worker finds each DOI's work in Europe PMC (`DOI:"…"`, cached for good) before it follows
citations. The same tasks give the same anchors, sorted; with the same cached answers, the same corpus, whose
content hash (anchors, edges and every resolved work's content hash) the finished wave records.

A wave is done by a worker (claimed through reviewapp.core.claims). Edges are written per list and references per
page, so a wave that stops (Europe PMC unavailable, a replay miss) keeps what it obtained and says why it stopped.
Each write is also the wave's heartbeat: the sweeper gives a wave whose worker fell silent to another worker.
"""

import hashlib
import json
import logging
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from literature.hooks import TaskGroup, task_group_kinds
from literature.models import CitationEdge, CitationWave, Reference
from literature.services import ReferenceWriter
from literature.sources import europepmc
from literature.sources.transport import SourceError
from reviewapp.core.claims import work_attempt, work_claim, work_finish, work_sweep_send
from reviewapp.core.errors import ServiceError, problem
from reviewapp.core.queue import broker_check, enqueue_on_commit

logger = logging.getLogger(__name__)

WAVE_TASK = "literature.citation_wave"
MAX_ANCHORS = 1000
# SQLite refuses statements with too many parameters, so look-ups by many ids go in chunks.
_LOOKUP_CHUNK = 900
_DIRECTION = {"references": CitationEdge.Direction.BACKWARD, "citations": CitationEdge.Direction.FORWARD}


class AnchorsInvalid(ServiceError):
    code = "invalid_anchors"


def anchors_checked(anchors: list[str]) -> list[str]:
    """The anchors as Europe PMC names works ("MED:12345"), repeats dropped in order; AnchorsInvalid naming every
    one that is not."""
    cleaned = list(dict.fromkeys(anchor.strip() for anchor in anchors if anchor and anchor.strip()))
    wrong = [
        anchor
        for anchor in cleaned
        if not europepmc.WORK_ID.match(anchor) or anchor.split(":", 1)[0] not in europepmc.LIST_SOURCES
    ]
    if wrong:
        sources = ", ".join(europepmc.LIST_SOURCES)
        raise AnchorsInvalid(
            f"These anchors are not Europe PMC work ids like MED:12345 (sources {sources}): {', '.join(wrong[:20])}.",
            problems=[problem(f"{anchor} is not a Europe PMC work id.", field="anchors") for anchor in wrong],
        )
    if not cleaned:
        raise AnchorsInvalid("Give at least one anchor, e.g. MED:12345.")
    if len(cleaned) > MAX_ANCHORS:
        raise AnchorsInvalid(f"A wave takes at most {MAX_ANCHORS} anchors; {len(cleaned)} were given.")
    return cleaned


def citation_wave_start(*, anchors: list[str], user=None, enqueue: bool = True) -> CitationWave:
    """Record a wave and hand it to a worker (enqueue=False: the caller does it, with citation_wave_perform)."""
    checked = anchors_checked(anchors)
    if enqueue:
        broker_check()
    with transaction.atomic():
        wave = CitationWave.objects.create(
            anchors=checked,
            total=2 * len(checked),
            created_by=user if user is not None and user.is_authenticated else None,
        )
        if enqueue:
            enqueue_on_commit(WAVE_TASK, wave.pk)
    return wave


def task_source_anchors(tasks: list[tuple[str, list[str]]]) -> tuple[list[str], list[str]]:
    """(anchors: "MED:<pmid>" of the tasks' PMIDs, sorted; the DOIs left to find in Europe PMC, sorted)."""
    sources = {source for _, task_sources in tasks for source in task_sources}
    anchors = sorted({f"MED:{source.split(':', 1)[1]}" for source in sources if source.startswith("pmid:")})
    return anchors, sorted(source for source in sources if source.startswith("doi:"))


def citation_wave_start_from_tasks(*, kind: str, group_id: int, user=None, enqueue: bool = True) -> CitationWave:
    """A wave anchored on the source publications of a group of research tasks (kind: "cohort" or "benchmark",
    literature.hooks.task_group_register), recorded with the tasks read."""
    kinds = task_group_kinds()
    group: TaskGroup | None = kinds[kind].read(group_id) if kind in kinds else None
    if group is None:
        raise AnchorsInvalid(f"There is no {kinds[kind].label.lower() if kind in kinds else kind} {group_id}.")
    anchors, dois = task_source_anchors(group.tasks)
    if not anchors and not dois:
        raise AnchorsInvalid(
            f"No task of “{group.name}” names its source publication: import the tasks with their sources "
            "(PMIDs or DOIs) first."
        )
    if len(anchors) + len(dois) > MAX_ANCHORS:
        raise AnchorsInvalid(f"A wave takes at most {MAX_ANCHORS} anchors; the tasks name {len(anchors) + len(dois)}.")
    if enqueue:
        broker_check()
    with transaction.atomic():
        wave = CitationWave.objects.create(
            anchors=anchors,
            origin=kind,
            origin_id=group_id,
            origin_name=group.name[:200],
            task_sources=[{"task": key, "sources": sources} for key, sources in sorted(group.tasks)],
            source_dois=dois,
            total=2 * (len(anchors) + len(dois)),
            created_by=user if user is not None and user.is_authenticated else None,
        )
        if enqueue:
            enqueue_on_commit(WAVE_TASK, wave.pk)
    return wave


def citation_wave_begin(*, anchors=None, cohort=None, benchmark=None, user=None) -> CitationWave:
    """The wave a page or the API asked for: from anchors typed in, or from a cohort's or a benchmark set's tasks."""
    if anchors is not None:
        return citation_wave_start(anchors=anchors, user=user)
    kind, group_id = ("cohort", cohort) if cohort is not None else ("benchmark", benchmark)
    return citation_wave_start_from_tasks(kind=kind, group_id=group_id, user=user)


class _TakenOver(Exception):
    """The sweeper gave the wave to another worker: this one stops and records nothing more."""


def citation_wave_perform(*, wave_id: int, progress: Callable[[CitationWave], None] | None = None) -> None:
    """Do a pending wave (a wave that is not pending is left alone). progress(wave) after each list and page."""
    token = work_claim(CitationWave, wave_id)
    if token is None:
        return
    wave = CitationWave.objects.get(pk=wave_id)
    with work_attempt(CitationWave, wave_id, token, label=f"Citation wave {wave_id}"):
        try:
            # A wave given back after a stop starts again: its edges are unique, so nothing is counted twice.
            _anchor_dois(wave)
            _update(wave, phase=CitationWave.Phase.TRAVERSING, progress=0, total=2 * len(wave.anchors), traversals=0)
            _traverse(wave, progress)
            _resolve(wave, progress)
            _update(wave, corpus_sha256=wave_corpus_sha256(wave))
        except SourceError as exc:
            logger.warning("Citation wave %s stopped: %s", wave_id, exc)
            work_finish(CitationWave, wave_id, token, failed=True, error=f"Europe PMC could not answer: {exc}")
        except _TakenOver:
            logger.info("Citation wave %s was given to another worker; this one stops", wave_id)
        else:
            work_finish(CitationWave, wave_id, token, phase=CitationWave.Phase.FINISHED)


def citation_waves_sweep() -> int:
    """The citation waves' part of the sweeper: a running wave whose heartbeat stopped (its worker died) is sent again,
    up to OH_WORK_MAX_ATTEMPTS claims, then fails with the reason; a wave pending unsent for
    OPEN_HYPOTHESIS_STALE_SECONDS (its send was lost) is sent again. Redoing a wave is safe: it starts again, and its
    edges and references are upserts."""
    attempts = settings.OH_WORK_MAX_ATTEMPTS
    return work_sweep_send(
        CitationWave,
        WAVE_TASK,
        unsent_before=timezone.now() - timedelta(seconds=settings.OPEN_HYPOTHESIS_STALE_SECONDS),
        max_attempts=attempts,
        reason=f"The worker doing this wave stopped {attempts} times before it finished; start the wave again.",
    )


def _update(wave: CitationWave, **values) -> None:
    """Write counts (F() expressions welcome) under the wave's claim, which is also its heartbeat, and read the wave
    back for the caller's progress callback. _TakenOver when the claim is no longer this worker's."""
    held = CitationWave.objects.filter(pk=wave.pk, state=CitationWave.State.RUNNING, claim_token=wave.claim_token)
    if not held.update(heartbeat_at=timezone.now(), **values):
        raise _TakenOver
    wave.refresh_from_db()


def _anchor_dois(wave: CitationWave) -> None:
    """The works of the tasks' DOIs, found in Europe PMC, added to the anchors (sorted); the DOIs it does not know
    are recorded as unresolved."""
    if not wave.source_dois:
        return
    found, unknown = set(wave.anchors), []
    for source in wave.source_dois:
        doi = source.split(":", 1)[1]
        work = None
        for page in europepmc.search(f'DOI:"{doi}"', limit=1, page_size=1, expires=False):
            work = next((p.reference.source_id for p in page if p.reference and p.reference.doi == doi), None)
        if work and work.split(":", 1)[0] in europepmc.LIST_SOURCES:
            found.add(work)
        else:
            unknown.append(source)
    _update(wave, anchors=sorted(found), unresolved_sources=unknown)


def wave_corpus_sha256(wave: CitationWave) -> str:
    """sha256 of what the wave built: its anchors, its edges and each resolved work's id and content hash, sorted."""
    edges = sorted(CitationEdge.objects.filter(wave=wave).values_list("citing", "cited", "direction"))
    works = wave_works(wave)
    contents: list[tuple[str, str]] = []
    for offset in range(0, len(works), _LOOKUP_CHUNK):
        rows = Reference.objects.filter(
            source=Reference.Source.EUROPE_PMC, source_id__in=works[offset : offset + _LOOKUP_CHUNK]
        )
        contents += rows.values_list("source_id", "content_sha256")
    document = {"anchors": sorted(wave.anchors), "edges": edges, "works": sorted(contents)}
    return hashlib.sha256(json.dumps(document, separators=(",", ":")).encode()).hexdigest()


def _traverse(wave: CitationWave, progress) -> None:
    for anchor in wave.anchors:
        for kind in ("references", "citations"):
            pairs, unmatched, pages = set(), 0, 0
            for entries in europepmc.work_list(kind, anchor):
                pages += 1
                for entry in entries:
                    work = europepmc.entry_work(entry)
                    if work is None:
                        unmatched += 1
                    elif work != anchor:
                        pairs.add((anchor, work) if kind == "references" else (work, anchor))
            with transaction.atomic():
                CitationEdge.objects.bulk_create(
                    [CitationEdge(wave=wave, citing=a, cited=b, direction=_DIRECTION[kind]) for a, b in sorted(pairs)],
                    ignore_conflicts=True,
                )
                _update(
                    wave,
                    traversals=F("traversals") + 1,
                    progress=F("progress") + 1,
                    unmatched=F("unmatched") + unmatched,
                    requests=F("requests") + pages,
                    edges=CitationEdge.objects.filter(wave=wave).count(),
                )
            if progress:
                progress(wave)


def wave_works(wave: CitationWave) -> list[str]:
    """Every work of the wave: its anchors and both ends of its edges, sorted."""
    works = set(wave.anchors)
    for citing, cited in CitationEdge.objects.filter(wave=wave).values_list("citing", "cited"):
        works.update((citing, cited))
    return sorted(works)


def _resolve(wave: CitationWave, progress) -> None:
    works = wave_works(wave)
    wanted = set(works)
    _update(wave, phase=CitationWave.Phase.RESOLVING, works=len(works), progress=0, total=len(works), resolved=0)
    found: set[str] = set()
    for offset in range(0, len(works), europepmc.FETCH_BATCH):
        batch = works[offset : offset + europepmc.FETCH_BATCH]
        writer, pages = ReferenceWriter(), 0
        with transaction.atomic(), writer:
            for page in europepmc.fetch_works(batch):
                pages += 1
                for parsed in page:
                    if parsed.reference is not None and parsed.reference.source_id in wanted:
                        found.add(parsed.reference.source_id)
                        writer.add(parsed.reference)
            writer.flush()
            _update(
                wave,
                progress=offset + len(batch),
                resolved=len(found),
                unresolved=offset + len(batch) - len(found),
                requests=F("requests") + pages,
            )
        if progress:
            progress(wave)

"""Writes of the inspiration room: cutoffs per group, and audits (docs/protocol.md#inspiration-audit).

An audit is created with its population's versions (one item each) and the snapshot of everything it depends on
(cutoffs, judge, prompt); then it advances by phases, each done in batches that workers claim
(reviewapp.core.claims), so a redelivered task is harmless and several workers share the work:

1. retrieval: for each version, the literature published after its group's cutoff (and within the window) is
   searched with the first 6000 characters of its text; the version is retrieved when the best candidate shares at
   least three terms with it (the lexical gate). With the title diagnostic, the search is repeated with its title.
2. judging: each distinct (text judged, reference) input gets one judgement, shared by every version with that
   input; a replayed audit reuses the earlier audit's judgement of the same input instead of asking the model.
3. summary: the counts are computed once and stored.

Results are written as they are obtained: a retrieval batch in one transaction, each judgement in its own. An audit
that stops keeps what it obtained and says why.
"""

import hashlib
import logging
from datetime import date, timedelta

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import F
from django.utils import timezone

from literature import retrieval
from literature.models import Reference
from literature.retrieval import GATE_MIN_SHARED_TERMS, JUDGEMENT_CHARS, RETRIEVAL_CHARS, judgement_card
from literature.verdicts import clean_quote, quote_occurs
from reviewapp.core.claims import work_attempt, work_claim, work_finish, work_heartbeat, work_sweep_send
from reviewapp.core.errors import ServiceError, problem
from reviewapp.core.queue import broker_check, enqueue_on_commit
from reviewapp.inspiration import prompts, selectors
from reviewapp.inspiration.cutoffs import Cutoff, within_window
from reviewapp.inspiration.models import (
    InspirationAudit,
    InspirationBatch,
    InspirationCutoff,
    InspirationItem,
    InspirationJudgment,
)
from screening import llm
from screening.llm.models import ModelEndpoint, RosterMember

logger = logging.getLogger(__name__)

ADVANCE_TASK = "inspiration.audit_advance"
BATCH_TASK = "inspiration.batch"
RETRIEVAL_BATCH = 100
JUDGING_BATCH = 10
# The best candidate is the first of this many, after the optional dense re-ranking (literature.retrieval).
CANDIDATES_SEARCHED = 10
MAX_VERSIONS = 100_000

Audit = InspirationAudit
Judgment = InspirationJudgment.Judgment


class CutoffInvalid(ServiceError):
    code = "invalid_cutoff"


class AuditRefused(ServiceError):
    code = "invalid_audit"


# Cutoffs ---------------------------------------------------------------------------------------------------------


@transaction.atomic
def cutoff_set(*, group: str, cutoff: str, note: str = "", user=None) -> InspirationCutoff:
    """Record a group's operational cutoff, a day ("2026-05-14") or a month ("2026-05"). Audits already started
    keep the cutoffs they started with."""
    group = group.strip()
    if not group:
        raise CutoffInvalid("Name the group (the generator) the cutoff belongs to.")
    try:
        parsed = Cutoff.parse(cutoff)
    except ValueError as exc:
        raise CutoffInvalid(f"The cutoff {exc}.") from None
    record, _ = InspirationCutoff.objects.update_or_create(
        group=group,
        defaults={"day": parsed.day, "precision": parsed.precision, "note": note.strip(), "updated_by": user},
    )
    return record


@transaction.atomic
def cutoff_delete(*, group: str) -> None:
    deleted, _ = InspirationCutoff.objects.filter(group=group).delete()
    if not deleted:
        raise ServiceError(f"No cutoff is recorded for “{group}”.", code="not_found", status=404)


# Starting an audit -----------------------------------------------------------------------------------------------


def _versions(*, cohort, runs, benchmark) -> tuple[str, list[selectors.Version]]:
    chosen = [name for name, value in (("cohort", cohort), ("runs", runs), ("benchmark", benchmark)) if value]
    if len(chosen) != 1:
        raise AuditRefused("Choose one population: a cohort, screening runs or a benchmark set.")
    if cohort is not None:
        return Audit.Population.COHORT, selectors.cohort_versions(cohort)
    if benchmark is not None:
        return Audit.Population.BENCHMARK, selectors.benchmark_versions(benchmark)
    return Audit.Population.RUNS, selectors.run_versions(runs)


def _judge_snapshot(endpoint: ModelEndpoint) -> dict:
    """The judge as the audit found it, with what a replay needs to draw the same: the sampling seed its requests
    carry (None: none), and for a simulated judge the server's configuration (its seed and fault shares; None when
    no simulated server answered at the endpoint's address)."""
    snapshot = {
        "display_name": endpoint.display_name,
        "company": endpoint.company,
        "model_id": endpoint.model_id,
        "protocol": endpoint.protocol,
        "simulated": endpoint.is_simulated,
        "temperature": endpoint.temperature if endpoint.accepts_temperature else None,
        "request_seed": llm.request_seed(endpoint),
    }
    if endpoint.is_simulated:
        snapshot["simulator"] = llm.simulated_server_configuration(endpoint.base_url)
    return snapshot


def audit_create(
    *,
    cohort=None,
    runs=None,
    benchmark=None,
    window_start: date | None = None,
    window_end: date | None = None,
    title_diagnostic: bool = False,
    replay_of: InspirationAudit | None = None,
    user=None,
    enqueue: bool = True,
) -> InspirationAudit:
    """Record an audit of one population and hand it to the workers (enqueue=False: the caller advances it, e.g.
    with audit_complete_here). Refused when the population is empty, when a group has no cutoff, or when no
    inspiration judge is configured."""
    if window_start and window_end and window_start > window_end:
        message = (
            f"The publication window starts ({window_start.isoformat()}) after it ends ({window_end.isoformat()})."
        )
        raise AuditRefused(message, problems=[{"field": "window_start", "message": message}])
    population, versions = _versions(cohort=cohort, runs=runs, benchmark=benchmark)
    if not versions:
        raise AuditRefused("The population holds no hypothesis version to audit.")
    if len(versions) > MAX_VERSIONS:
        raise AuditRefused(f"An audit takes at most {MAX_VERSIONS} versions; this population has {len(versions)}.")
    cutoffs = selectors.cutoffs_by_group()
    groups = sorted({version.group for version in versions})
    missing = [group for group in groups if group not in cutoffs]
    if missing:
        raise AuditRefused(
            f"Record the cutoff of every group first; these have none: {', '.join(missing)}.",
            code="missing_cutoffs",
            problems=[problem(f"No cutoff is recorded for “{group}”.", field="groups") for group in missing],
        )
    if replay_of is not None and replay_of.state != Audit.State.DONE:
        raise AuditRefused("Only a finished audit's judgements can be replayed.")
    endpoint = llm.roster_endpoint(RosterMember.Role.INSPIRATION_JUDGE)
    if endpoint is None:
        raise ServiceError("The default roster names no inspiration judge.", code="not_configured", status=503)
    if enqueue:
        broker_check()
    snapshot = {
        group: {
            "cutoff": cutoffs[group].cutoff.text,
            "precision": cutoffs[group].precision,
            "last_day": cutoffs[group].cutoff.last_day.isoformat(),
            # The first day of the group's later literature within the publication window.
            "later_from": (within_window(cutoffs[group].cutoff, window_start).last_day + timedelta(days=1)).isoformat(),
            "note": cutoffs[group].note,
        }
        for group in groups
    }
    with transaction.atomic():
        audit = Audit.objects.create(
            population=population,
            cohort=cohort,
            benchmark=benchmark,
            window_start=window_start,
            window_end=window_end,
            title_diagnostic=title_diagnostic,
            replay_of=replay_of,
            cutoffs=snapshot,
            judge_endpoint=endpoint,
            judge=_judge_snapshot(endpoint),
            prompt=prompts.prompt_record(),
            simulated=endpoint.is_simulated,
            total=len(versions),
            created_by=user if user is not None and user.is_authenticated else None,
        )
        if runs:
            audit.runs.set(runs)
        InspirationItem.objects.bulk_create(
            [
                InspirationItem(
                    audit=audit,
                    position=position,
                    label=version.label[:300],
                    proposal_id=version.proposal_id,
                    run_hypothesis_id=version.run_hypothesis_id,
                    benchmark_hypothesis_id=version.benchmark_hypothesis_id,
                    group=version.group[:200],
                    domain=version.domain[:200],
                    text=version.text,
                    title=version.title,
                )
                for position, version in enumerate(versions, start=1)
            ],
            batch_size=1000,
        )
        if enqueue:
            enqueue_on_commit(ADVANCE_TASK, audit.pk)
    return audit


# Advancing -------------------------------------------------------------------------------------------------------


def _unfinished_batches(audit: InspirationAudit, kind: str):
    return audit.batches.filter(kind=kind, state__in=[InspirationBatch.State.PENDING, InspirationBatch.State.RUNNING])


def _enqueue(batches: list[InspirationBatch], enqueue: bool) -> None:
    if enqueue:
        for batch in batches:
            enqueue_on_commit(BATCH_TASK, batch.pk)


def audit_advance(*, audit_id: int, enqueue: bool = True) -> None:
    """Move the audit on when its current phase's work is done (any worker may call it; each transition is a
    conditional update, so only one makes it)."""
    audit = Audit.objects.get(pk=audit_id)
    if audit.state == Audit.State.PENDING:
        _start(audit, enqueue)
        return
    if audit.state != Audit.State.RUNNING:
        return
    kinds = InspirationBatch.Kind
    if audit.phase == Audit.Phase.RETRIEVAL and not audit.batches.exists():
        return  # still starting (or its starter died: the sweeper gives it back)
    if audit.phase == Audit.Phase.RETRIEVAL and not _unfinished_batches(audit, kinds.RETRIEVAL).exists():
        failed = audit.batches.filter(kind=kinds.RETRIEVAL, state=InspirationBatch.State.FAILED).first()
        if failed is not None:
            _stop(audit, f"retrieval stopped: {failed.error}")
            return
        if not _judging_start(audit, enqueue):
            return
        audit.refresh_from_db()
    if audit.phase == Audit.Phase.JUDGING and not _unfinished_batches(audit, kinds.JUDGING).exists():
        Audit.objects.filter(pk=audit.pk, phase=Audit.Phase.JUDGING).update(phase=Audit.Phase.SUMMARY)
        audit.refresh_from_db()
    if audit.phase == Audit.Phase.SUMMARY:
        # Counting is idempotent: a worker that stopped half-way is made good by the next advance.
        Audit.objects.filter(pk=audit.pk, state=Audit.State.RUNNING).update(
            state=Audit.State.DONE,
            summary=selectors.audit_report(audit),
            finished_at=timezone.now(),
            progress=F("total"),
        )


def _start(audit: InspirationAudit, enqueue: bool) -> None:
    """Pending → running (claimed: of two workers, one starts it): the corpus snapshot, then the retrieval batches."""
    token = work_claim(Audit, audit.pk)
    if token is None:
        return
    with work_heartbeat(Audit, audit.pk, token):
        corpus = selectors.corpus_snapshot(_bounds(audit), audit.window_start, audit.window_end)
        retrieval.index_references()
    positions = sorted(audit.items.values_list("position", flat=True))
    with transaction.atomic():
        started = Audit.objects.filter(pk=audit.pk, state=Audit.State.RUNNING, claim_token=token).update(
            corpus=corpus, progress=0, total=len(positions)
        )
        if not started:
            return  # the sweeper gave the audit to another worker meanwhile: that worker makes the batches
        batches = InspirationBatch.objects.bulk_create(
            [
                InspirationBatch(
                    audit=audit,
                    kind=InspirationBatch.Kind.RETRIEVAL,
                    first=chunk[0],
                    last=chunk[-1],
                )
                for chunk in (positions[i : i + RETRIEVAL_BATCH] for i in range(0, len(positions), RETRIEVAL_BATCH))
            ]
        )
        _enqueue(batches, enqueue)


def _stop(audit: InspirationAudit, error: str) -> None:
    Audit.objects.filter(pk=audit.pk, state=Audit.State.RUNNING).update(
        state=Audit.State.FAILED, error=error[:2000], finished_at=timezone.now()
    )


def input_sha256(hypothesis_text: str, reference: Reference | None) -> str:
    """The key of a judgement's input: the prompt version, the text judged and the reference's content."""
    reference_key = (
        f"{reference.source}:{reference.source_id}:{reference.content_sha256}" if reference else "missing reference"
    )
    return hashlib.sha256(f"{prompts.PROMPT_VERSION}\x1f{hypothesis_text}\x1f{reference_key}".encode()).hexdigest()


def _judging_start(audit: InspirationAudit, enqueue: bool) -> bool:
    """Retrieval → judging: one judgement per distinct input (copied from the replayed audit when it has one), the
    items pointed at theirs, and the judging batches. False when another worker made the transition."""
    with transaction.atomic():
        if not Audit.objects.filter(pk=audit.pk, phase=Audit.Phase.RETRIEVAL).update(phase=Audit.Phase.JUDGING):
            return False
        items = list(
            InspirationItem.objects.filter(audit=audit, retrieved=True)
            .select_related("candidate")
            .only("pk", "text", "candidate")
        )
        inputs: dict[str, tuple[str, Reference | None]] = {}
        item_input = {}
        for item in items:
            judged_text = item.text[:JUDGEMENT_CHARS]
            key = input_sha256(judged_text, item.candidate)
            inputs.setdefault(key, (judged_text, item.candidate))
            item_input[item.pk] = key
        earlier = {}
        if audit.replay_of_id:
            earlier = {
                judgment.input_sha256: judgment
                for judgment in InspirationJudgment.objects.filter(
                    audit_id=audit.replay_of_id, state=InspirationJudgment.State.DONE
                )
            }
        created = InspirationJudgment.objects.bulk_create(
            [_new_judgment(audit, key, text, reference, earlier.get(key)) for key, (text, reference) in inputs.items()]
        )
        by_key = {judgment.input_sha256: judgment.pk for judgment in created}
        for item in items:
            item.judgment_id = by_key[item_input[item.pk]]
        InspirationItem.objects.bulk_update(items, ["judgment"], batch_size=1000)
        pending = [judgment.pk for judgment in created if judgment.state == InspirationJudgment.State.PENDING]
        Audit.objects.filter(pk=audit.pk).update(progress=len(created) - len(pending), total=len(created))
        batches = InspirationBatch.objects.bulk_create(
            [
                InspirationBatch(
                    audit=audit, kind=InspirationBatch.Kind.JUDGING, judgments=pending[i : i + JUDGING_BATCH]
                )
                for i in range(0, len(pending), JUDGING_BATCH)
            ]
        )
        _enqueue(batches, enqueue)
    return True


def _new_judgment(audit, key: str, text: str, reference, replayed: InspirationJudgment | None) -> InspirationJudgment:
    judgment = InspirationJudgment(audit=audit, input_sha256=key, reference=reference, hypothesis_text=text)
    if replayed is not None:
        for name in ("judgment", "judged", "quote_verified", "connection", "quote", "reason", "model_call_id"):
            setattr(judgment, name, getattr(replayed, name))
        judgment.replayed_from = replayed
        judgment.state = InspirationJudgment.State.DONE
        judgment.finished_at = timezone.now()
    return judgment


# Batches ---------------------------------------------------------------------------------------------------------


def batch_perform(*, batch_id: int, enqueue: bool = True) -> None:
    """Do a pending batch (one that is not pending is left alone), then let the audit advance."""
    token = work_claim(InspirationBatch, batch_id)
    if token is None:
        return
    batch = InspirationBatch.objects.select_related("audit").get(pk=batch_id)
    with work_attempt(InspirationBatch, batch_id, token, label=f"Inspiration batch {batch_id}"):
        if batch.kind == InspirationBatch.Kind.RETRIEVAL:
            _retrieval_batch(batch, token)
        else:
            _judging_batch(batch, token)
    audit_advance(audit_id=batch.audit_id, enqueue=enqueue)


def _bounds(audit: InspirationAudit) -> dict[str, Cutoff]:
    """Each group's bound on later literature: its cutoff as the audit recorded it, within the publication window."""
    return {
        group: within_window(Cutoff.parse(values["cutoff"]), audit.window_start)
        for group, values in audit.cutoffs.items()
    }


def best_candidate(query: str, cutoff: Cutoff, window_end: date | None):
    """The best reference published after the cutoff (a group's bound within the window: _bounds) and by the window's
    end for a query, the terms it shares with the query, and whether it passes the lexical gate: (candidate or None,
    shared terms, passed)."""
    query = query[:RETRIEVAL_CHARS]
    # Without the optional re-ranking, the first by rank is the best: no need to read more.
    limit = CANDIDATES_SEARCHED if retrieval.dense_model() is not None else 1
    found = retrieval.search(query, limit=limit, published_after=cutoff.last_day, published_until=window_end)
    if not found:
        return None, [], False
    shared = retrieval.shared_terms(query, found[0].retrieval_text)
    return found[0], shared, len(shared) >= GATE_MIN_SHARED_TERMS


def _retrieval_batch(batch: InspirationBatch, token) -> None:
    audit = batch.audit
    cutoffs = _bounds(audit)
    items = list(
        InspirationItem.objects.filter(audit=audit, position__gte=batch.first, position__lte=batch.last).only(
            "pk", "group", "text", "title"
        )
    )
    # Identical texts of one group search identically: once each.
    found: dict[tuple[str, str], tuple] = {}
    for item in items:
        cutoff = cutoffs[item.group]
        key = (item.group, item.text[:RETRIEVAL_CHARS])
        if key not in found:
            found[key] = best_candidate(item.text, cutoff, audit.window_end)
        candidate, shared, passed = found[key]
        item.candidate_id = candidate.reference_id if candidate else None
        item.score = candidate.score if candidate else None
        item.shared_terms = shared
        item.retrieved = passed
        item.retrieval_done = True
        if audit.title_diagnostic:
            # The diagnostic keeps the corpus, the ranking, the date rule and the gate; only the query changes.
            _, _, item.title_retrieved = best_candidate(item.title or item.text, cutoff, audit.window_end)
    with transaction.atomic():
        InspirationItem.objects.bulk_update(
            items, ["candidate", "score", "shared_terms", "retrieved", "retrieval_done", "title_retrieved"]
        )
        Audit.objects.filter(pk=audit.pk).update(progress=F("progress") + len(items))
        work_finish(InspirationBatch, batch.pk, token)


def _judging_batch(batch: InspirationBatch, token) -> None:
    audit = batch.audit
    endpoint = audit.judge_endpoint
    for judgment_id in batch.judgments:
        judgment = (
            InspirationJudgment.objects.select_related("reference")
            .filter(pk=judgment_id, state=InspirationJudgment.State.PENDING)
            .first()
        )
        if judgment is None:
            continue
        try:
            fields = judge(judgment, endpoint)
        except DatabaseError:
            raise
        except Exception as exc:
            logger.exception("Inspiration judgement %s failed", judgment_id)
            fields = {"judgment": Judgment.FAILED, "reason": f"internal error ({type(exc).__name__})"}
        # Each judgement is written as soon as it is obtained: a batch that stops keeps the ones before.
        InspirationJudgment.objects.filter(pk=judgment_id).update(
            state=InspirationJudgment.State.DONE, finished_at=timezone.now(), **fields
        )
    with transaction.atomic():
        Audit.objects.filter(pk=audit.pk).update(progress=F("progress") + len(batch.judgments))
        work_finish(InspirationBatch, batch.pk, token)


def judge(judgment: InspirationJudgment, endpoint: ModelEndpoint | None) -> dict:
    """Ask the judge about one input (with the protocol's one "ask once more") and check its quote. Returns the
    judgement's fields: positive only with a quote that occurs in the publication; a positive whose quote does not
    is recorded as negative, with the judge's own answer kept; a reply never read is failed."""
    reference = judgment.reference
    if reference is None:
        return {"judgment": Judgment.FAILED, "reason": "the reference is no longer in the corpus"}
    if endpoint is None:
        return {"judgment": Judgment.FAILED, "reason": "the audit's judge endpoint no longer exists"}
    year = reference.published.year if reference.published else None
    system, user = prompts.messages(
        hypothesis=judgment.hypothesis_text, publication=judgement_card(reference.title, reference.abstract, year)
    )
    reading, call = llm.ask_twice(
        prompts.read_reply,
        endpoint=endpoint,
        system=system,
        user=user,
        purpose="inspiration",
        json_schema=prompts.SCHEMA,
    )
    fields: dict = {"model_call_id": call.pk if call else None}
    if reading is None:
        return {**fields, "judgment": Judgment.FAILED, "reason": "the judge gave no readable judgement, asked twice"}
    fields.update(judged=reading.judgment, connection=reading.connection, reason=reading.reason)
    if reading.judgment == Judgment.NEGATIVE:
        return {**fields, "judgment": Judgment.NEGATIVE, "quote": clean_quote(reading.quote)}
    quote = clean_quote(reading.quote)
    if quote_occurs(reading.quote, f"{reference.title}\n{reference.abstract}"):
        return {**fields, "judgment": Judgment.POSITIVE, "quote": quote, "quote_verified": True}
    why = "no quote" if not quote else "a quote that does not occur in the publication"
    reason = f"unverified: the positive judgement came with {why}" + (
        f" (the judge's reason: {reading.reason})" if reading.reason else ""
    )
    return {**fields, "judgment": Judgment.NEGATIVE, "quote": quote, "reason": reason}


def batches_sweep() -> int:
    """Running batches whose heartbeat stopped (their worker died) go back to the queue; after
    INSPIRATION_MAX_ATTEMPTS claims they fail, their pending judgements with them, and their audit moves on. An audit
    whose starter died before making its batches starts again (and fails after INSPIRATION_MAX_ATTEMPTS starts).
    Audits and batches pending unsent for INSPIRATION_STALE_SECONDS (their send was lost) are sent again. Returns how
    many were sent again."""
    stale = timezone.now() - timedelta(seconds=settings.INSPIRATION_STALE_SECONDS)
    reason = "stopped: its worker made no progress (the sweeper gave up on it)"
    sent = work_sweep_send(
        InspirationBatch,
        BATCH_TASK,
        unsent_before=stale,
        max_attempts=settings.INSPIRATION_MAX_ATTEMPTS,
        reason=reason,
    )
    sent += work_sweep_send(
        Audit,
        ADVANCE_TASK,
        unsent_before=stale,
        max_attempts=settings.INSPIRATION_MAX_ATTEMPTS,
        reason="The worker starting this audit stopped before it made its batches; start the audit again.",
        phase=Audit.Phase.RETRIEVAL,
        batches__isnull=True,
    )
    given_up = InspirationBatch.objects.filter(state=InspirationBatch.State.FAILED, error=reason)
    for batch in given_up.filter(audit__state=Audit.State.RUNNING):
        InspirationJudgment.objects.filter(pk__in=batch.judgments, state=InspirationJudgment.State.PENDING).update(
            state=InspirationJudgment.State.DONE, judgment=Judgment.FAILED, reason=reason, finished_at=timezone.now()
        )
        audit_advance(audit_id=batch.audit_id)
    return sent


def audit_complete_here(*, audit_id: int) -> InspirationAudit:
    """Do the whole audit in this process, batch after batch (the management command, benchmarks and tests)."""
    audit_advance(audit_id=audit_id, enqueue=False)
    while True:
        pending = list(
            InspirationBatch.objects.filter(audit_id=audit_id, state=InspirationBatch.State.PENDING)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        if not pending:
            break
        for batch_id in pending:
            batch_perform(batch_id=batch_id, enqueue=False)
    audit_advance(audit_id=audit_id, enqueue=False)
    return Audit.objects.get(pk=audit_id)

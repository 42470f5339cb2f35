"""The literature novelty check (docs/protocol.md#literature-novelty-check): retrieval through the lexical gate, one
recorded model call for the judgement (its rules: literature.verdicts), and the records of checks.

A check of a run's selected hypothesis is a work item of the run's literature step: this room registers
`run_hypothesis_check` with the screening pipeline (screening.hooks), which claims and records the item. A check of a
proposal is asked for on demand and done by a worker.
"""

from datetime import date, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from literature import prompts, retrieval
from literature.models import NoveltyCheck
from literature.retrieval import JUDGEMENT_CHARS, RETRIEVAL_CHARS
from literature.verdicts import (
    JudgedWith,
    JudgementUnreadable,
    NoveltyResult,
    Part,
    Retrieved,
    hypothesis_parts,
    judged,
    parse_judgement,
    split_sections,
)
from reviewapp.core.claims import work_attempt, work_claim, work_finish, work_sweep_send
from reviewapp.core.queue import broker_check, enqueue_on_commit
from screening import llm
from screening.prompts import hypothesis_text
from screening.selectors import run_role_endpoint
from screening.services import work
from screening.services.work import hypothesis_literature_record

Verdict = NoveltyCheck.Verdict
NO_CANDIDATE_REASON = "no candidate passed the lexical gate"
# Candidates retrieved before the gate, and kept after it, for the whole hypothesis and for each part.
WHOLE_RETRIEVED, WHOLE_KEPT = 20, 5
PART_RETRIEVED, PART_KEPT = 10, 2
CHECK_TASK = "literature.novelty_check"


# Retrieval -------------------------------------------------------------------------------------------------------


def _retrieve(hypothesis_text: str, parts: list[Part], published_before: date | None) -> list[Retrieved]:
    """The gated candidates the judge reads: the best for the whole hypothesis, then the best for each part."""
    plain = " ".join(section for section in split_sections(hypothesis_text) if section)[:RETRIEVAL_CHARS]
    queries = [("hypothesis", plain, WHOLE_RETRIEVED, WHOLE_KEPT)]
    queries += [(part.name, part.text, PART_RETRIEVED, PART_KEPT) for part in parts if len(parts) > 1]
    pool: dict[int, Retrieved] = {}
    for retrieved_for, text, retrieved, kept in queries:
        taken = 0
        for candidate in retrieval.search(text, limit=retrieved, published_before=published_before):
            if taken == kept:
                break
            shared = retrieval.shared_terms(text, candidate.retrieval_text)
            if len(shared) < retrieval.GATE_MIN_SHARED_TERMS:
                continue
            taken += 1
            if candidate.reference_id not in pool:
                label = f"R{len(pool) + 1}"
                pool[candidate.reference_id] = Retrieved(label, candidate, retrieved_for, shared)
    return list(pool.values())


def novelty_check(*, hypothesis_text: str, endpoint, run=None, published_before: date | None = None) -> NoveltyResult:
    """Check one hypothesis against the corpus (see the module docs). endpoint: the judge (a ModelEndpoint), or None
    when none is configured (then only a check that finds no candidate can finish). Call outside a transaction."""
    parts = hypothesis_parts(hypothesis_text)
    pool = _retrieve(hypothesis_text, parts, published_before)
    if not pool:
        return NoveltyResult(verdict=Verdict.NOT_REPORTED, reason=NO_CANDIDATE_REASON)
    if endpoint is None:
        return NoveltyResult(verdict=Verdict.UNRESOLVED, reason="no literature judge is configured", candidates=pool)
    system, user = prompts.novelty_messages(
        hypothesis=hypothesis_text[:JUDGEMENT_CHARS],
        parts=[(part.name, part.text) for part in parts],
        references=[(retrieved.label, retrieved.candidate.as_read) for retrieved in pool],
    )
    completion = llm.complete(
        endpoint=endpoint, system=system, user=user, purpose="novelty", run=run, json_schema=prompts.NOVELTY_SCHEMA
    )
    base = JudgedWith(candidates=pool, model_call_id=completion.call.pk)
    if not completion.usable:
        reason = f"the judge gave no usable reply: {completion.error or 'no reason given'}"
        return NoveltyResult(verdict=Verdict.UNRESOLVED, reason=reason, **base)
    try:
        judgement = parse_judgement(completion.text)
    except JudgementUnreadable as exc:
        return NoveltyResult(verdict=Verdict.UNRESOLVED, reason=f"the judge's reply could not be read: {exc}", **base)
    return judged(judgement, pool, parts, base)


# Records ---------------------------------------------------------------------------------------------------------


def _recorded_fields(result: NoveltyResult) -> dict:
    return {
        "verdict": result.verdict,
        "evidence": result.evidence,
        "reference_id": result.reference_id,
        "citation": result.reference,
        "reason": result.reason,
        "unsupported": result.unsupported,
        "judged_verdict": result.judged_verdict,
        "components": [
            {"part": c.part, "text": c.text, "evidence": c.evidence, "citation": c.citation} for c in result.components
        ],
        "candidates": [
            {
                "label": r.label,
                "reference_id": r.candidate.reference_id,
                "title": r.candidate.title,
                "score": r.candidate.score,
                "shared_terms": r.shared_terms,
                "retrieved_for": r.retrieved_for,
            }
            for r in result.candidates
        ],
        "model_call_id": result.model_call_id,
    }


def novelty_check_record(
    *, result: NoveltyResult, hypothesis_text: str, endpoint=None, run=None, hypothesis=None, published_before=None
) -> NoveltyCheck:
    """Record a finished check of a run's hypothesis (in the caller's transaction)."""
    return NoveltyCheck.objects.create(
        hypothesis_text=hypothesis_text,
        endpoint=endpoint,
        run=run,
        hypothesis=hypothesis,
        published_before=published_before,
        state=NoveltyCheck.State.DONE,
        finished_at=timezone.now(),
        **_recorded_fields(result),
    )


def proposal_novelty_check_request(
    *, proposal, endpoint, published_before: date | None = None, task_cutoff: bool = True
) -> NoveltyCheck:
    """Ask for a check of a proposal, done by a worker. The cutoff is `published_before` when given, else (with
    task_cutoff) the publication date of the proposal's research task: only what was published before it counts."""
    cutoff = published_before or (proposal.task.published if task_cutoff else None)
    broker_check()
    with transaction.atomic():
        check = NoveltyCheck.objects.create(
            hypothesis_text=hypothesis_text(proposal.statement, proposal.mechanism, proposal.prediction),
            endpoint=endpoint,
            proposal=proposal,
            published_before=cutoff,
        )
        enqueue_on_commit(CHECK_TASK, check.pk)
    return check


def novelty_check_perform(*, check_id: int) -> None:
    """Do a pending check. A check that is not pending (done, or held by another worker) is left alone."""
    token = work_claim(NoveltyCheck, check_id)
    if token is None:
        return
    check = NoveltyCheck.objects.select_related("endpoint").get(pk=check_id)
    with work_attempt(NoveltyCheck, check_id, token, label=f"Novelty check {check_id}"):
        result = novelty_check(
            hypothesis_text=check.hypothesis_text, endpoint=check.endpoint, published_before=check.published_before
        )
        with transaction.atomic():
            work_finish(NoveltyCheck, check_id, token, **_recorded_fields(result))


def novelty_checks_sweep() -> int:
    """The literature room's part of the sweeper: running checks whose heartbeat stopped (their worker died) are sent
    again, up to OH_WORK_MAX_ATTEMPTS claims, then fail with the reason; a check pending unsent for
    OPEN_HYPOTHESIS_STALE_SECONDS (its send was lost) is sent again. Redoing a check is safe: its result is recorded
    only under its claim."""
    attempts = settings.OH_WORK_MAX_ATTEMPTS
    return work_sweep_send(
        NoveltyCheck,
        CHECK_TASK,
        unsent_before=timezone.now() - timedelta(seconds=settings.OPEN_HYPOTHESIS_STALE_SECONDS),
        max_attempts=attempts,
        reason=f"The worker doing this check stopped {attempts} times before it finished; request the check again.",
    )


# A run's literature step ---------------------------------------------------------------------------------------


def run_hypothesis_check(item) -> work.Outcome:
    """One work item of a run's literature step: the selected hypothesis at the item's position, judged by the run's
    literature judge. Only references published before the run's cutoff count (a benchmark set's run answers a
    research task, and the task's own article would otherwise "report" every hypothesis that found its result)."""
    run = item.run
    hypothesis = run.hypotheses.filter(selected=True, position=item.slot).first()
    if hypothesis is None:
        return work.Outcome(ok=False, error=f"no selected hypothesis at position {item.slot}")
    endpoint = run_role_endpoint(run, "novelty")
    text = hypothesis_text(hypothesis.statement, hypothesis.mechanism, hypothesis.prediction)
    result = novelty_check(hypothesis_text=text, endpoint=endpoint, run=run, published_before=run.published_before)

    def write():
        hypothesis_literature_record(
            hypothesis=hypothesis, verdict=result.verdict, evidence=result.evidence, reference=result.reference
        )
        novelty_check_record(
            result=result,
            hypothesis_text=text,
            endpoint=endpoint,
            run=run,
            hypothesis=hypothesis,
            published_before=run.published_before,
        )

    return work.Outcome(ok=True, write=write)

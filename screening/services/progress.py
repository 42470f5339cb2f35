"""The run's state machine: which step comes next, and the sweeper that restarts runs making no progress.

Every transition is a conditional UPDATE on the run's status: of two workers that see the same finished step
(e.g. the last two stage-2 models finishing together), exactly one moves the run on; the other changes nothing.
The work of a step is a set of RunWorkItem rows created with the transition and enqueued when it commits.
"""

import logging
import random
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from reviewapp.core.claims import silent_since, work_fail_all, work_release_all, work_silent, work_sweep
from reviewapp.core.errors import ServiceError
from reviewapp.core.queue import enqueue_on_commit
from screening import hooks
from screening.models import Hypothesis, Run, RunWorkItem, Translation
from screening.services.forecast_requests import repeat_requests, run_requests

logger = logging.getLogger(__name__)

S = Run.Status
Step = RunWorkItem.Step
UNFINISHED = (RunWorkItem.State.PENDING, RunWorkItem.State.RUNNING)
# The Celery tasks of the pipeline, by name (screening.tasks).
RUN_ADVANCE_TASK, WORK_ITEM_TASK = "screening.run_advance", "screening.work_item"
# Roster role of each step that calls models.
ROLE_OF_STEP: dict[str, str] = {
    Step.GENERATE: "generator",
    Step.STAGE1: "stage1",
    Step.STAGE2: "stage2",
    Step.TRANSLATE: "translator",
}


def run_advance(*, run_id: int) -> None:
    """Make the transition that is due, if any. Safe to call any number of times, from anywhere."""
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        return
    if run.status == S.QUEUED:
        _start(run)
    elif run.status in Run.STEP_OF_STATUS:
        step = Run.STEP_OF_STATUS[run.status]
        items = list(run.work_items.filter(step=step))
        if items and all(item.state not in UNFINISHED for item in items):
            _FINISH[step](run, items)
    elif run.status == S.COMPLETED:
        _settle_translation(run)


def _start(run: Run) -> None:
    with transaction.atomic():
        if run.kind == Run.Kind.GENERATE:
            if _move(run, S.QUEUED, S.GENERATING, start="generate"):
                _create_items(run, Step.GENERATE, len(run.roster["roles"]["generator"]))
        elif _move(run, S.QUEUED, S.SCREENING_STAGE1, start="stage1"):
            _pool(run)
            _create_items(run, Step.STAGE1, len(run_requests(run, 1)))


def _finish_generate(run: Run, items) -> None:
    with transaction.atomic():
        # A generator that failed leaves the others' hypotheses; the step fails only when there are none.
        if not run.hypotheses.exists():
            errors = "; ".join(f"{_member_name(run, item)}: {item.error}" for item in items)
            _move(
                run,
                S.GENERATING,
                S.FAILED_AT_GENERATE,
                end="generate",
                error=f"No generator produced a hypothesis ({errors}).",
            )
        elif _move(run, S.GENERATING, S.SCREENING_STAGE1, end="generate", start="stage1"):
            _pool(run)
            _create_items(run, Step.STAGE1, len(run_requests(run, 1)))


def _finish_stage1(run: Run, items) -> None:
    """The stage-1 model gave no usable reply at all: the run fails. Otherwise stage 2 asks about what was kept (a
    matrix run: about every hypothesis, whatever stage 1 said)."""
    failed = [item for item in items if item.state == RunWorkItem.State.FAILED]
    with transaction.atomic():
        if len(failed) == len(items):
            error = f"The stage-1 model gave no usable reply ({failed[0].error})."
            _move(run, S.SCREENING_STAGE1, S.FAILED_AT_STAGE1, end="stage1", error=error)
        elif run.design == Run.Design.MATRIX or run.hypotheses.filter(stage1=Hypothesis.Stage1.KEPT).exists():
            if _move(run, S.SCREENING_STAGE1, S.SCREENING_STAGE2, end="stage1", start="stage2"):
                _create_items(run, Step.STAGE2, len(run_requests(run, 2)))
        # Nothing kept: stage 2 has nothing to ask.
        elif _move(run, S.SCREENING_STAGE1, S.CHECKING_NOVELTY, end="stage1", skip="stage2", start="novelty"):
            _start_novelty(run)
            hooks.run_selection_made.send(sender=Run, run=run)


def _finish_stage2(run: Run, items) -> None:
    """A stage-2 model that gave no usable reply at all fails the run; a matrix run's request without one leaves
    nulls for its hypotheses (technical gaps) and the rest counts."""
    failed_slots = {item.slot for item in items if item.state == RunWorkItem.State.FAILED}
    requests = run_requests(run, 2)
    members = run.roster["roles"]["stage2"]
    failed = []
    for member, name in enumerate(member["display_name"] for member in members):
        slots = [slot for slot, request in enumerate(requests) if request.member == member]
        if slots and all(slot in failed_slots for slot in slots):
            reason = next(item.error for item in items if item.slot == slots[0])
            failed.append(f"{name} ({reason})")
    with transaction.atomic():
        if failed:
            error = f"A stage-2 model gave no usable reply: {', '.join(failed)}."
            _move(run, S.SCREENING_STAGE2, S.FAILED_AT_STAGE2, end="stage2", error=error)
        elif _move(run, S.SCREENING_STAGE2, S.CHECKING_NOVELTY, end="stage2", start="novelty"):
            _select(run)
            _start_novelty(run)
            hooks.run_selection_made.send(sender=Run, run=run)


def _start_novelty(run: Run) -> None:
    """One literature check per selected hypothesis, each a work item of its own (slot: the hypothesis's position),
    so that the checks run concurrently. With nothing selected there is nothing to check and the run completes."""
    positions = list(run.hypotheses.filter(selected=True).order_by("position").values_list("position", flat=True))
    if positions:
        _create_items(run, Step.NOVELTY, slots=positions)
    else:
        _finish_novelty(run, [])


def _finish_novelty(run: Run, items) -> None:
    """Completed when every check finished, whatever its verdict (a check that could not decide recorded
    `unresolved` with its reason). A check that stopped (an internal error, or stopped by the sweeper) ends the run
    in failed_at_novelty; its hypothesis is `unresolved`, the others keep their verdicts."""
    stopped = [item for item in items if item.state == RunWorkItem.State.FAILED]
    with transaction.atomic():
        if stopped:
            error = (
                f"The literature check stopped for {len(stopped)} of {len(items)} selected hypotheses "
                f"({stopped[0].error})."
            )
            if _move(run, S.CHECKING_NOVELTY, S.FAILED_AT_NOVELTY, end="novelty", error=error):
                run.hypotheses.filter(selected=True, position__in=[item.slot for item in stopped]).update(
                    literature_verdict=Hypothesis.Verdict.UNRESOLVED, literature_evidence="", literature_reference=None
                )
        elif _move(run, S.CHECKING_NOVELTY, S.COMPLETED, end="novelty") and run.language != Run.Language.EN:
            Translation.objects.get_or_create(run=run, language=run.language)
            _create_items(run, Step.TRANSLATE, 1)


_FINISH: dict[str, Callable[[Run, list[RunWorkItem]], None]] = {
    Step.GENERATE: _finish_generate,
    Step.STAGE1: _finish_stage1,
    Step.STAGE2: _finish_stage2,
    Step.NOVELTY: _finish_novelty,
}


def _settle_translation(run: Run) -> None:
    """A translation whose work item failed (e.g. stopped by the sweeper) is reported as failed."""
    item = run.work_items.filter(step=Step.TRANSLATE, state=RunWorkItem.State.FAILED).first()
    if item is not None:
        Translation.objects.filter(run=run, state=Translation.State.PENDING).update(
            state=Translation.State.FAILED, error=item.error, updated_at=timezone.now()
        )


def _move(run: Run, from_status: str, to_status: str, *, start=None, end=None, skip=None, error="") -> bool:
    """Move the run on, only if it is still in from_status; record the steps' states and times."""
    now = timezone.now()
    stamp = now.isoformat()
    steps = {name: dict(state) for name, state in run.steps.items()}
    failing = to_status in Run.FAILED_STATUS_OF_STEP.values()
    if end:
        steps[end].update(state="failed" if failing else "completed", finished_at=stamp)
    if skip:
        steps[skip] = {"state": "skipped"}
    if start:
        steps[start] = {"state": "running", "started_at": stamp}
    fields = {"status": to_status, "steps": steps, "last_progress_at": now, "updated_at": now}
    if to_status not in Run.ACTIVE_STATUSES:
        fields["finished_at"] = now
    if error:
        fields["error"] = error
    moved = Run.objects.filter(pk=run.pk, status=from_status).update(**fields) == 1
    if moved:
        for name, value in fields.items():
            setattr(run, name, value)
    return moved


def _pool(run: Run) -> None:
    """Shuffle every hypothesis with the run's recorded seed and number them H1, H2, …
    (docs/protocol.md#pooling-and-blinding); a matrix run keeps each generator's hypotheses together, in the
    shuffled order, one generator after another (docs/protocol.md#forecast-designs)."""
    hypotheses = list(run.hypotheses.order_by("source", "source_index"))
    # Nothing has its place yet: consumers draw what must not depend on the order (a set's random control).
    hooks.run_pooling.send(sender=Run, run=run, count=len(hypotheses))
    random.Random(run.shuffle_seed).shuffle(hypotheses)
    if run.design == Run.Design.MATRIX:
        hypotheses.sort(key=lambda hypothesis: source_order(hypothesis.source))
    for position, hypothesis in enumerate(hypotheses, start=1):
        hypothesis.position = position
        hypothesis.label = f"H{position}"
    Hypothesis.objects.bulk_update(hypotheses, ["position", "label"], batch_size=500)
    run.pooled_at = timezone.now()
    Run.objects.filter(pk=run.pk).update(pooled_at=run.pooled_at)
    # The pool is frozen and no forecast has been asked yet: consumers record what must precede the forecasts.
    hooks.run_pooled.send(sender=Run, run=run)


def source_order(source: str) -> tuple[int, str]:
    """Generators in their roster order ("generator-<slot>"), anything else after them."""
    prefix, _, slot = source.partition("-")
    return (int(slot), "") if prefix == "generator" and slot.isdigit() else (1 << 15, source)


def _select(run: Run) -> None:
    """Selected: kept by stage 1 and every stage-2 model answered true (a null vote or a missing answer means not
    selected); in a matrix run the same rule read from the stored matrix."""
    stage2_models = len(run.roster["roles"]["stage2"])
    selected = (
        run.hypotheses.filter(stage1=Hypothesis.Stage1.KEPT)
        .annotate(yes=Count("forecasts", filter=Q(forecasts__stage=2, forecasts__round=1, forecasts__vote=True)))
        .filter(yes=stage2_models)
        .values_list("pk", flat=True)
    )
    Hypothesis.objects.filter(pk__in=list(selected)).update(selected=True)


def _create_items(run: Run, step: str, count: int = 0, *, slots=None) -> None:
    slots = range(count) if slots is None else slots
    RunWorkItem.objects.bulk_create([RunWorkItem(run=run, step=step, slot=slot) for slot in slots])
    _enqueue(RunWorkItem.objects.filter(run=run, step=step))


def _enqueue(items) -> None:
    """Send each work item to a worker, once the transaction commits."""
    for pk in items.values_list("pk", flat=True):
        enqueue_on_commit(WORK_ITEM_TASK, pk)


def _member_name(run: Run, item: RunWorkItem) -> str:
    members = run.roster["roles"].get(ROLE_OF_STEP.get(item.step, ""), [])
    return members[item.slot]["display_name"] if item.slot < len(members) else f"{item.step} {item.slot}"


# Asking again ----------------------------------------------------------------------------------------------------


class ForecastsRepeatRefused(ServiceError):
    pass


def run_forecasts_repeat(*, run: Run) -> int:
    """Send every first-round forecast request of the run again, as it was and in the same order, once its
    selection is made; the answers are stored as round 2 (docs/protocol.md#repeating-the-forecasts) and change
    nothing of the run. Returns how many requests were queued. Enqueued when the caller's transaction commits."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        if run.status not in Run.SELECTION_MADE_STATUSES:
            raise ForecastsRepeatRefused(
                "A run's forecasts can be asked again once its selection is made.",
                code="forecasts_not_done",
                status=409,
            )
        if run.work_items.filter(step=Step.REPEAT).exists():
            raise ForecastsRepeatRefused(
                "This run's forecasts were already asked again.", code="already_repeated", status=409
            )
        count = len(repeat_requests(run))
        _create_items(run, Step.REPEAT, count)
    return count


# The sweeper ---------------------------------------------------------------------------------------------------


def screening_sweep() -> int:
    """The screening room's part of the sweeper: work items whose worker died, then runs that stopped moving."""
    return work_items_sweep() + runs_sweep()


def work_items_sweep() -> int:
    """Running work items whose heartbeat stopped for OH_SILENT_SECONDS (their worker died; a worker in a long model
    call still beats): sent again, up to OH_WORK_MAX_ATTEMPTS claims, then failed with the reason (the run goes on
    with what it has, as after any failed item). Items pending unsent for OPEN_HYPOTHESIS_STALE_SECONDS are sent
    again."""
    stale_before = timezone.now() - timedelta(seconds=settings.OPEN_HYPOTHESIS_STALE_SECONDS)
    silent_before = silent_since()
    attempts = settings.OH_WORK_MAX_ATTEMPTS
    reason = f"the worker doing this stopped {attempts} times before it finished"
    failing = work_silent(RunWorkItem.objects.all(), silent_before=silent_before).filter(attempts__gte=attempts)
    failing_runs = set(failing.values_list("run_id", flat=True))
    again = work_sweep(
        RunWorkItem, unsent_before=stale_before, silent_before=silent_before, max_attempts=attempts, reason=reason
    )
    _enqueue(RunWorkItem.objects.filter(pk__in=again))
    # A run whose item just failed moves on (run_advance decides what the rest allows).
    for run_id in failing_runs:
        enqueue_on_commit(RUN_ADVANCE_TASK, run_id)
    return len(again) + len(failing_runs)


# Steps whose run moves on only when a worker advances it after the step's last item.
ADVANCED_AFTER_ITEMS = (S.GENERATING, S.SCREENING_STAGE1, S.SCREENING_STAGE2)


def runs_sweep() -> int:
    """Restart (or, after too many restarts, stop) runs with no progress for OPEN_HYPOTHESIS_STALE_SECONDS and no
    work item alive (a heartbeat within OH_SILENT_SECONDS: a long model call is progress in the making). A run in a
    step whose items are all finished but which has not moved on for OH_SILENT_SECONDS (its worker died between the
    last item and the advance) is advanced again.

    Returns how many runs it touched."""
    stale_before = timezone.now() - timedelta(seconds=settings.OPEN_HYPOTHESIS_STALE_SECONDS)
    silent_before = silent_since()
    translating = RunWorkItem.objects.filter(step=Step.TRANSLATE, state__in=UNFINISHED).values("run_id")
    repeating = RunWorkItem.objects.filter(step=Step.REPEAT, state__in=UNFINISHED).values("run_id")
    alive = RunWorkItem.objects.filter(state=RunWorkItem.State.RUNNING, heartbeat_at__gte=silent_before)
    stale = (
        Run.objects.filter(
            Q(status__in=Run.ACTIVE_STATUSES)
            | Q(status=S.COMPLETED, pk__in=translating)
            | Q(status__in=Run.SELECTION_MADE_STATUSES, pk__in=repeating),
            last_progress_at__lt=stale_before,
        )
        .exclude(pk__in=alive.values("run_id"))
        .values_list("pk", "last_progress_at")
    )
    touched = 0
    for run_id, last_progress_at in stale:
        touched += run_resume(run_id=run_id, last_progress_at=last_progress_at)
    unfinished = RunWorkItem.objects.filter(state__in=UNFINISHED).values("run_id")
    not_advanced = Run.objects.filter(status__in=ADVANCED_AFTER_ITEMS, last_progress_at__lt=silent_before).exclude(
        pk__in=unfinished
    )
    for run_id in not_advanced.values_list("pk", flat=True):
        enqueue_on_commit(RUN_ADVANCE_TASK, run_id)
        touched += 1
    return touched


def run_resume(*, run_id: int, last_progress_at) -> bool:
    """Hand a stalled run's unfinished work to a worker again; after OPEN_HYPOTHESIS_MAX_RESUMES restarts, stop it
    where it is (its unfinished work fails, and the run ends in failed_at_<step> unless what it has lets it go on).

    last_progress_at is the value the sweeper saw: if the run moved since, it is not stalled and nothing happens."""
    now = timezone.now()
    with transaction.atomic():
        claimed = Run.objects.filter(pk=run_id, last_progress_at=last_progress_at).update(
            resume_count=F("resume_count") + 1, last_progress_at=now, updated_at=now
        )
        if not claimed:
            return False
        run = Run.objects.get(pk=run_id)
        unfinished = run.work_items.filter(state__in=UNFINISHED)
        if run.resume_count > settings.OPEN_HYPOTHESIS_MAX_RESUMES:
            reason = f"no progress after {run.resume_count - 1} restarts"
            logger.warning("Stopping run %s: %s", run.public_id, reason)
            work_fail_all(unfinished, reason)
            if run.status == S.QUEUED:
                first_step = "generate" if run.kind == Run.Kind.GENERATE else "stage1"
                _move(
                    run,
                    S.QUEUED,
                    Run.FAILED_STATUS_OF_STEP[first_step],
                    end=first_step,
                    error=f"Never started: {reason}.",
                )
        else:
            logger.info("Restarting run %s (restart %s)", run.public_id, run.resume_count)
            # A worker that died while holding an item will never finish it; a slow one loses its claim.
            work_release_all(unfinished)
            unfinished.update(sent_at=now)
            _enqueue(unfinished)
        enqueue_on_commit(RUN_ADVANCE_TASK, run_id)
    return True

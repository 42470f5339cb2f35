"""Claimed work: rows that a worker takes, does and records once, whatever the broker delivers twice.

A model that mixes in ClaimedWork has a state (pending → running → done or failed) and a claim token. `work_claim`
moves a pending row to running with a fresh token in one conditional UPDATE, so of two deliveries of the same task
exactly one gets the token; `work_finish` records the end only while the token is still held, so a worker whose
claim was taken over by the sweeper (`work_sweep`) records nothing; `work_release` gives the row back after a
transient error, for the task's retry to claim it again. `work_attempt` is the body of claimed work: a database error
gives the claim back and is raised for the task's retry, any other error fails the row. `work_release_all` and
`work_fail_all` take over many rows whoever holds them (the sweeper, a stalled run's restart).

Claimed work carries a heartbeat: `work_claim` sets `heartbeat_at`, and `work_heartbeat` (which `work_attempt`
starts) touches it every OH_HEARTBEAT_SECONDS from a thread of its own while the body works, however long one model
call takes. The sweeps take back running work whose heartbeat is older than their stale time (90 s by default): its
worker died, lost the database or the broker, and nothing is working on it.

Models whose states have other names (e.g. a background job's "queued" and "succeeded") declare them as the class
attributes PENDING, RUNNING, DONE and FAILED.

The sweeper: every room registers the sweep of its own claimed work with `sweep_register` when its app is ready, and
one periodic task (`reviewapp.sweep`, Celery beat) runs them all with `sweep_all`: work whose worker died goes back to
pending and is sent again when it is safe to redo, and fails with a reason the user sees when it is not. Pending
work not sent for the stale time is sent again too: a send can fail after its transaction committed, and claiming is
idempotent, so a second delivery is harmless.
"""

import logging
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, connection, models
from django.db.models import F, Q
from django.utils import timezone

from reviewapp.core.queue import enqueue_on_commit

logger = logging.getLogger(__name__)


class ClaimState(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class ClaimedWork(models.Model):
    PENDING, RUNNING, DONE, FAILED = ClaimState.PENDING, ClaimState.RUNNING, ClaimState.DONE, ClaimState.FAILED

    state = models.CharField(max_length=10, choices=ClaimState.choices, default=ClaimState.PENDING)
    claim_token = models.UUIDField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True, help_text="when a worker claimed it")
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="when the worker holding it last said it is still at work"
    )
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    sent_at = models.DateTimeField(default=timezone.now, help_text="when it was last handed to the work queue")

    class Meta:
        abstract = True


def work_claim(model: type[ClaimedWork], pk, **conditions) -> uuid.UUID | None:
    """A fresh token if the row was pending (and meets the conditions) and is now this worker's; else None."""
    token = uuid.uuid4()
    now = timezone.now()
    claimed = model._default_manager.filter(pk=pk, state=model.PENDING, **conditions).update(
        state=model.RUNNING, claim_token=token, started_at=now, heartbeat_at=now, attempts=F("attempts") + 1
    )
    return token if claimed else None


@contextmanager
def work_heartbeat(model: type[ClaimedWork], pk, token: uuid.UUID) -> Iterator[None]:
    """While the body runs, a thread of its own touches the row's heartbeat every OH_HEARTBEAT_SECONDS as long as
    the claim is held, so a model call that takes many minutes still counts as alive and a dead worker's row falls
    silent. A failed touch (the database restarting) is logged and tried again at the next beat."""
    stop = threading.Event()

    def beat() -> None:
        try:
            while not stop.wait(settings.OH_HEARTBEAT_SECONDS):
                try:
                    model._default_manager.filter(pk=pk, state=model.RUNNING, claim_token=token).update(
                        heartbeat_at=timezone.now()
                    )
                except DatabaseError as exc:
                    logger.warning("The heartbeat of %s %s failed (%s)", model.__name__, pk, exc)
                    connection.close()  # a broken connection is opened afresh at the next beat
        finally:
            connection.close()  # the thread's own connection ends with it

    ticker = threading.Thread(target=beat, name=f"heartbeat of {model.__name__} {pk}", daemon=True)
    ticker.start()
    try:
        yield
    finally:
        stop.set()
        ticker.join()


def work_release(model: type[ClaimedWork], pk, token: uuid.UUID) -> None:
    """Give a claimed row back (pending, no token) after a transient error, for a retry to claim."""
    model._default_manager.filter(pk=pk, state=model.RUNNING, claim_token=token).update(
        state=model.PENDING, claim_token=None, sent_at=timezone.now()
    )


def work_finish(model: type[ClaimedWork], pk, token: uuid.UUID, *, failed: bool = False, error: str = "", **fields):
    """Record the end (done, or failed with its reason) and any fields, only while the token is held.

    Returns whether it was recorded; call it in the transaction that writes the work's results."""
    return (
        model._default_manager.filter(pk=pk, state=model.RUNNING, claim_token=token).update(
            state=model.FAILED if failed else model.DONE, finished_at=timezone.now(), error=error[:2000], **fields
        )
        == 1
    )


@contextmanager
def work_attempt(model: type[ClaimedWork], pk, token: uuid.UUID, *, label: str) -> Iterator[None]:
    """The body of claimed work. A DatabaseError is transient: the row is given back and the error raised again, for
    the task's retry to claim it. Any other error is logged (as "<label> failed") and fails the row with its kind;
    it is not raised. What the body records, it records itself (work_finish). The row's heartbeat beats meanwhile
    (work_heartbeat)."""
    try:
        with work_heartbeat(model, pk, token):
            yield
    except DatabaseError:
        work_release(model, pk, token)
        raise
    except Exception as exc:
        logger.exception("%s failed", label)
        work_finish(model, pk, token, failed=True, error=f"internal error ({type(exc).__name__})")


def work_release_all(rows: models.QuerySet) -> int:
    """Give every running row of the queryset back (pending, no token), whoever holds it; how many."""
    model = rows.model
    return rows.filter(state=model.RUNNING).update(state=model.PENDING, claim_token=None)


def work_fail_all(rows: models.QuerySet, reason: str) -> int:
    """Fail every unfinished row of the queryset with the reason, whoever holds it; how many."""
    model = rows.model
    return rows.filter(state__in=(model.PENDING, model.RUNNING)).update(
        state=model.FAILED, claim_token=None, finished_at=timezone.now(), error=reason[:2000]
    )


def work_silent(rows: models.QuerySet, *, silent_before: datetime, alive_field: str = "heartbeat_at"):
    """The running rows of the queryset last known alive before the time: nobody is working on them. A row that never
    wrote its alive_field counts from its claim."""
    never = Q(**{f"{alive_field}__isnull": True, "started_at__lt": silent_before})
    return rows.filter(state=rows.model.RUNNING).filter(Q(**{f"{alive_field}__lt": silent_before}) | never)


def silent_since() -> datetime:
    """Running work whose heartbeat is older than this is taken back (OH_SILENT_SECONDS)."""
    return timezone.now() - timedelta(seconds=settings.OH_SILENT_SECONDS)


def work_sweep(
    model: type[ClaimedWork],
    *,
    unsent_before: datetime,
    max_attempts: int,
    reason: str,
    silent_before: datetime | None = None,
    alive_field: str = "heartbeat_at",
    **conditions,
) -> list:
    """Running rows silent since silent_before (default: OH_SILENT_SECONDS ago; their worker died): back to pending
    without a token, or failed with the reason once they used max_attempts. alive_field names the time a row was
    last known alive (its heartbeat, by default). Pending rows last sent before unsent_before are due again as well
    (their send was lost; a longer time, as work may wait in a long queue). Returns the pks to send to a worker
    again; they count as sent now."""
    rows = model._default_manager.filter(**conditions)
    unsent = list(rows.filter(state=model.PENDING, sent_at__lt=unsent_before).values_list("pk", flat=True))
    stale = work_silent(rows, silent_before=silent_before or silent_since(), alive_field=alive_field)
    work_fail_all(stale.filter(attempts__gte=max_attempts), reason)
    again = list(stale.filter(~Q(attempts__gte=max_attempts)).values_list("pk", flat=True))
    work_release_all(model._default_manager.filter(pk__in=again))
    model._default_manager.filter(pk__in=again + unsent, state=model.PENDING).update(sent_at=timezone.now())
    return again + unsent


def work_sweep_send(model: type[ClaimedWork], task_name: str, **sweep) -> int:
    """work_sweep(model, **sweep), then every row it returns sent to the task once the transaction commits; how
    many."""
    again = work_sweep(model, **sweep)
    for pk in again:
        enqueue_on_commit(task_name, pk)
    return len(again)


# The sweeps of every room, by name: each returns how many rows it touched.
SWEEPS: dict[str, Callable[[], int]] = {}


def sweep_register(name: str, sweep: Callable[[], int]) -> None:
    SWEEPS[name] = sweep


def sweep_all() -> dict[str, int]:
    """Run every registered sweep; one that fails is logged and does not stop the others."""
    touched = {}
    for name, sweep in SWEEPS.items():
        try:
            touched[name] = sweep()
        except Exception:
            logger.exception("The %s sweep failed", name)
            touched[name] = -1
    return touched

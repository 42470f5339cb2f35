"""Starting runs: validation is the API's job; here are the public limits, the roster snapshot and the records.

The limits (per client address, per day, waiting runs) are checked and the run inserted while holding one lock,
so concurrent requests cannot both take the last place: a PostgreSQL advisory lock, and on SQLite the immediate
transaction (settings) that already serializes writers.
"""

import hashlib
import hmac
import math
import secrets
import statistics
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from reviewapp.core.errors import ServiceError
from reviewapp.core.queue import broker_check, enqueue_on_commit
from reviewapp.core.requests import client_network
from screening.llm.models import ModelEndpoint, Roster, RosterMember
from screening.models import STEPS, Hypothesis, Run, RunBody
from screening.services.progress import RUN_ADVANCE_TASK

WINDOW = timedelta(hours=24)
# Any constant shared by every process; it names the lock that serializes run creation.
_LIMITS_LOCK_KEY = 4_815_162_342
# Used for queue_full's Retry-After before any run has finished.
_DEFAULT_RUN_SECONDS = 600
CLIENT_SOURCE = "client"


class RunRefused(ServiceError):
    """A run the public limits or the configuration refuse; the code and message go to the client as they are."""


@dataclass(frozen=True)
class ClientHypothesis:
    statement: str
    mechanism: str
    prediction: str


def client_hash(address: str) -> str:
    network = client_network(address)
    return hmac.new(settings.SECRET_KEY.encode(), network.encode(), hashlib.sha256).hexdigest()


def run_create(
    *,
    question: str,
    background: str = "",
    language: str = Run.Language.EN,
    client_address: str,
    hypotheses: list[ClientHypothesis] | None = None,
) -> Run:
    """Start a run: generation by the roster's models, or (`hypotheses` given) a screening of the client's own.

    Raises RunRefused when a limit is reached or no roster is configured, and QueueUnavailable (503, nothing written)
    when the broker is down. The first step is enqueued on commit."""
    kind = Run.Kind.GENERATE if hypotheses is None else Run.Kind.SCREENING
    roster = _roster_snapshot(kind)
    broker_check()
    address_hash = client_hash(client_address)
    with transaction.atomic():
        _lock_limits()
        now = timezone.now()
        _check_limits(address_hash, now)
        run = Run.objects.create(
            kind=kind,
            question=question,
            background=background,
            language=language,
            client_hash=address_hash,
            public=True,
            shuffle_seed=secrets.randbits(63),
            roster=roster,
            simulated=any(member["simulated"] for members in roster["roles"].values() for member in members),
            steps=_initial_steps(kind),
        )
        if hypotheses is not None:
            Hypothesis.objects.bulk_create(
                Hypothesis(
                    run=run,
                    source=CLIENT_SOURCE,
                    source_index=index,
                    author_name=CLIENT_SOURCE,
                    statement=hypothesis.statement,
                    mechanism=hypothesis.mechanism,
                    prediction=hypothesis.prediction,
                )
                for index, hypothesis in enumerate(hypotheses)
            )
        enqueue_on_commit(RUN_ADVANCE_TASK, run.pk)
    return run


def run_start_for_set(
    *,
    question: str,
    background: str,
    shuffle_seed: int,
    roster: dict,
    design: str = Run.Design.POOLED,
    forecast_question: str = Run.Question.SHORT,
    generation_count: int = 10,
) -> Run:
    """A generation run that a coordinator starts (a benchmark set's task): not public, no client address, none of the
    public limits, the given roster snapshot, seed, forecast design and number of hypotheses asked of each generator.
    Enqueued when the caller's transaction commits."""
    run = Run.objects.create(
        kind=Run.Kind.GENERATE,
        question=question,
        background=background,
        shuffle_seed=shuffle_seed,
        roster=roster,
        design=design,
        forecast_question=forecast_question,
        generation_count=generation_count,
        simulated=any(member["simulated"] for members in roster["roles"].values() for member in members),
        steps=_initial_steps(Run.Kind.GENERATE),
    )
    enqueue_on_commit(RUN_ADVANCE_TASK, run.pk)
    return run


def _initial_steps(kind: str) -> dict:
    steps = {step: {"state": "pending"} for step in STEPS}
    if kind == Run.Kind.SCREENING:
        steps["generate"] = {"state": "skipped"}
    return steps


def _roster_snapshot(kind: str) -> dict:
    """The default roster's endpoints by role, as recorded on the run."""
    roster = Roster.objects.filter(is_default=True).first()
    if roster is None:
        raise RunRefused("No model roster is configured yet; try again later.", code="not_configured", status=503)
    snapshot = roster_snapshot(roster)
    needed = [RosterMember.Role.STAGE1, RosterMember.Role.STAGE2]
    if kind == Run.Kind.GENERATE:
        needed.append(RosterMember.Role.GENERATOR)
    if any(not snapshot["roles"][role] for role in needed):
        raise RunRefused("The model roster is incomplete; try again later.", code="not_configured", status=503)
    return snapshot


def roster_snapshot(roster: Roster) -> dict:
    """A roster's enabled endpoints by role, as a run records them: {"name", "roles": {role: [endpoint snapshot]}}.

    A role without an enabled endpoint has an empty list; the caller decides which roles it needs."""
    members = (
        RosterMember.objects.filter(roster=roster, endpoint__enabled=True)
        .select_related("endpoint")
        .order_by("role", "order", "pk")
    )
    roles: dict[str, list[dict]] = {role: [] for role in RosterMember.Role.values}
    for member in members:
        roles[member.role].append(endpoint_snapshot(member.endpoint))
    # The protocol has one stage-1 model.
    roles[RosterMember.Role.STAGE1] = roles[RosterMember.Role.STAGE1][:1]
    return {"name": roster.name, "roles": roles}


def run_literature_cutoff_set(*, run: Run, published_before) -> None:
    """Count only references published before this date in the run's literature check (None: all of them)."""
    Run.objects.filter(pk=run.pk).update(published_before=published_before)
    run.published_before = published_before


def endpoint_snapshot(endpoint: ModelEndpoint) -> dict:
    return {
        "endpoint_id": endpoint.pk,
        "display_name": endpoint.display_name,
        "company": endpoint.company,
        "model_id": endpoint.model_id,
        "protocol": endpoint.protocol,
        "grok": endpoint.is_grok,
        "simulated": endpoint.is_simulated,
    }


def _lock_limits() -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_LIMITS_LOCK_KEY])
    # SQLite: the atomic block began with BEGIN IMMEDIATE (settings), which already excludes other writers.


def _public_runs():
    """Runs started by public clients. Runs that coordinators start (benchmark sets) carry no client address and
    use none of the public limits, so a large set cannot lock the public out."""
    return Run.objects.exclude(client_hash="")


def _check_limits(address_hash: str, now) -> None:
    since = now - WINDOW
    client_limit = settings.OPEN_HYPOTHESIS_CLIENT_LIMIT
    client_times = list(
        Run.objects.filter(client_hash=address_hash, created_at__gte=since)
        .order_by("created_at")
        .values_list("created_at", flat=True)
    )
    _refuse_at_window_limit(
        client_times,
        client_limit,
        now,
        f"This address has started {client_limit} runs in the last 24 hours, the most allowed.",
        code="client_limit",
    )
    daily_cap = settings.OPEN_HYPOTHESIS_DAILY_CAP
    day_times = list(
        _public_runs().filter(created_at__gte=since).order_by("created_at").values_list("created_at", flat=True)
    )
    _refuse_at_window_limit(
        day_times,
        daily_cap,
        now,
        f"The service has started {daily_cap} runs in the last 24 hours, the most it takes.",
        code="daily_cap",
    )
    queue_limit = settings.OPEN_HYPOTHESIS_QUEUE_LIMIT
    waiting = list(
        _public_runs()
        .filter(status__in=Run.ACTIVE_STATUSES)
        .order_by("created_at")
        .values_list("created_at", flat=True)
    )
    if len(waiting) >= queue_limit:
        # A place frees when the oldest waiting run ends: estimated from how long recent runs took.
        frees_at = waiting[len(waiting) - queue_limit] + timedelta(seconds=_typical_run_seconds())
        raise RunRefused(
            f"{len(waiting)} runs are waiting, the most the service queues; try again later.",
            code="queue_full",
            status=503,
            retry_after=max(settings.OPEN_HYPOTHESIS_POLL_SECONDS, _seconds_until(frees_at, now)),
        )


def _refuse_at_window_limit(times: list, limit: int, now, message: str, *, code: str) -> None:
    """Refuse (429) when `times` (run starts in the window, oldest first) reached `limit`; a place frees when the
    start that made it full leaves the window."""
    if len(times) >= limit:
        frees_at = times[len(times) - limit] + WINDOW
        raise RunRefused(message, code=code, status=429, retry_after=_seconds_until(frees_at, now))


def _typical_run_seconds() -> float:
    recent = (
        Run.objects.filter(finished_at__isnull=False)
        .order_by("-finished_at")
        .values_list("created_at", "finished_at")[:20]
    )
    durations = [(finished - created).total_seconds() for created, finished in recent if finished is not None]
    return statistics.median(durations) if durations else _DEFAULT_RUN_SECONDS


def _seconds_until(moment, now) -> int:
    return max(1, math.ceil((moment - now).total_seconds()))


def run_body_store(*, run: Run, language: str, body: bytes) -> None:
    """Keep a finished run's rendered API body in `language`, valid for the run as it was read (see RunBody). Two
    workers storing the same body at once both succeed; the later one wins."""
    RunBody.objects.bulk_create(
        [RunBody(run=run, language=language, run_updated_at=run.updated_at, body=body)],
        update_conflicts=True,
        unique_fields=["run", "language"],
        update_fields=["run_updated_at", "body"],
    )

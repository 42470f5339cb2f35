"""Reads of the screening app: runs with their hypotheses, forecasts, counts, translations and calls."""

import uuid
from datetime import datetime

from django.db import connection
from django.db.models import Count, OuterRef, Prefetch, Q, Subquery
from django.utils import timezone

from reviewapp.core import roles
from screening.llm.models import ModelCall, ModelEndpoint, Roster, RosterMember
from screening.models import STEPS, Forecast, Hypothesis, Run, RunBody, Translation


def run_role_endpoint(run: Run, role: str, slot: int = 0) -> ModelEndpoint | None:
    """The endpoint the run's roster snapshot names for a role (None when it names none or it was deleted since)."""
    members = run.roster["roles"].get(role, [])
    return ModelEndpoint.objects.filter(pk=members[slot]["endpoint_id"]).first() if slot < len(members) else None


def run_readable(*, public: bool, user) -> bool:
    """Whether the user may read a run: anyone a public run, only coordinators and analysts any other (a benchmark
    set's)."""
    return public or roles.can_read_all(user)


def run_get(run_id, user) -> Run | None:
    """The run with this public id (a UUID or its text) when the user may read it (run_readable), else None: to
    anyone else a run that is not theirs to read is the same as no run."""
    try:
        public_id = run_id if isinstance(run_id, uuid.UUID) else uuid.UUID(str(run_id))
    except ValueError:
        return None
    run = Run.objects.filter(public_id=public_id).first()
    return run if run is not None and run_readable(public=run.public, user=user) else None


_RUN_VERSION_SQL = f"SELECT updated_at, public FROM {Run._meta.db_table} WHERE public_id = %s"


def run_version(run_id) -> tuple[uuid.UUID, datetime, bool] | None:
    """The run's public id, updated_at (which every write to the run moves) and whether it is public, in one small
    query; None: no such run."""
    try:
        public_id = run_id if isinstance(run_id, uuid.UUID) else uuid.UUID(str(run_id))
    except ValueError:
        return None
    if connection.vendor != "postgresql":  # SQLite's dates are text the ORM converts
        row = Run.objects.filter(public_id=public_id).values_list("updated_at", "public").first()
        return None if row is None else (public_id, row[0], bool(row[1]))
    # Asked on every poll of a run: the statement is written out rather than compiled by the ORM each time.
    with connection.cursor() as cursor:
        cursor.execute(_RUN_VERSION_SQL, [public_id])
        row = cursor.fetchone()
    return None if row is None else (public_id, row[0], bool(row[1]))


def run_with_stored_body(run_id, language: str) -> Run | None:
    """The run with this public id, or None, in one query; `stored_body` holds its stored API body in `language` when
    that body is still valid (see RunBody), else None."""
    try:
        public_id = run_id if isinstance(run_id, uuid.UUID) else uuid.UUID(str(run_id))
    except ValueError:
        return None
    valid = RunBody.objects.filter(run=OuterRef("pk"), language=language, run_updated_at=OuterRef("updated_at"))
    return Run.objects.filter(public_id=public_id).annotate(stored_body=Subquery(valid.values("body")[:1])).first()


def run_hypotheses(run: Run) -> list[Hypothesis]:
    """Every hypothesis of the run with its first-round forecasts (stage, then the roster's order), in blind-number
    order. (Forecasts asked again are compared with these, never shown in their place.)"""
    forecasts = (
        Forecast.objects.filter(round=1).order_by("stage", "pk").only("hypothesis_id", "stage", "model_key", "vote")
    )
    return list(
        run.hypotheses.order_by("position", "source", "source_index").prefetch_related(
            Prefetch("forecasts", queryset=forecasts)
        )
    )


def hypothesis_forecasts(hypothesis: Hypothesis) -> dict:
    """model id → true, false or null, from prefetched forecasts."""
    return {forecast.model_key: forecast.vote for forecast in hypothesis.forecasts.all()}


def run_counts(hypotheses: list[Hypothesis]) -> dict:
    return {
        "generated": len(hypotheses),
        "discarded": sum(h.stage1 == Hypothesis.Stage1.DISCARDED for h in hypotheses),
        "kept": sum(h.stage1 == Hypothesis.Stage1.KEPT for h in hypotheses),
        "selected": sum(h.selected for h in hypotheses),
        "delivered": sum(h.delivered for h in hypotheses),
    }


def run_step_states(run: Run) -> dict:
    """Each of the four steps → pending, running, completed, failed or skipped."""
    return {step: run.steps.get(step, {}).get("state", "pending") for step in STEPS}


def run_current_step(run: Run) -> str | None:
    return Run.STEP_OF_STATUS.get(run.status)


def run_elapsed_seconds(run: Run) -> int:
    end = run.finished_at or timezone.now()
    return max(0, int((end - run.created_at).total_seconds()))


def run_translation(run: Run, language: str) -> Translation | None:
    return Translation.objects.filter(run=run, language=language).first()


def run_translation_state(run: Run, language: str) -> str:
    """pending, ready or failed; a run started in that language is pending until its translation is made."""
    translation = run_translation(run, language)
    if translation is not None:
        return translation.state
    if run.language == language and run.status in (*Run.ACTIVE_STATUSES, Run.Status.COMPLETED):
        return Translation.State.PENDING
    if run.language == language:
        # A run that stopped before completing is never translated.
        return Translation.State.FAILED
    return "not_requested"


def run_list():
    """Every run, newest first, with the five counts as annotations."""
    return Run.objects.order_by("-created_at").annotate(
        generated=Count("hypotheses"),
        discarded=Count("hypotheses", filter=Q(hypotheses__stage1=Hypothesis.Stage1.DISCARDED)),
        kept=Count("hypotheses", filter=Q(hypotheses__stage1=Hypothesis.Stage1.KEPT)),
        selected=Count("hypotheses", filter=Q(hypotheses__selected=True)),
        delivered=Count("hypotheses", filter=Hypothesis.delivered_condition("hypotheses__")),
    )


def run_calls(run: Run):
    """The run's recorded model calls in the order they were made."""
    return ModelCall.objects.filter(run=run).select_related("endpoint").order_by("created_at", "pk")


def default_roster_generator_count() -> int:
    """How many enabled generating models the default roster has (0 without a default roster)."""
    return RosterMember.objects.filter(
        roster__is_default=True, endpoint__enabled=True, role=RosterMember.Role.GENERATOR
    ).count()


def default_roster_forecasters() -> dict | None:
    """The default roster's forecasting models by stage, {"stage1": [names], "stage2": [names], "simulated": whether
    any of them is simulated} (the protocol has one stage-1 model), or None when there is no default roster."""
    roster = Roster.objects.filter(is_default=True).first()
    if roster is None:
        return None
    members = (
        RosterMember.objects.filter(roster=roster, endpoint__enabled=True, role__in=["stage1", "stage2"])
        .order_by("role", "order", "pk")
        .values_list("role", "endpoint__display_name", "endpoint__is_simulated")
    )
    names: dict[str, list[str]] = {"stage1": [], "stage2": []}
    simulated: dict[str, list[bool]] = {"stage1": [], "stage2": []}
    for role, name, is_simulated in members:
        names[role].append(name)
        simulated[role].append(is_simulated)
    return {
        "stage1": names["stage1"][:1],
        "stage2": names["stage2"],
        "simulated": any(simulated["stage1"][:1]) or any(simulated["stage2"]),
    }

"""Reads of the model-calling layer's records."""

from django.db.models import QuerySet

from reviewapp.core.errors import ServiceError
from screening.llm.models import ModelEndpoint, Roster, RosterMember


def roster_endpoint(role: str) -> ModelEndpoint | None:
    """The default roster's first enabled endpoint for a role, or None when the roster names none."""
    member = (
        RosterMember.objects.select_related("endpoint")
        .filter(roster__is_default=True, role=role, endpoint__enabled=True)
        .order_by("order", "pk")
        .first()
    )
    return member.endpoint if member else None


def roster_list() -> QuerySet[Roster]:
    """Every roster, by name."""
    return Roster.objects.all()


def roster_default() -> Roster | None:
    """The roster new runs use, if one is marked the default."""
    return Roster.objects.filter(is_default=True).first()


def roster_with_id(roster_id: int | None) -> Roster | None:
    """The roster with this id; None when no id is given or none has it."""
    return Roster.objects.filter(pk=roster_id).first() if roster_id is not None else None


def roster_named(name: str) -> Roster | None:
    """The roster with this name; None when no name is given, a refusal (unknown_roster) when none has it."""
    if not name:
        return None
    roster = Roster.objects.filter(name=name).first()
    if roster is None:
        raise ServiceError(f"There is no roster named {name}.", code="unknown_roster")
    return roster


def endpoints_enabled() -> QuerySet[ModelEndpoint]:
    """The endpoints that may be called."""
    return ModelEndpoint.objects.filter(enabled=True)


def endpoint_with_id(endpoint_id: int | None) -> ModelEndpoint | None:
    """The endpoint with this id; None when no id is given or none has it."""
    return ModelEndpoint.objects.filter(pk=endpoint_id).first() if endpoint_id is not None else None


def endpoint_named(name: str) -> ModelEndpoint | None:
    """The endpoint with this display name; None when no name is given, a refusal (unknown_endpoint) when none has
    it."""
    if not name:
        return None
    endpoint = ModelEndpoint.objects.filter(display_name=name).first()
    if endpoint is None:
        raise ServiceError(f"There is no model endpoint named {name}.", code="unknown_endpoint")
    return endpoint

"""Reads of the model-calling layer's records."""

from screening.llm.models import ModelEndpoint, RosterMember


def roster_endpoint(role: str) -> ModelEndpoint | None:
    """The default roster's first enabled endpoint for a role, or None when the roster names none."""
    member = (
        RosterMember.objects.select_related("endpoint")
        .filter(roster__is_default=True, role=role, endpoint__enabled=True)
        .order_by("order", "pk")
        .first()
    )
    return member.endpoint if member else None

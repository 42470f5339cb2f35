"""Revision links read as the protocol reads them: a proposal's predecessor is its first listed parent; any other
parents (a crossover's) are context, not predecessors (docs/protocol.md#revision-analysis)."""

from reviewapp.models import Proposal


def first_parents(*, child_ids) -> dict[int, int]:
    """child pk → its first listed parent's pk, for the children among child_ids (a list or a queryset of pks).

    Parents are linked in the order the import lists them, so the first link of a child is its first parent."""
    links = (
        Proposal.parents.through.objects.filter(from_proposal_id__in=child_ids)
        .order_by("from_proposal_id", "pk")
        .values_list("from_proposal_id", "to_proposal_id")
    )
    predecessors: dict[int, int] = {}
    for child, parent in links:
        predecessors.setdefault(child, parent)
    return predecessors

"""The blinded packet: the only view of a proposal that reviewer-facing code may read (docs/protocol.md#blinding).

It is built from a whitelist of columns fetched with `.values()`, never from model instances, so no template can
follow a relation to a hidden field (author, company, method, run, import batch, task key, reference statement,
revision history, other reviews).
"""

from dataclasses import dataclass

from django.db.models import Count, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce

from reviewapp.core.errors import NotFound
from reviewapp.models import Assignment, Cohort, Proposal

# Cohorts a reviewer can see: open ones to work in, closed ones to read. Draft cohorts are invisible.
VISIBLE_COHORT_STATUSES = (Cohort.Status.OPEN, Cohort.Status.CLOSED)

# Packet attribute → the one column it is read from. Nothing outside this mapping reaches a reviewer.
PACKET_COLUMNS = {
    "cohort_name": "cohort__name",
    "question": "proposal__task__question",
    "background": "proposal__task__background",
    "statement": "proposal__statement",
    "mechanism": "proposal__mechanism",
    "prediction": "proposal__prediction",
    "domain_category": "proposal__domain_category",
    "investigation_plan": "proposal__investigation_plan",
    "data_requirements": "proposal__data_requirements",
    "alternative_explanations": "proposal__alternative_explanations",
    "citations": "proposal__citations",
}

# The proposal's sections after the claim, in the order reviewers read them.
SECTION_LABELS = [
    ("mechanism", "Mechanism"),
    ("prediction", "Prediction"),
    ("investigation_plan", "Investigation plan"),
    ("data_requirements", "Data requirements"),
    ("alternative_explanations", "Alternative explanations"),
    ("citations", "Citations"),
]


class _Sections:
    @property
    def sections(self) -> list[tuple[str, str]]:
        """(label, text) of every non-empty section after the statement."""
        return [(label, getattr(self, name)) for name, label in SECTION_LABELS if getattr(self, name)]


@dataclass(frozen=True)
class Packet(_Sections):
    position: int  # 1-based place in the reviewer's queue of this cohort
    total: int  # the reviewer's assignments in this cohort
    cohort_name: str
    question: str
    background: str
    statement: str
    mechanism: str
    prediction: str
    domain_category: str
    investigation_plan: str
    data_requirements: str
    alternative_explanations: str
    citations: str


def reviewer_assignments(*, reviewer):
    """The reviewer's assignments in visible cohorts (the queue, unordered)."""
    return Assignment.objects.filter(reviewer=reviewer, cohort__status__in=VISIBLE_COHORT_STATUSES)


def reviewer_assignment(*, reviewer, assignment_id: int) -> Assignment:
    """The reviewer's own assignment in a visible cohort, with its cohort; anything else is NotFound, never revealing
    that it exists."""
    assignment = reviewer_assignments(reviewer=reviewer).select_related("cohort").filter(pk=assignment_id).first()
    if assignment is None:
        raise NotFound("There is no such assignment.")
    return assignment


def _count(assignments) -> Subquery:
    return Subquery(assignments.order_by().values("reviewer").annotate(n=Count("pk")).values("n")[:1])


def packet_values(*, reviewer, assignment_id: int, own_columns: tuple[str, ...] = ()):
    """The query of one of the reviewer's own assignments (none when it is not theirs to see), as `.values()` of the
    packet's whitelisted columns and the place in its cohort's queue counted by the database; own_columns are the
    reviewer's own columns of the assignment and its review the caller reads with it (see `packet_from_row`)."""
    # Each cohort is numbered on its own, in queue order: position, then id (see selectors.reviews.QUEUE_ORDER). The
    # assignment's cohort is a visible one (the outer filter), and so are the others counted in it.
    in_cohort = Assignment.objects.filter(reviewer=reviewer, cohort_id=OuterRef("cohort_id"))
    position = OuterRef("position")
    earlier = in_cohort.filter(Q(position__lt=position) | Q(position=position, pk__lt=OuterRef("pk")))
    return (
        reviewer_assignments(reviewer=reviewer)
        .filter(pk=assignment_id)
        .annotate(queue_total=_count(in_cohort), queue_earlier=Coalesce(_count(earlier), 0))
        .values("queue_total", "queue_earlier", *PACKET_COLUMNS.values(), *own_columns)
    )


def packet_from_row(row: dict) -> Packet:
    """The packet of a row of `packet_values`: its whitelisted columns only, whatever else the row holds."""
    return Packet(
        position=row["queue_earlier"] + 1,
        total=row["queue_total"],
        **{name: row[column] for name, column in PACKET_COLUMNS.items()},
    )


def packet_for_reviewer(*, reviewer, assignment_id: int) -> Packet | None:
    """The packet of one of the reviewer's own assignments, or None when it is not theirs to see; in one query."""
    row = packet_values(reviewer=reviewer, assignment_id=assignment_id).first()
    return None if row is None else packet_from_row(row)


# The same whitelist read from a proposal instead of an assignment, for reviewers without an assignment: the models of
# the AI review panel. The cohort's name is left out (it says nothing of the proposal).
PROPOSAL_PACKET_COLUMNS = {
    name: column.removeprefix("proposal__")
    for name, column in PACKET_COLUMNS.items()
    if column.startswith("proposal__")
}


@dataclass(frozen=True)
class ProposalPacket(_Sections):
    question: str
    background: str
    statement: str
    mechanism: str = ""
    prediction: str = ""
    domain_category: str = ""
    investigation_plan: str = ""
    data_requirements: str = ""
    alternative_explanations: str = ""
    citations: str = ""


def proposal_packets(*, proposal_ids) -> dict[int, ProposalPacket]:
    """The packets of these proposals by primary key, from the whitelisted columns only."""
    rows = Proposal.objects.filter(pk__in=proposal_ids).values("pk", *PROPOSAL_PACKET_COLUMNS.values())
    return {
        row["pk"]: ProposalPacket(**{name: row[column] for name, column in PROPOSAL_PACKET_COLUMNS.items()})
        for row in rows
    }

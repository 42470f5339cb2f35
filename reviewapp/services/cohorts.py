"""Cohorts and their assignments: create, open and close a cohort, assign reviewers, declare conflicts."""

import hashlib
import heapq
import random
from collections import defaultdict
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F, Max

from reviewapp.core.errors import ServiceError, StateConflict
from reviewapp.models import Assignment, AuditEvent, Cohort, Conflict, Proposal
from reviewapp.selectors.users import reviewer_queryset

# The most reviewers one proposal may be given, on every way in (page, API, service).
MAX_REVIEWERS_PER_PROPOSAL = 100


class CohortError(ServiceError):
    """A change the rules of cohorts refuse; the message is written for the coordinator."""


class AssignmentImpossible(CohortError):
    code = "assignment_impossible"


class CohortConflict(CohortError, StateConflict):
    """A change the current state of the cohort or assignment refuses (409)."""


class AssignmentStarted(CohortConflict):
    code = "assignment_started"


class CohortClosed(CohortConflict):
    code = "cohort_closed"


class CohortNameTaken(CohortConflict):
    code = "cohort_name_taken"


class CohortStatusRefused(CohortConflict):
    code = "cohort_status_refused"


class AlreadyAssigned(CohortConflict):
    code = "already_assigned"


class ConflictOfInterest(CohortConflict):
    code = "conflict_of_interest"


@dataclass(frozen=True)
class AssignResult:
    created: int
    # Assignments each named reviewer holds in the cohort afterwards, by username.
    loads: dict[str, int]


# Which status a cohort may move to from each status; closing is undone by opening again.
STATUS_MOVES: dict[str, set[str]] = {
    Cohort.Status.DRAFT: {Cohort.Status.OPEN},
    Cohort.Status.OPEN: {Cohort.Status.CLOSED},
    Cohort.Status.CLOSED: {Cohort.Status.OPEN},
}


def _audit(*, user, action: str, target, **data) -> None:
    AuditEvent.objects.create(
        actor=user, action=action, target_type=type(target).__name__.lower(), target_id=str(target.pk), data=data
    )


def queue_rank(*, cohort_seed: int, reviewer_id: int, proposal_id: int) -> str:
    """The key that orders a reviewer's queue: stable, so re-running never reshuffles anyone."""
    return hashlib.sha256(f"{cohort_seed}:{reviewer_id}:{proposal_id}".encode()).hexdigest()


@transaction.atomic
def cohort_create(
    *, name: str, reviewers_per_proposal: int = 3, seed: int = 0, description: str = "", is_demo: bool = False, user
) -> Cohort:
    name = name.strip()
    if not name:
        raise CohortError("A cohort needs a name.")
    if not 1 <= reviewers_per_proposal <= MAX_REVIEWERS_PER_PROPOSAL:
        raise CohortError(f"A cohort needs 1 to {MAX_REVIEWERS_PER_PROPOSAL} reviewers per proposal.")
    if Cohort.objects.filter(name__iexact=name).exists():
        raise CohortNameTaken(f"A cohort named “{name}” already exists.")
    cohort = Cohort.objects.create(
        name=name,
        reviewers_per_proposal=reviewers_per_proposal,
        seed=seed,
        description=description,
        is_demo=is_demo,
        created_by=user,
    )
    _audit(user=user, action="cohort_create", target=cohort, name=name)
    return cohort


@transaction.atomic
def cohort_set_status(*, cohort: Cohort, status: str, user) -> Cohort:
    cohort = Cohort.objects.select_for_update().get(pk=cohort.pk)
    if status not in Cohort.Status.values:
        raise CohortError(f"“{status}” is not a cohort status (draft, open or closed).")
    if status not in STATUS_MOVES[cohort.status]:
        raise CohortStatusRefused(f"A {cohort.status} cohort cannot become {status}.")
    previous = cohort.status
    cohort.status = status
    cohort.save(update_fields=["status"])
    _audit(user=user, action="cohort_set_status", target=cohort, previous=previous, status=status)
    return cohort


def _lock_for_assignment(cohort: Cohort) -> Cohort:
    """Serialise assignment changes per cohort, and refuse them once the cohort is closed."""
    cohort = Cohort.objects.select_for_update().get(pk=cohort.pk)
    if cohort.status == Cohort.Status.CLOSED:
        raise CohortClosed(f"Cohort “{cohort.name}” is closed; open it again to change its assignments.")
    return cohort


def _open_if_draft(cohort: Cohort, user) -> None:
    # Assigning freezes the proposal set, so a draft cohort opens.
    if cohort.status == Cohort.Status.DRAFT:
        cohort.status = Cohort.Status.OPEN
        cohort.save(update_fields=["status"])
        _audit(user=user, action="cohort_set_status", target=cohort, previous="draft", status="open")


def _require_reviewers(reviewers) -> None:
    eligible = set(reviewer_queryset().filter(pk__in=[r.pk for r in reviewers]).values_list("pk", flat=True))
    missing = sorted(r.get_username() for r in reviewers if r.pk not in eligible)
    if missing:
        raise CohortError(f"Not active reviewers (give them the reviewer role first): {', '.join(missing)}.")


def _conflicted(reviewer_id: int, proposal_id: int, author: str, conflicts) -> bool:
    proposal_ids, authors = conflicts.get(reviewer_id, ((), ()))
    return proposal_id in proposal_ids or (author != "" and author in authors)


def _conflicts_by_reviewer(reviewer_ids) -> dict[int, tuple[set[int], set[str]]]:
    conflicts: defaultdict[int, tuple[set[int], set[str]]] = defaultdict(lambda: (set(), set()))
    for reviewer_id, proposal_id, author in Conflict.objects.filter(reviewer_id__in=reviewer_ids).values_list(
        "reviewer_id", "proposal_id", "author"
    ):
        if proposal_id is not None:
            conflicts[reviewer_id][0].add(proposal_id)
        if author:
            conflicts[reviewer_id][1].add(author)
    return dict(conflicts)


def _next_positions(cohort: Cohort, reviewer_ids) -> dict[int, int]:
    last = dict(
        Assignment.objects.filter(cohort=cohort, reviewer_id__in=reviewer_ids)
        .values("reviewer_id")
        .annotate(last=Max("position"))
        .values_list("reviewer_id", "last")
    )
    return {reviewer_id: last.get(reviewer_id, 0) + 1 for reviewer_id in reviewer_ids}


@dataclass
class _OpenProposal:
    """A proposal still short of reviewers: how many it needs and who may not take it."""

    proposal_id: int
    external_id: str
    need: int
    excluded: set[int]  # chosen reviewers already on it or in conflict with it
    slack: int  # eligible reviewers beyond the need: the fewer, the earlier it is served
    tie_break: int


def _open_proposals(*, proposals, reviewer_ids, assigned_to, conflicts, per_proposal, rng) -> list[_OpenProposal]:
    order = list(range(len(proposals)))
    rng.shuffle(order)
    chosen = set(reviewer_ids)
    open_proposals = []
    for (proposal_id, external_id, author), tie_break in zip(proposals, order, strict=True):
        need = per_proposal - len(assigned_to[proposal_id])
        if need <= 0:
            continue
        excluded = assigned_to[proposal_id] & chosen
        excluded |= {r for r in conflicts if r in chosen and _conflicted(r, proposal_id, author, conflicts)}
        eligible = len(reviewer_ids) - len(excluded)
        if eligible < need:
            raise AssignmentImpossible(
                f"Proposal {external_id} needs {need} more reviewer(s) for k={per_proposal} but only "
                f"{eligible} of the {len(reviewer_ids)} chosen reviewer(s) are eligible "
                "(the others are already on it or have declared a conflict)."
            )
        open_proposals.append(_OpenProposal(proposal_id, external_id, need, excluded, eligible - need, tie_break))
    open_proposals.sort(key=lambda p: (p.slack, p.tie_break))
    return open_proposals


def _pick_least_loaded(*, open_proposals, load, rng, max_load, per_proposal) -> dict[int, list[int]]:
    """Give each proposal its least-loaded eligible reviewers; returns reviewer id -> new proposal ids."""
    # The random second key spreads ties, so the same reviewers are not always paired together.
    heap = [(reviewer_load, rng.random(), r) for r, reviewer_load in load.items()]
    heapq.heapify(heap)
    picked = defaultdict(list)
    for proposal in open_proposals:
        taken: list[int] = []
        passed_over: list[int] = []
        while heap and len(taken) < proposal.need:
            reviewer_id = heapq.heappop(heap)[2]
            if max_load is not None and load[reviewer_id] >= max_load:
                continue  # full: leaves the heap for good
            (passed_over if reviewer_id in proposal.excluded else taken).append(reviewer_id)
        if len(taken) < proposal.need:
            raise AssignmentImpossible(
                f"Proposal {proposal.external_id} cannot get {per_proposal} reviewers without someone exceeding "
                f"the maximum load of {max_load}; add reviewers or raise the maximum load."
            )
        for reviewer_id in taken:
            load[reviewer_id] += 1
            picked[reviewer_id].append(proposal.proposal_id)
            proposal.excluded.add(reviewer_id)
        for reviewer_id in taken + passed_over:
            heapq.heappush(heap, (load[reviewer_id], rng.random(), reviewer_id))
    return picked


def _rebalance(*, picked, open_proposals, load) -> None:
    """Move new assignments from the most to the least loaded reviewers while loads differ by more than one.

    Greedy picking can be cornered by existing assignments and conflicts. Each move lowers the sum of
    squared loads, so this ends.
    """
    excluded = {proposal.proposal_id: proposal.excluded for proposal in open_proposals}

    def find_move():
        by_load = sorted(load, key=lambda r: (load[r], r))
        for high in reversed(by_load):
            if load[high] - load[by_load[0]] <= 1:
                return None  # every remaining reviewer is within one of the least loaded
            for low in by_load:
                if load[high] - load[low] <= 1:
                    break
                for proposal_id in picked[high]:
                    if low not in excluded[proposal_id]:
                        return high, low, proposal_id
        return None

    while (move := find_move()) is not None:
        high, low, proposal_id = move
        picked[high].remove(proposal_id)
        picked[low].append(proposal_id)
        excluded[proposal_id].discard(high)
        excluded[proposal_id].add(low)
        load[high] -= 1
        load[low] += 1


@transaction.atomic
def cohort_assign(
    *, cohort: Cohort, reviewers: list[User], per_proposal: int, seed: int, user, max_load: int | None = None
) -> AssignResult:
    """Top every proposal up to `per_proposal` reviewers, balancing load, excluding declared conflicts.

    Existing assignments count towards k and towards each reviewer's load, so running it twice changes
    nothing. Proposals with the fewest eligible reviewers are served first; each takes the least-loaded
    eligible reviewers, ties broken by a generator seeded with `seed`, so the same inputs give the same result.
    """
    cohort = _lock_for_assignment(cohort)
    if not 1 <= per_proposal <= MAX_REVIEWERS_PER_PROPOSAL:
        raise AssignmentImpossible(f"Each proposal needs 1 to {MAX_REVIEWERS_PER_PROPOSAL} reviewers (k).")
    if max_load is not None and max_load < 1:
        raise AssignmentImpossible("The maximum load must be at least one assignment per reviewer.")
    reviewers = sorted({r.pk: r for r in reviewers}.values(), key=lambda r: r.pk)
    _require_reviewers(reviewers)
    proposals = list(cohort.proposals.order_by("pk").values_list("pk", "external_id", "author"))
    if not proposals:
        raise AssignmentImpossible(f"Cohort “{cohort.name}” has no proposals yet: import proposals first.")

    reviewer_ids = [r.pk for r in reviewers]
    assigned_to = defaultdict(set)  # proposal id -> reviewer ids already on it (any reviewer)
    load = dict.fromkeys(reviewer_ids, 0)
    for proposal_id, reviewer_id in Assignment.objects.filter(cohort=cohort).values_list("proposal_id", "reviewer_id"):
        assigned_to[proposal_id].add(reviewer_id)
        if reviewer_id in load:
            load[reviewer_id] += 1
    rng = random.Random(seed)
    open_proposals = _open_proposals(
        proposals=proposals,
        reviewer_ids=reviewer_ids,
        assigned_to=assigned_to,
        conflicts=_conflicts_by_reviewer(reviewer_ids),
        per_proposal=per_proposal,
        rng=rng,
    )
    if max_load is not None:
        needed = sum(proposal.need for proposal in open_proposals)
        capacity = sum(max(0, max_load - load[r]) for r in reviewer_ids)
        if needed > capacity:
            raise AssignmentImpossible(
                f"{needed} assignments are needed but {len(reviewer_ids)} reviewer(s) with a maximum load of "
                f"{max_load} can take only {capacity} more; add reviewers or raise the maximum load."
            )
    picked = _pick_least_loaded(
        open_proposals=open_proposals, load=load, rng=rng, max_load=max_load, per_proposal=per_proposal
    )
    _rebalance(picked=picked, open_proposals=open_proposals, load=load)

    # Each reviewer's new proposals go after their existing queue, in their own stable random order.
    next_position = _next_positions(cohort, reviewer_ids)
    rows = []
    for reviewer_id, proposal_ids in picked.items():
        proposal_ids.sort(key=lambda p: queue_rank(cohort_seed=cohort.seed, reviewer_id=reviewer_id, proposal_id=p))
        for offset, proposal_id in enumerate(proposal_ids):
            rows.append(
                Assignment(
                    cohort=cohort,
                    reviewer_id=reviewer_id,
                    proposal_id=proposal_id,
                    position=next_position[reviewer_id] + offset,
                )
            )
    Assignment.objects.bulk_create(rows, batch_size=5000)

    _open_if_draft(cohort, user)
    if cohort.reviewers_per_proposal != per_proposal:
        cohort.reviewers_per_proposal = per_proposal
        cohort.save(update_fields=["reviewers_per_proposal"])
    loads = {r.get_username(): load[r.pk] for r in reviewers}
    _audit(
        user=user,
        action="cohort_assign",
        target=cohort,
        per_proposal=per_proposal,
        seed=seed,
        max_load=max_load,
        reviewers=sorted(loads),
        created=len(rows),
    )
    return AssignResult(created=len(rows), loads=loads)


def _check_eligible(*, cohort: Cohort, reviewer: User, proposal: Proposal) -> None:
    _require_reviewers([reviewer])
    name = reviewer.get_username()
    if not cohort.proposals.filter(pk=proposal.pk).exists():
        raise CohortError(f"Proposal {proposal.external_id} is not in cohort “{cohort.name}”.")
    if Assignment.objects.filter(cohort=cohort, reviewer=reviewer, proposal=proposal).exists():
        raise AlreadyAssigned(f"{name} is already assigned to proposal {proposal.external_id}.")
    if _conflicted(reviewer.pk, proposal.pk, proposal.author, _conflicts_by_reviewer([reviewer.pk])):
        raise ConflictOfInterest(f"{name} has declared a conflict of interest with proposal {proposal.external_id}.")


@transaction.atomic
def assignment_add(*, cohort: Cohort, reviewer: User, proposal: Proposal, user) -> Assignment:
    cohort = _lock_for_assignment(cohort)
    _check_eligible(cohort=cohort, reviewer=reviewer, proposal=proposal)
    assignment = Assignment.objects.create(
        cohort=cohort,
        reviewer=reviewer,
        proposal=proposal,
        position=_next_positions(cohort, [reviewer.pk])[reviewer.pk],
    )
    _open_if_draft(cohort, user)
    _audit(user=user, action="assignment_add", target=assignment, reviewer=reviewer.get_username())
    return assignment


def _lock_unstarted(assignment: Assignment) -> Assignment:
    assignment = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("cohort", "reviewer", "proposal")
        .get(pk=assignment.pk)
    )
    _lock_for_assignment(assignment.cohort)
    if hasattr(assignment, "review"):
        raise AssignmentStarted(
            f"{assignment.reviewer.get_username()} has already started reviewing proposal "
            f"{assignment.proposal.external_id}; a started review cannot be removed or moved."
        )
    return assignment


def _close_gap(assignment: Assignment) -> None:
    """Keep the reviewer's positions 1..n after one of their assignments leaves the queue."""
    Assignment.objects.filter(
        cohort_id=assignment.cohort_id, reviewer_id=assignment.reviewer_id, position__gt=assignment.position
    ).update(position=F("position") - 1)


@transaction.atomic
def assignment_remove(*, assignment: Assignment, user) -> None:
    assignment = _lock_unstarted(assignment)
    _audit(
        user=user,
        action="assignment_remove",
        target=assignment,
        reviewer=assignment.reviewer.get_username(),
        proposal=assignment.proposal.external_id,
        deferred_reason=assignment.deferred_reason,
    )
    assignment.delete()
    _close_gap(assignment)


@transaction.atomic
def assignment_reassign(*, assignment: Assignment, reviewer: User, user) -> Assignment:
    """Move an unstarted assignment to another eligible reviewer, at the end of their queue."""
    assignment = _lock_unstarted(assignment)
    previous = assignment.reviewer
    if previous.pk == reviewer.pk:
        raise AlreadyAssigned(f"Proposal {assignment.proposal.external_id} is already assigned to {reviewer}.")
    _check_eligible(cohort=assignment.cohort, reviewer=reviewer, proposal=assignment.proposal)
    _close_gap(assignment)
    deferred_reason = assignment.deferred_reason
    assignment.reviewer = reviewer
    assignment.position = _next_positions(assignment.cohort, [reviewer.pk])[reviewer.pk]
    # The deferral was the previous reviewer's; the audit trail keeps it.
    assignment.deferred_reason, assignment.deferred_at = "", None
    assignment.save(update_fields=["reviewer", "position", "deferred_reason", "deferred_at"])
    _audit(
        user=user,
        action="assignment_reassign",
        target=assignment,
        previous=previous.get_username(),
        reviewer=reviewer.get_username(),
        deferred_reason=deferred_reason,
    )
    return assignment


@transaction.atomic
def conflict_declare(
    *, reviewer: User, kind: str, proposal: Proposal | None = None, author: str = "", note: str = "", user
) -> Conflict:
    """Record a conflict of interest; automatic assignment excludes it from then on."""
    author = author.strip()
    if kind not in Conflict.Kind.values:
        raise CohortError(f"“{kind}” is not a kind of conflict ({', '.join(Conflict.Kind.values)}).")
    if proposal is None and not author:
        raise CohortError("A conflict names a proposal or an author.")
    conflict = Conflict.objects.create(reviewer=reviewer, kind=kind, proposal=proposal, author=author, note=note)
    _audit(user=user, action="conflict_declare", target=conflict, reviewer=reviewer.get_username(), kind=kind)
    return conflict

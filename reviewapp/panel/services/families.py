"""Contribution families of a cohort (docs/protocol.md#contribution-families): the starting grouping, and what
coordinators record of each family. Membership never implies confirmation, and maturity is never passed from one
member to another: each family's record is written only by a person, and moving a proposal moves none of it."""

from django.db import transaction

from reviewapp.analysis.research_tree import family_groups
from reviewapp.core.errors import ServiceError, problem
from reviewapp.models import AuditEvent, Cohort
from reviewapp.panel.models import ContributionFamily, FamilyMember
from reviewapp.panel.research import cohort_versions


class FamilyError(ServiceError):
    code = "invalid_family"


def families_group(*, cohort: Cohort) -> int:
    """Give every proposal of the cohort that has no family yet its starting family: the family of a proposal it is
    joined to (by ancestry or an exact duplicate statement) when that one has a family, else a new family per group.
    Families already recorded keep their members. Returns the number of families made."""
    with transaction.atomic():
        Cohort.objects.select_for_update().filter(pk=cohort.pk).first()
        versions, pks, statements = cohort_versions(cohort)
        placed = dict(FamilyMember.objects.filter(cohort=cohort).values_list("proposal_id", "family_id"))
        if len(placed) == len(pks):
            return 0
        members, new_groups = [], []
        for group in family_groups(versions.values(), statements):
            waiting = [pks[version] for version in group if pks[version] not in placed]
            if not waiting:
                continue
            existing = sorted({placed[pks[version]] for version in group if pks[version] in placed})
            if existing:
                members += [FamilyMember(cohort=cohort, family_id=existing[0], proposal_id=pk) for pk in waiting]
            else:
                new_groups.append(waiting)
        # One statement for the new families, whatever their number (their pks come back from the insert).
        made = ContributionFamily.objects.bulk_create([ContributionFamily(cohort=cohort) for _ in new_groups])
        for family, waiting in zip(made, new_groups, strict=True):
            members += [FamilyMember(cohort=cohort, family_id=family.pk, proposal_id=pk) for pk in waiting]
        FamilyMember.objects.bulk_create(members)
        return len(made)


def family_record(
    *,
    cohort: Cohort,
    family: ContributionFamily,
    values: dict,
    user,
) -> ContributionFamily:
    """Record a family's question, increment, status, maturity, evidence and review status (values validated by the
    caller's serializer: only the fields given change), and move the proposals named in `members` into it. Every
    change is audit-logged with what it was before."""
    with transaction.atomic():
        family = ContributionFamily.objects.select_for_update().get(pk=family.pk, cohort=cohort)
        before = {name: getattr(family, name) for name in values if name != "members"}
        for name, value in values.items():
            if name != "members":
                setattr(family, name, value)
        family.updated_by = user if user is not None and user.is_authenticated else None
        family.save()
        moved = []
        if values.get("members"):
            moved = _move_members(cohort=cohort, family=family, proposal_ids=values["members"])
        AuditEvent.objects.create(
            actor=family.updated_by,
            action="family_record",
            target_type="contribution_family",
            target_id=str(family.pk),
            data={
                "cohort": cohort.pk,
                "before": before,
                "after": {name: getattr(family, name) for name in before},
                "moved": moved,
            },
        )
        return family


def _move_members(*, cohort: Cohort, family: ContributionFamily, proposal_ids: list[str]) -> list[str]:
    found = dict(cohort.proposals.filter(external_id__in=proposal_ids).values_list("external_id", "pk"))
    unknown = [proposal_id for proposal_id in proposal_ids if proposal_id not in found]
    if unknown:
        raise FamilyError(
            f"Not proposals of this cohort: {', '.join(unknown[:10])}.",
            code="unknown_proposals",
            problems=[problem(f"{name} is not a proposal of this cohort.", field="proposals") for name in unknown],
        )
    current = dict(
        FamilyMember.objects.filter(cohort=cohort, proposal_id__in=found.values()).values_list(
            "proposal_id", "family_id"
        )
    )
    moved = [proposal_id for proposal_id, pk in found.items() if current.get(pk) != family.pk]
    FamilyMember.objects.filter(cohort=cohort, proposal_id__in=found.values()).delete()
    FamilyMember.objects.bulk_create(
        [FamilyMember(cohort=cohort, family=family, proposal_id=pk) for pk in found.values()]
    )
    return sorted(moved)

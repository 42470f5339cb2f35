"""Reading a cohort's research tree (docs/protocol.md#research-runs): its versions, runs, development paths and
transitions, with the runs' decisions, budgets, delivery records and trajectories. A fixed number of queries whatever
the cohort's size; the rules are reviewapp.analysis.research_tree's."""

from collections import defaultdict
from dataclasses import dataclass, field

from reviewapp.analysis.research_tree import Path, Version, edges, run_of, select_paths
from reviewapp.models import (
    DELIVERY_STAGES,
    Cohort,
    DeliveryRecord,
    Proposal,
    ResearchRun,
    RunDecision,
    Trajectory,
)


@dataclass
class RunRow:
    id: str
    task: str
    author: str
    proposals: list[str]
    named: bool  # imported as a research run (False: a connected component named by its smallest id)
    budget: float | None = None
    budget_unit: str = ""
    notes: str = ""
    decisions: list[dict] = field(default_factory=list)
    trajectories: list[dict] = field(default_factory=list)
    transitions: int = 0
    paths: list[str] = field(default_factory=list)  # the terminals of its development paths

    @property
    def budget_recorded(self) -> bool:
        """A budget recorded for the run or for one of its decisions (proposal counts never stand in for one)."""
        return self.budget is not None or any(decision["budget"] is not None for decision in self.decisions)


@dataclass
class CohortTree:
    versions: dict[str, Version]  # by id
    pks: dict[str, int]  # id → proposal pk
    statements: dict[str, str]
    runs: dict[str, RunRow]
    run_of: dict[str, str]
    paths: list[Path]
    transitions: list[tuple[str, str]]  # (parent, child), parents outside the cohort included
    delivery: dict[str, dict[str, str]]  # id → stage → status


def cohort_versions(cohort: Cohort) -> tuple[dict[str, Version], dict[str, int], dict[str, str]]:
    """(versions by id, pks by id, statements by id) of the cohort's proposals, parents in their listed order."""
    rows = list(
        cohort.proposals.values_list(
            "pk", "external_id", "task__key", "author", "research_run__external_id", "statement"
        ).order_by("external_id")
    )
    pks = {external_id: pk for pk, external_id, *_ in rows}
    parents: dict[int, list[str]] = defaultdict(list)
    links = (
        Proposal.parents.through.objects.filter(from_proposal__cohorts=cohort)
        .order_by("from_proposal_id", "pk")
        .values_list("from_proposal_id", "to_proposal__external_id")
    )
    for child, parent in links:
        parents[child].append(parent)
    versions = {
        external_id: Version(external_id, task, author, run or "", tuple(parents[pk]))
        for pk, external_id, task, author, run, _ in rows
    }
    return versions, pks, {external_id: statement for _, external_id, *_, statement in rows}


def cohort_tree(cohort: Cohort) -> CohortTree:
    versions, pks, statements = cohort_versions(cohort)
    runs_by_version = run_of(versions.values())
    runs: dict[str, RunRow] = {}
    for version_id in sorted(versions):
        version, run_id = versions[version_id], runs_by_version[version_id]
        row = runs.get(run_id)
        if row is None:
            row = runs[run_id] = RunRow(run_id, version.task, version.author, [], named=bool(version.run))
        row.proposals.append(version_id)
    named = [run_id for run_id, row in runs.items() if row.named]
    for run_id, budget, unit, notes in ResearchRun.objects.filter(external_id__in=named).values_list(
        "external_id", "budget", "budget_unit", "notes"
    ):
        runs[run_id].budget, runs[run_id].budget_unit, runs[run_id].notes = budget, unit, notes
    decision_members: dict[int, list[str]] = defaultdict(list)
    for decision, proposal in RunDecision.proposals.through.objects.filter(
        rundecision__run__external_id__in=named
    ).values_list("rundecision_id", "proposal__external_id"):
        decision_members[decision].append(proposal)
    for pk, run_id, seq, kind, budget, rationale in RunDecision.objects.filter(run__external_id__in=named).values_list(
        "pk", "run__external_id", "seq", "kind", "budget", "rationale"
    ):
        runs[run_id].decisions.append(
            {
                "seq": seq,
                "kind": kind,
                "proposals": sorted(decision_members[pk]),
                "budget": budget,
                "rationale": rationale,
            }
        )
    for run_id, external_id, role, summary in Trajectory.objects.filter(run__external_id__in=named).values_list(
        "run__external_id", "external_id", "role", "summary"
    ):
        runs[run_id].trajectories.append({"id": external_id, "role": role, "summary": summary})
    transitions = edges(versions.values())
    for _, child in transitions:
        runs[runs_by_version[child]].transitions += 1
    paths = select_paths(versions.values(), runs_by_version)
    for path in paths:
        runs[path.run].paths.append(path.terminal)
    delivery: dict[str, dict[str, str]] = defaultdict(dict)
    for proposal, stage, status in DeliveryRecord.objects.filter(proposal__cohorts=cohort).values_list(
        "proposal__external_id", "stage", "status"
    ):
        delivery[proposal][stage] = status
    return CohortTree(
        versions=versions,
        pks=pks,
        statements=statements,
        runs=runs,
        run_of=runs_by_version,
        paths=paths,
        transitions=transitions,
        delivery=dict(delivery),
    )


def delivery_counts(run: RunRow, delivery: dict[str, dict[str, str]]) -> dict[str, dict[str, int]]:
    """stage → {passed, failed, unattempted, not_recorded} over the run's versions (an unattempted check is not a
    failure, and a stage with no record is neither)."""
    counts = {stage: {"passed": 0, "failed": 0, "unattempted": 0, "not_recorded": 0} for stage in DELIVERY_STAGES}
    for version in run.proposals:
        for stage in DELIVERY_STAGES:
            counts[stage][delivery.get(version, {}).get(stage, "not_recorded")] += 1
    return counts


def furthest_stage(statuses: dict[str, str]) -> str:
    """The furthest delivery stage a version passed ("" when none): what its node's colour shows."""
    passed = [stage for stage in DELIVERY_STAGES if statuses.get(stage) == "passed"]
    return passed[-1] if passed else ""

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
from reviewapp.panel import development as rules
from reviewapp.panel.models import (
    FAMILY_MATURITIES,
    Assessment,
    ContributionFamily,
    FamilyMember,
    RevisionJudgment,
)
from reviewapp.panel.profile import (
    INSUFFICIENT_EVIDENCE,
    MARGINAL_REPETITION,
    NECESSARY_REPAIR,
    SUBSTANTIVE_PROGRESS,
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
    delivery_evidence: dict[tuple[str, str], str]  # (id, stage) → evidence


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
    evidence = {}
    for proposal, stage, status, text in DeliveryRecord.objects.filter(proposal__cohorts=cohort).values_list(
        "proposal__external_id", "stage", "status", "evidence"
    ):
        delivery[proposal][stage] = status
        evidence[(proposal, stage)] = text
    return CohortTree(
        versions=versions,
        pks=pks,
        statements=statements,
        runs=runs,
        run_of=runs_by_version,
        paths=paths,
        transitions=transitions,
        delivery=dict(delivery),
        delivery_evidence=evidence,
    )


def delivery_counts(run: RunRow, delivery: dict[str, dict[str, str]]) -> dict[str, dict[str, int]]:
    """stage → {passed, failed, unattempted, not_recorded} over the run's versions (an unattempted check is not a
    failure, and a stage with no record is neither)."""
    counts = {stage: {"passed": 0, "failed": 0, "unattempted": 0, "not_recorded": 0} for stage in DELIVERY_STAGES}
    for version in run.proposals:
        for stage in DELIVERY_STAGES:
            counts[stage][delivery.get(version, {}).get(stage, "not_recorded")] += 1
    return counts


def delivery_records(run: RunRow, tree: "CohortTree") -> list[dict]:
    """The run's recorded delivery stages, version by version in stage order."""
    return [
        {
            "proposal": version,
            "stage": stage,
            "status": statuses[stage],
            "evidence": tree.delivery_evidence[(version, stage)],
        }
        for version in run.proposals
        for statuses in [tree.delivery.get(version, {})]
        for stage in DELIVERY_STAGES
        if stage in statuses
    ]


def furthest_stage(statuses: dict[str, str]) -> str:
    """The furthest delivery stage a version passed ("" when none): what its node's colour shows."""
    passed = [stage for stage in DELIVERY_STAGES if statuses.get(stage) == "passed"]
    return passed[-1] if passed else ""


# Assessments and the levels' summaries ------------------------------------------------------------------------------


@dataclass(frozen=True)
class AssessmentRow:
    pk: int
    level: str
    object_key: str
    proposals: list[str]
    rubric: str
    state: str
    scores: dict  # as the protocol counts them (budget rule applied)
    evidence: dict
    rationales: dict
    composite: rules.Composite | None
    review_status: str
    packet_sha256: str
    prompt_version: str
    model_name: str
    simulated: bool
    error: str

    @property
    def weights(self) -> dict[str, int]:
        return rules.rubric(self.rubric).weights


def _assessments(cohort: Cohort, tree: CohortTree) -> dict[tuple[str, str], AssessmentRow]:
    """(level, object key) → the assessment of the object as it is now (one of other versions is stale: left out)."""
    current = {("path", path.terminal): list(path.proposals) for path in tree.paths}
    current |= {("run", run_id): run.proposals for run_id, run in tree.runs.items()}
    found = {}
    for row in Assessment.objects.filter(cohort=cohort).values(
        "pk",
        "level",
        "object_key",
        "proposals",
        "rubric",
        "state",
        "scores",
        "evidence",
        "rationales",
        "review_status",
        "packet_sha256",
        "prompt__version",
        "model_name",
        "simulated",
        "error",
    ):
        key = (row["level"], row["object_key"])
        wanted = current.get(key)
        if wanted is None or sorted(wanted) != sorted(row["proposals"]):
            continue
        rubric_ = rules.rubric(row["rubric"])
        scores = row["scores"]
        if row["level"] == Assessment.Level.RUN and row["state"] == Assessment.State.DONE:
            scores = rules.with_budget_rule(
                rubric_, scores, budget_recorded=tree.runs[row["object_key"]].budget_recorded
            )
        done = row["state"] == Assessment.State.DONE
        found[key] = AssessmentRow(
            pk=row["pk"],
            level=row["level"],
            object_key=row["object_key"],
            proposals=row["proposals"],
            rubric=row["rubric"],
            state=row["state"],
            scores=scores,
            evidence=row["evidence"],
            rationales=row["rationales"],
            composite=rules.composite(rubric_, scores) if done else None,
            review_status=row["review_status"],
            packet_sha256=row["packet_sha256"],
            prompt_version=row["prompt__version"] or "",
            model_name=row["model_name"],
            simulated=row["simulated"],
            error=row["error"],
        )
    return found


@dataclass
class CohortLevels:
    tree: CohortTree
    assessments: dict[tuple[str, str], AssessmentRow]
    transition_states: dict[tuple[str, str], str]  # (parent, child) → "done" category or "failed"
    families: list[dict]

    def path_assessment(self, terminal: str) -> AssessmentRow | None:
        return self.assessments.get(("path", terminal))

    def run_assessment(self, run_id: str) -> AssessmentRow | None:
        return self.assessments.get(("run", run_id))


def _transition_states(cohort: Cohort) -> dict[tuple[str, str], str]:
    states = {}
    for parent, child, state, category in RevisionJudgment.objects.filter(
        subject__proposal__cohorts=cohort
    ).values_list("predecessor__external_id", "subject__proposal__external_id", "state", "category"):
        states[(parent, child)] = category if state == RevisionJudgment.State.DONE else "failed"
    return states


def cohort_families(cohort: Cohort) -> list[dict]:
    """The cohort's families with their members' ids and records, in the order they were made."""
    members: dict[int, list[str]] = defaultdict(list)
    for family, proposal in (
        FamilyMember.objects.filter(cohort=cohort)
        .order_by("proposal__external_id")
        .values_list("family_id", "proposal__external_id")
    ):
        members[family].append(proposal)
    return [
        {**row, "members": members[row["id"]]}
        for row in ContributionFamily.objects.filter(cohort=cohort)
        .order_by("pk")
        .values("id", "question", "increment", "status", "maturity", "evidence", "review_status")
        if members[row["id"]]
    ]


def cohort_levels(cohort: Cohort) -> CohortLevels:
    tree = cohort_tree(cohort)
    return CohortLevels(
        tree=tree,
        assessments=_assessments(cohort, tree),
        transition_states=_transition_states(cohort),
        families=cohort_families(cohort),
    )


def _share(count: int, total: int) -> dict:
    return {"n": count, "rate": count / total if total else None}


def _level_summary(rows: list[AssessmentRow | None]) -> dict:
    done = [row for row in rows if row is not None and row.state == Assessment.State.DONE]
    summary = rules.composite_summary(row.composite for row in done if row.composite is not None)
    return {
        "total": len(rows),
        "assessed": len(done),
        "failed": sum(row is not None and row.state == Assessment.State.FAILED for row in rows),
        "not_assessed": sum(row is None for row in rows),
        "complete": summary.complete,
        "mean_composite": summary.mean,
        "restricted": summary.restricted,
        "incomplete": summary.incomplete,
    }


def levels_summary(levels: CohortLevels, hypotheses: dict[str, float | None], *, author: str | None = None) -> dict:
    """The five levels side by side (docs/protocol.md#research-runs), for the whole cohort or one author model.

    hypotheses: version id → its Q (None when it has none)."""
    tree = levels.tree

    def mine(version: str) -> bool:
        return author is None or tree.versions[version].author == author

    versions = [version for version in tree.versions if mine(version)]
    qs = [hypotheses.get(version) for version in versions]
    known = [q for q in qs if q is not None]
    transitions = [edge for edge in tree.transitions if mine(edge[1])]
    states = [levels.transition_states.get(edge) for edge in transitions]
    total = len(transitions)
    categories = [state for state in states if state not in (None, "failed")]
    paths = [path for path in tree.paths if mine(path.terminal)]
    runs = [run_id for run_id, run in sorted(tree.runs.items()) if len(run.proposals) >= 2 and mine(run.proposals[0])]
    families = [family for family in levels.families if author is None or any(mine(m) for m in family["members"])]
    delivery = {stage: {"passed": 0, "failed": 0, "unattempted": 0, "not_recorded": 0} for stage in DELIVERY_STAGES}
    for version in versions:
        for stage in DELIVERY_STAGES:
            delivery[stage][tree.delivery.get(version, {}).get(stage, "not_recorded")] += 1
    return {
        "hypotheses": {
            "complete": len(known),
            "total": len(versions),
            "mean_q": sum(known) / len(known) if known else None,
        },
        "transitions": {
            "total": total,
            "judged": len(categories),
            "failed": states.count("failed"),
            "not_judged": states.count(None),
            "substantive_progress": _share(categories.count(SUBSTANTIVE_PROGRESS), total),
            "useful_step": _share(categories.count(SUBSTANTIVE_PROGRESS) + categories.count(NECESSARY_REPAIR), total),
            "repetition": _share(categories.count(MARGINAL_REPETITION), total),
            "insufficient_evidence": _share(categories.count(INSUFFICIENT_EVIDENCE), total),
        },
        "paths": _level_summary([levels.path_assessment(path.terminal) for path in paths]),
        "runs": _level_summary([levels.run_assessment(run_id) for run_id in runs]),
        "families": {
            "total": len(families),
            "with_evidence": sum(family["maturity"] in WITH_EVIDENCE for family in families),
        },
        "delivery": delivery,
    }


# Maturities that carry diagnostic or research evidence (the battery's "7 carrying diagnostic or research evidence").
WITH_EVIDENCE = FAMILY_MATURITIES[FAMILY_MATURITIES.index("diagnostically_examined") :]


# The research tree of a run as a graph for a page (positions only: the template draws it) ---------------------------

GRAPH_COLUMN, GRAPH_ROW, GRAPH_MARGIN = 150, 56, 40


def run_graph(levels: CohortLevels, run_id: str) -> dict:
    """Nodes (the run's versions, and its context parents from outside the run) laid out by depth from the roots, and
    edges; each node with the furthest delivery stage it passed, each edge on a selected path or not."""
    tree = levels.tree
    run = tree.runs[run_id]
    members = set(run.proposals)
    depth: dict[str, int] = {}
    for version in run.proposals:  # ids in string order: parents are settled by repeating until nothing changes
        depth[version] = 0
    changed = True
    while changed:
        changed = False
        for version in run.proposals:
            parents = [parent for parent in tree.versions[version].parents if parent in members]
            wanted = 1 + max((depth[parent] for parent in parents), default=-1)
            if wanted > depth[version]:
                depth[version], changed = wanted, True
    context: dict[str, int] = {}
    for version in run.proposals:
        for parent in tree.versions[version].parents:
            if parent not in members:
                context[parent] = min(context.get(parent, depth[version]), max(depth[version] - 1, 0))
    on_path = {
        (path.proposals[n], path.proposals[n + 1])
        for path in tree.paths
        if path.run == run_id
        for n in range(len(path.proposals) - 1)
    }
    path_versions = {version for path in tree.paths if path.run == run_id for version in path.proposals}
    layers: dict[int, list[str]] = defaultdict(list)
    for version in sorted(members):
        layers[depth[version]].append(version)
    for parent in sorted(context):
        layers[context[parent]].append(parent)
    position = {}
    for layer, versions in layers.items():
        for row, version in enumerate(versions):
            position[version] = (GRAPH_MARGIN + layer * GRAPH_COLUMN, GRAPH_MARGIN + row * GRAPH_ROW)
    nodes = [
        {
            "id": version,
            "x": x,
            "y": y,
            "context": version not in members,
            "on_path": version in path_versions,
            "stage": furthest_stage(tree.delivery.get(version, {})) if version in members else "",
        }
        for version, (x, y) in position.items()
    ]
    edges = []
    for version in sorted(members):
        for parent in tree.versions[version].parents:
            (x1, y1), (x2, y2) = position[parent], position[version]
            edges.append(
                {
                    "parent": parent,
                    "child": version,
                    "x1": x1,
                    "y1": y1,
                    "x2": x2,
                    "y2": y2,
                    "on_path": (parent, version) in on_path,
                    "context": parent not in members,
                }
            )
    width = GRAPH_MARGIN * 2 + max((x for x, _ in position.values()), default=0) + 80
    height = GRAPH_MARGIN * 2 + max((y for _, y in position.values()), default=0)
    return {"nodes": nodes, "edges": edges, "width": width, "height": height}


# The levels as tables (CSV files and the sheets of the cohort's XLSX) ---------------------------------------------


def _assessment_cells(row: AssessmentRow | None, rubric_version: str) -> list:
    keys = rules.rubric(rubric_version).keys
    if row is None:
        return ["not_assessed", "", "", "", *([""] * len(keys)), "", ""]
    composite = row.composite
    return [
        row.state,
        composite.scope if composite else rules.INCOMPLETE,
        composite.mask if composite else "",
        round(composite.value, 4) if composite and composite.value is not None else "",
        *(row.scores.get(key, "") for key in keys),
        row.review_status,
        "true" if row.simulated else "false",
    ]


def level_tables(cohort: Cohort) -> dict[str, list[list]]:
    """paths, runs, families and delivery as tables (header first): analysts' files, author columns included."""
    levels = cohort_levels(cohort)
    tree = levels.tree
    path_keys, run_keys = rules.rubric(rules.PATH_RUBRIC).keys, rules.rubric(rules.RUN_RUBRIC).keys
    assessment_header = ["state", "scope", "mask", "composite"]
    paths = [
        ["run", "author", "terminal", "proposals", "context", *assessment_header, *path_keys, "status", "simulated"]
    ]
    for item in tree.paths:
        paths.append(
            [
                item.run,
                tree.runs[item.run].author,
                item.terminal,
                ";".join(item.proposals),
                ";".join(item.context),
                *_assessment_cells(levels.path_assessment(item.terminal), rules.PATH_RUBRIC),
            ]
        )
    runs = [
        [
            "run",
            "named",
            "task",
            "author",
            "proposals",
            "transitions",
            "paths",
            "decisions",
            "budget",
            "budget_unit",
            "budget_recorded",
            *assessment_header,
            *run_keys,
            "status",
            "simulated",
        ]
    ]
    for run_id, run in sorted(tree.runs.items()):
        assessed = len(run.proposals) >= 2
        runs.append(
            [
                run_id,
                "true" if run.named else "false",
                run.task,
                run.author,
                len(run.proposals),
                run.transitions,
                len(run.paths),
                len(run.decisions),
                run.budget if run.budget is not None else "",
                run.budget_unit,
                "true" if run.budget_recorded else "false",
                *(
                    _assessment_cells(levels.run_assessment(run_id), rules.RUN_RUBRIC)
                    if assessed
                    else ["single_version", "", "", "", *([""] * len(run_keys)), "", ""]
                ),
            ]
        )
    families = [["family", "members", "question", "increment", "status", "maturity", "evidence", "review_status"]]
    families += [
        [
            family["id"],
            ";".join(family["members"]),
            family["question"],
            family["increment"],
            family["status"],
            family["maturity"],
            family["evidence"],
            family["review_status"],
        ]
        for family in levels.families
    ]
    delivery = [["proposal", "run", "author", *DELIVERY_STAGES]]
    delivery += [
        [
            version,
            tree.run_of[version],
            tree.versions[version].author,
            *(tree.delivery.get(version, {}).get(stage, "not_recorded") for stage in DELIVERY_STAGES),
        ]
        for version in sorted(tree.versions)
    ]
    return {"paths": paths, "runs": runs, "families": families, "delivery": delivery}

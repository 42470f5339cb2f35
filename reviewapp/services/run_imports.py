"""The cohort import's optional tables of research runs (docs/protocol.md#research-runs): the runs themselves (task,
author, budget, notes), their recorded decisions, the versions' delivery records and the agents' trajectories.

Checked with the rest of the file, before anything is written: an unknown id, a decision or trajectory naming a
version of another run, a kind, stage or status outside the lists refuse the whole file, each problem named by its
table, row and field. A record that already exists is reused when identical and refused when it differs, never
overwritten (as tasks and proposals are).
"""

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field

from reviewapp.models import (
    DECISION_KINDS,
    DELIVERY_STAGES,
    DELIVERY_STATUSES,
    DeliveryRecord,
    Proposal,
    ResearchRun,
    ResearchTask,
    RunDecision,
    Trajectory,
)
from reviewapp.services.tabular_files import as_text, problem

RUNS, DECISIONS, DELIVERY, TRAJECTORIES = "research_runs", "decisions", "delivery", "trajectories"
PROPOSALS = "proposals"
LIMITS = {
    "id": 200,
    "task": 200,
    "author": 200,
    "budget_unit": 50,
    "notes": 20000,
    "run": 200,
    "kind": 30,
    "rationale": 20000,
    "proposal": 200,
    "stage": 30,
    "status": 30,
    "evidence": 20000,
    "role": 200,
    "summary": 20000,
}
_LOOKUP_CHUNK = 900


def clean_budget(value):
    """A non-negative number, or None when blank."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, None
    if isinstance(value, bool):
        return None, "Must be a number."
    if isinstance(value, int | float):
        number = float(value)
    else:
        text = as_text(value)
        try:
            number = float(text or "")
        except ValueError:
            return None, f"“{text}” is not a number."
    if number != number or number < 0 or number in (float("inf"), float("-inf")):
        return None, "Must be a number of 0 or more."
    return number, None


def clean_seq(value):
    """A whole number from 1 (the decision's place in its run)."""
    if isinstance(value, bool):
        return None, "Must be a whole number from 1."
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        return (value, None) if value >= 1 else (None, "Must be a whole number from 1.")
    text = as_text(value) or ""
    if text.isdigit() and int(text) >= 1:
        return int(text), None
    return None, "Must be a whole number from 1." if text else "seq is required."


@dataclass
class RunTables:
    """The clean records of the four tables (each with its row number)."""

    runs: list[dict] = field(default_factory=list)
    decisions: list[dict] = field(default_factory=list)
    delivery: list[dict] = field(default_factory=list)
    trajectories: list[dict] = field(default_factory=list)


def run_content_sha256(values) -> str:
    content = {name: values[name] for name in ("id", "task", "author", "budget", "budget_unit", "notes")}
    canonical = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _fetch_in(queryset, field_name: str, values) -> list:
    values = list(values)
    found = []
    for start in range(0, len(values), _LOOKUP_CHUNK):
        found += queryset.filter(**{f"{field_name}__in": values[start : start + _LOOKUP_CHUNK]})
    return found


def _one_of(value: str, allowed: tuple[str, ...], name: str) -> str | None:
    if value in allowed:
        return None
    return f"“{value}” is not a {name}; use one of: {', '.join(allowed)}."


def check_run_tables(tables: RunTables, *, proposals: list[dict], task_keys: set[str], problems: list) -> None:
    """Every problem of the four tables and of the proposals' research_run, within the file and against the database.

    task_keys: the tasks of the file and those already imported that the file names."""
    file_runs: dict[str, dict] = {}
    run_tasks = {record["task"] for record in tables.runs if record["task"]} - task_keys
    task_keys = task_keys | set(_fetch_in(ResearchTask.objects.values_list("key", flat=True), "key", run_tasks))
    for record in tables.runs:
        if record["id"] in file_runs:
            message = (
                f"The id “{record['id']}” is used twice in this file (first on row {file_runs[record['id']]['row']})."
            )
            problems.append(problem(RUNS, record["row"], "id", message))
            continue
        if record["id"]:
            file_runs[record["id"]] = record
        if record["task"] and record["task"] not in task_keys:
            message = f"Unknown task “{record['task']}”: it is neither in this file nor already imported."
            problems.append(problem(RUNS, record["row"], "task", message))
        if record["budget"] is not None and not record["budget_unit"]:
            problems.append(problem(RUNS, record["row"], "budget_unit", "A budget needs its unit (budget_unit)."))

    named_runs = set(file_runs) | {record["research_run"] for record in proposals if record["research_run"]}
    named_runs |= {record["run"] for record in (*tables.decisions, *tables.trajectories) if record["run"]}
    existing_runs = {
        run.external_id: run for run in _fetch_in(ResearchRun.objects.select_related("task"), "external_id", named_runs)
    }
    for record in file_runs.values():
        run = existing_runs.get(record["id"])
        if run is not None and run.content_sha256 != run_content_sha256(record):
            message = f"A research run with id “{record['id']}” already exists with different content."
            problems.append(problem(RUNS, record["row"], "id", message))

    def run_task_author(run_id: str) -> tuple[str, str] | None:
        if run_id in file_runs:
            return file_runs[run_id]["task"], file_runs[run_id]["author"]
        if run_id in existing_runs:
            return existing_runs[run_id].task.key, existing_runs[run_id].author
        return None

    # Each version's run: the file's proposals as written, the others as imported.
    file_proposals = {record["id"]: record for record in proposals if record["id"]}
    for record in proposals:
        run_id = record["research_run"]
        if not run_id:
            continue
        owner = run_task_author(run_id)
        if owner is None:
            message = f"Unknown research run “{run_id}”: it is neither in this file nor already imported."
            problems.append(problem(PROPOSALS, record["row"], "research_run", message))
        elif record["task"] and owner[0] != record["task"]:
            message = f"The research run “{run_id}” is of the task “{owner[0]}”, not “{record['task']}”."
            problems.append(problem(PROPOSALS, record["row"], "research_run", message))
        elif owner[1] != record["author"]:
            message = f"The research run “{run_id}” is by “{owner[1]}”, not “{record['author']}”."
            problems.append(problem(PROPOSALS, record["row"], "research_run", message))
    named_proposals = {pid for record in (*tables.decisions, *tables.trajectories) for pid in record["proposals"]}
    named_proposals |= {record["proposal"] for record in tables.delivery if record["proposal"]}
    outside = named_proposals - set(file_proposals)
    run_of_existing = dict(
        _fetch_in(Proposal.objects.values_list("external_id", "research_run__external_id"), "external_id", outside)
    )

    def check_members(table: str, record: dict) -> None:
        for proposal_id in record["proposals"]:
            if proposal_id in file_proposals:
                its_run = file_proposals[proposal_id]["research_run"]
            elif proposal_id in run_of_existing:
                its_run = run_of_existing[proposal_id] or ""
            else:
                message = f"Unknown proposal “{proposal_id}”: it is neither in this file nor already imported."
                problems.append(problem(table, record["row"], "proposals", message))
                continue
            if record["run"] and its_run != record["run"]:
                where = f"the run “{its_run}”" if its_run else "no named run"
                message = f"The proposal “{proposal_id}” belongs to {where}, not to “{record['run']}”."
                problems.append(problem(table, record["row"], "proposals", message))

    def check_run(table: str, record: dict) -> bool:
        if record["run"] and run_task_author(record["run"]) is None:
            message = f"Unknown research run “{record['run']}”: it is neither in this file nor already imported."
            problems.append(problem(table, record["row"], "run", message))
            return False
        return True

    seen_seq: dict[tuple[str, int], int] = {}
    for record in tables.decisions:
        if record["kind"] and (refusal := _one_of(record["kind"], DECISION_KINDS, "decision kind")):
            problems.append(problem(DECISIONS, record["row"], "kind", refusal))
        key = (record["run"], record["seq"])
        if record["seq"] is not None and key in seen_seq:
            message = f"The run “{record['run']}” has a decision {record['seq']} already (row {seen_seq[key]})."
            problems.append(problem(DECISIONS, record["row"], "seq", message))
        seen_seq.setdefault(key, record["row"])
        if check_run(DECISIONS, record):
            check_members(DECISIONS, record)

    seen_stage: dict[tuple[str, str], int] = {}
    for record in tables.delivery:
        if record["stage"] and (refusal := _one_of(record["stage"], DELIVERY_STAGES, "delivery stage")):
            problems.append(problem(DELIVERY, record["row"], "stage", refusal))
        if record["status"] and (refusal := _one_of(record["status"], DELIVERY_STATUSES, "delivery status")):
            problems.append(problem(DELIVERY, record["row"], "status", refusal))
        if (
            record["proposal"]
            and record["proposal"] not in file_proposals
            and record["proposal"] not in run_of_existing
        ):
            message = f"Unknown proposal “{record['proposal']}”: it is neither in this file nor already imported."
            problems.append(problem(DELIVERY, record["row"], "proposal", message))
        key = (record["proposal"], record["stage"])
        if key in seen_stage:
            message = (
                f"The proposal “{record['proposal']}” has a {record['stage']} record already (row {seen_stage[key]})."
            )
            problems.append(problem(DELIVERY, record["row"], "stage", message))
        seen_stage.setdefault(key, record["row"])

    seen_trajectory: dict[str, int] = {}
    for record in tables.trajectories:
        if record["id"] in seen_trajectory:
            message = (
                f"The id “{record['id']}” is used twice in this file (first on row {seen_trajectory[record['id']]})."
            )
            problems.append(problem(TRAJECTORIES, record["row"], "id", message))
        seen_trajectory.setdefault(record["id"], record["row"])
        if check_run(TRAJECTORIES, record):
            check_members(TRAJECTORIES, record)
    _check_existing(tables, problems)


def _check_existing(tables: RunTables, problems: list) -> None:
    """Decisions, delivery records and trajectories already imported must be identical to the file's."""
    decisions: dict[str, dict[int, tuple]] = defaultdict(dict)
    for run_id, seq, kind, budget, rationale in _fetch_in(
        RunDecision.objects.values_list("run__external_id", "seq", "kind", "budget", "rationale"),
        "run__external_id",
        {record["run"] for record in tables.decisions},
    ):
        decisions[run_id][seq] = (kind, budget, rationale)
    for record in tables.decisions:
        known = decisions.get(record["run"], {}).get(record["seq"])
        if known is not None and known != (record["kind"], record["budget"], record["rationale"]):
            message = f"Decision {record['seq']} of the run “{record['run']}” already exists with different content."
            problems.append(problem(DECISIONS, record["row"], "seq", message))
    delivered = {
        (proposal_id, stage): (status, evidence)
        for proposal_id, stage, status, evidence in _fetch_in(
            DeliveryRecord.objects.values_list("proposal__external_id", "stage", "status", "evidence"),
            "proposal__external_id",
            {record["proposal"] for record in tables.delivery},
        )
    }
    for record in tables.delivery:
        known = delivered.get((record["proposal"], record["stage"]))
        if known is not None and known != (record["status"], record["evidence"]):
            message = f"The {record['stage']} record of “{record['proposal']}” already exists with different content."
            problems.append(problem(DELIVERY, record["row"], "status", message))
    trajectories = {
        trajectory.external_id: trajectory
        for trajectory in _fetch_in(
            Trajectory.objects.select_related("run"), "external_id", {record["id"] for record in tables.trajectories}
        )
    }
    for record in tables.trajectories:
        trajectory = trajectories.get(record["id"])
        if trajectory is not None and (trajectory.run.external_id, trajectory.role, trajectory.summary) != (
            record["run"],
            record["role"],
            record["summary"],
        ):
            message = f"A trajectory with id “{record['id']}” already exists with different content."
            problems.append(problem(TRAJECTORIES, record["row"], "id", message))


def write_runs(tables: RunTables, *, batch, task_pks: dict[str, int]) -> dict[str, int]:
    """Create the file's new runs; run id → pk of every run the file names (new or already imported)."""
    named = {record["id"] for record in tables.runs}
    missing_tasks = {record["task"] for record in tables.runs} - set(task_pks)
    task_pks = task_pks | dict(_fetch_in(ResearchTask.objects.values_list("key", "pk"), "key", missing_tasks))
    existing = dict(_fetch_in(ResearchRun.objects.values_list("external_id", "pk"), "external_id", named))
    ResearchRun.objects.bulk_create(
        [
            ResearchRun(
                external_id=record["id"],
                task_id=task_pks[record["task"]],
                author=record["author"],
                budget=record["budget"],
                budget_unit=record["budget_unit"],
                notes=record["notes"],
                content_sha256=run_content_sha256(record),
                import_batch=batch,
            )
            for record in tables.runs
            if record["id"] not in existing
        ]
    )
    return dict(ResearchRun.objects.filter(external_id__in=named).values_list("external_id", "pk"))


def run_pks_of(run_ids) -> dict[str, int]:
    return dict(_fetch_in(ResearchRun.objects.values_list("external_id", "pk"), "external_id", run_ids))


def write_run_records(tables: RunTables, *, batch, proposal_pks: dict[str, int]) -> None:
    """The decisions, delivery records and trajectories the database does not hold yet."""
    run_ids = {record["run"] for record in (*tables.decisions, *tables.trajectories)}
    run_pks = run_pks_of(run_ids)
    named = {pid for record in (*tables.decisions, *tables.trajectories) for pid in record["proposals"]}
    named |= {record["proposal"] for record in tables.delivery}
    missing = named - set(proposal_pks)
    proposal_pks = proposal_pks | dict(
        _fetch_in(Proposal.objects.values_list("external_id", "pk"), "external_id", missing)
    )
    existing_decisions = set(RunDecision.objects.filter(run_id__in=run_pks.values()).values_list("run_id", "seq"))
    new_decisions = [
        record for record in tables.decisions if (run_pks[record["run"]], record["seq"]) not in existing_decisions
    ]
    RunDecision.objects.bulk_create(
        [
            RunDecision(
                run_id=run_pks[record["run"]],
                seq=record["seq"],
                kind=record["kind"],
                budget=record["budget"],
                rationale=record["rationale"],
                import_batch=batch,
            )
            for record in new_decisions
        ]
    )
    decision_pks = {
        (run_id, seq): pk
        for pk, run_id, seq in RunDecision.objects.filter(run_id__in=run_pks.values()).values_list(
            "pk", "run_id", "seq"
        )
    }
    RunDecision.proposals.through.objects.bulk_create(
        [
            RunDecision.proposals.through(
                rundecision_id=decision_pks[(run_pks[record["run"]], record["seq"])], proposal_id=proposal_pks[pid]
            )
            for record in new_decisions
            for pid in record["proposals"]
        ]
    )
    existing_stages = set(
        _fetch_in(
            DeliveryRecord.objects.values_list("proposal_id", "stage"),
            "proposal_id",
            {proposal_pks[record["proposal"]] for record in tables.delivery},
        )
    )
    DeliveryRecord.objects.bulk_create(
        [
            DeliveryRecord(
                proposal_id=proposal_pks[record["proposal"]],
                stage=record["stage"],
                status=record["status"],
                evidence=record["evidence"],
                import_batch=batch,
            )
            for record in tables.delivery
            if (proposal_pks[record["proposal"]], record["stage"]) not in existing_stages
        ]
    )
    existing_trajectories = set(
        Trajectory.objects.filter(external_id__in=[r["id"] for r in tables.trajectories]).values_list(
            "external_id", flat=True
        )
    )
    new_trajectories = [record for record in tables.trajectories if record["id"] not in existing_trajectories]
    Trajectory.objects.bulk_create(
        [
            Trajectory(
                external_id=record["id"],
                run_id=run_pks[record["run"]],
                role=record["role"],
                summary=record["summary"],
                import_batch=batch,
            )
            for record in new_trajectories
        ]
    )
    trajectory_pks = dict(
        Trajectory.objects.filter(external_id__in=[r["id"] for r in new_trajectories]).values_list("external_id", "pk")
    )
    Trajectory.proposals.through.objects.bulk_create(
        [
            Trajectory.proposals.through(trajectory_id=trajectory_pks[record["id"]], proposal_id=proposal_pks[pid])
            for record in new_trajectories
            for pid in record["proposals"]
        ]
    )


def runs_unstage(batch) -> None:
    """Remove the runs a staged cohort import created (it failed before they were used)."""
    ResearchRun.objects.filter(import_batch=batch).delete()

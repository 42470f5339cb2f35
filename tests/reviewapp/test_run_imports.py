"""The cohort import's optional tables of research runs: runs, decisions, delivery and trajectories, in JSON, CSV and
XLSX alike, all or nothing, each bad row named."""

import json

import pytest

from reviewapp.models import DeliveryRecord, Proposal, ResearchRun, RunDecision, Trajectory
from reviewapp.services.imports import ImportInvalid, cohort_import_file
from tests import factories
from tests.reviewapp.test_imports import csv_file, has_problem, xlsx_file

TASK = {"key": "T1", "question": "Does lowering IGF-1 in mid-life extend lifespan?"}
RUN = {"id": "run-1", "task": "T1", "author": "Model A", "budget": 120, "budget_unit": "GPU hours", "notes": "pilot"}
PROPOSALS = [
    {"id": "P1", "task": "T1", "statement": "IGF-1 claim one.", "author": "Model A", "research_run": "run-1"},
    {"id": "P2", "task": "T1", "statement": "IGF-1 claim two.", "author": "Model A", "research_run": "run-1",
     "parents": ["P1"]},
    {"id": "Q1", "task": "T1", "statement": "Another run's claim.", "author": "Model A"},
]  # fmt: skip
DECISION = {"run": "run-1", "seq": 1, "kind": "branch", "proposals": ["P1", "P2"], "budget": 40, "rationale": "why"}
DELIVERY = {"proposal": "P2", "stage": "compiled", "status": "unattempted", "evidence": ""}
TRAJECTORY = {"id": "tr-1", "run": "run-1", "role": "generator", "proposals": ["P1"], "summary": "Read 3 papers."}


@pytest.fixture
def cohort(db):
    return factories.make_cohort(name="Runs pilot")


def run_file(**tables) -> bytes:
    content = {
        "tasks": [TASK],
        "proposals": PROPOSALS,
        "research_runs": [RUN],
        "decisions": [DECISION],
        "delivery": [DELIVERY],
        "trajectories": [TRAJECTORY],
    }
    return json.dumps(content | tables).encode()


def refused(cohort, content: bytes, filename="runs.json") -> list[dict]:
    counts = [model.objects.count() for model in (Proposal, ResearchRun, RunDecision, DeliveryRecord, Trajectory)]
    with pytest.raises(ImportInvalid) as caught:
        cohort_import_file(cohort=cohort, filename=filename, content=content, user=None)
    assert [model.objects.count() for model in (Proposal, ResearchRun, RunDecision, DeliveryRecord, Trajectory)] == (
        counts
    )
    return caught.value.rows


def test_a_json_file_with_every_run_table_is_imported(cohort):
    cohort_import_file(cohort=cohort, filename="runs.json", content=run_file(), user=None)
    run = ResearchRun.objects.get()
    assert (run.external_id, run.task.key, run.author, run.budget, run.budget_unit) == (
        "run-1",
        "T1",
        "Model A",
        120.0,
        "GPU hours",
    )
    assert sorted(run.proposals.values_list("external_id", flat=True)) == ["P1", "P2"]
    assert Proposal.objects.get(external_id="Q1").research_run is None
    decision = RunDecision.objects.get()
    assert (decision.seq, decision.kind, decision.budget) == (1, "branch", 40.0)
    assert sorted(decision.proposals.values_list("external_id", flat=True)) == ["P1", "P2"]
    assert DeliveryRecord.objects.get().status == "unattempted"
    assert list(Trajectory.objects.get().proposals.values_list("external_id", flat=True)) == ["P1"]


def test_importing_the_same_runs_again_into_another_cohort_reuses_them(cohort):
    cohort_import_file(cohort=cohort, filename="runs.json", content=run_file(), user=None)
    other = factories.make_cohort(name="Second")
    cohort_import_file(cohort=other, filename="again.json", content=run_file(), user=None)
    assert (ResearchRun.objects.count(), RunDecision.objects.count(), DeliveryRecord.objects.count()) == (1, 1, 1)
    assert other.proposals.count() == 3


def test_a_run_imported_again_with_different_content_is_refused(cohort):
    cohort_import_file(cohort=cohort, filename="runs.json", content=run_file(), user=None)
    rows = refused(factories.make_cohort(), run_file(research_runs=[RUN | {"notes": "changed"}]))
    assert has_problem(rows, "research_runs", 1, "id", "different content")


def test_csv_tables_of_runs_decisions_and_delivery_are_recognised_by_their_header(cohort):
    cohort_import_file(cohort=cohort, filename="tasks.csv", content=csv_file("key,question", "T1,Why?"), user=None)
    cohort_import_file(
        cohort=cohort,
        filename="runs.csv",
        content=csv_file("id,task,author,budget,budget_unit", "run-1,T1,Model A,,"),
        user=None,
    )
    cohort_import_file(
        cohort=cohort,
        filename="proposals.csv",
        content=csv_file(
            "id,task,statement,author,research_run,parents",
            "P1,T1,One.,Model A,run-1,",
            "P2,T1,Two.,Model A,run-1,P1",
        ),
        user=None,
    )
    cohort_import_file(
        cohort=cohort,
        filename="decisions.csv",
        content=csv_file("run,seq,kind,proposals", "run-1,1,prune,P1;P2"),
        user=None,
    )
    cohort_import_file(
        cohort=cohort,
        filename="delivery.csv",
        content=csv_file("proposal,stage,status", "P2,selected,passed"),
        user=None,
    )
    cohort_import_file(
        cohort=cohort,
        filename="trajectories.csv",
        content=csv_file("id,run,role,summary", "t1,run-1,critic,Read."),
        user=None,
    )
    assert ResearchRun.objects.get().budget is None
    assert RunDecision.objects.get().proposals.count() == 2
    assert DeliveryRecord.objects.get().stage == "selected"
    assert Trajectory.objects.get().role == "critic"


def test_xlsx_sheets_of_the_run_tables_are_imported(cohort):
    content = xlsx_file(
        {
            "tasks": [["key", "question"], ["T1", "Why?"]],
            "proposals": [["id", "task", "statement", "author", "research_run"], ["P1", "T1", "One.", "M", "r"]],
            "research_runs": [["id", "task", "author", "budget", "budget_unit"], ["r", "T1", "M", 3.5, "USD"]],
            "decisions": [["run", "seq", "kind", "proposals"], ["r", 1, "stop", "P1"]],
            "delivery": [["proposal", "stage", "status"], ["P1", "executed", "failed"]],
        }
    )
    cohort_import_file(cohort=cohort, filename="runs.xlsx", content=content, user=None)
    assert ResearchRun.objects.get().budget == 3.5
    assert RunDecision.objects.get().kind == "stop"
    assert DeliveryRecord.objects.get().status == "failed"


def test_unknown_ids_refuse_the_whole_file_each_row_named(cohort):
    rows = refused(
        cohort,
        run_file(
            proposals=[PROPOSALS[0] | {"research_run": "run-9"}, *PROPOSALS[1:]],
            decisions=[DECISION | {"run": "run-7"}, DECISION | {"seq": 2, "proposals": ["P1", "nope"]}],
            delivery=[DELIVERY | {"proposal": "ghost"}],
            trajectories=[TRAJECTORY | {"run": "nowhere"}],
            research_runs=[RUN, RUN | {"id": "run-2", "task": "T9"}],
        ),
    )
    assert has_problem(rows, "proposals", 1, "research_run", "Unknown research run “run-9”")
    assert has_problem(rows, "decisions", 1, "run", "Unknown research run “run-7”")
    assert has_problem(rows, "decisions", 2, "proposals", "Unknown proposal “nope”")
    assert has_problem(rows, "delivery", 1, "proposal", "Unknown proposal “ghost”")
    assert has_problem(rows, "trajectories", 1, "run", "Unknown research run “nowhere”")
    assert has_problem(rows, "research_runs", 2, "task", "Unknown task “T9”")


def test_a_decision_naming_a_proposal_of_another_run_is_refused(cohort):
    rows = refused(cohort, run_file(decisions=[DECISION | {"proposals": ["P1", "Q1"]}]))
    assert has_problem(rows, "decisions", 1, "proposals", "“Q1” belongs to no named run, not to “run-1”")


def test_kinds_stages_and_statuses_outside_the_lists_are_refused(cohort):
    rows = refused(
        cohort,
        run_file(
            decisions=[DECISION | {"kind": "ponder"}, DECISION | {"seq": 0}],
            delivery=[DELIVERY | {"stage": "shipped", "status": "skipped"}],
        ),
    )
    assert has_problem(rows, "decisions", 1, "kind", "“ponder” is not a decision kind")
    assert has_problem(rows, "decisions", 2, "seq", "whole number from 1")
    assert has_problem(rows, "delivery", 1, "stage", "“shipped” is not a delivery stage")
    assert has_problem(rows, "delivery", 1, "status", "“skipped” is not a delivery status")


def test_a_budget_needs_a_unit_and_a_run_its_proposals_task_and_author(cohort):
    rows = refused(
        cohort,
        run_file(
            research_runs=[RUN | {"budget_unit": ""}],
            proposals=[PROPOSALS[0] | {"author": "Model B"}, *PROPOSALS[1:]],
        ),
    )
    assert has_problem(rows, "research_runs", 1, "budget_unit", "needs its unit")
    assert has_problem(rows, "proposals", 1, "research_run", "is by “Model A”, not “Model B”")


def test_repeated_decisions_and_delivery_stages_in_one_file_are_refused(cohort):
    rows = refused(
        cohort, run_file(decisions=[DECISION, DECISION], delivery=[DELIVERY, DELIVERY | {"status": "passed"}])
    )
    assert has_problem(rows, "decisions", 2, "seq", "already (row 1)")
    assert has_problem(rows, "delivery", 2, "stage", "already (row 1)")

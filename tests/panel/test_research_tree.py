"""A cohort's research tree read from the database: runs (named and derived), paths, transitions per edge, delivery
and budgets."""

import json

import pytest

from reviewapp.panel.research import cohort_tree, delivery_counts
from reviewapp.services.imports import cohort_import_file
from tests import factories


@pytest.fixture
def cohort(db):
    cohort = factories.make_cohort(name="Tree")
    content = {
        "tasks": [{"key": "T", "question": "Why?"}],
        "research_runs": [{"id": "run-b", "task": "T", "author": "M", "budget": 10, "budget_unit": "USD"}],
        "proposals": [
            {"id": "a1", "task": "T", "statement": "a1.", "author": "M"},
            {"id": "a2", "task": "T", "statement": "a2.", "author": "M", "parents": ["a1"]},
            {"id": "a3", "task": "T", "statement": "a3.", "author": "M"},
            {"id": "a4", "task": "T", "statement": "a4.", "author": "M", "parents": ["a2", "a3"]},
            {"id": "b1", "task": "T", "statement": "b1.", "author": "M", "research_run": "run-b"},
            {"id": "b2", "task": "T", "statement": "b2.", "author": "M", "research_run": "run-b", "parents": ["b1"]},
            {"id": "c1", "task": "T", "statement": "c1.", "author": "N"},
        ],
        "decisions": [{"run": "run-b", "seq": 1, "kind": "pursue", "proposals": ["b2"]}],
        "delivery": [
            {"proposal": "b2", "stage": "selected", "status": "passed"},
            {"proposal": "b2", "stage": "compiled", "status": "unattempted"},
        ],
    }
    cohort_import_file(cohort=cohort, filename="tree.json", content=json.dumps(content).encode(), user=None)
    return cohort


def test_runs_paths_and_transitions_of_a_cohort(cohort, django_assert_max_num_queries):
    with django_assert_max_num_queries(8):
        tree = cohort_tree(cohort)
    assert {run_id: run.proposals for run_id, run in tree.runs.items()} == {
        "a1": ["a1", "a2", "a3", "a4"],
        "run-b": ["b1", "b2"],
        "c1": ["c1"],
    }
    assert [(path.terminal, path.proposals, path.context) for path in tree.paths] == [
        ("a4", ("a1", "a2", "a4"), ("a3",)),
        ("b2", ("b1", "b2"), ()),
    ]
    assert (tree.runs["a1"].transitions, tree.runs["run-b"].transitions, len(tree.transitions)) == (3, 1, 4)
    assert tree.runs["run-b"].budget_recorded and not tree.runs["a1"].budget_recorded
    assert tree.runs["run-b"].decisions[0]["proposals"] == ["b2"]
    counts = delivery_counts(tree.runs["run-b"], tree.delivery)
    assert counts["selected"] == {"passed": 1, "failed": 0, "unattempted": 0, "not_recorded": 1}
    assert counts["compiled"]["unattempted"] == 1

"""Every JSON answer of the API's reads, for rich data and for empty, unstarted data, matches the schema.

Each GET operation whose only path parameter is a cohort's, a benchmark set's or a public run's id (or that has none)
is read for the demo cohort after its AI panel (reviews, research runs, every level assessed), for a cohort with
nothing in it, for a benchmark set holding the appendices' study data, for an unstarted empty set and for a public run
queued and completed, and each answer is checked with the schema's objects closed (tests.api_schema_support): a field
the schema forgets, a null it does not allow or a type it misstates fails here, whichever endpoint holds it."""

import re

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from reviewapp.demo.cohort import DEMO_COHORT_NAME, DEMO_COORDINATOR, demo_load
from reviewapp.models import Cohort
from reviewapp.panel.services.panel import panel_start_for_cohort
from reviewapp.services import jobs
from screening.models import Run
from screening.services.runs import run_create
from tests import factories
from tests.api_schema_support import answer_problems, api_schema
from tests.benchmark_support import make_set
from tests.benchmarks.test_appendix_analyses import study_data
from tests.screening_support import drive, simulated_default_roster


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    with django_db_blocker.unblock():
        return api_schema()


def json_reads(schema: dict, parameters: set[str]) -> list[str]:
    """The GET paths answering JSON with 200 whose path parameters are exactly `parameters`."""
    found = []
    for path, operations in schema["paths"].items():
        answer = operations.get("get", {}).get("responses", {}).get("200", {})
        if "application/json" in answer.get("content", {}) and set(re.findall(r"{(\w+)}", path)) == parameters:
            found.append(path)
    return found


def read_all(
    schema: dict, user, values: dict[str, int], *, refused_allowed: bool = False
) -> tuple[list[str], dict[str, list[str]]]:
    """Read every such path for `values`; the paths read (answered 200), and each answer's departures from the
    schema. A refusal counts as a departure, unless `refused_allowed` for a role that may not read everything: every
    read here is one a coordinator may make without a query."""
    client = APIClient()
    client.force_authenticate(user)
    paths, problems = [], {}
    for path in json_reads(schema, set(values)):
        response = client.get(path.format(**values))
        if response.status_code == 403 and refused_allowed:
            continue
        if response.status_code != 200:
            problems[path] = [f"answered {response.status_code}: {response.content[:300]!r}"]
        else:
            paths.append(path)
            if found := answer_problems(schema, path, "get", 200, response.json()):
                problems[path] = found
    return paths, problems


@pytest.fixture
def demo_cohort(db, settings, monkeypatch) -> Cohort:
    with simulated_default_roster(settings, monkeypatch, latency=0.0, seed=13):
        demo_load()
        cohort = Cohort.objects.get(name=DEMO_COHORT_NAME)
        coordinator = User.objects.get(username=DEMO_COORDINATOR)
        jobs.job_run(job_id=panel_start_for_cohort(cohort=cohort, user=coordinator).pk)
        yield cohort


def test_a_rich_cohorts_reads_and_the_lists_match_the_schema(schema, demo_cohort):
    coordinator = User.objects.get(username=DEMO_COORDINATOR)
    paths, problems = read_all(schema, coordinator, {"cohort_id": demo_cohort.pk})
    assert len(paths) >= 10, paths
    lists, list_problems = read_all(schema, coordinator, {})
    assert len(lists) >= 5, lists
    assert not {**problems, **list_problems}, {**problems, **list_problems}


def test_a_rich_cohorts_reads_as_an_analyst_sees_them_match_the_schema(schema, demo_cohort):
    analyst = User.objects.get(username="demo-analyst")
    paths, problems = read_all(schema, analyst, {"cohort_id": demo_cohort.pk}, refused_allowed=True)
    assert len(paths) >= 10, paths
    lists, list_problems = read_all(schema, analyst, {}, refused_allowed=True)
    assert not {**problems, **list_problems}, {**problems, **list_problems}


def test_an_empty_cohorts_reads_and_the_empty_lists_match_the_schema(schema, coordinator):
    paths, problems = read_all(schema, coordinator, {"cohort_id": factories.make_cohort().pk})
    lists, list_problems = read_all(schema, coordinator, {})
    assert not {**problems, **list_problems}, {**problems, **list_problems}


def test_a_rich_benchmark_sets_reads_match_the_schema(schema, db):
    benchmark = make_set(study_data())
    paths, problems = read_all(schema, factories.make_user("coordinator"), {"benchmark_id": benchmark.pk})
    assert len(paths) >= 3, paths
    assert not problems, problems


def test_an_unstarted_benchmark_sets_reads_match_the_schema(schema, coordinator):
    paths, problems = read_all(schema, coordinator, {"benchmark_id": make_set().pk})
    assert not problems, problems


def test_a_public_runs_reads_match_the_schema_queued_and_completed(schema, roster, memory_broker, coordinator):
    run = run_create(question="Which interventions extend healthy lifespan in mammals?", client_address="192.0.2.9")
    paths, problems = read_all(schema, coordinator, {"run_id": str(run.public_id)})
    assert len(paths) == 2 and not problems, problems
    assert drive(run).status == Run.Status.COMPLETED
    paths, problems = read_all(schema, coordinator, {"run_id": str(run.public_id)})
    assert len(paths) == 2 and not problems, problems

"""Every JSON answer of the API's reads, for rich data and for empty, unstarted data, matches the schema.

Every GET operation answering JSON is read, by the path parameters it needs (READ_PARAMETERS; a read needing others
fails `test_every_json_read_is_read_here` unless NOT_READ gives the reason): the lists, and the reads of the demo
cohort after its AI panel (reviews, research runs, every level assessed), of a cohort with nothing in it, of a
benchmark set holding the appendices' study data and of an unstarted empty set, of a public run queued and completed,
of panel subjects reviewed and not yet reviewed, of an inspiration audit pending and done, of a novelty check pending
and done and of a citation wave pending and done. Each answer is checked with the schema's objects closed
(tests.api_schema_support): a field the schema forgets, a null it does not allow or a type it misstates fails here,
whichever endpoint holds it."""

import re

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from literature.novelty import novelty_check_perform, proposal_novelty_check_request
from literature.waves import citation_wave_perform, citation_wave_start
from reviewapp.benchmarks.models import BenchmarkHypothesis
from reviewapp.demo.cohort import DEMO_COHORT_NAME, DEMO_COORDINATOR, demo_load
from reviewapp.inspiration.services import audit_complete_here, audit_create
from reviewapp.models import Cohort
from reviewapp.panel.models import PanelSubject
from reviewapp.panel.services.critique import comparisons_import
from reviewapp.panel.services.panel import panel_start_for_cohort
from reviewapp.services import jobs
from reviewapp.services.accounts import token_create
from reviewapp.services.cohorts import assignment_add
from screening.llm.models import ModelEndpoint, Roster, RosterMember
from screening.models import Run
from screening.services.runs import run_create
from tests import factories
from tests.api_schema_support import NullsSeen, answer_problems, api_schema
from tests.benchmark_support import hypothesis, judged_set, make_set, scores, task
from tests.benchmarks.test_appendix_analyses import study_data
from tests.inspiration.support import add_inspiration_judge, hand_counted_cohort, scripted_judge
from tests.literature.test_citation_waves import europepmc_lists
from tests.literature.test_literature_sources import source_server  # noqa: F401 (a fixture)
from tests.screening_support import drive, simulated_default_roster

# The path parameters of the reads below: every JSON read needing exactly these is read in each of their states.
READ_PARAMETERS = [
    set(),
    {"cohort_id"},
    {"benchmark_id"},
    {"run_id"},
    {"subject_id"},
    {"audit_id"},
    {"check_id"},
    {"wave_id"},
]
# JSON reads not read here, each with the reason.
NOT_READ: dict[str, str] = {}


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    with django_db_blocker.unblock():
        return api_schema()


@pytest.fixture(scope="module")
def nulls_seen(schema, request):
    """The nulls the answers read here held. After the module, the nullable properties no answer gave as null (and
    those no answer held at all) are in pytest's cache: `pytest --cache-show api/nullable_never_null`."""
    seen = NullsSeen(schema)
    yield seen
    nullable = seen.nullable(json_reads(schema))
    request.config.cache.set(
        "api/nullable_never_null",
        {
            "nullable": len(nullable),
            "never_null": sorted(nullable - seen.null),
            "never_read": sorted(nullable - seen.present),
        },
    )


def json_reads(schema: dict, parameters: set[str] | None = None) -> list[str]:
    """The GET paths answering JSON with 200 whose path parameters are exactly `parameters` (None: all of them)."""
    found = []
    for path, operations in schema["paths"].items():
        answer = operations.get("get", {}).get("responses", {}).get("200", {})
        needs = set(re.findall(r"{(\w+)}", path))
        if "application/json" in answer.get("content", {}) and (parameters is None or needs == parameters):
            found.append(path)
    return found


def test_every_json_read_is_read_here(schema):
    unread = [
        path
        for path in json_reads(schema)
        if set(re.findall(r"{(\w+)}", path)) not in READ_PARAMETERS and path not in NOT_READ
    ]
    assert not unread, f"JSON reads neither read here nor listed in NOT_READ with the reason: {unread}"
    assert set(NOT_READ) <= set(json_reads(schema)), "NOT_READ names a read the schema no longer has"


def read_all(
    seen: NullsSeen, user, values: dict[str, int], *, refused_allowed: bool = False
) -> tuple[list[str], dict[str, list[str]]]:
    """Read every such path for `values`; the paths read (answered 200), and each answer's departures from the
    schema. A refusal counts as a departure, unless `refused_allowed` for a role that may not read everything: every
    read here is one a coordinator may make without a query."""
    schema = seen.schema
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
            seen.record(path, "get", 200, response.json())
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
        # A comparison made elsewhere (no order shown) and a reviewer who has reviewed nothing yet (no median time).
        first, second = cohort.proposals.order_by("task_id", "pk")[:2]
        comparisons_import(
            cohort=cohort, rows=[{"a": first.external_id, "b": second.external_id, "outcome": "a"}], user=coordinator
        )
        assignment_add(cohort=cohort, reviewer=factories.make_user("reviewer"), proposal=first, user=coordinator)
        yield cohort


def test_a_rich_cohorts_reads_and_the_lists_match_the_schema(nulls_seen, demo_cohort):
    coordinator = User.objects.get(username=DEMO_COORDINATOR)
    paths, problems = read_all(nulls_seen, coordinator, {"cohort_id": demo_cohort.pk})
    assert len(paths) >= 10, paths
    lists, list_problems = read_all(nulls_seen, coordinator, {})
    assert len(lists) >= 5, lists
    assert not {**problems, **list_problems}, {**problems, **list_problems}


def test_a_rich_cohorts_reads_as_an_analyst_sees_them_match_the_schema(nulls_seen, demo_cohort):
    analyst = User.objects.get(username="demo-analyst")
    paths, problems = read_all(nulls_seen, analyst, {"cohort_id": demo_cohort.pk}, refused_allowed=True)
    assert len(paths) >= 10, paths
    lists, list_problems = read_all(nulls_seen, analyst, {}, refused_allowed=True)
    assert not {**problems, **list_problems}, {**problems, **list_problems}


def test_an_empty_cohorts_reads_and_the_empty_lists_match_the_schema(nulls_seen, coordinator):
    paths, problems = read_all(nulls_seen, coordinator, {"cohort_id": factories.make_cohort().pk})
    token_create(user=coordinator, name="never used")
    lists, list_problems = read_all(nulls_seen, coordinator, {})
    assert not {**problems, **list_problems}, {**problems, **list_problems}


def test_a_rich_benchmark_sets_reads_match_the_schema(nulls_seen, db):
    benchmark = make_set(study_data())
    paths, problems = read_all(nulls_seen, factories.make_user("coordinator"), {"benchmark_id": benchmark.pk})
    assert len(paths) >= 3, paths
    assert not problems, problems


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(judged_set, id="small and judged"),
        pytest.param(lambda: make_set(judged_set_data()), id="imported and not judged"),
        pytest.param(lambda: make_set(short_list_data()), id="a model saying yes to fewer than the group chose"),
    ],
)
def test_a_sparse_benchmark_sets_reads_match_the_schema(nulls_seen, coordinator, build):
    """Sets too small for most statistics, and hypotheses without scores or outcomes: the estimates left undefined."""
    paths, problems = read_all(nulls_seen, coordinator, {"benchmark_id": build().pk})
    assert len(paths) >= 3 and not problems, problems


def test_an_unstarted_benchmark_sets_reads_match_the_schema(nulls_seen, coordinator):
    paths, problems = read_all(nulls_seen, coordinator, {"benchmark_id": make_set().pk})
    lists, list_problems = read_all(nulls_seen, coordinator, {})
    assert not {**problems, **list_problems}, {**problems, **list_problems}


def test_a_public_runs_reads_match_the_schema_queued_and_completed(nulls_seen, roster, memory_broker, coordinator):
    run = run_create(question="Which interventions extend healthy lifespan in mammals?", client_address="192.0.2.9")
    paths, problems = read_all(nulls_seen, coordinator, {"run_id": str(run.public_id)})
    assert len(paths) == 2 and not problems, problems
    assert drive(run).status == Run.Status.COMPLETED
    paths, problems = read_all(nulls_seen, coordinator, {"run_id": str(run.public_id)})
    assert len(paths) == 2 and not problems, problems


def judged_set_data() -> dict:
    return {"tasks": [task("T1")], "hypotheses": [hypothesis("T1", "a1", selected=True)]}


def short_list_data() -> dict:
    chosen = [hypothesis("T1", key, selected=True, forecasts={"m1": key == "a1", "m2": True}) for key in ("a1", "a2")]
    return {
        "tasks": [task("T1")],
        "hypotheses": [*chosen, hypothesis("T1", "a3", selected=False, forecasts={"m1": False, "m2": False})],
        "scores": [
            *scores("T1", "a1", [0, 4, 4, 1]),
            *scores("T1", "a2", [0, 3, 0, 3]),
            *scores("T1", "a3", [1, 0, 0, 0]),
        ],
    }


def test_panel_subjects_reviewed_and_not_yet_reviewed_match_the_schema(nulls_seen, demo_cohort):
    coordinator = User.objects.get(username=DEMO_COORDINATOR)
    reviewed = PanelSubject.objects.filter(proposal__in=demo_cohort.proposals.all()).order_by("pk")[:3]
    waiting = [
        PanelSubject.objects.create(proposal=factories.make_proposal(external_id="P-WAIT")),
        PanelSubject.objects.create(
            benchmark_hypothesis=BenchmarkHypothesis.objects.get(benchmark=make_set(judged_set_data()), key="a1")
        ),
    ]
    assert len(reviewed) == 3 and waiting[1].benchmark_hypothesis is not None
    for subject in [*reviewed, *waiting]:
        paths, problems = read_all(nulls_seen, coordinator, {"subject_id": subject.pk})
        assert paths and not problems, problems


def test_an_inspiration_audit_pending_and_done_matches_the_schema(nulls_seen, script, server, coordinator):
    script.inspire = scripted_judge
    add_inspiration_judge(server.base_url)
    audit = audit_create(cohort=hand_counted_cohort(), user=coordinator, enqueue=False)
    paths, problems = read_all(nulls_seen, coordinator, {"audit_id": audit.pk})
    lists, list_problems = read_all(nulls_seen, coordinator, {})
    assert len(paths) == 2 and not {**problems, **list_problems}, {**problems, **list_problems}
    audit_complete_here(audit_id=audit.pk)
    paths, problems = read_all(nulls_seen, coordinator, {"audit_id": audit.pk})
    assert len(paths) == 2 and not problems, problems


def test_a_novelty_check_pending_and_done_matches_the_schema(nulls_seen, memory_broker, coordinator):
    roster = Roster.objects.create(name="Default", is_default=True)
    endpoint = ModelEndpoint.objects.create(
        display_name="Judge", company="Example", protocol="openai", base_url="http://127.0.0.1:9", model_id="judge"
    )
    RosterMember.objects.create(roster=roster, endpoint=endpoint, role=RosterMember.Role.NOVELTY)
    check = proposal_novelty_check_request(proposal=factories.make_proposal(), endpoint=endpoint)
    paths, problems = read_all(nulls_seen, coordinator, {"check_id": check.pk})
    assert len(paths) == 1 and not problems, problems
    novelty_check_perform(check_id=check.pk)  # an empty corpus: a verdict without a model call
    paths, problems = read_all(nulls_seen, coordinator, {"check_id": check.pk})
    assert len(paths) == 1 and not problems, problems


def test_a_citation_wave_pending_and_done_matches_the_schema(nulls_seen, source_server, coordinator):  # noqa: F811
    source_server.app = europepmc_lists
    wave = citation_wave_start(anchors=["PMC:PMC555"], enqueue=False)
    paths, problems = read_all(nulls_seen, coordinator, {"wave_id": wave.pk})
    assert len(paths) == 1 and not problems, problems
    citation_wave_perform(wave_id=wave.pk)
    paths, problems = read_all(nulls_seen, coordinator, {"wave_id": wave.pk})
    assert len(paths) == 1 and not problems, problems


def test_the_nullable_properties_never_null_are_named_by_their_component():
    component = "#/components/schemas/"
    answer = {"content": {"application/json": {"schema": {"$ref": component + "X"}}}}
    schema = {
        "paths": {"/x": {"get": {"responses": {"200": answer}}}},
        "components": {
            "schemas": {
                "X": {
                    "type": "object",
                    "properties": {
                        "a": {"type": "integer", "nullable": True},
                        "b": {"allOf": [{"$ref": component + "Y"}], "nullable": True},
                        "c": {"type": "array", "items": {"$ref": component + "Y"}},
                        "e": {"type": "string"},
                    },
                },
                "Y": {"type": "object", "properties": {"d": {"type": "string", "nullable": True}}},
            }
        },
    }
    seen = NullsSeen(schema)
    seen.record("/x", "get", 200, {"a": None, "b": {"d": "x"}, "c": [{"d": None}], "e": "text"})
    assert seen.nullable(["/x"]) == {"X.a", "X.b", "Y.d"}
    assert seen.never_null(["/x"]) == ["X.b"]

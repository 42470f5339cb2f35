"""The API of the levels above a single hypothesis: rubrics, paths, research runs, contribution families and the
evaluation summary, after a cohort's AI panel ran against a model server speaking the providers' protocol."""

import json

import pytest
from rest_framework.test import APIClient

from reviewapp.models import AuditEvent, Cohort
from reviewapp.panel.models import Assessment, ContributionFamily
from reviewapp.panel.services.panel import panel_start_for_cohort
from reviewapp.services import jobs
from reviewapp.services.imports import cohort_import_file
from tests import factories
from tests.api_schema_support import api_schema, assert_conforms
from tests.panel.support import level_reply, proposal

PATHS = "/api/v1/cohorts/{cohort_id}/paths"
RUNS = "/api/v1/cohorts/{cohort_id}/research-runs"


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    with django_db_blocker.unblock():
        return api_schema()


@pytest.fixture
def cohort(models, coordinator) -> Cohort:
    cohort = factories.make_cohort(name="Levels")
    content = {
        "tasks": [{"key": "T-A", "question": "Why do mice age?"}],
        "research_runs": [{"id": "run-1", "task": "T-A", "author": "M", "budget": 5, "budget_unit": "USD"}],
        "proposals": [
            proposal("r1", "T-A", author="M", research_run="run-1"),
            proposal("a", "T-A", author="M", research_run="run-1", parents=["r1"]),
            proposal("b", "T-A", author="M", research_run="run-1", parents=["r1"]),
            proposal("n1", "T-A", author="N"),
            proposal("n2", "T-A", author="N", parents=["n1"]),
            proposal("dup", "T-A", author="N", statement=proposal("a", "T-A")["statement"].upper()),
        ],
        "decisions": [{"run": "run-1", "seq": 1, "kind": "branch", "proposals": ["a", "b"], "budget": 2}],
        "delivery": [{"proposal": "a", "stage": "selected", "status": "passed"}],
    }
    cohort_import_file(cohort=cohort, filename="levels.json", content=json.dumps(content).encode(), user=coordinator)
    return cohort


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_the_levels_read_through_the_api_after_the_panel(cohort, script, coordinator, analyst, schema):
    api = client_for(analyst)
    # Before the panel: every path and run is there, unassessed.
    paths = api.get(f"/api/v1/cohorts/{cohort.pk}/paths").json()
    assert paths["count"] == 3 and all(item["assessment"] is None for item in paths["results"])
    assert_conforms(schema, PATHS, paths)
    runs = api.get(f"/api/v1/cohorts/{cohort.pk}/research-runs").json()
    assert runs["count"] == 3 and all(item["assessment"] is None for item in runs["results"])
    assert_conforms(schema, RUNS, runs)

    script.levels["run"] = [level_reply("dfm-runs-v1", {"budget_discipline": "inapplicable"})]
    jobs.job_run(job_id=panel_start_for_cohort(cohort=cohort, user=coordinator).pk)

    rubrics = api.get("/api/v1/ai-panel/rubrics").json()
    assert [item["version"] for item in rubrics["results"]] == ["dfm-paths-v1", "dfm-runs-v1"]
    assert [d["weight"] for d in rubrics["results"][0]["dimensions"]] == [5, 30, 20, 20, 10, 10, 5]

    paths = api.get(f"/api/v1/cohorts/{cohort.pk}/paths").json()
    assert paths["count"] == 3
    assert [(p["terminal"], p["proposals"]) for p in paths["results"]] == [
        ("a", ["r1", "a"]),
        ("b", ["r1", "b"]),
        ("n2", ["n1", "n2"]),
    ]
    first = paths["results"][0]["assessment"]
    assert first["scope"] == "full" and first["composite"] == 75.0 and first["status"] == "automated"
    assert len(first["snapshot"]) == 64 and first["weights"]["cumulative_progress"] == 30
    assert_conforms(schema, PATHS, paths)

    answer = api.get(f"/api/v1/cohorts/{cohort.pk}/research-runs").json()
    assert_conforms(schema, RUNS, answer)
    runs = {run["id"]: run for run in answer["results"]}
    assert set(runs) == {"run-1", "n1", "dup"}
    assert runs["run-1"]["budget_recorded"] and runs["run-1"]["transitions"] == 2
    assert runs["run-1"]["assessment"]["scope"] == "restricted" and runs["run-1"]["assessment"]["mask"] == "1111101"
    assert runs["run-1"]["delivery"]["selected"] == {"passed": 1, "failed": 0, "unattempted": 0, "not_recorded": 2}
    # No budget recorded: the allocation dimensions are unknown, whatever the judge said, and no composite.
    assert runs["n1"]["assessment"]["dimensions"]["direction_allocation"] == "unknown"
    assert runs["n1"]["assessment"]["composite"] is None and runs["n1"]["assessment"]["scope"] == "incomplete"
    assert runs["dup"]["assessment"] is None  # a single version: no graph to judge

    evaluation = api.get(f"/api/v1/cohorts/{cohort.pk}/evaluation").json()
    assert evaluation["transitions"]["total"] == 3 and evaluation["transitions"]["judged"] == 3
    assert evaluation["transitions"]["substantive_progress"] == {"n": 3, "rate": 1.0}
    assert evaluation["paths"]["complete"] == 3 and evaluation["paths"]["mean_composite"] == 75.0
    assert evaluation["runs"]["restricted"] == [{"mask": "1111101", "n": 1, "mean": 75.0}]
    assert evaluation["runs"]["incomplete"] == 1 and evaluation["runs"]["complete"] == 0
    assert evaluation["families"] == {"total": 2, "with_evidence": 0}
    assert [item["author"] for item in evaluation["by_author"]] == ["M", "N"]
    assert evaluation["by_author"][0]["hypotheses"]["total"] == 3


def test_coordinators_record_families_and_assessment_status(cohort, script, coordinator):
    api = client_for(coordinator)
    families = api.get(f"/api/v1/cohorts/{cohort.pk}/contribution-families").json()["results"]
    # r1, a, b share ancestry and "dup" repeats a's statement: one family; n1 and n2 another.
    assert [family["members"] for family in families] == [["a", "b", "dup", "r1"], ["n1", "n2"]]
    family = families[1]
    url = f"/api/v1/cohorts/{cohort.pk}/contribution-families/{family['id']}"
    refused = api.put(url, {"maturity": "confirmed"}, format="json")
    assert refused.status_code == 400 and "maturity" in json.dumps(refused.json())
    answer = api.put(
        url, {"question": "Q?", "maturity": "diagnostically_examined", "members": ["dup"]}, format="json"
    ).json()
    assert answer["maturity"] == "diagnostically_examined" and answer["members"] == ["dup", "n1", "n2"]
    assert ContributionFamily.objects.get(pk=families[0]["id"]).maturity == "proposed"
    assert AuditEvent.objects.filter(action="family_record", target_id=str(family["id"])).exists()
    assert api.get(f"/api/v1/cohorts/{cohort.pk}/evaluation").json()["families"]["with_evidence"] == 1

    jobs.job_run(job_id=panel_start_for_cohort(cohort=cohort, user=coordinator).pk)
    assessment = Assessment.objects.filter(cohort=cohort).first()
    status_url = f"/api/v1/cohorts/{cohort.pk}/assessments/{assessment.pk}/status"
    assert api.put(status_url, {"status": "disputed"}, format="json").json()["status"] == "disputed"
    assert AuditEvent.objects.get(action="assessment_review_status").data["after"] == "disputed"


def test_reviewers_and_analysts_cannot_record(cohort, analyst):
    reviewer = factories.make_user("reviewer")
    family_id = ContributionFamily.objects.create(cohort=cohort).pk
    for url in (
        f"/api/v1/cohorts/{cohort.pk}/paths",
        f"/api/v1/cohorts/{cohort.pk}/research-runs",
        f"/api/v1/cohorts/{cohort.pk}/contribution-families",
        f"/api/v1/cohorts/{cohort.pk}/evaluation",
        "/api/v1/ai-panel/rubrics",
    ):
        assert client_for(reviewer).get(url).status_code == 403, url
    put = f"/api/v1/cohorts/{cohort.pk}/contribution-families/{family_id}"
    assert client_for(analyst).put(put, {"status": "supported"}, format="json").status_code == 403
    assert client_for(reviewer).put(put, {"status": "supported"}, format="json").status_code == 403


def test_coordinators_set_the_review_status_of_any_model_answer(cohort, script, coordinator, analyst):
    from reviewapp.panel.models import PanelReview, RevisionJudgment

    jobs.job_run(job_id=panel_start_for_cohort(cohort=cohort, user=coordinator).pk)
    review, judgment = PanelReview.objects.first(), RevisionJudgment.objects.first()
    assert len(review.packet_sha256) == 64 and len(judgment.packet_sha256) == 64
    url = "/api/v1/ai-panel/review-status"
    body = {"record": "panel_review", "id": review.pk, "status": "checked"}
    assert client_for(analyst).put(url, body, format="json").status_code == 403
    assert client_for(coordinator).put(url, body, format="json").json()["status"] == "checked"
    answer = client_for(coordinator).put(
        url, {"record": "revision_judgment", "id": judgment.pk, "status": "disputed"}, format="json"
    )
    assert answer.json() == {"record": "revision_judgment", "id": judgment.pk, "status": "disputed"}
    assert RevisionJudgment.objects.get(pk=judgment.pk).review_status == "disputed"
    assert client_for(coordinator).put(url, {**body, "id": 999_999}, format="json").status_code == 404
    events = AuditEvent.objects.filter(action="assessment_review_status").values_list("target_type", "data")
    assert sorted(events) == [
        ("panel_review", {"before": "automated", "after": "checked"}),
        ("revision_judgment", {"before": "automated", "after": "disputed"}),
    ]

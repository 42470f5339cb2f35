"""The panel's API: the paths and fields the product promises, who may call what, and the error contract."""

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from reviewapp.panel.models import Comparison, PanelSubject
from reviewapp.panel.profile import DIMENSION_KEYS
from tests.api_schema_support import api_schema, assert_conforms
from tests.benchmark_support import hypothesis, make_set, task
from tests.panel.support import make_cohort, proposal, review_reply


@pytest.fixture
def api():
    return APIClient()


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    with django_db_blocker.unblock():
        return api_schema()


@pytest.fixture
def cohort(db, coordinator):
    return make_cohort(
        [proposal("p1", "T-A"), proposal("p2", "T-A"), proposal("p3", "T-A", parents=["p1"]), proposal("q1", "T-B")],
        user=coordinator,
    )


def api_get(api, user, url: str) -> dict:
    api.force_authenticate(user)
    answer = api.get(url)
    assert answer.status_code == 200, answer.content[:300]
    return answer.json()


def test_starting_the_panel_answers_202_with_the_job(api, models, cohort, coordinator, analyst, reviewer):
    url = f"/api/v1/cohorts/{cohort.pk}/ai-panel"
    for user in (analyst, reviewer):
        api.force_authenticate(user)
        assert api.post(url, {}, format="json").status_code == 403
    api.force_authenticate(coordinator)
    answer = api.post(url, {}, format="json")
    assert answer.status_code == 202
    assert answer.json()["state"] == "queued" and answer.json()["url"] == f"/jobs/{answer.json()['job']}/"
    again = api.post(url, {"redo": True}, format="json")
    assert again.status_code == 409 and again.json()["error"] == "panel_running"
    assert again.json()["problems"][0]["field"] == "job"
    assert api.post(url, {"redo": "perhaps"}, format="json").json()["error"] == "invalid_body"
    assert api.post("/api/v1/cohorts/999999/ai-panel", {}, format="json").status_code == 404


def test_the_panel_reads_as_documented(api, models, script, cohort, coordinator, analyst, run_job, schema):
    unstarted = api_get(api, analyst, f"/api/v1/cohorts/{cohort.pk}/ai-panel")
    assert unstarted["state"] == "not_started" and unstarted["job"] is None
    assert_conforms(schema, "/api/v1/cohorts/{cohort_id}/ai-panel", unstarted)
    statement = proposal("p2", "T-A")["statement"]
    script.reviews[("rubric_judge", statement)] = [
        review_reply({"novelty": "unknown", "actionability": "inapplicable"}, eligible="unknown")
    ]
    script.reviews[("domain_scientist", statement)] = [review_reply({"novelty": "unknown"})]
    script.reviews[("methods_reviewer", statement)] = ["no", "still no"]
    api.force_authenticate(coordinator)
    run_job(api.post(f"/api/v1/cohorts/{cohort.pk}/ai-panel", {}, format="json").json()["job"])
    api.force_authenticate(analyst)
    body = api.get(f"/api/v1/cohorts/{cohort.pk}/ai-panel").json()
    assert body["state"] == "succeeded" and body["prompt_version"] == "panel-v1" and body["simulated"] is False
    assert body["dimensions"][0] == {"key": "importance", "weight": 20}
    assert [item["key"] for item in body["dimensions"]] == list(DIMENSION_KEYS)
    rows = {row["id"]: row for row in body["proposals"]}
    assert set(rows) == {"p1", "p2", "p3", "q1"}
    p1 = rows["p1"]
    assert p1["q"] == 5.0 and p1["complete"] is True and p1["medians"]["importance"] == 5.0
    assert {review["role"] for review in p1["reviews"]} == {"rubric_judge", "domain_scientist", "methods_reviewer"}
    assert set(p1["reviews"][0]) >= {"role", "eligible", "scores", "rationale", "simulated"}
    assert p1["reviews"][0]["eligible"] is True and p1["reviews"][0]["simulated"] is False
    p2 = rows["p2"]
    assert p2["q"] is None and p2["complete"] is False and p2["medians"]["novelty"] is None
    assert p2["coverage"] == {
        "reviews": 2,
        "failed_roles": ["methods_reviewer"],
        "eligible_votes": 1,
        "medians_known": 6,  # novelty: two unknown; actionability: one inapplicable, one known
        "inapplicable": [],
    }
    rubric = next(review for review in p2["reviews"] if review["role"] == "rubric_judge")
    assert rubric["eligible"] == "unknown" and rubric["scores"]["novelty"] == "unknown"
    assert rubric["scores"]["actionability"] == "inapplicable"
    failed = next(review for review in p2["reviews"] if review["role"] == "methods_reviewer")
    assert failed["state"] == "failed" and failed["scores"] == {} and failed["eligible"] is None
    assert (
        rows["p3"]["revision"]["predecessor"] == "p1" and rows["p3"]["revision"]["category"] == "substantive_progress"
    )
    assert rows["p3"]["revision"]["delta_q"] == 0.0
    assert body["revisions"]["judged"] == 1 and body["revisions"]["substantive_progress_rate"] == 1.0
    assert_conforms(schema, "/api/v1/cohorts/{cohort_id}/ai-panel", body)


def test_comparisons_import_list_ratings_and_recompute(api, models, cohort, coordinator, analyst, schema):
    url = f"/api/v1/cohorts/{cohort.pk}/comparisons"
    api.force_authenticate(analyst)
    assert api.post(url, {"comparisons": [{"a": "p1", "b": "p2", "outcome": "a"}]}, format="json").status_code == 403
    api.force_authenticate(coordinator)
    bad = api.post(
        url,
        {
            "comparisons": [
                {"a": "p1", "b": "p2", "outcome": "a"},
                {"a": "p1", "b": "q1", "outcome": "b"},
                {"a": "p1", "b": "nope", "outcome": "tie"},
            ]
        },
        format="json",
    )
    assert bad.status_code == 400 and bad.json()["error"] == "invalid_comparisons"
    assert [(row["row"], row["field"]) for row in bad.json()["problems"]] == [(2, "b"), (3, "b")]
    wrong = api.post(url, {"comparisons": [{"a": "p1", "b": "p2", "outcome": "first"}]}, format="json")
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_body"
    assert not Comparison.objects.exists()
    made = api.post(
        url,
        {"comparisons": [{"a": "p1", "b": "p2", "outcome": "a"}, {"a": "p3", "b": "p2", "outcome": "insufficient"}]},
        format="json",
    )
    assert made.status_code == 201 and made.json() == {"created": 2, "first_seq": 1, "last_seq": 2}
    api.force_authenticate(analyst)
    log = api.get(url).json()["comparisons"]
    assert [(row["seq"], row["a"], row["b"], row["outcome"], row["source"]) for row in log] == [
        (1, "p1", "p2", "a", "import"),
        (2, "p3", "p2", "insufficient", "import"),
    ]
    ratings = api.get(f"/api/v1/cohorts/{cohort.pk}/ratings").json()
    assert ratings["parameters"]["kappa"] == 2 and ratings["parameters"]["draw_probability"] == 0.1
    assert_conforms(schema, "/api/v1/cohorts/{cohort_id}/ratings", ratings)
    by_id = {row["proposal"]: row for row in ratings["ratings"]}
    assert set(by_id["p1"]) == {"proposal", "task", "mu", "sigma", "conservative", "rank", "comparisons"}
    assert by_id["p1"]["task"] == "T-A" and by_id["p1"]["rank"] == 1.0 and by_id["p1"]["comparisons"] == 1
    # p3 only abstained and q1 was never compared: the prior, and no rank.
    assert by_id["p3"]["comparisons"] == 0 and by_id["p3"]["rank"] is None and by_id["q1"]["rank"] is None
    assert by_id["p1"]["conservative"] == pytest.approx(by_id["p1"]["mu"] - 2 * by_id["p1"]["sigma"])
    assert api.post(f"/api/v1/cohorts/{cohort.pk}/ratings/recompute").status_code == 403
    api.force_authenticate(coordinator)
    recomputed = api.post(f"/api/v1/cohorts/{cohort.pk}/ratings/recompute").json()
    assert recomputed["replayed"] == 2 and recomputed["ratings"] == ratings["ratings"]
    assert_conforms(schema, "/api/v1/cohorts/{cohort_id}/ratings/recompute", recomputed, method="post")


def test_starting_the_critique(api, models, cohort, coordinator):
    api.force_authenticate(coordinator)
    url = f"/api/v1/cohorts/{cohort.pk}/comparisons/run"
    assert api.post(url, {"per_proposal": 0, "seed": 1}, format="json").json()["error"] == "invalid_body"
    assert api.post(url, {"seed": 1}, format="json").json()["error"] == "invalid_body"
    answer = api.post(url, {"per_proposal": 2, "seed": 7}, format="json")
    assert answer.status_code == 202 and answer.json()["state"] == "queued"
    assert api.post(url, {"per_proposal": 2, "seed": 7}, format="json").json()["error"] == "critique_running"


def test_calibration_answers_every_figure_with_its_interval(api, models, cohort, analyst, schema):
    api.force_authenticate(analyst)
    body = api.get(f"/api/v1/cohorts/{cohort.pk}/calibration").json()
    assert body["proposals"] == 0
    figures = [
        body["q_vs_overall"],
        body["s_vs_overall_within_tasks"],
        *body["dimensions"].values(),
        body["reject_share"]["top_quarter"],
        body["reject_share"]["bottom_quarter"],
    ]
    for figure in figures:
        assert {"estimate", "low", "high", "n"} <= set(figure)
    assert body["dimensions"]["novelty"]["criterion"] == "advance_over_known_work"
    assert_conforms(schema, "/api/v1/cohorts/{cohort_id}/calibration", body)


def test_prompts_and_subjects_and_hypotheses(api, models, script, coordinator, analyst, run_job, schema):
    benchmark = make_set({"tasks": [task("B1")], "hypotheses": [hypothesis("B1", "h1")]}, name="API set")
    api.force_authenticate(coordinator)
    assert (
        api.post("/api/v1/ai-panel/hypotheses", {"hypotheses": ["h1"]}, format="json").json()["error"] == "invalid_body"
    )
    missing = api.post("/api/v1/ai-panel/hypotheses", {"benchmark": 999999, "hypotheses": ["h1"]}, format="json")
    assert missing.status_code == 404
    answer = api.post("/api/v1/ai-panel/hypotheses", {"benchmark": benchmark.pk, "hypotheses": ["h1"]}, format="json")
    assert answer.status_code == 202
    run_job(answer.json()["job"])
    subject = PanelSubject.objects.get(benchmark_hypothesis__key="h1")
    api.force_authenticate(analyst)
    profile = api.get(f"/api/v1/ai-panel/subjects/{subject.pk}").json()
    assert profile["q"] == 5.0 and profile["title"] == "h1 of API set" and len(profile["reviews"]) == 3
    assert_conforms(schema, "/api/v1/ai-panel/subjects/{subject_id}", profile)
    assert api.get("/api/v1/ai-panel/subjects/999999").status_code == 404
    prompts = api.get("/api/v1/ai-panel/prompts").json()
    assert prompts["version"] == "panel-v1"
    assert {prompt["kind"] for prompt in prompts["prompts"]} == {"rubric_judge", "domain_scientist", "methods_reviewer"}
    assert all(prompt["current"] for prompt in prompts["prompts"])


def test_reviewers_reach_none_of_the_panel_api(api, cohort, reviewer):
    api.force_authenticate(reviewer)
    for path in (
        f"/api/v1/cohorts/{cohort.pk}/ai-panel",
        f"/api/v1/cohorts/{cohort.pk}/comparisons",
        f"/api/v1/cohorts/{cohort.pk}/ratings",
        f"/api/v1/cohorts/{cohort.pk}/calibration",
        "/api/v1/ai-panel/prompts",
        reverse("api-panel-subject", args=[1]),
    ):
        answer = api.get(path)
        assert answer.status_code == 403 and answer.json()["error"] == "forbidden", path


def test_the_comparisons_page_and_the_api_refuse_the_same_rows_with_the_same_problems(
    client, api, models, cohort, coordinator
):
    """The page reads its box of CSV lines into the rows the API's declaration checks: a row the API refuses is refused
    on the page with the same problem, named by its line."""
    page = reverse("panel-comparisons-import", args=[cohort.pk])
    url = f"/api/v1/cohorts/{cohort.pk}/comparisons"
    client.force_login(coordinator)
    api.force_authenticate(coordinator)
    typed = "a,b,outcome\np1,p2,a\n\np2,p3,first\np3,p1\n"
    refused = client.post(page, {"comparisons": typed}, follow=True)
    shown = [str(message) for message in refused.context["messages"]]
    assert shown[0] == "The comparisons were not added."
    assert shown[1].startswith("Line 2, outcome: ") and "first" in shown[1]
    assert shown[2] == "Line 3: It has 2 values; each line is a,b,outcome."
    rows = [{"a": "p1", "b": "p2", "outcome": "a"}, {"a": "p2", "b": "p3", "outcome": "first"}]
    answer = api.post(url, {"comparisons": rows}, format="json")
    assert answer.status_code == 400 and answer.json()["error"] == "invalid_body"
    assert answer.json()["problems"] == [{"row": 2, "field": "outcome", "message": shown[1].split(": ", 1)[1]}]
    # Rows the declaration accepts and the cohort refuses: the service's problems, the same on both.
    unknown = client.post(page, {"comparisons": "p1,p2,a\np1,zz,b\n"}, follow=True)
    from_api = api.post(
        url,
        {"comparisons": [{"a": "p1", "b": "p2", "outcome": "a"}, {"a": "p1", "b": "zz", "outcome": "b"}]},
        format="json",
    )
    assert from_api.status_code == 400 and from_api.json()["problems"] == [
        {"row": 2, "field": "b", "message": "“zz” is not a proposal of this cohort."}
    ]
    assert [str(message) for message in unknown.context["messages"]][1:] == [
        "Line 2, b: “zz” is not a proposal of this cohort."
    ]
    empty = client.post(page, {"comparisons": "a,b,outcome\n"}, follow=True)
    assert [str(message) for message in empty.context["messages"]][1] == "comparisons: This list may not be empty."
    assert not Comparison.objects.exists()
    added = client.post(page, {"comparisons": "A, B, Outcome\np1,p2,a\np3,p2,tie\n"}, follow=True)
    assert "2 comparisons added to the log (#1–#2)" in added.content.decode()
    assert list(Comparison.objects.order_by("seq").values_list("a__external_id", "b__external_id", "outcome")) == [
        ("p1", "p2", "a"),
        ("p3", "p2", "tie"),
    ]

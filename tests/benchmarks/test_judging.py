"""Judges and outcomes: the outcome rule of SPEC §6 from stored scores, the judging task against model servers
(recorded calls, the one "ask once more"), the simulated server's judge, and the judge table."""

import json
import re

import pytest

from reviewapp.benchmarks.models import Judge, JudgeScore
from reviewapp.benchmarks.selectors import benchmark_rows
from reviewapp.benchmarks.services.imports import benchmark_import_file
from reviewapp.benchmarks.services.judging import (
    JUDGE_QUESTION,
    judging_start,
    parse_judge_scores,
)
from reviewapp.benchmarks.services.sets import BenchmarkError, judge_add
from reviewapp.models import BackgroundJob
from reviewapp.services import jobs
from screening.llm.models import ModelCall, ModelEndpoint
from screening.llm.simulator import SimulatorConfig, start_simulator
from tests.benchmark_support import JUDGES, hypothesis, import_json, make_set, scores, task
from tests.screening_support import Script, ScriptedModelServer

# Judging jobs write their result files under VAR_DIR: a temporary one here.
pytestmark = pytest.mark.usefixtures("exports_home")

_ITEM = re.compile(r"^\[(H\d+)\] (.*)$", re.MULTILINE)

# Scores of the three other-company judges (Beta, Gamma, Delta) → primary, strict, borderline.
SPLITS = {
    "three votes of 3": ((3, 3, 3), "positive", True, False, False),
    "three votes of 5": ((5, 5, 4), "positive", True, True, False),
    "two of three at 3, one at 0": ((3, 3, 0), "positive", True, False, True),
    "two of three at 4": ((4, 4, 2), "positive", True, True, True),
    "one 4 and one 3": ((4, 3, 1), "positive", True, False, True),
    "one of three at 3": ((3, 2, 0), "negative", False, False, True),
    "one 5, two low": ((5, 1, 2), "negative", False, False, True),
    "none at 3": ((2, 2, 2), "negative", False, False, False),
    "all zero": ((0, 0, 0), "negative", False, False, False),
}


def _outcome(other_scores, same_company_score=0, generator="Gen Alpha"):
    """The stored outcome of one hypothesis by Gen Alpha (Alpha Labs), judged by the four judges of the set."""
    benchmark = make_set(
        {
            "tasks": [task("T1")],
            "hypotheses": [hypothesis("T1", "h1", generator)],
            "scores": scores("T1", "h1", [same_company_score, *other_scores]),
        }
    )
    (row,) = benchmark_rows(benchmark)
    return row


@pytest.mark.parametrize("split", list(SPLITS))
def test_outcome_at_every_vote_split(db, split):
    others, status, primary, strict, borderline = SPLITS[split]
    row = _outcome(others)
    assert (row.status, row.primary, row.strict, row.borderline) == (status, primary, strict, borderline)
    assert row.excluded_judges == ("Judge Alpha",)


@pytest.mark.parametrize("missing", [0, 1, 2])
def test_a_missing_judge_makes_the_hypothesis_not_judged_never_negative(db, missing):
    others = [0, 0, 0]
    others[missing] = None
    row = _outcome(others, same_company_score=5)
    assert row.status == "not_judged"
    assert (row.primary, row.strict, row.borderline) == (None, None, None)


def test_the_judge_of_the_generators_company_is_left_out(db):
    # The same-company judge's 5 would make it 2 of 4; among the other three it is 1 of 3: negative.
    row = _outcome((5, 0, 0), same_company_score=5)
    assert row.status == "negative" and row.borderline is True
    # And its low score cannot sink a hypothesis the others accept.
    assert _outcome((4, 4, 4), same_company_score=0).strict is True


def test_the_exclusion_follows_the_generator(db):
    # Gen Beta's judge is Judge Beta (the second in the listed order), whose 0 is now the one left out.
    benchmark = make_set(
        {
            "tasks": [task("T1")],
            "hypotheses": [hypothesis("T1", "h1", "Gen Beta")],
            "scores": scores("T1", "h1", [3, 0, 3, 1]),
        }
    )
    (row,) = benchmark_rows(benchmark)
    assert row.excluded_judges == ("Judge Beta",) and row.status == "positive" and row.borderline


def test_a_generator_with_no_judge_of_its_company_is_not_judged_rather_than_guessed(db):
    row = _outcome((3, 3, 3), same_company_score=3, generator="Gen Unknown")
    assert row.outcome is None and row.status == "not_judged" and "three" in row.outcome_note


# Reading judges' replies --------------------------------------------------------------------------------------


def test_a_complete_reply_gives_every_score_and_reason():
    reply = parse_judge_scores(
        '```json\n{"scores": [{"id": "H1", "score": 4, "reason": "Same factor."}, {"id": "[H2]", "score": 0}]}\n```',
        ["H1", "H2"],
    )
    assert reply.complete and reply.scores == {"H1": (4, "Same factor."), "H2": (0, "")}


@pytest.mark.parametrize(
    "text",
    [
        '{"scores": [{"id": "H1", "score": 4}]}',  # H2 missing
        '{"scores": [{"id": "H1", "score": 4}, {"id": "H2", "score": 6}]}',  # out of range
        '{"scores": [{"id": "H1", "score": 4}, {"id": "H2", "score": "3"}]}',  # not a JSON integer
        '{"scores": [{"id": "H1", "score": 4}, {"id": "H2", "score": 1}, {"id": "H2", "score": 2}]}',  # twice
        '{"scores": [{"id": "H1", "score": 4}, {"id": "H2", "score": 2.5}]}',
    ],
)
def test_an_incomplete_reply_keeps_only_its_valid_scores(text):
    reply = parse_judge_scores(text, ["H1", "H2"])
    assert reply.parsed and not reply.complete
    assert reply.scores["H1"] == (4, "") and reply.scores["H2"] is None and reply.problems


def test_a_reply_without_json_gives_no_score():
    reply = parse_judge_scores("I will read the hypotheses carefully and reply later.", ["H1"])
    assert not reply.parsed and reply.scores == {"H1": None}


# The judging task ---------------------------------------------------------------------------------------------


class JudgeScript(Script):
    """The team's scripted server, also answering judging requests: judge model → (items, attempt) → reply."""

    def __init__(self):
        super().__init__()
        self.judge = {}
        self.judge_requests = []

    def answer(self, model, system, user):
        if JUDGE_QUESTION not in user:
            return super().answer(model, system, user)
        with self._lock:
            self.judge_requests.append((model, system, user))
            self.attempts[(model, "judge")] += 1
            attempt = self.attempts[(model, "judge")]
        items = _ITEM.findall(user)
        default = lambda items, attempt: json.dumps(  # noqa: E731
            {"scores": [{"id": label, "score": 3, "reason": "Same factor and direction."} for label, _ in items]}
        )
        return self.judge.get(model, default)(items, attempt)


@pytest.fixture
def judge_server():
    script = JudgeScript()
    server = ScriptedModelServer(script)
    yield script, server
    server.stop()


def _model_judge(benchmark, base_url: str, model_id: str, company: str, simulated: bool = False) -> Judge:
    endpoint = ModelEndpoint.objects.create(
        display_name=f"Judge model {model_id}",
        company=company,
        protocol=ModelEndpoint.Protocol.OPENAI,
        base_url=base_url,
        model_id=model_id,
        is_simulated=simulated,
        api_key_env="SIMULATED_JUDGE_API_KEY" if simulated else "",
        timeout_seconds=10,
    )
    return judge_add(benchmark=benchmark, endpoint=endpoint)


def _run_jobs(created: list[BackgroundJob]) -> list[BackgroundJob]:
    for job in created:
        jobs.job_run(job_id=job.pk)
    return [BackgroundJob.objects.get(pk=job.pk) for job in created]


@pytest.fixture
def judged_set(db):
    hypotheses = [hypothesis("T1", f"h{n}", "Gen Alpha" if n % 2 else "Gen Beta") for n in range(1, 26)]
    hypotheses.append(hypothesis("T2", "h1", "Gen Beta"))
    return make_set({"tasks": [task("T1"), task("T2")], "hypotheses": hypotheses})


def test_judging_scores_every_hypothesis_with_recorded_calls(judged_set, judge_server, coordinator):
    script, server = judge_server
    for model_id, company in (("judge-alpha", "Alpha Labs"), ("judge-beta", "Beta AI"), ("judge-gamma", "Gamma Inc")):
        _model_judge(judged_set, server.base_url, model_id, company)
    judge_add(benchmark=judged_set, name="Dr Delta", company="Delta")  # a person: imported, never asked
    done = _run_jobs(judging_start(benchmark=judged_set, user=coordinator))
    assert [job.state for job in done] == ["succeeded"] * 3
    assert [(job.progress, job.total) for job in done] == [(26, 26)] * 3
    assert JudgeScore.objects.filter(judge__endpoint__isnull=False).count() == 3 * 26
    # Task T1's 25 hypotheses go in two requests (20 + 5), T2's one in one: three recorded calls per judge.
    calls = ModelCall.objects.filter(purpose="judge")
    assert calls.count() == 9 and all(call.run_id is None and call.usable for call in calls)
    score = JudgeScore.objects.filter(judge__name="Judge model judge-beta").first()
    assert score.model_call.purpose == "judge" and score.reason == "Same factor and direction."
    # Outcomes: Dr Delta has not scored, so Gen Beta's hypotheses (judge-beta excluded) lack a third score.
    rows = benchmark_rows(judged_set)
    assert {row.status for row in rows if row.generator == "Gen Beta"} == {"not_judged"}
    delta = (("Dr Delta", "Delta"),)
    import_json(judged_set, {"scores": [s for r in rows for s in scores(r.task_key, r.key, [3], judges=delta)]})
    assert {row.status for row in benchmark_rows(judged_set)} == {"positive"}


def test_judges_see_the_reference_but_never_who_wrote_a_hypothesis(judged_set, judge_server, coordinator):
    script, server = judge_server
    _model_judge(judged_set, server.base_url, "judge-gamma", "Gamma Inc")
    _run_jobs(judging_start(benchmark=judged_set, user=coordinator))
    model, system, user = script.judge_requests[0]
    assert "REFERENCE STATEMENT\nRaising factor T1 extends median lifespan of aged mice by 10%." in user
    assert "RESEARCH QUESTION\nDoes factor T1 change lifespan in aged mice?" in user
    for anchor in ("5 - ", "4 - ", "3 - ", "2 - ", "1 - ", "0 - "):
        assert f"\n{anchor}" in user
    assert '"score"' in user and "JSON" in system
    assert "Gen Alpha" not in user and "Gen Beta" not in user and "Alpha Labs" not in user
    # Blind numbers, not the imported ids.
    assert [label for label, _ in _ITEM.findall(user)] == [f"H{n}" for n in range(1, 21)]


def test_a_reply_missing_a_score_is_asked_once_more(judged_set, judge_server, coordinator):
    script, server = judge_server

    def forgetful(items, attempt):
        kept = items[1:] if attempt == 1 else items
        return json.dumps({"scores": [{"id": label, "score": 4, "reason": "r"} for label, _ in kept]})

    script.judge["judge-gamma"] = forgetful
    _model_judge(judged_set, server.base_url, "judge-gamma", "Gamma Inc")
    (job,) = _run_jobs(judging_start(benchmark=judged_set, user=coordinator))
    assert job.state == "succeeded" and JudgeScore.objects.count() == 26
    attempts = ModelCall.objects.filter(purpose="judge").values_list("protocol_attempt", flat=True)
    assert sorted(attempts) == [1, 1, 1, 2]


def test_a_judge_that_never_answers_leaves_the_job_failed_and_resumable(judged_set, judge_server, coordinator):
    script, server = judge_server
    script.judge["judge-gamma"] = lambda items, attempt: "I cannot score these."
    judge = _model_judge(judged_set, server.base_url, "judge-gamma", "Gamma Inc")
    (job,) = _run_jobs(judging_start(benchmark=judged_set, user=coordinator))
    assert job.state == "failed" and "26 hypotheses" in job.error and not JudgeScore.objects.exists()
    # Started again, it asks only for what is missing.
    del script.judge["judge-gamma"]
    JudgeScore.objects.create(judge=judge, hypothesis=judged_set.hypotheses.first(), score=1)
    (again,) = _run_jobs(judging_start(benchmark=judged_set, user=coordinator))
    assert again.state == "succeeded" and JudgeScore.objects.count() == 26
    assert JudgeScore.objects.get(hypothesis=judged_set.hypotheses.first()).score == 1


def test_a_judge_with_a_job_in_progress_gets_no_second_job(judged_set, judge_server, coordinator):
    _, server = judge_server
    _model_judge(judged_set, server.base_url, "judge-gamma", "Gamma Inc")
    assert len(judging_start(benchmark=judged_set, user=coordinator)) == 1
    assert judging_start(benchmark=judged_set, user=coordinator) == []


def test_judging_needs_a_model_judge(judged_set, coordinator):
    judge_add(benchmark=judged_set, name="Dr Delta", company="Delta")
    with pytest.raises(BenchmarkError):
        judging_start(benchmark=judged_set, user=coordinator)


def test_the_judging_result_file_imports_into_another_set(judged_set, judge_server, coordinator):
    _, server = judge_server
    _model_judge(judged_set, server.base_url, "judge-gamma", "Gamma Inc")
    (job,) = _run_jobs(judging_start(benchmark=judged_set, user=coordinator))
    with open(job.result_path, "rb") as handle:
        content = handle.read()
    assert content.startswith(b"task,hypothesis,judge,judge_company,score,reason\r\n")
    copy = make_set(name="Copy")
    import_json(copy, {"tasks": [task("T1"), task("T2")], "hypotheses": [hypothesis("T2", "h1", "Gen Beta")]})
    content = b"\r\n".join(line for line in content.split(b"\r\n") if not line.startswith(b"T1,"))
    result = benchmark_import_file(benchmark=copy, filename="scores.csv", content=content, user=coordinator)
    assert (result.new_scores, result.new_judges) == (1, 1)


def test_the_simulated_server_judges_and_says_so(judged_set, coordinator):
    server = start_simulator(SimulatorConfig(seed=1))
    try:
        judge = _model_judge(judged_set, server.url + "/v1", "judge-sim", "Gamma Inc", simulated=True)
        (job,) = _run_jobs(judging_start(benchmark=judged_set, user=coordinator))
    finally:
        server.shutdown()
    assert job.state == "succeeded"
    given = list(JudgeScore.objects.filter(judge=judge).values_list("score", "reason"))
    assert len(given) == 26 and all(0 <= score <= 5 for score, _ in given)
    assert all(reason.startswith("Simulated") for _, reason in given)
    assert ModelCall.objects.filter(purpose="judge", simulated=True).exists()


# The judge table -------------------------------------------------------------------------------------------------


def test_the_judge_table_lists_scores_in_order_with_outcomes(db, analyst, client):
    benchmark = make_set(
        {
            "tasks": [task("T1")],
            "hypotheses": [hypothesis("T1", "h1"), hypothesis("T1", "h2")],
            "scores": scores("T1", "h1", [5, 3, 3, 0]) + scores("T1", "h2", [0, 1, None, 2]),
        }
    )
    client.force_login(analyst)
    page = client.get(f"/benchmarks/{benchmark.pk}/judges/").content.decode()
    headers = re.findall(r'<th title="[^"]*">([^<]+)</th>', page)
    assert headers == [name for name, _ in JUDGES]
    assert "<s title=" in page and "match" in page and "2–1" in page and "not judged" in page
    only_positive = client.get(f"/benchmarks/{benchmark.pk}/judges/?outcome=positive").content.decode()
    assert "h1" in only_positive and ">h2<" not in only_positive
    api = client.get(f"/api/v1/benchmarks/{benchmark.pk}/outcomes").json()
    assert [(h["id"], h["outcome"], h["borderline"]) for h in api["hypotheses"]] == [
        ("h1", "positive", True),
        ("h2", "not_judged", None),
    ]


def test_reviewers_cannot_open_the_judge_table(db, reviewer, client):
    benchmark = make_set({"tasks": [task("T1")], "hypotheses": [hypothesis("T1", "h1")]})
    client.force_login(reviewer)
    for path in (f"/benchmarks/{benchmark.pk}/judges/", f"/api/v1/benchmarks/{benchmark.pk}/outcomes"):
        assert client.get(path).status_code == 403


def test_people_and_models_are_added_as_judges_through_the_api(db, coordinator, client):
    benchmark = make_set()
    ModelEndpoint.objects.create(
        display_name="Claude Sonnet 5.5", company="Anthropic", protocol="anthropic", base_url="http://x", model_id="s"
    )
    client.force_login(coordinator)
    url = f"/api/v1/benchmarks/{benchmark.pk}/judges"
    model = client.post(url, {"endpoint": "Claude Sonnet 5.5"}, content_type="application/json")
    person = client.post(url, {"name": "Dr Ortiz", "company": "Uni Lisbon"}, content_type="application/json")
    assert model.status_code == person.status_code == 201
    assert [(j["name"], j["company"], j["model"]) for j in client.get(url).json()["results"]] == [
        ("Claude Sonnet 5.5", "Anthropic", "s"),
        ("Dr Ortiz", "Uni Lisbon", None),
    ]
    started = client.post(f"/api/v1/benchmarks/{benchmark.pk}/judging", {}, content_type="application/json")
    assert started.status_code == 400 and started.json()["error"] == "nothing_to_judge"


def test_the_start_button_runs_one_background_job_per_judge_with_a_state_page(
    judged_set, judge_server, coordinator, client, settings, django_capture_on_commit_callbacks
):
    _, server = judge_server
    settings.CELERY_TASK_ALWAYS_EAGER = True
    _model_judge(judged_set, server.base_url, "judge-gamma", "Gamma Inc")
    client.force_login(coordinator)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/benchmarks/{judged_set.pk}/judging/")
    assert response.status_code == 302
    job = BackgroundJob.objects.get()
    assert job.state == "succeeded" and JudgeScore.objects.count() == 26
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "Judge scores of a benchmark set" in page and f"/jobs/{job.pk}/download" in page
    assert f"/jobs/{job.pk}/" in client.get(f"/benchmarks/{judged_set.pk}/").content.decode()


def test_analysts_open_every_job_the_sets_page_links(judged_set, judge_server, coordinator, analyst, reviewer, client):
    _, server = judge_server
    for model_id, company in (("judge-alpha", "Alpha Labs"), ("judge-beta", "Beta AI")):
        _model_judge(judged_set, server.base_url, model_id, company)
    done = _run_jobs(judging_start(benchmark=judged_set, user=coordinator))
    client.force_login(analyst)
    page = client.get(f"/benchmarks/{judged_set.pk}/").content.decode()
    linked = re.findall(r'href="/jobs/(\d+)/"', page)
    assert sorted(map(int, linked)) == sorted(job.pk for job in done)
    for job_id in linked:
        job_page = client.get(f"/jobs/{job_id}/").content.decode()
        assert "Judge scores of a benchmark set" in job_page and f'href="/benchmarks/{judged_set.pk}/"' in job_page
        assert client.get(f"/jobs/{job_id}/download").status_code == 200
        assert client.post(f"/jobs/{job_id}/retry").status_code == 403  # analysts read; coordinators act
    client.force_login(reviewer)
    assert all(client.get(f"/jobs/{job_id}/").status_code == 404 for job_id in linked)

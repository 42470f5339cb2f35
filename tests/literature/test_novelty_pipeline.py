"""The literature step of an Open Hypothesis run (SPEC §4.6, §5): one check per selected hypothesis, each its own
work item and Celery task; verdicts, evidence and references reach the hypothesis and the API; `delivered` is
selected and neither reported nor contradicted; a stopped check ends the run in failed_at_novelty."""

import hashlib
import json
import re
from datetime import date, timedelta

import pytest
from celery.contrib.testing.worker import start_worker
from celery.signals import task_postrun
from django.test import Client
from django.utils import timezone

from literature.demo import demo_references_load
from literature.models import NoveltyCheck, Reference
from literature.verdicts import quote_occurs
from reviewapp.celery import app
from screening.llm.models import ModelCall, ModelEndpoint, RosterMember
from screening.models import Hypothesis, Run, RunWorkItem
from screening.services.progress import run_advance, runs_sweep
from screening.services.runs import run_create
from screening.services.work import work_item_perform
from tests.screening_support import (
    GENERATORS,
    celery_on_test_redis,
    close_worker_connection,
    drive,
    factor,
    make_roster,
    simulated_default_roster,
    wait_for,
)

JUDGE = "lit-judge"
QUESTION = "Which interventions extend lifespan in mice?"
REPORTED = factor(GENERATORS[0], 1)
CONTRADICTED = factor(GENERATORS[1], 2)
REPORTING_SENTENCE = f"Raising {REPORTED} extends lifespan of male and female mice."
CONTRADICTING_SENTENCE = f"Raising {CONTRADICTED} did not extend lifespan in mice of either sex."

pytestmark = pytest.mark.usefixtures("fast_retries")


@pytest.fixture
def roster(db, server):
    roster = make_roster(server.base_url)
    judge = ModelEndpoint.objects.create(
        display_name="Model lit-judge", company="Company of lit-judge", protocol="openai", base_url=server.base_url,
        model_id=JUDGE, timeout_seconds=10,
    )  # fmt: skip
    RosterMember.objects.create(roster=roster, role=RosterMember.Role.NOVELTY, endpoint=judge)
    return roster


def make_reference(source_id: str, title: str, abstract: str) -> Reference:
    return Reference.objects.create(
        source=Reference.Source.PUBMED, source_id=source_id, pmid=source_id, title=title, abstract=abstract,
        content_sha256=hashlib.sha256(abstract.encode()).hexdigest(),
    )  # fmt: skip


@pytest.fixture
def corpus(db):
    make_reference("31000001", f"{REPORTED} and longevity", f"A cohort of mice. {REPORTING_SENTENCE}")
    make_reference("31000002", f"{CONTRADICTED} in ageing mice", f"Two strains were tested. {CONTRADICTING_SENTENCE}")


def judge_by_hypothesis(user: str) -> str:
    """The scripted judge: reported for REPORTED's hypothesis, contradicted for CONTRADICTED's (when it was given the
    reference that says so), else not reported."""
    hypothesis = user.split("HYPOTHESIS\n", 1)[1].split("\n", 1)[0]
    references = dict(re.findall(r"^\[(R\d+)\] (.*)$", user, re.MULTILINE))
    for name, verdict, sentence in (
        (REPORTED, "reported", REPORTING_SENTENCE),
        (CONTRADICTED, "contradicted", CONTRADICTING_SENTENCE),
    ):
        label = next((label for label, text in references.items() if sentence in text), None)
        if name in hypothesis and label:
            return json.dumps({"verdict": verdict, "quote": sentence, "reference_id": label, "reason": "It says so."})
    return json.dumps({"verdict": "not_reported", "quote": "", "reference_id": "", "reason": "Not found."})


def hypothesis_about(run: Run, name: str) -> Hypothesis:
    return run.hypotheses.get(statement__contains=name)


def test_each_selected_hypothesis_gets_its_own_check_and_verdict(client, roster, script, corpus):
    script.forecast[JUDGE] = lambda items, attempt: judge_by_hypothesis(script.requests_of(JUDGE, "forecast")[-1])
    run = drive(run_create(question=QUESTION, client_address="192.0.2.7"))
    assert run.status == Run.Status.COMPLETED and run.steps["novelty"]["state"] == "completed"
    selected = list(run.hypotheses.filter(selected=True))
    assert len(selected) == 12
    items = run.work_items.filter(step=RunWorkItem.Step.NOVELTY)
    assert sorted(items.values_list("slot", flat=True)) == sorted(h.position for h in selected)
    assert set(items.values_list("state", flat=True)) == {"done"}

    reported, contradicted = hypothesis_about(run, REPORTED), hypothesis_about(run, CONTRADICTED)
    assert (reported.literature_verdict, reported.literature_evidence) == ("reported", REPORTING_SENTENCE)
    assert reported.literature_reference == {
        "source": "pubmed", "id": "31000001", "title": f"{REPORTED} and longevity", "year": None,
        "link": "https://pubmed.ncbi.nlm.nih.gov/31000001/",
    }  # fmt: skip
    assert (contradicted.literature_verdict, contradicted.literature_evidence) == (
        "contradicted",
        CONTRADICTING_SENTENCE,
    )
    others = run.hypotheses.filter(selected=True).exclude(pk__in=[reported.pk, contradicted.pk])
    assert set(others.values_list("literature_verdict", flat=True)) == {"not_reported"}
    # Every hypothesis shares "raising", "extend" and "lifespan" with both references: twelve judged checks.
    assert ModelCall.objects.filter(run=run, purpose="novelty").count() == 12
    checks = NoveltyCheck.objects.filter(run=run)
    assert checks.count() == 12
    check = checks.get(hypothesis=reported)
    assert (check.verdict, check.reference.pmid, check.model_call.purpose) == ("reported", "31000001", "novelty")
    assert {c["title"] for c in check.candidates} == {f"{REPORTED} and longevity", f"{CONTRADICTED} in ageing mice"}

    body = client.get(f"/api/v1/open-hypothesis/runs/{run.public_id}").json()
    by_label = {h["label"]: h for h in body["hypotheses"]}
    assert by_label[reported.label]["literature"] == {
        "verdict": "reported",
        "evidence": REPORTING_SENTENCE,
        "reference": reported.literature_reference,
    }
    assert by_label[reported.label]["delivered"] is False and by_label[contradicted.label]["delivered"] is False
    assert body["counts"]["selected"] == 12 and body["counts"]["delivered"] == 10
    page = client.get(f"/open-hypothesis/{run.public_id}").content.decode()
    assert REPORTING_SENTENCE in page and 'href="https://pubmed.ncbi.nlm.nih.gov/31000001/"' in page
    # Doing the checks again (a redelivered task) changes nothing.
    for item in items:
        work_item_perform(item_id=item.pk)
    run_advance(run_id=run.pk)
    assert ModelCall.objects.filter(run=run, purpose="novelty").count() == 12 and checks.count() == 12


def test_a_check_whose_judge_fails_is_unresolved_and_the_run_completes(roster, script, corpus):
    script.forecast[JUDGE] = lambda items, attempt: (400, {"error": {"message": "no such model"}})
    run = drive(run_create(question=QUESTION, client_address="192.0.2.8"))
    assert run.status == Run.Status.COMPLETED
    assert set(run.hypotheses.filter(selected=True).values_list("literature_verdict", flat=True)) == {"unresolved"}
    assert all("HTTP 400: no such model" in reason for reason in NoveltyCheck.objects.values_list("reason", flat=True))
    # Unresolved is no information: the hypotheses are still delivered.
    assert all(h.delivered for h in run.hypotheses.filter(selected=True))


def test_a_stopped_check_ends_the_run_failed_at_novelty_keeping_the_other_verdicts(roster, script, corpus, settings):
    settings.OPEN_HYPOTHESIS_MAX_RESUMES = 0
    script.forecast[JUDGE] = lambda items, attempt: judge_by_hypothesis(script.requests_of(JUDGE, "forecast")[-1])
    run = run_create(question=QUESTION, client_address="192.0.2.9")
    while run.status != Run.Status.CHECKING_NOVELTY:
        run_advance(run_id=run.pk)
        for item in run.work_items.filter(state="pending").exclude(step="novelty"):
            work_item_perform(item_id=item.pk)
        run.refresh_from_db()
    reported = hypothesis_about(run, REPORTED)
    checks = run.work_items.filter(step="novelty")
    for item in checks.exclude(slot=reported.position):
        work_item_perform(item_id=item.pk)
    # The worker that should check the reported hypothesis never comes.
    Run.objects.filter(pk=run.pk).update(last_progress_at=timezone.now() - timedelta(hours=2))
    assert runs_sweep() == 1
    run_advance(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == Run.Status.FAILED_AT_NOVELTY
    assert "stopped for 1 of 12" in run.error
    reported.refresh_from_db()
    assert reported.literature_verdict == "unresolved" and reported.delivered
    assert hypothesis_about(run, CONTRADICTED).literature_verdict == "contradicted"


def test_a_benchmark_runs_checks_count_only_literature_before_its_tasks_article(roster, script, corpus):
    from reviewapp.benchmarks.models import BenchmarkSet, BenchmarkTask
    from tests import factories

    Reference.objects.filter(pmid="31000001").update(published=date(2024, 3, 1), published_precision="day")
    Reference.objects.filter(pmid="31000002").update(published=date(2023, 1, 1), published_precision="year")
    script.forecast[JUDGE] = lambda items, attempt: judge_by_hypothesis(script.requests_of(JUDGE, "forecast")[-1])
    run = run_create(question=QUESTION, client_address="192.0.2.11")
    benchmark = BenchmarkSet.objects.create(name="Set", seed=1)
    task = factories.make_task(published=date(2024, 3, 1))
    BenchmarkTask.objects.create(benchmark=benchmark, task=task, position=1, run=run)
    run = drive(run)
    assert run.status == Run.Status.COMPLETED
    # The task's own article (published that day) is not earlier literature; the 2023 one is.
    assert hypothesis_about(run, REPORTED).literature_verdict == "not_reported"
    assert hypothesis_about(run, CONTRADICTED).literature_verdict == "contradicted"
    assert set(NoveltyCheck.objects.filter(run=run).values_list("published_before", flat=True)) == {date(2024, 3, 1)}


def test_a_run_with_nothing_selected_has_no_literature_check(roster, script, corpus):
    script.forecast["fc-astra"] = lambda items, attempt: json.dumps(
        {"forecasts": [{"id": label, "confirmed": False} for label, _ in items]}
    )
    run = drive(run_create(question=QUESTION, client_address="192.0.2.10"))
    assert run.status == Run.Status.COMPLETED and run.steps["novelty"]["state"] == "completed"
    assert not run.work_items.filter(step="novelty").exists() and not NoveltyCheck.objects.exists()


# A real worker, a real broker and the simulated model server on the demo corpus -----------------------------------

LATENCY = 0.4


@pytest.fixture
def celery_on_redis(settings, monkeypatch, redis_url):
    with celery_on_test_redis(settings, monkeypatch, redis_url, "novelty"):
        yield


@pytest.fixture
def simulated_roster(settings, monkeypatch, transactional_db):
    with simulated_default_roster(settings, monkeypatch, latency=LATENCY, seed=11) as server:
        yield server


def _most_in_flight(calls) -> int:
    spans = [(call.created_at.timestamp() - call.latency_ms / 1000, call.created_at.timestamp()) for call in calls]
    return max(sum(1 for start, end in spans if start <= moment < end) for moment, _ in spans)


def test_a_worker_checks_the_selected_hypotheses_concurrently_on_the_demo_corpus(
    needs_postgres, celery_on_redis, simulated_roster
):
    demo_references_load()
    task_postrun.connect(close_worker_connection)
    try:
        with start_worker(app, pool="threads", concurrency=8, perform_ping_check=False, shutdown_timeout=30):
            response = Client().post(
                "/api/v1/open-hypothesis/runs",
                {"question": "How does remodelling of the bone-marrow niche affect mutant clones?"},
                content_type="application/json",
                REMOTE_ADDR="198.51.100.41",
            )
            public_id = response.json()["id"]
            run = wait_for(
                lambda: Run.objects.filter(public_id=public_id).exclude(status__in=Run.ACTIVE_STATUSES).first(),
                timeout=90,
                what="the run's end",
            )
    finally:
        task_postrun.disconnect(close_worker_connection)

    assert run.status == Run.Status.COMPLETED, run.error
    selected = list(run.hypotheses.filter(selected=True))
    assert len(selected) >= 2
    assert run.work_items.filter(step="novelty", state="done").count() == len(selected)
    assert NoveltyCheck.objects.filter(run=run).count() == len(selected)
    calls = list(ModelCall.objects.filter(run=run, purpose="novelty"))
    assert calls and all(call.simulated for call in calls)
    assert len(calls) == 1 or _most_in_flight(calls) >= 2  # the checks ran in tasks of their own, side by side

    verdicts = {h.literature_verdict for h in selected}
    assert verdicts <= {"reported", "contradicted", "components_reported", "not_reported"}
    for hypothesis in selected:
        if hypothesis.literature_verdict in ("reported", "contradicted"):
            reference = Reference.objects.get(source="demo", source_id=hypothesis.literature_reference["id"])
            assert reference.is_demo and quote_occurs(hypothesis.literature_evidence, reference.abstract)
    body = Client().get(f"/api/v1/open-hypothesis/runs/{public_id}").json()
    for hypothesis in body["hypotheses"]:
        literature = hypothesis["literature"]
        assert set(literature) == {"verdict", "evidence", "reference"}
        assert hypothesis["delivered"] == (
            hypothesis["selected"] and literature["verdict"] not in ("reported", "contradicted")
        )

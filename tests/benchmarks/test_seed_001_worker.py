"""A small seed-001 set end to end: created and run through the API on the default roster, its runs and the repeat
of its forecasts done by a real Celery worker (threads pool) consuming from a real Redis broker, every model call
made over real HTTP to the project's simulated model server speaking the providers' wire protocols."""

import io
import json
import re

import pytest
from celery.contrib.testing.worker import start_worker
from celery.signals import task_postrun
from django.test import Client

from reviewapp.benchmarks.models import BenchmarkSet, RandomControlDraw
from reviewapp.celery import app
from screening.llm.models import ModelCall
from screening.models import Forecast, Run, RunWorkItem
from tests import factories
from tests.screening_support import celery_on_test_redis, close_worker_connection, simulated_default_roster, wait_for

pytestmark = [pytest.mark.broker, pytest.mark.postgres]

TASKS = ("T1", "T2")
FORECASTERS = ("GPT-6 Astra", "Claude Sonnet 5.5", "Gemini 4 Argon", "Grok 4.5")
_ITEM = re.compile(r"^\[(H\d+)\] ", re.MULTILINE)


@pytest.fixture
def celery_on_redis(settings, monkeypatch, redis_url):
    with celery_on_test_redis(settings, monkeypatch, redis_url, "seed-001"):
        yield


@pytest.fixture
def simulated_roster(settings, monkeypatch, transactional_db):
    with simulated_default_roster(settings, monkeypatch, latency=0.0, seed=11) as server:
        yield server


def _user_text(call: ModelCall) -> str:
    if "messages" in call.request_body and "system" in call.request_body:  # Anthropic
        return "".join(
            part["text"] if isinstance(part, dict) else part
            for message in call.request_body["messages"]
            for part in (message["content"] if isinstance(message["content"], list) else [message["content"]])
        )
    if "contents" in call.request_body:  # Gemini
        return "".join(p["text"] for c in call.request_body["contents"] for p in c["parts"])
    return "".join(m["content"] for m in call.request_body["messages"] if m["role"] == "user")


def test_a_worker_runs_a_seed_001_set_and_asks_its_forecasts_again(needs_postgres, celery_on_redis, simulated_roster):
    coordinator = factories.make_user("coordinator")
    client = Client()
    client.force_login(coordinator)
    task_postrun.connect(close_worker_connection)
    try:
        with start_worker(app, pool="threads", concurrency=8, perform_ping_check=False, shutdown_timeout=30):
            created = client.post(
                "/api/v1/benchmarks",
                {"name": "Worker matrix set", "design": "seed-001", "seed": 20261026},
                content_type="application/json",
            )
            assert created.status_code == 201, created.content
            benchmark = BenchmarkSet.objects.get(pk=created.json()["id"])
            tasks = [
                {"key": key, "question": f"Does factor {key} change lifespan in aged mice?", "reference_statement": "x"}
                for key in TASKS
            ]
            upload = io.BytesIO(json.dumps({"tasks": tasks}).encode())
            upload.name = "tasks.json"
            assert (
                client.post(
                    f"/api/v1/benchmarks/{benchmark.pk}/import", {"file": upload}, format="multipart"
                ).status_code
                == 200
            )
            assert client.post(f"/api/v1/benchmarks/{benchmark.pk}/run").status_code == 202
            runs = Run.objects.filter(benchmark_task__benchmark=benchmark)
            wait_for(
                lambda: runs.count() == len(TASKS) and not runs.filter(status__in=Run.ACTIVE_STATUSES).exists(),
                timeout=120,
                what="the end of the set's runs",
            )
            repeated = client.post(f"/api/v1/benchmarks/{benchmark.pk}/forecasts/repeat")
            assert repeated.status_code == 202, repeated.content
            items = RunWorkItem.objects.filter(run__in=runs, step=RunWorkItem.Step.REPEAT)
            wait_for(
                lambda: items.exists() and not items.filter(state__in=("pending", "running")).exists(),
                timeout=120,
                what="the forecasts asked again",
            )
    finally:
        task_postrun.disconnect(close_worker_connection)

    for run in runs:
        assert run.status == Run.Status.COMPLETED, run.error
        assert run.design == Run.Design.MATRIX and run.roster["name"] == "Open Hypothesis default roster"
        hypotheses = list(run.hypotheses.order_by("position"))
        assert len(hypotheses) == 20  # four generators, five each in one request (the seed-001 design)
        draw = RandomControlDraw.objects.get(benchmark_task__run=run)
        first = ModelCall.objects.filter(run=run, purpose__startswith="stage").earliest("created_at")
        assert draw.drawn_at < draw.frozen_at < first.created_at
        calls = ModelCall.objects.filter(run=run, purpose__in=["stage1", "stage2"], protocol_attempt=1)
        # Four forecasters × four generators × one request holding that generator's five.
        assert calls.count() == 4 * 4 * 1
        for call in calls:
            assert _ITEM.findall(_user_text(call)) == ["H1", "H2", "H3", "H4", "H5"]
            assert call.simulated and call.tools_disabled
    # The full matrix in both rounds, each answer with the call that gave it.
    analyst = factories.make_user("analyst")
    client.force_login(analyst)
    for round_ in (1, 2):
        matrix = client.get(f"/api/v1/benchmarks/{benchmark.pk}/forecasts?round={round_}").json()["results"]
        assert len(matrix) == 40
        names = {call.model_id: call.endpoint.display_name for call in ModelCall.objects.select_related("endpoint")}
        for entry in matrix:
            assert {names[model] for model in entry["forecasts"]} == set(FORECASTERS)
            assert set(entry["requests"]) == set(entry["forecasts"])
    assert Forecast.objects.filter(hypothesis__run__in=runs, round=2).count() == 40 * 4
    # The simulated server answers the same request the same way: round 2 agrees with round 1 everywhere.
    first_round = {(f.hypothesis_id, f.model_key): f.vote for f in Forecast.objects.filter(round=1)}
    assert all(first_round[(f.hypothesis_id, f.model_key)] == f.vote for f in Forecast.objects.filter(round=2))

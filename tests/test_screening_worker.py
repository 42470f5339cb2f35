"""A whole Open Hypothesis run through the public API, done by a real Celery worker (threads pool) consuming from a
real Redis broker, against the project's simulated model server speaking the three wire protocols."""

import time
import uuid

import pytest
import redis
from celery.contrib.testing.worker import start_worker
from celery.signals import task_postrun
from django.db import connection
from django.test import Client

from reviewapp.celery import app
from screening.management.commands.setup_roster import roster_setup_default
from screening.models import ModelCall, Run, Translation
from screening.simulator import SimulatorConfig, start_simulator
from tests.screening_support import drop_broker_connections, use_broker

pytestmark = [pytest.mark.broker, pytest.mark.postgres]

PROVIDER_KEYS = ("OPENAI_API_KEY", "XAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY")
# Every simulated call takes this long, so that calls made one after another cannot look concurrent.
LATENCY = 0.4


@pytest.fixture
def celery_on_redis(settings, monkeypatch, redis_url):
    """The project's Celery app on the test Redis under a key prefix of its own (other test runs may share it)."""
    prefix = f"oh-screening-test-{uuid.uuid4().hex[:12]}:"
    use_broker(settings, monkeypatch, redis_url, {"global_keyprefix": prefix})
    settings.CELERY_WORKER_HIJACK_ROOT_LOGGER = False
    assert app.connection_for_write().as_uri().startswith("redis://")
    yield
    drop_broker_connections()
    broker = redis.Redis.from_url(redis_url)
    for key in broker.scan_iter(match=f"{prefix}*"):
        broker.delete(key)


@pytest.fixture
def simulated_roster(settings, monkeypatch, transactional_db):
    for name in PROVIDER_KEYS:
        monkeypatch.delenv(name, raising=False)
    server = start_simulator(SimulatorConfig(latency_seconds=LATENCY, seed=7))
    settings.SIMULATOR_PORT = server.server_address[1]
    roster_setup_default()
    yield server
    server.shutdown()
    server.server_close()


def _close_worker_connection(**kwargs):
    # Each worker thread opens its own database connection; closing it lets the test database be dropped.
    connection.close()


def _wait(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"{what} did not happen within {timeout} s")


def _ran_concurrently(calls) -> bool:
    """Every call was in flight at one same moment: the last to start started before the first to end ended."""
    spans = [(call.created_at.timestamp() - call.latency_ms / 1000, call.created_at.timestamp()) for call in calls]
    return max(start for start, _ in spans) < min(end for _, end in spans)


def test_worker_takes_a_run_from_the_api_to_completion(needs_postgres, celery_on_redis, simulated_roster):
    task_postrun.connect(_close_worker_connection)
    try:
        with start_worker(app, pool="threads", concurrency=8, perform_ping_check=False, shutdown_timeout=30):
            response = Client().post(
                "/api/v1/open-hypothesis/runs",
                {"question": "How does remodelling of the bone-marrow niche affect mutant clones?", "language": "ru"},
                content_type="application/json",
                REMOTE_ADDR="198.51.100.40",
            )
            assert response.status_code == 202
            public_id = response.json()["id"]
            run = _wait(
                lambda: Run.objects.filter(public_id=public_id).exclude(status__in=Run.ACTIVE_STATUSES).first(),
                timeout=60,
                what="the run's end",
            )
            _wait(
                lambda: Translation.objects.filter(run=run).exclude(state="pending").exists(),
                timeout=30,
                what="the translation",
            )
    finally:
        task_postrun.disconnect(_close_worker_connection)

    assert run.status == Run.Status.COMPLETED, run.error
    assert run.hypotheses.count() == 40
    assert set(run.hypotheses.values_list("label", flat=True)) == {f"H{n}" for n in range(1, 41)}
    generate = list(ModelCall.objects.filter(run=run, purpose="generate"))
    stage2 = list(ModelCall.objects.filter(run=run, purpose="stage2"))
    assert len(generate) == 4 and len(stage2) == 3
    # The four generators and the three stage-2 models ran at the same time, each in its own task.
    assert _ran_concurrently(generate)
    assert _ran_concurrently(stage2)
    assert all(call.simulated and call.tools_disabled for call in ModelCall.objects.filter(run=run))
    # Each work item was done once: one call per model and stage (no malformed replies were configured).
    assert ModelCall.objects.filter(run=run, purpose="stage1").count() == 1
    selected = run.hypotheses.filter(selected=True).count()
    assert run.work_items.filter(state="done").count() == run.work_items.count() == 4 + 1 + 3 + selected + 1

    body = Client().get(f"/api/v1/open-hypothesis/runs/{public_id}?lang=ru").json()
    assert body["status"] == "completed" and body["simulated"] is True
    assert body["translation"] == {"language": "ru", "state": "ready"}
    assert body["hypotheses"][0]["statement"].startswith("[Симуляция] ")
    counts = body["counts"]
    assert counts["generated"] == 40 and counts["kept"] + counts["discarded"] == 40
    assert counts["selected"] == counts["delivered"] == sum(h["selected"] for h in body["hypotheses"])

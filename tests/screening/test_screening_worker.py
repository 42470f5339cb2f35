"""A whole Open Hypothesis run through the public API, done by a real Celery worker (threads pool) consuming from a
real Redis broker, against the project's simulated model server speaking the three wire protocols."""

import pytest
from celery.contrib.testing.worker import start_worker
from celery.signals import task_postrun
from django.test import Client

from reviewapp.celery import app
from screening.llm.models import ModelCall
from screening.models import Run, Translation
from tests.screening_support import (
    celery_on_test_redis,
    close_worker_connection,
    simulated_default_roster,
    wait_for,
)

pytestmark = [pytest.mark.broker, pytest.mark.postgres]

# Every simulated call takes this long, so that calls made one after another cannot look concurrent.
LATENCY = 0.4


@pytest.fixture
def celery_on_redis(settings, monkeypatch, redis_url):
    with celery_on_test_redis(settings, monkeypatch, redis_url, "screening"):
        yield


@pytest.fixture
def simulated_roster(settings, monkeypatch, transactional_db):
    with simulated_default_roster(settings, monkeypatch, latency=LATENCY, seed=7) as server:
        yield server


def _ran_concurrently(calls) -> bool:
    """Every call was in flight at one same moment: the last to start started before the first to end ended."""
    spans = [(call.created_at.timestamp() - call.latency_ms / 1000, call.created_at.timestamp()) for call in calls]
    return max(start for start, _ in spans) < min(end for _, end in spans)


def test_worker_takes_a_run_from_the_api_to_completion(needs_postgres, celery_on_redis, simulated_roster):
    task_postrun.connect(close_worker_connection)
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
            run = wait_for(
                lambda: Run.objects.filter(public_id=public_id).exclude(status__in=Run.ACTIVE_STATUSES).first(),
                timeout=60,
                what="the run's end",
            )
            wait_for(
                lambda: Translation.objects.filter(run=run).exclude(state="pending").exists(),
                timeout=30,
                what="the translation",
            )
    finally:
        task_postrun.disconnect(close_worker_connection)

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

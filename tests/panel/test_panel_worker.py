"""The AI panel and the pairwise critique end to end: started through the API, done by a real Celery worker (threads
pool) consuming from a real Redis broker on PostgreSQL, against the project's simulated model server; the job asks
its model requests concurrently and the stored ratings equal a replay of the log."""

import pytest
from celery.contrib.testing.worker import start_worker
from celery.signals import task_postrun
from rest_framework.test import APIClient

from reviewapp.celery import app
from reviewapp.models import BackgroundJob
from reviewapp.panel import ratings as R
from reviewapp.panel.models import Comparison, PanelReview, Rating, ReferenceReview
from screening.llm.models import ModelCall
from tests import factories
from tests.panel.support import make_cohort, proposal
from tests.screening_support import celery_on_test_redis, close_worker_connection, simulated_default_roster, wait_for

pytestmark = [pytest.mark.broker, pytest.mark.postgres]

# Every simulated call takes this long, so that calls made one after another cannot look concurrent.
LATENCY = 0.2


@pytest.fixture
def celery_on_redis(settings, monkeypatch, redis_url):
    with celery_on_test_redis(settings, monkeypatch, redis_url, "panel"):
        yield


@pytest.fixture
def simulated_roster(settings, monkeypatch, transactional_db):
    with simulated_default_roster(settings, monkeypatch, latency=LATENCY, seed=5) as server:
        yield server


def _finished(job_id: int) -> BackgroundJob | None:
    return BackgroundJob.objects.filter(pk=job_id, state__in=("succeeded", "failed")).first()


def test_a_worker_runs_the_panel_and_the_critique_from_the_api(
    needs_postgres, celery_on_redis, simulated_roster, settings
):
    settings.AI_PANEL_CONCURRENCY = 8
    coordinator = factories.make_user("coordinator")
    proposals = [proposal(f"w{n}", f"T-{n % 3}", parents=[f"w{n - 3}"] if n > 3 else []) for n in range(1, 13)]
    cohort = make_cohort(proposals, user=coordinator)
    api = APIClient()
    api.force_authenticate(coordinator)
    task_postrun.connect(close_worker_connection)
    try:
        with start_worker(app, pool="threads", concurrency=2, perform_ping_check=False, shutdown_timeout=30):
            started = api.post(f"/api/v1/cohorts/{cohort.pk}/ai-panel", {}, format="json")
            assert started.status_code == 202
            panel_job = wait_for(lambda: _finished(started.json()["job"]), timeout=120, what="the panel job's end")
            started = api.post(
                f"/api/v1/cohorts/{cohort.pk}/comparisons/run", {"per_proposal": 3, "seed": 21}, format="json"
            )
            assert started.status_code == 202
            critique_job = wait_for(
                lambda: _finished(started.json()["job"]), timeout=120, what="the critique job's end"
            )
    finally:
        task_postrun.disconnect(close_worker_connection)

    assert panel_job.state == "succeeded", panel_job.error
    # Three roles and the fresh-context reference per proposal, and nine revisions.
    assert panel_job.progress == panel_job.total == 12 * 4 + 9
    reviews = PanelReview.objects.filter(subject__proposal__cohorts=cohort)
    assert reviews.count() == 36 and all(review.simulated for review in reviews)
    references = ReferenceReview.objects.filter(subject__proposal__cohorts=cohort)
    assert references.count() == 12 and all(review.simulated for review in references)
    calls = list(ModelCall.objects.filter(purpose="panel_review"))
    assert all(call.simulated for call in calls) and len(calls) >= 36
    # The job's requests overlapped in time (threads within the job), not one after another.
    spans = sorted(
        (call.created_at.timestamp() - call.latency_ms / 1000, call.created_at.timestamp()) for call in calls
    )
    assert any(later_start < end for (_, end), (later_start, _) in zip(spans, spans[1:], strict=False))
    assert panel_job.result_name.endswith("-ai-panel.csv")

    assert critique_job.state == "succeeded", critique_job.error
    log = list(Comparison.objects.filter(cohort=cohort).order_by("seq").values_list("a_id", "b_id", "outcome"))
    assert len(log) > 0 and {outcome for _, _, outcome in log} <= set(R.OUTCOMES)
    replayed = R.replay(log)
    stored = {rating.proposal_id: rating for rating in Rating.objects.filter(cohort=cohort)}
    for pk, rating in replayed.items():
        assert (stored[pk].mu, stored[pk].sigma) == pytest.approx((rating.mu, rating.sigma), abs=1e-12)

    body = api.get(f"/api/v1/cohorts/{cohort.pk}/ai-panel").json()
    assert body["state"] == "succeeded" and body["simulated"] is True and len(body["proposals"]) == 12
    assert sum(row["revision"] is not None for row in body["proposals"]) == 9

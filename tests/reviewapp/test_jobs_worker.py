"""A real Celery worker consuming from a real Redis broker runs a job started through the service."""

import time
import uuid

import openpyxl
import pytest
import redis
from celery.contrib.testing.worker import start_worker
from celery.signals import task_postrun
from django.db import connection
from django.utils import timezone

from reviewapp.celery import app
from reviewapp.models import BackgroundJob, Review
from reviewapp.protocol import CRITERION_FIELDS
from reviewapp.services.jobs import job_create
from tests import factories

pytestmark = pytest.mark.broker


def _drop_broker_connections():
    # Connections pooled for the previous broker URL must not be reused for the new one.
    if app._pool is not None:
        app._pool.force_close_all()
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture
def celery_on_redis(settings, monkeypatch, redis_url):
    """Point the project's Celery app at the test Redis, under a key prefix of its own; restored afterwards.

    The app reads Django's settings live, so the settings fixture undoes the change. The prefix keeps this
    run's messages apart from any other test run sharing the same Redis database.
    """
    _drop_broker_connections()
    monkeypatch.setenv("CELERY_BROKER_URL", redis_url)  # the environment wins over settings in Celery
    settings.CELERY_BROKER_URL = redis_url
    prefix = f"oh-test-{uuid.uuid4().hex[:12]}:"
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"global_keyprefix": prefix}
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_WORKER_HIJACK_ROOT_LOGGER = False
    assert app.connection_for_write().as_uri().startswith("redis://")
    yield
    _drop_broker_connections()
    broker = redis.Redis.from_url(redis_url)
    for key in broker.scan_iter(match=f"{prefix}*"):
        broker.delete(key)


def _close_worker_connection(**kwargs):
    # The worker thread opens its own database connection; close it so the test database can be dropped.
    connection.close()


def wait_for_finished_job(job: BackgroundJob, timeout: float) -> BackgroundJob:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.state in (BackgroundJob.State.SUCCEEDED, BackgroundJob.State.FAILED):
            return job
        time.sleep(0.1)
    pytest.fail(f"the worker did not finish the job within {timeout} s (state: {job.state})")


def test_worker_runs_an_xlsx_job_from_the_broker(needs_postgres, transactional_db, celery_on_redis, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    reviewer = factories.make_user("reviewer")
    coordinator = factories.make_user("coordinator")
    cohort = factories.make_cohort(name="Autophagy")
    task = factories.make_task()
    for number in range(3):
        proposal = factories.make_proposal(task, external_id=f"A-{number}", author="Model A")
        cohort.proposals.add(proposal)
        Review.objects.create(
            assignment=factories.make_assignment(cohort, reviewer, proposal),
            status=Review.Status.SUBMITTED,
            overall=5,
            recommendation="prioritize",
            **{field: "4" for field in CRITERION_FIELDS},
            flaw_verdict="absent",
            submitted_at=timezone.now(),
        )

    task_postrun.connect(_close_worker_connection)
    try:
        with start_worker(app, pool="solo", perform_ping_check=False, loglevel="WARNING"):
            job = job_create(kind="reviews_xlsx", params={"cohort_id": cohort.pk, "unblinded": True}, user=coordinator)
            job = wait_for_finished_job(job, timeout=30)
    finally:
        task_postrun.disconnect(_close_worker_connection)

    assert job.state == BackgroundJob.State.SUCCEEDED, job.error
    assert job.started_at and job.finished_at and job.progress == job.total == 3
    sheet = openpyxl.load_workbook(job.result_path).active
    rows = list(sheet.iter_rows(values_only=True))
    assert len(rows) == 4
    assert {row[rows[0].index("author")] for row in rows[1:]} == {"Model A"}
    assert list((tmp_path / "exports").iterdir()) == [tmp_path / "exports" / f"job-{job.pk}-reviews.xlsx"]

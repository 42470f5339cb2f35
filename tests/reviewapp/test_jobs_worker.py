"""A real Celery worker consuming from a real Redis broker runs a job started through the service."""

import openpyxl
import pytest
from celery.contrib.testing.worker import start_worker
from celery.signals import task_postrun
from django.utils import timezone

from reviewapp.celery import app
from reviewapp.models import BackgroundJob, Review
from reviewapp.protocol import CRITERION_FIELDS
from reviewapp.services.jobs import job_create
from tests import factories
from tests.screening_support import celery_on_test_redis, close_worker_connection, wait_for

pytestmark = pytest.mark.broker


@pytest.fixture
def celery_on_redis(settings, monkeypatch, redis_url):
    with celery_on_test_redis(settings, monkeypatch, redis_url, "jobs"):
        yield


def finished(job: BackgroundJob):
    job.refresh_from_db()
    return job if job.state in (BackgroundJob.State.SUCCEEDED, BackgroundJob.State.FAILED) else None


def test_worker_runs_an_xlsx_job_from_the_broker(needs_postgres, transactional_db, celery_on_redis, exports_home):
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

    task_postrun.connect(close_worker_connection)
    try:
        with start_worker(app, pool="solo", perform_ping_check=False, loglevel="WARNING"):
            job = job_create(kind="reviews_xlsx", params={"cohort_id": cohort.pk, "unblinded": True}, user=coordinator)
            job = wait_for(lambda: finished(job), 30, "the worker finishing the job")
    finally:
        task_postrun.disconnect(close_worker_connection)

    assert job.state == BackgroundJob.State.SUCCEEDED, job.error
    assert job.started_at and job.finished_at and job.progress == job.total == 3
    sheet = openpyxl.load_workbook(job.result_path).active
    rows = list(sheet.iter_rows(values_only=True))
    assert len(rows) == 4
    assert {row[rows[0].index("author")] for row in rows[1:]} == {"Model A"}
    assert list(exports_home.iterdir()) == [exports_home / f"job-{job.pk}-reviews.xlsx"]

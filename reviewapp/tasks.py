"""Celery tasks of the review room. Each takes primary keys and hands the work to a service."""

from django.db import InterfaceError, OperationalError

from reviewapp.celery import app
from reviewapp.core.claims import sweep_all
from reviewapp.services import jobs


# A lost database connection is worth retrying; the claim makes a retry or a redelivery harmless.
@app.task(name=jobs.JOB_TASK, autoretry_for=(OperationalError, InterfaceError), retry_backoff=True, max_retries=5)
def run_background_job(job_id: int) -> None:
    jobs.job_run(job_id=job_id)


@app.task(name="reviewapp.sweep")
def sweep_task() -> dict:
    """The periodic sweeper of every room's background work (Celery beat, OH_SWEEP_SECONDS)."""
    return sweep_all()

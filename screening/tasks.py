"""Celery tasks of Open Hypothesis runs. Each takes primary keys and hands the work to a service; claims and
conditional updates in the services make a retried or redelivered task harmless."""

from django.db import InterfaceError, OperationalError

from reviewapp.celery import app
from screening.services import progress, work

# A lost database connection is worth retrying.
_TRANSIENT = (OperationalError, InterfaceError)


@app.task(name="screening.run_advance", autoretry_for=_TRANSIENT, retry_backoff=True, max_retries=5)
def run_advance_task(run_id: int) -> None:
    progress.run_advance(run_id=run_id)


@app.task(name="screening.work_item", autoretry_for=_TRANSIENT, retry_backoff=True, max_retries=5)
def work_item_task(item_id: int) -> None:
    work.work_item_perform(item_id=item_id)

"""Celery tasks of the inspiration room: each takes a primary key and hands the work to a service; the claims make a
retried or redelivered task harmless."""

from django.db import InterfaceError, OperationalError

from reviewapp.celery import app
from reviewapp.inspiration import services

# A lost database connection is worth retrying.
_TRANSIENT = (OperationalError, InterfaceError)


@app.task(name=services.ADVANCE_TASK, autoretry_for=_TRANSIENT, retry_backoff=True, max_retries=5)
def audit_advance_task(audit_id: int) -> None:
    services.audit_advance(audit_id=audit_id)


@app.task(name=services.BATCH_TASK, autoretry_for=_TRANSIENT, retry_backoff=True, max_retries=5)
def batch_task(batch_id: int) -> None:
    services.batch_perform(batch_id=batch_id)

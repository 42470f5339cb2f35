"""Celery tasks of the literature room. Each takes primary keys and hands the work to a service; the claims make a
retried or redelivered task harmless."""

from django.db import InterfaceError, OperationalError

from literature import novelty, retrieval, waves
from reviewapp.celery import app

# A lost database connection is worth retrying.
_TRANSIENT = (OperationalError, InterfaceError)


@app.task(name=novelty.CHECK_TASK, autoretry_for=_TRANSIENT, retry_backoff=True, max_retries=5)
def novelty_check_task(check_id: int) -> None:
    novelty.novelty_check_perform(check_id=check_id)


@app.task(name="literature.index_references", autoretry_for=_TRANSIENT, retry_backoff=True, max_retries=5)
def index_references_task() -> int:
    """Index every new or changed reference (e.g. after an import), so that the next search need not."""
    return retrieval.index_references()


@app.task(name=waves.WAVE_TASK, autoretry_for=_TRANSIENT, retry_backoff=True, max_retries=5)
def citation_wave_task(wave_id: int) -> None:
    waves.citation_wave_perform(wave_id=wave_id)

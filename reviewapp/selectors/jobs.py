"""Reads of background jobs."""

from reviewapp.core.errors import NotFound
from reviewapp.models import BackgroundJob


def job_get(*, job_id: int) -> BackgroundJob:
    """One background job; NotFound when there is none."""
    job = BackgroundJob.objects.filter(pk=job_id).first()
    if job is None:
        raise NotFound(f"There is no job {job_id}.")
    return job

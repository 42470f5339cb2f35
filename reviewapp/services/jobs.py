"""Background jobs: long work done by a Celery worker, with a state every page can show.

A job is created queued and enqueued once its row is committed. The worker claims it (reviewapp.core.claims:
queued → running), so a redelivered message finds nothing to do. The result file is kept under
VAR_DIR/exports; a failure keeps a plain sentence for the user, the traceback goes to the log.
"""

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from reviewapp.core import roles
from reviewapp.core.claims import work_claim, work_finish, work_heartbeat, work_sweep
from reviewapp.core.errors import ServiceError
from reviewapp.core.queue import broker_check, enqueue_on_commit
from reviewapp.models import BackgroundJob, Cohort
from reviewapp.selectors.exports import export_sheets, review_export_count, review_export_rows, write_xlsx

logger = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int], None]


class JobError(ServiceError):
    """A failure whose message is a sentence meant for the user who started the job."""

    code = "job_failed"


@dataclass(frozen=True)
class JobResult:
    path: Path
    name: str


@dataclass(frozen=True)
class JobKind:
    label: str
    run: Callable[[BackgroundJob, ProgressCallback], JobResult]
    # Safe to run again from the start after its worker died (it rewrites its file, or skips what it recorded):
    # the sweeper resumes it. Otherwise the sweeper fails it with a reason and a coordinator starts it again.
    resumable: bool = False
    # The job works on data every analyst may read (a benchmark set, a panel's reviews): analysts see its page and
    # its file, as they see the set's. Jobs without it (a cohort's spreadsheet) stay their starter's and coordinators'.
    analysts_read: bool = False


def exports_dir() -> Path:
    path = Path(settings.VAR_DIR) / "exports"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _run_reviews_xlsx(job: BackgroundJob, report_progress: ProgressCallback) -> JobResult:
    cohort = Cohort.objects.filter(pk=job.params.get("cohort_id")).first()
    if cohort is None:
        raise JobError("The cohort no longer exists.")
    total = review_export_count(cohort=cohort)
    report_progress(0, total)
    final = exports_dir() / f"job-{job.pk}-reviews.xlsx"
    # Written beside its final name and renamed, so a half-written file is never offered for download.
    partial = final.with_name(final.name + ".part")
    write_xlsx(
        review_export_rows(cohort=cohort, unblinded=bool(job.params.get("unblinded"))),
        partial,
        title="reviews",
        on_progress=lambda done: report_progress(done, total),
        extra_sheets=export_sheets(cohort),
    )
    os.replace(partial, final)
    return JobResult(path=final, name=f"{slugify(cohort.name) or 'cohort'}-{cohort.pk}-reviews.xlsx")


# Kinds of job by name. Other rooms add theirs with `job_kind_register` when their app is ready.
JOB_KINDS: dict[str, JobKind] = {
    "reviews_xlsx": JobKind(label="Reviews spreadsheet (XLSX)", run=_run_reviews_xlsx, resumable=True),
}
JOB_TASK = "reviewapp.background_job"


def job_kind_register(name: str, kind: JobKind) -> None:
    JOB_KINDS[name] = kind


def job_readable_by(*, job: BackgroundJob, user) -> bool:
    """The job's starter and coordinators see a job; analysts too when its kind works on data they may read."""
    if job.created_by_id == user.pk or roles.can_coordinate(user):
        return True
    kind = JOB_KINDS.get(job.kind)
    return bool(kind and kind.analysts_read and roles.can_read_all(user))


def job_label(job: BackgroundJob) -> str:
    kind = JOB_KINDS.get(job.kind)
    return kind.label if kind else job.kind


@transaction.atomic
def job_create(*, kind: str, params: dict, user) -> BackgroundJob:
    if kind not in JOB_KINDS:
        raise ServiceError(f"There is no kind of background job named “{kind}”.")
    broker_check()
    job = BackgroundJob.objects.create(kind=kind, params=params, created_by=user)
    enqueue_on_commit(JOB_TASK, job.pk)
    return job


def _job_report_progress(job_id: int) -> ProgressCallback:
    # Progress also touches the job's heartbeat (which work_heartbeat keeps beating between reports).
    def report(done: int, total: int) -> None:
        BackgroundJob.objects.filter(pk=job_id).update(progress=done, total=total, heartbeat_at=timezone.now())

    return report


def job_run(*, job_id: int) -> None:
    """Claim and run a job, recording success or failure.

    Not one transaction: progress updates must be visible to the job's page while the work goes on.
    """
    token = work_claim(BackgroundJob, job_id)
    if token is None:
        logger.info("Background job %s was not queued; nothing to do", job_id)
        return
    job = BackgroundJob.objects.get(pk=job_id)
    report_progress = _job_report_progress(job_id)
    report_progress(job.progress, job.total)
    try:
        with work_heartbeat(BackgroundJob, job_id, token):
            result = JOB_KINDS[job.kind].run(job, report_progress)
    except JobError as exc:
        logger.warning("Background job %s (%s) failed: %s", job_id, job.kind, exc)
        work_finish(BackgroundJob, job_id, token, failed=True, error=exc.message)
        return
    except Exception as exc:
        logger.exception("Background job %s (%s) failed", job_id, job.kind)
        summary = str(exc).splitlines()[0][:300] if str(exc) else exc.__class__.__name__
        error = f"The job stopped with an unexpected error ({summary}). The worker's log has the details."
        work_finish(BackgroundJob, job_id, token, failed=True, error=error)
        return
    work_finish(BackgroundJob, job_id, token, result_path=str(result.path), result_name=result.name)


def job_retry(*, job_id: int, user) -> BackgroundJob:
    """Start a failed job again, as a new job of the same kind and parameters (the failed one stays as it was)."""
    job = BackgroundJob.objects.filter(pk=job_id).first()
    if job is None:
        raise JobError("There is no such job.", code="not_found", status=404)
    if job.state != BackgroundJob.State.FAILED:
        raise JobError("Only a failed job can be started again.", code="job_not_failed", status=409)
    return job_create(kind=job.kind, params=job.params, user=user)


# The sweeper (reviewapp.core.claims.sweep_all) ----------------------------------------------------------------------

STOPPED = "The worker running this job stopped before it finished (it was stopped or lost its connection)"


def jobs_sweep() -> int:
    """Running jobs whose heartbeat stopped for OH_SILENT_SECONDS (their worker died): resumable kinds go back to the
    queue (up to OH_WORK_MAX_ATTEMPTS runs), the others fail with a reason. Queued jobs whose send was lost (queued
    for OH_JOB_STALE_SECONDS) are sent again, whatever their kind: they never started. Then export files past their
    keeping time go. Returns how many jobs and files it touched."""
    stale_before = timezone.now() - timedelta(seconds=settings.OH_JOB_STALE_SECONDS)
    resumable = [name for name, kind in JOB_KINDS.items() if kind.resumable]
    attempts = settings.OH_WORK_MAX_ATTEMPTS
    again = work_sweep(
        BackgroundJob,
        unsent_before=stale_before,
        max_attempts=attempts,
        reason=f"{STOPPED} {attempts} times; start it again.",
        kind__in=resumable,
    )
    again += work_sweep(  # one attempt allowed: every stale running job of these kinds fails
        BackgroundJob,
        unsent_before=stale_before,
        max_attempts=1,
        reason=f"{STOPPED}; start it again.",
        kind__in=[name for name in JOB_KINDS if name not in resumable],
    )
    for job_id in again:
        logger.warning("Background job %s lost its worker or its message; it is sent again", job_id)
        enqueue_on_commit(JOB_TASK, job_id)
    return len(again) + exports_expire()


def exports_expire() -> int:
    """Delete export files older than OH_EXPORT_KEEP_HOURS (a job's page then says so); returns how many."""
    cutoff = timezone.now() - timedelta(hours=settings.OH_EXPORT_KEEP_HOURS)
    deleted = 0
    for path in exports_dir().iterdir():
        if path.is_file() and path.stat().st_mtime < cutoff.timestamp():
            path.unlink(missing_ok=True)
            deleted += 1
    BackgroundJob.objects.filter(finished_at__lt=cutoff, result_deleted_at=None).exclude(result_path="").update(
        result_deleted_at=timezone.now()
    )
    return deleted

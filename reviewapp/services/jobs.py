"""Background jobs: long work done by a Celery worker, with a state every page can show.

A job is created queued and enqueued once its row is committed. The worker claims it (reviewapp.core.claims:
queued → running), so a redelivered message finds nothing to do. The result file is kept under
VAR_DIR/exports; a failure keeps a plain sentence for the user, the traceback goes to the log.
"""

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils.text import slugify

from reviewapp.core.claims import work_claim, work_finish
from reviewapp.core.errors import ServiceError
from reviewapp.core.queue import enqueue_on_commit
from reviewapp.models import BackgroundJob, Cohort
from reviewapp.selectors.exports import review_export_count, review_export_rows, write_xlsx

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
    )
    os.replace(partial, final)
    return JobResult(path=final, name=f"{slugify(cohort.name) or 'cohort'}-{cohort.pk}-reviews.xlsx")


# Kinds of job by name. Other rooms add theirs with `job_kind_register` when their app is ready.
JOB_KINDS: dict[str, JobKind] = {
    "reviews_xlsx": JobKind(label="Reviews spreadsheet (XLSX)", run=_run_reviews_xlsx),
}
JOB_TASK = "reviewapp.background_job"


def job_kind_register(name: str, kind: JobKind) -> None:
    JOB_KINDS[name] = kind


def job_label(job: BackgroundJob) -> str:
    kind = JOB_KINDS.get(job.kind)
    return kind.label if kind else job.kind


@transaction.atomic
def job_create(*, kind: str, params: dict, user) -> BackgroundJob:
    if kind not in JOB_KINDS:
        raise ValueError(f"Unknown job kind {kind!r}")
    job = BackgroundJob.objects.create(kind=kind, params=params, created_by=user)
    enqueue_on_commit(JOB_TASK, job.pk)
    return job


def _job_report_progress(job_id: int) -> ProgressCallback:
    def report(done: int, total: int) -> None:
        BackgroundJob.objects.filter(pk=job_id).update(progress=done, total=total)

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
    try:
        result = JOB_KINDS[job.kind].run(job, _job_report_progress(job_id))
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

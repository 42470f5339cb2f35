"""Background jobs: long work done by a Celery worker, with a state every page can show.

A job is created queued and enqueued once its row is committed. The worker claims it with a conditional
UPDATE (queued → running), so a redelivered message finds nothing to do. The result file is kept under
VAR_DIR/exports; a failure keeps a plain sentence for the user, the traceback goes to the log.
"""

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from reviewapp.models import BackgroundJob, Cohort
from reviewapp.selectors.exports import review_export_count, review_export_rows, write_xlsx

logger = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int], None]


class JobError(Exception):
    """A failure whose message is a sentence meant for the user who started the job."""


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


def _run_benchmark_judging(job: BackgroundJob, report_progress: ProgressCallback) -> JobResult:
    from reviewapp.services.judging import judging_job_run  # it imports this module

    return judging_job_run(job, report_progress)


JOB_KINDS: dict[str, JobKind] = {
    "reviews_xlsx": JobKind(label="Reviews spreadsheet (XLSX)", run=_run_reviews_xlsx),
    "benchmark_judging": JobKind(label="Judge scores of a benchmark set", run=_run_benchmark_judging),
}


def job_label(job: BackgroundJob) -> str:
    kind = JOB_KINDS.get(job.kind)
    return kind.label if kind else job.kind


@transaction.atomic
def job_create(*, kind: str, params: dict, user) -> BackgroundJob:
    if kind not in JOB_KINDS:
        raise ValueError(f"Unknown job kind {kind!r}")
    job = BackgroundJob.objects.create(kind=kind, params=params, created_by=user)
    # Imported here: the task module imports this one.
    from reviewapp.tasks import run_background_job

    transaction.on_commit(lambda: run_background_job.delay(job.pk))
    return job


def job_claim(*, job_id: int) -> bool:
    """Move a queued job to running; False when another delivery (or nobody's job) got there first."""
    claimed = BackgroundJob.objects.filter(pk=job_id, state=BackgroundJob.State.QUEUED).update(
        state=BackgroundJob.State.RUNNING, started_at=timezone.now()
    )
    return claimed == 1


def _job_report_progress(job_id: int) -> ProgressCallback:
    def report(done: int, total: int) -> None:
        BackgroundJob.objects.filter(pk=job_id).update(progress=done, total=total)

    return report


def job_run(*, job_id: int) -> None:
    """Claim and run a job, recording success or failure.

    Not one transaction: progress updates must be visible to the job's page while the work goes on.
    """
    if not job_claim(job_id=job_id):
        logger.info("Background job %s was not queued; nothing to do", job_id)
        return
    job = BackgroundJob.objects.get(pk=job_id)
    try:
        result = JOB_KINDS[job.kind].run(job, _job_report_progress(job_id))
    except JobError as exc:
        logger.warning("Background job %s (%s) failed: %s", job_id, job.kind, exc)
        job_fail(job_id=job_id, error=str(exc))
        return
    except Exception as exc:
        logger.exception("Background job %s (%s) failed", job_id, job.kind)
        summary = str(exc).splitlines()[0][:300] if str(exc) else exc.__class__.__name__
        job_fail(
            job_id=job_id,
            error=f"The job stopped with an unexpected error ({summary}). The worker's log has the details.",
        )
        return
    BackgroundJob.objects.filter(pk=job_id, state=BackgroundJob.State.RUNNING).update(
        state=BackgroundJob.State.SUCCEEDED,
        result_path=str(result.path),
        result_name=result.name,
        finished_at=timezone.now(),
    )


def job_fail(*, job_id: int, error: str) -> None:
    BackgroundJob.objects.filter(pk=job_id).update(
        state=BackgroundJob.State.FAILED, error=error, finished_at=timezone.now()
    )

"""Pages: preparing a cohort's XLSX in the background, and the page of a background job.

A job's page shows its state and polls itself while the job waits or runs, and says plainly when no worker
has picked the job up.
"""

from datetime import timedelta

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404
from django.shortcuts import redirect, render
from django.urls import path
from django.utils import timezone
from django.views.decorators.http import require_POST

from reviewapp.core import roles
from reviewapp.core.errors import page_errors
from reviewapp.models import BackgroundJob
from reviewapp.selectors.cohorts import cohort_for_user
from reviewapp.selectors.jobs import job_get
from reviewapp.services import jobs

_STATE_BADGES = {
    BackgroundJob.State.QUEUED: "warn",
    BackgroundJob.State.RUNNING: "",
    BackgroundJob.State.SUCCEEDED: "ok",
    BackgroundJob.State.FAILED: "bad",
}


def _get_job_for_user(request, job_id: int) -> BackgroundJob:
    """The job for those who may see it (reviewapp.services.jobs.job_readable_by); for anyone else it does not exist."""
    job = job_get(job_id=job_id)
    if not jobs.job_readable_by(job=job, user=request.user):
        raise Http404
    return job


def _waits_for_worker(job: BackgroundJob) -> bool:
    waited = timezone.now() - job.created_at
    return job.state == BackgroundJob.State.QUEUED and waited > timedelta(
        seconds=settings.JOB_UNCLAIMED_WARNING_SECONDS
    )


@login_required
@require_POST
def cohort_reviews_xlsx_prepare(request, cohort_id):
    cohort = cohort_for_user(user=request.user, cohort_id=cohort_id)
    with page_errors(request):
        job = jobs.job_create(
            kind="reviews_xlsx",
            params={"cohort_id": cohort.pk, "unblinded": roles.can_read_all(request.user)},
            user=request.user,
        )
        return redirect("job-detail", job.pk)
    return redirect("cohort-detail", cohort.pk)


@login_required
def job_detail(request, job_id):
    job = _get_job_for_user(request, job_id)
    if job.state == BackgroundJob.State.SUCCEEDED:
        percent = 100
    else:
        percent = min(100, job.progress * 100 // job.total) if job.total else 0
    context = {
        "job": job,
        "label": jobs.job_label(job),
        "in_progress": job.state in (BackgroundJob.State.QUEUED, BackgroundJob.State.RUNNING),
        "waits_for_worker": _waits_for_worker(job),
        "percent": percent,
        "badge": _STATE_BADGES.get(job.state, ""),
        "cohort_id": job.params.get("cohort_id"),
        "benchmark_id": job.params.get("benchmark_id"),
        "can_retry": job.state == BackgroundJob.State.FAILED and roles.can_coordinate(request.user),
        "keep_hours": settings.OH_EXPORT_KEEP_HOURS,
    }
    template = "reviewapp/job_detail.html#status" if request.htmx else "reviewapp/job_detail.html"
    return render(request, template, context)


@login_required
def job_download(request, job_id):
    job = _get_job_for_user(request, job_id)
    if job.state != BackgroundJob.State.SUCCEEDED or not job.result_path or job.result_deleted_at:
        raise Http404
    try:
        result = open(job.result_path, "rb")  # FileResponse closes it
    except FileNotFoundError:
        raise Http404 from None
    return FileResponse(result, as_attachment=True, filename=job.result_name)


@login_required
@require_POST
def job_retry_page(request, job_id):
    """A coordinator starts a failed job again (as a new job) and follows it."""
    roles.require_coordinator(request.user)
    job = _get_job_for_user(request, job_id)
    with page_errors(request):
        return redirect("job-detail", jobs.job_retry(job_id=job.pk, user=request.user).pk)
    return redirect("job-detail", job.pk)


urlpatterns = [
    path(
        "cohorts/<int:cohort_id>/reviews.xlsx/prepare",
        cohort_reviews_xlsx_prepare,
        name="cohort-reviews-xlsx-prepare",
    ),
    path("jobs/<int:job_id>/", job_detail, name="job-detail"),
    path("jobs/<int:job_id>/download", job_download, name="job-download"),
    path("jobs/<int:job_id>/retry", job_retry_page, name="job-retry"),
]

import io
import logging
from datetime import timedelta

import openpyxl
import pytest
from django.urls import reverse
from django.utils import timezone

from reviewapp.core.errors import ServiceError
from reviewapp.models import BackgroundJob, Review
from reviewapp.protocol import CRITERION_FIELDS
from reviewapp.services.jobs import job_create
from reviewapp.tasks import run_background_job
from tests import factories

AUTHOR = "canary-author-jobs-m4"
NO_WORKER = "No worker has picked up this job yet."


@pytest.fixture
def eager(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True


@pytest.fixture
def cohort(reviewer):
    task = factories.make_task()
    cohort = factories.make_cohort(name="Mitochondria")
    for number in range(5):
        proposal = factories.make_proposal(task, external_id=f"M-{number}", author=AUTHOR)
        cohort.proposals.add(proposal)
        Review.objects.create(
            assignment=factories.make_assignment(cohort, reviewer, proposal),
            status=Review.Status.SUBMITTED,
            overall=3,
            recommendation="prioritize",
            **{field: "2" for field in CRITERION_FIELDS},
            flaw_verdict="absent",
            submitted_at=timezone.now(),
        )
    return cohort


def download_rows(client, job) -> list[list]:
    response = client.get(reverse("job-download", args=[job.pk]))
    assert response.status_code == 200
    workbook = openpyxl.load_workbook(io.BytesIO(b"".join(response.streaming_content)))
    return [list(row) for row in workbook.active.iter_rows(values_only=True)]


def test_prepared_xlsx_runs_in_the_background_and_downloads(
    client, coordinator, cohort, eager, exports_home, django_capture_on_commit_callbacks
):
    client.force_login(coordinator)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("cohort-reviews-xlsx-prepare", args=[cohort.pk]))
    job = BackgroundJob.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("job-detail", args=[job.pk])
    assert job.kind == "reviews_xlsx" and job.params == {"cohort_id": cohort.pk, "unblinded": True}
    assert job.state == BackgroundJob.State.SUCCEEDED
    assert job.started_at and job.finished_at and job.progress == job.total == 5
    assert [path.name for path in exports_home.iterdir()] == [f"job-{job.pk}-reviews.xlsx"]

    page = client.get(reverse("job-detail", args=[job.pk])).content.decode()
    assert reverse("job-download", args=[job.pk]) in page
    assert "hx-trigger" not in page
    rows = download_rows(client, job)
    author = rows[0].index("author")
    assert len(rows) == 6 and rows[0][author : author + 4] == ["author", "author_company", "method", "source_run"]
    assert {row[author] for row in rows[1:]} == {AUTHOR}


def test_analyst_job_carries_the_authorship_columns(
    client, analyst, cohort, eager, exports_home, django_capture_on_commit_callbacks
):
    client.force_login(analyst)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("cohort-reviews-xlsx-prepare", args=[cohort.pk]))
    job = BackgroundJob.objects.get()
    assert job.params["unblinded"] is True and job.state == BackgroundJob.State.SUCCEEDED
    rows = download_rows(client, job)
    author = rows[0].index("author")
    assert rows[0][author : author + 4] == ["author", "author_company", "method", "source_run"]
    assert {row[author] for row in rows[1:]} == {AUTHOR}


def test_job_is_enqueued_only_once_its_row_is_committed(coordinator, cohort, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        job = job_create(kind="reviews_xlsx", params={"cohort_id": cohort.pk, "unblinded": True}, user=coordinator)
    assert len(callbacks) == 1
    job.refresh_from_db()
    assert job.state == BackgroundJob.State.QUEUED


def test_a_redelivered_task_does_nothing(coordinator, cohort, exports_home):
    job = job_create(kind="reviews_xlsx", params={"cohort_id": cohort.pk, "unblinded": True}, user=coordinator)
    run_background_job.apply(args=[job.pk]).get()
    job.refresh_from_db()
    finished_at = job.finished_at
    assert job.state == BackgroundJob.State.SUCCEEDED

    run_background_job.apply(args=[job.pk]).get()
    job.refresh_from_db()
    assert job.state == BackgroundJob.State.SUCCEEDED and job.finished_at == finished_at
    assert len(list(exports_home.iterdir())) == 1


def test_unclaimed_job_says_plainly_that_no_worker_runs(client, coordinator, cohort, settings):
    settings.JOB_UNCLAIMED_WARNING_SECONDS = 20
    job = job_create(kind="reviews_xlsx", params={"cohort_id": cohort.pk, "unblinded": True}, user=coordinator)
    client.force_login(coordinator)
    url = reverse("job-detail", args=[job.pk])

    fresh = client.get(url).content.decode()
    assert "Waiting for a worker" in fresh and NO_WORKER not in fresh

    BackgroundJob.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(seconds=21))
    page = client.get(url).content.decode()
    assert NO_WORKER in page
    assert "<code>make run</code> starts one" in page and "<code>celery -A reviewapp worker</code>" in page

    partial = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert NO_WORKER in partial
    assert "<html" not in partial
    assert 'hx-trigger="every 2s"' in partial and f'hx-get="{url}"' in partial


def test_running_job_page_polls_and_shows_progress(client, coordinator, cohort):
    job = job_create(kind="reviews_xlsx", params={"cohort_id": cohort.pk, "unblinded": True}, user=coordinator)
    BackgroundJob.objects.filter(pk=job.pk).update(
        state=BackgroundJob.State.RUNNING, started_at=timezone.now(), progress=2000, total=8000
    )
    client.force_login(coordinator)
    partial = client.get(reverse("job-detail", args=[job.pk]), HTTP_HX_REQUEST="true").content.decode()
    assert 'hx-trigger="every 2s"' in partial
    assert 'aria-valuenow="25"' in partial and "2000 of 8000 rows written" in partial
    assert NO_WORKER not in partial


def test_job_for_a_deleted_cohort_fails_with_a_sentence(client, coordinator, cohort, exports_home):
    job = job_create(kind="reviews_xlsx", params={"cohort_id": 987654, "unblinded": True}, user=coordinator)
    run_background_job.apply(args=[job.pk]).get()
    job.refresh_from_db()
    assert job.state == BackgroundJob.State.FAILED and job.error == "The cohort no longer exists."
    client.force_login(coordinator)
    page = client.get(reverse("job-detail", args=[job.pk])).content.decode()
    assert "The cohort no longer exists." in page and "hx-trigger" not in page
    assert client.get(reverse("job-download", args=[job.pk])).status_code == 404


def test_unexpected_failure_is_logged_and_shown_without_a_traceback(client, coordinator, exports_home, caplog):
    job = job_create(kind="reviews_xlsx", params={"cohort_id": "not-a-number", "unblinded": True}, user=coordinator)
    with caplog.at_level(logging.ERROR, logger="reviewapp.services.jobs"):
        run_background_job.apply(args=[job.pk]).get()
    job.refresh_from_db()
    assert job.state == BackgroundJob.State.FAILED
    assert "unexpected error" in job.error and "Traceback" not in job.error
    assert any(record.exc_info for record in caplog.records)
    client.force_login(coordinator)
    page = client.get(reverse("job-detail", args=[job.pk])).content.decode()
    assert "Traceback" not in page and "worker&#x27;s log has the details" in page


def test_job_pages_belong_to_their_creator_and_coordinators(
    client, analyst, coordinator, reviewer, cohort, eager, exports_home, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = job_create(kind="reviews_xlsx", params={"cohort_id": cohort.pk, "unblinded": False}, user=analyst)
    other_analyst = factories.make_user("analyst")
    urls = [reverse("job-detail", args=[job.pk]), reverse("job-download", args=[job.pk])]
    for url in urls:
        assert client.get(url).status_code == 302  # to the login page
    for user, status in ((analyst, 200), (coordinator, 200), (other_analyst, 404), (reviewer, 404)):
        client.force_login(user)
        for url in urls:
            assert client.get(url).status_code == status, (user, url)
    client.force_login(analyst)
    assert client.get(reverse("job-detail", args=[999999])).status_code == 404


def test_only_coordinators_and_analysts_prepare_exports(client, reviewer, coordinator, cohort):
    url = reverse("cohort-reviews-xlsx-prepare", args=[cohort.pk])
    client.force_login(reviewer)
    assert client.post(url).status_code == 403
    client.force_login(coordinator)
    assert client.get(url).status_code == 405
    assert client.post(reverse("cohort-reviews-xlsx-prepare", args=[999999])).status_code == 404
    assert not BackgroundJob.objects.exists()


def test_unknown_job_kind_is_refused(coordinator):
    with pytest.raises(ServiceError, match="no kind of background job named “mystery”"):
        job_create(kind="mystery", params={}, user=coordinator)
    assert not BackgroundJob.objects.exists()

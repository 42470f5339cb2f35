"""The one sweeper of every kind of background work: jobs, novelty checks, citation waves, inspiration work and run
work items whose worker died are resumed when it is safe and failed with a reason otherwise; pending work whose send
was lost is sent again; export files go after their keeping time; coordinators start a failed job or a failed
benchmark task again."""

import os
import threading
import time
import uuid
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.utils import timezone

from literature.models import CitationWave, NoveltyCheck
from reviewapp.core.claims import SWEEPS, sweep_all
from reviewapp.inspiration.models import InspirationAudit, InspirationBatch
from reviewapp.models import BackgroundJob
from reviewapp.services.jobs import JOB_KINDS, JobKind, job_kind_register, jobs_sweep
from screening.models import Run, RunWorkItem
from screening.services.progress import run_advance
from screening.services.runs import run_create
from screening.services.work import work_item_perform
from tests import factories
from tests.benchmark_support import make_set, task
from tests.screening_support import GENERATORS, drive, generation_reply, make_roster, wait_for

pytestmark = pytest.mark.usefixtures("fast_retries")


def long_ago(seconds: float):
    return timezone.now() - timedelta(seconds=seconds + 1)


def died_while_running(job: BackgroundJob, attempts: int = 1) -> None:
    """A worker claimed the job and died: running, with a claim, and silent for longer than the stale time."""
    stale = long_ago(django_settings.OH_JOB_STALE_SECONDS)
    BackgroundJob.objects.filter(pk=job.pk).update(
        state="running",
        claim_token="00000000-0000-0000-0000-000000000001",
        started_at=stale,
        heartbeat_at=stale,
        attempts=attempts,
    )


def test_every_room_registers_its_sweep_and_one_periodic_task_runs_them(db):
    rooms = {"background jobs", "screening runs", "novelty checks", "citation waves", "inspiration audits"}
    assert rooms | {"staged imports", "staged reference imports"} <= set(SWEEPS)
    assert [entry["task"] for entry in django_settings.CELERY_BEAT_SCHEDULE.values()] == ["reviewapp.sweep"]
    assert set(sweep_all()) == set(SWEEPS)


def test_a_resumable_job_whose_worker_died_runs_again_and_succeeds(
    db, coordinator, exports_home, settings, django_capture_on_commit_callbacks
):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    cohort = factories.make_cohort()
    job = BackgroundJob.objects.create(kind="reviews_xlsx", params={"cohort_id": cohort.pk}, created_by=coordinator)
    died_while_running(job)
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs_sweep() == 1
    job.refresh_from_db()
    assert job.state == BackgroundJob.State.SUCCEEDED and job.attempts == 2, job.error
    assert os.path.exists(job.result_path)


def test_a_job_that_keeps_losing_its_worker_fails_with_a_reason_the_page_shows(db, coordinator, client, settings):
    job = BackgroundJob.objects.create(kind="reviews_xlsx", params={"cohort_id": 1}, created_by=coordinator)
    died_while_running(job, attempts=settings.OH_WORK_MAX_ATTEMPTS)
    jobs_sweep()
    job.refresh_from_db()
    assert job.state == BackgroundJob.State.FAILED and "stopped before it finished" in job.error
    client.force_login(coordinator)
    assert job.error in client.get(f"/jobs/{job.pk}/").content.decode()


def test_a_job_that_is_not_safe_to_redo_fails_at_once(db, coordinator):
    job_kind_register("test_once_only", JobKind(label="Once only", run=lambda job, report: None))
    try:
        job = BackgroundJob.objects.create(kind="test_once_only", params={}, created_by=coordinator)
        died_while_running(job)
        jobs_sweep()
        job.refresh_from_db()
        assert job.state == BackgroundJob.State.FAILED and "start it again" in job.error
    finally:
        JOB_KINDS.pop("test_once_only")


def test_a_job_that_reports_progress_is_not_taken_for_dead(db, coordinator):
    job = BackgroundJob.objects.create(kind="reviews_xlsx", params={}, created_by=coordinator)
    died_while_running(job)
    BackgroundJob.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now())  # a long job, still reporting
    assert jobs_sweep() == 0
    job.refresh_from_db()
    assert job.state == BackgroundJob.State.RUNNING


def test_a_coordinator_runs_a_failed_job_again(db, coordinator, analyst, client):
    job = BackgroundJob.objects.create(
        kind="reviews_xlsx", params={"cohort_id": 1}, created_by=coordinator, state="failed", error="It broke."
    )
    client.force_login(analyst)
    assert client.post(f"/jobs/{job.pk}/retry").status_code == 403
    client.force_login(coordinator)
    assert "Run it again" in client.get(f"/jobs/{job.pk}/").content.decode()
    response = client.post(f"/jobs/{job.pk}/retry")
    again = BackgroundJob.objects.exclude(pk=job.pk).get()
    assert response["Location"] == f"/jobs/{again.pk}/"
    assert (again.kind, again.params, again.state) == (job.kind, job.params, BackgroundJob.State.QUEUED)


def test_export_files_are_deleted_after_their_keeping_time(db, coordinator, client, exports_home, settings):
    settings.OH_EXPORT_KEEP_HOURS = 24
    exports_home.mkdir(parents=True)
    old, fresh = exports_home / "job-1-reviews.xlsx", exports_home / "job-2-reviews.xlsx"
    for path in (old, fresh):
        path.write_bytes(b"PK")
    two_days_ago = time.time() - 48 * 3600
    os.utime(old, (two_days_ago, two_days_ago))
    job = BackgroundJob.objects.create(
        kind="reviews_xlsx",
        created_by=coordinator,
        state="succeeded",
        result_path=str(old),
        result_name="r.xlsx",
        finished_at=timezone.now() - timedelta(hours=48),
    )
    jobs_sweep()
    assert not old.exists() and fresh.exists()
    client.force_login(coordinator)
    assert "deleted 24 hours after it was made" in client.get(f"/jobs/{job.pk}/").content.decode()
    assert client.get(f"/jobs/{job.pk}/download").status_code == 404


def test_a_novelty_check_whose_worker_died_is_sent_again_then_failed(db, settings, django_capture_on_commit_callbacks):
    proposal = factories.make_proposal()
    check = NoveltyCheck.objects.create(hypothesis_text=proposal.statement, proposal=proposal)
    stale = long_ago(settings.OPEN_HYPOTHESIS_STALE_SECONDS)
    NoveltyCheck.objects.filter(pk=check.pk).update(state="running", started_at=stale, attempts=1)
    with django_capture_on_commit_callbacks() as sent:
        assert SWEEPS["novelty checks"]() == 1
    assert len(sent) == 1  # the check is sent to a worker again
    check.refresh_from_db()
    assert check.state == "pending"
    NoveltyCheck.objects.filter(pk=check.pk).update(
        state="running", started_at=stale, attempts=settings.OH_WORK_MAX_ATTEMPTS
    )
    SWEEPS["novelty checks"]()
    check.refresh_from_db()
    assert check.state == "failed" and "stopped" in check.error


def test_a_citation_wave_whose_worker_died_is_sent_again_then_failed(db, settings, django_capture_on_commit_callbacks):
    wave = CitationWave.objects.create(anchors=["MED:1"], total=2)
    stale = long_ago(settings.OPEN_HYPOTHESIS_STALE_SECONDS)
    CitationWave.objects.filter(pk=wave.pk).update(state="running", started_at=stale, heartbeat_at=stale, attempts=1)
    with django_capture_on_commit_callbacks() as sent:
        assert SWEEPS["citation waves"]() == 1
    assert len(sent) == 1
    wave.refresh_from_db()
    assert wave.state == "pending" and wave.claim_token is None
    CitationWave.objects.filter(pk=wave.pk).update(
        state="running", started_at=stale, heartbeat_at=stale, attempts=settings.OH_WORK_MAX_ATTEMPTS
    )
    SWEEPS["citation waves"]()
    wave.refresh_from_db()
    assert wave.state == "failed" and "start the wave again" in wave.error


def test_a_citation_wave_that_writes_progress_is_not_taken_for_dead(db, settings):
    wave = CitationWave.objects.create(anchors=["MED:1"], total=2)
    stale = long_ago(settings.OPEN_HYPOTHESIS_STALE_SECONDS)
    CitationWave.objects.filter(pk=wave.pk).update(
        state="running", started_at=stale, heartbeat_at=timezone.now(), attempts=1
    )
    assert SWEEPS["citation waves"]() == 0
    wave.refresh_from_db()
    assert wave.state == "running"


def _audit() -> InspirationAudit:
    return InspirationAudit.objects.create(population=InspirationAudit.Population.COHORT)


PENDING_WORK = {
    "background jobs": (lambda: BackgroundJob.objects.create(kind="reviews_xlsx", params={}), "OH_JOB_STALE_SECONDS"),
    "novelty checks": (
        lambda: NoveltyCheck.objects.create(hypothesis_text="A statement.", proposal=factories.make_proposal()),
        "OPEN_HYPOTHESIS_STALE_SECONDS",
    ),
    "citation waves": (lambda: CitationWave.objects.create(anchors=["MED:1"]), "OPEN_HYPOTHESIS_STALE_SECONDS"),
    "inspiration audits": (_audit, "INSPIRATION_STALE_SECONDS"),
    "inspiration batches": (
        lambda: InspirationBatch.objects.create(audit=_audit(), kind=InspirationBatch.Kind.RETRIEVAL),
        "INSPIRATION_STALE_SECONDS",
    ),
}


@pytest.mark.parametrize("kind", sorted(PENDING_WORK))
def test_pending_work_whose_send_was_lost_is_sent_again_once_per_stale_time(
    db, settings, django_capture_on_commit_callbacks, kind
):
    make, stale_setting = PENDING_WORK[kind]
    row = make()
    sweep = SWEEPS["inspiration audits" if kind.startswith("inspiration") else kind]
    with django_capture_on_commit_callbacks() as sent:
        sweep()
    assert sent == []  # just sent: not due yet
    type(row).objects.filter(pk=row.pk).update(sent_at=long_ago(getattr(settings, stale_setting)))
    with django_capture_on_commit_callbacks() as sent:
        assert sweep() == 1
    assert len(sent) == 1
    row.refresh_from_db()
    assert row.state == type(row).PENDING and row.sent_at > long_ago(60)
    with django_capture_on_commit_callbacks() as sent:
        sweep()
    assert sent == []  # sent again only after another stale time


def test_a_run_work_item_whose_worker_died_is_sent_again_and_the_run_completes(roster, settings):
    run = run_create(question="Does the bone-marrow niche shape clonal fitness?", client_address="192.0.2.1")
    run_advance(run_id=run.pk)
    item = run.work_items.filter(step="generate").first()
    stale = long_ago(settings.OPEN_HYPOTHESIS_STALE_SECONDS)
    RunWorkItem.objects.filter(pk=item.pk).update(state="running", started_at=stale, attempts=1)
    assert SWEEPS["screening runs"]() >= 1
    item.refresh_from_db()
    assert item.state == "pending"
    assert drive(run).status == Run.Status.COMPLETED


def test_a_run_work_item_that_keeps_losing_its_worker_fails_and_the_run_goes_on(roster, settings):
    run = run_create(question="Does the bone-marrow niche shape clonal fitness?", client_address="192.0.2.1")
    run_advance(run_id=run.pk)
    item = run.work_items.filter(step="generate").first()
    stale = long_ago(settings.OPEN_HYPOTHESIS_STALE_SECONDS)
    RunWorkItem.objects.filter(pk=item.pk).update(
        state="running", started_at=stale, attempts=settings.OH_WORK_MAX_ATTEMPTS
    )
    SWEEPS["screening runs"]()
    item.refresh_from_db()
    assert item.state == "failed" and "stopped" in item.error
    run = drive(run)
    assert run.status == Run.Status.COMPLETED  # three generators of four are enough
    assert run.hypotheses.count() == 9


def test_a_coordinator_runs_a_failed_benchmark_task_again(db, server, coordinator, client):
    roster = make_roster(server.base_url, translator=None)
    benchmark = make_set({"tasks": [task("T1")]}, roster=roster)
    client.force_login(coordinator)
    client.post(f"/benchmarks/{benchmark.pk}/run/")
    benchmark_task = benchmark.benchmark_tasks.get()
    failed = benchmark_task.run
    Run.objects.filter(pk=failed.pk).update(status=Run.Status.FAILED_AT_GENERATE)
    assert "Run again" in client.get(f"/benchmarks/{benchmark.pk}/").content.decode()

    client.post(f"/benchmarks/{benchmark.pk}/rerun-task/", {"task": "T1"})
    benchmark_task.refresh_from_db()
    assert benchmark_task.run_id != failed.pk and benchmark_task.run.status == Run.Status.QUEUED
    assert drive(benchmark_task.run).status == Run.Status.COMPLETED
    assert benchmark.hypotheses.count() == 12

    response = client.post(f"/benchmarks/{benchmark.pk}/rerun-task/", {"task": "T1"}, follow=True)
    assert "Only a task whose run failed" in response.content.decode()


# Heartbeats -------------------------------------------------------------------------------------------------------


def _hold(row, *, claimed_ago: float, beat_ago: float) -> None:
    """A worker holds the row: claimed `claimed_ago` seconds ago, its heartbeat last touched `beat_ago` seconds ago."""
    now = timezone.now()
    type(row).objects.filter(pk=row.pk).update(
        state=type(row).RUNNING,
        claim_token=uuid.uuid4(),
        started_at=now - timedelta(seconds=claimed_ago),
        heartbeat_at=now - timedelta(seconds=beat_ago),
        attempts=1,
    )


@pytest.mark.parametrize("kind", sorted(PENDING_WORK))
def test_running_work_silent_for_a_minute_and_a_half_is_taken_back_with_the_default_settings(
    db, django_capture_on_commit_callbacks, kind
):
    make, _ = PENDING_WORK[kind]
    row = make()
    _hold(row, claimed_ago=120, beat_ago=91)  # its worker died a minute and a half ago
    sweep = SWEEPS["inspiration audits" if kind.startswith("inspiration") else kind]
    with django_capture_on_commit_callbacks() as sent:
        assert sweep() >= 1
    assert len(sent) >= 1
    row.refresh_from_db()
    assert row.state == type(row).PENDING and row.claim_token is None


@pytest.mark.parametrize("kind", sorted(PENDING_WORK))
def test_running_work_whose_heartbeat_is_fresh_is_kept_however_long_ago_it_was_claimed(
    db, django_capture_on_commit_callbacks, kind
):
    make, _ = PENDING_WORK[kind]
    row = make()
    _hold(row, claimed_ago=3 * 3600, beat_ago=10)  # a model call of hours, still beating
    sweep = SWEEPS["inspiration audits" if kind.startswith("inspiration") else kind]
    with django_capture_on_commit_callbacks() as sent:
        sweep()
    assert sent == []
    row.refresh_from_db()
    assert row.state == type(row).RUNNING and row.claim_token is not None


def test_the_default_sweeper_takes_back_silent_work_within_two_minutes(settings):
    assert settings.OH_HEARTBEAT_SECONDS * 4 <= settings.OH_SILENT_SECONDS  # a few missed beats, not one
    assert settings.OH_SILENT_SECONDS + settings.OH_SWEEP_SECONDS <= 120


def test_a_run_work_item_silent_for_a_minute_and_a_half_is_sent_again(roster, django_capture_on_commit_callbacks):
    run = run_create(question="Does the bone-marrow niche shape clonal fitness?", client_address="192.0.2.1")
    run_advance(run_id=run.pk)
    silent, alive = run.work_items.filter(step="generate")[:2]
    _hold(silent, claimed_ago=120, beat_ago=91)
    _hold(alive, claimed_ago=3 * 3600, beat_ago=10)
    with django_capture_on_commit_callbacks():
        SWEEPS["screening runs"]()
    silent.refresh_from_db()
    alive.refresh_from_db()
    assert silent.state == "pending" and alive.state == "running"
    run.refresh_from_db()
    assert run.resume_count == 0  # the run itself is not restarted while one of its items is alive


def test_a_long_model_call_that_still_heart_beats_is_never_taken_back(
    transactional_db, roster, script, settings, memory_broker
):
    """A generation call far longer than the silent time, with the sweeper running all along: the worker's heartbeat
    keeps the item; it is asked once and recorded once."""
    settings.OH_HEARTBEAT_SECONDS = 0.2
    settings.OH_SILENT_SECONDS = 1
    settings.OPEN_HYPOTHESIS_STALE_SECONDS = 1
    answer = threading.Event()
    calls = []

    def slow_generation(attempt):
        calls.append(attempt)
        answer.wait(60)
        return generation_reply("gen-opus")

    for model in GENERATORS:
        script.generate[model] = slow_generation
    run = run_create(question="Does the bone-marrow niche shape clonal fitness?", client_address="192.0.2.1")
    run_advance(run_id=run.pk)
    item = run.work_items.filter(step="generate").first()

    def work():
        try:
            work_item_perform(item_id=item.pk)
        finally:
            connection.close()

    worker = threading.Thread(target=work)
    worker.start()
    try:
        wait_for(lambda: calls, 60, "the model call")
        held = RunWorkItem.objects.get(pk=item.pk).claim_token
        swept_until = time.monotonic() + 4 * settings.OH_SILENT_SECONDS
        while time.monotonic() < swept_until:
            sweep_all()
            assert RunWorkItem.objects.get(pk=item.pk).claim_token == held
            time.sleep(0.2)
    finally:
        answer.set()
        worker.join(60)
    item.refresh_from_db()
    assert (item.state, item.attempts, len(calls)) == ("done", 1, 1)


def test_a_run_whose_worker_died_between_its_last_item_and_the_advance_is_advanced_again(
    roster, settings, django_capture_on_commit_callbacks
):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    run = run_create(question="Does the bone-marrow niche shape clonal fitness?", client_address="192.0.2.1")
    run_advance(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == Run.Status.GENERATING
    # Every item recorded, the run not moved on, and silent for a minute and a half.
    RunWorkItem.objects.filter(run=run).update(state="done")
    Run.objects.filter(pk=run.pk).update(last_progress_at=long_ago(90))
    with django_capture_on_commit_callbacks(execute=True):
        SWEEPS["screening runs"]()
    run.refresh_from_db()
    assert run.status != Run.Status.GENERATING and run.resume_count == 0

"""Recovery from faults, with real Celery workers (processes of their own) on a real Redis broker and PostgreSQL.

A worker killed with SIGKILL in the middle of a screening run, an export and a judging job at once: a second worker,
with the periodic sweeper (Celery beat) running in it, finishes all of it within three minutes with the default
settings (the dead worker's heartbeats stop; the sweeper takes the silent work back), and nothing is done twice.
PostgreSQL
restarted in the middle of a run (a server of the test's own, tests.postgres_cluster: the shared server is never
restarted); the broker down when a run is posted; a provider answering 500 for a while.
"""

import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import openpyxl
import pytest
from celery.contrib.testing.worker import start_worker
from celery.signals import task_postrun
from django.db import connection
from django.test import Client
from django.utils import timezone

from reviewapp.benchmarks.models import JudgeScore
from reviewapp.benchmarks.services.judging import judging_start
from reviewapp.benchmarks.services.sets import judge_add
from reviewapp.celery import app
from reviewapp.models import Assignment, BackgroundJob, Cohort, Proposal, Review
from reviewapp.protocol import CRITERION_FIELDS
from reviewapp.services.jobs import job_create
from screening.llm.models import ModelCall, ModelEndpoint
from screening.models import Forecast, Hypothesis, Run, RunWorkItem
from tests import factories
from tests.benchmark_support import hypothesis, make_set, task
from tests.conftest import skip_or_fail
from tests.postgres_cluster import ThrowawayCluster, server_programs
from tests.screening_support import (
    Script,
    ScriptedModelServer,
    broker_down,
    celery_on_test_redis,
    close_worker_connection,
    generation_reply,
    make_roster,
    simulated_default_roster,
    wait_for,
)

pytestmark = [pytest.mark.broker, pytest.mark.postgres]
ROOT = Path(__file__).resolve().parent.parent
QUESTION = "How does remodelling of the bone-marrow niche affect mutant clones?"
# Scaled-down sweeper (and retry) settings for the tests that are not about the sweeper's timing (the database
# restart): the sweeper runs every second, and work silent for this long counts as its worker's.
STALE_SECONDS = 4
SCALED_SWEEPER = {
    "OH_SWEEP_SECONDS": "1",
    "OH_HEARTBEAT_SECONDS": "1",
    "OH_SILENT_SECONDS": str(STALE_SECONDS),
    "OH_JOB_STALE_SECONDS": str(STALE_SECONDS),
    "OPEN_HYPOTHESIS_STALE_SECONDS": str(STALE_SECONDS),
    "OPEN_HYPOTHESIS_MAX_RESUMES": "100",
    "OH_WORK_MAX_ATTEMPTS": "5",
    "PROVIDER_BACKOFF_BASE_SECONDS": "0.2",
    "PROVIDER_BACKOFF_MAX_SECONDS": "1",
}
# A worker killed mid-work: its work is finished within this many seconds of a new worker's start (default settings).
RECOVERY_SECONDS = 180


@pytest.fixture
def broker_prefix(settings, monkeypatch, redis_url):
    """The project's Celery app on the test Redis under a prefix of its own; the prefix, for worker processes."""
    with celery_on_test_redis(settings, monkeypatch, redis_url, "faults"):
        yield settings.CELERY_BROKER_TRANSPORT_OPTIONS["global_keyprefix"]


class Workers:
    """Worker processes on the test database and broker; each is ended (SIGKILL) when the test ends."""

    def __init__(self, prefix: str, redis_url: str, var_dir: Path):
        self.prefix, self.redis_url, self.var_dir = prefix, redis_url, var_dir
        self.processes: list[subprocess.Popen] = []

    def start(self, *, beat: bool = False, scaled_sweeper: bool = False) -> subprocess.Popen:
        """A worker process (with beat: the periodic sweeper in it), on the default settings unless scaled_sweeper."""
        database = connection.settings_dict
        # The machine's own sweeper settings and provider keys do not reach the worker.
        inherited = {name: value for name, value in os.environ.items() if name not in SCALED_SWEEPER}
        for name in ("OPENAI_API_KEY", "XAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
            inherited.pop(name, None)
        environment = {
            **inherited,
            "DATABASE_URL": (
                f"postgres://{database['USER']}:{database['PASSWORD'] or ''}@{database['HOST']}:{database['PORT']}"
                f"/{database['NAME']}"
            ),
            "CELERY_BROKER_URL": self.redis_url,
            "OH_VAR_DIR": str(self.var_dir),
            **(SCALED_SWEEPER if scaled_sweeper else {}),
        }
        options = ["--beat", str(self.var_dir / f"beat-{len(self.processes)}")] if beat else []
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.worker_process", self.prefix, *options],
            cwd=ROOT,
            env=environment,
            start_new_session=True,
        )
        self.processes.append(process)
        return process

    @staticmethod
    def kill(process: subprocess.Popen) -> None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)

    def stop_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                self.kill(process)


@pytest.fixture
def workers(broker_prefix, redis_url, tmp_path, settings, transactional_db, needs_postgres):
    settings.VAR_DIR = tmp_path
    pool = Workers(broker_prefix, redis_url, tmp_path)
    yield pool
    pool.stop_all()


@pytest.fixture
def slow_simulated_roster(settings, monkeypatch, transactional_db):
    """Every simulated call takes half a second: a worker can be killed in the middle of the work."""
    with simulated_default_roster(settings, monkeypatch, latency=0.5, seed=3) as server:
        yield server


def post_run() -> Run:
    response = Client().post(
        "/api/v1/open-hypothesis/runs",
        {"question": QUESTION},
        content_type="application/json",
        REMOTE_ADDR="198.51.100.9",
    )
    assert response.status_code == 202, response.content
    return Run.objects.get(public_id=response.json()["id"])


def assert_done_once(run: Run) -> None:
    """The run completed and nothing of it was recorded twice."""
    assert run.status == Run.Status.COMPLETED, run.error
    assert run.hypotheses.count() == 40
    assert Counter(run.hypotheses.values_list("label", flat=True)).most_common(1)[0][1] == 1
    per_author = Counter(Hypothesis.objects.filter(run=run).values_list("author_name", flat=True))
    assert set(per_author.values()) == {10}
    forecasts = Counter(Forecast.objects.filter(hypothesis__run=run).values_list("hypothesis_id", "stage", "model_key"))
    assert forecasts and max(forecasts.values()) == 1
    assert not RunWorkItem.objects.filter(run=run).exclude(state__in=("done", "failed")).exists()


# A worker killed mid-work ------------------------------------------------------------------------------------------


def _cohort_with_reviews(proposals: int, reviewers: int) -> Cohort:
    cohort = factories.make_cohort(name="Killed export")
    research_task = factories.make_task()
    made = Proposal.objects.bulk_create(
        [
            Proposal(task=research_task, external_id=f"K-{n}", statement=f"Statement {n}.", content_sha256=f"{n:064}")
            for n in range(proposals)
        ]
    )
    cohort.proposals.add(*made)
    people = [factories.make_user("reviewer", username=f"killed-export-{n}") for n in range(reviewers)]
    assignments = Assignment.objects.bulk_create(
        [
            Assignment(cohort=cohort, reviewer=person, proposal=proposal, position=position)
            for person in people
            for position, proposal in enumerate(made, start=1)
        ]
    )
    Review.objects.bulk_create(
        [
            Review(
                assignment=assignment,
                status=Review.Status.SUBMITTED,
                overall=3,
                recommendation="prioritize",
                flaw_verdict="absent",
                submitted_at=timezone.now(),
                **{field: "2" for field in CRITERION_FIELDS},
            )
            for assignment in assignments
        ]
    )
    return cohort


def test_work_whose_worker_is_killed_is_finished_by_another_worker_within_three_minutes_by_default(
    workers, slow_simulated_roster, coordinator
):
    """One worker in the middle of a public run, an export and a judging job is killed (SIGKILL); a new worker with
    the periodic sweeper, both on the default settings, finishes all three, each piece done once."""
    cohort = _cohort_with_reviews(proposals=200, reviewers=60)
    data = {
        "tasks": [task(f"T{n}") for n in range(3)],
        "hypotheses": [hypothesis(f"T{n}", f"h{n}-{k}") for n in range(3) for k in range(30)],
    }
    benchmark = make_set(data)
    judge = judge_add(benchmark=benchmark, endpoint=ModelEndpoint.objects.filter(is_simulated=True).first())
    first = workers.start()
    export = job_create(kind="reviews_xlsx", params={"cohort_id": cohort.pk, "unblinded": True}, user=coordinator)
    (judging,) = judging_start(benchmark=benchmark, user=coordinator)
    run = post_run()
    wait_for(
        lambda: (
            BackgroundJob.objects.filter(pk=export.pk, state="running", progress__gt=0).exists()
            and JudgeScore.objects.filter(judge=judge).exists()
            and RunWorkItem.objects.filter(run=run, state="running").exists()
        ),
        90,
        "the export's progress, the first scores and a claimed work item",
    )
    workers.kill(first)
    export.refresh_from_db()
    assert export.state == BackgroundJob.State.RUNNING and export.progress < 12_000  # killed in the middle
    assert JudgeScore.objects.filter(judge=judge).count() < 90
    assert RunWorkItem.objects.filter(run=run, state="running").exists()

    restarted = time.monotonic()
    workers.start(beat=True)
    ended = ("succeeded", "failed")
    wait_for(
        lambda: (
            BackgroundJob.objects.filter(pk__in=(export.pk, judging.pk), state__in=ended).count() == 2
            and Run.objects.filter(pk=run.pk).exclude(status__in=Run.ACTIVE_STATUSES).exists()
        ),
        RECOVERY_SECONDS,
        "the end of the run, the export and the judging",
    )
    print(f"recovered and finished {time.monotonic() - restarted:.0f} s after the restart")

    export.refresh_from_db()
    assert export.state == BackgroundJob.State.SUCCEEDED, export.error
    assert export.attempts == 2 and export.progress == export.total == 12_000
    rows = sum(1 for _ in openpyxl.load_workbook(export.result_path, read_only=True).active.iter_rows())
    assert rows == 12_001  # the header and each review once
    judging.refresh_from_db()
    assert judging.state == BackgroundJob.State.SUCCEEDED, judging.error
    scored = Counter(JudgeScore.objects.filter(judge=judge).values_list("hypothesis_id", flat=True))
    assert len(scored) == 90 and set(scored.values()) == {1}
    assert_done_once(Run.objects.get(pk=run.pk))


# The database and the broker ---------------------------------------------------------------------------------------


@pytest.fixture
def own_postgres(transactional_db, needs_postgres):
    """A PostgreSQL server of this test's own (tests.postgres_cluster), to restart mid-run: the shared server at 5432
    holds other people's databases and is never restarted. Yields the cluster; the test calls
    `adopt_test_database()` once its fixtures have written their data."""
    programs = server_programs()
    if programs is None:
        skip_or_fail("needs PostgreSQL's server programs (initdb, pg_ctl) to run a server of the test's own")
    cluster = ThrowawayCluster(programs)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.give_back_test_database()
        cluster.destroy()


def _server_started_at():
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_postmaster_start_time()")
        return cursor.fetchone()[0]


def test_a_run_goes_on_when_postgresql_restarts(own_postgres, workers, slow_simulated_roster):
    """The run's database is a server of the test's own, restarted for real (every connection ended, the server
    down for a moment) at generation and again while the run goes on: the run still completes, nothing twice."""
    own_postgres.adopt_test_database()
    workers.start(beat=True, scaled_sweeper=True)
    run = post_run()
    wait_for(lambda: ModelCall.objects.filter(run=run).exists(), 60, "the first model calls")
    started = _server_started_at()
    for _ in range(2):
        own_postgres.restart()
        connection.close()  # this process's connection ended with the server
        time.sleep(1)
    assert _server_started_at() > started
    run = wait_for(
        lambda: Run.objects.filter(pk=run.pk).exclude(status__in=Run.ACTIVE_STATUSES).first(), 180, "the run's end"
    )
    assert_done_once(run)


def test_a_run_posted_while_the_broker_is_down_is_refused_with_503_and_nothing_is_written(
    settings, monkeypatch, roster, transactional_db
):
    with broker_down(settings, monkeypatch):
        response = Client().post(
            "/api/v1/open-hypothesis/runs",
            {"question": QUESTION},
            content_type="application/json",
            REMOTE_ADDR="198.51.100.9",
        )
        coordinator = factories.make_user("coordinator")
        client = Client()
        client.force_login(coordinator)
        cohort = factories.make_cohort()
        job_page = client.post(f"/cohorts/{cohort.pk}/reviews.xlsx/prepare", follow=True)
    assert response.status_code == 503, response.content
    assert response.json()["error"] == "queue_unavailable" and int(response["Retry-After"]) > 0
    assert not Run.objects.exists() and not RunWorkItem.objects.exists()
    assert "work queue cannot be reached" in job_page.content.decode()
    assert not BackgroundJob.objects.exists()


# A provider failing for a while ------------------------------------------------------------------------------------

OUTAGE_SECONDS = 6


def test_a_run_outlasts_a_provider_answering_500_for_a_while(
    needs_postgres, transactional_db, settings, monkeypatch, redis_url
):
    """One generator's provider answers 500 for OUTAGE_SECONDS (scaled down from the minute of a real outage, with
    the backoff scaled alike): the transport's retries wait it out and the run completes with every generator."""
    settings.PROVIDER_BACKOFF_BASE_SECONDS = 0.5
    settings.PROVIDER_BACKOFF_MAX_SECONDS = 4
    settings.PROVIDER_MAX_ATTEMPTS = 8
    script = Script()
    down_until = time.monotonic() + OUTAGE_SECONDS

    def generate(attempt):
        if time.monotonic() < down_until:
            return 500, {"error": {"message": "internal error", "type": "server_error", "param": None, "code": None}}
        return generation_reply("gen-opus")

    script.generate["gen-opus"] = generate
    server = ScriptedModelServer(script)
    try:
        make_roster(server.base_url)
        with celery_on_test_redis(settings, monkeypatch, redis_url, f"outage-{uuid.uuid4().hex[:6]}"):
            task_postrun.connect(close_worker_connection)
            try:
                with start_worker(app, pool="threads", concurrency=8, perform_ping_check=False, shutdown_timeout=30):
                    run = post_run()
                    run = wait_for(
                        lambda: Run.objects.filter(pk=run.pk).exclude(status__in=Run.ACTIVE_STATUSES).first(),
                        120,
                        "the run's end",
                    )
            finally:
                task_postrun.disconnect(close_worker_connection)
    finally:
        server.stop()
    assert run.status == Run.Status.COMPLETED, run.error
    failures = ModelCall.objects.filter(run=run, purpose="generate", http_status=500)
    assert failures.count() >= 2
    assert run.hypotheses.count() == 12  # every generator's three, the failing one's included
    assert Counter(run.hypotheses.values_list("author_name", flat=True)).most_common(1)[0][1] == 3

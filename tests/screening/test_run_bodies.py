"""A finished run's API body is stored in the database and served in one query, and a write to the run, from
whichever process, makes the stored body (and the one each process remembers) stale at once: every worker then
serves the new body."""

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from screening.api.runs import _finished_bodies
from screening.models import Hypothesis, Run, RunBody, Translation
from screening.services.work import hypothesis_literature_record

ROOT = Path(__file__).resolve().parent.parent.parent


def make_run(status=Run.Status.COMPLETED, language=Run.Language.EN) -> Run:
    run = Run.objects.create(
        question="How does the niche shape clones?", shuffle_seed=1, status=status, language=language, public=True
    )
    Hypothesis.objects.bulk_create(
        Hypothesis(run=run, source="client", source_index=n, label=f"H{n}", position=n, statement=f"Hypothesis {n}.")
        for n in range(1, 6)
    )
    if status not in Run.ACTIVE_STATUSES:
        Run.objects.filter(pk=run.pk).update(finished_at=timezone.now())
    return run


def record_verdict(run: Run, verdict: str) -> None:
    """A change to a run as a worker records one: the hypothesis's verdict and the run's progress, together."""
    with transaction.atomic():
        hypothesis = run.hypotheses.get(label="H1")
        hypothesis_literature_record(hypothesis=hypothesis, verdict=verdict, evidence="quoted", reference=None)
        now = timezone.now()
        Run.objects.filter(pk=run.pk).update(last_progress_at=now, updated_at=now)


def get_run(client, run, **params):
    response = client.get(f"/api/v1/open-hypothesis/runs/{run.public_id}", params)
    assert response.status_code == 200, response.content
    return response


@pytest.mark.django_db
def test_a_finished_run_is_rendered_once_then_served_in_one_query():
    run = make_run()
    first = get_run(Client(), run)
    assert RunBody.objects.filter(run=run, language="en").count() == 1

    with CaptureQueriesContext(connection) as queries:
        again = get_run(Client(), run)
    assert len(queries) == 1  # the run's updated_at: the body this process served is still the run's
    assert again.content == first.content

    _finished_bodies.bodies.clear()  # a process that has not served it: the stored body, not rendered again
    with CaptureQueriesContext(connection) as queries:
        fresh = get_run(Client(), run)
    assert len(queries) == 2 and not any("screening_hypothesis" in query["sql"] for query in queries)
    assert fresh.content == first.content


@pytest.mark.django_db
def test_a_write_to_the_run_makes_its_stored_body_stale():
    run = make_run()
    assert get_run(Client(), run).json()["hypotheses"][0]["literature"]["verdict"] is None

    record_verdict(run, Hypothesis.Verdict.NOT_REPORTED)

    body = get_run(Client(), run).json()
    assert body["hypotheses"][0]["literature"]["verdict"] == "not_reported"
    assert RunBody.objects.filter(run=run).count() == 1  # stored again, in place
    assert get_run(Client(), run).json() == body


@pytest.mark.django_db
def test_runs_still_changing_and_pending_translations_are_never_stored():
    running = make_run(status=Run.Status.SCREENING_STAGE2)
    get_run(Client(), running)
    translating = make_run(language=Run.Language.RU)
    Translation.objects.create(run=translating, language="ru")
    assert get_run(Client(), translating, lang="ru").json()["translation"]["state"] == "pending"
    get_run(Client(), translating)  # its English body does not wait for the translation

    assert not RunBody.objects.filter(run=running).exists()
    assert list(RunBody.objects.filter(run=translating).values_list("language", flat=True)) == ["en"]


@pytest.mark.django_db
def test_each_language_has_its_own_stored_body():
    run = make_run(language=Run.Language.RU)
    Translation.objects.create(
        run=run,
        language="ru",
        state=Translation.State.READY,
        hypotheses={f"H{n}": {"statement": f"Гипотеза {n}.", "mechanism": "", "prediction": ""} for n in range(1, 6)},
    )
    assert get_run(Client(), run, lang="ru").json()["hypotheses"][0]["statement"] == "Гипотеза 1."
    assert get_run(Client(), run).json()["hypotheses"][0]["statement"] == "Hypothesis 1."
    assert get_run(Client(), run, lang="ru").json()["hypotheses"][0]["statement"] == "Гипотеза 1."
    assert sorted(RunBody.objects.filter(run=run).values_list("language", flat=True)) == ["en", "ru"]


# Across processes: two gunicorn workers on the test database -----------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_serving(port: int, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, "gunicorn stopped"
        try:
            answer = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            answer.request("GET", "/api/v1/open-hypothesis/runs/not-a-run")
            answer.getresponse().read()
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("gunicorn did not start")


@pytest.fixture
def gunicorn(transactional_db, needs_postgres, tmp_path):
    """Two gunicorn workers (processes of their own) on the test database, persistent connections as in production."""
    database = connection.settings_dict
    url = (
        f"postgres://{database['USER']}:{database['PASSWORD'] or ''}@{database['HOST']}:{database['PORT']}"
        f"/{database['NAME']}"
    )
    port = free_port()
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "reviewapp.wsgi:application", "--workers", "2",
         "--bind", f"127.0.0.1:{port}", "--log-level", "warning"],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": url, "DATABASE_CONN_MAX_AGE": "600", "OH_VAR_DIR": str(tmp_path)},
        start_new_session=True,
    )  # fmt: skip
    try:
        wait_until_serving(port, process)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)


def verdicts(port: int, run: Run, requests: int) -> set:
    """The first hypothesis's verdict in each of `requests` answers, a connection each (so both workers answer)."""
    seen = set()
    for _ in range(requests):
        answer = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        answer.request("GET", f"/api/v1/open-hypothesis/runs/{run.public_id}")
        response = answer.getresponse()
        assert response.status == 200
        seen.add(json.loads(response.read())["hypotheses"][0]["literature"]["verdict"])
        answer.close()
    return seen


@pytest.mark.postgres
def test_every_worker_serves_a_change_made_by_another_process_at_once(gunicorn):
    run = make_run()
    assert verdicts(gunicorn, run, 20) == {None}  # both workers have served (and one stored) the finished run

    record_verdict(run, Hypothesis.Verdict.REPORTED)  # this process: another worker, as far as gunicorn knows

    assert verdicts(gunicorn, run, 20) == {"reported"}
    record_verdict(run, Hypothesis.Verdict.CONTRADICTED)
    assert verdicts(gunicorn, run, 20) == {"contradicted"}

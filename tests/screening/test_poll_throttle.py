"""Anonymous polls of a run are throttled per client address (OH_ANONYMOUS_POLLS_PER_MINUTE, the API and the page
counting together): 429 with Retry-After and the API's error body; other addresses and signed-in callers go on; the
counts are shared by every web process."""

import http.client
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

from reviewapp.services.accounts import token_create
from screening.models import Run
from tests.screening.test_run_bodies import free_port, wait_until_serving

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.fixture
def public_run(db) -> Run:
    return Run.objects.create(question="Does the niche shape clones?", shuffle_seed=1, public=True)


def api(run: Run) -> str:
    return f"/api/v1/open-hypothesis/runs/{run.public_id}"


def test_the_default_leaves_room_for_the_pages_own_polling_of_many_runs():
    polls_of_one_page = 60 / settings.OPEN_HYPOTHESIS_POLL_SECONDS
    assert settings.OH_ANONYMOUS_POLLS_PER_MINUTE >= 20 * polls_of_one_page


def test_anonymous_polls_over_the_limit_get_429_with_retry_after(public_run, settings):
    settings.OH_ANONYMOUS_POLLS_PER_MINUTE = 5
    client = Client()
    for _ in range(3):
        assert client.get(api(public_run), REMOTE_ADDR="198.51.100.7").status_code == 200
    for _ in range(2):  # the page and its download count with the API
        assert client.get(f"/open-hypothesis/{public_run.public_id}", REMOTE_ADDR="198.51.100.7").status_code == 200
    refused = client.get(api(public_run), REMOTE_ADDR="198.51.100.7")
    assert refused.status_code == 429
    assert refused.json()["error"] == "throttled" and refused.json()["detail"]
    assert 0 < int(refused["Retry-After"]) <= 60
    page = client.get(f"/open-hypothesis/{public_run.public_id}", REMOTE_ADDR="198.51.100.7")
    assert page.status_code == 429 and 0 < int(page["Retry-After"]) <= 60
    assert client.get(api(public_run), REMOTE_ADDR="198.51.100.8").status_code == 200  # another address


def test_an_ipv6_client_cannot_rotate_addresses_past_the_throttle(public_run, settings):
    settings.OH_ANONYMOUS_POLLS_PER_MINUTE = 3
    statuses = [Client().get(api(public_run), REMOTE_ADDR=f"2001:db8:5:5::{n}").status_code for n in range(1, 6)]
    assert statuses == [200, 200, 200, 429, 429]


def test_signed_in_callers_are_not_throttled(public_run, settings, coordinator):
    settings.OH_ANONYMOUS_POLLS_PER_MINUTE = 2
    _, key = token_create(user=coordinator)
    for _ in range(5):
        response = APIClient().get(api(public_run), REMOTE_ADDR="198.51.100.7", HTTP_AUTHORIZATION=f"Token {key}")
        assert response.status_code == 200


@pytest.mark.postgres
def test_two_gunicorn_workers_share_the_counts(transactional_db, needs_postgres, tmp_path):
    run = Run.objects.create(question="Does the niche shape clones?", shuffle_seed=1, public=True)
    database = connection.settings_dict
    url = (
        f"postgres://{database['USER']}:{database['PASSWORD'] or ''}@{database['HOST']}:{database['PORT']}"
        f"/{database['NAME']}"
    )
    port = free_port()
    environment = {
        **os.environ,
        "DATABASE_URL": url,
        "OH_VAR_DIR": str(tmp_path),
        "OH_ANONYMOUS_POLLS_PER_MINUTE": "10",
        # The polls below come from an address of their own, apart from the waits for the server to start.
        "OPEN_HYPOTHESIS_TRUSTED_PROXY_HEADER": "X-Forwarded-For",
    }
    environment.pop("OH_CACHE_URL", None)
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "reviewapp.wsgi:application", "--workers", "2",
         "--bind", f"127.0.0.1:{port}", "--log-level", "warning"],
        cwd=ROOT,
        env=environment,
        start_new_session=True,
    )  # fmt: skip
    try:
        wait_until_serving(port, process)
        statuses = []
        for _ in range(14):  # a connection each, so both workers answer
            answer = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            answer.request(
                "GET", f"/api/v1/open-hypothesis/runs/{run.public_id}", headers={"X-Forwarded-For": "198.51.100.9"}
            )
            response = answer.getresponse()
            response.read()
            statuses.append(response.status)
            answer.close()
    finally:
        process.terminate()
        process.wait(timeout=30)
    # Ten polls in a minute in all, not ten a worker.
    assert statuses == [200] * 10 + [429] * 4, statuses

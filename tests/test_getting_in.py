"""A newcomer's way in: the start-up banner (address, public page, API reference, current demo logins) kept in a file
only its owner can read, the links to the public Open Hypothesis page, and a second start that only checks."""

import http.client
import io
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from reviewapp.demo.banner import BANNER_FILE_NAME
from reviewapp.demo.cohort import DEMO_ACCOUNTS
from reviewapp.management.commands import prepare_local

ROOT = Path(__file__).resolve().parent.parent
LOGIN_LINE = re.compile(r"^\s+(demo-[\w-]+)\s+(\w+)\s+(\S+)$", re.MULTILINE)


@pytest.fixture
def var_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    return tmp_path


def load_demo(**options) -> str:
    out = io.StringIO()
    call_command("load_demo", stdout=out, **options)
    return out.getvalue()


def banner_logins(path: Path) -> dict[str, str]:
    return {username: password for username, _, password in LOGIN_LINE.findall(path.read_text())}


def test_the_banner_file_is_readable_by_its_owner_only_and_holds_the_current_logins(db, var_dir, settings):
    settings.PORT = 8123
    output = load_demo()

    path = var_dir / BANNER_FILE_NAME
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text()
    assert "http://127.0.0.1:8123/" in text
    assert "http://127.0.0.1:8123/open-hypothesis/" in text
    assert "http://127.0.0.1:8123/api/v1/docs" in text
    assert "demonstration data" in text
    first = banner_logins(path)
    assert set(first) == {username for username, _ in DEMO_ACCOUNTS}
    assert text.strip() in output  # printed as it is kept

    # The next start changes every password; the file shows the new ones, which work, and the old ones do not.
    load_demo(no_logins=True)
    second = banner_logins(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for username in first:
        assert first[username] != second[username]
        fresh = Client().post("/accounts/login/", {"username": username, "password": second[username]})
        assert fresh.status_code == 302
        stale = Client().post("/accounts/login/", {"username": username, "password": first[username]})
        assert "_auth_user_id" not in stale.wsgi_request.session


def test_without_logins_the_output_names_the_file_and_holds_no_password(db, var_dir):
    output = load_demo(no_logins=True)

    passwords = banner_logins(var_dir / BANNER_FILE_NAME).values()
    assert str(var_dir / BANNER_FILE_NAME) in output
    assert not any(password in output for password in passwords)


def test_an_anonymous_visitor_at_the_root_finds_the_public_page_and_the_login(client):
    response = client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'href="/open-hypothesis/"' in html and 'href="/accounts/login/"' in html
    assert 'href="/api/v1/docs"' in html


def test_the_login_page_links_the_public_page(client):
    html = client.get("/accounts/login/").content.decode()
    assert 'href="/open-hypothesis/"' in html


def test_a_signed_in_person_is_still_sent_to_their_work(client, reviewer, analyst):
    client.force_login(reviewer)
    assert client.get("/")["Location"] == reverse("review-queue")
    client.force_login(analyst)
    assert client.get("/")["Location"] == reverse("cohort-list")


def test_a_second_prepare_applies_nothing_and_collects_nothing(db, var_dir, settings, tmp_path):
    settings.STATIC_ROOT = tmp_path / "static"
    settings.STATIC_ROOT.mkdir()
    call_command("prepare_local", "--static", "--no-logins", stdout=io.StringIO())
    stamp = settings.STATIC_ROOT / prepare_local.STATIC_STAMP
    collected = sorted(p.relative_to(settings.STATIC_ROOT) for p in settings.STATIC_ROOT.rglob("*.css"))
    assert collected and stamp.read_text() == prepare_local.static_fingerprint()
    stamped_at = stamp.stat().st_mtime_ns
    (settings.STATIC_ROOT / "css" / "app.css").unlink()  # would come back if collectstatic ran again

    out = io.StringIO()
    call_command("prepare_local", "--static", "--no-logins", stdout=out)

    assert prepare_local.unapplied_migrations() == 0
    assert "migration" not in out.getvalue().lower()
    assert stamp.stat().st_mtime_ns == stamped_at
    assert not (settings.STATIC_ROOT / "css" / "app.css").exists()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_run_local_prints_the_banner_last_once_every_server_is_up(tmp_path):
    """The real start script on a demo database of its own: when the banner is printed the web server (gunicorn, with
    threads), the simulated model server and the worker all answer; the servers' logs went to their files under
    logs/, which the banner names, and while the worker does the demo work nothing but warnings reaches the terminal
    after the banner."""
    port, simulator_port = _free_port(), _free_port()
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")},
        "OH_VAR_DIR": str(tmp_path),
        "PORT": str(port),
        "SIMULATOR_PORT": str(simulator_port),
        "CELERY_CONCURRENCY": "1",
    }
    for name in ("OPENAI_API_KEY", "XAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "OH_LOG_FILE"):
        env.pop(name, None)
    prepare = [sys.executable, "manage.py", "prepare_local", "--no-logins"]
    subprocess.run(prepare, cwd=ROOT, env=env, check=True, capture_output=True)
    log = tmp_path / "run-local.log"
    logs = tmp_path / "logs"
    with open(log, "w") as handle:
        process = subprocess.Popen(
            ["bin/run-local"], cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + 180
        while "readable only by you" not in log.read_text():
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        assert (tmp_path / "worker.ready").exists()
        for url in (f"http://127.0.0.1:{port}/open-hypothesis/", f"http://127.0.0.1:{simulator_port}/health"):
            assert subprocess.run(["curl", "-sf", "-o", "/dev/null", url]).returncode == 0, url
        text = log.read_text()
        banner = (tmp_path / BANNER_FILE_NAME).read_text()
        tail = text[text.rindex("Open Hypothesis: http://") :]
        assert tail.startswith(banner.splitlines()[0])
        assert banner.strip() in tail
        assert f"Logs: {logs}/{{web,worker,beat,simulator}}.log (`make logs` follows them)" in text

        # The web server is gunicorn, and it keeps a connection open between a page's requests.
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("GET", "/accounts/login/")
        answer = connection.getresponse()
        answer.read()
        assert answer.getheader("Server") == "gunicorn"
        connected = connection.sock
        time.sleep(3)  # longer than gunicorn's default keep-alive (2 s), which reset a reviewer's autosave
        connection.request("GET", "/accounts/login/")
        assert connection.getresponse().status == 200 and connection.sock is connected
        connection.close()

        # The servers' start-up output and the worker's log of the demo work went to their files; the terminal got
        # none of it, but does get a warning.
        while "succeeded" not in (logs / "worker.log").read_text():
            assert process.poll() is None and time.monotonic() < deadline + 180, log.read_text()
            time.sleep(0.5)
        assert "Listening at" in (logs / "web.log").read_text()
        assert "GET /accounts/login/" in (logs / "web.log").read_text()
        assert "celery@" in (logs / "worker.log").read_text()
        assert "Simulated model server" in (logs / "simulator.log").read_text()
        assert "beat: Starting" in (logs / "beat.log").read_text()
        subprocess.run(["curl", "-s", "-o", "/dev/null", f"http://127.0.0.1:{port}/no-page-of-ours"])
        while "no-page-of-ours" not in log.read_text():
            assert time.monotonic() < deadline + 240, log.read_text()
            time.sleep(0.2)
        after_banner = log.read_text()[text.rindex("Open Hypothesis: http://") :][len(tail) :]
        assert after_banner.strip() == "Not Found: /no-page-of-ours", after_banner
        for output in ("celery@", "Listening at", "Booting worker", "HTTP Request", "Starting development server"):
            assert output not in text, output
    finally:
        # The worker finishes the demo work it has begun before it stops; the test does not wait for that.
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)

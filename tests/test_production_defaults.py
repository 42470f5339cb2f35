"""Production defaults: the HTTPS switch, the secret key, the Content-Security-Policy and Permissions-Policy, the
per-client limit of IPv6 hosts, one-line refusals in the log, the settings file, and `make run` keeping to this
machine."""

import io
import logging
import os
import re
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import factories

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
RUNS = "/api/v1/open-hypothesis/runs"
QUESTION = "How does remodelling of the bone-marrow niche affect mutant clones?"
# Variables of the machine that would change what a fresh process reads.
_OWN = re.compile(
    r"^(DEBUG|SECRET_KEY|ALLOWED_HOSTS|OH_|OPEN_HYPOTHESIS_|LITERATURE_|PROVIDER_|CELERY_|DATABASE_URL|DJANGO_ALLOW_ASYNC)"
)


def clean_environment(tmp_path, **variables) -> dict:
    environment = {name: value for name, value in os.environ.items() if not _OWN.match(name)}
    environment.update({"OH_VAR_DIR": str(tmp_path / "var"), "OH_ENV_FILE": str(tmp_path / "no.env"), **variables})
    return environment


def manage(tmp_path, *arguments, **variables) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PYTHON, "manage.py", *arguments],
        cwd=ROOT,
        env=clean_environment(tmp_path, **variables),
        capture_output=True,
        text=True,
        timeout=120,
    )


def settings_of(tmp_path, names: list[str], **variables) -> dict:
    code = (
        "import json, django; from django.conf import settings; django.setup(); "
        f"print(json.dumps({{name: getattr(settings, name) for name in {names!r}}}, default=str))"
    )
    result = subprocess.run(
        [PYTHON, "-c", code],
        cwd=ROOT,
        env=clean_environment(tmp_path, DJANGO_SETTINGS_MODULE="reviewapp.settings", **variables),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    import json

    return json.loads(result.stdout)


HTTPS = {"DEBUG": "false", "OH_HTTPS": "true", "ALLOWED_HOSTS": "review.example.org"}


def test_the_https_mode_passes_the_deployment_check(tmp_path):
    result = manage(
        tmp_path, "check", "--deploy", "--fail-level", "WARNING", SECRET_KEY=secrets.token_urlsafe(50), **HTTPS
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_the_https_mode_sets_secure_cookies_hsts_redirect_and_the_proxy_header(tmp_path):
    names = [
        "SESSION_COOKIE_SECURE",
        "CSRF_COOKIE_SECURE",
        "SECURE_SSL_REDIRECT",
        "SECURE_HSTS_SECONDS",
        "SECURE_PROXY_SSL_HEADER",
    ]
    values = settings_of(tmp_path, names, SECRET_KEY=secrets.token_urlsafe(50), **HTTPS)
    assert values["SESSION_COOKIE_SECURE"] and values["CSRF_COOKIE_SECURE"] and values["SECURE_SSL_REDIRECT"]
    assert values["SECURE_HSTS_SECONDS"] >= 31_536_000
    assert values["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]


@pytest.mark.parametrize("key", [None, "short-key"])
def test_the_https_mode_refuses_the_built_in_key_and_says_what_to_set(tmp_path, key):
    variables = dict(HTTPS, **({"SECRET_KEY": key} if key else {}))
    result = manage(tmp_path, "check", **variables)
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr and "OH_HTTPS" in result.stderr


PUBLISHED_KEY = "insecure-local-only-key-set-SECRET_KEY-in-production"  # the key earlier releases fell back to


def test_without_debug_the_published_key_is_refused_at_start_up_naming_secret_key(tmp_path):
    result = manage(tmp_path, "check", DEBUG="false", SECRET_KEY=PUBLISHED_KEY)
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr and "published" in result.stderr


def test_the_deployment_check_fails_on_the_published_key(tmp_path):
    result = manage(tmp_path, "check", "--deploy", DEBUG="true", SECRET_KEY=PUBLISHED_KEY)
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stdout + result.stderr


def test_without_a_secret_key_each_install_makes_its_own_and_keeps_it_private(tmp_path):
    first = settings_of(tmp_path, ["SECRET_KEY", "DEBUG"])
    assert not first["DEBUG"] and first["SECRET_KEY"] != PUBLISHED_KEY and len(first["SECRET_KEY"]) >= 50
    key_file = tmp_path / "var" / "secret-key"
    assert key_file.read_text().strip() == first["SECRET_KEY"]
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert settings_of(tmp_path, ["SECRET_KEY"])["SECRET_KEY"] == first["SECRET_KEY"]  # the same at the next start
    other_install = tmp_path / "other"
    other_install.mkdir()
    assert settings_of(other_install, ["SECRET_KEY"])["SECRET_KEY"] != first["SECRET_KEY"]
    result = manage(tmp_path, "check", "--deploy")
    assert "SECRET_KEY" not in result.stdout + result.stderr


def test_a_dotenv_file_is_read_and_the_environment_wins_over_it(tmp_path):
    env_file = tmp_path / "settings.env"
    env_file.write_text("OPEN_HYPOTHESIS_DAILY_CAP=7\nOPEN_HYPOTHESIS_QUEUE_LIMIT=9\n")
    values = settings_of(
        tmp_path,
        ["OPEN_HYPOTHESIS_DAILY_CAP", "OPEN_HYPOTHESIS_QUEUE_LIMIT"],
        OH_ENV_FILE=str(env_file),
        OPEN_HYPOTHESIS_QUEUE_LIMIT="11",
    )
    assert values == {"OPEN_HYPOTHESIS_DAILY_CAP": 7, "OPEN_HYPOTHESIS_QUEUE_LIMIT": 11}


# Imports the settings with os.environ replaced by a mapping that notes every name the project's own code reads (not
# the libraries it imports); prints the names.
_NAMES_READ = """
import json, os, sys
own = os.path.join(os.getcwd(), "reviewapp") + os.sep
read = set()
def note(name):
    if sys._getframe(2).f_code.co_filename.startswith(own):
        read.add(name)
class Recording(dict):
    def get(self, name, default=None):
        note(name)
        return super().get(name, default)
    def __getitem__(self, name):
        note(name)
        return super().__getitem__(name)
    def __contains__(self, name):
        note(name)
        return super().__contains__(name)
os.environ = Recording(os.environ)
import reviewapp.settings
print(json.dumps(sorted(read)))
"""
# Named in the file's first lines instead: it says where the file is, so it cannot be set in the file.
_NAMED_IN_THE_HEADER = {"OH_ENV_FILE"}


def documented_in_env_example() -> dict[str, str]:
    return dict(re.findall(r"^# ([A-Z][A-Z0-9_]+)=(.*)$", (ROOT / ".env.example").read_text(), re.MULTILINE))


def test_env_example_lists_every_variable_the_settings_read(tmp_path):
    """Every environment variable the settings module reads, in the default mode and in the HTTPS mode (whose
    settings are read only then), has its line in .env.example; so do the simulated server's knobs."""
    read = set()
    for variables in ({}, dict(HTTPS, SECRET_KEY=secrets.token_urlsafe(50))):
        result = subprocess.run(
            [PYTHON, "-c", _NAMES_READ],
            cwd=ROOT,
            env=clean_environment(tmp_path, **variables),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        read |= set(__import__("json").loads(result.stdout))
    assert {"DATABASE_URL", "OH_HSTS_SECONDS", "PORT"} <= read  # the recording sees both modes
    from screening.llm.simulator import SimulatorConfig

    read |= {f"SIMULATOR_{field.upper()}" for field in SimulatorConfig.__dataclass_fields__}
    missing = sorted(read - set(documented_in_env_example()) - _NAMED_IN_THE_HEADER)
    assert not missing, f"read but not listed in .env.example: {missing}"


def test_env_example_states_every_default_truthfully(tmp_path):
    documented = dict(re.findall(r"^# ([A-Z][A-Z0-9_]+)=(.*)$", (ROOT / ".env.example").read_text(), re.MULTILINE))
    assert {"SECRET_KEY", "DEBUG", "ALLOWED_HOSTS", "OH_HTTPS", "OH_MAX_BODY_BYTES"} <= set(documented)
    code = "import reviewapp.settings as s, json; print(json.dumps(sorted(n for n in dir(s) if n.isupper())))"
    result = subprocess.run(
        [PYTHON, "-c", code], cwd=ROOT, env=clean_environment(tmp_path), capture_output=True, text=True, timeout=120
    )
    setting_names = set(__import__("json").loads(result.stdout))
    # SECRET_KEY has no one default: unset, each install makes its own (test_without_a_secret_key_each_install_...).
    checked = sorted(name for name in documented if name in setting_names and name != "SECRET_KEY")
    assert len(checked) > 30
    values = settings_of(tmp_path, checked)
    for name in checked:
        value = values[name]
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, list):
            value = ",".join(value)
        elif isinstance(value, float) and value.is_integer():
            value = int(value)
        assert str(value) == documented[name], f".env.example says {name}={documented[name]}, the default is {value}"


# Content-Security-Policy and Permissions-Policy -------------------------------------------------------------------


def test_every_page_has_a_policy_that_forbids_inline_scripts(client, coordinator):
    for path in ("/accounts/login/", "/open-hypothesis/"):
        response = client.get(path)
        policy = response["Content-Security-Policy"]
        script = re.search(r"script-src ([^;]*)", policy).group(1)
        assert "'unsafe-inline'" not in script and "'unsafe-eval'" not in script, policy
        assert "frame-ancestors 'none'" in policy and "object-src 'none'" in policy
        assert "camera=()" in response["Permissions-Policy"]
    client.force_login(coordinator)
    cohort = factories.make_cohort()
    response = client.get(f"/cohorts/{cohort.pk}/")
    assert response.status_code == 200 and "Content-Security-Policy" in response


def test_templates_hold_no_inline_script_or_event_handler():
    offenders = []
    for template in (ROOT / "templates").rglob("*.html"):
        text = template.read_text()
        for match in re.finditer(r"<script\b([^>]*)>", text):
            if "src=" not in match.group(1):
                offenders.append(f"{template.relative_to(ROOT)}: inline <script>")
        for match in re.finditer(r"<[^>]*\son[a-z]+\s*=", text):
            offenders.append(f"{template.relative_to(ROOT)}: {match.group()[:60]}")
    assert offenders == []


@pytest.fixture
def cohort_page_session(live_server, coordinator, client):
    """A cohort with three reviewers to assign, and a coordinator's session cookie (made before the browser starts:
    the database is not used from the browser's event loop)."""
    for number in range(3):
        factories.make_user("reviewer", username=f"reviewer-{number}")
    cohort = factories.make_cohort()
    client.force_login(coordinator)
    return cohort, client.cookies["sessionid"].value


@pytest.mark.browser
def test_the_select_all_buttons_work_under_the_policy(live_server, cohort_page_session, page):
    """The policy is enforced by a real browser: the page runs its scripts from static files and logs no
    violation."""
    cohort, session = cohort_page_session
    page.context.add_cookies([{"name": "sessionid", "value": session, "url": live_server.url}])
    violations = []
    page.on("console", lambda message: violations.append(message.text) if "Content Security" in message.text else None)
    page.goto(f"{live_server.url}/cohorts/{cohort.pk}/people/")
    boxes = page.locator("input[name=reviewers]")
    page.get_by_role("button", name="all", exact=True).click()
    assert all(boxes.nth(n).is_checked() for n in range(boxes.count())) and boxes.count() == 3
    page.get_by_role("button", name="none", exact=True).click()
    assert not any(boxes.nth(n).is_checked() for n in range(boxes.count()))
    assert violations == []


# The per-client limit and IPv6 ---------------------------------------------------------------------------------


def test_an_ipv6_host_cannot_rotate_addresses_past_the_client_limit(client, roster, settings):
    settings.OPEN_HYPOTHESIS_CLIENT_LIMIT = 2

    def start(address):
        body = {"question": QUESTION}
        return client.post(RUNS, body, content_type="application/json", REMOTE_ADDR=address)

    assert start("2001:db8:1:2::1").status_code == 202
    assert start("2001:db8:1:2:aaaa::2").status_code == 202
    refused = start("2001:db8:1:2:ffff:ffff:ffff:ffff")
    assert refused.status_code == 429 and refused.json()["error"] == "client_limit"
    assert start("2001:db8:1:3::1").status_code == 202  # another /64 is another client


def test_the_ipv6_prefix_is_configurable(client, roster, settings):
    settings.OPEN_HYPOTHESIS_CLIENT_LIMIT = 1
    settings.OPEN_HYPOTHESIS_IPV6_PREFIX = 128
    for address in ("2001:db8::1", "2001:db8::2"):
        body = {"question": QUESTION}
        assert client.post(RUNS, body, content_type="application/json", REMOTE_ADDR=address).status_code == 202


# The log -----------------------------------------------------------------------------------------------------------


def test_a_refusal_is_one_line_in_the_log(client, reviewer):
    """What the console handler of the LOGGING setting writes (pytest's own handlers are left aside)."""
    console = next(
        handler
        for handler in logging.getLogger().handlers
        if type(handler) is logging.StreamHandler  # noqa: E721 (pytest's handlers are subclasses)
    )
    written = io.StringIO()
    previous = console.setStream(written)
    try:
        cohort = factories.make_cohort()
        client.force_login(reviewer)
        assert client.get(f"/cohorts/{cohort.pk}/").status_code == 403
    finally:
        console.setStream(previous)
    lines = written.getvalue().splitlines()
    assert [line for line in lines if "Forbidden" in line] == [f"Forbidden (Permission denied): /cohorts/{cohort.pk}/"]
    assert not any("Traceback" in line or "PermissionDenied" in line for line in lines)


# make run --------------------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def listening_addresses(port: int) -> set[str]:
    """Local addresses listening on the port, from the kernel's socket tables (hex, as /proc/net/tcp writes them)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, port_hex = local.split(":")
            if state == "0A" and int(port_hex, 16) == port:
                found.add(address)
    return found


def start_run_local(tmp_path, web_port: int, simulator_port: int, *, env_file: Path | None = None) -> subprocess.Popen:
    """bin/run-local with the ports in the environment, or (env_file) only in that .env file."""
    if env_file is None:
        environment = clean_environment(tmp_path, PORT=str(web_port), SIMULATOR_PORT=str(simulator_port))
    else:
        env_file.write_text(f"PORT={web_port}\nSIMULATOR_PORT={simulator_port}\n")
        environment = clean_environment(tmp_path, OH_ENV_FILE=str(env_file))
        environment.pop("PORT", None)
        environment.pop("SIMULATOR_PORT", None)
    environment.pop("HOST", None)
    return subprocess.Popen(
        ["bash", "bin/run-local"],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def stop(process: subprocess.Popen) -> str:
    if process.poll() is None:
        os.killpg(process.pid, 15)
    output, _ = process.communicate(timeout=60)
    return output


def test_make_run_serves_only_this_machine_by_default(tmp_path):
    web_port, simulator_port = free_port(), free_port()
    process = start_run_local(tmp_path, web_port, simulator_port)
    try:
        deadline = time.monotonic() + 120
        while not listening_addresses(web_port) and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.2)
        addresses = listening_addresses(web_port)
    finally:
        output = stop(process)
    assert addresses == {"0100007F"}, output  # 127.0.0.1, and nothing else


def test_make_run_takes_its_ports_from_the_env_file_like_every_setting(tmp_path):
    """PORT and SIMULATOR_PORT set only in .env: the web server and the simulated server listen there, so the roster
    (which reads SIMULATOR_PORT through the settings) points at the server that answers."""
    web_port, simulator_port = free_port(), free_port()
    process = start_run_local(tmp_path, web_port, simulator_port, env_file=tmp_path / "local.env")
    try:
        # The servers start side by side: wait until both listen (or the start gives up).
        deadline, web, simulator = time.monotonic() + 120, set(), set()
        while time.monotonic() < deadline and process.poll() is None:
            web, simulator = listening_addresses(web_port), listening_addresses(simulator_port)
            if web and simulator:
                break
            time.sleep(0.2)
    finally:
        output = stop(process)
    assert web == {"0100007F"}, output
    assert simulator, output


def test_make_run_stops_at_once_naming_a_simulator_port_that_is_taken(tmp_path):
    web_port = free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        simulator_port = taken.getsockname()[1]
        process = start_run_local(tmp_path, web_port, simulator_port)
        try:
            process.wait(timeout=120)
        finally:
            output = stop(process)
    assert process.returncode != 0
    assert f"127.0.0.1:{simulator_port}" in output and "SIMULATOR_PORT" in output
    assert not listening_addresses(web_port)


def test_make_run_with_the_web_port_taken_starts_no_server_at_all(tmp_path):
    """Every port is checked first: the simulated model server (started before the web server) never listens, and
    no worker starts to take work."""
    simulator_port = free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        web_port = taken.getsockname()[1]
        process = start_run_local(tmp_path, web_port, simulator_port)
        simulator_listened = False
        try:
            deadline = time.monotonic() + 120
            while process.poll() is None and time.monotonic() < deadline:
                simulator_listened = simulator_listened or bool(listening_addresses(simulator_port))
                time.sleep(0.05)
        finally:
            output = stop(process)
    assert process.returncode not in (None, 0), output
    assert f"127.0.0.1:{web_port}" in output and "Set PORT" in output
    assert not simulator_listened, output
    assert not (tmp_path / "var" / "worker.ready").exists()
    assert "celery@" not in output


def test_the_web_server_keeps_connections_longer_than_any_page_waits_between_requests(settings):
    """gunicorn's default keep-alive (2 s) reset a reviewer's connection between autosaves: the configuration keeps
    an idle connection longer than the longest interval at which a page asks again."""
    from reviewapp.core import gunicorn_config

    intervals = [settings.OPEN_HYPOTHESIS_POLL_SECONDS]
    for template in (ROOT / "templates").rglob("*.html"):
        intervals += [int(seconds) for seconds in re.findall(r'hx-trigger="every (\d+)s"', template.read_text())]
    assert len(intervals) > 3
    assert gunicorn_config.worker_class == "gthread" and gunicorn_config.threads > 1
    assert gunicorn_config.keepalive > max(intervals)


# Database connections ------------------------------------------------------------------------------------------------

POSTGRES_URL = "postgres://someone@127.0.0.1:5432/openhypothesis"


def test_postgresql_connections_are_kept_ten_minutes_and_checked_before_reuse(tmp_path):
    database = settings_of(tmp_path, ["DATABASES"], DATABASE_URL=POSTGRES_URL)["DATABASES"]["default"]
    assert (database["CONN_MAX_AGE"], database["CONN_HEALTH_CHECKS"]) == (600, True)


def test_the_connection_age_is_the_operators_to_set(tmp_path):
    for url in (POSTGRES_URL, ""):
        variables = {"DATABASE_URL": url} if url else {}
        database = settings_of(tmp_path, ["DATABASES"], DATABASE_CONN_MAX_AGE="0", **variables)["DATABASES"]
        assert database["default"]["CONN_MAX_AGE"] == 0
    database = settings_of(tmp_path, ["DATABASES"], DATABASE_CONN_MAX_AGE="60")["DATABASES"]["default"]
    assert database["CONN_MAX_AGE"] == 60


def test_the_embedded_sqlite_file_is_opened_per_request(tmp_path):
    assert settings_of(tmp_path, ["DATABASES"])["DATABASES"]["default"]["CONN_MAX_AGE"] == 0

"""Shared fixtures.

Tests that need PostgreSQL, a browser or a real broker skip where those are missing, except when
OH_REQUIRE_SERVICES=1 (CI sets it): then a missing service fails the test, so CI cannot pass by skipping.
"""

import os
import shutil

import pytest
from django.db import connection

from tests import factories
from tests.screening_support import Script, ScriptedModelServer, drop_broker_connections, make_roster, use_broker

REQUIRE_SERVICES = os.environ.get("OH_REQUIRE_SERVICES", "") == "1"
CHROMIUM = os.environ.get("OH_CHROMIUM", "/usr/bin/chromium")
REDIS_URL = os.environ.get("OH_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# Browser actions and assertions wait this long: CI shares two cores with the live server.
BROWSER_PATIENCE_MS = 15_000


def skip_or_fail(reason: str):
    if REQUIRE_SERVICES:
        pytest.fail(f"{reason} (OH_REQUIRE_SERVICES=1 turns this skip into a failure)")
    pytest.skip(reason)


@pytest.fixture
def needs_postgres(db):
    if connection.vendor != "postgresql":
        skip_or_fail("needs PostgreSQL: set DATABASE_URL=postgres://...")


@pytest.fixture
def chromium_path():
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        skip_or_fail(f"needs Chromium at {CHROMIUM} (apt-get install chromium)")
    return CHROMIUM


@pytest.fixture
def redis_url():
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except redis.exceptions.RedisError:
        skip_or_fail(f"needs Redis at {REDIS_URL}")
    return REDIS_URL


@pytest.fixture
def reviewer(db):
    return factories.make_user("reviewer", username="rev-alice")


@pytest.fixture
def other_reviewer(db):
    return factories.make_user("reviewer", username="rev-bob")


@pytest.fixture
def coordinator(db):
    return factories.make_user("coordinator", username="coord-carol")


@pytest.fixture
def analyst(db):
    return factories.make_user("analyst", username="analyst-dan")


@pytest.fixture(autouse=True, scope="session")
def fast_password_hashing(django_test_environment):
    """Passwords hashed for tests need no strength: MD5 instead of PBKDF2 halves the suite's time."""
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def fresh_poll_counts():
    """Each test starts with no anonymous polls counted (the throttle's cache outlives a test)."""
    from django.core.cache import caches

    caches["throttle"].clear()


@pytest.fixture
def fast_retries(settings):
    """Transport retries of model and literature calls that wait milliseconds, not seconds."""
    settings.PROVIDER_BACKOFF_BASE_SECONDS = 0.01
    settings.PROVIDER_BACKOFF_MAX_SECONDS = 0.02
    settings.PROVIDER_MAX_ATTEMPTS = 2


@pytest.fixture
def memory_broker(settings, monkeypatch):
    """Tasks sent on commit go into memory: for tests that do the workers' part themselves."""
    use_broker(settings, monkeypatch, "memory://")
    yield
    drop_broker_connections()


@pytest.fixture
def exports_home(settings, tmp_path):
    """VAR_DIR in a temporary folder; jobs write their result files into the folder returned."""
    settings.VAR_DIR = tmp_path
    return tmp_path / "exports"


@pytest.fixture
def script():
    """What the scripted model server answers (tests.screening_support.Script)."""
    return Script()


@pytest.fixture
def server(script):
    """A local server speaking the providers' wire protocols, answering from `script`."""
    server = ScriptedModelServer(script)
    yield server
    server.stop()


@pytest.fixture
def roster(db, server):
    """The default roster of the protocol, every endpoint on the scripted server."""
    return make_roster(server.base_url)


@pytest.fixture
def page(chromium_path):
    """A page of headless Chromium, with actions and assertions as patient as a busy machine needs."""
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 1000}, accept_downloads=True)
        page = context.new_page()
        page.set_default_timeout(BROWSER_PATIENCE_MS)
        expect.set_options(timeout=BROWSER_PATIENCE_MS)
        yield page
        browser.close()

"""Shared fixtures.

Tests that need PostgreSQL, a browser or a real broker skip where those are missing, except when
OH_REQUIRE_SERVICES=1 (CI sets it): then a missing service fails the test, so CI cannot pass by skipping.
"""

import os
import shutil

import pytest
from django.db import connection

from tests import factories

REQUIRE_SERVICES = os.environ.get("OH_REQUIRE_SERVICES", "") == "1"
CHROMIUM = os.environ.get("OH_CHROMIUM", "/usr/bin/chromium")
REDIS_URL = os.environ.get("OH_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


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

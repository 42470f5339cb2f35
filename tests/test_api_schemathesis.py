"""Schemathesis against the live server: requests generated from /api/v1/schema for every operation, as each role and
without signing in, each answer checked against the schema (no server error; a documented status, media type and
body).

Bounded (a few examples per operation and role) and reproducible (a fixed seed, no example database); the operations
that lock out or revoke go last, so that they cannot take away the access the others are tested with.
"""

import pytest
import schemathesis
from hypothesis import HealthCheck, given, seed, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from reviewapp.services.accounts import token_create
from tests import factories
from tests.screening_support import simulated_default_roster

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
EXAMPLES = 4
SEED = 20261203
# Signing in with made-up credentials locks the address out; revoking a token or deactivating an account takes access
# away: these run after every other operation.
LAST = {
    ("POST", "/api/v1/auth/token"),
    ("DELETE", "/api/v1/auth/tokens/{token_id}"),
    ("POST", "/api/v1/users/{account_id}/active"),
    ("POST", "/api/v1/users/unlock"),
}
ROLES = ("anonymous", "reviewer", "analyst", "coordinator")


def _operations(schema):
    operations = [result.ok() for result in schema.get_all_operations()]
    return sorted(operations, key=lambda operation: (operation.method.upper(), operation.path) in LAST)


def _failures_of(operation, base_url: str, headers: dict) -> list[str]:
    failures: list[str] = []

    @seed(SEED)
    @settings(
        max_examples=EXAMPLES,
        database=None,
        deadline=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )
    @given(case=operation.as_strategy())
    def check(case):
        case.call_and_validate(base_url=base_url, headers=headers, checks=CHECKS, timeout=60)

    try:
        check()
    except (AssertionError, BaseExceptionGroup) as failure:  # one report per operation and role, then the next
        failures.append(f"{operation.method.upper()} {operation.path}: {str(failure)[:1500]}")
    return failures


@pytest.mark.parametrize("role", ROLES)
def test_every_operation_answers_as_the_schema_says(
    live_server, transactional_db, memory_broker, role, settings, monkeypatch
):
    # Every role of the default roster on a simulated model server: no operation fails for want of a model; the
    # work it starts goes to an in-memory broker.
    with simulated_default_roster(settings, monkeypatch, latency=0, seed=SEED):
        failures = _every_operation(live_server.url, role)
    assert not failures, "\n\n".join(failures)


def _every_operation(base_url: str, role: str) -> list[str]:
    schema = schemathesis.openapi.from_url(f"{base_url}/api/v1/schema?format=json")
    cohort = factories.make_cohort([factories.make_proposal() for _ in range(2)])
    assert cohort.pk
    headers = {}
    if role != "anonymous":
        _, key = token_create(user=factories.make_user(role, username=f"schemathesis-{role}"))
        headers = {"Authorization": f"Token {key}"}
    failures = []
    for operation in _operations(schema):
        failures += _failures_of(operation, base_url, headers)
    return failures

"""Fixtures of the inspiration-audit tests."""

import pytest

from tests.inspiration.support import hand_counted_cohort


@pytest.fixture
def cohort(db):
    """The cohort whose audit the tests count by hand (tests.inspiration.support.hand_counted_cohort)."""
    return hand_counted_cohort()

"""Claimed work (reviewapp.core.claims): one worker holds a row; a database error gives it back for the task's retry,
any other error fails it with its kind, and a worker whose claim was taken over records nothing."""

import uuid

import pytest
from django.db import OperationalError

from literature.models import CitationWave
from reviewapp.core.claims import work_attempt, work_claim, work_fail_all, work_finish, work_release, work_release_all


@pytest.fixture
def wave(db):
    return CitationWave.objects.create(anchors=["MED:1"])


def state(wave: CitationWave) -> tuple:
    wave.refresh_from_db()
    return wave.state, wave.claim_token, wave.error


def test_of_two_deliveries_one_claims(wave):
    assert work_claim(CitationWave, wave.pk) is not None
    assert work_claim(CitationWave, wave.pk) is None


def test_a_database_error_gives_the_claim_back_for_the_retry(wave):
    token = work_claim(CitationWave, wave.pk)
    with pytest.raises(OperationalError), work_attempt(CitationWave, wave.pk, token, label="test wave"):
        raise OperationalError("the connection was lost")
    assert state(wave) == ("pending", None, "")
    assert work_claim(CitationWave, wave.pk) is not None  # the retry claims it again


def test_any_other_error_fails_the_work_with_its_kind_and_is_not_raised(wave):
    token = work_claim(CitationWave, wave.pk)
    with work_attempt(CitationWave, wave.pk, token, label="test wave"):
        raise KeyError("anchor")
    assert state(wave) == ("failed", token, "internal error (KeyError)")


def test_a_worker_whose_claim_was_taken_over_neither_gives_it_back_nor_finishes_it(wave):
    old = work_claim(CitationWave, wave.pk)
    CitationWave.objects.filter(pk=wave.pk).update(claim_token=(new := uuid.uuid4()))
    work_release(CitationWave, wave.pk, old)
    assert not work_finish(CitationWave, wave.pk, old)
    with work_attempt(CitationWave, wave.pk, old, label="test wave"):
        raise KeyError("anchor")
    assert state(wave) == ("running", new, "")


def test_a_finished_row_is_not_given_back(wave):
    token = work_claim(CitationWave, wave.pk)
    assert work_finish(CitationWave, wave.pk, token)
    work_release(CitationWave, wave.pk, token)
    assert state(wave)[0] == "done"


def test_many_rows_are_taken_over_whoever_holds_them(db):
    pending, running, done = (CitationWave.objects.create(anchors=[f"MED:{n}"]) for n in range(3))
    work_claim(CitationWave, running.pk)
    work_finish(CitationWave, done.pk, work_claim(CitationWave, done.pk))
    rows = CitationWave.objects.all()
    assert work_release_all(rows) == 1
    assert state(running) == ("pending", None, "")
    work_claim(CitationWave, running.pk)
    assert work_fail_all(rows, "no progress") == 2
    assert [state(wave)[0] for wave in (pending, running, done)] == ["failed", "failed", "done"]
    assert state(pending) == ("failed", None, "no progress")

"""The demo cohort's AI panel on the simulated models fills every level: hypotheses, transitions, paths, runs,
families and delivery, with unknown and inapplicable scores among the assessments (so every composite rule runs)."""

import pytest
from django.contrib.auth.models import User
from django.test import Client

from reviewapp.demo.cohort import DEMO_COHORT_NAME, demo_load
from reviewapp.models import Cohort
from reviewapp.panel.models import Assessment
from reviewapp.panel.services.panel import panel_start_for_cohort
from reviewapp.services import jobs
from tests.screening_support import simulated_default_roster


@pytest.fixture
def demo(db, settings, monkeypatch):
    with simulated_default_roster(settings, monkeypatch, latency=0.0, seed=13):
        demo_load()
        cohort = Cohort.objects.get(name=DEMO_COHORT_NAME)
        coordinator = User.objects.get(username="demo-coordinator")
        jobs.job_run(job_id=panel_start_for_cohort(cohort=cohort, user=coordinator).pk)
        yield cohort


def test_the_demo_fills_every_level(demo):
    analyst = Client()
    analyst.force_login(User.objects.get(username="demo-analyst"))
    evaluation = analyst.get(f"/api/v1/cohorts/{demo.pk}/evaluation").json()
    assert evaluation["hypotheses"]["complete"] > 0 and evaluation["hypotheses"]["mean_q"] is not None
    assert evaluation["transitions"]["total"] == 6 and evaluation["transitions"]["judged"] == 6
    assert evaluation["paths"]["total"] == 5 and evaluation["paths"]["assessed"] == 5
    assert evaluation["runs"]["total"] == 5 and evaluation["runs"]["assessed"] == 5
    assert evaluation["families"]["with_evidence"] == 1
    assert evaluation["delivery"]["selected"]["passed"] == 3 and evaluation["delivery"]["executed"]["unattempted"] == 1
    scores = [value for item in Assessment.objects.filter(cohort=demo) for value in item.scores.values()]
    assert "unknown" in scores and "inapplicable" in scores and any(isinstance(value, int) for value in scores)
    assert all(item.simulated for item in Assessment.objects.filter(cohort=demo))
    runs = {run["id"]: run for run in analyst.get(f"/api/v1/cohorts/{demo.pk}/research-runs").json()["results"]}
    assert runs["demo-run-ch-grok"]["budget_recorded"] and len(runs["demo-run-ch-grok"]["decisions"]) == 3

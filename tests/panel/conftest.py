"""Fixtures of the panel's tests: the scripted server answers the panel's prompts too."""

import pytest

from reviewapp.models import BackgroundJob
from reviewapp.services import jobs
from tests.panel.support import PanelScript, panel_roster


@pytest.fixture
def script():
    return PanelScript()


@pytest.fixture
def models(db, server, fast_retries):
    """The default roster's panel roles on the scripted server."""
    return panel_roster(server.base_url)


@pytest.fixture
def run_job():
    """Run a background job in this thread, as a worker would, and return it refreshed."""

    def run(job_id: int) -> BackgroundJob:
        jobs.job_run(job_id=job_id)
        return BackgroundJob.objects.get(pk=job_id)

    return run

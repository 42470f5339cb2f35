"""An inspiration audit and a citation wave started through the API, done by a real Celery worker (threads pool)
consuming from a real Redis broker: the audit's batches against the simulated model server, the wave against the
local Europe PMC stand-in."""

import pytest
from rest_framework.test import APIClient

from literature.models import CitationWave
from reviewapp.demo.cohort import demo_load
from reviewapp.inspiration.models import InspirationAudit, InspirationBatch
from tests import factories
from tests.literature.test_citation_waves import PMC_ANCHOR, europepmc_lists
from tests.literature.test_literature_sources import source_server  # noqa: F401 (a fixture, asked for by name)
from tests.screening_support import simulated_default_roster, wait_for, worker_on_test_redis

pytestmark = [pytest.mark.broker, pytest.mark.postgres]


@pytest.fixture
def worker(settings, monkeypatch, redis_url, transactional_db):
    with worker_on_test_redis(settings, monkeypatch, redis_url, "inspiration", concurrency=4, shutdown_timeout=30):
        yield


def test_a_worker_takes_an_audit_from_the_api_to_its_counts(needs_postgres, settings, monkeypatch, worker):
    with simulated_default_roster(settings, monkeypatch, latency=0.05, seed=5):
        loaded = demo_load()
        client = APIClient()
        client.force_authenticate(loaded.cohort.created_by)
        started = client.post("/api/v1/inspiration/audits", {"cohort": loaded.cohort.pk}, format="json")
        assert started.status_code == 202, started.json()
        audit = wait_for(
            lambda: InspirationAudit.objects.filter(pk=started.json()["id"], state__in=["done", "failed"]).first(),
            timeout=90,
            what="the audit's end",
        )

    assert audit.state == "done", audit.error
    batches = InspirationBatch.objects.filter(audit=audit)
    assert set(batches.values_list("state", flat=True)) == {"done"}
    assert batches.filter(kind="retrieval").exists() and batches.filter(kind="judging").exists()
    totals = audit.summary["totals"]
    assert totals["versions"] == loaded.cohort.proposals.count()
    assert totals["retrieved"] == totals["judged"] + totals["failed"] and totals["pending"] == 0
    body = client.get(f"/api/v1/inspiration/audits/{audit.pk}").json()
    assert body["simulated"] is True and client.get(body["items_url"]).json()["count"] == totals["versions"]


def test_a_worker_does_a_citation_wave_from_the_api(needs_postgres, request, worker):
    request.getfixturevalue("source_server").app = europepmc_lists
    client = APIClient()
    client.force_authenticate(factories.make_user("coordinator"))
    started = client.post("/api/v1/literature/citation-waves", {"anchors": [PMC_ANCHOR]}, format="json")
    assert started.status_code == 202
    wave = wait_for(
        lambda: CitationWave.objects.filter(pk=started.json()["id"], state__in=["done", "failed"]).first(),
        timeout=60,
        what="the wave's end",
    )
    assert wave.state == "done", wave.error
    assert (wave.traversals, wave.edges, wave.resolved) == (2, 2, 3)

"""A reference corpus by citation wave, against a local server replaying Europe PMC's documented answers:
`{SRC}/{id}/references` and `/citations` (format=json, page and pageSize; `hitCount`, `referenceList.reference[]`,
`citationList.citation[]`, entries Europe PMC could not match without an id) and the search that fetches works by id
(`resultType=core`, cursor paging). Paging, the rate limit and retries of the source client, the cache and
replay-only mode; the counts; the API, the page and the command."""

import io
import json
import re
import uuid
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from literature.models import CitationEdge, CitationWave, Reference
from literature.waves import citation_wave_perform, citation_wave_start
from tests.literature.test_literature_sources import assert_spaced, epmc_result
from tests.screening_support import broker_down

ANCHOR, PMC_ANCHOR = "MED:100", "PMC:PMC555"
CITING = [f"MED:{300000 + n}" for n in range(2344)]  # with PMC:PMC555: 2,345 works cite MED:100, three pages
UNKNOWN, UNUSABLE = "MED:202", "MED:300007"  # the search knows no record of one and an unusable one of the other
_WORK_IN_QUERY = re.compile(r"\(SRC:([A-Z]{3}) AND EXT_ID:([A-Za-z0-9._-]+)\)")


def list_entry(work: str, order: int) -> dict:
    source, ident = work.split(":")
    return {
        "id": ident,
        "source": source,
        "citationType": "JOURNAL ARTICLE",
        "title": f"Work {ident}",
        "authorString": "Xu M, Kirkland JL.",
        "journalAbbreviation": "Nat Med",
        "pubYear": 2021,
        "volume": "24",
        "pageInfo": "1246-1256",
        "citedOrder": order,
        "match": "Y",
    }


REFERENCES = {
    ANCHOR: [
        list_entry("MED:201", 1),
        list_entry(UNKNOWN, 2),
        {"title": "A conference abstract Europe PMC could not match", "pubYear": 2004, "citedOrder": 3, "match": "N"},
    ],
    PMC_ANCHOR: [list_entry("MED:201", 1), list_entry(ANCHOR, 2)],
}
CITATIONS = {ANCHOR: [list_entry(work, 0) for work in [*CITING, PMC_ANCHOR]], PMC_ANCHOR: []}


def core_record(work: str) -> dict:
    source, ident = work.split(":")
    record = {**epmc_result(1), "id": ident, "source": source, "title": f"Work {ident}", "pmid": ident}
    if source != "MED":
        record.pop("pmid")
    if work == UNUSABLE:
        record.update(title="", abstractText="")
    return record


def europepmc_lists(seen):
    """Answers as Europe PMC documents them; the page size is honoured up to its maximum of 1000."""
    match = re.search(r"/rest/([A-Z]{3})/([^/]+)/(references|citations)$", seen.path)
    if match:
        source, ident, kind = match.groups()
        work = f"{source}:{ident}"
        entries = (REFERENCES if kind == "references" else CITATIONS).get(work, [])
        page, size = int(seen.query["page"]), min(int(seen.query["pageSize"]), 1000)
        body = {
            "version": "6.9",
            "hitCount": len(entries),
            "request": {"id": ident, "source": source, "offSet": (page - 1) * size, "pageSize": size},
        }
        chunk = entries[(page - 1) * size : page * size]
        if chunk:
            holder, name = ("referenceList", "reference") if kind == "references" else ("citationList", "citation")
            body[holder] = {name: chunk}
        return 200, {"content-type": "application/json;charset=UTF-8"}, body
    if seen.path.endswith("/search"):
        works = [f"{source}:{ident}" for source, ident in _WORK_IN_QUERY.findall(seen.query["query"])]
        results = [core_record(work) for work in works if work != UNKNOWN]
        body = {"version": "6.9", "hitCount": len(results), "nextCursorMark": seen.query["cursorMark"]}
        body["resultList"] = {"result": results}
        return 200, {"content-type": "application/json;charset=UTF-8"}, body
    return 404, {}, {"errMsg": "not found"}


def wave_of(*anchors: str) -> CitationWave:
    wave = citation_wave_start(anchors=list(anchors), enqueue=False)
    citation_wave_perform(wave_id=wave.pk)
    wave.refresh_from_db()
    return wave


def counts(wave: CitationWave) -> tuple:
    return (wave.traversals, wave.edges, wave.unmatched, wave.works, wave.resolved, wave.unresolved)


@pytest.mark.django_db
def test_a_wave_follows_references_and_citations_page_by_page_and_resolves_the_works(source_server):
    source_server.app = europepmc_lists

    wave = wave_of(ANCHOR, PMC_ANCHOR)

    assert (wave.state, wave.phase, wave.error) == ("done", "finished", "")
    # 4 lists read; edges: 2 references + 2,345 citations of MED:100, and PMC555 → MED:201 (its citing of MED:100
    # is already an edge); 1 entry unidentified; works: 2 anchors, MED:201, MED:202 and the 2,344 citing works.
    assert counts(wave) == (4, 2348, 1, 2348, 2346, 2)
    pages = [int(seen.query["page"]) for seen in source_server.seen if seen.path.endswith("/MED/100/citations")]
    assert pages == [1, 2, 3]
    first = next(seen for seen in source_server.seen if seen.path.endswith("/references"))
    assert (first.query["format"], first.query["pageSize"]) == ("json", "1000")
    searches = [seen for seen in source_server.seen if seen.path.endswith("/search")]
    assert len(searches) == 24 and all(seen.query["resultType"] == "core" for seen in searches)
    assert wave.requests == len(source_server.seen) == 6 + 24
    edge = CitationEdge.objects.get(wave=wave, citing=PMC_ANCHOR, cited=ANCHOR)
    assert edge.direction == "forward"  # met first in MED:100's citations
    assert CitationEdge.objects.get(wave=wave, citing=ANCHOR, cited="MED:201").direction == "backward"
    assert Reference.objects.filter(source="europepmc").count() == 2346
    assert not Reference.objects.filter(source_id__in=[UNKNOWN, UNUSABLE]).exists()
    assert Reference.objects.get(source_id=PMC_ANCHOR).title == "Work PMC555"


@pytest.mark.django_db
def test_replay_only_rebuilds_the_same_wave_from_the_cache_alone(source_server, settings):
    source_server.app = europepmc_lists
    first = wave_of(ANCHOR, PMC_ANCHOR)
    asked = len(source_server.seen)

    settings.LITERATURE_REPLAY_ONLY = True
    second = wave_of(ANCHOR, PMC_ANCHOR)

    assert len(source_server.seen) == asked
    assert counts(second) == counts(first) and second.state == "done"


@pytest.mark.django_db
def test_a_replay_miss_stops_the_wave_and_keeps_what_it_obtained(source_server, settings):
    source_server.app = europepmc_lists
    wave_of(PMC_ANCHOR)
    settings.LITERATURE_REPLAY_ONLY = True

    wave = wave_of(PMC_ANCHOR, ANCHOR)  # MED:100's lists were never fetched

    assert wave.state == "failed" and "replay-only mode" in wave.error
    assert (wave.traversals, wave.edges) == (2, 2)  # PMC555's two lists and their edges are kept
    assert CitationEdge.objects.filter(wave=wave).count() == 2


@pytest.mark.django_db
def test_throttling_is_waited_out_and_the_rate_limit_spaces_the_requests(source_server, settings):
    settings.LITERATURE_EUROPEPMC_RATE = 10
    throttled = iter([(429, {"retry-after": "0.2"}, "Too Many Requests")])
    source_server.app = lambda seen: next(throttled, None) or europepmc_lists(seen)

    wave = wave_of(PMC_ANCHOR)

    assert wave.state == "done" and counts(wave) == (2, 2, 0, 3, 3, 0)
    assert len(source_server.seen) == 1 + 2 + 1  # the throttled try, two lists, one search
    assert_spaced(source_server.seen, 0.1)


@pytest.mark.django_db
def test_an_unavailable_source_fails_the_wave_with_its_reason(source_server, settings):
    settings.LITERATURE_MAX_ATTEMPTS = 2
    source_server.app = lambda seen: (503, {}, "Service Unavailable")
    wave = wave_of(ANCHOR)
    assert wave.state == "failed" and "HTTP 503" in wave.error and wave.traversals == 0


@pytest.mark.django_db
def test_a_wave_taken_over_by_the_sweeper_stops_and_records_nothing_more(source_server):
    source_server.app = europepmc_lists
    wave = citation_wave_start(anchors=[PMC_ANCHOR], enqueue=False)

    def another_worker_takes_it(seen: CitationWave) -> None:
        CitationWave.objects.filter(pk=seen.pk).update(claim_token=uuid.uuid4())

    citation_wave_perform(wave_id=wave.pk, progress=another_worker_takes_it)
    wave.refresh_from_db()
    assert wave.state == "running" and wave.traversals == 1  # the other worker's now; the first list only
    assert wave.phase == CitationWave.Phase.TRAVERSING and wave.heartbeat_at is not None


def test_a_wave_started_while_the_broker_is_down_is_refused_and_nothing_is_written(coordinator, settings, monkeypatch):
    client = APIClient()
    client.force_authenticate(coordinator)
    with broker_down(settings, monkeypatch):
        response = client.post("/api/v1/literature/citation-waves", {"anchors": [ANCHOR]}, format="json")
    assert response.status_code == 503 and response.json()["error"] == "queue_unavailable"
    assert not CitationWave.objects.exists()


def test_the_api_starts_a_wave_and_answers_its_state_and_counts(source_server, coordinator, analyst):
    source_server.app = europepmc_lists
    client = APIClient()
    client.force_authenticate(coordinator)

    refused = client.post("/api/v1/literature/citation-waves", {"anchors": ["MED:100", "pubmed 12"]}, format="json")
    assert refused.status_code == 400
    assert refused.json()["error"] == "invalid_anchors"
    assert refused.json()["problems"] == [{"field": "anchors", "message": "pubmed 12 is not a Europe PMC work id."}]
    started = client.post("/api/v1/literature/citation-waves", {"anchors": [PMC_ANCHOR]}, format="json")
    assert started.status_code == 202 and started.json()["state"] == "pending"
    citation_wave_perform(wave_id=started.json()["id"])

    reader = APIClient()
    reader.force_authenticate(analyst)
    body = reader.get(f"/api/v1/literature/citation-waves/{started.json()['id']}").json()
    assert {k: body[k] for k in ("state", "traversals", "edges", "works", "resolved", "unresolved")} == {
        "state": "done",
        "traversals": 2,
        "edges": 2,
        "works": 3,
        "resolved": 3,
        "unresolved": 0,
    }
    edges = reader.get(f"/api/v1/literature/citation-waves/{body['id']}/edges.csv")
    lines = b"".join(edges.streaming_content).decode().splitlines()
    assert lines == ["citing,cited,direction", "PMC:PMC555,MED:100,backward", "PMC:PMC555,MED:201,backward"]
    assert reader.post("/api/v1/literature/citation-waves", {"anchors": [ANCHOR]}, format="json").status_code == 403


def test_the_coordinators_page_starts_a_wave_and_shows_its_progress(client, coordinator, settings):
    client.force_login(coordinator)
    response = client.post("/literature/citation-waves/", {"anchors": "MED:100, PMC:PMC555\nMED:100"})
    wave = CitationWave.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/literature/citation-waves/{wave.pk}/"
    assert wave.anchors == [ANCHOR, PMC_ANCHOR]
    CitationWave.objects.filter(pk=wave.pk).update(created_at=timezone.now() - timedelta(minutes=5))
    page = client.get(response["Location"]).content.decode()
    assert "No worker has picked up this wave yet" in page
    CitationWave.objects.filter(pk=wave.pk).update(state="running", progress=1, total=4)
    partial = client.get(response["Location"], headers={"HX-Request": "true"}).content.decode()
    assert '<progress id="wave-progress" max="4" value="1">' in partial and 'hx-trigger="every 2s"' in partial
    wrong = client.post("/literature/citation-waves/", {"anchors": "doi:10.1/x"}).content.decode()
    assert "are not Europe PMC work ids" in wrong
    empty = client.post("/literature/citation-waves/", {"anchors": " , "}).content.decode()
    assert "Anchors:" in empty and CitationWave.objects.count() == 1


@pytest.mark.django_db
def test_the_command_does_a_wave_here_or_queues_it(source_server):
    source_server.app = europepmc_lists
    out, err = io.StringIO(), io.StringIO()
    call_command("citation_wave", PMC_ANCHOR, "--here", stdout=out, stderr=err)
    assert "2 traversals, 2 edges (0 entries unidentified), 3 of 3 works resolved" in out.getvalue()
    assert "Following citations: 1 of 2" in err.getvalue()
    queued = io.StringIO()
    call_command("citation_wave", ANCHOR, stdout=queued)
    assert "is queued for a worker" in queued.getvalue()
    assert CitationWave.objects.filter(state="pending").count() == 1
    with pytest.raises(CommandError, match="not Europe PMC work ids"):
        call_command("citation_wave", "12345")
    assert json.loads(json.dumps(CitationWave.objects.first().anchors))

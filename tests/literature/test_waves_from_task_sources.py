"""A corpus built from the tasks' own sources: the PMIDs and DOIs imported with a cohort's or benchmark set's tasks
(an optional `sources` column) anchor a citation wave, never anything a model wrote; the same tasks give the same
anchors and, from the cache, the same corpus and content hash; typed-in anchors stay the other way in."""

import hashlib
import json
import re

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from literature.models import CitationWave
from literature.waves import citation_wave_perform, citation_wave_start, citation_wave_start_from_tasks
from reviewapp.benchmarks.services.imports import benchmark_import_file
from reviewapp.benchmarks.services.sets import benchmark_create
from reviewapp.models import Cohort, ResearchTask
from reviewapp.services.imports import ImportInvalid, cohort_import_file, task_content_sha256
from tests.literature.test_citation_waves import ANCHOR, PMC_ANCHOR, core_record, counts, europepmc_lists

DOI_OF_PMC_ANCHOR = "10.1000/wave.source"
_DOI_QUERY = re.compile(r'^DOI:"(.+)"$')


def with_dois(seen):
    """Europe PMC's search by DOI: PMC:PMC555 is the work of DOI_OF_PMC_ANCHOR; other DOIs are unknown."""
    if seen.path.endswith("/search") and (match := _DOI_QUERY.match(seen.query["query"])):
        results = [{**core_record(PMC_ANCHOR), "doi": DOI_OF_PMC_ANCHOR}] if match.group(1) == DOI_OF_PMC_ANCHOR else []
        body = {"hitCount": len(results), "nextCursorMark": seen.query["cursorMark"], "resultList": {"result": results}}
        return 200, {"content-type": "application/json"}, body
    status, headers, body = europepmc_lists(seen)
    for result in body.get("resultList", {}).get("result", []):  # the same record however it is asked for
        if (result["source"], result["id"]) == ("PMC", "PMC555"):
            result["doi"] = DOI_OF_PMC_ANCHOR
    return status, headers, body


TASKS = [
    {
        "key": "T1",
        "question": "Does it?",
        "reference_statement": "It does.",
        "sources": ["PMID:100", DOI_OF_PMC_ANCHOR],
    },
    {
        "key": "T2",
        "question": "Does that?",
        "reference_statement": "That does.",
        "sources": "pmid 100; doi:10.1234/unknown",
    },
    {"key": "T3", "question": "And this?", "reference_statement": "This too."},
]


def benchmark_with_tasks(name: str = "Sources set"):
    benchmark = benchmark_create(name=name)
    content = json.dumps({"tasks": TASKS}).encode()
    benchmark_import_file(benchmark=benchmark, filename="tasks.json", content=content, user=None)
    return benchmark


def done(wave: CitationWave) -> CitationWave:
    citation_wave_perform(wave_id=wave.pk)
    wave.refresh_from_db()
    return wave


@pytest.mark.django_db
def test_task_sources_are_imported_normalised_and_a_wrong_one_is_refused():
    benchmark_with_tasks()
    sources = dict(ResearchTask.objects.values_list("key", "sources"))
    assert sources == {
        "T1": ["pmid:100", "doi:10.1000/wave.source"],
        "T2": ["pmid:100", "doi:10.1234/unknown"],
        "T3": [],
    }
    cohort = Cohort.objects.create(name="Sources cohort")
    csv = b"key,question,sources\nT9,Why?,PMID:12 and more\n"
    with pytest.raises(ImportInvalid) as raised:
        cohort_import_file(cohort=cohort, filename="tasks.csv", content=csv, user=None)
    assert raised.value.rows[0]["field"] == "sources"
    assert "“and”, “more” are neither a PMID nor a DOI" in raised.value.rows[0]["message"]


@pytest.mark.django_db
def test_a_semicolon_inside_a_doi_is_kept_and_tasks_without_sources_keep_their_fingerprint():
    from reviewapp.services.imports import clean_sources

    sici = "10.1002/1097-0266(200008)21:8<791::AID-SMJ121>3.0.CO;2-K"
    assert clean_sources(f"{sici}; PMID:7") == ([f"doi:{sici.lower()}", "pmid:7"], None)
    assert clean_sources("https://doi.org/10.1000/X, 42") == (["doi:10.1000/x", "pmid:42"], None)
    values = {"key": "k", "question": "q", "background": "", "reference_statement": "", "published": None}
    # What a task's fingerprint was before tasks had sources: the JSON of the six fields, sorted, compact.
    before = json.dumps({**values, "dataset": ""}, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert task_content_sha256({**values, "dataset": "", "sources": []}) == hashlib.sha256(before.encode()).hexdigest()
    assert task_content_sha256({**values, "dataset": "", "sources": []}) != task_content_sha256(
        {**values, "dataset": "", "sources": ["pmid:1"]}
    )


@pytest.mark.django_db
def test_a_wave_from_a_benchmark_sets_task_sources_is_deterministic_and_shows_its_content_hash(source_server, settings):
    source_server.app = with_dois
    benchmark = benchmark_with_tasks()

    first = citation_wave_start_from_tasks(kind="benchmark", group_id=benchmark.pk, enqueue=False)
    assert (first.anchors, first.source_dois) == (["MED:100"], ["doi:10.1000/wave.source", "doi:10.1234/unknown"])
    assert first.task_sources == [
        {"task": "T1", "sources": ["pmid:100", "doi:10.1000/wave.source"]},
        {"task": "T2", "sources": ["pmid:100", "doi:10.1234/unknown"]},
        {"task": "T3", "sources": []},
    ]
    first = done(first)
    assert (first.state, first.anchors, first.unresolved_sources) == (
        "done",
        [ANCHOR, PMC_ANCHOR],
        ["doi:10.1234/unknown"],
    )
    assert (first.origin, first.origin_name, len(first.corpus_sha256)) == ("benchmark", "Sources set", 64)
    # The same anchors typed in, in the same order (an edge's direction is that of the list it was met in first).
    typed = done(citation_wave_start(anchors=[ANCHOR, PMC_ANCHOR], enqueue=False))
    assert typed.corpus_sha256 == first.corpus_sha256

    asked = len(source_server.seen)
    settings.LITERATURE_REPLAY_ONLY = True
    again = done(citation_wave_start_from_tasks(kind="benchmark", group_id=benchmark.pk, enqueue=False))
    assert len(source_server.seen) == asked  # from the cache alone
    assert (again.anchors, counts(again)) == (first.anchors, counts(first))
    assert again.corpus_sha256 == first.corpus_sha256


@pytest.mark.django_db
def test_a_cohorts_tasks_anchor_a_wave_and_proposals_citations_never_do(source_server):
    source_server.app = with_dois
    cohort = Cohort.objects.create(name="Cohort with sources")
    content = json.dumps(
        {
            "tasks": [{"key": "C1", "question": "Why?", "sources": "PMID:100"}],
            "proposals": [{"id": "p1", "task": "C1", "statement": "Because.", "citations": ["PMID: 999", "10.9/x"]}],
        }
    ).encode()
    cohort_import_file(cohort=cohort, filename="cohort.json", content=content, user=None)
    wave = citation_wave_start_from_tasks(kind="cohort", group_id=cohort.pk, enqueue=False)
    assert (wave.anchors, wave.source_dois, wave.origin) == (["MED:100"], [], "cohort")


@pytest.mark.django_db
def test_tasks_without_sources_or_an_unknown_set_are_refused():
    benchmark = benchmark_create(name="No sources")
    content = json.dumps({"tasks": [TASKS[2]]}).encode()
    benchmark_import_file(benchmark=benchmark, filename="tasks.json", content=content, user=None)
    from literature.waves import AnchorsInvalid

    with pytest.raises(AnchorsInvalid, match="names its source publication"):
        citation_wave_start_from_tasks(kind="benchmark", group_id=benchmark.pk, enqueue=False)
    with pytest.raises(AnchorsInvalid, match="There is no benchmark set 999"):
        citation_wave_start_from_tasks(kind="benchmark", group_id=999, enqueue=False)
    assert CitationWave.objects.count() == 0


def test_the_api_and_the_page_start_a_wave_from_a_sets_task_sources(coordinator, client, settings, monkeypatch):
    monkeypatch.setattr("literature.waves.broker_check", lambda: None)
    monkeypatch.setattr("literature.waves.enqueue_on_commit", lambda *args: None)
    benchmark = benchmark_with_tasks()
    api = APIClient()
    api.force_authenticate(coordinator)
    started = api.post("/api/v1/literature/citation-waves", {"benchmark": benchmark.pk}, format="json")
    assert started.status_code == 202, started.content
    body = started.json()
    assert (body["origin"], body["origin_name"], body["anchors"]) == ("benchmark", "Sources set", ["MED:100"])
    assert body["task_sources"][0] == {"task": "T1", "sources": ["pmid:100", "doi:10.1000/wave.source"]}
    both = api.post(
        "/api/v1/literature/citation-waves", {"benchmark": benchmark.pk, "anchors": ["MED:1"]}, format="json"
    )
    neither = api.post("/api/v1/literature/citation-waves", {}, format="json")
    assert both.status_code == neither.status_code == 400

    client.force_login(coordinator)
    page = client.get(reverse("literature-citation-waves")).content.decode()
    assert f'<option value="benchmark:{benchmark.pk}">Benchmark set: Sources set</option>' in page
    posted = client.post(reverse("literature-citation-waves"), {"tasks": f"benchmark:{benchmark.pk}"})
    wave = CitationWave.objects.latest("pk")
    assert posted.status_code == 302 and wave.origin == "benchmark"
    shown = client.get(reverse("literature-citation-wave", args=[wave.pk])).content.decode()
    assert "the source publications of the tasks of the benchmark set “Sources set”" in shown

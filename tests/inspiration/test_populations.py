"""The three populations an audit reads (a cohort's proposals, screening runs, a benchmark set) with their groups,
domains and names, and the title diagnostic that changes retrieval coverage only."""

import json
from datetime import date

import pytest

from reviewapp.benchmarks.models import BenchmarkHypothesis, BenchmarkSet, BenchmarkTask
from reviewapp.inspiration.models import InspirationItem
from reviewapp.inspiration.services import audit_complete_here, audit_create, cutoff_set
from screening.models import Hypothesis, Run
from tests import factories
from tests.inspiration.support import add_inspiration_judge, make_reference


@pytest.fixture
def judge(script, server, db):
    script.inspire = lambda user, attempt: json.dumps(
        {"judgment": "negative", "connection": "", "quote": "", "reason": "scripted"}
    )
    return add_inspiration_judge(server.base_url)


def test_the_hypotheses_of_runs_are_grouped_by_the_model_that_wrote_them(judge):
    run = Run.objects.create(question="Does velqorin matter?", shuffle_seed=1)
    endpoint = judge  # any endpoint will do as an author
    Hypothesis.objects.create(
        run=run,
        source="generator-0",
        source_index=0,
        label="H1",
        position=1,
        author_endpoint=endpoint,
        author_name="ignored when the endpoint is known",
        statement="Velqorin lowers tranvide within drumlet.",
        mechanism="Drumlet velqorin.",
        prediction="Tranvide falls.",
        domain_category="senescence",
    )
    Hypothesis.objects.create(
        run=run, source="client", source_index=0, label="H2", position=2, author_name="client", statement="Other."
    )
    make_reference("r1", "Velqorin tranvide drumlet", "Velqorin tranvide drumlet.", date(2026, 6, 10))
    cutoff_set(group=endpoint.display_name, cutoff="2026-05")
    cutoff_set(group="client", cutoff="2026-05-14")

    audit = audit_complete_here(audit_id=audit_create(runs=[run], enqueue=False).pk)

    items = list(InspirationItem.objects.filter(audit=audit).order_by("position"))
    assert [(i.label, i.group, i.domain, i.retrieved) for i in items] == [
        (f"{run.public_id}/H1", endpoint.display_name, "senescence", True),
        (f"{run.public_id}/H2", "client", "", False),
    ]
    assert (
        items[0].text
        == "Velqorin lowers tranvide within drumlet. Mechanism: Drumlet velqorin. Prediction: Tranvide falls."
    )
    assert list(audit.runs.all()) == [run]


def test_a_benchmark_sets_imported_hypotheses_are_grouped_by_their_generator(judge):
    benchmark = BenchmarkSet.objects.create(name="Set", seed=1)
    task = factories.make_task(key="PMID1")
    entry = BenchmarkTask.objects.create(benchmark=benchmark, task=task, position=1)
    BenchmarkHypothesis.objects.create(
        benchmark=benchmark, benchmark_task=entry, key="g1", generator="Qwen", statement="Velqorin lowers tranvide."
    )
    cutoff_set(group="Qwen", cutoff="2025-04")

    audit = audit_complete_here(audit_id=audit_create(benchmark=benchmark, enqueue=False).pk)

    item = InspirationItem.objects.get(audit=audit)
    assert (item.label, item.group, item.benchmark_hypothesis.key) == ("PMID1/g1", "Qwen", "g1")
    assert audit.summary["totals"]["versions"] == 1


def test_the_title_diagnostic_reports_the_change_in_retrieval_coverage_only(judge, script):
    """The first version's text ranks a publication whose title shares two of its terms above the one that shares
    three in its abstract, so retrieval with the text fails the gate; its title (first sentence) retrieves."""
    notes = "Quarnel drifted. " * 3 + "Provenance: rewritten by the lead agent, quarnel and zintal were checked."
    proposals = [
        factories.make_proposal(
            external_id="long",
            author="Model C",
            statement=f"Velqorin lowers tranvide within drumlet. {notes}",
        ),
        factories.make_proposal(external_id="plain", author="Model C", statement="Orquelin raises bastemide."),
    ]
    filler = " ".join(f"word{n}" for n in range(120))
    make_reference("r1", "Explant study", f"{filler} velqorin tranvide drumlet {filler}", date(2026, 6, 10))
    make_reference("notes", "Quarnel zintal", "Quarnel zintal quarnel zintal quarnel zintal.", date(2026, 6, 11))
    make_reference("r2", "Orquelin bastemide", "Orquelin raises bastemide.", date(2026, 6, 12))
    cutoff_set(group="Model C", cutoff="2026-05")
    cohort = factories.make_cohort(proposals)

    audit = audit_complete_here(audit_id=audit_create(cohort=cohort, title_diagnostic=True, enqueue=False).pk)

    items = {item.label: item for item in InspirationItem.objects.filter(audit=audit).select_related("candidate")}
    assert (items["long"].retrieved, items["long"].candidate.source_id, items["long"].title_retrieved) == (
        False,
        "notes",
        True,
    )
    assert (items["plain"].retrieved, items["plain"].title_retrieved) == (True, True)
    diagnostic = audit.summary["title_diagnostic"]
    assert {k: diagnostic[k] for k in ("versions", "retrieved_with_text", "retrieved_with_title", "change")} == {
        "versions": 2,
        "retrieved_with_text": 1,
        "retrieved_with_title": 2,
        "change": 1,
    }
    # Nothing found with titles is judged: one judgement, for the plain version.
    assert audit.summary["totals"]["judgments"] == 1
    assert len(script.requests_of("judge-luna", "inspiration")) == 1

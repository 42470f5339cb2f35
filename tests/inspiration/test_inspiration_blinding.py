"""Blinding (docs/protocol.md#blinding): inspiration audits, their cutoffs, judgements and the references they used,
and citation waves are automated results that no reviewer reaches. Canaries are planted in every such field of a real
audit of the reviewer's cohort; the reviewer crawls everything reachable and every URL of the project."""

import json
from datetime import date

import pytest
from django.urls import reverse

from literature.models import CitationEdge, CitationWave
from reviewapp.inspiration.models import InspirationAudit, InspirationCutoff, InspirationItem, InspirationJudgment
from reviewapp.inspiration.services import audit_complete_here, audit_create, cutoff_set
from reviewapp.models import Cohort
from tests import factories
from tests.inspiration.support import add_inspiration_judge, make_reference
from tests.reviewapp.test_blinding import Crawl, _fill, _ids_for, _url_patterns

CANARIES = {
    "group (generator)": "cnry-insp-group-4f1a",
    "cutoff note": "cnry-insp-cutoff-note-8b2c",
    "judgement quote": "cnry-insp-quote-3d7e",
    "judgement reason": "cnry-insp-reason-6a9f",
    "judgement connection": "cnry-insp-conn-1e5b",
    "later reference title": "cnry-insp-reference-title-7c3d",
    "judge name": "cnry-insp-judge-2f8a",
    "audit error": "cnry-insp-error-9d4e",
    "corpus fingerprint": "cnry-insp-fingerprint-5b6c",
    "citation wave anchor": "MED:cnry-wave-anchor-0a1b",
    "citation edge": "MED:cnry-edge-4c2d",
}
STATEMENT = "Velqorin lowers tranvide within drumlet."
QUOTE = f"We measured tranvide after velqorin dosing in drumlet explants {CANARIES['judgement quote']}."


@pytest.fixture
def audited_cohort(db, script, server):
    script.inspire = lambda user, attempt: json.dumps(
        {"judgment": "positive", "connection": CANARIES["judgement connection"], "quote": QUOTE, "reason": "x"}
    )
    judge = add_inspiration_judge(server.base_url)
    judge.display_name = CANARIES["judge name"]
    judge.save()
    proposal = factories.make_proposal(statement=STATEMENT, author=CANARIES["group (generator)"])
    cohort = factories.make_cohort([proposal], status=Cohort.Status.DRAFT)
    reference = make_reference(
        "r1", CANARIES["later reference title"] + " velqorin tranvide drumlet", QUOTE, date(2026, 6, 1)
    )
    cutoff_set(group=CANARIES["group (generator)"], cutoff="2026-05", note=CANARIES["cutoff note"])
    audit = audit_complete_here(audit_id=audit_create(cohort=cohort, enqueue=False).pk)
    assert audit.summary["totals"]["positive"] == 1
    InspirationJudgment.objects.filter(audit=audit).update(reason=CANARIES["judgement reason"])
    InspirationAudit.objects.filter(pk=audit.pk).update(
        error=CANARIES["audit error"], corpus={**audit.corpus, "fingerprint": CANARIES["corpus fingerprint"]}
    )
    wave = CitationWave.objects.create(anchors=[CANARIES["citation wave anchor"]], state="done")
    CitationEdge.objects.create(
        wave=wave, citing=CANARIES["citation wave anchor"], cited=CANARIES["citation edge"], direction="backward"
    )
    cohort.status = Cohort.Status.OPEN
    cohort.save(update_fields=["status"])
    reviewer = factories.make_user("reviewer", username="rev-insp")
    assignment = factories.make_assignment(cohort, reviewer, proposal)
    return audit, reviewer, assignment, reference, wave


def test_no_inspiration_canary_reaches_a_reviewer(client, audited_cohort):
    audit, reviewer, assignment, reference, wave = audited_cohort
    client.force_login(reviewer)
    crawl = Crawl(client)
    crawl.follow(["/", reverse("review-queue"), reverse("review-page", args=[assignment.pk])])
    # Every URL of the project with ids of every kind, and this room's own records by their ids.
    ids_for = _ids_for(None)
    for route, pattern in _url_patterns():
        for url in _fill(route, ids_for):
            crawl.request("get", url)
            crawl.request("get", url, htmx=True)
            if pattern.name != "logout":
                crawl.request("post", url)
    own = [
        reverse("inspiration-audit", args=[audit.pk]),
        reverse("api-inspiration-audit", args=[audit.pk]),
        reverse("api-inspiration-audit-items", args=[audit.pk]),
        reverse("api-inspiration-cutoff", args=[CANARIES["group (generator)"]]),
        reverse("literature-reference", args=[reference.pk]),
        reverse("literature-citation-wave", args=[wave.pk]),
        reverse("api-citation-wave", args=[wave.pk]),
        reverse("api-citation-wave-edges", args=[wave.pk]),
        "/api/v1/inspiration/cutoffs",
        "/api/v1/inspiration/audits",
        "/literature/corpus/?q=velqorin",
    ]
    for url in own:
        crawl.request("get", url)
        crawl.request("get", url, htmx=True)

    leaks = []
    for method, path, htmx, response, body in crawl.responses:
        text = body.decode(errors="replace").lower() + " ".join(f"{k}: {v}" for k, v in response.items()).lower()
        where_seen = f"{method.upper()} {path}{' (htmx)' if htmx else ''}"
        leaks += [f"{where} in {where_seen}" for where, value in CANARIES.items() if value.lower() in text]
    assert not leaks, "inspiration data reached the reviewer:\n" + "\n".join(leaks)
    pages = {(method, path): response for method, path, htmx, response, body in crawl.responses if not htmx}
    assert STATEMENT in pages[("get", reverse("review-page", args=[assignment.pk]))].content.decode()
    assert pages[("get", reverse("inspiration-audit", args=[audit.pk]))].status_code == 403


def test_the_canaries_are_on_the_pages_of_coordinators(client, audited_cohort):
    """Shown where blinding does not apply, so their absence above means something."""
    audit, reviewer, assignment, reference, wave = audited_cohort
    client.force_login(factories.make_user("coordinator"))
    text = client.get(reverse("inspiration-audit", args=[audit.pk])).content.decode()
    text += client.get(reverse("inspiration-cutoffs")).content.decode()
    text += client.get(reverse("literature-reference", args=[reference.pk])).content.decode()
    text += client.get(reverse("literature-citation-wave", args=[wave.pk])).content.decode()
    text += b"".join(client.get(reverse("api-citation-wave-edges", args=[wave.pk])).streaming_content).decode()
    text += client.get(reverse("api-inspiration-audit", args=[audit.pk])).content.decode()
    text += client.get(reverse("api-inspiration-audit-items", args=[audit.pk])).content.decode()
    shown = {where for where, value in CANARIES.items() if value in text}
    assert shown == set(CANARIES), set(CANARIES) - shown
    assert InspirationCutoff.objects.get().note == CANARIES["cutoff note"]
    assert InspirationItem.objects.get(audit=audit).group == CANARIES["group (generator)"]

"""The inspiration audit over a cohort, counted by hand (docs/protocol.md#inspiration-audit): cutoffs per group, the
lexical gate at two and three shared terms, one judgement shared by duplicate inputs, quote verification, a reply
that never parses, every count and rate overall, per group and per domain; then the API, the pages and a replay that
gives the same numbers without asking the judge."""

from datetime import date

import pytest
from rest_framework.test import APIClient

from reviewapp.inspiration.models import InspirationAudit, InspirationItem, InspirationJudgment
from reviewapp.inspiration.services import audit_complete_here, audit_create, cutoff_set
from tests.api_schema_support import api_schema, assert_conforms
from tests.inspiration.support import (
    METABOLISM,
    R1_QUOTE,
    SENESCENCE,
    A,
    B,
    add_inspiration_judge,
    make_reference,
    scripted_judge,
)
from tests.screening_support import broker_down

AUDIT = "/api/v1/inspiration/audits/{audit_id}"


@pytest.fixture
def judge(script, server, db):
    script.inspire = scripted_judge
    return add_inspiration_judge(server.base_url)


def outcomes(audit) -> dict:
    return {
        item.label: (item.retrieved, item.judgment.judgment if item.judgment else None)
        for item in InspirationItem.objects.filter(audit=audit).select_related("judgment")
    }


def test_an_audit_counts_every_version_as_computed_by_hand(cohort, judge, script):
    audit = audit_complete_here(audit_id=audit_create(cohort=cohort, enqueue=False).pk)

    assert audit.state == InspirationAudit.State.DONE, audit.error
    assert outcomes(audit) == {
        "P1": (True, "positive"),
        "P2": (True, "positive"),  # shares P1's judgement
        "P3": (False, None),  # nothing later than A's cutoff
        "P4": (True, "negative"),  # positive without a verified quote
        "P5": (False, None),  # two shared terms: below the gate
        "P6": (True, "failed"),  # never parsed
        "P7": (True, "negative"),
    }
    # One judgement per distinct input; the malformed one asked twice: 1 + 1 + 2 + 1 requests.
    judgments = InspirationJudgment.objects.filter(audit=audit)
    assert judgments.count() == 4
    assert len(script.requests_of("judge-luna", "inspiration")) == 5
    p1, p2 = (InspirationItem.objects.get(audit=audit, label=label) for label in ("P1", "P2"))
    assert p1.judgment_id == p2.judgment_id
    r4 = judgments.get(reference__source_id="r4")
    assert (r4.judged, r4.judgment, r4.quote_verified) == ("positive", "negative", False)
    assert r4.reason.startswith("unverified: the positive judgement came with a quote that does not occur")
    positive = judgments.get(judgment="positive")
    assert (positive.quote, positive.quote_verified, positive.connection) == (R1_QUOTE, True, "measurement")
    assert positive.model_call is not None and positive.model_call.purpose == "inspiration"
    assert p1.shared_terms == ["velqorin", "tranvide", "drumlet"]
    p5 = InspirationItem.objects.get(audit=audit, label="P5")
    assert (p5.candidate.source_id, p5.shared_terms) == ("r5", ["zorblax", "quintavine"])
    assert InspirationItem.objects.get(audit=audit, label="P4").candidate.source_id == "r4"

    report = audit.summary
    assert report["totals"] == {
        "versions": 7,
        "retrieved": 5,
        "judged": 4,
        "failed": 1,
        "positive": 2,
        "negative": 2,
        "unverified": 1,
        "pending": 0,
        "date_too_coarse": 2,  # r2b (A only) and r8 (both)
        "judgments": 4,
        "replayed": 0,
    }
    assert (report["rate"], report["retrieval_coverage"], report["positive_given_retrieved"]) == (2 / 7, 5 / 7, 2 / 5)
    by_group = {row["group"]: row for row in report["by_group"]}
    assert {
        k: by_group[A][k] for k in ("cutoff", "precision", "versions", "retrieved", "judged", "failed", "positive")
    } == {
        "cutoff": "2026-05-14",
        "precision": "day",
        "versions": 3,
        "retrieved": 2,
        "judged": 2,
        "failed": 0,
        "positive": 2,
    }
    assert (by_group[A]["rate"], by_group[A]["date_too_coarse"]) == (2 / 3, 2)
    assert {k: by_group[B][k] for k in ("cutoff", "versions", "retrieved", "judged", "failed", "positive")} == {
        "cutoff": "2026-05",
        "versions": 4,
        "retrieved": 3,
        "judged": 2,
        "failed": 1,
        "positive": 0,
    }
    assert (by_group[B]["rate"], by_group[B]["positive_given_retrieved"], by_group[B]["date_too_coarse"]) == (0, 0, 1)
    by_domain = {row["domain"]: row for row in report["by_domain"]}
    assert [by_domain[SENESCENCE][k] for k in ("versions", "retrieved", "judged", "failed", "positive")] == [
        4,
        3,
        2,
        1,
        2,
    ]
    assert [by_domain[METABOLISM][k] for k in ("versions", "retrieved", "judged", "failed", "positive")] == [
        3,
        2,
        2,
        0,
        0,
    ]
    assert by_domain[SENESCENCE]["rate"] == 2 / 4

    # What makes it reproducible is stored with it.
    assert audit.cutoffs[A] == {
        "cutoff": "2026-05-14",
        "precision": "day",
        "last_day": "2026-05-14",
        "later_from": "2026-05-15",  # no window: the day after the cutoff
        "note": "",
    }
    assert audit.cutoffs[B]["later_from"] == "2026-06-01"
    assert audit.corpus["references"] == 9 and len(audit.corpus["fingerprint"]) == 64
    # No window: both ends open, and every dated reference is inside it.
    assert (audit.corpus["window_start"], audit.corpus["window_end"], audit.corpus["in_window"]) == (None, None, 9)
    assert audit.judge["model_id"] == "judge-luna" and audit.prompt["version"] == "inspiration-v1"


def test_a_replayed_audit_gives_the_same_numbers_without_asking_the_judge(cohort, judge, script):
    first = audit_complete_here(audit_id=audit_create(cohort=cohort, enqueue=False).pk)
    asked = len(script.requests)

    second = audit_complete_here(audit_id=audit_create(cohort=cohort, replay_of=first, enqueue=False).pk)

    assert len(script.requests) == asked
    assert second.corpus["fingerprint"] == first.corpus["fingerprint"]
    assert outcomes(second) == outcomes(first)
    replayed_totals = {**second.summary["totals"], "replayed": 0}
    assert replayed_totals == first.summary["totals"] and second.summary["totals"]["replayed"] == 4
    assert {k: v for k, v in second.summary.items() if k not in ("totals", "replay")} == {
        k: v for k, v in first.summary.items() if k not in ("totals", "replay")
    }
    assert second.summary["replay"] == {
        "of": first.pk,
        "replayed_fingerprint": first.corpus["fingerprint"],
        "corpus_matches": True,
        "warning": "",
    }
    assert first.summary["replay"] is None


def test_a_replay_over_another_publication_window_is_warned(cohort, judge, script):
    first = audit_complete_here(audit_id=audit_create(cohort=cohort, enqueue=False).pk)
    second = audit_complete_here(
        audit_id=audit_create(cohort=cohort, replay_of=first, window_start=date(2026, 7, 1), enqueue=False).pk
    )
    replay = second.summary["replay"]
    assert second.corpus["fingerprint"] == first.corpus["fingerprint"] and replay["corpus_matches"] is False
    assert replay["warning"].startswith(
        f"The publication window differs from audit {first.pk}'s (open to open then, 2026-07-01 to open now)"
    )


def test_a_replay_over_a_changed_corpus_is_warned_on_its_page_and_in_the_api(client, cohort, judge, coordinator):
    first = audit_complete_here(audit_id=audit_create(cohort=cohort, enqueue=False).pk)
    make_reference("r9", "Velqorin drumlet tranvide follow-up", "Velqorin in drumlet explants again.", date(2026, 7, 1))

    second = audit_complete_here(audit_id=audit_create(cohort=cohort, replay_of=first, enqueue=False).pk)

    replay = second.summary["replay"]
    assert replay["corpus_matches"] is False and replay["replayed_fingerprint"] == first.corpus["fingerprint"]
    assert replay["warning"].startswith(
        f"The corpus differs from the one audit {first.pk} searched (9 references then, 10"
    )
    client.force_login(coordinator)
    page = client.get(f"/inspiration/audits/{second.pk}/").content.decode()
    assert 'id="replay-warning"' in page and "corpus changed" in page
    api = APIClient()
    api.force_authenticate(coordinator)
    body = api.get(f"/api/v1/inspiration/audits/{second.pk}").json()
    assert body["replay"]["corpus_matches"] is False
    assert_conforms(api_schema(), AUDIT, body)


def test_an_audit_records_that_its_judge_is_sent_no_seed(client, cohort, judge, coordinator):
    audit = audit_complete_here(audit_id=audit_create(cohort=cohort, enqueue=False).pk)
    assert audit.judge["request_seed"] is None and "simulator" not in audit.judge  # a real provider's protocol
    client.force_login(coordinator)
    page = client.get(f"/inspiration/audits/{audit.pk}/").content.decode()
    assert '<dd id="request-seed">None: its requests carry no sampling seed</dd>' in page


def test_an_audit_with_a_window_end_reads_only_the_literature_published_until_then(cohort, judge, script):
    """The window ends on 2026-08-31: r6 (September 2026) and r5 (2027) are outside it, so P6 and P5 find nothing;
    the rest is as without a window (counted by hand, as in the first test)."""
    audit = audit_complete_here(audit_id=audit_create(cohort=cohort, window_end=date(2026, 8, 31), enqueue=False).pk)

    assert audit.state == InspirationAudit.State.DONE, audit.error
    assert audit.window_end == date(2026, 8, 31)
    assert outcomes(audit) == {
        "P1": (True, "positive"),
        "P2": (True, "positive"),
        "P3": (False, None),
        "P4": (True, "negative"),
        "P5": (False, None),
        "P6": (False, None),  # its only later publication is after the window
        "P7": (True, "negative"),
    }
    assert InspirationItem.objects.get(audit=audit, label="P5").candidate is None  # r5 is not searched at all
    totals = audit.summary["totals"]
    assert {k: totals[k] for k in ("versions", "retrieved", "judged", "failed", "positive")} == {
        "versions": 7,
        "retrieved": 4,
        "judged": 4,
        "failed": 0,
        "positive": 2,
    }
    assert (audit.summary["rate"], audit.summary["retrieval_coverage"]) == (2 / 7, 4 / 7)
    assert audit.summary["positive_given_retrieved"] == 2 / 4
    assert len(script.requests_of("judge-luna", "inspiration")) == 3  # P1 (shared with P2), P4, P7


def test_an_audit_with_a_window_start_reads_only_the_literature_published_from_then(cohort, judge, script):
    """The window starts on 2026-07-01, after both cutoffs: later literature of both groups is what was published
    after 2026-06-30. r1 (2026-06-10) and r4 (2026-06-01) fall before it, so P1, P2 and P4 find nothing; r6
    (September 2026) and r7 (2026-07-02) stay; r8 (the year 2026) straddles the start and is date too coarse, while
    r2b (May 2026), too coarse for A's cutoff, is now simply earlier. Counted by hand."""
    audit = audit_complete_here(audit_id=audit_create(cohort=cohort, window_start=date(2026, 7, 1), enqueue=False).pk)

    assert audit.state == InspirationAudit.State.DONE, audit.error
    assert (audit.window_start, audit.window_end) == (date(2026, 7, 1), None)
    assert outcomes(audit) == {
        "P1": (False, None),
        "P2": (False, None),
        "P3": (False, None),
        "P4": (False, None),
        "P5": (False, None),
        "P6": (True, "failed"),
        "P7": (True, "negative"),
    }
    assert len(script.requests_of("judge-luna", "inspiration")) == 3  # P6 asked twice, P7 once
    totals = audit.summary["totals"]
    assert {k: totals[k] for k in ("versions", "retrieved", "judged", "failed", "positive", "date_too_coarse")} == {
        "versions": 7,
        "retrieved": 2,
        "judged": 1,
        "failed": 1,
        "positive": 0,
        "date_too_coarse": 1,
    }
    assert {row["group"]: row["date_too_coarse"] for row in audit.summary["by_group"]} == {A: 1, B: 1}
    assert audit.cutoffs[A]["later_from"] == audit.cutoffs[B]["later_from"] == "2026-07-01"
    assert audit.cutoffs[A]["last_day"] == "2026-05-14"  # the cutoff itself is kept as recorded
    # The corpus reports the window: r5 (2027), r6 (September 2026) and r7 (2026-07-02) start within it.
    assert (audit.corpus["window_start"], audit.corpus["window_end"], audit.corpus["in_window"]) == (
        "2026-07-01",
        None,
        3,
    )


def test_a_window_start_before_a_cutoff_changes_nothing_for_that_group(cohort, judge, script):
    """The window of the seed's corpus, 1 April 2025 to 14 October 2026: it starts before both cutoffs, so later
    literature is as without a start; it ends before r5 (2027), which P5 then cannot find."""
    audit = audit_complete_here(
        audit_id=audit_create(
            cohort=cohort, window_start=date(2025, 4, 1), window_end=date(2026, 10, 14), enqueue=False
        ).pk
    )
    assert outcomes(audit)["P1"] == (True, "positive") and outcomes(audit)["P4"] == (True, "negative")
    assert audit.cutoffs[A]["later_from"] == "2026-05-15" and audit.cutoffs[B]["later_from"] == "2026-06-01"
    assert InspirationItem.objects.get(audit=audit, label="P5").candidate is None
    # Every reference but r5 (2027) starts within the window; r8's year 2026 starts on 2026-01-01.
    assert (audit.corpus["window_start"], audit.corpus["window_end"], audit.corpus["in_window"]) == (
        "2025-04-01",
        "2026-10-14",
        8,
    )


def test_the_window_is_given_reported_and_checked_through_the_api_and_the_pages(cohort, judge, coordinator, client):
    api = APIClient()
    api.force_authenticate(coordinator)
    backwards = api.post(
        "/api/v1/inspiration/audits",
        {"cohort": cohort.pk, "window_start": "2026-10-15", "window_end": "2026-10-14"},
        format="json",
    )
    assert (backwards.status_code, backwards.json()["error"]) == (400, "invalid_audit")
    assert backwards.json()["problems"][0]["field"] == "window_start"
    assert not InspirationAudit.objects.exists()
    started = api.post(
        "/api/v1/inspiration/audits",
        {"cohort": cohort.pk, "window_start": "2025-04-01", "window_end": "2026-10-14"},
        format="json",
    )
    assert started.status_code == 202
    audit_complete_here(audit_id=started.json()["id"])
    body = api.get(f"/api/v1/inspiration/audits/{started.json()['id']}").json()
    assert (body["window_start"], body["window_end"]) == ("2025-04-01", "2026-10-14")
    assert (body["corpus"]["window_start"], body["corpus"]["window_end"]) == ("2025-04-01", "2026-10-14")
    assert_conforms(api_schema(), AUDIT, body)
    rows = api.get("/api/v1/inspiration/audits").json()["results"]
    assert (rows[0]["window_start"], rows[0]["window_end"]) == ("2025-04-01", "2026-10-14")

    client.force_login(coordinator)
    page = client.get(f"/inspiration/audits/{started.json()['id']}/").content.decode()
    assert "from 2025-04-01" in page and "until 2026-10-14" in page
    assert '<dd id="corpus-window">2025-04-01 to 2026-10-14</dd>' in page
    response = client.post(
        "/inspiration/",
        {"population": "cohort", "cohort": str(cohort.pk), "window_start": "2026-07-01", "window_end": "2026-06-30"},
    )
    assert response.status_code == 200 and "starts (2026-07-01) after it ends (2026-06-30)" in response.content.decode()
    response = client.post(
        "/inspiration/", {"population": "cohort", "cohort": str(cohort.pk), "window_start": "2026-07-01"}
    )
    assert response.status_code == 302
    assert InspirationAudit.objects.order_by("-pk").first().window_start == date(2026, 7, 1)


def test_an_audit_needs_a_cutoff_for_every_group_and_a_judge(cohort, db, server):
    from reviewapp.inspiration.models import InspirationCutoff
    from reviewapp.inspiration.services import AuditRefused

    InspirationCutoff.objects.filter(group=B).delete()
    with pytest.raises(AuditRefused) as refused:
        audit_create(cohort=cohort, enqueue=False)
    assert refused.value.code == "missing_cutoffs" and [p["message"] for p in refused.value.problems] == [
        f"No cutoff is recorded for “{B}”."
    ]
    cutoff_set(group=B, cutoff="2026-05")
    with pytest.raises(Exception) as unconfigured:
        audit_create(cohort=cohort, enqueue=False)
    assert getattr(unconfigured.value, "code", None) == "not_configured"
    assert not InspirationAudit.objects.exists()


def test_an_audit_started_while_the_broker_is_down_is_refused_and_nothing_is_written(
    cohort, judge, coordinator, settings, monkeypatch
):
    client = APIClient()
    client.force_authenticate(coordinator)
    with broker_down(settings, monkeypatch):
        response = client.post("/api/v1/inspiration/audits", {"cohort": cohort.pk}, format="json")
    assert response.status_code == 503 and response.json()["error"] == "queue_unavailable"
    assert not InspirationAudit.objects.exists() and not InspirationItem.objects.exists()


def test_the_api_answers_the_audit_with_every_count_and_item(cohort, judge, coordinator, analyst):
    client = APIClient()
    client.force_authenticate(coordinator)
    assert client.put(f"/api/v1/inspiration/cutoffs/{A}", {"cutoff": "2026-05-14"}, format="json").status_code == 200
    cutoffs = client.get("/api/v1/inspiration/cutoffs").json()["results"]
    assert {(c["group"], c["cutoff"], c["precision"]) for c in cutoffs} == {
        (A, "2026-05-14", "day"),
        (B, "2026-05", "month"),
    }
    refused = client.put(f"/api/v1/inspiration/cutoffs/{A}", {"cutoff": "2026-13"}, format="json")
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_cutoff"

    started = client.post("/api/v1/inspiration/audits", {"cohort": cohort.pk}, format="json")
    assert started.status_code == 202 and started.json()["state"] == "pending"
    reader = APIClient()
    reader.force_authenticate(analyst)
    schema = api_schema()
    pending = reader.get(f"/api/v1/inspiration/audits/{started.json()['id']}").json()
    assert pending["state"] == "pending" and pending["corpus"] is None
    assert_conforms(schema, AUDIT, pending)
    audit_complete_here(audit_id=started.json()["id"])

    body = reader.get(f"/api/v1/inspiration/audits/{started.json()['id']}").json()
    assert body["state"] == "done"
    assert_conforms(schema, AUDIT, body)
    assert {
        k: body["totals"][k] for k in ("versions", "retrieved", "judged", "failed", "positive", "date_too_coarse")
    } == {
        "versions": 7,
        "retrieved": 5,
        "judged": 4,
        "failed": 1,
        "positive": 2,
        "date_too_coarse": 2,
    }
    assert body["rate"] == pytest.approx(2 / 7) and body["retrieval_coverage"] == pytest.approx(5 / 7)
    assert "items" not in body
    page = reader.get(body["items_url"]).json()
    assert (page["count"], page["offset"]) == (7, 0)
    items = {item["hypothesis"]: item for item in page["results"]}
    assert items["P1"]["judgment"] == "positive" and items["P1"]["evidence"] == R1_QUOTE
    assert items["P1"]["reference"] == {
        "source": "csv",
        "id": "r1",
        "title": "Velqorin and tranvide in drumlet",
        "published": "2026-06-10",
    }
    assert items["P6"]["reference"]["published"] == "2026-09"
    assert (items["P3"]["judgment"], items["P3"]["reference"], items["P3"]["retrieved"]) == (
        "not_retrieved",
        None,
        False,
    )
    assert items["P4"]["judgment"] == "negative" and items["P4"]["evidence"] == ""
    assert [row["group"] for row in body["by_group"]] == [A, B]
    # Analysts see authorship (docs/protocol.md#blinding): each item names its group, as their exports do.
    assert {item["group"] for item in page["results"]} == {A, B}
    failed_only = reader.get(f"{body['items_url']}?judgment=failed").json()
    assert failed_only["count"] == 1 and [item["hypothesis"] for item in failed_only["results"]] == ["P6"]
    pages = [reader.get(f"{body['items_url']}?limit=3&offset={offset}").json() for offset in (0, 3, 6)]
    assert [item["hypothesis"] for page in pages for item in page["results"]] == list(items)
    assert reader.get(f"{body['items_url']}?limit=1001").status_code == 400
    # Analysts read; only coordinators set cutoffs and start audits.
    assert reader.post("/api/v1/inspiration/audits", {"cohort": cohort.pk}, format="json").status_code == 403
    assert reader.put(f"/api/v1/inspiration/cutoffs/{A}", {"cutoff": "2026-05"}, format="json").status_code == 403


def test_the_api_refuses_what_it_cannot_audit(cohort, judge, coordinator):
    client = APIClient()
    client.force_authenticate(coordinator)
    two = client.post("/api/v1/inspiration/audits", {"cohort": cohort.pk, "benchmark": 1}, format="json")
    unknown = client.post("/api/v1/inspiration/audits", {"cohort": 999999}, format="json")
    bad_run = client.post("/api/v1/inspiration/audits", {"runs": ["not-a-uuid"]}, format="json")
    assert (two.status_code, two.json()["error"]) == (400, "unknown_benchmark")
    assert (unknown.status_code, unknown.json()["error"]) == (400, "unknown_cohort")
    assert (bad_run.status_code, bad_run.json()["error"]) == (400, "invalid_body")
    none = client.post("/api/v1/inspiration/audits", {}, format="json")
    assert (none.status_code, none.json()["error"]) == (400, "invalid_audit")
    assert not InspirationAudit.objects.exists()


def test_the_audit_pages_show_counts_beside_every_share(client, cohort, judge, coordinator, analyst):
    audit = audit_complete_here(audit_id=audit_create(cohort=cohort, enqueue=False).pk)
    client.force_login(analyst)
    page = client.get(f"/inspiration/audits/{audit.pk}/").content.decode()
    assert "28.6% (2/7)" in page  # the rate
    assert "71.4% (5/7)" in page  # retrieval coverage
    assert "40.0% (2/5)" in page  # positive among retrieved
    assert R1_QUOTE in page
    # The filter form as sent, a filter left empty: only the failed item; a judgement that is none is refused.
    failed = client.get(f"/inspiration/audits/{audit.pk}/", {"group": "", "judgment": "failed"}).content.decode()
    assert "P6" in failed and R1_QUOTE not in failed
    refused = client.get(f"/inspiration/audits/{audit.pk}/", {"judgment": "maybe"}).content.decode()
    assert "Judgment: " in refused and "is not a valid choice" in refused
    assert "Start an audit" not in client.get("/inspiration/").content.decode()
    client.force_login(coordinator)
    home = client.get("/inspiration/").content.decode()
    assert "Start an audit" in home and f"Audit {audit.pk}" in home
    cutoffs = client.get("/inspiration/cutoffs/").content.decode()
    assert "2026-05-14" in cutoffs and "after 2026-05-31" in cutoffs
    response = client.post("/inspiration/", {"population": "cohort", "cohort": str(cohort.pk)})
    assert response.status_code == 302
    started = InspirationAudit.objects.exclude(pk=audit.pk).get()
    assert response["Location"] == f"/inspiration/audits/{started.pk}/"
    refused = client.post("/inspiration/cutoffs/", {"group": A, "cutoff": "May 2026", "action": "set"})
    assert "is not a day like 2026-05-14" in refused.content.decode()


def test_the_sweeper_gives_a_stalled_batch_to_another_worker_then_gives_up_on_it(cohort, judge, settings):
    from datetime import timedelta

    from django.utils import timezone

    from reviewapp.inspiration.models import InspirationBatch
    from reviewapp.inspiration.services import audit_advance, batch_perform, batches_sweep

    settings.INSPIRATION_MAX_ATTEMPTS = 2
    audit = audit_create(cohort=cohort, enqueue=False)
    audit_advance(audit_id=audit.pk, enqueue=False)
    for batch in InspirationBatch.objects.filter(audit=audit):
        batch_perform(batch_id=batch.pk, enqueue=False)  # retrieval done; the judging batch is created
    judging = InspirationBatch.objects.get(audit=audit, kind="judging")
    long_ago = timezone.now() - timedelta(hours=2)
    # A worker claimed it and died, twice.
    for expected_state in ("pending", "failed"):
        InspirationBatch.objects.filter(pk=judging.pk).update(
            state="running", started_at=long_ago, attempts=InspirationBatch.objects.get(pk=judging.pk).attempts + 1
        )
        batches_sweep()
        assert InspirationBatch.objects.get(pk=judging.pk).state == expected_state

    audit.refresh_from_db()
    assert audit.state == "done"
    assert audit.summary["totals"]["failed"] == 5 and audit.summary["totals"]["pending"] == 0
    assert set(audit.judgments.values_list("judgment", flat=True)) == {"failed"}


def test_an_audit_whose_starter_died_is_started_again_by_the_sweeper(cohort, judge):
    from datetime import timedelta

    from django.utils import timezone

    from reviewapp.inspiration.services import audit_advance, batches_sweep

    audit = audit_create(cohort=cohort, enqueue=False)
    # Claimed, then its worker died before making the batches: advancing must not count an empty audit.
    InspirationAudit.objects.filter(pk=audit.pk).update(state="running", started_at=timezone.now() - timedelta(hours=2))
    audit_advance(audit_id=audit.pk, enqueue=False)
    assert InspirationAudit.objects.get(pk=audit.pk).state == "running"

    batches_sweep()

    assert InspirationAudit.objects.get(pk=audit.pk).state == "pending"
    assert audit_complete_here(audit_id=audit.pk).summary["totals"]["positive"] == 2


def test_a_refusal_for_missing_cutoffs_links_the_cutoffs_page(cohort, db, server, client, coordinator):
    from reviewapp.inspiration.models import InspirationCutoff

    InspirationCutoff.objects.filter(group=B).delete()
    client.force_login(coordinator)
    response = client.post("/inspiration/", {"population": "cohort", "cohort": str(cohort.pk)})
    page = response.content.decode()
    assert response.status_code == 200 and "Record the cutoff of every group first" in page
    assert 'Record them on the <a href="/inspiration/cutoffs/">cutoffs page</a>' in page
    window = client.post(
        "/inspiration/",
        {"population": "cohort", "cohort": str(cohort.pk), "window_start": "2026-07-01", "window_end": "2026-06-30"},
    )
    assert "Record them on the" not in window.content.decode()  # another refusal: no such line

"""The public Open Hypothesis API (SPEC §4.7): paths, fields, error codes, limits with Retry-After, ?lang=ru, and the
coordinators' and analysts' view of a run's model calls."""

import threading
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from screening.llm.models import ModelCall
from screening.models import Hypothesis, Run
from screening.selectors import run_list
from tests.screening_support import (
    drive,
    make_roster,
)

RUNS = "/api/v1/open-hypothesis/runs"
SCREENINGS = "/api/v1/open-hypothesis/screenings"
QUESTION = "How does remodelling of the bone-marrow niche affect mutant clones?"
HYPOTHESIS = {
    "statement": "Niche IL-1 drives clone growth.",
    "mechanism": "IL-1 signalling.",
    "prediction": "Blocking it.",
}

pytestmark = pytest.mark.usefixtures("fast_retries")


def post(client, path, body, address="198.51.100.7", **extra):
    return client.post(path, body, content_type="application/json", REMOTE_ADDR=address, **extra)


def start_run(client, address="198.51.100.7", forwarded_for=None, **body):
    headers = {"HTTP_X_FORWARDED_FOR": forwarded_for} if forwarded_for else {}
    return post(client, RUNS, {"question": QUESTION, **body}, address, **headers)


# Starting runs ---------------------------------------------------------------------------------------------------


def test_post_run_answers_202_with_the_documented_fields(client, roster):
    response = start_run(client, background="Known: niche remodelling.", language="en")
    assert response.status_code == 202
    body = response.json()
    assert set(body) == {"id", "status", "protocol", "url", "poll", "poll_interval_seconds"}
    assert body["status"] == "queued" and body["protocol"] == "open-hypothesis-v2"
    assert body["poll_interval_seconds"] == 15
    assert body["url"] == f"http://testserver/open-hypothesis/{body['id']}"
    assert body["poll"] == f"http://testserver/api/v1/open-hypothesis/runs/{body['id']}"
    assert response["Location"] == body["poll"]
    run = Run.objects.get(public_id=body["id"])
    assert (run.question, run.background, run.language, run.kind) == (
        QUESTION,
        "Known: niche remodelling.",
        "en",
        "generate",
    )
    assert client.get(body["poll"]).status_code == 200


def test_the_public_api_needs_no_csrf_token_even_with_a_session(roster, coordinator):
    client = Client(enforce_csrf_checks=True)
    client.force_login(coordinator)
    assert start_run(client).status_code == 202
    response = post(client, SCREENINGS, {"question": QUESTION, "hypotheses": [HYPOTHESIS]})
    assert response.status_code == 202


def test_simulated_models_are_named_in_the_answer(client, db, server):
    make_roster(server.base_url, simulated=True)
    body = start_run(client).json()
    assert body["simulated"] is True
    assert client.get(body["poll"]).json()["simulated"] is True


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"question": "Too short"}, "question_too_short"),
        ({"question": "   padded    "}, "question_too_short"),
        ({"question": "x" * 2001}, "question_too_long"),
        ({"question": QUESTION, "background": "x" * 8001}, "background_too_long"),
        ({"question": QUESTION, "language": "de"}, "invalid_body"),
        ({"question": 1234567890123}, "invalid_body"),
        ({"question": QUESTION, "background": ["a list"]}, "invalid_body"),
        ({"background": "no question"}, "invalid_body"),
        (["a", "list"], "invalid_body"),
    ],
)
def test_invalid_runs_are_refused_with_their_code(client, roster, body, code):
    response = post(client, RUNS, body)
    assert response.status_code == 400
    assert response.json()["error"] == code
    assert set(response.json()) == {"error", "detail", "problems"} and response.json()["detail"]
    assert not Run.objects.exists()


def test_a_body_that_is_not_json_is_invalid_body(client, roster):
    response = client.post(RUNS, "question=hello", content_type="application/json", REMOTE_ADDR="198.51.100.7")
    assert (response.status_code, response.json()["error"]) == (400, "invalid_body")
    response = client.post(RUNS, {"question": QUESTION}, REMOTE_ADDR="198.51.100.7")  # a form, not JSON
    assert (response.status_code, response.json()["error"]) == (400, "invalid_body")


def test_lengths_at_the_limits_are_accepted(client, roster, settings):
    settings.OPEN_HYPOTHESIS_CLIENT_LIMIT = 10
    assert start_run(client, question="x" * 10).status_code == 202
    assert start_run(client, question="x" * 2000, background="y" * 8000).status_code == 202
    assert start_run(client, language="ru", background=None).status_code == 202


# Limits ----------------------------------------------------------------------------------------------------------


def test_fourth_run_from_one_address_is_refused_until_the_first_is_a_day_old(client, roster):
    for _ in range(3):
        assert start_run(client).status_code == 202
    first = Run.objects.order_by("created_at").first()
    Run.objects.filter(pk=first.pk).update(created_at=timezone.now() - timedelta(hours=23))
    response = start_run(client)
    assert response.status_code == 429
    assert response.json()["error"] == "client_limit"
    assert 3590 <= int(response["Retry-After"]) <= 3600
    # Another address is not limited by this one.
    assert start_run(client, address="198.51.100.8").status_code == 202
    Run.objects.filter(pk=first.pk).update(created_at=timezone.now() - timedelta(hours=24, seconds=1))
    assert start_run(client).status_code == 202


def test_invalid_requests_do_not_count_against_the_limit(client, roster):
    for _ in range(5):
        assert post(client, RUNS, {"question": "short"}).status_code == 400
        assert post(client, SCREENINGS, {"question": QUESTION, "hypotheses": []}).status_code == 400
    for _ in range(3):
        assert start_run(client).status_code == 202
    assert start_run(client).status_code == 429


def test_daily_cap_counts_every_address(client, roster, settings):
    settings.OPEN_HYPOTHESIS_DAILY_CAP = 4
    for n in range(4):
        assert start_run(client, address=f"203.0.113.{n}").status_code == 202
    Run.objects.filter(pk=Run.objects.order_by("created_at").first().pk).update(
        created_at=timezone.now() - timedelta(hours=22)
    )
    response = start_run(client, address="203.0.113.99")
    assert (response.status_code, response.json()["error"]) == (429, "daily_cap")
    assert 7190 <= int(response["Retry-After"]) <= 7200


def test_queue_full_when_too_many_runs_wait(client, roster, settings):
    settings.OPEN_HYPOTHESIS_QUEUE_LIMIT = 2
    assert start_run(client, address="203.0.113.1").status_code == 202
    assert start_run(client, address="203.0.113.2").status_code == 202
    response = start_run(client, address="203.0.113.3")
    assert (response.status_code, response.json()["error"]) == (503, "queue_full")
    assert int(response["Retry-After"]) >= 15
    # A run that ends frees its place.
    Run.objects.filter(pk=Run.objects.first().pk).update(status=Run.Status.COMPLETED, finished_at=timezone.now())
    assert start_run(client, address="203.0.113.3").status_code == 202


def test_runs_without_a_client_address_use_none_of_the_public_limits(client, roster, settings):
    # Coordinators' benchmark-set runs carry no client address.
    settings.OPEN_HYPOTHESIS_DAILY_CAP = 2
    settings.OPEN_HYPOTHESIS_QUEUE_LIMIT = 2
    for _ in range(5):
        Run.objects.create(question=QUESTION, shuffle_seed=1, client_hash="")
    assert start_run(client, address="203.0.113.1").status_code == 202
    assert start_run(client, address="203.0.113.2").status_code == 202
    response = start_run(client, address="203.0.113.3")
    assert response.status_code in (429, 503)


def test_client_address_ignores_forwarding_headers_unless_a_trusted_proxy_is_configured(client, roster, settings):
    for n in range(3):
        assert start_run(client, forwarded_for=f"10.0.0.{n}").status_code == 202
    assert start_run(client, forwarded_for="10.0.0.9").status_code == 429

    settings.OPEN_HYPOTHESIS_TRUSTED_PROXY_HEADER = "X-Forwarded-For"
    # Only the last entry counts: the one the proxy wrote; a client cannot pick another address before it.
    assert start_run(client, forwarded_for="10.0.0.1, 172.16.0.5").status_code == 202
    assert start_run(client, forwarded_for="172.16.0.5").status_code == 202
    assert start_run(client, forwarded_for="10.0.0.2, 172.16.0.5").status_code == 202
    assert start_run(client, forwarded_for="10.0.0.3, 172.16.0.5").status_code == 429


def _concurrent_posts(count: int, addresses) -> list[int]:
    barrier = threading.Barrier(count)
    statuses = []

    def send(address):
        try:
            barrier.wait()
            response = Client().post(RUNS, {"question": QUESTION}, content_type="application/json", REMOTE_ADDR=address)
            statuses.append(response.status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=send, args=(address,)) for address in addresses]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses


@pytest.mark.postgres
def test_limits_hold_under_concurrent_requests(needs_postgres, transactional_db, memory_broker, server, settings):
    make_roster(server.base_url)
    settings.OPEN_HYPOTHESIS_DAILY_CAP = 5
    statuses = _concurrent_posts(8, ["198.51.100.20"] * 8)
    assert sorted(statuses) == [202] * 3 + [429] * 5
    statuses = _concurrent_posts(8, [f"198.51.100.{30 + n}" for n in range(8)])
    assert sorted(statuses) == [202] * 2 + [429] * 6
    assert Run.objects.count() == 5


# Screening the client's hypotheses -------------------------------------------------------------------------------


def test_post_screenings_starts_a_screening_of_the_clients_hypotheses(client, roster):
    response = post(client, SCREENINGS, {"question": QUESTION, "hypotheses": [HYPOTHESIS] * 3})
    assert response.status_code == 202
    run = Run.objects.get(public_id=response.json()["id"])
    assert run.kind == "screening" and run.hypotheses.count() == 3
    run = drive(run)
    body = client.get(response.json()["poll"]).json()
    assert body["status"] == "completed"
    assert body["steps"]["generate"] == "skipped"
    assert body["counts"]["generated"] == 3
    assert {h["author_name"] for h in body["hypotheses"]} == {"client"}


@pytest.mark.parametrize(
    "hypotheses",
    [
        [],
        [HYPOTHESIS] * 101,
        [{"statement": "Only a statement."}],
        [{**HYPOTHESIS, "mechanism": 5}],
        [{**HYPOTHESIS, "prediction": ""}],
        ["a string"],
        "not a list",
    ],
    ids=["none", "too-many", "no-mechanism", "number", "empty-prediction", "string-item", "not-a-list"],
)
def test_bad_hypotheses_are_invalid_body(client, roster, hypotheses):
    response = post(client, SCREENINGS, {"question": QUESTION, "hypotheses": hypotheses})
    assert (response.status_code, response.json()["error"]) == (400, "invalid_body")
    assert not Run.objects.exists()


def test_screenings_share_the_validation_and_the_limits(client, roster):
    response = post(client, SCREENINGS, {"question": "short", "hypotheses": [HYPOTHESIS]})
    assert response.json()["error"] == "question_too_short"
    for _ in range(2):
        assert post(client, SCREENINGS, {"question": QUESTION, "hypotheses": [HYPOTHESIS]}).status_code == 202
    assert start_run(client).status_code == 202
    response = post(client, SCREENINGS, {"question": QUESTION, "hypotheses": [HYPOTHESIS] * 100})
    assert (response.status_code, response.json()["error"]) == (429, "client_limit")


# Reading a run ---------------------------------------------------------------------------------------------------


def test_get_run_has_every_documented_field(client, roster):
    run = drive(Run.objects.get(public_id=start_run(client).json()["id"]))
    body = client.get(f"{RUNS}/{run.public_id}").json()
    assert set(body) == {
        "id", "status", "protocol", "question", "background", "language", "created_at", "updated_at",
        "steps", "counts", "hypotheses",
    }  # fmt: skip
    assert body["steps"] == {
        "generate": "completed",
        "stage1": "completed",
        "stage2": "completed",
        "novelty": "completed",
    }
    assert body["counts"] == {"generated": 12, "discarded": 0, "kept": 12, "selected": 12, "delivered": 12}
    hypothesis = body["hypotheses"][0]
    assert set(hypothesis) == {
        "label", "author_name", "statement", "mechanism", "prediction", "forecasts", "stage1", "selected",
        "delivered", "literature",
    }  # fmt: skip
    assert hypothesis["label"] == "H1"
    assert hypothesis["forecasts"] == {"fc-astra": True, "fc-sonnet": True, "fc-argon": True, "fc-grok": True}
    assert hypothesis["literature"] == {"verdict": "not_reported", "evidence": "", "reference": None}
    assert "simulated" not in body


def test_delivered_is_selected_and_not_reported_or_contradicted(client, roster):
    run = drive(Run.objects.get(public_id=start_run(client).json()["id"]))
    run.hypotheses.filter(label="H1").update(literature_verdict="reported", literature_evidence="Already shown.")
    run.hypotheses.filter(label="H2").update(literature_verdict="contradicted")
    run.hypotheses.filter(label="H3").update(literature_verdict="components_reported")
    run.hypotheses.filter(label="H4").update(selected=False)
    body = client.get(f"{RUNS}/{run.public_id}").json()
    delivered = {h["label"]: h["delivered"] for h in body["hypotheses"]}
    assert (delivered["H1"], delivered["H2"], delivered["H3"], delivered["H4"], delivered["H5"]) == (
        False, False, True, False, True,
    )  # fmt: skip
    assert body["counts"]["selected"] == 11 and body["counts"]["delivered"] == 9


def test_a_selected_hypothesis_is_not_delivered_before_its_literature_verdict(client, roster):
    # Generation, stage 1 and stage 2 done: the run checks the literature, and no verdict is in yet.
    run = drive(Run.objects.get(public_id=start_run(client).json()["id"]), max_rounds=3)
    assert run.status == Run.Status.CHECKING_NOVELTY
    body = client.get(f"{RUNS}/{run.public_id}").json()
    assert body["counts"]["selected"] == 12 and body["counts"]["delivered"] == 0
    assert not any(h["delivered"] for h in body["hypotheses"])
    run.hypotheses.filter(label="H1").update(literature_verdict="not_reported")
    run.hypotheses.filter(label="H2").update(literature_verdict="unresolved")
    body = client.get(f"{RUNS}/{run.public_id}").json()
    assert {h["label"] for h in body["hypotheses"] if h["delivered"]} == {"H1", "H2"}
    assert body["counts"]["delivered"] == 2


def test_delivered_reads_the_same_in_python_and_in_the_database_for_every_state(client, roster):
    run = drive(Run.objects.get(public_id=start_run(client).json()["id"]))
    states = [(selected, verdict) for selected in (True, False) for verdict in ["", *Hypothesis.Verdict.values]]
    hypotheses = list(run.hypotheses.order_by("pk"))
    assert len(hypotheses) >= len(states)
    for hypothesis, (selected, verdict) in zip(hypotheses, states, strict=False):
        Hypothesis.objects.filter(pk=hypothesis.pk).update(selected=selected, literature_verdict=verdict)
    in_python = {h.pk for h in run.hypotheses.all() if h.delivered}
    in_the_database = set(run.hypotheses.filter(Hypothesis.delivered_condition()).values_list("pk", flat=True))
    assert in_python == in_the_database
    assert len(in_python) >= 3  # not_reported, components_reported and unresolved deliver a selected hypothesis
    assert next(row for row in run_list() if row.pk == run.pk).delivered == len(in_python)


def test_unknown_and_malformed_run_ids_are_404(client, db):
    for run_id in (uuid.uuid4(), "not-a-uuid"):
        response = client.get(f"{RUNS}/{run_id}")
        assert (response.status_code, response.json()["error"]) == (404, "not_found")


def test_lang_ru_reports_the_translation_state_then_the_russian_rendering(client, roster):
    body = start_run(client, language="ru").json()
    pending = client.get(f"{body['poll']}?lang=ru").json()
    assert pending["translation"] == {"language": "ru", "state": "pending"}
    run = drive(Run.objects.get(public_id=body["id"]))
    english = client.get(body["poll"]).json()
    russian = client.get(f"{body['poll']}?lang=ru").json()
    assert russian["translation"] == {"language": "ru", "state": "ready"}
    assert "translation" not in english
    first_en, first_ru = english["hypotheses"][0], russian["hypotheses"][0]
    assert first_ru["statement"] == f"RU {first_en['statement']}"
    assert first_ru["prediction"] == f"RU {first_en['prediction']}"
    assert first_ru["forecasts"] == first_en["forecasts"] and run.status == "completed"


def test_lang_ru_of_an_english_run_is_not_requested_and_other_languages_are_refused(client, roster):
    body = start_run(client).json()
    assert client.get(f"{body['poll']}?lang=ru").json()["translation"]["state"] == "not_requested"
    response = client.get(f"{body['poll']}?lang=de")
    assert (response.status_code, response.json()["error"]) == (400, "invalid_body")


def test_a_failed_translation_is_reported(client, db, server):
    server.script.translate["tr-sonnet"] = lambda user, attempt: "нет"
    make_roster(server.base_url)
    body = start_run(client, language="ru").json()
    drive(Run.objects.get(public_id=body["id"]))
    russian = client.get(f"{body['poll']}?lang=ru").json()
    assert russian["translation"]["state"] == "failed"
    assert not russian["hypotheses"][0]["statement"].startswith("RU ")


# The recorded calls ----------------------------------------------------------------------------------------------


def test_calls_are_for_coordinators_and_analysts_only(client, roster, reviewer, coordinator, analyst):
    run = drive(Run.objects.get(public_id=start_run(client).json()["id"]))
    url = f"{RUNS}/{run.public_id}/calls"
    assert client.get(url).status_code in (401, 403)
    client.force_login(reviewer)
    assert (client.get(url).status_code, client.get(url).json()["error"]) == (403, "forbidden")
    for user in (coordinator, analyst):
        client.force_login(user)
        response = client.get(url)
        assert response.status_code == 200
        page = response.json()
        calls = page["results"]
        assert page["count"] == len(calls) == ModelCall.objects.filter(run=run).count() == 4 + 1 + 3
        call = calls[0]
        assert call["purpose"] == "generate" and call["tools_disabled"] is True
        assert len(call["request_sha256"]) == 64 and call["request_body"]["messages"]
        assert {"response_body", "http_status", "latency_ms", "input_tokens", "output_tokens"} <= set(call)


def test_calls_come_a_page_at_a_time_in_the_order_made(client, roster, coordinator):
    run = drive(Run.objects.get(public_id=start_run(client).json()["id"]))
    client.force_login(coordinator)
    url = f"{RUNS}/{run.public_id}/calls"
    made = list(ModelCall.objects.filter(run=run).order_by("created_at", "pk").values_list("pk", flat=True))
    pages = [client.get(f"{url}?limit=3&offset={offset}").json() for offset in range(0, len(made), 3)]
    assert {(page["count"], page["limit"]) for page in pages} == {(len(made), 3)}
    assert [call["id"] for page in pages for call in page["results"]] == made
    too_many = client.get(f"{url}?limit=1001")
    assert too_many.status_code == 400 and too_many.json()["problems"][0]["field"] == "limit"

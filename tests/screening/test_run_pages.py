"""The pages of Open Hypothesis: the public form and run page, and the coordinators' runs page with its action that
turns a run's results into a draft review cohort."""

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from reviewapp.models import Cohort, Proposal
from screening.models import Run
from screening.services.runs import run_create
from screening.views import wait_in_words
from tests.screening_support import GENERATORS, STAGE2, drive, factor, generation_reply, make_roster

QUESTION = "How does remodelling of the bone-marrow niche affect mutant clones?"

pytestmark = pytest.mark.usefixtures("fast_retries")


def start(address="192.0.2.10", **fields) -> Run:
    return run_create(question=QUESTION, client_address=address, **fields)


def page(run: Run) -> str:
    return reverse("open-hypothesis-run", args=[run.public_id])


# The public pages ------------------------------------------------------------------------------------------------


def test_the_form_starts_a_run_and_shows_its_page(client, roster):
    response = client.get("/open-hypothesis/")
    assert response.status_code == 200
    assert b'name="question"' in response.content and b'name="background"' in response.content
    response = client.post("/open-hypothesis/", {"question": QUESTION, "background": "", "language": "en"})
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == page(run)
    assert client.get(page(run)).status_code == 200


def test_the_form_explains_what_is_wrong_and_counts_nothing(client, roster):
    response = client.post("/open-hypothesis/", {"question": "Short", "language": "en"})
    assert response.status_code == 200
    assert b"at least 10 characters" in response.content
    assert not Run.objects.exists()


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"question": "   padded    "}, "at least 10 characters"),
        ({"question": "x" * 2001}, "at most 2000 characters"),
        ({"question": QUESTION, "background": "x" * 8001}, "at most 8000 characters"),
        ({"question": QUESTION, "language": "de"}, "not a valid choice"),
    ],
)
def test_the_form_refuses_what_the_api_refuses_and_keeps_what_was_typed(client, roster, fields, problem):
    body = {"language": "en", **fields}
    api = client.post("/api/v1/open-hypothesis/runs", body, content_type="application/json")
    assert api.status_code == 400
    response = client.post("/open-hypothesis/", body)
    html = response.content.decode()
    assert response.status_code == 200 and problem in html
    assert fields["question"].strip()[:50] in html
    assert not Run.objects.exists()


def test_the_form_reports_the_client_limit_and_when_to_try_again(client, roster):
    for _ in range(3):
        start(address="127.0.0.1")
    first = Run.objects.order_by("created_at").first()
    response = client.post("/open-hypothesis/", {"question": QUESTION, "language": "en"})
    assert response.status_code == 429
    html = response.content.decode()
    assert "3 runs in the last 24 hours" in html
    assert Run.objects.count() == 3
    # A place frees when the first of the three leaves the 24-hour window: the page names that time, as the API's
    # Retry-After does in seconds.
    retry_after = int(response["Retry-After"])
    frees_at = first.created_at + timedelta(hours=24)
    assert abs((timezone.now() + timedelta(seconds=retry_after) - frees_at).total_seconds()) < 60
    moment = re.search(r'<time datetime="([^"]+)">(\d\d:\d\d) UTC on ([^<]+)</time>', html)
    assert moment, html
    shown = datetime.fromisoformat(moment.group(1))
    assert abs((shown - frees_at).total_seconds()) < 60
    assert moment.group(2) == f"{shown.astimezone(UTC):%H:%M}"
    assert re.search(r"in about 2[34] hours", html)


@pytest.mark.parametrize(
    "seconds, text",
    [
        (30, "less than a minute"),
        (60, "about 1 minute"),
        (61, "about 2 minutes"),
        (3600, "about 1 hour"),
        (3 * 3600 + 20 * 60, "about 3 hours 20 minutes"),
        (86400, "about 24 hours"),
    ],
)
def test_a_wait_is_said_as_people_say_it(seconds, text):
    assert wait_in_words(seconds) == text


def test_a_running_run_polls_its_live_part_and_a_finished_one_stops(client, roster):
    run = start()
    html = client.get(page(run)).content.decode()
    assert 'id="run-live"' in html and 'hx-trigger="every 3s"' in html
    assert "Queued" in html and "elapsed" in html
    partial = client.get(page(run), headers={"HX-Request": "true"}).content.decode()
    assert partial.lstrip().startswith('<div id="run-live"') and "<html" not in partial

    drive(run)
    partial = client.get(page(run), headers={"HX-Request": "true"}).content.decode()
    assert "hx-trigger" not in partial
    assert "Completed" in partial
    assert re.search(r"Generated <strong>12</strong>", partial)


def test_delivered_hypotheses_come_first_then_the_rest_with_forecasts_and_stage(client, roster, script):
    model = GENERATORS[0]
    rejected = factor(model, 1)
    script.forecast[STAGE2[0]] = lambda items, attempt: json.dumps(
        {"forecasts": [{"id": label, "confirmed": rejected not in text} for label, text in items]}
    )
    run = drive(start())
    html = client.get(page(run)).content.decode()
    delivered_at, others_at = html.index('id="delivered"'), html.index('id="other-hypotheses"')
    assert delivered_at < others_at
    rejected_at = html.index(rejected)
    assert rejected_at > others_at
    # The rest show their stage and each model's answer.
    other_part = html[others_at:]
    assert "stage 1: kept" in other_part
    assert "Model fc-sonnet: no" in other_part and "Model fc-argon: yes" in other_part
    assert "Delivered hypotheses (11)" in html


def test_selected_hypotheses_without_a_verdict_are_checking_not_delivered(client, roster, coordinator):
    run = drive(start(), max_rounds=3)
    assert run.status == Run.Status.CHECKING_NOVELTY
    html = client.get(page(run)).content.decode()
    assert 'id="delivered"' not in html
    assert "delivered <strong>0</strong>" in html
    assert html.count("literature: checking") == 12
    client.force_login(coordinator)
    listed = client.get(reverse("screening-run-list")).content.decode()
    assert re.search(r"<td>12</td>\s*<td>0</td>", listed), "the runs page counts none delivered"


def test_simulated_runs_say_so(client, db, server):
    make_roster(server.base_url, simulated=True)
    run = drive(start())
    html = client.get(page(run)).content.decode()
    assert 'id="simulated-notice"' in html and "Simulated models" in html


def test_real_runs_show_no_simulation_notice(client, roster):
    run = drive(start())
    assert b"simulated-notice" not in client.get(page(run)).content


def test_the_json_download_is_the_api_view_of_the_run(client, roster):
    run = drive(start())
    response = client.get(reverse("open-hypothesis-run-json", args=[run.public_id]))
    assert response["Content-Disposition"] == f'attachment; filename="open-hypothesis-{run.public_id}.json"'
    api = client.get(f"/api/v1/open-hypothesis/runs/{run.public_id}").json()
    assert json.loads(response.content) == api


def test_a_russian_run_offers_its_rendering_once_ready(client, roster):
    run = drive(start(language="ru"))
    html = client.get(page(run)).content.decode()
    assert 'id="translation-state">ready' in html
    russian = client.get(page(run) + "?lang=ru").content.decode()
    statement = run.hypotheses.get(label="H1").statement
    assert f"RU {statement}" in russian


def test_filters_list_the_delivered_or_the_selected_and_keep_the_language(client, roster, script):
    model = GENERATORS[0]
    script.forecast[STAGE2[0]] = lambda items, attempt: json.dumps(
        {"forecasts": [{"id": label, "confirmed": factor(model, 1) not in text} for label, text in items]}
    )
    run = drive(start(language="ru"))
    delivered = sum(h.delivered for h in run.hypotheses.all())
    url = page(run)
    every = client.get(url).content.decode()
    assert every.count('<article class="hypothesis"') == 12
    assert every.count("<details id=") == 12 and '<details id="details-H1" open' not in every  # collapsed
    assert f'href="{url}?show=delivered" hx-get="{url}?show=delivered"' in every
    assert ">All (12)</a>" in every and f">Delivered ({delivered})</a>" in every
    only = client.get(url + "?show=delivered").content.decode()
    assert only.count('<article class="hypothesis"') == delivered and 'id="other-hypotheses"' not in only
    assert 'aria-current="page">Delivered' in only
    selected = client.get(url + "?show=selected").content.decode()
    assert selected.count('<article class="hypothesis"') == run.hypotheses.filter(selected=True).count()
    russian = client.get(url + "?show=delivered&lang=ru").content.decode()
    assert f'href="{url}?show=selected&amp;lang=ru"' in russian  # the filters keep the language
    assert f'href="{url}?show=delivered">Show in English' in russian
    # The collapsed line carries the verdicts.
    summary = every.split("<summary>", 1)[1].split("</summary>", 1)[0]
    assert "stage 1: kept" in summary and "stage 2: 3 of 3 yes" in summary and "delivered" in summary


def test_the_model_calls_page_reads_each_call_with_its_retries(client, roster, script, coordinator, reviewer):
    model = GENERATORS[1]
    script.generate[model] = (
        lambda attempt: (503, {"error": {"message": "overloaded"}}) if attempt == 1 else (generation_reply(model))
    )
    run = drive(start())
    url = reverse("screening-run-calls", args=[run.public_id])
    client.force_login(reviewer)
    assert client.get(url).status_code == 403
    client.force_login(coordinator)
    html = client.get(url).content.decode()
    calls = list(run.calls.order_by("created_at", "pk"))
    assert html.count('<article class="card model-call"') == len(calls)
    retried = next(call for call in calls if call.model_id == model and call.transport_attempt == 2)
    assert retried.usable and f'id="call-{retried.pk}"' in html
    part = html.split(f'id="call-{retried.pk}"', 1)[1].split("</article>", 1)[0]
    assert "1.2 (transport retry)" in part and f"{retried.latency_ms} ms" in part
    assert escape(script.requests_of(model, "generate")[0])[:200] in part  # the prompt as sent
    assert escape(generation_reply(model))[:200] in part  # the reply's text, not the wire body
    failed = next(call for call in calls if call.model_id == model and call.transport_attempt == 1)
    failed_part = html.split(f'id="call-{failed.pk}"', 1)[1].split("</article>", 1)[0]
    assert "not usable" in failed_part and "503" in failed_part and "overloaded" in failed_part
    assert "1 was a retry" in html

    download = client.get(reverse("screening-run-calls-json", args=[run.public_id]))
    assert download["Content-Disposition"] == f'attachment; filename="open-hypothesis-{run.public_id}-calls.json"'
    api = client.get(reverse("open-hypothesis-api-run-calls", args=[run.public_id]), {"limit": 1000}).json()
    assert api["count"] == len(calls)
    assert json.loads(download.content) == {"id": str(run.public_id), "calls": api["results"]}


def test_unknown_runs_are_404(client, db):
    assert client.get("/open-hypothesis/00000000-0000-0000-0000-000000000000").status_code == 404


# The coordinators' runs page -------------------------------------------------------------------------------------


def test_runs_page_lists_every_run_with_status_and_counts_for_coordinators(client, roster, coordinator):
    finished = drive(start())
    waiting = start(address="192.0.2.11")
    client.force_login(coordinator)
    html = client.get(reverse("screening-run-list")).content.decode()
    for run in (finished, waiting):
        assert f'id="run-{run.public_id}"' in html
    row = html[html.index(f'id="run-{finished.public_id}"') :]
    assert "Completed" in row and "<td>12</td>" in row
    assert "Create a review cohort from this run" in row
    assert f'<a href="{reverse("screening-run-list")}">Screening runs</a>' in html


def test_reviewers_do_not_see_the_runs_link(client, roster, reviewer):
    client.force_login(reviewer)
    assert b"Screening runs" not in client.get(reverse("review-queue")).content


def test_runs_page_is_for_coordinators_and_analysts_who_only_read(client, roster, reviewer, analyst):
    drive(start())
    url = reverse("screening-run-list")
    assert client.get(url).status_code == 302  # to the login page
    client.force_login(reviewer)
    assert client.get(url).status_code == 403
    client.force_login(analyst)
    html = client.get(url).content.decode()
    assert "<td>12</td>" in html
    assert "Create a review cohort" not in html and "coordinators only" in html


def test_coordinator_creates_a_draft_cohort_from_the_delivered_hypotheses(client, roster, coordinator):
    run = drive(start())
    run.hypotheses.filter(label="H1").update(literature_verdict="reported")
    client.force_login(coordinator)
    url = reverse("screening-run-cohort", args=[run.public_id])
    response = client.post(url, {"hypotheses": "delivered", "name": "Niche cohort"})
    cohort = Cohort.objects.get(name="Niche cohort")
    assert response.status_code == 302 and response["Location"] == reverse("cohort-detail", args=[cohort.pk])
    assert cohort.status == Cohort.Status.DRAFT and cohort.created_by == coordinator
    proposals = list(cohort.proposals.all())
    assert len(proposals) == 11
    h2 = run.hypotheses.get(label="H2")
    proposal = next(p for p in proposals if p.statement == h2.statement)
    assert (proposal.author, proposal.author_company) == (h2.author_name, h2.author_company)
    assert (proposal.method, proposal.source_run) == ("open-hypothesis-v2", str(run.public_id))
    assert (proposal.mechanism, proposal.prediction, proposal.domain_category) == (
        h2.mechanism,
        h2.prediction,
        h2.domain_category,
    )
    assert proposal.task.question == QUESTION
    assert str(run.public_id) not in proposal.external_id and str(run.public_id) not in proposal.task.key

    # The selected ones again: the same proposals are reused, and the reported one joins them.
    client.post(url, {"hypotheses": "selected", "name": "Niche cohort, selected"})
    selected = Cohort.objects.get(name="Niche cohort, selected")
    assert selected.proposals.count() == 12
    assert Proposal.objects.count() == 12


def test_cohort_creation_refuses_a_run_without_such_hypotheses(client, roster, coordinator, script):
    script.forecast["fc-astra"] = lambda items, attempt: json.dumps(
        {"forecasts": [{"id": label, "confirmed": False} for label, _ in items]}
    )
    run = drive(start())
    client.force_login(coordinator)
    url = reverse("screening-run-cohort", args=[run.public_id])
    response = client.post(url, {"hypotheses": "selected", "name": "Empty"}, follow=True)
    assert "This run has no selected hypotheses." in response.content.decode()
    assert not Cohort.objects.exists()


def test_cohort_creation_refuses_a_taken_name_and_creates_nothing(client, roster, coordinator):
    run = drive(start())
    Cohort.objects.create(name="Taken")
    client.force_login(coordinator)
    url = reverse("screening-run-cohort", args=[run.public_id])
    response = client.post(url, {"hypotheses": "selected", "name": "Taken"}, follow=True)
    assert "already exists" in response.content.decode()
    assert Cohort.objects.count() == 1 and not Proposal.objects.exists()


def test_cohort_creation_refuses_a_name_the_cohorts_api_refuses(client, roster, coordinator):
    run = drive(start())
    client.force_login(coordinator)
    url = reverse("screening-run-cohort", args=[run.public_id])
    response = client.post(url, {"hypotheses": "selected", "name": "n" * 201}, follow=True)
    assert "no more than 200 characters" in response.content.decode()
    assert not Cohort.objects.exists() and not Proposal.objects.exists()


def test_only_coordinators_create_cohorts_from_runs(client, roster, reviewer, analyst):
    run = drive(start())
    url = reverse("screening-run-cohort", args=[run.public_id])
    for user in (reviewer, analyst):
        client.force_login(user)
        assert client.post(url, {"hypotheses": "selected", "name": "Sneaky"}).status_code == 403
    assert not Cohort.objects.exists()


def test_times_in_answers_are_to_the_second(client, roster, analyst):
    from tests.benchmark_support import make_set

    run = start()
    body = client.get(f"/api/v1/open-hypothesis/runs/{run.public_id}").json()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", body["created_at"]), body["created_at"]
    benchmark = make_set()
    client.force_login(analyst)
    detail = client.get(f"/api/v1/benchmarks/{benchmark.pk}").json()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", detail["created_at"]), detail["created_at"]

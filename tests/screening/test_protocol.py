"""The Open Hypothesis protocol (SPEC §4.2–4.6): pooling, the two stages, the ask-once-more rule, failures that keep
what was obtained, idempotent steps and the sweeper. Models are a scripted OpenAI-compatible server on 127.0.0.1."""

import json
import random
import re
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from screening import prompts
from screening.llm.models import ModelCall, Roster
from screening.models import Forecast, Hypothesis, Run, RunWorkItem, Translation
from screening.services.progress import run_advance, runs_sweep
from screening.services.runs import ClientHypothesis, run_create
from screening.services.work import work_item_perform
from tests.screening_support import (
    GENERATORS,
    STAGE1,
    STAGE2,
    TRANSLATOR,
    drive,
    drop_broker_connections,
    factor,
    forecast_reply,
    make_roster,
    use_broker,
)

QUESTION = "How does remodelling of the bone-marrow niche affect mutant clones?"

pytestmark = pytest.mark.usefixtures("fast_retries")


def start(**fields) -> Run:
    fields.setdefault("question", QUESTION)
    fields.setdefault("client_address", "192.0.2.1")
    return run_create(**fields)


def votes_by(rule):
    """A forecast responder: each hypothesis's vote is rule(text); rule may return "omit" to leave the id out."""

    def respond(items, attempt):
        votes = {label: rule(text) for label, text in items}
        return forecast_reply({label: vote for label, vote in votes.items() if vote != "omit"})

    return respond


def hypothesis_about(run: Run, model: str, n: int) -> Hypothesis:
    return run.hypotheses.get(statement__contains=factor(model, n))


# A full run ------------------------------------------------------------------------------------------------------


def test_run_goes_through_every_step_and_completes(roster):
    run = start()
    assert run.status == Run.Status.QUEUED
    assert run.steps == {step: {"state": "pending"} for step in ("generate", "stage1", "stage2", "novelty")}
    run = drive(run)
    assert run.status == Run.Status.COMPLETED
    assert {step: state["state"] for step, state in run.steps.items()} == dict.fromkeys(
        ("generate", "stage1", "stage2", "novelty"), "completed"
    )
    assert run.finished_at is not None and run.error == ""
    assert run.hypotheses.count() == 12
    # The corpus is empty: no candidate passes the literature gate, so every check is not_reported without a call.
    assert run.hypotheses.filter(selected=True, literature_verdict=Hypothesis.Verdict.NOT_REPORTED).count() == 12
    assert not ModelCall.objects.filter(run=run, purpose="novelty").exists()


def test_pool_is_shuffled_with_the_recorded_seed_and_numbered(roster):
    run = drive(start())
    in_source_order = list(run.hypotheses.order_by("source", "source_index").values_list("pk", flat=True))
    random.Random(run.shuffle_seed).shuffle(in_source_order)
    assert list(run.hypotheses.order_by("position").values_list("pk", flat=True)) == in_source_order
    assert list(run.hypotheses.order_by("position").values_list("label", flat=True)) == [f"H{n}" for n in range(1, 13)]


def test_forecast_requests_carry_pooled_texts_and_never_an_author(roster, script):
    run = drive(start())
    stage1_request = script.requests_of(STAGE1, "forecast")[0]
    for hypothesis in run.hypotheses.all():
        text = prompts.hypothesis_text(hypothesis.statement, hypothesis.mechanism, hypothesis.prediction)
        assert f"[{hypothesis.label}] {text}" in stage1_request
    forecast_requests = [user for model, kind, user in script.requests if kind == "forecast"]
    forecast_bodies = ModelCall.objects.filter(purpose__in=["stage1", "stage2"]).values_list("request_body", flat=True)
    assert len(forecast_requests) == 4
    for text in forecast_requests + [json.dumps(body) for body in forecast_bodies]:
        for model in GENERATORS:
            assert model not in text
            assert f"Company of {model}" not in text


def test_run_records_its_roster_and_keeps_it_when_the_roster_changes(roster):
    run = start()
    snapshot = run.roster
    assert [member["model_id"] for member in snapshot["roles"]["generator"]] == list(GENERATORS)
    assert [member["model_id"] for member in snapshot["roles"]["stage2"]] == list(STAGE2)
    Roster.objects.filter(pk=roster.pk).update(is_default=False)
    run.refresh_from_db()
    assert run.roster == snapshot
    assert drive(run).status == Run.Status.COMPLETED


# The two stages --------------------------------------------------------------------------------------------------


def test_stage1_false_discards_true_keeps_and_no_answer_goes_no_further(roster, script):
    model = GENERATORS[0]
    rule = {factor(model, 1): False, factor(model, 2): True, factor(model, 3): "omit"}
    script.forecast[STAGE1] = votes_by(lambda text: next((v for f, v in rule.items() if f in text), True))
    run = drive(start())
    discarded, kept, silent = (hypothesis_about(run, model, n) for n in (1, 2, 3))
    assert (discarded.stage1, kept.stage1, silent.stage1) == ("discarded", "kept", "no_answer")
    assert silent.forecasts.get(stage=1).vote is None
    # The reply missing an id was asked once more, with the same request.
    calls = ModelCall.objects.filter(run=run, purpose="stage1").order_by("pk")
    assert [call.protocol_attempt for call in calls] == [1, 2]
    assert calls[0].request_sha256 == calls[1].request_sha256
    for stage2_model in STAGE2:
        (request,) = script.requests_of(stage2_model, "forecast")
        assert f"[{kept.label}] " in request
        assert f"[{discarded.label}] " not in request and f"[{silent.label}] " not in request
    assert not discarded.forecasts.filter(stage=2).exists() and not silent.forecasts.filter(stage=2).exists()
    assert not Hypothesis.objects.filter(pk__in=[discarded.pk, silent.pk], selected=True).exists()
    assert run.status == Run.Status.COMPLETED


def test_selected_only_when_every_stage2_model_answers_true(roster, script):
    model = GENERATORS[1]
    unanimous, one_false, one_null = (factor(model, n) for n in (1, 2, 3))
    script.forecast[STAGE2[0]] = votes_by(lambda text: False if one_false in text else True)
    script.forecast[STAGE2[1]] = votes_by(lambda text: "omit" if one_null in text else True)
    run = drive(start())
    assert hypothesis_about(run, model, 1).selected
    assert not hypothesis_about(run, model, 2).selected
    null_voted = hypothesis_about(run, model, 3)
    assert not null_voted.selected and null_voted.stage1 == "kept"
    assert null_voted.forecasts.get(stage=2, model_key=STAGE2[1]).vote is None
    assert run.status == Run.Status.COMPLETED
    assert run.hypotheses.filter(selected=True).count() == 10
    # The stage-1 model is not asked again.
    assert len(script.requests_of(STAGE1, "forecast")) == 1
    assert not Forecast.objects.filter(hypothesis__run=run, stage=2, model_key=STAGE1).exists()


def test_nothing_kept_skips_stage2_and_completes_with_nothing_selected(roster, script):
    script.forecast[STAGE1] = votes_by(lambda text: False)
    run = drive(start())
    assert run.status == Run.Status.COMPLETED
    assert run.steps["stage2"]["state"] == "skipped"
    assert run.hypotheses.filter(stage1="discarded").count() == 12
    assert all(not script.requests_of(model, "forecast") for model in STAGE2)


# Ask once more ---------------------------------------------------------------------------------------------------


def test_a_complete_reply_is_not_asked_again(roster, script):
    run = drive(start())
    assert list(ModelCall.objects.filter(run=run, purpose="stage1").values_list("protocol_attempt", flat=True)) == [1]


@pytest.mark.parametrize(
    "first_reply",
    [
        "I will look at these hypotheses carefully and answer later.",
        "duplicate",
        "missing",
    ],
    ids=["not-json", "repeated-id", "missing-id"],
)
def test_an_unreadable_first_reply_is_asked_once_more_and_the_second_counts(roster, script, first_reply):
    def respond(items, attempt):
        labels = [label for label, _ in items]
        if attempt == 2:
            return forecast_reply(dict.fromkeys(labels, False))
        if first_reply == "duplicate":
            return json.dumps({"forecasts": [{"id": label, "confirmed": True} for label in labels + labels[:1]]})
        if first_reply == "missing":
            return forecast_reply(dict.fromkeys(labels[1:], True))
        return first_reply

    script.forecast[STAGE1] = respond
    run = drive(start())
    assert len(script.requests_of(STAGE1, "forecast")) == 2
    assert run.hypotheses.filter(stage1="discarded").count() == 12


def test_after_the_second_try_a_parseable_reply_gives_its_valid_answers_and_null_for_the_rest(roster, script):
    def respond(items, attempt):
        labels = [label for label, _ in items]
        # H-first repeated (no vote for it), the last one missing, the rest answered.
        answers = [{"id": label, "confirmed": True} for label in labels[:-1]] + [{"id": labels[0], "confirmed": False}]
        return json.dumps({"forecasts": answers})

    script.forecast[STAGE1] = respond
    run = drive(start())
    votes = dict(Forecast.objects.filter(hypothesis__run=run, stage=1).values_list("hypothesis__label", "vote"))
    assert votes["H1"] is None and votes["H12"] is None
    assert all(votes[f"H{n}"] is True for n in range(2, 12))
    assert run.status == Run.Status.COMPLETED


def test_an_unusable_second_reply_gives_no_vote(roster, script):
    def respond(items, attempt):
        labels = [label for label, _ in items]
        return forecast_reply(dict.fromkeys(labels[1:], True)) if attempt == 1 else "Sorry, I cannot."

    script.forecast[STAGE2[2]] = respond
    run = drive(start())
    assert run.status == Run.Status.FAILED_AT_STAGE2
    assert set(Forecast.objects.filter(hypothesis__run=run, model_key=STAGE2[2]).values_list("vote", flat=True)) == {
        None
    }


# Failures keep what was obtained ---------------------------------------------------------------------------------


def test_a_failing_generator_leaves_the_others_hypotheses(roster, script):
    script.generate[GENERATORS[2]] = lambda attempt: (400, {"error": {"message": "bad request"}})
    run = drive(start())
    assert run.status == Run.Status.COMPLETED
    assert run.hypotheses.count() == 9
    assert "Model gen-opus" not in set(run.hypotheses.values_list("author_name", flat=True))
    failed = run.work_items.get(step="generate", state="failed")
    assert failed.slot == 2 and "400" in failed.error


def test_failed_at_generate_when_no_generator_produces_a_hypothesis(roster, script):
    for model in GENERATORS:
        script.generate[model] = lambda attempt: "No hypotheses today."
    run = drive(start())
    assert run.status == Run.Status.FAILED_AT_GENERATE
    assert run.steps["generate"]["state"] == "failed"
    assert run.steps["stage1"]["state"] == "pending"
    assert "No generator produced a hypothesis" in run.error
    assert ModelCall.objects.filter(run=run, purpose="generate").count() == 4
    assert not run.work_items.filter(step="stage1").exists()


def test_failed_at_stage1_keeps_the_pooled_hypotheses(roster, script):
    script.forecast[STAGE1] = lambda items, attempt: "I need more time to think."
    run = drive(start())
    assert run.status == Run.Status.FAILED_AT_STAGE1
    assert run.hypotheses.count() == 12
    assert set(run.hypotheses.values_list("stage1", flat=True)) == {"no_answer"}
    assert run.hypotheses.exclude(label="").count() == 12
    assert ModelCall.objects.filter(run=run, purpose="stage1").count() == 2
    assert not ModelCall.objects.filter(run=run, purpose="stage2").exists()
    assert run.steps["stage1"]["state"] == "failed" and run.steps["generate"]["state"] == "completed"


def test_failed_at_stage2_keeps_stage1_and_the_other_models_answers(roster, script):
    script.forecast[STAGE2[1]] = lambda items, attempt: (400, {"error": {"message": "model not found"}})
    run = drive(start())
    assert run.status == Run.Status.FAILED_AT_STAGE2
    assert "Model fc-argon" in run.error
    assert run.hypotheses.filter(stage1="kept").count() == 12
    for model in (STAGE2[0], STAGE2[2]):
        assert Forecast.objects.filter(hypothesis__run=run, model_key=model, vote=True).count() == 12
    assert not run.hypotheses.filter(selected=True).exists()
    assert run.steps["stage2"]["state"] == "failed"


def test_failed_at_novelty_keeps_the_selection(roster, settings):
    settings.OPEN_HYPOTHESIS_MAX_RESUMES = 0
    run = start()
    while run.status != Run.Status.CHECKING_NOVELTY:
        run_advance(run_id=run.pk)
        for item in run.work_items.filter(state="pending").exclude(step="novelty"):
            work_item_perform(item_id=item.pk)
        run.refresh_from_db()
    # The worker that should check the literature never comes.
    Run.objects.filter(pk=run.pk).update(last_progress_at=timezone.now() - timedelta(hours=2))
    assert runs_sweep() == 1
    run_advance(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == Run.Status.FAILED_AT_NOVELTY
    assert run.hypotheses.filter(selected=True).count() == 12
    # One check per selected hypothesis; all stopped, so every verdict is unresolved (no information).
    assert list(run.work_items.filter(step="novelty").values_list("state", flat=True)) == ["failed"] * 12
    assert run.hypotheses.filter(selected=True, literature_verdict=Hypothesis.Verdict.UNRESOLVED).count() == 12


# Idempotency and the sweeper --------------------------------------------------------------------------------------


def test_running_a_step_task_twice_changes_nothing(roster):
    run = start()
    run_advance(run_id=run.pk)
    run_advance(run_id=run.pk)
    items = list(run.work_items.filter(step="generate"))
    assert len(items) == 4
    work_item_perform(item_id=items[0].pk)
    calls, hypotheses = ModelCall.objects.count(), Hypothesis.objects.count()
    work_item_perform(item_id=items[0].pk)
    assert (ModelCall.objects.count(), Hypothesis.objects.count()) == (calls, hypotheses) == (1, 3)
    run = drive(run)
    counts = (ModelCall.objects.count(), Hypothesis.objects.count(), Forecast.objects.count())
    for item in run.work_items.all():
        work_item_perform(item_id=item.pk)
    run_advance(run_id=run.pk)
    assert (ModelCall.objects.count(), Hypothesis.objects.count(), Forecast.objects.count()) == counts
    assert RunWorkItem.objects.filter(run=run).count() == 4 + 1 + 3 + 12  # a literature check per selected one


def test_a_run_whose_worker_died_is_resumed_by_the_sweeper(roster, settings):
    run = start()
    run_advance(run_id=run.pk)
    item = run.work_items.filter(step="generate").first()
    # A worker claimed the item and died before recording anything.
    RunWorkItem.objects.filter(pk=item.pk).update(state="running", claim_token="00000000-0000-0000-0000-000000000001")
    # A redelivered task leaves an item that another worker holds alone.
    work_item_perform(item_id=item.pk)
    assert not ModelCall.objects.filter(run=run).exists()
    assert runs_sweep() == 0  # not stale yet
    stale = timezone.now() - timedelta(seconds=settings.OPEN_HYPOTHESIS_STALE_SECONDS + 1)
    Run.objects.filter(pk=run.pk).update(last_progress_at=stale)
    assert runs_sweep() == 1
    item.refresh_from_db()
    assert item.state == "pending"
    run = drive(run)
    assert run.status == Run.Status.COMPLETED
    assert run.resume_count == 1
    assert run.hypotheses.count() == 12


def test_a_queued_run_that_no_worker_takes_ends_failed_at_its_first_step(roster, settings):
    settings.OPEN_HYPOTHESIS_MAX_RESUMES = 1
    run = start()
    stale = timezone.now() - timedelta(seconds=settings.OPEN_HYPOTHESIS_STALE_SECONDS + 1)
    for _ in range(2):
        Run.objects.filter(pk=run.pk).update(last_progress_at=stale)
        assert runs_sweep() == 1
    run.refresh_from_db()
    assert run.status == Run.Status.FAILED_AT_GENERATE
    assert "Never started" in run.error
    # A sweeper that finds nothing stale does nothing.
    assert runs_sweep() == 0


# Screening the client's hypotheses, translation, optional modes ---------------------------------------------------


def test_screening_of_the_clients_hypotheses_skips_generation(roster, script):
    hypotheses = [
        ClientHypothesis(f"Client claim {n} holds.", f"Pathway {n}.", f"Readout {n} rises.") for n in range(5)
    ]
    run = drive(start(hypotheses=hypotheses))
    assert run.kind == Run.Kind.SCREENING
    assert run.status == Run.Status.COMPLETED
    assert run.steps["generate"] == {"state": "skipped"}
    assert not ModelCall.objects.filter(run=run, purpose="generate").exists()
    assert set(run.hypotheses.values_list("author_name", flat=True)) == {"client"}
    assert sorted(run.hypotheses.values_list("label", flat=True)) == sorted(f"H{n}" for n in range(1, 6))
    assert (
        "Client claim 3 holds. Mechanism: Pathway 3. Prediction: Readout 3 rises."
        in script.requests_of(STAGE1, "forecast")[0]
    )


def test_russian_run_is_translated_after_completion_by_the_translator(roster, script):
    run = drive(start(language="ru"))
    assert run.status == Run.Status.COMPLETED
    translation = Translation.objects.get(run=run, language="ru")
    assert translation.state == "ready"
    hypothesis = run.hypotheses.get(label="H1")
    assert translation.hypotheses["H1"] == {
        "statement": f"RU {hypothesis.statement}",
        "mechanism": f"RU {hypothesis.mechanism}",
        "prediction": f"RU {hypothesis.prediction}",
    }
    # Twelve hypotheses: two requests of at most ten, recorded like every call.
    assert ModelCall.objects.filter(run=run, purpose="translate", endpoint__model_id=TRANSLATOR).count() == 2


def test_a_translation_without_a_usable_reply_fails_and_the_run_stays_completed(roster, script):
    script.translate[TRANSLATOR] = lambda user, attempt: "Перевод будет позже."
    run = drive(start(language="ru"))
    assert run.status == Run.Status.COMPLETED
    translation = Translation.objects.get(run=run)
    assert translation.state == "failed" and translation.hypotheses == {}


def test_optional_modes_are_off_by_default_and_stored_beside_the_vote_when_on(roster, script, settings):
    run = drive(start())
    forecast = Forecast.objects.filter(hypothesis__run=run).first()
    assert (forecast.p_experimental_support, forecast.recommend_for_testing, forecast.single_vote) == (None, None, None)
    assert not ModelCall.objects.filter(purpose__contains="_").exists()

    settings.OPEN_HYPOTHESIS_DETAILED_FORECASTS = True
    settings.OPEN_HYPOTHESIS_SINGLE_FORECASTS = True
    run = drive(start(client_address="192.0.2.2"))
    forecasts = Forecast.objects.filter(hypothesis__run=run)
    assert forecasts.count() == 12 * 4
    # The protocol's boolean decides the stages; the modes' answers (all "no" here) sit beside it.
    assert set(forecasts.values_list("vote", "p_experimental_support", "recommend_for_testing", "single_vote")) == {
        (True, 0.7, True, False)
    }
    assert run.hypotheses.filter(selected=True).count() == 12
    assert ModelCall.objects.filter(run=run, purpose="stage1_detailed").count() == 1
    assert ModelCall.objects.filter(run=run, purpose="stage2_single").count() == 12 * 3
    single_ids = {
        label
        for call in ModelCall.objects.filter(run=run, purpose="stage1_single")
        for label in re.findall(r"\[(H\d+)\] ", json.dumps(call.request_body))
    }
    assert single_ids == {f"H{n:012d}" for n in range(1, 13)}


@pytest.mark.postgres
def test_stage2_models_finishing_together_move_the_run_on_once(
    needs_postgres, transactional_db, server, settings, monkeypatch
):
    use_broker(settings, monkeypatch, "memory://")
    try:
        make_roster(server.base_url)
        run = start()
        while run.status != Run.Status.SCREENING_STAGE2:
            run_advance(run_id=run.pk)
            for item in run.work_items.filter(state="pending"):
                work_item_perform(item_id=item.pk)
            run.refresh_from_db()
        items = list(run.work_items.filter(step="stage2").values_list("pk", flat=True))
        barrier = threading.Barrier(len(items))
        errors = []

        def perform(item_id):
            try:
                barrier.wait()
                work_item_perform(item_id=item_id)
            except Exception as error:  # reported below
                errors.append(error)
            finally:
                connection.close()

        threads = [threading.Thread(target=perform, args=(item_id,)) for item_id in items]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        run.refresh_from_db()
        assert run.status == Run.Status.CHECKING_NOVELTY
        assert run.work_items.filter(step="novelty").count() == 12  # one literature check per selected hypothesis
        assert run.hypotheses.filter(selected=True).count() == 12
    finally:
        drop_broker_connections()

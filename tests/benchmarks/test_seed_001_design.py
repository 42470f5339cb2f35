"""Benchmark sets of the seed-001 design (docs/protocol.md#forecast-designs): each generator's hypotheses apart, in
forecast requests of five, every forecasting model asked about every hypothesis, the two-stage rule read from the
stored matrix, and the same requests asked again as a second round. Models are a scripted OpenAI-compatible server
on 127.0.0.1, reached over real HTTP."""

import csv
import io
import json
import re

import pytest

from reviewapp.benchmarks.models import BenchmarkSet
from reviewapp.benchmarks.selectors import benchmark_forecast_matrix, benchmark_rows, benchmark_statistics
from reviewapp.benchmarks.services.sets import BenchmarkError, benchmark_forecasts_repeat, benchmark_run
from screening.llm.models import ModelCall
from screening.models import Forecast, Hypothesis, Run
from screening.services.forecast_requests import MATRIX_REQUEST_SIZE
from tests.benchmark_support import make_set, task
from tests.screening_support import (
    GENERATORS,
    STAGE1,
    STAGE2,
    Script,
    ScriptedModelServer,
    drive,
    factor,
    forecast_reply,
    generation_reply,
    make_roster,
)

FORECASTERS = (STAGE1, *STAGE2)
PER_GENERATOR = 7  # two requests per generator: five hypotheses, then two
_ITEM = re.compile(r"^\[(H\d+)\] (.*)$", re.MULTILINE)

pytestmark = pytest.mark.usefixtures("fast_retries")


@pytest.fixture
def scripted():
    script = Script()
    for model in GENERATORS:
        script.generate[model] = lambda attempt, model=model: generation_reply(model, PER_GENERATOR)
    server = ScriptedModelServer(script)
    yield script, server
    server.stop()


def run_seed_001_set(server, tasks=("T1",), **fields) -> tuple[BenchmarkSet, list[Run]]:
    roster = make_roster(server.base_url, translator=None)
    benchmark = make_set({"tasks": [task(key) for key in tasks]}, roster=roster, design="seed-001", **fields)
    runs = [drive(run) for run in benchmark_run(benchmark=benchmark)]
    return benchmark, runs


def generator_of(text: str) -> str:
    (model,) = [model for model in GENERATORS if factor(model, 1)[:7] in text]
    return model


def forecast_requests_of(run: Run, purpose_prefix: str = "stage") -> list[ModelCall]:
    """The calls of the forecast question (both stages), first protocol attempts, in the order they were made."""
    return list(
        ModelCall.objects.filter(run=run, purpose__startswith=purpose_prefix, protocol_attempt=1)
        .exclude(purpose__endswith="_repeat")
        .select_related("endpoint")
        .order_by("created_at", "pk")
    )


def user_text(call: ModelCall) -> str:
    return "".join(m["content"] for m in call.request_body["messages"] if m["role"] == "user")


# Request sizes and coverage --------------------------------------------------------------------------------------


def test_each_request_holds_five_hypotheses_of_one_generator_and_every_forecaster_asks_them_all(db, scripted):
    _, server = scripted
    benchmark, (run,) = run_seed_001_set(server)
    assert run.design == Run.Design.MATRIX and run.status == Run.Status.COMPLETED, run.error
    hypotheses = list(run.hypotheses.order_by("position"))
    assert len(hypotheses) == len(GENERATORS) * PER_GENERATOR
    # Each generator's hypotheses are numbered together, one generator after another.
    sources = [h.source for h in hypotheses]
    assert sources == sorted(sources, key=lambda source: int(source.split("-")[1]))

    calls = forecast_requests_of(run)
    per_generator_requests = -(-PER_GENERATOR // MATRIX_REQUEST_SIZE)  # ceil
    assert len(calls) == len(FORECASTERS) * len(GENERATORS) * per_generator_requests
    sizes = {}
    for call in calls:
        items = _ITEM.findall(user_text(call))
        # Five a request (the last of a generator's holds the rest), numbered H1… afresh, all of one generator.
        assert [label for label, _ in items] == [f"H{n}" for n in range(1, len(items) + 1)]
        assert len({generator_of(text) for _, text in items}) == 1
        sizes.setdefault(call.model_id, []).append(len(items))
    for model in FORECASTERS:
        assert sorted(sizes[model]) == sorted([5, 2] * len(GENERATORS))

    # The full matrix: every forecaster × every hypothesis, each answer with the call whose request held it.
    forecasts = Forecast.objects.filter(hypothesis__run=run, round=1).select_related("model_call", "hypothesis")
    assert {(f.hypothesis_id, f.model_key) for f in forecasts} == {(h.pk, m) for h in hypotheses for m in FORECASTERS}
    for forecast in forecasts:
        assert forecast.hypothesis.statement in user_text(forecast.model_call)
        assert forecast.model_call.model_id == forecast.model_key

    matrix = benchmark_forecast_matrix(benchmark)
    assert len(matrix) == len(hypotheses)
    for entry in matrix:
        assert set(entry) == {"hypothesis", "generator", "task", "forecasts", "requests"}
        assert set(entry["forecasts"]) == set(entry["requests"]) == set(FORECASTERS)
        assert entry["task"] == "T1"
    rows = benchmark_rows(benchmark)
    assert all(set(row.forecasts) == set(FORECASTERS) for row in rows)


def test_each_generator_is_asked_once_per_task_for_five_hypotheses(db, scripted):
    _, server = scripted
    _, runs = run_seed_001_set(server, tasks=("T1", "T2"))
    assert [run.generation_count for run in runs] == [5, 5]
    by_run_and_model: dict = {}
    for call in ModelCall.objects.filter(run__in=runs, purpose="generate", protocol_attempt=1):
        by_run_and_model.setdefault((call.run_id, call.model_id), []).append(call)
        assert "\nPropose five hypotheses.\n" in user_text(call) and "Propose ten" not in user_text(call)
    assert len(by_run_and_model) == 2 * len(GENERATORS)
    assert all(len(requests) == 1 for requests in by_run_and_model.values())


def test_a_pooled_set_asks_the_protocols_ten(db, scripted):
    _, server = scripted
    roster = make_roster(server.base_url, translator=None)
    benchmark = make_set({"tasks": [task("T1")]}, roster=roster)
    (run,) = [drive(run) for run in benchmark_run(benchmark=benchmark)]
    assert run.generation_count == 10
    call = ModelCall.objects.filter(run=run, purpose="generate", protocol_attempt=1).first()
    assert call is not None and "\nPropose ten hypotheses.\n" in user_text(call)


def test_the_two_stage_rule_is_read_from_the_stored_matrix(db, scripted):
    script, server = scripted
    discarded = factor(GENERATORS[1], 2)
    refused_by_sonnet = factor(GENERATORS[2], 3)
    script.forecast[STAGE1] = lambda items, attempt: forecast_reply({label: discarded not in t for label, t in items})
    script.forecast[STAGE2[0]] = lambda items, attempt: forecast_reply(
        {label: refused_by_sonnet not in text for label, text in items}
    )
    silent = factor(GENERATORS[3], 4)
    # Grok leaves one hypothesis out, even when asked once more: a null in the matrix, a technical gap.
    script.forecast[STAGE2[2]] = lambda items, attempt: forecast_reply(
        {label: True for label, text in items if silent not in text}
    )
    benchmark, (run,) = run_seed_001_set(server)
    assert run.status == Run.Status.COMPLETED, run.error
    by_factor = {f: run.hypotheses.get(statement__contains=f) for f in (discarded, refused_by_sonnet, silent)}
    # Stage 2 was asked about the hypothesis stage 1 discarded, too: the matrix is full.
    assert set(by_factor[discarded].forecasts.values_list("model_key", "vote")) == {
        (STAGE1, False),
        *((model, True) for model in STAGE2),
    }
    assert by_factor[discarded].stage1 == Hypothesis.Stage1.DISCARDED and not by_factor[discarded].selected
    assert by_factor[refused_by_sonnet].stage1 == Hypothesis.Stage1.KEPT and not by_factor[refused_by_sonnet].selected
    assert by_factor[silent].forecasts.get(model_key=STAGE2[2]).vote is None and not by_factor[silent].selected
    assert run.hypotheses.filter(selected=True).count() == len(GENERATORS) * PER_GENERATOR - 3
    rows = {row.statement: row for row in benchmark_rows(benchmark)}
    # The rows carry the rule's result and the matrix it was read from: single-model lists need nothing else.
    row = rows[by_factor[discarded].statement]
    assert row.first_stage is False and row.selected is False and row.forecasts[STAGE2[0]] is True
    assert sum(r.forecasts[STAGE1] is True for r in rows.values()) == len(rows) - 1


def test_the_detailed_instruction_keeps_every_field_of_each_answer(db, scripted):
    script, server = scripted

    def detailed(items):
        return json.dumps(
            {
                "protocol": "experimental-support-v1",
                "forecasts": [
                    {
                        "id": label,
                        "p_experimental_support": 0.25 if label == "H2" else 0.8,
                        "recommend_for_testing": label != "H2",
                        "support_from_background": ["a quoted fragment"],
                        "assumptions": ["the mice are aged"],
                        "contradictions": [],
                        "reason": "Scripted reason.",
                        "test": {"intervention": "dose", "measurement": "lifespan", "controls": "vehicle"},
                    }
                    for label, _ in items
                ],
            }
        )

    script.detailed = detailed
    benchmark, (run,) = run_seed_001_set(server, forecast_question="detailed")
    assert run.forecast_question == "detailed" and run.status == Run.Status.COMPLETED, run.error
    calls = forecast_requests_of(run)
    assert all(len(_ITEM.findall(user_text(call))) <= MATRIX_REQUEST_SIZE for call in calls)
    assert all("CANDIDATE HYPOTHESES" in user_text(call) for call in calls)
    assert not ModelCall.objects.filter(run=run, purpose__in=["stage1_detailed", "stage2_detailed"]).exists()
    forecast = Forecast.objects.filter(hypothesis__run=run, model_key=STAGE2[1]).first()
    assert forecast.detailed == {
        "support_from_background": ["a quoted fragment"],
        "assumptions": ["the mice are aged"],
        "contradictions": [],
        "reason": "Scripted reason.",
        "test": {"intervention": "dose", "measurement": "lifespan", "controls": "vehicle"},
    }
    # The recommendation is the vote; the probability sits beside it and reaches the rows.
    votes = set(Forecast.objects.filter(hypothesis__run=run).values_list("vote", "recommend_for_testing"))
    assert votes == {(True, True), (False, False)}
    rows = benchmark_rows(benchmark)
    assert {p for row in rows for p in row.probabilities.values()} == {0.25, 0.8}
    assert all(set(row.probabilities) == set(FORECASTERS) for row in rows)


def test_the_single_hypothesis_question_asks_one_hypothesis_a_request(db, scripted):
    script, server = scripted
    _, (run,) = run_seed_001_set(server, forecast_question="single")
    assert run.status == Run.Status.COMPLETED, run.error
    calls = forecast_requests_of(run)
    assert len(calls) == len(FORECASTERS) * len(GENERATORS) * PER_GENERATOR
    labels = [_ITEM.findall(user_text(call))[0][0] for call in calls if call.model_id == STAGE1]
    # Each under its blind number in the twelve-digit form (docs/protocol.md#single-hypothesis-question).
    blind = run.hypotheses.values_list("label", flat=True)
    assert sorted(labels) == sorted(f"H{int(label[1:]):012d}" for label in blind)
    assert all(re.fullmatch(r"H\d{12}", label) for label in labels)
    assert all("Will this hypothesis be confirmed experimentally?" in user_text(call) for call in calls)
    assert set(Forecast.objects.filter(hypothesis__run=run).values_list("vote", "single_vote")) == {(False, False)}


def test_a_request_without_a_usable_reply_leaves_nulls_and_the_rest_counts(db, scripted):
    script, server = scripted
    broken = factor(GENERATORS[0], 1)

    def stage1(items, attempt):
        if any(broken in text for _, text in items):
            return "I will answer later."
        return forecast_reply({label: True for label, _ in items})

    script.forecast[STAGE1] = stage1
    _, (run,) = run_seed_001_set(server)
    assert run.status == Run.Status.COMPLETED, run.error
    first_request = run.hypotheses.filter(source="generator-0").order_by("position")[:MATRIX_REQUEST_SIZE]
    assert {h.stage1 for h in first_request} == {Hypothesis.Stage1.NO_ANSWER}
    assert run.hypotheses.filter(stage1=Hypothesis.Stage1.KEPT).count() == len(GENERATORS) * PER_GENERATOR - 5
    failed = run.work_items.filter(step="stage1", state="failed")
    assert failed.count() == 1 and "no usable reply" in failed.get().error


def test_a_pooled_set_keeps_the_protocols_requests(db, scripted):
    _, server = scripted
    roster = make_roster(server.base_url, translator=None)
    benchmark = make_set({"tasks": [task("T1")]}, roster=roster)
    (run,) = [drive(run) for run in benchmark_run(benchmark=benchmark)]
    assert benchmark.design == "pooled" and run.design == Run.Design.POOLED
    assert [call.model_id for call in forecast_requests_of(run)][:1] == [STAGE1]
    assert len(forecast_requests_of(run)) == 1 + len(STAGE2)


# Asking the forecasts again --------------------------------------------------------------------------------------


def test_the_forecasts_asked_again_are_the_same_requests_in_the_same_order_stored_as_round_two(db, scripted):
    script, server = scripted
    benchmark, (run,) = run_seed_001_set(server)
    selected = set(run.hypotheses.filter(selected=True).values_list("pk", flat=True))
    # The second time, Sonnet changes its mind about every hypothesis.
    script.forecast[STAGE2[0]] = lambda items, attempt: forecast_reply({label: False for label, _ in items})
    queued = benchmark_forecasts_repeat(benchmark=benchmark)
    assert queued == [("T1", len(FORECASTERS) * len(GENERATORS) * 2)]
    drive(run)
    first = forecast_requests_of(run)
    again = [call for call in ModelCall.objects.filter(run=run, purpose__endswith="_repeat", protocol_attempt=1)]
    again.sort(key=lambda call: (call.created_at, call.pk))
    # Byte for byte: the same request bodies, in the same order.
    assert [call.request_sha256 for call in again] == [call.request_sha256 for call in first]
    assert [call.request_body for call in again] == [call.request_body for call in first]
    # Round 2 sits beside round 1 and changes no selection.
    assert set(run.hypotheses.filter(selected=True).values_list("pk", flat=True)) == selected
    second = benchmark_forecast_matrix(benchmark, round_=2)
    assert all(entry["forecasts"][STAGE2[0]] is False for entry in second)
    assert all(entry["forecasts"][STAGE1] is True for entry in second)
    assert {call for entry in second for call in entry["requests"].values()} == {call.pk for call in again}
    rows = benchmark_rows(benchmark)
    assert all(row.forecasts[STAGE2[0]] is True and row.repeat_forecasts[STAGE2[0]] is False for row in rows)
    with pytest.raises(BenchmarkError) as refused:
        benchmark_forecasts_repeat(benchmark=benchmark)
    assert refused.value.code == "nothing_to_repeat"
    assert benchmark_statistics(benchmark).hypotheses == len(rows)


def test_forecasts_are_asked_again_only_once_the_selection_is_made(db, scripted):
    _, server = scripted
    roster = make_roster(server.base_url, translator=None)
    benchmark = make_set({"tasks": [task("T1")]}, roster=roster, design="seed-001")
    (run,) = benchmark_run(benchmark=benchmark)
    drive(run, max_rounds=2)
    with pytest.raises(BenchmarkError) as refused:
        benchmark_forecasts_repeat(benchmark=benchmark)
    assert refused.value.code == "nothing_to_repeat"


def test_a_pooled_sets_forecasts_can_be_asked_again_too(db, scripted):
    _, server = scripted
    roster = make_roster(server.base_url, translator=None)
    benchmark = make_set({"tasks": [task("T1")]}, roster=roster)
    (run,) = [drive(run) for run in benchmark_run(benchmark=benchmark)]
    benchmark_forecasts_repeat(benchmark=benchmark)
    drive(run)
    first = sorted(forecast_requests_of(run), key=lambda call: call.model_id)
    again = sorted(ModelCall.objects.filter(run=run, purpose__endswith="_repeat"), key=lambda call: call.model_id)
    assert [call.request_sha256 for call in again] == [call.request_sha256 for call in first]
    assert (
        Forecast.objects.filter(hypothesis__run=run, round=2).count()
        == Forecast.objects.filter(hypothesis__run=run, round=1).count()
    )


# The API and the pages -------------------------------------------------------------------------------------------


def test_coordinators_choose_the_design_and_read_the_matrix_through_the_api(db, scripted, coordinator, analyst, client):
    _, server = scripted
    make_roster(server.base_url, translator=None)  # the default roster; the set names none
    client.force_login(coordinator)
    created = client.post(
        "/api/v1/benchmarks",
        {"name": "Matrix set", "design": "seed-001", "forecast_question": "short", "seed": 3},
        content_type="application/json",
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["design"], body["forecast_question"], body["roster"]) == ("seed-001", "short", None)
    benchmark = BenchmarkSet.objects.get(pk=body["id"])
    from tests.benchmark_support import import_json

    import_json(benchmark, {"tasks": [task("T1")]})
    started = client.post(f"/api/v1/benchmarks/{benchmark.pk}/run")
    assert started.status_code == 202, started.content
    run = drive(Run.objects.get(benchmark_task__benchmark=benchmark))
    assert run.roster["name"].startswith("Test roster") and run.design == "matrix"

    client.force_login(analyst)
    matrix = client.get(f"/api/v1/benchmarks/{benchmark.pk}/forecasts").json()["results"]
    assert len(matrix) == len(GENERATORS) * PER_GENERATOR
    entry = matrix[0]
    assert set(entry) == {"hypothesis", "generator", "task", "forecasts", "requests"}
    assert entry["hypothesis"] == "H1" and entry["task"] == "T1" and entry["generator"] == f"Model {GENERATORS[0]}"
    assert set(entry["forecasts"]) == set(FORECASTERS)
    assert all(isinstance(call, int) for call in entry["requests"].values())
    assert client.post(f"/api/v1/benchmarks/{benchmark.pk}/forecasts/repeat").status_code == 403
    assert client.get(f"/api/v1/benchmarks/{benchmark.pk}/forecasts?round=3").json()["error"] == "invalid_body"

    client.force_login(coordinator)
    repeated = client.post(f"/api/v1/benchmarks/{benchmark.pk}/forecasts/repeat")
    assert repeated.status_code == 202 and repeated.json() == {"round": 2, "tasks": [{"task": "T1", "requests": 32}]}
    drive(run)
    second = client.get(f"/api/v1/benchmarks/{benchmark.pk}/forecasts?round=2").json()["results"]
    assert [e["hypothesis"] for e in second] == [e["hypothesis"] for e in matrix]
    assert all(set(e["forecasts"]) == set(FORECASTERS) for e in second)
    again = client.post(f"/api/v1/benchmarks/{benchmark.pk}/forecasts/repeat")
    assert again.status_code == 409 and again.json()["error"] == "nothing_to_repeat"


@pytest.mark.parametrize(
    "body, code",
    [
        ({"design": "seed-002"}, "invalid_body"),
        ({"forecast_question": "long"}, "invalid_body"),
        ({"design": "pooled", "forecast_question": "detailed"}, "invalid_question"),
    ],
)
def test_an_unknown_design_or_question_is_refused(db, coordinator, client, body, code):
    client.force_login(coordinator)
    response = client.post("/api/v1/benchmarks", {"name": "Bad set", **body}, content_type="application/json")
    assert response.status_code == 400 and response.json()["error"] == code
    assert not BenchmarkSet.objects.exists()


def test_a_set_without_a_roster_runs_on_the_default_roster(db, scripted, coordinator, client):
    _, server = scripted
    default = make_roster(server.base_url, translator=None)
    benchmark = make_set({"tasks": [task("T1")]})
    client.force_login(coordinator)
    response = client.post(f"/api/v1/benchmarks/{benchmark.pk}/run")
    assert response.status_code == 202, response.content
    assert Run.objects.get().roster["name"] == default.name


def test_the_create_page_offers_the_design_and_validates_it_as_the_api_does(db, coordinator, client):
    client.force_login(coordinator)
    form = client.get("/benchmarks/").content.decode()
    assert 'name="design" value="seed-001"' in form and 'name="forecast_question"' in form
    created = client.post(
        "/benchmarks/", {"name": "Page matrix set", "design": "seed-001", "forecast_question": "detailed"}
    )
    assert created.status_code == 302
    benchmark = BenchmarkSet.objects.get(name="Page matrix set")
    assert (benchmark.design, benchmark.forecast_question) == ("seed-001", "detailed")
    refused = client.post("/benchmarks/", {"name": "Other set", "design": "seed-002"})
    assert refused.status_code == 400 and not BenchmarkSet.objects.filter(name="Other set").exists()
    page = client.get(f"/benchmarks/{benchmark.pk}/").content.decode()
    assert "seed-001" in page and "Ask the forecasts again" in page


def test_the_page_button_asks_the_forecasts_again(db, scripted, coordinator, client):
    _, server = scripted
    benchmark, (run,) = run_seed_001_set(server)
    client.force_login(coordinator)
    response = client.post(f"/benchmarks/{benchmark.pk}/forecasts/repeat/", follow=True)
    assert "32 forecast requests of 1 task asked again" in response.content.decode()
    drive(run)
    page = client.get(f"/benchmarks/{benchmark.pk}/").content.decode()
    assert "32 of 32 requests" in page


# Single-model lists (appendix Ж of the benchmark) -----------------------------------------------------------------


DECIDING_JUDGES = (("Judge One", "Lab One"), ("Judge Two", "Lab Two"), ("Judge Three", "Lab Three"))


def _judge_everything(benchmark: BenchmarkSet) -> None:
    from tests.benchmark_support import import_json, scores

    rows = benchmark_rows(benchmark)
    import_json(
        benchmark,
        {
            "scores": [
                score
                for index, row in enumerate(rows)
                for score in scores(row.task_key, row.key, [4, 4, 0] if index % 3 else [0, 0, 1], DECIDING_JUDGES)
            ]
        },
        filename="scores.json",
    )


def test_a_pooled_set_shows_no_single_model_list_for_models_asked_only_about_what_stage_1_kept(
    db, scripted, analyst, client
):
    script, server = scripted
    discarded = factor(GENERATORS[0], 1)
    script.forecast[STAGE1] = lambda items, attempt: forecast_reply({label: discarded not in t for label, t in items})
    roster = make_roster(server.base_url, translator=None)
    benchmark = make_set({"tasks": [task("T1"), task("T2")]}, roster=roster)
    for run in benchmark_run(benchmark=benchmark):
        drive(run)
    _judge_everything(benchmark)
    statistics = benchmark_statistics(benchmark, resamples=200)
    assert statistics.design == "pooled"
    by_name = {generator.generator: generator for generator in statistics.generators}
    for name in (f"Model {GENERATORS[0]}", "All generators"):
        # Stage 1 discarded some of these: only the stage-1 model was asked about all of them, and the stage-2
        # models' lists (subsets of its own) are not computed.
        assert [item.model for item in by_name[name].single_model_lists] == [STAGE1]
        assert by_name[name].models_without_full_list == tuple(sorted(STAGE2))
    # Where stage 1 kept everything, every model was asked about every hypothesis: its list is its own.
    other = by_name[f"Model {GENERATORS[1]}"]
    assert other.models_without_full_list == () and len(other.single_model_lists) == len(FORECASTERS)
    # The page's one section of these lists says why, for that generator and those models, and lists the others.
    client.force_login(analyst)
    page = client.get(f"/benchmarks/{benchmark.pk}/statistics/").content.decode()
    section = page[page.index('id="trimmed-lists"') :]
    section = section[: section.index("</section>")]
    assert "This set uses the pooled design" in section and "no “yes” list of their own" in section
    assert f"Model {GENERATORS[0]}: no own list for {', '.join(sorted(STAGE2))}" in section
    assert f"Model {GENERATORS[1]}: no own list" not in section
    response = client.get(f"/benchmarks/{benchmark.pk}/figures/trimmed-lists.csv")
    listed = {(row["generator"], row["model"]) for row in csv.DictReader(io.StringIO(response.content.decode()))}
    assert {model for generator, model in listed if generator == f"Model {GENERATORS[0]}"} == {"whole set", STAGE1}
    assert {model for generator, model in listed if generator == f"Model {GENERATORS[1]}"} == {
        "whole set",
        *FORECASTERS,
    }


def test_a_seed_001_set_has_every_forecasting_models_own_list(db, scripted):
    _, server = scripted
    benchmark, _ = run_seed_001_set(server, tasks=("T1", "T2"))
    _judge_everything(benchmark)
    statistics = benchmark_statistics(benchmark, resamples=200)
    assert statistics.design == "seed-001"
    for generator in statistics.generators:
        assert generator.models_without_full_list == ()
        assert sorted(item.model for item in generator.single_model_lists) == sorted(FORECASTERS)


def test_a_runs_votes_answer_its_question_and_imported_answers_under_another_instruction_join_them(db, scripted):
    from reviewapp.benchmarks.services.imports import benchmark_import_file

    script, server = scripted
    script.forecast[STAGE1] = lambda items, attempt: forecast_reply({label: True for label, _ in items})
    benchmark, (run,) = run_seed_001_set(server)
    assert run.status == Run.Status.COMPLETED, run.error
    first = benchmark.hypotheses.order_by("pk").first()
    content = f"task,hypothesis,instruction,model,answer\nT1,{first.key},single,{STAGE1},no\n"
    benchmark_import_file(benchmark=benchmark, filename="single.csv", content=content.encode(), user=None)
    rows = {row.key: row for row in benchmark_rows(benchmark)}
    # The set asks the short question: every row's votes are its answers; the imported one stands beside them.
    assert all(row.instruction_forecasts["short"] == row.forecasts for row in rows.values())
    assert rows[first.key].instruction_forecasts["short"][STAGE1] is True
    assert rows[first.key].instruction_forecasts["single"] == {STAGE1: False}
    assert all("single" not in row.instruction_forecasts for key, row in rows.items() if key != first.key)

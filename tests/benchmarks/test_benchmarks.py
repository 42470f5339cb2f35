"""Benchmark sets: imports of tasks, outside hypotheses with forecasts and judge scores; running a set through the
screening runs; the random control drawn and stored before the first forecast request."""

import csv
import hashlib
import io
import json
import zipfile

import pytest
from openpyxl import Workbook

from reviewapp.benchmarks.models import (
    BenchmarkHypothesis,
    BenchmarkImport,
    BenchmarkTask,
    Judge,
    JudgeScore,
    RandomControlDraw,
)
from reviewapp.benchmarks.selectors import benchmark_progress, benchmark_rows
from reviewapp.benchmarks.services.imports import benchmark_import_file
from reviewapp.benchmarks.services.sets import (
    BenchmarkError,
    benchmark_run,
    frozen_set_sha256,
    judge_add,
    task_shuffle_seed,
)
from reviewapp.models import ResearchTask
from reviewapp.services.imports import ImportInvalid
from screening.llm.models import ModelCall
from screening.models import Run
from tests import factories
from tests.benchmark_support import hypothesis, import_json, json_file, make_set, scores, task
from tests.screening_support import drive, forecast_reply, make_roster


def _counts():
    return (
        ResearchTask.objects.count(),
        BenchmarkTask.objects.count(),
        BenchmarkHypothesis.objects.count(),
        Judge.objects.count(),
        JudgeScore.objects.count(),
        BenchmarkImport.objects.count(),
    )


@pytest.fixture
def filled(db):
    """A set with two tasks, three imported hypotheses and four judges' scores of one of them."""
    return make_set(
        {
            "tasks": [task("T1"), task("T2")],
            "hypotheses": [hypothesis("T1", "h1"), hypothesis("T1", "h2", "Gen Beta"), hypothesis("T2", "h1")],
            "scores": scores("T1", "h1", [5, 3, 3, 0]),
        }
    )


# Imports ---------------------------------------------------------------------------------------------------


def test_a_json_file_imports_tasks_hypotheses_with_forecasts_and_scores(filled):
    rows = benchmark_rows(filled)
    assert [(row.task_key, row.key, row.generator) for row in rows] == [
        ("T1", "h1", "Gen Alpha"),
        ("T1", "h2", "Gen Beta"),
        ("T2", "h1", "Gen Alpha"),
    ]
    first = rows[0]
    assert first.forecasts == {"model-a": True, "model-b": True}
    assert first.selected is True and first.source == "import"
    assert first.reference_statement == "Raising factor T1 extends median lifespan of aged mice by 10%."
    assert first.scores == {"Judge Alpha": 5, "Judge Beta": 3, "Judge Gamma": 3, "Judge Delta": 0}
    assert [j.name for j in Judge.objects.filter(benchmark=filled)] == [
        "Judge Alpha",
        "Judge Beta",
        "Judge Gamma",
        "Judge Delta",
    ]


def test_importing_the_same_file_again_changes_nothing(db):
    benchmark = make_set()
    data = {"tasks": [task("T1")], "hypotheses": [hypothesis("T1", "h1")], "scores": scores("T1", "h1", [1, 2, 3, 4])}
    first = import_json(benchmark, data)
    before = _counts()
    again = import_json(benchmark, data)
    assert (first.new_hypotheses, first.new_scores, first.new_judges) == (1, 4, 4)
    assert again.already_imported and _counts() == before


def test_csv_files_import_one_table_each_with_forecast_columns(db):
    benchmark = make_set({"tasks": [task("T1")]})
    hypotheses = (
        "task,id,generator,generator_company,statement,selected,first_stage,forecast:GPT-6 Astra,forecast:Grok 4.5\r\n"
        "T1,h1,Gen Alpha,Alpha Labs,Raising X extends lifespan.,yes,1,true,\r\n"
        "T1,h2,Gen Alpha,Alpha Labs,Lowering Y extends lifespan.,no,0,false,no\r\n"
    )
    result = benchmark_import_file(benchmark=benchmark, filename="h.csv", content=hypotheses.encode(), user=None)
    score_rows = "task,hypothesis,judge,judge_company,score\r\nT1,h1,Judge Beta,Beta AI,4\r\nT1,h2,Judge Beta,,2\r\n"
    benchmark_import_file(benchmark=benchmark, filename="s.csv", content=score_rows.encode(), user=None)
    rows = benchmark_rows(benchmark)
    assert result.new_hypotheses == 2
    assert [row.forecasts for row in rows] == [
        {"GPT-6 Astra": True, "Grok 4.5": None},
        {"GPT-6 Astra": False, "Grok 4.5": False},
    ]
    assert [(row.selected, row.first_stage) for row in rows] == [(True, True), (False, False)]
    assert [row.scores["Judge Beta"] for row in rows] == [4, 2]


def test_xlsx_workbooks_import_their_named_sheets(db):
    benchmark = make_set()
    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "tasks"
    sheet.append(["key", "question", "reference_statement"])
    sheet.append(["T9", "Does rapamycin delay follicle loss?", "Rapamycin preserves follicles."])
    hypotheses = workbook.create_sheet("hypotheses")
    hypotheses.append(["task", "id", "generator", "generator_company", "statement", "selected", "forecast:m1"])
    hypotheses.append(["T9", "h1", "Gen Beta", "Beta AI", "Rapamycin keeps follicles quiescent.", True, False])
    buffer = io.BytesIO()
    workbook.save(buffer)
    result = benchmark_import_file(benchmark=benchmark, filename="set.xlsx", content=buffer.getvalue(), user=None)
    assert (result.new_tasks, result.new_hypotheses) == (1, 1)
    (row,) = benchmark_rows(benchmark)
    assert (row.task_key, row.forecasts, row.selected) == ("T9", {"m1": False}, True)


BAD_FILES = {
    "a task without its reference statement": (
        {"tasks": [task("T5", reference_statement="")]},
        ("tasks", 1, "reference_statement"),
    ),
    "a hypothesis of a task neither in the file nor in the set": (
        {"hypotheses": [hypothesis("T404", "h1")]},
        ("hypotheses", 1, "task"),
    ),
    "a hypothesis id given twice for one task": (
        {"hypotheses": [hypothesis("T1", "h9"), hypothesis("T1", "h9")]},
        ("hypotheses", 2, "id"),
    ),
    "a hypothesis without its generator's company": (
        {"hypotheses": [hypothesis("T1", "h9", generator_company="")]},
        ("hypotheses", 1, "generator_company"),
    ),
    "a selection that is not yes or no": (
        {"hypotheses": [hypothesis("T1", "h9", selected="maybe")]},
        ("hypotheses", 1, "selected"),
    ),
    "a forecast that is not a yes/no answer": (
        {"hypotheses": [hypothesis("T1", "h9", forecasts={"model-a": "probably"})]},
        ("hypotheses", 1, "forecasts"),
    ),
    "an existing hypothesis with different content": (
        {"hypotheses": [hypothesis("T1", "h1", statement="A different claim.")]},
        ("hypotheses", 1, "id"),
    ),
    "a score above 5": (
        {"scores": [{"task": "T1", "hypothesis": "h2", "judge": "Judge Beta", "score": 6}]},
        ("scores", 1, "score"),
    ),
    "a score that is not whole": (
        {"scores": [{"task": "T1", "hypothesis": "h2", "judge": "Judge Beta", "score": 2.5}]},
        ("scores", 1, "score"),
    ),
    "a score of an unknown hypothesis": (
        {"scores": [{"task": "T1", "hypothesis": "h404", "judge": "Judge Beta", "score": 2}]},
        ("scores", 1, "hypothesis"),
    ),
    "a new judge without a company": (
        {"scores": [{"task": "T1", "hypothesis": "h2", "judge": "Dr Smith", "score": 2}]},
        ("scores", 1, "judge"),
    ),
    "a judge given another company than the set's": (
        {"scores": [{"task": "T1", "hypothesis": "h2", "judge": "Judge Beta", "judge_company": "Zeta", "score": 2}]},
        ("scores", 1, "judge_company"),
    ),
    "one judge with two companies in the file": (
        {
            "scores": [
                {"task": "T1", "hypothesis": "h2", "judge": "Dr Smith", "judge_company": "Uni A", "score": 2},
                {"task": "T2", "hypothesis": "h1", "judge": "Dr Smith", "judge_company": "Uni B", "score": 2},
            ]
        },
        ("scores", 2, "judge_company"),
    ),
    "a score that would overwrite a stored one": (
        {"scores": [{"task": "T1", "hypothesis": "h1", "judge": "Judge Beta", "score": 0}]},
        ("scores", 1, "score"),
    ),
    "the same judge scoring a hypothesis twice": (
        {"scores": [{"task": "T1", "hypothesis": "h2", "judge": "Judge Beta", "score": 1}] * 2},
        ("scores", 2, "judge"),
    ),
    "an unknown field": ({"hypotheses": [hypothesis("T1", "h9", author="x")]}, ("hypotheses", 1, "author")),
    "an unknown table": ({"proposals": []}, ("file", None, "proposals")),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_a_bad_file_imports_nothing_and_names_the_row(filled, case):
    data, (table, row, field) = BAD_FILES[case]
    # Every bad file also carries good records: none of them may be written.
    data = {**data, "tasks": [*data.get("tasks", []), task("T-good")]}
    before = _counts()
    with pytest.raises(ImportInvalid) as raised:
        import_json(filled, data)
    assert (table, row, field) in {(p["table"], p["row"], p["field"]) for p in raised.value.rows}, raised.value.rows
    assert all(p["message"] for p in raised.value.rows)
    assert _counts() == before


def test_a_bad_csv_score_is_reported_with_its_line(filled):
    content = "task,hypothesis,judge,score\r\nT1,h2,Judge Beta,3\r\nT1,h2,Judge Gamma,high\r\n"
    with pytest.raises(ImportInvalid) as raised:
        benchmark_import_file(benchmark=filled, filename="s.csv", content=content.encode(), user=None)
    assert [(p["table"], p["row"], p["field"]) for p in raised.value.rows] == [("scores", 3, "score")]
    assert not JudgeScore.objects.filter(hypothesis__key="h2").exists()


def test_an_unreadable_file_is_refused_whole(filled):
    for content in (b"", b"{not json", b"\xff\xfe\x00garbage"):
        with pytest.raises(ImportInvalid):
            benchmark_import_file(benchmark=filled, filename="x.json", content=content, user=None)


# Judges ------------------------------------------------------------------------------------------------------


def test_judges_keep_their_listed_order_and_need_a_company(db):
    benchmark = make_set()
    first = judge_add(benchmark=benchmark, name="Dr Ortiz", company="Uni Lisbon")
    second = judge_add(benchmark=benchmark, name="Dr Lee", company="Uni Seoul")
    assert (first.position, second.position) == (1, 2)
    with pytest.raises(BenchmarkError):
        judge_add(benchmark=benchmark, name="Dr Kim", company="")
    with pytest.raises(BenchmarkError):
        judge_add(benchmark=benchmark, name="Dr Lee", company="Uni Seoul")


# Running a set ------------------------------------------------------------------------------------------------


def _run_set(server, tasks=("T1", "T2")):
    roster = make_roster(server.base_url, translator=None)
    benchmark = make_set({"tasks": [task(key) for key in tasks]}, roster=roster)
    runs = benchmark_run(benchmark=benchmark)
    return benchmark, runs


def test_running_a_set_starts_one_run_per_task_with_recorded_seeds(db, scripted):
    _, server = scripted
    benchmark, runs = _run_set(server)
    assert [run.question for run in runs] == [
        "Does factor T1 change lifespan in aged mice?",
        f"{task('T2')['question']}",
    ]
    assert [run.shuffle_seed for run in runs] == [task_shuffle_seed(benchmark.seed, key) for key in ("T1", "T2")]
    assert all(run.roster["name"] == benchmark.roster.name and run.client_hash == "" for run in runs)
    # The reference statement never reaches a run: forecasting models must not see it.
    assert all("extends median lifespan" not in run.question + run.background for run in runs)
    with pytest.raises(BenchmarkError):
        benchmark_run(benchmark=benchmark)


def test_a_set_is_not_run_without_a_roster(db):
    benchmark = make_set({"tasks": [task("T1")]})
    with pytest.raises(BenchmarkError):
        benchmark_run(benchmark=benchmark)
    assert not Run.objects.exists()


def test_the_random_control_is_stored_before_the_first_forecast_request(db, scripted):
    _, server = scripted
    benchmark, runs = _run_set(server)
    for run in runs:
        drive(run)
    for run in runs:
        run.refresh_from_db()
        assert run.status == Run.Status.COMPLETED
        draw = RandomControlDraw.objects.get(benchmark_task__run=run)
        first_forecast = ModelCall.objects.filter(run=run, purpose__startswith="stage").earliest("created_at")
        assert first_forecast.purpose == "stage1"
        assert draw.drawn_at < first_forecast.created_at
        # Every pooled hypothesis got an answer, and the draw fingerprints exactly the frozen pool.
        pooled = list(run.hypotheses.order_by("position"))
        assert list(draw.answers) == [h.label for h in pooled]
        assert all(isinstance(answer, bool) for answer in draw.answers.values())
        expected = frozen_set_sha256(
            [
                {
                    "id": h.label,
                    "generator": h.author_name,
                    "generator_company": h.author_company,
                    "statement": h.statement,
                    "mechanism": h.mechanism,
                    "prediction": h.prediction,
                }
                for h in pooled
            ]
        )
        assert draw.hypotheses_sha256 == expected
        assert draw.generator.startswith("python secrets")
    progress = benchmark_progress(benchmark)
    assert all(row.control_before_forecasts for row in progress.tasks)
    assert progress.finished_runs == progress.runs == 2


def test_the_random_control_is_drawn_before_the_pool_is_frozen_and_both_times_are_shown(
    db, scripted, coordinator, client
):
    _, server = scripted
    benchmark, (run, _) = _run_set(server)
    drive(run)
    run.refresh_from_db()
    draw = RandomControlDraw.objects.get(benchmark_task__run=run)
    first_forecast = ModelCall.objects.filter(run=run, purpose__startswith="stage").earliest("created_at")
    # Drawn, then the pool frozen (shuffled and numbered), then the first forecast request.
    assert draw.drawn_at < draw.frozen_at < first_forecast.created_at
    assert draw.frozen_at == run.pooled_at
    # The answers were drawn as a sequence before any hypothesis had its place, then given out in pool order.
    pooled = list(run.hypotheses.order_by("position").values_list("label", flat=True))
    assert len(draw.sequence) == draw.hypothesis_count == len(pooled)
    assert [draw.answers[label] for label in pooled] == draw.sequence
    client.force_login(coordinator)
    page = client.get(f"/benchmarks/{benchmark.pk}/").content.decode()
    assert "Pool frozen (UTC)" in page
    assert f"{draw.drawn_at:%Y-%m-%d %H:%M:%S}" in page and f"{draw.frozen_at:%Y-%m-%d %H:%M:%S}" in page
    detail = client.get(f"/api/v1/benchmarks/{benchmark.pk}").json()["tasks"][0]
    assert detail["random_control_drawn_at"] < detail["pool_frozen_at"] < detail["first_forecast_at"]


def test_a_runs_hypotheses_join_the_set_with_its_forecasts_and_selection(db, scripted):
    script, server = scripted
    # The second stage-2 model says no to H1: H1 is not selected, the rest are.
    script.forecast["fc-argon"] = lambda items, attempt: forecast_reply({label: label != "H1" for label, _ in items})
    benchmark, (run, _) = _run_set(server)
    drive(run)
    rows = [row for row in benchmark_rows(benchmark) if row.task_key == "T1"]
    assert len(rows) == 12  # four generators, three hypotheses each
    first = next(row for row in rows if row.key == "H1")
    assert first.source == "run" and first.selected is False and first.first_stage is True
    assert first.forecasts == {"fc-astra": True, "fc-sonnet": True, "fc-argon": False, "fc-grok": True}
    assert all(row.selected for row in rows if row.key != "H1")
    assert {row.generator for row in rows} == {
        f"Model {name}" for name in ("gen-astra", "gen-grok", "gen-opus", "gen-argon")
    }


def test_hypotheses_of_an_unfinished_run_have_no_selection_yet(db, scripted):
    _, server = scripted
    benchmark, (run, _) = _run_set(server)
    drive(run, max_rounds=2)  # generated and pooled, not yet forecast
    run.refresh_from_db()
    rows = [row for row in benchmark_rows(benchmark) if row.task_key == "T1"]
    assert run.status in (Run.Status.SCREENING_STAGE1, Run.Status.SCREENING_STAGE2)
    assert rows and all(row.selected is None for row in rows)


def test_the_published_cohort_lets_anyone_check_the_random_controls_fingerprint(db, scripted, analyst, client):
    _, server = scripted
    benchmark, runs = _run_set(server, tasks=("T1",))
    drive(runs[0])
    client.force_login(analyst)
    response = client.get(f"/api/v1/benchmarks/{benchmark.pk}/bundle.zip")
    cohort = json.loads(zipfile.ZipFile(io.BytesIO(response.content)).read("cohort.json"))
    (published,) = cohort["tasks"]
    canonical = json.dumps(published["hypotheses"], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert hashlib.sha256(canonical.encode()).hexdigest() == published["random_control"]["hypotheses_sha256"]
    assert published["random_control"]["answers"] == RandomControlDraw.objects.get().answers


def test_other_runs_are_not_touched_by_the_benchmark_hook(db, scripted):
    from screening.services.runs import run_create

    _, server = scripted
    make_roster(server.base_url, translator=None)
    run = run_create(question="Does a public client's question stay outside every set?", client_address="10.0.0.1")
    drive(run)
    assert not RandomControlDraw.objects.exists() and not BenchmarkHypothesis.objects.exists()


def test_the_set_page_shows_each_tasks_run_and_random_control(db, scripted, coordinator, client):
    _, server = scripted
    benchmark, runs = _run_set(server)
    drive(runs[0])
    client.force_login(coordinator)
    page = client.get(f"/benchmarks/{benchmark.pk}/").content.decode()
    assert "T1" in page and "T2" in page and "control first" in page
    assert "1 of 2 runs finished" in page
    partial = client.get(f"/benchmarks/{benchmark.pk}/", headers={"HX-Request": "true", "HX-Target": "set-progress"})
    assert 'id="set-progress"' in partial.content.decode() and "<html" not in partial.content.decode()


def test_coordinators_create_import_and_run_through_the_api(db, scripted, coordinator, client):
    _, server = scripted
    roster = make_roster(server.base_url, translator=None)
    client.force_login(coordinator)
    created = client.post(
        "/api/v1/benchmarks", {"name": "API set", "roster": roster.name, "seed": 7}, content_type="application/json"
    )
    assert created.status_code == 201, created.content
    benchmark_id = created.json()["id"]
    upload = io.BytesIO(json_file({"tasks": [task("T1")]}))
    upload.name = "tasks.json"
    imported = client.post(f"/api/v1/benchmarks/{benchmark_id}/import", {"file": upload}, format="multipart")
    assert imported.json()["new_tasks"] == 1
    bad = io.BytesIO(json_file({"tasks": [task("T2", reference_statement="")]}))
    bad.name = "bad.json"
    refused = client.post(f"/api/v1/benchmarks/{benchmark_id}/import", {"file": bad}, format="multipart")
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_import"
    assert refused.json()["problems"][0]["field"] == "reference_statement"
    started = client.post(f"/api/v1/benchmarks/{benchmark_id}/run")
    assert started.status_code == 202 and len(started.json()["started"]) == 1
    detail = client.get(f"/api/v1/benchmarks/{benchmark_id}").json()
    assert detail["tasks"][0]["task"] == "T1" and detail["tasks"][0]["status"] == "queued"
    again = client.post(f"/api/v1/benchmarks/{benchmark_id}/run")
    assert again.status_code == 409 and again.json()["error"] == "nothing_to_run"


def test_analysts_read_sets_but_cannot_change_them(db, analyst, client):
    benchmark = make_set({"tasks": [task("T1")]})
    client.force_login(analyst)
    assert client.get("/api/v1/benchmarks").json()["results"][0]["name"] == benchmark.name
    assert client.post("/api/v1/benchmarks", {"name": "x"}, content_type="application/json").status_code == 403
    assert client.post(f"/benchmarks/{benchmark.pk}/run/").status_code == 403
    assert client.post("/benchmarks/", {"name": "x"}).status_code == 403


def test_the_selected_csv_of_the_set_is_safe_for_spreadsheets(filled, analyst, client):
    import_json(filled, {"hypotheses": [hypothesis("T2", "h7", statement="=HYPERLINK(1)")]})
    client.force_login(analyst)
    archive = zipfile.ZipFile(io.BytesIO(client.get(f"/api/v1/benchmarks/{filled.pk}/bundle.zip").content))
    rows = list(csv.DictReader(io.StringIO(archive.read("selected.csv").decode())))
    assert next(row for row in rows if row["hypothesis"] == "h7")["statement"] == "'=HYPERLINK(1)"


def test_a_task_shared_with_a_cohort_is_reused_when_identical(db):
    existing = factories.make_task(key="PMID-1", question="Q?", reference_statement="R.")
    from reviewapp.services.imports import task_content_sha256

    ResearchTask.objects.filter(pk=existing.pk).update(
        content_sha256=task_content_sha256(
            {
                "key": "PMID-1",
                "question": "Q?",
                "background": "",
                "reference_statement": "R.",
                "published": None,
                "dataset": "",
            }
        )
    )
    benchmark = make_set()
    result = import_json(benchmark, {"tasks": [{"key": "PMID-1", "question": "Q?", "reference_statement": "R."}]})
    assert result.new_tasks == 0 and benchmark.benchmark_tasks.get().task_id == existing.pk
    with pytest.raises(ImportInvalid):
        import_json(
            make_set(name="Other"), {"tasks": [{"key": "PMID-1", "question": "Changed?", "reference_statement": "R."}]}
        )


def test_coordinators_create_a_set_and_import_its_file_on_the_pages(db, coordinator, client):
    client.force_login(coordinator)
    assert client.get("/benchmarks/").status_code == 200
    created = client.post("/benchmarks/", {"name": "Page set", "description": "", "roster": "", "seed": "11"})
    benchmark_id = int(created["Location"].rstrip("/").split("/")[-1])
    assert created.status_code == 302 and client.get(created["Location"]).status_code == 200
    assert client.post("/benchmarks/", {"name": "Page set"}).status_code == 400  # the name is taken
    import_url = f"/benchmarks/{benchmark_id}/import/"
    form = client.get(import_url).content.decode()
    assert "forecast:" in form and "reference_statement" in form
    bad = io.BytesIO(json_file({"tasks": [task("T1", reference_statement="")]}))
    bad.name = "bad.json"
    refused = client.post(import_url, {"file": bad}, headers={"HX-Request": "true"}).content.decode()
    assert "Nothing was imported" in refused and "reference_statement" in refused and "<html" not in refused
    good = io.BytesIO(json_file({"tasks": [task("T1")], "hypotheses": [hypothesis("T1", "h1")]}))
    good.name = "good.json"
    imported = client.post(import_url, {"file": good}).content.decode()
    assert "Imported." in imported and "good.json" in imported
    page = client.get(f"/benchmarks/{benchmark_id}/").content.decode()
    assert "Imported</span>" in page and "good.json" in page

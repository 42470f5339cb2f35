"""The appendices' analyses on a set: the import of their inputs (validated up front, atomic), each section of the
statistics page with its CSV, the same numbers in the statistics API, the seeds, analysis.json in a byte-identical
bundle, the plain statement when a set lacks the full forecast matrix, and who may read them."""

import csv
import hashlib
import io
import json
import zipfile

import pytest
from django.core.cache import cache
from openpyxl import Workbook
from scipy.stats import hypergeom
from sklearn.metrics import cohen_kappa_score, roc_auc_score

from reviewapp import analysis
from reviewapp.benchmarks.figures import BENCHMARK_FIGURES
from reviewapp.benchmarks.models import BenchmarkHypothesis, BenchmarkTask, Forecaster, QualityScore, TaskSelectionLog
from reviewapp.benchmarks.selectors import benchmark_forecast_rounds, benchmark_rows, benchmark_statistics
from reviewapp.benchmarks.services.imports import benchmark_import_file
from reviewapp.benchmarks.services.sets import benchmark_run
from reviewapp.services.imports import ImportInvalid
from tests.benchmark_support import import_json, make_set, scores, task
from tests.screening_support import drive, forecast_reply, make_roster

MODELS = {"astra": "Beta AI", "sonnet": "Alpha Labs", "gemini": "Gamma Inc", "grok": "Delta"}
SALT = "omega-creativity-2026-10-11"
TASKS = [f"T{n}" for n in range(8)]


def _hypothesis(i: int) -> dict:
    """80 hypotheses of Gen Alpha (Alpha Labs): GPT-6 Astra's role is "astra", which says yes to 53 of them, 25
    matching; the group selects 19 of its yes, 14 matching (seed 001 Ж on Grok's hypotheses)."""
    astra = i < 53
    selected = i < 14 or 25 <= i < 30
    forecasts = {
        "astra": astra,
        "sonnet": selected or (i >= 53 and i % 2 == 0),
        "gemini": selected or i % 3 != 0,
        "grok": selected or i < 60,
    }
    return {
        "task": TASKS[i % 8],
        "id": f"h{i}",
        "generator": "Gen Alpha",
        "generator_company": "Alpha Labs",
        "statement": f"Raising the factor extends lifespan of aged mice, variant {i}."
        if i % 4
        else f"Variant {i} lowers inflammation.",
        "mechanism": "It lowers inflammation.",
        "prediction": "Treated mice live longer.",
        "first_stage": astra,
        "selected": selected,
        "forecasts": forecasts,
        "confirmed": (i % 2 == 0) if i < 20 else None,
    }


def _matches(i: int) -> bool:
    return i < 25 or 53 <= i < 58


def study_data() -> dict:
    hypotheses = [_hypothesis(i) for i in range(80)]
    score_rows, quality = [], []
    for h in hypotheses:
        i = int(h["id"][1:])
        score_rows += scores(h["task"], h["id"], [0, 4, 4, 4] if _matches(i) else [0, 1, 1, 1])
        for judge in ("Judge Alpha", "Judge Beta", "Judge Gamma", "Judge Delta"):
            quality.append(
                {
                    "task": h["task"],
                    "hypothesis": h["id"],
                    "judge": judge,
                    "originality": 3 + i % 5,
                    "feasibility": 2 + i % 7,
                    "clarity": 8 if h["selected"] else 1 + i % 6,
                }
            )
    order = analysis.candidate_order(SALT, [str(41000000 + n) for n in range(12)])
    return {
        "tasks": [task(key) for key in TASKS],
        "hypotheses": hypotheses,
        "scores": score_rows,
        "forecasters": [{"model": m, "company": c} for m, c in MODELS.items()],
        "probabilities": [
            {"task": h["task"], "hypothesis": h["id"], "model": "astra", "probability": round((80 - n) / 100, 2)}
            for n, h in enumerate(hypotheses)
        ],
        "repeat_forecasts": [
            {"task": h["task"], "hypothesis": h["id"], "model": m, "answer": (not v) if n % 7 == 0 else v}
            for n, h in enumerate(hypotheses)
            for m, v in h["forecasts"].items()
        ],
        "hints": [{"task": key, "hint_score": n % 4} for n, key in enumerate(TASKS)],
        "key_elements": [
            {"task": key, "element": element} for key in TASKS for element in ("raising the factor", "extends lifespan")
        ],
        "quality_scores": quality,
        "selection_log": [{"query": "aging[MeSH Terms] AND journal article[pt]", "salt": SALT, "found": 15}],
        "selection_records": [
            {
                "pmid": pmid,
                "status": "candidate",
                "position": n,
                "final": n <= 8,
                "task": TASKS[n - 1] if n <= 8 else "",
            }
            for n, pmid in enumerate(order, start=1)
        ]
        + [{"pmid": str(42000000 + n), "status": "excluded", "reason": "review article"} for n in range(3)],
    }


@pytest.fixture
def study(db):
    return make_set(study_data())


def _csv(client, benchmark, figure, query=""):
    response = client.get(f"/benchmarks/{benchmark.pk}/figures/{figure}.csv{query}")
    assert response.status_code == 200, response.content[:300]
    return list(csv.DictReader(io.StringIO(response.content.decode())))


# Imports ---------------------------------------------------------------------------------------------------


def test_the_analyses_inputs_import_with_the_set(study):
    assert Forecaster.objects.filter(benchmark=study).count() == 4
    first = BenchmarkHypothesis.objects.get(benchmark=study, key="h0")
    assert first.probabilities == {"astra": 0.8} and first.repeat_forecasts["astra"] is False  # 0 % 7 == 0: flipped
    assert first.confirmed is True
    task_row = BenchmarkTask.objects.get(benchmark=study, task__key="T1")
    assert (task_row.hint_score, task_row.key_elements) == (1.0, ["raising the factor", "extends lifespan"])
    assert QualityScore.objects.filter(hypothesis__benchmark=study).count() == 320
    log = TaskSelectionLog.objects.get(benchmark=study)
    assert (log.salt, log.found, log.records.count()) == (SALT, 15, 15)


def test_importing_the_same_inputs_again_changes_nothing(study):
    again = import_json(study, study_data(), filename="again.json")
    assert again.new_analysis_records == 0 and again.new_hypotheses == 0
    assert again.analysis_records == 80 + 4 + 320 + 8 + 16 + 320 + 1 + 15


@pytest.mark.parametrize(
    ("table", "row", "field"),
    [
        ("probabilities", {"task": "T0", "hypothesis": "h0", "model": "gemini", "probability": 1.5}, "probability"),
        ("probabilities", {"task": "T0", "hypothesis": "nope", "model": "gemini", "probability": 0.5}, "hypothesis"),
        ("repeat_forecasts", {"task": "T0", "hypothesis": "h0", "model": "astra", "answer": True}, "answer"),
        ("hints", {"task": "T0", "hint_score": 2}, "hint_score"),
        ("hints", {"task": "T99", "hint_score": 2}, "task"),
        ("forecasters", {"model": "astra", "company": "Other"}, "company"),
        (
            "quality_scores",
            {
                "task": "T0",
                "hypothesis": "h0",
                "judge": "Judge Beta",
                "originality": 11,
                "feasibility": 2,
                "clarity": 2,
            },
            "originality",
        ),
        (
            "quality_scores",
            {"task": "T0", "hypothesis": "h0", "judge": "Judge Beta", "originality": 9, "feasibility": 2, "clarity": 8},
            "originality",
        ),
        ("key_elements", {"task": "T0", "element": "another element"}, "element"),
        ("selection_records", {"pmid": "9", "status": "maybe"}, "status"),
        ("selection_records", {"pmid": "9", "status": "excluded"}, "reason"),
        ("selection_records", {"pmid": "9", "status": "candidate", "position": 1}, "position"),
        ("selection_log", {"query": "other", "salt": SALT, "found": 15}, None),
    ],
)
def test_a_bad_analysis_row_imports_nothing_and_is_named(study, table, row, field):
    before = (
        QualityScore.objects.count(),
        Forecaster.objects.count(),
        BenchmarkTask.objects.get(task__key="T2").hint_score,
    )
    bad = {"hints": [{"task": "T2", "hint_score": 9}], table: [row]} if table != "hints" else {table: [row]}
    with pytest.raises(ImportInvalid) as refusal:
        import_json(study, bad, filename="bad.json")
    assert any(p["table"] == table and p["field"] == field for p in refusal.value.rows), refusal.value.rows
    after = (
        QualityScore.objects.count(),
        Forecaster.objects.count(),
        BenchmarkTask.objects.get(task__key="T2").hint_score,
    )
    assert after == before  # the good hint in the same file was not written either


def test_selection_records_need_their_log(db):
    benchmark = make_set({"tasks": [task("T1")]})
    with pytest.raises(ImportInvalid) as refusal:
        import_json(benchmark, {"selection_records": [{"pmid": "1", "status": "excluded", "reason": "review"}]})
    assert refusal.value.rows[0]["table"] == "selection_records"


def test_csv_and_xlsx_files_carry_the_analyses_tables(db):
    benchmark = make_set(
        {
            "tasks": [task("T1")],
            "hypotheses": [_hypothesis(0) | {"task": "T1"}],
            "scores": scores("T1", "h0", [0, 4, 4, 4]),
        }
    )
    probabilities = "task,hypothesis,model,probability\nT1,h0,astra,0.25\n"
    benchmark_import_file(benchmark=benchmark, filename="p.csv", content=probabilities.encode(), user=None)
    book = Workbook()
    book.active.title = "hints"
    book.active.append(["task", "hint_score"])
    book.active.append(["T1", 2])
    elements = book.create_sheet("key_elements")
    elements.append(["task", "element"])
    elements.append(["T1", "raising the factor"])
    log = book.create_sheet("selection_log")
    log.append(["query", "salt", "found", "searched_on"])
    log.append(["aging[MeSH]", SALT, 1, "2026-10-13"])
    records = book.create_sheet("selection_records")
    records.append(["pmid", "status", "position", "final", "task"])
    records.append([41000001, "candidate", 1, "yes", "T1"])
    buffer = io.BytesIO()
    book.save(buffer)
    benchmark_import_file(benchmark=benchmark, filename="inputs.xlsx", content=buffer.getvalue(), user=None)
    hypothesis = BenchmarkHypothesis.objects.get(benchmark=benchmark)
    assert hypothesis.probabilities == {"astra": 0.25}
    set_task = BenchmarkTask.objects.get(benchmark=benchmark)
    assert (set_task.hint_score, set_task.key_elements) == (2.0, ["raising the factor"])
    record = TaskSelectionLog.objects.get(benchmark=benchmark).records.get()
    assert (record.pmid, record.final, record.task_key) == ("41000001", True, "T1")


# Sections and their numbers --------------------------------------------------------------------------------


def test_trimming_reproduces_the_published_8_96_and_6_to_12_of_appendix_zh(study, client, analyst):
    client.force_login(analyst)
    rows = {row["model"]: row for row in _csv(client, study, "trimmed-lists")}
    astra = rows["astra"]
    assert (astra["yes"], astra["yes_matching"], astra["group_list_length"], astra["group_matches"]) == (
        "53",
        "25",
        "19",
        "14",
    )
    assert round(float(astra["mean"]), 2) == 8.96 and float(astra["mean_share"]) == pytest.approx(0.4717, abs=1e-4)
    assert (astra["low"], astra["high"], astra["group_above_range"]) == ("6", "12", "True")
    # The check by 100,000 counts drawn with the selection's seed agrees with the exact figures.
    assert (astra["simulated_low"], astra["simulated_high"]) == ("6", "12")
    assert float(astra["simulated_mean"]) == pytest.approx(8.96, abs=0.03)
    assert astra["seed"] == "20261026"
    assert _csv(client, study, "trimmed-lists", "?seed_selection=7")[1]["seed"] == "7"
    whole = rows["whole set"]
    assert float(whole["mean"]) == pytest.approx(hypergeom(80, 30, 19).mean(), abs=1e-4)


def test_majority_and_unanimity_count_the_own_and_every_outside_forecaster(study, client, analyst):
    client.force_login(analyst)
    rows = {row["rule"] + row["forecasters"]: row for row in _csv(client, study, "forecast-rules")}
    own = rows["own forecastsonnet"]  # sonnet is Alpha Labs', the generator's company
    hypotheses = [_hypothesis(i) for i in range(80)]
    own_yes = [i for i, h in enumerate(hypotheses) if h["forecasts"]["sonnet"]]
    assert own["selected"] == str(len(own_yes)) and own["selected_matches"] == str(sum(map(_matches, own_yes)))
    majority = next(row for key, row in rows.items() if key.startswith("majority"))
    expected = [i for i, h in enumerate(hypotheses) if sum(h["forecasts"].values()) >= 3]
    assert majority["selected"] == str(len(expected))
    assert majority["forecasters"] == "sonnet, astra, gemini, grok"
    unanimity = next(row for key, row in rows.items() if key.startswith("unanimity"))
    assert unanimity["selected"] == "19" and unanimity["selected_matches"] == "14"


def test_the_rule_enumeration_lists_every_voting_rule_and_two_stage_scheme(study, client, analyst):
    client.force_login(analyst)
    rows = _csv(client, study, "rule-enumeration")
    votes = [row for row in rows if row["kind"] == "vote"]
    schemes = [row for row in rows if row["kind"] == "two-stage"]
    assert len(votes) == analysis.voting_rule_count(4) == 32
    assert len(schemes) == analysis.two_stage_scheme_count(4, 4) == 60
    assert sum(bool(row["repeats_model"]) for row in schemes) == 4 * 8
    unanimous = next(row for row in votes if row["threshold"] == "4")
    assert (unanimous["list_length"], unanimous["matches"]) == ("19", "14")


def test_best_single_model_selection_without_the_company_forecaster_and_judges_left_out(study, client, analyst):
    client.force_login(analyst)
    best = next(row for row in _csv(client, study, "best-single-model") if row["best"] == "True")
    assert best["p_value"] and best["group_precision"] == str(round(14 / 19, 4))
    (without,) = _csv(client, study, "without-company")
    assert without["left_out"] == "sonnet" and without["seed"] == "20261030"  # appendix Л
    left_out = {row["judge_left_out"]: row for row in _csv(client, study, "judge-left-out")}
    assert left_out["Judge Alpha"]["changed_outcomes"] == "0"  # the generator company's own judge decides nothing
    # Without Judge Beta both of Gamma and Delta must give ≥ 3: they always agree here, so nothing changes.
    assert left_out["Judge Beta"]["selected_matches"] == "14"


def test_ranking_auc_equals_sklearn_and_the_rule_is_compared_with_the_top_k(study, client, analyst):
    client.force_login(analyst)
    rows = _csv(client, study, "ranking")
    probabilities = [(80 - i) / 100 for i in range(80)]
    assert float(rows[0]["auc"]) == pytest.approx(
        roc_auc_score([_matches(i) for i in range(80)], probabilities), abs=1e-4
    )
    assert {row["k"] for row in rows} == {"19"} and rows[0]["seed"] == "20261030"
    (versus,) = _csv(client, study, "ranking-vs-rule")
    # The top 19 by probability are h0…h18, all matching; the rule's 19 hold 14.
    assert float(versus["ranking_precision"]) == 1.0
    assert float(versus["difference"]) == pytest.approx(14 / 19 - 1, abs=1e-4)


def test_rerun_agreement_equals_sklearn_kappa(study, client, analyst):
    client.force_login(analyst)
    rows = {row["model"]: row for row in _csv(client, study, "rerun")}
    first = [_hypothesis(i)["forecasts"]["gemini"] for i in range(80)]
    second = [(not v) if i % 7 == 0 else v for i, v in enumerate(first)]
    assert float(rows["gemini"]["kappa"]) == pytest.approx(cohen_kappa_score(first, second), abs=1e-4)
    assert rows["gemini"]["hypotheses"] == "80"
    (selection,) = _csv(client, study, "rerun-selection")
    assert selection["selected_first"] == "19"


def test_forecast_rounds_are_read_per_hypothesis_and_model(study):
    rows = benchmark_rows(study)
    rounds = benchmark_forecast_rounds(rows)
    assert list(rounds) == ["first", "repeat"]
    h0 = next(row for row in rows if row.key == "h0")
    assert rounds["first"][(h0.pk, "astra")] is True and rounds["repeat"][(h0.pk, "astra")] is False


def test_balanced_accuracy_key_elements_originality_and_hints(study, client, analyst):
    client.force_login(analyst)
    balanced = {row["rule"]: row for row in _csv(client, study, "balanced-accuracy")}
    truth = [i % 2 == 0 for i in range(20)]
    astra = [True] * 20  # astra said yes to all of h0…h19
    expected = (sum(t and a for t, a in zip(truth, astra, strict=True)) / 10 + 0) / 2
    assert float(balanced["astra"]["balanced_accuracy"]) == pytest.approx(expected)
    assert balanced["astra"]["balanced_set"] == "True"
    elements = {row["hypotheses"]: row for row in _csv(client, study, "key-elements")}
    assert elements["all"]["judged"] == "80" and elements["all"]["seed"] == "20261030"
    differences = {row["dimension"]: row for row in _csv(client, study, "originality")}
    assert differences["clarity"]["pairs"] == "19" and float(differences["clarity"]["difference"]) > 0
    assert differences["clarity"]["permutations"] == "19999"
    terms = {row["term"] for row in _csv(client, study, "originality-logit")}
    assert terms == {"Intercept", "selected[T.True]", "clarity"} or terms == {"Intercept", "selected", "clarity"}
    (hint,) = _csv(client, study, "hint-degree")
    assert hint["tasks"] == "8" and hint["permutations"] == "99999" and hint["seed"] == "20261027"


def test_the_task_selection_log_reproduces_its_salted_order(study, client, analyst):
    client.force_login(analyst)
    summary = {row["item"]: row["value"] for row in _csv(client, study, "task-selection")}
    assert summary["stored order reproduces"] == "yes" and summary["found = excluded + candidates"] == "yes"
    assert summary["final tasks in this set"] == "8"
    candidates = _csv(client, study, "task-selection-candidates")
    first = candidates[0]
    assert first["sha256"] == hashlib.sha256(f"{SALT}{first['pmid']}".encode()).hexdigest()
    assert all(row["stored_position"] == row["reproduced_position"] for row in candidates)


def test_a_stored_order_that_is_not_the_salted_one_is_shown_as_such(db, client, analyst):
    order = analysis.candidate_order(SALT, ["1", "2", "3"])
    benchmark = make_set(
        {
            "selection_log": [{"query": "q", "salt": SALT, "found": 3}],
            "selection_records": [
                {"pmid": pmid, "status": "candidate", "position": n} for n, pmid in enumerate(reversed(order), start=1)
            ],
        }
    )
    client.force_login(analyst)
    summary = {row["item"]: row["value"] for row in _csv(client, benchmark, "task-selection")}
    assert summary["stored order reproduces"] == "no"
    assert summary["first difference"].startswith("position 1:")


# The page, the API, the seeds ------------------------------------------------------------------------------


def test_the_statistics_page_has_a_section_per_analysis_with_its_seed(study, client, coordinator):
    client.force_login(coordinator)
    page = client.get(f"/benchmarks/{study.pk}/statistics/").content.decode()
    for slug in (
        "generation",
        "forecast-rules",
        "trimmed-lists",
        "balanced-accuracy",
        "task-selection",
        "ranking",
        "best-single-model",
        "without-company",
        "judge-left-out",
        "rerun",
        "key-elements",
        "rule-enumeration",
        "originality",
        "hint-degree",
        "pair-decisions",
        "direction-rule",
        "instruction-comparison",
    ):
        assert f'id="{slug}"' in page, slug
    assert "seed\n    <strong>20261025</strong> (generation)" in page
    assert "<strong>20261030</strong> (auc)" in page
    assert f"/benchmarks/{study.pk}/figures/trimmed-lists.png" in page


# The seeds as appendix М.6 and appendix Л of the benchmark supplement publish them (docs/analysis.md#seeds).
PUBLISHED_SEEDS = {
    "generation": 20261025,
    "selection": 20261026,
    "sensitivity": 20261027,
    "auc": 20261030,
    "further": 20261030,
}
SECTION_SEEDS = {
    "generation": 20261025,  # М.6: generation intervals
    "trimmed-lists": 20261026,  # Е, М.6: two-stage selection and random control
    "judge-left-out": 20261027,  # М.6: sensitivity analyses
    "hint-degree": 20261027,  # М.6: the hint analysis
    "ranking": 20261030,  # М.6: AUC intervals
    "key-elements": 20261030,  # Л
    "best-single-model": 20261030,  # Л
    "without-company": 20261030,  # Л (Н.7's robustness checks would say 20261027)
    "rerun": 20261030,  # Л (likewise)
    "originality": 20261030,  # Л
    "direction-rule": 20261030,  # Л (Л.4)
    "instruction-comparison": 20261026,  # Г names none: the selection's
}


def test_each_section_uses_the_seed_its_appendix_publishes(study, client, analyst):
    client.force_login(analyst)
    data = client.get(f"/api/v1/benchmarks/{study.pk}/statistics").json()
    assert data["seeds"] == data["study"]["seeds"] == PUBLISHED_SEEDS
    archive = zipfile.ZipFile(io.BytesIO(client.get(f"/api/v1/benchmarks/{study.pk}/bundle.zip").content))
    sections = json.loads(archive.read("analysis.json"))["sections"]
    assert {slug: sections[slug]["seed"] for slug in SECTION_SEEDS} == SECTION_SEEDS
    # The tables print the seed they used.
    assert {row["seed"] for row in _csv(client, study, "best-single-model")} == {"20261030"}


def test_where_two_passages_disagree_the_section_says_which_it_follows_and_offers_the_other(study, client, analyst):
    client.force_login(analyst)
    page = client.get(f"/benchmarks/{study.pk}/statistics/").content.decode()
    for slug in ("without-company", "rerun"):
        section = page[page.index(f'id="{slug}"') :]
        section = section[: section.index("</section>")]
        assert "Followed: appendix Л, 20261030" in section and "20261027" in section
        assert f"?seed_further=20261027#{slug}" in section
    enrichment = page[page.index('id="enrichment"') :]
    assert "?seed_selection=20261030#enrichment" in enrichment[: enrichment.index("</section>")]
    # The other seed recomputes the section with it, and the table names it.
    default = _csv(client, study, "best-single-model")
    other = _csv(client, study, "best-single-model", "?seed_further=20261027")
    assert {row["seed"] for row in other} == {"20261027"} and {row["seed"] for row in default} == {"20261030"}


def test_a_changed_seed_changes_the_intervals_and_is_printed(study, client, analyst):
    client.force_login(analyst)
    (default,) = _csv(client, study, "hint-degree")
    (changed,) = _csv(client, study, "hint-degree", "?seed_sensitivity=7")
    assert (default["seed"], changed["seed"]) == ("20261027", "7") and changed["rho"] == default["rho"]
    assert (changed["rho_low"], changed["rho_high"]) != (default["rho_low"], default["rho_high"])
    assert _csv(client, study, "generation", "?seed_generation=7")[0]["seed"] == "7"
    page = client.get(f"/benchmarks/{study.pk}/statistics/?seed_generation=7").content.decode()
    assert "<strong>7</strong> (generation)" in page and "figures/generation.csv?seed_generation=7" in page
    data = client.get(f"/api/v1/benchmarks/{study.pk}/statistics?seed_generation=7").json()
    assert data["seeds"]["generation"] == 7 and data["study"]["seeds"]["generation"] == 7


def test_a_bad_seed_is_refused(study, client, analyst):
    client.force_login(analyst)
    response = client.get(f"/api/v1/benchmarks/{study.pk}/statistics?seed_auc=-1")
    assert response.status_code == 400 and response.json()["error"] == "invalid_body"
    page = client.get(f"/benchmarks/{study.pk}/statistics/?seed_auc=x")
    assert page.status_code == 400 and "Seed auc" in page.content.decode()
    assert client.get(f"/benchmarks/{study.pk}/figures/ranking.csv?seed_auc=x").status_code == 400


def test_the_statistics_api_gives_the_same_numbers_as_the_pages(study, client, analyst):
    client.force_login(analyst)
    data = client.get(f"/api/v1/benchmarks/{study.pk}/statistics").json()
    (lists,) = data["generators"]
    assert lists["models_without_full_list"] == []
    astra = next(item for item in lists["single_model_lists"] if item["model"] == "astra")
    assert (astra["positives"], astra["positive_matches"], astra["group_length"], astra["group_matches"]) == (
        53,
        25,
        19,
        14,
    )
    assert round(astra["control"]["mean"], 2) == 8.96
    assert (astra["control"]["low"], astra["control"]["high"], astra["group_above_range"]) == (6, 12, True)
    assert (astra["simulated_low"], astra["simulated_high"], astra["repeats"]) == (6, 12, 100_000)
    assert astra["seed"] == 20261026
    (generator,) = data["study"]["generators"]
    assert "trimmed" not in generator  # the lists are computed once, as the generators' single_model_lists
    assert len(generator["rules"]["voting_rules"]) == 32
    assert generator["matrix"]["complete"] is True
    assert data["study"]["task_selection"]["check"]["order_reproduces"] is True
    assert data["study"]["hints"]["correlation"]["permutations"] == 99_999
    assert data["seeds"] == PUBLISHED_SEEDS


def test_every_new_table_downloads_and_its_plots_render(study, client, analyst):
    client.force_login(analyst)
    for slug in ("trimmed-lists", "ranking", "rule-enumeration", "originality", "hint-degree"):
        for file_format in ("png", "svg"):
            assert client.get(f"/benchmarks/{study.pk}/figures/{slug}.{file_format}").status_code == 200
    assert client.get(f"/benchmarks/{study.pk}/figures/rerun.png").status_code == 404  # a table without a plot


def test_reviewers_reach_none_of_the_analyses(study, client, reviewer):
    client.force_login(reviewer)
    for path in (
        f"/benchmarks/{study.pk}/figures/trimmed-lists.csv",
        f"/benchmarks/{study.pk}/figures/originality-pairs.csv",
        f"/benchmarks/{study.pk}/figures/hint-degree.png",
        f"/api/v1/benchmarks/{study.pk}/statistics?seed_auc=1",
    ):
        assert client.get(path).status_code == 403, path


# A set without the full matrix ----------------------------------------------------------------------------


def test_an_imported_set_without_the_full_matrix_says_so_instead_of_computing(db, client, analyst):
    hypotheses = [_hypothesis(i) for i in range(10)]
    for h in hypotheses[5:]:  # the second-stage models were not asked about what the first stage discarded
        h["forecasts"] = {"astra": False}
        h["selected"] = False
    benchmark = make_set(
        {
            "tasks": [task(key) for key in TASKS],
            "hypotheses": hypotheses,
            "scores": [s for h in hypotheses for s in scores(h["task"], h["id"], [0, 4, 4, 1])],
        }
    )
    client.force_login(analyst)
    page = client.get(f"/benchmarks/{benchmark.pk}/statistics/").content.decode()
    assert "the set lacks the full forecast matrix (15 of 40 answers of astra, gemini, grok, sonnet are missing" in page
    for figure in ("forecast-rules", "rule-enumeration", "best-single-model"):
        assert _csv(client, benchmark, figure) == []
    # A single-model list needs only that model's answers: astra was asked about every hypothesis, the others not.
    assert "Gen Alpha: no own list for gemini, grok, sonnet (not asked about every judged hypothesis" in page
    assert [row["model"] for row in _csv(client, benchmark, "trimmed-lists")] == ["whole set", "astra"]


def test_a_set_of_pooled_runs_lacks_the_matrix_and_the_page_says_so(db, scripted, client, analyst):
    script, server = scripted
    script.forecast["fc-astra"] = lambda items, attempt: forecast_reply({label: label != "H2" for label, _ in items})
    roster = make_roster(server.base_url, translator=None)
    benchmark = make_set({"tasks": [task("T1")]}, roster=roster)
    (run,) = benchmark_run(benchmark=benchmark)
    drive(run)
    cache.clear()
    client.force_login(analyst)
    data = client.get(f"/api/v1/benchmarks/{benchmark.pk}/statistics").json()
    statuses = [g["matrix"] for g in data["study"]["generators"]]
    assert any(not status["complete"] and status["missing_answers"] for status in statuses)
    assert all(g["rules"] is None for g in data["study"]["generators"] if not g["matrix"]["complete"])
    page = client.get(f"/benchmarks/{benchmark.pk}/statistics/").content.decode()
    assert "lacks the full forecast matrix" in page and "a set of pooled runs asks the second-stage models" in page


# The bundle ------------------------------------------------------------------------------------------------


def test_the_bundle_holds_analysis_json_and_two_builds_are_byte_identical(study, client, analyst):
    client.force_login(analyst)
    first = client.get(f"/api/v1/benchmarks/{study.pk}/bundle.zip").content
    cache.clear()  # the second build computes everything again
    second = client.get(f"/api/v1/benchmarks/{study.pk}/bundle.zip").content
    assert first == second
    archive = zipfile.ZipFile(io.BytesIO(first))
    assert "analysis.json" in archive.namelist()
    document = json.loads(archive.read("analysis.json"))
    assert document["seeds"] == PUBLISHED_SEEDS
    trimmed = document["sections"]["trimmed-lists"]["tables"]["trimmed-lists"]
    astra = dict(zip(trimmed["columns"], next(r for r in trimmed["rows"] if r[1] == "astra"), strict=True))
    assert (round(astra["mean"], 2), astra["low"], astra["high"]) == (8.96, 6, 12)
    checksums = archive.read("checksums.sha256").decode()
    assert f"{hashlib.sha256(archive.read('analysis.json')).hexdigest()}  analysis.json" in checksums


def test_without_quality_scores_the_pairs_to_score_are_offered(db, client, analyst):
    data = study_data()
    del data["quality_scores"]
    benchmark = make_set(data)
    client.force_login(analyst)
    pairs = _csv(client, benchmark, "originality-pairs")
    assert len(pairs) == 19 and all(row["excluded"] and not row["selected_clarity"] for row in pairs)
    assert len({row["excluded"] for row in pairs}) == 19  # no excluded hypothesis serves twice
    assert _csv(client, benchmark, "originality") == []
    page = client.get(f"/benchmarks/{benchmark.pk}/statistics/").content.decode()
    assert "these are the pairs to score" in page


# Figures ---------------------------------------------------------------------------------------------------------


def _drawn_texts(figure) -> list:
    """The texts a plot shows: titles, axis labels, the tick labels in view, legends and annotations."""
    texts = list(figure.texts)
    for axes in figure.axes:
        texts += [axes.title, axes.xaxis.label, axes.yaxis.label, *axes.texts]
        low, high = sorted(axes.get_xlim())
        texts += [label for label in axes.get_xticklabels() if low <= label.get_position()[0] <= high]
        low, high = sorted(axes.get_ylim())
        texts += [label for label in axes.get_yticklabels() if low <= label.get_position()[1] <= high]
        if axes.get_legend() is not None:
            texts += axes.get_legend().get_texts()
    return [text for text in texts if text.get_visible() and text.get_text().strip()]


def test_every_plot_keeps_its_titles_labels_and_ticks_inside_the_image(study):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    statistics = benchmark_statistics(study)
    cut = []
    for slug, spec in BENCHMARK_FIGURES.items():
        if spec.plot is None:
            continue
        figure = spec.plot(statistics)
        canvas = FigureCanvasAgg(figure)
        canvas.draw()
        renderer, frame = canvas.get_renderer(), figure.bbox
        for text in _drawn_texts(figure):
            box = text.get_window_extent(renderer)
            if box.x0 < frame.x0 - 1 or box.x1 > frame.x1 + 1 or box.y0 < frame.y0 - 1 or box.y1 > frame.y1 + 1:
                cut.append(f"{slug}: {text.get_text()!r}")
    assert not cut, cut

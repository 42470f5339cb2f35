"""Generation methods and re-generation (docs/analysis.md#generation-methods): the import of each hypothesis's method
and round and of the sets left out, and the section's numbers checked against scipy's permutation test, statsmodels'
Holm and counts and task resamples made here by hand."""

import csv
import io
import itertools

import numpy as np
import pytest
from django.urls import reverse
from openpyxl import Workbook
from scipy.stats import permutation_test
from statsmodels.stats.multitest import multipletests

from reviewapp.analysis import SEEDS
from reviewapp.benchmarks.models import BenchmarkHypothesis, ExcludedGenerationSet
from reviewapp.benchmarks.selectors import benchmark_statistics
from reviewapp.benchmarks.services.imports import benchmark_import_file
from reviewapp.benchmarks.study_tables import study_json
from reviewapp.services.imports import ImportInvalid
from tests import factories
from tests.api_schema_support import answer_problems, api_schema
from tests.benchmark_support import hypothesis, import_json, make_set, scores, task
from tests.browser_support import assert_page_fits, settle

TASKS = [f"T{i}" for i in range(1, 11)]
ONE, MULTI, OMEGA = "one request", "multi-step", "Omega Point"
# (generator, round, method) → the tasks where the set's two hypotheses match (first, second).
MATCHING = {
    ("Gen Alpha", 1, ONE): {"T1": (1, 1), "T2": (1, 0), "T3": (0, 1), "T5": (1, 0), "T8": (1, 1)},
    ("Gen Alpha", 1, MULTI): {"T1": (1, 0), "T2": (1, 1), "T4": (1, 0), "T7": (0, 1)},
    ("Gen Alpha", 1, OMEGA): {"T2": (1, 0)},
    ("Gen Alpha", 2, ONE): {"T1": (1, 0), "T3": (1, 1), "T5": (1, 0), "T6": (0, 1), "T9": (1, 1)},
    ("Gen Beta", 1, ONE): {"T1": (1, 0), "T4": (1, 1), "T6": (1, 0)},
    ("Gen Beta", 1, MULTI): {"T1": (1, 1), "T4": (1, 0), "T9": (1, 0), "T10": (0, 1)},
}
# Gen Alpha's re-generated one-request set of T3 was refused (its two hypotheses stand for it, both matching here only
# so that leaving it out changes the numbers); its Omega Point set of T4 holds a cut reply.
EXCLUDED = [
    {"task": "T3", "generator": "Gen Alpha", "generation_round": 2, "reason": "refusal", "note": "refused 6 times"},
    {"task": "T4", "generator": "Gen Alpha", "method": OMEGA, "reason": "cut_reply"},
]
MATCH, NO_MATCH = (5, 5, 5, 5), (0, 0, 0, 0)


def _key(generator: str, round_: int, method: str, task_key: str, n: int) -> str:
    return f"{generator[-4:]}-r{round_}-{method[:5].replace(' ', '')}-{task_key}-{n}"


def _data() -> dict:
    hypotheses, score_rows = [], []
    for (generator, round_, method), matching in MATCHING.items():
        for task_key in TASKS:
            for n, matches in enumerate(matching.get(task_key, (0, 0))):
                key = _key(generator, round_, method, task_key, n)
                fields = {"method": "" if method == ONE and round_ == 2 else method, "generation_round": round_}
                if (round_, method) == (1, ONE):
                    fields = {}  # blank: the first round's one request
                record = hypothesis(task_key, key, generator, **fields)
                if fields:
                    del record["selected"]  # only the main generation's hypotheses need their selection
                hypotheses.append(record)
                score_rows += scores(task_key, key, MATCH if matches else NO_MATCH)
    return {
        "tasks": [task(key) for key in TASKS],
        "hypotheses": hypotheses,
        "scores": score_rows,
        "excluded_sets": EXCLUDED,
    }


@pytest.fixture
def methods_set(db):
    return make_set(_data())


def _csv(client, benchmark, figure):
    response = client.get(f"/benchmarks/{benchmark.pk}/figures/{figure}.csv")
    assert response.status_code == 200
    return list(csv.DictReader(io.StringIO(response.content.decode())))


@pytest.fixture
def analyst(client):
    client.force_login(factories.make_user("analyst"))
    return client


def _shares(generator, round_, method, left_out=()) -> dict[str, float]:
    """Each task's match share, by hand from MATCHING (two hypotheses per task and set)."""
    matching = MATCHING[(generator, round_, method)]
    return {t: sum(matching.get(t, (0, 0))) / 2 for t in TASKS if t not in left_out}


def _bootstrap(first: dict, second: dict | None, seed: int, resamples: int = 10_000):
    """The documented task resamples (reviewapp.analysis._resampling): tasks in order of first appearance, drawn with
    numpy's default_rng(seed).integers(0, n, (resamples, n)); the 2.5 and 97.5 percentiles of the resampled rate, or
    of the difference of the two rates (equal counts per task: a rate is a mean of the task shares)."""
    tasks = list(first)
    drawn = np.random.default_rng(seed).integers(0, len(tasks), size=(resamples, len(tasks)))
    a = np.array([first[t] for t in tasks])[drawn].mean(axis=1)
    values = a if second is None else a - np.array([second[t] for t in tasks])[drawn].mean(axis=1)
    return np.percentile(values, [2.5, 97.5])


def _scipy_p(first: dict, second: dict) -> float:
    """The exact two-sided within-task permutation test by scipy: each task's pair of results swapped."""
    tasks = list(first)
    x, y = np.array([first[t] for t in tasks]), np.array([second[t] for t in tasks])
    result = permutation_test(
        (x, y), lambda a, b: np.mean(a) - np.mean(b), permutation_type="samples", n_resamples=np.inf
    )
    return float(result.pvalue)


def _smallest_p(first: dict, second: dict) -> float:
    """By hand: every swap of the differing tasks; the share of swaps at least as extreme as the most extreme one."""
    shifts = [first[t] - second[t] for t in first if first[t] != second[t]]
    differences = [
        abs(sum(s if keep else -s for s, keep in zip(shifts, signs, strict=True)))
        for signs in itertools.product((True, False), repeat=len(shifts))
    ]
    most = max(differences)
    return sum(d >= most - 1e-12 for d in differences) / len(differences)


def test_method_and_round_and_the_sets_left_out_are_imported(methods_set):
    stored = BenchmarkHypothesis.objects.get(benchmark=methods_set, key=_key("Gen Alpha", 1, OMEGA, "T2", 0))
    assert (stored.method, stored.generation_round) == (OMEGA, 1)
    first = BenchmarkHypothesis.objects.get(benchmark=methods_set, key=_key("Gen Alpha", 1, ONE, "T1", 0))
    assert (first.method, first.generation_round) == ("", None)
    excluded = ExcludedGenerationSet.objects.filter(benchmark_task__benchmark=methods_set).order_by("generation_round")
    assert [(e.benchmark_task.task.key, e.method, e.generation_round, e.reason) for e in excluded] == [
        ("T4", OMEGA, 1, "cut_reply"),
        ("T3", "", 2, "refusal"),
    ]
    assert import_json(methods_set, _data()).new_hypotheses == 0  # the same rows again: nothing new


def test_match_rates_per_method_and_round_with_task_resampled_intervals(methods_set, analyst):
    rows = {
        (r["generator"], r["generation_round"], r["method"], r["sets"]): r
        for r in _csv(analyst, methods_set, "generation-methods")
    }
    assert len(rows) == 12  # six generations, all sets and without the two left out
    seed = SEEDS["generation"]
    for (generator, round_, method), matching in MATCHING.items():
        row = rows[(generator, str(round_), method, "all sets")]
        assert int(row["judged"]) == 20 and int(row["matches"]) == sum(map(sum, matching.values()))
        low, high = _bootstrap(_shares(generator, round_, method), None, seed)
        assert float(row["match_rate_low"]) == pytest.approx(low, abs=1e-4)
        assert float(row["match_rate_high"]) == pytest.approx(high, abs=1e-4)
        assert row["seed"] == "20261025"
    without = rows[("Gen Alpha", "2", ONE, "without left-out sets")]
    assert (without["judged"], without["matches"], without["tasks"]) == ("18", "5", "9")


def test_the_re_generation_counts_tasks_better_worse_and_same_and_is_tested_exactly(methods_set, analyst):
    rows = {(r["generator"], r["sets"], r["method"]): r for r in _csv(analyst, methods_set, "regeneration")}
    row = rows[("Gen Alpha", "all sets", ONE)]
    later, first = _shares("Gen Alpha", 2, ONE), _shares("Gen Alpha", 1, ONE)
    assert (row["generation_round"], row["against_round"], row["tasks"]) == ("2", "1", "10")
    better = sum(later[t] > first[t] for t in TASKS)
    worse = sum(later[t] < first[t] for t in TASKS)
    assert (int(row["first_better"]), int(row["first_worse"]), int(row["same"])) == (better, worse, 10 - better - worse)
    assert float(row["difference"]) == pytest.approx(np.mean(list(later.values())) - np.mean(list(first.values())))
    low, high = _bootstrap(later, first, SEEDS["generation"])
    assert float(row["difference_low"]) == pytest.approx(low, abs=1e-4)
    assert float(row["difference_high"]) == pytest.approx(high, abs=1e-4)
    assert row["test"] == "exact"
    assert float(row["p_value"]) == pytest.approx(_scipy_p(later, first), abs=1e-6)
    assert float(row["smallest_p"]) == pytest.approx(_smallest_p(later, first), abs=1e-6)
    # The generator's only re-generated method: a family of one.
    assert row["holm_family"] == "1" and row["holm_p_value"] == row["p_value"]


def test_methods_are_compared_on_common_tasks_with_holm_within_the_generator_and_over_the_round(methods_set, analyst):
    rows = [r for r in _csv(analyst, methods_set, "generation-method-comparisons") if r["sets"] == "all sets"]
    pairs = [(r["generator"], r["generation_round"], r["first_method"], r["second_method"]) for r in rows]
    assert pairs == [
        ("Gen Alpha", "1", ONE, MULTI),
        ("Gen Alpha", "1", ONE, OMEGA),
        ("Gen Alpha", "1", MULTI, OMEGA),
        ("Gen Beta", "1", ONE, MULTI),
    ]
    expected = [_scipy_p(_shares(g, int(r), first), _shares(g, int(r), second)) for g, r, first, second in pairs]
    assert [float(r["p_value"]) for r in rows] == pytest.approx(expected, abs=1e-6)
    alpha = multipletests(expected[:3], method="holm")[1]
    assert [float(r["holm_p_value"]) for r in rows[:3]] == pytest.approx(list(alpha), abs=1e-6)
    assert [r["holm_family"] for r in rows] == ["3", "3", "3", "1"]
    every = multipletests(expected, method="holm")[1]
    assert [float(r["round_holm_p_value"]) for r in rows] == pytest.approx(list(every), abs=1e-6)
    assert {r["round_holm_family"] for r in rows} == {"4"}


def test_without_the_left_out_sets_a_comparison_runs_where_both_sets_remain(methods_set, analyst):
    rows = {
        (r["generator"], r["first_method"], r["second_method"]): r
        for r in _csv(analyst, methods_set, "generation-method-comparisons")
        if r["sets"] == "without left-out sets"
    }
    row = rows[("Gen Alpha", MULTI, OMEGA)]
    multi, omega = _shares("Gen Alpha", 1, MULTI, left_out={"T4"}), _shares("Gen Alpha", 1, OMEGA, left_out={"T4"})
    assert row["tasks"] == "9"
    assert float(row["p_value"]) == pytest.approx(_scipy_p(multi, omega), abs=1e-6)
    regeneration = {r["sets"]: r for r in _csv(analyst, methods_set, "regeneration") if r["generator"] == "Gen Alpha"}[
        "without left-out sets"
    ]
    later = _shares("Gen Alpha", 2, ONE, left_out={"T3"})
    first = _shares("Gen Alpha", 1, ONE, left_out={"T3"})
    assert regeneration["tasks"] == "9"
    assert float(regeneration["p_value"]) == pytest.approx(_scipy_p(later, first), abs=1e-6)
    left_out = _csv(analyst, methods_set, "excluded-sets")
    assert [(r["task"], r["method"], r["generation_round"], r["reason"], r["hypotheses"]) for r in left_out] == [
        ("T3", ONE, "2", "refused in every attempt", "2"),
        ("T4", OMEGA, "1", "refusal or cut reply in a stored step", "2"),
    ]


def test_the_other_analyses_read_the_first_rounds_one_request_generation(methods_set):
    statistics = benchmark_statistics(methods_set)
    assert statistics.hypotheses == 2 * len(TASKS) * 2  # two generators' first-round one-request sets
    rates = {rate.generator: rate for rate in statistics.study.generation}
    assert rates["Gen Alpha"].primary_matches == sum(map(sum, MATCHING[("Gen Alpha", 1, ONE)].values()))


def test_the_page_the_api_and_analysis_json_show_the_section(methods_set, analyst):
    page = analyst.get(f"/benchmarks/{methods_set.pk}/statistics/").content.decode()
    assert 'id="generation-methods"' in page and "Seed 001, appendix Н.1, Н.3, М.6" in page
    assert "Generation methods and re-generation" in page
    study = analyst.get(f"/api/v1/benchmarks/{methods_set.pk}/statistics").json()["study"]
    methods = study["generation_methods"]
    assert len(methods["rates"]) == 12 and len(methods["excluded"]) == 2
    regeneration = [c for c in methods["round_comparisons"] if c["sets"] == "all sets"][0]
    table = {r["sets"]: r for r in _csv(analyst, methods_set, "regeneration")}["all sets"]
    assert regeneration["test"]["p_value"] == pytest.approx(float(table["p_value"]), abs=1e-6)
    assert regeneration["test"]["smallest_p"] == pytest.approx(float(table["smallest_p"]), abs=1e-6)
    section = study_json(benchmark_statistics(methods_set))["sections"]["generation-methods"]
    assert section["seed"] == 20261025 and len(section["tables"]["generation-methods"]["rows"]) == 12
    figure = analyst.get(f"/benchmarks/{methods_set.pk}/figures/generation-methods.png")
    assert figure.status_code == 200 and figure["Content-Type"] == "image/png"


def test_the_sections_api_answer_matches_the_schema(methods_set, analyst):
    body = analyst.get(f"/api/v1/benchmarks/{methods_set.pk}/statistics").json()
    assert body["study"]["generation_methods"]["method_comparisons"]
    problems = answer_problems(api_schema(), "/api/v1/benchmarks/{benchmark_id}/statistics", "get", 200, body)
    assert problems == [], "\n".join(problems)


def test_a_set_of_one_method_says_what_to_import(db, analyst):
    benchmark = make_set(
        {"tasks": [task("T1")], "hypotheses": [hypothesis("T1", "h1")], "scores": scores("T1", "h1", MATCH)}
    )
    rows = _csv(analyst, benchmark, "generation-methods")
    assert rows == []
    page = analyst.get(f"/benchmarks/{benchmark.pk}/statistics/").content.decode()
    assert "method and generation_round" in page or "generation methods or rounds" in page


@pytest.mark.parametrize(
    ("table", "row", "field"),
    [
        ("hypotheses", {"generation_round": 0}, "generation_round"),
        ("hypotheses", {"generation_round": "second"}, "generation_round"),
        ("hypotheses", {"method": "", "selected": None}, "selected"),
        ("excluded_sets", {"reason": "tired"}, "reason"),
        ("excluded_sets", {"task": "T99"}, "task"),
        ("excluded_sets", {"generation_round": -1}, "generation_round"),
    ],
)
def test_a_bad_method_row_imports_nothing_and_is_named(db, table, row, field):
    benchmark = make_set({"tasks": [task("T1")]})
    data = {
        "hypotheses": [hypothesis("T1", "h1", method=MULTI), hypothesis("T1", "h2", method=MULTI)],
        "excluded_sets": [{"task": "T1", "generator": "Gen Alpha", "method": MULTI, "reason": "refusal"}],
    }
    data[table][-1].update(row)
    with pytest.raises(ImportInvalid) as caught:
        import_json(benchmark, data)
    assert [(p["table"], p["row"], p["field"]) for p in caught.value.problems] == [(table, len(data[table]), field)]
    assert not BenchmarkHypothesis.objects.filter(benchmark=benchmark).exists()
    assert not ExcludedGenerationSet.objects.filter(benchmark_task__benchmark=benchmark).exists()


def test_a_set_left_out_twice_in_one_file_or_differently_later_is_refused(db):
    benchmark = make_set({"tasks": [task("T1")]})
    twice = [
        {"task": "T1", "generator": "G", "reason": "refusal"},
        {"task": "T1", "generator": "G", "method": ONE, "generation_round": 1, "reason": "refusal"},
    ]
    with pytest.raises(ImportInvalid) as caught:
        import_json(benchmark, {"excluded_sets": twice})
    assert [(p["row"], p["field"]) for p in caught.value.problems] == [(2, "generator")]
    import_json(benchmark, {"excluded_sets": twice[:1]})
    with pytest.raises(ImportInvalid) as caught:
        import_json(benchmark, {"excluded_sets": [{**twice[0], "reason": "cut_reply"}]})
    assert caught.value.problems[0]["field"] == "reason"
    assert ExcludedGenerationSet.objects.get(benchmark_task__benchmark=benchmark).reason == "refusal"


def test_csv_and_xlsx_files_carry_method_round_and_the_sets_left_out(db):
    benchmark = make_set({"tasks": [task("T1")]})
    hypotheses_csv = (
        "task,id,generator,generator_company,statement,selected,method,generation_round\n"
        "T1,h1,Gen Alpha,Alpha Labs,Raising X extends lifespan.,true,multi-step,2\n"
    )
    benchmark_import_file(benchmark=benchmark, filename="h.csv", content=hypotheses_csv.encode(), user=None)
    excluded_csv = "task,generator,method,generation_round,reason,note\nT1,Gen Alpha,multi-step,2,cut_reply,cut\n"
    benchmark_import_file(benchmark=benchmark, filename="e.csv", content=excluded_csv.encode(), user=None)
    stored = BenchmarkHypothesis.objects.get(benchmark=benchmark, key="h1")
    assert (stored.method, stored.generation_round) == ("multi-step", 2)
    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "excluded_sets"
    sheet.append(["task", "generator", "method", "generation_round", "reason"])
    sheet.append(["T1", "Gen Beta", "Omega Point", 1, "refusal"])
    content = io.BytesIO()
    workbook.save(content)
    benchmark_import_file(benchmark=benchmark, filename="e.xlsx", content=content.getvalue(), user=None)
    assert sorted(
        ExcludedGenerationSet.objects.filter(benchmark_task__benchmark=benchmark).values_list(
            "generator", "method", "generation_round", "reason"
        )
    ) == [("Gen Alpha", "multi-step", 2, "cut_reply"), ("Gen Beta", "Omega Point", 1, "refusal")]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_filled_section_fits_a_phone_and_a_desktop_and_is_axe_clean(live_server, page, client, monkeypatch):
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # the ORM is used beside Playwright's event loop
    benchmark = make_set(_data())
    client.force_login(factories.make_user("analyst", username="analyst-methods"))
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    assert page.goto(live_server.url + reverse("benchmark-statistics", args=[benchmark.pk])).status == 200
    assert page.locator("nav.contents-bar a[href='#generation-methods'] + .badge").inner_text() == "filled"
    section = page.locator("section#generation-methods")
    assert "Seed 001, appendix Н.1" in section.locator("h2").inner_text()
    assert section.locator("table").count() == 5 and section.locator("img").count() >= 1
    section.scroll_into_view_if_needed()
    settle(page)
    assert_page_fits(page, "statistics page", "generation methods")

"""The forecast instructions compared and the favourable-direction rule on a 50/50 set (docs/analysis.md), each
checked against counts made by hand and intervals recomputed independently from the documented resample matrix."""

import csv
import io
import json
import zipfile

import numpy as np
import pytest
from sklearn.metrics import confusion_matrix

from reviewapp import analysis
from reviewapp.benchmarks.models import BenchmarkHypothesis
from reviewapp.benchmarks.services.imports import benchmark_import_file
from reviewapp.services.imports import ImportInvalid
from tests import factories
from tests.benchmark_support import hypothesis, import_json, make_set, scores, task

SEED, RESAMPLES = 20261026, 10_000


def _csv(client, benchmark, figure, query=""):
    response = client.get(f"/benchmarks/{benchmark.pk}/figures/{figure}.csv{query}")
    assert response.status_code == 200
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def _percentile_interval(tasks, top, bottom, seed=SEED, resamples=RESAMPLES):
    """The documented task bootstrap, written out: resample r draws default_rng(seed).integers(0, n, (R, n))[r]."""
    order = list(dict.fromkeys(tasks))
    code = np.array([order.index(t) for t in tasks])
    drawn = np.random.default_rng(seed).integers(0, len(order), size=(resamples, len(order)))
    values = []
    for r in range(resamples):
        weight = np.bincount(drawn[r], minlength=len(order))[code]
        denominator = (weight * bottom).sum()
        if denominator:
            values.append((weight * top).sum() / denominator)
    return np.percentile(values, [2.5, 97.5]), resamples - len(values)


# The four measures --------------------------------------------------------------------------------------------


def test_forecast_measures_agree_with_the_confusion_matrix_and_a_hand_written_bootstrap():
    tasks = ["T1"] * 4 + ["T2"] * 3 + ["T3"] * 5 + ["T4"] * 2
    answers = [1, 1, 0, 0, 1, 0, 0, 1, 1, 1, 0, 0, 0, 1]
    matches = [1, 0, 0, 1, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0]
    result = analysis.forecast_measures(tasks, [bool(a) for a in answers], [bool(m) for m in matches], seed=SEED)
    tn, fp, fn, tp = confusion_matrix(matches, answers).ravel()
    assert (result.true_positives, result.true_negatives, result.positives, result.matches) == (tp, tn, tp + fp, 5)
    assert result.sensitivity.value == pytest.approx(tp / (tp + fn))
    assert result.specificity.value == pytest.approx(tn / (tn + fp))
    assert result.precision.value == pytest.approx(tp / (tp + fp))
    assert result.negative_predictive_value.value == pytest.approx(tn / (tn + fn))
    a, m = np.array(answers), np.array(matches)
    for measure, top, bottom in (
        (result.sensitivity, a * m, m),
        (result.specificity, (1 - a) * (1 - m), 1 - m),
        (result.precision, a * m, a),
        (result.negative_predictive_value, (1 - a) * (1 - m), 1 - a),
    ):
        (low, high), undefined = _percentile_interval(tasks, top, bottom)
        assert (measure.low, measure.high, measure.undefined_resamples) == (
            pytest.approx(low),
            pytest.approx(high),
            undefined,
        )


# Instructions compared ----------------------------------------------------------------------------------------

# Six judged hypotheses over three tasks (Gen Alpha: its own judge is Alpha's, the other three decide); the matching
# ones are h1, h3 and h5.
MATCH = {"h1": True, "h2": False, "h3": True, "h4": False, "h5": True, "h6": False}
TASK_OF = {"h1": "T1", "h2": "T1", "h3": "T2", "h4": "T2", "h5": "T3", "h6": "T3"}
# model m1's answers per instruction (None: no usable answer); m2 answered the detailed instruction only.
M1 = {
    "detailed": {"h1": True, "h2": False, "h3": True, "h4": True, "h5": None, "h6": False},
    "short": {"h1": True, "h2": True, "h3": False, "h4": False, "h5": True, "h6": True},
}
M2_DETAILED = {"h1": False, "h2": False, "h3": True, "h4": False, "h5": True, "h6": False}


@pytest.fixture
def instructions_set(db):
    rows = [
        {"task": TASK_OF[h], "hypothesis": h, "instruction": instruction, "model": "m1", "answer": answer}
        for instruction, answers in M1.items()
        for h, answer in answers.items()
    ] + [
        {"task": TASK_OF[h], "hypothesis": h, "instruction": "detailed", "model": "m2", "answer": answer}
        for h, answer in M2_DETAILED.items()
    ]
    return make_set(
        {
            "tasks": [task(key) for key in ("T1", "T2", "T3")],
            "hypotheses": [hypothesis(TASK_OF[h], h) for h in MATCH],
            "scores": [
                row for h, match in MATCH.items() for row in scores(TASK_OF[h], h, [0] + [4 if match else 1] * 3)
            ],
            "instruction_forecasts": rows,
        }
    )


def test_each_pair_of_instructions_is_compared_on_the_hypotheses_answered_under_both(instructions_set, client):
    client.force_login(factories.make_user("analyst"))
    rows = {
        (row["pair"], row["instruction"], row["model"]): row
        for row in _csv(client, instructions_set, "instruction-pairs")
    }
    # m1 answered both on h1, h2, h3, h4, h6 (h5 has no detailed answer); m2 has no short answers: no pair.
    assert set(rows) == {("detailed / short", "detailed", "m1"), ("detailed / short", "short", "m1")}
    detailed, short = rows[("detailed / short", "detailed", "m1")], rows[("detailed / short", "short", "m1")]
    assert (detailed["hypotheses"], detailed["matches"], short["hypotheses"], short["matches"]) == ("5", "2", "5", "2")
    # By hand. Detailed on h1–h4, h6: yes h1 h3 h4; matches h1 h3 → sensitivity 2/2, specificity 2/3 (h2, h6 no),
    # precision 2/3, NPV 2/2. Short: yes h1 h2 h6 → sensitivity 1/2, specificity 1/3 (h4), precision 1/3, NPV 1/2.
    assert [float(detailed[k]) for k in ("sensitivity", "specificity", "precision", "negative_predictive_value")] == [
        1.0,
        pytest.approx(0.6667, abs=1e-4),
        pytest.approx(0.6667, abs=1e-4),
        1.0,
    ]
    assert [float(short[k]) for k in ("sensitivity", "specificity", "precision", "negative_predictive_value")] == [
        0.5,
        pytest.approx(0.3333, abs=1e-4),
        pytest.approx(0.3333, abs=1e-4),
        0.5,
    ]
    assert detailed["seed"] == "20261026"
    common = ["h1", "h2", "h3", "h4", "h6"]
    answers = np.array([M1["short"][h] for h in common], dtype=float)
    matches = np.array([MATCH[h] for h in common], dtype=float)
    (low, high), _ = _percentile_interval([TASK_OF[h] for h in common], answers * matches, answers)
    assert (float(short["precision_low"]), float(short["precision_high"])) == (
        pytest.approx(low, abs=1e-4),
        pytest.approx(high, abs=1e-4),
    )


def test_each_forecaster_is_measured_over_all_its_usable_answers(instructions_set, client):
    client.force_login(factories.make_user("analyst"))
    rows = {
        (row["instruction"], row["model"]): row for row in _csv(client, instructions_set, "instruction-forecasters")
    }
    assert set(rows) == {("detailed", "m1"), ("detailed", "m2"), ("short", "m1")}
    # The short question's m1 has six usable answers, one more than in the pair: yes h1 h2 h5 h6, matches h1 h3 h5.
    short = rows[("short", "m1")]
    assert (short["hypotheses"], short["positives"], short["matches"]) == ("6", "4", "3")
    assert (float(short["sensitivity"]), float(short["precision"])) == (pytest.approx(2 / 3, abs=1e-4), 0.5)
    m2 = rows[("detailed", "m2")]  # yes h3 h5, both matching; h1 missed
    assert [float(m2[k]) for k in ("sensitivity", "specificity", "precision", "negative_predictive_value")] == [
        pytest.approx(2 / 3, abs=1e-4),
        1.0,
        1.0,
        0.75,
    ]


def test_the_instruction_section_is_on_the_page_in_the_api_and_in_analysis_json(instructions_set, client):
    client.force_login(factories.make_user("analyst"))
    page = client.get(f"/benchmarks/{instructions_set.pk}/statistics/").content.decode()
    assert 'id="instruction-comparison"' in page and "Seed 001, appendix Г" in page
    assert client.get(f"/benchmarks/{instructions_set.pk}/figures/instruction-forecasters.png").status_code == 200
    study = client.get(f"/api/v1/benchmarks/{instructions_set.pk}/statistics").json()["study"]
    comparison = study["instruction_comparison"]
    assert comparison["instructions"] == ["detailed", "short"]
    assert [(p["first"], p["second"], p["model"], p["hypotheses"]) for p in comparison["pairs"]] == [
        ("detailed", "short", "m1", 5)
    ]
    archive = zipfile.ZipFile(io.BytesIO(client.get(f"/api/v1/benchmarks/{instructions_set.pk}/bundle.zip").content))
    section = json.loads(archive.read("analysis.json"))["sections"]["instruction-comparison"]
    assert section["appendix"] == "Г" and section["seed"] == 20261026
    assert len(section["tables"]["instruction-forecasters"]["rows"]) == 3


def test_without_a_second_instruction_the_section_names_the_table_to_import(db, client):
    benchmark = make_set({"tasks": [task("T1")], "hypotheses": [hypothesis("T1", "h1")]})
    client.force_login(factories.make_user("analyst"))
    page = client.get(f"/benchmarks/{benchmark.pk}/statistics/").content.decode()
    section = page[page.index('id="instruction-comparison"') :][:3000]
    assert "instruction_forecasts" in section


# The favourable-direction rule --------------------------------------------------------------------------------

# Five articles (c: confirmed, r: reversed) with the rule's labels (F favourable, U unfavourable, "" none) and two
# forecasters' answers.
STATEMENTS = {
    ("A1", "c"): ("F", {"m1": True, "m2": True}),
    ("A1", "r"): ("U", {"m1": False, "m2": True}),
    ("A2", "c"): ("F", {"m1": True, "m2": False}),
    ("A2", "r"): ("F", {"m1": True, "m2": False}),
    ("A3", "c"): ("U", {"m1": False, "m2": True}),
    ("A3", "r"): ("", {"m1": False, "m2": False}),
    ("A4", "c"): ("", {"m1": True, "m2": False}),
    ("A4", "r"): ("", {"m1": True, "m2": True}),
    ("A5", "c"): ("F", {"m1": True, "m2": True}),
    ("A5", "r"): ("U", {"m1": False, "m2": None}),
}
LABEL = {"F": "favourable", "U": "unfavourable", "": "unlabelled"}


@pytest.fixture
def direction_set(db):
    return make_set(
        {
            "tasks": [task(key) for key in ("A1", "A2", "A3", "A4", "A5")],
            "hypotheses": [
                hypothesis(article, f"{article}-{kind}", confirmed=kind == "c", forecasts=answers)
                for (article, kind), (_, answers) in STATEMENTS.items()
            ],
            "directions": [
                {"task": article, "hypothesis": f"{article}-{kind}", "direction": LABEL[label]}
                for (article, kind), (label, _) in STATEMENTS.items()
            ],
        }
    )


def test_the_labels_are_counted_by_result(direction_set, client):
    client.force_login(factories.make_user("analyst"))
    rows = {row["statements"]: row for row in _csv(client, direction_set, "direction-labels")}
    # Confirmed: F F U "" F; reversed: U F "" "" U.
    assert [rows["confirmed"][k] for k in ("count", "favourable", "unfavourable", "unlabelled")] == ["5", "3", "1", "1"]
    assert [rows["reversed"][k] for k in ("count", "favourable", "unfavourable", "unlabelled")] == ["5", "1", "2", "2"]
    assert [rows["all"][k] for k in ("count", "favourable", "unfavourable", "unlabelled")] == ["10", "4", "3", "3"]


def test_accuracy_is_given_apart_on_labelled_and_unlabelled_statements(direction_set, client):
    client.force_login(factories.make_user("analyst"))
    rows = {row["rule"]: row for row in _csv(client, direction_set, "direction-accuracy")}
    # The rule on its 7 labelled statements: right on A1-c, A1-r, A2-c, A5-c, A5-r; wrong on A2-r (favourable but
    # reversed) and A3-c (unfavourable but confirmed): 5 of 7.
    rule = rows["favourable-direction rule"]
    assert (rule["labelled"], float(rule["labelled_accuracy"]), rule["unlabelled"]) == (
        "7",
        pytest.approx(5 / 7, abs=1e-4),
        "0",
    )
    # m1 labelled: A1-c ✓, A1-r ✓, A2-c ✓, A2-r ✗, A3-c ✗, A5-c ✓, A5-r ✓ → 5/7; same answer as the rule on all 7.
    # m1 unlabelled: A3-r ✓ (no), A4-c ✓, A4-r ✗ → 2/3.
    m1 = rows["m1"]
    assert (m1["labelled"], float(m1["labelled_accuracy"]), float(m1["agreement_with_rule"])) == (
        "7",
        pytest.approx(5 / 7, abs=1e-4),
        1.0,
    )
    assert (m1["unlabelled"], float(m1["unlabelled_accuracy"])) == ("3", pytest.approx(2 / 3, abs=1e-4))
    # m2 labelled (A5-r unanswered): A1-c ✓, A1-r ✗, A2-c ✗, A2-r ✓, A3-c ✓, A5-c ✓ → 4/6; the rule's answers
    # (yes no yes yes no yes) against m2's (yes yes no no yes yes): 2 of 6 equal.
    m2 = rows["m2"]
    assert (m2["labelled"], float(m2["labelled_accuracy"]), float(m2["agreement_with_rule"])) == (
        "6",
        pytest.approx(4 / 6, abs=1e-4),
        pytest.approx(2 / 6, abs=1e-4),
    )
    assert m1["seed"] == "20261030"
    # m1's interval on the labelled statements from the documented resamples of whole articles.
    labelled = [(a, k) for (a, k), (label, _) in STATEMENTS.items() if label]
    right = np.array(
        [STATEMENTS[key][1]["m1"] == (key[1] == "c") for key in labelled],
        dtype=float,
    )
    (low, high), _ = _percentile_interval([a for a, _ in labelled], right, np.ones(len(labelled)), seed=20261030)
    assert (float(m1["labelled_accuracy_low"]), float(m1["labelled_accuracy_high"])) == (
        pytest.approx(low, abs=1e-4),
        pytest.approx(high, abs=1e-4),
    )


def test_decisions_on_the_pairs_the_rule_labelled_twice(direction_set, client):
    client.force_login(factories.make_user("analyst"))
    rows = {row["rule"]: row for row in _csv(client, direction_set, "direction-pair-decisions")}
    columns = ("pairs", "accepts_confirmed_only", "accepts_both", "rejects_both", "accepts_reversed_only")
    # Labelled twice: A1 (F, U), A2 (F, F), A5 (F, U). The rule: A1 right, A2 accepts both, A5 right.
    assert [rows["favourable-direction rule"][c] for c in columns] == ["3", "2", "1", "0", "0"]
    # m1: A1 right, A2 both, A5 right; m2: A1 both, A2 rejects both, A5 no answer on the reversed.
    assert [rows["m1"][c] for c in columns] == ["3", "2", "1", "0", "0"]
    assert [rows["m2"][c] for c in columns] + [rows["m2"]["without_answer"]] == ["3", "0", "1", "1", "0", "1"]
    pairs = _csv(client, direction_set, "direction-pairs")
    assert [(p["task"], p["confirmed_direction"], p["reversed_direction"]) for p in pairs][2] == (
        "A3",
        "unfavourable",
        "unlabelled",
    )


def test_the_direction_section_is_on_the_page_in_the_api_and_in_analysis_json(direction_set, client):
    client.force_login(factories.make_user("analyst"))
    page = client.get(f"/benchmarks/{direction_set.pk}/statistics/").content.decode()
    assert 'id="direction-rule"' in page and "Seed 001, appendix Л.4, Н.8" in page
    assert client.get(f"/benchmarks/{direction_set.pk}/figures/direction-accuracy.svg").status_code == 200
    rule = client.get(f"/api/v1/benchmarks/{direction_set.pk}/statistics").json()["study"]["direction_rule"]
    assert (rule["labels"]["labelled"], rule["labelled_pairs"]) == (7, 3)
    archive = zipfile.ZipFile(io.BytesIO(client.get(f"/api/v1/benchmarks/{direction_set.pk}/bundle.zip").content))
    section = json.loads(archive.read("analysis.json"))["sections"]["direction-rule"]
    assert section["appendix"] == "Л.4, Н.8" and section["seed"] == 20261030


# The import -----------------------------------------------------------------------------------------------------


def test_bad_rows_of_both_tables_are_each_named_and_nothing_is_written(direction_set):
    bad = {
        "instruction_forecasts": [
            {"task": "A1", "hypothesis": "A1-c", "instruction": "short", "model": "m1", "answer": True},
            {"task": "A1", "hypothesis": "A1-c", "instruction": "verbose", "model": "m1", "answer": True},
            {"task": "A1", "hypothesis": "nope", "instruction": "single", "model": "m1", "answer": True},
            {"task": "A1", "hypothesis": "A1-c", "instruction": "short", "model": "m1", "answer": False},
            {"task": "A1", "hypothesis": "A1-r", "instruction": "single", "model": "m1", "answer": "maybe"},
        ],
        "directions": [
            {"task": "A1", "hypothesis": "A1-c", "direction": "upwards"},
            {"task": "A1", "hypothesis": "A1-c", "direction": "unfavourable"},  # labelled favourable already
        ],
    }
    with pytest.raises(ImportInvalid) as refusal:
        import_json(direction_set, bad, filename="bad.json")
    named = {(p["table"], p["row"], p["field"]) for p in refusal.value.rows}
    assert {
        ("instruction_forecasts", 2, "instruction"),
        ("instruction_forecasts", 3, "hypothesis"),
        ("instruction_forecasts", 4, "model"),
        ("instruction_forecasts", 5, "answer"),
        ("directions", 1, "direction"),
        ("directions", 2, "direction"),
    } <= named, refusal.value.rows
    assert not any(h.instruction_forecasts for h in BenchmarkHypothesis.objects.filter(benchmark=direction_set))


def test_instruction_answers_and_labels_are_added_never_overwritten_and_read_from_csv(direction_set):
    content = "task,hypothesis,instruction,model,answer\nA1,A1-c,single,m1,yes\nA1,A1-c,detailed,m1,\n"
    benchmark_import_file(benchmark=direction_set, filename="i.csv", content=content.encode(), user=None)
    stored = BenchmarkHypothesis.objects.get(benchmark=direction_set, key="A1-c")
    assert stored.instruction_forecasts == {"single": {"m1": True}, "detailed": {"m1": None}}
    assert stored.direction == "favourable"
    again = "task,hypothesis,instruction,model,answer\nA1,A1-c,single,m1,no\n"
    with pytest.raises(ImportInvalid) as refusal:
        benchmark_import_file(benchmark=direction_set, filename="j.csv", content=again.encode(), user=None)
    assert refusal.value.rows[0]["field"] == "answer"


# The typed answer ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fixture", ["instructions_set", "direction_set"])
def test_the_filled_sections_match_the_statistics_schema(fixture, request, db, client):
    from tests.api_schema_support import answer_problems, api_schema

    benchmark = request.getfixturevalue(fixture)
    client.force_login(factories.make_user("analyst"))
    body = client.get(f"/api/v1/benchmarks/{benchmark.pk}/statistics").json()
    assert body["study"]["instruction_comparison" if fixture == "instructions_set" else "direction_rule"]
    problems = answer_problems(api_schema(), "/api/v1/benchmarks/{benchmark_id}/statistics", "get", 200, body)
    assert problems == [], "\n".join(problems)


def test_an_empty_sections_reason_shared_by_its_tables_is_said_once(db, client):
    benchmark = make_set({"tasks": [task("T1")], "hypotheses": [hypothesis("T1", "h1")]})
    client.force_login(factories.make_user("analyst"))
    page = client.get(f"/benchmarks/{benchmark.pk}/statistics/").content.decode()
    section = page[page.index('id="instruction-comparison"') :]
    section = section[: section.index("</section>")]
    assert section.count("have answers under fewer than two instructions") == 1

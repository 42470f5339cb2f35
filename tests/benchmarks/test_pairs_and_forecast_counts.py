"""Decisions within the pairs of a 50/50 set and the estimated number of forecasts (docs/analysis.md), each checked
against counts made by hand for a small set."""

import csv
import io

import pytest

from tests import factories
from tests.benchmark_support import hypothesis, make_set, task

# Three articles, each a confirmed (c) and a reversed (r) statement; three forecasters.
ANSWERS = {
    ("T1", "c"): {"m1": True, "m2": True, "m3": False},
    ("T1", "r"): {"m1": False, "m2": True, "m3": False},
    ("T2", "c"): {"m1": True, "m2": False, "m3": True},
    ("T2", "r"): {"m1": True, "m2": False, "m3": None},
    ("T3", "c"): {"m1": False, "m2": False, "m3": True},
    ("T3", "r"): {"m1": True, "m2": True, "m3": False},
}


@pytest.fixture
def pairs_set(db):
    return make_set(
        {
            "tasks": [task(key) for key in ("T1", "T2", "T3")],
            "hypotheses": [
                hypothesis(key, f"{key}-{kind}", confirmed=kind == "c", forecasts=answers, first_stage=answers["m1"])
                for (key, kind), answers in ANSWERS.items()
            ],
        }
    )


def _csv(client, benchmark, figure):
    response = client.get(f"/benchmarks/{benchmark.pk}/figures/{figure}.csv")
    assert response.status_code == 200
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_each_pair_gets_one_of_the_four_decisions_and_the_columns_sum_to_the_pairs(pairs_set, client):
    client.force_login(factories.make_user("analyst"))
    rows = {row["rule"]: row for row in _csv(client, pairs_set, "pair-decisions")}
    columns = ("accepts_confirmed_only", "accepts_both", "rejects_both", "accepts_reversed_only", "without_answer")
    # By hand: m1 T1 right, T2 both, T3 wrong; m2 T1 both, T2 neither, T3 wrong; m3 T1 neither, T2 no answer, T3 right.
    assert [rows["m1"][c] for c in columns] == ["1", "1", "0", "1", "0"]
    assert [rows["m2"][c] for c in columns] == ["0", "1", "1", "1", "0"]
    assert [rows["m3"][c] for c in columns] == ["1", "0", "1", "0", "1"]
    # Majority (more than half of those that answered): T1 c yes (2 of 3), r no (1 of 3): right; T2 c yes (2 of 3),
    # r no (1 of 2, not more than half): right; T3 c no (1 of 3), r yes (2 of 3): wrong.
    assert [rows["majority"][c] for c in columns] == ["2", "0", "0", "1", "0"]
    # Unanimity: T1 c no, r no → rejects both; T2 c no, r no → rejects both; T3 c no, r no → rejects both.
    assert [rows["unanimity"][c] for c in columns] == ["0", "0", "3", "0", "0"]
    assert all(sum(int(row[c]) for c in columns) == int(row["pairs"]) == 3 for row in rows.values())
    assert "random control" not in rows  # imported statements carry no drawn answers


def test_forecasts_are_counted_once_per_model_and_hypothesis_and_estimated_per_design(pairs_set, client):
    client.force_login(factories.make_user("analyst"))
    held = {(row["round"], row["model"]): row for row in _csv(client, pairs_set, "forecast-counts")}
    assert (held[("first", "m1")]["forecasts"], held[("first", "m1")]["usable"]) == ("6", "6")
    assert (held[("first", "m3")]["forecasts"], held[("first", "m3")]["usable"]) == ("6", "5")
    assert held[("first", "all models")]["forecasts"] == "18" and held[("first", "all models")]["usable"] == "17"
    designs = {(row["design"], row["stage"]): row["forecasts"] for row in _csv(client, pairs_set, "design-forecasts")}
    # Six hypotheses, stage 1 (m1) kept four (T1-c, T2-c, T2-r, T3-r), two second-stage models.
    assert designs == {("pooled", "1"): "6", ("pooled", "2"): "8", ("seed-001", "1"): "6", ("seed-001", "2"): "12"}


def test_the_page_and_the_api_show_both_sections(pairs_set, client):
    client.force_login(factories.make_user("analyst"))
    page = client.get(f"/benchmarks/{pairs_set.pk}/statistics/").content.decode()
    assert 'id="pair-decisions"' in page and 'id="forecast-counts"' in page
    assert "Seed 001, appendix Л.4" in page and "Seed 001, appendix Н.4" in page
    study = client.get(f"/api/v1/benchmarks/{pairs_set.pk}/statistics").json()["study"]
    assert {item["rule"] for item in study["pair_decisions"]} == {"m1", "m2", "m3", "majority", "unanimity"}
    assert sum(item["forecasts"] for item in study["forecast_counts"]) == 18

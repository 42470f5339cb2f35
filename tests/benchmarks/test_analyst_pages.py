"""The analysts' statistics pages: a benchmark set's statistics and a cohort's human review analysis, each table
downloadable as CSV and each plot as PNG and SVG; hidden from reviewers."""

import csv
import io

import pytest
from scipy.stats import hypergeom
from sklearn.metrics import cohen_kappa_score

from reviewapp.services.reviews import review_submit
from tests import factories
from tests.benchmark_support import hypothesis, import_json, make_set, scores, task

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def benchmark(db):
    """Gen Alpha: four judged hypotheses over two tasks, two selected, two matching; one of each selected."""
    return make_set(
        {
            "tasks": [task("T1"), task("T2")],
            "hypotheses": [
                hypothesis("T1", "a1", selected=True, forecasts={"m1": True, "m2": True}),
                hypothesis("T1", "a2", selected=False, forecasts={"m1": True, "m2": False}),
                hypothesis("T2", "a3", selected=True, forecasts={"m1": True, "m2": True}),
                hypothesis("T2", "a4", selected=False, forecasts={"m1": False, "m2": True}),
            ],
            "scores": scores("T1", "a1", [0, 4, 4, 1])
            + scores("T1", "a2", [0, 3, 0, 3])
            + scores("T2", "a3", [5, 1, 2, 0])
            + scores("T2", "a4", [1, 0, 0, 0]),
        }
    )


def _csv(response) -> list[dict]:
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(response.content.decode())))


@pytest.mark.parametrize("role", ["analyst", "coordinator"])
def test_analysts_and_coordinators_read_the_statistics_page(benchmark, client, role, request):
    client.force_login(request.getfixturevalue(role))
    response = client.get(f"/benchmarks/{benchmark.pk}/statistics/")
    page = response.content.decode()
    assert response.status_code == 200
    assert "Enrichment of the selection per generator" in page and "Judge-vote distribution" in page
    assert "<strong>10000</strong> resamples" in page
    assert "50.0% [" in page  # precision of Gen Alpha's selection, 1 of 2, with its interval
    for figure in ("enrichment", "judge-votes", "agreement"):
        for file_format in ("csv", "png", "svg"):
            assert f"/benchmarks/{benchmark.pk}/figures/{figure}.{file_format}" in page


def test_reviewers_reach_no_statistics(benchmark, client, reviewer):
    cohort = factories.make_cohort([factories.make_proposal()])
    client.force_login(reviewer)
    for path in (
        f"/benchmarks/{benchmark.pk}/statistics/",
        f"/benchmarks/{benchmark.pk}/figures/enrichment.png",
        f"/benchmarks/{benchmark.pk}/figures/agreement.csv",
        f"/api/v1/benchmarks/{benchmark.pk}/statistics",
        f"/cohorts/{cohort.pk}/statistics/",
        f"/cohorts/{cohort.pk}/figures/revisions.svg",
    ):
        assert client.get(path).status_code == 403, path


def test_the_enrichment_table_matches_a_hand_computation(benchmark, client, analyst):
    client.force_login(analyst)
    (row,) = _csv(client.get(f"/benchmarks/{benchmark.pk}/figures/enrichment.csv"))
    # Matches (two of Beta, Gamma, Delta at ≥ 3): a1 yes (4, 4), a2 no (3, 0, 3 → yes!), a3 no, a4 no.
    assert (row["generator"], row["hypotheses"], row["judged"], row["matches"]) == ("Gen Alpha", "4", "4", "2")
    assert (row["selected"], row["selected_matches"]) == ("2", "1")
    assert float(row["precision"]) == 0.5 and float(row["base_rate"]) == 0.5
    assert float(row["enrichment"]) == 1.0 and float(row["sensitivity"]) == 0.5
    assert float(row["random_list_mean"]) == pytest.approx(hypergeom(M=4, n=2, N=2).mean())
    assert (row["random_list_low"], row["random_list_high"]) == ("0", "2")
    assert float(row["precision_low"]) <= 0.5 <= float(row["precision_high"])
    assert row["resamples"] == "10000" and row["seed"] == "20261026"


def test_the_vote_distribution_and_agreement_match_independent_counts(benchmark, client, analyst):
    client.force_login(analyst)
    votes = _csv(client.get(f"/benchmarks/{benchmark.pk}/figures/judge-votes.csv"))
    primary = {row["judges_voting"]: int(row["hypotheses"]) for row in votes if row["threshold"] == "3"}
    # Deciding judges (Beta, Gamma, Delta): a1 4,4,1 → 2; a2 3,0,3 → 2; a3 1,2,0 → 0; a4 0,0,0 → 0.
    assert primary == {"0": 2, "1": 0, "2": 2, "3": 0}
    pairs = _csv(client.get(f"/benchmarks/{benchmark.pk}/figures/agreement.csv"))
    beta_gamma = next(row for row in pairs if (row["judge_a"], row["judge_b"]) == ("Judge Beta", "Judge Gamma"))
    beta, gamma = [4, 3, 1, 0], [4, 0, 2, 0]
    expected = cohen_kappa_score([s >= 3 for s in beta], [s >= 3 for s in gamma])
    assert float(beta_gamma["kappa"]) == pytest.approx(expected, abs=1e-4)
    assert beta_gamma["hypotheses"] == "4" and len(pairs) == 6


def test_plots_download_as_png_and_svg(benchmark, client, coordinator):
    client.force_login(coordinator)
    for figure in ("enrichment", "judge-votes", "agreement"):
        png = client.get(f"/benchmarks/{benchmark.pk}/figures/{figure}.png")
        svg = client.get(f"/benchmarks/{benchmark.pk}/figures/{figure}.svg")
        assert png.status_code == svg.status_code == 200
        assert png["Content-Type"] == "image/png" and png.content.startswith(PNG_MAGIC)
        assert svg["Content-Type"] == "image/svg+xml" and b"<svg" in svg.content
    assert client.get(f"/benchmarks/{benchmark.pk}/figures/nonsense.csv").status_code == 404
    lists = _csv(client.get(f"/benchmarks/{benchmark.pk}/figures/trimmed-lists.csv"))
    m1 = next(row for row in lists if row["model"] == "m1")
    # m1 said yes to a1, a2, a3 (matching a1, a2); cut to the group's two: mean 2 × 2/3.
    assert (m1["yes"], m1["yes_matching"], m1["group_list_length"]) == ("3", "2", "2")
    assert float(m1["mean"]) == pytest.approx(4 / 3, abs=1e-4)


def test_imported_names_start_no_formula_in_an_analysis_csv(db, client, analyst):
    benchmark = make_set(
        {
            "tasks": [task("T1")],
            "hypotheses": [
                hypothesis(
                    "T1",
                    f"a{n}",
                    generator="=Gen",
                    generator_company="Alpha Labs",
                    selected=selected,
                    forecasts={"@model": True},
                )
                for n, selected in ((1, True), (2, False))
            ],
            "scores": scores("T1", "a1", [0, 4, 4, 1]) + scores("T1", "a2", [0, 3, 0, 3]),
        }
    )
    client.force_login(analyst)
    rows = _csv(client.get(f"/benchmarks/{benchmark.pk}/figures/trimmed-lists.csv"))
    assert [(row["generator"], row["model"]) for row in rows] == [("'=Gen", "whole set"), ("'=Gen", "'@model")]


def test_an_empty_set_still_has_its_pages_and_plots(db, client, analyst):
    benchmark = make_set()
    client.force_login(analyst)
    assert client.get(f"/benchmarks/{benchmark.pk}/statistics/").status_code == 200
    for figure in ("enrichment", "judge-votes", "agreement"):
        assert client.get(f"/benchmarks/{benchmark.pk}/figures/{figure}.png").content.startswith(PNG_MAGIC)
        assert len(_csv(client.get(f"/benchmarks/{benchmark.pk}/figures/{figure}.csv"))) == 0


def test_new_scores_change_the_statistics(benchmark, client, analyst):
    client.force_login(analyst)
    before = _csv(client.get(f"/benchmarks/{benchmark.pk}/figures/enrichment.csv"))[0]
    import_json(
        benchmark,
        {"hypotheses": [hypothesis("T2", "a5", selected=True)], "scores": scores("T2", "a5", [0, 4, 4, 4])},
    )
    after = _csv(client.get(f"/benchmarks/{benchmark.pk}/figures/enrichment.csv"))[0]
    assert (before["selected_matches"], after["selected_matches"]) == ("1", "2")


def test_the_statistics_api_gives_the_same_figures(benchmark, client, analyst):
    client.force_login(analyst)
    data = client.get(f"/api/v1/benchmarks/{benchmark.pk}/statistics").json()
    (alpha,) = data["generators"]
    assert alpha["primary"]["precision"]["value"] == 0.5 and data["resamples"] == 10_000
    assert data["votes_primary"]["hypotheses_by_votes"] == [2, 0, 2, 0]


# Human review of a cohort ----------------------------------------------------------------------------------------


def _review(cohort, reviewer, proposal, overall: str, importance: str = "3"):
    assignment = factories.make_assignment(cohort, reviewer, proposal)
    criteria = ("advance_over_known_work", "plausible_evidence_bounded", "data_fit", "alternative_explanations")
    data = {
        "overall": int(overall),
        "recommendation": "revise",
        "importance": importance,
        **dict.fromkeys(criteria, "2"),
        "informative_results": "cant_judge",
        "flaw_verdict": "fixable",
    }
    return review_submit(assignment=assignment, reviewer=reviewer, answers=data, version=0)


@pytest.fixture
def reviewed_cohort(db):
    task_record = factories.make_task()
    parent = factories.make_proposal(task=task_record, author="Model A")
    child = factories.make_proposal(task=task_record, author="Model A")
    other_parent = factories.make_proposal(task=task_record, author="Model B")
    other_child = factories.make_proposal(task=task_record, author="Model B")
    child.parents.add(parent)
    other_child.parents.add(other_parent)
    cohort = factories.make_cohort([parent, child, other_parent, other_child], status="open")
    first, second = factories.make_user("reviewer"), factories.make_user("reviewer")
    # Model A's revision: 2, 3 → 4, 4 (improved by 1.5); Model B's: 4, 4 → 3, 5 (unchanged).
    for proposal, (a, b) in (
        (parent, ("2", "3")),
        (child, ("4", "4")),
        (other_parent, ("4", "4")),
        (other_child, ("3", "5")),
    ):
        _review(cohort, first, proposal, a, importance="3")
        _review(cohort, second, proposal, b, importance="3" if proposal is not other_child else "1")
    return cohort


@pytest.mark.parametrize("role", ["analyst", "coordinator"])
def test_the_cohort_analysis_page_shows_revisions_and_agreement(reviewed_cohort, client, role, request):
    client.force_login(request.getfixturevalue(role))
    response = client.get(f"/cohorts/{reviewed_cohort.pk}/statistics/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "Revision outcomes" in page and "Reviewer agreement per criterion" in page and "Model A" in page


def test_revision_outcomes_per_author(reviewed_cohort, client, analyst):
    client.force_login(analyst)
    rows = {row["author"]: row for row in _csv(client.get(f"/cohorts/{reviewed_cohort.pk}/figures/revisions.csv"))}
    assert (rows["Model A"]["improved"], float(rows["Model A"]["mean_change"])) == ("1", 1.5)
    assert (rows["Model B"]["unchanged"], float(rows["Model B"]["mean_change"])) == ("1", 0.0)
    assert (rows["All authors"]["pairs"], float(rows["All authors"]["mean_change"])) == ("2", 0.75)


def test_reviewer_agreement_counts_cant_judge_apart(reviewed_cohort, client, analyst):
    client.force_login(analyst)
    rows = {
        r["criterion"]: r for r in _csv(client.get(f"/cohorts/{reviewed_cohort.pk}/figures/reviewer-agreement.csv"))
    }
    informative = rows["informative_results"]
    assert (informative["ratings"], informative["cant_judge"], informative["reviewer_pairs"]) == ("0", "8", "0")
    importance = rows["importance"]
    # Four proposals, one pair each; the pairs agree on three of them.
    assert (importance["reviewer_pairs"], float(importance["exact_agreement"])) == ("4", 0.75)


def test_cohort_plots_download_as_png_and_svg(reviewed_cohort, client, analyst):
    client.force_login(analyst)
    for figure in ("revisions", "reviewer-agreement"):
        png = client.get(f"/cohorts/{reviewed_cohort.pk}/figures/{figure}.png")
        svg = client.get(f"/cohorts/{reviewed_cohort.pk}/figures/{figure}.svg")
        assert png.content.startswith(PNG_MAGIC) and b"<svg" in svg.content

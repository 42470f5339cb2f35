"""The Evaluation pages: the five levels per author model with counts beside shares, a run's research tree drawn as
SVG, a path with its assessment and the human criterion means, the families recorded from their page, and the CSV
files."""

import csv
import io

from django.urls import reverse

from reviewapp.panel.models import ContributionFamily, FamilyMember
from reviewapp.panel.services.panel import panel_start_for_cohort
from reviewapp.services import jobs
from tests.panel.test_levels_api import cohort  # noqa: F401 (the fixture)


def test_the_evaluation_page_shows_every_level_per_author(client, cohort, coordinator, analyst):  # noqa: F811
    jobs.job_run(job_id=panel_start_for_cohort(cohort=cohort, user=coordinator).pk)
    client.force_login(analyst)
    page = client.get(reverse("panel-evaluation", args=[cohort.pk])).content.decode()
    levels = page.split('id="levels"')[1].split("</section>")[0]
    assert "All authors" in levels and ">M<" in levels and ">N<" in levels
    assert "3 of 3 (100.00%) (3 · 0 · 0)" in levels  # substantive progress: count, total, share, coverage
    assert "75.00 (3 of 3 of 3)" in levels  # paths: mean composite (full of assessed of total)
    run = client.get(reverse("panel-evaluation-run", args=[cohort.pk, "run-1"])).content.decode()
    assert "<svg" in run and run.count('class="tree-edge on-path"') == 2
    assert "stage-selected" in run and "branch" in run
    path = client.get(reverse("panel-evaluation-path", args=[cohort.pk, "a"])).content.decode()
    assert "Cumulative progress" in path and "“Claim quoted.”" in path
    assert "No version of this path has a submitted human review" in path


def test_a_context_parent_is_drawn_dashed(client, coordinator):
    from tests.panel.support import make_cohort, proposal

    crossed = make_cohort(
        [
            proposal("p1", "T", author="A"),
            proposal("p2", "T", author="A", parents=["p1", "q1"]),
            proposal("q1", "T", author="B"),
        ],
        user=coordinator,
    )
    client.force_login(coordinator)
    run = client.get(reverse("panel-evaluation-run", args=[crossed.pk, "p1"])).content.decode()
    assert 'class="tree-edge context"' in run and "tree-node context" in run


def test_coordinators_record_a_family_from_its_page(client, cohort, coordinator, analyst):  # noqa: F811
    client.force_login(analyst)
    assert "Record this family" not in client.get(reverse("panel-families", args=[cohort.pk])).content.decode()
    family = FamilyMember.objects.get(cohort=cohort, proposal__external_id="n1").family
    url = reverse("panel-family-record", args=[cohort.pk, family.pk])
    assert client.post(url, {"status": "supported"}).status_code == 403
    client.force_login(coordinator)
    answer = client.post(url, {"status": "supported", "maturity": "study_completed", "members": "dup"}, follow=True)
    assert answer.status_code == 200
    family.refresh_from_db()
    assert (family.status, family.maturity) == ("supported", "study_completed")
    assert FamilyMember.objects.get(cohort=cohort, proposal__external_id="dup").family == family
    refused = client.post(url, {"maturity": "proven"}, follow=True).content.decode()
    assert "proven" in refused and ContributionFamily.objects.get(pk=family.pk).maturity == "study_completed"


def test_the_levels_download_as_csv(client, cohort, coordinator, analyst):  # noqa: F811
    jobs.job_run(job_id=panel_start_for_cohort(cohort=cohort, user=coordinator).pk)
    client.force_login(analyst)
    tables = {}
    for table in ("paths", "runs", "families", "delivery"):
        response = client.get(reverse("panel-evaluation-csv", args=[cohort.pk, table]))
        assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
        tables[table] = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [row["terminal"] for row in tables["paths"]] == ["a", "b", "n2"]
    assert tables["paths"][0]["composite"] == "75.0" and tables["paths"][0]["author"] == "M"
    runs = {row["run"]: row for row in tables["runs"]}
    assert runs["n1"]["direction_allocation"] == "unknown" and runs["dup"]["state"] == "single_version"
    assert {row["proposal"]: row["selected"] for row in tables["delivery"]}["a"] == "passed"
    assert len(tables["families"]) == 2
    assert client.get(reverse("panel-evaluation-csv", args=[cohort.pk, "secrets"])).status_code == 404


def test_the_levels_are_sheets_of_the_cohorts_workbook(client, cohort, coordinator, analyst):  # noqa: F811
    from openpyxl import load_workbook

    jobs.job_run(job_id=panel_start_for_cohort(cohort=cohort, user=coordinator).pk)
    client.force_login(analyst)
    response = client.get(reverse("api-cohort-reviews-xlsx", args=[cohort.pk]))
    assert response.status_code == 200
    workbook = load_workbook(io.BytesIO(b"".join(response.streaming_content)), read_only=True)
    assert workbook.sheetnames == [
        "reviews",
        "evaluation_paths",
        "evaluation_runs",
        "evaluation_families",
        "evaluation_delivery",
    ]
    paths = list(workbook["evaluation_paths"].iter_rows(values_only=True))
    assert paths[0][:3] == ("run", "author", "terminal") and [row[2] for row in paths[1:]] == ["a", "b", "n2"]
    runs = {row[0]: row for row in workbook["evaluation_runs"].iter_rows(min_row=2, values_only=True)}
    assert set(runs) == {"run-1", "n1", "dup"}


def test_a_cohort_without_research_data_keeps_its_workbook_as_it_was(client, analyst):
    from openpyxl import load_workbook

    from tests import factories

    plain = factories.make_cohort([factories.make_proposal()])
    client.force_login(analyst)
    response = client.get(reverse("api-cohort-reviews-xlsx", args=[plain.pk]))
    workbook = load_workbook(io.BytesIO(b"".join(response.streaming_content)), read_only=True)
    assert workbook.sheetnames == ["reviews"]

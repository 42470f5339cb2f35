"""Table S (SPEC §6) read back with openpyxl, and the published-data bundle's reproducibility."""

import hashlib
import io
import json
import zipfile

import pytest
from openpyxl import load_workbook

from reviewapp.benchmarks.bundle import CHECKSUMS, DATA_FILES
from reviewapp.benchmarks.models import JudgeScore
from tests.benchmark_support import hypothesis, make_set, scores, task

LONG_TEXT = ("Senolytic clearance of p16-positive cells in the bone-marrow niche restores clonal balance. " * 60)[:5000]


@pytest.fixture
def benchmark(db):
    """Two generators; Gen Alpha is judged by Beta, Gamma and Delta, Gen Beta by Alpha, Gamma and Delta."""
    return make_set(
        {
            "tasks": [
                task("T1", question="Does the niche shape clonal fitness in aged marrow?"),
                task("T2", reference_statement="Clearing senescent cells restores HSC function."),
            ],
            "hypotheses": [
                hypothesis("T1", "a1", statement=LONG_TEXT, mechanism="", prediction=""),
                hypothesis("T1", "a2"),
                hypothesis("T1", "a3", selected=False),
                hypothesis("T2", "a4", statement="=SUM(A1:A9) is not a formula here"),
                hypothesis("T2", "b1", "Gen Beta"),
                hypothesis("T2", "b2", "Gen Beta"),
            ],
            "scores": scores("T1", "a1", [0, 3, 3, 0])
            + scores("T1", "a2", [5, 4, 4, 5])
            + scores("T1", "a3", [5, 5, 5, 5])
            + scores("T2", "a4", [1, 1, None, 0])
            + scores("T2", "b1", [2, 0, 2, 3])
            + scores("T2", "b2", [4, 5, 1, 4]),
        }
    )


def _table_s(client, user, benchmark):
    client.force_login(user)
    response = client.get(f"/api/v1/benchmarks/{benchmark.pk}/table-s.xlsx")
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"].startswith("application/vnd.openxmlformats-officedocument.spreadsheetml")
    return load_workbook(io.BytesIO(b"".join(response.streaming_content)))


def _rows(sheet):
    return [list(row) for row in sheet.iter_rows(values_only=True)]


def test_one_sheet_per_generator_then_counts_and_sources(benchmark, client, analyst):
    workbook = _table_s(client, analyst, benchmark)
    assert workbook.sheetnames == ["Gen Alpha", "Gen Beta", "Counts", "Sources"]


def test_each_generator_sheet_lists_its_selected_hypotheses_with_the_deciding_judges_in_order(
    benchmark, client, coordinator
):
    workbook = _table_s(client, coordinator, benchmark)
    alpha = _rows(workbook["Gen Alpha"])
    assert alpha[0] == [
        "Task",
        "Hypothesis",
        "Research question",
        "Hypothesis (full text)",
        "Reference statement",
        "Judge Beta (Beta AI)",
        "Judge Gamma (Gamma Inc)",
        "Judge Delta (Delta)",
        "Primary outcome (≥ 3 from two of three judges)",
        "Strict outcome (4–5 from two of three judges)",
        "Borderline (decided 2–1)",
    ]
    # a3 was not selected; the judge of the generator's own company (Alpha) has no column.
    assert [row[:2] for row in alpha[1:]] == [["T1", "a1"], ["T1", "a2"], ["T2", "a4"]]
    assert alpha[1][2] == "Does the niche shape clonal fitness in aged marrow?"
    assert alpha[1][4] == "Raising factor T1 extends median lifespan of aged mice by 10%."
    assert alpha[1][5:] == [3, 3, 0, "yes", "no", "yes"]
    assert alpha[2][5:] == [4, 4, 5, "yes", "yes", "no"]
    assert alpha[3][5:] == [1, None, 0, "not judged", "not judged", None]
    beta = _rows(workbook["Gen Beta"])
    assert beta[0][5:8] == ["Judge Alpha (Alpha Labs)", "Judge Gamma (Gamma Inc)", "Judge Delta (Delta)"]
    assert [row[1] for row in beta[1:]] == ["b1", "b2"]
    assert beta[1][5:] == [2, 2, 3, "no", "no", "yes"]
    assert beta[2][5:] == [4, 1, 4, "yes", "yes", "yes"]


def test_texts_are_whole_and_never_formulas(benchmark, client, analyst):
    workbook = _table_s(client, analyst, benchmark)
    alpha = workbook["Gen Alpha"]
    text = alpha["D2"].value
    assert len(LONG_TEXT) == 5000
    assert text == f"{LONG_TEXT} Mechanism:  Prediction: "
    assert alpha["D4"].data_type == "s" and alpha["D4"].value.startswith("=SUM(A1:A9)")


def test_the_workbook_is_readable_in_a_spreadsheet_program(benchmark, client, analyst):
    workbook = _table_s(client, analyst, benchmark)
    for name in workbook.sheetnames:
        sheet = workbook[name]
        assert sheet.freeze_panes == "A2"
        assert all(cell.font.bold for cell in sheet[1])
        assert sheet["A2"].alignment.wrap_text
    alpha = workbook["Gen Alpha"]
    widths = {letter: alpha.column_dimensions[letter].width for letter in "ABCDE"}
    assert widths["D"] >= 80 and widths["C"] >= 40 and widths["E"] >= 50 and widths["A"] >= 12


def test_the_counts_sheet_counts_selection_and_outcomes(benchmark, client, analyst):
    counts = _rows(_table_s(client, analyst, benchmark)["Counts"])
    header = counts[0]
    by_generator = {row[0]: dict(zip(header, row, strict=True)) for row in counts[1:4]}
    alpha = by_generator["Gen Alpha"]
    assert (alpha["Hypotheses"], alpha["Judged"], alpha["Matching, primary"], alpha["Matching, strict"]) == (4, 3, 3, 2)
    assert (alpha["Selected"], alpha["Selected and judged"], alpha["Selected matching, primary"]) == (3, 2, 2)
    assert (alpha["Selected borderline"], alpha["Selected not judged"]) == (1, 1)
    total = by_generator["All generators"]
    assert (total["Hypotheses"], total["Selected"], total["Selected matching, strict"]) == (6, 5, 2)


def test_the_sources_sheet_holds_the_checksums_of_the_published_files(benchmark, client, analyst):
    sources = _rows(_table_s(client, analyst, benchmark)["Sources"])
    bundle = zipfile.ZipFile(io.BytesIO(client.get(f"/api/v1/benchmarks/{benchmark.pk}/bundle.zip").content))
    published = {row[1]: row[2] for row in sources[1:] if row[0].startswith("Published")}
    assert published == {name: hashlib.sha256(bundle.read(name)).hexdigest() for name in DATA_FILES}
    imported = [row for row in sources[1:] if row[0].startswith("Imported")]
    assert [row[1] for row in imported] == ["set.json"] and len(imported[0][2]) == 64


def test_reviewers_get_no_table_s_and_no_bundle(benchmark, client, reviewer):
    client.force_login(reviewer)
    for name in ("table-s.xlsx", "bundle.zip"):
        response = client.get(f"/api/v1/benchmarks/{benchmark.pk}/{name}")
        assert response.status_code == 403 and response.json()["error"] == "forbidden"


# The published-data bundle ------------------------------------------------------------------------------------


def test_two_exports_of_the_same_data_are_the_same_bytes(benchmark, client, analyst):
    client.force_login(analyst)
    first = client.get(f"/api/v1/benchmarks/{benchmark.pk}/bundle.zip")
    second = client.get(f"/api/v1/benchmarks/{benchmark.pk}/bundle.zip")
    assert first.status_code == 200 and first["Content-Type"] == "application/zip"
    assert first.content == second.content
    # New data, new bytes; the same data again, the same bytes again.
    JudgeScore.objects.filter(hypothesis__key="a4", judge__name="Judge Beta").update(score=2)
    assert client.get(f"/api/v1/benchmarks/{benchmark.pk}/bundle.zip").content != first.content


def test_the_bundle_holds_the_data_files_and_their_checksums(benchmark, client, analyst):
    client.force_login(analyst)
    archive = zipfile.ZipFile(io.BytesIO(client.get(f"/api/v1/benchmarks/{benchmark.pk}/bundle.zip").content))
    assert archive.namelist() == [*DATA_FILES, CHECKSUMS]
    assert all(info.date_time == (1980, 1, 1, 0, 0, 0) for info in archive.infolist())
    lines = archive.read(CHECKSUMS).decode().splitlines()
    assert lines == [f"{hashlib.sha256(archive.read(name)).hexdigest()}  {name}" for name in DATA_FILES]
    report = json.loads(archive.read("report.json"))
    assert list(report) == sorted(report)
    assert [judge["name"] for judge in report["judges"]] == ["Judge Alpha", "Judge Beta", "Judge Gamma", "Judge Delta"]
    first = next(h for h in report["hypotheses"] if h["id"] == "a1")
    assert first["scores"] == {"Judge Alpha": 0, "Judge Beta": 3, "Judge Gamma": 3, "Judge Delta": 0}
    assert first["outcome"]["status"] == "positive" and first["outcome"]["excluded_judges"] == ["Judge Alpha"]
    assert report["statistics"]["resamples"] == 10_000
    cohort = json.loads(archive.read("cohort.json"))
    assert [h["id"] for t in cohort["tasks"] for h in t["hypotheses"]] == ["a1", "a2", "a3", "a4", "b1", "b2"]
    assert "reference_statement" not in cohort["tasks"][0]
    selected = archive.read("selected.csv").decode().splitlines()
    assert selected[0].startswith("task,hypothesis,generator") and len(selected) == 1 + 5

"""The CSV export as the database writes it (PostgreSQL's COPY) holds the same bytes as the csv module's rows:
formula escaping, quoting, empty cells and line ends included, for both layouts, with and without the unblinding
columns and with the columns other rooms register."""

import csv
import io
import re
from datetime import UTC, datetime

import pytest
from django.urls import reverse

from reviewapp.models import Review
from reviewapp.protocol import CANT_JUDGE, CRITERION_FIELDS, FLAW_CHECKLIST_KEYS
from reviewapp.selectors.exports import (
    csv_chunks,
    review_export_csv,
    review_export_long_rows,
    review_export_rows,
    spreadsheet_text,
)
from tests import factories

# Each start a spreadsheet runs as a formula, then texts that only need quoting or nothing at all.
FORMULA_TEXTS = [
    "=1+2",
    "+SUM(A1)",
    "-2+3",
    "@risk",
    "\tTAB",
    "\rCR",
    "\nLF",
    '=HYPERLINK("http://evil.example","x")',
    # A formula sign after leading whitespace, and the full-width signs some spreadsheets also run.
    " =1+1",
    "\n=2+2",
    "\u3000\u00a0+3",
    "\uff1d3+3",
    "\uff0bSUM(A1)",
    "  \uff0d2",
    "\uff20risk",
]
# What a cell may not start with once escaped: a formula sign after any whitespace, or a tab, CR or LF.
RUNNABLE = re.compile(r"[\t\r\n]|\s*[=+\-@\uff1d\uff0b\uff0d\uff20]")
PLAIN_TEXTS = [
    "a, b",
    "ends[",
    "]starts",
    'say "no"',
    "two\nlines",
    "crlf\r\nin the middle",
    "café Müller ✓",
    " leading space",
    "'quoted",
]


def _review(cohort, reviewer, proposal, *, position: int, **answers) -> Review:
    assignment = factories.make_assignment(cohort, reviewer, proposal, position=position)
    return Review.objects.create(assignment=assignment, **answers)


@pytest.fixture
def awkward_cohort(reviewer, other_reviewer):
    """Proposals and reviews whose every free-text cell is one of the awkward texts, plus a bare draft."""
    task = factories.make_task(key="=TASK")
    cohort = factories.make_cohort([], name='+Awkward, "cohort"')
    texts = FORMULA_TEXTS + PLAIN_TEXTS
    for number, text in enumerate(texts):
        proposal = factories.make_proposal(
            task,
            external_id=f"{text}-{number}",
            author=text,
            author_company=texts[-1 - number],
            method="",
            source_run=text[::-1],
        )
        cohort.proposals.add(proposal)
        review = _review(
            cohort,
            reviewer,
            proposal,
            position=number + 1,
            status=Review.Status.SUBMITTED,
            overall=1 + number % 5,
            recommendation="revise",
            **{
                field: ["1", "2", "3", "4", CANT_JUDGE][(number + offset) % 5]
                for offset, field in enumerate(CRITERION_FIELDS)
            },
            flaw_verdict="fixable",
            flaw_checklist=[text, "power"] if number % 2 else ["confounding", text],
            main_flaw=text,
            comments=texts[-1 - number],
            submitted_at=datetime(2025, 3, 4, 5, 6, number, tzinfo=UTC),
            seconds_spent=60 * number,
        )
        review.assignment.deferred_reason = text if number % 3 == 0 else ""
        review.assignment.save()
    # A draft with nothing answered: every answer cell is empty.
    bare = factories.make_proposal(task, external_id="bare")
    cohort.proposals.add(bare)
    _review(cohort, other_reviewer, bare, position=1, flaw_checklist=[])
    return cohort


def _python_csv(cohort, *, unblinded: bool, layout: str) -> bytes:
    rows = review_export_rows if layout == "wide" else review_export_long_rows
    return "".join(csv_chunks(rows(cohort=cohort, unblinded=unblinded))).encode()


def _export(cohort, *, unblinded: bool, layout: str) -> bytes:
    chunks = review_export_csv(cohort=cohort, unblinded=unblinded, layout=layout)
    return b"".join(chunk if isinstance(chunk, bytes) else chunk.encode() for chunk in chunks)


@pytest.mark.parametrize("layout", ["wide", "long"])
@pytest.mark.parametrize("unblinded", [True, False])
def test_the_database_writes_the_same_bytes_as_the_csv_module(needs_postgres, awkward_cohort, layout, unblinded):
    expected = _python_csv(awkward_cohort, unblinded=unblinded, layout=layout)
    assert _export(awkward_cohort, unblinded=unblinded, layout=layout) == expected


def test_a_checklist_of_any_length_is_joined_as_the_csv_module_joins_it(needs_postgres, reviewer):
    """The database reads a list as long as the form's checklist item by item and a longer one by its function: both
    give the Python export's bytes."""
    task = factories.make_task(key="lists")
    cohort = factories.make_cohort([], name="Lists")
    awkward = FORMULA_TEXTS + PLAIN_TEXTS
    checklists = [
        list(FLAW_CHECKLIST_KEYS),
        [*FLAW_CHECKLIST_KEYS, "other again"],
        awkward,
        awkward[::-1],
        ["power"],
        [],
    ]
    for number, checklist in enumerate(checklists):
        proposal = factories.make_proposal(task, external_id=f"list-{number}")
        cohort.proposals.add(proposal)
        _review(cohort, reviewer, proposal, position=number + 1, flaw_checklist=checklist)

    exported = _export(cohort, unblinded=True, layout="wide")

    assert exported == _python_csv(cohort, unblinded=True, layout="wide")
    rows = list(csv.DictReader(io.StringIO(exported.decode(), newline="")))
    assert rows[2]["flaw_checklist"] == spreadsheet_text(";".join(awkward))
    assert rows[1]["flaw_checklist"].endswith(";other;other again")


@pytest.mark.parametrize("layout", ["wide", "long"])
def test_every_cell_that_a_spreadsheet_would_run_is_escaped(db, awkward_cohort, layout):
    """On whichever database runs the tests: no cell of the export starts a formula, and each escaped text is the
    original with one leading apostrophe."""
    text = _export(awkward_cohort, unblinded=True, layout=layout).decode()
    header, *rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows
    for row in rows:
        for cell in row:
            assert not RUNNABLE.match(cell), (cell, row)
    cells = {cell for row in rows for cell in row}
    for formula in FORMULA_TEXTS:
        assert spreadsheet_text(formula) == "'" + formula
        assert "'" + formula in cells
    for plain in PLAIN_TEXTS:
        assert plain in cells
    assert '\'+Awkward, "cohort"' in cells


def test_lines_end_as_the_csv_module_ends_them_and_quoted_line_breaks_survive(db, awkward_cohort):
    text = _export(awkward_cohort, unblinded=False, layout="wide")
    lines = text.split(b"\r\n")
    assert lines[-1] == b""
    rows = list(csv.reader(io.StringIO(text.decode(), newline="")))
    assert len(rows) == 1 + len(FORMULA_TEXTS) + len(PLAIN_TEXTS) + 1
    assert any(cell == "two\nlines" for row in rows for cell in row)
    assert any(cell == "crlf\r\nin the middle" for row in rows for cell in row)


def test_a_bare_draft_has_empty_cells_not_quoted_empty_texts(db, awkward_cohort):
    text = _export(awkward_cohort, unblinded=True, layout="wide").decode()
    (draft,) = [line for line in text.split("\r\n") if ",bare," in line]
    assert '""' not in draft.split(",bare,", 1)[1]
    row = next(csv.reader([draft]))
    header = next(csv.reader(io.StringIO(text)))
    values = dict(zip(header, row, strict=True))
    assert values["status"] == "draft"
    assert values["submitted_at"] == "" and values["overall"] == "" and values["importance"] == ""
    assert values["flaw_checklist"] == "" and values["author"] == ""
    assert values["started_at"].endswith("Z")


def test_the_api_streams_the_export_written_by_the_database(client, coordinator, needs_postgres, awkward_cohort):
    client.force_login(coordinator)
    for layout in ("wide", "long"):
        response = client.get(reverse("api-cohort-reviews-csv", args=[awkward_cohort.pk]), {"layout": layout})
        assert response.status_code == 200
        assert response.streaming
        body = b"".join(response.streaming_content)
        assert body == _python_csv(awkward_cohort, unblinded=True, layout=layout)


def test_registered_columns_follow_each_line_as_the_csv_module_writes_them(needs_postgres, awkward_cohort, monkeypatch):
    from reviewapp.selectors import exports

    proposals = list(awkward_cohort.proposals.order_by("pk").values_list("pk", flat=True))

    def provider(cohort):
        values = {
            pk: [number / 3, number % 2 == 0, f"text, {number}", None] for number, pk in enumerate(proposals[::2])
        }
        return ["extra_float", "extra_flag", "extra_text", "extra_none"], values

    monkeypatch.setattr(exports, "_EXPORT_COLUMNS", [*exports._EXPORT_COLUMNS, provider])
    for layout in ("wide", "long"):
        expected = _python_csv(awkward_cohort, unblinded=True, layout=layout)
        assert b"extra_float" in expected and b'"text, 0"' in expected
        assert _export(awkward_cohort, unblinded=True, layout=layout) == expected

"""Table S of a benchmark set (docs/protocol.md#table-s): an XLSX workbook of the selected hypotheses.

- One sheet per generator, one row per selected hypothesis: task, hypothesis id, the task's research question, the
  hypothesis's full text (as the models read it), the reference statement, the score of each judge from a company
  other than the generator's in the judges' listed order, the primary and strict outcomes and the borderline flag.
- "Counts": per generator, the hypotheses, the selected ones and their outcomes.
- "Sources": the sha256 of every file of the set's published-data bundle (the same bytes as bundle.zip) and of
  every file imported into the set.

Texts are written whole and as text (never as formulas, never cut); cells wrap, the header row is frozen and
columns have widths a reader can work with. Written in openpyxl's write-only mode: rows stream to the file.
"""

import hashlib
import re

from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
from openpyxl.styles import Alignment, Font
from openpyxl.utils import get_column_letter

from reviewapp.analysis.judges import company_key
from reviewapp.benchmarks.bundle import DATA_FILES, bundle_files, yes_no
from reviewapp.benchmarks.models import BenchmarkSet, Judge
from reviewapp.benchmarks.selectors import benchmark_data_version, benchmark_imports, benchmark_judges, benchmark_rows
from reviewapp.benchmarks.statistics import HypothesisRow

COUNTS_SHEET, SOURCES_SHEET = "Counts", "Sources"
BASE_COLUMNS = (
    ("Task", 16),
    ("Hypothesis", 12),
    ("Research question", 45),
    ("Hypothesis (full text)", 90),
    ("Reference statement", 60),
)
OUTCOME_COLUMNS = (
    ("Primary outcome (≥ 3 from two of three judges)", 16),
    ("Strict outcome (4–5 from two of three judges)", 16),
    ("Borderline (decided 2–1)", 14),
)
COUNT_COLUMNS = (
    ("Generator", 28),
    ("Company", 20),
    ("Hypotheses", 12),
    ("Judged", 10),
    ("Matching, primary", 12),
    ("Matching, strict", 12),
    ("Selected", 10),
    ("Selected and judged", 12),
    ("Selected matching, primary", 14),
    ("Selected matching, strict", 14),
    ("Selected borderline", 12),
    ("Selected not judged", 12),
    ("No selection (run stopped)", 14),
)
SOURCE_COLUMNS = (("Source", 26), ("File", 40), ("sha256", 68), ("Bytes", 12))
_SHEET_TITLE_FORBIDDEN = re.compile(r"[\[\]:*?/\\]")
_WRAP = Alignment(wrap_text=True, vertical="top")
_BOLD = Font(bold=True)


def _cell(sheet, value, bold: bool = False) -> WriteOnlyCell:
    if isinstance(value, str):
        value = ILLEGAL_CHARACTERS_RE.sub("", value)
    cell = WriteOnlyCell(sheet, value=value)
    if isinstance(value, str):
        # Text stays text: a hypothesis starting with "=" is not a formula.
        cell.data_type = "s"
    cell.alignment = _WRAP
    if bold:
        cell.font = _BOLD
    return cell


def _sheet(workbook: Workbook, title: str, columns):
    sheet = workbook.create_sheet(title=title)
    for index, (_, width) in enumerate(columns, start=1):
        sheet.column_dimensions[get_column_letter(index)].width = width
    sheet.freeze_panes = "A2"
    sheet.append([_cell(sheet, name, bold=True) for name, _ in columns])
    return sheet


def sheet_titles(names: list[str]) -> list[str]:
    """Unique sheet titles for the generators: at most 31 characters, none of []:*?/\\, not Counts or Sources."""
    taken = {COUNTS_SHEET.casefold(), SOURCES_SHEET.casefold()}
    titles = []
    for name in names:
        base = _SHEET_TITLE_FORBIDDEN.sub("-", name).strip("'").strip() or "Generator"
        title, number = base[:31], 1
        while title.casefold() in taken:
            number += 1
            suffix = f" ({number})"
            title = base[: 31 - len(suffix)] + suffix
        taken.add(title.casefold())
        titles.append(title)
    return titles


def deciding_judges(judges: list[Judge], generator_company: str) -> list[Judge]:
    """The judges whose scores decide a generator's outcomes: those of other companies, in the listed order."""
    return [judge for judge in judges if company_key(judge.company) != company_key(generator_company)]


def _generator_sheet(workbook, title: str, judges: list[Judge], rows: list[HypothesisRow]) -> None:
    columns = (
        *BASE_COLUMNS,
        *((f"{judge.name} ({judge.company})", max(12, min(24, len(judge.name) + 4))) for judge in judges),
        *OUTCOME_COLUMNS,
    )
    sheet = _sheet(workbook, title, columns)
    for row in rows:
        values = [
            row.task_key,
            row.key,
            row.question,
            row.text,
            row.reference_statement,
            *(row.scores.get(judge.name) for judge in judges),
            yes_no(row.primary) or "not judged",
            yes_no(row.strict) or "not judged",
            yes_no(row.borderline),
        ]
        sheet.append([_cell(sheet, value) for value in values])


def _counts(generator: str, company: str, rows: list[HypothesisRow]) -> list:
    selected = [row for row in rows if row.selected]
    return [
        generator,
        company,
        len(rows),
        sum(row.primary is not None for row in rows),
        sum(bool(row.primary) for row in rows),
        sum(bool(row.strict) for row in rows),
        len(selected),
        sum(row.primary is not None for row in selected),
        sum(bool(row.primary) for row in selected),
        sum(bool(row.strict) for row in selected),
        sum(bool(row.borderline) for row in selected),
        sum(row.primary is None for row in selected),
        sum(row.selected is None for row in rows),
    ]


def write_table_s(benchmark: BenchmarkSet, target) -> None:
    """Write the workbook to a path or a binary file."""
    data_version = benchmark_data_version(benchmark.pk)  # before the rows it versions
    judges = benchmark_judges(benchmark)
    rows = benchmark_rows(benchmark, judges)
    generators = sorted({(row.generator, row.generator_company) for row in rows})
    workbook = Workbook(write_only=True)
    titles = sheet_titles([generator for generator, _ in generators])
    for title, (generator, company) in zip(titles, generators, strict=True):
        selected = [
            row for row in rows if row.selected and (row.generator, row.generator_company) == (generator, company)
        ]
        _generator_sheet(workbook, title, deciding_judges(judges, company), selected)

    counts = _sheet(workbook, COUNTS_SHEET, COUNT_COLUMNS)
    for generator, company in generators:
        group = [row for row in rows if (row.generator, row.generator_company) == (generator, company)]
        counts.append([_cell(counts, value) for value in _counts(generator, company, group)])
    counts.append([_cell(counts, value, bold=True) for value in _counts("All generators", "", rows)])
    counts.append([])
    for note in (
        "Outcome rule: the judge of the generator's own company is excluded; "
        "primary is positive when at least two of the three other-company judges give 3 or more, strict when at "
        "least two give 4 or 5; borderline means the primary decision was 2–1, so one judge's vote would flip it.",
        "A hypothesis with fewer than three usable other-company scores is counted as not judged, never as "
        "negative. Hypotheses of runs that stopped before their selection have no selection and are counted apart.",
    ):
        counts.append([_cell(counts, note)])

    sources = _sheet(workbook, SOURCES_SHEET, SOURCE_COLUMNS)
    files = bundle_files(benchmark, judges=judges, rows=rows, data_version=data_version)
    for name in DATA_FILES:
        values = ["Published data (bundle.zip)", name, hashlib.sha256(files[name]).hexdigest(), len(files[name])]
        sources.append([_cell(sources, value) for value in values])
    for batch in benchmark_imports(benchmark):
        values = [f"Imported {batch.created_at:%Y-%m-%d %H:%M} UTC", batch.filename, batch.sha256, None]
        sources.append([_cell(sources, value) for value in values])
    workbook.save(target)

"""Review exports: the rows of a cohort's reviews and the CSV / XLSX writers that share them.

Rows come from one query read in chunks, so an export of any size runs in constant memory. The unblinding
columns (author, author company, method, source run) are selected only when asked for (coordinators' and analysts'
exports ask: docs/protocol.md#blinding). Rooms above this one add per-proposal columns (the AI panel's) through
`export_columns_register`, so this module never imports them.

On PostgreSQL the CSV is written by the database itself (`COPY (SELECT …) TO STDOUT`, streamed row by row): the
query formats every cell as the rows below are written (the formula escaping of `spreadsheet_text`, UTC
timestamps, nothing for a missing value) and only the registered columns are added to each line here. Other
databases write the same bytes from the rows with Python's csv module.
"""

import csv
import io
import re
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from itertools import islice
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection, transaction
from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
from openpyxl.styles import Font
from openpyxl.utils import get_column_letter

from reviewapp.models import Assignment, Cohort, Proposal, ResearchTask, Review
from reviewapp.protocol import ANSWER_FIELDS, CANT_JUDGE, CRITERION_FIELDS, FLAW_CHECKLIST_KEYS

CHUNK_SIZE = 2000

REVIEW_KEY_COLUMNS = ["cohort", "proposal_id", "task_key", "reviewer", "position", "status"]
# The review's own values, in the order of the export's columns.
_REVIEW_VALUES = ("started_at", "submitted_at", "seconds_spent", *ANSWER_FIELDS)
REVIEW_COLUMNS = [*REVIEW_KEY_COLUMNS, *_REVIEW_VALUES, "deferred_reason"]
UNBLINDING_COLUMNS = ["author", "author_company", "method", "source_run"]
LONG_COLUMNS = [*REVIEW_KEY_COLUMNS, "criterion", "value"]

_FIELDS = (
    "assignment__proposal_id",
    "assignment__proposal__external_id",
    "assignment__proposal__task__key",
    "assignment__reviewer__username",
    "assignment__position",
    "status",
    *_REVIEW_VALUES,
    "assignment__deferred_reason",
)
_UNBLINDING_PROPOSAL_FIELDS = ("author", "author_company", "method", "source_run")
_UNBLINDING_FIELDS = tuple(f"assignment__proposal__{field}" for field in _UNBLINDING_PROPOSAL_FIELDS)
_FIRST_CRITERION = REVIEW_COLUMNS.index(CRITERION_FIELDS[0])

# A spreadsheet runs a cell as a formula when its first character other than whitespace is = + - @ (or their
# full-width forms, which some spreadsheets read as the same), and may when it starts with a tab, CR or LF; a leading
# apostrophe makes it text. One pattern for Python and PostgreSQL's COPY (both read these escapes inside brackets);
# the whitespace is Python's str.isspace() set, spelled out so both databases agree.
_WHITESPACE = r"\t\n\u000b\u000c\r\u001c-\u001f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_FORMULA_SIGNS = r"=+@\uff1d\uff0b\uff0d\uff20-"
FORMULA_PATTERN = rf"^(?:[\t\r\n]|[{_WHITESPACE}]*[{_FORMULA_SIGNS}])"
_FORMULA_START = re.compile(FORMULA_PATTERN)


def spreadsheet_text(value: str) -> str:
    """Free text made safe for CSV and spreadsheets: no formula can start in it."""
    if value and _FORMULA_START.match(value):
        return "'" + value
    return value


def _timestamp(value: datetime | None) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if value else ""


def _criterion(value: str) -> int | str | None:
    """1–4 as numbers, "can't judge" as its literal, a draft's missing answer as empty."""
    if not value:
        return None
    return value if value == CANT_JUDGE else int(value)


# A provider of extra columns: the cohort → (column names, {proposal pk: one value per column}). A proposal it does
# not list gets empty cells.
ExportColumns = Callable[[Cohort], tuple[list[str], dict[int, list[Any]]]]
_EXPORT_COLUMNS: list[ExportColumns] = []


def export_columns_register(provider: ExportColumns) -> None:
    """Add per-proposal columns to every review export (a room registers its provider when its app is ready)."""
    if provider not in _EXPORT_COLUMNS:
        _EXPORT_COLUMNS.append(provider)


# A provider of extra sheets of the reviews workbook: the cohort → [(sheet title, rows with the header first)].
ExportSheets = Callable[[Cohort], list[tuple[str, list[list[Any]]]]]
_EXPORT_SHEETS: list[ExportSheets] = []


def export_sheets_register(provider: ExportSheets) -> None:
    """Add sheets after the reviews in every XLSX review export (a room registers its provider when its app is
    ready)."""
    if provider not in _EXPORT_SHEETS:
        _EXPORT_SHEETS.append(provider)


def export_sheets(cohort: Cohort) -> list[tuple[str, list[list[Any]]]]:
    """The registered providers' sheets of a cohort, in registration order."""
    return [sheet for provider in _EXPORT_SHEETS for sheet in provider(cohort)]


def _extra_columns(cohort: Cohort) -> tuple[list[str], Callable[[int], list[Any]]]:
    """The registered providers' column names, and the values of a proposal under them."""
    provided = [provider(cohort) for provider in _EXPORT_COLUMNS]
    names = [name for columns, _ in provided for name in columns]

    def values_of(proposal_pk: int) -> list[Any]:
        return [
            value for columns, by_proposal in provided for value in by_proposal.get(proposal_pk, [None] * len(columns))
        ]

    return names, values_of


def review_export_count(*, cohort: Cohort) -> int:
    return Review.objects.filter(assignment__cohort=cohort).count()


def _header(*, layout: str, unblinded: bool, extra_names: list[str]) -> list[str]:
    keys = REVIEW_COLUMNS if layout == "wide" else LONG_COLUMNS
    return [*keys, *(UNBLINDING_COLUMNS if unblinded else []), *extra_names]


def review_export_rows(*, cohort: Cohort, unblinded: bool) -> Iterator[list[Any]]:
    """The header, then one row per review of the cohort (drafts included), in one chunked query; the registered
    per-proposal columns come last."""
    extra_names, extra_values = _extra_columns(cohort)
    yield _header(layout="wide", unblinded=unblinded, extra_names=extra_names)
    fields = (*_FIELDS, *(_UNBLINDING_FIELDS if unblinded else ()))
    records = (
        Review.objects.filter(assignment__cohort=cohort)
        .order_by("assignment__proposal__external_id", "assignment__reviewer__username")
        .values_list(*fields)
        .iterator(chunk_size=CHUNK_SIZE)
    )
    cohort_name = spreadsheet_text(cohort.name)
    for record in records:
        (
            proposal_pk,
            proposal_id,
            task_key,
            reviewer,
            position,
            status,
            started_at,
            submitted_at,
            seconds_spent,
            overall,
            recommendation,
            *rest,
        ) = record
        criteria = rest[: len(CRITERION_FIELDS)]
        flaw_verdict, flaw_checklist, main_flaw, comments, deferred_reason, *provenance = rest[len(CRITERION_FIELDS) :]
        yield [
            cohort_name,
            spreadsheet_text(proposal_id),
            spreadsheet_text(task_key),
            spreadsheet_text(reviewer),
            position,
            status,
            _timestamp(started_at),
            _timestamp(submitted_at),
            seconds_spent,
            overall,
            recommendation,
            *(_criterion(value) for value in criteria),
            flaw_verdict,
            spreadsheet_text(";".join(flaw_checklist or [])),
            spreadsheet_text(main_flaw),
            spreadsheet_text(comments),
            spreadsheet_text(deferred_reason),
            *(spreadsheet_text(value) for value in provenance),
            *extra_values(proposal_pk),
        ]


def review_export_long_rows(*, cohort: Cohort, unblinded: bool) -> Iterator[list[Any]]:
    """The header, then one row per review × criterion: the review's keys, the criterion and its value."""
    rows = review_export_rows(cohort=cohort, unblinded=unblinded)
    header = next(rows)
    yield [*LONG_COLUMNS, *header[len(REVIEW_COLUMNS) :]]
    keys = len(REVIEW_KEY_COLUMNS)
    for row in rows:
        provenance = row[len(REVIEW_COLUMNS) :]
        for offset, criterion in enumerate(CRITERION_FIELDS):
            yield [*row[:keys], criterion, row[_FIRST_CRITERION + offset], *provenance]


class _Lines:
    """A write-only buffer for csv.writer whose text is taken out batch by batch."""

    def __init__(self):
        self.buffer = io.StringIO()

    def write(self, text: str) -> None:
        self.buffer.write(text)

    def take(self) -> str:
        text = self.buffer.getvalue()
        self.buffer.seek(0)
        self.buffer.truncate()
        return text


def csv_chunks(rows: Iterable[list[Any]], *, chunk_bytes: int = 64 * 1024) -> Iterator[str]:
    """CSV text in pieces of about chunk_bytes, for a streaming response."""
    lines = _Lines()
    writer = csv.writer(lines)
    for row in rows:
        writer.writerow(row)
        if lines.buffer.tell() >= chunk_bytes:
            yield lines.take()
    yield lines.take()


def review_export_csv(*, cohort: Cohort, unblinded: bool, layout: str = "wide") -> Iterator[str | bytes]:
    """The cohort's reviews as CSV in pieces, for a streaming response: one row per review ("wide") or per review
    and criterion ("long"), the same bytes on every database."""
    if connection.vendor == "postgresql":
        return _copied_csv(cohort=cohort, unblinded=unblinded, layout=layout)
    rows = review_export_rows if layout == "wide" else review_export_long_rows
    return csv_chunks(rows(cohort=cohort, unblinded=unblinded))


# `spreadsheet_text` in SQL: a text FORMULA_PATTERN matches gets a leading apostrophe (the pattern holds no quote).
_FORMULA_PATTERN_SQL = f"'{FORMULA_PATTERN}'"
_UTC_SQL = """to_char({} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')"""
# The flaw checklist joined by ";" (jsonb_array_elements_text's texts, in order: a JSON null is left out, as
# concat_ws and array_to_string both do). A list no longer than the checklist (every list a review's form saves) is
# read item by item; a longer one by a function (reviewapp/migrations/0009): a subquery here, even one never run,
# made the whole query about a third slower.
_CHECKLIST_ITEMS_SQL = ", ".join(f"r.flaw_checklist->>{index}" for index in range(len(FLAW_CHECKLIST_KEYS)))
_CHECKLIST_SQL = (
    " CROSS JOIN LATERAL (SELECT CASE WHEN jsonb_typeof(r.flaw_checklist) <> 'array' THEN '' "
    f"WHEN jsonb_array_length(r.flaw_checklist) <= {len(FLAW_CHECKLIST_KEYS)} "
    f"THEN concat_ws(';', {_CHECKLIST_ITEMS_SQL}) "
    "ELSE reviewapp_checklist_text(r.flaw_checklist) END AS joined) AS checklist"
)
# The query is cheap but looks costly to the planner: compiling it (JIT) would take longer than running it, and its
# sort of the formatted rows fits in memory. For the export's transaction only.
_COPY_SETTINGS = "SELECT set_config('jit', 'off', true), set_config('work_mem', '64MB', true)"


def _or_empty(sql: str) -> str:
    # COPY writes an empty text as "" to tell it from NULL; the csv module writes both as nothing.
    return f"NULLIF({sql}, '')"


def _escaped_sql(sql: str) -> str:
    return _or_empty(f"CASE WHEN {sql} ~ {_FORMULA_PATTERN_SQL} THEN '''' || {sql} ELSE {sql} END")


def _copy_query(*, unblinded: bool, layout: str) -> str:
    """COPY of a cohort's reviews in the export's order, its parameters the cohort's escaped name and its pk. Each
    line is the proposal's pk (for the registered columns), then the export's cells."""
    quote = connection.ops.quote_name
    review, assignment, proposal, task, user = (
        quote(model._meta.db_table) for model in (Review, Assignment, Proposal, ResearchTask, get_user_model())
    )
    keys = [
        "%s::text",
        _escaped_sql("p.external_id"),
        _escaped_sql("t.key"),
        _escaped_sql("u.username"),
        "a.position",
        _or_empty("r.status"),
    ]
    answers = [
        _UTC_SQL.format("r.started_at"),
        _UTC_SQL.format("r.submitted_at"),
        "r.seconds_spent",
        "r.overall",
        _or_empty("r.recommendation"),
        *(_or_empty(f"r.{quote(field)}") for field in CRITERION_FIELDS),
        _or_empty("r.flaw_verdict"),
        _escaped_sql("checklist.joined"),
        _escaped_sql("r.main_flaw"),
        _escaped_sql("r.comments"),
        _escaped_sql("a.deferred_reason"),
    ]
    provenance = [_escaped_sql(f"p.{quote(field)}") for field in _UNBLINDING_PROPOSAL_FIELDS] if unblinded else []
    order = ["p.external_id", "u.username"]
    criteria = ""
    if layout == "wide":
        cells = [*keys, *answers, *provenance]
    else:
        listed = ", ".join(
            f"({number}, '{field}', {_or_empty(f'r.{quote(field)}')})" for number, field in enumerate(CRITERION_FIELDS)
        )
        criteria = f" CROSS JOIN LATERAL (VALUES {listed}) AS c(n, criterion, value)"
        cells = [*keys, "c.criterion", "c.value", *provenance]
        order.append("c.n")
    return (
        f"COPY (SELECT p.id, {', '.join(cells)} FROM {review} r JOIN {assignment} a ON a.id = r.assignment_id "
        f"JOIN {proposal} p ON p.id = a.proposal_id JOIN {task} t ON t.id = p.task_id "
        f"JOIN {user} u ON u.id = a.reviewer_id{_CHECKLIST_SQL if layout == 'wide' else ''}{criteria} "
        f"WHERE a.cohort_id = %s ORDER BY {', '.join(order)}) "
        "TO STDOUT (FORMAT csv)"
    )


def _hashable(values: tuple) -> bool:
    try:
        hash(values)
    except TypeError:
        return False
    return True


def _copied_csv(*, cohort: Cohort, unblinded: bool, layout: str, chunk_bytes: int = 64 * 1024) -> Iterator[bytes]:
    """The CSV as PostgreSQL writes it, with the registered columns and the csv module's line ends added."""
    extra_names, extra_values = _extra_columns(cohort)
    lines = _Lines()
    writer = csv.writer(lines)
    writer.writerow(_header(layout=layout, unblinded=unblinded, extra_names=extra_names))
    yield lines.take().encode()

    # What follows a proposal's cells on each of its lines: its registered cells as the csv module writes them.
    tails: dict[bytes, bytes] = {}
    written: dict[tuple, bytes] = {}  # the same cells are written once (most proposals have none)

    def tail(proposal_pk: bytes) -> bytes:
        if proposal_pk not in tails:
            values = tuple(extra_values(int(proposal_pk)))
            if not extra_names:
                tails[proposal_pk] = b"\r\n"
            elif _hashable(values) and values in written:
                tails[proposal_pk] = written[values]
            else:
                writer.writerow(["", *values])
                tails[proposal_pk] = lines.take().encode()
                if _hashable(values):
                    written[values] = tails[proposal_pk]
        return tails[proposal_pk]

    query = _copy_query(unblinded=unblinded, layout=layout)
    pending: list[bytes] = []
    size = 0
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_COPY_SETTINGS)
        with cursor.cursor.copy(query, [spreadsheet_text(cohort.name), cohort.pk]) as copy:
            # libpq hands COPY data over one row at a time: b"<proposal pk>,<cells>\n".
            for data in copy:
                proposal_pk, _, cells = bytes(data).partition(b",")
                line = cells[:-1] + tail(proposal_pk)
                pending.append(line)
                size += len(line)
                if size >= chunk_bytes:
                    yield b"".join(pending)
                    pending, size = [], 0
    yield b"".join(pending)


_COLUMN_WIDTHS = {
    "cohort": 24,
    "proposal_id": 20,
    "task_key": 16,
    "reviewer": 16,
    "started_at": 21,
    "submitted_at": 21,
    "flaw_checklist": 30,
    "main_flaw": 50,
    "comments": 60,
    "deferred_reason": 40,
    "author": 24,
    "author_company": 20,
    "source_run": 20,
}


def _xlsx_value(value: Any) -> Any:
    # openpyxl refuses control characters that XML cannot hold; pasted text sometimes has them.
    return ILLEGAL_CHARACTERS_RE.sub("", value) if isinstance(value, str) else value


def write_xlsx(
    rows: Iterable[list[Any]],
    target,
    *,
    title: str,
    on_progress: Callable[[int], None] | None = None,
    progress_every: int = CHUNK_SIZE,
    extra_sheets: Iterable[tuple[str, list[list[Any]]]] = (),
) -> int:
    """Write header + rows to an XLSX file (a path or a binary file) in write-only mode; return the row count.

    Write-only mode streams rows to disk, so memory stays flat however many rows there are. The header row is
    bold and frozen; columns get widths suited to their content. `extra_sheets` (title, header + rows) follow the
    first sheet, written the same way.
    """
    workbook = Workbook(write_only=True)
    count = _write_sheet(workbook, rows, title=title, on_progress=on_progress, progress_every=progress_every)
    for extra_title, extra_rows in extra_sheets:
        _write_sheet(workbook, extra_rows, title=extra_title, on_progress=None, progress_every=progress_every)
    workbook.save(target)
    return count


def _write_sheet(workbook, rows, *, title: str, on_progress, progress_every: int) -> int:
    sheet = workbook.create_sheet(title=title[:31])
    rows = iter(rows)
    header = next(rows)
    for index, name in enumerate(header, start=1):
        sheet.column_dimensions[get_column_letter(index)].width = _COLUMN_WIDTHS.get(name, max(len(name) + 2, 10))
    sheet.freeze_panes = "A2"
    bold = Font(bold=True)
    header_cells = []
    for name in header:
        cell = WriteOnlyCell(sheet, value=name)
        cell.font = bold
        header_cells.append(cell)
    sheet.append(header_cells)
    count = 0
    while batch := list(islice(rows, progress_every)):
        for row in batch:
            sheet.append([_xlsx_value(value) for value in row])
        count += len(batch)
        if on_progress:
            on_progress(count)
    return count

"""Read an import file (JSON, CSV or XLSX) into rows of named tables, with every problem the file shows.

The cohort import (tasks, proposals) and the benchmark-set import (tasks, hypotheses, scores) read files the
same way; a TableFile describes what differs: the tables and their fields, how a CSV header names its table and
the sentences that tell the user which tables the file may hold. `clean_rows` cleans the values with each import's
own cleaners and limits; checking them against each other and the database stays with each import.
"""

import csv
import io
import json
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import PurePath
from typing import Any

from django.conf import settings
from openpyxl import load_workbook
from openpyxl.utils import get_column_letter

from reviewapp.core.errors import ServiceError, as_problems
from reviewapp.core.requests import JSONTooDeep, json_loads_bounded
from reviewapp.core.text import control_character_problem

FILE = "file"  # the table of a problem with the file as a whole
FORMATS = ("json", "csv", "xlsx")


class ImportInvalid(ServiceError):
    """The file cannot be imported. rows: [{"table", "row", "field", "message"}], every problem found."""

    code = "invalid_import"

    def __init__(self, rows: list[dict]):
        super().__init__(f"The file has {len(rows)} problem(s); nothing was imported.", problems=as_problems(rows))
        self.rows = rows


def problem(table: str, row: int | None, field: str | None, message: str) -> dict:
    return {"table": table, "row": row, "field": field, "message": message}


def file_invalid(message: str) -> ImportInvalid:
    return ImportInvalid([problem(FILE, None, None, message)])


def as_text(value) -> str | None:
    """A cell or JSON value as trimmed text; None when it is not a text-like value."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else str(value)
    if isinstance(value, date):
        return value.isoformat()
    return None


class FormulaCell(str):
    """The formula of an XLSX cell (its text, e.g. "=A1*2"): refused, since the import stores values, not formulas."""


def clean_text(value):
    """(text, None), or ("", a problem) when the value is not text-like."""
    value_text = as_text(value)
    return ("", "Must be text.") if value_text is None else (value_text, None)


def clean_rows(
    table: str,
    rows,
    problems: list,
    *,
    fields: Mapping[str, Iterable[str]],
    required: Mapping[str, Iterable[str]],
    cleaners: Mapping[str, Callable],
    max_length: Callable[[str, str], int | None],
) -> list[dict]:
    """Records with clean values (and their row number); a value with a problem is left empty and the problem added.

    rows: (row number, {field: raw value}); fields and required: table → field names; cleaners: field → cleaner
    giving (value, problem or None), clean_text by default; max_length(table, field): the most characters its text
    may have (None: no limit)."""
    records = []
    for number, values in rows:
        record = {"row": number}
        for name in fields[table]:
            raw = values.get(name)
            if isinstance(raw, FormulaCell):
                formula = f"The cell holds a formula ({raw[:40]}); type the value itself instead of a formula."
                problems.append(problem(table, number, name, formula))
                record[name] = ""
                continue
            value, cleaning_problem = cleaners.get(name, clean_text)(raw)
            record[name] = value
            message = cleaning_problem or _control_character_problem(value)
            if message:
                problems.append(problem(table, number, name, message))
            elif name in required[table] and (value is None or value == ""):
                claim = " (the claim)" if name == "statement" else ""
                problems.append(problem(table, number, name, f"{name}{claim} is required."))
            elif isinstance(value, str) and (limit := max_length(table, name)) and len(value) > limit:
                message = f"{name} has {len(value)} characters; at most {limit} are allowed."
                problems.append(problem(table, number, name, message))
        records.append(record)
    return records


def _control_character_problem(value) -> str | None:
    """The first control character in a cleaned value (text, or a list or mapping of texts), as a sentence."""
    if isinstance(value, str):
        return control_character_problem(value)
    texts = list(value.values()) if isinstance(value, dict) else value if isinstance(value, list) else []
    return next((found for text in texts if isinstance(text, str) and (found := control_character_problem(text))), None)


@dataclass(frozen=True)
class KeyedColumns:
    """A field that CSV and XLSX give as one column per key, "<prefix><key>", read as {key: value}.

    JSON gives the field itself, as an object. A blank cell reads as None.
    """

    field: str  # e.g. "forecasts"
    prefix: str  # e.g. "forecast:"
    label: str  # names such a column in messages, e.g. "forecast"
    key_name: str  # what a key is, e.g. "model"

    def key_of(self, header: str) -> str | None:
        """The key named by a column of this field (the header as written, not lower-cased), else None."""
        if header.strip().lower().startswith(self.prefix):
            return header.strip()[len(self.prefix) :].strip()
        return None


@dataclass(frozen=True)
class TableFile:
    """What an import file may hold, and the sentences that tell the user so."""

    fields: dict[str, tuple[str, ...]]  # table → fields, tables in the order problems are reported
    required: dict[str, tuple[str, ...]]  # table → fields a CSV table or sheet must have as columns
    csv_tables: tuple[tuple[str, frozenset[str]], ...]  # (table, columns that show a CSV header is that table)
    holds: str  # "… is not a JSON, CSV or XLSX file of <holds>."
    json_lists: str  # "The JSON file must be an object with <json_lists>."
    json_keys: str  # "Unknown key …; the file holds <json_keys>."
    csv_header_rule: str  # follows "The CSV header is not recognised: "
    sheet_rule: str  # follows "The workbook has the sheets …; "
    empty: str  # the problem of a file with no rows at all
    keyed_columns: dict[str, KeyedColumns] = field(default_factory=dict)  # table → its keyed field, if any

    def read(self, filename: str, content: bytes):
        """(format, {table: [(row number, {field: value})]}, problems): rows as written, problems of the file.

        Raises ImportInvalid at once when the file cannot be read at all.
        """
        if not content.removeprefix(b"\xef\xbb\xbf").strip():
            raise file_invalid("The file is empty.")
        file_format = self._format(filename, content)
        read = {"json": self._read_json, "csv": self._read_csv, "xlsx": self._read_xlsx}[file_format]
        rows, problems = read(content)
        if not any(rows.values()) and not problems:
            problems.append(problem(FILE, None, None, self.empty))
        return file_format, rows, problems

    def in_file_order(self, problems: list[dict]) -> list[dict]:
        tables = (FILE, *self.fields)
        return sorted(problems, key=lambda p: (tables.index(p["table"]), p["row"] or 0))

    def _format(self, filename: str, content: bytes) -> str:
        extension = PurePath(filename).suffix.lower().lstrip(".")
        if extension in FORMATS:
            return extension
        if content.startswith(b"PK\x03\x04"):
            return "xlsx"
        if content.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
            return "json"
        first_line = content.split(b"\n", 1)[0].decode("utf-8-sig", errors="replace")
        if self._csv_table({_header_name(cell) for cell in next(csv.reader([first_line]), [])}):
            return "csv"
        raise file_invalid(f"“{filename}” is not a JSON, CSV or XLSX file of {self.holds}.")

    def _csv_table(self, column_names: set[str]) -> str | None:
        return next((table for table, columns in self.csv_tables if columns <= column_names), None)

    def _read_json(self, content: bytes):
        try:
            data = json_loads_bounded(_decode(content), object_pairs_hook=_json_object)
        except JSONTooDeep as exc:
            raise file_invalid(exc.message) from exc
        except json.JSONDecodeError as exc:
            message = f"The file is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})."
            raise file_invalid(message) from exc
        if not isinstance(data, _JsonObject):  # every JSON object is read as a _JsonObject
            raise file_invalid(f"The JSON file must be an object with {self.json_lists}.")
        problems = [problem(FILE, None, key, f"“{key}” is given twice.") for key in data.duplicate_keys]
        problems += [
            problem(FILE, None, key, f"Unknown key “{key}”; the file holds {self.json_keys}.")
            for key in data
            if key not in self.fields
        ]
        rows: dict[str, list[tuple[int, dict]]] = {}
        for table, fields in self.fields.items():
            entries = data.get(table)
            if entries is None:
                entries = []
            elif not isinstance(entries, list):
                problems.append(problem(FILE, None, table, f"“{table}” must be a list."))
                entries = []
            rows[table] = []
            for number, entry in enumerate(entries, start=1):
                if not isinstance(entry, _JsonObject):
                    problems.append(problem(table, number, None, "Each entry must be an object."))
                    continue
                problems += [problem(table, number, key, f"“{key}” is given twice.") for key in entry.duplicate_keys]
                problems += [
                    problem(table, number, key, f"Unknown field “{key}”; the {table} fields are: {', '.join(fields)}.")
                    for key in entry
                    if key not in fields
                ]
                rows[table].append((number, {key: value for key, value in entry.items() if key in fields}))
        return rows, problems

    def _read_csv(self, content: bytes):
        lines = _csv_rows(_decode(content))
        header: list[str] = next(lines, [])
        table = self._csv_table({_header_name(cell) for cell in header})
        if table is None:
            raise file_invalid(f"The CSV header is not recognised: {self.csv_header_rule}")
        records, problems = self._read_grid(table, header, enumerate(lines, start=2))
        return {table: records}, problems

    def _read_xlsx(self, content: bytes):
        _check_xlsx_archive(content)
        try:
            # Not data_only: a formula cell is reported as a formula, not read as its cached value or as empty.
            workbook = load_workbook(io.BytesIO(content), read_only=True, data_only=False)
        except Exception as exc:  # openpyxl raises many kinds of error on a damaged workbook
            raise file_invalid("The file is not a readable XLSX workbook.") from exc
        try:
            names = workbook.sheetnames
            if not names or any(name not in self.fields for name in names):
                found = ", ".join(f"“{name}”" for name in names)
                raise file_invalid(f"The workbook has the sheets {found}; {self.sheet_rule}")
            rows, problems = {}, []
            for name in names:
                sheet_rows = _sheet_rows(name, workbook[name])
                header = next(sheet_rows, None)
                if header is not None:
                    rows[name], sheet_problems = self._read_grid(name, header, enumerate(sheet_rows, start=2))
                    problems += sheet_problems
            return rows, problems
        except ImportInvalid:
            raise
        except Exception as exc:  # as above: damaged sheet data
            raise file_invalid("The file is not a readable XLSX workbook.") from exc
        finally:
            workbook.close()

    def _read_grid(self, table: str, header: list, numbered_rows):
        """Rows of a CSV table or a sheet as (row number, {column: value}); problems with the header or cells."""
        fields = self.fields[table]
        keyed = self.keyed_columns.get(table)
        header = _bounded_columns(table, 1, header)
        columns = [_header_name(cell) for cell in header]
        keys = [keyed.key_of(str(cell)) if keyed and cell is not None else None for cell in header]
        problems, seen = [], set()
        for index, name in enumerate(columns):
            letter = get_column_letter(index + 1)
            if not name:
                continue
            if keyed and keys[index] is not None:  # a column has a key only in a table with keyed columns
                if not keys[index]:
                    message = f"The {keyed.label} column {letter} names no {keyed.key_name}."
                    problems.append(problem(table, 1, name, message))
                elif name in seen:
                    problems.append(problem(table, 1, name, f"The column “{header[index]}” appears twice."))
            elif (keyed and name == keyed.field) or name not in fields:
                if keyed:
                    names = ", ".join(column for column in fields if column != keyed.field)
                    names += f" and one “{keyed.prefix}<{keyed.key_name}>” column per {keyed.key_name}"
                else:
                    names = ", ".join(fields)
                message = f"Unknown column “{name}” (column {letter}); the {table} columns are: {names}."
                problems.append(problem(table, 1, name, message))
            elif name in seen:
                problems.append(problem(table, 1, name, f"The column “{name}” appears twice."))
            seen.add(name)
        missing = [name for name in self.required[table] if name not in seen]
        problems += [problem(table, 1, name, f"The {table} table has no “{name}” column.") for name in missing]
        if missing:
            return [], problems
        records = []
        for number, cells in numbered_rows:
            if all(_is_blank(cell) for cell in cells):
                continue
            if number > settings.OH_IMPORT_MAX_ROWS + 1:  # the header is row 1
                raise file_invalid(
                    f"The {table} table goes on past row {number - 1}; at most {settings.OH_IMPORT_MAX_ROWS} rows can "
                    "be imported at once: split the file."
                )
            cells = _bounded_columns(table, number, cells)
            values: dict[str, Any] = {}
            keyed_values: dict[str, Any] = {}
            for index, cell in enumerate(cells):
                name = columns[index] if index < len(columns) else ""
                key = keys[index] if index < len(keys) else None
                if key:
                    keyed_values.setdefault(key, None if _is_blank(cell) else cell)
                elif name in fields and name not in values:
                    values[name] = cell
                elif not name and not _is_blank(cell):
                    letter = get_column_letter(index + 1)
                    problems.append(problem(table, number, None, f"Column {letter} has a value but no header."))
            if keyed:
                values[keyed.field] = keyed_values
            records.append((number, values))
        return records, problems


def _csv_rows(text: str):
    """The rows of a CSV text one at a time; an unreadable row is a problem of the file."""
    reader = csv.reader(io.StringIO(text, newline=""))
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise file_invalid(f"The CSV file cannot be read: {exc}.") from exc
        yield row


def _bounded_columns(table: str, number: int, cells):
    """The cells of a row, refused when one past the column limit holds a value (trailing blanks are dropped)."""
    limit = settings.OH_IMPORT_MAX_COLUMNS
    if len(cells) > limit and any(not _is_blank(cell) for cell in cells[limit:]):
        raise file_invalid(
            f"Row {number} of the {table} table has a value past column {get_column_letter(limit)}; "
            f"at most {limit} columns can be imported."
        )
    return cells[:limit]


def _check_xlsx_archive(content: bytes) -> None:
    """Refuse a workbook whose zip directory declares too much data, or data compressed suspiciously well (a "zip
    bomb"), before any of it is decompressed."""
    try:
        members = zipfile.ZipFile(io.BytesIO(content)).infolist()
    except (zipfile.BadZipFile, ValueError) as exc:
        raise file_invalid("The file is not a readable XLSX workbook.") from exc
    limit, ratio = settings.OH_XLSX_MAX_UNCOMPRESSED_BYTES, settings.OH_XLSX_MAX_COMPRESSION_RATIO
    total = sum(member.file_size for member in members)
    if total > limit:
        raise file_invalid(
            f"The workbook expands to {total:,} bytes; at most {limit:,} can be imported: split the file."
        )
    for member in members:
        # Small parts compress unevenly; only large ones are held to the ratio.
        if member.file_size > 1024 * 1024 and member.file_size > ratio * max(member.compress_size, 1):
            raise file_invalid(
                f"The workbook's part {member.filename} expands {member.file_size // max(member.compress_size, 1)} "
                f"times (at most {ratio} is accepted): it is not a spreadsheet that can be imported."
            )


def _sheet_rows(name: str, sheet):
    """The rows of a read-only sheet as values, one at a time, formula cells as FormulaCell. A sheet that declares
    more rows or columns than can be imported is refused before a row is read. The rows are then read as the sheet
    holds them, whatever it declared (a sheet may declare no dimension, or a smaller one than it holds): each row as
    wide as its last cell, so a value past the column limit is seen (and refused by the grid), and the sheet is
    refused at the first row past the row limit, so a cell far down the sheet is never dropped unseen."""
    max_rows, max_columns = settings.OH_IMPORT_MAX_ROWS + 1, settings.OH_IMPORT_MAX_COLUMNS
    declared_rows, declared_columns = sheet.max_row, sheet.max_column
    if (declared_rows or 0) > max_rows or (declared_columns or 0) > max_columns:
        raise file_invalid(
            f"The sheet “{name}” declares {declared_rows or 0:,} rows and {declared_columns or 0:,} columns; at most "
            f"{max_rows - 1:,} rows and {max_columns} columns can be imported."
        )
    # Without a dimension openpyxl reads rows lazily and as long as their cells; with one it would cut them to it.
    sheet.reset_dimensions()
    for number, cells in enumerate(sheet.iter_rows(), start=1):
        if number > max_rows:
            # A row here (even an empty one, or the gap before a later row) means the sheet goes on past the limit.
            raise file_invalid(
                f"The sheet “{name}” goes on past row {max_rows - 1:,}; at most {max_rows - 1:,} rows can be "
                "imported at once: split the file."
            )
        yield tuple(FormulaCell(str(cell.value)) if cell.data_type == "f" else cell.value for cell in cells)


def _decode(content: bytes) -> str:
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise file_invalid(
            f"The file is not UTF-8 text (the byte at position {exc.start} is not valid UTF-8); save it as UTF-8."
        ) from exc


class _JsonObject(dict):
    """A JSON object that remembers keys given twice (json keeps only the last one silently)."""

    duplicate_keys: list[str]


def _json_object(pairs) -> _JsonObject:
    obj = _JsonObject()
    obj.duplicate_keys = []
    for key, value in pairs:
        if key in obj:
            obj.duplicate_keys.append(key)
        obj[key] = value
    return obj


def _header_name(cell) -> str:
    return "" if cell is None else str(cell).strip().lower()


def _is_blank(cell) -> bool:
    return cell is None or (isinstance(cell, str) and not cell.strip())

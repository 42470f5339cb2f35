"""Import research tasks and proposals into a cohort from a JSON, CSV or XLSX file.

The whole file is validated before anything is written: a file with any problem imports nothing, and
the coordinator receives every problem with its table, row and field. Importing the same bytes into the
same cohort again changes nothing (the file's sha256 is kept on an ImportBatch). A task or proposal that
already exists is reused when its content is identical and refused when it differs, never overwritten.
"""

import csv
import hashlib
import io
import json
import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime
from functools import cache
from pathlib import PurePath

from django.db import IntegrityError, transaction
from openpyxl import load_workbook
from openpyxl.utils import get_column_letter

from reviewapp.models import Cohort, ImportBatch, Proposal, ResearchTask

TASKS, PROPOSALS, FILE = "tasks", "proposals", "file"
TASK_FIELDS = ("key", "question", "background", "reference_statement", "published", "dataset")
PROPOSAL_FIELDS = (
    "id",
    "task",
    "statement",
    "mechanism",
    "prediction",
    "domain_category",
    "investigation_plan",
    "data_requirements",
    "alternative_explanations",
    "citations",
    "author",
    "author_company",
    "method",
    "source_run",
    "parents",
)
FIELDS = {TASKS: TASK_FIELDS, PROPOSALS: PROPOSAL_FIELDS}
REQUIRED = {TASKS: ("key", "question"), PROPOSALS: ("id", "task", "statement")}
FORMATS = ("json", "csv", "xlsx")
# Proposal columns stored under the same name on the model (id, task and parents are mapped apart).
_PROPOSAL_MODEL_FIELDS = tuple(name for name in PROPOSAL_FIELDS if name not in ("id", "task", "parents"))
# SQLite refuses queries with too many parameters, so lookups by many ids go in chunks.
_LOOKUP_CHUNK = 900
_WRITE_BATCH = 1000
_PARTIAL_DATE = re.compile(r"(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?")


@dataclass(frozen=True)
class ImportResult:
    tasks: int  # records in the file, now part of the cohort
    proposals: int
    new_tasks: int  # created by this import
    new_proposals: int
    already_imported: bool


class ImportInvalid(Exception):
    """The file cannot be imported. rows: [{"table", "row", "field", "message"}], every problem found."""

    def __init__(self, rows: list[dict]):
        super().__init__(f"{len(rows)} problem(s) in the import file")
        self.rows = rows


class CohortFrozen(Exception):
    """Proposals are added to a cohort only while it is a draft."""


def task_content_sha256(values) -> str:
    """sha256 of a task's content: a mapping with TASK_FIELDS as keys (published a date or None)."""
    content = {name: values[name] for name in TASK_FIELDS}
    content["published"] = content["published"].isoformat() if content["published"] else None
    return _sha256_json(content)


def proposal_content_sha256(values) -> str:
    """sha256 of a proposal's content: a mapping with PROPOSAL_FIELDS as keys (task a key, parents ids)."""
    content = {name: values[name] for name in PROPOSAL_FIELDS}
    content["parents"] = sorted(content["parents"])
    return _sha256_json(content)


def cohort_import_file(*, cohort: Cohort, filename: str, content: bytes, user) -> ImportResult:
    _ensure_draft(cohort)
    sha256 = hashlib.sha256(content).hexdigest()
    previous = ImportBatch.objects.filter(cohort=cohort, sha256=sha256).first()
    if previous:
        return _repeated(previous)
    file_format, tasks, proposals, problems = _read_and_check_file(filename, content)
    try:
        with transaction.atomic():
            # Checked again under the cohort's lock: a status change or the same upload may have raced us.
            cohort = Cohort.objects.select_for_update().get(pk=cohort.pk)
            _ensure_draft(cohort)
            previous = ImportBatch.objects.filter(cohort=cohort, sha256=sha256).first()
            if previous:
                return _repeated(previous)
            database_problems, task_pks, proposal_pks = _check_against_database(tasks, proposals)
            problems += database_problems
            if problems:
                raise ImportInvalid(_in_file_order(problems))
            batch = ImportBatch.objects.create(
                cohort=cohort,
                filename=PurePath(filename).name[:255],
                file_format=file_format,
                sha256=sha256,
                task_count=len(tasks),
                proposal_count=len(proposals),
                created_by=user if user is not None and user.is_authenticated else None,
            )
            new_tasks, new_proposals = _write(cohort, batch, tasks, proposals, task_pks, proposal_pks)
    except IntegrityError as exc:
        # Only a concurrent import of the same records can get past the checks above.
        message = "Another import added some of these records at the same moment; import the file again."
        raise ImportInvalid([_problem(FILE, None, None, message)]) from exc
    return ImportResult(
        tasks=len(tasks),
        proposals=len(proposals),
        new_tasks=new_tasks,
        new_proposals=new_proposals,
        already_imported=False,
    )


def _ensure_draft(cohort: Cohort) -> None:
    if cohort.status != Cohort.Status.DRAFT:
        raise CohortFrozen(
            f"The cohort “{cohort.name}” is {cohort.get_status_display().lower()}; "
            "proposals can be imported only while a cohort is a draft."
        )


def _repeated(batch: ImportBatch) -> ImportResult:
    return ImportResult(
        tasks=batch.task_count, proposals=batch.proposal_count, new_tasks=0, new_proposals=0, already_imported=True
    )


def _problem(table: str, row: int | None, field: str | None, message: str) -> dict:
    return {"table": table, "row": row, "field": field, "message": message}


def _file_invalid(message: str) -> ImportInvalid:
    return ImportInvalid([_problem(FILE, None, None, message)])


def _in_file_order(problems: list[dict]) -> list[dict]:
    tables = (FILE, TASKS, PROPOSALS)
    return sorted(problems, key=lambda p: (tables.index(p["table"]), p["row"] or 0))


def _sha256_json(content: dict) -> str:
    canonical = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


# Reading the file ------------------------------------------------------------------------------------


def _read_and_check_file(filename: str, content: bytes):
    """(format, tasks, proposals, problems): clean records and every problem the file shows by itself.

    Raises ImportInvalid at once when the file cannot be read at all.
    """
    if not content.removeprefix(b"\xef\xbb\xbf").strip():
        raise _file_invalid("The file is empty.")
    file_format = _file_format(filename, content)
    read = {"json": _read_json, "csv": _read_csv, "xlsx": _read_xlsx}[file_format]
    rows, problems = read(content)
    tasks = _clean_table(TASKS, rows.get(TASKS, []), problems)
    proposals = _clean_table(PROPOSALS, rows.get(PROPOSALS, []), problems)
    if not tasks and not proposals and not problems:
        problems.append(_problem(FILE, None, None, "The file holds no tasks and no proposals."))
    _check_within_file(tasks, proposals, problems)
    return file_format, tasks, proposals, problems


def _file_format(filename: str, content: bytes) -> str:
    extension = PurePath(filename).suffix.lower().lstrip(".")
    if extension in FORMATS:
        return extension
    if content.startswith(b"PK\x03\x04"):
        return "xlsx"
    if content.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
        return "json"
    first_line = content.split(b"\n", 1)[0].decode("utf-8-sig", errors="replace")
    if _csv_table({_header_name(cell) for cell in next(csv.reader([first_line]), [])}):
        return "csv"
    raise _file_invalid(f"“{filename}” is not a JSON, CSV or XLSX file of tasks or proposals.")


def _decode(content: bytes) -> str:
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _file_invalid(
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


def _read_json(content: bytes):
    try:
        data = json.loads(_decode(content), object_pairs_hook=_json_object)
    except json.JSONDecodeError as exc:
        raise _file_invalid(f"The file is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}).") from exc
    if not isinstance(data, dict):
        raise _file_invalid("The JSON file must be an object with a “tasks” list and/or a “proposals” list.")
    problems = [_problem(FILE, None, key, f"“{key}” is given twice.") for key in data.duplicate_keys]
    problems += [
        _problem(FILE, None, key, f"Unknown key “{key}”; the file holds “tasks” and/or “proposals”.")
        for key in data
        if key not in FIELDS
    ]
    rows = {}
    for table, fields in FIELDS.items():
        entries = data.get(table)
        if entries is None:
            entries = []
        elif not isinstance(entries, list):
            problems.append(_problem(FILE, None, table, f"“{table}” must be a list."))
            entries = []
        rows[table] = []
        for number, entry in enumerate(entries, start=1):
            if not isinstance(entry, dict):
                problems.append(_problem(table, number, None, "Each entry must be an object."))
                continue
            problems += [_problem(table, number, key, f"“{key}” is given twice.") for key in entry.duplicate_keys]
            problems += [
                _problem(table, number, key, f"Unknown field “{key}”; the {table} fields are: {', '.join(fields)}.")
                for key in entry
                if key not in fields
            ]
            rows[table].append((number, {key: value for key, value in entry.items() if key in fields}))
    return rows, problems


def _header_name(cell) -> str:
    return "" if cell is None else str(cell).strip().lower()


def _csv_table(column_names: set[str]) -> str | None:
    if {"key", "question"} <= column_names:
        return TASKS
    if {"id", "task", "statement"} <= column_names:
        return PROPOSALS
    return None


def _read_csv(content: bytes):
    try:
        grid = list(csv.reader(io.StringIO(_decode(content), newline="")))
    except csv.Error as exc:
        raise _file_invalid(f"The CSV file cannot be read: {exc}.") from exc
    table = _csv_table({_header_name(cell) for cell in grid[0]})
    if table is None:
        raise _file_invalid(
            "The CSV header is not recognised: a tasks table needs the columns key and question, "
            "a proposals table the columns id, task and statement (comma-separated, header on the first line)."
        )
    records, problems = _read_grid(table, grid[0], enumerate(grid[1:], start=2))
    return {table: records}, problems


def _read_xlsx(content: bytes):
    try:
        workbook = load_workbook(io.BytesIO(content), read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many kinds of error on a damaged workbook
        raise _file_invalid("The file is not a readable XLSX workbook.") from exc
    names = workbook.sheetnames
    if not names or any(name not in FIELDS for name in names):
        workbook.close()
        found = ", ".join(f"“{name}”" for name in names)
        raise _file_invalid(
            f"The workbook has the sheets {found}; it must have a sheet named “tasks” and/or one named "
            "“proposals”, and no other sheets."
        )
    try:
        grids = {name: list(workbook[name].iter_rows(values_only=True)) for name in names}
    except Exception as exc:  # as above: damaged sheet data
        raise _file_invalid("The file is not a readable XLSX workbook.") from exc
    finally:
        workbook.close()
    rows, problems = {}, []
    for table, grid in grids.items():
        if grid:
            rows[table], sheet_problems = _read_grid(table, grid[0], enumerate(grid[1:], start=2))
            problems += sheet_problems
    return rows, problems


def _read_grid(table: str, header: list, numbered_rows):
    """Rows of a CSV table or a sheet as (row number, {column: value}); problems with the header or cells."""
    fields = FIELDS[table]
    columns = [_header_name(cell) for cell in header]
    problems, seen = [], set()
    for index, name in enumerate(columns):
        if not name:
            continue
        if name not in fields:
            letter = get_column_letter(index + 1)
            message = f"Unknown column “{name}” (column {letter}); the {table} columns are: {', '.join(fields)}."
            problems.append(_problem(table, 1, name, message))
        elif name in seen:
            problems.append(_problem(table, 1, name, f"The column “{name}” appears twice."))
        seen.add(name)
    missing = [name for name in REQUIRED[table] if name not in seen]
    problems += [_problem(table, 1, name, f"The {table} table has no “{name}” column.") for name in missing]
    if missing:
        return [], problems
    records = []
    for number, cells in numbered_rows:
        if all(_is_blank(cell) for cell in cells):
            continue
        values = {}
        for index, cell in enumerate(cells):
            name = columns[index] if index < len(columns) else ""
            if name in fields and name not in values:
                values[name] = cell
            elif not name and not _is_blank(cell):
                letter = get_column_letter(index + 1)
                problems.append(_problem(table, number, None, f"Column {letter} has a value but no header."))
        records.append((number, values))
    return records, problems


def _is_blank(cell) -> bool:
    return cell is None or (isinstance(cell, str) and not cell.strip())


# Cleaning values ---------------------------------------------------------------------------------------


def _text(value) -> str | None:
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


def _clean_text(value):
    text = _text(value)
    return ("", "Must be text.") if text is None else (text, None)


def _clean_date(value):
    if isinstance(value, datetime):
        return value.date(), None
    if isinstance(value, date):
        return value, None
    text = _text(value)
    if text == "":
        return None, None
    match = _PARTIAL_DATE.fullmatch(text or "")
    if match:
        year, month, day = (int(part) if part else 1 for part in match.groups())
        try:
            return date(year, month, day), None
        except ValueError:
            pass
    shown = f"“{text}”" if text else "This value"
    return None, f"{shown} is not a date; write YYYY-MM-DD, YYYY-MM or YYYY."


def _clean_citations(value):
    """Citations are stored one per line; a JSON list gives one citation per item."""
    if not isinstance(value, list):
        return _clean_text(value)
    items = [_text(item) for item in value]
    if any(item is None for item in items):
        return "", "Must be text or a list of texts."
    return "\n".join(item for item in items if item), None


def _clean_parents(value):
    """A list of proposal ids; in a CSV cell or a sheet the ids are separated by “;”."""
    if isinstance(value, list):
        items = [_text(item) for item in value]
        if any(item is None for item in items):
            return [], "Must be a list of proposal ids."
    else:
        text = _text(value)
        if text is None:
            return [], "Must be a list of proposal ids."
        items = text.split(";")
    return list(dict.fromkeys(item.strip() for item in items if item.strip())), None


_CLEANERS = {"published": _clean_date, "citations": _clean_citations, "parents": _clean_parents}


@cache
def _max_length(table: str, name: str) -> int | None:
    if table == TASKS:
        return ResearchTask._meta.get_field(name).max_length
    if name == "id":
        return Proposal._meta.get_field("external_id").max_length
    if name == "task":
        return ResearchTask._meta.get_field("key").max_length
    return Proposal._meta.get_field(name).max_length


def _clean_table(table: str, rows, problems: list) -> list[dict]:
    """Records with clean values (and their row number); a value with a problem is left empty."""
    records = []
    for number, values in rows:
        record = {"row": number}
        for name in FIELDS[table]:
            value, message = _CLEANERS.get(name, _clean_text)(values.get(name))
            record[name] = value
            if message:
                problems.append(_problem(table, number, name, message))
            elif name in REQUIRED[table] and not value:
                claim = " (the claim)" if name == "statement" else ""
                problems.append(_problem(table, number, name, f"{name}{claim} is required."))
            elif isinstance(value, str) and (limit := _max_length(table, name)) and len(value) > limit:
                problems.append(
                    _problem(table, number, name, f"{name} has {len(value)} characters; at most {limit} are allowed.")
                )
        records.append(record)
    return records


def _check_within_file(tasks: list[dict], proposals: list[dict], problems: list) -> None:
    for table, records, name in ((TASKS, tasks, "key"), (PROPOSALS, proposals, "id")):
        first_row = {}
        for record in records:
            value = record[name]
            if value and value in first_row:
                message = f"The {name} “{value}” is used twice in this file (first on row {first_row[value]})."
                problems.append(_problem(table, record["row"], name, message))
            first_row.setdefault(value, record["row"])
    for record in proposals:
        if record["id"] and record["id"] in record["parents"]:
            problems.append(_problem(PROPOSALS, record["row"], "parents", "A proposal cannot be its own parent."))
    problems += _revision_cycles(proposals)


def _revision_cycles(proposals: list[dict]) -> list[dict]:
    """Proposals of the file whose parents lead back round a cycle (revisions must form a DAG)."""
    by_id = {}
    for record in proposals:
        by_id.setdefault(record["id"], record)
    waiting, children = {}, defaultdict(list)
    for proposal_id, record in by_id.items():
        parents = [parent for parent in record["parents"] if parent in by_id and parent != proposal_id]
        waiting[proposal_id] = len(parents)
        for parent in parents:
            children[parent].append(proposal_id)
    ready = [proposal_id for proposal_id, count in waiting.items() if count == 0]
    while ready:
        for child in children[ready.pop()]:
            waiting[child] -= 1
            if waiting[child] == 0:
                ready.append(child)
    return [
        _problem(PROPOSALS, by_id[proposal_id]["row"], "parents", "The parents lead back round a cycle of revisions.")
        for proposal_id, count in waiting.items()
        if count > 0
    ]


# Checking against the database and writing ------------------------------------------------------------


def _fetch_in(queryset, field: str, values) -> list:
    values = list(values)
    found = []
    for start in range(0, len(values), _LOOKUP_CHUNK):
        found += queryset.filter(**{f"{field}__in": values[start : start + _LOOKUP_CHUNK]})
    return found


def _check_against_database(tasks: list[dict], proposals: list[dict]):
    """(problems, pks of existing tasks by key, pks of existing proposals by id) for what the file names."""
    problems = []
    file_keys = {record["key"] for record in tasks if record["key"]}
    named_keys = file_keys | {record["task"] for record in proposals if record["task"]}
    existing_tasks = {task.key: task for task in _fetch_in(ResearchTask.objects.all(), "key", named_keys)}
    for record in tasks:
        task = existing_tasks.get(record["key"])
        if task and task_content_sha256(_task_values(task)) != task_content_sha256(record):
            message = f"A task with key “{record['key']}” already exists with different content."
            problems.append(_problem(TASKS, record["row"], "key", message))

    file_ids = {record["id"] for record in proposals if record["id"]}
    named_ids = file_ids | {parent for record in proposals for parent in record["parents"]}
    existing = {p.external_id: p for p in _fetch_in(Proposal.objects.select_related("task"), "external_id", named_ids)}
    parents_of = defaultdict(list)
    for child_pk, parent_id in _fetch_in(
        Proposal.parents.through.objects.values_list("from_proposal_id", "to_proposal__external_id"),
        "from_proposal_id",
        [existing[proposal_id].pk for proposal_id in file_ids if proposal_id in existing],
    ):
        parents_of[child_pk].append(parent_id)
    for record in proposals:
        row = record["row"]
        if record["task"] and record["task"] not in file_keys and record["task"] not in existing_tasks:
            message = f"Unknown task “{record['task']}”: it is neither in this file nor already imported."
            problems.append(_problem(PROPOSALS, row, "task", message))
        for parent in record["parents"]:
            if parent not in file_ids and parent not in existing:
                message = f"Unknown parent “{parent}”: it is neither in this file nor already imported."
                problems.append(_problem(PROPOSALS, row, "parents", message))
        proposal = existing.get(record["id"])
        if proposal and proposal_content_sha256(
            _proposal_values(proposal, parents_of[proposal.pk])
        ) != proposal_content_sha256(record):
            message = f"A proposal with id “{record['id']}” already exists with different content."
            problems.append(_problem(PROPOSALS, row, "id", message))
    task_pks = {key: task.pk for key, task in existing_tasks.items()}
    proposal_pks = {proposal_id: proposal.pk for proposal_id, proposal in existing.items()}
    return problems, task_pks, proposal_pks


def _task_values(task: ResearchTask) -> dict:
    return {name: getattr(task, name) for name in TASK_FIELDS}


def _proposal_values(proposal: Proposal, parent_ids: list[str]) -> dict:
    values = {name: getattr(proposal, name) for name in _PROPOSAL_MODEL_FIELDS}
    return {**values, "id": proposal.external_id, "task": proposal.task.key, "parents": parent_ids}


def _write(cohort, batch, tasks, proposals, task_pks: dict, proposal_pks: dict) -> tuple[int, int]:
    new_tasks = [
        ResearchTask(
            **{name: record[name] for name in TASK_FIELDS},
            content_sha256=task_content_sha256(record),
            import_batch=batch,
        )
        for record in tasks
        if record["key"] not in task_pks
    ]
    ResearchTask.objects.bulk_create(new_tasks, batch_size=_WRITE_BATCH)
    new_keys = [task.key for task in new_tasks]
    task_pks = task_pks | dict(_fetch_in(ResearchTask.objects.values_list("key", "pk"), "key", new_keys))

    new_records = [record for record in proposals if record["id"] not in proposal_pks]
    Proposal.objects.bulk_create(
        [
            Proposal(
                external_id=record["id"],
                task_id=task_pks[record["task"]],
                **{name: record[name] for name in _PROPOSAL_MODEL_FIELDS},
                content_sha256=proposal_content_sha256(record),
                import_batch=batch,
            )
            for record in new_records
        ],
        batch_size=_WRITE_BATCH,
    )
    new_ids = [record["id"] for record in new_records]
    new_pks = _fetch_in(Proposal.objects.values_list("external_id", "pk"), "external_id", new_ids)
    proposal_pks = proposal_pks | dict(new_pks)

    # Parents are linked once every proposal of the file exists; reused proposals keep the links they have.
    Link = Proposal.parents.through
    Link.objects.bulk_create(
        [
            Link(from_proposal_id=proposal_pks[record["id"]], to_proposal_id=proposal_pks[parent])
            for record in new_records
            for parent in record["parents"]
        ],
        batch_size=_WRITE_BATCH,
    )
    Member = Cohort.proposals.through
    Member.objects.bulk_create(
        [Member(cohort_id=cohort.pk, proposal_id=proposal_pks[record["id"]]) for record in proposals],
        batch_size=_WRITE_BATCH,
        ignore_conflicts=True,
    )
    return len(new_tasks), len(new_records)

"""Import research tasks and proposals into a cohort from a JSON, CSV or XLSX file, with the optional tables of
research runs: the runs (budgets and notes), their recorded decisions, the versions' delivery records and the agents'
trajectories (docs/protocol.md#research-runs).

The whole file is validated before anything is written: a file with any problem imports nothing, and
the coordinator receives every problem with its table, row and field. Importing the same bytes into the
same cohort again changes nothing (the file's sha256 is kept on an ImportBatch). A task or proposal that
already exists is reused when its content is identical and refused when it differs, never overwritten.

On SQLite, whose one write lock every reviewer's autosave waits on, a large file is written in short committed
steps (`_STAGE_ROWS` proposals or links each, the database left free between them), staged invisibly: its proposals
join no cohort, and its batch is marked `staging`, until the last step adds them to the cohort and clears the mark.
A staged import that fails removes what it wrote; one whose process died is removed when the same file is imported
again, or by the sweeper (`staged_imports_sweep`). On PostgreSQL, whose writers do not wait on each other, an import
is one transaction.
"""

import hashlib
import json
import logging
import re
import time
from collections import defaultdict
from collections.abc import Callable
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import cache
from pathlib import PurePath

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Field, Model
from django.utils import timezone

from reviewapp.core.errors import ServiceError
from reviewapp.models import Cohort, ImportBatch, Proposal, ResearchTask
from reviewapp.services import run_imports
from reviewapp.services.run_imports import RunTables
from reviewapp.services.tabular_files import (
    ImportInvalid,
    TableFile,
    as_text,
    clean_rows,
    clean_text,
    file_invalid,
    problem,
)

logger = logging.getLogger(__name__)

TASKS, PROPOSALS = "tasks", "proposals"
RUNS, DECISIONS, DELIVERY, TRAJECTORIES = (
    run_imports.RUNS,
    run_imports.DECISIONS,
    run_imports.DELIVERY,
    run_imports.TRAJECTORIES,
)
TASK_FIELDS = ("key", "question", "background", "reference_statement", "published", "dataset", "sources")
# Task fields a task's content fingerprint covers only when given, so that the fingerprints of tasks imported before
# the field existed stay what they were.
_TASK_FINGERPRINT_WHEN_GIVEN = ("sources",)
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
    "research_run",
)
# Proposal fields its content fingerprint covers only when given (as for tasks' sources).
_PROPOSAL_FINGERPRINT_WHEN_GIVEN = ("research_run",)
RUN_FIELDS = ("id", "task", "author", "budget", "budget_unit", "notes")
DECISION_FIELDS = ("run", "seq", "kind", "proposals", "budget", "rationale")
DELIVERY_FIELDS = ("proposal", "stage", "status", "evidence")
TRAJECTORY_FIELDS = ("id", "run", "role", "proposals", "summary")
FIELDS = {
    TASKS: TASK_FIELDS,
    PROPOSALS: PROPOSAL_FIELDS,
    RUNS: RUN_FIELDS,
    DECISIONS: DECISION_FIELDS,
    DELIVERY: DELIVERY_FIELDS,
    TRAJECTORIES: TRAJECTORY_FIELDS,
}
REQUIRED = {
    TASKS: ("key", "question"),
    PROPOSALS: ("id", "task", "statement"),
    RUNS: ("id", "task", "author"),
    DECISIONS: ("run", "seq", "kind"),
    DELIVERY: ("proposal", "stage", "status"),
    TRAJECTORIES: ("id", "run", "summary"),
}
# Proposal columns stored under the same name on the model (id, task, parents and the run are mapped apart).
_PROPOSAL_MODEL_FIELDS = tuple(
    name for name in PROPOSAL_FIELDS if name not in ("id", "task", "parents", "research_run")
)
# SQLite refuses queries with too many parameters, so lookups by many ids go in chunks.
_LOOKUP_CHUNK = 900
_WRITE_BATCH = 1000
_PARTIAL_DATE = re.compile(r"(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?")
# A task's sources in one cell: ids separated by spaces, commas or semicolons (a semicolon inside a DOI, as in
# "10.1002/(SICI)…CO;2-K", is not a separator: one is only where the next id starts).
_SOURCE_SEPARATOR = re.compile(r"[\s,]+|;(?=\s*(?:pmid|doi:|10\.\d|https?://|\d+(?:[;,\s]|$)))", re.IGNORECASE)
# "PMID 123", "pmid: 123", "DOI: 10.1000/x" are one id each.
_SOURCE_LABEL = re.compile(r"\b(pmid|doi)\s*:?\s*(?=\d)", re.IGNORECASE)
_PMID = re.compile(r"^(?:pmid:)?(\d{1,9})$", re.IGNORECASE)
_SOURCE_DOI = re.compile(r"^(?:doi:\s*|https?://(?:dx\.)?doi\.org/)?(10\.\d{4,9}(?:\.\d+)*/\S+)$", re.IGNORECASE)
COHORT_FILE = TableFile(
    fields=FIELDS,
    required=REQUIRED,
    # A CSV header is told by its required columns; proposals before runs (a proposals table has author too).
    csv_tables=tuple((table, frozenset(REQUIRED[table])) for table in FIELDS),
    holds="tasks or proposals",
    json_lists="a “tasks” list and/or a “proposals” list (and optionally “research_runs”, “decisions”, “delivery”, "
    "“trajectories”)",
    json_keys="“tasks”, “proposals”, “research_runs”, “decisions”, “delivery” and “trajectories”",
    csv_header_rule="a tasks table needs the columns key and question, a proposals table the columns id, task and "
    "statement, a research_runs table id, task and author, a decisions table run, seq and kind, a delivery table "
    "proposal, stage and status, a trajectories table id, run and summary (comma-separated, header on the first "
    "line).",
    sheet_rule="its sheets may be named “tasks”, “proposals”, “research_runs”, “decisions”, “delivery” and "
    "“trajectories”, and no others.",
    empty="The file holds no tasks and no proposals.",
)


@dataclass(frozen=True)
class ImportResult:
    tasks: int  # records in the file, now part of the cohort
    proposals: int
    new_tasks: int  # created by this import
    new_proposals: int
    already_imported: bool


class CohortFrozen(ServiceError):
    """Proposals are added to a cohort only while it is a draft."""

    code = "cohort_frozen"
    status = 409


def task_content_sha256(values) -> str:
    """sha256 of a task's content: a mapping with TASK_FIELDS as keys (published a date or None; sources may be
    left out, and count only when given)."""
    content = {
        name: values[name] for name in TASK_FIELDS if name not in _TASK_FINGERPRINT_WHEN_GIVEN or values.get(name)
    }
    content["published"] = content["published"].isoformat() if content["published"] else None
    return _sha256_json(content)


def proposal_content_sha256(values) -> str:
    """sha256 of a proposal's content: a mapping with PROPOSAL_FIELDS as keys (task a key, parents ids)."""
    content = {
        name: values.get(name, "")
        for name in PROPOSAL_FIELDS
        if name not in _PROPOSAL_FINGERPRINT_WHEN_GIVEN or values.get(name)
    }
    content["parents"] = sorted(content["parents"])
    return _sha256_json(content)


def cohort_import_file(*, cohort: Cohort, filename: str, content: bytes, user) -> ImportResult:
    _ensure_draft(cohort)
    sha256 = hashlib.sha256(content).hexdigest()
    previous = ImportBatch.objects.filter(cohort=cohort, sha256=sha256).first()
    if previous and previous.staging:
        _unstage(previous)  # left by an import whose process died
    elif previous:
        return _repeated(previous)
    file_format, tasks, proposals, run_tables, problems = _read_and_check_file(filename, content)
    staged = connection.vendor == "sqlite" and len(proposals) > _STAGE_ABOVE
    with refused_when_raced(), transaction.atomic():
        # Checked again under the cohort's lock: a status change or the same upload may have raced us.
        cohort = Cohort.objects.select_for_update().get(pk=cohort.pk)
        _ensure_draft(cohort)
        previous = ImportBatch.objects.filter(cohort=cohort, sha256=sha256).first()
        if previous:
            return _repeated(previous)
        database_problems, task_pks, proposal_pks = _check_against_database(tasks, proposals)
        problems += database_problems
        task_keys = {record["key"] for record in tasks if record["key"]} | set(task_pks)
        run_imports.check_run_tables(run_tables, proposals=proposals, task_keys=task_keys, problems=problems)
        if problems:
            raise ImportInvalid(COHORT_FILE.in_file_order(problems))
        batch = ImportBatch.objects.create(
            cohort=cohort,
            **batch_fields(filename=filename, file_format=file_format, sha256=sha256, user=user),
            task_count=len(tasks),
            proposal_count=len(proposals),
            staging=staged,
        )
        if not staged:
            new_tasks, new_proposals = _write(cohort, batch, tasks, proposals, run_tables, task_pks, proposal_pks)
    if staged:
        try:
            with refused_when_raced():
                new_tasks, new_proposals = _write(
                    cohort, batch, tasks, proposals, run_tables, task_pks, proposal_pks, step=_staged_step
                )
        except BaseException:
            _unstage(batch)
            raise
    return ImportResult(
        tasks=len(tasks),
        proposals=len(proposals),
        new_tasks=new_tasks,
        new_proposals=new_proposals,
        already_imported=False,
    )


def batch_fields(*, filename: str, file_format: str, sha256: str, user) -> dict:
    """What every import's batch records of the file: its name (at most 255 characters), format and sha256, and who
    imported it."""
    return {
        "filename": PurePath(filename).name[:255],
        "file_format": file_format,
        "sha256": sha256,
        "created_by": user if user is not None and user.is_authenticated else None,
    }


@contextmanager
def refused_when_raced():
    """An import's checks and writes: an IntegrityError inside refuses the file (only a concurrent import of the same
    records can get past the checks)."""
    try:
        yield
    except IntegrityError as exc:
        message = "Another import added some of these records at the same moment; import the file again."
        raise file_invalid(message) from exc


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


def _sha256_json(content: dict) -> str:
    canonical = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


# Reading the file ------------------------------------------------------------------------------------


def _read_and_check_file(filename: str, content: bytes):
    """(format, tasks, proposals, problems): clean records and every problem the file shows by itself.

    Raises ImportInvalid at once when the file cannot be read at all.
    """
    file_format, rows, problems = COHORT_FILE.read(filename, content)
    tasks = _clean_table(TASKS, rows.get(TASKS, []), problems)
    proposals = _clean_table(PROPOSALS, rows.get(PROPOSALS, []), problems)
    run_tables = RunTables(
        runs=_clean_table(RUNS, rows.get(RUNS, []), problems),
        decisions=_clean_table(DECISIONS, rows.get(DECISIONS, []), problems),
        delivery=_clean_table(DELIVERY, rows.get(DELIVERY, []), problems),
        trajectories=_clean_table(TRAJECTORIES, rows.get(TRAJECTORIES, []), problems),
    )
    _check_within_file(tasks, proposals, problems)
    return file_format, tasks, proposals, run_tables, problems


# Cleaning values ---------------------------------------------------------------------------------------


def _clean_date(value):
    if isinstance(value, datetime):
        return value.date(), None
    if isinstance(value, date):
        return value, None
    text = as_text(value)
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
        return clean_text(value)
    items = [as_text(item) for item in value]
    if any(item is None for item in items):
        return "", "Must be text or a list of texts."
    return "\n".join(item for item in items if item), None


def _clean_parents(value):
    """A list of proposal ids; in a CSV cell or a sheet the ids are separated by “;”."""
    if isinstance(value, list):
        texts = [as_text(item) for item in value]
        if any(item is None for item in texts):
            return [], "Must be a list of proposal ids."
        items = [item for item in texts if item is not None]
    else:
        text = as_text(value)
        if text is None:
            return [], "Must be a list of proposal ids."
        items = text.split(";")
    return list(dict.fromkeys(item.strip() for item in items if item.strip())), None


def clean_sources(value):
    """A task's source publications as ["pmid:123", "doi:10.1000/x"] (DOIs lower-cased, repeats dropped), from a list
    or from one cell ("PMID:123; 10.1000/x", "https://doi.org/10.1000/x"); a problem names what is neither."""
    if isinstance(value, list):
        texts = [as_text(item) for item in value]
        if any(item is None for item in texts):
            return [], "Must be a list of PMIDs and DOIs."
        tokens = [token for text in texts for token in _SOURCE_SEPARATOR.split(_labelled(text or ""))]
    else:
        text = as_text(value)
        if text is None:
            return [], "Must be PMIDs and DOIs separated by “;”."
        tokens = _SOURCE_SEPARATOR.split(_labelled(text))
    sources, wrong = [], []
    for token in (token.strip().rstrip(".;,") for token in tokens):
        if not token:
            continue
        if pmid := _PMID.match(token):
            sources.append(f"pmid:{int(pmid.group(1))}")
        elif doi := _SOURCE_DOI.match(token):
            sources.append(f"doi:{doi.group(1).lower()}")
        else:
            wrong.append(token)
    if wrong:
        shown = ", ".join(f"“{token}”" for token in wrong[:5])
        return [], f"{shown} {'is' if len(wrong) == 1 else 'are'} neither a PMID nor a DOI (10.<registrant>/<suffix>)."
    return list(dict.fromkeys(sources)), None


def _labelled(text: str) -> str:
    return _SOURCE_LABEL.sub(lambda match: f"{match.group(1).lower()}:", text)


_CLEANERS = {
    "published": _clean_date,
    "citations": _clean_citations,
    "parents": _clean_parents,
    "sources": clean_sources,
    "proposals": _clean_parents,
    "budget": run_imports.clean_budget,
    "seq": run_imports.clean_seq,
}


# The most characters of each free-text field (the others have their column's max_length); README "Importing
# proposals". A reviewer reads every one of them on one page.
TEXT_LIMITS = {
    "question": 4000,
    "background": 8000,
    "reference_statement": 8000,
    "statement": 4000,
    "mechanism": 8000,
    "prediction": 8000,
    "investigation_plan": 20000,
    "data_requirements": 8000,
    "alternative_explanations": 8000,
    "citations": 20000,
}


@cache
def _max_length(table: str, name: str) -> int | None:
    if table not in (TASKS, PROPOSALS):
        return run_imports.LIMITS.get(name)
    if name == "research_run":
        return _field_max_length(Proposal, "source_run")
    if name in TEXT_LIMITS:
        return TEXT_LIMITS[name]
    if table == TASKS:
        return _field_max_length(ResearchTask, name)
    if name == "id":
        return _field_max_length(Proposal, "external_id")
    if name == "task":
        return _field_max_length(ResearchTask, "key")
    return _field_max_length(Proposal, name)


def _field_max_length(model: type[Model], name: str) -> int | None:
    field = model._meta.get_field(name)
    return field.max_length if isinstance(field, Field) else None  # every column read here is a concrete field


def _clean_table(table: str, rows, problems: list) -> list[dict]:
    """Records with clean values (and their row number); a value with a problem is left empty."""
    return clean_rows(
        table, rows, problems, fields=FIELDS, required=REQUIRED, cleaners=_CLEANERS, max_length=_max_length
    )


def _check_within_file(tasks: list[dict], proposals: list[dict], problems: list) -> None:
    for table, records, name in ((TASKS, tasks, "key"), (PROPOSALS, proposals, "id")):
        first_row: dict[str, int] = {}  # value → the row it is first on
        for record in records:
            value = record[name]
            if value and value in first_row:
                message = f"The {name} “{value}” is used twice in this file (first on row {first_row[value]})."
                problems.append(problem(table, record["row"], name, message))
            first_row.setdefault(value, record["row"])
    for record in proposals:
        if record["id"] and record["id"] in record["parents"]:
            problems.append(problem(PROPOSALS, record["row"], "parents", "A proposal cannot be its own parent."))
    problems += _revision_cycles(proposals)


def _revision_cycles(proposals: list[dict]) -> list[dict]:
    """Proposals of the file whose parents lead back round a cycle (revisions must form a DAG)."""
    by_id: dict[str, dict] = {}
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
        problem(PROPOSALS, by_id[proposal_id]["row"], "parents", "The parents lead back round a cycle of revisions.")
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
            problems.append(problem(TASKS, record["row"], "key", message))

    file_ids = {record["id"] for record in proposals if record["id"]}
    named_ids = file_ids | {parent for record in proposals for parent in record["parents"]}
    existing = {
        p.external_id: p
        for p in _fetch_in(Proposal.objects.select_related("task", "research_run"), "external_id", named_ids)
    }
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
            problems.append(problem(PROPOSALS, row, "task", message))
        for parent in record["parents"]:
            if parent not in file_ids and parent not in existing:
                message = f"Unknown parent “{parent}”: it is neither in this file nor already imported."
                problems.append(problem(PROPOSALS, row, "parents", message))
        proposal = existing.get(record["id"])
        if proposal and proposal_content_sha256(
            _proposal_values(proposal, parents_of[proposal.pk])
        ) != proposal_content_sha256(record):
            message = f"A proposal with id “{record['id']}” already exists with different content."
            problems.append(problem(PROPOSALS, row, "id", message))
    task_pks = {key: task.pk for key, task in existing_tasks.items()}
    proposal_pks = {proposal_id: proposal.pk for proposal_id, proposal in existing.items()}
    return problems, task_pks, proposal_pks


def _task_values(task: ResearchTask) -> dict:
    return {name: getattr(task, name) for name in TASK_FIELDS}


def _proposal_values(proposal: Proposal, parent_ids: list[str]) -> dict:
    values = {name: getattr(proposal, name) for name in _PROPOSAL_MODEL_FIELDS}
    run = proposal.research_run.external_id if proposal.research_run else ""
    return {**values, "id": proposal.external_id, "task": proposal.task.key, "parents": parent_ids, "research_run": run}


# Staged imports on SQLite: files with more proposals than _STAGE_ABOVE are written _STAGE_ROWS rows a step (a few
# hundred milliseconds of the write lock each); between steps the import waits longer than SQLite's busy handler
# sleeps at most (100 ms), so that writers waiting meanwhile (autosaves) get the lock before its next step.
_STAGE_ROWS = 500
_STAGE_ABOVE = 2_000
_STAGE_PAUSE_SECONDS = 0.15


@contextmanager
def _staged_step():
    """One committed step of a staged import."""
    with transaction.atomic():
        yield
    time.sleep(_STAGE_PAUSE_SECONDS)


def _chunks(rows: list, size: int | None) -> list[list]:
    if not size:
        return [rows]
    return [rows[start : start + size] for start in range(0, len(rows), size)]


def _unstage(batch: ImportBatch) -> None:
    """Remove what a staged import wrote (its proposals with their links, then its runs and tasks, then the batch),
    a step at a time. Nothing else refers to them: they joined no cohort."""
    proposal_ids = list(Proposal.objects.filter(import_batch=batch).values_list("pk", flat=True))
    for ids in _chunks(proposal_ids, _STAGE_ROWS):
        with _staged_step():
            Proposal.parents.through.objects.filter(from_proposal_id__in=ids).delete()
            Proposal.objects.filter(pk__in=ids).delete()
    with transaction.atomic():
        run_imports.runs_unstage(batch)
        ResearchTask.objects.filter(import_batch=batch, proposals__isnull=True).delete()
        ImportBatch.objects.filter(pk=batch.pk).delete()


def staged_imports_sweep() -> int:
    """The sweeper's part: staged imports begun more than OH_JOB_STALE_SECONDS ago (their process died; a staged
    import takes minutes) are removed, unless the same file is imported again first. Returns how many."""
    begun_before = timezone.now() - timedelta(seconds=settings.OH_JOB_STALE_SECONDS)
    left = list(ImportBatch.objects.filter(staging=True, created_at__lt=begun_before))
    for batch in left:
        logger.warning("Removing the import of %s begun at %s: its process stopped", batch.filename, batch.created_at)
        _unstage(batch)
    return len(left)


def _write(
    cohort,
    batch,
    tasks,
    proposals,
    run_tables: RunTables,
    task_pks: dict,
    proposal_pks: dict,
    *,
    step: Callable[[], AbstractContextManager] = nullcontext,
) -> tuple[int, int]:
    """Write the checked file. step: the context of each step (nothing, inside the caller's transaction; or
    _staged_step, which commits each and writes proposals and links _STAGE_ROWS at a time)."""
    rows_a_step = _STAGE_ROWS if step is _staged_step else None
    with step():
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
        run_pks = run_imports.write_runs(run_tables, batch=batch, task_pks=task_pks)
        run_pks |= run_imports.run_pks_of({record["research_run"] for record in proposals} - set(run_pks) - {""})

    new_records = [record for record in proposals if record["id"] not in proposal_pks]
    for chunk in _chunks(new_records, rows_a_step):
        with step():
            Proposal.objects.bulk_create(
                [
                    Proposal(
                        external_id=record["id"],
                        task_id=task_pks[record["task"]],
                        research_run_id=run_pks.get(record["research_run"]),
                        **{name: record[name] for name in _PROPOSAL_MODEL_FIELDS},
                        content_sha256=proposal_content_sha256(record),
                        import_batch=batch,
                    )
                    for record in chunk
                ],
                batch_size=_WRITE_BATCH,
            )
    new_ids = [record["id"] for record in new_records]
    new_pks = _fetch_in(Proposal.objects.values_list("external_id", "pk"), "external_id", new_ids)
    proposal_pks = proposal_pks | dict(new_pks)

    # Parents are linked once every proposal of the file exists; reused proposals keep the links they have.
    Link = Proposal.parents.through
    links = [
        Link(from_proposal_id=proposal_pks[record["id"]], to_proposal_id=proposal_pks[parent])
        for record in new_records
        for parent in record["parents"]
    ]
    for chunk in _chunks(links, rows_a_step):
        with step():
            Link.objects.bulk_create(chunk, batch_size=_WRITE_BATCH)
    # The last step makes a staged import visible: its proposals join the cohort.
    with step():
        Member = Cohort.proposals.through
        Member.objects.bulk_create(
            [Member(cohort_id=cohort.pk, proposal_id=proposal_pks[record["id"]]) for record in proposals],
            batch_size=_WRITE_BATCH,
            ignore_conflicts=True,
        )
        run_imports.write_run_records(run_tables, batch=batch, proposal_pks=proposal_pks)
        ImportBatch.objects.filter(pk=batch.pk, staging=True).update(staging=False)
    return len(new_tasks), len(new_records)

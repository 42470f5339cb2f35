"""Writes to the reference corpus: file imports (PubMed XML, MEDLINE, RIS, Web of Science, BibTeX, CSV; the format
declared or told from the content), online fetches and the one writer both use.

A file import writes every usable record and skips the others with their reasons (a record without a title or an
abstract, without an identifier or a content key, or repeating an id with other content); a field that cannot be
read (a date, a DOI) is left out of its record and reported as a warning. The file is streamed once and written as
it is read inside one transaction (see ReferenceWriter): only a file that cannot be read (not UTF-8, broken XML, no
records) is refused as a whole, and then nothing is written. A reference is unique per (source, source id):
importing it again updates it when its content hash changed and leaves it alone otherwise, never duplicating it. A
record the corpus holds byte for byte (PubMed XML on PostgreSQL, MEDLINE and RIS everywhere: the digest of its raw
record) is counted unchanged without being parsed again.

Staged imports on SQLite, whose one write lock every reviewer's autosave waits on: a file larger than
STAGE_ABOVE_BYTES is not written in one transaction but in short committed steps of STAGE_ROWS references each, the
database left free between them. While the file is read, the references whose content the corpus does not hold are
written into the stage (StagedReference rows of the import's ReferenceImport, in the phase `staging`), which nothing
that reads the corpus reads. A file that turns out unreadable, or any other failure, removes the stage and the import:
the corpus is as before. Once the whole file is read the import enters the phase `applying` and its stage is moved
into the corpus, a few thousand references a step in file order, each step upserting its references, deleting them from
the stage and adding to the import's counts in one transaction. While that lasts a reader sees some of the file's new
and changed references and not yet the others (each reference whole, old or new); the import itself is listed only
once it is done. An apply that stops part-way is finished, never undone: by the next staged import before it applies
its own (so imports apply in the order they began), or by the sweeper (`reference_imports_sweep`), which also
removes an import whose process died while it was still reading (no heartbeat for OH_SILENT_SECONDS). On
PostgreSQL, whose writers do not wait on each other, an import is one transaction whatever its size.
"""

import io
import itertools
import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path, PurePath
from typing import Any

import psycopg
from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Value
from django.utils import timezone

from literature.importers import bibtex, csv_table, detection, medline, pubmed_xml, ris, wos
from literature.importers.csv_table import MappingInvalid, parse_mapping
from literature.importers.records import DIGEST_BYTES, FileUnreadable, Parsed, ParsedReference, Problem, StoredRecord
from literature.models import Reference, ReferenceImport, StagedReference
from literature.sources import europepmc, eutils
from reviewapp.core.claims import silent_since
from reviewapp.core.errors import ServiceError, as_problems

logger = logging.getLogger(__name__)

FORMATS = {
    "pubmed_xml": "PubMed XML (efetch PubmedArticleSet)",
    "medline": "MEDLINE text (.nbib)",
    "ris": "RIS",
    "wos": "Web of Science (plain text or tab-delimited)",
    "bibtex": "BibTeX",
    "csv": "CSV",
}
_READERS: dict[str, Callable[..., Iterator[Parsed]]] = {
    "pubmed_xml": pubmed_xml.read,
    "medline": medline.read,
    "ris": ris.read,
    "wos": wos.read,
    "bibtex": bibtex.read,
}
# Readers that skip the records the corpus holds byte for byte, told by their raw record's digest.
_BY_DIGEST = ("medline", "ris", "wos")
WRITE_BATCH = 1000
# An upsert that writes at least this many references refreshes the corpus table's statistics (PostgreSQL) of the
# columns an import looks its records up by.
ANALYZE_AFTER = 10_000
_ANALYZED_COLUMNS = ("source", "source_id", "raw_digest")
PROGRESS_EVERY = 1000
# SQLite refuses statements with too many parameters, so lookups by many ids go in chunks.
_LOOKUP_CHUNK = 900
# Every field of a parsed reference is stored under its name.
_PARSED_FIELDS = tuple(field.name for field in fields(ParsedReference))
_UPDATE_FIELDS = [
    "pmid",
    "doi",
    "title",
    "abstract",
    "journal",
    "authors",
    "published",
    "published_precision",
    "raw",
    "raw_digest",
    "raw_warned",
    "content_sha256",
    "is_demo",
    "updated_at",
]


# An answer lists at most this many skipped records and warnings (their counts are always complete).
LISTED_AT_MOST = 1000


@dataclass(frozen=True)
class ImportSummary:
    format: str
    records: int  # distinct references written
    created: int
    updated: int  # known before, content changed
    unchanged: int  # known before, same content
    repeated: int  # identical copies of a record earlier in the same file, skipped
    seconds: float
    import_id: int
    skipped: list[dict] = field(default_factory=list)  # [{"record", "id", "reason"}], unusable records
    skipped_count: int = 0
    warnings: list[dict] = field(default_factory=list)  # [{"record", "id", "field", "message"}], fields left out
    warning_count: int = 0
    format_detected: bool = False  # the format was told from the content, none being declared

    @property
    def format_label(self) -> str:
        return FORMATS[self.format]


@dataclass(frozen=True)
class FetchSummary:
    source: str
    query: str
    records: int
    created: int
    updated: int
    unchanged: int
    skipped: int  # records the source returned that cannot be used (no title, bad date...); logged
    seconds: float
    import_id: int


class ImportInvalid(ServiceError):
    """Nothing was imported: the file (or the request) cannot be read. records: [{"record", "id", "field",
    "message"}]; the API's problems give the record as the row, its id before the message."""

    code = "invalid_import"

    def __init__(self, records: list[dict]):
        problems = as_problems(
            {
                "row": record.get("record"),
                "field": record.get("field"),
                "message": f"{record['id']}: {record['message']}" if record.get("id") else record["message"],
            }
            for record in records
        )
        super().__init__(f"The file has {len(records)} problem(s); nothing was imported.", problems=problems)
        self.records = records


class ReferenceWriter:
    """Upserts: new references are inserted, changed ones updated, identical ones left alone.

    The caller holds the transaction; `flush()` writes what was added. On PostgreSQL each reference is copied as it
    is added, by a COPY that stays open while the caller reads on (the server takes the rows in while the next ones
    are parsed; any other statement on the connection ends the COPY first). When the caller adds each reference at
    most once (`distinct_keys`, a file import: its repeats are skipped before they reach the writer), references are
    copied straight into the corpus, a batch of `batch_size` under a savepoint: a batch that meets a reference the
    corpus holds already (or that another import is writing) is rolled back to its savepoint and goes to the stage
    instead, and so does everything after it. Otherwise each reference is copied into a temporary staging table,
    and `flush()` upserts the whole stage in one statement, which also tells what it created, updated and left alone.
    Elsewhere references are compared with the stored ones by their content hash a batch at a time, and only new or
    changed ones written by a bulk upsert. The conflict clause keeps a reference unique even when another import
    writes the same one at the same moment (that one's content then counts as unchanged here). Used as a context
    manager, the writer ends its COPY when the caller's work fails, so that the transaction can be rolled back.
    """

    def __init__(self, batch_size: int = WRITE_BATCH, *, distinct_keys: bool = False):
        self.batch_size = batch_size
        self.pending: dict[tuple[str, str], ParsedReference] = {}
        self.created = self.updated = self.unchanged = 0
        self._stage: _Stage | None = None
        self._written: set[tuple[str, str]] = set()  # on SQLite, what this writer wrote
        self._written_before = 0  # created and updated at the last flush
        # Asked once: the connection proxy's look-up costs microseconds, and add() runs for every record.
        self._staging = connection.vendor == "postgresql"
        self._corpus_copy = _CorpusCopy(self) if self._staging and distinct_keys else None

    def __enter__(self) -> "ReferenceWriter":
        return self

    def __exit__(self, *exc_info) -> None:
        if self._corpus_copy is not None:
            self._corpus_copy.fail(exc_info)
        if self._stage is not None:
            self._stage.end(exc_info)

    def count_unchanged(self) -> None:
        """A reference the corpus holds exactly so already (a KnownRecord): nothing to write."""
        self.unchanged += 1

    def add(self, reference: ParsedReference) -> None:
        if self._staging:
            row = _staged_row(reference)
            if self._corpus_copy is not None:
                self._corpus_copy.write(row)
            else:
                self._stage = self._stage or _Stage()
                self._stage.write(row)
            return
        self.pending[(reference.source, reference.source_id)] = reference  # a later copy in one batch wins
        if len(self.pending) >= self.batch_size:
            self._write_pending()

    def flush(self) -> None:
        self._write_pending()
        if self._corpus_copy is not None:
            self._corpus_copy.end()
        if self._stage is not None:
            created, updated, staged = self._stage.upsert()
            self.created += created
            self.updated += updated
            self.unchanged += staged - created - updated
            self._stage = None
        written = self.created + self.updated
        if self._staging and written - self._written_before >= ANALYZE_AFTER:
            _analyze_corpus()
        self._written_before = written

    def _copied(self, rows: list[tuple]) -> None:
        """A batch copied straight into the corpus: every one of its references is new."""
        self.created += len(rows)

    def _conflicted(self, rows: list[tuple]) -> None:
        """A batch copied into the corpus met a stored reference: its rows, and every row after them, go to the
        stage. Its COPY is ended, as this may run just before another statement."""
        self._corpus_copy = None
        self._stage = self._stage or _Stage()
        for row in rows:
            self._stage.write(row)
        self._stage.end()

    def _write_pending(self) -> None:
        batch, self.pending = list(self.pending.values()), {}
        if not batch:
            return
        known = _known_hashes(batch)
        rows = []
        for reference in batch:
            key = (reference.source, reference.source_id)
            previous = known.get(key)
            if previous == reference.content_sha256:
                self.unchanged += 1
                continue
            if previous is None:
                self.created += 1
            elif key not in self._written:  # a later copy of one this writer wrote is counted once, as written
                self.updated += 1
            self._written.add(key)
            rows.append(_model(reference))
        if rows:
            Reference.objects.bulk_create(
                rows, update_conflicts=True, unique_fields=["source", "source_id"], update_fields=_UPDATE_FIELDS
            )


# What the stage holds: the key, then everything an update writes but its time.
_STAGED_COLUMNS = ("source", "source_id", *(name for name in _UPDATE_FIELDS if name != "updated_at"))
_AUTHORS = _STAGED_COLUMNS.index("authors")
_stage_numbers = itertools.count(1)


def _staged_row(reference: ParsedReference) -> tuple:
    """The reference's values in the order of _STAGED_COLUMNS (the authors as a list: the COPY dumps it as jsonb)."""
    return (
        reference.source,
        reference.source_id,
        reference.pmid,
        reference.doi,
        reference.title,
        reference.abstract,
        reference.journal,
        reference.authors,
        reference.published,
        reference.published_precision,
        reference.raw,
        reference.raw_digest,
        reference.raw_warned,
        reference.content_sha256,
        reference.is_demo,
    )


def _column_types(table: str, columns: Iterable[str]) -> list[int]:
    """The type oids of a table's columns, in the order given (a binary COPY sends each value as its type)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT attname, atttypid FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0", [table]
        )
        types = dict(cursor.fetchall())
    return [types[column] for column in columns]


def _analyze_corpus() -> None:
    """Statistics that still describe the corpus before a large import make the planner read it badly (a re-import's
    look-ups took three times as long); autovacuum would come to it only later. Only the columns those look-ups
    filter by: the search vector's statistics (a sample ten times larger) would describe vectors not computed yet,
    and took two thirds of the time."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"ANALYZE {connection.ops.quote_name(Reference._meta.db_table)} ({', '.join(_ANALYZED_COLUMNS)})"
        )


class _OpenCopy:
    """A `COPY … FROM STDIN` that stays open between writes while the caller reads on. types: the columns' type oids
    for a binary COPY.

    The contract: while it is open, PostgreSQL takes no other statement on the connection, so every statement the
    ORM is about to run on this thread's connection (a reader's look-up, a savepoint) first calls `before_statement`,
    which must end the COPY by `close()`; the next write opens another. The hook is Django's documented
    `connection.execute_wrapper`, installed for exactly as long as the COPY is open and removed before it ends (the
    ExitStack unwinds it first). A statement sent past the ORM, on a driver cursor of its own, would not be seen: code
    that runs while a writer is open goes through the ORM or `connection.cursor()`."""

    def __init__(self, statement: str, before_statement: Callable[[], None], types: list[int] | None = None):
        self._before_statement = before_statement
        self._open = ExitStack()
        cursor = self._open.enter_context(connection.cursor())
        copy = self._open.enter_context(cursor.cursor.copy(statement))  # the driver's own cursor
        if types is not None:
            copy.set_types(types)
        self.write_row = copy.write_row
        self._open.enter_context(connection.execute_wrapper(self._end_before))

    def close(self, exc_info=(None, None, None)) -> None:
        """End the COPY (the server then holds every row written); exc_info of a failure makes it fail instead. The
        statement hook goes first, so that ending the COPY is not itself taken for another statement."""
        self._open.__exit__(*exc_info)

    def _end_before(self, execute, sql, params, many, context):
        self._before_statement()
        return execute(sql, params, many, context)


class _CorpusCopy:
    """Batches of a writer's rows copied straight into the corpus on PostgreSQL, each under a savepoint, by a COPY
    that stays open while the caller reads on: the server writes each reference once, while the next ones are
    parsed, instead of into the stage and then again into the corpus. A batch ends when it holds the writer's
    batch_size rows, when another statement is about to run on the connection (a reader's look-up), or at the flush.
    One that met a reference the corpus holds (a unique violation: stored before, or being written by another import,
    whose commit the COPY waits for) is rolled back to its savepoint and handed back to the writer.

    In text, not binary as the stage's: the server inserts what it has buffered each time its rows' text reaches
    64 kB, so it keeps pace with the reader. It measures a binary COPY's buffer by rows alone (a thousand), so a
    batch ended by a look-up every few hundred records would be inserted only at its end, while the reader waits."""

    _SAVEPOINT = "literature_corpus_copy"

    def __init__(self, writer: ReferenceWriter):
        self.writer = writer
        self.rows: list[tuple] = []  # of the open batch
        table = Reference._meta.db_table
        columns = (*_STAGED_COLUMNS, "created_at", "updated_at")
        self._statement = f"COPY {connection.ops.quote_name(table)} ({', '.join(columns)}) FROM STDIN"
        self._open: _OpenCopy | None = None
        self._now = ""

    def write(self, row: tuple) -> None:
        if self._open is None:
            # The savepoint on the driver's own cursor: it is this batch's, not one of Django's atomic blocks.
            connection.connection.execute(f"SAVEPOINT {self._SAVEPOINT}")
            self._open = _OpenCopy(self._statement, self.end)
            # As text, formatted once a batch: the driver would format the two timestamps again for every row.
            self._now = timezone.now().isoformat()
        self.rows.append(row)
        self._open.write_row((*row[:_AUTHORS], json.dumps(row[_AUTHORS]), *row[_AUTHORS + 1 :], self._now, self._now))
        if len(self.rows) >= self.writer.batch_size:
            self.end()

    def end(self) -> None:
        """End the open batch, if any: its rows are then in the corpus, or back with the writer."""
        if self._open is None:
            return
        opened, self._open = self._open, None
        rows, self.rows = self.rows, []
        driver = connection.connection
        try:
            opened.close()
        except psycopg.errors.UniqueViolation:
            driver.execute(f"ROLLBACK TO SAVEPOINT {self._SAVEPOINT}")
            driver.execute(f"RELEASE SAVEPOINT {self._SAVEPOINT}")
            self.writer._conflicted(rows)
            return
        driver.execute(f"RELEASE SAVEPOINT {self._SAVEPOINT}")
        self.writer._copied(rows)

    def fail(self, exc_info) -> None:
        """The caller's work failed: the open COPY fails too (the caller's transaction is then rolled back)."""
        if self._open is not None:
            opened, self._open, self.rows = self._open, None, []
            opened.close(exc_info)


class _Stage:
    """A temporary table on PostgreSQL that references are copied into as they come, then upserted from at once.

    Its COPY stays open between writes (_OpenCopy), ended before any other statement on the connection (a look-up,
    the ORM's). It is binary, typed by the stage's columns: the server
    takes each value as it is instead of scanning some 9 kB of text a PubMed record for escapes (a quarter less of
    its time). Its columns are compressed as the corpus's own (raw and abstract lz4, see literature/migrations/0005),
    so each value is compressed once, when it is copied in, and by the corpus's method: PostgreSQL moves a
    compressed value into another table as it is."""

    def __init__(self):
        self.table = connection.ops.quote_name(f"literature_reference_stage_{next(_stage_numbers)}")
        self.keys: set[tuple[str, str]] = set()
        self.repeated = False
        target = Reference._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(
                f"CREATE TEMPORARY TABLE {self.table} ON COMMIT DROP AS "
                f"SELECT {', '.join(_STAGED_COLUMNS)} FROM {connection.ops.quote_name(target)} WITH NO DATA"
            )
            cursor.execute(f"ALTER TABLE {self.table} ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY")
            cursor.execute(
                "SELECT attname, attcompression FROM pg_attribute WHERE attrelid = %s::regclass "
                "AND attcompression <> ''",
                [target],
            )
            methods = {"l": "lz4", "p": "pglz"}
            for column, compression in cursor.fetchall():
                if column in _STAGED_COLUMNS:
                    cursor.execute(
                        f"ALTER TABLE {self.table} ALTER COLUMN {column} SET COMPRESSION {methods[compression]}"
                    )
        self._types = _column_types(self.table, _STAGED_COLUMNS)
        self._statement = f"COPY {self.table} ({', '.join(_STAGED_COLUMNS)}) FROM STDIN (FORMAT BINARY)"
        self._open: _OpenCopy | None = None

    def write(self, row: tuple) -> None:
        """Copy one row of _STAGED_COLUMNS (see _staged_row)."""
        if self._open is None:
            self._open = _OpenCopy(self._statement, self.end, self._types)
        key = (row[0], row[1])
        self.repeated |= key in self.keys
        self.keys.add(key)
        self._open.write_row(row)

    def end(self, exc_info=(None, None, None)) -> None:
        """End the open COPY, if any (the server then holds every row written); exc_info of a failure makes the COPY
        fail instead."""
        if self._open is not None:
            opened, self._open = self._open, None
            opened.close(exc_info)

    def upsert(self) -> tuple[int, int, int]:
        """Write the stage into the corpus: (created, updated, staged). The stage is dropped."""
        self.end()
        target = connection.ops.quote_name(Reference._meta.db_table)
        columns = ", ".join(_STAGED_COLUMNS)
        changed = ", ".join(f"{column} = EXCLUDED.{column}" for column in (*_STAGED_COLUMNS[2:], "updated_at"))
        with connection.cursor() as cursor:
            if self.repeated:  # the same reference staged twice: the later copy wins
                cursor.execute(
                    f"DELETE FROM {self.table} AS earlier USING {self.table} AS later WHERE later.source = "
                    "earlier.source AND later.source_id = earlier.source_id AND later.seq > earlier.seq"
                )
            cursor.execute(
                f"WITH written AS (INSERT INTO {target} ({columns}, created_at, updated_at) "
                f"SELECT {columns}, statement_timestamp(), statement_timestamp() FROM {self.table} "
                f"ON CONFLICT (source, source_id) DO UPDATE SET {changed} "
                f"WHERE {target}.content_sha256 <> EXCLUDED.content_sha256 RETURNING xmax = 0 AS inserted) "
                "SELECT count(*) FILTER (WHERE inserted), count(*) FILTER (WHERE NOT inserted) FROM written"
            )
            created, updated = cursor.fetchone()
            cursor.execute(f"DROP TABLE {self.table}")
        return created, updated, len(self.keys)


def references_upsert(*, references: Iterable[ParsedReference]) -> ReferenceWriter:
    """Write parsed references (e.g. a demo corpus) in one transaction; the returned writer holds the counts."""
    with transaction.atomic(), ReferenceWriter() as writer:
        for reference in references:
            writer.add(reference)
        writer.flush()
    return writer


# Staged imports (SQLite, see the module docs). A step of STAGE_ROWS references holds the write lock for a few hundred
# milliseconds; between steps the import waits longer than SQLite's busy handler sleeps at most (100 ms), so that
# writers waiting meanwhile (autosaves) get the lock before its next step. A file up to STAGE_ABOVE_BYTES (a few
# thousand references) is written in one transaction of about a second.
STAGE_ROWS = 500
STAGE_ABOVE_BYTES = 4 << 20
_STEP_PAUSE_SECONDS = 0.15
# Moving rows within the database is cheaper than writing them from Python: a stage is applied (or removed) this many
# references a step (about 0.1 s).
_MOVE_ROWS = 4 * STAGE_ROWS


def references_import(
    *,
    file,
    format: str | None = None,
    user=None,
    progress: Callable[[int], None] | None = None,
    column_mapping: str | dict | None = None,
    name: str = "",
) -> ImportSummary:
    """Import the usable records of one file into the corpus (see the module docs).

    file: a path, or a binary file object (an upload) read from its current position. format: a key of FORMATS, or
    None to tell it from the file's content (literature.importers.detection); a declared format that the content
    shows to be another is refused, naming that one. progress(records_read) is called every PROGRESS_EVERY records.
    column_mapping: CSV only, {field: column}. Raises ImportInvalid when the file cannot be read; nothing is written
    then.
    """
    started = time.monotonic()
    with _binary(file) as opened:
        staged = connection.vendor == "sqlite" and (_size(opened) or STAGE_ABOVE_BYTES + 1) > STAGE_ABOVE_BYTES
        head, stream = _peeked(opened)
        declared = format
        format = _format_of(declared, detection.detect(head))
        read = _reader(format, column_mapping)
        name = name or _file_name(file)
        described = {
            "origin": ReferenceImport.Origin.FILE,
            "file_format": format,
            "name": name[:500],
            "created_by": user if user is not None and user.is_authenticated else None,
        }
        if staged:
            outcome, batch = _import_staged(read(stream), progress, described)
        else:
            with transaction.atomic():
                with ReferenceWriter(distinct_keys=True) as writer:
                    outcome = _write_file(read(stream), writer, progress)
                    writer.flush()
                batch = ReferenceImport.objects.create(
                    **described,
                    **_outcome_fields(outcome),
                    created=writer.created,
                    updated=writer.updated,
                    unchanged=writer.unchanged,
                    seconds=time.monotonic() - started,
                )
    logger.info(
        "imported %s (%s): %s references, %s new, %s updated, %s unusable skipped",
        name,
        format,
        outcome.records,
        batch.created,
        batch.updated,
        len(outcome.skipped),
    )
    return ImportSummary(
        format=format,
        records=outcome.records,
        created=batch.created,
        updated=batch.updated,
        unchanged=batch.unchanged,
        repeated=outcome.repeated,
        seconds=batch.seconds,
        import_id=batch.pk,
        skipped=outcome.skipped[:LISTED_AT_MOST],
        skipped_count=len(outcome.skipped),
        warnings=outcome.warnings[:LISTED_AT_MOST],
        warning_count=len(outcome.warnings),
        format_detected=not declared,
    )


def _outcome_fields(outcome: "_FileOutcome") -> dict:
    """What a file import's ReferenceImport records of the records read."""
    return {
        "records": outcome.records,
        "skipped": outcome.repeated + len(outcome.skipped),
        "skipped_records": outcome.skipped[:LISTED_AT_MOST],
        "warnings": outcome.warnings[:LISTED_AT_MOST],
    }


def _size(stream) -> int | None:
    """The bytes left to read in a binary stream from its position; None when it cannot seek."""
    if not stream.seekable():
        return None
    position = stream.tell()
    size = stream.seek(0, io.SEEK_END) - position
    stream.seek(position)
    return size


def _import_staged(
    parsed_records: Iterator[Parsed], progress, described: dict
) -> tuple["_FileOutcome", ReferenceImport]:
    """A staged import (SQLite, see the module docs): the file read into the stage, then the stage applied. Any
    failure while reading removes the stage and the import; the corpus is then unchanged."""
    batch = ReferenceImport.objects.create(
        **described, phase=ReferenceImport.Phase.STAGING, heartbeat_at=timezone.now()
    )
    try:
        writer = _StagingWriter(batch)
        outcome = _write_file(parsed_records, writer, progress)
        writer.flush()
        with _step():
            ReferenceImport.objects.filter(pk=batch.pk).update(
                **_outcome_fields(outcome),
                unchanged=writer.unchanged,
                phase=ReferenceImport.Phase.APPLYING,
                heartbeat_at=timezone.now(),
            )
    except BaseException:
        _unstage(batch.pk)
        raise
    # Imports that began applying before this one (whose process stopped, or still at it) are applied first.
    earlier = ReferenceImport.objects.filter(phase=ReferenceImport.Phase.APPLYING, pk__lt=batch.pk).order_by("pk")
    for pk in earlier.values_list("pk", flat=True):
        _apply_stage(pk)
    _apply_stage(batch.pk)
    batch.refresh_from_db()
    return outcome, batch


class _StagingWriter:
    """The writer of a staged import while it reads its file: references whose content the corpus does not hold are
    written into the stage STAGE_ROWS at a time, each batch one committed step; the others are counted unchanged."""

    def __init__(self, batch: ReferenceImport):
        self.batch = batch
        self.pending: list[ParsedReference] = []
        self.unchanged = 0
        self._alive_at = time.monotonic()

    def add(self, reference: ParsedReference) -> None:
        self.pending.append(reference)
        if len(self.pending) >= STAGE_ROWS:
            self.flush()

    def count_unchanged(self) -> None:
        """A reference the corpus holds exactly so already (a KnownRecord): nothing to write."""
        self.unchanged += 1
        if time.monotonic() - self._alive_at > settings.OH_HEARTBEAT_SECONDS:
            self._step([])

    def flush(self) -> None:
        batch, self.pending = self.pending, []
        if not batch:
            return
        stored = _known_hashes(batch)
        rows = [
            _staged_reference(reference, self.batch)
            for reference in batch
            if stored.get((reference.source, reference.source_id)) != reference.content_sha256
        ]
        self.unchanged += len(batch) - len(rows)
        if rows or time.monotonic() - self._alive_at > settings.OH_HEARTBEAT_SECONDS:
            self._step(rows)

    def _step(self, rows: list[StagedReference]) -> None:
        with _step():
            StagedReference.objects.bulk_create(rows)
            _heartbeat(self.batch.pk)
        self._alive_at = time.monotonic()


def _staged_reference(reference: ParsedReference, batch: ReferenceImport) -> StagedReference:
    values = {name: getattr(reference, name) for name in _PARSED_FIELDS}
    return StagedReference(
        reference_import=batch, **values, raw_digest=reference.raw_digest, content_sha256=reference.content_sha256
    )


def _apply_stage(import_id: int) -> None:
    """Move an import's stage into the corpus, _MOVE_ROWS references a committed step in file order, then mark the
    import done. A step upserts its references, deletes them from the stage and adds to the import's counts in one
    transaction: an apply that stops part-way is finished by calling this again (two at once take turns safely)."""
    while True:
        with _step():
            stage = StagedReference.objects.filter(reference_import_id=import_id)
            ids = list(stage.order_by("pk").values_list("pk", flat=True)[:_MOVE_ROWS])
            if not ids:
                begun = ReferenceImport.objects.filter(pk=import_id).values_list("created_at", flat=True).first()
                now = timezone.now()
                ReferenceImport.objects.filter(pk=import_id, phase=ReferenceImport.Phase.APPLYING).update(
                    phase=ReferenceImport.Phase.DONE,
                    heartbeat_at=now,
                    seconds=(now - begun).total_seconds() if begun else 0,
                )
                return
            created, updated, unchanged = _stage_upsert(import_id, ids[-1])
            stage.filter(pk__lte=ids[-1]).delete()
            ReferenceImport.objects.filter(pk=import_id).update(
                created=F("created") + created,
                updated=F("updated") + updated,
                unchanged=F("unchanged") + unchanged,
                heartbeat_at=timezone.now(),
            )


def _stage_upsert(import_id: int, last_id: int) -> tuple[int, int, int]:
    """Upsert an import's staged references up to last_id into the corpus in one statement, as _Stage.upsert does on
    PostgreSQL: new ones inserted, changed ones updated, identical ones left alone. Counted first, in the same
    transaction (which on SQLite no other writer shares): (created, updated, unchanged)."""
    corpus = connection.ops.quote_name(Reference._meta.db_table)
    stage = connection.ops.quote_name(StagedReference._meta.db_table)
    changed = ", ".join(f"{column} = excluded.{column}" for column in (*_STAGED_COLUMNS[2:], "updated_at"))
    chosen = "s.reference_import_id = %s AND s.id <= %s"
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), count(r.id), count(CASE WHEN r.content_sha256 <> s.content_sha256 THEN 1 END) "
            f"FROM {stage} s LEFT JOIN {corpus} r ON r.source = s.source AND r.source_id = s.source_id WHERE {chosen}",
            [import_id, last_id],
        )
        staged, stored, updated = cursor.fetchone()
        cursor.execute(
            f"INSERT INTO {corpus} ({', '.join(_STAGED_COLUMNS)}, created_at, updated_at) "
            f"SELECT {', '.join(f's.{column}' for column in _STAGED_COLUMNS)}, %s, %s FROM {stage} s "
            f"WHERE {chosen} ORDER BY s.id "
            f"ON CONFLICT (source, source_id) DO UPDATE SET {changed} "
            f"WHERE {corpus}.content_sha256 <> excluded.content_sha256",
            [now, now, import_id, last_id],
        )
    return staged - stored, updated, stored - updated


def _unstage(import_id: int) -> None:
    """Remove an import that will not be applied: its stage a step at a time, then the import."""
    while True:
        with _step():
            stage = StagedReference.objects.filter(reference_import_id=import_id)
            ids = list(stage.order_by("pk").values_list("pk", flat=True)[:_MOVE_ROWS])
            if ids:
                stage.filter(pk__lte=ids[-1]).delete()
            if len(ids) < _MOVE_ROWS:
                ReferenceImport.objects.filter(pk=import_id).delete()
                return


def reference_imports_sweep() -> int:
    """The sweeper's part: staged imports whose process stopped (no heartbeat for OH_SILENT_SECONDS; a live one beats
    at every step, and every OH_HEARTBEAT_SECONDS while it reads records the corpus holds) are removed when they were
    still reading their file and finished when they were applying it. Returns how many."""
    left = list(
        ReferenceImport.objects.exclude(phase=ReferenceImport.Phase.DONE)
        .filter(heartbeat_at__lt=silent_since())
        .order_by("pk")
    )
    for batch in left:
        if batch.phase == ReferenceImport.Phase.STAGING:
            logger.warning("Removing the import of %s begun at %s: its process stopped", batch.name, batch.created_at)
            _unstage(batch.pk)
        else:
            logger.warning("Finishing the import of %s begun at %s: its process stopped", batch.name, batch.created_at)
            _apply_stage(batch.pk)
    return len(left)


def _heartbeat(import_id: int) -> None:
    ReferenceImport.objects.filter(pk=import_id).update(heartbeat_at=timezone.now())


@contextmanager
def _step():
    """One committed step of a staged import, then a pause for the writers that waited on it."""
    with transaction.atomic():
        yield
    time.sleep(_STEP_PAUSE_SECONDS)


def references_fetch(
    *,
    source: str,
    query: str,
    start=None,
    end=None,
    limit: int | None = None,
    user=None,
    progress: Callable[[int], None] | None = None,
) -> FetchSummary:
    """Search an online source ("europepmc" or "pubmed") and upsert what it returns, page by page.

    start and end (dates, inclusive) bound the publication date. Each page is written in its own transaction,
    so a fetch that fails half-way keeps the pages it got (the response cache makes the next try cheap).
    Raises literature.sources.transport.SourceError (ReplayMiss, SourceUnavailable) when the source fails.
    """
    searches: dict[str, Callable[..., Iterator[list[Parsed]]]] = {
        "europepmc": europepmc.search,
        "pubmed": eutils.search,
    }
    if source not in searches:
        raise ServiceError(f"“{source}” is not a literature source: use one of {', '.join(searches)}.")
    started = time.monotonic()
    writer = ReferenceWriter()
    records = skipped = 0
    for page in searches[source](query, start=start, end=end, limit=limit):
        with transaction.atomic(), writer:
            for parsed in page:
                if parsed.reference is None:
                    skipped += 1
                    logger.warning("%s record %s skipped: %s", source, parsed.number, _reasons(parsed))
                    continue
                records += 1
                writer.add(parsed.reference)
            writer.flush()
        if progress:
            progress(records + skipped)
    batch = ReferenceImport.objects.create(
        origin=ReferenceImport.Origin.EUROPE_PMC if source == "europepmc" else ReferenceImport.Origin.PUBMED,
        name=_describe_query(query, start, end)[:500],
        records=records,
        created=writer.created,
        updated=writer.updated,
        unchanged=writer.unchanged,
        skipped=skipped,
        seconds=time.monotonic() - started,
        created_by=user if user is not None and user.is_authenticated else None,
    )
    return FetchSummary(
        source=source,
        query=query,
        records=records,
        created=writer.created,
        updated=writer.updated,
        unchanged=writer.unchanged,
        skipped=skipped,
        seconds=batch.seconds,
        import_id=batch.pk,
    )


def _format_of(declared: str | None, detected: str | None) -> str:
    """The format to read: the declared one unless the content shows another (then refused, naming it); the
    detected one when none is declared."""
    if declared and detected and declared != detected and declared in FORMATS:
        message = (
            f"This file is {detection.NAMES[detected]}, not {detection.NAMES[declared]}: import it with the format "
            f"“{detected}”, or leave the format out to have it told from the content."
        )
        raise ImportInvalid([Problem(None, "format", message).as_dict()])
    if declared:
        return declared
    if detected is None:
        message = (
            "The format cannot be told from the file's first lines (XML, “PMID- ”, “TY  - ”, “FN”/“PT”, "
            f"“@article{{”, a CSV header with a title column): choose one of {', '.join(FORMATS)}."
        )
        raise ImportInvalid([Problem(None, "format", message).as_dict()])
    return detected


class _HeadThenRest(io.RawIOBase):
    """A stream that cannot seek, read again from its start: the bytes already read, then the rest."""

    def __init__(self, head: bytes, rest):
        self.head, self.rest = head, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self.head[: len(buffer)] if self.head else self.rest.read(len(buffer))
        self.head = self.head[len(data) :]
        buffer[: len(data)] = data
        return len(data)


def _peeked(stream) -> tuple[bytes, Any]:
    """The first detection.HEAD bytes of a binary stream, and the stream to read from its position as it was."""
    head = stream.read(detection.HEAD)
    if stream.seekable():
        stream.seek(-len(head), io.SEEK_CUR)
        return head, stream
    return head, io.BufferedReader(_HeadThenRest(head, stream))


def _reader(format: str, column_mapping) -> Callable[..., Iterator[Parsed]]:
    if format not in FORMATS:
        message = f"“{format}” is not a format this importer reads; use one of {', '.join(FORMATS)}."
        raise ImportInvalid([Problem(None, "format", message).as_dict()])
    if format != "csv":
        if column_mapping:
            raise ImportInvalid([Problem(None, "mapping", "A column mapping applies to CSV files only.").as_dict()])
        if format == "pubmed_xml" and connection.vendor == "postgresql":
            return _pubmed_xml_against_the_corpus
        if format in _BY_DIGEST:
            return lambda stream: _READERS[format](stream, known=_stored_digests)
        return _READERS[format]
    try:
        mapping = parse_mapping(column_mapping)
    except MappingInvalid as exc:
        raise ImportInvalid([Problem(None, "mapping", str(exc)).as_dict()]) from None
    return lambda stream: csv_table.read(stream, mapping)


@dataclass
class _FileOutcome:
    records: int = 0
    repeated: int = 0
    skipped: list[dict] = field(default_factory=list)
    warnings: list[dict] = field(default_factory=list)


def _write_file(parsed_records: Iterator[Parsed], writer: "ReferenceWriter | _StagingWriter", progress) -> _FileOutcome:
    """Feed the writer every usable record; collect the skipped ones and the warnings. A file that stops being
    readable raises ImportInvalid (the caller's transaction then writes nothing, or a staged import removes its
    stage)."""
    outcome = _FileOutcome()
    seen: dict[str, tuple[int, str]] = {}  # source id → (first record number, content hash)
    read = 0
    try:
        for parsed in parsed_records:
            read += 1
            if progress and read % PROGRESS_EVERY == 0:
                progress(read)
            record = parsed.reference or parsed.known
            if record is None:
                outcome.skipped += skipped_entries(parsed.problems)
                continue
            earlier = seen.get(record.source_id)
            if earlier is not None:
                if earlier[1] == record.content_sha256:
                    outcome.repeated += 1
                else:
                    reason = _repeat_message(earlier[0], record.source_id)
                    outcome.skipped.append({"record": parsed.number, "id": record.source_id, "reason": reason})
                continue
            seen[record.source_id] = (parsed.number, record.content_sha256)
            outcome.records += 1
            if parsed.warnings:
                outcome.warnings += [warning.as_dict() for warning in parsed.warnings]
            if parsed.reference is not None:
                parsed.reference.raw_warned = bool(parsed.warnings)
                writer.add(parsed.reference)
            else:
                writer.count_unchanged()
    except FileUnreadable as exc:
        raise ImportInvalid([Problem(None, "file", str(exc)).as_dict()]) from None
    if progress:
        progress(read)
    return outcome


def skipped_entries(problems: list[Problem]) -> list[dict]:
    """{"record", "id", "reason"} per skipped record: the reasons of one record joined, each stray line apart."""
    entries: dict[object, dict] = {}
    for index, problem in enumerate(problems):
        key = problem.record if problem.record is not None else ("line", index)
        entry = entries.setdefault(key, {"record": problem.record, "id": problem.id, "reason": ""})
        entry["reason"] = f"{entry['reason']} {problem.message}".strip()
    return list(entries.values())


def _file_name(file) -> str:
    path = file if isinstance(file, str | Path) else getattr(file, "name", None)
    return PurePath(path).name if path else "(unnamed file)"


@contextmanager
def _binary(file):
    """A binary stream for a path (opened and closed here) or for a file object (left open)."""
    if isinstance(file, str | Path):
        with open(file, "rb") as stream:
            yield stream
    else:
        yield file


def _pubmed_xml_against_the_corpus(stream) -> Iterator[Parsed]:
    """PubMed XML whose articles stored byte for byte are not read again (PostgreSQL digests the stored records)."""
    return pubmed_xml.read(stream, known=_stored_pubmed_records)


def _stored_pubmed_records(digests: dict[str, bytes]) -> dict[str, tuple[bytes, str, bool]]:
    """For pubmed_xml.read's `known`: PMID → (the stored record's raw digest, its content hash, whether it is
    undated), for the PMIDs the corpus holds."""
    table = connection.ops.quote_name(Reference._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT source_id, raw_digest, content_sha256, published IS NULL FROM {table} "
            "WHERE source = %s AND source_id = ANY(%s)",
            [Reference.Source.PUBMED, list(digests)],
        )
        return {source_id: (digest, sha, undated) for source_id, digest, sha, undated in cursor.fetchall()}


def _stored_digests(source: str, digests: list[bytes]) -> dict[bytes, StoredRecord]:
    """For the MEDLINE, RIS and Web of Science readers' `known`: raw digest → the stored reference of that source
    with a raw record of that digest."""
    if connection.vendor == "postgresql":
        # The digests as one parameter, DIGEST_BYTES each, cut apart by the server: a list parameter would be quoted
        # item by item in Python, which took longer than the look-up itself.
        table = connection.ops.quote_name(Reference._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT raw_digest, source_id, content_sha256, published IS NULL, raw_warned FROM {table} "
                "WHERE source = %s AND raw_digest = ANY(ARRAY("
                "SELECT substring(%s::bytea FROM start FOR %s) FROM generate_series(1, %s, %s) AS start))",
                [source, b"".join(digests), DIGEST_BYTES, DIGEST_BYTES * len(digests), DIGEST_BYTES],
            )
            # Fetched at once: the connection's cursor wrapper would otherwise step through its rows one by one.
            return {
                digest: StoredRecord(source_id, sha, undated, warned)
                for digest, source_id, sha, undated, warned in cursor.fetchall()
            }
    found = {}
    for offset in range(0, len(digests), _LOOKUP_CHUNK):
        rows = Reference.objects.filter(source=source, raw_digest__in=digests[offset : offset + _LOOKUP_CHUNK])
        for digest, source_id, sha, published, warned in rows.values_list(
            "raw_digest", "source_id", "content_sha256", "published", "raw_warned"
        ):
            found[bytes(digest)] = StoredRecord(source_id, sha, published is None, warned)
    return found


def _known_hashes(batch: list[ParsedReference]) -> dict[tuple[str, str], str]:
    """(source, source id) → content hash of the batch's references the corpus holds (SQLite's writer)."""
    ids_by_source: dict[str, list[str]] = {}
    for reference in batch:
        ids_by_source.setdefault(reference.source, []).append(reference.source_id)
    known = {}
    for source, ids in ids_by_source.items():
        for offset in range(0, len(ids), _LOOKUP_CHUNK):
            rows = Reference.objects.filter(source=source, source_id__in=ids[offset : offset + _LOOKUP_CHUNK])
            known.update(
                {(source, source_id): sha for source_id, sha in rows.values_list("source_id", "content_sha256")}
            )
    return known


def _model(reference: ParsedReference) -> Reference:
    values = {name: getattr(reference, name) for name in _PARSED_FIELDS}
    values["raw"] = Value(reference.raw)
    return Reference(**values, raw_digest=reference.raw_digest, content_sha256=reference.content_sha256)


def _repeat_message(earlier: int, source_id: str) -> str:
    if source_id.startswith(("title:", "abstract:")):
        what = "title" if source_id.startswith("title:") else "abstract"
        return (
            f"Record {earlier} has the same {what} and year but different content; "
            "give them a PMID, DOI or ID to tell them apart."
        )
    return f"Record {earlier} has the same id with different content; only the first was imported."


def _reasons(parsed: Parsed) -> str:
    return "; ".join(f"{problem.field}: {problem.message}" for problem in parsed.problems)


def _describe_query(query: str, start, end) -> str:
    if start or end:
        return f"{query} (published {start or '…'} to {end or '…'})"
    return query

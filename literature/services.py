"""Writes to the reference corpus: file imports, online fetches and the one writer both use.

A file import is all-or-nothing: the file is streamed once, references are written in batches inside one
transaction, and if any record has a problem the transaction is rolled back and every problem is reported
(record number, field, reason). A reference is unique per (source, source id): importing it again updates it
when its content hash changed and leaves it alone otherwise, never duplicating it.
"""

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path, PurePath

from django.db import transaction
from django.db.models import Value

from literature.importers import csv_table, medline, pubmed_xml, ris
from literature.importers.csv_table import MappingInvalid, parse_mapping
from literature.importers.records import FileUnreadable, Parsed, ParsedReference, Problem
from literature.models import Reference, ReferenceImport
from literature.sources import europepmc, eutils
from reviewapp.core.errors import ServiceError

logger = logging.getLogger(__name__)

FORMATS = {
    "pubmed_xml": "PubMed XML (efetch PubmedArticleSet)",
    "medline": "MEDLINE text (.nbib)",
    "ris": "RIS",
    "csv": "CSV",
}
_READERS = {"pubmed_xml": pubmed_xml.read, "medline": medline.read, "ris": ris.read}
WRITE_BATCH = 1000
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
    "content_sha256",
    "is_demo",
    "updated_at",
]


@dataclass(frozen=True)
class ImportSummary:
    format: str
    records: int  # distinct references in the file
    created: int
    updated: int  # known before, content changed
    unchanged: int  # known before, same content
    repeated: int  # identical copies of a record earlier in the same file, skipped
    seconds: float
    import_id: int


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
    """Nothing was imported. problems: [{"record", "id", "field", "message"}], every problem found."""

    code = "invalid_import"

    def __init__(self, problems: list[dict]):
        super().__init__(f"The file has {len(problems)} problem(s); nothing was imported.", records=problems)
        self.problems = problems


class ReferenceWriter:
    """Bulk upserts in batches: new references are inserted, changed ones updated, identical ones left alone.

    The caller holds the transaction. The conflict clause keeps a reference unique even when another import
    writes the same one at the same moment.
    """

    def __init__(self, batch_size: int = WRITE_BATCH):
        self.batch_size = batch_size
        self.pending: dict[tuple[str, str], ParsedReference] = {}
        self.created = self.updated = self.unchanged = 0

    def add(self, reference: ParsedReference) -> None:
        self.pending[(reference.source, reference.source_id)] = reference  # a later copy in one batch wins
        if len(self.pending) >= self.batch_size:
            self.flush()

    def flush(self) -> None:
        batch, self.pending = list(self.pending.values()), {}
        if not batch:
            return
        known = _known_hashes(batch)
        rows = []
        for reference in batch:
            previous = known.get((reference.source, reference.source_id))
            if previous == reference.content_sha256:
                self.unchanged += 1
                continue
            if previous is None:
                self.created += 1
            else:
                self.updated += 1
            rows.append(_model(reference))
        if rows:
            Reference.objects.bulk_create(
                rows, update_conflicts=True, unique_fields=["source", "source_id"], update_fields=_UPDATE_FIELDS
            )


def references_upsert(*, references: Iterable[ParsedReference]) -> ReferenceWriter:
    """Write parsed references (e.g. a demo corpus) in one transaction; the returned writer holds the counts."""
    writer = ReferenceWriter()
    with transaction.atomic():
        for reference in references:
            writer.add(reference)
        writer.flush()
    return writer


def references_import(
    *,
    file,
    format: str,
    user=None,
    progress: Callable[[int], None] | None = None,
    column_mapping: str | dict | None = None,
    name: str = "",
) -> ImportSummary:
    """Import one file into the corpus, all or nothing.

    file: a path, or a binary file object (an upload) read from its current position. format: a key of FORMATS.
    progress(records_read) is called every PROGRESS_EVERY records. column_mapping: CSV only, {field: column}.
    Raises ImportInvalid listing every problem; nothing is written then.
    """
    read = _reader(format, column_mapping)
    started = time.monotonic()
    with _binary(file) as stream:
        name = name or _file_name(file)
        with transaction.atomic():
            writer = ReferenceWriter()
            records, repeated = _write_file(read(stream), writer, progress)
            writer.flush()
            batch = ReferenceImport.objects.create(
                origin=ReferenceImport.Origin.FILE,
                file_format=format,
                name=name[:500],
                records=records,
                created=writer.created,
                updated=writer.updated,
                unchanged=writer.unchanged,
                skipped=repeated,
                seconds=time.monotonic() - started,
                created_by=user if user is not None and user.is_authenticated else None,
            )
    logger.info(
        "imported %s (%s): %s references, %s new, %s updated", name, format, records, writer.created, writer.updated
    )
    return ImportSummary(
        format=format,
        records=records,
        created=writer.created,
        updated=writer.updated,
        unchanged=writer.unchanged,
        repeated=repeated,
        seconds=batch.seconds,
        import_id=batch.pk,
    )


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
        raise ValueError(f"unknown literature source {source!r}: use one of {', '.join(searches)}")
    started = time.monotonic()
    writer = ReferenceWriter()
    records = skipped = 0
    for page in searches[source](query, start=start, end=end, limit=limit):
        with transaction.atomic():
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


def _reader(format: str, column_mapping) -> Callable[..., Iterator[Parsed]]:
    if format not in FORMATS:
        message = f"“{format}” is not a format this importer reads; use one of {', '.join(FORMATS)}."
        raise ImportInvalid([Problem(None, "format", message).as_dict()])
    if format != "csv":
        if column_mapping:
            raise ImportInvalid([Problem(None, "mapping", "A column mapping applies to CSV files only.").as_dict()])
        return _READERS[format]
    try:
        mapping = parse_mapping(column_mapping)
    except MappingInvalid as exc:
        raise ImportInvalid([Problem(None, "mapping", str(exc)).as_dict()]) from None
    return lambda stream: csv_table.read(stream, mapping)


def _write_file(parsed_records: Iterator[Parsed], writer: ReferenceWriter, progress) -> tuple[int, int]:
    """Feed the writer until the first problem, then only look for more problems. Returns (records, repeated)."""
    problems: list[dict] = []
    seen: dict[str, tuple[int, str]] = {}  # source id → (first record number, content hash)
    records = repeated = read = 0
    try:
        for parsed in parsed_records:
            read += 1
            if progress and read % PROGRESS_EVERY == 0:
                progress(read)
            if parsed.problems:
                problems += [problem.as_dict() for problem in parsed.problems]
                continue
            reference = parsed.reference
            assert reference is not None  # a record has its reference exactly when it has no problems
            earlier = seen.get(reference.source_id)
            if earlier is not None:
                if earlier[1] == reference.content_sha256:
                    repeated += 1
                else:
                    message = _repeat_message(earlier[0], reference.source_id)
                    problems.append(Problem(parsed.number, "id", message, reference.source_id).as_dict())
                continue
            seen[reference.source_id] = (parsed.number, reference.content_sha256)
            records += 1
            if not problems:  # the transaction will be rolled back: writing more would be wasted
                writer.add(reference)
    except FileUnreadable as exc:
        problems.append(Problem(None, "file", str(exc)).as_dict())
    if progress:
        progress(read)
    if problems:
        raise ImportInvalid(problems)
    return records, repeated


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


def _known_hashes(batch: list[ParsedReference]) -> dict[tuple[str, str], str]:
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
    return Reference(**values, content_sha256=reference.content_sha256)


def _repeat_message(earlier: int, source_id: str) -> str:
    if source_id.startswith("title:"):
        return (
            f"Record {earlier} has the same title and year but different content; "
            "give them a PMID, DOI or ID to tell them apart."
        )
    return f"Record {earlier} has the same id with different content."


def _reasons(parsed: Parsed) -> str:
    return "; ".join(f"{problem.field}: {problem.message}" for problem in parsed.problems)


def _describe_query(query: str, start, end) -> str:
    if start or end:
        return f"{query} (published {start or '…'} to {end or '…'})"
    return query

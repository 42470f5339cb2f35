"""MEDLINE text (PubMed's "Save → PubMed format", `.nbib`): "TAG - value" lines, continuation lines indented by
six spaces, records separated by blank lines. Records are numbered from 1 in file order.

A record's lines are only gathered while the file is read; its fields are read when the record is parsed. A caller
that can tell which raw records the corpus holds byte for byte passes `known`: records are then gathered in batches
of KNOWN_BATCH (a sample of each first while most are new, records.SampledLookup), and those the corpus holds are
not parsed again (the same text gives the same reference), only checked for what would be warned about (lines
that are not "TAG - value" lines, a date that cannot be read)."""

import re
from collections.abc import Iterator
from dataclasses import dataclass

from literature.importers import records
from literature.importers.records import (
    KNOWN_BATCH,
    FileUnreadable,
    KnownRecord,
    Parsed,
    ParsedReference,
    Problem,
    StoredDigests,
    StoredRecord,
    clean,
)
from literature.models import Reference

# The tag is left-justified in four columns, then "- ": "PMID- 123", "TI  - Title", "FAU - Doe, Jane".
_TAG_LINE = re.compile(r"^([A-Z][A-Z0-9]{1,3}) {0,2}- ?(.*)$")
_CONTINUATION = "      "
# A line of a record's text, after its first, that is neither a tag line nor indented as a continuation (the
# pattern starts with the line feed before the line, which the regular expression engine finds fast); and the
# start of a first line that is a tag line.
_UNTAGGED = re.compile(r"\n(?![A-Z][A-Z0-9]{1,3} {0,2}-| {6})")
_TAGGED = re.compile(r"[A-Z][A-Z0-9]{1,3} {0,2}-")
# A tag line and its value, in a record's text whose continuation lines are joined to their tag lines already.
_FIELD = re.compile(r"^([A-Z][A-Z0-9]{1,3}) {0,2}- ?(.*)", re.MULTILINE)
_CONTINUED = "\n" + _CONTINUATION


@dataclass(slots=True)
class _Record:
    """A record's number, the number of its first line in the file, its lines and its raw text (the lines joined)."""

    number: int
    first_line: int
    lines: list[str]
    raw: str


def read(stream, known: StoredDigests | None = None) -> Iterator[Parsed]:
    """Parsed records of a binary stream of MEDLINE text (see the module's docs for `known`)."""
    known = records.SampledLookup(known) if known is not None else None
    number = first_line = 0
    lines: list[str] = []
    pending: list[_Record] = []
    try:
        for start, block in records.text_blocks(stream):
            for line_number, line in enumerate(block, start):
                if line.strip():
                    if not lines:
                        number += 1
                        first_line = line_number
                    lines.append(line)
                elif lines:
                    record = _Record(number, first_line, lines, "\n".join(lines))
                    lines = []
                    if known is None:
                        yield _parsed(record)
                    else:
                        pending.append(record)
                        if len(pending) == KNOWN_BATCH:
                            yield from _decided(pending, known)
                            pending = []
    except FileUnreadable:
        yield from _decided(pending, known)
        raise
    if lines:
        record = _Record(number, first_line, lines, "\n".join(lines))
        if known is None:
            yield _parsed(record)
        else:
            pending.append(record)
    yield from _decided(pending, known)
    if number == 0:
        raise FileUnreadable("The file holds no MEDLINE records (“PMID- …” lines).")


def _decided(pending: list[_Record], known: StoredDigests | None) -> Iterator[Parsed]:
    """The records gathered: those the corpus holds byte for byte as KnownRecords, the others parsed."""
    if not pending or known is None:
        return
    digests = [records.raw_digest(record.raw) for record in pending]
    stored = known(Reference.Source.PUBMED, digests)
    for record, digest in zip(pending, digests, strict=True):
        found = stored.get(digest)
        yield _parsed(record, digest) if found is None else _known(record, found)


def _fields(record: _Record) -> tuple[dict[str, list[str]], list[Problem]]:
    """The record's values by tag (continuation lines joined to their value), and a warning per line left out. A
    value may keep spaces at its ends and inside: every value is read through clean(), which collapses them."""
    fields: dict[str, list[str]] = {}
    warnings: list[Problem] = []
    # Every continuation joined to the line before it at once; then when each line is a tag line (a match per line),
    # no line is left out and a value is a tag line's rest.
    joined = record.raw.replace(_CONTINUED, " ")
    found = _FIELD.findall(joined)
    if len(found) == joined.count("\n") + 1:
        for tag, value in found:
            fields.setdefault(tag, []).append(value)
        return fields, warnings
    last_tag = None
    for line_number, line in enumerate(record.lines, record.first_line):
        match = _TAG_LINE.match(line)
        if match:
            last_tag = match.group(1)
            fields.setdefault(last_tag, []).append(match.group(2).strip())
        elif line.startswith(_CONTINUATION) and last_tag:
            fields[last_tag][-1] = f"{fields[last_tag][-1]} {line.strip()}".strip()
        else:
            message = f"Line {line_number} is neither a “TAG - value” line nor a continuation; it was ignored."
            warnings.append(Problem(record.number, "line", message))
    return fields, warnings


def _first(fields: dict[str, list[str]], *tags: str) -> str:
    return next((clean(fields[tag][0]) for tag in tags if fields.get(tag)), "")


def _date(fields: dict[str, list[str]], number: int, warnings: list[Problem]):
    """(published, precision) from DP or DEP; a date that cannot be read is left out with a warning."""
    try:
        return _published(_first(fields, "DP"), _first(fields, "DEP"))
    except ValueError as exc:
        return records.date_left_out(number, "DP", exc, warnings)


def _known(record: _Record, found: StoredRecord) -> Parsed:
    """A record the corpus holds as it is: only its warnings are looked for, unless it had none when it was stored.
    A dated stored record had no warning about its date; one whose lines are all tag lines and continuations, none
    about its lines."""
    fields: dict[str, list[str]] | None = None
    warnings: list[Problem] = []
    if found.warned is not False:
        if not _TAGGED.match(record.raw) or _UNTAGGED.search(record.raw):
            fields, warnings = _fields(record)
        if found.undated:
            _date(fields if fields is not None else _fields(record)[0], record.number, warnings)
    stored = KnownRecord(Reference.Source.PUBMED, found.source_id, found.content_sha256)
    return records.identify(Parsed(record.number, None, [], warnings, known=stored))


def _parsed(record: _Record, digest: bytes | None = None) -> Parsed:
    """The record read field by field; digest: its raw_digest, when computed already."""
    number = record.number
    fields, warnings = _fields(record)
    pmid = _first(fields, "PMID")
    published, precision = _date(fields, number, warnings)
    reference = ParsedReference(
        source=Reference.Source.PUBMED,
        source_id=pmid,
        pmid=pmid,
        doi=_doi(fields.get("AID", []) + fields.get("LID", [])),
        title=records.pubmed_title(_first(fields, "TI"), _first(fields, "TT")) or _first(fields, "BTI"),
        abstract=clean(" ".join(fields.get("AB", []))),
        journal=_first(fields, "JT", "TA"),
        authors=[name for name in map(clean, fields.get("FAU") or fields.get("AU") or []) if name],
        published=published,
        published_precision=precision,
        raw=record.raw,
    )
    if digest is not None:
        reference.raw_digest = digest
    problems = records.problems_of(reference, number, id_field="PMID", id_label="PMID")
    return records.identify(Parsed(number, None if problems else reference, problems, warnings))


def _doi(article_ids: list[str]) -> str:
    """The first well-formed "10.1000/xyz [doi]" among AID and LID values (as for PubMed XML, a malformed one from
    PubMed stays in the raw record)."""
    candidates = [
        records.normalise_doi(value.rstrip()[: -len("[doi]")])
        for value in article_ids
        if value.rstrip().endswith("[doi]")
    ]
    return next((doi for doi in candidates if records.is_doi(doi)), "")


def _published(dp: str, dep: str):
    """DP ("2024 Nov-Dec", "2024 Mar 15", "2024"), else the electronic date DEP (YYYYMMDD), else unknown."""
    if dp:
        return records.medline_date(dp)
    if re.fullmatch(r"\d{8}", dep):
        return records.partial_date(dep[:4], dep[4:6], dep[6:])
    return None, records.PRECISION_UNKNOWN

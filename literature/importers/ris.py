"""RIS (reference managers' export): "TY  - JOUR" opens a record, "ER  -" closes it, one "XX  - value" tag per
line; a line without a tag inside a record continues the previous value (some exporters wrap long abstracts, EndNote
writes keywords one per line). Lines between records that are not tags (Ovid's "Record #1 of 2", a provider header,
a record's number "1.", its links to full text) are ignored, and so are tag lines there that do not describe a work
(Ovid writes "NL  - <journal abbreviation>" after each record's "ER  -"); a tag line there that does (a title, an
abstract, an author, a DOI, a date) is a record whose "TY  -" line is missing, and is reported. Records are numbered
from 1 in file order.

A record's id is its PMID, else its DOI, else the file's own ID tag, else a hash of its title (or, without a title,
its abstract) and year, so the same article imported from two reference managers is one reference.

A record is found in the file's bytes, and its fields are read when it is parsed: one from "TY  - " to "ER  -" without
another line starting with either tag is cut out whole by searches in C and decoded only when it is read; other
lines are read one by one. A caller that can tell which raw records the corpus holds byte for byte passes `known`:
records are then gathered in batches of KNOWN_BATCH (a sample of each first while most are new,
records.SampledLookup), and those the corpus holds are not parsed again (the same text gives the same reference),
only checked for what would be warned about (a malformed DOI, a date that cannot be read)."""

import re
from collections.abc import Callable, Iterator
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

_TAG_LINE = re.compile(r"^([A-Z][A-Z0-9]) {1,2}-(?: (.*))?$")
# A line of a record's text, after its first ("TY  -"), that is not a tag line (a continuation). Each of these
# patterns starts with the line feed before the line, which the regular expression engine finds fast.
_UNTAGGED = re.compile(r"\n(?![A-Z][A-Z0-9] {1,2}-(?: |$))", re.MULTILINE)
# Every tag line of a record's text whose lines are all tag lines.
_FIELD = re.compile(_TAG_LINE.pattern, re.MULTILINE)
# The tag lines whose values can be warned about, after a record's first line.
_WARNED = re.compile(r"\n(DO|DA|PY|Y1) {1,2}-(?: (.*))?$", re.MULTILINE)
# The tags that end a record, inside one: "ER", or a "TY" of the next record when the "ER" is missing.
_CLOSING = ("ER", "TY")
# What may follow "ER  -" on a record's closing line.
_AFTER_CLOSING_TAG = (b" ", b"\n", b"\r", b"")
# A line of a record's bytes that starts with "TY" or "ER", or is blank (of spaces or control characters).
_TY_ER_OR_BLANK = re.compile(rb"\n(?:ER|TY|[\s\x1c-\x1f]*(?:\n|$))")
# "2019", "2019/05/12", "2019/05//", "2019///Spring", "2019-05-12".
_RIS_DATE = re.compile(r"^(\d{4})(?:[/-](\d{0,2})(?:[/-](\d{0,2}))?)?(?:/.*)?$")
_PUBMED_DATABASES = ("pubmed", "medline", "nlm")
# Tags outside a record that mean a record lost its "TY  -" line (other tags there are exporters' extras).
_WORK_TAGS = frozenset({"TI", "T1", "BT", "CT", "AB", "N2", "AU", "A1", "DO", "AN", "PY", "Y1", "DA", "JF", "T2"})
# EndNote writes DA as a month and day without the year ("Jun", "Mar 1"), the year being PY's.
_MONTH_DAY = re.compile(r"^([A-Za-z]{3,9})\.?(?:\s+(\d{1,2}))?$")


@dataclass(slots=True)
class _Record:
    """A record's number, its raw text (its lines from "TY  -", to "ER  -" when it has one, joined) and the warnings
    about where it ends."""

    number: int
    raw: str
    warnings: list[Problem]


@dataclass(slots=True)
class _Span:
    """A record found in the file's bytes, from its "TY  - " line to its "ER  -" line with no other line starting
    with either tag, and no blank line, between them: one record, its bytes not decoded yet (a record the corpus holds
    never is). Where it is in its block of the file: for the number of its first line, counted only when needed."""

    number: int
    data: bytes
    block: bytes
    offset: int
    block_first_line: int

    def record(self, spaces_only: bool = False) -> tuple[_Record, bool]:
        """The record as the line by line reading gives it, and whether its raw text is the span's bytes (blank
        lines and carriage returns are not kept in the raw text). spaces_only: the bytes' only whitespace is spaces
        and line feeds (records.surveyed)."""
        raw, whole = records.cut_record_text(self.data, self.first_line, spaces_only)
        return _Record(self.number, raw, []), whole

    def first_line(self) -> int:
        return self.block_first_line + self.block.count(b"\n", 0, self.offset)


def read(stream, known: StoredDigests | None = None) -> Iterator[Parsed]:
    """Parsed records of a binary stream of RIS text, and a Parsed without a reference for each tag line found
    outside any record (a record whose "TY  -" line is missing); see the module's docs for `known`."""
    known = records.SampledLookup(known) if known is not None else None
    batch = KNOWN_BATCH if known is not None else 1
    pending: list[_Record | _Span | Parsed] = []  # in file order, while known records are looked for
    try:
        for record in _gathered(stream):
            pending.append(record)
            if len(pending) == batch:
                # Taken out first: a record of the batch that is not UTF-8 ends the batch, and the file, there.
                full, pending = pending, []
                yield from _decided(full, known)
    except FileUnreadable:
        yield from _decided(pending, known)
        raise
    yield from _decided(pending, known)


def _gathered(stream) -> Iterator[_Record | _Span | Parsed]:
    """The file's records in file order, and a Parsed without a reference for each tag line outside any record.

    The bytes are looked at a record at a time: a record from "TY  - " to "ER  -" with no other line starting with
    either tag is cut out whole (C-level searches), and decoded only when it is read; other lines go one by one."""
    number = 0
    lines: list[str] | None = None  # the open record's, None between records
    for block_first_line, block in records.byte_blocks(stream, record_end=b"ER  -"):
        cursor, size = records.BlockLines(block, block_first_line), len(block)
        while (position := cursor.position) < size:
            if lines is None:
                if block[position] == 10:  # an empty line between records
                    cursor.position += 1
                    continue
                if (span_end := _span_end(block, position)) is not None:
                    number += 1
                    yield _Span(number, block[position:span_end], block, position, block_first_line)
                    cursor.position = span_end + 1
                    continue
            line_number, line = cursor.line()
            if lines is not None and line[:2] not in _CLOSING:
                if line.strip():
                    lines.append(line)
            elif line.strip():
                match = _TAG_LINE.match(line)
                tag = match.group(1) if match else None
                if lines is None:
                    if tag == "TY":
                        number += 1
                        lines = [line]
                    elif tag in _WORK_TAGS:
                        yield _outside_record(number, line_number, tag)
                elif tag == "ER":
                    lines.append(line)
                    yield _Record(number, "\n".join(lines), [])
                    lines = None
                elif tag == "TY":
                    message = f"The record has no “ER  -” line; it was ended at line {line_number}."
                    yield _Record(number, "\n".join(lines), [Problem(number, "ER", message)])
                    number += 1
                    lines = [line]
                else:
                    lines.append(line)  # an untagged line that starts as a tag would
    if lines is not None:
        warning = Problem(number, "ER", "The file ends inside this record: its “ER  -” line is missing.")
        yield _Record(number, "\n".join(lines), [warning])
    if number == 0:
        raise FileUnreadable("The file holds no RIS records (“TY  - …” lines).")


def _span_end(block: bytes, start: int) -> int | None:
    """Where the record opening at start ends (the offset of its "ER  -" line's end) when it can be cut out whole: it
    opens with "TY  - ", and the first line after that starts with "TY" or "ER" or is blank is an "ER  -" tag line."""
    if not block.startswith(b"TY  - ", start):
        return None
    found = _TY_ER_OR_BLANK.search(block, start)
    if found is None or found.group() != b"\nER":
        return None
    closing = found.start()
    if not block.startswith(b"  -", closing + 3) or block[closing + 6 : closing + 7] not in _AFTER_CLOSING_TAG:
        return None
    end = block.find(b"\n", closing + 1)
    return len(block) if end < 0 else end


def _decided(pending: list[_Record | _Span | Parsed], known: StoredDigests | None) -> Iterator[Parsed]:
    """What was gathered, in file order: records the corpus holds byte for byte as KnownRecords (a record cut out
    whole decoded only when it had warnings to look for again), the others parsed (without `known`, all of them)."""
    # A record cut out whole is digested from its bytes (its raw text's bytes as a rule: a line of no-break spaces,
    # blank once decoded, is not kept in the raw text; record() tells for sure), unless carriage returns are to go:
    # it is then decoded first; one that is not UTF-8 ends the batch, after the records before it.
    digests: list[bytes | None] = []
    unreadable = None
    for index, record in enumerate(pending):
        if isinstance(record, _Span) and b"\r" not in record.data:
            digests.append(records.bytes_digest(record.data))
            continue
        if isinstance(record, _Span):
            try:
                record = pending[index] = record.record()[0]
            except FileUnreadable as exc:
                pending, unreadable = pending[:index], exc
                break
        digests.append(records.raw_digest(record.raw) if known is not None and isinstance(record, _Record) else None)
    looked_up = [digest for digest in digests if digest is not None]
    stored = known(Reference.Source.RIS, looked_up) if known is not None and looked_up else {}
    for record, digest in zip(pending, digests, strict=True):
        if isinstance(record, Parsed):
            yield record
            continue
        found = stored.get(digest) if digest is not None else None
        if found is None:
            # A record cut out of the bytes is surveyed once: most hold no control character and no whitespace but
            # spaces and line feeds, and then neither each value nor the reference is looked at character by
            # character again.
            no_control = spaces_only = False
            if isinstance(record, _Span):
                no_control, spaces_only = records.surveyed(record.data)
                record, whole = record.record(spaces_only)
                digest = digest if whole else None
            yield _parsed(record, digest, no_control=no_control, spaces_only=spaces_only)
        elif isinstance(record, _Span) and found.warned is False:  # nothing to look for again: not decoded
            stored_record = KnownRecord(Reference.Source.RIS, found.source_id, found.content_sha256)
            yield Parsed(record.number, None, [], [], known=stored_record)
        else:
            yield _known(record.record()[0] if isinstance(record, _Span) else record, found)
    if unreadable is not None:
        raise unreadable


def _outside_record(after: int, line_number: int, tag: str) -> Parsed:
    """A tag line between records: reported (a record whose "TY  -" line is missing), numbered as no record."""
    message = f"Line {line_number} (tag {tag}) is outside any record: no “TY  -” line opens it."
    return Parsed(after, None, [Problem(None, "TY", message)])


def _fields(record: _Record) -> dict[str, list[str]]:
    """A record's values by tag, an untagged line continuing the value before it."""
    fields: dict[str, list[str]] = {}
    if not _UNTAGGED.search(record.raw):  # every line a tag line: one pattern reads them all
        for tag, value in _FIELD.findall(record.raw):
            if tag != "ER":
                fields.setdefault(tag, []).append(value.strip())
        return fields
    last_tag = "TY"
    for line in record.raw.split("\n"):
        match = _TAG_LINE.match(line)
        if match is None:
            fields[last_tag][-1] = f"{fields[last_tag][-1]} {line.strip()}".strip()
        elif (tag := match.group(1)) != "ER":
            fields.setdefault(tag, []).append((match.group(2) or "").strip())
            last_tag = tag
    return fields


def _first(fields: dict[str, list[str]], *tags: str, cleaned: Callable[[str | None], str] = clean) -> str:
    """The first value of the first of the tags that has one, cleaned by cleaned (clean, or clean_spaces when it does
    the same)."""
    for tag in tags:
        if (values := fields.get(tag)) and (value := cleaned(values[0])):
            return value
    return ""


def _doi_and_date(fields: dict[str, list[str]], number: int, warnings: list[Problem]):
    """(DOI, published, precision): a malformed DOI or a date that cannot be read is left out with a warning."""
    doi = records.usable_doi(records.normalise_doi(_first(fields, "DO")), number, warnings)
    published, precision = _published(_first(fields, "DA"), _first(fields, "PY", "Y1"), number, warnings)
    return doi, published, precision


def _known(record: _Record, found: StoredRecord) -> Parsed:
    """A record the corpus holds as it is: only its warnings are looked for, from the values of its DOI and dates
    (read from their lines alone when the record has no untagged lines), unless it had none when it was stored."""
    warnings = record.warnings
    if found.warned is not False:
        if _UNTAGGED.search(record.raw):
            fields = _fields(record)
        else:
            fields = {}
            for tag, value in _WARNED.findall(record.raw):
                fields.setdefault(tag, []).append(value.strip())
        _doi_and_date(fields, record.number, warnings)
    stored = KnownRecord(Reference.Source.RIS, found.source_id, found.content_sha256)
    return records.identify(Parsed(record.number, None, [], warnings, known=stored))


def _parsed(
    record: _Record, digest: bytes | None = None, *, no_control: bool = False, spaces_only: bool = False
) -> Parsed:
    """The record read field by field; digest: its raw_digest, when computed already. no_control and spaces_only:
    what records.surveyed told of the bytes the record was cut from."""
    number, warnings = record.number, record.warnings
    fields = _fields(record)
    cleaned = records.clean_spaces if spaces_only else clean
    title = _first(fields, "TI", "T1", "BT", "CT", cleaned=cleaned)
    abstract = cleaned(" ".join(fields.get("AB", []) + fields.get("N2", [])))
    doi, published, precision = _doi_and_date(fields, number, warnings)
    pmid = _pmid(_first(fields, "AN"), _first(fields, "DB", "DP"))
    own_id = _first(fields, "ID")
    reference = ParsedReference(
        source=Reference.Source.RIS,
        source_id=records.file_source_id(
            pmid=pmid, doi=doi, own_id=own_id, title=title, published=published, abstract=abstract
        ),
        pmid=pmid,
        doi=doi,
        title=title,
        abstract=abstract,
        journal=_first(fields, "JF", "T2", "JO", "JA", "J2", cleaned=cleaned),
        authors=[name for name in map(cleaned, fields.get("AU", []) + fields.get("A1", [])) if name],
        published=published,
        published_precision=precision,
        raw=record.raw,
    )
    if digest is not None:
        reference.raw_digest = digest
    problems = records.problems_of(reference, number, id_from_content=True, no_control=no_control)
    return records.identify(Parsed(number, None if problems else reference, problems, warnings))


def _pmid(accession: str, database: str) -> str:
    """AN is a PMID only when the record says it comes from PubMed (other databases number their own way)."""
    if accession.isdigit() and any(name in database.lower() for name in _PUBMED_DATABASES):
        return accession
    return ""


def _published(da: str, py: str, number: int, warnings: list[Problem]):
    """The more precise of DA and PY; DA without a year ("Jun", "Mar 1") takes PY's. A field that cannot be read
    is left out with a warning, the other one still counts."""
    candidates = []
    year = None
    for tag, text in (("PY", py), ("DA", da)):
        if not text:
            continue
        try:
            match = _RIS_DATE.match(text)
            month_day = _MONTH_DAY.match(text) if match is None else None
            if match is not None:
                candidate = records.partial_date(match.group(1), match.group(2) or "", match.group(3) or "")
            elif month_day is not None and year is not None and records.month_number(month_day.group(1)):
                candidate = records.partial_date(year, month_day.group(1), month_day.group(2) or "")
            else:
                raise ValueError(f"“{text}” is not a date like 2019, 2019/05 or 2019/05/12")
        except ValueError as exc:
            records.date_left_out(number, tag, exc, warnings)
            continue
        candidates.append(candidate)
        if tag == "PY" and match is not None:
            year = match.group(1)
    if not candidates:
        return None, records.PRECISION_UNKNOWN
    order = ("year", "month", "day")
    return max(candidates, key=lambda candidate: order.index(candidate[1]))

"""Web of Science exports: plain text ("Other file formats → Plain text") and tab-delimited.

Plain text: "FN"/"VR" header lines, then records of "XX value" lines from "PT" to "ER", a value's further lines
indented by three spaces, "EF" at the end. A tag whose values are a list (AU, AF, CR, C1…) has one value a line; a
text (TI, AB, SO) is its lines joined. A record whose "ER" line is missing is ended at the next "PT" line with a
warning. Tab-delimited: a header row of tags, then one record a line (lists separated by "; "). Both in UTF-8, with
or without a byte-order mark. Records are numbered from 1 in file order.

Read from each record: TI (title), AB (abstract), AF (full names; else AU), SO (journal), PY and PD (year, month and
day: "MAR", "JAN-FEB", "OCT 15", "Aug 1 2019"), DI (DOI), PM (PMID) and UT, the accession number, which is the
record's id ("WOS:000086967200001"; without one, its PMID, DOI, or a hash of its title or abstract and year, as for
RIS). A plain-text record from "PT " to "ER" without another line starting with "PT", "ER" or "EF" is cut out of
the file's bytes whole and decoded only when it is read, as for RIS (one with carriage returns as it is cut out, its
raw text being without them). A caller that can tell which raw records the corpus holds byte for byte passes
`known`, as for RIS: those records are not read again (nor decoded), unless reading them gave warnings when they
were stored, which are then given again."""

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date

from literature.importers import records
from literature.importers.records import (
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

_TAG_LINE = re.compile(r"^([A-Z][A-Z0-9])(?: (.*))?$")
# The tags read from a record (_parsed), and each value of one in a record's text: its tag line, after the line feed
# before it, and its continuation lines kept after their line feeds (up to the next tag line, read or not). Starting
# with the line feed, the pattern is looked for fast, and the lines of the tags not read (a record's cited references,
# its addresses) are passed over without their values being taken out.
_READ_TAGS = ("TI", "AB", "AF", "AU", "SO", "PY", "PD", "DI", "PM", "UT")
_READ_FIELD = re.compile(rf"\n({'|'.join(_READ_TAGS)}) (.*(?:\n(?![A-Z][A-Z0-9](?: |$)).*)*)", re.MULTILINE)
# Where a value's next line starts, its indent included: a list (AU, AF) split there has its items without indents.
_CONTINUED = re.compile(r"\n\s*")
_HEADER_TAGS = ("FN", "VR", "EF")
# The tags that end an open record: its "ER", the next record's "PT" when the "ER" is missing, the file's "EF".
_ENDING = frozenset({"ER", "PT", "EF"})
# A line of a record's bytes that starts with "PT", "ER" or "EF", or is blank (of spaces or control characters).
_PT_ER_EF_OR_BLANK = re.compile(rb"\n(?:ER|PT|EF|[\s\x1c-\x1f]*(?:\n|$))")
# What may follow "ER" on a record's closing line.
_AFTER_ER = (b" ", b"\n", b"\r", b"")
_YEAR = re.compile(r"\b(\d{4})\b")
_DAY = re.compile(r"^\d{1,2}$")
_DATE_WORD_BREAK = re.compile(r"[\s-]+")


@dataclass(slots=True)
class _Record:
    number: int
    raw: str
    warnings: list[Problem]
    header: list[str] | None = None  # the tab-delimited file's tags, for a record of that file

    def digest(self) -> bytes:
        return records.raw_digest(self.raw)


@dataclass(slots=True)
class _Span:
    """A plain-text record found in the file's bytes, from its "PT " line to the line before its "ER" line, with no
    line starting with "PT", "ER" or "EF", and no blank line, between them, and no carriage return (_gathered decodes
    a record with them as it cuts it out, its raw text being without them): one record, its bytes not decoded yet (a
    record the corpus holds never is). Where it is in its block of the file: for the number of its first line,
    counted only when needed."""

    number: int
    data: bytes
    block: bytes
    offset: int
    block_first_line: int

    def digest(self) -> bytes:
        """The raw record's digest, of the bytes."""
        return records.bytes_digest(self.data)

    def record(self, spaces_only: bool = False) -> tuple[_Record, bool]:
        """The record as the line by line reading gives it, and whether its raw text is the span's bytes (carriage
        returns and lines blank but for other spaces than ASCII ones, such as no-break spaces, are not kept in the
        raw text). spaces_only: the bytes' only whitespace is spaces and line feeds (records.surveyed)."""
        raw, whole = records.cut_record_text(self.data, self.first_line, spaces_only)
        return _Record(self.number, raw, []), whole

    def first_line(self) -> int:
        return self.block_first_line + self.block.count(b"\n", 0, self.offset)


def read(stream, known: StoredDigests | None = None) -> Iterator[Parsed]:
    """Parsed records of a binary stream of a Web of Science export, plain text or tab-delimited."""
    yield from records.held_apart(_gathered(stream), known, Reference.Source.WOS, _parsed, _known)


def _gathered(stream) -> Iterator[_Record | _Span]:
    """The file's records: a plain-text record cut out of the bytes whole where it can be (_span_end), else gathered
    line by line (its lines only looked at for the tags that end it)."""
    number = 0
    current: list[str] | None = None  # the open record's lines
    header: list[str] | None = None  # a tab-delimited file's tags
    first = True
    # Blocks end after a record's "ER" line: a record seldom straddles two of them (one that does is read line by line).
    for block_first_line, block in records.byte_blocks(stream, b"ER"):
        cursor, size = records.BlockLines(block, block_first_line), len(block)
        while (position := cursor.position) < size:
            if current is None and header is None and not first:
                if block[position] == 10:  # an empty line between records
                    cursor.position += 1
                    continue
                if (ends := _span_end(block, position)) is not None:
                    number += 1
                    span = _Span(number, block[position : ends[0]], block, position, block_first_line)
                    yield span if b"\r" not in span.data else span.record()[0]
                    cursor.position = ends[1] + 1
                    continue
            line_number, line = cursor.line()
            if header is not None:
                if line.strip():
                    number += 1
                    yield _Record(number, line, [], header)
                continue
            if first:
                if not line.strip():
                    continue
                first = False
                if "\t" in line:
                    header = _tab_header(line)
                    continue
            if current is not None:
                tag = line[:2]
                if tag not in _ENDING or len(line) > 2 and line[2] != " ":
                    if line.strip():
                        current.append(line)
                    continue
                if tag == "PT":
                    message = f"The record has no “ER” line; it was ended at line {line_number}."
                    yield _Record(number, "\n".join(current), [Problem(number, "ER", message)])
                    number += 1
                    current = [line]
                    continue
                missing = [] if tag == "ER" else [Problem(number, "ER", "The record has no “ER” line before “EF”.")]
                yield _Record(number, "\n".join(current), missing)
                current = None
            elif line.strip() and _TAG_LINE.match(line) and line[:2] not in _HEADER_TAGS:
                number += 1
                current = [line]  # "PT", or the first tag of a record whose "PT" line is missing
    if current is not None:
        message = "The file ends inside this record: its “ER” line is missing."
        yield _Record(number, "\n".join(current), [Problem(number, "ER", message)])
    if first:
        raise FileUnreadable("The file is empty.")
    if number == 0:
        raise FileUnreadable(
            "The file holds no Web of Science records (“PT J” … “ER” lines, or a tab-delimited export)."
            if header is None
            else "The file holds a header but no Web of Science records."
        )


def _span_end(block: bytes, start: int) -> tuple[int, int] | None:
    """Where the record opening at start ends, when it can be cut out whole: (the offset of the line feed before its
    "ER" line, that of the "ER" line's end). It opens with "PT ", and the first line after that starts with "PT", "ER"
    or "EF" or is blank is an "ER" line."""
    if not block.startswith(b"PT ", start):
        return None
    found = _PT_ER_EF_OR_BLANK.search(block, start)
    if found is None or found.group() != b"\nER" or block[found.end() : found.end() + 1] not in _AFTER_ER:
        return None
    end = block.find(b"\n", found.end())
    return found.start(), len(block) if end < 0 else end


def _tab_header(line: str) -> list[str]:
    header = [clean(name) for name in line.split("\t")]
    if "PT" not in header or not ({"TI", "AB"} & set(header)):
        raise FileUnreadable(
            "The first line is not a Web of Science tab-delimited header (tags such as PT, AU, TI, AB, UT)."
        )
    return header


def _fields(record: _Record) -> dict[str, str] | Problem:
    """Values by tag (of a plain-text record, those of the tags read): a value's lines joined by line feeds (one list
    item a line)."""
    if record.header is None:
        raw = record.raw
        # The record's first line ("PT J" as a rule) is a value read only when it starts with one of those tags.
        pairs = _READ_FIELD.findall("\n" + raw if raw[:2] in _READ_TAGS else raw)
        fields = dict(pairs)
        if len(fields) < len(pairs):  # a tag given more than once: its values joined
            fields = {}
            for tag, value in pairs:
                fields[tag] = f"{fields[tag]}\n{value}" if tag in fields else value
        return fields
    values = record.raw.split("\t")
    header = record.header
    if len(values) > len(header) and any(value.strip() for value in values[len(header) :]):
        return Problem(record.number, "row", f"The line has {len(values)} values but the header names {len(header)}.")
    return {
        tag: value.replace("; ", "\n") if tag in ("AU", "AF") else value
        for tag, value in zip(header, values, strict=False)
    }


def _parsed(record: _Record | _Span, digest: bytes | None = None) -> Parsed:
    # A record cut out of the bytes is surveyed once: most hold no control character and no whitespace but spaces and
    # line feeds, and then neither each value nor the reference is looked at character by character again.
    no_control = spaces_only = False
    if isinstance(record, _Span):
        no_control, spaces_only = records.surveyed(record.data)
        record, whole = record.record(spaces_only)
        digest = digest if whole else None
    number, warnings = record.number, record.warnings
    fields = _fields(record)
    if isinstance(fields, Problem):
        return Parsed(number, None, [fields])
    cleaned = records.clean_spaces if spaces_only else clean
    title = cleaned(fields.get("TI"))
    abstract = cleaned(fields.get("AB"))
    doi = records.usable_doi(records.normalise_doi(fields.get("DI")), number, warnings)
    pmid = records.usable_pmid(cleaned(fields.get("PM")), number, warnings)
    published, precision = _published(cleaned(fields.get("PY")), cleaned(fields.get("PD")), number, warnings)
    accession = cleaned(fields.get("UT"))
    reference = ParsedReference(
        source=Reference.Source.WOS,
        source_id=accession[:200]
        or records.file_source_id(pmid=pmid, doi=doi, own_id="", title=title, published=published, abstract=abstract),
        pmid=pmid,
        doi=doi,
        title=title,
        abstract=abstract,
        journal=cleaned(fields.get("SO")),
        authors=_names(fields.get("AF") or fields.get("AU") or "", cleaned),
        published=published,
        published_precision=precision,
        raw=record.raw,
    )
    if digest is not None:
        reference.raw_digest = digest
    problems = records.problems_of(reference, number, id_field="UT", id_from_content=True, no_control=no_control)
    return records.identify(Parsed(number, None if problems else reference, problems, warnings))


def _known(record: _Record | _Span, found: StoredRecord) -> Parsed:
    """A record the corpus holds as it is: not read again (nor decoded) when reading it gave no warning when it was
    stored; otherwise read again, so that its warnings (a malformed DOI or PMID, a date that cannot be read) are given
    again as the first time."""
    stored = KnownRecord(Reference.Source.WOS, found.source_id, found.content_sha256)
    if found.warned is False:
        warnings = [] if isinstance(record, _Span) else record.warnings
    else:
        warnings = _parsed(record).warnings
    return records.identify(Parsed(record.number, None, [], warnings, known=stored))


def _names(value: str, cleaned: Callable[[str | None], str]) -> list[str]:
    """The names of AF or AU, one a line, each cleaned by cleaned (clean, or clean_spaces when it does the same),
    unless one look at them all tells that each is clean already."""
    names = _CONTINUED.split(value)
    joined = " ".join(names)
    if joined and cleaned(joined) == joined:  # no name empty, or with other whitespace than single inner spaces
        return names
    return [name for name in map(cleaned, names) if name]


def _published(py: str, pd: str, number: int, warnings: list[Problem]) -> tuple[date | None, str]:
    """The year of PY (else the one PD names) with PD's month and day when it names them ("MAR", "JAN-FEB",
    "OCT 15", "Aug 1 2019"; a season gives the year alone). A date that cannot be read is left out with a warning."""
    published, precision, error = _date(py, pd)
    if error:
        return records.date_left_out(number, "PY/PD", ValueError(error), warnings)
    return published, precision


@functools.lru_cache(maxsize=4096)
def _date(py: str, pd: str) -> tuple[date | None, str, str]:
    """_published's date and precision, or why there is none (else ""): remembered, the records of a file sharing a
    few hundred dates."""
    if not py and not pd:
        return None, records.PRECISION_UNKNOWN, ""
    year = py or next(iter(_YEAR.findall(pd)), "")
    words = [word for word in _DATE_WORD_BREAK.split(_YEAR.sub(" ", pd)) if word]
    month = words[0] if words and records.month_number(words[0]) else ""
    day = words[1] if month and len(words) > 1 and _DAY.match(words[1]) else ""
    try:
        return *records.partial_date(year, month, day), ""
    except ValueError as exc:
        if day:  # "FEB 30": the month stands
            try:
                return *records.partial_date(year, month), ""
            except ValueError:
                pass
        return None, records.PRECISION_UNKNOWN, str(exc)

"""What every importer and online source produces: one parsed reference, or why the record cannot be used.

Readers yield `Parsed` items in file order; a reader that cannot go on (broken XML, bytes that are not UTF-8)
raises `FileUnreadable` after yielding what it could read.

A record is usable when it has a title or an abstract, and an identifier or a stable content key (see
`problems_of`). An unusable record is skipped with its reasons; a usable one with a defective field (a date that is
not a date, a malformed DOI) is kept without that field and the defect is reported as a warning.
"""

import calendar
import hashlib
import html
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date
from functools import cached_property
from typing import Any

import xxhash

from literature.models import Reference
from reviewapp.core.text import control_character_problem

PRECISION_YEAR = Reference.DatePrecision.YEAR.value
PRECISION_MONTH = Reference.DatePrecision.MONTH.value
PRECISION_DAY = Reference.DatePrecision.DAY.value
PRECISION_UNKNOWN = Reference.DatePrecision.UNKNOWN.value

_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_abbr) if name}
_MONTHS.update({name.lower(): number for number, name in enumerate(calendar.month_name) if name})
_YEAR = re.compile(r"\d{4}")
_DOI = re.compile(r"^10\.\d{4,9}(?:\.\d+)*/\S+$")
_DOI_PREFIX = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:\s*)", re.IGNORECASE)
# MEDLINE-style dates: "2024 Nov-Dec", "2024 Mar 15", "2023 Dec-2024 Jan", "1998 Spring", "2000-2001".
_MEDLINE_DATE = re.compile(r"^\s*(\d{4})(?:\s+([A-Za-z]+)\.?(?:\s+(\d{1,2}))?)?(?![\d])")
# The most characters of each field (README "Literature corpus").
_MAX_LENGTHS = {"source_id": 200, "pmid": 20, "doi": 200, "journal": 500, "title": 2000, "abstract": 50_000}
_TEXT_FIELDS = ("source_id", "pmid", "doi", "title", "abstract", "journal")


@dataclass
class Problem:
    """Why a record (or the file) cannot be imported. record is None for the file as a whole."""

    record: int | None
    field: str
    message: str
    id: str = ""

    def as_dict(self) -> dict:
        return {"record": self.record, "id": self.id, "field": self.field, "message": self.message}


class FileUnreadable(Exception):
    """The file cannot be read on from this point (or at all)."""


@dataclass
class ParsedReference:
    source: str
    source_id: str
    title: str
    pmid: str = ""
    doi: str = ""
    abstract: str = ""
    journal: str = ""
    authors: list[str] = field(default_factory=list)
    published: date | None = None
    published_precision: str = PRECISION_UNKNOWN
    raw: str = ""
    is_demo: bool = False
    # Whether reading raw gave warnings (a field left out); None when not told (a fetched record). A file import
    # sets it: a re-import then need not look again for the warnings of a stored record that had none.
    raw_warned: bool | None = None

    @cached_property
    def content_sha256(self) -> str:
        """sha256 of what the record says (not of how the file spelled it): a changed hash means an update.
        The separators are control characters that cleaned text never holds (clean() folds them as whitespace)."""
        content = (
            self.pmid,
            self.doi,
            self.title,
            self.abstract,
            self.journal,
            "\x1e".join(self.authors),
            self.published.isoformat() if self.published else "",
            self.published_precision,
        )
        return hashlib.sha256("\x1f".join(content).encode()).hexdigest()

    @cached_property
    def raw_digest(self) -> bytes:
        """raw_digest of the raw record, stored beside it. A reader that digested the record already (to look it
        up) sets it, so that it is not computed twice."""
        return raw_digest(self.raw)


@dataclass(slots=True)
class KnownRecord:
    """A record the corpus already holds exactly as the file gives it (its raw text): not read again."""

    source: str
    source_id: str
    content_sha256: str


@dataclass(slots=True)
class Parsed:
    """One record of a file, by its number: the reference, or every reason it cannot be used (`problems`); and what
    was left out of a usable record (`warnings`). `known` instead of a reference: the corpus holds it already."""

    number: int
    reference: ParsedReference | None
    problems: list[Problem]
    warnings: list[Problem] = field(default_factory=list)
    known: KnownRecord | None = None


@dataclass(slots=True)
class StoredRecord:
    """What the corpus holds for a raw record stored byte for byte: its reference's id, its content hash, whether
    it is undated (a record whose date could not be read is; one that is dated had no warning about its date) and
    whether reading it gave warnings (ParsedReference.raw_warned; None when not told)."""

    source_id: str
    content_sha256: str
    undated: bool
    warned: bool | None = None


# (source, raw digests) → {digest: StoredRecord} of the source's references whose raw record has that digest.
StoredDigests = Callable[[str, list[bytes]], dict[bytes, StoredRecord]]
# A reader gathers this many records before it asks which of them the corpus holds.
KNOWN_BATCH = 500
# While records are new, one in this many of a batch is asked about first (SampledLookup).
PROBE_EVERY = 10


class SampledLookup:
    """A StoredDigests that asks about a sample of each batch first (one record in PROBE_EVERY) while most records
    of the batches before were new, and answers that none is stored when most of the sample is new: a first import
    does not look every record up. Such a batch's records are parsed in full; the writer counts one the corpus holds
    unchanged all the same."""

    def __init__(self, known: StoredDigests):
        self.known = known
        self.probing = True

    def __call__(self, source: str, digests: list[bytes]) -> dict[bytes, StoredRecord]:
        if self.probing:
            sample = digests[::PROBE_EVERY]
            if 2 * len(self.known(source, sample)) < len(sample):
                return {}
        found = self.known(source, digests)
        self.probing = 2 * len(found) < len(digests)
        return found


def raw_digest(raw: str) -> bytes:
    """The digest of a raw record's UTF-8 bytes (bytes_digest), stored beside it: a re-import tells an unchanged
    record by it."""
    return bytes_digest(raw.encode())


def clean(text: str | None) -> str:
    """Whitespace collapsed, ends trimmed. Most values are clean already, which a few scans in C tell, instead of
    splitting the text into words and joining them again: every whitespace character but the space is one that
    str.isprintable() refuses."""
    if not text:
        return ""
    if "  " in text or text[0] == " " or text[-1] == " " or not text.isprintable():
        return " ".join(text.split())
    return text


def clean_spaces(text: str | None) -> str:
    """clean() of a text whose only whitespace characters are spaces and line feeds (read from bytes that
    surveyed() found so): only those are looked at, not every character's class."""
    if not text:
        return ""
    if "  " in text or "\n" in text or text[0] == " " or text[-1] == " ":
        return " ".join(text.split())
    return text


# What surveyed() marks in a record's bytes: as 0, a control character (what control_character_problem refuses); as
# 1, a byte that is, or starts, whitespace other than a space or a line feed in UTF-8: a tab, a carriage return, and
# the first byte of U+0085, U+00A0, U+1680, U+2000–U+200A, U+2028, U+2029, U+202F, U+205F and U+3000 (0xC2, 0xE1,
# 0xE2, 0xE3, which start other characters too, an en dash among them: those only leave the answer open).
_CONTROL_BYTES = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
_OTHER_SPACE_BYTES = b"\t\r\xc2\xe1\xe2\xe3"
_SURVEY = bytes.maketrans(
    _CONTROL_BYTES + _OTHER_SPACE_BYTES, bytes(len(_CONTROL_BYTES)) + b"\x01" * len(_OTHER_SPACE_BYTES)
)


def surveyed(data: bytes) -> tuple[bool, bool]:
    """What one pass over a record's UTF-8 bytes tells of every text read from them: (whether they hold no control
    character, so problems_of need not look for one; whether, besides, their only whitespace characters are surely
    spaces and line feeds, so clean_spaces cleans a value as clean does). A translation and two memchr calls over the
    bytes take a fraction of the time of str.isprintable() over the texts, which looks every character up."""
    marked = data.translate(_SURVEY)
    no_control = 0 not in marked
    return no_control, no_control and 1 not in marked


# What PubMed writes as the title of an article that has none in English (XML ArticleTitle, MEDLINE TI); the title in
# the original language, when there is one, is in VernacularTitle (XML) or TT (MEDLINE).
NOT_AVAILABLE_TITLE = "[Not Available]."


def pubmed_title(title: str | None, vernacular: str | None = "") -> str:
    """A PubMed record's title: its English title, else its title in the original language, else none."""
    title = clean(title)
    return title if title and title != NOT_AVAILABLE_TITLE else clean(vernacular)


def normalise_doi(text: str | None) -> str:
    """A DOI without its resolver prefix, lower-cased (DOIs are case-insensitive)."""
    return _DOI_PREFIX.sub("", clean(text)).lower()


def is_doi(text: str) -> bool:
    return bool(_DOI.match(text))


def month_number(text: str) -> int | None:
    """1–12 from "Nov", "November", "11" or "011"; None for anything else (seasons included)."""
    value = text.strip().rstrip(".").lower()
    if value.isdigit():
        number = int(value)
        return number if 1 <= number <= 12 else None
    return _MONTHS.get(value)


def partial_date(year: str, month: str = "", day: str = "") -> tuple[date, str]:
    """A date and its precision from year, month and day texts (month and day optional). ValueError says why not."""
    year, month, day = year.strip(), month.strip(), day.strip()
    if not _YEAR.fullmatch(year):
        raise ValueError(f"the year “{year}” is not a four-digit year")
    if not month:
        if day:
            raise ValueError("a day is given without a month")
        return date(int(year), 1, 1), PRECISION_YEAR
    number = month_number(month)
    if number is None:
        raise ValueError(f"“{month}” is not a month")
    if not day:
        return date(int(year), number, 1), PRECISION_MONTH
    if not day.isdigit():
        raise ValueError(f"the day “{day}” is not a number")
    try:
        return date(int(year), number, int(day)), PRECISION_DAY
    except ValueError:
        raise ValueError(f"{year} {month} {day} is not a date") from None


def medline_date(text: str) -> tuple[date, str]:
    """A MEDLINE-style free-text date: ranges and seasons keep their first year and, when named, first month."""
    match = _MEDLINE_DATE.match(text)
    if match is None:
        raise ValueError(f"“{text.strip()}” does not start with a four-digit year")
    year, month, day = match.groups()
    if month and month_number(month) is None:
        return partial_date(year)  # a season ("Spring") or a word: the year is all we know
    return partial_date(year, month or "", day or "")


def strip_markup(text: str) -> str:
    """Text of an HTML fragment (Europe PMC titles and abstracts): tags dropped, entities decoded."""
    return clean(html.unescape(re.sub(r"<[^>]+>", " ", text or "")))


def problems_of(
    reference: ParsedReference,
    number: int,
    *,
    id_field: str = "id",
    id_label: str = "identifier",
    id_from_content: bool = False,
    no_control: bool = False,
) -> list[Problem]:
    """Why a record cannot be used at all, whatever its format: no title and no abstract, no identifier, an
    identifier that is not one, a value too long to store, or one holding a control character. id_from_content: the
    id falls back on a key of the title or abstract (RIS, CSV), so a record without either has only that problem to
    report. no_control: the caller found that the bytes every text was read from hold no control character
    (surveyed), so they are not looked at again."""
    problems = []
    ident = reference.source_id

    def problem(field_name: str, message: str) -> None:
        problems.append(Problem(number, field_name, message, ident))

    if not reference.title and not reference.abstract:
        problem("title", "The record has neither a title nor an abstract.")
    if not reference.source_id and not (id_from_content and not (reference.title or reference.abstract)):
        problem(id_field, f"The record has no {id_label}.")
    if reference.pmid and not reference.pmid.isdigit():
        problem("pmid", f"The PMID “{reference.pmid}” is not a number.")
    if reference.doi and not is_doi(reference.doi):
        problem("doi", f"“{reference.doi}” is not a DOI (10.<registrant>/<suffix>).")
    for name, limit in _MAX_LENGTHS.items():
        value = getattr(reference, name)
        if len(value) > limit:
            problem(name, f"The {name} has {len(value)} characters; at most {limit} fit.")
    if no_control:
        return problems
    # One look over all the texts before naming the field that holds one: text that is printable (nearly all) holds
    # none, which str.isprintable() tells several times faster than a search.
    joined = " ".join([*(getattr(reference, name) for name in _TEXT_FIELDS), *reference.authors])
    if not joined.isprintable() and control_character_problem(joined):
        texts = [(name, getattr(reference, name)) for name in _TEXT_FIELDS]
        texts += [("authors", author) for author in reference.authors]
        for name, value in texts:
            if message := control_character_problem(value):
                problem(name, f"The {name}: {message[0].lower()}{message[1:]}")
                break
    return problems


def usable_doi(doi: str, number: int, warnings: list[Problem]) -> str:
    """The DOI when well formed; otherwise "" and a warning (the record is kept without it)."""
    if doi and not is_doi(doi):
        warnings.append(Problem(number, "doi", f"“{doi}” is not a DOI (10.<registrant>/<suffix>); it was left out."))
        return ""
    return doi


def usable_pmid(pmid: str, number: int, warnings: list[Problem]) -> str:
    """The PMID when it is a number; otherwise "" and a warning (for formats where the PMID is not the record's id)."""
    if pmid and not pmid.isdigit():
        warnings.append(Problem(number, "pmid", f"The PMID “{pmid}” is not a number; it was left out."))
        return ""
    return pmid


def date_left_out(number: int, label: str, error: ValueError, warnings: list[Problem]) -> tuple[None, str]:
    """A date that cannot be read: the record is kept undated, with a warning. Returns (None, unknown precision)."""
    warnings.append(Problem(number, "published", f"The date ({label}) is not valid: {error}; it was left out."))
    return None, PRECISION_UNKNOWN


def identify(parsed: Parsed) -> Parsed:
    """The record's id on each of its problems and warnings (known only once the reference is built)."""
    ident = parsed.reference.source_id if parsed.reference else parsed.known.source_id if parsed.known else ""
    for problem in [*parsed.problems, *parsed.warnings]:
        problem.id = problem.id or ident
    return parsed


# Bytes read at a time by byte_blocks (and so text_blocks).
TEXT_BLOCK = 1 << 20


def text_blocks(stream) -> Iterator[tuple[int, list[str]]]:
    """The lines of text_lines a block at a time: (the first one's number, the lines without their line ends). One
    decode and one split per block of byte_blocks instead of per line; bytes that are not UTF-8 raise FileUnreadable
    naming their line, after the block's lines before it."""
    for number, chunk in byte_blocks(stream):
        try:
            text = chunk.decode("utf-8")
        except UnicodeDecodeError as exc:
            readable = chunk.rfind(b"\n", 0, exc.start) + 1
            if readable:
                yield number, _lines(chunk[:readable].decode("utf-8"))
            bad = number + chunk.count(b"\n", 0, exc.start)
            raise FileUnreadable(f"Line {bad} is not UTF-8 text: save the file as UTF-8.") from None
        yield number, _lines(text)


def byte_blocks(stream, record_end: bytes = b"") -> Iterator[tuple[int, bytes]]:
    """The stream's bytes a block of whole lines at a time (about TEXT_BLOCK bytes, the last line possibly without its
    line feed), with the number of each block's first line; a leading byte-order mark dropped. For readers that find
    their records in the bytes and decode only those they read (decoded_record names a line that is not UTF-8).
    record_end: what the line that ends a record starts with; a block then ends with the last such line it holds, so
    that a record seldom straddles two blocks (a reader reads one that does line by line)."""
    number, rest, first = 1, b"", True
    while True:
        data = stream.read(TEXT_BLOCK)
        if data:
            data = rest + data
            end = data.rfind(b"\n") + 1
            if end == 0:
                rest = data
                continue
            if record_end and (last := data.rfind(b"\n" + record_end, 0, end)) >= 0:
                end = data.find(b"\n", last + 1) + 1
            chunk, rest = data[:end], data[end:]
        elif rest:
            chunk, rest = rest, b""
        else:
            return
        if first:
            chunk = chunk.removeprefix(b"\xef\xbb\xbf")
            first = False
        yield number, chunk
        number += chunk.count(b"\n")


def decoded_record(data: bytes, first_line: int) -> str:
    """Bytes of a record (or line) starting at line first_line as UTF-8 text; FileUnreadable names a line that is
    not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise not_utf8(data, first_line, exc) from None


def not_utf8(data: bytes, first_line: int, error: UnicodeDecodeError) -> FileUnreadable:
    """The error for bytes starting at line first_line that are not UTF-8, naming the line of the first bad byte."""
    bad = first_line + data.count(b"\n", 0, error.start)
    return FileUnreadable(f"Line {bad} is not UTF-8 text: save the file as UTF-8.")


class BlockLines:
    """A block of byte_blocks read a line at a time by a reader that also cuts whole records out of it: `position` is
    where reading is (the reader moves it past a record it cut out), and a line's number is counted only when a line
    is read."""

    __slots__ = ("block", "position", "_counted", "_line_number")

    def __init__(self, block: bytes, first_line: int):
        self.block = block
        self.position = 0
        self._counted, self._line_number = 0, first_line  # the number of the line at offset _counted

    def line(self) -> tuple[int, str]:
        """(its number, its text without its line end) of the line at `position`, which moves past it; bytes that are
        not UTF-8 raise FileUnreadable naming the line."""
        block, position = self.block, self.position
        self._line_number += block.count(b"\n", self._counted, position)
        self._counted = position
        end = block.find(b"\n", position)
        end = len(block) if end < 0 else end
        self.position = end + 1
        return self._line_number, decoded_record(block[position:end], self._line_number).rstrip("\r")


# A line that is blank (of whitespace only) after a record's first line.
_BLANK_LINE = re.compile(r"\n\s*(?:\n|$)")


def cut_record_text(data: bytes, first_line: Callable[[], int], spaces_only: bool = False) -> tuple[str, bool]:
    """A record cut whole out of a file's bytes, as reading it line by line gives it: (its raw text, whether that is
    the bytes decoded). Carriage returns and blank lines are not kept; the bytes have no line blank in ASCII (the
    reader cut them so), so only one of other spaces (a no-break space) can be, unless the caller found that their
    only whitespace is spaces and line feeds (spaces_only, from surveyed). first_line(): the number of the record's
    first line, counted only to name a line that is not UTF-8."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise not_utf8(data, first_line(), exc) from None
    if spaces_only:
        return text, True
    if "\r" in text or not text.isascii() and _BLANK_LINE.search(text):
        return "\n".join(line for line in (line.rstrip("\r") for line in text.split("\n")) if line.strip()), False
    return text, True


# The length of a raw record's digest.
DIGEST_BYTES = 16


def bytes_digest(data: bytes) -> bytes:
    """raw_digest of a raw record given as its UTF-8 bytes (no decoding and encoding again): their XXH3 hash of 128
    bits, which takes a twentieth of the time of a sha256 (a change check, not a security one)."""
    return xxhash.xxh3_128_digest(data)


def _lines(text: str) -> list[str]:
    """Lines split at line feeds as a binary file's lines are, without their line ends (any carriage returns)."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return [line.rstrip("\r") for line in lines] if "\r" in text else lines


def text_lines(stream):
    """(line number, text without its line end) of a binary stream read as UTF-8, a leading BOM dropped."""
    for number, raw in enumerate(stream, start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise FileUnreadable(f"Line {number} is not UTF-8 text: save the file as UTF-8.") from None
        if number == 1:
            text = text.removeprefix("\ufeff")
        yield number, text.rstrip("\r\n")


def file_source_id(*, pmid: str, doi: str, own_id: str, title: str, published: date | None, abstract: str = "") -> str:
    """The id of a RIS or CSV record: its PMID, else its DOI, else the file's own id, else a hash of its title and
    year, else (a record without a title) a hash of its abstract and year. Global ids come first so the same article
    exported by two tools is one reference; the content keys are stable across re-imports of the same file."""
    if pmid:
        return f"pmid:{pmid}"
    if doi:
        return f"doi:{doi}"
    if own_id:
        return f"id:{own_id}"[:200]
    year = published.year if published else ""
    if title:
        return "title:" + hashlib.sha256(f"{clean(title).lower()}|{year}".encode()).hexdigest()[:32]
    if abstract:
        return "abstract:" + hashlib.sha256(f"{clean(abstract).lower()}|{year}".encode()).hexdigest()[:32]
    return ""


def held_apart(
    gathered: Iterable[Any],
    known: StoredDigests | None,
    source: str,
    parse: Callable[[Any, bytes | None], Parsed],
    parse_known: Callable[[Any, StoredRecord], Parsed],
) -> Iterator[Parsed]:
    """The records a reader gathered (each with a `digest()`, its raw record's raw_digest), in file order: each
    parsed (parse(record, its raw digest)), or, with `known`, looked up KNOWN_BATCH at a time (a sample first while
    most are new, SampledLookup) and those the corpus holds byte for byte answered by parse_known(record, the stored
    record)."""
    if known is None:
        for record in gathered:
            yield parse(record, None)
        return
    lookup = SampledLookup(known)
    pending: list[Any] = []
    try:
        for record in gathered:
            pending.append(record)
            if len(pending) == KNOWN_BATCH:
                # Taken out first: a record of the batch that is not UTF-8 ends the batch, and the file, there.
                full, pending = pending, []
                yield from _looked_up(full, lookup, source, parse, parse_known)
    except FileUnreadable:
        # What was gathered before the file stopped being readable is still answered, in order.
        yield from _looked_up(pending, lookup, source, parse, parse_known)
        raise
    yield from _looked_up(pending, lookup, source, parse, parse_known)


def _looked_up(pending, lookup, source, parse, parse_known) -> Iterator[Parsed]:
    digests = [record.digest() for record in pending]
    stored = lookup(source, digests) if pending else {}
    for record, digest in zip(pending, digests, strict=True):
        found = stored.get(digest)
        yield parse(record, digest) if found is None else parse_known(record, found)

"""MEDLINE text (PubMed's "Save → PubMed format", `.nbib`): "TAG - value" lines, continuation lines indented by
six spaces, records separated by blank lines. Records are numbered from 1 in file order.

A record is cut out of the file's bytes whole, up to the next line blank in ASCII (of spaces or control characters),
by searches in C, and decoded at once, which tells that it is UTF-8; carriage returns at its lines' ends are dropped,
and only a text that holds a line blank but for other spaces (a line of no-break spaces, which ends a record too) is
read line by line. Its fields are read when the record is parsed. A caller that can tell which raw records the
corpus holds byte for byte passes `known`: records are then looked up in batches (records.held_apart), and those the
corpus holds are not parsed again (the same text gives the same reference), only checked for what would be warned
about (lines that are not "TAG - value" lines, a date that cannot be read)."""

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

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
# The ASCII characters that str.strip() takes for spaces.
_ASCII_SPACES = b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"
# In the file's bytes: the line feed ending a record's last line, then the lines blank in ASCII after it (of spaces
# or control characters, as str.strip() takes them), up to the next record's first line or the end. Each line's
# spaces are taken possessively (*+): a continuation line's indent is not searched again for a line end.
_BLANK_LINES = re.compile(rb"\n(?:[ \t\r\x0b\x0c\x1c-\x1f]*+(?:\n|\Z))+")
# The first bytes of the UTF-8 of every character besides ASCII ones that str.strip() takes for a space (U+0085,
# U+00A0, U+1680, U+2000–U+200A, U+2028, U+2029, U+202F, U+205F, U+3000): a record's bytes without any of them
# have no line blank but for such spaces.
_OTHER_SPACE_LEADS = (b"\xc2", b"\xe1", b"\xe2", b"\xe3")
# A line blank in the text of a record cut at the lines blank in ASCII: blank but for other spaces. The first line,
# which the first pattern cannot tell, the second one does.
_BLANK_LINE = re.compile(r"\n\s*(?:\n|\Z)")
_BLANK_FIRST_LINE = re.compile(r"\s*(?:\n|\Z)")


@dataclass(slots=True)
class _Record:
    """A record: its number, its raw text (its lines joined, without carriage returns at their ends), its bytes in
    the file when they are the raw text's UTF-8 (digested as they are; else None), and where it starts: the block
    of the file that holds its first line, the offset of that line in it and the number of the block's first line.
    Its first line's number is counted only when a warning names a line (for a record read line by line, it is
    known: block is then empty and block_first_line is the record's first line)."""

    number: int
    raw: str
    data: bytes | None
    block: bytes
    offset: int
    block_first_line: int

    def digest(self) -> bytes:
        return records.bytes_digest(self.data) if self.data is not None else records.raw_digest(self.raw)

    def first_line(self) -> int:
        return self.block_first_line + self.block.count(b"\n", 0, self.offset)


def read(stream, known: StoredDigests | None = None) -> Iterator[Parsed]:
    """Parsed records of a binary stream of MEDLINE text (see the module's docs for `known`)."""
    yield from records.held_apart(_gathered(stream), known, Reference.Source.PUBMED, _parsed, _known)


def _gathered(stream) -> Iterator[_Record]:
    """The file's records in order, from its runs of lines between lines blank in ASCII (_runs). Bytes that are not
    UTF-8 raise FileUnreadable naming their line, after the records that ended before it."""
    number = 0
    for data, block, offset, block_first_line in _runs(stream):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            first_line = block_first_line + block.count(b"\n", 0, offset)
            # The lines before the one that is not UTF-8: a record they hold that a blank line ends is read.
            before = data[: max(data.rfind(b"\n", 0, exc.start), 0)].decode("utf-8")
            yield from _read_line_by_line(before, first_line, number, ended=False)
            raise records.not_utf8(data, first_line, exc) from None
        if not text.isascii() and _has_other_blank_line(data, text):
            first_line = block_first_line + block.count(b"\n", 0, offset)
            for record in _read_line_by_line(text, first_line, number, ended=True):
                number = record.number
                yield record
            continue
        number += 1
        if b"\r" in data:
            raw = "\n".join([line.rstrip("\r") for line in text.split("\n")])
            yield _Record(number, raw, None, block, offset, block_first_line)
        else:
            yield _Record(number, text, data, block, offset, block_first_line)
    if number == 0:
        raise FileUnreadable("The file holds no MEDLINE records (“PMID- …” lines).")


def _runs(stream) -> Iterator[tuple[bytes, bytes, int, int]]:
    """The file's runs of lines not blank in ASCII, in file order, each as (its bytes without the last line's end,
    the block of records.byte_blocks holding its first line, the offset of that line in it, the number of the
    block's first line). A run that reaches the end of its block is carried into the next one."""
    carried: tuple[list[bytes], bytes, int, int] | None = None  # a run's parts in its blocks so far, where it starts
    for block_first_line, block in records.byte_blocks(stream):
        size = len(block)
        spaces = size - len(block.lstrip(_ASCII_SPACES))  # before the block's first line not blank, if any
        position = size if spaces == size else block.rfind(b"\n", 0, spaces) + 1
        if carried is not None:
            parts, start_block, start, start_block_first_line = carried
            if position == 0:  # the block's first line goes on with the run
                end, after = _run_end(block, 0)
                parts.append(block[:end])
                if after is None:
                    continue
                position = after
            yield b"\n".join(parts), start_block, start, start_block_first_line
            carried = None
        while position < size:
            end, after = _run_end(block, position)
            if after is None:
                carried = [block[position:end]], block, position, block_first_line
                break
            yield block[position:end], block, position, block_first_line
            position = after
    if carried is not None:
        parts, start_block, start, start_block_first_line = carried
        yield b"\n".join(parts), start_block, start, start_block_first_line


def _run_end(block: bytes, start: int) -> tuple[int, int | None]:
    """Where the run of lines starting at start ends: (the offset of its last line's end, that of the next run's
    first line, or the block's length when the blank lines after the run reach it); the second is None when the
    run's last line is the block's (the next block may go on with the run)."""
    found = _BLANK_LINES.search(block, start)
    if found is None:  # the file's last line, without a line end
        return len(block), None
    end, after = found.span()
    if after == len(block) and after - end == 1:
        return end, None
    return end, after


def _has_other_blank_line(data: bytes, text: str) -> bool:
    """Whether a run's text, cut at the lines blank in ASCII, holds a line blank but for other spaces (no-break
    spaces...): a search for their first bytes in C, then in the text when one is found."""
    if not any(lead in data for lead in _OTHER_SPACE_LEADS):
        return False
    return bool(_BLANK_FIRST_LINE.match(text) or _BLANK_LINE.search(text))


def _read_line_by_line(text: str, first_line: int, number: int, *, ended: bool) -> Iterator[_Record]:
    """The records of a run's text (starting at line first_line) as reading it a line at a time finds them: a line
    blank but for other spaces than ASCII ones ends a record, carriage returns at lines' ends are dropped. Records
    are numbered after `number`. ended: whether the run's last lines are a whole record (else the line after them
    is not UTF-8, and the record they start is left out)."""
    lines: list[str] = []
    start = first_line
    for line_number, line in enumerate(text.split("\n"), first_line):
        if line.strip():
            if not lines:
                start = line_number
            lines.append(line.rstrip("\r"))
        elif lines:
            number += 1
            yield _Record(number, "\n".join(lines), None, b"", 0, start)
            lines = []
    if lines and ended:
        yield _Record(number + 1, "\n".join(lines), None, b"", 0, start)


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
    for line_number, line in enumerate(record.raw.split("\n"), record.first_line()):
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


def _first(fields: dict[str, list[str]], *tags: str, cleaned: Callable[[str | None], str] = clean) -> str:
    """The first value of the first of tags the record has, cleaned by cleaned (clean, or clean_spaces when it does
    the same)."""
    for tag in tags:
        if values := fields.get(tag):
            return cleaned(values[0])
    return ""


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
    # A record whose raw text is its bytes is surveyed once: most hold no control character and no whitespace but
    # spaces and line feeds, and then neither each value nor the reference is looked at character by character again.
    no_control, spaces_only = records.surveyed(record.data) if record.data is not None else (False, False)
    cleaned = records.clean_spaces if spaces_only else clean
    fields, warnings = _fields(record)
    pmid = _first(fields, "PMID", cleaned=cleaned)
    published, precision = _date(fields, number, warnings)
    reference = ParsedReference(
        source=Reference.Source.PUBMED,
        source_id=pmid,
        pmid=pmid,
        doi=_doi(fields.get("AID", []) + fields.get("LID", [])),
        title=records.pubmed_title(_first(fields, "TI", cleaned=cleaned), _first(fields, "TT", cleaned=cleaned))
        or _first(fields, "BTI", cleaned=cleaned),
        abstract=cleaned(" ".join(fields.get("AB", []))),
        journal=_first(fields, "JT", "TA", cleaned=cleaned),
        authors=[name for name in map(cleaned, fields.get("FAU") or fields.get("AU") or []) if name],
        published=published,
        published_precision=precision,
        raw=record.raw,
    )
    if digest is None and record.data is not None:
        digest = record.digest()  # of the bytes as they are: the raw text is not encoded again
    if digest is not None:
        reference.raw_digest = digest
    problems = records.problems_of(reference, number, id_field="PMID", id_label="PMID", no_control=no_control)
    return records.identify(Parsed(number, None if problems else reference, problems, warnings))


def _doi(article_ids: list[str]) -> str:
    """The first well-formed "10.1000/xyz [doi]" among AID and LID values (as for PubMed XML, a malformed one from
    PubMed stays in the raw record)."""
    for value in article_ids:
        value = value.rstrip()
        if value.endswith("[doi]"):
            doi = records.normalise_doi(value[: -len("[doi]")])
            if records.is_doi(doi):
                return doi
    return ""


@functools.lru_cache(maxsize=1024)  # many records of a file share their date: each is read once
def _published(dp: str, dep: str):
    """DP ("2024 Nov-Dec", "2024 Mar 15", "2024"), else the electronic date DEP (YYYYMMDD), else unknown."""
    if dp:
        return records.medline_date(dp)
    if re.fullmatch(r"\d{8}", dep):
        return records.partial_date(dep[:4], dep[4:6], dep[6:])
    return None, records.PRECISION_UNKNOWN

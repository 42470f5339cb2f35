"""RIS (reference managers' export): "TY  - JOUR" opens a record, "ER  -" closes it, one "XX  - value" tag per
line; a line without a tag inside a record continues the previous value (some exporters wrap long abstracts, EndNote
writes keywords one per line). Lines between records that are not tags (Ovid's "Record #1 of 2", a provider header,
a record's number "1.", its links to full text) are ignored, and so are tag lines there that do not describe a work
(Ovid writes "NL  - <journal abbreviation>" after each record's "ER  -"); a tag line there that does (a title, an
abstract, an author, a DOI, a date) is a record whose "TY  -" line is missing, and is reported. Records are numbered
from 1 in file order.

A record's id is its PMID, else its DOI, else the file's own ID tag, else a hash of its title (or, without a title,
its abstract) and year, so the same article imported from two reference managers is one reference."""

import re
from collections.abc import Iterator

from literature.importers import records
from literature.importers.records import FileUnreadable, Parsed, ParsedReference, Problem, clean
from literature.models import Reference

_TAG_LINE = re.compile(r"^([A-Z][A-Z0-9]) {1,2}-(?: (.*))?$")
# "2019", "2019/05/12", "2019/05//", "2019///Spring", "2019-05-12".
_RIS_DATE = re.compile(r"^(\d{4})(?:[/-](\d{0,2})(?:[/-](\d{0,2}))?)?(?:/.*)?$")
_PUBMED_DATABASES = ("pubmed", "medline", "nlm")
# Tags outside a record that mean a record lost its "TY  -" line (other tags there are exporters' extras).
_WORK_TAGS = frozenset({"TI", "T1", "BT", "CT", "AB", "N2", "AU", "A1", "DO", "AN", "PY", "Y1", "DA", "JF", "T2"})
# EndNote writes DA as a month and day without the year ("Jun", "Mar 1"), the year being PY's.
_MONTH_DAY = re.compile(r"^([A-Za-z]{3,9})\.?(?:\s+(\d{1,2}))?$")


def read(stream) -> Iterator[Parsed]:
    """Parsed records of a binary stream of RIS text, and a Parsed without a reference for each tag line found
    outside any record (a record whose "TY  -" line is missing)."""
    number = 0
    fields: dict[str, list[str]] | None = None
    lines: list[str] = []
    warnings: list[Problem] = []
    last_tag = None
    for line_number, line in records.text_lines(stream):
        if not line.strip():
            continue
        match = _TAG_LINE.match(line)
        tag, value = (match.group(1), (match.group(2) or "").strip()) if match else (None, line.strip())
        if fields is None:
            if tag == "TY":
                number += 1
                fields, lines, warnings, last_tag = {"TY": [value]}, [line], [], "TY"
            elif tag in _WORK_TAGS:
                yield _outside_record(number, line_number, tag)
            continue
        lines.append(line)
        if tag == "ER":
            yield _record(number, fields, lines, warnings)
            fields = None
        elif tag == "TY":
            message = f"The record has no “ER  -” line; it was ended at line {line_number}."
            warnings.append(Problem(number, "ER", message))
            yield _record(number, fields, lines[:-1], warnings)
            number += 1
            fields, lines, warnings, last_tag = {"TY": [value]}, [line], [], "TY"
        elif tag:
            fields.setdefault(tag, []).append(value)
            last_tag = tag
        else:
            fields[last_tag][-1] = f"{fields[last_tag][-1]} {value}".strip()
    if fields is not None:
        warnings.append(Problem(number, "ER", "The file ends inside this record: its “ER  -” line is missing."))
        yield _record(number, fields, lines, warnings)
    if number == 0:
        raise FileUnreadable("The file holds no RIS records (“TY  - …” lines).")


def _outside_record(after: int, line_number: int, tag: str) -> Parsed:
    """A tag line between records: reported (a record whose "TY  -" line is missing), numbered as no record."""
    message = f"Line {line_number} (tag {tag}) is outside any record: no “TY  -” line opens it."
    return Parsed(after, None, [Problem(None, "TY", message)])


def _record(number: int, fields: dict[str, list[str]], lines: list[str], warnings: list[Problem]) -> Parsed:
    def first(*tags: str) -> str:
        for tag in tags:
            if (values := fields.get(tag)) and (value := clean(values[0])):
                return value
        return ""

    title = first("TI", "T1", "BT", "CT")
    abstract = clean(" ".join(fields.get("AB", []) + fields.get("N2", [])))
    doi = records.usable_doi(records.normalise_doi(first("DO")), number, warnings)
    pmid = _pmid(first("AN"), first("DB", "DP"))
    published, precision = _published(first("DA"), first("PY", "Y1"), number, warnings)
    own_id = first("ID")
    reference = ParsedReference(
        source=Reference.Source.RIS,
        source_id=records.file_source_id(
            pmid=pmid, doi=doi, own_id=own_id, title=title, published=published, abstract=abstract
        ),
        pmid=pmid,
        doi=doi,
        title=title,
        abstract=abstract,
        journal=first("JF", "T2", "JO", "JA", "J2"),
        authors=[name for name in map(clean, fields.get("AU", []) + fields.get("A1", [])) if name],
        published=published,
        published_precision=precision,
        raw="\n".join(lines),
    )
    problems = records.problems_of(reference, number, id_from_content=True)
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
            month_day = _MONTH_DAY.match(text)
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

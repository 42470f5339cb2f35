"""MEDLINE text (PubMed's "Save → PubMed format", `.nbib`): "TAG - value" lines, continuation lines indented by
six spaces, records separated by blank lines. Records are numbered from 1 in file order."""

import re
from collections.abc import Iterator

from literature.importers import records
from literature.importers.records import FileUnreadable, Parsed, ParsedReference, Problem, clean
from literature.models import Reference

# The tag is left-justified in four columns, then "- ": "PMID- 123", "TI  - Title", "FAU - Doe, Jane".
_TAG_LINE = re.compile(r"^([A-Z][A-Z0-9]{1,3}) {0,2}- ?(.*)$")
_CONTINUATION = "      "


def read(stream) -> Iterator[Parsed]:
    """Parsed records of a binary stream of MEDLINE text."""
    number = 0
    lines: list[str] = []
    fields: dict[str, list[str]] = {}
    warnings: list[Problem] = []
    last_tag = None
    for line_number, line in records.text_lines(stream):
        if not line.strip():
            if lines:
                yield _record(number, fields, lines, warnings)
                lines, fields, warnings, last_tag = [], {}, [], None
            continue
        if not lines:
            number += 1
        lines.append(line)
        match = _TAG_LINE.match(line)
        if match:
            last_tag = match.group(1)
            fields.setdefault(last_tag, []).append(match.group(2).strip())
        elif line.startswith(_CONTINUATION) and last_tag:
            fields[last_tag][-1] = f"{fields[last_tag][-1]} {line.strip()}".strip()
        else:
            message = f"Line {line_number} is neither a “TAG - value” line nor a continuation; it was ignored."
            warnings.append(Problem(number, "line", message))
    if lines:
        yield _record(number, fields, lines, warnings)
    if number == 0:
        raise FileUnreadable("The file holds no MEDLINE records (“PMID- …” lines).")


def _record(number: int, fields: dict[str, list[str]], lines: list[str], warnings: list[Problem]) -> Parsed:
    def first(*tags: str) -> str:
        return next((clean(fields[tag][0]) for tag in tags if fields.get(tag)), "")

    pmid = first("PMID")
    try:
        published, precision = _published(first("DP"), first("DEP"))
    except ValueError as exc:
        published, precision = records.date_left_out(number, "DP", exc, warnings)
    reference = ParsedReference(
        source=Reference.Source.PUBMED,
        source_id=pmid,
        pmid=pmid,
        doi=_doi(fields.get("AID", []) + fields.get("LID", [])),
        title=records.pubmed_title(first("TI"), first("TT")) or first("BTI"),
        abstract=clean(" ".join(fields.get("AB", []))),
        journal=first("JT", "TA"),
        authors=[name for name in map(clean, fields.get("FAU") or fields.get("AU") or []) if name],
        published=published,
        published_precision=precision,
        raw="\n".join(lines),
    )
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

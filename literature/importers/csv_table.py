"""CSV (UTF-8, a header row; comma-, semicolon- or tab-separated): one reference per row, columns chosen by a
mapping.

Without a mapping, columns named like the fields are used (case-insensitive); a mapping {field: column header}
names other columns, e.g. {"title": "Article Title", "published": "Publication Year"} for a database's export.
Other columns are ignored. Rows are numbered as in a spreadsheet: the header is row 1.
"""

import csv
import itertools
import json
import re
from collections.abc import Iterator

from literature.importers import records
from literature.importers.records import FileUnreadable, Parsed, ParsedReference, Problem, clean
from literature.models import Reference
from reviewapp.core.requests import JSONTooDeep, json_loads_bounded

DELIMITERS = (",", ";", "\t")
FIELDS = ("id", "pmid", "doi", "title", "abstract", "journal", "authors", "published", "year")
FIELD_HELP = {
    "id": "the file's own id of the record",
    "pmid": "PubMed id",
    "doi": "DOI, with or without https://doi.org/",
    "title": "a record needs a title or an abstract",
    "abstract": "",
    "journal": "",
    "authors": "separated by ;",
    "published": "YYYY, YYYY-MM or YYYY-MM-DD",
    "year": "used when there is no published column",
}
_ISO_DATE = re.compile(r"^(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?$")


class MappingInvalid(Exception):
    """The column mapping is not a JSON object of known fields to column names."""


def parse_mapping(text: str | dict | None) -> dict[str, str]:
    """{field: column header} from JSON text (or a dict); empty means "columns named like the fields"."""
    if not text:
        return {}
    if isinstance(text, str):
        try:
            mapping = json_loads_bounded(text)
        except JSONTooDeep as exc:
            raise MappingInvalid(f"The column mapping is not valid: {exc.message}") from None
        except ValueError as exc:
            raise MappingInvalid(f"The column mapping is not valid JSON: {exc}.") from None
    else:
        mapping = text
    if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values()):
        raise MappingInvalid('The column mapping must be a JSON object like {"title": "Article Title"}.')
    unknown = sorted(set(mapping) - set(FIELDS))
    if unknown:
        raise MappingInvalid(
            f"The column mapping names unknown fields: {', '.join(unknown)} (known: {', '.join(FIELDS)})."
        )
    return mapping


def read(stream, mapping: dict[str, str] | None = None) -> Iterator[Parsed]:
    """Parsed rows of a binary stream of CSV text; the separator (comma, semicolon or tab) is the header's."""
    lines = (line + "\n" for _, line in records.text_lines(stream))
    first = next(lines, "")
    if not first.strip():
        raise FileUnreadable("The file is empty: the first row must name the columns.")
    # Spreadsheets in many locales write semicolons; exports from databases often tabs.
    delimiter = max(DELIMITERS, key=first.count)
    rows = csv.reader(itertools.chain([first], lines), delimiter=delimiter)
    try:
        header = next(rows)
        header = [clean(name) for name in header]
        columns = _columns(header, mapping or {})
        for index, row in enumerate(rows, start=2):
            if not any(clean(value) for value in row):
                continue
            yield _row(index, header, row, columns)
    except csv.Error as exc:
        raise FileUnreadable(f"The CSV cannot be read after row {rows.line_num}: {exc}.") from None


def _columns(header: list[str], mapping: dict[str, str]) -> dict[str, int]:
    """Field → column index."""
    position = {name.lower(): index for index, name in enumerate(header)}
    columns, missing = {}, []
    for field in FIELDS:
        if field in mapping:
            index = position.get(clean(mapping[field]).lower())
            if index is None:
                missing.append(f"{field} → “{mapping[field]}”")
            else:
                columns[field] = index
        elif field in position:
            columns[field] = position[field]
    if missing:
        raise FileUnreadable(f"The mapping names columns the file does not have: {'; '.join(missing)}.")
    if "title" not in columns and "abstract" not in columns:
        raise FileUnreadable(
            'The file has no title or abstract column: name one “title” or map it, e.g. {"title": "Title"}.'
        )
    return columns


def _row(number: int, header: list[str], row: list[str], columns: dict[str, int]) -> Parsed:
    if len(row) > len(header):
        problem = Problem(number, "row", f"The row has {len(row)} values but the header names {len(header)} columns.")
        return Parsed(number, None, [problem])

    def value(field: str) -> str:
        index = columns.get(field)
        return clean(row[index]) if index is not None and index < len(row) else ""

    warnings: list[Problem] = []
    pmid = records.usable_pmid(value("pmid"), number, warnings)
    doi = records.usable_doi(records.normalise_doi(value("doi")), number, warnings)
    title, abstract = value("title"), value("abstract")
    try:
        published, precision = _published(value("published"), value("year"))
    except ValueError as exc:
        published, precision = records.date_left_out(number, "published/year", exc, warnings)
    reference = ParsedReference(
        source=Reference.Source.CSV,
        source_id=records.file_source_id(
            pmid=pmid, doi=doi, own_id=value("id"), title=title, published=published, abstract=abstract
        ),
        pmid=pmid,
        doi=doi,
        title=title,
        abstract=abstract,
        journal=value("journal"),
        authors=[clean(name) for name in value("authors").split(";") if clean(name)],
        published=published,
        published_precision=precision,
        raw=json.dumps(dict(zip(header, row, strict=False)), ensure_ascii=False),
    )
    problems = records.problems_of(reference, number, id_from_content=True)
    return records.identify(Parsed(number, None if problems else reference, problems, warnings))


def _published(published: str, year: str):
    text = published or year
    if not text:
        return None, records.PRECISION_UNKNOWN
    match = _ISO_DATE.match(text)
    if match is None:
        raise ValueError(f"“{text}” is not a date like 2019, 2019-05 or 2019-05-12")
    return records.partial_date(match.group(1), match.group(2) or "", match.group(3) or "")

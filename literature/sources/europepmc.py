"""Europe PMC REST search: `search?query=…&resultType=core&format=json&pageSize=…&cursorMark=…`.

Paging follows `nextCursorMark` from `cursorMark=*` until it is absent or repeats (the last page repeats it);
publication dates are bounded with `FIRST_PDATE:[a TO b]`. No key; the polite rate is LITERATURE_EUROPEPMC_RATE.
"""

import json
import re
from collections.abc import Iterator
from datetime import date

from django.conf import settings

from literature.importers.records import (
    PRECISION_UNKNOWN,
    Parsed,
    ParsedReference,
    Problem,
    clean,
    normalise_doi,
    partial_date,
    problems_of,
    strip_markup,
)
from literature.models import Reference
from literature.sources.transport import RateLimit, SourceUnavailable, source_request

SOURCE = "europepmc"
PAGE_SIZE = 1000  # the largest page Europe PMC serves
_HEADING = re.compile(r"<h4>(.*?)</h4>", re.IGNORECASE | re.DOTALL)
_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")


def search(
    query: str,
    *,
    start: date | None = None,
    end: date | None = None,
    limit: int | None = None,
    page_size: int = PAGE_SIZE,
) -> Iterator[list[Parsed]]:
    """Pages of parsed results, at most `limit` results in all."""
    full_query = f"({query}) AND {date_clause(start, end)}" if start or end else query
    size = min(page_size, limit) if limit else page_size
    cursor, number = "*", 0
    while True:
        parameters = {
            "query": full_query,
            "resultType": "core",
            "format": "json",
            "pageSize": size,
            "cursorMark": cursor,
        }
        body = source_request(
            source=SOURCE,
            endpoint="search",
            url=f"{settings.LITERATURE_EUROPEPMC_BASE_URL.rstrip('/')}/search",
            parameters=parameters,
            rate_limit=RateLimit("europepmc", settings.LITERATURE_EUROPEPMC_RATE),
            expires=True,
        )
        try:
            data = json.loads(body)
            results = data.get("resultList", {}).get("result", [])
        except (ValueError, AttributeError):
            raise SourceUnavailable("Europe PMC answered a search with something other than its JSON") from None
        page = []
        for result in results:
            number += 1
            page.append(parse_result(result, number))
            if limit and number >= limit:
                break
        yield page
        next_cursor = data.get("nextCursorMark")
        if (limit and number >= limit) or not results or not next_cursor or next_cursor == cursor:
            return
        cursor = next_cursor


def date_clause(start: date | None, end: date | None) -> str:
    """FIRST_PDATE:[2010-01-01 TO 2019-12-31]; an open side is the widest date the index accepts."""
    low = start.isoformat() if start else "1000-01-01"
    high = end.isoformat() if end else "9999-12-31"
    return f"FIRST_PDATE:[{low} TO {high}]"


def parse_result(result: dict, number: int) -> Parsed:
    """One `resultList.result[]` of resultType=core."""
    origin, ident = clean(str(result.get("source", ""))), clean(str(result.get("id", "")))
    problems = []
    try:
        published, precision = _published(result)
    except ValueError as exc:
        problems.append(Problem(number, "published", f"The publication date is not valid: {exc}.", ident))
        published, precision = None, PRECISION_UNKNOWN
    journal_info = result.get("journalInfo") or {}
    reference = ParsedReference(
        source=Reference.Source.EUROPE_PMC,
        source_id=f"{origin}:{ident}" if origin and ident else "",
        pmid=clean(str(result.get("pmid", ""))),
        doi=normalise_doi(result.get("doi")),
        title=strip_markup(result.get("title", "")),
        abstract=abstract_text(result.get("abstractText", "")),
        journal=clean((journal_info.get("journal") or {}).get("title") or result.get("journalTitle") or ""),
        authors=_authors(result.get("authorList") or {}),
        published=published,
        published_precision=precision,
        raw=json.dumps(result, ensure_ascii=False),
    )
    problems += problems_of(reference, number)
    return Parsed(number, None if problems else reference, problems)


def abstract_text(html_text: str) -> str:
    """Europe PMC marks a structured abstract's sections with <h4>Label</h4>: kept as "Label: text"."""
    labelled = _HEADING.sub(lambda match: f" {strip_markup(match.group(1)).rstrip(':')}: ", html_text or "")
    return strip_markup(labelled)


def _authors(author_list: dict) -> list[str]:
    names = []
    for author in author_list.get("author", []):
        last, first = clean(author.get("lastName")), clean(author.get("firstName"))
        name = f"{last}, {first}" if last and first else clean(author.get("fullName") or author.get("collectiveName"))
        if name:
            names.append(name)
    return names


def _published(result: dict):
    """firstPublicationDate (YYYY-MM-DD), else pubYear, else unknown."""
    first = clean(result.get("firstPublicationDate"))
    if first:
        match = _ISO_DATE.match(first)
        if match is None:
            raise ValueError(f"“{first}” is not a YYYY-MM-DD date")
        return partial_date(*match.groups())
    year = clean(str(result.get("pubYear", "")))
    if year:
        return partial_date(year)
    return None, PRECISION_UNKNOWN

"""Europe PMC REST: the search, and the reference and citation lists of a work.

- Search: `search?query=…&resultType=core&format=json&pageSize=…&cursorMark=…`. Paging follows `nextCursorMark`
  from `cursorMark=*` until it is absent or repeats (the last page repeats it); publication dates are bounded with
  `FIRST_PDATE:[a TO b]`. Works known by id are fetched through it too (`(SRC:MED AND EXT_ID:123) OR …`).
- Lists: `{SRC}/{id}/references` and `{SRC}/{id}/citations` with `format=json&page=N&pageSize=M` (pages from 1, at
  most 1000 entries each): `hitCount`, then `referenceList.reference[]` or `citationList.citation[]`, each entry with
  `id` and `source` when Europe PMC identified the work (`match: "N"` and no id when it did not).

No key; the polite rate is LITERATURE_EUROPEPMC_RATE, shared by every request of every worker.
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
    date_left_out,
    identify,
    normalise_doi,
    partial_date,
    problems_of,
    pubmed_title,
    strip_markup,
)
from literature.models import Reference
from literature.sources.transport import RateLimit, SourceUnavailable, source_request

SOURCE = "europepmc"
PAGE_SIZE = 1000  # the largest page Europe PMC serves
FETCH_BATCH = 100  # ids per query when fetching works by id
_HEADING = re.compile(r"<h4>(.*?)</h4>", re.IGNORECASE | re.DOTALL)
_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")


def search(
    query: str,
    *,
    start: date | None = None,
    end: date | None = None,
    limit: int | None = None,
    page_size: int = PAGE_SIZE,
    expires: bool = True,
) -> Iterator[list[Parsed]]:
    """Pages of parsed results, at most `limit` results in all. expires: False for searches by id, whose answers
    the cache keeps for good (docs of literature.sources.cache)."""
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
            rate_limit=rate_limit(),
            expires=expires,
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


def rate_limit() -> RateLimit:
    return RateLimit("europepmc", settings.LITERATURE_EUROPEPMC_RATE)


# The kinds of list a work has, and whether the cache lets them expire: a work's references never change, the
# works citing it keep growing.
LISTS = {"references": ("referenceList", "reference", False), "citations": ("citationList", "citation", True)}
# Data sources whose works have reference and citation lists (Europe PMC's three-letter codes).
LIST_SOURCES = ("MED", "PMC", "PPR", "AGR", "CBA", "CTX", "ETH", "HIR", "PAT", "NBK")
# The work is part of the cached answer's endpoint name (at most 50 characters): ids are at most 35.
WORK_ID = re.compile(r"^(?P<source>[A-Z]{3}):(?P<id>[A-Za-z0-9._-]{1,35})$")


def work_list(kind: str, work: str, *, page_size: int = PAGE_SIZE) -> Iterator[list[dict]]:
    """The entries of a work's reference list ("references") or citation list ("citations"), page by page.
    work: "SRC:id" (e.g. "MED:12345"). Raises SourceUnavailable (or ReplayMiss) when Europe PMC cannot answer."""
    holder, entry_name, expires = LISTS[kind]
    source, ident = work.split(":", 1)
    page, received = 1, 0
    while True:
        body = source_request(
            source=SOURCE,
            endpoint=f"{kind}/{work}",  # the cache keys an answer by its endpoint and parameters
            url=f"{settings.LITERATURE_EUROPEPMC_BASE_URL.rstrip('/')}/{source}/{ident}/{kind}",
            parameters={"format": "json", "page": page, "pageSize": page_size},
            rate_limit=rate_limit(),
            expires=expires,
        )
        try:
            data = json.loads(body)
            hits = int(data.get("hitCount") or 0)
            entries = (data.get(holder) or {}).get(entry_name) or []
        except (ValueError, AttributeError, TypeError):
            raise SourceUnavailable(
                f"Europe PMC answered the {kind} of {work} with something other than its JSON"
            ) from None
        if not isinstance(entries, list):
            raise SourceUnavailable(f"Europe PMC answered the {kind} of {work} without a list of entries")
        yield [entry for entry in entries if isinstance(entry, dict)]
        received += len(entries)
        # A page may hold fewer entries than asked for: go on until hitCount entries came, or a page is empty.
        if not entries or received >= hits:
            return
        page += 1


def entry_work(entry: dict) -> str | None:
    """ "SRC:id" of a list entry Europe PMC identified, else None."""
    source, ident = clean(str(entry.get("source") or "")), clean(str(entry.get("id") or ""))
    work = f"{source}:{ident}"
    return work if source and ident and WORK_ID.match(work) else None


def fetch_works(works: list[str]) -> Iterator[list[Parsed]]:
    """Full records of works known by "SRC:id", through the search (one query per page of at most 100 ids);
    answers are cached for good."""
    for offset in range(0, len(works), FETCH_BATCH):
        batch = works[offset : offset + FETCH_BATCH]
        query = " OR ".join(f"(SRC:{work.split(':', 1)[0]} AND EXT_ID:{work.split(':', 1)[1]})" for work in batch)
        yield from search(query, page_size=FETCH_BATCH, expires=False)


def date_clause(start: date | None, end: date | None) -> str:
    """FIRST_PDATE:[2010-01-01 TO 2019-12-31]; an open side is the widest date the index accepts."""
    low = start.isoformat() if start else "1000-01-01"
    high = end.isoformat() if end else "9999-12-31"
    return f"FIRST_PDATE:[{low} TO {high}]"


def parse_result(result: dict, number: int) -> Parsed:
    """One `resultList.result[]` of resultType=core."""
    origin, ident = clean(str(result.get("source", ""))), clean(str(result.get("id", "")))
    warnings: list[Problem] = []
    try:
        published, precision = _published(result)
    except ValueError as exc:
        published, precision = date_left_out(number, "firstPublicationDate", exc, warnings)
    journal_info = result.get("journalInfo") or {}
    reference = ParsedReference(
        source=Reference.Source.EUROPE_PMC,
        source_id=f"{origin}:{ident}" if origin and ident else "",
        pmid=clean(str(result.get("pmid", ""))),
        doi=normalise_doi(result.get("doi")),
        title=pubmed_title(strip_markup(result.get("title", ""))),
        abstract=abstract_text(result.get("abstractText", "")),
        journal=clean((journal_info.get("journal") or {}).get("title") or result.get("journalTitle") or ""),
        authors=_authors(result.get("authorList") or {}),
        published=published,
        published_precision=precision,
        raw=json.dumps(result, ensure_ascii=False),
    )
    problems = problems_of(reference, number)
    return identify(Parsed(number, None if problems else reference, problems, warnings))


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

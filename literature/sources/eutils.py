"""NCBI E-utilities: esearch (JSON) for PubMed ids by query and publication date, then efetch (PubMed XML) in
batches of at most 200 ids, read by the PubMed XML importer.

Requests go as POST forms (NCBI accepts POST for every E-utility), so `api_key` never appears in a URL or an
access log. `tool` and `email` identify us as NCBI asks; with NCBI_API_KEY in the environment the shared rate
rises from 3 to 10 requests per second.
"""

import io
import json
import os
from collections.abc import Iterator
from datetime import date

from django.conf import settings

from literature.importers import pubmed_xml
from literature.importers.records import FileUnreadable, Parsed
from literature.sources.transport import RateLimit, SourceUnavailable, source_request

SOURCE = "eutils"
FETCH_BATCH = 200
SEARCH_PAGE = 5000
# ESearch serves at most the first 10,000 ids of a PubMed search (retstart + retmax ≤ 9,999 is safe).
MAX_IDS = 9999


class QueryTooBroad(SourceUnavailable):
    """More ids than ESearch will list: narrow the dates or set a limit."""


def search(
    query: str, *, start: date | None = None, end: date | None = None, limit: int | None = None
) -> Iterator[list[Parsed]]:
    """Pages of parsed PubMed records (one page per efetch batch)."""
    yield from fetch(search_ids(query, start=start, end=end, limit=limit))


def search_ids(
    query: str, *, start: date | None = None, end: date | None = None, limit: int | None = None
) -> list[str]:
    """PubMed ids matching the query, published (pdat) between start and end inclusive, at most `limit`."""
    wanted = limit or MAX_IDS
    if wanted > MAX_IDS:
        raise QueryTooBroad(f"E-utilities lists at most {MAX_IDS} ids per search; the limit {limit} is above it")
    parameters = {"db": "pubmed", "term": query, "retmode": "json"}
    if start or end:
        parameters.update(
            datetype="pdat",
            mindate=(start or date(1800, 1, 1)).strftime("%Y/%m/%d"),
            maxdate=(end or date(3000, 12, 31)).strftime("%Y/%m/%d"),
        )
    ids: list[str] = []
    while len(ids) < wanted:
        page = {**parameters, "retstart": len(ids), "retmax": min(SEARCH_PAGE, wanted - len(ids))}
        result = _esearch(page)
        count = int(result.get("count", 0))
        if limit is None and count > MAX_IDS:
            raise QueryTooBroad(
                f"PubMed finds {count} articles for this search; E-utilities lists at most {MAX_IDS}: "
                "narrow the date range or set a limit"
            )
        found = [str(pmid) for pmid in result.get("idlist", [])]
        ids += found
        if not found or len(ids) >= count:
            break
    return ids[:wanted]


def fetch(ids: list[str]) -> Iterator[list[Parsed]]:
    """Parsed PubMed records of these ids, one list per batch of FETCH_BATCH; by-id answers are cached for good."""
    for offset in range(0, len(ids), FETCH_BATCH):
        batch = ids[offset : offset + FETCH_BATCH]
        body = _request("efetch", {"db": "pubmed", "id": ",".join(batch), "retmode": "xml"}, expires=False)
        try:
            parsed = list(pubmed_xml.read(io.BytesIO(body.encode("utf-8"))))
        except FileUnreadable as exc:
            raise SourceUnavailable(f"E-utilities efetch answered something unreadable: {exc}") from None
        for record in parsed:
            record.number += offset
        yield parsed


def credentials() -> dict:
    return {
        "tool": settings.LITERATURE_NCBI_TOOL,
        "email": settings.LITERATURE_NCBI_EMAIL,
        "api_key": os.environ.get("NCBI_API_KEY", ""),
    }


def rate_limit() -> RateLimit:
    keyed = bool(os.environ.get("NCBI_API_KEY"))
    return RateLimit("ncbi", settings.LITERATURE_NCBI_RATE_WITH_KEY if keyed else settings.LITERATURE_NCBI_RATE)


def _esearch(parameters: dict) -> dict:
    body = _request("esearch", parameters, expires=True)
    try:
        data = json.loads(body)
    except ValueError:
        raise SourceUnavailable("E-utilities esearch answered something other than JSON") from None
    if not isinstance(data, dict) or not isinstance(data.get("esearchresult"), dict):
        error = data.get("error", data) if isinstance(data, dict) else data
        raise SourceUnavailable(f"E-utilities esearch answered without a result: {str(error)[:200]}")
    result = data["esearchresult"]
    if result.get("ERROR"):
        raise SourceUnavailable(f"E-utilities esearch: {result['ERROR']}")
    return result


def _request(endpoint: str, parameters: dict, *, expires: bool) -> str:
    return source_request(
        source=SOURCE,
        endpoint=endpoint,
        url=f"{settings.LITERATURE_EUTILS_BASE_URL.rstrip('/')}/{endpoint}.fcgi",
        parameters=parameters,
        credentials=credentials(),
        rate_limit=rate_limit(),
        expires=expires,
        method="POST",
    )

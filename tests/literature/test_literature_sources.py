"""Europe PMC and NCBI E-utilities clients against a real HTTP server on 127.0.0.1 that answers in their documented
shapes: cursor paging, date ranges, efetch batches, 429 with Retry-After, the response cache, replay-only mode,
credentials kept out of the cache and logs, and request spacing measured on the server side."""

import io
import json
import threading
import time
from dataclasses import dataclass
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

import pytest
from django.core.management import call_command
from django.db import connection, connections

from literature.models import Reference, ReferenceImport, SourceResponse
from literature.services import references_fetch
from literature.sources import europepmc, eutils
from literature.sources.transport import ReplayMiss, SourceUnavailable
from tests.conftest import skip_or_fail

NCBI_KEY = "ncbi-test-key-0123456789"


@dataclass
class Seen:
    method: str
    path: str
    target: str  # path and query string as requested
    query: dict
    form: dict
    at: float

    @property
    def parameters(self) -> dict:
        return {**self.query, **self.form}


class SourceHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _answer(self):
        server = self.server
        parts = urlsplit(self.path)
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        seen = Seen(
            self.command,
            parts.path,
            self.path,
            dict(parse_qsl(parts.query)),
            dict(parse_qsl(raw.decode())),
            time.monotonic(),
        )
        with server.lock:
            server.seen.append(seen)
            status, headers, body = server.app(seen)
        data = body if isinstance(body, bytes) else (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(status)
        self.send_header("content-length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _answer

    def log_message(self, *args):
        pass


@pytest.fixture
def source_server(settings, monkeypatch):
    """A local stand-in for both services; tests set server.app(seen) → (status, headers, body)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), SourceHandler)
    server.seen, server.lock, server.app = [], threading.Lock(), None
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_port}"
    settings.LITERATURE_EUROPEPMC_BASE_URL = f"{base}/europepmc/webservices/rest"
    settings.LITERATURE_EUTILS_BASE_URL = f"{base}/entrez/eutils"
    settings.LITERATURE_EUROPEPMC_RATE = 1000
    settings.LITERATURE_NCBI_RATE = settings.LITERATURE_NCBI_RATE_WITH_KEY = 1000
    settings.LITERATURE_BACKOFF_BASE_SECONDS = 0.05
    settings.LITERATURE_SEARCH_CACHE_SECONDS = 3600
    settings.LITERATURE_REPLAY_ONLY = False
    settings.LITERATURE_NCBI_TOOL = "open-hypothesis-tests"
    settings.LITERATURE_NCBI_EMAIL = "literature@example.org"
    monkeypatch.delenv("NCBI_API_KEY", raising=False)
    yield server
    server.shutdown()
    server.server_close()


# ------------------------------------------------------------------------------------------- answer shapes


def epmc_result(number: int) -> dict:
    """One `resultList.result[]` of resultType=core, as Europe PMC documents it."""
    if number % 5 == 0:  # a preprint: no PMID, no journal
        return {
            "id": f"PPR{700000 + number}",
            "source": "PPR",
            "doi": f"10.1101/2023.01.{number:02d}.000001",
            "title": f"Preprint {number} on <i>senescence</i> &amp; frailty",
            "authorList": {"author": [{"fullName": "Ødegård K", "firstName": "Kari", "lastName": "Ødegård"}]},
            "abstractText": "An unstructured abstract.",
            "pubYear": "2023",
            "firstPublicationDate": "2023-02-01",
        }
    pmid = str(30000000 + number)
    return {
        "id": pmid,
        "source": "MED",
        "pmid": pmid,
        "pmcid": f"PMC{900000 + number}",
        "doi": f"10.1000/epmc.{number}",
        "title": f"Article {number}: clonal haematopoiesis and frailty.",
        "authorString": "Xu M, Kirkland JL.",
        "authorList": {
            "author": [
                {"fullName": "Xu M", "firstName": "Ming", "lastName": "Xu", "initials": "M"},
                {"fullName": "Kirkland JL", "firstName": "James L", "lastName": "Kirkland", "initials": "JL"},
            ]
        },
        "journalInfo": {
            "issue": "8",
            "volume": "24",
            "dateOfPublication": "2018 Aug",
            "yearOfPublication": 2018,
            "printPublicationDate": "2018-08-01",
            "journal": {"title": "Nature medicine", "isoabbreviation": "Nat Med", "medlineAbbreviation": "Nat Med"},
        },
        "pubYear": "2018",
        "abstractText": "<h4>Background</h4>Frailty rises with age.<h4>Methods</h4>We studied 40 mice.",
        "firstPublicationDate": "2018-07-09",
    }


def epmc_page(numbers, next_cursor: str | None, cursor: str, query: str) -> dict:
    page = {
        "version": "6.9",
        "hitCount": 5,
        "request": {"queryString": query, "resultType": "core", "cursorMark": cursor, "pageSize": 2},
        "resultList": {"result": [epmc_result(number) for number in numbers]},
    }
    if next_cursor is not None:
        page["nextCursorMark"] = next_cursor
    return page


def europepmc_app(pages: dict):
    """pages: cursorMark → (result numbers, nextCursorMark or None)."""

    def app(seen: Seen):
        numbers, next_cursor = pages[seen.query["cursorMark"]]
        return (
            200,
            {"content-type": "application/json;charset=UTF-8"},
            epmc_page(numbers, next_cursor, seen.query["cursorMark"], seen.query["query"]),
        )

    return app


def efetch_xml(ids) -> str:
    articles = "".join(
        f"<PubmedArticle><MedlineCitation Status='MEDLINE' Owner='NLM'><PMID Version='1'>{pmid}</PMID>"
        f"<Article><Journal><JournalIssue><PubDate><Year>2015</Year><Month>Jun</Month></PubDate></JournalIssue>"
        f"<Title>Ageing research reviews</Title></Journal><ArticleTitle>Record {pmid}</ArticleTitle>"
        f"<Abstract><AbstractText Label='OBJECTIVE'>Study {pmid}.</AbstractText></Abstract></Article>"
        f"</MedlineCitation><PubmedData><ArticleIdList><ArticleId IdType='pubmed'>{pmid}</ArticleId></ArticleIdList>"
        f"</PubmedData></PubmedArticle>"
        for pmid in ids
    )
    return (
        '<?xml version="1.0" ?>\n<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2025//EN" '
        f'"https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_250101.dtd">\n<PubmedArticleSet>{articles}</PubmedArticleSet>'
    )


def eutils_app(all_ids: list[str]):
    def app(seen: Seen):
        parameters = seen.parameters
        if seen.path.endswith("/esearch.fcgi"):
            start, size = int(parameters.get("retstart", 0)), int(parameters.get("retmax", 20))
            result = {
                "count": str(len(all_ids)),
                "retmax": str(size),
                "retstart": str(start),
                "idlist": all_ids[start : start + size],
                "translationset": [],
                "querytranslation": parameters["term"],
            }
            return (
                200,
                {"content-type": "application/json; charset=UTF-8"},
                {"header": {"type": "esearch", "version": "0.3"}, "esearchresult": result},
            )
        return 200, {"content-type": "text/xml; charset=UTF-8"}, efetch_xml(parameters["id"].split(","))

    return app


def requests_to(server, suffix: str) -> list[Seen]:
    return [seen for seen in server.seen if seen.path.endswith(suffix)]


def gaps(seen: list[Seen]) -> list[float]:
    return [later.at - earlier.at for earlier, later in zip(seen, seen[1:], strict=False)]


def assert_spaced(seen: list[Seen], interval: float) -> None:
    """Turns are booked exactly `interval` apart, but a busy machine may delay one send until it arrives just before
    the next: so no three requests arrive within one interval, and all of them take at least one interval fewer than
    their number (without the limit they would all arrive at once)."""
    arrivals = sorted(request.at for request in seen)
    assert all(later - earlier >= interval * 0.95 for earlier, later in zip(arrivals, arrivals[2:], strict=False))
    assert arrivals[-1] - arrivals[0] >= (len(arrivals) - 2) * interval * 0.95


# ------------------------------------------------------------------------------------------------ Europe PMC


@pytest.mark.django_db
def test_europepmc_pages_through_cursors_until_the_cursor_repeats(source_server):
    source_server.app = europepmc_app({"*": ([1, 2], "AoE1"), "AoE1": ([3, 4], "AoE2"), "AoE2": ([5], "AoE2")})

    summary = references_fetch(source="europepmc", query="frailty", start=date(2010, 1, 1), end=date(2019, 12, 31))

    assert [seen.query["cursorMark"] for seen in source_server.seen] == ["*", "AoE1", "AoE2"]
    first = source_server.seen[0].query
    assert first["query"] == "(frailty) AND FIRST_PDATE:[2010-01-01 TO 2019-12-31]"
    assert (first["resultType"], first["format"], first["pageSize"]) == ("core", "json", "1000")
    assert (summary.records, summary.created) == (5, 5)
    article = Reference.objects.get(source="europepmc", source_id="MED:30000001")
    assert article.pmid == "30000001" and article.doi == "10.1000/epmc.1"
    assert article.abstract == "Background: Frailty rises with age. Methods: We studied 40 mice."
    assert article.authors == ["Xu, Ming", "Kirkland, James L"]
    assert article.journal == "Nature medicine"
    assert (article.published, article.published_precision) == (date(2018, 7, 9), "day")
    preprint = Reference.objects.get(source_id="PPR:PPR700005")
    assert preprint.title == "Preprint 5 on senescence & frailty"
    assert preprint.authors == ["Ødegård, Kari"]
    assert ReferenceImport.objects.get().origin == "europepmc"


@pytest.mark.django_db
def test_europepmc_stops_when_the_next_cursor_is_absent(source_server):
    source_server.app = europepmc_app({"*": ([1, 2], "AoE1"), "AoE1": ([3], None)})
    pages = list(europepmc.search("frailty"))
    assert [len(page) for page in pages] == [2, 1]
    assert source_server.seen[0].query["query"] == "frailty"


@pytest.mark.django_db
def test_europepmc_limit_shrinks_the_page_and_stops_early(source_server):
    source_server.app = europepmc_app({"*": ([1, 2, 3], "AoE1"), "AoE1": ([4], None)})
    pages = list(europepmc.search("frailty", limit=2))
    assert sum(len(page) for page in pages) == 2
    assert len(source_server.seen) == 1 and source_server.seen[0].query["pageSize"] == "2"


@pytest.mark.django_db
def test_429_with_retry_after_is_waited_out_then_succeeds(source_server):
    answers = iter([(429, {"retry-after": "1", "content-type": "text/plain"}, "Too Many Requests")])
    normal = europepmc_app({"*": ([1], None)})
    source_server.app = lambda seen: next(answers, None) or normal(seen)

    pages = list(europepmc.search("frailty"))

    assert len(pages[0]) == 1
    assert len(source_server.seen) == 2
    assert gaps(source_server.seen)[0] >= 0.95  # measured where the requests arrive


@pytest.mark.django_db
def test_5xx_is_retried_with_backoff_and_gives_up_after_the_attempts(source_server, settings):
    settings.LITERATURE_MAX_ATTEMPTS = 3
    source_server.app = lambda seen: (503, {}, "Service Unavailable")

    with pytest.raises(SourceUnavailable, match="HTTP 503.*gave up after 3 attempts"):
        list(europepmc.search("frailty"))

    assert len(source_server.seen) == 3
    assert SourceResponse.objects.count() == 0  # failures are never cached


@pytest.mark.django_db
def test_a_retry_after_beyond_the_longest_wait_is_reported_at_once(source_server, settings):
    settings.LITERATURE_BACKOFF_MAX_SECONDS = 5
    source_server.app = lambda seen: (429, {"retry-after": "3600"}, "slow down")
    with pytest.raises(SourceUnavailable, match="asks to wait 3600 s"):
        list(europepmc.search("frailty"))
    assert len(source_server.seen) == 1


@pytest.mark.django_db
def test_a_client_error_is_not_retried(source_server):
    source_server.app = lambda seen: (400, {}, {"errCode": 400, "errMsg": "Invalid query syntax"})
    with pytest.raises(SourceUnavailable, match="refused the request: HTTP 400"):
        list(europepmc.search("frailty AND ("))
    assert len(source_server.seen) == 1


@pytest.mark.django_db
def test_a_cached_search_makes_no_second_request(source_server):
    source_server.app = europepmc_app({"*": ([1, 2], "AoE1"), "AoE1": ([3], None)})

    first = references_fetch(source="europepmc", query="frailty")
    requests_after_first = len(source_server.seen)
    second = references_fetch(source="europepmc", query="frailty")

    assert requests_after_first == 2
    assert len(source_server.seen) == 2  # counted by the server
    assert (first.created, second.created, second.unchanged) == (3, 0, 3)
    entry = SourceResponse.objects.get(parameters__cursorMark="*")
    assert (entry.source, entry.endpoint, entry.expires_at is not None) == ("europepmc", "search", True)


@pytest.mark.django_db
def test_an_expired_search_is_asked_again(source_server, settings):
    settings.LITERATURE_SEARCH_CACHE_SECONDS = 0
    source_server.app = europepmc_app({"*": ([1], None)})
    list(europepmc.search("frailty"))
    list(europepmc.search("frailty"))
    assert len(source_server.seen) == 2


@pytest.mark.django_db
def test_replay_only_mode_fails_clearly_on_a_miss(source_server, settings):
    settings.LITERATURE_REPLAY_ONLY = True
    source_server.app = europepmc_app({"*": ([1], None)})

    with pytest.raises(ReplayMiss) as raised:
        list(europepmc.search("frailty"))

    assert source_server.seen == []
    miss = raised.value
    assert (miss.source, miss.endpoint, miss.parameters["cursorMark"]) == ("europepmc", "search", "*")
    assert len(miss.key) == 64 and miss.key in str(miss)


@pytest.mark.django_db
def test_replay_only_mode_serves_recorded_answers_even_expired(source_server, settings):
    settings.LITERATURE_SEARCH_CACHE_SECONDS = 0
    source_server.app = europepmc_app({"*": ([1, 2], "AoE1"), "AoE1": ([3], None)})
    list(europepmc.search("frailty"))
    recorded = len(source_server.seen)

    settings.LITERATURE_REPLAY_ONLY = True
    replayed = list(europepmc.search("frailty"))

    assert sum(len(page) for page in replayed) == 3
    assert len(source_server.seen) == recorded


# ----------------------------------------------------------------------------------------------- E-utilities


@pytest.mark.django_db
def test_eutils_searches_by_date_then_fetches_in_batches_of_200(source_server, monkeypatch):
    monkeypatch.setenv("NCBI_API_KEY", NCBI_KEY)
    ids = [str(20000000 + n) for n in range(450)]
    source_server.app = eutils_app(ids)

    summary = references_fetch(
        source="pubmed", query="rapamycin lifespan", start=date(2010, 1, 1), end=date(2019, 12, 31)
    )

    search = requests_to(source_server, "/esearch.fcgi")[0].parameters
    assert {key: search[key] for key in ("db", "term", "retmode", "datetype", "mindate", "maxdate")} == {
        "db": "pubmed",
        "term": "rapamycin lifespan",
        "retmode": "json",
        "datetype": "pdat",
        "mindate": "2010/01/01",
        "maxdate": "2019/12/31",
    }
    fetches = requests_to(source_server, "/efetch.fcgi")
    assert [len(seen.form["id"].split(",")) for seen in fetches] == [200, 200, 50]
    assert all(seen.form["retmode"] == "xml" and seen.form["db"] == "pubmed" for seen in fetches)
    assert all(seen.parameters["tool"] == "open-hypothesis-tests" for seen in source_server.seen)
    assert all(seen.parameters["email"] == "literature@example.org" for seen in source_server.seen)
    assert all(seen.form["api_key"] == NCBI_KEY for seen in source_server.seen)
    assert (summary.records, summary.created) == (450, 450)
    reference = Reference.objects.get(source="pubmed", source_id="20000007")
    assert reference.abstract == "OBJECTIVE: Study 20000007."
    assert (reference.published, reference.published_precision) == (date(2015, 6, 1), "month")
    assert ReferenceImport.objects.get().origin == "pubmed"


@pytest.mark.django_db
def test_the_api_key_is_never_in_a_url_the_cache_or_the_logs(source_server, monkeypatch, caplog):
    monkeypatch.setenv("NCBI_API_KEY", NCBI_KEY)
    source_server.app = eutils_app(["101", "102"])
    caplog.set_level("DEBUG")

    references_fetch(source="pubmed", query="metformin")

    assert all(NCBI_KEY not in seen.target for seen in source_server.seen)
    for entry in SourceResponse.objects.all():
        assert not {"api_key", "tool", "email"} & set(entry.parameters)
        assert NCBI_KEY not in json.dumps(entry.parameters)
    assert NCBI_KEY not in caplog.text


@pytest.mark.django_db
def test_an_error_echoing_the_api_key_is_redacted(source_server, monkeypatch):
    monkeypatch.setenv("NCBI_API_KEY", NCBI_KEY)
    source_server.app = lambda seen: (400, {}, {"error": "API key invalid", "api-key": NCBI_KEY, "type": "invalid"})
    with pytest.raises(SourceUnavailable) as raised:
        eutils.search_ids("metformin")
    assert NCBI_KEY not in str(raised.value) and "[redacted]" in str(raised.value)


@pytest.mark.django_db
def test_fetches_by_id_never_expire_while_searches_do(source_server, settings):
    settings.LITERATURE_SEARCH_CACHE_SECONDS = 0
    source_server.app = eutils_app(["101", "102", "103"])

    references_fetch(source="pubmed", query="metformin")
    references_fetch(source="pubmed", query="metformin")

    assert len(requests_to(source_server, "/esearch.fcgi")) == 2
    assert len(requests_to(source_server, "/efetch.fcgi")) == 1
    fetched = SourceResponse.objects.get(endpoint="efetch")
    assert fetched.expires_at is None and fetched.parameters["id"] == "101,102,103"


@pytest.mark.django_db
def test_a_search_broader_than_esearch_lists_is_refused_with_advice(source_server):
    source_server.app = eutils_app([str(n) for n in range(10001)])
    with pytest.raises(eutils.QueryTooBroad, match="narrow the date range or set a limit"):
        eutils.search_ids("ageing")


@pytest.mark.django_db
def test_esearch_errors_are_reported(source_server):
    source_server.app = lambda seen: (200, {}, {"esearchresult": {"ERROR": "Invalid query"}})
    with pytest.raises(SourceUnavailable, match="Invalid query"):
        eutils.search_ids("(((")


@pytest.mark.django_db
def test_ncbi_requests_are_spaced_to_the_rate(source_server, settings):
    settings.LITERATURE_NCBI_RATE = 5  # one request every 0.2 s
    source_server.app = eutils_app([str(n) for n in range(1, 801)])

    list(eutils.fetch([str(n) for n in range(1, 801)]))

    assert len(source_server.seen) == 4
    assert_spaced(source_server.seen, 0.2)


def test_the_key_raises_the_ncbi_rate(settings, monkeypatch):
    settings.LITERATURE_NCBI_RATE, settings.LITERATURE_NCBI_RATE_WITH_KEY = 3, 10
    monkeypatch.delenv("NCBI_API_KEY", raising=False)
    assert eutils.rate_limit().per_second == 3
    monkeypatch.setenv("NCBI_API_KEY", NCBI_KEY)
    assert eutils.rate_limit().per_second == 10


@pytest.mark.django_db(transaction=True)
def test_the_rate_holds_across_workers(source_server, settings):
    """Three workers (threads with their own database connections) share one limit."""
    if connection.vendor != "postgresql":
        # The embedded test database lives in shared-cache memory, which answers "table is locked" at once instead
        # of waiting; the real SQLite file waits (busy timeout). CI runs this on PostgreSQL.
        skip_or_fail("needs PostgreSQL: the in-memory SQLite test database does not wait for locks")
    settings.LITERATURE_NCBI_RATE = 10  # one request every 0.1 s
    source_server.app = eutils_app([])
    errors = []

    def worker(number: int) -> None:
        try:
            for batch in range(3):
                list(eutils.fetch([f"{number}{batch}"]))
        except Exception as exc:  # reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(1, 4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    arrivals = sorted(source_server.seen, key=lambda seen: seen.at)
    assert len(arrivals) == 9
    assert_spaced(arrivals, 0.1)


# ---------------------------------------------------------------------------------------------------- command


@pytest.mark.django_db
def test_fetch_command_upserts_and_reports(source_server):
    source_server.app = europepmc_app({"*": ([1, 2], None)})
    out = io.StringIO()
    call_command(
        "fetch_references", "--source", "europepmc", "--query", "frailty", "--from", "2015-01-01",
        stdout=out, stderr=io.StringIO(),
    )  # fmt: skip
    assert "2 references from europepmc" in out.getvalue() and "2 new" in out.getvalue()
    assert source_server.seen[0].query["query"] == "(frailty) AND FIRST_PDATE:[2015-01-01 TO 9999-12-31]"
    assert Reference.objects.filter(source="europepmc").count() == 2

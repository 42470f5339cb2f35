"""Hostile input: bodies too large to read, JSON nested too deep, spreadsheet bombs, oversized fields and control
characters, formula cells. Each is refused quickly with the documented error, and nothing is written."""

import io
import json
import re
import socket
import time
import zipfile
from urllib.parse import urlsplit

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import include, path
from openpyxl import Workbook
from rest_framework.test import APIClient
from rest_framework.views import APIView

from reviewapp.models import Proposal, ResearchTask
from reviewapp.services.accounts import token_create
from reviewapp.services.imports import cohort_import_file
from reviewapp.services.tabular_files import ImportInvalid
from tests import factories

RUNS = "/api/v1/open-hypothesis/runs"
SCREENINGS = "/api/v1/open-hypothesis/screenings"
QUESTION = "How does remodelling of the bone-marrow niche affect mutant clones?"


class _CrashApi(APIView):
    """An API view that fails as a bug would: the error must still answer in the documented format."""

    permission_classes = []

    def get(self, request):
        raise RuntimeError("a bug in a view")


urlpatterns = [path("api/v1/test-crash", _CrashApi.as_view()), path("", include("reviewapp.urls"))]


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def assert_json_error(response, status: int, code: str):
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["error"] == code and body["detail"], body
    return body


# Body size ---------------------------------------------------------------------------------------------------------


def test_an_oversized_body_is_refused_from_its_length_before_it_is_read(live_server):
    """The client announces 300 MB and sends one byte: the answer (413) comes without the server waiting for the
    rest, which it would need 300 MB to hold."""
    address = urlsplit(live_server.url)
    with socket.create_connection((address.hostname, address.port), timeout=20) as connection:
        connection.sendall(
            f"POST {RUNS} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            f"Content-Length: {300 * 1024 * 1024}\r\n\r\n{{".encode()
        )
        started = time.monotonic()
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            chunk = connection.recv(65536)
            if not chunk:
                break
            answer += chunk
    assert time.monotonic() - started < 15
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413"), head
    assert json.loads(body)["error"] == "body_too_large"


@pytest.mark.parametrize("address", ["/literature/", "/api/v1/literature/import"])
def test_a_chunked_body_without_a_length_is_never_read(live_server, address):
    """A body sent in chunks, without Content-Length, is read as empty (Django reads no more than the length says):
    the answer comes while the client is still sending, with a made-up CSRF cookie too."""
    url = urlsplit(live_server.url)
    with socket.create_connection((url.hostname, url.port), timeout=20) as connection:
        connection.sendall(
            f"POST {address} HTTP/1.1\r\nHost: localhost\r\nCookie: csrftoken={'x' * 32}\r\n"
            "Content-Type: multipart/form-data; boundary=b\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
        )
        connection.sendall(b"10000\r\n" + b"x" * 0x10000 + b"\r\n")  # one chunk of 64 KB, and never the last
        started = time.monotonic()
        answer = b""
        while b"\r\n" not in answer:
            chunk = connection.recv(65536)
            if not chunk:
                break
            answer += chunk
    assert time.monotonic() - started < 15
    assert answer.split(b" ")[1] in (b"302", b"401", b"403"), answer[:200]


def test_each_address_has_its_own_body_limit(client, coordinator, settings, roster):
    settings.OH_MAX_BODY_BYTES = 1000
    settings.OH_MAX_IMPORT_BYTES = 100_000
    body = json.dumps({"question": QUESTION, "background": "x" * 2000})
    response = client.post(RUNS, body, content_type="application/json", REMOTE_ADDR="198.51.100.7")
    assert_json_error(response, 413, "body_too_large")

    cohort = factories.make_cohort()
    api = APIClient()
    api.force_login(coordinator)  # the session, which the limit reads before the view runs
    content = json.dumps({"tasks": [{"key": "T1", "question": "Q?", "background": "x" * 5000}]}).encode()
    response = api.post(
        f"/api/v1/cohorts/{cohort.pk}/import", {"file": SimpleUploadedFile("a.json", content)}, format="multipart"
    )
    assert response.status_code == 200, response.json()

    response = api.post(
        f"/api/v1/cohorts/{cohort.pk}/import",
        {"file": SimpleUploadedFile("a.json", b" " * 200_000)},
        format="multipart",
    )
    assert_json_error(response, 413, "body_too_large")


def test_an_oversized_page_post_is_refused_too(client, coordinator, settings):
    settings.OH_MAX_BODY_BYTES = 1000
    client.force_login(coordinator)
    response = client.post("/people/bulk/", {"csv_text": "x" * 5000})
    assert response.status_code == 413


@pytest.fixture
def small_and_large_limits(settings):
    settings.OH_MAX_BODY_BYTES = 1000
    settings.OH_MAX_REFERENCE_IMPORT_BYTES = 100_000
    return b"TY  - JOUR\nTI  - " + b"x" * 5000 + b"\nER  - \n"


def upload(client, address: str, content: bytes, **headers):
    # A page takes a form; the API takes files as multipart and every other body as JSON.
    encoding = {"format": "multipart"} if isinstance(client, APIClient) else {}
    return client.post(address, {"file": SimpleUploadedFile("refs.ris", content)}, **encoding, **headers)


def test_an_anonymous_post_to_an_import_page_gets_the_small_limit_before_csrf_reads_it(db, small_and_large_limits):
    anonymous = Client(enforce_csrf_checks=True)
    anonymous.cookies["csrftoken"] = "x" * 32  # a made-up CSRF cookie: the body would be read to compare it
    response = upload(anonymous, "/literature/", small_and_large_limits)
    assert response.status_code == 413


def test_a_reviewer_gets_the_small_limit_on_an_import_page_and_its_api(reviewer, small_and_large_limits):
    browser = Client()
    browser.force_login(reviewer)
    assert upload(browser, "/literature/", small_and_large_limits).status_code == 413
    _, key = token_create(user=reviewer)
    response = upload(
        APIClient(), "/api/v1/literature/import", small_and_large_limits, HTTP_AUTHORIZATION=f"Token {key}"
    )
    assert_json_error(response, 413, "body_too_large")


def test_an_analyst_may_not_import_and_gets_the_small_limit(analyst, small_and_large_limits):
    _, key = token_create(user=analyst)
    response = upload(
        APIClient(), "/api/v1/literature/import", small_and_large_limits, HTTP_AUTHORIZATION=f"Token {key}"
    )
    assert_json_error(response, 413, "body_too_large")


def test_an_unknown_token_gets_the_small_limit(db, small_and_large_limits):
    response = upload(APIClient(), "/api/v1/literature/import", small_and_large_limits, HTTP_AUTHORIZATION="Token oh_x")
    assert_json_error(response, 413, "body_too_large")


def test_a_coordinator_gets_the_import_limit_by_session_and_by_token(coordinator, small_and_large_limits):
    browser = Client()
    browser.force_login(coordinator)
    assert upload(browser, "/literature/", small_and_large_limits).status_code == 200
    _, key = token_create(user=coordinator)
    response = upload(
        APIClient(), "/api/v1/literature/import", small_and_large_limits, HTTP_AUTHORIZATION=f"Token {key}"
    )
    assert response.status_code == 200, response.content[:300]
    too_large = small_and_large_limits + b"x" * 100_000
    response = upload(APIClient(), "/api/v1/literature/import", too_large, HTTP_AUTHORIZATION=f"Token {key}")
    assert_json_error(response, 413, "body_too_large")


# Deep nesting ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("address", [RUNS, SCREENINGS])
def test_deeply_nested_json_is_a_400_on_the_public_endpoints(client, roster, address):
    body = '{"question": ' + nested(10_000) + "}"
    response = client.post(address, body, content_type="application/json", REMOTE_ADDR="198.51.100.7")
    body = assert_json_error(response, 400, "invalid_body")
    assert "nested more than" in body["detail"]


def test_deeply_nested_json_in_a_cohort_import_is_a_problem_of_the_file(coordinator):
    cohort = factories.make_cohort()
    api = APIClient()
    api.force_authenticate(coordinator)
    content = ('{"tasks": ' + nested(10_000) + "}").encode()
    response = api.post(
        f"/api/v1/cohorts/{cohort.pk}/import", {"file": SimpleUploadedFile("a.json", content)}, format="multipart"
    )
    body = assert_json_error(response, 400, "invalid_import")
    assert "nested more than" in body["problems"][0]["message"]


def test_nesting_within_the_limit_and_brackets_in_strings_are_fine(client, roster, settings):
    settings.OH_MAX_JSON_DEPTH = 3
    body = json.dumps({"question": QUESTION + " [[[[[[{{{{"})
    response = client.post(RUNS, body, content_type="application/json", REMOTE_ADDR="198.51.100.7")
    assert response.status_code == 202, response.content


HOSTILE_BODIES = {
    "an unterminated string of escaped quotes": lambda size: '"' + '\\"' * size,
    "quotes and backslashes": lambda size: '"\\' * size,
    "unterminated strings between brackets": lambda size: '["\\"[' * size,
    "nesting far too deep": lambda size: "[" * size,
    "valid JSON whose strings hold brackets and escapes": lambda size: json.dumps(
        {"question": QUESTION, "background": '[{"\\' * (size // 8)}
    ),
}


@pytest.mark.parametrize("shape", list(HOSTILE_BODIES))
def test_reading_a_hostile_body_takes_time_in_proportion_to_its_size(client, roster, shape):
    """Checking the depth is one pass over the body: a 1 MB body of quotes, backslashes, unterminated strings or
    brackets is answered within a second or two, and takes about 16 times as long as a 64 KB one (a check that goes back
    over the text would take hundreds of times as long, and hours at 1 MB). Timed in this process's CPU time, which
    other work on a busy machine does not inflate."""

    def answer_seconds(size: int) -> float:
        body = HOSTILE_BODIES[shape](size)[:size]
        started = time.process_time()
        response = client.post(RUNS, body, content_type="application/json", REMOTE_ADDR="198.51.100.7")
        elapsed = time.process_time() - started
        assert response.status_code == 400, response.content[:300]
        assert response.json()["error"] in ("invalid_body", "background_too_long")
        return elapsed

    small = min(answer_seconds(64 * 1024) for _ in range(3))
    assert small < 2
    large = min(answer_seconds(1024 * 1024 - 64) for _ in range(3))
    assert large < 2
    assert large < 64 * small, (small, large)


def test_a_deeply_nested_literature_column_mapping_is_refused(coordinator):
    api = APIClient()
    api.force_authenticate(coordinator)
    upload = SimpleUploadedFile("refs.csv", b"title\nA title\n")
    response = api.post(
        "/api/v1/literature/import",
        {"file": upload, "format": "csv", "mapping": '{"a": ' + nested(10_000) + "}"},
        format="multipart",
    )
    assert response.status_code == 400, response.content[:300]
    assert "nested more than" in json.dumps(response.json())


# Every API error in the JSON format ----------------------------------------------------------------------------------


@pytest.mark.urls(__name__)
def test_a_server_error_in_the_api_answers_the_json_format(client, db):
    client.raise_request_exception = False
    response = client.get("/api/v1/test-crash")
    body = assert_json_error(response, 500, "server_error")
    assert "bug" not in body["detail"]  # what went wrong is for the log, not the client


def test_an_unknown_api_address_answers_the_json_format(client, db):
    assert_json_error(client.get("/api/v1/no-such-thing"), 404, "not_found")


def test_a_csrf_refusal_in_the_api_answers_the_json_format(coordinator):
    csrf_client = APIClient(enforce_csrf_checks=True)
    csrf_client.force_login(coordinator)
    response = csrf_client.post("/api/v1/cohorts", {"name": "x"}, format="json")
    assert_json_error(response, 403, "forbidden")


# Spreadsheet bombs ------------------------------------------------------------------------------------------------


# A sheet's dimension element, as openpyxl writes it with or without lxml installed.
DIMENSION = re.compile(rb'<dimension ref="[^"]*"\s*/>')


def workbook_bytes(rows: list[list]) -> bytes:
    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "tasks"
    for row in rows:
        sheet.append(row)
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def rewrite_sheet(content: bytes, rewrite) -> bytes:
    """The workbook with its first sheet's XML passed through rewrite(xml bytes)."""
    source = zipfile.ZipFile(io.BytesIO(content))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
        for member in source.infolist():
            data = source.read(member.filename)
            if member.filename == "xl/worksheets/sheet1.xml":
                data = rewrite(data)
            target.writestr(member.filename, data)
    return buffer.getvalue()


def refused_quickly(content: bytes, filename: str = "bomb.xlsx") -> list[dict]:
    cohort = factories.make_cohort()
    # The work it takes, as CPU time of this process: what a busy neighbour does to the wall clock does not count.
    started = time.process_time()
    with pytest.raises(ImportInvalid) as refused:
        cohort_import_file(cohort=cohort, filename=filename, content=content, user=None)
    assert time.process_time() - started < 1, "refused, but not within a second of work"
    assert ResearchTask.objects.count() == 0
    return refused.value.rows


def test_a_workbook_that_expands_enormously_is_refused_from_its_zip_directory(db):
    padding = b" " * (120 * 1024 * 1024)  # whitespace between elements: valid XML, compresses about 1000 times
    content = rewrite_sheet(
        workbook_bytes([["key", "question"], ["T1", "Q?"]]), lambda xml: xml.replace(b"<sheetData>", padding, 1)
    )
    assert len(content) < 1024 * 1024
    (row,) = refused_quickly(content)
    assert "expands" in row["message"]


def test_a_workbook_expanding_past_the_total_limit_is_refused(db, settings):
    settings.OH_XLSX_MAX_UNCOMPRESSED_BYTES = 50_000
    content = workbook_bytes([["key", "question"]] + [[f"T{n}", f"Question {n} " * 5] for n in range(1000)])
    (row,) = refused_quickly(content)
    assert "expands to" in row["message"] and "split the file" in row["message"]


@pytest.mark.parametrize("dimension", ["A1:XFD8000", "A1:XFD1048576", "A1:B1048576"])
def test_a_sheet_declaring_a_huge_dimension_is_refused_at_once(db, dimension):
    content = rewrite_sheet(
        workbook_bytes([["key", "question"], ["T1", "Q?"]]),
        lambda xml: DIMENSION.sub(f'<dimension ref="{dimension}" />'.encode(), xml, count=1),
    )
    (row,) = refused_quickly(content)
    assert "declares" in row["message"]


def without_dimension(content: bytes) -> bytes:
    """The workbook with its first sheet's <dimension> element removed (some programs write none)."""
    return rewrite_sheet(content, lambda xml: DIMENSION.sub(b"", xml, count=1))


def test_rows_past_the_limit_are_refused_in_every_format(db, settings):
    settings.OH_IMPORT_MAX_ROWS = 50
    rows = [["key", "question"]] + [[f"T{n}", "Q?"] for n in range(60)]
    csv_text = "\n".join(",".join(row) for row in rows).encode()
    workbook = workbook_bytes(rows)
    for filename, content in (("t.csv", csv_text), ("t.xlsx", workbook), ("t.xlsx", without_dimension(workbook))):
        (row,) = refused_quickly(content, filename)
        assert "at most 50 rows" in row["message"], filename


def test_a_value_past_the_column_limit_is_refused(db, settings):
    settings.OH_IMPORT_MAX_COLUMNS = 10
    content = ("key,question" + "," * 20 + "\nT1,Q?" + "," * 19 + "stray\n").encode()
    (row,) = refused_quickly(content, "t.csv")
    assert "at most 10 columns" in row["message"]

    workbook = workbook_bytes([["key", "question"], ["T1", "Q?"] + [None] * 19 + ["stray"]])
    (row,) = refused_quickly(workbook, "t.xlsx")
    assert "10 columns" in row["message"]
    (row,) = refused_quickly(without_dimension(workbook), "t.xlsx")
    assert "at most 10 columns" in row["message"] and "Row 2" in row["message"]


@pytest.mark.parametrize("cell", ["SZ2", "A1048576", "B150000", "XFD3"])
@pytest.mark.parametrize("declared", [None, "A1:B2"])
def test_a_sheet_without_a_true_dimension_loses_no_cell_past_the_limits(db, cell, declared):
    """A sheet that declares no dimension, or a smaller one than it holds, is read as it is: a value far to the
    right or far down is refused, not dropped unseen."""

    def add_cell(xml: bytes) -> bytes:
        row = int(re.sub(r"[A-Z]", "", cell))
        if row == 2:  # into the existing second row
            return xml.replace(
                b"</row></sheetData>",
                f'<c r="{cell}" t="inlineStr"><is><t>lost?</t></is></c></row></sheetData>'.encode(),
            )
        extra = f'<row r="{row}"><c r="{cell}" t="inlineStr"><is><t>lost?</t></is></c></row>'.encode()
        return xml.replace(b"</sheetData>", extra + b"</sheetData>")

    workbook = workbook_bytes([["key", "question"], ["T1", "Q?"]])
    content = rewrite_sheet(workbook if declared else without_dimension(workbook), add_cell)
    sheet = zipfile.ZipFile(io.BytesIO(content)).read("xl/worksheets/sheet1.xml")
    assert bool(DIMENSION.search(sheet)) == bool(declared)
    (row,) = refused_quickly(content)
    assert "at most 100,000 rows" in row["message"] or "at most 200 columns" in row["message"], row


# Field sizes, control characters, formulas -----------------------------------------------------------------------


def test_a_statement_over_its_limit_is_refused_with_its_row_and_field(db):
    content = json.dumps(
        {
            "tasks": [{"key": "T1", "question": "Q?"}],
            "proposals": [{"id": "P1", "task": "T1", "statement": "Long. " * 1_000_000}],
        }
    ).encode()
    rows = refused_quickly(content, "big.json")
    assert [(row["table"], row["row"], row["field"]) for row in rows] == [("proposals", 1, "statement")]
    assert "at most 4000" in rows[0]["message"]
    assert Proposal.objects.count() == 0


@pytest.mark.parametrize("character", ["\x00", "\x07", "\x1b", "\x7f"])
def test_control_characters_are_refused_with_the_row_and_field_on_every_database(db, character):
    content = f"key,question\nT1,Fine question?\nT2,Bad{character} question?\n".encode()
    (row,) = refused_quickly(content, "tasks.csv")
    assert (row["table"], row["row"], row["field"]) == ("tasks", 3, "question")
    assert f"U+{ord(character):04X}" in row["message"]


def test_tabs_and_line_breaks_are_text(db):
    cohort = factories.make_cohort()
    content = b'key,question\nT1,"Two lines,\nand\ta tab?"\n'
    cohort_import_file(cohort=cohort, filename="tasks.csv", content=content, user=None)
    assert ResearchTask.objects.get().question == "Two lines,\nand\ta tab?"


def test_a_formula_cell_is_reported_as_a_formula(db):
    content = workbook_bytes([["key", "question"], ["T1", '=CONCAT("Does ", "it?")']])
    (row,) = refused_quickly(content)
    assert (row["row"], row["field"]) == (2, "question")
    assert "formula" in row["message"] and "required" not in row["message"]


def test_a_reference_with_a_nul_in_its_title_is_skipped_with_its_record_and_field_named(db):
    from literature.models import Reference
    from literature.services import references_import

    content = b"title,doi\nFine title,10.1000/a\nBad\x00 title,10.1000/b\n"
    summary = references_import(file=io.BytesIO(content), format="csv")
    assert summary.created == 1 and [entry["record"] for entry in summary.skipped] == [3]
    assert "title" in summary.skipped[0]["reason"] and "U+0000" in summary.skipped[0]["reason"]
    assert list(Reference.objects.values_list("title", flat=True)) == ["Fine title"]


# Names in plots ----------------------------------------------------------------------------------------------------


def test_a_dollar_in_a_generator_or_judge_name_is_plotted_as_text(client, analyst):
    from tests.benchmark_support import JUDGES, hypothesis, make_set, scores, task

    judges = [(f"{name} $\\unknown$", company) for name, company in JUDGES]
    gen = "Gen $\\frac{a$"
    benchmark = make_set(
        {
            "tasks": [task("T1"), task("T2")],
            "hypotheses": [
                hypothesis("T1", "a1", gen, selected=True, forecasts={"m$1": True, "m2": True}),
                hypothesis("T1", "a2", gen, selected=False, forecasts={"m$1": True, "m2": False}),
                hypothesis("T2", "a3", gen, selected=True, forecasts={"m$1": True, "m2": True}),
                hypothesis("T2", "a4", gen, selected=False, forecasts={"m$1": False, "m2": True}),
            ],
            "scores": scores("T1", "a1", [0, 4, 4, 1], judges)
            + scores("T1", "a2", [0, 3, 0, 3], judges)
            + scores("T2", "a3", [5, 1, 2, 0], judges)
            + scores("T2", "a4", [1, 0, 0, 0], judges),
        }
    )
    client.force_login(analyst)
    for figure in ("enrichment", "judge-votes", "agreement"):
        for file_format in ("png", "svg"):
            response = client.get(f"/benchmarks/{benchmark.pk}/figures/{figure}.{file_format}")
            assert response.status_code == 200, (figure, file_format)

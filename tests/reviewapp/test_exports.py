import csv
import io
from datetime import UTC, datetime

import openpyxl
import pytest
from django.db import connection
from django.template.loader import render_to_string
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from reviewapp.models import Review
from reviewapp.panel.selectors import EXPORT_COLUMNS as AUTOMATED
from reviewapp.protocol import CANT_JUDGE, CRITERION_FIELDS
from reviewapp.selectors.exports import review_export_rows
from reviewapp.services.accounts import token_create
from tests import factories

AUTHOR = "canary-author-GPT-x9"
COMPANY = "canary-company-Acme-q7"
METHOD = "canary-method-evolve-z3"
RUN = "canary-run-2024-k5"
SUBMITTED_AT = datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC)

WIDE_HEADER = [
    "cohort",
    "proposal_id",
    "task_key",
    "reviewer",
    "position",
    "status",
    "started_at",
    "submitted_at",
    "seconds_spent",
    "overall",
    "recommendation",
    *CRITERION_FIELDS,
    "flaw_verdict",
    "flaw_checklist",
    "main_flaw",
    "comments",
    "deferred_reason",
]
UNBLINDING = ["author", "author_company", "method", "source_run"]
# The per-proposal columns rooms above add last (the AI panel's; empty for proposals it has not seen).


def submit_review(assignment, **answers) -> Review:
    fields = {
        "status": Review.Status.SUBMITTED,
        "overall": 4,
        "recommendation": "revise",
        **{field: "3" for field in CRITERION_FIELDS},
        "flaw_verdict": "fixable",
        "flaw_checklist": ["confounding", "power"],
        "main_flaw": "No control for diet.",
        "comments": "Clear plan.",
        "submitted_at": SUBMITTED_AT,
        "seconds_spent": 420,
    }
    fields.update(answers)
    return Review.objects.create(assignment=assignment, **fields)


def add_reviewed_proposals(cohort, reviewer, count: int):
    task = factories.make_task()
    for _ in range(count):
        proposal = factories.make_proposal(task, author=AUTHOR)
        cohort.proposals.add(proposal)
        submit_review(factories.make_assignment(cohort, reviewer, proposal))


@pytest.fixture
def cohort(reviewer, other_reviewer):
    task = factories.make_task(key="PMID-111")
    proposal = factories.make_proposal(
        task, external_id="H-001", author=AUTHOR, author_company=COMPANY, method=METHOD, source_run=RUN
    )
    cohort = factories.make_cohort([proposal], name="Ageing pilot")
    submit_review(
        factories.make_assignment(cohort, reviewer, proposal, position=2),
        importance=CANT_JUDGE,
        data_fit="1",
    )
    draft = factories.make_assignment(cohort, other_reviewer, proposal, position=1)
    Review.objects.create(assignment=draft, overall=2, recommendation="defer")
    return cohort


def read_csv(response) -> list[list[str]]:
    assert response.status_code == 200, response.content
    text = b"".join(response.streaming_content).decode()
    return list(csv.reader(io.StringIO(text)))


def read_xlsx(response) -> list[list]:
    assert response.status_code == 200, response.content
    workbook = openpyxl.load_workbook(io.BytesIO(b"".join(response.streaming_content)))
    sheet = workbook.active
    return [list(row) for row in sheet.iter_rows(values_only=True)]


def as_dicts(rows):
    header, *body = rows
    return [dict(zip(header, row, strict=True)) for row in body]


def test_coordinator_csv_has_one_row_per_review_with_criteria_as_columns(client, coordinator, cohort):
    client.force_login(coordinator)
    response = client.get(reverse("api-cohort-reviews-csv", args=[cohort.pk]))
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = read_csv(response)
    assert rows[0] == WIDE_HEADER + UNBLINDING + AUTOMATED
    submitted, draft = sorted(as_dicts(rows), key=lambda row: row["status"], reverse=True)
    assert submitted == {
        "cohort": "Ageing pilot",
        "proposal_id": "H-001",
        "task_key": "PMID-111",
        "reviewer": "rev-alice",
        "position": "2",
        "status": "submitted",
        "started_at": submitted["started_at"],
        "submitted_at": "2025-03-04T05:06:07Z",
        "seconds_spent": "420",
        "overall": "4",
        "recommendation": "revise",
        "importance": "cant_judge",
        "advance_over_known_work": "3",
        "plausible_evidence_bounded": "3",
        "data_fit": "1",
        "alternative_explanations": "3",
        "informative_results": "3",
        "flaw_verdict": "fixable",
        "flaw_checklist": "confounding;power",
        "main_flaw": "No control for diet.",
        "comments": "Clear plan.",
        "deferred_reason": "",
        "author": AUTHOR,
        "author_company": COMPANY,
        "method": METHOD,
        "source_run": RUN,
        **dict.fromkeys(AUTOMATED, ""),
    }
    assert datetime.strptime(submitted["started_at"], "%Y-%m-%dT%H:%M:%SZ")
    assert draft["status"] == "draft" and draft["reviewer"] == "rev-bob" and draft["overall"] == "2"
    assert draft["submitted_at"] == "" and all(draft[field] == "" for field in CRITERION_FIELDS)


def test_analyst_exports_carry_the_authorship_columns_as_coordinators_do(client, analyst, coordinator, cohort):
    """Analysts are not blinded to authorship (docs/protocol.md#blinding): the inspiration audit gives them each
    proposal's group, and their exports carry the same authorship columns as a coordinator's."""
    exports = {}
    for user in (analyst, coordinator):
        client.force_login(user)
        csv_response = client.get(reverse("api-cohort-reviews-csv", args=[cohort.pk]))
        long_response = client.get(reverse("api-cohort-reviews-csv", args=[cohort.pk]), {"layout": "long"})
        exports[user.pk] = (
            b"".join(csv_response.streaming_content).decode(),
            b"".join(long_response.streaming_content).decode(),
            read_xlsx(client.get(reverse("api-cohort-reviews-xlsx", args=[cohort.pk]))),
        )
    csv_text, long_text, xlsx_rows = exports[analyst.pk]
    assert exports[analyst.pk] == exports[coordinator.pk]
    header = next(csv.reader(io.StringIO(csv_text)))
    assert header[header.index("author") :][:4] == ["author", "author_company", "method", "source_run"]
    assert xlsx_rows[0] == header and len(xlsx_rows) == 3
    for value in (AUTHOR, COMPANY, METHOD, RUN):
        assert value in csv_text and value in long_text and value in repr(xlsx_rows)


def test_xlsx_holds_the_same_rows_with_a_frozen_bold_header(client, coordinator, cohort):
    client.force_login(coordinator)
    response = client.get(reverse("api-cohort-reviews-xlsx", args=[cohort.pk]))
    assert response["Content-Type"] == "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    assert 'filename="ageing-pilot-' in response["Content-Disposition"]
    content = b"".join(response.streaming_content)
    sheet = openpyxl.load_workbook(io.BytesIO(content)).active
    assert sheet.freeze_panes == "A2"
    assert sheet["A1"].font.bold
    assert sheet.column_dimensions["A"].width >= 10
    rows = [list(row) for row in sheet.iter_rows(values_only=True)]
    assert rows[0] == WIDE_HEADER + UNBLINDING + AUTOMATED
    submitted = next(row for row in as_dicts(rows) if row["status"] == "submitted")
    assert submitted["importance"] == "cant_judge"
    assert submitted["data_fit"] == 1 and submitted["overall"] == 4
    assert submitted["submitted_at"] == "2025-03-04T05:06:07Z"
    assert submitted["author"] == AUTHOR
    draft = next(row for row in as_dicts(rows) if row["status"] == "draft")
    assert draft["importance"] is None


def test_long_layout_has_one_row_per_review_and_criterion(client, coordinator, cohort):
    client.force_login(coordinator)
    rows = read_csv(client.get(reverse("api-cohort-reviews-csv", args=[cohort.pk]), {"layout": "long"}))
    assert rows[0] == [
        "cohort",
        "proposal_id",
        "task_key",
        "reviewer",
        "position",
        "status",
        "criterion",
        "value",
        *UNBLINDING,
        *AUTOMATED,
    ]
    body = as_dicts(rows)
    assert len(body) == 2 * len(CRITERION_FIELDS)
    alice = {row["criterion"]: row["value"] for row in body if row["reviewer"] == "rev-alice"}
    assert alice == {**{field: "3" for field in CRITERION_FIELDS}, "importance": "cant_judge", "data_fit": "1"}
    assert {row["author"] for row in body} == {AUTHOR}


def test_unknown_layout_is_a_clear_error(client, coordinator, cohort):
    client.force_login(coordinator)
    response = client.get(reverse("api-cohort-reviews-csv", args=[cohort.pk]), {"layout": "tall"})
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_layout"


def test_text_that_a_spreadsheet_would_run_as_a_formula_is_escaped(client, coordinator, reviewer):
    proposal = factories.make_proposal(external_id="=cmd|'/C calc'!A0", author="@SUM(1)")
    cohort = factories.make_cohort([proposal], name="+Escapes")
    assignment = factories.make_assignment(cohort, reviewer, proposal)
    assignment.deferred_reason = " =1+1"
    assignment.save()
    submit_review(assignment, comments='=HYPERLINK("http://evil.example","x")', main_flaw="\uff1d3+3", overall=3)
    client.force_login(coordinator)

    row = as_dicts(read_csv(client.get(reverse("api-cohort-reviews-csv", args=[cohort.pk]))))[0]
    assert row["comments"] == '\'=HYPERLINK("http://evil.example","x")'
    assert row["main_flaw"] == "'\uff1d3+3"
    assert row["deferred_reason"] == "' =1+1"
    assert row["proposal_id"] == "'=cmd|'/C calc'!A0"
    assert row["cohort"] == "'+Escapes"
    assert row["author"] == "'@SUM(1)"
    assert row["overall"] == "3"

    content = b"".join(client.get(reverse("api-cohort-reviews-xlsx", args=[cohort.pk])).streaming_content)
    sheet = openpyxl.load_workbook(io.BytesIO(content)).active
    cells = list(sheet.iter_rows(min_row=2, max_row=2))[0]
    assert all(cell.data_type != "f" for cell in cells)
    values = [cell.value for cell in cells]
    assert '\'=HYPERLINK("http://evil.example","x")' in values
    assert "' =1+1" in values and "'\uff1d3+3" in values


def test_export_rows_come_from_one_query_whatever_the_cohort_size(reviewer):
    """The reviews are one query; the columns other rooms add take a fixed number of their own."""
    small = factories.make_cohort(name="Small")
    add_reviewed_proposals(small, reviewer, 2)
    large = factories.make_cohort(name="Large")
    add_reviewed_proposals(large, reviewer, 40)

    counts = set()
    for cohort, expected in ((small, 2), (large, 40)):
        for unblinded in (True, False):
            with CaptureQueriesContext(connection) as queries:
                rows = list(review_export_rows(cohort=cohort, unblinded=unblinded))
            assert len(rows) == expected + 1
            assert sum('FROM "reviewapp_review"' in query["sql"] for query in queries) == 1
            counts.add(len(queries))
    assert len(counts) == 1


def test_export_requests_take_the_same_number_of_queries_for_any_size(client, coordinator, reviewer):
    small = factories.make_cohort(name="Small")
    add_reviewed_proposals(small, reviewer, 1)
    large = factories.make_cohort(name="Large")
    add_reviewed_proposals(large, reviewer, 30)
    client.force_login(coordinator)

    counts = []
    for cohort in (small, large):
        for name in ("api-cohort-reviews-csv", "api-cohort-reviews-xlsx"):
            with CaptureQueriesContext(connection) as queries:
                response = client.get(reverse(name, args=[cohort.pk]))
                b"".join(response.streaming_content)
            counts.append((name, len(queries)))
    assert counts[:2] == counts[2:]


def test_reviewers_may_not_export(client, reviewer, cohort):
    client.force_login(reviewer)
    for name in ("api-cohort-reviews-csv", "api-cohort-reviews-xlsx"):
        response = client.get(reverse(name, args=[cohort.pk]))
        assert response.status_code == 403
        assert response.json()["error"] == "forbidden"
        assert AUTHOR not in response.content.decode()


def test_anonymous_visitors_may_not_export(client, cohort):
    for name in ("api-cohort-reviews-csv", "api-cohort-reviews-xlsx"):
        assert client.get(reverse(name, args=[cohort.pk])).status_code in (401, 403)


def test_unknown_cohort_is_not_found(client, coordinator):
    client.force_login(coordinator)
    for name in ("api-cohort-reviews-csv", "api-cohort-reviews-xlsx"):
        response = client.get(reverse(name, args=[999999]))
        assert response.status_code == 404
        assert response.json()["error"] == "not_found"


def test_analyst_exports_with_a_token(client, analyst, cohort):
    _, key = token_create(user=analyst)
    response = client.get(
        reverse("api-cohort-reviews-csv", args=[cohort.pk]),
        HTTP_AUTHORIZATION=f"Token {key}",
        HTTP_ACCEPT="text/csv",
    )
    rows = read_csv(response)
    assert rows[0] == WIDE_HEADER + UNBLINDING + AUTOMATED and len(rows) == 3


def test_cohort_page_offers_csv_downloads_and_a_background_xlsx(client, coordinator, analyst, cohort):
    for user in (coordinator, analyst):  # both roles see authorship (docs/protocol.md#blinding)
        client.force_login(user)
        response = client.get(reverse("cohort-exports", args=[cohort.pk]))
        assert response.status_code == 200
        html = response.content.decode()
        assert f'href="{reverse("api-cohort-reviews-csv", args=[cohort.pk])}"' in html
        assert "?layout=long" in html
        assert f'action="{reverse("cohort-reviews-xlsx-prepare", args=[cohort.pk])}"' in html
        assert "Prepare XLSX" in html
        assert "Includes the authorship columns" in html


def test_export_fragment_renders_for_the_cohort_it_is_given(rf, analyst, cohort):
    request = rf.get("/")
    request.user = analyst
    html = render_to_string("reviewapp/_cohort_exports.html", {"cohort": cohort}, request=request)
    assert reverse("api-cohort-reviews-csv", args=[cohort.pk]) in html
    assert "Includes the authorship columns" in html

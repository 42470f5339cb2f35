"""The panel's columns in the cohort's review exports, for coordinators and analysts: per proposal, coverage,
medians and Q (an empty cell where absent, never 0), the dimensions whose scores are inapplicable, the rating and the
revision judgment."""

import csv
import io

import openpyxl
from django.utils import timezone

from reviewapp.models import Review
from reviewapp.panel.profile import DIMENSION_KEYS
from reviewapp.panel.selectors import EXPORT_COLUMNS
from reviewapp.panel.services.critique import comparisons_import
from reviewapp.panel.services.panel import panel_start_for_cohort
from reviewapp.protocol import CRITERION_FIELDS
from reviewapp.selectors.exports import REVIEW_COLUMNS, UNBLINDING_COLUMNS
from tests import factories
from tests.panel.support import make_cohort, proposal, review_reply


def _reviewed(script, run_job, coordinator):
    cohort = make_cohort(
        [proposal("e1", "T-E"), proposal("e2", "T-E"), proposal("e3", "T-E", parents=["e1"])], user=coordinator
    )
    statement = proposal("e2", "T-E")["statement"]
    for role in ("rubric_judge", "domain_scientist"):
        script.reviews[(role, statement)] = [review_reply({"novelty": "unknown", "actionability": "inapplicable"})]
    run_job(panel_start_for_cohort(cohort=cohort, user=coordinator).pk)
    comparisons_import(cohort=cohort, rows=[{"a": "e1", "b": "e2", "outcome": "a"}], user=coordinator)
    reviewer = factories.make_user("reviewer")
    for item in cohort.proposals.all():
        Review.objects.create(
            assignment=factories.make_assignment(cohort, reviewer, item),
            status=Review.Status.SUBMITTED,
            overall=3,
            recommendation="revise",
            flaw_verdict="absent",
            submitted_at=timezone.now(),
            **dict.fromkeys(CRITERION_FIELDS, "3"),
        )
    return cohort


def _rows(response):
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def test_both_roles_get_the_panel_columns_and_absence_is_never_zero(
    client, models, script, run_job, coordinator, analyst
):
    cohort = _reviewed(script, run_job, coordinator)
    for user, unblinded in ((coordinator, True), (analyst, True)):  # analysts see authorship (protocol: Blinding)
        client.force_login(user)
        response = client.get(f"/api/v1/cohorts/{cohort.pk}/reviews.csv")
        rows = {row["proposal_id"]: row for row in _rows(response)}
        header = list(rows["e1"])
        assert header == [*REVIEW_COLUMNS, *(UNBLINDING_COLUMNS if unblinded else []), *EXPORT_COLUMNS]
        assert rows["e1"]["ai_q"] == "5.0" and rows["e1"]["ai_reviews"] == "3" and rows["e1"]["ai_simulated"] == "false"
        assert rows["e1"]["ai_comparisons"] == "1" and rows["e1"]["ai_rank"] == "1.0"
        assert rows["e2"]["ai_median_novelty"] == "" and rows["e2"]["ai_q"] == ""  # unknown: empty, never 0
        assert rows["e2"]["ai_median_importance"] == "5.0"
        # Inapplicable is told apart from unknown: both medians are empty, the column names the inapplicable one.
        assert rows["e2"]["ai_median_actionability"] == "" and rows["e2"]["ai_inapplicable"] == "actionability"
        assert rows["e1"]["ai_inapplicable"] == ""
        assert rows["e3"]["ai_revision"] == "substantive_progress" and rows["e3"]["ai_delta_q"] == "0.0"
        assert rows["e1"]["ai_revision"] == ""
        long = _rows(client.get(f"/api/v1/cohorts/{cohort.pk}/reviews.csv?layout=long"))
        assert len(long) == 3 * len(CRITERION_FIELDS) and long[0]["ai_q"] in ("5.0", "")
    for key in DIMENSION_KEYS:
        assert f"ai_median_{key}" in EXPORT_COLUMNS


def test_the_xlsx_export_has_the_same_columns(client, models, script, run_job, coordinator, analyst):
    cohort = _reviewed(script, run_job, coordinator)
    client.force_login(analyst)
    response = client.get(f"/api/v1/cohorts/{cohort.pk}/reviews.xlsx")
    sheet = openpyxl.load_workbook(io.BytesIO(b"".join(response.streaming_content))).active
    rows = list(sheet.iter_rows(values_only=True))
    header = list(rows[0])
    assert header[-len(EXPORT_COLUMNS) :] == EXPORT_COLUMNS
    by_id = {row[header.index("proposal_id")]: row for row in rows[1:]}
    assert by_id["e2"][header.index("ai_q")] is None and by_id["e1"][header.index("ai_q")] == 5.0
    assert by_id["e2"][header.index("ai_inapplicable")] == "actionability"

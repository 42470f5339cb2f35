"""The cohort's AI panel table in a real browser (headless Chromium) at a phone's and a desktop's width: the proposal
column stays in view while the table scrolls sideways, Q and its coverage are next to it, and the headers are whole
abbreviations spelt out in a legend (no header cut short). Screenshots of the panel at both widths are saved under
var/screenshots/ai-panel-table-<width>/."""

import os

import pytest
from django.urls import reverse

from reviewapp.panel.profile import DIMENSION_KEYS, DIMENSIONS
from reviewapp.panel.services.panel import panel_start_for_cohort
from tests import factories
from tests.browser_support import HEIGHTS, PHONE, WIDTHS, assert_page_fits, log_in
from tests.panel.support import make_cohort, proposal, review_reply

# Playwright's sync API runs an event loop in this thread; the ORM calls here are still synchronous.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def panel_cohort(models, script, run_job):
    coordinator = factories.make_user("coordinator", username="coord-panel-table")
    proposals = [proposal(f"AGE-{n}", f"T-{n % 2}", parents=[f"AGE-{n - 2}"] if n > 2 else []) for n in range(1, 7)]
    for n, item in enumerate(proposals, start=1):
        for role in ("rubric_judge", "domain_scientist", "methods_reviewer"):
            script.reviews[(role, item["statement"])] = [review_reply(dict.fromkeys(DIMENSION_KEYS, 2 + n))]
    cohort = make_cohort(proposals, user=coordinator, name="Panel table")
    run_job(panel_start_for_cohort(cohort=cohort, user=coordinator).pk)
    factories.make_user("analyst", username="analyst-panel-table")
    return cohort


@pytest.mark.parametrize("width", WIDTHS)
def test_the_panel_table_keeps_the_proposal_q_and_coverage_in_view_with_a_legend(
    live_server, page, panel_cohort, width
):
    from playwright.sync_api import expect

    page.set_viewport_size({"width": width, "height": HEIGHTS[width]})
    log_in(page, live_server.url, "analyst-panel-table", next_path=reverse("panel-cohort", args=[panel_cohort.pk]))
    table = page.locator("#panel-table table")
    headers = [text.strip() for text in table.locator("thead th").all_inner_texts()]
    assert headers[:4] == ["Proposal", "Q", "Rev", "Elig"], headers
    # Every header is whole: no ellipsis, nothing wider than its cell; each abbreviation is in the legend.
    assert not any("…" in header for header in headers)
    clipped = table.locator("thead th").evaluate_all("cells => cells.filter(c => c.scrollWidth > c.clientWidth + 1)")
    assert clipped == []
    legend = page.locator("#panel-legend")
    for dimension in DIMENSIONS:
        expect(legend).to_contain_text(f"{dimension.label} (weight {dimension.weight})")
    expect(legend.locator("dt")).to_have_count(len(headers) - 3)  # every header but Proposal, Task and Revision

    first_row = table.locator("tbody tr").first
    expect(first_row.locator("th")).to_have_text("AGE-2")  # task T-0 first
    expect(first_row.locator("td").first).to_have_text("4.00")  # Q: every median 4
    scroller = page.locator("#panel-table .table-scroll")
    if width == PHONE:
        # Q and the reviews are on the first screen; sideways, the proposal stays where it was.
        q_cell = first_row.locator("td").nth(1).bounding_box()
        assert q_cell["x"] + q_cell["width"] <= width, q_cell
        before = first_row.locator("th").bounding_box()["x"]
        scroller.evaluate("el => { el.scrollLeft = el.scrollWidth; }")
        page.wait_for_function("el => el.scrollLeft > 0", arg=scroller.element_handle(), polling="raf")
        assert abs(first_row.locator("th").bounding_box()["x"] - before) <= 1
        scroller.evaluate("el => { el.scrollLeft = 0; }")
    else:
        # At a desktop's width the whole table fits: no column is cut off.
        assert scroller.evaluate("el => el.scrollWidth <= el.clientWidth + 1")
    assert_page_fits(page, f"AI panel table {width}", "cohort panel", widths=(width,))

"""Small snags of the first visits, in a real browser (headless Chromium) at a phone's and a desktop's width: the
header stays short on a phone with every link still reachable, the review page has its heading and hides keyboard
shortcuts on a screen without a keyboard, the corpus list gives a reference the row's width on a phone, and no one is
offered to deactivate themselves."""

import os

import pytest
from django.urls import reverse

from literature.services import references_import
from reviewapp.models import Cohort
from tests import factories
from tests.browser_support import HEIGHTS, PHONE, WIDTHS, assert_page_fits, log_in
from tests.conftest import BROWSER_PATIENCE_MS

# Playwright's sync API runs an event loop in this thread; the ORM calls here are still synchronous.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "literature")


@pytest.mark.parametrize("width", WIDTHS)
def test_a_coordinators_header_is_two_lines_at_most_with_the_account_under_its_name(live_server, page, width):
    from playwright.sync_api import expect

    coordinator = factories.make_user("coordinator", username=f"coord-head-{width}")
    page.set_viewport_size({"width": width, "height": HEIGHTS[width]})
    log_in(page, live_server.url, coordinator.username, next_path=reverse("user-list"))
    header = page.locator("header.topbar")
    line = page.evaluate("() => parseFloat(getComputedStyle(document.body).lineHeight)")
    assert header.bounding_box()["height"] <= 2 * line + 40, header.bounding_box()  # two lines and the padding
    # The pages stay on the header; the account's links open under its name.
    expect(header.get_by_role("link", name="People")).to_be_attached()
    log_out = header.get_by_role("button", name="Log out")
    expect(log_out).to_be_hidden()
    header.locator(".account-menu summary").click()
    expect(log_out).to_be_visible()
    expect(header.get_by_role("link", name="API tokens")).to_be_visible()
    # Their own row offers no deactivation (it would be refused); the others' rows do.
    own = page.locator("tr", has_text=coordinator.username)
    expect(own.get_by_role("button", name="Deactivate")).to_have_count(0)
    assert_page_fits(page, f"coordinator header {width}", "people with the account menu open", widths=(width,))


@pytest.mark.parametrize("width", WIDTHS)
def test_the_review_page_has_a_heading_and_shows_keys_only_with_a_keyboard(live_server, page, width):
    from playwright.sync_api import expect

    reviewer = factories.make_user("reviewer", username=f"rev-touch-{width}")
    proposal = factories.make_proposal(statement="Young plasma restores hippocampal neurogenesis in aged mice.")
    assignment = factories.make_assignment(
        factories.make_cohort([proposal], name="Plasma", status=Cohort.Status.OPEN), reviewer, proposal
    )
    url = reverse("review-page", args=[assignment.pk])
    page.set_viewport_size({"width": width, "height": HEIGHTS[width]})
    log_in(page, live_server.url, reviewer.username, next_path=url)
    expect(page.get_by_role("heading", level=1)).to_have_text("Proposal 1 of 1 · Plasma")
    expect(page.locator("#key-legend")).to_be_visible()  # a mouse and a keyboard

    touch = page.context.browser.new_context(
        viewport={"width": width, "height": HEIGHTS[width]}, has_touch=True, is_mobile=width == PHONE
    )
    try:
        phone = touch.new_page()
        phone.set_default_timeout(BROWSER_PATIENCE_MS)
        log_in(phone, live_server.url, reviewer.username, next_path=url)
        assert phone.evaluate("matchMedia('(hover: none) and (pointer: coarse)').matches")
        expect(phone.get_by_role("heading", level=1)).to_be_visible()
        expect(phone.locator("#key-legend")).to_be_hidden()
        expect(phone.locator(".option kbd").first).to_be_hidden()
        expect(phone.locator("#submit-review kbd")).to_be_hidden()
        assert_page_fits(phone, f"review page touch {width}", "no keys on a touch screen", widths=(width,))
    finally:
        touch.close()


def test_the_corpus_list_gives_a_reference_the_rows_width_on_a_phone(live_server, page):
    from playwright.sync_api import expect

    analyst = factories.make_user("analyst", username="analyst-corpus")
    with open(os.path.join(FIXTURES, "pubmed_efetch.xml"), "rb") as file:
        references_import(file=file, format="pubmed_xml", user=factories.make_user("coordinator"))
    page.set_viewport_size({"width": PHONE, "height": HEIGHTS[PHONE]})
    log_in(page, live_server.url, analyst.username, next_path=reverse("literature-corpus"))
    first = page.locator(".corpus-table tbody tr").first.locator("td").first
    expect(first.locator(".narrow-only")).to_be_visible()
    assert first.bounding_box()["width"] >= 300, first.bounding_box()
    assert_page_fits(page, "corpus list", "references on a phone")
    page.set_viewport_size({"width": WIDTHS[1], "height": HEIGHTS[WIDTHS[1]]})
    expect(first.locator(".narrow-only")).to_be_hidden()
    expect(page.locator(".corpus-table th", has_text="Published")).to_be_visible()

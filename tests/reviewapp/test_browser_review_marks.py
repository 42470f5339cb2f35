"""The review page points at what needs the reviewer, in a real browser (headless Chromium) at a phone's and a
desktop's width: a submission with unanswered questions scrolls to and focuses the first of them; a save refused for a
field's content marks that field; the page runs without a script error under its Content-Security-Policy."""

import os
import re

import pytest

from reviewapp.models import Cohort, Review
from tests import factories
from tests.browser_support import HEIGHTS, WIDTHS, assert_page_fits, log_in

# Playwright's sync API runs an event loop in this thread; the ORM calls here are still synchronous.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def open_review(live_server, page, width: int, username: str) -> Review | int:
    reviewer = factories.make_user("reviewer", username=username)
    proposal = factories.make_proposal(statement="Young plasma restores hippocampal neurogenesis in aged mice.")
    cohort = factories.make_cohort([proposal], status=Cohort.Status.OPEN)
    assignment = factories.make_assignment(cohort, reviewer, proposal)
    page.set_viewport_size({"width": width, "height": HEIGHTS[width]})
    log_in(page, live_server.url, username, next_path=f"/review/{assignment.pk}/")
    page.wait_for_function("() => document.activeElement && document.activeElement.name === 'overall'")
    return assignment.pk


def script_errors(page) -> list[str]:
    """The errors the page's scripts report from now on (htmx reports its own, e.g. htmx:evalDisallowedError). The
    browser's note of a 4xx answer is left out: the page asks for those and shows them."""
    errors: list[str] = []

    def on_console(message) -> None:
        if message.type == "error" and not message.text.startswith("Failed to load resource"):
            errors.append(message.text)

    page.on("console", on_console)
    page.on("pageerror", lambda error: errors.append(str(error)))
    return errors


@pytest.mark.parametrize("width", WIDTHS)
def test_an_incomplete_submission_scrolls_to_and_focuses_the_first_unanswered_question(live_server, page, width):
    from playwright.sync_api import expect

    errors = script_errors(page)
    open_review(live_server, page, width, f"rev-incomplete-{width}")
    page.locator("input[name=overall][value='3']").check()
    expect(page.locator("#save-status")).to_contain_text("Saved")
    page.locator("#submit-review").scroll_into_view_if_needed()
    page.locator("#submit-review").click()

    status = page.locator("#save-status")
    expect(status).to_contain_text("Not submitted — answer the questions marked")
    expect(status).not_to_contain_text(re.compile("below|above"))
    first_unanswered = page.locator("input[name=recommendation]").first
    expect(first_unanswered).to_be_focused()
    expect(page.locator("#q-recommendation")).to_be_in_viewport()
    expect(page.locator("#q-recommendation .error")).to_be_visible()
    assert not Review.objects.get().submitted_at
    assert_page_fits(page, f"review incomplete {width}", "submission refused", widths=(width,))
    assert errors == [], errors


@pytest.mark.parametrize("width", WIDTHS)
def test_a_comment_refused_for_a_control_character_is_marked_at_its_field(live_server, page, width):
    from playwright.sync_api import expect

    open_review(live_server, page, width, f"rev-control-{width}")
    box = page.locator("textarea[name=comments]")
    page.evaluate(
        """text => {
            const box = document.querySelector('textarea[name=comments]');
            box.value = text;
            box.dispatchEvent(new Event('input', { bubbles: true }));
        }""",
        "Dose\u0007 per arm is unclear.",
    )
    expect(page.locator("#save-status")).to_contain_text("Not saved — Comments holds the control character U+0007")
    expect(box).to_have_attribute("aria-invalid", "true")
    described = box.get_attribute("aria-describedby")
    expect(page.locator(f"#{described}")).to_contain_text("Comments holds the control character U+0007 at character 5")
    assert_page_fits(page, f"review control character {width}", "comment marked", widths=(width,))

    # Corrected, the comment saves and the mark goes.
    box.fill("Dose per arm is unclear.")
    expect(page.locator("#save-status")).to_contain_text("Saved")
    expect(box).not_to_have_attribute("aria-invalid", "true")
    expect(page.locator(f"#{described}")).to_have_count(0)
    assert Review.objects.get().comments == "Dose per arm is unclear."

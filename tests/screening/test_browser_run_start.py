"""The public start page in a real browser (headless Chromium) at a phone's and a desktop's width: the form is in
view when the page opens, the introduction says how many models do what, and a refusal at the daily limit opens
where the form was, focused, rather than at the top of a page that looks unchanged."""

import os
import re

import pytest
from django.urls import reverse

from screening.models import Run
from screening.services.runs import run_create
from tests.browser_support import HEIGHTS, WIDTHS, assert_page_fits
from tests.screening_support import GENERATORS, STAGE2

# Playwright's sync API runs an event loop in this thread; the ORM calls here are still synchronous.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

QUESTION = "How does remodelling of the bone-marrow niche affect mutant clones?"


def fully_in_view(page, selector: str) -> bool:
    return page.eval_on_selector(
        selector,
        "el => { const r = el.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; }",
    )


@pytest.mark.parametrize("width", WIDTHS)
def test_the_form_is_in_view_and_a_refusal_at_the_limit_opens_where_it_was(
    live_server, page, memory_broker, roster, width
):
    from playwright.sync_api import expect

    page.set_viewport_size({"width": width, "height": HEIGHTS[width]})
    page.goto(live_server.url + reverse("open-hypothesis"))
    assert fully_in_view(page, "textarea[name=question]")
    how = page.locator("#how-it-works")
    expect(how).to_contain_text(f"{len(GENERATORS)} models propose ten hypotheses each")
    expect(how).to_contain_text(f"{len(STAGE2)} more models answer about the rest")
    expect(how).not_to_contain_text("Model gen-astra")  # counts, never the roster's names

    for _ in range(3):  # the day's runs of this address (the live server sees the browser as 127.0.0.1)
        run_create(question=QUESTION, client_address="127.0.0.1")
    page.get_by_label(re.compile("Research question")).fill("Does a fourth question about clones get a run?")
    page.get_by_role("button", name="Start the run").click()
    refusal = page.locator("#retry-at")
    expect(refusal).to_contain_text(re.compile(r"You can start a run again from\s+\d\d:\d\d UTC on \d+ \w+ \d{4}"))
    expect(refusal).to_be_focused()
    expect(refusal).to_be_in_viewport(ratio=1)
    expect(page.locator("#run-form")).to_have_count(0)  # nothing to fill in until then
    assert Run.objects.count() == 3
    assert_page_fits(page, f"visitor start page {width}", "limit reached", widths=(width,))


def test_a_mistyped_question_is_shown_focused_above_the_form(live_server, page, memory_broker, roster):
    from playwright.sync_api import expect

    page.set_viewport_size({"width": WIDTHS[0], "height": HEIGHTS[WIDTHS[0]]})
    page.goto(live_server.url + reverse("open-hypothesis"))
    # The browser's own check would stop a too-short question: what it cannot see is a question of spaces.
    page.eval_on_selector("textarea[name=question]", "el => { el.value = ' '.repeat(12); }")
    page.get_by_role("button", name="Start the run").click()
    errors = page.locator("#run-errors")
    expect(errors).to_contain_text("at least 10 characters")
    expect(errors).to_be_focused()
    expect(errors).to_be_in_viewport()
    assert not Run.objects.exists()
    assert_page_fits(page, "visitor start page mistyped", "question refused")

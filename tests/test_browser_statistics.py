"""The statistics page of a benchmark set in a real browser (headless Chromium) at a phone's and a desktop's width: a
contents bar naming every section with its state (sticky on a desktop), every section linkable, an empty section one
line naming the table to import, no empty plot frame. Screenshots under var/screenshots/."""

import os

import pytest
from django.urls import reverse

from tests import factories
from tests.benchmark_support import judged_set
from tests.browser_support import DESKTOP, HEIGHTS, PHONE, assert_page_fits, settle

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def open_statistics(live_server, page, client, benchmark) -> None:
    analyst = factories.make_user("analyst", username="analyst-stats")
    client.force_login(analyst)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    response = page.goto(live_server.url + reverse("benchmark-statistics", args=[benchmark.pk]))
    assert response.status == 200


def test_the_contents_bar_names_every_section_with_its_state_and_empty_sections_are_one_line(live_server, page, client):
    benchmark = judged_set()
    open_statistics(live_server, page, client, benchmark)
    sections = page.locator("main section[id]")
    entries = page.locator("nav.contents-bar li")
    assert entries.count() == sections.count() >= 15
    for index in range(entries.count()):
        entry = entries.nth(index)
        slug = entry.locator("a").get_attribute("href").removeprefix("#")
        section = page.locator(f"section#{slug}")
        state = entry.locator(".badge").inner_text()
        assert state in ("filled", "needs data"), state
        empty = section.locator(".needs-data").count() == 1
        assert empty == (state == "needs data"), slug
        if empty:
            # One line: what to import, linked to the format; no plot, no table.
            assert section.locator("img, table").count() == 0, slug
            where = "a[href*='import-format']" if slug != "human-review" else "a[href$='/cohorts/']"
            assert section.locator(f".needs-data {where}").count() >= 1, slug
        # Each heading names the section in English and the benchmark supplement's appendix in a smaller note.
        assert section.locator(f"h2 a[href='#{slug}']").count() == 1
    # The set is judged but has no imported tables: the enrichment is filled, the hint degree needs its table.
    assert page.locator("nav.contents-bar a[href='#enrichment'] + .badge").inner_text() == "filled"
    assert page.locator("nav.contents-bar a[href='#hint-degree'] + .badge").inner_text() == "needs data"
    assert "Seed 001, appendix Ж" in page.locator("section#trimmed-lists h2").inner_text()
    hint = page.locator("section#hint-degree .needs-data")
    assert "hints" in hint.inner_text()
    hint.get_by_role("link", name="hints").click()
    page.wait_for_url("**/benchmarks/import-format/#table-hints")
    assert page.locator("#table-hints").is_visible()
    page.goto(live_server.url + reverse("benchmark-statistics", args=[benchmark.pk]))

    page.set_viewport_size({"width": DESKTOP, "height": HEIGHTS[DESKTOP]})
    settle(page)
    page.locator("nav.contents-bar a[href='#hint-degree']").click()
    page.wait_for_function("() => location.hash === '#hint-degree'")
    settle(page)
    bar = page.locator("nav.contents-bar").bounding_box()
    heading = page.locator("section#hint-degree h2").bounding_box()
    # The bar stays at the top and does not cover the section's heading.
    assert bar["y"] == pytest.approx(0, abs=1) and heading["y"] >= bar["y"] + bar["height"] - 1
    assert_page_fits(page, "statistics page", "judged set")

    page.set_viewport_size({"width": PHONE, "height": HEIGHTS[PHONE]})
    settle(page)
    page.evaluate("() => window.scrollTo(0, document.body.scrollHeight)")
    # On a phone the bar scrolls away with the page rather than taking the small screen.
    assert page.locator("nav.contents-bar").bounding_box()["y"] < 0
    # A figure keeps a readable width on a phone and scrolls sideways inside its card, a named region for keyboards.
    figure = page.locator("section#enrichment .figure-scroll")
    figure.scroll_into_view_if_needed()
    page.wait_for_function("() => document.querySelector('section#enrichment .figure-scroll img').complete")
    assert page.locator("section#enrichment .figure-scroll img").bounding_box()["width"] >= 600
    sizes = figure.evaluate("wrapper => [wrapper.scrollWidth, wrapper.clientWidth]")
    assert sizes[0] > sizes[1] and sizes[1] <= PHONE
    settle(page)
    assert figure.get_attribute("role") == "region" and figure.get_attribute("tabindex") == "0"
    assert_page_fits(page, "statistics page", "judged set, figures at a phone's width", widths=(PHONE,))


def test_a_recomputation_with_other_seeds_shows_its_progress(live_server, page, client):
    benchmark = judged_set()
    open_statistics(live_server, page, client, benchmark)
    # The recomputed page answers "no content", so the page stays as a reader sees it while the next is computed,
    # however fast the machine.
    page.route("**/statistics/?*", lambda route: route.fulfill(status=204))
    page.locator("#seed_selection").fill("7")
    page.get_by_role("button", name="Recompute").click()
    status = page.locator("#seeds .busy-status")
    status.wait_for(state="visible")
    assert "Recomputing every statistic" in status.inner_text()
    assert page.get_by_role("button", name="Recompute").is_disabled()
    page.wait_for_function("() => /\\d+ s$/.test(document.querySelector('#seeds .busy-text').textContent)")
    assert_page_fits(page, "statistics page", "recomputing")

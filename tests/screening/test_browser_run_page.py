"""A person starts a run from the form in a real browser (headless Chromium) and watches the run page update itself
until the delivered hypotheses appear, then downloads the run as JSON."""

import json
import os

import pytest

from screening.models import Run
from tests.screening_support import Script, ScriptedModelServer, drive, make_roster

# Playwright's sync API runs an event loop in this thread; the ORM calls here are still synchronous.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

# The live server needs committed data. No user or role takes part: the public pages need no account.
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOT = "/tmp/open-hypothesis-run-page.png"


@pytest.fixture
def simulated_roster(settings):
    settings.PROVIDER_BACKOFF_BASE_SECONDS = 0.01
    server = ScriptedModelServer(Script())
    make_roster(server.base_url, simulated=True)
    yield
    server.stop()


def test_a_person_starts_a_run_and_watches_it_complete(live_server, page, memory_broker, simulated_roster):
    from playwright.sync_api import expect

    page.goto(f"{live_server.url}/open-hypothesis/")
    page.fill("textarea[name=question]", "How does remodelling of the bone-marrow niche affect mutant clones?")
    page.fill("textarea[name=background]", "Clonal haematopoiesis rises with age.")
    page.click("text=Start the run")
    page.wait_for_url(f"{live_server.url}/open-hypothesis/*")
    expect(page.locator("#run-status")).to_have_text("Queued")
    expect(page.locator("#simulated-notice")).to_contain_text("Simulated models")

    # The workers' part, done here while the page stays open: it must update without a reload.
    run = drive(Run.objects.get())
    assert run.status == Run.Status.COMPLETED
    page.evaluate("window.notReloaded = true")
    expect(page.locator("#run-status")).to_have_text("Completed", timeout=15_000)
    assert page.evaluate("window.notReloaded") is True
    expect(page.locator("#counts")).to_contain_text("Generated 12")
    expect(page.locator("#delivered h2")).to_have_text("Delivered hypotheses (12)")
    expect(page.locator("#delivered article")).to_have_count(12)
    expect(page.locator("#delivered article").first).to_contain_text("Model fc-sonnet: yes")
    page.screenshot(path=SCREENSHOT, full_page=True)

    # Polling has stopped: the live part no longer asks the server for news.
    assert page.locator("#run-live[hx-trigger]").count() == 0

    with page.expect_download() as download_info:
        page.click("text=Download JSON")
    body = json.loads(open(download_info.value.path()).read())
    assert body["id"] == str(run.public_id) and body["status"] == "completed" and body["simulated"] is True

"""A coordinator starts an audit from the form in a real browser (headless Chromium) and watches its page: it polls
while workers do the audit, then shows the counts and the versions without the person reloading it."""

import os

import pytest

from reviewapp.inspiration.models import InspirationAudit
from reviewapp.inspiration.services import audit_complete_here
from tests import factories
from tests.inspiration.support import R1_QUOTE, add_inspiration_judge, scripted_judge

# Playwright's sync API runs an event loop in this thread; the ORM calls here are still synchronous.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_coordinator_starts_an_audit_and_sees_its_counts_appear(
    live_server, page, memory_broker, cohort, script, server
):
    from playwright.sync_api import expect

    script.inspire = scripted_judge
    add_inspiration_judge(server.base_url)
    factories.make_user("coordinator", username="coord-browser")
    page.goto(f"{live_server.url}/accounts/login/?next=/inspiration/")
    page.fill("input[name=username]", "coord-browser")
    page.fill("input[name=password]", "pw-for-tests-1")
    page.click("button[type=submit]")
    page.select_option("#audit-cohort", label="Audit cohort")
    page.click("text=Start the audit")
    page.wait_for_url(f"{live_server.url}/inspiration/audits/*/")
    expect(page.locator("#audit-status [data-state]")).to_have_text("Pending")

    audit = audit_complete_here(audit_id=InspirationAudit.objects.get().pk)
    assert audit.state == "done"

    expect(page.locator("#audit-status [data-state]")).to_have_text("Done", timeout=15_000)
    expect(page.locator("#audit-status")).to_contain_text("28.6% (2/7)")
    expect(page.locator("table").last).to_contain_text(R1_QUOTE)

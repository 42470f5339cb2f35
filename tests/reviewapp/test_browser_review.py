"""A reviewer in a real browser (headless Chromium): log in, review with the keyboard only, reload, submit."""

import os
import re

import pytest

from reviewapp import protocol
from reviewapp.models import Cohort, Review
from tests import factories

# Playwright's sync API runs an event loop in this thread; the ORM calls here are still synchronous.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

# The live server needs committed data. The flush after each transactional test makes the role groups again (they are
# made after every migrate, flush included); a serialized rollback would restore them a second time and fail.
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOT = "/tmp/review-page.png"


def focused_name(page) -> str:
    return page.evaluate("document.activeElement && document.activeElement.name") or ""


def wait_for_focus(page, name: str):
    page.wait_for_function("name => document.activeElement && document.activeElement.name === name", arg=name)


def wait_until_saved(page, assignment_id: int):
    """Every answer typed has reached the server: the browser's copy is marked saved, or gone because the page the
    server rendered already held every answer (a save sent while the page reloaded got there first)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    key = f"open-hypothesis:review-draft:{assignment_id}"
    try:
        page.wait_for_function(
            "key => { const kept = JSON.parse(localStorage.getItem(key) || 'null'); return !kept || !kept.dirty; }",
            arg=key,
        )
        page.wait_for_function("() => document.querySelector('#save-status .saved')")
    except PlaywrightTimeout:
        kept = page.evaluate("key => localStorage.getItem(key)", key)
        status = page.locator("#save-status").inner_text()
        raise AssertionError(f"not saved: indicator {status!r}, browser copy {kept}") from None


def test_a_reviewer_completes_a_review_with_the_keyboard(live_server, page):
    from playwright.sync_api import expect

    reviewer = factories.make_user("reviewer", username="rev-kim")
    task = factories.make_task(
        question="Does intermittent rapamycin delay ovarian follicle loss in middle-aged mice?",
        background="The primordial follicle pool declines with age; mTORC1 activity drives follicle activation.",
    )
    first_proposal = factories.make_proposal(
        task=task,
        statement="Intermittent rapamycin preserves the primordial follicle pool in middle-aged female mice.",
        mechanism="Lower mTORC1 signalling in granulosa cells keeps primordial follicles quiescent.",
        prediction="Treated mice keep more primordial follicles at 12 months than controls.",
        domain_category="nutrient sensing",
        investigation_plan="Dose C57BL/6 females weekly from 8 to 12 months; count follicles in serial sections.",
        data_requirements="Serial ovarian sections and AMH levels from treated and control mice.",
        alternative_explanations="Weight loss could reduce ovulation and spare follicles independently of mTORC1.",
        citations="Dou X, et al. 2017. Garcia DN, et al. 2019.",
    )
    second_proposal = factories.make_proposal(statement="Senolytic clearance restores ovulation in aged mice.")
    cohort = factories.make_cohort([first_proposal, second_proposal], name="Ovarian ageing", status=Cohort.Status.OPEN)
    first = factories.make_assignment(cohort, reviewer, first_proposal)
    second = factories.make_assignment(cohort, reviewer, second_proposal)

    page.goto(f"{live_server.url}/accounts/login/")
    page.keyboard.type("rev-kim")  # the username field has autofocus
    page.keyboard.press("Tab")
    page.keyboard.type("pw-for-tests-1")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{live_server.url}/review/")
    expect(page.locator("#queue-progress-text")).to_have_text("0 of 2 submitted")

    page.focus("#continue-link")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{live_server.url}/review/{first.pk}/")
    expect(page.locator(".statement")).to_contain_text("Intermittent rapamycin preserves")
    expect(page.locator("#criteria-section [data-question]")).to_have_count(0)

    # Digits answer the focused question and move on; the criteria appear once the first two are recorded.
    wait_for_focus(page, "overall")
    page.keyboard.press("4")
    wait_for_focus(page, "recommendation")
    page.keyboard.press("2")  # revise
    wait_for_focus(page, "importance")
    expect(page.locator("#criteria-section [data-question]")).to_have_count(len(protocol.CRITERIA))
    for key, field in zip("3042", protocol.CRITERION_FIELDS[:4], strict=False):
        assert focused_name(page) == field
        page.keyboard.press(key)
    wait_until_saved(page, first.pk)
    page.screenshot(path=SCREENSHOT)

    # Reload mid-review: the draft survived.
    page.reload()
    expect(page.locator("input[name=overall][value='4']")).to_be_checked()
    expect(page.locator("input[name=recommendation][value=revise]")).to_be_checked()
    expect(page.locator("input[name=advance_over_known_work][value=cant_judge]")).to_be_checked()
    expect(page.locator("input[name=data_fit][value='2']")).to_be_checked()
    wait_for_focus(page, "alternative_explanations")  # the first unanswered question

    page.keyboard.press("1")
    page.keyboard.press("3")
    wait_for_focus(page, "flaw_verdict")
    page.keyboard.press("2")  # fixable: the checklist appears
    wait_for_focus(page, "flaw_checklist")
    page.keyboard.press("Space")  # the first checklist item
    for _ in protocol.FLAW_CHECKLIST:
        page.keyboard.press("Tab")
    assert focused_name(page) == "main_flaw"
    page.keyboard.type("Only 6 mice per arm; 12 months is too early to see 3 of 4 effects.")
    page.keyboard.press("Tab")
    page.keyboard.type("Worth a pilot.")
    # Reload at once, before the typing pause that saves: the words typed are not lost.
    page.reload()
    expect(page.locator("textarea[name=comments]")).to_have_value("Worth a pilot.")
    expect(page.locator("textarea[name=main_flaw]")).to_have_value(re.compile(r"^Only 6 mice per arm"))
    wait_until_saved(page, first.pk)

    page.keyboard.press("Control+Enter")
    page.wait_for_url(f"{live_server.url}/review/{second.pk}/")
    expect(page.locator(".crumbs")).to_contain_text("Proposal 2 of 2")
    expect(page.locator(".messages")).to_contain_text("Review submitted.")

    review = Review.objects.get(assignment=first)
    assert review.status == Review.Status.SUBMITTED
    assert (review.overall, review.recommendation, review.advance_over_known_work) == (4, "revise", "cant_judge")
    assert [review.importance, review.plausible_evidence_bounded, review.data_fit] == ["3", "4", "2"]
    assert [review.alternative_explanations, review.informative_results] == ["1", "3"]
    assert (review.flaw_verdict, review.flaw_checklist) == ("fixable", [protocol.FLAW_CHECKLIST_KEYS[0]])
    assert review.comments == "Worth a pilot."
    assert review.main_flaw.startswith("Only 6 mice per arm")

    page.goto(f"{live_server.url}/review/")
    expect(page.locator("#queue-progress-text")).to_have_text("1 of 2 submitted")
    expect(page.locator("#continue-link")).to_have_attribute("href", f"/review/{second.pk}/")


def test_the_indicator_tells_of_an_expired_session_and_of_another_tab(live_server, page):
    from playwright.sync_api import expect

    reviewer = factories.make_user("reviewer", username="rev-lee")
    [assignment] = [
        factories.make_assignment(
            factories.make_cohort([proposal], status=Cohort.Status.OPEN), reviewer, proposal, position=1
        )
        for proposal in [factories.make_proposal()]
    ]
    url = f"{live_server.url}/review/{assignment.pk}/"

    def log_in(tab):
        tab.goto(f"{live_server.url}/accounts/login/?next=/review/{assignment.pk}/")
        tab.fill("input[name=username]", "rev-lee")
        tab.fill("input[name=password]", "pw-for-tests-1")
        tab.keyboard.press("Enter")
        tab.wait_for_url(url)

    log_in(page)
    wait_for_focus(page, "overall")
    page.keyboard.press("3")
    expect(page.locator("#save-status")).to_contain_text("Saved")

    # The session ends (cookies gone): the next answer is kept in the browser and the indicator says so.
    page.context.clear_cookies()
    page.keyboard.press("1")  # prioritize
    expect(page.locator("#save-status")).to_have_text(
        "Not saved — your session expired; log in again in another tab, your answers are kept in this browser"
    )
    other_tab = page.context.new_page()
    log_in(other_tab)
    expect(other_tab.locator("input[name=recommendation][value=prioritize]")).to_be_checked()  # restored, saved
    expect(other_tab.locator("#save-status")).to_contain_text("Saved")
    assert Review.objects.get(assignment=assignment).recommendation == "prioritize"

    # Back in the first tab, saving works again with the new login.
    page.bring_to_front()
    page.keyboard.press("Control+s")
    expect(page.locator("#save-status")).to_contain_text("Saved")

    # The second tab is now behind the first: its change is refused, not silently written over the first's.
    page.locator("input[name=overall]:checked").focus()
    page.keyboard.press("5")
    expect(page.locator("#save-status")).to_contain_text("Saved")
    expect(page.locator("#review-version")).to_have_value("3")
    other_tab.bring_to_front()
    other_tab.locator("input[name=overall][value='2']").focus()
    other_tab.keyboard.press("Space")
    expect(other_tab.locator("#save-status")).to_contain_text(
        "Not saved — this review was changed in another tab or window. Reload the page"
    )
    assert Review.objects.get(assignment=assignment).overall == 5


def test_an_answer_saved_on_its_own_is_marked_saved_in_the_browser(live_server, page):
    """The browser keeps an answer until the save that carries it succeeds. The copy must then be marked saved, also
    when that save was sent at once (nothing in flight), not only when it waited behind another save."""
    from playwright.sync_api import expect

    reviewer = factories.make_user("reviewer", username="rev-lee")
    proposal = factories.make_proposal(statement="Caloric restriction delays thymic involution in aged mice.")
    cohort = factories.make_cohort([proposal], name="Thymus", status=Cohort.Status.OPEN)
    assignment = factories.make_assignment(cohort, reviewer, proposal)
    page.goto(f"{live_server.url}/accounts/login/")
    page.keyboard.type("rev-lee")
    page.keyboard.press("Tab")
    page.keyboard.type("pw-for-tests-1")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{live_server.url}/review/")
    page.goto(f"{live_server.url}/review/{assignment.pk}/")
    wait_for_focus(page, "overall")
    page.keyboard.press("3")
    expect(page.locator("#save-status")).to_contain_text("Saved")
    wait_until_saved(page, assignment.pk)
    assert Review.objects.get(assignment=assignment).overall == 3


def test_a_control_character_in_a_comment_is_refused_and_the_draft_is_kept_in_the_browser(live_server, page):
    """A comment holding a control character (pasted from another program) is not saved: the indicator says which
    character and where, the text stays in the box and in the browser's copy, and a reload brings it back."""
    from playwright.sync_api import expect

    reviewer = factories.make_user("reviewer", username="rev-ada")
    proposal = factories.make_proposal(statement="Young plasma restores hippocampal neurogenesis in aged mice.")
    assignment = factories.make_assignment(
        factories.make_cohort([proposal], status=Cohort.Status.OPEN), reviewer, proposal
    )
    page.goto(f"{live_server.url}/accounts/login/?next=/review/{assignment.pk}/")
    page.fill("input[name=username]", "rev-ada")
    page.fill("input[name=password]", "pw-for-tests-1")
    page.keyboard.press("Enter")
    wait_for_focus(page, "overall")
    page.keyboard.press("3")
    expect(page.locator("#save-status")).to_contain_text("Saved")

    typed = "Dose\u0007 per arm is unclear."
    page.evaluate(
        """text => {
            const box = document.querySelector('textarea[name=comments]');
            box.value = text;
            box.dispatchEvent(new Event('input', { bubbles: true }));
        }""",
        typed,
    )
    refused = "Not saved — Comments holds the control character U+0007 at character 5"
    expect(page.locator("#save-status")).to_contain_text(refused)
    expect(page.locator("textarea[name=comments]")).to_have_value(typed)
    kept = page.evaluate(f"JSON.parse(localStorage.getItem('open-hypothesis:review-draft:{assignment.pk}'))")
    assert kept["dirty"] and kept["fields"]["comments"] == typed

    page.reload()
    expect(page.locator("textarea[name=comments]")).to_have_value(typed)
    expect(page.locator("#save-status")).to_contain_text(refused)
    review = Review.objects.get(assignment=assignment)
    assert (review.overall, review.comments) == (3, "")

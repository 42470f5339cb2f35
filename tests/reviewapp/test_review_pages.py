import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils.html import escape

from reviewapp import protocol
from reviewapp.models import Cohort, Review
from reviewapp.services.reviews import review_save, review_submit
from tests import factories

HTMX = {"HX-Request": "true"}
HEAD = {"overall": "4", "recommendation": "prioritize"}
CRITERIA = dict(zip(protocol.CRITERION_FIELDS, ["3", "2", protocol.CANT_JUDGE, "4", "1", "3"], strict=True))
COMPLETE = HEAD | CRITERIA | {"flaw_verdict": "absent"}
# COMPLETE as the review form's input declaration types it, for the services.
COMPLETE_VALUES = COMPLETE | {"overall": 4}


def make_queue(reviewer, count, status=Cohort.Status.OPEN, name=None):
    proposals = [factories.make_proposal() for _ in range(count)]
    cohort = factories.make_cohort(proposals, status=status, **({"name": name} if name else {}))
    return [factories.make_assignment(cohort, reviewer, proposal) for proposal in proposals]


def page_url(assignment):
    return reverse("review-page", args=[assignment.pk])


def post(client, assignment, action="save", version=0, htmx=True, shown=(), **answers):
    data = {"action": action, "version": version, "shown": list(shown), **answers}
    return client.post(page_url(assignment), data, headers=HTMX if htmx else {})


@pytest.fixture
def reviewer_client(client, reviewer):
    client.force_login(reviewer)
    return client


# ---- Access ----


def test_anonymous_visitors_are_sent_to_log_in(client, reviewer):
    [assignment] = make_queue(reviewer, 1)
    for url in (reverse("review-queue"), page_url(assignment)):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/?next=")


def test_a_background_save_after_the_session_expired_is_told_so(client, reviewer):
    [assignment] = make_queue(reviewer, 1)
    response = post(client, assignment, overall="3")
    assert response.status_code == 401
    assert "your session expired" in response.content.decode()
    assert not Review.objects.exists()


@pytest.mark.parametrize("role", ["coordinator", "analyst"])
def test_people_without_the_reviewer_role_are_refused(client, reviewer, role):
    [assignment] = make_queue(reviewer, 1)
    client.force_login(factories.make_user(role))
    assert client.get(reverse("review-queue")).status_code == 403
    assert client.get(page_url(assignment)).status_code == 403


def test_another_reviewers_assignment_is_not_found(reviewer_client, other_reviewer):
    [theirs] = make_queue(other_reviewer, 1)
    assert reviewer_client.get(page_url(theirs)).status_code == 404
    assert post(reviewer_client, theirs, overall="1").status_code == 404
    assert not Review.objects.exists()


def test_a_draft_cohort_is_invisible_to_its_reviewers(reviewer_client, reviewer):
    [hidden] = make_queue(reviewer, 1, status=Cohort.Status.DRAFT, name="Not yet open")
    response = reviewer_client.get(reverse("review-queue"))
    assert "Not yet open" not in response.content.decode()
    assert response.context["queue"].total == 0
    assert reviewer_client.get(page_url(hidden)).status_code == 404


# ---- Queue ----


def test_the_queue_follows_cohort_age_then_the_reviewers_own_order(reviewer_client, reviewer):
    older = factories.make_cohort(name="Older", status=Cohort.Status.OPEN)
    newer = factories.make_cohort(name="Newer", status=Cohort.Status.OPEN)
    made = {}
    for cohort, positions in ((newer, [2, 1]), (older, [3, 1, 2])):
        for position in positions:
            proposal = factories.make_proposal(statement=f"{cohort.name} claim at position {position}.")
            made[(cohort.name, position)] = factories.make_assignment(cohort, reviewer, proposal, position=position)
    html = reviewer_client.get(reverse("review-queue")).content.decode()
    expected = [("Older", 1), ("Older", 2), ("Older", 3), ("Newer", 1), ("Newer", 2)]
    links = re.findall(r'href="/review/(\d+)/"', html.split("<table", 1)[1])
    assert links == [str(made[key].pk) for key in expected]


def test_the_queue_shows_progress_and_each_status(reviewer_client, reviewer):
    submitted, draft, deferred, untouched = make_queue(reviewer, 4)
    review_submit(assignment=submitted, reviewer=reviewer, answers=COMPLETE_VALUES, version=0)
    review_save(assignment=draft, reviewer=reviewer, answers={"overall": 2}, version=0)
    post(reviewer_client, deferred, action="defer", htmx=False, deferred_reason="Conflict of interest.")
    response = reviewer_client.get(reverse("review-queue"))
    html = response.content.decode()
    assert "<strong>1 of 4</strong> submitted" in html
    assert 'style="width: 25%"' in html
    statuses = [item.status_label for item in response.context["queue"].items]
    assert statuses == ["Submitted", "Draft", "Deferred", "Not started"]


def test_continue_goes_to_the_most_recently_saved_draft(reviewer_client, reviewer):
    first, second, third = make_queue(reviewer, 3)
    review_save(assignment=second, reviewer=reviewer, answers={"overall": 2}, version=0)
    review_save(assignment=first, reviewer=reviewer, answers={"overall": 2}, version=0)
    html = reviewer_client.get(reverse("review-queue")).content.decode()
    assert f'id="continue-link" href="{page_url(first)}"' in html


def test_continue_goes_to_the_first_not_started_when_there_is_no_draft(reviewer_client, reviewer):
    first, second, third = make_queue(reviewer, 3)
    review_submit(assignment=first, reviewer=reviewer, answers=COMPLETE_VALUES, version=0)
    html = reviewer_client.get(reverse("review-queue")).content.decode()
    assert f'id="continue-link" href="{page_url(second)}"' in html


def test_when_only_skipped_proposals_are_left_the_queue_says_so(reviewer_client, reviewer):
    done, skipped = make_queue(reviewer, 2)
    review_submit(assignment=done, reviewer=reviewer, answers=COMPLETE_VALUES, version=0)
    post(reviewer_client, skipped, action="defer", htmx=False, deferred_reason="Outside my field.")
    response = reviewer_client.get(reverse("review-queue"))
    assert response.context["queue"].continue_item is None
    assert "Only the 1 proposal you skipped is left" in response.content.decode()


def test_a_closed_cohort_is_listed_read_only(reviewer_client, reviewer):
    [closed] = make_queue(reviewer, 1, status=Cohort.Status.CLOSED, name="Finished cohort")
    Review.objects.create(assignment=closed, overall=2)  # a draft left when the cohort closed
    response = reviewer_client.get(reverse("review-queue"))
    assert [item.status_label for item in response.context["queue"].items] == ["Closed"]
    assert response.context["queue"].continue_item is None
    assert "read only</span>" in response.content.decode()
    page = reviewer_client.get(page_url(closed)).content.decode()
    assert "This cohort is closed" in page and "Draft, not submitted" in page
    assert "<form" not in page.split("<main", 1)[1] and "hx-post" not in page
    assert "<strong>2 · Low priority</strong>" in page
    assert post(reviewer_client, closed, overall="3").status_code == 409


def test_each_cohort_of_the_queue_is_numbered_on_its_own(reviewer_client, reviewer):
    older = make_queue(reviewer, 3, name="Older")
    newer = make_queue(reviewer, 2, name="Newer")
    queue = reviewer_client.get(reverse("review-queue")).context["queue"]
    assert [(item.cohort_name, item.number, item.cohort_total) for item in queue.items] == [
        ("Older", 1, 3),
        ("Older", 2, 3),
        ("Older", 3, 3),
        ("Newer", 1, 2),
        ("Newer", 2, 2),
    ]
    assert "Proposal 2 of 2" in reviewer_client.get(page_url(newer[1])).content.decode()
    assert "Proposal 3 of 3" in reviewer_client.get(page_url(older[2])).content.decode()
    review_submit(assignment=older[0], reviewer=reviewer, answers=COMPLETE_VALUES, version=0)
    html = reviewer_client.get(reverse("review-queue")).content.decode()
    assert "Proposal 2 of 3 in Older" in html


def test_a_submitted_review_opens_read_only_with_every_answer(reviewer_client, reviewer):
    [assignment] = make_queue(reviewer, 1)
    answers = COMPLETE_VALUES | {"flaw_verdict": "fixable", "flaw_checklist": [protocol.FLAW_CHECKLIST_KEYS[1]]}
    review_submit(
        assignment=assignment, reviewer=reviewer, answers={**answers, "comments": "Worth a pilot."}, version=0
    )
    html = reviewer_client.get(page_url(assignment)).content.decode()
    main = html.split("<main", 1)[1]
    assert (
        "This review is submitted and locked" in main
        and 'id="summary-title" class="summary-title">Your answers' in main
    )
    assert 'type="radio"' not in main and "<textarea" not in main and "hx-post" not in main
    assert "Skip this proposal" not in main and 'id="key-legend"' not in main
    overall_label, overall_anchor = protocol.OVERALL_SCALE[3][1:]
    assert f"<strong>4 · {overall_label}</strong> — {overall_anchor}" in main
    for field, label, _prompt, anchors in protocol.CRITERIA:
        value = CRITERIA[field]
        shown = (
            f"<strong>{escape(protocol.CANT_JUDGE_LABEL)}</strong>"
            if value == protocol.CANT_JUDGE
            else (f"<strong>{value}</strong> — {anchors[int(value) - 1]}")
        )
        assert f"<dt>{label}</dt><dd>{shown}" in main, label
    assert dict(protocol.FLAW_CHECKLIST)[protocol.FLAW_CHECKLIST_KEYS[1]] in main
    assert "Worth a pilot." in main and "none written" in main  # comments given, no main flaw


# ---- Review page and form ----


def test_the_page_shows_the_packet_and_the_first_two_questions(reviewer_client, reviewer):
    task = factories.make_task(question="Does rapamycin slow ovarian ageing?", background="Mice, 12 months.")
    proposal = factories.make_proposal(task=task, statement="Rapamycin preserves follicles.", mechanism="mTORC1.")
    cohort = factories.make_cohort([proposal], status=Cohort.Status.OPEN, name="Ovary")
    assignment = factories.make_assignment(cohort, reviewer, proposal)
    html = reviewer_client.get(page_url(assignment)).content.decode()
    shown = ("Does rapamycin slow ovarian ageing?", "Mice, 12 months.", "Rapamycin preserves follicles.", "mTORC1.")
    assert all(text in html for text in shown)
    assert "Proposal 1 of 1" in html
    for _value, label, anchor in protocol.OVERALL_SCALE:
        assert label in html and anchor in html
    for _key, label, anchor in protocol.RECOMMENDATIONS:
        assert label in html and anchor in html
    assert html.index('data-question="overall"') < html.index('data-question="recommendation"')
    assert "Ctrl</kbd>+<kbd>Enter</kbd> submit" in html


def test_criteria_stay_hidden_until_overall_and_recommendation_are_recorded(reviewer_client, reviewer):
    [assignment] = make_queue(reviewer, 1)
    assert 'data-question="importance"' not in reviewer_client.get(page_url(assignment)).content.decode()

    response = post(reviewer_client, assignment, overall="4")
    assert response.status_code == 200
    assert 'data-question="importance"' not in response.content.decode()
    assert 'data-question="importance"' not in reviewer_client.get(page_url(assignment)).content.decode()

    response = post(reviewer_client, assignment, version=1, recommendation="revise")
    swapped_in = response.content.decode()
    assert 'id="criteria-section" class="criteria" hx-swap-oob="true"' in swapped_in
    for field, label, prompt, anchors in protocol.CRITERIA:
        assert f'data-question="{field}"' in swapped_in
        assert label in swapped_in and prompt in swapped_in
        assert all(anchor in swapped_in for anchor in anchors)
    assert swapped_in.count('value="cant_judge"') == len(protocol.CRITERIA)

    page = reviewer_client.get(page_url(assignment)).content.decode()
    assert page.index('data-question="recommendation"') < page.index('data-question="importance"')
    assert page.index('data-question="informative_results"') < page.index('data-question="flaw_verdict"')


def test_a_later_save_does_not_swap_in_the_criteria_again(reviewer_client, reviewer):
    [assignment] = make_queue(reviewer, 1)
    post(reviewer_client, assignment, **HEAD)
    response = post(reviewer_client, assignment, version=1, shown=["criteria"], importance="2")
    assert "criteria-section" not in response.content.decode()


def test_the_flaw_checklist_appears_only_after_a_flaw_is_declared(reviewer_client, reviewer):
    [assignment] = make_queue(reviewer, 1)
    response = post(reviewer_client, assignment, flaw_verdict="absent")
    assert 'name="flaw_checklist"' not in response.content.decode()
    assert 'name="flaw_checklist"' not in reviewer_client.get(page_url(assignment)).content.decode()

    response = post(reviewer_client, assignment, version=1, flaw_verdict="fatal")
    swapped_in = response.content.decode()
    assert 'id="checklist-section" hx-swap-oob="true"' in swapped_in
    assert all(label in swapped_in for _key, label in protocol.FLAW_CHECKLIST)

    post(reviewer_client, assignment, version=2, shown=["checklist"], flaw_checklist=["power", "measurement"])
    page = reviewer_client.get(page_url(assignment)).content.decode()
    assert 'value="power" checked' in page and 'value="measurement" checked' in page

    response = post(reviewer_client, assignment, version=3, shown=["checklist"], flaw_verdict="absent")
    assert 'id="checklist-section" hx-swap-oob="true"' in response.content.decode()
    assert 'name="flaw_checklist"' not in response.content.decode()
    assert Review.objects.get().flaw_checklist == []


def test_unticking_every_checklist_box_empties_it(reviewer_client, reviewer):
    [assignment] = make_queue(reviewer, 1)
    post(reviewer_client, assignment, flaw_verdict="fixable")
    post(reviewer_client, assignment, version=1, shown=["checklist"], flaw_checklist=["power"])
    post(reviewer_client, assignment, version=2, shown=["checklist"])
    assert Review.objects.get().flaw_checklist == []


def test_a_save_answers_with_the_time_and_the_new_version(reviewer_client, reviewer):
    [assignment] = make_queue(reviewer, 1)
    response = post(reviewer_client, assignment, overall="2")
    html = response.content.decode()
    assert re.search(r'<span class="saved">Saved <time class="local-time" datetime="[^"]+">\d\d:\d\d:\d\d</time>', html)
    assert 'id="review-version" value="1" hx-swap-oob="true"' in html


def test_the_page_dates_its_answers_by_when_they_were_edited_not_when_the_save_arrived(reviewer_client, reviewer):
    """The page's script keeps the browser's copy of the answers when it is newer than the server's. A save sent
    before the last keystrokes may arrive after them (a slow request, a reload): compared with its arrival, the
    browser's newer copy would look older and be dropped. So the page gives the edit time the save carried."""
    [assignment] = make_queue(reviewer, 1)
    edited = 1_700_000_000_000
    sent = {"action": "save", "version": 0, "overall": "2", "client": "tab-1", "edited_at": str(edited)}
    assert reviewer_client.post(page_url(assignment), sent, headers=HTMX).status_code == 200
    page = reviewer_client.get(page_url(assignment)).content.decode()
    assert f'data-server-edited="{edited}"' in page
    # A save without the script (no edit time) is dated by its arrival.
    post(reviewer_client, assignment, version=1, htmx=False, overall="3")
    saved = Review.objects.get().last_saved_at
    page = reviewer_client.get(page_url(assignment)).content.decode()
    assert f'data-server-edited="{int(saved.timestamp() * 1000)}"' in page


def test_a_stale_save_answers_409_and_tells_the_reviewer_to_reload(reviewer_client, reviewer):
    [assignment] = make_queue(reviewer, 1)
    assert post(reviewer_client, assignment, overall="2").status_code == 200
    response = post(reviewer_client, assignment, version=0, overall="5")  # a second tab, still at version 0
    assert response.status_code == 409
    html = response.content.decode()
    assert "Not saved — this review was changed in another tab" in html and "Reload" in html
    assert response["HX-Retarget"] == "#save-status"
    assert Review.objects.get().overall == 2


def test_an_out_of_scale_value_is_not_saved_and_says_why(reviewer_client, reviewer):
    [assignment] = make_queue(reviewer, 1)
    response = post(reviewer_client, assignment, overall="9")
    assert response.status_code == 422
    assert "Not saved — Overall research value must be a whole number from 1 to 5" in response.content.decode()


def test_a_control_character_in_a_background_save_is_not_saved_and_says_why(reviewer_client, reviewer):
    [assignment] = make_queue(reviewer, 1)
    response = post(reviewer_client, assignment, overall="2", comments="Too few\x00 animals.")
    assert response.status_code == 422 and response["HX-Retarget"] == "#save-status"
    assert (
        "Not saved — Comments holds the control character U+0000 at character 8; remove it" in response.content.decode()
    )
    assert not Review.objects.exists()


@pytest.mark.parametrize("action", ["save", "submit"])
def test_a_control_character_sent_without_javascript_comes_back_with_every_answer_kept(
    reviewer_client, reviewer, action
):
    """Nothing is saved, and the page sent back holds what was typed, the answers chosen and the reason at the
    field, so the draft is not lost."""
    [assignment] = make_queue(reviewer, 1)
    response = post(
        reviewer_client,
        assignment,
        action=action,
        htmx=False,
        **HEAD,
        main_flaw="Too few animals\x1b per arm.",
        comments="Worth a pilot.",
    )
    assert response.status_code == 422
    html = response.content.decode()
    assert "Not saved — The main flaw holds the control character U+001B" in html
    assert 'id="error-main_flaw"' in html and "Not submitted" not in html
    assert ">Too few animals\x1b per arm.</textarea>" in html and ">Worth a pilot.</textarea>" in html
    assert re.search(r'name="overall" value="4" data-key="4" checked', html)
    assert not Review.objects.exists()


def test_a_refused_reason_for_skipping_stays_in_its_box(reviewer_client, reviewer):
    [assignment] = make_queue(reviewer, 1)
    response = post(reviewer_client, assignment, action="defer", htmx=False, deferred_reason="I know\x07 them.")
    assert response.status_code == 422
    html = response.content.decode()
    assert "The reason holds the control character U+0007" in html
    assert ">I know\x07 them.</textarea>" in html
    assignment.refresh_from_db()
    assert assignment.deferred_at is None


def test_an_incomplete_submission_marks_the_missing_questions(reviewer_client, reviewer):
    [assignment] = make_queue(reviewer, 1)
    response = post(reviewer_client, assignment, action="submit", **HEAD, importance="2")
    assert response.status_code == 422
    assert (response["HX-Retarget"], response["HX-Reswap"]) == ("#review-form", "outerHTML")
    html = response.content.decode()
    assert "Not submitted — answer the questions marked in the form" in html
    for field in set(protocol.CRITERION_FIELDS) - {"importance"}:
        assert re.search(rf'data-question="{field}" aria-describedby="error-{field}"', html)
    assert 'id="error-flaw_verdict"' in html and 'id="error-importance"' not in html
    review = Review.objects.get()
    assert (review.status, review.overall, review.importance) == (Review.Status.DRAFT, 4, "2")


def test_submitting_locks_the_review_and_opens_the_next_one(reviewer_client, reviewer):
    first, second, third = make_queue(reviewer, 3)
    response = post(reviewer_client, first, action="submit", **COMPLETE)
    assert response.status_code == 200
    assert response["HX-Redirect"] == page_url(second)
    assert Review.objects.get(assignment=first).status == Review.Status.SUBMITTED
    page = reviewer_client.get(page_url(first)).content.decode()
    assert "This review is submitted and locked" in page
    assert post(reviewer_client, first, version=1, overall="1").status_code == 409


def test_submitting_without_javascript_redirects_and_the_last_one_returns_to_the_queue(reviewer_client, reviewer):
    first, second = make_queue(reviewer, 2)
    review_submit(assignment=second, reviewer=reviewer, answers=COMPLETE_VALUES, version=0)
    response = post(reviewer_client, first, action="submit", htmx=False, **HEAD)
    assert response.status_code == 422
    assert "Not submitted — answer the questions marked in the form" in response.content.decode()
    assert 'id="error-flaw_verdict"' in response.content.decode()
    response = post(reviewer_client, first, action="submit", version=1, htmx=False, **COMPLETE)
    assert response.status_code == 302
    assert response["Location"] == reverse("review-queue")


def test_a_skipped_proposal_records_the_reason_and_moves_on(reviewer_client, reviewer):
    first, second = make_queue(reviewer, 2)
    response = post(reviewer_client, first, action="defer", htmx=False, deferred_reason="I know the authors.")
    assert response.status_code == 302 and response["Location"] == page_url(second)
    first.refresh_from_db()
    assert first.deferred_reason == "I know the authors."
    response = post(reviewer_client, second, action="defer", htmx=False, deferred_reason="")
    assert response.status_code == 422
    assert "Say why you are skipping" in response.content.decode()


# ---- Constant query counts ----


def count_queries(func) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = func()
    assert response.status_code in (200, 302)
    return len(queries)


@pytest.mark.parametrize("page", ["queue", "review page", "save", "submit"])
def test_reviewer_pages_run_a_constant_number_of_queries(db, client, page, django_assert_max_num_queries):
    counts = []
    for size in (5, 50):
        reviewer = factories.make_user("reviewer")
        assignments = make_queue(reviewer, size)
        for done in assignments[: size // 2]:
            review_save(assignment=done, reviewer=reviewer, answers={"overall": 3}, version=0)
        client.force_login(reviewer)
        target = assignments[-1]
        requests = {
            "queue": lambda: client.get(reverse("review-queue")),
            "review page": lambda target=target: client.get(page_url(target)),
            "save": lambda target=target: post(client, target, overall="3"),
            "submit": lambda target=target: post(client, target, action="submit", **COMPLETE),
        }
        with django_assert_max_num_queries(10):
            counts.append(count_queries(requests[page]))
    assert counts[0] == counts[1]

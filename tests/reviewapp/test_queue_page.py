"""The queue's per-item work done before the template: the review page's link and the statement's excerpt are what
`{% url %}` and `truncatechars:140` gave, and the page takes the same number of queries for any queue length."""

import pytest
from django.db import connection
from django.template.defaultfilters import truncatechars
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from reviewapp import protocol
from reviewapp.models import Review
from reviewapp.selectors.reviews import SHOWN_EXCERPT, reviewer_queue, shown_excerpt
from reviewapp.services.reviews import review_reopen, review_submit
from tests import factories

TEXTS = [
    "",
    "Short.",
    "x" * SHOWN_EXCERPT,
    "x" * (SHOWN_EXCERPT + 1),
    "Raising factor 7 in muscle delays frailty. " * 6,
    "β-catenin in aged mice " * 8,
    "Cafe\u0301 combining accents " * 7,  # combining characters do not count, and NFC composes them
    "\u212b ångström sign " * 10,  # NFC changes the character itself
]


@pytest.mark.parametrize("text", TEXTS)
def test_the_excerpt_is_the_one_truncatechars_gives(text):
    assert shown_excerpt(text) == truncatechars(text, SHOWN_EXCERPT)


@pytest.mark.django_db
def test_queue_items_link_to_their_review_page_and_show_the_excerpt(client, reviewer):
    cohort = factories.make_cohort(status="open")
    for text in TEXTS[1:]:
        proposal = factories.make_proposal(statement=text or "x")
        cohort.proposals.add(proposal)
        factories.make_assignment(cohort, reviewer, proposal)

    items = reviewer_queue(reviewer=reviewer).items
    assert [item.url for item in items] == [reverse("review-page", args=[item.assignment_id]) for item in items]
    client.force_login(reviewer)
    page = client.get(reverse("review-queue")).content.decode()
    for item in items:
        assert f'href="{item.url}"' in page
    assert truncatechars(TEXTS[4], SHOWN_EXCERPT) in page


@pytest.mark.django_db
def test_the_queue_page_takes_the_same_queries_for_any_length(client, reviewer, other_reviewer):
    cohort = factories.make_cohort(status="open")
    for user, count in ((reviewer, 2), (other_reviewer, 40)):
        for _ in range(count):
            proposal = factories.make_proposal()
            cohort.proposals.add(proposal)
            factories.make_assignment(cohort, user, proposal)
    counts = []
    for user in (reviewer, other_reviewer):
        client.force_login(user)
        client.get(reverse("review-queue"))
        with CaptureQueriesContext(connection) as queries:
            assert client.get(reverse("review-queue")).status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1]


@pytest.mark.django_db
def test_the_rows_escape_every_text_and_mark_closed_cohorts_read_only(client, reviewer):
    open_cohort = factories.make_cohort(status="open", name="Spring <panel> & co")
    closed = factories.make_cohort(status="closed", name="Winter")
    statements = ['Tags <b>"quoted"</b> & more', "β-catenin " * 20, "Plain."]
    for cohort, texts in ((open_cohort, statements), (closed, statements[:1])):
        for text in texts:
            proposal = factories.make_proposal(statement=text)
            cohort.proposals.add(proposal)
            factories.make_assignment(cohort, reviewer, proposal)
    client.force_login(reviewer)
    page = client.get(reverse("review-queue")).content.decode()
    assert "Spring &lt;panel&gt; &amp; co" in page and "<panel>" not in page
    assert "Tags &lt;b&gt;&#34;quoted&#34;&lt;/b&gt; &amp; more" in page and "<b>" not in page  # Jinja2's escaping
    assert page.count('class="cohort-row"') == 2 and page.count("closed · read only") == 1
    assert page.count('<span class="muted read-only">read only</span>') == 1  # the closed cohort's one item


@pytest.mark.django_db
def test_a_reviewer_is_told_which_reviews_a_coordinator_reopened(client, reviewer, coordinator):
    proposals = [factories.make_proposal(statement=f"Statement {n}.") for n in range(3)]
    cohort = factories.make_cohort(proposals, status="open")
    assignments = [factories.make_assignment(cohort, reviewer, proposal) for proposal in proposals]
    complete = {
        "overall": 3,
        "recommendation": "revise",
        **dict.fromkeys(protocol.CRITERION_FIELDS, "2"),
        "flaw_verdict": "absent",
    }
    for assignment in assignments[:2]:
        review_submit(assignment=assignment, reviewer=reviewer, answers=complete, version=0)
    client.force_login(reviewer)
    assert "reopened" not in client.get(reverse("review-queue")).content.decode()

    review_reopen(review=Review.objects.get(assignment=assignments[0]), user=coordinator)
    queue = reviewer_queue(reviewer=reviewer)
    assert [item.reopened for item in queue.items] == [True, False, False]
    page = client.get(reverse("review-queue")).content.decode()
    assert "A coordinator reopened 1 of the reviews you" in page and "it is a draft" in page
    assert page.count('status-badge reopened">reopened<') == 1

    # Submitted again, it is no longer pointed out.
    review = Review.objects.get(assignment=assignments[0])
    review_submit(assignment=assignments[0], reviewer=reviewer, answers=complete, version=review.version)
    assert "reopened" not in client.get(reverse("review-queue")).content.decode()

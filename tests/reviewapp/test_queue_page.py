"""The queue's per-item work done before the template: the review page's link and the statement's excerpt are what
`{% url %}` and `truncatechars:140` gave, and the page takes the same number of queries for any queue length."""

import pytest
from django.db import connection
from django.template import engines
from django.template.defaultfilters import truncatechars
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from reviewapp.models import Assignment
from reviewapp.selectors.reviews import SHOWN_EXCERPT, reviewer_queue, shown_excerpt
from reviewapp.services.reviews import review_save
from reviewapp.views.review import _queue_rows
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


# The queue table's markup as the template wrote it before the rows were formatted in Python.
TEMPLATE_ROWS = """{% regroup queue.items by cohort_name as cohorts %}{% for cohort in cohorts %}<tbody>
<tr class="cohort-row"><th colspan="3" scope="colgroup">{{ cohort.grouper }} <span class="muted">· {{ cohort.list|length }} proposal{{ cohort.list|length|pluralize }}</span>{% if not cohort.list.0.editable %} <span class="badge">closed · read only</span>{% endif %}</th></tr>
{% for item in cohort.list %}<tr class="status-{{ item.status }}">
<td class="num">{{ item.number }}</td>
<td><a href="{{ item.url }}">{{ item.shown_excerpt }}</a></td>
<td><span class="badge status-badge {{ item.status }}">{{ item.status_label }}</span>{% if item.status == 'submitted' or item.status == 'closed' %} <span class="muted read-only">read only</span>{% endif %}</td>
</tr>
{% endfor %}</tbody>
{% endfor %}"""  # noqa: E501


@pytest.mark.django_db
def test_the_rows_are_the_markup_the_template_gave(reviewer):
    open_cohort = factories.make_cohort(status="open", name="Spring <panel> & co")
    closed = factories.make_cohort(status="closed", name="Winter")
    statements = ['Tags <b>"quoted"</b> & more', "β-catenin " * 20, "Plain."]
    for cohort, texts in ((open_cohort, statements), (closed, statements[:1])):
        for text in texts:
            proposal = factories.make_proposal(statement=text)
            cohort.proposals.add(proposal)
            factories.make_assignment(cohort, reviewer, proposal)
    first = reviewer_queue(reviewer=reviewer).items[0]
    review_save(
        assignment=Assignment.objects.get(pk=first.assignment_id), reviewer=reviewer, data={"overall": "3"}, version=0
    )

    queue = reviewer_queue(reviewer=reviewer)
    assert {item.status for item in queue.items} >= {"draft", "not_started", "closed"}
    expected = engines["django"].from_string(TEMPLATE_ROWS).render({"queue": queue})
    assert _queue_rows(queue) == expected

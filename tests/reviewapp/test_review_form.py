"""The review form's questions are built once per process from the protocol (functools.cache) and rendered for each
request with its reviewer's answers: each answer checks its own radio, an error is shown escaped at its question, a
changed definition is rendered once the built questions are dropped, and no reviewer's answers reach another
reviewer's page."""

import re

import pytest
from django.template.loader import render_to_string
from django.urls import reverse

from reviewapp import protocol
from reviewapp.services.reviews import review_save
from reviewapp.views.review import Question, form_questions
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("error", ["", "Answer this question <before> submitting."])
def test_each_answer_checks_its_own_radio_and_an_error_is_shown_at_its_question(error):
    questions = form_questions()
    for form in (*questions.head, *questions.criteria, questions.flaw_verdict):
        for answer in ("", *(option.value for option in form.options)):
            html = render_to_string("reviewapp/_question.html", {"q": Question(form=form, answer=answer, error=error)})
            checked = re.findall(r'<input type="radio" name="(\w+)" value="(\w+)" data-key="\w" checked>', html)
            assert checked == ([(form.name, answer)] if answer else [])
            assert html.count('type="radio"') == len(form.options)
            if error:
                assert 'class="question has-error"' in html and f'aria-describedby="error-{form.name}"' in html
                assert "Answer this question &lt;before&gt; submitting." in html and "<before>" not in html
            else:
                assert "has-error" not in html and "aria-describedby" not in html


def radios_checked(html: str) -> dict[str, str]:
    return dict(re.findall(r'<input type="radio" name="(\w+)" value="(\w+)" data-key="\w" checked>', html))


def test_a_changed_form_definition_is_rendered_once_the_built_questions_are_dropped(client, reviewer, monkeypatch):
    proposal = factories.make_proposal()
    assignment = factories.make_assignment(factories.make_cohort([proposal], status="open"), reviewer, proposal)
    client.force_login(reviewer)
    url = reverse("review-page", args=[assignment.pk])
    assert "Not worth pursuing" in client.get(url).content.decode()

    changed = [(1, "Leave it", "Spend nothing on it."), *protocol.OVERALL_SCALE[1:]]
    monkeypatch.setattr(protocol, "OVERALL_SCALE", changed)
    # The protocol's constants do not change while a process runs; a test that changes them drops the built questions.
    form_questions.cache_clear()
    try:
        page = client.get(url).content.decode()
    finally:
        form_questions.cache_clear()  # the next page builds them from the protocol as it is restored
    assert "Leave it" in page and "Spend nothing on it." in page
    assert "Not worth pursuing" not in page


def test_one_reviewers_answers_never_reach_another_reviewers_page(client, reviewer, other_reviewer):
    proposal = factories.make_proposal()
    cohort = factories.make_cohort([proposal], status="open")
    mine = factories.make_assignment(cohort, reviewer, proposal)
    theirs = factories.make_assignment(cohort, other_reviewer, proposal)
    answers = {"overall": "4", "recommendation": "prioritize", "importance": "3", "flaw_verdict": "fixable"}
    review_save(
        assignment=mine, reviewer=reviewer, answers={**answers, "overall": 4, "comments": "My own remark."}, version=0
    )

    client.force_login(reviewer)
    my_page = client.get(reverse("review-page", args=[mine.pk])).content.decode()
    assert radios_checked(my_page) == answers
    client.force_login(other_reviewer)
    their_page = client.get(reverse("review-page", args=[theirs.pk])).content.decode()
    assert radios_checked(their_page) == {}
    assert "My own remark." not in their_page

    review_save(
        assignment=theirs, reviewer=other_reviewer, answers={"overall": 2, "recommendation": "reject"}, version=0
    )
    their_page = client.get(reverse("review-page", args=[theirs.pk])).content.decode()
    assert radios_checked(their_page) == {"overall": "2", "recommendation": "reject"}
    client.force_login(reviewer)
    assert radios_checked(client.get(reverse("review-page", args=[mine.pk])).content.decode()) == answers

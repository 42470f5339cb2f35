"""The review form's questions are rendered once per process for each definition of the protocol's form, and each
request puts its own reviewer's answers in: the markup is the one the template gave, a changed definition is rendered
anew, and no reviewer's answers reach another reviewer's page."""

import re

import pytest
from django.template import engines
from django.urls import reverse

from reviewapp import protocol
from reviewapp.services.reviews import review_save
from reviewapp.views.review import Question, form_questions
from tests import factories

pytestmark = pytest.mark.django_db

# A question's markup as the review page's template wrote it for each request before it was rendered once.
TEMPLATE_QUESTION = """<fieldset class="question{% if q.error %} has-error{% endif %}" id="q-{{ q.name }}" data-question="{{ q.name }}"{% if q.error %} aria-describedby="error-{{ q.name }}"{% endif %}>
  <legend>{{ q.label }}</legend>
  {% if q.prompt %}<p class="prompt">{{ q.prompt }}</p>{% endif %}
  {% if q.error %}<p class="error" id="error-{{ q.name }}">{{ q.error }}</p>{% endif %}
  <div class="options">
    {% for option in q.options %}
    <label class="option">
      <input type="radio" name="{{ q.name }}" value="{{ option.value }}" data-key="{{ option.key }}"{% if option.checked %} checked{% endif %}>
      <kbd>{{ option.key }}</kbd>
      <span class="option-text">{% if option.label %}<strong>{{ option.label }}</strong>{% endif %}{% if option.label and option.anchor %} · {% endif %}{% if option.anchor %}<span class="anchor">{{ option.anchor }}</span>{% endif %}</span>
    </label>
    {% endfor %}
  </div>
</fieldset>"""  # noqa: E501


@pytest.mark.parametrize("error", ["", "Answer this question <before> submitting."])
def test_each_answer_gives_the_markup_the_template_gave(error):
    questions = form_questions()
    template = engines["django"].from_string(TEMPLATE_QUESTION)
    for form in (*questions.head, *questions.criteria, questions.flaw_verdict):
        for answer in ("", *(option.value for option in form.options)):
            options = [
                {"value": o.value, "key": o.key, "label": o.label, "anchor": o.anchor, "checked": o.value == answer}
                for o in form.options
            ]
            q = {"name": form.name, "label": form.label, "prompt": form.prompt, "error": error, "options": options}
            expected = template.render({"q": q})
            assert Question(form=form, answer=answer, error=error).markup == expected


def radios_checked(html: str) -> dict[str, str]:
    return dict(re.findall(r'<input type="radio" name="(\w+)" value="(\w+)" data-key="\w" checked>', html))


def test_a_changed_form_definition_is_not_served_from_the_rendered_one(client, reviewer, monkeypatch):
    proposal = factories.make_proposal()
    assignment = factories.make_assignment(factories.make_cohort([proposal], status="open"), reviewer, proposal)
    client.force_login(reviewer)
    url = reverse("review-page", args=[assignment.pk])
    assert "Not worth pursuing" in client.get(url).content.decode()

    changed = [(1, "Leave it", "Spend nothing on it."), *protocol.OVERALL_SCALE[1:]]
    monkeypatch.setattr(protocol, "OVERALL_SCALE", changed)
    page = client.get(url).content.decode()
    assert "Leave it" in page and "Spend nothing on it." in page
    assert "Not worth pursuing" not in page


def test_one_reviewers_answers_never_reach_another_reviewers_page(client, reviewer, other_reviewer):
    proposal = factories.make_proposal()
    cohort = factories.make_cohort([proposal], status="open")
    mine = factories.make_assignment(cohort, reviewer, proposal)
    theirs = factories.make_assignment(cohort, other_reviewer, proposal)
    answers = {"overall": "4", "recommendation": "prioritize", "importance": "3", "flaw_verdict": "fixable"}
    review_save(assignment=mine, reviewer=reviewer, data={**answers, "comments": "My own remark."}, version=0)

    client.force_login(reviewer)
    my_page = client.get(reverse("review-page", args=[mine.pk])).content.decode()
    assert radios_checked(my_page) == answers
    client.force_login(other_reviewer)
    their_page = client.get(reverse("review-page", args=[theirs.pk])).content.decode()
    assert radios_checked(their_page) == {}
    assert "My own remark." not in their_page

    review_save(
        assignment=theirs, reviewer=other_reviewer, data={"overall": "2", "recommendation": "reject"}, version=0
    )
    their_page = client.get(reverse("review-page", args=[theirs.pk])).content.decode()
    assert radios_checked(their_page) == {"overall": "2", "recommendation": "reject"}
    client.force_login(reviewer)
    assert radios_checked(client.get(reverse("review-page", args=[mine.pk])).content.decode()) == answers

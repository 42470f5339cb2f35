"""The review form's questions on the review page: `{% review_question q %}` renders one question's fieldset with
the Jinja2 template templates/jinja2/reviewapp/_question.html.

The form repeats that fieldset for each of its nine questions and a label for each point of their scales (43 in
all) on every review page and autosave that reveals a section; Jinja2 renders them several times faster than
Django's template language. Jinja2 escapes every value (autoescape), so its output is marked safe as Django's own
widgets mark theirs."""

from django import template
from django.template import engines
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

QUESTION_TEMPLATE = "reviewapp/_question.html"


@register.simple_tag
def review_question(question) -> SafeString:
    """The fieldset of a `reviewapp.views.review.Question`."""
    return mark_safe(engines["jinja2"].get_template(QUESTION_TEMPLATE).render({"q": question}))

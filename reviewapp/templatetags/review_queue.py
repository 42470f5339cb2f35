"""The reviewer's queue table: `{% review_queue_table queue %}` renders it with the Jinja2 template
templates/jinja2/reviewapp/_queue_table.html.

The table has a row for each of the reviewer's assignments, a hundred or more in a cohort; Jinja2 renders that loop
several times faster than Django's template language. Jinja2 escapes every value (autoescape), so its output is
marked safe as Django's own widgets mark theirs."""

from django import template
from django.template import engines
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

QUEUE_TABLE_TEMPLATE = "reviewapp/_queue_table.html"


@register.simple_tag
def review_queue_table(queue) -> SafeString:
    """The table of a `reviewapp.selectors.reviews.ReviewQueue`."""
    return mark_safe(engines["jinja2"].get_template(QUEUE_TABLE_TEMPLATE).render({"queue": queue}))

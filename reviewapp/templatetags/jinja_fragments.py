"""`{% jinja_fragment "<template>" name=value … %}`: a fragment of a Django page rendered by the Jinja2 engine
(templates/jinja2/), for the two loops that Django's template language renders too slowly on every reviewer's
request: the review form's question fieldsets (a label for each point of the scales, 43 in all) and the reviewer's
queue table (a row for each assignment, a hundred or more in a cohort).

Jinja2's backend escapes every value (autoescape), so the fragment's output is marked safe, as Django marks its own
widgets' markup."""

from django import template
from django.template import engines
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


@register.simple_tag
def jinja_fragment(template_name: str, **context) -> SafeString:
    """The Jinja2 template `template_name` rendered with `context`."""
    return mark_safe(engines["jinja2"].get_template(template_name).render(context))

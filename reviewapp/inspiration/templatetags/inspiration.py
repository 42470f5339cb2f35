"""How the inspiration pages print a share: the percentage with one decimal, and always the counts beside it."""

from django import template

register = template.Library()


@register.simple_tag
def share(part: int, whole: int) -> str:
    """ "6.3% (74/1,176)"; "– (0/0)" when there is nothing to divide by."""
    counts = f"({part:,}/{whole:,})"
    return f"{100 * part / whole:.1f}% {counts}" if whole else f"– {counts}"

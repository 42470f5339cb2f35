"""Checks on text that people send: control characters are refused wherever text is stored.

PostgreSQL cannot store NUL in text and SQLite can, so a NUL would be stored on one database and a server error on
the other; the other control characters (all but tab, line feed and carriage return) are invisible on a page and in
a spreadsheet. Refusing them all keeps both databases identical and every value readable.
"""

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def control_character_problem(text: str) -> str | None:
    """A sentence naming the first control character in the text and where it is; None when there is none."""
    match = _CONTROL.search(text)
    if match is None:
        return None
    return (
        f"Holds the control character U+{ord(match.group()):04X} at character {match.start() + 1}; "
        "remove it (only tab and line breaks are allowed)."
    )

"""Defensive reading of model replies, for every caller of the model-calling layer. Native JSON mode is asked for
but never relied on: a reply may wrap its JSON in code fences or prose, and Python's json would silently keep the last
of duplicate keys, so duplicates are an error.
"""

import json
import re

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n?(.*?)```", re.DOTALL)
_LABEL = re.compile(r"^\[?\s*([A-Za-z]*\d+)\s*\]?$")
# Bounds the scan for JSON inside prose; a reply is a few kilobytes.
_MAX_START_POSITIONS = 200


class ReplyParseError(ValueError):
    """The reply holds no usable JSON. `kind` is "not_json" or "duplicate_key"."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class _DuplicateKey(ValueError):
    pass


def _reject_duplicate_keys(pairs):
    seen = {}
    for key, value in pairs:
        if key in seen:
            raise _DuplicateKey(key)
        seen[key] = value
    return seen


def _loads(text: str):
    return json.loads(text, object_pairs_hook=_reject_duplicate_keys)


def _raw_decode_from(text: str, start: int):
    return json.JSONDecoder(object_pairs_hook=_reject_duplicate_keys).raw_decode(text, start)[0]


def extract_json(text: str | None) -> object:
    """The JSON value in a reply: the whole text, else a fenced block, else the first JSON object or array in prose.

    Raises ReplyParseError when there is none, or when an object repeats a key (the answer would be ambiguous)."""
    if not text or not text.strip():
        raise ReplyParseError("not_json", "the reply is empty")
    candidates = [text.strip()] + [block.strip() for block in _FENCE.findall(text)]
    try:
        for candidate in candidates:
            try:
                return _loads(candidate)
            except json.JSONDecodeError:
                continue
        # Objects first: prose may hold bracketed asides such as "[1]" that happen to be JSON arrays.
        starts = [i for i, char in enumerate(text) if char == "{"][:_MAX_START_POSITIONS]
        starts += [i for i, char in enumerate(text) if char == "["][:_MAX_START_POSITIONS]
        for start in starts:
            try:
                return _raw_decode_from(text, start)
            except json.JSONDecodeError:
                continue
    except _DuplicateKey as exc:
        raise ReplyParseError("duplicate_key", f"the reply repeats the key {exc.args[0]!r}") from None
    raise ReplyParseError("not_json", "the reply holds no JSON object")


def normalize_label(value) -> str | None:
    """'H3', '[H3]', ' h3 ' → 'H3'; anything else → None."""
    if not isinstance(value, str):
        return None
    match = _LABEL.match(value.strip())
    return match.group(1).upper() if match else None

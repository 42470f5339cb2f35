"""The inspiration judge's request and the reading of its reply (docs/protocol.md#the-inspiration-judgement): one
hypothesis (its first 2500 characters), one later publication as the judge reads it, the definition of a concrete
connection, and a JSON answer with a verbatim quote. Pure: no database, no model call."""

import hashlib
from dataclasses import dataclass

from screening.llm import ReplyParseError, extract_json

PROMPT_VERSION = "inspiration-v1"
JUDGEMENTS = ("positive", "negative")
CONNECTIONS = ("design", "comparator", "measurement", "evidence_gap")

SYSTEM = (
    "You judge whether a scientific publication offers a concrete connection to a research hypothesis. You judge only "
    "from the texts you are given and quote the publication word for word. Answer with JSON only."
)

_QUESTION = (
    "Does the later publication below offer a concrete connection to the hypothesis: an experimental design, "
    "comparator, measurement or testable evidence gap relevant to developing or testing it?"
)

_RULES = """RULES
- "positive": the publication provides an experimental design, a comparator, a measurement or a testable evidence \
gap that a researcher could use to develop or test this hypothesis.
- "negative": it does not. A shared topic or shared vocabulary alone is not a connection.
- For "positive", "quote" is copied character for character from the publication: one or two consecutive sentences \
that provide the connection, with no ellipsis, no added words and no change of spelling. Never quote the hypothesis.
- "connection": "design", "comparator", "measurement" or "evidence_gap" for a positive judgement; empty for a \
negative one.
- "reason": one sentence saying why."""

_ANSWER = (
    'Return a JSON object: {"judgment": "positive" or "negative", "connection": "design", "comparator", '
    '"measurement", "evidence_gap" or "", "quote": "...", "reason": "..."}'
)

SCHEMA = {
    "type": "object",
    "properties": {
        "judgment": {"type": "string", "enum": list(JUDGEMENTS)},
        "connection": {"type": "string"},
        "quote": {"type": "string"},
        "reason": {"type": "string"},
    },
    "required": ["judgment", "connection", "quote", "reason"],
    "additionalProperties": False,
}


def _one_line(text: str) -> str:
    return " ".join(text.split())


def messages(*, hypothesis: str, publication: str) -> tuple[str, str]:
    """(system, user). hypothesis: the text the judge reads (already cut to its first 2500 characters);
    publication: the reference as the judge reads it."""
    user = "\n\n".join(
        [
            _QUESTION,
            f"HYPOTHESIS\n{_one_line(hypothesis)}",
            f"LATER PUBLICATION\n[R1] {_one_line(publication)}",
            _RULES,
            _ANSWER,
        ]
    )
    return SYSTEM, user


def prompt_record() -> dict:
    """What an audit stores of its prompt: the version, the fixed texts and their sha256."""
    texts = {"system": SYSTEM, "question": _QUESTION, "rules": _RULES, "answer": _ANSWER}
    digest = hashlib.sha256("\x1f".join(texts.values()).encode()).hexdigest()
    return {"version": PROMPT_VERSION, **texts, "sha256": digest}


@dataclass(frozen=True)
class Reading:
    """What a reply says; `parsed`/`complete` as screening.llm.ask_twice expects."""

    judgment: str
    connection: str
    quote: str
    reason: str

    parsed = True
    complete = True


def read_reply(text: str | None) -> Reading | None:
    """The judgement of a reply, or None when it holds none (not JSON, no judgement, fields of the wrong type)."""
    try:
        reply = extract_json(text)
    except ReplyParseError:
        return None
    if not isinstance(reply, dict):
        return None
    fields = {name: reply.get(name) if reply.get(name) is not None else "" for name in SCHEMA["properties"]}
    if not all(isinstance(value, str) for value in fields.values()):
        return None
    judgment = fields["judgment"].strip().casefold()
    if judgment not in JUDGEMENTS:
        return None
    connection = fields["connection"].strip().casefold().replace(" ", "_")
    return Reading(judgment, connection, fields["quote"], fields["reason"].strip())

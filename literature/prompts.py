"""The novelty judge's request (docs/protocol.md#the-judgement): the hypothesis, its parts, the retrieved references,
the verdict definitions (docs/protocol.md#verdicts) stated precisely, and a JSON answer with a verbatim quote."""

VERDICTS = ("reported", "contradicted", "components_reported", "not_reported")

NOVELTY_SYSTEM = (
    "You check whether a scientific hypothesis is already reported in the published literature. You judge only from "
    "the references you are given and quote them word for word. Answer with JSON only."
)

_DEFINITIONS = """VERDICTS (choose exactly one)
- "reported": a reference states the hypothesis's causal claim itself: the same cause acting on the same effect, \
in the same direction, in the same or a directly comparable system.
- "contradicted": a reference reports the opposite of the claim: that the cause leaves the effect unchanged, or \
changes it in the opposite direction.
- "components_reported": each part of the hypothesis listed above is reported in some reference, but no reference \
states the causal link between them.
- "not_reported": none of the above; the references do not report the claim, its opposite, or every one of its parts.

RULES
- A related finding is not the claim: an association is not a causal effect, another system is not the same system \
unless the reference makes it comparable, and a general review statement is not a report of this claim.
- "quote" is copied character for character from the reference named in "reference_id": one or two consecutive \
sentences, with no ellipsis, no added words and no change of spelling. Never quote the hypothesis.
- "reported" and "contradicted": quote the passage that states the claim or its opposite.
- "components_reported": give "components", one entry per part listed above, each with the part's name, a \
verbatim "quote" that reports that part and its "reference_id".
- "not_reported": leave "quote" and "reference_id" empty.
- "reason": one sentence saying why."""

_ANSWER = (
    'Return a JSON object: {"verdict": "reported", "contradicted", "components_reported" or "not_reported", '
    '"quote": "...", "reference_id": "R1", "reason": "...", '
    '"components": [{"part": "cause", "quote": "...", "reference_id": "R2"}]}'
)

NOVELTY_SCHEMA = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": list(VERDICTS)},
        "quote": {"type": "string"},
        "reference_id": {"type": "string"},
        "reason": {"type": "string"},
        "components": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {name: {"type": "string"} for name in ("part", "quote", "reference_id")},
                "required": ["part", "quote", "reference_id"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["verdict", "quote", "reference_id", "reason"],
    "additionalProperties": False,
}


def _one_line(text: str) -> str:
    return " ".join(text.split())


def novelty_messages(
    *, hypothesis: str, parts: list[tuple[str, str]], references: list[tuple[str, str]]
) -> tuple[str, str]:
    """(system, user). parts: [(name, text)]; references: [(label, text as the judge reads it)], one line each."""
    sections = [
        "Is the hypothesis below already reported in the published literature? Judge only from the references "
        "listed here.",
        f"HYPOTHESIS\n{_one_line(hypothesis)}",
    ]
    if parts:
        sections.append("PARTS OF THE HYPOTHESIS\n" + "\n".join(f"[{name}] {_one_line(text)}" for name, text in parts))
    sections.append("REFERENCES\n" + "\n\n".join(f"[{label}] {_one_line(text)}" for label, text in references))
    sections += [_DEFINITIONS, _ANSWER]
    return NOVELTY_SYSTEM, "\n\n".join(sections)

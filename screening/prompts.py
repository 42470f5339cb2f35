"""The exact texts sent to models (docs/protocol.md#generation, docs/protocol.md#forecast-request and
docs/protocol.md#forecast-modes).

The protocol's texts are a contract: docs/protocol.md quotes them and the test suite compares them byte for byte
with that wording.
"""

import json

GENERATION_SYSTEM = (
    "You are a research scientist in the biology of ageing. You propose scientific hypotheses that answer research "
    "questions. Answer with JSON only."
)

_GENERATION_TASK = (
    "The goal is hypotheses that answer the research question: specific, testable causal claims. Propose only "
    "hypotheses that, to your knowledge, have not yet been tested experimentally: do not restate a finding that the "
    "published literature has already established or refuted. Each hypothesis must be new as a specific causal claim, "
    "even when it builds on known mechanisms.\n"
    "\n"
    "Propose {count} hypotheses.\n"
    "\n"
    'Return JSON {"hypotheses":[{"statement":"the hypothesis in 1-3 sentences","mechanism":"the proposed mechanism",'
    '"prediction":"a result that would support it over the alternatives","domain_category":"short label of its '
    'mechanism class"}],"notes":""}'
)

FORECAST_SYSTEM = "Return a JSON object."

FORECAST_QUESTION = "For each hypothesis below, will it be confirmed experimentally?"

FORECAST_REMINDER = (
    'Return a JSON object with a "forecasts" array. For each hypothesis include its "id" and a boolean "confirmed".'
)

# Appended for Grok (docs/protocol.md#forecast-request): without it Grok describes a plan instead of answering.
GROK_SUFFIX = (
    "You have no tools, no files and no internet access. Give your complete final answer in this single reply, in the "
    "requested format. Never describe what you are going to do; do it now. Your reply must start with { and be only "
    "the JSON object."
)

# JSON schemas for providers whose native JSON output needs one (Anthropic's output_config.format).
FORECAST_SCHEMA = {
    "type": "object",
    "properties": {
        "forecasts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"id": {"type": "string"}, "confirmed": {"type": "boolean"}},
                "required": ["id", "confirmed"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["forecasts"],
    "additionalProperties": False,
}

HYPOTHESES_SCHEMA = {
    "type": "object",
    "properties": {
        "hypotheses": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    name: {"type": "string"} for name in ("statement", "mechanism", "prediction", "domain_category")
                },
                "required": ["statement", "mechanism", "prediction", "domain_category"],
                "additionalProperties": False,
            },
        },
        "notes": {"type": "string"},
    },
    "required": ["hypotheses", "notes"],
    "additionalProperties": False,
}


def hypothesis_text(statement: str, mechanism: str, prediction: str) -> str:
    """One hypothesis as the forecasting models read it (docs/protocol.md#pooling-and-blinding)."""
    return f"{statement} Mechanism: {mechanism} Prediction: {prediction}"


# The protocol asks for ten; the seed-001 benchmark design for five (docs/protocol.md#generation).
GENERATION_COUNT_WORDS = {5: "five", 10: "ten"}


def generation_messages(*, question: str, background: str = "", count: int = 10) -> tuple[str, str]:
    """(system, user) for a generator (docs/protocol.md#generation), asking for ``count`` hypotheses. Without a
    background its line and blank line are left out."""
    task = "TASK\n"
    if background:
        task += f"Research background: {background}\n\n"
    task += f"Research question: {question}\n\n"
    # Not str.format: the JSON example's braces are part of the text.
    return GENERATION_SYSTEM, task + _GENERATION_TASK.replace("{count}", GENERATION_COUNT_WORDS.get(count, str(count)))


def _hypotheses_block(items: list[tuple[str, str]]) -> str:
    return "\n\n".join(f"[{label}] {text}" for label, text in items)


def _context_blocks(question: str, background: str) -> str:
    blocks = f"BACKGROUND\n{background}\n\n" if background else ""
    return blocks + f"RESEARCH QUESTION\n{question}\n\n"


def forecast_messages(
    *, question: str, background: str = "", items: list[tuple[str, str]], grok: bool
) -> tuple[str, str]:
    """(system, user) for a stage-1 or stage-2 forecaster (docs/protocol.md#forecast-request). items: (label, hypothesis
    text) in order.

    For Grok the sentence is appended after a blank line to both messages and the user message then repeats the JSON
    reminder after another blank line."""
    user = (
        f"{FORECAST_QUESTION}\n\n"
        + _context_blocks(question, background)
        + f"HYPOTHESES\n{_hypotheses_block(items)}\n\n{FORECAST_REMINDER}"
    )
    if not grok:
        return FORECAST_SYSTEM, user
    return f"{FORECAST_SYSTEM}\n\n{GROK_SUFFIX}", f"{user}\n\n{GROK_SUFFIX}\n\n{FORECAST_REMINDER}"


# Optional forecast modes (docs/protocol.md#forecast-modes): the same models asked in other words. As in the
# protocol's short question, the BACKGROUND block is left out when there is no background.

DETAILED_FORECAST_SYSTEM = (
    "You advise researchers which causal hypotheses deserve experimental testing in the biology of ageing.\n"
    "Use only the supplied background, research question, hypothesis text and your prior scientific knowledge. You "
    "have no tools or internet access. Experimental outcomes are unknown to you.\n"
    "Forecast experimental support for each hypothesis's own causal claim in its stated biological system. Return a "
    "complete JSON object in this reply."
)

_DETAILED_FORECAST_INSTRUCTIONS = (
    "Assess EVERY hypothesis independently. Several different mechanisms may be supported, and none may be supported. "
    "There is no required number of recommendations and no requirement to recommend one hypothesis per question.\n"
    "\n"
    "For each hypothesis estimate p_experimental_support between 0 and 1: your probability that a well-controlled "
    "discriminating experiment, competently performed in the species, tissue and scope stated in the hypothesis, "
    "would support its central causal claim. Evaluate that claim itself, including a plausible alternative mechanism. "
    "This is a subjective scientific forecast, not an observed frequency. If the supplied information cannot justify "
    "any numerical estimate, return null and explain the missing information.\n"
    "\n"
    "Give recommend_for_testing as a separate boolean: would you advise a researcher to spend experimental resources "
    "testing this hypothesis now, given its scientific support, testability, assumptions and contradictions? You may "
    "recommend multiple hypotheses or none. A recommendation is not a guarantee of success. A numerical estimate is "
    "required for a positive recommendation. The comparison will retain your recommendation exactly as issued.\n"
    "\n"
    "Use the existing scientific considerations: a specific causal chain; consistency with established biology; a "
    "feasible discriminating test; fit to the stated question and system; few unsupported assumptions. Novelty is "
    "descriptive and is not evidence for or against a claim. Ignore prose style, length, tone, gene-name density and "
    "the anonymous candidate order. Do not guess the contents of an undisclosed article or predict another "
    "evaluator's score.\n"
    "\n"
    "Provide a short scientific justification. Quote only literal fragments of the supplied BACKGROUND in "
    "support_from_background, or use an empty array. Keep additional assumptions and contradictions separate. Name a "
    "concrete intervention, measured readout and necessary controls, and specify outcomes supporting and refuting the "
    "claim. These are proposed observations, not results you have seen. Do not announce research, search for "
    "information or describe work you will do later; give the complete forecasts now.\n"
    "\n"
    "Return exactly this structure, with every supplied candidate once:\n"
    '{"protocol":"experimental-support-v1","forecasts":[{"id":"H1","p_experimental_support":0.5,'
    '"recommend_for_testing":false,"support_from_background":[],"assumptions":[],"contradictions":[],'
    '"reason":"Short justification","test":{"intervention":"...","measurement":"...","controls":"...",'
    '"supports_if":"...","refutes_if":"..."}}]}'
)


def detailed_forecast_messages(
    *, question: str, background: str = "", items: list[tuple[str, str]], grok: bool = False
) -> tuple[str, str]:
    """(system, user) for the detailed instruction (docs/protocol.md#detailed-instruction): p_experimental_support and
    recommend_for_testing per hypothesis. Stored beside the protocol's boolean, never in its place."""
    user = (
        _context_blocks(question, background)
        + f"CANDIDATE HYPOTHESES\n{_hypotheses_block(items)}\n\n{_DETAILED_FORECAST_INSTRUCTIONS}"
    )
    if not grok:
        return DETAILED_FORECAST_SYSTEM, user
    return f"{DETAILED_FORECAST_SYSTEM}\n\n{GROK_SUFFIX}", f"{user}\n\n{GROK_SUFFIX}"


SINGLE_HYPOTHESIS_QUESTION = "Will this hypothesis be confirmed experimentally?"
SINGLE_HYPOTHESIS_REMINDER = (
    'Return a JSON object with a "forecasts" array containing this hypothesis\'s "id" and a boolean "confirmed".'
)


def single_hypothesis_id(label: str) -> str:
    """The id a hypothesis carries in the one-hypothesis question: its blind number as the protocol writes it, "H"
    and twelve digits (H7 → H000000000007; docs/protocol.md#single-hypothesis-question)."""
    return f"H{int(label.removeprefix('H')):012d}"


def single_hypothesis_messages(*, label: str, text: str, grok: bool = False) -> tuple[str, str]:
    """(system, user) for the one-hypothesis question (docs/protocol.md#single-hypothesis-question). A run
    passes single_hypothesis_id of the blind number; any label works, the reply names it back."""
    user = f"{SINGLE_HYPOTHESIS_QUESTION}\n\nHYPOTHESIS\n[{label}] {text}\n\n{SINGLE_HYPOTHESIS_REMINDER}"
    if not grok:
        return FORECAST_SYSTEM, user
    return f"{FORECAST_SYSTEM}\n\n{GROK_SUFFIX}", f"{user}\n\n{GROK_SUFFIX}\n\n{SINGLE_HYPOTHESIS_REMINDER}"


TRANSLATION_SYSTEM = (
    "You translate scientific hypotheses from English into Russian for researchers. Keep gene, protein and drug "
    "names as they are. Return a JSON object."
)


def translation_messages(*, items: list[dict]) -> tuple[str, str]:
    """(system, user) asking for a Russian rendering (the run's `language: "ru"`; the project's own wording).

    items: [{"id", "statement", "mechanism", "prediction"}]. The reply has the same shape under "translations"."""
    payload = json.dumps({"hypotheses": items}, ensure_ascii=False, indent=1)
    user = (
        "Translate the statement, mechanism and prediction of each hypothesis below into Russian. Keep every id "
        "unchanged.\n\n"
        f"{payload}\n\n"
        'Return a JSON object {"translations":[{"id":"...","statement":"...","mechanism":"...","prediction":"..."}]} '
        "with every hypothesis once."
    )
    return TRANSLATION_SYSTEM, user

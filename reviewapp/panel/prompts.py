"""The AI review panel's prompts and the reading of its replies (docs/protocol.md#ai-review-panel).

The prompts are the project's own, versioned by PROMPT_VERSION. Every review, judgment and comparison stores the
prompt it was asked with (PanelPrompt), so a change of wording is a new version, never a silent edit
(tests/panel/test_prompts.py holds each version to its text). Models read only the blinded packet: the research
question, background and the proposal's sections, never its author, company, method, run, other grades or history.
"""

import hashlib
from dataclasses import dataclass, field

from reviewapp.panel.profile import (
    DIMENSION_KEYS,
    INAPPLICABLE,
    REVISION_CATEGORIES,
    ROLES,
    SCORE_WORDS,
    UNKNOWN,
    is_known,
)
from reviewapp.panel.ratings import INSUFFICIENT, TIE, A, B
from reviewapp.selectors.packets import ProposalPacket
from screening import llm
from screening.prompts import GROK_SUFFIX

PROMPT_VERSION = "panel-v1"
CRITIC, REVISION_JUDGE = "critic", "revision_judge"
# The fresh-context reference: a review of the same packet in a new conversation, without a role's framing
# (docs/protocol.md#fresh-context-references).
REFERENCE_REVIEWER = "reference_reviewer"

# The first sentence of each user message: the simulated model server recognises a request by it.
REVIEW_QUESTION = "Review the research proposal below on the eight dimensions of the hypothesis profile."
CRITIQUE_QUESTION = "Compare the two research proposals below and say which is the stronger research proposal."
REVISION_QUESTION = "Judge the revision below against its predecessor."

ROLE_SYSTEMS = {
    "rubric_judge": (
        "You are the rubric judge of a scientific review panel. You apply the panel's rubric literally and score each "
        "dimension only from what the proposal packet states. Answer with JSON only."
    ),
    "domain_scientist": (
        "You are a domain scientist on a scientific review panel. You judge whether the question matters in its "
        "field, how far it goes beyond what is known and whether its claims are grounded, from the packet and your "
        "knowledge of the field. Answer with JSON only."
    ),
    "methods_reviewer": (
        "You are the methods reviewer of a scientific review panel. You judge the investigation: whether its outcomes "
        "can support or weaken the claim, whether the named data can resolve it, whether it is feasible and whether "
        "rival explanations are addressed. Answer with JSON only."
    ),
}
CRITIC_SYSTEM = (
    "You are the critique reviewer of a scientific review panel. You compare two research proposals under one rubric. "
    "Answer with JSON only."
)
REVISION_SYSTEM = (
    "You are the progress reviewer of a scientific review panel. You judge what a revision changed against its "
    "predecessor. Answer with JSON only."
)
# No role, no panel: only what every role's system message also asks of the reply's form.
REFERENCE_SYSTEM = "Answer with JSON only."

REVIEW_TEMPLATE = (
    REVIEW_QUESTION
    + """

{packet}

Assess the proposal on its own merits, independently of any other review. Keep scientific importance apart from \
maturity: an important question need not already have a positive result, and a finished analysis plan does not make \
a finding consequential. The packet's citations bound what you can say about novelty: do not infer global novelty \
from them.

Score each dimension as a whole number from 1 (lowest) to 10 (highest), or "unknown" when the packet lacks the \
evidence to score it, or "inapplicable" when the dimension does not apply to this kind of proposal. Never use 0 and \
never guess a number for missing evidence.

DIMENSIONS
importance: how much the answer would change understanding or research priorities in its field.
novelty: how far the claim goes beyond what is already reported, as far as the packet shows.
grounding: whether the claims are plausible and no stronger than the background and cited evidence allow.
falsifiability: whether stated outcomes, fixed before the results are seen, would support or weaken the claim.
data_resolvability: whether the named data or measurements can actually resolve the question.
feasibility: whether the investigation can be carried out with the stated data, methods and dependencies.
alternatives: whether competing explanations, confounding and measurement limits are named and addressed.
actionability: whether a clear next step follows from either outcome.

ELIGIBILITY
"eligible" is true when the proposal is a coherent, assessable research design, false when it is not, and "unknown" \
when the packet does not let you tell. It says nothing about whether the claim is true.

Return a JSON object {{"eligible": true, "scores": {{"importance": 7, "novelty": 5, "grounding": 6, \
"falsifiability": 8, "data_resolvability": "unknown", "feasibility": 6, "alternatives": 4, "actionability": \
"inapplicable"}}, "rationale": "a short paragraph"}} with all eight dimensions."""
)

CRITIQUE_TEMPLATE = (
    CRITIQUE_QUESTION
    + """

{context}

PROPOSAL A
{first}

PROPOSAL B
{second}

Weigh scientific importance, novelty, grounding in evidence, falsifiability, whether the data can resolve the \
question, feasibility, the treatment of alternative explanations and actionability. The order of the proposals means \
nothing; ignore length and style. Answer "A" or "B" for the stronger proposal, "tie" when neither is stronger, and \
"insufficient" when the packets do not give enough evidence to compare them.

Return a JSON object {{"preference": "A", "rationale": "a short paragraph"}}."""
)

REVISION_TEMPLATE = (
    REVISION_QUESTION
    + """

{context}

PREDECESSOR
{predecessor}

REVISION
{revision}

Choose one category:
substantive_progress: the revision materially improves the scientific value or the testability of the proposal.
necessary_repair: the revision fixes a flaw that prevented assessing or testing the proposal, and adds little else.
marginal_repetition: the revision restates the predecessor or changes little of consequence.
insufficient_evidence: the packets do not show enough to judge the change.

Return a JSON object {{"category": "substantive_progress", "rationale": "a short paragraph"}}."""
)


@dataclass(frozen=True)
class PromptText:
    kind: str
    version: str
    system: str
    template: str

    @property
    def sha256(self) -> str:
        text = "\x1f".join((self.kind, self.version, self.system, self.template))
        return hashlib.sha256(text.encode()).hexdigest()


PROMPTS = {
    **{role: PromptText(role, PROMPT_VERSION, ROLE_SYSTEMS[role], REVIEW_TEMPLATE) for role in ROLES},
    CRITIC: PromptText(CRITIC, PROMPT_VERSION, CRITIC_SYSTEM, CRITIQUE_TEMPLATE),
    REVISION_JUDGE: PromptText(REVISION_JUDGE, PROMPT_VERSION, REVISION_SYSTEM, REVISION_TEMPLATE),
    # The roles' own user message (the same packet, dimensions and scale) under the reference's system message.
    REFERENCE_REVIEWER: PromptText(REFERENCE_REVIEWER, PROMPT_VERSION, REFERENCE_SYSTEM, REVIEW_TEMPLATE),
}


# The packet as the models read it -------------------------------------------------------------------------------


def context_text(packet: ProposalPacket) -> str:
    """The research question and its background (left out when empty)."""
    parts = [f"RESEARCH QUESTION\n{packet.question}"]
    if packet.background:
        parts.append(f"BACKGROUND\n{packet.background}")
    return "\n\n".join(parts)


def proposal_text(packet: ProposalPacket) -> str:
    """The proposal's claim and its non-empty sections, one per line."""
    lines = [f"Claim: {packet.statement}"]
    if packet.domain_category:
        lines.append(f"Domain category: {packet.domain_category}")
    lines += [f"{label}: {text}" for label, text in packet.sections]
    return "\n".join(lines)


def _with_grok(system: str, user: str, grok: bool) -> tuple[str, str]:
    return (f"{system}\n\n{GROK_SUFFIX}", f"{user}\n\n{GROK_SUFFIX}") if grok else (system, user)


def review_messages(role: str, packet: ProposalPacket, *, grok: bool = False) -> tuple[str, str]:
    """A role's review request, or the fresh-context reference's (role REFERENCE_REVIEWER): the same user message."""
    prompt = PROMPTS[role]
    packet_text = f"{context_text(packet)}\n\nPROPOSAL\n{proposal_text(packet)}"
    return _with_grok(prompt.system, prompt.template.format(packet=packet_text), grok)


def critique_messages(first: ProposalPacket, second: ProposalPacket, *, grok: bool = False) -> tuple[str, str]:
    """Position A is `first`. Both proposals answer the same research task (one stratum): its context is shown once."""
    prompt = PROMPTS[CRITIC]
    user = prompt.template.format(context=context_text(first), first=proposal_text(first), second=proposal_text(second))
    return _with_grok(prompt.system, user, grok)


def revision_messages(predecessor: ProposalPacket, revision: ProposalPacket, *, grok: bool = False) -> tuple[str, str]:
    prompt = PROMPTS[REVISION_JUDGE]
    user = prompt.template.format(
        context=context_text(revision), predecessor=proposal_text(predecessor), revision=proposal_text(revision)
    )
    return _with_grok(prompt.system, user, grok)


# Reading replies: a reply counts only when it is complete and valid (otherwise it is asked once more) ----------

REVIEW_SCHEMA = {
    "type": "object",
    "properties": {
        "eligible": {"type": ["boolean", "string"]},
        "scores": {
            "type": "object",
            "properties": {key: {"type": ["integer", "string"]} for key in DIMENSION_KEYS},
            "required": list(DIMENSION_KEYS),
            "additionalProperties": False,
        },
        "rationale": {"type": "string"},
    },
    "required": ["eligible", "scores", "rationale"],
    "additionalProperties": False,
}
CRITIQUE_SCHEMA = {
    "type": "object",
    "properties": {"preference": {"type": "string"}, "rationale": {"type": "string"}},
    "required": ["preference", "rationale"],
    "additionalProperties": False,
}
REVISION_SCHEMA = {
    "type": "object",
    "properties": {"category": {"type": "string"}, "rationale": {"type": "string"}},
    "required": ["category", "rationale"],
    "additionalProperties": False,
}


@dataclass
class Reading:
    """What a reply gave. `parsed` and `complete` are the same here: an incomplete reply counts for nothing."""

    value: dict = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.problems

    parsed = complete


def _object(text: str | None, reading: Reading) -> dict | None:
    try:
        obj = llm.extract_json(text)
    except llm.ReplyParseError as exc:
        reading.problems.append(f"{exc.kind}: {exc}")
        return None
    if not isinstance(obj, dict):
        reading.problems.append("the reply is not a JSON object")
        return None
    return obj


def _word(value) -> str:
    return value.strip().lower().replace(" ", "_").replace("-", "_") if isinstance(value, str) else ""


def _rationale(obj: dict, reading: Reading) -> str:
    rationale = obj.get("rationale")
    if not isinstance(rationale, str) or not rationale.strip():
        reading.problems.append("no rationale")
        return ""
    return rationale.strip()


def parse_review(text: str | None) -> Reading:
    """{"eligible": true | false | "unknown", "scores": {all eight: 1–10 | "unknown" | "inapplicable"}, "rationale"}.
    A score must be a JSON integer from 1 to 10 or one of the two words; 0, null or a number in a string is invalid."""
    reading = Reading()
    obj = _object(text, reading)
    if obj is None:
        return reading
    eligible = obj.get("eligible")
    if isinstance(eligible, bool):
        reading.value["eligible"] = "true" if eligible else "false"
    elif _word(eligible) in ("true", "false", UNKNOWN):
        reading.value["eligible"] = _word(eligible)
    else:
        reading.problems.append(f"eligible is {eligible!r}, not true, false or unknown")
    scores = obj.get("scores")
    if not isinstance(scores, dict):
        reading.problems.append("no scores object")
        return reading
    read: dict[str, int | str] = {}
    for key in DIMENSION_KEYS:
        score = scores.get(key)
        if is_known(score):
            read[key] = score
        elif isinstance(score, str) and _word(score) in SCORE_WORDS:
            read[key] = UNKNOWN if _word(score) == UNKNOWN else INAPPLICABLE
        elif key not in scores:
            reading.problems.append(f"{key} has no score")
        else:
            reading.problems.append(f'{key}: {score!r} is not a whole number 1–10, "unknown" or "inapplicable"')
    reading.value["scores"] = read
    reading.value["rationale"] = _rationale(obj, reading)
    return reading


_PREFERENCES = {"a": A, "b": B, "tie": TIE, "insufficient": INSUFFICIENT, "insufficient_evidence": INSUFFICIENT}


def parse_critique(text: str | None) -> Reading:
    """{"preference": "A" | "B" | "tie" | "insufficient", "rationale"}, in terms of positions."""
    reading = Reading()
    obj = _object(text, reading)
    if obj is None:
        return reading
    preference = _PREFERENCES.get(_word(obj.get("preference")))
    if preference is None:
        reading.problems.append(f"preference is {obj.get('preference')!r}, not A, B, tie or insufficient")
    reading.value = {"preference": preference, "rationale": _rationale(obj, reading)}
    return reading


def parse_revision(text: str | None) -> Reading:
    """{"category": one of the four, "rationale"}."""
    reading = Reading()
    obj = _object(text, reading)
    if obj is None:
        return reading
    category = _word(obj.get("category"))
    if category not in REVISION_CATEGORIES:
        reading.problems.append(f"category is {obj.get('category')!r}, not one of {', '.join(REVISION_CATEGORIES)}")
    reading.value = {"category": category, "rationale": _rationale(obj, reading)}
    return reading

"""The prompts of the path and run judges and the reading of their replies (docs/protocol.md#development-paths,
#whole-run-assessment).

The prompts are the project's own, versioned by LEVEL_PROMPT_VERSION and stored once per exact text (PanelPrompt),
as the panel's are. The judges read blinded packets only: versions are labelled V1, V2, … (never by their imported
id, author or run), context versions are marked as such, and a run's decisions, budgets, delivery records and
trajectory summaries are given in those labels.
"""

import hashlib
from dataclasses import dataclass

from reviewapp.panel.development import PATH_RUBRIC, RUN_RUBRIC, Rubric, is_anchor, rubric
from reviewapp.panel.profile import INAPPLICABLE, UNKNOWN
from reviewapp.panel.prompts import PromptText, Reading, _object, _with_grok, _word, context_text, proposal_text
from reviewapp.selectors.packets import ProposalPacket

LEVEL_PROMPT_VERSION = "levels-v1"
PATH_JUDGE, RUN_JUDGE = "path_judge", "run_judge"

# The first sentence of each user message: the simulated model server recognises a request by it.
PATH_QUESTION = "Assess the development path below on each dimension of the rubric."
RUN_QUESTION = "Assess the research run below as a whole on each dimension of the rubric."

PATH_SYSTEM = (
    "You are the development-path judge of a scientific review panel. You assess how an ordered series of hypothesis "
    "versions developed, not the final version alone. Answer with JSON only."
)
RUN_SYSTEM = (
    "You are the research-run judge of a scientific review panel. You assess the whole research graph of one run and "
    "its recorded decisions, independently of any assessment of its paths. Answer with JSON only."
)

_REPLY_RULES = """Score each dimension on the anchors from 0 to 4, or "unknown" when the records lack the evidence to \
score it, or "inapplicable" when the dimension does not apply to this {object}. Never guess a number for missing \
evidence. For every dimension quote the piece of the records your score rests on (verbatim, a sentence at most; an \
empty string only for "unknown" or "inapplicable") and give a one-sentence rationale.

Return a JSON object {{"dimensions": {{"<dimension>": {{"score": 3, "evidence": "a verbatim quote", \
"rationale": "one sentence"}}, ...}}}} with every dimension listed above."""

PATH_TEMPLATE = (
    PATH_QUESTION
    + """

{context}

{rubric}

THE PATH (root first)
{path}

{extra}

Judge the development from version to version: what each step kept, added, repaired or dropped. Context versions \
are other parents the path's versions drew on; they are not on the path.

"""
    + _REPLY_RULES.replace("{object}", "path")
)

RUN_TEMPLATE = (
    RUN_QUESTION
    + """

{context}

{rubric}

VERSIONS
{versions}

EDGES (parent -> child)
{edges}

DECISIONS
{decisions}

BUDGET
{budget}

DELIVERY
{delivery}

TRAJECTORIES
{trajectories}

Judge how the run allocated its effort among directions, explored, pruned, stopped, integrated evidence across \
branches and kept its records. The run is judged as a whole; do not average the quality of its versions.

"""
    + _REPLY_RULES.replace("{object}", "run")
)

LEVEL_PROMPTS = {
    PATH_JUDGE: PromptText(PATH_JUDGE, LEVEL_PROMPT_VERSION, PATH_SYSTEM, PATH_TEMPLATE),
    RUN_JUDGE: PromptText(RUN_JUDGE, LEVEL_PROMPT_VERSION, RUN_SYSTEM, RUN_TEMPLATE),
}
RUBRIC_OF_JUDGE = {PATH_JUDGE: PATH_RUBRIC, RUN_JUDGE: RUN_RUBRIC}


def rubric_text(rubric_: Rubric) -> str:
    lines = [f"RUBRIC {rubric_.version}", "DIMENSIONS"]
    lines += [f"- {dimension.key}: {dimension.definition}" for dimension in rubric_.dimensions]
    lines.append("ANCHORS")
    lines += [f"{score}: {text}" for score, text in sorted(rubric_.anchors.items())]
    return "\n".join(lines)


def _version_text(label: str, packet: ProposalPacket, note: str = "") -> str:
    return f"{label}{note}\n{proposal_text(packet)}"


@dataclass(frozen=True)
class PathPacket:
    versions: list[tuple[str, ProposalPacket]]  # root first, labelled V1…
    context: list[tuple[str, ProposalPacket, str]]  # (label, packet, the labels of the path versions it parents)


def path_messages(packet: PathPacket, *, grok: bool = False) -> tuple[str, str]:
    prompt = LEVEL_PROMPTS[PATH_JUDGE]
    path = "\n\n".join(_version_text(label, item) for label, item in packet.versions)
    extra = "CONTEXT VERSIONS\n" + (
        "\n\n".join(
            _version_text(label, item, f" (context: a parent of {children}, not on the path)")
            for label, item, children in packet.context
        )
        or "none"
    )
    user = prompt.template.format(
        context=context_text(packet.versions[-1][1]),
        rubric=rubric_text(rubric(PATH_RUBRIC)),
        path=path,
        extra=extra,
    )
    return _with_grok(prompt.system, user, grok)


@dataclass(frozen=True)
class RunPacket:
    versions: list[tuple[str, ProposalPacket]]
    edges: list[tuple[str, str]]
    decisions: list[str]
    budget: str
    delivery: list[str]
    trajectories: list[str]


def run_messages(packet: RunPacket, *, grok: bool = False) -> tuple[str, str]:
    prompt = LEVEL_PROMPTS[RUN_JUDGE]
    user = prompt.template.format(
        context=context_text(packet.versions[0][1]),
        rubric=rubric_text(rubric(RUN_RUBRIC)),
        versions="\n\n".join(_version_text(label, item) for label, item in packet.versions),
        edges="\n".join(f"{parent} -> {child}" for parent, child in packet.edges) or "none",
        decisions="\n".join(packet.decisions) or "none recorded",
        budget=packet.budget,
        delivery="\n".join(packet.delivery) or "none recorded",
        trajectories="\n".join(packet.trajectories) or "none recorded",
    )
    return _with_grok(prompt.system, user, grok)


def packet_sha256(user: str) -> str:
    """The source snapshot of an assessment: the sha256 of the user message that carried the packet."""
    return hashlib.sha256(user.encode()).hexdigest()


def assessment_schema(rubric_: Rubric) -> dict:
    entry = {
        "type": "object",
        "properties": {
            "score": {"type": ["integer", "string"]},
            "evidence": {"type": "string"},
            "rationale": {"type": "string"},
        },
        "required": ["score", "evidence", "rationale"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "dimensions": {
                "type": "object",
                "properties": dict.fromkeys(rubric_.keys, entry),
                "required": list(rubric_.keys),
                "additionalProperties": False,
            }
        },
        "required": ["dimensions"],
        "additionalProperties": False,
    }


def parse_assessment(rubric_: Rubric, text: str | None) -> Reading:
    """{"dimensions": {every dimension: {"score": 0–4 | "unknown" | "inapplicable", "evidence", "rationale"}}}. A score
    must be a JSON integer 0–4 or one of the two words; a numeric score needs its quoted evidence, and every dimension
    a rationale."""
    reading = Reading()
    obj = _object(text, reading)
    if obj is None:
        return reading
    dimensions = obj.get("dimensions")
    if not isinstance(dimensions, dict):
        reading.problems.append("no dimensions object")
        return reading
    scores: dict[str, int | str] = {}
    evidence: dict[str, str] = {}
    rationales: dict[str, str] = {}
    for key in rubric_.keys:
        entry = dimensions.get(key)
        if not isinstance(entry, dict):
            reading.problems.append(f"{key} has no assessment")
            continue
        score = entry.get("score")
        if is_anchor(score):
            scores[key] = score
        elif isinstance(score, str) and _word(score) in (UNKNOWN, INAPPLICABLE):
            scores[key] = _word(score)
        else:
            reading.problems.append(f'{key}: {score!r} is not a whole number 0–4, "unknown" or "inapplicable"')
        quote = entry.get("evidence")
        quote = quote.strip() if isinstance(quote, str) else ""
        if is_anchor(score) and not quote:
            reading.problems.append(f"{key}: a score needs its quoted evidence")
        evidence[key] = quote
        reason = entry.get("rationale")
        if not isinstance(reason, str) or not reason.strip():
            reading.problems.append(f"{key}: no rationale")
        else:
            rationales[key] = reason.strip()
    reading.value = {"scores": scores, "evidence": evidence, "rationales": rationales}
    return reading

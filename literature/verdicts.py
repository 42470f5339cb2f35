"""The verdict rules of the literature novelty check (docs/protocol.md#literature-novelty-check): pure functions of
the hypothesis, the retrieved candidates and the judge's reply; no database, no model call (literature.novelty does
those).

`novelty_check()` retrieves references for the whole hypothesis and for each of its parts, keeps those that pass the
lexical gate, and asks one model (recorded like every call) for one verdict with a verbatim quote:

- no candidate passes the gate → `not_reported`, without a model call;
- the judge's quote must occur in the quoted reference's text (exactly, or after collapsing whitespace); when it
  does not, or names a reference that was not supplied, the verdict is unsupported and downgraded to `unresolved`,
  keeping the judge's verdict and reason;
- any error, timeout, exhausted retries or unreadable reply → `unresolved` with its reason; never `not_reported`.

Parts. The statement (the text before " Mechanism: ") is split at its first causal verb: the cause is what comes
before it, the effect the verb and the rest of that sentence ("In aged mice, NAD+ repletion | restores satellite-cell
function."). A causal verb is a verb of change ("restores", "impair", "leads to", "would restore") with at least
two words before it; a base form after an article or a preposition is a noun ("an increase in"), and a verb inside a
hyphenated word ("spermidine-induced") is not one. A statement without one has the parts "statement" and
"mechanism". Each part is retrieved and gated on its own (a hypothesis's query keeps its rarest terms, which may all
come from one part), so the judge sees references on each part; for `components_reported` it quotes one per part.
"""

import re
from dataclasses import dataclass, field
from typing import TypedDict

from literature import prompts
from literature.models import NoveltyCheck
from literature.retrieval import Candidate
from screening.llm import ReplyParseError, extract_json, normalize_label

Verdict = NoveltyCheck.Verdict
# A quote shorter than this is a phrase, not a passage that can report a claim.
MIN_QUOTE_CHARS = 15

_SECTION = re.compile(r"\s(?:Mechanism|Prediction):\s")
_CAUSAL_VERBS = (
    "increase|decrease|reduce|raise|lower|promote|prevent|inhibit|suppress|enhance|impair|restore|slow|accelerate|"
    "delay|extend|shorten|drive|induce|trigger|block|protect|improve|worsen|rescue|limit|preserve|deplete|activate|"
    "repress|attenuate|exacerbate|ameliorate|reverse|cause|amplify|diminish|elevate|boost|stimulate|abolish|disrupt|"
    "compromise|maintain|sustain|shift|skew|alter|modulate|regulate|determine|counteract|mitigate|prolong|expand|"
    "rejuvenate|accumulate|decline|degrade|confer|curb|hasten|halt|reprogram|mediate"
)
_CAUSAL = re.compile(
    r"(?<![-\w])(?:(?P<phrase>leads? to|results? in|contributes? to|gives? rise to|(?:is|are) required for|"
    r"depends? on)|(?P<verb>" + _CAUSAL_VERBS + r")(?P<ending>s|es)?)(?![-\w])",
    re.IGNORECASE,
)
_MODALS = {"will", "would", "may", "might", "can", "could", "should", "does", "do", "to"}
_DETERMINERS = {
    "a", "an", "the", "this", "that", "these", "those", "its", "their", "any", "each", "every", "no", "some", "such",
    "further", "greater", "of", "in", "on", "for", "with", "by", "and", "or",
}  # fmt: skip
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_QUOTE_MARKS = {'"': '"', "“": "”", "'": "'", "‘": "’", "«": "»"}


class JudgementUnreadable(ValueError):
    """The judge's reply holds no usable verdict."""


@dataclass(frozen=True)
class Part:
    name: str
    text: str


@dataclass(frozen=True)
class Retrieved:
    """A candidate the judge reads: its label in the request, what it was retrieved for and the terms it shares."""

    label: str
    candidate: Candidate
    retrieved_for: str
    shared_terms: list[str]


@dataclass(frozen=True)
class ComponentEvidence:
    part: str
    text: str
    evidence: str
    citation: dict
    reference_id: int


@dataclass
class NoveltyResult:
    verdict: str
    evidence: str = ""
    reference: dict | None = None  # source, id, title, year, link
    reason: str = ""
    unsupported: bool = False
    candidates: list[Retrieved] = field(default_factory=list)
    components: list[ComponentEvidence] = field(default_factory=list)
    reference_id: int | None = None
    judged_verdict: str = ""  # the judge's own verdict, kept when it was downgraded
    model_call_id: int | None = None


class JudgedWith(TypedDict):
    """What every judged result carries: the candidates the judge read and the recorded call."""

    candidates: list[Retrieved]
    model_call_id: int | None


# Parts -----------------------------------------------------------------------------------------------------------


def split_sections(hypothesis_text: str) -> list[str]:
    """Statement, mechanism and prediction of a hypothesis written as one text (docs/protocol.md#pooling-and-blinding);
    missing ones empty."""
    sections = [section.strip() for section in _SECTION.split(hypothesis_text, maxsplit=2)]
    return sections + [""] * (3 - len(sections))


def hypothesis_parts(hypothesis_text: str) -> list[Part]:
    """The parts of a hypothesis that are retrieved separately (see the module docs)."""
    statement, mechanism, _ = split_sections(hypothesis_text)
    for match in _CAUSAL.finditer(statement):
        before = statement[: match.start()].split()
        if len(before) < 2:
            continue
        if match.group("verb") and not match.group("ending") and before[-1].casefold() in _DETERMINERS:
            continue  # a noun ("an increase in", "of decline")
        if before[-1].casefold() in _MODALS:
            before = before[:-1]
        cause = " ".join(before).rstrip(" ,;:")
        effect = _SENTENCE_END.split(statement[match.start() :], maxsplit=1)[0].strip()
        if cause:
            return [Part("cause", cause), Part("effect", effect)]
    parts = [Part("statement", statement)]
    return parts + [Part("mechanism", mechanism)] if mechanism else parts


# The judgement ---------------------------------------------------------------------------------------------------


def _normalise_space(text: str) -> str:
    return " ".join(text.split())


def clean_quote(quote: str) -> str:
    """The quote without surrounding whitespace and one pair of enclosing quotation marks."""
    quote = quote.strip()
    if len(quote) > 1 and _QUOTE_MARKS.get(quote[0]) == quote[-1]:
        quote = quote[1:-1].strip()
    return quote


def quote_occurs(quote: str, text: str) -> bool:
    """The quote occurs verbatim in the text: exactly, or once runs of whitespace are collapsed in both."""
    quote = clean_quote(quote)
    if len(_normalise_space(quote)) < MIN_QUOTE_CHARS:
        return False
    return quote in text or _normalise_space(quote) in _normalise_space(text)


@dataclass(frozen=True)
class Quoted:
    label: str
    quote: str


@dataclass(frozen=True)
class Judgement:
    verdict: str
    quoted: Quoted | None
    reason: str
    components: dict[str, Quoted]


def _text_field(value, name: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise JudgementUnreadable(f'"{name}" is not a text')
    return value


def parse_judgement(text: str | None) -> Judgement:
    """The verdict, quote, reference label, reason and per-part quotes of a reply. Raises JudgementUnreadable."""
    try:
        reply = extract_json(text)
    except ReplyParseError as exc:
        raise JudgementUnreadable(str(exc)) from None
    if not isinstance(reply, dict):
        raise JudgementUnreadable("the reply is not a JSON object")
    verdict = _text_field(reply.get("verdict"), "verdict").strip().casefold().replace(" ", "_").replace("-", "_")
    if verdict not in prompts.VERDICTS:
        raise JudgementUnreadable(f"the verdict {reply.get('verdict')!r} is not one of {', '.join(prompts.VERDICTS)}")
    quote = _text_field(reply.get("quote"), "quote")
    label = _text_field(reply.get("reference_id"), "reference_id")
    quoted = Quoted(normalize_label(label) or label.strip(), quote) if quote.strip() or label.strip() else None
    components = {}
    entries = reply.get("components") or []
    if not isinstance(entries, list):
        raise JudgementUnreadable('"components" is not a list')
    for entry in entries:
        if not isinstance(entry, dict):
            raise JudgementUnreadable('an entry of "components" is not an object')
        part = _text_field(entry.get("part"), "part").strip().casefold()
        entry_label = _text_field(entry.get("reference_id"), "reference_id")
        components.setdefault(
            part, Quoted(normalize_label(entry_label) or entry_label.strip(), _text_field(entry.get("quote"), "quote"))
        )
    return Judgement(verdict, quoted, _text_field(reply.get("reason"), "reason").strip(), components)


def _verified(quoted: Quoted | None, pool: dict[str, Retrieved], what: str) -> tuple[Retrieved | None, str]:
    """(the quoted candidate, "") when the quote occurs in it, else (None, why not)."""
    if quoted is None or not clean_quote(quoted.quote):
        return None, f"{what} has no quote"
    retrieved = pool.get(quoted.label)
    if retrieved is None:
        return None, f"{what} cites {quoted.label or 'no reference'}, which was not among the references supplied"
    if not quote_occurs(quoted.quote, retrieved.candidate.text):
        return None, f"{what} quotes a passage that does not occur in {quoted.label}: {clean_quote(quoted.quote)!r}"
    return retrieved, ""


def judged(judgement: Judgement, pool: list[Retrieved], parts: list[Part], base: JudgedWith) -> NoveltyResult:
    by_label = {retrieved.label: retrieved for retrieved in pool}
    verdict, reason = judgement.verdict, judgement.reason
    if verdict == Verdict.NOT_REPORTED:
        return NoveltyResult(verdict=verdict, reason=reason, judged_verdict=verdict, **base)
    if verdict in (Verdict.REPORTED, Verdict.CONTRADICTED):
        retrieved, problem = _verified(judgement.quoted, by_label, f"the {verdict} verdict")
        if retrieved is None:
            return unsupported(verdict, problem, reason, base)
        return NoveltyResult(
            verdict=verdict,
            evidence=clean_quote(judgement.quoted.quote),
            reference=retrieved.candidate.citation(),
            reference_id=retrieved.candidate.reference_id,
            reason=reason,
            judged_verdict=verdict,
            **base,
        )
    components = []
    for part in parts:
        retrieved, problem = _verified(judgement.components.get(part.name), by_label, f"the {part.name} part")
        if retrieved is None:
            return unsupported(verdict, problem, reason, base)
        quote = clean_quote(judgement.components[part.name].quote)
        components.append(
            ComponentEvidence(
                part.name, part.text, quote, retrieved.candidate.citation(), retrieved.candidate.reference_id
            )
        )
    evidence = " ".join(f"{c.part.capitalize()}: “{c.evidence}” ({c.citation['title']})" for c in components)
    return NoveltyResult(
        verdict=verdict,
        evidence=evidence,
        reference=components[0].citation,
        reference_id=components[0].reference_id,
        reason=reason,
        components=components,
        judged_verdict=verdict,
        **base,
    )


def unsupported(judged_verdict: str, problem: str, judge_reason: str, base: dict) -> NoveltyResult:
    reason = f"unsupported: {problem}" + (f" (the judge's reason: {judge_reason})" if judge_reason else "")
    return NoveltyResult(
        verdict=Verdict.UNRESOLVED, reason=reason, unsupported=True, judged_verdict=judged_verdict, **base
    )

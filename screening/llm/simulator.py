"""A simulated model server for the demo and the tests: not a model, and it says so in every reply.

It speaks the three wire protocols on the providers' own paths (OpenAI-compatible /v1/chat/completions, Anthropic
/v1/messages, Gemini /v1beta/models/{model}:generateContent) and answers by recognising the request: as many
hypotheses as a generation prompt asks for (each statement starting "[Simulated] "; `hypotheses_per_reply` fixes
another number), a verdict for every [Hn] of a forecast
prompt, a marked rendering for a translation into Russian, a quoted candidate sentence for a novelty check, a
judgement with a quoted sentence (or, now and then, a malformed reply) for the inspiration judge, and the AI review
panel's reviews, pairwise preferences and revision judgments.
Content is deterministic (a hash of the request); the injected faults (429, 529, malformed replies, missing ids)
are random. Every reply carries the header `x-simulated: true` and a model name starting "simulated".

Configuration: environment variables SIMULATOR_<FIELD> (e.g. SIMULATOR_FALSE_SHARE=0.3) or a JSON object given to
`manage.py run_simulator --config`.
"""

import hashlib
import json
import logging
import os
import random
import re
import threading
import time
import uuid
from dataclasses import asdict, dataclass, fields
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from screening.llm.replies import ReplyParseError, extract_json

logger = logging.getLogger(__name__)

SIMULATED_MARK = "[Simulated] "
RUSSIAN_MARK = "[Симуляция] "
_TOOL_FIELDS = ("tools", "tool_choice", "web_search_options", "toolConfig")
_GEMINI_PATH = re.compile(r"^/v1beta/models/([^/:]+):generateContent$")
_HYPOTHESIS_LINE = re.compile(r"^\[(H\d+)\] (.*)$", re.MULTILINE)
_LABELLED_LINE = re.compile(r"^\[([A-Za-z]*\d+)\] (.*)$", re.MULTILINE)


# The counts generation requests ask for, in the words they use (screening.prompts.GENERATION_COUNT_WORDS).
_COUNT_OF_WORD = {"five": 5, "ten": 10}
_GENERATION_COUNT = re.compile(rf"\bPropose ({'|'.join(_COUNT_OF_WORD)}) hypotheses\b")

_WHOLE_NUMBERS = ("seed", "hypotheses_per_reply")


@dataclass
class SimulatorConfig:
    false_share: float = 0.3  # share of forecast votes that are false
    malformed_share: float = 0.0  # share of replies that are prose instead of JSON
    missing_id_share: float = 0.0  # share of forecast replies that leave one id out
    rate_limit_share: float = 0.0  # share of requests answered 429 with retry-after
    overloaded_share: float = 0.0  # share answered 529 (Anthropic) or 503 (the others)
    quota_share: float = 0.0  # share answered 429 for an exhausted quota or spend limit (waiting will not help)
    latency_seconds: float = 0.0  # added to every request
    retry_after_seconds: float = 1.0  # named in 429 replies
    panel_malformed_share: float = 0.04  # share of AI panel replies with an invalid score (asked once more)
    position_bias: float = 0.15  # how much the simulated critique favours the proposal shown first
    seed: int | None = None  # seeds the fault draws (content is always deterministic)
    # Hypotheses in a generation reply (at most 12: the parts it assembles them from); None: as many as asked.
    hypotheses_per_reply: int | None = None

    @classmethod
    def from_env(cls, overrides: dict | None = None) -> "SimulatorConfig":
        values = {}
        for field in fields(cls):
            raw = os.environ.get(f"SIMULATOR_{field.name.upper()}")
            if raw not in (None, ""):
                values[field.name] = int(raw) if field.name in _WHOLE_NUMBERS else float(raw)
        unknown = set(overrides or {}) - {field.name for field in fields(cls)}
        if unknown:
            raise ValueError(f"unknown simulator settings: {', '.join(sorted(unknown))}")
        return cls(**{**values, **(overrides or {})})


# Generation: plausible ageing-biology hypotheses assembled from parts.
_INTERVENTIONS = [
    ("senolytic clearance of p16-positive cells", "senescence"),
    ("partial reprogramming with cyclic OSK expression", "epigenetic reprogramming"),
    ("raising NAD+ with nicotinamide riboside", "metabolism"),
    ("intermittent mTORC1 inhibition with rapamycin", "nutrient sensing"),
    ("blocking IL-6 trans-signalling", "inflammation"),
    ("activating PINK1-dependent mitophagy", "mitochondria"),
    ("IL-1β blockade", "inflammation"),
    ("spermidine-induced autophagy", "proteostasis"),
    ("restoring SIRT6 deacetylase activity", "genome maintenance"),
    ("neutralising circulating GDF15", "stress signalling"),
    ("telomerase reactivation", "telomeres"),
    ("restoring CXCL12 expression by niche stromal cells", "stem-cell niche"),
]
_SYSTEMS = [
    "haematopoietic stem cells",
    "the bone-marrow niche",
    "skeletal muscle satellite cells",
    "hepatocytes",
    "intestinal crypt stem cells",
    "microglia",
    "vascular endothelium",
    "adipose progenitor cells",
]
_OUTCOMES = [
    "slows the expansion of mutant clones",
    "restores regenerative capacity after injury",
    "lowers the senescence-associated secretory phenotype",
    "extends healthy lifespan",
    "reduces myeloid-biased differentiation",
    "preserves mitochondrial respiration",
]
_READOUTS = [
    "clone size by barcode tracing",
    "colony-forming capacity in transplantation",
    "SASP cytokines in plasma",
    "frailty index scores",
    "the myeloid-to-lymphoid ratio",
    "oxygen consumption rate",
]


def _rng_for(*parts: str) -> random.Random:
    digest = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()
    return random.Random(int(digest[:16], 16))


def _fraction(*parts: str) -> float:
    return int(hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def generation_reply(user: str, model: str, count: int = 10) -> dict:
    rng = _rng_for(model, user)
    interventions = rng.sample(_INTERVENTIONS, max(0, min(count, len(_INTERVENTIONS))))
    hypotheses = []
    for intervention, category in interventions:
        system, outcome, readout = rng.choice(_SYSTEMS), rng.choice(_OUTCOMES), rng.choice(_READOUTS)
        hypotheses.append(
            {
                "statement": f"{SIMULATED_MARK}In aged mice, {intervention} in {system} {outcome}.",
                "mechanism": f"{intervention[0].upper()}{intervention[1:]} relieves a {category} defect that "
                f"accumulates in {system} with age.",
                "prediction": f"Treated aged mice differ from vehicle controls in {readout}, and the effect "
                "disappears when the pathway is genetically blocked.",
                "domain_category": category,
            }
        )
    return {"hypotheses": hypotheses, "notes": "Simulated reply from the project's simulated server, not a model."}


def forecast_reply(user: str, model: str, false_share: float, detailed: bool) -> dict:
    forecasts = []
    for label, text in _HYPOTHESIS_LINE.findall(user):
        support = _fraction(model, text)
        confirmed = support >= false_share
        if not detailed:
            forecasts.append({"id": label, "confirmed": confirmed})
            continue
        forecasts.append(
            {
                "id": label,
                "p_experimental_support": round(0.1 + 0.8 * support, 2),
                "recommend_for_testing": confirmed,
                "support_from_background": [],
                "assumptions": [],
                "contradictions": [],
                "reason": "Simulated forecast: no model read this hypothesis.",
                "test": {key: "simulated" for key in ("intervention", "measurement", "controls")}
                | {"supports_if": "simulated", "refutes_if": "simulated"},
            }
        )
    reply = {"forecasts": forecasts, "simulated": True}
    return {"protocol": "experimental-support-v1", **reply} if detailed else reply


def judge_reply(user: str, model: str) -> dict:
    """Simulated judge scores 0–5, mostly low as real judges' are (docs/protocol.md#vote-distribution): no model read
    anything."""
    scores = []
    for label, text in _HYPOTHESIS_LINE.findall(user):
        score = min(5, int(_fraction("judge", model, text) ** 2 * 6))
        scores.append({"id": label, "score": score, "reason": "Simulated score: no model compared these texts."})
    return {"scores": scores, "simulated": True}


def _mark_russian(value, key: str = ""):
    if isinstance(value, dict):
        return {k: _mark_russian(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_mark_russian(v, key) for v in value]
    if isinstance(value, str) and key != "id":
        return f"{RUSSIAN_MARK}{value}"
    return value


def translation_reply(user: str) -> dict:
    try:
        request = extract_json(user)
    except ReplyParseError:
        return {"translation": f"{RUSSIAN_MARK}(симулированный перевод)", "simulated": True}
    if isinstance(request, dict) and isinstance(request.get("hypotheses"), list):
        return {"translations": _mark_russian(request["hypotheses"]), "simulated": True}
    return {"translations": _mark_russian(request), "simulated": True}


_NOVELTY_VERDICTS = ("not_reported", "components_reported", "reported", "contradicted")
_PART_LINE = re.compile(r"^\[([a-z]+)\] (.*)$", re.MULTILINE)


def _candidate_sentence(text: str, hypothesis: str) -> str:
    """A sentence of a candidate as given, after its first (its title) when it has more: the one sharing the most
    words with the hypothesis."""
    sentences = re.split(r"(?<=[.!?])\s+", text.strip())
    words = set(re.findall(r"\w+", hypothesis.lower()))
    return max(sentences[1:] or sentences, key=lambda sentence: len(words & set(re.findall(r"\w+", sentence.lower()))))


def novelty_reply(user: str, model: str) -> dict:
    """A verdict drawn from the request's hash, quoting a sentence of the first candidate (one per part for
    components_reported), in the JSON the literature check asks for."""
    candidates = [(label, text) for label, text in _LABELLED_LINE.findall(user) if not label.startswith("H")]
    hypothesis = user.split("HYPOTHESIS\n", 1)[-1].split("\n", 1)[0]
    reply = {"verdict": "not_reported", "quote": "", "reference_id": "", "simulated": True}
    reply["reason"] = "Simulated judgement: no model compared these texts."
    if not candidates:
        return reply
    reply["verdict"] = _NOVELTY_VERDICTS[int(_fraction(model, user) * len(_NOVELTY_VERDICTS) * 0.9999)]
    if reply["verdict"] in ("reported", "contradicted"):
        reply["reference_id"], text = candidates[0]
        reply["quote"] = _candidate_sentence(text, hypothesis)
    elif reply["verdict"] == "components_reported":
        parts = _PART_LINE.findall(user)
        chosen = [candidates[i % len(candidates)] for i in range(len(parts))]
        reply["components"] = [
            {"part": part, "quote": _candidate_sentence(text, part_text), "reference_id": label}
            for (part, part_text), (label, text) in zip(parts, chosen, strict=True)
        ]
    return reply


# The inspiration judge (docs/protocol.md#the-inspiration-judgement): positive when the publication shares the
# hypothesis's key terms and names a design, comparator or measurement; now and then a reply that is not JSON.
INSPIRATION_QUESTION = "offer a concrete connection to the hypothesis"
INSPIRATION_MALFORMED_SHARE = 0.05
_INSPIRATION_SHARED_TERMS = 3
_CONNECTION_WORDS = {
    "design": ("randomised", "randomized", "trial", "knockout", "transgenic", "longitudinal", "we treated", "dosed"),
    "comparator": ("compared with", "versus", "control group", "placebo", "littermate controls"),
    "measurement": ("measured", "assay", "sequencing", "tracing", "quantified", "biomarker", "imaging"),
    "evidence_gap": ("remains unknown", "has not been tested", "unknown whether", "untested"),
}
_KEY_TERM = re.compile(r"[a-z][a-z0-9+-]{4,}")
_COMMON_WORDS = frozenset(
    "about after again being between could during first their there these those through under which while would "
    "where whether other another should found shows shown study studies using within without".split()
)


def _key_terms(text: str) -> set[str]:
    return {term for term in _KEY_TERM.findall(text.lower()) if term not in _COMMON_WORDS}


def inspiration_reply(user: str) -> dict | None:
    """A judgement of the later publication in the request, or None for a malformed reply (decided by the hash of the
    hypothesis and the publication, so asking again gives the same, whichever simulated model the roster names as
    its judge). A positive quotes the publication's first sentence (after its title) that names a design,
    comparator, measurement or evidence gap."""
    hypothesis = user.split("HYPOTHESIS\n", 1)[-1].split("\n", 1)[0]
    publication = user.split("LATER PUBLICATION\n", 1)[-1].split("\n", 1)[0].removeprefix("[R1] ")
    if _fraction("inspiration-malformed", hypothesis, publication) < INSPIRATION_MALFORMED_SHARE:
        return None
    reply = {"judgment": "negative", "connection": "", "quote": "", "simulated": True}
    reply["reason"] = "Simulated judgement: no model read these texts."
    if len(_key_terms(hypothesis) & _key_terms(publication)) < _INSPIRATION_SHARED_TERMS:
        return reply
    for sentence in re.split(r"(?<=[.!?])\s+", publication.strip())[1:]:
        for connection, words in _CONNECTION_WORDS.items():
            if any(word in sentence.lower() for word in words):
                return {**reply, "judgment": "positive", "connection": connection, "quote": sentence}
    return reply


def answer_text(system: str, user: str, *, model: str, config: SimulatorConfig, draw) -> str:
    """The reply text for a request, recognised by its wording."""
    if draw() < config.malformed_share:
        return f"{SIMULATED_MARK}I will think about these hypotheses and answer later."
    if INSPIRATION_QUESTION in user:
        judgement = inspiration_reply(user)
        if judgement is None:
            return f"{SIMULATED_MARK}This publication may or may not help; I would need to read more."
        return json.dumps(judgement, ensure_ascii=False)
    panel = panel_answer(system, user, model=model, config=config, draw=draw)
    if panel is not None:
        return json.dumps(panel, ensure_ascii=False)
    if asked := _GENERATION_COUNT.search(user):
        count = config.hypotheses_per_reply or _COUNT_OF_WORD.get(asked.group(1), 10)
        reply = generation_reply(user, model, count)
    elif "will it be confirmed experimentally" in user or "Will this hypothesis be confirmed" in user:
        reply = forecast_reply(user, model, config.false_share, detailed=False)
    elif "p_experimental_support" in user:
        reply = forecast_reply(user, model, config.false_share, detailed=True)
    elif "matches the reference statement" in user:
        reply = judge_reply(user, model)
    elif "Russian" in user or "Russian" in system:
        reply = translation_reply(user)
    else:
        reply = novelty_reply(user, model)
    forecasts = reply.get("forecasts")
    if forecasts and draw() < config.missing_id_share:
        forecasts.pop(int(draw() * len(forecasts)))
    return json.dumps(reply, ensure_ascii=False)


# The AI review panel (reviewapp.panel), recognised by the first sentence of its prompts. A proposal's simulated
# quality is a hash of its claim plus credit for each section it has, so the three roles broadly agree, a fuller
# proposal tends to score higher, and a section the packet lacks makes the dimensions resting on it unknown.
PANEL_REVIEW_MARK = "on the eight dimensions of the hypothesis profile"
PANEL_CRITIQUE_MARK = "say which is the stronger research proposal"
PANEL_REVISION_MARK = "Judge the revision below against its predecessor"
_PANEL_DIMENSIONS = (
    "importance",
    "novelty",
    "grounding",
    "falsifiability",
    "data_resolvability",
    "feasibility",
    "alternatives",
    "actionability",
)
_SECTION_OF_DIMENSION = {
    "data_resolvability": "Data requirements:",
    "alternatives": "Alternative explanations:",
    "feasibility": "Investigation plan:",
}
_SECTIONS = ("Mechanism:", "Prediction:", "Investigation plan:", "Data requirements:", "Alternative explanations:")
_PANEL_BLOCK = re.compile(r"^(PROPOSAL A|PROPOSAL B|PROPOSAL|PREDECESSOR|REVISION)\n(.*?)(?=\n\n|\Z)", re.S | re.M)


def _panel_blocks(user: str) -> dict[str, str]:
    return {heading: text for heading, text in _PANEL_BLOCK.findall(user)}


def _quality(proposal: str) -> float:
    """0–1: a hash of the claim plus credit for every section the proposal has."""
    claim = proposal.split("\n", 1)[0]
    sections = sum(section in proposal for section in _SECTIONS)
    return min(1.0, 0.15 + 0.55 * _fraction("quality", claim) + 0.06 * sections)


def panel_review_reply(system: str, user: str, model: str, malformed: bool) -> dict:
    """Each role (its system message) scores with its own noise around the proposal's simulated quality."""
    proposal = _panel_blocks(user).get("PROPOSAL", user)
    model = f"{model}\x1f{system}"
    quality = _quality(proposal)
    scores: dict[str, int | str] = {}
    for dimension in _PANEL_DIMENSIONS:
        chance = _fraction("missing", model, dimension, proposal)
        section = _SECTION_OF_DIMENSION.get(dimension)
        if (section and section not in proposal and chance < 0.7) or chance < 0.03:
            scores[dimension] = "unknown"
        elif chance > (0.9 if dimension == "actionability" else 0.99):
            scores[dimension] = "inapplicable"
        else:
            noise = (_fraction("score", model, dimension, proposal) - 0.5) * 0.3
            scores[dimension] = max(1, min(10, round(1 + 9 * (quality + noise))))
    eligible: bool | str = quality >= 0.3
    if _fraction("eligible", model, proposal) < 0.06:
        eligible = "unknown"
    if malformed:  # a score out of the scale: the panel asks once more
        scores[_PANEL_DIMENSIONS[int(_fraction("bad", model, proposal) * 8)]] = 0
    rationale = (
        f"{SIMULATED_MARK}No model read this proposal: the simulated server scored it from a hash of its text and "
        "the sections it has."
    )
    return {"eligible": eligible, "scores": scores, "rationale": rationale, "simulated": True}


def panel_critique_reply(user: str, model: str, position_bias: float) -> dict:
    blocks = _panel_blocks(user)
    first, second = blocks.get("PROPOSAL A", ""), blocks.get("PROPOSAL B", "")
    chance = _fraction("critique", model, first, second)
    lacking = "Investigation plan:" not in first or "Investigation plan:" not in second
    rationale = f"{SIMULATED_MARK}No model compared these proposals; the simulated server favours the one shown first."
    if chance < 0.04 or (lacking and chance < 0.25):
        return {"preference": "insufficient", "rationale": rationale, "simulated": True}
    difference = _quality(first) - _quality(second) + position_bias + (chance - 0.5) * 0.2
    preference = "tie" if abs(difference) < 0.04 else "A" if difference > 0 else "B"
    return {"preference": preference, "rationale": rationale, "simulated": True}


def panel_revision_reply(user: str, model: str) -> dict:
    blocks = _panel_blocks(user)
    before, after = blocks.get("PREDECESSOR", ""), blocks.get("REVISION", "")
    change = _quality(after) - _quality(before)
    added = sum(section in after and section not in before for section in _SECTIONS)
    if _fraction("revision", model, before, after) < 0.08:
        category = "insufficient_evidence"
    elif change > 0.08:
        category = "substantive_progress"
    elif added:
        category = "necessary_repair"
    else:
        category = "marginal_repetition"
    rationale = f"{SIMULATED_MARK}No model compared these versions: the simulated server judged their text hashes."
    return {"category": category, "rationale": rationale, "simulated": True}


# The path and run judges (reviewapp.panel.level_prompts), recognised by their first sentence. The dimensions are read
# from the prompt's rubric ("- key: definition" lines), so a new rubric version needs no change here. Scores follow
# the versions' simulated quality with noise; a share is "unknown" or "inapplicable", so every composite rule runs.
PANEL_LEVEL_MARKS = (
    "Assess the development path below on each dimension of the rubric",
    "Assess the research run below as a whole on each dimension of the rubric",
)
_RUBRIC_KEY = re.compile(r"^- ([a-z_]+): ", re.MULTILINE)
_CLAIM_LINE = re.compile(r"^Claim: (.*)$", re.MULTILINE)


def panel_level_reply(user: str, model: str) -> dict:
    section = user.split("DIMENSIONS", 1)[-1].split("ANCHORS", 1)[0]
    keys = _RUBRIC_KEY.findall(section)
    claims = _CLAIM_LINE.findall(user)
    quality = sum(_quality(claim) for claim in claims) / len(claims) if claims else 0.5
    evidence = claims[-1][:200] if claims else ""
    dimensions = {}
    for key in keys:
        chance = _fraction("level", model, key, user)
        if chance < 0.08:
            dimensions[key] = {
                "score": "unknown",
                "evidence": "",
                "rationale": f"{SIMULATED_MARK}The records do not show it.",
            }
        elif chance > 0.94:
            dimensions[key] = {
                "score": "inapplicable",
                "evidence": "",
                "rationale": f"{SIMULATED_MARK}Does not apply here.",
            }
        else:
            score = max(0, min(4, round(4 * quality + (_fraction("level-score", model, key, user) - 0.5) * 1.5)))
            rationale = f"{SIMULATED_MARK}No model read these records: scored from a hash of their text."
            dimensions[key] = {"score": score, "evidence": evidence, "rationale": rationale}
    return {"dimensions": dimensions, "simulated": True}


def panel_answer(system: str, user: str, *, model: str, config: SimulatorConfig, draw) -> dict | None:
    """The reply to an AI panel request, or None when the request is not the panel's."""
    if any(mark in user for mark in PANEL_LEVEL_MARKS):
        return panel_level_reply(user, model)
    if PANEL_REVIEW_MARK in user:
        return panel_review_reply(system, user, model, malformed=draw() < config.panel_malformed_share)
    if PANEL_CRITIQUE_MARK in user:
        return panel_critique_reply(user, model, config.position_bias)
    if PANEL_REVISION_MARK in user:
        return panel_revision_reply(user, model)
    return None


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def messages_of(protocol: str, body: dict) -> tuple[str, str]:
    """(system, user) text of a request in any of the three protocols."""
    if protocol == "openai":
        messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
        system = "".join(_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
        return system, "".join(_text(m.get("content")) for m in messages if m.get("role") == "user")
    if protocol == "anthropic":
        return _text(body.get("system", "")), "".join(_text(m.get("content")) for m in body.get("messages", []))
    system = "".join(p.get("text", "") for p in body.get("systemInstruction", {}).get("parts", []))
    user = "".join(p.get("text", "") for c in body.get("contents", []) for p in c.get("parts", []))
    return system, user


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def protocol_reply(protocol: str, *, model: str, system: str, user: str, text: str) -> dict:
    input_tokens, output_tokens = _tokens(system + user), _tokens(text)
    if protocol == "openai":
        return {
            "id": f"chatcmpl-simulated-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": None, "annotations": []},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": input_tokens,
                "completion_tokens": output_tokens,
                "total_tokens": input_tokens + output_tokens,
            },
        }
    if protocol == "anthropic":
        return {
            "id": f"msg_simulated_{uuid.uuid4().hex[:12]}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        }
    return {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {
            "promptTokenCount": input_tokens,
            "candidatesTokenCount": output_tokens,
            "totalTokenCount": input_tokens + output_tokens,
        },
        "modelVersion": model,
    }


# Error bodies in each protocol's own shape (what the providers' SDKs parse): OpenAI {"error": {"message", "type",
# "param", "code"}}, Anthropic {"type": "error", "error": {"type", "message"}}, Gemini {"error": {"code", "message",
# "status"}}.
_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_GEMINI_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}
_OPENAI_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 404: "invalid_request_error"}


def error_body(protocol: str, status: int, message: str, *, code: str | None = None, details=None) -> dict:
    """An error of the protocol, as its provider writes one. code: OpenAI's error code, or Anthropic's
    error.details.error_code; details: Gemini's error details."""
    if protocol == "anthropic":
        error = {"type": _ANTHROPIC_TYPES.get(status, "api_error"), "message": message}
        if code:
            error["details"] = {"error_code": code}
        return {"type": "error", "error": error, "request_id": f"req_simulated_{uuid.uuid4().hex[:12]}"}
    if protocol == "gemini":
        error = {"code": status, "message": message, "status": _GEMINI_STATUSES.get(status, "UNKNOWN")}
        return {"error": {**error, "details": details}} if details else {"error": error}
    kind = _OPENAI_TYPES.get(status, "server_error" if status >= 500 else "requests")
    return {"error": {"message": message, "type": code or kind, "param": None, "code": code}}


def throttled_reply(protocol: str, retry_after: float) -> tuple[int, dict, dict]:
    """(status, headers, body) of a simulated 429 in the protocol's own shape."""
    message = "Simulated rate limit: the simulated server asks you to wait."
    if protocol == "gemini":
        details = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry_after:g}s"}]
        return 429, {}, error_body(protocol, 429, message, details=details)
    headers = {"retry-after": f"{retry_after:g}"}
    if protocol == "anthropic":
        return 429, headers, error_body(protocol, 429, message)
    headers["retry-after-ms"] = f"{retry_after * 1000:g}"
    return 429, headers, error_body(protocol, 429, message, code="rate_limit_exceeded")


def overloaded_reply(protocol: str) -> tuple[int, dict]:
    message = "Simulated overload: the simulated server is busy."
    status = 529 if protocol == "anthropic" else 503
    return status, error_body(protocol, status, message)


def quota_reply(protocol: str) -> tuple[int, dict]:
    """A 429 that waiting does not lift: OpenAI's insufficient_quota, Anthropic's spend limit (by its error code),
    Gemini's per-day quota."""
    message = "Simulated quota: the simulated account has used up its quota."
    if protocol == "anthropic":
        return 429, error_body(protocol, 429, message, code="enforced_spend_limit_reached")
    if protocol == "gemini":
        details = [
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [
                    {
                        "quotaMetric": "generativelanguage.googleapis.com/generate_requests_per_model_per_day",
                        "quotaId": "GenerateRequestsPerDayPerProjectPerModel",
                    }
                ],
            }
        ]
        return 429, error_body(protocol, 429, message, details=details)
    return 429, error_body(protocol, 429, message, code="insufficient_quota")


class SimulatorHandler(BaseHTTPRequestHandler):
    server: "SimulatedModelServer"
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        if self.path == "/health":
            # The configuration too: what an audit of a simulated judge records to be replayed.
            self._send(
                200,
                {
                    "status": "ok",
                    "simulated": True,
                    "config": asdict(self.server.config),
                },
            )
        else:
            self._send(404, error_body("openai", 404, "not found"))

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        protocol, model = self._route()
        if protocol is None:
            return self._send(404, error_body("openai", 404, f"the simulated server has no {self.path}"))
        try:
            body = json.loads(raw)
        except ValueError:
            return self._send(400, error_body(protocol, 400, "the request body is not JSON"))
        if not self._authorised(protocol):
            return self._send(401, error_body(protocol, 401, "no key in the protocol's authentication header"))
        if any(field in body for field in _TOOL_FIELDS):
            return self._send(400, error_body(protocol, 400, "the simulated server accepts no tools"))

        config, draw = self.server.config, self.server.draw
        if config.latency_seconds:
            time.sleep(config.latency_seconds)
        if draw() < config.rate_limit_share:
            status, headers, error = throttled_reply(protocol, config.retry_after_seconds)
            return self._send(status, error, headers)
        if draw() < config.overloaded_share:
            return self._send(*overloaded_reply(protocol))
        if draw() < config.quota_share:
            return self._send(*quota_reply(protocol))

        model = model or str(body.get("model", ""))
        model = model if model.startswith("simulated") else f"simulated-{model}"
        system, user = messages_of(protocol, body)
        text = answer_text(system, user, model=model, config=config, draw=draw)
        self._send(200, protocol_reply(protocol, model=model, system=system, user=user, text=text))

    def _route(self) -> tuple[str | None, str]:
        path = self.path.split("?", 1)[0]
        if path in ("/v1/chat/completions", "/chat/completions"):
            return "openai", ""
        if path == "/v1/messages":
            return "anthropic", ""
        match = _GEMINI_PATH.match(path)
        return ("gemini", match.group(1)) if match else (None, "")

    def _authorised(self, protocol: str) -> bool:
        if protocol == "openai":
            return self.headers.get("authorization", "").startswith("Bearer ")
        if protocol == "anthropic":  # the API reference's x-api-key, or the SDK's Authorization: Bearer
            key = self.headers.get("x-api-key") or self.headers.get("authorization", "").startswith("Bearer ")
            return bool(key) and bool(self.headers.get("anthropic-version"))
        return bool(self.headers.get("x-goog-api-key"))

    def _send(self, status: int, payload: dict, headers: dict | None = None):
        data = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("x-simulated", "true")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format, *args):
        logger.debug("simulator: " + format, *args)


class SimulatedModelServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], config: SimulatorConfig):
        super().__init__(address, SimulatorHandler)
        self.config = config
        self._random = random.Random(config.seed)
        self._lock = threading.Lock()

    def draw(self) -> float:
        with self._lock:
            return self._random.random()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"


def start_simulator(config: SimulatorConfig | None = None, *, host: str = "127.0.0.1", port: int = 0):
    """Serve in a background thread (port 0: any free port); stop with server.shutdown()."""
    server = SimulatedModelServer((host, port), config or SimulatorConfig())
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="simulated-model-server", daemon=True
    ).start()
    return server

"""Gemini generateContent (docs/protocol.md#model-providers)."""

import re
from urllib.parse import quote

from screening.llm.providers.transport import Reply, error_of, finished_reply

# Cut by a length limit: the output budget (MAX_TOKENS) or the per-request limit before generation finished
# (CONTINUATION).
_CUT = {"MAX_TOKENS", "CONTINUATION"}
_FINE = {"STOP", "FINISH_REASON_UNSPECIFIED", ""}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")
_PER_DAY = re.compile(r"per ?day", re.IGNORECASE)


def url(endpoint) -> str:
    model = endpoint.model_id.removeprefix("models/")
    return f"{endpoint.base_url.rstrip('/')}/v1beta/models/{quote(model, safe='-._~')}:generateContent"


def auth_headers(key: str) -> dict:
    return {"x-goog-api-key": key}


def build_body(endpoint, *, system: str, user: str, json_mode: bool, json_schema: dict | None) -> dict:
    # Tools (and Google Search grounding) are off by leaving out tools and toolConfig.
    generation_config = {"maxOutputTokens": endpoint.max_tokens}
    if json_mode and endpoint.supports_json_mode:
        generation_config["responseMimeType"] = "application/json"
    if endpoint.accepts_temperature and endpoint.temperature is not None:
        generation_config["temperature"] = endpoint.temperature
    return {
        "systemInstruction": {"parts": [{"text": system}]},
        "contents": [{"role": "user", "parts": [{"text": user}]}],
        "generationConfig": generation_config,
    }


def _parts_text(content) -> str:
    parts = content.get("parts") if isinstance(content, dict) and isinstance(content.get("parts"), list) else []
    return "".join(part.get("text", "") for part in parts if isinstance(part, dict))


def read_messages(body: dict) -> tuple[str, str]:
    """(system, user) of a request body this adapter built, for the readable list of a run's calls."""
    contents = body.get("contents") if isinstance(body.get("contents"), list) else []
    return _parts_text(body.get("systemInstruction")), "".join(_parts_text(content) for content in contents)


def read_reply(data: dict) -> Reply:
    usage = data.get("usageMetadata") if isinstance(data.get("usageMetadata"), dict) else {}
    # Output is the answer and the thinking; candidatesTokenCount is absent when the whole budget went on thinking.
    counts = [usage.get(name) for name in ("candidatesTokenCount", "thoughtsTokenCount")]
    output = (
        sum(count for count in counts if isinstance(count, int)) if any(isinstance(c, int) for c in counts) else None
    )
    tokens = {"input_tokens": usage.get("promptTokenCount"), "output_tokens": output}
    candidates = data.get("candidates")
    if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], dict):
        feedback = data.get("promptFeedback") if isinstance(data.get("promptFeedback"), dict) else {}
        reason = feedback.get("blockReason")
        error = f"the request was refused (blockReason {reason})" if reason else "the reply has no candidates"
        return Reply(text=None, finish_reason=reason or "", usable=False, error=error, **tokens)
    candidate = candidates[0]
    content = candidate.get("content") if isinstance(candidate.get("content"), dict) else {}
    parts = content.get("parts") if isinstance(content.get("parts"), list) else []
    # Thought summaries are not the answer.
    text = "".join(p.get("text", "") for p in parts if isinstance(p, dict) and not p.get("thought"))
    finish = candidate.get("finishReason") or ""
    if finish in _CUT:
        error = f"the reply was cut by the length limit (finishReason {finish})"
    elif finish not in _FINE:
        error = f"refused (finishReason {finish})"
    else:
        error = ""
    return finished_reply(text, finish, tokens, error)


def _details(data) -> list[dict]:
    details = error_of(data).get("details")
    return [d for d in details if isinstance(d, dict)] if isinstance(details, list) else []


def is_quota_exhausted(status: int, data) -> bool:
    """A 429 naming a per-day quota (QuotaFailure violation ids like GenerateRequestsPerDayPerProjectPerModel)."""
    if status != 429:
        return False
    texts = [str(error_of(data).get("message", ""))]
    for detail in _details(data):
        for violation in detail.get("violations") or []:
            if isinstance(violation, dict):
                texts += [str(violation.get("quotaId", "")), str(violation.get("quotaMetric", ""))]
    return any(_PER_DAY.search(text) for text in texts)


def body_retry_delay(data) -> float | None:
    """RetryInfo.retryDelay from the error details, e.g. "3s" or "1.5s"."""
    for detail in _details(data):
        if str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
            match = _DURATION.match(str(detail.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    return None

"""Anthropic messages (docs/protocol.md#model-providers)."""

import re

from screening.llm.providers.transport import Reply, error_of, finished_reply

ANTHROPIC_VERSION = "2023-06-01"

_UNUSABLE_STOP = {
    "max_tokens": "the reply was cut by the length limit (stop_reason max_tokens)",
    "model_context_window_exceeded": "the reply was cut by the context window",
    "refusal": "the reply was refused (stop_reason refusal)",
    "tool_use": "the reply asked for a tool although none was offered",
    "pause_turn": "the reply paused before finishing (stop_reason pause_turn)",
}
# A 429 that names the account's spend or usage limit, or its credit: waiting will not help.
_SPEND_LIMIT = re.compile(r"spend(ing)? limit|usage limit|credit balance|billing", re.IGNORECASE)


def url(endpoint) -> str:
    return f"{endpoint.base_url.rstrip('/')}/v1/messages"


def auth_headers(key: str) -> dict:
    return {"x-api-key": key, "anthropic-version": ANTHROPIC_VERSION}


def build_body(endpoint, *, system: str, user: str, json_mode: bool, json_schema: dict | None) -> dict:
    # Tools are off by leaving out tools and tool_choice.
    body = {
        "model": endpoint.model_id,
        "max_tokens": endpoint.max_tokens,
        "system": system,
        "messages": [{"role": "user", "content": user}],
    }
    # Native JSON output needs a schema here; without one the prompt alone asks for JSON.
    if json_mode and endpoint.supports_json_mode and json_schema:
        body["output_config"] = {"format": {"type": "json_schema", "schema": json_schema}}
    if endpoint.accepts_temperature and endpoint.temperature is not None:
        body["temperature"] = endpoint.temperature
    return body


def read_reply(data: dict) -> Reply:
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    tokens = {"input_tokens": usage.get("input_tokens"), "output_tokens": usage.get("output_tokens")}
    blocks = data.get("content") if isinstance(data.get("content"), list) else []
    text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
    stop = data.get("stop_reason") or ""
    return finished_reply(text, stop, tokens, _UNUSABLE_STOP.get(stop, ""))


def is_quota_exhausted(status: int, data) -> bool:
    return status == 429 and bool(_SPEND_LIMIT.search(str(error_of(data).get("message", ""))))


def body_retry_delay(data) -> float | None:
    return None  # Anthropic names the delay in the retry-after header

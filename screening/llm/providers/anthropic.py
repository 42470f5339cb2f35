"""Anthropic messages (docs/protocol.md#model-providers)."""

from django.conf import settings

from screening.llm.providers.transport import Reply, error_of, finished_reply

# The provider's SDK requires streaming for a request that may take longer than ten minutes, which it reckons as
# max_tokens above 128,000 × 600 / 3,600; a request without streaming asks for at most this many tokens.
NONSTREAMING_MAX_TOKENS = 128_000 * 600 // 3_600

_UNUSABLE_STOP = {
    "max_tokens": "the reply was cut by the length limit (stop_reason max_tokens)",
    "model_context_window_exceeded": "the reply was cut by the context window",
    "refusal": "the reply was refused (stop_reason refusal)",
    "tool_use": "the reply asked for a tool although none was offered",
    "pause_turn": "the reply paused before finishing (stop_reason pause_turn)",
}
# Error codes (error.details.error_code; the message's wording is not to be matched) of limits that waiting does not
# lift: the account's spend limits on 429, a linked organization's billing on 402. A ramp limit
# (`ramp_limit_exceeded`, a cap on how fast usage may grow) does lift: the provider says to retry after the
# retry-after header, so it is retried like any 429.
_SPEND_LIMIT_CODES = {"enforced_spend_limit_reached", "contract_spend_limit_reached"}
_BILLING_CODE_PREFIX = "linked_organization_"


def url(endpoint) -> str:
    return f"{endpoint.base_url.rstrip('/')}/v1/messages"


def auth_headers(key: str) -> dict:
    # The API reference's key header; the version is a setting (ANTHROPIC_VERSION), still accepted as documented.
    return {"x-api-key": key, "anthropic-version": settings.ANTHROPIC_VERSION}


def build_body(endpoint, *, system: str, user: str, json_mode: bool, json_schema: dict | None) -> dict:
    # Tools are off by leaving out tools and tool_choice. temperature is not a Messages parameter any more: never sent.
    body = {
        "model": endpoint.model_id,
        "max_tokens": min(endpoint.max_tokens, NONSTREAMING_MAX_TOKENS),
        "system": system,
        "messages": [{"role": "user", "content": user}],
    }
    # Native JSON output needs a schema here; without one the prompt alone asks for JSON.
    if json_mode and endpoint.supports_json_mode and json_schema:
        body["output_config"] = {"format": {"type": "json_schema", "schema": json_schema}}
    return body


def read_messages(body: dict) -> tuple[str, str]:
    """(system, user) of a request body this adapter built, for the readable list of a run's calls."""
    messages = body.get("messages") if isinstance(body.get("messages"), list) else []
    user = "".join(m.get("content", "") for m in messages if isinstance(m, dict) and isinstance(m.get("content"), str))
    system = body.get("system")
    return (system if isinstance(system, str) else ""), user


def read_reply(data: dict) -> Reply:
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    # All input counts: uncached, written to the cache and read from it.
    parts = [usage.get(name) for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")]
    input_tokens = sum(part for part in parts if isinstance(part, int)) if isinstance(parts[0], int) else None
    tokens = {"input_tokens": input_tokens, "output_tokens": usage.get("output_tokens")}
    blocks = data.get("content") if isinstance(data.get("content"), list) else []
    text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
    stop = data.get("stop_reason") or ""
    return finished_reply(text, stop, tokens, _UNUSABLE_STOP.get(stop, ""))


def error_code(data) -> str:
    details = error_of(data).get("details")
    code = details.get("error_code") if isinstance(details, dict) else None
    return code if isinstance(code, str) else ""


def is_quota_exhausted(status: int, data) -> bool:
    code = error_code(data)
    return (status == 429 and code in _SPEND_LIMIT_CODES) or (status == 402 and code.startswith(_BILLING_CODE_PREFIX))


def body_retry_delay(data) -> float | None:
    return None  # Anthropic names the delay in the retry-after header

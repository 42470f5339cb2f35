"""OpenAI-compatible chat completions: OpenAI, xAI, OpenRouter, vLLM, Ollama, llama.cpp
(docs/protocol.md#model-providers)."""

from screening.llm.providers.transport import Reply, error_of, finished_reply

# Reasons a reply ended that leave it unusable: cut by the length limit, filtered, or asking to call a tool.
_UNUSABLE_FINISH = {
    "length": "the reply was cut by the length limit (finish_reason length)",
    "content_filter": "the reply was refused (finish_reason content_filter)",
    "tool_calls": "the reply asked for a tool although none was offered",
    "function_call": "the reply asked for a tool although none was offered",
}


def url(endpoint) -> str:
    return f"{endpoint.base_url.rstrip('/')}/chat/completions"


def auth_headers(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


def build_body(endpoint, *, system: str, user: str, json_mode: bool, json_schema: dict | None) -> dict:
    # Tools are off by leaving out tools, tool_choice and web_search_options.
    body = {
        "model": endpoint.model_id,
        "messages": [{"role": endpoint.system_role, "content": system}, {"role": "user", "content": user}],
        endpoint.max_tokens_field: endpoint.max_tokens,
    }
    if json_mode and endpoint.supports_json_mode:
        body["response_format"] = {"type": "json_object"}
    if endpoint.accepts_temperature and endpoint.temperature is not None:
        body["temperature"] = endpoint.temperature
    return body


def read_messages(body: dict) -> tuple[str, str]:
    """(system, user) of a request body this adapter built, for the readable list of a run's calls."""
    messages = body.get("messages") if isinstance(body.get("messages"), list) else []
    texts = {role: "" for role in ("system", "user")}
    for message in messages:
        if isinstance(message, dict):
            role = "system" if message.get("role") in ("system", "developer") else message.get("role")
            if role in texts:
                texts[role] += _content_text(message.get("content"))
    return texts["system"], texts["user"]


def _content_text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # some servers answer with content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def read_reply(data: dict) -> Reply:
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    tokens = {"input_tokens": usage.get("prompt_tokens"), "output_tokens": usage.get("completion_tokens")}
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return Reply(text=None, finish_reason="", usable=False, error="the reply has no choices", **tokens)
    choice = choices[0]
    message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    text = _content_text(message.get("content"))
    finish = choice.get("finish_reason") or ""
    error = f"refused: {message['refusal']}" if message.get("refusal") else _UNUSABLE_FINISH.get(finish, "")
    return finished_reply(text, finish, tokens, error)


def is_quota_exhausted(status: int, data) -> bool:
    """A 429 for an exhausted quota or billing limit: waiting will not help."""
    error = error_of(data)
    return status == 429 and "insufficient_quota" in (str(error.get("code")), str(error.get("type")))


def body_retry_delay(data) -> float | None:
    return None  # OpenAI-compatible servers name the delay in headers only

"""Model providers: one `complete()` over three wire protocols (OpenAI-compatible, Anthropic, Gemini).

`complete()` never raises for a provider problem: it returns a Completion with usable=False and the reason. Call it
outside `transaction.atomic`: concurrency slots and call records must be visible to other workers at once.
"""

import hashlib
import json
import os
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from screening.llm.models import ModelCall, ModelEndpoint, base_url_problem, key_variable_problem
from screening.llm.providers import anthropic, gemini, openai_compat
from screening.llm.providers.transport import Completion, call_with_retries, encode_body

__all__ = ["CallTranscript", "Completion", "call_transcript", "complete", "request_body", "request_seed"]

ADAPTERS = {
    ModelEndpoint.Protocol.OPENAI: openai_compat,
    ModelEndpoint.Protocol.ANTHROPIC: anthropic,
    ModelEndpoint.Protocol.GEMINI: gemini,
}

# What the simulated server receives as a key when the provider's variable is unset.
SIMULATED_KEY = "simulated-key"


def request_body(endpoint: ModelEndpoint, *, system: str, user: str, json_mode: bool = True, json_schema=None) -> dict:
    """The JSON body `complete()` sends for these messages (without any key)."""
    return ADAPTERS[endpoint.protocol].build_body(
        endpoint, system=system, user=user, json_mode=json_mode, json_schema=json_schema
    )


def request_seed(endpoint: ModelEndpoint) -> int | None:
    """The sampling seed the requests to this endpoint carry (OpenAI-compatible `seed`, Gemini's
    `generationConfig.seed`), read from the body `complete()` builds; None when they carry none."""
    body = request_body(endpoint, system="", user="")
    seed = body.get("seed", (body.get("generationConfig") or {}).get("seed"))
    return seed if isinstance(seed, int) else None


def _key(endpoint: ModelEndpoint) -> tuple[str | None, str]:
    """(key, error). No variable named: a local server without authentication."""
    if not endpoint.api_key_env:
        return None, ""
    # Checked again here: an endpoint stored past validation must not send a server secret or a key in clear text.
    problem = key_variable_problem(endpoint.api_key_env)
    key = os.environ.get(endpoint.api_key_env, "")
    if key and not problem:
        problem = base_url_problem(endpoint.base_url)
    if problem:
        return None, problem
    if key:
        return key, ""
    if endpoint.is_simulated:
        return SIMULATED_KEY, ""
    return None, f"the environment variable {endpoint.api_key_env} is not set"


def complete(
    *,
    endpoint: ModelEndpoint,
    system: str,
    user: str,
    purpose: str,
    run=None,
    protocol_attempt: int = 1,
    json_mode: bool = True,
    json_schema: dict | None = None,
) -> Completion:
    """Send one request (system + user message, tools off) and return the reply text.

    Transient errors are retried (screening.llm.providers.transport); every HTTP attempt is recorded as a ModelCall.
    json_schema is used only where a provider's native JSON output needs a schema (Anthropic)."""
    adapter = ADAPTERS[endpoint.protocol]
    body = request_body(endpoint, system=system, user=user, json_mode=json_mode, json_schema=json_schema)
    key, key_error = _key(endpoint)
    if not endpoint.enabled:
        key_error = f"the endpoint {endpoint.display_name} is disabled"
    if key_error:
        call = ModelCall.objects.create(
            endpoint=endpoint,
            run_id=getattr(run, "pk", run),
            purpose=purpose,
            protocol_attempt=protocol_attempt,
            transport_attempt=1,
            url=adapter.url(endpoint),
            model_id=endpoint.model_id,
            request_body=body,
            request_sha256=hashlib.sha256(encode_body(body)).hexdigest(),
            error=key_error,
            simulated=endpoint.is_simulated,
        )
        return Completion(text=None, usable=False, error=key_error, http_status=None, call=call)
    return call_with_retries(
        endpoint=endpoint,
        adapter=adapter,
        key=key,
        body=body,
        purpose=purpose,
        run=run,
        protocol_attempt=protocol_attempt,
    )


@dataclass(frozen=True)
class CallTranscript:
    """A recorded call as people read it: the prompt sent and the reply's text (None when the body holds none)."""

    system: str
    user: str
    reply: str | None


def call_transcript(call: ModelCall) -> CallTranscript:
    """The prompt and reply of a recorded call, read with the adapter of its endpoint's wire protocol."""
    adapter = ADAPTERS[call.endpoint.protocol]
    system, user = adapter.read_messages(call.request_body if isinstance(call.request_body, dict) else {})
    try:
        data = json.loads(call.response_body) if call.response_body else None
    except ValueError:
        data = None
    reply = adapter.read_reply(data).text if isinstance(data, dict) else None
    return CallTranscript(system=system, user=user, reply=reply)


def simulated_server_configuration(base_url: str, *, timeout: float = 2.0) -> dict | None:
    """The configuration the simulated model server at this base URL reports on its /health (its seed and fault
    shares), or None when no simulated server answers there."""
    parts = urlsplit(base_url)
    try:
        data = httpx.get(f"{parts.scheme}://{parts.netloc}/health", timeout=timeout).json()
    except (httpx.HTTPError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("simulated") is not True or not isinstance(data.get("config"), dict):
        return None
    return data["config"]

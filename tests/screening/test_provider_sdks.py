"""The simulated model server speaks the providers' protocols as their official Python SDKs (openai, anthropic,
google-genai; test dependencies only) expect: every reply and every error it gives validates against the SDKs' types,
and the SDKs' own clients parse them, authenticating as each SDK does.

The SDKs' clients construct their reply objects leniently (a missing or mistyped field passes), so each reply's raw
body is also validated in pydantic's strict mode against the SDK's type, with no field the type does not know."""

import json

import anthropic
import httpx
import openai
import pydantic
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from screening.llm.simulator import SimulatorConfig, start_simulator

GENERATE = "Propose ten hypotheses that answer the question: does the bone-marrow niche shape clonal fitness?"


@pytest.fixture
def simulator_with():
    servers = []

    def start(**config):
        server = start_simulator(SimulatorConfig(seed=1, **config))
        servers.append(server)
        return server.url

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def openai_client(url):
    return openai.OpenAI(api_key="simulated-key", base_url=f"{url}/v1", max_retries=0)


def anthropic_client(url):
    return anthropic.Anthropic(api_key="simulated-key", base_url=url, max_retries=0)


def gemini_client(url):
    options = genai_types.HttpOptions(
        base_url=url, api_version="v1beta", retry_options=genai_types.HttpRetryOptions(attempts=1)
    )
    return genai.Client(api_key="simulated-key", http_options=options)


def openai_ask(client):
    return client.chat.completions.create(
        model="gpt-6-astra", messages=[{"role": "system", "content": "JSON"}, {"role": "user", "content": GENERATE}]
    )


def anthropic_ask(client):
    return client.messages.create(
        model="claude-opus-5-5", max_tokens=16_000, system="JSON", messages=[{"role": "user", "content": GENERATE}]
    )


def gemini_ask(client):
    return client.models.generate_content(model="gemini-4-argon", contents=GENERATE)


def unknown_fields(value, path: str = "$") -> list[str]:
    """Fields of a validated SDK object that its type does not declare (the SDKs' types allow extra fields)."""
    if isinstance(value, pydantic.BaseModel):
        found = [f"{path}.{name}" for name in value.model_extra or {}]
        for name in type(value).model_fields:
            found += unknown_fields(getattr(value, name), f"{path}.{name}")
        return found
    if isinstance(value, list | tuple):
        return [found for i, item in enumerate(value) for found in unknown_fields(item, f"{path}[{i}]")]
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in unknown_fields(item, f"{path}.{key}")]
    return []


def strictly_valid(sdk_type, raw: str | bytes):
    """The raw JSON validated in strict mode (no coercion: a number sent as text, a missing required field fail)
    against the SDK's type, declaring every field it holds."""
    parsed = sdk_type.model_validate_json(raw, strict=True)
    assert not unknown_fields(parsed), unknown_fields(parsed)
    return parsed


# Replies -----------------------------------------------------------------------------------------------------------


def test_the_openai_sdk_parses_a_simulated_completion(simulator_with):
    client = openai_client(simulator_with())
    completion = openai_ask(client)
    assert isinstance(completion, openai.types.chat.ChatCompletion)
    choice = completion.choices[0]
    assert choice.message.refusal is None and choice.logprobs is None and choice.finish_reason == "stop"
    # Given by the server, as OpenAI's are, not filled in by the SDK.
    assert "logprobs" in choice.model_fields_set and "refusal" in choice.message.model_fields_set
    assert "[Simulated]" in choice.message.content and completion.usage.completion_tokens > 0
    raw = client.chat.completions.with_raw_response.create(
        model="gpt-6-astra", messages=[{"role": "system", "content": "JSON"}, {"role": "user", "content": GENERATE}]
    )
    strictly_valid(openai.types.chat.ChatCompletion, raw.http_response.text)


def test_the_anthropic_sdk_parses_a_simulated_message_with_its_bearer_authentication(simulator_with):
    client = anthropic_client(simulator_with())
    message = anthropic_ask(client)
    assert isinstance(message, anthropic.types.Message)
    assert message.stop_reason == "end_turn" and "[Simulated]" in message.content[0].text
    assert message.usage.cache_read_input_tokens == 0 and message.usage.input_tokens > 0
    raw = client.messages.with_raw_response.create(
        model="claude-opus-5-5", max_tokens=16_000, system="JSON", messages=[{"role": "user", "content": GENERATE}]
    )
    strict = strictly_valid(anthropic.types.Message, raw.http_response.text)
    assert strict.content[0].type == "text" and strict.usage.output_tokens > 0


def test_the_gemini_sdk_parses_a_simulated_answer(simulator_with):
    url = simulator_with()
    response = gemini_ask(gemini_client(url))
    assert isinstance(response, genai_types.GenerateContentResponse)
    assert "[Simulated]" in response.text
    assert response.candidates[0].finish_reason == genai_types.FinishReason.STOP
    assert response.usage_metadata.candidates_token_count > 0
    # The same request as the SDK's, read raw (the SDK's client keeps no raw body to read back).
    raw = httpx.post(
        f"{url}/v1beta/models/gemini-4-argon:generateContent",
        headers={"x-goog-api-key": "simulated-key"},
        json={"contents": [{"role": "user", "parts": [{"text": GENERATE}]}]},
    )
    assert raw.status_code == 200
    strict = strictly_valid(genai_types.GenerateContentResponse, raw.content)
    assert strict.candidates[0].finish_reason == genai_types.FinishReason.STOP


# Errors ------------------------------------------------------------------------------------------------------------


def test_the_openai_sdk_reads_every_simulated_error(simulator_with):
    with pytest.raises(openai.RateLimitError) as limited:
        openai_ask(openai_client(simulator_with(rate_limit_share=1)))
    assert limited.value.code == "rate_limit_exceeded" and limited.value.response.headers["retry-after"]
    with pytest.raises(openai.InternalServerError) as busy:
        openai_ask(openai_client(simulator_with(overloaded_share=1)))
    assert busy.value.status_code == 503 and busy.value.type == "server_error"
    with pytest.raises(openai.RateLimitError) as quota:
        openai_ask(openai_client(simulator_with(quota_share=1)))
    assert quota.value.code == "insufficient_quota"
    with pytest.raises(openai.AuthenticationError) as refused:
        headers = {"Authorization": "Basic x"}  # not the protocol's Bearer key
        openai_ask(
            openai.OpenAI(api_key="x", base_url=f"{simulator_with()}/v1", max_retries=0, default_headers=headers)
        )
    assert refused.value.status_code == 401
    for error in (limited.value, busy.value, quota.value, refused.value):
        strictly_valid(openai.types.ErrorObject, json.dumps(error.response.json()["error"]))


def test_the_anthropic_sdk_reads_every_simulated_error_by_its_type_and_code(simulator_with):
    with pytest.raises(anthropic.RateLimitError) as limited:
        anthropic_ask(anthropic_client(simulator_with(rate_limit_share=1)))
    assert limited.value.error_code is None
    with pytest.raises(anthropic.OverloadedError) as busy:
        anthropic_ask(anthropic_client(simulator_with(overloaded_share=1)))
    assert busy.value.status_code == 529
    with pytest.raises(anthropic.EnforcedSpendLimitReachedError) as spent:
        anthropic_ask(anthropic_client(simulator_with(quota_share=1)))
    assert spent.value.error_code == "enforced_spend_limit_reached"
    with pytest.raises(anthropic.AuthenticationError) as refused:
        client = anthropic.Anthropic(
            api_key="x", base_url=simulator_with(), max_retries=0, default_headers={"Authorization": "Basic x"}
        )
        anthropic_ask(client)
    for error in (limited.value, busy.value, spent.value, refused.value):
        body = error.response.json()
        # The SDK's exceptions read error.details (ErrorDetails), which its ErrorResponse type does not declare.
        details = body["error"].pop("details", None)
        strictly_valid(anthropic.types.shared.ErrorResponse, json.dumps(body))
        if details is not None:
            known = pydantic.TypeAdapter(anthropic.types.shared.ErrorDetails)
            assert not unknown_fields(known.validate_json(json.dumps(details), strict=True))
    assert spent.value.response.json()["error"]["details"] == {"error_code": "enforced_spend_limit_reached"}


def test_the_gemini_sdk_reads_every_simulated_error(simulator_with):
    with pytest.raises(genai_errors.ClientError) as limited:
        gemini_ask(gemini_client(simulator_with(rate_limit_share=1)))
    assert limited.value.code == 429 and limited.value.status == "RESOURCE_EXHAUSTED"
    assert any("RetryInfo" in detail["@type"] for detail in limited.value.details["error"]["details"])
    with pytest.raises(genai_errors.ServerError) as busy:
        gemini_ask(gemini_client(simulator_with(overloaded_share=1)))
    assert busy.value.code == 503 and busy.value.status == "UNAVAILABLE"
    with pytest.raises(genai_errors.ClientError) as quota:
        gemini_ask(gemini_client(simulator_with(quota_share=1)))
    violations = quota.value.details["error"]["details"][0]["violations"]
    assert "PerDay" in violations[0]["quotaId"]


def test_the_adapters_stop_at_a_simulated_quota_of_each_protocol(db, simulator_with, monkeypatch, fast_retries):
    """The same replies through our adapters: a quota or spend limit is not retried."""
    from screening.llm.models import ModelEndpoint
    from screening.llm.providers import complete

    monkeypatch.delenv("OH_TEST_UNSET_PROVIDER_API_KEY", raising=False)  # the simulated key is sent
    url = simulator_with(quota_share=1)
    for protocol, base in (("openai", f"{url}/v1"), ("anthropic", url), ("gemini", url)):
        endpoint = ModelEndpoint.objects.create(
            display_name=f"Quota {protocol}",
            company="Test",
            protocol=protocol,
            base_url=base,
            model_id=f"quota-{protocol}",
            api_key_env="OH_TEST_UNSET_PROVIDER_API_KEY",
            timeout_seconds=5,
            is_simulated=True,
        )
        result = complete(endpoint=endpoint, system="JSON", user=GENERATE, purpose="generate")
        assert not result.usable and "not retried" in result.error, (protocol, result.error)

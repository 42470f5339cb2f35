"""Provider adapters against real HTTP servers on 127.0.0.1: request shape per wire protocol, the transport retry
loop, the cross-worker concurrency limit and the call records."""

import hashlib
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from django.utils import timezone

from reviewapp.core.retry import retry_delay_from_headers
from screening.llm.models import EndpointSlot, ModelCall, ModelEndpoint
from screening.llm.providers import complete

KEY_VAR = "OH_TEST_PROVIDER_API_KEY"
KEY = "sk-test-secret-key-4242"
TOOL_FIELDS = ("tools", "tool_choice", "web_search_options", "toolConfig")


@dataclass
class Step:
    """One scripted answer; the last step of a script repeats."""

    status: int = 200
    body: dict | str = field(default_factory=dict)
    headers: dict = field(default_factory=dict)
    delay: float = 0.0
    # Hold the first answers until this many requests are in flight (or 20 s pass), so that a test of concurrency does
    # not depend on the threads of a busy machine happening to overlap.
    hold_until_in_flight: int = 0


@dataclass
class Seen:
    path: str
    headers: object
    raw: bytes
    at: float

    @property
    def json(self) -> dict:
        return json.loads(self.raw)


class ScriptedHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        server = self.server
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        with server.lock:
            server.seen.append(Seen(self.path, self.headers, raw, time.monotonic()))
            step = server.script.pop(0) if len(server.script) > 1 else server.script[0]
            held = len(server.seen) <= step.hold_until_in_flight
            server.in_flight += 1
            server.max_in_flight = max(server.max_in_flight, server.in_flight)
        try:
            deadline = time.monotonic() + 20
            while held and server.in_flight < step.hold_until_in_flight and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(step.delay)
            data = step.body if isinstance(step.body, str) else json.dumps(step.body)
            self.send_response(step.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data.encode())))
            for name, value in step.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data.encode())
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout test)
        finally:
            with server.lock:
                server.in_flight -= 1

    def log_message(self, *args):
        pass


@pytest.fixture
def serve():
    servers = []

    def start(*steps: Step) -> ThreadingHTTPServer:
        server = ThreadingHTTPServer(("127.0.0.1", 0), ScriptedHandler)
        server.daemon_threads = True
        server.script, server.seen, server.lock = list(steps), [], threading.Lock()
        server.in_flight = server.max_in_flight = 0
        server.url = f"http://127.0.0.1:{server.server_address[1]}"
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture(autouse=True)
def fast_retries(fast_retries, settings, monkeypatch):
    """The shared fast retries, with room for four attempts, and the provider key set."""
    settings.PROVIDER_MAX_ATTEMPTS = 4
    settings.PROVIDER_MAX_SECONDS = 10
    settings.PROVIDER_BACKOFF_MAX_SECONDS = 0.05
    monkeypatch.setenv(KEY_VAR, KEY)


def make_endpoint(protocol: str, base_url: str, **fields) -> ModelEndpoint:
    fields.setdefault("display_name", f"Test {protocol} {time.monotonic_ns()}")
    fields.setdefault("company", "Test")
    fields.setdefault("model_id", f"test-{protocol}-model")
    fields.setdefault("api_key_env", KEY_VAR)
    fields.setdefault("max_tokens", 1234)
    fields.setdefault("timeout_seconds", 5)
    return ModelEndpoint.objects.create(protocol=protocol, base_url=base_url, **fields)


def openai_reply(text='{"ok": true}', finish="stop", **extra) -> dict:
    return {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text, **extra}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def anthropic_reply(text='{"ok": true}', stop="end_turn") -> dict:
    return {
        "type": "message",
        "content": [{"type": "text", "text": text}],
        "stop_reason": stop,
        "usage": {"input_tokens": 21, "output_tokens": 9},
    }


def gemini_reply(text='{"ok": true}', finish="STOP") -> dict:
    return {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": finish}],
        "usageMetadata": {"promptTokenCount": 31, "candidatesTokenCount": 5},
    }


OK_REPLY = {"openai": openai_reply, "anthropic": anthropic_reply, "gemini": gemini_reply}
BASE_PATH = {"openai": "/v1", "anthropic": "", "gemini": ""}


def ask(endpoint, **kwargs):
    kwargs.setdefault("system", "Return a JSON object.")
    kwargs.setdefault("user", "Answer in JSON.")
    kwargs.setdefault("purpose", "stage1")
    return complete(endpoint=endpoint, **kwargs)


# Request shape per wire protocol


def test_openai_compatible_request_shape_headers_json_mode_and_reply(db, serve):
    server = serve(Step(body=openai_reply('{"forecasts": []}')))
    endpoint = make_endpoint("openai", server.url + "/v1")

    result = ask(endpoint, system="SYS", user="USER")

    (request,) = server.seen
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    assert request.json == {
        "model": "test-openai-model",
        "messages": [{"role": "system", "content": "SYS"}, {"role": "user", "content": "USER"}],
        "max_completion_tokens": 1234,
        "response_format": {"type": "json_object"},
    }
    assert result.usable and result.text == '{"forecasts": []}' and result.http_status == 200
    assert (result.call.input_tokens, result.call.output_tokens) == (11, 7)


def test_openai_compatible_older_server_options(db, serve):
    server = serve(Step(body=openai_reply()))
    endpoint = make_endpoint(
        "openai",
        server.url + "/v1",
        max_tokens_field="max_tokens",
        system_role="developer",
        supports_json_mode=False,
        accepts_temperature=True,
        temperature=0.2,
    )
    ask(endpoint, system="SYS")
    body = server.seen[0].json
    assert body["max_tokens"] == 1234 and "max_completion_tokens" not in body
    assert body["messages"][0] == {"role": "developer", "content": "SYS"}
    assert "response_format" not in body
    assert body["temperature"] == 0.2


def test_temperature_is_left_out_where_the_endpoint_does_not_accept_it(db, serve):
    server = serve(Step(body=openai_reply()))
    ask(make_endpoint("openai", server.url, accepts_temperature=False, temperature=0.7))
    assert "temperature" not in server.seen[0].json


def test_anthropic_request_shape_headers_and_reply(db, serve):
    reply = anthropic_reply()
    reply["content"] = [
        {"type": "thinking", "thinking": "hmm"},
        {"type": "text", "text": '{"a":'},
        {"type": "text", "text": " 1}"},
    ]
    server = serve(Step(body=reply))
    endpoint = make_endpoint("anthropic", server.url, supports_json_mode=False)

    result = ask(endpoint, system="SYS", user="USER")

    (request,) = server.seen
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.headers.get("authorization") is None
    assert request.json == {
        "model": "test-anthropic-model",
        "max_tokens": 1234,
        "system": "SYS",
        "messages": [{"role": "user", "content": "USER"}],
    }
    assert result.usable and result.text == '{"a": 1}'
    assert (result.call.input_tokens, result.call.output_tokens) == (21, 9)


def test_anthropic_native_json_output_only_when_supported_and_given_a_schema(db, serve):
    server = serve(Step(body=anthropic_reply()))
    schema = {"type": "object", "properties": {}, "additionalProperties": False}
    supported = make_endpoint("anthropic", server.url, supports_json_mode=True)
    ask(supported, json_schema=schema)
    ask(supported)
    ask(make_endpoint("anthropic", server.url, supports_json_mode=False), json_schema=schema)
    with_schema, without_schema, unsupported = (seen.json for seen in server.seen)
    assert with_schema["output_config"] == {"format": {"type": "json_schema", "schema": schema}}
    assert "output_config" not in without_schema and "output_config" not in unsupported


def test_gemini_request_shape_headers_json_mode_and_reply(db, serve):
    reply = gemini_reply()
    reply["candidates"][0]["content"]["parts"] = [{"text": "plan", "thought": True}, {"text": '{"b": 2}'}]
    reply["usageMetadata"]["thoughtsTokenCount"] = 100
    server = serve(Step(body=reply))
    endpoint = make_endpoint("gemini", server.url, model_id="gemini-test")

    result = ask(endpoint, system="SYS", user="USER")

    (request,) = server.seen
    assert request.path == "/v1beta/models/gemini-test:generateContent"
    assert request.headers["x-goog-api-key"] == KEY
    assert request.headers.get("authorization") is None
    assert request.json == {
        "systemInstruction": {"parts": [{"text": "SYS"}]},
        "contents": [{"role": "user", "parts": [{"text": "USER"}]}],
        "generationConfig": {"maxOutputTokens": 1234, "responseMimeType": "application/json"},
    }
    assert result.usable and result.text == '{"b": 2}'
    assert (result.call.input_tokens, result.call.output_tokens) == (31, 105)


@pytest.mark.parametrize("protocol", ["openai", "anthropic", "gemini"])
def test_no_tools_field_is_ever_sent_and_json_mode_can_be_switched_off(db, serve, protocol):
    server = serve(Step(body=OK_REPLY[protocol]()))
    endpoint = make_endpoint(protocol, server.url + BASE_PATH[protocol])
    ask(endpoint, json_mode=True)
    ask(endpoint, json_mode=False)
    for seen in server.seen:
        assert not any(name in seen.json for name in TOOL_FIELDS)
        assert not any(name in json.dumps(seen.json.get("generationConfig", {})) for name in TOOL_FIELDS)
    plain = server.seen[1].json
    assert "response_format" not in plain and "responseMimeType" not in plain.get("generationConfig", {})
    assert all(call.tools_disabled for call in ModelCall.objects.all())


@pytest.mark.parametrize(
    "protocol, reply, reason",
    [
        ("openai", openai_reply('{"forecasts": [', finish="length"), "length"),
        ("anthropic", anthropic_reply('{"forecasts": [', stop="max_tokens"), "length"),
        ("gemini", gemini_reply('{"forecasts": [', finish="MAX_TOKENS"), "length"),
        ("openai", openai_reply(None, refusal="I can't help with that."), "refused"),
        ("anthropic", anthropic_reply("", stop="refusal"), "refused"),
        ("gemini", gemini_reply("", finish="SAFETY"), "refused"),
    ],
)
def test_a_reply_cut_by_the_length_limit_or_refused_is_unusable(db, serve, protocol, reply, reason):
    server = serve(Step(body=reply))
    result = ask(make_endpoint(protocol, server.url + BASE_PATH[protocol]))
    assert not result.usable
    assert reason in result.error
    assert len(server.seen) == 1  # not a transport problem: the protocol decides whether to ask again
    assert result.call.usable is False and result.call.finish_reason


# The transport retry loop


def gap(server, first=0) -> float:
    return server.seen[first + 1].at - server.seen[first].at


def test_429_with_retry_after_seconds_is_retried_after_that_delay(db, serve):
    server = serve(
        Step(429, {"error": {"message": "slow down", "type": "requests"}}, {"retry-after": "0.3"}),
        Step(body=openai_reply()),
    )
    result = ask(make_endpoint("openai", server.url))
    assert result.usable
    assert len(server.seen) == 2 and gap(server) >= 0.3
    calls = list(ModelCall.objects.order_by("transport_attempt"))
    assert [(c.transport_attempt, c.http_status, c.usable) for c in calls] == [(1, 429, False), (2, 200, True)]
    assert result.call == calls[1]


def test_retry_after_ms_takes_precedence_over_retry_after(db, serve):
    server = serve(
        Step(429, {"error": {"message": "slow down"}}, {"retry-after-ms": "250", "retry-after": "30"}),
        Step(body=openai_reply()),
    )
    assert ask(make_endpoint("openai", server.url)).usable
    assert 0.25 <= gap(server) < 5


def test_retry_after_as_an_http_date_is_understood():
    when = datetime.now(UTC) + timedelta(seconds=5)
    delay = retry_delay_from_headers(httpx.Headers({"retry-after": format_datetime(when, usegmt=True)}))
    assert 3 <= delay <= 5
    assert retry_delay_from_headers(httpx.Headers({"retry-after": "2"})) == 2
    assert retry_delay_from_headers(httpx.Headers({})) is None


def test_gemini_retry_info_in_the_body_sets_the_delay(db, serve):
    throttled = {
        "error": {
            "code": 429,
            "status": "RESOURCE_EXHAUSTED",
            "message": "Resource has been exhausted (e.g. check quota).",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaId": "PerMinute"}]},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.4s"},
            ],
        }
    }
    server = serve(Step(429, throttled), Step(body=gemini_reply()))
    assert ask(make_endpoint("gemini", server.url)).usable
    assert len(server.seen) == 2 and gap(server) >= 0.4


def test_anthropic_529_overloaded_is_retried(db, serve):
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server = serve(Step(529, overloaded), Step(529, overloaded), Step(body=anthropic_reply()))
    result = ask(make_endpoint("anthropic", server.url))
    assert result.usable and len(server.seen) == 3
    assert [c.http_status for c in ModelCall.objects.order_by("pk")] == [529, 529, 200]


@pytest.mark.parametrize("status", [500, 502, 503, 408])
def test_server_errors_and_408_are_retried(db, serve, status):
    server = serve(Step(status, {"error": {"message": "oops"}}), Step(body=openai_reply()))
    assert ask(make_endpoint("openai", server.url)).usable
    assert len(server.seen) == 2


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_client_errors_are_not_retried(db, serve, status):
    server = serve(Step(status, {"error": {"message": "bad request"}}))
    result = ask(make_endpoint("openai", server.url))
    assert not result.usable and result.http_status == status
    assert "bad request" in result.error
    assert len(server.seen) == 1


def test_a_timeout_is_retried(db, serve):
    server = serve(Step(body=openai_reply(), delay=10.0), Step(body=openai_reply('{"second": true}')))
    started = time.monotonic()
    result = ask(make_endpoint("openai", server.url, timeout_seconds=1))
    assert result.usable and result.text == '{"second": true}'
    first = ModelCall.objects.order_by("pk").first()
    assert first.http_status is None and "timed out" in first.error
    assert time.monotonic() - started < 8  # the first reply would have come after 10 s


def test_a_connection_error_is_retried_until_the_attempts_run_out(db, settings):
    settings.PROVIDER_MAX_ATTEMPTS = 3
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = ask(make_endpoint("openai", f"http://127.0.0.1:{port}"))
    assert not result.usable and result.http_status is None
    assert "connection error" in result.error and "gave up after 3 attempts" in result.error
    assert ModelCall.objects.count() == 3


QUOTA_ERRORS = [
    (
        "openai",
        {
            "error": {
                "message": "You exceeded your current quota.",
                "type": "insufficient_quota",
                "code": "insufficient_quota",
            }
        },
    ),
    (
        "anthropic",
        {
            "type": "error",
            "error": {
                "type": "rate_limit_error",
                "message": "Monthly threshold crossed.",  # the wording is not matched, the code is
                "details": {"error_code": "enforced_spend_limit_reached"},
            },
        },
    ),
    (
        "gemini",
        {
            "error": {
                "code": 429,
                "status": "RESOURCE_EXHAUSTED",
                "message": "You exceeded your current quota.",
                "details": [
                    {
                        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                        "violations": [{"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}],
                    },
                    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"},
                ],
            }
        },
    ),
]


@pytest.mark.parametrize("protocol, body", QUOTA_ERRORS)
def test_an_exhausted_quota_is_not_retried(db, serve, protocol, body):
    server = serve(Step(429, body, {"retry-after": "0"}), Step(body=OK_REPLY[protocol]()))
    result = ask(make_endpoint(protocol, server.url + BASE_PATH[protocol]))
    assert not result.usable and result.http_status == 429
    assert "not retried" in result.error
    assert len(server.seen) == 1


def anthropic_error(error_type: str, code: str) -> dict:
    return {"type": "error", "error": {"type": error_type, "message": "x", "details": {"error_code": code}}}


def test_every_anthropic_spend_limit_code_stops_the_call(db, serve):
    for code in ("enforced_spend_limit_reached", "contract_spend_limit_reached"):
        server = serve(Step(429, anthropic_error("rate_limit_error", code), {"retry-after": "0"}))
        result = ask(make_endpoint("anthropic", server.url + BASE_PATH["anthropic"]))
        assert not result.usable and "not retried" in result.error and len(server.seen) == 1, code


def test_an_anthropic_ramp_limit_is_retried_after_its_retry_after(db, serve):
    """A ramp limit caps how fast usage grows; the provider's SDK (RampLimitExceededError) says to retry after the
    retry-after header, so the call waits that long and goes on."""
    server = serve(
        Step(429, anthropic_error("rate_limit_error", "ramp_limit_exceeded"), {"retry-after": "0.3"}),
        Step(body=OK_REPLY["anthropic"]()),
    )
    result = ask(make_endpoint("anthropic", server.url + BASE_PATH["anthropic"]))
    assert result.usable and len(server.seen) == 2 and gap(server) >= 0.3
    first = ModelCall.objects.order_by("transport_attempt").first()
    assert first.http_status == 429 and "not retried" not in first.error


def test_an_anthropic_linked_organization_402_is_reported_as_a_billing_limit(db, serve):
    body = {
        "type": "error",
        "error": {
            "type": "billing_error",
            "message": "x",
            "details": {"error_code": "linked_organization_spend_limit_reached"},
        },
    }
    server = serve(Step(402, body), Step(body=OK_REPLY["anthropic"]()))
    result = ask(make_endpoint("anthropic", server.url + BASE_PATH["anthropic"]))
    assert not result.usable and result.http_status == 402 and "spend limit exhausted" in result.error


def test_an_anthropic_rate_limit_that_mentions_a_spend_limit_but_has_no_code_is_transient(db, serve):
    body = {"type": "error", "error": {"type": "rate_limit_error", "message": "Close to your spend limit; slow down."}}
    server = serve(Step(429, body, {"retry-after": "0"}), Step(body=OK_REPLY["anthropic"]()))
    result = ask(make_endpoint("anthropic", server.url + BASE_PATH["anthropic"]))
    assert result.usable and len(server.seen) == 2


def test_retries_stop_at_the_attempt_cap(db, serve, settings):
    settings.PROVIDER_MAX_ATTEMPTS = 3
    server = serve(Step(503, {"error": {"message": "unavailable"}}))
    result = ask(make_endpoint("openai", server.url))
    assert not result.usable and "gave up after 3 attempts" in result.error
    assert len(server.seen) == 3


def test_retries_stop_at_the_total_time_cap(db, serve, settings):
    settings.PROVIDER_MAX_ATTEMPTS = 100
    settings.PROVIDER_MAX_SECONDS = 0.8
    server = serve(Step(429, {"error": {"message": "slow down"}}, {"retry-after": "0.2"}))
    started = time.monotonic()
    result = ask(make_endpoint("openai", server.url))
    assert time.monotonic() - started < 2
    assert not result.usable and "would pass" in result.error
    assert 2 <= len(server.seen) <= 5


def test_a_retry_after_beyond_the_time_cap_gives_up_at_once(db, serve, settings):
    settings.PROVIDER_MAX_SECONDS = 2
    server = serve(Step(429, {"error": {"message": "slow down"}}, {"retry-after": "60"}))
    started = time.monotonic()
    assert not ask(make_endpoint("openai", server.url)).usable
    assert time.monotonic() - started < 1 and len(server.seen) == 1


# Call records


def test_every_attempt_is_recorded_with_the_request_as_sent_and_never_the_key(db, serve):
    echo = {"error": {"message": f"Incorrect API key provided: {KEY}."}}
    server = serve(Step(500, echo), Step(body=openai_reply(f"the key was {KEY}")))
    result = ask(make_endpoint("openai", server.url), purpose="generate", protocol_attempt=2)

    calls = list(ModelCall.objects.order_by("pk"))
    assert len(calls) == 2
    for call, seen in zip(calls, server.seen, strict=True):
        assert call.request_sha256 == hashlib.sha256(seen.raw).hexdigest()
        assert call.request_body == seen.json
        assert call.tools_disabled is True
        assert (call.purpose, call.protocol_attempt) == ("generate", 2)
        assert call.latency_ms is not None and call.simulated is False
        assert call.url == server.url + "/chat/completions" and call.model_id == "test-openai-model"
    assert [c.transport_attempt for c in calls] == [1, 2]
    assert "[redacted]" in calls[0].error and "[redacted]" in calls[1].response_body
    for call in calls:
        for model_field in ModelCall._meta.fields:
            assert KEY not in str(getattr(call, model_field.attname))
    assert result.call == calls[1]


def test_a_missing_key_sends_nothing_and_says_which_variable(db, serve, monkeypatch):
    monkeypatch.delenv(KEY_VAR)
    server = serve(Step(body=openai_reply()))
    result = ask(make_endpoint("openai", server.url))
    assert not result.usable and KEY_VAR in result.error
    assert server.seen == []
    assert result.call.error == result.error and result.call.http_status is None


def test_a_disabled_endpoint_is_not_called(db, serve):
    server = serve(Step(body=openai_reply()))
    result = ask(make_endpoint("openai", server.url, enabled=False))
    assert not result.usable and "disabled" in result.error and server.seen == []


# Concurrency across workers (threads with their own database connections stand in for worker processes)


def ask_in_threads(endpoint, count: int):
    results = []

    def worker():
        from django.db import connection

        try:
            results.append(ask(endpoint))
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    return results


@pytest.mark.parametrize("limit", [1, 2])
def test_the_concurrency_limit_holds_across_connections(transactional_db, serve, limit):
    server = serve(Step(body=openai_reply(), delay=0.3, hold_until_in_flight=limit))
    endpoint = make_endpoint("openai", server.url, concurrency_limit=limit)
    results = ask_in_threads(endpoint, 3)
    assert len(results) == 3 and all(r.usable for r in results)
    assert server.max_in_flight == limit
    assert not EndpointSlot.objects.exclude(holder="").exists()


def test_a_slot_left_by_a_dead_worker_is_reclaimed_when_its_lease_expires(db, serve):
    server = serve(Step(body=openai_reply()))
    endpoint = make_endpoint("openai", server.url, concurrency_limit=1)
    EndpointSlot.objects.create(
        endpoint=endpoint, number=0, holder="killed-worker", lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert ask(endpoint).usable
    assert EndpointSlot.objects.get(endpoint=endpoint).holder == ""


def test_a_call_waits_for_a_held_slot_only_until_its_time_cap(db, serve, settings):
    settings.PROVIDER_MAX_SECONDS = 0.4
    server = serve(Step(body=openai_reply()))
    endpoint = make_endpoint("openai", server.url, concurrency_limit=1)
    EndpointSlot.objects.create(
        endpoint=endpoint, number=0, holder="busy-worker", lease_expires_at=timezone.now() + timedelta(minutes=5)
    )
    result = ask(endpoint)
    assert not result.usable and "no free slot" in result.error
    assert server.seen == []


# Anthropic and Gemini details checked against the providers' current SDKs ----------------------------------------


def test_anthropic_requests_never_carry_a_temperature(db, serve):
    server = serve(Step(body=anthropic_reply()))
    ask(make_endpoint("anthropic", server.url, accepts_temperature=True, temperature=0.3))
    assert "temperature" not in server.seen[0].json


def test_a_long_anthropic_request_is_capped_below_what_needs_streaming(db, serve):
    import anthropic

    server = serve(Step(body=anthropic_reply()))
    ask(make_endpoint("anthropic", server.url, max_tokens=32_000))
    max_tokens = server.seen[0].json["max_tokens"]
    assert max_tokens < 32_000
    # The official SDK accepts this request without streaming (it refuses 32,000: "Streaming is required").
    client = anthropic.Anthropic(api_key="k", base_url="http://127.0.0.1:9")
    client._calculate_nonstreaming_timeout(max_tokens, None)
    with pytest.raises(ValueError, match="Streaming is required"):
        client._calculate_nonstreaming_timeout(32_000, None)


def test_anthropic_input_tokens_include_the_cache(db, serve):
    reply = anthropic_reply()
    reply["usage"] = {
        "input_tokens": 21,
        "cache_creation_input_tokens": 1000,
        "cache_read_input_tokens": 300,
        "output_tokens": 9,
    }
    server = serve(Step(body=reply))
    result = ask(make_endpoint("anthropic", server.url))
    assert (result.call.input_tokens, result.call.output_tokens) == (1321, 9)


def test_gemini_output_tokens_count_the_thinking_when_no_answer_tokens_are_given(db, serve):
    reply = gemini_reply(finish="MAX_TOKENS")
    reply["usageMetadata"] = {"promptTokenCount": 31, "thoughtsTokenCount": 32_000}
    server = serve(Step(body=reply))
    result = ask(make_endpoint("gemini", server.url))
    assert result.call.output_tokens == 32_000
    assert "length limit" in result.error


def test_a_gemini_continuation_is_a_length_cut_not_a_refusal(db, serve):
    server = serve(Step(body=gemini_reply(finish="CONTINUATION")))
    result = ask(make_endpoint("gemini", server.url))
    assert not result.usable
    assert "cut by the length limit (finishReason CONTINUATION)" in result.error and "refused" not in result.error

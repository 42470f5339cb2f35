"""The simulated model server speaks the three wire protocols, marks every reply as simulated, and injects the
faults it is configured for; `setup_roster` points keyless endpoints at it."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from django.core.management import call_command

from screening import prompts
from screening.llm.models import ModelCall, ModelEndpoint, Roster
from screening.llm.providers import complete
from screening.llm.simulator import SimulatorConfig, start_simulator
from screening.parsing import parse_forecasts, parse_hypotheses

PROTOCOLS = ["openai", "anthropic", "gemini"]
BASE_PATH = {"openai": "/v1", "anthropic": "", "gemini": ""}
PROVIDER_KEYS = ["OPENAI_API_KEY", "XAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"]
QUESTION = "How does remodelling of the bone-marrow niche affect the fitness of mutant clones?"
ITEMS = [(f"H{n}", f"Hypothesis number {n}. Mechanism: m{n} Prediction: p{n}") for n in range(1, 13)]
LABELS = [label for label, _ in ITEMS]


@pytest.fixture
def simulator():
    servers = []

    def start(**config):
        server = start_simulator(SimulatorConfig(seed=7, **config))
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture(autouse=True)
def fast_retries(fast_retries, settings):
    """The shared fast retries, with room for three attempts."""
    settings.PROVIDER_MAX_ATTEMPTS = 3
    settings.PROVIDER_MAX_SECONDS = 10
    settings.PROVIDER_BACKOFF_MAX_SECONDS = 0.05


def simulated_endpoint(server, protocol, **fields) -> ModelEndpoint:
    return ModelEndpoint.objects.create(
        display_name=fields.pop("display_name", f"Simulated {protocol} {time.monotonic_ns()}"),
        company="Simulated",
        protocol=protocol,
        base_url=server.url + BASE_PATH[protocol],
        model_id=fields.pop("model_id", f"simulated-{protocol}"),
        api_key_env="OH_SIMULATOR_TEST_NEVER_SET_API_KEY",
        is_simulated=True,
        timeout_seconds=5,
        **fields,
    )


def forecast(endpoint, items=ITEMS, grok=False):
    system, user = prompts.forecast_messages(question=QUESTION, background="", items=items, grok=grok)
    return complete(endpoint=endpoint, system=system, user=user, purpose="stage1")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_generation_gives_ten_marked_well_formed_hypotheses_in_every_protocol(db, simulator, protocol):
    endpoint = simulated_endpoint(simulator(), protocol)
    system, user = prompts.generation_messages(question=QUESTION, background="Some background.")
    result = complete(endpoint=endpoint, system=system, user=user, purpose="generate")

    assert result.usable
    hypotheses = parse_hypotheses(result.text)
    assert len(hypotheses) == 10 and hypotheses.problems == []
    assert all(h["statement"].startswith("[Simulated] ") for h in hypotheses)
    assert all(h["mechanism"] and h["prediction"] and h["domain_category"] for h in hypotheses)
    assert len({h["statement"] for h in hypotheses}) == 10
    assert result.call.simulated is True and result.call.usable
    assert json.loads(result.call.response_body)  # a genuine protocol reply


def test_a_generation_reply_holds_as_many_hypotheses_as_the_request_asks(db, simulator):
    endpoint = simulated_endpoint(simulator(), "openai")
    system, user = prompts.generation_messages(question=QUESTION, count=5)
    hypotheses = parse_hypotheses(complete(endpoint=endpoint, system=system, user=user, purpose="generate").text)
    assert len(hypotheses) == 5 and hypotheses.problems == []


def test_a_generation_reply_can_hold_another_number_of_hypotheses(db, simulator, monkeypatch):
    endpoint = simulated_endpoint(simulator(hypotheses_per_reply=5), "openai")
    system, user = prompts.generation_messages(question=QUESTION)
    hypotheses = parse_hypotheses(complete(endpoint=endpoint, system=system, user=user, purpose="generate").text)
    assert len(hypotheses) == 5 and hypotheses.problems == []
    monkeypatch.setenv("SIMULATOR_HYPOTHESES_PER_REPLY", "3")
    assert SimulatorConfig.from_env().hypotheses_per_reply == 3


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_replies_carry_the_simulated_header_and_model_name(db, simulator, protocol):
    server = simulator()
    endpoint = simulated_endpoint(server, protocol, model_id="gpt-x")
    system, user = prompts.forecast_messages(question=QUESTION, background="", items=ITEMS[:1], grok=False)
    body = {
        "openai": {"model": "gpt-x", "messages": [{"role": "user", "content": user}]},
        "anthropic": {"model": "gpt-x", "max_tokens": 10, "messages": [{"role": "user", "content": user}]},
        "gemini": {"contents": [{"role": "user", "parts": [{"text": user}]}]},
    }[protocol]
    headers = {
        "openai": {"authorization": "Bearer k"},
        "anthropic": {"x-api-key": "k", "anthropic-version": "2023-06-01"},
    }
    path = {
        "openai": "/v1/chat/completions",
        "anthropic": "/v1/messages",
        "gemini": "/v1beta/models/gpt-x:generateContent",
    }
    response = httpx.post(
        server.url + path[protocol], json=body, headers=headers.get(protocol, {"x-goog-api-key": "k"})
    )
    assert response.status_code == 200 and response.headers["x-simulated"] == "true"
    data = response.json()
    assert (data.get("model") or data.get("modelVersion")).startswith("simulated")
    assert forecast(endpoint).call.simulated


def test_forecasts_answer_every_id_deterministically(db, simulator):
    endpoint = simulated_endpoint(simulator(false_share=0.5), "openai")
    first, second = forecast(endpoint), forecast(endpoint)
    parse = parse_forecasts(first.text, LABELS)
    assert parse.complete and parse.problems == []
    assert first.text == second.text
    assert set(parse.votes.values()) == {True, False}  # 12 hypotheses at one half false


@pytest.mark.parametrize("share, expected", [(0.0, {True}), (1.0, {False})])
def test_the_share_of_false_votes_is_configurable(db, simulator, share, expected):
    endpoint = simulated_endpoint(simulator(false_share=share), "anthropic")
    assert set(parse_forecasts(forecast(endpoint).text, LABELS).votes.values()) == expected


def test_grok_forecasts_are_answered_too(db, simulator):
    endpoint = simulated_endpoint(simulator(), "openai", is_grok=True)
    assert parse_forecasts(forecast(endpoint, grok=True).text, LABELS).complete


def test_malformed_replies_are_prose(db, simulator):
    endpoint = simulated_endpoint(simulator(malformed_share=1.0), "gemini")
    result = forecast(endpoint)
    assert result.usable  # a well-formed protocol reply whose text is not JSON
    assert result.text.startswith("[Simulated] ")
    assert not parse_forecasts(result.text, LABELS).parsed


def test_missing_ids_leave_exactly_one_out(db, simulator):
    endpoint = simulated_endpoint(simulator(missing_id_share=1.0), "openai")
    parse = parse_forecasts(forecast(endpoint).text, LABELS)
    assert parse.parsed and not parse.complete
    assert sum(vote is None for vote in parse.votes.values()) == 1


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_rate_limits_come_with_the_protocol_s_retry_delay(simulator, protocol):
    server = simulator(rate_limit_share=1.0, retry_after_seconds=2)
    path = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages", "gemini": "/v1beta/models/m:generateContent"}
    headers = {"authorization": "Bearer k", "x-api-key": "k", "anthropic-version": "2023-06-01", "x-goog-api-key": "k"}
    response = httpx.post(server.url + path[protocol], json={"model": "m"}, headers=headers)
    assert response.status_code == 429 and response.headers["x-simulated"] == "true"
    if protocol == "gemini":
        details = response.json()["error"]["details"]
        assert {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2s"} in details
    else:
        assert response.headers["retry-after"] == "2"
    if protocol == "openai":
        assert response.headers["retry-after-ms"] == "2000"


def test_overload_is_529_for_anthropic_and_503_elsewhere(simulator):
    server = simulator(overloaded_share=1.0)
    headers = {"authorization": "Bearer k", "x-api-key": "k", "anthropic-version": "2023-06-01"}
    anthropic = httpx.post(server.url + "/v1/messages", json={}, headers=headers)
    openai = httpx.post(server.url + "/v1/chat/completions", json={}, headers=headers)
    assert anthropic.status_code == 529 and anthropic.json()["error"]["type"] == "overloaded_error"
    assert openai.status_code == 503


def test_the_retry_loop_gets_through_simulated_rate_limits(db, simulator, settings):
    settings.PROVIDER_MAX_ATTEMPTS = 20
    endpoint = simulated_endpoint(simulator(rate_limit_share=0.5, retry_after_seconds=0.01), "anthropic")
    results = [forecast(endpoint) for _ in range(4)]
    assert all(result.usable for result in results)
    assert ModelCall.objects.filter(http_status=429).exists()


def test_the_simulator_refuses_tools_and_missing_keys(simulator):
    server = simulator()
    url = server.url + "/v1/chat/completions"
    assert httpx.post(url, json={"model": "m", "messages": []}).status_code == 401
    with_tools = {"model": "m", "messages": [], "tools": []}
    assert httpx.post(url, json=with_tools, headers={"authorization": "Bearer k"}).status_code == 400


def test_latency_is_configurable(db, simulator):
    endpoint = simulated_endpoint(simulator(latency_seconds=0.3), "openai")
    started = time.monotonic()
    assert forecast(endpoint, items=ITEMS[:2]).usable
    assert time.monotonic() - started >= 0.3


def test_translation_into_russian_is_a_marked_rendering(db, simulator):
    endpoint = simulated_endpoint(simulator(), "anthropic")
    items = [{"id": "H1", "statement": "S1", "mechanism": "M1", "prediction": "P1"}]
    system, user = prompts.translation_messages(items=items)
    result = complete(endpoint=endpoint, system=system, user=user, purpose="translate", json_mode=False)
    (translation,) = json.loads(result.text)["translations"]
    assert translation == {
        "id": "H1",
        "statement": "[Симуляция] S1",
        "mechanism": "[Симуляция] M1",
        "prediction": "[Симуляция] P1",
    }


def test_a_novelty_question_quotes_a_supplied_candidate_sentence(db, simulator):
    endpoint = simulated_endpoint(simulator(), "gemini")
    verdicts = set()
    for variant in range(12):
        user = (
            f"Hypothesis {variant}: X causes Y.\n\n[cause] X\n[effect] causes Y\n\n"
            "[R1] (2020) Mutant clones in marrow. Mutant clones expand in inflamed marrow.\n[R2] Unrelated.\n\n"
            "Return a JSON object with the verdict."
        )
        result = complete(endpoint=endpoint, system="Judge novelty.", user=user, purpose="novelty")
        reply = json.loads(result.text)
        verdicts.add(reply["verdict"])
        if reply["verdict"] in ("reported", "contradicted"):
            assert (reply["quote"], reply["reference_id"]) == ("Mutant clones expand in inflamed marrow.", "R1")
        if reply["verdict"] == "components_reported":
            assert [c["part"] for c in reply["components"]] == ["cause", "effect"]
            assert {c["reference_id"] for c in reply["components"]} == {"R1", "R2"}
    assert verdicts == {"not_reported", "components_reported", "reported", "contradicted"}


def test_configuration_comes_from_the_environment_and_overrides(monkeypatch):
    monkeypatch.setenv("SIMULATOR_FALSE_SHARE", "0.8")
    monkeypatch.setenv("SIMULATOR_LATENCY_SECONDS", "2")
    config = SimulatorConfig.from_env({"latency_seconds": 0.5})
    assert (config.false_share, config.latency_seconds) == (0.8, 0.5)
    with pytest.raises(ValueError):
        SimulatorConfig.from_env({"nonsense": 1})


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_run_simulator_command_serves_until_stopped():
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "manage.py", "run_simulator", "--port", str(port), "--config", '{"false_share": 1.0}'],
        cwd=Path(__file__).resolve().parents[2],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        for _ in range(100):
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health")
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert {key: health.json()[key] for key in ("status", "simulated")} == {"status": "ok", "simulated": True}
        assert health.json()["config"]["false_share"] == 1.0  # as configured, what an audit records
        system, user = prompts.forecast_messages(question=QUESTION, background="", items=ITEMS[:3], grok=False)
        reply = httpx.post(
            f"http://127.0.0.1:{port}/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]},
            headers={"authorization": "Bearer k"},
        ).json()
        votes = parse_forecasts(reply["choices"][0]["message"]["content"], ["H1", "H2", "H3"]).votes
        assert set(votes.values()) == {False}
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=10)


# The default roster


def roster_summary(roster: Roster) -> dict:
    summary = {}
    for member in roster.members.select_related("endpoint").order_by("role", "order"):
        summary.setdefault(member.role, []).append(member.endpoint.display_name)
    return summary


def test_setup_roster_builds_the_seed_roster_on_the_simulator_without_keys(db, settings, monkeypatch):
    for name in PROVIDER_KEYS:
        monkeypatch.delenv(name, raising=False)
    settings.SIMULATOR_PORT = 8999
    call_command("setup_roster", stdout=open(os.devnull, "w"))

    roster = Roster.objects.get(is_default=True)
    assert roster_summary(roster) == {
        "generator": ["GPT-6 Astra", "Grok 4.5", "Claude Opus 5.5", "Gemini 4 Argon"],
        # DFM-Bench's semantic judge of later literature.
        "inspiration_judge": ["GPT-6 Luna"],
        "novelty": ["Claude Sonnet 5.5"],
        "stage1": ["GPT-6 Astra"],
        "stage2": ["Claude Sonnet 5.5", "Gemini 4 Argon", "Grok 4.5"],
        "translator": ["Claude Sonnet 5.5"],
        # The AI review panel's roles: separate prompts to one model family, DFM-Bench's judge; and its fresh-context
        # reference, the same model without a role.
        **dict.fromkeys(
            [
                "critic",
                "domain_scientist",
                "methods_reviewer",
                "path_judge",
                "reference_reviewer",
                "revision_judge",
                "rubric_judge",
                "run_judge",
            ],
            ["GPT-5.6 Sol"],
        ),
    }
    endpoints = {e.display_name: e for e in ModelEndpoint.objects.all()}
    assert all(e.is_simulated and e.model_id.startswith("simulated-") for e in endpoints.values())
    assert endpoints["GPT-6 Astra"].base_url == "http://127.0.0.1:8999/v1"
    assert endpoints["Claude Opus 5.5"].base_url == "http://127.0.0.1:8999"
    assert endpoints["Grok 4.5"].is_grok and endpoints["Grok 4.5"].protocol == "openai"
    assert [e.display_name for e in endpoints.values() if e.is_grok] == ["Grok 4.5"]
    assert endpoints["Gemini 4 Argon"].api_key_env == "GEMINI_API_KEY"
    for name, model in (("GPT-6 Luna", "gpt-6-luna"), ("GPT-5.6 Sol", "gpt-5.6-sol")):
        assert (endpoints[name].company, endpoints[name].protocol, endpoints[name].api_key_env) == (
            "OpenAI",
            "openai",
            "OPENAI_API_KEY",
        )
        assert endpoints[name].model_id == f"simulated-{model}" and endpoints[name].system_role == "developer"


def test_setup_roster_is_idempotent_keeps_admin_limits_and_follows_the_keys(db, settings, monkeypatch):
    for name in PROVIDER_KEYS:
        monkeypatch.delenv(name, raising=False)
    call_command("setup_roster", stdout=open(os.devnull, "w"))
    ModelEndpoint.objects.filter(display_name="GPT-6 Astra").update(concurrency_limit=9)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real")
    settings.GPT56_SOL_MODEL = "gpt-5.6-sol-test"
    call_command("setup_roster", stdout=open(os.devnull, "w"))

    assert ModelEndpoint.objects.count() == 7 and Roster.objects.count() == 1
    # Eleven of the protocol, five of the AI review panel and its fresh-context reference.
    assert Roster.objects.get().members.count() == 19
    astra = ModelEndpoint.objects.get(display_name="GPT-6 Astra")
    assert not astra.is_simulated and astra.base_url == "https://api.openai.com/v1" and astra.model_id == "gpt-6-astra"
    assert astra.concurrency_limit == 9
    sol = ModelEndpoint.objects.get(display_name="GPT-5.6 Sol")  # configurable: its model id is a setting
    assert not sol.is_simulated and sol.model_id == "gpt-5.6-sol-test"
    assert ModelEndpoint.objects.get(display_name="Grok 4.5").is_simulated


def test_setup_roster_leaves_another_default_roster_alone(db, monkeypatch):
    Roster.objects.create(name="Our own", is_default=True)
    call_command("setup_roster", stdout=open(os.devnull, "w"))
    assert Roster.objects.get(is_default=True).name == "Our own"


def test_every_roster_endpoint_answers_through_the_simulator(db, simulator, settings, monkeypatch):
    for name in PROVIDER_KEYS:
        monkeypatch.delenv(name, raising=False)
    server = simulator()
    settings.SIMULATOR_PORT = server.server_address[1]
    call_command("setup_roster", stdout=open(os.devnull, "w"))
    for endpoint in ModelEndpoint.objects.all():
        result = forecast(endpoint, items=ITEMS[:3], grok=endpoint.is_grok)
        assert result.usable, (endpoint.display_name, result.error)
        assert parse_forecasts(result.text, ["H1", "H2", "H3"]).complete

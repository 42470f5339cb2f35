"""Support for tests of Open Hypothesis runs.

A scripted model server speaks the OpenAI-compatible protocol on 127.0.0.1 and answers as each test tells it (per
model: generation, forecasts, translation); a roster points at it; `drive` takes a run through its steps in the
test's own thread by calling the same services the Celery tasks call.
"""

import hashlib
import json
import re
import socket
import threading
import time
import uuid
from collections import defaultdict
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import redis
from celery.signals import task_postrun
from django.db import connection

from reviewapp.celery import app as celery_app
from screening.llm.models import ModelEndpoint, Roster, RosterMember
from screening.llm.simulator import SimulatorConfig, start_simulator
from screening.management.commands.setup_roster import roster_setup_default
from screening.models import Run, RunWorkItem
from screening.services.progress import run_advance
from screening.services.work import work_item_perform

_ITEM = re.compile(r"^\[(H\d+)\] (.*)$", re.MULTILINE)


def forecast_reply(votes: dict) -> str:
    return json.dumps({"forecasts": [{"id": label, "confirmed": vote} for label, vote in votes.items()]})


def factor(model: str, n: int) -> str:
    """The name of the n-th factor a model's hypotheses are about: opaque, so that no text names its author."""
    return f"F{hashlib.sha256(model.encode()).hexdigest()[:6]}{n}"


def generation_reply(model: str, count: int = 3) -> str:
    """Hypothesis n is about factor(model, n)."""
    hypotheses = [
        {
            "statement": f"Raising {factor(model, n)} extends lifespan.",
            "mechanism": f"{factor(model, n)} lowers inflammation.",
            "prediction": f"Mice given {factor(model, n)} live longer.",
            "domain_category": "inflammation",
        }
        for n in range(1, count + 1)
    ]
    return json.dumps({"hypotheses": hypotheses, "notes": ""})


def translation_reply(user: str) -> str:
    request, _ = json.JSONDecoder().raw_decode(user, user.index("{"))
    return json.dumps(
        {
            "translations": [
                {key: (value if key == "id" else f"RU {value}") for key, value in item.items()}
                for item in request["hypotheses"]
            ]
        }
    )


class Script:
    """What each model answers. Override per model:

    generate[model](attempt) → reply text, forecast[model](items, attempt) → reply text (items: [(label, text)]),
    translate[model](user, attempt) → reply text. A reply may also be (status, body dict) for an HTTP error.
    The optional modes answer from `detailed` (items → reply) and `single` (items → reply) for every model, and the
    inspiration judge from `inspire` (user, attempt → reply; attempt counts requests with the same user text)."""

    def __init__(self):
        self.generate = {}
        self.forecast = {}
        self.translate = {}
        self.detailed = lambda items: json.dumps(
            {
                "protocol": "experimental-support-v1",
                "forecasts": [
                    {"id": label, "p_experimental_support": 0.7, "recommend_for_testing": True} for label, _ in items
                ],
            }
        )
        self.single = lambda items: forecast_reply({label: False for label, _ in items})
        self.inspire = lambda user, attempt: json.dumps(
            {"judgment": "negative", "connection": "", "quote": "", "reason": "scripted"}
        )
        self.requests = []
        self.attempts = defaultdict(int)
        self._lock = threading.Lock()

    def answer(self, model: str, system: str, user: str):
        kind = (
            "inspiration"
            if "offer a concrete connection to the hypothesis" in user
            else "generate"
            if re.search(r"\bPropose (ten|five) hypotheses\b", user)
            else "translate"
            if "into Russian" in user
            else "detailed"
            if "p_experimental_support" in user
            else "single"
            if "Will this hypothesis be confirmed" in user
            else "forecast"
        )
        with self._lock:
            self.requests.append((model, kind, user))
            self.attempts[(model, kind)] += 1
            attempt = self.attempts[(model, kind)]
        if kind == "inspiration":
            with self._lock:
                self.attempts[(model, kind, user)] += 1
                attempt = self.attempts[(model, kind, user)]
            return self.inspire(user, attempt)
        if kind == "generate":
            return self.generate.get(model, lambda attempt: generation_reply(model))(attempt)
        if kind == "translate":
            return self.translate.get(model, lambda user, attempt: translation_reply(user))(user, attempt)
        items = _ITEM.findall(user)
        if kind in ("detailed", "single"):
            return getattr(self, kind)(items)
        default = lambda items, attempt: forecast_reply({label: True for label, _ in items})  # noqa: E731
        return self.forecast.get(model, default)(items, attempt)

    def requests_of(self, model: str, kind: str) -> list[str]:
        return [user for m, k, user in self.requests if m == model and k == kind]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        messages = body["messages"]
        system = "".join(m["content"] for m in messages if m["role"] in ("system", "developer"))
        user = "".join(m["content"] for m in messages if m["role"] == "user")
        reply = self.server.script.answer(body["model"], system, user)
        if isinstance(reply, tuple):
            status, payload = reply
        else:
            status = 200
            payload = {
                "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 10},
            }
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format, *args):
        pass


class ScriptedModelServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, script: Script):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script = script
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def stop(self):
        self.shutdown()
        self.server_close()


GENERATORS = ("gen-astra", "gen-grok", "gen-opus", "gen-argon")
STAGE1 = "fc-astra"
STAGE2 = ("fc-sonnet", "fc-argon", "fc-grok")
TRANSLATOR = "tr-sonnet"


def make_roster(
    base_url: str,
    *,
    generators=GENERATORS,
    stage1=STAGE1,
    stage2=STAGE2,
    translator=TRANSLATOR,
    simulated: bool = False,
) -> Roster:
    """The default roster, every endpoint an OpenAI-compatible model of the scripted server (model id = name)."""

    def endpoint(model_id: str) -> ModelEndpoint:
        endpoint, _ = ModelEndpoint.objects.get_or_create(
            display_name=f"Model {model_id}",
            defaults={
                "company": f"Company of {model_id}",
                "protocol": ModelEndpoint.Protocol.OPENAI,
                "base_url": base_url,
                "model_id": model_id,
                "is_simulated": simulated,
                "is_grok": "grok" in model_id,
                "timeout_seconds": 10,
            },
        )
        return endpoint

    Roster.objects.filter(is_default=True).update(is_default=False)
    roster = Roster.objects.create(name=f"Test roster {Roster.objects.count() + 1}", is_default=True)
    roles = {
        RosterMember.Role.GENERATOR: generators,
        RosterMember.Role.STAGE1: [stage1],
        RosterMember.Role.STAGE2: stage2,
        RosterMember.Role.TRANSLATOR: [translator] if translator else [],
    }
    for role, models in roles.items():
        for order, model_id in enumerate(models):
            RosterMember.objects.create(roster=roster, role=role, endpoint=endpoint(model_id), order=order)
    return roster


def drive(run: Run, max_rounds: int = 50) -> Run:
    """Do the run's work in this thread until nothing is left to do, as workers would one item at a time."""
    for _ in range(max_rounds):
        run_advance(run_id=run.pk)
        pending = list(
            RunWorkItem.objects.filter(run=run, state=RunWorkItem.State.PENDING)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        if not pending:
            break
        for item_id in pending:
            work_item_perform(item_id=item_id)
    run.refresh_from_db()
    return run


def use_broker(settings, monkeypatch, url: str, transport_options: dict | None = None) -> None:
    """Point the project's Celery app at this broker for one test (the settings and monkeypatch fixtures undo it;
    call drop_broker_connections() after the test). Celery lets the environment win over settings."""
    drop_broker_connections()
    monkeypatch.setenv("CELERY_BROKER_URL", url)
    settings.CELERY_BROKER_URL = url
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = transport_options or {}
    settings.CELERY_TASK_ALWAYS_EAGER = False


def drop_broker_connections() -> None:
    """Connections pooled for one broker URL must not be reused for another. kombu keeps its pools in a registry
    keyed by the broker's address: reset() closes and forgets them, so the next use builds fresh ones."""
    from kombu import pools

    from reviewapp.celery import app

    pools.reset()
    app._pool = None
    app.__dict__.pop("amqp", None)


@contextmanager
def broker_down(settings, monkeypatch):
    """The project's Celery app pointed at a Redis address nothing listens on, for the block."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    use_broker(settings, monkeypatch, f"redis://127.0.0.1:{port}/0")
    try:
        yield
    finally:
        drop_broker_connections()


# Real-worker tests: the project's Celery app on the test Redis, a simulated default roster, and waiting.
PROVIDER_KEYS = ("OPENAI_API_KEY", "XAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY")


@contextmanager
def celery_on_test_redis(settings, monkeypatch, redis_url: str, name: str):
    """Under a key prefix of its own (other test runs may share the Redis), removed afterwards."""
    prefix = f"oh-{name}-test-{uuid.uuid4().hex[:12]}:"
    use_broker(settings, monkeypatch, redis_url, {"global_keyprefix": prefix})
    settings.CELERY_WORKER_HIJACK_ROOT_LOGGER = False
    assert celery_app.connection_for_write().as_uri().startswith("redis://")
    try:
        yield
    finally:
        drop_broker_connections()
        broker = redis.Redis.from_url(redis_url)
        for key in broker.scan_iter(match=f"{prefix}*"):
            broker.delete(key)


@contextmanager
def simulated_default_roster(settings, monkeypatch, *, latency: float, seed: int):
    """The default roster with every endpoint on a simulated model server started here (no provider keys)."""
    for name in PROVIDER_KEYS:
        monkeypatch.delenv(name, raising=False)
    server = start_simulator(SimulatorConfig(latency_seconds=latency, seed=seed))
    settings.SIMULATOR_PORT = server.server_address[1]
    roster_setup_default()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def close_worker_connection(**kwargs):
    # Each worker thread opens its own database connection; closing it lets the test database be dropped.
    connection.close()


@contextmanager
def threads_worker(concurrency: int, shutdown_timeout: float = 30):
    """A Celery worker of the project in this process (threads pool), consuming until the block ends; each thread's
    database connection is closed after its task."""
    from celery.contrib.testing.worker import start_worker

    task_postrun.connect(close_worker_connection)
    try:
        with start_worker(
            celery_app,
            pool="threads",
            concurrency=concurrency,
            perform_ping_check=False,
            shutdown_timeout=shutdown_timeout,
        ):
            yield
    finally:
        task_postrun.disconnect(close_worker_connection)


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"{what} did not happen within {timeout} s")


@contextmanager
def worker_on_test_redis(settings, monkeypatch, redis_url: str, name: str, *, concurrency: int, shutdown_timeout=30):
    """A real Celery worker (threads pool) of the project's app on the test Redis under a key prefix of its own."""
    with celery_on_test_redis(settings, monkeypatch, redis_url, name), threads_worker(concurrency, shutdown_timeout):
        yield

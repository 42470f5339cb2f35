"""One model call over HTTP: the per-endpoint concurrency slot, the transport retry loop and the call record.

The retry loop covers the transport only (timeouts, connection errors, 408, 429, 5xx, Anthropic's 529); the
protocol's single "ask once more" for an unreadable answer is the caller's, recorded as protocol_attempt.
"""

import hashlib
import json
import logging
import random
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta

import httpx
from django.conf import settings
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from reviewapp.core.retry import backoff_delay, retry_delay_from_headers
from reviewapp.core.tls import tls_context
from screening.llm.models import EndpointSlot, ModelCall

logger = logging.getLogger(__name__)

# A slot's lease outlives the longest request it can cover (httpx's timeout bounds each read, not the whole
# response), so a worker killed mid-request frees its slot after at most this long.
_LEASE_MARGIN_SECONDS = 60


@dataclass
class Reply:
    """What an adapter reads from a 2xx reply."""

    text: str | None
    finish_reason: str
    usable: bool
    error: str
    input_tokens: int | None = None
    output_tokens: int | None = None


def finished_reply(text: str, finish_reason: str, tokens: dict, error: str = "") -> Reply:
    """The reply of a generation that ended for finish_reason: unusable with `error` when the adapter found one (the
    reply was cut, refused, …) or when it holds no text; usable otherwise."""
    if error:
        return Reply(text=text, finish_reason=finish_reason, usable=False, error=error, **tokens)
    if not text.strip():
        return Reply(text=text, finish_reason=finish_reason, usable=False, error="the reply is empty", **tokens)
    return Reply(text=text, finish_reason=finish_reason, usable=True, error="", **tokens)


@dataclass
class Completion:
    """The outcome of one model call. `usable` is False for every provider problem; `call` is the record of the
    last transport attempt."""

    text: str | None
    usable: bool
    error: str
    http_status: int | None
    call: ModelCall


@dataclass
class _Attempt:
    status: int | None = None
    body: str = ""
    reply: Reply | None = None
    error: str = ""
    retryable: bool = False
    delay_hint: float | None = None
    simulated_header: bool = False


def error_of(data) -> dict:
    """The error object of an error body; the three protocols all use {"error": {"message": ...}}."""
    error = data.get("error") if isinstance(data, dict) else None
    return error if isinstance(error, dict) else {}


def encode_body(body: dict) -> bytes:
    """The request body's bytes as sent; request_sha256 is their sha256."""
    return json.dumps(body, ensure_ascii=False).encode()


def _is_retryable_status(status: int) -> bool:
    return status in (408, 429) or 500 <= status <= 599  # 5xx includes Anthropic's 529 overloaded


# Concurrency: a table of numbered slots per endpoint, claimed by a conditional UPDATE so that every worker
# process on every machine sees the same count (Celery's rate_limit is per worker). A call waiting for a slot looks
# again every few tens of milliseconds: a slot freed is taken soon, and the look is one cheap statement.
_SLOT_WAIT_FIRST, _SLOT_WAIT_MOST = 0.005, 0.04


def _claim_free_slot(endpoint, limit: int, token: str, lease: timedelta) -> bool:
    """One statement: a free slot (holder-less, or its lease expired), picked at random, now held by `token`. On
    PostgreSQL rows another worker is claiming at that moment are skipped rather than waited for."""
    now = timezone.now()
    free = Q(holder="") | Q(lease_expires_at__lt=now)
    if connection.vendor != "postgresql":
        first_free = EndpointSlot.objects.filter(free, endpoint=endpoint, number__lt=limit).order_by("?").values("pk")
        return (
            EndpointSlot.objects.filter(free, pk__in=first_free[:1]).update(holder=token, lease_expires_at=now + lease)
            == 1
        )
    table = connection.ops.quote_name(EndpointSlot._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET holder = %s, lease_expires_at = %s WHERE id = (SELECT id FROM {table} "
            "WHERE endpoint_id = %s AND number < %s AND (holder = '' OR lease_expires_at < %s) "
            "ORDER BY random() LIMIT 1 FOR UPDATE SKIP LOCKED)",
            [token, now + lease, endpoint.pk, limit, now],
        )
        return cursor.rowcount == 1


def acquire_slot(endpoint, *, deadline: float) -> str | None:
    """Claim one of the endpoint's slots, waiting until `deadline` (time.monotonic()). Returns the holder token."""
    limit = endpoint.concurrency_limit
    token = uuid.uuid4().hex
    lease = timedelta(seconds=endpoint.timeout_seconds + _LEASE_MARGIN_SECONDS)
    wait = _SLOT_WAIT_FIRST
    created = False
    while True:
        if _claim_free_slot(endpoint, limit, token, lease):
            return token
        if not created:
            # The slots are made once, when a call first finds none free (the limit may have been raised since).
            created = True
            if EndpointSlot.objects.filter(endpoint=endpoint, number__lt=limit).count() < limit:
                EndpointSlot.objects.bulk_create(
                    [EndpointSlot(endpoint=endpoint, number=n) for n in range(limit)], ignore_conflicts=True
                )
                continue
        if time.monotonic() + wait > deadline:
            return None
        time.sleep(wait * random.uniform(0.5, 1.5))
        wait = min(wait * 2, _SLOT_WAIT_MOST)


def release_slot(token: str) -> None:
    # A slot reclaimed after its lease expired has a new holder; this then frees nothing.
    EndpointSlot.objects.filter(holder=token).update(holder="", lease_expires_at=None)


def _redact(text: str, key: str) -> str:
    # Some providers echo the key in an error message.
    return text.replace(key, "[redacted]") if key and len(key) >= 4 else text


def _send_once(client: httpx.Client, adapter, *, url: str, headers: dict, payload: bytes, timeout: float) -> _Attempt:
    try:
        response = client.post(url, content=payload, headers=headers, timeout=httpx.Timeout(timeout))
    except httpx.TimeoutException as exc:
        return _Attempt(error=f"timed out after {timeout:.1f} s ({type(exc).__name__})", retryable=True)
    except httpx.TransportError as exc:
        return _Attempt(error=f"connection error: {type(exc).__name__}: {exc}", retryable=True)

    attempt = _Attempt(
        status=response.status_code,
        body=response.text,
        simulated_header=response.headers.get("x-simulated", "").lower() == "true",
    )
    try:
        data = response.json()
    except ValueError:
        data = None
    if response.is_success:
        if not isinstance(data, dict):
            attempt.error = "the reply is not a JSON object"
            return attempt
        attempt.reply = adapter.read_reply(data)
        attempt.error = attempt.reply.error
        return attempt

    message = str(error_of(data).get("message") or response.text[:300]).strip()
    attempt.error = f"HTTP {response.status_code}: {message}"
    if adapter.is_quota_exhausted(response.status_code, data):
        attempt.error += " (quota or spend limit exhausted: not retried)"
        return attempt
    attempt.retryable = _is_retryable_status(response.status_code)
    if attempt.retryable:
        attempt.delay_hint = retry_delay_from_headers(response.headers)
        if attempt.delay_hint is None:
            attempt.delay_hint = adapter.body_retry_delay(data)
    return attempt


def call_with_retries(
    *, endpoint, adapter, key: str | None, body: dict, purpose: str, run, protocol_attempt: int
) -> Completion:
    url = adapter.url(endpoint)
    headers = {"content-type": "application/json", **(adapter.auth_headers(key) if key else {})}
    payload = encode_body(body)
    record = {
        "endpoint": endpoint,
        "run_id": getattr(run, "pk", run),
        "purpose": purpose,
        "protocol_attempt": protocol_attempt,
        "url": url,
        "model_id": endpoint.model_id,
        "request_body": body,
        "request_sha256": hashlib.sha256(payload).hexdigest(),
        "tools_disabled": not any(field in body for field in ("tools", "tool_choice", "web_search_options")),
    }
    deadline = time.monotonic() + settings.PROVIDER_MAX_SECONDS
    max_attempts = max(1, settings.PROVIDER_MAX_ATTEMPTS)

    with httpx.Client(verify=tls_context()) as client:
        for number in range(1, max_attempts + 1):
            token = acquire_slot(endpoint, deadline=deadline)
            if token is None:
                error = f"no free slot of {endpoint.display_name} within the call's time limit"
                call = ModelCall.objects.create(
                    **record, transport_attempt=number, error=error, simulated=endpoint.is_simulated
                )
                return Completion(text=None, usable=False, error=error, http_status=None, call=call)
            started = time.monotonic()
            try:
                timeout = max(0.1, min(endpoint.timeout_seconds, deadline - started))
                attempt = _send_once(client, adapter, url=url, headers=headers, payload=payload, timeout=timeout)
            finally:
                release_slot(token)
            latency_ms = round((time.monotonic() - started) * 1000)

            reply = attempt.reply
            call = ModelCall.objects.create(
                **record,
                transport_attempt=number,
                response_body=_redact(attempt.body, key),
                http_status=attempt.status,
                finish_reason=reply.finish_reason if reply else "",
                usable=bool(reply and reply.usable),
                latency_ms=latency_ms,
                input_tokens=reply.input_tokens if reply else None,
                output_tokens=reply.output_tokens if reply else None,
                error=_redact(attempt.error, key),
                simulated=endpoint.is_simulated or attempt.simulated_header,
            )
            logger.info(
                "model call %s %s try %s.%s: HTTP %s in %d ms%s",
                endpoint.display_name,
                purpose,
                protocol_attempt,
                number,
                attempt.status,
                latency_ms,
                f" ({call.error})" if call.error else "",
            )
            if not attempt.retryable:
                return Completion(
                    text=reply.text if reply else None,
                    usable=call.usable,
                    error=call.error,
                    http_status=attempt.status,
                    call=call,
                )
            delay = (
                attempt.delay_hint
                if attempt.delay_hint is not None
                else backoff_delay(
                    number, base=settings.PROVIDER_BACKOFF_BASE_SECONDS, maximum=settings.PROVIDER_BACKOFF_MAX_SECONDS
                )
            )
            if number == max_attempts:
                gave_up = f"{call.error} (gave up after {number} attempts)"
                break
            if time.monotonic() + delay >= deadline:
                gave_up = f"{call.error} (gave up: the call's limit of {settings.PROVIDER_MAX_SECONDS:g} s would pass)"
                break
            time.sleep(delay)
    return Completion(text=None, usable=False, error=gave_up, http_status=attempt.status, call=call)

"""One request to an online literature source: the cache first, then the shared rate limit and the retry loop.

Credentials (NCBI's api_key, tool and email) are sent but never become part of a cache key, a cached record, a
log line or an error message.
"""

import logging
import time
from dataclasses import dataclass

import httpx
from django.conf import settings

from literature.sources.cache import cache_key, cache_lookup, cache_store
from literature.sources.ratelimit import wait_for_turn
from reviewapp.core.retry import backoff_delay, retry_delay_from_headers
from reviewapp.core.tls import tls_context

logger = logging.getLogger(__name__)


class SourceError(Exception):
    """An online source could not answer."""


class SourceUnavailable(SourceError):
    """The source refused the request, or kept failing until the retries ran out."""


class ReplayMiss(SourceError):
    """Replay-only mode (LITERATURE_REPLAY_ONLY) and the answer is not in the cache."""

    def __init__(self, *, source: str, endpoint: str, parameters: dict, key: str):
        self.source, self.endpoint, self.parameters, self.key = source, endpoint, parameters, key
        super().__init__(
            f"replay-only mode: no cached {source} {endpoint} answer for {parameters} (cache key {key}); "
            "run once with LITERATURE_REPLAY_ONLY=false to record it"
        )


@dataclass(frozen=True)
class RateLimit:
    name: str
    per_second: float


def source_request(
    *,
    source: str,
    endpoint: str,
    url: str,
    parameters: dict,
    rate_limit: RateLimit,
    expires: bool,
    credentials: dict | None = None,
    method: str = "GET",
) -> str:
    """The body of the source's answer to `parameters` (plus `credentials`), from the cache when it has it.

    expires: True for searches (cached for LITERATURE_SEARCH_CACHE_SECONDS), False for by-id fetches.
    GET sends the parameters in the query string; POST as a form, so no credential ever appears in a URL.
    Raises ReplayMiss or SourceUnavailable.
    """
    key = cache_key(source, endpoint, parameters)
    replay = settings.LITERATURE_REPLAY_ONLY
    cached = cache_lookup(key, replay=replay)
    if cached is not None:
        return cached.body
    if replay:
        raise ReplayMiss(source=source, endpoint=endpoint, parameters=parameters, key=key)

    sent = {**parameters, **{name: value for name, value in (credentials or {}).items() if value}}
    secrets = [str(value) for value in (credentials or {}).values() if value and len(str(value)) >= 4]
    max_attempts = max(1, settings.LITERATURE_MAX_ATTEMPTS)
    with httpx.Client(timeout=settings.LITERATURE_HTTP_TIMEOUT_SECONDS, verify=tls_context()) as client:
        for attempt in range(1, max_attempts + 1):
            wait_for_turn(rate_limit.name, rate_limit.per_second)
            delay = None
            try:
                if method == "POST":
                    response = client.post(url, data=sent)
                else:
                    response = client.get(url, params=sent)
            except httpx.TimeoutException as exc:
                error = f"timed out ({type(exc).__name__})"
            except httpx.TransportError as exc:
                error = f"connection error ({type(exc).__name__}: {_redact(str(exc), secrets)})"
            else:
                if response.is_success:
                    cache_store(
                        source=source,
                        endpoint=endpoint,
                        key=key,
                        parameters=parameters,
                        status_code=response.status_code,
                        content_type=response.headers.get("content-type", ""),
                        body=response.text,
                        expires=expires,
                    )
                    return response.text
                error = f"HTTP {response.status_code}: {_redact(response.text[:300], secrets).strip()}"
                if not _is_retryable(response.status_code):
                    raise SourceUnavailable(f"{source} {endpoint} refused the request: {error}")
                delay = retry_delay_from_headers(response.headers)
            if attempt == max_attempts:
                break
            if delay is None:
                delay = backoff_delay(
                    attempt,
                    base=settings.LITERATURE_BACKOFF_BASE_SECONDS,
                    maximum=settings.LITERATURE_BACKOFF_MAX_SECONDS,
                )
            if delay > settings.LITERATURE_BACKOFF_MAX_SECONDS:
                raise SourceUnavailable(
                    f"{source} {endpoint}: {error}; it asks to wait {delay:.0f} s, longer than "
                    f"LITERATURE_BACKOFF_MAX_SECONDS ({settings.LITERATURE_BACKOFF_MAX_SECONDS:g} s)"
                )
            logger.warning("%s %s try %s: %s; retrying in %.1f s", source, endpoint, attempt, error, delay)
            time.sleep(delay)
    raise SourceUnavailable(f"{source} {endpoint}: {error} (gave up after {max_attempts} attempts)")


def _is_retryable(status: int) -> bool:
    return status in (408, 429) or 500 <= status <= 599


def _redact(text: str, secrets: list[str]) -> str:
    # NCBI echoes the api key in some error bodies.
    for secret in secrets:
        text = text.replace(secret, "[redacted]")
    return text

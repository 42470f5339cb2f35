"""Waiting between tries of an outside HTTP service (model providers, literature sources)."""

import email.utils
import random
from datetime import UTC, datetime

import httpx


def retry_delay_from_headers(headers: httpx.Headers) -> float | None:
    """retry-after-ms, else retry-after in seconds or as an HTTP date; None when the service names no delay."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def backoff_delay(attempt: int, *, base: float, maximum: float) -> float:
    """Exponential backoff with jitter: half the step fixed, half random (attempt counts from 1)."""
    step = min(maximum, base * 2 ** (attempt - 1))
    return step / 2 + random.uniform(0, step / 2)

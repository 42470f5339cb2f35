"""The response cache of online sources: one row per (source, endpoint, parameters without credentials).

Searches expire after LITERATURE_SEARCH_CACHE_SECONDS; by-id fetches never do (an article's record is stable
enough, and re-checks must see the same text). In replay mode every cached answer is served, expired or not.
"""

import hashlib
import json
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from literature.models import SourceResponse

# Identify the caller or authorise it; they never change the answer, so they stay out of the key and the record.
CREDENTIAL_PARAMETERS = frozenset({"api_key", "tool", "email"})


def cache_key(source: str, endpoint: str, parameters: dict) -> str:
    """sha256 of the source, the endpoint and the parameters (credentials must not be among them)."""
    leaked = CREDENTIAL_PARAMETERS & set(parameters)
    if leaked:
        raise ValueError(f"credentials among cached parameters: {sorted(leaked)}")
    canonical = json.dumps(
        {"source": source, "endpoint": endpoint, "parameters": {k: str(v) for k, v in parameters.items()}},
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def cache_lookup(key: str, *, replay: bool) -> SourceResponse | None:
    entry = SourceResponse.objects.filter(key=key).first()
    if entry is None:
        return None
    if replay or entry.expires_at is None or entry.expires_at > timezone.now():
        return entry
    return None


def cache_store(
    *,
    source: str,
    endpoint: str,
    key: str,
    parameters: dict,
    status_code: int,
    content_type: str,
    body: str,
    expires: bool,
) -> None:
    now = timezone.now()
    entry = SourceResponse(
        source=source,
        endpoint=endpoint,
        key=key,
        parameters={k: str(v) for k, v in parameters.items()},
        status_code=status_code,
        content_type=content_type[:200],
        body=body,
        fetched_at=now,
        expires_at=now + timedelta(seconds=settings.LITERATURE_SEARCH_CACHE_SECONDS) if expires else None,
    )
    # An upsert: two workers fetching the same answer at once both succeed.
    SourceResponse.objects.bulk_create(
        [entry],
        update_conflicts=True,
        unique_fields=["key"],
        update_fields=["parameters", "status_code", "content_type", "body", "fetched_at", "expires_at"],
    )

"""Typed readers for settings that come from environment variables, and the names of every variable they read (a model
endpoint may never name one as its key variable: screening.llm.models)."""

import os

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
_names_read: set[str] = set()


def names_read() -> frozenset[str]:
    """The environment variables the settings have read through these readers."""
    return frozenset(_names_read)


def env_str(name: str, default: str = "") -> str:
    _names_read.add(name)
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    _names_read.add(name)
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, not {raw!r}")


def env_int(name: str, default: int) -> int:
    _names_read.add(name)
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be a whole number, not {raw!r}") from exc


def env_list(name: str, default: list[str]) -> list[str]:
    _names_read.add(name)
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]

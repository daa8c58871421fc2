"""Shared base of the async resource classes and small argument checks."""

from __future__ import annotations

import datetime as _dt
from typing import Any

from analytics_nb.client._core import Core

__all__ = ["Resource", "check_choice", "check_id", "iso", "require_text"]


class Resource:
    """An API area bound to the client's core; methods are ``async`` (the sync client wraps them)."""

    def __init__(self, core: Core) -> None:
        self._core = core

    def __repr__(self) -> str:
        return f"<{type(self).__name__} on {self._core.config.app_url}>"


def require_text(name: str, value: Any) -> str:
    """A non-empty string identifier, or a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, str | int) or not str(value).strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}.")
    return str(value).strip()


def check_id(name: str, value: Any) -> int:
    """A positive integer id, or a ValueError naming ``name``."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an integer id, got {value!r}.")
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an integer id, got {value!r}.") from None
    if str(number) != str(value).strip() and not isinstance(value, int):
        raise ValueError(f"{name} must be an integer id, got {value!r}.")
    return number


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    """``value`` if it is one of ``choices``, else a ValueError listing them."""
    if value not in choices:
        raise ValueError(f"{name}={value!r} is not allowed; use one of {', '.join(map(repr, choices))}.")
    return str(value)


def iso(name: str, value: Any) -> str | None:
    """A date filter as the service reads it: relative text (``-7d``) or ISO 8601 from a datetime/date."""
    if value is None:
        return None
    if isinstance(value, _dt.datetime | _dt.date):
        return value.isoformat()
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise ValueError(f"{name} must be a datetime, a date, ISO 8601 text or relative text like '-7d'.")

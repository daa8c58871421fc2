"""Turn the client's typed errors (``analytics_nb.errors``) into one plain sentence for a panel's status line.

A panel never shows a traceback: a missing scope names the scope and how to get it, the cloud's refusal of
personal API keys on some playlist actions is explained, a 405 says what to do instead, and a network fault
says the edits are kept. The client already keeps secrets out of its messages; nothing here adds a key.
"""

from __future__ import annotations

import re
from typing import Any

import httpx

from analytics_nb.errors import (
    AuthenticationError,
    MethodNotAllowedError,
    NetworkError,
    NotFoundError,
    PermissionDeniedError,
    PostHogError,
    QuotaLimitedError,
    RateLimitedError,
    ServerError,
    ValidationError,
)

__all__ = ["FormError", "describe_error"]


class FormError(ValueError):
    """Bad input in a panel's form (names the field and the fix); no request was sent."""


_PERSONAL_KEY_REFUSED = re.compile(r"does not support personal api key", re.IGNORECASE)
_SCOPE = re.compile(r"scope '([^']+)'")


def _detail(exc: BaseException) -> str:
    detail = getattr(exc, "detail", None)
    return str(detail).strip() if detail else ""


def _what(exc: BaseException) -> str:
    """A short "METHOD path" of the failed request, when the error carries it (never a key)."""
    method = getattr(exc, "method", None) or ""
    url: Any = getattr(exc, "url", None) or ""
    path = str(url)
    match = re.match(r"https?://[^/]+(/.*)?$", path)
    if match:
        path = match.group(1) or "/"
    path = path.split("?", 1)[0]
    return f"{method} {path}".strip()


def _scope_needed(exc: BaseException) -> str | None:
    scope = getattr(exc, "missing_scope", None)
    if scope:
        return str(scope)
    found = _SCOPE.search(_detail(exc) or str(exc))
    return found.group(1) if found else None


def describe_error(exc: BaseException) -> str:
    """Return one plain sentence (no traceback, no key) saying what went wrong and what to do about it."""
    status = exc.status if isinstance(exc, PostHogError) else None
    detail = _detail(exc)
    what = _what(exc)
    where = f" ({what})" if what else ""

    if isinstance(exc, FormError):
        return str(exc)
    if isinstance(exc, NetworkError | httpx.TransportError | ConnectionError | TimeoutError):
        return (
            f"Could not reach the service{where}: the connection failed, was reset or timed out. "
            "Check that the server is running and the address is right, then try again; your edits are kept."
        )
    if status == 403 or isinstance(exc, PermissionDeniedError):
        scope = _scope_needed(exc)
        if scope:
            return (
                f"Your personal API key is missing the scope '{scope}'. Create a key that has '{scope}' "
                "(Settings > Personal API keys) and connect with it; your edits are kept."
            )
        if _PERSONAL_KEY_REFUSED.search(detail or str(exc)):
            return (
                "The service does not accept personal API keys for this action"
                f"{where}: on PostHog Cloud, adding or removing recordings in a playlist only works when "
                "logged in to the web app. Do it in the PostHog web app (or against a self-hosted or sandbox "
                "service)."
            )
        return f"The service refused this request{where}: {detail or 'permission denied'} (403)."
    if status == 401 or isinstance(exc, AuthenticationError):
        return (
            "The personal API key was not accepted (401). Check that it is a current personal API key "
            "(phx_...) for this host; your edits are kept."
        )
    if status == 405 or isinstance(exc, MethodNotAllowedError):
        method = getattr(exc, "method", None) or "this method"
        if "playlist" in what:
            return (
                f"The service does not allow {method} on this playlist address (405). Playlists cannot be "
                "deleted for good: use Archive (a PATCH setting deleted to true), which Restore undoes."
            )
        return f"The service does not allow {method} on this address{where} (405)."
    if status == 404 or isinstance(exc, NotFoundError):
        return (
            f"Not found{where} (404): it may have been archived or deleted meanwhile. "
            "Refresh the list and try again."
        )
    if status == 400 or isinstance(exc, ValidationError):
        attr = getattr(exc, "attr", None)
        field = f" the field '{attr}'" if attr else " the request"
        return (
            f"The service rejected{field}: {detail or str(exc)} (400). "
            "Fix it and save again; your edits are kept."
        )
    if status == 429 or isinstance(exc, RateLimitedError | QuotaLimitedError):
        retry = getattr(exc, "retry_after", None)
        wait = f" in about {retry:g} s" if isinstance(retry, int | float) else " in a minute"
        return f"The service is rate limiting requests (429). Try again{wait}; your edits are kept."
    if (isinstance(status, int) and status >= 500) or isinstance(exc, ServerError):
        return (
            f"The service failed with an internal error{where} ({status or 500}). Try again; if it "
            f"persists the request is probably invalid for this item. {detail}".rstrip()
        )
    if isinstance(status, int):
        return f"The request failed{where} ({status}): {detail or str(exc)}"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else f"{type(exc).__name__} (no details)."

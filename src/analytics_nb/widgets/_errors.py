"""Turn the client's typed errors (``analytics_nb.errors``) into one plain sentence for a panel's status line.

Errors are matched by type (``isinstance`` on the classes of ``analytics_nb.errors``), never by name: a
missing scope names the scope and how to get it, the cloud's refusal of personal API keys on some playlist
actions is explained, a 405 says what to do instead, a 404 on a project says the project does not exist,
a network fault says the edits are kept, and a closed client names the fix. The client already keeps
secrets out of its messages; nothing here adds a key.
"""

from __future__ import annotations

import re

import httpx

from analytics_nb import errors

__all__ = ["ClientClosedError", "FormError", "describe_error"]


class FormError(ValueError):
    """Bad input in a panel's form (names the field and the fix); no request was sent."""


class ClientClosedError(RuntimeError):
    """The panel's client was closed (``client.close()``, or a notebook's last cell); no request was sent."""

    def __init__(self, panel: str) -> None:
        super().__init__(
            f"This panel's client is closed (client.close() ran, e.g. in a notebook's last cell), so the "
            f"{panel} cannot reach the service. Make a new client and give it to the panel: "
            f"panel.client = Client.from_env() (or Client.sandbox()), or build a new {panel} with it."
        )
        self.panel = panel


_PERSONAL_KEY_REFUSED = re.compile(r"does not support personal api key", re.IGNORECASE)
_SCOPE = re.compile(r"scope '([^']+)'")
_PROJECT_PATH = re.compile(r"^/api/(?:projects|environments)/([^/]+)(?:/[^/]+)?/?$")


def _where(exc: errors.PostHogError) -> str:
    """The failed request's path (no host, no query string, so never a key)."""
    path = str(exc.url or "")
    match = re.match(r"https?://[^/]+(/.*)?$", path)
    if match:
        path = match.group(1) or "/"
    return path.split("?", 1)[0]


def _what(exc: errors.PostHogError) -> str:
    return f"{exc.method or ''} {_where(exc)}".strip()


def _scope_needed(exc: errors.PermissionDeniedError) -> str | None:
    if exc.missing_scope:
        return exc.missing_scope
    found = _SCOPE.search(exc.detail or str(exc))
    return found.group(1) if found else None


def _not_found(exc: errors.NotFoundError, where: str) -> str:
    """A 404 on a project's collection (or one the service says is the project's) is about the project."""
    path = _where(exc)
    listing = _PROJECT_PATH.match(path)
    if listing or "project" in (exc.detail or "").lower():
        project = f" {listing.group(1)}" if listing else ""
        return (
            f"Project{project} was not found{where} (404): it does not exist or this key cannot see it. "
            "Check the project_id the client was created with (Client(..., project_id=...) or "
            "POSTHOG_PROJECT_ID)."
        )
    return (
        f"Not found{where} (404): it may have been archived or deleted meanwhile. "
        "Refresh the list and try again."
    )


def _service_error(exc: errors.PostHogError) -> str:
    what = _what(exc)
    where = f" ({what})" if what else ""
    detail = (exc.detail or "").strip()
    status = exc.status
    if isinstance(exc, errors.NetworkError):
        return _unreachable(where)
    if isinstance(exc, errors.PermissionDeniedError):
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
    if isinstance(exc, errors.AuthenticationError):
        return (
            "The personal API key was not accepted (401). Check that it is a current personal API key "
            "(phx_...) for this host; your edits are kept."
        )
    if isinstance(exc, errors.MethodNotAllowedError):
        method = exc.method or "this method"
        if "playlist" in what:
            return (
                f"The service does not allow {method} on this playlist address (405). Playlists cannot be "
                "deleted for good: use Archive (a PATCH setting deleted to true), which Restore undoes."
            )
        return f"The service does not allow {method} on this address{where} (405)."
    if isinstance(exc, errors.NotFoundError):
        return _not_found(exc, where)
    if isinstance(exc, errors.RateLimitedError):
        retry = exc.retry_after
        wait = f" in about {retry:g} s" if retry is not None else " in a minute"
        return f"The service is rate limiting requests (429). Try again{wait}; your edits are kept."
    if isinstance(exc, errors.QuotaLimitedError):
        return f"The project's quota for this product is used up{where} (402); raise the billing limit."
    if isinstance(exc, errors.ValidationError):
        field = f" the field '{exc.attr}'" if exc.attr else " the request"
        return (
            f"The service rejected{field}: {detail or str(exc)} ({status or 400}). "
            "Fix it and save again; your edits are kept."
        )
    if isinstance(exc, errors.ServerError):
        return (
            f"The service failed with an internal error{where} ({status or 500}). Try again; if it "
            f"persists the request is probably invalid for this item. {detail}".rstrip()
        )
    if status is not None:
        return f"The request failed{where} ({status}): {detail or str(exc)}"
    return str(exc)


def _unreachable(where: str) -> str:
    return (
        f"Could not reach the service{where}: the connection failed, was reset or timed out. "
        "Check that the server is running and the address is right, then try again; your edits are kept."
    )


def describe_error(exc: BaseException) -> str:
    """Return one plain sentence (no traceback, no key) saying what went wrong and what to do about it."""
    if isinstance(exc, FormError | ClientClosedError):
        return str(exc)
    if isinstance(exc, errors.PostHogError):
        return _service_error(exc)
    if isinstance(exc, httpx.TransportError | ConnectionError | TimeoutError):
        return _unreachable("")
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else f"{type(exc).__name__} (no details)."

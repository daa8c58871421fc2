"""Typed exceptions raised by the analytics_nb client.

Every error carries what the service said (``status``, ``type``, ``code``, ``detail``, ``attr``) and where
(``method``, ``url`` with any key removed). ``str(error)`` is one plain sentence that names the fix; no API
key ever appears in an error's text, args, notes or chained exceptions.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from analytics_nb.wire import redact

__all__ = [
    "AuthenticationError",
    "CaptureInterrupted",
    "ConflictError",
    "IncompleteListingWarning",
    "IncompleteRecordingsError",
    "IncompleteRecordingsWarning",
    "MethodNotAllowedError",
    "NetworkError",
    "NotFoundError",
    "PaginationError",
    "PermissionDeniedError",
    "PostHogError",
    "QuotaLimitedError",
    "RateLimitedError",
    "RedirectError",
    "ResponseFormatError",
    "ServerError",
    "ValidationError",
    "error_from_response",
    "redact",
]

_SCOPE_PATTERN = re.compile(r"missing required scope '([^']+)'", re.IGNORECASE)


class PostHogError(Exception):
    """Base class of every error the client raises; carries the service's ``{type, code, detail, attr}``."""

    default_hint = ""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        type: str | None = None,
        code: str | None = None,
        detail: str | None = None,
        attr: str | None = None,
        method: str | None = None,
        url: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.type = type
        self.code = code
        self.detail = detail
        self.attr = attr
        self.method = method
        self.url = url

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, detail={self.detail!r})"


class AuthenticationError(PostHogError):
    """401: no key, or the key is invalid or expired."""


class PermissionDeniedError(PostHogError):
    """403: the key lacks a scope (``missing_scope``), a project/organization, or the action refuses keys."""

    def __init__(self, message: str, *, missing_scope: str | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.missing_scope = missing_scope


class NotFoundError(PostHogError):
    """404: the resource does not exist, is soft-deleted, or belongs to another project."""


class ValidationError(PostHogError):
    """400: the request was refused; ``attr`` names the offending field when the service says which."""


class MethodNotAllowedError(PostHogError):
    """405: the service does not allow this method here (playlists cannot be hard-deleted)."""


class RateLimitedError(PostHogError):
    """429: too many requests; ``retry_after`` is the wait in seconds the service asked for (or None)."""

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after


class QuotaLimitedError(PostHogError):
    """402: the project's billing quota is exhausted for this product."""


class ServerError(PostHogError):
    """5xx: the service failed; transient ones (502/503/504) were already retried."""


class NetworkError(PostHogError):
    """The request did not complete: connection refused or reset, timeout, or a broken response."""


class RedirectError(PostHogError):
    """A 3xx answer that was not followed: to another host (the key is never sent there), a non-GET, or
    too many hops. ``location`` is where the service pointed (keys removed)."""

    def __init__(self, message: str, *, location: str | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.location = location


class ResponseFormatError(PostHogError):
    """A 2xx answer that is not what the API sends: not JSON (an HTML page), empty or ``null`` where data
    was expected, or JSON of the wrong shape. Usually ``host`` points at something else than the API."""


class CaptureInterrupted(KeyboardInterrupt):
    """``capture_frame`` was interrupted (Ctrl-C); ``report`` is its report (one row per input row: sent,
    failed, refused, not_attempted). A ``KeyboardInterrupt``, so scripts still stop; re-running the same
    call, in this kernel or a new one, is safe: the capture journal resumes the run (same uuids, rows
    already stored not sent again)."""

    def __init__(self, message: str, *, report: Any = None) -> None:
        super().__init__(message)
        self.report = report


class ConflictError(PostHogError):
    """An update did not stay because another session wrote the same resource meanwhile; ``current`` is the
    resource as stored now (re-apply the change to it if it is still wanted)."""

    def __init__(self, message: str, *, current: Any = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.current = current


class PaginationError(PostHogError):
    """A list's ``next`` links would never end (a link repeats, the offset does not advance, or pages keep
    repeating records already read); raised instead of looping forever."""


class IncompleteListingWarning(UserWarning):
    """A listing could not be shown complete while rows kept changing: ``read`` distinct records against the
    ``counts`` the service gave during the walks (see ``analytics_nb.client._pagination``)."""

    def __init__(self, message: str, *, read: int = 0, counts: list[int] | None = None) -> None:
        super().__init__(message)
        self.read = read
        self.counts = list(counts or [])


class IncompleteRecordingsWarning(UserWarning):
    """A playlist's recordings came back fewer than its items: ``missing`` of ``expected`` (the service's item
    count), with the reason in the message (``client.playlists.recordings``)."""

    def __init__(self, message: str, *, expected: int = 0, received: int = 0) -> None:
        super().__init__(message)
        self.expected = expected
        self.received = received
        self.missing = max(0, expected - received)


class IncompleteRecordingsError(PostHogError):
    """``IncompleteRecordingsWarning`` raised instead (``incomplete="raise"``); ``recordings`` holds what came
    back."""

    def __init__(
        self, message: str, *, expected: int = 0, received: int = 0, recordings: Any = None, **kw: Any
    ) -> None:
        super().__init__(message, **kw)
        self.expected = expected
        self.received = received
        self.missing = max(0, expected - received)
        self.recordings = recordings


_STATUS_CLASSES: dict[int, type[PostHogError]] = {
    400: ValidationError,
    401: AuthenticationError,
    402: QuotaLimitedError,
    403: PermissionDeniedError,
    404: NotFoundError,
    405: MethodNotAllowedError,
    413: ValidationError,
    422: ValidationError,
    429: RateLimitedError,
}

_HINTS: dict[type[PostHogError], str] = {
    AuthenticationError: "check the personal API key (phx_...) for /api calls or the project API key "
    "(phc_...) for decide/capture, and that the host/region matches the project",
    PermissionDeniedError: "use a key with the needed scope and access to this project/organization",
    NotFoundError: "check the id and the project",
    ValidationError: "fix the request field named by the service and try again",
    MethodNotAllowedError: "this operation is not available on this resource",
    RateLimitedError: "wait and retry, or create the client with rate_limit=True to stay under the limits",
    QuotaLimitedError: "the project's quota for this product is used up; raise the billing limit",
    ServerError: "the service failed; try again later",
}


#: Hints for statuses without a class of their own.
_STATUS_HINTS: dict[int, str] = {
    408: "the service timed out waiting for the request (already retried when safe); check the network "
    "and try again",
}


_PROJECT_IN_URL = re.compile(r"/api/(?:projects|environments)/([^/?#]+)")
_ORG_IN_URL = re.compile(r"/api/organizations/([^/?#]+)")
#: URL part -> (what it is, how to check it) for a 404 on one item.
_RESOURCE_404: tuple[tuple[str, str], ...] = (
    (
        "/session_recording_playlists/",
        "check the playlist's short_id (client.playlists.frame() lists them); an archived (soft-deleted) "
        "playlist answers 404 until client.playlists.restore(short_id)",
    ),
    ("/feature_flags/", "check the flag id (client.feature_flags.frame() lists them)"),
    (
        "/pipeline_transformations/",
        "check the transformation id (client.transformations.frame() lists them)",
    ),
)


def _not_found_hint(url: str, detail: str | None) -> str:
    """A 404 sentence that fits what was not found: the project, the organization, or the item."""
    said = (detail or "").strip().lower()
    if said.startswith("project not found"):
        found = _PROJECT_IN_URL.search(url)
        project = f" {found.group(1)}" if found else ""
        return (
            f"project{project} does not exist or this personal API key cannot see it; check project_id= "
            "(client.projects.list() shows the projects the key can read)"
        )
    if said.startswith("organization not found"):
        found = _ORG_IN_URL.search(url)
        org = f" {found.group(1)}" if found else ""
        return (
            f"organization{org} does not exist or this key cannot see it; check organization_id= "
            "(client.organizations.list() shows the ones the key can read)"
        )
    path = url.split("?", 1)[0]
    for part, hint in _RESOURCE_404:
        if part in path:
            return hint
    return "check the id and the project"


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (integer/float seconds; HTTP dates are read as well)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _parse_body(text: str) -> tuple[str | None, str | None, str | None, str | None]:
    """Read ``(type, code, detail, attr)`` from a JSON error body, or the plain text of the Rust services."""
    stripped = text.strip()
    if not stripped:
        return None, None, None, None
    try:
        body = json.loads(stripped)
    except ValueError:
        return None, None, stripped[:500], None
    if isinstance(body, dict):
        detail = body.get("detail", body.get("error", body.get("message")))
        if detail is not None and not isinstance(detail, str):
            detail = json.dumps(detail)
        if detail is None and "type" not in body:
            # A DRF field-error map {"name": ["This field is required."]}.
            detail = json.dumps(body)
            attr = next(iter(body), None)
            return "validation_error", None, detail, attr
        attr = body.get("attr")
        return (
            _str_or_none(body.get("type")),
            _str_or_none(body.get("code")),
            detail,
            _str_or_none(attr),
        )
    if isinstance(body, str):
        return None, None, body, None
    return None, None, json.dumps(body)[:500], None


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def error_from_response(
    status: int,
    body_text: str,
    *,
    method: str,
    url: str,
    retry_after_header: str | None = None,
    secrets: tuple[Any, ...] = (),
    explanation: str | None = None,
) -> PostHogError:
    """Build the typed error for an HTTP error response (JSON ``{type, code, detail, attr}`` or plain text).

    ``explanation`` replaces the generic hint (e.g. the soft-delete explanation of a playlist DELETE).
    """
    etype, code, detail, attr = _parse_body(body_text)
    if detail is not None:
        detail = redact(detail, secrets)
    url = redact(url, secrets)
    cls: type[PostHogError] = _STATUS_CLASSES.get(status, ServerError if status >= 500 else PostHogError)
    if status == 400 and code == "rate_limit_exceeded":
        cls = RateLimitedError
    what = f"{method} {url} failed with HTTP {status}"
    said = f": {detail.rstrip('.')}" if detail else ""
    if attr:
        said += f" (field '{attr}')"
    if explanation:
        message = f"{what}{said}. {explanation}"
    else:
        hint = _STATUS_HINTS.get(status) or _HINTS.get(cls, "see the service's answer above")
        if cls is NotFoundError:
            hint = _not_found_hint(url, detail)
        message = f"{what}{said}. {hint[0].upper()}{hint[1:]}."
    kw: dict[str, Any] = {
        "status": status,
        "type": etype,
        "code": code,
        "detail": detail,
        "attr": attr,
        "method": method,
        "url": url,
    }
    if cls is PermissionDeniedError:
        match = _SCOPE_PATTERN.search(detail or "")
        scope = match.group(1) if match else None
        if scope:
            message = (
                f"{what}: the personal API key is missing the scope '{scope}'. Create a key with the "
                f"'{scope}' scope (or '*') in PostHog's personal API key settings and use it."
            )
        return PermissionDeniedError(message, missing_scope=scope, **kw)
    if cls is RateLimitedError:
        retry_after = parse_retry_after(retry_after_header)
        if retry_after is None and detail:
            found = re.search(r"available in (\d+(?:\.\d+)?) second", detail)
            retry_after = float(found.group(1)) if found else None
        if retry_after is not None and not explanation:
            message = f"{what}{said}. Wait {retry_after:g} s and retry, or use rate_limit=True."
        return RateLimitedError(message, retry_after=retry_after, **kw)
    return cls(message, **kw)

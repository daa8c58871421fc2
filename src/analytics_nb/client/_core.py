"""The async core: one httpx.AsyncClient, auth headers, jittered retries, rate limiter, typed errors."""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
import logging
import math
import random
import time
from collections import deque
from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import quote, urlsplit

import httpx

from analytics_nb import __version__
from analytics_nb.client._config import ClientConfig
from analytics_nb.errors import (
    AuthenticationError,
    NetworkError,
    NotFoundError,
    PermissionDeniedError,
    PostHogError,
    error_from_response,
    parse_retry_after,
    redact,
)
from analytics_nb.wire import json_default

__all__ = ["Core", "RateLimiter", "encode_json"]

log = logging.getLogger("analytics_nb.client")

#: Transient statuses: 429 (any method: the service did not act on it), and for idempotent requests 408
#: (request timeout) and 502/503/504 (the issue's list; a 500 may be a deterministic bug, so not retried).
RETRY_STATUSES = frozenset({408, 429, 502, 503, 504})
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "PATCH", "DELETE"})

# Per-key limits of the real service (posthog-notes §2.5): playlists use the ClickHouse throttles.
DEFAULT_RULES: dict[str, tuple[tuple[int, float], ...]] = {
    "playlists": ((240, 60.0), (1200, 3600.0)),
    "default": ((480, 60.0), (4800, 3600.0)),
}


class _RedactKeys(logging.Filter):
    """Scrub anything shaped like a PostHog key from records of the HTTP libraries (URLs carry ``token=``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is not ours to fix
            return True
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        return True


_REDACT = _RedactKeys()
for _name in ("httpx", "httpcore", "analytics_nb.client"):
    if not any(isinstance(f, _RedactKeys) for f in logging.getLogger(_name).filters):
        logging.getLogger(_name).addFilter(_REDACT)


class RateLimiter:
    """Client-side sliding-window limiter: waits so that no bucket exceeds its ``(count, seconds)`` rules."""

    def __init__(self, rules: Mapping[str, tuple[tuple[int, float], ...]] | None = None) -> None:
        self.rules = dict(DEFAULT_RULES if rules is None else rules)
        self._stamps: dict[tuple[str, float], deque[float]] = {}

    async def acquire(self, bucket: str) -> float:
        """Wait until a request in ``bucket`` is allowed, record it, and return the seconds waited."""
        rules = self.rules.get(bucket) or self.rules.get("default") or ()
        waited = 0.0
        while True:
            now = time.monotonic()
            wait = 0.0
            for limit, window in rules:
                stamps = self._stamps.setdefault((bucket, window), deque())
                while stamps and stamps[0] <= now - window:
                    stamps.popleft()
                if len(stamps) >= limit:
                    wait = max(wait, stamps[0] + window - now)
            if wait <= 0:
                for _limit, window in rules:
                    self._stamps[(bucket, window)].append(now)
                return waited
            await asyncio.sleep(wait)
            waited += wait


def _finite(value: Any) -> Any:
    """``value`` with non-finite floats (NaN, inf) replaced by null, in dicts and lists too."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def encode_json(body: Any) -> bytes:
    """JSON-encode a request body; NaN/NA become null, timestamps ISO 8601, numpy scalars plain numbers."""
    try:
        text = json.dumps(body, default=json_default, allow_nan=False, separators=(",", ":"))
    except ValueError:
        text = json.dumps(_finite(body), default=json_default, allow_nan=False, separators=(",", ":"))
    return text.encode()


class Core:
    """The transport shared by every resource: ``request()`` does auth, retries, limiting and typed errors."""

    def __init__(self, config: ClientConfig, *, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.config = config
        self._transport = transport
        self._http: httpx.AsyncClient | None = None
        self.limiter: RateLimiter | None = RateLimiter() if config.rate_limit else None
        self._organization_id: str | None = config.organization_id
        self._project_api_key: str | None = config.project_api_key
        self._project_numeric_id: int | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self.closed = False
        self.retries_done = 0

    def __repr__(self) -> str:
        return f"Core({self.config!r})"

    # -- plumbing ---------------------------------------------------------------------------------------
    def _client(self) -> httpx.AsyncClient:
        if self.closed:
            raise RuntimeError("This client is closed; create a new Client to make more requests.")
        if self._http is None:
            n = max(10, self.config.max_concurrency * 2)
            self._http = httpx.AsyncClient(
                timeout=httpx.Timeout(self.config.timeout),
                limits=httpx.Limits(max_connections=n, max_keepalive_connections=n),
                headers={"User-Agent": f"analytics-nb/{__version__}", "Accept": "application/json"},
                transport=self._transport,
                follow_redirects=False,
            )
        return self._http

    @property
    def semaphore(self) -> asyncio.Semaphore:
        """Bounds concurrent page fetches to ``max_concurrency``."""
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.config.max_concurrency)
        return self._semaphore

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        self.closed = True
        if self._http is not None:
            http, self._http = self._http, None
            await http.aclose()

    def url(self, path: str, service: Literal["app", "ingest"] = "app") -> str:
        """Absolute URL for ``path`` on the app or ingestion host (absolute URLs keep only path and query)."""
        base = self.config.app_url if service == "app" else self.config.ingest_url
        if path.startswith(("http://", "https://")):
            parts = urlsplit(path)
            path = parts.path + (f"?{parts.query}" if parts.query else "")
        if not path.startswith("/"):
            path = "/" + path
        return base + path

    def scrub(self, text: str) -> str:
        """Remove every key of this client (and anything key-shaped) from ``text``."""
        return redact(text, self.config.secrets)

    def project_path(self, suffix: str = "") -> str:
        """``/api/projects/<project_id>/<suffix>``."""
        return f"/api/projects/{quote(str(self.config.project_id), safe='@')}/{suffix}"

    async def organization_path(self, suffix: str = "") -> str:
        """``/api/organizations/<organization_id>/<suffix>``, resolving the organization id when needed."""
        org = await self.organization_id()
        return f"/api/organizations/{quote(org, safe='@')}/{suffix}"

    def _backoff(self, attempt: int) -> float:
        base = self.config.retry_backoff * (2**attempt)
        return float(min(self.config.max_retry_wait, base) * (0.5 + random.random() / 2))

    # -- the primitive ----------------------------------------------------------------------------------
    async def request(
        self,
        method: str,
        path: str,
        *,
        service: Literal["app", "ingest"] = "app",
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        content: bytes | str | None = None,
        headers: Mapping[str, str] | None = None,
        idempotent: bool = False,
        auth: bool = True,
        explain: Mapping[int, str] | None = None,
    ) -> httpx.Response:
        """Send one request with retries; return the 2xx/3xx response or raise a typed ``PostHogError``.

        Retries (up to ``max_retries``, jittered exponential backoff, ``Retry-After`` honoured) happen on 429,
        408, 502/503/504 and network errors for idempotent requests (GET, PUT, PATCH, DELETE, or
        ``idempotent=True``); a 429 or a refused connection is retried for any method because the service did
        not act on it. ``explain`` maps a status to the sentence the raised error should give.
        """
        method = method.upper()
        url = self.url(path, service)
        safe_url = self.scrub(url)
        send_headers: dict[str, str] = dict(headers or {})
        if auth:
            key = self.config.personal_api_key
            if not key:
                raise AuthenticationError(
                    f"{method} {safe_url} needs a personal API key: pass personal_api_key='phx_...' to the "
                    "Client or set POSTHOG_PERSONAL_API_KEY.",
                    method=method,
                    url=safe_url,
                )
            send_headers["Authorization"] = f"Bearer {key}"
        body: bytes | str | None = content
        if json is not None:
            body = encode_json(json)
            send_headers.setdefault("Content-Type", "application/json")
        query = None if params is None else {k: _param(v) for k, v in params.items() if v is not None}
        can_retry = idempotent or method in IDEMPOTENT_METHODS
        bucket = None
        if self.limiter is not None and service == "app" and auth:
            bucket = "playlists" if "/session_recording_playlists" in url else "default"
        http = self._client()
        attempt = 0
        while True:
            if bucket is not None and self.limiter is not None:
                await self.limiter.acquire(bucket)
            failure: PostHogError | None = None
            response: httpx.Response | None = None
            try:
                response = await http.request(method, url, params=query, content=body, headers=send_headers)
            except httpx.TransportError as exc:
                refused = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)
                if (can_retry or refused) and attempt < self.config.max_retries:
                    wait = self._backoff(attempt)
                    log.debug(
                        "%s %s: %s, retry %d in %.2fs",
                        method,
                        safe_url,
                        type(exc).__name__,
                        attempt + 1,
                        wait,
                    )
                    attempt += 1
                    self.retries_done += 1
                    await asyncio.sleep(wait)
                    continue
                what = self.scrub(str(exc)) or "no details"
                tries = f" after {attempt + 1} attempts" if attempt else ""
                failure = NetworkError(
                    f"{method} {safe_url} failed{tries}: could not complete the request "
                    f"({type(exc).__name__}: {what}). Check the host and network and retry.",
                    method=method,
                    url=safe_url,
                )
            if failure is not None:
                # Raised outside the except block: no chained httpx exception (it holds the headers).
                raise failure
            assert response is not None
            status = response.status_code
            log.debug("%s %s -> %d", method, safe_url, status)
            if status < 400:
                return response
            if (
                status in RETRY_STATUSES
                and (can_retry or status == 429)
                and attempt < self.config.max_retries
            ):
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
                wait = self._backoff(attempt)
                if retry_after is not None:
                    wait = max(wait, retry_after + random.random() * 0.1)
                if retry_after is None or retry_after <= self.config.max_retry_wait:
                    attempt += 1
                    self.retries_done += 1
                    log.debug("%s %s -> %d, retry %d in %.2fs", method, safe_url, status, attempt, wait)
                    await asyncio.sleep(wait)
                    continue
            raise error_from_response(
                status,
                response.text,
                method=method,
                url=safe_url,
                retry_after_header=response.headers.get("Retry-After"),
                secrets=self.config.secrets,
                explanation=(explain or {}).get(status),
            )

    async def get_json(self, path: str, *, params: Mapping[str, Any] | None = None, **kw: Any) -> Any:
        """GET ``path`` and return the decoded JSON body."""
        response = await self.request("GET", path, params=params, **kw)
        return _decode(response, self.scrub(str(response.url)))

    async def send_json(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        """Send ``body`` as JSON with ``method`` and return the decoded JSON answer (None when empty)."""
        response = await self.request(method, path, json=body, **kw)
        return _decode(response, self.scrub(str(response.url)))

    # -- resolved identifiers ---------------------------------------------------------------------------
    async def organization_id(self) -> str:
        """The organization id: given, else ``/api/organizations/@current/``, else the project's."""
        if self._organization_id:
            return self._organization_id
        org: Any = None
        try:
            org = await self.get_json("/api/organizations/@current/")
        except (NotFoundError, PermissionDeniedError):
            org = None
        if isinstance(org, dict) and org.get("id"):
            self._organization_id = str(org["id"])
            return self._organization_id
        project: Any = None
        denied: PermissionDeniedError | None = None
        try:
            project = await self.get_json(self.project_path())
        except PermissionDeniedError as exc:
            denied = exc
        if denied is not None:
            raise PermissionDeniedError(
                "Could not find the organization id: the personal API key may read neither the current "
                "organization nor the project (it needs 'organization:read' or 'project:read'). Pass "
                "organization_id= to the Client or set POSTHOG_ORGANIZATION_ID.",
                missing_scope=denied.missing_scope,
                status=denied.status,
                code=denied.code,
                detail=denied.detail,
                method=denied.method,
                url=denied.url,
            )
        if not isinstance(project, dict) or not project.get("organization"):
            raise NotFoundError(
                "Could not find the organization of this project; pass organization_id= to the Client "
                "or set POSTHOG_ORGANIZATION_ID."
            )
        self._organization_id = str(project["organization"])
        return self._organization_id

    async def project_api_key(self) -> str:
        """The project API key (``phc_...``): given, else read from the project (needs a personal key)."""
        if self._project_api_key:
            return self._project_api_key
        if not self.config.personal_api_key:
            raise AuthenticationError(
                "decide/capture need the project API key: pass project_api_key='phc_...' to the Client "
                "or set POSTHOG_PROJECT_API_KEY."
            )
        project = await self.get_json(self.project_path())
        token = project.get("api_token") if isinstance(project, dict) else None
        if not token:
            raise AuthenticationError(
                "The project does not expose its project API key to this personal key; pass "
                "project_api_key='phc_...' to the Client or set POSTHOG_PROJECT_API_KEY."
            )
        self._project_api_key = str(token)
        return self._project_api_key


def _param(value: Any) -> Any:
    """Query parameter text: booleans as ``true``/``false``, datetimes as ISO 8601, lists kept."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, _dt.datetime | _dt.date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_param(v) for v in value]
    return value


def _decode(response: httpx.Response, safe_url: str) -> Any:
    """Decode a JSON body (None when empty), with a clear error when the service sent something else."""
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        raise PostHogError(
            f"{response.request.method} {safe_url} answered HTTP {response.status_code} with a body that is "
            "not JSON; check that the host points at a PostHog API.",
            status=response.status_code,
            method=response.request.method,
            url=safe_url,
        ) from None

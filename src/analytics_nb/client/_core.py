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
from collections.abc import AsyncIterator, Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar
from urllib.parse import quote, urljoin, urlsplit

import httpx
import pydantic

from analytics_nb._version import __version__
from analytics_nb.client._config import ClientConfig, SecretKey, live_secrets
from analytics_nb.client._lane import Lane, LaneDeadline, LaneTooLarge, header_block, lane_applies
from analytics_nb.client._pacing import AdaptiveLimit
from analytics_nb.client._transport import (
    make_transport,
    proxy_in_environment,
    refused,
    resolve,
    transport_errors,
)
from analytics_nb.errors import (
    AuthenticationError,
    NetworkError,
    NotFoundError,
    PermissionDeniedError,
    PostHogError,
    RedirectError,
    ResponseFormatError,
    error_from_response,
    parse_retry_after,
    redact,
)

__all__ = ["Core", "RateLimiter", "decode_json", "encode_json", "loads_json", "parse_model"]

M = TypeVar("M", bound=pydantic.BaseModel)
MAX_REDIRECTS = 5
#: 429 answers one paced request waits out (each pausing the run for its Retry-After) before it fails.
MAX_THROTTLED = 100

log = logging.getLogger("analytics_nb.client")

#: Transient statuses: 429 (any method: the service did not act on it), and for idempotent requests 408
#: (request timeout) and 502/503/504 (the issue's list; a 500 may be a deterministic bug, so not retried).
RETRY_STATUSES = frozenset({408, 429, 502, 503, 504})
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "PATCH", "DELETE"})

#: Headers every request carries (the lane writes them too).
DEFAULT_HEADERS = {"User-Agent": f"analytics-nb/{__version__}", "Accept": "application/json"}
#: Headers a lane request may not set itself (the lane writes them, or they change the framing).
_LANE_RESERVED = frozenset(
    {"host", "user-agent", "accept", "accept-encoding", "content-length", "transfer-encoding", "connection"}
)

# Per-key limits of the real service (posthog-notes §2.5): playlists use the ClickHouse throttles.
DEFAULT_RULES: dict[str, tuple[tuple[int, float], ...]] = {
    "playlists": ((240, 60.0), (1200, 3600.0)),
    "default": ((480, 60.0), (4800, 3600.0)),
}


class _RedactKeys(logging.Filter):
    """Scrub every live key (and anything shaped like a PostHog key) from a record: message, arguments and
    exception text. URLs carry ``token=``; a failed header write quotes the header value."""

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = live_secrets()
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is not ours to fix
            return True
        cleaned = redact(message, secrets)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        if record.exc_info and not record.exc_text:
            import traceback

            record.exc_text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
        if record.exc_text:
            record.exc_text = redact(record.exc_text, secrets)
        if record.stack_info:
            record.stack_info = redact(record.stack_info, secrets)
        return True


_REDACT = _RedactKeys()
#: Logger trees whose records may carry a URL or a header. A filter on a logger does not apply to records of
#: its children (``httpcore.http11`` is not filtered by a filter on ``httpcore``), so every logger of these
#: trees gets the filter, including the children the libraries create at import.
_LOG_ROOTS = ("httpx", "httpcore", "h11", "h2", "hpack", "aiohttp", "httpx_aiohttp", "analytics_nb")
_KNOWN_CHILDREN = (
    "httpcore.connection",
    "httpcore.connection_pool",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "httpcore.socks",
    "aiohttp.client",
    "aiohttp.internal",
    "aiohttp.access",
    "aiohttp.server",
    "aiohttp.web",
    "aiohttp.websocket",
    "analytics_nb.client",
)


def install_log_redaction() -> None:
    """Put the redacting filter on every logger of the HTTP libraries' trees (idempotent; run again when a
    client is created, for loggers made since)."""
    names = set(_LOG_ROOTS) | set(_KNOWN_CHILDREN)
    names |= {n for n in list(logging.root.manager.loggerDict) if n.split(".")[0] in _LOG_ROOTS}
    for name in names:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _RedactKeys) for f in logger.filters):
            logger.addFilter(_REDACT)


install_log_redaction()


class _KeyAuth(httpx.Auth):
    """Adds ``Authorization: Bearer <key>`` as the request is sent, so the key never sits in a header dict or
    a local variable of the client's request code (``pytest -l`` and rich tracebacks print those)."""

    def __init__(self, key: SecretKey) -> None:
        self._key = key

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = self._key.bearer()
        yield request

    def __repr__(self) -> str:
        return f"_KeyAuth({self._key!r})"


class _NoCookies(httpx.Cookies):
    """A cookie jar that keeps nothing (see ``Core._client``)."""

    def extract_cookies(self, response: httpx.Response) -> None:
        return None

    def set_cookie_header(self, request: httpx.Request) -> None:
        return None


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
    """JSON-encode a request body; NaN/NA become null, timestamps ISO 8601, numpy scalars plain numbers.

    A body nested too deeply for Python's encoder raises ``ValueError`` naming the fix (never
    ``RecursionError``); the service would refuse it anyway.
    """
    from analytics_nb.wire.cells import json_default  # numpy and pandas load with the first JSON body

    try:
        try:
            text = json.dumps(body, default=json_default, allow_nan=False, separators=(",", ":"))
        except ValueError:
            text = json.dumps(_finite(body), default=json_default, allow_nan=False, separators=(",", ":"))
    except RecursionError:
        failure = ValueError(
            "the request body is nested too deeply (lists/dicts inside each other hundreds of levels deep) "
            "to be sent; flatten it, or send the deep part as text (json.dumps(value))"
        )
    else:
        return text.encode()
    raise failure


class _ReadStream(httpx.AsyncByteStream):
    """The stream of a response whose body was read by the lane (never iterated: ``_content`` is set)."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        return
        yield b""  # pragma: no cover - makes this an async generator


_READ = _ReadStream()


class _DeadlineExceeded(Exception):
    """Internal: one attempt ran past ``timeout`` (the whole request, its answer included)."""

    def __init__(self, timeout: float) -> None:
        super().__init__(timeout)
        self.timeout = timeout


class _TooLarge(Exception):
    """Internal: an answer's body is over ``max_answer_bytes`` (``partial``: counted while reading)."""

    def __init__(self, size: int, limit: int, status: int, *, partial: bool = False) -> None:
        super().__init__(size)
        self.size, self.limit, self.status, self.partial = size, limit, status, partial


def _size(n: int) -> str:
    """A byte count for a message: ``312.5 MB`` (decimal units), or bytes when small."""
    if n < 1000:
        return f"{n} bytes"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


@dataclass
class _Call:
    """One ``Core.request`` call: where it goes, what it sends, and the tries it has used so far."""

    method: str
    url: str
    target: httpx.URL
    safe_url: str
    body: bytes | str | None
    headers: dict[str, str]
    auth: bool | httpx.Auth
    can_retry: bool
    bucket: str | None
    attempt: int = 0
    redirects: int = 0
    throttled: int = 0


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
        self._pool_size = max(10, config.max_concurrency * 2)
        self._retired: list[httpx.AsyncClient] = []
        self._targets: dict[Any, tuple[httpx.URL, str]] = {}
        self._network_errors: tuple[type[BaseException], ...] = (httpx.TransportError, *transport_errors())
        self._lane: Lane | None = None
        self._lane_ok: bool | None = None
        self.closed = False
        self.retries_done = 0
        #: Called as ``listener(method, path)`` after each successful write (not GET/HEAD/OPTIONS), on the
        #: client's event loop: keep them short (the PlaylistEditor marks its list outdated).
        self.write_listeners: list[Callable[[str, str], None]] = []
        key = config.personal_api_key
        self._auth: _KeyAuth | None = _KeyAuth(key) if key is not None else None
        install_log_redaction()

    def __repr__(self) -> str:
        return f"Core({self.config!r})"

    @staticmethod
    def key_auth(key: SecretKey) -> httpx.Auth:
        """An ``auth=`` for `request` that sends ``key`` as the Bearer (e.g. the secret API key)."""
        return _KeyAuth(key)

    # -- plumbing ---------------------------------------------------------------------------------------
    def _client(self) -> httpx.AsyncClient:
        if self.closed:
            raise RuntimeError("This client is closed; create a new Client to make more requests.")
        if self._http is None:
            n = self._pool_size
            transport = self._transport or make_transport(self.config.http_transport, n)
            self._http = httpx.AsyncClient(
                timeout=httpx.Timeout(self.config.timeout),
                limits=httpx.Limits(max_connections=n, max_keepalive_connections=n),
                headers=DEFAULT_HEADERS,
                transport=transport,
                follow_redirects=False,
            )
            # The API authenticates by key, never by cookie: no cookie is stored or sent (httpx would parse
            # every response's headers into a urllib cookie jar, a tenth of a decide's client CPU).
            self._http._cookies = _NoCookies()
        return self._http

    @property
    def transport_name(self) -> str:
        """``"aiohttp"`` or ``"httpx"`` (the connection layer in use), ``"custom"`` for a given transport."""
        return "custom" if self._transport is not None else resolve(self.config.http_transport)

    @property
    def bulk_transport(self) -> str:
        """What carries paced bulk POSTs without credentials (remote simulation's ``/flags``): ``"lane"``
        (`client._lane`, HTTP/1.1 read by httptools) when it applies, else `transport_name`."""
        return "lane" if self._lane_usable() else self.transport_name

    def _lane_usable(self) -> bool:
        """The lane carries bulk requests unless a transport was given (tests), ``http_transport="httpx"``
        was asked for, or a proxy is configured in the environment (httpx honours it, the lane does not)."""
        if self._lane_ok is None:
            self._lane_ok = (
                self._transport is None
                and self.config.http_transport != "httpx"
                and not proxy_in_environment()
            )
        return self._lane_ok

    @property
    def pool_size(self) -> int:
        """Connections the pool may open (grown by ``pacer`` to a run's concurrency)."""
        return self._pool_size

    def pacer(self, concurrency: int) -> AdaptiveLimit:
        """An adaptive limit for a bulk run of ``concurrency`` requests in flight, with the connection pool
        grown to hold them all (pass it to ``request(pacer=...)``). A pool built smaller is retired, not
        closed: requests still using it finish, and it is closed with the client."""
        limit = AdaptiveLimit(concurrency)
        if concurrency > self._pool_size:
            self._pool_size = int(concurrency)
            if self._http is not None and self._transport is None:
                self._retired.append(self._http)
                self._http = None
        return limit

    @property
    def semaphore(self) -> asyncio.Semaphore:
        """Bounds concurrent page fetches to ``max_concurrency``."""
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.config.max_concurrency)
        return self._semaphore

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        self.closed = True
        if self._lane is not None:
            self._lane.close()
            self._lane = None
        clients, self._retired = self._retired, []
        if self._http is not None:
            clients.append(self._http)
            self._http = None
        for http in clients:
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
        auth: bool | httpx.Auth = True,
        explain: Mapping[int, str] | None = None,
        pacer: AdaptiveLimit | None = None,
    ) -> httpx.Response:
        """Send one request with retries; return the 2xx response or raise a typed ``PostHogError``.

        Retries (up to ``max_retries``, jittered exponential backoff, ``Retry-After`` honoured) happen on 429,
        408, 502/503/504 and network errors for idempotent requests (GET, PUT, PATCH, DELETE, or
        ``idempotent=True``); a 429 or a refused connection is retried for any method because the service did
        not act on it. ``explain`` maps a status to the sentence the raised error should give. Redirects are
        followed only on the same origin (see ``_redirect_target``); every failure, transport ones included,
        is a ``PostHogError`` with no httpx exception chained (those hold the request and its headers).

        ``auth``: True sends the personal key, False nothing, an ``httpx.Auth`` (``Core.key_auth(key)``)
        that key instead (the secret API key for flag definitions). A 304 is returned (not followed) when
        the request sent ``If-None-Match``.

        ``pacer`` (from ``Core.pacer(concurrency)``, for bulk runs): each attempt waits for a place in its
        adaptive window, and a 429 pauses the whole run for ``Retry-After`` and narrows the window instead
        of using up ``max_retries`` (up to ``MAX_THROTTLED`` times for one request): a run slows down to the
        service's rate limit rather than failing rows.
        """
        call = self._call(
            method.upper(),
            path,
            service=service,
            params=params,
            json=json,
            content=content,
            headers=headers,
            idempotent=idempotent,
            auth=auth,
            explain=explain,
        )
        http = self._client()
        while True:
            if call.bucket is not None and self.limiter is not None:
                await self.limiter.acquire(call.bucket)
            response = await self._attempt(http, call, pacer)
            if response is None:  # a network error, waited out: try again
                continue
            status = response.status_code
            log.debug("%s %s -> %d", call.method, call.safe_url, status)
            if 200 <= status < 300 or (status == 304 and "If-None-Match" in call.headers):
                if self.write_listeners and call.method not in ("GET", "HEAD", "OPTIONS"):
                    self._tell_write(call.method, path)
                return response
            if status < 400:  # a redirect (or another non-final answer) is never used as data
                self._follow(call, response)
                continue
            if await self._waited_to_retry(call, response, pacer):
                continue
            raise error_from_response(
                status,
                response.text,
                method=call.method,
                url=call.safe_url,
                retry_after_header=response.headers.get("Retry-After"),
                secrets=self.config.secrets,
                explanation=(explain or {}).get(status) or self._key_kind_hint(status, call),
            )

    def _key_kind_hint(self, status: int, call: _Call) -> str | None:
        """What a 401 means when the personal key sent is a Project Secret API Key (``phs_``): the service
        answers it as it answers a wrong key, which would send the user hunting for a typo."""
        key = self.config.personal_api_key
        if status != 401 or call.auth is not True or key is None or key.prefix != "phs_":
            return None
        return (
            "The key given as personal_api_key is a Project Secret API Key (phs_...), not a personal API key "
            "(phx_...), and this endpoint takes personal keys only. A secret key reads flag definitions: "
            "pass it as secret_api_key= (or POSTHOG_SECRET_API_KEY) and the client uses it for "
            "feature_flags.definitions(). For this call, create a personal API key (PostHog: Settings > "
            "Personal API keys, with the scopes you need) and pass it as personal_api_key=."
        )

    def _call(
        self,
        method: str,
        path: str,
        *,
        service: Literal["app", "ingest"],
        params: Mapping[str, Any] | None,
        json: Any,
        content: bytes | str | None,
        headers: Mapping[str, str] | None,
        idempotent: bool,
        auth: bool | httpx.Auth,
        explain: Mapping[int, str] | None,
    ) -> _Call:
        """What ``request`` sends: the URL (query merged) and its scrubbed text, the body and headers, whether
        it may be retried and its rate-limit bucket; a call that needs the personal key and has none fails
        here, before anything is sent."""
        url = self.url(path, service)
        query = None if params is None else {k: _param(v) for k, v in params.items() if v is not None}
        target, safe_url = self._target(url, query)
        send_headers: dict[str, str] = dict(headers or {})
        if auth is True and self._auth is None:
            raise AuthenticationError(
                f"{method} {safe_url} needs a personal API key: pass personal_api_key='phx_...' to the "
                "Client or set POSTHOG_PERSONAL_API_KEY.",
                method=method,
                url=safe_url,
            )
        body: bytes | str | None = content
        if json is not None:
            body = encode_json(json)
            send_headers.setdefault("Content-Type", "application/json")
        bucket = None
        if self.limiter is not None and service == "app" and auth:
            bucket = "playlists" if "/session_recording_playlists" in url else "default"
        return _Call(
            method=method,
            url=url,
            target=target,
            safe_url=safe_url,
            body=body,
            headers=send_headers,
            auth=auth,
            can_retry=idempotent or method in IDEMPOTENT_METHODS,
            bucket=bucket,
        )

    async def _attempt(
        self, http: httpx.AsyncClient, call: _Call, pacer: AdaptiveLimit | None
    ) -> httpx.Response | None:
        """One attempt: the response, or None after waiting out a network error that may be retried. Any
        other failure, transport ones included, is raised as a ``NetworkError`` with no httpx exception
        chained (those hold the request and its headers)."""
        method, safe_url = call.method, call.safe_url
        failure: PostHogError | None = None
        wait = 0.0
        try:
            return await self._send(http, method, call.target, call.body, call.headers, call.auth, pacer)
        except self._network_errors as exc:
            # aiohttp's errors (a transport may let one through) and asyncio's timeout count as network
            # errors too; `refused` is true only when no connection was made (safe to retry any method).
            if (call.can_retry or refused(exc)) and call.attempt < self.config.max_retries:
                wait = self._backoff(call.attempt)
                log.debug(
                    "%s %s: %s, retry %d in %.2fs",
                    method,
                    safe_url,
                    type(exc).__name__,
                    call.attempt + 1,
                    wait,
                )
                call.attempt += 1
                self.retries_done += 1
            else:
                what = self.scrub(str(exc)) or "no details"
                tries = f" after {call.attempt + 1} attempts" if call.attempt else ""
                failure = NetworkError(
                    f"{method} {safe_url} failed{tries}: could not complete the request "
                    f"({type(exc).__name__}: {what}). Check the host and network and retry.",
                    method=method,
                    url=safe_url,
                )
        except _DeadlineExceeded as exc:
            failure = NetworkError(
                f"{method} {safe_url} did not complete within timeout={exc.timeout:g} s: the server was "
                "still sending (or had not answered) at the deadline, which bounds the whole request, answer "
                "included. It is not retried (a server that slow would hold you again). Check the host, or "
                "pass a larger timeout= to the Client if the answer is big.",
                method=method,
                url=safe_url,
            )
        except _TooLarge as exc:
            failure = ResponseFormatError(
                f"{method} {safe_url} answered HTTP {exc.status} with a body of "
                f"{'more than ' if exc.partial else ''}{_size(exc.size)}, over the client's cap of "
                f"max_answer_bytes={exc.limit} ({_size(exc.limit)}); it was not read further, so memory "
                "stays bounded. Narrow the request (filters, page_size, fewer flags), or pass a larger "
                "max_answer_bytes= to the Client if you expect answers that big.",
                status=exc.status,
                method=method,
                url=safe_url,
            )
        except httpx.DecodingError as exc:
            failure = NetworkError(
                f"{method} {safe_url} answered with a body that could not be decoded "
                f"({self.scrub(str(exc)) or 'no details'}): the server or a proxy on the way sent a "
                "broken compressed answer. Check the host (a PostHog API, not a proxy page) and retry.",
                method=method,
                url=safe_url,
            )
        except (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError, ValueError) as exc:
            # Anything else the transport raises (too many redirects, a malformed URL or header): the
            # package's error, without the httpx exception and its request (it holds the headers).
            failure = NetworkError(
                f"{method} {safe_url} could not be sent ({type(exc).__name__}: "
                f"{self.scrub(str(exc)) or 'no details'}). Check the host and the arguments.",
                method=method,
                url=safe_url,
            )
        if failure is not None:
            # Raised outside the except block: no chained httpx exception (it holds the headers).
            raise failure
        await asyncio.sleep(wait)
        return None

    def _follow(self, call: _Call, response: httpx.Response) -> None:
        """Point ``call`` at a redirect's target (same origin only), or raise the ``RedirectError``."""
        moved = self._redirect_target(call.method, call.url, response, call.redirects)
        if isinstance(moved, PostHogError):
            raise moved
        call.url = moved
        call.target, call.safe_url = self._target(moved, None)
        call.redirects += 1

    async def _waited_to_retry(
        self, call: _Call, response: httpx.Response, pacer: AdaptiveLimit | None
    ) -> bool:
        """Whether an error answer is retried (after waiting here, or pausing ``pacer``'s run): a 429 in a
        paced run up to ``MAX_THROTTLED`` times, a transient status (``RETRY_STATUSES``; 429 for any method)
        up to ``max_retries`` times, and only when a ``Retry-After`` asks no more than ``max_retry_wait``."""
        status = response.status_code
        max_wait = self.config.max_retry_wait
        retry_after = parse_retry_after(response.headers.get("Retry-After"))
        if retry_after is not None and retry_after > max_wait:
            return False
        if status == 429 and pacer is not None and call.throttled < MAX_THROTTLED:
            call.throttled += 1
            self.retries_done += 1
            pause = pacer.throttle(retry_after)
            log.debug("%s %s -> 429, paced: paused %.2fs, %r", call.method, call.safe_url, pause, pacer)
            return True  # the next acquire waits out the pause
        retryable = status in RETRY_STATUSES and (call.can_retry or status == 429)
        if not retryable or call.attempt >= self.config.max_retries:
            return False
        wait = self._backoff(call.attempt)
        if retry_after is not None:
            wait = max(wait, retry_after + random.random() * 0.1)
        call.attempt += 1
        self.retries_done += 1
        log.debug("%s %s -> %d, retry %d in %.2fs", call.method, call.safe_url, status, call.attempt, wait)
        await asyncio.sleep(wait)
        return True

    def _tell_write(self, method: str, path: str) -> None:
        """Tell the write listeners about a successful write; a failing listener never fails the request."""
        for listener in list(self.write_listeners):
            try:
                listener(method.upper(), path)
            except Exception:
                log.debug("a write listener failed", exc_info=True)

    def _target(self, url: str, query: Mapping[str, Any] | None) -> tuple[httpx.URL, str]:
        """The parsed URL (``query`` merged) and its scrubbed text, cached for URLs sent again and again (a
        simulation posts to one decide URL thousands of times; httpx would parse it anew each time)."""
        key: Any = (url, tuple(query.items()) if query else None)
        try:
            hit = self._targets.get(key)
        except TypeError:  # a list-valued parameter: not cached
            hit, key = None, None
        if hit is None:
            parsed = httpx.URL(url)
            if query:
                parsed = parsed.copy_merge_params(query)
            hit = (parsed, self.scrub(url))
            if key is not None:
                if len(self._targets) >= 256:  # one-off URLs (pages, ids) filled it: start again
                    self._targets.clear()
                self._targets[key] = hit
        return hit

    async def _send(
        self,
        http: httpx.AsyncClient,
        method: str,
        url: httpx.URL,
        body: bytes | str | None,
        headers: Mapping[str, str],
        auth: bool | httpx.Auth,
        pacer: AdaptiveLimit | None,
    ) -> httpx.Response:
        """One attempt on the wire (inside a place of ``pacer`` when given)."""
        if pacer is not None and auth is False and method == "POST" and isinstance(body, bytes):
            extra = self._lane_headers(url, headers)
            if extra is not None:
                return await self._paced_lane(http, url, body, headers, extra, pacer)
        key_auth = auth if isinstance(auth, httpx.Auth) else self._auth if auth else None
        request = http.build_request(method, url, content=body, headers=headers)
        if pacer is None:
            return await self._exchange(http, request, key_auth)
        started = await pacer.acquire()
        response: httpx.Response | None = None
        try:
            response = await self._exchange(http, request, key_auth)
        finally:
            pacer.release(ok=response is not None and response.status_code != 429, started=started)
        return response

    def _lane_headers(self, url: httpx.URL, headers: Mapping[str, str]) -> bytes | None:
        """The request's own header lines for the lane, or None when the lane does not carry it."""
        if not self._lane_usable() or not lane_applies(url):
            return None
        if any(name.lower() in _LANE_RESERVED for name in headers):
            return None
        return header_block(headers)

    async def _paced_lane(
        self,
        http: httpx.AsyncClient,
        url: httpx.URL,
        body: bytes,
        headers: Mapping[str, str],
        extra: bytes,
        pacer: AdaptiveLimit,
    ) -> httpx.Response:
        """One paced POST through the lane, answered as an ``httpx.Response`` (its ``request`` is built only
        for an answer that is not 2xx, which the error and redirect paths read)."""
        if self._lane is None:
            self._lane = Lane(DEFAULT_HEADERS, max_idle=max(self._pool_size, 10))
        self._lane.max_idle = max(self._pool_size, 10)
        limit, timeout = self.config.max_answer_bytes, self.config.timeout
        started = await pacer.acquire()
        status = 0
        try:
            status, raw, content = await self._lane.post(url, extra, body, limit=limit, timeout=timeout)
        except LaneTooLarge as exc:
            raise _TooLarge(exc.size, limit, exc.status, partial=exc.partial) from None
        except LaneDeadline as exc:
            raise _DeadlineExceeded(exc.timeout) from None
        finally:
            pacer.release(ok=status not in (0, 429), started=started)
        # The body is read: the response is built around it as `_read_capped` leaves httpx's (an httpx
        # Response built with content= decodes and copies it again, about 0.1 ms a row).
        response = httpx.Response(status, headers=raw, stream=_READ)
        response._content = content
        response.is_stream_consumed = response.is_closed = True
        if not 200 <= status < 300:
            response.request = http.build_request("POST", url, content=body, headers=headers)
        return response

    async def _exchange(
        self, http: httpx.AsyncClient, request: httpx.Request, key_auth: httpx.Auth | None
    ) -> httpx.Response:
        """Send ``request`` and read its whole answer within ``timeout`` seconds, on every transport.

        httpx's own timeout bounds each read, not the whole answer: a server sending a byte every half
        second would hold the request for as long as it likes. At the deadline, a request still waiting for
        the answer's head is a timeout like httpx's (``httpx.ReadTimeout``, retried as any); one whose body
        was still arriving raises ``_DeadlineExceeded`` (not retried: the server answers, too slowly)."""
        timeout = self.config.timeout
        response: httpx.Response | None = None
        try:
            async with asyncio.timeout(timeout) as scope:
                response = await http.send(request, auth=key_auth, stream=True)
                return await self._read_capped(response)
        except TimeoutError:
            if not scope.expired():
                raise
            if response is None:
                raise httpx.ReadTimeout(
                    f"no answer within the timeout ({timeout:g} s)", request=request
                ) from None
            raise _DeadlineExceeded(timeout) from None

    async def _read_capped(self, response: httpx.Response) -> httpx.Response:
        """``response`` with its body read, refusing a body over ``max_answer_bytes`` (declared by
        ``Content-Length`` or counted while reading, after decompression) with ``_TooLarge`` before it is
        held in memory. The response is closed either way."""
        limit = self.config.max_answer_bytes
        try:
            declared = response.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > limit:
                raise _TooLarge(int(declared), limit, response.status_code)
            chunks: list[bytes] = []
            total = 0
            async for chunk in response.aiter_bytes():
                total += len(chunk)
                if total > limit:
                    raise _TooLarge(total, limit, response.status_code, partial=True)
                chunks.append(chunk)
            # What httpx's own aread() does, once the size is known to be within the cap.
            response._content = b"".join(chunks)
        finally:
            await response.aclose()
        return response

    def _redirect_target(
        self, method: str, url: str, response: httpx.Response, redirects: int
    ) -> str | PostHogError:
        """Where to follow a 3xx, or the error to raise. Only redirects on the same origin (scheme, host,
        port) are followed, at most ``MAX_REDIRECTS`` times, and a non-GET only on 307/308 (which keep the
        method and body): the Authorization header never goes to another host."""
        status = response.status_code
        location = response.headers.get("Location")
        safe_url = self.scrub(url)
        kw: dict[str, Any] = {"status": status, "method": method, "url": safe_url}
        if not location:
            return RedirectError(
                f"{method} {safe_url} answered HTTP {status} without a usable answer or Location; a PostHog "
                "API answers 2xx or an error. Check that host= points at the PostHog API itself (not a "
                "proxy, a login page or a cache).",
                **kw,
            )
        target: str = urljoin(str(response.request.url), str(location))
        safe_target = self.scrub(target)
        here, there = urlsplit(url), urlsplit(target)
        if (there.scheme, there.netloc) != (here.scheme, here.netloc):
            base = f"{there.scheme}://{there.netloc}"
            return RedirectError(
                f"{method} {safe_url} was redirected (HTTP {status}) to another host, {self.scrub(base)}; "
                "the client does not follow redirects to another host, so your key was not sent there. "
                f"If that is the right server, create the Client with host={self.scrub(base)!r}.",
                location=safe_target,
                **kw,
            )
        if method not in ("GET", "HEAD") and status not in (307, 308):
            return RedirectError(
                f"{method} {safe_url} was redirected (HTTP {status}) to {safe_target}; a {method} is not "
                "re-sent to a new address (an HTTP redirect would turn it into a GET and drop the body). "
                "Check the path and the host.",
                location=safe_target,
                **kw,
            )
        if redirects >= MAX_REDIRECTS:
            return RedirectError(
                f"{method} {safe_url} was redirected more than {MAX_REDIRECTS} times (last to "
                f"{safe_target}); check the host.",
                location=safe_target,
                **kw,
            )
        return target

    async def get_json(
        self,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        decoder: Callable[[bytes], Any] | None = None,
        **kw: Any,
    ) -> Any:
        """GET ``path`` and return the decoded JSON body (an empty or ``null`` answer is an error: every
        GET of the API answers with data).

        ``decoder`` reads the body first when given (a listing's compact rows, ``frames.RowFormat.decode``);
        when it answers None the body is decoded as JSON, as without it."""
        response = await self.request("GET", path, params=params, **kw)
        if decoder is not None and response.content:
            fast = decoder(response.content)
            if fast is not None:
                return fast
        body = _decode(response, self.scrub(str(response.url)))
        if body is None:
            safe_url = self.scrub(str(response.url))
            raise ResponseFormatError(
                f"GET {safe_url} answered HTTP {response.status_code} with "
                f"{'null' if response.content else 'an empty body'} where the API sends data; check that "
                "host= points at the PostHog API itself (not a proxy or a placeholder page) and retry.",
                status=response.status_code,
                method="GET",
                url=safe_url,
            )
        return body

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


def parse_model(model: type[M], body: Any) -> M:
    """``model.model_validate(body)`` with a typed error: data that does not fit the model means the host
    is not (this version of) the PostHog API, and pydantic's own error is not the package's."""
    try:
        return model.model_validate(body)
    except pydantic.ValidationError as exc:
        errors = exc.errors()
        where = ".".join(str(p) for p in errors[0]["loc"]) if errors else ""
        msg = errors[0]["msg"] if errors else "invalid"
        shape = type(body).__name__ if not isinstance(body, dict) else "an object"
        failure = ResponseFormatError(
            f"The service answered with {shape} that is not a {model.__name__} ({where or 'the answer'}: "
            f"{msg}); check that host= points at the PostHog API (not a proxy or another service) and that "
            "it is a current PostHog version.",
            detail=f"{where or 'the answer'}: {msg}",
        )
    raise failure


def _orjson_loads() -> Any:
    try:
        import orjson
    except ImportError:
        return None
    return orjson.loads


_ORJSON = _orjson_loads()


#: Digits as b"0", everything else as b" ": 19 digits in a row may be an integer beyond 64 bits, which orjson
#: would read as a float (a translate and a find scan a page in a tenth of the time a regex takes).
_DIGITS = bytes(48 if 48 <= i <= 57 else 32 for i in range(256))
_LONG_RUN = b"0" * 19


def loads_json(content: bytes) -> Any:
    """``json.loads`` of a response body, through orjson (the ``fast`` extra) when installed: a third of the
    CPU for large listings. What orjson refuses (NaN, nesting past 1024 levels, invalid UTF-8) or would
    read differently (an integer beyond 64 bits becomes a float there) goes to the standard library, whose
    answer (or error) stands."""
    if _ORJSON is not None and _LONG_RUN not in content.translate(_DIGITS):
        try:
            return _ORJSON(content)
        except ValueError:
            pass
    return json.loads(content)


def decode_json(response: httpx.Response, safe_url: str) -> Any:
    """Public name of the JSON decoding used by ``get_json`` (for endpoints read with ``request``)."""
    return _decode(response, safe_url)


def _decode(response: httpx.Response, safe_url: str) -> Any:
    """Decode a JSON body (None when empty), with a clear error when the service sent something else."""
    if not response.content:
        return None
    try:
        return loads_json(response.content)
    except RecursionError:
        raise ResponseFormatError(
            f"{response.request.method} {safe_url} answered HTTP {response.status_code} with JSON nested too "
            "deeply to read; check that host= points at the PostHog API itself.",
            status=response.status_code,
            method=response.request.method,
            url=safe_url,
        ) from None
    except ValueError:
        kind = response.headers.get("Content-Type", "").split(";")[0].strip() or "no content type"
        raise ResponseFormatError(
            f"{response.request.method} {safe_url} answered HTTP {response.status_code} with a body that is "
            f"not JSON ({kind}); check that host= points at the PostHog API itself (not a proxy, a login "
            "page or a captive portal).",
            status=response.status_code,
            method=response.request.method,
            url=safe_url,
        ) from None

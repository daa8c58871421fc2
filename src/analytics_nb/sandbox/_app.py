"""The sandbox ASGI application: the endpoint table of every resource turned into Starlette routes, error
handling that answers every bad input with the real error body, fault injection, the request log, and the
one place where a trailing slash is dropped from the request path.

Building a sandbox: :func:`build_context` opens and seeds the store (`_seeding`), :class:`SandboxApp` serves
it; :func:`create_app` does both.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from datetime import UTC, datetime
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from . import _admin, _auth, _uvicorn
from ._context import PROFILES, SandboxContext
from ._endpoints import Endpoint, build_routes, fast_routes, openapi_document
from ._errors import APIError, error_body, method_not_allowed, not_found, server_error, throttled
from ._faults import Faults
from ._ratelimit import RateLimiter, parse_rates
from ._requestlog import LOG_BODY_LIMIT, LoggedRequest, RequestLog, redact
from ._resources import RESOURCES
from ._seeding import open_store

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

__all__ = [
    "LoggedRequest",
    "RequestLog",
    "SandboxApp",
    "all_endpoints",
    "build_context",
    "create_app",
    "redact",
]

_DELAY_POLL = 0.05  # seconds between checks, during a delay fault, for a gone client or a stopping sandbox
#: Host names every sandbox answers to (the bound name is added by `launch`).
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def _host_name(scope: Scope) -> str | None:
    """The name in the request's Host header without its port (lower case), or None when there is none."""
    for name, value in scope.get("headers", ()):
        if name == b"host":
            text = value.decode("latin-1").strip().lower()
            if text.startswith("["):  # [::1]:8000
                return text[1 : text.find("]")] if "]" in text else text
            return text.rsplit(":", 1)[0] if text.count(":") == 1 else text
    return None


def _bad_host(host: str) -> Response:
    """400 for a Host the sandbox does not serve: a page on another site that resolves its own name to
    127.0.0.1 (DNS rebinding) must not reach the sandbox's API with the browser's help."""
    detail = (
        f"Invalid Host header {host[:100]!r}: the sandbox answers only to 127.0.0.1, localhost and the name "
        "it was started on (protection against DNS rebinding); add a name with sb.app.allowed_hosts.add(...)"
    )
    return JSONResponse(error_body("validation_error", "invalid_host", detail), status_code=400)


async def _schema(request: Request) -> Response:
    """GET /api/schema/: the OpenAPI document, built from the same table as the routes."""
    return JSONResponse(openapi_document(all_endpoints()))


_SCHEMA_ENDPOINT = Endpoint(
    "GET", "/api/schema/", _schema, "schema", "This OpenAPI document", auth="none", documented=False
)


def all_endpoints() -> list[Endpoint]:
    """The endpoint table: every resource's rows (in route order), the schema and the admin endpoints."""
    return [*(ep for module in RESOURCES for ep in module.ENDPOINTS), _SCHEMA_ENDPOINT, *_admin.ENDPOINTS]


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, APIError)
    return exc.response()


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        allow = (exc.headers or {}).get("Allow")
        return method_not_allowed(request.method, allow).response()
    if exc.status_code == 404:
        return not_found().response()
    return JSONResponse(
        error_body("invalid_request", "error", str(exc.detail)),
        status_code=exc.status_code,
        headers=exc.headers,
    )


async def _unhandled(request: Request, exc: Exception) -> Response:
    return server_error().response()


def build_context(
    *,
    db: str | None = None,
    seed: str = "demo",
    profile: str = "spec",
    rate_limits: dict[str, Any] | bool | None = None,
    geoip: bool = True,
    fault_seed: int = 0,
    admin: bool = False,
    rotate_key: bool = False,
) -> SandboxContext:
    """Open the store, create every schema, seed it (once per database), get the owner's key (the stored
    one, or a new one with `rotate_key`) and return the sandbox context.

    `rate_limits`: None -> on in the cloud profile only; False -> off; True -> the real rates; a dict such
    as `{"default": 480, "playlists": 240}` (requests per minute) -> on with those rates.
    """
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
    if rate_limits is None:
        rate_limits = profile == "cloud"
    limiter = None
    if rate_limits is not False:
        limiter = RateLimiter(parse_rates(rate_limits if isinstance(rate_limits, dict) else None))
    opened = open_store(db, seed=seed, profile=profile)
    core = opened.core
    try:
        key = _auth.owner_key(opened.store, core.owner_user_id, rotate=rotate_key)
    except BaseException:
        opened.store.close()
        raise
    return SandboxContext(
        store=opened.store,
        profile=profile,
        project_id=core.project_id,
        organization_id=core.organization_id,
        project_api_key=core.project_api_key,
        faults=Faults(seed=fault_seed),
        owner_user_id=core.owner_user_id,
        limiter=limiter,
        geoip=geoip,
        admin=admin,
        owner_key_hash=_auth.hash_key(key),
        owner_key=key,
    )


def _strip_slash(scope: Scope) -> Scope:
    """The request scope with the trailing slash dropped from the path (the one place it is handled: every
    route is registered without it, so `/x` and `/x/` are the same endpoint); the path the client sent is
    kept as ``sandbox.original_path`` for the `next` / `previous` links."""
    path: str = scope["path"]
    inner = dict(scope)
    inner["sandbox.original_path"] = path
    if path != "/" and path.endswith("/"):
        inner["path"] = path.rstrip("/") or "/"
        raw = scope.get("raw_path")
        if isinstance(raw, bytes | bytearray):
            inner["raw_path"] = bytes(raw).split(b"?", 1)[0].rstrip(b"/") or b"/"
    return inner


class SandboxApp:
    """The ASGI callable: fault layer and request log around the Starlette app (`.starlette`)."""

    def __init__(self, ctx: SandboxContext) -> None:
        self.ctx = ctx
        self.log = RequestLog()
        #: Set by `Sandbox.stop()`: requests held by a delay fault are then cut instead of waiting it out.
        self.closing = False
        endpoints = all_endpoints()
        self.starlette = Starlette(
            routes=list(build_routes(endpoints)),
            exception_handlers={APIError: _api_error, HTTPException: _http_error, Exception: _unhandled},
        )
        self.starlette.state.sandbox = ctx
        #: The hot endpoints (POST decide/flags), called directly: no routing walk, no middleware stack.
        self._fast = fast_routes(endpoints)
        #: Host names served (Host header without the port); any other gets 400 (DNS rebinding).
        self.allowed_hosts: set[str] = set(LOCAL_HOSTS)

    @property
    def admin(self) -> bool:
        """Whether the `/_sandbox/` admin endpoints are served."""
        return self.ctx.admin

    async def _direct(
        self,
        endpoint: Callable[[Request], Awaitable[Response]],
        scope: Scope,
        receive: Receive,
        send: Send,
        raw_send: Send,
    ) -> None:
        """Serve one request with ``endpoint`` as its Starlette route would, answering `APIError` and
        `HTTPException` with the same bodies; anything else propagates to the caller's 500 handling."""
        scope["app"] = self.starlette
        request = Request(scope, receive, send)
        try:
            response = await endpoint(request)
        except APIError as exc:
            response = exc.response()
        except HTTPException as exc:
            response = await _http_error(request, exc)
        await _uvicorn.send_corked(response, scope, receive, send, raw_send)

    async def _delay_abandoned(self, delay: float, send: Send) -> bool:
        """Wait out a delay fault; True as soon as the client leaves or the sandbox starts stopping (so an
        abandoned request neither holds the server's shutdown nor runs against a closing store)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + delay
        while True:
            if self.closing or _uvicorn.client_gone(send):
                return True
            left = deadline - loop.time()
            if left <= 0:
                return False
            await asyncio.sleep(min(left, _DELAY_POLL))

    def _trickling(self, inner: Send, raw_send: Send, interval: float) -> Send:
        """``inner`` with each body message split into single bytes sent ``interval`` seconds apart (the
        ``trickle`` fault); a client that leaves, or a stopping sandbox, ends it (the connection is cut)."""

        async def trickle(message: Message) -> None:
            if message["type"] != "http.response.body":
                await inner(message)
                return
            body: bytes = message.get("body", b"")
            more = bool(message.get("more_body", False))
            for i in range(len(body)):
                if self.closing or _uvicorn.client_gone(raw_send):
                    if not _uvicorn.client_gone(raw_send):
                        await _uvicorn.cut(raw_send)
                    raise _ConnectionCut
                await inner({"type": "http.response.body", "body": body[i : i + 1], "more_body": True})
                await asyncio.sleep(interval)
            await inner({"type": "http.response.body", "body": b"", "more_body": more})

        return trickle

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.starlette(scope, receive, send)  # lifespan
            return
        method: str = scope["method"]
        raw_path: str = scope["path"]
        query = scope.get("query_string", b"").decode("latin-1")
        chunks: list[bytes] = []
        size = 0
        status: list[int | None] = [None]
        logged = [False]

        def record() -> None:
            if logged[0]:
                return
            logged[0] = True
            self.log.append_raw(method, raw_path, query, status[0], b"".join(chunks), datetime.now(UTC))

        async def logging_receive() -> Message:
            nonlocal size
            message = await receive()
            if message["type"] == "http.request":
                body = message.get("body", b"")
                if size < LOG_BODY_LIMIT:
                    chunks.append(body[: LOG_BODY_LIMIT - size])
                size += len(body)
            return message

        async def logging_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
                record()  # before any byte leaves, so a client reading the log right after sees it
            await send(message)

        try:
            host = _host_name(scope)
            if host is not None and host not in self.allowed_hosts:
                await _bad_host(host)(scope, logging_receive, logging_send)
                return
            reply: Send = logging_send
            if not raw_path.startswith("/_sandbox/"):
                for fault in self.ctx.faults.pick(method, raw_path):
                    if fault.trickle:
                        reply = self._trickling(reply, send, fault.trickle)
                    if fault.delay and await self._delay_abandoned(fault.delay, send):
                        # the client gave up (or the sandbox is stopping): drop the request quietly
                        if not _uvicorn.client_gone(send):
                            await _uvicorn.cut(send)
                        raise _ConnectionCut
                    if fault.reset:
                        await _uvicorn.cut(send)
                        raise _ConnectionCut
                    if fault.status is not None:
                        response = _fault_response(fault.status, fault.retry_after)
                        await response(scope, logging_receive, reply)
                        return
            inner = _strip_slash(scope)
            fast = self._fast.get(inner["path"]) if method == "POST" else None
            if fast is not None:
                await self._direct(fast, inner, logging_receive, reply, send)
                return
            await self.starlette(inner, logging_receive, reply)
        except _ConnectionCut:
            return
        except Exception:
            # Starlette re-raises after sending its 500 body; answer only if nothing was sent yet and the
            # client is still there (a request abandoned by its client ends quietly: ClientDisconnect)
            if status[0] is None and not _uvicorn.client_gone(send):
                await server_error().response()(scope, logging_receive, logging_send)
        finally:
            record()


class _ConnectionCut(Exception):
    """Internal: the fault layer reset the connection; nothing more is sent."""


def _fault_response(status: int, retry_after: float | None) -> Response:
    if status == 429:
        return throttled(retry_after if retry_after is not None else 1).response()
    headers = {"Retry-After": str(int(retry_after))} if retry_after is not None else None
    if status == 500:
        return server_error().response()
    if status == 408:
        body = error_body("invalid_request", "request_timeout", "Request Timeout")
        return JSONResponse(body, status_code=408, headers=headers)
    text = {502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout"}.get(status, "Error")
    return JSONResponse(error_body("server_error", "error", text), status_code=status, headers=headers)


def create_app(
    *,
    db: str | None = None,
    seed: str = "demo",
    profile: str = "spec",
    rate_limits: dict[str, Any] | bool | None = None,
    geoip: bool = True,
    admin: bool = False,
    fault_seed: int = 0,
    rotate_key: bool = False,
) -> SandboxApp:
    """A ready sandbox ASGI app (store opened and seeded), to run under any ASGI server.

    Args:
        db: A SQLite file. None: in memory.
        seed: ``"demo"`` or ``"empty"``.
        profile: ``"spec"`` or ``"cloud"``.
        rate_limits: True/False, or ``{"playlists": per_minute, ...}``. None: the profile's.
        geoip: Add ``$geoip_*`` properties from an ``ip``.
        admin: Serve the fault endpoint.
        fault_seed: The seed of the fault draws.
        rotate_key: Replace the owner key stored in ``db``.

    Returns:
        The ASGI app.
    """
    ctx = build_context(
        db=db,
        seed=seed,
        profile=profile,
        rate_limits=rate_limits,
        geoip=geoip,
        fault_seed=fault_seed,
        admin=admin,
        rotate_key=rotate_key,
    )
    return SandboxApp(ctx)

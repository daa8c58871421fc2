"""The sandbox ASGI application: routing (trailing slash optional), error handling that answers every bad
input with the real error body, fault injection, and the request log.

Plug-in modules (written separately: `_capture`, `_decide`, `_feature_flags`) are mounted when present.
Each exposes ``routes() -> list[starlette.routing.BaseRoute]`` and optionally ``SCHEMA: str`` (SQL run at
start-up) and ``seed(store, ctx)`` (called by the demo seed; `_flag_seed` provides only ``seed``). Route
paths may be written with or without a trailing slash: both forms are served.
"""

from __future__ import annotations

import asyncio
import importlib
import re
import socket
import struct
import threading
from collections import deque
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from datetime import UTC, datetime
from types import ModuleType
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from . import _openapi, _playlists, _projects, _seed, _transformations
from ._context import PROFILES, SandboxContext
from ._errors import APIError, error_body, method_not_allowed, not_found, server_error, throttled
from ._faults import Faults
from ._http import parse_json_body, read_body, require_object
from ._ratelimit import RateLimiter, parse_rates
from ._store import Store

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

#: Modules of the flags/capture part, mounted when importable.
PLUGIN_MODULES = ("_capture", "_decide", "_feature_flags")
#: Module whose `seed(store, ctx)` the demo seed also runs.
SEED_MODULES = ("_flag_seed",)

_LOG_BODY_LIMIT = 65_536
_DELAY_POLL = 0.05  # seconds between checks, during a delay fault, for a gone client or a stopping sandbox
_SECRET_RE = re.compile(r"(phx_|pha_|phs_)[A-Za-z0-9_\-]+")
_SECRET_FIELDS_RE = re.compile(r'("(?:personal_api_key|api_key|token|secret_api_key)"\s*:\s*)"[^"]*"')
_SECRET_QUERY_RE = re.compile(r"((?:^|&)(?:personal_api_key|api_key|token)=)[^&]*")


def _import_plugin(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(f"{__package__}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"{__package__}.{name}":
            return None
        raise


def plugin_modules() -> list[ModuleType]:
    """The flags/capture modules that exist in this installation."""
    return [m for m in (_import_plugin(n) for n in PLUGIN_MODULES) if m is not None]


def redact(text: str) -> str:
    """Replace personal/project keys and secret fields in logged text."""
    text = _SECRET_RE.sub(lambda m: m.group(1) + "***", text)
    return _SECRET_FIELDS_RE.sub(lambda m: m.group(1) + '"***"', text)


@dataclass(frozen=True)
class LoggedRequest:
    """One entry of the request log (no headers, secrets redacted)."""

    method: str
    path: str
    query: str
    status: int | None
    body: str
    at: datetime


class RequestLog:
    """The in-memory request log behind `Sandbox.requests()` (the newest `maxlen` requests).

    The hot path only appends the raw fields; the secrets are redacted when an entry is first read (once per
    entry), so the decide/flags path pays no regex per request and nothing unredacted ever leaves the log."""

    def __init__(self, maxlen: int = 20_000) -> None:
        self._entries: deque[LoggedRequest | _RawEntry] = deque(maxlen=maxlen)
        self._lock = threading.Lock()

    def append(self, entry: LoggedRequest) -> None:
        """Record a finished request."""
        with self._lock:
            self._entries.append(entry)

    def append_raw(
        self, method: str, path: str, query: str, status: int | None, body: bytes, at: datetime
    ) -> None:
        """Record a finished request whose query and body are still to be redacted."""
        with self._lock:
            self._entries.append((method, path, query, status, body, at))

    def entries(self) -> list[LoggedRequest]:
        """A snapshot of the log, oldest first."""
        with self._lock:
            raw = list(self._entries)  # appends wait for the lock, so nothing is lost below
            out: list[LoggedRequest] = []
            changed = False
            for item in raw:
                if isinstance(item, tuple):
                    item = _redacted(*item)
                    changed = True
                out.append(item)
            if changed:  # keep the redacted entries: each is redacted once
                self._entries.clear()
                self._entries.extend(out)
            return out

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()


_RawEntry = tuple[str, str, str, "int | None", bytes, datetime]


def _redacted(
    method: str, path: str, query: str, status: int | None, body: bytes, at: datetime
) -> LoggedRequest:
    return LoggedRequest(
        method=method,
        path=path,
        query=_SECRET_QUERY_RE.sub(r"\1***", redact(query)),
        status=status,
        body=redact(body.decode("utf-8", errors="replace")),
        at=at,
    )


def _normalise(routes: list[BaseRoute]) -> list[BaseRoute]:
    """Routes rewritten without trailing slash (the app strips it from every request path)."""
    out: list[BaseRoute] = []
    for r in routes:
        if isinstance(r, Route) and r.path != "/" and r.path.endswith("/"):
            out.append(
                Route(r.path.rstrip("/"), r.endpoint, methods=list(r.methods or []) or None, name=r.name)
            )
        else:
            out.append(r)
    return out


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, APIError)
    return exc.response()


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        return method_not_allowed(request.method).response()
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
) -> SandboxContext:
    """Open the store, create every schema, seed it (once per database) and return the sandbox context.

    `rate_limits`: None -> on in the cloud profile only; False -> off; True -> the real rates; a dict such
    as `{"default": 480, "playlists": 240}` (requests per minute) -> on with those rates.
    """
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
    if seed not in ("demo", "empty"):
        raise ValueError(f"seed must be 'demo' or 'empty', got {seed!r}")
    store = Store(db)
    modules = plugin_modules()
    for module in (_projects, _playlists, _transformations, *modules):
        schema = getattr(module, "SCHEMA", None)
        if schema:
            store.executescript(schema)
    if rate_limits is None:
        rate_limits = profile == "cloud"
    limiter = None
    if rate_limits is not False:
        limiter = RateLimiter(parse_rates(rate_limits if isinstance(rate_limits, dict) else None))
    core = _seed.seed_core(store, profile=profile)
    ctx = SandboxContext(
        store=store,
        profile=profile,
        project_id=core.project_id,
        organization_id=core.organization_id,
        project_api_key=core.project_api_key,
        faults=Faults(seed=fault_seed),
        limiter=limiter,
        geoip=geoip,
    )
    ctx.extra["owner_user_id"] = core.owner_user_id
    if seed == "demo" and core.fresh:
        _seed.seed_demo(store, ctx)
        for module in [*modules, *(m for m in map(_import_plugin, SEED_MODULES) if m is not None)]:
            seeder = getattr(module, "seed", None)
            if callable(seeder):
                seeder(store, ctx)
    return ctx


class SandboxApp:
    """The ASGI callable: fault layer and request log around the Starlette app (`.starlette`)."""

    def __init__(self, ctx: SandboxContext, *, admin: bool = False) -> None:
        self.ctx = ctx
        self.admin = admin
        self.log = RequestLog()
        #: Set by `Sandbox.stop()`: requests held by a delay fault are then cut instead of waiting it out.
        self.closing = False
        routes: list[BaseRoute] = [
            # decide/flags/capture first: they are the hot paths, matched before the private API's routes
            *[r for m in plugin_modules() for r in m.routes()],
            *_projects.routes(),
            *_playlists.routes(),
            *_transformations.routes(),
            Route("/api/schema", _openapi.schema_endpoint, methods=["GET"]),
            Route("/_sandbox/faults", self._faults_endpoint, methods=["GET", "POST", "DELETE"]),
            Route("/_sandbox/faults/{fault_id:int}", self._fault_endpoint, methods=["DELETE"]),
            Route("/_sandbox/health", self._health, methods=["GET"]),
        ]
        self.starlette = Starlette(
            routes=_normalise(routes),
            exception_handlers={APIError: _api_error, HTTPException: _http_error, Exception: _unhandled},
        )
        self.starlette.state.sandbox = ctx
        #: The hot endpoints (POST decide/flags), called directly: no routing walk, no middleware stack.
        self._fast: dict[str, Callable[[Request], Awaitable[Response]]] = {}
        for module in plugin_modules():
            self._fast.update(getattr(module, "FAST_ROUTES", {}))

    async def _direct(
        self,
        endpoint: Callable[[Request], Awaitable[Response]],
        scope: Scope,
        receive: Receive,
        send: Send,
        sock: Any,
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
        if sock is None:
            await response(scope, receive, send)
            return
        # uvicorn writes the status line + headers and the body in two sends: corked, they leave as one
        # segment, so the client wakes once per answer instead of twice
        _set_cork(sock, 1)
        try:
            await response(scope, receive, send)
        finally:
            _set_cork(sock, 0)

    @property
    def state(self) -> Any:
        """The Starlette app state (`state.sandbox` is the context)."""
        return self.starlette.state

    async def _health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok", "profile": self.ctx.profile})

    async def _fault_endpoint(self, request: Request) -> Response:
        if not self.admin or not self.ctx.faults.remove(int(request.path_params["fault_id"])):
            raise not_found()
        return Response(status_code=204)

    async def _faults_endpoint(self, request: Request) -> Response:
        if not self.admin:
            raise not_found()
        if request.method == "DELETE":
            self.ctx.faults.clear()
            return Response(status_code=204)
        if request.method == "POST":
            data = require_object(parse_json_body(request, await read_body(request)))
            allowed = {"path", "status", "rate", "retry_after", "delay", "reset", "methods", "kind"}
            unknown = sorted(set(data) - allowed)
            if unknown:
                raise APIError(
                    400, "validation_error", "invalid_input", f"Unknown field {unknown[0]!r}.", unknown[0]
                )
            try:
                fid = self.ctx.faults.add(**data)
            except (TypeError, ValueError) as exc:
                raise APIError(400, "validation_error", "invalid_input", str(exc)) from None
            return JSONResponse({"id": fid}, status_code=201)
        return JSONResponse({"results": self.ctx.faults.list()})

    async def _delay_abandoned(self, delay: float, send: Send) -> bool:
        """Wait out a delay fault; True as soon as the client leaves or the sandbox starts stopping (so an
        abandoned request neither holds the server's shutdown nor runs against a closing store)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + delay
        while True:
            if self.closing or _client_gone(send):
                return True
            left = deadline - loop.time()
            if left <= 0:
                return False
            await asyncio.sleep(min(left, _DELAY_POLL))

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
                if size < _LOG_BODY_LIMIT:
                    chunks.append(body[: _LOG_BODY_LIMIT - size])
                size += len(body)
            return message

        async def logging_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
                record()  # before any byte leaves, so a client reading the log right after sees it
            await send(message)

        try:
            if not raw_path.startswith("/_sandbox/"):
                for fault in self.ctx.faults.pick(method, raw_path):
                    if fault.delay and await self._delay_abandoned(fault.delay, send):
                        # the client gave up (or the sandbox is stopping): drop the request quietly
                        if not _client_gone(send):
                            await _cut(send)
                        raise _ConnectionCut
                    if fault.reset:
                        await _cut(send)
                        raise _ConnectionCut
                    if fault.status is not None:
                        response = _fault_response(fault.status, fault.retry_after)
                        await response(scope, logging_receive, logging_send)
                        return
            inner = dict(scope)
            inner["sandbox.original_path"] = raw_path
            if raw_path != "/" and raw_path.endswith("/"):
                inner["path"] = raw_path.rstrip("/") or "/"
                raw = scope.get("raw_path")
                if isinstance(raw, bytes | bytearray):
                    inner["raw_path"] = bytes(raw).split(b"?", 1)[0].rstrip(b"/") or b"/"
            fast = self._fast.get(inner["path"]) if method == "POST" else None
            if fast is not None:
                await self._direct(fast, inner, logging_receive, logging_send, _raw_socket(send))
                return
            await self.starlette(inner, logging_receive, logging_send)
        except _ConnectionCut:
            return
        except Exception:
            # Starlette re-raises after sending its 500 body; answer only if nothing was sent yet and the
            # client is still there (a request abandoned by its client ends quietly: ClientDisconnect)
            if status[0] is None and not _client_gone(send):
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


def _raw_socket(send: Send) -> Any:
    """The TCP socket under uvicorn's per-request cycle, when there is one and it can be corked."""
    if not hasattr(socket, "TCP_CORK"):
        return None
    transport = getattr(getattr(send, "__self__", None), "transport", None)
    return transport.get_extra_info("socket") if transport is not None else None


def _set_cork(sock: Any, on: int) -> None:
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, on)
    except (OSError, AttributeError):
        pass


def _client_gone(send: Send) -> bool:
    """Whether uvicorn already knows the client of this request went away (False on other servers)."""
    cycle = getattr(send, "__self__", None)
    if cycle is None:
        return False
    if getattr(cycle, "disconnected", False):
        return True
    transport = getattr(cycle, "transport", None)
    return bool(transport is not None and transport.is_closing())


async def _cut(send: Send) -> None:
    """Reset the connection and tell uvicorn at once that this request's client is gone, so it neither
    logs "ASGI callable returned without starting response" nor tries to send its own 500."""
    _reset_connection(send)
    cycle = getattr(send, "__self__", None)
    if cycle is not None and hasattr(cycle, "disconnected"):
        cycle.disconnected = True
    await asyncio.sleep(0)  # let the transport report the loss (connection_lost) before returning


def _reset_connection(send: Send) -> None:
    """Abort the TCP connection with an RST (uvicorn's per-request cycle holds the transport)."""
    cycle = getattr(send, "__self__", None)
    transport = getattr(cycle, "transport", None)
    if transport is None:
        raise ConnectionResetError("fault injection: connection reset")
    sock = transport.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    transport.abort()


def create_app(
    *,
    db: str | None = None,
    seed: str = "demo",
    profile: str = "spec",
    rate_limits: dict[str, Any] | bool | None = None,
    geoip: bool = True,
    admin: bool = False,
    fault_seed: int = 0,
) -> SandboxApp:
    """A ready sandbox ASGI app (store opened and seeded), to run under any ASGI server."""
    ctx = build_context(
        db=db, seed=seed, profile=profile, rate_limits=rate_limits, geoip=geoip, fault_seed=fault_seed
    )
    return SandboxApp(ctx, admin=admin)


__all__ = ["LoggedRequest", "RequestLog", "SandboxApp", "build_context", "create_app", "redact"]

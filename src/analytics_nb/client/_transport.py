"""Which HTTP transport carries httpx's requests: aiohttp's (the ``fast`` extra) or httpx's own.

httpx stays the API the client is written against (``Core.request`` builds ``httpx.Request`` objects and
reads ``httpx.Response``); only the connection layer below it changes. With ``pip install
'analytics-nb[fast]'`` the ``httpx-aiohttp`` package provides an ``httpx.AsyncBaseTransport`` over aiohttp's
connector, whose per-request cost is a fraction of httpcore's async pool (which scans its connections on
every request, costly with many in flight). Without it, or with ``http_transport="httpx"``, httpx's own
transport is used, as before.

``"auto"`` (the default) picks aiohttp when installed, except when a proxy is configured in the
environment (``HTTPS_PROXY`` and friends): httpx honours those and the aiohttp transport does not.
"""

from __future__ import annotations

import asyncio
import ssl
import urllib.request
from typing import Any, Literal

import httpx

__all__ = [
    "TRANSPORTS",
    "TransportChoice",
    "aiohttp_available",
    "make_transport",
    "proxy_in_environment",
    "refused",
    "resolve",
    "ssl_context",
    "transport_errors",
]

TransportChoice = Literal["auto", "aiohttp", "httpx"]
TRANSPORTS: tuple[str, ...] = ("auto", "aiohttp", "httpx")

#: Idle keep-alive connections are closed after this many seconds (httpx's default too).
KEEPALIVE_EXPIRY = 5.0


def aiohttp_available() -> bool:
    """True when the ``fast`` extra (``httpx-aiohttp`` and ``aiohttp``) can be imported."""
    try:
        import aiohttp  # noqa: F401
        import httpx_aiohttp  # noqa: F401
    except ImportError:
        return False
    return True


def proxy_in_environment() -> bool:
    """True when a proxy for http, https or all is configured in the environment (``HTTPS_PROXY``, ...)."""
    proxies = urllib.request.getproxies()
    return any(k in proxies for k in ("http", "https", "all"))


def resolve(choice: str) -> Literal["aiohttp", "httpx"]:
    """The transport ``choice`` means here (``"auto"`` resolved), or a ``ValueError`` naming the fix."""
    if choice not in TRANSPORTS:
        raise ValueError(f"http_transport={choice!r} is not one of {', '.join(map(repr, TRANSPORTS))}.")
    if choice == "httpx":
        return "httpx"
    if choice == "aiohttp":
        if not aiohttp_available():
            raise ValueError(
                "http_transport='aiohttp' needs the 'fast' extra: pip install 'analytics-nb[fast]' "
                "(httpx-aiohttp and aiohttp), or pass http_transport='httpx'."
            )
        return "aiohttp"
    return "aiohttp" if aiohttp_available() and not proxy_in_environment() else "httpx"


_SSL_CONTEXT: list[ssl.SSLContext] = []


def ssl_context() -> ssl.SSLContext:
    """httpx's default verifying SSL context (certifi, ``SSL_CERT_FILE`` honoured), built once per process:
    building one reads the CA bundle (20-60 ms), and a client builds a transport each time its pool grows."""
    if not _SSL_CONTEXT:
        _SSL_CONTEXT.append(httpx.create_ssl_context())
    return _SSL_CONTEXT[0]


def make_transport(choice: str, pool_size: int) -> httpx.AsyncBaseTransport:
    """A transport with room for ``pool_size`` connections (kept alive as long as they are reused)."""
    limits = httpx.Limits(
        max_connections=pool_size, max_keepalive_connections=pool_size, keepalive_expiry=KEEPALIVE_EXPIRY
    )
    if resolve(choice) == "aiohttp":
        from httpx_aiohttp import AiohttpTransport

        # The aiohttp session (and its connector, limited to pool_size connections) is created on the first
        # request, inside the running event loop, as aiohttp requires.
        return AiohttpTransport(verify=ssl_context(), limits=limits)
    return httpx.AsyncHTTPTransport(verify=ssl_context(), limits=limits)


def transport_errors() -> tuple[type[BaseException], ...]:
    """Exceptions a transport may raise that are not httpx's: aiohttp's own, and asyncio's timeout."""
    errors: list[type[BaseException]] = [asyncio.TimeoutError]
    try:
        import aiohttp
    except ImportError:
        pass
    else:
        errors.append(aiohttp.ClientError)
    return tuple(errors)


def refused(exc: BaseException) -> bool:
    """True when the request surely never reached the service (no connection was made), so retrying it
    cannot apply it twice. httpx-aiohttp maps every aiohttp connection error (a server that hung up after
    reading the request included) to ``httpx.ConnectTimeout``, so its cause is checked too."""
    if not isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout):
        return False
    cause: Any = exc.__cause__
    if cause is None:
        return True
    try:
        import aiohttp
    except ImportError:
        return True
    if isinstance(cause, aiohttp.ClientError | asyncio.TimeoutError):
        return isinstance(cause, aiohttp.ClientConnectorError | aiohttp.ConnectionTimeoutError)
    return True

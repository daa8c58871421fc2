"""Start the embedded sandbox and connect a client to it (the one module above both sandbox and client)."""

from __future__ import annotations

import inspect
from typing import Any

from analytics_nb.client import AsyncClient, Client

__all__ = ["connect_sandbox", "connect_sandbox_async"]

_CLIENT_OPTIONS = frozenset(inspect.signature(Client.__init__).parameters) - {
    "self",
    "host",
    "personal_api_key",
    "project_api_key",
    "project_id",
    "organization_id",
}


def _start(seed: str, sandbox_kwargs: dict[str, Any]) -> tuple[Any, Any, dict[str, Any]]:
    from analytics_nb.sandbox import start

    client_kwargs = {k: sandbox_kwargs.pop(k) for k in list(sandbox_kwargs) if k in _CLIENT_OPTIONS}
    handle = start(seed=seed, **sandbox_kwargs)
    enter = getattr(handle, "__enter__", None)
    sb = enter() if callable(enter) else handle
    return handle, sb, client_kwargs


def _stopper(handle: Any, sb: Any) -> Any:
    def stop() -> None:
        exit_ = getattr(handle, "__exit__", None)
        if callable(exit_):
            exit_(None, None, None)
        else:
            sb.stop()

    return stop


def _options(sb: Any) -> dict[str, Any]:
    return {
        "personal_api_key": sb.personal_api_key,
        "project_api_key": sb.project_api_key,
        "project_id": sb.project_id,
        "organization_id": sb.organization_id,
    }


def connect_sandbox(seed: str = "demo", **sandbox_kwargs: Any) -> Client:
    """Start ``analytics_nb.sandbox.start(seed=..., **kw)`` and return a Client on it that stops it on close.

    Client options among the keywords (``max_retries``, ``rate_limit``, ``progress``, ...) go to the Client.
    """
    handle, sb, client_kwargs = _start(seed, dict(sandbox_kwargs))
    try:
        client = Client(sb.url, **_options(sb), **client_kwargs)
    except BaseException:
        _stopper(handle, sb)()
        raise
    client._on_close.append(_stopper(handle, sb))
    client.sandbox_server = sb  # type: ignore[attr-defined]
    return client


def connect_sandbox_async(seed: str = "demo", **sandbox_kwargs: Any) -> AsyncClient:
    """Like ``connect_sandbox`` but returns an ``AsyncClient``; ``await client.close()`` stops the sandbox."""
    handle, sb, client_kwargs = _start(seed, dict(sandbox_kwargs))
    try:
        client = AsyncClient(sb.url, **_options(sb), **client_kwargs)
    except BaseException:
        _stopper(handle, sb)()
        raise
    client._on_close.append(_stopper(handle, sb))
    client.sandbox_server = sb  # type: ignore[attr-defined]
    return client

"""Everything that knows it runs under uvicorn, in one place: the per-request cycle object behind `send`
(`send.__self__`) gives the TCP transport, which the sandbox uses to

* cork a hot-path answer so status line, headers and body leave in one segment (:func:`send_corked`);
* tell whether the client already went away (:func:`client_gone`), so delay faults end early;
* cut a connection with a TCP reset for fault injection (:func:`cut`).

Under any other ASGI server these degrade to plain behaviour (no cork, "not gone", a raised
`ConnectionResetError`).
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.responses import Response

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

__all__ = ["client_gone", "cut", "send_corked"]


def _cycle(send: Send) -> Any:
    return getattr(send, "__self__", None)


def _raw_socket(send: Send) -> Any:
    """The TCP socket under uvicorn's per-request cycle, when there is one and it can be corked."""
    if not hasattr(socket, "TCP_CORK"):
        return None
    transport = getattr(_cycle(send), "transport", None)
    return transport.get_extra_info("socket") if transport is not None else None


def _set_cork(sock: Any, on: int) -> None:
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, on)
    except (OSError, AttributeError):
        pass


async def send_corked(
    response: Response, scope: Message, receive: Receive, send: Send, raw_send: Send
) -> None:
    """Send `response`; under uvicorn with the socket corked meanwhile (uvicorn writes the head and the body
    in two sends: corked they leave as one segment, so the client wakes once per answer, not twice).
    `raw_send` is uvicorn's own `send` (the one that knows the transport); `send` may wrap it."""
    sock = _raw_socket(raw_send)
    if sock is None:
        await response(scope, receive, send)
        return
    _set_cork(sock, 1)
    try:
        await response(scope, receive, send)
    finally:
        _set_cork(sock, 0)


def client_gone(send: Send) -> bool:
    """Whether uvicorn already knows the client of this request went away (False on other servers)."""
    cycle = _cycle(send)
    if cycle is None:
        return False
    if getattr(cycle, "disconnected", False):
        return True
    transport = getattr(cycle, "transport", None)
    return bool(transport is not None and transport.is_closing())


async def cut(send: Send) -> None:
    """Reset the connection (RST) and tell uvicorn at once that this request's client is gone, so it neither
    logs "ASGI callable returned without starting response" nor tries to send its own 500."""
    cycle = _cycle(send)
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
    if hasattr(cycle, "disconnected"):
        cycle.disconnected = True
    await asyncio.sleep(0)  # let the transport report the loss (connection_lost) before returning

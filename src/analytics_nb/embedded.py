"""Start the embedded sandbox and connect a client to it: the one module above both sandbox and client."""

from __future__ import annotations

import contextlib
import inspect
from typing import Any, TypeVar

from analytics_nb.client import ApiClient, AsyncApiClient

__all__ = ["CLIENT_OPTIONS", "connect_sandbox"]

C = TypeVar("C", bound=ApiClient | AsyncApiClient)

CLIENT_OPTIONS = frozenset(inspect.signature(ApiClient.__init__).parameters) - {
    "self",
    "host",
    "personal_api_key",
    "project_api_key",
    "project_id",
    "organization_id",
}
"""Keywords of ``connect_sandbox`` that configure the client (the others go to ``sandbox.start``)."""


def connect_sandbox(seed: str = "demo", *, client_class: type[C], **kw: Any) -> C:
    """Start ``analytics_nb.sandbox.start(seed=..., **kw)`` and return a ``client_class`` on it that stops it
    on close (``client.sandbox_server`` is the running sandbox).

    Client options among the keywords (``max_retries``, ``rate_limit``, ``progress``, ...) go to the client;
    ``Client.sandbox()`` / ``AsyncClient.sandbox()`` call this with their own class.
    """
    from analytics_nb.sandbox import start  # here, so that importing the clients stays cheap

    client_kwargs = {k: kw.pop(k) for k in list(kw) if k in CLIENT_OPTIONS}
    running = contextlib.ExitStack()
    sb = running.enter_context(start(seed=seed, **kw))
    stop = running.close
    try:
        client = client_class(
            sb.url,
            personal_api_key=sb.personal_api_key,
            project_api_key=sb.project_api_key,
            project_id=sb.project_id,
            organization_id=sb.organization_id,
            **client_kwargs,
        )
    except BaseException:
        stop()
        raise
    client.on_close(stop)
    client.sandbox_server = sb
    return client

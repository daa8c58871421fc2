"""``Client``: the sync twin of ``AsyncClient`` (its capture and simulation methods are generated)."""

from __future__ import annotations

from typing import Any, ClassVar, Self

from analytics_nb.client import ApiClient
from analytics_nb.embedded import connect_sandbox
from analytics_nb.session._async_client import AsyncClient
from analytics_nb.session._sync_api import ClientMethods

__all__ = ["Client"]


class Client(ClientMethods, ApiClient):
    """Sync client for a PostHog-style service: ``client.playlists.frame()``; works in scripts and Jupyter.

    Same arguments and methods as ``AsyncClient``; each call runs on the client's private event loop in a
    daemon thread (never ``asyncio.run``), so it is safe inside a running Jupyter kernel. Use ``with`` or
    ``close()``. Besides the API: ``capture``, ``capture_frame``, ``flag_called``, ``flag_called_frame`` and
    ``simulate``.
    """

    async_class: ClassVar[type[AsyncClient]] = AsyncClient
    _async: AsyncClient

    @classmethod
    def sandbox(cls, seed: str = "demo", **kw: Any) -> Self:
        """Start the embedded sandbox and return a Client on it; ``close()`` also stops the sandbox.

        Keyword arguments of ``Client`` (e.g. ``max_retries``) configure the client; the rest go to
        ``analytics_nb.sandbox.start`` (e.g. ``profile="cloud"``).
        """
        return connect_sandbox(seed, client_class=cls, **kw)

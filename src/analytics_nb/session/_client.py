"""``Client``: the sync twin of ``AsyncClient``.

Its capture and simulation methods (``ClientVerbs``, written by ``scripts/generate_sync.py`` from each verb's
signature and docstring) call the verbs themselves with the client, so Ctrl-C behaves as in the plain
functions, which handle it in one place (``client.run_interruptible``): ``simulate`` returns the rows done as
a partial result, ``capture_frame`` lets the batches in flight settle and raises ``CaptureInterrupted``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from analytics_nb.embedded import connect_sandbox
from analytics_nb.session._async_client import AsyncClient
from analytics_nb.session._verbs import ClientVerbs

__all__ = ["Client"]


class Client(ClientVerbs):
    """Sync client for a PostHog-style service: ``client.playlists.frame()``; works in scripts and Jupyter.

    Same arguments and methods as ``AsyncClient``; each call runs on the client's private event loop in a
    daemon thread (never ``asyncio.run``), so it is safe inside a running Jupyter kernel. Use ``with`` or
    ``close()``. Besides the API (``client.playlists``, ``client.hog_functions``, ``client.feature_flags``,
    ...): ``capture``, ``capture_frame``, ``flag_called``, ``flag_called_frame`` and ``simulate``.
    """

    async_class: ClassVar[type[AsyncClient]] = AsyncClient
    _async: AsyncClient

    @classmethod
    def sandbox(cls, seed: str = "demo", **kw: Any) -> Self:
        """Start the embedded sandbox and return a Client on it; ``close()`` also stops the sandbox.

        Keyword arguments of ``Client`` (e.g. ``max_retries``) configure the client; the rest go to
        ``analytics_nb.sandbox.start`` (e.g. ``profile="cloud"``).
        ``mode="process"`` runs the server in a child process: a heavy remote ``simulate`` then does not
        share this kernel's GIL with the server (about 2 s longer to start; no ``requests()``/``events()``).

        Args:
            seed: ``"demo"`` (playlists, flags, persons, Hog functions) or ``"empty"``.
            **kw: Client keywords (``max_retries``, ...) and `analytics_nb.sandbox.start` keywords
                (``profile``, ``db``, ...).

        Returns:
            A client that owns the sandbox.
        """
        return connect_sandbox(seed, client_class=cls, **kw)

"""``AsyncClient``: ``AsyncApiClient`` plus capture, simulation and the embedded sandbox.

Each analyst verb is written once, as a function with its full docstring (``capture.capture_event``,
``capture.capture_frame``, ``capture.flag_called``, ``capture.flag_called_frame``, ``simulation.simulate``);
the methods (``AsyncClientVerbs``) are written from it by ``scripts/generate_sync.py``: the verb's typed
parameters (the client is ``self``), awaiting its async twin.
"""

from __future__ import annotations

from typing import Any, Self

from analytics_nb.embedded import connect_sandbox
from analytics_nb.session._verbs import AsyncClientVerbs

__all__ = ["AsyncClient"]


class AsyncClient(AsyncClientVerbs):
    """Async client for a PostHog-style service: ``await client.playlists.list()``; use ``async with``.

    The arguments and API of ``AsyncApiClient`` (``client.playlists``, ``client.hog_functions``,
    ``client.feature_flags``, ...), plus the analyst verbs as methods: ``capture``, ``capture_frame``,
    ``flag_called``, ``flag_called_frame`` and ``simulate``.
    """

    @classmethod
    def sandbox(cls, seed: str = "demo", **kw: Any) -> Self:
        """Start the embedded sandbox and return an AsyncClient on it; closing the client stops it.

        Keyword arguments of the client (e.g. ``max_retries``) configure the client; the rest go to
        ``analytics_nb.sandbox.start`` (e.g. ``profile="cloud"``).

        Args:
            seed: ``"demo"`` or ``"empty"``.
            **kw: Client keywords and `analytics_nb.sandbox.start` keywords.

        Returns:
            An AsyncClient that owns the sandbox.
        """
        return connect_sandbox(seed, client_class=cls, **kw)

"""``AsyncClient``: ``AsyncApiClient`` plus capture, simulation and the embedded sandbox.

Each analyst verb is written once, as a function with its full docstring (``capture.capture_event``,
``capture.capture_frame``, ``capture.flag_called``, ``capture.flag_called_frame``, ``simulation.simulate``);
the methods here are one-line delegations to its async twin made by ``client.async_method``, carrying the
verb's signature (the client is ``self``) and docstring, so Shift-Tab on ``aclient.capture_frame`` shows the
whole docstring.
"""

from __future__ import annotations

from typing import Any, Self

import analytics_nb.capture as _capture
import analytics_nb.simulation as _simulation
from analytics_nb.client import AsyncApiClient, async_method, same_constructor_doc
from analytics_nb.embedded import connect_sandbox

__all__ = ["AsyncClient"]


@same_constructor_doc(AsyncApiClient)
class AsyncClient(AsyncApiClient):
    """Async client for a PostHog-style service: ``await client.playlists.list()``; use ``async with``.

    The arguments and API of ``AsyncApiClient``, plus the analyst verbs as methods: ``capture``,
    ``capture_frame``, ``flag_called``, ``flag_called_frame`` and ``simulate``.
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

    capture = async_method(_capture.capture_event, _capture.acapture_event, name="capture")
    capture_frame = async_method(_capture.capture_frame, _capture.acapture_frame)
    flag_called = async_method(_capture.flag_called, _capture.aflag_called)
    flag_called_frame = async_method(_capture.flag_called_frame, _capture.aflag_called_frame)
    simulate = async_method(_simulation.simulate, _simulation.asimulate)

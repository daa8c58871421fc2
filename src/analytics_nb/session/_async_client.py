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
from analytics_nb.client import AsyncApiClient, async_method
from analytics_nb.embedded import connect_sandbox

__all__ = ["AsyncClient"]


class AsyncClient(AsyncApiClient):
    """Async client for a PostHog-style service: ``await client.playlists.list()``; use ``async with``.

    ``host``: "us", "eu" (app host for ``/api``, ingestion host for decide/capture) or a self-hosted base URL.
    Keys: ``personal_api_key`` (``phx_...``, for ``/api``) and ``project_api_key`` (``phc_...``, for decide
    and capture; read from the project when omitted). Retries: ``max_retries`` with jittered backoff;
    ``rate_limit=True`` keeps under the service's per-key limits. Besides the API: ``capture``,
    ``capture_frame``, ``flag_called``, ``flag_called_frame`` and ``simulate``.

    Args:
        host: ``"us"`` or ``"eu"`` for PostHog Cloud, or the base URL of a self-hosted PostHog or a sandbox.
        personal_api_key: A personal API key (``phx_...``) for ``/api``. None: no ``/api`` calls.
        project_api_key: The project API key (``phc_...``) for ``/flags`` and capture. None: read from the
            project when needed.
        secret_api_key: A Project Secret API Key (``phs_...``) for flag definitions. None: the personal key is
            used.
        project_id: The project's id. ``"@current"``: the personal key's current project.
        organization_id: The organization's id. None: read from ``/api/organizations/@current/`` when needed.
        timeout: Seconds before one request gives up (then retried).
        max_retries: Retries of a failed request, with jittered backoff.
        rate_limit: Keep under the service's per-key rate limits on the client side.
        max_concurrency: Requests in flight at once for listings and bulk calls.
        progress: Progress bars on long listings; False hides them. None: shown unless ``TQDM_DISABLE`` is
            set.
        retry_backoff: The first retry's wait in seconds; it doubles per attempt.
        max_retry_wait: The longest wait between retries, in seconds; a ``Retry-After`` asking more is not
            waited for.
        transport: An httpx transport to send through. None: the default.
        http_transport: ``"auto"``, ``"aiohttp"`` or ``"httpx"``.
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

"""``Client``: the sync twin of ``AsyncClient``.

Its capture and simulation methods are one-line delegations to the verbs themselves (``client.sync_method``:
the verb's signature with the client as ``self``, and its docstring), so Ctrl-C behaves as in the plain
functions, which handle it in one place (``client.run_interruptible``): ``simulate`` returns the rows done as
a partial result, ``capture_frame`` lets the batches in flight settle and raises ``CaptureInterrupted``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

import analytics_nb.capture as _capture
import analytics_nb.simulation as _simulation
from analytics_nb.client import ApiClient, sync_method
from analytics_nb.embedded import connect_sandbox
from analytics_nb.session._async_client import AsyncClient

__all__ = ["Client"]


class Client(ApiClient):
    """Sync client for a PostHog-style service: ``client.playlists.frame()``; works in scripts and Jupyter.

    Same arguments and methods as ``AsyncClient``; each call runs on the client's private event loop in a
    daemon thread (never ``asyncio.run``), so it is safe inside a running Jupyter kernel. Use ``with`` or
    ``close()``. Besides the API: ``capture``, ``capture_frame``, ``flag_called``, ``flag_called_frame`` and
    ``simulate``.

    Args:
        host: ``"us"`` or ``"eu"`` for PostHog Cloud (``/api`` goes to the app host, flags and capture to the
            ingestion host), or the base URL of a self-hosted PostHog or a sandbox, which serves both.
        personal_api_key: A personal API key (``phx_...``) for everything under ``/api``, with the scopes of
            what you do. None: no ``/api`` calls.
        project_api_key: The project API key (``phc_...``, public) for ``/flags`` and capture. None: read from
            the project with the personal key when needed.
        secret_api_key: A Project Secret API Key (``phs_...``, ``feature_flag:read``) for flag definitions, as
            today's PostHog wants. None: the personal key is used.
        project_id: The project's id. ``"@current"``: the personal key's current project.
        organization_id: The organization's id (the legacy plugin API needs it). None: read from
            ``/api/organizations/@current/`` when needed.
        timeout: Seconds before one request gives up (then retried).
        max_retries: Retries of a failed request (network errors, 5xx, 408, 429), with jittered backoff.
        rate_limit: Keep under the service's per-key rate limits on the client side.
        max_concurrency: Requests in flight at once for listings and bulk calls.
        progress: Progress bars on long listings; False hides them. None: shown unless ``TQDM_DISABLE`` is
            set.
        retry_backoff: The first retry's wait in seconds; it doubles per attempt.
        max_retry_wait: The longest wait between retries, in seconds; a ``Retry-After`` asking more is not
            waited for.
        transport: An httpx transport to send through (tests, proxies). None: the default.
        http_transport: ``"auto"`` (aiohttp under httpx with the ``fast`` extra), ``"aiohttp"`` or
            ``"httpx"``.

    Raises:
        ValueError: A key has a character no key has, or an argument is out of range (the message names it,
            never the key).
    """

    async_class: ClassVar[type[AsyncClient]] = AsyncClient
    _async: AsyncClient

    @classmethod
    def sandbox(cls, seed: str = "demo", **kw: Any) -> Self:
        """Start the embedded sandbox and return a Client on it; ``close()`` also stops the sandbox.

        Keyword arguments of ``Client`` (e.g. ``max_retries``) configure the client; the rest go to
        ``analytics_nb.sandbox.start`` (e.g. ``profile="cloud"``).

        Args:
            seed: ``"demo"`` (playlists, flags, persons, Hog functions) or ``"empty"``.
            **kw: Client keywords (``max_retries``, ...) and `analytics_nb.sandbox.start` keywords
                (``profile``, ``db``, ...).

        Returns:
            A client that owns the sandbox.
        """
        return connect_sandbox(seed, client_class=cls, **kw)

    capture = sync_method(_capture.capture_event, name="capture")
    capture_frame = sync_method(_capture.capture_frame)
    flag_called = sync_method(_capture.flag_called)
    flag_called_frame = sync_method(_capture.flag_called_frame)
    simulate = sync_method(_simulation.simulate)

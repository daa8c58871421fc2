"""``AsyncClient`` (the async API, written once) and ``Client`` (its sync facade on a private loop thread)."""

from __future__ import annotations

import asyncio
import inspect
import weakref
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import httpx

from analytics_nb.client._config import ClientConfig, SecretKey, config_from_env, mask, resolve_hosts
from analytics_nb.client._core import Core
from analytics_nb.client._decide import decide as _decide
from analytics_nb.client._facades import (
    SyncFeatureFlags,
    SyncOrganizations,
    SyncPlaylists,
    SyncProjects,
    SyncTransformations,
)
from analytics_nb.client._resources import FeatureFlags, Organizations, Playlists, Projects, Transformations
from analytics_nb.client._sync import LoopThread, _wrap
from analytics_nb.models import DecideResponse

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["AsyncClient", "Client"]

T = TypeVar("T")
C = TypeVar("C", bound="_Common")


def _config(
    host: str,
    *,
    personal_api_key: str | None,
    project_api_key: str | None,
    project_id: int | str,
    organization_id: str | None,
    timeout: float,
    max_retries: int,
    rate_limit: bool,
    max_concurrency: int,
    progress: bool | None,
    retry_backoff: float,
    max_retry_wait: float,
) -> ClientConfig:
    app_url, ingest_url = resolve_hosts(host)
    project = str(project_id).strip() if project_id is not None else "@current"
    if not project:
        raise ValueError("project_id must be a project id (e.g. 12345) or '@current'.")
    return ClientConfig(
        app_url=app_url,
        ingest_url=ingest_url,
        personal_api_key=None if personal_api_key is None else SecretKey(personal_api_key),
        project_api_key=project_api_key,
        project_id=project,
        organization_id=str(organization_id) if organization_id else None,
        timeout=timeout,
        max_retries=max_retries,
        retry_backoff=retry_backoff,
        max_retry_wait=max_retry_wait,
        rate_limit=rate_limit,
        max_concurrency=max_concurrency,
        progress=progress,
    )


class _Api:
    """The top-level async methods, written once: ``AsyncClient`` inherits them, ``Client`` wraps them."""

    _core: Core

    async def decide(
        self,
        distinct_id: str,
        *,
        groups: Mapping[str, Any] | None = None,
        person_properties: Mapping[str, Any] | None = None,
        group_properties: Mapping[str, Mapping[str, Any]] | None = None,
        ip: str | None = None,
        endpoint: Literal["decide", "flags"] = "decide",
        version: int | None = None,
    ) -> DecideResponse:
        """Evaluate every flag for one user remotely: ``POST /decide/?v=3``, or ``/flags/?v=2``
        with ``endpoint="flags"``.

        ``person_properties`` / ``groups`` / ``group_properties`` override the stored ones; ``ip`` is sent as
        ``X-Forwarded-For`` so the service derives the ``$geoip_*`` properties from it.
        """
        return await _decide(
            self._core,
            distinct_id,
            groups=groups,
            person_properties=person_properties,
            group_properties=group_properties,
            ip=ip,
            endpoint=endpoint,
            version=version,
        )

    async def organization_id(self) -> str:
        """The organization id the client uses (given, or resolved once from the service)."""
        return await self._core.organization_id()

    async def project_api_key(self) -> str:
        """The project API key (given, or read once from the project)."""
        return await self._core.project_api_key()


class _Common:
    """What both clients share: construction helpers, delegates to capture/simulate, repr."""

    _config: ClientConfig
    _on_close: list[Callable[[], Any]]
    #: The report of the last ``capture_frame`` on this client, kept even when it was interrupted (Ctrl-C
    #: or a cancelled task): one row per input row with status sent/refused/failed/not_attempted.
    last_capture_report: pd.DataFrame | None = None

    @classmethod
    def from_env(cls: type[C], **overrides: Any) -> C:
        """A client from ``POSTHOG_HOST``, ``POSTHOG_PERSONAL_API_KEY``, ``POSTHOG_PROJECT_API_KEY``,
        ``POSTHOG_PROJECT_ID`` and ``POSTHOG_ORGANIZATION_ID`` (keyword ``overrides`` win;
        host defaults to "us")."""
        return cls(**config_from_env(**overrides))  # type: ignore[arg-type]

    @property
    def config(self) -> ClientConfig:
        """The resolved configuration (hosts, project, limits; keys hidden in its repr)."""
        return self._config

    @property
    def host(self) -> str:
        """The app host that receives ``/api`` calls."""
        return self._config.app_url

    @property
    def project_id(self) -> str:
        """The configured project id (``@current`` unless given)."""
        return self._config.project_id

    def __repr__(self) -> str:
        c = self._config
        host = c.app_url if c.app_url == c.ingest_url else f"{c.app_url} + {c.ingest_url}"
        return (
            f"{type(self).__name__}(host={host!r}, project_id={c.project_id!r}, "
            f"personal_api_key={mask(c.personal_api_key)!r}, project_api_key={mask(c.project_api_key)!r})"
        )

    # Thin delegates to the parts above the client (lazy imports keep the layering one-way).
    def capture(
        self,
        event: str,
        distinct_id: str,
        properties: Mapping[str, Any] | None = None,
        *,
        flags: Any = None,
        timestamp: Any = None,
        uuid: Any = None,
        groups: Mapping[str, Any] | None = None,
    ) -> Any:
        """Capture one event (``analytics_nb.capture.capture_event``; ``groups`` becomes ``$groups``) and
        return its uuid; awaitable on ``AsyncClient``."""
        from analytics_nb.capture import capture_event

        return capture_event(
            self,
            event,
            distinct_id,
            properties,
            flags=flags,
            timestamp=timestamp,
            uuid=uuid,
            groups=groups,
        )

    def capture_frame(self, df: pd.DataFrame, **kw: Any) -> Any:
        """Capture one event per row of ``df`` via ``/batch/`` (``analytics_nb.capture.capture_frame``)."""
        from analytics_nb.capture import capture_frame

        return capture_frame(self, df, **kw)

    def flag_called(self, distinct_id: str, key: str, response: Any, **kw: Any) -> Any:
        """Send a ``$feature_flag_called`` event (``analytics_nb.capture.flag_called``)."""
        from analytics_nb.capture import flag_called

        return flag_called(self, distinct_id, key, response, **kw)

    def flag_called_frame(self, outcomes: Any, flags: Any = None, **kw: Any) -> Any:
        """Send ``$feature_flag_called`` for every (row, flag) of a simulation frame, deduplicated
        (``analytics_nb.capture.flag_called_frame``); returns its report, awaitable on ``AsyncClient``."""
        from analytics_nb.capture import flag_called_frame

        return flag_called_frame(self, outcomes, flags, **kw)

    def simulate(
        self,
        property_sets: Any,
        flags: Any = None,
        engine: Literal["remote", "local", "both"] = "remote",
        **kw: Any,
    ) -> Any:
        """Evaluate flags across property sets (``analytics_nb.simulate.simulate`` with this client)."""
        from analytics_nb.simulate import simulate

        return simulate(property_sets, flags, engine=engine, client=self, **kw)


class AsyncClient(_Api, _Common):
    """Async client for a PostHog-style service: ``await client.playlists.list()``; use ``async with``.

    ``host``: "us", "eu" (app host for ``/api``, ingestion host for decide/capture) or a self-hosted base URL.
    Keys: ``personal_api_key`` (``phx_...``, for ``/api``) and ``project_api_key`` (``phc_...``, for decide
    and capture; read from the project when omitted). Retries: ``max_retries`` with jittered backoff;
    ``rate_limit=True`` keeps under the service's per-key limits.
    """

    def __init__(
        self,
        host: str = "us",
        *,
        personal_api_key: str | None = None,
        project_api_key: str | None = None,
        project_id: int | str = "@current",
        organization_id: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 4,
        rate_limit: bool = False,
        max_concurrency: int = 8,
        progress: bool | None = None,
        retry_backoff: float = 0.5,
        max_retry_wait: float = 60.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._config = _config(
            host,
            personal_api_key=personal_api_key,
            project_api_key=project_api_key,
            project_id=project_id,
            organization_id=organization_id,
            timeout=timeout,
            max_retries=max_retries,
            rate_limit=rate_limit,
            max_concurrency=max_concurrency,
            progress=progress,
            retry_backoff=retry_backoff,
            max_retry_wait=max_retry_wait,
        )
        self._core = Core(self._config, transport=transport)
        self._on_close = []
        self.playlists = Playlists(self._core)
        self.transformations = Transformations(self._core)
        self.feature_flags = FeatureFlags(self._core)
        self.projects = Projects(self._core)
        self.organizations = Organizations(self._core)

    @classmethod
    def sandbox(cls, seed: str = "demo", **kw: Any) -> AsyncClient:
        """Start the embedded sandbox and return an AsyncClient on it; closing the client stops it."""
        from analytics_nb.embedded import connect_sandbox_async

        return connect_sandbox_async(seed=seed, **kw)

    async def close(self) -> None:
        """Close connections (and stop an owned sandbox)."""
        await self._core.aclose()
        callbacks, self._on_close = self._on_close, []
        for callback in callbacks:
            result = await asyncio.to_thread(callback)
            if inspect.isawaitable(result):
                await result

    aclose = close

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _shutdown(loop: LoopThread, core: Core, callbacks: list[Callable[[], Any]]) -> None:
    """Finalizer of a sync Client: close connections, stop the loop thread, run close callbacks."""
    try:
        if loop.running and not core.closed:
            loop.run(core.aclose())
    except Exception:  # the loop may already be gone at interpreter exit
        pass
    loop.stop()
    while callbacks:
        callback = callbacks.pop(0)
        try:
            callback()
        except Exception:
            pass


class Client(_Common):
    """Sync client for a PostHog-style service: ``client.playlists.frame()``; works in scripts and Jupyter.

    Same arguments and methods as ``AsyncClient``; each call runs on the client's private event loop in a
    daemon thread (never ``asyncio.run``), so it is safe inside a running Jupyter kernel. Use ``with`` or
    ``close()``.
    """

    def __init__(
        self,
        host: str = "us",
        *,
        personal_api_key: str | None = None,
        project_api_key: str | None = None,
        project_id: int | str = "@current",
        organization_id: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 4,
        rate_limit: bool = False,
        max_concurrency: int = 8,
        progress: bool | None = None,
        retry_backoff: float = 0.5,
        max_retry_wait: float = 60.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._async = AsyncClient(
            host,
            personal_api_key=personal_api_key,
            project_api_key=project_api_key,
            project_id=project_id,
            organization_id=organization_id,
            timeout=timeout,
            max_retries=max_retries,
            rate_limit=rate_limit,
            max_concurrency=max_concurrency,
            progress=progress,
            retry_backoff=retry_backoff,
            max_retry_wait=max_retry_wait,
            transport=transport,
        )
        self._config = self._async._config
        self._core = self._async._core
        self._on_close = []
        self._loop = LoopThread()
        self._target = self._async
        self._runner = self._run
        self.playlists: SyncPlaylists = SyncPlaylists(self._async.playlists, self._run)
        self.transformations: SyncTransformations = SyncTransformations(
            self._async.transformations, self._run
        )
        self.feature_flags: SyncFeatureFlags = SyncFeatureFlags(self._async.feature_flags, self._run)
        self.projects: SyncProjects = SyncProjects(self._async.projects, self._run)
        self.organizations: SyncOrganizations = SyncOrganizations(self._async.organizations, self._run)
        self._finalizer = weakref.finalize(self, _shutdown, self._loop, self._core, self._on_close)

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on this client's loop and return its result (used by capture and simulate)."""
        return self._loop.run(coro)

    @classmethod
    def sandbox(cls, seed: str = "demo", **kw: Any) -> Client:
        """Start the embedded sandbox and return a Client on it; ``close()`` also stops the sandbox.

        Keyword arguments of ``Client`` (e.g. ``max_retries``) configure the client; the rest go to
        ``analytics_nb.sandbox.start`` (e.g. ``profile="cloud"``).
        """
        from analytics_nb.embedded import connect_sandbox

        return connect_sandbox(seed=seed, **kw)

    @property
    def closed(self) -> bool:
        """True after ``close()``."""
        return not self._finalizer.alive

    def close(self) -> None:
        """Close connections, stop the loop thread (and an owned sandbox). Safe to call twice."""
        self._finalizer()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # The top-level API, generated from the async methods (same signatures and docs, sync results).
    decide = _wrap("decide", _Api.decide)
    organization_id = _wrap("organization_id", _Api.organization_id)
    project_api_key = _wrap("project_api_key", _Api.project_api_key)

"""``AsyncApiClient`` (the async data-access API, the one source) and ``ApiClient`` (its sync twin).

``ApiClient``'s methods and resource classes are generated from the async source by
``scripts/generate_sync.py`` (``_sync_api.py``); what is written here by hand is construction, closing and
the loop thread the sync calls run on. The analyst-facing ``analytics_nb.Client`` / ``AsyncClient``
(``analytics_nb.session``) add capture, simulation and the embedded sandbox on top.
"""

from __future__ import annotations

import asyncio
import inspect
import weakref
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self, TypeVar

import httpx

from analytics_nb.client._config import (
    DEFAULT_MAX_ANSWER_BYTES,
    KEY_ARGUMENTS,
    ClientConfig,
    SecretKey,
    check_key,
    config_from_env,
    hold_key,
    mask,
    resolve_hosts,
)
from analytics_nb.client._core import Core
from analytics_nb.client._decide import decide as _decide
from analytics_nb.client._loop import LoopStopper, LoopThread, for_caller
from analytics_nb.client._resources import (
    FeatureFlags,
    HogFunctions,
    HogFunctionTemplates,
    Organizations,
    Playlists,
    Projects,
    Transformations,
)
from analytics_nb.client._resources._query import MAX_ROWS, Run, groups_frame, persons_frame, run_query
from analytics_nb.client._sync_api import (
    ApiClientMethods,
    SyncFeatureFlags,
    SyncHogFunctions,
    SyncHogFunctionTemplates,
    SyncOrganizations,
    SyncPlaylists,
    SyncProjects,
    SyncTransformations,
)
from analytics_nb.models import DecideResponse

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["AnyApiClient", "ApiClient", "AsyncApiClient"]

T = TypeVar("T")


def _config(
    host: str,
    *,
    personal_api_key: Any,
    project_api_key: Any,
    project_id: int | str,
    secret_api_key: Any = None,
    organization_id: str | None,
    timeout: float,
    max_retries: int,
    rate_limit: bool,
    max_concurrency: int,
    progress: bool | None,
    retry_backoff: float,
    max_retry_wait: float,
    http_transport: str = "auto",
    max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES,
) -> ClientConfig:
    """The checked configuration; the keys arrive wrapped (``HeldKey``) and never sit here as text."""
    app_url, ingest_url = resolve_hosts(host)
    project = str(project_id).strip() if project_id is not None else "@current"
    if not project:
        raise ValueError("project_id must be a project id (e.g. 12345) or '@current'.")
    return ClientConfig(
        app_url=app_url,
        ingest_url=ingest_url,
        personal_api_key=None if personal_api_key is None else SecretKey(personal_api_key),
        project_api_key=None if project_api_key is None else check_key(project_api_key, "project_api_key"),
        secret_api_key=None if secret_api_key is None else SecretKey(secret_api_key, name="secret_api_key"),
        project_id=project,
        organization_id=str(organization_id) if organization_id else None,
        timeout=timeout,
        max_retries=max_retries,
        retry_backoff=retry_backoff,
        max_retry_wait=max_retry_wait,
        rate_limit=rate_limit,
        max_concurrency=max_concurrency,
        progress=progress,
        http_transport=http_transport,
        max_answer_bytes=max_answer_bytes,
    )


def _bad_input(exc: ValueError) -> BaseException:
    """A constructor's bad-input error, ready to raise from the constructor: without the frames below it
    (the sentence names the field and the fix; the frames only pushed it off the screen, and held the
    arguments as locals). ``ANALYTICS_NB_FULL_TRACEBACK=1`` keeps them."""
    return for_caller(exc)


class _Common:
    """What both clients share: configuration, ``from_env``, the repr, close callbacks."""

    _config: ClientConfig
    _core: Core
    _on_close: list[Callable[[], Any]]
    sandbox_server: Any = None
    """The embedded sandbox this client owns (``Client.sandbox()``), else None."""
    #: The report of the last ``capture_frame`` on this client, kept even when it was interrupted (Ctrl-C
    #: or a cancelled task): one row per input row with status sent/refused/failed/not_attempted.
    last_capture_report: pd.DataFrame | None = None

    @classmethod
    def from_env(cls, **overrides: Any) -> Self:
        """A client from ``POSTHOG_HOST``, ``POSTHOG_PERSONAL_API_KEY``, ``POSTHOG_PROJECT_API_KEY``,
        ``POSTHOG_SECRET_API_KEY``, ``POSTHOG_PROJECT_ID`` and ``POSTHOG_ORGANIZATION_ID`` (keyword
        ``overrides`` win;
        host defaults to "us").

        Args:
            **overrides: Constructor keywords that win over the environment (``host=``, ``max_retries=``...).

        Returns:
            The client.
        """
        __tracebackhide__ = True  # IPython and pytest show the caller's line and the sentence
        overrides = {k: hold_key(v) if k in KEY_ARGUMENTS else v for k, v in overrides.items()}
        return cls(**config_from_env(**overrides))

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
        c = getattr(self, "_config", None)
        if c is None:  # half-built (its constructor raised): a traceback with locals still shows it
            return f"<{type(self).__name__}: not configured>"
        host = c.app_url if c.app_url == c.ingest_url else f"{c.app_url} + {c.ingest_url}"
        return (
            f"{type(self).__name__}(host={host!r}, project_id={c.project_id!r}, "
            f"personal_api_key={mask(c.personal_api_key)!r}, project_api_key={mask(c.project_api_key)!r}"
            + (f", secret_api_key={mask(c.secret_api_key)!r})" if c.secret_api_key is not None else ")")
        )

    @property
    def core(self) -> Core:
        """The transport every call goes through (``request``, retries, typed errors, the project key).

        The seam the parts above the client use (capture, simulation): ``await core.request(...)``.
        """
        return self._core

    def on_close(self, callback: Callable[[], Any]) -> None:
        """Run ``callback`` when the client is closed (``AsyncClient``: in a worker thread), e.g. to stop a
        sandbox it owns.

        Args:
            callback: A function of no arguments (or a coroutine function, for ``AsyncClient``).
        """
        self._on_close.append(callback)


class AsyncApiClient(_Common):
    """Async data-access client for a PostHog-style service: ``await client.playlists.list()``; use
    ``async with``.

    The constructor's arguments are described once, on ``__init__``; ``ApiClient`` and ``Client`` take the
    same ones (their constructor is written from this one by ``scripts/generate_sync.py``) and ``AsyncClient``
    inherits it.
    """

    def __init__(
        self,
        host: str = "us",
        *,
        personal_api_key: str | None = None,
        project_api_key: str | None = None,
        secret_api_key: str | None = None,
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
        http_transport: str = "auto",
        max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES,
    ) -> None:
        """Connect to a PostHog Cloud region, a self-hosted PostHog or a sandbox (nothing is sent yet).

        Args:
            host: ``"us"`` or ``"eu"`` for PostHog Cloud (``/api`` goes to the app host, flags and capture to
                the ingestion host), or the base URL of a self-hosted PostHog or a sandbox, which serves both.
            personal_api_key: A personal API key (``phx_...``) for everything under ``/api``, with the scopes
                of what you do. None: no ``/api`` calls.
            project_api_key: The project API key (``phc_...``, public) for ``/flags`` and capture. None: read
                from the project with the personal key when needed.
            secret_api_key: A Project Secret API Key (``phs_...``, ``feature_flag:read``) for flag
                definitions, as today's PostHog wants. None: the personal key is used.
            project_id: The project's id. ``"@current"``: the personal key's current project.
            organization_id: The organization's id (the legacy plugin API needs it). None: read from
                ``/api/organizations/@current/`` when needed.
            timeout: Seconds one request may take as a whole, the answer's body included: connecting,
                sending and reading must all end within it (a network error within it is retried; a request
                still running at the deadline is a ``NetworkError``, not retried).
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
            max_answer_bytes: The largest answer body the client reads (after decompression, default 100
                MiB); a larger one is a ``ResponseFormatError`` naming its size, so memory stays bounded.

        Raises:
            ValueError: A key has a character no key has, or an argument is out of range (the message names
                it, never the key).
        """
        __tracebackhide__ = True  # IPython and pytest show the caller's line and the sentence
        # Wrapped first: a malformed key fails its check below; no frame may hold it as text (issue 27 #6).
        personal_api_key, project_api_key = hold_key(personal_api_key), hold_key(project_api_key)
        secret_api_key = hold_key(secret_api_key)
        try:
            self._config = _config(
                host,
                personal_api_key=personal_api_key,
                project_api_key=project_api_key,
                secret_api_key=secret_api_key,
                project_id=project_id,
                organization_id=organization_id,
                timeout=timeout,
                max_retries=max_retries,
                rate_limit=rate_limit,
                max_concurrency=max_concurrency,
                progress=progress,
                retry_backoff=retry_backoff,
                max_retry_wait=max_retry_wait,
                http_transport=http_transport,
                max_answer_bytes=max_answer_bytes,
            )
        except ValueError as exc:
            raise _bad_input(exc) from None
        self._core = Core(self._config, transport=transport)
        self._on_close = []
        self.playlists = Playlists(self._core)
        self.transformations = Transformations(self._core)
        self.hog_functions = HogFunctions(self._core)
        self.hog_function_templates = HogFunctionTemplates(self._core)
        self.feature_flags = FeatureFlags(self._core)
        self.projects = Projects(self._core)
        self.organizations = Organizations(self._core)

    async def decide(
        self,
        distinct_id: str,
        *,
        groups: Mapping[str, Any] | None = None,
        person_properties: Mapping[str, Any] | None = None,
        group_properties: Mapping[str, Mapping[str, Any]] | None = None,
        ip: str | None = None,
        endpoint: Literal["decide", "flags"] = "flags",
        version: int | None = None,
        runtime: Literal["server", "client"] = "server",
    ) -> DecideResponse:
        """Evaluate every flag for one user remotely: ``POST /flags/?v=4`` as posthog-python 7.91.1 does,
        or the legacy ``/decide/?v=3`` with ``endpoint="decide"``. A flag the service failed to evaluate
        is None (``response.failures`` says why), never False.

        ``person_properties`` / ``groups`` / ``group_properties`` override the stored ones; ``ip`` is sent as
        ``X-Forwarded-For`` so the service derives the ``$geoip_*`` properties from it.

        Args:
            distinct_id: The person to evaluate the flags for.
            groups: ``{group type: group key}`` for group flags. None: no groups.
            person_properties: Person properties that override the stored ones for this call. None: the stored
                ones.
            group_properties: ``{group type: properties}`` overriding the stored ones. None: the stored ones.
            ip: The person's IP address, for the ``$geoip_*`` properties. None: none sent.
            endpoint: ``"flags"`` (today's ``/flags``) or ``"decide"`` (the legacy ``/decide``).
            version: The API version asked for. None: 4 for ``/flags``, 3 for ``/decide``.
            runtime: The runtime the request asks as (sent as ``evaluation_runtime``): ``"server"`` (what a
                server SDK gets) or ``"client"`` (what browsers and mobile apps get). PostHog answers a flag
                scoped to one runtime only to callers of it, and to neither when it cannot tell.

        Returns:
            The `DecideResponse`.

        Raises:
            ValueError: ``version`` is not a positive integer, or ``runtime`` not "server"/"client".

        Warns:
            FlagsRateLimitWarning: The service says this token or IP is near its rate limit (once per client).
        """
        overrides = {
            "groups": groups,
            "person_properties": person_properties,
            "group_properties": group_properties,
        }
        return await _decide(
            self._core, distinct_id, overrides, ip=ip, endpoint=endpoint, version=version, runtime=runtime
        )

    async def query(
        self, hogql: str, *, page_by: str | None = None, page_size: int = MAX_ROWS, run: Run = "auto"
    ) -> pd.DataFrame:
        """Run a HogQL query (``POST /api/projects/:id/query/``) and return its answer as a typed DataFrame
        (columns named and typed from the answer's ``columns`` / ``types``: strings, ``Int64``, ``Float64``,
        ``boolean``, UTC times).

        One query answers at most 50,000 rows (PostHog's ``MAX_SELECT_RETURNED_ROWS``; 100 when the query
        has no ``LIMIT``). ``page_by`` reads every row by keyset, as PostHog advises over ``OFFSET``: the
        client sends ``SELECT * FROM (<hogql>) WHERE <page_by> > <last> ORDER BY <page_by> LIMIT
        <page_size>`` until the service says no more rows match. Without it, an answer the service says is
        cut short gives a warning naming the fix. Queries are paced to the query API's limits (240 a minute,
        2,400 an hour, 3 at once) and slow down when an answer carries ``X-PostHog-Rate-Limit-Warning``.
        Works with a personal key (scope ``query:read``) or a project secret key (``secret_api_key=``).

        Long queries run asynchronously: the query is sent with ``"refresh": "force_async"`` and its status
        polled (``GET .../query/:id/``) until it is complete, with a progress bar of the rows ClickHouse has
        read. ``run="auto"`` (the default) sends a query synchronously and resends it async when it hits
        the sync execution limit (504), and runs the rest of a paged read async once a page took over 5 s.

        Args:
            hogql: The HogQL ``SELECT``.
            page_by: A column of the answer whose values are unique and never null (``id``,
                ``distinct_id``): read every row, page after page. None: one request.
            page_size: Rows per page (at most 50,000).
            run: ``"sync"`` (one request per query; a timeout is an error), ``"async"`` (submit and poll
                every query) or ``"auto"``.

        Returns:
            The answer as a DataFrame.

        Raises:
            ValidationError: PostHog refused the query (the message is its own, with the fix).
            ServerError: The query hit PostHog's execution time limit (504; the message says how to
                narrow it).
        """
        return await run_query(self._core, hogql, page_by=page_by, page_size=page_size, run=run)

    async def persons(
        self,
        properties: list[str] | None = None,
        *,
        flags: Any = None,
        distinct_ids: Literal["all", "identified"] = "all",
        page_size: int = MAX_ROWS,
        run: Run = "auto",
    ) -> pd.DataFrame:
        """The project's persons as a frame for the simulation door (``simulate(client.persons(...))``):
        ``person_id``, ``distinct_id`` and one column per property, values as PostHog stores them (numbers
        stay numbers; a property the person lacks is None).

        Read with HogQL over ``person_distinct_ids`` joined to ``persons``, paged by keyset on the
        distinct id. No property filter is sent to PostHog: HogQL's comparisons are not the flag service's
        (its case rules, ``is_not`` on a missing property, numbers in text), so every person is read and
        the flag engine decides.

        ``distinct_ids="all"`` (the default) gives one row per distinct id: a flag is evaluated per
        distinct id, and two ids of one person can get different rollout buckets. ``"identified"`` gives
        one row per person, with the person's id that is not a UUID (the SDKs give anonymous users a UUID
        as distinct id; the id you identify them with usually is not one), the smallest when several (a
        warning counts those persons), else the smallest id.

        Args:
            properties: The person property keys to read as columns. None: those the ``flags`` read, or
                every key found when ``flags`` is None too.
            flags: Flag definitions (``client.feature_flags.definitions()``, a list of flags, ...) whose
                person properties become the columns when ``properties`` is None.
            distinct_ids: ``"all"`` (a row per distinct id) or ``"identified"`` (a row per person).
            page_size: Rows per query (at most 50,000, the service's cap).
            run: ``"sync"``, ``"async"`` or ``"auto"`` queries (see `query`).

        Returns:
            The persons frame (``frame.attrs["plan"]``: rows, pages, queries, requests, whether async).

        Raises:
            ValueError: A bad argument (named).
        """
        frame, _requests = await persons_frame(
            self._core,
            properties=properties,
            flags=flags,
            distinct_ids=distinct_ids,
            page_size=page_size,
            run=run,
        )
        return frame

    async def groups(
        self,
        group_type: str | int,
        properties: list[str] | None = None,
        *,
        page_size: int = MAX_ROWS,
        run: Run = "auto",
    ) -> pd.DataFrame:
        """The project's groups of one type as a frame for the simulation door (group flags):
        ``distinct_id`` (the group key), ``group:<type>`` (the key) and ``group:<type>:<property>`` columns,
        values as PostHog stores them (a property a group lacks is None).

        Read with HogQL over the ``groups`` table, paged by keyset on the key, sync or async as
        `query` runs. A group flag's rollout hash is taken over the group key, so
        ``simulate(client.groups("company"), engine="local", client=client)`` answers each group as the
        flag service would answer any member of it.

        Args:
            group_type: The group type's name (``"company"``; its index is read from the project's flag
                definitions) or its index (0-4).
            properties: The group property keys to read. None: every key found.
            page_size: Rows per query (at most 50,000, the service's cap).
            run: ``"sync"``, ``"async"`` or ``"auto"`` queries (see `query`).

        Returns:
            The groups frame (``frame.attrs["plan"]``: rows, pages, requests).

        Raises:
            ValueError: An unknown group type or a bad argument (named).
        """
        if isinstance(group_type, int) and not isinstance(group_type, bool):
            if not 0 <= group_type <= 4:
                raise ValueError(f"groups: a group type index is 0 to 4, got {group_type}")
            mapping = (await self.feature_flags.definitions()).group_type_mapping
            index, name = group_type, mapping.get(str(group_type), str(group_type))
        elif isinstance(group_type, str) and group_type:
            mapping = (await self.feature_flags.definitions()).group_type_mapping
            by_name = {v: int(k) for k, v in mapping.items()}
            if group_type not in by_name:
                known = ", ".join(repr(v) for v in by_name) or "none"
                raise ValueError(f"groups: no group type {group_type!r} in the project (its types: {known})")
            index, name = by_name[group_type], group_type
        else:
            raise ValueError(f"groups: group_type must be a group type name or index, got {group_type!r}")
        if not 1 <= int(page_size) <= MAX_ROWS:
            raise ValueError(f"groups: page_size must be between 1 and {MAX_ROWS:,} (the service's row cap)")
        return await groups_frame(
            self._core, name, index, properties=properties, page_size=int(page_size), run=run
        )

    async def organization_id(self) -> str:
        """The organization id the client uses (given, or resolved once from the service)."""
        return await self._core.organization_id()

    async def project_api_key(self) -> str:
        """The project API key (given, or read once from the project)."""
        return await self._core.project_api_key()

    async def close(self) -> None:
        """Close connections (and stop an owned sandbox)."""
        await self._core.aclose()
        callbacks, self._on_close = self._on_close, []
        for callback in callbacks:
            result = await asyncio.to_thread(callback)
            if inspect.isawaitable(result):
                await result

    aclose = close

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _shutdown(loop: LoopStopper, core: Core, callbacks: list[Callable[[], Any]]) -> None:
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


class ApiClient(ApiClientMethods, _Common):
    """Sync data-access client for a PostHog-style service: ``client.playlists.frame()``; works in scripts
    and Jupyter.

    Same arguments and methods as ``AsyncApiClient``; each call runs on the client's private event loop in a
    daemon thread (never ``asyncio.run``), so it is safe inside a running Jupyter kernel. Use ``with`` or
    ``close()``. The constructor (``ApiClientMethods.__init__``) is written from ``AsyncApiClient``'s by
    ``scripts/generate_sync.py``; it holds the keys and calls ``_open``.
    """

    async_class: ClassVar[type[AsyncApiClient]] = AsyncApiClient
    """The async client this class wraps (``analytics_nb.Client`` wraps ``analytics_nb.AsyncClient``)."""

    def _open(self, *args: Any, **kwargs: Any) -> None:
        """Build the async client from the constructor's arguments (the keys already held) and the loop
        thread the sync calls run on."""
        __tracebackhide__ = True  # IPython and pytest show the caller's line and the sentence
        try:
            self._async = self.async_class(*args, **kwargs)
        except ValueError as exc:
            raise _bad_input(exc) from None
        self._config = self._async._config
        self._core = self._async._core
        self._on_close = []
        self._loop = LoopThread()
        self.playlists = SyncPlaylists(self._async.playlists, self._loop)
        self.transformations = SyncTransformations(self._async.transformations, self._loop)
        self.hog_functions = SyncHogFunctions(self._async.hog_functions, self._loop)
        self.hog_function_templates = SyncHogFunctionTemplates(self._async.hog_function_templates, self._loop)
        self.feature_flags = SyncFeatureFlags(self._async.feature_flags, self._loop)
        self.projects = SyncProjects(self._async.projects, self._loop)
        self.organizations = SyncOrganizations(self._async.organizations, self._loop)
        # Every sync resource (and each iterator it hands out) holds the loop, and the loop holds this client:
        # a client reachable only through `client.playlists` stays open (issue 27 #5). The finalizer holds
        # only the loop's stopper, so an unreachable client is still collected and closed.
        self._loop.owner = self
        self._finalizer = weakref.finalize(self, _shutdown, self._loop.stopper, self._core, self._on_close)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on this client's loop and return its result (how capture and simulation run their
        async flow for a sync client); the package's errors come back with a short traceback.

        Args:
            coro: The coroutine to run.

        Returns:
            Its result.
        """
        return self._loop.run(coro)

    @property
    def closed(self) -> bool:
        """True after ``close()``."""
        return not self._finalizer.alive

    def close(self) -> None:
        """Close connections, stop the loop thread (and an owned sandbox). Safe to call twice."""
        self._finalizer()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


AnyApiClient = ApiClient | AsyncApiClient
"""Either client: what capture and simulation accept (``isinstance(client, ApiClient)`` tells them apart)."""

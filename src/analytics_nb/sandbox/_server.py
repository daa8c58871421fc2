"""Running the sandbox: uvicorn on 127.0.0.1 in a background thread with its own event loop (so it works
inside a running Jupyter kernel without touching the caller's loop), and the `Sandbox` handle."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
import threading
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

import uvicorn

from . import _auth
from ._app import SandboxApp, create_app
from ._resources import decide, events, feature_flags, persons, playlists, projects

if TYPE_CHECKING:
    import pandas as pd

    from ._context import SandboxContext
    from ._faults import Faults


class Sandbox:
    """A running sandbox: its URL, keys and ids, the fault controls, and read-back of events and requests.

    The owner's personal key is held only here (the database stores its hash) and never appears in the
    repr.
    """

    def __init__(self, app: SandboxApp, url: str, personal_api_key: str) -> None:
        self.app = app
        self.url = url
        self._personal_api_key = personal_api_key
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"Sandbox(url={self.url!r}, profile={self.profile!r}, project_id={self.project_id})"

    # -- identity
    @property
    def ctx(self) -> SandboxContext:
        """The server-side context (store, profile, ids)."""
        return self.app.ctx

    @property
    def personal_api_key(self) -> str:
        """The owner's `phx_` key with scopes `["*"]`."""
        return self._personal_api_key

    @property
    def project_api_key(self) -> str:
        """The project's `phc_` token (for decide and capture)."""
        return self.ctx.project_api_key

    @property
    def project_id(self) -> int:
        """The seeded project's id."""
        return self.ctx.project_id

    @property
    def organization_id(self) -> str:
        """The seeded organization's UUID."""
        return self.ctx.organization_id

    @property
    def profile(self) -> str:
        """ "spec" (follows the spec) or "cloud" (adds the cloud's refusals and throttles)."""
        return self.ctx.profile

    @property
    def faults(self) -> Faults:
        """Fault injection controls: `add(path=..., status=..., rate=..., ...)`, `remove(id)`, `clear()`."""
        return self.ctx.faults

    def create_app(self) -> SandboxApp:
        """The ASGI app this sandbox serves."""
        return self.app

    # -- keys, persons, groups
    def create_personal_key(
        self,
        scopes: list[str] | None = None,
        user: int | str | None = None,
        scoped_teams: list[int] | None = None,
        scoped_organizations: list[str] | None = None,
    ) -> str:
        """Issue another personal key (default scopes `["*"]`) for the owner or for `user` (id or email).

        Args:
            scopes: The key's scopes, e.g. ``["session_recording_playlist:read"]``. None: ``["*"]``.
            user: The user (id or email) the key belongs to. None: the owner.
            scoped_teams: Project ids the key is limited to. None: every project.
            scoped_organizations: Organization ids the key is limited to. None: every organization.

        Returns:
            The new ``phx_`` key (only its hash is stored).
        """
        user_id = self.ctx.owner_user_id
        if isinstance(user, int):
            user_id = user
        elif isinstance(user, str):
            row = self.ctx.store.query_one("SELECT id FROM users WHERE email=?", (user,))
            if row is None:
                raise ValueError(f"no sandbox user with email {user!r}")
            user_id = row["id"]
        return _auth.create_personal_key(
            self.ctx.store,
            user_id,
            list(scopes) if scopes is not None else ["*"],
            scoped_teams=scoped_teams,
            scoped_organizations=scoped_organizations,
        )

    def create_secret_key(self, scopes: list[str] | None = None, *, project_id: int | None = None) -> str:
        """Issue a Project Secret API Key (`phs_...`) for the sandbox's project (or `project_id`); `scopes`
        defaults to `["feature_flag:read"]`. `/flags/definitions` accepts it.

        Args:
            scopes: The key's scopes. None: ``["feature_flag:read"]``.
            project_id: The project. None: the sandbox's.

        Returns:
            The new ``phs_`` key.
        """
        return feature_flags.create_secret_key(
            self.ctx.store,
            self.project_id if project_id is None else project_id,
            ["feature_flag:read"] if scopes is None else list(scopes),
        )

    def set_person(self, distinct_id: str, properties: dict[str, Any]) -> None:
        """Merge stored person properties (decide uses them unless the request overrides them).

        Args:
            distinct_id: The person.
            properties: Properties merged into the stored ones.
        """
        persons.set_person(self.ctx.store, self.project_id, str(distinct_id), dict(properties))

    def add_persons(self, persons_: Iterable[tuple[Iterable[str], dict[str, Any], bool]]) -> None:
        """Store many persons at once, as if ingestion had merged their ids: `(distinct_ids, properties,
        is_identified)` each; the person id is the first id's deterministic one (PostHog's
        `uuidFromDistinctId`). For test and bench data; captured `$identify` / `$create_alias` events merge
        persons the service's way (see `persons.py`).

        Args:
            persons_: `(distinct_ids, properties, is_identified)` per person.
        """
        persons.bulk_set_person_ids(self.ctx.store, self.project_id, persons_)

    def set_query_row_limits(self, max_rows: int = 50_000, default_rows: int = 100) -> None:
        """Set the query endpoint's row cap and its default (PostHog's `MAX_SELECT_RETURNED_ROWS` 50,000 and
        `DEFAULT_RETURNED_ROWS` 100, `posthog/hogql/constants.py`): a small cap lets a test page past it.

        Args:
            max_rows: Rows a query answers at most.
            default_rows: Rows a query without LIMIT answers.
        """
        if max_rows < 1 or default_rows < 1:
            raise ValueError("set_query_row_limits: max_rows and default_rows must be at least 1")
        self.ctx.query_max_rows, self.ctx.query_default_rows = int(max_rows), int(default_rows)

    def set_group(self, type_name: str, key: str, properties: dict[str, Any]) -> None:
        """Merge stored group properties (the group type gets the next free index when new).

        Args:
            type_name: The group type, e.g. ``"company"``.
            key: The group key.
            properties: Properties merged into the stored ones.
        """
        persons.set_group(self.ctx.store, self.project_id, str(type_name), str(key), dict(properties))

    def add_organization(self, name: str = "Second organization") -> str:
        """Create another organization (no projects, no users) and return its id; the owner's keys do not
        belong to it, so it tests isolation (`scoped_organizations`, 404s).

        Args:
            name: The organization's name.

        Returns:
            Its id (a UUID).
        """
        return projects.add_organization(self.ctx.store, name, profile=self.profile)

    def add_project(
        self, name: str = "Second project", *, organization_id: str | None = None
    ) -> projects.SandboxProject:
        """Create another project (with its own `phc_` token) in the sandbox's organization, or in
        `organization_id`; returns its id, token and organization. For isolation tests: a key with
        `scoped_teams=[sb.project_id]` must not see it.

        Args:
            name: The project's name.
            organization_id: The organization. None: the sandbox's.

        Returns:
            The `SandboxProject` (id, token, organization, name).
        """
        return projects.add_project(self.ctx.store, name, organization_id or self.organization_id)

    def set_property_matching_version(self, version: int, *, project_id: int | None = None) -> None:
        """Set the project's `property_matching_version` (1 legacy, 2 explicit `exact`/`is_not` matching),
        as PostHog staff do with `POST /api/feature_flags_staff_team_config/set/`: the definitions bodies
        carry it and `/decide` / `/flags` evaluate with it. `project_id` defaults to the sandbox's project.

        Args:
            version: 1 or 2.
            project_id: The project. None: the sandbox's.
        """
        feature_flags.set_property_matching_version(
            self.ctx.store, self.project_id if project_id is None else int(project_id), version
        )

    # -- recordings and decide controls
    def add_recording(
        self,
        session_id: str | None = None,
        *,
        distinct_id: str = "user-0001",
        start_time: datetime | str | None = None,
        duration: int = 120,
        active_seconds: int | None = None,
        start_url: str = "https://shop.example.com/",
        counts: dict[str, int] | None = None,
        viewed: bool = False,
        activity_score: float | None = None,
        person_properties: dict[str, Any] | None = None,
        playlist: str | None = None,
        long_term: bool = False,
        urls: list[str] | None = None,
    ) -> str:
        """Store a recording as if it had been ingested (playlists only list ingested ones) and return its id.

        Defaults are realistic: started an hour ago, 120 s long, 2/3 active, click/keypress/mouse counts
        scaled to the duration; `counts` overrides `click_count`, `keypress_count`, `mouse_activity_count`,
        `console_log_count`, `console_warn_count`, `console_error_count`. The person is the stored one for
        `distinct_id` merged with `person_properties`. `playlist` (a collection's short_id) also adds it
        there, as `POST .../recordings/<id>/` would. A new uuid4 is used when `session_id` is None.
        `long_term=True` marks it persisted to long-term storage: a collection answers it even when it
        started more than a year ago (PostHog loads those by id from Postgres). `urls`: every URL the session
        visited (PostHog's `all_urls`, read by the "New URL" synthetic playlists; `start_url` by default).

        Args:
            session_id: The recording's id. None: a new uuid4.
            distinct_id: The person who was recorded.
            start_time: When it started (datetime or ISO text). None: an hour ago.
            duration: Its length in seconds.
            active_seconds: Seconds of activity. None: two thirds of ``duration``.
            start_url: The first page.
            counts: Overrides of the activity counts (``click_count``, ``console_error_count``...). None:
                scaled to the duration.
            viewed: Whether it counts as viewed.
            activity_score: Its activity score. None: derived.
            person_properties: Properties merged over the stored person's. None: the stored ones.
            playlist: A live collection's short id to add it to. None: none.
            long_term: Mark it stored long-term (answered whatever its age).
            urls: Every URL the session visited (PostHog's ``all_urls``, read by the "New URL"
                synthetic playlists). None: the start URL.

        Returns:
            The recording's session id.

        Raises:
            ValueError: A duplicate id, an unknown playlist or a bad value (nothing is written).
        """
        return playlists.insert_recording(
            self.ctx.store,
            self.project_id,
            session_id=session_id,
            distinct_id=distinct_id,
            start_time=start_time,
            duration=duration,
            active_seconds=active_seconds,
            start_url=start_url,
            counts=counts,
            viewed=viewed,
            activity_score=activity_score,
            person_properties=person_properties,
            playlist=playlist,
            long_term=long_term,
            urls=urls,
        )

    def set_switch(self, name: str, on: bool = True) -> None:
        """Turn a behaviour of a newer (or older) service build on or off: `new_url_playlists` (the cloud
        profile's dynamic "New URL" synthetic playlists, behind a feature flag in PostHog) or
        `no_plugin_api` (plugins, plugin configs and `pipeline_*` routes answer 404, as after PostHog PR
        #97440); `flag_evaluations_table` (HogQL serves `flag_evaluations` beside `events`, as for a team
        ingestion dual-writes, PostHog #72990 / #86291) or `flag_evaluations_only` (the table, and
        `$feature_flag_called` left out of HogQL's `events`, as FLAG_EVALUATIONS_ONLY: #88127). The sandbox
        stores flag calls in `events` either way; these switches change what the query endpoint shows.

        Args:
            name: One of ``analytics_nb.sandbox._context.SWITCHES``.
            on: Turn it on (True) or off.
        """
        from ._context import SWITCHES

        if name not in SWITCHES:
            raise ValueError(f"unknown switch {name!r}; use one of {', '.join(SWITCHES)}")
        if on:
            self.ctx.switches.add(name)
        else:
            self.ctx.switches.discard(name)

    def set_flags_quota_limited(self, limited: bool = True) -> None:
        """Make `/decide` and `/flags` answer as a billing-limited project (`quotaLimited: ["feature_flags"]`,
        no flags) until called with False.

        Args:
            limited: True to answer as quota-limited, False to stop.
        """
        decide.set_flags_quota_limited(self.ctx, limited)

    def set_flag_failures(self, keys: Iterable[str] | str = ()) -> None:
        """Make these flag keys fail to compute in `/decide` and `/flags` (`errorsWhileComputingFlags: true`,
        `failed: true` in detailed answers); the other flags are still answered. `()` clears it.

        Args:
            keys: The flag keys to fail (one key, or several); ``()`` clears.
        """
        decide.set_flag_failures(self.ctx, keys)

    # -- read-back
    def events(self) -> pd.DataFrame:
        """Captured events as a DataFrame: uuid, event, distinct_id, timestamp, properties (dict), ..."""
        return events.events_frame(self.ctx.store, self.project_id)

    def requests(self) -> pd.DataFrame:
        """The request log: method, path, query, status, body (text), at; no headers, keys redacted."""
        import pandas as pd

        entries = self.app.log.entries()
        return pd.DataFrame(
            {
                "method": pd.array([e.method for e in entries], dtype="str"),
                "path": pd.array([e.path for e in entries], dtype="str"),
                "query": pd.array([e.query for e in entries], dtype="str"),
                "status": pd.array([e.status for e in entries], dtype="Int64"),
                "body": pd.array([e.body for e in entries], dtype="str"),
                "at": pd.to_datetime(pd.Series([e.at for e in entries], dtype=object), utc=True).astype(
                    "datetime64[us, UTC]"
                ),
            }
        )

    def clear_requests(self) -> None:
        """Empty the request log."""
        self.app.log.clear()

    # -- lifecycle
    def stop(self) -> None:
        """Stop the server (waits for the thread) and close the store. Safe to call twice.

        Requests still held by a `delay=` fault are cut (their clients see a reset) instead of waited for."""
        self.app.closing = True
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        self._server = None
        with contextlib.suppress(Exception):
            self.ctx.store.close()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _serve(server: uvicorn.Server, sock: socket.socket) -> None:
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(server.serve(sockets=[sock]))
    finally:
        loop.close()
        sock.close()


def launch(
    *,
    seed: str = "demo",
    profile: str = "spec",
    db: str | None = None,
    port: int = 0,
    host: str = "127.0.0.1",
    rate_limits: dict[str, Any] | bool | None = None,
    geoip: bool = True,
    admin: bool = False,
    fault_seed: int = 0,
    rotate_key: bool = False,
) -> Sandbox:
    """Start a sandbox server in a background thread and return its handle (call `stop()` when done).

    The owner's key is stored in the database: a restart on the same `db` file has the same key;
    `rotate_key=True` makes a new one and revokes the old one.

    Args:
        seed: ``"demo"`` or ``"empty"``.
        profile: ``"spec"`` or ``"cloud"``.
        db: A SQLite file that keeps the data between runs. None: in memory.
        port: The port. 0: a free one.
        host: The bind address (keep 127.0.0.1).
        rate_limits: True/False, or ``{"playlists": per_minute, ...}``. None: the profile's.
        geoip: Add ``$geoip_*`` properties from an ``ip``.
        admin: Serve the fault endpoint ``/_sandbox/faults``.
        fault_seed: The seed of the fault draws.
        rotate_key: Replace the owner key stored in ``db``.

    Returns:
        The `Sandbox` handle.
    """
    app = create_app(
        db=db,
        seed=seed,
        profile=profile,
        rate_limits=rate_limits,
        geoip=geoip,
        admin=admin,
        fault_seed=fault_seed,
        rotate_key=rotate_key,
    )
    key = app.ctx.owner_key
    # proto=IPPROTO_TCP so that asyncio sets TCP_NODELAY on accepted connections (no 40 ms Nagle stalls)
    sock = socket.socket(
        socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP
    )
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        app.ctx.store.close()
        raise
    sock.listen(2048)
    actual_port = sock.getsockname()[1]
    app.allowed_hosts.add(host.strip("[]").lower())  # the bound name, besides 127.0.0.1 and localhost
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        loop="asyncio",
        http="auto",  # httptools when installed (a dependency), else h11
        timeout_keep_alive=30,
        backlog=2048,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=_serve, args=(server, sock), name=f"analytics-nb-sandbox:{actual_port}", daemon=True
    )
    thread.start()
    while not server.started:
        if not thread.is_alive():
            app.ctx.store.close()
            raise RuntimeError("the sandbox server failed to start (see the log above)")
        thread.join(0.005)
    url_host = f"[{host}]" if ":" in host else host
    sb = Sandbox(app, f"http://{url_host}:{actual_port}", key)
    sb._server, sb._thread = server, thread
    return sb


@contextlib.contextmanager
def start(
    seed: str = "demo",
    profile: str = "spec",
    db: str | None = None,
    port: int = 0,
    host: str = "127.0.0.1",
    rate_limits: dict[str, Any] | bool | None = None,
    geoip: bool = True,
    admin: bool = False,
    fault_seed: int = 0,
    mode: str = "thread",
    rotate_key: bool = False,
) -> Iterator[Sandbox]:
    """`with start(seed="demo") as sb:` a sandbox on a free port of 127.0.0.1, stopped on exit.

    `mode="process"` runs it in a child process instead (a :class:`ProcessSandbox`: no GIL sharing with the
    caller; faults through the admin endpoint; no `events()`/`requests()`/`set_person`).

    Args:
        seed: ``"demo"`` (playlists, flags, persons, Hog functions) or ``"empty"``.
        profile: ``"spec"`` (the published API) or ``"cloud"`` (adds PostHog Cloud's refusals and rate
            limits).
        db: A SQLite file that keeps the data between runs. None: in memory.
        port: The port. 0: a free one.
        host: The bind address (keep 127.0.0.1: the sandbox is for this machine).
        rate_limits: True/False, or ``{"playlists": per_minute, ...}``. None: the profile's.
        geoip: Add ``$geoip_*`` properties from an ``ip`` (needs the ``geo`` extra).
        admin: Serve the fault endpoint ``/_sandbox/faults`` (owner key only).
        fault_seed: The seed of the fault draws (a run is repeatable).
        mode: ``"thread"`` (in this process) or ``"process"`` (a child process).
        rotate_key: Replace the owner key stored in ``db`` (the old one stops working).

    Yields:
        The `Sandbox` (or `ProcessSandbox`) handle.
    """
    if mode == "process":
        if isinstance(rate_limits, dict):
            raise ValueError(
                "process mode takes rate_limits=None, True or False (custom rates: mode='thread')"
            )
        with launch_process(
            seed=seed,
            profile=profile,
            db=db,
            port=port,
            host=host,
            rate_limits=rate_limits,
            fault_seed=fault_seed,
            rotate_key=rotate_key,
        ) as psb:
            yield psb  # type: ignore[misc]
        return
    if mode != "thread":
        raise ValueError(f"mode must be 'thread' or 'process', got {mode!r}")
    sb = launch(
        seed=seed,
        profile=profile,
        db=db,
        port=port,
        host=host,
        rate_limits=rate_limits,
        geoip=geoip,
        admin=admin,
        fault_seed=fault_seed,
        rotate_key=rotate_key,
    )
    try:
        yield sb
    finally:
        sb.stop()


class RemoteFaults:
    """Fault controls of a sandbox in another process, through its `/_sandbox/faults` admin endpoint (which
    takes the owner's key)."""

    def __init__(self, url: str, owner_key: str) -> None:
        self._url = url + "/_sandbox/faults"
        self._headers = {"Authorization": f"Bearer {owner_key}"}

    def __repr__(self) -> str:
        return f"RemoteFaults(url={self._url!r})"

    def add(self, path: str = "*", status: int | None = None, rate: float = 1.0, **kw: Any) -> int:
        """Same arguments as :meth:`Faults.add`; returns the rule id."""
        import httpx

        resp = httpx.post(
            self._url,
            json={"path": path, "status": status, "rate": rate, **kw},
            headers=self._headers,
            timeout=10,
        )
        if resp.status_code != 201:
            raise ValueError(resp.json().get("detail", resp.text))
        return int(resp.json()["id"])

    def remove(self, fault_id: int) -> bool:
        """Remove one rule; False when no rule has that id."""
        import httpx

        return (
            httpx.delete(f"{self._url}/{int(fault_id)}", headers=self._headers, timeout=10).status_code == 204
        )

    def clear(self) -> None:
        """Remove every rule."""
        import httpx

        httpx.delete(self._url, headers=self._headers, timeout=10).raise_for_status()

    def list(self) -> list[dict[str, Any]]:
        """The rules as dicts."""
        import httpx

        return list(httpx.get(self._url, headers=self._headers, timeout=10).json()["results"])


class ProcessSandbox:
    """A sandbox running in a child process (`launch(mode="process")`), e.g. so a benchmark's clients do not
    share the server's GIL. It has the URL, keys and ids and remote fault controls; no direct store access."""

    def __init__(self, proc: subprocess.Popen[str], info: dict[str, str]) -> None:
        self._proc = proc
        self.url = info["url"]
        self._personal_api_key = info["personal_api_key"]
        self.project_api_key = info["project_api_key"]
        self.project_id = int(info["project_id"])
        self.organization_id = info["organization_id"]
        self.profile = info["profile"]
        self.faults = RemoteFaults(self.url, self._personal_api_key)

    def __repr__(self) -> str:
        return f"ProcessSandbox(url={self.url!r}, profile={self.profile!r}, pid={self._proc.pid})"

    @property
    def personal_api_key(self) -> str:
        """The owner's `phx_` key with scopes `["*"]`."""
        return self._personal_api_key

    def stop(self) -> None:
        """Stop the child process (SIGTERM, then SIGKILL after 10 s). Safe to call twice."""
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()

    def __enter__(self) -> ProcessSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def launch_process(
    *,
    seed: str = "demo",
    profile: str = "spec",
    db: str | None = None,
    port: int = 0,
    host: str = "127.0.0.1",
    rate_limits: bool | None = None,
    fault_seed: int = 0,
    rotate_key: bool = False,
) -> ProcessSandbox:
    """Start `analytics-nb sandbox` in a child process (admin endpoint on) and return its handle.

    Args:
        seed: ``"demo"`` or ``"empty"``.
        profile: ``"spec"`` or ``"cloud"``.
        db: A SQLite file. None: in memory.
        port: The port. 0: a free one.
        host: The bind address.
        rate_limits: True/False. None: the profile's.
        fault_seed: The seed of the fault draws.
        rotate_key: Replace the owner key stored in ``db``.

    Returns:
        The `ProcessSandbox` handle.
    """
    if isinstance(rate_limits, dict):
        raise ValueError(
            "process mode takes rate_limits=None, True or False (custom rates need mode='thread')"
        )
    limits = {None: "auto", True: "on", False: "off"}[rate_limits]
    cmd = [
        sys.executable, "-m", "analytics_nb.cli", "sandbox", "--port", str(port), "--host", host,
        "--seed", seed, "--profile", profile, "--admin", "--rate-limits", limits,
        "--fault-seed", str(fault_seed),
    ]  # fmt: skip
    if db:
        cmd += ["--db", db]
    if rotate_key:
        cmd.append("--rotate-key")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=None, text=True)
    info: dict[str, str] = {"profile": profile}
    assert proc.stdout is not None
    for line in proc.stdout:
        text = line.strip()
        if " running at " in text:
            info["url"] = text.rsplit(" ", 1)[-1]
        for name, key in (
            ("POSTHOG_PERSONAL_API_KEY=", "personal_api_key"),
            ("POSTHOG_PROJECT_API_KEY=", "project_api_key"),
            ("POSTHOG_PROJECT_ID=", "project_id"),
            ("organization id: ", "organization_id"),
        ):
            if text.startswith(name):
                info[key] = text[len(name) :]
        if text.startswith("Press Ctrl-C"):
            break
    if "organization_id" not in info or "url" not in info:
        proc.kill()
        proc.wait()
        raise RuntimeError(f"the sandbox process exited with status {proc.returncode} before it was ready")
    return ProcessSandbox(proc, info)

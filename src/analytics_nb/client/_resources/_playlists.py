"""Session recording playlists: list/filter, frames, create, update, soft delete, recordings."""

from __future__ import annotations

import asyncio
import builtins
import datetime as _dt
import enum
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, Unpack

from analytics_nb.client._core import Core, parse_model
from analytics_nb.client._pagination import iter_record_pages, record_value
from analytics_nb.client._resources._base import (
    PAGING,
    Pages,
    Paging,
    Resource,
    check_choice,
    check_filters,
    check_id,
    collect_frame,
    collect_models,
    filter_names,
    iso,
    iterate_models,
    paging_of,
    require_text,
)
from analytics_nb.client._resources._recordings import (
    CALLS_PER_MINUTE,
    MAX_RECORDINGS,
    NO_PERSONAL_KEYS,
    Incomplete,
    bulk_change,
    collect_recordings,
    session_id_list,
)
from analytics_nb.errors import ConflictError, NotFoundError, ValidationError
from analytics_nb.models import Playlist, Recording, RecordingsPage

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PlaylistFilters", "Playlists"]

ORDERS = ("last_modified_at", "-last_modified_at", "created_at", "-created_at", "name", "-name")
TYPES = ("collection", "filters")
COLLECTION_TYPES = ("synthetic", "custom")

SOFT_DELETE = (
    "Playlists cannot be hard-deleted: the service answers 405 to DELETE. They are soft-deleted instead: "
    "call client.playlists.archive(short_id) (PATCH deleted=true), and client.playlists.restore(short_id) "
    "brings one back."
)
SEND_FILTERS = (
    "Nothing was changed. The service requires a saved-filter playlist's filters with every update, and "
    "this client sends only the fields you give (resending filters it had read could undo another "
    "session's change). Pass filters=... (the filters the playlist should have, e.g. "
    "client.playlists.get(short_id).filters), or keep_filters=True to resend the stored ones (safe within "
    "this process; across processes a change it undoes is reported to its writer)."
)
RESEND_FILTERS = (
    "The service requires a saved-filter playlist's filters on every update, and this playlist's filters "
    "could not be read (it is soft-deleted); pass filters=... (e.g. from the playlist archive() returned)."
)


#: The longest a ``keep_filters`` read-then-write may take (from sending the read to the write's answer), and
#: how long after setting filters an update reads them back a second time. PostHog's playlist API has no
#: conditional update (no ETag / If-Match: ``SessionRecordingPlaylistSerializer.update`` in
#: ``posthog/session_recordings/session_recording_playlist_api.py`` writes whatever it is sent), so a
#: ``keep_filters`` update in another process that read the filters before this write can still land after
#: it, resending the old ones. It lands within this window of its read; reading back again once the window
#: has passed sees it, and the writer is told (``ConflictError``). A ``keep_filters`` update slower than
#: the window cannot be vouched for and warns.
SETTLE_SECONDS = 0.5


class _Unset(enum.Enum):
    """The default of ``update``'s fields: "not given" (``None`` means "clear this field")."""

    UNSET = "unset"

    def __repr__(self) -> str:
        return "<unset>"


_UNSET: Final[Any] = _Unset.UNSET

#: One lock per playlist (host, project, short_id) for the whole process: an update that must resend the
#: stored filters reads and writes under it, and so does an update that sets filters, so two clients in one
#: kernel (a panel and a cell) can never undo each other's change. Across processes see ``Playlists.update``.
_WRITE_LOCKS: dict[tuple[str, str, str], threading.Lock] = {}
_WRITE_LOCKS_GUARD = threading.Lock()


def _brief(value: Any, limit: int = 160) -> str:
    """A short JSON text of ``value`` for a message (cut with an ellipsis past ``limit`` characters)."""
    import json

    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _warn_slow_resend(short_id: str, took: float) -> None:
    """``keep_filters`` read and wrote back the filters over longer than ``SETTLE_SECONDS``: a filters
    change another process made in between may have been undone, and its writer may not have been told."""
    import warnings

    warnings.warn(
        f"keep_filters=True on playlist {short_id!r} took {took:.1f} s from reading the stored filters to "
        f"the write's answer, more than the {SETTLE_SECONDS} s within which another process's filters "
        "change is caught: one made meanwhile may have been undone. Check "
        "client.playlists.get(short_id).filters, or pass filters= explicitly.",
        UserWarning,
        stacklevel=6,
    )


def _write_lock(key: tuple[str, str, str]) -> threading.Lock:
    with _WRITE_LOCKS_GUARD:
        return _WRITE_LOCKS.setdefault(key, threading.Lock())


async def _acquire(lock: threading.Lock) -> None:
    """Take a thread lock from async code without blocking the event loop (and without leaking it when the
    waiting task is cancelled: it is polled, never handed to a worker thread)."""
    while not lock.acquire(blocking=False):
        await asyncio.sleep(0.002)


class PlaylistFilters(Paging, total=False):
    """Every list filter the real service understands, plus the paging controls (see ``Playlists.iter``)."""

    created_by: int | str
    short_id: str
    pinned: bool
    user: bool
    type: Literal["collection", "filters"]
    collection_type: Literal["synthetic", "custom"]
    date_from: str | _dt.datetime | _dt.date
    date_to: str | _dt.datetime | _dt.date
    search: str
    session_recording_id: str
    order: str


FILTERS = filter_names(PlaylistFilters) - PAGING
"""The service's list filters: the keys of ``PlaylistFilters`` other than the paging controls."""


def _recordings_count(counts: Any, kind: Any) -> Any:
    collection = counts.get("collection") if isinstance(counts, dict) else None
    saved = counts.get("saved_filters") if isinstance(counts, dict) else None
    items = collection.get("count") if isinstance(collection, dict) else None
    if isinstance(items, int) and items > 0:
        return items
    matched = saved.get("count") if isinstance(saved, dict) else None
    if kind == "filters":
        return matched if isinstance(matched, int) else None
    return 0 if isinstance(collection, dict) else None


def with_recordings_count(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with a ``recordings_count`` column (before ``filters``) from its ``recordings_counts``."""
    import pandas as pd

    if "recordings_counts" not in frame.columns or "recordings_count" in frame.columns:
        return frame
    kinds = frame["type"] if "type" in frame.columns else pd.Series([None] * len(frame), index=frame.index)
    values = [_recordings_count(c, k) for c, k in zip(frame["recordings_counts"], kinds, strict=True)]
    where = list(frame.columns).index("filters") if "filters" in frame.columns else len(frame.columns)
    frame.insert(where, "recordings_count", pd.Series(values, index=frame.index, dtype="Int64"))
    return frame


class Playlists(Resource):
    """``/api/projects/:id/session_recording_playlists/``: every endpoint, with the real service's rules."""

    def __init__(self, core: Core) -> None:
        super().__init__(core)
        self._archived_filters: dict[str, Any] = {}
        #: Ids this client added to each collection (and did not remove since): ``recordings`` fetches
        #: them by id past the service's 50-recording cap on a collection's answer.
        self._added: dict[tuple[str, str, str], dict[str, None]] = {}

    def _path(self, suffix: str = "") -> str:
        return self._core.project_path("session_recording_playlists/" + suffix)

    def _item_path(self, short_id: str, suffix: str = "") -> str:
        return self._path(f"{require_text('short_id', short_id)}/{suffix}")

    @staticmethod
    def _query(filters: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
        """Query parameters for the ``PlaylistFilters`` given (``created_by`` already an id), and whether
        ``pinned=False`` must be applied on this side (``short_id`` always is: see ``_pages``)."""
        created_by, short_id = filters.get("created_by"), filters.get("short_id")
        pinned, user = filters.get("pinned"), filters.get("user")
        type, collection_type = filters.get("type"), filters.get("collection_type")
        date_from, date_to, search = filters.get("date_from"), filters.get("date_to"), filters.get("search")
        session_recording_id, order = filters.get("session_recording_id"), filters.get("order")
        params: dict[str, Any] = {}
        if created_by is not None:
            try:
                params["created_by"] = check_id("created_by", created_by)
            except ValueError:
                raise ValueError(
                    f"created_by={created_by!r}: give a user's integer id or email. The id is the "
                    "created_by_id column of client.playlists.frame(), or the member's id in PostHog under "
                    "Settings > Organization > Members."
                ) from None
        if short_id is not None:
            params["short_id"] = require_text("short_id", short_id)
        unpinned_only = False
        if pinned is not None:
            if not isinstance(pinned, bool):
                raise ValueError(f"pinned must be True or False, got {pinned!r}.")
            # The service's `pinned` filter ignores its value (pinned=false still means "only pinned").
            if pinned:
                params["pinned"] = "true"
            else:
                unpinned_only = True
        if user is not None:
            if user is not True:
                raise ValueError(
                    "user=False cannot be expressed: the service's `user` filter ignores its value and "
                    "always means 'created by me'. Omit it, or filter the frame on created_by_id."
                )
            params["user"] = "true"
        if type is not None:
            params["type"] = check_choice("type", type, TYPES)
        if collection_type is not None:
            params["collection_type"] = check_choice("collection_type", collection_type, COLLECTION_TYPES)
        if date_from is not None:
            params["date_from"] = iso("date_from", date_from)
        if date_to is not None:
            params["date_to"] = iso("date_to", date_to)
        if search is not None:
            params["search"] = str(search)
        if session_recording_id is not None:
            params["session_recording_id"] = require_text("session_recording_id", session_recording_id)
        if order is not None:
            params["order"] = check_choice("order", order, ORDERS)
        return params, unpinned_only

    async def _pages(self, decoder: Callable[[bytes], Any] | None = None, **filters: Any) -> Pages:
        """The listing's pages (the one paging path); ``created_by`` given as an email is resolved first,
        and ``pinned=False`` and ``short_id`` are applied on this side too (``keep``). Unknown keywords are
        refused first (``check_filters``), before the email lookup sends anything."""
        check_filters("playlist", filters, PlaylistFilters)
        paging = paging_of(filters)
        filters = {key: value for key, value in filters.items() if key not in PAGING}
        filters = await self._resolve_created_by(filters)
        params, unpinned_only = self._query(filters)
        # The newest service's list() never applies `short_id` (it skips the filter backend), so it is
        # also checked here; older builds narrow the answer themselves.
        only_short_id = params.get("short_id")
        keep = None
        if unpinned_only or only_short_id is not None:

            def keep(record: Any) -> bool:
                if unpinned_only and record_value(record, "pinned"):
                    return False
                return only_short_id is None or record_value(record, "short_id") == only_short_id

        return iter_record_pages(
            self._core, self._path(), params=params, desc="playlists", decoder=decoder, keep=keep, **paging
        )

    async def _resolve_created_by(self, filters: dict[str, Any]) -> dict[str, Any]:
        """``created_by`` given as an email becomes the user's id, found among the users this client can
        see: the key's own user, then the authors and editors of the project's playlists."""
        email = filters.get("created_by")
        if not (isinstance(email, str) and "@" in email):
            return filters
        wanted = email.strip().lower()
        me = await self._core.get_json("/api/users/@me/")
        if isinstance(me, dict) and str(me.get("email", "")).lower() == wanted and me.get("id") is not None:
            return {**filters, "created_by": me["id"]}
        seen: set[str] = set()
        async for page in iter_record_pages(self._core, self._path(), desc="playlists"):
            for record in page:
                for field in ("created_by", "last_modified_by"):
                    user = record.get(field)
                    if isinstance(user, dict) and user.get("email"):
                        seen.add(str(user["email"]))
                        if str(user["email"]).lower() == wanted and user.get("id") is not None:
                            return {**filters, "created_by": user["id"]}
        raise ValueError(
            f"created_by={email!r}: no user with that email among the users this client can see (you, and "
            f"the {len(seen)} people who created or edited the project's playlists). Pass the user's "
            "integer id instead: it is the created_by_id column of client.playlists.frame(), or the "
            "member's id in PostHog under Settings > Organization > Members."
        )

    async def iter(self, **filters: Unpack[PlaylistFilters]) -> AsyncIterator[Playlist]:
        """Iterate over the (non-deleted) playlists matching the filters, fetching pages concurrently.

        Filters: ``created_by`` (user id, or email: resolved among the users this client can see),
        ``short_id`` (checked here too: the newest service ignores it), ``pinned`` (True: only pinned;
        False: only unpinned, applied here because the service ignores the value), ``user=True``
        (created by me), ``type`` ("collection"/"filters"), ``collection_type`` ("synthetic"/"custom"),
        ``date_from``/``date_to`` (last modified; datetime or text like "-7d"), ``search`` (name),
        ``session_recording_id``, ``order`` (``[-]last_modified_at|created_at|name``). Paging:
        ``page_size`` (<=500), ``offset``, ``max_items``.

        Args:
            **filters: The filters and paging keywords above (`PlaylistFilters`); none: every live playlist.

        Yields:
            `Playlist` models, in the service's order.
        """
        async for playlist in iterate_models(await self._pages(**filters), Playlist):
            yield playlist

    async def list(self, **filters: Unpack[PlaylistFilters]) -> builtins.list[Playlist]:
        """All playlists matching the filters (see ``iter``) as models.

        Args:
            **filters: The filters and paging keywords of ``iter``.

        Returns:
            The playlists as `Playlist` models.
        """
        return await collect_models(await self._pages(**filters), Playlist)

    async def frame(self, **filters: Unpack[PlaylistFilters]) -> pd.DataFrame:
        """A DataFrame of the playlists matching the filters (see ``iter``): the columns of
        ``analytics_nb.frames.playlists_frame``, plus ``recordings_count``.

        With the ``fast`` extra (msgspec) pages are decoded straight into compact rows
        (``frames.PLAYLIST_ROWS``), which halves the client's CPU; a page that does not fit them exactly is
        read as JSON dicts, and then the frame is built from dicts (the same columns, dtypes and values).

        ``recordings_count`` (Int64) is read from each row's ``recordings_counts`` (no request per
        playlist): a collection's item count (0 when the service says none), a saved filter's cached match
        count, NA when the service has not counted it (a saved filter its background job has not run on).
        It counts items, not loadable recordings: see ``recordings``.

        Args:
            **filters: The filters and paging keywords of ``iter``.

        Returns:
            One row per playlist.
        """
        from analytics_nb.frames import PLAYLIST_ROWS

        pages = await self._pages(decoder=PLAYLIST_ROWS.decode, **filters)
        return with_recordings_count(await collect_frame(pages, PLAYLIST_ROWS.frame))

    async def get(self, short_id: str) -> Playlist:
        """One playlist by ``short_id`` (soft-deleted ones raise NotFoundError).

        Args:
            short_id: The playlist's short id (the one in its URL).

        Returns:
            The `Playlist`.

        Raises:
            NotFoundError: No live playlist has this short id.
        """
        return parse_model(Playlist, await self._core.get_json(self._item_path(short_id)))

    async def create(
        self,
        type: Literal["collection", "filters"],
        name: str | None = None,
        *,
        derived_name: str | None = None,
        description: str | None = None,
        pinned: bool | None = None,
        filters: dict[str, Any] | None = None,
        deleted: bool | None = None,
        **extra: Any,
    ) -> Playlist:
        """Create a playlist: ``type="collection"`` (recordings added by hand) or ``"filters"``.

        A "filters" playlist (saved filters) needs a non-empty ``filters``; a collection must not have
        one. ``extra`` fields are sent as given.

        Args:
            type: ``"collection"`` (recordings added by hand) or ``"filters"`` (a saved search).
            name: The playlist's name. None: the service derives one.
            derived_name: The name the app shows when ``name`` is empty.
            description: A description. None: none.
            pinned: Pin it in the app's list. None: not pinned.
            filters: The saved filters (required for ``"filters"``, refused for a collection).
            deleted: Create it soft-deleted (rarely wanted). None: live.
            **extra: Other wire fields, sent as given.

        Returns:
            The created `Playlist`.

        Raises:
            ValidationError: The service refused a field (the message names it).
        """
        body: dict[str, Any] = {"type": check_choice("type", type, TYPES)}
        for key, value in (
            ("name", name),
            ("derived_name", derived_name),
            ("description", description),
            ("pinned", pinned),
            ("filters", filters),
            ("deleted", deleted),
        ):
            if value is not None:
                body[key] = value
        body.update(extra)
        return parse_model(Playlist, await self._core.send_json("POST", self._path(), body))

    async def update(
        self,
        short_id: str,
        *,
        name: str | None = _UNSET,
        derived_name: str | None = _UNSET,
        description: str | None = _UNSET,
        pinned: bool = _UNSET,
        filters: dict[str, Any] | None = _UNSET,
        deleted: bool = _UNSET,
        keep_filters: bool = False,
        **extra: Any,
    ) -> Playlist:
        """PATCH exactly the fields given (and only those); ``None`` clears a field.

        Nothing the caller did not give is sent, so an update can never write back a value another
        session changed meanwhile (issue 27 #3: resending the filters it had read undid concurrent filter
        changes made from other processes). The service refuses any update of a saved-filter
        ("filters") playlist that lacks its ``filters`` (posthog-notes §3.3): such an update is refused
        (``ValidationError`` saying so; nothing changed) unless you pass ``filters=`` (the filters it should
        have) or ``keep_filters=True``. ``keep_filters=True`` reads the stored filters and resends them: a
        safe within this process (one lock per playlist serializes it with every update that sets
        filters). Across processes PostHog has no conditional update, so a filters change landing between
        the read and the write is undone; its writer is then told: an update that sets filters reads them
        back at once and again ``SETTLE_SECONDS`` (0.5 s) later, past the longest read-then-write
        ``keep_filters`` allows (a slower one warns).

        An update that sets ``filters`` reads the playlist back right after writing and 0.5 s later; if its
        filters are no longer the ones written (another session wrote them meanwhile), it raises
        ``ConflictError`` naming the playlist and both filters, with the playlist as stored now in
        ``.current``.

        Args:
            short_id: The playlist's short id.
            name: The new name (None clears it). Not given: unchanged.
            derived_name: The new derived name. Not given: unchanged.
            description: The new description. Not given: unchanged.
            pinned: Pin or unpin. Not given: unchanged.
            filters: The saved filters to store. Not given: unchanged (a saved-filter playlist then needs
                ``keep_filters``).
            deleted: Soft-delete (True) or restore (False); see ``archive`` / ``restore``. Not given:
                unchanged.
            keep_filters: Read the stored filters and resend them, which the service requires for a
                saved-filter playlist.
            **extra: Other wire fields, sent as given.

        Returns:
            The updated `Playlist`.

        Raises:
            ValidationError: A saved-filter playlist updated without ``filters`` or ``keep_filters`` (nothing
                changed).
            ConflictError: Another session changed the filters meanwhile (``.current`` holds the stored
                playlist).
        """
        if "type" in extra:
            raise ValueError(
                "type cannot be changed after creation (the service ignores it); create a new playlist."
            )
        body = {
            key: value
            for key, value in (
                ("name", name),
                ("derived_name", derived_name),
                ("description", description),
                ("pinned", pinned),
                ("filters", filters),
                ("deleted", deleted),
            )
            if value is not _UNSET
        }
        body.update(extra)
        if not body:
            raise ValueError("update() needs at least one field to change, e.g. name='...'.")
        short_id = require_text("short_id", short_id)
        config = self._core.config
        lock = _write_lock((config.app_url, config.project_id, short_id))
        await _acquire(lock)
        try:
            return await self._update_locked(short_id, body, keep_filters=keep_filters)
        finally:
            lock.release()

    async def _stored_filters(self, short_id: str, body: dict[str, Any]) -> Any:
        """The filters ``keep_filters`` resends: read now, or (soft-deleted, unreadable) the ones this
        client archived; ``_UNSET`` when neither is known."""
        if body.get("deleted") is not False:  # a soft-deleted playlist cannot be read back
            try:
                current = await self._core.get_json(self._item_path(short_id))
            except NotFoundError:
                current = None
            if isinstance(current, dict) and current.get("type") == "filters":
                return current.get("filters")
        return self._archived_filters.get(short_id, _UNSET)

    async def _update_locked(self, short_id: str, body: dict[str, Any], *, keep_filters: bool) -> Playlist:
        resent = False
        started = time.monotonic()
        if "filters" not in body and keep_filters:
            stored = await self._stored_filters(short_id, body)
            if stored is not _UNSET:
                body["filters"] = stored
                resent = True
        try:
            result = await self._core.send_json("PATCH", self._item_path(short_id), body)
        except ValidationError as exc:
            if "filters" in body or "remove all filters" not in (exc.detail or ""):
                raise
            raise ValidationError(
                f"{exc} {RESEND_FILTERS if keep_filters else SEND_FILTERS}",
                status=exc.status,
                type=exc.type,
                code=exc.code,
                detail=exc.detail,
                attr=exc.attr,
                method=exc.method,
                url=exc.url,
            ) from None
        playlist = parse_model(Playlist, result)
        if resent and time.monotonic() - started > SETTLE_SECONDS:
            _warn_slow_resend(short_id, time.monotonic() - started)
        if "filters" in body and not resent and playlist.type == "filters" and not playlist.deleted:
            await self._check_filters_kept(short_id, body["filters"])
            await asyncio.sleep(max(0.0, SETTLE_SECONDS - (time.monotonic() - started)))
            await self._check_filters_kept(short_id, body["filters"])
        if playlist.deleted and playlist.type == "filters":
            self._archived_filters[short_id] = playlist.filters
        elif not playlist.deleted:
            self._archived_filters.pop(short_id, None)
        return playlist

    async def _check_filters_kept(self, short_id: str, written: Any) -> None:
        """Read the playlist back after setting its filters; a different value means another session wrote
        them meanwhile (perhaps resending older ones): raise ``ConflictError`` instead of returning as if
        the change held."""
        try:
            after = await self._core.get_json(self._item_path(short_id))
        except NotFoundError:
            return  # archived meanwhile: nothing to compare
        if not isinstance(after, dict) or after.get("filters") == written:
            return
        current = parse_model(Playlist, after)
        by = current.last_modified_by.email if current.last_modified_by else None
        raise ConflictError(
            f"The filters of playlist {short_id!r} were changed by another session right after this update "
            f"(last modified {current.last_modified_at or 'just now'}{' by ' + by if by else ''}), so your "
            f"filters did not stay: they are now {_brief(current.filters)}, not the "
            f"{_brief(written)} you wrote (another process may have resent the ones it had read). Look at "
            "the playlist as it is now (this error's .current, or "
            "client.playlists.get(short_id)) and apply your change again if it is still wanted.",
            current=current,
            method="PATCH",
            url=self._core.scrub(self._core.url(self._item_path(short_id))),
        )

    async def archive(self, short_id: str) -> Playlist:
        """Soft-delete a playlist (PATCH ``deleted=true``); it disappears from list/get until restored.

        Args:
            short_id: The playlist's short id.

        Returns:
            The archived `Playlist`.
        """
        return await self.update(short_id, deleted=True, keep_filters=True)

    async def restore(self, short_id: str, *, filters: dict[str, Any] | None = None) -> Playlist:
        """Undo ``archive`` (PATCH ``deleted=false``); pass ``filters`` for a saved-filter playlist archived
        by another session (the service needs them and hides the playlist until it is restored).

        Args:
            short_id: The playlist's short id.
            filters: The filters of a saved-filter playlist archived elsewhere. None: read them (possible when
                this client archived it).

        Returns:
            The restored `Playlist`.
        """
        if filters is not None:
            return await self.update(short_id, deleted=False, filters=filters)
        return await self.update(short_id, deleted=False, keep_filters=True)

    async def delete(self, short_id: str) -> None:
        """Playlists cannot be hard-deleted: this asks the service and raises MethodNotAllowedError (405)
        explaining the soft delete (use ``archive``).

        Args:
            short_id: The playlist's short id.

        Raises:
            MethodNotAllowedError: Always (the service answers 405).
        """
        await self._core.request("DELETE", self._item_path(short_id), explain={405: SOFT_DELETE})

    async def recordings_page(self, short_id: str, **params: Any) -> RecordingsPage:
        """One ``GET .../recordings/`` answer ``{results, has_next, version}``; ``params`` go to the query.

        Args:
            short_id: The playlist's short id.
            **params: Query parameters, sent as given.

        Returns:
            The `RecordingsPage`.
        """
        body = await self._core.get_json(self._item_path(short_id, "recordings/"), params=params or None)
        return parse_model(RecordingsPage, body)

    async def _recording_records(
        self,
        short_id: str,
        session_ids: Any,
        incomplete: Incomplete,
        params: dict[str, Any],
        max_items: int | None = MAX_RECORDINGS,
    ) -> builtins.list[dict[str, Any]]:
        short_id = require_text("short_id", short_id)
        playlist = await self._core.get_json(self._item_path(short_id))
        if not isinstance(playlist, dict):
            playlist = {"short_id": short_id}
        known = builtins.list(self._added.get(self._key(short_id), {}))
        if session_ids is not None:
            known = session_id_list(session_ids) + known
        return await collect_recordings(
            self._core,
            playlist,
            self._item_path(short_id),
            self._core.project_path("session_recordings/"),
            known_ids=known,
            incomplete=incomplete,
            params=params,
            max_items=max_items,
        )

    async def recordings(
        self,
        short_id: str,
        *,
        session_ids: Any = None,
        incomplete: Incomplete = "warn",
        max_items: int | None = MAX_RECORDINGS,
        **params: Any,
    ) -> builtins.list[Recording]:
        """Every recording of the playlist the service can give, as models; never silently fewer.

        A collection is answered by the service with one query capped at 50 recordings that ignores
        ``limit``/``offset`` (plus its items in long-term storage, and only recordings started within a
        year). So that a long collection is not cut short, recordings of ids this client added
        (``add_recordings``/``add_recording``) and of ``session_ids`` (a list, or a DataFrame with a
        ``session_id`` column) are also fetched by id through ``/session_recordings/``, which pages. When
        fewer recordings than the playlist's items come back, a ``IncompleteRecordingsWarning`` names how
        many are missing and why (``incomplete="raise"``: ``IncompleteRecordingsError``; ``"ignore"``).

        A saved filter is answered from the request alone (its stored filters are not read by the
        service; left out, the query covers the last 3 days, 50 a page): its stored ``filters``
        (``date_from``, ``duration``, ``properties``, ...) are sent as the query, ``params`` over them, and it
        is paged with ``offset``; a stored part this client cannot convert (a non-empty ``filter_group``) is
        named in a warning. Synthetic playlists are walked by slice.

        Args:
            short_id: The playlist's short id.
            session_ids: Recording ids known to be in the collection (a list, or a frame with ``session_id``),
                fetched by id so none is cut off. None: the ids this client added.
            incomplete: What to do when some recordings could not be fetched: ``"warn"``, ``"raise"`` or
                ``"ignore"``.
            max_items: The most recordings a saved filter is read to (default 10,000); a service still saying
                more follow there is an ``IncompleteRecordingsWarning`` naming the cap. None: no cap.
            **params: Query parameters for saved-filter playlists.

        Returns:
            The `Recording` models.

        Raises:
            IncompleteRecordingsError: ``incomplete="raise"`` and some are missing (``.recordings`` holds the
                rest).
        """
        records = await self._recording_records(short_id, session_ids, incomplete, params, max_items)
        return [parse_model(Recording, r) for r in records]

    async def recordings_frame(
        self,
        short_id: str,
        *,
        session_ids: Any = None,
        incomplete: Incomplete = "warn",
        max_items: int | None = MAX_RECORDINGS,
        **params: Any,
    ) -> pd.DataFrame:
        """The playlist's recordings as a DataFrame (``analytics_nb.frames.recordings_frame``), fetched and
        checked as ``recordings`` does (a warning or error when some are missing).

        Args:
            short_id: The playlist's short id.
            session_ids: Recording ids known to be in the collection, as for ``recordings``.
            incomplete: ``"warn"``, ``"raise"`` or ``"ignore"`` when some could not be fetched.
            max_items: The most recordings a saved filter is read to, as for ``recordings``.
            **params: Query parameters for saved-filter playlists.

        Returns:
            One row per recording.
        """
        from analytics_nb.frames import recordings_frame

        records = await self._recording_records(short_id, session_ids, incomplete, params, max_items)
        return recordings_frame(records)

    async def add_recording(self, short_id: str, session_recording_id: str) -> dict[str, Any]:
        """Add a recording to a collection playlist (idempotent); answers ``{"success": True}``.

        PostHog refuses personal API keys here (403, explained in the error): see ``add_recordings``.

        Args:
            short_id: The collection's short id.
            session_recording_id: The recording's session id.

        Returns:
            The service's answer, ``{"success": True}``.

        Raises:
            PermissionDeniedError: A personal API key (PostHog refuses them here).
        """
        session_recording_id = require_text("session_recording_id", session_recording_id)
        path = self._item_path(short_id, f"recordings/{session_recording_id}/")
        body = await self._core.send_json(
            "POST", path, None, idempotent=True, explain={403: NO_PERSONAL_KEYS}
        )
        self._remember(short_id, [session_recording_id])
        return body if isinstance(body, dict) else {"success": True}

    async def remove_recording(self, short_id: str, session_recording_id: str) -> dict[str, Any]:
        """Remove a recording from a playlist; answers ``{"success": True}`` (personal keys: see
        ``add_recordings``).

        Args:
            short_id: The playlist's short id.
            session_recording_id: The recording's session id.

        Returns:
            The service's answer, ``{"success": True}``.
        """
        session_recording_id = require_text("session_recording_id", session_recording_id)
        path = self._item_path(short_id, f"recordings/{session_recording_id}/")
        body = await self._core.send_json("DELETE", path, None, explain={403: NO_PERSONAL_KEYS})
        self._forget(short_id, [session_recording_id])
        return body if isinstance(body, dict) else {"success": True}

    async def add_recordings(
        self,
        short_id: str,
        session_ids: Any,
        *,
        column: str | None = None,
        calls_per_minute: float = CALLS_PER_MINUTE,
    ) -> pd.DataFrame:
        """Add many recordings to a collection through ``recordings/bulk_add`` (20 ids a call, spaced under
        the playlist API's 240/minute throttle) and return a per-id report: ``session_id``, ``batch``,
        ``status`` ("added", "already in playlist", or "added or already in playlist" when the service's
        counts cannot tell, "duplicate", "failed", "not sent") and ``detail``.

        ``session_ids``: a list (or Series) of ids, or a DataFrame with a ``session_id`` column (``column=``
        names another). PostHog refuses personal API keys for this action on every current build (the
        error explains it; nothing is changed); the sandbox's spec profile allows it. A failure after the
        first call keeps the report (those ids "failed"/"not sent") and warns.

        Args:
            short_id: The collection's short id.
            session_ids: The recording ids: a list or Series, or a DataFrame with a ``session_id`` column.
            column: The frame's column holding the ids. None: ``session_id``.
            calls_per_minute: Pace of the bulk calls (the service throttles the playlist API at 240 a minute).

        Returns:
            One report row per id.
        """
        return await self._bulk(short_id, session_ids, column, calls_per_minute, "add")

    async def remove_recordings(
        self,
        short_id: str,
        session_ids: Any,
        *,
        column: str | None = None,
        calls_per_minute: float = CALLS_PER_MINUTE,
    ) -> pd.DataFrame:
        """Remove many recordings from a playlist through ``recordings/bulk_delete`` (20 a call, paced as
        ``add_recordings``); per-id report with ``status`` "removed", "not in playlist", "removed or not in
        playlist", "duplicate", "failed" or "not sent". Same personal-key refusal as ``add_recordings``.

        Args:
            short_id: The playlist's short id.
            session_ids: The recording ids: a list or Series, or a DataFrame with a ``session_id`` column.
            column: The frame's column holding the ids. None: ``session_id``.
            calls_per_minute: Pace of the bulk calls.

        Returns:
            One report row per id.
        """
        return await self._bulk(short_id, session_ids, column, calls_per_minute, "remove")

    async def _bulk(
        self,
        short_id: str,
        session_ids: Any,
        column: str | None,
        calls_per_minute: float,
        action: Literal["add", "remove"],
    ) -> pd.DataFrame:
        """``add_recordings`` / ``remove_recordings``: the bulk calls, then the ids the service took (not
        "failed" or "not sent") remembered or forgotten."""
        ids = session_id_list(session_ids, column)
        endpoint = "recordings/bulk_add/" if action == "add" else "recordings/bulk_delete/"
        report = await bulk_change(
            self._core, self._item_path(short_id, endpoint), action, ids, calls_per_minute=calls_per_minute
        )
        done = [
            i
            for i, s in zip(report["session_id"], report["status"], strict=True)
            if s not in ("failed", "not sent")
        ]
        (self._remember if action == "add" else self._forget)(short_id, done)
        return report

    def _key(self, short_id: str) -> tuple[str, str, str]:
        config = self._core.config
        return (config.app_url, str(config.project_id), str(short_id).strip())

    def _remember(self, short_id: str, ids: builtins.list[str]) -> None:
        known = self._added.setdefault(self._key(short_id), {})
        for session_id in ids:
            known[str(session_id)] = None

    def _forget(self, short_id: str, ids: builtins.list[str]) -> None:
        known = self._added.get(self._key(short_id), {})
        for session_id in ids:
            known.pop(str(session_id), None)

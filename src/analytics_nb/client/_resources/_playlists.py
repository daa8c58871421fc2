"""Session recording playlists: list/filter, frames, create, update, soft delete, recordings."""

from __future__ import annotations

import asyncio
import builtins
import datetime as _dt
import enum
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, TypedDict, Unpack

from analytics_nb.client._core import Core, parse_model
from analytics_nb.client._pagination import iter_record_pages, record_value
from analytics_nb.client._resources._base import (
    Pages,
    Resource,
    check_choice,
    check_id,
    collect_frame,
    collect_models,
    iso,
    iterate_models,
    require_text,
)
from analytics_nb.errors import ConflictError, NotFoundError
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
NO_PERSONAL_KEYS = (
    "PostHog Cloud refuses personal API keys for adding or removing recordings in a playlist "
    "(the action does not support personal API key access): do it in the PostHog app, or against a "
    "self-hosted instance or the sandbox that allows it."
)
RESEND_FILTERS = (
    "The service requires a saved-filter playlist's filters on every update, and this playlist's filters "
    "could not be read (it is soft-deleted); pass filters=... (e.g. from the playlist archive() returned)."
)


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


def _write_lock(key: tuple[str, str, str]) -> threading.Lock:
    with _WRITE_LOCKS_GUARD:
        return _WRITE_LOCKS.setdefault(key, threading.Lock())


async def _acquire(lock: threading.Lock) -> None:
    """Take a thread lock from async code without blocking the event loop (and without leaking it when the
    waiting task is cancelled: it is polled, never handed to a worker thread)."""
    while not lock.acquire(blocking=False):
        await asyncio.sleep(0.002)


class PlaylistFilters(TypedDict, total=False):
    """Every list filter the real service understands, plus paging controls (see ``Playlists.iter``)."""

    created_by: int
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
    page_size: int
    offset: int
    max_items: int | None


PAGING = frozenset({"page_size", "offset", "max_items"})
FILTERS = frozenset(PlaylistFilters.__annotations__) - PAGING
"""The service's list filters: the keys of ``PlaylistFilters`` other than the paging controls."""


class Playlists(Resource):
    """``/api/projects/:id/session_recording_playlists/``: every endpoint, with the real service's rules."""

    def __init__(self, core: Core) -> None:
        super().__init__(core)
        self._archived_filters: dict[str, Any] = {}

    def _path(self, suffix: str = "") -> str:
        return self._core.project_path("session_recording_playlists/" + suffix)

    def _item_path(self, short_id: str, suffix: str = "") -> str:
        return self._path(f"{require_text('short_id', short_id)}/{suffix}")

    @staticmethod
    def _query(filters: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
        """Query parameters for the ``PlaylistFilters`` given, and whether ``pinned=False`` must be applied
        on this side."""
        unknown = sorted(set(filters) - FILTERS)
        if unknown:
            raise ValueError(
                f"unknown playlist filter(s) {', '.join(unknown)}; use {', '.join(sorted(FILTERS))}, "
                "page_size, offset or max_items."
            )
        created_by, short_id = filters.get("created_by"), filters.get("short_id")
        pinned, user = filters.get("pinned"), filters.get("user")
        type, collection_type = filters.get("type"), filters.get("collection_type")
        date_from, date_to, search = filters.get("date_from"), filters.get("date_to"), filters.get("search")
        session_recording_id, order = filters.get("session_recording_id"), filters.get("order")
        params: dict[str, Any] = {}
        if created_by is not None:
            params["created_by"] = check_id("created_by", created_by)
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

    def _pages(self, decoder: Callable[[bytes], Any] | None = None, **filters: Any) -> Pages:
        """The listing's pages (the one paging path), ``pinned=False`` applied on this side."""
        paging = {key: filters.pop(key) for key in PAGING & set(filters)}
        params, unpinned_only = self._query(filters)
        keep = (lambda record: not record_value(record, "pinned")) if unpinned_only else None
        return iter_record_pages(
            self._core, self._path(), params=params, desc="playlists", decoder=decoder, keep=keep, **paging
        )

    async def iter(self, **filters: Unpack[PlaylistFilters]) -> AsyncIterator[Playlist]:
        """Iterate over the (non-deleted) playlists matching the filters, fetching pages concurrently.

        Filters: ``created_by`` (user id), ``short_id``, ``pinned`` (True: only pinned; False: only unpinned,
        applied here because the service ignores the value), ``user=True`` (created by me), ``type``
        ("collection"/"filters"), ``collection_type`` ("synthetic"/"custom"), ``date_from``/``date_to``
        (last modified; datetime or text like "-7d"), ``search`` (name), ``session_recording_id``, ``order``
        (``[-]last_modified_at|created_at|name``). Paging: ``page_size`` (<=500), ``offset``, ``max_items``.
        """
        async for playlist in iterate_models(self._pages(**filters), Playlist):
            yield playlist

    async def list(self, **filters: Unpack[PlaylistFilters]) -> builtins.list[Playlist]:
        """All playlists matching the filters (see ``iter``) as models."""
        return await collect_models(self._pages(**filters), Playlist)

    async def frame(self, **filters: Unpack[PlaylistFilters]) -> pd.DataFrame:
        """A DataFrame of the playlists matching the filters (see ``iter``; columns as
        ``analytics_nb.frames.playlists_frame`` gives them).

        With the ``fast`` extra (msgspec) pages are decoded straight into compact rows
        (``frames.PLAYLIST_ROWS``), which halves the client's CPU; a page that does not fit them exactly is
        read as JSON dicts, and then the frame is built from dicts (the same columns, dtypes and values).
        """
        from analytics_nb.frames import PLAYLIST_ROWS

        return await collect_frame(self._pages(decoder=PLAYLIST_ROWS.decode, **filters), PLAYLIST_ROWS.frame)

    async def get(self, short_id: str) -> Playlist:
        """One playlist by ``short_id`` (soft-deleted ones raise NotFoundError)."""
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
        **extra: Any,
    ) -> Playlist:
        """PATCH the fields given (and only those); ``None`` clears a field.

        The real service refuses any update of a saved-filter ("filters") playlist that does not carry its
        ``filters`` (posthog-notes §3.3), so when ``filters`` is not given the stored filters are read and
        sent along, the one field resent without being asked. So that the resend cannot undo a concurrent
        change of the filters:

        * in this process, the read and the write of the resend, and any update that sets ``filters``, run
          under one lock per playlist (two clients in one kernel never undo each other);
        * across processes (no conditional update exists on this API), an update that sets ``filters`` reads
          the playlist back right after writing; if its filters are no longer the ones written (another
          session wrote them meanwhile, possibly resending older filters), it raises ``ConflictError`` with
          the playlist as stored now in ``.current``: look at it and apply your change again.
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
            return await self._update_locked(short_id, body)
        finally:
            lock.release()

    async def _update_locked(self, short_id: str, body: dict[str, Any]) -> Playlist:
        explain: dict[int, str] = {}
        resent = False
        if "filters" not in body:
            stored: Any = _UNSET
            if body.get("deleted") is not False:  # a soft-deleted playlist cannot be read back
                try:
                    current = await self._core.get_json(self._item_path(short_id))
                except NotFoundError:
                    current = None
                if isinstance(current, dict) and current.get("type") == "filters":
                    stored = current.get("filters")
            if stored is _UNSET and short_id in self._archived_filters:
                stored = self._archived_filters[short_id]
            if stored is not _UNSET:
                body["filters"] = stored
                resent = True
            else:
                explain[400] = RESEND_FILTERS
        result = await self._core.send_json("PATCH", self._item_path(short_id), body, explain=explain or None)
        playlist = parse_model(Playlist, result)
        if "filters" in body and not resent and playlist.type == "filters" and not playlist.deleted:
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
            "filters did not stay. Look at the playlist as it is now (this error's .current, or "
            "client.playlists.get(short_id)) and apply your change again if it is still wanted.",
            current=current,
            method="PATCH",
            url=self._core.scrub(self._core.url(self._item_path(short_id))),
        )

    async def archive(self, short_id: str) -> Playlist:
        """Soft-delete a playlist (PATCH ``deleted=true``); it disappears from list/get until restored."""
        return await self.update(short_id, deleted=True)

    async def restore(self, short_id: str, *, filters: dict[str, Any] | None = None) -> Playlist:
        """Undo ``archive`` (PATCH ``deleted=false``); pass ``filters`` for a saved-filter playlist archived
        by another session (the service needs them and hides the playlist until it is restored)."""
        if filters is not None:
            return await self.update(short_id, deleted=False, filters=filters)
        return await self.update(short_id, deleted=False)

    async def delete(self, short_id: str) -> None:
        """Playlists cannot be hard-deleted: this asks the service and raises MethodNotAllowedError (405)
        explaining the soft delete (use ``archive``)."""
        await self._core.request("DELETE", self._item_path(short_id), explain={405: SOFT_DELETE})

    async def recordings_page(self, short_id: str, **params: Any) -> RecordingsPage:
        """One ``GET .../recordings/`` answer ``{results, has_next, version}``; ``params`` go to the query."""
        body = await self._core.get_json(self._item_path(short_id, "recordings/"), params=params or None)
        return parse_model(RecordingsPage, body)

    async def _recording_records(self, short_id: str, **params: Any) -> builtins.list[dict[str, Any]]:
        records: builtins.list[dict[str, Any]] = []
        seen: set[Any] = set()
        query = dict(params)
        for _ in range(10_000):
            body = await self._core.get_json(self._item_path(short_id, "recordings/"), params=query or None)
            results = body.get("results", []) if isinstance(body, dict) else []
            fresh = [r for r in results if not (isinstance(r, dict) and r.get("id") in seen)]
            seen.update(r.get("id") for r in fresh if isinstance(r, dict))
            records.extend(fresh)
            if not (isinstance(body, dict) and body.get("has_next")) or not fresh:
                break
            query["offset"] = int(query.get("offset", 0)) + len(results)
        return records

    async def recordings(self, short_id: str, **params: Any) -> builtins.list[Recording]:
        """Every recording in the playlist (all pages while ``has_next``), as models."""
        return [parse_model(Recording, r) for r in await self._recording_records(short_id, **params)]

    async def recordings_frame(self, short_id: str, **params: Any) -> pd.DataFrame:
        """The playlist's recordings as a DataFrame (``analytics_nb.frames.recordings_frame``)."""
        from analytics_nb.frames import recordings_frame

        return recordings_frame(await self._recording_records(short_id, **params))

    async def add_recording(self, short_id: str, session_recording_id: str) -> dict[str, Any]:
        """Add a recording to a collection playlist (idempotent); answers ``{"success": True}``.

        PostHog Cloud refuses personal API keys here (403, explained in the error).
        """
        path = self._item_path(
            short_id, f"recordings/{require_text('session_recording_id', session_recording_id)}/"
        )
        body = await self._core.send_json(
            "POST", path, None, idempotent=True, explain={403: NO_PERSONAL_KEYS}
        )
        return body if isinstance(body, dict) else {"success": True}

    async def remove_recording(self, short_id: str, session_recording_id: str) -> dict[str, Any]:
        """Remove a recording from a playlist; answers ``{"success": True}`` (Cloud: see add_recording)."""
        path = self._item_path(
            short_id, f"recordings/{require_text('session_recording_id', session_recording_id)}/"
        )
        body = await self._core.send_json("DELETE", path, None, explain={403: NO_PERSONAL_KEYS})
        return body if isinstance(body, dict) else {"success": True}

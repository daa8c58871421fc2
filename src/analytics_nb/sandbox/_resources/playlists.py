"""Session recording playlists: the 8 endpoints under `/api/projects/:id/session_recording_playlists/`, with
the real service's rules (posthog-notes §3), and the ingested recordings they list.

Parts: schema (`SCHEMA`), storage functions (all SQL), request model, thin handlers, the endpoint table
(`ENDPOINTS`) and the demo seed (`seed`).
"""

from __future__ import annotations

import random
import re
import secrets
import sqlite3
import string
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response

from .._auth import UNSUPPORTED, User, users_by_id
from .._context import SandboxContext, context_of
from .._endpoints import Endpoint, Query, Refusal
from .._errors import APIError, not_found, server_error, validation_error
from .._http import (
    MAX_INT_PARAM,
    SafeJSONResponse,
    int_param,
    page_links,
    page_response,
    parse_json_body,
    read_body,
)
from .._store import Store, dumps, loads, now_iso
from .._validation import Bool, Char, Choice, JSONObject, RequestModel, validate
from .synthetic_playlists import (
    NEW_URL_SWITCH,
    Synthetic,
    all_synthetic,
    find_synthetic,
    serialize_synthetic,
    synthetic_items,
)

SCOPE_READ = "session_recording_playlist:read"
SCOPE_WRITE = "session_recording_playlist:write"
THROTTLE = "playlists"
DEFAULT_LIMIT = 100
MAX_LIMIT = 500
#: Orders `?order=` accepts (each also with `-`); anything else means the default `-last_modified_at`.
ORDER_FIELDS = ("last_modified_at", "created_at", "name")
MATERIAL_FIELDS = ("name", "description", "filters")
#: `SessionRecordingListFromQuery.SESSION_RECORDINGS_DEFAULT_LIMIT`: a `RecordingsQuery` without `limit`
#: answers at most this many recordings from ClickHouse (`has_next` says more matched).
RECORDINGS_DEFAULT_LIMIT = 50
#: A collection's recordings are queried with `date_from="-1y"` (`session_recording_playlist_api.py`,
#: `recordings`): ClickHouse rows that started earlier are not answered (long-term-stored ones still are).
COLLECTION_WINDOW = timedelta(days=365)
#: `RecordingsQuery` defaults where the request leaves a field out
#: (`frontend/src/queries/schema/schema-general.ts`, `RecordingsQuery`: `date_from` "-3d", `order`
#: "start_time", `order_direction` "DESC"; no `limit` means the default limit above). A saved filter's
#: recordings and `/session_recordings/` are read this way.
RECORDINGS_DEFAULT_DATE_FROM = "-3d"
#: `VALID_RECORDING_ORDERS` (schema-general.ts) and the column the sandbox sorts each by (`recording_ttl`
#: grows with `start_time`: every sandbox recording keeps 30 days).
RECORDING_ORDERS = {
    "duration": "recording_duration",
    "recording_duration": "recording_duration",
    "inactive_seconds": "inactive_seconds",
    "active_seconds": "active_seconds",
    "start_time": "start_time",
    "console_error_count": "console_error_count",
    "click_count": "click_count",
    "keypress_count": "keypress_count",
    "mouse_activity_count": "mouse_activity_count",
    "activity_score": "activity_score",
    "recording_ttl": "start_time",
}
#: The bulk endpoints take at most this many ids a call (`bulk_add_recordings`, `bulk_delete_recordings`).
BULK_MAX = 20
_ALNUM = string.ascii_letters + string.digits

#: Columns newer than some database files (`_seeding.open_store` adds them when missing).
ADDED_COLUMNS = (("recordings", "lts", "INTEGER NOT NULL DEFAULT 0"), ("recordings", "urls", "TEXT"))

SCHEMA = """
CREATE TABLE IF NOT EXISTS recordings (
    project_id INTEGER NOT NULL,
    session_id TEXT NOT NULL,
    distinct_id TEXT NOT NULL,
    start_time TEXT NOT NULL,
    end_time TEXT NOT NULL,
    recording_duration INTEGER NOT NULL,
    active_seconds INTEGER NOT NULL,
    inactive_seconds INTEGER NOT NULL,
    click_count INTEGER NOT NULL DEFAULT 0,
    keypress_count INTEGER NOT NULL DEFAULT 0,
    mouse_activity_count INTEGER NOT NULL DEFAULT 0,
    console_log_count INTEGER NOT NULL DEFAULT 0,
    console_warn_count INTEGER NOT NULL DEFAULT 0,
    console_error_count INTEGER NOT NULL DEFAULT 0,
    start_url TEXT,
    viewed INTEGER NOT NULL DEFAULT 0,
    activity_score REAL,
    person TEXT,
    -- 1: persisted to long-term storage (PostHog's `SessionRecording.object_storage_path` set): loaded from
    -- Postgres by id, outside the one-year window and the 50-row cap of the ClickHouse query.
    lts INTEGER NOT NULL DEFAULT 0,
    -- Every URL the session visited (`session_replay_events.all_urls`), a JSON list; NULL: only `start_url`.
    urls TEXT,
    PRIMARY KEY (project_id, session_id)
);
CREATE TABLE IF NOT EXISTS playlists (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id INTEGER NOT NULL,
    short_id TEXT NOT NULL,
    name TEXT,
    derived_name TEXT,
    description TEXT NOT NULL DEFAULT '',
    pinned INTEGER NOT NULL DEFAULT 0,
    deleted INTEGER NOT NULL DEFAULT 0,
    filters TEXT,
    type TEXT,
    created_at TEXT NOT NULL,
    created_by INTEGER,
    last_modified_at TEXT NOT NULL,
    last_modified_by INTEGER,
    UNIQUE (project_id, short_id)
);
-- The listing's orders (ties by id), so a page is read from an index instead of sorting every playlist of the
-- project for each page (at 10,000 playlists the sort was most of a page's server time).
CREATE INDEX IF NOT EXISTS playlists_by_modified ON playlists(project_id, deleted, last_modified_at DESC, id);
CREATE INDEX IF NOT EXISTS playlists_by_created ON playlists(project_id, deleted, created_at DESC, id);
CREATE TABLE IF NOT EXISTS playlist_items (
    playlist_id INTEGER NOT NULL REFERENCES playlists(id),
    session_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (playlist_id, session_id)
);
"""


def generate_short_id(rng: Any = None) -> str:
    """8 characters from [A-Za-z0-9], as the real `generate_short_id`."""
    if rng is None:
        return "".join(secrets.choice(_ALNUM) for _ in range(8))
    return "".join(rng.choice(_ALNUM) for _ in range(8))


# -- storage: reads ---------------------------------------------------------------------------------------
def _counts(collection_count: int, watched: int) -> dict[str, Any]:
    return {
        "saved_filters": {
            "count": None,
            "has_more": None,
            "watched_count": None,
            "increased": None,
            "last_refreshed_at": None,
        },
        "collection": {"count": collection_count or None, "watched_count": watched},
    }


def _item_counts(store: Store, playlist_ids: list[int]) -> dict[int, tuple[int, int]]:
    if not playlist_ids:
        return {}
    marks = ",".join("?" * len(playlist_ids))
    rows = store.query(
        f"SELECT i.playlist_id, COUNT(*) AS n, COALESCE(SUM(r.viewed), 0) AS w FROM playlist_items i "
        f"LEFT JOIN recordings r ON r.session_id = i.session_id WHERE i.playlist_id IN ({marks}) "
        f"GROUP BY i.playlist_id",
        playlist_ids,
    )
    return {r["playlist_id"]: (int(r["n"]), int(r["w"])) for r in rows}


def serialize(row: sqlite3.Row, users: dict[int, dict[str, Any]], counts: tuple[int, int]) -> dict[str, Any]:
    """The playlist in the serializer's shape."""
    return {
        "id": row["id"],
        "short_id": row["short_id"],
        "name": row["name"],
        "derived_name": row["derived_name"],
        "description": row["description"],
        "pinned": bool(row["pinned"]),
        "created_at": row["created_at"],
        "created_by": users.get(row["created_by"]),
        "deleted": bool(row["deleted"]),
        "filters": loads(row["filters"]),
        "last_modified_at": row["last_modified_at"],
        "last_modified_by": users.get(row["last_modified_by"]),
        "recordings_counts": _counts(*counts),
        "type": row["type"],
        "is_synthetic": False,
    }


def _serialize_many(store: Store, rows: list[sqlite3.Row]) -> list[dict[str, Any]]:
    users = users_by_id(store)
    counts = _item_counts(store, [r["id"] for r in rows])
    return [serialize(r, users, counts.get(r["id"], (0, 0))) for r in rows]


_REL = re.compile(r"^-?(\d+)([hdwmyHM])(Start|End)?$")
#: What `relative_date_parse` (posthog/utils.py) looks for anywhere in a text it cannot read as a date.
_REL_ANYWHERE = re.compile(r"-?(\d+)?([hdwmqysHDWMQY])(Start|End)?")
_UNIT_DAYS = {"d": 1, "w": 7, "m": 30, "q": 91, "y": 365}
_UNIT_SECONDS = {"h": 3600, "M": 60, "s": 1}


def parse_date(raw: str, attr: str, *, lenient: bool = False) -> str:
    """A relative (`-7d`, `-24h`, `-2w`, `-1m`, `-1y`, `-30M`) or ISO date as the stored timestamp format.

    `lenient`: text that is neither reads as `relative_date_parse` (posthog/utils.py) reads it: the first
    `<number><unit>` anywhere in it, else now (the playlist list's `date_from` / `date_to`, which
    `_filter_request` in session_recording_playlist_api.py passes to it unchecked: `date_from=` is now)."""
    now = datetime.now(UTC)
    text = raw.strip()
    match = _REL.match(text)
    if lenient and not match and text not in ("today", "dStart") and not _is_iso_date(text):
        return _stored_stamp(_relative_anywhere(text, now, raw, attr))
    if text in ("today", "dStart"):
        when = now.replace(hour=0, minute=0, second=0, microsecond=0)
    elif match:
        n, unit = int(match.group(1)), match.group(2)
        if n > 100_000:
            raise validation_error(f"Invalid date {raw!r}: the relative offset is too large.", attr)
        delta = {
            "h": timedelta(hours=n),
            "H": timedelta(hours=n),
            "M": timedelta(minutes=n),
            "d": timedelta(days=n),
            "w": timedelta(weeks=n),
            "m": timedelta(days=30 * n),
            "y": timedelta(days=365 * n),
        }[unit]
        when = now - delta
    else:
        try:
            when = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise validation_error(
                f"Invalid date {raw!r}: use a relative date such as -7d or an ISO 8601 date.", attr
            ) from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
    return _stored_stamp(when)


def _stored_stamp(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _is_iso_date(text: str) -> bool:
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _relative_anywhere(text: str, now: datetime, raw: str, attr: str) -> datetime:
    """`relative_date_parse`'s reading of a text that is no date: now minus the first `<n><unit>` in it
    (a unit without a number: now), else now."""
    found = _REL_ANYWHERE.search(text)
    if found is None or found.group(1) is None:
        return now
    n, unit = int(found.group(1)), found.group(2)
    if n > 100_000:
        raise validation_error(f"Invalid date {raw!r}: the relative offset is too large.", attr)
    if unit in _UNIT_SECONDS:
        return now - timedelta(seconds=n * _UNIT_SECONDS[unit])
    return now - timedelta(days=n * _UNIT_DAYS[unit.lower()])


def _get_row(store: Store, project_id: int, short_id: str, *, include_deleted: bool = False) -> sqlite3.Row:
    row = store.query_one(
        "SELECT * FROM playlists WHERE project_id=? AND short_id=?"
        + ("" if include_deleted else " AND deleted=0"),
        (project_id, short_id),
    )
    if row is None:
        raise not_found()
    return row


def _synthetic_of(ctx: SandboxContext, project_id: int, short_id: str) -> Synthetic | None:
    """The synthetic playlist `short_id` names, in the cloud profile (which serves them) only."""
    if not ctx.is_cloud or not short_id.startswith("synthetic-"):
        return None
    return find_synthetic(ctx.store, project_id, short_id, new_urls=NEW_URL_SWITCH in ctx.switches)


@dataclass(frozen=True)
class ListFilters:
    """The listing's query parameters, checked."""

    created_by: int | None = None
    short_id: str | None = None
    user_id: int | None = None
    pinned: bool = False
    type: str | None = None
    date_from: str | None = None
    date_to: str | None = None
    search: str | None = None
    session_recording_id: str | None = None
    custom_only: bool = False  # collection_type=synthetic asks for synthetic only: no stored row qualifies
    order_field: str = "last_modified_at"
    descending: bool = True


def _where(project_id: int, f: ListFilters) -> tuple[str, list[Any]]:
    where = ["project_id=?", "deleted=0"]
    params: list[Any] = [project_id]
    if f.created_by is not None:
        where.append("created_by=?")
        params.append(f.created_by)
    if f.short_id is not None:
        where.append("short_id=?")
        params.append(f.short_id)
    if f.user_id is not None:
        where.append("created_by=?")
        params.append(f.user_id)
    if f.pinned:
        where.append("pinned=1")
    if f.type is not None:
        where.append("type=?")
        params.append(f.type)
    if f.date_from is not None:
        where.append("last_modified_at>?")
        params.append(f.date_from)
    if f.date_to is not None:
        where.append("last_modified_at<?")
        params.append(f.date_to)
    if f.search is not None:
        where.append(
            "(LOWER(COALESCE(name,'')) LIKE ? ESCAPE '\\' "
            "OR LOWER(COALESCE(derived_name,'')) LIKE ? ESCAPE '\\')"
        )
        escaped = f.search.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        params += [f"%{escaped}%", f"%{escaped}%"]
    if f.session_recording_id is not None:
        where.append("id IN (SELECT playlist_id FROM playlist_items WHERE session_id=?)")
        params.append(f.session_recording_id)
    if f.custom_only:
        where.append("0")
    return " AND ".join(where), params


def _order_sql(f: ListFilters) -> str:
    direction = "DESC" if f.descending else "ASC"
    if f.order_field == "name":
        return f"LOWER(COALESCE(NULLIF(name,''), derived_name, '')) {direction}, id ASC"
    return f"{f.order_field} {direction}, id ASC"


def count_playlists(store: Store, project_id: int, f: ListFilters) -> int:
    """How many live playlists match."""
    where, params = _where(project_id, f)
    row = store.query_one(f"SELECT COUNT(*) AS n FROM playlists WHERE {where}", params)
    return int(row["n"]) if row else 0


def find_playlists(
    store: Store, project_id: int, f: ListFilters, *, limit: int | None = None, offset: int = 0
) -> list[sqlite3.Row]:
    """Live playlists matching `f`, in the listing's order (ties by id), one page when `limit` is given."""
    where, params = _where(project_id, f)
    sql = f"SELECT * FROM playlists WHERE {where} ORDER BY {_order_sql(f)}"
    if limit is not None:
        sql += " LIMIT ? OFFSET ?"
        params += [limit, offset]
    return store.query(sql, params)


def user_exists(store: Store, user_id: int) -> bool:
    """Whether a user id exists (the `created_by` filter is a choice among users)."""
    return store.query_one("SELECT id FROM users WHERE id=?", (user_id,)) is not None


@dataclass(frozen=True)
class RecordingsQuery:
    """The parts of PostHog's `RecordingsQuery` the sandbox evaluates, read from a request's query string
    with the schema's defaults (see `RECORDINGS_DEFAULT_DATE_FROM`)."""

    date_from: str
    date_to: str | None
    limit: int
    offset: int
    order_column: str
    descending: bool
    #: (column, SQL operator, number) from `having_predicates` on the duration columns (the app puts a saved
    #: filter's `duration` there); other predicates and property/event filters are not evaluated here.
    having: tuple[tuple[str, str, float], ...] = ()

    @classmethod
    def from_params(cls, q: Any) -> RecordingsQuery:
        """Bad values are 400s naming the field (`order` and `order_direction` are enums in the schema)."""
        order = q.get("order") or "start_time"
        if order not in RECORDING_ORDERS:
            raise validation_error(
                f"order must be one of {', '.join(RECORDING_ORDERS)} (got {order!r}).", "order"
            )
        direction = (q.get("order_direction") or "DESC").upper()
        if direction not in ("ASC", "DESC"):
            raise validation_error("order_direction must be ASC or DESC.", "order_direction")
        limit = int_param(q.get("limit"), RECORDINGS_DEFAULT_LIMIT, name="limit") or RECORDINGS_DEFAULT_LIMIT
        return cls(
            date_from=parse_date(q.get("date_from") or RECORDINGS_DEFAULT_DATE_FROM, "date_from"),
            date_to=parse_date(q["date_to"], "date_to") if q.get("date_to") else None,
            limit=limit,
            offset=int_param(q.get("offset"), 0, name="offset"),
            order_column=RECORDING_ORDERS[order],
            descending=direction == "DESC",
            having=_having(q.get("having_predicates")),
        )


_HAVING_COLUMNS = {
    "duration": "recording_duration",
    "active_seconds": "active_seconds",
    "inactive_seconds": "inactive_seconds",
}
_HAVING_OPERATORS = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<=", "exact": "="}


def _having(raw: str | None) -> tuple[tuple[str, str, float], ...]:
    """`having_predicates` (a JSON list of recording property filters) as SQL comparisons, for the duration
    columns; a value that is not such a list is a 400 naming the field."""
    if not raw:
        return ()
    try:
        value = loads(raw)
    except ValueError:
        value = None
    if not isinstance(value, list) or not all(isinstance(p, dict) for p in value):
        raise validation_error(
            'having_predicates must be a JSON list of filters, e.g. [{"type": "recording", "key": '
            '"duration", "operator": "gt", "value": 60}]',
            "having_predicates",
        )
    out = []
    for predicate in value:
        column = _HAVING_COLUMNS.get(str(predicate.get("key")))
        operator = _HAVING_OPERATORS.get(predicate.get("operator") or "exact")
        number = predicate.get("value")
        if isinstance(number, list) and len(number) == 1:
            number = number[0]
        if column and operator and isinstance(number, int | float) and not isinstance(number, bool):
            out.append((column, operator, float(number)))
    return tuple(out)


def query_recordings(
    store: Store, project_id: int, query: RecordingsQuery, ids: list[str] | None = None
) -> tuple[list[sqlite3.Row], bool]:
    """What `list_recordings_from_query` answers for `query`: with `ids`, those recordings (see
    `recordings_for_ids`); without (or an empty list, which the service treats as none given), the project's
    recordings within the dates, in the query's order, `limit` of them from `offset`, `has_next` when more
    matched. `filter_test_accounts` changes nothing here: the sandbox's team has no test-account filters."""
    if ids:
        return recordings_for_ids(
            store,
            project_id,
            ids,
            date_from=query.date_from,
            date_to=query.date_to,
            limit=query.limit,
            offset=query.offset,
        )
    where, params = "project_id=? AND start_time>=?", [project_id, query.date_from]
    if query.date_to is not None:
        where, params = where + " AND start_time<=?", [*params, query.date_to]
    for column, operator, number in query.having:
        where, params = f"{where} AND {column} {operator} ?", [*params, number]
    direction = "DESC" if query.descending else "ASC"
    # One more row than asked tells `has_next`; a limit at SQLite's maximum cannot take the extra one.
    fetch = min(query.limit, MAX_INT_PARAM - 1) + 1
    rows = store.query(
        f"SELECT * FROM recordings WHERE {where} "
        f"ORDER BY {query.order_column} {direction}, session_id {direction} LIMIT ? OFFSET ?",
        [*params, fetch, query.offset],
    )
    return rows[: query.limit], len(rows) > query.limit


def playlist_recordings_rows(
    store: Store, project_id: int, playlist: sqlite3.Row, params: Any
) -> tuple[list[sqlite3.Row], bool]:
    """Recordings of a playlist and whether more follow (`session_recording_playlist_api.py`, `recordings`).

    A collection: one `RecordingsQuery(session_ids=<all items, newest added first>, date_from="-1y")` whose
    `limit`/`offset` are not the request's, so at most `RECORDINGS_DEFAULT_LIMIT` of its ingested
    recordings come back (the newest by start time), plus every long-term-stored one (see
    `recordings_for_ids`); the request's parameters are not read. A saved filter: the request's own query
    (`params` read as a `RecordingsQuery`, with the schema's defaults:
    the last 3 days, 50 a page, newest first) over its pinned items if it has any, else over every
    recording of the project. The playlist's stored `filters` are not read there: the PostHog app converts
    them into the request's query, so a caller that sends none gets the defaults."""
    items = store.query(
        "SELECT session_id FROM playlist_items WHERE playlist_id=? ORDER BY created_at DESC, rowid DESC",
        (playlist["id"],),
    )
    ids = [r["session_id"] for r in items]
    if playlist["type"] == "filters":
        return query_recordings(store, project_id, RecordingsQuery.from_params(params), ids)
    return collection_recordings(store, project_id, ids)


def collection_recordings(store: Store, project_id: int, ids: list[str]) -> tuple[list[sqlite3.Row], bool]:
    """The service's collection query over `ids`: `date_from="-1y"`, the default limit, no offset."""
    window_start = (datetime.now(UTC) - COLLECTION_WINDOW).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return recordings_for_ids(store, project_id, ids, date_from=window_start)


def recordings_for_ids(
    store: Store,
    project_id: int,
    ids: list[str],
    *,
    date_from: str | None,
    date_to: str | None = None,
    limit: int = RECORDINGS_DEFAULT_LIMIT,
    offset: int = 0,
) -> tuple[list[sqlite3.Row], bool]:
    """What `list_recordings_from_query` answers for a query naming `session_ids`
    (`posthog/session_recordings/session_recording_api.py`): the long-term-stored ones are loaded by id
    from Postgres (no date window, no limit); the others come from ClickHouse within `date_from`/`date_to`,
    newest first, `limit` of them from `offset`, and `has_next` says more matched; the whole answer is in
    the order of `ids`. Ids with no stored recording are simply absent, as in the service."""
    unique = list(dict.fromkeys(ids))
    if not unique:
        return [], False
    rows = _recordings_by_ids(store, project_id, unique)
    persisted = [r for r in rows if r["lts"]]
    recent = [
        r
        for r in rows
        if not r["lts"]
        and (date_from is None or r["start_time"] >= date_from)
        and (date_to is None or r["start_time"] <= date_to)
    ]
    page = recent[offset : offset + limit]
    position = {session_id: i for i, session_id in enumerate(unique)}
    answered = sorted(persisted + page, key=lambda r: position[r["session_id"]])
    return answered, len(recent) > offset + limit


# -- storage: writes -----------------------------------------------------------------------------------------
_COLUMNS = ("name", "derived_name", "description", "pinned", "deleted", "filters")


def _column_value(name: str, value: Any) -> Any:
    if name == "filters":
        return dumps(value if value is not None else {})
    if name in ("pinned", "deleted"):
        return int(bool(value))
    return value


def insert_playlist(
    store: Store, project_id: int, kind: str, fields: dict[str, Any], user_id: int
) -> sqlite3.Row:
    """Insert a playlist (a fresh unique short id) in one transaction; returns the stored row."""
    now = now_iso()
    with store.transaction() as conn:
        for _ in range(20):
            short_id = generate_short_id()
            taken = conn.execute(
                "SELECT 1 FROM playlists WHERE project_id=? AND short_id=?", (project_id, short_id)
            ).fetchone()
            if taken is None:
                break
        cur = conn.execute(
            "INSERT INTO playlists(project_id, short_id, name, derived_name, description, pinned, deleted, "
            "filters, type, created_at, created_by, last_modified_at, last_modified_by) VALUES "
            "(?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                project_id,
                short_id,
                fields.get("name"),
                fields.get("derived_name"),
                fields.get("description") if fields.get("description") is not None else "",
                int(bool(fields.get("pinned", False))),
                int(bool(fields.get("deleted", False))),
                dumps(fields.get("filters") if fields.get("filters") is not None else {}),
                kind,
                now,
                user_id,
                now,
                user_id,
            ),
        )
        row: sqlite3.Row = conn.execute("SELECT * FROM playlists WHERE id=?", (cur.lastrowid,)).fetchone()
    return row


def update_playlist_row(
    store: Store, playlist_id: int, fields: dict[str, Any], *, modified_by: int | None
) -> sqlite3.Row:
    """Apply `fields` (column -> value) in one transaction; `modified_by` also moves `last_modified_*`."""
    sets = [f"{name}=?" for name in fields if name in _COLUMNS]
    params: list[Any] = [_column_value(name, v) for name, v in fields.items() if name in _COLUMNS]
    if modified_by is not None:
        sets += ["last_modified_at=?", "last_modified_by=?"]
        params += [now_iso(), modified_by]
    with store.transaction() as conn:
        if sets:
            conn.execute(f"UPDATE playlists SET {', '.join(sets)} WHERE id=?", [*params, playlist_id])
        row: sqlite3.Row = conn.execute("SELECT * FROM playlists WHERE id=?", (playlist_id,)).fetchone()
    return row


def add_item(store: Store, playlist_id: int, session_id: str) -> bool:
    """Add a recording to a collection (idempotent); True when it was not there yet."""
    with store.transaction() as conn:
        cur = conn.execute(
            "INSERT OR IGNORE INTO playlist_items(playlist_id, session_id, created_at) VALUES (?,?,?)",
            (playlist_id, session_id, now_iso()),
        )
        return cur.rowcount > 0


def remove_item(store: Store, playlist_id: int, session_id: str) -> bool:
    """Remove a recording from a playlist; False when it was not there."""
    with store.transaction() as conn:
        cur = conn.execute(
            "DELETE FROM playlist_items WHERE playlist_id=? AND session_id=?", (playlist_id, session_id)
        )
        return cur.rowcount > 0


# -- request model -------------------------------------------------------------------------------------------
class PlaylistWrite(RequestModel):
    """Body of POST (create) and PATCH/PUT (partial update); `type` only counts on create."""

    #: The OpenAPI document (safety): `type` required; a collection without filters, a saved filter with
    #: some (`SessionRecordingPlaylistSerializer.create`, session_recording_playlist_api.py).
    create_schema: ClassVar[dict[str, Any]] = {
        "required": ["type"],
        "anyOf": [
            {
                "properties": {
                    "type": {"enum": ["collection"]},
                    "filters": {"type": "object", "maxProperties": 0, "nullable": True},
                }
            },
            {
                "required": ["filters"],
                "properties": {
                    "type": {"enum": ["filters"]},
                    "filters": {"type": "object", "minProperties": 1},
                },
            },
        ],
    }

    type: Choice("collection", "filters", allow_null=True) = None  # type: ignore[valid-type]
    name: Char(max_length=400) = None  # type: ignore[valid-type]
    derived_name: Char(max_length=400) = None  # type: ignore[valid-type]
    description: Char(allow_null=False) = None  # type: ignore[valid-type]
    pinned: Bool() = None  # type: ignore[valid-type]
    deleted: Bool() = None  # type: ignore[valid-type]
    filters: JSONObject() = None  # type: ignore[valid-type]
    create_in_folder: Char() = Field(None, alias="_create_in_folder")  # type: ignore[valid-type]

    def columns(self) -> dict[str, Any]:
        """The sent fields that are stored columns."""
        return {k: v for k, v in self.sent().items() if k in _COLUMNS}


# -- handlers ------------------------------------------------------------------------------------------------
def _list_filters(request: Request, store: Store, user: User, *, newest: bool = False) -> ListFilters:
    q = request.query_params
    created_by = None
    if q.get("created_by"):  # an empty value is no filter, as django-filter reads it (safety: conformance)
        raw = q["created_by"]
        if not (raw.isdigit() and int(raw) < 2**63 and user_exists(store, int(raw))):
            raise APIError(
                400,
                "validation_error",
                "invalid_choice",
                "Select a valid choice. That choice is not one of the available choices.",
                "created_by",
            )
        created_by = int(raw)
    order = q.get("order", "")
    field = order.lstrip("-")
    descending = order.startswith("-")
    if field not in ORDER_FIELDS:
        field, descending = "last_modified_at", True
    return ListFilters(
        created_by=created_by,
        # The newest `list()` never runs the DjangoFilterBackend, so `short_id` is not applied there.
        short_id=None if newest else q.get("short_id"),
        user_id=user.id if "user" in q else None,
        pinned="pinned" in q,
        type=q["type"] if q.get("type") in ("collection", "filters") else None,
        date_from=parse_date(q["date_from"], "date_from", lenient=True) if "date_from" in q else None,
        date_to=parse_date(q["date_to"], "date_to", lenient=True) if "date_to" in q else None,
        search=q.get("search"),
        session_recording_id=q.get("session_recording_id"),
        custom_only=q.get("collection_type") == "synthetic",
        order_field=field,
        descending=descending,
    )


def _page_params(request: Request) -> tuple[int, int]:
    q = request.query_params
    limit = int_param(q.get("limit"), DEFAULT_LIMIT, name="limit") or DEFAULT_LIMIT
    return min(limit, MAX_LIMIT), int_param(q.get("offset"), 0, name="offset")


def _orjson() -> Any:
    try:
        import orjson
    except ImportError:
        return None
    return orjson


_ORJSON = _orjson()
_ORJSON_DUMPS = _ORJSON.dumps if _ORJSON is not None else None

#: Digits as b"0"/"0", everything else as a space: 19 digits in a row may be an integer beyond 64 bits, which
#: orjson would read as a float (the standard library keeps it exact).
_DIGITS = str.maketrans({chr(i): "0" if 48 <= i <= 57 else " " for i in range(128)})
_LONG_RUN = "0" * 19


def _json_column(text: str | None) -> Any:
    """A stored JSON column's value, read by orjson (a tenth of `json.loads`'s time) when it reads it the same
    way: text orjson refuses (Infinity or NaN from older builds, a lone surrogate) or could read differently
    (an integer beyond 64 bits) goes to `json.loads`, as before."""
    if text is None:
        return None
    if _ORJSON is not None and _LONG_RUN not in text.translate(_DIGITS):
        try:
            return _ORJSON.loads(text)
        except ValueError:
            pass
    return loads(text)


#: The listing's columns, in the order `_fast_results` unpacks them.
_PAGE_COLUMNS = (
    "id, short_id, name, derived_name, description, pinned, created_at, created_by, deleted, filters, "
    "last_modified_at, last_modified_by, type"
)


def find_page_rows(
    store: Store, project_id: int, f: ListFilters, *, limit: int, offset: int
) -> list[sqlite3.Row]:
    """One page of the listing (`find_playlists`'s rows and order), only the columns the listing shows."""
    where, params = _where(project_id, f)
    sql = f"SELECT {_PAGE_COLUMNS} FROM playlists WHERE {where} ORDER BY {_order_sql(f)} LIMIT ? OFFSET ?"
    return store.query(sql, [*params, limit, offset])


def _fast_results(store: Store, rows: list[sqlite3.Row]) -> list[dict[str, Any]]:
    """The page's playlists in `serialize`'s shape (same fields, same order, same values), built for orjson:
    each user and each `recordings_counts` is encoded once per page (an `orjson.Fragment` shared by every
    row that names it) and `filters` is read by orjson. A page of 500 took 5.6 ms of server CPU through
    `serialize` (json.loads per row, fresh nested dicts per row); this takes about a quarter of that."""
    assert _ORJSON is not None
    fragment, encode = _ORJSON.Fragment, _ORJSON.dumps
    users = {uid: fragment(encode(user)) for uid, user in users_by_id(store).items()}
    counts = _item_counts(store, [r[0] for r in rows])
    counts_json: dict[tuple[int, int], Any] = {}
    out = []
    for (
        pid,
        short_id,
        name,
        derived,
        description,
        pinned,
        created_at,
        created_by,
        deleted,
        filters,
        modified_at,
        modified_by,
        kind,
    ) in rows:
        pair = counts.get(pid, (0, 0))
        recordings_counts = counts_json.get(pair)
        if recordings_counts is None:
            recordings_counts = counts_json[pair] = fragment(encode(_counts(*pair)))
        out.append(
            {
                "id": pid,
                "short_id": short_id,
                "name": name,
                "derived_name": derived,
                "description": description,
                "pinned": bool(pinned),
                "created_at": created_at,
                "created_by": users.get(created_by),
                "deleted": bool(deleted),
                "filters": _json_column(filters),
                "last_modified_at": modified_at,
                "last_modified_by": users.get(modified_by),
                "recordings_counts": recordings_counts,
                "type": kind,
                "is_synthetic": False,
            }
        )
    return out


def _page(request: Request, results: list[Any], *, count: int, limit: int, offset: int) -> Response:
    """One listing page, encoded by orjson when it is installed (a tenth of `json`'s time: at 500 playlists a
    page, encoding was half of the page's server time). What orjson refuses (a lone surrogate, an integer
    beyond 64 bits, deep nesting: rows older builds may have stored) goes through the repairing encoder;
    NaN becomes null either way."""
    if _ORJSON_DUMPS is None:
        return page_response(request, results, count=count, limit=limit, offset=offset)
    nxt, prev = page_links(request, count=count, limit=limit, offset=offset)
    payload = {"count": count, "next": nxt, "previous": prev, "results": results}
    try:
        body = _ORJSON_DUMPS(payload)
    except TypeError:  # orjson.JSONEncodeError
        return SafeJSONResponse(payload)
    return Response(body, media_type="application/json")


def _stored_page(
    request: Request, store: Store, project_id: int, f: ListFilters, *, limit: int, offset: int
) -> Response:
    """A page of stored playlists: with orjson, the lean rows through `_fast_results`; a page orjson cannot
    encode (values older builds stored) is served as before, through `serialize` and the repairing
    encoder, so its answer is the same either way."""
    count = count_playlists(store, project_id, f)
    if _ORJSON is not None:
        rows = find_page_rows(store, project_id, f, limit=limit, offset=offset)
        nxt, prev = page_links(request, count=count, limit=limit, offset=offset)
        try:
            payload = {"count": count, "next": nxt, "previous": prev, "results": _fast_results(store, rows)}
            return Response(_ORJSON.dumps(payload), media_type="application/json")
        except TypeError:  # orjson.JSONEncodeError: a lone surrogate, an integer beyond 64 bits, deep nesting
            pass
    rows = find_playlists(store, project_id, f, limit=limit, offset=offset)
    return _page(request, _serialize_many(store, rows), count=count, limit=limit, offset=offset)


async def list_playlists(request: Request) -> Response:
    """GET: one page of live playlists (paged in SQL) with the real filters, order allow-list and clamping;
    the cloud profile mixes in its six synthetic collections."""
    ctx = context_of(request)
    user = ctx.authenticate_personal(request, SCOPE_READ, throttle=THROTTLE)
    project_id = ctx.project_id_of(request)
    q = request.query_params
    f = _list_filters(request, ctx.store, user, newest=ctx.is_cloud)
    limit, offset = _page_params(request)
    # `_filter_synthetic_playlists`: user, created_by, pinned, type=filters and collection_type=custom drop
    # them; search matches name or description; short_id, dates and session_recording_id do not apply.
    include_synthetic = (
        ctx.is_cloud
        and q.get("collection_type") != "custom"
        and not ({"user", "created_by", "pinned"} & set(q.keys()))
        and q.get("type") != "filters"
    )
    if not include_synthetic:
        return _stored_page(request, ctx.store, project_id, f, limit=limit, offset=offset)
    results = _serialize_many(ctx.store, find_playlists(ctx.store, project_id, f))
    synth = [
        serialize_synthetic(ctx.store, project_id, entry)
        for entry in all_synthetic(ctx.store, project_id, new_urls=NEW_URL_SWITCH in ctx.switches)
    ]
    if f.search is not None:
        needle = f.search.lower()
        synth = [s for s in synth if needle in s["name"].lower() or needle in s["description"].lower()]
    if f.order_field == "name":
        merged = results + synth
        merged.sort(key=lambda p: (p["name"] or p["derived_name"] or "").lower(), reverse=f.descending)
        results = merged
    elif f.descending:
        results = synth + results
    else:
        results = results + synth
    page = results[offset : offset + limit]
    return page_response(request, page, count=len(results), limit=limit, offset=offset)


async def create_playlist(request: Request) -> Response:
    """POST: create; `type` required; collection without filters, saved filter with filters."""
    ctx = context_of(request)
    body = await read_body(request)
    user = ctx.authenticate_personal(request, SCOPE_WRITE, throttle=THROTTLE)
    project_id = ctx.project_id_of(request)
    data = validate(PlaylistWrite, parse_json_body(request, body))
    kind = data.type
    if kind is None:
        raise validation_error("Must provide a valid playlist type: either filters or collection")
    if kind == "collection" and data.filters:
        raise validation_error("You cannot create a collection with filters")
    if kind == "filters" and not data.filters:
        raise validation_error("You must provide a valid filters when creating a saved filter")
    row = insert_playlist(ctx.store, project_id, kind, data.columns(), user.id)
    return SafeJSONResponse(_serialize_many(ctx.store, [row])[0], status_code=201)


async def get_playlist(request: Request) -> Response:
    """GET one: 404 when deleted or unknown (synthetic ones by short_id in the cloud profile)."""
    ctx = context_of(request)
    ctx.authenticate_personal(request, SCOPE_READ, throttle=THROTTLE)
    project_id = ctx.project_id_of(request)
    short_id = request.path_params["short_id"]
    if "short_id" in request.query_params and request.query_params["short_id"] != short_id:
        raise not_found()
    entry = _synthetic_of(ctx, project_id, short_id)
    if entry is not None:
        return SafeJSONResponse(serialize_synthetic(ctx.store, project_id, entry))
    row = _get_row(ctx.store, project_id, short_id)
    return SafeJSONResponse(_serialize_many(ctx.store, [row])[0])


async def update_playlist(request: Request) -> Response:
    """PATCH/PUT: partial update; `type` ignored; `deleted` soft-deletes or restores; material fields bump
    `last_modified_*`."""
    ctx = context_of(request)
    body = await read_body(request)
    user = ctx.authenticate_personal(request, SCOPE_WRITE, throttle=THROTTLE)
    project_id = ctx.project_id_of(request)
    short_id = request.path_params["short_id"]
    data = validate(PlaylistWrite, parse_json_body(request, body))
    if _synthetic_of(ctx, project_id, short_id) is not None:
        raise validation_error("Cannot update synthetic playlists")
    row = _get_row(ctx.store, project_id, short_id, include_deleted=True)
    fields = data.columns()
    if row["type"] == "collection" and fields.get("filters"):
        raise validation_error("You cannot update a collection to add filters")
    if row["type"] == "filters" and not fields.get("filters"):
        raise validation_error("You cannot remove all filters when updating a saved filter")
    material = any(name in data.model_fields_set for name in MATERIAL_FIELDS)
    row = update_playlist_row(ctx.store, row["id"], fields, modified_by=user.id if material else None)
    return SafeJSONResponse(_serialize_many(ctx.store, [row])[0])


async def delete_playlist(request: Request) -> Response:
    """DELETE: always 405 with an empty body (after auth and scope), hard delete is not allowed."""
    ctx = context_of(request)
    ctx.authenticate_personal(request, SCOPE_WRITE, throttle=THROTTLE)
    return Response(b"", status_code=405, headers={"Allow": "GET, PATCH, PUT, HEAD"})


def serialize_recording(row: sqlite3.Row) -> dict[str, Any]:
    """A recording in the SessionRecordingSerializer shape."""
    start = datetime.fromisoformat(row["start_time"].replace("Z", "+00:00"))
    expiry = start + timedelta(days=30)
    ttl = max(0, (expiry - datetime.now(UTC)).days)
    return {
        "id": row["session_id"],
        "distinct_id": row["distinct_id"],
        "viewed": bool(row["viewed"]),
        "viewers": [],
        "recording_duration": row["recording_duration"],
        "active_seconds": row["active_seconds"],
        "inactive_seconds": row["inactive_seconds"],
        "start_time": row["start_time"],
        "end_time": row["end_time"],
        "click_count": row["click_count"],
        "keypress_count": row["keypress_count"],
        "mouse_activity_count": row["mouse_activity_count"],
        "console_log_count": row["console_log_count"],
        "console_warn_count": row["console_warn_count"],
        "console_error_count": row["console_error_count"],
        "start_url": row["start_url"],
        "person": loads(row["person"]),
        "storage": "object_storage",
        "retention_period_days": 30,
        "expiry_time": expiry.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "recording_ttl": ttl,
        "snapshot_source": "web",
        "ongoing": False,
        "activity_score": row["activity_score"],
    }


async def playlist_recordings(request: Request) -> Response:
    """GET .../recordings/: `{results, has_next, version}` (not the playlist); deleted playlists are 404.
    A fault rule with ``kind="offset_ignored"`` makes a saved filter's query ignore `offset`;
    ``kind="endless_pages"`` makes it say more follow on every page, with new ids each time.

    `limit` (default 50) and `offset` are read but, as in the service, only a synthetic playlist uses them
    (to slice its session ids); a collection answers its one capped query whatever they say."""
    ctx = context_of(request)
    ctx.authenticate_personal(request, SCOPE_READ, throttle=THROTTLE)
    project_id = ctx.project_id_of(request)
    short_id = request.path_params["short_id"]
    q = request.query_params
    limit = _page_params(request)[0] if "limit" in q else RECORDINGS_DEFAULT_LIMIT
    offset = int_param(q.get("offset"), 0, name="offset")
    entry = _synthetic_of(ctx, project_id, short_id)
    if entry is not None:
        ids = synthetic_items(ctx.store, project_id, entry)[offset : offset + limit]
        rows, has_next = collection_recordings(ctx.store, project_id, ids)
        return _recordings_response(rows, has_next=has_next)
    playlist = _get_row(ctx.store, project_id, short_id)
    params: Any = q
    if ctx.faults.active("offset_ignored", "GET", request.scope["path"]):
        # A test control: a service that says more match (has_next) but answers the first page again
        # whatever the offset, as a build whose query drops `offset` would.
        params = {k: v for k, v in q.items() if k != "offset"}
    if ctx.faults.active("endless_pages", "GET", request.scope["path"]):
        params = {k: v for k, v in q.items() if k != "offset"}
        rows = playlist_recordings_rows(ctx.store, project_id, playlist, params)[0]
        return _endless_page(rows, offset)
    rows, has_next = playlist_recordings_rows(ctx.store, project_id, playlist, params)
    return _recordings_response(rows, has_next=has_next)


def _endless_page(rows: list[sqlite3.Row], offset: int) -> Response:
    """A test control (``kind="endless_pages"``): a service that always says more match (`has_next`) and
    gives new recordings on every page (the page's ids suffixed with the offset), as a broken or hostile
    server would; a client must stop on its own."""
    results = []
    for row in rows:
        record = serialize_recording(row)
        record["id"] = f"{record['id']}-{offset}"
        results.append(record)
    return SafeJSONResponse({"results": results, "has_next": True, "version": 4})


def _session_ids_param(raw: str) -> list[str]:
    """`session_ids` as the service reads it (`query_as_params_to_dict`: a JSON array of strings)."""
    try:
        value = loads(raw)
    except ValueError:
        value = None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise validation_error(
            'session_ids must be a JSON array of session ids, e.g. ["0190...", "0191..."]', "session_ids"
        )
    return value


async def list_recordings(request: Request) -> Response:
    """GET /session_recordings/: the project's recordings as `RecordingsQuery` reads its query parameters
    (`session_ids` as a JSON array, `date_from` default `-3d`, `date_to`, `limit` default 50, `offset`), in
    the shape of a playlist's recordings. With `session_ids`, long-term-stored ones come whatever the dates
    (see `recordings_for_ids`)."""
    ctx = context_of(request)
    ctx.authenticate_personal(request, "session_recording:read", throttle=THROTTLE)
    project_id = ctx.project_id_of(request)
    q = request.query_params
    query = RecordingsQuery.from_params(q)
    # An empty `session_ids` is falsy in `list_recordings_from_query`: the query runs over every recording.
    ids = _session_ids_param(q["session_ids"]) if "session_ids" in q else None
    rows, has_next = query_recordings(ctx.store, project_id, query, ids)
    return _recordings_response(rows, has_next=has_next)


def _recordings_by_ids(store: Store, project_id: int, ids: list[str]) -> list[sqlite3.Row]:
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    return store.query(
        f"SELECT * FROM recordings WHERE project_id=? AND session_id IN ({marks}) ORDER BY start_time DESC",
        [project_id, *ids],
    )


def _recordings_response(rows: list[sqlite3.Row], *, has_next: bool) -> Response:
    return SafeJSONResponse(
        {"results": [serialize_recording(r) for r in rows], "has_next": has_next, "version": 4},
        headers={"Server-Timing": "db;dur=1"},
    )


def _modify_scope(ctx: SandboxContext) -> str:
    return UNSUPPORTED if ctx.is_cloud else SCOPE_WRITE


async def add_recording(request: Request) -> Response:
    """POST .../recordings/:id/: add to a collection (idempotent) -> 200 `{"success": true}`."""
    ctx = context_of(request)
    body = await read_body(request)
    ctx.authenticate_personal(request, _modify_scope(ctx), throttle=THROTTLE)
    project_id = ctx.project_id_of(request)
    parse_json_body(request, body)  # parsed (errors reported) but its fields are not used, as the real one
    row = _get_row(ctx.store, project_id, request.path_params["short_id"])
    if row["type"] == "filters":
        raise validation_error("Cannot add recordings to a playlist that is type 'filters'.")
    add_item(ctx.store, row["id"], request.path_params["session_recording_id"])
    return SafeJSONResponse({"success": True})


async def remove_recording(request: Request) -> Response:
    """DELETE .../recordings/:id/: 200 `{"success": true}`; not in the playlist: the real 500."""
    ctx = context_of(request)
    ctx.authenticate_personal(request, _modify_scope(ctx), throttle=THROTTLE)
    project_id = ctx.project_id_of(request)
    row = _get_row(ctx.store, project_id, request.path_params["short_id"])
    if not remove_item(ctx.store, row["id"], request.path_params["session_recording_id"]):
        raise server_error()
    return SafeJSONResponse({"success": True})


def _bulk_ids(body: Any) -> list[Any]:
    """The bulk endpoints' `session_recording_ids`, checked as the service does (a non-empty list of at most
    `BULK_MAX`), with the service's messages."""
    ids = body.get("session_recording_ids", []) if isinstance(body, dict) else []
    if not ids or not isinstance(ids, list):
        raise validation_error("session_recording_ids must be provided as a non-empty array")
    if len(ids) > BULK_MAX:
        raise validation_error(f"Cannot process more than {BULK_MAX} recordings at once")
    return ids


def _bulk_id(value: Any) -> str | None:
    """One id as the service's ORM lookup would take it (strings and integers), else None (the service logs
    the failure and counts it neither added nor deleted)."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


async def bulk_add_recordings(request: Request) -> Response:
    """POST .../recordings/bulk_add: add up to 20 recordings to a collection ->
    `{"success", "added_count" (new items only), "total_requested"}` (`bulk_add_recordings`, hidden from
    the service's schema). Like the one-by-one action it is in neither scope list, so the cloud profile
    refuses personal keys."""
    ctx = context_of(request)
    raw = await read_body(request)
    ctx.authenticate_personal(request, _modify_scope(ctx), throttle=THROTTLE)
    project_id = ctx.project_id_of(request)
    row = _get_row(ctx.store, project_id, request.path_params["short_id"])
    ids = _bulk_ids(parse_json_body(request, raw))
    if row["type"] == "filters":
        raise validation_error("Cannot add recordings to a playlist that is type 'filters'.")
    added = 0
    for value in ids:
        session_id = _bulk_id(value)
        if session_id is not None and add_item(ctx.store, row["id"], session_id):
            added += 1
    return SafeJSONResponse({"success": True, "added_count": added, "total_requested": len(ids)})


async def bulk_delete_recordings(request: Request) -> Response:
    """POST .../recordings/bulk_delete: remove up to 20 recordings ->
    `{"success", "deleted_count" (items that were there), "total_requested"}`; ids not in the playlist are
    skipped (no 500, unlike the one-by-one DELETE)."""
    ctx = context_of(request)
    raw = await read_body(request)
    ctx.authenticate_personal(request, _modify_scope(ctx), throttle=THROTTLE)
    project_id = ctx.project_id_of(request)
    row = _get_row(ctx.store, project_id, request.path_params["short_id"])
    ids = _bulk_ids(parse_json_body(request, raw))
    deleted = 0
    for value in ids:
        session_id = _bulk_id(value)
        if session_id is not None and remove_item(ctx.store, row["id"], session_id):
            deleted += 1
    return SafeJSONResponse({"success": True, "deleted_count": deleted, "total_requested": len(ids)})


_BASE = "/api/projects/{project_id}/session_recording_playlists/"
#: The `RecordingsQuery` parameters documented in the OpenAPI document (`RecordingsQuery.from_params` also
#: reads `order`, `order_direction`, `filter_test_accounts` and `having_predicates`, named in the summaries
#: only: their values are enums and JSON the document's plain query parameters cannot describe, and the
#: bounded schemathesis run would send junk for them as "schema-valid").
_RECORDINGS_QUERY = (
    Query("date_from"),
    Query("date_to"),
    Query("limit", "integer", minimum=0),
    Query("offset", "integer", minimum=0),
)
_ENV = "/api/environments/{project_id}/session_recording_playlists/"
_LIST_QUERY = (
    Query("limit", "integer", minimum=0),
    Query("offset", "integer", minimum=0),
    *(
        Query(n)
        for n in (
            "short_id",
            "search",
            "type",
            "order",
            "date_from",
            "date_to",
            "session_recording_id",
            "pinned",
            "user",
            "created_by",
            "collection_type",
        )
    ),
)


def _ep(method: str, suffix: str, handler: Any, op: str, summary: str, **kw: Any) -> Endpoint:
    return Endpoint(method, _BASE + suffix, handler, op, summary, aliases=(_ENV + suffix,), **kw)


_ITEM = "{short_id}/recordings/{session_recording_id}/"
_RECORDINGS = "/api/projects/{project_id}/session_recordings/"
ENDPOINTS = [
    Endpoint(
        "GET",
        _RECORDINGS,
        list_recordings,
        "session_recordings_list",
        "List recordings (RecordingsQuery parameters: session_ids as a JSON array, date_from, date_to, "
        "order, order_direction, filter_test_accounts, having_predicates, limit, offset)",
        aliases=("/api/environments/{project_id}/session_recordings/",),
        query=(
            Query("session_ids", content={"type": "array", "items": {"type": "string"}}),
            *_RECORDINGS_QUERY,
        ),
    ),
    _ep(
        "GET",
        "",
        list_playlists,
        "playlists_list",
        "List playlists",
        query=_LIST_QUERY,
        returns="page",
        # `created_by` must name a user: django-filter's ModelChoiceFilter (filterset_fields, in
        # posthog/session_recordings/session_recording_playlist_api.py)
        refusals=(
            Refusal(
                400, "invalid_choice", "created_by", "session_recording_playlist_api.py filterset_fields"
            ),
        ),
    ),
    _ep("POST", "", create_playlist, "playlists_create", "Create a playlist", body=PlaylistWrite, status=201),
    _ep("GET", "{short_id}/", get_playlist, "playlists_retrieve", "Get a playlist"),
    _ep(
        "PATCH",
        "{short_id}/",
        update_playlist,
        "playlists_partial_update",
        "Update a playlist",
        body=PlaylistWrite,
    ),
    _ep("PUT", "{short_id}/", update_playlist, "playlists_update", "Update a playlist", body=PlaylistWrite),
    _ep(
        "DELETE",
        "{short_id}/",
        delete_playlist,
        "playlists_destroy",
        "Hard delete is not allowed: 405 with an empty body (soft delete with PATCH deleted=true)",
        status=405,
        returns="empty",
        errors=(401, 403, 404),
    ),
    _ep(
        "GET",
        "{short_id}/recordings/",
        playlist_recordings,
        "playlists_recordings",
        "Recordings of a playlist (a saved filter's: the RecordingsQuery parameters date_from, date_to, "
        "order, order_direction, filter_test_accounts, having_predicates, limit, offset)",
        query=(Query("limit", "integer", minimum=0), Query("offset", "integer", minimum=0)),
    ),
    _ep(
        "POST",
        "{short_id}/recordings/bulk_add/",
        bulk_add_recordings,
        "playlists_recordings_bulk_add",
        "Add up to 20 recordings to a collection (hidden from the service's schema)",
        documented=False,
    ),
    _ep(
        "POST",
        "{short_id}/recordings/bulk_delete/",
        bulk_delete_recordings,
        "playlists_recordings_bulk_delete",
        "Remove up to 20 recordings from a playlist (hidden from the service's schema)",
        documented=False,
    ),
    _ep("POST", _ITEM, add_recording, "playlists_recordings_add", "Add a recording to a collection"),
    _ep(
        "DELETE",
        _ITEM,
        remove_recording,
        "playlists_recordings_remove",
        "Remove a recording (500 when it is not in the playlist, as the real service)",
        errors=(400, 401, 403, 404, 500),
    ),
]


# -- test/notebook helper (Sandbox.add_recording) ------------------------------------------------------------
_COUNT_FIELDS = (
    "click_count",
    "keypress_count",
    "mouse_activity_count",
    "console_log_count",
    "console_warn_count",
    "console_error_count",
)


def _when(value: datetime | str | None, name: str) -> datetime:
    if value is None:
        return datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(
                f"{name}: {value!r} is not an ISO 8601 date-time; pass e.g. '2026-11-20T10:00:00Z' "
                "or a datetime"
            ) from None
    if not isinstance(value, datetime):
        raise TypeError(f"{name} must be a datetime or ISO 8601 text, got {type(value).__name__}")
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _iso_us(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def insert_recording(
    store: Store,
    project_id: int,
    *,
    session_id: str | None = None,
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
    """Store one recording as if ingested (the shape the seed writes), optionally in a collection playlist;
    returns its session id. `long_term`: also persisted to long-term storage (answered by id whatever its
    age). `urls`: every URL the session visited (`start_url` first when not listed). Bad input raises
    ValueError/TypeError naming the argument."""
    if session_id is None:
        session_id = str(uuid.uuid4())
    if not isinstance(session_id, str) or not session_id.strip():
        raise ValueError(f"session_id must be a non-empty string, got {session_id!r}")
    if not isinstance(distinct_id, str) or not distinct_id.strip():
        raise ValueError(f"distinct_id must be a non-empty string, got {distinct_id!r}")
    if isinstance(duration, bool) or not isinstance(duration, int) or duration < 0:
        raise ValueError(f"duration must be a whole number of seconds >= 0, got {duration!r}")
    if active_seconds is None:
        active_seconds = (duration * 2) // 3
    if (
        isinstance(active_seconds, bool)
        or not isinstance(active_seconds, int)
        or not (0 <= active_seconds <= duration)
    ):
        raise ValueError(
            f"active_seconds must be whole seconds from 0 to duration ({duration}), got {active_seconds!r}"
        )
    given = dict(counts or {})
    unknown = sorted(set(given) - set(_COUNT_FIELDS))
    if unknown:
        raise ValueError(f"counts: unknown field {unknown[0]!r}; known: {', '.join(_COUNT_FIELDS)}")
    defaults = {
        "click_count": duration // 10,
        "keypress_count": duration // 6,
        "mouse_activity_count": duration,
    }
    values = {name: given.get(name, defaults.get(name, 0)) for name in _COUNT_FIELDS}
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"counts[{name!r}] must be a whole number >= 0, got {value!r}")
    visited = _visited_urls(start_url, urls)
    start = _when(start_time, "start_time")
    if activity_score is None:
        activity_score = round(100.0 * active_seconds / duration, 2) if duration else 0.0
    score = float(activity_score)
    with store.transaction() as conn:
        target = None
        if playlist is not None:
            target = conn.execute(
                "SELECT id, type FROM playlists WHERE project_id=? AND short_id=? AND deleted=0",
                (project_id, playlist),
            ).fetchone()
            if target is None:
                raise ValueError(
                    f"playlist: no live playlist with short_id {playlist!r} in project {project_id}"
                )
            if target["type"] != "collection":
                raise ValueError(
                    f"playlist: {playlist!r} is a 'filters' playlist; recordings can only be added to "
                    "'collection' playlists"
                )
        if conn.execute(
            "SELECT 1 FROM recordings WHERE project_id=? AND session_id=?", (project_id, session_id)
        ).fetchone():
            raise ValueError(f"session_id: a recording {session_id!r} already exists; pick another id")
        stored = conn.execute(
            "SELECT properties FROM persons WHERE project_id=? AND distinct_id=?", (project_id, distinct_id)
        ).fetchone()
        properties = dict(loads(stored[0]) or {}) if stored is not None else {}
        properties.update(person_properties or {})
        person_uuid = uuid.uuid5(uuid.NAMESPACE_URL, f"analytics-nb-sandbox/person/{distinct_id}")
        person = {
            "id": person_uuid.int % 1_000_000_000,
            "uuid": str(person_uuid),
            "distinct_ids": [distinct_id],
            "properties": properties,
            "created_at": _iso_us(start - timedelta(days=30)),
        }
        conn.execute(
            "INSERT INTO recordings(project_id, session_id, distinct_id, start_time, end_time, "
            "recording_duration, active_seconds, inactive_seconds, click_count, keypress_count, "
            "mouse_activity_count, console_log_count, console_warn_count, console_error_count, start_url, "
            "viewed, activity_score, person, lts, urls) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                project_id,
                session_id,
                distinct_id,
                _iso_us(start),
                _iso_us(start + timedelta(seconds=duration)),
                duration,
                active_seconds,
                duration - active_seconds,
                *(values[name] for name in _COUNT_FIELDS),
                start_url,
                int(bool(viewed)),
                score,
                dumps(person),
                int(bool(long_term)),
                dumps(visited),
            ),
        )
        if target is not None:
            conn.execute(
                "INSERT OR IGNORE INTO playlist_items(playlist_id, session_id, created_at) VALUES (?,?,?)",
                (target["id"], session_id, now_iso()),
            )
    return session_id


def _visited_urls(start_url: str, urls: list[str] | None) -> list[str]:
    """The session's visited URLs as stored: `urls` (strings) with `start_url` first when not among them."""
    if urls is None:
        return [start_url]
    if isinstance(urls, str) or not all(isinstance(u, str) for u in urls):
        raise ValueError(f"urls must be a list of URL strings, got {urls!r}")
    return list(dict.fromkeys([start_url, *urls] if start_url not in urls else urls))


# -- seed ----------------------------------------------------------------------------------------------------
PAGES = (
    "/",
    "/pricing",
    "/signup",
    "/login",
    "/docs",
    "/blog",
    "/checkout",
    "/settings",
    "/dashboard",
    "/search",
)
COUNTRIES = ("GB", "US", "DE", "FR", "BR", "IN", "JP", "AU")
BROWSERS = ("Chrome", "Firefox", "Safari", "Edge")
TOPICS = (
    "Checkout",
    "Onboarding",
    "Pricing page",
    "Signup",
    "Search",
    "Settings",
    "Docs",
    "Mobile",
    "Errors",
    "Power users",
    "Churn risk",
    "Dashboard",
    "Billing",
    "Login",
    "Blog readers",
    "Enterprise",
)


def _iso(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def seed(store: Store, ctx: SandboxContext) -> None:
    """Demo seed: 320 recordings and 64 playlists of both types (some with recordings), by the organization's
    users. Deterministic (fixed random seed); dates anchored at the start of the current UTC day so relative
    filters such as `date_from=-7d` keep working."""
    rng = random.Random(20240917)
    day = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    users = [
        int(r["id"])
        for r in store.query(
            "SELECT id FROM users WHERE organization_id=? ORDER BY id", (ctx.organization_id,)
        )
    ]
    with store.transaction() as conn:
        session_ids = _seed_recordings(conn, rng, day, ctx.project_id)
        _seed_playlists(conn, rng, day, ctx.project_id, users, session_ids)


def _seed_recordings(conn: Any, rng: random.Random, day: datetime, project_id: int) -> list[str]:
    rows = []
    ids = []
    for i in range(320):
        start = day - timedelta(days=rng.uniform(0, 28), hours=rng.uniform(0, 23))
        duration = rng.randint(15, 3600)
        active = rng.randint(5, duration)
        session_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        person_n = rng.randint(1, 180)
        distinct_id = f"user-{person_n:04d}"
        person = {
            "id": person_n,
            "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"analytics-nb-sandbox/person/{person_n}")),
            "distinct_ids": [distinct_id],
            "properties": {
                "email": f"{distinct_id}@example.com",
                "$geoip_country_code": rng.choice(COUNTRIES),
                "$browser": rng.choice(BROWSERS),
            },
            "created_at": _iso(day - timedelta(days=60 + person_n % 30)),
        }
        rows.append(
            (
                project_id,
                session_id,
                distinct_id,
                _iso(start),
                _iso(start + timedelta(seconds=duration)),
                duration,
                active,
                duration - active,
                rng.randint(0, 120),
                rng.randint(0, 300),
                rng.randint(0, 900),
                rng.randint(0, 40),
                rng.randint(0, 10),
                rng.choice((0, 0, 0, 1, 2, 6)),
                "https://shop.example.com" + rng.choice(PAGES),
                int(rng.random() < 0.3),
                round(rng.uniform(0, 100), 2),
                dumps(person),
            )
        )
        ids.append(session_id)
        del i
    conn.executemany(
        "INSERT INTO recordings(project_id, session_id, distinct_id, start_time, end_time, "
        "recording_duration, "
        "active_seconds, inactive_seconds, click_count, keypress_count, mouse_activity_count, "
        "console_log_count, "
        "console_warn_count, console_error_count, start_url, viewed, activity_score, person) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        rows,
    )
    return ids


def _seed_playlists(
    conn: Any, rng: random.Random, day: datetime, project_id: int, user_ids: list[int], session_ids: list[str]
) -> None:
    used: set[str] = set()
    for i in range(64):
        short_id = generate_short_id(rng)
        while short_id in used:
            short_id = generate_short_id(rng)
        used.add(short_id)
        kind = "filters" if i % 3 == 2 else "collection"
        topic = TOPICS[i % len(TOPICS)]
        created = day - timedelta(days=rng.uniform(1, 90))
        modified = min(day, created + timedelta(days=rng.uniform(0, 30)))
        author = user_ids[i % len(user_ids)]
        editor = user_ids[(i + rng.randint(0, 2)) % len(user_ids)]
        if kind == "filters":
            filters: dict[str, Any] = {
                "date_from": "-7d",
                "filter_test_accounts": rng.random() < 0.5,
                "properties": [
                    {
                        "key": "$current_url",
                        "value": "/" + topic.lower().split()[0],
                        "operator": "icontains",
                        "type": "event",
                    }
                ],
                "duration": [
                    {
                        "key": "duration",
                        "value": rng.choice((30, 60, 300)),
                        "operator": "gt",
                        "type": "recording",
                    }
                ],
            }
            name = f"{topic} sessions" if i % 5 else None
            derived = f"{topic} – URL contains {topic.lower().split()[0]}"
        else:
            filters = {}
            name = f"{topic} review #{i // len(TOPICS) + 1}"
            derived = None
        cur = conn.execute(
            "INSERT INTO playlists(project_id, short_id, name, derived_name, description, pinned, deleted, "
            "filters, "
            "type, created_at, created_by, last_modified_at, last_modified_by) VALUES "
            "(?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                project_id,
                short_id,
                name,
                derived,
                f"Sessions about {topic.lower()}" if i % 4 else "",
                int(i % 7 == 0),
                int(i % 16 == 15),
                dumps(filters),
                kind,
                _iso(created),
                author,
                _iso(modified),
                editor,
            ),
        )
        if kind == "collection":
            count = 0 if i % 10 == 4 else rng.randint(1, 12)
            for session_id in rng.sample(session_ids, count):
                conn.execute(
                    "INSERT INTO playlist_items(playlist_id, session_id, created_at) VALUES (?,?,?)",
                    (cur.lastrowid, session_id, _iso(created + timedelta(minutes=rng.randint(1, 5000)))),
                )

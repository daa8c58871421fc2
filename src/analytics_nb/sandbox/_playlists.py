"""Session recording playlists: the 8 endpoints under `/api/projects/:id/session_recording_playlists/`, with
the real service's rules (posthog-notes §3)."""

from __future__ import annotations

import re
import secrets
import sqlite3
import string
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from . import _validate as v
from ._auth import UNSUPPORTED, users_by_id
from ._context import SandboxContext
from ._errors import APIError, not_found, server_error, validation_error
from ._http import page_links, parse_json_body, read_body, require_object
from ._store import Store, dumps, loads, now_iso

SCOPE_READ = "session_recording_playlist:read"
SCOPE_WRITE = "session_recording_playlist:write"
THROTTLE = "playlists"
DEFAULT_LIMIT = 100
MAX_LIMIT = 500
MATERIAL_FIELDS = ("name", "description", "filters")
_ALNUM = string.ascii_letters + string.digits

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
CREATE TABLE IF NOT EXISTS playlist_items (
    playlist_id INTEGER NOT NULL REFERENCES playlists(id),
    session_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (playlist_id, session_id)
);
"""

#: The six read-only collections the newest cloud builds mix into the list (cloud profile only).
SYNTHETIC = (
    (-1, "synthetic-watch-history", "Watch history", "Recordings you have watched"),
    (-2, "synthetic-commented", "Recordings with comments", "Recordings that have comments"),
    (-3, "synthetic-shared", "Shared recordings", "Recordings shared with a link"),
    (-4, "synthetic-exported", "Exported recordings", "Recordings exported to a file"),
    (-6, "synthetic-expiring", "Expiring soon", "Recordings that will expire soon"),
    (-7, "synthetic-frustrated", "Frustration signals", "Recordings with rage clicks or errors"),
)


def generate_short_id(rng: Any = None) -> str:
    """8 characters from [A-Za-z0-9], as the real `generate_short_id`."""
    if rng is None:
        return "".join(secrets.choice(_ALNUM) for _ in range(8))
    return "".join(rng.choice(_ALNUM) for _ in range(8))


# -- serialization
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


def _synthetic_items(store: Store, project_id: int, short_id: str) -> list[str]:
    if short_id == "synthetic-watch-history":
        rows = store.query(
            "SELECT session_id FROM recordings WHERE project_id=? AND viewed=1 ORDER BY start_time DESC",
            (project_id,),
        )
        return [r["session_id"] for r in rows]
    if short_id == "synthetic-frustrated":
        rows = store.query(
            "SELECT session_id FROM recordings WHERE project_id=? AND console_error_count>=5 "
            "ORDER BY start_time DESC",
            (project_id,),
        )
        return [r["session_id"] for r in rows]
    return []


def _synthetic(store: Store, project_id: int, entry: tuple[int, str, str, str]) -> dict[str, Any]:
    pid, short_id, name, description = entry
    n = len(_synthetic_items(store, project_id, short_id))
    return {
        "id": pid,
        "short_id": short_id,
        "name": name,
        "derived_name": None,
        "description": description,
        "pinned": False,
        "created_at": None,
        "created_by": None,
        "deleted": False,
        "filters": {},
        "last_modified_at": None,
        "last_modified_by": None,
        "recordings_counts": _counts(n, 0),
        "type": "collection",
        "is_synthetic": True,
    }


# -- helpers -------------------------------------------------------------------------------------------------
def _ctx(request: Request) -> SandboxContext:
    return request.app.state.sandbox


def _limit(raw: str | None) -> int:
    try:
        value = int(raw) if raw is not None else DEFAULT_LIMIT
    except ValueError:
        return DEFAULT_LIMIT
    if value <= 0:
        return DEFAULT_LIMIT
    return min(value, MAX_LIMIT)


def _offset(raw: str | None) -> int:
    try:
        value = int(raw) if raw is not None else 0
    except ValueError:
        return 0
    return max(value, 0)


_REL = re.compile(r"^-?(\d+)([hdwmyHM])(Start|End)?$")


def parse_date(raw: str, attr: str) -> str:
    """A relative (`-7d`, `-24h`, `-2w`, `-1m`, `-1y`, `-30M`) or ISO date as the stored timestamp format."""
    now = datetime.now(UTC)
    text = raw.strip()
    match = _REL.match(text)
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
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _get_row(store: Store, project_id: int, short_id: str, *, include_deleted: bool = False) -> sqlite3.Row:
    row = store.query_one(
        "SELECT * FROM playlists WHERE project_id=? AND short_id=?"
        + ("" if include_deleted else " AND deleted=0"),
        (project_id, short_id),
    )
    if row is None:
        raise not_found()
    return row


def _synthetic_entry(short_id: str) -> tuple[int, str, str, str] | None:
    return next((e for e in SYNTHETIC if e[1] == short_id), None)


# -- endpoints -----------------------------------------------------------------------------------------------
async def list_playlists(request: Request) -> Response:
    """GET: paginated playlists (not deleted) with the real filters, order allow-list and page clamping."""
    ctx = _ctx(request)
    user = ctx.authenticate_personal(request, SCOPE_READ, throttle=THROTTLE)
    project_id = ctx.project_id_of(request)
    q = request.query_params
    where = ["project_id=?", "deleted=0"]
    params: list[Any] = [project_id]
    if "created_by" in q:
        raw = q["created_by"]
        ok = (
            raw.isdigit()
            and int(raw) < 2**63
            and ctx.store.query_one("SELECT id FROM users WHERE id=?", (int(raw),)) is not None
        )
        if not ok:
            raise APIError(
                400,
                "validation_error",
                "invalid_choice",
                "Select a valid choice. That choice is not one of the available choices.",
                "created_by",
            )
        where.append("created_by=?")
        params.append(int(raw))
    if "short_id" in q:
        where.append("short_id=?")
        params.append(q["short_id"])
    if "user" in q:
        where.append("created_by=?")
        params.append(user.id)
    if "pinned" in q:
        where.append("pinned=1")
    if q.get("type") in ("collection", "filters"):
        where.append("type=?")
        params.append(q["type"])
    if "date_from" in q:
        where.append("last_modified_at>?")
        params.append(parse_date(q["date_from"], "date_from"))
    if "date_to" in q:
        where.append("last_modified_at<?")
        params.append(parse_date(q["date_to"], "date_to"))
    if "search" in q:
        where.append(
            "(LOWER(COALESCE(name,'')) LIKE ? ESCAPE '\\' "
            "OR LOWER(COALESCE(derived_name,'')) LIKE ? ESCAPE '\\')"
        )
        escaped = q["search"].lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        params += [f"%{escaped}%", f"%{escaped}%"]
    if "session_recording_id" in q:
        where.append("id IN (SELECT playlist_id FROM playlist_items WHERE session_id=?)")
        params.append(q["session_recording_id"])
    order = q.get("order", "")
    descending = order.startswith("-")
    field = order.lstrip("-")
    if field in ("last_modified_at", "created_at"):
        order_sql = f"{field} {'DESC' if descending else 'ASC'}, id ASC"
    elif field == "name":
        order_sql = (
            f"LOWER(COALESCE(NULLIF(name,''), derived_name, '')) {'DESC' if descending else 'ASC'}, id ASC"
        )
    else:
        order_sql, field, descending = "last_modified_at DESC, id ASC", "last_modified_at", True
    if q.get("collection_type") == "synthetic":
        where.append("0")
    rows = ctx.store.query(
        f"SELECT * FROM playlists WHERE {' AND '.join(where)} ORDER BY {order_sql}", params
    )
    results = _serialize_many(ctx.store, rows)

    include_synthetic = (
        ctx.is_cloud
        and q.get("collection_type") != "custom"
        and not ({"user", "created_by", "pinned", "short_id", "session_recording_id"} & set(q.keys()))
        and q.get("type") != "filters"
    )
    if include_synthetic:
        synth = [_synthetic(ctx.store, project_id, e) for e in SYNTHETIC]
        if "search" in q:
            needle = q["search"].lower()
            synth = [s for s in synth if needle in s["name"].lower() or needle in s["description"].lower()]
        if field == "name":
            merged = results + synth
            merged.sort(key=lambda p: (p["name"] or p["derived_name"] or "").lower(), reverse=descending)
            results = merged
        elif descending:
            results = synth + results
        else:
            results = results + synth

    limit, offset = _limit(q.get("limit")), _offset(q.get("offset"))
    nxt, prev = page_links(request, count=len(results), limit=limit, offset=offset)
    return JSONResponse(
        {"count": len(results), "next": nxt, "previous": prev, "results": results[offset : offset + limit]}
    )


def _validated(data: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "name" in data:
        out["name"] = v.char(data, "name", max_length=400)
    if "derived_name" in data:
        out["derived_name"] = v.char(data, "derived_name", max_length=400)
    if "description" in data:
        out["description"] = v.char(data, "description", allow_null=False)
    if "pinned" in data:
        out["pinned"] = v.boolean(data, "pinned")
    if "deleted" in data:
        out["deleted"] = v.boolean(data, "deleted")
    if "filters" in data:
        out["filters"] = v.json_field(data, "filters")
    if "_create_in_folder" in data:
        v.char(data, "_create_in_folder")
    return out


async def create_playlist(request: Request) -> Response:
    """POST: create; `type` required; collection without filters, saved filter with filters."""
    ctx = _ctx(request)
    body = await read_body(request)
    user = ctx.authenticate_personal(request, SCOPE_WRITE, throttle=THROTTLE)
    project_id = ctx.project_id_of(request)
    data = require_object(parse_json_body(request, body))
    kind = data.get("type")
    if kind is not None and kind not in ("collection", "filters"):
        v.choice(data, "type", ("collection", "filters"))
    if kind not in ("collection", "filters"):
        raise validation_error("Must provide a valid playlist type: either filters or collection")
    fields = _validated(data)
    filters = fields.get("filters")
    if kind == "collection" and filters:
        raise validation_error("You cannot create a collection with filters")
    if kind == "filters" and not filters:
        raise validation_error("You must provide a valid filters when creating a saved filter")
    now = now_iso()
    with ctx.store.transaction() as conn:
        for _ in range(20):
            short_id = generate_short_id()
            if (
                conn.execute(
                    "SELECT 1 FROM playlists WHERE project_id=? AND short_id=?", (project_id, short_id)
                ).fetchone()
                is None
            ):
                break
        cur = conn.execute(
            "INSERT INTO playlists(project_id, short_id, name, derived_name, description, pinned, deleted, "
            "filters, "
            "type, created_at, created_by, last_modified_at, last_modified_by) VALUES "
            "(?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                project_id,
                short_id,
                fields.get("name"),
                fields.get("derived_name"),
                fields.get("description", ""),
                int(bool(fields.get("pinned", False))),
                int(bool(fields.get("deleted", False))),
                dumps(filters if filters is not None else {}),
                kind,
                now,
                user.id,
                now,
                user.id,
            ),
        )
        row = conn.execute("SELECT * FROM playlists WHERE id=?", (cur.lastrowid,)).fetchone()
    return JSONResponse(_serialize_many(ctx.store, [row])[0], status_code=201)


async def get_playlist(request: Request) -> Response:
    """GET one: 404 when deleted or unknown (synthetic ones by short_id in the cloud profile)."""
    ctx = _ctx(request)
    ctx.authenticate_personal(request, SCOPE_READ, throttle=THROTTLE)
    project_id = ctx.project_id_of(request)
    short_id = request.path_params["short_id"]
    if "short_id" in request.query_params and request.query_params["short_id"] != short_id:
        raise not_found()
    entry = _synthetic_entry(short_id)
    if entry is not None and ctx.is_cloud:
        return JSONResponse(_synthetic(ctx.store, project_id, entry))
    row = _get_row(ctx.store, project_id, short_id)
    return JSONResponse(_serialize_many(ctx.store, [row])[0])


async def update_playlist(request: Request) -> Response:
    """PATCH/PUT: partial update; `type` ignored; `deleted` soft-deletes or restores; material fields bump
    `last_modified_*`."""
    ctx = _ctx(request)
    body = await read_body(request)
    user = ctx.authenticate_personal(request, SCOPE_WRITE, throttle=THROTTLE)
    project_id = ctx.project_id_of(request)
    short_id = request.path_params["short_id"]
    data = require_object(parse_json_body(request, body))
    if _synthetic_entry(short_id) is not None and ctx.is_cloud:
        raise validation_error("Cannot update synthetic playlists")
    row = _get_row(ctx.store, project_id, short_id, include_deleted=True)
    fields = _validated(data)
    if row["type"] == "collection" and fields.get("filters"):
        raise validation_error("You cannot update a collection to add filters")
    if row["type"] == "filters" and not fields.get("filters"):
        raise validation_error("You cannot remove all filters when updating a saved filter")
    sets: list[str] = []
    params: list[Any] = []
    for name, value in fields.items():
        sets.append(f"{name}=?")
        if name == "filters":
            params.append(dumps(value if value is not None else {}))
        elif name in ("pinned", "deleted"):
            params.append(int(bool(value)))
        else:
            params.append(value)
    if any(name in data for name in MATERIAL_FIELDS):
        sets += ["last_modified_at=?", "last_modified_by=?"]
        params += [now_iso(), user.id]
    with ctx.store.transaction() as conn:
        if sets:
            conn.execute(f"UPDATE playlists SET {', '.join(sets)} WHERE id=?", [*params, row["id"]])
        row = conn.execute("SELECT * FROM playlists WHERE id=?", (row["id"],)).fetchone()
    return JSONResponse(_serialize_many(ctx.store, [row])[0])


async def delete_playlist(request: Request) -> Response:
    """DELETE: always 405 with an empty body (after auth and scope), hard delete is not allowed."""
    ctx = _ctx(request)
    ctx.authenticate_personal(request, SCOPE_WRITE, throttle=THROTTLE)
    return Response(b"", status_code=405)


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
    """GET .../recordings/: `{results, has_next, version}` (not the playlist); deleted playlists are 404."""
    ctx = _ctx(request)
    ctx.authenticate_personal(request, SCOPE_READ, throttle=THROTTLE)
    project_id = ctx.project_id_of(request)
    short_id = request.path_params["short_id"]
    q = request.query_params
    limit = _limit(q.get("limit")) if "limit" in q else 50
    offset = _offset(q.get("offset"))
    entry = _synthetic_entry(short_id)
    if entry is not None and ctx.is_cloud:
        ids = _synthetic_items(ctx.store, project_id, short_id)
        rows = _recordings_by_ids(ctx.store, project_id, ids)
        page = rows[offset : offset + limit]
        return _recordings_response(page, has_next=offset + limit < len(rows))
    row = _get_row(ctx.store, project_id, short_id)
    if row["type"] == "filters":
        rows = ctx.store.query(
            "SELECT r.* FROM recordings r JOIN playlist_items i ON i.session_id=r.session_id "
            "WHERE i.playlist_id=? AND r.project_id=? ORDER BY r.start_time DESC",
            (row["id"], project_id),
        )
        if not rows:
            rows = ctx.store.query(
                "SELECT * FROM recordings WHERE project_id=? ORDER BY start_time DESC LIMIT ? OFFSET ?",
                (project_id, limit + 1, offset),
            )
            return _recordings_response(rows[:limit], has_next=len(rows) > limit)
        return _recordings_response(rows, has_next=False)
    rows = ctx.store.query(
        "SELECT r.* FROM playlist_items i JOIN recordings r ON r.session_id=i.session_id AND r.project_id=? "
        "WHERE i.playlist_id=? ORDER BY i.created_at DESC, i.rowid DESC",
        (project_id, row["id"]),
    )
    return _recordings_response(rows, has_next=False)


def _recordings_by_ids(store: Store, project_id: int, ids: list[str]) -> list[sqlite3.Row]:
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    return store.query(
        f"SELECT * FROM recordings WHERE project_id=? AND session_id IN ({marks}) ORDER BY start_time DESC",
        [project_id, *ids],
    )


def _recordings_response(rows: list[sqlite3.Row], *, has_next: bool) -> Response:
    return JSONResponse(
        {"results": [serialize_recording(r) for r in rows], "has_next": has_next, "version": 4},
        headers={"Server-Timing": "db;dur=1"},
    )


def _modify_scope(ctx: SandboxContext) -> str:
    return UNSUPPORTED if ctx.is_cloud else SCOPE_WRITE


async def add_recording(request: Request) -> Response:
    """POST .../recordings/:id/: add to a collection (idempotent) -> 200 `{"success": true}`."""
    ctx = _ctx(request)
    body = await read_body(request)
    ctx.authenticate_personal(request, _modify_scope(ctx), throttle=THROTTLE)
    project_id = ctx.project_id_of(request)
    parse_json_body(request, body)  # parsed (errors reported) but its fields are not used, as the real one
    row = _get_row(ctx.store, project_id, request.path_params["short_id"])
    if row["type"] == "filters":
        raise validation_error("Cannot add recordings to a playlist that is type 'filters'.")
    session_id = request.path_params["session_recording_id"]
    ctx.store.execute(
        "INSERT OR IGNORE INTO playlist_items(playlist_id, session_id, created_at) VALUES (?,?,?)",
        (row["id"], session_id, now_iso()),
    )
    return JSONResponse({"success": True})


async def remove_recording(request: Request) -> Response:
    """DELETE .../recordings/:id/: 200 `{"success": true}`; not in the playlist: the real 500."""
    ctx = _ctx(request)
    ctx.authenticate_personal(request, _modify_scope(ctx), throttle=THROTTLE)
    project_id = ctx.project_id_of(request)
    row = _get_row(ctx.store, project_id, request.path_params["short_id"])
    session_id = request.path_params["session_recording_id"]
    with ctx.store.transaction() as conn:
        cur = conn.execute(
            "DELETE FROM playlist_items WHERE playlist_id=? AND session_id=?", (row["id"], session_id)
        )
        if cur.rowcount == 0:
            raise server_error()
    return JSONResponse({"success": True})


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
) -> str:
    """Store one recording as if ingested (the shape the seed writes), optionally in a collection playlist;
    returns its session id. Bad input raises ValueError/TypeError naming the argument."""
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
            "viewed, activity_score, person) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
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
            ),
        )
        if target is not None:
            conn.execute(
                "INSERT OR IGNORE INTO playlist_items(playlist_id, session_id, created_at) VALUES (?,?,?)",
                (target["id"], session_id, now_iso()),
            )
    return session_id


def routes() -> list[BaseRoute]:
    """The 8 playlist routes, under both `/api/projects/` and `/api/environments/`."""
    out: list[BaseRoute] = []
    for root in ("/api/projects/{project_id}", "/api/environments/{project_id}"):
        base = f"{root}/session_recording_playlists"
        out += [
            Route(base, list_playlists, methods=["GET"]),
            Route(base, create_playlist, methods=["POST"]),
            Route(f"{base}/{{short_id}}", get_playlist, methods=["GET"]),
            Route(f"{base}/{{short_id}}", update_playlist, methods=["PATCH", "PUT"]),
            Route(f"{base}/{{short_id}}", delete_playlist, methods=["DELETE"]),
            Route(f"{base}/{{short_id}}/recordings", playlist_recordings, methods=["GET"]),
            Route(
                f"{base}/{{short_id}}/recordings/{{session_recording_id}}", add_recording, methods=["POST"]
            ),
            Route(
                f"{base}/{{short_id}}/recordings/{{session_recording_id}}",
                remove_recording,
                methods=["DELETE"],
            ),
        ]
    return out

"""Captured events of the sandbox: the durable ``events`` table, the DataFrame reader behind ``sb.events()``
and ``GET /api/projects/:id/events/`` (newest first).

De-duplication follows PostHog's key, the sort key of its ReplacingMergeTree events table
(`posthog/models/event/sql.py`, ``EVENTS_TABLE_SQL``: ``ORDER BY (team_id, toDate(timestamp), event,
cityHash64(distinct_id), cityHash64(uuid))``): an event is a retry of a stored one only when project, UTC day
of its timestamp, event name, distinct id and uuid all match. The same uuid in another project, or with
another event or distinct id, is a different event and is stored.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response

from .._context import SandboxContext, context_of
from .._endpoints import Endpoint, Query
from .._errors import validation_error
from .._http import int_param, page_response
from .._store import Store

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ENDPOINTS",
    "EVENT_COLUMNS",
    "SCHEMA",
    "event_records",
    "events_frame",
    "insert_event_rows",
    "insert_events",
    "seed",
    "upgrade_schema",
]

SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    uuid TEXT NOT NULL,
    project_id INTEGER NOT NULL,
    event TEXT NOT NULL,
    distinct_id TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    properties TEXT NOT NULL DEFAULT '{}',
    received_at TEXT NOT NULL,
    sent_at TEXT,
    token TEXT NOT NULL,
    historical_migration INTEGER NOT NULL DEFAULT 0,
    endpoint TEXT NOT NULL,
    extra TEXT NOT NULL DEFAULT '{}'
);
CREATE UNIQUE INDEX IF NOT EXISTS events_dedupe
    ON events(project_id, substr(timestamp, 1, 10), event, distinct_id, uuid);
CREATE INDEX IF NOT EXISTS events_project_seq ON events(project_id, seq);
CREATE INDEX IF NOT EXISTS events_project_event ON events(project_id, event);
CREATE INDEX IF NOT EXISTS events_project_distinct ON events(project_id, distinct_id);
"""

#: Columns of :func:`events_frame`, in order.
EVENT_COLUMNS: tuple[str, ...] = (
    "uuid",
    "event",
    "distinct_id",
    "timestamp",
    "properties",
    "received_at",
    "sent_at",
    "token",
    "historical_migration",
    "endpoint",
    "project_id",
    "extra",
)

_INSERT = (
    "INSERT OR IGNORE INTO events(uuid, project_id, event, distinct_id, timestamp, properties, received_at, "
    "sent_at, token, historical_migration, endpoint, extra) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"
)


def upgrade_schema(store: Store) -> None:
    """Rebuild an `events` table of an older build (unique on `uuid` alone) with the dedupe key above; run
    before `SCHEMA`. Rows are kept."""
    row = store.query_one("SELECT sql FROM sqlite_master WHERE type='table' AND name='events'")
    if row is None or "uuid TEXT NOT NULL UNIQUE" not in str(row["sql"]):
        return
    with store.transaction() as conn:
        conn.execute("ALTER TABLE events RENAME TO events_before_upgrade")
        for statement in SCHEMA.split(";"):
            if "CREATE TABLE" in statement:
                conn.execute(statement)
        conn.execute("INSERT INTO events SELECT * FROM events_before_upgrade")
        conn.execute("DROP TABLE events_before_upgrade")  # and its indexes; `SCHEMA` recreates them


def insert_event_rows(conn: Any, rows: Sequence[Sequence[Any]]) -> int:
    """Insert prepared rows (the columns of `_INSERT` in order, JSON columns already text) inside the
    caller's transaction with one `executemany`; returns how many were new (the others were retries of
    stored events: PostHog's dedupe key, see the module docstring). Capture's bulk path: one statement for
    a whole chunk instead of one per event."""
    before = conn.total_changes
    conn.executemany(_INSERT, rows)
    return int(conn.total_changes - before)


def insert_events(conn: Any, rows: Sequence[dict[str, Any]]) -> list[bool]:
    """Insert normalised events inside the caller's transaction; True for each new event, False for a retry
    of a stored one (PostHog's dedupe key: project, day, event, distinct id, uuid)."""
    inserted: list[bool] = []
    dumps = json.dumps
    for r in rows:
        cur = conn.execute(
            _INSERT,
            (
                r["uuid"],
                r["project_id"],
                r["event"],
                r["distinct_id"],
                r["timestamp"],
                dumps(r["properties"], separators=(",", ":"), ensure_ascii=False, allow_nan=False),
                r["received_at"],
                r.get("sent_at"),
                r["token"],
                int(bool(r.get("historical_migration"))),
                r["endpoint"],
                dumps(r.get("extra") or {}, separators=(",", ":"), ensure_ascii=False, allow_nan=False),
            ),
        )
        inserted.append(cur.rowcount == 1)
    return inserted


def _where(
    project_id: int | None,
    event: str | Iterable[str] | None,
    distinct_id: str | None,
    after: str | None = None,
    before: str | None = None,
) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if project_id is not None:
        clauses.append("project_id=?")
        params.append(int(project_id))
    if event is not None:
        names = [event] if isinstance(event, str) else list(event)
        clauses.append("event IN (" + ",".join("?" * len(names)) + ")")
        params += names
    if distinct_id is not None:
        clauses.append("distinct_id=?")
        params.append(str(distinct_id))
    if after is not None:
        clauses.append("timestamp > ?")
        params.append(after)
    if before is not None:
        clauses.append("timestamp < ?")
        params.append(before)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def event_records(
    store: Store,
    *,
    project_id: int | None = None,
    event: str | Iterable[str] | None = None,
    distinct_id: str | None = None,
    limit: int | None = None,
    offset: int = 0,
    newest_first: bool = False,
    after: str | None = None,
    before: str | None = None,
) -> list[dict[str, Any]]:
    """Stored events as dicts (properties / extra decoded), in capture order (or newest first)."""
    where, params = _where(project_id, event, distinct_id, after, before)
    sql = (
        "SELECT uuid, event, distinct_id, timestamp, properties, received_at, sent_at, token, "
        "historical_migration, endpoint, project_id, extra FROM events"
        + where
        + (" ORDER BY seq DESC" if newest_first else " ORDER BY seq")
    )
    if limit is not None:
        sql += " LIMIT ? OFFSET ?"
        params += [int(limit), int(offset)]
    rows = store.query(sql, params)
    out = []
    for r in rows:
        rec = dict(zip(EVENT_COLUMNS, tuple(r), strict=True))
        rec["properties"] = json.loads(rec["properties"])
        rec["extra"] = json.loads(rec["extra"])
        rec["historical_migration"] = bool(rec["historical_migration"])
        out.append(rec)
    return out


def count_events(
    store: Store,
    *,
    project_id: int | None = None,
    event: str | Iterable[str] | None = None,
    distinct_id: str | None = None,
    after: str | None = None,
    before: str | None = None,
) -> int:
    """How many stored events match the filters."""
    where, params = _where(project_id, event, distinct_id, after, before)
    row = store.query_one("SELECT COUNT(*) FROM events" + where, params)
    return int(row[0]) if row else 0


def events_frame(
    store: Store,
    project_id: int | None = None,
    *,
    event: str | Iterable[str] | None = None,
    distinct_id: str | None = None,
    limit: int | None = None,
) -> pd.DataFrame:
    """Captured events as a DataFrame (capture order): uuid, event, distinct_id, timestamp / received_at /
    sent_at (tz-aware UTC, `datetime64[us, UTC]`), properties (dict), token, historical_migration, ..."""
    import pandas as pd

    records = event_records(store, project_id=project_id, event=event, distinct_id=distinct_id, limit=limit)
    frame = pd.DataFrame.from_records(records, columns=list(EVENT_COLUMNS))
    for col in ("timestamp", "received_at", "sent_at"):
        frame[col] = pd.to_datetime(frame[col], utc=True, format="ISO8601").astype("datetime64[us, UTC]")
    for col in ("uuid", "event", "distinct_id", "token", "endpoint"):
        frame[col] = frame[col].astype("str")
    frame["historical_migration"] = frame["historical_migration"].astype("boolean")
    frame["project_id"] = frame["project_id"].astype("Int64")
    for col in ("properties", "extra"):
        frame[col] = pd.Series(list(frame[col]), index=frame.index, dtype="object")
    return frame


def _api_event(rec: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": rec["uuid"],
        "uuid": rec["uuid"],
        "distinct_id": rec["distinct_id"],
        "properties": rec["properties"],
        "event": rec["event"],
        "timestamp": rec["timestamp"],
        "person": None,
        "elements": [],
        "elements_chain": "",
    }


async def events_list(request: Request) -> Response:
    """`GET /api/projects/:id/events/`: newest first, `event` / `distinct_id` / `after` / `before` filters,
    limit/offset pagination (default 100, max 1000) in SQL; scope `query:read` as on the real service."""
    ctx = context_of(request)
    ctx.authenticate_personal(request, "query:read")
    project_id = ctx.project_id_of(request)
    q = request.query_params
    limit = int_param(q.get("limit"), 100, name="limit") or 100
    if limit > 1000:
        raise validation_error(
            "Ensure this value is less than or equal to 1000.", attr="limit", code="max_value"
        )
    offset = int_param(q.get("offset"), 0, name="offset")
    filters: dict[str, Any] = {
        "project_id": project_id,
        "event": q.get("event") or None,
        "distinct_id": q.get("distinct_id") or None,
        "after": q.get("after") or None,
        "before": q.get("before") or None,
    }
    total = count_events(ctx.store, **filters)
    records = event_records(ctx.store, limit=limit, offset=offset, newest_first=True, **filters)
    return page_response(request, [_api_event(r) for r in records], count=total, limit=limit, offset=offset)


ENDPOINTS = [
    Endpoint(
        "GET",
        "/api/projects/{project_id}/events/",
        events_list,
        "events_list",
        "Captured events, newest first",
        query=(
            Query("event"),
            Query("distinct_id"),
            Query("after"),
            Query("before"),
            Query("limit", "integer", minimum=0, maximum=1000),
            Query("offset", "integer", minimum=0),
        ),
        returns="page",
        aliases=("/api/environments/{project_id}/events/",),
    )
]


def seed(store: Store, ctx: SandboxContext) -> None:
    """No demo events: the events table fills from capture."""

"""SQLite storage of the sandbox: one connection (a file or in memory), one transaction per write.

Each resource module (`_resources/*`) declares its tables in ``SCHEMA`` (``CREATE TABLE IF NOT EXISTS``),
run when the sandbox starts, after :data:`CORE_SCHEMA`. The core tables, shared by every resource:

* ``organizations(id TEXT uuid, name, slug, created_at, plugins_access_level)``
* ``projects(id INTEGER, organization_id, name, api_token, created_at, timezone)``
* ``users(id, uuid, distinct_id, first_name, last_name, email, ...)``
* ``activity_log``: use :meth:`Store.log_activity`.
* ``sandbox_meta(name, value)``: the seed state and the owner key (:meth:`Store.get_meta` / `set_meta`).

Every read/write goes through the store's lock, so handlers may call it from any thread.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

CORE_SCHEMA = """
CREATE TABLE IF NOT EXISTS organizations (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    slug TEXT NOT NULL,
    created_at TEXT NOT NULL,
    plugins_access_level INTEGER NOT NULL DEFAULT 9
);
CREATE TABLE IF NOT EXISTS projects (
    id INTEGER PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations(id),
    name TEXT NOT NULL,
    api_token TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    timezone TEXT NOT NULL DEFAULT 'UTC'
);
CREATE TABLE IF NOT EXISTS users (
    id INTEGER PRIMARY KEY,
    uuid TEXT NOT NULL UNIQUE,
    distinct_id TEXT NOT NULL,
    first_name TEXT NOT NULL DEFAULT '',
    last_name TEXT NOT NULL DEFAULT '',
    email TEXT NOT NULL UNIQUE,
    is_email_verified INTEGER NOT NULL DEFAULT 1,
    hedgehog_config TEXT,
    role_at_organization TEXT,
    organization_id TEXT NOT NULL,
    current_project_id INTEGER
);
CREATE TABLE IF NOT EXISTS personal_api_keys (
    id TEXT PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users(id),
    label TEXT NOT NULL,
    secure_value TEXT NOT NULL UNIQUE,
    mask_value TEXT NOT NULL,
    scopes TEXT NOT NULL,
    scoped_teams TEXT,
    scoped_organizations TEXT,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sandbox_meta (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS activity_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    organization_id TEXT,
    project_id INTEGER,
    scope TEXT NOT NULL,
    item_id TEXT,
    activity TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT '{}',
    user_id INTEGER,
    created_at TEXT NOT NULL
);
"""


def now_iso() -> str:
    """Current UTC time in the wire format of the real service (`2024-01-02T03:04:05.123456Z`)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def dumps(value: Any) -> str:
    """JSON text for a stored JSON column (strict: a non-finite number raises ValueError, so it is never
    stored)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def loads(text: str | None) -> Any:
    """Python value of a stored JSON column (`None` stays `None`)."""
    return None if text is None else json.loads(text)


class Store:
    """The sandbox database: a single SQLite connection guarded by a re-entrant lock.

    `path=None` (or ":memory:") keeps everything in memory; a file path makes the data durable across
    restarts.
    """

    def __init__(self, path: str | None = None) -> None:
        self.path = path or ":memory:"
        self.lock = threading.RLock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        if self.path != ":memory:":
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self.executescript(CORE_SCHEMA)

    # -- generic access ------------------------------------------------------------------------------------
    def executescript(self, sql: str) -> None:
        """Run several SQL statements (schema creation); this is the hook other modules use to add tables."""
        with self.lock:
            self._conn.executescript(sql)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: everything inside commits together or not at all (rolled back on error)."""
        with self.lock:
            if self._conn.in_transaction:  # nested: join the outer transaction
                yield self._conn
                return
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[sqlite3.Row]:
        """All rows of a read query."""
        with self.lock:
            return self._conn.execute(sql, params).fetchall()

    def query_one(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> sqlite3.Row | None:
        """The first row of a read query, or None."""
        with self.lock:
            return self._conn.execute(sql, params).fetchone()

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> int:
        """One write statement in its own transaction; returns `lastrowid`."""
        with self.transaction() as conn:
            cur = conn.execute(sql, params)
            return int(cur.lastrowid or 0)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]] | Iterator[Sequence[Any]]) -> None:
        """Many rows of one write statement in a single transaction (seeding, batches)."""
        with self.transaction() as conn:
            conn.executemany(sql, rows)

    def close(self) -> None:
        """Close the connection (the in-memory database is gone afterwards)."""
        with self.lock:
            self._conn.close()

    # -- sandbox metadata (seed state, owner key)
    def get_meta(self, name: str) -> str | None:
        """A value of the `sandbox_meta` table, None when unset."""
        row = self.query_one("SELECT value FROM sandbox_meta WHERE name=?", (name,))
        return None if row is None else str(row["value"])

    def set_meta(self, name: str, value: str) -> None:
        """Set a `sandbox_meta` value (inside the caller's transaction when there is one)."""
        self.execute(
            "INSERT INTO sandbox_meta(name, value) VALUES (?,?) "
            "ON CONFLICT(name) DO UPDATE SET value=excluded.value",
            (name, value),
        )

    # -- activity log
    def log_activity(
        self,
        *,
        scope: str,
        item_id: str | int | None,
        activity: str,
        detail: dict[str, Any],
        user_id: int | None,
        organization_id: str | None = None,
        project_id: int | None = None,
        conn: sqlite3.Connection | None = None,
    ) -> None:
        """Append an activity-log entry (pass `conn` to write it inside the caller's transaction)."""
        sql = (
            "INSERT INTO activity_log(organization_id, project_id, scope, item_id, activity, detail, "
            "user_id, "
            "created_at) VALUES (?,?,?,?,?,?,?,?)"
        )
        params = (
            organization_id,
            project_id,
            scope,
            None if item_id is None else str(item_id),
            activity,
            dumps(detail),
            user_id,
            now_iso(),
        )
        if conn is not None:
            conn.execute(sql, params)
        else:
            self.execute(sql, params)

"""Issue 12 finding 9: capture de-duplicates on PostHog's key (project, day, event, distinct id, uuid), not on
the uuid alone."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import httpx

from analytics_nb.sandbox import start

UUID = "0190b2a4-7a3c-7cc1-9a5e-4f1d2c3b4a59"


def _send(url: str, token: str, **event: str) -> None:
    body = {"api_key": token, "batch": [{"uuid": UUID, "timestamp": "2026-11-20T10:00:00Z", **event}]}
    assert httpx.post(f"{url}/batch/", json=body).status_code == 200


def test_same_uuid_differs_by_project_event_distinct_id_and_day() -> None:
    with start(seed="empty") as sb:
        second = sb.add_project("Second")
        _send(sb.url, sb.project_api_key, event="signup", distinct_id="ada")
        _send(sb.url, sb.project_api_key, event="signup", distinct_id="ada")  # a retry: dropped
        _send(sb.url, sb.project_api_key, event="login", distinct_id="ada")  # another event
        _send(sb.url, sb.project_api_key, event="signup", distinct_id="grace")  # another person
        _send(sb.url, sb.project_api_key, event="signup", distinct_id="ada", timestamp="2026-11-21T10:00:00Z")
        _send(sb.url, second.api_token, event="signup", distinct_id="ada")  # another project
        mine = sb.events()
        assert len(mine) == 4 and set(mine["uuid"]) == {UUID}
        rows = sb.ctx.store.query("SELECT project_id FROM events WHERE project_id=?", (second.id,))
        assert len(rows) == 1


def test_a_database_of_an_older_build_is_upgraded_keeping_its_events(tmp_path: Path) -> None:
    db = str(tmp_path / "old.sqlite")
    with start(seed="empty", db=db) as sb:
        _send(sb.url, sb.project_api_key, event="signup", distinct_id="ada")
    with sqlite3.connect(db) as conn:  # the table as older builds made it: unique on uuid alone
        conn.execute("DROP INDEX events_dedupe")
        create = conn.execute("SELECT sql FROM sqlite_master WHERE name='events'").fetchone()[0]
        conn.execute("ALTER TABLE events RENAME TO e0")
        conn.execute(create.replace("uuid TEXT NOT NULL,", "uuid TEXT NOT NULL UNIQUE,"))
        conn.execute("INSERT INTO events SELECT * FROM e0")
        conn.execute("DROP TABLE e0")
    with start(seed="empty", db=db) as sb:
        assert len(sb.events()) == 1
        _send(sb.url, sb.project_api_key, event="login", distinct_id="ada")  # same uuid, other event
        assert len(sb.events()) == 2

"""Persons and groups of the sandbox: fast reads for decide, bulk writes for the seed, and the person/group
updates that captured events carry (``$set``, ``$set_once``, ``$unset``, ``$groupidentify``).

The one place persons and groups are stored and read (decide, capture, the handle and the seeds all come
here). No HTTP endpoints of its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from .._context import SandboxContext
from .._store import Store, dumps
from . import demo_flags

__all__ = [
    "ENDPOINTS",
    "SCHEMA",
    "apply_event_updates",
    "bulk_set_groups",
    "bulk_set_persons",
    "group_properties",
    "group_properties_for",
    "group_type_index",
    "group_type_mapping",
    "person_properties",
    "seed",
    "set_group",
    "set_person",
]


SCHEMA = """
CREATE TABLE IF NOT EXISTS persons (
    project_id INTEGER NOT NULL,
    distinct_id TEXT NOT NULL,
    properties TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (project_id, distinct_id)
);
CREATE TABLE IF NOT EXISTS group_types (
    project_id INTEGER NOT NULL,
    group_type_index INTEGER NOT NULL,
    group_type TEXT NOT NULL,
    PRIMARY KEY (project_id, group_type_index),
    UNIQUE (project_id, group_type)
);
CREATE TABLE IF NOT EXISTS groups (
    project_id INTEGER NOT NULL,
    group_type_index INTEGER NOT NULL,
    group_key TEXT NOT NULL,
    properties TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (project_id, group_type_index, group_key)
);
"""
ENDPOINTS: list[Any] = []


def person_properties(store: Store, project_id: int, distinct_id: str) -> dict[str, Any]:
    """Stored properties of one person (one indexed point query); `{}` when the person is unknown."""
    row = store.query_one(
        "SELECT properties FROM persons WHERE project_id=? AND distinct_id=?", (project_id, distinct_id)
    )
    if row is None:
        return {}
    value = json.loads(row[0])
    return value if isinstance(value, dict) else {}


def set_person(store: Store, project_id: int, distinct_id: str, properties: Mapping[str, Any]) -> None:
    """Merge `properties` into the stored person (created when missing), like a `$set`."""
    with store.transaction() as conn:
        _apply_person(conn, project_id, distinct_id, {"$set": dict(properties)})


def group_type_index(store: Store, project_id: int, group_type: str, *, create: bool = False) -> int | None:
    """Index of a group type name (registered at the next free index when `create`), None when unknown."""
    with store.transaction() as conn:
        row = conn.execute(
            "SELECT group_type_index FROM group_types WHERE project_id=? AND group_type=?",
            (project_id, group_type),
        ).fetchone()
        if row is not None:
            return int(row[0])
        if not create:
            return None
        nxt = conn.execute(
            "SELECT COALESCE(MAX(group_type_index)+1, 0) FROM group_types WHERE project_id=?", (project_id,)
        ).fetchone()[0]
        conn.execute(
            "INSERT INTO group_types(project_id, group_type_index, group_type) VALUES (?,?,?)",
            (project_id, nxt, group_type),
        )
        return int(nxt)


def group_type_mapping(store: Store, project_id: int) -> dict[str, str]:
    """`{"0": "company"}`: group type index (as str) -> name, as local evaluation sends it."""
    rows = store.query(
        "SELECT group_type_index, group_type FROM group_types WHERE project_id=? ORDER BY group_type_index",
        (project_id,),
    )
    return {str(r[0]): str(r[1]) for r in rows}


def set_group(
    store: Store, project_id: int, group_type: str, group_key: str, properties: Mapping[str, Any]
) -> None:
    """Merge `properties` into a stored group (the group type is registered when new)."""
    with store.transaction() as conn:
        _apply_group(
            store,
            conn,
            project_id,
            {"$group_type": group_type, "$group_key": group_key, "$group_set": dict(properties)},
        )


def group_properties(store: Store, project_id: int, group_type: str, group_key: str) -> dict[str, Any]:
    """Stored properties of one group, `{}` when unknown."""
    row = store.query_one(
        "SELECT g.properties FROM groups g JOIN group_types t ON t.project_id=g.project_id "
        "AND t.group_type_index=g.group_type_index WHERE g.project_id=? AND t.group_type=? AND g.group_key=?",
        (project_id, group_type, group_key),
    )
    if row is None:
        return {}
    value = json.loads(row[0])
    return value if isinstance(value, dict) else {}


def group_properties_for(
    store: Store, project_id: int, groups: Mapping[str, str], mapping: Mapping[str, str]
) -> dict[str, dict[str, Any]]:
    """Stored properties of the request's groups `{type: key}` -> `{type: {prop: value}}`, in one query."""
    index_of = {name: int(index) for index, name in mapping.items()}
    wanted = [(index_of[name], str(key), name) for name, key in groups.items() if name in index_of]
    if not wanted:
        return {}
    clause = " OR ".join("(group_type_index=? AND group_key=?)" for _ in wanted)
    params: list[Any] = [project_id]
    for index, key, _ in wanted:
        params += [index, key]
    rows = store.query(
        f"SELECT group_type_index, group_key, properties FROM groups WHERE project_id=? AND ({clause})",
        params,
    )
    name_of = {(index, key): name for index, key, name in wanted}
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        name = name_of.get((int(r[0]), str(r[1])))
        if name is not None:
            value = json.loads(r[2])
            out[name] = value if isinstance(value, dict) else {}
    return out


def bulk_set_persons(store: Store, project_id: int, persons: Iterable[tuple[str, dict[str, Any]]]) -> None:
    """Insert or replace many persons `(distinct_id, properties)` in one transaction (seeding)."""
    store.executemany(
        "INSERT INTO persons(project_id, distinct_id, properties) VALUES (?,?,?) "
        "ON CONFLICT(project_id, distinct_id) DO UPDATE SET properties=excluded.properties",
        [(project_id, str(d), dumps(p)) for d, p in persons],
    )


def bulk_set_groups(
    store: Store, project_id: int, group_type: str, groups: Iterable[tuple[str, dict[str, Any]]]
) -> int:
    """Register `group_type` (next free index) and insert or replace its groups; returns the type's index."""
    index = group_type_index(store, project_id, group_type, create=True)
    assert index is not None
    store.executemany(
        "INSERT INTO groups(project_id, group_type_index, group_key, properties) VALUES (?,?,?,?) "
        "ON CONFLICT(project_id, group_type_index, group_key) DO UPDATE SET properties=excluded.properties",
        [(project_id, index, str(k), dumps(p)) for k, p in groups],
    )
    return index


def _apply_person(conn: Any, project_id: int, distinct_id: str, props: Mapping[str, Any]) -> None:
    set_ = props.get("$set")
    set_once = props.get("$set_once")
    unset = props.get("$unset")
    if not isinstance(set_, dict) and not isinstance(set_once, dict) and not isinstance(unset, list):
        return
    row = conn.execute(
        "SELECT properties FROM persons WHERE project_id=? AND distinct_id=?", (project_id, distinct_id)
    ).fetchone()
    current: dict[str, Any] = json.loads(row[0]) if row else {}
    if isinstance(set_once, dict):
        for key, value in set_once.items():
            current.setdefault(str(key), value)
    if isinstance(set_, dict):
        current.update({str(k): v for k, v in set_.items()})
    if isinstance(unset, list):
        for key in unset:
            current.pop(str(key), None)
    conn.execute(
        "INSERT INTO persons(project_id, distinct_id, properties) VALUES (?,?,?) "
        "ON CONFLICT(project_id, distinct_id) DO UPDATE SET properties=excluded.properties",
        (project_id, distinct_id, dumps(current)),
    )


def _apply_group(store: Store, conn: Any, project_id: int, props: Mapping[str, Any]) -> None:
    group_type = props.get("$group_type")
    group_key = props.get("$group_key")
    group_set = props.get("$group_set")
    if not isinstance(group_type, str) or group_key is None:
        return
    index = group_type_index(store, project_id, group_type, create=True)
    row = conn.execute(
        "SELECT properties FROM groups WHERE project_id=? AND group_type_index=? AND group_key=?",
        (project_id, index, str(group_key)),
    ).fetchone()
    current: dict[str, Any] = json.loads(row[0]) if row else {}
    if isinstance(group_set, dict):
        current.update({str(k): v for k, v in group_set.items()})
    conn.execute(
        "INSERT INTO groups(project_id, group_type_index, group_key, properties) VALUES (?,?,?,?) "
        "ON CONFLICT(project_id, group_type_index, group_key) DO UPDATE SET properties=excluded.properties",
        (project_id, index, str(group_key), dumps(current)),
    )


def apply_event_updates(
    store: Store, project_id: int, events: Iterable[Mapping[str, Any]], conn: Any
) -> None:
    """Update stored persons / groups from captured events, inside the caller's transaction `conn`.

    `$set` / `$set_once` / `$unset` (in `properties` or at the top level, as `$identify` sends them) update
    the event's person; `$groupidentify` events set `$group_set` on the group `$group_type` / `$group_key`.
    """
    for event in events:
        props = event.get("properties") or {}
        if not isinstance(props, dict) or props.get("$process_person_profile") is False:
            continue  # personless events never touch person profiles
        merged = dict(props)
        for top in ("$set", "$set_once", "$unset"):
            if top in event and top not in merged:
                merged[top] = event[top]
        _apply_person(conn, project_id, str(event["distinct_id"]), merged)
        if event.get("event") == "$groupidentify":
            _apply_group(store, conn, project_id, props)


def seed(store: Store, ctx: SandboxContext) -> None:
    """Demo seed: the `company` group type at index 0 with its companies, and the demo persons."""
    store.execute(
        "INSERT OR IGNORE INTO group_types(project_id, group_type_index, group_type) VALUES (?,?,?)",
        (ctx.project_id, 0, "company"),
    )
    bulk_set_groups(store, ctx.project_id, "company", demo_flags.demo_companies())
    bulk_set_persons(store, ctx.project_id, demo_flags.demo_persons())

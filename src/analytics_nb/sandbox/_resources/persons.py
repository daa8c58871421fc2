"""Persons and groups of the sandbox: fast reads for decide, bulk writes for the seed, and the person/group
updates that captured events carry (``$set``, ``$set_once``, ``$unset``, ``$groupidentify``).

The tables themselves (``persons``, ``group_types``, ``groups``) belong to the core store schema (decide,
capture and the handle all use them). No HTTP endpoints of its own.
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
    "group_properties_for",
    "group_type_mapping",
    "person_properties",
    "seed",
]


SCHEMA = ""  # persons / group_types / groups are core tables (`_store.CORE_SCHEMA`)
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


def group_type_mapping(store: Store, project_id: int) -> dict[str, str]:
    """`{"0": "company"}`: group type index (as str) -> name."""
    return store.group_type_mapping(project_id)


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
    index = store.group_type_index(project_id, group_type, create=True)
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
    index = store.group_type_index(project_id, group_type, create=True)
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

"""Persons and groups of the sandbox: fast reads for decide, bulk writes for the seed, and the person/group
updates that captured events carry (``$set``, ``$set_once``, ``$unset``, ``$groupidentify``, and the merges
of ``$identify`` / ``$create_alias`` / ``$merge_dangerously``).

The one place persons and groups are stored and read (decide, capture, the handle, the seeds and the HogQL
query endpoint all come here). No HTTP endpoints of its own.

**Persons and distinct ids.** One row of ``persons`` per distinct id, carrying its person's id (a uuid) and
the person's properties. All rows of one person hold the same properties, ``created_at`` and
``is_identified``: every write goes to all of them (so decide keeps its one indexed point read by distinct
id). A new person's id is PostHog's deterministic one, UUIDv5 of ``"<team id>:<distinct id>"`` in the
namespace ``932979b4-65c3-4424-8467-0b66ec27bc22`` (``plugin-server/src/worker/ingestion/person-uuid.ts``,
``uuidFromDistinctId``).

**Merges** follow ``PersonMergeService.handleIdentifyOrAlias`` / ``mergeDistinctIds`` / ``mergePeople``
(``plugin-server/src/worker/ingestion/persons/person-merge-service.ts``): ``$identify`` with
``$anon_distinct_id`` merges that id into the event's ``distinct_id``; ``$create_alias`` and
``$merge_dangerously`` merge ``properties.alias`` into it. Same ids, or an illegal id (``anonymous``,
``null``, ``0``, ... `isDistinctIdIllegal`), do nothing. Neither id known: one new person with both ids
(identified; its uuid from the event's distinct id). One known: the other id joins that person. Both known,
different persons: refused when the other id's person is already identified (except for
``$merge_dangerously``); else the other person's ids move to the event's person, whose properties become
``{**other, **target}`` (the target wins a conflict), ``created_at`` the older one, ``is_identified``
true, and the other person is gone. Any merge marks the event's person identified.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from .._context import SandboxContext
from .._store import Store, dumps
from . import demo_flags

__all__ = [
    "ADDED_COLUMNS",
    "ENDPOINTS",
    "MERGE_EVENTS",
    "SCHEMA",
    "apply_event_updates",
    "bulk_set_groups",
    "bulk_set_persons",
    "ensure_person_ids",
    "group_properties",
    "group_properties_for",
    "group_type_index",
    "group_type_mapping",
    "is_illegal_distinct_id",
    "merge_distinct_ids",
    "person_properties",
    "person_uuid",
    "seed",
    "set_group",
    "set_person",
]


SCHEMA = """
CREATE TABLE IF NOT EXISTS persons (
    project_id INTEGER NOT NULL,
    distinct_id TEXT NOT NULL,
    properties TEXT NOT NULL DEFAULT '{}',
    person_id TEXT,
    created_at TEXT,
    is_identified INTEGER NOT NULL DEFAULT 0,
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
#: Columns added after databases were first written (`_seeding.open_store` adds them to an older file).
ADDED_COLUMNS = (
    ("persons", "person_id", "TEXT"),
    ("persons", "created_at", "TEXT"),
    ("persons", "is_identified", "INTEGER NOT NULL DEFAULT 0"),
)
#: Indexes over the added columns (`_seeding.open_store` runs them after `ADDED_COLUMNS`): a person's rows
#: by person id, for the writes that keep them alike and the HogQL `persons` table (one row per person).
INDEXES = "CREATE INDEX IF NOT EXISTS persons_person_ids ON persons(project_id, person_id, distinct_id);"
#: PostHog's namespace for person uuids (`uuidFromDistinctId`, plugin-server `person-uuid.ts`).
PERSON_UUIDV5_NAMESPACE = uuid.UUID("932979b4-65c3-4424-8467-0b66ec27bc22")
#: Ids PostHog refuses to merge (`isDistinctIdIllegal`, person-merge-service.ts), bare and quoted.
_ILLEGAL_ANY_CASE = (
    "anonymous",
    "guest",
    "distinctid",
    "distinct_id",
    "id",
    "not_authenticated",
    "email",
    "undefined",
    "true",
    "false",
)
_ILLEGAL_CASED = ("[object Object]", "NaN", "None", "none", "null", "0", "undefined")
_ILLEGAL_LOWER = frozenset(q + i + q for i in _ILLEGAL_ANY_CASE for q in ("", "'", '"'))
_ILLEGAL_EXACT = frozenset(q + i + q for i in _ILLEGAL_CASED for q in ("", "'", '"'))
#: Events that merge two distinct ids, and the property naming the other id.
MERGE_EVENTS = {"$identify": "$anon_distinct_id", "$create_alias": "alias", "$merge_dangerously": "alias"}


def person_uuid(project_id: int, distinct_id: str) -> str:
    """PostHog's deterministic person id of a distinct id: UUIDv5 of ``"<team id>:<distinct id>"``."""
    return str(uuid.uuid5(PERSON_UUIDV5_NAMESPACE, f"{project_id}:{distinct_id}"))


def is_illegal_distinct_id(distinct_id: str) -> bool:
    """Whether PostHog refuses to merge this id (`isDistinctIdIllegal`: blank, `anonymous`, `null`, ...)."""
    return distinct_id.strip() == "" or distinct_id.lower() in _ILLEGAL_LOWER or distinct_id in _ILLEGAL_EXACT


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def ensure_person_ids(store: Store) -> None:
    """Give rows written by an older build (no person id) their deterministic id. Cheap when there is
    nothing to fill (one query over the person-id index, `INDEXES`)."""
    rows = store.query("SELECT project_id, distinct_id FROM persons WHERE person_id IS NULL")
    if rows:
        stamp = _now()
        store.executemany(
            "UPDATE persons SET person_id=?, created_at=COALESCE(created_at, ?) "
            "WHERE project_id=? AND distinct_id=?",
            [(person_uuid(int(r[0]), str(r[1])), stamp, r[0], r[1]) for r in rows],
        )


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
    """Insert or replace many one-id persons `(distinct_id, properties)` in one transaction (seeding); a new
    row gets its deterministic person id. (Several ids per person: `bulk_set_person_ids`.)"""
    stamp = _now()
    store.executemany(
        "INSERT INTO persons(project_id, distinct_id, properties, person_id, created_at) VALUES (?,?,?,?,?) "
        "ON CONFLICT(project_id, distinct_id) DO UPDATE SET properties=excluded.properties",
        [(project_id, str(d), dumps(p), person_uuid(project_id, str(d)), stamp) for d, p in persons],
    )


def bulk_set_person_ids(
    store: Store,
    project_id: int,
    persons: Iterable[tuple[Iterable[str], dict[str, Any], bool]],
) -> None:
    """Insert or replace many persons `(distinct_ids, properties, is_identified)` in one transaction, as if
    ingestion had already merged them (bench and test data at scale); the person id is the first id's
    deterministic one. An id already stored moves to the new person."""
    stamp = _now()
    rows = []
    for ids, props, identified in persons:
        ids = [str(i) for i in ids]
        pid, text = person_uuid(project_id, ids[0]), dumps(props)
        rows += [(project_id, d, text, pid, stamp, int(bool(identified))) for d in ids]
    store.executemany(
        "INSERT INTO persons(project_id, distinct_id, properties, person_id, created_at, is_identified) "
        "VALUES (?,?,?,?,?,?) ON CONFLICT(project_id, distinct_id) DO UPDATE SET "
        "properties=excluded.properties, person_id=excluded.person_id, created_at=excluded.created_at, "
        "is_identified=excluded.is_identified",
        rows,
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
    row = _person_row(conn, project_id, distinct_id)
    if row is None:
        row = _create_person(conn, project_id, [distinct_id], {}, identified=False)
    current: dict[str, Any] = json.loads(row[1])
    if isinstance(set_once, dict):
        for key, value in set_once.items():
            current.setdefault(str(key), value)
    if isinstance(set_, dict):
        current.update({str(k): v for k, v in set_.items()})
    if isinstance(unset, list):
        for key in unset:
            current.pop(str(key), None)
    conn.execute(
        "UPDATE persons SET properties=? WHERE project_id=? AND person_id=?",
        (dumps(current), project_id, row[0]),
    )


def _person_row(conn: Any, project_id: int, distinct_id: str) -> tuple[str, str, str, int] | None:
    """`(person_id, properties, created_at, is_identified)` of a distinct id's person, None when unknown (a
    row of an older build gets its deterministic person id here)."""
    row = conn.execute(
        "SELECT person_id, properties, created_at, is_identified FROM persons "
        "WHERE project_id=? AND distinct_id=?",
        (project_id, distinct_id),
    ).fetchone()
    if row is None:
        return None
    if row[0] is None:
        pid = person_uuid(project_id, distinct_id)
        conn.execute(
            "UPDATE persons SET person_id=?, created_at=COALESCE(created_at, ?) "
            "WHERE project_id=? AND distinct_id=?",
            (pid, _now(), project_id, distinct_id),
        )
        return (pid, str(row[1]), row[2] or _now(), int(row[3] or 0))
    return (str(row[0]), str(row[1]), str(row[2] or ""), int(row[3] or 0))


def _create_person(
    conn: Any, project_id: int, distinct_ids: list[str], properties: dict[str, Any], *, identified: bool
) -> tuple[str, str, str, int]:
    """A new person with these ids (its uuid from the first, as `createPerson` does)."""
    pid, text, stamp = person_uuid(project_id, distinct_ids[0]), dumps(properties), _now()
    conn.executemany(
        "INSERT INTO persons(project_id, distinct_id, properties, person_id, created_at, is_identified) "
        "VALUES (?,?,?,?,?,?)",
        [(project_id, d, text, pid, stamp, int(identified)) for d in distinct_ids],
    )
    return (pid, text, stamp, int(identified))


def _identified(conn: Any, project_id: int, person_id: str) -> None:
    conn.execute(
        "UPDATE persons SET is_identified=1 WHERE project_id=? AND person_id=?", (project_id, person_id)
    )


def merge_distinct_ids(conn: Any, project_id: int, other_id: str, into_id: str, event: str) -> None:
    """Merge `other_id`'s person into `into_id`'s as PostHog's ingestion does (module docstring;
    `PersonMergeService.merge` / `mergeDistinctIds` / `mergePeople`), inside the caller's transaction."""
    if other_id == into_id or is_illegal_distinct_id(into_id) or is_illegal_distinct_id(other_id):
        return
    other = _person_row(conn, project_id, other_id)
    into = _person_row(conn, project_id, into_id)
    if other is None and into is None:
        _create_person(conn, project_id, [into_id, other_id], {}, identified=True)
        return
    if other is None or into is None:
        person, new_id = (other, into_id) if other is not None else (into, other_id)
        assert person is not None
        conn.execute(
            "INSERT INTO persons(project_id, distinct_id, properties, person_id, created_at, is_identified) "
            "VALUES (?,?,?,?,?,1)",
            (project_id, new_id, person[1], person[0], person[2]),
        )
        conn.execute(
            "UPDATE persons SET is_identified=1 WHERE project_id=? AND person_id=?", (project_id, person[0])
        )
        return
    if other[0] == into[0]:
        conn.execute(
            "UPDATE persons SET is_identified=1 WHERE project_id=? AND person_id=?", (project_id, into[0])
        )
        return
    if (
        other[3] and event != "$merge_dangerously"
    ):  # `isMergeAllowed`: an identified person is not merged away
        conn.execute(
            "UPDATE persons SET is_identified=1 WHERE project_id=? AND person_id=?", (project_id, into[0])
        )
        return
    merged = {**json.loads(other[1]), **json.loads(into[1])}
    created = min(c for c in (other[2], into[2]) if c) if (other[2] or into[2]) else _now()
    conn.execute(
        "UPDATE persons SET person_id=?, properties=?, created_at=?, is_identified=1 "
        "WHERE project_id=? AND person_id IN (?,?)",
        (into[0], dumps(merged), created, project_id, into[0], other[0]),
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
        name, distinct_id = event.get("event"), str(event["distinct_id"])
        other_key = MERGE_EVENTS.get(str(name))
        if other_key is not None and props.get(other_key) not in (None, ""):
            merge_distinct_ids(conn, project_id, str(props[other_key]), distinct_id, str(name))
        _apply_person(conn, project_id, distinct_id, merged)
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

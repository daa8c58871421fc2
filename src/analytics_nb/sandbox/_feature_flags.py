"""Feature flag definitions of the sandbox: storage, the CRUD API, local evaluation, ``/flags/definitions``.

Definitions are stored in the wire shape of ``/api/projects/:id/feature_flags/``. Decide reads them through
:func:`flag_set`, a per-project cache (definitions, the engine's compiled form, cohorts, the pre-serialised
definitions body and its ETag) that every write here invalidates, so decide never re-parses definitions.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ._errors import APIError, method_not_allowed, not_found, validation_error
from ._http import int_param, page_links, parse_json_body, read_body, require_object
from ._store import Store, dumps, loads, now_iso

__all__ = [
    "SCHEMA",
    "FlagSet",
    "compile_definitions",
    "create_cohort",
    "create_flag",
    "flag_set",
    "get_flag",
    "hash_key_overrides",
    "invalidate_flags",
    "list_flags",
    "local_evaluation_body",
    "routes",
    "update_flag",
    "write_hash_key_overrides",
]

SCHEMA = """
CREATE TABLE IF NOT EXISTS feature_flags (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id INTEGER NOT NULL,
    key TEXT NOT NULL,
    body TEXT NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0,
    version INTEGER NOT NULL DEFAULT 1
);
CREATE UNIQUE INDEX IF NOT EXISTS feature_flags_live_key ON feature_flags(project_id, key) WHERE deleted = 0;
CREATE TABLE IF NOT EXISTS cohorts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    filters TEXT NOT NULL,
    is_static INTEGER NOT NULL DEFAULT 0,
    deleted INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS flag_hash_key_overrides (
    project_id INTEGER NOT NULL,
    distinct_id TEXT NOT NULL,
    feature_flag_key TEXT NOT NULL,
    hash_key TEXT NOT NULL,
    PRIMARY KEY (project_id, distinct_id, feature_flag_key)
);
"""

_KEY_RE = re.compile(r"^[a-zA-Z0-9_-]+$")
_WRITABLE = (
    "name",
    "key",
    "filters",
    "active",
    "deleted",
    "ensure_experience_continuity",
    "tags",
    "evaluation_tags",
    "evaluation_runtime",
    "rollback_conditions",
    "is_remote_configuration",
    "has_encrypted_payloads",
    "bucketing_identifier",
    "creation_context",
)
_BOOL_FIELDS = (
    "active",
    "deleted",
    "ensure_experience_continuity",
    "is_remote_configuration",
    "has_encrypted_payloads",
)


# -- the per-project cache -----------------------------------------------------------------------------------
@dataclass
class FlagSet:
    """Everything decide needs about one project's flags, built once per flag write."""

    definitions: list[dict[str, Any]]  # local-evaluation shape, active and inactive, not deleted
    cohorts: dict[str, Any]
    group_type_mapping: dict[str, str]
    has_group_flags: bool
    compiled: Any = None  # the flag engine's CompiledFlags (None when no flag compiles)
    bad_keys: frozenset[str] = frozenset()  # flags the engine could not compile (answered as failed)
    definitions_body: bytes = b""  # `{flags, group_type_mapping, cohorts}` JSON, served as is
    etag: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


_cache_lock = threading.Lock()
#: Flag sets per store (weak: a stopped sandbox's store and its cache go away together).
_caches: weakref.WeakKeyDictionary[Store, dict[int, FlagSet]] = weakref.WeakKeyDictionary()


def _cache_for(store: Store) -> dict[int, FlagSet]:
    cache = _caches.get(store)
    if cache is None:
        with _cache_lock:
            cache = _caches.get(store)
            if cache is None:
                cache = {}
                _caches[store] = cache
    return cache


def invalidate_flags(store: Store, project_id: int | None = None) -> None:
    """Drop the cached flag set of a project (all projects when None); call after any definition write."""
    cache = _cache_for(store)
    with _cache_lock:
        if project_id is None:
            cache.clear()
        else:
            cache.pop(int(project_id), None)


def hash_key_overrides(store: Store, project_id: int, distinct_id: str) -> dict[str, str]:
    """Stored experience-continuity hash keys of one distinct id: `{flag key: hash key}` (one query)."""
    rows = store.query(
        """SELECT feature_flag_key, hash_key FROM flag_hash_key_overrides
        WHERE project_id=? AND distinct_id=?""",
        (project_id, distinct_id),
    )
    return {str(r[0]): str(r[1]) for r in rows}


def write_hash_key_overrides(
    store: Store, project_id: int, distinct_id: str, hash_key: str, flag_keys: Iterable[str]
) -> None:
    """Store `hash_key` (the `$anon_distinct_id`) as the hash key of `distinct_id` for each flag that has no
    override yet; an existing override is kept, as PostHog does (the first anonymous id wins)."""
    rows = [(project_id, distinct_id, str(key), hash_key) for key in flag_keys]
    if rows:
        store.executemany(
            "INSERT OR IGNORE INTO flag_hash_key_overrides"
            "(project_id, distinct_id, feature_flag_key, hash_key) VALUES (?,?,?,?)",
            rows,
        )


def compile_definitions(
    definitions: list[dict[str, Any]], cohorts: dict[str, Any], mapping: dict[str, str], timezone: str = "UTC"
) -> tuple[Any, frozenset[str]]:
    """The engine's compiled form of a project's flags and the keys of those it cannot evaluate: the engine
    isolates each bad definition to its own flag, answered as failing (`errorsWhileComputingFlags`)."""
    from analytics_nb.flags import compile_flags

    try:
        compiled = compile_flags(definitions, cohorts=cohorts, group_type_mapping=mapping, timezone=timezone)
    except ValueError:  # e.g. a project time zone that is not an IANA name: fall back to UTC
        compiled = compile_flags(definitions, cohorts=cohorts, group_type_mapping=mapping)
    return compiled, frozenset(compiled.errors)


def flag_set(store: Store, project_id: int) -> FlagSet:
    """The cached :class:`FlagSet` of a project (built on first use after a write)."""
    cache = _cache_for(store)
    cached = cache.get(project_id)
    if cached is not None:
        return cached
    built = _build_flag_set(store, project_id)
    with _cache_lock:
        cache[project_id] = built
    return built


def _build_flag_set(store: Store, project_id: int) -> FlagSet:
    rows = store.query(
        "SELECT id, body, version FROM feature_flags WHERE project_id=? AND deleted=0 ORDER BY id",
        (project_id,),
    )
    stored = [_row_flag(r) for r in rows]
    definitions = [_local_shape(f, project_id) for f in stored]
    _add_dependency_chains(definitions)
    cohorts = _cohorts_map(store, project_id)
    mapping = store.group_type_mapping(project_id)
    body = {"flags": definitions, "group_type_mapping": mapping, "cohorts": cohorts}
    raw = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    etag = '"' + hashlib.sha256(raw).hexdigest()[:32] + '"'
    has_group = any(d["filters"].get("aggregation_group_type_index") is not None for d in definitions) or any(
        p.get("type") == "group"
        for d in definitions
        for g in d["filters"].get("groups") or []
        for p in g.get("properties") or []
    )
    result = FlagSet(definitions, cohorts, mapping, has_group, definitions_body=raw, etag=etag)
    tz_rows = store.query("SELECT timezone FROM projects WHERE id=?", (project_id,))
    timezone = str(tz_rows[0][0]) if tz_rows and tz_rows[0][0] else "UTC"
    result.compiled, result.bad_keys = compile_definitions(definitions, cohorts, mapping, timezone)
    return result


def _row_flag(row: Any) -> dict[str, Any]:
    flag = loads(row["body"])
    flag["id"] = row["id"]
    flag["version"] = row["version"]
    return flag


def _local_shape(flag: dict[str, Any], project_id: int) -> dict[str, Any]:
    return {
        "id": flag["id"],
        "team_id": project_id,
        "name": flag.get("name", ""),
        "key": flag["key"],
        "filters": json.loads(json.dumps(flag.get("filters") or {})),  # a private deep copy
        "deleted": bool(flag.get("deleted", False)),
        "active": bool(flag.get("active", True)),
        "ensure_experience_continuity": bool(flag.get("ensure_experience_continuity") or False),
        "has_encrypted_payloads": bool(flag.get("has_encrypted_payloads") or False),
        "version": flag.get("version", 1),
        "evaluation_runtime": flag.get("evaluation_runtime", "all"),
        "bucketing_identifier": flag.get("bucketing_identifier", "distinct_id"),
    }


def _flag_props(filters: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for section in ("groups", "super_groups", "holdout_groups"):
        for group in filters.get(section) or []:
            if isinstance(group, dict):
                out.extend(p for p in group.get("properties") or [] if isinstance(p, dict))
    return out


def _add_dependency_chains(definitions: list[dict[str, Any]]) -> None:
    """Flag-dependency filters: key -> the flag *key* (ids resolved) and `dependency_chain` (evaluation order,
    the referenced flag last; empty when circular), the shape the official SDK's local evaluation reads."""
    by_key = {d["key"]: d for d in definitions}
    by_id = {str(d["id"]): d["key"] for d in definitions}

    def deps(key: str) -> list[str]:
        flag = by_key.get(key)
        if flag is None:
            return []
        out = []
        for prop in _flag_props(flag["filters"]):
            if prop.get("type") == "flag":
                ref = str(prop.get("key"))
                out.append(by_id.get(ref, ref) if ref not in by_key else ref)
        return out

    def chain(key: str) -> list[str]:
        order: list[str] = []
        visiting: set[str] = set()

        def visit(k: str) -> bool:
            if k in order:
                return True
            if k in visiting:
                return False
            visiting.add(k)
            for dep in deps(k):
                if not visit(dep):
                    return False
            visiting.discard(k)
            order.append(k)
            return True

        return order if visit(key) else []

    for definition in definitions:
        for prop in _flag_props(definition["filters"]):
            if prop.get("type") == "flag":
                ref = str(prop.get("key"))
                key = ref if ref in by_key else by_id.get(ref, ref)
                prop["key"] = key
                prop["dependency_chain"] = chain(key)


def _cohorts_map(store: Store, project_id: int) -> dict[str, Any]:
    rows = store.query(
        "SELECT id, filters FROM cohorts WHERE project_id=? AND deleted=0 AND is_static=0 ORDER BY id",
        (project_id,),
    )
    out: dict[str, Any] = {}
    for r in rows:
        filters = loads(r["filters"]) or {}
        out[str(r["id"])] = filters.get("properties", filters) if isinstance(filters, dict) else filters
    return out


# -- storage API ---------------------------------------------------------------------------------------------
def _engine_check(store: Store, project_id: int, flag: dict[str, Any]) -> None:
    """Run the flag engine's definition checks on the flag together with the project's other flags (so that
    a dependency cycle is caught too); raise 400 validation_error (attr `filters`) naming the problem."""
    try:
        from analytics_nb.flags import FlagDefinitionError, compile_flags
    except ImportError:  # the engine is part of the package; this only guards partial installs
        return
    candidate = _local_shape(
        {**flag, "id": flag.get("id") or 0, "version": flag.get("version", 1)}, project_id
    )
    if candidate["deleted"]:
        return
    others = [
        d
        for d in flag_set(store, project_id).definitions
        if d["id"] != flag.get("id") and d["key"] != flag.get("key")
    ]
    try:
        compile_flags([candidate], strict=True)
        compile_flags([*others, candidate], strict=True)
    except FlagDefinitionError as exc:
        raise validation_error(str(exc), attr="filters") from None
    except (ValueError, TypeError) as exc:
        raise validation_error(str(exc), attr="filters") from None


def _structural_check(flag: dict[str, Any]) -> None:
    filters = flag.get("filters")
    if not isinstance(filters, dict):
        raise validation_error(
            f'Expected a dictionary of items but got type "{type(filters).__name__}".',
            attr="filters",
            code="not_a_dict",
        )
    groups = filters.get("groups", [])
    if groups is not None and not isinstance(groups, list):
        raise validation_error("filters.groups must be a list of condition groups.", attr="filters")
    for i, group in enumerate(groups or []):
        if not isinstance(group, dict):
            raise validation_error(f"filters.groups[{i}] must be an object.", attr="filters")
        pct = group.get("rollout_percentage")
        if pct is not None and (
            isinstance(pct, bool) or not isinstance(pct, int | float) or not 0 <= pct <= 100
        ):
            raise validation_error(
                f"filters.groups[{i}].rollout_percentage must be a number between 0 and 100.", attr="filters"
            )
        props = group.get("properties", [])
        if props is not None and not isinstance(props, list):
            raise validation_error(f"filters.groups[{i}].properties must be a list.", attr="filters")
        for j, prop in enumerate(props or []):
            if not isinstance(prop, dict) or "key" not in prop:
                raise validation_error(
                    f"filters.groups[{i}].properties[{j}] must be an object with a 'key'.", attr="filters"
                )
    multivariate = filters.get("multivariate")
    if multivariate is not None:
        variants = multivariate.get("variants") if isinstance(multivariate, dict) else None
        if not isinstance(variants, list):
            raise validation_error("filters.multivariate.variants must be a list.", attr="filters")
        total = 0.0
        for v in variants:
            if not isinstance(v, dict) or not isinstance(v.get("key"), str):
                raise validation_error("Each variant needs a string 'key'.", attr="filters")
            pct = v.get("rollout_percentage", 0)
            if isinstance(pct, bool) or not isinstance(pct, int | float):
                raise validation_error(
                    f"Variant {v['key']!r} needs a numeric rollout_percentage.", attr="filters"
                )
            total += float(pct)
        if variants and abs(total - 100) > 1e-9:
            raise validation_error(
                "Invalid variant definitions: Variant rollout percentages must sum to 100.", attr="filters"
            )
    payloads = filters.get("payloads")
    if payloads is not None and not isinstance(payloads, dict):
        raise validation_error(
            "filters.payloads must be an object keyed by variant or 'true'.", attr="filters"
        )
    agg = filters.get("aggregation_group_type_index")
    if agg is not None and (isinstance(agg, bool) or not isinstance(agg, int)):
        raise validation_error(
            "filters.aggregation_group_type_index must be an integer or null.", attr="filters"
        )


def _normalise_payloads(filters: dict[str, Any]) -> None:
    payloads = filters.get("payloads")
    if isinstance(payloads, dict):
        filters["payloads"] = {
            str(k): (v if isinstance(v, str) or v is None else json.dumps(v, separators=(",", ":")))
            for k, v in payloads.items()
        }


def _clean_input(data: Any, *, partial: bool) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise validation_error(
            f"Invalid data. Expected a dictionary, but got {type(data).__name__}.",
            attr="non_field_errors",
            code="invalid_input",
        )
    out: dict[str, Any] = {}
    for name in _WRITABLE:
        if name not in data:
            continue
        value = data[name]
        if name in _BOOL_FIELDS and not isinstance(value, bool):
            if value is None and name == "ensure_experience_continuity":
                value = False
            else:
                raise validation_error("Must be a valid boolean.", attr=name, code="invalid")
        if name in ("name", "key") and value is not None and not isinstance(value, str):
            raise validation_error("Not a valid string.", attr=name, code="invalid")
        out[name] = value
    if not partial and not out.get("key"):
        raise validation_error("This field is required.", attr="key", code="required")
    if "key" in out:
        if not out["key"]:
            raise validation_error("This field may not be blank.", attr="key", code="blank")
        if not _KEY_RE.match(out["key"]):
            raise validation_error(
                "Only letters, numbers, hyphens (-) & underscores (_) are allowed.",
                attr="key",
                code="invalid_key",
            )
    if "filters" in out:
        if out["filters"] is None:
            out["filters"] = {}
        _structural_check(out)
        out["filters"] = json.loads(json.dumps(out["filters"]))
        _normalise_payloads(out["filters"])
    return out


def _default_body(project_id: int) -> dict[str, Any]:
    return {
        "name": "",
        "key": "",
        "filters": {
            "groups": [{"properties": [], "rollout_percentage": None}],
            "multivariate": None,
            "payloads": {},
        },
        "deleted": False,
        "active": True,
        "ensure_experience_continuity": False,
        "tags": [],
        "evaluation_tags": [],
        "evaluation_runtime": "all",
        "rollback_conditions": None,
        "is_remote_configuration": False,
        "has_encrypted_payloads": False,
        "bucketing_identifier": "distinct_id",
        "creation_context": "feature_flags",
        "team_id": project_id,
    }


def create_flag(
    store: Store,
    project_id: int,
    data: dict[str, Any],
    *,
    user: dict[str, Any] | None = None,
    validate: bool = True,
) -> dict[str, Any]:
    """Create a flag from wire-shape `data` (validated: 400 naming the attr); returns its API shape."""
    clean = _clean_input(data, partial=False)
    body = {**_default_body(project_id), **clean}
    if validate:
        _engine_check(store, project_id, body)
    stamp = now_iso()
    body.update(created_at=stamp, updated_at=stamp, created_by=user, last_modified_by=user)
    with store.transaction() as conn:
        if conn.execute(
            "SELECT 1 FROM feature_flags WHERE project_id=? AND key=? AND deleted=0",
            (project_id, body["key"]),
        ).fetchone():
            raise validation_error(
                "There is already a feature flag with this key.", attr="key", code="unique"
            )
        cur = conn.execute(
            "INSERT INTO feature_flags(project_id, key, body, deleted, version) VALUES (?,?,?,?,1)",
            (project_id, body["key"], dumps(body), int(bool(body.get("deleted")))),
        )
        flag_id = int(cur.lastrowid or 0)
        store.log_activity(
            scope="FeatureFlag",
            item_id=flag_id,
            activity="created",
            detail={"key": body["key"]},
            user_id=(user or {}).get("id"),
            project_id=project_id,
            conn=conn,
        )
    invalidate_flags(store, project_id)
    return get_flag(store, project_id, flag_id)


def update_flag(
    store: Store, project_id: int, flag_id: int, data: dict[str, Any], *, user: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Apply a partial update (PATCH/PUT semantics of the real API), bump `version`, return the new flag."""
    clean = _clean_input(data, partial=True)
    with store.transaction() as conn:
        row = conn.execute(
            "SELECT id, body, version FROM feature_flags WHERE project_id=? AND id=?", (project_id, flag_id)
        ).fetchone()
        if row is None:
            raise not_found()
        current = _row_flag(row)
        if current.get("deleted") and clean.get("deleted") is not False:
            raise not_found()
        merged = {**current, **clean}
        _engine_check(store, project_id, merged)
        if (
            "key" in clean
            and clean["key"] != current["key"]
            and conn.execute(
                "SELECT 1 FROM feature_flags WHERE project_id=? AND key=? AND deleted=0 AND id<>?",
                (project_id, clean["key"], flag_id),
            ).fetchone()
        ):
            raise validation_error(
                "There is already a feature flag with this key.", attr="key", code="unique"
            )
        merged["updated_at"] = now_iso()
        merged["last_modified_by"] = user
        version = int(row["version"]) + 1
        merged.pop("id", None)
        merged.pop("version", None)
        conn.execute(
            "UPDATE feature_flags SET key=?, body=?, deleted=?, version=? WHERE id=?",
            (merged["key"], dumps(merged), int(bool(merged.get("deleted"))), version, flag_id),
        )
        store.log_activity(
            scope="FeatureFlag",
            item_id=flag_id,
            activity="updated",
            detail={"key": merged["key"], "fields": sorted(clean)},
            user_id=(user or {}).get("id"),
            project_id=project_id,
            conn=conn,
        )
    invalidate_flags(store, project_id)
    return get_flag(store, project_id, flag_id, include_deleted=True)


def _api_shape(flag: dict[str, Any], project_id: int) -> dict[str, Any]:
    filters = flag.get("filters") or {}
    groups = filters.get("groups") or []
    simple = (
        len(groups) == 1
        and not (groups[0].get("properties") or [])
        and not filters.get("multivariate")
        and filters.get("aggregation_group_type_index") is None
    )
    status = "ACTIVE" if flag.get("active", True) else "INACTIVE"
    if flag.get("deleted"):
        status = "DELETED"
    return {
        "id": flag["id"],
        "name": flag.get("name", ""),
        "key": flag["key"],
        "filters": filters,
        "deleted": bool(flag.get("deleted", False)),
        "active": bool(flag.get("active", True)),
        "created_by": flag.get("created_by"),
        "created_at": flag.get("created_at"),
        "updated_at": flag.get("updated_at"),
        "version": flag.get("version", 1),
        "last_modified_by": flag.get("last_modified_by"),
        "is_simple_flag": simple,
        "rollout_percentage": groups[0].get("rollout_percentage") if simple else None,
        "ensure_experience_continuity": bool(flag.get("ensure_experience_continuity") or False),
        "experiment_set": flag.get("experiment_set", []),
        "surveys": [],
        "features": [],
        "rollback_conditions": flag.get("rollback_conditions"),
        "performed_rollback": False,
        "can_edit": True,
        "tags": flag.get("tags", []),
        "evaluation_tags": flag.get("evaluation_tags", []),
        "usage_dashboard": None,
        "analytics_dashboards": [],
        "has_enriched_analytics": False,
        "user_access_level": "editor",
        "creation_context": flag.get("creation_context", "feature_flags"),
        "is_remote_configuration": bool(flag.get("is_remote_configuration") or False),
        "has_encrypted_payloads": bool(flag.get("has_encrypted_payloads") or False),
        "status": status,
        "evaluation_runtime": flag.get("evaluation_runtime", "all"),
        "bucketing_identifier": flag.get("bucketing_identifier", "distinct_id"),
        "team_id": project_id,
    }


def get_flag(store: Store, project_id: int, flag_id: int, *, include_deleted: bool = False) -> dict[str, Any]:
    """One flag in the API shape; 404 (APIError) when unknown or soft-deleted."""
    row = store.query_one(
        "SELECT id, body, version, deleted FROM feature_flags WHERE project_id=? AND id=?",
        (project_id, flag_id),
    )
    if row is None or (row["deleted"] and not include_deleted):
        raise not_found()
    return _api_shape(_row_flag(row), project_id)


def list_flags(store: Store, project_id: int, *, include_deleted: bool = False) -> list[dict[str, Any]]:
    """All flags of a project in the API shape, newest first (as the real list orders by -created_at)."""
    rows = store.query(
        "SELECT id, body, version, deleted FROM feature_flags WHERE project_id=?"
        + ("" if include_deleted else " AND deleted=0")
        + " ORDER BY id DESC",
        (project_id,),
    )
    return [_api_shape(_row_flag(r), project_id) for r in rows]


def create_cohort(
    store: Store, project_id: int, name: str, properties: dict[str, Any], *, is_static: bool = False
) -> int:
    """Store a cohort whose `filters.properties` is the property group `{"type": "OR", "values": [...]}`."""
    cohort_id = store.execute(
        "INSERT INTO cohorts(project_id, name, filters, is_static, deleted, created_at) VALUES (?,?,?,?,0,?)",
        (project_id, name, dumps({"properties": properties}), int(is_static), now_iso()),
    )
    invalidate_flags(store, project_id)
    return cohort_id


def local_evaluation_body(store: Store, project_id: int) -> dict[str, Any]:
    """`{flags, group_type_mapping, cohorts}` as local evaluation and `/flags/definitions` send it."""
    return json.loads(flag_set(store, project_id).definitions_body)


# -- HTTP ----------------------------------------------------------------------------------------------------
def _ctx(request: Request) -> Any:
    return request.app.state.sandbox


async def _json_body(request: Request) -> Any:
    return require_object(parse_json_body(request, await read_body(request)))


async def flags_collection(request: Request) -> Response:
    """GET list (paginated, `search`, `active`) / POST create under `/api/projects/:id/feature_flags/`."""
    ctx = _ctx(request)
    if request.method == "POST":
        user = ctx.authenticate_personal(request, "feature_flag:write")
        project_id = ctx.project_id_of(request)
        data = await _json_body(request)
        flag = create_flag(ctx.store, project_id, data, user=user.basic())
        return JSONResponse(flag, status_code=201)
    if request.method != "GET":
        raise method_not_allowed(request.method)
    ctx.authenticate_personal(request, "feature_flag:read")
    project_id = ctx.project_id_of(request)
    flags = list_flags(ctx.store, project_id)
    search = request.query_params.get("search")
    if search:
        needle = search.lower()
        flags = [f for f in flags if needle in f["key"].lower() or needle in (f["name"] or "").lower()]
    active = request.query_params.get("active")
    if active in ("true", "false"):
        flags = [f for f in flags if f["active"] == (active == "true")]
    limit = int_param(request.query_params.get("limit"), 100) or 100
    offset = int_param(request.query_params.get("offset"), 0)
    nxt, prev = page_links(request, count=len(flags), limit=limit, offset=offset)
    return JSONResponse(
        {"count": len(flags), "next": nxt, "previous": prev, "results": flags[offset : offset + limit]}
    )


def _flag_id(request: Request) -> int:
    raw = str(request.path_params["flag_id"])
    try:
        value = int(raw)
    except ValueError:
        raise not_found() from None
    if not 0 < value < 2**63:  # SQLite's INTEGER range; anything else cannot exist
        raise not_found()
    return value


async def flag_detail(request: Request) -> Response:
    """GET retrieve / PATCH / PUT update (bumps `version`); DELETE is refused (soft delete with `deleted`)."""
    ctx = _ctx(request)
    if request.method == "GET":
        ctx.authenticate_personal(request, "feature_flag:read")
        return JSONResponse(get_flag(ctx.store, ctx.project_id_of(request), _flag_id(request)))
    if request.method in ("PATCH", "PUT"):
        user = ctx.authenticate_personal(request, "feature_flag:write")
        data = await _json_body(request)
        flag = update_flag(ctx.store, ctx.project_id_of(request), _flag_id(request), data, user=user.basic())
        return JSONResponse(flag)
    if request.method == "DELETE":
        ctx.authenticate_personal(request, "feature_flag:write")
        raise method_not_allowed("DELETE")
    raise method_not_allowed(request.method)


def _project_for_token(ctx: Any, request: Request, user: Any) -> int:
    token = request.query_params.get("token")
    if token:
        row = ctx.store.query_one("SELECT id, organization_id FROM projects WHERE api_token=?", (token,))
        if row is None or row["organization_id"] != user.organization_id:
            raise APIError(
                401,
                "authentication_error",
                "invalid_api_key",
                "Project API key invalid. You can find your project API key in PostHog project settings.",
            )
        return int(row["id"])
    if "project_id" in request.path_params:
        return int(ctx.project_id_of(request))
    if user.current_project_id is None:
        raise not_found("Project not found.")
    return int(user.current_project_id)


def _definitions_response(ctx: Any, request: Request, project_id: int) -> Response:
    fs = flag_set(ctx.store, project_id)
    if fs.group_type_mapping != ctx.store.group_type_mapping(project_id):  # a group type was added meanwhile
        invalidate_flags(ctx.store, project_id)
        fs = flag_set(ctx.store, project_id)
    headers = {"ETag": fs.etag, "Cache-Control": "no-cache"}
    if request.headers.get("if-none-match") == fs.etag:
        return Response(status_code=304, headers=headers)
    return Response(fs.definitions_body, media_type="application/json", headers=headers)


async def local_evaluation(request: Request) -> Response:
    """`GET /api/feature_flag/local_evaluation/?token=` (or under a project): definitions for local eval."""
    ctx = _ctx(request)
    user = ctx.authenticate_personal(request, "feature_flag:read", throttle="local_evaluation")
    return _definitions_response(ctx, request, _project_for_token(ctx, request, user))


async def flags_definitions(request: Request) -> Response:
    """`GET /flags/definitions?token=` (what posthog-python polls), personal key as Bearer; ETag / 304."""
    ctx = _ctx(request)
    user = ctx.authenticate_personal(request, "feature_flag:read", throttle="local_evaluation")
    return _definitions_response(ctx, request, _project_for_token(ctx, request, user))


def routes() -> list[BaseRoute]:
    """Routes of this module (trailing slash optional), mounted by the sandbox app."""
    out: list[BaseRoute] = []
    for base in ("/api/projects/{project_id}/feature_flags", "/api/environments/{project_id}/feature_flags"):
        out += [
            Route(base + "/local_evaluation", local_evaluation, methods=["GET"]),
            Route(base + "/local_evaluation/", local_evaluation, methods=["GET"]),
            Route(base, flags_collection, methods=["GET", "POST"]),
            Route(base + "/", flags_collection, methods=["GET", "POST"]),
            Route(base + "/{flag_id}", flag_detail, methods=["GET", "PATCH", "PUT", "DELETE"]),
            Route(base + "/{flag_id}/", flag_detail, methods=["GET", "PATCH", "PUT", "DELETE"]),
        ]
    out += [
        Route("/api/feature_flag/local_evaluation", local_evaluation, methods=["GET"]),
        Route("/api/feature_flag/local_evaluation/", local_evaluation, methods=["GET"]),
        Route("/flags/definitions", flags_definitions, methods=["GET"]),
        Route("/flags/definitions/", flags_definitions, methods=["GET"]),
    ]
    return out


_ERR = {code: {"$ref": "#/components/responses/Error"} for code in ("400", "401", "403", "404")}
_OBJ = {"content": {"application/json": {"schema": {"type": "object"}}}}
_PROJECT = {"name": "project_id", "in": "path", "required": True, "schema": {"type": "string"}}
_FLAG_ID = {"name": "flag_id", "in": "path", "required": True, "schema": {"type": "integer"}}
_BODY = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/FeatureFlagWrite"}}}}
_TOKEN = {"name": "token", "in": "query", "required": False, "schema": {"type": "string"}}


def _op(
    op_id: str, summary: str, params: list[dict[str, Any]], *, body: bool = False, status: str = "200"
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": op_id,
        "summary": summary,
        "parameters": params,
        "responses": {status: {"description": "OK", **_OBJ}, **_ERR},
    }
    if body:
        op["requestBody"] = _BODY
    return op


#: OpenAPI path items of this module (for the sandbox's `/api/schema/` document).
OPENAPI_PATHS: dict[str, Any] = {
    "/api/projects/{project_id}/feature_flags/": {
        "get": _op("feature_flags_list", "List feature flags", [_PROJECT]),
        "post": _op("feature_flags_create", "Create a feature flag", [_PROJECT], body=True, status="201"),
    },
    "/api/projects/{project_id}/feature_flags/{flag_id}/": {
        "get": _op("feature_flags_retrieve", "Retrieve a feature flag", [_PROJECT, _FLAG_ID]),
        "patch": _op("feature_flags_update", "Update a feature flag", [_PROJECT, _FLAG_ID], body=True),
    },
    "/api/feature_flag/local_evaluation/": {
        "get": _op("feature_flags_local_evaluation", "Definitions for local evaluation", [_TOKEN]),
    },
    "/flags/definitions": {"get": _op("flags_definitions", "Definitions for the SDKs", [_TOKEN])},
}
#: OpenAPI component schemas of this module.
OPENAPI_SCHEMAS: dict[str, Any] = {
    "FeatureFlagWrite": {
        "type": "object",
        "properties": {
            "key": {"type": "string"},
            "name": {"type": "string"},
            "active": {"type": "boolean"},
            "deleted": {"type": "boolean"},
            "ensure_experience_continuity": {"type": "boolean"},
            "filters": {"type": "object"},
        },
    }
}

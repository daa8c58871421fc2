"""Feature flag definitions of the sandbox: storage, the CRUD API, local evaluation, ``/flags/definitions``.

Definitions are stored in the wire shape of ``/api/projects/:id/feature_flags/``. Decide reads them through
:func:`flag_set`, a per-project cache (definitions, the engine's compiled form, cohorts, the pre-serialised
definitions body and its ETag) that every write here invalidates, so decide never re-parses definitions.

The project's ``property_matching_version`` (1 legacy, 2 explicit ``exact`` / ``is_not`` matching) lives where
PostHog keeps it: a per-team feature-flags config row (``team_feature_flags_config``; PostHog's
``TeamFeatureFlagsConfig`` in products/feature_flags/backend/models/team_feature_flags_config.py, default 1, a
missing row meaning 1). PostHog writes it only through the staff API ``POST
/api/feature_flags_staff_team_config/set/`` (products/feature_flags/backend/api/staff_team_config.py); the
sandbox serves that API to its owner's key. It travels in the definitions body as a top-level
``property_matching_version`` next to ``minimal_flag_called_events`` (products/feature_flags/backend/
local_evaluation.py, ``_local_eval_response``), and decide evaluates with it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import threading
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar

from pydantic import WithJsonSchema
from starlette.requests import Request
from starlette.responses import Response

from .._auth import User, authenticate, extract_key, hash_key, is_key, users_by_id
from .._context import SandboxContext, context_of
from .._endpoints import Endpoint, Query, Refusal
from .._errors import APIError, method_not_allowed, not_found, validation_error
from .._http import SafeJSONResponse, limit_offset, page_response, parse_json_body, read_body, safe_dumps
from .._store import Store, dumps, loads, now_iso
from .._validation import JSONObject, JSONValue, RequestModel, StrictBool, Text, validate
from . import demo_flags, flag_history, persons
from .flag_listing import EVALUATION_RUNTIMES, FLAG_TYPES, MAX_SEARCH, ORDERS, FlagListFilters, is_stale

__all__ = [
    "ENDPOINTS",
    "SCHEMA",
    "FlagSet",
    "compile_definitions",
    "create_cohort",
    "create_flag",
    "create_secret_key",
    "flag_set",
    "get_flag",
    "hash_key_overrides",
    "invalidate_flags",
    "list_flags",
    "local_evaluation_body",
    "property_matching_version",
    "seed",
    "set_property_matching_version",
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
CREATE TABLE IF NOT EXISTS team_feature_flags_config (
    team_id INTEGER PRIMARY KEY,
    property_matching_version INTEGER NOT NULL DEFAULT 1 CHECK (property_matching_version IN (1, 2))
);
CREATE TABLE IF NOT EXISTS project_secret_api_keys (
    id TEXT PRIMARY KEY,
    project_id INTEGER NOT NULL,
    label TEXT NOT NULL,
    secure_value TEXT NOT NULL UNIQUE,
    mask_value TEXT NOT NULL,
    scopes TEXT,
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
    definitions_body: bytes = b""  # the definitions JSON (`local_evaluation_body`), served as is
    etag: str = ""
    property_matching_version: int = 1  # the project's (team_feature_flags_config), in the body too
    #: Decide's caches of this flag set (dropped with it on the next write):
    subsets: dict[frozenset[str], Any] = field(default_factory=dict)  # compiled flags per requested keys
    continuity: frozenset[str] | None = None  # keys of flags with ensure_experience_continuity
    meta: dict[str, dict[str, Any]] | None = None  # key -> {id, version}
    #: Flags /flags may leave out for a caller: key -> (evaluation_runtime, evaluation_tags), only for those
    #: with a "server"/"client" runtime or any tag (`handler/flags.rs` `collect_excluded_by_runtime/_tags`).
    scoped: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)


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


def property_matching_version(store: Store, project_id: int) -> int:
    """The project's `property_matching_version`: its config row's, 1 when it has none (as PostHog reads a
    team without a `TeamFeatureFlagsConfig` row: `PropertyMatchingVersion.LEGACY`)."""
    row = store.query_one(
        "SELECT property_matching_version FROM team_feature_flags_config WHERE team_id=?", (project_id,)
    )
    return 1 if row is None else int(row[0])


def set_property_matching_version(store: Store, project_id: int, version: Any) -> int:
    """Store the project's `property_matching_version` (1 or 2) and drop its cached flag set, so the next
    `/flags/definitions`, `local_evaluation`, `/decide` and `/flags` use it; returns the version stored."""
    if isinstance(version, bool) or version not in (1, 2):
        raise ValueError(
            "property_matching_version must be 1 (legacy) or 2 (explicit exact/is_not matching), "
            f"got {version!r}"
        )
    with store.transaction() as conn:
        if conn.execute("SELECT 1 FROM projects WHERE id=?", (project_id,)).fetchone() is None:
            raise ValueError(f"project_id: no project {project_id!r} in this sandbox")
        conn.execute(
            "INSERT INTO team_feature_flags_config(team_id, property_matching_version) VALUES (?,?) "
            "ON CONFLICT(team_id) DO UPDATE SET property_matching_version=excluded.property_matching_version",
            (project_id, int(version)),
        )
    invalidate_flags(store, project_id)
    return int(version)


def compile_definitions(
    definitions: list[dict[str, Any]],
    cohorts: dict[str, Any],
    mapping: dict[str, str],
    timezone: str = "UTC",
    property_matching_version: int = 1,
) -> tuple[Any, frozenset[str]]:
    """The engine's compiled form of a project's flags and the keys of those it cannot evaluate: the engine
    isolates each bad definition to its own flag, answered as failing (`errorsWhileComputingFlags`)."""
    from analytics_nb.flags import Definitions, compile_flags

    # the engine's one definitions shape, as /flags/definitions serves it
    defs = Definitions(definitions, cohorts, mapping, "local_evaluation_dict", property_matching_version)
    try:
        compiled = compile_flags(defs, timezone=timezone)
    except ValueError:  # e.g. a project time zone that is not an IANA name: fall back to UTC
        compiled = compile_flags(defs)
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
    mapping = persons.group_type_mapping(store, project_id)
    version = property_matching_version(store, project_id)
    # The top-level keys of PostHog's body (local_evaluation.py `_local_eval_response`); the sandbox never
    # turns on minimal `$feature_flag_called` events, so that gate is always false.
    body = {
        "flags": definitions,
        "group_type_mapping": mapping,
        "cohorts": cohorts,
        "minimal_flag_called_events": False,
        "property_matching_version": version,
    }
    raw = safe_dumps(body).encode("utf-8")  # a row of an older build never breaks the SDKs' poll
    etag = '"' + hashlib.sha256(raw).hexdigest()[:32] + '"'
    has_group = any(d["filters"].get("aggregation_group_type_index") is not None for d in definitions) or any(
        p.get("type") == "group"
        for d in definitions
        for g in d["filters"].get("groups") or []
        for p in g.get("properties") or []
    )
    result = FlagSet(
        definitions,
        cohorts,
        mapping,
        has_group,
        definitions_body=raw,
        etag=etag,
        property_matching_version=version,
    )
    tz_rows = store.query("SELECT timezone FROM projects WHERE id=?", (project_id,))
    timezone = str(tz_rows[0][0]) if tz_rows and tz_rows[0][0] else "UTC"
    result.compiled, result.bad_keys = compile_definitions(definitions, cohorts, mapping, timezone, version)
    result.scoped = _scoped(stored)
    return result


def _scoped(stored: list[dict[str, Any]]) -> dict[str, tuple[str, tuple[str, ...]]]:
    """key -> (runtime, tags) of the flags the runtime or tags filter may leave out; a runtime other than
    "server"/"client" counts as "all" (`EvaluationRuntime::from` in
    `rust/feature-flags/src/handler/flags.rs`)."""
    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    for flag in stored:
        raw = flag.get("evaluation_runtime")
        runtime = raw.lower() if isinstance(raw, str) and raw.lower() in ("server", "client") else "all"
        tags = flag.get("evaluation_tags") or []
        names = tuple(str(t.get("name", "")) if isinstance(t, dict) else str(t) for t in tags)
        if runtime != "all" or names:
            out[str(flag["key"])] = (runtime, names)
    return out


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
    from analytics_nb.flags import FlagDefinitionError, compile_flags

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


#: A flag key, documented as the service checks it (`validate_key`: letters, digits, `-`, `_`; never null).
_KEY: Any = Annotated[
    Text(min_length=1), WithJsonSchema({"type": "string", "minLength": 1, "pattern": _KEY_RE.pattern})
]


class FeatureFlagWrite(RequestModel):
    """Body of POST (create; `key` required) and PATCH/PUT (partial update) of a feature flag."""

    create_schema: ClassVar[dict[str, Any]] = {"required": ["key"]}  # the OpenAPI document (safety)

    key: _KEY = None
    name: Text() = None  # type: ignore[valid-type]
    filters: JSONObject(code="not_a_dict") = None  # type: ignore[valid-type]
    active: StrictBool() = None  # type: ignore[valid-type]
    deleted: StrictBool() = None  # type: ignore[valid-type]
    ensure_experience_continuity: StrictBool(null_as=False) = None  # type: ignore[valid-type]
    is_remote_configuration: StrictBool() = None  # type: ignore[valid-type]
    has_encrypted_payloads: StrictBool() = None  # type: ignore[valid-type]
    tags: JSONValue(schema={"type": "array", "items": {}}) = None  # type: ignore[valid-type]
    evaluation_tags: JSONValue(schema={"type": "array", "items": {}}) = None  # type: ignore[valid-type]
    evaluation_runtime: JSONValue() = None  # type: ignore[valid-type]
    rollback_conditions: JSONValue() = None  # type: ignore[valid-type]
    bucketing_identifier: JSONValue() = None  # type: ignore[valid-type]
    creation_context: JSONValue() = None  # type: ignore[valid-type]


def _clean_input(data: Any, *, partial: bool) -> dict[str, Any]:
    out = validate(FeatureFlagWrite, data).sent()
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
        flag_history.record(
            conn,
            project_id=project_id,
            flag_id=flag_id,
            before=None,
            after=body,
            user_id=(user or {}).get("id"),
            stamp=stamp,
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
        stamp = merged["updated_at"] = now_iso()
        merged["last_modified_by"] = user
        version = int(row["version"]) + 1
        merged.pop("id", None)
        merged.pop("version", None)
        conn.execute(
            "UPDATE feature_flags SET key=?, body=?, deleted=?, version=? WHERE id=?",
            (merged["key"], dumps(merged), int(bool(merged.get("deleted"))), version, flag_id),
        )
        flag_history.record(  # who, when, and each changed field's before/after (the versions' source)
            conn,
            project_id=project_id,
            flag_id=flag_id,
            before=current,
            after={**merged, "version": version},
            user_id=(user or {}).get("id"),
            stamp=stamp,
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
    if status == "ACTIVE" and is_stale(flag, datetime.now(UTC)):
        status = "STALE"  # flag_status.py FeatureFlagStatusChecker.get_status, as the list filter reads it
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


def _matching_flags(
    store: Store, project_id: int, filters: FlagListFilters | None, *, include_deleted: bool = False
) -> list[dict[str, Any]]:
    """The project's stored flags that pass `filters`, in its order (default: newest first). The filters are
    applied here rather than in SQL: STALE and the search read the flag's JSON as PostHog's SQL does."""
    filters = filters or FlagListFilters()
    where = "project_id=?" + ("" if include_deleted else " AND deleted=0")
    rows = store.query(f"SELECT id, body, version, deleted FROM feature_flags WHERE {where}", (project_id,))
    now = datetime.now(UTC)
    return filters.sort([flag for flag in map(_row_flag, rows) if filters.matches(flag, now)])


def count_flags(store: Store, project_id: int, filters: FlagListFilters | None = None) -> int:
    """How many live flags pass the listing's filters."""
    return len(_matching_flags(store, project_id, filters))


def list_flags(
    store: Store,
    project_id: int,
    filters: FlagListFilters | None = None,
    *,
    include_deleted: bool = False,
    limit: int | None = None,
    offset: int = 0,
) -> list[dict[str, Any]]:
    """Flags of a project in the API shape that pass `filters`, in their `order` (default `-created_at`:
    newest first, by id, as ids grow with creation); one page when `limit` is given."""
    flags = _matching_flags(store, project_id, filters, include_deleted=include_deleted)
    page = flags[offset : offset + limit] if limit is not None else flags[offset:]
    return [_api_shape(flag, project_id) for flag in page]


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
    """`{flags, group_type_mapping, cohorts, minimal_flag_called_events, property_matching_version}` as local
    evaluation and `/flags/definitions` send it."""
    return json.loads(flag_set(store, project_id).definitions_body)


def project_by_token(store: Store, token: str) -> tuple[int, str] | None:
    """`(project id, organization id)` of a project API token, None when unknown."""
    row = store.query_one("SELECT id, organization_id FROM projects WHERE api_token=?", (token,))
    return None if row is None else (int(row["id"]), str(row["organization_id"]))


def project_organization(store: Store, project_id: int) -> str | None:
    """The organization of a project, None when the project is unknown."""
    row = store.query_one("SELECT organization_id FROM projects WHERE id=?", (project_id,))
    return None if row is None else str(row["organization_id"])


# -- handlers ------------------------------------------------------------------------------------------------
async def list_flags_endpoint(request: Request) -> Response:
    """GET: one page of the flags passing the list filters (`flag_listing.FlagListFilters`: active incl.
    STALE, created_by_id, search, key, type, evaluation_runtime, excluded_properties, order)."""
    ctx = context_of(request)
    ctx.authenticate_personal(request, "feature_flag:read")
    project_id = ctx.project_id_of(request)
    filters = FlagListFilters.from_query(request.query_params)
    if ctx.faults.active("legacy_list_filters", "GET", request.scope["path"]):
        # an older self-hosted PostHog (posthog/api/feature_flag.py _filter_request): no key / tags filters
        filters = dataclasses.replace(filters, key=None, tags=(), excluded_tags=())
    limit, offset = limit_offset(request)
    flags = _matching_flags(ctx.store, project_id, filters)
    page = [_api_shape(flag, project_id) for flag in flags[offset : offset + limit]]
    return page_response(request, page, count=len(flags), limit=limit, offset=offset)


async def create_flag_endpoint(request: Request) -> Response:
    """POST: create a flag (400 naming the field on bad input)."""
    ctx = context_of(request)
    body = await read_body(request)
    user = ctx.authenticate_personal(request, "feature_flag:write")
    project_id = ctx.project_id_of(request)
    flag = create_flag(ctx.store, project_id, parse_json_body(request, body), user=user.basic())
    return SafeJSONResponse(flag, status_code=201)


def flag_id_of(request: Request) -> int:
    """The ``flag_id`` path parameter (404 for one that cannot exist)."""
    return _flag_id(request)


def _flag_id(request: Request) -> int:
    raw = str(request.path_params["flag_id"])
    try:
        value = int(raw)
    except ValueError:
        raise not_found() from None
    if not 0 < value < 2**63:  # SQLite's INTEGER range; anything else cannot exist
        raise not_found()
    return value


async def get_flag_endpoint(request: Request) -> Response:
    """GET one flag."""
    ctx = context_of(request)
    ctx.authenticate_personal(request, "feature_flag:read")
    return SafeJSONResponse(get_flag(ctx.store, ctx.project_id_of(request), _flag_id(request)))


async def update_flag_endpoint(request: Request) -> Response:
    """PATCH / PUT: partial update (bumps `version`)."""
    ctx = context_of(request)
    body = await read_body(request)
    user = ctx.authenticate_personal(request, "feature_flag:write")
    data = parse_json_body(request, body)
    flag = update_flag(ctx.store, ctx.project_id_of(request), _flag_id(request), data, user=user.basic())
    return SafeJSONResponse(flag)


async def delete_flag_endpoint(request: Request) -> Response:
    """DELETE: refused with 405 after auth (flags are soft-deleted with `deleted: true`)."""
    ctx = context_of(request)
    ctx.authenticate_personal(request, "feature_flag:write")
    raise method_not_allowed("DELETE", allow="GET, PATCH, PUT, HEAD")


def _project_for_token(ctx: SandboxContext, request: Request, user: User) -> int:
    """The project whose definitions are asked for: `?token=` (checked against the key's user and its
    `scoped_teams` / `scoped_organizations`, as the URL's project is), else the URL's or current project."""
    token = request.query_params.get("token")
    if token:
        found = project_by_token(ctx.store, token)
        if found is None or found[1] != user.organization_id:
            raise APIError(
                401,
                "authentication_error",
                "invalid_api_key",
                "Project API key invalid. You can find your project API key in PostHog project settings.",
            )
        ctx.check_project_access(user, *found)
        return found[0]
    if "project_id" in request.path_params:
        return ctx.project_id_of(request)
    if user.current_project_id is None:
        raise not_found("Project not found.")
    current = int(user.current_project_id)
    organization_id = project_organization(ctx.store, current)
    if organization_id is None:
        raise not_found("Project not found.")
    ctx.check_project_access(user, current, organization_id)
    return current


# -- /flags/definitions: project secret API keys, weak ETags, the cold-cache 503 ----------------------------
#: Scopes that let a key read definitions (`validate_personal_api_key_with_scopes_for_team`; the rstest
#: cases of `test_flag_definitions_project_secret_api_key` in
#: rust/feature-flags/tests/test_flag_definitions.rs).
_DEFINITION_SCOPES = frozenset({"feature_flag:read", "feature_flag:write", "*"})
#: The cold-cache answer: the service serves definitions from its cache only (no database fallback).
MSG_COLD_CACHE = (
    "Required data not found in cache: the flag definitions of this project are not cached yet. "
    "Please try again later."
)


def create_secret_key(
    store: Store, project_id: int, scopes: list[str] | None = None, *, label: str = "sandbox secret key"
) -> str:
    """Issue a Project Secret API Key (`phs_...`, PostHog #63111 / #66174) for one project; only its sha256
    hash is stored. ``scopes`` None means full access (the service's null scopes)."""
    import secrets
    import string
    import uuid

    alphabet = string.ascii_letters + string.digits
    plain = "phs_" + "".join(secrets.choice(alphabet) for _ in range(43))
    store.execute(
        "INSERT INTO project_secret_api_keys(id, project_id, label, secure_value, mask_value, scopes, "
        "created_at) VALUES (?,?,?,?,?,?,?)",
        (
            str(uuid.uuid4()),
            int(project_id),
            label,
            hash_key(plain),
            plain[:4] + "..." + plain[-4:],
            None if scopes is None else dumps([str(x) for x in scopes]),
            now_iso(),
        ),
    )
    return plain


def _json_error(status: int, type_: str, code: str, detail: str) -> Response:
    return SafeJSONResponse({"type": type_, "code": code, "detail": detail, "attr": None}, status_code=status)


def _bearer(request: Request) -> str | None:
    kind, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip()
    return token if kind.lower() == "bearer" and token else None


class _Refused(Exception):
    def __init__(self, response: Response) -> None:
        super().__init__("refused")
        self.response = response


def _secret_key_project(ctx: SandboxContext, key: str) -> int:
    """The project of a valid `phs_` key with a definitions scope, else the service's 401."""
    row = ctx.store.query_one(
        "SELECT project_id, scopes FROM project_secret_api_keys WHERE secure_value=?", (hash_key(key),)
    )
    if row is None:
        raise _Refused(
            _json_error(401, "authentication_error", "authentication_failed", "Secret API token is invalid.")
        )
    scopes = loads(row["scopes"])
    if scopes is not None and not _DEFINITION_SCOPES & set(scopes):
        raise _Refused(
            _json_error(401, "authentication_error", "authentication_failed", "Secret API token is invalid.")
        )
    return int(row["project_id"])


def _personal_key_project(ctx: SandboxContext, request: Request, token: str | None) -> int:
    """The project of `?token=` for a valid personal key with a feature-flag scope and access, else 401
    (400 without `token=`: a personal key can reach several projects)."""
    try:
        user = authenticate(ctx.store, request)
    except APIError:
        raise _Refused(
            _json_error(401, "authentication_error", "authentication_failed", "Personal API key is invalid.")
        ) from None
    if not (user.scopes is None or _DEFINITION_SCOPES & set(user.scopes or [])):
        raise _Refused(
            _json_error(
                401,
                "authentication_error",
                "authentication_failed",
                "Personal API key lacks required scopes (feature_flag:read or feature_flag:write).",
            )
        )
    if not token:
        raise _Refused(
            _json_error(
                400,
                "validation_error",
                "invalid_request",
                "The token query parameter is required when authenticating with a personal API key.",
            )
        )
    found = project_by_token(ctx.store, token)
    if found is None:
        raise _Refused(
            _json_error(401, "authentication_error", "authentication_failed", MSG_BAD_PROJECT_TOKEN)
        )
    try:
        ctx.check_project_access(user, *found)
    except APIError:
        raise _Refused(
            _json_error(401, "authentication_error", "authentication_failed", "Personal API key is invalid.")
        ) from None
    if found[1] != user.organization_id:
        raise _Refused(
            _json_error(401, "authentication_error", "authentication_failed", "Personal API key is invalid.")
        )
    return found[0]


MSG_BAD_PROJECT_TOKEN = (
    "The provided API key is invalid or has expired. Please check your API key and try again."
)


def _definitions_project(ctx: SandboxContext, request: Request) -> int:
    """Who may read which project's definitions, as `flags_definitions` / `authenticate_flag_definitions`
    (rust/feature-flags/src/api/flag_definitions.rs): a `phs_` secret key first (its project must be the
    token's; without `token=` the key's project), else a personal key with a feature-flag scope, else 401."""
    token = request.query_params.get("token")
    key = _bearer(request)
    if key is None and extract_key(request)[0] is None:
        if token and project_by_token(ctx.store, token) is None:
            raise _Refused(
                _json_error(401, "authentication_error", "not_authenticated", MSG_BAD_PROJECT_TOKEN)
            )
        raise _Refused(
            _json_error(
                401,
                "authentication_error",
                "not_authenticated",
                "Authentication credentials were not provided.",
            )
        )
    if key is not None and key.startswith("phs_"):
        project_id = _secret_key_project(ctx, key)
        if token:
            found = project_by_token(ctx.store, token)
            if found is None or found[0] != project_id:
                raise _Refused(
                    _json_error(
                        401, "authentication_error", "authentication_failed", "Secret API token is invalid."
                    )
                )
        return project_id
    return _personal_key_project(ctx, request, token)


def _client_etag(header: str | None) -> str | None:
    """`If-None-Match` as `extract_etag_from_header` reads it: weak `W/"x"`, strong `"x"` or bare `x`."""
    if header is None or not header.strip():
        return None
    value = header.strip()
    if value.startswith('W/"'):
        value = value[2:]
    return value.strip('"') or None


def _definitions_response(ctx: SandboxContext, request: Request, project_id: int) -> Response:
    """200 with the body and a weak ETag (`W/"..."`, `private, must-revalidate`), or 304 when
    `If-None-Match` names the current ETag (`not_modified_response` / `ok_response_with_etag`)."""
    fs = flag_set(ctx.store, project_id)
    if fs.group_type_mapping != persons.group_type_mapping(ctx.store, project_id):  # a type was added since
        invalidate_flags(ctx.store, project_id)
        fs = flag_set(ctx.store, project_id)
    raw = fs.etag.strip('"')
    headers = {"ETag": f'W/"{raw}"', "Cache-Control": "private, must-revalidate"}
    if _client_etag(request.headers.get("if-none-match")) == raw:
        return Response(status_code=304, headers=headers)
    return Response(fs.definitions_body, media_type="application/json", headers=headers)


def _definitions_fault(ctx: SandboxContext, request: Request) -> Response | None:
    """Fault kinds of the definitions paths: `cold_cache` (503, the service's cache miss: it has no
    database fallback) and `no_flags_definitions` (404 on `/flags/definitions`: an older self-hosted
    PostHog without the Rust endpoint)."""
    kinds = {f.kind for f in ctx.faults.pick(request.method, request.url.path, with_kind=True)}
    if "no_flags_definitions" in kinds and request.url.path.startswith("/flags/definitions"):
        return Response("Not Found", status_code=404, media_type="text/plain")
    if "cold_cache" in kinds:
        return _json_error(503, "server_error", "service_unavailable", MSG_COLD_CACHE)
    return None


async def _serve_definitions(request: Request) -> Response:
    ctx = context_of(request)
    if request.method == "OPTIONS":
        return Response(status_code=204, headers={"allow": "GET, OPTIONS, HEAD"})
    if request.method not in ("GET", "HEAD"):
        return Response(status_code=405, headers={"allow": "GET, OPTIONS, HEAD"})
    fault = _definitions_fault(ctx, request)
    if fault is not None and fault.status_code == 404:
        return fault
    try:
        project_id = _definitions_project(ctx, request)
    except _Refused as exc:
        return exc.response
    if ctx.limiter is not None:
        wait = ctx.limiter.check(f"definitions:{project_id}", "local_evaluation")
        if wait > 0:
            return _json_error(429, "throttled", "rate_limit_exceeded", "Rate limit exceeded")
    if fault is not None:
        return fault
    return _definitions_response(ctx, request, project_id)


async def local_evaluation(request: Request) -> Response:
    """`GET /api/feature_flag/local_evaluation/?token=`: today an alias of the Rust `/flags/definitions`
    (PostHog #56043, #61780), so the same keys (`phs_` or personal) and answers. Under a project
    (`/api/projects/:id/feature_flags/local_evaluation/`), or without `token=` and a secret key (the
    current project of a personal key), it is the Django view: personal key only."""
    bearer = _bearer(request)
    if "project_id" in request.path_params or (
        not request.query_params.get("token") and not (bearer or "").startswith("phs_")
    ):  # the Django view's own forms: under a project, or the key's current project
        ctx = context_of(request)
        user = ctx.authenticate_personal(request, "feature_flag:read", throttle="local_evaluation")
        return _definitions_response(ctx, request, _project_for_token(ctx, request, user))
    return await _serve_definitions(request)


async def flags_definitions(request: Request) -> Response:
    """`GET /flags/definitions?token=` (what posthog-python 7.91.1 polls, on the ingestion host): a `phs_`
    secret key or a personal key as Bearer; weak ETag / 304; 503 on a cold cache."""
    return await _serve_definitions(request)


class StaffTeamConfigSet(RequestModel):
    """Body of `POST /api/feature_flags_staff_team_config/set/` (PostHog's
    `StaffTeamConfigMutationSerializer`, the settings the sandbox has): `team_id` and the new
    `property_matching_version` (1 or 2)."""

    team_id: JSONValue(schema={"type": "integer"}) = None  # type: ignore[valid-type]
    property_matching_version: JSONValue(schema={"type": "integer", "enum": [1, 2]}) = None  # type: ignore[valid-type]
    minimal_flag_called_events: JSONValue(schema={"type": "boolean"}) = None  # type: ignore[valid-type]
    max_feature_flags_override: JSONValue(schema={"type": "integer", "nullable": True}) = None  # type: ignore[valid-type]


def _staff(request: Request) -> SandboxContext:
    """The context, once the key is known to be the sandbox owner's: the sandbox's stand-in for PostHog's
    `IsStaffUser` (its staff API takes no personal API key at all; the sandbox has no sessions)."""
    ctx = context_of(request)
    ctx.authenticate_personal(request, None)
    key, _ = extract_key(request)
    if not is_key(key, ctx.owner_key_hash):
        raise APIError(
            403,
            "authentication_error",
            "permission_denied",
            "The feature-flags staff API is for PostHog staff; in the sandbox, use the sandbox owner's key "
            "(Sandbox.personal_api_key).",
        )
    return ctx


def _team_config(store: Store, team_id: int) -> dict[str, Any]:
    """One row of the staff API (PostHog's `StaffTeamConfigSerializer`; the sandbox keeps no flag-count
    override or flag-evaluations mode, so those are PostHog's defaults)."""
    count = store.query_one(
        "SELECT COUNT(*) AS n FROM feature_flags WHERE project_id=? AND deleted=0", (team_id,)
    )
    return {
        "team_id": team_id,
        "minimal_flag_called_events": False,
        "property_matching_version": property_matching_version(store, team_id),
        "max_feature_flags_override": None,
        "effective_max_feature_flags": 2000,
        "flag_evaluations_mode": 0,
        "feature_flag_count": int(count["n"]) if count else 0,
    }


def _team_ids(request: Request) -> list[int]:
    raw = [part for value in request.query_params.getlist("team_ids") for part in value.split(",") if part]
    if not raw:
        raise validation_error("This field is required.", attr="team_ids", code="required")
    out: list[int] = []
    for part in raw:
        try:
            out.append(int(part.strip()))
        except ValueError:
            raise validation_error(
                f"team_ids: {part!r} is not an integer; pass ?team_ids=1&team_ids=2 or ?team_ids=1,2.",
                attr="team_ids",
                code="invalid",
            ) from None
    if len(out) > 50:
        raise validation_error(
            "Ensure this field has no more than 50 elements.", attr="team_ids", code="max_length"
        )
    return list(dict.fromkeys(out))


async def staff_team_config_list(request: Request) -> Response:
    """GET `/api/feature_flags_staff_team_config/?team_ids=`: the feature-flags config of existing teams."""
    ctx = _staff(request)
    ids = _team_ids(request)
    known = {int(r[0]) for r in ctx.store.query("SELECT id FROM projects")}
    return SafeJSONResponse({"results": [_team_config(ctx.store, t) for t in ids if t in known]})


async def staff_team_config_set(request: Request) -> Response:
    """POST `/api/feature_flags_staff_team_config/set/`: change one team's `property_matching_version`; the
    next definitions poll and decide use it (PostHog rebuilds both caches on this write)."""
    body = await read_body(request)
    ctx = _staff(request)
    sent = validate(StaffTeamConfigSet, parse_json_body(request, body)).sent()
    team_id = sent.get("team_id")
    if team_id is None:
        raise validation_error("This field is required.", attr="team_id", code="required")
    if isinstance(team_id, bool) or not isinstance(team_id, int):
        raise validation_error("A valid integer is required.", attr="team_id", code="invalid")
    for name in ("minimal_flag_called_events", "max_feature_flags_override"):
        if name in sent:
            raise validation_error(
                f"The sandbox does not support {name}; it sets only property_matching_version.",
                attr=name,
                code="unsupported",
            )
    if ctx.store.query_one("SELECT 1 FROM projects WHERE id=?", (team_id,)) is None:
        raise not_found(f"Team {team_id} not found.")
    if "property_matching_version" in sent:
        version = sent["property_matching_version"]
        if isinstance(version, bool) or version not in (1, 2):
            raise validation_error(
                f'"{version}" is not a valid choice; property_matching_version is 1 (legacy) or 2 '
                "(explicit).",
                attr="property_matching_version",
                code="invalid_choice",
            )
        set_property_matching_version(ctx.store, team_id, version)
    return SafeJSONResponse(_team_config(ctx.store, team_id))


_BASE = "/api/projects/{project_id}/feature_flags/"
_ENV = "/api/environments/{project_id}/feature_flags/"
_TOKEN = Query("token")
_NOT_MODIFIED = {"304": {"description": "Not modified (If-None-Match matched the ETag)"}}
#: A key a live flag of the project already uses (no schema can say which keys are taken).
_KEY_TAKEN = (
    Refusal(
        400,
        "unique",
        "key",
        "posthog/api/feature_flag.py FeatureFlagSerializer.validate_key; posthog/api/test/"
        "test_feature_flag.py test_cant_create_flag_with_duplicate_key, "
        "test_cant_update_flag_with_duplicate_key",
    ),
)


#: The list filters (PostHog products/feature_flags/backend/api/feature_flag.py, FeatureFlagViewSet.list's
#: extend_schema; `order` from safely_get_queryset), as `flag_listing` answers them.
_LIST_FILTERS = (
    # `active`, `type` and `evaluation_runtime` list their values in the description, not as an enum: the
    # service reads any other value without refusing it (flag_listing's module docstring says how), and so
    # does the sandbox; an enum would document a 400 neither answers.
    Query("active", description="`true`, `false` or `STALE`; another value selects the inactive flags."),
    Query("created_by_id", description="A user id, or a comma-separated / JSON list of user ids."),
    Query("search", max_length=MAX_SEARCH, description="Text in the key or name; case insensitive."),
    Query("key", description="Exactly this flag key; case insensitive."),
    Query("type", description=f"One of {', '.join(FLAG_TYPES)}; another value is ignored."),
    Query(
        "evaluation_runtime",
        description=f"One of {', '.join(EVALUATION_RUNTIMES)}; another value matches no flag.",
    ),
    Query("excluded_properties", description="JSON-encoded list of flag keys to leave out."),
    Query("tags", description="JSON-encoded list of tag names: flags with any of them."),
    Query("excluded_tags", description="JSON-encoded list of tag names: flags with none of them."),
    Query("order", enum=ORDERS, description="The field to sort by, `-` for descending; default -created_at."),
)


def _ep(method: str, suffix: str, handler: Any, op: str, summary: str, **kw: Any) -> Endpoint:
    return Endpoint(method, _BASE + suffix, handler, op, summary, aliases=(_ENV + suffix,), **kw)


ENDPOINTS = [
    _ep(
        "GET",
        "local_evaluation/",
        local_evaluation,
        "feature_flags_project_local_evaluation",
        "Definitions for local evaluation (a project's)",
        query=(_TOKEN,),
        extra_responses=_NOT_MODIFIED,
    ),
    _ep(
        "GET",
        "",
        list_flags_endpoint,
        "feature_flags_list",
        "List feature flags, newest first",
        query=(
            Query("limit", "integer", minimum=0),
            Query("offset", "integer", minimum=0),
            *_LIST_FILTERS,
        ),
        returns="page",
    ),
    _ep(
        "POST",
        "",
        create_flag_endpoint,
        "feature_flags_create",
        "Create a feature flag",
        body=FeatureFlagWrite,
        refusals=_KEY_TAKEN,
        status=201,
    ),
    _ep("GET", "{flag_id:int}/", get_flag_endpoint, "feature_flags_retrieve", "Retrieve a feature flag"),
    _ep(
        "PATCH",
        "{flag_id:int}/",
        update_flag_endpoint,
        "feature_flags_partial_update",
        "Update a feature flag",
        body=FeatureFlagWrite,
        refusals=_KEY_TAKEN,
    ),
    _ep(
        "PUT",
        "{flag_id:int}/",
        update_flag_endpoint,
        "feature_flags_update",
        "Update a feature flag",
        body=FeatureFlagWrite,
        refusals=_KEY_TAKEN,
    ),
    _ep(
        "DELETE",
        "{flag_id:int}/",
        delete_flag_endpoint,
        "feature_flags_destroy",
        "Refused: flags are soft-deleted with PATCH deleted=true",
        status=405,
        errors=(401, 403, 404),
    ),
    Endpoint(
        "GET",
        "/api/feature_flag/local_evaluation/",
        local_evaluation,
        "feature_flags_local_evaluation",
        "Definitions for local evaluation",
        query=(_TOKEN,),
        extra_responses=_NOT_MODIFIED,
    ),
    Endpoint(
        "GET",
        "/api/feature_flags_staff_team_config/",
        staff_team_config_list,
        "feature_flags_staff_team_config_list",
        "Staff: feature-flags config of teams (the sandbox owner's key)",
        query=(Query("team_ids"),),
    ),
    Endpoint(
        "POST",
        "/api/feature_flags_staff_team_config/set/",
        staff_team_config_set,
        "feature_flags_staff_team_config_set",
        "Staff: set one team's property_matching_version (the sandbox owner's key)",
        body=StaffTeamConfigSet,
    ),
    Endpoint(
        "GET",
        "/flags/definitions/",
        flags_definitions,
        "flags_definitions",
        "Definitions for the SDKs",
        query=(_TOKEN,),
        extra_responses=_NOT_MODIFIED,
    ),
]


# -- seed ----------------------------------------------------------------------------------------------------
def seed(store: Store, ctx: SandboxContext) -> None:
    """Demo seed: a cohort and the demo flags (every operator family; see `demo_flags`)."""
    cohort_id = create_cohort(store, ctx.project_id, "EU customers", demo_flags.EU_COHORT)
    owner = users_by_id(store).get(ctx.owner_user_id)
    for definition in demo_flags.demo_flag_definitions(cohort_id):
        create_flag(store, ctx.project_id, definition, user=owner)

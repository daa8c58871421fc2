"""Hog functions and their templates: `/api/projects/:id/hog_functions/` (list, create, get, PATCH/PUT,
`rearrange`, DELETE = 405) and `/api/projects/:id/hog_function_templates/` (+ the anonymous
`/api/public_hog_function_templates/`), with today's rules.

Facts (PostHog/posthog, newest builds): `products/cdp/backend/api/hog_function.py` (`HogFunctionSerializer`,
`HogFunctionViewSet`: scope object `hog_function`, soft delete by PATCH `deleted`, `ForbidDestroyModel`, list
ordered by `execution_order` then newest `updated_at`, comma-separated `type` filter, `rearrange`, the cap of
20 enabled transformations, new and restored/re-enabled transformations placed last),
`products/cdp/backend/api/hog_function_template.py` (template shape, `type`/`types`/`template_id` filters,
deprecated templates left out of lists, hidden ones out of the public catalog, page sorted by usage),
`posthog/cdp/validation.py` (`InputsSchemaItemSerializer`, `InputsItemSerializer`, `compile_hog`).

Where the sandbox differs: Hog is not compiled (a structural check stands in for the compiler: unbalanced
brackets, an unterminated string or `fetch()` outside destinations is "Hog code has errors."), so `bytecode`
is a stub header; `status` is healthy for enabled functions; search is a case-insensitive substring match
(the service ranks by trigram similarity); there are no drafts, revisions, logs, metrics or invocations.

Parts: schema (`SCHEMA`), the template catalog (fixture), storage functions, request validation, thin
handlers, the endpoint table (`ENDPOINTS`) and the demo seed (`seed`).
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from datetime import UTC, datetime, timedelta
from functools import cache
from importlib import resources
from typing import Annotated, Any, ClassVar

from pydantic import Field, WithJsonSchema
from starlette.requests import Request
from starlette.responses import Response

from .._auth import users_by_id
from .._context import SandboxContext, context_of
from .._endpoints import Endpoint, Query, Refusal
from .._errors import APIError, not_found, validation_error
from .._http import (
    SafeJSONResponse,
    limit_offset,
    page_response,
    parse_json_body,
    read_body,
    require_object,
)
from .._store import Store, dumps, loads, now_iso
from .._validation import Bool, Char, Choice, JSONObject, JSONValue, RequestModel, validate
from . import hog_syntax

SCOPE_READ = "hog_function:read"
SCOPE_WRITE = "hog_function:write"
#: `HogFunctionType` of PostHog's model; the last two are refused by this API (see `_check_type`).
TYPES = (
    "destination",
    "site_destination",
    "internal_destination",
    "source_webhook",
    "site_app",
    "transformation",
    "warehouse_source_webhook",
    "transformation_log",
    # PostHog #97648: legacy plugins migrated to Hog functions keep a type of their own.
    "legacy_destination",
)
#: Types run one after the other in `execution_order` (`TYPES_WITH_EXECUTION_ORDER`).
ORDERED_TYPES = ("transformation", "transformation_log")
#: Types whose source is TypeScript, not Hog (`TYPES_WITH_JAVASCRIPT_SOURCE`).
JS_TYPES = ("site_destination", "site_app")
INPUT_TYPES = (
    "string",
    "number",
    "boolean",
    "dictionary",
    "choice",
    "json",
    "integration",
    "integration_multi",
    "integration_field",
    "email",
    "native_email",
    "posthog_assignee",
    "posthog_ticket_tags",
)
MAX_HOG_BYTES = 100 * 1024
MAX_ENABLED_TRANSFORMATIONS = 20
BYTECODE_STUB = ["_H", 1]
#: Filters that select every event compile to the constant ``true`` (op 29): `posthog/api/test/
#: test_hog_function.py::test_create_hog_function` shows ``["_H", HOGQL_BYTECODE_VERSION, 29]`` for none.
BYTECODE_TRUE = ["_H", 1, 29]
#: the filter keys that narrow the events a function sees; none of them set -> ``BYTECODE_TRUE``
_NARROWING_FILTERS = ("events", "actions", "properties", "filter_test_accounts")
HEALTHY = {"state": 1, "tokens": 10000}
IDLE = {"state": 0, "tokens": 0}
#: Fields of the list (minimal) serializer; `?full=true` and detail views send every field.
MINIMAL_FIELDS = (
    "id",
    "type",
    "name",
    "description",
    "created_at",
    "created_by",
    "updated_at",
    "enabled",
    "hog",
    "filters",
    "icon_url",
    "template",
    "status",
    "execution_order",
)

#: Columns newer than some database files (`_seeding.open_store` adds them when missing).
ADDED_COLUMNS = (("hog_functions", "batch_export_id", "TEXT"),)

SCHEMA = """
CREATE TABLE IF NOT EXISTS hog_functions (
    id TEXT PRIMARY KEY,
    project_id INTEGER NOT NULL,
    type TEXT,
    name TEXT,
    description TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    created_by INTEGER,
    updated_at TEXT NOT NULL,
    enabled INTEGER NOT NULL DEFAULT 0,
    deleted INTEGER NOT NULL DEFAULT 0,
    hog TEXT NOT NULL,
    bytecode TEXT,
    transpiled TEXT,
    inputs_schema TEXT,
    inputs TEXT,
    encrypted_inputs TEXT,
    filters TEXT,
    masking TEXT,
    mappings TEXT,
    icon_url TEXT,
    template_id TEXT,
    execution_order INTEGER,
    batch_export_id TEXT
);
CREATE INDEX IF NOT EXISTS hog_functions_project ON hog_functions(project_id, type, deleted);
"""


# -- template catalog ----------------------------------------------------------------------------------------
@cache
def templates() -> tuple[dict[str, Any], ...]:
    """The template catalog (`fixtures/hog_function_templates.json`), as the template serializer sends it."""
    text = resources.files(__package__).joinpath("fixtures/hog_function_templates.json").read_text("utf-8")
    return tuple(_with_item_flags(t) for t in json.loads(text))


def _with_item_flags(tpl: dict[str, Any]) -> dict[str, Any]:
    """The template with ``secret``, ``hidden`` and ``required`` on every ``inputs_schema`` item, as PostHog's
    templates carry them (`posthog/api/test/__data__/hog_function_templates.json`, ``template-webhook``): a
    function made from it then shows the template's schema unchanged
    (`posthog/api/test/test_hog_function.py::test_creates_with_template_values_if_not_provided`)."""
    if not tpl.get("inputs_schema"):
        return tpl
    items = [{"required": False, "secret": False, "hidden": False, **item} for item in tpl["inputs_schema"]]
    return {**tpl, "inputs_schema": items}


def template(template_id: str | None) -> dict[str, Any] | None:
    """One template by id (any status), or None."""
    if not template_id:
        return None
    return next((t for t in templates() if t["id"] == template_id), None)


# -- serialization -------------------------------------------------------------------------------------------
def _has_value(entry: Any) -> bool:
    return isinstance(entry, dict) and entry.get("value") not in (None, "")


def _inputs_out(row: sqlite3.Row) -> dict[str, Any]:
    """Stored inputs with each secret that has a value replaced by the `{"secret": true}` marker; a secret
    never set is not shown at all (the service marks only secrets that hold a value)."""
    inputs = dict(loads(row["inputs"]) or {})
    secrets_ = loads(row["encrypted_inputs"]) or {}
    for item in loads(row["inputs_schema"]) or []:
        key = item.get("key")
        if item.get("secret"):
            if _has_value(secrets_.get(key)) or _has_value(inputs.get(key)):
                inputs[key] = {"secret": True}
            else:
                inputs.pop(key, None)
    return inputs


def serialize(row: sqlite3.Row, users: dict[int, dict[str, Any]], *, full: bool = True) -> dict[str, Any]:
    """`HogFunctionSerializer` (full) or `HogFunctionMinimalSerializer` shape; `deleted` and `template_id`
    are write-only on the service, so never sent."""
    enabled = bool(row["enabled"])
    out: dict[str, Any] = {
        "id": row["id"],
        "type": row["type"],
        "name": row["name"],
        "description": row["description"],
        "created_at": row["created_at"],
        "created_by": users.get(row["created_by"]),
        "updated_at": row["updated_at"],
        "enabled": enabled,
        "hog": row["hog"],
        "bytecode": loads(row["bytecode"]),
        "transpiled": row["transpiled"],
        "inputs_schema": loads(row["inputs_schema"]) or [],
        "inputs": _inputs_out(row),
        "filters": loads(row["filters"]) or {},
        "masking": loads(row["masking"]),
        "mappings": loads(row["mappings"]),
        "icon_url": row["icon_url"],
        "template": template(row["template_id"]),
        "status": dict(HEALTHY if enabled else IDLE),
        "execution_order": row["execution_order"],
        "batch_export_id": row["batch_export_id"],
    }
    if not full:
        return {k: out[k] for k in MINIMAL_FIELDS}
    return out


def _serialize_many(store: Store, rows: list[sqlite3.Row], *, full: bool = True) -> list[dict[str, Any]]:
    users = users_by_id(store)
    return [serialize(r, users, full=full) for r in rows]


# -- storage -------------------------------------------------------------------------------------------------
def get_row(store: Store, project_id: int, ident: str, *, include_deleted: bool = False) -> sqlite3.Row:
    """One function of the project (404 when unknown or soft-deleted, unless `include_deleted`)."""
    row = store.query_one(
        "SELECT * FROM hog_functions WHERE project_id=? AND id=?"
        + ("" if include_deleted else " AND deleted=0"),
        (project_id, ident),
    )
    if row is None:
        raise not_found()
    return row


def _list_where(
    project_id: int, types: list[str] | None, enabled: bool | None, search: str | None
) -> tuple[str, list[Any]]:
    where = ["project_id=?", "deleted=0", "COALESCE(type, '') != 'warehouse_source_webhook'"]
    params: list[Any] = [project_id]
    if types is not None:
        where.append(f"type IN ({','.join('?' * len(types))})")
        params.extend(types)
    if enabled is not None:
        where.append("enabled=?")
        params.append(int(enabled))
    if search:
        where.append("(instr(lower(COALESCE(name, '')), ?) > 0 OR instr(lower(description), ?) > 0)")
        params.extend([search.lower(), search.lower()])
    return " AND ".join(where), params


def count_functions(
    store: Store, project_id: int, types: list[str] | None, enabled: bool | None, search: str | None
) -> int:
    """How many live functions match the list filters."""
    where, params = _list_where(project_id, types, enabled, search)
    row = store.query_one(f"SELECT COUNT(*) FROM hog_functions WHERE {where}", params)
    return int(row[0]) if row else 0


def find_functions(
    store: Store,
    project_id: int,
    types: list[str] | None,
    enabled: bool | None,
    search: str | None,
    *,
    limit: int,
    offset: int,
) -> list[sqlite3.Row]:
    """One page of live functions: `execution_order` ascending (nulls last, as Postgres sorts them), then the
    most recently updated first."""
    where, params = _list_where(project_id, types, enabled, search)
    return store.query(
        f"SELECT * FROM hog_functions WHERE {where} "
        "ORDER BY execution_order IS NULL, execution_order, updated_at DESC, id LIMIT ? OFFSET ?",
        [*params, limit, offset],
    )


def highest_order(conn: sqlite3.Connection, project_id: int, type_: str) -> int:
    """The highest `execution_order` of the project's live functions of `type_` (0 when none)."""
    row = conn.execute(
        "SELECT MAX(execution_order) FROM hog_functions WHERE project_id=? AND type=? AND deleted=0",
        (project_id, type_),
    ).fetchone()
    return int(row[0] or 0)


def enabled_count(conn: sqlite3.Connection, project_id: int, type_: str) -> int:
    """How many live, enabled functions of `type_` the project has."""
    row = conn.execute(
        "SELECT COUNT(*) FROM hog_functions WHERE project_id=? AND type=? AND deleted=0 AND enabled=1",
        (project_id, type_),
    ).fetchone()
    return int(row[0])


_JSON_COLUMNS = ("bytecode", "inputs_schema", "inputs", "encrypted_inputs", "filters", "masking", "mappings")
_COLUMNS = (
    "type",
    "name",
    "description",
    "enabled",
    "deleted",
    "hog",
    "bytecode",
    "transpiled",
    "inputs_schema",
    "inputs",
    "encrypted_inputs",
    "filters",
    "masking",
    "mappings",
    "icon_url",
    "template_id",
    "execution_order",
    "batch_export_id",
)


def _column_value(name: str, value: Any) -> Any:
    if name in _JSON_COLUMNS:
        return None if value is None else dumps(value)
    if name in ("enabled", "deleted"):
        return int(bool(value))
    return value


def insert_function(
    conn: sqlite3.Connection, project_id: int, values: dict[str, Any], created_by: int | None, when: str
) -> str:
    """Insert a function (`values`: stored columns) inside the caller's transaction; returns its id."""
    ident = str(values.get("id") or uuid.uuid4())
    cols = [c for c in _COLUMNS if c in values]
    conn.execute(
        f"INSERT INTO hog_functions(id, project_id, created_at, created_by, updated_at, {', '.join(cols)}) "
        f"VALUES (?,?,?,?,?,{','.join('?' * len(cols))})",
        [ident, project_id, when, created_by, when, *(_column_value(c, values[c]) for c in cols)],
    )
    return ident


def create_function(store: Store, project_id: int, values: dict[str, Any], created_by: int) -> sqlite3.Row:
    """Create a function; a transformation without `execution_order` goes last; the enabled cap is checked
    in the same transaction."""
    with store.transaction() as conn:
        type_ = values.get("type")
        if type_ in ORDERED_TYPES:
            _check_cap(conn, project_id, type_, will_be_enabled=bool(values.get("enabled")), was_active=False)
            if values.get("execution_order") is None:
                values["execution_order"] = highest_order(conn, project_id, type_) + 1
        ident = insert_function(conn, project_id, values, created_by, now_iso())
        row: sqlite3.Row = conn.execute("SELECT * FROM hog_functions WHERE id=?", (ident,)).fetchone()
        return row


def update_function(store: Store, row: sqlite3.Row, values: dict[str, Any]) -> sqlite3.Row:
    """Apply `values` (stored columns); restoring or re-enabling a transformation without an explicit
    `execution_order` puts it last, as the service's `update` does. One transaction."""
    with store.transaction() as conn:
        type_ = row["type"]
        if type_ in ORDERED_TYPES:
            will_be_enabled = bool(values.get("enabled", row["enabled"]))
            will_be_deleted = bool(values.get("deleted", row["deleted"]))
            was_active = bool(row["enabled"]) and not row["deleted"]
            if not will_be_deleted:
                _check_cap(
                    conn, row["project_id"], type_, will_be_enabled=will_be_enabled, was_active=was_active
                )
            restoring = bool(row["deleted"]) and values.get("deleted") is False
            enabling = (
                not row["enabled"] and values.get("enabled") is True and "execution_order" not in values
            )
            if restoring or enabling:
                values["execution_order"] = highest_order(conn, row["project_id"], type_) + 1
        cols = [c for c in _COLUMNS if c in values]
        if cols:
            conn.execute(
                f"UPDATE hog_functions SET {', '.join(f'{c}=?' for c in cols)}, updated_at=? WHERE id=?",
                [*(_column_value(c, values[c]) for c in cols), now_iso(), row["id"]],
            )
        fresh: sqlite3.Row = conn.execute("SELECT * FROM hog_functions WHERE id=?", (row["id"],)).fetchone()
        return fresh


def _check_cap(
    conn: sqlite3.Connection, project_id: int, type_: str, *, will_be_enabled: bool, was_active: bool
) -> None:
    if not will_be_enabled or was_active:
        return
    if enabled_count(conn, project_id, type_) >= MAX_ENABLED_TRANSFORMATIONS:
        raise validation_error(
            f"Maximum of {MAX_ENABLED_TRANSFORMATIONS} enabled transformation functions allowed per team. "
            "Please contact support if you need this limit increased, or disable some existing ones.",
            attr="type",
        )


def rearrange(store: Store, project_id: int, orders: dict[str, int]) -> list[sqlite3.Row]:
    """Set `execution_order` of several live functions of one ordered type at once (one transaction); returns
    every live function of that type, in the new order."""
    with store.transaction() as conn:
        ids = list(orders)
        found = {
            r["id"]: r
            for r in conn.execute(
                f"SELECT * FROM hog_functions WHERE project_id=? AND deleted=0 AND type IN "
                f"({','.join('?' * len(ORDERED_TYPES))}) AND id IN ({','.join('?' * len(ids))})",
                [project_id, *ORDERED_TYPES, *ids],
            )
        }
        missing = [i for i in ids if i not in found]
        if missing:
            raise validation_error(f"HogFunction with id {missing[0]} does not exist", attr=None)
        types = {r["type"] for r in found.values()}
        if len(types) > 1:
            raise validation_error("Cannot rearrange functions of different types in one request", attr=None)
        when = now_iso()
        for ident, order in orders.items():
            if found[ident]["execution_order"] != order:
                conn.execute(
                    "UPDATE hog_functions SET execution_order=?, updated_at=? WHERE id=?",
                    (order, when, ident),
                )
        rows: list[sqlite3.Row] = conn.execute(
            "SELECT * FROM hog_functions WHERE project_id=? AND type=? AND deleted=0 "
            "ORDER BY execution_order IS NULL, execution_order, updated_at DESC, id",
            (project_id, types.pop()),
        ).fetchall()
        return rows


# -- request validation --------------------------------------------------------------------------------------
class MaskingWrite(RequestModel):
    """`masking`: `{ttl (60..86400), threshold?, hash}` (`HogFunctionMaskingSerializer`)."""

    ttl: Any = None
    threshold: Any = None
    hash: Any = None


#: `masking` as `HogFunctionMaskingSerializer` reads it (ttl 60..86400 and a hash required), documented.
_MASKING_SCHEMA = {
    "type": "object",
    "nullable": True,
    "required": ["ttl", "hash"],
    "properties": {
        "ttl": {"type": "integer", "minimum": 60, "maximum": 86400},
        "threshold": {"type": "integer", "nullable": True},
        "hash": {"type": "string", "pattern": "\\S"},
    },
}
#: An `inputs_schema` item as `_check_inputs_schema` (`InputsSchemaItemSerializer`) reads it, documented.
_INPUT_ITEM = {
    "type": "object",
    "required": ["type", "key"],
    "properties": {
        "type": {"type": "string", "enum": list(INPUT_TYPES)},
        "key": {"type": "string", "pattern": "\\S"},
        "choices": {"type": "array", "items": {"type": "object"}, "nullable": True},
    },
}
#: The JSON values Python reads as false (besides []): what `x or default` replaces.
_FALSY: list[Any] = [None, False, 0, "", {}]
_MAPPINGS = JSONValue(schema={"type": "array", "items": {"type": "object"}, "nullable": True})
_ORDER = JSONValue(schema={"type": "integer", "minimum": 0, "maximum": 32767, "nullable": True})


class HogFunctionWrite(RequestModel):
    """Body of POST (create) and PATCH/PUT (update). Fields the model does not list are ignored, as DRF does;
    the checks that need the stored function or the template are in `_resolve`."""

    create_schema: ClassVar[dict[str, Any]] = {  # the OpenAPI document (safety)
        "allOf": [
            {"anyOf": [{"required": ["hog"]}, {"required": ["template_id"]}]},
            # mappings only on destinations (`HogFunctionSerializer.validate`); type absent is "destination"
            {
                "anyOf": [
                    {
                        "properties": {
                            "type": {"enum": ["destination", "site_destination", None], "nullable": True}
                        }
                    },
                    {"properties": {"mappings": {"enum": [*_FALSY, []], "nullable": True}}},
                ]
            },
        ],
        # a create reads a falsy `inputs_schema` as [] (then the template's) and a falsy `mappings` as none:
        # `HogFunctionSerializer.to_internal_value` (products/cdp/backend/api/hog_function.py)
        "properties": {
            # never created here: warehouse source webhooks (`validate_type`), log transformations (a team
            # feature flag, off in the sandbox: `validate`)
            "type": {
                "type": "string",
                "enum": [
                    *(t for t in TYPES if t not in ("warehouse_source_webhook", "transformation_log")),
                    None,
                ],
                "nullable": True,
            },
            "inputs_schema": {
                "anyOf": [{"type": "array", "items": _INPUT_ITEM}, {"enum": _FALSY, "nullable": True}]
            },
            "mappings": {
                "anyOf": [{"type": "array", "items": {"type": "object"}}, {"enum": _FALSY, "nullable": True}]
            },
        },
    }

    type: Choice(*TYPES, allow_null=True) = None  # type: ignore[valid-type]
    name: Char(max_length=400) = None  # type: ignore[valid-type]
    description: Char(allow_null=False) = None  # type: ignore[valid-type]
    enabled: Bool() = None  # type: ignore[valid-type]
    deleted: Bool() = None  # type: ignore[valid-type]
    hog: Char(allow_null=False) = None  # type: ignore[valid-type]
    inputs_schema: JSONValue(schema={"type": "array", "items": _INPUT_ITEM}) = None  # type: ignore[valid-type]
    inputs: JSONObject() = None  # type: ignore[valid-type]
    filters: JSONObject() = None  # type: ignore[valid-type]
    masking: Annotated[JSONObject(), WithJsonSchema(_MASKING_SCHEMA)] = None  # type: ignore[valid-type]
    mappings: _MAPPINGS = None  # type: ignore[valid-type]
    icon_url: Char() = None  # type: ignore[valid-type]
    template_id: Char(max_length=400) = None  # type: ignore[valid-type]
    execution_order: _ORDER = None  # type: ignore[valid-type]
    batch_export_id: JSONValue(schema={"type": "string", "format": "uuid", "nullable": True}) = None  # type: ignore[valid-type]
    create_in_folder: Char() = Field(None, alias="_create_in_folder")  # type: ignore[valid-type]


def _field_error(attr: str, detail: str, code: str = "invalid_input") -> APIError:
    return validation_error(detail, attr=attr, code=code)


def _check_execution_order(value: Any) -> int | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | str)
        or not str(value).strip().lstrip("-").isdigit()
    ):
        raise _field_error("execution_order", "A valid integer is required.", "invalid")
    number = int(value)
    if number < 0:
        raise _field_error("execution_order", "Ensure this value is greater than or equal to 0.", "min_value")
    if number > 32767:
        raise _field_error(
            "execution_order", "Ensure this value is less than or equal to 32767.", "max_value"
        )
    return number


def _check_inputs_schema(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise _field_error(
            "inputs_schema", f'Expected a list of items but got type "{type(value).__name__}".', "not_a_list"
        )
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise _field_error(
                f"inputs_schema__{i}",
                f"Invalid data. Expected a dictionary, but got {type(item).__name__}.",
                "invalid",
            )
        if "type" not in item:
            raise _field_error(f"inputs_schema__{i}__type", "This field is required.", "required")
        if item["type"] not in INPUT_TYPES:
            raise _field_error(
                f"inputs_schema__{i}__type", f'"{item["type"]}" is not a valid choice.', "invalid_choice"
            )
        key = item.get("key")
        if key is None:
            raise _field_error(f"inputs_schema__{i}__key", "This field is required.", "required")
        if not isinstance(key, str) or not key.strip():
            raise _field_error(f"inputs_schema__{i}__key", "This field may not be blank.", "blank")
        choices = item.get("choices")
        if choices is not None and (
            not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices)
        ):
            kind = type(choices).__name__
            raise _field_error(
                f"inputs_schema__{i}__choices",
                f'Expected a list of items but got type "{kind}".',
                "not_a_list",
            )
        out.append({"required": False, "secret": False, "hidden": False, **item})
    return out


def _input_error(key: str, detail: str) -> APIError:
    """An input's error as the service names it: `ValidationError({"inputs": {key: message}})` gives
    `attr` `inputs__<key>`."""
    return _field_error(f"inputs__{key}", detail)


def _check_inputs(
    schema: list[dict[str, Any]], raw: dict[str, Any], stored_secrets: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Validate `raw` inputs against the schema (only schema keys are kept, `{"value": ...}` each);
    returns `(inputs, secret_inputs)`. A secret sent back as `{"secret": true}` keeps the stored value."""
    inputs: dict[str, Any] = {}
    secret_inputs: dict[str, Any] = {}
    for order, item in enumerate(schema):
        key = str(item["key"])
        value = raw.get(key) or {}
        if not isinstance(value, dict):
            raise _field_error(
                f"inputs__{key}",
                f"Invalid data. Expected a dictionary, but got {type(value).__name__}.",
                "invalid",
            )
        if item.get("secret") and (value == {} or (value.get("secret") and "value" not in value)):
            if key in stored_secrets:
                secret_inputs[key] = stored_secrets[key]
                continue
            if value.get("secret"):
                raise _field_error(
                    f"inputs__{key}", "No value is saved for this secret input. Enter the value again."
                )
        if value == {} and item.get("required") and item.get("default") is not None:
            value = {"value": item["default"]}
        v = value.get("value")
        if item.get("required") and (v is None or v == ""):
            raise _input_error(key, "This field is required.")
        if v not in (None, "", {}, []):
            kind = item["type"]
            if kind == "string" and not isinstance(v, str):
                raise _input_error(key, "Value must be a string.")
            if kind == "number" and (isinstance(v, bool) or not isinstance(v, int | float)):
                raise _input_error(key, "Value must be a number.")
            if kind == "boolean" and not isinstance(v, bool | str):
                raise _input_error(key, "Value must be a boolean or a template string.")
            if kind == "dictionary" and not isinstance(v, dict):
                raise _input_error(key, "Value must be a dictionary.")
            if kind == "integration" and (isinstance(v, bool) or not isinstance(v, int)):
                raise _input_error(key, "Value must be an Integration ID.")
            if kind == "choice" and item.get("choices"):
                allowed = [c.get("value") for c in item["choices"] if isinstance(c, dict)]
                if v not in allowed:
                    raise _input_error(key, f"Value must be one of: {', '.join(map(str, allowed))}.")
        entry = {k: value[k] for k in ("value", "templating") if k in value}
        if item.get("secret") and "value" not in entry:
            continue  # the service skips a secret input given no value: nothing stored, nothing shown
        entry["order"] = order
        (secret_inputs if item.get("secret") else inputs)[key] = entry
    return inputs, secret_inputs


def _check_masking(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is None:
        return None
    m = value
    if m.get("ttl") is None:
        raise _field_error("masking__ttl", "This field is required.", "required")
    ttl = m["ttl"]
    if isinstance(ttl, bool) or not isinstance(ttl, int):
        raise _field_error("masking__ttl", "A valid integer is required.", "invalid")
    if ttl < 60:
        raise _field_error("masking__ttl", "Ensure this value is greater than or equal to 60.", "min_value")
    if ttl > 86400:
        raise _field_error("masking__ttl", "Ensure this value is less than or equal to 86400.", "max_value")
    if not isinstance(m.get("hash"), str) or not m["hash"].strip():
        raise _field_error("masking__hash", "This field is required.", "required")
    threshold = m.get("threshold")
    if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, int)):
        raise _field_error("masking__threshold", "A valid integer is required.", "invalid")
    return {"ttl": ttl, "threshold": threshold, "hash": m["hash"], "bytecode": BYTECODE_STUB}


_PAIRS = {")": "(", "]": "[", "}": "{"}


def compile_filters(filters: dict[str, Any], type_: str) -> dict[str, Any]:
    """`filters` as the service stores and returns them after `compile_filters_bytecode`: `source` (given,
    else "internal-events" for an internal destination, as `test_hog_function.py`
    `test_internal_destinations_can_be_managed_without_addon` shows, else "events") and `bytecode` added,
    `bytecode_error` cleared. Filters that narrow nothing compile to ``true`` (`BYTECODE_TRUE`, as PostHog
    answers); otherwise the bytecode is a stand-in (`BYTECODE_STUB`): the sandbox does not compile filters."""
    out = {k: v for k, v in filters.items() if k not in ("bytecode", "bytecode_error")}
    if not out.get("source"):
        out["source"] = "internal-events" if type_ == "internal_destination" else "events"
    narrowed = any(out.get(key) for key in _NARROWING_FILTERS)
    out["bytecode"] = list(BYTECODE_STUB if narrowed else BYTECODE_TRUE)
    return out


def _check_uuid(attr: str, value: Any) -> str | None:
    if value is None:
        return None
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        raise _field_error(attr, "Must be a valid UUID.", "invalid") from None


def hog_is_invalid(source: str) -> bool:
    """Whether PostHog would refuse `source` as Hog: its own parser decides (`hog_syntax`); without the
    `hog` extra, a structural check (brackets, strings and comments close). Which functions a type may
    call is not a save-time error in the service, so it is not one here."""
    if hog_syntax.available():
        return hog_syntax.syntax_error(source) is not None
    return _unbalanced(source)


def _unbalanced(source: str) -> bool:
    """The fallback check: brackets balance, strings and block comments close."""
    stack: list[str] = []
    i, n = 0, len(source)
    while i < n:
        ch = source[i]
        if source.startswith("//", i):
            end = source.find("\n", i)
            i = n if end < 0 else end
            continue
        if source.startswith("/*", i):
            end = source.find("*/", i + 2)
            if end < 0:
                return True
            i = end + 2
            continue
        if ch in "'\"`":
            j = i + 1
            while j < n and source[j] != ch:
                if source[j] == "\\":
                    j += 1
                elif source[j] == "\n" and ch != "`":
                    return True
                j += 1
            if j >= n:
                return True
            i = j + 1
            continue
        if ch in "([{":
            stack.append(ch)
        elif ch in ")]}" and (not stack or stack.pop() != _PAIRS[ch]):
            return True
        i += 1
    return bool(stack)


def _check_mappings(mappings: Any, type_: str) -> Any:
    """``mappings`` as sent (None clears them): a list of objects, on destinations only."""
    if mappings is not None:
        if not isinstance(mappings, list) or not all(isinstance(m, dict) for m in mappings):
            raise _field_error("mappings", 'Expected a list of items but got type "dict".', "not_a_list")
        if type_ not in ("site_destination", "destination"):
            raise _field_error("mappings", "Mappings are only allowed for destinations.")
    return mappings


def _resolve(
    data: HogFunctionWrite, sent: set[str], row: sqlite3.Row | None, project_id: int, store: Store
) -> dict[str, Any]:
    """The stored columns a create (`row` None) or update writes, after the service's checks, in its order."""
    creating = row is None
    values: dict[str, Any] = {k: getattr(data, k) for k in sent if k in _COLUMNS}
    type_ = data.type if "type" in sent and data.type is not None else (row["type"] if row else "destination")
    if type_ == "warehouse_source_webhook":
        raise _field_error("type", "Cannot create or modify warehouse source webhook functions via this API.")
    if row is not None and "type" in sent and data.type != row["type"]:
        raise _field_error("type", "Cannot modify the type of an existing function")
    values["type"] = type_
    if creating and type_ == "transformation_log":
        raise _field_error("type", "Log transformations are not enabled for this team.")

    # template: on update the stored one always applies (the service re-reads it from the function)
    template_id = data.template_id if creating else row["template_id"]  # type: ignore[index]
    values.pop("template_id", None)
    tpl = None
    if template_id:
        tpl = template(template_id)
        if tpl is None:
            raise _field_error("template_id", f"No template found for id '{template_id}'")
        if creating and tpl.get("status") == "hidden":
            raise _field_error(
                "template_id",
                f"Template '{template_id}' is internal and cannot be used to create a function.",
            )
    if creating:
        values["template_id"] = template_id
        values["inputs_schema"] = values.get("inputs_schema") or []  # falsy -> [], as the service reads it
        if tpl is not None:
            values["hog"] = data.hog or tpl.get("code")
            values["inputs_schema"] = values["inputs_schema"] or tpl.get("inputs_schema") or []
            values["icon_url"] = data.icon_url or tpl.get("icon_url")
            values["description"] = data.description or tpl.get("description") or ""
            values["name"] = data.name or tpl.get("name")

    # inputs_schema + inputs (validated together: inputs only keep the schema's keys)
    schema_raw = values.get("inputs_schema", None if creating else loads(row["inputs_schema"]))  # type: ignore[index]
    schema = _check_inputs_schema(schema_raw if schema_raw is not None else [])
    if "inputs_schema" in values or creating:
        values["inputs_schema"] = schema
    if "inputs" in sent or "inputs_schema" in sent or creating:
        raw_inputs = data.inputs if "inputs" in sent else (None if creating else loads(row["inputs"]))  # type: ignore[index]
        stored_secrets = {} if creating else (loads(row["encrypted_inputs"]) or {})  # type: ignore[index]
        if "inputs" not in sent and not creating:
            # keep the stored secrets when only the schema changes
            raw_inputs = {**(raw_inputs or {}), **{k: {"secret": True} for k in stored_secrets}}
        inputs, secret_inputs = _check_inputs(schema, raw_inputs or {}, stored_secrets)
        values["inputs"] = inputs
        values["encrypted_inputs"] = secret_inputs

    if "filters" in sent or creating:
        values["filters"] = compile_filters(data.filters or {}, type_)
    if "batch_export_id" in sent:
        values["batch_export_id"] = _check_uuid("batch_export_id", data.batch_export_id)
    if "masking" in sent:
        values["masking"] = _check_masking(data.masking)
    if "mappings" in sent:
        # a create reads a falsy value as none (to_internal_value, as the conformance run found)
        mappings = (data.mappings or None) if creating else data.mappings
        values["mappings"] = _check_mappings(mappings, type_)
    if "execution_order" in sent:
        values["execution_order"] = _check_execution_order(data.execution_order)
    if creating:
        values.setdefault("description", data.description or "")
        values["enabled"] = bool(data.enabled)
        values["deleted"] = bool(data.deleted)

    if "hog" in values and values["hog"] is not None:
        hog = str(values["hog"])
        if len(hog.encode("utf-8")) > MAX_HOG_BYTES:
            raise _field_error(
                "hog",
                f"HOG code exceeds maximum size of {MAX_HOG_BYTES // 1024}KB. Please simplify your code or "
                "contact support if you need this limit increased.",
            )
        if type_ in JS_TYPES:
            values["transpiled"] = f"/* transpiled by the sandbox: source kept as is */\n{hog}"
            values["bytecode"] = None
        else:
            if hog_is_invalid(hog):
                raise _field_error("hog", "Hog code has errors.")
            values["bytecode"] = BYTECODE_STUB
            values["transpiled"] = None
    if creating and not values.get("hog"):
        raise _field_error("hog", "Required.")
    return values


# -- handlers ------------------------------------------------------------------------------------------------
def _types_param(request: Request) -> list[str] | None:
    raw = request.query_params.get("type")
    if raw is None:
        return None
    return [t for t in raw.split(",") if t] or None


def _bool_param(request: Request, name: str) -> bool | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    low = raw.lower()
    if low in ("true", "1", "t", "yes"):
        return True
    if low in ("false", "0", "f", "no"):
        return False
    raise _field_error(name, "Enter a valid boolean.", "invalid")


async def list_functions(request: Request) -> Response:
    """GET: live functions, `execution_order` first (nulls last) then newest; `type` (comma-separated),
    `enabled`, `search`, `full=true` (every field), `limit`/`offset`."""
    ctx = context_of(request)
    ctx.authenticate_personal(request, SCOPE_READ)
    project_id = ctx.project_id_of(request)
    q = request.query_params
    search = q.get("search") or None
    if search is not None and len(search) > 200:
        raise _field_error("search", "Search query must be 200 characters or fewer.")
    types, enabled = _types_param(request), _bool_param(request, "enabled")
    limit, offset = limit_offset(request)
    count = count_functions(ctx.store, project_id, types, enabled, search)
    rows = find_functions(ctx.store, project_id, types, enabled, search, limit=limit, offset=offset)
    results = _serialize_many(ctx.store, rows, full=q.get("full") == "true")
    for result in results:
        # How the row matched `search`: "exact" (a substring; the service answers "similar" fuzzy trigram
        # matches only when nothing matches exactly, which the sandbox does not emulate), None unfiltered.
        result["search_match_type"] = "exact" if search is not None else None
    return page_response(request, results, count=count, limit=limit, offset=offset)


async def create_function_handler(request: Request) -> Response:
    """POST: create from `template_id` (+ `inputs`) or from `hog`; 201 with the full shape."""
    ctx = context_of(request)
    body = await read_body(request)
    user = ctx.authenticate_personal(request, SCOPE_WRITE)
    project_id = ctx.project_id_of(request)
    data = validate(HogFunctionWrite, parse_json_body(request, body))
    values = _resolve(data, set(data.model_fields_set), None, project_id, ctx.store)
    row = create_function(ctx.store, project_id, values, user.id)
    return SafeJSONResponse(_serialize_many(ctx.store, [row])[0], status_code=201)


async def get_function(request: Request) -> Response:
    """GET one (404 when soft-deleted)."""
    ctx = context_of(request)
    ctx.authenticate_personal(request, SCOPE_READ)
    row = get_row(ctx.store, ctx.project_id_of(request), request.path_params["hog_function_id"])
    return SafeJSONResponse(_serialize_many(ctx.store, [row])[0])


async def update_function_handler(request: Request) -> Response:
    """PATCH/PUT: the fields sent; `deleted: true` soft-deletes, `deleted: false` finds and restores a deleted
    function (the only update that can see one)."""
    ctx = context_of(request)
    body = await read_body(request)
    ctx.authenticate_personal(request, SCOPE_WRITE)
    project_id = ctx.project_id_of(request)
    raw = require_object(parse_json_body(request, body))
    data = validate(HogFunctionWrite, raw)
    row = get_row(
        ctx.store,
        project_id,
        request.path_params["hog_function_id"],
        include_deleted=raw.get("deleted") is False,
    )
    sent = set(data.model_fields_set) - {"template_id", "create_in_folder"}
    values = _resolve(data, sent, row, project_id, ctx.store)
    if "type" not in sent:
        values.pop("type", None)
    row = update_function(ctx.store, row, values)
    return SafeJSONResponse(_serialize_many(ctx.store, [row])[0])


async def delete_function(request: Request) -> Response:
    """DELETE: 405 with an empty body after auth and scope (`ForbidDestroyModel`); PATCH `deleted` instead."""
    ctx = context_of(request)
    ctx.authenticate_personal(request, SCOPE_WRITE)
    return Response(b"", status_code=405, headers={"Allow": "GET, PUT, PATCH, HEAD, OPTIONS"})


async def rearrange_handler(request: Request) -> Response:
    """PATCH rearrange/: `{"orders": {id: execution_order}}` for functions of one ordered type; answers every
    live function of that type in the new order (not paginated)."""
    ctx = context_of(request)
    body = await read_body(request)
    ctx.authenticate_personal(request, SCOPE_WRITE)
    project_id = ctx.project_id_of(request)
    data = require_object(parse_json_body(request, body))
    orders = data.get("orders")
    if not orders:
        raise validation_error("No orders provided", attr=None)
    if not isinstance(orders, dict):
        raise _field_error(
            "orders", f'Expected a dictionary of items but got type "{type(orders).__name__}".'
        )
    clean: dict[str, int] = {}
    for ident, order in orders.items():
        if isinstance(order, bool) or not isinstance(order, int) or not 0 <= order <= 32767:
            raise _field_error(f"orders__{ident}", "A valid integer is required.", "invalid")
        clean[str(ident)] = order
    rows = rearrange(ctx.store, project_id, clean)
    return SafeJSONResponse(_serialize_many(ctx.store, rows))


# -- templates
def _template_usage(store: Store) -> dict[str, int]:
    return {
        r["template_id"]: int(r["n"])
        for r in store.query(
            "SELECT template_id, COUNT(*) AS n FROM hog_functions WHERE deleted=0 AND enabled=1 "
            "AND template_id IS NOT NULL GROUP BY template_id"
        )
    }


def _list_templates(request: Request, store: Store, *, public: bool) -> Response:
    q = request.query_params
    if q.get("type"):
        types = [q["type"]]
    elif q.get("types"):
        types = q["types"].split(",")
    else:
        types = ["destination"]
    found = [t for t in templates() if t["type"] in types and t.get("status") != "deprecated"]
    if q.get("template_id"):
        found = [t for t in found if t["id"] == q["template_id"]]
    if public:
        found = [t for t in found if t.get("status") != "hidden"]
    limit, offset = limit_offset(request)
    page = found[offset : offset + limit]
    usage = _template_usage(store)
    page = sorted(page, key=lambda t: (-usage.get(t["id"], 0), str(t["name"]).lower()))
    return page_response(request, page, count=len(found), limit=limit, offset=offset)


async def list_templates(request: Request) -> Response:
    """GET hog_function_templates/: `type` (default destination) or `types`, `template_id`; deprecated ones
    left out; each page sorted by how many enabled functions use the template, then by name."""
    ctx = context_of(request)
    ctx.authenticate_personal(request, SCOPE_READ)
    return _list_templates(request, ctx.store, public=False)


async def get_template(request: Request) -> Response:
    """GET hog_function_templates/{template_id}/: any status (deprecated and hidden included)."""
    ctx = context_of(request)
    ctx.authenticate_personal(request, SCOPE_READ)
    found = template(request.path_params["template_id"])
    if found is None:
        raise not_found("No HogFunctionTemplate matches the given query.")
    return SafeJSONResponse(found)


async def public_list_templates(request: Request) -> Response:
    """GET /api/public_hog_function_templates/: the anonymous catalog (hidden templates left out)."""
    return _list_templates(request, context_of(request).store, public=True)


async def public_get_template(request: Request) -> Response:
    """GET /api/public_hog_function_templates/{template_id}/ (anonymous)."""
    found = template(request.path_params["template_id"])
    if found is None:
        raise not_found("No HogFunctionTemplate matches the given query.")
    return SafeJSONResponse(found)


_BASE = "/api/projects/{project_id}/hog_functions/"
_ENV = "/api/environments/{project_id}/hog_functions/"
_TPL = "/api/projects/{project_id}/hog_function_templates/"
_PUBLIC = "/api/public_hog_function_templates/"
_PAGE = (Query("limit", "integer", minimum=0), Query("offset", "integer", minimum=0))
_TPL_QUERY = (*_PAGE, Query("type"), Query("types"), Query("template_id"))


def _ep(method: str, suffix: str, handler: Any, op: str, summary: str, **kw: Any) -> Endpoint:
    return Endpoint(method, _BASE + suffix, handler, op, summary, aliases=(_ENV + suffix,), **kw)


ENDPOINTS = [  # named actions before `{hog_function_id}`
    _ep(
        "PATCH",
        "rearrange/",
        rearrange_handler,
        "hog_functions_rearrange_partial_update",
        "Set the execution order of transformations",
        refusals=(
            Refusal(
                400,
                "invalid_input",
                None,
                "products/cdp/backend/api/hog_function.py HogFunctionViewSet.rearrange (missing_ids)",
                detail="HogFunction with id ",
            ),
        ),
        body_schema={
            "type": "object",
            "required": ["orders"],  # "No orders provided" otherwise (safety: conformance)
            "properties": {
                # execution_order is a PositiveSmallIntegerField (the handler refuses anything outside it)
                "orders": {
                    "type": "object",
                    "minProperties": 1,
                    "additionalProperties": {"type": "integer", "minimum": 0, "maximum": 32767},
                }
            },
        },
        returns="list",
    ),
    _ep(
        "GET",
        "",
        list_functions,
        "hog_functions_list",
        "List Hog functions",
        query=(
            *_PAGE,
            Query("type"),
            Query("enabled", "boolean"),
            Query("search"),
            Query("full"),  # any text; only "true" selects the full serializer (get_serializer_class)
        ),
        returns="page",
    ),
    _ep(
        "POST",
        "",
        create_function_handler,
        "hog_functions_create",
        "Create a Hog function (from template_id, or from hog source)",
        body=HogFunctionWrite,
        status=201,
        refusals=(
            Refusal(
                400,
                "invalid_input",
                "template_id",
                "products/cdp/backend/api/hog_function.py HogFunctionSerializer.to_internal_value",
                detail="No template found for id ",
            ),
            # Hog source that does not parse: no schema states a language's grammar
            Refusal(
                400,
                "invalid_input",
                "hog",
                "posthog/cdp/validation.py compile_hog (parse_program fails: 'Hog code has errors.')",
                detail="Hog code has errors.",
            ),
        ),
    ),
    _ep("GET", "{hog_function_id}/", get_function, "hog_functions_retrieve", "Get a Hog function"),
    _ep(
        "PATCH",
        "{hog_function_id}/",
        update_function_handler,
        "hog_functions_partial_update",
        "Update a Hog function (deleted=true soft-deletes, deleted=false restores)",
        body=HogFunctionWrite,
    ),
    _ep(
        "PUT",
        "{hog_function_id}/",
        update_function_handler,
        "hog_functions_update",
        "Update a Hog function",
        body=HogFunctionWrite,
    ),
    _ep(
        "DELETE",
        "{hog_function_id}/",
        delete_function,
        "hog_functions_destroy",
        "Hard delete is not allowed: 405 with an empty body (soft delete with PATCH deleted=true)",
        status=405,
        returns="empty",
        errors=(401, 403, 404),
    ),
    Endpoint(
        "GET",
        _TPL,
        list_templates,
        "hog_function_templates_list",
        "List Hog function templates",
        query=_TPL_QUERY,
        returns="page",
    ),
    Endpoint(
        "GET",
        _TPL + "{template_id}/",
        get_template,
        "hog_function_templates_retrieve",
        "Get a Hog function template",
    ),
    Endpoint(
        "GET",
        _PUBLIC,
        public_list_templates,
        "public_hog_function_templates_list",
        "The public template catalog (no authentication)",
        query=_TPL_QUERY,
        returns="page",
        auth="none",
        errors=(400,),
    ),
    Endpoint(
        "GET",
        _PUBLIC + "{template_id}/",
        public_get_template,
        "public_hog_function_templates_retrieve",
        "One template of the public catalog (no authentication)",
        auth="none",
        errors=(404,),
    ),
]


# -- seed ----------------------------------------------------------------------------------------------------
def _iso(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


DROP_INTERNAL = """// Drop events from internal and test traffic before they are stored
if (event.properties.$host == 'localhost' or endsWith(event.distinct_id, '@example-internal.com')) {
    return null
}
return event"""

PLAN_TIER = """// Add a plan_tier property from the plan the app sends
let tier := 'free'
if (event.properties.plan in ('pro', 'team')) {
    tier := 'paid'
} else if (event.properties.plan == 'enterprise') {
    tier := 'enterprise'
}
let result := event
result.properties.plan_tier := tier
return result"""


def _input_values(tpl: dict[str, Any], given: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    inputs: dict[str, Any] = {}
    secret: dict[str, Any] = {}
    for order, item in enumerate(tpl.get("inputs_schema") or []):
        key = item["key"]
        value = given.get(key, item.get("default"))
        if value is None:
            continue
        (secret if item.get("secret") else inputs)[key] = {"value": value, "order": order}
    return inputs, secret


def seed(store: Store, ctx: SandboxContext) -> None:
    """Demo seed: four transformations in execution order (the GeoIP transformation migrated from the legacy
    plugin first, as PostHog creates it for every new project; two Hog ones; a migrated anonymization plugin,
    disabled), three destinations (one soft-deleted) and a site app. Deterministic ids."""
    day = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    owner = ctx.owner_user_id
    project_id = ctx.project_id

    def from_template(tid: str, given: dict[str, Any], **extra: Any) -> dict[str, Any]:
        tpl = template(tid)
        assert tpl is not None
        inputs, secret = _input_values(tpl, given)
        values = {
            "type": tpl["type"],
            "name": tpl["name"],
            "description": tpl["description"],
            "hog": tpl["code"],
            "bytecode": BYTECODE_STUB,
            "inputs_schema": [
                {"required": False, "secret": False, "hidden": False, **i} for i in tpl["inputs_schema"]
            ],
            "inputs": inputs,
            "encrypted_inputs": secret,
            "filters": {},
            "icon_url": tpl["icon_url"],
            "template_id": tid,
        }
        values.update(extra)
        return values

    def custom(type_: str, name: str, description: str, hog: str, **extra: Any) -> dict[str, Any]:
        return {
            "type": type_,
            "name": name,
            "description": description,
            "hog": hog,
            "bytecode": BYTECODE_STUB,
            "inputs_schema": [],
            "inputs": {},
            "encrypted_inputs": {},
            "filters": {},
            "icon_url": "/static/hedgehog/builder-hog-01.png",
            "template_id": None,
            **extra,
        }

    functions = [
        from_template("plugin-posthog-plugin-geoip", {}, enabled=True, execution_order=1),
        custom(
            "transformation",
            "Drop internal traffic",
            "Drops events from localhost and internal test users",
            DROP_INTERNAL,
            enabled=True,
            execution_order=2,
        ),
        custom(
            "transformation",
            "Plan tier",
            "Adds plan_tier (free, paid, enterprise) from the plan property",
            PLAN_TIER,
            enabled=True,
            execution_order=3,
        ),
        from_template(
            "plugin-posthog-anonymization",
            {"salt": "sandbox-demo-salt", "privateFields": "email,name"},
            enabled=False,
            execution_order=4,
        ),
        from_template(
            "template-webhook",
            {"url": "https://warehouse.example.com/ingest", "headers": {"Authorization": "Bearer demo"}},
            name="Warehouse webhook",
            enabled=True,
            filters={"events": [{"id": "$pageview", "type": "events", "name": "$pageview", "order": 0}]},
        ),
        from_template(
            "template-slack",
            {"slack_workspace": 1, "channel": "#growth"},
            name="Slack: new signups",
            enabled=False,
            filters={"events": [{"id": "signed_up", "type": "events", "name": "signed_up", "order": 0}]},
        ),
        from_template(
            "template-webhook",
            {"url": "https://old-crm.example.com/hook"},
            name="Old CRM webhook",
            enabled=False,
            deleted=True,
        ),
        custom(
            "site_app",
            "Feedback widget",
            "Shows a feedback button on the site",
            "export function onLoad({ inputs, posthog }) {\n    console.log('feedback widget loaded')\n}",
            enabled=True,
            bytecode=None,
            transpiled="/* transpiled by the sandbox */",
        ),
    ]
    with store.transaction() as conn:
        for n, values in enumerate(functions):
            values["id"] = str(uuid.UUID(int=0x0190_0000_0000_7000_8000_0000_0000_0000 + n + 1))
            when = _iso(day - timedelta(days=20 - 2 * n, hours=n))
            insert_function(conn, project_id, values, owner, when)

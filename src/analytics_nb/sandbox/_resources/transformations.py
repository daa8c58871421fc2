"""Pipeline transformations (plugins with `processEvent`): the 13 endpoints under
`/api/organizations/:id/pipeline_transformations/`, with the real shapes (posthog-notes §4).

What the sandbox does where the real service needs its plugin server or the internet:
* capabilities: a plugin created without `capabilities` gets `{"methods": ["processEvent"], ...}` at once
  (it is "analysed" immediately, so it is listed); `update_source` re-analyses `index.ts`/`index.js` and
  lists the plugin methods found there, so removing `processEvent` from the source removes the plugin from
  this endpoint.
* urls are "downloaded" from the plugin registry fixture (`fixtures/plugin_registry.json`):
  `check_for_updates` sets `latest_tag` from it, `upgrade` installs its tag and source files, `repository`
  returns it.
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
import sqlite3
from datetime import UTC, datetime, timedelta
from functools import cache
from importlib import resources
from typing import Any, ClassVar

from starlette.requests import Request
from starlette.responses import Response

from .._auth import UNSUPPORTED, User
from .._context import SandboxContext, context_of
from .._endpoints import Endpoint, Query, Refusal
from .._errors import not_found, permission_denied, validation_error
from .._http import (
    SafeJSONResponse,
    int_param,
    limit_offset,
    page_response,
    parse_json_body,
    read_body,
    request_url,
    require_object,
)
from .._store import Store, dumps, loads, now_iso
from .._validation import Bool, Char, Choice, JSONObject, JSONValue, RequestModel, validate

SCOPE_READ = "plugin:read"
SCOPE_WRITE = "plugin:write"
ACCESS_NONE, ACCESS_CONFIG, ACCESS_INSTALL, ACCESS_ROOT = 0, 3, 6, 9
PLUGIN_TYPES = ("local", "custom", "repository", "source", "inline")
SECRET_MASK = "**************** POSTHOG SECRET FIELD ****************"
KNOWN_METHODS = ("setupPlugin", "teardownPlugin", "getSettings", "onEvent", "processEvent", "composeWebhook")
KNOWN_TASKS = ("runEveryMinute", "runEveryHour", "runEveryDay")
WRITABLE = (
    "plugin_type",
    "name",
    "description",
    "icon",
    "config_schema",
    "tag",
    "is_global",
    "capabilities",
    "metrics",
    "public_jobs",
)
_URL_RE = re.compile(
    r"^(https?://(www\.)?(github\.com|gitlab\.com)/[\w.\-]+/[\w.\-]+/?.*|https?://(www\.)?npmjs\.com/package/.+)$"
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS plugins (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    organization_id TEXT,
    plugin_type TEXT,
    name TEXT,
    description TEXT,
    url TEXT,
    icon TEXT,
    config_schema TEXT,
    tag TEXT,
    latest_tag TEXT,
    latest_tag_checked_at TEXT,
    is_global INTEGER NOT NULL DEFAULT 0,
    capabilities TEXT NOT NULL DEFAULT '{}',
    metrics TEXT,
    public_jobs TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS plugin_source_files (
    plugin_id INTEGER NOT NULL REFERENCES plugins(id) ON DELETE CASCADE,
    filename TEXT NOT NULL,
    source TEXT NOT NULL,
    status TEXT,
    error TEXT,
    PRIMARY KEY (plugin_id, filename)
);
CREATE TABLE IF NOT EXISTS plugin_configs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id INTEGER NOT NULL,
    plugin_id INTEGER NOT NULL REFERENCES plugins(id) ON DELETE CASCADE,
    enabled INTEGER NOT NULL DEFAULT 1,
    "order" INTEGER NOT NULL DEFAULT 0,
    config TEXT NOT NULL DEFAULT '{}',
    error TEXT,
    name TEXT,
    description TEXT,
    deleted INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
"""


@cache
def registry() -> list[dict[str, Any]]:
    """The shipped plugin registry fixture (what `repository` returns and what urls resolve to)."""
    text = resources.files(__package__).joinpath("fixtures/plugin_registry.json").read_text("utf-8")
    return json.loads(text)


def registry_entry(url: str | None) -> dict[str, Any] | None:
    """The registry entry for a plugin url (trailing slash and case ignored)."""
    if not url:
        return None
    key = url.rstrip("/").lower()
    return next((e for e in registry() if e["url"].rstrip("/").lower() == key), None)


def analyse_source(source: str) -> dict[str, Any]:
    """Capabilities found in plugin source text: the exported plugin methods and scheduled tasks."""
    found = [m for m in KNOWN_METHODS if re.search(rf"\b{m}\b", source)]
    tasks = [t for t in KNOWN_TASKS if re.search(rf"\b{t}\b", source)]
    return {"jobs": [], "methods": found, "scheduled_tasks": tasks}


# -- serialization
def serialize(row: sqlite3.Row, org_name: str | None) -> dict[str, Any]:
    """The PluginSerializer shape."""
    url = row["url"]
    if url and "?private_token=" in url:
        url = url.split("?private_token=")[0]
    return {
        "id": row["id"],
        "plugin_type": row["plugin_type"],
        "name": row["name"],
        "description": row["description"],
        "url": url,
        "icon": row["icon"],
        "config_schema": loads(row["config_schema"]),
        "tag": row["tag"],
        "latest_tag": row["latest_tag"],
        "is_global": bool(row["is_global"]),
        "organization_id": row["organization_id"],
        "organization_name": org_name if row["organization_id"] else "posthog-inline",
        "capabilities": loads(row["capabilities"]),
        "metrics": loads(row["metrics"]),
        "public_jobs": loads(row["public_jobs"]),
        "hog_function_migration_available": False,
    }


def _org_name(store: Store, org_id: str) -> str | None:
    row = store.query_one("SELECT name FROM organizations WHERE id=?", (org_id,))
    return row["name"] if row else None


def _is_transformation(row: sqlite3.Row) -> bool:
    caps = loads(row["capabilities"]) or {}
    return isinstance(caps, dict) and "processEvent" in (caps.get("methods") or [])


# -- storage -------------------------------------------------------------------------------------------------
def org_name(store: Store, org_id: str) -> str | None:
    """An organization's name."""
    row = store.query_one("SELECT name FROM organizations WHERE id=?", (org_id,))
    return row["name"] if row else None


def access_level(store: Store, org_id: str) -> int:
    """The organization's plugin access level (NONE when unknown)."""
    row = store.query_one("SELECT plugins_access_level FROM organizations WHERE id=?", (org_id,))
    return int(row["plugins_access_level"]) if row else ACCESS_NONE


def is_transformation(row: sqlite3.Row) -> bool:
    """Whether a plugin row exports `processEvent` (what this endpoint lists)."""
    caps = loads(row["capabilities"]) or {}
    return isinstance(caps, dict) and "processEvent" in (caps.get("methods") or [])


def visible_plugins(store: Store, org_id: str) -> list[sqlite3.Row]:
    """The organization's own and global plugins, by id."""
    return store.query(
        "SELECT * FROM plugins WHERE (organization_id=? OR is_global=1) ORDER BY id", (org_id,)
    )


def get_plugin_row(store: Store, org_id: str, plugin_id: int) -> sqlite3.Row | None:
    """One plugin the organization can see."""
    return store.query_one(
        "SELECT * FROM plugins WHERE id=? AND (organization_id=? OR is_global=1)", (plugin_id, org_id)
    )


def url_installed(store: Store, org_id: str, url: str) -> bool:
    """Whether the organization already installed a plugin from `url`."""
    return (
        store.query_one("SELECT id FROM plugins WHERE url=? AND organization_id=?", (url, org_id)) is not None
    )


def _row(conn: sqlite3.Connection, plugin_id: int) -> sqlite3.Row:
    row: sqlite3.Row = conn.execute("SELECT * FROM plugins WHERE id=?", (plugin_id,)).fetchone()
    return row


def log_plugin_activity(
    store: Store,
    conn: sqlite3.Connection,
    user: User,
    org_id: str,
    row_id: int,
    activity: str,
    name: str | None,
    changes: list[dict[str, Any]] | None = None,
) -> None:
    """Append a Plugin activity-log entry inside the caller's transaction."""
    store.log_activity(
        scope="Plugin",
        item_id=row_id,
        activity=activity,
        detail={
            "changes": changes,
            "merge": None,
            "trigger": None,
            "name": name,
            "short_id": None,
            "type": None,
        },
        user_id=user.id,
        organization_id=org_id,
        project_id=user.current_project_id,
        conn=conn,
    )


def insert_plugin(
    store: Store,
    org_id: str,
    plugin_type: str,
    url: str | None,
    fields: dict[str, Any],
    sources: dict[str, str],
    user: User,
) -> sqlite3.Row:
    """Install a plugin with its source files and log it, in one transaction."""
    now = now_iso()
    with store.transaction() as conn:
        cur = conn.execute(
            "INSERT INTO plugins(organization_id, plugin_type, name, description, url, icon, config_schema, "
            "tag, latest_tag, is_global, capabilities, metrics, public_jobs, created_at, updated_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                org_id,
                plugin_type,
                fields.get("name"),
                fields.get("description") or "",
                url,
                fields.get("icon"),
                dumps(fields.get("config_schema")) if fields.get("config_schema") is not None else None,
                fields.get("tag"),
                fields.get("latest_tag"),
                int(bool(fields.get("is_global"))),
                dumps(fields["capabilities"]),
                dumps(fields.get("metrics")) if fields.get("metrics") is not None else None,
                dumps(fields.get("public_jobs")) if fields.get("public_jobs") is not None else None,
                now,
                now,
            ),
        )
        plugin_id = int(cur.lastrowid or 0)
        for filename, source in sources.items():
            conn.execute(
                "INSERT INTO plugin_source_files(plugin_id, filename, source, status) VALUES (?,?,?,?)",
                (plugin_id, filename, source, "LOCKED"),
            )
        log_plugin_activity(store, conn, user, org_id, plugin_id, "installed", fields.get("name"))
        return _row(conn, plugin_id)


def _set_clause(fields: dict[str, Any]) -> tuple[list[str], list[Any]]:
    sets: list[str] = []
    params: list[Any] = []
    for name, value in fields.items():
        if name not in (*WRITABLE, "url"):
            continue
        sets.append(f"{name}=?")
        if name == "capabilities":
            params.append(dumps(value or {}))
        elif name in ("config_schema", "metrics", "public_jobs"):
            params.append(None if value is None else dumps(value))
        elif name == "is_global":
            params.append(int(bool(value)))
        else:
            params.append(value)
    return sets, params


def update_plugin(
    store: Store,
    row: sqlite3.Row,
    fields: dict[str, Any],
    user: User,
    org_id: str,
    changes: list[dict[str, Any]],
) -> sqlite3.Row:
    """Update writable fields (`updated_at` moves) and log it, in one transaction."""
    sets, params = _set_clause(fields)
    with store.transaction() as conn:
        conn.execute(
            f"UPDATE plugins SET {', '.join([*sets, 'updated_at=?'])} WHERE id=?",
            [*params, now_iso(), row["id"]],
        )
        log_plugin_activity(store, conn, user, org_id, row["id"], "updated", row["name"], changes)
        return _row(conn, row["id"])


def delete_plugin(store: Store, row: sqlite3.Row, user: User, org_id: str) -> None:
    """Uninstall: the plugin, its source files and configs, logged, in one transaction."""
    with store.transaction() as conn:
        conn.execute("DELETE FROM plugin_source_files WHERE plugin_id=?", (row["id"],))
        conn.execute("DELETE FROM plugin_configs WHERE plugin_id=?", (row["id"],))
        conn.execute("DELETE FROM plugins WHERE id=?", (row["id"],))
        log_plugin_activity(store, conn, user, org_id, row["id"], "uninstalled", row["name"])


def set_latest_tag(store: Store, plugin_id: int, latest: str | None) -> sqlite3.Row:
    """Record the result of an update check."""
    with store.transaction() as conn:
        conn.execute(
            "UPDATE plugins SET latest_tag=?, latest_tag_checked_at=? WHERE id=?",
            (latest, now_iso(), plugin_id),
        )
        return _row(conn, plugin_id)


def sources(store: Store, plugin_id: int) -> dict[str, str]:
    """`{filename: source}` of a plugin."""
    rows = store.query(
        "SELECT filename, source FROM plugin_source_files WHERE plugin_id=? ORDER BY filename", (plugin_id,)
    )
    return {r["filename"]: r["source"] for r in rows}


def write_sources(
    store: Store, row: sqlite3.Row, files: dict[str, str | None], user: User, org_id: str
) -> dict[str, str]:
    """Write/delete source files (None deletes), re-read `plugin.json` and re-analyse `index.ts`/`index.js`,
    log it, in one transaction; returns the full file map."""
    with store.transaction() as conn:
        for filename, content in files.items():
            if content is None:
                conn.execute(
                    "DELETE FROM plugin_source_files WHERE plugin_id=? AND filename=?", (row["id"], filename)
                )
            else:
                conn.execute(
                    "INSERT INTO plugin_source_files(plugin_id, filename, source, status) VALUES (?,?,?,?) "
                    "ON CONFLICT(plugin_id, filename) DO UPDATE SET source=excluded.source",
                    (row["id"], filename, content, "LOCKED" if filename.endswith((".ts", ".tsx")) else None),
                )
        stored = {
            r["filename"]: r["source"]
            for r in conn.execute(
                "SELECT filename, source FROM plugin_source_files WHERE plugin_id=? ORDER BY filename",
                (row["id"],),
            )
        }
        updates: dict[str, Any] = {}
        meta_text = files.get("plugin.json")
        if isinstance(meta_text, str):
            try:
                meta = json.loads(meta_text)
            except ValueError:
                meta = None
            if isinstance(meta, dict):
                if isinstance(meta.get("name"), str):
                    updates["name"] = meta["name"]
                if "config" in meta:
                    try:
                        updates["config_schema"] = dumps(meta["config"])
                    except ValueError:  # a non-finite number in the config: leave the schema as it was
                        pass
        code = stored.get("index.ts") or stored.get("index.js")
        if code is not None or any(k in files for k in ("index.ts", "index.js")):
            updates["capabilities"] = dumps(analyse_source(code or ""))
        if updates:
            sets = ", ".join(f"{k}=?" for k in updates)
            conn.execute(
                f"UPDATE plugins SET {sets}, updated_at=? WHERE id=?",
                [*updates.values(), now_iso(), row["id"]],
            )
        log_plugin_activity(
            store,
            conn,
            user,
            org_id,
            row["id"],
            "source_updated",
            row["name"],
            [
                {"type": "Plugin", "action": "changed", "field": f, "before": None, "after": None}
                for f in files
            ],
        )
    return stored


def upgrade_plugin(
    store: Store, row: sqlite3.Row, entry: dict[str, Any], user: User, org_id: str
) -> sqlite3.Row:
    """Reinstall the registry entry's tag and source files, logged, in one transaction."""
    with store.transaction() as conn:
        conn.execute(
            "UPDATE plugins SET tag=?, latest_tag=?, name=?, description=?, icon=?, config_schema=?, "
            "capabilities=?, updated_at=? WHERE id=?",
            (
                entry["tag"],
                entry["tag"],
                entry["name"],
                entry["description"],
                entry.get("icon"),
                dumps(entry.get("config_schema")),
                dumps(entry.get("capabilities") or {}),
                now_iso(),
                row["id"],
            ),
        )
        conn.execute("DELETE FROM plugin_source_files WHERE plugin_id=?", (row["id"],))
        for filename, source in (entry.get("source") or {}).items():
            conn.execute(
                "INSERT INTO plugin_source_files(plugin_id, filename, source, status) VALUES (?,?,?,?)",
                (row["id"], filename, source, "LOCKED"),
            )
        change = {
            "type": "Plugin",
            "action": "changed",
            "field": "tag",
            "before": row["tag"],
            "after": entry["tag"],
        }
        log_plugin_activity(store, conn, user, org_id, row["id"], "upgraded", row["name"], [change])
        return _row(conn, row["id"])


def unused_plugin_ids(store: Store) -> list[int]:
    """Ids of plugins that no enabled config uses (not scoped to the organization, as the real one)."""
    rows = store.query(
        "SELECT id FROM plugins WHERE id NOT IN (SELECT plugin_id FROM plugin_configs WHERE enabled=1 AND "
        "deleted=0) ORDER BY id"
    )
    return [int(r["id"]) for r in rows]


def activity_page(
    store: Store, project_id: int | None, *, limit: int, offset: int
) -> tuple[int, list[sqlite3.Row]]:
    """`(total, rows)` of the Plugin/PluginConfig activity of a project, newest first."""
    total = store.query_one(
        "SELECT COUNT(*) AS n FROM activity_log WHERE scope IN ('Plugin','PluginConfig') AND project_id IS ?",
        (project_id,),
    )
    rows = store.query(
        "SELECT a.*, u.first_name, u.email FROM activity_log a LEFT JOIN users u ON u.id=a.user_id "
        "WHERE a.scope IN ('Plugin','PluginConfig') AND a.project_id IS ? "
        "ORDER BY a.created_at DESC, a.id DESC LIMIT ? OFFSET ?",
        (project_id, limit, offset),
    )
    return int(total["n"] if total else 0), rows


def enabled_configs(store: Store, org_id: str) -> list[tuple[sqlite3.Row, sqlite3.Row]]:
    """`(config, plugin)` of the organization's enabled plugin configs, by config id."""
    rows = store.query(
        "SELECT c.*, p.id AS pid FROM plugin_configs c JOIN plugins p ON p.id=c.plugin_id "
        "JOIN projects t ON t.id=c.project_id WHERE t.organization_id=? AND c.enabled=1 AND c.deleted=0 "
        "ORDER BY c.id",
        (org_id,),
    )
    out = []
    for c in rows:
        plugin = store.query_one("SELECT * FROM plugins WHERE id=?", (c["pid"],))
        if plugin is not None:
            out.append((c, plugin))
    return out


# -- request models ------------------------------------------------------------------------------------------
class TransformationWrite(RequestModel):
    """Body of POST (install) and PATCH/PUT (update; `url` is ignored there)."""

    #: An install needs a repository or npm URL unless it is a `source` plugin (plugin_type "source", or
    #: neither a type nor a URL): `update_validated_data_from_url` in posthog/api/plugin.py refuses any
    #: other URL with "Must be a GitHub/GitLab repository or a npm package URL!" (OpenAPI document).
    #: No body at all is an empty one: a `source` plugin.
    create_body_required: ClassVar[bool] = False
    create_schema: ClassVar[dict[str, Any]] = {
        "anyOf": [
            {"required": ["plugin_type"], "properties": {"plugin_type": {"enum": ["source"]}}},
            {
                "properties": {
                    "plugin_type": {"enum": [None], "nullable": True},
                    "url": {"enum": [None, ""], "nullable": True},
                }
            },
            {"required": ["url"], "properties": {"url": {"type": "string", "pattern": _URL_RE.pattern}}},
        ]
    }

    plugin_type: Choice(*PLUGIN_TYPES, allow_null=True) = None  # type: ignore[valid-type]
    name: Char(max_length=200) = None  # type: ignore[valid-type]
    description: Char() = None  # type: ignore[valid-type]
    icon: Char(max_length=800) = None  # type: ignore[valid-type]
    tag: Char(max_length=200) = None  # type: ignore[valid-type]
    is_global: Bool() = None  # type: ignore[valid-type]
    config_schema: JSONValue() = None  # type: ignore[valid-type]
    capabilities: JSONObject() = None  # type: ignore[valid-type]
    metrics: JSONValue() = None  # type: ignore[valid-type]
    public_jobs: JSONValue() = None  # type: ignore[valid-type]
    url: Char(max_length=800) = None  # type: ignore[valid-type]


#: Body of PATCH .../update_source/: `{filename: content | null}`.
SOURCE_MAP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": {"type": "string", "nullable": True},
}


def _source_files(data: dict[str, Any]) -> dict[str, str | None]:
    for filename, content in data.items():
        if not filename or len(filename) > 200 or "/" in filename or "\x00" in filename:
            shown = filename if len(filename) <= 40 else filename[:40] + "…"
            raise validation_error(f"File names must be 1-200 characters without '/' (got {shown!r}).", None)
        if content is not None and not isinstance(content, str):
            raise validation_error("File content must be a string, or null to delete the file.", filename)
        if content is not None and "\x00" in content:
            raise validation_error("Null characters are not allowed.", filename)
    return dict(data)


# -- access --------------------------------------------------------------------------------------------------
def _auth(request: Request, scope: str, *, write: bool) -> tuple[SandboxContext, User, str]:
    """Authenticate (with `scope`) then apply PluginsAccessLevelPermission (CONFIG reads, INSTALL writes)."""
    ctx = context_of(request)
    user = ctx.authenticate_personal(request, scope)
    org_id = ctx.organization_id_of(request)
    if access_level(ctx.store, org_id) < (ACCESS_INSTALL if write else ACCESS_CONFIG):
        raise permission_denied("Your organization's plugin access level is insufficient.")
    return ctx, user, org_id


def _action_scope(ctx: SandboxContext, write: bool) -> str:
    """Custom actions: the cloud refuses personal keys; the spec profile maps them to plugin:read/write."""
    if ctx.is_cloud:
        return UNSUPPORTED
    return SCOPE_WRITE if write else SCOPE_READ


def _get_plugin(ctx: SandboxContext, org_id: str, raw_id: str) -> sqlite3.Row:
    """A transformation visible to the organization (own or global, with processEvent), else 404."""
    try:
        plugin_id = int(raw_id)
    except ValueError:
        raise not_found() from None
    if not 0 < plugin_id < 2**63:
        raise not_found()
    if access_level(ctx.store, org_id) < ACCESS_CONFIG:
        raise not_found()
    row = get_plugin_row(ctx.store, org_id, plugin_id)
    if row is None or not is_transformation(row):
        raise not_found()
    return row


def _require_own(row: sqlite3.Row, org_id: str) -> None:
    if row["organization_id"] != org_id:
        raise permission_denied("This plugin installation is managed by another organization")


def _require_install(ctx: SandboxContext, row: sqlite3.Row, org_id: str) -> None:
    if row["organization_id"] != org_id:
        raise not_found()
    if access_level(ctx.store, org_id) < ACCESS_INSTALL:
        raise permission_denied("Plugin installation is not available for the current organization!")


# -- handlers ------------------------------------------------------------------------------------------------
async def list_transformations(request: Request) -> Response:
    """GET: one page of the organization's (and global) transformations, by id, paged in SQL."""
    ctx, _, org_id = _auth(request, SCOPE_READ, write=False)
    limit, offset = limit_offset(request)
    name = org_name(ctx.store, org_id)
    items = [serialize(r, name) for r in visible_plugins(ctx.store, org_id) if is_transformation(r)]
    return page_response(
        request, items[offset : offset + limit], count=len(items), limit=limit, offset=offset
    )


async def create_transformation(request: Request) -> Response:
    """POST: install a plugin (urls resolve through the registry fixture; `source` plugins need no url)."""
    body = await read_body(request)
    ctx, user, org_id = _auth(request, SCOPE_WRITE, write=True)
    fields = validate(TransformationWrite, parse_json_body(request, body)).sent()
    plugin_type = fields.get("plugin_type") or ("source" if not fields.get("url") else "custom")
    url = fields.get("url")
    if fields.get("is_global") and access_level(ctx.store, org_id) < ACCESS_ROOT:
        raise permission_denied("This organization can't manage global plugins!")
    files: dict[str, str] = {}
    if plugin_type != "source":
        if not url or not _URL_RE.match(url):
            raise validation_error("Must be a GitHub/GitLab repository or a npm package URL!")
        if url_installed(ctx.store, org_id, url):
            raise validation_error(f'Plugin from URL "{url}" already installed!')
        entry = registry_entry(url)
        if entry is not None:  # "downloaded": plugin.json fills the descriptive fields
            for key in ("name", "description", "icon", "config_schema", "tag", "capabilities"):
                fields.setdefault(key, entry.get(key))
            fields["latest_tag"] = entry["tag"]
            files = dict(entry.get("source") or {})
        if plugin_type not in ("repository", "custom"):
            plugin_type = "custom"
        fields.setdefault("name", url.rstrip("/").rsplit("/", 1)[-1])
    if fields.get("capabilities") is None:
        fields["capabilities"] = {"jobs": [], "methods": ["processEvent"], "scheduled_tasks": []}
    row = insert_plugin(ctx.store, org_id, plugin_type, url, fields, files, user)
    return SafeJSONResponse(serialize(row, org_name(ctx.store, org_id)), status_code=201)


async def get_transformation(request: Request) -> Response:
    """GET one transformation."""
    ctx, _, org_id = _auth(request, SCOPE_READ, write=False)
    row = _get_plugin(ctx, org_id, request.path_params["id"])
    return SafeJSONResponse(serialize(row, org_name(ctx.store, org_id)))


async def update_transformation(request: Request) -> Response:
    """PATCH/PUT: update writable fields (`updated_at` moves; `is_global` needs ROOT)."""
    body = await read_body(request)
    ctx, user, org_id = _auth(request, SCOPE_WRITE, write=True)
    data = validate(TransformationWrite, parse_json_body(request, body))
    row = _get_plugin(ctx, org_id, request.path_params["id"])
    _require_own(row, org_id)
    fields = data.sent()
    fields.pop("url", None)
    if "is_global" in fields and access_level(ctx.store, org_id) < ACCESS_ROOT:
        raise permission_denied("This organization can't manage global plugins!")
    before = serialize(row, None)
    changes = [
        {"type": "Plugin", "action": "changed", "field": k, "before": before.get(k), "after": val}
        for k, val in fields.items()
    ]
    row = update_plugin(ctx.store, row, fields, user, org_id, changes)
    return SafeJSONResponse(serialize(row, org_name(ctx.store, org_id)))


async def delete_transformation(request: Request) -> Response:
    """DELETE: uninstall (204); a global plugin must be made local first (400)."""
    ctx, user, org_id = _auth(request, SCOPE_WRITE, write=True)
    row = _get_plugin(ctx, org_id, request.path_params["id"])
    _require_own(row, org_id)
    if row["is_global"]:
        raise validation_error("This plugin is marked as global! Make it local before uninstallation")
    delete_plugin(ctx.store, row, user, org_id)
    return Response(status_code=204)


async def check_for_updates(request: Request) -> Response:
    """GET .../check_for_updates/: `latest_tag` from the registry fixture -> `{"plugin": {...}}`."""
    ctx = context_of(request)
    _, _, org_id = _auth(request, _action_scope(ctx, write=False), write=False)
    row = _get_plugin(ctx, org_id, request.path_params["id"])
    _require_install(ctx, row, org_id)
    entry = registry_entry(row["url"])
    row = set_latest_tag(ctx.store, row["id"], entry["tag"] if entry else row["latest_tag"])
    return SafeJSONResponse({"plugin": serialize(row, org_name(ctx.store, org_id))})


async def get_source(request: Request) -> Response:
    """GET .../source/: `{filename: source}`."""
    ctx = context_of(request)
    _, _, org_id = _auth(request, _action_scope(ctx, write=False), write=False)
    row = _get_plugin(ctx, org_id, request.path_params["id"])
    _require_install(ctx, row, org_id)
    return SafeJSONResponse(sources(ctx.store, row["id"]))


async def update_source(request: Request) -> Response:
    """PATCH .../update_source/: body `{filename: content | null}` (null deletes); returns the full map."""
    ctx = context_of(request)
    body = await read_body(request)
    _, user, org_id = _auth(request, _action_scope(ctx, write=True), write=True)
    data = require_object(parse_json_body(request, body))
    row = _get_plugin(ctx, org_id, request.path_params["id"])
    _require_install(ctx, row, org_id)
    files = write_sources(ctx.store, row, _source_files(data), user, org_id)
    return SafeJSONResponse(files)


async def upgrade(request: Request) -> Response:
    """POST .../upgrade/: reinstall the registry's latest tag and source (not `source`/`local` ones)."""
    ctx = context_of(request)
    body = await read_body(request)
    _, user, org_id = _auth(request, _action_scope(ctx, write=True), write=True)
    parse_json_body(request, body)
    row = _get_plugin(ctx, org_id, request.path_params["id"])
    _require_install(ctx, row, org_id)
    entry = registry_entry(row["url"])
    if row["plugin_type"] not in ("source", "local") and entry is not None:
        row = upgrade_plugin(ctx.store, row, entry, user, org_id)
    return SafeJSONResponse(serialize(row, org_name(ctx.store, org_id)))


async def repository(request: Request) -> Response:
    """GET .../repository/: the registry fixture list."""
    ctx = context_of(request)
    _auth(request, _action_scope(ctx, write=False), write=False)
    return SafeJSONResponse([{k: e[k] for k in e if k != "source"} for e in registry()])


async def unused(request: Request) -> Response:
    """GET .../unused/: ids of plugins that no enabled config uses (not scoped to the organization)."""
    ctx = context_of(request)
    _auth(request, _action_scope(ctx, write=False), write=False)
    return SafeJSONResponse(unused_plugin_ids(ctx.store))


async def activity(request: Request) -> Response:
    """GET .../activity/?limit&page: Plugin/PluginConfig activity of the user's current project (nothing when
    the key's `scoped_teams` leaves that project out)."""
    ctx = context_of(request)
    _, user, _ = _auth(request, _action_scope(ctx, write=False), write=False)
    q = request.query_params
    limit = min(int_param(q.get("limit"), 10) or 10, 1000)
    page = min(int_param(q.get("page"), 1) or 1, 10**9)
    project_id = user.current_project_id
    rows: list[sqlite3.Row] = []
    total = 0
    if user.scoped_teams is None or project_id in user.scoped_teams:
        total, rows = activity_page(ctx.store, project_id, limit=limit, offset=(page - 1) * limit)
    results = [
        {
            "id": f"{r['id']:08d}-0000-4000-8000-000000000000",
            "user": {"first_name": r["first_name"], "email": r["email"]} if r["user_id"] else None,
            "unread": False,
            "is_system": r["user_id"] is None,
            "organization_id": r["organization_id"],
            "was_impersonated": False,
            "activity": r["activity"],
            "item_id": r["item_id"],
            "scope": r["scope"],
            "detail": loads(r["detail"]),
            "created_at": r["created_at"],
        }
        for r in rows
    ]
    url = request_url(request)
    nxt = str(url.include_query_params(page=page + 1, limit=limit)) if page * limit < total else None
    prev = str(url.include_query_params(page=page - 1, limit=limit)) if page > 1 else None
    return SafeJSONResponse({"results": results, "next": nxt, "previous": prev, "total_count": total})


def _mask(config: dict[str, Any], schema: Any) -> dict[str, Any]:
    secret_keys = {f.get("key") for f in schema or [] if isinstance(f, dict) and f.get("secret")}
    return {
        k: (SECRET_MASK if k in secret_keys and val not in (None, "") else val) for k, val in config.items()
    }


async def exports_unsubscribe_configs(request: Request) -> Response:
    """GET .../exports_unsubscribe_configs/: the organization's enabled plugin configs (global
    transformations and plugins with no capabilities left out; only projects the key may see), secret
    config values masked."""
    ctx = context_of(request)
    _, user, org_id = _auth(request, _action_scope(ctx, write=False), write=False)
    name = org_name(ctx.store, org_id)
    out = []
    for c, plugin in enabled_configs(ctx.store, org_id):
        if user.scoped_teams is not None and c["project_id"] not in user.scoped_teams:
            continue
        caps = loads(plugin["capabilities"]) or {}
        methods = caps.get("methods") or [] if isinstance(caps, dict) else []
        if not caps or (plugin["is_global"] and "processEvent" in methods):
            continue
        out.append(
            {
                "id": c["id"],
                "plugin": c["plugin_id"],
                "enabled": bool(c["enabled"]),
                "order": c["order"],
                "config": _mask(loads(c["config"]) or {}, loads(plugin["config_schema"])),
                "error": None,
                "team_id": c["project_id"],
                "plugin_info": serialize(plugin, name),
                "delivery_rate_24h": 0.99,
                "created_at": c["created_at"],
                "updated_at": c["updated_at"],
                "name": c["name"],
                "description": c["description"],
                "deleted": bool(c["deleted"]),
            }
        )
    return SafeJSONResponse(out)


_BASE = "/api/organizations/{organization_id}/pipeline_transformations/"
_PAGE = (Query("limit", "integer", minimum=0), Query("offset", "integer", minimum=0))
ENDPOINTS = [  # named actions before `{id}`
    Endpoint(
        "GET",
        _BASE + "activity/",
        activity,
        "transformations_activity",
        "Activity log",
        # `limit` any size: the service pages with Django's Paginator (`get_activity_page`), which slices
        # no further than the row count; the sandbox clamps it to 1000
        query=(Query("limit", "integer", minimum=0, clamped=True), Query("page", "integer", minimum=0)),
    ),
    Endpoint(
        "GET",
        _BASE + "exports_unsubscribe_configs/",
        exports_unsubscribe_configs,
        "transformations_exports",
        "Export configs",
        returns="list",
    ),
    Endpoint(
        "GET",
        _BASE + "repository/",
        repository,
        "transformations_repository",
        "Plugin repository",
        returns="list",
    ),
    Endpoint("GET", _BASE + "unused/", unused, "transformations_unused", "Unused plugin ids", returns="list"),
    Endpoint(
        "GET",
        _BASE,
        list_transformations,
        "transformations_list",
        "List transformations",
        query=_PAGE,
        returns="page",
    ),
    Endpoint(
        "POST",
        _BASE,
        create_transformation,
        "transformations_create",
        "Install a transformation",
        body=TransformationWrite,
        status=201,
        refusals=(
            Refusal(
                400,
                "invalid_input",
                None,
                "posthog/api/plugin.py PluginSerializer.create (a URL the organization already installed)",
                detail='Plugin from URL "',
            ),
        ),
    ),
    Endpoint(
        "GET", _BASE + "{id:int}/", get_transformation, "transformations_retrieve", "Get a transformation"
    ),
    Endpoint(
        "PATCH",
        _BASE + "{id:int}/",
        update_transformation,
        "transformations_partial_update",
        "Update",
        body=TransformationWrite,
    ),
    Endpoint(
        "PUT",
        _BASE + "{id:int}/",
        update_transformation,
        "transformations_update",
        "Update",
        body=TransformationWrite,
    ),
    Endpoint(
        "DELETE",
        _BASE + "{id:int}/",
        delete_transformation,
        "transformations_destroy",
        "Uninstall",
        status=204,
        returns="empty",
    ),
    Endpoint(
        "GET",
        _BASE + "{id:int}/check_for_updates/",
        check_for_updates,
        "transformations_check_for_updates",
        "Check for updates",
    ),
    Endpoint("GET", _BASE + "{id:int}/source/", get_source, "transformations_source", "Source files"),
    Endpoint(
        "PATCH",
        _BASE + "{id:int}/update_source/",
        update_source,
        "transformations_update_source",
        "Update source files",
        body_schema=SOURCE_MAP_SCHEMA,
        # posthog/api/plugin.py `update_source` walks `request.data.items()`: no body changes nothing and
        # answers the source (issue 37: schemathesis found the document calling the body required)
        body_optional=True,
        refusals=(
            Refusal(
                400,
                "invalid_input",
                None,
                "posthog/models/plugin.py PluginSourceFile.filename (CharField(max_length=200)); the sandbox "
                "refuses what the service would fail to store",
                detail="File names must be 1-200 characters without '/'",
            ),
        ),
    ),
    Endpoint("POST", _BASE + "{id:int}/upgrade/", upgrade, "transformations_upgrade", "Upgrade"),
]


def _unless_removed(handler: Any) -> Any:
    """`handler`, answering 404 instead while the `no_plugin_api` switch is on (an instance after PostHog PR
    #97440, which removes the plugin and plugin-config APIs and the `pipeline_*` routes)."""

    async def served(request: Request) -> Response:
        if "no_plugin_api" in context_of(request).switches:
            raise not_found()
        response: Response = await handler(request)
        return response

    served.__doc__ = handler.__doc__
    served.__name__ = getattr(handler, "__name__", "served")
    return served


ENDPOINTS = [dataclasses.replace(ep, handler=_unless_removed(ep.handler)) for ep in ENDPOINTS]


# -- seed ----------------------------------------------------------------------------------------------------
def _iso(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def seed(store: Store, ctx: SandboxContext) -> None:
    """Demo seed: the registry's plugins installed (a few lagging behind), one browser-written source
    transformation, plugin configs in the project, and the matching activity log. Deterministic."""
    rng = random.Random(20240918)
    day = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    with store.transaction() as conn:
        _seed_plugins(store, conn, rng, day, ctx.project_id, ctx.organization_id, ctx.owner_user_id)


def _seed_plugins(
    store: Store, conn: Any, rng: random.Random, day: datetime, project_id: int, org_id: str, owner_id: int
) -> None:
    entries = registry()
    transformations = [e for e in entries if "processEvent" in e["capabilities"]["methods"]]
    exports = [e for e in entries if "processEvent" not in e["capabilities"]["methods"]]
    installed = []
    for n, entry in enumerate([*transformations, *exports]):
        when = _iso(day - timedelta(days=40 - n))
        # a few installs lag behind the registry, so check_for_updates/upgrade have something to do
        major, minor, patch = (int(x) for x in entry["tag"].split("."))
        tag = f"{major}.{max(0, minor - 1)}.{patch}" if n % 3 == 0 else entry["tag"]
        cur = conn.execute(
            "INSERT INTO plugins(organization_id, plugin_type, name, description, url, icon, "
            "config_schema, tag, "
            "latest_tag, is_global, capabilities, metrics, public_jobs, created_at, updated_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                org_id,
                "repository" if n % 2 == 0 else "custom",
                entry["name"],
                entry["description"],
                entry["url"],
                entry["icon"],
                dumps(entry["config_schema"]),
                tag,
                None,
                0,
                dumps(entry["capabilities"]),
                None,
                None,
                when,
                when,
            ),
        )
        plugin_id = int(cur.lastrowid)
        installed.append((plugin_id, entry))
        for filename, source in entry["source"].items():
            conn.execute(
                "INSERT INTO plugin_source_files(plugin_id, filename, source, status) VALUES (?,?,?,?)",
                (plugin_id, filename, source, "LOCKED"),
            )
        store.log_activity(
            scope="Plugin",
            item_id=plugin_id,
            activity="installed",
            detail={
                "changes": None,
                "merge": None,
                "trigger": None,
                "name": entry["name"],
                "short_id": None,
                "type": None,
            },
            user_id=owner_id,
            organization_id=org_id,
            project_id=project_id,
            conn=conn,
        )
    # one transformation written in the browser (plugin_type "source")
    source = (
        "// Adds the hour of day to every event\n"
        "export function processEvent(event) {\n"
        "    const hour = new Date(event.timestamp ?? Date.now()).getUTCHours()\n"
        "    event.properties = { ...event.properties, hour_of_day: hour }\n"
        "    return event\n"
        "}\n"
    )
    when = _iso(day - timedelta(days=3))
    cur = conn.execute(
        "INSERT INTO plugins(organization_id, plugin_type, name, description, url, icon, config_schema, tag, "
        "latest_tag, is_global, capabilities, metrics, public_jobs, created_at, updated_at) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            org_id,
            "source",
            "Hour of day",
            "Adds hour_of_day to events",
            None,
            None,
            "[]",
            None,
            None,
            0,
            dumps({"jobs": [], "methods": ["processEvent"], "scheduled_tasks": []}),
            None,
            None,
            when,
            when,
        ),
    )
    for filename, text in (
        ("index.ts", source),
        ("plugin.json", '{\n  "name": "Hour of day",\n  "config": []\n}'),
    ):
        conn.execute(
            "INSERT INTO plugin_source_files(plugin_id, filename, source, status) VALUES (?,?,?,?)",
            (cur.lastrowid, filename, text, "LOCKED"),
        )
    # plugin configs: most transformations and every export are enabled in the project
    for order, (plugin_id, entry) in enumerate(installed):
        if order % 4 == 3:
            continue  # left unused
        config = {}
        for field in entry["config_schema"]:
            key = field["key"]
            config[key] = (
                f"secret-{rng.randint(1000, 9999)}"
                if field.get("secret")
                else field.get("default", f"value-{order}")
            )
        when = _iso(day - timedelta(days=30 - order))
        conn.execute(
            'INSERT INTO plugin_configs(project_id, plugin_id, enabled, "order", config, name, description, '
            "deleted, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (
                project_id,
                plugin_id,
                int(order % 5 != 4),
                order,
                dumps(config),
                entry["name"],
                entry["description"],
                0,
                when,
                when,
            ),
        )
        store.log_activity(
            scope="PluginConfig",
            item_id=plugin_id,
            activity="enabled",
            detail={
                "changes": None,
                "merge": None,
                "trigger": None,
                "name": entry["name"],
                "short_id": None,
                "type": None,
            },
            user_id=owner_id,
            organization_id=org_id,
            project_id=project_id,
            conn=conn,
        )

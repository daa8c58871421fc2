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

import json
import re
import sqlite3
from functools import cache
from importlib import resources
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from . import _validate as v
from ._auth import UNSUPPORTED, User
from ._context import SandboxContext
from ._errors import not_found, permission_denied, validation_error
from ._http import int_param, page_links, parse_json_body, read_body, request_url, require_object
from ._store import Store, dumps, loads, now_iso

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


# -- access
def _ctx(request: Request) -> SandboxContext:
    return request.app.state.sandbox


def _access_level(ctx: SandboxContext, org_id: str) -> int:
    row = ctx.store.query_one("SELECT plugins_access_level FROM organizations WHERE id=?", (org_id,))
    return int(row["plugins_access_level"]) if row else ACCESS_NONE


def _auth(request: Request, scope: str, *, write: bool) -> tuple[SandboxContext, User, str]:
    """Authenticate (with `scope`) then apply PluginsAccessLevelPermission (CONFIG reads, INSTALL writes)."""
    ctx = _ctx(request)
    user = ctx.authenticate_personal(request, scope)
    org_id = ctx.organization_id_of(request)
    level = _access_level(ctx, org_id)
    if level < (ACCESS_INSTALL if write else ACCESS_CONFIG):
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
    if _access_level(ctx, org_id) < ACCESS_CONFIG:
        raise not_found()
    row = ctx.store.query_one(
        "SELECT * FROM plugins WHERE id=? AND (organization_id=? OR is_global=1)", (plugin_id, org_id)
    )
    if row is None or not _is_transformation(row):
        raise not_found()
    return row


def _require_own(row: sqlite3.Row, org_id: str) -> None:
    if row["organization_id"] != org_id:
        raise permission_denied("This plugin installation is managed by another organization")


def _require_install(ctx: SandboxContext, row: sqlite3.Row, org_id: str) -> None:
    if row["organization_id"] != org_id:
        raise not_found()
    if _access_level(ctx, org_id) < ACCESS_INSTALL:
        raise permission_denied("Plugin installation is not available for the current organization!")


def _log(
    ctx: SandboxContext,
    conn: sqlite3.Connection,
    user: User,
    org_id: str,
    row_id: int,
    activity: str,
    name: str | None,
    changes: list[dict[str, Any]] | None = None,
) -> None:
    ctx.store.log_activity(
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


# -- validation
def _validated(data: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "plugin_type" in data:
        out["plugin_type"] = v.choice(data, "plugin_type", PLUGIN_TYPES, allow_null=True)
    for name, limit in (("name", 200), ("description", None), ("icon", 800), ("tag", 200)):
        if name in data:
            out[name] = v.char(data, name, max_length=limit)
    if "is_global" in data:
        out["is_global"] = v.boolean(data, "is_global")
    for name in ("config_schema", "capabilities", "metrics", "public_jobs"):
        if name in data:
            out[name] = v.json_field(data, name)
    if (
        "capabilities" in out
        and out["capabilities"] is not None
        and not isinstance(out["capabilities"], dict)
    ):
        raise validation_error(
            f'Expected a dictionary of items but got type "{type(out["capabilities"]).__name__}".',
            "capabilities",
        )
    if "url" in data:
        out["url"] = v.char(data, "url", max_length=800)
    return out


def _set_clause(fields: dict[str, Any]) -> tuple[list[str], list[Any]]:
    sets, params = [], []
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


# -- endpoints
async def list_transformations(request: Request) -> Response:
    """GET: paginated transformations of the organization (and global ones)."""
    ctx, _, org_id = _auth(request, SCOPE_READ, write=False)
    rows = ctx.store.query(
        "SELECT * FROM plugins WHERE (organization_id=? OR is_global=1) ORDER BY id", (org_id,)
    )
    name = _org_name(ctx.store, org_id)
    items = [serialize(r, name) for r in rows if _is_transformation(r)]
    limit = int_param(request.query_params.get("limit"), 100) or 100
    offset = int_param(request.query_params.get("offset"), 0)
    nxt, prev = page_links(request, count=len(items), limit=limit, offset=offset)
    return JSONResponse(
        {"count": len(items), "next": nxt, "previous": prev, "results": items[offset : offset + limit]}
    )


async def create_transformation(request: Request) -> Response:
    """POST: install a plugin (urls resolve through the registry fixture; `source` plugins need no url)."""
    body = await read_body(request)
    ctx, user, org_id = _auth(request, SCOPE_WRITE, write=True)
    data = require_object(parse_json_body(request, body))
    fields = _validated(data)
    plugin_type = fields.get("plugin_type") or ("source" if not fields.get("url") else "custom")
    url = fields.get("url")
    if fields.get("is_global") and _access_level(ctx, org_id) < ACCESS_ROOT:
        raise permission_denied("This organization can't manage global plugins!")
    sources: dict[str, str] = {}
    if plugin_type != "source":
        if not url or not _URL_RE.match(url):
            raise validation_error("Must be a GitHub/GitLab repository or a npm package URL!")
        if ctx.store.query_one("SELECT id FROM plugins WHERE url=? AND organization_id=?", (url, org_id)):
            raise validation_error(f'Plugin from URL "{url}" already installed!')
        entry = registry_entry(url)
        if entry is not None:  # "downloaded": plugin.json fills the descriptive fields
            for key in ("name", "description", "icon", "config_schema", "tag", "capabilities"):
                fields.setdefault(key, entry.get(key))
            fields["latest_tag"] = entry["tag"]
            sources = dict(entry.get("source") or {})
        if plugin_type not in ("repository", "custom"):
            plugin_type = "custom"
        fields.setdefault("name", url.rstrip("/").rsplit("/", 1)[-1])
    if "capabilities" not in fields or fields["capabilities"] is None:
        fields["capabilities"] = {"jobs": [], "methods": ["processEvent"], "scheduled_tasks": []}
    fields["plugin_type"] = plugin_type
    now = now_iso()
    with ctx.store.transaction() as conn:
        cur = conn.execute(
            "INSERT INTO plugins(organization_id, plugin_type, name, description, url, icon, "
            "config_schema, tag, "
            "latest_tag, is_global, capabilities, metrics, public_jobs, created_at, updated_at) "
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
        _log(ctx, conn, user, org_id, plugin_id, "installed", fields.get("name"))
        row = conn.execute("SELECT * FROM plugins WHERE id=?", (plugin_id,)).fetchone()
    return JSONResponse(serialize(row, _org_name(ctx.store, org_id)), status_code=201)


async def get_transformation(request: Request) -> Response:
    """GET one transformation."""
    ctx, _, org_id = _auth(request, SCOPE_READ, write=False)
    row = _get_plugin(ctx, org_id, request.path_params["id"])
    return JSONResponse(serialize(row, _org_name(ctx.store, org_id)))


async def update_transformation(request: Request) -> Response:
    """PATCH/PUT: update writable fields (`updated_at` moves; `is_global` needs ROOT)."""
    body = await read_body(request)
    ctx, user, org_id = _auth(request, SCOPE_WRITE, write=True)
    data = require_object(parse_json_body(request, body))
    row = _get_plugin(ctx, org_id, request.path_params["id"])
    _require_own(row, org_id)
    fields = _validated(data)
    fields.pop("url", None)
    if "is_global" in fields and _access_level(ctx, org_id) < ACCESS_ROOT:
        raise permission_denied("This organization can't manage global plugins!")
    sets, params = _set_clause(fields)
    changes = [
        {
            "type": "Plugin",
            "action": "changed",
            "field": k,
            "before": serialize(row, None).get(k),
            "after": val,
        }
        for k, val in fields.items()
    ]
    with ctx.store.transaction() as conn:
        conn.execute(
            f"UPDATE plugins SET {', '.join([*sets, 'updated_at=?'])} WHERE id=?",
            [*params, now_iso(), row["id"]],
        )
        _log(ctx, conn, user, org_id, row["id"], "updated", row["name"], changes)
        row = conn.execute("SELECT * FROM plugins WHERE id=?", (row["id"],)).fetchone()
    return JSONResponse(serialize(row, _org_name(ctx.store, org_id)))


async def delete_transformation(request: Request) -> Response:
    """DELETE: uninstall (204); a global plugin must be made local first (400)."""
    ctx, user, org_id = _auth(request, SCOPE_WRITE, write=True)
    row = _get_plugin(ctx, org_id, request.path_params["id"])
    _require_own(row, org_id)
    if row["is_global"]:
        raise validation_error("This plugin is marked as global! Make it local before uninstallation")
    with ctx.store.transaction() as conn:
        conn.execute("DELETE FROM plugin_source_files WHERE plugin_id=?", (row["id"],))
        conn.execute("DELETE FROM plugin_configs WHERE plugin_id=?", (row["id"],))
        conn.execute("DELETE FROM plugins WHERE id=?", (row["id"],))
        _log(ctx, conn, user, org_id, row["id"], "uninstalled", row["name"])
    return Response(status_code=204)


async def check_for_updates(request: Request) -> Response:
    """GET .../check_for_updates/: `latest_tag` from the registry fixture -> `{"plugin": {...}}`."""
    ctx = _ctx(request)
    _, _, org_id = _auth(request, _action_scope(ctx, write=False), write=False)
    row = _get_plugin(ctx, org_id, request.path_params["id"])
    _require_install(ctx, row, org_id)
    entry = registry_entry(row["url"])
    latest = entry["tag"] if entry else row["latest_tag"]
    with ctx.store.transaction() as conn:
        conn.execute(
            "UPDATE plugins SET latest_tag=?, latest_tag_checked_at=? WHERE id=?",
            (latest, now_iso(), row["id"]),
        )
        row = conn.execute("SELECT * FROM plugins WHERE id=?", (row["id"],)).fetchone()
    return JSONResponse({"plugin": serialize(row, _org_name(ctx.store, org_id))})


def _sources(store: Store, plugin_id: int) -> dict[str, str]:
    rows = store.query(
        "SELECT filename, source FROM plugin_source_files WHERE plugin_id=? ORDER BY filename", (plugin_id,)
    )
    return {r["filename"]: r["source"] for r in rows}


async def get_source(request: Request) -> Response:
    """GET .../source/: `{filename: source}`."""
    ctx = _ctx(request)
    _, _, org_id = _auth(request, _action_scope(ctx, write=False), write=False)
    row = _get_plugin(ctx, org_id, request.path_params["id"])
    _require_install(ctx, row, org_id)
    return JSONResponse(_sources(ctx.store, row["id"]))


async def update_source(request: Request) -> Response:
    """PATCH .../update_source/: body `{filename: content | null}` (null deletes); returns the full map."""
    ctx = _ctx(request)
    body = await read_body(request)
    _, user, org_id = _auth(request, _action_scope(ctx, write=True), write=True)
    data = require_object(parse_json_body(request, body))
    row = _get_plugin(ctx, org_id, request.path_params["id"])
    _require_install(ctx, row, org_id)
    for filename, content in data.items():
        if not filename or len(filename) > 200 or "/" in filename or "\x00" in filename:
            raise validation_error("File names must be 1-200 characters without '/'.", filename or None)
        if content is not None and not isinstance(content, str):
            raise validation_error("File content must be a string, or null to delete the file.", filename)
        if content is not None and "\x00" in content:
            raise validation_error("Null characters are not allowed.", filename)
    with ctx.store.transaction() as conn:
        for filename, content in data.items():
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
        files = {
            r["filename"]: r["source"]
            for r in conn.execute(
                "SELECT filename, source FROM plugin_source_files WHERE plugin_id=? ORDER BY filename",
                (row["id"],),
            )
        }
        updates: dict[str, Any] = {}
        if "plugin.json" in data and isinstance(data["plugin.json"], str):
            try:
                meta = json.loads(data["plugin.json"])
            except ValueError:
                meta = None
            if isinstance(meta, dict):
                if isinstance(meta.get("name"), str):
                    updates["name"] = meta["name"]
                if "config" in meta:
                    updates["config_schema"] = dumps(meta["config"])
        code = files.get("index.ts") or files.get("index.js")
        if code is not None or any(k in data for k in ("index.ts", "index.js")):
            updates["capabilities"] = dumps(analyse_source(code or ""))
        if updates:
            sets = ", ".join(f"{k}=?" for k in updates)
            conn.execute(
                f"UPDATE plugins SET {sets}, updated_at=? WHERE id=?",
                [*updates.values(), now_iso(), row["id"]],
            )
        _log(
            ctx,
            conn,
            user,
            org_id,
            row["id"],
            "source_updated",
            row["name"],
            [
                {"type": "Plugin", "action": "changed", "field": f, "before": None, "after": None}
                for f in data
            ],
        )
    return JSONResponse(files)


async def upgrade(request: Request) -> Response:
    """POST .../upgrade/: reinstall the registry's latest tag and source (not `source`/`local` ones)."""
    ctx = _ctx(request)
    body = await read_body(request)
    _, user, org_id = _auth(request, _action_scope(ctx, write=True), write=True)
    parse_json_body(request, body)
    row = _get_plugin(ctx, org_id, request.path_params["id"])
    _require_install(ctx, row, org_id)
    entry = registry_entry(row["url"])
    if row["plugin_type"] not in ("source", "local") and entry is not None:
        with ctx.store.transaction() as conn:
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
            _log(
                ctx,
                conn,
                user,
                org_id,
                row["id"],
                "upgraded",
                row["name"],
                [
                    {
                        "type": "Plugin",
                        "action": "changed",
                        "field": "tag",
                        "before": row["tag"],
                        "after": entry["tag"],
                    }
                ],
            )
            row = conn.execute("SELECT * FROM plugins WHERE id=?", (row["id"],)).fetchone()
    return JSONResponse(serialize(row, _org_name(ctx.store, org_id)))


async def repository(request: Request) -> Response:
    """GET .../repository/: the registry fixture list."""
    ctx = _ctx(request)
    _auth(request, _action_scope(ctx, write=False), write=False)
    return JSONResponse([{k: e[k] for k in e if k != "source"} for e in registry()])


async def unused(request: Request) -> Response:
    """GET .../unused/: ids of plugins that no enabled config uses (not scoped to the organization)."""
    ctx = _ctx(request)
    _auth(request, _action_scope(ctx, write=False), write=False)
    rows = ctx.store.query(
        "SELECT id FROM plugins WHERE id NOT IN (SELECT plugin_id FROM plugin_configs WHERE enabled=1 AND "
        "deleted=0) ORDER BY id"
    )
    return JSONResponse([r["id"] for r in rows])


async def activity(request: Request) -> Response:
    """GET .../activity/?limit&page: Plugin/PluginConfig activity of the user's current project."""
    ctx = _ctx(request)
    _, user, _ = _auth(request, _action_scope(ctx, write=False), write=False)
    q = request.query_params
    limit = int_param(q.get("limit"), 10) or 10
    limit = min(limit, 1000)
    page = min(int_param(q.get("page"), 1) or 1, 10**9)
    total = ctx.store.query_one(
        "SELECT COUNT(*) AS n FROM activity_log WHERE scope IN ('Plugin','PluginConfig') AND project_id IS ?",
        (user.current_project_id,),
    )["n"]
    rows = ctx.store.query(
        "SELECT a.*, u.first_name, u.email FROM activity_log a LEFT JOIN users u ON u.id=a.user_id "
        "WHERE a.scope IN ('Plugin','PluginConfig') AND a.project_id IS ? ORDER BY a.created_at DESC, a.id "
        "DESC "
        "LIMIT ? OFFSET ?",
        (user.current_project_id, limit, (page - 1) * limit),
    )
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
    return JSONResponse({"results": results, "next": nxt, "previous": prev, "total_count": total})


def _mask(config: dict[str, Any], schema: Any) -> dict[str, Any]:
    secret_keys = {f.get("key") for f in schema or [] if isinstance(f, dict) and f.get("secret")}
    return {
        k: (SECRET_MASK if k in secret_keys and val not in (None, "") else val) for k, val in config.items()
    }


async def exports_unsubscribe_configs(request: Request) -> Response:
    """GET .../exports_unsubscribe_configs/: the organization's enabled plugin configs (global
    transformations and plugins with no capabilities left out), secret config values masked."""
    ctx = _ctx(request)
    _, _, org_id = _auth(request, _action_scope(ctx, write=False), write=False)
    rows = ctx.store.query(
        "SELECT c.*, p.id AS pid FROM plugin_configs c JOIN plugins p ON p.id=c.plugin_id "
        "JOIN projects t ON t.id=c.project_id WHERE t.organization_id=? AND c.enabled=1 AND c.deleted=0 "
        "ORDER BY c.id",
        (org_id,),
    )
    name = _org_name(ctx.store, org_id)
    out = []
    for c in rows:
        plugin = ctx.store.query_one("SELECT * FROM plugins WHERE id=?", (c["pid"],))
        assert plugin is not None
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
    return JSONResponse(out)


def routes() -> list[BaseRoute]:
    """The 13 pipeline transformation routes (named actions before `{id}`)."""
    base = "/api/organizations/{organization_id}/pipeline_transformations"
    return [
        Route(f"{base}/activity", activity, methods=["GET"]),
        Route(f"{base}/exports_unsubscribe_configs", exports_unsubscribe_configs, methods=["GET"]),
        Route(f"{base}/repository", repository, methods=["GET"]),
        Route(f"{base}/unused", unused, methods=["GET"]),
        Route(base, list_transformations, methods=["GET"]),
        Route(base, create_transformation, methods=["POST"]),
        Route(f"{base}/{{id}}", get_transformation, methods=["GET"]),
        Route(f"{base}/{{id}}", update_transformation, methods=["PATCH", "PUT"]),
        Route(f"{base}/{{id}}", delete_transformation, methods=["DELETE"]),
        Route(f"{base}/{{id}}/check_for_updates", check_for_updates, methods=["GET"]),
        Route(f"{base}/{{id}}/source", get_source, methods=["GET"]),
        Route(f"{base}/{{id}}/update_source", update_source, methods=["PATCH"]),
        Route(f"{base}/{{id}}/upgrade", upgrade, methods=["POST"]),
    ]

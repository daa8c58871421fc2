"""The OpenAPI 3 document served at `/api/schema/` (hand-written; covers the sandbox's private API)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

_ERR = {"$ref": "#/components/responses/Error"}


def _op(
    op_id: str,
    summary: str,
    *,
    params: list[dict[str, Any]] | None = None,
    body: str | None = None,
    ok: dict[str, Any] | None = None,
    status: str = "200",
) -> dict[str, Any]:
    responses: dict[str, Any] = {
        status: ok or {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}}
    }
    for code in ("400", "401", "403", "404"):
        responses[code] = _ERR
    op: dict[str, Any] = {
        "operationId": op_id,
        "summary": summary,
        "responses": responses,
        "parameters": params or [],
    }
    if body:
        op["requestBody"] = {
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{body}"}}}
        }
    return op


def _path(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": schema}


def _query(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema}


PROJECT = _path("project_id", {"type": "string", "example": "@current"})
ORG = _path("organization_id", {"type": "string", "example": "@current"})
SHORT = _path("short_id", {"type": "string"})
PID = _path("id", {"type": "integer"})
PAGE = [_query("limit", {"type": "integer"}), _query("offset", {"type": "integer"})]


def document() -> dict[str, Any]:
    """The OpenAPI document."""
    pl = "/api/projects/{project_id}/session_recording_playlists/"
    pt = "/api/organizations/{organization_id}/pipeline_transformations/"
    list_params = [
        PROJECT,
        *PAGE,
        *(
            _query(n, {"type": "string"})
            for n in (
                "short_id",
                "search",
                "type",
                "order",
                "date_from",
                "date_to",
                "session_recording_id",
                "pinned",
                "user",
            )
        ),
    ]
    return {
        "openapi": "3.0.3",
        "info": {"title": "analytics-nb sandbox", "version": "1.0.0"},
        "components": {
            "securitySchemes": {"PersonalAPIKey": {"type": "http", "scheme": "bearer"}},
            "responses": {
                "Error": {
                    "description": "Error",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
                }
            },
            "schemas": {
                "Error": {
                    "type": "object",
                    "properties": {
                        "type": {"type": "string"},
                        "code": {"type": "string"},
                        "detail": {"type": "string"},
                        "attr": {"type": "string", "nullable": True},
                    },
                },
                "Playlist": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "nullable": True, "maxLength": 400},
                        "derived_name": {"type": "string", "nullable": True, "maxLength": 400},
                        "description": {"type": "string"},
                        "pinned": {"type": "boolean"},
                        "deleted": {"type": "boolean"},
                        "filters": {"type": "object", "nullable": True},
                        "type": {"type": "string", "enum": ["collection", "filters"]},
                    },
                },
                "Transformation": {
                    "type": "object",
                    "properties": {
                        "plugin_type": {
                            "type": "string",
                            "enum": ["local", "custom", "repository", "source", "inline"],
                            "nullable": True,
                        },
                        "name": {"type": "string"},
                        "description": {"type": "string"},
                        "icon": {"type": "string"},
                        "url": {"type": "string"},
                        "config_schema": {"nullable": True},
                        "tag": {"type": "string"},
                        "is_global": {"type": "boolean"},
                        "capabilities": {"type": "object", "nullable": True},
                        "metrics": {"nullable": True},
                        "public_jobs": {"nullable": True},
                    },
                },
                "SourceMap": {"type": "object", "additionalProperties": {"type": "string", "nullable": True}},
            },
        },
        "security": [{"PersonalAPIKey": []}],
        "paths": {
            "/api/projects/": {"get": _op("projects_list", "List projects", params=PAGE)},
            "/api/projects/{project_id}/": {
                "get": _op("projects_retrieve", "Get a project", params=[PROJECT])
            },
            "/api/organizations/": {"get": _op("organizations_list", "List organizations")},
            "/api/organizations/{organization_id}/": {
                "get": _op("organizations_retrieve", "Get an organization", params=[ORG])
            },
            "/api/users/@me/": {"get": _op("users_me", "The current user")},
            pl: {
                "get": _op("playlists_list", "List playlists", params=list_params),
                "post": _op(
                    "playlists_create", "Create a playlist", params=[PROJECT], body="Playlist", status="201"
                ),
            },
            pl + "{short_id}/": {
                "get": _op("playlists_retrieve", "Get a playlist", params=[PROJECT, SHORT]),
                "patch": _op(
                    "playlists_partial_update", "Update a playlist", params=[PROJECT, SHORT], body="Playlist"
                ),
                "delete": {
                    "operationId": "playlists_destroy",
                    "parameters": [PROJECT, SHORT],
                    "responses": {
                        "405": {"description": "Hard delete is not allowed (empty body)"},
                        "401": _ERR,
                        "403": _ERR,
                    },
                },
            },
            pl + "{short_id}/recordings/": {
                "get": _op("playlists_recordings", "Recordings of a playlist", params=[PROJECT, SHORT])
            },
            pl + "{short_id}/recordings/{session_recording_id}/": {
                "post": _op(
                    "playlists_recordings_add",
                    "Add a recording",
                    params=[PROJECT, SHORT, _path("session_recording_id", {"type": "string"})],
                ),
                "delete": _op(
                    "playlists_recordings_remove",
                    "Remove a recording (500 when absent, as the real one)",
                    params=[PROJECT, SHORT, _path("session_recording_id", {"type": "string"})],
                ),
            },
            pt: {
                "get": _op("transformations_list", "List transformations", params=[ORG, *PAGE]),
                "post": _op(
                    "transformations_create",
                    "Install a transformation",
                    params=[ORG],
                    body="Transformation",
                    status="201",
                ),
            },
            pt + "{id}/": {
                "get": _op("transformations_retrieve", "Get a transformation", params=[ORG, PID]),
                "patch": _op(
                    "transformations_partial_update", "Update", params=[ORG, PID], body="Transformation"
                ),
                "delete": _op(
                    "transformations_destroy",
                    "Uninstall",
                    params=[ORG, PID],
                    ok={"description": "Deleted"},
                    status="204",
                ),
            },
            pt + "{id}/check_for_updates/": {
                "get": _op("transformations_check_for_updates", "Check for updates", params=[ORG, PID])
            },
            pt + "{id}/source/": {"get": _op("transformations_source", "Source files", params=[ORG, PID])},
            pt + "{id}/update_source/": {
                "patch": _op(
                    "transformations_update_source",
                    "Update source files",
                    params=[ORG, PID],
                    body="SourceMap",
                )
            },
            pt + "{id}/upgrade/": {"post": _op("transformations_upgrade", "Upgrade", params=[ORG, PID])},
            pt + "activity/": {
                "get": _op(
                    "transformations_activity",
                    "Activity log",
                    params=[ORG, _query("limit", {"type": "integer"}), _query("page", {"type": "integer"})],
                )
            },
            pt + "exports_unsubscribe_configs/": {
                "get": _op("transformations_exports", "Export configs", params=[ORG])
            },
            pt + "repository/": {"get": _op("transformations_repository", "Plugin repository", params=[ORG])},
            pt + "unused/": {"get": _op("transformations_unused", "Unused plugin ids", params=[ORG])},
        },
    }


def full_document() -> dict[str, Any]:
    """The private API document plus the paths and schemas the decide/flags/capture modules declare."""
    from ._app import plugin_modules  # the app imports this module, so import it when called

    doc = document()
    for module in plugin_modules():
        doc["paths"].update(getattr(module, "OPENAPI_PATHS", {}))
        doc["components"]["schemas"].update(getattr(module, "OPENAPI_SCHEMAS", {}))
    return doc


async def schema_endpoint(request: Request) -> Response:
    """GET /api/schema/: the OpenAPI document as JSON."""
    return JSONResponse(full_document())

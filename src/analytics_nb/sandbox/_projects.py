"""Projects, organizations, current user: `/api/projects/`, `/api/organizations/`, `/api/users/@me/`."""

from __future__ import annotations

import sqlite3
import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ._context import SandboxContext
from ._http import int_param, page_links

SCHEMA = ""  # organizations/projects/users live in the core schema (_store.CORE_SCHEMA)


def _ctx(request: Request) -> SandboxContext:
    return request.app.state.sandbox


def project_uuid(project_id: int) -> str:
    """A stable UUID for a project id."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"analytics-nb-sandbox/project/{project_id}"))


def serialize_project(row: sqlite3.Row) -> dict[str, Any]:
    """The project fields a client reads (a subset of the real, much larger, serializer)."""
    return {
        "id": row["id"],
        "uuid": project_uuid(row["id"]),
        "organization": row["organization_id"],
        "api_token": row["api_token"],
        "name": row["name"],
        "created_at": row["created_at"],
        "updated_at": row["created_at"],
        "timezone": row["timezone"],
        "is_demo": False,
        "access_control": False,
        "ingested_event": True,
        "completed_snippet_onboarding": True,
        "has_completed_onboarding_for": {"product_analytics": True, "session_replay": True},
        "session_recording_opt_in": True,
        "person_display_name_properties": ["email", "name", "username"],
    }


def serialize_organization(store: Any, row: sqlite3.Row) -> dict[str, Any]:
    """The organization fields a client reads, with its projects and teams."""
    projects = store.query("SELECT id, name FROM projects WHERE organization_id=? ORDER BY id", (row["id"],))
    brief = [{"id": p["id"], "uuid": project_uuid(p["id"]), "name": p["name"]} for p in projects]
    return {
        "id": row["id"],
        "name": row["name"],
        "slug": row["slug"],
        "logo_media_id": None,
        "created_at": row["created_at"],
        "updated_at": row["created_at"],
        "membership_level": 15,
        "plugins_access_level": row["plugins_access_level"],
        "teams": brief,
        "projects": brief,
        "available_product_features": [],
        "is_member_join_email_enabled": True,
        "customer_id": None,
        "enforce_2fa": None,
        "member_count": store.query_one(
            "SELECT COUNT(*) AS n FROM users WHERE organization_id=?", (row["id"],)
        )["n"],
    }


def _paginate(request: Request, items: list[dict[str, Any]]) -> Response:
    limit = int_param(request.query_params.get("limit"), 100) or 100
    offset = int_param(request.query_params.get("offset"), 0)
    nxt, prev = page_links(request, count=len(items), limit=limit, offset=offset)
    return JSONResponse(
        {"count": len(items), "next": nxt, "previous": prev, "results": items[offset : offset + limit]}
    )


async def list_projects(request: Request) -> Response:
    """GET /api/projects/: projects of the user's organization that the key may see."""
    ctx = _ctx(request)
    user = ctx.authenticate_personal(request, "project:read")
    rows = ctx.store.query(
        "SELECT * FROM projects WHERE organization_id=? ORDER BY id", (user.organization_id,)
    )
    items = [serialize_project(r) for r in rows if user.scoped_teams is None or r["id"] in user.scoped_teams]
    return _paginate(request, items)


async def get_project(request: Request) -> Response:
    """GET /api/projects/:id/ (`@current` allowed)."""
    ctx = _ctx(request)
    ctx.authenticate_personal(request, "project:read")
    row = ctx.store.query_one("SELECT * FROM projects WHERE id=?", (ctx.project_id_of(request),))
    assert row is not None  # checked by authenticate_personal
    return JSONResponse(serialize_project(row))


async def list_organizations(request: Request) -> Response:
    """GET /api/organizations/: the user's organization(s)."""
    ctx = _ctx(request)
    user = ctx.authenticate_personal(request, "organization:read")
    rows = ctx.store.query("SELECT * FROM organizations WHERE id=?", (user.organization_id,))
    items = [
        serialize_organization(ctx.store, r)
        for r in rows
        if user.scoped_organizations is None or r["id"] in user.scoped_organizations
    ]
    return _paginate(request, items)


async def get_organization(request: Request) -> Response:
    """GET /api/organizations/:id/ (`@current` allowed)."""
    ctx = _ctx(request)
    ctx.authenticate_personal(request, "organization:read")
    row = ctx.store.query_one("SELECT * FROM organizations WHERE id=?", (ctx.organization_id_of(request),))
    assert row is not None
    return JSONResponse(serialize_organization(ctx.store, row))


async def get_me(request: Request) -> Response:
    """GET /api/users/@me/: the key's user with its current organization and project."""
    ctx = _ctx(request)
    user = ctx.authenticate_personal(request, "user:read")
    org = ctx.store.query_one("SELECT * FROM organizations WHERE id=?", (user.organization_id,))
    team = None
    if user.current_project_id is not None:
        row = ctx.store.query_one("SELECT * FROM projects WHERE id=?", (user.current_project_id,))
        team = serialize_project(row) if row else None
    return JSONResponse(
        {
            **user.basic(),
            "organization": serialize_organization(ctx.store, org) if org else None,
            "team": team,
            "scopes": list(user.scopes),
        }
    )


def routes() -> list[BaseRoute]:
    """The project, organization and user routes."""
    return [
        Route("/api/projects", list_projects, methods=["GET"]),
        Route("/api/projects/{project_id}", get_project, methods=["GET"]),
        Route("/api/environments/{project_id}", get_project, methods=["GET"]),
        Route("/api/organizations", list_organizations, methods=["GET"]),
        Route("/api/organizations/{organization_id}", get_organization, methods=["GET"]),
        Route("/api/users/@me", get_me, methods=["GET"]),
    ]

"""Organizations, projects and users: `/api/projects/`, `/api/organizations/`, `/api/users/@me/`.

Schema: the tables live in the core schema (`_store.CORE_SCHEMA`) because every other resource refers to
them. Storage: :func:`seed_core`, :func:`add_organization`, :func:`add_project` and the readers below.
"""

from __future__ import annotations

import secrets
import sqlite3
import string
import uuid
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from .._auth import User, create_user
from .._context import SandboxContext, context_of
from .._endpoints import Endpoint, Query
from .._http import SafeJSONResponse, limit_offset, page_response
from .._store import Store, now_iso

SCHEMA = ""  # organizations / projects / users are core tables (`_store.CORE_SCHEMA`)

ORGANIZATION_ID = str(uuid.uuid5(uuid.NAMESPACE_URL, "analytics-nb-sandbox/organization"))
PROJECT_ID = 1
OWNER_EMAIL = "owner@sandbox.example"
USERS = (
    ("Ada", "Lovelace", OWNER_EMAIL, "founder"),
    ("Grace", "Hopper", "grace@sandbox.example", "engineering"),
    ("Katherine", "Johnson", "katherine@sandbox.example", "data"),
    ("Alan", "Turing", "alan@sandbox.example", "product"),
    ("Hedy", "Lamarr", "hedy@sandbox.example", "marketing"),
)


# -- storage -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CoreRows:
    """What :func:`seed_core` made or found: the first organization, its first project and owner."""

    fresh: bool
    project_id: int
    organization_id: str
    project_api_key: str
    owner_user_id: int


@dataclass(frozen=True)
class SandboxProject:
    """A project made by `Sandbox.add_project`: its id, `phc_` token and organization."""

    id: int
    api_token: str
    organization_id: str
    name: str


def project_uuid(project_id: int) -> str:
    """A stable UUID for a project id."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"analytics-nb-sandbox/project/{project_id}"))


def _new_token() -> str:
    return "phc_" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(43))


def _user_uuid(email: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"analytics-nb-sandbox/user/{email}"))


def access_level(profile: str) -> int:
    """The organization's plugin access level in a profile: ROOT (9) in `spec`, CONFIG (3) in `cloud`."""
    return 3 if profile == "cloud" else 9


def seed_core(store: Store, *, profile: str) -> CoreRows:
    """Create the organization, the project (with its `phc_` token) and the owner user, unless they exist
    (call inside the seeding transaction). The plugin access level follows the profile."""
    level = access_level(profile)
    org = store.query_one("SELECT id FROM organizations ORDER BY created_at, id LIMIT 1")
    if org is not None:
        store.execute("UPDATE organizations SET plugins_access_level=? WHERE id=?", (level, org["id"]))
        project = store.query_one(
            "SELECT id, api_token FROM projects WHERE organization_id=? ORDER BY id LIMIT 1", (org["id"],)
        )
        owner = store.query_one(
            "SELECT id FROM users WHERE organization_id=? ORDER BY id LIMIT 1", (org["id"],)
        )
        if project is None or owner is None:
            raise RuntimeError("sandbox database has an organization but no project or owner")
        return CoreRows(False, int(project["id"]), org["id"], project["api_token"], int(owner["id"]))
    now = now_iso()
    token = _new_token()
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO organizations(id, name, slug, created_at, plugins_access_level) VALUES (?,?,?,?,?)",
            (ORGANIZATION_ID, "Sandbox Organization", "sandbox-organization", now, level),
        )
        conn.execute(
            "INSERT INTO projects(id, organization_id, name, api_token, created_at, timezone) VALUES "
            "(?,?,?,?,?,?)",
            (PROJECT_ID, ORGANIZATION_ID, "Sandbox Project", token, now, "UTC"),
        )
        first, last, email, role = USERS[0]
        owner_id = create_user(
            store,
            email=email,
            first_name=first,
            last_name=last,
            organization_id=ORGANIZATION_ID,
            current_project_id=PROJECT_ID,
            role=role,
            user_uuid=_user_uuid(email),
        )
    return CoreRows(True, PROJECT_ID, ORGANIZATION_ID, token, owner_id)


def add_organization(store: Store, name: str, *, profile: str = "spec") -> str:
    """Create another organization (no projects yet) and return its UUID."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError("name must be a non-empty string, e.g. add_organization('Other org')")
    org_id = str(uuid.uuid4())
    slug = "-".join(name.lower().split())[:48] or "organization"
    store.execute(
        "INSERT INTO organizations(id, name, slug, created_at, plugins_access_level) VALUES (?,?,?,?,?)",
        (org_id, name, slug, now_iso(), access_level(profile)),
    )
    return org_id


def add_project(store: Store, name: str, organization_id: str) -> SandboxProject:
    """Create a project with a fresh `phc_` token in an existing organization."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError("name must be a non-empty string, e.g. add_project('Second project')")
    with store.transaction() as conn:
        if conn.execute("SELECT 1 FROM organizations WHERE id=?", (organization_id,)).fetchone() is None:
            raise ValueError(
                f"organization_id: no organization {organization_id!r}; create one with add_organization()"
            )
        token = _new_token()
        cur = conn.execute(
            "INSERT INTO projects(organization_id, name, api_token, created_at, timezone) VALUES (?,?,?,?,?)",
            (organization_id, name, token, now_iso(), "UTC"),
        )
        project_id = int(cur.lastrowid or 0)
    return SandboxProject(project_id, token, organization_id, name)


def user_ids(store: Store, organization_id: str) -> list[int]:
    """Ids of an organization's users, oldest first (the owner first)."""
    rows = store.query("SELECT id FROM users WHERE organization_id=? ORDER BY id", (organization_id,))
    return [int(r["id"]) for r in rows]


def visible_projects(store: Store, user: User, *, limit: int, offset: int) -> tuple[int, list[sqlite3.Row]]:
    """`(count, page)` of the projects of the user's organization that the key may see, by id."""
    where = "organization_id=?"
    params: list[Any] = [user.organization_id]
    if user.scoped_teams is not None:
        where += f" AND id IN ({','.join('?' * len(user.scoped_teams))})" if user.scoped_teams else " AND 0"
        params += [int(t) for t in user.scoped_teams]
    count = store.query_one(f"SELECT COUNT(*) AS n FROM projects WHERE {where}", params)
    rows = store.query(
        f"SELECT * FROM projects WHERE {where} ORDER BY id LIMIT ? OFFSET ?", [*params, limit, offset]
    )
    return int(count["n"] if count else 0), rows


def get_project_row(store: Store, project_id: int) -> sqlite3.Row | None:
    """One project row."""
    return store.query_one("SELECT * FROM projects WHERE id=?", (project_id,))


def get_organization_row(store: Store, organization_id: str) -> sqlite3.Row | None:
    """One organization row."""
    return store.query_one("SELECT * FROM organizations WHERE id=?", (organization_id,))


def organization_projects(store: Store, organization_id: str) -> list[sqlite3.Row]:
    """`id, name` of an organization's projects, by id."""
    return store.query(
        "SELECT id, name FROM projects WHERE organization_id=? ORDER BY id", (organization_id,)
    )


def member_count(store: Store, organization_id: str) -> int:
    """How many users the organization has."""
    row = store.query_one("SELECT COUNT(*) AS n FROM users WHERE organization_id=?", (organization_id,))
    return int(row["n"]) if row else 0


# -- serialization -------------------------------------------------------------------------------------------
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


def serialize_organization(store: Store, row: sqlite3.Row, user: User | None = None) -> dict[str, Any]:
    """The organization fields a client reads, with the projects the key may see."""
    projects = organization_projects(store, row["id"])
    if user is not None and user.scoped_teams is not None:
        projects = [p for p in projects if p["id"] in user.scoped_teams]
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
        "member_count": member_count(store, row["id"]),
    }


# -- handlers ------------------------------------------------------------------------------------------------
async def list_projects(request: Request) -> Response:
    """GET /api/projects/: projects of the user's organization that the key may see (by id)."""
    ctx = context_of(request)
    user = ctx.authenticate_personal(request, "project:read")
    limit, offset = limit_offset(request)
    count, rows = visible_projects(ctx.store, user, limit=limit, offset=offset)
    return page_response(
        request, [serialize_project(r) for r in rows], count=count, limit=limit, offset=offset
    )


async def get_project(request: Request) -> Response:
    """GET /api/projects/:id/ (`@current` allowed)."""
    ctx = context_of(request)
    ctx.authenticate_personal(request, "project:read")
    row = get_project_row(ctx.store, ctx.project_id_of(request))
    assert row is not None  # checked by authenticate_personal
    return SafeJSONResponse(serialize_project(row))


def _visible_organizations(ctx: SandboxContext, user: User) -> list[sqlite3.Row]:
    row = get_organization_row(ctx.store, user.organization_id)
    if row is None or (user.scoped_organizations is not None and row["id"] not in user.scoped_organizations):
        return []
    return [row]


async def list_organizations(request: Request) -> Response:
    """GET /api/organizations/: the user's organization (when the key may see it)."""
    ctx = context_of(request)
    user = ctx.authenticate_personal(request, "organization:read")
    limit, offset = limit_offset(request)
    rows = _visible_organizations(ctx, user)
    page = [serialize_organization(ctx.store, r, user) for r in rows[offset : offset + limit]]
    return page_response(request, page, count=len(rows), limit=limit, offset=offset)


async def get_organization(request: Request) -> Response:
    """GET /api/organizations/:id/ (`@current` allowed)."""
    ctx = context_of(request)
    user = ctx.authenticate_personal(request, "organization:read")
    row = get_organization_row(ctx.store, ctx.organization_id_of(request))
    assert row is not None
    return SafeJSONResponse(serialize_organization(ctx.store, row, user))


async def get_me(request: Request) -> Response:
    """GET /api/users/@me/: the key's user with its current organization and project (each only when the
    key's scoping lets it see them)."""
    ctx = context_of(request)
    user = ctx.authenticate_personal(request, "user:read")
    orgs = _visible_organizations(ctx, user)
    team = None
    current = user.current_project_id
    if current is not None and (user.scoped_teams is None or current in user.scoped_teams):
        row = get_project_row(ctx.store, current)
        team = serialize_project(row) if row else None
    return SafeJSONResponse(
        {
            **user.basic(),
            "organization": serialize_organization(ctx.store, orgs[0], user) if orgs else None,
            "team": team,
            "scopes": list(user.scopes),
        }
    )


_PAGE = (Query("limit", "integer", minimum=0), Query("offset", "integer", minimum=0))

ENDPOINTS = [
    Endpoint(
        "GET", "/api/projects/", list_projects, "projects_list", "List projects", query=_PAGE, returns="page"
    ),
    Endpoint(
        "GET",
        "/api/projects/{project_id}/",
        get_project,
        "projects_retrieve",
        "Get a project",
        aliases=("/api/environments/{project_id}/",),
    ),
    Endpoint(
        "GET",
        "/api/organizations/",
        list_organizations,
        "organizations_list",
        "List organizations",
        query=_PAGE,
        returns="page",
    ),
    Endpoint(
        "GET",
        "/api/organizations/{organization_id}/",
        get_organization,
        "organizations_retrieve",
        "Get an organization",
    ),
    Endpoint("GET", "/api/users/@me/", get_me, "users_me", "The current user"),
]


# -- seed ----------------------------------------------------------------------------------------------------
def seed(store: Store, ctx: SandboxContext) -> None:
    """Demo seed: the other four users of the organization."""
    for first, last, email, role in USERS[1:]:
        create_user(
            store,
            email=email,
            first_name=first,
            last_name=last,
            organization_id=ctx.organization_id,
            current_project_id=ctx.project_id,
            role=role,
            user_uuid=_user_uuid(email),
        )

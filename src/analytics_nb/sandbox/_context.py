"""The typed per-sandbox state every handler reaches as `context_of(request)`: the store, the profile, the
seeded ids, the owner, fault rules, the rate limiter and the decide controls.

    ctx = context_of(request)
    user = ctx.authenticate_personal(request, "feature_flag:read")   # raises APIError -> real 401/403/404/429
    project_id = ctx.project_id_of(request)                           # the URL's project, `@current` resolved

Raise :class:`APIError` (or the helpers in `_errors`) anywhere in a handler; the app turns it into the
response.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.requests import Request

from . import _auth
from ._auth import UNSUPPORTED, User
from ._errors import APIError, not_found, permission_denied, throttled
from ._ratelimit import RateLimiter
from ._store import Store

if TYPE_CHECKING:
    from ._faults import Faults

__all__ = ["UNSUPPORTED", "APIError", "DecideControls", "SandboxContext", "User", "context_of"]

PROFILES = ("spec", "cloud")
#: `Sandbox.set_switch` names: `new_url_playlists` (the dynamic "New URL" synthetic playlists, behind a flag
#: in the service), `no_plugin_api` (after PostHog PR #97440: plugin and `pipeline_*` routes gone).
SWITCHES = ("new_url_playlists", "no_plugin_api", "flag_evaluations_table", "flag_evaluations_only")


@dataclass
class DecideControls:
    """Test controls of /decide and /flags (`Sandbox.set_flags_quota_limited` / `set_flag_failures`)."""

    quota_limited: bool = False
    failing: frozenset[str] = frozenset()


@dataclass(repr=False)
class SandboxContext:
    """Everything a handler needs: store, profile ("spec" | "cloud"), the seeded project and organization."""

    store: Store
    profile: str
    project_id: int
    organization_id: str
    project_api_key: str
    faults: Faults
    owner_user_id: int
    limiter: RateLimiter | None = None
    #: The query endpoint's row cap and default (`posthog/hogql/constants.py`; lowered by tests through
    #: `Sandbox.set_query_row_limits`).
    query_max_rows: int = 50_000
    query_default_rows: int = 100
    #: Async queries (`refresh: "force_async"`): query id -> the job `query.py` polls (`QueryJob`).
    query_jobs: dict[str, Any] = field(default_factory=dict)
    geoip: bool = True
    #: Whether the `/_sandbox/` admin endpoints are served.
    admin: bool = False
    #: Hash of the owner's key: the admin endpoints (`/_sandbox/...`) accept only this key.
    owner_key_hash: str = ""
    #: The owner's key itself (for the handle; never in a repr).
    owner_key: str = field(default="", repr=False)
    decide: DecideControls = field(default_factory=lambda: DecideControls())
    #: Behaviour switches of newer or older service builds (`Sandbox.set_switch`, `SWITCHES`).
    switches: set[str] = field(default_factory=set)
    #: project API token -> project id, filled by decide/capture lookups (tokens never change).
    token_projects: dict[str, int] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"SandboxContext(profile={self.profile!r}, project_id={self.project_id})"

    @property
    def is_cloud(self) -> bool:
        """True in the `cloud` profile (the cloud's refusals, synthetic playlists, throttles)."""
        return self.profile == "cloud"

    # -- auth
    def authenticate_personal(
        self, request: Request, scope: str | None, *, throttle: str = "default"
    ) -> User:
        """Authenticate the request's personal API key and check it may do this, in the real order.

        401 (no/bad key) -> project/organization in the URL (`@current` resolved, 404 for a bad id, 403
        when the key is scoped elsewhere) -> scope (`None`: no scope check; `UNSUPPORTED`: 403 "This
        action does not support personal API key access") -> throttle (429 with Retry-After when the
        limiter is on). The resolved ids are stored on `request.state.project_id` /
        `request.state.organization_id`.
        """
        user = _auth.authenticate(self.store, request)
        params = request.path_params
        if "project_id" in params:
            request.state.project_id = self._resolve_project(user, str(params["project_id"]))
        if "organization_id" in params:
            request.state.organization_id = self._resolve_organization(user, str(params["organization_id"]))
        _auth.check_scope(user, scope)
        if self.limiter is not None and user.key_id is not None:
            wait = self.limiter.check(user.key_id, throttle)
            if wait > 0:
                raise throttled(wait)
        return user

    def project_id_of(self, request: Request) -> int:
        """The project id of the URL, resolved by `authenticate_personal` (or the sandbox's own project)."""
        return int(getattr(request.state, "project_id", self.project_id))

    def organization_id_of(self, request: Request) -> str:
        """The organization id of the URL, resolved by `authenticate_personal` (or the sandbox's own)."""
        return str(getattr(request.state, "organization_id", self.organization_id))

    def _resolve_project(self, user: User, raw: str) -> int:
        if raw == "@current":
            if user.current_project_id is None:
                raise not_found("Project not found.")
            project_id = int(user.current_project_id)
        else:
            try:
                project_id = int(raw)
            except ValueError:
                raise not_found("Project not found.") from None
            if not 0 < project_id < 2**63:
                raise not_found("Project not found.")
        if user.scoped_teams is not None and project_id not in user.scoped_teams:
            raise permission_denied(
                f"API key does not have access to the requested project: ID {project_id}."
            )
        row = self.store.query_one("SELECT organization_id FROM projects WHERE id=?", (project_id,))
        if row is None:
            raise not_found("Project not found.")
        self.check_project_access(user, project_id, str(row["organization_id"]))
        return project_id

    @staticmethod
    def check_project_access(user: User, project_id: int, organization_id: str) -> None:
        """403 unless the key's user belongs to the project's organization and the key's `scoped_teams` /
        `scoped_organizations` (when set) include it. Every path that can reveal a project's data calls
        this (the URL's project, and the project a `token=` names on the definitions endpoints)."""
        if organization_id != user.organization_id:
            raise permission_denied("You don't have access to the project.")
        if user.scoped_teams is not None and project_id not in user.scoped_teams:
            raise permission_denied(
                f"API key does not have access to the requested project: ID {project_id}."
            )
        if user.scoped_organizations is not None and organization_id not in user.scoped_organizations:
            raise permission_denied(
                f"API key does not have access to the requested organization: ID {organization_id}."
            )

    def token_project(self, token: str) -> int | None:
        """The project id behind a project API token (`phc_...`), cached; None when unknown."""
        project_id = self.token_projects.get(token)
        if project_id is None:
            row = self.store.query_one("SELECT id FROM projects WHERE api_token=?", (token,))
            if row is None:
                return None
            project_id = int(row[0])
            self.token_projects[token] = project_id
        return project_id

    def _resolve_organization(self, user: User, raw: str) -> str:
        if raw == "@current":
            org_id = user.organization_id
        else:
            try:
                org_id = str(uuid.UUID(raw))
            except ValueError:
                raise not_found("Organization not found.") from None
        if user.scoped_organizations is not None and org_id not in user.scoped_organizations:
            raise permission_denied(
                f"API key does not have access to the requested organization: ID {org_id}."
            )
        if self.store.query_one("SELECT id FROM organizations WHERE id=?", (org_id,)) is None:
            raise not_found("Organization not found.")
        if org_id != user.organization_id:
            raise not_found("Organization not found.")
        return org_id


def context_of(request: Request) -> SandboxContext:
    """The sandbox context of the app serving `request`."""
    ctx = request.app.state.sandbox
    assert isinstance(ctx, SandboxContext)
    return ctx

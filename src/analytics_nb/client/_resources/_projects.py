"""Projects and organizations (ids, names, the project API key)."""

from __future__ import annotations

import builtins
from typing import Any
from urllib.parse import quote

from analytics_nb.client._core import parse_model
from analytics_nb.client._pagination import collect
from analytics_nb.client._resources._base import Resource
from analytics_nb.models import Organization, Project

__all__ = ["Organizations", "Projects"]


class Projects(Resource):
    """``/api/projects/``: the projects this key can see; ``get()`` is the client's project."""

    async def list(self) -> builtins.list[Project]:
        """Every project visible to the personal key."""
        return [parse_model(Project, r) for r in await collect(self._core, "/api/projects/", desc="projects")]

    async def get(self, id: int | str | None = None) -> Project:
        """One project; default: the client's ``project_id`` (``@current`` unless configured).

        Args:
            id: The project's id. None: the client's ``project_id``.

        Returns:
            The `Project`.
        """
        ident = self._core.config.project_id if id is None else str(id)
        body: Any = await self._core.get_json(f"/api/projects/{quote(ident, safe='@')}/")
        return parse_model(Project, body)


class Organizations(Resource):
    """``/api/organizations/``: the organizations this key can see; ``get()`` is the client's organization."""

    async def list(self) -> builtins.list[Organization]:
        """Every organization visible to the personal key."""
        records = await collect(self._core, "/api/organizations/", desc="organizations")
        return [parse_model(Organization, r) for r in records]

    async def get(self, id: str | None = None) -> Organization:
        """One organization; default: the client's (configured, or ``@current``).

        Args:
            id: The organization's id. None: the client's.

        Returns:
            The `Organization`.
        """
        ident = id or self._core.config.organization_id or "@current"
        body: Any = await self._core.get_json(f"/api/organizations/{quote(ident, safe='@')}/")
        return parse_model(Organization, body)

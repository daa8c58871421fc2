"""Pipeline transformations (plugins), plugin configs, activity log, projects and organizations."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from analytics_nb.models._common import Number, User, UtcDatetime, WireModel

__all__ = ["ActivityLogEntry", "ActivityPage", "Organization", "PluginConfig", "Project", "Transformation"]


class Transformation(WireModel):
    """A pipeline transformation: every PluginSerializer field (JSON fields kept untyped, nullable)."""

    id: int | None = None
    plugin_type: str | None = None
    name: str | None = None
    description: str | None = None
    url: str | None = None
    icon: str | None = None
    config_schema: Any = None
    tag: str | None = None
    latest_tag: str | None = None
    is_global: bool | None = None
    organization_id: str | None = None
    organization_name: str | None = None
    capabilities: Any = None
    metrics: Any = None
    public_jobs: Any = None
    hog_function_migration_available: bool | None = None


class ActivityLogEntry(WireModel):
    """One entry (scope ``Plugin`` / ``PluginConfig``) of the transformations ``activity`` view."""

    id: str | None = None
    user: User | None = None
    unread: bool | None = None
    is_system: bool | None = None
    is_staff: bool | None = None
    activity: str | None = None
    item_id: str | None = None
    scope: str | None = None
    detail: Any = None
    created_at: UtcDatetime | None = None


class ActivityPage(WireModel):
    """The activity envelope ``{results, next, previous, total_count}`` (page-numbered, not limit/offset)."""

    results: list[ActivityLogEntry] = Field(default_factory=list)
    next: str | None = None
    previous: str | None = None
    total_count: int | None = None


class PluginConfig(WireModel):
    """A plugin config as listed by ``exports_unsubscribe_configs`` (secret values arrive masked)."""

    id: int | None = None
    plugin: int | None = None
    enabled: bool | None = None
    order: int | None = None
    config: dict[str, Any] | None = None
    error: Any = None
    team_id: int | None = None
    plugin_info: Any = None
    delivery_rate_24h: Number | None = None
    created_at: UtcDatetime | None = None
    updated_at: UtcDatetime | None = None
    name: str | None = None
    description: str | None = None
    deleted: bool | None = None


class Project(WireModel):
    """A project (``/api/projects/``); ``api_token`` is the public project key (``phc_...``)."""

    id: int
    uuid: str | None = None
    organization: str | None = None
    api_token: str | None = None
    name: str | None = None
    created_at: UtcDatetime | None = None
    updated_at: UtcDatetime | None = None
    timezone: str | None = None
    is_demo: bool | None = None


class Organization(WireModel):
    """An organization (``/api/organizations/``); ``plugins_access_level`` gates transformation writes."""

    id: str
    name: str | None = None
    slug: str | None = None
    created_at: UtcDatetime | None = None
    updated_at: UtcDatetime | None = None
    membership_level: int | None = None
    plugins_access_level: int | None = None
    teams: list[dict[str, Any]] | None = None
    projects: list[dict[str, Any]] | None = None

"""Hog functions (today's transformations, destinations, site apps, source webhooks) and their templates.

On PostHog Cloud every source, transformation, destination and site app is a Hog function
(``/api/projects/:id/hog_functions/``); the legacy plugin endpoints (``Transformation``) remain on self-hosted
instances. Shapes: ``HogFunctionSerializer`` / ``HogFunctionMinimalSerializer`` in PostHog's
``products/cdp/backend/api/hog_function.py`` and ``HogFunctionTemplateSerializer`` in
``products/cdp/backend/api/hog_function_template.py``.
"""

from __future__ import annotations

from typing import Any

from analytics_nb.models._common import User, UtcDatetime, WireModel

__all__ = ["HOG_FUNCTION_TYPES", "HogFunction", "HogFunctionStatus", "HogFunctionTemplate"]

HOG_FUNCTION_TYPES: tuple[str, ...] = (
    "transformation",
    "destination",
    "site_destination",
    "internal_destination",
    "source_webhook",
    "site_app",
)
"""The function types the public API creates and lists (``HogFunctionType`` in PostHog's model; the
newest builds also know ``warehouse_source_webhook``, refused by the API, and ``transformation_log``, behind
a flag)."""


class HogFunctionStatus(WireModel):
    """Runtime health the service reports for an enabled function: ``state`` (0 unknown, 1 healthy,
    2 degraded, 3 disabled temporarily, 4 disabled permanently) and ``tokens``."""

    state: int | None = None
    tokens: int | None = None


class HogFunctionTemplate(WireModel):
    """A template a function is created from (``template_id``); ``id`` is text such as ``template-geoip``.

    Templates whose id starts with ``plugin-`` are the legacy plugins migrated to Hog functions (the plugin's
    JavaScript still runs, behind the Hog function record).
    """

    id: str
    name: str | None = None
    description: str | None = None
    code: str | None = None
    code_language: str | None = None
    inputs_schema: list[dict[str, Any]] | None = None
    type: str | None = None
    status: str | None = None
    category: list[str] | None = None
    free: bool | None = None
    icon_url: str | None = None
    filters: dict[str, Any] | None = None
    masking: dict[str, Any] | None = None
    mapping_templates: list[dict[str, Any]] | None = None

    @property
    def is_legacy_plugin(self) -> bool:
        """True for a template that wraps a migrated legacy plugin (id ``plugin-...``)."""
        return self.id.startswith("plugin-")


class HogFunction(WireModel):
    """One Hog function. The list endpoint sends the minimal shape (no ``inputs``, ``inputs_schema``,
    ``masking``, ``mappings``, ``bytecode``); ``get`` sends every field. ``deleted`` and ``template_id`` are
    write-only on the service (never sent back); ``template`` is the nested template when there is one.

    ``inputs`` maps each input key to ``{"value": ...}`` (plus compiled ``bytecode``/``order``); a secret
    input that is set reads back as ``{"secret": true}``. ``execution_order`` orders transformations (lower
    first).
    """

    id: str
    type: str | None = None
    name: str | None = None
    description: str | None = None
    created_at: UtcDatetime | None = None
    created_by: User | None = None
    updated_at: UtcDatetime | None = None
    enabled: bool | None = None
    deleted: bool | None = None
    hog: str | None = None
    bytecode: Any = None
    transpiled: Any = None
    inputs_schema: list[dict[str, Any]] | None = None
    inputs: dict[str, Any] | None = None
    filters: dict[str, Any] | None = None
    masking: dict[str, Any] | None = None
    mappings: list[dict[str, Any]] | None = None
    icon_url: str | None = None
    template: HogFunctionTemplate | None = None
    template_id: str | None = None
    status: HogFunctionStatus | None = None
    execution_order: int | None = None

    @property
    def is_legacy_plugin(self) -> bool:
        """True when this function runs a migrated legacy plugin (its template id starts with ``plugin-``)."""
        ident = self.template.id if self.template is not None else self.template_id
        return bool(ident and ident.startswith("plugin-"))

"""Hog functions and their templates: today's transformations, destinations, site apps and source webhooks.

``/api/projects/:id/hog_functions/`` and ``/api/projects/:id/hog_function_templates/`` (scopes
``hog_function:read`` / ``hog_function:write``). On PostHog Cloud every transformation is a Hog function;
the plugin endpoints behind ``client.transformations`` are the legacy API they replaced.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Unpack

from analytics_nb.client._pagination import iter_record_pages
from analytics_nb.client._resources._base import (
    Pages,
    Paging,
    Resource,
    check_choice,
    check_filters,
    collect_frame,
    collect_models,
    iterate_models,
    paging_of,
    require_text,
)
from analytics_nb.client._resources._playlists import _UNSET
from analytics_nb.models import HOG_FUNCTION_TYPES, HogFunction, HogFunctionTemplate

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "UPDATABLE_FIELDS",
    "HogFunctionFilters",
    "HogFunctionTemplateFilters",
    "HogFunctionTemplates",
    "HogFunctions",
]


class HogFunctionFilters(Paging, total=False):
    """The list filters of ``/hog_functions/`` plus the paging controls (see ``HogFunctions.iter``)."""

    type: str | Sequence[str] | None
    enabled: bool | None
    search: str | None
    full: bool


class HogFunctionTemplateFilters(Paging, total=False):
    """The list filters of ``/hog_function_templates/`` plus the paging controls (see
    ``HogFunctionTemplates.iter``)."""

    type: str | Sequence[str]
    template_id: str | None


UPDATABLE_FIELDS = (
    "name",
    "description",
    "enabled",
    "hog",
    "inputs",
    "inputs_schema",
    "filters",
    "masking",
    "mappings",
    "execution_order",
)
"""The fields ``HogFunctions.update`` sends (only those given)."""


def _types(name: str, value: str | Sequence[str] | None) -> str | None:
    """``type=`` as the service reads it: one type or a comma-separated list, each a known type."""
    if value is None:
        return None
    values = [value] if isinstance(value, str) else list(value)
    if not values:
        raise ValueError(f"{name} must name at least one type, e.g. {name}='transformation'.")
    for v in values:
        check_choice(name, v, HOG_FUNCTION_TYPES)
    return ",".join(values)


def _inputs(inputs: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Inputs in the wire shape ``{key: {"value": v}}``; plain values are wrapped, wire-shaped ones kept."""
    if inputs is None:
        return None
    if not isinstance(inputs, Mapping):
        raise ValueError(f"inputs must be a dict of input key -> value, got {type(inputs).__name__}.")
    out: dict[str, Any] = {}
    for key, value in inputs.items():
        if isinstance(value, Mapping) and ({"value"} & set(value) or value.get("secret") is True):
            out[str(key)] = dict(value)
        else:
            out[str(key)] = {"value": value}
    return out


def _order_key(fn: HogFunction) -> tuple[bool, int]:
    return (fn.execution_order is None, fn.execution_order or 0)


class HogFunctions(Resource):
    """``/api/projects/:id/hog_functions/``: list by type, get, create from a template or Hog source, update
    (PATCH of the fields given), soft delete and restore, enable/disable, reorder transformations."""

    def _path(self, suffix: str = "") -> str:
        return self._core.project_path("hog_functions/" + suffix)

    def _item(self, id: str, suffix: str = "") -> str:
        return self._path(f"{require_text('id', id)}/{suffix}")

    def _pages(self, filters: Mapping[str, Any], *, full: bool = False) -> Pages:
        """The listing's pages (the one paging path) for the `HogFunctionFilters` given; ``full`` is the
        default of the ``full`` filter (True for ``frame``)."""
        check_filters("hog function", filters, HogFunctionFilters)
        enabled = filters.get("enabled")
        if enabled is not None and not isinstance(enabled, bool):
            raise ValueError(f"enabled must be True, False or None, got {enabled!r}.")
        full = filters.get("full", full)
        if not isinstance(full, bool):
            raise ValueError(f"full must be True or False, got {full!r}.")
        search = filters.get("search")
        if search is not None and not isinstance(search, str):
            raise ValueError(f"search must be text (searched in the name and description), got {search!r}.")
        params: dict[str, Any] = {"type": _types("type", filters.get("type"))}
        if enabled is not None:
            params["enabled"] = "true" if enabled else "false"
        if search is not None:
            params["search"] = search
        if full:
            params["full"] = "true"
        return iter_record_pages(
            self._core, self._path(), params=params, desc="hog functions", **paging_of(filters)
        )

    async def iter(self, **filters: Unpack[HogFunctionFilters]) -> AsyncIterator[HogFunction]:
        """Iterate over the live (not soft-deleted) functions matching the filters, every page.

        Filters (`HogFunctionFilters`): ``type``: one of ``transformation``, ``destination``,
        ``site_destination``, ``internal_destination``, ``source_webhook``, ``site_app``, or a list of them
        (omitted: every type). ``enabled``: only enabled (True) or disabled (False) ones. ``search``: text in
        the name or description. ``full=True`` asks for every field (``inputs``, ``inputs_schema``,
        ``masking``, ``mappings``); the list otherwise sends the short shape (``frame`` defaults to True).
        Paging: ``page_size`` (<=500), ``offset``, ``max_items``. An unknown keyword (``enabeld=True``) is a
        ValueError before any request. The service orders by ``execution_order`` (transformations), then
        newest first.

        Args:
            **filters: The filters and paging keywords above; none: every live function.

        Yields:
            `HogFunction` models.
        """
        async for fn in iterate_models(self._pages(filters), HogFunction):
            yield fn

    async def list(self, **filters: Unpack[HogFunctionFilters]) -> builtins.list[HogFunction]:
        """All live functions matching the filters (see ``iter``), every page, as models.

        Args:
            **filters: The filters and paging keywords of ``iter``.

        Returns:
            The `HogFunction` models.
        """
        return await collect_models(self._pages(filters), HogFunction)

    async def frame(self, **filters: Unpack[HogFunctionFilters]) -> pd.DataFrame:
        """A DataFrame of the functions matching the filters (see ``iter``;
        ``analytics_nb.frames.hog_functions_frame``): one row each, transformations first in
        ``execution_order``. Here ``full`` defaults to True, so the frame has ``inputs`` and the other
        long fields; pass ``full=False`` for the list's short shape.

        Args:
            **filters: The filters and paging keywords of ``iter`` (``full`` defaults to True).

        Returns:
            One row per function.
        """
        from analytics_nb.frames import hog_functions_frame

        return await collect_frame(self._pages(filters, full=True), hog_functions_frame)

    async def transformations(self, *, enabled: bool | None = None) -> builtins.list[HogFunction]:
        """The project's Hog transformations in the order they run (``execution_order``, lowest first).

        Args:
            enabled: Only enabled (True) or disabled (False) ones. None: both.

        Returns:
            The transformations, in execution order.
        """
        found = await self.list(type="transformation", enabled=enabled, full=True)
        return sorted(found, key=_order_key)

    async def get(self, id: str) -> HogFunction:
        """One function by id, every field (a soft-deleted one raises NotFoundError).

        Args:
            id: The function's id (a UUID).

        Returns:
            The `HogFunction`.
        """
        explain = {
            404: f"No live Hog function {id!r} in this project: the id is wrong, or it was soft-deleted "
            "(client.hog_functions.restore(id) brings it back)."
        }
        return HogFunction.model_validate(await self._core.get_json(self._item(id), explain=explain))

    async def create(
        self,
        type: str = "transformation",
        *,
        template_id: str | None = None,
        hog: str | None = None,
        inputs: Mapping[str, Any] | None = None,
        name: str | None = None,
        description: str | None = None,
        enabled: bool | None = None,
        inputs_schema: builtins.list[dict[str, Any]] | None = None,
        filters: dict[str, Any] | None = None,
        masking: dict[str, Any] | None = None,
        mappings: builtins.list[dict[str, Any]] | None = None,
        execution_order: int | None = None,
        icon_url: str | None = None,
    ) -> HogFunction:
        """Create a function from a template (``template_id``, e.g. ``"template-geoip"``, plus its ``inputs``)
        or from Hog source (``hog``). ``inputs`` may be plain values (``{"percentage": 50}``) or the wire
        shape (``{"percentage": {"value": 50}}``). The service fills name, description, Hog and input schema
        from the template when not given; a new transformation goes last unless ``execution_order`` is set.
        New functions are disabled unless ``enabled=True``.

        Args:
            type: The function type; ``"transformation"`` by default.
            template_id: The template to create from. None: from ``hog``.
            hog: Hog source. None: the template's.
            inputs: Input values (plain or wire shape). None: none.
            name: The name. None: the template's.
            description: A description. None: the template's.
            enabled: Turn it on at once. None: created disabled.
            inputs_schema: The input schema. None: the template's.
            filters: Which events it runs on. None: all.
            masking: Masking settings (destinations). None: none.
            mappings: Mappings (destinations only). None: none.
            execution_order: Its place among the transformations. None: last.
            icon_url: An icon. None: the template's.

        Returns:
            The created `HogFunction`.

        Raises:
            ValidationError: The service refused a field (``hog``, ``template_id``, ``inputs__<key>``...).
        """
        check_choice("type", type, HOG_FUNCTION_TYPES)
        if template_id is None and hog is None:
            raise ValueError(
                "create() needs template_id='template-...' (see client.hog_function_templates.list()) "
                "or hog='...' (Hog source)."
            )
        body: dict[str, Any] = {"type": type}
        for key, value in (
            ("template_id", template_id),
            ("hog", hog),
            ("inputs", _inputs(inputs)),
            ("name", name),
            ("description", description),
            ("enabled", enabled),
            ("inputs_schema", inputs_schema),
            ("filters", filters),
            ("masking", masking),
            ("mappings", mappings),
            ("execution_order", execution_order),
            ("icon_url", icon_url),
        ):
            if value is not None:
                body[key] = value
        return HogFunction.model_validate(await self._core.send_json("POST", self._path(), body))

    async def update(
        self,
        id: str,
        *,
        name: str | None = _UNSET,
        description: str = _UNSET,
        enabled: bool = _UNSET,
        hog: str = _UNSET,
        inputs: Mapping[str, Any] = _UNSET,
        inputs_schema: builtins.list[dict[str, Any]] = _UNSET,
        filters: dict[str, Any] = _UNSET,
        masking: dict[str, Any] | None = _UNSET,
        mappings: builtins.list[dict[str, Any]] | None = _UNSET,
        execution_order: int | None = _UNSET,
    ) -> HogFunction:
        """PATCH the fields given, and only those (``None`` clears the nullable ones). ``inputs`` as in
        ``create``; a secret input sent back as ``{"secret": True}`` keeps its stored value. The type and
        template of a function cannot change.

        Args:
            id: The function's id.
            name: The new name. Not given: unchanged.
            description: The new description. Not given: unchanged.
            enabled: On or off. Not given: unchanged.
            hog: New Hog source. Not given: unchanged.
            inputs: New input values. Not given: unchanged.
            inputs_schema: A new input schema. Not given: unchanged.
            filters: New filters. Not given: unchanged.
            masking: New masking (None clears it). Not given: unchanged.
            mappings: New mappings (None clears them). Not given: unchanged.
            execution_order: A new place in the order (None clears it). Not given: unchanged.

        Returns:
            The updated `HogFunction`.
        """
        given: dict[str, Any] = {
            key: value
            for key, value in (
                ("name", name),
                ("description", description),
                ("enabled", enabled),
                ("hog", hog),
                ("inputs", inputs),
                ("inputs_schema", inputs_schema),
                ("filters", filters),
                ("masking", masking),
                ("mappings", mappings),
                ("execution_order", execution_order),
            )
            if value is not _UNSET
        }
        if not given:
            raise ValueError(
                f"update() needs at least one field to change, from: {', '.join(UPDATABLE_FIELDS)}."
            )
        if "inputs" in given:
            given["inputs"] = _inputs(inputs)
        return HogFunction.model_validate(await self._core.send_json("PATCH", self._item(id), given))

    async def delete(self, id: str) -> HogFunction:
        """Soft-delete a function (PATCH ``deleted=true``, as the app does): it stops running and leaves
        list/get until ``restore``. Returns the function as it was answered.

        Args:
            id: The function's id.

        Returns:
            The function as answered.
        """
        return HogFunction.model_validate(
            await self._core.send_json("PATCH", self._item(id), {"deleted": True})
        )

    async def restore(self, id: str) -> HogFunction:
        """Undo ``delete`` (PATCH ``deleted=false``); a restored transformation is placed last.

        Args:
            id: The function's id.

        Returns:
            The restored `HogFunction`.
        """
        return HogFunction.model_validate(
            await self._core.send_json("PATCH", self._item(id), {"deleted": False})
        )

    async def enable(self, id: str) -> HogFunction:
        """Turn a function on (``enabled=true``); a re-enabled transformation is placed last by the service
        (20 enabled transformations at most per project).

        Args:
            id: The function's id.

        Returns:
            The `HogFunction`.
        """
        return await self.update(id, enabled=True)

    async def disable(self, id: str) -> HogFunction:
        """Turn a function off (``enabled=false``); it keeps its configuration and order.

        Args:
            id: The function's id.

        Returns:
            The `HogFunction`.
        """
        return await self.update(id, enabled=False)

    async def reorder(self, ids: Sequence[str]) -> builtins.list[HogFunction]:
        """Run the transformations ``ids`` in this order: sets ``execution_order`` 1, 2, 3, ... in one request
        (``PATCH hog_functions/rearrange/``, what the app's drag-and-drop sends); returns every live
        transformation in the new order. ``ids`` must be transformations of this project, each once.

        Args:
            ids: Every transformation to order, first to run first.

        Returns:
            The live transformations in the new order.
        """
        if isinstance(ids, str):
            raise ValueError("reorder() takes a list of function ids in the order they should run.")
        clean = [require_text("id", i) for i in ids]
        if not clean:
            raise ValueError("reorder() needs at least one transformation id.")
        if len(set(clean)) != len(clean):
            raise ValueError("reorder() got the same id twice; give each transformation once.")
        orders = {ident: n for n, ident in enumerate(clean, start=1)}
        body = await self._core.send_json("PATCH", self._path("rearrange/"), {"orders": orders})
        results = body if isinstance(body, builtins.list) else []
        return sorted((HogFunction.model_validate(r) for r in results), key=_order_key)


class HogFunctionTemplates(Resource):
    """``/api/projects/:id/hog_function_templates/``: the templates functions are created from (read only)."""

    def _path(self, suffix: str = "") -> str:
        return self._core.project_path("hog_function_templates/" + suffix)

    def _pages(self, filters: Mapping[str, Any]) -> Pages:
        """The listing's pages (the one paging path) for the `HogFunctionTemplateFilters` given."""
        check_filters("hog function template", filters, HogFunctionTemplateFilters)
        params: dict[str, Any] = {}
        types = _types("type", filters.get("type", "destination"))
        if types is not None and "," in types:
            params["types"] = types
        else:
            params["type"] = types
        template_id = filters.get("template_id")
        if template_id is not None:
            params["template_id"] = require_text("template_id", template_id)
        return iter_record_pages(
            self._core, self._path(), params=params, desc="hog function templates", **paging_of(filters)
        )

    async def iter(self, **filters: Unpack[HogFunctionTemplateFilters]) -> AsyncIterator[HogFunctionTemplate]:
        """Iterate over the templates matching the filters, every page; the service leaves deprecated
        templates out (``get`` finds them).

        Filters (`HogFunctionTemplateFilters`): ``type``: one template type or a list of them (default
        ``"destination"``, the service's default); ``template_id``: only this template. Paging:
        ``page_size``, ``offset``, ``max_items``. An unknown keyword is a ValueError before any request.

        Args:
            **filters: The filters and paging keywords above; none: every destination template.

        Yields:
            `HogFunctionTemplate` models.
        """
        async for template in iterate_models(self._pages(filters), HogFunctionTemplate):
            yield template

    async def list(self, **filters: Unpack[HogFunctionTemplateFilters]) -> builtins.list[HogFunctionTemplate]:
        """Templates matching the filters (see ``iter``) as models.

        Args:
            **filters: The filters and paging keywords of ``iter``.

        Returns:
            The `HogFunctionTemplate` models.
        """
        return await collect_models(self._pages(filters), HogFunctionTemplate)

    async def frame(self, **filters: Unpack[HogFunctionTemplateFilters]) -> pd.DataFrame:
        """A DataFrame of the templates matching the filters (see ``iter``;
        ``analytics_nb.frames.hog_function_templates_frame``).

        Args:
            **filters: The filters and paging keywords of ``iter``.

        Returns:
            One row per template.
        """
        from analytics_nb.frames import hog_function_templates_frame

        return await collect_frame(self._pages(filters), hog_function_templates_frame)

    async def get(self, template_id: str) -> HogFunctionTemplate:
        """One template by id (``"template-geoip"``, or ``"plugin-..."`` for a migrated legacy plugin).

        Args:
            template_id: The template's id.

        Returns:
            The `HogFunctionTemplate`.
        """
        path = self._path(f"{require_text('template_id', template_id)}/")
        return HogFunctionTemplate.model_validate(await self._core.get_json(path))

"""LEGACY: pipeline transformations (plugins) of the organization, all 13 endpoints.

PostHog replaced plugins with Hog functions: plugins left the public API docs in Nov 2024
(PostHog/posthog#26202), plugin creation was shut down in Jul 2025 (#35126, #35545) and an open PR
removes these endpoints and the ``plugin`` scope (#97440). On PostHog Cloud every transformation is a Hog
function: use ``client.hog_functions`` (``type="transformation"``). Self-hosted instances still serve
these endpoints.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Unpack

from analytics_nb.client._core import parse_model
from analytics_nb.client._pagination import PageGuard, iter_record_pages
from analytics_nb.client._resources._base import (
    Pages,
    Paging,
    Resource,
    check_filters,
    check_id,
    collect_frame,
    collect_models,
    iterate_models,
    paging_of,
)
from analytics_nb.errors import NotFoundError
from analytics_nb.models import ActivityPage, PluginConfig, Transformation

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["WRITABLE_FIELDS", "Transformations"]

WRITABLE_FIELDS = (
    "plugin_type",
    "name",
    "description",
    "url",
    "icon",
    "config_schema",
    "tag",
    "is_global",
    "capabilities",
    "metrics",
    "public_jobs",
)
CUSTOM_ACTION_403 = (
    "PostHog Cloud refuses personal API keys for the plugin actions (check_for_updates, source, "
    "update_source, upgrade, activity, repository, unused, exports_unsubscribe_configs), and writes "
    "need the organization's plugin access level; use a self-hosted instance or the sandbox for these."
)


PLUGIN_API_REMOVED = (
    "This PostHog instance no longer serves the plugin API: PostHog PR #97440 removes plugins, plugin "
    "configs and the pipeline_* routes (the organization's pipeline_transformations list answers 404 "
    "too). Transformations are Hog functions there: use client.hog_functions.list(type='transformation') "
    "(or client.hog_functions.transformations()), and client.hog_function_templates to create them."
)


def _body(fields: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(fields) - set(WRITABLE_FIELDS))
    if unknown:
        raise ValueError(
            f"unknown transformation field(s) {', '.join(unknown)}; "
            f"writable fields are {', '.join(WRITABLE_FIELDS)}."
        )
    if not fields:
        raise ValueError(f"give at least one field to send, from: {', '.join(WRITABLE_FIELDS)}.")
    return dict(fields)


def _transformation(body: Any) -> Transformation:
    # check_for_updates answers {"plugin": {...}} on the real service; the spec shows the bare object.
    if isinstance(body, dict) and isinstance(body.get("plugin"), dict) and "id" not in body:
        body = body["plugin"]
    return parse_model(Transformation, body)


class Transformations(Resource):
    """LEGACY ``/api/organizations/:org/pipeline_transformations/``: list, CRUD, source, upgrade, views.

    The plugin API PostHog is retiring (self-hosted instances still serve it); today's transformations are
    Hog functions: ``client.hog_functions.transformations()``, created from ``client.hog_function_templates``.
    """

    async def _path(self, suffix: str = "") -> str:
        return await self._core.organization_path("pipeline_transformations/" + suffix)

    async def _item(self, id: int, suffix: str = "") -> str:
        return await self._path(f"{check_id('id', id)}/{suffix}")

    async def _call(self, send: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any) -> Any:
        """``send(*args, **kwargs)``, a 404 explained when the instance no longer serves the plugin API."""
        try:
            return await send(*args, **kwargs)
        except NotFoundError as exc:
            raise await self._not_found(exc) from None

    async def _not_found(self, exc: NotFoundError) -> NotFoundError:
        """``exc``, or the plugin-API-removed explanation when the list route itself answers 404."""
        try:
            await self._core.get_json(await self._path(), params={"limit": 1})
        except NotFoundError:
            return NotFoundError(
                f"{exc} {PLUGIN_API_REMOVED}",
                status=exc.status,
                type=exc.type,
                code=exc.code,
                detail=exc.detail,
                attr=exc.attr,
                method=exc.method,
                url=exc.url,
            )
        except Exception:  # the probe's own failure must not hide the original error
            return exc
        return exc

    async def _pages(self, paging: Mapping[str, Any]) -> Pages:
        """The listing's pages (the one paging path; the organization is resolved first). The plugin list
        takes no filters: only the `Paging` controls (anything else is a ValueError before any request)."""
        check_filters("transformation", paging, Paging)
        return iter_record_pages(self._core, await self._path(), desc="transformations", **paging_of(paging))

    async def iter(self, **paging: Unpack[Paging]) -> AsyncIterator[Transformation]:
        """Iterate over the organization's transformations (pages fetched concurrently).

        On an instance that no longer serves the plugin API (PostHog PR #97440) the NotFoundError says so and
        points to ``client.hog_functions``, as every other verb's does.

        Args:
            **paging: The paging controls (`Paging`): ``page_size`` (<=500), ``offset``, ``max_items``;
                none: every page.

        Yields:
            `Transformation` models.
        """
        pages = await self._pages(paging)
        try:
            async for transformation in iterate_models(pages, Transformation):
                yield transformation
        except NotFoundError as exc:
            raise await self._not_found(exc) from None

    async def list(self, **paging: Unpack[Paging]) -> builtins.list[Transformation]:
        """All transformations as models. On an instance that no longer serves the plugin API (PostHog PR
        #97440) the NotFoundError says so and points to ``client.hog_functions``.

        Args:
            **paging: The paging controls of ``iter``.

        Returns:
            The `Transformation` models.
        """
        found: builtins.list[Transformation] = await self._call(
            collect_models, await self._pages(paging), Transformation
        )
        return found

    async def frame(self, **paging: Unpack[Paging]) -> pd.DataFrame:
        """A DataFrame of the transformations (``analytics_nb.frames.transformations_frame``).

        Args:
            **paging: The paging controls of ``iter``.

        Returns:
            One row per transformation.
        """
        from analytics_nb.frames import transformations_frame

        pages = await self._pages(paging)
        frame: pd.DataFrame = await self._call(collect_frame, pages, transformations_frame)
        return frame

    async def get(self, id: int) -> Transformation:
        """One transformation by id.

        Args:
            id: The transformation's (plugin's) id.

        Returns:
            The `Transformation`.
        """
        return _transformation(await self._call(self._core.get_json, await self._item(id)))

    async def create(self, **fields: Any) -> Transformation:
        """Install a transformation (POST the writable fields given, e.g. ``plugin_type="source"``).

        Args:
            **fields: The writable plugin fields (``url``, ``plugin_type``, ``name``...).

        Returns:
            The installed `Transformation`.
        """
        return _transformation(
            await self._call(self._core.send_json, "POST", await self._path(), _body(fields))
        )

    async def update(self, id: int, **fields: Any) -> Transformation:
        """PATCH the writable fields given.

        Args:
            id: The transformation's id.
            **fields: The writable fields to change.

        Returns:
            The updated `Transformation`.
        """
        return _transformation(
            await self._call(self._core.send_json, "PATCH", await self._item(id), _body(fields))
        )

    async def delete(self, id: int) -> None:
        """Uninstall a transformation (204); a global one must be made local first.

        Args:
            id: The transformation's id.
        """
        await self._call(self._core.request, "DELETE", await self._item(id))

    async def check_for_updates(self, id: int) -> Transformation:
        """Ask the service to look up the latest version; returns the plugin with ``latest_tag`` updated.

        Args:
            id: The transformation's id.

        Returns:
            The `Transformation` with ``latest_tag``.
        """
        body = await self._call(
            self._core.get_json, await self._item(id, "check_for_updates/"), explain={403: CUSTOM_ACTION_403}
        )
        return _transformation(body)

    async def source(self, id: int) -> dict[str, str | None]:
        """The plugin's source files as ``{filename: content}`` (e.g. ``plugin.json``, ``index.ts``).

        Args:
            id: The transformation's id.

        Returns:
            ``{filename: content}``.
        """
        body = await self._call(
            self._core.get_json, await self._item(id, "source/"), explain={403: CUSTOM_ACTION_403}
        )
        return dict(body or {})

    async def sources_frame(self, ids: Iterable[int] | None = None) -> pd.DataFrame:
        """Every source file of the given transformations (default: all) as one DataFrame, one row per file.

        The ``source`` calls run concurrently (bounded by ``max_concurrency``).

        Args:
            ids: The transformations' ids. None: every transformation.

        Returns:
            One row per (id, filename).
        """
        from analytics_nb.frames import transformation_sources_frame

        if ids is None:
            ids = [t.id for t in await self.list() if t.id is not None]
        wanted = [check_id("ids", i) for i in ids]

        async def one(plugin_id: int) -> tuple[int, dict[str, str | None]]:
            async with self._core.semaphore:
                return plugin_id, await self.source(plugin_id)

        pairs = await asyncio.gather(*(one(i) for i in wanted))
        return transformation_sources_frame(pairs)

    async def update_source(self, id: int, files: Mapping[str, str | None]) -> dict[str, str | None]:
        """Create or replace source files (``{filename: content}``); a ``None`` content deletes that file.

        Returns the full ``{filename: content}`` map after the change.

        Args:
            id: The transformation's id.
            files: ``{filename: content}``; None content deletes the file.

        Returns:
            ``{filename: content}`` after the change.
        """
        if not isinstance(files, Mapping) or not files:
            raise ValueError("files must be a non-empty mapping {filename: content or None}.")
        for name, content in files.items():
            if not isinstance(name, str) or not name.strip():
                raise ValueError(f"files: every filename must be a non-empty string, got {name!r}.")
            if content is not None and not isinstance(content, str):
                raise ValueError(f"files[{name!r}] must be text (or None to delete the file).")
        body = await self._call(
            self._core.send_json,
            "PATCH",
            await self._item(id, "update_source/"),
            dict(files),
            explain={403: CUSTOM_ACTION_403},
        )
        return dict(body or {})

    async def upgrade(self, id: int, **fields: Any) -> Transformation:
        """Re-install the plugin from its url (POST ``.../upgrade/``) and return it.

        Args:
            id: The transformation's id.
            **fields: Fields sent with the upgrade request, as given.

        Returns:
            The upgraded `Transformation`.
        """
        body = _body(fields) if fields else {}
        result = await self._call(
            self._core.send_json,
            "POST",
            await self._item(id, "upgrade/"),
            body,
            explain={403: CUSTOM_ACTION_403},
        )
        return _transformation(result)

    async def activity(self, *, page: int | None = None, limit: int | None = None) -> ActivityPage:
        """One page of the activity log of plugins and plugin configs (``{results, next, total_count}``).

        Args:
            page: The page number. None: the first.
            limit: Entries per page. None: the service's default.

        Returns:
            The `ActivityPage`.
        """
        params = {"page": page, "limit": limit}
        body = await self._call(
            self._core.get_json,
            await self._path("activity/"),
            params=params,
            explain={403: CUSTOM_ACTION_403},
        )
        return parse_model(ActivityPage, body)

    async def activity_records(
        self, *, page_size: int = 100, max_items: int | None = None
    ) -> builtins.list[dict[str, Any]]:
        """Every activity log entry as raw wire dicts, newest first (pages of ``page_size`` followed until
        ``next`` is empty or ``max_items`` entries are read; an entry seen twice is kept once).

        Args:
            page_size: Entries per page.
            max_items: Stop after this many. None: the whole log.

        Returns:
            The entries as dicts.
        """
        if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1:
            raise ValueError(f"page_size must be a positive whole number, got {page_size!r}.")
        if max_items is not None and (
            isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 0
        ):
            raise ValueError(f"max_items must be None or a whole number >= 0, got {max_items!r}.")
        path = await self._path("activity/")
        entries: builtins.list[dict[str, Any]] = []
        seen: set[Any] = set()
        guard = PageGuard("the activity log")  # repeating pages stop with a PaginationError
        page = 1
        while max_items is None or len(entries) < max_items:
            body = await self._call(
                self._core.get_json,
                path,
                params={"page": page, "limit": page_size},
                explain={403: CUSTOM_ACTION_403},
            )
            results = body.get("results") if isinstance(body, dict) else None
            if not results:
                break
            guard.page(results)
            for entry in results:
                key = entry.get("id") if isinstance(entry, dict) else None
                if key is not None:
                    if key in seen:
                        continue  # new activity pushed an entry onto the next page
                    seen.add(key)
                entries.append(entry)
            if not body.get("next"):
                break
            page += 1
        return entries if max_items is None else entries[:max_items]

    async def activity_frame(self, *, page_size: int = 100, max_items: int | None = None) -> pd.DataFrame:
        """The whole activity log as a DataFrame (``analytics_nb.frames.activity_frame``), newest first.

        Args:
            page_size: Entries per page.
            max_items: Stop after this many. None: the whole log.

        Returns:
            One row per entry.
        """
        from analytics_nb.frames import activity_frame

        return activity_frame(await self.activity_records(page_size=page_size, max_items=max_items))

    async def exports_unsubscribe_configs(self) -> builtins.list[PluginConfig]:
        """The organization's enabled export plugin configs (secrets arrive masked)."""
        body = await self._call(
            self._core.get_json,
            await self._path("exports_unsubscribe_configs/"),
            explain={403: CUSTOM_ACTION_403},
        )
        items = body.get("results", []) if isinstance(body, dict) else body or []
        return [parse_model(PluginConfig, item) for item in items]

    async def repository(self) -> builtins.list[dict[str, Any]]:
        """The plugin repository's entries (what can be installed)."""
        body = await self._call(
            self._core.get_json, await self._path("repository/"), explain={403: CUSTOM_ACTION_403}
        )
        items = body.get("results", []) if isinstance(body, dict) else body or []
        return builtins.list(items)

    async def unused(self) -> builtins.list[int]:
        """Ids of plugins no enabled plugin config uses."""
        body = await self._call(
            self._core.get_json, await self._path("unused/"), explain={403: CUSTOM_ACTION_403}
        )
        items = body.get("results", []) if isinstance(body, dict) else body or []
        return [int(i) for i in items]

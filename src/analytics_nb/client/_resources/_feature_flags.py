"""Feature flag definitions: list, get, frame and the local-evaluation payload the SDKs read."""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from analytics_nb.client._core import parse_model
from analytics_nb.client._pagination import MAX_PAGE_SIZE, iter_record_pages
from analytics_nb.client._resources._base import (
    Pages,
    Resource,
    check_id,
    collect_frame,
    collect_models,
    iterate_models,
    require_text,
)
from analytics_nb.models import FeatureFlag, LocalEvaluationResponse

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FeatureFlags"]


class FeatureFlags(Resource):
    """``/api/projects/:id/feature_flags/`` and ``/api/feature_flag/local_evaluation/``."""

    def _path(self, suffix: str = "") -> str:
        return self._core.project_path("feature_flags/" + suffix)

    def _pages(self, page_size: int = MAX_PAGE_SIZE, max_items: int | None = None, **params: Any) -> Pages:
        return iter_record_pages(
            self._core, self._path(), params=params, page_size=page_size, max_items=max_items, desc="flags"
        )

    async def iter(
        self, *, page_size: int = MAX_PAGE_SIZE, max_items: int | None = None, **params: Any
    ) -> AsyncIterator[FeatureFlag]:
        """Iterate over the project's flag definitions as models; ``params`` go to the query string."""
        async for flag in iterate_models(self._pages(page_size, max_items, **params), FeatureFlag):
            yield flag

    async def list(
        self, *, page_size: int = MAX_PAGE_SIZE, max_items: int | None = None, **params: Any
    ) -> builtins.list[FeatureFlag]:
        """All flag definitions of the project (see ``iter``)."""
        return await collect_models(self._pages(page_size, max_items, **params), FeatureFlag)

    async def frame(self, *, max_items: int | None = None, **params: Any) -> pd.DataFrame:
        """A DataFrame of the flag definitions (``analytics_nb.frames.feature_flags_frame``)."""
        from analytics_nb.frames import feature_flags_frame

        return await collect_frame(self._pages(max_items=max_items, **params), feature_flags_frame)

    async def get(self, id: int) -> FeatureFlag:
        """One flag definition by numeric id."""
        return parse_model(FeatureFlag, await self._core.get_json(self._path(f"{check_id('id', id)}/")))

    async def create(
        self,
        key: str,
        *,
        name: str | None = None,
        filters: dict[str, Any] | None = None,
        active: bool | None = None,
        **extra: Any,
    ) -> FeatureFlag:
        """Create a flag definition (``filters`` in the wire shape: groups, multivariate, payloads)."""
        body: dict[str, Any] = {"key": require_text("key", key)}
        for field, value in (("name", name), ("filters", filters), ("active", active)):
            if value is not None:
                body[field] = value
        body.update(extra)
        return parse_model(FeatureFlag, await self._core.send_json("POST", self._path(), body))

    async def update(self, id: int, **fields: Any) -> FeatureFlag:
        """PATCH the fields given (e.g. ``active=False`` or new ``filters``)."""
        if not fields:
            raise ValueError("update() needs at least one field to change, e.g. active=False.")
        path = self._path(f"{check_id('id', id)}/")
        return parse_model(FeatureFlag, await self._core.send_json("PATCH", path, fields))

    async def local_evaluation(self, *, send_cohorts: bool = True) -> LocalEvaluationResponse:
        """The definitions the SDKs use for local evaluation: flags, group type mapping and cohorts."""
        token = await self._core.project_api_key()
        params: dict[str, Any] = {"token": token}
        if send_cohorts:
            params["send_cohorts"] = ""
        body = await self._core.get_json("/api/feature_flag/local_evaluation/", params=params)
        return parse_model(LocalEvaluationResponse, body)

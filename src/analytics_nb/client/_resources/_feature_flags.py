"""Feature flag definitions: list, get, frame and the definitions the SDKs read for local evaluation.

Definitions come from today's ``/flags/definitions?token=`` on the ingestion host (the Rust flags service,
``rust/feature-flags/src/api/flag_definitions.rs``; the Django ``/api/feature_flag/local_evaluation`` is now
its alias, PostHog #56043 / #61780), authenticated by a Project Secret API Key (``phs_``, scope
``feature_flag:read``; #63111, #66174) or a personal key. As posthog-python 7.91.1 does, the client keeps the
weak ETag and sends ``If-None-Match``: a 304 reuses the definitions it has. A cold cache answers 503 (the
service has no database fallback): retried with backoff, then explained. Only where ``/flags/definitions``
does not exist (404: an older self-hosted PostHog) does the client fall back to the Django path, with a
`LegacyEndpointWarning`.
"""

from __future__ import annotations

import builtins
import warnings
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from analytics_nb.client._core import Core, decode_json, parse_model
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

__all__ = ["DefinitionsCache", "FeatureFlags", "LegacyEndpointWarning", "cached_definitions"]

DEFINITIONS_PATH = "/flags/definitions"
LEGACY_PATH = "/api/feature_flag/local_evaluation/"


class LegacyEndpointWarning(UserWarning):
    """The PostHog instance lacks today's endpoint (an older self-hosted one): the client used the older
    one it still serves (``/api/feature_flag/local_evaluation``)."""


@dataclass
class DefinitionsCache:
    """The last definitions a client read: the parsed answer, its ETag and where they came from."""

    response: LocalEvaluationResponse
    etag: str | None
    source: str
    fetches: int = 1
    not_modified: int = 0


_CACHES: weakref.WeakKeyDictionary[Core, DefinitionsCache] = weakref.WeakKeyDictionary()


def cached_definitions(core: Core) -> DefinitionsCache | None:
    """The definitions this client already holds (None before the first fetch): no request is sent."""
    return _CACHES.get(core)


def _explanations(key_kind: str) -> dict[int, str]:
    need = (
        "flag definitions need a Project Secret API Key (phs_..., Project settings > Secret API keys, scope "
        "feature_flag:read) as secret_api_key= (or POSTHOG_SECRET_API_KEY), or a personal API key with the "
        "feature_flag:read scope"
    )
    return {
        401: f"the {key_kind} was refused for this project's definitions: {need}; check the key, that it "
        "belongs to this project (project_api_key) and that it has the scope.",
        403: f"the {key_kind} lacks the feature_flag:read scope: {need}.",
        503: "the flags service has no cached definitions for this project yet (a cold cache: it serves "
        "definitions from its cache only). It was retried with backoff; wait a minute and call again, or "
        "use engine='remote', which does not need definitions.",
    }


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
        """Iterate over the project's flag definitions as models; ``params`` go to the query string.

        Args:
            page_size: Flags per page.
            max_items: Stop after this many. None: every page.
            **params: Query parameters (``search``, ``active``...), sent as given.

        Yields:
            `FeatureFlag` models.
        """
        async for flag in iterate_models(self._pages(page_size, max_items, **params), FeatureFlag):
            yield flag

    async def list(
        self, *, page_size: int = MAX_PAGE_SIZE, max_items: int | None = None, **params: Any
    ) -> builtins.list[FeatureFlag]:
        """All flag definitions of the project (see ``iter``).

        Args:
            page_size: Flags per page.
            max_items: Stop after this many. None: every page.
            **params: Query parameters, sent as given.

        Returns:
            The `FeatureFlag` models.
        """
        return await collect_models(self._pages(page_size, max_items, **params), FeatureFlag)

    async def frame(self, *, max_items: int | None = None, **params: Any) -> pd.DataFrame:
        """A DataFrame of the flag definitions (``analytics_nb.frames.feature_flags_frame``).

        Args:
            max_items: Stop after this many. None: every page.
            **params: Query parameters, sent as given.

        Returns:
            One row per flag.
        """
        from analytics_nb.frames import feature_flags_frame

        return await collect_frame(self._pages(max_items=max_items, **params), feature_flags_frame)

    async def get(self, id: int) -> FeatureFlag:
        """One flag definition by numeric id.

        Args:
            id: The flag's numeric id.

        Returns:
            The `FeatureFlag`.
        """
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
        """Create a flag definition (``filters`` in the wire shape: groups, multivariate, payloads).

        Args:
            key: The flag key code checks.
            name: A description. None: none.
            filters: The release conditions in the wire shape. None: the service's default.
            active: Turn it on. None: the service's default.
            **extra: Other wire fields, sent as given.

        Returns:
            The created `FeatureFlag`.
        """
        body: dict[str, Any] = {"key": require_text("key", key)}
        for field, value in (("name", name), ("filters", filters), ("active", active)):
            if value is not None:
                body[field] = value
        body.update(extra)
        return parse_model(FeatureFlag, await self._core.send_json("POST", self._path(), body))

    async def update(self, id: int, **fields: Any) -> FeatureFlag:
        """PATCH the fields given (e.g. ``active=False`` or new ``filters``).

        Args:
            id: The flag's numeric id.
            **fields: The fields to change.

        Returns:
            The updated `FeatureFlag`.
        """
        if not fields:
            raise ValueError("update() needs at least one field to change, e.g. active=False.")
        path = self._path(f"{check_id('id', id)}/")
        return parse_model(FeatureFlag, await self._core.send_json("PATCH", path, fields))

    async def definitions(self, *, refresh: bool = False) -> LocalEvaluationResponse:
        """The definitions the SDKs use for local evaluation (flags, group type mapping, cohorts) from
        ``/flags/definitions`` as posthog-python 7.91.1 polls it: ``If-None-Match`` with the ETag the client
        holds, so an unchanged answer (304) reuses them. ``refresh=True`` asks without the ETag.

        Auth: ``secret_api_key`` (``phs_``) when the client has one, else the personal key. A 404 (an
        older self-hosted PostHog without ``/flags/definitions``) falls back to
        ``/api/feature_flag/local_evaluation`` with a `LegacyEndpointWarning`.

        Args:
            refresh: Ask without the ETag (a full answer even when nothing changed).

        Returns:
            The `LocalEvaluationResponse`.
        """
        from analytics_nb.errors import NotFoundError

        core = self._core
        config = core.config
        key = config.secret_api_key or config.personal_api_key
        if key is None:
            raise ValueError(
                "flag definitions need a key: pass secret_api_key='phs_...' (a Project Secret API Key with "
                "feature_flag:read; or set POSTHOG_SECRET_API_KEY) or personal_api_key='phx_...' to the "
                "Client."
            )
        kind = "secret API key (phs_)" if config.secret_api_key is not None else "personal API key (phx_)"
        cached = _CACHES.get(core)
        headers = {"If-None-Match": cached.etag} if cached and cached.etag and not refresh else {}
        token = await core.project_api_key()
        try:
            response = await core.request(
                "GET",
                DEFINITIONS_PATH,
                service="ingest",
                params={"token": token, "send_cohorts": ""},
                headers=headers,
                auth=core.key_auth(key),
                explain=_explanations(kind),
            )
            source = DEFINITIONS_PATH
        except NotFoundError:
            warnings.warn(
                f"{config.ingest_url} has no {DEFINITIONS_PATH} (an older self-hosted PostHog): flag "
                f"definitions were read from {LEGACY_PATH} instead. PostHog Cloud serves {DEFINITIONS_PATH} "
                "(PostHog #56043); upgrade the instance to get ETags and secret-key access.",
                LegacyEndpointWarning,
                stacklevel=3,
            )
            response = await core.request(
                "GET",
                LEGACY_PATH,
                params={"token": token, "send_cohorts": ""},
                headers=headers,
                auth=core.key_auth(key),
                explain=_explanations(kind),
            )
            source = LEGACY_PATH
        if response.status_code == 304 and cached is not None:
            cached.not_modified += 1
            return cached.response
        parsed = parse_model(LocalEvaluationResponse, decode_json(response, core.scrub(str(response.url))))
        fetches = cached.fetches + 1 if cached is not None else 1
        _CACHES[core] = DefinitionsCache(parsed, response.headers.get("ETag"), source, fetches=fetches)
        return parsed

    async def local_evaluation(
        self, *, send_cohorts: bool = True, refresh: bool = False
    ) -> LocalEvaluationResponse:
        """The definitions for local evaluation: `definitions` (today's ``/flags/definitions``, ETag-cached;
        the Django ``/api/feature_flag/local_evaluation`` only where that does not exist). Cohorts always
        come with them, as the service always sends them (``send_cohorts`` is kept for compatibility).

        Args:
            send_cohorts: Kept for compatibility; cohorts always come.
            refresh: Ask without the ETag.

        Returns:
            The `LocalEvaluationResponse`.
        """
        del send_cohorts
        return await self.definitions(refresh=refresh)

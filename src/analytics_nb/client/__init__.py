"""The data-access client: ``ApiClient`` (sync, notebook-safe) and ``AsyncApiClient`` for a PostHog-style
service.

Playlists, Hog functions (today's transformations and destinations), legacy pipeline transformations
(plugins), feature flags, projects/organizations and decide, with concurrent
pagination, retries with jittered backoff, an optional rate limiter and typed errors
(``analytics_nb.errors``).
Analysts use ``analytics_nb.Client`` / ``AsyncClient`` (``analytics_nb.session``), which add capture,
simulation and the embedded sandbox to these.
"""

from __future__ import annotations

from analytics_nb.client._client import AnyApiClient, ApiClient, AsyncApiClient
from analytics_nb.client._config import REGIONS, ClientConfig
from analytics_nb.client._core import Core, loads_json
from analytics_nb.client._decide import (
    RUNTIMES,
    FlagsRateLimitWarning,
    check_runtime,
    decide_body,
    note_rate_limit_warning,
)
from analytics_nb.client._loop import LoopThread
from analytics_nb.client._pacing import AdaptiveLimit
from analytics_nb.client._pagination import MAX_PAGE_SIZE
from analytics_nb.client._progress import progress_bar, progress_enabled
from analytics_nb.client._resources import (
    DefinitionsCache,
    DefinitionsHistoryWarning,
    FeatureFlagFilters,
    FeatureFlags,
    HistoryGap,
    HogFunctionFilters,
    HogFunctions,
    HogFunctionTemplateFilters,
    HogFunctionTemplates,
    LegacyEndpointWarning,
    Organizations,
    Paging,
    PlaylistFilters,
    Playlists,
    Projects,
    Transformations,
    as_moment,
    cached_definitions,
    warn_gaps,
)
from analytics_nb.client._verbs import run_interruptible

__all__ = [
    "MAX_PAGE_SIZE",
    "REGIONS",
    "RUNTIMES",
    "AdaptiveLimit",
    "AnyApiClient",
    "ApiClient",
    "AsyncApiClient",
    "ClientConfig",
    "Core",
    "DefinitionsCache",
    "DefinitionsHistoryWarning",
    "FeatureFlagFilters",
    "FeatureFlags",
    "FlagsRateLimitWarning",
    "HistoryGap",
    "HogFunctionFilters",
    "HogFunctionTemplateFilters",
    "HogFunctionTemplates",
    "HogFunctions",
    "LegacyEndpointWarning",
    "LoopThread",
    "Organizations",
    "Paging",
    "PlaylistFilters",
    "Playlists",
    "Projects",
    "Transformations",
    "as_moment",
    "cached_definitions",
    "check_runtime",
    "decide_body",
    "loads_json",
    "note_rate_limit_warning",
    "progress_bar",
    "progress_enabled",
    "run_interruptible",
    "warn_gaps",
]

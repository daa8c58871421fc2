"""Async resource classes (one per API area); the sync client uses facades generated from them."""

from __future__ import annotations

from analytics_nb.client._resources._base import Paging
from analytics_nb.client._resources._feature_flags import (
    DefinitionsCache,
    FeatureFlagFilters,
    FeatureFlags,
    LegacyEndpointWarning,
    cached_definitions,
)
from analytics_nb.client._resources._flag_history import (
    DefinitionsHistoryWarning,
    HistoryGap,
    as_moment,
    warn_gaps,
)
from analytics_nb.client._resources._hog_functions import (
    HogFunctionFilters,
    HogFunctions,
    HogFunctionTemplateFilters,
    HogFunctionTemplates,
)
from analytics_nb.client._resources._playlists import PlaylistFilters, Playlists
from analytics_nb.client._resources._projects import Organizations, Projects
from analytics_nb.client._resources._transformations import Transformations

__all__ = [
    "DefinitionsCache",
    "DefinitionsHistoryWarning",
    "FeatureFlagFilters",
    "FeatureFlags",
    "HistoryGap",
    "HogFunctionFilters",
    "HogFunctionTemplateFilters",
    "HogFunctionTemplates",
    "HogFunctions",
    "LegacyEndpointWarning",
    "Organizations",
    "Paging",
    "PlaylistFilters",
    "Playlists",
    "Projects",
    "Transformations",
    "as_moment",
    "cached_definitions",
    "warn_gaps",
]

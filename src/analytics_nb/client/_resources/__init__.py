"""Async resource classes (one per API area); the sync client uses facades generated from them."""

from __future__ import annotations

from analytics_nb.client._resources._feature_flags import (
    DefinitionsCache,
    FeatureFlags,
    LegacyEndpointWarning,
    cached_definitions,
)
from analytics_nb.client._resources._hog_functions import HogFunctions, HogFunctionTemplates
from analytics_nb.client._resources._playlists import PlaylistFilters, Playlists
from analytics_nb.client._resources._projects import Organizations, Projects
from analytics_nb.client._resources._transformations import Transformations

__all__ = [
    "DefinitionsCache",
    "FeatureFlags",
    "HogFunctionTemplates",
    "HogFunctions",
    "LegacyEndpointWarning",
    "Organizations",
    "PlaylistFilters",
    "Playlists",
    "Projects",
    "Transformations",
    "cached_definitions",
]

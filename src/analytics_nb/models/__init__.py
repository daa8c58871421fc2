"""Pydantic models of every API resource, in the wire shape the service sends.

Unknown fields are kept (``model.model_extra``) and written back by ``to_wire(model)``
(``model_dump(by_alias=True, mode="json", exclude_unset=True)``); attributes are snake_case, wire names are
aliases, datetimes are tz-aware UTC. Models do no I/O and accept any value the server may send.
"""

from __future__ import annotations

from analytics_nb.models._capture import CaptureBatch, CaptureEvent
from analytics_nb.models._common import Page, User, UtcDatetime, WireModel, to_wire
from analytics_nb.models._decide import DecideRequest, DecideResponse, FlagDetail, FlagMetadata, FlagReason
from analytics_nb.models._flag_test import ConditionAnalysis, FlagTestEvaluation, PropertyAnalysis
from analytics_nb.models._flags import (
    FeatureFlag,
    FeatureFlagVersion,
    FlagConditionGroup,
    FlagFilters,
    LocalEvaluationResponse,
    Multivariate,
    PropertyFilter,
    Variant,
)
from analytics_nb.models._hog_functions import (
    HOG_FUNCTION_TYPES,
    HogFunction,
    HogFunctionStatus,
    HogFunctionTemplate,
)
from analytics_nb.models._playlists import (
    CollectionCounts,
    Playlist,
    Recording,
    RecordingsCounts,
    RecordingsPage,
    SavedFiltersCounts,
)
from analytics_nb.models._transformations import (
    ActivityLogEntry,
    ActivityPage,
    Organization,
    PluginConfig,
    Project,
    Transformation,
)

__all__ = [
    "HOG_FUNCTION_TYPES",
    "ActivityLogEntry",
    "ActivityPage",
    "CaptureBatch",
    "CaptureEvent",
    "CollectionCounts",
    "ConditionAnalysis",
    "DecideRequest",
    "DecideResponse",
    "FeatureFlag",
    "FeatureFlagVersion",
    "FlagConditionGroup",
    "FlagDetail",
    "FlagFilters",
    "FlagMetadata",
    "FlagReason",
    "FlagTestEvaluation",
    "HogFunction",
    "HogFunctionStatus",
    "HogFunctionTemplate",
    "LocalEvaluationResponse",
    "Multivariate",
    "Organization",
    "Page",
    "Playlist",
    "PluginConfig",
    "Project",
    "PropertyAnalysis",
    "PropertyFilter",
    "Recording",
    "RecordingsCounts",
    "RecordingsPage",
    "SavedFiltersCounts",
    "Transformation",
    "User",
    "UtcDatetime",
    "Variant",
    "WireModel",
    "to_wire",
]

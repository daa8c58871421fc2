"""Record lists -> typed pandas DataFrames, and a CSV round trip that keeps dtypes and JSON objects.

Conventions: one row per record, identity columns first, nested users flattened (``created_by_email``, ...),
``datetime64[us, UTC]`` timestamps, nullable ``Int64`` / ``Float64`` / ``boolean``, pandas ``str`` text, JSON
fields kept as Python objects; unknown record fields become extra columns at the end; key fields are dropped.
"""

from __future__ import annotations

from analytics_nb.frames._convert import (
    PLAYLIST_ROWS,
    activity_frame,
    decide_frame,
    events_frame,
    feature_flags_frame,
    playlists_frame,
    recordings_frame,
    transformation_sources_frame,
    transformations_frame,
)
from analytics_nb.frames._csv import HEADER_PREFIX, FormulaCellsWarning, read_csv, to_csv, to_csv_batches
from analytics_nb.frames._hog_functions import hog_function_templates_frame, hog_functions_frame
from analytics_nb.frames._rows import RowFormat
from analytics_nb.frames._schema import DTYPES, KNOWN_COLUMNS, FrameParts

__all__ = [
    "DTYPES",
    "HEADER_PREFIX",
    "KNOWN_COLUMNS",
    "PLAYLIST_ROWS",
    "FormulaCellsWarning",
    "FrameParts",
    "RowFormat",
    "activity_frame",
    "decide_frame",
    "events_frame",
    "feature_flags_frame",
    "hog_function_templates_frame",
    "hog_functions_frame",
    "playlists_frame",
    "read_csv",
    "recordings_frame",
    "to_csv",
    "to_csv_batches",
    "transformation_sources_frame",
    "transformations_frame",
]

"""Session recording playlists, their recordings counts and the recordings list."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from analytics_nb.models._common import Number, User, UtcDatetime, WireModel

__all__ = [
    "CollectionCounts",
    "Playlist",
    "Recording",
    "RecordingsCounts",
    "RecordingsPage",
    "SavedFiltersCounts",
]


class SavedFiltersCounts(WireModel):
    """``recordings_counts.saved_filters``: cached counts of a filters playlist (null without cache)."""

    count: int | None = None
    has_more: bool | None = None
    watched_count: int | None = None
    increased: bool | None = None
    last_refreshed_at: UtcDatetime | None = None


class CollectionCounts(WireModel):
    """``recordings_counts.collection``: number of items (null when 0) and how many were watched."""

    count: int | None = None
    watched_count: int | None = None


class RecordingsCounts(WireModel):
    """The read-only ``recordings_counts`` object of a playlist."""

    saved_filters: SavedFiltersCounts | None = None
    collection: CollectionCounts | None = None


class Playlist(WireModel):
    """A session recording playlist as the service sends it (``type`` is "collection" or "filters")."""

    id: int | None = None
    short_id: str | None = None
    name: str | None = None
    derived_name: str | None = None
    description: str | None = None
    pinned: bool | None = None
    created_at: UtcDatetime | None = None
    created_by: User | None = None
    deleted: bool | None = None
    filters: Any = None
    last_modified_at: UtcDatetime | None = None
    last_modified_by: User | None = None
    recordings_counts: RecordingsCounts | None = None
    type: str | None = None
    is_synthetic: bool | None = None


class Recording(WireModel):
    """One session recording (SessionRecordingSerializer) as listed by a playlist's ``recordings`` action."""

    id: str
    distinct_id: str | None = None
    viewed: bool | None = None
    viewers: list[str] | None = None
    recording_duration: Number | None = None
    active_seconds: Number | None = None
    inactive_seconds: Number | None = None
    start_time: UtcDatetime | None = None
    end_time: UtcDatetime | None = None
    click_count: int | None = None
    keypress_count: int | None = None
    mouse_activity_count: int | None = None
    console_log_count: int | None = None
    console_warn_count: int | None = None
    console_error_count: int | None = None
    start_url: str | None = None
    person: dict[str, Any] | None = None
    storage: str | None = None
    retention_period_days: int | None = None
    expiry_time: UtcDatetime | None = None
    recording_ttl: int | None = None
    snapshot_source: str | None = None
    ongoing: bool | None = None
    activity_score: Number | None = None


class RecordingsPage(WireModel):
    """The ``GET .../playlists/:short_id/recordings/`` body: ``{results, has_next, version}``."""

    results: list[Recording] = Field(default_factory=list)
    has_next: bool | None = None
    version: int | None = None

"""Record lists (as the API returns them, or models) -> typed pandas DataFrames, one row per record."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from analytics_nb.frames._rows import RowFormat
from analytics_nb.frames._schema import (
    Kind,
    as_records,
    build_frame,
    column,
    register_known,
    user_columns,
)
from analytics_nb.models import CaptureBatch, DecideResponse, FeatureFlag, LocalEvaluationResponse

__all__ = [
    "PLAYLIST_ROWS",
    "activity_frame",
    "decide_frame",
    "events_frame",
    "feature_flags_frame",
    "playlists_frame",
    "recordings_frame",
    "transformation_sources_frame",
    "transformations_frame",
]

PLAYLIST_COLUMNS: list[tuple[str, Kind]] = [
    ("id", "int"),
    ("short_id", "str"),
    ("name", "str"),
    ("derived_name", "str"),
    ("type", "str"),
    ("description", "str"),
    ("pinned", "bool"),
    ("deleted", "bool"),
    ("is_synthetic", "bool"),
    ("created_at", "datetime"),
    ("last_modified_at", "datetime"),
]
PLAYLIST_TAIL: list[tuple[str, Kind]] = [("filters", "json"), ("recordings_counts", "json")]

RECORDING_COLUMNS: list[tuple[str, Kind]] = [
    ("id", "str"),
    ("distinct_id", "str"),
    ("start_time", "datetime"),
    ("end_time", "datetime"),
    ("recording_duration", "float"),
    ("active_seconds", "float"),
    ("inactive_seconds", "float"),
    ("viewed", "bool"),
    ("ongoing", "bool"),
    ("start_url", "str"),
    ("click_count", "int"),
    ("keypress_count", "int"),
    ("mouse_activity_count", "int"),
    ("console_log_count", "int"),
    ("console_warn_count", "int"),
    ("console_error_count", "int"),
    ("activity_score", "float"),
    ("storage", "str"),
    ("snapshot_source", "str"),
    ("retention_period_days", "int"),
    ("recording_ttl", "int"),
    ("expiry_time", "datetime"),
    ("viewers", "json"),
    ("person", "json"),
]

TRANSFORMATION_COLUMNS: list[tuple[str, Kind]] = [
    ("id", "int"),
    ("name", "str"),
    ("plugin_type", "str"),
    ("description", "str"),
    ("url", "str"),
    ("icon", "str"),
    ("tag", "str"),
    ("latest_tag", "str"),
    ("is_global", "bool"),
    ("hog_function_migration_available", "bool"),
    ("organization_id", "str"),
    ("organization_name", "str"),
    ("config_schema", "json"),
    ("capabilities", "json"),
    ("metrics", "json"),
    ("public_jobs", "json"),
]

SOURCE_COLUMNS: list[tuple[str, Kind]] = [
    ("transformation_id", "int"),
    ("filename", "str"),
    ("content", "str"),
]

FLAG_COLUMNS: list[tuple[str, Kind]] = [
    ("id", "int"),
    ("key", "str"),
    ("name", "str"),
    ("active", "bool"),
    ("deleted", "bool"),
    ("version", "int"),
    ("rollout_summary", "str"),
    ("rollout_percentage", "float"),
    ("condition_count", "int"),
    ("variant_keys", "json"),
    ("aggregation_group_type_index", "int"),
    ("ensure_experience_continuity", "bool"),
    ("depends_on", "json"),
    ("has_payloads", "bool"),
    ("payloads", "json"),
    ("filters", "json"),
    ("tags", "json"),
    ("team_id", "int"),
    ("created_at", "datetime"),
]
FLAG_RECORD_FIELDS = {
    "id",
    "key",
    "name",
    "active",
    "deleted",
    "version",
    "rollout_percentage",
    "ensure_experience_continuity",
    "filters",
    "tags",
    "team_id",
    "created_at",
    "created_by",
}

DECIDE_COLUMNS: list[tuple[str, Kind]] = [
    ("key", "str"),
    ("value", "json"),
    ("enabled", "bool"),
    ("variant", "str"),
    ("payload", "json"),
    ("reason", "str"),
    ("condition_index", "int"),
    ("reason_description", "str"),
    ("flag_id", "int"),
    ("version", "int"),
    ("failed", "bool"),
]

EVENT_COLUMNS: list[tuple[str, Kind]] = [
    ("uuid", "str"),
    ("event", "str"),
    ("distinct_id", "str"),
    ("timestamp", "datetime"),
    ("properties", "json"),
]

ACTIVITY_COLUMNS: list[tuple[str, Kind]] = [
    ("id", "str"),
    ("scope", "str"),
    ("item_id", "str"),
    ("activity", "str"),
    ("created_at", "datetime"),
    ("detail_name", "str"),
    ("changes", "str"),
    ("is_system", "bool"),
    ("is_staff", "bool"),
    ("unread", "bool"),
]
ACTIVITY_TAIL: list[tuple[str, Kind]] = [("detail", "json")]
_DISTINCT_ID: list[tuple[str, Kind]] = [("distinct_id", "str")]

for _cols in (
    PLAYLIST_COLUMNS,
    user_columns("created_by"),
    user_columns("last_modified_by"),
    PLAYLIST_TAIL,
    RECORDING_COLUMNS,
    TRANSFORMATION_COLUMNS,
    SOURCE_COLUMNS,
    FLAG_COLUMNS,
    DECIDE_COLUMNS,
    EVENT_COLUMNS,
    ACTIVITY_COLUMNS,
    user_columns("user"),
    ACTIVITY_TAIL,
    _DISTINCT_ID,
):
    register_known(_cols)


def playlists_frame(records: Any) -> pd.DataFrame:
    """One row per playlist: identity, flags, UTC timestamps, flattened ``created_by_*`` and
    ``last_modified_by_*``, then ``filters`` and ``recordings_counts`` as Python objects, then extra fields.

    Args:
        records: Playlists (models or dicts) or a page of them.
    """
    rows = as_records(records, "playlists_frame")
    return build_frame(rows, PLAYLIST_COLUMNS, users=("created_by", "last_modified_by"), tail=PLAYLIST_TAIL)


def recordings_frame(records: Any) -> pd.DataFrame:
    """One row per session recording (a playlist's ``recordings`` list, or the whole page).

    Args:
        records: Recordings (models or dicts) or a recordings page.
    """
    return build_frame(as_records(records, "recordings_frame"), RECORDING_COLUMNS)


def transformations_frame(records: Any) -> pd.DataFrame:
    """One row per pipeline transformation; JSON fields (config_schema, ...) stay Python objects.

    Args:
        records: Transformations (models or dicts) or a page of them.
    """
    return build_frame(as_records(records, "transformations_frame"), TRANSFORMATION_COLUMNS)


def transformation_sources_frame(sources: Any) -> pd.DataFrame:
    """One row per (transformation id, filename) with the file content.

    ``sources`` is ``{transformation_id: {filename: content}}`` (what the ``source`` action returns, per
    id) or an iterable of ``(transformation_id, {filename: content})`` pairs. A ``None`` content is NA.

    Args:
        sources: ``{transformation id: {filename: content}}`` or ``(id, files)`` pairs.
    """
    pairs: Iterable[Any]
    if isinstance(sources, Mapping):
        pairs = sources.items()
    elif isinstance(sources, str | bytes) or sources is None:
        raise TypeError(
            "transformation_sources_frame: expected {transformation_id: {filename: content}} or "
            f"(id, files) pairs, got {type(sources).__name__}"
        )
    else:
        pairs = sources
    ids: list[Any] = []
    names: list[Any] = []
    contents: list[Any] = []
    for pair in pairs:
        try:
            tid, files = pair
        except (TypeError, ValueError):
            raise TypeError(
                "transformation_sources_frame: expected (transformation_id, {filename: content}), "
                f"got {pair!r}"
            ) from None
        if not isinstance(files, Mapping):
            raise TypeError(
                f"transformation_sources_frame: files of transformation {tid!r} must be a mapping "
                f"filename -> content, got {type(files).__name__}"
            )
        for filename, content in files.items():
            ids.append(tid)
            names.append(filename)
            contents.append(content)
    data = {
        "transformation_id": column(ids, "int", "transformation_id"),
        "filename": column(names, "str", "filename"),
        "content": column(contents, "str", "content"),
    }
    return pd.DataFrame(data, index=pd.RangeIndex(len(ids)), copy=False)


def _fmt_pct(value: Any) -> str:
    if value is None:
        return "100%"
    number = float(value)
    return f"{int(number)}%" if number.is_integer() else f"{number:g}%"


def _flag_row(raw: Mapping[str, Any]) -> dict[str, Any]:
    flag = FeatureFlag.model_validate(raw)
    filters = flag.filters
    parts: list[str] = []
    percentages: list[float] = []
    for group in filters.groups:
        pct = 100.0 if group.rollout_percentage is None else float(group.rollout_percentage)
        percentages.append(pct)
        where = ", ".join(str(p.key) for p in group.properties)
        text = _fmt_pct(group.rollout_percentage)
        if where:
            text += f" where {where}"
        if group.variant:
            text += f" -> {group.variant}"
        parts.append(text)
    if not filters.groups:
        parts.append("no conditions")
    rollout = flag.rollout_percentage
    if rollout is None and percentages:
        rollout = max(percentages)
    row = {k: v for k, v in raw.items() if k not in FLAG_RECORD_FIELDS}
    row.update(
        id=flag.id,
        key=flag.key,
        name=flag.name,
        active=flag.active,
        deleted=flag.deleted,
        version=flag.version,
        rollout_summary="; ".join(parts),
        rollout_percentage=rollout,
        condition_count=len(filters.groups),
        variant_keys=flag.variant_keys,
        aggregation_group_type_index=filters.aggregation_group_type_index,
        ensure_experience_continuity=flag.ensure_experience_continuity,
        depends_on=flag.dependencies,
        has_payloads=bool(filters.payloads),
        payloads=dict(filters.payloads),
        filters=raw.get("filters"),
        tags=raw.get("tags"),
        team_id=flag.team_id,
        created_at=raw.get("created_at"),
        created_by=raw.get("created_by"),
    )
    return row


def feature_flags_frame(records: Any) -> pd.DataFrame:
    """One row per flag: key, id, active, a readable rollout summary, variant keys, dependencies and the raw
    ``filters`` / ``payloads`` as Python objects (also accepts a local-evaluation response with ``flags``).

    Args:
        records: Flags (models or dicts), a page of them or a local-evaluation response.
    """
    if isinstance(records, LocalEvaluationResponse):
        records = records.flags
    elif isinstance(records, Mapping) and isinstance(records.get("flags"), list):
        records = records["flags"]
    rows = [_flag_row(r) for r in as_records(records, "feature_flags_frame")]
    return build_frame(rows, FLAG_COLUMNS, users=("created_by",))


def decide_frame(response: Any, *, distinct_id: str | None = None) -> pd.DataFrame:
    """One row per flag of a decide / flags response (any version): key, value, enabled, variant, payload,
    reason. Response-level facts go to ``df.attrs`` (``errors_while_computing_flags``, ``request_id``,
    ``quota_limited``).
    With ``distinct_id`` the frame starts with a ``distinct_id`` column.

    Args:
        response: A decide or flags response (dict or `DecideResponse`), any version.
        distinct_id: The person the response is for, put in a first column. None: no such column.
    """
    if isinstance(response, DecideResponse):
        resp = response
    elif isinstance(response, Mapping):
        resp = DecideResponse.model_validate(response)
    else:
        raise TypeError(
            f"decide_frame: expected a DecideResponse or its JSON dict, got {type(response).__name__}"
        )
    rows: list[dict[str, Any]] = []
    if resp.flags is not None:
        for key, detail in resp.flags.items():
            reason = detail.reason
            meta = detail.metadata
            rows.append(
                {
                    "key": key,
                    "value": detail.value,
                    "enabled": None if detail.failed else detail.enabled,  # failed: unknown, not False
                    "variant": detail.variant,
                    "payload": meta.payload if meta is not None and detail.enabled else None,
                    "reason": reason.code if reason is not None else None,
                    "condition_index": reason.condition_index if reason is not None else None,
                    "reason_description": reason.description if reason is not None else None,
                    "flag_id": meta.id if meta is not None else None,
                    "version": meta.version if meta is not None else None,
                    "failed": bool(detail.failed),
                }
            )
    else:
        keys = list(resp.feature_flags) + [
            k for k in resp.feature_flag_payloads if k not in resp.feature_flags
        ]
        for key in keys:
            value = resp.feature_flags.get(key)
            rows.append(
                {
                    "key": key,
                    "value": value,
                    "enabled": None if value is None else value is not False,
                    "variant": value if isinstance(value, str) else None,
                    "payload": resp.feature_flag_payloads.get(key),
                }
            )
    spec = DECIDE_COLUMNS
    if distinct_id is not None:
        spec = [("distinct_id", "str"), *DECIDE_COLUMNS]
        for row in rows:
            row["distinct_id"] = distinct_id
    df = build_frame(rows, spec, extras=False)
    df.attrs.update(
        errors_while_computing_flags=resp.errors_while_computing_flags,
        request_id=resp.request_id,
        quota_limited=resp.quota_limited,
    )
    return df


def events_frame(events: Any) -> pd.DataFrame:
    """One row per captured event: uuid, event, distinct_id, UTC timestamp, properties (dict), then extras.

    Accepts event dicts, ``CaptureEvent`` models or a ``{"batch": [...]}`` body; key fields are left out.

    Args:
        events: Event dicts, ``CaptureEvent`` models or a ``{"batch": [...]}`` body.
    """
    if isinstance(events, CaptureBatch):
        events = events.batch
    elif isinstance(events, Mapping) and isinstance(events.get("batch"), list):
        events = events["batch"]
    return build_frame(as_records(events, "events_frame"), EVENT_COLUMNS)


def _change_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _changes_text(changes: Any) -> str | None:
    """``field: before -> after; ...`` for the ``detail.changes`` of an activity entry (None: none)."""
    if not isinstance(changes, list) or not changes:
        return None
    parts: list[str] = []
    for change in changes:
        if not isinstance(change, Mapping):
            parts.append(_change_value(change))
            continue
        what = change.get("field") or change.get("type") or "?"
        action = change.get("action")
        if "before" in change or "after" in change:
            parts.append(
                f"{what}: {_change_value(change.get('before'))} -> {_change_value(change.get('after'))}"
            )
        else:
            parts.append(f"{what}: {action}" if action else str(what))
    return "; ".join(parts)


def activity_frame(entries: Any) -> pd.DataFrame:
    """One row per activity log entry (``client.transformations.activity()`` results, a page, or entry dicts):
    id, scope, item_id, activity, UTC created_at, ``detail_name`` and a readable ``changes`` summary, flags,
    the flattened ``user_*`` columns, then ``detail`` as a Python object and any extra fields.

    Args:
        entries: Activity log entries (models or dicts), or a page of them.
    """
    rows = as_records(entries, "activity_frame")
    out: list[dict[str, Any]] = []
    for i, row in enumerate(rows):
        detail = row.get("detail")
        if detail is not None and not isinstance(detail, Mapping):
            raise ValueError(
                f"activity_frame: entry {i} field 'detail': expected an object, got {type(detail).__name__}; "
                "pass entries as the activity endpoint returns them"
            )
        item_id = row.get("item_id")
        extra = {
            "detail_name": detail.get("name") if detail else None,
            "changes": _changes_text(detail.get("changes")) if detail else None,
        }
        if item_id is not None and not isinstance(item_id, str):
            extra["item_id"] = str(item_id)  # the service sends text; some callers give the numeric id
        out.append({**row, **extra})
    return build_frame(out, ACTIVITY_COLUMNS, users=("user",), tail=ACTIVITY_TAIL)


PLAYLIST_ROWS = RowFormat(
    "Playlist",
    spec=PLAYLIST_COLUMNS,
    users=("created_by", "last_modified_by"),
    tail=PLAYLIST_TAIL,
    build=playlists_frame,
)
"""Playlist listing pages decoded into compact rows (the ``fast`` extra), building the ``playlists_frame``."""

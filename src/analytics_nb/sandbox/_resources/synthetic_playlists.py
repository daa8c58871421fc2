"""The virtual, read-only collections today's service mixes into the playlist list (cloud profile).

Facts from PostHog `posthog/session_recordings/synthetic_playlists.py` and its tests
(`test_session_recording_playlist.py` expects 7 with EE, as Cloud runs): seven static ones (ids -1 to -7)
and, behind the `replay-new-detected-url-collections` flag, one dynamic "New URL" collection per URL pattern
first seen in the last 14 days and not in the 90 before (top 20 by sessions; short id
`synthetic-new-url-<sha256(url)[:12]>`, ids from -1000 down). The sandbox derives each one's recordings from
what it stores: watched ones, 5+ console errors (frustration), expiring within 10 days (30-day retention),
and every URL each recording visited (`urls`, else its start URL). Commented, shared, exported and
summarised sessions do not exist here, so those are empty.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlparse

from .._store import Store, loads

#: The switch (`Sandbox.set_switch("new_url_playlists")`) standing in for the service's feature flag.
NEW_URL_SWITCH = "new_url_playlists"
NEW_URL_PREFIX = "synthetic-new-url-"
LOOKBACK_DAYS = 14
HISTORY_DAYS = 90
MAX_NEW_URLS = 20
#: The (session, URL) rows the service reads at most, newest session first (`LIMIT 50000`).
MAX_URL_ROWS = 50_000
MIN_NEW_URL_ID = -1000
RETENTION_DAYS = 30
EXPIRY_WINDOW_DAYS = 10


@dataclass(frozen=True)
class Synthetic:
    """One synthetic playlist's definition (`SyntheticPlaylistDefinition`)."""

    id: int
    short_id: str
    name: str
    description: str
    url: str | None = None


STATIC = (
    Synthetic(-1, "synthetic-watch-history", "Watch history", "Recordings you have watched"),
    Synthetic(-2, "synthetic-commented", "Recordings with comments", "Recordings that have team comments"),
    Synthetic(-3, "synthetic-shared", "Shared recordings", "Recordings that have been shared externally"),
    Synthetic(
        -4,
        "synthetic-exported",
        "Exported recordings",
        "Recordings that have been exported as clips or screenshots",
    ),
    Synthetic(-6, "synthetic-expiring", "Expiring soon", "Recordings that will expire in the next 10 days"),
    Synthetic(
        -7,
        "synthetic-frustrated",
        "Frustration signals",
        "Sessions with rage clicks or errors in the last 7 days",
    ),
    Synthetic(
        -5,
        "synthetic-summarised",
        "Summarised sessions",
        "Sessions with AI-generated summaries. Ask PostHog AI to summarize sessions for you.",
    ),
)

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_NUMBER = re.compile(r"^\d+$")
_HASHLIKE = re.compile(r"^[a-z0-9_-]{16,}$", re.I)


def normalize_url(url: str) -> str:
    """A URL's pattern as the service groups them: no query or fragment; uuid, numeric and long hash-like
    path segments replaced by `{uuid}`, `{id}`, `{hash}`; no trailing slash except the root."""
    try:
        parsed = urlparse(url)
    except ValueError:
        return url
    segments = []
    for segment in parsed.path.split("/"):
        if segment and _UUID.match(segment):
            segment = "{uuid}"
        elif segment and _NUMBER.match(segment):
            segment = "{id}"
        elif segment and _HASHLIKE.match(segment):
            segment = "{hash}"
        segments.append(segment)
    path = "/".join(segments)
    normalized = f"{parsed.scheme}://{parsed.netloc}{path}"
    if normalized.endswith("/") and len(path) > 1:
        normalized = normalized.rstrip("/")
    return normalized


def _stamp(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_url_sessions(store: Store, project_id: int) -> dict[str, list[str]]:
    """Pattern -> sorted session ids, for the (at most 20) patterns first seen in the last 14 days and not
    in the 90 before, most sessions first (ties by pattern).

    As `NewUrlsSyntheticPlaylistSource._get_new_urls_with_sessions` reads `session_replay_events`: one row
    per (session, URL in its `all_urls`), dated by the session's start (not the visit), sessions started in
    the last 90 days, empty URLs dropped, the newest 50,000 rows; a pattern's first sighting is its oldest
    row, and a session counts for it when that session started within the 14-day lookback."""
    now = datetime.now(UTC)
    now_stamp, lookback = _stamp(now), _stamp(now - timedelta(days=LOOKBACK_DAYS))
    rows = store.query(
        "SELECT session_id, start_url, urls, start_time FROM recordings WHERE project_id=? AND start_time>=? "
        "ORDER BY start_time DESC",
        (project_id, _stamp(now - timedelta(days=HISTORY_DAYS))),
    )
    pairs = [
        (row["session_id"], url, row["start_time"])
        for row in rows
        for url in dict.fromkeys(_urls_of(row))
        if url
    ][:MAX_URL_ROWS]
    first_seen: dict[str, str] = {}
    sessions: dict[str, set[str]] = {}
    for session_id, url, started in pairs:
        pattern = normalize_url(url)
        if pattern not in first_seen or started < first_seen[pattern]:
            first_seen[pattern] = started
        if lookback <= started <= now_stamp:
            sessions.setdefault(pattern, set()).add(session_id)
    fresh = {p: len(sessions.get(p, ())) for p, seen in first_seen.items() if lookback <= seen <= now_stamp}
    top = sorted(fresh.items(), key=lambda item: (-item[1], item[0]))[:MAX_NEW_URLS]
    return {pattern: sorted(sessions.get(pattern, ())) for pattern, _ in top}


def _urls_of(row: Any) -> list[str]:
    """A stored recording's visited URLs (`urls`, a JSON list; older rows: the start URL alone)."""
    stored = loads(row["urls"]) if row["urls"] else None
    if isinstance(stored, list):
        return [u for u in stored if isinstance(u, str)]
    return [row["start_url"]] if row["start_url"] else []


def _url_hash(url: str) -> str:
    return hashlib.sha256(url.encode()).hexdigest()[:12]


def _new_url_playlist(url: str, index: int) -> Synthetic:
    display = url if len(url) <= 60 else url[:57] + "..."
    return Synthetic(
        MIN_NEW_URL_ID - index,
        NEW_URL_PREFIX + _url_hash(url),
        f"New URL: {display}",
        f"Recordings from the last {LOOKBACK_DAYS} days on a page not previously seen within the last "
        f"{HISTORY_DAYS} days",
        url,
    )


def all_synthetic(store: Store, project_id: int, *, new_urls: bool) -> list[Synthetic]:
    """The static ones, then (when the switch is on) one per new URL pattern."""
    found = list(STATIC)
    if new_urls:
        found += [_new_url_playlist(url, i) for i, url in enumerate(new_url_sessions(store, project_id))]
    return found


def find_synthetic(store: Store, project_id: int, short_id: str, *, new_urls: bool) -> Synthetic | None:
    """A synthetic playlist by short id (a dynamic one only while its URL is still new)."""
    static = next((s for s in STATIC if s.short_id == short_id), None)
    if static is not None or not (new_urls and short_id.startswith(NEW_URL_PREFIX)):
        return static
    for url in new_url_sessions(store, project_id):
        if NEW_URL_PREFIX + _url_hash(url) == short_id:
            return _new_url_playlist(url, 0)
    return None


def synthetic_items(store: Store, project_id: int, playlist: Synthetic) -> list[str]:
    """The session ids a synthetic playlist lists, in its order."""
    if playlist.url is not None:
        return new_url_sessions(store, project_id).get(playlist.url, [])
    now = datetime.now(UTC)
    params: tuple[str, ...] = ()
    if playlist.short_id == "synthetic-watch-history":
        sql = "viewed=1"
    elif playlist.short_id == "synthetic-frustrated":
        sql, params = "console_error_count>=5 AND start_time>=?", (_stamp(now - timedelta(days=7)),)
    elif playlist.short_id == "synthetic-expiring":
        oldest = now - timedelta(days=RETENTION_DAYS)
        sql = "start_time>=? AND start_time<=?"
        params = (_stamp(oldest), _stamp(oldest + timedelta(days=EXPIRY_WINDOW_DAYS)))
    else:
        return []
    rows = store.query(
        f"SELECT session_id FROM recordings WHERE project_id=? AND {sql} ORDER BY start_time DESC",
        (project_id, *params),
    )
    return [r["session_id"] for r in rows]


def serialize_synthetic(store: Store, project_id: int, playlist: Synthetic) -> dict[str, Any]:
    """The playlist in the serializer's shape (`count_synthetic_playlist` fills `collection`)."""
    ids = synthetic_items(store, project_id, playlist)
    watched = 0
    if ids:
        marks = ",".join("?" * len(ids))
        row = store.query_one(
            "SELECT COUNT(*) AS n FROM recordings WHERE project_id=? AND viewed=1 "
            f"AND session_id IN ({marks})",
            (project_id, *ids),
        )
        watched = int(row["n"]) if row else 0
    return {
        "id": playlist.id,
        "short_id": playlist.short_id,
        "name": playlist.name,
        "derived_name": None,
        "description": playlist.description,
        "pinned": False,
        "created_at": None,
        "created_by": None,
        "deleted": False,
        "filters": {},
        "last_modified_at": None,
        "last_modified_by": None,
        "recordings_counts": {
            "saved_filters": {
                "count": None,
                "has_more": None,
                "watched_count": None,
                "increased": None,
                "last_refreshed_at": None,
            },
            "collection": {
                "count": len(ids) or None,
                "has_more": False,
                "watched_count": watched,
                "increased": None,
                "last_refreshed_at": None,
            },
        },
        "type": "collection",
        "is_synthetic": True,
    }

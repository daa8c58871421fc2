"""Small HTTP helpers shared by the sandbox contract tests (plain httpx on loopback)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from analytics_nb.sandbox import Sandbox


def api(sb: Sandbox, key: str | None = None) -> httpx.Client:
    """An httpx client on the sandbox with a personal key (the owner's by default)."""
    headers = {} if key == "" else {"Authorization": f"Bearer {key or sb.personal_api_key}"}
    return httpx.Client(base_url=sb.url, headers=headers, timeout=10)


def playlists_path(sb: Sandbox, suffix: str = "") -> str:
    return f"/api/projects/{sb.project_id}/session_recording_playlists/{suffix}"


def transformations_path(sb: Sandbox, suffix: str = "") -> str:
    return f"/api/organizations/{sb.organization_id}/pipeline_transformations/{suffix}"


def error(resp: httpx.Response) -> dict[str, Any]:
    body = resp.json()
    assert set(body) == {"type", "code", "detail", "attr"}, body
    return body


def playlist_records(client: Any, **filters: Any) -> list[dict[str, Any]]:
    """The playlists a sync client's listing reads, as the raw wire dicts (the listing's own paging path,
    no row decoding): what its ``frame()`` must equal once built by ``frames.playlists_frame``."""

    async def collect() -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = []
        async for page in await client._async.playlists._pages(**filters):
            records.extend(page)
        return records

    result: list[dict[str, Any]] = client.run(collect())
    return result


def set_flag_fields(sb: Sandbox, key: str, **fields: Any) -> None:
    """Write stored fields of the live flag ``key`` that the API does not set (``created_at``,
    ``last_called_at``, ``experiment_set``, another ``created_by``): what PostHog's tests set with the ORM."""
    row = sb.ctx.store.query_one(
        "SELECT id, body FROM feature_flags WHERE project_id=? AND key=? AND deleted=0", (sb.project_id, key)
    )
    assert row is not None, key
    body = {**json.loads(row["body"]), **fields}
    sb.ctx.store.execute("UPDATE feature_flags SET body=? WHERE id=?", (json.dumps(body), row["id"]))


def days_ago(days: float) -> str:
    """A timestamp ``days`` before now in the service's wire format."""
    return (datetime.now(UTC) - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def drop_version_entry(sb: Sandbox, flag_id: int, version: int) -> None:
    """Delete the activity entry that made ``version`` of the flag (what PostHog's test does with the ORM)."""
    rows = sb.ctx.store.query("SELECT id, detail FROM activity_log WHERE item_id=?", (str(flag_id),))
    for row in rows:
        changes = json.loads(row["detail"]).get("changes") or []
        if any(c["field"] == "version" and c["after"] == version for c in changes):
            sb.ctx.store.execute("DELETE FROM activity_log WHERE id=?", (row["id"],))
            return
    raise AssertionError(f"no entry made version {version}")

"""HTTP-level: the sandbox's /decide and /flags get the engine's per-flag isolation, bounded regex and the
project's time zone for free (real HTTP on 127.0.0.1, definitions stored as an older build would have)."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from analytics_nb.sandbox import Sandbox


def _store_flag(sb: Sandbox, key: str, filters: dict[str, Any]) -> None:
    """A stored row that bypasses the API's write-time checks (a definition PostHog's UI saved)."""
    from analytics_nb.sandbox._resources.feature_flags import invalidate_flags

    body = {"key": key, "active": True, "filters": filters}
    sb.ctx.store.execute(
        "INSERT INTO feature_flags(project_id, key, body, deleted, version) VALUES (?,?,?,0,1)",
        (sb.project_id, key, json.dumps(body)),
    )
    invalidate_flags(sb.ctx.store, sb.project_id)


def _decide(http: httpx.Client, sb: Sandbox, path: str, **extra: Any) -> dict[str, Any]:
    r = http.post(path, json={"api_key": sb.project_api_key, "distinct_id": "user-1", **extra})
    assert r.status_code == 200, r.text
    return r.json()


def test_one_bad_flag_never_stops_the_others(empty_sandbox: Sandbox) -> None:
    sb = empty_sandbox
    everyone = {"groups": [{"properties": [], "rollout_percentage": 100}]}
    _store_flag(sb, "good", everyone)
    _store_flag(
        sb,
        "broken",
        {"groups": [{"properties": [{"key": "p", "operator": "no_such_op", "value": 1, "type": "person"}]}]},
    )
    _store_flag(sb, "also-good", everyone)
    with httpx.Client(base_url=sb.url, timeout=10) as http:
        v3 = _decide(http, sb, "/decide/?v=3")
        # The legacy map keeps every record, a failed one as its `enabled: false`
        # (rust/feature-flags/src/api/types.rs `LegacyFlagsResponse::from_response`); the failure is told by
        # errorsWhileComputingFlags and, per flag, by `failed: true` in the detailed and typed records below.
        assert v3["featureFlags"] == {"good": True, "also-good": True, "broken": False}
        assert v3["errorsWhileComputingFlags"] is True
        detailed = _decide(http, sb, "/flags/?v=2")
        assert detailed["flags"]["broken"]["failed"] is True
        assert detailed["flags"]["good"]["enabled"] is True and detailed["flags"]["also-good"]["enabled"]
        # posthog-python 7.91.1's default shape: the failed flag has no value
        typed = _decide(http, sb, "/flags/?v=4")
        assert typed["flags"]["broken"]["failed"] is True and typed["flags"]["broken"]["value"] is None
        assert typed["flags"]["good"]["value"] is True and typed["flags"]["also-good"]["value"] is True
        # asking only for a good flag is answered without error
        only = _decide(http, sb, "/flags/?v=2", flag_keys_to_evaluate=["good"])
        assert set(only["flags"]) == {"good"} and only["errorsWhileComputingFlags"] is False


def test_catastrophic_regex_is_bounded_in_decide(empty_sandbox: Sandbox) -> None:
    sb = empty_sandbox
    regex = {"key": "name", "operator": "regex", "value": "^(a+)+$", "type": "person"}
    _store_flag(sb, "redos", {"groups": [{"properties": [regex], "rollout_percentage": 100}]})
    with httpx.Client(base_url=sb.url, timeout=10) as http:
        start = time.perf_counter()
        data = _decide(http, sb, "/decide/?v=3", person_properties={"name": "a" * 40 + "b"})
        assert time.perf_counter() - start < 3.0
        assert data["featureFlags"]["redos"] is False and data["errorsWhileComputingFlags"] is False
        data = _decide(http, sb, "/decide/?v=3", person_properties={"name": "a" * 40})
        assert data["featureFlags"]["redos"] is True


def test_null_and_team_time_zone_follow_the_service(empty_sandbox: Sandbox) -> None:
    sb = empty_sandbox
    nulls = {"key": "plan", "operator": "is_set", "value": "is_set", "type": "person"}
    _store_flag(sb, "has-plan", {"groups": [{"properties": [nulls], "rollout_percentage": 100}]})
    naive = {"key": "seen", "operator": "is_date_before", "value": "2024-06-01T00:00:00Z", "type": "person"}
    _store_flag(sb, "early", {"groups": [{"properties": [naive], "rollout_percentage": 100}]})
    with httpx.Client(base_url=sb.url, timeout=10) as http:
        props = {"plan": None, "seen": "2024-06-01 01:30:00"}
        data = _decide(http, sb, "/decide/?v=3", person_properties=props)
        assert data["featureFlags"]["has-plan"] is True  # a null property is set
        assert data["featureFlags"]["early"] is False  # UTC project: 01:30Z is after midnight
        sb.ctx.store.execute("UPDATE projects SET timezone='Europe/Berlin' WHERE id=?", (sb.project_id,))
        from analytics_nb.sandbox._resources.feature_flags import invalidate_flags

        invalidate_flags(sb.ctx.store, sb.project_id)
        data = _decide(http, sb, "/decide/?v=3", person_properties=props)
        assert data["featureFlags"]["early"] is True  # Berlin: 01:30 local is 23:30Z the day before

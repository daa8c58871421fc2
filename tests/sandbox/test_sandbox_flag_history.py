"""A flag's history in the sandbox, as PostHog serves it (real HTTP, plain httpx).

Each test names the PostHog source it follows:

* the activity bodies: ``test_get_feature_flag_activity``, ``test_get_feature_flag_activity_for_all_flags``,
  ``test_paging_specific_feature_flag_activity`` (products/feature_flags/backend/api/test/
  test_feature_flag.py); ``ActivityLogSerializer`` (posthog/models/activity_logging/serializers.py),
  ``activity_page_response`` (posthog/models/activity_logging/activity_page.py);
* ``versions/:n``: the ``versions`` action and ``FeatureFlagVersionResponseSerializer``
  (products/feature_flags/backend/api/feature_flag.py), ``reconstruct_flag_at_version``
  (products/feature_flags/backend/version_history.py) and products/feature_flags/backend/api/test/
  test_feature_flag_version_history.py (``test_missing_transition_refuses_reconstruction``,
  ``test_encrypted_payload_flag_is_refused``).
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from _flags import condition, flag, prop
from _sandbox_helpers import api, drop_version_entry, error
from analytics_nb.sandbox import Sandbox


def _path(sb: Sandbox, suffix: str = "") -> str:
    return f"/api/projects/{sb.project_id}/feature_flags/{suffix}"


def _create(http: httpx.Client, sb: Sandbox, key: str, rollout: float = 10, **extra: Any) -> dict[str, Any]:
    resp = http.post(_path(sb), json={**flag(key, condition(rollout=rollout)), **extra})
    assert resp.status_code == 201, resp.text
    created: dict[str, Any] = resp.json()
    return created


def _patch(http: httpx.Client, sb: Sandbox, flag_id: int, **fields: Any) -> dict[str, Any]:
    resp = http.patch(_path(sb, f"{flag_id}/"), json=fields)
    assert resp.status_code == 200, resp.text
    patched: dict[str, Any] = resp.json()
    return patched


def test_activity_records_who_when_and_each_change(empty_sandbox: Sandbox) -> None:
    """``test_get_feature_flag_activity``: an update's entry lists each changed field with before/after and
    the version change; the creation's entry has ``changes: []``; newest first; ``detail.name`` is the key."""
    sb = empty_sandbox
    with api(sb) as http:
        created = _create(http, sb, "with-activity")
        new_filters = {"groups": [{"properties": [], "rollout_percentage": 74}]}
        _patch(http, sb, created["id"], filters=new_filters)
        body = http.get(_path(sb, f"{created['id']}/activity/")).json()
    assert set(body) == {"results", "next", "previous", "total_count"}
    assert body["total_count"] == 2 and body["next"] is None and body["previous"] is None
    updated, creation = body["results"]
    assert updated["activity"] == "updated" and creation["activity"] == "created"
    assert updated["scope"] == "FeatureFlag" and updated["item_id"] == str(created["id"])
    assert updated["user"] == {"first_name": "Ada", "email": "owner@sandbox.example"}
    assert updated["detail"] == {
        "changes": [
            {
                "type": "FeatureFlag",
                "action": "changed",
                "field": "filters",
                "before": created["filters"],
                "after": new_filters,
            },
            {"type": "FeatureFlag", "action": "changed", "field": "version", "before": 1, "after": 2},
        ],
        "trigger": None,
        "type": None,
        "name": "with-activity",
        "short_id": None,
    }
    assert creation["detail"]["changes"] == [] and creation["detail"]["name"] == "with-activity"
    assert updated["created_at"] >= creation["created_at"]


def test_activity_pages_by_page_and_limit(empty_sandbox: Sandbox) -> None:
    """``test_paging_specific_feature_flag_activity``: ten a page, newest first, ``next`` /
    ``previous`` with ``page`` and ``limit``; ``detail.name`` is the key at the time of the write."""
    sb = empty_sandbox
    with api(sb) as http:
        flag_id = _create(http, sb, "0")["id"]
        for x in range(1, 15):
            _patch(http, sb, flag_id, key=str(x))
        url = _path(sb, f"{flag_id}/activity")
        first = http.get(url).json()
        assert [e["detail"]["name"] for e in first["results"]] == [str(x) for x in range(14, 4, -1)]
        assert first["next"] == f"{sb.url}{url}?page=2&limit=10" and first["previous"] is None
        second = http.get(first["next"]).json()
    assert [e["detail"]["name"] for e in second["results"]] == ["4", "3", "2", "1", "0"]
    assert second["next"] is None and second["previous"] == f"{sb.url}{url}?page=1&limit=10"


def test_project_activity_lists_every_flag(empty_sandbox: Sandbox) -> None:
    """``test_get_feature_flag_activity_for_all_flags``: ``.../feature_flags/activity/`` is every flag's."""
    sb = empty_sandbox
    with api(sb) as http:
        one = _create(http, sb, "one")
        _patch(http, sb, one["id"], name="renamed")
        two = _create(http, sb, "two")
        body = http.get(_path(sb, "activity/")).json()
    assert [(e["item_id"], e["activity"]) for e in body["results"]] == [
        (str(two["id"]), "created"),
        (str(one["id"]), "updated"),
        (str(one["id"]), "created"),
    ]


def test_delete_and_restore_are_their_own_activities(empty_sandbox: Sandbox) -> None:
    """``find_version_at_timestamp`` reads soft-delete and restore as ``deleted`` / ``restored`` entries
    that bump the version (products/feature_flags/backend/version_history.py)."""
    sb = empty_sandbox
    with api(sb) as http:
        flag_id = _create(http, sb, "gone")["id"]
        _patch(http, sb, flag_id, deleted=True)
        _patch(http, sb, flag_id, deleted=False)
        body = http.get(_path(sb, f"{flag_id}/activity/")).json()
    assert [e["activity"] for e in body["results"]] == ["restored", "deleted", "created"]
    assert {"type": "FeatureFlag", "action": "changed", "field": "version", "before": 2, "after": 3} in body[
        "results"
    ][0]["detail"]["changes"]


@pytest.mark.parametrize(
    ("query", "attr", "code"), [("limit=0", "limit", "min_value"), ("page=x", "page", "invalid")]
)
def test_activity_paging_values_are_checked(empty_sandbox: Sandbox, query: str, attr: str, code: str) -> None:
    """``ActivityQuerySerializer``: ``limit`` and ``page`` are integers >= 1 (a 400 naming the field)."""
    sb = empty_sandbox
    with api(sb) as http:
        body = error(http.get(_path(sb, f"activity/?{query}")))
    assert (body["attr"], body["code"]) == (attr, code)


def test_versions_rebuild_each_past_version(empty_sandbox: Sandbox) -> None:
    """``reconstruct_flag_at_version``: each version as it was; the current one ``is_historical: false``;
    ``version_timestamp`` the entry that made it (the creation for version 1); ``modified_by`` a user id."""
    sb = empty_sandbox
    with api(sb) as http:
        created = _create(http, sb, "rollout", rollout=10)
        second = _patch(
            http,
            sb,
            created["id"],
            filters=flag("x", condition(prop("plan", ["pro"]), rollout=50))["filters"],
        )
        third = _patch(http, sb, created["id"], name="Rollout", active=False)
        entries = http.get(_path(sb, f"{created['id']}/activity/")).json()["results"]
        bodies = [http.get(_path(sb, f"{created['id']}/versions/{n}/")).json() for n in (1, 2, 3)]
    assert [b["version"] for b in bodies] == [1, 2, 3]
    assert [b["filters"] for b in bodies] == [created["filters"], second["filters"], third["filters"]]
    assert [b["active"] for b in bodies] == [True, True, False] and bodies[2]["name"] == "Rollout"
    assert [b["is_historical"] for b in bodies] == [True, True, False]
    assert bodies[0]["version_timestamp"] == created["created_at"]
    assert bodies[1]["version_timestamp"] == entries[1]["created_at"]  # the entry that made version 2
    assert bodies[2]["version_timestamp"] == third["updated_at"]
    assert isinstance(bodies[1]["modified_by"], int) and bodies[0]["created_by"] == bodies[1]["modified_by"]
    assert set(bodies[0]) == {
        "id", "key", "name", "filters", "active", "deleted", "version", "ensure_experience_continuity",
        "has_enriched_analytics", "is_remote_configuration", "has_encrypted_payloads", "evaluation_runtime",
        "bucketing_identifier", "last_called_at", "created_at", "created_by", "is_historical",
        "version_timestamp", "modified_by",
    }  # fmt: skip


def test_versions_out_of_range_and_no_list(empty_sandbox: Sandbox) -> None:
    """``VersionNotFound`` is a 404 ``{"detail": ...}``; the service has no ``versions/`` list action."""
    sb = empty_sandbox
    with api(sb) as http:
        flag_id = _create(http, sb, "range")["id"]
        for n in (0, 2):
            resp = http.get(_path(sb, f"{flag_id}/versions/{n}/"))
            assert resp.status_code == 404
            assert resp.json() == {"detail": f"Version {n} not found (current version is 1)"}
        assert http.get(_path(sb, f"{flag_id}/versions/")).status_code == 404


def test_a_missing_entry_refuses_the_rebuild(empty_sandbox: Sandbox) -> None:
    """``test_missing_transition_refuses_reconstruction``: an entry deleted from the log makes the versions
    it leads to and before it a 422 ("incomplete"), never a wrong version; the current one still answers."""
    sb = empty_sandbox
    with api(sb) as http:
        flag_id = _create(http, sb, "holey", rollout=10)["id"]
        for pct in (20, 30):
            _patch(http, sb, flag_id, filters=flag("x", condition(rollout=pct))["filters"])
        drop_version_entry(sb, flag_id, 2)
        for n in (1, 2):  # version 2's own entry is gone, and version 1 lies behind it
            missing = http.get(_path(sb, f"{flag_id}/versions/{n}/"))
            assert missing.status_code == 422 and "incomplete" in missing.json()["detail"]
        assert http.get(_path(sb, f"{flag_id}/versions/3/")).status_code == 200


def test_encrypted_payloads_have_no_history(empty_sandbox: Sandbox) -> None:
    """``test_encrypted_payload_flag_is_refused``: 400, no filters in the body."""
    sb = empty_sandbox
    with api(sb) as http:
        flag_id = _create(http, sb, "secret", has_encrypted_payloads=True)["id"]
        resp = http.get(_path(sb, f"{flag_id}/versions/1/"))
    assert resp.status_code == 400 and "filters" not in resp.json()


def test_history_needs_its_scopes(empty_sandbox: Sandbox) -> None:
    """``activity`` requires ``activity_log:read``, ``versions`` ``feature_flag:read`` (their
    ``required_scopes``)."""
    sb = empty_sandbox
    with api(sb) as http:
        flag_id = _create(http, sb, "scoped")["id"]
    with api(sb, sb.create_personal_key(["feature_flag:read"])) as http:
        assert http.get(_path(sb, f"{flag_id}/activity/")).status_code == 403
        assert http.get(_path(sb, f"{flag_id}/versions/1/")).status_code == 200
    with api(sb, sb.create_personal_key(["activity_log:read"])) as http:
        assert http.get(_path(sb, f"{flag_id}/activity/")).status_code == 200
        assert http.get(_path(sb, f"{flag_id}/versions/1/")).status_code == 403


def test_no_flag_versions_fault_is_an_older_instance(empty_sandbox: Sandbox) -> None:
    """The ``no_flag_versions`` fault kind: ``versions/:n`` answers 404, the activity log still answers."""
    sb = empty_sandbox
    with api(sb) as http:
        flag_id = _create(http, sb, "old-instance")["id"]
        sb.faults.add("/api/projects/*/feature_flags/*/versions/*", kind="no_flag_versions")
        assert http.get(_path(sb, f"{flag_id}/versions/1/")).status_code == 404
        assert http.get(_path(sb, f"{flag_id}/activity/")).status_code == 200

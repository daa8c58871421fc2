"""Models parse the payloads the real service sends, keep unknown fields and dump back to the wire shape."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from pydantic import ValidationError

from analytics_nb.models import (
    ActivityPage,
    CaptureBatch,
    CaptureEvent,
    DecideRequest,
    DecideResponse,
    FeatureFlag,
    LocalEvaluationResponse,
    Organization,
    Page,
    Playlist,
    PluginConfig,
    Project,
    RecordingsPage,
    Transformation,
    to_wire,
)

USER = {
    "id": 7,
    "uuid": "0188a2f3-6c3b-0000-9a53-1a2b3c4d5e6f",
    "distinct_id": "Xq4Zr8d2",
    "first_name": "Ada",
    "last_name": "Lovelace",
    "email": "ada@example.com",
    "is_email_verified": True,
    "hedgehog_config": {"use_as_profile": True, "color": "blue", "accessories": ["parrot"]},
    "role_at_organization": "engineering",
}

PLAYLIST = {
    "id": 12,
    "short_id": "aB3dE5fG",
    "name": "Checkout drop-offs",
    "derived_name": "Checkout page visits",
    "description": "",
    "pinned": False,
    "created_at": "2025-03-01T10:15:30.123456Z",
    "created_by": USER,
    "deleted": False,
    "filters": {"events": [{"id": "$pageview", "type": "events"}], "date_from": "-7d"},
    "last_modified_at": "2025-03-02T08:00:00Z",
    "last_modified_by": USER,
    "recordings_counts": {
        "saved_filters": {
            "count": None,
            "has_more": None,
            "watched_count": None,
            "increased": None,
            "last_refreshed_at": None,
        },
        "collection": {"count": None, "watched_count": 0},
    },
    "type": "filters",
    "is_synthetic": False,
    "user_access_level": "editor",
}

SYNTHETIC = {
    "id": -1,
    "short_id": "synthetic-watch-history",
    "name": "Watch history",
    "derived_name": None,
    "description": "Recordings you have watched",
    "pinned": False,
    "created_at": None,
    "created_by": None,
    "deleted": False,
    "filters": {},
    "last_modified_at": None,
    "last_modified_by": None,
    "recordings_counts": {"collection": {"count": 3, "watched_count": 3}},
    "type": "collection",
    "is_synthetic": True,
}

RECORDING = {
    "id": "0192f4b4-aaaa-7bbb-8ccc-0123456789ab",
    "distinct_id": "user-1",
    "viewed": True,
    "viewers": ["ada@example.com"],
    "recording_duration": 300,
    "active_seconds": 120.5,
    "inactive_seconds": 179.5,
    "start_time": "2025-03-01T10:00:00Z",
    "end_time": "2025-03-01T10:05:00Z",
    "click_count": 12,
    "keypress_count": 40,
    "mouse_activity_count": 80,
    "console_log_count": 2,
    "console_warn_count": 0,
    "console_error_count": 1,
    "start_url": "https://shop.example.com/checkout",
    "person": {"id": 3, "distinct_ids": ["user-1"], "properties": {"email": "u@example.com"}},
    "storage": "object_storage",
    "retention_period_days": 30,
    "expiry_time": "2025-03-31T10:00:00Z",
    "recording_ttl": 29,
    "snapshot_source": "web",
    "ongoing": False,
    "activity_score": 0.42,
}

TRANSFORMATION = {
    "id": 3,
    "plugin_type": "local",
    "name": "GeoIP",
    "description": "Adds location properties",
    "url": "file:../plugins/geoip",
    "icon": None,
    "config_schema": [{"key": "token", "type": "string", "secret": True}],
    "tag": "v1.2.0",
    "latest_tag": "v1.3.0",
    "is_global": False,
    "organization_id": "0188a2f3-0000-0000-0000-000000000001",
    "organization_name": "Hedgehogs Inc",
    "capabilities": {"methods": ["processEvent", "setupPlugin"], "jobs": [], "scheduled_tasks": []},
    "metrics": None,
    "public_jobs": {},
    "hog_function_migration_available": True,
}

FLAG = {
    "id": 41,
    "team_id": 2,
    "key": "new-checkout",
    "name": "New checkout flow",
    "active": True,
    "deleted": False,
    "ensure_experience_continuity": False,
    "version": 3,
    "rollout_percentage": None,
    "created_at": "2025-01-10T09:00:00Z",
    "created_by": USER,
    "filters": {
        "groups": [
            {
                "properties": [
                    {"key": "email", "value": "@example.com", "operator": "icontains", "type": "person"},
                    {"key": "beta-access", "value": True, "operator": "flag_evaluates_to", "type": "flag"},
                ],
                "rollout_percentage": 50,
                "variant": None,
            },
            {"properties": [], "rollout_percentage": 10, "variant": "test"},
        ],
        "multivariate": {
            "variants": [
                {"key": "control", "name": "Control", "rollout_percentage": 50},
                {"key": "test", "name": "Test", "rollout_percentage": 50},
            ]
        },
        "payloads": {"test": '{"color": "green"}'},
        "aggregation_group_type_index": None,
        "super_groups": [
            {"properties": [{"key": "$feature_enrollment/new-checkout", "value": ["true"], "type": "person"}]}
        ],
        "holdout_groups": [{"properties": [], "rollout_percentage": 5, "variant": "holdout-1"}],
    },
    "tags": ["checkout"],
    "experiment_set": [9],
}


def test_playlist_parses_real_shape() -> None:
    p = Playlist.model_validate(PLAYLIST)
    assert p.short_id == "aB3dE5fG"
    assert p.type == "filters"
    assert p.created_by is not None and p.created_by.role_at_organization == "engineering"
    assert p.created_by.hedgehog_config == {
        "use_as_profile": True,
        "color": "blue",
        "accessories": ["parrot"],
    }
    assert p.created_at == datetime(2025, 3, 1, 10, 15, 30, 123456, tzinfo=UTC)
    assert p.recordings_counts is not None and p.recordings_counts.collection is not None
    assert p.recordings_counts.collection.count is None
    assert p.recordings_counts.collection.watched_count == 0
    assert p.model_extra == {"user_access_level": "editor"}


def test_synthetic_playlist_nulls() -> None:
    p = Playlist.model_validate(SYNTHETIC)
    assert p.id == -1 and p.is_synthetic is True
    assert p.created_at is None and p.created_by is None and p.last_modified_by is None


def test_datetimes_become_utc() -> None:
    p = Playlist.model_validate(
        {"created_at": "2025-03-01T12:00:00+02:00", "last_modified_at": "2025-03-01T10:00"}
    )
    assert p.created_at is not None and p.created_at.utcoffset() == timedelta(0)
    assert p.created_at == datetime(2025, 3, 1, 10, tzinfo=UTC)
    assert p.last_modified_at == datetime(2025, 3, 1, 10, tzinfo=UTC)
    aware = datetime(2025, 1, 1, 5, tzinfo=timezone(timedelta(hours=5)))
    assert Playlist(created_at=aware).created_at == datetime(2025, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("model", "payload"),
    [
        (Playlist, PLAYLIST),
        (Playlist, SYNTHETIC),
        (Transformation, TRANSFORMATION),
        (FeatureFlag, FLAG),
        (RecordingsPage, {"results": [RECORDING], "has_next": False, "version": 4}),
    ],
)
def test_wire_round_trip(model: Any, payload: dict[str, Any]) -> None:
    original = copy.deepcopy(payload)
    parsed = model.model_validate(payload)
    assert payload == original  # input not mutated
    wire = to_wire(parsed)
    assert model.model_validate(wire) == parsed
    # Every key the server sent comes back, and unknown ones keep their value.
    assert set(wire) == set(payload)
    for key, value in payload.items():
        if not key.endswith(("_at", "_time")) and key != "created_by" and key != "last_modified_by":
            assert wire[key] == value, key


def test_unknown_fields_kept_everywhere() -> None:
    t = Transformation.model_validate({**TRANSFORMATION, "updated_at": "2025-01-01T00:00:00Z", "x": [1]})
    assert t.model_extra == {"updated_at": "2025-01-01T00:00:00Z", "x": [1]}
    assert t.model_dump(by_alias=True)["x"] == [1]
    f = FeatureFlag.model_validate(FLAG)
    assert f.model_extra == {"experiment_set": [9]}
    nested = Playlist.model_validate({"created_by": {**USER, "is_staff": False}})
    assert nested.created_by is not None and nested.created_by.model_extra == {"is_staff": False}
    assert to_wire(nested)["created_by"]["is_staff"] is False


def test_transformation_fields() -> None:
    t = Transformation.model_validate(TRANSFORMATION)
    assert t.plugin_type == "local"
    assert t.capabilities == {"methods": ["processEvent", "setupPlugin"], "jobs": [], "scheduled_tasks": []}
    assert t.config_schema == [{"key": "token", "type": "string", "secret": True}]
    assert t.metrics is None and t.hog_function_migration_available is True


def test_pages() -> None:
    page = Page[Playlist].model_validate(
        {
            "count": 7,
            "next": "http://127.0.0.1:8000/api/projects/1/session_recording_playlists/?limit=1&offset=1",
            "previous": None,
            "results": [PLAYLIST],
        }
    )
    assert page.count == 7 and isinstance(page.results[0], Playlist)
    assert page.next is not None and page.next.endswith("offset=1")
    tpage = Page[Transformation].model_validate(
        {"count": 1, "next": None, "previous": None, "results": [TRANSFORMATION]}
    )
    assert tpage.results[0].latest_tag == "v1.3.0"
    rec = RecordingsPage.model_validate({"results": [RECORDING], "has_next": True, "version": 4})
    assert rec.has_next is True and rec.version == 4
    r = rec.results[0]
    assert r.recording_duration == 300 and isinstance(r.recording_duration, int)
    assert r.active_seconds == 120.5 and r.console_error_count == 1
    assert r.end_time == datetime(2025, 3, 1, 10, 5, tzinfo=UTC)
    activity = ActivityPage.model_validate(
        {
            "results": [
                {
                    "id": "0192-uuid",
                    "user": {"first_name": "Ada", "email": "ada@example.com"},
                    "activity": "installed",
                    "scope": "Plugin",
                    "item_id": "3",
                    "detail": {"name": "GeoIP", "changes": None},
                    "created_at": "2025-03-01T10:00:00Z",
                    "unread": False,
                    "is_system": False,
                }
            ],
            "next": None,
            "previous": None,
            "total_count": 1,
        }
    )
    assert activity.total_count == 1 and activity.results[0].user is not None
    assert activity.results[0].user.email == "ada@example.com"


def test_plugin_config_project_organization() -> None:
    pc = PluginConfig.model_validate(
        {
            "id": 5,
            "plugin": 3,
            "enabled": True,
            "order": 1,
            "config": {"token": "**************** POSTHOG SECRET FIELD ****************"},
            "error": None,
            "team_id": 2,
            "plugin_info": {"id": 3, "name": "S3 export"},
            "delivery_rate_24h": 0.99,
            "created_at": "2025-01-01T00:00:00Z",
            "updated_at": None,
            "name": "S3",
            "description": "",
            "deleted": False,
        }
    )
    assert (
        pc.delivery_rate_24h == 0.99
        and pc.updated_at is None
        and pc.plugin_info == {"id": 3, "name": "S3 export"}
    )
    proj = Project.model_validate(
        {"id": 2, "organization": "org-uuid", "api_token": "phc_abc", "name": "Default"}
    )
    assert proj.id == 2 and proj.api_token == "phc_abc"
    org = Organization.model_validate({"id": "org-uuid", "name": "Hedgehogs", "plugins_access_level": 9})
    assert org.plugins_access_level == 9
    with pytest.raises(ValidationError) as err:
        Project.model_validate({"name": "no id"})
    assert "id" in str(err.value)


def test_feature_flag_definition() -> None:
    f = FeatureFlag.model_validate(FLAG)
    assert f.key == "new-checkout" and f.version == 3
    g0 = f.filters.groups[0]
    assert g0.rollout_percentage == 50 and g0.properties[0].operator == "icontains"
    assert g0.properties[1].is_flag_dependency and g0.properties[1].value is True
    assert f.dependencies == ["beta-access"]
    assert f.variant_keys == ["control", "test"]
    assert f.filters.payloads == {"test": '{"color": "green"}'}
    assert f.filters.super_groups is not None and f.filters.super_groups[0].properties[0].value == ["true"]
    assert f.filters.holdout_groups is not None and f.filters.holdout_groups[0].variant == "holdout-1"
    assert not f.is_group_flag
    group_flag = FeatureFlag.model_validate(
        {"key": "org-flag", "filters": {"aggregation_group_type_index": 0, "groups": [{"properties": None}]}}
    )
    assert group_flag.is_group_flag and group_flag.filters.groups[0].properties == []
    assert group_flag.variant_keys == []


def test_flag_models_are_permissive() -> None:
    # Variants not summing to 100 and unknown operators are the flag engine's business, not the models'.
    f = FeatureFlag.model_validate(
        {
            "key": "odd",
            "filters": {
                "groups": [{"properties": [{"key": "plan", "value": "x", "operator": "not_an_op"}]}],
                "multivariate": {"variants": [{"key": "a", "rollout_percentage": 30}]},
                "payloads": None,
            },
        }
    )
    assert f.filters.groups[0].properties[0].operator == "not_an_op"
    assert f.filters.payloads == {}
    assert FeatureFlag.model_validate({"key": "bare", "filters": None}).filters.groups == []


def test_local_evaluation_response() -> None:
    resp = LocalEvaluationResponse.model_validate(
        {
            "flags": [FLAG],
            "group_type_mapping": {"0": "company", "1": "project"},
            "cohorts": {"4": {"type": "OR", "values": [{"type": "AND", "values": []}]}},
        }
    )
    assert resp.flags[0].key == "new-checkout"
    assert resp.group_type_mapping["0"] == "company"
    assert "4" in resp.cohorts


V3 = {
    "config": {"enable_collect_everything": True},
    "toolbarParams": {},
    "isAuthenticated": False,
    "supportedCompression": ["gzip", "gzip-js"],
    "featureFlags": {"request-test": True, "multivariate-test": "variant-a", "off-flag": False},
    "sessionRecording": False,
    "errorsWhileComputingFlags": False,
    "featureFlagPayloads": {"request-test": '{"a": 1}'},
    "capturePerformance": False,
    "siteApps": [],
    "requestId": "550e8400-e29b-41d4-a716-446655440000",
    "evaluatedAt": 1735689600000,
}

V4 = {
    "flags": {
        "my-awesome-flag": {
            "key": "my-awesome-flag",
            "enabled": True,
            "reason": {
                "code": "condition_match",
                "condition_index": 0,
                "description": "Matched condition set 1",
            },
            "metadata": {"id": 1, "version": 1, "payload": '{"example": "json", "payload": "value"}'},
        },
        "mv": {
            "key": "mv",
            "enabled": True,
            "variant": "test",
            "reason": {
                "code": "condition_match",
                "condition_index": 1,
                "description": "Matched condition set 2",
            },
            "metadata": {"id": 2, "version": 4, "payload": None, "description": None, "has_experiment": True},
        },
        "off": {
            "key": "off",
            "enabled": False,
            "reason": {"code": "out_of_rollout_bound", "condition_index": 0, "description": "Out of rollout"},
            "metadata": {"id": 3, "version": 1, "payload": '"ignored when off"'},
        },
        "broken": {"key": "broken", "enabled": False, "failed": True},
    },
    "errorsWhileComputingFlags": True,
    "requestId": "550e8400-e29b-41d4-a716-446655440000",
}


def test_decide_v3() -> None:
    r = DecideResponse.model_validate(V3)
    assert r.feature_flags == {"request-test": True, "multivariate-test": "variant-a", "off-flag": False}
    assert r.feature_flag_payloads == {"request-test": '{"a": 1}'}
    assert r.flags is None and r.errors_while_computing_flags is False
    assert r.is_enabled("multivariate-test") and not r.is_enabled("off-flag") and not r.is_enabled("missing")
    assert r.get_value("multivariate-test") == "variant-a" and r.get_payload("request-test") == '{"a": 1}'
    assert r.request_id == V3["requestId"] and r.supported_compression == ["gzip", "gzip-js"]
    assert r.model_extra == {}
    assert to_wire(r) == V3


def test_decide_v1_and_v2() -> None:
    v1 = DecideResponse.model_validate(
        {"featureFlags": ["a", "b"], "config": {"enable_collect_everything": True}}
    )
    assert v1.feature_flags == {"a": True, "b": True}
    v2 = DecideResponse.model_validate({"featureFlags": {"a": True, "b": "control"}})
    assert v2.feature_flags == {"a": True, "b": "control"} and v2.get_value("c") is None


def test_decide_v4_detailed() -> None:
    r = DecideResponse.model_validate(V4)
    assert r.flags is not None and r.flags["mv"].variant == "test"
    # a failed record is unknown (None), never False (types.rs FlagDetails::create_error)
    assert r.feature_flags == {"my-awesome-flag": True, "mv": "test", "off": False, "broken": None}
    assert r.failures == {"broken": r.flags["broken"].failure} and r.get_value("broken") is None
    assert r.feature_flag_payloads == {"my-awesome-flag": '{"example": "json", "payload": "value"}'}
    assert r.errors_while_computing_flags is True
    detail = r.flags["my-awesome-flag"]
    assert detail.reason is not None and detail.reason.code == "condition_match"
    assert detail.reason.condition_index == 0 and detail.metadata is not None and detail.metadata.version == 1
    assert r.flags["broken"].failed is True
    assert r.flags["mv"].metadata is not None and r.flags["mv"].metadata.has_experiment is True
    assert r.flags["mv"].metadata.model_extra == {}
    # The derived maps are not wire fields of the detailed form: the round trip gives the detailed shape back.
    assert to_wire(r) == V4


def test_decide_quota_limited() -> None:
    r = DecideResponse.model_validate(
        {"flags": {}, "errorsWhileComputingFlags": False, "quotaLimited": ["feature_flags"], "requestId": "x"}
    )
    assert r.quota_limited == ["feature_flags"] and r.feature_flags == {}


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ({"errorsWhileComputingFlags": True}, True),
        ({"errorComputingFlags": True}, True),
        ({"errorComputingFlags": False}, False),
        ({"errorsWhileComputingFlags": False, "errorComputingFlags": True}, True),
        ({"errorsWhileComputingFlags": None}, False),
        ({}, False),
    ],
)
def test_decide_error_key_spellings(payload: dict[str, Any], expected: bool) -> None:
    r = DecideResponse.model_validate({"featureFlags": {}, **payload})
    assert r.errors_while_computing_flags is expected
    assert to_wire(r, exclude_unset=False)["errorsWhileComputingFlags"] is expected


def test_decide_request_aliases() -> None:
    req = DecideRequest.model_validate({"token": "phc_x", "$distinct_id": 42, "groups": {"company": "acme"}})
    assert req.api_key == "phc_x" and req.distinct_id == "42"
    wire = to_wire(
        DecideRequest(api_key="phc_x", distinct_id="u1", anon_distinct_id="anon", person_properties={})
    )
    assert wire == {
        "api_key": "phc_x",
        "distinct_id": "u1",
        "$anon_distinct_id": "anon",
        "person_properties": {},
    }


def test_capture_event_and_batch() -> None:
    ev = CaptureEvent.model_validate(
        {
            "event": "$feature_flag_called",
            "distinct_id": 123,
            "properties": {"$feature_flag": "mv", "$feature_flag_response": "test", "$lib": "analytics_nb"},
            "timestamp": "2025-03-01T10:00:00+01:00",
            "uuid": "0192f4b4-aaaa-7bbb-8ccc-0123456789ab",
            "type": "capture",
        }
    )
    assert ev.distinct_id == "123" and ev.timestamp == datetime(2025, 3, 1, 9, tzinfo=UTC)
    assert ev.model_extra == {"type": "capture"}
    wire = to_wire(ev)
    assert wire["timestamp"] == "2025-03-01T09:00:00Z" and wire["type"] == "capture"
    batch = CaptureBatch.model_validate(
        {"api_key": "phc_x", "batch": [wire, {"event": "e", "properties": None}]}
    )
    assert len(batch.batch) == 2 and batch.batch[1].properties == {}
    assert to_wire(batch)["batch"][0]["properties"]["$feature_flag"] == "mv"
    with pytest.raises(ValidationError) as err:
        CaptureEvent.model_validate({"distinct_id": "x"})
    assert "event" in str(err.value)


def test_wire_model_method_and_exclude_unset() -> None:
    p = Playlist(name="n", type="collection")
    assert p.to_wire() == {"name": "n", "type": "collection"}
    full = p.to_wire(exclude_unset=False)
    assert full["short_id"] is None and full["type"] == "collection"

"""Frames: typed columns from API records, and an exact CSV round trip."""

from __future__ import annotations

import copy
import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_models import FLAG, PLAYLIST, RECORDING, SYNTHETIC, TRANSFORMATION, USER, V3, V4

from _examples import examples
from analytics_nb import frames as F
from analytics_nb.models import (
    CaptureBatch,
    CaptureEvent,
    DecideResponse,
    FeatureFlag,
    Page,
    Playlist,
    RecordingsPage,
    Transformation,
)

ACTIVITY = [
    {
        "id": "0193a1b2-0000-7000-8000-000000000002",
        "user": {"first_name": "Ada", "email": "ada@example.com"},
        "unread": False,
        "is_system": False,
        "activity": "updated",
        "item_id": "12",
        "scope": "PluginConfig",
        "detail": {
            "name": "GeoIP",
            "changes": [
                {
                    "type": "PluginConfig",
                    "action": "changed",
                    "field": "enabled",
                    "before": False,
                    "after": True,
                },
                {
                    "type": "PluginConfig",
                    "action": "changed",
                    "field": "config",
                    "before": {"a": 1},
                    "after": None,
                },
            ],
        },
        "created_at": "2026-11-20T10:00:00.123456+01:00",
        "was_impersonated": False,
    },
    {
        "id": "0193a1b2-0000-7000-8000-000000000001",
        "user": None,
        "is_system": True,
        "activity": "installed",
        "item_id": "3",
        "scope": "Plugin",
        "detail": {"name": "Ünïcode ✓", "changes": None},
        "created_at": "2026-11-19T08:00:00Z",
    },
]

UTC_US = pd.DatetimeTZDtype(unit="us", tz="UTC")
STR = pd.StringDtype(na_value=np.nan)

EVENTS = [
    {
        "uuid": "0192f4b4-aaaa-7bbb-8ccc-0123456789ab",
        "event": "$feature_flag_called",
        "distinct_id": "user-1",
        "timestamp": "2025-03-01T10:00:00.5+01:00",
        "properties": {"$feature_flag": "mv", "$feature_flag_response": "test", "nested": {"a": [1, 2]}},
        "api_key": "phc_projectkey123",
    },
    {
        "uuid": "0192f4b4-aaaa-7bbb-8ccc-0123456789ac",
        "event": 'purchase, "big"\none',
        "distinct_id": 42,
        "timestamp": None,
        "properties": {},
    },
]


def _all_frames() -> dict[str, pd.DataFrame]:
    return {
        "playlists": F.playlists_frame([PLAYLIST, SYNTHETIC, {**PLAYLIST, "id": 13, "surprise": {"x": 1}}]),
        "recordings": F.recordings_frame({"results": [RECORDING, {"id": "s2"}], "has_next": False}),
        "transformations": F.transformations_frame([TRANSFORMATION, {"id": 4, "name": "Ünïcode ✓"}]),
        "sources": F.transformation_sources_frame(
            {3: {"index.ts": "export function processEvent(e) {\n}\n"}}
        ),
        "flags": F.feature_flags_frame([FLAG, {"key": "plain", "filters": {"groups": [{"properties": []}]}}]),
        "decide_v3": F.decide_frame(V3),
        "decide_v4": F.decide_frame(V4, distinct_id="user-1"),
        "events": F.events_frame(EVENTS),
        "activity": F.activity_frame({"results": ACTIVITY, "next": None, "total_count": 2}),
    }


EMPTY = {
    "playlists": lambda: F.playlists_frame([]),
    "recordings": lambda: F.recordings_frame([]),
    "transformations": lambda: F.transformations_frame([]),
    "sources": lambda: F.transformation_sources_frame({}),
    "flags": lambda: F.feature_flags_frame([]),
    "decide_v3": lambda: F.decide_frame({"featureFlags": {}}),
    "decide_v4": lambda: F.decide_frame({"flags": {}}, distinct_id="user-1"),
    "events": lambda: F.events_frame([]),
    "activity": lambda: F.activity_frame([]),
}


def test_playlists_frame_columns_and_dtypes() -> None:
    df = F.playlists_frame([PLAYLIST, SYNTHETIC])
    assert list(df.columns[:4]) == ["id", "short_id", "name", "derived_name"]
    assert df["id"].dtype == "Int64" and df["id"].tolist() == [12, -1]
    assert df["short_id"].dtype == STR and df["pinned"].dtype == "boolean"
    assert df["created_at"].dtype == UTC_US
    assert df.loc[0, "created_at"] == pd.Timestamp("2025-03-01T10:15:30.123456Z")
    assert pd.isna(df.loc[1, "created_at"])
    assert df.loc[0, "created_by_email"] == "ada@example.com"
    assert df.loc[0, "created_by_id"] == 7 and pd.isna(df.loc[1, "created_by_id"])
    assert df.loc[0, "created_by_role_at_organization"] == "engineering"
    assert df.loc[0, "last_modified_by_first_name"] == "Ada"
    assert df["created_by_hedgehog_config"].dtype == object
    assert df.loc[0, "created_by_hedgehog_config"] == USER["hedgehog_config"]
    assert df["filters"].dtype == object and df.loc[0, "filters"] == PLAYLIST["filters"]
    assert df.loc[1, "recordings_counts"] == {"collection": {"count": 3, "watched_count": 3}}
    assert df.loc[0, "description"] == "" and df.loc[1, "is_synthetic"]
    # unknown server field kept, as an object column at the end
    assert df.columns[-1] == "user_access_level" and df["user_access_level"].dtype == object
    assert df["user_access_level"].tolist() == ["editor", None]


def test_input_not_mutated_and_models_accepted() -> None:
    records = [copy.deepcopy(PLAYLIST), copy.deepcopy(SYNTHETIC)]
    from_dicts = F.playlists_frame(records)
    assert records == [PLAYLIST, SYNTHETIC]
    models = [Playlist.model_validate(r) for r in records]
    from_models = F.playlists_frame(models)
    pd.testing.assert_frame_equal(from_models, from_dicts)
    page = Page[Playlist].model_validate({"count": 2, "next": None, "previous": None, "results": records})
    pd.testing.assert_frame_equal(F.playlists_frame(page), from_dicts)
    pd.testing.assert_frame_equal(F.playlists_frame({"count": 2, "results": records}), from_dicts)
    t = F.transformations_frame([Transformation.model_validate(TRANSFORMATION)])
    assert t.loc[0, "capabilities"] == TRANSFORMATION["capabilities"]


def test_mixed_layouts_match_single_records() -> None:
    # Records with different key sets/orders take the grouped transposition; many layouts take the get path.
    base = [PLAYLIST, SYNTHETIC, {"short_id": "z", "id": 99}, {**PLAYLIST, "created_by": None}]
    for records in (base, base + [{"id": i, f"k{i}": i} for i in range(20)]):
        df = F.playlists_frame(records)
        for i, record in enumerate(records):
            one = F.playlists_frame([record])
            for col in one.columns:
                left, right = df.loc[i, col], one.loc[0, col]
                if isinstance(right, dict | list) or not pd.isna(right):
                    assert left == right, (i, col)
                else:
                    assert pd.isna(left), (i, col)
        assert df.loc[2, "short_id"] == "z" and df.loc[2, "id"] == 99
        assert (
            pd.isna(df.loc[3, "created_by_email"])
            and df.loc[3, "last_modified_by_email"] == "ada@example.com"
        )
    assert F.playlists_frame(base + [{"id": 1, "k5": "v"}] * 1).shape[0] == 5


def test_recordings_frame() -> None:
    df = F.recordings_frame({"results": [RECORDING], "has_next": False, "version": 4})
    assert df.columns[0] == "id" and df.loc[0, "id"] == RECORDING["id"]
    assert df["start_time"].dtype == UTC_US and df["recording_duration"].dtype == "Float64"
    assert df["click_count"].dtype == "Int64" and df.loc[0, "console_error_count"] == 1
    assert df.loc[0, "viewers"] == ["ada@example.com"] and df.loc[0, "person"]["id"] == 3
    assert df.loc[0, "ongoing"] == False  # noqa: E712 (pandas boolean scalar)


def test_transformation_frames() -> None:
    df = F.transformations_frame([TRANSFORMATION])
    assert list(df.columns[:3]) == ["id", "name", "plugin_type"]
    for col in ("config_schema", "capabilities", "metrics", "public_jobs"):
        assert df[col].dtype == object
    assert df.loc[0, "metrics"] is None and df.loc[0, "public_jobs"] == {}
    assert df.loc[0, "hog_function_migration_available"] == True  # noqa: E712
    src = F.transformation_sources_frame(
        {3: {"plugin.json": '{"name": "x"}', "index.ts": "code"}, 4: {"frontend.tsx": None}}
    )
    assert src[["transformation_id", "filename"]].values.tolist() == [
        [3, "plugin.json"],
        [3, "index.ts"],
        [4, "frontend.tsx"],
    ]
    assert src["transformation_id"].dtype == "Int64" and pd.isna(src.loc[2, "content"])
    pairs = F.transformation_sources_frame([(3, {"index.ts": "code"})])
    assert pairs.loc[0, "content"] == "code"
    with pytest.raises(TypeError, match="mapping filename -> content"):
        F.transformation_sources_frame({3: ["index.ts"]})


def test_feature_flags_frame() -> None:
    df = F.feature_flags_frame(
        {
            "flags": [FLAG, {"key": "off", "active": False, "filters": {"groups": []}}],
            "group_type_mapping": {},
        }
    )
    assert list(df.columns[:3]) == ["id", "key", "name"]
    row = df.iloc[0]
    assert row["key"] == "new-checkout" and row["version"] == 3 and bool(row["active"])
    assert row["rollout_summary"] == "50% where email, beta-access; 10% -> test"
    assert row["rollout_percentage"] == 50.0 and row["condition_count"] == 2
    assert row["variant_keys"] == ["control", "test"] and row["depends_on"] == ["beta-access"]
    assert bool(row["has_payloads"]) and row["payloads"] == {"test": '{"color": "green"}'}
    assert row["filters"] == FLAG["filters"] and row["created_by_email"] == "ada@example.com"
    assert row["experiment_set"] == [9]  # unknown field kept
    off = df.iloc[1]
    assert off["rollout_summary"] == "no conditions" and not bool(off["active"])
    assert off["variant_keys"] == [] and pd.isna(off["rollout_percentage"])


def test_decide_frame_v3_v2_v1() -> None:
    df = F.decide_frame(V3)
    assert df["key"].tolist() == ["request-test", "multivariate-test", "off-flag"]
    assert df["value"].tolist() == [True, "variant-a", False] and df["value"].dtype == object
    assert df["enabled"].tolist() == [True, True, False] and df["enabled"].dtype == "boolean"
    assert df.loc[1, "variant"] == "variant-a" and pd.isna(df.loc[0, "variant"])
    assert df.loc[0, "payload"] == '{"a": 1}' and df.loc[1, "payload"] is None
    assert pd.isna(df.loc[0, "reason"]) and df.attrs["request_id"] == V3["requestId"]
    v1 = F.decide_frame({"featureFlags": ["a"]})
    assert v1["value"].tolist() == [True]
    v2 = F.decide_frame(
        DecideResponse.model_validate({"featureFlags": {"a": "ctl"}, "errorComputingFlags": True})
    )
    assert v2.loc[0, "variant"] == "ctl" and v2.attrs["errors_while_computing_flags"] is True


def test_decide_frame_v4() -> None:
    df = F.decide_frame(V4, distinct_id="user-1")
    assert list(df.columns[:3]) == ["distinct_id", "key", "value"]
    by_key = df.set_index("key")
    assert by_key.loc["mv", "value"] == "test" and by_key.loc["mv", "condition_index"] == 1
    assert by_key.loc["my-awesome-flag", "reason"] == "condition_match"
    assert by_key.loc["my-awesome-flag", "reason_description"] == "Matched condition set 1"
    assert by_key.loc["my-awesome-flag", "flag_id"] == 1
    assert by_key.loc["off", "payload"] is None  # payloads only for matched flags
    assert bool(by_key.loc["broken", "failed"]) and not bool(by_key.loc["mv", "failed"])
    assert df.attrs["errors_while_computing_flags"] is True


def test_events_frame() -> None:
    df = F.events_frame(EVENTS)
    assert list(df.columns) == ["uuid", "event", "distinct_id", "timestamp", "properties"]
    assert df.loc[0, "timestamp"] == pd.Timestamp("2025-03-01T09:00:00.5Z")
    assert df.loc[1, "distinct_id"] == "42" and pd.isna(df.loc[1, "timestamp"])
    assert df.loc[0, "properties"]["nested"] == {"a": [1, 2]}
    batch = CaptureBatch(api_key="phc_x", batch=[CaptureEvent.model_validate(e) for e in EVENTS])
    from_batch = F.events_frame(batch)
    assert from_batch["event"].tolist() == df["event"].tolist()
    assert "api_key" not in from_batch.columns


def test_no_key_text_in_frames_or_csv() -> None:
    record = {**PLAYLIST, "personal_api_key": "phx_abcdefghijklmnop1234", "token": "phx_zzzzzzzzzzzz"}
    df = F.playlists_frame([record])
    assert "phx_" not in df.to_string() and "phx_" not in F.to_csv(df)
    assert "personal_api_key" not in df.columns
    leaky = pd.DataFrame({"note": ["my key is phx_abcdefghijklmnop1234"]})
    with pytest.raises(ValueError, match=r"'note'.*personal API key"):
        F.to_csv(leaky)


@pytest.mark.parametrize("kind", list(EMPTY))
def test_empty_frames_have_same_columns_and_dtypes(kind: str) -> None:
    full = _all_frames()[kind]
    empty = EMPTY[kind]()
    assert len(empty) == 0
    known = [c for c in full.columns if c in empty.columns]
    assert list(empty.columns) == known  # extras only come from records
    assert all(empty[c].dtype == full[c].dtype for c in known)
    pd.testing.assert_frame_equal(F.read_csv(F.to_csv(empty)), empty)


@pytest.mark.parametrize("kind", list(EMPTY))
def test_csv_round_trip_every_frame(kind: str, tmp_path: Path) -> None:
    df = _all_frames()[kind]
    text = F.to_csv(df)
    assert isinstance(text, str) and text.startswith(F.HEADER_PREFIX)
    pd.testing.assert_frame_equal(F.read_csv(text), df)
    path = tmp_path / f"{kind}.csv"
    assert F.to_csv(df, path) is None
    pd.testing.assert_frame_equal(F.read_csv(path), df)
    pd.testing.assert_frame_equal(F.read_csv(str(path)), df)
    buf = io.StringIO()
    F.to_csv(df, buf, sep=";")
    buf.seek(0)
    pd.testing.assert_frame_equal(F.read_csv(buf), df)


def test_csv_text_details() -> None:
    df = pd.DataFrame(
        {
            "text": pd.array(
                ["a,b", 'say "hi"', "line1\nline2", "", None, "<NA>", "naïve ✓ 日本", "x\ry"], dtype="str"
            ),
            "n": pd.array([1, None, 3, 4, 5, 6, 7, 2**53 + 1], dtype="Int64"),
            "f": pd.array([0.1, None, 1e-300, 2.5, float("inf"), 0.0, -1.0, 1 / 3], dtype="Float64"),
            "b": pd.array([True, False, None, True, True, False, None, True], dtype="boolean"),
            "obj": pd.Series(
                [{"k": [1, {"z": None}]}, None, "txt", [1, 2], 3, True, {"u": "ü"}, ""], dtype=object
            ),
            "when": pd.array(
                [datetime(2025, 1, 1, tzinfo=UTC), None, pd.Timestamp("2024-02-29T23:59:59.999999Z")] * 2
                + [None, pd.Timestamp("1970-01-01", tz="UTC")],
                dtype=UTC_US,
            ),
        }
    )
    text = F.to_csv(df)
    assert text is not None
    header = json.loads(text.splitlines()[0][len(F.HEADER_PREFIX) :])
    assert header["columns"]["obj"] == "json" and header["columns"]["when"] == "datetime64[us, UTC]"
    assert "2025-01-01T00:00:00.000000Z" in text
    back = F.read_csv(text)
    pd.testing.assert_frame_equal(back, df)
    assert back.loc[0, "obj"] == {"k": [1, {"z": None}]} and back.loc[7, "obj"] == ""
    assert back.loc[3, "text"] == "" and pd.isna(back.loc[4, "text"]) and back.loc[5, "text"] == "<NA>"


def test_csv_other_dtypes_and_index() -> None:
    df = pd.DataFrame(
        {
            "i": np.array([1, 2, 3], dtype=np.int64),
            "x": np.array([1.5, np.nan, 3.0]),
            "ok": np.array([True, False, True]),
            "s": pd.array(["a", None, "c"], dtype="string"),
            "naive": pd.to_datetime(["2025-01-01", "2025-01-02", None]),
            "berlin": pd.to_datetime(["2025-01-01T10:00Z", None, "2025-06-01T10:00Z"]).tz_convert(
                "Europe/Berlin"
            ),
        },
        index=pd.Index([10, 20, 30], name="row"),
    )
    back = F.read_csv(F.to_csv(df))
    pd.testing.assert_frame_equal(back, df)
    filtered = F.playlists_frame([PLAYLIST, SYNTHETIC])[lambda d: d["id"] < 0]
    pd.testing.assert_frame_equal(F.read_csv(F.to_csv(filtered)), filtered)


def test_csv_refuses_options_that_break_round_trip() -> None:
    df = F.playlists_frame([PLAYLIST])
    with pytest.raises(TypeError, match="index"):
        F.to_csv(df, index=True)
    with pytest.raises(TypeError, match="dtype"):
        F.read_csv(F.to_csv(df), dtype=str)
    dup = pd.DataFrame([[1, 2]], columns=["a", "a"])
    with pytest.raises(ValueError, match="duplicate column names"):
        F.to_csv(dup)
    with pytest.raises(ValueError, match="header line is damaged"):
        F.read_csv(F.HEADER_PREFIX + "{not json\na\n1\n")


def test_read_csv_without_header_infers_known_columns() -> None:
    df = F.playlists_frame([PLAYLIST, SYNTHETIC])
    plain = df.to_csv(index=False)  # a plain pandas export: JSON columns written as Python reprs
    plain_json = df.assign(
        filters=[json.dumps(v) for v in df["filters"]],
        recordings_counts=[json.dumps(v) for v in df["recordings_counts"]],
    ).to_csv(index=False)
    back = F.read_csv(plain_json)
    assert back["id"].dtype == "Int64" and back["created_at"].dtype == UTC_US
    assert back["pinned"].dtype == "boolean" and back["created_by_id"].dtype == "Int64"
    assert back.loc[0, "filters"] == PLAYLIST["filters"]
    assert back.loc[0, "created_at"] == df.loc[0, "created_at"]
    assert isinstance(F.read_csv(plain).loc[0, "filters"], str)  # not JSON: kept as the text it was
    recordings = F.recordings_frame([RECORDING]).to_csv(index=False)
    assert F.read_csv(recordings).loc[0, "id"] == RECORDING["id"]  # "id" is text here, not an int


def test_bad_values_name_the_field() -> None:
    with pytest.raises(ValueError, match=r"field 'created_at'.*ISO 8601"):
        F.playlists_frame([{"id": 1, "created_at": "yesterday-ish"}])
    with pytest.raises(ValueError, match=r"field 'id'.*integer"):
        F.playlists_frame([{"id": "twelve"}])
    with pytest.raises(TypeError, match="record 0 is a int"):
        F.playlists_frame([5])
    with pytest.raises(TypeError, match="expected a list of records"):
        F.playlists_frame("not records")
    # lenient where the meaning is clear
    lenient = F.playlists_frame([{"id": "12", "pinned": "true"}, {"id": 3.0, "pinned": 0}])
    assert lenient["id"].tolist() == [12, 3] and lenient["pinned"].tolist() == [True, False]


_text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=12)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(
        st.tuples(
            st.one_of(st.none(), _text),
            st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
            st.one_of(st.none(), st.booleans()),
            st.one_of(
                st.none(),
                st.recursive(
                    st.one_of(st.booleans(), st.integers(-1000, 1000), _text),
                    lambda inner: st.one_of(
                        st.lists(inner, max_size=3), st.dictionaries(_text, inner, max_size=3)
                    ),
                    max_leaves=6,
                ),
            ),
        ),
        max_size=8,
    )
)
def test_csv_round_trip_property(rows: list[tuple[Any, Any, Any, Any]]) -> None:
    df = pd.DataFrame(
        {
            "t": pd.array([r[0] for r in rows], dtype="str"),
            "n": pd.array([r[1] for r in rows], dtype="Int64"),
            "b": pd.array([r[2] for r in rows], dtype="boolean"),
            "j": pd.Series([r[3] for r in rows], dtype=object),
        }
    )
    text = F.to_csv(df)
    pd.testing.assert_frame_equal(F.read_csv(text), df)


def test_sandbox_payloads_through_models_frames_and_csv(cloud_sandbox: Any) -> None:
    """Real HTTP to the sandbox: what it sends parses into models and frames and survives the CSV trip."""
    import httpx

    sb = cloud_sandbox
    headers = {"Authorization": f"Bearer {sb.personal_api_key}"}
    with httpx.Client(base_url=sb.url, headers=headers, timeout=30) as http:
        playlists = http.get(f"/api/projects/{sb.project_id}/session_recording_playlists/").json()
        transformations = http.get(
            f"/api/organizations/{sb.organization_id}/pipeline_transformations/"
        ).json()
        flags = http.get(f"/api/projects/{sb.project_id}/feature_flags/").json()
        decide = http.post(
            "/decide/?v=4", json={"api_key": sb.project_api_key, "distinct_id": "user-0001"}
        ).json()
        real = next(p for p in playlists["results"] if p["id"] > 0)
        recordings = http.get(
            f"/api/projects/{sb.project_id}/session_recording_playlists/{real['short_id']}/recordings/"
        ).json()
    assert len(Page[Playlist].model_validate(playlists).results) == len(playlists["results"])
    assert all(
        isinstance(t, Transformation) for t in Page[Transformation].model_validate(transformations).results
    )
    assert [f.key for f in Page[FeatureFlag].model_validate(flags).results] == [
        f["key"] for f in flags["results"]
    ]
    assert [r.id for r in RecordingsPage.model_validate(recordings).results] == [
        r["id"] for r in recordings["results"]
    ]
    cases = [
        (F.playlists_frame(playlists), len(playlists["results"])),
        (F.transformations_frame(transformations), len(transformations["results"])),
        (F.feature_flags_frame(flags), len(flags["results"])),
        (F.decide_frame(decide), len(decide["flags"])),
        (F.recordings_frame(recordings), len(recordings["results"])),
    ]
    for df, rows in cases:
        assert len(df) == rows
        pd.testing.assert_frame_equal(F.read_csv(F.to_csv(df)), df)
        assert "phx_" not in F.to_csv(df)
    pl = cases[0][0]
    assert pl["created_at"].dtype == UTC_US and pl["id"].dtype == "Int64"
    assert DecideResponse.model_validate(decide).feature_flags == dict(
        zip(cases[3][0]["key"], cases[3][0]["value"], strict=True)
    )


def test_csv_keeps_na_like_text() -> None:
    df = pd.DataFrame({"t": pd.array(["NA", "null", "nan", "None", "N/A", "#N/A", None], dtype="str")})
    back = F.read_csv(F.to_csv(df))
    pd.testing.assert_frame_equal(back, df)
    assert back["t"].isna().tolist() == [False] * 6 + [True]


def test_csv_simulation_like_frame_keeps_missing_kinds_and_index() -> None:
    # Shaped like a flag-simulation result: a text index, variant-or-False object columns with pd.NA.
    idx = pd.Index(["row-a", "row-b", "row-c"], name="who")
    df = pd.DataFrame(
        {
            "distinct_id": pd.array(["a", "b", "c"], dtype="str"),
            "beta": pd.array([True, None, False], dtype="boolean"),
            "mv": pd.Series(["control", False, pd.NA], dtype=object, index=idx),
            "mv:payload": pd.Series(['{"a":1}', None, np.nan], dtype=object, index=idx),
            "odd": pd.Series([pd.NaT, None, 1.5], dtype=object, index=idx),
            "mv:condition_index": pd.array([0, None, 1], dtype="Int64"),
            "error": pd.array([None, 'bad cell, "quoted"', None], dtype="str"),
        },
        index=idx,
    )
    back = F.read_csv(F.to_csv(df))
    pd.testing.assert_frame_equal(back, df)
    assert back.loc["row-c", "mv"] is pd.NA and back.loc["row-b", "mv:payload"] is None
    assert back.loc["row-b", "mv"] is False and back.loc["row-a", "odd"] is pd.NaT


def test_activity_frame_columns_dtypes_and_changes() -> None:
    from analytics_nb.models import ActivityPage

    df = F.activity_frame(ActivityPage.model_validate({"results": ACTIVITY}))
    assert list(df.columns[:10]) == [
        "id",
        "scope",
        "item_id",
        "activity",
        "created_at",
        "detail_name",
        "changes",
        "is_system",
        "is_staff",
        "unread",
    ]
    assert {"user_email", "user_id", "user_first_name"} <= set(df.columns)
    assert list(df.columns).index("detail") > list(df.columns).index("user_email")
    assert df["created_at"].dtype == UTC_US and df["item_id"].dtype == STR
    assert df.loc[0, "created_at"] == pd.Timestamp("2026-11-20T09:00:00.123456Z")
    assert df["is_system"].dtype == "boolean" and df["user_id"].dtype == "Int64"
    assert df.loc[0, "user_email"] == "ada@example.com" and pd.isna(df.loc[1, "user_email"])
    assert df.loc[0, "changes"] == 'enabled: false -> true; config: {"a": 1} -> null'
    assert pd.isna(df.loc[1, "changes"]) and df.loc[1, "detail_name"] == "Ünïcode ✓"
    assert df.loc[0, "detail"] == ACTIVITY[0]["detail"]  # the object itself, not text
    assert df.loc[0, "was_impersonated"] is False  # unknown fields kept as extras
    assert ACTIVITY[0]["item_id"] == "12" and "detail_name" not in ACTIVITY[0]  # input untouched


def test_activity_frame_reads_numeric_item_ids_and_refuses_bad_detail() -> None:
    df = F.activity_frame([{"id": "a", "item_id": 7, "detail": None}])
    assert df.loc[0, "item_id"] == "7" and pd.isna(df.loc[0, "detail_name"])
    with pytest.raises(ValueError, match=r"entry 0 field 'detail'"):
        F.activity_frame([{"id": "a", "detail": "not an object"}])
    with pytest.raises(TypeError, match="activity_frame"):
        F.activity_frame("nope")


@pytest.mark.parametrize("value", [2**64, -(2**63) - 1, 1e300])
def test_an_integer_beyond_64_bits_is_a_clear_error_naming_the_field(value: Any) -> None:
    # found with the compact-rows tests: pandas raised a bare OverflowError, which named nothing and which
    # FrameParts (expecting TypeError/ValueError from a bad value) did not catch
    with pytest.raises(ValueError, match="field 'id': expected an integer within 64 bits, got"):
        F.playlists_frame([{"id": 1}, {"id": value}])

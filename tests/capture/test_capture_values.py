"""Value serialisation and local validation of capture events (no server needed)."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import uuid

import numpy as np
import pandas as pd
import pytest

from analytics_nb.capture import MAX_EVENT_BYTES, EventError, build_event, json_value, new_uuid7
from analytics_nb.capture._events import prepare_frame
from analytics_nb.capture._values import MISSING, ValueConversionError, convert_column, new_uuids


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (np.int64(7), 7),
        (np.int32(-3), -3),
        (np.uint8(200), 200),
        (np.float64(1.5), 1.5),
        (np.float32(0.25), 0.25),
        (np.bool_(True), True),
        (np.str_("x"), "x"),
        (decimal.Decimal("2.5"), 2.5),
        (uuid.UUID("12345678-1234-5678-1234-567812345678"), "12345678-1234-5678-1234-567812345678"),
        (dt.date(2024, 5, 1), "2024-05-01"),
        (pd.Timedelta(seconds=90), 90.0),
    ],
)
def test_scalars_become_json_natives(value: object, expected: object) -> None:
    out = json_value(value)
    assert out == expected
    assert type(out) is type(expected)


@pytest.mark.parametrize("value", [None, pd.NA, np.nan, float("nan"), pd.NaT, np.datetime64("NaT")])
def test_missing_values_are_marked_missing(value: object) -> None:
    assert json_value(value) is MISSING


def test_timestamps_aware_are_converted_to_utc_and_naive_are_assumed_utc() -> None:
    paris = pd.Timestamp("2024-05-01 12:00:00", tz="Europe/Paris")
    assert json_value(paris) == "2024-05-01T10:00:00Z"
    assert json_value(pd.Timestamp("2024-05-01 12:00:00")) == "2024-05-01T12:00:00Z"
    assert json_value(dt.datetime(2024, 5, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=2)))) == (
        "2024-05-01T10:00:00Z"
    )
    with pytest.raises(ValueConversionError, match="no time zone"):
        json_value(pd.Timestamp("2024-05-01 12:00:00"), on_naive="raise")


def test_nested_structures_keep_positions_and_convert_inside() -> None:
    value = {
        "a": [np.int64(1), None, np.nan, {"b": pd.Timestamp("2024-01-01", tz="UTC")}],
        "t": (np.bool_(False), "x"),
        2: pd.NA,
        "arr": np.array([1.5, 2.5]),
    }
    out = json_value(value)
    assert out == {
        "a": [1, None, None, {"b": "2024-01-01T00:00:00Z"}],
        "t": [False, "x"],
        "2": None,
        "arr": [1.5, 2.5],
    }
    json.dumps(out, allow_nan=False)  # really JSON


@pytest.mark.parametrize("value", [float("inf"), np.float64("-inf"), b"raw", object()])
def test_values_json_cannot_carry_are_refused_with_a_fix(value: object) -> None:
    with pytest.raises(ValueConversionError) as info:
        json_value(value)
    assert any(word in str(info.value) for word in ("replace", "decode", "convert"))


def test_convert_column_by_dtype() -> None:
    frame = pd.DataFrame(
        {
            "i": np.array([1, 2, 3], dtype="int64"),
            "f": [1.0, np.nan, 3.5],
            "b": [True, False, True],
            "I": pd.array([1, None, 3], dtype="Int64"),
            "B": pd.array([True, None, False], dtype="boolean"),
            "s": pd.Series(["a", None, "c"], dtype="str"),
            "c": pd.Series(["x", None, "x"], dtype="category"),
            "t": pd.to_datetime(
                ["2024-01-01 00:00:00", None, "2024-01-02 00:00:00.5"], format="ISO8601"
            ).tz_localize("UTC"),
            "o": [{"k": np.int64(1)}, None, [1, 2]],
        }
    )
    got = {c: convert_column(frame[c], name=c) for c in frame.columns}
    assert got["i"].values == [1, 2, 3] and got["i"].present is None
    assert got["f"].present.tolist() == [True, False, True]
    assert got["b"].values == [True, False, True]
    assert [type(v) for v in got["I"].values if v is not None] == [int, int]
    assert got["I"].present.tolist() == [True, False, True]
    assert got["B"].values[0] is True and got["B"].present.tolist() == [True, False, True]
    assert got["s"].present.tolist() == [True, False, True]
    assert got["c"].values[0] == "x" and got["c"].present.tolist() == [True, False, True]
    assert got["t"].values[0] == "2024-01-01T00:00:00.000000Z"
    assert got["t"].values[2] == "2024-01-02T00:00:00.500000Z"
    assert got["t"].present.tolist() == [True, False, True]
    assert got["o"].values[0] == {"k": 1} and got["o"].present.tolist() == [True, False, True]


def test_naive_datetime_column_refused_when_asked() -> None:
    col = convert_column(pd.Series(pd.to_datetime(["2024-01-01"])), name="seen", on_naive="raise")
    assert "seen" in col.errors[0] and "tz_localize" in col.errors[0]


def test_uuid7_shape_and_uniqueness() -> None:
    ids = new_uuids(5000)
    assert len(set(ids)) == 5000
    parsed = [uuid.UUID(u) for u in ids[:50]] + [uuid.UUID(new_uuid7())]
    assert {p.version for p in parsed} == {7}
    assert all(str(p) == u for p, u in zip(parsed, ids[:50], strict=False))


def test_build_event_validates_fields() -> None:
    event = build_event(
        "signup",
        42,
        {"plan": np.str_("pro"), "n": np.int64(2), "gone": pd.NA},
        timestamp=pd.Timestamp("2024-05-01 12:00"),
        groups={"company": "acme"},
    )
    assert event["distinct_id"] == "42"
    assert event["properties"] == {"plan": "pro", "n": 2, "$groups": {"company": "acme"}}
    assert event["timestamp"] == "2024-05-01T12:00:00Z"
    assert uuid.UUID(event["uuid"]).version == 7
    for bad, field in [(("", "u1"), "event name"), (("e", ""), "distinct_id"), (("e", None), "distinct_id")]:
        with pytest.raises(EventError, match=field):
            build_event(*bad)
    with pytest.raises(EventError, match="uuid"):
        build_event("e", "u", uuid="not-a-uuid")
    with pytest.raises(EventError, match="limit"):
        build_event("e", "u", {"blob": "x" * (MAX_EVENT_BYTES + 10)})
    with pytest.raises(EventError, match="no time zone"):
        build_event("e", "u", timestamp=dt.datetime(2024, 1, 1), on_naive_timestamp="raise")


def test_prepare_frame_refuses_bad_rows_and_keeps_the_rest() -> None:
    given = "0191b8a4-4a10-7000-8000-000000000001"
    frame = pd.DataFrame(
        {
            "event": ["ok", "", None, "ok", "ok", "ok", "ok"],
            "distinct_id": ["u1", "u2", "u3", None, "  ", "u6", "u7"],
            "uuid": [given, None, None, None, None, "nope", given],
            "score": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, float("inf")],
        },
        index=list("abcdefg"),
    )
    prepared = prepare_frame(frame)
    assert set(prepared.refused) == {1, 2, 3, 4, 5, 6}
    assert "empty" in prepared.refused[1] and "missing" in prepared.refused[2]
    assert "distinct_id" in prepared.refused[3] and "distinct_id" in prepared.refused[4]
    assert "not a valid UUID" in prepared.refused[5]
    assert "also used by row 'a'" in prepared.refused[6] or "infinite" in prepared.refused[6]
    assert prepared.uuids[0] == given
    assert json.loads(prepared.encode(0)) == {
        "uuid": given,
        "event": "ok",
        "distinct_id": "u1",
        "properties": {"score": 1.0},
    }


def test_prepare_frame_merges_dict_columns_groups_and_drops_missing() -> None:
    frame = pd.DataFrame(
        {
            "event": ["e", "e"],
            "distinct_id": pd.array([1, 2], dtype="Int64"),
            "timestamp": ["2024-05-01T12:00:00+02:00", None],
            "properties": [{"a": 1, "plan": "old", "n": None}, None],
            "plan": ["new", None],
            "group:company": ["acme", None],
        }
    )
    prepared = prepare_frame(frame)
    assert not prepared.refused
    first, second = (json.loads(prepared.encode(i)) for i in range(2))
    assert first["distinct_id"] == "1" and pd.Timestamp(first["timestamp"]) == pd.Timestamp(
        "2024-05-01T10:00:00Z"
    )
    assert first["properties"] == {"a": 1, "plan": "new", "$groups": {"company": "acme"}}
    assert second["properties"] == {} and "timestamp" not in second


def test_prepare_frame_requires_columns_and_naive_policy() -> None:
    with pytest.raises(ValueError, match="'distinct_id'"):
        prepare_frame(pd.DataFrame({"event": ["e"]}))
    naive = pd.DataFrame({"event": ["e"], "distinct_id": ["u"], "timestamp": pd.to_datetime(["2024-01-01"])})
    assert prepare_frame(naive).timestamps == ["2024-01-01T00:00:00.000000Z"]
    refused = prepare_frame(naive, on_naive_timestamp="raise").refused
    assert "time zone" in refused[0]


def test_text_timestamps_parse_per_zone_policy() -> None:
    mixed = pd.DataFrame(
        {
            "event": "e",
            "distinct_id": "u",
            "timestamp": [
                "2024-05-01T12:00:00+02:00",
                "2024-05-01T12:00:00Z",
                "2024-05-01 12:00",
                None,
                "junk",
            ],
        }
    )
    prepared = prepare_frame(mixed)
    assert [None if t is None else pd.Timestamp(t) for t in prepared.timestamps[:4]] == [
        pd.Timestamp("2024-05-01 10:00", tz="UTC"),
        pd.Timestamp("2024-05-01 12:00", tz="UTC"),
        pd.Timestamp("2024-05-01 12:00", tz="UTC"),
        None,
    ]
    assert list(prepared.refused) == [4] and "ISO 8601" in prepared.refused[4]
    strict = prepare_frame(mixed, on_naive_timestamp="raise")
    assert sorted(strict.refused) == [2, 4] and "no time zone" in strict.refused[2]


def test_empty_and_minimal_frames() -> None:
    empty = prepare_frame(pd.DataFrame({"event": pd.Series([], dtype="str"), "distinct_id": []}))
    assert empty.n == 0 and empty.properties == []
    minimal = prepare_frame(pd.DataFrame({"event": ["e"], "distinct_id": [7]}))
    assert json.loads(minimal.encode(0))["properties"] == {} and minimal.distinct_ids == ["7"]


def test_properties_column_accepts_json_text() -> None:
    frame = pd.DataFrame(
        {
            "event": ["e", "e", "e"],
            "distinct_id": ["a", "b", "c"],
            "properties": ['{"x": 1}', "not json", "[1]"],
        }
    )
    prepared = prepare_frame(frame)
    assert json.loads(prepared.encode(0))["properties"] == {"x": 1}
    assert "not JSON" in prepared.refused[1] and "must hold dicts" in prepared.refused[2]

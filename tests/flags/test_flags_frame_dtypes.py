"""Frames: the vectorised engine agrees with the scalar one on every dtype; missing cells are absent (or null
on request); a cell outside JSON matters only to the flags that read it; a float distinct_id column is
refused."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pandas as pd
import pytest

from _flags import flag, prop
from analytics_nb.flags import evaluate_flags, evaluate_frame
from analytics_nb.flags._values import BadValueError, normalize

N = 6
NOW = dt.datetime.now(dt.UTC)

DATES = ["2024-01-01", None, "2023-06-01 12:00", "2031-01-01", "2020-02-29", "2024-06-01"]
COLUMNS: dict[str, Any] = {
    "int64": pd.Series([1, 5, 30, -2, 0, 7], dtype="int64"),
    "Int64": pd.array([1, None, 30, -2, 0, 7], dtype="Int64"),
    "float64": pd.Series([1.5, np.nan, 30.0, 1e16, -0.0, np.inf]),
    "float32": pd.Series([1.5, np.nan, 30.0, 2.5, 0.0, 7.0], dtype="float32"),
    "bool": pd.Series([True, False, True, False, True, True]),
    "boolean": pd.array([True, None, False, True, None, False], dtype="boolean"),
    "string": pd.array(["pro", None, "free", "1.2.3", "2024-01-01", "naïve"], dtype="string"),
    "str": pd.array(["pro", None, "free", "1.2.3", "2024-01-01", "naïve"], dtype="str"),
    "category": pd.Series(["pro", "free", None, "pro", "x", "free"], dtype="category"),
    "object": pd.Series(["pro", 5, None, 1.5, True, ["a", "b"]], dtype=object),
    "datetime64": pd.Series(pd.to_datetime(DATES, format="ISO8601")),
    "datetime64tz": pd.Series(pd.to_datetime(DATES, format="ISO8601").tz_localize("Europe/Berlin")),
}
ODD: dict[str, Any] = {
    "timedelta": pd.Series(pd.to_timedelta([1, 2, None, 4, 5, 6], unit="s")),
    "period": pd.Series(pd.period_range("2024-01", periods=N, freq="M")),
    "interval": pd.Series(pd.interval_range(0, N)),
    "complex": pd.Series([1 + 2j] * N),
    "bytes": pd.Series([b"x", "ok", b"y", "ok", b"z", "ok"], dtype=object),
    "sets": pd.Series([{1}, "ok", {2}, "ok", {3}, "ok"], dtype=object),
}
FILTERS = [
    ("exact", "pro"),
    ("exact", ["5", "true", "1.5"]),
    ("is_not", "free"),
    ("is_set", "is_set"),
    ("is_not_set", "is_not_set"),
    ("icontains", "R"),
    ("regex", r"^\w+$"),
    ("gt", 2),
    ("is_date_before", "2024-03-01"),
    ("semver_gt", "1.0.0"),
]


FLAGS = [flag(f"f{i}", {"properties": [prop("p", value, op)]}) for i, (op, value) in enumerate(FILTERS)]
"""One flag per filter, each reading the person property ``p``."""


def _missing(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, (float, np.floating)) and value != value


def _native(value: Any) -> Any:
    """A typed column's cell as the frame engine reads it: its Python value (what `df.to_dict("records")`
    gives). The dict API in sdk mode compares a numpy scalar as the SDK does
    (tests/flags/test_flags_cells.py)."""
    if isinstance(value, np.generic) and not isinstance(value, np.datetime64):
        return value.item()
    return value


def _scalar_value(value: Any) -> Any:
    return pd.NA if value is None else value


@pytest.mark.parametrize("mode", ["server", "sdk"])
@pytest.mark.parametrize("nulls", ["absent", "null"])
@pytest.mark.parametrize("dtype", sorted(COLUMNS))
def test_frame_agrees_with_scalar_on_every_dtype(dtype: str, mode: str, nulls: str) -> None:
    frame = pd.DataFrame({"distinct_id": [f"u{i}" for i in range(N)], "p": COLUMNS[dtype]})
    out = evaluate_frame(frame, definitions=FLAGS, mode=mode, nulls=nulls, reasons=True)
    assert out["error"].isna().all()
    for i in range(N):
        cell = frame["p"].iloc[i]
        missing_as: dict[str, Any] = {} if nulls == "absent" else {"p": None}
        person = missing_as if _missing(cell) else {"p": _native(cell)}
        expected = evaluate_flags(FLAGS, f"u{i}", person_properties=person, mode=mode, now=NOW)
        for key, res in expected.items():
            got = out[key].iloc[i]
            want = _scalar_value(res.value)
            assert (got is pd.NA and want is pd.NA) or got == want, (dtype, i, key, cell, got, res)
            assert out[f"{key}:reason"].iloc[i] == res.reason, (dtype, i, key, cell, res)


@pytest.mark.parametrize("mode", ["server", "sdk"])
@pytest.mark.parametrize("dtype", sorted(ODD))
def test_unreadable_cells_matter_only_to_the_flags_that_read_them(dtype: str, mode: str) -> None:
    """A cell outside JSON no longer makes its whole row an error (issue 28): each flag that reads it
    answers as the dict API does for the same cell (what the SDK / the service answers, or `<NA>` with
    reason inconclusive), and a flag that does not read it answers. (Before, every flag of the row was
    `<NA>` and the row's `error` named the cell.)"""
    frame = pd.DataFrame({"distinct_id": [f"u{i}" for i in range(N)], "p": ODD[dtype], "q": ["pro"] * N})
    qflag = flag("q", {"properties": [prop("q", "pro")]})
    out = evaluate_frame(frame, definitions=[*FLAGS, qflag], mode=mode, reasons=True, now=NOW)
    assert out["error"].isna().all(), out["error"].tolist()
    unreadable = 0
    for i in range(N):
        cell = frame["p"].iloc[i]
        try:
            normalize(cell)
        except BadValueError:
            unreadable += 1
        person = {"q": "pro"} if _missing(cell) else {"p": cell, "q": "pro"}
        expected = evaluate_flags([*FLAGS, qflag], f"u{i}", person_properties=person, mode=mode, now=NOW)
        for key, res in expected.items():
            got = out[key].iloc[i]
            want = _scalar_value(res.value)
            assert (got is pd.NA and want is pd.NA) or got == want, (dtype, mode, i, key, cell, got, res)
            assert out[f"{key}:reason"].iloc[i] == res.reason, (dtype, mode, i, key, cell, res)
        assert out["q"].iloc[i] == True  # noqa: E712 - a flag that does not read the cell answers
    assert unreadable > 0


def test_float_distinct_id_column_is_refused_with_the_fix() -> None:
    frame = pd.DataFrame({"distinct_id": [3.0, 4.0, np.nan]})
    with pytest.raises(ValueError, match=r"float dtype.*astype\('Int64'\)"):
        evaluate_frame(frame, definitions=FLAGS)
    frame["distinct_id"] = frame["distinct_id"].astype("Int64").astype("string")
    out = evaluate_frame(frame, definitions=FLAGS)
    assert out["error"].iloc[2] is not pd.NA and out["error"].iloc[0] is pd.NA


def test_missing_cells_are_absent_by_default_and_null_on_request() -> None:
    frame = pd.DataFrame({"distinct_id": ["a", "b"], "p": pd.Series([None, "x"], dtype=object)})
    is_set = [
        {
            "key": "s",
            "active": True,
            "filters": {
                "groups": [
                    {"properties": [{"key": "p", "operator": "is_set", "value": "is_set", "type": "person"}]}
                ]
            },
        }
    ]
    assert evaluate_frame(frame, definitions=is_set)["s"].tolist() == [False, True]
    assert evaluate_frame(frame, definitions=is_set, nulls="null")["s"].tolist() == [True, True]
    # a None inside a person_properties dict cell is JSON null, as in evaluate_flags
    dicts = pd.DataFrame({"distinct_id": ["a", "b"], "person_properties": [{"p": None}, {}]})
    assert evaluate_frame(dicts, definitions=is_set)["s"].tolist() == [True, False]
    with pytest.raises(ValueError, match="nulls"):
        evaluate_frame(frame, definitions=is_set, nulls="nan")


def test_sdk_mode_group_flag_needs_only_the_group_key_like_the_client() -> None:
    """The SDK's client adds `$group_key` to every passed group's properties, so the group is enough."""
    flag = {
        "key": "g",
        "active": True,
        "filters": {
            "aggregation_group_type_index": 0,
            "groups": [{"properties": [], "rollout_percentage": 100}],
        },
    }
    frame = pd.DataFrame({"distinct_id": ["a", "b"], "group:company": ["acme", None]})
    out = evaluate_frame(frame, definitions=[flag], mode="sdk", group_type_mapping={"0": "company"})
    assert out["g"].tolist() == [True, False]
    res = evaluate_flags(
        [flag], "a", groups={"company": "acme"}, group_type_mapping={"0": "company"}, mode="sdk"
    )
    assert res["g"].value is True

"""Issue 15 (listing speed), frames side: the fast transposition, the direct int/bool/str column paths and
``FrameParts`` (a frame built in parts while pages arrive) give exactly what one build over all records
gives: same columns, order, dtypes, values, extra-field handling and error messages."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pandas as pd
import pytest
from test_models import PLAYLIST, SYNTHETIC

from analytics_nb import frames as F
from analytics_nb.frames import DTYPES, FrameParts
from analytics_nb.frames._schema import column, transpose


def _by_dict_get(dicts: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """The reference transposition: one ``dict.get`` per key and record (key order of first appearance)."""
    keys: dict[str, None] = {}
    for d in dicts:
        keys.update(dict.fromkeys(d))
    return {k: [d.get(k) for d in dicts] for k in keys}


@pytest.mark.parametrize(
    "dicts",
    [
        [{"a": 1, "b": 2}, {"b": 3, "a": 4}],  # same keys, another order
        [{"a": 1, "b": 2}, {"a": 3, "c": 4}],  # same width, other keys: lengths add up but "b" is missing
        [{"a": 1}, {"a": 2, "b": 3}],  # a later record has an extra key
        [{"a": 1, "b": 2}, {"a": 3}],  # a later record lacks a key
        [{}, {"a": 1}, {}],  # empty records among full ones
        [{"x": None}, {"x": 2}],  # one key only
        [{"a": 1, "b": 2}, {"b": 3, "c": 5}, {"c": 6, "d": 7}],  # overlapping layouts, same width
        [{f"k{i}": i, "id": i} for i in range(40)],  # more layouts than the grouped path takes
    ],
)
def test_transpose_matches_dict_get_on_mixed_layouts(dicts: list[dict[str, Any]]) -> None:
    cols, n = transpose(dicts)
    assert n == len(dicts)
    expected = _by_dict_get(dicts)
    assert set(cols) == set(expected)
    for key, values in expected.items():
        assert list(cols[key]) == values, key


def test_transpose_of_uniform_records_keeps_the_first_records_key_order() -> None:
    cols, n = transpose([{"b": 1, "a": 2}, {"a": 3, "b": 4}])
    assert list(cols) == ["b", "a"] and list(cols["a"]) == [2, 3] and n == 2
    assert transpose([]) == ({}, 0) and transpose([{}, {}]) == ({}, 2)


@pytest.mark.parametrize(
    ("values", "kind"),
    [
        ([1, None, 3], "int"),
        ([1, 2, -(2**63)], "int"),
        ([True, None, False], "bool"),
        ([True, False], "bool"),
        (["a", None, "é✓"], "str"),
        ([], "int"),
        ([], "str"),
    ],
)
def test_direct_column_paths_equal_pandas(values: list[Any], kind: str) -> None:
    got = column(values, kind, "x")  # type: ignore[arg-type]
    pd.testing.assert_extension_array_equal(got, pd.array(values, dtype=DTYPES[kind]))


def test_values_off_the_direct_paths_keep_their_old_handling() -> None:
    # numbers in a text column become text, every missing marker is NaN (what pd.array does)
    text = column(["a", 5, None, float("nan"), pd.NA], "str", "x")
    assert list(text[:2]) == ["a", "5"] and text.isna().tolist() == [False, False, True, True, True]
    # integral floats and numpy integers are read as integers; 0/1 as booleans
    assert column([1.0, np.int64(2)], "int", "x").tolist() == [1, 2]
    assert column([1, 0, None], "bool", "x").tolist() == [True, False, pd.NA]
    # a boolean among integers goes the general way (pandas reads it as 1), text is refused naming the field
    assert column([True, 1], "int", "x").tolist() == pd.array([True, 1], dtype="Int64").tolist()
    with pytest.raises(ValueError, match="field 'x': expected an integer, got 'seven'"):
        column([1, "seven"], "int", "x")
    # an integer beyond 64 bits still fails as before (no silent wrap-around on the direct path)
    with pytest.raises((OverflowError, TypeError, ValueError)):
        column([1, 2**70], "int", "x")


def _records(n: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        record = copy.deepcopy(PLAYLIST if i % 3 else SYNTHETIC)
        record["id"] = i + 1
        out.append(record)
    return out


def _in_parts(records: list[dict[str, Any]], page: int, part_rows: int) -> pd.DataFrame:
    parts = FrameParts(F.playlists_frame, part_rows=part_rows)
    for start in range(0, len(records), page):
        parts.add(records[start : start + page])
    return parts.frame()


@pytest.mark.parametrize(("page", "part_rows"), [(7, 10), (5, 1), (50, 1000), (3, 4)])
def test_frame_parts_equal_one_build(page: int, part_rows: int) -> None:
    records = _records(40)
    pd.testing.assert_frame_equal(_in_parts(records, page, part_rows), F.playlists_frame(records))


def test_frame_parts_with_fields_in_some_pages_only_equal_one_build() -> None:
    records = _records(30)
    records[25]["user_access_level"] = "editor"  # an extra field in a late page only
    records[4]["created_by"] = {**records[4]["created_by"], "is_staff": True}  # an extra user field
    records[12]["created_by"] = None
    del records[14]["description"]
    one = F.playlists_frame(records)
    parts = _in_parts(records, 5, 5)
    pd.testing.assert_frame_equal(parts, one)
    assert parts["user_access_level"].tolist()[24:26] == [None, "editor"]
    assert parts.columns[-1] == "user_access_level"


def test_frame_parts_name_the_field_one_build_names() -> None:
    records = _records(30)
    records[20]["pinned"] = "maybe"  # a later column in spec order, in an early part
    records[28]["id"] = "x"  # the first column, in the last part: one build names this one first
    with pytest.raises(ValueError) as one:
        F.playlists_frame(records)
    with pytest.raises(ValueError) as parts:
        _in_parts(records, 5, 5)
    assert str(parts.value) == str(one.value) and "field 'id'" in str(one.value)


def test_frame_parts_of_nothing_and_of_empty_pages() -> None:
    pd.testing.assert_frame_equal(FrameParts(F.playlists_frame).frame(), F.playlists_frame([]))
    parts = FrameParts(F.playlists_frame, part_rows=2)
    parts.add([])
    records = _records(3)
    parts.add(records)
    parts.add([])
    pd.testing.assert_frame_equal(parts.frame(), F.playlists_frame(records))

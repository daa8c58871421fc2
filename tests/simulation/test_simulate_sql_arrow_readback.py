"""The SQL result's answers read back column at a time from Arrow (issue 35) are the frame the former
builder gave, exactly: the former path (DuckDB's ``df()``, then `build_frame` over Python lists) is kept
here as the oracle and compared with `pd.testing.assert_frame_equal` (columns, order, dtypes, categories,
index, values) for ``collect`` with and without the input columns, ``head``, ``errors`` and ``batches``;
over reasons and payloads on and off, multivariate and holdout flags, NA answers, error rows, text and
integer ids, a parquet file, a folder of parquet files and a run the local engine answered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from analytics_nb.flags import REASON_CODES
from analytics_nb.simulation import simulate
from analytics_nb.simulation._inputs import id_text
from analytics_nb.simulation._output import build_frame, category_column, select_flags
from analytics_nb.simulation._result import with_inputs
from analytics_nb.simulation._sql_frame import FrameSpec, arrow_frame_columns, duckdb_frame, in_order
from analytics_nb.simulation._sql_source import SqlSource, _value

pytest.importorskip("duckdb", reason="the 'sql' extra is not installed")
pytest.importorskip("sqlglot", reason="the 'sql' extra is not installed")
pa = pytest.importorskip("pyarrow")


def _prop(key: str, op: str, value: Any) -> dict[str, Any]:
    return {"key": key, "operator": op, "value": value, "type": "person"}


AB = {"variants": [{"key": "control", "rollout_percentage": 50}, {"key": "test", "rollout_percentage": 50}]}
DEFINITIONS: list[dict[str, Any]] = [
    {
        "key": "half",
        "filters": {
            "groups": [{"properties": [], "rollout_percentage": 50}],
            "payloads": {"true": '{"on": 1}'},
        },
    },
    # NA where `age` is missing (an unknown answer), false below 18
    {"key": "adults", "filters": {"groups": [{"properties": [_prop("age", "gte", 18)]}]}},
    {
        "key": "exp",
        "filters": {
            "groups": [{"properties": [_prop("plan", "exact", ["pro", "free"])], "rollout_percentage": 80}],
            "multivariate": AB,
            "payloads": {"control": '"c"', "test": "[1, 2]"},
        },
    },
    {
        "key": "held",
        "filters": {
            "groups": [{"properties": [], "rollout_percentage": 60}],
            "multivariate": AB,
            "holdout": {"id": 3, "exclusion_percentage": 20},
        },
    },
    {
        "key": "hold-only",
        "filters": {
            "groups": [{"properties": [], "rollout_percentage": 30}],
            "holdout": {"id": 4, "exclusion_percentage": 50},
            "payloads": {"true": "7"},
        },
    },
]
#: a property the property sets have no column for: NA (reason missing_property), answered by the local engine
UNKNOWN = {"key": "by-country", "filters": {"groups": [{"properties": [_prop("country", "exact", ["DE"])]}]}}
REGEX = {"key": "rx", "filters": {"groups": [{"properties": [_prop("plan", "regex", "^p")]}]}}


def _persons(n: int = 240, *, int_ids: bool = False, bad_ids: bool = False) -> pd.DataFrame:
    """Property sets; ``bad_ids``: a missing and an empty id (error rows: only a file read in place has
    them, an in-memory frame's are refused)."""
    rng = np.random.default_rng(7)
    ids: list[Any] = list(range(1000, 1000 + n)) if int_ids else [f"user-{i}" for i in range(n)]
    if bad_ids:
        ids[5], ids[17] = None, ""
    age = pd.array([None if i % 9 == 0 else int(a) for i, a in enumerate(rng.integers(5, 80, n))], "Int64")
    plan = [None if i % 11 == 0 else ["pro", "free", "team"][i % 3] for i in range(n)]
    return pd.DataFrame({"distinct_id": ids, "age": age, "plan": plan, "score": rng.random(n)})


# -- the former read-back (the oracle) --------------------------------------------------------------------
def _texts(column: pd.Series) -> list[Any]:
    values: list[Any] = column.astype(object).where(column.notna(), None).tolist()
    return values


def _old_values(column: pd.Series, text: bool) -> list[Any]:
    if text:
        return [{"true": True, "false": False}.get(v, v) for v in _texts(column)]
    return [_value(v, text) for v in _texts(column)]


def _old_shaped(src: SqlSource, raw: pd.DataFrame, position: str) -> pd.DataFrame:
    index = src._index(raw[position].tolist())
    keys, text = src.sim.flags, src._text_flags
    values = {k: _old_values(raw[k], k in text) for k in keys}
    payloads = None
    if src._payloads:
        payloads = {
            sf.key: [
                None if v is None or v is False else sf.payloads.get(v if isinstance(v, str) else "true")
                for v in values[sf.key]
            ]
            for sf in src.sim.query.flags
        }
    written = src.sim.query.reasons
    ids = raw["distinct_id"] if src._id_dtype is not object else id_text(raw["distinct_id"])
    frame = build_frame(
        index,
        ids.tolist(),
        keys,
        values,
        multivariate=text,
        payloads=payloads,
        payload_texts=src._defs.payload_texts(),
        reasons={k: _texts(raw[k + ":reason"]) for k in keys} if written else None,
        condition_index={k: raw[k + ":condition_index"].astype("Int64").tolist() for k in keys}
        if written
        else None,
        errors=_texts(raw["error"]),
        id_dtype=src._id_dtype,
    )
    return select_flags(frame, src._keys, payloads=src._payloads, reasons=src._reasons)


def _old_read(src: SqlSource, where: str = "TRUE", limit: int | None = None) -> pd.DataFrame:
    keys = src._row_keys
    if "_anb_file" in src.sim.query.carry:
        numbered = f"SELECT *, row_number() OVER (ORDER BY {keys}) - 1 AS _anb_pos FROM {src.answers}"
        sql, position = f"SELECT * FROM ({numbered}) WHERE {where} ORDER BY _anb_pos", "_anb_pos"
    else:
        sql, position = f"SELECT * FROM {src.answers} WHERE {where} ORDER BY _anb_row", "_anb_row"
    raw = src.sim.con.sql(sql + (f" LIMIT {int(limit)}" if limit is not None else "")).df()
    return _old_shaped(src, raw, position)


def _old_inputs(src: SqlSource) -> pd.DataFrame:
    if src._given_inputs is not None:
        return src._given_inputs
    keys = src._row_keys
    return src.sim.con.sql(f"SELECT * EXCLUDE ({keys}) FROM persons ORDER BY {keys}").df()


def _fresh(result: Any) -> SqlSource:
    """The result's source with nothing kept (each read from the answers file)."""
    src: SqlSource = result.source
    src.outputs = src.frame = None
    return src


def _check(result: Any) -> None:
    """Every read of the SQL result equals the former read-back."""
    src = _fresh(result)
    old = _old_read(src)
    assert len(old) > 0
    pd.testing.assert_frame_equal(src.read(), old)
    pd.testing.assert_frame_equal(src.head(13), _old_read(src, limit=13))
    pd.testing.assert_frame_equal(src.errors(), _old_read(src, "error IS NOT NULL")[["distinct_id", "error"]])
    want = with_inputs(old, _old_inputs(src))
    pd.testing.assert_frame_equal(_fresh(result).collect(inputs=True), want)
    for inputs in (False, True):
        parts = list(_fresh(result).batches(37, inputs=inputs))
        starts = range(0, len(old), 37)
        assert len(parts) == len(starts)
        for start, part in zip(starts, parts, strict=True):
            pd.testing.assert_frame_equal(part, (want if inputs else old).iloc[start : start + 37])


@pytest.mark.parametrize(
    ("payloads", "reasons"), [(True, True), (False, False), (True, False), (False, True)]
)
def test_a_frame_with_text_ids_reads_back_as_before(payloads: bool, reasons: bool) -> None:
    definitions = [*DEFINITIONS, UNKNOWN]
    with (
        pytest.warns(UserWarning, match="by-country"),
        simulate(
            _persons(),
            engine="sql",
            definitions=definitions,
            payloads=payloads,
            reasons=reasons,
            progress=False,
        ) as result,
    ):
        _check(result)
        frame = result.source.collect()
        # not vacuous: NA answers, error rows, variants, holdout values and payloads all occur
        assert frame["by-country"].isna().all() and frame["adults"].notna().all()
        assert {"control", "test", False} <= set(frame["exp"].dropna())
        assert {"holdout-4", True, False} <= set(frame["hold-only"])
        assert any(str(v).startswith("holdout-") for v in frame["held"].dropna())
        if payloads:
            assert frame["exp:payload"].notna().any() and frame["half:payload"].notna().any()
        if reasons:
            assert frame["adults:reason"].dtype == pd.CategoricalDtype(list(REASON_CODES))


def test_integer_ids_read_back_as_their_text_as_before() -> None:
    with simulate(
        _persons(int_ids=True), engine="sql", definitions=DEFINITIONS, payloads=True, progress=False
    ) as result:
        _check(result)
        assert result.source.collect()["distinct_id"].dtype == object


def test_a_parquet_file_and_a_folder_read_back_as_before(tmp_path: Path) -> None:
    persons = _persons(300, bad_ids=True)
    persons.to_parquet(tmp_path / "one.parquet")
    folder = tmp_path / "export"
    folder.mkdir()
    for i, start in enumerate((0, 110, 200)):
        persons.iloc[start : start + [110, 90, 100][i]].to_parquet(folder / f"part-{i}.parquet")
    for source in (tmp_path / "one.parquet", folder):
        with simulate(
            source, engine="sql", definitions=DEFINITIONS, payloads=True, reasons=True, progress=False
        ) as result:
            _check(result)
            assert result.source.collect()["error"].notna().sum() == 2  # not vacuous: the error rows


def test_a_run_the_local_engine_answered_reads_back_as_before() -> None:
    with simulate(
        _persons(), engine="sql", definitions=[*DEFINITIONS, REGEX], payloads=True, progress=False
    ) as result:
        assert result.source.sim.local_rows > 0 or result.source.sim.local_flags
        _check(result)


def _spec(payloads: dict[str, dict[str, str]] | None, texts: dict[str, list[str]]) -> FrameSpec:
    return FrameSpec(
        ["b", "m"],
        {"m"},
        reasons_written=True,
        payload_tables=payloads,
        payload_texts=texts,
        cell_value=_value,
    )


def test_a_reason_or_payload_outside_the_known_ones_is_appended_in_order_of_its_first_row() -> None:
    b = [True, None, False, True, True]
    m = ["x", "true", None, "y", "false"]
    table = pa.table(
        {
            "b": pa.array(b, pa.bool_()),
            "m": pa.array(m, pa.string()),
            "b:reason": ["newer_b", None, "condition_match", "newer_a", "newer_b"],
            "m:reason": pa.array(["newer", "no_condition_match", None, "newer", "zz"]).dictionary_encode(),
            "b:condition_index": pa.array([0, None, 1, 2, None], pa.int32()),
            "m:condition_index": pa.array([None] * 5, pa.null()),
            "error": pa.array([None, None, "bad id", None, None], pa.string()),
        }
    )
    tables = {"b": {"true": "T"}, "m": {"y": "Y", "x": "X", "true": "T"}}
    index = pd.Index([4, 3, 2, 1, 0])
    got = arrow_frame_columns(_spec(tables, {"b": [], "m": ["Y"]}), table, index)
    assert got["b:reason"].cat.categories.tolist() == [*REASON_CODES, "newer_b", "newer_a"]
    assert got["m:payload"].cat.categories.tolist() == ["Y", "X", "T"]
    mvalues = ["x", True, None, "y", False]
    want = {
        "b": pd.Series(pd.array(b, "boolean"), index=index),
        "m": pd.Series([pd.NA if v is None else v for v in mvalues], index=index, dtype=object),
        "b:payload": category_column(["T", None, None, "T", "T"], index, []),
        "m:payload": category_column(["X", "T", None, "Y", None], index, ["Y"]),
        "b:reason": category_column(table["b:reason"].to_pylist(), index, REASON_CODES),
        "m:reason": category_column(table["m:reason"].to_pylist(), index, REASON_CODES),
        "b:condition_index": pd.Series(pd.array([0, None, 1, 2, None], "Int64"), index=index),
        "m:condition_index": pd.Series(pd.array([None] * 5, "Int64"), index=index),
        "error": pd.Series(pd.array([None, None, "bad id", None, None], "string"), index=index),
    }
    assert list(got) == ["b", "b:payload", "m", "m:payload", "b:reason", "m:reason", *list(want)[6:]]
    for name, column in want.items():
        pd.testing.assert_series_equal(got[name], column, check_names=False)


def test_a_boolean_flag_s_text_answer_is_refused_not_read_as_true() -> None:
    table = pa.table({"b": ["false"], "m": ["x"], "error": pa.array([None], pa.string())})
    spec = FrameSpec(
        ["b", "m"], {"m"}, reasons_written=False, payload_tables=None, payload_texts={}, cell_value=_value
    )
    with pytest.raises(TypeError, match="expected a boolean"):
        arrow_frame_columns(spec, table, pd.RangeIndex(1))


def test_property_sets_read_through_arrow_have_duckdb_s_dtypes() -> None:
    import duckdb

    con = duckdb.connect()
    sql = """SELECT * FROM (VALUES
        ('a', 1::BIGINT, 1::INTEGER, 1.5, true, 2::BIGINT, NULL::VARCHAR,
         DATE '2024-01-02', 3::UTINYINT, false),
        (NULL, NULL, 2, NULL, NULL, 3, NULL, NULL, NULL, true),
        ('c', 3, NULL, 2.5, false, 4, NULL, DATE '2024-01-03', 5, false)
    ) t(s, i, i32, f, b, whole, nulls, d, u8, bwhole)"""
    for rows in (sql, sql + " LIMIT 0", sql + " WHERE whole = 2"):
        table = in_order(con.sql(rows).to_arrow_table(), ["whole"])
        pd.testing.assert_frame_equal(duckdb_frame(table, con), con.sql(rows).df())


def test_in_order_sorts_by_the_row_key() -> None:
    table = pa.table({"_anb_row": [2, 0, 1], "v": ["c", "a", "b"]})
    assert in_order(table, ["_anb_row"])["v"].to_pylist() == ["a", "b", "c"]
    two = pa.table({"_anb_file": ["b", "a", "b", "a"], "_anb_row": [0, 1, 1, 0], "v": [3, 2, 4, 1]})
    assert in_order(two, ["_anb_file", "_anb_row"])["v"].to_pylist() == [1, 2, 3, 4]


def test_64_bit_integers_with_nulls_are_read_back_exactly() -> None:
    """An integer property at the ends of 64 bits, with a NULL, reads back as DuckDB's ``df()`` gives it
    (``Int64`` / ``UInt64``, every digit): the Arrow read-back went through floats and overflowed."""
    import duckdb
    import pyarrow as pa

    from analytics_nb.simulation._sql_frame import duckdb_frame

    table = pa.table(
        {
            "big": pa.array([1, None, 2**63 - 1, -(2**63)], pa.int64()),
            "huge": pa.array([1, None, 2**64 - 1, 0], pa.uint64()),
            "flag": pa.array([True, None, False, True]),
        }
    )
    con = duckdb.connect()
    got = duckdb_frame(table, con)
    want = con.from_arrow(table).df()
    pd.testing.assert_frame_equal(got, want)
    assert got["big"].tolist() == [1, pd.NA, 2**63 - 1, -(2**63)]

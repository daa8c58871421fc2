"""The SQL path read back exactly: value types as the local engine's (booleans, variants, holdout values),
``summary()`` counted in SQL equal to the local engine's, the sdk-mode numeric bounds on float columns and
empty ``icontains_multi`` lists, each against the local engine and the official SDK (posthog 7.91.1)."""

from __future__ import annotations

import logging
import math
import warnings
from typing import Any

import pandas as pd
import pytest

from analytics_nb.flags import evaluate_frame, to_sql
from analytics_nb.simulation import simulate

pytest.importorskip("duckdb", reason="the 'sql' extra is not installed")
pytest.importorskip("sqlglot", reason="the 'sql' extra is not installed")
from analytics_nb.simulation._sql import run_sql

HOLDOUT = {
    "key": "hold",
    "active": True,
    "filters": {
        "groups": [{"properties": [], "rollout_percentage": 10}],
        "holdout": {"id": 3, "exclusion_percentage": 50},
    },
}


def _sdk_values(flag: dict[str, Any], ids: list[str]) -> list[Any]:
    """posthog 7.91.1's local evaluation of `flag` for each id (no properties)."""
    posthog = pytest.importorskip("posthog")
    client = posthog.Posthog("phc_readback_test", send=False, sync_mode=True)
    logging.getLogger("posthog").setLevel(logging.CRITICAL)
    client._update_flag_state({"flags": [flag], "group_type_mapping": {}, "cohorts": {}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return [
            client.get_feature_flag(
                flag["key"], i, only_evaluate_locally=True, send_feature_flag_events=False
            )
            for i in ids
        ]


def test_a_boolean_flag_with_a_holdout_reads_back_its_holdout_value_and_counts_over_all_rows() -> None:
    ids = [f"user-{i}" for i in range(400)]
    frame = pd.DataFrame({"distinct_id": ids})
    local = simulate(frame, engine="local", definitions=[HOLDOUT])
    sql = simulate(frame, engine="sql", definitions=[HOLDOUT], progress=False)
    try:
        got = sql.outputs["hold"].tolist()
        assert got == local.outputs["hold"].tolist() == _sdk_values(HOLDOUT, ids)
        # not vacuous: all three values occur, with the local engine's types
        assert {type(v) for v in got} == {str, bool} and {"holdout-3", True, False} <= set(got)
        assert sql.outputs["hold"].dtype == local.outputs["hold"].dtype == object
        pd.testing.assert_frame_equal(sql.summary(), local.summary())
        assert set(sql.summary()["n"]) == {400}
        pd.testing.assert_frame_equal(
            sql.crosstab("hold", "distinct_id").sum().to_frame(),
            local.crosstab("hold", "distinct_id").sum().to_frame(),
        )
    finally:
        sql.close()


def test_spark_schema_gives_a_holdout_flag_a_string_column() -> None:
    from analytics_nb.simulation import load_definitions
    from analytics_nb.simulation._definitions import live_flags
    from analytics_nb.simulation._spark import spark_batches, spark_columns

    defs = live_flags(load_definitions([HOLDOUT]))
    assert ("hold", "string") in spark_columns(defs, None, payloads=False)
    frame = pd.DataFrame({"distinct_id": [f"user-{i}" for i in range(60)]})
    out = pd.concat(list(spark_batches(iter([frame]), defs, payloads=False)))
    assert "holdout-3" in set(out["hold"]) and {"true", "false"} <= set(out["hold"])


FLOATS = [1.5, 5.0, 7.25, 30.0, math.inf, -math.inf, 1.7976931348623157e308, -0.0, None]


def _engines() -> list[str]:
    engines = ["duckdb"]
    try:
        import chdb  # noqa: F401

        engines.append("clickhouse")
    except ImportError:  # pragma: no cover - chDB is optional
        pass
    return engines


@pytest.mark.parametrize("engine", _engines())
@pytest.mark.parametrize("mode", ["sdk", "server"])
@pytest.mark.parametrize("operator", ["gt", "gte", "lt", "lte"])
@pytest.mark.parametrize("target", [5, "5", 5.0, "-1e3", 0])
def test_numeric_bounds_on_a_float_column(engine: str, mode: str, operator: str, target: Any) -> None:
    flag = {
        "key": "f",
        "active": True,
        "filters": {
            "groups": [
                {
                    "properties": [{"key": "score", "type": "person", "operator": operator, "value": target}],
                    "rollout_percentage": 100,
                }
            ]
        },
    }
    frame = pd.DataFrame({"distinct_id": [f"u{i}" for i in range(len(FLOATS))], "score": FLOATS})
    want = evaluate_frame(frame, definitions=[flag], mode=mode, reasons=True)
    got, query = run_sql(frame, [flag], engine=engine, mode=mode)
    assert not query.local_flags
    assert got["f"].astype(object).tolist() == want["f"].astype(object).tolist()
    assert [None if pd.isna(r) else r for r in got["f:reason"].astype(object)] == [
        None if pd.isna(r) else r for r in want["f:reason"].astype(object)
    ]
    if mode == "sdk":
        from posthog.feature_flags import InconclusiveMatchError, match_property

        prop = {"key": "score", "operator": operator, "value": target}
        for value, answer in zip(FLOATS[:-2], got["f"].tolist()[:-2], strict=True):
            try:
                expected: Any = match_property(prop, {"score": value})
            except InconclusiveMatchError:
                expected = None
            assert (None if pd.isna(answer) else bool(answer)) == expected, (value, answer, expected)


@pytest.mark.parametrize("mode", ["server", "sdk"])
@pytest.mark.parametrize("operator", ["icontains_multi", "not_icontains_multi"])
def test_an_empty_icontains_multi_list_answers_as_the_engine(mode: str, operator: str) -> None:
    flag = {
        "key": "f",
        "active": True,
        "filters": {
            "groups": [
                {
                    "properties": [{"key": "plan", "type": "person", "operator": operator, "value": []}],
                    "rollout_percentage": 100,
                }
            ]
        },
    }
    other = {**flag, "key": "g", "filters": {"groups": [{"properties": [], "rollout_percentage": 100}]}}
    frame = pd.DataFrame({"distinct_id": ["a", "b", "c"], "plan": ["pro", None, ""]})
    for dialect in ("duckdb", "clickhouse", "spark", "bigquery", "snowflake", "postgres"):
        assert "SELECT" in to_sql([flag, other], dialect=dialect, mode=mode)
    local = simulate(frame, engine="local", definitions=[flag, other], mode=mode, reasons=True)
    sql = simulate(frame, engine="sql", definitions=[flag, other], mode=mode, reasons=True, progress=False)
    try:
        assert not sql.local_flags
        pd.testing.assert_frame_equal(sql.outputs, local.outputs)
    finally:
        sql.close()


def test_a_clickhouse_query_over_the_default_max_query_size_runs() -> None:
    """A project whose ClickHouse text is over 262,144 bytes (here 4 flags with long lists; ~300 typical
    flags reach it too) runs on chDB with the same answers as the engine."""
    pytest.importorskip("chdb", reason="chDB is not installed (the chdb extra)")
    values = [f"customer-{i:06d}@example.com" for i in range(4_000)]
    flags = [
        {
            "key": f"list-{n}",
            "active": True,
            "filters": {
                "groups": [
                    {
                        "properties": [
                            {"key": "email", "type": "person", "operator": "exact", "value": values[n::2]}
                        ],
                        "rollout_percentage": 100,
                    }
                ]
            },
        }
        for n in range(4)
    ]
    text = to_sql(flags, dialect="clickhouse")
    assert len(text.encode()) > 262_144  # ClickHouse's default max_query_size
    frame = pd.DataFrame(
        {
            "distinct_id": [f"u{i}" for i in range(6)],
            "email": [values[0], values[1], values[2], "x", None, values[3]],
        }
    )
    want = evaluate_frame(frame, definitions=flags, reasons=True)
    got, query = run_sql(frame, flags, engine="clickhouse")
    assert not query.local_flags
    for f in flags:
        assert got[f["key"]].astype(object).tolist() == want[f["key"]].astype(object).tolist()
    assert want["list-0"].tolist() == [True, False, True, False, False, False]

"""Flags as SQL: the parity harness. A differential corpus (nulls, odd types, big numbers, non-ASCII text,
semver, regex, dates, variants, overrides, holdouts, dependencies) runs through every SQL engine installed
here (DuckDB; ClickHouse through chDB; Spark SQL through PySpark, one session for the module) and through
the Python engine (`evaluate_frame`) in both modes. Wherever the SQL answers, its value, reason and
condition index are the engine's; where it does not, it says `needs_local_engine` (a whole flag, or a row).
"""

from __future__ import annotations

import datetime as dt
import math
import os
import random
import sys
from typing import Any

import pandas as pd
import pytest

from _flag_strategies import flag_definition
from analytics_nb.flags import evaluate_frame, to_sql
from analytics_nb.flags._hashing import LONG_SCALE
from analytics_nb.flags._sql import NEEDS_LOCAL, rollout_bound

sqlglot = pytest.importorskip("sqlglot")
duckdb = pytest.importorskip("duckdb")
from analytics_nb.simulation import simulate_sql  # noqa: E402
from analytics_nb.simulation._sql import run_sql  # noqa: E402

NOW = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.UTC)
STRINGS = [
    "pro", "Pro", "PRO", "free", "true", "TRUE", "False", "5", "-2", "1.5", "", " pro", "null",
    "ann@example.com", "BOB@Example.COM", "İstanbul", "\u212aelvin", "kelvin", "naïve", "ǅemal", "a'b",
    "1.2.3", "v2.0.0", "2024-01-15", "x\ny", "ΣΑΣ",
]  # fmt: skip
INTS = [-3, 0, 1, 5, 17, 18, 30, 42, 2**53 + 1, 2**62, -(2**63), 2**63 - 1]
FLOATS = [1.5, 5.0, -0.5, 30.25, 1e20, 1.5e-7, 0.1, -0.0, math.inf, -math.inf, math.nan, 18.0]
OPS_TEXT = ["exact", "is_not", "icontains", "not_icontains", "starts_with", "not_starts_with", "ends_with",
            "not_ends_with", "is_set", "is_not_set", "icontains_multi", "not_icontains_multi"]  # fmt: skip
OPS_NUM = ["gt", "gte", "lt", "lte", "exact", "is_not", "is_set", "is_not_set"]
TARGETS: list[Any] = [
    "pro", "PRO", "true", "false", True, False, 5, "5", 18, 1.5, "İstanbul", "kelvin", "ex", "", "@", None,
    ["pro", "free"], ["true"], [], [5, "x"], 1e20, -0.0, "18", 2**62,
]  # fmt: skip


def persons(n: int, seed: int = 7) -> pd.DataFrame:
    rng = random.Random(seed)

    def maybe(values: list[Any], p_missing: float = 0.15) -> Any:
        return None if rng.random() < p_missing else rng.choice(values)

    ids: list[Any] = [f"user-{i}" for i in range(n)]
    ids[3], ids[5] = None, ""  # error rows: the id is missing or empty
    ids[7] = "ünï-çødé"
    return pd.DataFrame(
        {
            "distinct_id": pd.array(ids, dtype="string"),
            "plan": pd.array([maybe(STRINGS) for _ in range(n)], dtype="string"),
            "email": pd.array([maybe(STRINGS, 0.3) for _ in range(n)], dtype="string"),
            "age": pd.array([maybe(INTS) for _ in range(n)], dtype="Int64"),
            "score": [rng.choice(FLOATS) if rng.random() > 0.1 else None for _ in range(n)],
            "beta": pd.array([maybe([True, False]) for _ in range(n)], dtype="boolean"),
            "$browser": pd.array([maybe(["Chrome", "Safari"], 0.4) for _ in range(n)], dtype="string"),
            "$initial_browser": pd.array([maybe(["Firefox"], 0.7) for _ in range(n)], dtype="string"),
        }
    )


def random_filter(rng: random.Random, flag_keys: list[str]) -> dict[str, Any]:
    if flag_keys and rng.random() < 0.12:
        return {"key": rng.choice(flag_keys), "type": "flag", "operator": "flag_evaluates_to",
                "value": rng.choice([True, False, "control", "test"])}  # fmt: skip
    key = rng.choice(["plan", "email", "age", "score", "beta", "$initial_browser", "distinct_id", "nope"])
    ops = OPS_NUM if key in ("age", "score") else OPS_TEXT
    if rng.random() < 0.05:
        ops = ["regex", "is_date_before", "semver_gt", "between"]
    return {"key": key, "type": "person", "operator": rng.choice(ops), "value": rng.choice(TARGETS)}


def corpus(seed: int, count: int) -> list[dict[str, Any]]:
    """Flags biased to what SQL expresses, with every family mixed in (and the engine's random shapes)."""
    rng = random.Random(seed)
    flags: list[dict[str, Any]] = []
    for i in range(count):
        key = f"f{i}"
        if rng.random() < 0.25:
            flags.append(flag_definition(rng, key, []))
            continue
        variants = rng.choice(
            [None, None, [("control", 50), ("test", 50)], [("a", 33.3), ("b", 33.3), ("c", 33.4)]]
        )
        groups = []
        for _ in range(rng.randrange(4)):
            cond: dict[str, Any] = {
                "properties": [
                    random_filter(rng, [f["key"] for f in flags]) for _ in range(rng.randrange(3))
                ],
                "rollout_percentage": rng.choice([None, 0, 10, 33.3, 50, 99.9, 100]),
            }
            if variants and rng.random() < 0.3:
                cond["variant"] = rng.choice(["control", "test", "gone"])
            groups.append(cond)
        filters: dict[str, Any] = {"groups": groups, "payloads": {"true": '{"on": 1}', "control": "[1]"}}
        if variants:
            filters["multivariate"] = {"variants": [{"key": k, "rollout_percentage": p} for k, p in variants]}
        if rng.random() < 0.1:
            filters["holdout"] = {
                "id": rng.randrange(1, 5),
                "exclusion_percentage": rng.choice([10, 50, 100]),
            }
        if rng.random() < 0.15:
            filters["early_exit"] = True
        flags.append({"key": key, "id": i + 1, "active": rng.random() > 0.05, "filters": filters,
                      "ensure_experience_continuity": rng.random() < 0.05})  # fmt: skip
    return flags


def _plain(v: Any) -> Any:
    if isinstance(v, bool | str):
        return v
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return None
    return int(v)


def compare(got: pd.DataFrame, want: pd.DataFrame, query: Any) -> tuple[int, int]:
    """Assert that every answer the SQL gives is the engine's; (answered cells, rows left to the engine)."""
    got = got.set_index(got["distinct_id"].astype(object).where(got["distinct_id"].notna(), "<NA>"))
    want = want.set_index(want["distinct_id"].astype(object).where(want["distinct_id"].notna(), "<NA>"))
    answered = left = 0
    for sf in query.flags:
        if sf.needs_local is not None:
            assert set(got[f"{sf.key}:reason"].dropna()) <= {NEEDS_LOCAL}
            continue
        for did in want.index:
            reason = _plain(got.at[did, f"{sf.key}:reason"])
            if reason == NEEDS_LOCAL:
                left += 1
                continue
            value = _plain(got.at[did, sf.key])
            w_value = _plain(want.at[did, sf.key])
            if sf.multivariate and isinstance(w_value, bool):
                w_value = "true" if w_value else "false"
            expect = (
                w_value,
                _plain(want.at[did, f"{sf.key}:reason"]),
                _plain(want.at[did, f"{sf.key}:condition_index"]),
            )
            actual = (value, reason, _plain(got.at[did, f"{sf.key}:condition_index"]))
            assert actual == expect, (sf.key, did, query.mode, [f for f in query_defs if f["key"] == sf.key])
            answered += 1
        assert _plain(got.at["<NA>", "error"]) == _plain(want.at["<NA>", "error"])
    return answered, left


FRAME = persons(400)
query_defs = corpus(11, 60)


@pytest.fixture(scope="module")
def spark() -> Any:
    pyspark_sql = pytest.importorskip("pyspark.sql", reason="pyspark is not installed (the spark extra)")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # read when the context starts
    session = (
        pyspark_sql.SparkSession.builder.master("local[1]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.driver.memory", "512m")
        .getOrCreate()
    )
    yield session
    session.stop()


@pytest.mark.parametrize("mode", ["server", "sdk"])
def test_duckdb_answers_are_the_engines(mode: str) -> None:
    want = evaluate_frame(
        FRAME, definitions=query_defs, mode=mode, reasons=True, now=NOW, missing_columns="not_set"
    )
    got, query = run_sql(FRAME, query_defs, engine="duckdb", mode=mode, now=NOW, missing_columns="not_set")
    answered, left = compare(got, want, query)
    # not vacuous: most flags and nearly every row are answered in SQL
    assert len(query.local_flags) <= len(query.flags) // 2, query.local_flags
    assert answered > 10_000 and left < answered // 20


@pytest.mark.parametrize("mode", ["server", "sdk"])
def test_chdb_answers_are_the_engines(mode: str) -> None:
    pytest.importorskip("chdb", reason="chdb is not installed (the chdb extra)")
    want = evaluate_frame(
        FRAME, definitions=query_defs, mode=mode, reasons=True, now=NOW, missing_columns="not_set"
    )
    got, query = run_sql(
        FRAME, query_defs, engine="clickhouse", mode=mode, now=NOW, missing_columns="not_set"
    )
    answered, _ = compare(got, want, query)
    assert answered > 10_000


@pytest.mark.parametrize("mode", ["server", "sdk"])
def test_spark_sql_answers_are_the_engines(mode: str, spark: Any) -> None:
    want = evaluate_frame(
        FRAME, definitions=query_defs, mode=mode, reasons=True, now=NOW, missing_columns="not_set"
    )
    got, query = run_sql(
        FRAME, query_defs, engine="spark", mode=mode, now=NOW, spark=spark, missing_columns="not_set"
    )
    answered, _ = compare(got, want, query)
    assert answered > 10_000


@pytest.mark.parametrize("mode", ["server", "sdk"])
def test_simulate_sql_gives_every_answer_of_the_engine(mode: str, tmp_path: Any) -> None:
    """The SQL answers plus the local engine's for what SQL leaves: identical to evaluate_frame."""
    frame = FRAME.copy()
    path = tmp_path / "persons.parquet"
    frame.to_parquet(path)
    # both read a property without a column as not set (asked on both sides: each defaults to "unknown"),
    # so the SQL answers every flag that reads "nope" itself and the comparison covers them
    sim = simulate_sql(
        path,
        query_defs,
        mode=mode,
        now=NOW,
        batch_rows=64,
        out=tmp_path / "answers.parquet",
        missing_columns="not_set",
    )
    try:
        got = sim.sql_frame()
        want = evaluate_frame(
            frame, definitions=query_defs, mode=mode, reasons=True, now=NOW, missing_columns="not_set"
        )
        assert len(got) == len(want)
        assert sim.local_flags and sim.local_rows > 0
        assert not (got[[f"{k}:reason" for k in sim.flags]] == NEEDS_LOCAL).any().any()
        # compare() with no flag left: every cell must be the engine's
        sim.query.flags = [type(sf)(sf.key, sf.multivariate, sf.outcomes, None) for sf in sim.query.flags]
        answered, left = compare(got, want, sim.query)
        assert left == 0 and answered == len(sim.flags) * len(frame)
        summary = sim.summary()
        for key in sim.flags[:10]:
            rows = summary[(summary["flag"] == key) & (summary["count"] > 0)]
            counts = {_text(v): int(n) for v, n in zip(rows["value"], rows["count"], strict=True)}
            values = want[key].dropna().astype(object)
            assert counts == values.map(_text).value_counts().to_dict()
        cross = sim.crosstab(sim.flags[0], "beta")
        assert (
            cross.drop(columns="(unknown)", errors="ignore").to_numpy().sum()
            == want[sim.flags[0]].notna().sum()
        )
        # the one result's frame is the local engine's frame
        pd.testing.assert_series_equal(
            sim.frame[sim.flags[0]].reset_index(drop=True),
            want[sim.flags[0]].reset_index(drop=True),
            check_names=False,
            check_dtype=False,
        )
    finally:
        sim.close()


def _text(value: Any) -> str:
    """A flag value as the SQL writes it ("true" / "false" for a boolean answer, else the variant)."""
    return "true" if value is True else "false" if value is False else str(value)


def test_rollout_bounds_are_exact_at_the_boundary() -> None:
    """The integer bound on the 60-bit hash is exactly where the engine's float comparison flips."""
    for pct in [0, 0.001, 10, 33.3, 50, 99.9, 99.99999, 100]:
        share = pct / 100
        h = rollout_bound(share)
        assert h == -1 or h / LONG_SCALE <= share
        assert h == 2**60 - 1 or (h + 1) / LONG_SCALE > share


@pytest.mark.parametrize("dialect", ["bigquery", "snowflake", "postgres", "clickhouse", "spark", "duckdb"])
def test_to_sql_parses_in_every_dialect(dialect: str) -> None:
    schema = {
        "distinct_id": "string",
        "plan": "string",
        "email": "string",
        "age": "integer",
        "score": "float",
    }
    sql = to_sql(query_defs, dialect=dialect, mode="server", schema={**schema, "beta": "boolean"})
    assert sqlglot.parse_one(sql, read=dialect) is not None
    assert "needs the local engine" in sql


def test_a_flag_sql_cannot_express_is_named_never_answered() -> None:
    flag = {
        "key": "re",
        "filters": {"groups": [{"properties": [{"key": "plan", "operator": "regex", "value": "^p"}]}]},
    }
    got, query = run_sql(FRAME, [flag], engine="duckdb", now=NOW)
    assert "regex" in query.local_flags["re"]
    assert got["re"].isna().all()
    assert set(got["re:reason"].dropna()) == {NEEDS_LOCAL}


@pytest.mark.parametrize("mode", ["server", "sdk"])
def test_duckdb_answers_are_the_engines_with_matching_version_2(mode: str) -> None:
    """property_matching_version 2 compares boolean-like values strictly: the SQL follows."""
    want = evaluate_frame(
        FRAME,
        definitions=query_defs,
        mode=mode,
        reasons=True,
        now=NOW,
        property_matching_version=2,
        missing_columns="not_set",
    )
    got, query = run_sql(
        FRAME, query_defs, mode=mode, now=NOW, property_matching_version=2, missing_columns="not_set"
    )
    answered, _ = compare(got, want, query)
    assert answered > 10_000


def test_the_kelvin_sign_row_is_left_to_the_local_engine_and_answered_there(tmp_path: Any) -> None:
    """Python lower-cases the Kelvin sign to an ASCII "k" ("\u212aelvin".lower() == "kelvin"); SQL engines
    disagree, so that row is needs_local_engine in SQL and the local engine's True in simulate_sql."""
    frame = pd.DataFrame({"distinct_id": ["a", "b", "c"], "name": ["\u212aelvin", "KELVIN", "k\u00e9lvin"]})
    flag = {"key": "k", "filters": {"groups": [{"properties": [{"key": "name", "value": "kelvin"}]}]}}
    got, _ = run_sql(frame, [flag], now=NOW)
    assert got["k:reason"].tolist() == [NEEDS_LOCAL, "condition_match", "no_condition_match"]
    sim = simulate_sql(frame, [flag], now=NOW)
    try:
        answers = sim.frame.set_index("distinct_id")
        assert answers.loc[["a", "b", "c"], "k"].tolist() == [True, True, False]
        assert sim.local_rows == 1
    finally:
        sim.close()


def test_to_sql_without_a_schema_reads_every_property_as_text() -> None:
    frame = pd.DataFrame({"distinct_id": ["a", "b", "c"], "plan": ["Pro", "free", None]})
    flag = {"key": "pro", "filters": {"groups": [{"properties": [{"key": "plan", "value": "pro"}]}]}}
    con = duckdb.connect()
    con.register("persons", frame)
    got = con.execute(to_sql([flag])).df()
    assert got["pro"].tolist() == [True, False, False]
    assert got["pro:reason"].tolist() == ["condition_match", "no_condition_match", "no_condition_match"]


def test_simulate_sql_reads_a_duckdb_relation_and_counts_in_sql() -> None:
    con = duckdb.connect()
    rel = con.sql("SELECT 'u' || i AS distinct_id, i % 3 AS n FROM range(1000) t(i)")
    flag = {
        "key": "big",
        "filters": {"groups": [{"properties": [{"key": "n", "operator": "gte", "value": 1}]}]},
    }
    sim = simulate_sql(rel, [flag], now=NOW)
    try:
        assert len(sim) == 1000 and sim.local_flags == {} and sim.local_rows == 0
        counts = sim.summary().set_index("value")["count"].to_dict()
        assert counts == {True: 666, False: 334}
    finally:
        sim.close()


def test_server_mode_sql_follows_early_exit_and_leaves_an_unknown_dependency_to_the_engine() -> None:
    """Server mode after the engine's change: early_exit stops at a matched condition outside its rollout
    (the SQL used to fall through to the next condition), and an undecided condition (a dependency on a
    flag not in the definitions) is not a no-match: the SQL leaves those rows to the local engine."""
    ids: list[Any] = [f"user-{i}" for i in range(200)]
    ids[3] = None  # compare() checks the error row too
    frame = pd.DataFrame({"distinct_id": pd.array(ids, dtype="string"), "plan": ["pro"] * 200})
    defs = [
        {
            "key": "exit",
            "active": True,
            "filters": {
                "early_exit": True,
                "groups": [
                    {
                        "properties": [
                            {"key": "plan", "value": "pro", "operator": "exact", "type": "person"}
                        ],
                        "rollout_percentage": 50,
                    },
                    {"properties": [], "rollout_percentage": 100},
                ],
            },
        },
        {
            "key": "dep",
            "active": True,
            "filters": {
                "groups": [
                    {
                        "properties": [
                            {"key": "absent", "value": True, "operator": "flag_evaluates_to", "type": "flag"}
                        ],
                        "rollout_percentage": 100,
                    },
                    {"properties": [], "rollout_percentage": 100},
                ]
            },
        },
    ]
    want = evaluate_frame(frame, definitions=defs, mode="server", reasons=True, now=NOW)
    got, query = run_sql(frame, defs, engine="duckdb", mode="server", now=NOW)
    compare(got, want, query)
    stopped = got["exit:reason"] == "out_of_rollout_bound"
    assert 0 < stopped.sum() < len(frame) and (got.loc[stopped, "exit:condition_index"] == 0).all()
    assert (got["dep:reason"].dropna() == NEEDS_LOCAL).all() and got["dep:reason"].notna().sum() == 199

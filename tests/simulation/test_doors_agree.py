"""One door, one answer (issue 34): the cross-door, cross-engine differential harness.

The same generated pool (every operator family, holdouts, multivariate with overrides, early_exit,
dependencies, a property no column holds, odd cells: nulls, big numbers, non-ASCII, inf/NaN) goes through
every public way of evaluating flags over many persons, in both modes, at default settings:

- `flags.evaluate_frame` and `flags.FrameEvaluator` (the engine without a client);
- `simulate(engine="local")` and `simulate(engine="sql")` (DuckDB; the rows and flags SQL cannot answer
  exactly go to the local engine);
- `WhatIf` (its base run), `simulate_dask` (Dask over three partitions) and `simulate_spark`'s batch
  function (the PySpark run itself is in `test_simulate_spark.py`);
- ClickHouse through chDB (`run_sql`): every cell its SQL answers;
- `engine="remote"` and `"both"` against the sandbox's /flags, over persons that carry every property the
  flags read (the service answers for the persons it stores, so where a column is missing its cells differ
  by design; that comparison is the agreement table's, in `test_simulate_totals.py`).

Every cell must be equal: the same value, or NA with the same reason. A door that answered ``False`` where the
others said "unknown" (issue 34: `evaluate_frame` and `simulate_sql` defaulted to "not_set") fails here.
"""

from __future__ import annotations

import datetime as dt
import math
import warnings
from typing import Any

import pandas as pd
import pytest
from test_flags_sql import corpus, persons

from _flags import condition, flag, prop
from analytics_nb.flags import FrameEvaluator, evaluate_frame
from analytics_nb.simulation import SimulationResult, WhatIf, simulate

NOW = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.UTC)
MODES = ["server", "sdk"]


def _pool() -> list[dict[str, Any]]:
    """The SQL parity corpus plus the shapes issue 34 found wrong: a holdout on a boolean flag, a
    multivariate flag with an override, float bounds, an empty multi-value list, a property no column has."""
    extra = [
        flag("holdout-bool", condition(rollout=10), holdout={"id": 3, "exclusion_percentage": 50}),
        flag(
            "mv-override",
            condition(prop("plan", ["pro"]), variant="test"),
            condition(rollout=50),
            multivariate={
                "variants": [
                    {"key": "control", "rollout_percentage": 50},
                    {"key": "test", "rollout_percentage": 50},
                ]
            },
        ),
        flag("float-gte", condition(prop("score", 5, "gte"))),
        flag("float-lt", condition(prop("score", "30", "lt"))),
        flag("empty-multi", condition(prop("email", [], "icontains_multi"))),
        flag("not-empty-multi", condition(prop("email", [], "not_icontains_multi"))),
        flag("no-column", condition(prop("country", ["DE"])), condition(prop("plan", ["pro"]))),
    ]
    return [*corpus(23, 40), *extra]


POOL = _pool()
KEYS = [f["key"] for f in POOL]


def _people() -> pd.DataFrame:
    frame = persons(240, seed=5)
    # simulate refuses rows without an id (they are an error row at the engine's door, not a person)
    return frame[frame["distinct_id"].notna() & (frame["distinct_id"] != "")].reset_index(drop=True)


PEOPLE = _people()


def _cell(value: Any, reason: Any) -> tuple[Any, Any]:
    """A comparable cell: the value (True / False / variant key), or (None, the reason) when unknown."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return (None, None if reason is None or reason is pd.NA else str(reason))
    return (bool(value) if isinstance(value, bool) else value, None)


def _cells(frame: pd.DataFrame) -> dict[tuple[str, str], tuple[Any, Any]]:
    frame = frame.reset_index(drop=True)
    out = {}
    ids = frame["distinct_id"].astype(object).tolist()
    for key in KEYS:
        values = frame[key].astype(object).tolist()
        reasons = (
            frame[f"{key}:reason"].astype(object).tolist()
            if f"{key}:reason" in frame.columns
            else [None] * len(frame)
        )
        for did, v, r in zip(ids, values, reasons, strict=True):
            out[(str(did), key)] = _cell(v, r)
    return out


def _diff(name: str, got: pd.DataFrame, want: dict[tuple[str, str], tuple[Any, Any]], reasons: bool) -> None:
    cells = _cells(got)
    if not reasons:  # a door without reason columns: compare values (and unknown-ness) only
        want = {k: (v[0], None) for k, v in want.items()}
        cells = {k: (v[0], None) for k, v in cells.items()}
    assert cells.keys() == want.keys(), name
    bad = [(k, cells[k], want[k]) for k in want if cells[k] != want[k]]
    assert not bad, f"{name}: {len(bad)} of {len(want)} cells differ, e.g. {bad[:5]}"


@pytest.fixture(scope="module", params=MODES)
def reference(request: pytest.FixtureRequest) -> tuple[str, dict[tuple[str, str], tuple[Any, Any]]]:
    """The local engine's cells through `simulate`, the door the README shows first."""
    mode = request.param
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = simulate(PEOPLE, engine="local", definitions=POOL, mode=mode, reasons=True)
    cells = _cells(result.outputs)
    unknown = [k for k, v in cells.items() if k[1] == "no-column" and v[0] is None]
    # the pool exercises a property no column holds (sdk mode: inconclusive, as the SDK is)
    assert unknown and all(
        cells[k][1] == ("missing_property" if mode == "server" else "inconclusive") for k in unknown
    )
    return mode, cells


def test_evaluate_frame_is_the_same_door(reference: Any) -> None:
    mode, want = reference
    with pytest.warns(Warning) as caught:  # the MissingPropertyWarning, as simulate gives it
        got = evaluate_frame(PEOPLE, definitions=POOL, mode=mode, reasons=True, now=NOW)
    assert any(w.category.__name__ == "MissingPropertyWarning" for w in caught) or mode == "sdk"
    _diff("evaluate_frame", got, want, reasons=True)


def test_frame_evaluator_is_the_same_door(reference: Any) -> None:
    mode, want = reference
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = FrameEvaluator(PEOPLE, definitions=POOL, mode=mode, now=NOW).run(reasons=True)
        keys_only = FrameEvaluator(PEOPLE, ["no-column", "f3"], definitions=POOL, mode=mode).run()
    _diff("FrameEvaluator", got, want, reasons=True)
    assert [c for c in keys_only.columns if c not in ("distinct_id", "error")] == ["no-column", "f3"]


def test_whatif_base_is_the_same_door(reference: Any) -> None:
    mode, want = reference
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session = WhatIf(PEOPLE, POOL, mode=mode)
    _diff("WhatIf.base", session.base, want, reasons=False)


def test_sql_engine_is_the_same_door(reference: Any) -> None:
    pytest.importorskip("duckdb")
    pytest.importorskip("sqlglot")
    mode, want = reference
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = simulate(PEOPLE, engine="sql", definitions=POOL, mode=mode, reasons=True)
        got = result.outputs
    _diff("simulate(engine='sql')", got, want, reasons=True)


def test_simulate_sql_returns_the_one_result(reference: Any, tmp_path: Any) -> None:
    """`simulate_sql` is a thin layer of the one door (issue 34): the same `SimulationResult` class as
    ``simulate(engine="sql")``, and its summary, crosstab and cells equal that door's and the local engine's;
    the raw SQL answers stay reachable (``sql_frame()``, ``.relation``, ``.query``); the retired class name
    ``SqlSimulation`` warns. Before, `simulate_sql` returned `SqlSimulation` (text values, other summary)."""
    pytest.importorskip("duckdb")
    pytest.importorskip("sqlglot")
    from analytics_nb import simulation
    from analytics_nb.simulation import SqlSimulationResult, simulate_sql, wilson_interval

    mode, want = reference
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        local = simulate(PEOPLE, engine="local", definitions=POOL, mode=mode, reasons=True)
        door = simulate(PEOPLE, engine="sql", definitions=POOL, mode=mode, reasons=True)
        sim = simulate_sql(PEOPLE, POOL, mode=mode, progress=False, payloads=True)  # simulate's default
    with door, sim:
        assert isinstance(sim, SqlSimulationResult) and isinstance(sim, SimulationResult)
        assert len(sim) == len(door) == len(local) == len(PEOPLE)
        assert sim.flags == door.flags == local.flags
        _diff("simulate_sql", sim.outputs, want, reasons=True)
        pd.testing.assert_frame_equal(sim.outputs, door.outputs)
        pd.testing.assert_frame_equal(sim.outputs, local.outputs)
        pd.testing.assert_frame_equal(sim.frame, local.frame)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pd.testing.assert_frame_equal(sim.summary(), door.summary())
            pd.testing.assert_frame_equal(sim.summary(), local.summary())
            base = sim.summary()
            wider = sim.summary(z=2.576)  # the Wilson interval at 99% (SqlSimulation.summary(z=) before)
        low, high = wilson_interval(base["count"], base["n"], 2.576)
        assert wider["ci_low"].tolist() == pytest.approx(list(low), nan_ok=True)
        assert wider["ci_high"].tolist() == pytest.approx(list(high), nan_ok=True)
        assert (wider["ci_high"] - wider["ci_low"] > base["ci_high"] - base["ci_low"] + 0.01).any()
        for key in ("mv-override", "no-column", KEYS[0]):
            pd.testing.assert_frame_equal(sim.crosstab(key, "plan"), door.crosstab(key, "plan"))
            pd.testing.assert_frame_equal(sim.crosstab(key, "plan"), local.crosstab(key, "plan"))
        back = pd.read_parquet(sim.to_parquet(tmp_path / "sim.parquet", inputs=False))
        assert back.equals(pd.read_parquet(door.to_parquet(tmp_path / "door.parquet", inputs=False)))
        raw = sim.sql_frame()  # the SQL engine's own columns: text values, the row number
        assert "_anb_row" in raw.columns and len(raw) == len(PEOPLE)
        assert set(raw["mv-override"].dropna()) <= {"control", "test", "true", "false"}
        assert sim.query.sql == sim.sql and len(sim.relation.df()) == len(PEOPLE)
        assert sim.missing_report == door.missing_report and "no-column" in (sim.missing_report or {})
    with pytest.warns(FutureWarning, match="SqlSimulationResult"):
        assert simulation.SqlSimulation is SqlSimulationResult


def test_dask_is_the_same_door(reference: Any) -> None:
    dd = pytest.importorskip("dask.dataframe")
    from analytics_nb.simulation import MissingPropertyWarning, simulate_dask

    mode, want = reference
    with pytest.warns(MissingPropertyWarning, match=r"'no-column' needs the person's stored `country`"):
        sim = simulate_dask(dd.from_pandas(PEOPLE, npartitions=3), definitions=POOL, mode=mode)
    assert isinstance(sim, SimulationResult) and sim.lazy  # the one result, over the Dask source
    got = sim.frame.compute()
    _diff("simulate_dask", got, want, reasons=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        unknown = sim.summary(["no-column"])["unknown"].iloc[0]
    assert unknown == sum(1 for k, v in want.items() if k[1] == "no-column" and v[0] is None)


def test_spark_batches_are_the_same_door(reference: Any) -> None:
    """The body of simulate_spark's mapInPandas (the PySpark run itself is in test_simulate_spark.py)."""
    from analytics_nb.simulation import load_definitions
    from analytics_nb.simulation._definitions import live_flags
    from analytics_nb.simulation._spark import spark_batches

    mode, want = reference
    defs = live_flags(load_definitions(POOL))
    batches = [PEOPLE.iloc[:100], PEOPLE.iloc[100:]]
    got = pd.concat(list(spark_batches(iter(batches), defs, mode=mode)), ignore_index=True)
    text = {"true": True, "false": False}
    got = got.assign(  # Spark's variant columns are text: "true" / "false" / the variant key
        **{
            key: pd.Series([text.get(v, v) if isinstance(v, str) else v for v in got[key].astype(object)])
            for key in KEYS
        }
    )
    _diff("simulate_spark", got, want, reasons=False)


@pytest.mark.parametrize("engine", ["local", "sql"])
def test_every_engine_returns_one_kind_of_result(engine: str, tmp_path: Any) -> None:
    """One result shape (issue 34): len, summary (the same columns), crosstab, frame, to, to_csv,
    to_parquet, whichever engine computed the answers."""
    if engine == "sql":
        pytest.importorskip("duckdb")
    from analytics_nb.simulation import SUMMARY_COLUMNS, Answers

    keys = ["float-gte", "mv-override", "no-column"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = simulate(PEOPLE, keys, engine=engine, definitions=POOL)  # type: ignore[arg-type]
        summary = result.summary()
    assert isinstance(result, Answers)
    assert isinstance(result, SimulationResult)  # one class for every engine (sql: its subclass)
    assert len(result) == len(PEOPLE)
    assert list(summary.columns) == SUMMARY_COLUMNS
    assert summary.groupby("flag")["rows"].first().to_dict() == dict.fromkeys(keys, len(PEOPLE))
    written = result.to_parquet(tmp_path / "answers.parquet", inputs=False)
    back = pd.read_parquet(written)
    assert back["distinct_id"].tolist() == result.outputs["distinct_id"].tolist()
    for key in keys:
        assert back[key].isna().tolist() == result.outputs[key].isna().tolist()


def test_chdb_answers_are_the_same_door(reference: Any) -> None:
    """ClickHouse through chDB: every cell its SQL answers is the reference's (the rest it leaves to the
    local engine, marked ``needs_local_engine``, as `simulate(engine="sql")` does on DuckDB)."""
    pytest.importorskip("chdb")
    pytest.importorskip("sqlglot")
    from analytics_nb.flags._sql import NEEDS_LOCAL
    from analytics_nb.simulation._sql import run_sql

    mode, want = reference
    got, query = run_sql(PEOPLE, POOL, engine="clickhouse", mode=mode, now=NOW)
    got = got.reset_index(drop=True)
    answered = 0
    text = {"true": True, "false": False}
    for sf in query.flags:
        reasons = got[f"{sf.key}:reason"].astype(object).tolist()
        values = got[sf.key].astype(object).tolist()
        for did, value, reason in zip(got["distinct_id"].astype(object), values, reasons, strict=True):
            if reason == NEEDS_LOCAL or (sf.needs_local is not None):
                continue
            value = text.get(value, value) if isinstance(value, str) else value
            assert _cell(value, reason) == want[(str(did), sf.key)], (sf.key, did, mode)
            answered += 1
    assert answered > len(PEOPLE) * 10  # most cells are SQL's own


def test_remote_and_both_are_the_same_door(empty_sandbox: Any, make_client: Any) -> None:
    """The service (the sandbox's /flags, server mode) over persons that carry every property the flags
    read: the remote cells equal the local engine's on the project's own definitions, none unknown."""
    client = make_client(empty_sandbox, ids=True)
    extra = [f for f in POOL if not f["key"].startswith("f")]  # issue 34's shapes, by name
    for f in extra:
        client.feature_flags.create(f["key"], filters=f["filters"])
    keys = [f["key"] for f in extra]
    people = pd.DataFrame(
        {
            "distinct_id": [f"door-{i}" for i in range(120)],
            "plan": (["pro", "free", "team"] * 40),
            "score": [1.5, 5.0, 7.25, 30.0] * 30,
            "email": ["a@posthog.com", "b@x.io", "c@y.dev"] * 40,
            "country": ["DE", "US"] * 60,
        }
    )
    result = simulate(people, keys, engine="both", client=client)
    assert result.agreement is not None and result.differences is not None
    assert int(result.agreement["disagree"].sum()) == 0, result.differences.head().to_string()
    assert int((result.agreement["rows"] - result.agreement["compared"]).sum()) == 0
    assert result.differences.empty
    assert set(result.local["holdout-bool"].astype(object)) >= {"holdout-3"}  # the holdout is exercised


@pytest.mark.slow
def test_pyspark_is_the_same_door(reference: Any) -> None:
    """The whole PySpark run (mapInPandas on a local[2] session) over the pool (slow tier: Spark's start)."""
    import os
    import sys

    pyspark_sql = pytest.importorskip("pyspark.sql")
    from analytics_nb.simulation import simulate_spark

    mode, want = reference
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        pyspark_sql.SparkSession.builder.master("local[2]")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    sdf = spark.createDataFrame(PEOPLE.astype(object).where(PEOPLE.notna(), None))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = simulate_spark(sdf, definitions=POOL, mode=mode).toPandas()
    text = {"true": True, "false": False}
    got = got.assign(
        **{
            key: pd.Series([text.get(v, v) if isinstance(v, str) else v for v in got[key].astype(object)])
            for key in KEYS
        }
    )
    _diff("simulate_spark (PySpark)", got, want, reasons=False)

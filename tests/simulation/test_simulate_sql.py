"""``simulate(..., engine="sql")``: the flags compiled to SQL and run by the embedded DuckDB give the local
engine's frame (columns, dtypes, answers), summaries and crosstabs on the demo definitions (cohorts, group
flags, regex, semver and dates included: those flags are answered by the local engine and named), for
every input the SQL engine reads in place (pandas, a parquet file or folder, a DuckDB relation), in both
modes; memory is bounded by ``memory_limit`` and the answers are written to ``out=``."""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from analytics_nb import AsyncClient, Client
from analytics_nb.sandbox import Sandbox
from analytics_nb.sandbox._resources.demo_flags import demo_persons
from analytics_nb.simulation import (
    MissingPropertyWarning,
    SimulationInputError,
    asimulate,
    simulate,
)

duckdb = pytest.importorskip("duckdb", reason="the 'sql' extra is not installed")
pytest.importorskip("sqlglot", reason="the 'sql' extra is not installed")

ROWS = 600


def persons(n: int = ROWS) -> pd.DataFrame:
    """The demo persons, one column per property, with their company as the group key."""
    rows = [{"distinct_id": i, **props, "group:company": props["company"]} for i, props in demo_persons(n)]
    frame = pd.DataFrame(rows)
    enrolled = "$feature_enrollment/early-access-ai"
    for name, dtype in ((enrolled, "boolean"), ("phone", "string")):
        frame[name] = frame[name].astype(dtype) if name in frame else pd.array([None] * n, dtype=dtype)
    return frame


def both(frame: Any, definitions: Any, **kw: Any) -> tuple[Any, Any]:
    local = simulate(frame, engine="local", definitions=definitions, **kw)
    sql = simulate(frame, engine="sql", definitions=definitions, progress=False, **kw)
    return local, sql


@pytest.mark.parametrize("mode", ["server", "sdk"])
def test_sql_gives_the_local_engines_frame_summary_and_crosstabs(mode: str, demo_definitions: Any) -> None:
    local, sql = both(persons(), demo_definitions, mode=mode, reasons=True)
    try:
        assert sql.engine == "sql" and len(sql) == ROWS
        # not vacuous: most demo flags are answered in SQL; the rest are named with the reason
        assert len(sql.local_flags) < len(sql.flags) // 2
        assert "company-dashboard" in sql.local_flags and "group" in sql.local_flags["company-dashboard"]
        assert "regex" in sql.local_flags["pricing-page-experiment"]
        pd.testing.assert_frame_equal(sql.outputs, local.outputs)
        pd.testing.assert_frame_equal(sql.frame, local.frame)
        pd.testing.assert_frame_equal(sql.summary(), local.summary())
        pd.testing.assert_frame_equal(sql.summary(["new-checkout"]), local.summary(["new-checkout"]))
        for flag, by, kw in [
            ("new-checkout", "plan", {}),
            ("beta-feature", "country", {"normalize": "index", "margins": True}),
            ("paid-upsell", "plan", {"margins": True}),
        ]:
            pd.testing.assert_frame_equal(sql.crosstab(flag, by, **kw), local.crosstab(flag, by, **kw))
        assert sql.errors.empty and "engine='sql'" in repr(sql)
        assert "<table>" in sql._repr_html_()
    finally:
        sql.close()


def test_sql_counts_without_collecting_rows(demo_definitions: Any) -> None:
    """summary(), crosstab() and len() are answered in SQL: the frame is never built for them."""
    sql = simulate(persons(), engine="sql", definitions=demo_definitions, progress=False)
    try:
        sql.summary()
        sql.crosstab("beta-feature", "plan")
        assert len(sql) == ROWS and sql.rows_done == ROWS
        assert sql._outputs is None and sql._frame is None
        head = sql.head(5)
        assert len(head) == 5 and sql._outputs is None
    finally:
        sql.close()


def test_a_parquet_export_is_read_in_place_bounded_and_written_out(
    demo_definitions: Any, tmp_path: Path
) -> None:
    export = tmp_path / "persons.parquet"
    persons().to_parquet(export, row_group_size=100)
    out = tmp_path / "answers.parquet"
    local = simulate(str(export), engine="local", definitions=demo_definitions, reasons=True)
    sql = simulate(
        export,
        engine="sql",
        definitions=demo_definitions,
        reasons=True,
        out=out,
        memory_limit="200MB",
        progress=False,
    )
    try:
        limit = sql.sim.con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
        assert limit.replace(" ", "").upper().startswith(("190", "200", "191"))  # DuckDB shows MiB
        assert sql.path == out and out.exists()
        pd.testing.assert_frame_equal(sql.outputs, local.outputs)
        pd.testing.assert_frame_equal(sql.summary(), local.summary())
        assert sql.inputs["plan"].tolist() == local.inputs["plan"].tolist()
    finally:
        sql.close()
    assert out.exists()  # out= is the caller's: close() removes only the working files
    assert duckdb.sql(f"SELECT count(*) FROM read_parquet('{out}')").fetchall() == [(ROWS,)]


def test_a_folder_of_parquet_files_and_a_duckdb_relation(demo_definitions: Any, tmp_path: Path) -> None:
    frame = persons(300)
    folder = tmp_path / "export"
    folder.mkdir()
    frame.iloc[:100].to_parquet(folder / "part-0.parquet")
    frame.iloc[100:].to_parquet(folder / "part-1.parquet")
    want = simulate(frame, engine="local", definitions=demo_definitions).outputs.reset_index(drop=True)
    with simulate(folder, engine="sql", definitions=demo_definitions, progress=False) as sql:
        pd.testing.assert_frame_equal(sql.outputs, want)
    con = duckdb.connect()
    con.register("frame", frame)
    relation = con.sql("SELECT * FROM frame")
    with simulate(relation, engine="sql", definitions=demo_definitions, progress=False) as sql:
        pd.testing.assert_frame_equal(sql.outputs, want)


def test_a_property_without_a_column_is_unknown_as_in_the_local_engine(demo_definitions: Any) -> None:
    """The demo persons without `plan`: flags reading it are left to the local engine, which answers NA
    where the answer depends on it and warns; with missing_columns='not_set' both read it as not set."""
    frame = persons(200).drop(columns=["plan"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        local, sql = both(frame, demo_definitions, reasons=True)
    try:
        assert sum(issubclass(w.category, MissingPropertyWarning) for w in caught) == 2
        assert "paid-upsell" in sql.local_flags and "no column" in sql.local_flags["paid-upsell"]
        assert sql.frame["paid-upsell"].isna().any()
        pd.testing.assert_frame_equal(sql.outputs, local.outputs)
    finally:
        sql.close()
    local, sql = both(frame, demo_definitions, missing_columns="not_set")
    with sql:
        assert "paid-upsell" not in sql.local_flags
        pd.testing.assert_frame_equal(sql.outputs, local.outputs)


def test_person_properties_dicts_are_read_as_the_local_engine_reads_them(demo_definitions: Any) -> None:
    frame = persons(100)
    props = frame[["plan", "country", "email"]].to_dict("records")
    dicts = pd.DataFrame({"distinct_id": frame["distinct_id"], "person_properties": props})
    local, sql = both(dicts, demo_definitions, missing_columns="not_set")
    with sql:
        pd.testing.assert_frame_equal(sql.outputs, local.outputs)


def test_flags_and_output_families(demo_definitions: Any) -> None:
    pl = pytest.importorskip("polars")
    frame = persons(100)
    local = simulate(
        pl.from_pandas(frame), engine="local", definitions=demo_definitions, flags=["new-checkout"]
    )
    with simulate(
        pl.from_pandas(frame),
        engine="sql",
        definitions=demo_definitions,
        flags="new-checkout",
        progress=False,
    ) as sql:
        assert sql.flags == ["new-checkout"]
        assert isinstance(sql.data, pl.DataFrame)
        assert sql.data.equals(local.data)


def test_bad_input_is_named_before_any_work(demo_definitions: Any) -> None:
    frame = persons(10)
    with pytest.raises(SimulationInputError, match="engine='sql'"):
        simulate(frame, engine="local", definitions=demo_definitions, out="x.parquet")
    with pytest.raises(SimulationInputError, match="memory_limit"):
        simulate(frame, engine="sql", definitions=demo_definitions, memory_limit=10**9)
    mixed = pd.DataFrame({"distinct_id": ["a", "b"], "plan": pd.Series(["pro", 3], dtype=object)})
    with pytest.raises(SimulationInputError, match="one type per column"):
        simulate(mixed, engine="sql", definitions=demo_definitions)
    with pytest.raises(SimulationInputError, match="definitions"):
        simulate(frame, engine="sql")
    with pytest.raises(SimulationInputError, match="no-such-flag"):
        simulate(frame, engine="sql", definitions=demo_definitions, flags=["no-such-flag"])
    with pytest.raises(SimulationInputError, match="no parquet"):
        simulate("/no/such/export.parquet", engine="sql", definitions=demo_definitions)


def test_clients_fetch_the_definitions(sandbox: Sandbox, demo_definitions: Any) -> None:
    frame = persons(100)
    keys = dict(
        personal_api_key=sandbox.personal_api_key,
        project_api_key=sandbox.project_api_key,
        project_id=sandbox.project_id,
        progress=False,
    )
    want = simulate(frame, engine="local", definitions=demo_definitions).outputs
    with Client(sandbox.url, **keys) as client, client.simulate(frame, engine="sql") as sql:  # type: ignore[arg-type]
        pd.testing.assert_frame_equal(sql.outputs, want)

    async def run() -> Any:
        async with AsyncClient(sandbox.url, **keys) as aclient:  # type: ignore[arg-type]
            return await aclient.simulate(frame, engine="sql")

    with asyncio.run(run()) as sql:
        pd.testing.assert_frame_equal(sql.outputs, want)
    with asyncio.run(asimulate(frame, engine="sql", definitions=demo_definitions, progress=False)) as sql:
        pd.testing.assert_frame_equal(sql.outputs, want)

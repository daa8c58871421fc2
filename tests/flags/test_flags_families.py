"""The flag engine itself (`evaluate_frame`, `FrameEvaluator` and its what-if re-runs) reads every input
family - Polars eager and lazy, PyArrow tables / batches / datasets, DuckDB relations, parquet paths - and
answers with the pandas values and NA, in the caller's family (or `output=`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from analytics_nb.flags import FrameEvaluator, evaluate_frame
from analytics_nb.simulation import with_rollout
from analytics_nb.tables import TableInputError

pa = pytest.importorskip("pyarrow", reason="the 'arrow' extra is not installed")
pl = pytest.importorskip("polars", reason="the 'polars' extra is not installed")
duckdb = pytest.importorskip("duckdb", reason="the 'duckdb' extra is not installed")
import pyarrow.dataset as pads  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from test_simulate_families import (  # noqa: E402
    FLAG_KEYS,
    family_flags,
    person_frame,
    with_undecidable_flag,
)

SOURCES = [
    "polars",
    "polars-lazy",
    "arrow-table",
    "arrow-batch",
    "arrow-dataset",
    "duckdb",
    "parquet-path",
    "parquet-str",
]
#: the family each source answers in by default
FAMILY = {
    "polars": "polars",
    "polars-lazy": "polars",
    "arrow-table": "arrow",
    "arrow-batch": "arrow",
    "arrow-dataset": "arrow",
    "duckdb": "pandas",
    "parquet-path": "pandas",
    "parquet-str": "pandas",
}


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return person_frame(300)


@pytest.fixture(scope="module")
def table(frame: pd.DataFrame) -> Any:
    return pa.Table.from_pandas(frame, preserve_index=False)


@pytest.fixture(scope="module")
def parquet_path(table: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("engine-export") / "persons.parquet"
    pq.write_table(table, path)
    return path


def _source(name: str, table: Any, parquet_path: Path) -> Any:
    if name == "duckdb":
        con = duckdb.connect()
        con.register("persons", table)
        return con.sql("select * from persons")
    return {
        "polars": lambda: pl.from_arrow(table),
        "polars-lazy": lambda: pl.from_arrow(table).lazy(),
        "arrow-table": lambda: table,
        "arrow-batch": lambda: table.combine_chunks().to_batches()[0],
        "arrow-dataset": lambda: pads.dataset(parquet_path),
        "parquet-path": lambda: parquet_path,
        "parquet-str": lambda: str(parquet_path),
    }[name]()


def _missing(v: Any) -> bool:
    """A missing cell as the results spell it: pd.NA / None, or NaN in a category column."""
    return v is None or v is pd.NA or (isinstance(v, float) and v != v)


def _pandas_cells(frame: pd.DataFrame, keys: list[str]) -> dict[str, list[Any]]:
    """Comparable cells of a pandas result: NA as None, numpy scalars as Python values."""
    return {
        k: [
            None if _missing(v) else (v.item() if isinstance(v, np.generic) else v)
            for v in frame[k].astype(object).tolist()
        ]
        for k in keys
    }


def _family_cells(data: Any, family: str, keys: list[str]) -> dict[str, list[Any]]:
    """The cells of a result in its family, spelled as pandas spells them (Arrow / Polars hold a
    multivariate value as text: "false" for False)."""
    if family == "pandas":
        assert isinstance(data, pd.DataFrame)
        return _pandas_cells(data, keys)
    assert isinstance(data, pl.DataFrame if family == "polars" else pa.Table)
    table = data.to_arrow() if family == "polars" else data
    out = {}
    for k in keys:
        values = table.column(k).to_pylist()
        if pa.types.is_string(table.schema.field(k).type) or pa.types.is_large_string(
            table.schema.field(k).type
        ):
            values = [False if v == "false" else v for v in values]
        out[k] = values
    return out


@pytest.fixture(scope="module")
def expected(frame: pd.DataFrame) -> pd.DataFrame:
    return evaluate_frame(frame, definitions=family_flags(), payloads=True)


@pytest.mark.parametrize("source", SOURCES)
def test_evaluate_frame_reads_every_family_and_answers_in_it(
    source: str, table: Any, parquet_path: Path, expected: pd.DataFrame
) -> None:
    family = FAMILY[source]
    got = evaluate_frame(_source(source, table, parquet_path), definitions=family_flags(), payloads=True)
    keys = ["distinct_id", *FLAG_KEYS, "rollout:payload", "error"]
    assert _family_cells(got, family, keys) == _pandas_cells(expected, keys)


@pytest.mark.parametrize("output", ["pandas", "polars", "arrow"])
def test_evaluate_frame_output_picks_the_family(output: str, table: Any, expected: pd.DataFrame) -> None:
    got = evaluate_frame(pl.from_arrow(table), definitions=family_flags(), output=output)  # type: ignore[arg-type]
    assert _family_cells(got, output, FLAG_KEYS) == _pandas_cells(expected, FLAG_KEYS)


@pytest.mark.parametrize("source", ["polars", "arrow-table", "duckdb", "parquet-path"])
def test_unknown_values_are_null_where_pandas_has_na(
    source: str, frame: pd.DataFrame, table: Any, parquet_path: Path
) -> None:
    """sdk mode cannot settle a date filter on text locally: NA in pandas, null in every family."""
    flags = with_undecidable_flag()
    want = evaluate_frame(frame, definitions=flags, mode="sdk")
    assert want["dated"].isna().all()
    got = evaluate_frame(_source(source, table, parquet_path), definitions=flags, mode="sdk")
    keys = [*FLAG_KEYS, "dated"]
    assert _family_cells(got, FAMILY[source], keys) == _pandas_cells(want, keys)


@pytest.mark.parametrize("source", ["polars", "polars-lazy", "arrow-table", "duckdb", "parquet-str"])
def test_frame_evaluator_what_if_runs_answer_in_the_callers_family(
    source: str, frame: pd.DataFrame, table: Any, parquet_path: Path
) -> None:
    family = FAMILY[source]
    edited = with_rollout(family_flags(), "rollout", 80)
    base = FrameEvaluator(frame, definitions=family_flags())
    want_first, want_edited = base.run(), base.run(definitions=edited)
    evaluator = FrameEvaluator(_source(source, table, parquet_path), definitions=family_flags())
    assert evaluator.output == family
    assert _family_cells(evaluator.run(), family, FLAG_KEYS) == _pandas_cells(want_first, FLAG_KEYS)
    assert _family_cells(evaluator.run(definitions=edited), family, FLAG_KEYS) == _pandas_cells(
        want_edited, FLAG_KEYS
    )
    # pandas on request, per run or for the evaluator
    as_pandas = evaluator.run(definitions=edited, output="pandas")
    assert _pandas_cells(as_pandas, FLAG_KEYS) == _pandas_cells(want_edited, FLAG_KEYS)
    arrow = FrameEvaluator(_source(source, table, parquet_path), definitions=family_flags(), output="arrow")
    assert isinstance(arrow.run(definitions=edited), pa.Table)


def test_a_whatif_over_a_polars_evaluator_answers_in_polars(table: Any, frame: pd.DataFrame) -> None:
    from analytics_nb.simulation import WhatIf

    edited = with_rollout(family_flags(), "rollout", 80)
    want = WhatIf(frame, family_flags()).run(edited)
    got = WhatIf(FrameEvaluator(pl.from_arrow(table), definitions=family_flags()), family_flags()).run(edited)
    pd.testing.assert_frame_equal(got.moves, want.moves)
    assert got.output == "polars" and isinstance(got.edited_data, pl.DataFrame)


def test_the_engine_reads_arrow_without_copying_the_values(table: Any) -> None:
    evaluator = FrameEvaluator(table, definitions=family_flags())
    column = evaluator._frame["seats"]
    assert isinstance(column.dtype, pd.ArrowDtype)
    buf = table.column("seats").chunk(0).buffers()[1]
    assert column.array._pa_array.chunk(0).buffers()[1].address == buf.address


def test_what_is_not_a_table_is_refused_with_the_families() -> None:
    with pytest.raises(TypeError, match=r"pandas, Polars, PyArrow, DuckDB or a parquet path.*list"):
        evaluate_frame([{"distinct_id": "a"}], definitions=family_flags())
    with pytest.raises(TableInputError, match=r"output='excel'"):
        evaluate_frame(pd.DataFrame({"distinct_id": ["a"]}), definitions=family_flags(), output="excel")  # type: ignore[arg-type]
    with pytest.raises(TableInputError, match=r"nope\.parquet"):
        evaluate_frame(Path("/nonexistent/nope.parquet"), definitions=family_flags())


def test_a_polars_frame_without_distinct_id_gets_the_engine_message() -> None:
    with pytest.raises(ValueError, match="needs a 'distinct_id' column"):
        evaluate_frame(pl.DataFrame({"plan": ["pro"]}), definitions=family_flags())


def _loaded_beyond_pandas(module: str) -> set[str]:
    """Top-level modules `import <module>` loads that `import pandas, numpy` does not."""
    code = (
        "import sys; import pandas, numpy; before = set(sys.modules); "
        f"import {module}; print('\\n'.join(sorted(set(sys.modules) - before)))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return {m.split(".", 1)[0] for m in out.split()}


@pytest.mark.parametrize("module", ["analytics_nb", "analytics_nb.flags", "analytics_nb.tables"])
def test_importing_the_engine_loads_no_frame_library(module: str) -> None:
    assert not {"polars", "pyarrow", "duckdb", "dask", "distributed", "pyspark"} & _loaded_beyond_pandas(
        module
    )


def test_simulate_with_an_evaluator_built_over_polars(table: Any, frame: pd.DataFrame) -> None:
    """simulate(evaluator=) runs the caller's evaluator; one built from Polars (answering in Polars) still
    gives the pandas result frame, and `.data` follows the property sets' family."""
    from analytics_nb.simulation import simulate

    want = simulate(frame, engine="local", definitions=family_flags())
    polars_sets = pl.from_arrow(table)
    evaluator = FrameEvaluator(polars_sets, definitions=family_flags())
    got = simulate(polars_sets, engine="local", definitions=family_flags(), evaluator=evaluator)
    assert _pandas_cells(got.frame, FLAG_KEYS) == _pandas_cells(want.frame, FLAG_KEYS)
    assert isinstance(got.data, pl.DataFrame)

"""Input families beyond pandas: Polars (eager, lazy), PyArrow (table, dataset), DuckDB and parquet paths
give exactly the pandas answers (flag values, NA where pandas has NA, summaries, what-if),
in the caller's family."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from _flags import condition, flag, prop
from analytics_nb.simulation import WhatIf, simulate, with_rollout

pa = pytest.importorskip("pyarrow", reason="the 'arrow' extra is not installed")
pl = pytest.importorskip("polars", reason="the 'polars' extra is not installed")
duckdb = pytest.importorskip("duckdb", reason="the 'duckdb' extra is not installed")
import pyarrow.dataset as pads  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

N = 400


def with_undecidable_flag() -> list[dict[str, Any]]:
    """The family flags plus "dated": a date filter on text, which sdk mode cannot settle locally (NA)."""
    dated = {"properties": [prop("plan", "2024-01-01", "is_date_before")]}
    return [*family_flags(), flag("dated", dated, id=7)]


def family_flags() -> list[dict[str, Any]]:
    return [
        flag("rollout", condition(rollout=37), id=1, payloads={"true": '{"a": 1}'}),
        flag("exp", condition(prop("plan", ["pro", "team"])), id=2, variants={"control": 50, "test": 50}),
        flag("big", condition(prop("seats", 10, "gt")), id=3),
        flag("no-plan", {"properties": [prop("plan", "is_not_set", "is_not_set")]}, id=4),
        flag("beta", condition(prop("beta", ["true"]), rollout=80), id=5),
        flag("score", {"properties": [prop("score", "0.5", "lt")]}, id=6),
    ]


def person_frame(n: int = N) -> pd.DataFrame:
    """Nullable dtypes, so the pandas frame and its Arrow twin hold the same values and the same nulls."""
    rng = np.random.default_rng(16)
    plan = rng.choice(np.array(["pro", "team", "free", None], dtype=object), n)
    seats = rng.integers(0, 30, n).astype(object)
    seats[rng.random(n) < 0.1] = None
    beta = rng.choice(np.array([True, False, None], dtype=object), n)
    score = rng.random(n)
    score[rng.random(n) < 0.1] = np.nan
    return pd.DataFrame(
        {
            "distinct_id": [f"user-{i}" for i in range(n)],
            "plan": pd.array(plan, dtype="string"),
            "seats": pd.array(seats, dtype="Int64"),
            "beta": pd.array(beta, dtype="boolean"),
            "score": score,
        }
    )


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return person_frame()


@pytest.fixture(scope="module")
def table(frame: pd.DataFrame) -> Any:
    return pa.Table.from_pandas(frame, preserve_index=False)


@pytest.fixture(scope="module")
def parquet_path(table: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("export") / "persons.parquet"
    pq.write_table(table, path)
    return path


@pytest.fixture(scope="module")
def expected(frame: pd.DataFrame) -> Any:
    return simulate(frame, engine="local", definitions=family_flags())


FLAG_KEYS = ["rollout", "exp", "big", "no-plan", "beta", "score"]


def _missing(v: Any) -> bool:
    """A missing cell as the results spell it: pd.NA / None, or NaN in a category column."""
    return v is None or v is pd.NA or (isinstance(v, float) and v != v)


def _cells(frame: pd.DataFrame, keys: list[str]) -> list[list[Any]]:
    """Comparable cells: NA as None, numpy scalars as Python values."""
    out = []
    for key in keys:
        col = frame[key].astype(object).tolist()
        out.append([None if _missing(v) else (v.item() if isinstance(v, np.generic) else v) for v in col])
    return out


def _text(values: list[Any]) -> list[Any]:
    """The Arrow / Polars spelling of a multivariate column: variant key, 'false' / 'true', null."""
    return [None if v is None else ("true" if v is True else "false" if v is False else v) for v in values]


def _sources(frame: pd.DataFrame, table: Any, parquet_path: Path) -> dict[str, tuple[Any, str]]:
    con = duckdb.connect()
    con.register("persons", table)
    return {
        "polars": (pl.from_arrow(table), "polars"),
        "polars-lazy": (pl.from_arrow(table).lazy(), "polars"),
        "arrow-table": (table, "arrow"),
        "arrow-dataset": (pads.dataset(parquet_path), "arrow"),
        "duckdb": (con.sql("select * from persons"), "pandas"),
        "parquet-path": (parquet_path, "pandas"),
        "parquet-str": (str(parquet_path), "pandas"),
    }


SOURCES = ["polars", "polars-lazy", "arrow-table", "arrow-dataset", "duckdb", "parquet-path", "parquet-str"]


@pytest.mark.parametrize("source", SOURCES)
def test_each_family_gives_the_pandas_answers(
    source: str, frame: pd.DataFrame, table: Any, parquet_path: Path, expected: Any
) -> None:
    obj, family = _sources(frame, table, parquet_path)[source]
    result = simulate(obj, engine="local", definitions=family_flags())
    assert _cells(result.frame, FLAG_KEYS) == _cells(expected.frame, FLAG_KEYS)
    assert result.frame["distinct_id"].tolist() == expected.frame["distinct_id"].tolist()
    # NA where pandas has NA (the Int64 / boolean / float nulls make unknowns impossible here, but errors
    # and payload NA must line up too)
    assert (
        result.frame["rollout:payload"].isna().tolist() == expected.frame["rollout:payload"].isna().tolist()
    )
    pd.testing.assert_frame_equal(result.summary(), expected.summary())
    pd.testing.assert_frame_equal(result.crosstab("exp", "plan"), expected.crosstab("exp", "plan"))
    assert result.output == family
    data = result.data
    if family == "pandas":
        assert isinstance(data, pd.DataFrame)
        return
    as_arrow = data if family == "arrow" else data.to_arrow()
    assert isinstance(data, pa.Table if family == "arrow" else pl.DataFrame)
    assert as_arrow.schema.field("rollout").type == pa.bool_()
    assert as_arrow.schema.field("exp").type in (pa.string(), pa.large_string())
    want = _cells(expected.frame, FLAG_KEYS)
    got = [as_arrow.column(k).to_pylist() for k in FLAG_KEYS]
    assert got[1] == _text(want[1])  # exp: multivariate as text
    assert [g for i, g in enumerate(got) if i != 1] == [w for i, w in enumerate(want) if i != 1]


@pytest.mark.parametrize("output", ["pandas", "polars", "arrow"])
def test_output_picks_the_family(output: str, table: Any, expected: Any) -> None:
    result = simulate(table, engine="local", definitions=family_flags(), output=output)  # type: ignore[arg-type]
    kind = {"pandas": pd.DataFrame, "polars": pl.DataFrame, "arrow": pa.Table}[output]
    assert isinstance(result.data, kind)
    assert len(result.data) == len(expected.frame)


def test_a_bad_output_is_refused_with_the_choices(table: Any) -> None:
    with pytest.raises(ValueError, match=r"output='excel'.*'pandas', 'polars' or 'arrow'"):
        simulate(table, engine="local", definitions=family_flags(), output="excel")  # type: ignore[arg-type]


def test_a_missing_parquet_path_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.parquet"
    with pytest.raises(ValueError, match=r"nope\.parquet"):
        simulate(missing, engine="local", definitions=family_flags())


def test_arrow_input_is_read_without_copying_the_values(table: Any) -> None:
    from analytics_nb.tables import to_pandas

    converted, family = to_pandas(table)
    assert family == "arrow"
    assert isinstance(converted["seats"].dtype, pd.ArrowDtype)
    # the pandas column is a view of the table's own buffer
    buf = table.column("seats").chunk(0).buffers()[1]
    assert converted["seats"].array._pa_array.chunk(0).buffers()[1].address == buf.address


@pytest.mark.parametrize("source", ["polars", "arrow-table", "duckdb", "parquet-path"])
def test_whatif_over_each_family_matches_pandas(
    source: str, frame: pd.DataFrame, table: Any, parquet_path: Path
) -> None:
    edited = with_rollout(family_flags(), "rollout", 80)
    base = WhatIf(frame, family_flags()).run(edited)
    obj, family = _sources(frame, table, parquet_path)[source]
    got = WhatIf(obj, family_flags()).run(edited)
    pd.testing.assert_frame_equal(got.moves, base.moves)
    assert got.changes["distinct_id"].tolist() == base.changes["distinct_id"].tolist()
    assert got.output == family
    if family == "polars":
        assert isinstance(got.edited_data, pl.DataFrame)
    elif family == "arrow":
        assert isinstance(got.edited_data, pa.Table)


def test_the_simulation_package_loads_no_frame_library() -> None:
    import subprocess
    import sys

    code = "import sys, analytics_nb.simulation; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    loaded = {m.split(".", 1)[0] for m in out.split()}
    # (pyarrow is left out: pandas 3 itself loads it when it is installed, for its default str dtype)
    assert not {"polars", "duckdb", "dask", "distributed"} & loaded


@pytest.mark.parametrize("source", ["polars", "arrow-table", "duckdb"])
def test_unknown_values_are_na_in_every_family(
    source: str, frame: pd.DataFrame, table: Any, parquet_path: Path
) -> None:
    """sdk mode cannot settle a date filter on text locally: NA in pandas, NA (null) in every family."""
    flags = with_undecidable_flag()
    want = simulate(frame, engine="local", definitions=flags, mode="sdk")
    assert want.frame["dated"].isna().all()
    obj, family = _sources(frame, table, parquet_path)[source]
    got = simulate(obj, engine="local", definitions=flags, mode="sdk")
    keys = [*FLAG_KEYS, "dated"]
    assert _cells(got.frame, keys) == _cells(want.frame, keys)
    pd.testing.assert_frame_equal(got.summary(), want.summary())
    if family != "pandas":
        as_arrow = got.data if family == "arrow" else got.data.to_arrow()
        assert as_arrow.column("dated").null_count == len(frame)

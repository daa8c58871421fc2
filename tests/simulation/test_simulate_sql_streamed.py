"""Results streamed (issue 35): ``batches()`` walks any result a batch at a time in the shape of ``.frame``,
and the SQL result's ``to_parquet`` / ``to_csv`` (the Dask result's ``to_csv``) write through it without
collecting every row; the files equal those the collected frame gives (same rows, columns, dtypes)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from _flags import condition, flag, prop
from analytics_nb.frames import read_csv, to_csv
from analytics_nb.simulation import SimulationInputError, concat_frames, simulate, simulate_dask
from analytics_nb.simulation._answers import write_parquet

pytest.importorskip("duckdb", reason="the 'sql' extra is not installed")
pq = pytest.importorskip("pyarrow.parquet", reason="the 'arrow' extra is not installed")
from analytics_nb.simulation._sql_source import SqlSource  # noqa: E402

FLAGS = [
    flag("pro-only", condition(prop("plan", ["pro"])), payloads={"true": '{"tier": 1}'}),
    flag(
        "exp",
        condition(prop("plan", ["team"]), variant="test"),
        condition(rollout=80),
        variants={"control": 50, "test": 50},
        payloads={"control": '"c"', "test": '"t"'},
    ),
    flag("adults", condition(prop("age", 18, "gte"), rollout=60)),
    flag("absent", condition(prop("nowhere", ["x"]))),  # no such column: NA answers (missing_property)
]
N = 23


def _people(n: int = N) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "distinct_id": [f"s-{i}" for i in range(n)],
            "plan": pd.Series(["pro", None, "team", "free"] * (n // 4) + ["pro"] * (n % 4), dtype=object),
            "age": pd.array([20, None, 15, 40] * (n // 4) + [30] * (n % 4), dtype="Int64"),
            # one NA, in the first row: read alone, the other rows' batches come back as numpy bool
            "beta": pd.array([None] + [True, False] * (n // 2), dtype="boolean")[:n],
        }
    )


def _sources(tmp_path: Path) -> dict[str, Any]:
    """The same persons as a pandas frame, a parquet file with rows missing their id (error rows), a folder
    of two parquet files, an Arrow table and a DuckDB relation over the file."""
    people = _people()
    broken = people.assign(distinct_id=people["distinct_id"].where(people.index % 9 != 4, None))
    broken.to_parquet(tmp_path / "people.parquet", row_group_size=5)
    folder = tmp_path / "folder"
    folder.mkdir()
    people.iloc[:10].to_parquet(folder / "a.parquet")
    people.iloc[10:].to_parquet(folder / "b.parquet")
    import duckdb
    import pyarrow as pa

    relation = duckdb.connect().sql(f"SELECT * FROM read_parquet('{tmp_path / 'people.parquet'}')")
    return {
        "frame": people,
        "file": str(tmp_path / "people.parquet"),
        "folder": str(folder),
        "arrow": pa.Table.from_pandas(people, preserve_index=False),
        "relation": relation,
    }


def _run(source: Any, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return simulate(source, engine="sql", definitions=FLAGS, progress=False, **kw)


def _no_collect(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: Any, *, inputs: bool = False) -> pd.DataFrame:
        raise AssertionError("collect() was called: every row brought back at once")

    monkeypatch.setattr(SqlSource, "collect", refuse)


@pytest.mark.parametrize("shape", ["frame", "file", "folder", "arrow", "relation"])
@pytest.mark.parametrize("extras", [True, False])
def test_sql_files_and_batches_equal_the_collected_frame_and_never_collect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str, extras: bool
) -> None:
    source = _sources(tmp_path)[shape]
    result = _run(source, payloads=extras, reasons=extras)
    try:
        with monkeypatch.context() as m:
            _no_collect(m)
            for inputs in (True, False):
                result.to_parquet(tmp_path / f"s-{inputs}.parquet", inputs=inputs)
                result.to_csv(tmp_path / f"s-{inputs}.csv", inputs=inputs)
            batches = list(result.batches(4))
            outputs = list(result.batches(7, inputs=False))
        frame, out = result.frame, result.outputs  # collected only now, to compare
        assert [len(b) for b in batches] == [4] * (len(frame) // 4) + [len(frame) % 4]
        for i, batch in enumerate(batches):  # each batch is exactly that slice of .frame
            pd.testing.assert_frame_equal(batch, frame.iloc[4 * i : 4 * i + 4])
        for i, batch in enumerate(outputs):
            pd.testing.assert_frame_equal(batch, out.iloc[7 * i : 7 * i + 7])
        pd.testing.assert_frame_equal(concat_frames(batches), frame)
        for inputs, whole in ((True, frame), (False, out)):
            write_parquet(whole, tmp_path / "w.parquet")  # what to_parquet wrote before (collected)
            to_csv(whole, tmp_path / "w.csv")
            streamed = pq.read_table(tmp_path / f"s-{inputs}.parquet")
            assert streamed.schema.equals(pq.read_schema(tmp_path / "w.parquet"))
            pd.testing.assert_frame_equal(streamed.to_pandas(), pd.read_parquet(tmp_path / "w.parquet"))
            pd.testing.assert_frame_equal(
                read_csv(tmp_path / f"s-{inputs}.csv"), read_csv(tmp_path / "w.csv")
            )
        # not vacuous: NA answers, a variant, payloads, input columns with NA, error rows from the file
        assert frame["absent"].isna().all() and {"control", "test"} <= set(frame["exp"].dropna())
        assert {"plan", "age", "beta"} <= set(frame.columns) and frame["age"].isna().any()
        assert (len(result.errors) > 0) == (shape in ("file", "relation"))
        assert ("exp:payload" in frame.columns) == extras and ("exp:reason" in frame.columns) == extras
    finally:
        result.close()


def test_sql_batches_of_a_result_without_rows_and_bad_rows(tmp_path: Path) -> None:
    result = _run(_people().iloc[:0])
    try:
        (only,) = list(result.batches(5))
        assert only.empty and list(only.columns) == list(result.frame.columns)
        result.to_parquet(tmp_path / "e.parquet")
        assert pq.read_table(tmp_path / "e.parquet").num_rows == 0
        with pytest.raises(SimulationInputError, match="rows"):
            result.batches(0)
    finally:
        result.close()


def test_local_and_dask_batches_and_csv_equal_the_collected_frame(tmp_path: Path) -> None:
    dd = pytest.importorskip("dask.dataframe", reason="the 'dask' extra is not installed")
    people = _people()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        local = simulate(people, engine="local", definitions=FLAGS, reasons=True)
    pd.testing.assert_frame_equal(concat_frames(list(local.batches(5))), local.frame)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lazy = simulate_dask(dd.from_pandas(people, npartitions=3), definitions=FLAGS, check_ids=False)
        partitions = dd.from_pandas(people, npartitions=3).reset_index(drop=True)  # each numbered from 0
        renumbered = simulate_dask(partitions, definitions=FLAGS, check_ids=False)
    for result in (lazy, renumbered):
        frame = result.to("pandas")
        batches = list(result.batches(4))
        assert max(len(b) for b in batches) <= 4
        pd.testing.assert_frame_equal(concat_frames(batches), frame)
        result.to_csv(tmp_path / "d.csv")
        to_csv(frame, tmp_path / "w.csv")
        pd.testing.assert_frame_equal(read_csv(tmp_path / "d.csv"), read_csv(tmp_path / "w.csv"))


def test_dask_to_csv_does_not_collect(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dd = pytest.importorskip("dask.dataframe", reason="the 'dask' extra is not installed")
    from analytics_nb.simulation._distributed import DaskSource

    def refuse(self: Any, *, inputs: bool = False) -> pd.DataFrame:
        raise AssertionError("collect() was called")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = simulate_dask(dd.from_pandas(_people(), npartitions=2), definitions=FLAGS, check_ids=False)
    monkeypatch.setattr(DaskSource, "collect", refuse)
    result.to_csv(tmp_path / "d.csv")
    assert len(read_csv(tmp_path / "d.csv")) == N

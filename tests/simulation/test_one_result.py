"""One lazy result (issue 34): every engine answers with a `SimulationResult` over its `AnswerSource`.

The same persons through local, remote, both, Dask and sql give one class with the same ``summary()``,
``crosstab()`` and ``len()``; a Dask result counts on the cluster, a SQL one in DuckDB, and neither collects
its rows for them; a what-if is a `WhatIfResult` over either backend; the retired class names still
import, with a warning.
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from _flags import condition, flag, prop
from analytics_nb.simulation import (
    AnswerSource,
    MissingPropertyWarning,
    SimulationInputError,
    SimulationResult,
    WhatIf,
    WhatIfResult,
    simulate,
    simulate_dask,
    with_rollout,
)

dd = pytest.importorskip("dask.dataframe", reason="the 'dask' extra is not installed")

FLAGS = [
    flag("pro-only", condition(prop("plan", ["pro"]))),
    flag("half", condition(rollout=50)),
    flag(
        "exp",
        condition(prop("plan", ["team"]), variant="test"),
        condition(rollout=80),
        multivariate={
            "variants": [
                {"key": "control", "rollout_percentage": 50},
                {"key": "test", "rollout_percentage": 50},
            ]
        },
    ),
    flag("by-country", condition(prop("country", ["DE"]))),
]
KEYS = [f["key"] for f in FLAGS]
PEOPLE = pd.DataFrame(
    {
        "distinct_id": [f"one-{i}" for i in range(150)],
        "plan": ["pro", "free", "team"] * 50,
        "country": ["DE", "US", "FR"] * 50,
    }
)


def _flag_cells(frame: pd.DataFrame) -> dict[str, list[Any]]:
    frame = frame.reset_index(drop=True)
    return {k: [None if v is pd.NA else v for v in frame[k].astype(object).tolist()] for k in KEYS}


def test_every_engine_answers_with_one_result_and_the_same_tables(
    empty_sandbox: Any, make_client: Any
) -> None:
    """local, remote, both (against the sandbox's /flags) and Dask: one class, the same summary, crosstab,
    len and cells for the same persons and flags."""
    client = make_client(empty_sandbox, ids=True)
    for f in FLAGS:
        client.feature_flags.create(f["key"], filters=f["filters"])
    definitions = client.feature_flags.local_evaluation()
    results = {
        engine: simulate(PEOPLE, KEYS, engine=engine, client=client)  # type: ignore[arg-type]
        for engine in ("local", "remote", "both")
    }
    results["dask"] = simulate_dask(dd.from_pandas(PEOPLE, npartitions=3), KEYS, definitions=definitions)
    if importlib.util.find_spec("duckdb") is not None:  # the SQL engine: the one result over a SqlSource
        results["sql"] = simulate(PEOPLE, KEYS, engine="sql", client=client)
    want = results["local"]
    for engine, result in results.items():
        assert isinstance(result, SimulationResult), engine
        assert isinstance(result.source, AnswerSource), engine
        assert result.engine == engine
        assert len(result) == len(PEOPLE), engine
        assert result.flags == KEYS, engine
        pd.testing.assert_frame_equal(result.summary(), want.summary(), obj=engine)
        for key in ("exp", "pro-only"):
            pd.testing.assert_frame_equal(
                result.crosstab(key, "plan"), want.crosstab(key, "plan"), check_names=False, obj=engine
            )
        assert _flag_cells(result.to("pandas", inputs=False)) == _flag_cells(want.outputs), engine
    assert results["dask"].lazy and not want.lazy


def _id_frames(people: pd.DataFrame, client: Any, tmp_path: Path) -> dict[str, pd.DataFrame]:
    """Every door's result frames for ``people`` (local, remote, both with its two frames, sql from the
    frame and from a parquet file, `simulate_sql`, Dask collected, what-if in memory and over Dask)."""
    from analytics_nb.simulation import simulate_sql

    out: dict[str, pd.DataFrame] = {}
    for engine in ("local", "remote", "both"):
        result = simulate(people, KEYS, engine=engine, client=client, progress=False)  # type: ignore[arg-type]
        out[engine] = result.frame
        out[f"{engine}.outputs"] = result.outputs
    out["both.local"], out["both.remote"] = result.local, result.remote
    edited = with_rollout(FLAGS, "half", 90)
    whatif = WhatIf(people, FLAGS).run(edited)
    out["whatif.base"], out["whatif.edited"] = whatif.base, whatif.edited
    lazy = simulate_dask(dd.from_pandas(people, npartitions=3), KEYS, definitions=FLAGS)
    out["dask"] = lazy.to("pandas")
    out["dask.whatif"] = lazy.whatif(edited).edited_data
    if importlib.util.find_spec("duckdb") is not None:
        with simulate(people, KEYS, engine="sql", definitions=FLAGS, progress=False) as sql:
            out["sql"] = sql.frame
        with simulate_sql(people, FLAGS, progress=False) as sql:
            out["simulate_sql"] = sql.frame
        path = tmp_path / "people.parquet"
        people.to_parquet(path)
        with simulate(path, KEYS, engine="sql", definitions=FLAGS, progress=False) as sql:
            out["sql.parquet"] = sql.frame
    return out


@pytest.mark.parametrize("ids", ["str", "object", "string[pyarrow]"])
def test_text_ids_are_pandas_3s_str_at_every_door(
    ids: str, empty_sandbox: Any, make_client: Any, tmp_path: Path
) -> None:
    """Text ids (pandas 3's ``str``, Python strings in ``object``, ``string[pyarrow]``) come back as pandas
    3's default text dtype (``str``, what ``pd.Series(["a"]).dtype`` is) from every door, with the same
    values. Before, every door gave ``object`` (10M ids: ~0.7 GB of Python strings)."""
    client = make_client(empty_sandbox, ids=True)
    for f in FLAGS:
        client.feature_flags.create(f["key"], filters=f["filters"])
    people = PEOPLE.assign(distinct_id=PEOPLE["distinct_id"].astype(ids))
    default_text = pd.Series(["a"]).dtype
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frames = _id_frames(people, client, tmp_path)
    assert len(frames) >= 11
    for door, frame in frames.items():
        assert frame["distinct_id"].dtype == default_text, door
        assert frame["distinct_id"].tolist() == PEOPLE["distinct_id"].tolist(), door


def test_integer_ids_keep_their_object_column_at_every_door(
    empty_sandbox: Any, make_client: Any, tmp_path: Path
) -> None:
    """Integer ids are never shown in a text dtype: the result's ``distinct_id`` stays ``object``, holding
    their text (what the service does with a numeric id) at every door: the SQL door over a parquet file of
    integer ids gave the numbers themselves, every other door their text."""
    client = make_client(empty_sandbox, ids=True)
    for f in FLAGS:
        client.feature_flags.create(f["key"], filters=f["filters"])
    people = PEOPLE.assign(distinct_id=range(1000, 1000 + len(PEOPLE)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frames = _id_frames(people, client, tmp_path)
    for door, frame in frames.items():
        assert frame["distinct_id"].dtype == object, door
        values = frame["distinct_id"].tolist()
        assert values == [str(i) for i in range(1000, 1000 + len(PEOPLE))], door


def test_a_dask_result_counts_on_the_cluster_and_collects_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """summary, crosstab, len, errors, the repr and the notebook view of a Dask result never compute its
    frame nor collect its rows; only ``to(...)`` does."""
    from analytics_nb.simulation._distributed import DaskSource

    result = simulate_dask(dd.from_pandas(PEOPLE, npartitions=3), definitions=FLAGS)
    want = simulate(PEOPLE, engine="local", definitions=FLAGS)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the Dask result's rows were collected")

    monkeypatch.setattr(DaskSource, "collect", refuse)
    monkeypatch.setattr(type(result.frame), "compute", refuse)
    pd.testing.assert_frame_equal(result.summary(), want.summary())
    pd.testing.assert_frame_equal(
        result.crosstab("exp", "country"), want.crosstab("exp", "country"), check_names=False
    )
    assert len(result) == len(PEOPLE)
    assert "lazy=True" in repr(result) and "lazy" in result._repr_html_()
    monkeypatch.undo()
    assert _flag_cells(result.to("pandas")) == _flag_cells(want.outputs)


def test_a_dask_result_writes_parquet_per_partition_with_the_local_answers(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    result = simulate_dask(dd.from_pandas(PEOPLE, npartitions=3), definitions=FLAGS)
    want = simulate(PEOPLE, engine="local", definitions=FLAGS)
    folder = result.to_parquet(tmp_path / "answers")
    assert sorted(p.name for p in folder.iterdir()) == [f"part-{i}.parquet" for i in range(3)]
    back = pd.concat([pd.read_parquet(folder / f"part-{i}.parquet") for i in range(3)], ignore_index=True)
    assert back["distinct_id"].tolist() == PEOPLE["distinct_id"].tolist()
    assert back["plan"].tolist() == PEOPLE["plan"].tolist()  # the input columns, as the pandas result's
    local = pd.read_parquet(want.to_parquet(tmp_path / "local.parquet"))
    for key in KEYS:
        assert back[key].tolist() == local[key].tolist(), key


def test_missing_report_is_the_engines_own_for_every_engine() -> None:
    """The report the `MissingPropertyWarning` is built from: the local run's counts, and the same counts
    from a Dask result (counted on the cluster when read)."""
    people = PEOPLE.drop(columns="country")
    with pytest.warns(MissingPropertyWarning, match="150 answers"):
        local = simulate(people, engine="local", definitions=FLAGS)
    assert local.missing_report == {"by-country": (("the person's stored `country`",), 150)}
    with pytest.warns(MissingPropertyWarning):
        lazy = simulate_dask(dd.from_pandas(people, npartitions=3), definitions=FLAGS)
    assert lazy.missing_report == local.missing_report
    with pytest.warns(MissingPropertyWarning, match="150 answers"):
        lazy.warn_missing()
    assert simulate(PEOPLE, engine="local", definitions=FLAGS).missing_report == {}


def test_a_whatif_is_one_class_over_either_backend() -> None:
    edited = with_rollout(FLAGS, "half", 90)
    memory = WhatIf(PEOPLE, FLAGS).run(edited)
    lazy = simulate_dask(dd.from_pandas(PEOPLE, npartitions=3), definitions=FLAGS).whatif(edited)
    assert isinstance(memory, WhatIfResult) and isinstance(lazy, WhatIfResult)
    pd.testing.assert_frame_equal(lazy.moves, memory.moves)
    assert isinstance(lazy.edited, SimulationResult) and lazy.changes is None
    assert _flag_cells(lazy.edited_data) == _flag_cells(memory.edited)
    assert "moved=" in repr(lazy) and "moved_rows=" in repr(memory)
    with pytest.raises(SimulationInputError, match=r"WhatIf\(property_sets, definitions\)\.run\(edited\)"):
        simulate(PEOPLE, engine="local", definitions=FLAGS).whatif(edited)


def test_the_retired_class_names_import_with_a_warning() -> None:
    """DaskSimulation and DaskWhatIf still import for one release, as the classes that replaced them, and
    isinstance with the old name still holds."""
    import analytics_nb.simulation as simulation

    with pytest.warns(FutureWarning, match="DaskSimulation is now SimulationResult"):
        from analytics_nb.simulation import DaskSimulation
    with pytest.warns(FutureWarning, match="DaskWhatIf is now WhatIfResult"):
        dask_whatif = simulation.DaskWhatIf
    assert DaskSimulation is SimulationResult and dask_whatif is WhatIfResult
    result = simulate_dask(dd.from_pandas(PEOPLE, npartitions=2), definitions=FLAGS)
    assert isinstance(result, DaskSimulation)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match="no attribute 'NoSuchResult'"):
            simulation.NoSuchResult  # noqa: B018
    assert "DaskSimulation" not in simulation.__all__


def _sql_result(people: pd.DataFrame) -> Any:
    pytest.importorskip("duckdb", reason="the 'sql' extra is not installed")
    return simulate(people, engine="sql", definitions=FLAGS, progress=False)


def test_a_sql_result_counts_in_sql_and_collects_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SQL engine answers with the one result over its `SqlSource`: summary, crosstab, len, errors,
    missing_report, the repr and the notebook view are the local engine's, computed in SQL without ever
    reading the answers back whole; only ``to(...)`` does."""
    from analytics_nb.simulation._sql_source import SqlSource

    want = simulate(PEOPLE, engine="local", definitions=FLAGS)
    with _sql_result(PEOPLE) as result:
        assert isinstance(result, SimulationResult) and isinstance(result.source, SqlSource)
        assert isinstance(result.source, AnswerSource) and not result.lazy

        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("the SQL result's rows were collected")

        monkeypatch.setattr(SqlSource, "collect", refuse)
        pd.testing.assert_frame_equal(result.summary(), want.summary())
        pd.testing.assert_frame_equal(result.summary(["exp"]), want.summary(["exp"]))
        for key, by in (("exp", "country"), ("pro-only", "plan")):
            pd.testing.assert_frame_equal(result.crosstab(key, by), want.crosstab(key, by), check_names=False)
        assert len(result) == len(PEOPLE) and result.flags == KEYS
        assert result.errors.empty and result.missing_report == want.missing_report == {}
        assert "engine='sql', rows=150" in repr(result) and "errors=0" in repr(result)
        page = result._repr_html_()
        assert "<table>" in page and "one-0" in page  # the summary and the first rows
        assert result._outputs is None and result._frame is None
        monkeypatch.undo()
        assert _flag_cells(result.to("pandas", inputs=False)) == _flag_cells(want.outputs)


def test_a_sql_result_reports_missing_properties_as_the_local_engine() -> None:
    """The SQL run's report is the result's ``missing_report`` (it was None and collected every row), the
    same counts as the local engine's, and ``warn_missing`` shows the same warning again."""
    people = PEOPLE.drop(columns="country")
    with pytest.warns(MissingPropertyWarning, match="150 answers"):
        local = simulate(people, engine="local", definitions=FLAGS)
    with pytest.warns(MissingPropertyWarning, match="150 answers"):
        result = _sql_result(people)
    with result:
        assert result.missing_report == local.missing_report
        assert result._outputs is None  # read from the run's report, not from the answers
        with pytest.warns(MissingPropertyWarning, match="150 answers"):
            result.warn_missing()


def test_a_sql_result_writes_the_local_engines_parquet(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    want = simulate(PEOPLE, engine="local", definitions=FLAGS)
    with _sql_result(PEOPLE) as result:
        for inputs in (True, False):
            got = pd.read_parquet(result.to_parquet(tmp_path / f"sql-{inputs}.parquet", inputs=inputs))
            local = pd.read_parquet(want.to_parquet(tmp_path / f"local-{inputs}.parquet", inputs=inputs))
            pd.testing.assert_frame_equal(got.reset_index(drop=True), local.reset_index(drop=True))

"""The local engine over a Dask DataFrame on a `LocalCluster` of 2 worker processes: lazy results, summaries
and crosstabs computed on the cluster, what-if re-evaluating only the changed flags - all equal to pandas."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from analytics_nb.simulation import SimulationInputError, WhatIf, simulate, simulate_dask, with_rollout

dd = pytest.importorskip("dask.dataframe", reason="the 'dask' extra is not installed")
distributed = pytest.importorskip("distributed", reason="the 'dask' extra is not installed")
pa = pytest.importorskip("pyarrow", reason="the 'arrow' extra is not installed")

from test_simulate_families import family_flags, person_frame  # noqa: E402

N = 600


@pytest.fixture(scope="module")
def cluster_client() -> Iterator[Any]:
    import signal

    sigint = signal.getsignal(signal.SIGINT)  # the cluster replaces it; later Ctrl-C tests need Python's back
    try:
        yield from _cluster()
    finally:
        signal.signal(signal.SIGINT, sigint)


def _cluster() -> Iterator[Any]:
    with (
        distributed.LocalCluster(
            n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None, host="127.0.0.1"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return person_frame(N)


@pytest.fixture(scope="module")
def export(frame: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A person export as a parquet dataset of 4 files (4 partitions)."""
    folder = tmp_path_factory.mktemp("persons")
    import pyarrow.parquet as pq

    for i in range(4):
        part = frame.iloc[i * N // 4 : (i + 1) * N // 4]
        pq.write_table(pa.Table.from_pandas(part, preserve_index=False), folder / f"part-{i}.parquet")
    return folder


@pytest.fixture(scope="module")
def expected(frame: pd.DataFrame) -> Any:
    return simulate(frame, engine="local", definitions=family_flags())


@pytest.fixture(scope="module")
def result(cluster_client: Any, export: Path) -> Any:
    ddf = dd.read_parquet(str(export))
    assert ddf.npartitions == 4
    return simulate_dask(ddf, definitions=family_flags())


def _flag_cells(frame: pd.DataFrame) -> dict[str, list[Any]]:
    keys = [c for c in frame.columns if c != "error"]
    return {k: [None if v is pd.NA else v for v in frame[k].astype(object).tolist()] for k in keys}


def test_results_are_lazy_and_equal_pandas(result: Any, expected: Any) -> None:
    assert type(result.frame).__module__.startswith(("dask", "dask_expr"))
    got = result.frame.compute().reset_index(drop=True)
    assert list(got.columns) == list(expected.frame.columns)
    assert _flag_cells(got) == _flag_cells(expected.frame)
    assert got["error"].isna().all() and expected.frame["error"].isna().all()


def test_the_work_ran_on_the_cluster_workers(result: Any, cluster_client: Any) -> None:
    persisted = result.frame.persist()
    distributed.wait(persisted)
    where = cluster_client.who_has(persisted)
    workers = {w for ws in where.values() for w in ws}
    assert len(workers) == 2  # both worker processes hold result partitions


def test_summary_and_crosstab_computed_on_the_cluster_equal_pandas(result: Any, expected: Any) -> None:
    pd.testing.assert_frame_equal(result.summary(), expected.summary())
    pd.testing.assert_frame_equal(result.summary(["exp"]), expected.summary(["exp"]))
    pd.testing.assert_frame_equal(
        result.crosstab("exp", "plan"), expected.crosstab("exp", "plan"), check_names=False
    )
    got = result.crosstab("big", "plan", normalize="index")
    want = expected.crosstab("big", "plan", normalize="index")
    pd.testing.assert_frame_equal(got, want, check_names=False)


def test_whatif_re_evaluates_only_the_changed_flags_and_matches_pandas(
    result: Any, frame: pd.DataFrame
) -> None:
    edited = with_rollout(family_flags(), "rollout", 80)
    want = WhatIf(frame, family_flags()).run(edited)
    got = result.whatif(edited)
    pd.testing.assert_frame_equal(got.moves, want.moves)
    new = got.edited.frame.compute().reset_index(drop=True)
    want_cells = _flag_cells(want.edited)  # (the pandas what-if frames carry no payloads)
    assert {k: v for k, v in _flag_cells(new).items() if k in want_cells} == want_cells
    assert new["rollout:payload"].notna().sum() == (new["rollout"] == True).sum()  # noqa: E712


def _all_true(part: pd.DataFrame) -> pd.DataFrame:
    return part.assign(big=pd.array([True] * len(part), dtype="boolean"))


def test_whatif_keeps_the_unchanged_flags_columns(result: Any) -> None:
    """A sentinel in an unchanged flag's base column survives the what-if: it was not re-evaluated."""
    import dataclasses

    marked = dataclasses.replace(
        result, frame=result.frame.map_partitions(_all_true, meta=result.frame._meta)
    )
    got = marked.whatif(with_rollout(family_flags(), "rollout", 80)).edited.frame.compute()
    assert got["big"].all()
    assert set(got["rollout"].astype(object)) == {True, False}


def test_definitions_travel_once_not_per_partition(cluster_client: Any, export: Path) -> None:
    ddf = dd.read_parquet(str(export))
    big = family_flags()
    big[0]["filters"]["payloads"] = {"true": "x" * 200_000}  # 200 kB of definitions
    one = simulate_dask(ddf.repartition(npartitions=1), definitions=big).frame
    many = simulate_dask(ddf.repartition(npartitions=4), definitions=big).frame
    size_one = len(pickle.dumps(dict(one.__dask_graph__())))
    size_many = len(pickle.dumps(dict(many.__dask_graph__())))
    # the definitions are a Future on the workers (broadcast once): no partition's task carries a copy. The
    # graph holds the result's meta once, and its payload column is a category whose categories are the
    # payload texts (200 kB here): that is one copy per graph, whatever the number of partitions.
    meta = len(pickle.dumps(one._meta))
    assert one._meta["rollout:payload"].dtype == "category"
    assert size_one < 100_000 + meta and size_many < 100_000 + meta
    assert size_many - size_one < 20_000


def test_a_dask_frame_given_to_simulate_points_to_simulate_dask(export: Path) -> None:
    with pytest.raises(SimulationInputError, match="simulate_dask"):
        simulate(dd.read_parquet(str(export)), engine="local", definitions=family_flags())

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
dask = pytest.importorskip("dask", reason="the 'dask' extra is not installed")

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
    # a Dask result holds the outputs only (the partitions' input columns stay in the input frame); the pandas
    # result's outputs are its frame without the input property columns (SimulationResult.outputs)
    assert list(got.columns) == list(expected.outputs.columns)
    assert _flag_cells(got) == _flag_cells(expected.outputs)
    assert got["error"].isna().all() and expected.outputs["error"].isna().all()


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


def _export_with(frame: pd.DataFrame, folder: Path, parts: list[pd.DataFrame]) -> Any:
    import pyarrow.parquet as pq

    folder.mkdir()
    for i, part in enumerate(parts):
        pq.write_table(pa.Table.from_pandas(part, preserve_index=False), folder / f"part-{i}.parquet")
    return dd.read_parquet(str(folder))


def test_an_id_repeated_across_partitions_is_refused_like_pandas(
    cluster_client: Any, frame: pd.DataFrame, tmp_path: Path
) -> None:
    """Each partition alone has unique ids; the repeat is only visible across partitions (a regression:
    the per-partition check let it through). pandas refuses the same rows; so does Dask, counted on the
    cluster."""
    repeated = frame.copy()
    repeated.loc[N - 1, "distinct_id"] = "user-3"  # in the last partition; user-3 is in the first
    with pytest.raises(SimulationInputError, match="'user-3' appears more than once"):
        simulate(repeated, engine="local", definitions=family_flags())
    ddf = _export_with(
        repeated, tmp_path / "x", [repeated.iloc[i * N // 4 : (i + 1) * N // 4] for i in range(4)]
    )
    with pytest.raises(SimulationInputError, match=r"'user-3' appears more than once") as caught:
        simulate_dask(ddf, definitions=family_flags())
    message = str(caught.value)
    assert "partition 0" in message and "partition 3" in message and "across partitions" in message
    assert "1 duplicate row(s) in all" in message and "drop_duplicates('distinct_id')" in message
    assert caught.value.column == "distinct_id"
    # skipped on request: the lazy result is built (each partition alone is fine)
    assert simulate_dask(ddf, definitions=family_flags(), check_ids=False).frame.npartitions == 4


def test_numeric_and_text_spellings_of_one_id_are_one_id(cluster_client: Any, tmp_path: Path) -> None:
    """simulate compares the ids' text (what the service receives): 7 and "7" in two partitions repeat."""
    a = pd.DataFrame({"distinct_id": pd.array([7, 8], dtype=object), "plan": ["pro", "free"]})
    b = pd.DataFrame({"distinct_id": pd.array(["9", "7"], dtype=object), "plan": ["pro", "free"]})
    ddf = dd.from_pandas(pd.concat([a, b], ignore_index=True), npartitions=2)
    assert ddf.npartitions == 2
    with pytest.raises(SimulationInputError, match="'7' appears more than once"):
        simulate_dask(ddf, definitions=family_flags())


def test_an_id_repeated_within_a_partition_is_refused_before_any_result(
    cluster_client: Any, frame: pd.DataFrame, tmp_path: Path
) -> None:
    repeated = frame.copy()
    repeated.loc[5, "distinct_id"] = "user-4"
    repeated.loc[6, "distinct_id"] = "user-4"
    ddf = dd.from_pandas(repeated, npartitions=3)
    with pytest.raises(SimulationInputError, match=r"'user-4' appears more than once") as caught:
        simulate_dask(ddf, definitions=family_flags())
    assert "2 duplicate row(s) in all, within one partition" in str(caught.value)


def test_unique_ids_pass_the_check_and_the_answers_stay_pandas(
    cluster_client: Any, frame: pd.DataFrame, expected: Any
) -> None:
    got = simulate_dask(dd.from_pandas(frame, npartitions=5), definitions=family_flags())
    pd.testing.assert_frame_equal(got.summary(), expected.summary())


def test_a_hash_collision_of_different_ids_is_not_a_repeat(
    frame: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check counts 64-bit hashes; two different ids that hash alike must not be refused (a regression:
    the first version reported the colliding hash's id as repeated). Run in-process with a hasher that
    collides on purpose (every id of one length hashes alike)."""
    from analytics_nb.simulation import _distributed

    monkeypatch.setattr(
        _distributed, "_hash_texts", lambda text: text.str.len().to_numpy(dtype="uint64", na_value=0)
    )
    unique = dd.from_pandas(frame, npartitions=3)
    with dask.config.set(scheduler="synchronous"):
        _distributed.check_unique_ids(unique)  # every id collides with others of its length: no error
        repeated = frame.copy()
        repeated.loc[N - 1, "distinct_id"] = "user-3"
        with pytest.raises(SimulationInputError, match=r"'user-3' appears more than once") as caught:
            _distributed.check_unique_ids(dd.from_pandas(repeated, npartitions=3))
    assert "1 duplicate row(s) in all, across partitions" in str(caught.value)


def test_every_partition_and_whatif_reads_relative_dates_against_the_call_instant(
    cluster_client: Any, frame: pd.DataFrame
) -> None:
    """One instant, taken at the simulate_dask call, travels to every partition and to what-if re-runs
    (the lazy result may be computed much later)."""
    result = simulate_dask(dd.from_pandas(frame, npartitions=3), definitions=family_flags())
    assert result.now is not None and result.now.tzinfo is not None
    assert result.whatif(with_rollout(family_flags(), "rollout", 90)).edited.now == result.now

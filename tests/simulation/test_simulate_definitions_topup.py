"""Definitions without the cohorts or group type names their flags use (a flags DataFrame carries neither):
one top-up rule fills them from the service whenever a client is given, in every path (local, sql sync and
async, WhatIf, Dask); without a client the answers stay NA and one `IncompleteDefinitionsWarning` says how
many flags, which, and the fix. Against the demo sandbox over HTTP: flag ``eu-cohort-promo`` targets cohort
1 (``country in [DE, FR]``), ``company-dashboard`` aggregates by group type 0 (``company``).

The regression: ``simulate(..., engine="sql", definitions=client.feature_flags.frame(), client=client)``
answered 200 NA (the SQL path never filled the cohorts) where the local engine answered 100 True / 100
False; without a client both answered NA with no warning.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest
from tests._clients import client_for

from analytics_nb import AsyncClient, Client
from analytics_nb.flags import IncompleteDefinitionsWarning, evaluate_frame
from analytics_nb.sandbox import Sandbox
from analytics_nb.simulation import WhatIf, asimulate, load_definitions, simulate, whatif, with_rollout
from analytics_nb.simulation._definitions import flag_references

COHORT_FLAG = "eu-cohort-promo"
GROUP_FLAG = "company-dashboard"
SETS = pd.DataFrame({"distinct_id": [f"u{i}" for i in range(200)], "country": ["DE", "US"] * 100})
EU = (SETS["country"] == "DE").tolist()


def _incomplete(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, IncompleteDefinitionsWarning)]


def _recording(call: Callable[[], Any]) -> tuple[Any, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = call()
    return out, _incomplete(caught)


@pytest.fixture(scope="module")
def flags_frame(client: Client) -> pd.DataFrame:
    return client.feature_flags.frame()


@pytest.mark.parametrize("engine", ["local", "sql"])
def test_a_client_fills_the_cohorts_a_flags_frame_lacks(
    client: Client, flags_frame: pd.DataFrame, engine: str
) -> None:
    result, named = _recording(
        lambda: simulate(
            SETS, flags=[COHORT_FLAG], engine=engine, definitions=flags_frame, client=client, progress=False
        )
    )
    # was (sql): 200 NA, reason inconclusive: the SQL path never filled the cohorts from the service
    assert result.frame[COHORT_FLAG].astype(object).tolist() == EU
    assert named == []
    if engine == "sql":  # the SQL engine routes the cohort flag to the local engine, and says so
        assert "cohort" in result.local_flags[COHORT_FLAG]


def test_sql_with_a_client_equals_local_with_a_client(client: Client, flags_frame: pd.DataFrame) -> None:
    keys = [COHORT_FLAG, GROUP_FLAG, "beta-feature"]
    sets = SETS.assign(**{"group:company": ["acme", None] * 100})
    runs = {
        engine: simulate(
            sets,
            flags=keys,
            engine=engine,
            definitions=flags_frame,
            client=client,
            progress=False,
            missing_columns="not_set",
        ).frame[keys]
        for engine in ("local", "sql")
    }
    pd.testing.assert_frame_equal(
        runs["sql"].astype(object).reset_index(drop=True),
        runs["local"].astype(object).reset_index(drop=True),
    )


@pytest.mark.parametrize("engine", ["local", "sql"])
def test_without_a_client_the_cohort_flag_is_na_with_one_warning(
    flags_frame: pd.DataFrame, engine: str
) -> None:
    result, named = _recording(lambda: simulate(SETS, engine=engine, definitions=flags_frame, progress=False))
    assert result.frame[COHORT_FLAG].isna().all()  # never False: nothing is known
    assert len(named) == 1, named  # once per run
    text = named[0]
    assert f"1 flag uses cohorts the definitions do not carry ('{COHORT_FLAG}': cohort 1)" in text
    assert "client=" in text and "client.feature_flags.definitions()" in text
    # server mode, no group column: the group flag is False as the service answers it; nothing to say
    assert GROUP_FLAG not in text


@pytest.mark.parametrize("engine", ["local", "sql"])
def test_the_definitions_response_carries_cohorts_and_does_not_warn(client: Client, engine: str) -> None:
    response = client.feature_flags.definitions()
    result, named = _recording(
        lambda: simulate(SETS, flags=[COHORT_FLAG], engine=engine, definitions=response, progress=False)
    )
    assert named == []
    assert result.frame[COHORT_FLAG].astype(object).tolist() == EU
    out, named = _recording(lambda: evaluate_frame(SETS, definitions=response))
    assert named == [] and out[COHORT_FLAG].astype(object).tolist() == EU


def test_a_group_flag_without_the_group_type_mapping_warns(client: Client, flags_frame: pd.DataFrame) -> None:
    # sdk mode cannot tell which group column the flag reads: NA, and the warning names the index
    result, named = _recording(
        lambda: simulate(SETS, flags=[GROUP_FLAG], engine="local", definitions=flags_frame, mode="sdk")
    )
    assert result.frame[GROUP_FLAG].isna().all()
    assert len(named) == 1
    assert (
        "1 flag aggregates by group types" in named[0] and f"'{GROUP_FLAG}': group type index 0" in named[0]
    )
    # evaluate_frame with a group column and no mapping: the answer cannot be right, so it says so
    sets = SETS.assign(**{"group:company": "acme"})
    _, named = _recording(lambda: evaluate_frame(sets, definitions=flags_frame))
    assert len(named) == 1 and f"'{GROUP_FLAG}': group type index 0" in named[0]
    # a client fills the mapping: decided, no warning
    filled, named = _recording(
        lambda: simulate(
            SETS, flags=[GROUP_FLAG], engine="local", definitions=flags_frame, mode="sdk", client=client
        )
    )
    assert named == [] and filled.frame[GROUP_FLAG].notna().all()


def test_async_sql_with_an_async_client_fills_the_cohorts(
    sandbox: Sandbox, flags_frame: pd.DataFrame
) -> None:
    async def main() -> tuple[list[Any], list[str]]:
        async with AsyncClient(
            sandbox.url,
            personal_api_key=sandbox.personal_api_key,
            project_api_key=sandbox.project_api_key,
            progress=False,
        ) as aclient:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                sql = await asimulate(SETS, [COHORT_FLAG], "sql", client=aclient, definitions=flags_frame)
                local = await asimulate(SETS, [COHORT_FLAG], "local", client=aclient, definitions=flags_frame)
            assert local.frame[COHORT_FLAG].astype(object).tolist() == EU
            return sql.frame[COHORT_FLAG].astype(object).tolist(), _incomplete(caught)

    values, named = asyncio.run(main())
    assert values == EU and named == []


def test_a_client_that_cannot_fetch_the_definitions_still_warns(
    sandbox: Sandbox, flags_frame: pd.DataFrame
) -> None:
    with client_for(sandbox, keys="project") as public:  # no personal key: /flags/definitions refuses it
        result, named = _recording(
            lambda: simulate(
                SETS, [COHORT_FLAG], "sql", definitions=flags_frame, client=public, progress=False
            )
        )
    assert result.frame[COHORT_FLAG].isna().all()
    assert len(named) == 1 and "client= could not fetch the definitions" in named[0]


def test_whatif_fills_with_a_client_and_warns_without(client: Client, flags_frame: pd.DataFrame) -> None:
    session, named = _recording(lambda: WhatIf(SETS, flags_frame, client=client))
    assert named == [] and session.base[COHORT_FLAG].astype(object).tolist() == EU
    edited = with_rollout(session.definitions, COHORT_FLAG, 0)
    assert session.run(edited).moves["count"].sum() == sum(EU)  # the EU rows move True -> False

    result, named = _recording(
        lambda: whatif(SETS, flags_frame, with_rollout(flags_frame, "beta-feature", 0))
    )
    assert len(named) == 1 and f"'{COHORT_FLAG}': cohort 1" in named[0]  # once for the base and the edit
    assert result.edited_data[COHORT_FLAG].isna().all()


def test_simulate_dask_fills_with_a_client_and_warns_without(
    client: Client, flags_frame: pd.DataFrame
) -> None:
    dd = pytest.importorskip("dask.dataframe")
    ddf = dd.from_pandas(SETS, npartitions=2)
    from analytics_nb.simulation import simulate_dask

    lazy, named = _recording(lambda: simulate_dask(ddf, [COHORT_FLAG], definitions=flags_frame))
    assert len(named) == 1 and f"'{COHORT_FLAG}': cohort 1" in named[0]
    assert lazy.frame.compute()[COHORT_FLAG].isna().all()
    lazy, named = _recording(
        lambda: simulate_dask(ddf, [COHORT_FLAG], definitions=flags_frame, client=client)
    )
    assert named == [] and lazy.frame.compute()[COHORT_FLAG].astype(object).tolist() == EU
    # an edit given as a flags frame (no cohorts) runs with the filled ones (was: the cohort flag went NA)
    change = lazy.whatif(with_rollout(flags_frame, COHORT_FLAG, 50))
    edited = change.edited.frame.compute()[COHORT_FLAG].astype(object)
    assert edited.notna().all() and 0 < edited.sum() < sum(EU)
    assert not (edited & ~pd.Series(EU, index=edited.index)).any()  # only EU rows can be in
    assert change.moves[["from", "to"]].drop_duplicates().values.tolist() == [[True, False]]


def test_flag_references_name_the_cohort_id_and_its_properties(client: Client) -> None:
    # the cohort id is the filter's value; its key is "id" (was: cohort "id", and no cohort properties)
    refs = flag_references(load_definitions(client.feature_flags.definitions()), COHORT_FLAG)
    assert refs["cohort"] == {"1"} and refs["cohort_person"] == {"country"}


def test_sql_over_parquet_with_group_keys_and_no_mapping_refuses_or_fills(
    client: Client, flags_frame: pd.DataFrame, tmp_path: Any
) -> None:
    from analytics_nb.simulation import SimulationInputError

    path = tmp_path / "sets.parquet"
    SETS.assign(**{"group:company": "acme", "group:company:plan": "enterprise"}).to_parquet(path)
    # was: False ('no_group_type') for every row, although each has a company on the enterprise plan
    with pytest.raises(SimulationInputError, match=r"no group_type_mapping.*client="):
        simulate(path, [GROUP_FLAG], "sql", definitions=flags_frame, progress=False)
    filled = simulate(path, [GROUP_FLAG], "sql", definitions=flags_frame, client=client, progress=False)
    assert filled.frame[GROUP_FLAG].astype(object).eq(True).all()


def test_an_async_client_that_cannot_fetch_says_why_from_the_worker_thread(
    sandbox: Sandbox, flags_frame: pd.DataFrame
) -> None:
    async def main() -> tuple[Any, list[str]]:
        async with AsyncClient(
            sandbox.url, project_api_key=sandbox.project_api_key, progress=False
        ) as public:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                result = await asimulate(SETS, [COHORT_FLAG], "sql", client=public, definitions=flags_frame)
            return result, _incomplete(caught)

    result, named = asyncio.run(main())
    assert result.frame[COHORT_FLAG].isna().all()
    assert len(named) == 1 and "client= could not fetch the definitions" in named[0]
    # the reason is forgotten once said: the next run without a client does not repeat it
    _, again = _recording(lambda: simulate(SETS, [COHORT_FLAG], "local", definitions=flags_frame))
    assert len(again) == 1 and "could not fetch" not in again[0]


def test_whatif_over_the_callers_evaluator_asks_the_evaluator(
    client: Client, flags_frame: pd.DataFrame
) -> None:
    from analytics_nb.flags import FrameEvaluator

    response = client.feature_flags.definitions()
    # the evaluator holds the cohorts: a flags frame as the definitions runs with them, nothing to say
    knows = FrameEvaluator(SETS, definitions=response)
    assert not knows.missing_references() and not knows.missing_references(flags_frame)
    session, named = _recording(lambda: WhatIf(knows, flags_frame, flags=[COHORT_FLAG]))
    assert named == [] and session.base[COHORT_FLAG].astype(object).tolist() == EU
    # built on the frame, it lacks them whatever definitions the session is given
    lacks = FrameEvaluator(SETS, definitions=flags_frame)
    assert lacks.missing_references().cohorts[COHORT_FLAG] == ("1",)
    session, named = _recording(lambda: WhatIf(lacks, response, flags=[COHORT_FLAG]))
    assert len(named) == 1 and f"'{COHORT_FLAG}': cohort 1" in named[0]
    assert session.base[COHORT_FLAG].isna().all()

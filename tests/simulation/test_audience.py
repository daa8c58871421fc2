"""`client.audience(flag)` / `aaudience`: the project's persons through the one simulation door (issue 36).

Against the sandbox: the audience is the local engine's answer over `client.persons` (one row per distinct
id), equals the service's `/flags` answer for those ids, prints its plan before a multi-page run, refuses an
unknown key before reading persons, and leaves a flag scoped to the other runtime NA with a warning
(`rust/feature-flags/src/handler/flags.rs`, `collect_excluded_by_runtime`).
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator

import pandas as pd
import pytest
from tests._clients import client_for

from analytics_nb import AsyncClient, Client, simulate
from analytics_nb.sandbox import Sandbox, start
from analytics_nb.simulation import FilteredFlagsWarning, SimulationInputError, aaudience, audience


@pytest.fixture(scope="module")
def sb() -> Iterator[Sandbox]:
    with start(seed="demo", profile="spec") as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def client(sb: Sandbox) -> Iterator[Client]:
    with client_for(sb, ids=True, max_retry_wait=1.0) as c:
        yield c


def test_audience_is_every_distinct_id_and_equals_the_service(client: Client) -> None:
    result = client.audience("new-checkout")
    frame = result.frame
    assert len(frame) == 3000 and frame["distinct_id"].is_unique and "person_id" in frame.columns
    sample = frame.iloc[::20][["distinct_id"]].reset_index(drop=True)
    props = frame.iloc[::20].drop(columns=["new-checkout", "error"]).reset_index(drop=True)
    remote = simulate(props, "new-checkout", engine="remote", client=client).frame
    assert len(sample) == 150
    pd.testing.assert_series_equal(
        frame.iloc[::20]["new-checkout"].astype(object).reset_index(drop=True),
        remote["new-checkout"].astype(object),
    )


def test_audience_equals_simulate_over_the_persons_frame(client: Client) -> None:
    defs = client.feature_flags.definitions()
    ours = audience(["beta-feature", "paid-upsell"], client=client).frame
    theirs = simulate(
        client.persons(flags=defs), ["beta-feature", "paid-upsell"], engine="local", client=client
    )
    for key in ("beta-feature", "paid-upsell"):
        assert ours[key].astype(object).tolist() == theirs.frame[key].astype(object).tolist()


def test_audience_prints_its_plan_before_a_long_run(
    client: Client, capsys: pytest.CaptureFixture[str]
) -> None:
    client.audience("beta-feature", page_size=1000)
    printed = capsys.readouterr().out
    assert "audience plan" in printed and "3,000 distinct ids in 3 pages" in printed
    client.audience("beta-feature")  # one page: nothing printed
    assert "audience plan" not in capsys.readouterr().out


def test_an_unknown_flag_is_refused_before_persons_are_read(sb: Sandbox, client: Client) -> None:
    sb.clear_requests()
    with pytest.raises(SimulationInputError, match="no flag 'no-such-flag'"):
        client.audience("no-such-flag")
    assert not sb.requests()["path"].str.contains("/query/").any()


def test_a_flag_for_the_other_runtime_is_na_with_a_warning(client: Client) -> None:
    defs = copy.deepcopy(client.feature_flags.definitions().model_dump(by_alias=True, mode="json"))
    for f in defs["flags"]:
        if f["key"] == "beta-feature":
            f["evaluation_runtime"] = "client"
    with pytest.warns(FilteredFlagsWarning, match="beta-feature"):
        server = client.audience("beta-feature", definitions=defs)
    assert server.frame["beta-feature"].isna().all()
    browsers = client.audience("beta-feature", definitions=defs, runtime="client")
    assert browsers.frame["beta-feature"].notna().all()


def test_the_async_forms_answer_the_same(sb: Sandbox, client: Client) -> None:
    sync = client.audience("new-checkout").frame["new-checkout"].astype(object).tolist()

    async def run() -> tuple[list[object], list[object]]:
        async with AsyncClient(sb.url, personal_api_key=sb.personal_api_key, progress=False) as ac:
            method = await ac.audience("new-checkout")
            twin = await aaudience("new-checkout", client=ac, run="async")
        return (
            method.frame["new-checkout"].astype(object).tolist(),
            twin.frame["new-checkout"].astype(object).tolist(),
        )

    method, twin = asyncio.run(run())
    assert method == sync and twin == sync


# -- groups: HogQL's `groups` table (posthog/hogql/database/schema/groups.py) -------------------------------


def test_groups_frame_reads_each_group_with_its_properties(sb: Sandbox, client: Client) -> None:
    frame = client.groups("company")
    assert len(frame) == 40 and frame["distinct_id"].is_unique
    assert frame["distinct_id"].tolist() == frame["group:company"].tolist()
    assert any(c.startswith("group:company:") for c in frame.columns)
    direct = client.query("SELECT key, properties.industry FROM groups WHERE index = 0 ORDER BY key")
    assert frame["group:company:industry"].tolist() == direct["industry"].tolist()
    assert client.groups(0, ["industry"], page_size=7).equals(
        frame[["distinct_id", "group:company", "group:company:industry"]]
    )


def test_a_group_flag_from_the_projects_groups_equals_the_service(client: Client) -> None:
    groups = client.groups("company")
    local = simulate(groups, "company-dashboard", engine="local", client=client).frame
    remote = simulate(groups, "company-dashboard", engine="remote", client=client).frame
    assert local["company-dashboard"].notna().all()
    assert (
        local["company-dashboard"].astype(object).tolist()
        == remote["company-dashboard"].astype(object).tolist()
    )


def test_groups_refuses_an_unknown_type(client: Client) -> None:
    with pytest.raises(ValueError, match=r"no group type 'team'.*'company'"):
        client.groups("team")
    with pytest.raises(ValueError, match="0 to 4"):
        client.groups(7)

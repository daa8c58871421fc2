"""Remote and both-mode simulation against the demo sandbox over real HTTP (faults from the sandbox)."""

from __future__ import annotations

import asyncio

import pandas as pd
import pytest

from _flags import condition, flag, prop
from analytics_nb import AsyncClient, Client
from analytics_nb.sandbox import Sandbox
from analytics_nb.simulation import FailedFlagsWarning, SimulationInputError, asimulate, grid, simulate
from analytics_nb.simulation._output import flag_columns


@pytest.fixture(scope="module")
def fresh() -> pd.DataFrame:
    """Property sets of ids the sandbox has never stored, covering the seeded flags' properties."""
    df = grid(
        {
            "country": ["US", "DE", "FR", "JP"],
            "plan": ["free", "pro", "enterprise"],
            "email": ["a@example.com", "qa-1@acme.io", "b@test.dev"],
        },
        ids_per_cell=2,
        seed=11,
    )
    n = len(df)
    df["$os"] = (["iOS", "Android"] * n)[:n]
    df["app_version"] = (["2.4.0", "1.0.0", "3.1.2"] * n)[:n]
    df["signup_date"] = (["2023-05-01", "2026-11-01"] * n)[:n]
    df["sessions_count"] = [i * 37 % 2000 for i in range(n)]
    df["group:company"] = [f"sim-co-{i % 5}" if i % 3 else None for i in range(n)]
    df["group:company:plan"] = [("enterprise" if i % 2 else "free") if i % 3 else None for i in range(n)]
    df["group:company:employees"] = [(i * 13) % 400 if i % 3 else None for i in range(n)]
    return df


def _decides(sb: Sandbox) -> int:
    log = sb.requests()
    return int(log["path"].isin(["/decide/", "/flags/"]).sum())  # not /flags/definitions


def test_both_on_a_grid_agree_fully_for_ids_without_stored_properties(
    client: Client, fresh: pd.DataFrame
) -> None:
    # these ids have no stored persons, so a missing column is "not set" for the service too
    result = simulate(fresh, engine="both", client=client, missing_columns="not_set")
    assert result.agreement is not None and result.differences is not None
    assert len(result.agreement) >= 12
    assert result.agreement["share"].eq(1.0).all(), result.differences.head(20).to_string()
    assert result.differences.empty
    assert result.frame.index.equals(fresh.index) and result.frame["error"].isna().all()
    keys = flag_columns(result.frame)
    pd.testing.assert_frame_equal(result.remote[keys], result.local[keys], check_dtype=False)
    payload_cols = [c for c in result.frame.columns if c.endswith(":payload")]
    assert payload_cols and result.remote[payload_cols].astype(object).equals(
        result.local[payload_cols].astype(object)
    )
    assert "sunset-banner" in keys and not result.frame["sunset-banner"].any()  # inactive: off
    assert str(result.frame["beta-feature"].dtype) == "boolean"
    assert set(result.frame["new-checkout"].dropna()) <= {"control", "test", False}


def test_remote_grid_with_flag_subset_and_reasons(
    sandbox: Sandbox, client: Client, fresh: pd.DataFrame
) -> None:
    sandbox.clear_requests()
    result = client.simulate(fresh, ["new-checkout", "beta-feature"], reasons=True, concurrency=4)
    assert list(result.outputs.columns[:3]) == ["distinct_id", "new-checkout", "beta-feature"]
    assert result.input_columns and list(result.frame.columns[1 : 1 + len(result.input_columns)]) == list(
        result.input_columns
    )
    assert (
        "new-checkout:reason" in result.frame.columns
        and "new-checkout:condition_index" in result.frame.columns
    )
    log = sandbox.requests()
    assert (log["path"] == "/flags/").sum() == len(fresh)
    us = (fresh["country"] == "US").to_numpy()
    assert result.frame.loc[us, "new-checkout"].isin(["control", "test"]).all()
    assert result.frame.loc[~us & (fresh["country"] != "GB").to_numpy(), "new-checkout"].eq(False).all()
    s = result.summary()
    assert s.groupby("flag")["count"].sum().eq(len(fresh)).all()


def test_stored_person_properties_show_up_as_a_difference_with_the_cause(
    sandbox: Sandbox, client: Client
) -> None:
    sandbox.set_person("sim-stored-1", {"email": "someone@example.com"})
    rows = [
        {"distinct_id": "sim-stored-1", "plan": "free", "country": "FR"},
        {"distinct_id": "sim-fresh-1", "plan": "free", "country": "FR"},
    ]
    # the analyst says a missing column means "not set": the stored person then shows up as a difference
    result = simulate(
        rows, ["beta-feature", "new-checkout"], engine="both", client=client, missing_columns="not_set"
    )
    diff = result.differences
    assert diff is not None and len(diff) == 1
    row = diff.iloc[0]
    assert (row["distinct_id"], row["flag"], row["local"], row["remote"]) == (
        "sim-stored-1",
        "beta-feature",
        False,
        True,
    )
    assert row["cause"] == "stored person properties" and "email" in row["detail"]
    agreement = result.agreement.set_index("flag")
    assert agreement.loc["beta-feature", "share"] == 0.5 and agreement.loc["new-checkout", "share"] == 1.0


def test_errors_while_computing_flags_mark_rows_and_keep_computed_flags(
    sandbox: Sandbox, client: Client, fresh: pd.DataFrame
) -> None:
    sandbox.set_flag_failures(["new-checkout"])
    try:
        with pytest.warns(FailedFlagsWarning, match="new-checkout: 12"):
            result = simulate(fresh.head(12), engine="remote", client=client)
    finally:
        sandbox.set_flag_failures([])
    frame = result.frame
    assert frame["error"].str.contains("errorsWhileComputingFlags").all()
    assert frame["error"].str.contains("new-checkout").all()
    assert frame["new-checkout"].isna().all()
    assert frame["beta-feature"].notna().all() and frame["gradual-rollout"].notna().all()
    assert result.summary().set_index("flag").loc["new-checkout", "unknown"] == 12


def test_injected_503s_still_give_every_row(sandbox: Sandbox, client: Client, fresh: pd.DataFrame) -> None:
    clean = simulate(fresh, engine="remote", client=client).frame
    sandbox.clear_requests()
    fault = sandbox.faults.add(path="/flags*", status=503, rate=0.3)
    try:
        result = simulate(fresh, engine="remote", client=client, concurrency=8)
    finally:
        sandbox.faults.remove(fault)
    log = sandbox.requests()
    assert (log["status"] == 503).sum() > 0
    frame = result.frame
    assert frame.index.equals(fresh.index) and frame["distinct_id"].tolist() == fresh["distinct_id"].tolist()
    ok = frame["error"].isna().to_numpy()
    assert ok.sum() >= len(fresh) - 2  # five 503s in a row for one row is very unlikely
    keys = flag_columns(frame)
    pd.testing.assert_frame_equal(frame.loc[ok, keys], clean.loc[ok, keys])


def test_one_failing_row_never_loses_the_others(
    sandbox: Sandbox, client: Client, fresh: pd.DataFrame
) -> None:
    fault = sandbox.faults.add(path="/flags*", status=500, rate=0.5)  # 500 is not retried
    try:
        result = simulate(fresh, engine="remote", client=client)
    finally:
        sandbox.faults.remove(fault)
    frame = result.frame
    failed = frame["error"].notna()
    assert 0 < failed.sum() < len(frame)
    assert frame.loc[failed, "error"].str.contains("500").all()
    assert frame.loc[failed, "beta-feature"].isna().all()
    assert frame.loc[~failed, "beta-feature"].notna().all()
    assert len(result.errors) == failed.sum()


def test_bad_input_errors_before_any_decide(sandbox: Sandbox, client: Client) -> None:
    sandbox.clear_requests()
    bad_inputs = [
        [{"distinct_id": "a"}, {"distinct_id": "a"}],
        [{"user": "a"}],
        [{"distinct_id": "a", "tags": ["x", "y"]}],
    ]
    for bad in bad_inputs:
        with pytest.raises(SimulationInputError):
            simulate(bad, engine="both", client=client)
    with pytest.raises(SimulationInputError, match="'beta-featur'"):
        simulate([{"distinct_id": "a"}], ["beta-featur"], engine="remote", client=client)
    assert _decides(sandbox) == 0


def test_unknown_flag_without_definitions_stops_after_the_first_decide(sandbox: Sandbox) -> None:
    with Client(sandbox.url, project_api_key=sandbox.project_api_key, progress=False) as public:
        sandbox.clear_requests()
        with pytest.raises(SimulationInputError, match="'nope'"):
            simulate([{"distinct_id": f"x{i}"} for i in range(20)], ["nope"], client=public)
        assert _decides(sandbox) == 1
        ok = simulate([{"distinct_id": "x1"}], ["beta-feature"], client=public)
        assert list(ok.frame.columns) == ["distinct_id", "beta-feature", "beta-feature:payload", "error"]


def test_async_client(sandbox: Sandbox, fresh: pd.DataFrame) -> None:
    async def main() -> pd.DataFrame:
        async with AsyncClient(
            sandbox.url,
            personal_api_key=sandbox.personal_api_key,
            project_api_key=sandbox.project_api_key,
            project_id=sandbox.project_id,
            progress=False,
        ) as aclient:
            direct = await asimulate(fresh.head(10), engine="both", client=aclient, missing_columns="not_set")
            via_client = await aclient.simulate(fresh.head(10), ["gradual-rollout"])
            assert via_client.frame["gradual-rollout"].tolist() == direct.frame["gradual-rollout"].tolist()
            return direct.agreement

    agreement = asyncio.run(main())
    assert agreement["share"].eq(1.0).all()


def test_geoip_difference_when_an_ip_is_given(empty_sandbox: Sandbox) -> None:
    import httpx

    sb = empty_sandbox
    created = httpx.post(
        f"{sb.url}/api/projects/{sb.project_id}/feature_flags/",
        headers={"Authorization": f"Bearer {sb.personal_api_key}"},
        json=flag("geo-us", condition(prop("$geoip_country_code", "US")), active=None),
    )
    assert created.status_code == 201, created.text
    rows = [{"distinct_id": "geo-1", "ip": "8.8.8.8"}, {"distinct_id": "geo-2"}]
    with Client(
        sb.url,
        personal_api_key=sb.personal_api_key,
        project_api_key=sb.project_api_key,
        project_id=sb.project_id,
        progress=False,
    ) as c:
        # "not set" for the absent $geoip_country_code column, so the GeoIP difference shows with its cause
        result = simulate(rows, engine="both", client=c, missing_columns="not_set")
    assert result.remote["geo-us"].tolist() == [True, False]
    assert result.local["geo-us"].tolist() == [False, False]
    diff = result.differences
    assert diff["distinct_id"].tolist() == ["geo-1"]
    assert diff["cause"].tolist() == ["GeoIP (ip given)"] and "8.8.8.8" in diff["detail"].iloc[0]


def test_sdk_mode_differences_are_inconclusive(client: Client) -> None:
    rows = [
        {"distinct_id": "sdk-1", "country": "US"},
        {"distinct_id": "sdk-2", "plan": "pro", "country": "US"},
    ]
    result = simulate(rows, ["paid-upsell", "gradual-rollout"], engine="both", client=client, mode="sdk")
    assert result.local["paid-upsell"].isna().any()  # plan/email not given: the SDK cannot decide locally
    diff = result.differences
    assert len(diff) >= 1 and set(diff["cause"]) == {"inconclusive (sdk mode)"}
    assert set(diff["flag"]) == {"paid-upsell"}
    assert result.agreement.set_index("flag").loc["gradual-rollout", "share"] == 1.0


def test_flags_frame_definitions_are_completed_with_cohorts(client: Client, fresh: pd.DataFrame) -> None:
    flags_df = client.feature_flags.frame()
    from_frame = simulate(fresh, engine="local", definitions=flags_df, client=client)
    fetched = simulate(fresh, engine="local", client=client)
    assert sorted(from_frame.flags) == sorted(fetched.flags)
    keys = fetched.flags
    pd.testing.assert_frame_equal(from_frame.frame[keys], fetched.frame[keys])
    assert from_frame.frame["eu-cohort-promo"].notna().all()  # the cohort came from local_evaluation


def test_injected_resets_and_502s_are_retried_and_keep_every_row(
    sandbox: Sandbox, client: Client, fresh: pd.DataFrame
) -> None:
    clean = simulate(fresh, engine="remote", client=client).frame
    before = client._core.retries_done
    resets = sandbox.faults.add(path="/flags*", reset=True, rate=0.2)
    try:
        result = simulate(fresh, engine="remote", client=client, concurrency=3)
    finally:
        sandbox.faults.remove(resets)
    assert client._core.retries_done > before
    mid = client._core.retries_done
    sandbox.clear_requests()
    bad_gateway = sandbox.faults.add(path="/flags*", status=502, rate=0.2)
    try:
        again = simulate(fresh, engine="remote", client=client, concurrency=3)
    finally:
        sandbox.faults.remove(bad_gateway)
    assert (sandbox.requests()["status"] == 502).sum() > 0 and client._core.retries_done > mid
    assert again.frame["error"].isna().sum() >= len(fresh) - 2
    frame = result.frame
    ok = frame["error"].isna().to_numpy()
    assert ok.sum() >= len(fresh) - 2
    keys = flag_columns(frame)
    pd.testing.assert_frame_equal(frame.loc[ok, keys], clean.loc[ok, keys])


def test_rows_are_marked_when_the_host_is_gone_without_leaking_keys() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    key = "phc_" + "k" * 40
    with Client(
        f"http://127.0.0.1:{port}", project_api_key=key, progress=False, max_retries=1, retry_backoff=0.01
    ) as dead:
        frame = simulate(pd.DataFrame({"distinct_id": ["a", "b"]}), client=dead).frame
    assert frame["error"].str.contains("could not complete the request").all()
    assert not frame["error"].str.contains(key).any()


def test_a_flag_subset_is_asked_for_by_key_and_matches_the_full_answer(
    sandbox: Sandbox, client: Client, fresh: pd.DataFrame
) -> None:
    full = simulate(fresh, engine="remote", client=client).frame
    subset = ["beta-feature", "pricing-page-experiment", "company-dashboard"]
    assert set(subset) <= set(flag_columns(full))
    sandbox.clear_requests()
    part = simulate(fresh, subset, engine="remote", client=client).frame
    bodies = sandbox.requests()["body"]
    asked = bodies.str.contains('"flag_keys_to_evaluate":["beta-feature"', regex=False)
    assert asked.sum() >= len(fresh) - 1  # all but the first row (which checks the keys against every flag)
    assert flag_columns(part) == subset
    pd.testing.assert_frame_equal(part[subset], full[subset])


def test_asimulate_with_a_sync_client_runs_inside_a_running_loop(client: Client, fresh: pd.DataFrame) -> None:
    """Awaiting `asimulate` with a sync Client (as a notebook cell's `await` might) gives the sync result."""
    expected = simulate(fresh, engine="remote", client=client).frame

    async def cell() -> pd.DataFrame:
        return (await asimulate(fresh, engine="remote", client=client)).frame

    pd.testing.assert_frame_equal(asyncio.run(cell()), expected)


def test_the_clients_simulate_takes_output_like_the_function(
    sandbox: Sandbox, client: Client, fresh: pd.DataFrame
) -> None:
    """Client.simulate / AsyncClient.simulate pass ``output=`` through (they lacked it): Polars in gives
    Polars out, ``output=`` picks another family, the values are those of the pandas run."""
    pl = pytest.importorskip("polars", reason="the 'polars' extra is not installed")
    pa = pytest.importorskip("pyarrow", reason="the 'arrow' extra is not installed")
    sets = fresh.head(12).drop(columns=["group:company", "group:company:plan", "group:company:employees"])
    want = client.simulate(sets, ["beta-feature"], engine="local")
    polars_sets = pl.from_pandas(sets)
    assert isinstance(client.simulate(polars_sets, ["beta-feature"], engine="local").data, pl.DataFrame)
    got = client.simulate(polars_sets, ["beta-feature"], engine="local", output="arrow")
    assert isinstance(got.data, pa.Table) and got.output == "arrow"
    assert got.data.column("beta-feature").to_pylist() == [
        None if v is pd.NA else bool(v) for v in want.frame["beta-feature"]
    ]

    async def main() -> object:
        async with AsyncClient(
            sandbox.url,
            personal_api_key=sandbox.personal_api_key,
            project_api_key=sandbox.project_api_key,
            project_id=sandbox.project_id,
            progress=False,
        ) as aclient:
            result = await aclient.simulate(sets, ["beta-feature"], engine="local", output="polars")
            return result.data

    data = asyncio.run(main())
    assert isinstance(data, pl.DataFrame)
    assert data["beta-feature"].to_list() == got.data.column("beta-feature").to_pylist()

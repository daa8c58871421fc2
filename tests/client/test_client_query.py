"""`client.query` and `client.persons` over HTTP against the sandbox: typed frames, keyset paging past the
row cap, errors that name the fix, the project secret key, and the persons frame through the simulation
door (local engine == the service for every distinct id)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import httpx
import pandas as pd
import pytest
from tests._clients import client_for

from analytics_nb import Client, simulate
from analytics_nb.errors import ServerError, ValidationError
from analytics_nb.sandbox import Sandbox, start


@pytest.fixture(scope="module")
def sb() -> Iterator[Sandbox]:
    with start(seed="demo", profile="spec") as sandbox:
        # persons with several distinct ids, merged the service's way by captured events
        events = []
        for i in range(40):
            anon, user = f"anon-q{i:02d}", f"member-q{i:02d}"
            plan = ("free", "pro", "enterprise")[i % 3]
            events += [
                {"event": "view", "distinct_id": anon, "properties": {"$set": {"plan": plan, "n": i}}},
                {
                    "event": "$identify",
                    "distinct_id": user,
                    "properties": {"$anon_distinct_id": anon, "$set": {"email": f"m{i}@acme.io"}},
                },
            ]
            if i % 4 == 0:
                events.append(
                    {"event": "$create_alias", "distinct_id": user, "properties": {"alias": f"m{i}@acme.io"}}
                )
        r = httpx.post(f"{sandbox.url}/batch/", json={"api_key": sandbox.project_api_key, "batch": events})
        assert r.status_code == 200
        yield sandbox


@pytest.fixture(scope="module")
def client(sb: Sandbox) -> Iterator[Client]:
    with client_for(sb, ids=True, max_retry_wait=1.0) as c:
        yield c


def test_query_returns_a_typed_frame(client: Client) -> None:
    frame = client.query(
        "SELECT pdi.distinct_id, p.is_identified, p.properties.plan FROM person_distinct_ids pdi "
        "JOIN persons p ON pdi.person_id = p.id WHERE pdi.distinct_id = 'member-q01'"
    )
    assert frame.columns.tolist() == ["distinct_id", "is_identified", "plan"]
    assert str(frame["distinct_id"].dtype) == "string" and str(frame["is_identified"].dtype) == "boolean"
    assert frame.iloc[0].tolist() == ["member-q01", True, "pro"]


def test_query_pages_past_the_row_cap_by_keyset(sb: Sandbox, client: Client) -> None:
    # the cap (250 here) is below page_size (50,000) and a LIMIT query does not say it was cut
    # (hasMore null): the pages still follow until one comes back shorter than a full one
    sb.set_query_row_limits(max_rows=250)
    sb.clear_requests()
    try:
        everything = client.query(
            "SELECT distinct_id, person_id FROM person_distinct_ids", page_by="distinct_id"
        )
        with pytest.warns(UserWarning, match="page_by="):
            cut = client.query("SELECT distinct_id FROM person_distinct_ids")  # no LIMIT: 100 and hasMore
    finally:
        sb.set_query_row_limits()
    log = sb.requests()
    queries = log[log["path"].str.endswith("/query/")]
    total = 3000 + 40 * 2 + 10  # demo persons, 40 anon + member ids, 10 aliases
    assert len(everything) == total and everything["distinct_id"].is_unique
    assert everything["distinct_id"].tolist() == sorted(everything["distinct_id"].tolist())
    assert len(cut) == 100
    assert len(queries) >= total // 250 + 1  # one probe and a page per 250 rows; no OFFSET in any of them
    assert not queries["body"].astype(str).str.contains("OFFSET").any()


def test_a_bad_query_is_a_short_error_with_the_fix(client: Client) -> None:
    with pytest.raises(ValidationError) as info:
        client.query("SELEC id FROM persons")
    message = str(info.value)
    assert "Syntax error" in message and "Fix the query text" in message and len(message) < 400


def test_a_timeout_names_the_fix(sb: Sandbox, client: Client) -> None:
    fault = sb.faults.add(path="/api/projects/*/query*", kind="query_timeout")
    try:
        with pytest.raises(ServerError, match="narrow it"):
            client.query("SELECT id FROM persons")
    finally:
        sb.faults.remove(fault)


def test_a_project_secret_key_is_enough(sb: Sandbox) -> None:
    secret = sb.create_secret_key(scopes=["query:read"])
    with Client(sb.url, secret_api_key=secret, project_id=sb.project_id) as c:
        frame = c.query("SELECT distinct_id FROM person_distinct_ids WHERE distinct_id = 'member-q02'")
    assert frame["distinct_id"].tolist() == ["member-q02"]


def test_persons_one_row_per_distinct_id_with_the_flags_properties(client: Client) -> None:
    definitions = client.feature_flags.definitions()
    frame = client.persons(flags=definitions)
    assert frame.columns[:2].tolist() == ["person_id", "distinct_id"] and "plan" in frame.columns
    four = frame[frame["distinct_id"].isin(["anon-q04", "member-q04", "m4@acme.io"])]
    assert len(four) == 3 and four["person_id"].nunique() == 1
    assert four["plan"].tolist() == ["pro"] * 3 and four["email"].tolist() == ["m4@acme.io"] * 3


def test_persons_identified_gives_one_row_per_person(client: Client) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = client.persons(["plan", "n"], distinct_ids="identified")
    ours = frame[frame["distinct_id"].str.contains("q0")]
    assert frame["person_id"].is_unique
    # anon-qNN and member-qNN are both not UUIDs: the smallest is taken, and the warning counts them
    assert any("40 persons have several distinct ids" in str(w.message) for w in caught)
    assert set(ours["distinct_id"]) >= {"anon-q01"}
    assert ours.set_index("distinct_id").loc["anon-q01", "n"] == 1


def test_persons_through_the_simulation_door_local_equals_the_service(client: Client) -> None:
    frame = client.persons(flags=client.feature_flags.definitions())
    ours = frame[frame["distinct_id"].str.contains("q") | frame.index.isin(range(0, 3000, 25))]
    ours = ours.reset_index(drop=True)
    local = simulate(ours, engine="local", client=client).frame
    remote = simulate(ours, engine="remote", client=client).frame
    flags = [c for c in local.columns if c in remote.columns and c not in ours.columns and c != "error"]
    assert len(ours) > 150 and len(flags) > 5
    pd.testing.assert_frame_equal(
        local[flags].astype(object).reset_index(drop=True),
        remote[flags].astype(object).reset_index(drop=True),
    )


def test_persons_refuses_bad_arguments(client: Client) -> None:
    with pytest.raises(ValueError, match="distinct_ids"):
        client.persons(distinct_ids="first")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="list of property keys"):
        client.persons("plan")  # type: ignore[arg-type]


def test_persons_reports_its_plan(client: Client) -> None:
    frame = client.persons(["plan"], page_size=1000)
    plan = frame.attrs["plan"]
    assert plan["rows"] == len(frame) and plan["pages"] == -(-len(frame) // 1000)
    assert plan["requests"] == plan["pages"] + 1 and plan["min_minutes_at_limits"] == 0.0


def test_plan_counts_the_minutes_the_limits_impose() -> None:
    from analytics_nb.client._resources._query import describe_plan, plan

    assert plan(1_000_000, 50_000)["pages"] == 20
    assert plan(50_000 * 480, 50_000)["min_minutes_at_limits"] == 1.0  # 480 pages: two minutes of 240
    assert plan(50_000 * 2401, 50_000)["min_minutes_at_limits"] == 60.0  # past 2,400 an hour
    assert "20 pages" in describe_plan(plan(1_000_000, 50_000))


def test_the_rate_limit_warning_header_slows_the_client(sb: Sandbox, client: Client) -> None:
    import time

    from analytics_nb.client._resources._query import QueryRateLimitWarning

    fault = sb.faults.add(path="/api/projects/*/query*", kind="rate_limit_warning")
    try:
        started = time.perf_counter()
        with pytest.warns(QueryRateLimitWarning, match="X-PostHog-Rate-Limit-Warning"):
            client.query("SELECT id FROM persons LIMIT 1")
        assert time.perf_counter() - started >= 0.9  # the pause
    finally:
        sb.faults.remove(fault)
    started = time.perf_counter()
    client.query("SELECT id FROM persons LIMIT 1")
    assert time.perf_counter() - started < 0.9


def test_at_most_three_queries_in_flight(sb: Sandbox) -> None:
    import asyncio
    import time

    from analytics_nb import AsyncClient

    fault = sb.faults.add(path="/api/projects/*/query*", delay=0.4)

    async def run() -> float:
        async with AsyncClient(sb.url, personal_api_key=sb.personal_api_key, progress=False) as c:
            started = time.perf_counter()
            await asyncio.gather(*(c.query("SELECT id FROM persons LIMIT 1") for _ in range(6)))
            return time.perf_counter() - started

    try:
        elapsed = asyncio.run(run())
    finally:
        sb.faults.remove(fault)
    assert elapsed >= 0.8  # two waves of three, not one wave of six


# -- async queries (posthog/api/query.py create / retrieve; posthog/api/test/test_query.py
#    test_full_hogql_query_async, TestQueryRetrieve) ----------------------------------------------------


def _query_log(sb: Sandbox) -> pd.DataFrame:
    log = sb.requests()
    return log[log["path"].str.contains("/query/")]


def test_run_async_submits_and_polls_for_the_same_answer(sb: Sandbox, client: Client) -> None:
    text = "SELECT distinct_id, person_id FROM person_distinct_ids WHERE distinct_id LIKE 'member-q1%'"
    direct = client.query(text, run="sync")
    sb.clear_requests()
    answered = client.query(text, run="async")
    log = _query_log(sb)
    assert (
        answered.sort_values("distinct_id")
        .reset_index(drop=True)
        .equals(direct.sort_values("distinct_id").reset_index(drop=True))
    )
    assert (log["method"] == "GET").sum() >= 1  # polled GET .../query/:id/
    assert (log["method"] == "POST").sum() == 1


def test_a_slow_query_is_a_timeout_sync_and_answered_by_auto(sb: Sandbox, client: Client) -> None:
    fault = sb.faults.add(path="/api/projects/*/query*", kind="slow_query")
    try:
        with pytest.raises(ServerError, match="narrow it"):
            client.query("SELECT distinct_id FROM person_distinct_ids LIMIT 3", run="sync")
        sb.clear_requests()
        frame = client.query("SELECT distinct_id FROM person_distinct_ids ORDER BY distinct_id LIMIT 3")
        paged = client.persons(["plan"], run="auto")
    finally:
        sb.faults.remove(fault)
    assert len(frame) == 3
    polls = (_query_log(sb)["method"] == "GET").sum()
    assert polls >= 2  # the slow async query ran for two polls before it completed
    assert paged.attrs["plan"]["async"] is True and paged.attrs["plan"]["polls"] >= 2
    assert len(paged) == 3000 + 40 * 2 + 10


def test_persons_async_equals_sync(client: Client) -> None:
    sync = client.persons(["plan", "email"], run="sync")
    run_async = client.persons(["plan", "email"], run="async")
    assert run_async.attrs["plan"]["async"] is True and sync.attrs["plan"]["async"] is False
    pd.testing.assert_frame_equal(sync, run_async)


def test_a_failed_async_query_names_the_services_message(client: Client) -> None:
    with pytest.raises(ValidationError) as info:
        client.query("SELEC id FROM persons", run="async")
    assert "async query" in str(info.value) and "Syntax error" in str(info.value)


def test_bad_run_is_refused(client: Client) -> None:
    with pytest.raises(ValueError, match="run must be"):
        client.query("SELECT id FROM persons", run="later")  # type: ignore[arg-type]


def test_the_poll_bar_follows_query_progress() -> None:
    import io

    from tqdm import tqdm

    from analytics_nb.client._resources._query import _show_progress

    bar = tqdm(total=None, file=io.StringIO(), disable=False)
    _show_progress(bar, {"rows_read": 40, "estimated_rows_total": 100})
    assert (bar.n, bar.total) == (40, 100)
    _show_progress(bar, {"rows_read": 90, "estimated_rows_total": 100})
    assert bar.n == 90
    bar.close()

"""The sync client inside a running event loop (as in a Jupyter cell), AsyncClient, Client.sandbox(),
the rate limiter and progress bars."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from _clients import client_for
from analytics_nb import AsyncClient, Client
from analytics_nb.client._core import RateLimiter
from analytics_nb.models import Playlist


def test_sync_client_works_inside_a_running_event_loop(sandbox: Any) -> None:
    async def cell() -> tuple[int, bool, int]:
        # A notebook cell: a loop is running in this thread, and the sync client must still work.
        running = asyncio.get_running_loop().is_running()
        with client_for(sandbox) as c:
            n = len(c.playlists.list())
            flags = c.decide("user-7").feature_flags
        return n, running, len(flags)

    n, running, nflags = asyncio.run(cell())
    assert running and n >= 60 and nflags >= 12


def test_the_same_sync_client_is_usable_from_several_loops_and_threads(client: Client) -> None:
    expected = [p.id for p in client.playlists.list()]

    async def cell() -> list[Any]:
        return [p.id for p in client.playlists.list()]

    assert asyncio.run(cell()) == expected
    results: list[Any] = []
    threads = [
        threading.Thread(target=lambda: results.append([p.id for p in client.playlists.list()]))
        for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [expected] * 3


def test_sync_iter_can_stop_early_and_the_client_keeps_working(client: Client) -> None:
    iterator = client.playlists.iter(page_size=5)
    first = [next(iterator) for _ in range(7)]
    iterator.close()  # type: ignore[attr-defined]
    assert all(isinstance(p, Playlist) for p in first)
    assert [p.id for p in first] == [p.id for p in client.playlists.list(max_items=7)]


def test_async_client_has_the_same_surface(sandbox: Any) -> None:
    async def main() -> tuple[list[Any], list[Any], Any, int]:
        async with AsyncClient(sandbox.url, personal_api_key=sandbox.personal_api_key, progress=False) as ac:
            listed = [p.id for p in await ac.playlists.list(page_size=20)]
            iterated = [p.id async for p in ac.playlists.iter(page_size=20)]
            decided = await ac.decide("user-9")
            frame = await ac.playlists.frame()
            return listed, iterated, decided, len(frame)

    listed, iterated, decided, rows = asyncio.run(main())
    assert listed == iterated and len(listed) == rows
    assert decided.feature_flags


def test_client_sandbox_owns_its_server_and_stops_it_on_close() -> None:
    client = Client.sandbox(seed="empty", max_retries=0, progress=False)
    url = client.host
    assert client.playlists.list() == []
    created = client.playlists.create("collection", "embedded")
    assert client.playlists.get(created.short_id).name == "embedded"
    client.close()
    import httpx

    with pytest.raises(httpx.TransportError):
        httpx.get(url + "/api/projects/", timeout=2)


def test_rate_limiter_keeps_each_bucket_under_its_window() -> None:
    limiter = RateLimiter({"playlists": ((3, 0.4),), "default": ((5, 0.4),)})

    async def burst(bucket: str, n: int) -> list[float]:
        stamps = []
        for _ in range(n):
            await limiter.acquire(bucket)
            stamps.append(time.monotonic())
        return stamps

    async def main() -> tuple[list[float], list[float]]:
        return await asyncio.gather(burst("playlists", 7), burst("default", 5))  # type: ignore[return-value]

    playlists, default = asyncio.run(main())
    for i in range(3, len(playlists)):  # any 4 consecutive requests span at least one window
        assert playlists[i] - playlists[i - 3] >= 0.39
    assert default[-1] - default[0] < 0.3  # the other bucket was not held back


def test_client_side_rate_limit_is_applied_to_playlists(sandbox: Any) -> None:
    with client_for(sandbox, rate_limit=True) as c:
        assert c._core.limiter is not None
        c.playlists.list(page_size=50)
        c.transformations.list()
        stamps = c._core.limiter._stamps
    assert len(stamps[("playlists", 60.0)]) >= 2
    assert len(stamps[("default", 60.0)]) >= 1


def test_progress_bar_shows_on_multi_page_listing(
    sandbox: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    with Client(sandbox.url, personal_api_key=sandbox.personal_api_key, progress=True) as c:
        c.playlists.list(page_size=10)
    assert "playlists" in capsys.readouterr().err
    with Client(sandbox.url, personal_api_key=sandbox.personal_api_key, progress=False) as c:
        c.playlists.list(page_size=10)
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("TQDM_DISABLE", "1")
    with Client(sandbox.url, personal_api_key=sandbox.personal_api_key) as c:
        c.playlists.list(page_size=10)
    assert capsys.readouterr().err == ""


def test_capture_and_simulate_delegates_reach_their_modules(empty_sandbox: Any) -> None:
    import pandas as pd

    with client_for(empty_sandbox) as c:
        c.capture("client delegate event", "user-1", {"plan": "pro"})
        c.flag_called("user-1", "some-flag", True)
        events = empty_sandbox.events()
        assert {"client delegate event", "$feature_flag_called"} <= set(events["event"])
        rollout = {"groups": [{"properties": [], "rollout_percentage": 100}]}
        c.feature_flags.create("delegate-flag", filters=rollout)
        result = c.simulate(pd.DataFrame({"distinct_id": ["a", "b"]}), ["delegate-flag"], engine="remote")
    assert list(result.frame["delegate-flag"]) == [True, True]


def test_calls_carry_the_callers_context_onto_the_loop_thread(client: Client) -> None:
    import contextvars

    cell: contextvars.ContextVar[str] = contextvars.ContextVar("cell")

    async def where() -> tuple[str | None, str]:
        return cell.get(None), threading.current_thread().name

    cell.set("cell 7")  # like ipykernel's parent header: output must go to the calling cell
    value, thread = client.run(where())
    assert value == "cell 7" and thread != threading.current_thread().name


def test_async_client_sandbox_stops_its_server_on_close() -> None:
    import httpx

    async def main() -> tuple[str, int]:
        ac = AsyncClient.sandbox(seed="empty", progress=False)
        created = await ac.playlists.create("collection", "async embedded")
        n = len(await ac.playlists.list())
        assert (await ac.playlists.get(created.short_id)).name == "async embedded"
        await ac.close()
        return ac.host, n

    url, n = asyncio.run(main())
    assert n == 1
    with pytest.raises(httpx.TransportError):
        httpx.get(url + "/api/projects/", timeout=2)


def test_capture_forwards_groups_and_flag_called_frame_delegates(empty_sandbox: Any) -> None:
    import pandas as pd

    sim = pd.DataFrame(
        {
            "distinct_id": ["u1", "u2"],
            "beta": pd.array([True, False], dtype="boolean"),
            "error": pd.Series([pd.NA, pd.NA], dtype=object),
        }
    )
    with client_for(empty_sandbox) as c:
        uuid = c.capture("grouped event", "user-1", {"plan": "pro"}, groups={"company": "acme"})
        report = c.flag_called_frame(sim, ["beta"], progress=False)
    events = empty_sandbox.events().set_index("uuid")
    assert events.loc[uuid, "properties"]["$groups"] == {"company": "acme"}
    assert report["status"].tolist() == ["sent", "sent"]
    called = events[events["event"] == "$feature_flag_called"]
    assert sorted(called["distinct_id"]) == ["u1", "u2"]


def test_async_client_capture_forwards_groups(empty_sandbox: Any) -> None:
    async def main() -> str:
        async with AsyncClient(
            empty_sandbox.url,
            personal_api_key=empty_sandbox.personal_api_key,
            project_api_key=empty_sandbox.project_api_key,
            progress=False,
        ) as ac:
            return str(await ac.capture("async grouped", "user-2", groups={"team": "core"}))

    uuid = asyncio.run(main())
    events = empty_sandbox.events().set_index("uuid")
    assert events.loc[uuid, "properties"]["$groups"] == {"team": "core"}


def test_plain_functions_take_a_sync_client_and_name_the_async_twin(empty_sandbox: Any) -> None:
    """No function returns "a result or a coroutine": an AsyncClient is told which coroutine to await."""
    import pandas as pd

    from analytics_nb import simulate
    from analytics_nb.capture import capture_event, capture_frame, flag_called

    events = pd.DataFrame({"event": ["e"], "distinct_id": ["u1"]})
    ac = AsyncClient(empty_sandbox.url, project_api_key=empty_sandbox.project_api_key, progress=False)
    with pytest.raises(TypeError, match="acapture_frame"):
        capture_frame(ac, events)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="acapture_event"):
        capture_event(ac, "e", "u1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="aflag_called"):
        flag_called(ac, "u1", "beta", True)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="asimulate"):
        simulate(pd.DataFrame({"distinct_id": ["u1"]}), client=ac)  # type: ignore[arg-type]
    asyncio.run(ac.close())
    assert len(empty_sandbox.events()) == 0  # nothing was sent


def test_async_client_methods_are_coroutines_with_the_sync_signature(empty_sandbox: Any) -> None:
    import inspect

    import pandas as pd

    assert inspect.iscoroutinefunction(AsyncClient.capture_frame)
    assert inspect.signature(AsyncClient.simulate).parameters == inspect.signature(Client.simulate).parameters

    async def main() -> list[bool]:
        async with AsyncClient(
            empty_sandbox.url, project_api_key=empty_sandbox.project_api_key, progress=False
        ) as ac:
            report = await ac.capture_frame(pd.DataFrame({"event": ["e1", "e2"], "distinct_id": ["a", "b"]}))
            return list(report["status"] == "sent")

    assert asyncio.run(main()) == [True, True]

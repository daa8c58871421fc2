"""Remote simulation's connection pool and pacing, over HTTP to the demo sandbox (faults from the sandbox).

* The pool holds the requested concurrency: it used to be capped at 16 connections whatever ``concurrency=``
  said, so 64 slow decides took four delays instead of one.
* 429 answers (with ``Retry-After``) slow the run down and never fail a row, even with ``max_retries=0``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pandas as pd
import pytest

from _clients import client_for
from analytics_nb.client._transport import aiohttp_available
from analytics_nb.sandbox import Sandbox
from analytics_nb.simulation import simulate

TRANSPORTS = [
    "httpx",
    pytest.param("aiohttp", marks=pytest.mark.skipif(not aiohttp_available(), reason="fast")),
]


def _rows(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "distinct_id": [f"pace-{i}" for i in range(n)],
            "country": (["US", "DE", "FR"] * n)[:n],
            "plan": (["free", "pro"] * n)[:n],
        }
    )


@pytest.fixture
def sb(sandbox: Sandbox) -> Iterator[Sandbox]:
    sandbox.faults.clear()
    yield sandbox
    sandbox.faults.clear()


def _decides(sb: Sandbox) -> pd.DataFrame:
    log = sb.requests()
    return log[log["path"].isin(["/decide/", "/flags/"])]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_pool_holds_the_requested_concurrency(sb: Sandbox, transport: str) -> None:
    df = _rows(64)
    with client_for(sb, http_transport=transport, project_id=sb.project_id) as client:
        simulate(df.head(2), ["beta-feature"], client=client)  # definitions and project key fetched
        sb.faults.add(path="/flags/", delay=1.0)
        started = time.perf_counter()
        result = simulate(df, ["beta-feature"], client=client, concurrency=64)
        took = time.perf_counter() - started
        assert client.core.pool_size >= 64
    assert result.frame["error"].isna().all()
    # 64 requests each held 1 s by the sandbox: one round when all 64 are in flight at once; a pool of 16
    # connections needs four rounds (4 s and more).
    assert took < 2.5, f"64 concurrent 1 s decides took {took:.2f} s: the pool did not hold 64 connections"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_429_with_retry_after_slows_the_run_and_fails_no_row(sb: Sandbox, transport: str) -> None:
    df = _rows(30)
    with client_for(sb, http_transport=transport, max_retries=0, project_id=sb.project_id) as client:
        simulate(df.head(1), ["beta-feature"], client=client)
        before = len(_decides(sb))
        sb.faults.add(path="/flags/", status=429, rate=0.15, retry_after=1)
        result = simulate(df, ["beta-feature"], client=client, concurrency=8)
    assert result.frame["error"].isna().all(), result.frame["error"].dropna().head()
    assert result.frame["beta-feature"].notna().all()
    log = _decides(sb).iloc[before:]
    assert (log["status"] == 429).sum() >= 1  # the service really throttled, and every row still came back
    assert (log["status"] == 200).sum() == len(df)


def test_429_without_retry_after_header_is_paced_too(sb: Sandbox) -> None:
    """A 429 whose Retry-After is missing: a short jittered pause (the sandbox always sends one, so this
    drives the pacer directly with what ``Core.request`` passes it)."""
    import asyncio

    from analytics_nb.client import AdaptiveLimit

    async def run() -> tuple[float, int, int]:
        limit = AdaptiveLimit(8)
        for _ in range(8):
            await limit.acquire()
        pause = limit.throttle(None)
        for _ in range(8):
            limit.release(ok=False)
        return pause, limit.allowed, limit.in_flight

    pause, allowed, in_flight = asyncio.run(run())
    assert 0.5 <= pause <= 2.0
    assert allowed == 4 and in_flight == 0  # halved once for one episode, not once per 429 of the burst

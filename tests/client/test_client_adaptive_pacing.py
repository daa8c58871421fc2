"""``AdaptiveLimit.adapt`` (the default of ``simulate(engine="remote")``): the number in flight follows
throughput and latency, against a modelled service (asyncio, no HTTP): a fixed round trip with room for
any number of requests, a service that can work on only a few at once (requests queue), and 429s."""

from __future__ import annotations

import asyncio
import time

from analytics_nb.client import AdaptiveLimit


async def _run(
    pacer: AdaptiveLimit, n: int, latency: float, capacity: int | None, workers: int = 256
) -> float:
    """``n`` requests through ``pacer``; each takes ``latency`` s, of which the service works on at most
    ``capacity`` at once (None: unbounded, a pure network delay). Returns requests per second."""
    slots = asyncio.Semaphore(capacity) if capacity else None
    todo = iter(range(n))

    async def one() -> None:
        started = await pacer.acquire()
        try:
            if slots is None:
                await asyncio.sleep(latency)
            else:
                async with slots:
                    await asyncio.sleep(latency)
        finally:
            pacer.release(ok=True, started=started)

    async def worker() -> None:
        for _ in todo:
            await one()

    t = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(workers)))
    return n / (time.perf_counter() - t)


def test_opens_up_to_hundreds_in_flight_at_100ms() -> None:
    pacer = AdaptiveLimit(256).adapt(8)
    rate = asyncio.run(_run(pacer, 3000, 0.1, None))
    assert pacer.peak >= 128, pacer.history[:12]
    assert rate > 2 * 32 / 0.1, rate  # over twice what 32 threads can do at 100 ms (320/s)
    assert pacer.limit <= 256


def test_slow_start_doubles_while_latency_holds() -> None:
    """At a pure 100 ms network delay the window doubles every round while latency holds at its floor
    (x1.5 before: 8, 12, 18, 27, 40, 60 in the first six rounds), and a slow-start round is one window
    (one round trip; it was at least 16 answers, two round trips at 8 in flight), so the ramp to the
    ceiling takes six round trips."""
    pacer = AdaptiveLimit(256).adapt(8)
    started = time.perf_counter()
    asyncio.run(_run(pacer, 600, 0.1, None))
    elapsed = time.perf_counter() - started
    limits = [limit for limit, _rate, _rtt in pacer.history]
    assert limits[:4] == [8, 16, 32, 64], limits[:10]
    assert max(limits[:6]) >= 256, limits[:10]
    assert elapsed < 1.2, (elapsed, limits)  # 600 rows: 8+16+32+64+128 ramping, the rest at 256 (was 1.5 s)


def test_grows_at_20ms_too() -> None:
    pacer = AdaptiveLimit(256).adapt(8)
    rate = asyncio.run(_run(pacer, 3000, 0.02, None))
    assert pacer.peak >= 64 and rate > 2 * 32 / 0.02 * 0.8, (pacer.peak, rate)


def test_stays_near_the_knee_when_the_service_queues() -> None:
    """The service works on 8 at a time: more in flight only queues (latency grows, throughput does not)."""
    pacer = AdaptiveLimit(256).adapt(8)
    rate = asyncio.run(_run(pacer, 1000, 0.02, 8))
    assert rate > 0.6 * 8 / 0.02, rate  # near the service's 400/s (a loaded machine slows asyncio too)
    assert pacer.limit < 96, pacer.history[-10:]  # not opened to the ceiling


def test_a_429_halves_the_window() -> None:
    async def go() -> tuple[float, float]:
        pacer = AdaptiveLimit(256).adapt(64)
        before = pacer.limit
        pacer.throttle(0.01)
        return before, pacer.limit

    before, after = asyncio.run(go())
    assert after == before / 2


def test_fixed_mode_is_unchanged() -> None:
    pacer = AdaptiveLimit(10)
    assert pacer.allowed == 10 and not pacer.adaptive
    rate = asyncio.run(_run(pacer, 200, 0.02, None, workers=10))
    assert pacer.peak == 10 and rate < 10 / 0.02 * 1.05

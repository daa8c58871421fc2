"""Adaptive pacing for bulk request runs (remote simulation): how many requests may be in flight right now.

A run asks for ``concurrency`` requests in flight; the service may answer 429 (its rate limit, with or
without ``Retry-After``). ``AdaptiveLimit`` then slows the whole run down instead of failing rows:

* every worker pauses until the ``Retry-After`` the service gave (or a short jittered backoff without one),
  so the retries do not arrive as one burst;
* the number of requests allowed in flight is halved (once per throttling episode, never below 1) and grows
  back by about one per round of successful answers (additive increase, multiplicative decrease, as TCP
  congestion control does), so a run settles just under the service's limit.

It is plain asyncio: one event loop, no locks; the fast path (no pause, room in the window) is a comparison
and an increment.

**Adaptive mode** (`adapt`, what ``simulate(engine="remote")`` uses at default settings): the window starts
small and is sized by what the service gives back, not by a fixed number. Every round (about one window of
answers) the limit looks at the round's throughput (answers/s) and latency (mean round trip, against the
smallest seen):

* it **grows** (x2 a round at first while latency stays within 25% of its floor, x1.5 once it rises,
  then +10%; during that slow start a round is one window of answers, one round trip) while a growth
  raised throughput by 10% or more and the
  window was full (more in flight was asked for); a flat round still adds some while latency stays near
  its floor (no queueing yet, so more in flight should pay);
* it **backs off** (x0.85) when latency is over twice its floor without a throughput gain (requests are
  queueing: on loopback the CPU, or a loaded service), undoes a cut that cost throughput, and halves on a
  429 as above;
* otherwise it holds. It never exceeds ``ceiling`` (the run's documented maximum, `ADAPTIVE_CEILING` in
  ``simulation/_remote.py``) and, 429s aside, never goes under `ADAPTIVE_FLOOR`.

The latency floor is the smallest *round mean* seen (single round trips are too noisy on a shared
machine), and a round is at least `ROUND_MIN` answers.

So at 100 ms of latency it opens up to hundreds of requests in flight within about a second, and on a
loopback sandbox (where round trips cost nothing and the CPU is the limit) it stays at a few.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import deque

__all__ = ["AdaptiveLimit"]

#: Pause when a 429 carries no Retry-After (seconds; jittered by up to +50%).
DEFAULT_THROTTLE_PAUSE = 1.0


#: Grow x1.5 while a round's throughput beats the best recent one by this factor.
GROWTH_GAIN = 1.10
#: Latency over this multiple of its floor (smallest round mean) means requests are queueing.
QUEUEING_LATENCY = 2.0
#: Latency under this multiple of its floor: no queueing yet, a flat round may still grow a little.
NO_QUEUEING_LATENCY = 1.5
#: In slow start, latency under this multiple of its floor (the first round's is the floor) doubles the window
#: instead of x1.5: the round trip is a pure network delay, so each round trip can carry twice as much (TCP
#: slow start's doubling). On loopback, or a service that queues, latency rises at once and x1.5 applies.
DOUBLING_LATENCY = 1.25
#: Answers per round at least (a round is otherwise one window of answers).
ROUND_MIN = 16
#: The same during slow start: a round is one window (one round trip), so that at 100 ms of latency the
#: window doubles every 100 ms (8, 16, 32, ... 256 in six round trips) instead of every other round trip.
SLOW_START_ROUND_MIN = 8
#: Adaptive mode never shrinks under this for latency (a 429 may still halve it down to 1).
ADAPTIVE_FLOOR = 2.0


class AdaptiveLimit:
    """At most ``limit`` requests in flight (``1 <= limit <= ceiling``), adapted to the service's 429s and,
    in adaptive mode (`adapt`), to the measured throughput and latency."""

    def __init__(self, ceiling: int) -> None:
        if ceiling < 1:
            raise ValueError(f"concurrency={ceiling} must be at least 1.")
        self.ceiling = int(ceiling)
        self.limit = float(ceiling)
        self.in_flight = 0
        self.throttled = 0
        """How many 429 answers the run met (each was retried)."""
        self.paused_until = 0.0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self.adaptive = False
        self.peak = 0
        """The largest number of requests that were in flight at once."""
        self.history: list[tuple[int, float, float]] = []
        """Adaptive mode: (limit, answers/s, mean round trip s) of each round, for reports and tests."""
        self._round_start = 0.0
        self._round_done = 0
        self._round_rtt = 0.0
        self._round_full = False
        self._last_rate = 0.0
        self._last_move = "grow"
        self._floor_rtt = float("inf")
        self._slow_start = True

    def adapt(self, start: int = 4) -> AdaptiveLimit:
        """Switch to adaptive mode: begin with ``start`` in flight and size the window from throughput and
        latency (see the module docstring), never above ``ceiling``. Returns self."""
        self.adaptive = True
        self.limit = float(max(1, min(int(start), self.ceiling)))
        self._round_start = time.monotonic()
        return self

    def __repr__(self) -> str:
        return (
            f"AdaptiveLimit(limit={int(self.limit)}/{self.ceiling}, in_flight={self.in_flight}, "
            f"throttled={self.throttled})"
        )

    @property
    def allowed(self) -> int:
        """Requests allowed in flight now."""
        return max(1, int(self.limit))

    async def acquire(self) -> float:
        """Wait for a pause to end and for room in the window, then take one place; returns the time the
        request starts (``time.monotonic()``, for `release`'s ``started``)."""
        while True:
            wait = self.paused_until - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            if self.in_flight < self.allowed:
                self.in_flight += 1
                if self.in_flight > self.peak:
                    self.peak = self.in_flight
                if self.in_flight >= self.allowed:
                    self._round_full = True
                return time.monotonic()
            self._round_full = True
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._wake(1)  # pass the wake-up on: this one will not use it
                raise

    def release(self, *, ok: bool = True, started: float | None = None) -> None:
        """Give the place back; ``ok`` (an answer that was not a 429) grows the window a little (fixed
        mode) or counts towards the round (adaptive mode, with the round trip from ``started``)."""
        self.in_flight -= 1
        if self.adaptive:
            if ok:
                self._count(None if started is None else time.monotonic() - started)
        elif ok and self.limit < self.ceiling:
            self.limit = min(float(self.ceiling), self.limit + 1.0 / self.limit)
        self._wake(self.allowed - self.in_flight)

    def _count(self, rtt: float | None) -> None:
        self._round_done += 1
        self._round_rtt += rtt if rtt is not None else 0.0
        if self._round_done >= max(SLOW_START_ROUND_MIN if self._slow_start else ROUND_MIN, int(self.limit)):
            self._end_round()

    def _end_round(self) -> None:
        """Size the window from the round that just ended: a hill climb on throughput, braked by latency.

        The last move is judged by what it did to throughput: a growth that paid is continued, a cut
        that cost throughput is undone; latency over twice its floor with no gain means queueing (cut);
        latency near its floor with a full window means room (grow a little)."""
        now = time.monotonic()
        rate = self._round_done / max(now - self._round_start, 1e-6)
        rtt = self._round_rtt / self._round_done
        self.history.append((int(self.limit), rate, rtt))
        if rtt > 0:  # the floor drifts up 1% a round, so that a lucky early round does not rule forever
            self._floor_rtt = min(self._floor_rtt * 1.01, rtt)
        prev, move = self._last_rate, self._last_move
        gained = rate > prev * GROWTH_GAIN
        lost = rate < prev / GROWTH_GAIN
        queueing = rtt > QUEUEING_LATENCY * self._floor_rtt
        if move == "grow" and gained and self._round_full:
            self._grow(self._growth_step(rtt))
        elif move == "cut" and lost:
            self._grow(self.limit / 0.85 - self.limit)  # the cut cost throughput: undo it
        elif queueing and not gained:
            self._cut()
        elif self._round_full and rtt < NO_QUEUEING_LATENCY * self._floor_rtt:
            self._grow(self._growth_step(rtt))
        else:
            self._slow_start = False
            self._last_move = "hold"
        self._last_rate = rate
        self._round_start, self._round_done, self._round_rtt, self._round_full = now, 0, 0.0, False

    def _growth_step(self, rtt: float) -> float:
        """How much a growth adds: in slow start the window doubles while latency holds at its floor (the
        first round's latency is the floor itself), else x1.5; after slow start +10%."""
        if not self._slow_start:
            return max(1.0, self.limit * 0.1)
        if rtt < DOUBLING_LATENCY * self._floor_rtt:
            return self.limit
        return self.limit * 0.5

    def _grow(self, step: float) -> None:
        self.limit = min(float(self.ceiling), self.limit + max(1.0, step))
        self._last_move = "grow"

    def _cut(self) -> None:
        self._slow_start = False
        self.limit = max(min(ADAPTIVE_FLOOR, self.limit), self.limit * 0.85)
        self._last_move = "cut"

    def throttle(self, retry_after: float | None) -> float:
        """Record a 429: pause every worker and halve the window (once per episode); returns the pause."""
        now = time.monotonic()
        self.throttled += 1
        if retry_after is not None and retry_after >= 0:
            pause = retry_after + random.random() * 0.05
        else:
            pause = DEFAULT_THROTTLE_PAUSE * (1 + random.random() / 2)
        if now >= self.paused_until:  # a new episode (the others in flight answer 429 to the same burst)
            self.limit = max(1.0, self.limit / 2)
            self._slow_start = False
        self.paused_until = max(self.paused_until, now + pause)
        return max(0.0, self.paused_until - now)

    def _wake(self, count: int) -> None:
        while count > 0 and self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                count -= 1

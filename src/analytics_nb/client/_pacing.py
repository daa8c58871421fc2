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
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import deque

__all__ = ["AdaptiveLimit"]

#: Pause when a 429 carries no Retry-After (seconds; jittered by up to +50%).
DEFAULT_THROTTLE_PAUSE = 1.0


class AdaptiveLimit:
    """At most ``limit`` requests in flight (``1 <= limit <= ceiling``), adapted to the service's 429s."""

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

    def __repr__(self) -> str:
        return (
            f"AdaptiveLimit(limit={int(self.limit)}/{self.ceiling}, in_flight={self.in_flight}, "
            f"throttled={self.throttled})"
        )

    @property
    def allowed(self) -> int:
        """Requests allowed in flight now."""
        return max(1, int(self.limit))

    async def acquire(self) -> None:
        """Wait for a pause to end and for room in the window, then take one place."""
        while True:
            wait = self.paused_until - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            if self.in_flight < self.allowed:
                self.in_flight += 1
                return
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._wake(1)  # pass the wake-up on: this one will not use it
                raise

    def release(self, *, ok: bool = True) -> None:
        """Give the place back; ``ok`` (an answer that was not a 429) grows the window a little."""
        self.in_flight -= 1
        if ok and self.limit < self.ceiling:
            self.limit = min(float(self.ceiling), self.limit + 1.0 / self.limit)
        self._wake(self.allowed - self.in_flight)

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
        self.paused_until = max(self.paused_until, now + pause)
        return max(0.0, self.paused_until - now)

    def _wake(self, count: int) -> None:
        while count > 0 and self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                count -= 1

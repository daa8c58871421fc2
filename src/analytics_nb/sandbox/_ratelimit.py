"""Per-key token buckets like the real throttles: 480/min + 4800/h by default, 240/min + 1200/h on playlists,
600/min on flag local evaluation,
240/min + 2400/h on the query API."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

#: Throttle classes -> list of (requests, period seconds), as `posthog/rate_limit.py` sets them.
DEFAULT_RATES: dict[str, list[tuple[int, float]]] = {
    "default": [(480, 60.0), (4800, 3600.0)],
    "playlists": [(240, 60.0), (1200, 3600.0)],
    "local_evaluation": [(600, 60.0)],
    # `APIQueriesBurstThrottle` / `APIQueriesSustainedThrottle` (posthog/rate_limit.py): the query API
    "query": [(240, 60.0), (2400, 3600.0)],
}


@dataclass
class _Bucket:
    capacity: float
    refill_per_s: float
    tokens: float
    updated: float


class RateLimiter:
    """Token buckets keyed by (key id, throttle class, window); `check` returns the wait in seconds or 0."""

    def __init__(self, rates: dict[str, list[tuple[int, float]]] | None = None) -> None:
        self.rates = {k: list(v) for k, v in (rates or DEFAULT_RATES).items()}
        self._buckets: dict[tuple[str, str, int], _Bucket] = {}
        self._lock = threading.Lock()

    def check(self, key_id: str, throttle: str = "default") -> float:
        """Take one token from each window of `throttle` for `key_id`; seconds to wait if any is empty."""
        limits = self.rates.get(throttle) or self.rates.get("default") or []
        now = time.monotonic()
        with self._lock:
            buckets = []
            wait = 0.0
            for i, (count, period) in enumerate(limits):
                b = self._buckets.get((key_id, throttle, i))
                if b is None:
                    b = _Bucket(float(count), count / period, float(count), now)
                    self._buckets[(key_id, throttle, i)] = b
                b.tokens = min(b.capacity, b.tokens + (now - b.updated) * b.refill_per_s)
                b.updated = now
                buckets.append(b)
                if b.tokens < 1.0:
                    wait = max(wait, (1.0 - b.tokens) / b.refill_per_s)
            if wait > 0:
                return wait
            for b in buckets:
                b.tokens -= 1.0
            return 0.0

    def reset(self) -> None:
        """Forget all buckets (every key starts full again)."""
        with self._lock:
            self._buckets.clear()


def parse_rates(spec: dict[str, int | list[tuple[int, float]]] | None) -> dict[str, list[tuple[int, float]]]:
    """Normalise rates: `{"default": 480, "playlists": 240}` (per minute) or `(count, seconds)` lists."""
    rates = {k: list(v) for k, v in DEFAULT_RATES.items()}
    for name, value in (spec or {}).items():
        if isinstance(value, int | float):
            if value <= 0:
                raise ValueError(f"rate_limits[{name!r}] must be a positive number of requests per minute")
            rates[name] = [(int(value), 60.0)]
        else:
            rates[name] = [(int(c), float(p)) for c, p in value]
    return rates

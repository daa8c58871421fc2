"""Fault injection: a fraction of requests matching a path glob answered with an error status, a 429 with
`Retry-After`, a delay, a TCP connection reset, or a body trickled one byte at a time.
Deterministic for a given seed."""

from __future__ import annotations

import builtins
import fnmatch
import random
import threading
from dataclasses import dataclass, field
from typing import Any

_STATUSES = (408, 429, 500, 502, 503, 504)


@dataclass(frozen=True)
class Fault:
    """One fault rule (see :meth:`Faults.add`)."""

    id: int
    path: str
    status: int | None
    rate: float
    retry_after: float | None
    delay: float | None
    reset: bool
    methods: frozenset[str] | None
    kind: str | None = None
    trickle: float | None = None

    def matches(self, method: str, path: str) -> bool:
        """Whether the rule applies to this request (path glob, trailing slash optional; method list)."""
        if self.methods is not None and method.upper() not in self.methods:
            return False
        bare = path.rstrip("/") or "/"
        return fnmatch.fnmatchcase(path, self.path) or fnmatch.fnmatchcase(bare, self.path)

    def as_dict(self) -> dict[str, Any]:
        """JSON form used by the admin endpoint."""
        return {
            "id": self.id,
            "path": self.path,
            "status": self.status,
            "rate": self.rate,
            "retry_after": self.retry_after,
            "delay": self.delay,
            "reset": self.reset,
            "methods": sorted(self.methods) if self.methods else None,
            "kind": self.kind,
            "trickle": self.trickle,
        }


@dataclass
class Faults:
    """The fault rules of one sandbox: `add(...)` returns an id, `remove(id)`, `clear()`; seeded."""

    seed: int = 0
    _rules: list[Fault] = field(default_factory=list)
    _next_id: int = 1
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)

    def __repr__(self) -> str:
        return f"Faults({[r.as_dict() for r in self._rules]!r})"

    def add(
        self,
        path: str = "*",
        status: int | None = None,
        rate: float = 1.0,
        retry_after: float | None = None,
        delay: float | None = None,
        reset: bool = False,
        methods: builtins.list[str] | None = None,
        kind: str | None = None,
        trickle: float | None = None,
    ) -> int:
        """Add a rule: a `rate` fraction of requests whose path matches the glob `path` (e.g. "/batch*").

        `status` answers 408/429/500/502/503/504 (429 carries `Retry-After: retry_after`, default 1 s);
        `delay` seconds of latency (alone: the request then proceeds normally); `reset=True` cuts the
        connection with a TCP reset. `kind` is a tag an endpoint reads through
        :meth:`active` (e.g. "quota_limited"). `trickle` sends the answer's body one byte at a time,
        `trickle` seconds apart (a server that never goes silent long enough for a read timeout).

        Args:
            path: A glob of request paths (the trailing slash is optional).
            status: The status to answer (408, 429, 500, 502, 503 or 504). None: no error status.
            rate: The fraction of matching requests that get the fault (drawn from the seeded generator).
            retry_after: The ``Retry-After`` of a 429, in seconds. None: 1.
            delay: Seconds of added latency. None: none.
            reset: Cut the connection with a TCP reset.
            methods: Only these HTTP methods. None: all.
            kind: A tag read by an endpoint: the flags endpoints read ``"quota_limited"``,
                ``"flag_failure"``, ``"cold_cache"``...; a playlist's recordings read ``"offset_ignored"``;
                the flag list reads ``"legacy_list_filters"`` (it ignores ``key`` and ``tags``, as an older
                self-hosted PostHog does); a flag's ``versions/:n`` reads ``"no_flag_versions"`` (404); also
                ``"endless_pages"`` (a saved filter's recordings) and ``"flag_key_mismatch"`` (``/flags``
                records); the query endpoint reads ``"query_timeout"`` (504), ``"slow_query"`` (504 when
                sync, two polls running when async) and ``"rate_limit_warning"``.
                None: none.
            trickle: Seconds between the bytes of the answer's body (0.001 to 10), sent one at a time after
                the status and headers; the request is otherwise served normally. None: sent at once.

        Returns:
            The rule's id (for ``remove``).

        Raises:
            ValueError: ``rate`` is not between 0 and 1, or ``status`` is not one of those above.
        """
        if not 0.0 <= float(rate) <= 1.0:
            raise ValueError(f"rate must be between 0 and 1, got {rate!r}")
        if status is not None and int(status) not in _STATUSES:
            raise ValueError(f"status must be one of {_STATUSES}, got {status!r}")
        if delay is not None and not 0 <= float(delay) <= 60:
            raise ValueError(f"delay must be between 0 and 60 seconds, got {delay!r}")
        if retry_after is not None and float(retry_after) < 0:
            raise ValueError("retry_after must be >= 0 seconds")
        if trickle is not None and not 0.001 <= float(trickle) <= 10:
            raise ValueError(f"trickle must be between 0.001 and 10 seconds, got {trickle!r}")
        if status is None and delay is None and not reset and kind is None and trickle is None:
            raise ValueError("a fault needs status=..., delay=..., reset=True, trickle=... or kind=...")
        if not isinstance(path, str) or not path.startswith(("/", "*")):
            raise ValueError(f"path must be a glob starting with '/' or '*', got {path!r}")
        with self._lock:
            rule = Fault(
                id=self._next_id,
                path=path,
                status=None if status is None else int(status),
                rate=float(rate),
                retry_after=None if retry_after is None else float(retry_after),
                delay=None if delay is None else float(delay),
                reset=bool(reset),
                methods=frozenset(m.upper() for m in methods) if methods else None,
                kind=kind,
                trickle=None if trickle is None else float(trickle),
            )
            self._next_id += 1
            self._rules.append(rule)
            return rule.id

    def remove(self, fault_id: int) -> bool:
        """Remove one rule; False when no rule has that id.

        Args:
            fault_id: The id ``add`` returned.

        Returns:
            False when no rule has that id.
        """
        with self._lock:
            before = len(self._rules)
            self._rules = [r for r in self._rules if r.id != fault_id]
            return len(self._rules) != before

    def clear(self) -> None:
        """Remove every rule."""
        with self._lock:
            self._rules = []

    def reseed(self, seed: int) -> None:
        """Restart the random sequence so a run of requests hits the same faults again.

        Args:
            seed: The new seed.
        """
        with self._lock:
            self.seed = seed
            self._random = random.Random(seed)

    def list(self) -> builtins.list[dict[str, Any]]:
        """The rules as dicts."""
        with self._lock:
            return [r.as_dict() for r in self._rules]

    def pick(self, method: str, path: str, *, with_kind: bool = False) -> builtins.list[Fault]:
        """The rules that fire for this request (each drawn with its rate). Used by the app's fault layer;
        rules with a `kind` are only drawn when `with_kind` (by the module that understands them).

        Args:
            method: The request's HTTP method.
            path: The request's path.
            with_kind: Also draw the rules tagged with a ``kind``.

        Returns:
            The rules that fire.
        """
        with self._lock:
            fired: builtins.list[Fault] = []
            for rule in self._rules:
                if (rule.kind is not None) != with_kind or not rule.matches(method, path):
                    continue
                if rule.rate >= 1.0 or self._random.random() < rule.rate:
                    fired.append(rule)
            return fired

    def active(self, kind: str, method: str, path: str) -> bool:
        """Whether a rule tagged `kind` fires for this request (decide reads its quota / failure kinds).

        Args:
            kind: The tag.
            method: The request's HTTP method.
            path: The request's path.

        Returns:
            Whether such a rule fires.
        """
        return any(r.kind == kind for r in self.pick(method, path, with_kind=True))

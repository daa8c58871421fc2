"""Ctrl-C on a sync client, handled here once: `run_interruptible`.

(The verbs' other forms, the async twins and the client methods, are written as typed source by
``scripts/generate_sync.py``; nothing here builds a signature.)

`run_interruptible` runs a coroutine on the client's loop and, on ``KeyboardInterrupt``, waits for the
cancelled run to settle before the caller builds what it returns (the partial `SimulationResult`, the capture
report).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Coroutine
from typing import Any, Protocol, TypeVar

__all__ = ["Settles", "run_interruptible"]

T = TypeVar("T")


class Runs(Protocol):
    """What `run_interruptible` needs of a sync client: ``run(coro)`` on its loop (``ApiClient.run``). A
    protocol, so this module needs no import of the client it serves (``_client`` imports it)."""

    def run(self, coro: Coroutine[Any, Any, T]) -> T: ...


class Settles(Protocol):
    """A run the sync caller can wait for after Ctrl-C: ``started`` once it runs, ``settled`` once done."""

    started: threading.Event
    settled: threading.Event


def run_interruptible(
    client: Runs,
    coro: Coroutine[Any, Any, T],
    run: Settles,
    *,
    settle_seconds: float,
    on_interrupt: Callable[[KeyboardInterrupt], T],
    before_wait: Callable[[], None] | None = None,
) -> T:
    """Run ``coro`` on the sync client's loop. On Ctrl-C (the loop cancels the run) wait for the run to settle
    (half a second for it to start, then up to ``settle_seconds``; a second Ctrl-C stops waiting) and return
    ``on_interrupt(exc)``, which builds the partial answer or raises. ``before_wait`` runs first (e.g. to stop
    new requests). The client stays usable."""
    try:
        return client.run(coro)
    except KeyboardInterrupt as exc:
        if before_wait is not None:
            before_wait()
        if run.started.wait(0.5):
            run.settled.wait(settle_seconds)
        return on_interrupt(exc)

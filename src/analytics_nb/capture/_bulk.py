"""Bulk capture: a DataFrame of events through ``/batch/``, batched, gzipped, concurrent, retried, reported.

Every event carries a uuid (given or generated) before anything is sent and the service keeps one event per
uuid, so a batch can be re-sent after a timeout or a reset without doubling anything. Each row of the input
gets exactly one row in the report: ``sent``, ``refused`` (by local checks or by the service, with the reason)
or ``failed`` (the batch kept failing after the retries; nothing is dropped silently).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from analytics_nb.capture._attribution import feature_properties
from analytics_nb.capture._events import (
    HISTORICAL_AGE,
    MAX_EVENT_BYTES,
    MAX_REQUEST_BYTES,
    PreparedFrame,
    build_event,
    prepare_frame,
)
from analytics_nb.capture._send import (
    core_of,
    is_retryable,
    post_batch,
    post_event,
    project_key,
    run_blocking,
)
from analytics_nb.capture._values import NaivePolicy, is_missing
from analytics_nb.client import AnyApiClient, ApiClient
from analytics_nb.client._progress import progress_enabled
from analytics_nb.errors import (
    AuthenticationError,
    PermissionDeniedError,
    PostHogError,
    QuotaLimitedError,
    RateLimitedError,
    ValidationError,
)

__all__ = [
    "DEFAULT_BATCH_BYTES",
    "DEFAULT_BATCH_SIZE",
    "acapture_event",
    "acapture_frame",
    "capture_event",
    "capture_frame",
]

DEFAULT_BATCH_SIZE = 1000
"""Events per ``/batch`` request unless ``batch_size=`` says otherwise."""
DEFAULT_BATCH_BYTES = 5 * 1024 * 1024
"""Uncompressed JSON bytes per ``/batch`` request (the service accepts up to 20 MB)."""
MAX_WAIT = 120.0
"""Longest pause (seconds, e.g. a ``Retry-After``) before another round for a batch; longer ones fail it."""
REPORT_COLUMNS = ("uuid", "event", "distinct_id", "status", "reason", "batch")


def _progress(setting: bool | None, client: AnyApiClient, total: int, batches: int) -> Any:
    """A ``tqdm.auto`` bar or None; ``None`` follows the client's ``progress``, showing a bar for >1 batch."""
    if setting is None:
        setting = core_of(client).config.progress
    if (setting is None and batches <= 1) or not progress_enabled(setting):
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="capture", unit="ev", leave=False)


def _text(value: Any) -> Any:
    if value is None or (not isinstance(value, str) and is_missing(value)):
        return pd.NA
    return value if isinstance(value, str) else str(value)


class _Run:
    """State of one ``capture_frame`` call: per-row status, reason and batch number."""

    def __init__(self, prepared: PreparedFrame) -> None:
        n = prepared.n
        self.prepared = prepared
        self.status: list[str | None] = [None] * n
        self.reason: list[str | None] = [None] * n
        self.batch: list[int | None] = [None] * n
        self.fatal: PostHogError | None = None
        for pos, why in prepared.refused.items():
            self.status[pos] = "refused"
            self.reason[pos] = why

    def mark(self, positions: list[int], status: str, reason: str | None, batch: int) -> None:
        for pos in positions:
            self.status[pos] = status
            self.reason[pos] = reason
            self.batch[pos] = batch


async def _deliver(
    client: AnyApiClient,
    run: _Run,
    key: str,
    batch_no: int,
    positions: list[int],
    events_json: str | None,
    *,
    gzip: bool,
    historical: bool,
    attempts: int,
) -> None:
    """Send one batch; on a 400 split it to find the refused events; retry transient failures ``attempts``
    times (each attempt already includes the client's own retries)."""
    if run.fatal is not None:
        run.mark(positions, "failed", f"not sent: {run.fatal}", batch_no)
        return
    if events_json is None:
        events_json = run.prepared.encode_many(positions)
    attempt = 0
    while True:
        try:
            await post_batch(client, key, events_json, gzip=gzip, historical_migration=historical)
        except ValidationError as exc:
            if len(positions) > 1:
                half = len(positions) // 2
                for sub in (positions[:half], positions[half:]):
                    await _deliver(
                        client,
                        run,
                        key,
                        batch_no,
                        sub,
                        None,
                        gzip=gzip,
                        historical=historical,
                        attempts=attempts,
                    )
                return
            detail = exc.detail or str(exc)
            run.mark(positions, "refused", f"the service refused this event: {detail}", batch_no)
            return
        except (AuthenticationError, PermissionDeniedError, QuotaLimitedError) as exc:
            run.fatal = exc
            run.mark(positions, "failed", str(exc), batch_no)
            return
        except PostHogError as exc:
            attempt += 1
            wait = min(30.0, 1.0 * 2 ** (attempt - 1))
            if isinstance(exc, RateLimitedError) and exc.retry_after is not None:
                wait = max(wait, exc.retry_after)
            if is_retryable(exc) and attempt < attempts and wait <= MAX_WAIT:
                await asyncio.sleep(wait)
                continue
            tries = f" (after {attempt} rounds of retries)" if attempt > 1 else ""
            run.mark(positions, "failed", f"{exc}{tries}", batch_no)
            return
        run.mark(positions, "sent", None, batch_no)
        return


def _too_big(n_bytes: int) -> str:
    return (
        f"the event is {n_bytes:,} bytes of JSON, over the service's {MAX_EVENT_BYTES:,}-byte limit per "
        "event; move large values out of its properties"
    )


async def _send_prepared(
    client: AnyApiClient,
    prepared: PreparedFrame,
    *,
    batch_size: int,
    max_batch_bytes: int,
    concurrency: int,
    gzip: bool,
    historical: bool,
    progress: bool | None,
    attempts: int,
) -> _Run:
    run = _Run(prepared)
    todo = [pos for pos in range(prepared.n) if pos not in prepared.refused]
    if not todo:
        return run
    key = await project_key(client)
    bar = _progress(progress, client, prepared.n, -(-len(todo) // batch_size))
    if bar is not None and prepared.refused:
        bar.update(len(prepared.refused))
    sem = asyncio.Semaphore(concurrency)
    tasks: list[asyncio.Task[None]] = []
    batch_no = 0

    async def one(number: int, positions: list[int], events_json: str | None) -> None:
        try:
            await _deliver(
                client,
                run,
                key,
                number,
                positions,
                events_json,
                gzip=gzip,
                historical=historical,
                attempts=attempts,
            )
        finally:
            sem.release()
            if bar is not None:
                bar.update(len(positions))

    async def flush(positions: list[int], events_json: str | None) -> None:
        nonlocal batch_no
        await sem.acquire()
        tasks.append(asyncio.create_task(one(batch_no, positions, events_json)))
        batch_no += 1
        await asyncio.sleep(0)  # let the new request start before encoding the next batch

    safe_bytes = min(max_batch_bytes, MAX_EVENT_BYTES)
    try:
        for start in range(0, len(todo), batch_size):
            chunk = todo[start : start + batch_size]
            text = prepared.encode_many(chunk)
            if len(text) <= safe_bytes:  # fast path: one encoder call, no event can be over the limit
                await flush(chunk, text)
                continue
            # Large events: encode one by one, refuse the oversized ones, pack the rest by bytes.
            positions: list[int] = []
            size = 2
            for pos in chunk:
                n_bytes = len(prepared.encode(pos))
                if n_bytes > MAX_EVENT_BYTES:
                    run.status[pos] = "refused"
                    run.reason[pos] = _too_big(n_bytes)
                    if bar is not None:
                        bar.update(1)
                    continue
                if positions and size + n_bytes + 1 > max_batch_bytes:
                    await flush(positions, None)
                    positions, size = [], 2
                positions.append(pos)
                size += n_bytes + 1
            if positions:
                await flush(positions, None)
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()
        if bar is not None:
            bar.close()
    return run


def _report(df: pd.DataFrame, run: _Run, historical: bool) -> pd.DataFrame:
    prepared = run.prepared
    names = [v if type(v) is str else _text(v) for v in prepared.names]
    dids = [v if type(v) is str else _text(v) for v in df["distinct_id"].to_numpy(dtype=object).tolist()]
    status = [s if s is not None else "failed" for s in run.status]
    reason = [
        r if r is not None or s == "sent" else "not sent (internal error: no outcome recorded)"
        for r, s in zip(run.reason, run.status, strict=True)
    ]
    report = pd.DataFrame(
        {
            "uuid": pd.array(prepared.uuids, dtype="str"),
            "event": pd.array(names, dtype="str"),
            "distinct_id": pd.array(dids, dtype="str"),
            "status": pd.array(status, dtype="str"),
            "reason": pd.array(reason, dtype="str"),
            "batch": pd.array(run.batch, dtype="Int64"),
        },
        index=df.index,
    )
    report.attrs["historical_migration"] = historical
    report.attrs["counts"] = {k: int(v) for k, v in report["status"].value_counts().items()}
    return report


def _options(
    batch_size: int | None, max_batch_bytes: int, concurrency: int, on_naive_timestamp: str, attempts: int
) -> int:
    size = DEFAULT_BATCH_SIZE if batch_size is None else batch_size
    if not isinstance(size, int | np.integer) or size < 1:
        raise ValueError(f"batch_size={batch_size!r} must be a positive number of events (default 1000)")
    if not 1024 <= max_batch_bytes <= MAX_REQUEST_BYTES:
        raise ValueError(
            f"max_batch_bytes={max_batch_bytes} must be between 1024 and the service's "
            f"{MAX_REQUEST_BYTES:,}-byte request limit"
        )
    if not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency={concurrency!r} must be at least 1")
    if on_naive_timestamp not in ("utc", "raise"):
        raise ValueError(f"on_naive_timestamp={on_naive_timestamp!r} must be 'utc' or 'raise'")
    if attempts < 1:
        raise ValueError(f"batch_attempts={attempts} must be at least 1")
    return int(size)


async def _acapture_prepared(
    client: AnyApiClient,
    df: pd.DataFrame,
    prepared: PreparedFrame,
    *,
    size: int,
    max_batch_bytes: int,
    concurrency: int,
    gzip: bool,
    historical_migration: bool | None,
    progress: bool | None,
    attempts: int,
) -> pd.DataFrame:
    historical = (
        prepared.all_older_than(HISTORICAL_AGE)
        if historical_migration is None
        else bool(historical_migration)
    )
    run = await _send_prepared(
        client,
        prepared,
        batch_size=size,
        max_batch_bytes=max_batch_bytes,
        concurrency=concurrency,
        gzip=gzip,
        historical=historical,
        progress=progress,
        attempts=attempts,
    )
    return _report(df, run, historical)


async def acapture_frame(
    client: AnyApiClient,
    df: pd.DataFrame,
    *,
    batch_size: int | None = None,
    max_batch_bytes: int = DEFAULT_BATCH_BYTES,
    concurrency: int = 4,
    gzip: bool = True,
    historical_migration: bool | None = None,
    progress: bool | None = None,
    on_naive_timestamp: NaivePolicy = "utc",
    batch_attempts: int = 2,
) -> pd.DataFrame:
    """Async ``capture_frame`` (for ``AsyncClient``; see ``capture_frame`` for the arguments and report)."""
    size = _options(batch_size, max_batch_bytes, concurrency, on_naive_timestamp, batch_attempts)
    prepared = prepare_frame(df, on_naive_timestamp=on_naive_timestamp)
    return await _acapture_prepared(
        client,
        df,
        prepared,
        size=size,
        max_batch_bytes=max_batch_bytes,
        concurrency=concurrency,
        gzip=gzip,
        historical_migration=historical_migration,
        progress=progress,
        attempts=batch_attempts,
    )


def capture_frame(
    client: ApiClient,
    df: pd.DataFrame,
    *,
    batch_size: int | None = None,
    max_batch_bytes: int = DEFAULT_BATCH_BYTES,
    concurrency: int = 4,
    gzip: bool = True,
    historical_migration: bool | None = None,
    progress: bool | None = None,
    on_naive_timestamp: NaivePolicy = "utc",
    batch_attempts: int = 2,
) -> pd.DataFrame:
    """Send a DataFrame of events through ``/batch/`` and return a report with one row per event (same index).

    Columns: ``event`` and ``distinct_id`` (required), optional ``timestamp`` and ``uuid``, a ``properties``
    column of dicts and/or one column per property, ``group:<type>`` columns for ``$groups``. Missing values
    are dropped from properties; naive datetimes are taken as UTC (``on_naive_timestamp="raise"`` refuses
    them).
    Batches hold at most ``batch_size`` (1000) events and ``max_batch_bytes`` (5 MB) of JSON, ``concurrency``
    are in flight at once. ``historical_migration=None`` sets the flag when every event is over 48 h old.
    Report columns: uuid, event, distinct_id, status (sent/refused/failed), reason, batch. With an
    ``AsyncClient`` use ``await acapture_frame(...)``.
    """
    size = _options(batch_size, max_batch_bytes, concurrency, on_naive_timestamp, batch_attempts)
    prepared = prepare_frame(df, on_naive_timestamp=on_naive_timestamp)  # in the caller's thread
    return run_blocking(
        client,
        _acapture_prepared(
            client,
            df,
            prepared,
            size=size,
            max_batch_bytes=max_batch_bytes,
            concurrency=concurrency,
            gzip=gzip,
            historical_migration=historical_migration,
            progress=progress,
            attempts=batch_attempts,
        ),
        "acapture_frame",
    )


def _event_with_flags(
    event: str,
    distinct_id: Any,
    properties: Mapping[str, Any] | None,
    *,
    flags: Any,
    timestamp: Any,
    uuid: Any,
    groups: Mapping[str, Any] | None,
) -> dict[str, Any]:
    props = dict(properties or {})
    if flags is not None:
        for name, value in feature_properties(flags).items():
            props.setdefault(name, value)  # the event's own attribution wins, as in attribute()
    return build_event(event, distinct_id, props, timestamp=timestamp, uuid=uuid, groups=groups)


async def acapture_event(
    client: AnyApiClient,
    event: str,
    distinct_id: Any,
    properties: Mapping[str, Any] | None = None,
    *,
    flags: Any = None,
    timestamp: Any = None,
    uuid: Any = None,
    groups: Mapping[str, Any] | None = None,
) -> str:
    """Async ``capture_event``: send one event through ``/capture/`` and return its uuid."""
    body = _event_with_flags(
        event, distinct_id, properties, flags=flags, timestamp=timestamp, uuid=uuid, groups=groups
    )
    await post_event(client, body)
    return str(body["uuid"])


def capture_event(
    client: ApiClient,
    event: str,
    distinct_id: Any,
    properties: Mapping[str, Any] | None = None,
    *,
    flags: Any = None,
    timestamp: Any = None,
    uuid: Any = None,
    groups: Mapping[str, Any] | None = None,
) -> str:
    """Send one event through ``/capture/`` and return its uuid (generated when not given).

    ``flags`` (a decide result, a simulation-frame row or ``{key: value}``) adds ``$feature/<key>`` and
    ``$active_feature_flags`` unless ``properties`` already has them; ``groups`` becomes ``$groups``. Bad
    input raises ``EventError`` before anything is sent. With an ``AsyncClient`` use ``acapture_event``.
    """
    body = _event_with_flags(
        event, distinct_id, properties, flags=flags, timestamp=timestamp, uuid=uuid, groups=groups
    )

    async def send() -> str:
        await post_event(client, body)
        return str(body["uuid"])

    return run_blocking(client, send(), "acapture_event")

"""Bulk capture: a DataFrame of events through ``/batch/``, batched, gzipped, concurrent, retried, reported.

Every event carries a uuid before anything is sent, and the service keeps one event per uuid. By default the
uuid is derived from the call's run key and the row (its index label and content; ``capture._runs``), so a
batch re-sent after a timeout, and a frame sent again to resume an interrupted call, never doubles anything,
while two separate calls never merge two events. Each row of the input gets
exactly one row in the report: ``sent``, ``refused`` (by local checks or by the service, with the reason),
``failed`` (the batch kept failing after the retries, or was cut off in flight) or ``not_attempted`` (the
call was interrupted first). Ctrl-C (or cancelling the task) lets batches in flight finish (up to
``SETTLE_SECONDS``) and raises ``CaptureInterrupted`` carrying that report.
"""

from __future__ import annotations

import asyncio
import json
import threading
import warnings
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any

import numpy as np
import pandas as pd

from analytics_nb.capture._attribution import feature_properties
from analytics_nb.capture._events import (
    HISTORICAL_AGE,
    MAX_EVENT_BYTES,
    MAX_REQUEST_BYTES,
    UUID_POLICIES,
    PreparedFrame,
    UuidPolicy,
    build_event,
    message_bytes,
    missing_timestamp_warning,
    prepare_frame,
    too_big_reason,
)
from analytics_nb.capture._journal import CaptureJournalWarning, target_of
from analytics_nb.capture._runs import Plan, Resume, choose_run
from analytics_nb.capture._send import (
    core_of,
    is_retryable,
    post_batch,
    post_event,
    project_key,
    run_blocking,
)
from analytics_nb.capture._values import NAIVE_POLICIES, NaivePolicy, is_missing
from analytics_nb.client import (
    AnyApiClient,
    ApiClient,
    progress_enabled,
    run_interruptible,
)
from analytics_nb.errors import (
    AuthenticationError,
    CaptureInterrupted,
    PermissionDeniedError,
    PostHogError,
    QuotaLimitedError,
    RateLimitedError,
    ValidationError,
)

__all__ = [
    "DEFAULT_BATCH_BYTES",
    "DEFAULT_BATCH_SIZE",
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
SETTLE_SECONDS = 15.0
"""After an interrupt, how long batches already in flight may take to finish before they are cut off."""
IN_FLIGHT = (
    "interrupted while its batch was in flight: the service may or may not have stored it; sending the "
    "frame again is safe (the same uuid is de-duplicated)"
)
NOT_ATTEMPTED = "not sent: capture_frame stopped (interrupted, or an error) before this event's batch started"


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
    """State of one ``capture_frame`` call: per-row status, reason and batch number; shared with the
    calling thread, which reads it after an interrupt (``started``/``settled`` say how far the send got)."""

    def __init__(self, prepared: PreparedFrame, plan: Plan | None = None) -> None:
        n = prepared.n
        self.prepared = prepared
        self.plan = plan or Plan()
        self.status: list[str | None] = [None] * n
        self.reason: list[str | None] = [None] * n
        self.batch: list[int | None] = [None] * n
        self.fatal: PostHogError | None = None
        self.interrupted = False
        self.sync_caller = False  # a sync Client's caller builds the report after an interrupt
        self.resumed = False  # the call resumed an earlier run (the same uuids)
        self.started = threading.Event()
        self.settled = threading.Event()
        for pos, why in prepared.refused.items():
            self.status[pos] = "refused"
            self.reason[pos] = why
        for pos, why in self.plan.already.items():
            self.status[pos] = "already_sent"
            self.reason[pos] = why

    def mark(self, positions: list[int], status: str, reason: str | None, batch: int | None) -> None:
        for pos in positions:
            self.status[pos] = status
            self.reason[pos] = reason
            self.batch[pos] = batch
        writer = self.plan.writer
        if writer is not None and status in ("sent", "refused"):  # the journal: what the service answered
            slots = [self.plan.slot_of[p] for p in positions if p in self.plan.slot_of]
            writer.settle(slots, "s" if status == "sent" else "r")

    def mark_open(self, positions: list[int], status: str, reason: str, batch: int) -> None:
        """Mark the positions that have no outcome yet (a split batch may have settled some)."""
        self.mark([p for p in positions if self.status[p] is None], status, reason, batch)


async def _deliver(
    client: AnyApiClient,
    run: _Run,
    key: str,
    batch_no: int,
    positions: list[int],
    events_json: bytes | None,
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
    if run.interrupted:  # no new request (a split half, a retry round) after an interrupt
        run.mark_open(positions, "not_attempted", NOT_ATTEMPTED, batch_no)
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


def _unicode_problem(text: str) -> str | None:
    """The reason an encoded event is not valid Unicode (a lone surrogate escaped as ``\\udXXX``), or None.
    A safety net behind the per-value checks: such text makes the service refuse the whole batch."""
    if "\\ud" not in text and "\\uD" not in text:
        return None
    try:
        json.dumps(json.loads(text), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return (
            "the event holds text with a lone surrogate (half of a UTF-16 pair), which is not valid "
            "Unicode and makes the service refuse the whole batch; repair the text first"
        )
    return None


async def _settle(run: _Run, tasks: list[asyncio.Task[None]]) -> None:
    """After an interrupt: let batches in flight finish (up to ``SETTLE_SECONDS``), then cut off the rest;
    their rows are marked (``failed`` with the in-flight reason) by the batch tasks themselves."""
    run.interrupted = True
    pending = [t for t in tasks if not t.done()]
    if pending:
        _done, pending_set = await asyncio.wait(pending, timeout=SETTLE_SECONDS)
        for task in pending_set:
            task.cancel()
        if pending_set:
            await asyncio.wait(pending_set, timeout=5.0)


async def _send_prepared(client: AnyApiClient, run: _Run | PreparedFrame, **sending: Any) -> _Run:
    """Send every row of ``run`` that is not refused; returns ``run`` (a ``PreparedFrame`` gets one).
    ``sending``: `_send_batches`'s keyword arguments (batch size and bytes, concurrency, gzip, historical,
    progress, attempts)."""
    if isinstance(run, PreparedFrame):
        run = _Run(run)
    run.started.set()
    try:
        await _send_batches(client, run, **sending)
    finally:
        run.settled.set()
    return run


async def _send_batches(
    client: AnyApiClient,
    run: _Run,
    *,
    batch_size: int,
    max_batch_bytes: int,
    concurrency: int,
    gzip: bool,
    historical: bool,
    progress: bool | None,
    attempts: int,
) -> None:
    prepared = run.prepared
    todo = [pos for pos in range(prepared.n) if run.status[pos] is None]
    if not todo:
        return
    key = await project_key(client)
    bar = _progress(progress, client, prepared.n, -(-len(todo) // batch_size))
    if bar is not None and len(todo) < prepared.n:
        bar.update(prepared.n - len(todo))
    sem = asyncio.Semaphore(concurrency)
    tasks: list[asyncio.Task[None]] = []
    batch_no = 0

    async def one(number: int, positions: list[int], events_json: bytes | None) -> None:
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
        except asyncio.CancelledError:
            run.mark_open(positions, "failed", IN_FLIGHT, number)
            raise
        finally:
            sem.release()
            if bar is not None:
                bar.update(len(positions))

    async def flush(positions: list[int], events_json: bytes | None) -> None:
        nonlocal batch_no
        await sem.acquire()
        tasks.append(asyncio.create_task(one(batch_no, positions, events_json)))
        batch_no += 1
        await asyncio.sleep(0)  # let the new request start before encoding the next batch

    try:
        for start in range(0, len(todo), batch_size):
            chunk = todo[start : start + batch_size]
            text = prepared.encode_many(chunk)
            if _plain_batch(text, max_batch_bytes):
                # fast path: one encoder call, no event can be over the limit, all text plain Unicode
                await flush(chunk, text)
            else:
                await _pack_one_by_one(run, chunk, bar, max_batch_bytes, flush)
        if tasks:
            # asyncio.wait, not gather: cancelling this call must not cancel the batches in flight (they
            # are settled below so that their outcome is known)
            await asyncio.wait(tasks)
        for task in tasks:
            task.result()  # an unexpected error inside a batch task is not swallowed
    except BaseException:
        await _settle(run, tasks)
        raise
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()
        if bar is not None:
            bar.close()


def _plain_batch(text: bytes, max_batch_bytes: int) -> bool:
    """Whether a batch encoded in one call can be sent as it is: within the batch bytes, no event over the
    per-event limit, no escaped surrogate. The whole batch's queue-message size bounds each event's;
    `json` spells floats at most 1.25x orjson's bytes (`1e-05` for `1e-5`), so a quarter is added before
    comparing with the limit."""
    bound = message_bytes(text)
    return (
        len(text) <= max_batch_bytes
        and bound + bound // 4 <= MAX_EVENT_BYTES
        and b"\\ud" not in text
        and b"\\uD" not in text
    )


async def _pack_one_by_one(
    run: _Run,
    chunk: list[int],
    bar: Any,
    max_batch_bytes: int,
    flush: Callable[[list[int], bytes | None], Awaitable[None]],
) -> None:
    """Large events or escaped surrogates: encode one by one, refuse what the service would refuse (over
    the per-event limit, invalid Unicode), pack the rest by bytes."""
    positions: list[int] = []
    size = 2
    for pos in chunk:
        one_text = run.prepared.encode(pos)
        n_bytes = len(one_text)
        n_message = message_bytes(one_text)
        problem = too_big_reason(n_message) if n_message > MAX_EVENT_BYTES else _unicode_problem(one_text)
        if problem is not None:
            run.mark([pos], "refused", problem, None)
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


def _str_dtype() -> Any:
    """pandas' ``str`` dtype kept in Python storage: with pyarrow installed pandas 3 stores ``str`` in Arrow,
    which cannot hold a lone surrogate, and the report echoes the (refused) names and ids as given."""
    try:
        return pd.StringDtype("python", na_value=np.nan)
    except TypeError:  # pandas < 2.3: no na_value, no "str" default
        return "str"


def _report(df: pd.DataFrame, run: _Run, historical: bool) -> pd.DataFrame:
    prepared = run.prepared
    names = [v if type(v) is str else _text(v) for v in prepared.names]
    dids = [v if type(v) is str else _text(v) for v in df["distinct_id"].to_numpy(dtype=object).tolist()]
    unset = "not_attempted" if run.interrupted else "failed"
    status = [s if s is not None else unset for s in run.status]
    reason = [
        r
        if r is not None or s == "sent"
        else (NOT_ATTEMPTED if run.interrupted else "not sent (internal error: no outcome recorded)")
        for r, s in zip(run.reason, run.status, strict=True)
    ]
    text = _str_dtype()
    report = pd.DataFrame(
        {
            "uuid": pd.array(prepared.uuids, dtype=text),
            "event": pd.array(names, dtype=text),
            "distinct_id": pd.array(dids, dtype=text),
            "status": pd.array(status, dtype=text),
            "reason": pd.array(reason, dtype=text),
            "batch": pd.array(run.batch, dtype="Int64"),
        },
        index=df.index,
    )
    report.attrs["historical_migration"] = historical
    report.attrs["counts"] = {k: int(v) for k, v in report["status"].value_counts().items()}
    report.attrs["interrupted"] = run.interrupted
    report.attrs["run_key"] = prepared.run_key
    report.attrs["resumed"] = run.resumed
    return report


def _remember(client: AnyApiClient, report: pd.DataFrame, run: _Run) -> None:
    """Keep the last report on the client (``client.last_capture_report``), interrupted or not (the run's
    rows and outcomes are in the journal, written as the answers came)."""
    client.last_capture_report = report
    writer = run.plan.writer
    if writer is not None and writer.failed:
        report.attrs["journal"] = writer.failed
        warnings.warn(
            f"{writer.failed}: a re-run of this call in a new kernel may not know what was stored; "
            f"finish it with resume={report.attrs.get('run_key')!r} (the same uuids), not again=True",
            CaptureJournalWarning,
            stacklevel=2,
        )


def _how_to_finish(run_key: str | None) -> str:
    if run_key is None:
        return "send only the rest: df[report['status'] != 'sent'] (the rows' own or random uuids)."
    return (
        "same capture_frame(df) again, in this kernel or a new one (the journal resumes this run: the same "
        f"uuids, nothing doubled), or capture_frame(df, resume={run_key!r}) for a rebuilt frame."
    )


def _interrupted(report: pd.DataFrame) -> CaptureInterrupted:
    counts = report.attrs.get("counts", {})
    parts = ", ".join(
        f"{counts.get(k, 0):,} {k.replace('_', ' ')}" for k in ("sent", "failed", "refused", "not_attempted")
    )
    return CaptureInterrupted(
        f"capture_frame was interrupted: {parts} (batches in flight were let finish, so 'sent' is exact). "
        "The report is on this exception's .report and on client.last_capture_report. To finish, run the "
        + _how_to_finish(report.attrs.get("run_key")),
        report=report,
    )


def _options(
    batch_size: int | None,
    max_batch_bytes: int,
    concurrency: int,
    on_naive_timestamp: str,
    attempts: int,
    uuids: str = "content",
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
    if on_naive_timestamp not in NAIVE_POLICIES:
        raise ValueError(
            f"on_naive_timestamp={on_naive_timestamp!r} must be 'local' (the kernel's time zone, the "
            "default), 'utc' or 'raise'"
        )
    if uuids not in UUID_POLICIES:
        raise ValueError(
            f"uuids={uuids!r} must be 'content' (derived from each row, the default) or 'random'"
        )
    if attempts < 1:
        raise ValueError(f"batch_attempts={attempts} must be at least 1")
    return int(size)


def _historical(prepared: PreparedFrame, historical_migration: bool | None) -> bool:
    if historical_migration is None:
        return prepared.all_older_than(HISTORICAL_AGE)
    return bool(historical_migration)


def _target(client: AnyApiClient, key: str | None) -> str | None:
    """The journal's name of the project the events go to (host + a digest of the key), or None."""
    return None if key is None else target_of(core_of(client).config.ingest_url, key)


def needs_key(prepared: PreparedFrame) -> bool:
    """Whether choosing the run needs the project key (rows with a content identity to journal)."""
    return prepared.content and bool(prepared.identified())


def _prepare_run(
    client: AnyApiClient, prepared: PreparedFrame, options: dict[str, Any], key: str | None
) -> _Run:
    """Choose the run of the prepared frame (``_runs.choose_run``, from the journal of the project ``key``
    sends to) and warn about what the caller should know: a resumed run, rows already sent, events without
    a timestamp (in the caller's thread: the warnings point at the caller's line)."""
    plan = choose_run(prepared, options["resume"], again=options["again"], target=_target(client, key))
    if plan.warning is not None:
        warnings.warn(plan.warning, stacklevel=4)
    missing = prepared.missing_timestamps()
    if missing:
        warnings.warn(missing_timestamp_warning(missing, prepared.n - len(prepared.refused)), stacklevel=4)
    run = _Run(prepared, plan)
    run.resumed = plan.resumed
    return run


async def _acapture_run(
    client: AnyApiClient, df: pd.DataFrame, run: _Run, *, historical: bool, **sending: Any
) -> pd.DataFrame:
    """Send (``sending``: `_send_batches`'s other keyword arguments) and report; when cancelled (the async
    form of Ctrl-C) the report of what was settled is left on ``client.last_capture_report`` before the
    cancellation goes on."""
    try:
        await _send_prepared(client, run, historical=historical, **sending)
    except BaseException:
        run.interrupted = True
        if not run.sync_caller:  # the sync caller reports itself (one report object, no race)
            _remember(client, _report(df, run, historical), run)
        raise
    report = _report(df, run, historical)
    _remember(client, report, run)
    return report


def _check(df: pd.DataFrame, options: dict[str, Any]) -> PreparedFrame:
    """Check the options (``capture_frame``'s keyword arguments by name) and prepare the frame."""
    _options(
        options["batch_size"],
        options["max_batch_bytes"],
        options["concurrency"],
        options["on_naive_timestamp"],
        options["batch_attempts"],
        options["uuids"],
    )
    if not isinstance(options["again"], bool):
        raise TypeError(f"again={options['again']!r} must be True or False")
    return prepare_frame(
        df, on_naive_timestamp=options["on_naive_timestamp"], uuids=options["uuids"], derive=False
    )


def _begin(
    client: AnyApiClient, df: pd.DataFrame, options: dict[str, Any], prepared: PreparedFrame, key: str | None
) -> tuple[_Run, bool, Coroutine[Any, Any, pd.DataFrame]]:
    """What both forms of `capture_frame` do before anything is sent, in the caller's thread, once the
    frame is prepared (``_check``) and the project key known: choose the run (warnings point at the
    caller's line), and the coroutine that sends and reports."""
    size = _options(
        options["batch_size"],
        options["max_batch_bytes"],
        options["concurrency"],
        options["on_naive_timestamp"],
        options["batch_attempts"],
        options["uuids"],
    )
    run = _prepare_run(client, prepared, options, key)
    historical = _historical(run.prepared, options["historical_migration"])
    coro = _acapture_run(
        client,
        df,
        run,
        historical=historical,
        batch_size=size,
        max_batch_bytes=options["max_batch_bytes"],
        concurrency=options["concurrency"],
        gzip=options["gzip"],
        progress=options["progress"],
        attempts=options["batch_attempts"],
    )
    return run, historical, coro


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
    on_naive_timestamp: NaivePolicy = "local",
    batch_attempts: int = 2,
    uuids: UuidPolicy = "content",
    resume: Resume = None,
    again: bool = False,
) -> pd.DataFrame:
    """Send a DataFrame of events through ``/batch/`` and return a report with one row per event (same index).

    Columns: ``event`` and ``distinct_id`` (required), optional ``timestamp`` and ``uuid``, a ``properties``
    column of dicts and/or one column per property, ``group:<type>`` columns for ``$groups``. Missing values
    are dropped from properties. Naive datetimes are read in the kernel's local time zone, as the official
    SDK reads ``datetime.now()`` (``on_naive_timestamp="utc"`` takes them as UTC, ``"raise"`` refuses them).

    Exactly once across kernel deaths, never merged: a run journal on disk (``capture._journal``: the
    user's cache folder, digests only) records each run's rows by content identity (the fields sent, not
    the index label) and what the service acknowledged. Rows without a ``uuid`` get one derived from the
    run key and their slot (the k-th row of its event/distinct_id/timestamp in the run), so a retry, a
    resume in any kernel and two identical rows (two slots) all come out right. ``resume=None`` resumes an
    unfinished run of this project holding any row of the call (after a kernel death, Ctrl-C or failed
    batches) with a ``ResumedRunWarning``; rows a finished run stored are not sent again (status
    ``already_sent``, ``AlreadySentWarning`` "all N rows were sent at T"); ``again=True`` sends every row
    as new events; ``resume=report`` (or its run key) finishes that run, matching rows by content (see
    ``capture._runs``). Events without a timestamp get a ``MissingTimestampWarning``: the service stamps
    them on arrival. ``uuids="random"`` gives fresh UUIDv7s instead (no journal).
    Rows the service would refuse (empty name or id, a name or id over 200 characters, over the service's
    1,000,000-byte per-event limit, infinite numbers, text that is not valid
    Unicode, nesting deeper than ``MAX_NESTING``) are refused here with the reason; the rest go on.

    Batches hold at most ``batch_size`` (1000) events and ``max_batch_bytes`` (5 MB) of JSON, ``concurrency``
    are in flight at once. ``historical_migration=None`` sets the flag when every event is over 48 h old.
    Report columns: uuid, event, distinct_id, status (sent/already_sent/refused/failed/not_attempted),
    reason, batch;
    ``report.attrs["run_key"]`` names the run; it is also kept as ``client.last_capture_report``. Ctrl-C lets
    batches in flight finish and raises ``CaptureInterrupted`` (a ``KeyboardInterrupt``) whose ``.report``
    says what was sent, failed and not attempted. With an ``AsyncClient`` use ``await acapture_frame(...)``.

    Args:
        client: The sync ``Client`` that sends the events.
        df: One row per event (columns above); the frame is not modified.
        batch_size: Events per request. None: 1,000, fewer when ``max_batch_bytes`` is reached first.
        max_batch_bytes: Size cap of one request body before compression (default 5 MB; the service takes 20
            MB).
        concurrency: Requests in flight at once.
        gzip: Compress request bodies (less upload, a little CPU).
        historical_migration: Send batches as a historical import. None: automatic, True when every event has
            a timestamp at least 48 hours old.
        progress: Show a ``tqdm`` bar. None: when there is more than one batch and tqdm is enabled.
        on_naive_timestamp: How naive datetimes are read: ``"local"`` (the kernel's zone), ``"utc"`` or
            ``"raise"``.
        batch_attempts: Rounds of the client's retries for each batch before it is reported ``failed``.
        uuids: ``"content"`` derives uuids from the run and each row (a resume never doubles); ``"random"``
            gives fresh UUIDv7s.
        resume: A report (or its ``run_key``) whose run to finish (rows matched by content); False: a new
            run (as ``again=True``); None: resume an unfinished run of this project from the journal.
        again: Send every row as new events in a new run, even rows the journal shows already stored
            (by default those are reported ``already_sent`` and not sent).

    Returns:
        The report: one row per input row (same index) with ``uuid``, ``event``, ``distinct_id``, ``status``
            (``sent``, ``already_sent``, ``refused``, ``failed``, ``not_attempted``), ``reason`` and
            ``batch``; ``report.attrs`` holds ``run_key``, ``resumed``, ``counts`` and
            ``historical_migration``.

    Raises:
        CaptureInterrupted: Ctrl-C; its ``.report`` says what was sent.
        ValueError: ``df`` lacks ``event`` or ``distinct_id``, or a ``distinct_id`` column is float.
    """
    options = {
        "batch_size": batch_size,
        "max_batch_bytes": max_batch_bytes,
        "concurrency": concurrency,
        "gzip": gzip,
        "historical_migration": historical_migration,
        "progress": progress,
        "on_naive_timestamp": on_naive_timestamp,
        "batch_attempts": batch_attempts,
        "uuids": uuids,
        "resume": resume,
        "again": again,
    }
    if not isinstance(client, ApiClient):
        return run_blocking(client, project_key(client), "acapture_frame")  # raises: use acapture_frame
    prepared = _check(df, options)
    key = client.run(project_key(client)) if needs_key(prepared) else None
    run, historical, coro = _begin(client, df, options, prepared, key)
    run.sync_caller = True

    def stop() -> None:
        run.interrupted = True  # no new request while the batches in flight settle

    def report_interrupted(_: KeyboardInterrupt) -> pd.DataFrame:
        report = _report(df, run, historical)
        _remember(client, report, run)
        raise _interrupted(report) from None

    # Ctrl-C is handled in one place (client.run_interruptible): the loop cancels the send, the batches in
    # flight settle (a second Ctrl-C stops waiting), then the report says what happened.
    return run_interruptible(
        client,
        coro,
        run,
        settle_seconds=SETTLE_SECONDS + 10,
        on_interrupt=report_interrupted,
        before_wait=stop,
    )


async def _acapture_frame(**options: Any) -> pd.DataFrame:
    """`capture_frame` for async code and `AsyncClient` (either client).

    Cancelling it lets batches in flight settle, leaves the report on ``client.last_capture_report`` and
    re-raises."""
    client, df = options.pop("client"), options.pop("df")
    prepared = _check(df, options)
    key = await project_key(client) if needs_key(prepared) else None
    _, _, coro = _begin(client, df, options, prepared, key)
    return await coro


def _event_with_flags(
    event: str, distinct_id: Any, properties: Mapping[str, Any] | None, *, flags: Any, **fields: Any
) -> dict[str, Any]:
    """The event body: ``properties`` with the attribution of ``flags`` added (the event's own wins, as in
    `attribute`); ``fields`` (timestamp, uuid, groups) go to `build_event`, which checks everything."""
    props = dict(properties or {})
    if flags is not None:
        for name, value in feature_properties(flags).items():
            props.setdefault(name, value)
    return build_event(event, distinct_id, props, **fields)


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

    Args:
        client: The sync ``Client`` that sends the event (its project API key authenticates the capture).
        event: The event name, e.g. ``"checkout_started"``; empty names and names over 200 characters are
            refused.
        distinct_id: The person: text or a whole number (sent as its digits); a float is refused, since
            ``1.0`` would be another person than ``"1"``.
        properties: Event properties; missing values (None/NA/NaN) are dropped. None: no properties.
        flags: Flag outcomes to attribute: a decide result, a simulation-frame row or ``{key: value}``; adds
            ``$feature/<key>`` and ``$active_feature_flags``. None: no attribution.
        timestamp: When the event happened (datetime, pandas Timestamp or ISO text); naive values are read in
            the kernel's local time zone. None: the service stamps it on arrival.
        uuid: The event's uuid, which the service keeps once (a retry is not doubled). None: a new UUIDv7.
        groups: ``{group type: group key}``, sent as ``$groups``. None: no groups.

    Returns:
        The uuid the event was sent with.

    Raises:
        EventError: The event is malformed (nothing is sent).
        PostHogError: The service refused the event or could not be reached after retries.
    """
    body = _event_with_flags(
        event, distinct_id, properties, flags=flags, timestamp=timestamp, uuid=uuid, groups=groups
    )
    return run_blocking(client, _post(client, body), "acapture_event")


async def _post(client: AnyApiClient, body: dict[str, Any]) -> str:
    await post_event(client, body)
    return str(body["uuid"])


async def _acapture_event(**arguments: Any) -> str:
    """`capture_event` for async code and `AsyncClient` (either client): one event through ``/capture/``."""
    client = arguments.pop("client")
    return await _post(client, _event_with_flags(**arguments))

"""Remote simulation: one decide per property set, concurrent from one event loop, retried by the client core.

One failing row never loses the others: its ``error`` cell says why and its flags are NA.

Requests go to ``/flags/?v=4`` as posthog-python 7.91.1 posts them (``request.py`` ``flags()``); a flag the
service could not evaluate comes back ``failed: true`` (since Feb 2026) and is NA with its reason (the
``:reason`` column and the ``error`` text), never False; a run that met any says how many
(`FailedFlagsWarning`). With the legacy ``/decide/?v=3`` (``endpoint="decide"``) the service writes such a
flag as plain ``false`` beside ``errorsWhileComputingFlags: true``, so every ``false`` of that row is NA.

Before a long run (over ``ESTIMATE_MIN_ROWS`` rows) the rate is measured on the first ``PROBE_ROWS`` answers
(part of the result, never sent twice) and an estimate line is printed; past ``warn_minutes`` a
`LongRunWarning` says so. The rows answered are written into a list the caller owns, so an interrupted run
(Ctrl-C, a cancelled task) still has them.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import sys
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd

from analytics_nb.client import (
    AdaptiveLimit,
    Core,
    check_runtime,
    decide_body,
    loads_json,
    note_rate_limit_warning,
)
from analytics_nb.client._core import encode_json
from analytics_nb.simulation._errors import LongRunWarning, SimulationInputError
from analytics_nb.simulation._inputs import PropertySets
from analytics_nb.simulation._output import build_frame
from analytics_nb.wire.cells import json_default

__all__ = [
    "ADAPTIVE",
    "ADAPTIVE_CEILING",
    "ADAPTIVE_START",
    "DEFAULT_CONCURRENCY",
    "ENDPOINTS",
    "ESTIMATE_MIN_ROWS",
    "LOOPBACK_CONCURRENCY",
    "PROBE_ROWS",
    "WARN_MINUTES",
    "FailedFlagsWarning",
    "FilteredFlagsWarning",
    "RemoteRow",
    "RunEstimate",
    "Runtime",
    "check_remote_runtime",
    "decide_rows",
    "default_concurrency",
    "parse_response",
    "remote_frame",
    "runtime_filtered",
    "warn_runtime_filtered",
    "with_estimate",
]

ADAPTIVE = 0
"""``concurrency`` value meaning "adapt" (the default, what `default_concurrency` gives): the number of
requests in flight follows measured throughput, latency and 429s (``client/_pacing.py``,
`AdaptiveLimit.adapt`) between 1 and `ADAPTIVE_CEILING`, starting at `ADAPTIVE_START`."""

ADAPTIVE_CEILING = 256
"""The most requests an adaptive run keeps in flight (and connections it may open). The Rust flags service
limits a client IP to 50 requests/s sustained with a 1000 burst (posthog-notes §5.6): past that it answers
429, and the window halves and pauses for ``Retry-After``; the ceiling only bounds the client's own cost."""

ADAPTIVE_START = 32
"""Requests in flight when an adaptive run begins: what a 32-thread pool sends at once (the baseline an
analyst writes), far under the flags service's per-IP burst of 1000 (`FLAGS_IP_BURST_SIZE`,
`rust/feature-flags/src/config.rs`). In slow start it doubles every round trip while latency holds (32, 64,
... 256 in four round trips at 100 ms). At 16 a 600-row run at 100 ms took one round trip more: 1.99x the
best 32-thread pool instead of the 2x issue 35 asks for (bench/simulate.py, quiet machine)."""

DEFAULT_CONCURRENCY = 10
"""The former fixed default (10 in flight), kept as a name for callers; ``concurrency=10`` gives it."""

LOOPBACK_CONCURRENCY = 4
"""The former fixed default against a server on this machine; adaptive runs find it by themselves."""

ESTIMATE_MIN_ROWS = 2000
"""Remote runs over this many rows get an estimate of their duration (measured on their first rows)."""

PROBE_ROWS = 200
"""The estimate is measured on the first this-many answered rows (about a second on a real network)."""

WARN_MINUTES = 10.0
"""Default ``warn_minutes``: a remote run expected to take longer raises a `LongRunWarning`."""

logger = logging.getLogger("analytics_nb.simulation")

PARTIAL_ERROR = "errorsWhileComputingFlags: the service could not compute some flags for this row"
LEGACY_FALSE = "errorsWhileComputingFlags: the legacy /decide map writes a failed flag as false"

#: Where the remote engine sends each row: ``/flags/?v=4`` by default, ``/decide/?v=3`` on request.
ENDPOINTS = {"flags": ("/flags/", "4"), "decide": ("/decide/", "3")}


class FailedFlagsWarning(UserWarning):
    """The service could not evaluate some flags of some rows (``failed: true``): those cells are NA with
    the reason in the ``error`` column (and the ``:reason`` column); re-running those rows may answer."""


Runtime = Literal["server", "client"]


def check_remote_runtime(runtime: Any) -> str:
    """``runtime=`` of `simulate` checked ("server" or "client"), refused with a `SimulationInputError`."""
    try:
        return check_runtime(runtime)
    except ValueError as exc:
        raise SimulationInputError(str(exc), key="runtime") from None


class FilteredFlagsWarning(UserWarning):
    """Flags the service leaves out of its answer for the runtime the run asks as (their
    ``evaluation_runtime`` is the other one): their cells are NA. ``runtime="client"`` shows what browsers
    get, ``runtime="server"`` (the default) what server SDKs get."""


def runtime_filtered(
    flags: Sequence[Mapping[str, Any]], keys: Sequence[str] | None, runtime: str
) -> list[str]:
    """Keys (of ``keys``, or of every flag) whose ``evaluation_runtime`` is "server" or "client" and not
    ``runtime``: the service leaves them out (`collect_excluded_by_runtime` in
    `rust/feature-flags/src/handler/flags.rs`; any other value counts as "all")."""
    wanted = None if keys is None else set(keys)
    out = []
    for flag in flags:
        scope = str(flag.get("evaluation_runtime") or "all").lower()
        if scope in ("server", "client") and scope != runtime and (wanted is None or flag["key"] in wanted):
            out.append(str(flag["key"]))
    return out


def warn_runtime_filtered(
    flags: Sequence[Mapping[str, Any]], keys: Sequence[str] | None, runtime: str
) -> None:
    """One `FilteredFlagsWarning` naming the flags the service answers only to the other runtime."""
    filtered = runtime_filtered(flags, keys, runtime)
    if not filtered:
        return
    other = "client" if runtime == "server" else "server"
    named = ", ".join(repr(k) for k in filtered[:10]) + (" ..." if len(filtered) > 10 else "")
    warnings.warn(
        f"{len(filtered)} flag(s) have evaluation_runtime '{other}' ({named}): PostHog answers them only to "
        f"{other} callers, so asked as runtime='{runtime}' they are left out and NA here. Pass "
        f"runtime='{other}' to see what {'browsers and mobile apps' if other == 'client' else 'server SDKs'} "
        "get.",
        FilteredFlagsWarning,
        stacklevel=4,
    )


@dataclass
class RemoteRow:
    """What one decide answered for one row: flag values, payloads, reasons, and an error text or None."""

    values: dict[str, Any] = field(default_factory=dict)
    payloads: dict[str, Any] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    condition_index: dict[str, int | None] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    """Flags the service could not evaluate, with why (``code: description``); their values are NA."""
    error: str | None = None
    partial: bool = False


def _payload_text(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value)


def default_concurrency(core: Core) -> int:
    """`ADAPTIVE` for every host: the number in flight is measured, not guessed from the host name (the
    former defaults, 10 for a real service and 4 on loopback, were far too few at 20-100 ms latency)."""
    del core
    return ADAPTIVE


def _record_value(d: dict[str, Any]) -> Any:
    """A record's value: the typed ``value`` (``/flags?v>=3``) or the variant / ``enabled`` (v2 records)."""
    if "value" in d and "enabled" not in d:
        return d.get("value") if d.get("value") is not None else False
    enabled = bool(d.get("enabled"))
    variant = d.get("variant")
    return variant if enabled and variant is not None else enabled


def _failure_text(reason: dict[str, Any]) -> str:
    parts = [str(t) for t in (reason.get("code"), reason.get("description")) if t]
    return ": ".join(parts) or "no reason given"


_NO_REASON: dict[str, Any] = {}


def _read_details(row: RemoteRow, details: dict[str, Any]) -> None:
    """Read a ``flags`` map into ``row`` (once per answered row: local names, one lookup per field)."""
    values, reasons, index, payloads = row.values, row.reasons, row.condition_index, row.payloads
    for key, d in details.items():
        if not isinstance(d, dict):
            continue
        key = str(key)
        reason = d.get("reason") or _NO_REASON
        code = reason.get("code")
        if code is not None:
            reasons[key] = code if isinstance(code, str) else str(code)
        index[key] = reason.get("condition_index")
        if d.get("failed"):  # `enabled: false` / `value: null` here is no answer: NA with the reason
            row.failed[key] = _failure_text(reason)
            continue
        value = _record_value(d)
        values[key] = value
        if value is not False:
            meta = d.get("metadata")
            payload = meta.get("payload") if meta else None
            if payload is not None:
                payloads[key] = _payload_text(payload)


def _read_legacy(row: RemoteRow, data: dict[str, Any], errors: bool) -> None:
    flags = data.get("featureFlags")
    if isinstance(flags, list):
        flags = {str(k): True for k in flags}
    for key, value in (flags or {}).items():
        if errors and value is False:  # a failed flag or a real false: the map cannot tell
            row.failed[str(key)] = LEGACY_FALSE
            continue
        row.values[str(key)] = value
    for key, value in (data.get("featureFlagPayloads") or {}).items():
        if value is not None:
            row.payloads[str(key)] = _payload_text(value)


def parse_response(data: Any, *, detailed: bool = True) -> RemoteRow:
    """Read a ``/flags`` (typed ``v=4`` or ``v=2`` records) or legacy ``/decide?v=3`` JSON body into a
    `RemoteRow`; ``detailed`` is kept for callers, the shape is read from the body itself."""
    row = RemoteRow()
    if not isinstance(data, dict):
        row.error = f"the service answered with {type(data).__name__} instead of a JSON object"
        return row
    errors = bool(data.get("errorsWhileComputingFlags") or data.get("errorComputingFlags"))
    quota = data.get("quotaLimited") or []
    details = data.get("flags")
    if isinstance(details, dict):
        _read_details(row, details)
    else:
        _read_legacy(row, data, errors)
    if "feature_flags" in quota:
        row.error = (
            "quota limited: the project is over its feature-flag quota, so the service returned no flags"
        )
    elif errors or row.failed:
        row.partial = True
        row.error = PARTIAL_ERROR
    return row


def _request_body(
    token: str, request: dict[str, Any], flag_keys: list[str] | None = None, runtime: str = "server"
) -> tuple[dict[str, Any], str | None]:
    ip = request["ip"] or None
    body = decide_body(
        token,
        request["distinct_id"],
        groups=request["groups"] or None,
        person_properties=request["person_properties"] or None,
        group_properties=request["group_properties"] or None,
        flag_keys=flag_keys,  # only these (and what they depend on) are evaluated by the service
        geoip_disable=ip is None,  # else the service geolocates the caller's own address into every row
        evaluation_runtime=runtime,  # else runtime-scoped flags are left out (client.RUNTIMES says why)
    )
    return body, ip


def _read_json(status: int, content: bytes, *, detailed: bool) -> RemoteRow:
    try:
        data = loads_json(content)
    except ValueError:
        return RemoteRow(error=f"HTTP {status}: the service answered with a body that is not JSON")
    return parse_response(data, detailed=detailed)


_JSON_HEADERS = {"Content-Type": "application/json"}


def _orjson_dumps() -> Any:
    try:
        import orjson
    except ImportError:
        return None
    # datetimes and subclasses of str/int/dict/list go to `json_default`, as with the standard library
    option = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS
    return functools.partial(orjson.dumps, default=json_default, option=option)


_DUMPS = _orjson_dumps()


def _encode(body: dict[str, Any]) -> bytes:
    """A request body as JSON bytes: through orjson (the ``fast`` extra) when installed, 1 µs instead of
    about 20 (NaN and infinities are null there as in `encode_json`); what orjson refuses (an integer past
    64 bits, nesting past 254 levels, an unknown type) goes to `encode_json`, whose answer or error stands."""
    if _DUMPS is not None:
        try:
            return _DUMPS(body)  # type: ignore[no-any-return]
        except TypeError:  # orjson.JSONEncodeError is a TypeError
            pass
    return encode_json(body)


async def _decide_one(
    core: Core,
    token: str,
    request: dict[str, Any],
    *,
    detailed: bool,
    flag_keys: list[str] | None = None,
    pacer: AdaptiveLimit | None = None,
    endpoint: str = "flags",
    runtime: str = "server",
) -> RemoteRow:
    body, ip = _request_body(token, request, flag_keys, runtime)
    headers = {"Content-Type": "application/json", "X-Forwarded-For": ip} if ip else _JSON_HEADERS
    path, version = ENDPOINTS[endpoint]
    response = await core.request(
        "POST",
        path,
        service="ingest",
        params={"v": version},
        content=_encode(body),
        headers=headers,
        idempotent=True,
        auth=False,
        pacer=pacer,
    )
    note_rate_limit_warning(core, response.headers)  # once per client: 429s come next
    return _read_json(response.status_code, response.content, detailed=detailed)


def _duration(seconds: float) -> str:
    minutes = seconds / 60
    if minutes >= 1:
        return f"{minutes:,.0f} min"
    return f"{max(seconds, 1):,.0f} s"


class RunEstimate:
    """A progress bar wrapper that measures the rate on the first ``probe_rows`` rows and then, once, prints
    the estimate (``1,000,000 rows at ~850 rows/s ≈ 20 min``) and warns past ``warn_minutes``.

    ``line`` keeps the printed estimate, ``minutes`` the expected duration (None until measured).
    """

    def __init__(
        self,
        bar: Any,
        total: int,
        *,
        warn_minutes: float | None = WARN_MINUTES,
        probe_rows: int | None = None,
        stream: Any = None,
    ) -> None:
        self.bar = bar
        self.total = total
        self.warn_minutes = warn_minutes
        self.probe_rows = max(1, min(probe_rows or PROBE_ROWS, total))
        self.stream = stream
        self.done = 0
        self.started = time.perf_counter()
        self.line: str | None = None
        self.minutes: float | None = None

    def update(self, n: int = 1) -> None:
        """Count ``n`` answered rows; the first time ``probe_rows`` are in, report the estimate."""
        self.bar.update(n)
        self.done += n
        if self.line is None and self.done >= self.probe_rows:
            self.report(time.perf_counter() - self.started)

    def report(self, elapsed: float) -> None:
        """Print (and log) the estimate from ``done`` rows in ``elapsed`` seconds; warn past the threshold."""
        rate = self.done / max(elapsed, 1e-6)
        seconds = self.total / rate
        self.minutes = seconds / 60
        self.line = (
            f"decide: {self.total:,} rows at ~{rate:,.0f} rows/s ≈ {_duration(seconds)} "
            f"(measured on the first {self.done:,} rows)"
        )
        logger.info(self.line)
        set_description = getattr(self.bar, "set_description", None)
        if set_description is not None:
            set_description(f"decide ≈{_duration(seconds)}")
        # stdout: an estimate is a status line, and stderr shows red like an error in JupyterLab (issue 29 #7)
        write = getattr(self.bar, "write", None)  # tqdm.write keeps a terminal bar intact
        if write is not None:
            write(self.line, file=self.stream or sys.stdout)
        else:
            print(self.line, file=self.stream or sys.stdout, flush=True)
        if self.warn_minutes is not None and self.minutes > self.warn_minutes:
            warnings.warn(
                f"this remote simulation of {self.total:,} rows is expected to take about "
                f"{_duration(seconds)} (~{rate:,.0f} rows/s), over warn_minutes={self.warn_minutes:g}. "
                "Ctrl-C stops it and returns the rows done so far as a partial result (result.remaining "
                "holds the rest); a sample of the rows or engine='local' is much faster.",
                LongRunWarning,
                stacklevel=2,
            )

    def close(self) -> None:
        """Close the wrapped bar."""
        self.bar.close()


def with_estimate(bar: Any, total: int, *, warn_minutes: float | None = WARN_MINUTES) -> Any:
    """``bar`` wrapped in a `RunEstimate` when the run has over ``ESTIMATE_MIN_ROWS`` rows, else ``bar``."""
    if total > ESTIMATE_MIN_ROWS:
        return RunEstimate(bar, total, warn_minutes=warn_minutes)
    return bar


async def decide_rows(
    core: Core,
    requests: Sequence[dict[str, Any]],
    *,
    concurrency: int,
    detailed: bool,
    progress: Any,
    flag_keys: Sequence[str] | None = None,
    into: list[RemoteRow | None] | None = None,
    offset: int = 0,
    endpoint: str = "flags",
    runtime: str = "server",
) -> list[RemoteRow]:
    """Decide every request with at most ``concurrency`` in flight (`ADAPTIVE`: as many as the measured
    throughput and latency call for, up to `ADAPTIVE_CEILING`); exceptions become row errors.

    ``flag_keys``: ask the service for these flags only (``flag_keys_to_evaluate``): the user's ``flags``.
    ``into``: a list the answers are also written to (request ``i`` at ``offset + i``) as they arrive, so
    that the caller keeps the rows done when the run is cancelled (requests in flight are cancelled).
    ``endpoint``: ``"flags"`` (``/flags/?v=4``, the default) or the legacy ``"decide"`` (``/decide/?v=3``).
    ``runtime``: the runtime every request asks as (``evaluation_runtime``: "server" or "client").
    """
    if endpoint not in ENDPOINTS:
        raise ValueError(f"endpoint={endpoint!r} is not allowed; use 'flags' or 'decide'.")
    token = await core.project_api_key()
    keys = [str(k) for k in flag_keys] if flag_keys else None
    results: list[RemoteRow | None] = [None] * len(requests)
    next_index = 0
    adaptive = int(concurrency) == ADAPTIVE
    n_workers = max(1, min(ADAPTIVE_CEILING if adaptive else int(concurrency), len(requests)))
    # The pool grown to n_workers connections; 429s slow the run down (Retry-After, a narrower window);
    # adaptive: the window (requests in flight) follows throughput and latency, up to the ceiling.
    pacer = core.pacer(n_workers)
    if adaptive:
        pacer.adapt(ADAPTIVE_START)

    async def worker() -> None:
        nonlocal next_index
        while next_index < len(requests):
            i = next_index
            next_index += 1
            try:
                results[i] = await _decide_one(
                    core,
                    token,
                    requests[i],
                    detailed=detailed,
                    flag_keys=keys,
                    pacer=pacer,
                    endpoint=endpoint,
                    runtime=runtime,
                )
            except Exception as exc:  # one failing row never loses the others
                text = core.scrub(str(exc))
                results[i] = RemoteRow(error=text or type(exc).__name__)
            if into is not None:
                into[offset + i] = results[i]
            progress.update(1)

    await asyncio.gather(*(worker() for _ in range(n_workers)))
    return [r if r is not None else RemoteRow(error="not evaluated") for r in results]


def _row_error(row: RemoteRow, keys: Sequence[str]) -> str | None:
    """The row's error text; a partial answer names the flags not computed and why (the service's reason)."""
    if not row.partial:
        return row.error
    missing = [k for k in keys if k not in row.values]
    if not missing:
        return row.error
    named = [f"{k} [{row.failed[k]}]" if k in row.failed else k for k in missing[:10]]
    return f"{row.error} (not computed: {', '.join(named)}{' ...' if len(missing) > 10 else ''})"


def _warn_failed(rows: Sequence[RemoteRow], keys: Sequence[str]) -> None:
    """One `FailedFlagsWarning` naming how many cells the service failed to evaluate, per flag."""
    wanted = set(keys)
    counts: dict[str, int] = {}
    for r in rows:
        for k in r.failed:
            if k in wanted:
                counts[k] = counts.get(k, 0) + 1
    if not counts:
        return
    total = sum(counts.values())
    per_flag = ", ".join(f"{k}: {n:,}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1])[:10])
    warnings.warn(
        f"the service could not evaluate {total:,} flag value(s) ({per_flag}); they are NA with the reason "
        "in the error column, not False. Re-run those rows (result.frame['error'].notna()) to retry them.",
        FailedFlagsWarning,
        stacklevel=4,
    )


def remote_frame(
    sets: PropertySets,
    rows: Sequence[RemoteRow],
    *,
    flag_keys: Sequence[str] | None,
    known_keys: Sequence[str] | None,
    multivariate: set[str],
    payloads: bool,
    reasons: bool,
    payload_texts: Mapping[str, Sequence[str]] | None = None,
) -> pd.DataFrame:
    """Turn per-row decide answers into the result frame (flags the service did not return are NA).
    ``payload_texts`` (from the definitions) come first in the payload columns' categories, as in the local
    engine's, so the two engines' payload columns compare and concatenate as categoricals."""
    if flag_keys is None:
        keys: list[str] = list(known_keys or [])
        seen = set(keys)
        for r in rows:
            for k in r.values:
                if k not in seen:
                    seen.add(k)
                    keys.append(k)
    else:
        keys = list(flag_keys)
    mv = set(multivariate)
    for r in rows:
        for k, v in r.values.items():
            if isinstance(v, str):
                mv.add(k)
    values: dict[str, list[Any]] = {k: [] for k in keys}
    pl: dict[str, list[Any]] = {k: [] for k in keys}
    rs: dict[str, list[Any]] = {k: [] for k in keys}
    ci: dict[str, list[Any]] = {k: [] for k in keys}
    errors: list[str | None] = []
    for r in rows:
        for k in keys:
            v = r.values.get(k)
            values[k].append(v)
            pl[k].append(r.payloads.get(k) if v is not None else None)
            rs[k].append(r.reasons.get(k))
            ci[k].append(r.condition_index.get(k))
        errors.append(_row_error(r, keys))
    _warn_failed(rows, keys)
    return build_frame(
        sets.frame.index,
        sets.distinct_ids,
        keys,
        values,
        multivariate=mv,
        payloads=pl if payloads else None,
        payload_texts=payload_texts,
        reasons=rs if reasons else None,
        condition_index=ci if reasons else None,
        errors=errors,
        id_dtype=sets.frame["distinct_id"].dtype,
    )

"""``$feature_flag_called`` events, de-duplicated per client like the official SDKs do.

A flag check is reported once per (distinct_id, flag key, response, groups) for the life of a client; the set
of reported keys is an LRU bounded to ``FLAG_CALLED_CACHE_SIZE`` entries, kept here per client transport
(``flag_called_cache(client)``), so a long notebook session cannot grow it without limit.
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import threading
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Unpack

import pandas as pd

from analytics_nb.capture._attribution import _plain, flag_columns, flag_items, outcome_frame
from analytics_nb.capture._bulk_twins import CaptureFrameOptions, acapture_frame
from analytics_nb.capture._events import build_event
from analytics_nb.capture._send import core_of, post_event, run_blocking
from analytics_nb.capture._values import is_missing
from analytics_nb.client import (
    AnyApiClient,
    ApiClient,
    Core,
    FeatureFlags,
    cached_definitions,
)
from analytics_nb.flags import is_group_key_column
from analytics_nb.models import DecideResponse

__all__ = [
    "FLAG_CALLED_CACHE_SIZE",
    "FlagCalledCache",
    "UnknownFlagKeyError",
    "UnknownFlagKeyWarning",
    "flag_called",
    "flag_called_frame",
    "flag_called_properties",
]

FLAG_CALLED_CACHE_SIZE = 50_000
"""How many (distinct_id, key, response, groups) tuples a client remembers (least recently used dropped)."""
EVENT = "$feature_flag_called"


class FlagCalledCache:
    """A thread-safe LRU set of reported ``$feature_flag_called`` keys, at most ``maxsize`` entries."""

    def __init__(self, maxsize: int = FLAG_CALLED_CACHE_SIZE) -> None:
        if maxsize < 1:
            raise ValueError(f"maxsize={maxsize} must be at least 1")
        self.maxsize = maxsize
        self._keys: OrderedDict[Hashable, None] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._keys

    def __repr__(self) -> str:
        return f"FlagCalledCache({len(self)}/{self.maxsize})"

    def reserve(self, key: Hashable) -> bool:
        """Record ``key``; True when it is new (send the event), False when already reported."""
        with self._lock:
            if key in self._keys:
                self._keys.move_to_end(key)
                return False
            self._keys[key] = None
            while len(self._keys) > self.maxsize:
                self._keys.popitem(last=False)
            return True

    def release(self, key: Hashable) -> None:
        """Forget ``key`` (its event could not be sent, so a later call must try again)."""
        with self._lock:
            self._keys.pop(key, None)

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._keys.clear()


_caches: weakref.WeakKeyDictionary[Core, FlagCalledCache] = weakref.WeakKeyDictionary()
_caches_lock = threading.Lock()


def flag_called_cache(client: AnyApiClient) -> FlagCalledCache:
    """The client's reported-keys cache, created on first use (kept here, keyed by the client's transport, so
    a sync ``Client`` and the ``AsyncClient`` it wraps share one).

    Args:
        client: A sync or async client.

    Returns:
        The client's `FlagCalledCache`.
    """
    core = core_of(client)
    with _caches_lock:
        cache = _caches.get(core)
        if cache is None:
            cache = _caches[core] = FlagCalledCache()
        return cache


UnknownKeys = Literal["warn", "raise", "ignore"]


class UnknownFlagKeyWarning(UserWarning):
    """``flag_called`` was given a key the project has no flag for (a typo?): the event is still sent, as
    posthog-python sends a read of a flag that does not exist (a null response and ``$feature_flag_error:
    flag_missing``, not the value passed), and the warning names the closest keys."""


class UnknownFlagKeyError(ValueError):
    """``unknown_keys="raise"``: a key the project has no flag for; nothing was sent."""


_unchecked: weakref.WeakSet[Core] = weakref.WeakSet()


async def _known_keys(client: AnyApiClient) -> set[str] | None:
    """The project's flag keys from the definitions the client already holds (cached with their ETag by
    ``feature_flags.definitions()``); fetched once when it holds none. None when they cannot be read (no
    key allowed to read definitions): the check is skipped, and said once per client (silently only for a
    capture-only client, one with no secret or personal key at all)."""
    core = core_of(client)
    cache = cached_definitions(core)
    if cache is None:
        if core in _unchecked or (
            core.config.secret_api_key is None and core.config.personal_api_key is None
        ):
            return (
                None  # tried once and failed (said then), or a capture-only client: never a request per call
            )
        try:
            await FeatureFlags(core).definitions()
        except Exception as exc:  # no secret/personal key, no scope, service down: cannot check
            if core not in _unchecked:
                _unchecked.add(core)
                warnings.warn(
                    f"flag_called could not check flag keys against the project's definitions ({exc}); give "
                    "the Client secret_api_key='phs_...' (feature_flag:read) to have typos caught.",
                    UnknownFlagKeyWarning,
                    stacklevel=4,
                )
            return None
        cache = cached_definitions(core)
    return None if cache is None else {f.key for f in cache.response.flags}


async def check_flag_keys(
    client: AnyApiClient, keys: Iterable[str], unknown_keys: UnknownKeys
) -> frozenset[str]:
    """Warn (or raise, for ``unknown_keys="raise"``) about keys the project has no flag for, naming the
    closest existing keys (difflib), and return them (the caller sends them as missing flags); ``"ignore"``
    skips the check. No request when the client already holds the definitions."""
    if unknown_keys not in ("warn", "raise", "ignore"):
        raise ValueError(f"unknown_keys={unknown_keys!r} must be 'warn', 'raise' or 'ignore'.")
    if unknown_keys == "ignore":
        return frozenset()
    known = await _known_keys(client)
    if known is None:
        return frozenset()
    missing = [k for k in dict.fromkeys(str(k) for k in keys) if k not in known]
    if not missing:
        return frozenset()
    parts = []
    for key in missing[:5]:
        close = difflib.get_close_matches(key, sorted(known), n=3, cutoff=0.6)
        hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
        parts.append(f"{key!r}{hint}")
    more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
    what = f"the project has no flag {'; '.join(parts)}{more}"
    if unknown_keys == "raise":
        raise UnknownFlagKeyError(f"{what}. Nothing was sent; fix the key (or pass unknown_keys='warn').")
    warnings.warn(
        f"{what}: $feature_flag_called is sent as posthog-python sends a read of a flag that does not "
        "exist, with a null $feature_flag_response and $feature_flag_error 'flag_missing' (the value "
        "passed is not recorded); pass unknown_keys='raise' to refuse.",
        UnknownFlagKeyWarning,
        stacklevel=4,
    )
    return frozenset(missing)


def _groups_key(groups: Mapping[str, Any] | None) -> tuple[tuple[str, str], ...]:
    if not groups:
        return ()
    return tuple(sorted((str(k), str(v)) for k, v in groups.items() if not is_missing(v)))


def _dedup_key(distinct_id: Any, key: str, response: Any, groups: Mapping[str, Any] | None) -> Hashable:
    return (str(distinct_id), str(key), _response_key(response), _groups_key(groups))


def _response_key(response: Any) -> Hashable:
    # True and 1 hash alike; tag the type so that a variant "1" never collides with True.
    return (type(response).__name__, response)


def flag_called_properties(
    key: str,
    response: Any,
    *,
    payload: Any = None,
    flag_id: int | None = None,
    version: int | None = None,
    reason: str | None = None,
    request_id: str | None = None,
    locally_evaluated: bool = False,
    error: str | None = None,
    evaluated_at: int | None = None,
    has_experiment: bool | None = None,
) -> dict[str, Any]:
    """The properties posthog-python 7.91.1 puts on ``$feature_flag_called`` of a config-version-1 flag,
    optional ones only when known, with its rules (``client.py`` ``_capture_feature_flag_called``,
    ``_add_remote_flag_called_metadata``, ``_capture_flag_called_event``): id and version only when truthy,
    ``$feature_flag_evaluated_at`` (ms) from the ``/flags`` answer, ``$feature_flag_has_experiment`` when the
    service reported it (``metadata.has_experiment``, or the definition's ``has_experiment``).

    ``error`` becomes ``$feature_flag_error`` (the SDK's codes, e.g. ``flag_missing``).

    Args:
        key: The flag key (``$feature_flag``).
        response: The value the code saw (``$feature_flag_response`` and ``$feature/<key>``).
        payload: The payload; JSON text is decoded. None: left out.
        flag_id: ``$feature_flag_id``; left out when 0 or None.
        version: ``$feature_flag_version``; left out when 0 or None.
        reason: ``$feature_flag_reason``. None: left out.
        request_id: ``$feature_flag_request_id``. None: left out.
        locally_evaluated: ``locally_evaluated``.
        error: ``$feature_flag_error``. None: left out.
        evaluated_at: ``$feature_flag_evaluated_at`` in ms. None: left out.
        has_experiment: ``$feature_flag_has_experiment``. None: left out.

    Returns:
        The event's properties.
    """
    props: dict[str, Any] = {
        "$feature_flag": key,
        "$feature_flag_response": response,
        "locally_evaluated": bool(locally_evaluated),
        f"$feature/{key}": response,
    }
    if payload is not None and not is_missing(payload):
        props["$feature_flag_payload"] = payload
    if request_id:
        props["$feature_flag_request_id"] = request_id
    if evaluated_at and not is_missing(evaluated_at):
        props["$feature_flag_evaluated_at"] = int(evaluated_at)
    if reason and not is_missing(reason):
        props["$feature_flag_reason"] = reason
    if version is not None and not is_missing(version) and int(version):
        props["$feature_flag_version"] = int(version)
    if flag_id is not None and not is_missing(flag_id) and int(flag_id):
        props["$feature_flag_id"] = int(flag_id)
    if error:
        props["$feature_flag_error"] = error
    if isinstance(has_experiment, bool):
        props["$feature_flag_has_experiment"] = has_experiment
    return props


#: The SDK's ``FeatureFlagError`` codes (posthog 7.91.1 ``posthog/types.py``), joined with "," as its
#: ``Client._remote_flag_result_error`` does.
FLAG_MISSING = "flag_missing"
ERRORS_WHILE_COMPUTING = "errors_while_computing_flags"
EVALUATION_FAILED = "evaluation_failed"


def _decoded_payload(raw: Any) -> Any:
    """The payload as posthog-python 7.91.1 puts it on the event (``types.py`` ``_parse_flag_payload``): JSON
    text decoded, text that is not JSON dropped (None), anything else as is."""
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _from_decide(decide: Any, key: str, kw: dict[str, Any]) -> Any:
    """Take value, payload, id, version, reason and request id from a decide result for ``key``."""
    details = (getattr(decide, "flags", None) or {}).get(key)
    if details is not None:
        metadata = getattr(details, "metadata", None)
        reason = getattr(details, "reason", None)
        if metadata is not None:
            kw.setdefault("flag_id", metadata.id)
            kw.setdefault("version", metadata.version)
            kw.setdefault("has_experiment", metadata.has_experiment)
        if reason is not None and reason.description:
            kw.setdefault("reason", reason.description)
    if kw.get("payload") is None:
        kw["payload"] = _decoded_payload(decide.get_payload(key))
    if not kw.get("request_id"):
        kw["request_id"] = decide.request_id
    if isinstance(getattr(decide, "evaluated_at", None), int):
        kw.setdefault("evaluated_at", decide.evaluated_at)
    # As posthog 7.91.1 does (posthog/client.py _remote_flag_result_error): a key the answer does not hold is
    # still reported, with $feature_flag_error "flag_missing" (and "errors_while_computing_flags" first when
    # the service said so), so the event shows that the code asked for a flag that does not exist.
    errors = []
    if getattr(decide, "errors_while_computing_flags", False):
        errors.append(ERRORS_WHILE_COMPUTING)
    if details is None and key not in (getattr(decide, "feature_flags", None) or {}):
        errors.append(FLAG_MISSING)
    elif details is not None and getattr(details, "failed", False):
        errors.append(EVALUATION_FAILED)  # the service could not evaluate it: the response is null
    if errors:
        kw["error"] = ",".join(errors)
    return decide.get_value(key)


def _as_missing(kw: dict[str, Any]) -> None:
    """Make ``kw`` a read of a flag the project does not have, as posthog-python 7.91.1 reports one: the
    remote read finds no record, so the response is None and ``$feature_flag_error`` is ``flag_missing``
    (``posthog/client.py``: ``_remote_flag_result_error`` appends ``FeatureFlagError.FLAG_MISSING`` when
    ``flag_details is None``, and ``FeatureFlagResult.from_flag_details(None, ...)`` is None, sent as
    ``$feature_flag_response`` by ``_capture_feature_flag_called``); the caller sends a None response."""
    errors = [e for e in str(kw.get("error") or "").split(",") if e]
    if FLAG_MISSING not in errors:
        errors.append(FLAG_MISSING)
    kw["error"] = ",".join(errors)
    kw["payload"] = None


def flag_called(
    client: ApiClient,
    distinct_id: Any,
    key: str,
    response: Any,
    *,
    payload: Any = None,
    flag_id: int | None = None,
    version: int | None = None,
    reason: str | None = None,
    request_id: str | None = None,
    locally_evaluated: bool = False,
    groups: Mapping[str, Any] | None = None,
    unknown_keys: UnknownKeys = "warn",
) -> bool:
    """Report a flag check as ``$feature_flag_called``, once per (distinct_id, key, response, groups).

    ``response`` is the value the code saw (True/False/variant/None), or a decide result (value, payload, id,
    version, reason and request id are then read from it). Returns True when sent, False when already
    reported; a failed send raises and is not remembered. With an ``AsyncClient`` use ``aflag_called``.

    A ``key`` the project has no flag for (a typo) gives an `UnknownFlagKeyWarning` naming the closest
    keys and is sent as posthog-python sends a read of a missing flag (a null response,
    ``$feature_flag_error "flag_missing"``), or `UnknownFlagKeyError` before anything is sent with
    ``unknown_keys="raise"`` (``"ignore"``: no check, the value sent as given). The check uses the
    definitions the client holds (read once, then kept with their ETag).

    Args:
        client: The sync ``Client`` that sends the event and remembers what it reported.
        distinct_id: The person whose code checked the flag.
        key: The flag key.
        response: The value the code saw (True, False, a variant key or None), or a decide result to read the
            value, payload, id, version, reason and request id from.
        payload: The flag's payload as the code saw it (JSON text is decoded). None: read from ``response`` or
            left out.
        flag_id: The flag's id, sent as ``$feature_flag_id`` when not 0. None: read from ``response`` or left
            out.
        version: The flag's version, sent as ``$feature_flag_version`` when not 0. None: read from
            ``response`` or left out.
        reason: Why the flag had this value, sent as ``$feature_flag_reason``. None: read from ``response`` or
            left out.
        request_id: The ``/flags`` answer's request id. None: read from ``response`` or left out.
        locally_evaluated: Whether the value came from local evaluation (sent as ``locally_evaluated``).
        groups: ``{group type: group key}`` the flag was checked with, sent as ``$groups``.
        unknown_keys: A key the project has no flag for: ``"warn"`` (send it and warn), ``"raise"`` (refuse
            before sending) or ``"ignore"`` (no check).

    Returns:
        True when the event was sent, False when this client had already reported it.

    Raises:
        UnknownFlagKeyError: ``unknown_keys="raise"`` and the project has no flag ``key``.
        PostHogError: The send failed (it is not remembered, so the next call tries again).
    """
    given = {
        "payload": payload,
        "flag_id": flag_id,
        "version": version,
        "reason": reason,
        "request_id": request_id,
    }
    return run_blocking(
        client,
        _flag_called(client, distinct_id, key, response, given, locally_evaluated, groups, unknown_keys),
        "aflag_called",
    )


#: Metadata a decide result may fill when the caller did not give it (None given = not given).
_OPTIONAL_METADATA = frozenset({"flag_id", "version", "reason"})


async def _flag_called(
    client: AnyApiClient,
    distinct_id: Any,
    key: str,
    response: Any,
    given: dict[str, Any],
    locally_evaluated: bool,
    groups: Mapping[str, Any] | None,
    unknown_keys: UnknownKeys,
) -> bool:
    """`flag_called`'s flow; ``given`` holds the payload and metadata the caller passed."""
    missing = await check_flag_keys(client, [key], unknown_keys)
    kw: dict[str, Any] = {k: v for k, v in given.items() if v is not None or k not in _OPTIONAL_METADATA}
    kw["error"] = None
    if isinstance(response, DecideResponse):
        response = _from_decide(response, key, kw)
    response = _plain(response)
    if key in missing:
        _as_missing(kw)
        response = None
    props = flag_called_properties(key, response, locally_evaluated=locally_evaluated, **kw)
    event = build_event(EVENT, distinct_id, props, groups=groups)  # validates before the key is reserved
    if response is None:  # a missing flag is reported as null, as the SDKs do (build_event drops None)
        event["properties"].update({"$feature_flag_response": None, f"$feature/{key}": None})
    cache = flag_called_cache(client)
    dedup = _dedup_key(distinct_id, key, response, groups)
    if not cache.reserve(dedup):
        return False
    try:
        await post_event(client, event)
    except BaseException:
        cache.release(dedup)
        raise
    return True


async def _aflag_called(**a: Any) -> bool:
    """`flag_called` for async code and `AsyncClient` (either client): ``$feature_flag_called`` once per
    (distinct_id, key, response, groups)."""
    given = {k: a.pop(k) for k in ("payload", "flag_id", "version", "reason", "request_id")}
    return await _flag_called(given=given, **a)


def _definitions(flags: Any) -> dict[str, tuple[int | None, int | None, bool | None]]:
    """key -> (id, version, has_experiment) from flag definitions given as ``flags=`` (keys alone carry
    none of them; posthog-python reads the three from the definition of a locally evaluated flag)."""
    out: dict[str, tuple[int | None, int | None, bool | None]] = {}
    for item in flag_items(flags) or []:
        if not isinstance(item, str):
            out[str(item["key"])] = (item.get("id"), item.get("version"), item.get("has_experiment"))
    return out


def flag_called_frame(
    client: ApiClient,
    outcomes: Any,
    flags: Any = None,
    *,
    locally_evaluated: bool | None = None,
    unknown_keys: UnknownKeys = "warn",
    **capture_kw: Unpack[CaptureFrameOptions],
) -> pd.DataFrame:
    """Send ``$feature_flag_called`` for every (row, flag) of a simulation frame in one bulk call, with dedup.

    ``flags`` picks the flags (keys or definitions; definitions add ``$feature_flag_id``/``_version``);
    ``<key>:payload`` and ``<key>:reason`` columns fill the payload and reason; ``group:<type>`` columns fill
    ``$groups``. Returns a report: row, distinct_id, key, response, uuid, status
    (sent/refused/failed/skipped), reason, batch. ``locally_evaluated`` defaults to True except for results
    of the remote engine. ``unknown_keys``: as in `flag_called` (a frame's flag keys the project does not
    have warn, or refuse before sending with ``"raise"``). ``capture_kw`` goes to ``capture_frame``. With
    an ``AsyncClient`` use ``aflag_called_frame``.

    Args:
        client: The sync ``Client`` that sends the events.
        outcomes: A simulation result or frame: ``distinct_id`` plus one column per flag.
        flags: The flags to report: keys, or definitions (which add id and version). None: every flag column.
        locally_evaluated: Sent as ``locally_evaluated``. None: True unless the result came from the remote
            engine.
        unknown_keys: Flag keys the project does not have: ``"warn"``, ``"raise"`` (before sending) or
            ``"ignore"``.
        **capture_kw: Options of `capture_frame` (``batch_size``, ``concurrency``, ...).

    Returns:
        A report with one row per (row, flag): row, distinct_id, key, response, uuid, status, reason, batch.
    """
    flow = _flag_called_frame(client, outcomes, flags, locally_evaluated, unknown_keys, capture_kw)
    return run_blocking(client, flow, "aflag_called_frame")


async def _flag_called_frame(
    client: AnyApiClient,
    outcomes: Any,
    flags: Any,
    locally_evaluated: bool | None,
    unknown_keys: UnknownKeys,
    capture_kw: CaptureFrameOptions,
) -> pd.DataFrame:
    """`flag_called_frame`'s flow."""
    if locally_evaluated is None:
        locally_evaluated = getattr(outcomes, "engine", "local") == "local"
    frame = outcome_frame(outcomes)
    if frame is None or "distinct_id" not in frame.columns:
        raise TypeError(
            "flag_called_frame needs a simulation frame (or SimulationResult) with a 'distinct_id' column"
        )
    keys = flag_columns(frame, flags)
    missing = await check_flag_keys(client, keys, unknown_keys)
    defs = _definitions(flags)
    cache = flag_called_cache(client)
    labels = list(frame.index)
    dids = frame["distinct_id"].to_numpy(dtype=object).tolist()
    group_cols = [c for c in frame.columns if is_group_key_column(c)]
    group_vals = {str(c)[6:]: frame[c].to_numpy(dtype=object).tolist() for c in group_cols}

    def column(name: str) -> list[Any] | None:
        return frame[name].to_numpy(dtype=object).tolist() if name in frame.columns else None

    # Stamped when the checks are reported, as the SDKs stamp $feature_flag_called when the code reads a flag:
    # an event without a timestamp would take its arrival time and, re-sent on another day, be stored twice.
    plan = _Plan(labels, dids, group_vals, cache, locally_evaluated, dt.datetime.now(dt.UTC))
    for key in keys:
        plan.add_flag(
            key,
            frame[key].to_numpy(dtype=object).tolist(),
            column(f"{key}:payload"),
            column(f"{key}:reason"),
            defs.get(key, (None, None, None)),
            flag_missing=key in missing,
        )
    if plan.events:
        sent_rows = [r for r in plan.rows if "status" not in r]
        await _send(client, plan.events, sent_rows, plan.reserved, cache, capture_kw)
    return _report_frame(plan.rows)


@dataclass
class _Plan:
    """The report's rows and the events to send, one (row, flag) at a time; each event's dedup key is
    reserved in the client's cache as it is planned."""

    labels: list[Hashable]
    dids: list[Any]
    group_vals: dict[str, list[Any]]
    cache: FlagCalledCache
    locally_evaluated: bool
    now: dt.datetime
    rows: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    reserved: list[Hashable] = field(default_factory=list)

    def add_flag(
        self,
        key: str,
        values: list[Any],
        payloads: list[Any] | None,
        reasons: list[Any] | None,
        definition: tuple[Any, Any, Any],
        *,
        flag_missing: bool,
    ) -> None:
        """Every row's check of one flag: skipped (unknown value, already reported), refused (no
        distinct_id) or planned as an event."""
        flag_id, version, has_experiment = definition
        for i, did in enumerate(self.dids):
            value = None if flag_missing else _plain(values[i])  # a missing flag reads as None
            groups = {t: v[i] for t, v in self.group_vals.items() if not is_missing(v[i])}
            row = {"row": self.labels[i], "distinct_id": did, "key": key, "response": value}
            dedup = self._reserve(row, groups, flag_missing=flag_missing)
            if dedup is None:
                continue
            props = flag_called_properties(
                key,
                value,
                payload=None if payloads is None else payloads[i],
                flag_id=flag_id,
                version=version,
                reason=None if reasons is None else _plain(reasons[i]),
                locally_evaluated=self.locally_evaluated,
                has_experiment=has_experiment,
                error=FLAG_MISSING if flag_missing else None,
            )
            if flag_missing:  # as the SDK sends a flag that does not exist: no value, no payload (the
                # null response is left out here: capture_frame drops top-level nulls, and PostHog reads
                # an absent property as null)
                props.pop("$feature_flag_payload", None)
            if groups:
                props["$groups"] = {t: str(v) for t, v in groups.items()}
            self.rows.append(row)
            self.reserved.append(dedup)
            self.events.append(
                {"event": EVENT, "distinct_id": did, "timestamp": self.now, "properties": props}
            )

    def _reserve(
        self, row: dict[str, Any], groups: Mapping[str, Any], *, flag_missing: bool
    ) -> Hashable | None:
        """The row's dedup key, reserved; None (and the row reported as skipped or refused) when it is
        not to be sent."""
        value, did = row["response"], row["distinct_id"]
        if value is None and not flag_missing:
            self.rows.append({**row, "status": "skipped", "reason": "the flag's value is unknown (NA) here"})
            return None
        if is_missing(did):
            self.rows.append({**row, "status": "refused", "reason": "distinct_id is missing"})
            return None
        dedup = _dedup_key(did, row["key"], value, groups)
        if not self.cache.reserve(dedup):
            self.rows.append({**row, "status": "skipped", "reason": "already reported by this client"})
            return None
        return dedup


async def _send(
    client: AnyApiClient,
    events: list[dict[str, Any]],
    sent_rows: list[dict[str, Any]],
    reserved: list[Hashable],
    cache: Any,
    capture_kw: CaptureFrameOptions,
) -> None:
    """Capture the events in one bulk call and write each one's outcome on its row; a row not sent (or a
    call that fails) releases its dedup key, so a later call may report it."""
    try:
        report = await acapture_frame(client, pd.DataFrame(events), **capture_kw)
    except BaseException:
        for dedup in reserved:
            cache.release(dedup)
        raise
    for r, dedup, rep in zip(sent_rows, reserved, report.itertuples(index=False), strict=True):
        r.update(uuid=rep.uuid, status=rep.status, reason=rep.reason, batch=rep.batch)
        if rep.status != "sent":
            cache.release(dedup)


def _report_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per (row, flag) with its status, text columns as strings with NA, `batch` as Int64."""
    out = pd.DataFrame(
        rows, columns=["row", "distinct_id", "key", "response", "uuid", "status", "reason", "batch"]
    )
    for col in ("distinct_id", "key", "uuid", "status", "reason"):
        out[col] = out[col].astype("str").where(out[col].notna(), pd.NA)  # type: ignore[call-overload]
    out["batch"] = out["batch"].astype("Int64")
    return out


async def _aflag_called_frame(**arguments: Any) -> pd.DataFrame:
    """`flag_called_frame` for async code and `AsyncClient` (either client): ``$feature_flag_called`` for
    every (row, flag) of a simulation frame in one bulk call."""
    return await _flag_called_frame(**arguments)

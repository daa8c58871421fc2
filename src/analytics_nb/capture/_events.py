"""Build and validate capture events, one at a time or a whole DataFrame at once.

A frame is turned into per-event JSON text column by column; rows that the service would reject (empty
event name or distinct_id, bad uuid, over the service's per-event limit, values JSON cannot carry) are
refused here with a reason, so that one bad row never sinks a batch.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid as uuid_mod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from analytics_nb.capture._values import (
    MISSING,
    NaivePolicy,
    ValueConversionError,
    content_digests,
    convert_column,
    has_lone_surrogate,
    is_missing,
    iso_timestamp,
    json_value,
    new_uuid7,
    new_uuids,
    slot_uuids,
)
from analytics_nb.wire import check_distinct_id, distinct_id_problem

__all__ = [
    "HISTORICAL_AGE",
    "MAX_DISTINCT_ID_CHARS",
    "MAX_EVENT_BYTES",
    "MAX_EVENT_NAME_CHARS",
    "MAX_REQUEST_BYTES",
    "EventError",
    "MissingTimestampWarning",
    "PreparedFrame",
    "build_event",
    "encode_event",
    "first_slots",
    "message_bytes",
    "prepare_frame",
    "too_big_reason",
]

MAX_EVENT_BYTES = 1_000_000
"""Largest message one event may become in the capture service's Kafka queue: its producer's
``message.max.bytes`` (``rust/capture/src/config.rs``, ``kafka_producer_message_max_bytes``, default 1000000).
A bigger one is answered 400 ``maximum event size exceeded`` (``CaptureError::EventTooBig``) after the events
before it in the request were published (``rust/capture/src/sinks/kafka.rs``, ``publish``)."""
MESSAGE_OVERHEAD = 512
"""Bytes the service's queue message adds around an event's JSON (uuid, distinct_id, ip, now, token, ...
fields): an estimate on the large side, so an event refused here is never one the service would take."""
MAX_REQUEST_BYTES = 20 * 1024 * 1024
"""Largest request body the service accepts on every v0 capture path (its one wire cap, else 413:
``rust/capture/tests/integration_wire_body_limits.rs``)."""
MAX_DISTINCT_ID_CHARS = 200
"""The service cuts longer distinct ids to this length (v1 capture refuses them:
``rust/capture/src/v1/analytics/constants.rs``); they are refused here instead of changed silently."""
MAX_EVENT_NAME_CHARS = 200
"""Longest event name v1 capture accepts (``CAPTURE_V1_MAX_EVENT_NAME_LENGTH`` in
``rust/capture/src/v1/analytics/constants.rs``); longer ones are refused here."""
HISTORICAL_AGE = dt.timedelta(hours=48)
"""``historical_migration=None`` turns the batch flag on when every event is at least this old."""

RESERVED_COLUMNS = frozenset({"event", "distinct_id", "timestamp", "uuid", "properties"})
GROUP_PREFIX = "group:"
UuidPolicy = Literal["content", "random"]
UUID_POLICIES = ("content", "random")

_encoder = json.JSONEncoder(separators=(",", ":"), allow_nan=False)
#: The stable encoding rows are hashed in for content uuids: sorted keys, so the same content in another
#: column order gives the same uuid; anything odd (a refused row's leftovers) is written with ``repr``.
_stable = json.JSONEncoder(separators=(",", ":"), sort_keys=True, allow_nan=True, default=repr)
encode_event = _encoder.encode
"""Compact ASCII JSON text of one event dict (its length is its size in bytes)."""


def _orjson_dumps() -> Callable[[Any], bytes] | None:
    try:
        import orjson
    except ImportError:
        return None
    return orjson.dumps


#: orjson (the `fast` extra) when installed: encodes a batch of events in a fifth of `json`'s time.
_ORJSON_DUMPS = _orjson_dumps()


class EventError(ValueError):
    """An event that cannot be sent as given; the message names the field and the fix."""


class MissingTimestampWarning(UserWarning):
    """Events sent without a timestamp: the service stamps each with its arrival time, so their time is when
    they were sent, and a retry or resume that lands on another (UTC) day is stored again: PostHog merges a
    uuid only within one day (its events table is a ReplacingMergeTree on team, day, event, distinct_id,
    uuid). ``count`` is how many events of the call have none."""

    def __init__(self, message: str, *, count: int = 0) -> None:
        super().__init__(message)
        self.count = count


def missing_timestamp_warning(missing: int, total: int) -> MissingTimestampWarning:
    """The warning for ``missing`` of ``total`` events without a timestamp (``MissingTimestampWarning``)."""
    return MissingTimestampWarning(
        f"{missing:,} of {total:,} events have no timestamp: the service stamps each with its arrival time, "
        "so their time is when they were sent, and a resume that lands on another day (UTC) stores them "
        "again (PostHog merges a uuid only within one day). Add a 'timestamp' column saying when each "
        "event happened.",
        count=missing,
    )


_SURROGATE = (
    "holds a lone surrogate (half of a UTF-16 pair), which is not valid Unicode and makes the service refuse "
    "the whole batch; repair the text, e.g. text.encode('utf-8', 'replace').decode('utf-8')"
)


def _check_name(event: Any) -> str | None:
    """The reason an event name is unusable, or None."""
    if is_missing(event):
        return "event name is missing; every event needs a non-empty 'event' name"
    if not isinstance(event, str):
        return f"event name must be text, not {type(event).__name__}"
    if not event.strip():
        return "event name is empty; every event needs a non-empty 'event' name"
    if not event.isascii() and has_lone_surrogate(event):
        return f"event name {_SURROGATE}"
    if len(event) > MAX_EVENT_NAME_CHARS:
        return (
            f"event name is {len(event)} characters; PostHog's capture accepts at most "
            f"{MAX_EVENT_NAME_CHARS}, so shorten it"
        )
    return None


def message_bytes(text: str | bytes) -> int:
    """The size of the queue message an event (or, as an upper bound for each, a whole batch) becomes in
    the capture service: its JSON text is carried as a JSON string (each ``"`` and ``\\`` escaped) inside
    an envelope of ``MESSAGE_OVERHEAD`` bytes."""
    data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    return len(data) + data.count(b'"') + data.count(b"\\") + MESSAGE_OVERHEAD


def too_big_reason(n_bytes: int) -> str:
    """The refusal reason of an event whose queue message would be ``n_bytes``."""
    return (
        f"the event would be a {n_bytes:,}-byte message in the service's queue, over its "
        f"{MAX_EVENT_BYTES:,}-byte limit per event (PostHog answers 400 'maximum event size exceeded'); "
        "move large values out of its properties"
    )


def _distinct_id(value: Any) -> tuple[str | None, str | None]:
    """(text, None) for a usable distinct id, else (None, reason)."""
    if is_missing(value):
        return None, "distinct_id is missing; every event needs the id of the person who did it"
    if not isinstance(value, str):
        try:
            value = check_distinct_id(value)  # the shared check: a float (1.0) is refused with the fix
        except ValueError as exc:
            return None, str(exc)
    if not value.strip():
        return None, "distinct_id is empty; every event needs the id of the person who did it"
    if not value.isascii() and has_lone_surrogate(value):
        return None, f"distinct_id {_SURROGATE}"
    if len(value) > MAX_DISTINCT_ID_CHARS:
        return None, (
            f"distinct_id is {len(value)} characters; the service cuts it to {MAX_DISTINCT_ID_CHARS}, "
            "so shorten it first"
        )
    return str(value), None


def _uuid(value: Any) -> tuple[str | None, str | None]:
    """(canonical text or None when absent, reason when invalid)."""
    if is_missing(value) or value == "":
        return None, None
    try:
        return str(value if isinstance(value, uuid_mod.UUID) else uuid_mod.UUID(str(value))), None
    except (ValueError, TypeError, AttributeError):
        return None, f"uuid {value!r} is not a valid UUID; leave it empty to get a generated one"


def build_event(
    event: str,
    distinct_id: Any,
    properties: Mapping[str, Any] | None = None,
    *,
    timestamp: Any = None,
    uuid: Any = None,
    groups: Mapping[str, Any] | None = None,
    on_naive_timestamp: NaivePolicy = "local",
) -> dict[str, Any]:
    """A wire-ready event dict (``uuid`` always set, generated as UUIDv7 when absent); raises ``EventError``.

    Missing property values (None/NA/NaN) are dropped; ``groups`` becomes the ``$groups`` property.

    Args:
        event: The event name.
        distinct_id: The person: text or a whole number.
        properties: Event properties; missing values are dropped.
        timestamp: When the event happened. None: stamped by the service on arrival.
        uuid: The event's uuid. None: a new UUIDv7.
        groups: ``{group type: group key}``, written as ``$groups``.
        on_naive_timestamp: How naive datetimes are read: ``"local"``, ``"utc"`` or ``"raise"``.

    Returns:
        The event as the capture endpoints take it.

    Raises:
        EventError: A field is malformed; the message names it and the fix.
    """
    reason = _check_name(event)
    if reason:
        raise EventError(reason)
    did, reason = _distinct_id(distinct_id)
    if reason:
        raise EventError(reason)
    uid, reason = _uuid(uuid)
    if reason:
        raise EventError(reason)
    props: dict[str, Any] = {}
    for key, value in (properties or {}).items():
        try:
            out = json_value(value, on_naive=on_naive_timestamp)
        except ValueConversionError as exc:
            raise EventError(f"property {key!r}: {exc}") from exc
        if out is not MISSING:
            props[str(key)] = out
    if groups:
        props["$groups"] = {str(k): str(v) for k, v in groups.items() if not is_missing(v)}
    body: dict[str, Any] = {
        "uuid": uid or new_uuid7(),
        "event": event,
        "distinct_id": did,
        "properties": props,
    }
    if timestamp is not None and not is_missing(timestamp):
        try:
            body["timestamp"] = iso_timestamp(timestamp, on_naive=on_naive_timestamp)
        except ValueConversionError as exc:
            raise EventError(f"timestamp: {exc}") from exc
    size = message_bytes(encode_event(body))
    if size > MAX_EVENT_BYTES:
        raise EventError(too_big_reason(size))
    return body


@dataclass
class PreparedFrame:
    """A frame turned into wire-ready parts: per-row name, id, uuid, timestamp, properties; refused rows."""

    n: int
    names: list[Any]
    distinct_ids: list[str | None]
    uuids: list[str]
    timestamps: list[str | None]
    properties: list[dict[str, Any]]
    refused: dict[int, str] = field(default_factory=dict)
    #: Each row's *content identity*: a 64-bit digest of the fields that are sent (event, distinct_id,
    #: timestamp, its own uuid, properties), independent of the index label, the row's place and the
    #: column order; None for a refused row and with ``uuids="random"``.
    content_ids: list[int | None] = field(default_factory=list)
    #: Each row's *core key*: the digest of event, distinct_id, timestamp and own uuid (not properties).
    core_ids: list[int | None] = field(default_factory=list)
    #: Whether the row carries its own ``uuid`` (sent as given).
    own_uuid: list[bool] = field(default_factory=list)
    #: The run the rows belong to (a UUID text; ``set_run``); None with ``uuids="random"`` or before a run
    #: is chosen.
    run_key: str | None = None
    #: ``uuids="content"``: the uuids of rows without one are derived from their run slot.
    content: bool = True

    def identified(self) -> list[int]:
        """Positions of the rows that have a content identity (not refused, ``uuids="content"``)."""
        return [i for i, c in enumerate(self.content_ids) if c is not None and i not in self.refused]

    def set_run(self, run_key: str, ks: dict[int, int]) -> None:
        """Give each row ``pos`` of ``ks`` its run slot ``(core key, ks[pos])`` and, unless it has its own
        uuid, the slot's uuid in ``run_key`` (``slot_uuids``)."""
        where = [i for i in ks if not self.own_uuid[i]]
        cores = [self.core_ids[i] or 0 for i in where]
        made = slot_uuids(cores, [ks[i] for i in where], run_key)
        for i, uid in zip(where, made, strict=True):
            self.uuids[i] = uid
        self.run_key = run_key

    def missing_timestamps(self) -> int:
        """How many events to send (not refused) have no timestamp."""
        return sum(1 for i, t in enumerate(self.timestamps) if t is None and i not in self.refused)

    def body(self, pos: int) -> dict[str, Any]:
        """The wire dict of row ``pos`` (not refused)."""
        body: dict[str, Any] = {
            "uuid": self.uuids[pos],
            "event": self.names[pos],
            "distinct_id": self.distinct_ids[pos],
            "properties": self.properties[pos],
        }
        ts = self.timestamps[pos]
        if ts is not None:
            body["timestamp"] = ts
        return body

    def encode(self, pos: int) -> str:
        """JSON text of row ``pos`` (not refused)."""
        return encode_event(self.body(pos))

    def encode_many(self, positions: list[int]) -> bytes:
        """JSON array (UTF-8) of several rows in one encoder call (much faster than one call per event).

        orjson when installed: the same values as `json`'s text (a float is spelt the shortest way by both,
        `1e-5` or `1e-05`; text is sent as UTF-8 rather than `\\u` escapes); what orjson refuses (a lone
        surrogate, an integer beyond 64 bits) is encoded by `json`, whose escapes the caller checks."""
        bodies = [self.body(p) for p in positions]
        if _ORJSON_DUMPS is not None:
            try:
                return _ORJSON_DUMPS(bodies)
            except TypeError:  # orjson.JSONEncodeError
                pass
        return encode_event(bodies).encode("ascii")

    def all_older_than(self, age: dt.timedelta) -> bool:
        """True when every event to send is at least ``age`` old (drives ``historical_migration=None``)."""
        kept = [t for i, t in enumerate(self.timestamps) if i not in self.refused]
        stamps = [t for t in kept if t is not None]
        if not stamps or len(stamps) < len(kept):
            return False
        present = [t for t in stamps if t is not None]
        cutoff = (dt.datetime.now(dt.UTC) - age).replace(tzinfo=None).isoformat()
        return max(present) < cutoff  # all are UTC 'YYYY-MM-DDTHH:MM:SS...Z', so text order is time order


def _parse_text_timestamps(series: pd.Series, on_naive: NaivePolicy) -> pd.Series | None:
    """A datetime64 version of a column of ISO 8601 texts, or None (then converted value by value).

    Texts with one shared zone, or none, parse as-is; mixed zones parse to UTC, which treats zone-less texts
    as UTC and so is only done when ``on_naive="utc"``. Unparseable columns return None (per-row reasons).
    """
    values = series.dropna()
    if values.empty or not all(isinstance(v, str) for v in values.tolist()):
        return None
    try:
        return pd.to_datetime(series, format="ISO8601")
    except (ValueError, TypeError, OverflowError):
        if on_naive != "utc":
            return None
    try:
        return pd.to_datetime(series, format="ISO8601", utc=True)
    except (ValueError, TypeError, OverflowError):
        return None


def _refuse(refused: dict[int, str], pos: int, reason: str) -> None:
    refused.setdefault(pos, reason)


#: The function `_stable` writes text with (ensure_ascii).
_encode_text = json.encoder.encode_basestring_ascii
_FLOAT_WORDS = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}  # `_stable`'s spelling (allow_nan)


def _stable_texts(values: list[Any]) -> list[str]:
    """``_stable.encode(v)`` of each value, a whole column at a time when it holds one plain type (the
    encoder's own functions for text, integers and floats, so the text is the same)."""
    kinds = set(map(type, values))
    if kinds <= {str}:
        return list(map(_encode_text, values))
    if kinds <= {int}:
        return list(map(int.__repr__, values))
    if kinds <= {float}:
        return [_FLOAT_WORDS.get(t, t) for t in map(float.__repr__, values)]
    if kinds <= {bool}:
        return ["true" if v else "false" for v in values]
    return list(map(_stable.encode, values))


def _stable_properties(
    n: int, columns: list[tuple[str, list[Any], np.ndarray | None]]
) -> list[str | None] | None:
    """Each row's properties as ``_stable`` encodes them (sorted keys), without the braces, built column by
    column: ``columns`` are (key, values, present) of the property columns. None when two columns share a
    key (then the rows are encoded one by one)."""
    keys = [key for key, _values, _present in columns]
    if len(set(keys)) != len(keys):
        return None
    fragments: list[list[str | None]] = []
    for key, values, present in sorted(columns, key=lambda column: column[0]):
        prefix = _encode_text(key) + ":"
        if present is None:
            fragments.append([prefix + t for t in _stable_texts(values)])
            continue
        where = np.flatnonzero(present).tolist()
        column: list[str | None] = [None] * n
        for i, text in zip(where, _stable_texts([values[i] for i in where]), strict=True):
            column[i] = prefix + text
        fragments.append(column)
    if not fragments:
        return [""] * n
    if all(None not in column for column in fragments):
        return [",".join(row) for row in zip(*fragments, strict=True)]  # no None in any column here
    return [",".join(filter(None, row)) for row in zip(*fragments, strict=True)]


def _text_or_null(value: str | None) -> str:
    return "null" if value is None else _encode_text(value)


def _identities(
    rows: list[int],
    parts: list[tuple[Any, ...]],
    properties_text: list[str | None] | None = None,
    refused: dict[int, str] | None = None,
) -> tuple[list[int], list[int]]:
    """The content identity and the core key (``PreparedFrame.content_ids`` / ``core_ids``) of each row
    of ``rows``; ``parts`` are (event, distinct_id, timestamp, own uuid, properties) of those rows.

    Content identity: the digest of ``_stable.encode([event, distinct_id, timestamp, uuid, properties])``,
    the fields that are sent, so the index label, the row's place and the column order change nothing; an
    added column (a new property) is new content. Core key: the digest of the same without properties.
    With ``properties_text`` (from ``_stable_properties``) the text of a row that is not ``refused`` is put
    together from column-wise pieces instead, the same text in a fraction of the time."""
    refused = refused or {}
    contents: list[bytes] = []
    cores: list[bytes] = []
    for pos, part in zip(rows, parts, strict=True):
        inner = None if properties_text is None or pos in refused else properties_text[pos]
        name, did, stamp, own = part[0], part[1], part[2], part[3]
        if (
            inner is not None
            and type(name) is str
            and type(did) is str
            and (stamp is None or type(stamp) is str)
            and (own is None or type(own) is str)
        ):
            core = f"[{_encode_text(name)},{_encode_text(did)},{_text_or_null(stamp)},{_text_or_null(own)}"
            text = f"{core},{{{inner}}}]"
            core += "]"
        else:
            try:
                text = _stable.encode(list(part))
                core = _stable.encode(list(part[:4]))
            except (ValueError, TypeError, RecursionError):  # a refused row's leftovers: its place is enough
                text = core = _stable.encode(["row", pos])
        contents.append(text.encode("utf-8", "surrogatepass"))
        cores.append(core.encode("utf-8", "surrogatepass"))
    return content_digests(contents), content_digests(cores)


def first_slots(prepared: PreparedFrame) -> dict[int, int]:
    """Slots of a run with no journaled rows: the k-th row (in frame order) of each core key gets k, so
    two identical rows are two slots, two events."""
    seen: dict[int, int] = {}
    ks: dict[int, int] = {}
    for i in prepared.identified():
        core = prepared.core_ids[i] or 0
        ks[i] = seen.get(core, 0)
        seen[core] = ks[i] + 1
    return ks


def _check_frame(df: Any, uuids: Any) -> None:
    """The frame-level checks of ``prepare_frame``: a DataFrame with ``event`` and ``distinct_id``, unique
    column names, a usable ``distinct_id`` column and a known ``uuids`` policy (each raises with the fix)."""
    if uuids not in UUID_POLICIES:
        raise ValueError(f"uuids={uuids!r} must be 'content' (derived from each row) or 'random'")
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"capture_frame needs a pandas DataFrame of events, not {type(df).__name__}")
    missing_cols = [c for c in ("event", "distinct_id") if c not in df.columns]
    if missing_cols:
        raise ValueError(
            f"the events frame has no {' or '.join(repr(c) for c in missing_cols)} column; every event needs "
            "an 'event' name and a 'distinct_id' (rename your columns, e.g. df.rename(columns={...}))"
        )
    if df.columns.duplicated().any():
        dup = sorted({str(c) for c in df.columns[df.columns.duplicated()]})
        raise ValueError(f"the events frame has duplicate column names {dup}; make them unique first")
    problem = distinct_id_problem(df["distinct_id"])
    if problem:
        raise EventError(problem)


def _event_names(df: pd.DataFrame, refused: dict[int, str]) -> list[Any]:
    """The ``event`` column as names (plain ASCII text kept as is; a bad name refuses its row)."""
    names = df["event"].to_numpy(dtype=object).tolist()
    for i, name in enumerate(names):
        if type(name) is str and name and name.isascii() and len(name) <= MAX_EVENT_NAME_CHARS:
            continue
        reason = _check_name(name)
        if reason:
            _refuse(refused, i, reason)
        else:
            names[i] = str(name)
    return names


def _distinct_ids(df: pd.DataFrame, refused: dict[int, str]) -> list[str | None]:
    """The ``distinct_id`` column as text (a bad id refuses its row)."""
    dids: list[str | None] = []
    for i, value in enumerate(df["distinct_id"].to_numpy(dtype=object).tolist()):
        if (
            type(value) is str
            and value
            and len(value) <= MAX_DISTINCT_ID_CHARS
            and value.isascii()
            and not value.isspace()
        ):
            dids.append(value)
            continue
        did, reason = _distinct_id(value)
        if reason:
            _refuse(refused, i, reason)
        dids.append(did)
    return dids


def _given_uuids(df: pd.DataFrame, refused: dict[int, str]) -> list[str | None]:
    """The rows' own uuids (None where the row has none); a bad or repeated uuid refuses its row."""
    row_uuids: list[str | None] = [None] * len(df)
    if "uuid" not in df.columns:
        return row_uuids
    for i, value in enumerate(df["uuid"].to_numpy(dtype=object).tolist()):
        uid, reason = _uuid(value)
        if reason:
            _refuse(refused, i, reason)
        row_uuids[i] = uid
    seen: dict[str, int] = {}
    for i, uid in enumerate(row_uuids):
        if uid is None:
            continue
        first = seen.setdefault(uid, i)
        if first != i:
            _refuse(
                refused,
                i,
                f"uuid {uid} is also used by row {df.index[first]!r}; the service keeps only "
                "one event per uuid, so give each event its own",
            )
    return row_uuids


def _timestamps(df: pd.DataFrame, on_naive: NaivePolicy, refused: dict[int, str]) -> list[str | None]:
    """The ``timestamp`` column as ISO 8601 text (None where missing); a bad timestamp refuses its row."""
    timestamps: list[str | None] = [None] * len(df)
    if "timestamp" not in df.columns:
        return timestamps
    column: pd.Series = df["timestamp"]
    ts = column if getattr(column.dtype, "kind", "O") == "M" else _parse_text_timestamps(column, on_naive)
    if ts is not None:
        col = convert_column(ts, name="timestamp", on_naive=on_naive)
        for i, reason in col.errors.items():
            _refuse(refused, i, reason.replace("column 'timestamp' holds", "timestamp is one of"))
        present = col.present
        for i, value in enumerate(col.values):
            if present is None or present[i]:
                timestamps[i] = value
        return timestamps
    for i, value in enumerate(column.to_numpy(dtype=object).tolist()):
        if is_missing(value):
            continue
        try:
            timestamps[i] = iso_timestamp(value, on_naive=on_naive)
        except ValueConversionError as exc:
            _refuse(refused, i, f"timestamp: {exc}")
    return timestamps


def _column_properties(
    df: pd.DataFrame, on_naive: NaivePolicy, refused: dict[int, str], *, content: bool
) -> tuple[list[dict[str, Any]], list[str | None] | None]:
    """Each row's properties from the property columns (missing cells left out), and, when the rows'
    properties are just these columns and uuids come from content, their stable JSON texts."""
    n = len(df)
    prop_cols = [c for c in df.columns if c not in RESERVED_COLUMNS and not str(c).startswith(GROUP_PREFIX)]
    full_keys: list[str] = []
    full_vals: list[list[Any]] = []
    partial: list[tuple[str, list[Any], np.ndarray]] = []
    for c in prop_cols:
        col = convert_column(df[c], name=str(c), on_naive=on_naive)
        for i, reason in col.errors.items():
            _refuse(refused, i, reason)
        if col.present is None:
            full_keys.append(str(c))
            full_vals.append(col.values)
        else:
            partial.append((str(c), col.values, col.present))
    simple = "properties" not in df.columns and not any(str(c).startswith(GROUP_PREFIX) for c in df.columns)
    properties_text = None
    if simple and content:  # the rows' properties are just these columns
        properties_text = _stable_properties(
            n,
            [(k, v, None) for k, v in zip(full_keys, full_vals, strict=True)]
            + [(k, v, p) for k, v, p in partial],
        )
    if full_keys:
        # all columns have n values, so the unchecked zip is safe (and measurably faster here)
        props = [dict(zip(full_keys, row, strict=False)) for row in zip(*full_vals, strict=False)]
    else:
        props = [{} for _ in range(n)]
    for key, values, present in partial:
        for i in np.flatnonzero(present).tolist():
            props[i][key] = values[i]
    return props, properties_text


def _merge_properties_column(
    df: pd.DataFrame, props: list[dict[str, Any]], on_naive: NaivePolicy, refused: dict[int, str]
) -> None:
    """Merge each row's ``properties`` dict (or JSON text) under its property columns (a column wins)."""
    for i, value in enumerate(df["properties"].to_numpy(dtype=object).tolist()):
        if value is None or (not isinstance(value, Mapping) and is_missing(value)):
            continue
        if isinstance(value, str):  # JSON text, as in CSV exports
            try:
                value = json.loads(value) if value.strip() else {}
            except ValueError:
                _refuse(refused, i, "'properties' holds text that is not JSON; use a dict per row")
                continue
        if not isinstance(value, Mapping):
            _refuse(refused, i, f"'properties' must hold dicts, not {type(value).__name__}")
            continue
        try:
            base = json_value(value, on_naive=on_naive)
        except ValueConversionError as exc:
            _refuse(refused, i, f"properties: {exc}")
            continue
        base = {k: v for k, v in base.items() if v is not None}
        base.update(props[i])  # a property column wins over the same key in the dict
        props[i] = base


def _add_groups(df: pd.DataFrame, props: list[dict[str, Any]]) -> None:
    """``group:<type>`` columns into each row's ``$groups`` (a group already in the properties is kept)."""
    group_cols = [c for c in df.columns if str(c).startswith(GROUP_PREFIX) and str(c).count(":") == 1]
    for c in group_cols:
        type_name = str(c)[len(GROUP_PREFIX) :]
        for i, value in enumerate(df[c].to_numpy(dtype=object).tolist()):
            if is_missing(value) or value == "":
                continue
            key = str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
            groups = props[i].get("$groups")
            if not isinstance(groups, dict):
                groups = {}
                props[i]["$groups"] = groups
            groups.setdefault(type_name, key)


def prepare_frame(
    df: pd.DataFrame,
    *,
    on_naive_timestamp: NaivePolicy = "local",
    uuids: UuidPolicy = "content",
    run_key: str | None = None,
    derive: bool = True,
) -> PreparedFrame:
    """Validate and convert an events frame (see ``capture_frame``) without per-row pandas indexing.

    Rows without a ``uuid`` get one derived from the run key and their slot (``uuids="content"``, the
    default: the k-th row of a core key is slot ``(core, k)``, see ``first_slots``; ``capture_frame``
    then assigns slots from the journal, ``capture._runs``; ``run_key=None`` starts a new run) or a fresh
    UUIDv7 (``uuids="random"``). ``derive=False`` leaves them to ``PreparedFrame.set_run`` (``capture_frame``
    chooses the run first).
    """
    _check_frame(df, uuids)
    n = len(df)
    refused: dict[int, str] = {}
    names = _event_names(df, refused)
    dids = _distinct_ids(df, refused)
    row_uuids = _given_uuids(df, refused)
    timestamps = _timestamps(df, on_naive_timestamp, refused)
    props, properties_text = _column_properties(df, on_naive_timestamp, refused, content=uuids == "content")
    if "properties" in df.columns:
        _merge_properties_column(df, props, on_naive_timestamp, refused)
    _add_groups(df, props)

    own = [u is not None for u in row_uuids]
    content_ids: list[int | None] = [None] * n
    core_ids: list[int | None] = [None] * n
    if uuids == "random":
        absent = [i for i, u in enumerate(row_uuids) if u is None]
        for i, uid in zip(absent, new_uuids(len(absent)), strict=True):
            row_uuids[i] = uid
    else:
        unsent = [i for i in refused if row_uuids[i] is None]  # never sent: a uuid only for the report
        for i, uid in zip(unsent, new_uuids(len(unsent)), strict=True):
            row_uuids[i] = uid
            own[i] = True
        kept = [i for i in range(n) if i not in refused]
        made, cores = _identities(
            kept,
            [(names[i], dids[i], timestamps[i], row_uuids[i], props[i]) for i in kept],
            properties_text,
            refused,
        )
        for i, content, core in zip(kept, made, cores, strict=True):
            content_ids[i] = content
            core_ids[i] = core

    prepared = PreparedFrame(
        n=n,
        names=names,
        distinct_ids=dids,
        uuids=[u or "" for u in row_uuids],
        timestamps=timestamps,
        properties=props,
        refused=refused,
        content_ids=content_ids,
        core_ids=core_ids,
        own_uuid=own,
        content=uuids == "content",
    )
    if uuids == "content" and derive:
        prepared.set_run(run_key or new_uuid7(), first_slots(prepared))
    return prepared

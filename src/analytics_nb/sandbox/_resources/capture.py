"""Event capture like the Rust capture service: ``/capture``, ``/batch``, ``/e``, ``/i/v0/e`` (trailing slash
optional; GET, POST, OPTIONS).

Single, array and ``{batch: [...]}`` shapes on every path; gzip (magic bytes, ``Content-Encoding`` or
``?compression=gzip``), base64 and form ``data=`` bodies; the service's size rules: a 20 MB request limit on
every path -> 413, 100 MB decompressed -> 400, and an event whose queue message is over 1,000,000 bytes ->
400 ``maximum event size exceeded: ...`` after storing the events before it; ``{"status": "Ok"}``;
plain-text 400/401 bodies with the real texts. Events are stored durably and de-duplicated on PostHog's key
(project, day, event, distinct id, ``uuid``; see ``events``); a UUIDv7 is generated when the uuid is absent.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import functools
import json
import re
import time
import uuid as uuid_mod
import zlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, unquote_to_bytes

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from analytics_nb.wire import uuid7

from .._context import SandboxContext, context_of
from .._endpoints import Endpoint, Query
from .._http import MAX_JSON_DEPTH, BadJSON, BodyTooLarge, loads, read_limited
from .._store import Store
from . import persons
from .events import events_frame, insert_event_rows

__all__ = [
    "BATCH_BODY",
    "BATCH_LIMIT",
    "CAPTURE_BODY",
    "ENDPOINTS",
    "EVENT_LIMIT",
    "SCHEMA",
    "BodyError",
    "BodyTooLarge",
    "capture",
    "decode_body",
    "events_frame",
    "read_limited",
    "seed",
]

SCHEMA = ""  # the events table is `events.SCHEMA`

#: Largest queue message one event may become: the capture service's Kafka producer `message.max.bytes`
#: (`rust/capture/src/config.rs`, `kafka_producer_message_max_bytes`, default 1000000). The message carries
#: the event's JSON as a string (see `_message_bytes`); a bigger one is `CaptureError::EventTooBig`, answered
#: 400 "maximum event size exceeded: ..." after the events before it in the request were published
#: (`rust/capture/src/sinks/kafka.rs`: `publish` enqueues in order and stops at the first failure).
EVENT_LIMIT = 1_000_000
#: Largest request body on every v0 analytics path: one shared wire cap, else 413
#: (`rust/capture/tests/integration_wire_body_limits.rs`; `router.rs` `BATCH_BODY_SIZE`).
BATCH_LIMIT = 20 * 1024 * 1024
#: Largest decompressed body: five times the wire cap, as in production (the same test file's
#: `make_test_client`); past it the service answers 400 "maximum event size exceeded: ..." (`EventTooBig`).
DECOMPRESSED_LIMIT = 5 * BATCH_LIMIT
#: Most events one request may hold (the sandbox's own bound, far above any SDK's batch size; it keeps a
#: tiny-event gzip bomb from becoming hundreds of thousands of rows in one request).
MAX_EVENTS = 10_000
#: Events written per transaction (one `executemany`, a few ms): other requests (decide, listings) get
#: the store between chunks.
WRITE_CHUNK = 1000
#: How much larger than its source JSON an event's queue message (the size the limit applies to) can be:
#: the compact re-encoding never grows strings, keys, integers or literals and grows a float at most 4.5x
#: (`1e15` -> `1000000000000000.0`); carried as a JSON string, each `"` and `\` doubles (at most 2x), plus
#: the envelope. So in a body of at most `EVENT_LIMIT // SIZE_GROWTH` bytes no event can be over the limit.
SIZE_GROWTH = 10
#: Bytes of the queue message around the event's JSON: uuid, distinct id, ip, now, sent_at, token, event,
#: timestamp and flags (`rust/capture/src/v0_request.rs` `CapturedEvent`), with the two ids added per event.
MESSAGE_ENVELOPE = 256
#: Longest event name: v1 capture refuses longer ones (`CAPTURE_V1_MAX_EVENT_NAME_LENGTH` in
#: `rust/capture/src/v1/analytics/constants.rs`); v0 is not known to check, the sandbox refuses them.
MAX_EVENT_NAME = 200
#: Bodies larger than this (or compressed) are decoded and stored on a worker thread, off the event loop.
OFFLOAD_BYTES = 32 * 1024
_GZIP_MAGIC = b"\x1f\x8b"
_MAX_DISTINCT_ID = 200
_CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
    "Access-Control-Allow-Headers": "*",
}


def _optional_orjson() -> tuple[Callable[[bytes], Any] | None, Callable[[Any], bytes] | None]:
    try:
        import orjson
    except ImportError:
        return None, None
    return orjson.loads, orjson.dumps


#: orjson (the `fast` extra) when installed: a body parses in a fifth of `json`'s time, and event columns
#: encode in a tenth. Used only where its answer is the standard library's (see `_fast_json`,
#: `_stored_text`); everything else goes through `json`, whose answer (or error) stands.
_ORJSON_LOADS, _ORJSON_DUMPS = _optional_orjson()
#: Digits as b"0", everything else as b" ": 19 digits in a row may be an integer beyond 64 bits, which orjson
#: would read as a float (a translate and a find scan a batch in a tenth of the time a regex takes).
_DIGITS = bytes(48 if 48 <= i <= 57 else 32 for i in range(256))
_LONG_RUN = b"0" * 19


class BodyError(Exception):
    """A body that cannot be decoded (`kind="decode"`) or parsed into events (`kind="parse"`)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def _gunzip(data: bytes, limit: int) -> bytes:
    try:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out = d.decompress(data, limit + 1)
    except (zlib.error, EOFError, OSError) as exc:
        raise BodyError("decode", f"invalid gzip data: {exc}") from None
    if len(out) > limit:
        raise BodyError(
            "size",
            f"maximum event size exceeded: Decompressed payload would exceed {limit} bytes",
        )
    return out


def _b64(data: bytes) -> bytes:
    text = data.strip()
    if b"%" in text:
        text = unquote_to_bytes(text)
    text = text.replace(b" ", b"+")
    padded = text + b"=" * (-len(text) % 4)
    try:
        return base64.b64decode(
            padded, altchars=b"-_" if (b"-" in text or b"_" in text) else None, validate=True
        )
    except (binascii.Error, ValueError) as exc:
        raise BodyError("decode", f"invalid base64: {exc}") from None


def _within_depth(value: Any) -> bool:
    """True when no container in `value` is nested `MAX_JSON_DEPTH` or more levels deep (the limit
    `_http.check_json` enforces, counted the same way: the top-level container is at depth 0)."""
    if not isinstance(value, dict | list):
        return True
    stack: list[tuple[Any, int]] = [(value, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        container, depth = pop()
        children = container.values() if type(container) is dict else container
        for child in children:
            t = type(child)
            if t is dict or t is list:
                if depth + 1 >= MAX_JSON_DEPTH:
                    return False
                push((child, depth + 1))
    return True


def _fast_json(data: bytes) -> Any:
    """The body parsed by orjson when its answer is certainly what `_http.loads` would return, else
    `_UNDECIDED`. orjson refuses what `loads` refuses or repairs (NaN, 1e400, lone surrogates, invalid UTF-8,
    a BOM, past 1024 levels), so only two checks are left: integers beyond 64 bits, which orjson would read as
    floats (a run of 19 digits anywhere sends the body to `json`), and the depth limit."""
    if _ORJSON_LOADS is None or _LONG_RUN in data.translate(_DIGITS):
        return _UNDECIDED
    try:
        value = _ORJSON_LOADS(data)
    except ValueError:  # orjson.JSONDecodeError
        return _UNDECIDED
    return value if _within_depth(value) else _UNDECIDED


_UNDECIDED = object()


def _json(data: bytes, fix_surrogates: bool) -> Any:
    fast = _fast_json(data)
    if fast is not _UNDECIDED:
        return fast
    try:
        return loads(data, fix_surrogates=fix_surrogates)
    except UnicodeDecodeError as exc:
        raise BodyError("decode", f"invalid UTF-8: {exc}") from None
    except BadJSON as exc:  # non-finite number, too deep, or (decide) a lone surrogate
        where = f"{exc.path}: " if exc.path else ""
        raise BodyError("parse", f"invalid JSON: {where}{exc.reason}") from None
    except ValueError as exc:  # JSONDecodeError
        raise BodyError("parse", f"invalid JSON: {exc}") from None


def decode_body(
    raw: bytes,
    *,
    content_type: str = "",
    content_encoding: str = "",
    compression: str | None = None,
    form_data: bytes | None = None,
    limit: int = BATCH_LIMIT,
    allow_base64: bool = True,
    fix_surrogates: bool = False,
) -> Any:
    """Decode an ingestion body into JSON: form `data=` (base64, maybe gzip), gzip (magic bytes, header or
    `compression` hint), plain JSON, then base64 of JSON. `lz64` is refused, as the Rust services do.
    Every value is checked (`_http.check_json`): non-finite numbers and nesting past 128 levels are a parse
    error; lone surrogates are too, unless `fix_surrogates` (capture), which replaces them by U+FFFD as
    PostHog's capture does before parsing (`rust/capture/src/passes/invalid_surrogates.rs`,
    `InvalidSurrogatesPass`)."""
    return _decode(
        raw,
        content_type=content_type,
        content_encoding=content_encoding,
        compression=compression,
        form_data=form_data,
        limit=limit,
        allow_base64=allow_base64,
        fix_surrogates=fix_surrogates,
    )[0]


def _decode(
    raw: bytes,
    *,
    content_type: str = "",
    content_encoding: str = "",
    compression: str | None = None,
    form_data: bytes | None = None,
    limit: int = BATCH_LIMIT,
    allow_base64: bool = True,
    fix_surrogates: bool = False,
) -> tuple[Any, int]:
    """`decode_body`, and the size in bytes of the JSON text the value was parsed from."""
    ctype = content_type.split(";", 1)[0].strip().lower()
    comp = (compression or "").lower()
    if comp == "lz64":
        raise BodyError("decode", "unsupported compression: lz64")
    if form_data is None and ctype == "application/x-www-form-urlencoded":
        fields = parse_qs(raw.decode("latin-1"), keep_blank_values=True)
        if "compression" in fields and fields["compression"][0].lower() == "lz64":
            raise BodyError("decode", "unsupported compression: lz64")
        if "data" not in fields:
            raise BodyError("decode", "form body without a data field")
        form_data = fields["data"][0].encode("latin-1")  # the body bytes back
    if form_data is not None:
        data = form_data
        stripped = data.lstrip()
        if not stripped.startswith((b"{", b"[")):
            data = _b64(data)
        if data.startswith(_GZIP_MAGIC):
            data = _gunzip(data, limit)
        return _json(data, fix_surrogates), len(data)
    data = raw
    if data.startswith(_GZIP_MAGIC) or "gzip" in content_encoding.lower() or comp in ("gzip", "gzip-js"):
        data = _gunzip(data, limit)
    try:
        return _json(data, fix_surrogates), len(data)
    except BodyError:
        if not allow_base64:
            raise
        stripped = data.strip()
        if not stripped or stripped.startswith((b"{", b"[")):
            raise
        try:
            decoded = _b64(stripped)
        except BodyError:
            raise BodyError("parse", "invalid JSON: the body is neither JSON nor base64 of JSON") from None
        if decoded.startswith(_GZIP_MAGIC):
            decoded = _gunzip(decoded, limit)
        return _json(decoded, fix_surrogates), len(decoded)


def _text(status: int, message: str) -> Response:
    return PlainTextResponse(message, status_code=status, headers=_CORS)


def _token_of(obj: dict[str, Any]) -> Any:
    for name in ("api_key", "token", "$token"):
        if obj.get(name) is not None:
            return obj[name]
    props = obj.get("properties")
    if isinstance(props, dict) and props.get("token") is not None:
        return props["token"]
    return None


def _token_problem(token: Any) -> str | None:
    if not isinstance(token, str):
        return "API key is not valid: not_ascii" if token is not None else None
    if token == "":
        return "API key is not valid: empty"
    if len(token) > 64:
        return "API key is not valid: too_long"
    if not token.isascii():
        return "API key is not valid: not_ascii"
    if token.startswith("phx_"):
        return "API key is not valid: personal_api_key"
    if "\x00" in token:
        return "API key is not valid: null_byte"
    return None


def _stringify_id(value: Any) -> str:
    if isinstance(value, str):
        text = value
    elif isinstance(value, bool) or value is None:
        text = json.dumps(value)
    elif isinstance(value, int | float):
        text = str(value)
    else:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text[:_MAX_DISTINCT_ID]


def _parse_time(value: Any, field: str) -> datetime:
    if not isinstance(value, str):
        raise BodyError("parse", f"{field} must be an ISO 8601 string, got {type(value).__name__}")
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        return parsed.astimezone(UTC)
    except (ValueError, OverflowError):
        raise BodyError(
            "parse", f"invalid {field} {value!r}: use ISO 8601, e.g. 2024-01-02T03:04:05Z"
        ) from None


def _iso(moment: datetime) -> str:
    # isoformat zero-pads the year (strftime's %Y does not for years < 1000 on glibc)
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


#: Keys of an event that are not kept in its `extra` column.
_OWN_KEYS = frozenset(
    ("event", "properties", "distinct_id", "$distinct_id", "uuid", "timestamp", "api_key", "token", "$token")
)
#: A uuid already in canonical form (`str(uuid.UUID(text)) == text`): kept as sent, no parse.
_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
#: A timestamp already in the stored form (UTC, microseconds) with a `Z` or `+00:00` zone: the stored text is
#: group 1 + "Z" once `datetime.fromisoformat` accepts group 1 (a real date and time).
_UTC_MICROS = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6})(?:Z|\+00:00)")
#: Properties (and top-level keys) that make an event update its person (see `persons.apply_event_updates`).
_PERSON_UPDATES = ("$set", "$set_once", "$unset")


def _event_uuid(raw_uuid: Any) -> str:
    if raw_uuid is None or raw_uuid == "":
        return uuid7()
    if type(raw_uuid) is str and _CANONICAL_UUID.fullmatch(raw_uuid):
        return raw_uuid
    try:
        return str(uuid_mod.UUID(str(raw_uuid)))
    except ValueError:
        raise BodyError("parse", f"invalid uuid {raw_uuid!r}") from None


def _event_time(event: dict[str, Any], now: datetime) -> str:
    timestamp = event.get("timestamp")
    if timestamp is not None and timestamp != "":
        if type(timestamp) is str:
            match = _UTC_MICROS.fullmatch(timestamp)
            if match is not None:
                try:
                    datetime.fromisoformat(match[1])
                    return match[1] + "Z"
                except ValueError:
                    pass  # not a real date: `_parse_time` names the problem
        return _iso(_parse_time(timestamp, "timestamp"))
    offset = event.get("offset")
    moment = now
    if isinstance(offset, int | float) and not isinstance(offset, bool):
        try:
            moment = now - timedelta(milliseconds=offset)
        except (OverflowError, ValueError):
            raise BodyError("parse", f"invalid offset {offset!r}: milliseconds before now") from None
    return _iso(moment)


def _normalise(event: Any, *, now: datetime) -> tuple[str, str, str, str, dict[str, Any], dict[str, Any]]:
    """One event checked and normalised: `(uuid, event name, distinct id, timestamp, properties, extra)`;
    raises `BodyError` with the real service's text."""
    if not isinstance(event, dict):
        raise BodyError("parse", f"an event must be a JSON object, got {type(event).__name__}")
    name = event.get("event")
    if not isinstance(name, str) or not name:
        raise BodyError("empty_name", "event submitted with an empty event name")
    if len(name) > MAX_EVENT_NAME:
        raise BodyError("parse", f"event name is {len(name)} characters, longer than {MAX_EVENT_NAME}")
    props = event.get("properties")
    if props is None:
        props = {}
    if not isinstance(props, dict):
        raise BodyError("parse", "invalid type: properties must be a JSON object")
    raw_id = event.get("distinct_id")
    if raw_id is None:
        raw_id = event.get("$distinct_id")
    if raw_id is None:
        raw_id = props.get("distinct_id")
    if raw_id is None or raw_id == "":
        raise BodyError("no_distinct_id", "event submitted without a distinct_id")
    distinct_id = _stringify_id(raw_id)
    event_uuid = _event_uuid(event.get("uuid"))
    stamp = _event_time(event, now)
    extra = {k: v for k, v in event.items() if k not in _OWN_KEYS} if event.keys() - _OWN_KEYS else {}
    return event_uuid, name, distinct_id, stamp, props, extra


def _strict_text(value: Any) -> str:
    """Compact JSON text of a stored column (a non-finite number raises ValueError: never stored)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _stored_text(value: Any) -> str:
    """`_strict_text` of a value the checked decoder produced (no non-finite number, valid Unicode), by
    orjson when installed: the same JSON text up to how a float is spelt (`1e-5` for `1e-05`), so the
    stored event reads back the same; what orjson refuses (an integer beyond 64 bits) goes to `json`."""
    if _ORJSON_DUMPS is not None:
        try:
            return _ORJSON_DUMPS(value).decode("utf-8")
        except TypeError:  # orjson.JSONEncodeError
            pass
    return _strict_text(value)


def _message_bytes(event: dict[str, Any], distinct_id: str, token: Any) -> int:
    """The size of the queue message the service makes of ``event``: its compact JSON (UTF-8) carried as a
    JSON string (so each ``"`` and ``\\`` is escaped) in an envelope (``MESSAGE_ENVELOPE`` plus the ids)."""
    data = json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")
    ids = len(distinct_id.encode("utf-8", "surrogatepass")) + len(str(token))
    return len(data) + data.count(b'"') + data.count(b"\\") + MESSAGE_ENVELOPE + ids


def _over_limit(event: dict[str, Any], checked: bool, distinct_id: str, token: Any) -> int | None:
    """The queue-message size of the event when it is over `EVENT_LIMIT`, else None. A checked event is
    first measured by orjson: `json`'s text of the same value is at most 1.25x orjson's (the same strings
    and integers; a float may be spelt `1e-09` for `1e-9`) and escaping at most doubles it, so a third of the
    limit in orjson is surely within it."""
    if checked and _ORJSON_DUMPS is not None:
        try:
            if len(_ORJSON_DUMPS(event)) * 3 + MESSAGE_ENVELOPE + 2 * _MAX_DISTINCT_ID <= EVENT_LIMIT:
                return None
        except TypeError:  # orjson.JSONEncodeError: measured by json below
            pass
    size = _message_bytes(event, distinct_id, token)
    return size if size > EVENT_LIMIT else None


def _updates_people(name: str, props: dict[str, Any], extra: dict[str, Any]) -> bool:
    """Whether `persons.apply_event_updates` may change anything for this event (a cheap superset test:
    most events carry no `$set` and are written without it)."""
    if name == "$groupidentify" or name in persons.MERGE_EVENTS:
        return True
    return any(key in props or key in extra for key in _PERSON_UPDATES)


class _Refusal(Exception):
    """A request `capture` answers with an error before storing anything: ``status`` and the text body."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(body)
        self.status = status
        self.body = body


def _unpack(payload: Any, sent_at_ms: str | None) -> tuple[list[Any], Any, bool, str | None]:
    """The events of a decoded request (one event, a list, or ``{batch: [...]}``), the batch's token, its
    ``historical_migration`` flag and its ``sent_at`` (or the ``_`` query hint); raises `_Refusal`."""
    historical = False
    sent_at: str | None = None
    batch_token: Any = None
    if isinstance(payload, dict) and "batch" in payload:
        events = payload.get("batch")
        if not isinstance(events, list):
            raise _Refusal(400, "failed to parse request: batch must be a list of events")
        batch_token = _token_of({k: v for k, v in payload.items() if k != "properties"})
        historical = bool(payload.get("historical_migration") is True)
        if isinstance(payload.get("sent_at"), str) and payload["sent_at"]:
            try:
                sent_at = _iso(_parse_time(payload["sent_at"], "sent_at"))
            except BodyError as exc:
                raise _Refusal(400, f"failed to parse request: {exc.message}") from None
    elif isinstance(payload, dict):
        events = [payload]
    elif isinstance(payload, list):
        events = payload
    else:
        raise _Refusal(400, "failed to parse request: expected an event, a list of events or {batch: [...]}")
    if not events:
        raise _Refusal(400, "request holds no event")
    if len(events) > MAX_EVENTS:
        raise _Refusal(
            413,
            f"request holds {len(events)} events; the sandbox accepts at most {MAX_EVENTS} per request: "
            "send smaller batches",
        )
    if sent_at is None and sent_at_ms and sent_at_ms.isdigit():
        try:
            sent_at = _iso(datetime.fromtimestamp(int(sent_at_ms) / 1000, UTC))
        except (OverflowError, ValueError, OSError):
            sent_at = None  # an unusable `_` hint is ignored, as the real service ignores it
    return events, batch_token, historical, sent_at


def _project_of(store: Store, events: list[Any], batch_token: Any) -> tuple[str, int]:
    """The request's project token (the batch's, or the one every event carries) and its project id;
    raises `_Refusal` (401) for a missing, inconsistent, malformed or unknown token."""
    token = batch_token
    if token is None:
        tokens = [_token_of(e) if isinstance(e, dict) else None for e in events]
        present = [t for t in tokens if t is not None]
        if present and any(t != present[0] for t in present):
            raise _Refusal(401, "batch submitted with inconsistent api_key values")
        token = present[0] if present else None
    if token is None:
        raise _Refusal(401, "event submitted without an api_key")
    problem = _token_problem(token)
    if problem:
        raise _Refusal(401, problem)
    row = store.query_one("SELECT id FROM projects WHERE api_token=?", (token,))
    if row is None:
        raise _Refusal(
            401,
            "API key is not valid: no project uses this project API key (the sandbox enforces known tokens)",
        )
    return token, int(row[0])


def capture(
    store: Store,
    payload: Any,
    *,
    endpoint: str = "/batch",
    sent_at_ms: str | None = None,
    json_bytes: int | None = None,
) -> tuple[int, str | dict[str, Any]]:
    """Validate and store the events of one decoded request; returns (status, body) where a str body is the
    plain-text error and a dict is the JSON success body. Usable without HTTP (tests, notebooks).

    `json_bytes` is the size of the JSON text `payload` was parsed from by `decode_body` (so its values are
    checked): a body too small to hold an event over `EVENT_LIMIT` (see `SIZE_GROWTH`) skips measuring each
    event, and columns are encoded by orjson when it is installed. Without it every event is measured and
    encoded by `json`."""
    try:
        events, batch_token, historical, sent_at = _unpack(payload, sent_at_ms)
        token, project_id = _project_of(store, events, batch_token)
    except _Refusal as refusal:
        return refusal.status, refusal.body
    now = datetime.now(UTC)
    received_at = _iso(now)
    checked = json_bytes is not None
    measure = json_bytes is None or json_bytes > EVENT_LIMIT // SIZE_GROWTH
    normalised: list[tuple[str, str, str, str, dict[str, Any], dict[str, Any]]] = []
    too_big: tuple[int, int] | None = None  # (position, message bytes) of the first event over the limit
    for event in events:
        try:
            parts = _normalise(event, now=now)
        except BodyError as exc:
            if exc.kind == "parse":
                return 400, f"failed to parse request: {exc.message}"
            return 400, exc.message
        if measure and too_big is None:
            size = _over_limit(event, checked, parts[2], token)
            if size is not None:
                too_big = (len(normalised), size)
        normalised.append(parts)
    if too_big is not None:
        # the service publishes the events before the first one over the limit, then answers 400 for the
        # request (`sinks/kafka.rs` `publish`: in-order enqueue, stop at the first failure)
        normalised = normalised[: too_big[0]]
    # every event is valid: encode, then write them, WRITE_CHUNK per transaction (a retry of a request cut
    # short by a storage failure never doubles anything: the dedupe key drops what was already written)
    text = _stored_text if checked else _strict_text
    flag = int(historical)
    rows: list[tuple[Any, ...]] = []
    updating: list[tuple[int, dict[str, Any]]] = []  # (position, the event as person updates read it)
    for event_uuid, name, distinct_id, stamp, props, extra in normalised:
        if _updates_people(name, props, extra):
            stored = {
                "uuid": event_uuid,
                "project_id": project_id,
                "event": name,
                "distinct_id": distinct_id,
                "timestamp": stamp,
                "properties": props,
                "received_at": received_at,
                "sent_at": sent_at,
                "token": token,
                "historical_migration": historical,
                "endpoint": endpoint,
                "extra": extra,
            }
            updating.append((len(rows), {**extra, **stored}))
        rows.append(
            (
                event_uuid,
                project_id,
                name,
                distinct_id,
                stamp,
                text(props),
                received_at,
                sent_at,
                token,
                flag,
                endpoint,
                text(extra) if extra else "{}",
            )
        )
    for start in range(0, len(rows), WRITE_CHUNK):
        end = min(start + WRITE_CHUNK, len(rows))
        with store.transaction() as conn:
            _write_chunk(store, conn, project_id, rows, start, end, updating)
        if end < len(rows):
            time.sleep(0.001)  # let a request waiting for the store take it (locks are not fair)
    if too_big is not None:
        return 400, f"maximum event size exceeded: Event payload too large for Kafka: {too_big[1]} bytes"
    return 200, {"status": "Ok"}


def _write_chunk(
    store: Store,
    conn: Any,
    project_id: int,
    rows: list[tuple[Any, ...]],
    start: int,
    end: int,
    updating: list[tuple[int, dict[str, Any]]],
) -> None:
    """Insert `rows[start:end]` in order inside `conn`'s transaction: runs of plain events with one
    `executemany` each, an event that updates its person alone (so that only a new one, not a retry,
    updates it); then the person updates of the new ones, in order."""
    fresh: list[dict[str, Any]] = []
    run = start
    for pos, stored in updating:
        if not start <= pos < end:
            continue
        if run < pos:
            insert_event_rows(conn, rows[run:pos])
        if insert_event_rows(conn, rows[pos : pos + 1]):
            fresh.append(stored)
        run = pos + 1
    if run < end:
        insert_event_rows(conn, rows[run:end])
    if fresh:
        persons.apply_event_updates(store, project_id, fresh, conn)


def _decode_and_capture(
    store: Store,
    raw: bytes,
    *,
    content_type: str,
    content_encoding: str,
    compression: str | None,
    form_data: bytes | None,
    endpoint: str,
    sent_at_ms: str | None,
) -> tuple[int, str | dict[str, Any]]:
    """Decode a capture body and store its events: `(status, plain-text error | JSON body)`."""
    try:
        payload, size = _decode(
            raw,
            content_type=content_type,
            content_encoding=content_encoding,
            compression=compression,
            form_data=form_data,
            limit=DECOMPRESSED_LIMIT,
            fix_surrogates=True,  # as PostHog's capture: rust/capture/src/passes/invalid_surrogates.rs
        )
    except BodyError as exc:
        if exc.kind == "size":
            return 400, exc.message
        if exc.kind == "parse":
            return 400, f"failed to parse request: {exc.message}"
        return 400, f"failed to decode request: {exc.message}"
    return capture(store, payload, endpoint=endpoint, sent_at_ms=sent_at_ms, json_bytes=size)


async def capture_endpoint(request: Request) -> Response:
    """POST/GET/OPTIONS handler of every capture path."""
    if request.method == "OPTIONS":
        return Response(status_code=200, headers=_CORS)
    path = request.url.path.rstrip("/") or "/"
    limit = BATCH_LIMIT  # one wire cap on every path (integration_wire_body_limits.rs)
    query = request.query_params
    form_data: bytes | None = None
    if request.method == "GET":
        raw = b""
        text = query.get("data")
        form_data = None if text is None else text.encode("utf-8")  # the query string is decoded as UTF-8
        if form_data is None:
            return _text(400, "failed to decode request: no data")
    else:
        try:
            raw = await read_limited(request, limit)
        except BodyTooLarge:
            return _text(413, "Failed to buffer the request body: length limit exceeded")
    store = context_of(request).store
    work = functools.partial(
        _decode_and_capture,
        store,
        raw,
        content_type=request.headers.get("content-type", ""),
        content_encoding=request.headers.get("content-encoding", ""),
        compression=query.get("compression"),
        form_data=form_data,
        endpoint=path,
        sent_at_ms=query.get("_"),
    )
    compressed = (
        raw[:2] == _GZIP_MAGIC or bool(query.get("compression")) or "content-encoding" in request.headers
    )
    if len(raw) > OFFLOAD_BYTES or compressed:
        status, body = await asyncio.to_thread(work)  # a large batch never holds the event loop
    else:
        status, body = work()
    if isinstance(body, str):
        return _text(status, body)
    return Response(
        json.dumps(body, separators=(",", ":")),
        status_code=status,
        media_type="application/json",
        headers=_CORS,
    )


_TEXT_ERRORS = (400, 401, 413)
#: One event as the document describes it: what the service takes without a 400 (a token, a non-empty
#: name of at most 200 characters, a distinct id; `rust/capture/src/api.rs` errors). The service also takes
#: an array of events and `{batch: [...]}` on every path (`_decode_and_capture`).
EVENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["event", "distinct_id"],
    "properties": {
        "event": {"type": "string", "minLength": 1, "maxLength": MAX_EVENT_NAME},
        "distinct_id": {"type": "string", "minLength": 1, "pattern": r"\S"},
        "properties": {"type": "object"},
        "uuid": {"type": "string", "format": "uuid"},
        "timestamp": {"type": "string", "format": "date-time"},
    },
}
#: The body of `/capture`, `/e`, `/i/v0/e`: one event with its project token.
CAPTURE_BODY: dict[str, Any] = {
    **EVENT_SCHEMA,
    "required": ["api_key", "event", "distinct_id"],
    "properties": {"api_key": {"type": "string"}, **EVENT_SCHEMA["properties"]},
}
#: The body of `/batch`: `{api_key, batch: [event, ...]}` (at least one, at most `MAX_EVENTS`).
BATCH_BODY: dict[str, Any] = {
    "type": "object",
    "required": ["api_key", "batch"],
    "properties": {
        "api_key": {"type": "string"},
        "batch": {"type": "array", "minItems": 1, "maxItems": MAX_EVENTS, "items": EVENT_SCHEMA},
        "historical_migration": {"type": "boolean"},
    },
}


def _capture_endpoints(path: str, summary: str, limit: str) -> list[Endpoint]:
    body = BATCH_BODY if path == "/batch/" else CAPTURE_BODY
    common: dict[str, Any] = {
        "auth": "token",
        "errors": _TEXT_ERRORS,
        "text_errors": True,
        "body_limit": None,  # read by the handler with its own limit and plain-text 413
    }
    name = path.strip("/").replace("/", "_") or "capture"
    return [
        Endpoint(
            "POST",
            path,
            capture_endpoint,
            name,
            f"{summary} (body up to {limit})",
            body_schema=body,
            **common,
        ),
        Endpoint(
            "GET",
            path,
            capture_endpoint,
            f"{name}_get",
            "The same with the body in `?data=` (base64 or JSON)",
            query=(Query("data", required=True, content=body),),
            **common,
        ),
        Endpoint(
            "OPTIONS",
            path,
            capture_endpoint,
            f"{name}_options",
            "CORS preflight",
            returns="empty",
            errors=(),
            auth="none",
            body_limit=None,
            documented=False,
        ),
    ]


ENDPOINTS = [
    *_capture_endpoints("/capture/", "Capture one event, an array or a batch", "20 MB"),
    *_capture_endpoints("/batch/", "Capture a batch of events", "20 MB"),
    *_capture_endpoints("/e/", "Capture (the JS SDK's path)", "20 MB"),
    *_capture_endpoints("/i/v0/e/", "Capture (the newest SDKs' path)", "20 MB"),
]


def seed(store: Store, ctx: SandboxContext) -> None:
    """Nothing to seed: capture only writes `events` (see `events.seed`)."""

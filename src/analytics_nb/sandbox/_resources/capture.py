"""Event capture like the Rust capture service: ``/capture``, ``/batch``, ``/e``, ``/i/v0/e`` (trailing slash
optional; GET, POST, OPTIONS).

Single, array and ``{batch: [...]}`` shapes on every path; gzip (magic bytes, ``Content-Encoding`` or
``?compression=gzip``), base64 and form ``data=`` bodies; 2 MB (20 MB on ``/batch``) request limits -> 413,
events over 2 MB -> 400; ``{"status": "Ok"}``; plain-text 400/401 bodies with the real texts. Events are
stored durably and de-duplicated on PostHog's key (project, day, event, distinct id, ``uuid``; see
``events``); a UUIDv7 is generated when the uuid is absent.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import functools
import json
import time
import uuid as uuid_mod
import zlib
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, unquote_to_bytes

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from analytics_nb.wire import uuid7

from .._context import SandboxContext, context_of
from .._endpoints import Endpoint, Query
from .._http import BadJSON, BodyTooLarge, loads, read_limited
from .._store import Store
from . import persons
from .events import events_frame, insert_events

__all__ = [
    "BATCH_LIMIT",
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

#: Largest request body on `/capture`, `/e`, `/i/v0/e` and largest decoded event (bytes).
EVENT_LIMIT = 2 * 1024 * 1024
#: Largest request body on `/batch`, and largest decompressed body on every capture path.
BATCH_LIMIT = 20 * 1024 * 1024
#: Most events one request may hold (the sandbox's own bound, far above any SDK's batch size; it keeps a
#: tiny-event gzip bomb from becoming hundreds of thousands of rows in one request).
MAX_EVENTS = 10_000
#: Events written per transaction: other requests (decide, listings) get the store between chunks.
WRITE_CHUNK = 200
#: Bodies larger than this (or compressed) are decoded and stored on a worker thread, off the event loop.
OFFLOAD_BYTES = 32 * 1024
_GZIP_MAGIC = b"\x1f\x8b"
_MAX_DISTINCT_ID = 200
_CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
    "Access-Control-Allow-Headers": "*",
}


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
        raise BodyError("size", "maximum event size exceeded")
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


def _json(data: bytes, fix_surrogates: bool) -> Any:
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
        return _json(data, fix_surrogates)
    data = raw
    if data.startswith(_GZIP_MAGIC) or "gzip" in content_encoding.lower() or comp in ("gzip", "gzip-js"):
        data = _gunzip(data, limit)
    try:
        return _json(data, fix_surrogates)
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
        return _json(decoded, fix_surrogates)


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


def _normalise(
    event: Any,
    *,
    now: datetime,
    received_at: str,
    sent_at: str | None,
    project_id: int,
    token: str,
    endpoint: str,
    historical: bool,
) -> dict[str, Any]:
    if not isinstance(event, dict):
        raise BodyError("parse", f"an event must be a JSON object, got {type(event).__name__}")
    name = event.get("event")
    if not isinstance(name, str) or not name:
        raise BodyError("empty_name", "event submitted with an empty event name")
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
    raw_uuid = event.get("uuid")
    if raw_uuid is None or raw_uuid == "":
        event_uuid = uuid7()
    else:
        try:
            event_uuid = str(uuid_mod.UUID(str(raw_uuid)))
        except ValueError:
            raise BodyError("parse", f"invalid uuid {raw_uuid!r}") from None
    timestamp = event.get("timestamp")
    if timestamp is not None and timestamp != "":
        moment = _parse_time(timestamp, "timestamp")
    else:
        offset = event.get("offset")
        moment = now
        if isinstance(offset, int | float) and not isinstance(offset, bool):
            try:
                moment = now - timedelta(milliseconds=offset)
            except (OverflowError, ValueError):
                raise BodyError("parse", f"invalid offset {offset!r}: milliseconds before now") from None
    extra = {
        k: v
        for k, v in event.items()
        if k
        not in (
            "event",
            "properties",
            "distinct_id",
            "$distinct_id",
            "uuid",
            "timestamp",
            "api_key",
            "token",
            "$token",
        )
    }
    return {
        "uuid": event_uuid,
        "project_id": project_id,
        "event": name,
        "distinct_id": distinct_id,
        "timestamp": _iso(moment),
        "properties": props,
        "received_at": received_at,
        "sent_at": sent_at,
        "token": token,
        "historical_migration": historical,
        "endpoint": endpoint,
        "extra": extra,
    }


def capture(
    store: Store,
    payload: Any,
    *,
    endpoint: str = "/batch",
    sent_at_ms: str | None = None,
) -> tuple[int, str | dict[str, Any]]:
    """Validate and store the events of one decoded request; returns (status, body) where a str body is the
    plain-text error and a dict is the JSON success body. Usable without HTTP (tests, notebooks)."""
    historical = False
    sent_at: str | None = None
    batch_token: Any = None
    if isinstance(payload, dict) and "batch" in payload:
        events = payload.get("batch")
        if not isinstance(events, list):
            return 400, "failed to parse request: batch must be a list of events"
        batch_token = _token_of({k: v for k, v in payload.items() if k != "properties"})
        historical = bool(payload.get("historical_migration") is True)
        if isinstance(payload.get("sent_at"), str) and payload["sent_at"]:
            try:
                sent_at = _iso(_parse_time(payload["sent_at"], "sent_at"))
            except BodyError as exc:
                return 400, f"failed to parse request: {exc.message}"
    elif isinstance(payload, dict):
        events = [payload]
    elif isinstance(payload, list):
        events = payload
    else:
        return 400, "failed to parse request: expected an event, a list of events or {batch: [...]}"
    if not events:
        return 400, "request holds no event"
    if len(events) > MAX_EVENTS:
        return 413, (
            f"request holds {len(events)} events; the sandbox accepts at most {MAX_EVENTS} per request: "
            "send smaller batches"
        )
    if sent_at is None and sent_at_ms and sent_at_ms.isdigit():
        try:
            sent_at = _iso(datetime.fromtimestamp(int(sent_at_ms) / 1000, UTC))
        except (OverflowError, ValueError, OSError):
            sent_at = None  # an unusable `_` hint is ignored, as the real service ignores it
    token = batch_token
    if token is None:
        tokens = [_token_of(e) if isinstance(e, dict) else None for e in events]
        present = [t for t in tokens if t is not None]
        if present and any(t != present[0] for t in present):
            return 401, "batch submitted with inconsistent api_key values"
        token = present[0] if present else None
    if token is None:
        return 401, "event submitted without an api_key"
    problem = _token_problem(token)
    if problem:
        return 401, problem
    row = store.query_one("SELECT id FROM projects WHERE api_token=?", (token,))
    if row is None:
        return (
            401,
            "API key is not valid: no project uses this project API key (the sandbox enforces known tokens)",
        )
    project_id = int(row[0])
    now = datetime.now(UTC)
    received_at = _iso(now)
    rows = []
    for event in events:
        try:
            normalised = _normalise(
                event,
                now=now,
                received_at=received_at,
                sent_at=sent_at,
                project_id=project_id,
                token=token,
                endpoint=endpoint,
                historical=historical,
            )
        except BodyError as exc:
            if exc.kind == "parse":
                return 400, f"failed to parse request: {exc.message}"
            return 400, exc.message
        size = len(json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
        if size > EVENT_LIMIT:
            return 400, "maximum event size exceeded"
        rows.append(normalised)
    # every event is valid: write them, WRITE_CHUNK per transaction (a retry of a request cut short by a
    # storage failure never doubles anything: the dedupe key drops what was already written)
    for start in range(0, len(rows), WRITE_CHUNK):
        chunk = rows[start : start + WRITE_CHUNK]
        with store.transaction() as conn:
            fresh = insert_events(conn, chunk)
            new_rows = [r for r, is_new in zip(chunk, fresh, strict=True) if is_new]
            if new_rows:
                persons.apply_event_updates(store, project_id, [{**r["extra"], **r} for r in new_rows], conn)
        if start + WRITE_CHUNK < len(rows):
            time.sleep(0.001)  # let a request waiting for the store take it (locks are not fair)
    return 200, {"status": "Ok"}


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
        payload = decode_body(
            raw,
            content_type=content_type,
            content_encoding=content_encoding,
            compression=compression,
            form_data=form_data,
            limit=BATCH_LIMIT,
            fix_surrogates=True,  # as PostHog's capture: rust/capture/src/passes/invalid_surrogates.rs
        )
    except BodyError as exc:
        if exc.kind == "size":
            return 400, "maximum event size exceeded"
        if exc.kind == "parse":
            return 400, f"failed to parse request: {exc.message}"
        return 400, f"failed to decode request: {exc.message}"
    return capture(store, payload, endpoint=endpoint, sent_at_ms=sent_at_ms)


async def capture_endpoint(request: Request) -> Response:
    """POST/GET/OPTIONS handler of every capture path."""
    if request.method == "OPTIONS":
        return Response(status_code=200, headers=_CORS)
    path = request.url.path.rstrip("/") or "/"
    limit = BATCH_LIMIT if path == "/batch" else EVENT_LIMIT
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
#: The body every capture path takes (one event, an array, or `{batch: [...]}`), as documented.
CAPTURE_BODY: dict[str, Any] = {
    "type": "object",
    "properties": {
        "api_key": {"type": "string"},
        "event": {"type": "string"},
        "distinct_id": {"type": "string"},
        "properties": {"type": "object"},
        "uuid": {"type": "string"},
        "timestamp": {"type": "string"},
        "batch": {"type": "array", "items": {"type": "object"}},
    },
}


def _capture_endpoints(path: str, summary: str, limit: str) -> list[Endpoint]:
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
            body_schema=CAPTURE_BODY,
            **common,
        ),
        Endpoint(
            "GET",
            path,
            capture_endpoint,
            f"{name}_get",
            "The same with the body in `?data=` (base64 or JSON)",
            query=(Query("data"), Query("compression")),
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
    *_capture_endpoints("/capture/", "Capture one event, an array or a batch", "2 MB"),
    *_capture_endpoints("/batch/", "Capture a batch of events", "20 MB"),
    *_capture_endpoints("/e/", "Capture (the JS SDK's path)", "2 MB"),
    *_capture_endpoints("/i/v0/e/", "Capture (the newest SDKs' path)", "2 MB"),
]


def seed(store: Store, ctx: SandboxContext) -> None:
    """Nothing to seed: capture only writes `events` (see `events.seed`)."""

"""Request bodies and JSON for every sandbox endpoint: size limits enforced while the body streams in, one
JSON reader that refuses what the real service refuses (non-finite numbers, lone surrogates, nesting deeper
than :data:`MAX_JSON_DEPTH`) with the path of the offending value, limit/offset paging, and a JSON response
that stored data can never make fail.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from starlette.datastructures import URL
from starlette.requests import Request
from starlette.responses import JSONResponse

from ._errors import APIError, parse_error, validation_error

#: Largest JSON body the private API accepts (Django's DATA_UPLOAD_MAX_MEMORY_SIZE, 2.5 MB).
MAX_API_BODY = 2_621_440
#: Deepest JSON nesting any endpoint accepts (objects and arrays); deeper bodies get a 400 naming the limit.
#: 128 is serde_json's default recursion limit, what PostHog's Rust capture and flags services parse with.
MAX_JSON_DEPTH = 128
#: Largest `offset` / `limit` / `page` a listing accepts: SQLite's INTEGER range ends at 2**63 - 1.
MAX_INT_PARAM = 2**63 - 1


class BodyTooLarge(Exception):
    """The request body went over the endpoint's limit (found while it streamed in)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"body over {limit} bytes")
        self.limit = limit


class BadJSON(Exception):
    """A JSON value the sandbox refuses: `path` names where (``filters__groups__0__value``), `reason` why."""

    def __init__(self, path: str | None, reason: str) -> None:
        super().__init__(reason)
        self.path = path
        self.reason = reason


async def read_limited(request: Request, limit: int) -> bytes:
    """The whole body, refused (:class:`BodyTooLarge`) as soon as the declared length or the bytes received
    so far pass `limit`; never buffers more than `limit` + one chunk. Cached on the request as Starlette
    caches `request.body()`, so later reads get the same bytes."""
    cached: bytes | None = getattr(request, "_body", None)
    if cached is not None:
        if len(cached) > limit:
            raise BodyTooLarge(limit)
        return cached
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(limit)
        chunks.append(chunk)
    body = b"".join(chunks)
    request._body = body  # Starlette's own cache attribute: `await request.body()` now returns it
    return body


def too_large(limit: int) -> APIError:
    """The private API's 413 body."""
    return APIError(
        413,
        "invalid_request",
        "request_too_large",
        f"Request body is larger than the {limit} bytes this endpoint accepts.",
    )


async def read_body(request: Request, max_bytes: int = MAX_API_BODY) -> bytes:
    """The raw body for the private API, 413 (`request_too_large`) past `max_bytes`."""
    try:
        return await read_limited(request, max_bytes)
    except BodyTooLarge:
        raise too_large(max_bytes) from None


# -- JSON ----------------------------------------------------------------------------------------------------
def _refuse_constant(name: str) -> Any:
    raise BadJSON(None, f"{name} is not valid JSON; send a finite number, or a string")


def loads(data: bytes | str, *, fix_surrogates: bool = False) -> Any:
    """Parse JSON and check every value (see :func:`check_json`); raises ``ValueError`` subclasses:
    `json.JSONDecodeError` / `UnicodeDecodeError` for malformed text, :class:`BadJSON` for refused values."""
    try:
        value = json.loads(data, parse_constant=_refuse_constant)
    except RecursionError:
        raise BadJSON(None, _depth_reason()) from None
    return check_json(value, fix_surrogates=fix_surrogates)


def _depth_reason() -> str:
    return f"JSON nested deeper than {MAX_JSON_DEPTH} levels; the sandbox accepts at most {MAX_JSON_DEPTH}"


_SURROGATE = "text holds a lone surrogate (invalid Unicode); send valid UTF-8"
_NOT_FINITE = (
    "number is not finite (a value such as 1e400 overflows to infinity); send a finite number, or a string"
)


def _bad_string(text: str) -> bool:
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # json.loads joins valid pairs, so any left is lone


def repaired(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def check_json(value: Any, *, fix_surrogates: bool = False) -> Any:
    """Refuse non-finite numbers (``1e400`` parses to infinity, ``NaN``), nesting deeper than
    :data:`MAX_JSON_DEPTH`, and strings or keys holding a lone surrogate (``"\\ud800"``) -- or, with
    `fix_surrogates`, replace those by U+FFFD in place, as PostHog's capture does. Iterative, so any depth
    is safe. Returns `value` (repaired); raises :class:`BadJSON` whose `path` joins keys and indexes with
    ``__`` (DRF's nested `attr`)."""
    if isinstance(value, str):
        if _bad_string(value):
            if not fix_surrogates:
                raise BadJSON(None, _SURROGATE)
            return repaired(value)
        return value
    if isinstance(value, float) and not math.isfinite(value):
        raise BadJSON(None, _NOT_FINITE)
    if not isinstance(value, dict | list):
        return value
    stack: list[tuple[Any, tuple[str, ...]]] = [(value, ())]
    while stack:
        container, path = stack.pop()
        if len(path) >= MAX_JSON_DEPTH:
            raise BadJSON(None, _depth_reason())  # the whole body is refused (no field to name)
        items = container.items() if isinstance(container, dict) else enumerate(container)
        fixes: list[tuple[Any, Any, Any]] = []  # (key, new key, new value), applied after the loop
        for key, child in items:
            new_key = key
            if isinstance(key, str) and _bad_string(key):
                if not fix_surrogates:
                    raise BadJSON(
                        _join((*path, repaired(key))), "a key holds a lone surrogate (invalid Unicode)"
                    )
                new_key = repaired(key)
            new_child = child
            if isinstance(child, str):
                if _bad_string(child):
                    if not fix_surrogates:
                        raise BadJSON(_join((*path, str(key))), _SURROGATE)
                    new_child = repaired(child)
            elif isinstance(child, float):
                if not math.isfinite(child):
                    raise BadJSON(_join((*path, str(key))), _NOT_FINITE)
            elif isinstance(child, dict | list):
                stack.append((child, (*path, str(new_key))))
            if new_key is not key or new_child is not child:
                fixes.append((key, new_key, new_child))
        for key, new_key, new_child in fixes:
            if new_key != key:
                del container[key]
            container[new_key] = new_child
    return value


def _join(path: tuple[str, ...]) -> str | None:
    return "__".join(path) if path else None


def bad_json_error(exc: BadJSON) -> APIError:
    """The DRF-style 400 for a refused value: `validation_error` naming the field, or `parse_error` when the
    problem is the whole body (too deep at the top)."""
    if exc.path is None:
        return parse_error(f"JSON parse error - {exc.reason}.")
    return validation_error(f"{exc.reason}.", attr=exc.path)


def parse_json_body(request: Request, body: bytes) -> Any:
    """The JSON body as DRF would parse it: empty -> {}, malformed -> 400 parse_error, other media -> 415,
    refused values -> 400 naming the field."""
    if not body.strip():
        return {}
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype and ctype != "application/json" and not ctype.endswith("+json"):
        raise APIError(
            415, "invalid_request", "unsupported_media_type", f'Unsupported media type "{ctype}" in request.'
        )
    try:
        return loads(body)
    except BadJSON as exc:
        raise bad_json_error(exc) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise parse_error(f"JSON parse error - {exc}") from None


def require_object(data: Any) -> dict[str, Any]:
    """A JSON object body, or the DRF 400 for any other JSON value."""
    if not isinstance(data, dict):
        raise APIError(
            400,
            "validation_error",
            "invalid_input",
            f"Invalid data. Expected a dictionary, but got {type(data).__name__}.",
            "non_field_errors",
        )
    return data


def dumps(value: Any) -> str:
    """Compact JSON text (stored columns and response bodies); raises ValueError on non-finite numbers."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def safe_dumps(value: Any) -> str:
    """:func:`dumps` of text that encodes as UTF-8, repairing what older builds may have stored (see
    :func:`sanitised`) instead of failing."""
    try:
        text = dumps(value)
        text.encode("utf-8")
        return text
    except (ValueError, RecursionError):  # UnicodeEncodeError is a ValueError
        return dumps(sanitised(value))


def sanitised(value: Any) -> Any:
    """`value` with non-finite numbers as null and lone surrogates replaced (only for rows written by older
    builds: the API refuses such values, but a read must never fail on what is stored)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str) and _bad_string(value):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {sanitised(k): sanitised(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [sanitised(v) for v in value]
    return value


class SafeJSONResponse(JSONResponse):
    """A JSON response that renders whatever is stored: strict JSON first, repaired values if that fails."""

    def render(self, content: Any) -> bytes:
        return safe_dumps(content).encode("utf-8")


# -- paging --------------------------------------------------------------------------------------------------
def int_param(value: str | None, default: int, *, name: str | None = None) -> int:
    """A non-negative int query parameter; junk gives `default` (as DRF's pagination does). A number past
    SQLite's range (>= 2**63) is refused with 400 naming `name` when given, else clamped."""
    if value is None:
        return default
    try:
        parsed = int(value)
    except ValueError:
        return default
    if parsed < 0:
        return default
    if parsed > MAX_INT_PARAM:
        if name is None:
            return MAX_INT_PARAM
        raise validation_error(
            f"Ensure this value is less than or equal to {MAX_INT_PARAM}.", attr=name, code="max_value"
        )
    return parsed


def limit_offset(request: Request, *, default: int = 100, maximum: int | None = None) -> tuple[int, int]:
    """`(limit, offset)` of a limit/offset listing: limit 0/junk -> `default`, clamped to `maximum`;
    offsets past SQLite's range are a 400."""
    q = request.query_params
    limit = int_param(q.get("limit"), default, name="limit") or default
    if maximum is not None:
        limit = min(limit, maximum)
    return limit, int_param(q.get("offset"), 0, name="offset")


def request_url(request: Request) -> URL:
    """The absolute URL of the request as the client sent it (with its trailing slash, if any)."""
    original = request.scope.get("sandbox.original_path")
    return request.url.replace(path=original) if original else request.url


def page_links(request: Request, *, count: int, limit: int, offset: int) -> tuple[str | None, str | None]:
    """Absolute `next` / `previous` URLs of a limit/offset page, as DRF builds them."""
    url = request_url(request)
    nxt = None
    if offset + limit < count:
        nxt = str(url.include_query_params(limit=limit, offset=offset + limit))
    prev = None
    if offset > 0:
        if offset - limit <= 0:
            prev = str(url.include_query_params(limit=limit).remove_query_params("offset"))
        else:
            prev = str(url.include_query_params(limit=limit, offset=offset - limit))
    return nxt, prev


def page_response(
    request: Request, results: list[Any], *, count: int, limit: int, offset: int
) -> SafeJSONResponse:
    """`{count, next, previous, results}` for one page whose rows were fetched with LIMIT/OFFSET."""
    nxt, prev = page_links(request, count=count, limit=limit, offset=offset)
    return SafeJSONResponse({"count": count, "next": nxt, "previous": prev, "results": results})

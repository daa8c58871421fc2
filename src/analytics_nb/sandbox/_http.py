"""Request-body parsing and pagination helpers shared by the sandbox's resource modules."""

from __future__ import annotations

import json
from typing import Any

from starlette.datastructures import URL
from starlette.requests import Request

from ._errors import APIError, parse_error

#: Largest JSON body the API endpoints accept (Django's DATA_UPLOAD_MAX_MEMORY_SIZE, 2.5 MB).
MAX_API_BODY = 2_621_440


async def read_body(request: Request, max_bytes: int = MAX_API_BODY) -> bytes:
    """The raw request body (cached on the request), refused with 413 when larger than `max_bytes`."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > max_bytes:
        raise _too_large(max_bytes)
    body = await request.body()
    if len(body) > max_bytes:
        raise _too_large(max_bytes)
    return body


def _too_large(max_bytes: int) -> APIError:
    return APIError(
        413,
        "invalid_request",
        "request_too_large",
        f"Request body is larger than the {max_bytes} bytes this endpoint accepts.",
    )


def parse_json_body(request: Request, body: bytes) -> Any:
    """The JSON body as DRF would parse it: empty -> {}, malformed -> 400 parse_error, other media -> 415."""
    if not body.strip():
        return {}
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype and ctype != "application/json" and not ctype.endswith("+json"):
        raise APIError(
            415, "invalid_request", "unsupported_media_type", f'Unsupported media type "{ctype}" in request.'
        )
    try:
        return json.loads(body)
    except UnicodeDecodeError as exc:
        raise parse_error(f"JSON parse error - {exc}") from None
    except json.JSONDecodeError as exc:
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


def int_param(value: str | None, default: int) -> int:
    """A non-negative int query parameter; anything else gives `default` (as DRF's pagination does)."""
    if value is None:
        return default
    try:
        parsed = int(value)
    except ValueError:
        return default
    return parsed if parsed >= 0 else default


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

"""DRF-style error bodies `{type, code, detail, attr}` and the exception that answers with one."""

from __future__ import annotations

import math
from typing import Any

from starlette.responses import JSONResponse, Response

SERVER_ERROR_DETAIL = "A server error occurred."


def error_body(type: str, code: str, detail: str, attr: str | None = None) -> dict[str, Any]:
    """The body the real service sends for every API error (drf-exceptions-hog shape)."""
    return {"type": type, "code": code, "detail": detail, "attr": attr}


def error_response(
    status: int,
    type: str,
    code: str,
    detail: str,
    attr: str | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    """A JSON response carrying an error body with the given status."""
    return JSONResponse(error_body(type, code, detail, attr), status_code=status, headers=headers)


class APIError(Exception):
    """Raised anywhere inside a request handler; the app turns it into the error response it describes."""

    def __init__(
        self,
        status: int,
        type: str,
        code: str,
        detail: str,
        attr: str | None = None,
        headers: dict[str, str] | None = None,
        *,
        empty_body: bool = False,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.type = type
        self.code = code
        self.detail = detail
        self.attr = attr
        self.headers = headers or {}
        self.empty_body = empty_body

    def response(self) -> Response:
        """The HTTP response for this error (an empty body when `empty_body` is set, as the playlist 405)."""
        if self.empty_body:
            return Response(b"", status_code=self.status, headers=self.headers)
        return error_response(self.status, self.type, self.code, self.detail, self.attr, self.headers)


def validation_error(detail: str, attr: str | None = None, code: str = "invalid_input") -> APIError:
    """400 validation_error; `attr` names the field (nested fields joined with `__`)."""
    return APIError(400, "validation_error", code, detail, attr)


def parse_error(detail: str) -> APIError:
    """400 parse_error, as DRF answers a malformed JSON body."""
    return APIError(400, "invalid_request", "parse_error", detail)


def not_found(detail: str = "Not found.") -> APIError:
    """404 invalid_request/not_found."""
    return APIError(404, "invalid_request", "not_found", detail)


def not_authenticated() -> APIError:
    """401 when no credentials were sent (with the WWW-Authenticate header of the newest builds)."""
    return APIError(
        401,
        "authentication_error",
        "not_authenticated",
        "Authentication credentials were not provided.",
        headers={"WWW-Authenticate": 'Bearer realm="api"'},
    )


def authentication_failed(detail: str) -> APIError:
    """401 when the credentials sent are not valid."""
    return APIError(401, "authentication_error", "authentication_failed", detail)


def permission_denied(detail: str) -> APIError:
    """403 authentication_error/permission_denied with the given detail."""
    return APIError(403, "authentication_error", "permission_denied", detail)


def method_not_allowed(method: str, allow: str | None = None) -> APIError:
    """405 with the DRF body naming the method (and the `Allow` header when the methods are known)."""
    headers = {"Allow": allow} if allow else None
    return APIError(
        405, "invalid_request", "method_not_allowed", f'Method "{method}" not allowed.', None, headers
    )


def throttled(wait_seconds: float) -> APIError:
    """429 throttled_error with `Retry-After` rounded up to whole seconds, as DRF does."""
    wait = max(1, math.ceil(wait_seconds))
    return APIError(
        429,
        "throttled_error",
        "throttled",
        f"Request was throttled. Expected available in {wait} second{'s' if wait != 1 else ''}.",
        headers={"Retry-After": str(wait)},
    )


def server_error() -> APIError:
    """500 server_error, the body of an unhandled exception on the real service."""
    return APIError(500, "server_error", "error", SERVER_ERROR_DETAIL)

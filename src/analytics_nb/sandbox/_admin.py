"""The sandbox's own admin endpoints under ``/_sandbox/``: fault rules (`GET/POST/DELETE /_sandbox/faults/`,
`DELETE /_sandbox/faults/:id/`) and a health check. The fault endpoints are served only when the sandbox
was started with ``admin=True`` (the CLI's ``--admin``, which `start(mode="process")` uses; otherwise 404)
and only to the owner's key (``Authorization: Bearer <owner key>``; 401 without a key, 403 with another).
"""

from __future__ import annotations

from pydantic import ConfigDict
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from . import _auth
from ._context import SandboxContext, context_of
from ._endpoints import Endpoint
from ._errors import APIError, not_authenticated, not_found, permission_denied
from ._http import parse_json_body, read_body
from ._validation import JSONValue, RequestModel, validate

__all__ = ["ENDPOINTS", "FaultWrite"]


class FaultWrite(RequestModel):
    """Body of `POST /_sandbox/faults/`: the arguments of `Faults.add` (unknown fields refused)."""

    model_config = ConfigDict(extra="forbid")

    path: JSONValue(schema={"type": "string"}) = None  # type: ignore[valid-type]
    status: JSONValue(schema={"type": "integer", "nullable": True}) = None  # type: ignore[valid-type]
    rate: JSONValue(schema={"type": "number"}) = None  # type: ignore[valid-type]
    retry_after: JSONValue(schema={"type": "number", "nullable": True}) = None  # type: ignore[valid-type]
    delay: JSONValue(schema={"type": "number", "nullable": True}) = None  # type: ignore[valid-type]
    reset: JSONValue(schema={"type": "boolean"}) = None  # type: ignore[valid-type]
    methods: JSONValue(schema={"type": "array", "items": {"type": "string"}}) = None  # type: ignore[valid-type]
    kind: JSONValue(schema={"type": "string", "nullable": True}) = None  # type: ignore[valid-type]
    trickle: JSONValue(schema={"type": "number", "nullable": True}) = None  # type: ignore[valid-type]


def _admin(request: Request) -> SandboxContext:
    """The context, once the request is known to come from the owner (404 when admin is off)."""
    ctx = context_of(request)
    if not ctx.admin:
        raise not_found()
    key, _ = _auth.extract_key(request)
    if key is None:
        raise not_authenticated()
    if not _auth.is_key(key, ctx.owner_key_hash):
        raise permission_denied("The /_sandbox/ admin endpoints take only the sandbox owner's key.")
    return ctx


async def list_faults(request: Request) -> Response:
    """GET: the fault rules."""
    ctx = _admin(request)
    return JSONResponse({"results": ctx.faults.list()})


async def add_fault(request: Request) -> Response:
    """POST: add a rule -> 201 `{"id": n}`; bad arguments -> 400 naming the problem."""
    body = await read_body(request)
    ctx = _admin(request)
    data = validate(FaultWrite, parse_json_body(request, body)).sent()
    try:
        fault_id = ctx.faults.add(**{k: v for k, v in data.items() if v is not None or k == "status"})
    except (TypeError, ValueError) as exc:
        raise APIError(400, "validation_error", "invalid_input", str(exc)) from None
    return JSONResponse({"id": fault_id}, status_code=201)


async def clear_faults(request: Request) -> Response:
    """DELETE: remove every rule."""
    ctx = _admin(request)
    ctx.faults.clear()
    return Response(status_code=204)


async def remove_fault(request: Request) -> Response:
    """DELETE one rule: 204, or 404 when no rule has that id."""
    ctx = _admin(request)
    try:
        fault_id = int(request.path_params["fault_id"])
    except ValueError:
        raise not_found() from None
    if not ctx.faults.remove(fault_id):
        raise not_found()
    return Response(status_code=204)


async def health(request: Request) -> Response:
    """GET: `{"status": "ok", "profile": ...}` (always served)."""
    return JSONResponse({"status": "ok", "profile": context_of(request).profile})


_FAULTS = "/_sandbox/faults/"
ENDPOINTS = [
    Endpoint("GET", _FAULTS, list_faults, "sandbox_faults_list", "Fault rules", documented=False),
    Endpoint(
        "POST",
        _FAULTS,
        add_fault,
        "sandbox_faults_add",
        "Add a fault rule",
        body=FaultWrite,
        documented=False,
    ),
    Endpoint("DELETE", _FAULTS, clear_faults, "sandbox_faults_clear", "Remove every rule", documented=False),
    Endpoint(
        "DELETE",
        _FAULTS + "{fault_id}/",
        remove_fault,
        "sandbox_fault_remove",
        "Remove a rule",
        documented=False,
    ),
    Endpoint("GET", "/_sandbox/health/", health, "sandbox_health", "Health", auth="none", documented=False),
]

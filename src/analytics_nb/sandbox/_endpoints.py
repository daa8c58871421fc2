"""The endpoint table: each resource module lists its :class:`Endpoint` rows in ``ENDPOINTS``; from the same
rows this module builds the Starlette routes (:func:`build_routes`) and the OpenAPI document served at
``/api/schema/`` (:func:`openapi_document`), so the document cannot drift from what the server serves.

Paths are written as documented, with the trailing slash; the app strips a trailing slash from every request
(`_app.SandboxApp`), so each path is served with and without it.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from ._http import MAX_API_BODY, MAX_INT_PARAM, BodyTooLarge, read_limited, too_large

Handler = Callable[[Request], Awaitable[Response]]
Returns = Literal["object", "list", "page", "empty", "text"]
Auth = Literal["personal", "token", "none", "owner"]

#: Types of the path parameters used across the API (OpenAPI schema of each).
PATH_PARAMS: dict[str, dict[str, Any]] = {
    "project_id": {"type": "string", "example": "@current"},
    "organization_id": {"type": "string", "example": "@current"},
    "short_id": {"type": "string"},
    "session_recording_id": {"type": "string"},
    "id": {"type": "integer"},
    "flag_id": {"type": "integer"},
    "fault_id": {"type": "integer"},
    "hog_function_id": {"type": "string", "format": "uuid"},
    "template_id": {"type": "string", "example": "template-geoip"},
}
_PARAM_RE = re.compile(r"{(\w+)(?::\w+)?}")
#: Paging parameters: DRF's pagination reads a negative or junk value as the default
#: (`rest_framework/pagination.py`, `_positive_int`), so the document sets no minimum for them.
_PAGING = frozenset({"limit", "offset", "page"})


@dataclass(frozen=True)
class Query:
    """One documented query parameter; `content`: a JSON value sent as the parameter's text (its schema)."""

    name: str
    type: Literal["string", "integer", "boolean"] = "string"
    minimum: int | None = None
    required: bool = False
    content: dict[str, Any] | None = None
    maximum: int | None = None
    #: A paging number the handler clamps whatever its size (no maximum documented, as for `page`).
    clamped: bool = False
    #: The values a string parameter takes (documented as the schema's `enum`).
    enum: tuple[str, ...] | None = None
    #: The longest text a string parameter takes (longer: 400).
    max_length: int | None = None
    description: str | None = None
    #: A paging number a serializer checks (an integer >= `minimum`, else 400), not DRF's pagination
    #: (which reads junk as the default): documented as the plain integer it is.
    validated: bool = False


@dataclass(frozen=True)
class Refusal:
    """A refusal of a schema-valid request for a reason no schema can state: a rule on the stored state
    (a key another flag already uses, an id that names no row) or on the transport. The document lists
    them per operation (`x-refusals`) with the body's `code` / `attr` and, when those are not specific,
    the start of its `detail`; the conformance run's check (tests/sandbox/schemathesis/hooks.py) accepts
    exactly these and nothing else. `source`: the PostHog file and test that answer the same."""

    status: int
    code: str
    attr: str | None
    source: str
    detail: str | None = None

    def document(self) -> dict[str, Any]:
        """The `x-refusals` entry."""
        out: dict[str, Any] = {"status": self.status, "code": self.code, "attr": self.attr}
        if self.detail is not None:
            out["detail"] = self.detail
        out["source"] = self.source
        return out


@dataclass(frozen=True)
class Endpoint:
    """One operation: method + path -> handler, with what the OpenAPI document says about it.

    `body`: the pydantic request model (validated by the handler with `_validation.validate`, documented
    from its JSON schema) or `body_schema`, a raw schema for bodies that are not a model (capture, decide).
    `returns`: the 2xx body's shape. `aliases`: other paths served by the same handler (not documented).
    `body_limit`: bytes accepted, enforced while the body streams in and before authentication (None:
    the handler reads the body itself, as capture and decide do, with their own limits and error texts).
    `fast`: a POST the app calls directly, past routing (the decide/flags hot path).
    `refusals`: the state rules that refuse a schema-valid body (documented as `x-refusals`).
    `body_optional`: a request without a body is served (the `body_schema` is then documented as optional).
    """

    method: str
    path: str
    handler: Handler
    operation_id: str
    summary: str
    query: tuple[Query, ...] = ()
    body: type[BaseModel] | None = None
    body_schema: dict[str, Any] | None = None
    status: int = 200
    returns: Returns = "object"
    auth: Auth = "personal"
    errors: tuple[int, ...] = (400, 401, 403, 404)
    text_errors: bool = False
    aliases: tuple[str, ...] = ()
    body_limit: int | None = MAX_API_BODY
    fast: bool = False
    documented: bool = True
    extra_responses: dict[str, dict[str, Any]] = field(default_factory=dict)
    refusals: tuple[Refusal, ...] = ()
    body_optional: bool = False


def documented_path(path: str) -> str:
    """The path as the OpenAPI document writes it: `{id:int}` (Starlette's convertor) -> `{id}`."""
    return _PARAM_RE.sub(r"{\1}", path)


def route_path(path: str) -> str:
    """The path the router matches: without its trailing slash."""
    return path.rstrip("/") or "/"


def _with_body_limit(endpoint: Endpoint) -> Handler:
    handler = endpoint.handler
    limit = endpoint.body_limit
    if limit is None:
        return handler

    async def limited(request: Request) -> Response:
        if request.headers.get("content-length", "0") != "0" or "transfer-encoding" in request.headers:
            try:
                await read_limited(request, limit)  # cached on the request for the handler
            except BodyTooLarge:
                if endpoint.text_errors:
                    return PlainTextResponse(
                        "Failed to buffer the request body: length limit exceeded", status_code=413
                    )
                return too_large(limit).response()
        return await handler(request)

    return limited


#: Every method a route accepts from the router: a path answers the ones it does not serve itself with 405
#: and `Allow`, so a named action (`.../rearrange/`) is never shadowed by the `{id}` route after it.
_ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"]


def build_routes(endpoints: Iterable[Endpoint]) -> list[Route]:
    """One Starlette route per path (table order kept, so named actions come before `{id}`), dispatching by
    method; a method the path does not serve is a 405 with `Allow`, answered by the path itself (Starlette
    would otherwise try the later `{id}` route, which matches the action's name as an id)."""
    by_path: dict[str, dict[str, Handler]] = {}
    for ep in endpoints:
        for path in (ep.path, *ep.aliases):
            methods = by_path.setdefault(route_path(path), {})
            methods[ep.method] = _with_body_limit(ep)
    return [Route(p, _dispatcher(methods), methods=_ALL_METHODS, name=p) for p, methods in by_path.items()]


def _dispatcher(methods: dict[str, Handler]) -> Handler:
    served = dict(methods)
    if "GET" in served:
        served.setdefault("HEAD", served["GET"])
    allow = ", ".join(sorted(served))

    async def dispatch(request: Request) -> Response:
        handler = served.get(request.method)
        if handler is None:
            raise HTTPException(status_code=405, headers={"Allow": allow})
        return await handler(request)

    return dispatch


def fast_routes(endpoints: Iterable[Endpoint]) -> dict[str, Handler]:
    """POST handlers the app calls directly by path (no routing walk): `{path without slash: handler}`."""
    out: dict[str, Handler] = {}
    for ep in endpoints:
        if ep.fast and ep.method == "POST":
            for path in (ep.path, *ep.aliases):
                out[route_path(path)] = ep.handler
    return out


# -- OpenAPI -------------------------------------------------------------------------------------------------
_ERROR_SCHEMA = {
    "type": "object",
    "required": ["type", "code", "detail", "attr"],
    "properties": {
        "type": {"type": "string"},
        "code": {"type": "string"},
        "detail": {"type": "string"},
        "attr": {"type": "string", "nullable": True},
    },
}
_TEXT = {"text/plain": {"schema": {"type": "string"}}}


def _ok_schema(returns: Returns) -> dict[str, Any] | None:
    if returns == "object":
        return {"type": "object"}
    if returns == "list":
        return {"type": "array", "items": {}}
    if returns == "page":
        return {
            "type": "object",
            "required": ["count", "next", "previous", "results"],
            "properties": {
                "count": {"type": "integer"},
                "next": {"type": "string", "nullable": True},
                "previous": {"type": "string", "nullable": True},
                "results": {"type": "array", "items": {"type": "object"}},
            },
        }
    return None


def _operation(ep: Endpoint, schemas: dict[str, Any]) -> dict[str, Any]:
    params: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": PATH_PARAMS.get(name, {"type": "string"})}
        for name in _PARAM_RE.findall(ep.path)
    ]
    for q in ep.query:
        if q.content is not None:
            content = {"application/json": {"schema": q.content}}
            params.append({"name": q.name, "in": "query", "required": q.required, "content": content})
            continue
        param = {"name": q.name, "in": "query", "required": q.required, "schema": _query_schema(q)}
        if q.description is not None:
            param["description"] = q.description
        params.append(param)
    responses: dict[str, Any] = {}
    if ep.returns == "text":
        responses[str(ep.status)] = {"description": "OK", "content": _TEXT}
    else:
        ok = _ok_schema(ep.returns)
        responses[str(ep.status)] = (
            {"description": "OK", "content": {"application/json": {"schema": ok}}}
            if ok is not None
            else {"description": "No content"}
        )
    for code in ep.errors:
        responses[str(code)] = (
            {"description": "Error", "content": _TEXT}
            if ep.text_errors
            else {"$ref": "#/components/responses/Error"}
        )
    responses.update(ep.extra_responses)
    op: dict[str, Any] = {
        "operationId": ep.operation_id,
        "summary": ep.summary,
        "parameters": params,
        "responses": responses,
    }
    if ep.auth != "personal":
        op["security"] = []
    if ep.refusals:
        op["x-refusals"] = [r.document() for r in ep.refusals]
    if ep.body is not None:
        name = ep.body.__name__
        schemas[name] = _model_schema(ep.body)
        extra = getattr(ep.body, "create_schema", None)
        creates = ep.method == "POST" and bool(extra)
        if creates:
            name += "Create"
            schemas[name] = _create_schema(schemas[ep.body.__name__], extra or {})
        op["requestBody"] = {
            "required": creates and getattr(ep.body, "create_body_required", True),
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}},
        }
    elif ep.body_schema is not None:
        op["requestBody"] = {
            "required": not ep.body_optional,
            "content": {"application/json": {"schema": ep.body_schema}},
        }
    return op


def _query_schema(q: Query) -> dict[str, Any]:
    """A query parameter's schema. Paging parameters say what DRF's pagination takes: a number up to
    SQLite's range (past it: 400, `_http.int_param`; `page` is clamped instead) or any text that is not a
    number (read as the default, as `rest_framework/pagination.py` `_positive_int` does), no minimum."""
    if q.name in _PAGING and q.type == "integer" and not q.validated:
        number: dict[str, Any] = {"type": "integer"}
        if q.name != "page" and not q.clamped:
            number["maximum"] = q.maximum if q.maximum is not None else MAX_INT_PARAM
        # text that is not an integer: empty, a lone sign, or a non-digit where no integer has one
        junk = {"type": "string", "pattern": "^$|^[+-]$|^[^0-9+-]|.[^0-9]"}
        return {"anyOf": [number, junk]}
    schema: dict[str, Any] = {"type": q.type}
    if q.minimum is not None:
        schema["minimum"] = q.minimum
    if q.maximum is not None:
        schema["maximum"] = q.maximum
    if q.enum is not None:
        schema["enum"] = list(q.enum)
    if q.max_length is not None:
        schema["maxLength"] = q.max_length
    return schema


def _create_schema(schema: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """The body schema of a create / full update: `extra` added (its `properties` replace the model's of the
    same name: what a create accepts that an update does not); its required fields not nullable."""
    out = {**schema, **extra, "properties": {**schema.get("properties", {}), **extra.get("properties", {})}}
    for name in extra.get("required", ()):
        prop = dict(out["properties"].get(name, {}))
        prop.pop("nullable", None)
        if "enum" in prop:
            prop["enum"] = [v for v in prop["enum"] if v is not None]
        out["properties"][name] = prop
    return out


def _model_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True, ref_template="#/components/schemas/{model}")
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
            if prop.get("default", 0) is None:
                prop.pop("default")
    return schema


def openapi_document(endpoints: Iterable[Endpoint]) -> dict[str, Any]:
    """The OpenAPI 3.0 document of the documented endpoints."""
    schemas: dict[str, Any] = {"Error": _ERROR_SCHEMA}
    paths: dict[str, dict[str, Any]] = {}
    for ep in endpoints:
        if ep.documented:
            paths.setdefault(documented_path(ep.path), {})[ep.method.lower()] = _operation(ep, schemas)
    return {
        "openapi": "3.0.3",
        "info": {"title": "analytics-nb sandbox", "version": "1.0.0"},
        "components": {
            "securitySchemes": {"PersonalAPIKey": {"type": "http", "scheme": "bearer"}},
            "responses": {
                "Error": {
                    "description": "Error",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
                }
            },
            "schemas": schemas,
        },
        "security": [{"PersonalAPIKey": []}],
        "paths": paths,
    }

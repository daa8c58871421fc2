"""Sending to the ingestion endpoints through the client's core, and the sync/async calling convention.

Every public capture function takes the client first. The plain ones (``capture_frame``, ...) take a sync
``Client`` and block (the flow runs on the client's loop through ``client.run``); the ``a``-prefixed twins
(``acapture_frame``, ...) are coroutines for ``AsyncClient`` (or a sync ``Client`` from async code).
"""

from __future__ import annotations

import asyncio
import gzip as gzip_mod
import json
from collections.abc import Coroutine
from typing import Any, TypeVar

from analytics_nb.client import AnyApiClient, ApiClient, AsyncApiClient, Core
from analytics_nb.errors import NetworkError, PostHogError, RateLimitedError, ServerError

__all__ = ["core_of", "is_retryable", "post_batch", "post_event", "project_key", "run_blocking"]

T = TypeVar("T")

GZIP_LEVEL = 1
"""zlib level for ``/batch`` bodies: event JSON still shrinks about 5x, at a third of level 6's CPU time."""


def run_blocking(client: ApiClient, coro: Coroutine[Any, Any, T], twin: str) -> T:
    """Run ``coro`` on a sync client's loop and return its result; an ``AsyncClient`` is told to ``await``
    the ``twin`` (e.g. ``acapture_frame``) instead."""
    if isinstance(client, ApiClient):
        return client.run(coro)
    coro.close()
    if isinstance(client, AsyncApiClient):
        raise TypeError(f"this is an AsyncClient: use `await {twin}(client, ...)` (or the client's method).")
    raise TypeError(_not_a_client(client))


def _not_a_client(client: object) -> str:
    return (
        f"expected an analytics_nb Client or AsyncClient, got {type(client).__name__}; create one with "
        "analytics_nb.Client(host, project_api_key='phc_...')"
    )


def core_of(client: AnyApiClient) -> Core:
    """The transport of either client (the one seam capture uses)."""
    if isinstance(client, ApiClient | AsyncApiClient):
        return client.core
    raise TypeError(_not_a_client(client))


async def project_key(client: AnyApiClient) -> str:
    """The project API key (``phc_...``) capture bodies carry (given to the client, or read from the API)."""
    return str(await core_of(client).project_api_key())


def is_retryable(exc: BaseException) -> bool:
    """Failures worth another attempt: network errors, 5xx, 408 and 429 (the uuids make re-sending safe)."""
    if isinstance(exc, NetworkError | ServerError | RateLimitedError):
        return True
    return isinstance(exc, PostHogError) and exc.status in (408, 500, 502, 503, 504)


async def post_event(client: AnyApiClient, event: dict[str, Any]) -> None:
    """POST one event to ``/capture/`` (retried by the core: the event's uuid makes a repeat harmless)."""
    key = await project_key(client)
    body = json.dumps({"api_key": key, **event}, separators=(",", ":"), allow_nan=False)
    await core_of(client).request(
        "POST",
        "/capture/",
        service="ingest",
        content=body.encode("ascii"),
        headers={"Content-Type": "application/json"},
        idempotent=True,
        auth=False,
    )


def batch_body(key: str, events_json: bytes, *, historical_migration: bool) -> bytes:
    """The ``/batch`` JSON body around an encoded event array (UTF-8; no ``sent_at``: timestamps are sent
    as-is)."""
    head = '{"api_key":' + json.dumps(key)
    if historical_migration:
        head += ',"historical_migration":true'
    return (head + ',"batch":').encode("ascii") + events_json + b"}"


async def post_batch(
    client: AnyApiClient, key: str, events_json: bytes, *, gzip: bool, historical_migration: bool
) -> None:
    """POST an encoded event array to ``/batch/`` (gzip optional) with the core's retries (typed errors)."""
    body = batch_body(key, events_json, historical_migration=historical_migration)
    headers = {"Content-Type": "application/json"}
    if gzip:
        # zlib releases the GIL: compressing in a worker thread overlaps with encoding the next batch
        body = await asyncio.to_thread(gzip_mod.compress, body, GZIP_LEVEL, mtime=0)
        headers["Content-Encoding"] = "gzip"
    await core_of(client).request(
        "POST",
        "/batch/",
        service="ingest",
        content=body,
        headers=headers,
        idempotent=True,
        auth=False,
    )

"""``/flags/?v=4`` (default, what posthog-python 7.91.1 posts: ``request.py`` ``flags()``) and, on request,
the legacy ``/decide/?v=3`` on the ingestion host, authenticated by the project API key.

PostHog is deleting the decide code (PostHog/posthog #48165); ``/flags`` answers typed records that say
which flags the service failed to evaluate (``failed: true``), which the legacy map cannot.
"""

from __future__ import annotations

import ipaddress
import warnings
import weakref
from collections.abc import Mapping
from typing import Any, Literal

from analytics_nb.client._core import Core, decode_json, parse_model
from analytics_nb.errors import ResponseFormatError
from analytics_nb.models import DecideResponse
from analytics_nb.wire import check_distinct_id

__all__ = [
    "DEFAULT_VERSIONS",
    "RUNTIMES",
    "FlagsRateLimitWarning",
    "check_runtime",
    "decide",
    "decide_body",
    "note_rate_limit_warning",
]

DEFAULT_VERSIONS = {"decide": 3, "flags": 4}

Runtime = Literal["server", "client"]
RUNTIMES = ("server", "client")
"""What ``runtime=`` may be. The flags service answers a flag whose ``evaluation_runtime`` is "server" or
"client" only to a caller of that runtime, and **neither** to a caller it cannot place (its User-Agent parser
does not know ``analytics-nb/<version>``): `detect_evaluation_runtime_from_request` and
`collect_excluded_by_runtime` in `rust/feature-flags/src/handler/flags.rs`. So every request says which
runtime it asks as (``evaluation_runtime`` in the body): "server" (what a server SDK gets, the default) or
"client" (what browsers and mobile apps get)."""

RATE_LIMIT_WARNING_HEADER = "X-PostHog-Rate-Limit-Warning"
"""Set to ``true`` on a 200 by the flags service's warn tier, before its 429s start (per token and per IP:
`rust/feature-flags/src/api/flags_rate_limiter.rs`)."""


class FlagsRateLimitWarning(UserWarning):
    """The flags service answered with ``X-PostHog-Rate-Limit-Warning: true``: this token or IP is near its
    limit and 429s come next. Said once per client; fewer requests in flight (``concurrency=``) or a
    sample of the rows avoids them."""


_warned: weakref.WeakSet[Core] = weakref.WeakSet()


def note_rate_limit_warning(core: Core, headers: Mapping[str, str]) -> bool:
    """Warn once per client (`FlagsRateLimitWarning`) when a flags answer carries the service's rate-limit
    warning header; True when the header was there."""
    if str(headers.get(RATE_LIMIT_WARNING_HEADER, "")).strip().lower() != "true":
        return False
    if core not in _warned:
        _warned.add(core)
        warnings.warn(
            "the flags service says this token or IP is near its rate limit (X-PostHog-Rate-Limit-Warning): "
            "429 answers come next and slow the run down. Send fewer requests in flight (concurrency=), "
            "simulate a sample of the rows, or use engine='local'.",
            FlagsRateLimitWarning,
            stacklevel=3,
        )
    return True


def check_runtime(runtime: Any) -> str:
    """``runtime`` checked: "server" or "client"; a ValueError naming the choices otherwise."""
    if runtime not in RUNTIMES:
        raise ValueError(
            f"runtime={runtime!r}: use 'server' (what a server SDK gets, the default) or 'client' (what "
            "browsers and mobile apps get); flags scoped to one runtime answer only to callers of it."
        )
    return str(runtime)


def _mapping(name: str, value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValueError(f"{name} must be a dict, got {type(value).__name__}.")
    return {str(k): v for k, v in value.items()}


def decide_body(
    token: str,
    distinct_id: str,
    *,
    groups: Mapping[str, Any] | None = None,
    person_properties: Mapping[str, Any] | None = None,
    group_properties: Mapping[str, Any] | None = None,
    flag_keys: list[str] | None = None,
    geoip_disable: bool = False,
    evaluation_runtime: str | None = None,
) -> dict[str, Any]:
    """The one ``/decide`` / ``/flags`` request body (overrides given as None are left out).

    ``flag_keys`` asks the service for those flags only (``flag_keys_to_evaluate``); ``geoip_disable``
    stops it from geolocating the caller's own address into the person's properties;
    ``evaluation_runtime`` ("server" / "client", `RUNTIMES`) says which runtime the request asks as.
    """
    body: dict[str, Any] = {"api_key": token, "distinct_id": distinct_id}
    if evaluation_runtime is not None:
        body["evaluation_runtime"] = evaluation_runtime
    if flag_keys:
        body["flag_keys_to_evaluate"] = flag_keys
    for name, value in (
        ("person_properties", person_properties),
        ("groups", groups),
        ("group_properties", group_properties),
    ):
        if value is not None:
            body[name] = value
    if geoip_disable:
        body["geoip_disable"] = True
    return body


#: The overrides a decide request may carry (each left out when None).
DECIDE_OVERRIDES = ("groups", "person_properties", "group_properties")


async def decide(
    core: Core,
    distinct_id: str,
    overrides: Mapping[str, Any],
    *,
    ip: str | None,
    endpoint: Literal["decide", "flags"],
    version: int | None,
    runtime: str = "server",
) -> DecideResponse:
    """`AsyncApiClient.decide` (its parameters and docstring are there): check the arguments, send the
    request, read the answer. ``overrides`` holds ``groups``, ``person_properties`` and
    ``group_properties`` by name (None: not sent)."""
    distinct_id = check_distinct_id(distinct_id)  # a float id (1.0) is refused with the fix
    if endpoint not in DEFAULT_VERSIONS:
        raise ValueError(f"endpoint={endpoint!r} is not allowed; use 'decide' or 'flags'.")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 1):
        raise ValueError(f"version={version!r} must be a positive integer (decide: 1-4, flags: 1-2).")
    runtime = check_runtime(runtime)
    groups, person_properties, group_properties = (
        _mapping(name, overrides.get(name)) for name in DECIDE_OVERRIDES
    )
    body = decide_body(
        await core.project_api_key(),
        str(distinct_id),
        groups=groups,
        person_properties=person_properties,
        group_properties=group_properties,
        evaluation_runtime=runtime,
    )
    headers: dict[str, str] = {}
    if ip is not None:
        try:
            ipaddress.ip_address(str(ip).strip())
        except ValueError:
            raise ValueError(f"ip={ip!r} is not an IP address (e.g. '203.0.113.7').") from None
        headers["X-Forwarded-For"] = str(ip).strip()
    response = await core.request(
        "POST",
        f"/{endpoint}/",
        service="ingest",
        params={"v": version or DEFAULT_VERSIONS[endpoint]},
        json=body,
        headers=headers,
        idempotent=True,
        auth=False,
    )
    note_rate_limit_warning(core, response.headers)
    safe_url = core.scrub(str(response.url))
    body = decode_json(response, safe_url)
    if not isinstance(body, dict):
        raise ResponseFormatError(
            f"POST {safe_url} answered HTTP {response.status_code} with "
            f"{'an empty body' if body is None else type(body).__name__} instead of the flags object; "
            "check that host= points at PostHog (its ingestion host for decide) and retry.",
            status=response.status_code,
            method="POST",
            url=safe_url,
        )
    return parse_model(DecideResponse, body)

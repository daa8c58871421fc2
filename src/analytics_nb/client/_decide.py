"""``/flags/?v=4`` (default, what posthog-python 7.91.1 posts: ``request.py`` ``flags()``) and, on request,
the legacy ``/decide/?v=3`` on the ingestion host, authenticated by the project API key.

PostHog is deleting the decide code (PostHog/posthog #48165); ``/flags`` answers typed records that say
which flags the service failed to evaluate (``failed: true``), which the legacy map cannot.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any, Literal

from analytics_nb.client._core import Core, decode_json, parse_model
from analytics_nb.errors import ResponseFormatError
from analytics_nb.models import DecideResponse
from analytics_nb.wire import check_distinct_id

__all__ = ["DEFAULT_VERSIONS", "decide", "decide_body"]

DEFAULT_VERSIONS = {"decide": 3, "flags": 4}


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
) -> dict[str, Any]:
    """The one ``/decide`` / ``/flags`` request body (overrides given as None are left out).

    ``flag_keys`` asks the service for those flags only (``flag_keys_to_evaluate``); ``geoip_disable``
    stops it from geolocating the caller's own address into the person's properties.
    """
    body: dict[str, Any] = {"api_key": token, "distinct_id": distinct_id}
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
) -> DecideResponse:
    """`AsyncApiClient.decide` (its parameters and docstring are there): check the arguments, send the
    request, read the answer. ``overrides`` holds ``groups``, ``person_properties`` and
    ``group_properties`` by name (None: not sent)."""
    distinct_id = check_distinct_id(distinct_id)  # a float id (1.0) is refused with the fix
    if endpoint not in DEFAULT_VERSIONS:
        raise ValueError(f"endpoint={endpoint!r} is not allowed; use 'decide' or 'flags'.")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 1):
        raise ValueError(f"version={version!r} must be a positive integer (decide: 1-4, flags: 1-2).")
    groups, person_properties, group_properties = (
        _mapping(name, overrides.get(name)) for name in DECIDE_OVERRIDES
    )
    body = decide_body(
        await core.project_api_key(),
        str(distinct_id),
        groups=groups,
        person_properties=person_properties,
        group_properties=group_properties,
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

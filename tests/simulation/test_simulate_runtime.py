"""Runtime- and tag-scoped flags: the sandbox filters them as the flags service does, and the client says
which runtime it asks as.

The service: `rust/feature-flags/src/handler/flags.rs` (`detect_evaluation_runtime_from_request`,
`collect_excluded_by_runtime`, `collect_excluded_by_tags`, test
`test_collect_excluded_by_runtime_with_no_runtime`) and `rust/feature-flags/src/utils/user_agent.rs`
(`UserAgentInfo::parse`).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import httpx
import pandas as pd
import pytest

from _clients import client_for
from analytics_nb import Client
from analytics_nb.client import FlagsRateLimitWarning
from analytics_nb.sandbox import Sandbox, start
from analytics_nb.simulation import FilteredFlagsWarning, SimulationInputError

ALL_ON = {"groups": [{"properties": [], "rollout_percentage": 100}]}
SCOPED = {
    "rt-server": {"evaluation_runtime": "server"},
    "rt-client": {"evaluation_runtime": "client"},
    "rt-all": {"evaluation_runtime": "all"},
    "rt-odd": {"evaluation_runtime": "edge"},  # any other value counts as "all" (EvaluationRuntime::from)
    "tag-web": {"evaluation_tags": ["web"]},
}


@pytest.fixture(scope="module")
def scoped() -> Iterator[tuple[Sandbox, Client]]:
    with start(seed="empty", profile="spec") as sb:
        client = client_for(sb, ids=True)
        for key, extra in SCOPED.items():
            client.feature_flags.create(key, filters=ALL_ON, **extra)
        try:
            yield sb, client
        finally:
            client.close()


def _keys(sb: Sandbox, body: dict[str, Any] | None = None, **headers: str) -> set[str]:
    """The flag keys one raw ``/flags/?v=4`` answers, with these headers and body extras."""
    payload = {"api_key": sb.project_api_key, "distinct_id": "u1", **(body or {})}
    with httpx.Client(base_url=sb.url, timeout=10) as http:
        response = http.post("/flags/?v=4", json=payload, headers={"user-agent": "analytics-nb/0", **headers})
    assert response.status_code == 200, response.text
    return set(response.json()["flags"])


UNSCOPED = {"rt-all", "rt-odd", "tag-web"}


@pytest.mark.parametrize(
    ("headers", "body", "expected"),
    [
        ({}, {}, UNSCOPED),  # unknown runtime: neither server- nor client-only flags
        ({"user-agent": "posthog-python/7.91.1"}, {}, UNSCOPED | {"rt-server"}),
        ({"user-agent": "python-requests/2.32"}, {}, UNSCOPED | {"rt-server"}),
        ({"user-agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/89.0"}, {}, UNSCOPED | {"rt-client"}),
        ({"user-agent": "posthog-js/1.88.0"}, {}, UNSCOPED | {"rt-client"}),
        ({"user-agent": "posthog-madeup/1.0"}, {}, UNSCOPED),  # an SDK name the parser does not know
        ({"origin": "https://app.example.com"}, {}, UNSCOPED | {"rt-client"}),
        ({}, {"evaluation_runtime": "SERVER"}, UNSCOPED | {"rt-server"}),
        ({"user-agent": "posthog-js/1.0"}, {"evaluation_runtime": "server"}, UNSCOPED | {"rt-server"}),
        ({}, {"evaluation_runtime": "all"}, UNSCOPED | {"rt-server", "rt-client"}),
        ({}, {"evaluation_runtime": "whatever"}, UNSCOPED | {"rt-server", "rt-client"}),  # -> All
        ({}, {"evaluation_environments": ["web", "x"]}, UNSCOPED),
        ({}, {"evaluation_environments": ["api"]}, UNSCOPED - {"tag-web"}),
        ({}, {"evaluation_environments": []}, UNSCOPED),  # no tags: no filtering
    ],
)
def test_sandbox_filters_as_the_service(
    scoped: tuple[Sandbox, Client], headers: dict[str, str], body: dict[str, Any], expected: set[str]
) -> None:
    assert _keys(scoped[0], body, **headers) == expected


def test_bad_runtime_or_environments_is_a_400_not_a_500(scoped: tuple[Sandbox, Client]) -> None:
    sb = scoped[0]
    with httpx.Client(base_url=sb.url, timeout=10) as http:
        for extra in ({"evaluation_runtime": 5}, {"evaluation_environments": "web"}):
            r = http.post("/flags/?v=4", json={"api_key": sb.project_api_key, "distinct_id": "u", **extra})
            assert r.status_code == 400 and "Failed to decode request" in r.text


def test_decide_asks_as_a_server_by_default_and_as_a_client_on_request(
    scoped: tuple[Sandbox, Client],
) -> None:
    _sb, client = scoped
    server = client.decide("u2")
    assert server.feature_flags.get("rt-server") is True and "rt-client" not in server.feature_flags
    browser = client.decide("u2", runtime="client")
    assert browser.feature_flags.get("rt-client") is True and "rt-server" not in browser.feature_flags
    with pytest.raises(ValueError, match="runtime='browser'"):
        client.decide("u2", runtime="browser")  # type: ignore[arg-type]


def test_simulate_names_the_flags_filtered_by_runtime(scoped: tuple[Sandbox, Client]) -> None:
    _sb, client = scoped
    sets = pd.DataFrame({"distinct_id": [f"p{i}" for i in range(6)]})
    with pytest.warns(FilteredFlagsWarning, match=r"'rt-client'.*runtime='client'") as caught:
        result = client.simulate(sets, engine="remote")
    assert all("inactive" not in str(w.message) for w in caught)
    assert result.frame["rt-server"].eq(True).all() and result.frame["rt-client"].isna().all()
    with pytest.warns(FilteredFlagsWarning, match="'rt-server'"):
        browsers = client.simulate(sets, engine="remote", runtime="client")
    assert browsers.frame["rt-client"].eq(True).all() and browsers.frame["rt-server"].isna().all()
    with pytest.warns(FilteredFlagsWarning):
        both = client.simulate(sets, ["rt-client"], engine="both")
    assert set(both.differences["cause"]) == {"filtered by runtime"}
    with pytest.raises(SimulationInputError, match="runtime='edge'"):
        client.simulate(sets, engine="remote", runtime="edge")  # type: ignore[arg-type]


def test_rate_limit_warning_header_warns_once(scoped: tuple[Sandbox, Client]) -> None:
    sb = scoped[0]
    with client_for(sb, ids=True) as client:  # a fresh client: the warning is once per client
        fault = sb.faults.add(path="/flags*", kind="rate_limit_warning")
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                client.simulate(pd.DataFrame({"distinct_id": [f"r{i}" for i in range(5)]}), ["rt-all"])
                client.decide("r9")
        finally:
            sb.faults.remove(fault)
        rate = [w for w in caught if issubclass(w.category, FlagsRateLimitWarning)]
        assert len(rate) == 1 and "near its rate limit" in str(rate[0].message)

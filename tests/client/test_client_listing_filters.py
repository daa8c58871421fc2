"""The filters of every listing (``iter``/``list``/``frame``), over HTTP against the sandbox: each filter
narrows the answer as the service would, an unknown keyword is a ValueError before any request (a typo
sent would be ignored by the service and answer every record), and each bad value names its field.

Regression (issue 24): ``client.feature_flags.list(serach="x")`` sent ``serach`` as given; the service
ignored it and the analyst got every flag. ``search``, ``type``, ``evaluation_runtime``... were
answered by nobody: the sandbox read only ``search`` and ``active``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from _clients import client_for
from _sandbox_helpers import api, days_ago, set_flag_fields
from analytics_nb import Client
from analytics_nb.models import FeatureFlag
from analytics_nb.sandbox import Sandbox

FULL = {"groups": [{"rollout_percentage": 100, "properties": []}]}
HALF = {"groups": [{"rollout_percentage": 50, "properties": []}]}
VARIANTS = {"variants": [{"key": "a", "rollout_percentage": 50}, {"key": "b", "rollout_percentage": 50}]}
#: A port nothing listens on: a request sent there fails with a connection error, not a ValueError.
NOWHERE = "http://127.0.0.1:9"


@pytest.fixture(scope="module")
def demo(sandbox: Sandbox) -> Iterator[Client]:
    with client_for(sandbox, keys="personal") as c:
        yield c


@pytest.fixture(scope="module")
def flags_sandbox() -> Iterator[Sandbox]:
    """A sandbox with a known set of flags (keys, names, types, runtimes, ages, authors)."""
    from analytics_nb.sandbox import start

    with start(seed="empty", profile="spec") as sb, client_for(sb, keys="personal") as c:
        c.feature_flags.create(
            "checkout-redesign", name="New checkout", filters=HALF, tags=["checkout", "web"]
        )
        c.feature_flags.create("old-banner", name="Banner", filters=FULL)
        c.feature_flags.create("pricing-test", name="Pricing", filters={**HALF, "multivariate": VARIANTS})
        c.feature_flags.create("kill-switch", name="Kill switch", filters=FULL, active=False)
        c.feature_flags.create("server-only", filters=HALF, evaluation_runtime="server")
        c.feature_flags.create("remote-cfg", filters=FULL, is_remote_configuration=True)
        set_flag_fields(sb, "old-banner", created_at=days_ago(90))
        set_flag_fields(
            sb, "pricing-test", experiment_set=[{"id": 3, "name": "Pricing A/B", "deleted": False}]
        )
        set_flag_fields(sb, "kill-switch", created_by={"id": 4242, "email": "other@example.com"})
        yield sb


@pytest.fixture(scope="module")
def flags(flags_sandbox: Sandbox) -> Iterator[Client]:
    with client_for(flags_sandbox, keys="personal") as c:
        yield c


def _keys(found: list[FeatureFlag]) -> list[str]:
    return [f.key for f in found]


# -- feature flags: each filter narrows as the service would -----
def test_regression_a_misspelt_flag_filter_is_refused_not_ignored(
    flags: Client, flags_sandbox: Sandbox
) -> None:
    """Before: ``list(serach="x")`` sent ``serach``, the service ignored it and answered all six flags."""
    flags_sandbox.clear_requests()
    with pytest.raises(ValueError, match=r"serach.*'search'") as caught:
        flags.feature_flags.list(serach="checkout")  # type: ignore[call-arg]
    assert "created_by_id" in str(caught.value)  # the allowed filters are named
    assert len(flags_sandbox.requests()) == 0
    assert _keys(flags.feature_flags.list(search="checkout")) == ["checkout-redesign"]


def test_every_flag_filter_narrows(flags: Client) -> None:
    everything = _keys(flags.feature_flags.list())
    assert len(everything) == 6
    assert _keys(flags.feature_flags.list(search="NEW CHECKOUT")) == ["checkout-redesign"]  # name, any case
    assert _keys(flags.feature_flags.list(search="kill switch")) == ["kill-switch"]  # a space matches "-"
    assert _keys(flags.feature_flags.list(key="Old-Banner")) == ["old-banner"]
    assert _keys(flags.feature_flags.list(active=False)) == ["kill-switch"]
    assert "kill-switch" not in _keys(flags.feature_flags.list(active=True))
    assert _keys(flags.feature_flags.list(active="STALE")) == ["old-banner"]
    assert _keys(flags.feature_flags.list(type="multivariant")) == ["pricing-test"]
    assert _keys(flags.feature_flags.list(type="experiment")) == ["pricing-test"]
    assert _keys(flags.feature_flags.list(type="remote_config")) == ["remote-cfg"]
    assert "pricing-test" not in _keys(flags.feature_flags.list(type="boolean"))
    assert _keys(flags.feature_flags.list(evaluation_runtime="server")) == ["server-only"]
    assert "server-only" not in _keys(flags.feature_flags.list(evaluation_runtime="all"))
    assert _keys(flags.feature_flags.list(created_by_id=4242)) == ["kill-switch"]
    me = flags.feature_flags.list(key="old-banner")[0].created_by
    assert me is not None and len(flags.feature_flags.list(created_by_id=[me.id, 4242])) == 6
    kept = _keys(flags.feature_flags.list(excluded_properties=["old-banner", "remote-cfg"]))
    assert kept == [k for k in everything if k not in ("old-banner", "remote-cfg")]
    assert _keys(flags.feature_flags.list(tags=["checkout", "mobile"])) == ["checkout-redesign"]
    assert "checkout-redesign" not in _keys(flags.feature_flags.list(excluded_tags=["web"]))
    assert len(flags.feature_flags.list(excluded_tags=["web"])) == 5
    assert _keys(flags.feature_flags.list(order="key")) == sorted(everything)
    assert _keys(flags.feature_flags.list(order="-created_at")) == everything
    # filters combine, as the service's queryset does
    assert _keys(flags.feature_flags.list(active=True, type="boolean", search="banner")) == ["old-banner"]


def test_key_and_tags_are_checked_here_when_an_older_service_ignores_them(
    flags: Client, flags_sandbox: Sandbox
) -> None:
    """An older self-hosted PostHog reads no ``key`` / ``tags`` filter and answers every flag; the client
    keeps only the flags that pass them (the sandbox's ``legacy_list_filters`` fault plays that service)."""
    fault = flags_sandbox.faults.add(path="/api/projects/*/feature_flags", kind="legacy_list_filters")
    try:
        with api(flags_sandbox) as http:
            assert (
                http.get(f"/api/projects/{flags_sandbox.project_id}/feature_flags/?key=old-banner").json()[
                    "count"
                ]
                == 6
            )
        assert _keys(flags.feature_flags.list(key="OLD-banner")) == ["old-banner"]
        assert _keys(flags.feature_flags.list(key="old-banner", max_items=1)) == ["old-banner"]
        assert _keys(flags.feature_flags.list(tags=["checkout"])) == ["checkout-redesign"]
        assert "checkout-redesign" not in _keys(flags.feature_flags.list(excluded_tags=["web"]))
    finally:
        flags_sandbox.faults.remove(fault)


def test_flag_paging_and_every_form(flags: Client) -> None:
    everything = _keys(flags.feature_flags.list(order="key"))
    assert _keys(flags.feature_flags.list(order="key", page_size=2)) == everything
    assert _keys(flags.feature_flags.list(order="key", offset=2, max_items=3)) == everything[2:5]
    assert [f.key for f in flags.feature_flags.iter(order="key", max_items=2)] == everything[:2]
    frame = flags.feature_flags.frame(type="boolean", active=True)
    assert set(frame["key"]) == {"checkout-redesign", "old-banner", "server-only", "remote-cfg"}


def test_async_client_takes_the_same_filters(flags_sandbox: Sandbox) -> None:
    import asyncio

    from analytics_nb import AsyncClient

    async def run() -> list[str]:
        async with AsyncClient(flags_sandbox.url, personal_api_key=flags_sandbox.personal_api_key) as ac:
            with pytest.raises(ValueError, match="serach"):
                await ac.feature_flags.list(serach="x")  # type: ignore[call-arg]
            return [f.key async for f in ac.feature_flags.iter(type="multivariant")]

    assert asyncio.run(run()) == ["pricing-test"]


@pytest.mark.parametrize(
    ("filters", "field"),
    [
        ({"active": "yes"}, "active"),
        ({"active": 1}, "active"),
        ({"created_by_id": "bob"}, "created_by_id"),
        ({"created_by_id": []}, "created_by_id"),
        ({"search": ""}, "search"),
        ({"search": "x" * 201}, "search"),
        ({"key": 5}, "key"),
        ({"type": "bool"}, "type"),
        ({"evaluation_runtime": "both"}, "evaluation_runtime"),
        ({"excluded_properties": "old-banner"}, "excluded_properties"),
        ({"excluded_properties": [1]}, "excluded_properties"),
        ({"tags": "checkout"}, "tags"),
        ({"excluded_tags": [""]}, "excluded_tags"),
        ({"order": "bogus"}, "order"),
        ({"page_size": 501}, "page_size"),
        ({"max_items": -1}, "max_items"),
        ({"serach": "x"}, "serach"),
    ],
)
def test_bad_flag_filters_are_refused_before_any_request(filters: dict[str, Any], field: str) -> None:
    with Client(NOWHERE, personal_api_key="phx_test", max_retries=0) as client:
        for form in (
            client.feature_flags.list,
            client.feature_flags.frame,
            lambda **f: list(client.feature_flags.iter(**f)),
        ):
            with pytest.raises(ValueError, match=field):
                form(**filters)


# -- hog functions and templates -----
def test_regression_a_misspelt_hog_function_filter_is_refused(demo: Client, sandbox: Sandbox) -> None:
    sandbox.clear_requests()
    with pytest.raises(ValueError, match=r"enabeld.*'enabled'"):
        demo.hog_functions.list(enabeld=True)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="tempalte_id"):
        demo.hog_function_templates.frame(tempalte_id="template-geoip")  # type: ignore[call-arg]
    assert len(sandbox.requests()) == 0


def test_every_hog_function_filter_narrows(demo: Client) -> None:
    everything = demo.hog_functions.list()
    assert len(everything) == 7
    enabled = demo.hog_functions.list(enabled=True)
    assert [f.id for f in enabled] == [f.id for f in everything if f.enabled]
    assert [f.id for f in demo.hog_functions.list(enabled=False)] == [
        f.id for f in everything if not f.enabled
    ]
    assert [f.name for f in demo.hog_functions.list(search="geo")] == ["GeoIP"]
    assert {f.type for f in demo.hog_functions.list(type="destination")} == {"destination"}
    assert len(demo.hog_functions.list(type="transformation", enabled=True)) == 3
    assert all(f.inputs is None for f in demo.hog_functions.list(full=False))
    assert any(f.inputs for f in demo.hog_functions.list(full=True))
    ids = [f.id for f in everything]
    assert [f.id for f in demo.hog_functions.list(page_size=2, offset=1, max_items=4)] == ids[1:5]
    assert [f.id for f in demo.hog_functions.iter(max_items=2)] == ids[:2]
    # frame's full defaults to True (inputs and the other long fields); full=False gives the short shape
    assert demo.hog_functions.frame()["inputs"].notna().any()
    assert demo.hog_functions.frame(full=False)["inputs"].isna().all()
    assert demo.hog_functions.frame(type="site_app")["name"].tolist() == ["Feedback widget"]
    # transformations() still reads through the same listing
    assert [f.name for f in demo.hog_functions.transformations(enabled=True)] == [
        "GeoIP",
        "Drop internal traffic",
        "Plan tier",
    ]


def test_every_template_filter_narrows(demo: Client) -> None:
    transformations = demo.hog_function_templates.list(type="transformation")
    assert {t.type for t in transformations} == {"transformation"}
    only = demo.hog_function_templates.list(type="transformation", template_id="template-geoip")
    assert [t.id for t in only] == ["template-geoip"]
    assert demo.hog_function_templates.frame(template_id="template-geoip", type="transformation")[
        "id"
    ].tolist() == ["template-geoip"]
    assert len(demo.hog_function_templates.list(type="transformation", max_items=2)) == 2
    both = [t.id for t in demo.hog_function_templates.list(type=["transformation", "destination"])]
    # the service sorts each page (by use, then name): pages of 2 give the same templates, not the same order
    paged = [
        t.id for t in demo.hog_function_templates.list(type=["transformation", "destination"], page_size=2)
    ]
    assert sorted(paged) == sorted(both)
    skipped = demo.hog_function_templates.list(type=["transformation", "destination"], offset=1)
    assert len(skipped) == len(both) - 1 and {t.id for t in skipped} < set(both)


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda c: c.hog_functions.list(type="plugin"), "type"),
        (lambda c: c.hog_functions.list(type=[]), "type"),
        (lambda c: c.hog_functions.frame(enabled="yes"), "enabled"),
        (lambda c: c.hog_functions.list(full="yes"), "full"),
        (lambda c: c.hog_functions.list(search=5), "search"),
        (lambda c: list(c.hog_functions.iter(page_size=0)), "page_size"),
        (lambda c: c.hog_function_templates.list(type="plugin"), "type"),
        (lambda c: c.hog_function_templates.list(template_id=""), "template_id"),
        (lambda c: c.transformations.list(page_size=501), "page_size"),
        (lambda c: c.transformations.frame(search="x"), "search"),
    ],
)
def test_bad_hog_and_transformation_filters_are_refused_before_any_request(
    call: Callable[[Client], Any], field: str
) -> None:
    with (
        Client(NOWHERE, personal_api_key="phx_test", max_retries=0, organization_id="org") as client,
        pytest.raises(ValueError, match=field),
    ):
        call(client)

"""Transformations (all 13 endpoints), feature flags, projects/organizations and decide over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from _clients import client_for
from analytics_nb import Client
from analytics_nb.errors import NotFoundError, PermissionDeniedError, ValidationError
from analytics_nb.models import (
    ActivityPage,
    DecideResponse,
    FeatureFlag,
    LocalEvaluationResponse,
    Organization,
    PluginConfig,
    Project,
    Transformation,
)


@pytest.fixture(scope="module")
def client(sandbox: Any) -> Iterator[Client]:
    # No organization id and no project key given: both are resolved from the service.
    with client_for(sandbox, keys="personal") as c:
        yield c


def test_projects_and_organizations(client: Client, sandbox: Any) -> None:
    projects = client.projects.list()
    assert projects and all(isinstance(p, Project) for p in projects)
    current = client.projects.get()
    assert current.id == sandbox.project_id and current.api_token == sandbox.project_api_key
    assert client.projects.get(sandbox.project_id).id == sandbox.project_id
    orgs = client.organizations.list()
    assert [o.id for o in orgs] == [sandbox.organization_id]
    assert isinstance(client.organizations.get(), Organization)
    assert client.organization_id() == sandbox.organization_id
    assert client.project_api_key() == sandbox.project_api_key


def test_transformations_list_get_frame(client: Client) -> None:
    items = client.transformations.list()
    assert len(items) >= 10 and all(isinstance(t, Transformation) for t in items)
    assert [t.id for t in client.transformations.list(page_size=3)] == [t.id for t in items]
    first = client.transformations.get(items[0].id)  # type: ignore[arg-type]
    assert first.id == items[0].id and first.name == items[0].name
    frame = client.transformations.frame()
    assert list(frame["id"]) == [t.id for t in items]
    sources = client.transformations.sources_frame([t.id for t in items[:3]])  # type: ignore[misc]
    expected = sum(len(client.transformations.source(t.id)) for t in items[:3])  # type: ignore[arg-type]
    assert len(sources) == expected > 0
    assert set(sources["transformation_id"]) <= {t.id for t in items[:3]}


def test_transformation_crud_and_source(client: Client) -> None:
    created = client.transformations.create(plugin_type="source", name="Strip emails", description="d")
    assert created.id is not None and created.plugin_type == "source"
    updated = client.transformations.update(created.id, description="removes e-mail addresses")
    assert updated.description == "removes e-mail addresses" and updated.name == "Strip emails"
    files = client.transformations.update_source(
        created.id, {"index.ts": "export function processEvent(e) { return e }", "plugin.json": "{}"}
    )
    assert files["index.ts"].startswith("export function")
    assert client.transformations.source(created.id) == files
    after = client.transformations.update_source(created.id, {"plugin.json": None})  # None deletes
    assert "plugin.json" not in after and "index.ts" in after
    client.transformations.delete(created.id)
    with pytest.raises(NotFoundError):
        client.transformations.get(created.id)


def test_transformation_field_validation_happens_before_sending(client: Client) -> None:
    with pytest.raises(ValueError, match="writable fields"):
        client.transformations.create(nmae="typo")
    with pytest.raises(ValueError, match="files"):
        client.transformations.update_source(1, {"index.ts": 5})  # type: ignore[dict-item]


def test_repository_install_check_for_updates_and_upgrade(empty_sandbox: Any) -> None:
    with client_for(empty_sandbox, keys="personal") as client:
        repository = client.transformations.repository()
        assert repository and all("url" in entry for entry in repository)
        entry = repository[0]
        plugin = client.transformations.create(url=entry["url"])
        assert plugin.plugin_type in ("custom", "repository") and plugin.id is not None
        checked = client.transformations.check_for_updates(plugin.id)
        assert isinstance(checked, Transformation) and checked.id == plugin.id
        assert checked.latest_tag == entry["tag"]
        upgraded = client.transformations.upgrade(plugin.id)
        assert upgraded.tag == entry["tag"]
        with pytest.raises(ValidationError, match="already installed"):
            client.transformations.create(url=entry["url"])


def test_transformation_views(client: Client) -> None:
    activity = client.transformations.activity(limit=5)
    assert isinstance(activity, ActivityPage) and len(activity.results) <= 5
    assert activity.total_count is not None and activity.total_count >= len(activity.results)
    frame = client.transformations.activity_frame(page_size=4)
    assert len(frame) == activity.total_count and frame["id"].is_unique  # every page, each entry once
    assert frame["created_at"].dtype == "datetime64[us, UTC]"
    assert frame["created_at"].is_monotonic_decreasing  # newest first, as the service pages them
    assert list(client.transformations.activity_frame(max_items=3)["id"]) == list(frame["id"][:3])
    with pytest.raises(ValueError, match="page_size"):
        client.transformations.activity_frame(page_size=0)
    unused = client.transformations.unused()
    assert all(isinstance(i, int) for i in unused)
    configs = client.transformations.exports_unsubscribe_configs()
    assert all(isinstance(c, PluginConfig) for c in configs)


def test_feature_flags(client: Client) -> None:
    flags = client.feature_flags.list()
    assert len(flags) >= 12 and all(isinstance(f, FeatureFlag) for f in flags)
    one = client.feature_flags.get(flags[0].id)  # type: ignore[arg-type]
    assert one.key == flags[0].key
    frame = client.feature_flags.frame()
    assert len(frame) == len(flags)
    local = client.feature_flags.local_evaluation()
    assert isinstance(local, LocalEvaluationResponse)
    assert {f.key for f in local.flags} <= {f.key for f in flags} and local.flags
    created = client.feature_flags.create(
        "client-test-flag", name="t", filters={"groups": [{"properties": [], "rollout_percentage": 100}]}
    )
    assert created.key == "client-test-flag"
    assert client.feature_flags.update(created.id, active=False).active is False  # type: ignore[arg-type]


def test_flags_v4_default_and_decide_v3_on_request(client: Client, sandbox: Any) -> None:
    """The default is /flags/?v=4 as posthog-python 7.91.1 posts it; the legacy /decide/?v=3 on request."""
    flags = {f.key: f for f in client.feature_flags.list() if f.active}
    legacy = client.decide("user-42", person_properties={"email": "a@example.com"}, endpoint="decide")
    assert isinstance(legacy, DecideResponse)
    assert set(flags) <= set(legacy.feature_flags)  # v3 lists every evaluated flag, false ones too
    detailed = client.decide("user-42", person_properties={"email": "a@example.com"})
    assert detailed.flags is not None and set(flags) <= set(detailed.flags)
    assert detailed.feature_flags == {k: v for k, v in legacy.feature_flags.items() if k in detailed.flags}
    log = sandbox.requests()
    paths = list(log["path"])
    assert any(p.rstrip("/") == "/decide" for p in paths) and any(p.rstrip("/") == "/flags" for p in paths)
    decide_rows = log[log["path"].str.rstrip("/") == "/decide"]
    assert decide_rows["query"].astype(str).str.contains("v=3").all()
    flags_rows = log[log["path"] == "/flags/"]
    assert flags_rows["query"].astype(str).str.contains("v=4").all()


def test_decide_sends_ip_as_x_forwarded_for(client: Client) -> None:
    geo = {"key": "$geoip_country_code", "value": "US", "operator": "exact", "type": "person"}
    client.feature_flags.create(
        "client-geo-us", filters={"groups": [{"properties": [geo], "rollout_percentage": 100}]}
    )
    assert client.decide("geo-user", ip="8.8.8.8").feature_flags["client-geo-us"] is True
    assert client.decide("geo-user").feature_flags["client-geo-us"] is False  # loopback: no geo
    overridden = client.decide("geo-user", ip="8.8.8.8", person_properties={"$geoip_country_code": "FR"})
    assert overridden.feature_flags["client-geo-us"] is False  # explicit properties win over GeoIP
    with pytest.raises(ValueError, match="ip="):
        client.decide("geo-user", ip="not-an-ip")
    with pytest.raises(ValueError, match="endpoint"):
        client.decide("geo-user", endpoint="evaluate")  # type: ignore[arg-type]


def test_decide_groups_and_group_property_overrides(client: Client) -> None:
    flag = next(f for f in client.feature_flags.list() if f.key == "company-dashboard")
    local = client.feature_flags.local_evaluation()
    group_type = local.group_type_mapping[str(flag.filters.aggregation_group_type_index)]
    assert client.decide("member-1").feature_flags.get(flag.key) is False  # no group given
    enterprise = client.decide(
        "member-1",
        groups={group_type: "acme-test"},
        group_properties={group_type: {"plan": "enterprise"}},
    )
    assert enterprise.feature_flags.get(flag.key) is True
    assert enterprise.get_payload(flag.key) is not None
    free = client.decide(
        "member-1", groups={group_type: "acme-test"}, group_properties={group_type: {"plan": "free"}}
    )
    assert free.feature_flags.get(flag.key) is False


def test_cloud_refuses_personal_keys_on_recordings_with_an_explanation(cloud_sandbox: Any) -> None:
    with client_for(cloud_sandbox, keys="personal") as client:
        target = client.playlists.create("collection", "cloud")
        with pytest.raises(PermissionDeniedError) as info:
            client.playlists.add_recording(target.short_id, "some-session")
        assert "PostHog refuses personal API keys" in str(info.value)
        assert info.value.status == 403
        with pytest.raises(PermissionDeniedError, match="refuses personal API keys"):
            client.playlists.remove_recording(target.short_id, "some-session")


def test_cloud_profile_synthetic_playlists_and_plugin_action_refusals(cloud_sandbox: Any) -> None:
    with client_for(cloud_sandbox, keys="personal") as client:
        everything = client.playlists.list(page_size=7)
        synthetic = [p for p in everything if p.is_synthetic]
        assert synthetic and all(p.id is not None and p.id < 0 for p in synthetic)
        assert len({p.short_id for p in everything}) == len(everything)
        custom = client.playlists.list(collection_type="custom")
        assert not any(p.is_synthetic for p in custom)
        assert len(custom) == len(everything) - len(synthetic)
        with pytest.raises(ValidationError, match="synthetic"):
            client.playlists.update(synthetic[0].short_id, name="mine now")  # type: ignore[arg-type]
        plugin = client.transformations.list()[0]
        with pytest.raises(PermissionDeniedError, match="refuses personal API keys"):
            client.transformations.source(plugin.id)  # type: ignore[arg-type]

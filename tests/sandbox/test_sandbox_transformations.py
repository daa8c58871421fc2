"""Contract tests for the 13 pipeline transformation endpoints of the sandbox, over real HTTP."""

from __future__ import annotations

import httpx

from _sandbox_helpers import api, error, transformations_path
from analytics_nb.sandbox import Sandbox

FIELDS = {
    "id",
    "plugin_type",
    "name",
    "description",
    "url",
    "icon",
    "config_schema",
    "tag",
    "latest_tag",
    "is_global",
    "organization_id",
    "organization_name",
    "capabilities",
    "metrics",
    "public_jobs",
    "hog_function_migration_available",
}


def _all(http: httpx.Client, sb: Sandbox) -> list[dict]:
    return http.get(transformations_path(sb), params={"limit": 500}).json()["results"]


def test_list_and_retrieve(sandbox: Sandbox) -> None:
    with api(sandbox) as http:
        body = http.get(transformations_path(sandbox)).json()
        assert set(body) == {"count", "next", "previous", "results"}
        assert body["count"] >= 10
        for item in body["results"]:
            assert set(item) == FIELDS
            assert "processEvent" in item["capabilities"]["methods"]
            assert item["organization_id"] == sandbox.organization_id
        page = http.get(transformations_path(sandbox), params={"limit": 4, "offset": 4}).json()
        assert [p["id"] for p in page["results"]] == [p["id"] for p in body["results"][4:8]]
        one = http.get(transformations_path(sandbox, f"{body['results'][0]['id']}/"))
        assert one.json() == body["results"][0]
        missing = http.get(transformations_path(sandbox, "999999"))
        assert missing.status_code == 404 and error(missing)["code"] == "not_found"
        assert http.get(transformations_path(sandbox, "abc")).status_code == 404


def test_create_update_delete(sandbox: Sandbox) -> None:
    with api(sandbox) as http:
        created = http.post(
            transformations_path(sandbox), json={"plugin_type": "source", "name": "My transform"}
        )
        assert created.status_code == 201, created.text
        plugin = created.json()
        assert set(plugin) == FIELDS and plugin["capabilities"]["methods"] == ["processEvent"]
        assert plugin["id"] in [p["id"] for p in _all(http, sandbox)]
        patched = http.patch(transformations_path(sandbox, f"{plugin['id']}"), json={"description": "new"})
        assert patched.status_code == 200 and patched.json()["description"] == "new"
        bad = http.patch(transformations_path(sandbox, f"{plugin['id']}"), json={"is_global": "maybe"})
        assert bad.status_code == 400 and error(bad)["attr"] == "is_global"
        bad_url = http.post(transformations_path(sandbox), json={"plugin_type": "custom", "url": "ftp://x"})
        assert error(bad_url)["detail"] == "Must be a GitHub/GitLab repository or a npm package URL!"
        gone = http.delete(transformations_path(sandbox, f"{plugin['id']}/"))
        assert gone.status_code == 204 and gone.content == b""
        assert http.get(transformations_path(sandbox, f"{plugin['id']}")).status_code == 404
        hidden = http.post(
            transformations_path(sandbox),
            json={"plugin_type": "source", "name": "destination", "capabilities": {"methods": ["onEvent"]}},
        )
        assert hidden.status_code == 201
        assert hidden.json()["id"] not in [p["id"] for p in _all(http, sandbox)]


def test_install_from_registry_check_for_updates_and_upgrade(sandbox: Sandbox) -> None:
    with api(sandbox) as http:
        repo = http.get(transformations_path(sandbox, "repository/")).json()
        assert isinstance(repo, list) and len(repo) >= 10 and {"name", "url", "tag"} <= set(repo[0])
        outdated = next(p for p in _all(http, sandbox) if p["latest_tag"] is None and p["url"])
        entry = next(e for e in repo if e["url"] == outdated["url"])
        checked = http.get(transformations_path(sandbox, f"{outdated['id']}/check_for_updates/"))
        assert checked.status_code == 200
        assert checked.json()["plugin"]["latest_tag"] == entry["tag"]
        upgraded = http.post(transformations_path(sandbox, f"{outdated['id']}/upgrade/")).json()
        assert upgraded["tag"] == entry["tag"] and set(upgraded) == FIELDS
        dup = http.post(
            transformations_path(sandbox), json={"plugin_type": "repository", "url": outdated["url"]}
        )
        assert dup.status_code == 400
        assert error(dup)["detail"] == f'Plugin from URL "{outdated["url"]}" already installed!'


def test_source_and_update_source(sandbox: Sandbox) -> None:
    with api(sandbox) as http:
        plugin = http.post(
            transformations_path(sandbox), json={"plugin_type": "source", "name": "src"}
        ).json()
        path = transformations_path(sandbox, f"{plugin['id']}/")
        assert http.get(path + "source/").json() == {}
        code = "export function processEvent(event) { return event }\n"
        files = http.patch(
            path + "update_source/",
            json={"index.ts": code, "README.md": "hi", "plugin.json": '{"name": "Renamed"}'},
        )
        assert files.status_code == 200
        assert files.json() == {"index.ts": code, "README.md": "hi", "plugin.json": '{"name": "Renamed"}'}
        assert http.get(path).json()["name"] == "Renamed"
        after = http.patch(path + "update_source/", json={"README.md": None}).json()
        assert after == {"index.ts": code, "plugin.json": '{"name": "Renamed"}'}
        assert http.get(path + "source/").json() == after
        bad = http.patch(path + "update_source/", json={"index.ts": 5})
        assert bad.status_code == 400 and error(bad)["attr"] == "index.ts"
        http.patch(path + "update_source/", json={"index.ts": "export function onEvent(e) {}"})
        assert http.get(path).status_code == 404  # no processEvent any more: not a transformation


def test_activity_unused_exports(sandbox: Sandbox) -> None:
    with api(sandbox) as http:
        first = http.get(transformations_path(sandbox, "activity/"), params={"limit": 5, "page": 1}).json()
        assert set(first) == {"results", "next", "previous", "total_count"}
        assert len(first["results"]) == 5 and first["next"] and first["previous"] is None
        assert {"activity", "scope", "item_id", "detail", "created_at", "user"} <= set(first["results"][0])
        before = first["total_count"]
        plugin = http.post(
            transformations_path(sandbox), json={"plugin_type": "source", "name": "logged"}
        ).json()
        after = http.get(transformations_path(sandbox, "activity/")).json()
        assert after["total_count"] == before + 1
        assert after["results"][0]["item_id"] == str(plugin["id"])
        assert after["results"][0]["activity"] == "installed"
        unused = http.get(transformations_path(sandbox, "unused/")).json()
        assert isinstance(unused, list) and all(isinstance(i, int) for i in unused) and plugin["id"] in unused
        exports = http.get(transformations_path(sandbox, "exports_unsubscribe_configs/")).json()
        assert exports and {
            "id",
            "plugin",
            "enabled",
            "order",
            "config",
            "error",
            "team_id",
            "plugin_info",
            "delivery_rate_24h",
            "created_at",
            "updated_at",
            "name",
            "description",
            "deleted",
        } == set(exports[0])
        secrets = [v for e in exports for v in e["config"].values() if str(v).startswith("****")]
        assert secrets and not any(
            str(v).startswith("secret-") for e in exports for v in e["config"].values()
        )


def test_scopes_spec_profile(sandbox: Sandbox) -> None:
    reader = sandbox.create_personal_key(["plugin:read"])
    with api(sandbox, reader) as http:
        assert http.get(transformations_path(sandbox)).status_code == 200
        plugin_id = _all(http, sandbox)[0]["id"]
        assert http.get(transformations_path(sandbox, f"{plugin_id}/source")).status_code == 200
        denied = http.patch(transformations_path(sandbox, f"{plugin_id}/"), json={"name": "x"})
        assert denied.status_code == 403
        assert error(denied)["detail"] == "API key missing required scope 'plugin:write'"
    with api(sandbox, sandbox.create_personal_key(["session_recording_playlist:write"])) as http:
        denied = http.get(transformations_path(sandbox))
        assert error(denied)["detail"] == "API key missing required scope 'plugin:read'"


def test_cloud_profile_refusals(cloud_sandbox: Sandbox) -> None:
    sb = cloud_sandbox
    with api(sb) as http:
        listed = http.get(transformations_path(sb))
        assert listed.status_code == 200 and listed.json()["count"] >= 10
        plugin_id = listed.json()["results"][0]["id"]
        write = http.patch(transformations_path(sb, f"{plugin_id}/"), json={"name": "x"})
        assert write.status_code == 403
        assert error(write)["detail"] == "Your organization's plugin access level is insufficient."
        action = http.get(transformations_path(sb, f"{plugin_id}/source/"))
        assert action.status_code == 403
        assert error(action)["detail"] == "This action does not support personal API key access"
        assert http.get(transformations_path(sb, "repository")).status_code == 403

"""Personal API key authentication, scopes, scoped projects/organizations, projects and organizations."""

from __future__ import annotations

import uuid

import httpx
import pytest

from _sandbox_helpers import api, error, playlists_path
from analytics_nb.sandbox import Sandbox


def test_missing_and_invalid_keys(sandbox: Sandbox) -> None:
    with api(sandbox, "") as http:
        none = http.get(playlists_path(sandbox))
    assert none.status_code == 401
    assert error(none) == {
        "type": "authentication_error",
        "code": "not_authenticated",
        "detail": "Authentication credentials were not provided.",
        "attr": None,
    }
    assert "WWW-Authenticate" in none.headers
    with api(sandbox, "phx_not_a_real_key") as http:
        bad = http.get(playlists_path(sandbox))
    assert bad.status_code == 401
    assert error(bad)["code"] == "authentication_failed"
    assert error(bad)["detail"] == "Personal API key found in request Authorization header is invalid."
    query = httpx.get(f"{sandbox.url}{playlists_path(sandbox)}", params={"personal_api_key": "phx_nope"})
    assert error(query)["detail"] == "Personal API key found in request query string is invalid."
    ok = httpx.get(
        f"{sandbox.url}{playlists_path(sandbox)}", params={"personal_api_key": sandbox.personal_api_key}
    )
    assert ok.status_code == 200


def test_key_in_body(sandbox: Sandbox) -> None:
    resp = httpx.post(
        f"{sandbox.url}{playlists_path(sandbox)}",
        json={"type": "collection", "personal_api_key": sandbox.personal_api_key},
    )
    assert resp.status_code == 201


@pytest.mark.parametrize(
    ("scopes", "method", "status"),
    [
        (["session_recording_playlist:read"], "GET", 200),
        (["session_recording_playlist:write"], "GET", 200),
        (["session_recording_playlist:read"], "POST", 403),
        (["plugin:read"], "GET", 403),
        (["*"], "POST", 201),
    ],
)
def test_scopes(sandbox: Sandbox, scopes: list[str], method: str, status: int) -> None:
    with api(sandbox, sandbox.create_personal_key(scopes)) as http:
        resp = http.request(
            method, playlists_path(sandbox), json={"type": "collection"} if method == "POST" else None
        )
    assert resp.status_code == status
    if status == 403:
        needed = "write" if method == "POST" else "read"
        assert (
            error(resp)["detail"] == f"API key missing required scope 'session_recording_playlist:{needed}'"
        )


def test_bad_scope_names_are_refused(sandbox: Sandbox) -> None:
    with pytest.raises(ValueError, match="invalid scope 'playlists:read'"):
        sandbox.create_personal_key(["playlists:read"])


def test_scoped_teams_and_organizations(sandbox: Sandbox) -> None:
    with api(sandbox, sandbox.create_personal_key(["*"], scoped_teams=[999])) as http:
        resp = http.get(playlists_path(sandbox))
    assert resp.status_code == 403
    assert (
        error(resp)["detail"]
        == f"API key does not have access to the requested project: ID {sandbox.project_id}."
    )
    other = str(uuid.uuid4())
    with api(sandbox, sandbox.create_personal_key(["*"], scoped_organizations=[other])) as http:
        resp = http.get(f"/api/organizations/{sandbox.organization_id}/pipeline_transformations/")
    assert resp.status_code == 403
    assert error(resp)["detail"] == (
        f"API key does not have access to the requested organization: ID {sandbox.organization_id}."
    )


def test_projects_and_organizations(sandbox: Sandbox) -> None:
    with api(sandbox) as http:
        projects = http.get("/api/projects/").json()
        assert projects["count"] == 1 and projects["results"][0]["id"] == sandbox.project_id
        assert projects["results"][0]["api_token"] == sandbox.project_api_key
        current = http.get("/api/projects/@current").json()
        assert current["id"] == sandbox.project_id and current["organization"] == sandbox.organization_id
        assert http.get(f"/api/projects/{sandbox.project_id}/").json() == current
        nope = http.get("/api/projects/abc/")
        assert nope.status_code == 404 and error(nope)["detail"] == "Project not found."
        assert error(http.get("/api/projects/4242/"))["detail"] == "Project not found."
        orgs = http.get("/api/organizations").json()
        assert [o["id"] for o in orgs["results"]] == [sandbox.organization_id]
        org = http.get("/api/organizations/@current/").json()
        assert org["id"] == sandbox.organization_id and org["plugins_access_level"] == 9
        bad = http.get("/api/organizations/not-a-uuid/pipeline_transformations/")
        assert bad.status_code == 404 and error(bad)["detail"] == "Organization not found."
        me = http.get("/api/users/@me/").json()
        assert me["email"] and me["team"]["id"] == sandbox.project_id
        unknown = http.get("/api/nothing/here/")
        assert unknown.status_code == 404 and error(unknown)["code"] == "not_found"


def test_keys_are_stored_hashed_and_never_logged(sandbox: Sandbox) -> None:
    key = sandbox.personal_api_key
    rows = sandbox.ctx.store.query("SELECT secure_value, mask_value FROM personal_api_keys")
    assert rows and all(key not in r["secure_value"] and key != r["mask_value"] for r in rows)
    httpx.get(f"{sandbox.url}/api/projects/", params={"personal_api_key": key})
    httpx.post(
        f"{sandbox.url}{playlists_path(sandbox)}", json={"type": "collection", "personal_api_key": key}
    )
    log = sandbox.requests()
    assert len(log) >= 2
    assert not log["query"].str.contains(key, regex=False).any()
    assert not log["body"].str.contains(key, regex=False).any()
    assert key not in repr(sandbox) and key not in repr(sandbox.ctx)

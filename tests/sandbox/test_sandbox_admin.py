"""Issue 12 finding 14: the admin endpoints take only the owner's key; the owner's key is reused across
restarts on the same database (rotated on request); public helpers add projects and organizations."""

from __future__ import annotations

from pathlib import Path

import httpx

from _sandbox_helpers import api
from analytics_nb.sandbox import start


def test_fault_admin_needs_the_owner_key() -> None:
    with start(seed="empty", admin=True) as sb:
        url = f"{sb.url}/_sandbox/faults"
        rule = {"path": "*", "status": 503}
        assert httpx.post(url, json=rule).status_code == 401  # no key: nothing added
        other = sb.create_personal_key(["*"])
        denied = httpx.post(url, json=rule, headers={"Authorization": f"Bearer {other}"})
        assert denied.status_code == 403 and "owner" in denied.json()["detail"]
        assert httpx.delete(url).status_code == 401
        assert httpx.get(url).status_code == 401
        assert sb.faults.list() == []
        with api(sb) as http:
            assert http.get("/api/projects/").status_code == 200  # every answer is still served
            assert http.post("/_sandbox/faults", json=rule).status_code == 201  # the owner may


def test_a_restart_on_the_same_database_reuses_the_owner_key(tmp_path: Path) -> None:
    db = str(tmp_path / "sandbox.sqlite")
    with start(seed="empty", db=db) as sb:
        first = sb.personal_api_key
        keys = sb.ctx.store.query_one("SELECT COUNT(*) AS n FROM personal_api_keys")["n"]
    with start(seed="empty", db=db) as sb:
        assert sb.personal_api_key == first
        assert sb.ctx.store.query_one("SELECT COUNT(*) AS n FROM personal_api_keys")["n"] == keys
    with start(seed="empty", db=db, rotate_key=True) as sb:
        rotated = sb.personal_api_key
        assert rotated != first
        with api(sb, first) as old, api(sb) as new:
            assert old.get("/api/projects/").status_code == 401  # the old owner key is revoked
            assert new.get("/api/projects/").status_code == 200
    with start(seed="empty", db=db) as sb:
        assert sb.personal_api_key == rotated


def test_add_project_and_organization() -> None:
    with start(seed="empty") as sb:
        second = sb.add_project("Second")
        assert second.id != sb.project_id and second.api_token.startswith("phc_")
        assert second.organization_id == sb.organization_id
        with api(sb) as http:
            ids = [p["id"] for p in http.get("/api/projects/").json()["results"]]
            assert ids == [sb.project_id, second.id]  # by id
            assert http.get(f"/api/projects/{second.id}/").json()["api_token"] == second.api_token
        org = sb.add_organization("Elsewhere")
        third = sb.add_project("Theirs", organization_id=org)
        with api(sb) as http:
            assert http.get(f"/api/projects/{third.id}/").status_code == 403  # not the owner's organization
            assert http.get(f"/api/organizations/{org}/").status_code == 404
        decide = httpx.post(f"{sb.url}/flags/?v=2", json={"api_key": third.api_token, "distinct_id": "x"})
        assert decide.status_code == 200  # its token is a real project token

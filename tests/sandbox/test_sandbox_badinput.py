"""Bad input never gets a 500 nor a half-written record, and the server keeps serving (the schemathesis run
over the OpenAPI document is in test_sandbox_conformance.py)."""

from __future__ import annotations

import pytest

from _sandbox_helpers import api, error, playlists_path, transformations_path
from analytics_nb.sandbox import Sandbox


def test_malformed_json(sandbox: Sandbox) -> None:
    with api(sandbox) as http:
        resp = http.post(
            playlists_path(sandbox),
            content=b'{"type": "collection",',
            headers={"Content-Type": "application/json"},
        )
        assert resp.status_code == 400
        assert error(resp)["type"] == "invalid_request" and error(resp)["code"] == "parse_error"
        binary = http.post(
            playlists_path(sandbox), content=b"\xff\xfe\x00", headers={"Content-Type": "application/json"}
        )
        assert binary.status_code == 400
        media = http.post(
            playlists_path(sandbox), content=b"type=collection", headers={"Content-Type": "text/plain"}
        )
        assert media.status_code == 415 and error(media)["code"] == "unsupported_media_type"
        not_object = http.post(playlists_path(sandbox), json=[1, 2])
        assert not_object.status_code == 400 and error(not_object)["type"] == "validation_error"


@pytest.mark.parametrize(
    ("body", "attr", "code"),
    [
        ({"type": "collection", "name": ["x"]}, "name", "invalid_input"),
        ({"type": "collection", "name": "x" * 401}, "name", "max_length"),
        ({"type": "collection", "pinned": "sometimes"}, "pinned", "invalid_input"),
        ({"type": "collection", "deleted": None}, "deleted", "null"),
        ({"type": "collection", "description": None}, "description", "null"),
        ({"type": "collection", "name": "a\x00b"}, "name", "null_characters_not_allowed"),
        ({"type": 7}, "type", "invalid_choice"),
    ],
)
def test_wrong_types_name_the_field(sandbox: Sandbox, body: dict, attr: str, code: str) -> None:
    with api(sandbox) as http:
        before = http.get(playlists_path(sandbox)).json()["count"]
        resp = http.post(playlists_path(sandbox), json=body)
        assert resp.status_code == 400
        assert error(resp)["attr"] == attr and error(resp)["code"] == code
        assert http.get(playlists_path(sandbox)).json()["count"] == before  # nothing half-written


def test_unknown_fields_are_ignored_like_drf(sandbox: Sandbox) -> None:
    with api(sandbox) as http:
        resp = http.post(playlists_path(sandbox), json={"type": "collection", "colour": "red"})
        assert resp.status_code == 201 and "colour" not in resp.json()


def test_oversized_body(sandbox: Sandbox) -> None:
    with api(sandbox) as http:
        resp = http.post(playlists_path(sandbox), json={"type": "collection", "description": "x" * 3_000_000})
        assert resp.status_code == 413 and error(resp)["code"] == "request_too_large"
        assert http.get("/api/projects/").status_code == 200


def test_failed_transaction_rolls_back(sandbox: Sandbox) -> None:
    store = sandbox.ctx.store
    before = store.query_one("SELECT COUNT(*) AS n FROM playlists")["n"]
    with pytest.raises(RuntimeError), store.transaction() as conn:
        conn.execute(
            "INSERT INTO playlists(project_id, short_id, type, created_at, last_modified_at) VALUES "
            "(1,'x','collection','a','a')"
        )
        raise RuntimeError("boom")
    assert store.query_one("SELECT COUNT(*) AS n FROM playlists")["n"] == before


def test_transformation_bad_input(sandbox: Sandbox) -> None:
    with api(sandbox) as http:
        bad = http.post(transformations_path(sandbox), json={"plugin_type": "teleport"})
        assert bad.status_code == 400 and error(bad)["attr"] == "plugin_type"
        bad = http.post(transformations_path(sandbox), json={"plugin_type": "source", "capabilities": [1]})
        assert bad.status_code == 400 and error(bad)["attr"] == "capabilities"
        plugin_id = http.get(transformations_path(sandbox)).json()["results"][0]["id"]
        bad = http.patch(transformations_path(sandbox, f"{plugin_id}/update_source/"), json=["index.ts"])
        assert bad.status_code == 400


@pytest.mark.parametrize(
    "path",
    [
        "/api/projects/99999999999999999999999999/session_recording_playlists/",
        "/api/projects/@current/session_recording_playlists/?created_by=99999999999999999999999",
        "/api/projects/@current/session_recording_playlists/?date_from=-99999999999999d",
        "/api/organizations/@current/pipeline_transformations/99999999999999999999999/",
        "/api/organizations/@current/pipeline_transformations/activity/?page=99999999999999999999999",
        "/api/projects/@current/session_recording_playlists/%F0%9F%92%A5/",
    ],
)
def test_huge_and_odd_identifiers_never_500(sandbox: Sandbox, path: str) -> None:
    with api(sandbox) as http:
        resp = http.get(path)
        assert 200 <= resp.status_code < 500
        if resp.status_code >= 400:
            error(resp)

"""Feature flag definitions API of the sandbox: CRUD with scopes, validation, versions, local evaluation and
`/flags/definitions` (real HTTP, plain httpx)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from _flags import condition, flag, prop
from analytics_nb.sandbox import Sandbox


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _flags_url(sb: Sandbox, suffix: str = "") -> str:
    return f"{sb.url}/api/projects/{sb.project_id}/feature_flags/{suffix}"


BOOL_FLAG = flag(
    "crud-flag", condition(prop("plan", ["pro"])), name="CRUD flag", active=None, payloads={"true": {"a": 1}}
)


def test_create_retrieve_update_list(empty_sandbox: Sandbox) -> None:
    sb = empty_sandbox
    headers = _auth(sb.personal_api_key)
    created = httpx.post(_flags_url(sb), json=BOOL_FLAG, headers=headers)
    assert created.status_code == 201, created.text
    flag = created.json()
    assert flag["key"] == "crud-flag" and flag["version"] == 1 and flag["active"] is True
    assert flag["filters"]["payloads"] == {"true": '{"a":1}'}  # payloads are stored as JSON text
    assert flag["created_by"]["email"]
    got = httpx.get(_flags_url(sb, f"{flag['id']}/"), headers=headers)
    assert got.status_code == 200 and got.json()["filters"] == flag["filters"]
    patched = httpx.patch(
        _flags_url(sb, f"{flag['id']}"), json={"active": False, "name": "renamed"}, headers=headers
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["version"] == 2 and patched.json()["active"] is False
    assert patched.json()["filters"] == flag["filters"]  # untouched fields kept
    listed = httpx.get(_flags_url(sb), headers=headers).json()
    assert listed["count"] == 1 and listed["results"][0]["name"] == "renamed"
    # the inactive flag answers false in decide; re-activating it changes decide at once (cache invalidated)
    decide_body = {"api_key": sb.project_api_key, "distinct_id": "d1", "person_properties": {"plan": "pro"}}
    assert httpx.post(f"{sb.url}/decide/?v=3", json=decide_body).json()["featureFlags"] == {
        "crud-flag": False
    }
    httpx.patch(_flags_url(sb, f"{flag['id']}/"), json={"active": True}, headers=headers)
    assert httpx.post(f"{sb.url}/decide/?v=3", json=decide_body).json()["featureFlags"] == {"crud-flag": True}
    # soft delete hides it
    assert (
        httpx.patch(_flags_url(sb, f"{flag['id']}/"), json={"deleted": True}, headers=headers).status_code
        == 200
    )
    assert httpx.get(_flags_url(sb, f"{flag['id']}/"), headers=headers).status_code == 404
    assert httpx.post(f"{sb.url}/decide/?v=3", json=decide_body).json()["featureFlags"] == {}
    assert httpx.delete(_flags_url(sb, f"{flag['id']}/"), headers=headers).status_code == 405
    for bad_id in ("99999999999999999999999", "-1", "abc"):
        assert httpx.get(_flags_url(sb, f"{bad_id}/"), headers=headers).status_code == 404


def test_list_pagination(sandbox: Sandbox) -> None:
    headers = _auth(sandbox.personal_api_key)
    page = httpx.get(_flags_url(sandbox), params={"limit": 5}, headers=headers).json()
    assert page["count"] >= 16 and len(page["results"]) == 5 and page["previous"] is None
    assert page["next"].startswith(sandbox.url) and "offset=5" in page["next"]
    second = httpx.get(page["next"], headers=headers).json()
    assert {f["id"] for f in second["results"]}.isdisjoint({f["id"] for f in page["results"]})
    found = httpx.get(_flags_url(sandbox), params={"search": "checkout"}, headers=headers).json()
    assert [f["key"] for f in found["results"]] == ["new-checkout"]


@pytest.mark.parametrize(
    ("payload", "attr"),
    [
        ({"name": "no key"}, "key"),
        ({"key": "bad key!"}, "key"),
        ({"key": "beta-feature"}, "key"),  # duplicate of a seeded flag
        ({"key": "x1", "active": "yes"}, "active"),
        ({"key": "x2", "filters": []}, "filters"),
        ({"key": "x3", "filters": {"groups": [{"rollout_percentage": 150}]}}, "filters"),
        (
            {
                "key": "x4",
                "filters": {
                    "groups": [],
                    "multivariate": {
                        "variants": [
                            {"key": "a", "rollout_percentage": 60},
                            {"key": "b", "rollout_percentage": 60},
                        ]
                    },
                },
            },
            "filters",
        ),
        (flag("x5", {"properties": [prop("v", "not-a-version", "semver_gt")]}, active=None), "filters"),
        (flag("x6", {"properties": [prop("v", 1, "no_such_operator")]}, active=None), "filters"),
    ],
)
def test_validation_errors_name_the_attr(sandbox: Sandbox, payload: dict[str, Any], attr: str) -> None:
    r = httpx.post(_flags_url(sandbox), json=payload, headers=_auth(sandbox.personal_api_key))
    assert r.status_code == 400, r.text
    err = r.json()
    assert err["type"] == "validation_error" and err["attr"] == attr and err["detail"]


def test_dependency_cycle_is_refused(empty_sandbox: Sandbox) -> None:
    sb = empty_sandbox
    headers = _auth(sb.personal_api_key)

    a_needs_b = flag("a", condition(prop("b", True, "flag_evaluates_to", type="flag")), active=None)
    b_needs_a = flag("b", condition(prop("a", True, "flag_evaluates_to", type="flag")), active=None)
    assert httpx.post(_flags_url(sb), json=a_needs_b, headers=headers).status_code == 201
    created_b = httpx.post(_flags_url(sb), json={"key": "b"}, headers=headers)
    assert created_b.status_code == 201
    r = httpx.patch(
        _flags_url(sb, f"{created_b.json()['id']}/"),
        json={"filters": b_needs_a["filters"]},
        headers=headers,
    )
    assert r.status_code == 400 and r.json()["attr"] == "filters" and "cycle" in r.json()["detail"]


def test_scopes(sandbox: Sandbox) -> None:
    read_key = sandbox.create_personal_key(scopes=["feature_flag:read"])
    other_key = sandbox.create_personal_key(scopes=["session_recording_playlist:read"])
    write_key = sandbox.create_personal_key(scopes=["feature_flag:write"])
    assert httpx.get(_flags_url(sandbox), headers=_auth(read_key)).status_code == 200
    denied = httpx.post(_flags_url(sandbox), json={"key": "nope"}, headers=_auth(read_key))
    assert denied.status_code == 403
    assert denied.json()["detail"] == "API key missing required scope 'feature_flag:write'"
    r = httpx.get(_flags_url(sandbox), headers=_auth(other_key))
    assert r.status_code == 403 and "feature_flag:read" in r.json()["detail"]
    assert httpx.get(_flags_url(sandbox), headers=_auth(write_key)).status_code == 200  # write implies read
    created = httpx.post(_flags_url(sandbox), json={"key": "scoped-write"}, headers=_auth(write_key))
    assert created.status_code == 201
    assert httpx.get(_flags_url(sandbox)).status_code == 401
    bad = httpx.get(_flags_url(sandbox), headers=_auth("phx_not_a_real_key"))
    assert bad.status_code == 401 and bad.json()["code"] == "authentication_failed"
    for url in (
        f"{sandbox.url}/api/feature_flag/local_evaluation/?token={sandbox.project_api_key}",
        f"{sandbox.url}/flags/definitions?token={sandbox.project_api_key}",
    ):
        # 401, not 403: rust/feature-flags/tests/test_flag_definitions.rs
        # `test_personal_api_key_authentication_without_feature_flag_scopes` (the Django path is its alias)
        assert httpx.get(url, headers=_auth(other_key)).status_code == 401
        assert httpx.get(url, headers=_auth(read_key)).status_code == 200


def test_local_evaluation_shape(sandbox: Sandbox) -> None:
    headers = _auth(sandbox.personal_api_key)
    urls = [
        f"{sandbox.url}/api/feature_flag/local_evaluation/?token={sandbox.project_api_key}",
        f"{sandbox.url}/api/feature_flag/local_evaluation",
        f"{sandbox.url}/api/projects/{sandbox.project_id}/feature_flags/local_evaluation/",
        f"{sandbox.url}/flags/definitions?token={sandbox.project_api_key}&send_cohorts",
    ]
    bodies = []
    for url in urls:
        r = httpx.get(url, headers=headers)
        assert r.status_code == 200, (url, r.text)
        bodies.append(r.json())
    data = bodies[0]
    assert all(b == data for b in bodies)
    # PostHog's body (products/feature_flags/backend/local_evaluation.py `_local_eval_response`)
    assert set(data) == {
        "flags",
        "group_type_mapping",
        "cohorts",
        "minimal_flag_called_events",
        "property_matching_version",
    }
    assert data["property_matching_version"] == 1 and data["minimal_flag_called_events"] is False
    assert data["group_type_mapping"]["0"] == "company"
    keys = {f["key"] for f in data["flags"]}
    assert {"beta-feature", "company-dashboard", "sunset-banner", "eu-cohort-promo"} <= keys
    flag = next(f for f in data["flags"] if f["key"] == "beta-extras")
    assert {"id", "key", "filters", "active", "deleted", "version", "ensure_experience_continuity"} <= set(
        flag
    )
    dep = flag["filters"]["groups"][0]["properties"][0]
    assert dep["key"] == "beta-feature" and dep["dependency_chain"] == ["beta-feature"]
    cohort_flag = next(f for f in data["flags"] if f["key"] == "eu-cohort-promo")
    cohort_id = str(cohort_flag["filters"]["groups"][0]["properties"][0]["value"])
    assert data["cohorts"][cohort_id]["type"] == "OR"


def test_definitions_etag(sandbox: Sandbox) -> None:
    url = f"{sandbox.url}/flags/definitions?token={sandbox.project_api_key}"
    headers = _auth(sandbox.personal_api_key)
    first = httpx.get(url, headers=headers)
    etag = first.headers["etag"]
    again = httpx.get(url, headers={**headers, "If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    httpx.post(_flags_url(sandbox), json={"key": "etag-bump"}, headers=headers)
    changed = httpx.get(url, headers={**headers, "If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["etag"] != etag
    assert "etag-bump" in {f["key"] for f in changed.json()["flags"]}


def test_local_evaluation_wrong_token(sandbox: Sandbox) -> None:
    r = httpx.get(f"{sandbox.url}/flags/definitions?token=phc_nope", headers=_auth(sandbox.personal_api_key))
    assert r.status_code == 401 and r.json()["type"] == "authentication_error"

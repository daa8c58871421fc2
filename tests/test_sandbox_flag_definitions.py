"""Contract tests of the sandbox's ``/flags/definitions`` (and its alias
``/api/feature_flag/local_evaluation``) over real HTTP, each porting the assertions of one test of PostHog's
``rust/feature-flags/tests/test_flag_definitions.rs`` (named in its docstring) or a fact of
``rust/feature-flags/src/api/flag_definitions.rs``."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from analytics_nb.sandbox import Sandbox

PATH = "/flags/definitions"


@pytest.fixture(scope="module")
def http(sandbox: Sandbox) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=sandbox.url, timeout=10) as client:
        yield client


@pytest.fixture(scope="module")
def secret(sandbox: Sandbox) -> str:
    return sandbox.create_secret_key()


def get(http: httpx.Client, key: str | None, token: str | None, **headers: str) -> httpx.Response:
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    params = {"token": token} if token is not None else {}
    return http.get(PATH, params=params, headers=headers)


def test_no_key_is_401_not_authenticated(http: httpx.Client, sandbox: Sandbox) -> None:
    """test_flag_definitions.rs `test_personal_api_key_authentication_no_key` (and
    `test_flag_definitions_endpoint_exists`, `test_missing_token_param_with_no_auth_returns_401`)."""
    r = get(http, None, sandbox.project_api_key)
    assert r.status_code == 401
    assert r.json() == {
        "type": "authentication_error",
        "code": "not_authenticated",
        "detail": "Authentication credentials were not provided.",
        "attr": None,
    }
    assert get(http, None, None).status_code == 401


def test_invalid_personal_key_is_401(http: httpx.Client, sandbox: Sandbox) -> None:
    """`test_personal_api_key_authentication_invalid_key`."""
    r = get(http, "phx_invalid_key_12345", sandbox.project_api_key)
    assert r.status_code == 401
    body = r.json()
    assert (body["type"], body["code"], body["detail"], body["attr"]) == (
        "authentication_error",
        "authentication_failed",
        "Personal API key is invalid.",
        None,
    )


@pytest.mark.parametrize("scopes", [["feature_flag:read"], ["feature_flag:write"], ["*"]])
def test_personal_key_with_a_flag_scope_is_200(
    http: httpx.Client, sandbox: Sandbox, scopes: list[str]
) -> None:
    """`test_personal_api_key_authentication_valid_key_with_scopes`, `..._with_feature_flag_write_scope`,
    `..._with_all_access_scopes`."""
    key = sandbox.create_personal_key(scopes)
    r = get(http, key, sandbox.project_api_key)
    assert r.status_code == 200, r.text
    assert {"flags", "group_type_mapping", "cohorts"} <= set(r.json())


def test_personal_key_without_flag_scope_is_401(http: httpx.Client, sandbox: Sandbox) -> None:
    """`test_personal_api_key_authentication_without_feature_flag_scopes` (401, not 403)."""
    key = sandbox.create_personal_key(["insight:read"])
    assert get(http, key, sandbox.project_api_key).status_code == 401


def test_personal_key_scoped_to_another_team_is_401(http: httpx.Client, sandbox: Sandbox) -> None:
    """`test_personal_api_key_with_scoped_teams_denied` / `..._allowed`."""
    denied = sandbox.create_personal_key(["feature_flag:read"], scoped_teams=[99999])
    assert get(http, denied, sandbox.project_api_key).status_code == 401
    allowed = sandbox.create_personal_key(["feature_flag:read"], scoped_teams=[sandbox.project_id])
    assert get(http, allowed, sandbox.project_api_key).status_code == 200


def test_secret_key_is_200_and_an_invalid_one_401(http: httpx.Client, sandbox: Sandbox, secret: str) -> None:
    """`test_secret_api_token_authentication_valid_token` and `..._invalid_token`."""
    assert get(http, secret, sandbox.project_api_key).status_code == 200
    r = get(http, "phs_invalid_secret_token_xyz", sandbox.project_api_key)
    assert r.status_code == 401
    body = r.json()
    assert (body["type"], body["code"], body["detail"], body["attr"]) == (
        "authentication_error",
        "authentication_failed",
        "Secret API token is invalid.",
        None,
    )


@pytest.mark.parametrize(
    ("scopes", "status"),
    [(["feature_flag:read"], 200), (["feature_flag:write"], 200), (["*"], 200), (["insight:read"], 401)],
)
def test_project_secret_key_scopes(
    http: httpx.Client, sandbox: Sandbox, scopes: list[str], status: int
) -> None:
    """`test_flag_definitions_project_secret_api_key` (rstest cases read_scope, write_scope, wildcard_scope,
    wrong_scope)."""
    key = sandbox.create_secret_key(scopes)
    assert get(http, key, sandbox.project_api_key).status_code == status


def test_secret_key_of_another_project_is_401(http: httpx.Client, sandbox: Sandbox, secret: str) -> None:
    """`test_token_mismatch_secret_token_for_different_team` and the `wrong_team` rstest case."""
    other = sandbox.add_project("Definitions other project")
    assert get(http, secret, other.api_token).status_code == 401
    assert (
        get(http, sandbox.create_secret_key(project_id=other.id), sandbox.project_api_key).status_code == 401
    )


def test_missing_token_param(http: httpx.Client, sandbox: Sandbox, secret: str) -> None:
    """`test_missing_token_param_with_valid_secret_token` (200: the team comes from the phs_ key),
    `..._with_personal_api_key_returns_400` (the body names the token),
    `..._with_invalid_secret_token_returns_401`."""
    assert get(http, secret, None).status_code == 200
    r = get(http, sandbox.personal_api_key, None)
    assert r.status_code == 400 and "token" in r.text
    assert get(http, "phs_invalid_token_xyz", None).status_code == 401


def test_invalid_project_token_is_401(http: httpx.Client) -> None:
    """`test_invalid_project_api_key`: 401, a JSON body of type authentication_error."""
    r = http.get(PATH, params={"token": "phc_definitely_invalid_token_12345"})
    assert r.status_code == 401 and r.json()["type"] == "authentication_error"


def test_etag_304_when_matching_with_etag_and_cache_control(
    http: httpx.Client, sandbox: Sandbox, secret: str
) -> None:
    """`test_etag_200_includes_etag_header_without_if_none_match`, `test_etag_returns_304_when_matching`,
    `test_etag_304_includes_etag_and_cache_control_headers`, `test_etag_returns_200_when_not_matching`."""
    first = get(http, secret, sandbox.project_api_key)
    assert first.status_code == 200
    etag = first.headers["etag"]
    assert etag.startswith('W/"') and etag.endswith('"')  # format_weak_etag
    assert first.headers["cache-control"] == "private, must-revalidate"
    again = get(http, secret, sandbox.project_api_key, **{"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    assert again.headers["etag"] == etag and again.headers["cache-control"] == "private, must-revalidate"
    raw = etag[3:-1]
    for spelling in (f'"{raw}"', raw):  # extract_etag_from_header: strong and bare forms match too
        assert get(http, secret, sandbox.project_api_key, **{"If-None-Match": spelling}).status_code == 304
    stale = get(http, secret, sandbox.project_api_key, **{"If-None-Match": 'W/"stale_etag_value"'})
    assert stale.status_code == 200 and stale.headers["etag"] == etag


def test_a_flag_change_changes_the_etag(empty_sandbox: Sandbox) -> None:
    """ETags are the cache state's: a write gives a new one, so a 304 never hides a change."""
    sb = empty_sandbox
    key = sb.create_secret_key()
    with httpx.Client(base_url=sb.url, timeout=10) as h:
        before = get(h, key, sb.project_api_key).headers["etag"]
        r = h.post(
            f"/api/projects/{sb.project_id}/feature_flags/",
            headers={"Authorization": f"Bearer {sb.personal_api_key}"},
            json={"key": "etag-probe", "filters": {"groups": [{"properties": [], "rollout_percentage": 10}]}},
        )
        assert r.status_code == 201
        after = get(h, key, sb.project_api_key, **{"If-None-Match": before})
        assert after.status_code == 200 and after.headers["etag"] != before
        assert "etag-probe" in {f["key"] for f in after.json()["flags"]}


def test_cold_cache_is_503(http: httpx.Client, sandbox: Sandbox, secret: str) -> None:
    """`test_cache_miss_returns_503`: server_error / service_unavailable, the detail names the cache."""
    fault = sandbox.faults.add(path="/flags/definitions*", kind="cold_cache")
    try:
        r = get(http, secret, sandbox.project_api_key)
    finally:
        sandbox.faults.remove(fault)
    assert r.status_code == 503
    body = r.json()
    assert body["type"] == "server_error" and body["code"] == "service_unavailable"
    assert "Required data not found in cache" in body["detail"]


def test_methods(http: httpx.Client, sandbox: Sandbox, secret: str) -> None:
    """`handle_non_get_method`: GET only; other methods 405."""
    assert http.post(PATH, params={"token": sandbox.project_api_key}).status_code == 405


def test_the_django_path_is_an_alias_taking_the_same_keys(
    http: httpx.Client, sandbox: Sandbox, secret: str
) -> None:
    """PostHog #56043 / #61780: `/api/feature_flag/local_evaluation` is served by the same Rust handler."""
    rust = get(http, secret, sandbox.project_api_key)
    alias = http.get(
        "/api/feature_flag/local_evaluation/",
        params={"token": sandbox.project_api_key},
        headers={"Authorization": f"Bearer {secret}"},
    )
    assert alias.status_code == 200 and alias.json() == rust.json()
    assert alias.headers["etag"] == rust.headers["etag"]


def test_older_self_hosted_fault_removes_only_the_rust_path(
    http: httpx.Client, sandbox: Sandbox, secret: str
) -> None:
    """The `no_flags_definitions` fault imitates a PostHog without the Rust endpoint: 404 there, the
    Django path still served."""
    fault = sandbox.faults.add(path="/flags/definitions*", kind="no_flags_definitions")
    try:
        assert get(http, secret, sandbox.project_api_key).status_code == 404
        alias = http.get(
            "/api/feature_flag/local_evaluation/",
            params={"token": sandbox.project_api_key},
            headers={"Authorization": f"Bearer {sandbox.personal_api_key}"},
        )
        assert alias.status_code == 200
    finally:
        sandbox.faults.remove(fault)

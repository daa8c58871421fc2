"""Issue 12 finding 6: `scoped_teams` / `scoped_organizations` hold on every endpoint that can reveal a
project's data, including local evaluation and `/flags/definitions?token=...`."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from _sandbox_helpers import api
from analytics_nb.sandbox import Sandbox, SandboxProject, start


@pytest.fixture(scope="module")
def two() -> Iterator[tuple[Sandbox, SandboxProject]]:
    with start(seed="demo") as sb:
        second = sb.add_project("Second")
        with api(sb) as http:  # a flag only the second project has
            created = http.post(
                f"/api/projects/{second.id}/feature_flags/",
                json={"key": "second-only", "filters": {"groups": [{"rollout_percentage": 100}]}},
            )
            assert created.status_code == 201
        yield sb, second


def _get(sb: Sandbox, key: str, path: str, **params: str) -> httpx.Response:
    with api(sb, key) as http:
        return http.get(path, params=params)


DEFINITIONS = ("/api/feature_flag/local_evaluation/", "/flags/definitions")
# With `token=`, both paths are served by the Rust handler (the Django path is its alias, PostHog #56043 /
# #61780): a personal key without access to the token's team is 401 authentication_error, not Django's 403
# (rust/feature-flags/src/api/flag_definitions.rs; rust/feature-flags/tests/test_flag_definitions.rs
# `test_personal_api_key_with_scoped_teams_denied`). What these tests check is unchanged: refused, and the
# other project's definitions are not in the body.
REFUSED_WITH_TOKEN = 401


@pytest.mark.parametrize("path", DEFINITIONS)
def test_a_key_scoped_to_project_1_cannot_read_project_2_definitions(
    two: tuple[Sandbox, SandboxProject], path: str
) -> None:
    sb, second = two
    key = sb.create_personal_key(["feature_flag:read"], scoped_teams=[sb.project_id])
    refused = _get(sb, key, path, token=second.api_token)
    assert refused.status_code == REFUSED_WITH_TOKEN and "second-only" not in refused.text
    own = _get(sb, key, path, token=sb.project_api_key)
    assert own.status_code == 200 and "second-only" not in own.text
    unscoped = sb.create_personal_key(["feature_flag:read"])
    assert "second-only" in _get(sb, unscoped, path, token=second.api_token).text


@pytest.mark.parametrize("path", DEFINITIONS)
def test_definitions_without_a_token_respect_the_scope_of_the_current_project(
    two: tuple[Sandbox, SandboxProject], path: str
) -> None:
    sb, second = two
    key = sb.create_personal_key(["feature_flag:read"], scoped_teams=[second.id])
    # Without `token=`: the Django path is the Django view (the key's current project, 1, not in scope: 403);
    # the Rust `/flags/definitions` has no current project and asks for the token: 400 naming it
    # (rust/feature-flags/src/api/flag_definitions.rs; test_flag_definitions.rs
    # `test_missing_token_param_with_personal_api_key_returns_400`). Neither serves any definitions.
    expected = 400 if path == "/flags/definitions" else 403
    r = _get(sb, key, path)
    assert r.status_code == expected and "second-only" not in r.text and '"flags"' not in r.text


@pytest.mark.parametrize("path", DEFINITIONS)
def test_scoped_organizations_hold_on_the_definitions(two: tuple[Sandbox, SandboxProject], path: str) -> None:
    sb, _second = two
    elsewhere = sb.add_organization("Elsewhere")
    key = sb.create_personal_key(["feature_flag:read"], scoped_organizations=[elsewhere])
    r = _get(sb, key, path, token=sb.project_api_key)
    assert r.status_code == REFUSED_WITH_TOKEN and '"flags"' not in r.text


def test_project_endpoints_refuse_a_project_out_of_scope(two: tuple[Sandbox, SandboxProject]) -> None:
    sb, second = two
    key = sb.create_personal_key(["*"], scoped_teams=[sb.project_id])
    for path in (
        f"/api/projects/{second.id}/",
        f"/api/projects/{second.id}/feature_flags/",
        f"/api/projects/{second.id}/feature_flags/local_evaluation/",
        f"/api/projects/{second.id}/events/",
        f"/api/projects/{second.id}/session_recording_playlists/",
        f"/api/environments/{second.id}/feature_flags/",
    ):
        assert _get(sb, key, path).status_code == 403, path
    listed = _get(sb, key, "/api/projects/").json()
    assert [p["id"] for p in listed["results"]] == [sb.project_id] and listed["count"] == 1
    org = _get(sb, key, "/api/organizations/@current/").json()
    assert [p["id"] for p in org["projects"]] == [sb.project_id]


def test_me_hides_a_current_project_out_of_scope(two: tuple[Sandbox, SandboxProject]) -> None:
    sb, second = two
    key = sb.create_personal_key(["*"], scoped_teams=[second.id])
    me = _get(sb, key, "/api/users/@me/").json()
    assert me["team"] is None
    assert [p["id"] for p in me["organization"]["projects"]] == [second.id]

"""Issue 11, `property_matching_version` in the sandbox: the project's setting (PostHog's per-team
`TeamFeatureFlagsConfig.property_matching_version`, set through the staff API) travels in `/flags/definitions`
and `local_evaluation`, and `/decide`, `/flags`, local simulation from the client's definitions and the
official SDK's local evaluation all answer by it, and agree.

The case that tells the versions apart comes from posthog 7.91.1 `_match_exact_property`: version 1 compares a
boolean-ish filter value (`false`) by truthiness, so the text `"declined"` (not `"true"`) equals `false`;
version 2 compares the texts, so it does not.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest

from _clients import client_for
from _flags import condition, flag, prop
from analytics_nb.sandbox import Sandbox, start
from analytics_nb.sandbox._resources.feature_flags import create_flag
from analytics_nb.simulation import simulate

PERSON = {"beta_opt_in": "declined"}
#: flag key -> its answer under version 1 and under version 2, for PERSON
EXPECTED = {"opted-out": {1: True, 2: False}, "not-opted-out": {1: False, 2: True}}


@pytest.fixture
def sb() -> Iterator[Sandbox]:
    with start(seed="empty", profile="spec") as sandbox:
        for key, operator in (("opted-out", "exact"), ("not-opted-out", "is_not")):
            opted_out = condition(prop("beta_opt_in", False, operator))
            create_flag(sandbox.ctx.store, sandbox.project_id, flag(key, opted_out, name=key, active=None))
        sandbox.set_person("ada", PERSON)
        yield sandbox


def _auth(sb: Sandbox, key: str | None = None) -> dict[str, str]:
    return {"Authorization": f"Bearer {key or sb.personal_api_key}"}


def _definitions(sb: Sandbox, path: str = "/flags/definitions/") -> httpx.Response:
    return httpx.get(f"{sb.url}{path}", params={"token": sb.project_api_key}, headers=_auth(sb))


def _set_version(sb: Sandbox, version: Any, key: str | None = None, **extra: Any) -> httpx.Response:
    body = {"team_id": sb.project_id, "property_matching_version": version, **extra}
    return httpx.post(f"{sb.url}/api/feature_flags_staff_team_config/set/", json=body, headers=_auth(sb, key))


def _decide(sb: Sandbox) -> dict[str, Any]:
    r = httpx.post(f"{sb.url}/decide/?v=3", json={"token": sb.project_api_key, "distinct_id": "ada"})
    assert r.status_code == 200, r.text
    return dict(r.json()["featureFlags"])


def _enabled(sb: Sandbox) -> dict[str, Any]:
    r = httpx.post(f"{sb.url}/flags/?v=2", json={"token": sb.project_api_key, "distinct_id": "ada"})
    assert r.status_code == 200, r.text
    return {k: v["enabled"] for k, v in r.json()["flags"].items()}


def _expected(version: int) -> dict[str, bool]:
    return {key: answers[version] for key, answers in EXPECTED.items()}


def test_definitions_carry_the_projects_setting_as_posthog_does(sb: Sandbox) -> None:
    for path in ("/flags/definitions/", "/api/feature_flag/local_evaluation/"):
        body = _definitions(sb, path).json()
        assert body["property_matching_version"] == 1  # PostHog's default (PropertyMatchingVersion.LEGACY)
        assert body["minimal_flag_called_events"] is False
        assert set(body) == {
            "flags",
            "group_type_mapping",
            "cohorts",
            "minimal_flag_called_events",
            "property_matching_version",
        }
    before = _definitions(sb)
    assert _set_version(sb, 2).status_code == 200
    after = _definitions(sb)
    assert after.json()["property_matching_version"] == 2
    assert after.headers["etag"] != before.headers["etag"]  # an SDK polling with If-None-Match sees it
    stale = httpx.get(
        f"{sb.url}/flags/definitions/",
        params={"token": sb.project_api_key},
        headers={**_auth(sb), "If-None-Match": before.headers["etag"]},
    )
    assert stale.status_code == 200 and stale.json()["property_matching_version"] == 2


def test_staff_api_sets_and_lists_it_for_the_owner_only(sb: Sandbox) -> None:
    r = _set_version(sb, 2)
    assert r.status_code == 200
    assert r.json()["team_id"] == sb.project_id and r.json()["property_matching_version"] == 2
    listed = httpx.get(
        f"{sb.url}/api/feature_flags_staff_team_config/",
        params={"team_ids": f"{sb.project_id},999"},
        headers=_auth(sb),
    )
    assert listed.status_code == 200
    assert [(row["team_id"], row["property_matching_version"]) for row in listed.json()["results"]] == [
        (sb.project_id, 2)
    ]
    other = sb.create_personal_key(scopes=["*"])
    refused = _set_version(sb, 1, key=other)
    assert refused.status_code == 403 and "owner" in refused.json()["detail"]
    bad = _set_version(sb, 3)
    assert bad.status_code == 400 and bad.json()["attr"] == "property_matching_version"
    assert _set_version(sb, True).status_code == 400
    unsupported = _set_version(sb, 1, minimal_flag_called_events=True)
    assert unsupported.status_code == 400 and unsupported.json()["attr"] == "minimal_flag_called_events"
    missing = httpx.post(
        f"{sb.url}/api/feature_flags_staff_team_config/set/",
        json={"team_id": 999, "property_matching_version": 1},
        headers=_auth(sb),
    )
    assert missing.status_code == 404
    assert _definitions(sb).json()["property_matching_version"] == 2  # nothing refused was written


def test_handle_helper_refuses_other_versions(sb: Sandbox) -> None:
    with pytest.raises(ValueError, match="property_matching_version must be 1"):
        sb.set_property_matching_version(3)
    with pytest.raises(ValueError, match="project_id"):
        sb.set_property_matching_version(2, project_id=999)
    second = sb.add_project("Second")
    sb.set_property_matching_version(2, project_id=second.id)
    assert _definitions(sb).json()["property_matching_version"] == 1  # another project's setting


@pytest.mark.filterwarnings("ignore:`get_feature_flag` is deprecated:DeprecationWarning")
@pytest.mark.parametrize("version", [1, 2])
def test_decide_flags_simulation_and_the_sdk_agree_per_the_setting(sb: Sandbox, version: int) -> None:
    posthog = pytest.importorskip("posthog")
    if version == 2:
        assert _set_version(sb, 2).status_code == 200
    want = _expected(version)
    assert {k: _decide(sb)[k] for k in want} == want
    assert {k: _enabled(sb)[k] for k in want} == want

    people = pd.DataFrame({"distinct_id": ["ada"], "beta_opt_in": ["declined"]})
    with client_for(sb, max_retries=0) as client:
        local = client.feature_flags.local_evaluation()
        assert local.property_matching_version == version
        for kw in ({}, {"definitions": local}, {"definitions": local.model_dump(mode="json")}):
            result = simulate(people, engine="local", client=client, **kw)
            frame = getattr(result, "frame", result)
            assert {k: bool(frame[k].iloc[0]) for k in want} == want, kw

    sdk = posthog.Posthog(
        sb.project_api_key,
        host=sb.url,
        secret_key=sb.personal_api_key,
        poll_interval=3600,
        enable_local_evaluation=True,
        max_retries=0,
        feature_flags_request_timeout_seconds=10,
    )
    try:
        sdk.load_feature_flags()
        answers = {
            key: sdk.get_feature_flag(
                key,
                "ada",
                person_properties=PERSON,
                only_evaluate_locally=True,
                send_feature_flag_events=False,
            )
            for key in want
        }
    finally:
        sdk.shutdown()
    assert answers == want


def test_a_database_of_an_older_build_gets_the_setting(tmp_path: Path) -> None:
    db = str(tmp_path / "old.sqlite")
    with start(seed="empty", db=db) as sb:
        opted_out = flag("opted-out", condition(prop("beta_opt_in", False)), name="opted-out", active=None)
        create_flag(sb.ctx.store, sb.project_id, opted_out)
        sb.set_person("ada", PERSON)
    with sqlite3.connect(db) as conn:  # as older builds left it: no feature-flags config table
        conn.execute("DROP TABLE team_feature_flags_config")
    with start(seed="empty", db=db) as sb:
        assert _definitions(sb).json()["property_matching_version"] == 1
        assert _decide(sb)["opted-out"] is True
        sb.set_property_matching_version(2)
        assert _decide(sb)["opted-out"] is False
    with start(seed="empty", db=db) as sb:  # the setting is durable
        assert _definitions(sb).json()["property_matching_version"] == 2
        assert _decide(sb)["opted-out"] is False

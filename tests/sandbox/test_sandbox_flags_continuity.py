"""Experience continuity in the sandbox's /decide and /flags over real HTTP: the `$anon_distinct_id` of a
request becomes the stored hash key of the new distinct id for flags with `ensure_experience_continuity`."""

from __future__ import annotations

from typing import Any

import httpx

from _flags import flag
from analytics_nb.flags import evaluate_flag
from analytics_nb.sandbox import Sandbox

VARIANTS = [{"key": k, "rollout_percentage": 25} for k in ("a", "b", "c", "d")]


# create requests as the UI sends them (no `active`: the API's default); only the continuity setting differs
STICKY = flag("sticky", variants=VARIANTS, active=None, ensure_experience_continuity=True)
PLAIN = flag("plain", variants=VARIANTS, active=None, ensure_experience_continuity=False)


def _variant(flag: dict[str, Any], distinct_id: str) -> Any:
    return evaluate_flag({**flag, "ensure_experience_continuity": False}, distinct_id).value


def _pick_ids() -> tuple[str, str]:
    """An anonymous id and a user id that land in different variants of both flags."""
    for i in range(200):
        anon, user = f"anon-{i}", f"user-{i}"
        if all(_variant(each, anon) != _variant(each, user) for each in (STICKY, PLAIN)):
            return anon, user
    raise AssertionError("no id pair with different variants")


def _create(http: httpx.Client, sb: Sandbox, flag: dict[str, Any]) -> None:
    r = http.post(
        f"/api/projects/{sb.project_id}/feature_flags/",
        headers={"Authorization": f"Bearer {sb.personal_api_key}"},
        json=flag,
    )
    assert r.status_code == 201, r.text


def _decide(http: httpx.Client, sb: Sandbox, distinct_id: str, **extra: Any) -> dict[str, Any]:
    r = http.post("/decide/?v=3", json={"api_key": sb.project_api_key, "distinct_id": distinct_id, **extra})
    assert r.status_code == 200, r.text
    flags: dict[str, Any] = r.json()["featureFlags"]
    return flags


def test_identified_user_keeps_the_anonymous_variant_and_other_flags_are_unaffected(
    empty_sandbox: Sandbox,
) -> None:
    sb = empty_sandbox
    anon, user = _pick_ids()
    with httpx.Client(base_url=sb.url, timeout=10) as http:
        _create(http, sb, STICKY)
        _create(http, sb, PLAIN)
        before = _decide(http, sb, anon)
        assert before["sticky"] == _variant(STICKY, anon)

        # identify: the first request of the new distinct id carries the anonymous id
        after = _decide(http, sb, user, **{"$anon_distinct_id": anon})
        assert after["sticky"] == before["sticky"]
        assert after["plain"] == _variant(PLAIN, user) != before["plain"]

        # the override is stored: later requests without $anon_distinct_id keep the variant (also on /flags)
        assert _decide(http, sb, user)["sticky"] == before["sticky"]
        r = http.post("/flags/?v=2", json={"api_key": sb.project_api_key, "distinct_id": user})
        assert r.json()["flags"]["sticky"]["variant"] == before["sticky"]

        # the first anonymous id wins: a later one does not rewrite the stored hash key
        assert _decide(http, sb, user, **{"$anon_distinct_id": user})["sticky"] == before["sticky"]


def test_without_anon_id_continuity_flags_hash_on_the_distinct_id(empty_sandbox: Sandbox) -> None:
    sb = empty_sandbox
    anon, user = _pick_ids()
    with httpx.Client(base_url=sb.url, timeout=10) as http:
        _create(http, sb, STICKY)
        assert _decide(http, sb, user)["sticky"] == _variant(STICKY, user)
        # an override is written for continuity flags only, and only for the distinct id of the request
        assert _decide(http, sb, anon, **{"$anon_distinct_id": user})["sticky"] == _variant(STICKY, user)
        assert _decide(http, sb, user)["sticky"] == _variant(STICKY, user)


def test_flag_created_after_identify_gets_the_override_on_the_next_anon_request(
    empty_sandbox: Sandbox,
) -> None:
    sb = empty_sandbox
    anon, user = _pick_ids()
    with httpx.Client(base_url=sb.url, timeout=10) as http:
        _create(http, sb, PLAIN)
        _decide(http, sb, user, **{"$anon_distinct_id": anon})  # no continuity flag: nothing stored
        _create(http, sb, STICKY)
        assert _decide(http, sb, user)["sticky"] == _variant(STICKY, user)
        assert _decide(http, sb, user, **{"$anon_distinct_id": anon})["sticky"] == _variant(STICKY, anon)

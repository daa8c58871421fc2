"""Regression tests for the sandbox's part of issue 12 (data safety): poisoned rows, invalid Unicode, deep
nesting and out-of-range numbers never store anything, never answer 5xx, and never make a read fail."""

from __future__ import annotations

import json

import httpx
import pytest

from _sandbox_helpers import api, error, playlists_path
from analytics_nb.sandbox import Sandbox, start
from analytics_nb.sandbox._resources.feature_flags import invalidate_flags


@pytest.fixture
def sb() -> Sandbox:
    with start(seed="demo") as sandbox:
        yield sandbox


def _not_json(name: str) -> None:
    raise AssertionError(f"{name} is not JSON")


def _raw(http: httpx.Client, method: str, path: str, text: str) -> httpx.Response:
    return http.request(
        method, path, content=text.encode("utf-8"), headers={"Content-Type": "application/json"}
    )


# -- finding 1: poisoned rows ---------------------------------------------------------------------------
def test_non_finite_playlist_filters_are_refused_and_nothing_is_stored(sb: Sandbox) -> None:
    with api(sb) as http:
        before = http.get(playlists_path(sb)).json()["count"]
        resp = _raw(http, "POST", playlists_path(sb), '{"type": "filters", "filters": {"duration": [1e400]}}')
        assert resp.status_code == 400
        assert error(resp)["attr"] == "filters__duration__0" and "finite" in error(resp)["detail"]
        listing = http.get(playlists_path(sb))
        assert listing.status_code == 200 and listing.json()["count"] == before


def test_non_finite_unknown_field_of_a_flag_patch_is_refused(sb: Sandbox) -> None:
    with api(sb) as http:
        path = f"/api/projects/{sb.project_id}/feature_flags/"
        flag = http.get(path).json()["results"][0]
        resp = _raw(http, "PATCH", f"{path}{flag['id']}/", '{"name": "x", "colour": 1e400}')
        assert resp.status_code == 400 and error(resp)["attr"] == "colour"
        assert http.get(f"{path}{flag['id']}/").json()["version"] == flag["version"]  # nothing written
        assert http.get(path).status_code == 200


def test_non_finite_event_property_is_refused_and_the_listing_keeps_working(sb: Sandbox) -> None:
    event = '{"event": "e", "distinct_id": "d", "properties": {"big": 1e400}}'
    body = f'{{"api_key": "{sb.project_api_key}", "batch": [{event}]}}'
    resp = httpx.post(f"{sb.url}/batch/", content=body.encode())
    assert resp.status_code == 400 and "batch__0__properties__big" in resp.text
    assert len(sb.events()) == 0
    with api(sb) as http:
        assert http.get(f"/api/projects/{sb.project_id}/events/").status_code == 200


def test_a_poisoned_row_from_an_older_build_never_makes_a_read_fail(sb: Sandbox) -> None:
    with api(sb) as http:
        created = http.post(
            playlists_path(sb), json={"type": "filters", "filters": {"date_from": "-7d"}}
        ).json()
        # a row as an older build stored it: Infinity in the JSON column
        sb.ctx.store.execute(
            "UPDATE playlists SET filters=? WHERE short_id=?", ('{"duration": Infinity}', created["short_id"])
        )
        listing = http.get(playlists_path(sb), params={"limit": 500})
        assert listing.status_code == 200
        found = [p for p in listing.json()["results"] if p["short_id"] == created["short_id"]]
        assert found[0]["filters"] == {"duration": None}
        assert http.get(playlists_path(sb, created["short_id"] + "/")).status_code == 200


def test_a_poisoned_flag_row_from_an_older_build_never_breaks_the_definitions(sb: Sandbox) -> None:
    flag_id = sb.ctx.store.query_one("SELECT id FROM feature_flags ORDER BY id LIMIT 1")["id"]
    body = sb.ctx.store.query_one("SELECT body FROM feature_flags WHERE id=?", (flag_id,))["body"]
    poisoned = body.replace('"filters":{', '"filters":{"x":Infinity,"y":"\\ud800",', 1)
    assert poisoned != body
    sb.ctx.store.execute("UPDATE feature_flags SET body=? WHERE id=?", (poisoned, flag_id))
    invalidate_flags(sb.ctx.store, sb.project_id)
    with api(sb) as http:
        for path in ("/api/feature_flag/local_evaluation/", f"/api/projects/{sb.project_id}/feature_flags/"):
            resp = http.get(path)
            assert resp.status_code == 200, path
            json.loads(resp.content.decode("utf-8"), parse_constant=_not_json)  # strict JSON, valid UTF-8


# -- finding 4: lone surrogates ----------------------------------------------------------------------
def test_a_lone_surrogate_in_an_api_body_is_a_400_naming_the_field(sb: Sandbox) -> None:
    with api(sb) as http:
        before = http.get(playlists_path(sb)).json()["count"]
        resp = _raw(http, "POST", playlists_path(sb), '{"type": "collection", "name": "bad \\ud800 name"}')
        assert resp.status_code == 400 and error(resp)["attr"] == "name"
        assert "surrogate" in error(resp)["detail"]
        assert http.get(playlists_path(sb)).json()["count"] == before


def test_capture_replaces_a_lone_surrogate_and_keeps_the_rest_of_the_batch(sb: Sandbox) -> None:
    events = [
        '{"event": "ok-1", "distinct_id": "d1"}',
        '{"event": "bad", "distinct_id": "d2", "properties": {"name": "x\\udc00y"}}',
        '{"event": "ok-2", "distinct_id": "d3"}',
    ]
    body = f'{{"api_key": "{sb.project_api_key}", "batch": [{",".join(events)}]}}'
    resp = httpx.post(f"{sb.url}/batch/", content=body.encode())
    assert resp.status_code == 200, resp.text
    stored = sb.events().set_index("event")
    assert set(stored.index) == {"ok-1", "bad", "ok-2"}
    assert stored.loc["bad", "properties"] == {"name": "x\ufffdy"}  # as PostHog's InvalidSurrogatesPass


def test_decide_with_a_lone_surrogate_is_a_400(sb: Sandbox) -> None:
    ids = '"distinct_id": "u\\ud800", "$anon_distinct_id": "a\\ud800"'
    body = f'{{"api_key": "{sb.project_api_key}", {ids}}}'
    resp = httpx.post(f"{sb.url}/flags/?v=2", content=body.encode())
    assert resp.status_code == 400 and resp.text.startswith("Failed to decode request")


# -- finding 10: no 5xx on bad input ----------------------------------------------------------------------
def test_deep_nesting_without_a_key_is_a_400_stating_the_limit(sb: Sandbox) -> None:
    deep = "[" * 1000 + "]" * 1000
    resp = httpx.post(
        f"{sb.url}{playlists_path(sb)}", content=deep.encode(), headers={"Content-Type": "application/json"}
    )
    assert resp.status_code == 400 and "128" in error(resp)["detail"]
    capture = httpx.post(f"{sb.url}/batch/", content=('{"batch": ' + deep + "}").encode())
    assert capture.status_code == 400 and "128" in capture.text
    decide = httpx.post(f"{sb.url}/decide/", content=deep.encode())
    assert decide.status_code == 400


def test_an_offset_past_sqlite_integers_is_a_400_naming_it(sb: Sandbox) -> None:
    with api(sb) as http:
        saved = http.post(
            playlists_path(sb), json={"type": "filters", "filters": {"date_from": "-7d"}}
        ).json()
        for path in (
            playlists_path(sb, f"{saved['short_id']}/recordings/"),
            playlists_path(sb),
            f"/api/projects/{sb.project_id}/feature_flags/",
        ):
            resp = http.get(path, params={"offset": 2**63})
            assert resp.status_code == 400 and error(resp)["attr"] == "offset", path
        assert http.get(playlists_path(sb), params={"offset": 2**63 - 1}).json()["results"] == []


def test_every_json_value_the_api_accepts_reads_back(sb: Sandbox) -> None:
    odd = {
        "nested": [[{"a": -0.0, "b": 1e308, "c": "\u00e9\U0001f600"}]],
        "deep": json.loads("[" * 120 + "]" * 120),
    }
    with api(sb) as http:
        created = http.post(playlists_path(sb), json={"type": "filters", "filters": odd})
        assert created.status_code == 201
        assert http.get(playlists_path(sb, created.json()["short_id"] + "/")).json()["filters"] == odd

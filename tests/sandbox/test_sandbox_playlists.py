"""Contract tests for the playlist endpoints of the sandbox, over real HTTP."""

from __future__ import annotations

import re
import time

import httpx
import pytest

from _sandbox_helpers import api, error, playlists_path
from analytics_nb.sandbox import Sandbox

PLAYLIST_FIELDS = {
    "id",
    "short_id",
    "name",
    "derived_name",
    "description",
    "pinned",
    "created_at",
    "created_by",
    "deleted",
    "filters",
    "last_modified_at",
    "last_modified_by",
    "recordings_counts",
    "type",
    "is_synthetic",
}
RECORDING_FIELDS = {
    "id",
    "distinct_id",
    "viewed",
    "viewers",
    "recording_duration",
    "active_seconds",
    "inactive_seconds",
    "start_time",
    "end_time",
    "click_count",
    "keypress_count",
    "mouse_activity_count",
    "console_log_count",
    "console_warn_count",
    "console_error_count",
    "start_url",
    "person",
    "storage",
    "retention_period_days",
    "expiry_time",
    "recording_ttl",
    "snapshot_source",
    "ongoing",
    "activity_score",
}


def _create(http: httpx.Client, sb: Sandbox, **body: object) -> dict:
    resp = http.post(playlists_path(sb), json=body)
    assert resp.status_code == 201, resp.text
    return resp.json()


def test_list_shape_and_default_page(sandbox: Sandbox) -> None:
    with api(sandbox) as http:
        body = http.get(playlists_path(sandbox)).json()
    assert set(body) == {"count", "next", "previous", "results"}
    assert body["count"] >= 60
    assert len(body["results"]) == min(100, body["count"])
    first = body["results"][0]
    assert set(first) == PLAYLIST_FIELDS
    assert re.fullmatch(r"[A-Za-z0-9]{8}", first["short_id"])
    assert {
        "id",
        "uuid",
        "distinct_id",
        "first_name",
        "last_name",
        "email",
        "is_email_verified",
        "hedgehog_config",
    } <= set(first["created_by"])
    assert {p["type"] for p in body["results"]} == {"collection", "filters"}
    assert all(not p["deleted"] for p in body["results"])


def test_pagination_covers_everything_once_with_absolute_links(sandbox: Sandbox) -> None:
    with api(sandbox) as http:
        total = http.get(playlists_path(sandbox), params={"limit": 1}).json()["count"]
        seen: list[str] = []
        url: str | None = f"{sandbox.url}{playlists_path(sandbox)}?limit=7"
        pages = 0
        while url:
            assert url.startswith(sandbox.url + "/api/")
            page = http.get(url).json()
            seen += [p["short_id"] for p in page["results"]]
            url = page["next"]
            pages += 1
        assert len(seen) == total == len(set(seen))
        assert pages == -(-total // 7)
        second = http.get(playlists_path(sandbox), params={"limit": 7, "offset": 7}).json()
        assert second["previous"] is not None and "offset" not in second["previous"]


@pytest.mark.parametrize(
    ("limit", "expected"), [("0", 100), ("-3", 100), ("abc", 100), ("1000", 500), ("5", 5)]
)
def test_limit_clamping(sandbox: Sandbox, limit: str, expected: int) -> None:
    with api(sandbox) as http:
        body = http.get(playlists_path(sandbox), params={"limit": limit}).json()
    assert len(body["results"]) == min(expected, body["count"])
    if body["next"]:
        assert f"limit={expected}" in body["next"]


def test_filters(sandbox: Sandbox) -> None:
    with api(sandbox) as http:
        all_ = http.get(playlists_path(sandbox), params={"limit": 500}).json()["results"]
        pinned = http.get(playlists_path(sandbox), params={"pinned": "false", "limit": 500}).json()["results"]
        assert pinned and all(p["pinned"] for p in pinned)  # the value is ignored
        assert len(pinned) == sum(p["pinned"] for p in all_)
        mine = http.get(playlists_path(sandbox), params={"user": "false", "limit": 500}).json()["results"]
        me = http.get("/api/users/@me/").json()
        assert mine and all(p["created_by"]["id"] == me["id"] for p in mine)
        other_id = next(p["created_by"]["id"] for p in all_ if p["created_by"]["id"] != me["id"])
        by = http.get(playlists_path(sandbox), params={"created_by": other_id, "limit": 500}).json()[
            "results"
        ]
        assert by and all(p["created_by"]["id"] == other_id for p in by)
        bad = http.get(playlists_path(sandbox), params={"created_by": "99999"})
        assert bad.status_code == 400 and error(bad)["attr"] == "created_by"
        for kind in ("collection", "filters"):
            typed = http.get(playlists_path(sandbox), params={"type": kind, "limit": 500}).json()["results"]
            assert typed and all(p["type"] == kind for p in typed)
        target = all_[3]["short_id"]
        one = http.get(playlists_path(sandbox), params={"short_id": target}).json()
        assert one["count"] == 1 and one["results"][0]["short_id"] == target
        found = http.get(playlists_path(sandbox), params={"search": "CHECKOUT", "limit": 500}).json()[
            "results"
        ]
        assert found and all(
            "checkout" in ((p["name"] or "") + (p["derived_name"] or "")).lower() for p in found
        )
        recent = http.get(playlists_path(sandbox), params={"date_from": "-7d", "limit": 500}).json()[
            "results"
        ]
        older = http.get(playlists_path(sandbox), params={"date_to": "-7d", "limit": 500}).json()["results"]
        assert recent and older and len(recent) + len(older) == len(all_)
        iso = http.get(playlists_path(sandbox), params={"date_from": "2000-01-01T00:00:00Z", "limit": 500})
        assert iso.json()["count"] == len(all_)
        # not a date: `relative_date_parse` (posthog/utils.py) never refuses; "yesterday-ish" has a unit ("y")
        # without a number, so it reads as now and nothing was modified after it (issue 27: was a 400 here)
        bad_date = http.get(playlists_path(sandbox), params={"date_from": "yesterday-ish"})
        assert bad_date.status_code == 200 and bad_date.json()["count"] == 0
        bad_to = http.get(playlists_path(sandbox), params={"date_to": "yesterday-ish", "limit": 500})
        assert bad_to.json()["count"] == len(all_)


def test_session_recording_id_filter_and_order(sandbox: Sandbox) -> None:
    with api(sandbox) as http:
        coll = _create(http, sandbox, type="collection", name="zz order test")
        recs = http.get(playlists_path(sandbox, "synthetic-watch-history/recordings/"))
        assert recs.status_code == 404  # no synthetic playlists in the spec profile
        some = next(
            p
            for p in http.get(playlists_path(sandbox), params={"type": "collection"}).json()["results"]
            if p["recordings_counts"]["collection"]["count"]
        )
        rec_id = http.get(playlists_path(sandbox, f"{some['short_id']}/recordings/")).json()["results"][0][
            "id"
        ]
        http.post(playlists_path(sandbox, f"{coll['short_id']}/recordings/{rec_id}/"))
        having = http.get(playlists_path(sandbox), params={"session_recording_id": rec_id}).json()["results"]
        assert {coll["short_id"], some["short_id"]} <= {p["short_id"] for p in having}
        by_name = http.get(playlists_path(sandbox), params={"order": "name", "limit": 500}).json()["results"]
        keys = [(p["name"] or p["derived_name"] or "").lower() for p in by_name]
        assert keys == sorted(keys)
        by_created = http.get(playlists_path(sandbox), params={"order": "-created_at", "limit": 500}).json()
        stamps = [p["created_at"] for p in by_created["results"]]
        assert stamps == sorted(stamps, reverse=True)
        unknown = http.get(playlists_path(sandbox), params={"order": "secret_field; DROP", "limit": 500})
        assert unknown.status_code == 200
        mods = [p["last_modified_at"] for p in unknown.json()["results"]]
        assert mods == sorted(mods, reverse=True)


def test_create_rules(sandbox: Sandbox) -> None:
    with api(sandbox) as http:
        missing = http.post(playlists_path(sandbox), json={"name": "no type"})
        assert missing.status_code == 400
        assert error(missing) == {
            "type": "validation_error",
            "code": "invalid_input",
            "attr": None,
            "detail": "Must provide a valid playlist type: either filters or collection",
        }
        wrong = http.post(playlists_path(sandbox), json={"type": "static"})
        assert wrong.status_code == 400 and error(wrong)["code"] == "invalid_choice"
        assert error(wrong)["attr"] == "type"
        coll_filters = http.post(playlists_path(sandbox), json={"type": "collection", "filters": {"a": 1}})
        assert error(coll_filters)["detail"] == "You cannot create a collection with filters"
        saved_no_filters = http.post(playlists_path(sandbox), json={"type": "filters"})
        assert (
            error(saved_no_filters)["detail"]
            == "You must provide a valid filters when creating a saved filter"
        )
        created = _create(
            http, sandbox, type="collection", name="New one", description="d", short_id="HACKED12"
        )
        assert created["short_id"] != "HACKED12" and re.fullmatch(r"[A-Za-z0-9]{8}", created["short_id"])
        assert set(created) == PLAYLIST_FIELDS
        assert created["recordings_counts"]["collection"] == {"count": None, "watched_count": 0}
        assert created["created_by"]["email"] == created["last_modified_by"]["email"]
        got = http.get(playlists_path(sandbox, created["short_id"])).json()
        assert got == created


def test_update_rules_and_last_modified(sandbox: Sandbox) -> None:
    with api(sandbox) as http:
        coll = _create(http, sandbox, type="collection", name="Before")
        time.sleep(0.01)
        pinned = http.patch(
            playlists_path(sandbox, coll["short_id"]), json={"pinned": True, "type": "filters"}
        )
        assert pinned.status_code == 200
        assert pinned.json()["pinned"] is True and pinned.json()["type"] == "collection"  # type ignored
        assert pinned.json()["last_modified_at"] == coll["last_modified_at"]  # not a material field
        renamed = http.patch(playlists_path(sandbox, coll["short_id"]), json={"name": "After"}).json()
        assert renamed["name"] == "After" and renamed["last_modified_at"] > coll["last_modified_at"]
        add_filters = http.patch(playlists_path(sandbox, coll["short_id"]), json={"filters": {"x": 1}})
        assert error(add_filters)["detail"] == "You cannot update a collection to add filters"
        saved = _create(http, sandbox, type="filters", name="Saved", filters={"date_from": "-3d"})
        rename = http.patch(playlists_path(sandbox, saved["short_id"]), json={"name": "Renamed"})
        assert rename.status_code == 400
        assert error(rename)["detail"] == "You cannot remove all filters when updating a saved filter"
        ok = http.patch(
            playlists_path(sandbox, saved["short_id"]), json={"name": "Renamed", "filters": saved["filters"]}
        )
        assert ok.status_code == 200 and ok.json()["name"] == "Renamed"
        unchanged = http.get(playlists_path(sandbox, saved["short_id"])).json()
        assert unchanged["filters"] == {"date_from": "-3d"}


def test_soft_delete_restore_and_405(sandbox: Sandbox) -> None:
    with api(sandbox) as http:
        coll = _create(http, sandbox, type="collection", name="to delete")
        sid = coll["short_id"]
        gone = http.patch(playlists_path(sandbox, sid), json={"deleted": True})
        assert gone.status_code == 200 and gone.json()["deleted"] is True
        assert http.get(playlists_path(sandbox, sid)).status_code == 404
        assert http.get(playlists_path(sandbox, f"{sid}/recordings")).status_code == 404
        listed = http.get(playlists_path(sandbox), params={"limit": 500}).json()["results"]
        assert sid not in {p["short_id"] for p in listed}
        back = http.patch(playlists_path(sandbox, sid), json={"deleted": False})
        assert back.status_code == 200 and back.json()["deleted"] is False
        assert http.get(playlists_path(sandbox, sid)).status_code == 200
        hard = http.delete(playlists_path(sandbox, sid))
        assert hard.status_code == 405 and hard.content == b""
        assert http.delete(playlists_path(sandbox, "NoSuchId")).status_code == 405
        assert http.get(playlists_path(sandbox, sid)).status_code == 200
        put = http.request("PUT", playlists_path(sandbox))
        assert put.status_code == 405 and error(put)["detail"] == 'Method "PUT" not allowed.'
    with api(sandbox, sandbox.create_personal_key(["session_recording_playlist:read"])) as reader:
        denied = reader.delete(playlists_path(sandbox, sid))
        assert denied.status_code == 403
        assert error(denied)["detail"] == "API key missing required scope 'session_recording_playlist:write'"


def test_recordings_add_remove(sandbox: Sandbox) -> None:
    with api(sandbox) as http:
        coll = _create(http, sandbox, type="collection", name="clips")
        sid = coll["short_id"]
        empty = http.get(playlists_path(sandbox, f"{sid}/recordings/"))
        assert empty.json() == {"results": [], "has_next": False, "version": 4}
        source = next(
            p
            for p in http.get(playlists_path(sandbox), params={"type": "collection"}).json()["results"]
            if (p["recordings_counts"]["collection"]["count"] or 0) >= 2
        )
        recs = http.get(playlists_path(sandbox, f"{source['short_id']}/recordings/")).json()["results"]
        assert len(recs) == source["recordings_counts"]["collection"]["count"]
        assert set(recs[0]) == RECORDING_FIELDS
        for rec in recs[:2]:
            added = http.post(playlists_path(sandbox, f"{sid}/recordings/{rec['id']}/"))
            assert added.status_code == 200 and added.json() == {"success": True}
        again = http.post(playlists_path(sandbox, f"{sid}/recordings/{recs[0]['id']}"))
        assert again.json() == {"success": True}
        listed = http.get(playlists_path(sandbox, f"{sid}/recordings/")).json()["results"]
        assert [r["id"] for r in listed] == [recs[1]["id"], recs[0]["id"]]  # newest item first
        assert http.get(playlists_path(sandbox, sid)).json()["recordings_counts"]["collection"]["count"] == 2
        ghost = http.post(playlists_path(sandbox, f"{sid}/recordings/not-ingested-session"))
        assert ghost.status_code == 200
        assert len(http.get(playlists_path(sandbox, f"{sid}/recordings/")).json()["results"]) == 2
        removed = http.delete(playlists_path(sandbox, f"{sid}/recordings/{recs[0]['id']}/"))
        assert removed.status_code == 200 and removed.json() == {"success": True}
        missing = http.delete(playlists_path(sandbox, f"{sid}/recordings/{recs[0]['id']}/"))
        assert missing.status_code == 500
        assert error(missing) == {
            "type": "server_error",
            "code": "error",
            "detail": "A server error occurred.",
            "attr": None,
        }
        assert http.get(playlists_path(sandbox, sid)).json()["last_modified_at"] == coll["last_modified_at"]
        saved = _create(http, sandbox, type="filters", filters={"date_from": "-7d"})
        refused = http.post(playlists_path(sandbox, f"{saved['short_id']}/recordings/{recs[0]['id']}"))
        assert refused.status_code == 400
        assert error(refused)["detail"] == "Cannot add recordings to a playlist that is type 'filters'."


def test_environments_alias_and_trailing_slash(sandbox: Sandbox) -> None:
    with api(sandbox) as http:
        a = http.get(f"/api/environments/{sandbox.project_id}/session_recording_playlists").json()
        b = http.get(playlists_path(sandbox), params={"limit": 5}).json()
        assert a["count"] == b["count"]
        assert b["next"].startswith(f"{sandbox.url}{playlists_path(sandbox)}?")


def test_cloud_synthetic_and_refusals(cloud_sandbox: Sandbox) -> None:
    sb = cloud_sandbox
    with api(sb) as http:
        page = http.get(playlists_path(sb)).json()
        first_six = page["results"][:7]
        assert [p["id"] for p in first_six] == [-1, -2, -3, -4, -6, -7, -5]
        assert all(p["is_synthetic"] and p["created_by"] is None for p in first_six)
        custom = http.get(playlists_path(sb), params={"collection_type": "custom"}).json()
        assert custom["count"] == page["count"] - 7
        assert all(
            not p["is_synthetic"]
            for p in http.get(playlists_path(sb), params={"pinned": 1}).json()["results"]
        )
        watch = http.get(playlists_path(sb, "synthetic-watch-history/"))
        assert watch.status_code == 200 and watch.json()["is_synthetic"] is True
        viewed = http.get(playlists_path(sb, "synthetic-watch-history/recordings/")).json()["results"]
        assert viewed and all(r["viewed"] for r in viewed)
        patch = http.patch(playlists_path(sb, "synthetic-watch-history/"), json={"name": "x"})
        assert error(patch)["detail"] == "Cannot update synthetic playlists"
        target = custom["results"][0]
        refused = http.post(playlists_path(sb, f"{target['short_id']}/recordings/abc"))
        assert refused.status_code == 403
        assert error(refused)["detail"] == "This action does not support personal API key access"


def test_search_treats_wildcards_literally(empty_sandbox: Sandbox) -> None:
    sb = empty_sandbox
    with api(sb) as http:
        for name in ("a_b", "axb", "50% off"):
            _create(http, sb, type="collection", name=name)
        names = {
            q: [p["name"] for p in http.get(playlists_path(sb), params={"search": q}).json()["results"]]
            for q in ("a_b", "%", "X")
        }
    assert names == {"a_b": ["a_b"], "%": ["50% off"], "X": ["axb"]}

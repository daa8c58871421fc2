"""Contract tests: the assertions of PostHog's own playlist API tests, run against the sandbox.

Each test names the file and test it follows (facts restated, not code copied):
* T = `posthog/session_recordings/test/test_session_recording_playlist.py`
* S = `posthog/session_recordings/test/test_synthetic_playlists.py`
The cloud profile plays today's Cloud (7 static synthetic playlists, personal keys refused for item
changes); the spec profile allows item changes with a personal key, so the bulk tests run there.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from _sandbox_helpers import api, error
from analytics_nb import Client
from analytics_nb.sandbox import Sandbox, start

SYNTHETIC_IDS = {
    "synthetic-watch-history",
    "synthetic-commented",
    "synthetic-shared",
    "synthetic-exported",
    "synthetic-expiring",
    "synthetic-frustrated",
    "synthetic-summarised",
}
USER_FIELDS = {
    "id",
    "uuid",
    "distinct_id",
    "first_name",
    "last_name",
    "email",
    "is_email_verified",
    "hedgehog_config",
    "role_at_organization",
}


@pytest.fixture
def cloud() -> Iterator[Sandbox]:
    with start(seed="empty", profile="cloud") as sb:
        yield sb


@pytest.fixture
def spec() -> Iterator[Sandbox]:
    with start(seed="empty", profile="spec") as sb:
        yield sb


def _path(sb: Sandbox, suffix: str = "") -> str:
    return f"/api/projects/{sb.project_id}/session_recording_playlists/{suffix}"


def _create(http: httpx.Client, sb: Sandbox, **body: Any) -> dict[str, Any]:
    resp = http.post(_path(sb), json=body)
    assert resp.status_code == 201, resp.text
    created: dict[str, Any] = resp.json()
    return created


def _other_user(sb: Sandbox) -> tuple[int, str]:
    with sb.ctx.store.transaction() as conn:
        cur = conn.execute(
            "INSERT INTO users(uuid, distinct_id, email, organization_id, current_project_id) "
            "VALUES (?,?,?,?,?)",
            (str(uuid.uuid4()), str(uuid.uuid4()), "other@posthog.com", sb.organization_id, sb.project_id),
        )
        user_id = int(cur.lastrowid or 0)
    return user_id, sb.create_personal_key(user=user_id)


def test_list_playlists_when_there_are_some_playlists(cloud: Sandbox) -> None:
    """T::test_list_playlists_when_there_are_some_playlists (+ ..._when_there_are_no_playlists): count is
    2 + 7 synthetic, no next/previous, stored ones in the serializer's shape, empty collection counts."""
    with api(cloud) as http:
        only_synthetic = http.get(_path(cloud)).json()["results"]
        assert only_synthetic and all(p["is_synthetic"] for p in only_synthetic)
        one = _create(http, cloud, name="test", type="collection")
        two = _create(http, cloud, name="test2", type="collection")
        body = http.get(_path(cloud)).json()
    assert body["count"] == 9 and body["next"] is None and body["previous"] is None
    stored = [p for p in body["results"] if not p["is_synthetic"]]
    assert [p["id"] for p in stored] == [two["id"], one["id"]]
    for playlist in stored:
        assert set(playlist["created_by"]) == USER_FIELDS
        assert set(playlist["last_modified_by"]) == USER_FIELDS
        assert playlist["deleted"] is False and playlist["derived_name"] is None
        assert playlist["description"] == "" and playlist["filters"] == {} and playlist["pinned"] is False
        assert playlist["type"] == "collection"
        assert playlist["recordings_counts"] == {
            "collection": {"count": None, "watched_count": 0},
            "saved_filters": {
                "count": None,
                "has_more": None,
                "watched_count": None,
                "increased": None,
                "last_refreshed_at": None,
            },
        }


def test_rejects_invalid_playlist_type_and_filter_combinations(cloud: Sandbox) -> None:
    """T::test_rejects_invalid_playlist_type (without_type) and T::test_rejects_invalid_filter_combinations:
    exact error bodies. (The test's `type: "tomato"` case expects the same body; today's serializer declares
    `type` a ChoiceField, which answers `invalid_choice` first, as the sandbox does: not ported.)"""
    cases = [
        ({"name": "test"}, "Must provide a valid playlist type: either filters or collection"),
        ({"type": "filters"}, "You must provide a valid filters when creating a saved filter"),
        (
            {"type": "collection", "filters": {"events": [{"id": "test"}]}},
            "You cannot create a collection with filters",
        ),
    ]
    with api(cloud) as http:
        for body, detail in cases:
            resp = http.post(_path(cloud), json=body)
            assert resp.status_code == 400
            assert resp.json() == {
                "attr": None,
                "code": "invalid_input",
                "detail": detail,
                "type": "validation_error",
            }


def test_creates_playlist_with_type_and_gets_it_by_short_id(cloud: Sandbox) -> None:
    """T::test_creates_playlist_with_type, T::test_gets_individual_playlist_by_shortid."""
    with api(cloud) as http:
        for body, kind in (
            ({"name": "test filters", "type": "filters", "filters": {"foo": "bar"}}, "filters"),
            ({"name": "test collection", "type": "collection"}, "collection"),
        ):
            created = _create(http, cloud, **body)
            assert created["name"] == body["name"] and created["type"] == kind
            got = http.get(_path(cloud, created["short_id"] + "/")).json()
            assert got["short_id"] == created["short_id"] and got["type"] == kind


def test_update_rules(cloud: Sandbox) -> None:
    """T::test_updates_playlist, T::test_cannot_update_type,
    T::test_cannot_update_saved_filter_to_have_no_filters, T::test_does_not_count_empty_object_as_filters,
    T::test_cannot_update_collection_to_have_filters,
    T::test_rejects_updates_to_readonly_playlist_properties."""
    with api(cloud) as http:
        saved = _create(http, cloud, type="filters", filters={"events": [{"id": "original"}]})
        changed = http.patch(
            _path(cloud, saved["short_id"] + "/"),
            json={
                "name": "changed name",
                "description": "changed description",
                "filters": {"events": [{"id": "updated"}]},
                "pinned": True,
            },
        )
        assert changed.status_code == 200
        body = changed.json()
        assert body["short_id"] == saved["short_id"] and body["name"] == "changed name"
        assert body["description"] == "changed description"
        assert body["filters"] == {"events": [{"id": "updated"}]}
        assert body["last_modified_at"] >= saved["last_modified_at"]
        for empty in ({}, None):
            resp = http.patch(
                _path(cloud, saved["short_id"] + "/"), json={"type": "filters", "filters": empty}
            )
            assert resp.status_code == 400
        collection = _create(http, cloud, type="collection")
        path = _path(cloud, collection["short_id"] + "/")
        assert (
            http.patch(path, json={"type": "filters", "filters": {"events": [{"id": "t"}]}}).status_code
            == 400
        )
        assert http.patch(path, json={"filters": {"events": [{"id": "test"}]}}).status_code == 400
        readonly = http.patch(
            path, json={"short_id": "something else", "type": "filters", "name": "updated", "pinned": True}
        )
        assert readonly.status_code == 200
        assert (
            readonly.json()["short_id"] == collection["short_id"] and readonly.json()["type"] == "collection"
        )
        assert readonly.json()["name"] == "updated" and readonly.json()["pinned"] is True
        assert http.patch(path, json={"filters": {}, "deleted": True}).status_code == 200


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("search=my", [2]),
        ("search=playlist", [2, 0]),
        ("user=true", [1, 0]),
        ("pinned=true", [1]),
        ("created_by={other}", [2]),
    ],
)
def test_filters_based_on_params(cloud: Sandbox, query: str, expected: list[int]) -> None:
    """T::test_filters_based_on_params: each filter, and no synthetic playlist in any of these answers."""
    other_id, other_key = _other_user(cloud)
    with api(cloud) as mine, api(cloud, other_key) as theirs:
        made = [
            _create(mine, cloud, type="collection", name="playlist"),
            _create(mine, cloud, type="collection", pinned=True),
            _create(theirs, cloud, type="collection", name="my playlist"),
        ]
        results = mine.get(_path(cloud) + "?" + query.format(other=other_id)).json()["results"]
    assert not [p for p in results if p["is_synthetic"]]
    assert [p["short_id"] for p in results] == [made[i]["short_id"] for i in expected]


def test_filters_playlist_by_type_and_collection_type(cloud: Sandbox) -> None:
    """T::test_filters_saved_filters_type, T::test_filters_playlist_by_type (type=filters: the saved filter
    only; type=collection: 7 synthetic + the collections), T::test_filters_playlist_by_collection_type
    (none: 7 + 2; custom: 0 + 2; synthetic: 7 + 0)."""
    with api(cloud) as http:
        saved = _create(
            http, cloud, type="filters", name="Filters Explicit", filters={"events": [{"id": "t"}]}
        )
        one = _create(http, cloud, type="collection", name="Custom Collection One")
        two = _create(http, cloud, type="collection", name="Custom Collection Two")

        def split(params: dict[str, str]) -> tuple[int, set[int]]:
            results = http.get(_path(cloud), params=params).json()["results"]
            return sum(p["is_synthetic"] for p in results), {
                p["id"] for p in results if not p["is_synthetic"]
            }

        assert split({"type": "filters"}) == (0, {saved["id"]})
        assert split({"type": "collection"}) == (7, {one["id"], two["id"]})
        assert split({}) == (7, {saved["id"], one["id"], two["id"]})
        assert split({"collection_type": "custom"}) == (0, {saved["id"], one["id"], two["id"]})
        assert split({"collection_type": "synthetic"}) == (7, set())


def test_synthetic_playlists_listed_and_retrieved(cloud: Sandbox) -> None:
    """S::test_list_includes_synthetic_playlists (with EE, as Cloud: summarised included),
    S::test_retrieve_synthetic_playlist (no author, no timestamps, a collection)."""
    with api(cloud) as http:
        listed = http.get(_path(cloud)).json()["results"]
        watch = http.get(_path(cloud, "synthetic-watch-history/")).json()
    assert {p["short_id"] for p in listed if p["is_synthetic"]} == SYNTHETIC_IDS
    assert watch["name"] == "Watch history" and watch["type"] == "collection"
    assert watch["created_by"] is None and watch["last_modified_by"] is None
    assert watch["created_at"] is None and watch["last_modified_at"] is None


def test_cannot_pin_items_to_filters_type_playlist(cloud: Sandbox) -> None:
    """T::test_cannot_pin_items_to_filters_type_playlist: exact body (the spec profile, where a personal
    key may add items)."""
    with start(seed="empty", profile="spec") as sb, api(sb) as http:
        saved = _create(http, sb, name="test filters only", type="filters", filters={"wat": "am filter"})
        resp = http.post(_path(sb, f"{saved['short_id']}/recordings/test_session_id"))
        assert resp.status_code == 400
        assert resp.json() == {
            "type": "validation_error",
            "code": "invalid_input",
            "detail": "Cannot add recordings to a playlist that is type 'filters'.",
            "attr": None,
        }
        assert (
            http.get(_path(sb, f"{saved['short_id']}/")).json()["recordings_counts"]["collection"]["count"]
            is None
        )


def test_fetch_playlist_recordings(spec: Sandbox) -> None:
    """T::test_get_pinned_recordings_for_playlist (a missing session is simply absent) and
    T::test_fetch_playlist_recordings (each playlist lists its own items)."""
    three_days_ago = datetime.now(UTC) - timedelta(days=3)
    one, two = (spec.add_recording(start_time=three_days_ago) for _ in range(2))
    with api(spec) as http:
        first = _create(http, spec, type="collection", name="playlist1")
        second = _create(http, spec, type="collection", name="playlist2")
        for short_id, session in ((first, one), (first, two), (second, one), (first, None)):
            http.post(_path(spec, f"{short_id['short_id']}/recordings/{session or 'session-missing'}"))
        got = http.get(_path(spec, f"{first['short_id']}/recordings")).json()
        got_two = http.get(_path(spec, f"{second['short_id']}/recordings")).json()
    assert {r["id"] for r in got["results"]} == {one, two}
    assert [r["id"] for r in got_two["results"]] == [one]


@pytest.mark.parametrize("count", [1, 3, 15])
def test_bulk_add_remove_playlist_items(spec: Sandbox, count: int) -> None:
    """T::test_bulk_add_remove_playlist_items: counts answered, items there, then gone."""
    ids = [f"bulk_session_{i}" for i in range(count)]
    with api(spec) as http:
        playlist = _create(http, spec, type="collection", name="bulk playlist")
        base = _path(spec, f"{playlist['short_id']}/recordings/")
        added = http.post(base + "bulk_add", json={"session_recording_ids": ids}).json()
        assert added == {"success": True, "added_count": count, "total_requested": count}
        assert (
            http.get(_path(spec, playlist["short_id"] + "/")).json()["recordings_counts"]["collection"][
                "count"
            ]
            == count
        )
        deleted = http.post(base + "bulk_delete", json={"session_recording_ids": ids}).json()
        assert deleted == {"success": True, "deleted_count": count, "total_requested": count}
        assert (
            http.get(_path(spec, playlist["short_id"] + "/")).json()["recordings_counts"]["collection"][
                "count"
            ]
            is None
        )


def test_bulk_validation_filters_type_and_partial_success(spec: Sandbox) -> None:
    """T::test_bulk_add_validation_errors, T::test_cannot_bulk_add_to_filters_playlist,
    T::test_bulk_add_partial_success (only new items are counted)."""
    with api(spec) as http:
        playlist = _create(http, spec, type="collection", name="bulk validation playlist")
        base = _path(spec, f"{playlist['short_id']}/recordings/")
        for ids, detail in (
            ([], "must be provided as a non-empty array"),
            ("not_an_array", None),
            ([f"session_{i}" for i in range(21)], "Cannot process more than 20 recordings at once"),
        ):
            resp = http.post(base + "bulk_add", json={"session_recording_ids": ids})
            assert resp.status_code == 400
            if detail:
                assert detail in error(resp)["detail"]
        saved = _create(http, spec, type="filters", name="filters only", filters={"events": [{"id": "t"}]})
        refused = http.post(
            _path(spec, f"{saved['short_id']}/recordings/bulk_add"), json={"session_recording_ids": ["s1"]}
        )
        assert refused.status_code == 400 and "type 'filters'" in error(refused)["detail"]
        http.post(base + "existing_session")
        partial = http.post(
            base + "bulk_add", json={"session_recording_ids": ["existing_session", "new_1", "new_2"]}
        ).json()
    assert partial == {"success": True, "added_count": 2, "total_requested": 3}


def test_personal_api_key_scopes(cloud: Sandbox) -> None:
    """T TestSessionRecordingPlaylistPersonalAPIKey::test_personal_api_key_can_access_read_endpoints and
    ::test_personal_api_key_denied_without_correct_scope_or_team; the item actions are in neither scope
    list (`scope_object_read_actions = ["list", "retrieve", "recordings"]`), so even `*` is refused."""
    with api(cloud) as http:
        playlist = _create(http, cloud, type="collection", name="test playlist")
    read = cloud.create_personal_key(["session_recording_playlist:read"])
    wrong = cloud.create_personal_key(["feature_flag:read"])  # the test's "some_other_scope:read"
    other_project = cloud.add_project("other team")
    wrong_team = cloud.create_personal_key(
        ["session_recording_playlist:read"], scoped_teams=[other_project.id]
    )
    with api(cloud, read) as http:
        for suffix in ("", f"{playlist['short_id']}/", f"{playlist['short_id']}/recordings/"):
            assert http.get(_path(cloud, suffix)).status_code == 200
    for key in (wrong, wrong_team):
        with api(cloud, key) as http:
            assert http.get(_path(cloud)).status_code == 403
    with api(cloud) as http:
        for suffix in ("recordings/abc", "recordings/bulk_add", "recordings/bulk_delete"):
            resp = http.post(
                _path(cloud, f"{playlist['short_id']}/{suffix}"), json={"session_recording_ids": ["a"]}
            )
            assert resp.status_code == 403


def test_newest_list_ignores_short_id_and_the_client_filters_it(cloud: Sandbox) -> None:
    """The newest `list()` never runs the filter backend (posthog-notes §10), so `short_id` narrows
    nothing there; `client.playlists.list(short_id=...)` filters on its side."""
    with api(cloud) as http:
        one = _create(http, cloud, type="collection", name="one")
        _create(http, cloud, type="collection", name="two")
        served = http.get(_path(cloud), params={"short_id": one["short_id"]}).json()
    assert served["count"] == 9
    with Client(cloud.url, personal_api_key=cloud.personal_api_key, progress=False) as client:
        assert [p.short_id for p in client.playlists.list(short_id=one["short_id"])] == [one["short_id"]]
        assert list(client.playlists.frame(short_id=one["short_id"])["short_id"]) == [one["short_id"]]


def test_new_url_playlists_behind_the_switch(cloud: Sandbox) -> None:
    """synthetic_playlists.py, NewUrlsSyntheticPlaylistSource: one collection per URL pattern first seen in
    the last 14 days (ids and numbers normalised), short id `synthetic-new-url-<sha256[:12]>`, gated by a
    flag (the sandbox's `new_url_playlists` switch)."""
    now = datetime.now(UTC)
    cloud.add_recording(start_time=now - timedelta(days=40), start_url="https://shop.example.com/old")
    cloud.add_recording(start_time=now - timedelta(days=2), start_url="https://shop.example.com/old")
    new = [
        cloud.add_recording(
            start_time=now - timedelta(days=1), start_url=f"https://shop.example.com/items/{n}?x=1"
        )
        for n in (17, 42)
    ]
    with api(cloud) as http:
        before = [p["short_id"] for p in http.get(_path(cloud)).json()["results"]]
        cloud.set_switch("new_url_playlists")
        listed = [
            p for p in http.get(_path(cloud)).json()["results"] if p["short_id"].startswith("synthetic-new")
        ]
        assert len(listed) == 1 and listed[0]["name"] == "New URL: https://shop.example.com/items/{id}"
        assert listed[0]["id"] == -1000 and listed[0]["recordings_counts"]["collection"]["count"] == 2
        recs = http.get(_path(cloud, listed[0]["short_id"] + "/recordings/")).json()["results"]
        cloud.set_switch("new_url_playlists", False)
    assert not [s for s in before if s.startswith("synthetic-new")]
    assert {r["id"] for r in recs} == set(new)


def test_created_by_email_and_recordings_count(cloud: Sandbox) -> None:
    """Issue 29 #7: `created_by=` takes an email (resolved among the users the client can see; the error says
    where to find the id) and the playlists frame has `recordings_count` from the list answer alone."""
    other_id, other_key = _other_user(cloud)
    with api(cloud, other_key) as theirs:
        theirs_playlist = _create(theirs, cloud, type="collection", name="theirs")
    with Client(cloud.url, personal_api_key=cloud.personal_api_key, progress=False) as client:
        mine = client.playlists.create("collection", "mine")
        cloud.add_recording(playlist=mine.short_id)
        assert [p.short_id for p in client.playlists.list(created_by="OTHER@posthog.com")] == [
            theirs_playlist["short_id"]
        ]
        assert [p.short_id for p in client.playlists.list(created_by="owner@sandbox.example")] == [
            mine.short_id
        ]
        with pytest.raises(ValueError, match="created_by_id column"):
            client.playlists.list(created_by="nobody@example.com")
        with pytest.raises(ValueError, match="created_by_id column"):
            client.playlists.list(created_by="Ada")  # neither an id nor an email
        cloud.clear_requests()
        frame = client.playlists.frame()
        assert len(cloud.requests()) == 1  # one page, no call per playlist
    counts = dict(zip(frame["short_id"], frame["recordings_count"], strict=True))
    assert counts[mine.short_id] == 1 and counts[theirs_playlist["short_id"]] == 0
    assert str(frame["recordings_count"].dtype) == "Int64"
    assert list(frame.columns).index("recordings_count") == list(frame.columns).index("filters") - 1
    del other_id


def test_recordings_limit_at_sqlite_maximum_is_answered_not_500(cloud: Sandbox) -> None:
    """Found by the bounded schemathesis run: `limit=2**63-1` (the largest value accepted) made the
    one-more-row probe overflow SQLite's integer (500). It is answered, paged as any large limit."""
    with api(cloud) as http:
        biggest = str(2**63 - 1)
        r = http.get(
            "/api/projects/@current/session_recordings/", params={"limit": biggest, "offset": biggest}
        )
        assert r.status_code == 200 and r.json()["results"] == [] and r.json()["has_next"] is False
        r = http.get("/api/projects/@current/session_recordings/", params={"limit": biggest})
        assert r.status_code == 200 and r.json()["has_next"] is False


def _saved_filter_with_recordings(sb: Sandbox, http: httpx.Client) -> tuple[str, list[str], list[str]]:
    """A saved filter and 60 recordings of the last day (60-119 s long) plus 5 of 5-6 days ago."""
    now = datetime.now(UTC)
    recent = [
        sb.add_recording(start_time=now - timedelta(minutes=10 + i), duration=60 + i) for i in range(60)
    ]
    older = [sb.add_recording(start_time=now - timedelta(days=5, hours=i)) for i in range(5)]
    saved = _create(http, sb, type="filters", name="saved", filters={"date_from": "-7d"})
    return saved["short_id"], recent, older


def test_saved_filter_recordings_take_the_query_defaults_not_the_stored_filters(cloud: Sandbox) -> None:
    """session_recording_playlist_api.py `recordings`: a saved filter's query is
    `RecordingsQuery.model_validate(query_as_params_to_dict(request.GET))` with `session_ids` = its pinned
    items (none: every recording); its stored `filters` are not read. Defaults from
    frontend/src/queries/schema/schema-general.ts `RecordingsQuery` (`date_from` "-3d", `order` "start_time",
    descending) and `SessionRecordingListFromQuery.SESSION_RECORDINGS_DEFAULT_LIMIT` (50, `has_next`);
    T::test_get_pinned_recordings_for_playlist's "a missing session is simply absent" holds for it too."""
    with api(cloud) as http:
        short_id, recent, older = _saved_filter_with_recordings(cloud, http)
        path = _path(cloud, f"{short_id}/recordings/")
        default = http.get(path).json()
        assert [r["id"] for r in default["results"]] == recent[:50]  # last 3 days, newest first, 50
        assert default["has_next"] is True
        second = http.get(path, params={"offset": 50}).json()
        assert [r["id"] for r in second["results"]] == recent[50:] and second["has_next"] is False
        week = http.get(path, params={"date_from": "-7d", "limit": 100}).json()
        assert {r["id"] for r in week["results"]} == set(recent + older)
        oldest_first = http.get(path, params={"date_from": "-7d", "order_direction": "ASC", "limit": 3})
        assert [r["id"] for r in oldest_first.json()["results"]] == older[::-1][:3]
        longest = http.get(path, params={"order": "duration", "limit": 1}).json()["results"]
        assert [r["id"] for r in longest] == [recent[-1]]
        over = '[{"type": "recording", "key": "duration", "operator": "gt", "value": 109}]'
        narrowed = http.get(path, params={"having_predicates": over}).json()["results"]
        assert {r["id"] for r in narrowed} == set(recent[50:])
        bad = http.get(path, params={"order": "nonsense"})
        assert bad.status_code == 400 and error(bad)["attr"] == "order"
        with_tests = http.get(path, params={"filter_test_accounts": "true"}).json()
        assert len(with_tests["results"]) == 50  # no test-account filters on the sandbox's team


def test_session_recordings_with_empty_session_ids_lists_every_recording(cloud: Sandbox) -> None:
    """session_recording_api.py `list_recordings_from_query`: an empty `session_ids` is falsy, so the query
    runs over every recording (with the defaults above), not over none."""
    cloud.add_recording(start_time=datetime.now(UTC) - timedelta(hours=1))
    with api(cloud) as http:
        got = http.get("/api/projects/@current/session_recordings/", params={"session_ids": "[]"}).json()
    assert len(got["results"]) == 1


def test_new_url_playlists_read_every_url_a_session_visited(cloud: Sandbox) -> None:
    """synthetic_playlists.py, `NewUrlsSyntheticPlaylistSource._get_new_urls_with_sessions`: the URLs are
    `session_replay_events.all_urls` (every URL a session visited, not only its first), each dated by the
    session's start; a pattern is new when its oldest sighting in the last 90 days falls within the last 14
    (a URL visited mid-session 40 days ago is not new); a session counts once per pattern; top 20 by
    sessions, then by pattern; the description names both windows."""
    now = datetime.now(UTC)
    shop = "https://shop.example.com"
    cloud.add_recording(start_time=now - timedelta(days=40), urls=[f"{shop}/", f"{shop}/cart"])
    cloud.add_recording(start_time=now - timedelta(days=120), urls=[f"{shop}/", f"{shop}/ancient"])
    both = cloud.add_recording(
        start_time=now - timedelta(days=1),
        urls=[f"{shop}/", f"{shop}/cart", f"{shop}/gift/7", f"{shop}/gift/8", f"{shop}/ancient"],
    )
    gift_only = cloud.add_recording(start_time=now - timedelta(days=3), urls=[f"{shop}/gift/9?ref=x"])
    cloud.add_recording(start_time=now - timedelta(days=2), urls=[""])
    cloud.set_switch("new_url_playlists")
    with api(cloud) as http:
        listed = [
            p for p in http.get(_path(cloud)).json()["results"] if p["short_id"].startswith("synthetic-new")
        ]
        by_name = {p["name"]: p for p in listed}
        assert set(by_name) == {f"New URL: {shop}/gift/{{id}}", f"New URL: {shop}/ancient"}
        gift = by_name[f"New URL: {shop}/gift/{{id}}"]
        assert gift["recordings_counts"]["collection"]["count"] == 2
        assert listed[0] is gift and gift["id"] == -1000  # most sessions first
        assert gift["description"] == (
            "Recordings from the last 14 days on a page not previously seen within the last 90 days"
        )
        recs = http.get(_path(cloud, gift["short_id"] + "/recordings/")).json()["results"]
    assert {r["id"] for r in recs} == {both, gift_only}

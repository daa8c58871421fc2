"""A collection's recordings as today's service answers them (capped, limit/offset ignored, one-year window,
long-term-stored ones beyond it), the client returning every one it can and saying what it cannot; bulk
add/remove with a per-id report and the personal-key refusal."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import pytest

from _clients import client_for
from _sandbox_helpers import api, playlists_path
from analytics_nb.errors import (
    IncompleteRecordingsError,
    IncompleteRecordingsWarning,
    PermissionDeniedError,
    ValidationError,
)
from analytics_nb.sandbox import start


@pytest.fixture(scope="module")
def big(sandbox: Any) -> dict[str, Any]:
    """A collection of 120 ingested recordings (added straight into the sandbox's store)."""
    with client_for(sandbox) as c:
        created = c.playlists.create("collection", "Big collection")
    start_at = datetime.now(UTC) - timedelta(days=2)
    ids = [
        sandbox.add_recording(start_time=start_at - timedelta(minutes=i), playlist=created.short_id)
        for i in range(120)
    ]
    return {"short_id": created.short_id, "ids": ids}


def test_service_caps_a_collection_answer_and_ignores_offset(sandbox: Any, big: dict[str, Any]) -> None:
    """posthog/session_recordings/session_recording_playlist_api.py, `recordings`: a collection is one
    `RecordingsQuery(session_ids=..., date_from="-1y")` with the default limit (50); `offset` is not used."""
    with api(sandbox) as http:
        first = http.get(playlists_path(sandbox, f"{big['short_id']}/recordings/")).json()
        again = http.get(
            playlists_path(sandbox, f"{big['short_id']}/recordings/"), params={"offset": 50, "limit": 100}
        ).json()
    assert len(first["results"]) == 50 and first["has_next"] is True
    assert [r["id"] for r in again["results"]] == [r["id"] for r in first["results"]]


def test_recordings_never_silently_fewer_without_known_ids(sandbox: Any, big: dict[str, Any]) -> None:
    """Regression: the old loop re-requested with `offset`, got the same 50 and returned them silently."""
    with client_for(sandbox) as fresh, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records = fresh.playlists.recordings(big["short_id"])
    assert len(records) == 50
    found = [w.message for w in caught if isinstance(w.message, IncompleteRecordingsWarning)]
    assert len(found) == 1
    assert found[0].missing == 70 and found[0].expected == 120
    assert (
        "70 missing" in str(found[0]) and "capped at 50" in str(found[0]) and "session_ids" in str(found[0])
    )
    with client_for(sandbox) as fresh, pytest.raises(IncompleteRecordingsError) as raised:
        fresh.playlists.recordings_frame(big["short_id"], incomplete="raise")
    assert raised.value.missing == 70 and len(raised.value.recordings) == 50


def test_recordings_with_known_ids_returns_all(sandbox: Any, big: dict[str, Any]) -> None:
    with client_for(sandbox) as fresh, warnings.catch_warnings():
        warnings.simplefilter("error")
        frame = fresh.playlists.recordings_frame(
            big["short_id"], session_ids=pd.DataFrame({"session_id": big["ids"]})
        )
    assert sorted(frame["id"]) == sorted(big["ids"])


def test_ids_added_by_this_client_are_fetched_past_the_cap(sandbox: Any) -> None:
    ids = [sandbox.add_recording(start_time=datetime.now(UTC) - timedelta(hours=i + 1)) for i in range(65)]
    with client_for(sandbox) as c, warnings.catch_warnings():
        warnings.simplefilter("error")
        created = c.playlists.create("collection", "Added in bulk")
        report = c.playlists.add_recordings(created.short_id, ids, calls_per_minute=6000)
        assert list(report["status"]) == ["added"] * 65
        assert list(report["batch"]) == [i // 20 for i in range(65)]
        records = c.playlists.recordings(created.short_id)
    assert {r.id for r in records} == set(ids)


def test_window_and_long_term_storage(sandbox: Any) -> None:
    """`date_from="-1y"` drops older ClickHouse rows; `list_recordings_from_query` loads long-term-stored
    ones by id first, whatever their age."""
    with client_for(sandbox) as c:
        created = c.playlists.create("collection", "Old ones")
    old = datetime.now(UTC) - timedelta(days=400)
    kept = sandbox.add_recording(start_time=old, long_term=True, playlist=created.short_id)
    sandbox.add_recording(start_time=old, playlist=created.short_id)
    recent = sandbox.add_recording(playlist=created.short_id)
    with (
        client_for(sandbox) as c,
        pytest.warns(IncompleteRecordingsWarning, match="1 missing.*more than a year"),
    ):
        records = c.playlists.recordings(created.short_id)
    assert {r.id for r in records} == {kept, recent}


def test_an_item_without_a_recording_is_reported_missing(sandbox: Any) -> None:
    """test_session_recording_playlist.py, test_get_pinned_recordings_for_playlist: an item whose recording
    was never ingested is simply absent from the answer; the client says so."""
    with client_for(sandbox) as c:
        created = c.playlists.create("collection", "One missing")
        real = sandbox.add_recording(playlist=created.short_id)
        c.playlists.add_recording(created.short_id, "session-missing")
        with pytest.warns(IncompleteRecordingsWarning, match="never ingested"):
            records = c.playlists.recordings(created.short_id)
        assert [r.id for r in records] == [real]
        assert c.playlists.recordings(created.short_id, incomplete="ignore") == records


def test_bulk_report_statuses_and_validation(sandbox: Any) -> None:
    """test_session_recording_playlist.py, test_bulk_add_partial_success / test_bulk_add_remove_playlist_items
    (counts) and test_bulk_add_validation_errors (at most 20; non-empty array)."""
    with client_for(sandbox) as c:
        created = c.playlists.create("collection", "Bulk")
        c.playlists.add_recording(created.short_id, "existing_session")
        report = c.playlists.add_recordings(created.short_id, ["existing_session", "new_1", "new_2", "new_1"])
        assert list(report["status"]) == [
            "added or already in playlist",
            "added or already in playlist",
            "added or already in playlist",
            "duplicate",
        ]
        assert "2 of the 3" in report["detail"][0]
        again = c.playlists.add_recordings(created.short_id, ["new_1", "new_2"])
        assert list(again["status"]) == ["already in playlist"] * 2
        removed = c.playlists.remove_recordings(created.short_id, pd.Series(["new_1", "new_2", "never"]))
        assert list(removed["status"]) == ["removed or not in playlist"] * 3
        gone = c.playlists.remove_recordings(created.short_id, ["new_1"])
        assert list(gone["status"]) == ["not in playlist"]
        with pytest.raises(ValueError, match="session id #1"):
            c.playlists.add_recordings(created.short_id, ["a", None])
        with pytest.raises(ValueError, match="column="):
            c.playlists.add_recordings(created.short_id, pd.DataFrame({"x": ["a"]}))
        saved = c.playlists.create("filters", "Saved", filters={"date_from": "-1d"})
        with pytest.raises(ValidationError, match="type 'filters'"):
            c.playlists.add_recordings(saved.short_id, ["a"])
    with api(sandbox) as http:
        path = playlists_path(sandbox, f"{created.short_id}/recordings/bulk_add")
        too_many = http.post(path, json={"session_recording_ids": [f"s{i}" for i in range(21)]})
        empty = http.post(path, json={"session_recording_ids": []})
        not_list = http.post(path, json={"session_recording_ids": "not_an_array"})
    assert too_many.status_code == 400 and "more than 20" in too_many.json()["detail"]
    assert empty.status_code == 400 and "non-empty array" in empty.json()["detail"]
    assert not_list.status_code == 400


@pytest.fixture(scope="module")
def cloud() -> Iterator[Any]:
    with start(seed="demo", profile="cloud") as sb:
        yield sb


def test_personal_key_refusal_is_explained_and_changes_nothing(cloud: Any) -> None:
    with client_for(cloud) as c:
        target = next(p for p in c.playlists.list(type="collection") if not p.is_synthetic)
        with pytest.raises(PermissionDeniedError, match="scope lists") as raised:
            c.playlists.add_recordings(target.short_id, [f"s{i}" for i in range(30)], calls_per_minute=6000)
        assert "Nothing was changed" in str(raised.value)
        with pytest.raises(PermissionDeniedError, match="scope lists"):
            c.playlists.remove_recordings(target.short_id, ["s1"])
    log = cloud.requests()
    assert (log["path"].str.contains("bulk_add") & (log["status"] == 403)).sum() == 1  # stopped at the first


def test_saved_filter_recordings_send_the_stored_filters_and_page_all() -> None:
    """A saved filter's recordings endpoint reads only its request (session_recording_playlist_api.py,
    `recordings`; defaults: the last 3 days, 50 a page). The client sends the stored `date_from` and
    `duration` (as `having_predicates`, as the app does) and pages with `offset`: 70 recordings of the
    last week longer than 60 s, not the 50 of the last 3 days the defaults give (the old client)."""
    now = datetime.now(UTC)
    with start(seed="empty", profile="cloud") as sb, client_for(sb) as c:
        long_ones = [
            sb.add_recording(start_time=now - timedelta(days=i % 7, minutes=i), duration=90)
            for i in range(70)
        ]
        for i in range(5):
            sb.add_recording(start_time=now - timedelta(hours=i), duration=30)
        sb.add_recording(start_time=now - timedelta(days=9), duration=90)
        duration = [{"type": "recording", "key": "duration", "operator": "gt", "value": 60}]
        saved = c.playlists.create("filters", "Week", filters={"date_from": "-7d", "duration": duration})
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = c.playlists.recordings(saved.short_id)
            frame = c.playlists.recordings_frame(saved.short_id)
        assert {r.id for r in got} == set(long_ones) and len(got) == 70
        assert len(frame) == 70
        # The caller's own parameters win over the stored ones.
        assert len(c.playlists.recordings(saved.short_id, date_from="-1d")) < 70


def test_saved_filter_parts_the_client_cannot_send_are_named() -> None:
    """A non-empty `filter_group` (the app converts it; this client does not) is named in a warning: the
    answer is then not narrowed by it, never silently. An empty group (the app's "no filter") is not."""
    empty_group = {"type": "AND", "values": [{"type": "AND", "values": []}]}
    group = {
        "type": "AND",
        "values": [{"type": "AND", "values": [{"type": "event", "key": "$browser", "value": ["Chrome"]}]}],
    }
    with start(seed="empty", profile="cloud") as sb, client_for(sb) as c:
        sb.add_recording()
        quiet = c.playlists.create(
            "filters", "Quiet", filters={"date_from": "-7d", "filter_group": empty_group}
        )
        loud = c.playlists.create("filters", "Loud", filters={"date_from": "-7d", "filter_group": group})
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert len(c.playlists.recordings(quiet.short_id)) == 1
        with pytest.warns(UserWarning, match="filter_group could not be sent"):
            assert len(c.playlists.recordings(loud.short_id)) == 1
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            c.playlists.recordings(loud.short_id, incomplete="ignore")


@pytest.mark.parametrize("incomplete", ["warn", "raise"])
def test_a_service_that_says_more_but_gives_nothing_new_is_reported(incomplete: str) -> None:
    """The end of a saved filter's pages is `has_next` off, never a page with nothing new: a service that
    answers the first page again at every offset (the sandbox's ``offset_ignored`` fault) says more match,
    so the client stops and says at least one recording is missing, instead of returning 50 of 70 as all."""
    now = datetime.now(UTC)
    with start(seed="empty", profile="cloud") as sb, client_for(sb) as c:
        for i in range(70):
            sb.add_recording(start_time=now - timedelta(hours=i), duration=90)
        saved = c.playlists.create("filters", "Day", filters={"date_from": "-7d"})
        sb.faults.add(
            path=f"*/session_recording_playlists/{saved.short_id}/recordings*", kind="offset_ignored"
        )
        if incomplete == "raise":
            with pytest.raises(IncompleteRecordingsError, match="gave no new one at offset 50") as caught:
                c.playlists.recordings(saved.short_id, incomplete="raise")
            assert caught.value.received == 50 and len(caught.value.recordings) == 50
            return
        with pytest.warns(IncompleteRecordingsWarning, match="50 recordings came back .* at least one"):
            got = c.playlists.recordings(saved.short_id)
        assert len(got) == 50
        offsets = sb.requests()["query"].astype(str)
        assert offsets.str.contains("offset=50").any()

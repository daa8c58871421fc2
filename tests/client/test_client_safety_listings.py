"""Issue 12 findings 8 and 11: a listing returns every row exactly once while rows change (or says it could
not, with counts), and a ``next`` link that repeats or does not advance stops with a clear error.

The endless-paging answers come from a tiny HTTP server on 127.0.0.1 (tests/_local_http.py): the sandbox
pages correctly and cannot be told to repeat a link.
"""

from __future__ import annotations

import json
import warnings
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from _clients import client_for
from _local_http import Answer, local_server
from _sandbox_helpers import playlist_records
from analytics_nb import Client
from analytics_nb.errors import IncompleteListingWarning, PaginationError, ResponseFormatError

KEY = "phx_listingsSECRET1234567890ab"
LIST = "/api/projects/1/session_recording_playlists/"
ORG = "0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee"
ACTIVITY = f"/api/organizations/{ORG}/pipeline_transformations/activity/"


def _rows(*ids: int) -> list[dict[str, Any]]:
    return [{"id": i, "short_id": f"s{i:07d}", "name": f"p{i}", "type": "collection"} for i in ids]


def _answer(body: dict[str, Any]) -> Answer:
    return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()


def test_renamed_rows_are_not_lost_while_listing(empty_sandbox: Any) -> None:
    with Client(
        empty_sandbox.url, personal_api_key=empty_sandbox.personal_api_key, progress=False, max_concurrency=1
    ) as client:
        for i in range(40):
            client.playlists.create("collection", f"playlist {i:02d}")
        everything = {p.id for p in client.playlists.list()}
        iterator = client.playlists.iter(page_size=10)  # default order: -last_modified_at
        got = [next(iterator).id]  # page 1 is read; the other pages are fetched after this point
        oldest = client.playlists.list(order="last_modified_at", max_items=3)
        for playlist in oldest:  # renaming moves them from the last page to the front (already read)
            client.playlists.update(playlist.short_id, name=f"{playlist.name} (renamed)")
        with warnings.catch_warnings():
            warnings.simplefilter("error", IncompleteListingWarning)
            got += [p.id for p in iterator]
    assert len(got) == len(set(got)) == 40  # exactly once
    assert set(got) == everything
    assert {p.id for p in oldest} <= set(got)  # the moved rows were found by the check walk


def test_listing_that_keeps_changing_warns_with_counts() -> None:
    state = {"calls": 0}

    def shifting(handler: BaseHTTPRequestHandler) -> Answer:
        # every walk loses a different row: the count says 4 but only 3 distinct rows ever come per walk
        state["calls"] += 1
        walk = state["calls"]
        return _answer({"count": 4, "next": None, "results": _rows(*[i + 10 * walk for i in range(3)])})

    with (
        local_server({LIST: shifting}) as server,
        client_for(server.url, KEY, project_id=1, organization_id=ORG, max_retries=0) as client,
        pytest.warns(IncompleteListingWarning) as record,
    ):
        rows = playlist_records(client)
    warning = record[0].message
    assert isinstance(warning, IncompleteListingWarning)
    assert warning.counts == [4] and warning.read == len(rows) == 9
    assert "may be incomplete" in str(warning) and "4" in str(warning)


def test_repeating_next_without_count_stops() -> None:
    def same(handler: BaseHTTPRequestHandler) -> Answer:
        return _answer(
            {"next": f"http://{handler.headers['Host']}{LIST}?limit=2&offset=2", "results": _rows(1, 2)}
        )

    with (
        local_server({LIST: same}) as server,
        client_for(server.url, KEY, project_id=1, organization_id=ORG, max_retries=0) as client,
        pytest.raises(PaginationError, match="same next-page link twice"),
    ):
        client.playlists.list(page_size=2)
    assert len(server.requests) <= 4


def test_non_advancing_next_stops() -> None:
    def backwards(handler: BaseHTTPRequestHandler) -> Answer:
        offset = int(parse_qs(urlsplit(handler.path).query).get("offset", ["0"])[0])
        nxt = f"http://{handler.headers['Host']}{LIST}?limit=2&offset={max(offset - 1, 1)}&n={offset}"
        return _answer({"next": nxt, "results": _rows(offset, offset + 1)})

    with (
        local_server({LIST: backwards}) as server,
        client_for(server.url, KEY, project_id=1, organization_id=ORG, max_retries=0) as client,
        pytest.raises(PaginationError, match="does not advance"),
    ):
        client.playlists.list(page_size=2)


def test_next_after_count_that_repeats_stops() -> None:
    def past_count(handler: BaseHTTPRequestHandler) -> Answer:
        host = handler.headers["Host"]
        return _answer({"count": 3, "next": f"http://{host}{LIST}?limit=2&offset=2", "results": _rows(1, 2)})

    with (
        local_server({LIST: past_count}) as server,
        client_for(server.url, KEY, project_id=1, organization_id=ORG, max_retries=0) as client,
        pytest.raises(PaginationError),
    ):
        client.playlists.list(page_size=2)
    assert len(server.requests) < 10


def test_activity_records_on_repeating_pages_stop() -> None:
    entry = {"id": "a1", "activity": "updated", "scope": "Plugin", "item_id": "1", "created_at": None}

    def repeating(handler: BaseHTTPRequestHandler) -> Answer:
        return _answer({"results": [entry], "next": "more", "total_count": None})

    with (
        local_server({ACTIVITY: repeating}) as server,
        client_for(server.url, KEY, project_id=1, organization_id=ORG, max_retries=0) as client,
        pytest.raises(PaginationError, match="repeated records"),
    ):
        client.transformations.activity_records(page_size=1)
    assert len(server.requests) <= 5


# -- issue 27 #7: every malformed listing page is a ResponseFormatError ------------------------------------
def _raw(body: bytes) -> Answer:
    return 200, {"Content-Type": "application/json"}, body


MALFORMED_PAGES = {
    "invalid UTF-8 in a name": b'{"count":1,"next":null,"results":[{"id":1,"short_id":"a",'
    b'"name":"x\xff\xfey","type":"collection"}]}',
    "invalid UTF-8 in a nested user": b'{"count":1,"next":null,"results":[{"id":1,"short_id":"a","name":"x",'
    b'"type":"collection","created_by":{"id":1,"email":"a\xffb"}}]}',
    "records that are not objects": b'{"count":3,"next":null,"results":[1,"x",null]}',
    "one record that is not an object": b'{"count":2,"next":null,"results":[{"id":1,"short_id":"a"},[2]]}',
    "results that are not a list": b'{"count":3,"next":null,"results":{"a":1}}',
    "a next link that is not text": b'{"count":9,"next":7,"results":[{"id":1,"short_id":"a"}]}',
}


@pytest.mark.parametrize("what", list(MALFORMED_PAGES))
def test_every_malformed_page_is_a_response_format_error(what: str) -> None:
    """Before: ``frame()`` raised a bare ``UnicodeDecodeError`` (msgspec path) or ``TypeError``, and the raw
    records came back with non-objects in them, silently."""
    with (
        local_server({LIST: _raw(MALFORMED_PAGES[what])}) as server,
        client_for(server.url, KEY, progress=False, project_id=1, organization_id=ORG, max_retries=0) as c,
    ):
        for form in (c.playlists.frame, c.playlists.list, lambda: list(c.playlists.iter())):
            with pytest.raises(ResponseFormatError) as info:
                form()
            assert "host=" in str(info.value) or "next link" in str(info.value)
        with pytest.raises(ResponseFormatError):
            playlist_records(c)


# -- issue 27 #8: a server that keeps handing new ids with `next` set is not followed forever ---------------
def _endless(state: dict[str, int], *, count: int | None) -> Any:
    def answer(handler: BaseHTTPRequestHandler) -> Answer:
        state["calls"] += 1
        offset = int(parse_qs(urlsplit(handler.path).query).get("offset", ["0"])[0])
        # new ids on every page, a next link that advances; the server gives up only after 400 pages (the
        # old client followed all of them, without a word)
        nxt = (
            f"http://{handler.headers['Host']}{LIST}?limit=2&offset={offset + 2}"
            if state["calls"] < 400
            else None
        )
        body: dict[str, Any] = {"next": nxt, "results": _rows(offset + 1, offset + 2)}
        if count is not None:
            body["count"] = count
        return _answer(body)

    return answer


def test_endless_next_past_the_count_stops_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("analytics_nb.client._pagination.MARGIN_RECORDS", 20, raising=False)
    state = {"calls": 0}
    with (
        local_server({LIST: _endless(state, count=6)}) as server,
        client_for(server.url, KEY, project_id=1, organization_id=ORG, max_retries=0) as client,
        pytest.warns(IncompleteListingWarning) as record,
    ):
        playlists = client.playlists.list(page_size=2)
    message = str(record[0].message)
    assert "counted 6" in message and "max_items=" in message
    assert 6 + 20 <= len(playlists) <= 6 + 20 + 2
    assert state["calls"] <= 20
    assert len({p.id for p in playlists}) == len(playlists)


def test_endless_next_without_a_count_stops_at_the_page_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("analytics_nb.client._pagination.MAX_FOLLOWED_PAGES", 30, raising=False)
    state = {"calls": 0}
    with (
        local_server({LIST: _endless(state, count=None)}) as server,
        client_for(server.url, KEY, project_id=1, organization_id=ORG, max_retries=0) as client,
        pytest.warns(IncompleteListingWarning, match="gives no count") as record,
    ):
        frame = client.playlists.frame(page_size=2)
    assert "31 pages" in str(record[0].message) or "30 pages" in str(record[0].message)
    assert state["calls"] <= 32 and len(frame) == 2 * state["calls"]


def test_a_bounded_listing_of_an_endless_server_needs_no_cap() -> None:
    state = {"calls": 0}
    with (
        local_server({LIST: _endless(state, count=None)}) as server,
        client_for(server.url, KEY, project_id=1, organization_id=ORG, max_retries=0) as client,
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("error", IncompleteListingWarning)
        assert len(client.playlists.list(page_size=2, max_items=9)) == 9
    assert state["calls"] == 5

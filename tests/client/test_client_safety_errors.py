"""Issue 12 finding 12: every client failure is the package's typed error with a status and a sentence that
names the fix; 3xx is never data, and a redirect to another host is not followed with the key.

The sandbox cannot answer an HTML 200, an empty 200 or a redirect, so these tests run a tiny HTTP server on
127.0.0.1 (tests/_local_http.py): real sockets, no httpx mocking.
"""

from __future__ import annotations

from typing import Any

import pytest

from _clients import client_for
from _local_http import json_answer, local_server
from analytics_nb.errors import PostHogError, RedirectError, ResponseFormatError

KEY = "phx_errorsSECRET1234567890abcd"
PKEY = "phc_errorsPROJECT1234567890abc"
ITEM = "/api/projects/1/session_recording_playlists/abc12345/"
PLAYLIST = (
    '{"id": 1, "short_id": "abc12345", "name": "from target", "type": "collection", "filters": {},'
    ' "deleted": false, "pinned": false, "description": ""}'
)


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        ((200, {"Content-Type": "text/html"}, b"<html><body>Login</body></html>"), "not JSON (text/html)"),
        ((200, {}, b""), "empty body"),
        (json_answer("null"), "NoneType"),
        (json_answer("[1, 2]"), "list"),
    ],
)
def test_decide_on_a_non_flags_answer_is_a_typed_error(answer: Any, fragment: str) -> None:
    with (
        local_server({"/decide/": answer, "/flags/": answer}) as server,
        client_for(server.url, KEY, project_api_key=PKEY, project_id=1, max_retries=0) as client,
        pytest.raises(PostHogError) as info,
    ):
        client.decide("user-1")
    err = info.value
    assert isinstance(err, ResponseFormatError)
    assert err.status == 200 and "host=" in str(err)
    assert fragment in str(err) or (fragment == "NoneType" and "empty body" in str(err))


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        (json_answer("null"), "null"),
        ((200, {}, b""), "an empty body"),
        (json_answer('{"id": {"not": "an id"}}'), "not a Playlist"),
        ((200, {"Content-Type": "text/html"}, b"<!doctype html>"), "not JSON"),
    ],
)
def test_get_on_an_empty_null_or_foreign_body_is_a_typed_error(answer: Any, fragment: str) -> None:
    with (
        local_server({ITEM: answer}) as server,
        client_for(server.url, KEY, project_api_key=PKEY, project_id=1, max_retries=0) as client,
        pytest.raises(ResponseFormatError) as info,
    ):
        client.playlists.get("abc12345")
    assert fragment in str(info.value) and "host=" in str(info.value)


def test_302_to_another_host_is_not_followed_and_the_key_stays_home() -> None:
    with local_server({ITEM: json_answer(PLAYLIST)}) as other:
        answer = (302, {"Location": other.url + ITEM}, b"")
        with (
            local_server({ITEM: answer}) as server,
            client_for(server.url, KEY, project_api_key=PKEY, project_id=1, max_retries=0) as client,
            pytest.raises(RedirectError) as info,
        ):
            client.playlists.get("abc12345")
        assert other.requests == []  # nothing, and so no key, went to the other host
    err = info.value
    assert err.status == 302 and other.url in str(err) and f"host={other.url!r}" in str(err)
    assert err.location == other.url + ITEM


def test_301_with_a_json_body_is_never_used_as_data() -> None:
    moved = (
        301,
        {"Location": "https://elsewhere.example" + ITEM, "Content-Type": "application/json"},
        PLAYLIST.replace("from target", "the 301 body").encode(),
    )
    with (
        local_server({ITEM: moved}) as server,
        client_for(server.url, KEY, project_api_key=PKEY, project_id=1, max_retries=0) as client,
        pytest.raises(RedirectError) as info,
    ):
        client.playlists.get("abc12345")
    assert info.value.status == 301 and "elsewhere.example" in str(info.value)


def test_same_host_redirect_is_followed_for_get_with_the_target_data() -> None:
    routes: dict[str, Any] = {
        ITEM: (
            301,
            {"Location": "/moved/", "Content-Type": "application/json"},
            PLAYLIST.replace("from target", "the 301 body").encode(),
        ),
        "/moved/": json_answer(PLAYLIST),
    }
    with (
        local_server(routes) as server,
        client_for(server.url, KEY, project_api_key=PKEY, project_id=1, max_retries=0) as client,
    ):
        playlist = client.playlists.get("abc12345")
    assert playlist.name == "from target"
    assert [r[1] for r in server.requests] == [ITEM, "/moved/"]
    assert server.requests[1][2].get("Authorization") == f"Bearer {KEY}"  # same host: the key is fine


def test_redirected_write_is_refused_not_replayed_as_get() -> None:
    path = "/api/projects/1/session_recording_playlists/"
    with (
        local_server({path: (302, {"Location": "/elsewhere/"}, b"")}) as server,
        client_for(server.url, KEY, project_api_key=PKEY, project_id=1, max_retries=0) as client,
        pytest.raises(RedirectError) as info,
    ):
        client.playlists.create("collection", "x")
    assert "POST" in str(info.value) and info.value.status == 302
    assert [r[1] for r in server.requests] == [path]


def test_endless_same_host_redirects_stop() -> None:
    with (
        local_server({ITEM: (302, {"Location": ITEM}, b"")}) as server,
        client_for(server.url, KEY, project_api_key=PKEY, project_id=1, max_retries=0) as client,
        pytest.raises(RedirectError, match="more than 5 times"),
    ):
        client.playlists.get("abc12345")
    assert len(server.requests) == 6

"""Issue 37 findings 5-8: a deadline for each whole request, bounded memory for answers and paging, `/flags`
records checked against their keys, and a `phs_` key given as the personal key explained.

Faults come from the sandbox's own injection: ``trickle`` (the body one byte at a time),
``kind="endless_pages"`` (a saved filter that always says more follow), ``kind="flag_key_mismatch"`` (a
`/flags` record whose ``key`` is not its entry's)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from _clients import client_for
from analytics_nb.errors import (
    AuthenticationError,
    IncompleteRecordingsError,
    IncompleteRecordingsWarning,
    NetworkError,
    ResponseFormatError,
)
from analytics_nb.sandbox import Sandbox

TRANSPORTS = [
    "httpx",
    pytest.param(
        "aiohttp",
        marks=pytest.mark.skipif(
            not __import__("analytics_nb.client._transport", fromlist=["x"]).aiohttp_available(),
            reason="the fast extra is not installed",
        ),
    ),
]


@pytest.fixture
def faults(sandbox: Sandbox) -> Iterator[Sandbox]:
    """The module's sandbox, its fault rules cleared after the test."""
    yield sandbox
    sandbox.faults.clear()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_trickling_answer_is_cut_at_the_timeout(faults: Sandbox, transport: str) -> None:
    # A byte every 50 ms never lets a read time out; the whole request must still end at timeout=1 s.
    faults.faults.add(path="/api/projects/*/feature_flags*", trickle=0.05, methods=["GET"])
    with client_for(faults, ids=True, timeout=1.0, http_transport=transport) as client:
        started = time.monotonic()
        with pytest.raises(NetworkError) as info:
            client.feature_flags.list()
        took = time.monotonic() - started
    assert took < 3.0, took  # one attempt, not retried, cut at the deadline
    message = str(info.value)
    assert "timeout=1 s" in message and "whole request" in message
    assert faults.personal_api_key not in message


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_trickled_answer_within_the_timeout_is_read(faults: Sandbox, transport: str) -> None:
    faults.faults.add(path="/api/projects/*/", trickle=0.001, methods=["GET"])
    with client_for(faults, ids=True, timeout=20.0, http_transport=transport) as client:
        assert client.projects.get(faults.project_id).id == faults.project_id


def test_an_answer_over_the_cap_is_refused_with_its_size(faults: Sandbox) -> None:
    with client_for(faults, ids=True, max_answer_bytes=2048) as client:
        with pytest.raises(ResponseFormatError) as info:
            client.feature_flags.list()
        message = str(info.value)
        assert "max_answer_bytes=2048" in message and "kB" in message
        with pytest.raises(ResponseFormatError, match="max_answer_bytes=2048"):
            client.decide("user-1")  # the /flags answer of the demo project is larger too
    with client_for(faults, ids=True) as client:  # the default cap reads them
        assert client.feature_flags.list()


def test_a_compressed_answer_is_capped_by_its_decoded_size() -> None:
    import gzip

    from _local_http import local_server

    body = b'{"count": 1, "next": null, "results": [{"id": 1, "pad": "' + b"0" * 3_000_000 + b'"}]}'
    packed = gzip.compress(body)
    assert len(packed) < 100_000
    answer = (200, {"Content-Type": "application/json", "Content-Encoding": "gzip"}, packed)
    path = "/api/projects/1/feature_flags/"
    with (
        local_server({path: answer}) as server,
        client_for(
            server.url, "phx_boundsSECRET1234567890abcd", project_id=1, max_answer_bytes=1_000_000
        ) as client,
        pytest.raises(ResponseFormatError, match=r"more than .*max_answer_bytes=1000000"),
    ):
        client.feature_flags.list()


def _saved_filter(client: object) -> str:
    playlist = client.playlists.create(  # type: ignore[attr-defined]
        "filters", "endless", filters={"date_from": "-30d"}
    )
    return str(playlist.short_id)


def test_a_server_that_always_says_more_follow_is_stopped_at_max_items(faults: Sandbox) -> None:
    with client_for(faults, ids=True) as client:
        short_id = _saved_filter(client)
        assert client.playlists.recordings(short_id), "the demo has recordings in the last 30 days"
        faults.faults.add(
            path="/api/projects/*/session_recording_playlists/*/recordings*", kind="endless_pages"
        )
        faults.clear_requests()
        with pytest.warns(IncompleteRecordingsWarning, match="max_items=120") as caught:
            records = client.playlists.recordings(short_id, max_items=120)
        assert len(records) == 120 and len({r.id for r in records}) == 120
        assert "has_next" in str(caught[0].message)
        asked = faults.requests()
        assert len(asked[asked["path"].str.contains("/recordings")]) <= 120
        with pytest.raises(IncompleteRecordingsError) as info:
            client.playlists.recordings_frame(short_id, max_items=50, incomplete="raise")
        assert len(info.value.recordings) == 50


def test_saved_filter_recordings_have_a_default_cap() -> None:
    from analytics_nb.client._resources._recordings import MAX_RECORDINGS

    assert MAX_RECORDINGS == 10_000


def test_a_flags_record_under_another_key_is_a_failed_flag(faults: Sandbox) -> None:
    with client_for(faults, ids=True) as client:
        honest = client.decide("user-1")
        assert honest.flags and not honest.failures
        faults.faults.add(path="/flags*", kind="flag_key_mismatch")
        answer = client.decide("user-1")
    assert answer.flags is not None and set(answer.flags) == set(honest.flags)
    assert set(answer.failures) == set(honest.flags)
    assert all(v is None for v in answer.feature_flags.values())
    key = next(iter(answer.flags))
    assert f"for flag '{key}-other'" in answer.failures[key]


def test_a_secret_key_given_as_the_personal_key_is_named_on_401(faults: Sandbox) -> None:
    secret = faults.create_secret_key()
    assert secret.startswith("phs_")
    with client_for(faults, secret, ids=True) as client, pytest.raises(AuthenticationError) as info:
        client.playlists.list()
    message = str(info.value)
    assert "Project Secret API Key (phs_...)" in message and "secret_api_key=" in message
    assert secret not in message and secret[4:] not in message and secret not in repr(info.value)
    wrong = "phx_" + "w" * 40  # a wrong personal key keeps the plain 401 text
    with client_for(faults, wrong, ids=True) as client, pytest.raises(AuthenticationError) as info:
        client.playlists.list()
    assert "Secret" not in str(info.value)

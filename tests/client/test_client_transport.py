"""The connection layer under httpx: aiohttp's (the ``fast`` extra) or httpx's own, chosen by
``http_transport=``; both speak to the sandbox over HTTP with the same results and errors."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from _clients import client_for
from analytics_nb import Client
from analytics_nb.client._transport import aiohttp_available, resolve
from analytics_nb.errors import NetworkError

needs_fast = pytest.mark.skipif(not aiohttp_available(), reason="the 'fast' extra is not installed")


@pytest.fixture
def no_fast(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The ``fast`` extra missing: importing ``httpx_aiohttp`` fails as it would when not installed."""
    monkeypatch.setitem(sys.modules, "httpx_aiohttp", None)
    yield


@needs_fast
def test_auto_uses_aiohttp_when_installed(sandbox: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    with client_for(sandbox, http_transport="auto", project_id=sandbox.project_id) as client:
        assert client.core.transport_name == "aiohttp"
        assert client.decide("someone").feature_flags  # really over aiohttp
        assert type(client.core._client()._transport).__name__ == "AiohttpTransport"


def test_auto_falls_back_to_httpx_without_the_extra(sandbox: Any, no_fast: None) -> None:
    assert not aiohttp_available()
    with client_for(sandbox, http_transport="auto", project_id=sandbox.project_id) as client:
        assert client.core.transport_name == "httpx"
        assert client.decide("someone").feature_flags
        assert client.playlists.list() is not None


def test_auto_uses_httpx_when_a_proxy_is_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
    assert resolve("auto") == "httpx"  # httpx honours the proxy variables, the aiohttp transport does not


def test_aiohttp_without_the_extra_names_the_fix(no_fast: None) -> None:
    with pytest.raises(ValueError, match=r"analytics-nb\[fast\]"):
        resolve("aiohttp")


def test_unknown_transport_is_refused_naming_the_choices() -> None:
    with pytest.raises(ValueError, match=r"http_transport='curl'.*'httpx'"):
        Client("us", http_transport="curl")


@pytest.mark.parametrize("transport", ["httpx", pytest.param("aiohttp", marks=needs_fast)])
def test_both_transports_give_the_same_answers(sandbox: Any, transport: str) -> None:
    with (
        client_for(sandbox, http_transport=transport, project_id=sandbox.project_id) as client,
        client_for(sandbox, http_transport="httpx", project_id=sandbox.project_id) as reference,
    ):
        ours, theirs = client.decide("user-00001").model_dump(), reference.decide("user-00001").model_dump()
        volatile = {"evaluated_at", "request_id"}
        assert {k: v for k, v in ours.items() if k not in volatile} == {
            k: v for k, v in theirs.items() if k not in volatile
        }
        assert len(client.playlists.list()) == len(reference.playlists.list())


@pytest.mark.parametrize("transport", ["httpx", pytest.param("aiohttp", marks=needs_fast)])
def test_refused_connection_is_a_network_error_without_a_chain(transport: str) -> None:
    with (
        Client(
            "http://127.0.0.1:9",
            personal_api_key="phx_" + "s" * 30,
            max_retries=1,
            retry_backoff=0.01,
            http_transport=transport,
            progress=False,
        ) as client,
        pytest.raises(NetworkError) as info,
    ):
        client.playlists.list()
    assert "after 2 attempts" in str(info.value)  # refused: retried
    assert info.value.__cause__ is None and info.value.__context__ is None
    assert "sssss" not in str(info.value)


@pytest.mark.parametrize("transport", ["httpx", pytest.param("aiohttp", marks=needs_fast)])
def test_connection_cut_after_a_post_is_not_sent_twice(empty_sandbox: Any, transport: str) -> None:
    """A POST whose connection the server cut may have been applied: never retried (aiohttp's server
    disconnect reaches httpx as a ConnectTimeout, which must not count as 'refused')."""
    sb = empty_sandbox
    sb.faults.add(path="/api/projects/*/session_recording_playlists/", reset=True, methods=["POST"])
    with (
        client_for(
            sb, http_transport=transport, max_retries=3, retry_backoff=0.01, project_id=sb.project_id
        ) as client,
        pytest.raises(NetworkError),
    ):
        client.playlists.create("collection", "cut")
    log = sb.requests()
    posts = log[(log["method"] == "POST") & log["path"].str.contains("session_recording_playlists")]
    # (the sandbox's log may miss the cut request itself; a retried POST would show 2 to 4 entries)
    assert len(posts) <= 1


def test_json_decoding_falls_back_to_the_standard_library_for_what_orjson_refuses() -> None:
    import math

    from analytics_nb.client import loads_json

    assert loads_json(b'{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}
    assert math.isnan(loads_json(b'{"a": NaN}')["a"])  # orjson refuses NaN; json reads it
    assert loads_json(b'{"big": 123456789012345678901234567890}')["big"] == 123456789012345678901234567890
    with pytest.raises(ValueError):
        loads_json(b"<html>not json</html>")


def test_sync_client_loop_is_uvloop_when_installed_and_can_be_turned_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from analytics_nb.client._loop import new_event_loop

    pytest.importorskip("uvloop")
    loop = new_event_loop()
    try:
        assert type(loop).__module__.startswith("uvloop")
    finally:
        loop.close()
    monkeypatch.setenv("ANALYTICS_NB_UVLOOP", "0")
    loop = new_event_loop()
    try:
        assert not type(loop).__module__.startswith("uvloop")
    finally:
        loop.close()


def test_json_decoding_keeps_integers_at_the_64_bit_edges_exact() -> None:
    from analytics_nb.client import loads_json

    for number in (2**63 - 1, -(2**63), -(2**63) - 1, 2**64, 10**30):
        assert loads_json(b'{"n": %d, "s": "x"}' % number)["n"] == number

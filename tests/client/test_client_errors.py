"""Typed errors, scopes, retries under injected faults, Retry-After, and secrets kept out of every text."""

from __future__ import annotations

import logging
import pickle
import socket
import traceback
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

from _clients import client_for
from analytics_nb import Client
from analytics_nb.errors import (
    AuthenticationError,
    NetworkError,
    NotFoundError,
    PermissionDeniedError,
    PostHogError,
    RateLimitedError,
    ServerError,
    ValidationError,
    error_from_response,
)

PLAYLISTS = "/api/projects/*/session_recording_playlists*"


@pytest.fixture
def sb(empty_sandbox: Any) -> Iterator[Any]:
    yield empty_sandbox
    empty_sandbox.faults.clear()


def _all_text(exc: BaseException) -> str:
    """Everything an exception can show: formatted traceback with chain, args, notes, repr, attributes."""
    parts = ["".join(traceback.format_exception(exc)), repr(exc), repr(exc.args), str(exc)]
    parts += [str(n) for n in getattr(exc, "__notes__", [])]
    parts += [repr(v) for v in vars(exc).values()]
    cause = exc.__cause__ or exc.__context__
    while cause is not None:
        parts.append(repr(cause) + repr(getattr(cause, "args", ())))
        cause = cause.__cause__ or cause.__context__
    return "\n".join(parts)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_missing_write_scope_is_a_typed_403_naming_the_scope(sb: Any) -> None:
    key = sb.create_personal_key(scopes=["session_recording_playlist:read"])
    with client_for(sb, key) as client:
        assert isinstance(client.playlists.list(), list)  # read works
        with pytest.raises(PermissionDeniedError) as info:
            client.playlists.create("collection", "nope")
    err = info.value
    assert err.status == 403 and err.code == "permission_denied"
    assert err.missing_scope == "session_recording_playlist:write"
    assert "session_recording_playlist:write" in str(err)
    assert key not in _all_text(err)


def test_write_scope_also_reads_and_missing_plugin_scope_is_named(sb: Any) -> None:
    key = sb.create_personal_key(scopes=["session_recording_playlist:write"])
    with client_for(sb, key) as client:
        assert client.playlists.create("collection", "ok").name == "ok"
        with pytest.raises(PermissionDeniedError) as resolving:
            client.transformations.list()  # the organization id cannot be looked up with this key
    assert "organization_id=" in str(resolving.value)
    with (
        client_for(sb, key, organization_id=sb.organization_id) as client,
        pytest.raises(PermissionDeniedError) as info,
    ):
        client.transformations.list()
    assert info.value.missing_scope == "plugin:read"


def test_bad_key_is_an_authentication_error_without_the_key(sb: Any) -> None:
    bad = "phx_" + "Z" * 40
    with client_for(sb, bad) as client, pytest.raises(AuthenticationError) as info:
        client.playlists.list()
    assert info.value.status == 401
    assert bad not in _all_text(info.value) and "ZZZZZZ" not in _all_text(info.value)


def test_not_found(sb: Any) -> None:
    with client_for(sb) as client, pytest.raises(NotFoundError) as info:
        client.playlists.get("nOtThErE")
    assert info.value.status == 404 and info.value.type == "invalid_request"


def test_every_playlist_exactly_once_despite_503s_and_resets(sb: Any) -> None:
    with client_for(sb) as client:
        for i in range(150):
            client.playlists.create("collection", f"playlist {i:03d}")
        clean = [p.id for p in client.playlists.list(page_size=6)]
    assert len(clean) == 150
    sb.faults.add(path=PLAYLISTS, status=503, rate=0.2, methods=["GET"])
    sb.faults.add(path=PLAYLISTS, reset=True, rate=0.2, methods=["GET"])
    with client_for(sb, max_retries=10, max_concurrency=6) as client:
        faulty = [p.id for p in client.playlists.list(page_size=6)]
        retries = client._core.retries_done
    assert faulty == clean
    assert retries > 0  # faults were really met and retried
    log = sb.requests()
    assert (log["status"] == 503).any()


def test_retries_are_capped_and_then_raise_a_server_error(sb: Any) -> None:
    sb.faults.add(path=PLAYLISTS, status=503, rate=1.0)
    with client_for(sb, max_retries=2) as client, pytest.raises(ServerError) as info:
        client.playlists.list()
    assert info.value.status == 503
    log = sb.requests()
    assert int((log["status"] == 503).sum()) == 3  # 1 try + 2 retries


def test_post_is_not_retried_on_503(sb: Any) -> None:
    sb.faults.add(path=PLAYLISTS, status=503, rate=1.0, methods=["POST"])
    with client_for(sb, max_retries=3) as client, pytest.raises(ServerError):
        client.playlists.create("collection", "once")
    log = sb.requests()
    assert int((log["method"] == "POST").sum()) == 1


def test_reset_without_retries_is_a_network_error_without_secrets(sb: Any) -> None:
    sb.faults.add(path=PLAYLISTS, reset=True, rate=1.0)
    with client_for(sb, max_retries=0) as client, pytest.raises(NetworkError) as info:
        client.playlists.list()
    text = _all_text(info.value)
    assert sb.personal_api_key not in text and sb.project_api_key not in text
    assert "Authorization" not in text and "Bearer" not in text
    assert info.value.__cause__ is None and info.value.__context__ is None  # no chained httpx error


def test_connection_refused_is_a_network_error() -> None:
    key = "phx_" + "Q" * 40
    with (
        Client(
            f"http://127.0.0.1:{_free_port()}", personal_api_key=key, max_retries=1, retry_backoff=0.01
        ) as client,
        pytest.raises(NetworkError) as info,
    ):
        client.playlists.list()
    assert "QQQQQQ" not in _all_text(info.value)
    assert info.value.__context__ is None and info.value.__cause__ is None


def test_429_retry_after_is_honoured(sb: Any) -> None:
    sb.faults.add(path=PLAYLISTS, status=429, rate=0.5, retry_after=1, methods=["GET"])
    with client_for(sb, max_retries=8) as client:
        for _ in range(4):
            client.playlists.list()
    log = sb.requests()
    log = log[log["path"].str.contains("session_recording_playlists")].reset_index(drop=True)
    throttled = log.index[log["status"] == 429]
    assert len(throttled) > 0
    for i in throttled:
        gap = pd.Timestamp(log.loc[i + 1, "at"]) - pd.Timestamp(log.loc[i, "at"])
        assert gap >= pd.Timedelta(seconds=0.95)  # the next try waited for Retry-After


def test_429_without_retries_carries_retry_after(sb: Any) -> None:
    sb.faults.add(path=PLAYLISTS, status=429, rate=1.0, retry_after=7)
    with client_for(sb, max_retries=0) as client, pytest.raises(RateLimitedError) as info:
        client.playlists.list()
    assert info.value.retry_after == 7.0 and info.value.status == 429
    assert "7" in str(info.value)


def test_logs_never_hold_keys(sb: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    sb.faults.add(path=PLAYLISTS, status=503, rate=0.5, methods=["GET"])
    with client_for(sb, max_retries=6) as client:
        client.playlists.list()
        client.decide("user-1")
        client.feature_flags.local_evaluation()  # sends the project key as ?token=
    assert caplog.records  # something was logged
    # the definitions come from today's /flags/definitions (?token= in its URL)
    assert any("flags/definitions" in r.getMessage() for r in caplog.records)
    assert sb.personal_api_key not in caplog.text and sb.project_api_key not in caplog.text


def test_errors_pickle_and_keep_fields() -> None:
    err = error_from_response(
        400,
        '{"type":"validation_error","code":"required","detail":"This field is required.","attr":"name"}',
        method="POST",
        url="http://h/api/x",
    )
    assert isinstance(err, ValidationError) and err.attr == "name" and err.code == "required"
    assert "field 'name'" in str(err)
    again = pickle.loads(pickle.dumps(err))
    assert isinstance(again, PostHogError) and str(again) == str(err)


def test_plain_text_bodies_of_the_flags_service_are_read() -> None:
    err = error_from_response(
        401,
        "The provided API key is invalid or has expired. Please check your API key and try again.",
        method="POST",
        url="http://h/flags/?v=2",
    )
    assert isinstance(err, AuthenticationError)
    assert err.detail is not None and err.detail.startswith("The provided API key is invalid")
    rate = error_from_response(
        429,
        '{"type":"validation_error","code":"rate_limit_exceeded","detail":"Rate limit exceeded","attr":null}',
        method="POST",
        url="http://h/flags/",
        retry_after_header="3",
    )
    assert isinstance(rate, RateLimitedError) and rate.retry_after == 3.0


def test_server_echoed_keys_are_scrubbed_from_details() -> None:
    key = "phx_" + "k" * 40
    err = error_from_response(
        403, f'{{"detail":"key {key} is not allowed"}}', method="GET", url=f"http://h/?personal_api_key={key}"
    )
    assert key not in _all_text(err)


def test_decide_errors_from_the_ingestion_service(sb: Any) -> None:
    with (
        Client(sb.url, project_api_key="phc_" + "n" * 40, progress=False) as client,
        pytest.raises(AuthenticationError) as info,
    ):
        client.decide("someone")
    assert info.value.status == 401
    assert "n" * 20 not in _all_text(info.value)
    with client_for(sb) as client, pytest.raises(ValueError, match="distinct_id"):
        client.decide("")


def test_slow_answers_time_out_as_network_errors(sb: Any) -> None:
    sb.faults.add(path=PLAYLISTS, delay=1.5, rate=1.0)
    with client_for(sb, max_retries=0, timeout=0.3) as client, pytest.raises(NetworkError) as info:
        client.playlists.list()
    assert "Timeout" in str(info.value)


def test_408_is_transient_for_idempotent_requests(sb: Any) -> None:
    sb.faults.add(path=PLAYLISTS, status=408, rate=1.0, methods=["GET"])
    with client_for(sb, max_retries=2) as client, pytest.raises(PostHogError) as info:
        client.playlists.list()
    assert info.value.status == 408 and "timed out waiting for the request" in str(info.value)
    log = sb.requests()
    assert int((log["status"] == 408).sum()) == 3  # 1 try + 2 retries
    sb.faults.clear()
    sb.clear_requests()
    sb.faults.add(path=PLAYLISTS, status=408, rate=1.0, methods=["POST"])
    with client_for(sb, max_retries=3) as client, pytest.raises(PostHogError):
        client.playlists.create("collection", "once")
    assert int((sb.requests()["method"] == "POST").sum()) == 1  # a POST may have been acted on


def test_500_is_not_retried(sb: Any) -> None:
    """The issue names 502/503/504 as transient; a 500 is often a deterministic failure, so it is raised."""
    sb.faults.add(path=PLAYLISTS, status=500, rate=1.0, methods=["GET"])
    with client_for(sb, max_retries=3) as client, pytest.raises(ServerError) as info:
        client.playlists.list()
    assert info.value.status == 500
    assert int((sb.requests()["status"] == 500).sum()) == 1

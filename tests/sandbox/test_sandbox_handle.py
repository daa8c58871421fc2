"""The `Sandbox` handle: add_recording, decide controls, and quiet fault injection (over real HTTP)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from _sandbox_helpers import api, playlists_path
from analytics_nb.sandbox import Sandbox, start


def _collection(http: httpx.Client, sb: Sandbox, kind: str = "collection") -> str:
    body: dict[str, Any] = {"type": kind, "name": f"handle {kind}"}
    if kind == "filters":
        body["filters"] = {"events": [{"id": "$pageview"}]}
    resp = http.post(playlists_path(sb), json=body)
    assert resp.status_code == 201, resp.text
    return str(resp.json()["short_id"])


# -- add_recording ---------------------------------------------------------------------------------------
def test_add_recording_into_a_playlist_is_served_like_an_ingested_one(empty_sandbox: Sandbox) -> None:
    sb = empty_sandbox
    sb.set_person("alice", {"plan": "pro"})
    with api(sb) as http:
        short_id = _collection(http, sb)
        sid = sb.add_recording(
            "rec-1",
            distinct_id="alice",
            start_time="2026-11-20T10:00:00Z",
            duration=90,
            counts={"console_error_count": 3},
            person_properties={"email": "alice@example.com"},
            playlist=short_id,
        )
        other = sb.add_recording(distinct_id="bob")  # not in the playlist
        assert sid == "rec-1" and other != sid and len(other) == 36
        body = http.get(playlists_path(sb, f"{short_id}/recordings/")).json()
        playlist = http.get(playlists_path(sb, f"{short_id}/")).json()
    assert [r["id"] for r in body["results"]] == ["rec-1"]
    rec = body["results"][0]
    assert rec["distinct_id"] == "alice"
    assert rec["start_time"].startswith("2026-11-20T10:00:00") and rec["end_time"].startswith(
        "2026-11-20T10:01:30"
    )
    assert rec["recording_duration"] == 90 and rec["active_seconds"] + rec["inactive_seconds"] == 90
    assert rec["console_error_count"] == 3 and rec["click_count"] > 0
    assert rec["person"]["properties"] == {"plan": "pro", "email": "alice@example.com"}
    assert rec["person"]["distinct_ids"] == ["alice"]
    assert playlist["recordings_counts"]["collection"]["count"] == 1


def test_add_recording_refuses_bad_input_naming_the_argument(empty_sandbox: Sandbox) -> None:
    sb = empty_sandbox
    sb.add_recording("dup")
    with pytest.raises(ValueError, match=r"session_id.*already exists"):
        sb.add_recording("dup")
    with pytest.raises(ValueError, match=r"playlist.*'nope'"):
        sb.add_recording(playlist="nope")
    with pytest.raises(ValueError, match="active_seconds"):
        sb.add_recording(duration=10, active_seconds=11)
    with pytest.raises(ValueError, match=r"counts.*'clicks'"):
        sb.add_recording(counts={"clicks": 1})
    with pytest.raises(ValueError, match="start_time"):
        sb.add_recording(start_time="yesterday")
    with api(sb) as http:
        saved_search = _collection(http, sb, "filters")
    with pytest.raises(ValueError, match="'filters' playlist"):
        sb.add_recording(playlist=saved_search)
    ids = [r["session_id"] for r in sb.ctx.store.query("SELECT session_id FROM recordings")]
    assert ids == ["dup"]  # nothing half-written by the refused calls


def test_add_recording_defaults_are_recent_and_naive_datetimes_are_utc(empty_sandbox: Sandbox) -> None:
    sb = empty_sandbox
    sb.add_recording("a")
    sb.add_recording("b", start_time=datetime(2026, 1, 2, 3, 4, 5))
    rows = {r["session_id"]: r for r in sb.ctx.store.query("SELECT * FROM recordings")}
    started = datetime.fromisoformat(rows["a"]["start_time"].replace("Z", "+00:00"))
    assert 0 < (datetime.now(UTC) - started).total_seconds() < 3 * 3600
    assert rows["b"]["start_time"].startswith("2026-01-02T03:04:05")


# -- decide controls -------------------------------------------------------------------------------------
def test_decide_controls_on_the_handle(sandbox: Sandbox) -> None:
    payload = {"api_key": sandbox.project_api_key, "distinct_id": "user-00002"}
    with httpx.Client(base_url=sandbox.url, timeout=10) as http:
        sandbox.set_flags_quota_limited(True)
        try:
            limited = http.post("/flags/?v=2", json=payload).json()
        finally:
            sandbox.set_flags_quota_limited(False)
        assert limited["flags"] == {} and limited["quotaLimited"] == ["feature_flags"]
        assert "quotaLimited" not in http.post("/flags/?v=2", json=payload).json()
        sandbox.set_flag_failures("beta-feature")  # one key as a plain string
        try:
            failing = http.post("/decide/?v=4", json=payload).json()
        finally:
            sandbox.set_flag_failures()
        assert failing["errorsWhileComputingFlags"] is True
        assert failing["flags"]["beta-feature"]["failed"] is True
        assert http.post("/decide/?v=3", json=payload).json()["errorsWhileComputingFlags"] is False


# -- quiet fault injection -------------------------------------------------------------------------------
class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"{record.name}: {record.getMessage()}")


@pytest.fixture
def server_logs() -> Iterator[_Records]:
    """Warnings and errors of uvicorn and asyncio (uvicorn's loggers do not propagate to pytest's caplog)."""
    handler = _Records()
    loggers = [logging.getLogger(n) for n in ("uvicorn", "uvicorn.error", "asyncio")]
    for logger in loggers:
        logger.addHandler(handler)
    yield handler
    for logger in loggers:
        logger.removeHandler(handler)


def test_resets_and_abandoned_delays_are_quiet(server_logs: _Records, capfd: Any) -> None:
    with start(seed="empty") as sb:
        sb.faults.add(path="/api/projects*", reset=True, rate=0.5)
        sb.faults.add(path="/batch*", delay=5)
        outcomes: list[str] = []
        with api(sb) as http:
            for _ in range(20):
                try:
                    outcomes.append(str(http.get("/api/projects/").status_code))
                except (httpx.ReadError, httpx.RemoteProtocolError):
                    outcomes.append("reset")
        assert "reset" in outcomes and "200" in outcomes  # the reset still reaches the client
        batch = {"api_key": sb.project_api_key, "batch": [{"event": "e", "distinct_id": "d"}] * 50}
        for _ in range(3):  # the client gives up; the server must drop the request silently
            with pytest.raises(httpx.ReadTimeout):
                httpx.post(f"{sb.url}/batch/", json=batch, timeout=0.2)
    log = sb.requests()  # after stop(): every request has ended
    batch_log = log[log["path"] == "/batch/"]
    assert len(batch_log) == 3 and batch_log["status"].isna().all()  # logged, never answered
    assert server_logs.messages == []
    err = capfd.readouterr().err
    assert "Traceback" not in err and "ASGI callable" not in err and "ClientDisconnect" not in err


def test_stop_cuts_requests_still_held_by_a_delay(server_logs: _Records) -> None:
    outcome: list[str] = []
    with start(seed="empty") as sb:
        sb.faults.add(path="/api/projects*", delay=30)

        def call() -> None:
            try:
                with api(sb) as http:
                    outcome.append(str(http.get("/api/projects/", timeout=60).status_code))
            except httpx.TransportError as exc:
                outcome.append(type(exc).__name__)

        thread = threading.Thread(target=call)
        thread.start()
        server = sb._server
        assert server is not None
        while not server.server_state.tasks and thread.is_alive():  # until the server holds the request
            thread.join(0.02)
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert outcome and outcome[0] in ("ReadError", "RemoteProtocolError")  # cut, not served after 30 s
    assert server_logs.messages == []

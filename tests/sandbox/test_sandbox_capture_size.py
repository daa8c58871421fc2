"""Issue 23 (capture): the capture service's size rules and answers, in the sandbox and in the client.

Today's Rust capture service has one 20 MB wire cap on every v0 analytics path (413 past it), a decompressed
budget of five times that, and a per-event limit: the event's queue message may be at most the Kafka
producer's ``message.max.bytes`` (1,000,000 bytes, ``rust/capture/src/config.rs``). A request holding an
over-size event is answered 400 ``maximum event size exceeded: ...`` after the events before it were
published (``rust/capture/src/sinks/kafka.rs``, ``publish``). The client never reports an event that was
stored as refused, and reports an over-size one as refused with the reason.
"""

from __future__ import annotations

import gzip
import json
from typing import Any

import httpx
import pandas as pd
import pytest

from _clients import client_for
from analytics_nb.capture import _bulk, capture_frame
from analytics_nb.sandbox._resources.capture import BATCH_LIMIT, EVENT_LIMIT

V0_PATHS = ("/e/", "/i/v0/e/", "/batch/", "/capture/")


def _body_of_len(token: str, length: int) -> str:
    """A JSON body of ``length`` bytes holding one event (the padding is one property)."""
    envelope = json.dumps({"token": token, "event": "e", "distinct_id": "d", "properties": {"big": ""}})
    return envelope.replace('"big": ""', '"big": "' + "a" * max(0, length - len(envelope)) + '"')


def test_every_v0_route_rejects_a_body_over_the_wire_cap(empty_sandbox: Any) -> None:
    """`rust/capture/tests/integration_wire_body_limits.rs`,
    `every_v0_analytics_route_rejects_a_body_over_the_wire_cap`: 413 on every path past the one cap."""
    over = _body_of_len(empty_sandbox.project_api_key, BATCH_LIMIT + 1024)
    for path in V0_PATHS:
        resp = httpx.post(empty_sandbox.url + path, content=over, timeout=60)
        assert resp.status_code == 413, path


def test_every_v0_route_accepts_a_body_under_the_wire_cap(empty_sandbox: Any) -> None:
    """`integration_wire_body_limits.rs`, `every_v0_analytics_route_accepts_a_body_under_the_wire_cap`: a
    4 MB body (over the 2 MB the event paths used to carry) is not 413 on any path."""
    under = _body_of_len(empty_sandbox.project_api_key, 4 * 1024 * 1024)
    for path in V0_PATHS:
        resp = httpx.post(empty_sandbox.url + path, content=under, timeout=60)
        assert resp.status_code != 413, path
        # one 4 MB event is over the per-event limit: the service's answer for it (EventTooBig)
        assert resp.status_code == 400 and resp.text.startswith("maximum event size exceeded: "), path


def test_a_large_overshoot_still_delivers_the_status_and_the_next_request_works(empty_sandbox: Any) -> None:
    """`integration_wire_body_limits.rs`, `a_large_overshoot_still_delivers_the_status_instead_of_a_reset`."""
    sb = empty_sandbox
    with httpx.Client(base_url=sb.url, timeout=60) as http:
        resp = http.post("/batch/", content=_body_of_len(sb.project_api_key, BATCH_LIMIT + BATCH_LIMIT // 2))
        assert resp.status_code == 413
        resp = http.post("/batch/", content=_body_of_len(sb.project_api_key, 1024))
        assert resp.status_code == 200


def test_an_over_size_event_is_400_after_the_events_before_it_are_stored(empty_sandbox: Any) -> None:
    """`rust/capture/src/sinks/kafka.rs` `publish` (in-order enqueue, the batch reports the first failure,
    events acked before it included) and the sink test of `EventTooBig` in the same file (an event over
    `message.max.bytes` gives `CaptureError::EventTooBig`, shown as "maximum event size exceeded: ...",
    `rust/capture/src/api.rs`)."""
    sb = empty_sandbox
    events = [
        {"event": "e", "distinct_id": "before", "uuid": "0190b2a4-7a3c-7cc1-9a5e-4f1d2c3b4a01"},
        {"event": "e", "distinct_id": "big", "properties": {"blob": "x" * EVENT_LIMIT}},
        {"event": "e", "distinct_id": "after"},
    ]
    resp = httpx.post(f"{sb.url}/batch/", json={"api_key": sb.project_api_key, "batch": events}, timeout=30)
    assert resp.status_code == 400
    assert resp.text.startswith("maximum event size exceeded: Event payload too large for Kafka: ")
    assert sb.events()["distinct_id"].tolist() == ["before"]
    # under the limit as a message (its escapes and envelope counted) it is stored
    fits = {"event": "e", "distinct_id": "fits", "properties": {"blob": "x" * (EVENT_LIMIT - 2000)}}
    resp = httpx.post(f"{sb.url}/batch/", json={"api_key": sb.project_api_key, "batch": [fits]}, timeout=30)
    assert resp.status_code == 200
    quotes = {"event": "e", "distinct_id": "quotes", "properties": {"q": '"' * (EVENT_LIMIT // 2)}}
    resp = httpx.post(f"{sb.url}/batch/", json={"api_key": sb.project_api_key, "batch": [quotes]}, timeout=30)
    assert resp.status_code == 400  # 0.5 MB of quotes: each is escaped twice, over 1,000,000 bytes


def test_decompressed_body_past_the_budget_is_event_too_big(empty_sandbox: Any) -> None:
    """`rust/capture/src/payload/decompression.rs` (gzip past the limit -> `EventTooBig`,
    "Decompressed payload would exceed ..."), with the budget of `integration_wire_body_limits.rs`."""
    sb = empty_sandbox
    packed = gzip.compress(
        b'{"api_key":"' + sb.project_api_key.encode() + b'","batch":[' + b" " * (101 * 1024 * 1024) + b"]}"
    )
    resp = httpx.post(f"{sb.url}/batch/", content=packed, headers={"Content-Encoding": "gzip"}, timeout=120)
    assert resp.status_code == 400 and "Decompressed payload would exceed" in resp.text
    assert sb.events().empty


def test_event_names_over_200_characters_are_refused(empty_sandbox: Any) -> None:
    """`rust/capture/src/v1/analytics/constants.rs` `CAPTURE_V1_MAX_EVENT_NAME_LENGTH` (200)."""
    sb = empty_sandbox
    batch = [{"event": "n" * 201, "distinct_id": "d"}]
    resp = httpx.post(f"{sb.url}/batch/", json={"api_key": sb.project_api_key, "batch": batch})
    assert resp.status_code == 400 and "200" in resp.text
    ok = [{"event": "n" * 200, "distinct_id": "d"}]
    assert (
        httpx.post(f"{sb.url}/batch/", json={"api_key": sb.project_api_key, "batch": ok}).status_code == 200
    )


def test_the_client_refuses_over_size_events_and_long_names_with_the_reason(empty_sandbox: Any) -> None:
    df = pd.DataFrame(
        {
            "event": ["ok", "n" * 201, "ok", "ok"],
            "distinct_id": ["a", "b", "c", "d"],
            "timestamp": pd.Timestamp("2026-11-20T10:00:00Z"),
            "blob": [None, None, "x" * (EVENT_LIMIT - 100), '"' * (EVENT_LIMIT // 2)],
        }
    )
    with client_for(empty_sandbox, keys="project") as client:
        report = capture_frame(client, df)
    assert report["status"].tolist() == ["sent", "refused", "refused", "refused"]
    assert "200" in report["reason"].iloc[1]
    assert "1,000,000-byte limit" in report["reason"].iloc[2]
    assert "1,000,000-byte limit" in report["reason"].iloc[3]  # escaped quotes counted
    assert empty_sandbox.events()["distinct_id"].tolist() == ["a"]


def test_events_stored_before_an_event_too_big_are_reported_sent(
    empty_sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the service refuses a request after storing part of it (400 EventTooBig), the client re-sends
    the parts (the same uuids: nothing doubled) and reports only the over-size event as refused, with the
    service's reason."""
    monkeypatch.setattr(_bulk, "MAX_EVENT_BYTES", 50 * EVENT_LIMIT)  # let the service be the judge
    df = pd.DataFrame(
        {
            "event": ["e"] * 6,
            "distinct_id": [f"u{i}" for i in range(6)],
            "timestamp": pd.Timestamp("2026-11-20T10:00:00Z") + pd.to_timedelta(range(6), "s"),
            "blob": [None, None, None, "x" * (EVENT_LIMIT + 10), None, None],
        }
    )
    with client_for(empty_sandbox, keys="project") as client:
        report = capture_frame(client, df)
    assert report["status"].tolist() == ["sent"] * 3 + ["refused"] + ["sent"] * 2
    assert "maximum event size exceeded" in report["reason"].iloc[3]
    stored = empty_sandbox.events()
    assert sorted(stored["distinct_id"]) == ["u0", "u1", "u2", "u4", "u5"] and stored["uuid"].is_unique

"""Issue 12 finding 7: body limits hold while the body streams in, on every endpoint and before
authentication; capture limits the decompressed size and the number of events; a large batch never holds
other requests up for more than a fraction of a second."""

from __future__ import annotations

import gc
import gzip
import json
import select
import socket
import threading
import time
from typing import Any
from urllib.parse import urlparse

import httpx
import pytest

from analytics_nb.sandbox import Sandbox, start

MAX_EVENTS = 10_000  # analytics_nb.sandbox._resources.capture.MAX_EVENTS


@pytest.fixture(scope="module")
def sb() -> Sandbox:
    with start(seed="demo") as sandbox:
        yield sandbox


def _chunked_upload(sb: Sandbox, path: str, *, total: int = 64 * 1024 * 1024) -> tuple[int, int]:
    """Send a chunked body of up to `total` bytes without a key; return (status, bytes sent before the
    server answered)."""
    url = urlparse(sb.url)
    sock = socket.create_connection((url.hostname, url.port), timeout=10)
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nHost: {url.hostname}\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\n\r\n".encode()
    )
    chunk = b"%x\r\n%s\r\n" % (65536, b" " * 65536)
    sent = 0
    sock.settimeout(2)
    try:
        while sent < total:
            if select.select([sock], [], [], 0)[0]:
                break  # the server answered: stop sending
            try:
                sock.sendall(chunk)
            except (TimeoutError, OSError):
                break  # the server stopped reading
            sent += 65536
        sock.settimeout(10)
        head = sock.recv(4096).decode("latin-1")
    finally:
        sock.close()
    return int(head.split(" ", 2)[1]), sent


@pytest.mark.parametrize(
    "path",
    [
        "/api/projects/@current/session_recording_playlists/",
        "/api/projects/@current/feature_flags/",
        "/api/organizations/@current/pipeline_transformations/",
        "/batch/",
        "/decide/",
    ],
)
def test_a_chunked_body_is_refused_while_it_streams_and_before_authentication(sb: Sandbox, path: str) -> None:
    status, sent = _chunked_upload(sb, path)
    assert status == 413
    # stopped near the endpoint's limit (20 MB at most, plus what socket buffers hold), not after all 64 MB
    assert sent < 40 * 1024 * 1024
    assert httpx.get(f"{sb.url}/_sandbox/health").status_code == 200


def test_a_gzip_bomb_of_tiny_events_is_refused_by_count(sb: Sandbox) -> None:
    tiny = '{"event":"e","distinct_id":"d"}'
    events = ",".join([tiny] * 600_000)
    body = f'{{"api_key":"{sb.project_api_key}","batch":[{events}]}}'
    packed = gzip.compress(body.encode(), 9)
    assert len(packed) < 200_000 and len(body) < 20 * 1024 * 1024
    before = len(sb.events())
    resp = httpx.post(f"{sb.url}/batch/", content=packed, headers={"Content-Encoding": "gzip"}, timeout=60)
    assert resp.status_code == 413 and str(MAX_EVENTS) in resp.text
    assert len(sb.events()) == before


def test_a_decompressed_body_past_the_limit_is_refused(sb: Sandbox) -> None:
    event = {"event": "e", "distinct_id": "d", "properties": {"pad": "x" * (21 * 1024 * 1024)}}
    packed = gzip.compress(json.dumps({"api_key": sb.project_api_key, "batch": [event]}).encode())
    resp = httpx.post(f"{sb.url}/batch/", content=packed, headers={"Content-Encoding": "gzip"}, timeout=60)
    assert resp.status_code == 400 and "size" in resp.text


def test_a_large_batch_does_not_hold_other_requests_up(sb: Sandbox) -> None:
    batch = [
        {"event": "big", "distinct_id": f"user-{i:05d}", "properties": {"$set": {"n": i}}}
        for i in range(MAX_EVENTS)
    ]
    body = json.dumps({"api_key": sb.project_api_key, "batch": batch}).encode()
    done = threading.Event()
    result: list[int] = []

    def send() -> None:
        result.append(httpx.post(f"{sb.url}/batch/", content=body, timeout=120).status_code)
        done.set()

    decide = {"api_key": sb.project_api_key, "distinct_id": "user-00001"}
    # The sandbox shares this process: late in the whole suite a full collection over every earlier test's
    # objects held the GIL for ~1 s (0.96 s here, 0.004 s for every other decide; the test alone passes).
    # Objects made before the window are frozen so that pause is not charged to the sandbox.
    gc.collect()
    gc.freeze()
    try:
        waits = _decide_waits_during(sb, decide=decide, send=send, done=done)
    finally:
        gc.unfreeze()
    assert result == [200]
    assert len(waits) >= 3  # decide kept being answered while the batch was stored
    assert max(waits) < 0.75, f"slowest decide during the batch: {max(waits):.2f}s"


def _decide_waits_during(
    sb: Sandbox, *, decide: dict[str, str], send: Any, done: threading.Event
) -> list[float]:
    """How long each decide took while `send` stored the batch in another thread."""
    with httpx.Client(base_url=sb.url, timeout=30) as http:
        http.post("/flags/?v=2", json=decide)  # warm
        sender = threading.Thread(target=send)
        sender.start()
        waits = []
        while not done.is_set():
            started = time.monotonic()
            assert http.post("/flags/?v=2", json=decide).status_code == 200
            waits.append(time.monotonic() - started)
        sender.join()
    return waits

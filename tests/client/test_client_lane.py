"""The lean HTTP/1.1 lane (``client/_lane.py``) that carries remote simulation's ``/flags`` POSTs: the same
answers as httpx's transport, no httpx request built per answered row, the cap, the deadline, framing
(chunked, close-delimited, gzip), a server that hangs up, and what it never carries (keys, odd headers)."""

from __future__ import annotations

import asyncio
import gzip
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pandas as pd
import pytest

from _clients import client_for
from analytics_nb.client import AdaptiveLimit, ClientConfig, Core
from analytics_nb.client._lane import Lane, header_block
from analytics_nb.errors import NetworkError, ResponseFormatError, ValidationError
from analytics_nb.simulation import simulate

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return head + await reader.readexactly(length)


@asynccontextmanager
async def _server(
    answers: list[bytes], *, close_after: bool = False
) -> AsyncIterator[tuple[str, list[bytes]]]:
    """A raw HTTP server on 127.0.0.1 answering each request with the next of ``answers`` (the last one
    repeats); ``close_after`` hangs up after every answer. Yields its URL and the requests it read."""
    seen: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                seen.append(await _read_request(reader))
                writer.write(answers[min(len(seen), len(answers)) - 1])
                await writer.drain()
                if close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", seen
    finally:
        server.close()


def _answer(body: bytes, *extra: bytes, status: bytes = b"200 OK") -> bytes:
    head = (
        b"HTTP/1.1 "
        + status
        + b"\r\nContent-Type: application/json\r\n"
        + b"".join(e + b"\r\n" for e in extra)
    )
    return head + b"Content-Length: %d\r\n\r\n" % len(body) + body


async def _post(url: str, **config: Any) -> httpx.Response:
    core = Core(ClientConfig(app_url=url, ingest_url=url, retry_backoff=0.01, **config))
    try:
        return await core.request(
            "POST", "/flags/", service="ingest", params={"v": "4"}, json={"a": 1}, idempotent=True,
            auth=False, pacer=AdaptiveLimit(4),
        )  # fmt: skip
    finally:
        await core.aclose()


def test_simulate_goes_through_the_lane_with_the_answers_of_httpx(
    sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lane and httpx's transport give the same frame; through the lane no ``httpx.Request`` is built
    for an answered row (each cost about 30 µs of client CPU, with the rest of httpx's path 0.3 ms a row)."""
    df = pd.DataFrame({"distinct_id": [f"u{i}" for i in range(40)], "plan": ["pro", "free"] * 20})
    built = []
    original = httpx.AsyncClient.build_request

    def counting(self: httpx.AsyncClient, *args: Any, **kwargs: Any) -> httpx.Request:
        built.append(args[1] if len(args) > 1 else kwargs.get("url"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(httpx.AsyncClient, "build_request", counting)
    with client_for(sandbox) as client:
        lane = simulate(df, client=client, reasons=True, payloads=True).frame
        assert client.core.bulk_transport == "lane"
        assert client.core._lane is not None and client.core._lane.sent == len(df)
    decides = [u for u in built if "/flags/" in str(u) and "definitions" not in str(u)]
    assert decides == []
    with client_for(sandbox, http_transport="httpx") as client:
        plain = simulate(df, client=client, reasons=True, payloads=True).frame
        assert client.core.bulk_transport == "httpx" and client.core._lane is None
    pd.testing.assert_frame_equal(lane, plain)


def test_the_lane_never_carries_a_key(sandbox: Any) -> None:
    with client_for(sandbox) as client:
        client.playlists.list()  # personal key: httpx's transport
        client.decide("someone")  # not paced: httpx's transport
        assert client.core._lane is None


def test_header_block_refuses_line_breaks_and_non_latin1() -> None:
    assert header_block({"X-Forwarded-For": "1.2.3.4"}) == b"X-Forwarded-For: 1.2.3.4\r\n"
    assert header_block({"X-Forwarded-For": "1.2.3.4\r\nX-Evil: 1"}) is None
    assert header_block({"X-Forwarded-For": "1.2.3.4\nX-Evil: 1"}) is None
    assert header_block({"X-Name": "ümlaut ☃"}) is None


@pytest.mark.parametrize(
    "answer",
    [
        _answer(b'{"ok":true}'),
        b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"ok"\r\n6\r\n:true}\r\n0\r\n\r\n',
        _answer(gzip.compress(b'{"ok":true}'), b"Content-Encoding: gzip"),
    ],
    ids=["content-length", "chunked", "gzip"],
)
def test_framings_are_read(answer: bytes) -> None:
    async def go() -> tuple[httpx.Response, list[bytes]]:
        async with _server([answer]) as (url, seen):
            return await _post(url), seen

    response, seen = asyncio.run(go())
    assert response.status_code == 200 and response.json() == {"ok": True}
    request = seen[0]
    assert request.startswith(b"POST /flags/?v=4 HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"\r\nContent-Type: application/json\r\n" in request and request.endswith(b'{"a":1}')
    assert b"Authorization" not in request


def test_an_answer_delimited_by_the_close_is_read() -> None:
    async def go() -> httpx.Response:
        async with _server(
            [b'HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{"ok":true}'], close_after=True
        ) as (url, _):
            return await _post(url)

    assert asyncio.run(go()).json() == {"ok": True}


def test_a_server_that_hangs_up_after_each_answer_is_reconnected() -> None:
    async def go() -> list[int]:
        async with _server([_answer(b"{}")], close_after=True) as (url, _seen):
            core = Core(ClientConfig(app_url=url, ingest_url=url, retry_backoff=0.01))
            pacer = AdaptiveLimit(1)
            out = []
            for _ in range(3):
                r = await core.request(
                    "POST", "/flags/", service="ingest", json={}, auth=False, pacer=pacer, idempotent=True
                )
                out.append(r.status_code)
            await core.aclose()
            return out

    assert asyncio.run(go()) == [200, 200, 200]


def test_the_answer_cap_holds_on_the_lane() -> None:
    body = b"[" + b"1," * 1500 + b"1]"

    async def go(answer: bytes) -> None:
        async with _server([answer]) as (url, _):
            await _post(url, max_answer_bytes=2048)

    for answer in (
        _answer(body),  # declared
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(body), body),
        _answer(gzip.compress(body), b"Content-Encoding: gzip"),  # 3 kB once decompressed
    ):
        with pytest.raises(ResponseFormatError, match="max_answer_bytes=2048"):
            asyncio.run(go(answer))


def test_a_malformed_answer_is_a_network_error_after_retries() -> None:
    async def go() -> None:
        async with _server([b"NOT HTTP AT ALL\r\n\r\n"]) as (url, seen):
            try:
                await _post(url, max_retries=2)
            finally:
                assert len(seen) == 3  # retried: the request is idempotent

    with pytest.raises(NetworkError, match="malformed HTTP answer"):
        asyncio.run(go())


def test_a_refused_connection_is_a_network_error() -> None:
    async def go() -> None:
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        await _post(f"http://127.0.0.1:{port}", max_retries=0)

    with pytest.raises(NetworkError, match="could not connect"):
        asyncio.run(go())


def test_the_deadline_bounds_a_slow_answer() -> None:
    async def go() -> None:
        async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await _read_request(reader)
            await asyncio.sleep(5)

        server = await asyncio.start_server(silent, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            await _post(f"http://127.0.0.1:{port}", timeout=0.2, max_retries=0)
        finally:
            server.close()

    with pytest.raises(NetworkError, match="timeout"):
        asyncio.run(go())


def test_an_error_status_keeps_its_request_for_the_error_text() -> None:
    async def go() -> None:
        async with _server([_answer(b'{"detail":"nope"}', status=b"400 Bad Request")]) as (url, _):
            await _post(url)

    with pytest.raises(ValidationError, match=r"POST http://127.0.0.1:\d+/flags/ failed with HTTP 400: nope"):
        asyncio.run(go())


def test_lane_repr_has_no_secrets() -> None:
    assert repr(Lane({"User-Agent": "x"}, max_idle=4)) == "Lane(idle=0, sent=0)"


def test_the_ssl_context_is_built_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Building one reads the CA bundle (20-60 ms); a client built a new one each time its pool grew (the
    first simulate of a session, and each larger run after it)."""
    from analytics_nb.client import _transport

    calls = []
    original = httpx.create_ssl_context

    def counting(*args: Any, **kwargs: Any) -> Any:
        if not isinstance(kwargs.get("verify", args[0] if args else True), ssl.SSLContext):
            calls.append(1)  # a new context (given one, httpx returns it as it is)
        return original(*args, **kwargs)

    monkeypatch.setattr(httpx, "create_ssl_context", counting)
    monkeypatch.setattr(_transport, "_SSL_CONTEXT", [])
    for choice in ("httpx", "auto", "httpx"):
        _transport.make_transport(choice, 10)
    assert len(calls) == 1


def test_a_connection_is_not_reused_on_another_event_loop(sandbox: Any) -> None:
    """An AsyncClient used under two ``asyncio.run`` calls: the server keeps the first loop's connection
    open, but no loop reads it any more; reusing it waited for the timeout before a retry."""
    core = Core(ClientConfig(app_url=sandbox.url, ingest_url=sandbox.url, timeout=3, retry_backoff=0.01))
    body = {"api_key": sandbox.project_api_key, "distinct_id": "someone"}

    async def post() -> int:
        r = await core.request(
            "POST", "/flags/", service="ingest", params={"v": "4"}, json=body, auth=False,
            pacer=AdaptiveLimit(1), idempotent=True,
        )  # fmt: skip
        return r.status_code

    assert asyncio.run(post()) == 200
    started = time.perf_counter()
    assert asyncio.run(post()) == 200
    assert time.perf_counter() - started < 2
    assert core._lane is not None and core._lane.sent == 2
    asyncio.run(core.aclose())


def test_a_body_still_arriving_at_the_deadline_is_not_retried() -> None:
    """As on httpx's path: an answer whose head came but whose body trickles past ``timeout`` fails at once
    (a server that slow would hold the run again), where no answer at all is retried."""

    async def go() -> int:
        tries = []

        async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await _read_request(reader)
            tries.append(1)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{")
            await writer.drain()
            await asyncio.sleep(5)

        server = await asyncio.start_server(trickle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            with pytest.raises(NetworkError, match=r"did not complete within timeout=0\.3 s"):
                await _post(f"http://127.0.0.1:{port}", timeout=0.3, max_retries=3)
        finally:
            server.close()
        return len(tries)

    assert asyncio.run(go()) == 1


def test_each_origin_gets_its_own_host_header() -> None:
    """The request head is cached per URL: two servers with the same path must each see their own Host."""

    async def go() -> tuple[list[bytes], list[bytes], str, str]:
        lane = Lane({"User-Agent": "t"}, max_idle=4)
        async with _server([_answer(b"{}")]) as (one, seen_one), _server([_answer(b"{}")]) as (two, seen_two):
            for url in (one, two):
                await lane.post(httpx.URL(url + "/flags/?v=4"), b"", b"{}", limit=10_000, timeout=5)
        lane.close()
        return seen_one, seen_two, one, two

    seen_one, seen_two, one, two = asyncio.run(go())
    assert b"\r\nHost: " + one.split("//")[1].encode() + b"\r\n" in seen_one[0]
    assert b"\r\nHost: " + two.split("//")[1].encode() + b"\r\n" in seen_two[0]

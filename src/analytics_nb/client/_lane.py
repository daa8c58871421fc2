"""A lean HTTP/1.1 lane for bulk unauthenticated POSTs (remote simulation's ``/flags`` requests).

A paced bulk run (``Core.request(pacer=...)``, ``auth=False``) sends thousands of small POSTs to one URL.
Through httpx and aiohttp each costs about 0.4-0.6 ms of client CPU (request and response objects built
twice, header models, stream wrappers); the service's answer itself takes a few microseconds to read. On a
machine where client and service share the CPU (a sandbox, a notebook) that CPU is the run's speed. This lane
writes the request bytes on a kept-alive asyncio connection and reads the answer with ``httptools`` (llhttp,
the parser of Node.js and uvicorn; a base dependency): about 0.1-0.15 ms a request.

It is only a connection layer: `Core` keeps everything else (retries and their backoff, 429 pacing, the
deadline of the whole request, the answer cap, redirects and error texts), and uses httpx's transport instead
whenever the lane does not apply: a request with credentials (no key ever goes through the lane), a custom
transport (tests), ``http_transport="httpx"``, a proxy in the environment (httpx honours it, the lane does
not), or a header value that is not plain latin-1 text on one line.

Errors are httpx's, so `Core` treats them as it treats httpx's own: ``httpx.ConnectError`` (nothing sent),
``httpx.RemoteProtocolError`` (the connection closed or the answer was malformed), ``httpx.DecodingError``
(a compressed answer that does not decompress). Answers may be gzip or deflate (``Accept-Encoding``), capped
after decompression as `Core` caps httpx's.
"""

from __future__ import annotations

import asyncio
import ssl
import time
import zlib
from collections.abc import Mapping

import httptools
import httpx

from analytics_nb.client._transport import ssl_context

__all__ = ["Lane", "LaneDeadline", "LaneTooLarge", "header_block", "lane_applies"]

#: Idle connections older than this are closed rather than reused (as the transports' keep-alive expiry).
KEEPALIVE_EXPIRY = 5.0
_ENCODINGS = {b"gzip": 16 + zlib.MAX_WBITS, b"deflate": zlib.MAX_WBITS, b"identity": 0}


class LaneDeadline(Exception):
    """The whole exchange ran past its ``timeout`` while the answer's body was arriving."""

    def __init__(self, timeout: float) -> None:
        super().__init__(timeout)
        self.timeout = timeout


class LaneTooLarge(Exception):
    """An answer's body is over the cap (``partial``: counted while reading, else declared)."""

    def __init__(self, size: int, status: int, *, partial: bool) -> None:
        super().__init__(size)
        self.size, self.status, self.partial = size, status, partial


def header_block(headers: Mapping[str, str]) -> bytes | None:
    """``Name: value\\r\\n`` lines of ``headers``, or None when one cannot be written as is (a line break, a
    character outside latin-1): such a request goes through httpx, which refuses it with its own error."""
    lines = []
    for name, value in headers.items():
        text = f"{name}: {value}\r\n"
        if "\r" in text[:-2] or "\n" in text[:-2]:
            return None
        lines.append(text)
    try:
        return "".join(lines).encode("latin-1")
    except UnicodeEncodeError:
        return None


class _Connection(asyncio.Protocol):
    """One kept-alive HTTP/1.1 connection: one request at a time, its answer parsed by httptools."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.waiter: asyncio.Future[tuple[int, list[tuple[bytes, bytes]], bytes]] | None = None
        self.closed = False
        self.idle_since = 0.0
        self.loop = asyncio.get_running_loop()  # a connection serves the event loop it was made on only
        self._reset()

    def _reset(self) -> None:
        self.headers: list[tuple[bytes, bytes]] = []
        self.body: list[bytes] = []
        self.size = 0
        self.headers_done = False
        self.framed = False  # Content-Length or chunked: the end of the answer is known without a close

    # -- asyncio.Protocol -----------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            cause = exc.__context__  # an exception of a callback (the cap) is the context of httptools' own
            if isinstance(cause, LaneTooLarge):
                self._fail(cause)
            else:
                self._fail(httpx.RemoteProtocolError(f"the server sent a malformed HTTP answer ({exc})"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        if self.headers_done and not self.framed:  # an answer delimited by the close: it is complete
            self._complete()
            return
        waiter.set_exception(httpx.RemoteProtocolError("the server closed the connection before answering"))

    # -- httptools callbacks --------------------------------------------------------------------------
    def on_message_begin(self) -> None:
        self._reset()

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))
        lower = name.lower()
        if lower == b"content-length":
            self.framed = True
            if value.isdigit() and int(value) > self.limit:
                raise LaneTooLarge(int(value), self.parser.get_status_code(), partial=False)
        elif lower == b"transfer-encoding":
            self.framed = True

    def on_headers_complete(self) -> None:
        self.headers_done = True

    def on_body(self, body: bytes) -> None:
        self.size += len(body)
        if self.size > self.limit:
            raise LaneTooLarge(self.size, self.parser.get_status_code(), partial=True)
        self.body.append(body)

    def on_message_complete(self) -> None:
        self._complete()

    # -- the exchange ----------------------------------------------------------------------------------
    def _complete(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result((self.parser.get_status_code(), self.headers, b"".join(self.body)))
        if not self.parser.should_keep_alive():
            self.close()

    def _fail(self, exc: BaseException) -> None:
        self.close()
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc)

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            try:
                self.transport.close()
            except RuntimeError:  # its event loop is closed (an AsyncClient used under another asyncio.run)
                pass

    def send(self, data: bytes) -> asyncio.Future[tuple[int, list[tuple[bytes, bytes]], bytes]]:
        assert self.transport is not None
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(data)
        return self.waiter


def _decompress(
    headers: list[tuple[bytes, bytes]], content: bytes, status: int, limit: int
) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The headers and body decoded per its ``Content-Encoding`` (gzip, deflate or none; the header is then
    dropped), refusing a body that decompresses past ``limit`` bytes (`LaneTooLarge`) as it decompresses."""
    for name, value in headers:
        if name.lower() != b"content-encoding":
            continue
        wbits = _ENCODINGS.get(value.strip().lower())
        if wbits is None:
            raise httpx.DecodingError(f"the answer is encoded as {value.decode('latin-1')!r}")
        plain = [(n, v) for n, v in headers if n.lower() not in (b"content-encoding", b"content-length")]
        if not wbits or not content:
            return plain, content
        try:
            inflater = zlib.decompressobj(wbits)
            body = inflater.decompress(content, limit + 1)
        except zlib.error as exc:
            raise httpx.DecodingError(f"the compressed answer does not decompress ({exc})") from None
        if len(body) > limit:
            raise LaneTooLarge(len(body), status, partial=True)
        return plain, body
    return headers, content


class Lane:
    """Kept-alive HTTP/1.1 connections per origin, for `Core`'s paced bulk POSTs (see the module doc)."""

    def __init__(self, default_headers: Mapping[str, str], *, max_idle: int) -> None:
        block = header_block({**default_headers, "Accept-Encoding": "gzip, deflate"})
        assert block is not None
        self._defaults = block
        self.max_idle = max_idle
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._heads: dict[tuple[str, bytes, bytes], bytes] = {}
        self.sent = 0
        """Requests this lane sent (for tests and reports)."""

    def _head(self, url: httpx.URL) -> bytes:
        key = (url.scheme, url.netloc, url.raw_path)
        head = self._heads.get(key)
        if head is None:
            if len(self._heads) >= 64:
                self._heads.clear()
            head = b"POST " + url.raw_path + b" HTTP/1.1\r\nHost: " + url.netloc + b"\r\n" + self._defaults
            self._heads[key] = head
        return head

    async def _connection(self, url: httpx.URL, limit: int) -> _Connection:
        port = url.port or (443 if url.scheme == "https" else 80)
        host = url.raw_host.decode("ascii")  # IDNA-encoded, as the resolver and TLS want it
        idle = self._idle.get((url.scheme, url.host, port))
        now = time.monotonic()
        loop = asyncio.get_running_loop()
        while idle:
            conn = idle.pop()
            if not conn.closed and conn.loop is loop and now - conn.idle_since < KEEPALIVE_EXPIRY:
                conn.limit = limit
                return conn
            conn.close()
        tls = None
        if url.scheme == "https":
            tls = ssl_context()  # httpx's: certifi, SSL_CERT_FILE honoured
        try:
            _transport, conn = await loop.create_connection(
                lambda: _Connection(limit), host, port, ssl=tls, server_hostname=host if tls else None
            )
        except (OSError, ssl.SSLError) as exc:
            raise httpx.ConnectError(f"could not connect to {url.host}:{port} ({exc})") from None
        return conn

    def _keep(self, url: httpx.URL, conn: _Connection) -> None:
        port = url.port or (443 if url.scheme == "https" else 80)
        idle = self._idle.setdefault((url.scheme, url.host, port), [])
        if conn.closed or len(idle) >= self.max_idle:
            conn.close()
            return
        conn.idle_since = time.monotonic()
        idle.append(conn)

    async def post(
        self, url: httpx.URL, headers: bytes, body: bytes, *, limit: int, timeout: float
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """POST ``body`` (with the extra ``headers`` lines, from `header_block`) to ``url``; returns the
        status, the raw headers and the decoded body. A cancelled or failed exchange closes its connection.

        ``timeout`` bounds the whole exchange (connection, request, answer): past it before the answer's head
        arrived, ``httpx.ReadTimeout`` (retried as any); with the body still arriving, `LaneDeadline`."""
        conn: _Connection | None = None
        done = False
        try:
            async with asyncio.timeout(timeout) as scope:
                conn = await self._connection(url, limit)
                request = self._head(url) + headers + b"Content-Length: %d\r\n\r\n" % len(body) + body
                status, raw, content = await conn.send(request)
                done = True
        except TimeoutError:
            if not scope.expired():
                raise
            if conn is not None and conn.headers_done:
                raise LaneDeadline(timeout) from None
            raise httpx.ReadTimeout(f"no answer within the timeout ({timeout:g} s)") from None
        finally:
            if conn is not None:
                conn.waiter = None
                if not done:
                    conn.close()
        self.sent += 1
        assert conn is not None
        self._keep(url, conn)
        raw, content = _decompress(raw, content, status, limit)
        return status, raw, content

    def close(self) -> None:
        """Close every idle connection."""
        for idle in self._idle.values():
            for conn in idle:
                conn.close()
        self._idle.clear()

    def __repr__(self) -> str:
        idle = sum(len(v) for v in self._idle.values())
        return f"Lane(idle={idle}, sent={self.sent})"


def lane_applies(url: httpx.URL) -> bool:
    """Whether the lane can carry a request to ``url`` (plain http or https, a host)."""
    return url.scheme in ("http", "https") and bool(url.host)

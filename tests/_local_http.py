"""A tiny HTTP server on 127.0.0.1 for answers the sandbox cannot give (an HTML 200, a 301 with a JSON body,
a broken gzip body, a `next` link that repeats): real HTTP over a socket, no httpx mocking.

``routes`` maps a path (query ignored) to a callable ``(handler) -> (status, headers, body)`` or to a fixed
``(status, headers, body)``; every request is recorded as ``(method, path, headers)``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

Answer = tuple[int, dict[str, str], bytes]
Route = Answer | Callable[[BaseHTTPRequestHandler], Answer]


class LocalServer:
    """The running server: ``url``, ``routes`` (editable), ``requests`` seen."""

    def __init__(self, routes: dict[str, Route]) -> None:
        self.routes = routes
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                path = urlsplit(self.path).path
                # header names in Title-Case: a transport may send them in lower case (names are case-blind)
                server.requests.append(
                    (self.command, self.path, {k.title(): v for k, v in self.headers.items()})
                )
                route = server.routes.get(path)
                if route is None:
                    answer: Answer = (404, {"Content-Type": "application/json"}, b'{"detail":"Not found."}')
                elif callable(route):
                    answer = route(self)
                else:
                    answer = route
                status, headers, body = answer
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _answer

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def start(self) -> LocalServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@contextmanager
def local_server(routes: dict[str, Route]) -> Iterator[LocalServer]:
    """Run a ``LocalServer`` for the block."""
    server = LocalServer(routes).start()
    try:
        yield server
    finally:
        server.stop()


def json_answer(body: bytes | str, status: int = 200, **headers: str) -> Answer:
    """A fixed JSON answer."""
    data = body.encode() if isinstance(body, str) else body
    return status, {"Content-Type": "application/json", **headers}, data

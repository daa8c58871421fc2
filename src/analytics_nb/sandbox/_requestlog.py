"""The in-memory request log behind `Sandbox.requests()`: method, path, query, status, body (first 64 KB),
time; no headers; keys and secret fields redacted when an entry is first read."""

from __future__ import annotations

import re
import threading
from collections import deque
from dataclasses import dataclass
from datetime import datetime

from analytics_nb.wire import redact as wire_redact

__all__ = ["LOG_BODY_LIMIT", "LoggedRequest", "RequestLog", "redact"]

#: Bytes of each request body the log keeps.
LOG_BODY_LIMIT = 65_536
_SECRET_FIELDS_RE = re.compile(r'("(?:personal_api_key|api_key|token|secret_api_key)"\s*:\s*)"[^"]*"')
_SECRET_QUERY_RE = re.compile(r"((?:^|&)(?:personal_api_key|api_key|token)=)[^&]*")


def redact(text: str) -> str:
    """Replace PostHog keys (``analytics_nb.wire.redact``) and secret fields in logged text."""
    text = wire_redact(text)
    return _SECRET_FIELDS_RE.sub(lambda m: m.group(1) + '"***"', text)


@dataclass(frozen=True)
class LoggedRequest:
    """One entry of the request log (no headers, secrets redacted)."""

    method: str
    path: str
    query: str
    status: int | None
    body: str
    at: datetime


class RequestLog:
    """The in-memory request log behind `Sandbox.requests()` (the newest `maxlen` requests).

    The hot path only appends the raw fields; the secrets are redacted when an entry is first read (once per
    entry), so the decide/flags path pays no regex per request and nothing unredacted ever leaves the log."""

    def __init__(self, maxlen: int = 20_000) -> None:
        self._entries: deque[LoggedRequest | _RawEntry] = deque(maxlen=maxlen)
        self._lock = threading.Lock()

    def append(self, entry: LoggedRequest) -> None:
        """Record a finished request."""
        with self._lock:
            self._entries.append(entry)

    def append_raw(
        self, method: str, path: str, query: str, status: int | None, body: bytes, at: datetime
    ) -> None:
        """Record a finished request whose query and body are still to be redacted."""
        with self._lock:
            self._entries.append((method, path, query, status, body, at))

    def entries(self) -> list[LoggedRequest]:
        """A snapshot of the log, oldest first."""
        with self._lock:
            raw = list(self._entries)  # appends wait for the lock, so nothing is lost below
            out: list[LoggedRequest] = []
            changed = False
            for item in raw:
                if isinstance(item, tuple):
                    item = _redacted(*item)
                    changed = True
                out.append(item)
            if changed:  # keep the redacted entries: each is redacted once
                self._entries.clear()
                self._entries.extend(out)
            return out

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()


_RawEntry = tuple[str, str, str, "int | None", bytes, datetime]


def _redacted(
    method: str, path: str, query: str, status: int | None, body: bytes, at: datetime
) -> LoggedRequest:
    return LoggedRequest(
        method=method,
        path=path,
        query=_SECRET_QUERY_RE.sub(r"\1***", redact(query)),
        status=status,
        body=redact(body.decode("utf-8", errors="replace")),
        at=at,
    )

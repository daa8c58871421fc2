"""How values travel: the one missing-value test, the one JSON encoding of Python/numpy/pandas values, UUIDv7
event ids and API-key redaction.

The lowest part: it imports nothing else from the package, so the client, capture, simulation, frames and the
sandbox (which must not import the client) all share these instead of keeping their own copies.
"""

from __future__ import annotations

from analytics_nb.wire._ids import uuid7
from analytics_nb.wire._json import json_default
from analytics_nb.wire._missing import is_missing
from analytics_nb.wire._secrets import KEY_PATTERN, redact

__all__ = ["KEY_PATTERN", "is_missing", "json_default", "redact", "uuid7"]

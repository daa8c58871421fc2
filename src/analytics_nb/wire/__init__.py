"""How values travel: UUIDv7 event ids, the one distinct_id check and API-key redaction here; the one
missing-value test and the one JSON encoding of pandas/numpy values in ``analytics_nb.wire.cells`` (which
needs pandas, so it is imported on its own).

The lowest part: it imports nothing else from the package, so the client, capture, simulation, frames and the
sandbox (which must not import the client) all share these instead of keeping their own copies.
"""

from __future__ import annotations

from analytics_nb.wire._distinct_ids import check_distinct_id, distinct_id_problem
from analytics_nb.wire._ids import uuid7
from analytics_nb.wire._secrets import KEY_PATTERN, redact

__all__ = ["KEY_PATTERN", "check_distinct_id", "distinct_id_problem", "redact", "uuid7"]

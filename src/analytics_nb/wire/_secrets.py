"""API-key redaction: nothing shaped like a PostHog key reaches a repr, a log, an error or an export."""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["KEY_PATTERN", "redact"]

KEY_PATTERN = re.compile(r"\b(ph[xcas]_)[A-Za-z0-9_\-]{6,}")
"""PostHog keys: personal ``phx_``, project ``phc_``, ``pha_`` and ``phs_`` tokens (prefix kept)."""


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Replace each given secret, and anything shaped like a PostHog key, by ``***`` (the prefix stays)."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return KEY_PATTERN.sub(r"\1***", text)

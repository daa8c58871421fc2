"""Hypothesis example counts by profile: the full count in the whole suite (``HYPOTHESIS_PROFILE=ci``, which
``scripts/test`` sets), a fifth of it (at least 10) while editing (the default ``dev`` profile)."""

from __future__ import annotations

import os

FULL = os.environ.get("HYPOTHESIS_PROFILE", "dev") == "ci"


def examples(full: int) -> int:
    """The number of examples to run for a test written for ``full`` examples."""
    return full if FULL else max(10, full // 5)

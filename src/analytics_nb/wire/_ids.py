"""UUIDv7 event ids (RFC 9562): 48-bit Unix milliseconds, then random bits, so ids sort by creation time."""

from __future__ import annotations

import os
import time

__all__ = ["uuid7"]

_VERSION_7 = 0x7000
_VARIANT = 0x8000000000000000


def uuid7(ms: int | None = None, rand: bytes | None = None) -> str:
    """A UUIDv7 string; ``ms`` (Unix milliseconds) and ``rand`` (10 bytes) default to now and random.

    Args:
        ms: Unix time in milliseconds. None: now.
        rand: 10 bytes of randomness. None: from ``os.urandom``.

    Returns:
        The UUIDv7 text.
    """
    if ms is None:
        ms = time.time_ns() // 1_000_000
    if rand is None:
        rand = os.urandom(10)
    r = int.from_bytes(rand, "big")
    rand_a = (r >> 64) & 0xFFF
    rand_b = r & 0x3FFFFFFFFFFFFFFF
    value = (ms & 0xFFFFFFFFFFFF) << 80 | (_VERSION_7 | rand_a) << 64 | _VARIANT | rand_b
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

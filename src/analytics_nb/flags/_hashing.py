"""The deterministic sha1 bucketing hash PostHog uses for rollouts, variants and holdouts."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

#: 15 hex digits of sha1 give a 60-bit integer; dividing by this maps it to [0, 1].
LONG_SCALE = float(0xFFFFFFFFFFFFFFF)


def hash_fraction(flag_key: str, identifier: object, salt: str = "") -> float:
    """The bucket of `identifier` for `flag_key` in [0, 1]: sha1 of ``"{flag_key}.{identifier}{salt}"``.

    Rollouts use ``salt=""`` and variant selection ``salt="variant"``; the value equals
    ``int(sha1(...).hexdigest()[:15], 16) / 0xFFFFFFFFFFFFFFF``.
    """
    return raw_hash(f"{flag_key}.{identifier}{salt}")


def holdout_fraction(identifier: object) -> float:
    """The holdout bucket: sha1 of ``"holdout-{identifier}"`` (a dash, not a dot, as the server does)."""
    return raw_hash(f"holdout-{identifier}")


def raw_hash(text: str) -> float:
    """The bucket fraction of an already-joined hash input."""
    digest = hashlib.sha1(text.encode("utf-8")).digest()
    return (int.from_bytes(digest[:8], "big") >> 4) / LONG_SCALE


def hash_many(prefix: bytes, identifiers: Sequence[bytes], suffix: bytes = b"") -> np.ndarray:
    """Bucket fractions for many identifiers at once: sha1(prefix + id + suffix) for each, as float64.

    The sha1 loop is the only per-element Python work; the 60-bit extraction and scaling are numpy.
    """
    n = len(identifiers)
    if n == 0:
        return np.empty(0, dtype=np.float64)
    # Copying a hash object already fed with the prefix skips OpenSSL's per-object digest set-up, which
    # costs more than hashing a short message.
    copy = hashlib.sha1(prefix).copy
    out: list[bytes] = []
    append = out.append
    if suffix:
        for ident in identifiers:
            h = copy()
            h.update(ident + suffix)
            append(h.digest())
    else:
        for ident in identifiers:
            h = copy()
            h.update(ident)
            append(h.digest())
    digests = b"".join(out)
    # 20-byte digests back to back: take the first 8 bytes of each as a big-endian integer.
    first8 = np.frombuffer(digests, dtype=np.uint8).reshape(n, 20)[:, :8].copy()
    ints = first8.view(">u8").ravel() >> np.uint64(4)
    return ints.astype(np.float64) / LONG_SCALE

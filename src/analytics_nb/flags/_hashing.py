"""The deterministic sha1 bucketing hash PostHog uses for rollouts, variants and holdouts.

One identifier at a time (`hash_fraction`, `raw_hash`) this is hashlib. For a whole column the engine encodes
the identifiers once into an `EncodedIds` (one UTF-8 buffer plus int64 offsets, as Arrow lays out strings)
and `fractions_into` hashes the rows it needs in C (`_sha1column`, built by `pip install` from
_sha1column.c; SHA-NI instructions where the CPU has them). When that extension is not built (no C compiler
at install time, or an unusual platform) the same results come from hashlib, with a one-line warning the
first time.
"""

from __future__ import annotations

import hashlib
import importlib
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np

_native: ModuleType | None
try:
    _native = importlib.import_module("analytics_nb.flags._sha1column")  # the optional C extension
except ImportError:  # not compiled: the hashlib loop below gives the same numbers, slower
    _native = None

#: 15 hex digits of sha1 give a 60-bit integer; dividing by this maps it to [0, 1].
LONG_SCALE = float(0xFFFFFFFFFFFFFFF)

FALLBACK_WARNING = (
    "analytics_nb.flags: the compiled column hasher (_sha1column) is not built, so flag bucketing uses "
    "hashlib (same results, several times slower); reinstall with gcc and the Python headers present"
)
_warned = False


def hash_fraction(flag_key: str, identifier: object, salt: str = "") -> float:
    """The bucket of `identifier` for `flag_key` in [0, 1]: sha1 of ``"{flag_key}.{identifier}{salt}"``.

    Rollouts use ``salt=""`` and variant selection ``salt="variant"``; the value equals
    ``int(sha1(...).hexdigest()[:15], 16) / 0xFFFFFFFFFFFFFFF``.

    Args:
        flag_key: The flag key.
        identifier: The bucketing identifier (the distinct id, a group key or a device id).
        salt: ``""`` for rollouts, ``"variant"`` for variant selection.

    Returns:
        A float in [0, 1].
    """
    return raw_hash(f"{flag_key}.{identifier}{salt}")


def holdout_fraction(identifier: object) -> float:
    """The holdout bucket: sha1 of ``"holdout-{identifier}"`` (a dash, not a dot, as the server does)."""
    return raw_hash(f"holdout-{identifier}")


def raw_hash(text: str) -> float:
    """The bucket fraction of an already-joined hash input."""
    digest = hashlib.sha1(text.encode("utf-8")).digest()
    return (int.from_bytes(digest[:8], "big") >> 4) / LONG_SCALE


def native_impl() -> str | None:
    """Which compiled SHA-1 runs ("shani" with the CPU's SHA extensions, else "portable"), or None when
    the extension is not built and hashlib is used."""
    return None if _native is None else str(_native.IMPL)


class EncodedIds:
    """Identifiers encoded to UTF-8 once: one contiguous buffer and int64 offsets (row i is
    ``data[offsets[i]:offsets[i + 1]]``), so hashing a column never touches a Python object per row."""

    __slots__ = ("data", "offsets")

    def __init__(self, data: bytes | memoryview, offsets: np.ndarray) -> None:
        self.data = data
        self.offsets = offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @classmethod
    def from_strs(cls, texts: Sequence[str]) -> EncodedIds:
        """Encode `texts` (all str). ASCII columns, the usual case, are joined and encoded in one call."""
        n = len(texts)
        offsets = np.zeros(n + 1, dtype=np.int64)
        joined = "".join(texts)
        if joined.isascii():
            np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=n), out=offsets[1:])
            return cls(joined.encode("ascii"), offsets)
        del joined
        encoded = [t.encode("utf-8") for t in texts]
        np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=n), out=offsets[1:])
        return cls(b"".join(encoded), offsets)

    @classmethod
    def from_arrow(cls, array: Any) -> EncodedIds:
        """The identifiers of a pyarrow string / large_string array (or a one-chunk ChunkedArray) without
        copying its text: the data buffer is read in place, only the offsets become int64. A null row reads
        as "" (the caller marks it)."""
        if hasattr(array, "num_chunks"):
            # one chunk (a pandas column, a slice of one) is read in place; combine_chunks would copy it
            array = array.chunk(0) if array.num_chunks == 1 else array.combine_chunks()
        _validity, offsets_buf, data_buf = array.buffers()
        wide = array.type.id == _large_string_id()
        raw = np.frombuffer(offsets_buf, dtype=np.int64 if wide else np.int32)
        offsets = raw[array.offset : array.offset + len(array) + 1].astype(np.int64, copy=False)
        data = memoryview(data_buf).cast("B") if data_buf is not None else memoryview(b"")
        return cls(data, offsets)

    def take(self, positions: np.ndarray) -> EncodedIds:
        """The identifiers at `positions` (int array), as a new column."""
        starts, ends = self.offsets[positions], self.offsets[positions + 1]
        view = memoryview(self.data)
        data = b"".join([view[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)])
        offsets = np.zeros(len(positions) + 1, dtype=np.int64)
        np.cumsum(ends - starts, out=offsets[1:])
        return EncodedIds(data, offsets)


def _large_string_id() -> int:
    import pyarrow as pa

    return int(pa.large_string().id)


def fractions_into(
    prefix: bytes, ids: EncodedIds, suffix: bytes, out: np.ndarray, rows: np.ndarray | None = None
) -> None:
    """Write the bucket fraction of sha1(prefix + ids[r] + suffix) to ``out[r]`` (float64) for every row,
    or for the int positions in `rows`; bit-identical to `raw_hash` of the joined text."""
    if out.dtype != np.float64 or not out.flags.c_contiguous or len(out) != len(ids):
        raise ValueError("out must be a contiguous float64 array with one value per identifier")
    sel = None if rows is None else np.ascontiguousarray(rows, dtype=np.int64)
    if _native is not None:
        _native.fractions(prefix, ids.data, ids.offsets, suffix, out, sel)
        return
    _warn_fallback()
    positions = range(len(ids)) if sel is None else sel.tolist()
    offsets = ids.offsets.tolist()
    view = memoryview(ids.data)
    # Copying a hash object already fed with the prefix skips OpenSSL's per-object set-up.
    copy = hashlib.sha1(prefix).copy
    digests: list[bytes] = []
    append = digests.append
    for r in positions:
        h = copy()
        h.update(view[offsets[r] : offsets[r + 1]])
        if suffix:
            h.update(suffix)
        append(h.digest())
    if not digests:
        return
    first8 = np.frombuffer(b"".join(digests), dtype=np.uint8).reshape(-1, 20)[:, :8].copy()
    values = (first8.view(">u8").ravel() >> np.uint64(4)).astype(np.float64) / LONG_SCALE
    if sel is None:
        out[:] = values
    else:
        out[sel] = values


def hash_many(prefix: bytes, identifiers: Sequence[bytes], suffix: bytes = b"") -> np.ndarray:
    """Bucket fractions for many already-encoded identifiers: sha1(prefix + id + suffix) each, as float64."""
    n = len(identifiers)
    offsets = np.zeros(n + 1, dtype=np.int64)
    if n:
        np.cumsum(np.fromiter(map(len, identifiers), dtype=np.int64, count=n), out=offsets[1:])
    out = np.empty(n, dtype=np.float64)
    fractions_into(prefix, EncodedIds(b"".join(identifiers), offsets), suffix, out)
    return out


def _warn_fallback() -> None:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(FALLBACK_WARNING, RuntimeWarning, stacklevel=3)

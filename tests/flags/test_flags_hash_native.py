"""The compiled column hasher (flags/_sha1column.c) is bit-identical to the reference hash.

Reference: posthog-python `posthog/feature_flags.py` `_hash` (sha1 of "{key}.{id}{salt}", first 15 hex digits
as an int, divided by float(0xFFFFFFFFFFFFFFF)), called here as the oracle. The consistency vectors are read,
at test time, from the oracle's own test suite (`posthog/test/test_feature_flags.py`,
`test_simple_flag_consistency` and `test_multivariate_flag_consistency`: 1,000 ids `distinct_id_{i}` each), so
they are the published ones and not a copy.
"""

from __future__ import annotations

import ast
import hashlib
import os
import random
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from analytics_nb.flags import _hashing, evaluate_frame
from analytics_nb.flags._hashing import EncodedIds, fractions_into, hash_many, native_impl, raw_hash

IMPLS = ["portable"] + (["shani"] if native_impl() == "shani" else [])


def _reference(text: bytes) -> float:
    """posthog-python's `_hash` on an already-joined input (empty key and separator)."""
    from posthog.feature_flags import _hash

    return float(_hash("", text.decode("utf-8"), separator=""))


def _published(test_name: str) -> tuple[list[dict[str, Any]], list[Any]]:
    """The flag definitions and the 1,000 expected results of one consistency test of the oracle."""
    import posthog.test

    source = (Path(posthog.test.__file__).parent / "test_feature_flags.py").read_text()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == test_name:
            flags = results = None
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.List):
                    target = ast.unparse(stmt.targets[0])
                    if target == "self.client.feature_flags":
                        flags = ast.literal_eval(stmt.value)
                    elif target == "results":
                        results = ast.literal_eval(stmt.value)
            assert flags is not None and results is not None, test_name
            return flags, results
    raise AssertionError(f"{test_name} not found in posthog's test suite")


def _random_ids(rng: random.Random, n: int) -> list[str]:
    alphabet = ["a", "Z", "0", "-", "é", "ß", "日本", "😀", "👩‍👩‍👧", "\u0000", " ", "\ud7ff", "ﬀ"]
    out = ["", "x", "é" * 70, "😀" * 40, "a" * 55, "a" * 56, "a" * 63, "a" * 64, "b" * 10_000]
    while len(out) < n:
        length = rng.choice([1, 5, 20, 40, 54, 55, 56, 57, 63, 64, 65, 119, 120, 200, 1000])
        out.append("".join(rng.choice(alphabet) for _ in range(length)))
    return out


@pytest.mark.parametrize(
    ("test_name", "key"),
    [
        ("test_simple_flag_consistency", "simple-flag"),
        ("test_multivariate_flag_consistency", "multivariate-flag"),
    ],
)
@pytest.mark.parametrize("mode", ["server", "sdk"])
def test_published_consistency_vectors(test_name: str, key: str, mode: str) -> None:
    flags, expected = _published(test_name)
    assert len(expected) == 1000
    frame = pd.DataFrame({"distinct_id": [f"distinct_id_{i}" for i in range(1000)]})
    out = evaluate_frame(frame, definitions=flags, mode=mode)
    assert out[key].astype(object).tolist() == expected


@pytest.mark.parametrize("impl", IMPLS)
def test_full_digest_matches_hashlib_at_every_length(impl: str) -> None:
    native = _hashing._native
    if native is None:
        pytest.skip("extension not built")
    rng = random.Random(7)
    for length in [*range(0, 260), 1000, 4095, 4096, 65_537]:
        data = bytes(rng.getrandbits(8) for _ in range(length))
        assert native.digest(data, impl=impl) == hashlib.sha1(data).digest(), length


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize(
    ("prefix", "suffix"),
    [
        ("flag.", ""),
        ("flag.", "variant"),
        ("holdout-", ""),
        ("k" * 70 + ".", "variant"),
        ("ü-flag.", "é"),
        ("", ""),
    ],
)
def test_column_fractions_are_bit_identical(impl: str, prefix: str, suffix: str) -> None:
    native = _hashing._native
    if native is None:
        pytest.skip("extension not built")
    ids = _random_ids(random.Random(hash((prefix, suffix)) & 0xFFFF), 3000)
    enc = EncodedIds.from_strs(ids)
    out = np.full(len(ids), np.nan)
    native.fractions(prefix.encode(), enc.data, enc.offsets, suffix.encode(), out, None, impl)
    want = [_reference(f"{prefix}{i}{suffix}".encode()) for i in ids]
    assert out.tolist() == want  # exact float equality: bit-identical
    assert want == [raw_hash(f"{prefix}{i}{suffix}") for i in ids]
    # a subset of rows: only those are written
    rows = np.array(sorted(random.Random(1).sample(range(len(ids)), 500)), dtype=np.int64)
    part = np.full(len(ids), -1.0)
    native.fractions(prefix.encode(), enc.data, enc.offsets, suffix.encode(), part, rows, impl)
    assert part[rows].tolist() == [want[r] for r in rows]
    assert (np.delete(part, rows) == -1.0).all()


def test_encoded_ids_hold_utf8_once() -> None:
    ids = ["a", "", "é", "😀x", "日本"]
    enc = EncodedIds.from_strs(ids)
    assert enc.data == "".join(ids).encode("utf-8")
    assert [enc.data[a:b].decode() for a, b in zip(enc.offsets[:-1], enc.offsets[1:], strict=True)] == ids
    assert enc.offsets.dtype == np.int64 and len(enc) == 5
    picked = enc.take(np.array([3, 0]))
    assert picked.data == "😀xa".encode() and picked.offsets.tolist() == [0, 5, 6]


def test_bad_buffers_are_refused() -> None:
    native = _hashing._native
    if native is None:
        pytest.skip("extension not built")
    enc = EncodedIds.from_strs(["ab", "c"])
    out = np.empty(2)
    with pytest.raises(ValueError, match="offsets point outside"):
        native.fractions(b"", b"a", enc.offsets, b"", out)
    with pytest.raises(IndexError, match="rows"):
        native.fractions(b"", enc.data, enc.offsets, b"", out, np.array([2], dtype=np.int64))
    with pytest.raises(ValueError, match="one float64 per identifier"):
        native.fractions(b"", enc.data, enc.offsets, b"", np.empty(3))
    with pytest.raises(ValueError, match="impl"):
        native.fractions(b"", enc.data, enc.offsets, b"", out, None, "openssl")


def test_fallback_gives_the_same_numbers_with_one_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    ids = _random_ids(random.Random(3), 400)
    enc = EncodedIds.from_strs(ids)
    native_out = np.empty(len(ids))
    fractions_into(b"f.", enc, b"variant", native_out)
    monkeypatch.setattr(_hashing, "_native", None)
    monkeypatch.setattr(_hashing, "_warned", False)
    with pytest.warns(RuntimeWarning, match="not built") as caught:
        pure = np.empty(len(ids))
        fractions_into(b"f.", enc, b"variant", pure)
    assert len(caught) == 1 and "\n" not in str(caught[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # only the first use warns
        again = hash_many(b"f.", [i.encode() for i in ids], b"variant")
        rows = np.arange(0, len(ids), 3)
        part = np.full(len(ids), -1.0)
        fractions_into(b"f.", enc, b"variant", part, rows)
    assert pure.tolist() == native_out.tolist() == again.tolist()
    assert part[rows].tolist() == pure[rows].tolist()
    assert native_out.tolist() == [_reference(f"f.{i}variant".encode()) for i in ids]
    # the whole engine runs on the fallback too
    flags, expected = _published("test_multivariate_flag_consistency")
    frame = pd.DataFrame({"distinct_id": [f"distinct_id_{i}" for i in range(1000)]})
    assert evaluate_frame(frame, definitions=flags)["multivariate-flag"].astype(object).tolist() == expected


def test_the_extension_is_built_by_the_install() -> None:
    """`pip install -e .` on a machine with gcc and the Python headers builds it (setup.py, optional=True)."""
    if os.environ.get("ANALYTICS_NB_ALLOW_PURE_HASH") == "1":
        pytest.skip("pure-Python hashing allowed on this machine")
    assert native_impl() in {"shani", "portable"}

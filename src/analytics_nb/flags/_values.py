"""Property values as the engine sees them: pandas/numpy cells made into plain JSON-like Python values."""

from __future__ import annotations

import datetime as dt
import json
import math
from decimal import Decimal
from typing import Any, Final

import numpy as np
import pandas as pd


class _Missing:
    """Marker for an absent property (None, NaN, pd.NA, NaT, or no such key)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


class BadValueError(ValueError):
    """A cell holds something that is not a JSON-like property value (a set, bytes, an object...)."""


def normalize(value: Any) -> Any:
    """Turn one cell or dict value into a plain Python value, or MISSING when it counts as absent.

    numpy scalars become int/float/bool/str, Timestamps become datetimes, NaN/NA/NaT/None become MISSING,
    tuples and arrays become lists. Raises BadValueError for values no flag operator can read.
    """
    if value is None:
        return MISSING
    t = type(value)
    if t is str or t is bool or t is int:
        return value
    if t is float:
        return MISSING if value != value else value
    return _normalize_slow(value)


def _normalize_slow(value: Any) -> Any:
    if value is pd.NA or value is pd.NaT:
        return MISSING
    if isinstance(value, np.generic):
        if isinstance(value, np.bool_):
            return bool(value)
        if isinstance(value, np.integer):
            return int(value)
        if isinstance(value, np.floating):
            f = float(value)
            return MISSING if f != f else f
        if isinstance(value, np.str_):
            return str(value)
        if isinstance(value, np.datetime64):
            if np.isnat(value):
                return MISSING
            return pd.Timestamp(value).to_pydatetime()
        raise BadValueError(f"a numpy {type(value).__name__} value cannot be a property value")
    if isinstance(value, pd.Timestamp):
        return value.to_pydatetime()
    if isinstance(value, (str, bool, int, Decimal, dt.date, dt.datetime)):
        if isinstance(value, str):
            return str(value)
        return value
    if isinstance(value, float):
        return MISSING if math.isnan(value) else float(value)
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_inner(v) for v in value]
    if isinstance(value, dict):
        return {k: _inner(v) for k, v in value.items()}
    raise BadValueError(
        f"a {type(value).__name__} value cannot be a property value; use a string, number, bool, "
        "datetime, list or dict"
    )


def _inner(value: Any) -> Any:
    """Normalise a value nested inside a list or dict: missing markers become None (JSON null)."""
    out = normalize(value)
    return None if out is MISSING else out


def json_float_text(value: float) -> str | None:
    """A float as the flags service prints it (shortest repr, ``1e+16`` exponents), None if not finite."""
    if not math.isfinite(value):
        return None
    text = repr(value)
    if "e" not in text:
        return text
    mantissa, exp_text = text.split("e")
    exponent = int(exp_text)
    if -6 < exponent < 0:
        return format(Decimal(text), "f")
    return f"{mantissa}e{'+' if exponent >= 0 else ''}{exponent}"


def to_text(value: Any, *, datetimes_as_iso: bool = False) -> str | None:
    """The string a property value compares as (strings as-is, other values as compact JSON), or None.

    None means the value has no JSON text (a datetime in SDK mode, a non-finite float, a dict with
    non-string keys): the official SDK cannot match it locally.
    """
    if isinstance(value, str):
        return value
    return _json_text(value, datetimes_as_iso)


def _json_text(value: Any, iso: bool) -> str | None:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return json_float_text(value)
    if isinstance(value, list):
        parts = [_json_text(v, iso) for v in value]
        if any(p is None for p in parts):
            return None
        return "[" + ",".join(parts) + "]"  # type: ignore[arg-type]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            return None
        items = []
        for k in sorted(value):
            inner = _json_text(value[k], iso)
            if inner is None:
                return None
            items.append(f"{json.dumps(k, ensure_ascii=False)}:{inner}")
        return "{" + ",".join(items) + "}"
    if iso and isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    return None


def ascii_lower(text: str) -> str:
    """Lower-case ASCII letters only (what the flags service does for icontains/starts_with/ends_with)."""
    return text.lower() if text.isascii() else text.translate(_ASCII_LOWER)


def is_boolish(value: Any) -> bool:
    """True for bools, the strings "true"/"false" in any case, and lists made only of those."""
    if isinstance(value, bool):
        return True
    if isinstance(value, str):
        return value.lower() in ("true", "false")
    if isinstance(value, list):
        return all(is_boolish(v) for v in value)
    return False


def truthy(value: Any) -> bool:
    """Truthiness as the exact operator uses it: True, "true" (any case), or a list of only those."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.lower() == "true"
    if isinstance(value, list):
        return all(truthy(v) for v in value)
    return False

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
    """Marker for an absent property (no such key; NaN, pd.NA or NaT in a cell; None in a frame cell)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


class Opaque:
    """A property value of a type the official SDK does not read as JSON (numpy integers and booleans,
    `pd.NA`, `NaT`, bytes, sets, tuples, arbitrary objects), kept as given in a property dict so that each
    filter that reads it answers what the SDK answers for it (sdk mode), or what the service answers for
    the JSON the client would send (server mode). A value no filter reads never matters."""

    __slots__ = ("raw",)

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def __repr__(self) -> str:
        return f"Opaque({self.raw!r})"

    @property
    def is_nat(self) -> bool:
        """`NaT`: a datetime to the SDK, which no date comparison matches."""
        return self.raw is pd.NaT


def sdk_opaque(value: Any) -> bool:
    """Whether the official SDK reads `value` outside its JSON types: anything but None, str (`np.str_`
    too), bool, int, float, dates, Decimal, list and dict. numpy numbers and booleans, `pd.NA`, `NaT`,
    bytes, sets, tuples and objects are opaque to it (an `np.float64` is a number to its numeric
    operators, but its text, `repr()`, is "np.float64(1.5)")."""
    if value is None or value is pd.NaT or value is pd.NA:
        return value is not None
    if isinstance(value, np.generic) and not isinstance(value, np.str_):
        # np.float64 is a float to the SDK's numeric parse, but its text is repr(): "np.float64(1.5)"
        return True
    return not isinstance(value, (str, bool, int, float, dt.date, Decimal, list, dict))


def holds_sdk_opaque(value: Any) -> bool:
    """Whether a list or dict holds, at any depth, a value the official SDK does not read as JSON (`pd.NA`,
    `NaT`, numpy scalars, ...): posthog 7.91.1's `_json_value_to_string` prints containers item by item
    and raises `InconclusiveMatchError` at such an item, so the whole value has no text for it."""
    if isinstance(value, list):
        return any(sdk_opaque(v) or holds_sdk_opaque(v) for v in value)
    if isinstance(value, dict):
        return any(sdk_opaque(v) or holds_sdk_opaque(v) for v in value.values())
    return False


class SdkTextAbort(Exception):
    """posthog 7.91.1 raises a plain `ValueError` while printing the value (not `InconclusiveMatchError`)."""


def sdk_container_text(value: Any) -> str | None:
    """The text posthog 7.91.1 compares a raw list or dict cell as (`_value_to_string` ->
    `_json_value_to_string` / `_json_scalar_to_string` / `_format_json_float` in posthog/feature_flags.py),
    item by item with the SDK's own type tests: an `np.float64` is a `float` to it, printed with `repr()`
    ("[np.float64(1.5)]"), and an `np.str_` is a `str`, while `np.int64`, `np.bool_`, `np.float32`, tuples,
    `Decimal`, `pd.NA`... are none of its types. None where the SDK raises `InconclusiveMatchError` (such an
    item, a non-finite float, a dict key that is not a string); `SdkTextAbort` where its float printing
    raises `ValueError` (an `np.float64` whose repr has an exponent: "np.float64(1e+16)" splits at "e"
    and `int("+16)")` fails)."""
    if isinstance(value, list):
        parts = [sdk_container_text(item) for item in value]
        return None if None in parts else "[" + ",".join(parts) + "]"  # type: ignore[arg-type]
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            return None
        items = []
        for key in sorted(value):
            inner = sdk_container_text(value[key])
            if inner is None:
                return None
            items.append(f"{json.dumps(key, ensure_ascii=False)}:{inner}")
        return "{" + ",".join(items) + "}"
    return _sdk_scalar_text(value)


def _sdk_scalar_text(value: Any) -> str | None:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if isinstance(value, int):
        return str(value)
    if not isinstance(value, float) or not math.isfinite(value):
        return None
    text = repr(value)  # an np.float64 prints as "np.float64(1.5)" (numpy 2)
    if "e" not in text:
        return text
    try:
        return json_float_text(value) if type(value) is float else _exponent_text(text)
    except ValueError:
        raise SdkTextAbort(text) from None


def _exponent_text(text: str) -> str:
    """`_format_json_float` on a repr with an exponent; raises ValueError where the SDK does."""
    mantissa, exponent_text = text.split("e")
    exponent = int(exponent_text)
    if -6 < exponent < 0:
        return format(Decimal(text), "f")
    return f"{mantissa}e{'+' if exponent >= 0 else ''}{exponent}"


class BadValueError(ValueError):
    """A cell holds something that is not a JSON-like property value (a set, bytes, an object...)."""


def normalize(value: Any, *, none_is_null: bool = False, nan_is_value: bool = False) -> Any:
    """Turn one cell or dict value into a plain Python value, or MISSING when it counts as absent.

    numpy scalars become int/float/bool/str, Timestamps become datetimes, NaN/NA/NaT become MISSING,
    tuples and arrays become lists. `None` is JSON null (a present property: both PostHog and its SDK
    keep it) when `none_is_null`, else MISSING (a frame cell). A float NaN is a value (not a number: no
    comparison matches it) when `nan_is_value`, as the SDK reads it in a property dict. Raises
    BadValueError for values no flag operator can read.
    """
    if value is None:
        return None if none_is_null else MISSING
    t = type(value)
    if t is str or t is bool or t is int:
        return value
    if t is float:
        return MISSING if value != value and not nan_is_value else value
    out = _normalize_slow(value)
    if out is MISSING and nan_is_value and isinstance(value, (float, np.floating)):
        return float(value)
    return out


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
    """Normalise a value nested inside a list or dict: missing markers become None (JSON null), but a float
    NaN stays NaN: inside a container it is a value, which posthog 7.91.1 cannot print (its
    `_format_json_float` raises for a non-finite float, so `[nan]` is inconclusive in sdk mode) and
    serde_json prints as ``null`` (server mode, `ryu_float_text`)."""
    if isinstance(value, (float, np.floating)) and value != value:
        return math.nan
    out = normalize(value)
    return None if out is MISSING else out


def json_float_text(value: float) -> str | None:
    """A float as the official SDK 7.91.1 prints it (shortest repr, ``1e+16`` exponents), None if not
    finite (the SDK cannot represent it)."""
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


#: i64/u64 range: serde_json keeps integers inside it exact; outside, it reads them as f64.
_I64_MIN, _U64_MAX = -(2**63), 2**64 - 1


def ryu_float_text(value: float) -> str:
    """A float as the flags service prints it: serde_json's shortest round-trip digits (the `ryu` crate),
    ``5.0``, ``1e16``, ``1.5e-7``, ``0.00001``; non-finite values print as ``null`` (serde_json writes
    NaN and infinities as null).

    Source: serde_json `Value` Display (via `ryu::Buffer::format_finite`), used by
    rust/feature-flags/src/properties/property_matching.rs `to_string_representation`.
    """
    if not math.isfinite(value):
        return "null"
    text = repr(abs(value))
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    mantissa, _, exp_text = text.partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0") if whole == "0" else whole + frac
    exponent10 = int(exp_text) if exp_text else 0
    # position of the decimal point relative to the start of `digits`
    if whole == "0":
        lead_zeros = len(frac) - len(frac.lstrip("0"))
        point = -lead_zeros + exponent10
    else:
        point = len(whole) + exponent10
    digits = digits.rstrip("0") or "0"
    if digits == "0":
        return sign + "0.0"
    length = len(digits)
    k = point - length  # value = digits * 10**k
    kk = point
    if k >= 0 and kk <= 16:
        return f"{sign}{digits}{'0' * k}.0"
    if 0 < kk <= 16:
        return f"{sign}{digits[:kk]}.{digits[kk:]}"
    if -5 < kk <= 0:
        return f"{sign}0.{'0' * -kk}{digits}"
    exp = kk - 1
    if length == 1:
        return f"{sign}{digits}e{exp}"
    return f"{sign}{digits[0]}.{digits[1:]}e{exp}"


def service_text(value: Any) -> str:
    """The string the flags service compares a property value as (`to_string_representation`): strings
    as-is, everything else as serde_json prints the JSON value (datetimes as ISO text, as the wire sends
    them)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    return _service_json(value)


def _service_json(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int):
        if _I64_MIN <= value <= _U64_MAX:
            return str(value)
        try:
            return ryu_float_text(float(value))
        except OverflowError:
            return "null"
    if isinstance(value, float):
        return ryu_float_text(value)
    if isinstance(value, Decimal):
        return ryu_float_text(float(value))
    if isinstance(value, list):
        return "[" + ",".join(_service_json(v) for v in value) + "]"
    if isinstance(value, dict):
        # serde_json's default map is a BTreeMap: keys in sorted order
        keys = sorted(value, key=str)
        items = [f"{json.dumps(str(k), ensure_ascii=False)}:{_service_json(value[k])}" for k in keys]
        return "{" + ",".join(items) + "}"
    if isinstance(value, (dt.date, dt.datetime)):
        return json.dumps(value.isoformat())
    return json.dumps(str(value))


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

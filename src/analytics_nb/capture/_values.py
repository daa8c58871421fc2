"""JSON-ready values for event properties: numpy/pandas scalars, missing values, datetimes, nested data.

Conversion is column-wise where pandas allows it (one numpy call per column instead of one Python call
per cell), so that large frames can be turned into event JSON quickly.
"""

from __future__ import annotations

import datetime as dt
import decimal
import enum
import math
import os
import time
import uuid as uuid_mod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from analytics_nb.wire import is_missing
from analytics_nb.wire import uuid7 as new_uuid7

__all__ = [
    "MISSING",
    "ColumnValues",
    "NaiveTimestampError",
    "ValueConversionError",
    "convert_column",
    "is_missing",
    "iso_timestamp",
    "json_value",
    "new_uuid7",
    "new_uuids",
]

NaivePolicy = Literal["utc", "raise"]


class _Missing:
    """Marker for "this property is absent": NA, NaN, NaT and None at the top level of a property."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()


class ValueConversionError(ValueError):
    """A value that cannot be sent as JSON (infinite float, bytes, unknown object); the text names the fix."""


class NaiveTimestampError(ValueConversionError):
    """A datetime without a time zone while ``on_naive_timestamp="raise"``."""


def iso_timestamp(value: Any, *, on_naive: NaivePolicy = "utc") -> str:
    """ISO 8601 text in UTC (``Z`` zone) for a datetime-like value (str, datetime, Timestamp, datetime64).

    Naive values are taken as UTC (``on_naive="utc"``) or refused (``"raise"``).
    """
    if isinstance(value, str):
        try:
            ts = pd.Timestamp(value)
        except (ValueError, TypeError) as exc:
            raise ValueConversionError(
                f"{value!r} is not an ISO 8601 date-time; use e.g. '2024-05-01T12:00:00Z'"
            ) from exc
    elif isinstance(value, dt.datetime | np.datetime64):
        ts = pd.Timestamp(value)
    elif isinstance(value, dt.date):
        ts = pd.Timestamp(value.year, value.month, value.day)
    else:
        raise ValueConversionError(
            f"a timestamp must be a datetime, pandas Timestamp or ISO 8601 text, not {type(value).__name__}"
        )
    if pd.isna(ts):
        raise ValueConversionError("the timestamp is NaT (missing)")
    if ts.tzinfo is None:
        if on_naive == "raise":
            raise NaiveTimestampError(
                f"the date-time {ts.isoformat()} has no time zone; localize it (e.g. "
                "series.dt.tz_localize('Europe/Paris')) or pass on_naive_timestamp='utc'"
            )
    else:
        ts = ts.tz_convert("UTC").tz_localize(None)
    return ts.isoformat() + "Z"


def _nested(value: Any, on_naive: NaivePolicy) -> Any:
    """Convert a value inside a list or dict: missing values become JSON null (positions are kept)."""
    out = json_value(value, on_naive=on_naive)
    return None if out is MISSING else out


def json_value(value: Any, *, on_naive: NaivePolicy = "utc") -> Any:
    """A JSON-native version of ``value``; ``MISSING`` for None/NA/NaN/NaT (the caller drops the property).

    Raises ``ValueConversionError`` (naming the type and the fix) for what JSON cannot carry.
    """
    t = type(value)
    if t is str or t is bool or t is int:
        return value
    if t is float:
        if math.isfinite(value):
            return value
        if math.isnan(value):
            return MISSING
        raise ValueConversionError(
            f"{value} is infinite and JSON has no infinity; replace it (e.g. with None or a large number)"
        )
    if value is None or value is pd.NA or value is pd.NaT:
        return MISSING
    if isinstance(value, np.bool_ | bool):
        return bool(value)
    if isinstance(value, np.integer | int):
        return int(value)
    if isinstance(value, np.floating | float):
        return json_value(float(value), on_naive=on_naive)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _nested(v, on_naive) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset | np.ndarray | pd.Series | pd.Index):
        return [_nested(v, on_naive) for v in value]
    if isinstance(value, dt.datetime | np.datetime64):
        if is_missing(value):
            return MISSING
        return iso_timestamp(value, on_naive=on_naive)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta | np.timedelta64):
        if is_missing(value):
            return MISSING
        return pd.Timedelta(value).total_seconds()
    if isinstance(value, decimal.Decimal):
        if value.is_nan():
            return MISSING
        return json_value(float(value), on_naive=on_naive)
    if isinstance(value, uuid_mod.UUID):
        return str(value)
    if isinstance(value, enum.Enum):
        return json_value(value.value, on_naive=on_naive)
    if isinstance(value, bytes | bytearray | memoryview):
        raise ValueConversionError("bytes are not JSON; decode them to text first (value.decode('utf-8'))")
    dump = getattr(value, "model_dump", None)
    if callable(dump):  # pydantic models
        return json_value(dump(mode="json"), on_naive=on_naive)
    if isinstance(value, np.generic):
        return json_value(value.item(), on_naive=on_naive)
    raise ValueConversionError(
        f"values of type {type(value).__name__} cannot be sent as JSON; convert them to str, number, "
        "bool, list or dict first"
    )


@dataclass
class ColumnValues:
    """One converted column: JSON-native ``values``, where they are ``present``, and per-row ``errors``."""

    values: list[Any]
    present: np.ndarray | None = None  # bool per row; None means every row is present
    errors: dict[int, str] = field(default_factory=dict)


def _datetime_column(series: pd.Series, on_naive: NaivePolicy, name: str) -> ColumnValues:
    missing = series.isna().to_numpy()
    if isinstance(series.dtype, pd.DatetimeTZDtype):
        naive = series.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy()
    else:
        naive = series.to_numpy()
        if on_naive == "raise":
            msg = (
                f"column {name!r} holds date-times without a time zone; localize them "
                "(series.dt.tz_localize(...)) or pass on_naive_timestamp='utc'"
            )
            errors = {int(i): msg for i in np.flatnonzero(~missing)}
            return ColumnValues([None] * len(series), ~missing if missing.any() else None, errors)
    text = np.datetime_as_string(naive, timezone="UTC").tolist()
    return ColumnValues(text, ~missing if missing.any() else None)


def convert_column(series: pd.Series, *, name: str = "", on_naive: NaivePolicy = "utc") -> ColumnValues:
    """Convert a whole column to JSON-native values with as few Python-level steps as its dtype allows."""
    dtype = series.dtype
    kind = getattr(dtype, "kind", "O")
    if isinstance(dtype, pd.DatetimeTZDtype) or (kind == "M" and isinstance(dtype, np.dtype)):
        return _datetime_column(series, on_naive, name)
    if isinstance(dtype, np.dtype):
        arr = series.to_numpy()
        if kind in "biu":
            return ColumnValues(arr.tolist())
        if kind == "f":
            nan = np.isnan(arr)
            inf = np.isinf(arr)
            errors: dict[int, str] = {}
            if inf.any():
                msg = (
                    f"property {name!r} is infinite and JSON has no infinity; replace it "
                    "(e.g. with None) first"
                )
                errors = {int(i): msg for i in np.flatnonzero(inf)}
            present = ~(nan | inf)
            return ColumnValues(arr.tolist(), None if present.all() else present, errors)
        if kind == "m":
            missing = np.isnat(arr)
            secs = (arr / np.timedelta64(1, "s")).tolist()
            return ColumnValues(secs, ~missing if missing.any() else None)
    if isinstance(dtype, pd.CategoricalDtype):
        series = series.astype(object)
    elif kind in "biuf" and not isinstance(dtype, np.dtype):
        # pandas masked dtypes (Int64, boolean, Float64): NA -> None, values already Python scalars
        missing = series.isna().to_numpy()
        vals = series.to_numpy(dtype=object, na_value=None).tolist()  # type: ignore[call-overload]  # na_value=None
        if kind == "f":
            for i, v in enumerate(vals):
                if v is not None and not math.isfinite(v):
                    missing[i] = True
        return ColumnValues(vals, ~missing if missing.any() else None)
    elif isinstance(dtype, pd.StringDtype):
        missing = series.isna().to_numpy()
        vals = series.to_numpy(dtype=object, na_value=None).tolist()  # type: ignore[call-overload]  # na_value=None
        return ColumnValues(vals, ~missing if missing.any() else None)
    # object (or anything else): one step per cell, with a fast path for plain Python scalars.
    values = series.to_numpy(dtype=object).tolist()
    present = np.ones(len(values), dtype=bool)
    errors = {}
    for i, v in enumerate(values):
        t = type(v)
        if t is str or t is int or t is bool:
            continue
        try:
            out = json_value(v, on_naive=on_naive)
        except ValueConversionError as exc:
            errors[i] = f"property {name!r}: {exc}"
            present[i] = False
            continue
        if out is MISSING:
            present[i] = False
        else:
            values[i] = out
    return ColumnValues(values, None if present.all() else present, errors)


def new_uuids(n: int) -> list[str]:
    """``n`` fresh UUIDv7 strings, built with one random block and numpy bit-setting (fast for big frames)."""
    if n <= 0:
        return []
    ms = time.time_ns() // 1_000_000
    arr = np.frombuffer(os.urandom(16 * n), dtype=np.uint8).reshape(n, 16).copy()
    arr[:, :6] = np.frombuffer((ms & 0xFFFFFFFFFFFF).to_bytes(6, "big"), dtype=np.uint8)
    arr[:, 6] = (arr[:, 6] & 0x0F) | 0x70
    arr[:, 8] = (arr[:, 8] & 0x3F) | 0x80
    h = arr.tobytes().hex()
    return [
        f"{h[j : j + 8]}-{h[j + 8 : j + 12]}-{h[j + 12 : j + 16]}-{h[j + 16 : j + 20]}-{h[j + 20 : j + 32]}"
        for j in range(0, 32 * n, 32)
    ]

"""Cell values as pandas and numpy hold them: the one missing-value test and the one JSON encoding.

A public submodule (not re-exported by ``analytics_nb.wire``) because it needs numpy and pandas, and
``import analytics_nb.client`` / ``analytics_nb.errors`` must not load them.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["is_missing", "json_default", "plain_value"]


def is_missing(value: Any) -> bool:
    """True for None, pd.NA, NaT (pandas or numpy) and float/numpy NaN; not for empty text or containers."""
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    if isinstance(value, float | np.floating):
        return math.isnan(value)
    if isinstance(value, np.datetime64 | np.timedelta64):
        return bool(np.isnat(value))
    return False


def plain_value(value: Any) -> Any:
    """``value`` as a JSON-ready Python value: numpy scalars unwrapped, datetimes/dates/times as ISO 8601
    text, ``Decimal`` as float; anything else unchanged."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    return value


def json_default(value: Any) -> Any:
    """Encode what ``json`` cannot: datetimes/dates/times as ISO 8601 text, numpy scalars and arrays as Python
    values, sets and tuples as lists, missing values (NA, NaT) as null; anything else raises ``TypeError``."""
    if is_missing(value):
        return None
    if isinstance(value, np.generic | dt.datetime | dt.date | dt.time | decimal.Decimal):
        return plain_value(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    isoformat = getattr(value, "isoformat", None)
    if callable(isoformat):  # e.g. pandas Period-like values
        return isoformat()
    raise TypeError(f"value {value!r} of type {type(value).__name__} cannot be sent as JSON")

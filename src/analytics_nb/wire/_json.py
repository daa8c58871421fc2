"""The one JSON encoding of what pandas and numpy put in records (``json.dumps(default=json_default)``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np

from analytics_nb.wire._missing import is_missing

__all__ = ["json_default"]


def json_default(value: Any) -> Any:
    """Encode what ``json`` cannot: datetimes/dates/times as ISO 8601 text, numpy scalars and arrays as Python
    values, sets and tuples as lists, missing values (NA, NaT) as null; anything else raises ``TypeError``."""
    if is_missing(value):
        return None
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    isoformat = getattr(value, "isoformat", None)
    if callable(isoformat):  # e.g. pandas Period-like values
        return isoformat()
    raise TypeError(f"value {value!r} of type {type(value).__name__} cannot be sent as JSON")

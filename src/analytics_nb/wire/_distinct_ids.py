"""The one check of ``distinct_id`` values shared by decide, capture and simulate.

A distinct id is text; whole numbers are accepted and sent as their digits (what the service does with a
numeric id). A float is refused everywhere: pandas turns an integer id column into floats as soon as one id
is missing, and ``1.0`` would be sent as ``"1.0"``, another person than ``"1"``. Refusing (with the fix)
beats guessing, since the service would silently treat them as different people.
"""

from __future__ import annotations

import decimal
import uuid
from typing import Any

__all__ = ["FIX", "check_distinct_id", "distinct_id_problem"]

FIX = (
    "convert it to text first: df['distinct_id'] = df['distinct_id'].astype('Int64').astype(str) for whole "
    "numbers (fill or drop the missing ids first), or str(int(value)) for one id"
)
_MAX_EXAMPLES = 3


def _is_float(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, float | decimal.Decimal):
        return True
    dtype = getattr(value, "dtype", None)  # numpy scalars, without importing numpy
    return getattr(dtype, "kind", "") in ("f", "c") and not hasattr(value, "__len__")


def _kind_word(value: Any) -> str:
    name = type(value).__name__
    return "a float" if name == "float" else f"a {name}"


def check_distinct_id(value: Any, *, field: str = "distinct_id") -> str:
    """One id as the text to send: text (non-empty), a whole number (not bool) or a UUID; ``ValueError``
    naming the fix otherwise (a float, even ``1.0``, is refused: it would be sent as ``"1.0"``)."""
    if isinstance(value, str):
        if not value.strip():
            raise ValueError(f"{field} is empty; give the id of the person, e.g. 'user-1'.")
        return value
    if isinstance(value, bool) or getattr(getattr(value, "dtype", None), "kind", "") == "b":
        raise ValueError(f"{field} is a bool ({value!r}); a distinct id is text such as 'user-1'.")
    if isinstance(value, int):
        return str(value)
    if getattr(getattr(value, "dtype", None), "kind", "") in ("i", "u"):
        return str(int(value))
    if isinstance(value, uuid.UUID):
        return str(value)
    if _is_float(value):
        raise ValueError(
            f"{field} is {_kind_word(value)} ({value!r}): it would be sent as {str(value)!r}, another person "
            f"than {str(int(value)) if _whole(value) else 'the intended one'!r}; {FIX}."
        )
    raise ValueError(f"{field} must be text (or a whole number), not {type(value).__name__} ({value!r}).")


def _whole(value: Any) -> bool:
    try:
        return float(value).is_integer()
    except (TypeError, ValueError, OverflowError):
        return False


def _examples(values: list[Any]) -> str:
    shown = ", ".join(repr(v) for v in values[:_MAX_EXAMPLES])
    return shown + (" …" if len(values) > _MAX_EXAMPLES else "")


def distinct_id_problem(values: Any, *, field: str = "distinct_id") -> str | None:
    """Why a column of ids (pandas Series, array or list) cannot be sent as it is, or None.

    Refused: a float column (``float64``/``Float64``: the usual result of one gap), a bool column, and an
    object column holding floats or other non-text, non-integer values; the message names the dtype, shows
    a few values and says how to convert.
    """
    dtype = getattr(values, "dtype", None)
    kind = getattr(dtype, "kind", "O")
    if type(dtype).__name__ == "StringDtype":
        return None  # text (missing ids are the caller's own check)
    if kind == "f":
        present = [v for v in _tolist(values) if v is not None and not _is_na(v)]
        if not present:
            return None  # empty, or only missing ids: the caller's missing-id check speaks
        return (
            f"{field} is {dtype} ({_examples(present)}): pandas stores integer ids as floats as soon as one "
            "is missing, and they would be sent as '1.0', '2.0' - other people than '1', '2'; "
            f"{FIX}."
        )
    if kind == "b":
        return f"{field} is {dtype}; a distinct id is text such as 'user-1' - convert or rename the column."
    if kind in ("i", "u", "U", "S"):
        return None
    labels = list(getattr(values, "index", range(len(values))))
    for label, value in zip(labels, _tolist(values), strict=False):
        if value is None or _is_na(value) or isinstance(value, str | uuid.UUID):
            continue
        if isinstance(value, int) and not isinstance(value, bool):
            continue
        if getattr(getattr(value, "dtype", None), "kind", "") in ("i", "u"):
            continue
        try:
            check_distinct_id(value, field=f"{field} at row {label!r}")
        except ValueError as exc:
            return str(exc).rstrip(".") + "."
    return None


def _tolist(values: Any) -> list[Any]:
    tolist = getattr(values, "tolist", None)
    return list(tolist()) if callable(tolist) else list(values)


def _is_na(value: Any) -> bool:
    if isinstance(value, float):
        return value != value
    name = type(value).__name__
    return name in ("NAType", "NaTType") or (name == "float64" and value != value)

"""Column kinds and fast typed column construction shared by every frame builder."""

from __future__ import annotations

import copy
import gc
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from operator import itemgetter
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel

from analytics_nb.models import ActivityPage, Page, RecordingsPage
from analytics_nb.wire.cells import is_missing

__all__ = [
    "DTYPES",
    "KNOWN_COLUMNS",
    "SECRET_FIELDS",
    "FrameParts",
    "Kind",
    "UserBlock",
    "as_records",
    "assemble_frame",
    "build_frame",
    "column",
    "object_column",
    "register_known",
]

Kind = Literal["int", "float", "bool", "str", "datetime", "json"]

DTYPES: dict[str, Any] = {
    "int": pd.Int64Dtype(),
    "float": pd.Float64Dtype(),
    "bool": pd.BooleanDtype(),
    "str": pd.StringDtype(na_value=np.nan),
    "datetime": pd.DatetimeTZDtype(unit="us", tz="UTC"),
    "json": np.dtype(object),
}
"""The pandas dtype of each column kind (pandas 3: ``str`` is the default string dtype, NA is NaN)."""

# Record fields that hold keys; they are never copied into a frame (and so never reach a CSV).
SECRET_FIELDS = frozenset({"api_key", "token", "$token", "personal_api_key", "secret_api_token"})

# Column name -> kind of every column a frame builder emits; read_csv uses it for CSVs without a header line.
KNOWN_COLUMNS: dict[str, Kind] = {}


def register_known(columns: Iterable[tuple[str, Kind]]) -> None:
    """Remember the kinds of known column names (first registration wins)."""
    for name, kind in columns:
        KNOWN_COLUMNS.setdefault(name, kind)


def _bad(name: str, kind: str, value: Any, hint: str) -> ValueError:
    return ValueError(f"field {name!r}: expected {kind}, got {value!r}; {hint}")


def _coerce_int(value: Any, name: str) -> int | None:
    if is_missing(value):
        return None
    if isinstance(value, bool):
        raise _bad(name, "an integer", value, "send a number, not a boolean")
    if isinstance(value, int | np.integer):
        return int(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise _bad(name, "an integer", value, "send a whole number or null") from None
    if not number.is_integer():
        raise _bad(name, "an integer", value, "send a whole number or null")
    return int(number)


def _coerce_float(value: Any, name: str) -> float | None:
    if is_missing(value):
        return None
    if isinstance(value, bool):
        raise _bad(name, "a number", value, "send a number, not a boolean")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise _bad(name, "a number", value, "send a number or null") from None


_TRUE = {"true", "t", "yes", "1"}
_FALSE = {"false", "f", "no", "0"}


def _coerce_bool(value: Any, name: str) -> bool | None:
    if is_missing(value):
        return None
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise _bad(name, "a boolean", value, "send true, false or null")


def object_column(values: Sequence[Any]) -> pd.Series:
    """An object-dtype column holding the values as given (pandas 3 would make all-text arrays str)."""
    return pd.Series(np.fromiter(values, dtype=object, count=len(values)), dtype=object, copy=False)


def column(values: Sequence[Any], kind: Kind, name: str) -> Any:
    """Build one typed column (an extension array, or an object Series for JSON) from raw values.

    The fast path hands the whole list to pandas; odd values fall back to per-value coercion, and a value that
    cannot be read raises ``ValueError`` naming the field.
    """
    dtype = DTYPES[kind]
    if kind == "json":
        return object_column(values)
    if kind == "str":
        return _str_array(values, dtype)
    if kind in ("int", "bool"):
        fast = _plain_array(values, kind)
        if fast is not None:
            return fast
    if kind == "datetime":
        try:
            parsed = pd.to_datetime(values, format="ISO8601", utc=True)
        except (TypeError, ValueError) as exc:
            bad = next((v for v in values if not is_missing(v) and _bad_datetime(v)), None)
            raise _bad(
                name, "an ISO 8601 date-time", bad, f"send text like 2025-01-31T12:00:00Z ({exc})"
            ) from None
        return parsed.as_unit("us").array
    try:
        with np.errstate(invalid="ignore"):  # a float beyond the integer range is reported below instead
            return pd.array(values, dtype=dtype)
    except (TypeError, ValueError, OverflowError):
        coerce = {"int": _coerce_int, "float": _coerce_float, "bool": _coerce_bool}[kind]
        coerced = [coerce(v, name) for v in values]
    if kind == "int":
        huge = next(
            (i for i, v in enumerate(coerced) if v is not None and not _INT64_MIN <= v <= _INT64_MAX), None
        )
        if huge is not None:  # pandas would raise a bare OverflowError
            raise _bad(name, "an integer within 64 bits", values[huge], "this column holds 64-bit integers")
    return pd.array(coerced, dtype=dtype)


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


_NONE = type(None)
_PLAIN_TYPES = {"int": int, "bool": bool}
_NUMPY_TYPES = {"int": np.int64, "bool": np.bool_}


def _plain_array(values: Sequence[Any], kind: Kind) -> Any:
    """An ``Int64`` / ``boolean`` array straight from numpy when every value is a plain ``int`` / ``bool``
    (or None): what ``pd.array`` gives for them, at a fifth of its time. None for anything else (floats,
    text, numpy scalars, an integer beyond 64 bits), which goes the general way."""
    types = set(map(type, values))
    plain = _PLAIN_TYPES[kind]
    if not types <= {plain, _NONE}:
        return None
    data: np.ndarray
    try:
        if _NONE in types:
            mask = np.fromiter((v is None for v in values), dtype=bool, count=len(values))
            data = np.array([0 if v is None else v for v in values], dtype=_NUMPY_TYPES[kind])
        else:
            mask = np.zeros(len(values), dtype=bool)
            data = np.array(values, dtype=_NUMPY_TYPES[kind])
    except OverflowError:
        return None
    if kind == "int":
        return pd.arrays.IntegerArray(data, mask)
    return pd.arrays.BooleanArray(data, mask)


def _str_array(values: Sequence[Any], dtype: Any) -> Any:
    """A ``str`` column. With pyarrow storage (pandas 3 with pyarrow installed) and only ``str`` / None
    values, the Arrow array is built directly (half of ``pd.array``'s time, the same array); anything else
    (numbers to turn into text, other missing markers) goes through ``pd.array``."""
    if dtype.storage == "pyarrow" and set(map(type, values)) <= {str, _NONE}:
        import pyarrow as pa

        arrow = pa.chunked_array([pa.array(values, type=pa.large_string())])
        return pd.arrays.ArrowStringArray(arrow, dtype=dtype)  # type: ignore[call-arg]  # stubs lag pandas 3
    return pd.array(values, dtype=dtype)


def _bad_datetime(value: Any) -> bool:
    try:
        pd.to_datetime([value], format="ISO8601", utc=True)
    except (TypeError, ValueError):
        return True
    return False


def as_records(records: Any, what: str) -> list[dict[str, Any]]:
    """Accept a list of wire dicts or models, or a page (dict or model) with ``results``; return dicts."""
    if isinstance(records, Page | RecordingsPage | ActivityPage):
        records = records.results
    elif isinstance(records, Mapping) and isinstance(records.get("results"), list):
        records = records["results"]
    if records is None or isinstance(records, str | bytes | Mapping):
        raise TypeError(f"{what}: expected a list of records (dicts or models), got {type(records).__name__}")
    if isinstance(records, list) and all(r.__class__ is dict for r in records):
        return records  # the common case: JSON straight from the API
    out: list[dict[str, Any]] = []
    for i, record in enumerate(records):
        if isinstance(record, Mapping):
            out.append(dict(record))
        elif isinstance(record, BaseModel):
            out.append(record.model_dump(by_alias=True, mode="json", exclude_unset=True))  # the wire dict
        else:
            raise TypeError(
                f"{what}: record {i} is a {type(record).__name__}; "
                "pass dicts as the API returns them, or models"
            )
    return out


USER_COLUMNS: list[tuple[str, Kind]] = [
    ("id", "int"),
    ("uuid", "str"),
    ("distinct_id", "str"),
    ("email", "str"),
    ("first_name", "str"),
    ("last_name", "str"),
    ("is_email_verified", "bool"),
    ("role_at_organization", "str"),
    ("hedgehog_config", "json"),
]


def user_columns(prefix: str) -> list[tuple[str, Kind]]:
    """Flattened column names of a nested user field, e.g. ``created_by_email``."""
    return [(f"{prefix}_{key}", kind) for key, kind in USER_COLUMNS]


def _as_user(value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return dict(value)
    if value is None:
        return _EMPTY
    return {"id": value}  # some endpoints send the bare user id


_EMPTY: dict[str, Any] = {}
_MAX_LAYOUTS = 16


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while building columns.

    Transposing 100k records allocates many small containers; each GC pass would re-scan every record's nested
    objects, which costs more than the conversion itself. Reference counting still frees memory meanwhile.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _rows(dicts: Sequence[dict[str, Any]], keys: tuple[str, ...]) -> list[Any]:
    """Each dict's values for ``keys`` as a tuple (``KeyError`` when one lacks a key): one C call per dict, so
    each record is visited once, which is what a 100,000-record transpose is bound by (memory, not Python)."""
    if len(keys) == 1:
        key = keys[0]
        return [(d[key],) for d in dicts]
    return list(map(itemgetter(*keys), dicts))


def transpose(dicts: Sequence[dict[str, Any]]) -> tuple[dict[str, Any], int]:
    """Columns of a list of dicts: ``({key: values}, n)``, one value per dict (None where a key is absent).

    Records from one serializer share a key set: when the first record's keys are in every record and the
    lengths add up to ``n`` times its width, every record has exactly those keys (in any order), and the
    columns are read with one ``itemgetter`` call per record and one ``zip``. Otherwise dicts are grouped by
    layout and each group is read the same way; very mixed inputs fall back to one ``dict.get`` pass per key.
    """
    n = len(dicts)
    if n == 0:
        return {}, 0
    keys = tuple(dicts[0])
    width = len(keys)
    if sum(map(len, dicts)) == n * width:
        if not width:
            return {}, n
        try:
            rows = _rows(dicts, keys)
        except KeyError:
            pass
        else:
            return dict(zip(keys, zip(*rows, strict=True), strict=True)), n
    layouts = list(map(tuple, dicts))
    unique = set(layouts)
    if len(unique) > _MAX_LAYOUTS:
        all_keys: dict[str, None] = {}
        for layout in unique:
            all_keys.update(dict.fromkeys(layout))
        return {key: [d.get(key) for d in dicts] for key in all_keys}, n
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, layout in enumerate(layouts):
        groups.setdefault(layout, []).append(i)
    columns: dict[str, np.ndarray] = {}
    for layout, positions in groups.items():
        if not layout:
            continue
        idx = np.array(positions, dtype=np.intp)
        group = [dicts[i] for i in positions]
        for key, values in zip(layout, zip(*_rows(group, layout), strict=True), strict=True):
            col = columns.get(key)
            if col is None:
                col = columns[key] = np.full(n, None, dtype=object)
            col[idx] = np.fromiter(values, dtype=object, count=len(values))
    return dict(columns), n


def build_frame(
    records: Sequence[dict[str, Any]],
    spec: Sequence[tuple[str, Kind]],
    *,
    users: Sequence[str] = (),
    tail: Sequence[tuple[str, Kind]] = (),
    extras: bool = True,
) -> pd.DataFrame:
    """Build a frame: ``spec`` columns (field = column), flattened ``users`` fields, ``tail``, then extras.

    The records are transposed once, then each column is built typed in one call. Unknown record fields
    (and unknown nested user fields) become extra object columns at the end, so nothing the server sent is
    lost; fields in ``SECRET_FIELDS`` are dropped.
    """
    with gc_paused():
        return _build(records, spec, users, tail, extras)


def _build(
    records: Sequence[dict[str, Any]],
    spec: Sequence[tuple[str, Kind]],
    users: Sequence[str],
    tail: Sequence[tuple[str, Kind]],
    extras: bool,
) -> pd.DataFrame:
    cols, n = transpose(records)
    missing = [None] * n
    people = {
        prefix: UserBlock([u if u.__class__ is dict else _as_user(u) for u in cols.get(prefix, missing)])
        for prefix in users
    }
    return assemble_frame(cols, n, spec, people, tail, extras=extras)


class UserBlock:
    """The nested user field of every record, as ``users[codes[i]]`` for record ``i``.

    Listings repeat a handful of users over thousands of rows; a caller that can tell equal users apart
    cheaply (``frames._rows`` compares their raw JSON) passes each distinct user once with the codes, and
    each user column is built from the distinct users and then taken by code. Without codes there is one
    user per record. JSON values (``hedgehog_config``, unknown fields) that are containers are copied for
    each row, so that editing one cell never changes another row's.
    """

    def __init__(self, users: list[dict[str, Any]], codes: np.ndarray | None = None) -> None:
        self.users = users
        self.codes = codes

    def columns(self, prefix: str, extras: bool) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
        """The typed ``{prefix}_*`` columns, and the extra (unknown field) columns as ``(name, values)``."""
        ucols, _ = transpose(self.users)
        missing = [None] * len(self.users)
        data: dict[str, Any] = {}
        for key, kind in USER_COLUMNS:
            name = f"{prefix}_{key}"
            values = ucols.get(key, missing)
            if self.codes is None:
                data[name] = column(values, kind, name)
            elif kind == "json":
                data[name] = object_column(self._per_row(values))
            else:
                data[name] = column(values, kind, name).take(self.codes)
        extra: list[tuple[str, Any]] = []
        if extras:
            known_user = {key for key, _ in USER_COLUMNS}
            for key in sorted(set(ucols) - known_user - SECRET_FIELDS):
                values = ucols[key]
                extra.append((f"{prefix}_{key}", values if self.codes is None else self._per_row(values)))
        return data, extra

    def _per_row(self, values: Sequence[Any]) -> list[Any]:
        """One value per row from one value per distinct user (containers copied for every row)."""
        picked = [values[code] for code in self.codes.tolist()] if self.codes is not None else list(values)
        if any(isinstance(v, dict | list) for v in values):
            picked = [copy.deepcopy(v) if isinstance(v, dict | list) else v for v in picked]
        return picked


def assemble_frame(
    cols: Mapping[str, Sequence[Any]],
    n: int,
    spec: Sequence[tuple[str, Kind]],
    users: Mapping[str, UserBlock],
    tail: Sequence[tuple[str, Kind]],
    *,
    extras: bool,
) -> pd.DataFrame:
    """The frame of ``n`` records given as columns of raw values (``cols``) and their nested users: ``spec``
    columns, the flattened user columns, ``tail``, then extra columns (see ``build_frame``)."""
    missing = [None] * n
    data: dict[str, Any] = {}
    for name, kind in spec:
        data[name] = column(cols.get(name, missing), kind, name)
    extra_user_cols: list[tuple[str, Any]] = []
    for prefix, block in users.items():
        typed, extra = block.columns(prefix, extras)
        data.update(typed)
        extra_user_cols.extend(extra)
    for name, kind in tail:
        data[name] = column(cols.get(name, missing), kind, name)
    for name, values in extra_user_cols:
        if name not in data:
            data[name] = object_column(values)
    if extras:
        known = {name for name, _ in spec} | set(users) | {name for name, _ in tail} | SECRET_FIELDS
        for key in sorted(set(cols) - known):
            name = key if key not in data else f"{key}__extra"
            data[name] = object_column(cols[key])
    return pd.DataFrame(data, index=pd.RangeIndex(n), copy=False)


class FrameParts:
    """One frame from records that arrive a page at a time, built in parts while later pages are on their way.

    ``build`` is a frame builder (``playlists_frame``, ...). Records are built in parts of at least
    ``part_rows`` as they are added, and ``frame()`` joins the parts. The result is always the frame
    ``build(all records)`` gives: parts are joined only when every part has the same columns with the same
    dtypes (records with the same fields); otherwise (an extra field in some records only), or when a part
    cannot be built (a bad value: the error must name the same field as one build over all records would),
    all the records are built at once, so columns, dtypes, values and errors never depend on how the records
    were paged.
    """

    #: Records a part holds at least: four 500-record pages. Each part costs ~1.3 ms of fixed pandas work
    #: (36 columns), so smaller parts would cost more CPU than overlapping them with the network saves;
    #: larger ones leave more building after the last page.
    PART_ROWS = 2000

    def __init__(
        self, build: Callable[[list[dict[str, Any]]], pd.DataFrame], *, part_rows: int | None = None
    ) -> None:
        self._build = build
        self.part_rows = self.PART_ROWS if part_rows is None else part_rows
        self._records: list[dict[str, Any]] = []
        self._pending = 0
        self._parts: list[pd.DataFrame] | None = []  # None: the parts cannot be joined; build all at the end

    def add(self, records: Sequence[dict[str, Any]]) -> None:
        """Take the next page of records (building a part once ``part_rows`` are waiting)."""
        self._records.extend(records)
        self._pending += len(records)
        if self._pending >= self.part_rows:
            self._build_part()

    def _build_part(self) -> None:
        pending, self._pending = self._pending, 0
        if self._parts is None or not pending:
            return
        try:
            part = self._build(self._records[len(self._records) - pending :])
        except (TypeError, ValueError):
            self._parts = None  # the build over all records raises the error, naming the first bad field
            return
        first = self._parts[0] if self._parts else part
        if list(first.columns) != list(part.columns) or list(first.dtypes) != list(part.dtypes):
            self._parts = None
            return
        self._parts.append(part)

    def frame(self) -> pd.DataFrame:
        """The frame of every record added, in order (as ``build`` gives it for all of them)."""
        self._build_part()
        parts = self._parts
        if parts is None or not parts:
            return self._build(self._records)
        if len(parts) == 1:
            return parts[0]
        with gc_paused():
            return pd.concat(parts, ignore_index=True)

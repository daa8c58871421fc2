"""``to_csv`` / ``read_csv``: a CSV round trip that restores dtypes, NA cells and JSON objects exactly.

Spreadsheets run a cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return as a formula
(CSV or formula injection), and playlist names, flag names and event properties are written by anyone in
the project. ``to_csv`` therefore writes such a cell with a leading ``'`` (``formulas="escape"``, the
default; a signed number such as ``-3.5`` is not a formula and is left alone), notes the column in the
header line, and ``read_csv`` removes exactly that ``'`` again, so the round trip stays exact.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import warnings
from typing import Any, Literal

import numpy as np
import pandas as pd

from analytics_nb.frames._schema import KNOWN_COLUMNS, column, object_column
from analytics_nb.wire.cells import is_missing, json_default

__all__ = ["FORMULA_POLICIES", "HEADER_PREFIX", "FormulaCellsWarning", "FormulaPolicy", "read_csv", "to_csv"]

HEADER_PREFIX = "# analytics_nb: "
"""First line of a CSV written by :func:`to_csv`; the JSON after it names each column's dtype."""

_FORMAT_VERSION = 1
_ALLOWED_WRITE = {"sep", "encoding", "lineterminator"}
_FIXED_READ = {
    "dtype",
    "na_filter",
    "keep_default_na",
    "na_values",
    "converters",
    "parse_dates",
    "comment",
    "sep",
}
_KEY_RE = re.compile(r"phx_[A-Za-z0-9_\-]{6,}")
_NA_TOKEN = "<NA>"
_NA_MARK = "<NA>"
_NAT_MARK = "<NaT>"
_JSON_MISSING = {_NA_MARK: pd.NA, _NAT_MARK: pd.NaT}


_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=json_default)

FormulaPolicy = Literal["escape", "warn", "keep"]
FORMULA_POLICIES = ("escape", "warn", "keep")
#: First characters that make a spreadsheet read a cell as a formula (OWASP "CSV injection").
_FORMULA_START = frozenset("=+-@\t\r")
#: A signed number (``-3``, ``+1.5e3``): a spreadsheet reads it as a number, not a formula.
_SIGNED_NUMBER = re.compile(r"[+-](?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_ESCAPE = "'"


class FormulaCellsWarning(UserWarning):
    """``to_csv(..., formulas="warn")`` wrote cells a spreadsheet would run as formulas; ``count`` cells in
    ``columns``."""

    def __init__(self, message: str, *, count: int = 0, columns: list[str] | None = None) -> None:
        super().__init__(message)
        self.count = count
        self.columns = columns or []


def _is_formula(text: str) -> bool:
    return text[:1] in _FORMULA_START and _SIGNED_NUMBER.fullmatch(text) is None


def _formula_count(texts: list[str | None]) -> int:
    return sum(1 for t in texts if t and _is_formula(t))


def _escape_cells(texts: list[str | None]) -> list[str | None]:
    """A column with formula cells: those, and cells already starting with ``'`` (so that reading removes
    exactly one), get a leading ``'``."""
    return [t if not t or not (t[0] == _ESCAPE or _is_formula(t)) else _ESCAPE + t for t in texts]


def _unescape(value: Any) -> Any:
    return value[1:] if isinstance(value, str) and value[:1] == _ESCAPE else value


def _encode_json(values: list[Any], name: str) -> list[str | None]:
    out: list[str | None] = []
    seen: dict[int, str] = {}  # the same object (e.g. a shared nested user dict) is encoded once
    encode = _JSON.encode
    for value in values:
        if value is None:
            out.append(None)
            continue
        if value is pd.NA or value is pd.NaT:
            # Valid JSON never starts with "<", so these markers cannot clash with a value; NaN is JSON's NaN.
            out.append(_NA_MARK if value is pd.NA else _NAT_MARK)
            continue
        key = id(value)
        text = seen.get(key)
        if text is None:
            try:
                text = seen[key] = encode(value)
            except (TypeError, ValueError) as exc:
                raise ValueError(
                    f"to_csv: column {name!r} holds a value that cannot be written as JSON ({exc}); "
                    "convert it to text or a plain dict/list first"
                ) from None
        out.append(text)
    return out


def _plain_categories(dtype: pd.CategoricalDtype) -> list[Any] | None:
    """The categories as a JSON list when JSON gives every one of them back exactly (text, int, float,
    bool), else None."""
    cats = dtype.categories.tolist()
    if all(isinstance(c, str | bool | int | float) and not isinstance(c, np.generic) for c in cats):
        return cats
    return None


def _encode_category(series: pd.Series, cats: list[Any]) -> list[str | None]:
    """A ``category`` column's cells: the text itself when every category is text, else each value's JSON."""
    as_text = all(isinstance(c, str) for c in cats)
    texts = [c if as_text else _JSON.encode(c) for c in cats]
    codes = series.array.codes
    return [None if code < 0 else texts[code] for code in codes.tolist()]


def _encode(series: pd.Series, name: str) -> tuple[str, list[str | None]]:
    """Return (dtype label, text of each cell or None for NA)."""
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype) and _plain_categories(dtype) is not None:
        return "category", _encode_category(series, _plain_categories(dtype) or [])
    if isinstance(dtype, pd.DatetimeTZDtype) or (isinstance(dtype, np.dtype) and dtype.kind == "M"):
        mask = series.isna().to_numpy()
        aware = isinstance(dtype, pd.DatetimeTZDtype)
        naive = series.dt.tz_convert("UTC").dt.tz_localize(None) if aware else series
        texts = np.datetime_as_string(naive.to_numpy(), timezone="UTC" if aware else "naive")
        return str(dtype), [None if m else t for t, m in zip(texts.tolist(), mask, strict=True)]
    if isinstance(dtype, np.dtype) and dtype.kind == "O":
        return "json", _encode_json(series.tolist(), name)
    values = series.to_numpy(dtype=object, na_value=None).tolist()  # type: ignore[call-overload]  # na_value=None
    if pd.api.types.is_bool_dtype(dtype):
        return str(dtype), [None if v is None else ("True" if v else "False") for v in values]
    if pd.api.types.is_float_dtype(dtype):
        return str(dtype), [None if is_missing(v) else repr(float(v)) for v in values]
    if isinstance(dtype, pd.StringDtype):
        return str(dtype), values
    return str(dtype), [None if is_missing(v) else str(v) for v in values]


def _na_token(texts: list[str | None]) -> str:
    if texts.count("") == 0:
        return ""
    present = {t for t in texts if t is not None and t.startswith("<NA")}
    token, i = _NA_TOKEN, 0
    while token in present:
        i += 1
        token = f"<NA{i}>"
    return token


def to_csv(
    df: pd.DataFrame, path_or_buf: Any = None, *, formulas: FormulaPolicy = "escape", **kw: Any
) -> str | None:
    """Write ``df`` as CSV that :func:`read_csv` reads back with the same dtypes and values.

    The first line is ``# analytics_nb: {...}`` naming each column's dtype; JSON columns are written as JSON
    text, datetimes as ISO 8601 with zone, NA as an empty cell (``<NA>`` in a column holding empty strings).
    Returns the text when ``path_or_buf`` is None. Only ``sep``, ``encoding`` and ``lineterminator`` may be
    passed; refuses to write anything that looks like a personal API key.

    ``formulas``: cells (and column names) a spreadsheet would run as formulas (starting with ``=``, ``+``,
    ``-``, ``@``, tab or CR; signed numbers excepted) are written with a leading ``'`` (``"escape"``, the
    default: Excel, LibreOffice and Google Sheets show them as text; ``read_csv`` restores the original),
    written unchanged with a ``FormulaCellsWarning`` (``"warn"``), or unchanged (``"keep"``, for files no
    spreadsheet opens).

    Args:
        df: The frame to write.
        path_or_buf: A path or a file object. None: return the text.
        formulas: ``"escape"``, ``"warn"`` or ``"keep"`` for cells a spreadsheet would run as formulas.
        **kw: ``sep``, ``encoding`` or ``lineterminator``.

    Returns:
        The CSV text when ``path_or_buf`` is None, else None.

    Raises:
        ValueError: A cell looks like a personal API key (nothing is written).
        TypeError: An option other than ``sep``, ``encoding`` or ``lineterminator`` was passed.
    """
    if formulas not in FORMULA_POLICIES:
        raise ValueError(
            f"to_csv: formulas={formulas!r} must be 'escape' (the default: formula-like cells get a "
            "leading '), 'warn' or 'keep'"
        )
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"to_csv: expected a DataFrame, got {type(df).__name__}")
    unknown = set(kw) - _ALLOWED_WRITE
    if unknown:
        raise TypeError(
            f"to_csv: option(s) {sorted(unknown)} would break the round trip; only {sorted(_ALLOWED_WRITE)} "
            "are accepted (use DataFrame.to_csv for a plain export)"
        )
    if isinstance(df.columns, pd.MultiIndex) or not all(isinstance(c, str) for c in df.columns):
        raise ValueError("to_csv: column names must be plain strings; rename the columns first")
    if df.columns.has_duplicates:
        dupes = sorted(set(df.columns[df.columns.duplicated()]))
        raise ValueError(f"to_csv: duplicate column names {dupes}; rename them first")
    meta: dict[str, Any] = {"version": _FORMAT_VERSION}
    frame = df
    index = df.index
    if not (isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1 and index.name is None):
        names = list(index.names)
        frame = df.reset_index()
        meta["index"] = {"columns": [str(c) for c in frame.columns[: len(names)]], "names": names}
    columns: dict[str, str] = {}
    na: dict[str, str] = {}
    escaped: list[str] = []
    formula_cells: dict[str, int] = {}
    has_cr = False
    text: dict[str, list[str | None]] = {}
    categories: dict[str, dict[str, Any]] = {}
    for name in frame.columns:
        label, texts = _encode(frame[name], str(name))
        dtype = frame[name].dtype
        if isinstance(dtype, pd.CategoricalDtype) and _plain_categories(dtype) is not None:
            categories[str(name)] = {"values": _plain_categories(dtype), "ordered": bool(dtype.ordered)}
        joined = "\x00".join(t for t in texts if t is not None) + "\x00" + str(name)
        has_cr = has_cr or "\r" in joined
        if "phx_" in joined and _KEY_RE.search(joined):
            raise ValueError(
                f"to_csv: column {name!r} holds text that looks like a personal API key (phx_...); "
                "drop or mask that column before exporting"
            )
        found = _formula_count(texts)
        if found:
            formula_cells[str(name)] = found
            if formulas == "escape":
                texts = _escape_cells(texts)
                escaped.append(str(name))
        token = _na_token(texts)
        if token:
            na[str(name)] = token
        columns[str(name)] = label
        text[str(name)] = [token if t is None else t for t in texts]
    header: list[str] = list(columns)
    if any(_is_formula(n) for n in header):
        formula_cells["(column names)"] = sum(1 for n in header if _is_formula(n))
        if formulas == "escape":
            header = [str(n) for n in _escape_cells(list(header))]
            meta["escaped_names"] = True
    if formula_cells and formulas == "warn":
        warnings.warn(
            FormulaCellsWarning(
                f"to_csv: {sum(formula_cells.values()):,} cells a spreadsheet would run as formulas (in "
                f"{sorted(formula_cells)}) were written unchanged; leave formulas='escape' (the default) "
                "for files people open in a spreadsheet",
                count=sum(formula_cells.values()),
                columns=sorted(formula_cells),
            ),
            stacklevel=2,
        )
    if escaped:
        meta["escaped"] = escaped
    meta["columns"] = columns
    if categories:
        meta["categories"] = categories
    if na:
        meta["na"] = na
    sep = kw.get("sep", ",")
    if sep != ",":
        meta["sep"] = sep
    lineterminator = kw.get("lineterminator", "\n")
    out = io.StringIO()
    writer = csv.writer(
        out,
        delimiter=sep,
        lineterminator=lineterminator,
        # A bare carriage return is not quoted by QUOTE_MINIMAL and would split the row on reading.
        quoting=csv.QUOTE_ALL if has_cr else csv.QUOTE_MINIMAL,
    )
    writer.writerow(header)
    writer.writerows(zip(*text.values(), strict=True))
    body = out.getvalue()
    content: str = HEADER_PREFIX + json.dumps(meta, ensure_ascii=False) + lineterminator + body
    if path_or_buf is None:
        return content
    if hasattr(path_or_buf, "write"):
        path_or_buf.write(content)
        return None
    with open(path_or_buf, "w", encoding=kw.get("encoding", "utf-8"), newline="") as fh:
        fh.write(content)
    return None


def _read_text(path_or_buf: Any, encoding: str) -> str:
    if isinstance(path_or_buf, str) and ("\n" in path_or_buf or path_or_buf.startswith(HEADER_PREFIX)):
        return path_or_buf  # CSV text, as to_csv(df) returns it
    if hasattr(path_or_buf, "read"):
        data = path_or_buf.read()
        return data.decode(encoding) if isinstance(data, bytes) else data
    if isinstance(path_or_buf, str | os.PathLike):
        with open(path_or_buf, encoding=encoding, newline="") as fh:
            return fh.read()
    raise TypeError(f"read_csv: expected a path, a file object or CSV text, got {type(path_or_buf).__name__}")


def _decode_category(vals: list[Any], mask: np.ndarray, spec: dict[str, Any]) -> pd.Categorical:
    """A ``category`` column back with its categories (unused ones and their order included)."""
    cats = list(spec["values"])
    dtype = pd.CategoricalDtype(cats, ordered=bool(spec.get("ordered")))
    as_text = all(isinstance(c, str) for c in cats)
    code_of = {(c if as_text else _JSON.encode(c)): i for i, c in enumerate(cats)}
    codes = np.array([-1 if m else code_of[v] for v, m in zip(vals, mask, strict=True)], dtype=np.int64)
    return pd.Categorical.from_codes(codes, dtype=dtype)


def _decode(texts: np.ndarray, label: str, token: str, name: str, spec: dict[str, Any] | None = None) -> Any:
    mask = texts == token
    vals = texts.tolist()
    try:
        if label == "category" and spec is not None:
            return _decode_category(vals, mask, spec)
        if label == "json":
            return object_column(
                [
                    None if m else (_JSON_MISSING[v] if v in _JSON_MISSING else json.loads(v))
                    for v, m in zip(vals, mask, strict=True)
                ]
            )
        dtype: Any = pd.api.types.pandas_dtype(label)  # chosen at run time from the header's label
        raw: list[Any] = [None if m else v for v, m in zip(vals, mask, strict=True)]
        if isinstance(dtype, pd.DatetimeTZDtype):
            return (
                pd.to_datetime(raw, format="ISO8601", utc=True).tz_convert(dtype.tz).as_unit(dtype.unit).array
            )
        if isinstance(dtype, np.dtype) and dtype.kind == "M":
            unit: Any = np.datetime_data(dtype)[0]
            return pd.to_datetime(raw, format="ISO8601").as_unit(unit).array
        if pd.api.types.is_bool_dtype(dtype):
            bools = [None if v is None else v == "True" for v in raw]
            return (
                pd.array(bools, dtype=dtype)
                if not isinstance(dtype, np.dtype)
                else np.array(bools, dtype=dtype)
            )
        if pd.api.types.is_integer_dtype(dtype):
            ints = [None if v is None else int(v) for v in raw]
            return (
                pd.array(ints, dtype=dtype)
                if not isinstance(dtype, np.dtype)
                else np.array(ints, dtype=dtype)
            )
        if pd.api.types.is_float_dtype(dtype):
            floats = [None if v is None else float(v) for v in raw]
            if isinstance(dtype, np.dtype):
                return np.array([math.nan if v is None else v for v in floats], dtype=dtype)
            return pd.array(floats, dtype=dtype)
        if isinstance(dtype, pd.StringDtype):
            return pd.array(raw, dtype=dtype)
        return pd.Series(raw, dtype=object).astype(dtype).array
    except (TypeError, ValueError, KeyError) as exc:
        raise ValueError(
            f"read_csv: column {name!r} cannot be read as {label} ({exc}); was the file edited?"
        ) from None


def _json_or_text(value: Any) -> Any:
    if is_missing(value):
        return None
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def _infer_known(df: pd.DataFrame) -> pd.DataFrame:
    """Type the columns of a header-less CSV by their known names (others keep pandas' inference)."""
    out = {}
    for name in df.columns:
        kind = KNOWN_COLUMNS.get(str(name))
        if kind is None:
            out[name] = df[name]
            continue
        values = [None if is_missing(v) else v for v in df[name].to_numpy(dtype=object).tolist()]
        if kind == "json":
            values = [_json_or_text(v) for v in values]
        elif kind in ("str", "datetime"):
            values = [v if v is None or isinstance(v, str) else str(v) for v in values]
        try:
            out[name] = pd.Series(column(values, kind, str(name)), index=df.index, name=name)
        except (TypeError, ValueError):
            out[name] = df[name]  # the name is shared by another frame kind (e.g. a recording's text id)
    return pd.DataFrame(out, index=df.index)


def read_csv(path_or_buf: Any, **kw: Any) -> pd.DataFrame:
    """Read a CSV written by :func:`to_csv` back into exactly the same frame (dtypes, NA cells, JSON objects).

    ``path_or_buf`` is a path, a file object or the CSV text itself. A CSV without the ``# analytics_nb:``
    line is read by pandas and then typed by known column names (``created_at`` -> UTC datetime, ``filters``
    -> JSON, ``id`` -> Int64, ...). Other keywords (``usecols``, ``nrows``, ...) go to ``pandas.read_csv``.

    Args:
        path_or_buf: A path, a file object or the CSV text.
        **kw: Options of ``pandas.read_csv`` (``usecols``, ``nrows``, ...).

    Returns:
        The frame, as it was written.
    """
    text = _read_text(path_or_buf, kw.pop("encoding", "utf-8"))
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.startswith(HEADER_PREFIX):
        if not text.strip():
            return pd.DataFrame()
        return _infer_known(pd.read_csv(io.StringIO(text), **kw))
    first, _, rest = text.partition("\n")
    try:
        meta = json.loads(first[len(HEADER_PREFIX) :].rstrip("\r"))
        columns: dict[str, str] = meta["columns"]
    except (ValueError, KeyError, TypeError):
        raise ValueError(
            "read_csv: the '# analytics_nb:' header line is damaged; restore it or delete it"
        ) from None
    fixed = set(kw) & _FIXED_READ
    if fixed:
        raise TypeError(
            f"read_csv: option(s) {sorted(fixed)} are set by the file's header line; leave them out"
        )
    if not columns:
        return pd.DataFrame(index=pd.RangeIndex(0))
    raw = pd.read_csv(
        io.StringIO(rest),
        dtype=object,
        na_filter=False,
        keep_default_na=False,
        skip_blank_lines=False,
        sep=meta.get("sep", ","),
        **kw,
    )
    if meta.get("escaped_names"):
        raw.columns = [_unescape(n) for n in raw.columns]
    na: dict[str, str] = meta.get("na", {})
    cats: dict[str, dict[str, Any]] = meta.get("categories", {})
    escaped = set(meta.get("escaped", ()))
    data: dict[str, Any] = {}
    for name in raw.columns:
        label = columns.get(str(name))
        values = raw[name].to_numpy(dtype=object)
        if str(name) in escaped:  # to_csv's formula escape: exactly one leading ' is removed
            values = np.array([_unescape(v) for v in values.tolist()], dtype=object)
        data[name] = (
            object_column(values)
            if label is None
            else _decode(values, label, na.get(str(name), ""), str(name), cats.get(str(name)))
        )
    df = pd.DataFrame(data, index=pd.RangeIndex(len(raw)), columns=list(raw.columns), copy=False)
    index = meta.get("index")
    if index and all(c in df.columns for c in index["columns"]):
        df = df.set_index(index["columns"])
        df.index.names = index["names"]
    return df

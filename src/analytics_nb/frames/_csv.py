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
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from analytics_nb.frames._schema import KNOWN_COLUMNS, column, object_column
from analytics_nb.wire.cells import is_missing, json_default

__all__ = [
    "FORMULA_POLICIES",
    "HEADER_PREFIX",
    "FormulaCellsWarning",
    "FormulaPolicy",
    "read_csv",
    "to_csv",
    "to_csv_batches",
]

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
    # `_is_formula` inlined: one call a cell was a tenth of writing a wide CSV
    starts, number = _FORMULA_START, _SIGNED_NUMBER.fullmatch
    return sum(1 for t in texts if t and t[0] in starts and number(t) is None)


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


def _whole_number_texts(series: pd.Series) -> list[str | None]:
    """A boolean or integer column's cells as text ("True" / "False", the decimal digits), None for NA:
    column at a time in numpy (the same texts as ``str`` of each cell; a call a cell was most of writing
    the condition-index and flag columns of a result)."""
    dtype = series.dtype
    numpy_dtype: Any = getattr(dtype, "numpy_dtype", dtype)  # Int64 -> int64, boolean -> bool
    boolean = pd.api.types.is_bool_dtype(dtype)
    values = series.to_numpy(dtype=numpy_dtype, na_value=False if boolean else 0)
    words = np.array(["False", "True"], dtype=object)
    texts = words[values.view(np.uint8)] if boolean else values.astype(str)
    out = texts.astype(object)
    out[np.asarray(series.isna())] = None
    cells: list[str | None] = out.tolist()
    return cells


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
    if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_integer_dtype(dtype):
        return str(dtype), _whole_number_texts(series)
    values = series.to_numpy(dtype=object, na_value=None).tolist()  # type: ignore[call-overload]  # na_value=None
    if pd.api.types.is_bool_dtype(dtype):
        return str(dtype), [None if v is None else ("True" if v else "False") for v in values]
    if pd.api.types.is_float_dtype(dtype):
        return str(dtype), [None if is_missing(v) else repr(float(v)) for v in values]
    if isinstance(dtype, pd.StringDtype):
        return str(dtype), values
    return str(dtype), [None if is_missing(v) else str(v) for v in values]


def _na_token(empty: bool, present: frozenset[str]) -> str:
    """The column's NA cell: empty, unless some text is empty; then the first of ``<NA>``, ``<NA1>``, ...
    no text (``present``: the texts starting with ``<NA``) is."""
    if not empty:
        return ""
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
    _check_options(formulas, kw)
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"to_csv: expected a DataFrame, got {type(df).__name__}")
    _check_names(df)
    frame, index_meta = df, None
    index = df.index
    if not (isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1 and index.name is None):
        frame = df.reset_index()
        index_meta = {"columns": [str(c) for c in frame.columns[: index.nlevels]], "names": list(index.names)}
    columns = _encode_columns(frame)
    plan = _plan(_Stats.of(columns, index_meta, numbered=index_meta is None, rows=len(df)), formulas, kw)
    _warn_formulas(plan)
    content = plan.header_line() + _rows(plan, columns, kw, names=True)
    if path_or_buf is None:
        return content
    if hasattr(path_or_buf, "write"):
        path_or_buf.write(content)
        return None
    with open(path_or_buf, "w", encoding=kw.get("encoding", "utf-8"), newline="") as fh:
        fh.write(content)
    return None


def _check_options(formulas: Any, kw: dict[str, Any]) -> None:
    if formulas not in FORMULA_POLICIES:
        raise ValueError(
            f"to_csv: formulas={formulas!r} must be 'escape' (the default: formula-like cells get a "
            "leading '), 'warn' or 'keep'"
        )
    unknown = set(kw) - _ALLOWED_WRITE
    if unknown:
        raise TypeError(
            f"to_csv: option(s) {sorted(unknown)} would break the round trip; only {sorted(_ALLOWED_WRITE)} "
            "are accepted (use DataFrame.to_csv for a plain export)"
        )


def _check_names(df: pd.DataFrame) -> None:
    if isinstance(df.columns, pd.MultiIndex) or not all(isinstance(c, str) for c in df.columns):
        raise ValueError("to_csv: column names must be plain strings; rename the columns first")
    if df.columns.has_duplicates:
        dupes = sorted(set(df.columns[df.columns.duplicated()]))
        raise ValueError(f"to_csv: duplicate column names {dupes}; rename them first")


@dataclass
class _Column:
    """One column encoded: its dtype, each cell's text (None: NA) and what decides the header's entries
    for it (category spec, formula cells, an empty text, texts like the NA token); ``cr``: a text or the
    name holds a carriage return (the rows are then written quoted)."""

    dtype: Any
    texts: list[str | None]
    categories: dict[str, Any] | None
    formulas: int
    empty: bool
    na_like: frozenset[str]
    cr: bool


def _encode_columns(frame: pd.DataFrame) -> dict[str, _Column]:
    """Every column of ``frame`` as text; ValueError (naming the column) for text like an API key."""
    out: dict[str, _Column] = {}
    for name in frame.columns:
        _, texts = _encode(frame[name], str(name))
        dtype = frame[name].dtype
        cats = _plain_categories(dtype) if isinstance(dtype, pd.CategoricalDtype) else None
        # the non-empty texts (`filter`: no Python call a cell; an empty one adds nothing to look for)
        joined = "\x00".join(filter(None, texts)) + "\x00" + str(name)
        if "phx_" in joined and _KEY_RE.search(joined):
            raise ValueError(
                f"to_csv: column {name!r} holds text that looks like a personal API key (phx_...); "
                "drop or mask that column before exporting"
            )
        out[str(name)] = _Column(
            dtype,
            texts,
            None if cats is None else {"values": cats, "ordered": bool(getattr(dtype, "ordered", False))},
            _formula_count(texts),
            "" in texts,
            # looked for cell by cell only when the joined text has one (a scan of every cell cost 10%)
            frozenset(t for t in texts if t is not None and t.startswith("<NA"))
            if "<NA" in joined
            else frozenset(),
            "\r" in joined,
        )
    return out


@dataclass
class _Stats:
    """What the header of the rows written so far depends on, column by column (merged batch by batch).
    ``index``: the index's columns (the first ones) and names; ``numbered``: every batch's index is a plain
    ``RangeIndex`` numbering the rows from 0 on, so the index is not written."""

    columns: list[str]
    dtypes: dict[str, list[Any]]
    categories: dict[str, dict[str, Any] | None]
    formulas: dict[str, int]
    empty: dict[str, bool]
    na_like: dict[str, frozenset[str]]
    index: dict[str, Any] | None
    numbered: bool
    rows: int

    @classmethod
    def of(
        cls, columns: dict[str, _Column], index: dict[str, Any] | None, *, numbered: bool, rows: int
    ) -> _Stats:
        return cls(
            list(columns),
            {n: [c.dtype] for n, c in columns.items()},
            {n: c.categories for n, c in columns.items()},
            {n: c.formulas for n, c in columns.items()},
            {n: c.empty for n, c in columns.items()},
            {n: c.na_like for n, c in columns.items()},
            index,
            numbered,
            rows,
        )

    def add(self, other: _Stats) -> None:
        """Merge a later batch's (ValueError unless it has the same columns and index names)."""
        if other.columns != self.columns or other.index != self.index:
            raise ValueError(
                f"to_csv: the batches' columns differ ({self.columns} then {other.columns}); every batch "
                "must have the same columns and index names"
            )
        for n in self.columns:
            self.dtypes[n] += [d for d in other.dtypes[n] if d not in self.dtypes[n]]
            self.categories[n] = _union(self.categories[n], other.categories[n])
            self.formulas[n] += other.formulas[n]
            self.empty[n] = self.empty[n] or other.empty[n]
            self.na_like[n] = self.na_like[n] | other.na_like[n]
        self.numbered = self.numbered and other.numbered
        self.rows += other.rows

    @property
    def written(self) -> list[str]:
        """The columns the file holds (the index's only when it does not just number the rows)."""
        skip = len(self.index["columns"]) if self.numbered and self.index is not None else 0
        return self.columns[skip:]


def _union(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any] | None:
    """Two batches' categories as one (in order of appearance, as the whole column has them)."""
    if a is None or b is None:
        return a or b
    return {"values": list(dict.fromkeys([*a["values"], *b["values"]])), "ordered": a["ordered"]}


def _common_dtype(dtypes: list[Any], categories: dict[str, Any] | None) -> Any:
    """The dtype of a column whose batches have ``dtypes``: the one they share, the union of their
    categories, else what pandas gives the batches concatenated."""
    if len(dtypes) == 1:
        return dtypes[0]
    if categories is not None and all(isinstance(d, pd.CategoricalDtype) for d in dtypes):
        return pd.CategoricalDtype(categories["values"], ordered=categories["ordered"])
    return pd.concat([pd.Series([], dtype=d) for d in dtypes]).dtype


@dataclass
class _Plan:
    """The header line's ``meta``, the columns written (``header``: their names as written) and their
    dtypes, for the whole file."""

    meta: dict[str, Any]
    columns: list[str]
    dtypes: dict[str, Any]
    header: list[str]
    formula_cells: dict[str, int]
    formulas: str
    lineterminator: str

    def header_line(self) -> str:
        return HEADER_PREFIX + json.dumps(self.meta, ensure_ascii=False) + self.lineterminator

    def same(self, other: _Plan) -> bool:
        return self.meta == other.meta and self.dtypes == other.dtypes


def _plan(stats: _Stats, formulas: str, kw: dict[str, Any]) -> _Plan:
    """The header for rows with these ``stats`` (for one frame: what `to_csv` always wrote)."""
    meta: dict[str, Any] = {"version": _FORMAT_VERSION}
    if stats.index is not None and not stats.numbered:
        meta["index"] = stats.index
    names = stats.written
    dtypes = {n: _common_dtype(stats.dtypes[n], stats.categories[n]) for n in names}
    formula_cells = {n: stats.formulas[n] for n in names if stats.formulas[n]}
    escaped = list(formula_cells) if formulas == "escape" else []
    header: list[str] = list(names)
    if any(_is_formula(n) for n in header):
        formula_cells["(column names)"] = sum(1 for n in header if _is_formula(n))
        if formulas == "escape":
            header = [str(n) for n in _escape_cells(list(header))]
            meta["escaped_names"] = True
    if escaped:
        meta["escaped"] = escaped
    meta["columns"] = {n: _encode(pd.Series([], dtype=dtypes[n]), n)[0] for n in names}
    meta.update(_cells_meta(stats, names, kw.get("sep", ",")))
    return _Plan(meta, names, dtypes, header, formula_cells, formulas, kw.get("lineterminator", "\n"))


def _cells_meta(stats: _Stats, names: list[str], sep: str) -> dict[str, Any]:
    """The header's entries after ``columns``: categories, NA tokens and a separator other than a comma."""
    meta: dict[str, Any] = {}
    categories = {n: stats.categories[n] for n in names if stats.categories[n] is not None}
    if categories:
        meta["categories"] = categories
    na = {n: _na_token(stats.empty[n], stats.na_like[n]) for n in names}
    if any(na.values()):
        meta["na"] = {n: t for n, t in na.items() if t}
    if sep != ",":
        meta["sep"] = sep
    return meta


def _warn_formulas(plan: _Plan) -> None:
    cells = plan.formula_cells
    if cells and plan.formulas == "warn":
        warnings.warn(
            FormulaCellsWarning(
                f"to_csv: {sum(cells.values()):,} cells a spreadsheet would run as formulas (in "
                f"{sorted(cells)}) were written unchanged; leave formulas='escape' (the default) "
                "for files people open in a spreadsheet",
                count=sum(cells.values()),
                columns=sorted(cells),
            ),
            stacklevel=3,
        )


def _rows(plan: _Plan, columns: dict[str, _Column], kw: dict[str, Any], *, names: bool) -> str:
    """The CSV text of ``columns`` under ``plan``'s header (the row of column names first when ``names``)."""
    escaped = set(plan.meta.get("escaped", ()))
    na = plan.meta.get("na", {})
    text: list[list[str]] = []
    has_cr = any(columns[name].cr for name in plan.columns)
    for name in plan.columns:
        texts = columns[name].texts
        texts = _escape_cells(texts) if name in escaped else texts
        token = na.get(name, "")
        text.append([token if t is None else t for t in texts])
    out = io.StringIO()
    writer = csv.writer(
        out,
        delimiter=kw.get("sep", ","),
        lineterminator=plan.lineterminator,
        # A bare carriage return is not quoted by QUOTE_MINIMAL and would split the row on reading.
        quoting=csv.QUOTE_ALL if has_cr else csv.QUOTE_MINIMAL,
    )
    if names:
        writer.writerow(plan.header)
    writer.writerows(zip(*text, strict=True))
    return out.getvalue()


def to_csv_batches(
    batches: Callable[[], Iterable[pd.DataFrame]],
    path: str | os.PathLike[str],
    *,
    formulas: FormulaPolicy = "escape",
    **kw: Any,
) -> None:
    """Write the frames ``batches()`` yields, one under the other, as ONE CSV that :func:`read_csv` reads
    back as :func:`to_csv` of the frames concatenated (the same dtypes, categories, NA cells, escaped
    formulas and index), holding one batch at a time.

    The header line comes first, so it is made from the first batch; a later batch that changes it (a
    formula cell or an empty text in a column that had none, a new category, another dtype, an index that
    does not continue the rows) makes the writer read the rest only to learn the whole file's header, then
    write every batch again under it (``batches`` is called a second time). The file is written next to
    ``path`` and renamed when complete: an error (text like an API key) leaves nothing behind.

    Args:
        batches: Called to get the frames, in order, every one with the same columns (the first may be an
            empty frame: it gives the header of a file without rows).
        path: The file to write.
        formulas: ``"escape"``, ``"warn"`` or ``"keep"``, as for :func:`to_csv`.
        **kw: ``sep``, ``encoding`` or ``lineterminator``.

    Raises:
        ValueError: A cell looks like a personal API key, or the batches' columns differ (nothing is
            written).
    """
    _check_options(formulas, kw)
    part = f"{os.fspath(path)}.part"
    try:
        plan = _write_batches(batches(), part, formulas, kw, None)
        if plan is not None:  # the header changed after the first batch: again, under the whole file's
            _write_batches(batches(), part, formulas, kw, plan)
        os.replace(part, path)
    except BaseException:
        if os.path.exists(part):
            os.remove(part)
        raise


def _batch_stats(batch: Any, rows: int) -> tuple[_Stats, dict[str, _Column]]:
    """A batch's columns (its index's first) encoded, and their stats; ``rows``: the rows before it."""
    if not isinstance(batch, pd.DataFrame):
        raise TypeError(f"to_csv: expected DataFrames, got {type(batch).__name__}")
    _check_names(batch)
    index = batch.index
    numbered = (
        isinstance(index, pd.RangeIndex)
        and index.name is None
        and index.step == 1
        and (index.start == rows or len(index) == 0)
    )
    frame = batch.reset_index()
    meta = {"columns": [str(c) for c in frame.columns[: index.nlevels]], "names": list(index.names)}
    columns = _encode_columns(frame)
    return _Stats.of(columns, meta, numbered=numbered, rows=len(batch)), columns


def _write_batches(
    batches: Iterable[pd.DataFrame], part: str, formulas: str, kw: dict[str, Any], fixed: _Plan | None
) -> _Plan | None:
    """Write ``batches`` to ``part`` under the first batch's header (``fixed``: under that one); the whole
    file's plan when a later batch changed the header (the rest are then read for it, not written)."""
    stats: _Stats | None = None
    plan = fixed
    changed = False
    with open(part, "w", encoding=kw.get("encoding", "utf-8"), newline="") as fh:
        for batch in batches:
            if fixed is not None:  # the second pass: every batch in the whole file's dtypes
                cast = {n: d for n, d in fixed.dtypes.items() if n in batch.columns and batch[n].dtype != d}
                batch = batch.astype(cast) if cast else batch
            one, columns = _batch_stats(batch, stats.rows if stats is not None else 0)
            first = stats is None
            if stats is None:
                stats = one
            else:
                stats.add(one)
            if changed:
                continue
            now = _plan(stats, formulas, kw)
            if plan is None:
                plan = now
            if first:
                fh.write(plan.header_line())
            if not plan.same(now) and fixed is None:
                changed = True
                continue
            fh.write(_rows(plan, columns, kw, names=first))
    if stats is None:
        raise ValueError("to_csv: no batch to write (yield at least one, an empty frame for no rows)")
    final = _plan(stats, formulas, kw)
    if changed:
        return final
    if fixed is not None and not fixed.same(final):
        raise ValueError("to_csv: the batches changed between two passes over them")
    _warn_formulas(final)
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

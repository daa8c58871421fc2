"""The SQL engine's answers read back in the local engine's shape, column at a time from Arrow (issue 35).

`SqlSource` reads DuckDB's answers as an Arrow table and builds each output column the way the local
engine's frame (`flags._frame._FrameResult.frame`) builds it from codes, never through Python lists:

- a boolean flag: ``pd.arrays.BooleanArray`` from the Arrow values and validity bitmap;
- a text flag (variants or a holdout value): dictionary-encoded in Arrow, then an ``object`` column taken
  from the small lookup of its distinct texts (the variant text, False for "false", True for "true",
  pd.NA for NULL: `SqlSource._value`'s reading);
- ``<key>:payload``: ``category`` from each lookup entry's payload code (the flag's payload texts first, any
  other in order of appearance, as `_output.category_column` orders them);
- ``<key>:reason``: ``category`` over `reason_dtype()`'s codes (any other text appended in order of
  appearance); ``<key>:condition_index``: ``Int64`` from the Arrow integers and bitmap;
- ``error``: pandas ``string`` straight from Arrow; ``distinct_id``: `TEXT_IDS` from Arrow text, else the
  ids' text (`id_text`) as before.

Every column is what the former builder (`_output.build_frame` over Python lists) gave: the same dtypes,
categories, values and index. A column of an unexpected Arrow type takes the cell-by-cell reading, which
refuses a boolean flag's non-boolean cell instead of reading it as a plausible value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from analytics_nb.flags import REASON_CODES
from analytics_nb.flags._frame import reason_dtype
from analytics_nb.simulation._output import category_column, flag_column

__all__ = ["FrameSpec", "arrow_frame_columns", "duckdb_frame", "in_order", "text_value"]


def text_value(v: Any) -> Any:
    """A text flag's SQL answer as the local engine's value: "true" / "false" are the booleans, any other
    text the variant or holdout value, NULL unknown (None)."""
    if v is None:
        return None
    return True if v == "true" else False if v == "false" else str(v)


class FrameSpec:
    """What reading one SQL run's answers back needs: the flags (in the definitions' order) and which are
    text, whether reason columns were written, and per flag its payload table (value label -> payload
    text) and payload texts (the categories a ``<key>:payload`` column starts with); None: no payloads."""

    def __init__(
        self,
        keys: Sequence[str],
        text_flags: set[str],
        *,
        reasons_written: bool,
        payload_tables: Mapping[str, Mapping[str, str]] | None,
        payload_texts: Mapping[str, Sequence[str]],
        cell_value: Callable[[Any, bool], Any],
    ) -> None:
        self.keys = list(keys)
        self.text_flags = text_flags
        self.reasons_written = reasons_written
        self.payload_tables = payload_tables
        self.payload_texts = payload_texts
        #: the cell-by-cell reading (`_sql_source._value`) for a column of an unexpected Arrow type
        self.cell_value = cell_value


def _chunk(column: Any, fallback: Any) -> Any:
    """One Arrow array of ``column`` (a ChunkedArray); a column of NULLs only (Arrow's null type) as
    ``fallback``'s type."""
    import pyarrow as pa

    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    return array.cast(fallback) if pa.types.is_null(array.type) else array


def _mask(array: Any) -> np.ndarray:
    """The rows of ``array`` that are NULL, as numpy booleans."""
    mask: np.ndarray = array.is_null().to_numpy(zero_copy_only=False)
    return mask


def _is_text(array: Any) -> bool:
    """Whether an Arrow array holds text (or is dictionary-encoded text, as pyarrow reads it from parquet)."""
    import pyarrow as pa

    kind = array.type.value_type if pa.types.is_dictionary(array.type) else array.type
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind))


def _booleans(array: Any) -> tuple[np.ndarray, np.ndarray]:
    """A boolean Arrow array as numpy (its values, False where NULL; its NULL rows)."""
    import pyarrow.compute as pc

    values: np.ndarray = pc.fill_null(array, False).to_numpy(zero_copy_only=False)
    return values, _mask(array)


def _encoded(array: Any) -> tuple[list[Any], np.ndarray]:
    """A text column dictionary-encoded: (its texts, each row's position in them; NULL rows at
    ``len(texts)``). Encoded here, the texts are in order of first appearance; read encoded from parquet,
    they are the file's dictionary (which may hold a text no row has: `_category` orders by rows)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    encoded = array if pa.types.is_dictionary(array.type) else pc.dictionary_encode(array)
    texts: list[Any] = encoded.dictionary.to_pylist()
    positions = pc.fill_null(encoded.indices, len(texts)).to_numpy(zero_copy_only=False)
    return texts, positions.astype(np.int32, copy=False)


def _codes_dtype(n: int) -> Any:
    """The code type pandas keeps for ``n`` categories (int8 below 127), so nothing is converted."""
    return np.int8 if n < 127 else np.int16 if n < 32767 else np.int32


def _category(
    lookup: Sequence[str | None], positions: np.ndarray, first: Sequence[str], index: pd.Index
) -> pd.Series:
    """``category`` whose row i is ``lookup[positions[i]]`` (None, or a position past the lookup: missing):
    the categories ``first``, then any other text in order of its first row (`_output.category_column`'s
    order)."""
    categories = list(first)
    code_of = {text: i for i, text in enumerate(categories)}
    firsts: dict[str, int] = {}
    # rare: a reason from a newer service, a payload outside the definitions
    for i, text in enumerate(lookup):
        if text is not None and text not in code_of:
            rows = np.flatnonzero(positions == i)
            if len(rows):
                firsts[text] = min(firsts.get(text, int(rows[0])), int(rows[0]))
    for text in sorted(firsts, key=firsts.__getitem__):
        code_of[text] = len(categories)
        categories.append(text)
    dtype = reason_dtype() if categories == list(REASON_CODES) else pd.CategoricalDtype(categories)
    codes_of = [-1 if t is None else code_of.get(t, -1) for t in lookup]
    table = np.array([*codes_of, -1], dtype=_codes_dtype(len(categories)))
    codes = table.take(np.minimum(positions, len(lookup)))
    return pd.Series(pd.Categorical.from_codes(codes, dtype=dtype, validate=False), index=index, copy=False)


def _integers(array: Any, index: pd.Index) -> pd.Series:
    """A condition index column: ``Int64`` from the Arrow integers and validity."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_integer(array.type):
        return pd.Series(pd.array(array.to_pandas().astype("Int64")), index=index)
    values = pc.fill_null(array, 0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    return pd.Series(pd.arrays.IntegerArray(values, _mask(array)), index=index, copy=False)


def _payload_of(table: Mapping[str, str], value: Any) -> str | None:
    """A value's payload as the engine gives it (`CompiledFlag.payload_for`: the variant's, "true"'s for
    True, none for False or unknown)."""
    if value is None or value is pd.NA or value is False:
        return None
    return table.get(value if isinstance(value, str) else "true")


def _flag_columns(spec: FrameSpec, table: Any, key: str, index: pd.Index) -> dict[str, pd.Series]:
    """A flag's value column and (when asked) its payload column."""
    import pyarrow as pa

    text = key in spec.text_flags
    array = _chunk(table[key], pa.string() if text else pa.bool_())
    lookup: list[Any]
    if text and _is_text(array):
        texts, positions = _encoded(array)
        lookup = [text_value(t) for t in texts]
        values = np.array([*lookup, pd.NA], dtype=object).take(positions)
        column = pd.Series(values, index=index, dtype=object, copy=False)
    elif not text and pa.types.is_boolean(array.type):
        lookup = [False, True]
        values, missing = _booleans(array)
        positions = np.where(missing, np.int32(2), values.astype(np.int32))
        column = pd.Series(pd.arrays.BooleanArray(values, missing), index=index, copy=False)
    else:  # an unexpected type: cell by cell (a boolean flag's non-boolean cell is refused)
        lookup = [spec.cell_value(v, text) for v in array.to_pylist()]
        positions = np.arange(len(lookup), dtype=np.int64)
        column = flag_column(lookup, index, multivariate=text)
    out = {key: column}
    if spec.payload_tables is not None:
        payloads = spec.payload_tables.get(key, {})
        first = spec.payload_texts.get(key, ())
        texts_of = [_payload_of(payloads, v) for v in lookup]
        out[f"{key}:payload"] = _category(texts_of, positions, first, index)
    return out


def _reason(array: Any, index: pd.Index) -> pd.Series:
    """``<key>:reason``: `reason_dtype()`'s codes (another text appended in order of appearance)."""
    if not _is_text(array):
        return category_column(array.to_pylist(), index, REASON_CODES)
    texts, positions = _encoded(array)
    return _category(texts, positions, REASON_CODES, index)


def arrow_frame_columns(spec: FrameSpec, table: Any, index: pd.Index) -> dict[str, pd.Series]:
    """The output columns of every flag of ``spec`` read from ``table`` (DuckDB's answers as Arrow, rows in
    input order): values, payloads, reasons and condition indexes, then ``error``, each on ``index``."""
    import pyarrow as pa

    cols: dict[str, pd.Series] = {}
    for key in spec.keys:
        cols.update(_flag_columns(spec, table, key, index))
    if spec.reasons_written:
        for key in spec.keys:
            cols[f"{key}:reason"] = _reason(_chunk(table[f"{key}:reason"], pa.string()), index)
        for key in spec.keys:
            column = _chunk(table[f"{key}:condition_index"], pa.int64())
            cols[f"{key}:condition_index"] = _integers(column, index)
    cols["error"] = pd.Series(pd.array(_chunk(table["error"], pa.string()), dtype="string"), index=index)
    return cols


def in_order(table: Any, keys: Sequence[str]) -> Any:
    """``table``'s rows in the order of its ``keys`` columns (the row key: the row, or the file and the row
    in it), as DuckDB's ``ORDER BY`` of them would give (text compared byte by byte); no copy when the rows
    are in that order already (one key, increasing)."""
    import pyarrow.compute as pc

    if len(keys) == 1:
        positions = table[keys[0]].to_numpy()
        if len(positions) < 2 or bool((positions[1:] > positions[:-1]).all()):
            return table
        return table.take(np.argsort(positions, kind="stable"))
    return table.take(pc.sort_indices(table, [(k, "ascending") for k in keys]))


def _plain(column: Any) -> Any:
    """An Arrow column as DuckDB's ``df()`` gives it, for the types whose conversion is known: text as
    pandas' ``str`` (NaN for NULL), integers and booleans as numpy or, with a NULL, the nullable dtype
    (``Int64``, ``boolean``), floats as numpy (NaN for NULL); None for any other type (or a column of
    NULLs only, which DuckDB gives as ``object``)."""
    import pyarrow as pa

    kind = column.type
    nulls = column.null_count
    if nulls == len(column):
        return None
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return pd.array(column, dtype=pd.StringDtype(na_value=np.nan))
    if pa.types.is_floating(kind) and kind.bit_width in (32, 64):
        return column.to_numpy()
    if pa.types.is_integer(kind):
        # values and mask from Arrow's buffers: ``pd.array(column, dtype="Int64")`` went through Python
        # objects and floats, so an id near 2**63 overflowed (and a large one could lose digits)
        if not nulls:
            return column.to_numpy()
        return pd.arrays.IntegerArray(column.fill_null(0).to_numpy(), _null_mask(column))
    if pa.types.is_boolean(kind):
        if not nulls:
            return column.to_numpy()
        return pd.arrays.BooleanArray(column.fill_null(False).to_numpy(), _null_mask(column))
    return None


def _null_mask(column: Any) -> Any:
    """A numpy bool array, True where the Arrow column is NULL."""
    return np.asarray(column.is_null().to_numpy(zero_copy_only=False), dtype=bool)


def duckdb_frame(table: Any, con: Any) -> pd.DataFrame:
    """``table`` (Arrow) as the pandas frame DuckDB's ``df()`` gives for the same rows: the text, integer,
    float and boolean columns converted from Arrow (no Python object a cell: reading 1M property sets back
    through ``df()`` was most of the SQL result's ``frame``), any other column by DuckDB itself."""
    plain = {name: _plain(table[name]) for name in table.column_names}
    rest = [name for name, values in plain.items() if values is None]
    by_duckdb = con.from_arrow(table.select(rest)).df() if rest else None
    columns = {
        name: by_duckdb[name] if values is None and by_duckdb is not None else pd.Series(values, copy=False)
        for name, values in plain.items()
    }
    return pd.DataFrame(columns, copy=False)

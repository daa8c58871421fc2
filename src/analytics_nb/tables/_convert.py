"""Families beyond pandas, converted at the edge: Polars (eager and lazy), PyArrow tables and datasets,
DuckDB relations and parquet paths become the pandas frame the flag engine reads, and results go back.

Every conversion goes through Arrow and reads it with ``types_mapper=pd.ArrowDtype``, so the columns keep
Arrow's buffers (no copy of the values; Polars' ``to_arrow`` and DuckDB's Arrow export share theirs where the
library allows). The libraries are imported only when an object of theirs is passed in: the family is told
from the object's type's module name, so ``import analytics_nb`` never imports them.

Results in Arrow or Polars: a boolean flag is a ``bool`` column (null where pandas has NA, an unknown value);
a multivariate flag is a ``string`` column holding the variant key, ``"false"`` where no variant matched (the
JSON text of the value: Arrow has no "bool or text" column) and null where unknown; payloads and reasons
(``category`` in pandas) are dictionary-encoded strings (Polars: ``Categorical``); errors are ``string``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from analytics_nb.tables._errors import TableInputError
from analytics_nb.tables._extras import require

__all__ = [
    "OUTPUTS",
    "Family",
    "Output",
    "check_output",
    "default_output",
    "family_of",
    "from_pandas",
    "text_column",
    "to_pandas",
]

Family = Literal["pandas", "polars", "arrow", "duckdb", "parquet", "records"]
Output = Literal["pandas", "polars", "arrow"]
OUTPUTS: tuple[str, ...] = ("pandas", "polars", "arrow")

_EXTRAS = {"polars": "polars", "pyarrow": "arrow", "duckdb": "duckdb", "dask": "dask"}


def _root(obj: Any) -> str:
    return type(obj).__module__.split(".", 1)[0]


def _is_parquet_path(obj: Any) -> bool:
    """A parquet path (read literally: ``a[1].parquet`` is that file, never a pattern), or a non-empty list
    of them (the explicit form of a glob: ``sorted(Path("exports").glob("*.parquet"))``)."""
    if isinstance(obj, list | tuple) and obj:
        return all(
            isinstance(p, Path) or (isinstance(p, str) and p.endswith((".parquet", ".pq"))) for p in obj
        )
    if isinstance(obj, Path):
        return True
    return isinstance(obj, str) and (obj.endswith((".parquet", ".pq")) or os.path.isdir(obj))


def family_of(obj: Any) -> Family:
    """The family of ``obj`` (without importing any library): pandas, polars, arrow, duckdb, parquet or
    records (anything else: lists of dicts and dicts, which the simulation reads as property sets)."""
    if isinstance(obj, pd.DataFrame):
        return "pandas"
    root = _root(obj)
    if root == "polars":
        return "polars"
    if root == "pyarrow":
        return "arrow"
    if root in ("duckdb", "_duckdb"):
        return "duckdb"
    if _is_parquet_path(obj):
        return "parquet"
    return "records"


def check_output(output: Any) -> Output | None:
    """``output=`` checked: None (the caller's family) or one of pandas / polars / arrow."""
    if output is None or output in OUTPUTS:
        return output  # type: ignore[no-any-return]
    raise TableInputError(
        f"output={output!r}: use 'pandas', 'polars' or 'arrow' (or leave it out for the input's family)."
    )


def _need(module: str) -> Any:
    return require(module, "this table family", _EXTRAS.get(module.split(".", 1)[0]))


def _arrow_to_pandas(table: Any) -> pd.DataFrame:
    """An Arrow table as pandas, the columns backed by Arrow's own buffers (``pd.ArrowDtype``)."""
    frame: pd.DataFrame = table.to_pandas(types_mapper=pd.ArrowDtype)
    return frame


def _to_arrow(obj: Any) -> Any:
    """Any supported non-pandas family as one Arrow table."""
    family = family_of(obj)
    if family == "polars":
        pl = _need("polars")
        if isinstance(obj, pl.LazyFrame):
            obj = obj.collect()
        if not isinstance(obj, pl.DataFrame):
            raise TableInputError(
                f"a Polars {type(obj).__name__} is not a table of property sets; "
                "pass a DataFrame or LazyFrame."
            )
        return obj.to_arrow()
    if family == "arrow":
        pa = _need("pyarrow")
        if isinstance(obj, pa.Table):
            return obj
        if isinstance(obj, pa.RecordBatch):
            return pa.Table.from_batches([obj])
        ds = _need("pyarrow.dataset")
        if isinstance(obj, ds.Dataset):
            return obj.to_table()
        raise TableInputError(
            f"a PyArrow {type(obj).__name__} is not a table; pass a Table, RecordBatch or dataset."
        )
    if family == "duckdb":
        # DuckDBPyRelation: to_arrow_table (duckdb >= 1.4) or fetch_arrow_table (older)
        fetch = getattr(obj, "to_arrow_table", None) or getattr(obj, "fetch_arrow_table", None)
        if fetch is None:
            raise TableInputError(
                f"a DuckDB {type(obj).__name__} is not a relation; pass con.sql('select ...') or con.table()."
            )
        return fetch()
    if family == "parquet":
        pq = _need("pyarrow.parquet")
        paths = [Path(p) for p in obj] if isinstance(obj, list | tuple) else [Path(obj)]
        for path in paths:
            if not path.exists():
                raise TableInputError(f"parquet path {str(path)!r} does not exist.")
        tables = [pq.read_table(path) for path in paths]  # Arrow takes a path literally: no glob
        return tables[0] if len(tables) == 1 else _need("pyarrow").concat_tables(tables)
    raise TableInputError(f"unsupported table of type {type(obj).__name__}.")


def to_pandas(obj: Any) -> tuple[Any, Family]:
    """``(a pandas frame or the records as given, the family)``: pandas frames and records pass through;
    the other families become a pandas frame over Arrow buffers. A Dask or Spark frame is refused with the
    runner that evaluates it where it lives."""
    family = family_of(obj)
    if _root(obj) in ("dask", "dask_expr", "pyspark"):
        runner = (
            "simulate_dask(ddf, definitions=...)" if _root(obj) != "pyspark" else "simulate_spark(sdf, ...)"
        )
        raise TableInputError(
            f"a {type(obj).__name__} is evaluated where it lives, not collected: use "
            f"analytics_nb.simulation.{runner} (lazy results, summaries on the cluster)."
        )
    if family in ("pandas", "records"):
        return obj, family
    return _arrow_to_pandas(_to_arrow(obj)), family


def default_output(family: Family) -> Output:
    """Polars in, Polars out; Arrow in, Arrow out; everything else pandas."""
    if family == "polars":
        return "polars"
    if family == "arrow":
        return "arrow"
    return "pandas"


def _arrow_column(series: pd.Series) -> Any:
    """A result column as an Arrow array (see the module docstring for flag columns)."""
    pa = _need("pyarrow")
    if str(series.dtype) == "boolean":  # the mask becomes the validity bitmap, no Python object per row
        return pa.array(series.array, type=pa.bool_())
    if isinstance(series.dtype, pd.ArrowDtype):
        return pa.array(series.array)
    if isinstance(series.dtype, pd.CategoricalDtype):  # payloads, reasons: a dictionary array
        return pa.array(series.array, from_pandas=True)
    if isinstance(series.dtype, pd.StringDtype):  # str / string: the text as is, NA null, no cell in Python
        return pa.array(series.array, type=pa.string())
    if series.dtype == object or str(series.dtype) in ("string", "str"):
        return pa.array(text_column(series), type=pa.string())
    return pa.Array.from_pandas(series)  # numbers, datetimes; Int64 (condition indexes) with NA as null


def text_column(series: pd.Series) -> list[str | None]:
    """A result column as text: a variant key as is, True / False as "true" / "false", NA as None."""
    return [
        None
        if v is None or v is pd.NA or (isinstance(v, float) and v != v)
        else ("true" if v is True or v is np.True_ else "false" if v is False or v is np.False_ else str(v))
        for v in series.tolist()
    ]


def from_pandas(frame: pd.DataFrame, output: Output) -> Any:
    """A result frame in ``output``'s family (the index is not kept: rows are in input order)."""
    if output == "pandas":
        return frame
    pa = _need("pyarrow")
    table = pa.table({str(c): _arrow_column(frame[c]) for c in frame.columns})
    if output == "arrow":
        return table
    pl = _need("polars")
    return pl.from_arrow(table)

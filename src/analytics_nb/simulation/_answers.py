"""The engine side of the one result (issue 34): what an engine gives `SimulationResult`.

`simulate` answers with one `SimulationResult`, whichever engine computed the answers; the result asks its
`AnswerSource` for what it shows, so an engine that keeps its answers elsewhere (Dask partitions on a
cluster, DuckDB's parquet) counts them where they lie and brings back only the small tables:

- ``keys`` and ``len()``: the flag keys and the rows;
- ``counts(keys)``: per flag, its value counts and the rows with an unknown value (``summary()`` is built
  from them, once, by `summary_from_counts`, for every engine);
- ``crosstab(key, by, ...)``: the table of a flag's values per value of a property;
- ``collect(inputs=...)``: the answers as pandas (the only call that brings every row back);
- ``batches(rows, inputs=...)``: the same rows, ``rows`` at a time, in order: frames in ``collect``'s shape
  (columns, dtypes, index labels, values), so a file of every answer is written holding one batch
  (`write_parquet_batches`, `frames.to_csv_batches`); an engine that keeps its answers elsewhere reads
  each batch from there (DuckDB: a range of the row key; Dask: one partition at a time);
- ``head(n)``, ``errors()``, ``to_parquet(path, ...)`` (only those rows, or written where they lie);
- ``missing_report()``: {flag: (the properties no column holds, answers they made NA)}, the report
  `flags._door.warn_missing_properties` builds the one `MissingPropertyWarning` from.

`FrameSource` is the in-memory source (local, remote, both: the answers are a pandas frame already); the Dask
source is `simulation._distributed.DaskSource`. A lazy engine hands the result a `Backend`, which makes its
source over the result's current frame (so ``dataclasses.replace(result, frame=...)`` and
``result.frame = result.frame.persist()`` keep working); a subclass that keeps its answers itself (the SQL
engine's result) may override `SimulationResult.source` instead.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import pandas as pd

from analytics_nb.flags._door import MissingReport
from analytics_nb.simulation._errors import SimulationInputError
from analytics_nb.simulation._output import flag_columns
from analytics_nb.simulation._summary import ValueCounts, crosstab, value_counts
from analytics_nb.tables import from_pandas

__all__ = [
    "BATCH_ROWS",
    "AnswerSource",
    "Backend",
    "Counts",
    "FrameSource",
    "property_values",
    "write_parquet",
    "write_parquet_batches",
]

Counts = dict[str, tuple[ValueCounts, int]]
"""{flag: (counts of its known values, rows with an unknown value)}, as `_summary.value_counts` gives them."""

Normalize = bool | Literal["all", "index", "columns"]

BATCH_ROWS = 50_000
"""Rows per batch when a result is written batch by batch (a batch of answers with reasons and input columns
as pandas is ~2.5 KB a row: 50k rows ~0.12 GB)."""


@runtime_checkable
class AnswerSource(Protocol):
    """What an engine implements so `SimulationResult` can answer over it (see the module doc)."""

    #: the answers are computed only when asked (Dask): the repr and notebook view count nothing
    lazy: bool

    @property
    def keys(self) -> list[str]: ...

    def __len__(self) -> int: ...

    def counts(self, keys: Sequence[str]) -> Counts: ...

    def crosstab(self, key: str, by: str, *, normalize: Normalize, margins: bool) -> pd.DataFrame: ...

    def collect(self, *, inputs: bool = False) -> pd.DataFrame: ...

    def batches(self, rows: int, *, inputs: bool) -> Iterator[pd.DataFrame]: ...

    def head(self, n: int) -> pd.DataFrame: ...

    def errors(self) -> pd.DataFrame: ...

    def to_parquet(self, path: str | Path, *, inputs: bool) -> Path: ...

    def missing_report(self) -> MissingReport | None: ...


class Backend(Protocol):
    """A lazy engine's settings, kept on the result: it makes the source over the result's frames."""

    def source(self, frame: Any, inputs: Any) -> AnswerSource: ...


def property_values(inputs: pd.DataFrame, name: str) -> pd.Series:
    """A property's values per row of ``inputs``, from a column or from the ``person_properties`` dicts;
    `SimulationInputError` listing the properties there are when there is no such property."""
    if name in inputs.columns:
        return inputs[name].rename(name)
    if "person_properties" in inputs.columns:
        values = [c.get(name) if isinstance(c, dict) else None for c in inputs["person_properties"].tolist()]
        if any(v is not None for v in values):
            return pd.Series(values, index=inputs.index, dtype=object, name=name)
    cols = [c for c in inputs.columns if c not in ("distinct_id", "person_properties", "group_properties")]
    raise SimulationInputError(
        f"no property {name!r} in the property sets; crosstab by one of {', '.join(map(repr, cols))}.",
        column=name,
    )


def write_parquet(frame: pd.DataFrame, path: str | Path) -> Path:
    """``frame`` to one parquet file through Arrow (flag columns typed as in ``to("arrow")``)."""
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:  # one line naming the extra, not a bare ModuleNotFoundError
        raise ImportError('to_parquet needs pyarrow: pip install "analytics-nb[arrow]"') from exc
    path = Path(path)
    pq.write_table(from_pandas(frame, "arrow"), path)
    return path


def write_parquet_batches(batches: Iterator[pd.DataFrame], path: str | Path) -> Path:
    """The frames of ``batches`` (one result's, in order) to ONE parquet file, one batch in memory at a time:
    each converted as `write_parquet` converts a whole frame (``to("arrow")``'s types) and written as a row
    group of a `pyarrow.parquet.ParquetWriter` whose schema is the first batch's; a later batch whose Arrow
    types differ (a dictionary's index width) is cast to it, and one that cannot be is refused (ValueError
    naming the column) rather than written under another type. The file is written next to ``path`` and
    renamed when complete."""
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ImportError('to_parquet needs pyarrow: pip install "analytics-nb[arrow]"') from exc
    path = Path(path)
    part = path.with_name(path.name + ".part")
    writer = schema = None
    try:
        for frame in batches:
            table = from_pandas(frame, "arrow")
            if writer is None:
                schema = table.schema
                writer = pq.ParquetWriter(part, schema)
            writer.write_table(_conformed(table, schema))
        if writer is None:
            raise ValueError("write_parquet_batches: no batch (an empty result yields one empty frame)")
        writer.close()
        part.replace(path)
    except BaseException:
        if writer is not None:
            writer.close()
        part.unlink(missing_ok=True)
        raise
    return path


def _conformed(table: Any, schema: Any) -> Any:
    """``table`` in ``schema`` (the file's); ValueError naming a column whose type cannot be cast."""
    if table.schema.equals(schema):
        return table
    if table.schema.names != schema.names:
        raise ValueError(
            f"to_parquet: a later batch has the columns {table.schema.names}, the file {schema.names}; the "
            "batches of one result must have the same columns"
        )
    for field in table.schema:
        want = schema.field(field.name).type
        if want != field.type and not _castable(field.type, want):
            raise ValueError(
                f"to_parquet: column {field.name!r} is {field.type} in a later batch but {want} in the file; "
                "the batches of one result must have the same types"
            )
    return table.cast(schema)


def _castable(source: Any, target: Any) -> bool:
    import pyarrow as pa

    if pa.types.is_dictionary(source) and pa.types.is_dictionary(target):
        return bool(source.value_type == target.value_type)
    return bool(pa.types.is_null(source))


@dataclass(repr=False)
class FrameSource:
    """Answers already in memory (local, remote, both): ``outputs`` (the answers), ``frame`` (with the input
    columns), ``inputs`` (the property sets) and the local engine's ``report`` (None: none was kept)."""

    outputs: pd.DataFrame
    frame: pd.DataFrame
    inputs: pd.DataFrame
    report: MissingReport | None = None
    lazy = False

    @property
    def keys(self) -> list[str]:
        return flag_columns(self.outputs)

    def __len__(self) -> int:
        return len(self.frame)

    def counts(self, keys: Sequence[str]) -> Counts:
        return value_counts(self.frame, keys)

    def crosstab(self, key: str, by: str, *, normalize: Normalize, margins: bool) -> pd.DataFrame:
        by_values = property_values(self.inputs, by)
        return crosstab(self.frame[key], by_values, normalize=normalize, margins=margins)

    def collect(self, *, inputs: bool = False) -> pd.DataFrame:
        return self.frame if inputs else self.outputs

    def batches(self, rows: int, *, inputs: bool) -> Iterator[pd.DataFrame]:
        """Slices of ``rows`` rows (one empty frame when there is none)."""
        frame = self.collect(inputs=inputs)
        for start in range(0, max(len(frame), 1), rows):
            yield frame.iloc[start : start + rows]

    def head(self, n: int) -> pd.DataFrame:
        return self.frame.head(n)

    def errors(self) -> pd.DataFrame:
        mask = self.frame["error"].notna()
        return self.frame.loc[mask.to_numpy(dtype=bool), ["distinct_id", "error"]]

    def to_parquet(self, path: str | Path, *, inputs: bool) -> Path:
        return write_parquet(self.collect(inputs=inputs), path)

    def missing_report(self) -> MissingReport | None:
        return self.report

"""The SQL engine's `AnswerSource` (issue 34): DuckDB's parquet answers, counted where they lie.

``simulate(..., engine="sql")`` answers with a `SimulationResult` whose source is a `SqlSource`: ``len()``,
``counts`` (what ``summary()`` is built from), ``crosstab``, ``errors`` and ``head`` are SQL over the answers
file, so only the small tables (or the asked rows) come back; ``collect`` is the one call that reads every
row back in the local engine's shape (columns, dtypes, input order), once, then kept. ``batches`` reads the
same rows a range of the row key at a time (with the input columns of those rows), and ``to_parquet`` /
the result's ``to_csv`` write through it, so a file of 100M answers is written holding one batch, never the
whole frame. ``missing_report`` is the SQL run's own (`SqlRun.missing_report`: the local engine's report
over the rows it answered).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analytics_nb.flags._door import MissingReport
from analytics_nb.simulation._answers import BATCH_ROWS, Counts, Normalize, write_parquet_batches
from analytics_nb.simulation._definitions import Definitions
from analytics_nb.simulation._errors import SimulationInputError
from analytics_nb.simulation._inputs import id_text
from analytics_nb.simulation._output import TEXT_IDS, select_flags, text_dtype
from analytics_nb.simulation._result import with_inputs
from analytics_nb.simulation._sql import ROW_KEYS, SqlRun, _literal, _quote
from analytics_nb.simulation._sql_frame import FrameSpec, arrow_frame_columns, duckdb_frame, in_order
from analytics_nb.simulation._summary import ValueCounts

__all__ = ["SqlSource"]


def _value(v: Any, text: bool) -> Any:
    """A SQL answer as the local engine's value. `text`: the flag's SQL column is text (a multivariate
    flag, or one with a holdout: `flags._sql.SqlFlag.multivariate`), whose "true" / "false" are the booleans
    and any other text a variant or holdout value; else the column is boolean. Anything else is refused
    rather than read as a plausible value (``bool("false")`` is True)."""
    if v is None or (not isinstance(v, str | bool) and pd.isna(v)):
        return None
    if text:
        return True if v == "true" else False if v == "false" else str(v)
    if isinstance(v, bool | np.bool_):
        return bool(v)
    raise TypeError(f"a boolean flag's SQL answer is {v!r}; expected a boolean")


def _arrow(relation: Any) -> Any:
    """A DuckDB relation's rows as one Arrow table (``to_arrow_table``, duckdb >= 1.4; ``fetch_arrow_table``
    before)."""
    fetch = getattr(relation, "to_arrow_table", None) or relation.fetch_arrow_table
    return fetch()


def pa_positions(n: int) -> Any:
    """The positions 0..n-1 as an Arrow int64 array."""
    import pyarrow as pa

    return pa.array(np.arange(n, dtype=np.int64))


def _pieces_sql(pieces: list[tuple[str, int, int, int]]) -> tuple[str, str]:
    """The condition selecting rows [first, end) of each (file, first, end, position of its row 0) piece,
    and the SQL of a selected row's input position."""
    where = " OR ".join(
        f"(_anb_file = {_literal(name)} AND _anb_row >= {lo} AND _anb_row < {hi})"
        for name, lo, hi, _ in pieces
    )
    cases = " ".join(f"WHEN {_literal(name)} THEN {offset}" for name, _, _, offset in pieces)
    return where, f"_anb_row + CASE _anb_file {cases} END"


class SqlSource:
    """The answers of an ``engine="sql"`` run (`SqlRun`: DuckDB and the parquet file), read for the
    result's flags (``keys``) in the local engine's shape; everything but ``collect`` and ``batches`` (and
    the files written through it) is answered in SQL. ``given_inputs``: the property sets when they were in
    memory (None: DuckDB read them where they lie, and ``inputs`` reads them back from its ``persons``
    table only when asked)."""

    #: the answers are computed already (the parquet file): the repr and notebook view count them, in SQL
    lazy = False

    def __init__(
        self,
        sim: SqlRun,
        *,
        keys: Sequence[str],
        definitions: Definitions,
        payloads: bool,
        reasons: bool,
        given_inputs: pd.DataFrame | None,
    ) -> None:
        self.sim = sim
        self._keys = list(keys)
        self._defs = definitions
        self._payloads = payloads
        self._reasons = reasons
        self._given_inputs = given_inputs
        self._inputs: pd.DataFrame | None = None
        self._input_dtypes: dict[str, Any] | None = None
        #: the collected answers (outputs, and with the input columns), kept once read
        self.outputs: pd.DataFrame | None = None
        self.frame: pd.DataFrame | None = None

    @property
    def keys(self) -> list[str]:
        return list(self._keys)

    def __len__(self) -> int:
        return len(self.sim)  # count(*) over the parquet file

    @property
    def inputs(self) -> pd.DataFrame:
        """The property sets (read from DuckDB's ``persons`` table, in input order, when it read them)."""
        if self._inputs is None:
            if self._given_inputs is not None:
                self._inputs = self._given_inputs
            else:
                sets = _arrow(self.sim.con.sql("SELECT * FROM persons"))
                keys = list(self.sim.query.carry)
                self._inputs = duckdb_frame(in_order(sets, keys).drop_columns(keys), self.sim.con)
        return self._inputs

    # -- the protocol --------------------------------------------------------------------------------------
    def counts(self, keys: Sequence[str]) -> Counts:
        """Per flag, its value counts and unknown rows, counted in SQL."""
        parts = [
            f"SELECT {_literal(k)} AS flag, CAST({_quote(k)} AS VARCHAR) AS value, count(*) AS n "
            f"FROM {self.answers} GROUP BY ALL"
            for k in keys
        ]
        counted: dict[str, tuple[ValueCounts, int]] = {k: ({}, 0) for k in keys}
        if not parts:
            return counted
        for flag, value, n in self.sim.con.execute(" UNION ALL ".join(parts)).fetchall():
            counts, unknown = counted[flag]
            if value is None:
                counted[flag] = (counts, unknown + int(n))
                continue
            text = flag in self._text_flags
            v = _value(value if text else value == "true", text)
            counts[("b", v) if isinstance(v, bool) else ("s", v)] = int(n)
        return counted

    def crosstab(self, key: str, by: str, *, normalize: Normalize, margins: bool) -> pd.DataFrame:
        """Counted in SQL over the answers joined to the property sets (only the table comes back)."""
        columns = [row[0] for row in self.sim.con.execute("DESCRIBE persons").fetchall()]
        if by not in columns or by in ROW_KEYS:
            shown = ", ".join(repr(c) for c in columns if c not in ("distinct_id", *ROW_KEYS))
            raise SimulationInputError(
                f"no property {by!r} in the property sets; crosstab by one of {shown}.", column=by
            )
        counts = self.sim.con.sql(
            f"SELECT p.{_quote(by)} AS by_value, a.{_quote(key)} AS value, count(*) AS n "
            f"FROM {self.answers} a JOIN persons p USING ({self._row_keys}) GROUP BY ALL"
        ).df()
        multivariate = key in self._text_flags
        values = [_value(v, multivariate) for v in counts["value"].tolist()]
        flag_values = pd.Series(["(unknown)" if v is None else v for v in values], dtype=object, name=key)
        by_values = counts["by_value"].astype(object)
        by_values = by_values.where(by_values.notna(), "(missing)").rename(by)
        table = pd.crosstab(
            by_values, flag_values, values=counts["n"], aggfunc="sum", normalize=normalize, margins=margins
        ).fillna(0)
        return table if normalize is not False else table.astype("int64")

    def collect(self, *, inputs: bool = False) -> pd.DataFrame:
        """Every answer as the local engine gives it (read back once, then kept); ``inputs``: with the
        input property columns (`with_inputs`)."""
        if self.outputs is None:
            self.outputs = self.read()
        if not inputs:
            return self.outputs
        if self.frame is None:
            self.frame = with_inputs(self.outputs, self.inputs)
        return self.frame

    def batches(self, rows: int, *, inputs: bool) -> Iterator[pd.DataFrame]:
        """The answers ``rows`` at a time in input order, each batch a range of the row key read from DuckDB
        in the local engine's shape (`read`: the same columns, dtypes, index labels and values as that slice
        of ``collect``), with the input columns of the same rows when ``inputs`` (the given frame's rows, or
        read from the ``persons`` view in the dtypes the whole column has). Over a folder of parquet files
        (its row key is the file and the row in it) a batch may take the end of one file and the start of
        the next. Answers already collected are sliced."""
        kept = self.frame if inputs else self.outputs
        if kept is not None:
            for start in range(0, max(len(kept), 1), rows):
                yield kept.iloc[start : start + rows]
            return
        yielded = False
        for where, position, start in self._ranges(rows):
            out = self._read_range(where, position)
            yielded = True
            yield self._with_inputs(out, where, position, start) if inputs else out
        if not yielded:
            empty = self.read(limit=0)
            yield self._with_inputs(empty, "FALSE", "_anb_row", 0) if inputs else empty

    def _ranges(self, rows: int) -> Iterator[tuple[str, str, int]]:
        """(the condition selecting the next ``rows`` rows, the SQL of each row's input position, the input
        position of the first), in input order; over a folder, pieces of consecutive files (in DuckDB's
        order of their names, as `read` numbers them)."""
        if "_anb_file" not in self.sim.query.carry:
            for lo in range(0, len(self), rows):
                yield f"_anb_row >= {lo} AND _anb_row < {lo + rows}", "_anb_row", lo
            return
        files = self.sim.con.execute(
            f"SELECT _anb_file, count(*) FROM {self.answers} GROUP BY ALL ORDER BY _anb_file"
        ).fetchall()
        pieces: list[tuple[str, int, int, int]] = []  # (file, first row, end row, position of its row 0)
        offset = start = 0
        for name, count in files:
            lo = 0
            while lo < count:
                hi = min(int(count), lo + rows - sum(e - b for _, b, e, _ in pieces))
                pieces.append((name, lo, hi, offset))
                lo = hi
                if sum(e - b for _, b, e, _ in pieces) == rows:
                    yield (*_pieces_sql(pieces), start)
                    start, pieces = start + rows, []
            offset += int(count)
        if pieces:
            yield (*_pieces_sql(pieces), start)

    def _read_range(self, where: str, position: str) -> pd.DataFrame:
        """The answers of one range of the row key (`_ranges`), in the local engine's shape."""
        sql = f"SELECT *, {position} AS _anb_pos FROM {self.answers} WHERE {where} ORDER BY _anb_pos"
        return self._shaped(_arrow(self.sim.con.sql(sql)), "_anb_pos")

    def _with_inputs(self, out: pd.DataFrame, where: str, position: str, start: int) -> pd.DataFrame:
        """``out`` (one range's answers, its first row at input position ``start``) with the input columns
        of its rows (`with_inputs`)."""
        if self._given_inputs is not None:
            return with_inputs(out, self._given_inputs.iloc[start : start + len(out)])
        sql = f"SELECT * EXCLUDE ({self._row_keys}) FROM persons WHERE {where} ORDER BY {position}"
        sets = duckdb_frame(_arrow(self.sim.con.sql(sql)), self.sim.con)
        dtypes = self._whole_dtypes()
        cast = {c: d for c, d in dtypes.items() if c in sets.columns and sets[c].dtype != d}
        sets = sets.astype(cast) if cast else sets
        return with_inputs(out, sets.set_axis(out.index, axis=0))

    def _whole_dtypes(self) -> dict[str, Any]:
        """The dtype each input column has when ``persons`` is read whole (``inputs``). DuckDB gives a column
        with a NULL a nullable dtype (``Int64``, ``boolean``) and a text column of NULLs only ``object``,
        so a range read alone could differ: read from a few witness rows, each column's first NULL row and
        first non-NULL one (one pass of DuckDB over the input columns, then kept)."""
        if self._input_dtypes is None:
            keys = list(self.sim.query.carry)
            names = [r[0] for r in self.sim.con.execute("DESCRIBE persons").fetchall() if r[0] not in keys]
            key = keys[0] if len(keys) == 1 else "{" + ", ".join(f"'{k}': {_quote(k)}" for k in keys) + "}"
            firsts = [
                f"min({key}) FILTER (WHERE {_quote(c)} IS {test} NULL)" for c in names for test in ("", "NOT")
            ]
            witnesses = (
                f"SELECT * EXCLUDE ({self._row_keys}) FROM persons WHERE {key} IN "
                f"(SELECT unnest([{', '.join(firsts)}]) FROM persons)"
            )
            self._input_dtypes = dict(self.sim.con.sql(witnesses).df().dtypes) if names else {}
        return self._input_dtypes

    def head(self, n: int) -> pd.DataFrame:
        """The first ``n`` rows of the outputs (only they are read)."""
        return self.read(limit=n)

    def errors(self) -> pd.DataFrame:
        """The rows with an error (distinct_id and error text), selected in SQL."""
        return self.read("error IS NOT NULL")[["distinct_id", "error"]]

    def error_count(self) -> int:
        """How many rows have an error, counted in SQL."""
        sql = f"SELECT count(*) FROM {self.answers} WHERE error IS NOT NULL"
        return int(self.sim.con.execute(sql).fetchall()[0][0])

    def to_parquet(self, path: str | Path, *, inputs: bool) -> Path:
        """One parquet file in the local engine's shape, written batch by batch (`batches`: one batch of
        answers in memory at a time, never every row)."""
        return write_parquet_batches(self.batches(BATCH_ROWS, inputs=inputs), path)

    def missing_report(self) -> MissingReport | None:
        """The SQL run's report (the local engine's over the rows it answered), for the result's flags."""
        keys = set(self._keys)
        return {k: v for k, v in self.sim.missing_report.items() if k in keys}

    # -- reading the answers back ----------------------------------------------------------------------------
    @property
    def answers(self) -> str:
        """The answers file as a DuckDB table expression."""
        return f"read_parquet({_literal(str(self.sim.path))})"

    @property
    def _row_keys(self) -> str:
        return ", ".join(_quote(k) for k in self.sim.query.carry)

    def _index(self, positions: Any) -> pd.Index:
        """The result index of rows at input `positions` (the input frame's labels when it was given)."""
        if self._given_inputs is not None:
            index: pd.Index = self._given_inputs.index[np.asarray(positions)]
            return index
        numbered: pd.Index = pd.Index(np.asarray(positions))
        return numbered

    def read(self, where: str = "TRUE", limit: int | None = None) -> pd.DataFrame:
        """Answers (those matching `where`) in the local engine's shape, in input order."""
        if where == "TRUE" and limit is None:
            return self._read_whole()
        if "_anb_file" in self.sim.query.carry:  # a folder of files: number the rows in file-name order
            order = f"row_number() OVER (ORDER BY {self._row_keys}) - 1"
            numbered = f"SELECT *, {order} AS _anb_pos FROM {self.answers}"
            sql = f"SELECT * FROM ({numbered}) WHERE {where} ORDER BY _anb_pos"
            position = "_anb_pos"
        else:
            sql = f"SELECT * FROM {self.answers} WHERE {where} ORDER BY _anb_row"
            position = "_anb_row"
        raw = _arrow(self.sim.con.sql(sql + (f" LIMIT {int(limit)}" if limit is not None else "")))
        return self._shaped(raw, position)

    def _read_whole(self) -> pd.DataFrame:
        """Every answer, read by pyarrow from the answers file (the reason and text-flag columns kept
        dictionary-encoded, as the file holds them: 4x faster than DuckDB materialising each text), put in
        input order in Arrow (`in_order`), then shaped; the columns the frame does not show are not read."""
        import pyarrow.parquet as pq

        keys = list(self.sim.query.carry)
        flags = self.sim.flags
        suffixes = ("", ":reason", ":condition_index") if self.sim.query.reasons else ("",)
        wanted = ["distinct_id", *keys, *(k + s for k in flags for s in suffixes), "error"]
        texts = [k for k in wanted if k.endswith(":reason") or k in self._text_flags]
        table = in_order(pq.read_table(self.sim.path, columns=wanted, read_dictionary=texts), keys)
        if len(keys) > 1:  # a folder: positions in file-name order, as `read` numbers them
            table = table.append_column("_anb_pos", pa_positions(table.num_rows))
        return self._shaped(table, keys[0] if len(keys) == 1 else "_anb_pos")

    def _shaped(self, raw: Any, position: str) -> pd.DataFrame:
        """SQL answers (``raw``: an Arrow table, with each row's input position in column ``position``) in
        the local engine's shape, built column at a time from Arrow (`_sql_frame`: issue 35; the Python
        lists of `build_frame` took 11 s and 2.7 GB for 1M rows x 10 flags)."""
        index = self._index(raw[position].to_numpy())
        cols = {"distinct_id": self._ids(raw["distinct_id"], index)}
        cols.update(arrow_frame_columns(self._frame_spec, raw, index))
        frame = pd.DataFrame(cols, index=index, copy=False)
        return select_flags(frame, self._keys, payloads=self._payloads, reasons=self._reasons)

    def _ids(self, column: Any, index: pd.Index) -> pd.Series:
        """The ``distinct_id`` column in the result's id dtype (`_id_dtype`): text ids straight from Arrow;
        any other ids as their text (`id_text`: what the service does with a numeric id), read through
        DuckDB's own pandas conversion as before."""
        import pyarrow as pa

        if self._id_dtype is not object and pa.types.is_string(column.type):
            return pd.Series(pd.array(column, dtype=self._id_dtype), index=index, copy=False)
        ids: pd.Series = self.sim.con.from_arrow(pa.table({"distinct_id": column})).df()["distinct_id"]
        if self._id_dtype is object:
            ids = id_text(ids)
        out: pd.Series = pd.Series(ids.tolist(), index=index, dtype=self._id_dtype)
        return out

    @functools.cached_property
    def _frame_spec(self) -> FrameSpec:
        """What `arrow_frame_columns` needs to read this run's answers back."""
        tables = {sf.key: sf.payloads for sf in self.sim.query.flags} if self._payloads else None
        return FrameSpec(
            self.sim.flags,
            self._text_flags,
            # the SQL writes reason and condition-index columns only when they were asked for
            reasons_written=self.sim.query.reasons,
            payload_tables=tables,
            payload_texts=self._defs.payload_texts(),
            cell_value=_value,
        )

    @functools.cached_property
    def _id_dtype(self) -> Any:
        """The result's id dtype (`result_ids`): the property sets', when they were in memory; else pandas 3's
        `str` when DuckDB read text ids (VARCHAR), ``object`` for any other id type, as before."""
        if self._given_inputs is not None:
            return TEXT_IDS if text_dtype(self._given_inputs["distinct_id"].dtype) else object
        described = self.sim.con.execute("SELECT column_name, column_type FROM (DESCRIBE persons)")
        kinds = dict(described.fetchall())
        return TEXT_IDS if kinds.get("distinct_id") == "VARCHAR" else object

    @property
    def _text_flags(self) -> set[str]:
        """The flags whose SQL column is text (variants or a holdout value), as the query says: the local
        engine's object columns. Not `Definitions.variants()`, which leaves out holdout-only flags."""
        return {sf.key for sf in self.sim.query.flags if sf.multivariate}

"""Flag simulation as SQL: the compiled query (`flags.compile_sql`) run by DuckDB (embedded, out of core),
ClickHouse in-process (chDB) or Spark SQL, with the local engine answering what SQL cannot answer exactly.

`run_simulate_sql(source, definitions)` (behind `simulate_sql` and ``simulate(engine="sql")``, which
wrap its `SqlRun` in the one `SimulationResult`) evaluates a parquet export, a DuckDB relation or an
in-memory table through DuckDB with memory bounded by `memory_limit` (DuckDB spills to disk beyond it) and
writes the answers to parquet (summaries and crosstabs are counted in SQL by `_sql_source.SqlSource`).
Flags and rows the query marks ``needs_local_engine`` are re-evaluated by `flags.evaluate_frame` in batches
of `batch_rows` rows, so every answer is the local engine's answer.
"""

from __future__ import annotations

import atexit
import datetime as dt
import os
import shutil
import signal
import tempfile
import threading
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from analytics_nb.flags import FrameEvaluator
from analytics_nb.flags._evaluate import Mode
from analytics_nb.flags._sql import NEEDS_LOCAL, SqlQuery, compile_sql, narrow_definitions
from analytics_nb.tables._extras import require, require_extra

__all__ = ["SqlRun", "arrow_schema", "run_simulate_sql", "run_sql"]

_TABLE = "persons"
ROW_KEYS = ("_anb_file", "_anb_row")
"""The columns `simulate_sql` adds to every input row (file name for a folder of parquet files, row number
within it) and carries to the answers, so they can be read back in input order."""


def arrow_schema(table: Any) -> dict[str, str]:
    """{column: Arrow type name} of a pandas frame or Arrow table (what `compile_sql(schema=)` reads)."""
    import pyarrow as pa

    if isinstance(table, pd.DataFrame):
        table = pa.Table.from_pandas(table, preserve_index=False)
    return {f.name: str(f.type) for f in table.schema}


def refuse_nul_columns(names: Sequence[Any]) -> None:
    """A column name holding a NUL character is refused with a ValueError naming it: DuckDB (and chDB)
    cut a name at the NUL ("pl\\x00an" becomes "pl"), so the query would read another column or none."""
    for name in names:
        if "\x00" in str(name):
            raise ValueError(
                f"column {str(name)!r} has a NUL character in its name (SQL engines cut a name at a NUL): "
                "rename the column (and the property in the flags), or use engine='local'."
            )


def _column_names(source: Any) -> list[Any]:
    """The column names of a parquet path (its schema), a DuckDB relation, an Arrow table or a frame."""
    if isinstance(source, (str, Path)):
        import pyarrow.dataset as ds

        return list(ds.dataset(Path(source), format="parquet").schema.names) if Path(source).exists() else []
    names = getattr(source, "column_names", None) or getattr(source, "columns", None)
    return list(names) if names is not None else []


def _quote(name: str, dialect: str = "duckdb") -> str:
    """`name` as a quoted identifier of `dialect`, printed by sqlglot (the quoting `flags.to_sql` uses)."""
    from sqlglot import exp

    text: str = exp.to_identifier(name, quoted=True).sql(dialect=dialect)
    return text


def _literal(text: str, dialect: str = "duckdb") -> str:
    """`text` as a string literal of `dialect`, printed by sqlglot (ClickHouse reads backslash escapes,
    DuckDB does not: each dialect's own rule)."""
    from sqlglot import exp

    out: str = exp.Literal.string(text).sql(dialect=dialect)
    return out


# ------------------------------------------------------------------------------------------ work folders

#: the working folders of runs and results alive in this process (removed on SIGTERM and at exit)
_LIVE: set[str] = set()
_installed = False


def make_workdir(prefix: str) -> str:
    """A new temporary working folder, registered so that SIGTERM (and interpreter exit) removes it.

    Ctrl-C raises KeyboardInterrupt, which the runs clean up after (`simulate_sql`'s ``except``); SIGTERM's
    default action ended the process with no Python code run, leaving DuckDB's database and spill folder
    (gigabytes on a large export) in the temporary folder."""
    folder = tempfile.mkdtemp(prefix=prefix)
    _LIVE.add(folder)
    _install_cleanup()
    return folder


def remove_workdir(folder: str | None) -> None:
    """Remove a working folder and forget it."""
    if folder:
        _LIVE.discard(folder)
        shutil.rmtree(folder, ignore_errors=True)


def _remove_all() -> None:
    for folder in list(_LIVE):
        remove_workdir(folder)


def _install_cleanup() -> None:
    """Once per process: remove the live working folders at exit and on SIGTERM. SIGTERM's handler is
    installed only over the default action (never over a handler the program set, nor an ignored signal)
    and only from the main thread (Python's rule); it removes the folders, restores the default action and
    re-sends SIGTERM, so the process still ends as killed by it."""
    global _installed
    if _installed:
        return
    _installed = True
    atexit.register(_remove_all)
    if threading.current_thread() is not threading.main_thread():
        _installed = False  # try again from the main thread
        return
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)


def _on_sigterm(signum: int, frame: Any) -> None:
    _remove_all()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


# ------------------------------------------------------------------------------------------ hashing

#: The DuckDB function `simulate_sql` registers for bucketing (`compile_sql(bucket_function=)`).
BUCKET_FUNCTION = "_anb_bucket"
HASHERS = ("auto", "native", "sql")


def column_buckets(prefix: str, suffix: str) -> Any:
    """A DuckDB vectorised (Arrow) function of one text column: the bucket fraction of
    ``prefix + id + suffix`` for each id, by the project's SHA-NI column hasher
    (`flags._hashing.fractions_into`, the local engine's), bit-identical to `flags.hash_fraction`; NULL
    for a NULL id. The id buffer is hashed where Arrow holds it (no Python object per row, no copy of
    the text); the prefix and suffix are bound here, not passed as constant columns (DuckDB hands a
    constant argument over as a full column per chunk: 25% of the time per hash)."""
    import numpy as np
    import pyarrow as pa

    from analytics_nb.flags._hashing import EncodedIds, fractions_into

    head, tail = prefix.encode("utf-8"), suffix.encode("utf-8")

    def buckets(ids: Any) -> Any:
        ids = _one_chunk(ids)
        n = len(ids)
        if n == 0:
            return pa.array([], pa.float64())
        data, positions = _text_buffers(ids)
        out = np.empty(n, dtype=np.float64)
        fractions_into(head, EncodedIds(data, positions), tail, out)
        mask = ids.is_null().to_numpy(zero_copy_only=False) if ids.null_count else None
        return pa.array(out, mask=mask)

    return buckets


def bucket_set(fields: Sequence[tuple[str, str, int]]) -> Any:
    """A DuckDB vectorised (Arrow) function of one text column and one boolean guard column per distinct
    guard (`SqlQuery.bucket_sets`): the STRUCT whose field ``b<i>`` is the bucket fraction of
    ``prefix + id + suffix`` for the i-th (prefix, suffix, guard) where that guard is true and the id is
    not NULL, NULL elsewhere. Every bucket of a dependency level in one call per row vector: DuckDB's cost
    per call of a Python function (~0.1 ms: the vector as Arrow, the GIL) is paid once, not once per
    bucket; the hasher itself runs without the GIL, so DuckDB's threads hash side by side."""
    import numpy as np
    import pyarrow as pa

    from analytics_nb.flags._hashing import EncodedIds, fractions_into

    encoded = [(p.encode("utf-8"), s.encode("utf-8"), g) for p, s, g in fields]
    names = [f"b{i}" for i in range(len(fields))]

    def buckets(ids: Any, *guards: Any) -> Any:
        ids = _one_chunk(ids)
        n = len(ids)
        data, positions = _text_buffers(ids) if n else (b"", np.zeros(1, np.int64))
        column = EncodedIds(data, positions)
        valid = ~ids.is_null().to_numpy(zero_copy_only=False) if ids.null_count else None
        masks = [_guard_mask(g, valid) for g in guards]
        rows = [np.flatnonzero(m) for m in masks]  # once per guard: flags share them
        values = np.empty((len(encoded), n), dtype=np.float64)

        def hash_range(first: int, last: int) -> None:
            for i in range(first, last):
                head, tail, g = encoded[i]
                fractions_into(head, column, tail, values[i], rows[g])

        _side_by_side(hash_range, len(encoded), n)
        nulls = [~m for m in masks]
        out = [pa.array(values[i], mask=nulls[g]) for i, (_, _, g) in enumerate(encoded)]
        return pa.StructArray.from_arrays(out, names=names)

    return buckets


#: hash work (buckets x rows) of one call from which half of it goes to a second thread
_SPLIT_WORK = 32 * 2048
_pool: Any = None


def _side_by_side(work: Any, count: int, rows: int) -> None:
    """``work(0, count)``, split in two halves run side by side (the second on a worker thread) when the
    call is large enough: the hasher runs without the GIL, and DuckDB gives a vectorised function one
    thread per row group, so an input of one row group (200k rows written by DuckDB or pandas) hashed on
    one core (100 flags x 200k rows: 0.79 s of hashing on one core)."""
    global _pool
    if count < 2 or count * rows < _SPLIT_WORK or (os.cpu_count() or 1) < 2:
        work(0, count)
        return
    if _pool is None:
        from concurrent.futures import ThreadPoolExecutor

        _pool = ThreadPoolExecutor(
            max_workers=max(1, (os.cpu_count() or 2) - 1), thread_name_prefix="anb-hash"
        )
    half = count // 2
    pending = _pool.submit(work, half, count)
    work(0, half)
    pending.result()


def _guard_mask(guard: Any, valid: Any) -> Any:
    """A guard column as a numpy bool array (NULL: false), and-ed with the ids that are not NULL."""
    guard = _one_chunk(guard)
    if guard.null_count:
        guard = guard.fill_null(False)
    mask = guard.to_numpy(zero_copy_only=False)
    return mask & valid if valid is not None else mask


def _one_chunk(column: Any) -> Any:
    """An Arrow array from what DuckDB hands a vectorised function (a chunked array, usually of one chunk)."""
    import pyarrow as pa

    if isinstance(column, pa.ChunkedArray):
        return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    return column


def _text_buffers(ids: Any) -> tuple[Any, Any]:
    """The UTF-8 buffer and int64 offsets (one per row, plus one) of an Arrow text array, read in place
    (``string``: its int32 offsets widened; other text types cast to ``large_string`` first)."""
    import numpy as np
    import pyarrow as pa

    n = len(ids)
    if ids.type == pa.string():
        _, offsets, data = ids.buffers()
        positions = np.frombuffer(offsets, dtype=np.int32, count=n + 1, offset=ids.offset * 4).astype(
            np.int64
        )
    else:
        ids = ids.cast(pa.large_string())
        _, offsets, data = ids.buffers()
        positions = np.frombuffer(offsets, dtype=np.int64, count=n + 1, offset=ids.offset * 8)
    return (data if data is not None else b""), positions


def bucket_stem(hasher: str) -> str | None:
    """`BUCKET_FUNCTION` when `hasher` asks for the compiled hasher ("native") or allows it ("auto") and
    it is built; None: the query hashes with DuckDB's own SHA-1. Measured (1M ids, 2 shared cores): 0.25 s
    per million hashes against 0.50 s for DuckDB's ``sha1`` + hex ``substr`` + cast, 0 of 1M fractions
    different."""
    from analytics_nb.flags._hashing import native_impl

    if hasher not in HASHERS:
        raise ValueError(f"hasher must be one of {', '.join(HASHERS)}, got {hasher!r}")
    if hasher == "sql" or (hasher == "auto" and native_impl() is None):
        return None
    return BUCKET_FUNCTION


def register_buckets(
    con: Any,
    buckets: Mapping[str, tuple[str, str]],
    sets: Mapping[str, Sequence[tuple[str, str, int]]] | None = None,
) -> None:
    """Register each bucket function of a compiled query on a DuckDB connection: one per (prefix, suffix)
    (`SqlQuery.buckets`) and one per dependency level's set (`SqlQuery.bucket_sets`)."""
    try:
        import duckdb.sqltypes as types
    except ImportError:  # DuckDB before 1.4
        import duckdb.typing as types  # type: ignore[no-redef,import-not-found]

    import duckdb

    for name, fields in (sets or {}).items():
        guards = 1 + max(g for _, _, g in fields)
        con.create_function(
            name,
            _fixed_arity(bucket_set(fields), 1 + guards),
            [types.VARCHAR] + [types.BOOLEAN] * guards,
            duckdb.struct_type({f"b{i}": types.DOUBLE for i in range(len(fields))}),
            type="arrow",
            null_handling="special",
            side_effects=False,
        )
    for name, (prefix, suffix) in buckets.items():
        con.create_function(
            name,
            column_buckets(prefix, suffix),
            [types.VARCHAR],
            types.DOUBLE,
            type="arrow",
            null_handling="special",
            side_effects=False,
        )


def _fixed_arity(function: Any, arity: int) -> Any:
    """`function` (which takes ``*args``) as a function of exactly `arity` positional parameters: DuckDB
    reads a Python function's parameter count from its signature and refuses ``*args``."""
    import inspect

    def call(*args: Any) -> Any:
        return function(*args)

    params = [inspect.Parameter(f"a{i}", inspect.Parameter.POSITIONAL_ONLY) for i in range(arity)]
    call.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    return call


# ------------------------------------------------------------------------------------------ engines


def run_sql(
    frame: pd.DataFrame,
    definitions: Any,
    *,
    engine: str = "duckdb",
    mode: str = "server",
    payloads: bool = False,
    now: dt.datetime | None = None,
    spark: Any = None,
    property_matching_version: int | None = None,
    missing_columns: str = "unknown",
    flags: Sequence[str] | None = None,
) -> tuple[pd.DataFrame, SqlQuery]:
    """Run the compiled query over an in-memory table on `engine` ("duckdb", "clickhouse" through chDB,
    "spark" through PySpark's session `spark`); the raw SQL answers (rows and flags the query leaves to
    the local engine included) and the query. The schema is the frame's Arrow types; a flag reading a
    property without a column is left to the local engine unless ``missing_columns="not_set"``."""
    import pyarrow as pa

    refuse_nul_columns(list(frame.columns))
    table = pa.Table.from_pandas(frame, preserve_index=False)
    dialect = {"duckdb": "duckdb", "clickhouse": "clickhouse", "chdb": "clickhouse", "spark": "spark"}.get(
        engine
    )
    if dialect is None:
        raise ValueError(f"engine must be 'duckdb', 'clickhouse' (chDB) or 'spark', got {engine!r}")
    query = compile_sql(
        definitions,
        dialect=dialect,
        mode=mode,
        table=_TABLE,
        schema=arrow_schema(table),
        payloads=payloads,
        now=now,
        property_matching_version=property_matching_version,
        missing_columns=missing_columns,
        flags=flags,
    )
    if dialect == "duckdb":
        duckdb = require("duckdb", "run_sql(engine='duckdb')", "sql")
        con = duckdb.connect()
        try:
            con.register(_TABLE, table)
            out = con.sql(query.sql).to_arrow_table()
        finally:
            con.close()
        return out.to_pandas(types_mapper=pd.ArrowDtype), query
    if dialect == "clickhouse":
        return _run_chdb(query, table), query
    if spark is None:
        raise ValueError("engine='spark' needs the SparkSession: run_sql(..., spark=spark)")
    sdf = spark.createDataFrame(frame.astype(object).where(frame.notna(), None), schema=_spark_schema(table))
    sdf.createOrReplaceTempView(_TABLE)
    return spark.sql(query.sql).toPandas(), query


def _run_chdb(query: SqlQuery, table: Any) -> pd.DataFrame:
    """ClickHouse in-process: the table is loaded from a parquet file (nullable columns kept), the
    query's answer read back as Arrow."""
    import pyarrow.parquet as pq

    chdb_session: Any = require("chdb.session", "engine='clickhouse' (chDB)", "chdb")

    folder = make_workdir("anb-chdb-")
    try:
        path = os.path.join(folder, "persons.parquet")
        pq.write_table(table, path)
        sess = chdb_session.Session(os.path.join(folder, "db"))
        try:
            source = _literal(path, "clickhouse")
            sess.query(
                f"CREATE TABLE {_TABLE} ENGINE = Memory AS SELECT * FROM file({source}, Parquet) "
                "SETTINGS schema_inference_make_columns_nullable = 1"
            )
            result = sess.query(query.sql, "ArrowTable")
        finally:
            sess.close()
    finally:
        remove_workdir(folder)
    frame: pd.DataFrame = result.to_pandas(types_mapper=pd.ArrowDtype)
    return frame


def _spark_schema(table: Any) -> Any:
    T = require("pyspark.sql.types", "engine='spark'", "spark")

    kinds = {
        "string": T.StringType(),
        "large_string": T.StringType(),
        "int64": T.LongType(),
        "int32": T.IntegerType(),
        "double": T.DoubleType(),
        "float": T.FloatType(),
        "bool": T.BooleanType(),
    }
    fields = []
    for f in table.schema:
        kind = kinds.get(str(f.type))
        if kind is None:
            raise ValueError(f"column {f.name!r} of type {f.type} has no Spark type here; cast it first")
        fields.append(T.StructField(f.name, kind, True))
    return T.StructType(fields)


# ------------------------------------------------------------------------------------------ local answers


def _local_answers(
    batch: pd.DataFrame,
    query: SqlQuery,
    mode: Mode,
    definitions: Any,
    now: dt.datetime,
    payloads: bool,
    target: Any,
    missing_columns: str = "unknown",
    report: dict[str, tuple[tuple[str, ...], int]] | None = None,
) -> Any:
    """The local engine's answers for `batch`, in the SQL answers' shape (Arrow, cast to `target`); its
    `FrameEvaluator.missing_report` is added into `report`."""
    import pyarrow as pa

    engine_input = batch.drop(columns=[c for c in ROW_KEYS if c in batch.columns])
    evaluator = FrameEvaluator(
        engine_input,
        definitions=query.compiled if query.compiled is not None else definitions,
        mode=mode,
        now=now,
        output="pandas",
        missing_columns=missing_columns,  # type: ignore[arg-type]
    )
    evaluator._warn = False  # the SQL run warns once, from the report of every batch
    got = evaluator.run(reasons=query.reasons, payloads=payloads)  # reasons only when they are written
    if report is not None:
        for key, (labels, count) in evaluator.missing_report.items():
            report[key] = (labels, report.get(key, ((), 0))[1] + count)
    multivariate = {sf.key for sf in query.flags if sf.multivariate}
    boolean = {sf.key for sf in query.flags if not sf.multivariate}
    arrays = []
    for f in target:
        if f.name == "distinct_id" or f.name in ROW_KEYS:
            column = pa.Array.from_pandas(batch[f.name])
        elif f.name == query.local_column:
            column = pa.array([False] * len(batch), pa.bool_())
        elif f.name in multivariate:
            column = _by_uniques(got[f.name], _variant_text, pa.string())
        elif f.name in boolean and got[f.name].dtype == object:  # a bool, else unknown: never a text
            column = _by_uniques(got[f.name], _bool_or_none, pa.bool_())
        else:
            column = _arrow_column(got[f.name])
        arrays.append(column.cast(f.type) if column.type != f.type else column)
    return pa.Table.from_arrays(arrays, schema=target)


def _arrow_column(column: pd.Series) -> Any:
    """A column of the local engine's frame as Arrow, column at a time: a boolean flag (NA: null), a reason
    or payload category (decoded to text), a condition index (Int64), the error text."""
    import pyarrow as pa

    if isinstance(column.dtype, pd.CategoricalDtype):
        return pa.Array.from_pandas(column).dictionary_decode()
    if column.dtype == object:
        return _by_uniques(column, _none_if_missing, None)
    return pa.Array.from_pandas(column)


def _by_uniques(column: pd.Series, convert: Any, arrow_type: Any) -> Any:
    """An object column as Arrow, `convert` applied once per distinct value (`pd.factorize` hashes the
    column in C; a missing value is null): a Python call per row was 0.6 s of a 2 s run of 96 flags over
    200k rows that the local engine answers."""
    import numpy as np
    import pyarrow as pa

    cells = column.to_numpy(dtype=object)
    try:
        codes, uniques = pd.factorize(cells, use_na_sentinel=True)
    except TypeError:  # an unhashable value (a dict or list payload): converted row by row
        return pa.array([convert(v) for v in cells], arrow_type)
    values = pa.array([convert(u) for u in uniques], arrow_type)
    return values.take(pa.array(codes.astype(np.int64, copy=False), mask=codes < 0))


def _variant_text(value: Any) -> str | None:
    """A variant flag's value as the SQL writes it: the variant, "true" / "false" for a boolean answer,
    None when unknown."""
    if isinstance(value, str):
        return value
    return "true" if value is True else "false" if value is False else None


def _bool_or_none(value: Any) -> bool | None:
    """A boolean flag's value as the SQL writes it: the bool, else None (unknown; never a text)."""
    return value if isinstance(value, bool) else None


def _none_if_missing(value: Any) -> Any:
    """A value of an object column (an error text, a payload) with a missing value as None."""
    return None if value is None or value is pd.NA or value != value else value


def _engine_dtype(arrow_type: Any) -> Any:
    """The pandas dtype the local engine reads a batch column as: text as ``StringDtype`` (which the engine
    matches once per distinct value, in bulk: an ``ArrowDtype`` text column was matched value by value,
    2.4x slower on 96 demo flags), anything else as ``ArrowDtype`` (integers stay exact, nulls stay null)."""
    import pyarrow as pa

    if (
        pa.types.is_string(arrow_type)
        or pa.types.is_large_string(arrow_type)
        or str(arrow_type) == "string_view"
    ):
        return pd.StringDtype()
    return pd.ArrowDtype(arrow_type)


def _row_key(query: SqlQuery) -> list[str]:
    """The columns that name a row of the answers (the carried row keys, else distinct_id)."""
    return [_quote(k) for k in query.carry] or ["distinct_id"]


def _local_condition(query: SqlQuery) -> str:
    """The rows of the SQL answers whose answer of some flag the SQL answers is left to the local engine
    (those rows are answered by it in full). The flags the SQL leaves to the local engine on every row
    (`SqlQuery.local_flags`) are answered on their own (`_local_flag_columns`), not by sending every row."""
    if not query.reasons:
        return _quote(query.local_column) if query.local_column is not None else "FALSE"
    tests = [
        f"{_quote(sf.key + ':reason')} = {_literal(NEEDS_LOCAL)}"
        for sf in query.flags
        if sf.needs_local is None
    ]
    return " OR ".join(tests) if tests else "FALSE"


def _local_flag_columns(query: SqlQuery, target: Any) -> list[str]:
    """The answer columns of the flags the SQL leaves to the local engine on every row."""
    names = {
        k + suffix for k in query.local_flags for suffix in ("", ":reason", ":condition_index", ":payload")
    }
    return [f.name for f in target if f.name in names]


# ------------------------------------------------------------------------------------------ simulation


class SqlRun:
    """One DuckDB run of `run_simulate_sql`: the connection, the parquet file of the raw SQL answers and
    the compiled query, read by `simulation._sql_source.SqlSource` for the one `SimulationResult`.

    `relation` is the answers as a DuckDB relation (one row per person: distinct_id, `<flag>`,
    `<flag>:reason`, `<flag>:condition_index`, `error`, the row keys); `path` the parquet file holding them.
    `local_flags` names the flags the local engine answered (with why) and `local_rows` counts the rows it
    answered for the others.
    """

    def __init__(
        self,
        con: Any,
        path: Path,
        query: SqlQuery,
        local_rows: int,
        workdir: str | None,
        missing_report: Mapping[str, tuple[tuple[str, ...], int]] | None = None,
    ) -> None:
        self.con = con
        self.path = path
        self.query = query
        self.local_rows = local_rows
        #: the local engine's `FrameEvaluator.missing_report` over the rows it answered, for the written
        #: flags: {flag: (the absent properties it reads, rows made NA)}; the `MissingPropertyWarning`'s
        self.missing_report: dict[str, tuple[tuple[str, ...], int]] = dict(missing_report or {})
        self._workdir = workdir
        self._finalizer = weakref.finalize(self, _cleanup, con, workdir)

    @property
    def flags(self) -> list[str]:
        """The flag keys, in the definitions' order."""
        return [sf.key for sf in self.query.flags]

    @property
    def local_flags(self) -> dict[str, str]:
        """{flag key: why the local engine answered it rather than SQL}."""
        return self.query.local_flags

    @property
    def relation(self) -> Any:
        """The answers as a DuckDB relation over the parquet file."""
        return self.con.sql(f"SELECT * FROM read_parquet({_literal(str(self.path))})")

    def __len__(self) -> int:
        return int(
            self.con.execute(f"SELECT count(*) FROM read_parquet({_literal(str(self.path))})").fetchall()[0][
                0
            ]
        )

    def close(self) -> None:
        """Close the connection and delete the working files (the answers too unless `out` was given)."""
        self._finalizer()

    def __repr__(self) -> str:
        return (
            f"SqlRun({len(self.flags)} flags, {str(self.path)!r}, local flags: "
            f"{sorted(self.local_flags)}, rows answered locally: {self.local_rows:,})"
        )


def _cleanup(con: Any, workdir: str | None) -> None:
    con.close()
    remove_workdir(workdir)


def _source_sql(source: Any, con: Any, batch_rows: int) -> tuple[str, list[str]]:
    """Register `source` with the connection; the SQL that reads it with its row keys, and their names.

    A parquet file is read where it lies (its row number is the key; a folder's files add their name);
    a DuckDB relation is streamed in Arrow batches into a table of the working database (on disk, so
    its size is not bounded by memory); a pandas frame or Arrow table is registered as it is."""
    import pyarrow as pa

    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.exists():
            raise FileNotFoundError(f"no parquet file or folder at {str(path)!r}")
        if path.is_dir():
            pattern = _literal(str(path / "**" / "*.parquet"))
            return (
                f"SELECT * EXCLUDE (filename, file_row_number), filename AS _anb_file, "
                f"file_row_number AS _anb_row FROM read_parquet({pattern}, filename = true, "
                "file_row_number = true)",
                ["_anb_file", "_anb_row"],
            )
        return (
            f"SELECT * EXCLUDE (file_row_number), file_row_number AS _anb_row "
            f"FROM read_parquet({_literal(str(path))}, file_row_number = true)",
            ["_anb_row"],
        )
    if type(source).__module__.startswith("duckdb"):
        reader = source.to_arrow_reader(batch_rows) if hasattr(source, "to_arrow_reader") else source
        con.register("_anb_stream", _numbered(reader))
        con.execute("CREATE TABLE _anb_source AS SELECT * FROM _anb_stream")
        con.unregister("_anb_stream")
        return "SELECT * FROM _anb_source", ["_anb_row"]
    table = source if isinstance(source, pa.Table) else pa.Table.from_pandas(source, preserve_index=False)
    con.register("_anb_source", table.append_column("_anb_row", pa.array(range(len(table)), pa.int64())))
    return "SELECT * FROM _anb_source", ["_anb_row"]


def _numbered(reader: Any) -> Any:
    """An Arrow batch reader with a row number column `_anb_row` added."""
    import pyarrow as pa

    schema = reader.schema.append(pa.field("_anb_row", pa.int64()))

    def batches() -> Any:
        start = 0
        for batch in reader:
            n = batch.num_rows
            yield pa.RecordBatch.from_arrays(
                [*batch.columns, pa.array(range(start, start + n), pa.int64())], schema=schema
            )
            start += n

    return pa.RecordBatchReader.from_batches(schema, batches())


def run_simulate_sql(
    source: Any,
    definitions: Any,
    *,
    mode: Mode = "server",
    out: str | Path | None = None,
    memory_limit: str = "1GB",
    threads: int | None = None,
    payloads: bool = False,
    now: dt.datetime | None = None,
    batch_rows: int = 200_000,
    progress: bool = True,
    missing_columns: str = "unknown",
    flags: Sequence[str] | None = None,
    reasons: bool = True,
    warn: bool = True,
    hasher: str = "auto",
) -> SqlRun:
    """Evaluate flags for every row of `source` through DuckDB: a parquet path (file or folder), a DuckDB
    relation, a pandas frame or Arrow table. Memory is bounded by `memory_limit` (DuckDB's setting; it
    spills to a temporary folder beyond it); the answers are written to parquet (`out`, else a temporary
    file deleted by `close()`) and read back lazily (`SqlRun`; `simulate_sql` wraps it in the one result).

    Flags and rows the SQL leaves to the local engine (`SqlRun.local_flags`, `.local_rows`) are
    evaluated by `flags.evaluate_frame` in batches of `batch_rows`, so every answer is the local engine's
    (mode "server" or "sdk"); relative dates are read against one instant, `now` (default: the call).
    With `missing_columns="unknown"` (the default, as in `simulate`) a flag reading a property the source
    has no column for is answered by the local engine: NA (reason ``missing_property``) where the answer
    depends on it, reported in one `MissingPropertyWarning` built from the local engine's own report
    (`SqlRun.missing_report`); ``missing_columns="not_set"`` reads such a property as not set.
    `flags` compiles and evaluates only those flags and the flags they depend on, and writes only theirs.

    The working files (DuckDB's database and spill folder, the answers unless `out` is given) live in a
    temporary folder removed by `close()` (or when the `SqlRun` is garbage-collected).

    Args:
        source: A parquet path (file or folder), a DuckDB relation, a pandas frame or an Arrow table.
        definitions: The flag definitions (any shape `flags.read_definitions` reads).
        mode: ``"server"`` or ``"sdk"``.
        out: The parquet file for the answers. None: a temporary file deleted by ``close()``.
        memory_limit: DuckDB's memory limit; beyond it DuckDB spills to disk.
        threads: DuckDB's threads. None: DuckDB's default.
        payloads: Add ``<flag>:payload`` columns.
        now: The instant relative dates are read against. None: the call.
        batch_rows: Rows per batch for what the local engine evaluates.
        progress: Show a progress bar for the local engine's batches.
        missing_columns: A property the source has no column for: ``"unknown"`` (the local engine
            answers: NA where the answer depends on it, with a warning) or ``"not_set"`` (read as not set).
        flags: Only these flag keys (what they depend on is evaluated, not written). None: every flag.
        reasons: Write ``<flag>:reason`` and ``<flag>:condition_index`` columns.
        warn: Issue the `MissingPropertyWarning` (False: the caller reads ``missing_report``).
        hasher: ``"auto"``: the project's compiled SHA-1 column hasher as a DuckDB function when it is
            built, else DuckDB's ``sha1``; ``"native"``: the compiled hasher (its hashlib fallback when
            not built); ``"sql"``: DuckDB's ``sha1``. The same buckets either way.

    Returns:
        The `SqlRun`.
    """
    require_extra("sql", "simulate_sql")
    import duckdb

    from analytics_nb.simulation._local import check_missing_columns, warn_missing_properties

    missing_columns = check_missing_columns(missing_columns)
    refuse_nul_columns(_column_names(source))
    if flags is not None:
        definitions = narrow_definitions(definitions, list(flags))
    now = now or dt.datetime.now(dt.UTC)
    workdir = make_workdir("anb-sql-")
    # a DuckDB relation is copied into a table of the working database, which is on disk so that its size
    # is not bounded by memory; anything else is read where it lies, by an in-memory database (creating
    # and closing the on-disk one was 0.03 s of a 0.55 s run over 1M persons)
    on_disk = type(source).__module__.startswith("duckdb")
    con = duckdb.connect(
        os.path.join(workdir, "work.duckdb") if on_disk else ":memory:",
        config={"memory_limit": memory_limit, "temp_directory": os.path.join(workdir, "spill")},
    )
    try:
        if threads is not None:
            con.execute(f"SET threads = {int(threads)}")
        con.execute("SET preserve_insertion_order = false")
        # DuckDB's own progress bar for the query (shown for queries running over two seconds)
        bar = progress and not os.environ.get("TQDM_DISABLE")
        con.execute(f"SET enable_progress_bar = {'true' if bar else 'false'}")
        bucket_function = bucket_stem(hasher)
        source_sql, keys = _source_sql(source, con, batch_rows)
        con.execute(f"CREATE VIEW {_TABLE} AS {source_sql}")
        schema = {row[0]: row[1] for row in con.execute(f"DESCRIBE {_TABLE}").fetchall()}
        query = compile_sql(
            definitions,
            dialect="duckdb",
            mode=mode,
            table=_TABLE,
            schema=schema,
            payloads=payloads,
            now=now,
            missing_columns=missing_columns,
            carry=keys,
            flags=flags,
            reasons=reasons,
            bucket_function=bucket_function,
        )
        register_buckets(con, query.buckets, query.bucket_sets)
        sql_path = os.path.join(workdir, "sql.parquet")
        how = (mode, now, payloads, missing_columns)
        local_rows, final, report = _combine(con, query, definitions, how, batch_rows, workdir, progress)
        target = Path(out) if out is not None else Path(workdir) / "answers.parquet"
        if final is not None:
            con.execute(f"COPY ({final}) TO {_literal(str(target))} (FORMAT parquet)")
        else:
            shutil.move(sql_path, target)
    except BaseException:
        con.close()
        remove_workdir(workdir)
        raise
    written = {sf.key for sf in query.flags}
    report = {k: v for k, v in report.items() if k in written}
    if warn and report:
        warn_missing_properties(report, _count(con, target))
    return SqlRun(con, target, query, local_rows, workdir, report)


def _combine(
    con: Any,
    query: SqlQuery,
    definitions: Any,
    how: tuple[Mode, dt.datetime, bool, str],
    batch_rows: int,
    workdir: str,
    progress: bool,
) -> tuple[int, str | None, dict[str, tuple[tuple[str, ...], int]]]:
    """Run the query and the local engine's part: the rows the SQL left to the local engine for some flag,
    answered in full by it. Returns those rows' count, the SELECT of the final answers (None: the SQL
    answers, ``sql.parquet``, as they are) and the local engine's missing-property report.

    A flag the SQL cannot express at all (`SqlQuery.local_flags`) needs the local engine on every row;
    the query is then not run and the local engine answers every row and flag (``local.parquet``): it reads
    every row anyway, and it evaluates a flag faster than DuckDB does (measured on the 2 shared cores:
    7M flag evaluations/s against 3.5M). Before, the query ran and every row went through the local engine
    as well: 96 demo-like flags on 200k rows took 3-13x the local engine alone."""
    sql_path = os.path.join(workdir, "sql.parquet")
    report: dict[str, tuple[tuple[str, ...], int]] = {}
    if query.local_flags:
        empty = con.sql(f"SELECT * FROM ({query.sql}) LIMIT 0").to_arrow_table()
        import pyarrow.parquet as pq

        pq.write_table(empty, sql_path)  # the answers' schema, for the local engine's writer
        rows = _answer_locally(
            con, query, definitions, how, batch_rows, ("TRUE", "", workdir), progress, report
        )
        if rows:  # the local engine's answers are the answers
            os.replace(os.path.join(workdir, "local.parquet"), sql_path)
        return rows, None, report
    con.execute(f"COPY ({query.sql}) TO {_literal(sql_path)} (FORMAT parquet)")
    local = _local_condition(query)
    if local == "FALSE":
        return 0, None, report
    sql_src = f"read_parquet({_literal(sql_path)})"
    rows = _answer_locally(
        con, query, definitions, how, batch_rows, (local, sql_src, workdir), progress, report
    )
    if not rows:
        return 0, None, report
    local_path = _literal(os.path.join(workdir, "local.parquet"))
    final = (
        f"SELECT * FROM {sql_src} WHERE NOT ({local}) "
        f"UNION ALL BY NAME SELECT * FROM read_parquet({local_path})"
    )
    return rows, final, report


def _count(con: Any, path: Path) -> int:
    return int(con.execute(f"SELECT count(*) FROM read_parquet({_literal(str(path))})").fetchall()[0][0])


def _answer_locally(
    con: Any,
    query: SqlQuery,
    definitions: Any,
    how: tuple[Mode, dt.datetime, bool, str],
    batch_rows: int,
    where: tuple[str, str, str],
    progress: bool,
    report: dict[str, tuple[tuple[str, ...], int]],
) -> int:
    """Stream the input rows the SQL left to the local engine (`where`: the condition, the SQL answers,
    the work folder) through `FrameEvaluator` in batches and write their answers to local.parquet (its
    missing-property report added into `report`); the number of rows answered."""
    import pyarrow.parquet as pq

    mode, now, payloads, missing_columns = how
    local, sql_src, workdir = where
    target = pq.read_schema(os.path.join(workdir, "sql.parquet"))
    if local == "TRUE":
        rows_sql = f"SELECT * FROM {_TABLE}"
    else:
        # the marked rows counted first, over one column of the SQL answers: with none (the usual case) the
        # input is not read again (the semi-join below read every input row: 0.15 s of 0.89 s at 1M rows)
        marked = con.execute(f"SELECT count(*) FROM {sql_src} WHERE {local}").fetchall()[0][0]
        if not marked:
            return 0
        rows_sql = (
            f"SELECT p.* FROM {_TABLE} p SEMI JOIN (SELECT {', '.join(_row_key(query))} FROM {sql_src} "
            f"WHERE {local}) l USING ({', '.join(_row_key(query))})"
        )
    total = int(con.execute(f"SELECT count(*) FROM ({rows_sql})").fetchall()[0][0])
    if total == 0:
        return 0
    reader = con.sql(rows_sql).to_arrow_reader(batch_rows)
    writer = pq.ParquetWriter(os.path.join(workdir, "local.parquet"), target)
    bar = None
    if progress and total > batch_rows:
        from tqdm.auto import tqdm

        bar = tqdm(total=total, unit="rows", desc="local engine")
    try:
        for batch in reader:
            frame = batch.to_pandas(types_mapper=_engine_dtype)
            writer.write_table(
                _local_answers(
                    frame, query, mode, definitions, now, payloads, target, missing_columns, report
                )
            )
            if bar is not None:
                bar.update(len(frame))
    finally:
        writer.close()
        if bar is not None:
            bar.close()
    return total

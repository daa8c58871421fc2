"""``simulate(..., engine="sql")``: the flags compiled to SQL (`flags.compile_sql`) and run by the embedded
DuckDB over the property sets where they lie (a parquet export, a DuckDB relation or file, or a table in
memory), with memory bounded by ``memory_limit`` and the answers written to parquet (``out=``).

The result (`SqlSimulationResult`, which `simulate_sql`, the lower-level door, returns too) is the one
`SimulationResult` over a `simulation._sql_source.SqlSource` (issue 34): its frame has the local engine's
shape and answers and is collected only when ``.frame`` (or ``.data``, ``.to_csv``, ...) is read;
``summary()``, ``crosstab()``, ``len()`` and ``errors`` are `SimulationResult`'s own, over the source's counts
computed in SQL without collecting rows, so a 100M-row export can be summarised on a laptop. Flags (and rows)
the SQL cannot answer exactly are answered by the local engine (``result.local_flags`` says which and why), so
every answer is the engine's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from analytics_nb.client import ApiClient, AsyncApiClient, FeatureFlags
from analytics_nb.flags._evaluate import Mode
from analytics_nb.flags._sql import SqlQuery
from analytics_nb.simulation._definitions import (
    Definitions,
    afill,
    fill,
    has_group_columns,
    live_flags,
    load_definitions,
    note_fetch_failure,
    take_fetch_failure,
    warn_unfilled,
)
from analytics_nb.simulation._errors import SimulationInputError
from analytics_nb.simulation._inputs import (
    check_flag_keys,
    normalise_property_sets,
    output_choice,
    read_table,
)
from analytics_nb.simulation._local import check_group_mapping, check_missing_columns
from analytics_nb.simulation._output import TEXT_IDS, ids_are_text
from analytics_nb.simulation._result import SimulationResult
from analytics_nb.simulation._sql import SqlRun, run_simulate_sql
from analytics_nb.simulation._sql_source import SqlSource
from analytics_nb.tables import Output, default_output
from analytics_nb.tables._extras import require_extra

__all__ = [
    "DEFAULT_MEMORY_LIMIT",
    "SqlSimulationResult",
    "asql",
    "check_sql_options",
    "simulate_in_sql",
    "simulate_sql",
]

DEFAULT_MEMORY_LIMIT = "1GB"
"""DuckDB's ``memory_limit`` for ``engine="sql"`` unless ``memory_limit=`` says otherwise (it spills to disk
beyond it)."""


def check_sql_options(engine: Any, out: Any, memory_limit: Any) -> None:
    """``out=`` and ``memory_limit=`` belong to ``engine="sql"``; refused with any other engine."""
    if engine != "sql" and (out is not None or memory_limit is not None):
        raise SimulationInputError(
            f"out= and memory_limit= are options of engine='sql' (DuckDB); engine={engine!r} keeps its "
            "result in memory: use engine='sql', or result.to_csv(path) / result.to('arrow')."
        )
    if memory_limit is not None and not isinstance(memory_limit, str):
        raise SimulationInputError(
            f"memory_limit={memory_limit!r}: give DuckDB's setting as text, e.g. '1GB' or '512MB'."
        )


#: Characters DuckDB's ``read_parquet`` reads as a glob pattern: a path holding one is not given to it.
_GLOB_CHARS = frozenset("*?[")


def _literal_files(paths: list[Path]) -> Any:
    """A DuckDB relation over exactly these parquet files (a folder: every ``*.parquet`` under it), read by
    Arrow, which takes a path literally: DuckDB's ``read_parquet`` expands ``*``, ``?`` and ``[...]`` in any
    path it is given, so ``a[1].parquet`` would read ``a1.parquet`` and ``a*b.parquet`` every ``a...b``
    file. Arrow streams the files in batches (`_sql._source_sql` copies a relation into the working
    database), so they are still not held in memory whole."""
    import duckdb
    import pyarrow.dataset as ds

    files: list[str] = []
    for path in paths:
        if path.is_dir():
            files += sorted(str(f) for f in path.rglob("*.parquet") if f.is_file())
        else:
            files.append(str(path))
    if not files:
        raise SimulationInputError(f"no parquet file under {str(paths[0])!r}; check the path.")
    return duckdb.from_arrow(ds.dataset(files, format="parquet"))


def _parquet_paths(property_sets: Any) -> list[Path] | None:
    """The parquet paths given (a path, or a list of paths, e.g. a pathlib glob the caller expanded), each
    checked to exist; None when ``property_sets`` is not paths."""
    if isinstance(property_sets, (str, Path)):
        given = [property_sets]
    elif (
        isinstance(property_sets, list | tuple)
        and property_sets
        and all(
            isinstance(p, Path) or (isinstance(p, str) and p.endswith((".parquet", ".pq")))
            for p in property_sets
        )
    ):
        given = list(property_sets)
    else:
        return None
    paths = [Path(p) for p in given]
    for path in paths:
        if not path.exists():
            hint = ""
            if _GLOB_CHARS & set(str(path)):
                hint = (
                    " Paths are read literally ('*', '?' and '[' are part of the name, not a pattern): to "
                    "read several files pass their folder, or expand the pattern yourself and pass the list, "
                    "e.g. "
                    "sorted(Path('exports').glob('persons-*.parquet'))."
                )
            raise SimulationInputError(f"no parquet file or folder at {str(path)!r}; check the path.{hint}")
    return paths


def _source(property_sets: Any) -> tuple[Any, Any, str]:
    """What DuckDB reads, the property sets as pandas when they are in memory (None when DuckDB reads
    them where they lie), and the input family. A path is read literally (see `_literal_files`); a list of
    paths reads exactly those files."""
    paths = _parquet_paths(property_sets)
    if paths is not None:
        if len(paths) == 1 and not _GLOB_CHARS & set(str(paths[0])):
            return paths[0], None, "parquet"
        return _literal_files(paths), None, "parquet"
    if type(property_sets).__module__.startswith("duckdb"):
        return property_sets, None, "duckdb"
    raw, family = read_table(property_sets)
    sets = normalise_property_sets(raw)
    dicts = [c for c in ("person_properties", "group_properties") if c in sets.frame.columns]
    if dicts:
        raise SimulationInputError(
            f"engine='sql' reads one column per property; the property sets have a {dicts[0]!r} column of "
            "dicts: spread it into columns (pd.json_normalize) or use engine='local'."
        )
    frame = sets.engine_frame()
    try:
        import pyarrow as pa

        table = pa.Table.from_pandas(frame, preserve_index=False)
    except (TypeError, ValueError) as exc:  # pyarrow's ArrowTypeError / ArrowInvalid are both
        raise SimulationInputError(
            f"engine='sql' needs one type per column ({exc}); cast the column or use engine='local'."
        ) from None
    return table, sets.frame, family


def _definitions(definitions: Any, client: ApiClient | None, group_type_mapping: Any) -> Definitions:
    """The given definitions (filled from the client's project when they lack cohorts or group type names:
    `simulation._definitions.fill`, the rule every engine uses), else the client's project's (fetched), with
    ``group_type_mapping`` merged."""
    if definitions is None:
        if client is None:
            raise SimulationInputError(
                "engine='sql' needs flag definitions: pass definitions= (JSON, dicts, models, "
                "LocalEvaluationResponse or a flags DataFrame) or client= to fetch them."
            )
        definitions = client.feature_flags.local_evaluation()
    defs = live_flags(load_definitions(definitions))
    if group_type_mapping:
        if not isinstance(group_type_mapping, dict):
            raise SimulationInputError(
                "group_type_mapping must be a dict of group type index -> name, e.g. {'0': 'company'}."
            )
        mapping = {str(k): str(v) for k, v in group_type_mapping.items()}
        defs = dataclasses.replace(defs, group_type_mapping={**defs.group_type_mapping, **mapping})
    return fill(defs, client)


def _source_columns(source: Any) -> list[str]:
    """The column names of what DuckDB reads: an Arrow table, a DuckDB relation, or a parquet file or folder
    (its schema only, no rows)."""
    if isinstance(source, Path):
        import pyarrow.dataset as ds

        return list(ds.dataset(source, format="parquet").schema.names)
    return list(getattr(source, "column_names", None) or getattr(source, "columns", None) or [])


def simulate_in_sql(
    property_sets: Any,
    flags: Sequence[str] | str | None,
    *,
    client: Any,
    definitions: Any,
    mode: Any,
    progress: bool | None,
    payloads: bool,
    reasons: bool,
    group_type_mapping: Any,
    output: Output | None,
    missing_columns: Any,
    out: str | Path | None,
    memory_limit: str | None,
    evaluator: Any = None,
    now: dt.datetime | None = None,
) -> SqlSimulationResult:
    """`simulate` with ``engine="sql"`` (its arguments, checked the same way)."""
    require_extra("sql", "engine='sql'")
    started = time.perf_counter()
    if isinstance(client, AsyncApiClient):
        raise TypeError("client= is an AsyncClient: use `await asimulate(..., client=client)` in async code.")
    if client is not None and not isinstance(client, ApiClient):
        raise TypeError(f"client= must be an analytics_nb Client, got {type(client).__name__}.")
    if mode not in ("server", "sdk"):
        raise SimulationInputError(
            f"mode={mode!r}: use 'server' (what /decide does) or 'sdk' (the official SDK's local evaluation)."
        )
    if evaluator is not None:
        raise SimulationInputError("evaluator= belongs to engine='local'; engine='sql' compiles the flags.")
    check_sql_options("sql", out, memory_limit)
    missing = check_missing_columns(missing_columns)
    chosen = output_choice(output)
    source, inputs, family = _source(property_sets)
    defs = _definitions(definitions, client, group_type_mapping)
    keys = check_flag_keys(flags, defs.keys) or defs.keys
    columns = _source_columns(source)
    # group keys but no mapping: an error, as with the local engine (the group flags would ignore them)
    check_group_mapping([c.split(":", 1)[1] for c in columns if has_group_columns([c])], defs)
    # once per run, before DuckDB starts: flags whose cohorts / group type names are still missing are NA
    warn_unfilled(defs, keys, groups_matter=mode == "sdk" or has_group_columns(columns))
    if progress is None:
        progress = client.core.config.progress if client is not None else True
    try:
        sim = run_simulate_sql(
            source,
            defs,
            mode=mode,
            out=out,
            memory_limit=memory_limit or DEFAULT_MEMORY_LIMIT,
            # a payload is a function of the value (`CompiledFlag.payload_for`): read back from the values
            # (`_collect`), never written by the query (it was a third of the columns written)
            payloads=False,
            progress=bool(progress),
            missing_columns=missing,
            now=now,
            flags=keys if set(keys) != set(defs.keys) else None,  # all of them: no narrowing to compile
            reasons=reasons,
            warn=False,
        )
    except ValueError as exc:  # the compiler's input errors (a dict column, a float distinct_id)
        raise SimulationInputError(str(exc)) from None
    result = SqlSimulationResult(
        sim,
        keys=keys,
        definitions=defs,
        mode=mode,
        payloads=payloads,
        reasons=reasons,
        inputs=inputs,
        output=chosen or default_output(family),  # type: ignore[arg-type]
        elapsed=time.perf_counter() - started,
    )
    result.warn_missing()
    return result


async def asql(arguments: dict[str, Any]) -> SqlSimulationResult:
    """``asimulate(..., engine="sql")``: an `AsyncClient` fetches the definitions on the caller's loop;
    DuckDB runs in a worker thread, so the loop stays free."""
    require_extra("sql", "engine='sql'")
    arguments = dict(arguments)
    client = arguments.pop("client")
    for name in ("engine", "concurrency", "estimate", "warn_minutes", "runtime"):  # remote-only options
        arguments.pop(name, None)
    if isinstance(client, AsyncApiClient):
        if arguments["definitions"] is None:
            arguments["definitions"] = await FeatureFlags(client.core).local_evaluation()
        else:  # the sync path fills with a sync client; this loop's client fills here (the same rule)
            given = live_flags(load_definitions(arguments["definitions"]))
            mapping = arguments.get("group_type_mapping")
            arguments["definitions"] = await afill(
                given,
                client,
                group_type_mapping={str(k): str(v) for k, v in mapping.items()}
                if isinstance(mapping, dict)
                else None,
            )
        if arguments["progress"] is None:
            arguments["progress"] = client.core.config.progress
        client = None
    note = take_fetch_failure()  # why afill could not fetch, for the worker thread's warning

    def run() -> SqlSimulationResult:
        note_fetch_failure(note)
        return simulate_in_sql(client=client, **arguments)

    return await asyncio.to_thread(run)


def simulate_sql(
    source: Any,
    definitions: Any,
    *,
    mode: Mode = "server",
    out: str | Path | None = None,
    memory_limit: str = DEFAULT_MEMORY_LIMIT,
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
) -> SqlSimulationResult:
    """Evaluate flags for every row of `source` through DuckDB, out of core: the lower-level door of
    ``simulate(..., engine="sql")`` (no client, the definitions as given, DuckDB's ``threads``,
    ``batch_rows`` and ``hasher`` settings), returning the same one result, a `SqlSimulationResult`.

    `source` is a parquet path (file or folder, read where it lies), a DuckDB relation, a pandas frame or an
    Arrow table. Memory is bounded by `memory_limit` (DuckDB spills to a temporary folder beyond it); the
    answers are written to parquet (`out`, else a temporary file removed by ``close()``). ``summary()``,
    ``crosstab()``, ``len()``, ``.frame``, ``to(...)`` and ``to_parquet()`` are `SimulationResult`'s (equal
    to the local engine's); the raw SQL answers are ``sql_frame()`` / ``.relation``, the query ``.query``
    (``.sql`` its text). Flags and rows the SQL leaves to the local engine (``.local_flags``,
    ``.local_rows``) are evaluated by it in batches of `batch_rows`, so every answer is the local engine's.
    With ``missing_columns="unknown"`` (the default, as in `simulate`) a flag reading a property the source
    has no column for is NA (reason ``missing_property``) where the answer depends on it, in one
    `MissingPropertyWarning` (``.missing_report``); ``"not_set"`` reads such a property as not set.

    Args:
        source: A parquet path (file or folder), a DuckDB relation, a pandas frame or an Arrow table.
        definitions: The flag definitions (any shape `flags.read_definitions` reads).
        mode: ``"server"`` or ``"sdk"``.
        out: The parquet file for the raw SQL answers. None: a temporary file deleted by ``close()``.
        memory_limit: DuckDB's memory limit; beyond it DuckDB spills to disk.
        threads: DuckDB's threads. None: DuckDB's default.
        payloads: Add ``<flag>:payload`` columns.
        now: The instant relative dates are read against. None: the call.
        batch_rows: Rows per batch for what the local engine evaluates.
        progress: Show a progress bar for the local engine's batches.
        missing_columns: ``"unknown"`` (NA where the answer depends on an absent column, with a warning)
            or ``"not_set"`` (an absent column is read as not set).
        flags: Only these flag keys (what they depend on is evaluated, not written). None: every flag.
        reasons: Add ``<flag>:reason`` and ``<flag>:condition_index`` columns.
        warn: Issue the `MissingPropertyWarning` (False: the caller reads ``missing_report``).
        hasher: ``"auto"``, ``"native"`` (the project's compiled SHA-1 hasher) or ``"sql"`` (DuckDB's
            ``sha1``): the same buckets either way.

    Returns:
        The `SqlSimulationResult` (close it, or use it in a ``with`` block, to remove the working files).
    """
    require_extra("sql", "simulate_sql")
    started = time.perf_counter()
    defs = load_definitions(definitions)
    sim = run_simulate_sql(
        source,
        definitions,
        mode=mode,
        out=out,
        memory_limit=memory_limit,
        threads=threads,
        payloads=payloads,
        now=now,
        batch_rows=batch_rows,
        progress=progress,
        missing_columns=missing_columns,
        flags=flags,
        reasons=reasons,
        warn=warn,
        hasher=hasher,
    )
    return SqlSimulationResult(
        sim,
        keys=sim.flags,
        definitions=defs,
        mode=mode,
        payloads=payloads,
        reasons=reasons,
        inputs=_text_ids(source) if isinstance(source, pd.DataFrame) else None,
        output=default_output("arrow" if type(source).__module__.startswith("pyarrow") else "pandas"),
        elapsed=time.perf_counter() - started,
    )


def _text_ids(frame: pd.DataFrame) -> pd.DataFrame:
    """A property-sets frame given to `simulate_sql` as it is, its text ids (``object`` cells all ``str``) in
    pandas 3's ``str`` as `normalise_property_sets` gives them, so the result's ids are ``str`` as every
    door's (`result_ids`); integer or mixed ids are left alone."""
    ids = frame.get("distinct_id")
    if ids is None or ids.dtype != object or not ids_are_text(ids):
        return frame
    return frame.assign(distinct_id=ids.astype(TEXT_IDS))


class SqlSimulationResult(SimulationResult):
    """What ``simulate(..., engine="sql")`` returns: the one `SimulationResult` over DuckDB's answers, its
    `AnswerSource` a `SqlSource` (``summary()``, ``crosstab()``, ``len()``, ``errors``, ``missing_report``
    and the notebook view are the ones every engine has, computed in SQL without collecting rows).

    `simulate_sql` returns it too (issue 34). ``.frame`` has the local engine's columns, dtypes and answers
    (collected from the parquet answers the first time it is read, in input order); ``batches()``,
    ``to_parquet`` and ``to_csv`` read them a range of rows at a time and never collect (issue 35). ``.path``
    is the parquet file of the answers (``out=``, else a temporary file removed by ``close()``), ``.relation``
    the raw SQL answers as a DuckDB relation and ``sql_frame()`` the same collected as pandas (text values,
    row keys), ``.query`` the compiled `SqlQuery` (``.sql`` its text), ``.con`` the DuckDB connection,
    ``.local_flags`` the flags the local engine answered (with why) and ``.local_rows`` the rows it answered
    for the others. It stays a subclass only for these and for ``close()``: its frame is read lazily from
    DuckDB rather than held.
    """

    def __init__(
        self,
        sim: SqlRun,
        *,
        keys: Sequence[str],
        definitions: Definitions,
        mode: str,
        payloads: bool,
        reasons: bool,
        inputs: pd.DataFrame | None,
        output: Output,
        elapsed: float,
    ) -> None:
        self.sim = sim
        self.engine = "sql"
        self.mode = mode
        self.variants = definitions.variants()
        self.local = self.remote = self.agreement = self.differences = None
        self.elapsed = elapsed
        self.partial = False
        self.total = None
        self.remaining = None
        self.output = output
        self._source = SqlSource(
            sim, keys=keys, definitions=definitions, payloads=payloads, reasons=reasons, given_inputs=inputs
        )

    @property
    def source(self) -> SqlSource:
        """The DuckDB answers behind this result (one source, kept: it keeps the frame once collected)."""
        return self._source

    # -- lazily collected frames -------------------------------------------------------------------------
    @property
    def frame(self) -> pd.DataFrame:
        """The answers with the input columns, as the local engine gives them (collects every row)."""
        return self._source.collect(inputs=True)

    @frame.setter
    def frame(self, value: pd.DataFrame) -> None:
        self._source.frame = value

    @property
    def outputs(self) -> pd.DataFrame:
        """The answers without the input columns (collects every row)."""
        return self._source.collect()

    @outputs.setter
    def outputs(self, value: pd.DataFrame) -> None:
        self._source.outputs = value

    @property
    def _frame(self) -> pd.DataFrame | None:
        return self._source.frame  # None until collected

    @property
    def _outputs(self) -> pd.DataFrame | None:
        return self._source.outputs  # None until collected

    @property
    def inputs(self) -> pd.DataFrame:
        """The property sets (read from the source, in input order, when DuckDB read them there)."""
        return self._source.inputs

    @inputs.setter
    def inputs(self, value: pd.DataFrame) -> None:
        self._source._inputs = value

    @property
    def _answers(self) -> str:
        return self._source.answers

    # -- the SQL run -------------------------------------------------------------------------------------
    @property
    def path(self) -> Path:
        """The parquet file holding the answers (``out=``, else a temporary file)."""
        return self.sim.path

    @property
    def relation(self) -> Any:
        """The answers as a DuckDB relation (the SQL engine's columns: text values for multivariate flags)."""
        return self.sim.relation

    @property
    def sql(self) -> str:
        """The query DuckDB ran (`flags.to_sql` for this source's columns)."""
        return self.sim.query.sql

    @property
    def query(self) -> SqlQuery:
        """The compiled query (`flags.compile_sql`'s `SqlQuery`: ``.sql``, ``.flags``, ``.local_flags``)."""
        return self.sim.query

    @property
    def con(self) -> Any:
        """The run's DuckDB connection (its ``persons`` view is the input rows with their row keys), for
        your own SQL next to ``.relation``; closed by ``close()``."""
        return self.sim.con

    def sql_frame(self) -> pd.DataFrame:
        """The raw SQL answers as pandas, every row collected: the SQL engine's columns (text values for
        multivariate flags, the row keys ``_anb_row`` / ``_anb_file``), in the parquet file's order. What
        `SqlSimulation.frame()` gave before issue 34; ``.frame`` is the local engine's shape."""
        frame: pd.DataFrame = self.sim.relation.df()
        return frame

    @property
    def local_flags(self) -> dict[str, str]:
        """{flag key: why the local engine answered it rather than SQL}."""
        return self.sim.local_flags

    @property
    def local_rows(self) -> int:
        """How many rows the local engine answered (for the flags SQL answers on the other rows)."""
        return self.sim.local_rows

    def head(self, n: int = 10) -> pd.DataFrame:
        """The first `n` rows of the outputs (only they are read from DuckDB, not every row).

        Args:
            n: How many rows.

        Returns:
            The first rows in the local engine's shape, in input order.
        """
        return self._source.head(n)

    def close(self) -> None:
        """Close DuckDB and remove the working files (the answers too unless ``out=`` was given)."""
        self.sim.close()

    def __enter__(self) -> SqlSimulationResult:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        """The rows and errors counted in SQL (no error row is read), the flags the local engine answered
        and the answers file."""
        local = f", local_flags={sorted(self.local_flags)}" if self.local_flags else ""
        return (
            f"SimulationResult(engine='sql', rows={len(self)}, flags={len(self.flags)}, "
            f"errors={self._source.error_count()}{local})\n  answers: {str(self.path)!r}"
        )

"""`simulate()` / `asimulate()`: run property sets through remote decide, the local flag engine, or both.

A straight pipeline, each step a function of the previous steps' values (nothing is mutated on the way):

1. ``check_options`` -> a frozen `SimulationOptions` (every option checked here, once);
2. ``normalise_property_sets`` -> the property sets;
3. ``_definitions`` -> the flag definitions (given, fetched with the client, or filled from the service);
4. ``_prepare`` -> a frozen `_Prepared`: flag keys checked against the definitions, group type mapping
   merged, the local evaluator built (which checks the group mapping) - before any request is sent;
5. ``_local`` and ``_remote``: the two evaluations, peers over the same prepared input;
6. ``_result``: compare them (engine "both") and build the `SimulationResult`.

Steps 1-2 run in the caller's thread. ``simulate`` without a client runs the rest with no event loop (there
is nothing to await); with a sync ``Client`` steps 3-6 (``_evaluate``) run on the client's loop;
``asimulate`` awaits them on the caller's loop.

Long runs say so: the local engine shows a bar of rows past ``2 * LOCAL_CHUNK_ROWS`` rows; a remote run over
``ESTIMATE_MIN_ROWS`` rows prints its expected duration once its first rows are in and warns
(`LongRunWarning`) past ``warn_minutes``. An interrupted remote run (Ctrl-C in the sync caller, a cancelled
task in async code) returns the rows answered so far as a partial `SimulationResult` (``_partial``): the
answers are written to a list the run's `_Outcome` holds, and the sync caller waits for the cancelled
coroutine to hand over that result.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import functools
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from analytics_nb.client import (
    ApiClient,
    AsyncApiClient,
    Core,
    FeatureFlags,
    progress_bar,
    run_interruptible,
)
from analytics_nb.errors import PostHogError
from analytics_nb.simulation._compare import compare
from analytics_nb.simulation._definitions import (
    Definitions,
    afill,
    live_flags,
    load_definitions,
    warn_unfilled,
)
from analytics_nb.simulation._errors import SimulationInputError
from analytics_nb.simulation._inputs import (
    PropertySets,
    check_flag_keys,
    normalise_property_sets,
    output_choice,
    read_table,
)
from analytics_nb.simulation._local import (
    ChunkedEvaluator,
    MissingColumns,
    check_missing_columns,
    local_evaluator,
    run_local,
)
from analytics_nb.simulation._output import flag_columns
from analytics_nb.simulation._remote import (
    DEFAULT_CONCURRENCY,
    WARN_MINUTES,
    RemoteRow,
    Runtime,
    check_remote_runtime,
    decide_rows,
    default_concurrency,
    remote_frame,
    warn_runtime_filtered,
    with_estimate,
)
from analytics_nb.simulation._result import SimulationResult
from analytics_nb.simulation._sql_engine import asql, check_sql_options, simulate_in_sql
from analytics_nb.tables import Family, Output, default_output

if TYPE_CHECKING:
    from analytics_nb.flags import FrameEvaluator

__all__ = ["Engine", "SimulationOptions", "check_options", "simulate"]

Engine = Literal["remote", "local", "both", "sql"]
Mode = Literal["server", "sdk"]


@dataclass(frozen=True)
class SimulationOptions:
    """How to simulate, checked: which engines, which flags, how many requests in flight, what to return."""

    engine: Engine
    mode: Mode
    flags: tuple[str, ...] | None
    concurrency: int
    progress: bool | None
    payloads: bool
    reasons: bool
    group_type_mapping: Mapping[str, str] | None
    evaluator: FrameEvaluator | None
    estimate: bool = True
    warn_minutes: float | None = WARN_MINUTES
    missing_columns: MissingColumns = "unknown"
    runtime: str = "server"  # the runtime remote requests ask as (evaluation_runtime)

    @property
    def local(self) -> bool:
        """The local engine runs."""
        return self.engine in ("local", "both")

    @property
    def remote(self) -> bool:
        """Decide requests are sent."""
        return self.engine in ("remote", "both")


def check_options(
    *,
    engine: Any,
    mode: Any,
    flags: Sequence[str] | str | None,
    concurrency: Any,
    progress: bool | None,
    payloads: bool,
    reasons: bool,
    group_type_mapping: Any,
    evaluator: FrameEvaluator | None,
    core: Core | None,
    has_definitions: bool,
    estimate: Any = True,
    warn_minutes: Any = WARN_MINUTES,
    missing_columns: Any = "unknown",
    runtime: Any = "server",
) -> SimulationOptions:
    """Every option of `simulate` checked in one place; raises `SimulationInputError` naming the fix."""
    if engine not in ("remote", "local", "both"):
        raise SimulationInputError(f"engine={engine!r}: use 'remote', 'local', 'both' or 'sql'.")
    if mode not in ("server", "sdk"):
        raise SimulationInputError(
            f"mode={mode!r}: use 'server' (what /decide does) or 'sdk' (the official SDK's local evaluation)."
        )
    if concurrency is None:
        concurrency = default_concurrency(core) if core is not None else DEFAULT_CONCURRENCY
    elif isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise SimulationInputError(
            f"concurrency={concurrency!r} must be a positive integer (default: adaptive, up to 256)."
        )
    if engine in ("remote", "both") and core is None:
        raise SimulationInputError(
            f"engine={engine!r} sends decide requests and needs client= (a Client with project_api_key); "
            "or use engine='local' with definitions=."
        )
    if engine in ("local", "both") and core is None and not has_definitions:
        raise SimulationInputError(
            "engine='local' needs flag definitions: pass definitions= (JSON, dicts, models, "
            "LocalEvaluationResponse or a flags DataFrame) or client= to fetch them."
        )
    if group_type_mapping is not None and not isinstance(group_type_mapping, dict):
        raise SimulationInputError(
            "group_type_mapping must be a dict of group type index -> name, e.g. {'0': 'company'}."
        )
    if not isinstance(estimate, bool):
        raise SimulationInputError(
            f"estimate={estimate!r}: use True (estimate long remote runs) or False; the warning threshold "
            "is warn_minutes=."
        )
    if warn_minutes is not None and (
        isinstance(warn_minutes, bool) or not isinstance(warn_minutes, int | float) or not warn_minutes >= 0
    ):
        raise SimulationInputError(
            f"warn_minutes={warn_minutes!r} must be a number of minutes >= 0 (default {WARN_MINUTES:g}) "
            "or None (never warn)."
        )
    if progress is None and core is not None:
        progress = core.config.progress
    return SimulationOptions(
        engine=engine,
        mode=mode,
        flags=(flags,) if isinstance(flags, str) else None if flags is None else tuple(flags),
        concurrency=concurrency,
        progress=progress,
        payloads=payloads,
        reasons=reasons,
        group_type_mapping=(
            None if group_type_mapping is None else {str(k): str(v) for k, v in group_type_mapping.items()}
        ),
        evaluator=evaluator,
        estimate=estimate,
        warn_minutes=None if warn_minutes is None else float(warn_minutes),
        missing_columns=check_missing_columns(missing_columns),
        runtime=check_remote_runtime(runtime),
    )


@dataclass(frozen=True)
class _Prepared:
    """Everything both evaluations read, settled before any request is sent."""

    options: SimulationOptions
    sets: PropertySets
    definitions: Definitions | None
    keys: list[str] | None  # the flags asked for (checked against the definitions when there are some)
    evaluator: FrameEvaluator | ChunkedEvaluator | None  # the local engine over the property sets


# -- 3. definitions --------------------------------------------------------------------------------------


def _given(definitions: Any) -> Definitions | None:
    return None if definitions is None else live_flags(load_definitions(definitions))


async def _definitions(
    options: SimulationOptions, given: Definitions | None, core: Core
) -> Definitions | None:
    """The definitions to use: the given ones (filled from the service when they lack cohorts or group
    type names: `simulation._definitions.afill`, the one top-up rule), else the service's - fetched for the
    local engine, and for remote-only runs when a personal key is set (to check flag keys and type the
    columns)."""
    if given is not None:
        if not options.local:
            return given
        return await afill(given, core, group_type_mapping=options.group_type_mapping)
    if not options.local and not core.config.personal_api_key:
        return None
    fetched = await _fetch(core, required=options.local)
    if fetched is not None:
        return live_flags(load_definitions(fetched))
    if options.local:
        raise SimulationInputError("could not read flag definitions; pass definitions=.")
    return None


async def _fetch(core: Core, *, required: bool) -> Any:
    try:
        return await FeatureFlags(core).local_evaluation()
    except PostHogError:
        if required:
            raise
        return None


# -- 4. prepare --------------------------------------------------------------------------------------------


def _prepare(options: SimulationOptions, sets: PropertySets, defs: Definitions | None) -> _Prepared:
    """Check the flag keys, merge the group type mapping and build the local evaluator."""
    keys = None if options.flags is None else list(options.flags)
    if defs is not None:
        keys = check_flag_keys(keys, defs.keys)
        if options.group_type_mapping:
            defs = dataclasses.replace(
                defs, group_type_mapping={**defs.group_type_mapping, **options.group_type_mapping}
            )
    evaluator = None
    if options.local:
        assert defs is not None  # check_options / _definitions guarantee them for the local engine
        evaluator = options.evaluator or local_evaluator(
            sets, defs, mode=options.mode, missing_columns=options.missing_columns
        )
        groups_matter = options.mode == "sdk" or bool(sets.group_key_columns)
        warn_unfilled(defs, keys, groups_matter=groups_matter)  # once per run; the answers stay NA
    return _Prepared(options, sets, defs, keys, evaluator)


# -- 5. evaluations -----------------------------------------------------------------------------------------


def _local(prepared: _Prepared) -> pd.DataFrame:
    options = prepared.options
    return run_local(
        prepared.evaluator,
        prepared.sets,
        prepared.keys,
        payloads=options.payloads,
        reasons=options.reasons,
        progress=options.progress,
    )


async def _remote(prepared: _Prepared, core: Core, into: list[RemoteRow | None]) -> pd.DataFrame:
    return _remote_result(prepared, await _remote_rows(prepared, core, into))


def _remote_result(prepared: _Prepared, rows: Sequence[RemoteRow]) -> pd.DataFrame:
    """The remote frame from one answer per row of ``prepared.sets``."""
    options, defs = prepared.options, prepared.definitions
    frame = remote_frame(
        prepared.sets,
        rows,
        flag_keys=prepared.keys,
        known_keys=defs.keys if defs is not None else None,
        multivariate=set(defs.variants()) if defs is not None else set(),
        payload_texts=defs.payload_texts() if defs is not None else None,
        payloads=options.payloads,
        reasons=options.reasons,
    )
    if defs is not None:
        warn_runtime_filtered(defs.flags, prepared.keys, options.runtime)
    return _inactive_off(frame, rows, defs) if defs is not None else frame


async def _remote_rows(prepared: _Prepared, core: Core, into: list[RemoteRow | None]) -> list[RemoteRow]:
    """Every row's answer (also written to ``into`` as they arrive); a long run is estimated first."""
    options = prepared.options
    requests = prepared.sets.requests()
    if not requests:
        return []
    bar = progress_bar(options.progress, total=len(requests), desc="decide", unit="row")
    if options.estimate:
        bar = with_estimate(bar, len(requests), warn_minutes=options.warn_minutes)
    ask = functools.partial(decide_rows, runtime=options.runtime)  # every request says its runtime
    try:
        first: list[RemoteRow] = []
        if prepared.keys is not None and prepared.definitions is None:
            first = await ask(
                core, requests[:1], concurrency=1, detailed=options.reasons, progress=bar, into=into
            )
            _check_remote_keys(prepared.keys, first[0])
            requests = requests[1:]
        rest = await ask(
            core,
            requests,
            concurrency=options.concurrency,
            detailed=options.reasons,
            progress=bar,
            flag_keys=prepared.keys,
            into=into,
            offset=len(first),
        )
        return first + rest
    finally:
        bar.close()


def _check_remote_keys(keys: list[str], first: RemoteRow) -> None:
    """Without definitions, unknown keys are caught on the first row's answer, before the other rows."""
    if first.error is None:
        check_flag_keys(keys, [*first.values, *first.failed])  # a failed flag exists: it is not a typo


def _inactive_off(frame: pd.DataFrame, rows: Sequence[RemoteRow], defs: Definitions) -> pd.DataFrame:
    """The service leaves inactive flags out of its answer; they are off, so show False (not unknown)."""
    inactive = [f["key"] for f in defs.flags if f.get("active") is False and f["key"] in frame.columns]
    if not inactive:
        return frame
    ok = pd.Series([r.error is None for r in rows], index=frame.index)
    updates = {}
    for key in inactive:
        col = frame[key]
        updates[key] = col.where(~(col.isna() & ok), False)
    return frame.assign(**updates)


# -- 6. result ---------------------------------------------------------------------------------------------


def _result(
    prepared: _Prepared,
    local: pd.DataFrame | None,
    remote: pd.DataFrame | None,
    started: float,
    *,
    partial: dict[str, Any] | None = None,
) -> SimulationResult:
    options, sets, defs = prepared.options, prepared.sets, prepared.definitions
    variants = defs.variants() if defs is not None else {}
    inputs = sets.frame
    elapsed = time.perf_counter() - started
    extra = partial or {}
    if remote is None:
        assert local is not None
        return SimulationResult(
            local,
            "local",
            inputs,
            options.mode,
            variants,
            local=local,
            elapsed=elapsed,
            missing=_local_report(prepared),
        )
    if local is None:  # the service reads the stored properties: no answer is NA for a missing column
        return SimulationResult(
            remote,
            "remote",
            inputs,
            options.mode,
            variants,
            remote=remote,
            elapsed=elapsed,
            missing={},
            **extra,
        )
    assert defs is not None
    remote_keys = set(flag_columns(remote))
    keys = [k for k in flag_columns(local) if k in remote_keys]
    agreement, differences = compare(local, remote, keys, sets.requests(), defs, mode=options.mode)
    return SimulationResult(
        remote,
        "both",
        inputs,
        options.mode,
        variants,
        local=local,
        remote=remote,
        agreement=agreement,
        differences=differences,
        elapsed=elapsed,
        missing={},  # .frame is the remote answer (the local report is the local frame's)
        **extra,
    )


def _local_report(prepared: _Prepared) -> dict[str, tuple[tuple[str, ...], int]] | None:
    """The local engine's report of answers absent columns made NA, for the flags asked (None: a caller's
    evaluator that keeps none)."""
    report = getattr(prepared.evaluator, "missing_report", None)
    if report is None:
        return None
    keys = prepared.keys
    return {k: v for k, v in report.items() if keys is None or k in keys}


def _partial(
    prepared: _Prepared, local: pd.DataFrame | None, rows: Sequence[RemoteRow | None], started: float
) -> SimulationResult | None:
    """The result over the rows answered before an interrupt (None when there are none): the rows in
    input order, ``partial=True``, the rows asked for and the property sets left (``remaining``)."""
    done = [i for i, r in enumerate(rows) if r is not None]
    if not done:
        return None
    frame = prepared.sets.frame
    left = [i for i, r in enumerate(rows) if r is None]
    part = dataclasses.replace(prepared, sets=dataclasses.replace(prepared.sets, frame=frame.iloc[done]))
    answered = [r for r in rows if r is not None]
    return _result(
        part,
        None if local is None else local.iloc[done],
        _remote_result(part, answered),
        started,
        partial={"partial": True, "total": len(frame), "remaining": frame.iloc[left]},
    )


# -- the entry points -----------------------------------------------------------------------------------


@dataclass
class _Outcome:
    """What the sync caller reads after Ctrl-C: the result the run handed over (partial when cancelled)."""

    started: threading.Event = dataclasses.field(default_factory=threading.Event)
    settled: threading.Event = dataclasses.field(default_factory=threading.Event)
    result: SimulationResult | None = None


SETTLE_SECONDS = 10.0
"""After Ctrl-C, how long the sync caller waits for the cancelled run to hand over the rows done."""


async def _evaluate(
    options: SimulationOptions,
    sets: PropertySets,
    given: Definitions | None,
    core: Core,
    started: float,
    outcome: _Outcome | None = None,
) -> SimulationResult:
    """Steps 3-6 with a client: definitions, prepare, the two evaluations, the result.

    Cancelled during the remote evaluation (Ctrl-C, ``task.cancel()``) it returns the partial result of the
    rows answered so far (and leaves it on ``outcome``); with none answered the cancellation goes on.
    """
    if outcome is not None:
        outcome.started.set()
    try:
        prepared = _prepare(options, sets, await _definitions(options, given, core))
        local = _local(prepared) if options.local else None
        remote = None
        if options.remote:
            rows: list[RemoteRow | None] = [None] * len(sets)
            try:
                remote = await _remote(prepared, core, rows)
            except asyncio.CancelledError:
                partial = _partial(prepared, local, rows, started)
                task = asyncio.current_task()
                # Answer one cancellation of this task with the rows done; a second one (or a cancellation
                # that is not this task's) goes on.
                if partial is None or task is None or task.cancelling() == 0 or task.uncancel() > 0:
                    raise
                if outcome is not None:
                    outcome.result = partial
                return partial
        result = _result(prepared, local, remote, started)
        if outcome is not None:
            outcome.result = result
        return result
    finally:
        if outcome is not None:
            outcome.settled.set()


def _run_sync(
    client: ApiClient,
    options: SimulationOptions,
    sets: PropertySets,
    given: Definitions | None,
    started: float,
) -> SimulationResult:
    """Run `_evaluate` on the sync client's loop; after Ctrl-C return the rows done as a partial result
    (`client.run_interruptible` waits for the cancelled run to hand them over)."""
    outcome = _Outcome()
    return run_interruptible(
        client,
        _evaluate(options, sets, given, client.core, started, outcome),
        outcome,
        settle_seconds=SETTLE_SECONDS,
        on_interrupt=lambda exc: _interrupted(outcome, exc),
    )


def _interrupted(outcome: _Outcome, exc: KeyboardInterrupt) -> SimulationResult:
    """What a sync `simulate` answers after Ctrl-C: the partial result handed over (requests in flight are
    cancelled; the client stays usable), else the interrupt goes on."""
    partial = outcome.result
    if partial is None:
        raise exc
    if not partial.partial:  # the run had finished when Ctrl-C came
        return partial
    print(
        f"simulate interrupted: returning the {partial.rows_done:,} of {partial.rows_total:,} rows done "
        "(result.partial is True; result.remaining holds the rest).",
        file=sys.stdout,  # a status line, not an error: stderr shows red in JupyterLab (issue 29 #7)
        flush=True,
    )
    return partial


def _begin(
    property_sets: Any, definitions: Any, output: Output | None, *, core: Core | None, **option_values: Any
) -> tuple[SimulationOptions, Output | None, Family, PropertySets, Any]:
    """The checks both entry points make before any request: the frozen options, the output family asked
    for, the property sets as pandas (Polars / Arrow / DuckDB / parquet read over Arrow buffers) with the
    family they came in, and the given definitions."""
    options = check_options(**option_values, core=core, has_definitions=definitions is not None)
    chosen = output_choice(output)
    raw, family = read_table(property_sets)
    return options, chosen, family, normalise_property_sets(raw), _given(definitions)


def simulate(
    property_sets: Any,
    flags: Sequence[str] | str | None = None,
    engine: Engine = "remote",
    *,
    client: ApiClient | None = None,
    definitions: Any = None,
    mode: Mode = "server",
    concurrency: int | None = None,
    progress: bool | None = None,
    payloads: bool = True,
    reasons: bool = False,
    evaluator: FrameEvaluator | None = None,
    group_type_mapping: dict[str, str] | None = None,
    estimate: bool = True,
    warn_minutes: float | None = WARN_MINUTES,
    output: Output | None = None,
    missing_columns: MissingColumns = "unknown",
    out: str | Path | None = None,
    memory_limit: str | None = None,
    runtime: Runtime = "server",
    as_of: dt.datetime | str | None = None,
) -> SimulationResult:
    """Evaluate flags for every property set: ``engine="remote"`` (one decide per row, concurrent),
    ``"local"`` (the flag engine over definitions), ``"both"`` (and compare them) or ``"sql"`` (the flags
    compiled to SQL and run by the embedded DuckDB, out of core).

    Input is checked before any request is sent; ``concurrency`` defaults to adaptive: the number of
    ``/flags`` requests in flight follows the measured throughput, latency and 429s (up to 256); an integer
    fixes it.
    With an `AsyncClient` use ``await asimulate(..., client=aclient)`` or ``await aclient.simulate(...)``.

    Long runs: past 100,000 rows the local engine shows a progress bar of rows (``progress=False`` or
    ``TQDM_DISABLE=1`` hide it); a remote run over 2,000 rows prints its expected duration, measured on its
    first rows, and warns (`LongRunWarning`) when that is over ``warn_minutes`` (``estimate=False``: neither).
    Ctrl-C during a remote or both run returns the rows answered so far: ``result.partial`` is True,
    ``result.rows_done`` of ``result.rows_total``, and ``result.remaining`` holds the property sets left.

    ``property_sets`` may be pandas, Polars (eager or lazy), a PyArrow table or dataset, a DuckDB relation or
    a parquet path; ``result.data`` is the result in the input's family (Polars in, Polars out; Arrow in,
    Arrow out; DuckDB and parquet give pandas) or in ``output=`` ("pandas", "polars", "arrow").
    ``result.frame`` is always pandas.

    A property a flag reads that the property sets have no column for is unknown (``missing_columns=
    "unknown"``, the default: the service would read the person's stored value): the local engine answers
    NA (reason ``missing_property``) where the answer depends on it, and warns once
    (`MissingPropertyWarning`) with the flags, the properties and the row counts; ``missing_columns=
    "not_set"`` reads a missing column as "not set".

    Definitions that lack the cohorts or group type names their flags use (a flags DataFrame from
    ``client.feature_flags.frame()`` carries neither) are filled from the client's project whenever
    ``client`` is given, with every engine (the given definitions win). Without a client those flags answer
    NA (reason ``inconclusive``), and one `IncompleteDefinitionsWarning` names them and the fix.

    ``engine="sql"`` reads the property sets where they lie (a parquet file or folder, a DuckDB relation, or
    a table in memory) with DuckDB's memory bounded by ``memory_limit`` (default "1GB"; it spills to disk
    beyond it) and writes the answers to parquet (``out=``, else a temporary file). The result has the
    local engine's frame and answers (collected only when ``.frame`` is read); ``summary()``,
    ``crosstab()`` and ``len()`` are computed in SQL. Flags SQL cannot answer exactly (regex, semver,
    cohorts, ...) are answered by the local engine: ``result.local_flags`` names them and why.

    Args:
        property_sets: One row per person: ``distinct_id`` plus one column per property (``group:<type>`` for
            group keys), in any family listed above.
        flags: Flag keys to evaluate (one key, or a list). None: every flag of the definitions (remote: every
            flag the service answers).
        engine: ``"remote"`` asks PostHog (one ``/flags`` request per row), ``"local"`` runs the flag engine
            on definitions, ``"both"`` does both and compares them, ``"sql"`` runs the flags as SQL on the
            embedded DuckDB.
        client: The client for the remote engine and for fetching definitions (or the cohorts and group
            type names given ones lack). None: only the local engine with ``definitions=``.
        definitions: Flag definitions for the local engine, in any shape `flags.read_definitions` reads. None:
            fetched with ``client``. The definitions response (``client.feature_flags.definitions()``)
            carries the cohorts; a flags DataFrame does not.
        mode: ``"server"`` decides as the flags service does; ``"sdk"`` as the SDKs' local evaluation (NA
            where it would fall back to the server).
        concurrency: ``/flags`` requests in flight. None: adaptive, up to 256.
        progress: Show a progress bar. None: for long runs unless ``TQDM_DISABLE`` is set.
        payloads: Add ``<key>:payload`` columns.
        reasons: Add ``<key>:reason`` and ``<key>:condition_index`` columns.
        evaluator: A `FrameEvaluator` built on these property sets, to reuse its cached hashes. None: built
            here.
        group_type_mapping: ``{index: group type}`` for the local engine. None: the definitions'.
        estimate: Print the expected duration of a remote run over 2,000 rows.
        warn_minutes: Warn (`LongRunWarning`) when that estimate exceeds this many minutes. None: no warning.
        output: The family of ``result.data``: ``"pandas"``, ``"polars"`` or ``"arrow"``. None: the input's.
        missing_columns: A property the sets have no column for: ``"unknown"`` (NA with a warning) or
            ``"not_set"`` (absent, as for a person who lacks it).
        out: ``engine="sql"``: the parquet file for the answers. None: a temporary file.
        memory_limit: ``engine="sql"``: DuckDB's memory limit (it spills to disk beyond it). None: "1GB".
        runtime: The runtime remote requests ask as: ``"server"`` (what server SDKs get) or ``"client"``
            (what browsers get); flags scoped to the other runtime are NA with a `FilteredFlagsWarning`.
        as_of: A past moment (timezone-aware datetime or ISO text): evaluate the project's definitions as
            they were then (rebuilt from each flag's version history; see `definitions_as_of`), with
            ``engine="local"`` or ``"sql"`` and ``client=``. None: today's definitions.

    Returns:
        A `SimulationResult`: ``frame`` (inputs and outputs), ``summary()``, ``crosstab()``, ``agreement``
            (both), ``partial`` after Ctrl-C.

    Raises:
        SimulationInputError: The property sets or the flag keys are not usable (before any request).

    Warns:
        IncompleteDefinitionsWarning: Flags use cohorts or group type names the definitions lack and no
            client filled them: their answers are NA (once per run).
        MissingPropertyWarning: Flags read properties the property sets have no column for.
    """
    check_sql_options(engine, out, memory_limit)
    if as_of is not None:
        definitions = _as_of_definitions(as_of, engine, client, definitions)
    if engine == "sql":  # DuckDB over the source where it lies (simulation/_sql_engine.py)
        return simulate_in_sql(
            property_sets,
            flags,
            client=client,
            definitions=definitions,
            mode=mode,
            progress=progress,
            payloads=payloads,
            reasons=reasons,
            group_type_mapping=group_type_mapping,
            output=output,
            missing_columns=missing_columns,
            out=out,
            memory_limit=memory_limit,
            evaluator=evaluator,
        )
    if isinstance(client, AsyncApiClient):
        raise TypeError("client= is an AsyncClient: use `await asimulate(..., client=client)` in async code.")
    if client is not None and not isinstance(client, ApiClient):
        raise TypeError(f"client= must be an analytics_nb Client, got {type(client).__name__}.")
    started = time.perf_counter()
    core = None if client is None else client.core
    options, chosen, family, sets, given = _begin(
        property_sets,
        definitions,
        output,
        engine=engine,
        mode=mode,
        flags=flags,
        concurrency=concurrency,
        progress=progress,
        payloads=payloads,
        reasons=reasons,
        group_type_mapping=group_type_mapping,
        evaluator=evaluator,
        core=core,
        estimate=estimate,
        warn_minutes=warn_minutes,
        missing_columns=missing_columns,
        runtime=runtime,
    )
    if client is None:  # local only: nothing to await, so no event loop at all
        prepared = _prepare(options, sets, given)
        result = _result(prepared, _local(prepared), None, started)
    else:
        # the I/O steps on the client's own loop thread (never asyncio.run in a Jupyter cell)
        result = _run_sync(client, options, sets, given, started)
    result.output, result.client = chosen or default_output(family), client  # client: for result.verify
    return result


def _check_as_of(engine: Any, client: Any, definitions: Any) -> None:
    """``as_of=`` reads the project's history: it needs a client and the local engine, and no definitions."""
    if engine not in ("local", "sql") or definitions is not None or client is None:
        raise SimulationInputError(
            "as_of= evaluates the project's definitions as they were then: it needs client=, "
            "engine='local' or 'sql', and no definitions= (the service's /flags answers today only)."
        )


def _as_of_definitions(as_of: Any, engine: Any, client: Any, definitions: Any) -> Any:
    """The definitions in force at ``as_of``, read with a sync client (`definitions_as_of`)."""
    from analytics_nb.simulation._history import definitions_as_of

    _check_as_of(engine, client, definitions)
    return definitions_as_of(client, as_of)


async def _asimulate(**kwargs: Any) -> SimulationResult:
    """`simulate` for async code and `AsyncClient`: the decide requests run on the caller's event loop.

    Cancelled during a remote or both run (``task.cancel()``, Ctrl-C in Jupyter), it returns the rows
    answered so far as a partial result (``result.partial``); with none it re-raises.
    """
    # asimulate (simulation/_simulate_twins.py, written from simulate's signature by scripts/generate_sync.py)
    # passes every argument by name, defaults filled in
    arguments = dict(kwargs)
    as_of = arguments.pop("as_of")
    if as_of is not None and not isinstance(arguments["client"], ApiClient):
        from analytics_nb.simulation._history import adefinitions_as_of

        _check_as_of(arguments["engine"], arguments["client"], arguments["definitions"])
        arguments["definitions"] = await adefinitions_as_of(arguments["client"], as_of)
    if arguments["engine"] == "sql":  # DuckDB works in a thread; an async client only fetches definitions
        return await asql(arguments)
    check_sql_options(arguments["engine"], arguments.pop("out"), arguments.pop("memory_limit"))
    client = arguments.pop("client")
    property_sets, definitions, output = (
        arguments.pop(k) for k in ("property_sets", "definitions", "output")
    )
    if isinstance(client, ApiClient):
        # A sync Client awaited from async code: its calls block, so run them off this loop.
        return await asyncio.to_thread(functools.partial(simulate, **kwargs))
    if client is not None and not isinstance(client, AsyncApiClient):
        raise TypeError(
            f"client= must be an analytics_nb Client or AsyncClient, got {type(client).__name__}."
        )
    started = time.perf_counter()
    core = None if client is None else client.core
    options, chosen, family, sets, given = _begin(property_sets, definitions, output, core=core, **arguments)
    if core is None:
        prepared = _prepare(options, sets, given)
        result = _result(prepared, _local(prepared), None, started)
    else:
        result = await _evaluate(options, sets, given, core, started)
    result.output, result.client = chosen or default_output(family), client  # client: for result.verify
    return result

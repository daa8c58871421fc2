"""`simulate()` / `asimulate()`: run property sets through remote decide, the local flag engine, or both.

A straight pipeline, each step a function of the previous steps' values (nothing is mutated on the way):

1. ``check_options`` -> a frozen `SimulationOptions` (every option checked here, once);
2. ``normalise_property_sets`` -> the property sets;
3. ``_definitions`` -> the flag definitions (given, fetched with the client, or completed from the service);
4. ``_prepare`` -> a frozen `_Prepared`: flag keys checked against the definitions, group type mapping
   merged, the local evaluator built (which checks the group mapping) - before any request is sent;
5. ``_local`` and ``_remote``: the two evaluations, peers over the same prepared input;
6. ``_result``: compare them (engine "both") and build the `SimulationResult`.

``simulate`` without a client runs steps 1-6 with no event loop (there is nothing to await); with a sync
``Client`` it runs the async pipeline on the client's loop; ``asimulate`` is the pipeline for async code.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from analytics_nb.client import AnyApiClient, ApiClient, AsyncApiClient, Core, FeatureFlags
from analytics_nb.client._progress import progress_bar
from analytics_nb.errors import PostHogError
from analytics_nb.simulation._compare import compare
from analytics_nb.simulation._definitions import Definitions, flag_references, live_flags, load_definitions
from analytics_nb.simulation._errors import SimulationInputError
from analytics_nb.simulation._inputs import PropertySets, check_flag_keys, normalise_property_sets
from analytics_nb.simulation._local import make_evaluator, run_local
from analytics_nb.simulation._output import flag_columns
from analytics_nb.simulation._remote import (
    DEFAULT_CONCURRENCY,
    RemoteRow,
    decide_rows,
    default_concurrency,
    remote_frame,
)
from analytics_nb.simulation._result import SimulationResult

if TYPE_CHECKING:
    from analytics_nb.flags import FrameEvaluator

__all__ = ["Engine", "SimulationOptions", "asimulate", "check_options", "simulate"]

Engine = Literal["remote", "local", "both"]
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
) -> SimulationOptions:
    """Every option of `simulate` checked in one place; raises `SimulationInputError` naming the fix."""
    if engine not in ("remote", "local", "both"):
        raise SimulationInputError(f"engine={engine!r}: use 'remote', 'local' or 'both'.")
    if mode not in ("server", "sdk"):
        raise SimulationInputError(
            f"mode={mode!r}: use 'server' (what /decide does) or 'sdk' (the official SDK's local evaluation)."
        )
    if concurrency is None:
        concurrency = default_concurrency(core) if core is not None else DEFAULT_CONCURRENCY
    elif isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise SimulationInputError(f"concurrency={concurrency!r} must be a positive integer (default 10).")
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
    )


@dataclass(frozen=True)
class _Prepared:
    """Everything both evaluations read, settled before any request is sent."""

    options: SimulationOptions
    sets: PropertySets
    definitions: Definitions | None
    keys: list[str] | None  # the flags asked for (checked against the definitions when there are some)
    evaluator: FrameEvaluator | None  # the local engine over the property sets (engine local/both)


# -- 3. definitions --------------------------------------------------------------------------------------


def _given(definitions: Any) -> Definitions | None:
    return None if definitions is None else live_flags(load_definitions(definitions))


async def _definitions(
    options: SimulationOptions, given: Definitions | None, core: Core
) -> Definitions | None:
    """The definitions to use: the given ones (completed from the service when they lack cohorts or group
    type names), else the service's - fetched for the local engine, and for remote-only runs when a
    personal key is set (to check flag keys and type the columns)."""
    if given is not None:
        if _incomplete(options, given):
            return _completed(given, await _fetch(core, required=False))
        return given
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


def _incomplete(options: SimulationOptions, defs: Definitions) -> bool:
    """Passed-in definitions (e.g. a flags DataFrame) may lack the cohorts or group type mapping they use."""
    if not options.local:
        return False
    for key in defs.keys:
        if any(c not in defs.cohorts for c in flag_references(defs, key)["cohort"]):
            return True
    has_group_flags = any(
        (f.get("filters") or {}).get("aggregation_group_type_index") is not None for f in defs.flags
    )
    return has_group_flags and not defs.group_type_mapping and not options.group_type_mapping


def _completed(defs: Definitions, fetched: Any) -> Definitions:
    """``defs`` with missing cohorts and group type names filled from the service's local-evaluation
    definitions (the given ones win)."""
    if fetched is None:
        return defs
    extra = load_definitions(fetched)
    return dataclasses.replace(
        defs,
        cohorts={**extra.cohorts, **defs.cohorts},
        group_type_mapping={**extra.group_type_mapping, **defs.group_type_mapping},
    )


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
        evaluator = options.evaluator or make_evaluator(sets, defs, mode=options.mode)
    return _Prepared(options, sets, defs, keys, evaluator)


# -- 5. evaluations -----------------------------------------------------------------------------------------


def _local(prepared: _Prepared) -> pd.DataFrame:
    options = prepared.options
    return run_local(
        prepared.evaluator, prepared.sets, prepared.keys, payloads=options.payloads, reasons=options.reasons
    )


async def _remote(prepared: _Prepared, core: Core) -> pd.DataFrame:
    options, defs = prepared.options, prepared.definitions
    rows = await _remote_rows(prepared, core)
    frame = remote_frame(
        prepared.sets,
        rows,
        flag_keys=prepared.keys,
        known_keys=defs.keys if defs is not None else None,
        multivariate=set(defs.variants()) if defs is not None else set(),
        payloads=options.payloads,
        reasons=options.reasons,
    )
    return _inactive_off(frame, rows, defs) if defs is not None else frame


async def _remote_rows(prepared: _Prepared, core: Core) -> list[RemoteRow]:
    options = prepared.options
    requests = prepared.sets.requests()
    if not requests:
        return []
    bar = progress_bar(options.progress, total=len(requests), desc="decide", unit="row")
    try:
        first: list[RemoteRow] = []
        if prepared.keys is not None and prepared.definitions is None:
            first = await decide_rows(
                core, requests[:1], concurrency=1, detailed=options.reasons, progress=bar
            )
            _check_remote_keys(prepared.keys, first[0])
            requests = requests[1:]
        rest = await decide_rows(
            core,
            requests,
            concurrency=options.concurrency,
            detailed=options.reasons,
            progress=bar,
            flag_keys=prepared.keys,
        )
        return first + rest
    finally:
        bar.close()


def _check_remote_keys(keys: list[str], first: RemoteRow) -> None:
    """Without definitions, unknown keys are caught on the first row's answer, before the other rows."""
    if first.error is None:
        check_flag_keys(keys, list(first.values))


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
    prepared: _Prepared, local: pd.DataFrame | None, remote: pd.DataFrame | None, started: float
) -> SimulationResult:
    options, sets, defs = prepared.options, prepared.sets, prepared.definitions
    variants = defs.variants() if defs is not None else {}
    inputs = sets.frame
    elapsed = time.perf_counter() - started
    if remote is None:
        assert local is not None
        return SimulationResult(local, "local", inputs, options.mode, variants, local=local, elapsed=elapsed)
    if local is None:
        return SimulationResult(
            remote, "remote", inputs, options.mode, variants, remote=remote, elapsed=elapsed
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
    )


# -- the entry points -----------------------------------------------------------------------------------


async def _pipeline(
    property_sets: Any, definitions: Any, core: Core | None, **options: Any
) -> SimulationResult:
    started = time.perf_counter()
    checked = check_options(core=core, has_definitions=definitions is not None, **options)
    sets = normalise_property_sets(property_sets)
    defs = _given(definitions)
    if core is not None:
        defs = await _definitions(checked, defs, core)
    prepared = _prepare(checked, sets, defs)
    local = _local(prepared) if checked.local else None
    remote = await _remote(prepared, core) if checked.remote and core is not None else None
    return _result(prepared, local, remote, started)


def _local_only(property_sets: Any, definitions: Any, **options: Any) -> SimulationResult:
    """The pipeline without a client: local evaluation over the given definitions, nothing to await."""
    started = time.perf_counter()
    checked = check_options(core=None, has_definitions=definitions is not None, **options)
    prepared = _prepare(checked, normalise_property_sets(property_sets), _given(definitions))
    return _result(prepared, _local(prepared), None, started)


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
) -> SimulationResult:
    """Evaluate flags for every property set: ``engine="remote"`` (one decide per row, concurrent),
    ``"local"`` (the flag engine over definitions) or ``"both"`` (and compare them).

    Input is checked before any request is sent; ``concurrency`` defaults to 10 decide requests in flight
    (4 against a loopback host such as the sandbox, where the CPU, not the round trip, is the limit).
    With an `AsyncClient` use ``await asimulate(..., client=aclient)`` or ``await aclient.simulate(...)``.
    """
    options: dict[str, Any] = {
        "flags": flags,
        "engine": engine,
        "mode": mode,
        "concurrency": concurrency,
        "progress": progress,
        "payloads": payloads,
        "reasons": reasons,
        "evaluator": evaluator,
        "group_type_mapping": group_type_mapping,
    }
    if client is None:
        return _local_only(property_sets, definitions, **options)
    if isinstance(client, ApiClient):
        # the same flow on the client's own loop thread (never asyncio.run in a Jupyter cell)
        return client.run(_pipeline(property_sets, definitions, client.core, **options))
    if isinstance(client, AsyncApiClient):
        raise TypeError("client= is an AsyncClient: use `await asimulate(..., client=client)` in async code.")
    raise TypeError(f"client= must be an analytics_nb Client, got {type(client).__name__}.")


async def asimulate(
    property_sets: Any,
    flags: Sequence[str] | str | None = None,
    engine: Engine = "remote",
    *,
    client: AnyApiClient | None = None,
    definitions: Any = None,
    mode: Mode = "server",
    concurrency: int | None = None,
    progress: bool | None = None,
    payloads: bool = True,
    reasons: bool = False,
    evaluator: FrameEvaluator | None = None,
    group_type_mapping: dict[str, str] | None = None,
) -> SimulationResult:
    """`simulate` for async code and `AsyncClient`: the decide requests run on the caller's event loop."""
    options: dict[str, Any] = {
        "flags": flags,
        "engine": engine,
        "mode": mode,
        "concurrency": concurrency,
        "progress": progress,
        "payloads": payloads,
        "reasons": reasons,
        "evaluator": evaluator,
        "group_type_mapping": group_type_mapping,
    }
    if isinstance(client, ApiClient):
        # A sync Client awaited from async code: its calls block, so run them off this loop.
        return await asyncio.to_thread(
            simulate, property_sets, client=client, definitions=definitions, **options
        )
    if client is not None and not isinstance(client, AsyncApiClient):
        raise TypeError(
            f"client= must be an analytics_nb Client or AsyncClient, got {type(client).__name__}."
        )
    return await _pipeline(property_sets, definitions, None if client is None else client.core, **options)

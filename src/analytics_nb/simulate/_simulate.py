"""`simulate()` / `asimulate()`: run property sets through remote decide, the local flag engine, or both."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd

from analytics_nb.simulate._compare import compare
from analytics_nb.simulate._definitions import Definitions, flag_references, live_flags, load_definitions
from analytics_nb.simulate._errors import SimulationInputError
from analytics_nb.simulate._inputs import PropertySets, check_flag_keys, normalise_property_sets
from analytics_nb.simulate._local import check_group_mapping, make_evaluator, run_local
from analytics_nb.simulate._output import flag_columns
from analytics_nb.simulate._remote import (
    DEFAULT_CONCURRENCY,
    RemoteRow,
    decide_rows,
    default_concurrency,
    remote_frame,
)
from analytics_nb.simulate._result import SimulationResult

__all__ = ["asimulate", "simulate"]

Engine = Literal["remote", "local", "both"]


@dataclass
class _Plan:
    sets: PropertySets
    engine: str
    mode: str
    flags: list[str] | None
    concurrency: int
    progress: bool | None
    payloads: bool
    reasons: bool
    defs: Definitions | None
    evaluator: Any = None
    group_type_mapping: dict[str, str] | None = None


def _check_options(engine: Any, mode: Any, concurrency: Any, client: Any = None) -> int:
    if engine not in ("remote", "local", "both"):
        raise SimulationInputError(f"engine={engine!r}: use 'remote', 'local' or 'both'.")
    if mode not in ("server", "sdk"):
        raise SimulationInputError(
            f"mode={mode!r}: use 'server' (what /decide does) or 'sdk' (the official SDK's local evaluation)."
        )
    if concurrency is None:
        return default_concurrency(client) if client is not None else DEFAULT_CONCURRENCY
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise SimulationInputError(f"concurrency={concurrency!r} must be a positive integer (default 10).")
    return concurrency


def _prepare(
    property_sets: Any,
    flags: Any,
    engine: Any,
    client: Any,
    definitions: Any,
    mode: Any,
    concurrency: Any,
    progress: Any,
    payloads: bool,
    reasons: bool,
    evaluator: Any,
) -> _Plan:
    n = _check_options(engine, mode, concurrency, client)
    if engine in ("remote", "both") and client is None:
        raise SimulationInputError(
            f"engine={engine!r} sends decide requests and needs client= (a Client with project_api_key); "
            "or use engine='local' with definitions=."
        )
    if engine in ("local", "both") and client is None and definitions is None:
        raise SimulationInputError(
            "engine='local' needs flag definitions: pass definitions= (JSON, dicts, models, "
            "LocalEvaluationResponse or a flags DataFrame) or client= to fetch them."
        )
    if isinstance(flags, str):
        flags = [flags]
    sets = normalise_property_sets(property_sets)
    defs = None if definitions is None else live_flags(load_definitions(definitions))
    if progress is None and client is not None:
        progress = getattr(getattr(getattr(client, "_core", None), "config", None), "progress", None)
    return _Plan(
        sets,
        engine,
        mode,
        None if flags is None else list(flags),
        n,
        progress,
        payloads,
        reasons,
        defs,
        evaluator,
    )


def _mapping(mapping: Any) -> dict[str, str] | None:
    if mapping is None:
        return None
    if not isinstance(mapping, dict):
        raise SimulationInputError(
            "group_type_mapping must be a dict of group type index -> name, e.g. {'0': 'company'}."
        )
    return {str(k): str(v) for k, v in mapping.items()}


def _wants_definitions(plan: _Plan, client: Any) -> bool:
    """Remote-only runs fetch definitions (to check flag keys and type columns) when a personal key is set."""
    if plan.defs is not None:
        return False
    if plan.engine != "remote":
        return True
    config = getattr(getattr(client, "_core", None), "config", None)
    return bool(getattr(config, "personal_api_key", None))


def _after_definitions(plan: _Plan, fetched: Any, *, required: bool) -> None:
    if fetched is not None:
        plan.defs = live_flags(load_definitions(fetched))
    elif required:
        raise SimulationInputError("could not read flag definitions; pass definitions=.")
    if plan.defs is not None:
        plan.flags = check_flag_keys(plan.flags, plan.defs.keys)
        if plan.group_type_mapping:
            plan.defs.group_type_mapping = {**plan.defs.group_type_mapping, **plan.group_type_mapping}
        if plan.engine != "remote" and plan.evaluator is None:
            check_group_mapping(plan.sets, plan.defs)  # before any decide is sent


def _incomplete(plan: _Plan) -> bool:
    """Passed-in definitions (e.g. a flags DataFrame) may lack the cohorts or group type mapping they use."""
    defs = plan.defs
    if defs is None or plan.engine == "remote":
        return False
    for key in defs.keys:
        if any(c not in defs.cohorts for c in flag_references(defs, key)["cohort"]):
            return True
    has_group_flags = any(
        (f.get("filters") or {}).get("aggregation_group_type_index") is not None for f in defs.flags
    )
    return has_group_flags and not defs.group_type_mapping and not plan.group_type_mapping


def _complete(plan: _Plan, fetched: Any) -> None:
    """Fill missing cohorts and group type names from the service's local-evaluation definitions."""
    if fetched is None or plan.defs is None:
        return
    extra = load_definitions(fetched)
    plan.defs.cohorts = {**extra.cohorts, **plan.defs.cohorts}
    plan.defs.group_type_mapping = {**extra.group_type_mapping, **plan.defs.group_type_mapping}


def _check_remote_keys(plan: _Plan, first: RemoteRow) -> None:
    """Without definitions, unknown keys are caught on the first row's answer, before the other rows."""
    if plan.flags is None or plan.defs is not None or first.error is not None:
        return
    check_flag_keys(plan.flags, list(first.values))


def _finish(plan: _Plan, rows: list[RemoteRow] | None, started: float) -> SimulationResult:
    sets, defs = plan.sets, plan.defs
    variants = defs.variants() if defs is not None else {}
    local = remote = None
    if plan.engine in ("local", "both"):
        assert defs is not None
        evaluator = plan.evaluator or make_evaluator(sets, defs, mode=plan.mode)
        local = run_local(evaluator, sets, plan.flags, payloads=plan.payloads, reasons=plan.reasons)
    if rows is not None:
        known = defs.keys if defs is not None else None
        mv = set(variants)
        remote = remote_frame(
            sets,
            rows,
            flag_keys=plan.flags,
            known_keys=known,
            multivariate=mv,
            payloads=plan.payloads,
            reasons=plan.reasons,
        )
        if defs is not None:
            remote = _inactive_off(remote, rows, defs)
    inputs = sets.frame
    elapsed = time.perf_counter() - started
    if plan.engine == "local":
        assert local is not None
        return SimulationResult(local, "local", inputs, plan.mode, variants, local=local, elapsed=elapsed)
    assert remote is not None
    if plan.engine == "remote":
        return SimulationResult(remote, "remote", inputs, plan.mode, variants, remote=remote, elapsed=elapsed)
    assert local is not None and defs is not None
    remote_keys = set(flag_columns(remote))
    keys = [k for k in flag_columns(local) if k in remote_keys]
    agreement, differences = compare(local, remote, keys, sets.requests(), defs, mode=plan.mode)
    return SimulationResult(
        remote,
        "both",
        inputs,
        plan.mode,
        variants,
        local=local,
        remote=remote,
        agreement=agreement,
        differences=differences,
        elapsed=elapsed,
    )


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


def _progress_bar(plan: _Plan, total: int) -> Any:
    from analytics_nb.client._progress import progress_bar

    return progress_bar(plan.progress, total=total, desc="decide", unit="row")


def simulate(
    property_sets: Any,
    flags: Sequence[str] | str | None = None,
    engine: Engine = "remote",
    *,
    client: Any = None,
    definitions: Any = None,
    mode: Literal["server", "sdk"] = "server",
    concurrency: int | None = None,
    progress: bool | None = None,
    payloads: bool = True,
    reasons: bool = False,
    evaluator: Any = None,
    group_type_mapping: dict[str, str] | None = None,
) -> SimulationResult:
    """Evaluate flags for every property set: ``engine="remote"`` (one decide per row, concurrent),
    ``"local"`` (the flag engine over definitions) or ``"both"`` (and compare them).

    Input is checked before any request is sent; ``concurrency`` defaults to 10 decide requests in flight
    (4 against a loopback host such as the sandbox, where the CPU, not the round trip, is the limit).
    With an `AsyncClient` it returns a coroutine: ``await simulate(..., client=aclient)`` (or `asimulate`).
    """
    options: dict[str, Any] = {
        "definitions": definitions,
        "mode": mode,
        "concurrency": concurrency,
        "progress": progress,
        "payloads": payloads,
        "reasons": reasons,
        "evaluator": evaluator,
        "group_type_mapping": group_type_mapping,
    }
    if client is None:  # local only: the flow does no I/O, so it completes without an event loop
        return _without_io(asimulate(property_sets, flags, engine, **options))
    if not hasattr(client, "_run"):
        # An AsyncClient: hand back the coroutine so that `await client.simulate(...)` works.
        return asimulate(property_sets, flags, engine, client=client, **options)  # type: ignore[return-value]
    # A sync Client: the same flow on the client's own loop thread (never asyncio.run in a Jupyter cell).
    return client._run(asimulate(property_sets, flags, engine, client=client._async, **options))


def _without_io(coro: Any) -> Any:
    """Run a coroutine that never suspends (the local-only flow) to its result, with no event loop."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("simulate without client= unexpectedly waited for I/O")


async def asimulate(
    property_sets: Any,
    flags: Sequence[str] | str | None = None,
    engine: Engine = "remote",
    *,
    client: Any = None,
    definitions: Any = None,
    mode: Literal["server", "sdk"] = "server",
    concurrency: int | None = None,
    progress: bool | None = None,
    payloads: bool = True,
    reasons: bool = False,
    evaluator: Any = None,
    group_type_mapping: dict[str, str] | None = None,
) -> SimulationResult:
    """`simulate` for async code and `AsyncClient`: the decide requests run on the caller's event loop."""
    if hasattr(client, "_run"):
        # A sync Client awaited from async code: its calls block, so run them off this loop.
        return await asyncio.to_thread(
            simulate,
            property_sets,
            flags,
            engine,
            client=client,
            definitions=definitions,
            mode=mode,
            concurrency=concurrency,
            progress=progress,
            payloads=payloads,
            reasons=reasons,
            evaluator=evaluator,
            group_type_mapping=group_type_mapping,
        )
    started = time.perf_counter()
    plan = _prepare(
        property_sets,
        flags,
        engine,
        client,
        definitions,
        mode,
        concurrency,
        progress,
        payloads,
        reasons,
        evaluator,
    )
    plan.group_type_mapping = _mapping(group_type_mapping)
    if client is not None and _wants_definitions(plan, client):
        fetched = await _fetch_definitions(client, required=plan.engine != "remote")
        _after_definitions(plan, fetched, required=plan.engine != "remote")
    elif plan.defs is not None:
        if client is not None and _incomplete(plan):
            _complete(plan, await _fetch_definitions(client, required=False))
        _after_definitions(plan, None, required=False)
    rows: list[RemoteRow] | None = None
    if plan.engine in ("remote", "both"):
        rows = await _remote_rows(plan, client._core)
    return _finish(plan, rows, started)


# -- I/O -----------------------------------------------------------------------------------------------------


async def _fetch_definitions(client: Any, *, required: bool) -> Any:
    from analytics_nb.errors import PostHogError

    try:
        return await client.feature_flags.local_evaluation()
    except PostHogError:
        if required:
            raise
        return None


async def _remote_rows(plan: _Plan, core: Any) -> list[RemoteRow]:
    requests = plan.sets.requests()
    if not requests:
        return []
    bar = _progress_bar(plan, len(requests))
    try:
        detailed = plan.reasons
        first: list[RemoteRow] = []
        if plan.flags is not None and plan.defs is None:
            first = await decide_rows(core, requests[:1], concurrency=1, detailed=detailed, progress=bar)
            _check_remote_keys(plan, first[0])
            requests = requests[1:]
        rest = await decide_rows(
            core,
            requests,
            concurrency=plan.concurrency,
            detailed=detailed,
            progress=bar,
            flag_keys=plan.flags,
        )
        return first + rest
    finally:
        bar.close()

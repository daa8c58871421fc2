"""`audience()` / `aaudience()`: who exactly gets a flag, from the project's own persons.

The project's persons are read with HogQL (`client.persons`: a count, then keyset pages of at most 50,000
distinct ids, sync or async queries) and go through the one simulation door with the local engine
(`simulate(persons, flags, engine="local", client=client)`): HogQL has no SHA-1, so the rollout hash runs
here, over each distinct id, exactly as the flag service's. Before a run of more than one page the plan
(pages, queries, minutes at the query API's limits) is printed.

A flag PostHog answers only to the other runtime (its ``evaluation_runtime`` is "client" while the audience
is asked as ``runtime="server"``, or the reverse) is not answered to that runtime at all
(`rust/feature-flags/src/handler/flags.rs`, `collect_excluded_by_runtime`): its column is NA, with a
`FilteredFlagsWarning`, rather than the engine's answer for a caller that would never get it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from collections.abc import Sequence
from typing import Any, Literal

import pandas as pd

from analytics_nb.client import ApiClient, AsyncApiClient
from analytics_nb.client._resources._query import MAX_ROWS, Run, describe_plan, person_property_keys, plan
from analytics_nb.flags import Definitions
from analytics_nb.simulation._definitions import load_definitions
from analytics_nb.simulation._errors import SimulationInputError
from analytics_nb.simulation._local import MissingColumns
from analytics_nb.simulation._remote import (
    Runtime,
    check_remote_runtime,
    runtime_filtered,
    warn_runtime_filtered,
)
from analytics_nb.simulation._result import SimulationResult
from analytics_nb.simulation._simulate import simulate
from analytics_nb.simulation._simulate_twins import asimulate

__all__ = ["audience"]

_COUNT = "SELECT count() FROM person_distinct_ids"


def _keys(flag: Any) -> list[str]:
    keys = [flag] if isinstance(flag, str) else list(flag) if isinstance(flag, Sequence) else None
    if not keys or not all(isinstance(k, str) and k for k in keys):
        raise SimulationInputError(
            f"audience: flag must be a flag key or a list of keys, e.g. 'new-checkout'; got {flag!r}",
            key="flag",
        )
    return keys


def _columns(loaded: Definitions, keys: list[str], properties: Sequence[str] | None) -> list[str]:
    """The person properties to read: those given, else those the flags (and every cohort) read."""
    if properties is not None:
        if isinstance(properties, str):
            raise SimulationInputError(
                "audience: properties must be a list of keys, e.g. ['email']", key="properties"
            )
        return list(properties)
    known = {str(f.get("key")) for f in loaded.flags}
    unknown = [k for k in keys if k not in known]
    if unknown:
        raise SimulationInputError(
            f"audience: no flag {', '.join(map(repr, unknown))} in the project's definitions; check the key "
            "(client.feature_flags.frame() lists them).",
            key="flag",
        )
    chosen = [f for f in loaded.flags if f.get("key") in keys]
    return person_property_keys({"flags": chosen, "cohorts": loaded.cohorts})


def _count(frame: pd.DataFrame) -> int:
    return int(frame.to_numpy()[0][0]) if len(frame) else 0


def _announce(rows: int, page_size: int) -> None:
    """Print the plan before a run of more than one page (what the run will ask of the query API)."""
    the_plan = plan(rows, page_size)
    if the_plan["pages"] > 1:
        print(f"audience plan: {describe_plan(the_plan)}; then the local flag engine over every row")


def _runtime_na(
    result: SimulationResult, loaded: Definitions, keys: list[str], runtime: str
) -> SimulationResult:
    """The flags PostHog leaves out for ``runtime``: NA columns and one `FilteredFlagsWarning`."""
    filtered = runtime_filtered(loaded.flags, keys, runtime)
    if not filtered:
        return result
    warn_runtime_filtered(loaded.flags, keys, runtime)
    frame = result.frame.copy()
    for key in filtered:
        for column in [c for c in frame.columns if c == key or str(c).startswith(f"{key}:")]:
            frame[column] = pd.Series(pd.NA, index=frame.index, dtype="object")
    return dataclasses.replace(result, frame=frame)  # keeps the client (``verify``), recomputes outputs


def audience(
    flag: str | Sequence[str],
    *,
    client: ApiClient,
    properties: Sequence[str] | None = None,
    distinct_ids: Literal["all", "identified"] = "all",
    runtime: Runtime = "server",
    definitions: Any = None,
    payloads: bool = False,
    reasons: bool = False,
    page_size: int = MAX_ROWS,
    run: Run = "auto",
    missing_columns: MissingColumns = "unknown",
    progress: bool | None = None,
) -> SimulationResult:
    """Who exactly gets ``flag``, from the project's own persons: one row per distinct id with the variant
    (or True/False) the flag service would answer it.

    The persons are read with HogQL (``client.persons``: person id, each distinct id, the person
    properties the flag and its cohorts read) and evaluated by the local flag engine through the one
    simulation door (``simulate(persons, flag, engine="local", client=client)``); HogQL has no SHA-1, so the
    rollout hash runs here, over each distinct id. Before a run of more than one page of 50,000 ids the plan
    is printed: pages, queries and the least minutes the query API's limits allow. With an `AsyncClient`
    use ``await aaudience(...)`` or ``await aclient.audience(...)``.

    A flag whose ``evaluation_runtime`` is the other runtime is not answered by PostHog to ``runtime``
    callers: its column is NA with a `FilteredFlagsWarning` (``runtime="client"`` shows what browsers get).

    Args:
        flag: The flag key (or a list of keys).
        client: The client whose project's persons and definitions are read.
        properties: The person property keys to read. None: those the flags and the cohorts read.
        distinct_ids: ``"all"`` (a row per distinct id: each id hashes into its own bucket) or
            ``"identified"`` (a row per person, its identified id; see ``client.persons``).
        runtime: ``"server"`` (what server SDKs get) or ``"client"`` (what browsers get).
        definitions: Flag definitions to use. None: the project's (``client.feature_flags.definitions()``).
        payloads: Add ``<key>:payload`` columns.
        reasons: Add ``<key>:reason`` and ``<key>:condition_index`` columns.
        page_size: Distinct ids per query (at most 50,000, the query API's cap).
        run: Queries ``"sync"``, ``"async"`` (submitted and polled) or ``"auto"`` (see ``client.query``).
        missing_columns: A property the persons frame has no column for (only with ``properties=``):
            ``"unknown"`` (NA with a warning) or ``"not_set"``.
        progress: Show progress bars. None: for long runs unless ``TQDM_DISABLE`` is set.

    Returns:
        A `SimulationResult` of the local engine: ``frame`` has ``distinct_id``, ``person_id``, the
            properties read and one column per flag; ``summary()`` counts who gets which variant.

    Raises:
        SimulationInputError: An unknown flag key or a bad argument (before the persons are read).
    """
    if isinstance(client, AsyncApiClient):
        raise TypeError("client= is an AsyncClient: use `await aaudience(..., client=client)` in async code.")
    if not isinstance(client, ApiClient):
        raise TypeError(f"client= must be an analytics_nb Client, got {type(client).__name__}.")
    keys, asked = _keys(flag), check_remote_runtime(runtime)
    loaded = load_definitions(definitions if definitions is not None else client.feature_flags.definitions())
    columns = _columns(loaded, keys, properties)
    counted = client.query(_COUNT, run=run)
    _announce(_count(counted), page_size)
    persons = client.persons(columns, distinct_ids=distinct_ids, page_size=page_size, run=run)
    result = simulate(
        persons,
        keys,
        engine="local",
        client=client,
        definitions=loaded,
        payloads=payloads,
        reasons=reasons,
        missing_columns=missing_columns,
        progress=progress,
    )
    return _runtime_na(result, loaded, keys, asked)


async def _aaudience(**kwargs: Any) -> SimulationResult:
    """`audience` for async code and `AsyncClient`: the queries run on the caller's event loop."""
    client = kwargs["client"]
    if isinstance(client, ApiClient):  # a sync Client awaited from async code: run it off this loop
        return await asyncio.to_thread(functools.partial(audience, **kwargs))
    if not isinstance(client, AsyncApiClient):
        raise TypeError(
            f"client= must be an analytics_nb Client or AsyncClient, got {type(client).__name__}."
        )
    keys, runtime = _keys(kwargs["flag"]), check_remote_runtime(kwargs["runtime"])
    given = kwargs["definitions"]
    loaded = load_definitions(given if given is not None else await client.feature_flags.definitions())
    columns = _columns(loaded, keys, kwargs["properties"])
    run, page_size = kwargs["run"], kwargs["page_size"]
    counted = await client.query(_COUNT, run=run)
    _announce(_count(counted), page_size)
    persons = await client.persons(columns, distinct_ids=kwargs["distinct_ids"], page_size=page_size, run=run)
    result = await asimulate(
        persons,
        keys,
        engine="local",
        client=client,
        definitions=loaded,
        payloads=kwargs["payloads"],
        reasons=kwargs["reasons"],
        missing_columns=kwargs["missing_columns"],
        progress=kwargs["progress"],
    )
    return _runtime_na(result, loaded, keys, runtime)

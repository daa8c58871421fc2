"""Flag definitions for the simulation: `load_definitions` reads any shape through the flag engine's one
reader (`analytics_nb.flags.read_definitions`, into `flags.Definitions`) and applies the simulation's rules
(a copy the caller's edits never see, one definition per key); plus what a flag's conditions look at.

The one top-up rule, used by every simulation path (`simulate` with each engine, sync and async, `WhatIf`,
`simulate_dask` / `simulate_spark`): definitions that lack the cohorts or group type names their flags use
(a flags DataFrame carries neither) are filled from the service's local-evaluation definitions when a
client is given (`fill` / `afill`; the given ones win), and what is still missing is said once per run
(`warn_unfilled`: an `IncompleteDefinitionsWarning`, the answers stay NA).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from analytics_nb.client import ApiClient, AsyncApiClient, Core, FeatureFlags
from analytics_nb.errors import PostHogError
from analytics_nb.flags import (
    Definitions,
    DefinitionsError,
    MissingReferences,
    is_group_key_column,
    missing_references,
    read_definitions,
    warn_missing,
)
from analytics_nb.simulation._errors import SimulationInputError

__all__ = [
    "Definitions",
    "afill",
    "fill",
    "has_group_columns",
    "load_definitions",
    "missing_in",
    "warn_found",
    "warn_unfilled",
]


def load_definitions(definitions: Any) -> Definitions:
    """Read definitions in any shape `analytics_nb.flags.read_definitions` reads (the local-evaluation
    response or its JSON, a flags DataFrame, a list of dicts or models, one flag, a path to a JSON file, a
    `Definitions`) as a deep copy; raises `SimulationInputError` naming what is wrong (also for a flag key
    given twice).

    Args:
        definitions: The definitions in any shape `flags.read_definitions` reads.

    Returns:
        A deep copy as `Definitions`.
    """
    try:
        defs = read_definitions(definitions).copy()
    except DefinitionsError as exc:
        raise SimulationInputError(str(exc), key=exc.key) from None
    seen: set[str] = set()
    for f in defs.flags:
        if f["key"] in seen:
            raise SimulationInputError(
                f"definitions: flag key {f['key']!r} appears twice; keep one definition per key.",
                key=f["key"],
            )
        seen.add(f["key"])
    return defs


def _unfilled(defs: Definitions, group_type_mapping: Mapping[str, str] | None) -> MissingReferences:
    mapping = {**defs.group_type_mapping, **(group_type_mapping or {})}
    return missing_references(defs, group_type_mapping=mapping)


def completed(defs: Definitions, fetched: Any) -> Definitions:
    """``defs`` with missing cohorts and group type names filled from ``fetched`` (the service's
    local-evaluation definitions, any shape); the given ones win."""
    if fetched is None:
        return defs
    extra = load_definitions(fetched)
    return dataclasses.replace(
        defs,
        cohorts={**extra.cohorts, **defs.cohorts},
        group_type_mapping={**extra.group_type_mapping, **defs.group_type_mapping},
    )


#: Why the last `fill` / `afill` in this thread could not fetch the definitions: the next `warn_unfilled` in
#: the thread (the same run: both run on the caller's thread, or both on the client's loop) adds it to its
#: message and forgets it.
_fetch_failed = threading.local()


def take_fetch_failure() -> str:
    """Why this thread's last `fill` / `afill` could not fetch (empty when it could), forgotten here."""
    reason: str = getattr(_fetch_failed, "reason", "")
    _fetch_failed.reason = ""
    return reason


def note_fetch_failure(reason: str) -> None:
    """Hand a `take_fetch_failure` reason to the thread that warns (the run moved to a worker thread)."""
    _fetch_failed.reason = reason


def fill(
    defs: Definitions, client: Any, *, group_type_mapping: Mapping[str, str] | None = None
) -> Definitions:
    """``defs`` completed from ``client``'s project when its flags use cohorts or group type names it lacks
    (a flags DataFrame carries neither); ``defs`` itself when nothing is missing or no sync client is given.
    A failed fetch (the service refuses, or the client has no key that may read definitions) keeps ``defs``:
    `warn_unfilled` then names the error."""
    if not isinstance(client, ApiClient) or not _unfilled(defs, group_type_mapping):
        return defs
    try:
        fetched = client.feature_flags.local_evaluation()
    except (PostHogError, ValueError) as exc:  # refused, or no key to ask with: the run goes on, and says so
        _fetch_failed.reason = f" client= could not fetch the definitions: {exc}"
        return defs
    return completed(defs, fetched)


async def afill(
    defs: Definitions, client: Any, *, group_type_mapping: Mapping[str, str] | None = None
) -> Definitions:
    """`fill` awaited: ``client`` an `AsyncClient`, or the `Core` of a client whose loop runs this."""
    if not isinstance(client, Core | AsyncApiClient):
        return defs
    core = client if isinstance(client, Core) else client.core
    if not _unfilled(defs, group_type_mapping):
        return defs
    try:
        fetched = await FeatureFlags(core).local_evaluation()
    except (PostHogError, ValueError) as exc:  # refused, or no key to ask with: the run goes on, and says so
        _fetch_failed.reason = f" client= could not fetch the definitions: {exc}"
        return defs
    return completed(defs, fetched)


def has_group_columns(columns: Iterable[Any]) -> bool:
    """Whether property-set columns hold a group key (``group:<type>``): without one, server mode answers a
    group flag False as the service does for a person without that group, whatever its group type's name."""
    return any(is_group_key_column(c) for c in columns)


def missing_in(
    defs: Definitions,
    keys: Iterable[str] | None = None,
    *,
    group_type_mapping: Mapping[str, str] | None = None,
    groups_matter: bool = True,
) -> MissingReferences:
    """What `warn_unfilled` would name, without warning."""
    missing = _unfilled(defs, group_type_mapping).only(keys)
    return missing if groups_matter else missing.without_groups()


def warn_unfilled(
    defs: Definitions,
    keys: Iterable[str] | None = None,
    *,
    group_type_mapping: Mapping[str, str] | None = None,
    groups_matter: bool = True,
) -> MissingReferences:
    """One `IncompleteDefinitionsWarning` when the flags in ``keys`` (None: all) still use cohorts or group
    type names ``defs`` lacks (after `fill`): their answers are NA; the message names the count, the flags,
    the ids and the fix. Call it once per run.

    Args:
        defs: The definitions the run evaluates.
        keys: The flags the run answers. None: every flag.
        group_type_mapping: The run's ``group_type_mapping=``, merged over the definitions'.
        groups_matter: False when a group type without a name cannot change an answer (server mode without
            group columns: the flag is False, as for a person without that group).

    Returns:
        What is missing (falsy when nothing is).
    """
    return warn_found(
        missing_in(defs, keys, group_type_mapping=group_type_mapping, groups_matter=groups_matter)
    )


def warn_found(missing: MissingReferences) -> MissingReferences:
    """`warn_unfilled` for what is already known to be missing (e.g. `FrameEvaluator.missing_references`):
    one `IncompleteDefinitionsWarning` pointing at the analyst's line, with why a client could not fill
    them (if one tried)."""
    # the stacklevel of the first frame outside this package (the analyst's cell), counted from here;
    # none outside (the client's loop thread): this line
    skip = (os.path.dirname(os.path.dirname(__file__)), os.path.dirname(threading.__file__))
    frame, level = sys._getframe(0), 1
    while frame is not None and frame.f_code.co_filename.startswith(skip):
        frame, level = frame.f_back, level + 1  # type: ignore[assignment]
    return warn_missing(missing, note=take_fetch_failure(), stacklevel=level if frame is not None else 1)


def live_flags(defs: Definitions) -> Definitions:
    """Drop deleted flags (the service never evaluates them)."""
    kept = [f for f in defs.flags if not f.get("deleted")]
    return Definitions(kept, defs.cohorts, defs.group_type_mapping, defs.kind, defs.property_matching_version)


# ---------------------------------------------------------------------------------------------------------
# What a flag's conditions look at (for cause analysis in both-mode).


def flag_references(defs: Definitions, key: str) -> dict[str, set[str]]:
    """Which person properties (direct, and via cohorts), cohorts, group properties and flags ``key`` uses,
    following its flag dependencies."""
    by_key = defs.by_key()
    by_id = {str(f.get("id")): f for f in defs.flags if f.get("id") is not None}
    out: dict[str, set[str]] = {
        "person": set(),
        "cohort": set(),
        "cohort_person": set(),
        "group": set(),
        "flags": set(),
    }
    stack = [key]
    seen: set[str] = set()
    while stack:
        k = stack.pop()
        if k in seen:
            continue
        seen.add(k)
        flag = by_key.get(k) or by_id.get(k)
        if flag is None:
            continue
        filters = flag.get("filters") or {}
        groups = [*(filters.get("groups") or []), *(filters.get("super_groups") or [])]
        for group in groups:
            for prop in (group or {}).get("properties") or []:
                ptype = prop.get("type") or "person"
                pkey = str(prop.get("key"))
                if ptype == "cohort":  # the cohort id is the filter's value (its key is "id")
                    cohort_id = str(prop.get("value"))
                    out["cohort"].add(cohort_id)
                    _cohort_props(defs.cohorts.get(cohort_id), out["cohort_person"], set())
                elif ptype == "flag":
                    out["flags"].add(pkey)
                    stack.append(pkey)
                elif ptype == "group":
                    out["group"].add(pkey)
                else:
                    out["person"].add(pkey)
    return out


def _cohort_props(node: Any, out: set[str], seen: set[int]) -> None:
    if node is None or id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, Mapping):
        if "key" in node and ("operator" in node or "value" in node) and node.get("type") in (None, "person"):
            out.add(str(node["key"]))
        for value in node.values():
            if isinstance(value, Mapping | list):
                _cohort_props(value, out, seen)
    elif isinstance(node, list):
        for value in node:
            _cohort_props(value, out, seen)

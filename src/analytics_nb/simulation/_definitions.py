"""Flag definitions for the simulation: `load_definitions` reads any shape through the flag engine's one
reader (`analytics_nb.flags.read_definitions`, into `flags.Definitions`) and applies the simulation's rules
(a copy the caller's edits never see, one definition per key); plus what a flag's conditions look at."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from analytics_nb.flags import Definitions, DefinitionsError, read_definitions
from analytics_nb.simulation._errors import SimulationInputError

__all__ = ["Definitions", "load_definitions"]


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
                if ptype == "cohort":
                    out["cohort"].add(pkey)
                    _cohort_props(defs.cohorts.get(pkey), out["cohort_person"], set())
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

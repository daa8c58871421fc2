"""What flag definitions reference but do not carry: cohorts and group type names.

A flags DataFrame (``client.feature_flags.frame()``) or a list of flags carries neither the cohorts its flags
target nor the group type mapping (index -> name) its group flags aggregate by; only the local-evaluation
payload (``client.feature_flags.definitions()`` / ``local_evaluation()``) does. Without them the engine
cannot know the answer (NA, reason "inconclusive") - correct, but silent unless someone says why.
`missing_references` finds what is missing (pure: no I/O; filling it from the service is the simulation's
job) and `warn_incomplete` says so once per run with an `IncompleteDefinitionsWarning` naming the count, the
flags, the cohort ids or group type indexes, and the fix.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from analytics_nb.flags._reader import Definitions

__all__ = [
    "IncompleteDefinitionsWarning",
    "MissingReferences",
    "missing_references",
    "warn_incomplete",
    "warn_missing",
]

#: How many flags (and ids per flag) a warning names before "and N more".
SHOWN = 5


class IncompleteDefinitionsWarning(UserWarning):
    """Flags reference cohorts or group type indexes the definitions do not carry (a flags DataFrame or a
    list of flags carries neither): their answers are NA (reason ``inconclusive``), never a guess. Pass the
    definitions response (``client.feature_flags.definitions()``), which carries the cohorts and the group
    type mapping, or ``client=`` where the function takes one (it fills them from the service), or
    ``cohorts=`` / ``group_type_mapping=``."""


@dataclass(frozen=True)
class MissingReferences:
    """Per flag, the cohort ids and group type indexes it uses (itself or through a flag it depends on) that
    the definitions lack."""

    #: flag key -> cohort ids (as text) the definitions carry no cohort for
    cohorts: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: flag key -> group type indexes (as text) the group type mapping has no name for
    group_types: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: the definitions came as the local-evaluation payload (or were filled from it): a cohort they lack is
    #: one the service does not send (a static cohort)
    carries_cohorts: bool = False

    def __bool__(self) -> bool:
        return bool(self.cohorts or self.group_types)

    @property
    def flags(self) -> list[str]:
        """The flag keys that lack something, cohort ones first."""
        return list(dict.fromkeys([*self.cohorts, *self.group_types]))

    def without_groups(self) -> MissingReferences:
        """The same without the group types (when a missing name cannot change an answer)."""
        return MissingReferences(self.cohorts, {}, self.carries_cohorts)

    def only(self, keys: Iterable[str] | None) -> MissingReferences:
        """The same, for the flags in ``keys`` only (None: all)."""
        if keys is None:
            return self
        wanted = set(keys)
        return MissingReferences(
            {k: v for k, v in self.cohorts.items() if k in wanted},
            {k: v for k, v in self.group_types.items() if k in wanted},
            self.carries_cohorts,
        )

    def message(self) -> str:
        """The warning text: how many flags, which (the first few) with their ids, what their answers are,
        and the fix."""
        parts = []
        if self.cohorts:
            parts.append(
                f"{_count(self.cohorts)} use{'s' if len(self.cohorts) == 1 else ''} cohorts the definitions "
                f"do not carry ({_listing(self.cohorts, 'cohort')}), so "
                f"{'its answers are' if len(self.cohorts) == 1 else 'their answers are'} NA (reason "
                "'inconclusive')"
            )
        if self.group_types:
            parts.append(
                f"{_count(self.group_types)} aggregate{'s' if len(self.group_types) == 1 else ''} by group "
                f"types the definitions have no group_type_mapping name for "
                f"({_listing(self.group_types, 'group type index')}), so the engine cannot tell which group "
                "column they read: NA (sdk mode) or False 'no_group_type' (server mode, as for a person "
                "without that group)"
            )
        static = (
            " A cohort the definitions response itself lacks is a static cohort: only the service decides "
            "it (engine='remote')."
            if self.cohorts and self.carries_cohorts
            else ""
        )
        return (
            f"{'; '.join(parts)}. A flags DataFrame or a list of flags carries no cohorts or group type "
            "mapping: pass client= (simulate, WhatIf, simulate_dask) to fill them from the service, or the "
            "definitions response "
            "client.feature_flags.definitions() (or local_evaluation()), which carries them, or cohorts= / "
            "group_type_mapping=." + static
        )


def _count(by_flag: Mapping[str, Any]) -> str:
    return f"{len(by_flag)} flag{'s' if len(by_flag) != 1 else ''}"


def _listing(by_flag: Mapping[str, tuple[str, ...]], what: str) -> str:
    items = [f"{key!r}: {what} {', '.join(ids)}" for key, ids in list(by_flag.items())[:SHOWN]]
    more = f"; and {len(by_flag) - SHOWN} more" if len(by_flag) > SHOWN else ""
    return "; ".join(items) + more


def missing_references(
    defs: Definitions,
    *,
    cohorts: Mapping[str, Any] | None = None,
    group_type_mapping: Mapping[str, Any] | None = None,
) -> MissingReferences:
    """The cohorts and group type names the flags of ``defs`` use but ``defs`` does not carry.

    A flag counts when one of its conditions (or a cohort it uses, or a flag it depends on) uses a cohort id
    not in the cohorts, or a group type index (the flag's or a condition's aggregation, a group filter's
    ``group_type_index``) not in the group type mapping. Deleted flags are skipped.

    Args:
        defs: The definitions.
        cohorts: Cohorts used instead of the definitions' (as ``cohorts=`` of the engine). None: theirs.
        group_type_mapping: The mapping used instead of the definitions'. None: theirs.

    Returns:
        A `MissingReferences` (falsy when nothing is missing).
    """
    known_cohorts = {str(k) for k in (cohorts if cohorts is not None else defs.cohorts)}
    given_mapping = group_type_mapping if group_type_mapping is not None else defs.group_type_mapping
    mapping = {str(k) for k in given_mapping}
    all_cohorts = cohorts if cohorts is not None else defs.cohorts
    flags = [f for f in defs.flags if not f.get("deleted")]
    by_ref = {str(f["key"]): f for f in flags}
    by_ref.update({str(f["id"]): f for f in flags if f.get("id") is not None})
    direct: dict[str, tuple[set[str], set[str], set[str]]] = {}
    for flag in flags:
        used_cohorts: set[str] = set()
        used_groups: set[str] = set()
        deps: set[str] = set()
        _scan_flag(flag, used_cohorts, used_groups, deps)
        used_cohorts |= _nested_cohorts(used_cohorts, all_cohorts)
        direct[str(flag["key"])] = (used_cohorts - known_cohorts, used_groups - mapping, deps)
    missing_cohorts: dict[str, tuple[str, ...]] = {}
    missing_groups: dict[str, tuple[str, ...]] = {}
    for key in direct:
        lacking_c, lacking_g = _through_dependencies(key, direct, by_ref)
        if lacking_c:
            missing_cohorts[key] = tuple(sorted(lacking_c, key=_id_order))
        if lacking_g:
            missing_groups[key] = tuple(sorted(lacking_g, key=_id_order))
    carries = carries_cohorts(defs) or bool(cohorts)
    return MissingReferences(missing_cohorts, missing_groups, carries)


def _id_order(value: str) -> tuple[int, str]:
    return (int(value), "") if value.isdigit() else (1 << 62, value)


def _scan_flag(flag: Mapping[str, Any], cohorts: set[str], groups: set[str], deps: set[str]) -> None:
    filters = flag.get("filters")
    filters = filters if isinstance(filters, Mapping) else {}
    aggregation = filters.get("aggregation_group_type_index")
    if aggregation is not None:
        groups.add(str(aggregation))
    for group in [*(filters.get("groups") or []), *(filters.get("super_groups") or [])]:
        if not isinstance(group, Mapping):
            continue
        if group.get("aggregation_group_type_index") is not None:
            groups.add(str(group["aggregation_group_type_index"]))
        for prop in group.get("properties") or []:
            if not isinstance(prop, Mapping):
                continue
            kind = prop.get("type")
            if kind == "cohort" and prop.get("value") is not None:
                cohorts.add(str(prop["value"]))
            elif kind == "flag" and prop.get("key") is not None:
                deps.add(str(prop["key"]))
            elif kind == "group" and prop.get("group_type_index") is not None:
                groups.add(str(prop["group_type_index"]))


def _nested_cohorts(used: set[str], cohorts: Mapping[str, Any]) -> set[str]:
    """The cohort ids the used cohorts reference in turn (a cohort filter inside a cohort)."""
    out: set[str] = set()
    stack = list(used)
    while stack:
        node = cohorts.get(stack.pop())
        for ref in _cohort_refs(node):
            if ref not in out and ref not in used:
                out.add(ref)
                stack.append(ref)
    return out


def _cohort_refs(node: Any) -> set[str]:
    refs: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            if item.get("type") == "cohort" and item.get("value") is not None and "values" not in item:
                refs.add(str(item["value"]))
            stack.extend(v for v in item.values() if isinstance(v, Mapping | list))
        elif isinstance(item, list):
            stack.extend(item)
    return refs


def _through_dependencies(
    key: str,
    direct: Mapping[str, tuple[set[str], set[str], set[str]]],
    by_ref: Mapping[str, Mapping[str, Any]],
) -> tuple[set[str], set[str]]:
    """What ``key`` lacks itself and through the flags it depends on (each flag visited once)."""
    cohorts: set[str] = set()
    groups: set[str] = set()
    stack, seen = [key], set()
    while stack:
        current = stack.pop()
        if current in seen or current not in direct:
            continue
        seen.add(current)
        lacking_c, lacking_g, deps = direct[current]
        cohorts |= lacking_c
        groups |= lacking_g
        stack.extend(str(by_ref[d]["key"]) for d in deps if d in by_ref)
    return cohorts, groups


def carries_cohorts(defs: Definitions) -> bool:
    """Whether the definitions came as the local-evaluation payload (or were filled from it): a cohort they
    lack is then one the service does not send (a static cohort)."""
    return bool(defs.cohorts) or defs.kind in ("response", "local_evaluation_dict")


def compiled_definitions(compiled: Any) -> Definitions:
    """A `CompiledFlags` back as `Definitions` for `missing_references`: its flags' definitions, the ids of
    its cohorts (their filters are compiled; nested cohorts were resolved when compiling) and its group type
    mapping."""
    return Definitions(
        [dict(f.definition) for f in compiled.flags],
        {str(k): None for k in (compiled.cohorts or {})},
        dict(compiled.group_type_mapping),
        "local_evaluation_dict" if compiled.cohorts else "dicts",
    )


def warn_incomplete(
    defs: Definitions,
    keys: Iterable[str] | None = None,
    *,
    cohorts: Mapping[str, Any] | None = None,
    group_type_mapping: Mapping[str, Any] | None = None,
    groups_matter: bool = True,
    note: str = "",
    stacklevel: int = 3,
) -> MissingReferences:
    """One `IncompleteDefinitionsWarning` when flags in ``keys`` (None: all) use cohorts or group type names
    ``defs`` (or the ``cohorts`` / ``group_type_mapping`` given instead) lacks; nothing otherwise.

    Args:
        defs: The definitions a run evaluates.
        keys: The flags the run answers. None: every flag.
        cohorts: The cohorts used instead of the definitions'. None: theirs.
        group_type_mapping: The mapping used instead of the definitions'. None: theirs.
        groups_matter: Whether a group type without a name changes answers. Server mode without any group
            column answers such a flag False ("no_group_type") as the service does for a person without
            groups, so the caller passes False then.
        note: A sentence added to the message (e.g. why the client could not fill them).
        stacklevel: As for `warnings.warn` (point at the analyst's call).

    Returns:
        What is missing (falsy when nothing is).
    """
    missing = missing_references(defs, cohorts=cohorts, group_type_mapping=group_type_mapping).only(keys)
    if not groups_matter:
        missing = missing.without_groups()
    return warn_missing(missing, note=note, stacklevel=stacklevel)


def warn_missing(missing: MissingReferences, *, note: str = "", stacklevel: int = 2) -> MissingReferences:
    """One `IncompleteDefinitionsWarning` with ``missing``'s message (and ``note``) when anything is missing.

    Args:
        missing: What is missing (`missing_references`, or `FrameEvaluator.missing_references`).
        note: A sentence added to the message.
        stacklevel: As for `warnings.warn` called where `warn_missing` is called (2: that function's
            caller).

    Returns:
        ``missing``.
    """
    if missing:
        warnings.warn(missing.message() + note, IncompleteDefinitionsWarning, stacklevel=stacklevel + 1)
    return missing

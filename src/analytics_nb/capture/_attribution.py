"""Flag attribution on events: ``$feature/<key>`` and ``$active_feature_flags`` from decide or simulations.

An event keeps any attribution property it already has: that value is what the person actually saw when the
event happened, while a decide call or a simulation made afterwards describes the flags *now* (rollouts and
conditions may have changed in between). Events whose person has no outcome get no attribution.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from analytics_nb.capture._values import is_missing
from analytics_nb.flags import read_definitions
from analytics_nb.models import DecideResponse

__all__ = ["attribute", "feature_properties", "flag_columns", "flag_values", "outcome_frame"]

FEATURE_PREFIX = "$feature/"
ACTIVE = "$active_feature_flags"
GROUP_PREFIX = "group:"
_SUFFIXES = (":payload", ":reason", ":condition_index")
_NOT_FLAGS = frozenset(
    {"distinct_id", "error", "person_properties", "group_properties", "ip", "groups", "$groups"}
)


def _plain(value: Any) -> Any:
    """numpy bools/strings as Python values; NA-like as None."""
    if is_missing(value):
        return None
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.str_):
        return str(value)
    return value


def _is_flag_name(name: Any) -> bool:
    text = str(name)
    return (
        text not in _NOT_FLAGS
        and not text.startswith(GROUP_PREFIX)
        and not text.startswith(FEATURE_PREFIX)
        and not any(text.endswith(s) for s in _SUFFIXES)
    )


def flag_items(flags: Any) -> list[str | dict[str, Any]] | None:
    """``flags=`` at the edge: None, or a list of keys and flag definitions in the one canonical shape, the
    wire dict. Keys are text; definitions in any shape are read by the flag engine's one reader
    (`analytics_nb.flags.read_definitions`: a local-evaluation response, a flags DataFrame, models, dicts),
    so nothing further in reads model attributes and a shape it cannot read is an error, never keys."""
    if flags is None:
        return None
    if isinstance(flags, str) and not _definitions_text(flags):
        return [flags]
    if not isinstance(flags, (list, tuple, set, frozenset)):
        return list(read_definitions(flags).flags)
    items: list[str | dict[str, Any]] = []
    for item in flags:
        if isinstance(item, str) and not _definitions_text(item):
            items.append(item)
        else:
            items.extend(read_definitions(item).flags)
    return items


def _definitions_text(text: str) -> bool:
    """Text that is definitions (JSON, or a path to a .json file), not a flag key: PostHog's keys are letters,
    digits, ``-`` and ``_`` (PostHog's posthog/api/feature_flag.py, `FeatureFlagSerializer.validate_key`)."""
    stripped = text.lstrip()
    return stripped[:1] in ("{", "[") or text.endswith(".json")


def _flag_keys(flags: Any) -> list[str] | None:
    """Keys from ``flags=``: None, a key, keys, or flag definitions (models or dicts with ``key``)."""
    items = flag_items(flags)
    if items is None:
        return None
    return [item if isinstance(item, str) else str(item["key"]) for item in items]


def _group_flags(flags: Any) -> set[str] | None:
    """Group flag keys (``aggregation_group_type_index`` set) from definitions in ``flags=``, else None."""
    items = flag_items(flags)
    if items is None or isinstance(flags, str):
        return None
    found: set[str] = set()
    for item in items:
        if isinstance(item, str):
            return None  # bare keys: which flags aggregate by group is unknown
        filters = item.get("filters")
        if isinstance(filters, Mapping) and filters.get("aggregation_group_type_index") is not None:
            found.add(str(item["key"]))
    return found


def flag_values(flags: Any, *, keys: Iterable[str] | None = None) -> dict[str, bool | str]:
    """``{flag_key: value}`` from a decide result, a simulation-frame row (Series/dict) or a plain mapping.

    Unknown values (NA) are left out; simulation extras (``<key>:payload`` ...), ``distinct_id``, ``error``
    and ``group:<type>`` entries are ignored.

    Args:
        flags: A decide result, a simulation-frame row (Series or dict) or a plain mapping.
        keys: Only these flag keys. None: every flag.

    Returns:
        ``{flag_key: value}`` without the unknown ones.
    """
    if isinstance(flags, DecideResponse):
        items: Iterable[tuple[Any, Any]] = flags.feature_flags.items()
    elif isinstance(flags, pd.Series):
        items = flags.items()
    elif isinstance(flags, Mapping):
        if "featureFlags" in flags or "flags" in flags:
            return flag_values(DecideResponse.model_validate(flags), keys=keys)
        items = flags.items()
    else:
        raise TypeError(
            "flags= takes a DecideResponse (client.decide(...)), a row of a simulation frame or a "
            f"{{flag_key: value}} dict, not {type(flags).__name__}"
        )
    wanted = None if keys is None else set(keys)
    # a row of a simulation frame carries its input columns (country, plan): named in attrs, never flags
    inputs = set(flags.attrs.get("analytics_nb.input_columns", ())) if isinstance(flags, pd.Series) else set()
    out: dict[str, bool | str] = {}
    for key, value in items:
        if wanted is not None and key not in wanted:
            continue
        if wanted is None and (not _is_flag_name(key) or key in inputs):
            continue
        value = _plain(value)
        if value is None:
            continue
        out[str(key)] = value
    return out


def feature_properties(flags: Any, *, keys: Iterable[str] | None = None) -> dict[str, Any]:
    """The attribution properties for one person: ``$feature/<key>`` per flag and ``$active_feature_flags``.

    ``flags`` is a decide result, a row of a simulation frame or a ``{key: value}`` dict; like the official
    SDKs, ``$active_feature_flags`` lists the flags that are on and is left out when none is.

    Args:
        flags: A decide result, a row of a simulation frame or a ``{key: value}`` dict.
        keys: Only these flag keys. None: every flag.

    Returns:
        ``{"$feature/<key>": value, ..., "$active_feature_flags": [...]}``.
    """
    values = flag_values(flags, keys=keys)
    props: dict[str, Any] = {f"{FEATURE_PREFIX}{k}": v for k, v in values.items()}
    active = [k for k, v in values.items() if v is not False]
    if active:
        props[ACTIVE] = active
    return props


def outcome_frame(outcomes: Any) -> pd.DataFrame | None:
    """The frame of a simulation result (``SimulationResult.frame``) or the frame itself; None for others.

    A ``SimulationResult`` keeps group keys in its ``inputs``; they are joined back (same index) so that
    group flags can be matched by group key.
    """
    frame = getattr(outcomes, "frame", None)
    if isinstance(frame, pd.DataFrame):
        inputs = getattr(outcomes, "inputs", None)
        if isinstance(inputs, pd.DataFrame) and inputs.index.equals(frame.index):
            extra = [c for c in inputs.columns if _is_group_key_column(c) and c not in frame.columns]
            if extra:
                frame = frame.assign(**{str(c): inputs[c] for c in extra})
        return frame
    if isinstance(outcomes, pd.DataFrame):
        return outcomes
    return None


def flag_columns(frame: pd.DataFrame, flags: Any = None) -> list[str]:
    """The flag-value columns of an outcomes frame: ``flags=`` when given (checked), else every column that is
    not ``distinct_id``, ``error``, ``group:<type>``, an input column name or a ``<key>:...`` extra."""
    keys = _flag_keys(flags)
    # a simulation frame names the input property columns (country, plan) it carries in its attrs
    # (simulation/_result.py, INPUT_COLUMNS_ATTR): they are never flags
    inputs = set(frame.attrs.get("analytics_nb.input_columns", ()))
    found = [str(c) for c in frame.columns if _is_flag_name(c) and str(c) not in inputs]
    if keys is None:
        return found
    missing = [k for k in keys if k not in frame.columns]
    if missing:
        raise KeyError(
            f"the outcomes frame has no column for flag(s) {missing}; its flag columns are {found}"
        )
    return keys


def _key_text(value: Any) -> str | None:
    if is_missing(value) or value == "":
        return None
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _event_groups(events: pd.DataFrame, types: list[str]) -> dict[str, list[str | None]]:
    """Per event, its key per group type: from ``group:<type>`` columns, else ``$groups`` in properties."""
    n = len(events)
    out: dict[str, list[str | None]] = {}
    dicts = None
    if "$groups" in events.columns:
        dicts = events["$groups"].to_numpy(dtype=object).tolist()
    elif "properties" in events.columns:
        dicts = [
            p.get("$groups") if isinstance(p, Mapping) else None
            for p in events["properties"].to_numpy(dtype=object).tolist()
        ]
    for t in types:
        col = f"{GROUP_PREFIX}{t}"
        if col in events.columns:
            out[t] = [_key_text(v) for v in events[col].to_numpy(dtype=object).tolist()]
        elif dicts is not None:
            out[t] = [_key_text(d.get(t)) if isinstance(d, Mapping) else None for d in dicts]
        else:
            out[t] = [None] * n
    return out


def _lookup(
    outcomes: pd.DataFrame, keys: list[str]
) -> tuple[list[str], dict[tuple[str | None, ...], dict[str, Any]], dict[str, dict[str, Any]]]:
    """Exact ``(distinct_id, group keys...)`` -> values; per distinct_id, the values all its rows agree on."""
    types = [str(c)[len(GROUP_PREFIX) :] for c in outcomes.columns if _is_group_key_column(c)]
    dids = [_key_text(v) for v in outcomes["distinct_id"].to_numpy(dtype=object).tolist()]
    group_vals = [
        [_key_text(v) for v in outcomes[f"{GROUP_PREFIX}{t}"].to_numpy(dtype=object).tolist()] for t in types
    ]
    cols = {k: [_plain(v) for v in outcomes[k].to_numpy(dtype=object).tolist()] for k in keys}
    exact: dict[tuple[str | None, ...], dict[str, Any]] = {}
    per_person: dict[str, dict[str, Any]] = {}
    conflict = object()
    for i, did in enumerate(dids):
        if did is None:
            continue
        row = {k: cols[k][i] for k in keys}
        exact[(did, *(g[i] for g in group_vals))] = row
        agreed = per_person.get(did)
        if agreed is None:
            per_person[did] = dict(row)
        else:
            for k, v in row.items():
                if agreed.get(k, conflict) is not conflict and agreed[k] != v:
                    agreed[k] = conflict
    for agreed in per_person.values():
        for k in [k for k, v in agreed.items() if v is conflict]:
            agreed[k] = None
    return types, exact, per_person


def _is_group_key_column(name: Any) -> bool:
    text = str(name)
    return text.startswith(GROUP_PREFIX) and text.count(":") == 1


class UnknownOutcomeWarning(UserWarning):
    """Events got no ``$feature/<key>`` because their person's outcome for the flag is unknown (NA)."""


def _warn_unknown(unknown: Mapping[str, int]) -> None:
    """One warning naming the flags whose unknown outcomes left events without ``$feature/<key>``."""
    if not unknown:
        return
    listed = ", ".join(f"{k!r} ({n:,})" for k, n in list(unknown.items())[:10])
    warnings.warn(
        f"{sum(unknown.values()):,} $feature/<key> properties were left out because the outcome is unknown "
        f"(NA, or different across the person's outcome rows), by flag: {listed}. A local simulation answers "
        "NA when a flag reads a property the property sets have no column for (its MissingPropertyWarning "
        "names them): add the column or simulate with engine='remote'.",
        UnknownOutcomeWarning,
        stacklevel=3,
    )


def attribute(events: pd.DataFrame, outcomes: Any, *, flags: Any = None) -> pd.DataFrame:
    """Add ``$feature/<key>`` and ``$active_feature_flags`` to each event from its person's flag outcomes.

    ``outcomes``: a ``DecideResponse`` (one person: every event gets it; use a
    ``{distinct_id: DecideResponse}`` dict for several), or a simulation frame / ``SimulationResult``
    matched by ``distinct_id`` and, where the outcomes carry ``group:<type>`` columns, by the event's group
    keys (``group:<type>`` columns or ``properties["$groups"]``). An event without group keys takes the
    values all of its person's outcome rows agree on; an event in a group the outcomes do not have gets
    nothing, or, when ``flags`` holds definitions, only the person (non-group) flags. Properties the event
    already has are kept; events without an outcome are unchanged.
    ``flags`` limits the flags used (keys or definitions). Returns a new frame (same index); the input is not
    modified. Frames with a ``properties`` dict column get the properties written into new dicts; other frames
    get ``$feature/<key>`` and ``$active_feature_flags`` columns.

    Args:
        events: The events: ``distinct_id`` plus either a ``properties`` dict column or one column per
            property.
        outcomes: The flag outcomes: a simulation frame or ``SimulationResult``, a ``DecideResponse``, a
            ``{distinct_id: DecideResponse}`` dict or a ``{flag_key: value}`` dict.
        flags: Limit the flags used to these keys or definitions; definitions also tell person flags from
            group flags. None: every flag of ``outcomes``.

    Returns:
        A new frame with the same index and the attribution properties added.
    """
    if not isinstance(events, pd.DataFrame):
        raise TypeError(f"events must be a pandas DataFrame of events, not {type(events).__name__}")
    if "distinct_id" not in events.columns:
        raise ValueError("the events frame needs a 'distinct_id' column to match events to flag outcomes")
    event_dids = [_key_text(v) for v in events["distinct_id"].to_numpy(dtype=object).tolist()]
    per_event = _per_event(events, outcomes, event_dids, flags)
    existing = _Existing(events, per_event)
    unknown: dict[str, int] = {}
    new_props = [_event_properties(row, i, existing, unknown) for i, row in enumerate(per_event)]
    _warn_unknown(unknown)
    if existing.has_dicts:
        return _with_dicts(events, existing, new_props)
    return _with_columns(events, existing, new_props)


def _per_event(
    events: pd.DataFrame, outcomes: Any, event_dids: list[str | None], flags: Any
) -> list[dict[str, Any] | None]:
    """Each event's flag outcomes (None: no outcome), from a simulation frame, a ``{distinct_id: decide}``
    dict or one decide result."""
    wanted = _flag_keys(flags)
    frame = outcome_frame(outcomes)
    if frame is not None:
        return _per_event_from_frame(events, frame, event_dids, flags)
    if (
        isinstance(outcomes, Mapping)
        and outcomes
        and "featureFlags" not in outcomes
        and "flags" not in outcomes
        and all(isinstance(v, DecideResponse | Mapping) for v in outcomes.values())
    ):
        by_person = {str(k): flag_values(v, keys=wanted) for k, v in outcomes.items()}
        return [by_person.get(did) if did is not None else None for did in event_dids]
    values = flag_values(outcomes, keys=wanted)
    distinct = {d for d in event_dids if d is not None}
    if len(distinct) > 1:
        raise ValueError(
            f"a single decide result describes one person, but the events belong to {len(distinct)} "
            "distinct ids; pass {distinct_id: client.decide(distinct_id)} or a simulation frame instead"
        )
    return [values if did is not None else None for did in event_dids]


def _per_event_from_frame(
    events: pd.DataFrame, frame: pd.DataFrame, event_dids: list[str | None], flags: Any
) -> list[dict[str, Any] | None]:
    """Each event's outcome row of a simulation frame: by distinct_id and, where the outcomes carry group
    keys, by the event's own group keys (see ``attribute``)."""
    if "distinct_id" not in frame.columns:
        raise ValueError("the outcomes frame needs a 'distinct_id' column (simulation frames have one)")
    keys = flag_columns(frame, flags)
    group_flags = _group_flags(flags)
    types, exact, per_person = _lookup(frame, keys)
    groups = _event_groups(events, types)
    per_event: list[dict[str, Any] | None] = []
    for i, did in enumerate(event_dids):
        if did is None:
            per_event.append(None)
            continue
        if not types:
            per_event.append(per_person.get(did))
            continue
        keys_here = tuple(groups[t][i] for t in types)
        row = exact.get((did, *keys_here))
        if row is None and all(k is None for k in keys_here):
            row = per_person.get(did)  # no group context on the event: what the person's rows agree on
        elif row is None and group_flags is not None and did in per_person:
            # another group than the outcomes: person flags still apply, group flags do not
            row = {k: v for k, v in per_person[did].items() if k not in group_flags}
        per_event.append(row)
    return per_event


class _Existing:
    """What the events already carry: their ``properties`` dicts and attribution columns, read once (no
    per-row pandas indexing); ``all_keys`` are the flag keys of the outcomes, in first-seen order."""

    def __init__(self, events: pd.DataFrame, per_event: list[dict[str, Any] | None]) -> None:
        self.has_dicts = "properties" in events.columns
        self.dicts: list[Any] = (
            events["properties"].to_numpy(dtype=object).tolist() if self.has_dicts else [None] * len(events)
        )
        ordered: dict[str, None] = {}
        seen_rows: set[int] = set()
        for row in per_event:
            if row and id(row) not in seen_rows:  # outcome rows are shared by many events: visit each once
                seen_rows.add(id(row))
                ordered.update(dict.fromkeys(row))
        self.all_keys = list(ordered)
        self.columns: dict[str, list[Any]] = {}
        for name in [f"{FEATURE_PREFIX}{k}" for k in self.all_keys] + [ACTIVE]:
            if name in events.columns:
                self.columns[name] = events[name].to_numpy(dtype=object).tolist()

    def get(self, i: int, name: str) -> Any:
        """Event ``i``'s own value of property ``name`` (its dict first, then its column), or None."""
        d = self.dicts[i]
        if isinstance(d, Mapping) and name in d and d[name] is not None:
            return d[name]
        col = self.columns.get(name)
        if col is not None:
            v = col[i]
            if isinstance(v, list | tuple | np.ndarray) or not is_missing(v):
                return v
        return None


def _event_properties(
    row: dict[str, Any] | None, i: int, existing: _Existing, unknown: dict[str, int]
) -> dict[str, Any]:
    """The properties to add to event ``i``: its outcomes it does not already have, and the extended
    ``$active_feature_flags``; an unknown (NA) outcome the event does not carry itself is counted in
    ``unknown`` (by flag) and added as nothing."""
    props: dict[str, Any] = {}
    if not row:
        return props
    added_active: list[str] = []
    for k, v in row.items():
        if v is None:
            if existing.get(i, f"{FEATURE_PREFIX}{k}") is None:
                unknown[k] = unknown.get(k, 0) + 1
            continue
        name = f"{FEATURE_PREFIX}{k}"
        if existing.get(i, name) is not None:
            continue  # the event's own value is what the person saw: keep it
        props[name] = v
        if v is not False:
            added_active.append(k)
    old_active = existing.get(i, ACTIVE)
    if old_active is not None:
        merged = [str(x) for x in list(old_active)]
        extra = [k for k in added_active if k not in merged]
        if extra:
            props[ACTIVE] = merged + extra
    elif props:
        final = {k: props.get(f"{FEATURE_PREFIX}{k}", existing.get(i, f"{FEATURE_PREFIX}{k}")) for k in row}
        enabled = [k for k, v in final.items() if v is not None and v is not False]
        if enabled:
            props[ACTIVE] = enabled
    return props


def _with_dicts(events: pd.DataFrame, existing: _Existing, new_props: list[dict[str, Any]]) -> pd.DataFrame:
    """A copy of ``events`` whose ``properties`` dicts get the new properties (in new dicts)."""
    out = events.copy()
    merged_dicts: list[Any] = []
    for old, props in zip(existing.dicts, new_props, strict=True):
        if not props:
            merged_dicts.append(old)
            continue
        base = dict(old) if isinstance(old, Mapping) else {}
        for k, v in props.items():
            base[k] = v
        merged_dicts.append(base)
    out["properties"] = pd.Series(merged_dicts, index=events.index, dtype=object)
    return out


def _with_columns(events: pd.DataFrame, existing: _Existing, new_props: list[dict[str, Any]]) -> pd.DataFrame:
    """A copy of ``events`` with ``$feature/<key>`` and ``$active_feature_flags`` columns."""
    out = events.copy()
    names = [f"{FEATURE_PREFIX}{k}" for k in existing.all_keys] + [ACTIVE]
    for name in names:
        fresh = [p.get(name) for p in new_props]
        if name in existing.columns:
            old = existing.columns[name]
            column = [f if f is not None else old[j] for j, f in enumerate(fresh)]
        else:
            column = fresh
        out[name] = pd.Series(
            [pd.NA if (v is None or (not isinstance(v, list) and is_missing(v))) else v for v in column],
            index=events.index,
            dtype=object,
        )
    return out

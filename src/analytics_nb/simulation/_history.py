"""Flags across time: the definitions as they were at a moment, and a flag's timeline over a window.

`definitions_as_of` / `adefinitions_as_of` return the project's definitions as they were at a moment
(``client.feature_flags.definitions(as_of=...)``: each flag at the version in force then, rebuilt from the
service's ``versions/:n`` or its activity log; see ``client/_resources/_flag_history.py``), as the
simulation's `Definitions`: what `simulate(..., as_of=...)` evaluates.

`flag_timeline` walks one flag's changes in a window: the flag's activity entries between ``start`` and
``end`` give the moments; the definitions as of ``start`` and of each change are evaluated by the local engine
over the persons given (relative dates read against each moment), and each pair of consecutive answers is
compared with `_whatif.diff_frames`: who gains the flag, who loses it, who switches variant, and whose answer
is unknown. The persons' properties are the ones given (today's, unless the caller gives older ones);
cohorts are today's (the history of a cohort is not read: the `DefinitionsHistoryWarning` says so).
"""

from __future__ import annotations

import datetime as dt
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from analytics_nb.client import (
    ApiClient,
    AsyncApiClient,
    Core,
    DefinitionsHistoryWarning,
    FeatureFlags,
    HistoryGap,
    as_moment,
    warn_gaps,
)
from analytics_nb.flags import MissingReferences
from analytics_nb.simulation._definitions import (
    Definitions,
    flag_references,
    live_flags,
    load_definitions,
    warn_found,
)
from analytics_nb.simulation._errors import SimulationInputError
from analytics_nb.simulation._inputs import PropertySets, normalise_property_sets, read_table
from analytics_nb.simulation._local import (
    MissingColumns,
    check_missing_columns,
    conform,
    make_evaluator,
    warn_missing_properties,
)
from analytics_nb.simulation._whatif import diff_frames

__all__ = ["FlagTimeline", "adefinitions_as_of", "definitions_as_of", "flag_timeline"]


def _sync_client(client: Any, what: str) -> ApiClient:
    if isinstance(client, AsyncApiClient):
        raise TypeError(
            f"{what}: client= is an AsyncClient; await adefinitions_as_of(client, as_of) instead, or pass a "
            "sync Client."
        )
    if not isinstance(client, ApiClient):
        raise TypeError(f"{what} needs client=, a Client on the project whose flag history to read.")
    return client


def definitions_as_of(client: Any, as_of: dt.datetime | str) -> Definitions:
    """The project's flag definitions as they were at ``as_of`` (see the module docstring), as
    `Definitions` (``history_gaps`` and ``as_of`` kept on the response are read by `flag_timeline`).

    Args:
        client: A sync ``Client`` on the project.
        as_of: A timezone-aware datetime or ISO text.

    Returns:
        The `Definitions` in force then.

    Warns:
        DefinitionsHistoryWarning: What the history could not give (flags left out, cohorts read as today).
    """
    response = _sync_client(client, "definitions_as_of").feature_flags.definitions(
        as_of=as_moment("as_of", as_of)
    )
    return load_definitions(response)


async def adefinitions_as_of(client: Any, as_of: dt.datetime | str) -> Definitions:
    """`definitions_as_of` awaited.

    Args:
        client: An `AsyncClient`, or the `Core` of a client whose loop runs this.
        as_of: A timezone-aware datetime or ISO text.

    Returns:
        The `Definitions` in force then.
    """
    if not isinstance(client, Core | AsyncApiClient):
        raise TypeError("adefinitions_as_of needs client=, an AsyncClient (or a client's Core).")
    core = client if isinstance(client, Core) else client.core
    response = await FeatureFlags(core).definitions(as_of=as_moment("as_of", as_of))
    return load_definitions(response)


@dataclass(repr=False)
class FlagTimeline:
    """A flag's changes over a window and who each one moved.

    ``steps``: one row per change (``step``, ``at``, ``activity``, ``version_from``, ``version_to``,
    ``user``, ``fields`` changed, ``gained``, ``lost``, ``switched`` (variant to variant), ``unknown``
    (an answer NA before or after), ``holders_before``, ``holders_after``). ``persons``: one row per person
    a change moved (``step``, ``at``, ``row``, ``distinct_id``, ``from``, ``to``, ``change``: gained, lost,
    switched or unknown). ``values``: each person's answer at ``start`` and after each step (columns
    ``start``, ``step_1``...). ``gaps``: what the history could not give (as in the warning). Every frame
    writes to CSV as is (``timeline.persons.to_csv(...)``).
    """

    flag: str
    start: dt.datetime
    end: dt.datetime
    steps: pd.DataFrame
    persons: pd.DataFrame
    values: pd.DataFrame
    gaps: list[dict[str, Any]] = field(default_factory=list)

    def __repr__(self) -> str:
        return (
            f"FlagTimeline(flag={self.flag!r}, start={self.start.isoformat()}, end={self.end.isoformat()}, "
            f"steps={len(self.steps)}, moved={len(self.persons)}, gaps={len(self.gaps)})"
        )

    def _repr_html_(self) -> str:
        return f"<div><p><b>{self!r}</b></p>{self.steps.to_html(index=False)}</div>"


def _truthy(values: pd.Series) -> np.ndarray:
    """Which answers hold the flag (True or a variant), vectorised: NA and False do not."""
    filled = values.astype(object).where(values.notna(), False)
    return filled.ne(False).to_numpy(dtype=bool)


def _change_kinds(before: pd.Series, after: pd.Series) -> np.ndarray:
    """gained / lost / switched (variant to variant) / unknown (NA on either side), per moved person."""
    unknown = (before.isna() | after.isna()).to_numpy(dtype=bool)
    had, has = _truthy(before), _truthy(after)
    return np.select([unknown, has & ~had, had & ~has], ["unknown", "gained", "lost"], "switched")


def _changes(entry: dict[str, Any]) -> list[dict[str, Any]]:
    detail = entry.get("detail")
    changes = detail.get("changes") if isinstance(detail, dict) else None
    return [c for c in changes if isinstance(c, dict)] if isinstance(changes, list) else []


def _version_pair(entry: dict[str, Any]) -> tuple[Any, Any]:
    for change in _changes(entry):
        if change.get("field") == "version":
            return change.get("before"), change.get("after")
    return (None, 1) if entry.get("activity") == "created" else (None, None)


def _entry_at(entry: dict[str, Any]) -> dt.datetime:
    return as_moment("created_at", entry.get("created_at"))


def _window_entries(
    client: ApiClient, flag: Any, start: dt.datetime, end: dt.datetime
) -> list[dict[str, Any]]:
    """The flag's entries that change it (a version bump, its creation) in ``(start, end]``, oldest first."""
    entries = client.feature_flags.activity_records(flag, since=start)
    kept = [
        e
        for e in entries
        if _entry_at(e) <= end and (e.get("activity") == "created" or _version_pair(e)[1] is not None)
    ]
    return sorted(kept, key=_entry_at)


def _flag_and_dependencies(defs: Definitions, flag_id: Any) -> tuple[str | None, list[dict[str, Any]]]:
    """The key the flag had in ``defs`` (None: absent) and the flags to evaluate for it (its dependencies)."""
    by_id = {str(f.get("id")): f for f in defs.flags}
    target = by_id.get(str(flag_id))
    if target is None:
        return None, []
    refs = flag_references(defs, target["key"])["flags"]
    keys = {target["key"]} | {by_id[r]["key"] if r in by_id else r for r in refs}
    return target["key"], [f for f in defs.flags if f["key"] in keys]


def _answers(
    sets: PropertySets,
    defs: Definitions,
    flag_id: Any,
    moment: dt.datetime,
    *,
    unknown: bool,
    mode: Literal["server", "sdk"],
    missing_columns: MissingColumns,
) -> pd.Series:
    """The flag's answer for each person under ``defs`` (False when the flag did not exist; NA when its
    history is unknown then), relative dates read against ``moment``."""
    key, flags = _flag_and_dependencies(defs, flag_id)
    if key is None:
        filler: Any = pd.NA if unknown else False
        return pd.Series([filler] * len(sets.frame), index=sets.frame.index, dtype=object)
    evaluator = make_evaluator(sets, defs, mode=mode, now=moment, missing_columns=missing_columns)
    out = conform(
        evaluator.run(definitions=flags, payloads=False, reasons=False),
        sets,
        None,
        payloads=False,
        reasons=False,
    )
    warn_missing_properties({k: v for k, v in evaluator.missing_report.items() if k == key}, len(sets))
    return out[key].astype(object)


def _unknown_at(defs_response: Any, current: Any) -> bool:
    """Whether the flag was left out at this moment because its history is unknown (not: did not exist)."""
    gaps = (getattr(defs_response, "model_extra", None) or {}).get("history_gaps") or []
    return any(g.get("flag_id") == str(current.id) and not g.get("cohort") for g in gaps)


def flag_timeline(
    persons: Any,
    flag: int | str,
    start: dt.datetime | str,
    end: dt.datetime | str,
    *,
    client: Any,
    mode: Literal["server", "sdk"] = "server",
    missing_columns: MissingColumns = "unknown",
) -> FlagTimeline:
    """Each change of ``flag`` between ``start`` and ``end``, with who gains it and who loses it.

    The moments are ``start`` and each entry of the flag's activity log in ``(start, end]`` that changes it
    (a new version, its creation); the definitions as of each moment (``client.feature_flags.
    definitions_at``) are evaluated by the local engine over ``persons`` and consecutive answers compared.
    A flag that did not exist yet answers False; a version the history cannot rebuild answers NA (named in
    the `DefinitionsHistoryWarning`). Changes of the flags it depends on and of cohorts are not steps of
    their own (a flag's dependencies are taken as they were at each of its own changes).

    Args:
        persons: One row per person (any family `simulate` takes), with ``distinct_id`` and the property
            columns (their values are used for every moment: give older ones to ask about older persons).
        flag: The flag's id or key (a live flag).
        start: The window's start (timezone-aware datetime or ISO text).
        end: The window's end.
        client: A sync ``Client`` on the flag's project.
        mode: ``"server"`` (the flags service) or ``"sdk"`` (the SDKs' local evaluation).
        missing_columns: ``"unknown"`` (NA with a warning) or ``"not_set"`` for properties ``persons`` lack.

    Returns:
        A `FlagTimeline`.
    """
    api = _sync_client(client, "flag_timeline")
    begin, finish = as_moment("start", start), as_moment("end", end)
    if finish <= begin:
        raise SimulationInputError(f"end ({finish.isoformat()}) must be after start ({begin.isoformat()}).")
    missing_columns = check_missing_columns(missing_columns)
    raw, _ = read_table(persons)
    sets = normalise_property_sets(raw)
    current = _resolve(api, flag)
    entries = _window_entries(api, current.id, begin, finish)
    moments = [begin, *(_entry_at(e) for e in entries)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DefinitionsHistoryWarning)
        responses = api.feature_flags.definitions_at(moments)
    for other in caught:  # the history warning is said below, about this flag only
        if not issubclass(other.category, DefinitionsHistoryWarning):
            warnings.warn(other.message, other.category, stacklevel=2)
    defs_list = [live_flags(load_definitions(r)) for r in responses]
    gaps = _relevant_gaps(responses, defs_list, current)
    warn_gaps([HistoryGap.from_payload(g) for g in gaps], stacklevel=2)
    _warn_missing_references(defs_list, current.id)
    values = {
        ("start" if i == 0 else f"step_{i}"): _answers(
            sets,
            defs,
            current.id,
            moment,
            unknown=_unknown_at(responses[i], current),
            mode=mode,
            missing_columns=missing_columns,
        )
        for i, (defs, moment) in enumerate(zip(defs_list, moments, strict=True))
    }
    return _timeline(current.key, begin, finish, sets, entries, moments, values, gaps)


def _relevant_gaps(
    responses: Sequence[Any], defs_list: Sequence[Definitions], current: Any
) -> list[dict[str, Any]]:
    """The history gaps about the flag or a flag it depends on (at any of the moments)."""
    names = {str(current.id), current.key}
    for defs in defs_list:
        key, flags = _flag_and_dependencies(defs, current.id)
        if key is not None:
            names |= {str(r) for r in flag_references(defs, key)["flags"]}
            names |= {str(f.get("id")) for f in flags} | {f["key"] for f in flags}
    return [
        g
        for r in responses
        for g in (getattr(r, "model_extra", None) or {}).get("history_gaps") or []
        if g.get("flag") in names or g.get("flag_id") in names
    ]


def _resolve(api: ApiClient, flag: Any) -> Any:
    """The live `FeatureFlag` named by an id or a key (a `SimulationInputError` naming it otherwise)."""
    if (isinstance(flag, int) and not isinstance(flag, bool)) or (isinstance(flag, str) and flag.isdigit()):
        return api.feature_flags.get(int(flag))
    if not isinstance(flag, str) or not flag:
        raise SimulationInputError(f"flag={flag!r}: give the flag's id or key.")
    found = [f for f in api.feature_flags.list(key=flag) if f.key == flag]
    if len(found) != 1:
        raise SimulationInputError(
            f"flag={flag!r}: no live flag has this key in the client's project.", key=flag
        )
    return found[0]


def _warn_missing_references(defs_list: Sequence[Definitions], flag_id: Any) -> None:
    """One `IncompleteDefinitionsWarning` for cohorts or group types the flag (at any moment) lacks."""
    from analytics_nb.simulation._definitions import missing_in

    found = MissingReferences()
    for defs in defs_list:
        key, _ = _flag_and_dependencies(defs, flag_id)
        if key is not None:
            found = missing_in(defs, [key])
            if found:
                break
    if found:
        warn_found(found)


def _timeline(
    key: str,
    begin: dt.datetime,
    finish: dt.datetime,
    sets: PropertySets,
    entries: list[dict[str, Any]],
    moments: list[dt.datetime],
    values: dict[str, pd.Series],
    gaps: list[dict[str, Any]],
) -> FlagTimeline:
    """The frames of a timeline from each moment's answers."""
    names = list(values)
    ids = sets.frame["distinct_id"]
    step_rows: list[dict[str, Any]] = []
    person_parts: list[pd.DataFrame] = []
    for i in range(1, len(names)):
        before = pd.DataFrame({"distinct_id": ids, key: values[names[i - 1]]})
        after = pd.DataFrame({"distinct_id": ids, key: values[names[i]]})
        _, moved = diff_frames(before, after, [key])
        kinds = list(_change_kinds(moved["from"], moved["to"]))
        moved = moved.drop(columns=["flag"]).assign(step=i, at=moments[i], change=kinds)
        person_parts.append(moved[["step", "at", "row", "distinct_id", "from", "to", "change"]])
        entry = entries[i - 1]
        version_from, version_to = _version_pair(entry)
        user: dict[str, Any] = entry["user"] if isinstance(entry.get("user"), dict) else {}
        step_rows.append(
            {
                "step": i,
                "at": moments[i],
                "activity": entry.get("activity"),
                "version_from": version_from,
                "version_to": version_to,
                "user": user.get("email") or user.get("first_name"),
                "fields": ",".join(c["field"] for c in _changes(entry) if c.get("field") != "version"),
                **{k: kinds.count(k) for k in ("gained", "lost", "switched", "unknown")},
                "holders_before": int(_truthy(values[names[i - 1]]).sum()),
                "holders_after": int(_truthy(values[names[i]]).sum()),
            }
        )
    columns = ["step", "at", "activity", "version_from", "version_to", "user", "fields", "gained", "lost"]
    columns += ["switched", "unknown", "holders_before", "holders_after"]
    steps = pd.DataFrame(step_rows, columns=columns)
    for name in ("version_from", "version_to", "gained", "lost", "switched", "unknown"):
        steps[name] = steps[name].astype("Int64")  # a creation has no version before it: NA, not NaN
    person_columns = ["step", "at", "row", "distinct_id", "from", "to", "change"]
    persons = (
        pd.concat(person_parts, ignore_index=True) if person_parts else pd.DataFrame(columns=person_columns)
    )
    frame = pd.DataFrame({"distinct_id": ids, **values})
    return FlagTimeline(key, begin, finish, steps, persons, frame, gaps)

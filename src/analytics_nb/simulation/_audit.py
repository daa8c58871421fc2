"""The audit of what was recorded: each `$feature_flag_called` of a flag in a window, against what the
definitions in force at that moment give for that person.

The recorded calls are read through the query API (``client.query``, keyset paging on ``uuid``). PostHog is
moving them from ``events`` to a ``flag_evaluations`` table kept 90 days (PostHog/posthog #88127; the table:
``posthog/hogql/database/schema/flag_evaluations.py``, hidden unless the organisation reads flag calls there,
``FlagEvaluationsMode`` in ``products/feature_flags/backend/models/team_feature_flags_config.py``): the audit
asks ``flag_evaluations`` first and reads ``events`` when the table is refused (not served to the project) or
holds no call of the flag in the window, and says which it read (``FlagAudit.source``).

The definitions in force at each call are the flag's versions in the window (its activity entries, as
`flag_timeline` reads them; one `definitions_at` read, one engine run per version); the person's properties
come from ``persons=`` or else from ``client.persons(...)``, which gives **today's** properties.

Each mismatch gets the first cause of this list that applies (``CAUSES``):

1. ``stale_local_definitions``: the call was evaluated locally (``locally_evaluated`` or
   ``$feature_flag_evaluated_locally`` true) and either the version it recorded (``$feature_flag_version``)
   is older than the one in force, or the flag changed within ``stale_after`` before the call (an SDK polls
   its definitions every 30 s by default: posthog-python ``poll_interval``);
2. ``definitions_changed``: the flag changed in the window before the call and the recorded answer is the
   one an earlier version in the window gives, or the recorded version differs from the one in force;
3. ``experience_continuity``: the flag has ``ensure_experience_continuity`` (the service answers from the
   person's stored hash key override, which the definitions do not hold);
4. ``person_properties_changed``: the flag reads person properties, whose values at the call may differ from
   the ones used (today's, unless ``persons=`` gives older ones);
5. ``unknown``.

A call whose recorded response is null, or whose expected answer is unknown (the person is not among the
persons, a property is missing), is not compared: ``match`` is NA and ``detail`` says why.
"""

from __future__ import annotations

import bisect
import datetime as dt
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from analytics_nb.client import ApiClient, DefinitionsHistoryWarning, HistoryGap, as_moment, warn_gaps
from analytics_nb.errors import ValidationError
from analytics_nb.simulation._definitions import (
    Definitions,
    flag_references,
    live_flags,
    load_definitions,
)
from analytics_nb.simulation._errors import SimulationInputError
from analytics_nb.simulation._history import (
    _answers,
    _entry_at,
    _flag_and_dependencies,
    _relevant_gaps,
    _resolve,
    _sync_client,
    _unknown_at,
    _version_pair,
    _window_entries,
)
from analytics_nb.simulation._inputs import normalise_property_sets, read_table
from analytics_nb.simulation._local import MissingColumns, check_missing_columns

__all__ = ["CAUSES", "FlagAudit", "flag_audit"]

#: The causes a mismatch can be given, in the order they are tried (see the module docstring).
CAUSES = (
    "stale_local_definitions",
    "definitions_changed",
    "experience_continuity",
    "person_properties_changed",
    "unknown",
)
_CALL_COLUMNS = [
    "uuid",
    "timestamp",
    "distinct_id",
    "recorded",
    "expected",
    "match",
    "version_at_call",
    "version_recorded",
    "locally_evaluated",
    "cause",
    "detail",
]


@dataclass(repr=False)
class FlagAudit:
    """The audit of a flag's recorded calls over a window.

    ``calls``: one row per recorded call (``uuid``, ``timestamp``, ``distinct_id``, ``recorded``,
    ``expected``, ``match`` (NA: not compared), ``version_at_call`` (the version in force),
    ``version_recorded`` (``$feature_flag_version``), ``locally_evaluated``, ``cause``, ``detail``).
    ``mismatches``: the rows of ``calls`` whose ``match`` is False. ``source``: ``"flag_evaluations"`` or
    ``"events"``, the table read (``source_note`` says why). ``properties_from``: ``"persons="`` or
    ``"client.persons (today's properties)"``. ``summary``: one line. Frames write to CSV as they are.
    """

    flag: str
    start: dt.datetime
    end: dt.datetime
    source: str
    source_note: str
    properties_from: str
    calls: pd.DataFrame
    mismatches: pd.DataFrame
    summary: str
    gaps: list[dict[str, Any]] = field(default_factory=list)

    def __repr__(self) -> str:
        return f"FlagAudit({self.summary})"

    def _repr_html_(self) -> str:
        return f"<div><p><b>{self.summary}</b></p>{self.mismatches.to_html(index=False)}</div>"


def _text(value: str) -> str:
    """A HogQL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _moment_literal(moment: dt.datetime) -> str:
    return f"toDateTime({_text(moment.astimezone(dt.UTC).isoformat(timespec='microseconds'))})"


def _calls_query(table: str, key: str, begin: dt.datetime, finish: dt.datetime) -> str:
    """The HogQL of the flag's calls in ``[begin, finish]`` from ``table``."""
    window = f"timestamp >= {_moment_literal(begin)} AND timestamp <= {_moment_literal(finish)}"
    extra = (
        "properties.$feature_flag_version AS version_recorded, properties.locally_evaluated AS local_a, "
        "properties.$feature_flag_evaluated_locally AS local_b"
    )
    if table == "flag_evaluations":
        return (
            f"SELECT uuid, distinct_id, timestamp, response, {extra} FROM flag_evaluations "
            f"WHERE flag_key = {_text(key)} AND {window}"
        )
    return (
        f"SELECT uuid, distinct_id, timestamp, properties.$feature_flag_response AS response, {extra} "
        f"FROM events WHERE event = '$feature_flag_called' AND properties.$feature_flag = {_text(key)} "
        f"AND {window}"
    )


def _read_calls(
    api: ApiClient, key: str, begin: dt.datetime, finish: dt.datetime
) -> tuple[pd.DataFrame, str, str]:
    """The recorded calls, the table read and why: ``flag_evaluations`` when the project is served it and
    it holds calls of the flag in the window, else ``events``."""
    try:
        frame = api.query(_calls_query("flag_evaluations", key, begin, finish), page_by="uuid")
    except ValidationError as exc:
        note = f"flag_evaluations refused ({(exc.detail or exc.message)[:120]}); read events"
    else:
        if len(frame):
            return frame, "flag_evaluations", _retention_note(begin)
        note = "flag_evaluations holds no call of the flag in the window; read events"
    return api.query(_calls_query("events", key, begin, finish), page_by="uuid"), "events", note


#: How long PostHog keeps a row of `flag_evaluations` (the table's description, PostHog #88127).
RETENTION = dt.timedelta(days=90)


def _retention_note(begin: dt.datetime) -> str:
    """The note on reading `flag_evaluations`; a warning when the window starts before its retention."""
    oldest = dt.datetime.now(dt.UTC) - RETENTION
    if begin >= oldest:
        return "flag_evaluations holds the calls (PostHog keeps them 90 days)"
    warnings.warn(
        f"flag_audit: the window starts before {oldest:%Y-%m-%d}, and flag_evaluations keeps calls 90 days: "
        "calls older than that are gone from it and are not audited. Audit the last 90 days, or export "
        "older calls from events if the project still writes them there.",
        UserWarning,
        stacklevel=4,
    )
    return f"flag_evaluations holds the calls; those before {oldest:%Y-%m-%d} are gone (90-day retention)"


def _recorded_value(text: Any) -> Any:
    """A recorded response as the engine answers: 'true'/'false' -> bool, a variant key as is, null -> NA."""
    if text is None or pd.isna(text) or text in ("null", ""):
        return pd.NA
    return {"true": True, "false": False}.get(str(text), str(text))


def _truthy_text(value: Any) -> bool:
    return value is not None and not pd.isna(value) and str(value).lower() == "true"


def _persons_frame(api: ApiClient, persons: Any, flags: list[dict[str, Any]], ids: set[str]) -> pd.DataFrame:
    """The persons of the recorded calls with the properties the flag reads (none read without calls)."""
    if not ids:
        return pd.DataFrame({"distinct_id": pd.Series([], dtype="string")})
    if persons is None:
        frame = api.persons(flags=flags).drop(columns=["person_id"])
    else:
        frame, _ = read_table(persons)
    if "distinct_id" not in frame.columns:
        raise SimulationInputError("persons: needs a distinct_id column (one row per distinct id).")
    frame = frame[frame["distinct_id"].astype(str).isin(ids)]
    if frame["distinct_id"].duplicated().any():
        raise SimulationInputError("persons: a distinct_id appears twice; give one row per distinct id.")
    return frame.reset_index(drop=True)


@dataclass
class _Versions:
    """The flag's definitions over the window: moments (the start, then each change), definitions, the
    version in force after each moment, and each moment's answers by distinct id."""

    moments: list[dt.datetime]
    defs: list[Definitions]
    versions: list[Any]
    answers: list[dict[str, Any]] = field(default_factory=list)


def _read_versions(
    api: ApiClient, current: Any, begin: dt.datetime, finish: dt.datetime
) -> tuple[_Versions, list[Any], list[dict[str, Any]]]:
    """The moments, definitions (one `definitions_at` read) and versions in force; the gaps about the flag."""
    entries = _window_entries(api, current.id, begin, finish)
    moments = [begin, *(_entry_at(e) for e in entries)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DefinitionsHistoryWarning)
        responses = api.feature_flags.definitions_at(moments)
    for other in caught:
        if not issubclass(other.category, DefinitionsHistoryWarning):
            warnings.warn(other.message, other.category, stacklevel=3)
    defs_list = [live_flags(load_definitions(r)) for r in responses]
    gaps = _relevant_gaps(responses, defs_list, current)
    versions = [_flag_of(defs_list[0], current.id).get("version")]
    versions += [_version_pair(e)[1] for e in entries]
    return _Versions(moments, defs_list, versions), list(responses), gaps


def _flag_of(defs: Definitions, flag_id: Any) -> dict[str, Any]:
    return next((f for f in defs.flags if str(f.get("id")) == str(flag_id)), {})


def _reads_person_properties(defs: Definitions, flag: dict[str, Any]) -> bool:
    """Whether the flag (its dependencies and cohorts included) reads a person property."""
    refs = flag_references(defs, flag["key"])
    return bool(refs["person"] or refs["cohort_person"])


def _cause(call: dict[str, Any], seg: int, vers: _Versions, flag_id: Any, stale_after: dt.timedelta) -> str:
    """The first cause of ``CAUSES`` that applies to a mismatched call."""
    in_force, recorded_v = vers.versions[seg], call["version_recorded"]
    older_recorded = isinstance(recorded_v, int) and isinstance(in_force, int) and recorded_v < in_force
    changed_lately = seg > 0 and call["timestamp"] - vers.moments[seg] <= stale_after
    if call["locally_evaluated"] and (older_recorded or changed_lately):
        return "stale_local_definitions"
    earlier = [vers.answers[j].get(call["distinct_id"], pd.NA) for j in range(seg)]
    if any(_same(a, call["recorded"]) for a in earlier) or (
        isinstance(recorded_v, int) and isinstance(in_force, int) and recorded_v != in_force
    ):
        return "definitions_changed"
    flag = _flag_of(vers.defs[seg], flag_id)
    if flag.get("ensure_experience_continuity"):
        return "experience_continuity"
    if flag and _reads_person_properties(vers.defs[seg], flag):
        return "person_properties_changed"
    return "unknown"


def _plain(value: Any) -> Any:
    """A boolean of any kind (numpy's too) as bool, anything else as it is."""
    return bool(value) if isinstance(value, bool | np.bool_) else value


def _same(a: Any, b: Any) -> bool:
    """Whether two answers are the same (True is not the variant 'true'; NA is never the same)."""
    if a is None or b is None or pd.isna(a) or pd.isna(b):
        return False
    a, b = _plain(a), _plain(b)
    return type(a) is type(b) and bool(a == b)


def _int_or_none(value: Any) -> int | None:
    try:
        return None if value is None or pd.isna(value) else int(float(value))
    except (TypeError, ValueError):
        return None


def _compare_calls(
    raw: pd.DataFrame, vers: _Versions, flag_id: Any, known: set[str], stale_after: dt.timedelta
) -> pd.DataFrame:
    """One row per call: recorded, expected, match, cause."""
    rows = []
    for rec in raw.to_dict("records"):
        ts = pd.Timestamp(rec["timestamp"]).to_pydatetime()
        seg = max(0, bisect.bisect_right(vers.moments, ts) - 1)
        did = str(rec["distinct_id"])
        call = {
            "uuid": str(rec["uuid"]),
            "timestamp": ts,
            "distinct_id": did,
            "recorded": _recorded_value(rec["response"]),
            "expected": vers.answers[seg].get(did, pd.NA),
            "version_at_call": _int_or_none(vers.versions[seg]),
            "version_recorded": _int_or_none(rec.get("version_recorded")),
            "locally_evaluated": _truthy_text(rec.get("local_a")) or _truthy_text(rec.get("local_b")),
        }
        call["match"], call["cause"], call["detail"] = _judge(call, seg, vers, flag_id, known, stale_after)
        rows.append(call)
    frame = pd.DataFrame(rows, columns=_CALL_COLUMNS)
    frame["match"] = frame["match"].astype("boolean")
    for name in ("version_at_call", "version_recorded"):
        frame[name] = frame[name].astype("Int64")
    return frame.sort_values(["timestamp", "uuid"], ignore_index=True)


def _judge(
    call: dict[str, Any],
    seg: int,
    vers: _Versions,
    flag_id: Any,
    known: set[str],
    stale_after: dt.timedelta,
) -> tuple[Any, Any, str]:
    """``(match, cause, detail)`` of one call."""
    if call["distinct_id"] not in known:
        return pd.NA, pd.NA, "not compared: the distinct id is not among the persons"
    if pd.isna(call["recorded"]):
        return pd.NA, pd.NA, "not compared: the recorded response is null (the flag was not evaluated)"
    if pd.isna(call["expected"]):
        return pd.NA, pd.NA, "not compared: the engine cannot know the answer (a property is missing)"
    if _same(call["expected"], call["recorded"]):
        return True, pd.NA, ""
    cause = _cause(call, seg, vers, flag_id, stale_after)
    return False, cause, _DETAILS[cause]


_DETAILS = {
    "stale_local_definitions": "evaluated locally with definitions older than the ones in force",
    "definitions_changed": "the recorded answer is what an earlier version in the window gives",
    "experience_continuity": "the flag keeps each person's first answer (ensure_experience_continuity)",
    "person_properties_changed": "the flag reads person properties, which may have differed at the call",
    "unknown": "no documented cause applies",
}


def flag_audit(
    flag: int | str,
    start: dt.datetime | str,
    end: dt.datetime | str,
    *,
    client: Any,
    persons: Any = None,
    mode: Literal["server", "sdk"] = "server",
    missing_columns: MissingColumns = "unknown",
    stale_after: dt.timedelta = dt.timedelta(minutes=5),
) -> FlagAudit:
    """The recorded ``$feature_flag_called`` of ``flag`` between ``start`` and ``end`` (both included)
    against the engine's answer on the definitions in force at each call (see the module docstring).

    Args:
        flag: The flag's id or key (a live flag).
        start: The window's start (timezone-aware datetime or ISO text).
        end: The window's end.
        client: A sync ``Client`` with a key that may query (``query:read``) and read the flag's history.
        persons: One row per distinct id with the property columns (any family `simulate` takes). None:
            the project's persons (``client.persons``): **today's** properties.
        mode: ``"server"`` (the flags service) or ``"sdk"`` (the SDKs' local evaluation).
        missing_columns: ``"unknown"`` (NA, not compared) or ``"not_set"`` for properties ``persons`` lack.
        stale_after: How soon after a change a locally evaluated call counts as made on stale definitions.

    Returns:
        A `FlagAudit`.
    """
    api = _sync_client(client, "flag_audit")
    begin, finish = as_moment("start", start), as_moment("end", end)
    if finish <= begin:
        raise SimulationInputError(f"end ({finish.isoformat()}) must be after start ({begin.isoformat()}).")
    missing_columns = check_missing_columns(missing_columns)
    current = _resolve(api, flag)
    raw, source, note = _read_calls(api, current.key, begin, finish)
    vers, responses, gaps = _read_versions(api, current, begin, finish)
    warn_gaps([HistoryGap.from_payload(g) for g in gaps], stacklevel=2)
    flags = [f for defs in vers.defs for f in _flag_and_dependencies(defs, current.id)[1]]
    frame = _persons_frame(api, persons, flags, set(raw["distinct_id"].astype(str)))
    known = set(frame["distinct_id"].astype(str))
    sets = normalise_property_sets(read_table(frame)[0]) if len(frame) else None
    for i, (defs, moment) in enumerate(zip(vers.defs, vers.moments, strict=True)):
        if sets is None:
            vers.answers.append({})
            continue
        values = _answers(
            sets,
            defs,
            current.id,
            moment,
            unknown=_unknown_at(responses[i], current),
            mode=mode,
            missing_columns=missing_columns,
        )
        vers.answers.append(dict(zip(sets.frame["distinct_id"].astype(str), values, strict=True)))
    calls = _compare_calls(raw, vers, current.id, known, stale_after)
    origin = "client.persons (today's properties)" if persons is None else "persons="
    return _audit(current.key, begin, finish, source, note, origin, calls, gaps)


def _audit(
    key: str,
    begin: dt.datetime,
    finish: dt.datetime,
    source: str,
    note: str,
    origin: str,
    calls: pd.DataFrame,
    gaps: Sequence[dict[str, Any]],
) -> FlagAudit:
    mismatches = calls[calls["match"].eq(False).fillna(False)].reset_index(drop=True)
    compared = int(calls["match"].notna().sum())
    causes = mismatches["cause"].value_counts()
    by_cause = ", ".join(f"{c} {int(causes[c])}" for c in CAUSES if c in causes)
    summary = (
        f"{key}: {len(calls):,} calls from {source}, {compared:,} compared, {len(mismatches):,} mismatches"
        + (f" ({by_cause})" if by_cause else "")
        + f", {len(calls) - compared:,} not compared; properties from {origin}"
    )
    return FlagAudit(key, begin, finish, source, note, origin, calls, mismatches, summary, list(gaps))

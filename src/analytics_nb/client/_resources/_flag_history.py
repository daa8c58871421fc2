"""Flag definitions as they were at past moments, rebuilt from the service's version history.

PostHog keeps a flag's history in its activity log: every write is a ``FeatureFlag`` entry whose ``changes``
give each changed field's ``before`` and ``after``, ``version`` included; ``GET .../feature_flags/:id/
versions/:n/`` rebuilds version ``n`` from it (products/feature_flags/backend/version_history.py,
``reconstruct_flag_at_version``; the ``versions`` action of products/feature_flags/backend/api/
feature_flag.py). The version in force at a moment is found as ``find_version_at_timestamp`` does there:
the entries at or before the moment count, so the version at ``t`` is the ``before`` of the first
version-bumping entry after ``t`` (the current version when there is none); a flag created after ``t`` did
not exist, and one whose first later entry is ``restored`` was deleted at ``t``.

`HistoryReader` reads what it needs once (today's definitions for cohorts and group types, the live flags,
the project's flag activity back to the earliest moment asked) and then answers any number of moments with
one ``versions/:n`` call per (flag, version) it has not seen. Where ``versions/:n`` is not served (404 on an
older instance) or refuses (422), the version is rebuilt here from the activity log's before/after, with
the same chain check (each undone entry must lead into the version the walk stands at); where neither can
rebuild it, the flag is left out and named. What the history cannot give is said in one
`DefinitionsHistoryWarning` naming the flags and the reason: a flag deleted since (the service serves no
history for it), a flag whose history is incomplete, and each cohort a rebuilt flag uses (cohorts are read
as they are today: the client does not read a cohort's own history).
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from analytics_nb.errors import NotFoundError, PostHogError

if TYPE_CHECKING:
    from analytics_nb.client._resources._feature_flags import FeatureFlags

__all__ = [
    "DefinitionsHistoryWarning",
    "HistoryGap",
    "HistoryReader",
    "as_moment",
    "entry_time",
    "rebuild_from_activity",
    "version_change",
]

#: The fields a version carries (products/feature_flags/backend/version_history.py
#: ``RECONSTRUCTABLE_FIELDS``, the ones the local-evaluation shape needs among them).
TRACKED_FIELDS = (
    "name",
    "key",
    "filters",
    "active",
    "deleted",
    "version",
    "ensure_experience_continuity",
    "is_remote_configuration",
    "has_encrypted_payloads",
    "evaluation_runtime",
    "bucketing_identifier",
)
#: Entries that bump a flag's version (the activities ``find_version_at_timestamp`` reads).
VERSION_ACTIVITIES = frozenset({"updated", "deleted", "restored"})


class DefinitionsHistoryWarning(UserWarning):
    """Definitions asked for a past moment could not be rebuilt exactly: the message names each flag (or
    cohort) and why (deleted since, incomplete history, a cohort read as it is today)."""


@dataclass(frozen=True)
class HistoryGap:
    """One thing the history could not give: ``flag`` (key, or ``#id``), ``reason``, the ``moment``, the
    ``cohort`` read as today (None: the flag is left out) and the flag's id."""

    flag: str
    reason: str
    moment: dt.datetime
    cohort: str | None = None
    flag_id: str | None = None

    @classmethod
    def from_payload(cls, record: dict[str, Any]) -> HistoryGap:
        """A gap from its `gaps_payload` record (as kept on rebuilt definitions)."""
        return cls(
            str(record.get("flag")),
            str(record.get("reason")),
            as_moment("moment", record.get("moment")),
            None if record.get("cohort") is None else str(record["cohort"]),
            None if record.get("flag_id") is None else str(record["flag_id"]),
        )


def as_moment(name: str, value: Any) -> dt.datetime:
    """A timezone-aware datetime from a datetime or ISO text (a ValueError naming ``name`` otherwise: a naive
    time is ambiguous, and an hour off moves every edit made in that hour)."""
    moment = value
    if isinstance(value, str):
        try:
            moment = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(
                f"{name}={value!r} is not an ISO date-time, e.g. '2026-11-03T09:00:00Z'."
            ) from None
    if isinstance(moment, dt.date) and not isinstance(moment, dt.datetime):
        raise ValueError(
            f"{name}={value!r} is a date; give a date-time with a timezone, e.g. '2026-11-03T00:00Z'."
        )
    if not isinstance(moment, dt.datetime):
        raise ValueError(f"{name} must be a datetime or ISO text, got {value!r}.")
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(
            f"{name}={value!r} has no timezone; give one, e.g. datetime(2026, 11, 3, 9, tzinfo=UTC) or "
            "'2026-11-03T09:00:00Z' (PostHog records its history in UTC)."
        )
    return moment.astimezone(dt.UTC)


def entry_time(entry: Any) -> dt.datetime | None:
    """An activity entry's ``created_at`` (None when it has none or it is not a date-time)."""
    raw = entry.get("created_at") if isinstance(entry, dict) else None
    if not isinstance(raw, str):
        return None
    try:
        moment = dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.UTC)


def _changes(entry: Any) -> list[dict[str, Any]] | None:
    detail = entry.get("detail") if isinstance(entry, dict) else None
    changes = detail.get("changes") if isinstance(detail, dict) else None
    if not isinstance(changes, list) or not all(isinstance(c, dict) for c in changes):
        return None
    return changes


def version_change(entry: Any) -> tuple[Any, Any] | None:
    """``(before, after)`` of an entry's ``version`` change (None when it has none)."""
    for change in _changes(entry) or []:
        if change.get("field") == "version":
            return change.get("before"), change.get("after")
    return None


def rebuild_from_activity(
    current: dict[str, Any], later: Sequence[dict[str, Any]], target: int
) -> dict[str, Any] | None:
    """The tracked fields of a flag at version ``target``, from its ``current`` wire shape and its entries
    newer than that version (any order): each is undone newest first by putting back its changes' ``before``.
    None when the entries do not chain from the current version down to ``target`` (one is missing or has no
    changes): an incomplete history rebuilds nothing rather than a wrong version."""
    fields = {f: copy.deepcopy(current.get(f)) for f in TRACKED_FIELDS}
    bumps = [e for e in later if version_change(e) is not None]
    bumps.sort(key=lambda e: version_change(e)[1] or 0, reverse=True)  # type: ignore[index]
    for entry in bumps:
        before, after = version_change(entry) or (None, None)
        if fields.get("version") == target:
            break
        if after != fields.get("version") or not isinstance(before, int):
            return None
        for change in _changes(entry) or []:
            if change.get("field") in TRACKED_FIELDS:
                fields[change["field"]] = copy.deepcopy(change.get("before"))
    return fields if fields.get("version") == target else None


def _makes_version(entry: Any) -> bool:
    """Whether an entry makes a version: the creation (version 1) or a version change."""
    return entry.get("activity") == "created" or version_change(entry) is not None


def local_shape(flag: dict[str, Any], project_id: int | None) -> dict[str, Any]:
    """A wire flag (list row or version body) in the shape ``/flags/definitions`` serves a flag."""
    filters = flag.get("filters")
    return {
        "id": flag.get("id"),
        "team_id": project_id,
        "name": flag.get("name") or "",
        "key": flag.get("key"),
        "filters": copy.deepcopy(filters) if isinstance(filters, dict) else {"groups": []},
        "deleted": bool(flag.get("deleted") or False),
        "active": bool(flag.get("active", True)),
        "ensure_experience_continuity": bool(flag.get("ensure_experience_continuity") or False),
        "has_encrypted_payloads": bool(flag.get("has_encrypted_payloads") or False),
        "version": flag.get("version"),
        "evaluation_runtime": flag.get("evaluation_runtime") or "all",
        "bucketing_identifier": flag.get("bucketing_identifier") or "distinct_id",
    }


def cohort_ids(filters: Any) -> list[str]:
    """The cohort ids a flag's conditions use (a ``cohort`` filter's value), in order."""
    out: list[str] = []
    for section in ("groups", "super_groups", "holdout_groups"):
        for group in (filters or {}).get(section) or [] if isinstance(filters, dict) else []:
            for prop in (group or {}).get("properties") or [] if isinstance(group, dict) else []:
                if (
                    isinstance(prop, dict)
                    and prop.get("type") == "cohort"
                    and str(prop.get("value")) not in out
                ):
                    out.append(str(prop.get("value")))
    return out


@dataclass
class _Flag:
    """One flag's history as read: its current wire shape (None: deleted now) and its later entries."""

    id: str
    current: dict[str, Any] | None
    entries: list[dict[str, Any]] = field(default_factory=list)  # newest first, after `since`
    own: list[dict[str, Any]] | None = None  # its own activity, newest first, back past `since` (read once)

    @property
    def name(self) -> str:
        if self.current is not None:
            return str(self.current.get("key"))
        for entry in self.entries:
            detail = entry.get("detail")
            if isinstance(detail, dict) and detail.get("name"):
                return str(detail["name"])
        return f"#{self.id}"


class HistoryReader:
    """The project's flags at past moments (see the module docstring); build it with the earliest moment
    that will be asked (``since``), `load` once, then `at` for each moment."""

    def __init__(self, resource: FeatureFlags, since: dt.datetime) -> None:
        self.resource = resource
        self.since = since
        self.today: Any = None
        self.flags: dict[str, _Flag] = {}
        self._versions: dict[tuple[str, int], dict[str, Any] | None] = {}
        self._versions_served = True

    async def load(self) -> None:
        """Today's definitions (cohorts, group types), the live flags, the activity back to ``since``."""
        self.today = await self.resource.definitions()
        live = await self.resource.live_records()
        self.flags = {str(f.get("id")): _Flag(str(f.get("id")), f) for f in live}
        for entry in await self.resource.activity_records(None, since=self.since):
            item = str(entry.get("item_id"))
            self.flags.setdefault(item, _Flag(item, None)).entries.append(entry)

    def _later(self, flag: _Flag, moment: dt.datetime) -> list[dict[str, Any]]:
        return [e for e in flag.entries if (entry_time(e) or moment) > moment]

    async def at(self, moment: dt.datetime, gaps: list[HistoryGap]) -> list[dict[str, Any]]:
        """The flags in force at ``moment`` in the local-evaluation shape; what could not be rebuilt is added
        to ``gaps``."""
        out: list[dict[str, Any]] = []
        for flag in self.flags.values():
            built = await self._flag_at(flag, moment, gaps)
            if built is not None:
                out.append(built)
        return out

    async def _flag_at(
        self, flag: _Flag, moment: dt.datetime, gaps: list[HistoryGap]
    ) -> dict[str, Any] | None:
        later = self._later(flag, moment)
        if any(e.get("activity") == "created" for e in later):
            return None  # created after the moment: it did not exist
        current = flag.current
        if current is None:
            if later:  # deleted since; the service serves no version of a deleted flag
                gaps.append(
                    HistoryGap(
                        flag.name,
                        "deleted since (or no longer in the flag list: archived, internal): its past "
                        "definition is not read",
                        moment,
                        flag_id=flag.id,
                    )
                )
            return None
        created = entry_time({"created_at": current.get("created_at")})
        if created is not None and created > moment:
            return None
        bumps = sorted(
            (e for e in later if version_change(e) is not None), key=lambda e: entry_time(e) or moment
        )
        if not bumps:
            return self._today_shape(current)
        if bumps[0].get("activity") == "restored":
            return None  # deleted at the moment
        target = (version_change(bumps[0]) or (None, None))[0]
        if not isinstance(target, int) or target != await self._version_then(flag, moment):
            # the entries after the moment and the ones at or before it disagree on the version then: one is
            # missing (find_version_at_timestamp reads only the earlier ones: it would not notice)
            reason = "the activity log is incomplete around this moment (an entry is missing)"
            gaps.append(HistoryGap(flag.name, reason, moment, flag_id=flag.id))
            return None
        fields = await self._version(flag, target, later)
        if fields is None:
            gaps.append(
                HistoryGap(
                    flag.name,
                    f"version {target} cannot be rebuilt: the activity log is incomplete",
                    moment,
                    flag_id=flag.id,
                )
            )
            return None
        return local_shape({**fields, "id": current.get("id")}, current.get("team_id"))

    async def _version_then(self, flag: _Flag, moment: dt.datetime) -> int | None:
        """The version in force at ``moment`` read from the entries at or before it, as
        ``find_version_at_timestamp`` does: the newest version change's ``after`` (1 for the creation, or when
        none is logged). The flag's own activity is read until an entry at or before ``since`` (once)."""
        if flag.own is None:
            flag.own = []
            async for page in self.resource._activity_pages(int(flag.id)):
                flag.own.extend(page)
                if any((entry_time(e) or self.since) <= self.since and _makes_version(e) for e in page):
                    break
        for entry in flag.own:
            if (entry_time(entry) or moment) <= moment and _makes_version(entry):
                after = (version_change(entry) or (None, 1))[1]
                return after if isinstance(after, int) else None
        return 1

    def _today_shape(self, current: dict[str, Any]) -> dict[str, Any]:
        """The flag as today's definitions serve it (they resolve dependencies), else from its list row."""
        for served in getattr(self.today, "flags", None) or []:
            wire = served.to_wire() if hasattr(served, "to_wire") else served
            if str(wire.get("id")) == str(current.get("id")):
                return dict(wire)
        return local_shape(current, current.get("team_id"))

    async def _version(self, flag: _Flag, target: int, later: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The tracked fields of ``flag`` at ``target``: ``versions/:n`` where served, else rebuilt here."""
        cache_key = (flag.id, target)
        if cache_key in self._versions:
            return self._versions[cache_key]
        fields: dict[str, Any] | None = None
        if self._versions_served:
            try:
                fields = (await self.resource.version(int(flag.id), target)).to_wire(exclude_unset=False)
            except NotFoundError:
                self._versions_served = False  # in range for a live flag: the instance has no versions/:n
            except PostHogError as exc:
                if exc.status not in (400, 422):
                    raise
        if fields is None and flag.current is not None:
            fields = rebuild_from_activity(flag.current, flag.entries, target)
        self._versions[cache_key] = fields
        return fields

    def cohort_gaps(self, flags: Iterable[dict[str, Any]], moment: dt.datetime) -> list[HistoryGap]:
        """One gap per (flag, cohort) the rebuilt flags use: cohorts are today's."""
        return [
            HistoryGap(
                f["key"], "uses a cohort read as it is today (its history is not read)", moment, cohort=c
            )
            for f in flags
            for c in cohort_ids(f.get("filters"))
        ]


def _listing(gaps: Sequence[HistoryGap]) -> str:
    lines: dict[str, list[str]] = {}
    for gap in gaps:
        what = f"{gap.flag} (cohort {gap.cohort})" if gap.cohort else gap.flag
        lines.setdefault(f"{what}: {gap.reason}", []).append(gap.moment.isoformat())
    return "; ".join(f"{text} [at {', '.join(sorted(set(at)))}]" for text, at in lines.items())


def warn_gaps(gaps: Sequence[HistoryGap], stacklevel: int = 3) -> None:
    """One `DefinitionsHistoryWarning` naming each flag (and cohort) and why, when there are gaps: first the
    flags left out (their answers cannot be simulated), then those whose cohorts are today's."""
    if not gaps:
        return
    left_out = [g for g in gaps if g.cohort is None]
    cohorts = [g for g in gaps if g.cohort is not None]
    parts = []
    if left_out:
        names = sorted({g.flag for g in left_out})
        parts.append(
            f"{len(names)} flag(s) left out, their past definition is unknown ({', '.join(names)}): "
            f"{_listing(left_out)}. They are absent from those definitions: their answers are not simulated."
        )
    if cohorts:
        names = sorted({g.flag for g in cohorts})
        parts.append(
            f"{len(names)} flag(s) use cohorts read as they are today ({', '.join(names)}): "
            f"{_listing(cohorts)}. A cohort edited since gives today's members."
        )
    warnings.warn(" ".join(parts), DefinitionsHistoryWarning, stacklevel=stacklevel)


def gaps_payload(gaps: Sequence[HistoryGap]) -> list[dict[str, Any]]:
    """The gaps as JSON-ready dicts (kept on the rebuilt definitions as ``history_gaps``)."""
    return [
        {
            "flag": g.flag,
            "flag_id": g.flag_id,
            "cohort": g.cohort,
            "reason": g.reason,
            "moment": g.moment.isoformat(),
        }
        for g in gaps
    ]


def dedupe_key(entry: dict[str, Any]) -> str:
    """An activity entry's identity: its ``id``, else its time, item, activity and detail."""
    if entry.get("id") is not None:
        return str(entry["id"])
    return json.dumps(
        [entry.get("created_at"), entry.get("item_id"), entry.get("activity"), entry.get("detail")]
    )

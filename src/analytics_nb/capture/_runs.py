"""Capture runs: which uuids the rows of a ``capture_frame`` call get, and which rows were already sent, from
the run journal on disk (``capture._journal``), so that a run outlives the kernel that started it.

A row's *content identity* is a digest of the fields that are sent (event, distinct_id, timestamp, its own
uuid, properties); its *core key* the same without properties (``capture._events``). A run (a UUIDv7
*run key*) holds *slots*: slot ``(core, k)`` is the k-th event of that core key in the run, and its uuid is
``slot_uuids(core, k, run key)``. The journal records each run's slots before they are sent and the slots
the service acknowledged after each answer. A call:

* ``again=True`` (or ``resume=False``): a new run, every row a new slot, new events.
* ``resume=<report or run key>``: that run. Rows are matched to its slots by content identity (the index
  label, the order, inserted rows and swapped duplicates change nothing), then the rest by core key (a row
  whose properties changed, e.g. a column added, takes the slot of its event); each slot is taken once, so
  two identical rows are two events. Rows whose slot was acknowledged are ``already_sent`` (not sent
  again); the others are sent with the slot's uuid (the service keeps one event per uuid, so a batch that
  was in flight when the kernel died is not doubled); rows without a slot get new ones.
* ``resume=None`` (the default): the newest unfinished run of this project holding any row of the call
  (by content) is resumed as above, with a one-line ``ResumedRunWarning`` saying how many rows it had
  already sent; rows the journal shows acknowledged by other runs are ``already_sent``, with an
  ``AlreadySentWarning`` ("all N rows were sent at T": nothing is sent; ``again=True`` sends them again).
"""

from __future__ import annotations

import datetime as dt
import uuid as uuid_mod
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import numpy as np
import pandas as pd

from analytics_nb.capture._events import PreparedFrame, first_slots
from analytics_nb.capture._journal import (
    JournalRun,
    JournalWriter,
    load_runs,
    occurrence_ranks,
    prune,
    target_lock,
)
from analytics_nb.capture._values import new_uuid7, slot_uuids

__all__ = ["AlreadySentWarning", "Plan", "Resume", "ResumedRunWarning", "choose_run"]

Resume: TypeAlias = pd.DataFrame | str | Literal[False] | None
"""``capture_frame(resume=...)``: a report or its run key (resume that run), False (a new run, as
``again=True``), None (resume an unfinished run of this project found in the journal, else a new run)."""


class ResumedRunWarning(UserWarning):
    """``capture_frame`` resumed a run that had not finished (found in the journal, e.g. after a kernel
    death or Ctrl-C): rows it had stored are not sent again. ``run_key`` names the run."""

    def __init__(self, message: str, *, run_key: str = "", already_sent: int = 0) -> None:
        super().__init__(message)
        self.run_key = run_key
        self.already_sent = already_sent


class AlreadySentWarning(UserWarning):
    """Rows of a ``capture_frame`` call were already stored by a finished run (the journal says so): they
    are not sent again (report status ``already_sent``); ``again=True`` sends them again as new events.
    ``count`` is how many rows, ``run_key`` the newest run that sent them."""

    def __init__(self, message: str, *, run_key: str = "", count: int = 0) -> None:
        super().__init__(message)
        self.run_key = run_key
        self.count = count


@dataclass
class Plan:
    """What ``choose_run`` decided: whether a run was resumed, a warning to show, the journal writer of the
    run, each row's slot in it (position -> slot number) and the rows already sent (position -> reason)."""

    resumed: bool = False
    warning: UserWarning | None = None
    writer: JournalWriter | None = None
    slot_of: dict[int, int] = field(default_factory=dict)
    already: dict[int, str] = field(default_factory=dict)


def _last_written(run: JournalRun) -> str:
    """When ``run`` last recorded an answer (its file's time; its start for a run kept in memory)."""
    at = dt.datetime.fromtimestamp(run.mtime, dt.UTC) if run.mtime else run.at
    return _when(at)


def _when(at: dt.datetime) -> str:
    return at.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _explicit_key(resume: Any) -> str:
    """The run key of ``resume=`` (a report or a key); ValueError naming the fix."""
    if isinstance(resume, pd.DataFrame):
        key = resume.attrs.get("run_key")
        if not key:
            raise ValueError(
                "resume= got a report without a run key (report.attrs['run_key']): it was made with "
                "uuids='random', every row had its own uuid, or by an older version; re-send only "
                "df[report['status'] != 'sent'] instead"
            )
        return str(key)
    if isinstance(resume, str):
        try:
            return str(uuid_mod.UUID(resume.strip()))
        except ValueError:
            raise ValueError(
                f"resume={resume!r} is not a run key; pass the report (resume=report) or its "
                "report.attrs['run_key'] (a UUID)"
            ) from None
    raise TypeError(
        f"resume= takes a capture report, its run key (text), False or None, not {type(resume).__name__}"
    )


def _match(
    rows: list[int], keys: list[int | None], slot_keys: np.ndarray, free: np.ndarray
) -> dict[int, int]:
    """Each row of ``rows`` paired with a ``free`` slot whose key equals the row's (``keys[pos]``), each
    slot at most once: the r-th row of a key (in ``rows`` order) takes the r-th free slot of that key (in
    slot order); rows without one are left out. Vectorized one occurrence level at a time."""
    if not rows:
        return {}
    row_keys = np.array([keys[pos] or 0 for pos in rows], dtype=np.uint64)
    free_slots = np.flatnonzero(free)
    free_keys = slot_keys[free_slots].astype(np.uint64)
    row_ranks, slot_ranks = occurrence_ranks(row_keys), occurrence_ranks(free_keys)
    positions = np.asarray(rows, dtype=np.int64)
    out: dict[int, int] = {}
    for level in range(int(min(row_ranks.max(), slot_ranks.max(initial=-1))) + 1):
        at_rows = np.flatnonzero(row_ranks == level)
        at_slots = np.flatnonzero(slot_ranks == level)  # one slot per key at a level: keys are unique
        level_keys = free_keys[at_slots]
        order = np.argsort(level_keys)
        sorted_keys = level_keys[order]
        where = np.searchsorted(sorted_keys, row_keys[at_rows]).clip(max=max(sorted_keys.size - 1, 0))
        hit = sorted_keys.size > 0 and sorted_keys[where] == row_keys[at_rows]
        hit = np.asarray(hit, dtype=bool)
        matched_slots = free_slots[at_slots[order[where[hit]]]]
        out.update(zip(positions[at_rows[hit]].tolist(), matched_slots.tolist(), strict=True))
    return out


class _Chooser:
    """One call's choice of run, under the target's lock (see the module docstring)."""

    def __init__(self, prepared: PreparedFrame, target: str) -> None:
        self.prepared = prepared
        self.target = target
        self.rows = prepared.identified()
        self.plan = Plan()
        self.senders: dict[str, tuple[JournalRun, int]] = {}  # run key -> (run, rows already sent by it)

    def take(self, run: JournalRun, by_core: bool) -> list[int]:
        """Give rows the slots of ``run`` (content first, then core key with ``by_core``); mark the rows
        whose slot was stored as already sent; returns the rows left without a slot."""
        p = self.prepared
        slot_of = _match(self.rows, p.content_ids, run.contents, np.ones(run.size, dtype=bool))
        if by_core:
            free = np.ones(run.size, dtype=bool)
            free[list(slot_of.values())] = False
            rest = [pos for pos in self.rows if pos not in slot_of]
            slot_of.update(_match(rest, p.core_ids, run.cores, free))
        self.plan.slot_of = slot_of
        self._already(run, {pos: slot for pos, slot in slot_of.items() if run.settled[slot] == 1})
        return [pos for pos in self.rows if pos not in slot_of]

    def _already(self, run: JournalRun, stored: dict[int, int]) -> None:
        """Rows (position -> slot of ``run``) whose slot the service stored: reported ``already_sent``
        with the uuid they were stored under."""
        if not stored:
            return
        previous = self.senders.get(run.run_key, (run, 0))[1]
        self.senders[run.run_key] = (run, previous + len(stored))
        reason = (
            f"already stored by run {run.run_key} (by {_last_written(run)}); not sent again "
            "(again=True sends it as a new event)"
        )
        ks = run.ks()
        slots = list(stored.values())
        made = slot_uuids(run.cores[slots].tolist(), [ks[s] for s in slots], run.run_key)
        for pos, uid in zip(stored, made, strict=True):
            self.plan.already[pos] = reason
            self.prepared.uuids[pos] = uid

    def sent_elsewhere(self, rest: list[int], runs: list[JournalRun], skip: str | None) -> list[int]:
        """Rows of ``rest`` whose content some other run stored (each stored slot used once): already
        sent. Returns the rows left."""
        for run in runs:
            if not rest:
                break
            if run.run_key == skip or not (run.settled == 1).any():
                continue
            matched = _match(rest, self.prepared.content_ids, run.contents, run.settled == 1)
            if matched:
                self._already(run, matched)
                rest = [pos for pos in rest if pos not in matched]
        return rest

    def finish(self, run: JournalRun | None, rest: list[int], *, new: bool) -> None:
        """Give the rows of ``rest`` new slots in ``run`` (a new run when None and any are left), journal
        those slots, and set the uuids of the rows sent in this run."""
        p = self.prepared
        if run is None:
            if not rest:
                newest = max((r for r, _ in self.senders.values()), key=lambda r: r.at, default=None)
                p.run_key = newest.run_key if newest is not None else p.run_key
                return
            run = JournalRun(new_uuid7(), dt.datetime.now(dt.UTC))
            new = True
        ks_all = run.ks()
        counts: dict[int, int] = Counter(run.cores.tolist()) if run.size else {}
        slot_of = self.plan.slot_of
        ks = {pos: ks_all[slot] for pos, slot in slot_of.items()}
        cores = [p.core_ids[pos] or 0 for pos in rest]
        contents = [p.content_ids[pos] or 0 for pos in rest]
        base = run.size
        for n, (pos, core) in enumerate(zip(rest, cores, strict=True)):
            k = counts.get(core, 0)
            ks[pos] = k
            counts[core] = k + 1
            slot_of[pos] = base + n
        for pos in self.plan.already:
            self.plan.slot_of.pop(pos, None)
            ks.pop(pos, None)
        p.set_run(run.run_key, ks)
        writer = JournalWriter(self.target, run.run_key, run.at, new=new)
        writer.add_slots(cores, contents)
        self.plan.writer = writer
        if new:
            prune(self.target, keep=run.run_key)


def _sent_notice(chooser: _Chooser) -> tuple[int, str, str]:
    """(rows already sent, the newest run that sent them, its start time) for the warnings."""
    count = sum(n for _, n in chooser.senders.values())
    newest = max((r for r, _ in chooser.senders.values()), key=lambda r: r.at)
    return count, newest.run_key, _last_written(newest)


def _auto(chooser: _Chooser) -> None:
    """``resume=None``: resume the newest unfinished run holding any row of the call; rows other runs
    stored are already sent; warn about either."""
    runs = load_runs(chooser.target)
    contents = np.array([chooser.prepared.content_ids[p] or 0 for p in chooser.rows], dtype=np.uint64)
    chosen = next(
        (r for r in runs if not r.finished and r.size and np.isin(contents, r.contents).any()),
        None,
    )
    rest = chooser.rows
    if chosen is not None:
        rest = chooser.take(chosen, by_core=False)
        chooser.plan.resumed = True
    rest = chooser.sent_elsewhere(rest, runs, chosen.run_key if chosen is not None else None)
    chooser.finish(chosen, rest, new=False)
    total = len(chooser.rows)
    if chosen is not None:
        done = chooser.senders.get(chosen.run_key, (chosen, 0))[1]
        others = len(chooser.plan.already) - done
        extra = f", {others:,} more were stored by other runs" if others else ""
        chooser.plan.warning = ResumedRunWarning(
            f"capture_frame resumes run {chosen.run_key} (started {_when(chosen.at)}), which did not "
            f"finish: {done:,} of {total:,} rows were already stored{extra} and are not sent again; the rest "
            "are sent with the run's uuids (nothing doubled). again=True sends every row as new events.",
            run_key=chosen.run_key,
            already_sent=len(chooser.plan.already),
        )
    elif chooser.plan.already:
        count, key, when = _sent_notice(chooser)
        if count == total:
            what = "the 1 row of this call was" if total == 1 else f"all {total:,} rows of this call were"
        else:
            what = f"{count:,} of {total:,} rows of this call were"
        rest_text = "nothing is sent" if count == total else f"the other {total - count:,} are sent"
        chooser.plan.warning = AlreadySentWarning(
            f"{what} already sent at {when} (run {key}): {rest_text} (report "
            "status 'already_sent'). Pass again=True to send them again as new events.",
            run_key=key,
            count=count,
        )


def choose_run(
    prepared: PreparedFrame, resume: Resume, *, again: bool = False, target: str | None = None
) -> Plan:
    """Give ``prepared`` its run and slots from the journal of ``target`` (see the module docstring);
    None ``target`` (no journal): a new run, or the run ``resume`` names, without memory."""
    if again and resume is not None and resume is not False:
        raise ValueError(
            "again=True sends every row as new events; it cannot resume a run: drop resume= (or again=True)"
        )
    if not prepared.content:  # uuids="random": nothing to derive
        if resume is not None and resume is not False:
            raise ValueError("resume= needs uuids='content' (the default): random uuids cannot be re-derived")
        return Plan()
    explicit = None if resume is None or resume is False else _explicit_key(resume)
    if target is None:
        prepared.set_run(explicit or new_uuid7(), first_slots(prepared))
        return Plan(resumed=explicit is not None)
    chooser = _Chooser(prepared, target)
    with target_lock(target):
        if again or resume is False:
            chooser.finish(None, chooser.rows, new=True)
        elif explicit is not None:
            found = next((r for r in load_runs(target) if r.run_key == explicit), None)
            run = found or JournalRun(explicit, dt.datetime.now(dt.UTC))
            chooser.finish(run, chooser.take(run, by_core=True), new=found is None)
            chooser.plan.resumed = True
        else:
            _auto(chooser)
    return chooser.plan

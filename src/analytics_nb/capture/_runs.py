"""Capture runs: what makes the uuids of one ``capture_frame`` call its own, and how a call resumes one.

A row's *row id* hashes its index label, which repeat of that label it is, and its content (event,
distinct_id, timestamp, properties). The uuid sent is the row id keyed with the call's *run key*
(``_values.run_uuids``), a fresh UUIDv7 per call. So:

* a batch retried within the call, or the same rows sent again with ``resume=`` (the run key, or the report
  that carries it in ``report.attrs["run_key"]``), carry the same uuids and the service keeps one event
  each: an interrupted capture is finished without doubles;
* two separate calls never share a uuid, so two identical clicks sent as two one-row frames, a frame sent
  again the next day, or chunks whose index restarts at 0, stay distinct events.

Each client remembers its last ``RUN_MEMORY`` runs (row ids and whether every row got an outcome). A call
with ``resume=None`` whose rows all belong to a remembered run that did not finish (rows ``failed`` or
``not_attempted``) resumes it, with a ``ResumedRunWarning`` saying so (``resume=False`` opts out); one whose
rows were all sent by a finished run is sent as new events, with a ``ResumedRunWarning`` naming the run to
pass as ``resume=`` when that was a re-run of the same cell.
"""

from __future__ import annotations

import datetime as dt
import uuid as uuid_mod
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np
import pandas as pd

from analytics_nb.capture._events import PreparedFrame

__all__ = ["RUN_MEMORY", "Resume", "ResumedRunWarning", "RunRecord", "choose_run", "remember_run"]

Resume: TypeAlias = pd.DataFrame | str | Literal[False] | None
"""``capture_frame(resume=...)``: a report or its run key (resume that run), False (a new run), None (resume
an unfinished run of this client that holds every row, else a new run)."""

RUN_MEMORY = 8
"""Runs each client remembers (their row ids: 8 bytes a row) for ``resume=None``."""
_ATTR = "_capture_runs"
_UNFINISHED = ("failed", "not_attempted")


class ResumedRunWarning(UserWarning):
    """``capture_frame`` found the rows of the call in a run this client made before: it resumed that run
    (it had not finished), or it sends them again as new events (it had). ``run_key`` names that run."""

    def __init__(self, message: str, *, run_key: str = "") -> None:
        super().__init__(message)
        self.run_key = run_key


@dataclass
class RunRecord:
    """One remembered run: its key, the sorted 64-bit prefixes of its row ids (all, and those without an
    outcome yet: ``failed`` or ``not_attempted``), when it started."""

    run_key: str
    fingerprints: np.ndarray
    pending: np.ndarray
    at: dt.datetime

    @property
    def finished(self) -> bool:
        return self.pending.size == 0


def _prints(ids: list[str]) -> np.ndarray:
    return np.unique(np.array([int(r[:8] + r[9:13] + r[14:18], 16) for r in ids], dtype=np.uint64))


def _fingerprints(
    prepared: PreparedFrame, status: list[str | None] | None = None, pending: bool = False
) -> np.ndarray:
    """Sorted unique 64-bit prefixes of the row ids of the rows to send (not refused); with ``status``,
    only those whose status is (``pending=True``) or is not (``pending=False``) failed / not attempted."""
    ids = []
    for i, r in enumerate(prepared.row_ids):
        if r is None or i in prepared.refused:
            continue
        if status is not None and (status[i] is None or status[i] in _UNFINISHED) != pending:
            continue
        ids.append(r)
    return _prints(ids)


def _runs(client: Any) -> list[RunRecord]:
    runs: list[RunRecord] | None = getattr(client, _ATTR, None)
    if runs is None:
        runs = []
        setattr(client, _ATTR, runs)
    return runs


def _covers(record: RunRecord, prints: np.ndarray) -> bool:
    if prints.size == 0 or record.fingerprints.size == 0:
        return False
    where = np.searchsorted(record.fingerprints, prints).clip(max=record.fingerprints.size - 1)
    return bool((record.fingerprints[where] == prints).all())


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


def choose_run(client: Any, prepared: PreparedFrame, resume: Resume) -> tuple[bool, ResumedRunWarning | None]:
    """Give ``prepared`` the run it belongs to; returns (resumed, a warning to show or None).

    ``resume``: None (resume an unfinished run of this client holding every row, else a new run), False (a
    new run), a report or a run key (that run)."""
    if prepared.run_key is None:  # no derived uuid (own uuids, or uuids="random")
        if resume is not None and resume is not False and any(r is None for r in prepared.row_ids):
            raise ValueError("resume= needs uuids='content' (the default): random uuids cannot be re-derived")
        return False, None
    if resume is False:
        return False, None
    if resume is not None:
        prepared.set_run(_explicit_key(resume))
        return True, None
    prints = _fingerprints(prepared)
    for record in reversed(_runs(client)):
        if not _covers(record, prints):
            continue
        when = record.at.strftime("%H:%M:%S UTC")
        if not record.finished:
            prepared.set_run(record.run_key)
            return True, ResumedRunWarning(
                f"capture_frame resumes run {record.run_key} (started {when}), which did not finish and "
                "holds every row of this call: rows it already sent keep their uuids and are not doubled. "
                "Pass resume=False to send these rows as new events instead.",
                run_key=record.run_key,
            )
        return False, ResumedRunWarning(
            f"every row of this call was already sent by run {record.run_key} ({when}) of this client; a "
            "separate call sends them again as new events. If this is a re-run of the same cell, pass "
            f"resume={record.run_key!r} (or resume=client.last_capture_report) to keep one event each.",
            run_key=record.run_key,
        )
    return False, None


def remember_run(client: Any, prepared: PreparedFrame, status: list[str | None]) -> None:
    """Remember (or update) the run of ``prepared`` after a call: its row ids, and those still without an
    outcome (a resume that sends them finishes the run)."""
    key = prepared.run_key
    if key is None:
        return
    runs = _runs(client)
    prints = _fingerprints(prepared)
    pending = _fingerprints(prepared, status, pending=True)
    at = dt.datetime.now(dt.UTC)
    old = next((r for r in runs if r.run_key == key), None)
    if old is not None:
        runs.remove(old)
        prints = np.union1d(old.fingerprints, prints)
        done = _fingerprints(prepared, status, pending=False)
        pending = np.union1d(np.setdiff1d(old.pending, done, assume_unique=True), pending)
        at = old.at
    runs.append(RunRecord(key, prints, pending, at))
    del runs[:-RUN_MEMORY]
